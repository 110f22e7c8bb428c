"""PatchTST window classifier: one univariate window ``(B, L)`` to one logit per window ``(B,)``.

Nie et al. (2023), *A Time Series is Worth 64 Words*, adapted as in the SSS paper (appendix C):
the official implementation (github.com/yuqinie98/PatchTST) with its attention swapped for
standard multi-head attention (no residual attention scores), RevIN on every window, a
flatten head and a single output logit. The defaults are the paper's best SSS configuration
(table "SSS (with PatchTST backbone)"): ``L=1024``, patches of 16 with stride 8, ``d_model=32``,
``d_ff=128``, 4 heads, 2 encoder layers, dropout 0.3, BatchNorm.

Patching convention
-------------------
As in the official PatchTST (``padding_patch="end"``) and in the authors' SSS code, the window is
padded at the end by repeating its last value ``patch_stride`` times before patches are cut, which
gives ``(L - patch_len) // patch_stride + 2`` patches: 128 for the defaults (127 with
``pad_end=False``). The padding repeats real signal; no zeros are fed to the model.

Speed
-----
The encoder is written for CPU inference: one fused QKV projection, attention through
:func:`torch.nn.functional.scaled_dot_product_attention` (flash kernel on CPU), BatchNorm applied
to the ``(B * N, d_model)`` token matrix (a view, no transposes) and a head that flattens the
``(B, N, d_model)`` tokens in place. The module stays numerically the same as a textbook
post-norm Transformer encoder with :class:`torch.nn.MultiheadAttention`.
"""

from __future__ import annotations

import logging
from typing import Any, ClassVar

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from sss_viewer._validate import check_option, check_positive_int, check_range
from sss_viewer.models.revin import RevIN

logger = logging.getLogger(__name__)

__all__ = ["PatchTST"]


class _TokenBatchNorm(nn.BatchNorm1d):
    """BatchNorm over the feature axis of ``(B, N, C)`` tokens, statistics over ``B`` and ``N``.

    Same result and state dict as PatchTST's ``Transpose(1, 2) → BatchNorm1d(C) → Transpose(1, 2)``,
    computed on the contiguous ``(B * N, C)`` view instead of two transposed copies.
    """

    def forward(self, x: Tensor) -> Tensor:  # noqa: D102 - shapes in the class docstring
        return super().forward(x.reshape(-1, x.shape[-1])).view(x.shape)


def _make_norm(kind: str, d_model: int) -> nn.Module:
    if kind == "batch":
        return _TokenBatchNorm(d_model)
    return nn.LayerNorm(d_model)


class _SelfAttention(nn.Module):
    """Multi-head self-attention with a fused QKV projection and SDPA.

    Parameter layout matches :class:`torch.nn.MultiheadAttention` (``in_proj`` holds the stacked
    query, key and value projections; ``out_proj`` the output projection).

    Parameters
    ----------
    d_model : int
        Token width.
    n_heads : int
        Number of heads; must divide ``d_model``.
    attn_dropout : float
        Dropout on the attention weights (training only).
    """

    def __init__(self, d_model: int, n_heads: int, attn_dropout: float) -> None:
        super().__init__()
        self.n_heads = n_heads
        self.attn_dropout = attn_dropout
        self.in_proj = nn.Linear(d_model, 3 * d_model)
        self.out_proj = nn.Linear(d_model, d_model)

    def forward(self, x: Tensor) -> Tensor:
        """Attend over tokens.

        Parameters
        ----------
        x : Tensor, shape (B, N, d_model)

        Returns
        -------
        Tensor, shape (B, N, d_model)
        """
        b, n, d = x.shape
        qkv = self.in_proj(x).view(b, n, 3, self.n_heads, d // self.n_heads)
        q, k, v = qkv.permute(2, 0, 3, 1, 4).unbind(0)  # each (B, H, N, d_head), strided views
        dropout_p = self.attn_dropout if self.training else 0.0
        out = F.scaled_dot_product_attention(q, k, v, dropout_p=dropout_p)  # (B, H, N, d_head)
        return self.out_proj(out.transpose(1, 2).reshape(b, n, d))


class _EncoderLayer(nn.Module):
    """Post-norm Transformer encoder layer as in PatchTST's ``TSTEncoderLayer``.

    ``x = norm1(x + drop(attn(x)))``; ``x = norm2(x + drop(ff(x)))`` with
    ``ff = Linear(d_model, d_ff) → GELU → Dropout → Linear(d_ff, d_model)``.

    With ``authors_block=True`` the layer reproduces the SSS authors' encoder block instead
    (``sss/layers/patchtst_blind/enc_block.py``): one norm module shared by both sub-layers, no
    dropout on the residual branches, and the second residual taken from the attention output
    rather than from the normalised sum: ``a = attn(x)``; ``h = norm(a + x)``;
    ``x = norm(ff(h) + a)``.
    """

    def __init__(
        self,
        d_model: int,
        d_ff: int,
        n_heads: int,
        dropout: float,
        attn_dropout: float,
        norm: str,
        authors_block: bool,
    ) -> None:
        super().__init__()
        self.authors_block = authors_block
        self.attn = _SelfAttention(d_model, n_heads, attn_dropout)
        self.ff = nn.Sequential(
            nn.Linear(d_model, d_ff),
            nn.GELU(),
            nn.Dropout(dropout),
            nn.Linear(d_ff, d_model),
        )
        self.norm_attn = _make_norm(norm, d_model)
        if authors_block:
            self.norm_ff = self.norm_attn  # shared, as in the authors' code
        else:
            self.norm_ff = _make_norm(norm, d_model)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x: Tensor) -> Tensor:
        """Encode tokens, shape (B, N, d_model) → (B, N, d_model)."""
        if self.authors_block:
            a = self.attn(x)
            h = self.norm_attn(a + x)
            return self.norm_ff(self.ff(h) + a)
        x = self.norm_attn(x + self.dropout(self.attn(x)))
        return self.norm_ff(x + self.dropout(self.ff(x)))


class PatchTST(nn.Module):
    """PatchTST classifier for univariate windows: ``(B, L)`` float32 → ``(B,)`` logits.

    Parameters
    ----------
    window_length : int
        Window length ``L`` in samples.
    patch_len : int
        Samples per patch.
    patch_stride : int
        Step between patch starts.
    d_model : int
        Token width.
    d_ff : int
        Hidden width of the feed-forward sub-layer.
    n_heads : int
        Attention heads; must divide ``d_model``.
    n_layers : int
        Encoder layers.
    dropout : float
        Dropout in the feed-forward sub-layer and on the residual branches.
    attn_dropout : float
        Dropout on the attention weights (the authors' SSS runs use 0.3 for both).
    head_dropout : float
        Dropout on the flattened tokens before the linear head.
    pad_end : bool
        Repeat the last sample ``patch_stride`` times before patching (official PatchTST
        ``padding_patch="end"``): ``(L - patch_len) // patch_stride + 2`` patches.
    norm : {"batch", "layer"}
        Normalisation in the encoder; PatchTST's default is BatchNorm.
    revin : bool
        Instance-normalise every window (RevIN) before patching.
    revin_affine : bool
        Learn RevIN's scalar affine map.
    revin_eps : float
        RevIN's variance floor.
    authors_block : bool
        Use the SSS authors' encoder block variant (see :class:`_EncoderLayer`) for a faithful
        reproduction; the default is the official PatchTST layer.

    Attributes
    ----------
    n_patches : int
        Tokens per window.

    Notes
    -----
    Linear weights are Xavier-uniform with zero bias and the learnable positional embedding is
    uniform in ``[-0.02, 0.02]``, as in the authors' code. The head flattens the tokens
    patch-major (``(N, d_model)`` → ``N * d_model``).
    """

    name: ClassVar[str] = "patchtst"

    def __init__(
        self,
        window_length: int = 1024,
        patch_len: int = 16,
        patch_stride: int = 8,
        d_model: int = 32,
        d_ff: int = 128,
        n_heads: int = 4,
        n_layers: int = 2,
        dropout: float = 0.3,
        attn_dropout: float = 0.3,
        head_dropout: float = 0.0,
        pad_end: bool = True,
        norm: str = "batch",
        revin: bool = True,
        revin_affine: bool = True,
        revin_eps: float = 1e-5,
        authors_block: bool = False,
    ) -> None:
        super().__init__()
        _check_params(window_length, patch_len, patch_stride, d_model, d_ff, n_heads, n_layers)
        for key, value in (("dropout", dropout), ("attn_dropout", attn_dropout),
                           ("head_dropout", head_dropout)):
            check_range(key, value, 0.0, 1.0, high_inclusive=False)
        check_option("norm", norm, ("batch", "layer"))
        self._config: dict[str, Any] = {
            "window_length": window_length,
            "patch_len": patch_len,
            "patch_stride": patch_stride,
            "d_model": d_model,
            "d_ff": d_ff,
            "n_heads": n_heads,
            "n_layers": n_layers,
            "dropout": float(dropout),
            "attn_dropout": float(attn_dropout),
            "head_dropout": float(head_dropout),
            "pad_end": bool(pad_end),
            "norm": norm,
            "revin": bool(revin),
            "revin_affine": bool(revin_affine),
            "revin_eps": float(revin_eps),
            "authors_block": bool(authors_block),
        }
        self.window_length = window_length
        self.patch_len = patch_len
        self.patch_stride = patch_stride
        self.pad_end = bool(pad_end)
        padded = window_length + (patch_stride if pad_end else 0)
        self.n_patches = (padded - patch_len) // patch_stride + 1

        self.revin = RevIN(revin_eps, revin_affine) if revin else nn.Identity()
        self.patch_proj = nn.Linear(patch_len, d_model)
        self.pos_embed = nn.Parameter(torch.empty(self.n_patches, d_model))
        self.layers = nn.ModuleList(
            _EncoderLayer(d_model, d_ff, n_heads, dropout, attn_dropout, norm, authors_block)
            for _ in range(n_layers)
        )
        self.head_dropout = nn.Dropout(head_dropout)
        self.head = nn.Linear(self.n_patches * d_model, 1)
        self._reset_parameters()

    def _reset_parameters(self) -> None:
        for module in self.modules():
            if isinstance(module, nn.Linear):
                nn.init.xavier_uniform_(module.weight)
                nn.init.zeros_(module.bias)
        nn.init.uniform_(self.pos_embed, -0.02, 0.02)

    def get_config(self) -> dict[str, Any]:
        """Return the JSON-serialisable constructor arguments, with ``"name"``.

        Returns
        -------
        dict
            ``build_model(**cfg)`` rebuilds an identically shaped model.
        """
        return {"name": self.name, **self._config}

    def patchify(self, x: Tensor) -> Tensor:
        """Cut windows into patches.

        Parameters
        ----------
        x : Tensor, shape (B, L)

        Returns
        -------
        Tensor, shape (B, n_patches, patch_len)
            A strided view where possible (no copy without ``pad_end``).
        """
        if self.pad_end:
            x = torch.cat([x, x[:, -1:].expand(-1, self.patch_stride)], dim=1)
        return x.unfold(-1, self.patch_len, self.patch_stride)

    def forward(self, x: Tensor) -> Tensor:
        """Score windows.

        Parameters
        ----------
        x : Tensor, shape (B, L), float32
            Windows with ``L == window_length``.

        Returns
        -------
        Tensor, shape (B,)
            One logit per window (apply a sigmoid for probabilities).
        """
        if x.ndim != 2 or x.shape[1] != self.window_length:
            raise ValueError(
                f"PatchTST expects windows of shape (B, {self.window_length}), got {tuple(x.shape)}."
            )
        z = self.patch_proj(self.patchify(self.revin(x))) + self.pos_embed  # (B, N, d_model)
        for layer in self.layers:
            z = layer(z)
        return self.head(self.head_dropout(z.flatten(1))).squeeze(-1)


def _check_params(
    window_length: int,
    patch_len: int,
    patch_stride: int,
    d_model: int,
    d_ff: int,
    n_heads: int,
    n_layers: int,
) -> None:
    """Validate PatchTST's integer sizes with readable messages."""
    for key, value in (("window_length", window_length), ("patch_len", patch_len),
                       ("patch_stride", patch_stride), ("d_model", d_model), ("d_ff", d_ff),
                       ("n_heads", n_heads), ("n_layers", n_layers)):
        check_positive_int(key, value)
    if patch_len > window_length:
        raise ValueError(
            f"Invalid patch_len={patch_len}: longer than window_length={window_length}."
        )
    if d_model % n_heads:
        raise ValueError(f"Invalid n_heads={n_heads}: must divide d_model={d_model}.")

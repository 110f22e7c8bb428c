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

Dropout
-------
``dropout`` (0.3) acts in the feed-forward sub-layer and on both residual branches, as in the
official PatchTST; ``attn_dropout`` (0.3) on the attention weights, as in the authors' SSS runs
(``attn_dropout: 0.3`` / ``ff_dropout: 0.3`` in their ``sss/args.yaml``).

Speed
-----
Written for 2-core CPUs first. All modes: one fused QKV projection, BatchNorm applied to the
``(B * N, d_model)`` token matrix (a view, no transposes), a head that flattens the
``(B, N, d_model)`` tokens in place. Eval mode and ``attn_dropout=0``: the flash kernel of
:func:`torch.nn.functional.scaled_dot_product_attention`; CPU batches above 256 windows are
scored in chunks. The function computed is that of a textbook post-norm Transformer encoder with
:class:`torch.nn.MultiheadAttention`.

CPU kernels
-----------
Training with dropout on the CPU can run on the custom kernels below (``cpu_kernels="custom"``:
a NumPy-drawn dropout mask, attention with dropout computed in chunks with a hand-written backward
pass) or on the stock ones (``cpu_kernels="stock"``, the default: :class:`torch.nn.Dropout` and
:func:`~torch.nn.functional.scaled_dot_product_attention` with ``dropout_p``, as on the GPU).
Both compute the same function with the same state dict; eval-mode scores agree to float
tolerance, and only the dropout random streams differ in training. Measured with
``benchmarks/patchtst_kernels.py`` (same weights, same run, one thread, medians; docs/results.md):
a training step is about 1.7x faster with the custom kernels at the ``default`` preset's batch of
128 and about 3.1x at the ``paper`` preset's 8192, where the stock path also peaks at ~19 GiB
resident against ~7 GiB (it materialises the ``(B, 4, 128, 128)`` attention weights several
times); inference is the same on both paths (no dropout). The stock kernels are the default all
the same: they are the one code path shared by every device and by eval mode, they draw torch's
own dropout masks, and they need no hand-written gradient to maintain and trust. The custom
kernels are kept, opt-in, for CPU training at large batches (the ``paper`` preset's sizes): pass
``cpu_kernels="custom"`` in the model parameters. The setting is not saved with the model
(:meth:`PatchTST.get_config`), so saved models load unchanged.

GPU kernels
-----------
``gpu_kernels`` puts sub-layers on fused Triton kernels on a GPU (issue 33, goal 3): ``"fused-ffn"`` each encoder
layer's feed-forward sub-layer (``Linear → GELU → Dropout → Linear``, :mod:`sss_viewer.models._patchtst_triton`: the
``d_ff``-wide hidden layer stays on the chip and the backward pass recomputes it), ``"fused-attention"`` the attention
with dropout (:mod:`sss_viewer.models._attention_triton`: one program a window and head holds the whole sequence,
nothing ``N × N`` is written), ``"fused"`` both. They are measured against torch's by ``benchmarks/fused_ffn.py``,
``benchmarks/attention_backends.py`` and ``benchmarks/gpu_training.py --gpu-kernels``; the default stays ``"stock"``
until a GPU has measured them faster. Same function, same state dict, other dropout streams; not saved with the
model either.
"""

from __future__ import annotations

import importlib
import logging
import os
from collections.abc import Callable
from typing import Any, ClassVar

import numpy as np
import torch
import torch.nn.functional as F
from torch import Tensor, nn

from sss_viewer.models.base import WindowModel
from sss_viewer.models.revin import RevIN

logger = logging.getLogger(__name__)

__all__ = ["APP_C_BEST", "CPU_KERNELS", "GPU_KERNELS", "PatchTST"]

APP_C_BEST = {
    "d_model": 32,
    "d_ff": 32,
    "n_heads": 4,
    "lr": 1e-5,
    "window_length": 10000,
    "note": "App. C table 'PatchTST' (red entries); num_enc_layers {1,2,3} has none marked. The defaults "
    "here follow the authors' code (d_ff 128, 2 layers, L 1024 pooled samples), see DESIGN.md.",
}
"""The paper's best PatchTST configuration (appendix C)."""

CPU_KERNELS = ("stock", "custom")
"""Values of ``PatchTST(cpu_kernels=...)``: how CPU training computes dropout and attention."""

GPU_KERNELS = ("stock", "fused", "fused-ffn", "fused-attention")
"""Values of ``PatchTST(gpu_kernels=...)``: which sub-layers a GPU runs through fused Triton kernels (module docstring,
"GPU kernels"): none, both, the feed-forward ones, the attention."""


FUSED_ATTENTION_MAX_TOKENS = 256
"""Longest sequence the fused attention takes (one program holds all the keys; ``_attention_triton.MAX_TOKENS`` is this)."""
FUSED_ATTENTION_MAX_HEAD_WIDTH = 64
"""Widest head the fused attention takes (``_attention_triton.MAX_HEAD_WIDTH`` is this)."""


def fused_widths_ok(d_model: int, d_ff: int) -> bool:
    """Widths the fused feed-forward kernels take: powers of two of at least 16 (``tl.dot``'s smallest tile)."""
    return all(n >= 16 and n & (n - 1) == 0 for n in (d_model, d_ff))


_TRITON_INTERPRETS = os.environ.get("TRITON_INTERPRET") == "1"
"""Triton's interpreter is on (read once: it must be set before triton is imported); its kernels then run on the CPU."""


def _triton_entry(module: str, name: str) -> Callable | None:
    """``name`` of ``sss_viewer.models.<module>`` (fused Triton kernels), or None where triton is not installed (the
    CPU wheels of torch come without it)."""
    try:
        return getattr(importlib.import_module(f"sss_viewer.models.{module}"), name)
    except ImportError:
        return None


def _fused_call(fused: Callable | bool | None, device: torch.device) -> Callable | None:
    """The fused entry point to use for tensors on ``device``, given what a layer holds (``False``: no fused kernels
    asked for; ``None``: asked for, but triton is not installed; else the entry point): None where the stock layers
    run (not asked for, or a CPU without Triton's interpreter); a RuntimeError where they were asked for and cannot."""
    if fused is False or not (device.type == "cuda" or _TRITON_INTERPRETS):
        return None
    if fused is None:
        raise RuntimeError("PatchTST(gpu_kernels='fused…') needs triton (pip install triton), or gpu_kernels='stock'")
    return fused


class _TokenBatchNorm(nn.BatchNorm1d):
    """BatchNorm over the feature axis of ``(B, N, C)`` tokens, statistics over ``B`` and ``N``.

    Same result and state dict as PatchTST's ``Transpose(1, 2) → BatchNorm1d(C) → Transpose(1, 2)``,
    computed on the contiguous ``(B * N, C)`` view instead of two transposed copies.
    """

    def forward(self, x: Tensor) -> Tensor:
        return super().forward(x.reshape(-1, x.shape[-1])).view(x.shape)


def _make_norm(kind: str, d_model: int) -> nn.Module:
    if kind == "batch":
        return _TokenBatchNorm(d_model)
    return nn.LayerNorm(d_model)


# --------------------------------------------------------------------------------------------
# Custom CPU kernels (``cpu_kernels="custom"``).
# PyTorch's CPU dropout draws its mask with a slow serial Bernoulli sampler (about
# 75 M draws/s here), and attention dropout forces SDPA off its flash kernel onto the "math"
# path, which materialises the (B, H, N, N) attention weights several times. With the paper's
# sizes (attention dropout 0.3 on 128 x 128 weights) that made ~80 % of a CPU training step.
# The helpers below draw masks from NumPy's PCG64DXSM bit generator (seeded from torch's global
# generator, so ``torch.manual_seed`` keeps runs reproducible) and compute attention with dropout
# in batch chunks through reused buffers (a fresh large CPU tensor costs a page fault per 4 KiB,
# more than the arithmetic on it), recomputing weights and mask in the backward pass instead of
# storing them. Chunks are large enough to keep the number of OpenMP regions low: many small ops
# degrade badly when other processes compete for the cores. Without attention dropout, and on
# other devices, they fall back to the stock kernels.
# --------------------------------------------------------------------------------------------

_INT16_SPAN = 65536
_EVAL_CHUNK = 256
"""Windows per forward pass in CPU eval mode (larger batches are split)."""
_ATTN_CHUNK_SCORES = 1 << 23
"""Attention weights per chunk (32 MiB of float32; 128 windows at the default sizes)."""


def _keep_threshold(p: float) -> tuple[int, float]:
    """Threshold on uniform int16 draws and the rescale factor for dropout probability ``p``.

    ``p`` is quantised to a multiple of 2**-16; the rescale uses the quantised value, so the
    expectation is preserved exactly.
    """
    n_drop = round(p * _INT16_SPAN)
    return n_drop - _INT16_SPAN // 2, _INT16_SPAN / (_INT16_SPAN - n_drop)


def _new_seed() -> int:
    """Draw a seed for NumPy from torch's global CPU generator."""
    return int(torch.randint(0, 2**62, (), dtype=torch.int64))


def _fill_keep_mask(out: Tensor, threshold: int, seed: int) -> Tensor:
    """Fill ``out`` (float) with a 0/1 keep mask; 1 with probability ``1 - p``.

    Parameters
    ----------
    out : Tensor, any shape, float32, contiguous
    threshold : int
        From :func:`_keep_threshold`.
    seed : int
        The same seed gives the same mask.

    Returns
    -------
    Tensor
        ``out``.
    """
    n = out.numel()
    raw = np.random.PCG64DXSM(seed).random_raw((n + 3) // 4)  # 4 int16 draws per uint64
    draws = torch.from_numpy(raw.view(np.int16)[:n]).view(out.shape)
    return torch.ge(draws, threshold, out=out)


class _CPUDropoutFn(torch.autograd.Function):
    """Inverted dropout with a fast mask (see the module comment); the mask is kept for backward."""

    @staticmethod
    def forward(ctx: Any, x: Tensor, p: float) -> Tensor:
        threshold, scale = _keep_threshold(p)
        mask = _fill_keep_mask(torch.empty_like(x, memory_format=torch.contiguous_format), threshold, _new_seed()).mul_(
            scale
        )
        ctx.save_for_backward(mask)
        return x * mask

    @staticmethod
    def backward(ctx: Any, grad: Tensor) -> tuple[Tensor, None]:
        (mask,) = ctx.saved_tensors
        return grad * mask, None


class _Dropout(nn.Dropout):
    """:class:`torch.nn.Dropout` with a faster CPU mask; identical elsewhere and in eval mode."""

    def forward(self, x: Tensor) -> Tensor:
        if not self.training or self.p == 0.0:
            return x
        if x.device.type == "cpu":
            return _CPUDropoutFn.apply(x, self.p)
        return F.dropout(x, self.p, training=True)


def _qkv_chunks(n_windows: int, n_heads: int, n_tokens: int) -> list[slice]:
    """Window slices whose attention weights fit ``_ATTN_CHUNK_SCORES``."""
    size = min(n_windows, max(1, _ATTN_CHUNK_SCORES // (n_heads * n_tokens * n_tokens)))
    return [slice(i, min(i + size, n_windows)) for i in range(0, n_windows, size)]


class _ChunkBuffers:
    """Reused per-call buffers for chunked attention (``n_scores`` weight-sized ones)."""

    def __init__(self, qkv: Tensor, chunks: list[slice], n_scores: int) -> None:
        _, n, _, h, d = qkv.shape
        size = chunks[0].stop - chunks[0].start
        self.qkv = qkv.new_empty(3, size, h, n, d)
        self.scores = [qkv.new_empty(size, h, n, n) for _ in range(n_scores)]

    def split(self, qkv: Tensor, sl: slice) -> tuple[Tensor, Tensor, Tensor]:
        """Contiguous ``(c, H, N, d_head)`` q (pre-scaled by ``d_head**-0.5``), k and v of ``sl``."""
        c = sl.stop - sl.start
        buf = self.qkv[:, :c]
        buf.copy_(qkv[sl].permute(2, 0, 3, 1, 4))
        q, k, v = buf.unbind(0)
        return q.mul_(q.shape[-1] ** -0.5), k, v

    def weights(self, q: Tensor, k: Tensor, i: int = 0) -> Tensor:
        """Softmax attention weights ``(c, H, N, N)`` in buffer ``i``."""
        w = torch.matmul(q, k.transpose(-1, -2), out=self.scores[i][: q.shape[0]])
        return torch.softmax(w, dim=-1, out=w)

    def buffer(self, i: int, c: int) -> Tensor:
        """The first ``c`` windows of weight-sized buffer ``i``."""
        return self.scores[i][:c]


def _attention_forward(qkv: Tensor, p: float, seeds: list[int]) -> Tensor:
    """Chunked attention with dropout ``p > 0``: ``(B, N, 3, H, d) → (B, N, H, d)``.

    ``seeds`` holds one mask seed per chunk. The rescale ``1 / (1 - p)`` is applied to the small
    output rather than to the ``N x N`` weights.
    """
    b, n, _, h, d = qkv.shape
    threshold, keep_scale = _keep_threshold(p)
    chunks = _qkv_chunks(b, h, n)
    bufs = _ChunkBuffers(qkv, chunks, n_scores=2)
    out = qkv.new_empty(b, n, h, d)
    for sl, seed in zip(chunks, seeds, strict=True):
        q, k, v = bufs.split(qkv, sl)
        mask = _fill_keep_mask(bufs.buffer(1, q.shape[0]), threshold, seed)
        weights = bufs.weights(q, k).mul_(mask)
        out[sl].copy_(torch.matmul(weights, v).transpose(1, 2))
    return out.mul_(keep_scale)


class _ChunkedAttentionFn(torch.autograd.Function):
    """Attention with dropout, ``(B, N, 3, H, d) → (B, N, H, d)``, chunk by chunk on CPU.

    Forward keeps q, k, v, the output and one seed per chunk; backward recomputes the weights
    and regenerates the dropout mask from the same seed, chunk by chunk, as flash attention does.
    """

    @staticmethod
    def forward(ctx: Any, qkv: Tensor, p: float) -> Tensor:
        b, n, _, h, _ = qkv.shape
        seeds = [_new_seed() for _ in _qkv_chunks(b, h, n)]
        out = _attention_forward(qkv, p, seeds)
        ctx.save_for_backward(qkv, out)
        ctx.p, ctx.seeds = p, seeds
        return out

    @staticmethod
    def backward(ctx: Any, grad_out: Tensor) -> tuple[Tensor, None]:
        qkv, out = ctx.saved_tensors
        p, seeds = ctx.p, ctx.seeds
        b, n, _, h, d = qkv.shape
        threshold, keep_scale = _keep_threshold(p)
        chunks = _qkv_chunks(b, h, n)
        bufs = _ChunkBuffers(qkv, chunks, n_scores=3)
        grad_qkv = torch.empty_like(qkv)
        for sl, seed in zip(chunks, seeds, strict=True):
            q, k, v = bufs.split(qkv, sl)
            c = q.shape[0]
            g = grad_out[sl].transpose(1, 2)  # (c, H, N, d)
            # sum_j P_ij dP_ij equals g_i . out_i (the flash-attention identity): no N x N product
            row = (g * out[sl].transpose(1, 2)).sum(-1, keepdim=True)  # (c, H, N, 1)
            g = g * keep_scale
            weights = bufs.weights(q, k)
            mask = _fill_keep_mask(bufs.buffer(1, c), threshold, seed)
            grad_w = torch.matmul(g, v.transpose(-1, -2), out=bufs.buffer(2, c)).mul_(mask)
            dropped = mask.mul_(weights)  # the mask buffer now holds the dropped-out weights
            grad_v = torch.matmul(dropped.transpose(-1, -2), g)
            grad_s = grad_w.sub_(row).mul_(weights)  # softmax backward
            parts = grad_qkv[sl]
            parts[:, :, 0].copy_(torch.matmul(grad_s, k).mul_(d**-0.5).transpose(1, 2))
            parts[:, :, 1].copy_(torch.matmul(grad_s.transpose(-1, -2), q).transpose(1, 2))
            parts[:, :, 2].copy_(grad_v.transpose(1, 2))
        return grad_qkv, None


def _attention(qkv: Tensor, p: float) -> Tensor:
    """Scaled dot-product self-attention with dropout ``p`` on the weights (the custom CPU kernels).

    Parameters
    ----------
    qkv : Tensor, shape (B, N, 3, H, d_head)
        Stacked queries, keys and values.
    p : float
        Dropout probability on the attention weights (pass 0 in eval mode).

    Returns
    -------
    Tensor, shape (B, N, H, d_head)
    """
    if qkv.device.type != "cpu" or p == 0.0:
        # Flash kernels (CPU too, forward and backward); on CPU only without dropout.
        return _stock_attention(qkv, p)
    if torch.is_grad_enabled() and qkv.requires_grad:
        return _ChunkedAttentionFn.apply(qkv, p)
    b, n, _, h, _ = qkv.shape
    return _attention_forward(qkv, p, [_new_seed() for _ in _qkv_chunks(b, h, n)])


def _stock_attention(qkv: Tensor, p: float) -> Tensor:
    """:func:`_attention` through :func:`torch.nn.functional.scaled_dot_product_attention` on every device."""
    q, k, v = qkv.permute(2, 0, 3, 1, 4).unbind(0)
    return F.scaled_dot_product_attention(q, k, v, dropout_p=p).transpose(1, 2)


class _SelfAttention(nn.Module):
    """Multi-head self-attention with a fused QKV projection.

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
    custom_kernels : bool
        Attend through :func:`_attention` (the custom CPU kernels) instead of
        :func:`_stock_attention`.
    fused : bool
        On a GPU, attend through the fused Triton kernels
        (:func:`sss_viewer.models._attention_triton.fused_attention`).
    """

    def __init__(
        self, d_model: int, n_heads: int, attn_dropout: float, custom_kernels: bool = False, fused: bool = False
    ) -> None:
        super().__init__()
        self.n_heads = n_heads
        self.attn_dropout = attn_dropout
        self._attend = _attention if custom_kernels else _stock_attention
        self._fused = _triton_entry("_attention_triton", "fused_attention") if fused else False
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
        attend = _fused_call(self._fused, x.device) or self._attend
        out = attend(qkv, self.attn_dropout if self.training else 0.0)  # (B, N, H, d_head)
        return self.out_proj(out.reshape(b, n, d))


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
        custom_kernels: bool = False,
        fused: tuple[bool, bool] = (False, False),
    ) -> None:
        super().__init__()
        self.authors_block = authors_block
        fused_attention, fused_ff = fused
        self._fused = _triton_entry("_patchtst_triton", "fused_feed_forward") if fused_ff else False
        self.attn = _SelfAttention(d_model, n_heads, attn_dropout, custom_kernels, fused_attention)
        dropout_cls = _Dropout if custom_kernels else nn.Dropout
        self.ff = nn.Sequential(
            nn.Linear(d_model, d_ff),
            nn.GELU(),
            dropout_cls(dropout),
            nn.Linear(d_ff, d_model),
        )
        self.norm_attn = _make_norm(norm, d_model)
        # The authors' block reuses norm_attn (registering it twice would duplicate its tensors
        # in the state dict, which safetensors refuses).
        self.norm_ff = nn.Identity() if authors_block else _make_norm(norm, d_model)
        self.dropout = dropout_cls(dropout)

    def feed_forward(self, x: Tensor) -> Tensor:
        """``self.ff`` on tokens ``(B, N, d_model)``: through the fused Triton kernels where asked and they run."""
        fused = _fused_call(self._fused, x.device)
        if fused is None:
            return self.ff(x)
        first, _, dropout, second = self.ff
        p = dropout.p if self.training else 0.0
        return fused(x, first.weight, first.bias, second.weight, second.bias, p)

    def forward(self, x: Tensor) -> Tensor:
        """Encode tokens, shape (B, N, d_model) → (B, N, d_model)."""
        if self.authors_block:
            a = self.attn(x)
            h = self.norm_attn(a + x)
            return self.norm_attn(self.feed_forward(h) + a)
        x = self.norm_attn(x + self.dropout(self.attn(x)))
        return self.norm_ff(x + self.dropout(self.feed_forward(x)))


class PatchTST(WindowModel):
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
    cpu_kernels : {"stock", "custom"}
        How dropout and attention with dropout are computed in CPU training (module docstring,
        "CPU kernels"): ``"stock"`` (default) uses :class:`torch.nn.Dropout` and
        :func:`torch.nn.functional.scaled_dot_product_attention` on every device; ``"custom"`` the
        faster CPU kernels of this module. The function computed and the state dict are the same;
        only the dropout random streams differ. An execution setting, like the device: not part of
        :meth:`get_config`, so a saved model loads with the stock kernels.
    gpu_kernels : {"stock", "fused", "fused-ffn", "fused-attention"}
        Which sub-layers run through fused Triton kernels on a GPU (module docstring, "GPU kernels"): none
        (``"stock"``, the default: torch's layers), both, the feed-forward ones
        (:mod:`sss_viewer.models._patchtst_triton`; ``d_model`` and ``d_ff`` powers of two of at least 16) or the
        attention (:mod:`sss_viewer.models._attention_triton`; at most 256 patches, head width at most 64). Needs
        triton. The function and the state dict are the same; the dropout streams differ. On the CPU the stock layers
        run (the fused kernels only under Triton's interpreter, for tests). Not part of :meth:`get_config`.

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
    positive_ints = ("window_length", "patch_len", "patch_stride", "d_model", "d_ff", "n_heads", "n_layers")
    fractions = ("dropout", "attn_dropout", "head_dropout")
    choices: ClassVar[dict[str, tuple]] = {
        "norm": ("batch", "layer"),
        "cpu_kernels": CPU_KERNELS,
        "gpu_kernels": GPU_KERNELS,
    }
    runtime_args = ("cpu_kernels", "gpu_kernels")

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
        cpu_kernels: str = "stock",
        gpu_kernels: str = "stock",
    ) -> None:
        super().__init__()
        fused = (gpu_kernels in ("fused", "fused-attention"), gpu_kernels in ("fused", "fused-ffn"))
        if fused[1] and not fused_widths_ok(d_model, d_ff):
            raise ValueError(
                f"Invalid gpu_kernels={gpu_kernels!r} with d_model={d_model}, d_ff={d_ff}: the fused feed-forward "
                "kernels need both to be powers of two of at least 16 (use gpu_kernels='stock' or 'fused-attention')."
            )
        if patch_len > window_length:
            raise ValueError(f"Invalid patch_len={patch_len}: longer than window_length={window_length}.")
        if d_model % n_heads:
            raise ValueError(f"Invalid n_heads={n_heads}: must divide d_model={d_model}.")
        self.window_length = window_length
        self.patch_len = patch_len
        self.patch_stride = patch_stride
        self.pad_end = bool(pad_end)
        self.cpu_kernels = cpu_kernels
        self.gpu_kernels = gpu_kernels
        custom = cpu_kernels == "custom"
        padded = window_length + (patch_stride if pad_end else 0)
        self.n_patches = (padded - patch_len) // patch_stride + 1
        if fused[0] and (
            self.n_patches > FUSED_ATTENTION_MAX_TOKENS or d_model // n_heads > FUSED_ATTENTION_MAX_HEAD_WIDTH
        ):
            raise ValueError(
                f"Invalid gpu_kernels={gpu_kernels!r} with {self.n_patches} patches of width {d_model // n_heads} a "
                f"head: the fused attention holds at most {FUSED_ATTENTION_MAX_TOKENS} patches, heads at most "
                f"{FUSED_ATTENTION_MAX_HEAD_WIDTH} wide (use gpu_kernels='stock' or 'fused-ffn')."
            )

        self.revin = RevIN(revin_eps, revin_affine) if revin else nn.Identity()
        self.patch_proj = nn.Linear(patch_len, d_model)
        self.pos_embed = nn.Parameter(torch.empty(self.n_patches, d_model))
        self.layers = nn.ModuleList(
            _EncoderLayer(d_model, d_ff, n_heads, dropout, attn_dropout, norm, authors_block, custom, fused)
            for _ in range(n_layers)
        )
        self.head_dropout = (_Dropout if custom else nn.Dropout)(head_dropout)
        self.head = nn.Linear(self.n_patches * d_model, 1)
        self._reset_parameters()

    def _reset_parameters(self) -> None:
        for module in self.modules():
            if isinstance(module, nn.Linear):
                nn.init.xavier_uniform_(module.weight)
                nn.init.zeros_(module.bias)
        nn.init.uniform_(self.pos_embed, -0.02, 0.02)

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
        self.check_input(x)
        if not self.training and x.device.type == "cpu" and x.shape[0] > _EVAL_CHUNK:
            # In eval mode every window is scored independently, so chunking changes nothing but
            # speed: the intermediates stay small enough to be cached and reused (~+25 % here).
            return torch.cat([self._forward(chunk) for chunk in x.split(_EVAL_CHUNK)])
        return self._forward(x)

    def _forward(self, x: Tensor) -> Tensor:
        """Forward pass on one batch, ``(B, L) → (B,)``."""
        z = self.patch_proj(self.patchify(self.revin(x))) + self.pos_embed  # (B, N, d_model)
        for layer in self.layers:
            z = layer(z)
        return self.head(self.head_dropout(z.flatten(1))).squeeze(-1)

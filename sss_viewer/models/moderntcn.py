"""ModernTCN window classifier: one univariate window ``(B, L)`` to one logit per window ``(B,)``.

Luo & Wang (2024), *ModernTCN: A Modern Pure Convolution Structure for General Time Series
Analysis*, used as a finite-context baseline in the SSS paper (appendix C). Written from the
paper's description, not from any published code. Defaults are App. C's best configuration
except the window length (see :data:`APP_C_BEST`).

Architecture
------------
RevIN → patch embedding: the window is extended at the end by ``patch_size - patch_stride``
zeros and a strided 1-D convolution (kernel ``patch_size``, stride ``patch_stride``) maps it to
``N = (L - patch_stride) // patch_stride + 1`` tokens of ``d_model`` channels (256 for
``L = 1024`` with the default 8 / 4) → ``n_layers`` ModernTCN blocks → mean over tokens →
dropout → linear → 1 logit.

A block maps ``h`` ``(B, d_model, N)`` to ``h + FFN(BN(DW(P(h))))`` where

* ``P`` is a pointwise convolution ``d_model → dw_dims`` (identity when they are equal);
* ``DW`` is the large-kernel depth-wise convolution (``large_size``, same padding) plus a
  parallel small-kernel depth-wise branch (``small_size``), simply summed, which is the
  structural re-parameterisation of the paper in its un-merged form (the sum equals a single
  ``large_size`` depth-wise kernel; BN follows the sum, so the merge needs no BN folding);
* ``FFN`` is the ConvFFN: pointwise ``dw_dims → ffn_ratio * d_model``, GELU, dropout,
  pointwise ``→ d_model``, dropout.

Deviations and interpretation
-----------------------------
* ``dw_dims`` (App. C's ``dw_dims``: 128) is read as the channel width at which the depth-wise
  token mixer runs; ``dw_dims == d_model`` gives the paper's block without ``P``.
* The paper's second ConvFFN mixes *variables*; our input is univariate, so it is left out.
* The head mean-pools the tokens (the paper flattens them), so it honours the mask and keeps
  the parameter count independent of ``L``.

Mask
----
``forward(x, mask)``: RevIN statistics over the valid samples; padded samples set to 0 before the
patch embedding; every token gets the fraction of valid samples in its patch; tokens with none
are zeroed after the embedding and after every block; the final mean weights each token by its
valid fraction. The output therefore does not depend on the padding values (in eval mode; in
training mode BatchNorm's batch statistics include the zeroed tokens).
"""

from __future__ import annotations

from typing import Any, ClassVar

import torch.nn.functional as F
from torch import Tensor, nn

from sss_viewer.models.base import WindowModel
from sss_viewer.models.revin import MaskedRevIN

__all__ = ["APP_C_BEST", "ModernTCN"]

APP_C_BEST: dict[str, Any] = {
    "d_model": 32,
    "n_layers": 1,
    "large_size": 9,
    "small_size": 5,
    "dw_dims": 128,
    "ffn_ratio": 4,
    "lr": 1e-4,
    "window_length": 10000,
}
"""The paper's best ModernTCN configuration (appendix C, red entries); ``lr`` is for Adam."""


class _Block(nn.Module):
    """One ModernTCN block, ``(B, d_model, N) → (B, d_model, N)`` (see the module notes)."""

    def __init__(
        self, d_model: int, dw_dims: int, large_size: int, small_size: int, ffn_ratio: int, dropout: float
    ) -> None:
        super().__init__()
        self.proj = nn.Conv1d(d_model, dw_dims, 1) if dw_dims != d_model else nn.Identity()
        self.dw_large = nn.Conv1d(dw_dims, dw_dims, large_size, padding=large_size // 2, groups=dw_dims, bias=False)
        self.dw_small = nn.Conv1d(dw_dims, dw_dims, small_size, padding=small_size // 2, groups=dw_dims, bias=False)
        self.norm = nn.BatchNorm1d(dw_dims)
        hidden = ffn_ratio * d_model
        self.ffn = nn.Sequential(
            nn.Conv1d(dw_dims, hidden, 1),
            nn.GELU(),
            nn.Dropout(dropout),
            nn.Conv1d(hidden, d_model, 1),
            nn.Dropout(dropout),
        )

    def forward(self, h: Tensor) -> Tensor:
        """Apply the block to ``h`` of shape (B, d_model, N)."""
        z = self.proj(h)
        z = self.norm(self.dw_large(z) + self.dw_small(z))
        return h + self.ffn(z)


class ModernTCN(WindowModel):
    """ModernTCN classifier for univariate windows: ``(B, L)`` float32 → ``(B,)`` logits.

    Parameters
    ----------
    window_length : int
        Window length ``L`` in samples (App. C's best is 10000).
    patch_size : int
        Samples per patch of the embedding convolution.
    patch_stride : int
        Step between patches (at most ``patch_size``).
    d_model : int
        Token width (App. C best: 32).
    n_layers : int
        ModernTCN blocks (App. C best: 1).
    large_size : int
        Large depth-wise kernel (odd; App. C best: 9).
    small_size : int
        Small depth-wise kernel of the re-parameterisable branch (odd, at most ``large_size``;
        App. C: 5).
    dw_dims : int
        Channel width of the depth-wise token mixer (App. C best: 128).
    ffn_ratio : int
        ConvFFN expansion relative to ``d_model`` (App. C best: 4).
    dropout : float
        Dropout in the ConvFFN and before the head.
    revin : bool
        Instance-normalise every window (RevIN).
    revin_affine : bool
        Learn RevIN's scalar affine map.
    revin_eps : float
        RevIN's variance floor.

    Attributes
    ----------
    n_tokens : int
        Tokens per window.
    """

    name: ClassVar[str] = "moderntcn"
    positive_ints = (
        "window_length",
        "patch_size",
        "patch_stride",
        "d_model",
        "n_layers",
        "large_size",
        "small_size",
        "dw_dims",
        "ffn_ratio",
    )
    fractions = ("dropout",)

    def __init__(
        self,
        window_length: int = 1024,
        patch_size: int = 8,
        patch_stride: int = 4,
        d_model: int = 32,
        n_layers: int = 1,
        large_size: int = 9,
        small_size: int = 5,
        dw_dims: int = 128,
        ffn_ratio: int = 4,
        dropout: float = 0.2,
        revin: bool = True,
        revin_affine: bool = True,
        revin_eps: float = 1e-5,
    ) -> None:
        super().__init__()
        if patch_stride > patch_size:
            raise ValueError(f"Invalid patch_stride={patch_stride}: larger than patch_size={patch_size}.")
        if patch_size > window_length:
            raise ValueError(f"Invalid patch_size={patch_size}: longer than window_length={window_length}.")
        if large_size % 2 == 0 or small_size % 2 == 0:
            raise ValueError(f"Invalid large_size={large_size} / small_size={small_size}: both must be odd.")
        if small_size > large_size:
            raise ValueError(f"Invalid small_size={small_size}: larger than large_size={large_size}.")
        self.window_length = window_length
        self.patch_size = patch_size
        self.patch_stride = patch_stride
        self.n_tokens = (window_length - patch_stride) // patch_stride + 1
        self.revin = MaskedRevIN(revin_eps, revin_affine) if revin else None
        self.embed = nn.Conv1d(1, d_model, patch_size, stride=patch_stride)
        self.blocks = nn.ModuleList(
            _Block(d_model, dw_dims, large_size, small_size, ffn_ratio, dropout) for _ in range(n_layers)
        )
        self.dropout = nn.Dropout(dropout)
        self.head = nn.Linear(d_model, 1)

    def _patch(self, x: Tensor) -> Tensor:
        """Zero-extend ``(B, C, L)`` at the end by ``patch_size - patch_stride`` samples."""
        return F.pad(x, (0, self.patch_size - self.patch_stride))

    def token_weights(self, mask: Tensor) -> Tensor:
        """Fraction of valid samples in each token's patch.

        Parameters
        ----------
        mask : Tensor, shape (B, L), bool

        Returns
        -------
        Tensor, shape (B, 1, n_tokens), float
        """
        # The zero extension of the last patch is not padding: it inherits the last sample's flag.
        m = F.pad(mask.unsqueeze(1).float(), (0, self.patch_size - self.patch_stride), mode="replicate")
        return F.avg_pool1d(m, self.patch_size, self.patch_stride)

    def forward(self, x: Tensor, mask: Tensor | None = None) -> Tensor:
        x = self.masked_input(x, mask, self.revin)
        h = self.embed(self._patch(x.unsqueeze(1)))  # (B, d_model, N)
        if mask is None:
            for block in self.blocks:
                h = block(h)
            pooled = h.mean(-1)
        else:
            weight = self.token_weights(mask).to(h.dtype)  # (B, 1, N)
            keep = (weight > 0).to(h.dtype)
            h = h * keep
            for block in self.blocks:
                h = block(h) * keep
            pooled = (h * weight).sum(-1) / weight.sum(-1).clamp_min(1e-12)
        return self.head(self.dropout(pooled)).squeeze(-1)

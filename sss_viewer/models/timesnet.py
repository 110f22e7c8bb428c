"""TimesNet window classifier: one univariate window ``(B, L)`` to one logit per window ``(B,)``.

Wu et al. (2023), *TimesNet: Temporal 2D-Variation Modeling for General Time Series Analysis*,
used as a finite-context baseline in the SSS paper (appendix C, via the Time-Series-Library).
Written from the paper's description, not from any published code. Defaults are App. C's best
configuration except the window length (see :data:`APP_C_BEST`).

Architecture
------------
RevIN → embedding: a width-3 convolution (circular padding, no bias) lifting the sample to
``d_model`` channels, plus a fixed sinusoidal positional encoding, then dropout → ``n_layers``
TimesBlocks, each followed by LayerNorm → GELU, dropout → mean over time → linear → 1 logit.

A TimesBlock takes ``h`` of shape ``(B, T, D)`` and

1. computes the FFT amplitudes over time, averages them over the batch and the channels, and
   keeps the ``top_k`` strongest non-zero frequencies ``f_i``; the periods are ``p_i = T // f_i``;
2. for each period, zero-pads ``T`` up to a multiple of ``p_i`` and folds the series into a
   ``(T / p_i) x p_i`` image per channel, applies an Inception block (``num_kernels`` parallel
   2-D convolutions of sizes 1, 3, …, averaged; ``D → d_ff``, GELU, ``d_ff → D``), unfolds and
   truncates back to ``T``;
3. sums the ``top_k`` results weighted by a softmax over each window's own amplitudes at the
   chosen frequencies, and adds ``h`` (residual).

Efficiency
----------
The Inception block's average of ``num_kernels`` convolutions equals one convolution whose kernel
is the average of the zero-padded kernels (and biases); that single fused convolution is what is
computed (same function, same gradients, about 1.7x fewer FLOPs for 4 kernels). The head
mean-pools over time instead of flattening ``T x d_model`` features (the library's head), which
keeps the parameter count independent of ``L``.

Batch coupling
--------------
As in the paper, the periods are chosen from amplitudes averaged over the *batch*: a window's
output depends on which other windows share its batch (the softmax weights are per window). In
eval mode, score with a fixed batching if bit-for-bit reproducibility matters.

Mask
----
``forward(x, mask)``: RevIN statistics over the valid samples; padded samples set to 0 before the
embedding; the hidden states at padded time steps are zeroed after the embedding and after every
block, so the FFT period selection sees only valid content (zeros elsewhere); the final mean is
over valid time steps only. The output therefore does not depend on the padding values; valid
steps next to the padding still see the zeros through the convolutions.
"""

from __future__ import annotations

import math
from typing import Any, ClassVar

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from sss_viewer.models.base import WindowModel
from sss_viewer.models.revin import MaskedRevIN

__all__ = ["APP_C_BEST", "TimesNet"]

APP_C_BEST: dict[str, Any] = {
    "d_model": 64,
    "d_ff": 32,
    "num_kernels": 4,
    "top_k": 3,
    "n_layers": 2,
    "lr": 1e-5,
    "window_length": 5000,
}
"""The paper's best TimesNet configuration (appendix C, red entries); ``lr`` is for Adam."""


def _sinusoidal_encoding(length: int, d_model: int) -> Tensor:
    """Fixed sin/cos positional encoding, shape ``(length, d_model)``."""
    pos = torch.arange(length, dtype=torch.float32).unsqueeze(1)
    freq = torch.exp(torch.arange(0, d_model, 2, dtype=torch.float32) * (-math.log(10000.0) / d_model))
    pe = torch.zeros(length, d_model)
    pe[:, 0::2] = torch.sin(pos * freq)
    pe[:, 1::2] = torch.cos(pos * freq[: d_model // 2])
    return pe


class _Inception(nn.Module):
    """Average of ``num_kernels`` same-padded 2-D convolutions of sizes 1, 3, …, computed fused.

    Parameters
    ----------
    c_in, c_out : int
        Channels.
    num_kernels : int
        Number of parallel kernels; kernel ``i`` is ``(2 i + 1) x (2 i + 1)``.
    """

    def __init__(self, c_in: int, c_out: int, num_kernels: int) -> None:
        super().__init__()
        self.num_kernels = num_kernels
        self.weights = nn.ParameterList(
            nn.Parameter(torch.empty(c_out, c_in, 2 * i + 1, 2 * i + 1)) for i in range(num_kernels)
        )
        self.biases = nn.Parameter(torch.zeros(num_kernels, c_out))
        for w in self.weights:
            nn.init.kaiming_normal_(w, mode="fan_out", nonlinearity="relu")

    def fused(self) -> tuple[Tensor, Tensor]:
        """The equivalent single kernel ``(c_out, c_in, K, K)`` and bias ``(c_out,)``."""
        big = self.num_kernels - 1
        kernel = sum(F.pad(w, (big - i,) * 4) for i, w in enumerate(self.weights))
        return kernel / self.num_kernels, self.biases.mean(0)

    def forward(self, x: Tensor) -> Tensor:
        """Convolve ``(B, c_in, H, W) → (B, c_out, H, W)``."""
        kernel, bias = self.fused()
        return F.conv2d(x, kernel, bias, padding=self.num_kernels - 1)


class _TimesBlock(nn.Module):
    """One TimesBlock, ``(B, T, D) → (B, T, D)`` (see the module notes)."""

    def __init__(self, d_model: int, d_ff: int, num_kernels: int, top_k: int) -> None:
        super().__init__()
        self.top_k = top_k
        self.conv = nn.Sequential(
            _Inception(d_model, d_ff, num_kernels),
            nn.GELU(),
            _Inception(d_ff, d_model, num_kernels),
        )

    def forward(self, h: Tensor) -> Tensor:
        """Apply the block to ``h`` of shape (B, T, D)."""
        b, t, d = h.shape
        amp = torch.fft.rfft(h, dim=1).abs()  # (B, T // 2 + 1, D)
        per_window = amp.mean(-1)  # (B, F)
        with torch.no_grad():
            overall = per_window.mean(0)
            overall[0] = 0.0  # never pick the constant component
            k = min(self.top_k, overall.shape[0] - 1)
            freqs = torch.topk(overall, k).indices
        weights = torch.softmax(per_window[:, freqs], dim=1)  # (B, k)
        out = h.new_zeros(b, t, d)
        for i, f in enumerate(freqs.tolist()):
            period = max(1, t // max(1, f))
            rows = -(-t // period)
            z = F.pad(h, (0, 0, 0, rows * period - t)) if rows * period != t else h
            z = z.reshape(b, rows, period, d).permute(0, 3, 1, 2)  # (B, D, rows, period)
            z = self.conv(z).permute(0, 2, 3, 1).reshape(b, rows * period, d)[:, :t]
            out = out + z * weights[:, i, None, None]
        return out + h


class TimesNet(WindowModel):
    """TimesNet classifier for univariate windows: ``(B, L)`` float32 → ``(B,)`` logits.

    Parameters
    ----------
    window_length : int
        Window length ``L`` in samples (App. C's best is 5000).
    d_model : int
        Embedding width (App. C best: 64).
    d_ff : int
        Inner width of the Inception blocks (App. C best: 32).
    num_kernels : int
        Parallel kernels per Inception block (App. C best: 4, i.e. sizes 1, 3, 5, 7).
    top_k : int
        Periods per TimesBlock (App. C best: 3).
    n_layers : int
        TimesBlocks (App. C best: 2).
    dropout : float
        Dropout after the embedding and before the head.
    revin : bool
        Instance-normalise every window (RevIN).
    revin_affine : bool
        Learn RevIN's scalar affine map.
    revin_eps : float
        RevIN's variance floor.
    """

    name: ClassVar[str] = "timesnet"
    positive_ints = ("window_length", "d_model", "d_ff", "num_kernels", "top_k", "n_layers")
    fractions = ("dropout",)

    def __init__(
        self,
        window_length: int = 1024,
        d_model: int = 64,
        d_ff: int = 32,
        num_kernels: int = 4,
        top_k: int = 3,
        n_layers: int = 2,
        dropout: float = 0.2,
        revin: bool = True,
        revin_affine: bool = True,
        revin_eps: float = 1e-5,
    ) -> None:
        super().__init__()
        if window_length < 4:
            raise ValueError(f"Invalid window_length={window_length}: TimesNet needs at least 4.")
        self.window_length = window_length
        self.revin = MaskedRevIN(revin_eps, revin_affine) if revin else None
        self.value_embed = nn.Conv1d(1, d_model, 3, padding=1, padding_mode="circular", bias=False)
        nn.init.kaiming_normal_(self.value_embed.weight, mode="fan_in", nonlinearity="leaky_relu")
        self.register_buffer("pos_embed", _sinusoidal_encoding(window_length, d_model), persistent=False)
        self.blocks = nn.ModuleList(_TimesBlock(d_model, d_ff, num_kernels, top_k) for _ in range(n_layers))
        self.norms = nn.ModuleList(nn.LayerNorm(d_model) for _ in range(n_layers))
        self.dropout = nn.Dropout(dropout)
        self.head = nn.Linear(d_model, 1)

    def forward(self, x: Tensor, mask: Tensor | None = None) -> Tensor:
        x = self.masked_input(x, mask, self.revin)
        keep = None if mask is None else mask.unsqueeze(-1).to(x.dtype)  # (B, T, 1)
        h = self.value_embed(x.unsqueeze(1)).transpose(1, 2) + self.pos_embed  # (B, T, D)
        h = self.dropout(h)
        if keep is not None:
            h = h * keep
        for block, norm in zip(self.blocks, self.norms, strict=True):
            h = norm(block(h))
            if keep is not None:
                h = h * keep
        h = self.dropout(F.gelu(h))
        if keep is None:
            pooled = h.mean(1)
        else:
            pooled = h.sum(1) / keep.sum(1).clamp_min(1.0)
        return self.head(pooled).squeeze(-1)

"""Reversible instance normalisation (RevIN) applied to each window on its own.

Kim et al. (2022), *Reversible instance normalization for accurate time-series forecasting
against distribution shift*. SSS (like PatchTST) applies the normalising half only: each window is
centred and scaled by its own mean and standard deviation over time, then a learnable affine map
is applied. There is nothing to "reverse" for a classifier, so no denormalisation is offered.
"""

from __future__ import annotations

import torch
from torch import Tensor, nn


class RevIN(nn.Module):
    """Per-window instance normalisation over time with a learnable affine map.

    ``y = (x - mean(x)) / sqrt(var(x) + eps) * weight + bias`` where the mean and the (biased)
    variance are taken over the last axis of each window. As in the reference implementation the
    statistics are treated as constants (no gradient flows through them).

    A flat (constant) window has variance 0; ``eps`` inside the square root keeps the result finite
    (it maps to ``bias``). Note that ``eps`` is absolute: inputs should be in units where the
    signal variance is far above ``eps`` (the pipeline z-scores each channel before windowing).

    Parameters
    ----------
    eps : float
        Added to the variance before the square root.
    affine : bool
        Whether to learn a scalar ``weight`` (init 1) and ``bias`` (init 0).
    """

    def __init__(self, eps: float = 1e-5, affine: bool = True) -> None:
        super().__init__()
        if not eps > 0:
            raise ValueError(f"Invalid eps={eps!r}: expected a positive float.")
        self.eps = float(eps)
        self.affine = bool(affine)
        if self.affine:
            self.weight = nn.Parameter(torch.ones(1))
            self.bias = nn.Parameter(torch.zeros(1))
        else:
            self.register_parameter("weight", None)
            self.register_parameter("bias", None)

    def forward(self, x: Tensor) -> Tensor:
        """Normalise each window.

        Parameters
        ----------
        x : Tensor, shape (..., L), float
            Windows; the statistics are taken over the last axis.

        Returns
        -------
        Tensor, shape (..., L)
            Normalised windows.
        """
        with torch.no_grad():
            var, mean = torch.var_mean(x, dim=-1, correction=0, keepdim=True)
            scale = torch.rsqrt(var + self.eps)  # (..., 1)
        centred = x - mean  # subtract first: folding the mean into a shift loses precision
        if self.affine:
            return torch.addcmul(self.bias, centred, scale * self.weight)
        return centred * scale

    def extra_repr(self) -> str:
        return f"eps={self.eps}, affine={self.affine}"

"""Reversible instance normalisation (RevIN) applied to each window on its own, and its masked variant.

Kim et al. (2022), *Reversible instance normalization for accurate time-series forecasting
against distribution shift*. SSS (like PatchTST) applies the normalising half only: each window is
centred and scaled by its own mean and standard deviation over time, then a learnable affine map
is applied. There is nothing to "reverse" for a classifier, so no denormalisation is offered.
"""

from __future__ import annotations

import torch
from torch import Tensor, nn

from sss_viewer._validate import check_range


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
        check_range("eps", eps, 0, None, low_inclusive=False)
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


class MaskedRevIN(RevIN):
    """:class:`RevIN` whose statistics can be restricted to the valid samples of each window.

    Same parameters and state dict as :class:`RevIN` (a scalar ``weight`` and ``bias``).

    Parameters
    ----------
    eps : float
        Added to the variance before the square root.
    affine : bool
        Whether to learn the scalar affine map.
    """

    def forward(self, x: Tensor, mask: Tensor | None = None) -> Tensor:  # type: ignore[override]
        """Normalise each window.

        Parameters
        ----------
        x : Tensor, shape (B, L), float
            Windows.
        mask : Tensor, shape (B, L), bool, optional
            True at valid samples. Mean and (biased) variance are taken over these only, and
            the output is 0 at the other samples. A window without any valid sample maps to 0.

        Returns
        -------
        Tensor, shape (B, L)
            Normalised windows.
        """
        if mask is None:
            return super().forward(x)
        zero = torch.zeros((), dtype=x.dtype, device=x.device)
        # torch.where (not a product) throughout so that non-finite padding cannot leak NaNs.
        x = torch.where(mask, x, zero)
        with torch.no_grad():
            count = mask.sum(-1, keepdim=True).clamp_min(1).to(x.dtype)
            mean = x.sum(-1, keepdim=True) / count
            var = torch.where(mask, x - mean, zero).square().sum(-1, keepdim=True) / count
            scale = torch.rsqrt(var + self.eps)
        centred = x - mean
        out = torch.addcmul(self.bias, centred, scale * self.weight) if self.affine else centred * scale
        return torch.where(mask, out, zero)

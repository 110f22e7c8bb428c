"""The Hydra transform: competing random kernels, ``(B, T)`` → soft max and hard min counts ``(B, n_features)``.

Dempster, Schmidt & Webb (2023), *Hydra: competing convolutional kernels for fast and accurate
time series classification* (Data Mining and Knowledge Discovery 37), written here in PyTorch from
the paper's description. The classifiers built on it are :mod:`sss_viewer.models.hydra`; windows
read within their channel are :mod:`sss_viewer.models._hydra_series`.

Transform
---------
``groups`` groups of ``kernels_per_group`` random kernels of length 9 per dilation: weights drawn
from N(0, 1), then every kernel is centred (zero mean over its 9 taps) and scaled to a unit sum of
absolute weights. Dilations are ``2 ** 0 ... 2 ** E`` with ``E`` the largest exponent for which
the dilated kernel spans at most ``input_length`` samples (``8 * 2 ** E <= input_length - 1``);
every dilation has its own kernels. With more than one group, half the groups read the input and
half its first difference (``x[t + 1] - x[t]``, one sample shorter). Convolutions use "same" zero
padding (``4 * dilation`` each side), so every input position gives one output.

At each output position the kernels of a group compete. For every (dilation, input or difference,
group) two features per kernel are pooled over the positions:

* **soft max count** — the sum, over the positions where the kernel's response is the group's
  largest, of that response;
* **hard min count** — the number of positions where the kernel's response is the group's smallest.

A position where several kernels tie (e.g. all taps zero, where every response is 0) counts for
every tied kernel; the paper's code gives it to the first one. Ties of distinct random kernels on
real data need all nine taps to be zero, so only flat stretches are affected. Features are laid
out per dilation (increasing), then input / difference, then soft max / hard min, then group, then
kernel: ``2 * groups * kernels_per_group`` features per dilation (7,168 at L = 1024 with the
defaults k = 8, g = 64).

Counts are sums over positions. They are expressed per ``input_length`` positions: an input of
``T`` samples is scaled by ``input_length / T``, which is 1 at the reference length (the paper's
counts exactly) and lets one model read windows and whole channels of other lengths on one scale,
as MiniRocket's proportions do.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from sss_viewer._validate import check_positive_int

__all__ = ["KERNEL_LENGTH", "HydraFeatures", "hydra_dilations"]

KERNEL_LENGTH = 9
_CPU_CHUNK_ELEMENTS = 1 << 22
"""Convolution outputs computed at once on the CPU (16 MB of float32): rows (and, for long rows, stretches
of positions) are processed in chunks of this size, so memory stays bounded whatever ``B x T``."""
_DEVICE_CHUNK_ELEMENTS = 1 << 26
"""The same bound on an accelerator (256 MB of float32)."""


def hydra_dilations(input_length: int) -> list[int]:
    """Dilations ``2 ** 0 ... 2 ** E``: the largest ``E`` with ``8 * 2 ** E <= input_length - 1``.

    Parameters
    ----------
    input_length : int
        Reference length (at least 9).

    Returns
    -------
    list of int
    """
    check_positive_int("input_length", input_length)
    if input_length < KERNEL_LENGTH:
        raise ValueError(f"Invalid input_length={input_length}: expected at least {KERNEL_LENGTH} samples.")
    top = ((input_length - 1) // (KERNEL_LENGTH - 1)).bit_length() - 1
    return [2**e for e in range(top + 1)]


class HydraFeatures(nn.Module):
    """The Hydra transform: ``(B, T)`` → soft max and hard min counts ``(B, n_features)``.

    Parameters
    ----------
    input_length : int
        Reference length: the dilation range and the scale of the counts (module docstring).
    kernels_per_group : int
        ``k``, kernels competing in a group (8 in the paper).
    groups : int
        ``g``, groups per dilation (64 in the paper); 1, or even (half on the input, half on its
        first difference).
    seed : int
        Seed of the kernels' private generator (the same seed and sizes give the same kernels).

    Attributes
    ----------
    dilations : list of int
    n_features : int
        ``len(dilations) * 2 * groups * kernels_per_group``.
    weights : Tensor, shape (n_dilations, n_inputs, groups // n_inputs * k, 9), float32
        Kernels (a buffer, saved in the state dict); ``n_inputs`` is 2 (input, difference) or 1.
    """

    def __init__(self, input_length: int, kernels_per_group: int = 8, groups: int = 64, seed: int = 0) -> None:
        super().__init__()
        check_positive_int("kernels_per_group", kernels_per_group)
        check_positive_int("groups", groups)
        if groups > 1 and groups % 2:
            raise ValueError(
                f"Invalid groups={groups}: expected 1 or an even number (half the groups read the input, half "
                "its first difference)."
            )
        self.input_length = int(input_length)
        self.dilations = hydra_dilations(input_length)
        self.kernels_per_group = int(kernels_per_group)
        self.n_inputs = 2 if groups > 1 else 1
        self.groups_per_input = groups // self.n_inputs
        self.n_features = len(self.dilations) * 2 * groups * kernels_per_group
        gen = torch.Generator().manual_seed(int(seed))
        shape = (len(self.dilations), self.n_inputs, self.groups_per_input * kernels_per_group, KERNEL_LENGTH)
        raw = torch.randn(shape, generator=gen)
        centred = raw - raw.mean(-1, keepdim=True)
        self.register_buffer("weights", centred / centred.abs().sum(-1, keepdim=True))

    def forward(self, x: Tensor) -> Tensor:
        """Soft max and hard min counts.

        Parameters
        ----------
        x : Tensor, shape (B, T), float, T >= 9

        Returns
        -------
        Tensor, shape (B, n_features), dtype of ``x``
            Per dilation, input / difference, soft max / hard min, group, kernel; counts per
            ``input_length`` positions.
        """
        b, t = x.shape
        h, k = self.groups_per_input, self.kernels_per_group
        feats = x.new_zeros(b, len(self.dilations), self.n_inputs, 2, h, k)
        budget = _CPU_CHUNK_ELEMENTS if x.device.type == "cpu" else _DEVICE_CHUNK_ELEMENTS
        inputs = [x, torch.diff(x, dim=1)][: self.n_inputs]
        weights = self.weights.to(x.dtype)
        for i, dilation in enumerate(self.dilations):
            for j, series in enumerate(inputs):
                _pool_competition(series, weights[i, j], dilation, k, budget, feats[:, i, j])
        return feats.reshape(b, -1) * (self.input_length / t)


def _pool_competition(x: Tensor, weights: Tensor, dilation: int, k: int, budget: int, out: Tensor) -> None:
    """Accumulate one (dilation, input) block of counts into ``out (B, 2, h, k)``, in chunks of rows and positions.

    Parameters
    ----------
    x : Tensor, shape (B, T)
    weights : Tensor, shape (h * k, 9)
    dilation : int
    k : int
        Kernels per group.
    budget : int
        Most convolution outputs held at once.
    out : Tensor, shape (B, 2, h, k)
        Soft max counts in ``out[:, 0]``, hard min counts in ``out[:, 1]`` (added to).
    """
    b, t = x.shape
    n_kernels = weights.shape[0]
    h = n_kernels // k
    reach = KERNEL_LENGTH // 2 * dilation
    xp = F.pad(x, (reach, reach))
    span = min(t, max(1, budget // n_kernels))
    rows = max(1, budget // (n_kernels * span))
    for lo in range(0, b, rows):
        hi = min(b, lo + rows)
        for p0 in range(0, t, span):
            p1 = min(t, p0 + span)
            taps = torch.stack([xp[lo:hi, p0 + m * dilation : p1 + m * dilation] for m in range(KERNEL_LENGTH)], 1)
            resp = torch.matmul(weights, taps).view((hi - lo) * h, k, p1 - p0)  # (rows * h, k, positions)
            top = resp.amax(1, keepdim=True)
            bottom = resp.amin(1, keepdim=True)
            # 0/1 masks written as floats straight away (a bool mask and its conversion take ~3x longer)
            mask = torch.eq(resp, top, out=torch.empty_like(resp))
            out[lo:hi, 0] += torch.bmm(mask, top.transpose(1, 2)).view(hi - lo, h, k)
            torch.eq(resp, bottom, out=mask)
            out[lo:hi, 1] += mask.sum(-1).view(hi - lo, h, k)

"""ROCKET classifier: random convolution features and a logistic head, ``(B, T)`` → ``(B,)`` logits.

Dempster, Petitjean & Webb (2020), *ROCKET: exceptionally fast and accurate time series
classification using random convolutional kernels*, as used by the SSS paper (appendix C:
10,000 kernels, ``lr=1e-4``), written here in PyTorch from the paper's description.

Kernels
-------
Each of ``num_kernels`` kernels draws, from a :class:`torch.Generator` seeded with ``seed``
(the same seed always rebuilds the same kernels):

* a length from {7, 9, 11} (uniform);
* weights ``N(0, 1)``, then mean-centred;
* a bias ``U(-1, 1)``;
* a dilation ``floor(2 ** U(0, A))`` with ``A = log2((input_length - 1) / (length - 1))``, so the
  dilated kernel spans at most the reference length ``input_length``;
* with probability 1/2 "same" zero padding ``(length - 1) * dilation // 2`` at both ends, else none.

The kernels are fixed buffers (saved in the state dict, never trained). Per kernel two features
are pooled over the whole output: PPV (the proportion of positive values) and the maximum. Both
are global poolings, so a whole variable-length channel and a fixed window go through the same
model. The convolutions run as matrix products: kernels are stored centred in 11 taps and sorted by
(dilation, padding, length); per dilation the 11 dilated shifts of the input are stacked once
``(B, 11, T)`` and every run of kernels sharing (length, padding) is one ``(n, 11) @ (B, 11, T')``
product over its output positions (all ``T`` for padded kernels, the valid ones otherwise), in
chunks of at most 2**22 outputs. This is ~20x faster on CPU than one dilated ``conv1d`` per group.

Short input
-----------
ROCKET assumes every series has the reference length. Here any ``T >= 2`` works: an unpadded
kernel whose dilated span exceeds ``T`` has no valid output position, so it is evaluated at the
single centre position with zero padding (the original code would divide by zero there). Only
such kernels deviate from the strict definition, and only for ``T`` below their span (at most
``input_length``).

Head
----
The ``2 * num_kernels`` features are standardised, then a linear layer gives one logit
(a logistic-regression head, so probabilities are calibrated-ish, never one-hot).
``normalisation="running"`` (default) keeps a running mean/variance over every row seen in
training mode (Chan's parallel update, float64) and always normalises with it, which also works
with batches of one whole channel; ``"batch"`` uses :class:`torch.nn.BatchNorm1d` without affine
parameters (needs ``B > 1`` in training). Trainable: the head (and RevIN's affine map if enabled).

The original ROCKET classifies with a ridge regression on the features; the SSS paper trains it
like every other baseline (Adam, binary cross-entropy), which the linear head reproduces.
"""

from __future__ import annotations

import logging
from typing import Any, ClassVar

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from sss_viewer.models.base import WindowModel
from sss_viewer.models.revin import RevIN

logger = logging.getLogger(__name__)

__all__ = ["APP_C_BEST", "RocketClassifier"]

APP_C_BEST: dict[str, Any] = {
    "num_kernels": 10_000,
    "lr": 1e-4,
    "note": "App. C table 'ROCKET': num_kernels {10000}; lr {1e-4,1e-5,1e-6} best 1e-4.",
}
"""Best configuration from the paper's appendix C."""

_LENGTHS = (7, 9, 11)
_MAX_LEN = max(_LENGTHS)
_CHUNK_ELEMENTS = 1 << 22
"""Convolution outputs computed at once (16 MiB of float32), to bound memory on long input."""


def generate_kernels(num_kernels: int, input_length: int, seed: int) -> dict[str, Tensor]:
    """Draw ROCKET kernels, sorted by (dilation, padded or not, length).

    Parameters
    ----------
    num_kernels : int
        Number of kernels ``K``.
    input_length : int
        Reference series length for the dilation range.
    seed : int
        Seed of the private CPU generator.

    Returns
    -------
    dict of Tensor
        ``weights`` (K, 11) float32 (each kernel centred, zero taps around it), ``biases`` (K,)
        float32, and int64 ``lengths``, ``dilations``, ``paddings`` (K,).
    """
    gen = torch.Generator().manual_seed(seed)
    choices = torch.tensor(_LENGTHS)
    lengths = choices[torch.randint(len(_LENGTHS), (num_kernels,), generator=gen)]
    raw = torch.randn(num_kernels, _MAX_LEN, generator=gen)
    mask = torch.arange(_MAX_LEN) < lengths[:, None]
    raw = raw * mask
    left = (raw - raw.sum(1, keepdim=True) / lengths[:, None]) * mask  # mean-centred
    # centre every kernel in 11 taps: tap j of a length-l kernel sits at (11 - l) // 2 + j
    shift = (_MAX_LEN - lengths) // 2
    cols = (torch.arange(_MAX_LEN)[None, :] - shift[:, None]) % _MAX_LEN
    weights = torch.gather(left, 1, cols)
    biases = torch.rand(num_kernels, generator=gen) * 2 - 1
    span = torch.log2(torch.tensor(float(input_length - 1)) / (lengths - 1).double()).clamp(min=0)
    exponents = torch.rand(num_kernels, generator=gen, dtype=torch.float64) * span
    dilations = torch.floor(2.0**exponents).long()
    padded = torch.randint(2, (num_kernels,), generator=gen).bool()
    paddings = torch.where(padded, (lengths - 1) * dilations // 2, 0)
    order = sorted(range(num_kernels), key=lambda i: (int(dilations[i]), int(paddings[i] > 0), int(lengths[i]), i))
    idx = torch.tensor(order)
    return {
        "weights": weights[idx].float().contiguous(),
        "biases": biases[idx].float(),
        "lengths": lengths[idx].long(),
        "dilations": dilations[idx],
        "paddings": paddings[idx].long(),
    }


class RunningStandardizer(nn.Module):
    """Standardise features with a running mean/variance over every training row seen.

    Training mode: update the statistics with the batch (detached), then normalise with the
    updated statistics. Eval mode: normalise only. Rows are independent in eval mode.
    """

    def __init__(self, n_features: int, eps: float = 1e-8) -> None:
        super().__init__()
        self.eps = eps
        self.register_buffer("count", torch.zeros((), dtype=torch.float64))
        self.register_buffer("mean", torch.zeros(n_features, dtype=torch.float64))
        self.register_buffer("m2", torch.zeros(n_features, dtype=torch.float64))

    @torch.no_grad()
    def reset(self) -> None:
        """Forget every row seen."""
        for buffer in (self.count, self.mean, self.m2):
            buffer.zero_()

    @torch.no_grad()
    def update(self, feats: Tensor) -> None:
        """Merge a batch ``(B, F)`` into the running statistics."""
        f = feats.detach().double()
        n_b = f.shape[0]
        var_b, mean_b = torch.var_mean(f, dim=0, correction=0)
        total = self.count + n_b
        delta = mean_b - self.mean
        self.m2 += var_b * n_b + delta.square() * self.count * n_b / total
        self.mean += delta * n_b / total
        self.count.copy_(total)

    def forward(self, feats: Tensor) -> Tensor:
        """Standardise ``(B, F)`` features; returns float32 ``(B, F)``."""
        if self.training:
            self.update(feats)
        if self.count == 0:  # never trained: pass through centred at zero
            return feats
        var = self.m2 / self.count
        scale = torch.rsqrt(var + self.eps).to(feats.dtype)
        return (feats - self.mean.to(feats.dtype)) * scale


class StandardisedLogisticHead:
    """The trained part of a classifier on frozen features: ``norm`` (a :class:`RunningStandardizer`), then ``head``.

    Mixed into the ROCKET-family window models, which set ``self.norm`` and ``self.head``
    (a linear layer to one logit).
    """

    norm: RunningStandardizer
    head: nn.Module

    def classify(self, feats: Tensor) -> Tensor:
        """Standardise raw features ``(B, n_features)`` and apply the logistic head → ``(B,)`` logits."""
        return self.head_logits(self.norm(feats))

    def head_logits(self, scaled: Tensor) -> Tensor:
        """The head alone on already standardised features ``(B, n_features)`` → ``(B,)`` logits.

        A solver that fits the head with the standardisation frozen scales the features once and calls this.
        """
        return self.head(scaled).squeeze(-1)


class RocketClassifier(StandardisedLogisticHead, WindowModel):
    """ROCKET features with a standardised logistic head: ``(B, T)`` float32 → ``(B,)`` logits.

    Parameters
    ----------
    num_kernels : int
        Number of random kernels ``K`` (2 features each).
    input_length : int
        Reference length for the dilation range (the SSS window, 1024 by default).
    seed : int
        Kernel seed; the same seed (and sizes) gives the same kernels.
    normalisation : {"running", "batch"}
        Feature standardisation (see the module docstring).
    revin : bool
        Instance-normalise every row over its whole length first (the paper applies instance
        normalisation to every baseline's input).
    revin_affine : bool
        Learn RevIN's scalar affine map (off by default: PPV gives it no gradient).
    revin_eps : float
        RevIN's variance floor.

    Attributes
    ----------
    n_features : int
        ``2 * num_kernels``: all PPVs (kernel order), then all maxima.
    min_length : int
        Smallest accepted ``T`` (2).
    """

    name: ClassVar[str] = "rocket"
    positive_ints = ("num_kernels", "input_length")
    non_negative_ints = ("seed",)
    choices: ClassVar[dict[str, tuple]] = {"normalisation": ("running", "batch")}

    def __init__(
        self,
        num_kernels: int = 10_000,
        input_length: int = 1024,
        seed: int = 0,
        normalisation: str = "running",
        revin: bool = True,
        revin_affine: bool = False,
        revin_eps: float = 1e-5,
    ) -> None:
        super().__init__()
        if input_length < _MAX_LEN:
            raise ValueError(f"Invalid input_length={input_length}: expected at least {_MAX_LEN}.")
        self.revin_affine = bool(revin_affine)
        self.n_features = 2 * num_kernels
        self.min_length = 2
        for key, value in generate_kernels(num_kernels, input_length, seed).items():
            self.register_buffer(key, value)
        self._groups = self._make_groups()
        self.register_load_state_dict_post_hook(_regroup)
        self.revin = RevIN(revin_eps, revin_affine) if revin else nn.Identity()
        if normalisation == "running":
            self.norm: nn.Module = RunningStandardizer(self.n_features)
        else:
            self.norm = nn.BatchNorm1d(self.n_features, affine=False)
        self.head = nn.Linear(self.n_features, 1)
        nn.init.zeros_(self.head.weight)
        nn.init.zeros_(self.head.bias)

    def _make_groups(self) -> dict[int, list[tuple[int, int, int, int]]]:
        """Contiguous ``(start, stop, length, padding)`` runs of the sorted kernels, per dilation."""
        keys = list(zip(self.dilations.tolist(), self.lengths.tolist(), self.paddings.tolist(), strict=True))
        groups: dict[int, list[tuple[int, int, int, int]]] = {}
        start = 0
        for i in range(1, len(keys) + 1):
            if i == len(keys) or keys[i] != keys[start]:
                dilation, length, padding = keys[start]
                groups.setdefault(dilation, []).append((start, i, length, padding))
                start = i
        return groups

    def transform(self, x: Tensor) -> Tensor:
        """Raw ROCKET features (no RevIN, no standardisation).

        Parameters
        ----------
        x : Tensor, shape (B, T), float

        Returns
        -------
        Tensor, shape (B, 2 * num_kernels)
            PPV of every kernel, then the max of every kernel (kernel order of the buffers).
        """
        b, t = x.shape
        k = self.biases.shape[0]
        ppv = x.new_empty(b, k)
        mx = x.new_empty(b, k)
        half = _MAX_LEN // 2
        for dilation, groups in self._groups.items():
            # The 11 dilated taps of every kernel of this dilation over "same" output positions:
            # taps[:, j, i] = x[i + (j - 5) * dilation], zero outside the series.
            xp = F.pad(x, (half * dilation, half * dilation))
            taps = torch.stack([xp[:, j * dilation : j * dilation + t] for j in range(_MAX_LEN)], dim=1)  # (B, 11, T)
            for start, stop, length, padding in groups:
                lo, hi = 0, t
                if padding == 0:  # valid positions only: the kernel's span inside the series
                    reach = (length - 1) * dilation // 2
                    lo, hi = reach, t - reach
                    if lo >= hi:  # series shorter than the span: centre position (zero-padded)
                        lo = (t - 1) // 2
                        hi = lo + 1
                rows = max(1, _CHUNK_ELEMENTS // (b * (hi - lo)))
                for c0 in range(start, stop, rows):
                    c1 = min(stop, c0 + rows)
                    out = torch.matmul(self.weights[c0:c1], taps[:, :, lo:hi])  # (B, n, T')
                    out = out + self.biases[c0:c1, None]
                    ppv[:, c0:c1] = (out > 0).sum(-1) / (hi - lo)
                    mx[:, c0:c1] = out.amax(-1)
        return torch.cat([ppv, mx], dim=1)

    @property
    def has_frozen_front_end(self) -> bool:
        """Whether nothing before the head is trained (RevIN without affine map): features can be cached."""
        return not self.revin_affine

    def frozen_features(self, x: Tensor) -> Tensor:
        """RevIN + ROCKET features ``(B, n_features)`` of ``x (B, T)``: the untrained front end."""
        self.check_input(x)
        return self.transform(self.revin(x))

    def forward(self, x: Tensor) -> Tensor:
        return self.classify(self.frozen_features(x))


def _regroup(module: nn.Module, incompatible_keys: Any) -> None:
    """Rebuild the kernel groups after a state dict replaced the kernel buffers."""
    module._groups = module._make_groups()

"""Hydra and Hydra + MiniRocket classifiers: competing-kernel counts and a logistic head, ``(B, T)`` → ``(B,)`` logits.

Dempster, Schmidt & Webb (2023), *Hydra: competing convolutional kernels for fast and accurate
time series classification* (Data Mining and Knowledge Discovery 37), written here in PyTorch from
the paper's description. The SSS paper does not use it; issue 18 asks for it as a local model and
as the strongest whole-segment peer of the ROCKET family on Bonn.

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

Scaling and head
----------------
The paper's classifier clips the counts at zero, takes their square root and standardises them,
keeping zero counts at zero and enlarging the scale of mostly-zero features by the fraction of
zeros to the fourth power (so that a feature seen non-zero in a handful of training examples cannot
dominate). :class:`SparseStandardizer` does the same with running statistics over every training
row, as the ROCKET/MiniRocket :class:`~sss_viewer.models.rocket.RunningStandardizer` it extends
(and which the L-BFGS head fit, :mod:`sss_viewer.engine.head_fit`, requires). A linear layer gives
one logit: a logistic-regression head trained by the SSS loss (the paper uses a ridge classifier on
small data; the whole-segment peer in :mod:`sss_viewer.baselines.hydra_reference` does).

Hydra + MiniRocket
------------------
:class:`HydraMiniRocketClassifier` concatenates the Hydra counts with MiniRocket's PPV features
(:class:`~sss_viewer.models.minirocket_features.MiniRocketFeatures`, each window read on its own,
biases fitted on training windows), one standardiser (square root and sparse scaling for the Hydra
columns only, plain standardisation for the PPV) and one head, as the paper's Hydra + MultiRocket
combines the two transforms (MiniRocket here: the project's tested transform).

Both front ends are frozen (nothing before the head is trained), so training computes the
features once per window (``frozen_features``) and fits only the head (``classify``).
"""

from __future__ import annotations

import logging
from typing import Any, ClassVar

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from sss_viewer._validate import check_positive_int
from sss_viewer.models.base import WindowModel
from sss_viewer.models.minirocket_features import MiniRocketFeatures
from sss_viewer.models.revin import RevIN
from sss_viewer.models.rocket import RunningStandardizer

logger = logging.getLogger(__name__)

__all__ = [
    "APP_C_BEST",
    "KERNEL_LENGTH",
    "HydraClassifier",
    "HydraFeatures",
    "HydraMiniRocketClassifier",
    "SparseStandardizer",
    "hydra_dilations",
]

KERNEL_LENGTH = 9
_CPU_CHUNK_ELEMENTS = 1 << 22
"""Convolution outputs computed at once on the CPU (16 MB of float32): rows (and, for long rows, stretches
of positions) are processed in chunks of this size, so memory stays bounded whatever ``B x T``."""
_DEVICE_CHUNK_ELEMENTS = 1 << 26
"""The same bound on an accelerator (256 MB of float32)."""
SPARSE_EXPONENT = 4
"""The scale of a Hydra feature grows by (fraction of zero training values) ** this (the paper's code: 4)."""

APP_C_BEST: dict[str, Any] = {
    "hydra": {
        "kernels_per_group": 8,
        "groups": 64,
        "lr": 1e-3,
        "note": "Not in the SSS paper. Dempster et al. (2023) defaults k = 8, g = 64; lr of the logistic head "
                "as MiniRocket's.",
    },
    "hydra_minirocket": {
        "kernels_per_group": 8,
        "groups": 64,
        "num_features": 9_996,
        "lr": 1e-3,
        "note": "Not in the SSS paper. Hydra defaults + MiniRocket defaults; lr as MiniRocket's.",
    },
}  # fmt: skip
"""Default configurations (the published defaults; the SSS paper has no Hydra table)."""


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


class SparseStandardizer(RunningStandardizer):
    """A running standardiser that scales Hydra counts as the paper's classifier does.

    Columns marked ``sparse`` are clipped at zero and square-rooted, standardised by their running
    mean and standard deviation plus ``(fraction of zero training values) ** 4``, and kept at zero
    where the root is zero; the other columns are standardised as by
    :class:`~sss_viewer.models.rocket.RunningStandardizer`.

    Parameters
    ----------
    sparse : Tensor, shape (n_features,), bool
        The Hydra columns.
    eps : float
        Variance floor of the plain columns, and added to the scale of the sparse ones.
    """

    def __init__(self, sparse: Tensor, eps: float = 1e-8) -> None:
        sparse = torch.as_tensor(sparse, dtype=torch.bool)
        if sparse.ndim != 1:
            raise ValueError(f"sparse must be a 1-D bool mask of the features, got shape {tuple(sparse.shape)}.")
        super().__init__(sparse.shape[0], eps)
        self.register_buffer("sparse", sparse.clone())
        self.register_buffer("zeros", torch.zeros(sparse.shape[0], dtype=torch.float64))

    def root(self, feats: Tensor) -> Tensor:
        """Square root of the clipped sparse columns ``(B, F)``; the other columns unchanged."""
        return torch.where(self.sparse, feats.clamp(min=0).sqrt(), feats)

    @torch.no_grad()
    def reset(self) -> None:
        """Forget every row seen."""
        super().reset()
        self.zeros.zero_()

    @torch.no_grad()
    def update(self, feats: Tensor) -> None:
        """Merge a batch of raw features ``(B, F)`` into the running statistics (of the roots)."""
        rooted = self.root(feats.detach())
        self.zeros += (rooted == 0).sum(0).double()
        super().update(rooted)

    def forward(self, feats: Tensor) -> Tensor:
        """Scale raw features ``(B, F)``; returns ``(B, F)`` in their dtype."""
        if self.training:
            self.update(feats)
        rooted = self.root(feats)
        if self.count == 0:  # never trained: pass the roots through
            return rooted
        var = self.m2 / self.count
        damp = (self.zeros / self.count) ** SPARSE_EXPONENT
        scale = torch.where(self.sparse, 1 / (var.sqrt() + damp + self.eps), torch.rsqrt(var + self.eps))
        out = (rooted - self.mean.to(feats.dtype)) * scale.to(feats.dtype)
        return torch.where(self.sparse & (rooted == 0), torch.zeros((), dtype=out.dtype, device=out.device), out)


class HydraClassifier(WindowModel):
    """Hydra counts with a sparse-scaled logistic head: ``(B, T)`` → ``(B,)`` logits.

    Parameters
    ----------
    input_length : int
        Reference length of the dilations and the counts (the SSS window, or the segment length).
    kernels_per_group : int
        ``k`` (8 in the paper).
    groups : int
        ``g`` (64 in the paper): 1 or even.
    seed : int
        Kernel seed.
    revin : bool
        Z-score every row over its length first (per-window normalisation); off by default, as
        for MiniRocket (the per-channel z-score of the preprocessing keeps amplitude differences
        between windows, which the soft max counts read).
    revin_eps : float
        RevIN's variance floor.

    Attributes
    ----------
    n_features : int
    min_length : int
        Smallest accepted ``T`` (9).
    """

    name: ClassVar[str] = "hydra"
    positive_ints = ("input_length", "kernels_per_group", "groups")
    non_negative_ints = ("seed",)

    def __init__(
        self, input_length: int = 1024, kernels_per_group: int = 8, groups: int = 64, seed: int = 0,
        revin: bool = False, revin_eps: float = 1e-5,
    ) -> None:  # fmt: skip
        super().__init__()
        self.features = HydraFeatures(input_length, kernels_per_group, groups, seed)
        self.n_features = self.features.n_features
        self.min_length = KERNEL_LENGTH
        self.revin = RevIN(revin_eps, affine=False) if revin else nn.Identity()
        self.norm = SparseStandardizer(torch.ones(self.n_features, dtype=torch.bool))
        self.head = _zero_head(self.n_features)

    has_frozen_front_end: ClassVar[bool] = True

    def frozen_features(self, x: Tensor) -> Tensor:
        """The untrained front end, ``(B, T)`` → raw counts ``(B, n_features)``: training loops may cache it per window."""
        self.check_input(x)
        return self.features(self.revin(x))

    def classify(self, feats: Tensor) -> Tensor:
        """The trained part: scale raw counts ``(B, n_features)`` and apply the logistic head → ``(B,)`` logits."""
        return self.head(self.norm(feats)).squeeze(-1)

    def forward(self, x: Tensor) -> Tensor:
        return self.classify(self.frozen_features(x))


class HydraMiniRocketClassifier(WindowModel):
    """Hydra counts and MiniRocket PPV features, one standardiser, one logistic head: ``(B, T)`` → ``(B,)`` logits.

    Parameters
    ----------
    input_length : int
        Reference length of both transforms' dilations.
    kernels_per_group, groups : int
        Hydra's ``k`` and ``g``.
    num_features : int
        MiniRocket features (rounded down to a multiple of 84).
    seed : int
        Seed of the Hydra kernels and of MiniRocket's bias fitting.
    revin : bool
        Z-score every row first (see :class:`HydraClassifier`).
    revin_eps : float

    Attributes
    ----------
    n_features : int
        Hydra's features, then MiniRocket's.
    min_length : int
        Smallest accepted ``T`` (9).
    """

    name: ClassVar[str] = "hydra_minirocket"
    positive_ints = ("input_length", "kernels_per_group", "groups", "num_features")
    non_negative_ints = ("seed",)

    def __init__(
        self, input_length: int = 1024, kernels_per_group: int = 8, groups: int = 64, num_features: int = 9_996,
        seed: int = 0, revin: bool = False, revin_eps: float = 1e-5,
    ) -> None:  # fmt: skip
        super().__init__()
        self.hydra = HydraFeatures(input_length, kernels_per_group, groups, seed)
        self.minirocket = MiniRocketFeatures(input_length, num_features, seed)
        self.n_features = self.hydra.n_features + self.minirocket.n_features
        self.min_length = KERNEL_LENGTH
        self.revin = RevIN(revin_eps, affine=False) if revin else nn.Identity()
        sparse = torch.arange(self.n_features) < self.hydra.n_features
        self.norm = SparseStandardizer(sparse)
        self.head = _zero_head(self.n_features)

    @torch.no_grad()
    def initialise_from_data(self, x: Tensor) -> None:
        """Fit MiniRocket's biases on training examples ``(N, T)`` before training (training loops call this)."""
        self.minirocket.fit(self.revin(x))

    has_frozen_front_end: ClassVar[bool] = True

    def frozen_features(self, x: Tensor) -> Tensor:
        """The untrained front end, ``(B, T)`` → ``(B, n_features)``: Hydra counts, then MiniRocket PPV."""
        self.check_input(x)
        x = self.revin(x)
        if not bool(self.minirocket.fitted):
            if not self.training:
                raise RuntimeError(
                    "HydraMiniRocketClassifier: MiniRocket's biases were never fitted; train the model (or call "
                    "model.initialise_from_data(x) on training data) before scoring."
                )
            self.minirocket.fit(x.detach())
        return torch.cat([self.hydra(x), self.minirocket(x)], dim=1)

    def classify(self, feats: Tensor) -> Tensor:
        """The trained part: scale ``(B, n_features)`` and apply the logistic head → ``(B,)`` logits."""
        return self.head(self.norm(feats)).squeeze(-1)

    def forward(self, x: Tensor) -> Tensor:
        return self.classify(self.frozen_features(x))


def _zero_head(n_features: int) -> nn.Linear:
    """A linear head ``n_features → 1`` starting at zero (every window scored 0.5 before training)."""
    head = nn.Linear(n_features, 1)
    nn.init.zeros_(head.weight)
    nn.init.zeros_(head.bias)
    return head

"""Hydra and Hydra + MiniRocket classifiers: competing-kernel counts and a logistic head, ``(B, T)`` → ``(B,)`` logits.

Dempster, Schmidt & Webb (2023), *Hydra: competing convolutional kernels for fast and accurate
time series classification* (Data Mining and Knowledge Discovery 37), written here in PyTorch from
the paper's description. The SSS paper does not use it; issue 18 asks for it as a local model and
as the strongest whole-segment peer of the ROCKET family on Bonn.

The transform (kernels, dilations, competition, counts, and their series definition) is
:mod:`sss_viewer.models.hydra_features` and :mod:`sss_viewer.models._hydra_series`.

Scaling and head
----------------
The paper's classifier clips the counts at zero, takes their square root and standardises them,
keeping zero counts at zero and enlarging the scale of mostly-zero features by the fraction of
zeros to the fourth power (so that a feature seen non-zero in a handful of training examples cannot
dominate). :class:`SparseStandardizer` does the same with running statistics over every training
row, as the ROCKET/MiniRocket :class:`~sss_viewer.models.rocket.RunningStandardizer` it extends
(and which the L-BFGS head fit, :mod:`sss_viewer.engine._head_fit`, requires). A linear layer gives
one logit: a logistic-regression head trained by the SSS loss (the paper uses a ridge classifier on
small data; the whole-segment peer in :mod:`sss_viewer.baselines.hydra_reference` does).

Hydra + MiniRocket
------------------
:class:`HydraMiniRocketClassifier` concatenates the Hydra counts with MiniRocket's PPV features
(:class:`~sss_viewer.models.minirocket_features.MiniRocketFeatures`, biases fitted on training
windows, windows read as the feature context below says), one standardiser (square root and sparse scaling for the Hydra
columns only, plain standardisation for the PPV) and one head, as the paper's Hydra + MultiRocket
combines the two transforms (MiniRocket here: the project's tested transform).

Both front ends are frozen (nothing before the head is trained), so training computes the
features once per window (``frozen_features``) and fits only the head (``classify``).

Feature context
---------------
``feature_context="series"`` (the default for new models without RevIN): a window is read within
its channel, its counts summed over its own positions of one pass of the kernels over the whole
channel (:mod:`sss_viewer.models._hydra_series`), and Hydra + MiniRocket's PPV features follow
MiniRocket's series definition (:mod:`sss_viewer.models._minirocket_series`). Windows are then
scored at any stride for the cost of one pass per channel (``store_window_logits``) and trained on
the same numbers (``store_window_features``); a bare row given to ``forward`` is read as a whole
channel. ``"window"`` reads each window on its own, zero-padded at its edges: models saved before
the series route (a config without the key loads as ``"window"``) and RevIN models.
"""

from __future__ import annotations

import logging
from typing import Any, ClassVar

import numpy as np
import torch
from torch import Tensor, nn

from sss_viewer.models import _minirocket_series as minirocket_series
from sss_viewer.models._feature_context import SeriesReading
from sss_viewer.models._hydra_series import GROUP_WINDOWS, window_counts
from sss_viewer.models.base import WindowModel
from sss_viewer.models.hydra_features import KERNEL_LENGTH, HydraFeatures, hydra_dilations
from sss_viewer.models.minirocket_features import MiniRocketFeatures
from sss_viewer.models.revin import RevIN
from sss_viewer.models.rocket import RunningStandardizer, StandardisedLogisticHead
from sss_viewer.windows.store import WindowSource

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
}
"""Default configurations (the published defaults; the SSS paper has no Hydra table)."""


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


class _HydraWindowModel(StandardisedLogisticHead, SeriesReading, WindowModel):
    """What the Hydra classifiers share: the feature context, the series route, the head.

    Subclasses set ``self.revin``, ``self.norm``, ``self.head`` and implement :meth:`_window_transform` (rows read on their own) and
    :meth:`_series_features` (windows of one channel read within it).
    """

    has_frozen_front_end: ClassVar[bool] = True

    def _window_transform(self, x: Tensor) -> Tensor:
        raise NotImplementedError

    def _series_features(self, row: np.ndarray, starts: np.ndarray, window_length: int, device: torch.device) -> Tensor:
        """Features ``(len(starts), n_features)`` of windows ``[s, s + L)`` of one channel ``row (T,)``, read within it."""
        raise NotImplementedError

    def frozen_features(self, x: Tensor) -> Tensor:
        """The untrained front end, ``(B, T)`` → raw features ``(B, n_features)``: training loops may cache it per window.

        Under ``feature_context="series"`` every row is read as a whole channel.
        """
        self.check_input(x)
        self._check_ready(x)
        if not self.reads_series:
            return self._window_transform(x)
        rows = x.detach().float().cpu().numpy()
        origin = np.zeros(1, dtype=np.int64)
        return torch.cat([self._series_features(row, origin, x.shape[1], x.device) for row in rows]).to(x.dtype)

    def forward(self, x: Tensor) -> Tensor:
        return self.classify(self.frozen_features(x))

    def _by_channel(self, store: WindowSource, starts: np.ndarray, window_length: int):
        """Yield ``(window indices, channel samples (T,), local starts)`` for each channel holding windows."""
        series, local, used = store.locate(np.asarray(starts, dtype=np.int64), window_length)
        order = np.argsort(series, kind="stable")
        bounds = np.searchsorted(series[order], used, side="right")
        lo = 0
        for channel, hi in zip(used, bounds):
            picked = order[lo:hi]
            lo = hi
            yield (
                picked,
                np.array(store.series(int(channel)), dtype=np.float32),
                local[picked],
            )  # a copy: memmaps are read-only

    def store_window_features(self, store: WindowSource, starts: np.ndarray, window_length: int) -> Tensor:
        """Counts (and PPV) by segment sums (:meth:`SeriesReading.store_window_features`), on the model's device."""
        self._check_ready()
        device = self.head.weight.device
        out = torch.empty(len(starts), self.n_features, device=device)
        for picked, row, local in self._by_channel(store, starts, window_length):
            out[torch.from_numpy(picked).to(device)] = self._series_features(row, local, window_length, device)
        return out

    @torch.no_grad()
    def store_window_logits(
        self,
        store: WindowSource,
        starts: np.ndarray,
        window_length: int,
        *,
        device: torch.device | str = "cpu",
        on_progress=None,
    ) -> np.ndarray:
        """Logits of the head on the series features (:meth:`SeriesReading.store_window_logits`).

        A channel's windows are featurised :data:`~sss_viewer.models._hydra_series.GROUP_WINDOWS` at a
        time on ``device`` (the model must be there); ``on_progress`` after each channel.
        """
        self._check_ready()
        device = torch.device(device)
        out = np.empty(len(starts), dtype=np.float64)
        done = 0
        for picked, row, local in self._by_channel(store, starts, window_length):
            for lo in range(0, len(picked), GROUP_WINDOWS):  # features of one group of windows at a time
                part = slice(lo, lo + GROUP_WINDOWS)
                feats = self._series_features(row, local[part], window_length, device)
                out[picked[part]] = self.classify(feats).double().cpu().numpy()
            done += len(picked)
            if on_progress is not None:
                on_progress(done / max(len(starts), 1))
        return out

    def _check_ready(self, x: Tensor | None = None) -> None:
        """Raise unless the front end can score; a model in training may fit its fitted parts on ``x (B, T)`` instead."""


class HydraClassifier(_HydraWindowModel):
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
    feature_context : {"series", "window"}, optional
        How windows are read (module docstring); default ``"series"``, ``"window"`` with RevIN.

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
        self,
        input_length: int = 1024,
        kernels_per_group: int = 8,
        groups: int = 64,
        seed: int = 0,
        revin: bool = False,
        revin_eps: float = 1e-5,
        feature_context: str | None = None,
    ) -> None:
        super().__init__()
        self.set_feature_context(feature_context, revin)
        self.features = HydraFeatures(input_length, kernels_per_group, groups, seed)
        self.n_features = self.features.n_features
        self.min_length = KERNEL_LENGTH
        self.revin = RevIN(revin_eps, affine=False) if revin else nn.Identity()
        self.norm = SparseStandardizer(torch.ones(self.n_features, dtype=torch.bool))
        self.head = _zero_head(self.n_features)

    def _window_transform(self, x: Tensor) -> Tensor:
        return self.features(self.revin(x))

    def _series_features(self, row: np.ndarray, starts: np.ndarray, window_length: int, device: torch.device) -> Tensor:
        x = torch.from_numpy(row).to(device=device, dtype=torch.float32)
        return window_counts(self.features, x, starts, window_length)


class HydraMiniRocketClassifier(_HydraWindowModel):
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
    feature_context : {"series", "window"}, optional
        How windows are read (module docstring); default ``"series"``, ``"window"`` with RevIN.
    dilation_split : {"reference", "legacy"}
        MiniRocket's split of its features over the dilations; ``"legacy"`` only for models saved before
        the reference split was matched.

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
        self,
        input_length: int = 1024,
        kernels_per_group: int = 8,
        groups: int = 64,
        num_features: int = 9_996,
        seed: int = 0,
        revin: bool = False,
        revin_eps: float = 1e-5,
        feature_context: str | None = None,
        dilation_split: str = "reference",
    ) -> None:
        super().__init__()
        self.set_feature_context(feature_context, revin)
        self.hydra = HydraFeatures(input_length, kernels_per_group, groups, seed)
        self.minirocket = MiniRocketFeatures(input_length, num_features, seed, dilation_split)
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

    def _check_ready(self, x: Tensor | None = None) -> None:
        if not bool(self.minirocket.fitted):
            if not self.training or x is None:
                raise RuntimeError(
                    "HydraMiniRocketClassifier: MiniRocket's biases were never fitted; train the model (or call "
                    "model.initialise_from_data(x) on training data) before scoring."
                )
            self.minirocket.fit(self.revin(x).detach())

    def _window_transform(self, x: Tensor) -> Tensor:
        x = self.revin(x)
        return torch.cat([self.hydra(x), self.minirocket(x)], dim=1)

    def _series_features(self, row: np.ndarray, starts: np.ndarray, window_length: int, device: torch.device) -> Tensor:
        x = torch.from_numpy(row).to(device=device, dtype=torch.float32)
        ppv = minirocket_series.window_features(
            self.minirocket, [row], np.zeros(len(starts), dtype=np.int64), starts, window_length
        )
        return torch.cat([window_counts(self.hydra, x, starts, window_length), torch.from_numpy(ppv).to(device)], dim=1)


def _zero_head(n_features: int) -> nn.Linear:
    """A linear head ``n_features → 1`` starting at zero (every window scored 0.5 before training)."""
    head = nn.Linear(n_features, 1)
    nn.init.zeros_(head.weight)
    nn.init.zeros_(head.bias)
    return head

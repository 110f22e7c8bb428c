"""MiniRocket classifier: fixed convolution features and a logistic head, ``(B, T)`` → ``(B,)`` logits.

Dempster, Schmidt & Webb (2021), *MiniRocket: a very fast (almost) deterministic transform for
time series classification*, written here in PyTorch from the paper's description. The SSS paper
does not use it; issue 6 asks for it as the strong reference on Bonn, and it also serves as an SSS
local model (random-convolution features of each window).

The transform (kernels, dilations, biases, PPV) is :mod:`sss_viewer.models.minirocket_features`.

Feature context
---------------
``feature_context="series"`` (the default for new models, issue 15): the convolutions of a
channel are computed once over the whole channel and a window averages over its own positions
(:mod:`sss_viewer.models._minirocket_series`), with MiniRocket's strict ``C > bias``. Window logits
then come from one evidence series per channel at any stride (``store_window_logits``), and the
training features of windows from segment sums over their channel (``store_window_features``);
a bare row given to ``forward`` is read as a whole channel. ``"window"`` reads each window on its
own, zero-padded at the window's edges, a position equal to the bias counting one half: models
saved before issue 15 (a config without the key loads as ``"window"``), and RevIN models (which
normalise each window separately, so no series is shared between windows).

Head
----
Features are standardised with a running mean/variance (the ROCKET backbone's standardiser) and a
linear layer gives one logit: a logistic-regression head, trained with the rest of the pipeline.
``revin=True`` z-scores each row first (per-window normalisation inside SSS); the default keeps
the input's scale so that amplitude differences between windows of a channel survive (the input
is already z-scored per channel by the preprocessing).
"""

from __future__ import annotations

import logging
from typing import Any, ClassVar

import numpy as np
import torch
import torch.nn.functional as F
from torch import Tensor, nn

from sss_viewer.models import _minirocket_series as series_features
from sss_viewer.models._feature_context import FEATURE_CONTEXTS, SeriesReading
from sss_viewer.models.base import WindowModel
from sss_viewer.models.minirocket_features import (
    KERNEL_LENGTH,
    MiniRocketFeatures,
    kernel_taps,
    minirocket_dilations,
)
from sss_viewer.models.revin import RevIN
from sss_viewer.models.rocket import RunningStandardizer, StandardisedLogisticHead
from sss_viewer.windows.store import WindowSource

logger = logging.getLogger(__name__)

GPU_CHANNELS_PER_CALL = 16
"""Channels scored together off the CPU: at 2**16 positions a block, ~2 GB of intermediates on the device."""

__all__ = [
    "APP_C_BEST",
    "FEATURE_CONTEXTS",
    "MiniRocketClassifier",
    "MiniRocketFeatures",
    "kernel_taps",
    "minirocket_dilations",
]


def _on_device(store: WindowSource, i: int, row: np.ndarray, device: torch.device) -> Tensor:
    """Series ``i`` of ``store`` (its host samples ``row``, shape (T_i,)) as a float32 tensor on ``device`` (with its
    index, as a tensor's ``.device``): the store's own copy there when it has one
    (:meth:`~sss_viewer.windows.store.DeviceWindows.device_series`), else a copy of ``row`` (``np.array`` first:
    memmap views are read-only)."""
    on_device = getattr(store, "device_series", None)
    if on_device is not None and store.device == device:
        return on_device(i)
    return torch.from_numpy(np.array(row, dtype=np.float32)).to(device)


APP_C_BEST: dict[str, Any] = {
    "num_features": 9_996,
    "lr": 1e-3,
    "note": "Not in the SSS paper. Dempster et al. (2021) defaults: 84 kernels, ~10,000 features, at most "
    "32 dilations; lr of the logistic head chosen here (Bonn inner validation).",
}
"""Default configuration (MiniRocket's published defaults; the SSS paper has no MiniRocket table)."""


class MiniRocketClassifier(StandardisedLogisticHead, SeriesReading, WindowModel):
    """MiniRocket features with a standardised logistic head: ``(B, T)`` → ``(B,)`` logits.

    Parameters
    ----------
    input_length : int
        Reference length for the dilations (the SSS window, or the segment length).
    num_features : int
        About 10,000 in the original.
    seed : int
        Seed of the bias fitting.
    revin : bool
        Z-score every row over its length first (per-window normalisation).
    revin_eps : float
        RevIN's variance floor.
    feature_context : {"series", "window"}, optional
        How windows are read (module docstring); default ``"series"``, ``"window"`` with RevIN.
    dilation_split : {"reference", "legacy"}
        How the features are split over the dilations (``minirocket_dilations``); ``"legacy"`` only
        for models saved before the reference split was matched (their configs lack the key).

    Attributes
    ----------
    n_features : int
    min_length : int
        Smallest accepted ``T`` (9).
    """

    name: ClassVar[str] = "minirocket"
    non_negative_ints = ("seed",)

    def __init__(
        self,
        input_length: int = 1024,
        num_features: int = 9_996,
        seed: int = 0,
        revin: bool = False,
        revin_eps: float = 1e-5,
        feature_context: str | None = None,
        dilation_split: str = "reference",
    ) -> None:
        super().__init__()
        self.set_feature_context(feature_context, revin)
        self.features = MiniRocketFeatures(input_length, num_features, seed, dilation_split)
        self.n_features = self.features.n_features
        self.min_length = KERNEL_LENGTH
        self.revin = RevIN(revin_eps, affine=False) if revin else nn.Identity()
        self.norm = RunningStandardizer(self.n_features)
        self.head = nn.Linear(self.n_features, 1)
        nn.init.zeros_(self.head.weight)
        nn.init.zeros_(self.head.bias)

    @torch.no_grad()
    def initialise_from_data(self, x: Tensor) -> None:
        """Fit the biases on training examples ``(N, T)`` before training (training loops call this)."""
        self.features.fit(self.revin(x))

    def _check_fitted(self, x: Tensor | None = None) -> None:
        if not bool(self.features.fitted):
            if not self.training or x is None:
                raise RuntimeError(
                    "MiniRocketClassifier: the biases were never fitted; train the model (or call "
                    "model.features.fit(x) on training data) before scoring."
                )
            self.features.fit(x.detach())

    def transform(self, x: Tensor) -> Tensor:
        """Raw PPV features ``(B, n_features)`` of ``x (B, T)`` (after RevIN when enabled).

        Under ``feature_context="series"`` every row is read as a whole channel.
        """
        x = self.revin(x)
        self._check_fitted(x)
        if not self.reads_series:
            return self.features(x)
        if x.device.type == "cpu":
            rows = [row for row in x.detach().float().contiguous().numpy()]
            feats = series_features.window_features(
                self.features, rows, np.arange(len(rows)), np.zeros(len(rows), np.int64), x.shape[1]
            )
            return torch.from_numpy(feats)
        margin = series_features.SeriesLayout.of(self.features, x.shape[1]).margin
        return series_features.explicit_window_features(self.features, F.pad(x.float(), (margin, margin)), x.shape[1])

    def store_window_features(self, store: WindowSource, starts: np.ndarray, window_length: int) -> Tensor:
        """PPV features by segment sums (:meth:`SeriesReading.store_window_features`; on the CPU, numba)."""
        self._check_fitted()
        series, local, used = store.locate(np.asarray(starts, dtype=np.int64), window_length)
        rows = [store.series(int(i)) for i in used]
        position = np.searchsorted(used, series)
        return torch.from_numpy(series_features.window_features(self.features, rows, position, local, window_length))

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
        """Logits by the evidence series (:meth:`SeriesReading.store_window_logits`).

        On the CPU numba kernels run, a group of channels at a time (``on_progress`` after each group);
        another device runs the torch path there, :data:`GPU_CHANNELS_PER_CALL` channels at a time.
        """
        self._check_fitted()
        device = torch.device(device)
        weights, constant = series_features.fold_head(self)
        starts = np.asarray(starts, dtype=np.int64)
        series, local, used = store.locate(starts, window_length)
        out = np.empty(len(starts), dtype=np.float64)
        group = max(1, 4 * series_features.numba_threads()) if device.type == "cpu" else GPU_CHANNELS_PER_CALL
        order = np.arange(len(series)) if (np.diff(series) >= 0).all() else np.argsort(series, kind="stable")
        by_series = series[order]
        done = 0
        for lo in range(0, len(used), group):
            ids = used[lo : lo + group]
            rows = [store.series(int(i)) for i in ids]
            picked = order[np.searchsorted(by_series, ids[0]) : np.searchsorted(by_series, ids[-1], side="right")]
            position = np.searchsorted(ids, series[picked])
            if device.type == "cpu":
                out[picked] = series_features.window_logits(
                    self.features, weights, constant, rows, position, local[picked], window_length
                )
            else:
                # one zero-padded batch of channels per call: kernel launches, not arithmetic, bound a channel alone
                x = torch.zeros(len(rows), max(len(r) for r in rows), dtype=torch.float32, device=device)
                for i, r in enumerate(rows):
                    x[i, : len(r)] = _on_device(store, int(ids[i]), r, x.device)
                out[picked] = (
                    series_features.torch_window_logits(
                        self.features, weights, constant, x, local[picked], window_length, rows=position
                    )
                    .cpu()
                    .numpy()
                )
            done += len(picked)
            if on_progress is not None:
                on_progress(done / max(len(starts), 1))
        return out

    has_frozen_front_end: ClassVar[bool] = True

    def frozen_features(self, x: Tensor) -> Tensor:
        """The untrained front end, ``(B, T)`` → ``(B, n_features)``: training loops may cache it per window."""
        self.check_input(x)
        return self.transform(x)

    def forward(self, x: Tensor) -> Tensor:
        return self.classify(self.frozen_features(x))

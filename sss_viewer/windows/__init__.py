"""Stage 4 — windows: preprocessed series in one flat store, their windows, splits and sampler.

``store`` (``SeriesStore``, ``WindowIndex``: windows as index arithmetic, never copies; ``WindowSource``: what
models read from a store) ·
``series_set`` (``build_series_set``: recordings → preprocessed store + per-series table) ·
``splits`` (patient/channel splits, balancing) · ``sampler`` (Algorithm 1's epoch batches).
"""

from sss_viewer._lazy import attach

_PUBLIC = {
    "sss_viewer.windows.store": ("SeriesStore", "WindowIndex", "WindowSource"),
    "sss_viewer.windows.series_set": ("SeriesSet", "build_series_set"),
    "sss_viewer.windows.splits": ("assign_splits", "split_by_channel", "split_by_patient"),
    "sss_viewer.windows.sampler": ("epoch_batches",),
}
"""The public names, by the module that defines them; each is imported on first use (:mod:`sss_viewer._lazy`)."""

__getattr__, __dir__, __all__ = attach(__name__, _PUBLIC)

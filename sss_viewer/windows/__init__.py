"""Stage 4 — windows: preprocessed series in one flat store, their windows, splits and sampler.

``store`` (``SeriesStore``, ``WindowIndex``: windows as index arithmetic, never copies; ``WindowSource``: what
models read from a store) ·
``series_set`` (``build_series_set``: recordings → preprocessed store + per-series table) ·
``splits`` (patient/channel splits, balancing) · ``sampler`` (Algorithm 1's epoch batches).
"""

from sss_viewer.windows.sampler import epoch_batches
from sss_viewer.windows.store import SeriesStore, WindowIndex, WindowSource

__all__ = ["SeriesStore", "WindowIndex", "WindowSource", "epoch_batches"]

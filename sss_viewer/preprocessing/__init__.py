"""Stage 3 — preprocessing: a recording's channels into normalised float32 series.

``config`` (``PreprocessConfig``, presets, rate checks) → ``filters`` (resample, notch, high-pass,
pool; one channel block) → ``streaming`` (bounded-memory chunks of a lazy recording) → ``cache``
(memory-mapped entries shared by processes, keyed by source digests and the config; ``SeriesSource``: what
``build_series_set`` reads from a cache or a stand-in for one).
"""

from sss_viewer._lazy import attach

_PUBLIC = {
    "sss_viewer.preprocessing.config": ("SCALES", "PreprocessConfig", "native_rates", "preprocess_preset"),
    "sss_viewer.preprocessing.filters": ("filter_block", "preprocess_channels", "unusable_reason"),
    "sss_viewer.preprocessing.cache": ("CachedSeries", "SeriesCache", "SeriesSource", "default_cache_dir"),
    "sss_viewer.preprocessing.artifacts": (
        "ArtifactConfig",
        "ArtifactReport",
        "detect_artifacts",
        "detect_recording_artifacts",
    ),
}
"""The public names, by the module that defines them; each is imported on first use (:mod:`sss_viewer._lazy`)."""

__getattr__, __dir__, __all__ = attach(__name__, _PUBLIC)

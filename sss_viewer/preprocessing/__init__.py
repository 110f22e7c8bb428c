"""Stage 3 — preprocessing: a recording's channels into normalised float32 series.

``config`` (``PreprocessConfig``, presets, rate checks) → ``filters`` (resample, notch, high-pass,
pool; one channel block) → ``streaming`` (bounded-memory chunks of a lazy recording) → ``cache``
(memory-mapped entries shared by processes, keyed by source digests and the config).
"""

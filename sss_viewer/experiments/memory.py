"""Will an experiment fit in memory? A rough upper estimate, checked before any training starts.

The largest allocations of a run are known before it starts: the preprocessed series (held in
memory by the experiment runner), the SSS window index (two int64 per window: series, start), the
cached features of a frozen front end (MiniRocket/ROCKET: float32 per window and feature), one
batch of windows and the activations of the local model (a generous ``ACTIVATION_FLOATS`` floats
per input sample). The estimate is compared with the memory the system says is available; a preset
that cannot fit is refused with the numbers, instead of being killed hours into a grid.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path

from sss_viewer.io.recording import Recording
from sss_viewer.preprocessing.config import PreprocessConfig

logger = logging.getLogger(__name__)

__all__ = ["available_memory_bytes", "check_fits_in_memory", "estimate_run_bytes"]

ACTIVATION_FLOATS = 256
"""Float32 activations kept for the backward pass per input sample of a batch (PatchTST at the paper's
sizes needs about 100; generous on purpose)."""
INDEX_BYTES_PER_WINDOW = 16


def available_memory_bytes() -> int | None:
    """``MemAvailable`` from ``/proc/meminfo`` (Linux), or None where it cannot be read."""
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        return None
    return None


def _series_lengths(recordings: Sequence[Recording], preprocess: PreprocessConfig) -> list[tuple[int, int]]:
    """(channels, preprocessed samples per channel) of every recording."""
    return [(len(r.ieeg_picks()), preprocess.output_length(r.n_times, r.sfreq)) for r in recordings]


def estimate_run_bytes(recordings: Sequence[Recording], preprocess: PreprocessConfig, config) -> dict[str, int]:
    """Upper estimate of the memory one SSS run needs.

    Parameters
    ----------
    recordings : sequence of Recording
    preprocess : PreprocessConfig
    config : TrainConfig
        The run's SSS configuration (window length, strides, batch size, model).

    Returns
    -------
    dict of int
        Bytes of ``series``, ``window_index``, ``frozen_features``, ``batch`` and ``total``.
    """
    shapes = _series_lengths(recordings, preprocess)
    L = config.window_length
    n_samples = sum(c * n for c, n in shapes)
    n_train_windows = sum(c * max(0, (n - L) // config.train_stride + 1) for c, n in shapes)
    n_val_windows = sum(c * max(0, (n - L) // config.val_stride + 1) for c, n in shapes)
    features = 0
    if config.backbone == "minirocket":
        features = (n_train_windows + n_val_windows) * int(config.model_params.get("num_features", 9996)) * 4
    elif config.backbone == "rocket":
        features = (n_train_windows + n_val_windows) * 2 * int(config.model_params.get("num_kernels", 10_000)) * 4
    elif config.backbone in ("hydra", "hydra_minirocket"):  # the count depends on L (one block per dilation)
        from sss_viewer.models import build_window_model

        n_features = build_window_model(config.backbone, L, **config.model_params).n_features
        features = (n_train_windows + n_val_windows) * n_features * 4
    from sss_viewer.engine.training import FEATURE_CACHE_BYTES

    features = features if features <= FEATURE_CACHE_BYTES else 0  # larger caches are not built
    parts = {
        "series": n_samples * 4,
        "window_index": (n_train_windows + n_val_windows) * INDEX_BYTES_PER_WINDOW,
        "frozen_features": features,
        "batch": config.batch_size * L * 4 * ACTIVATION_FLOATS,
    }
    parts["total"] = sum(parts.values())
    return parts


def check_fits_in_memory(
    recordings: Sequence[Recording], preprocess: PreprocessConfig, config, *, preset: str, available: int | None = None
) -> dict[str, int]:
    """Raise a ValueError naming the preset and the numbers when a run cannot fit in memory.

    Parameters
    ----------
    recordings, preprocess, config
        As :func:`estimate_run_bytes`.
    preset : str
        Name used in the message.
    available : int, optional
        Bytes available; default :func:`available_memory_bytes` (the check is skipped when unknown).

    Returns
    -------
    dict of int
        The estimate.
    """
    estimate = estimate_run_bytes(recordings, preprocess, config)
    available = available_memory_bytes() if available is None else available
    if available is not None and estimate["total"] > available:
        detail = ", ".join(f"{k.replace('_', ' ')} {v / 1e9:.1f} GB" for k, v in estimate.items() if k != "total")
        raise ValueError(
            f"Preset {preset!r} cannot fit in memory on this machine: one run needs about "
            f"{estimate['total'] / 1e9:.1f} GB ({detail}) and {available / 1e9:.1f} GB are available. "
            "Use a larger training/validation stride, a smaller batch, fewer recordings or a machine with more memory."
        )
    logger.info("memory estimate of one %s run: %.2f GB", preset, estimate["total"] / 1e9)
    return estimate

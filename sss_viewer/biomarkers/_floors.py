"""The trivial floors every ranking is read beside: variance, robust amplitude and line length.

They are computed on the samples as read (no filter), per window, so that they stay the one-line
statistics a reader would compute: a scorer that does not beat them on real recordings adds
nothing. Line length is also a published SOZ marker (Esteller et al. 2001).
"""

from __future__ import annotations

import numpy as np

from sss_viewer.biomarkers.base import BiomarkerScorer, ScorerInfo, WindowGrid
from sss_viewer.io.recording import Recording

ROBUST_SD_PER_MAD = 1.4826
"""Median absolute deviation → standard deviation of a Gaussian."""
_BLOCK_CHANNELS = 8
AMPLITUDE_RATE_HZ = 250.0
"""Samples per second the robust amplitude's medians read (see :func:`window_robust_amplitude`)."""


def _window_sums(x: np.ndarray, grid: WindowGrid, length: int | None = None) -> np.ndarray:
    """Sum of ``x`` over every window of ``grid`` (``length`` samples from each start), shape (n_channels, n_windows)."""
    length = grid.length if length is None else length
    csum = np.zeros((x.shape[0], x.shape[1] + 1), dtype=np.float64)
    np.cumsum(x, axis=1, dtype=np.float64, out=csum[:, 1:])
    return csum[:, grid.starts + length] - csum[:, grid.starts]


def window_variance(data: np.ndarray, grid: WindowGrid) -> np.ndarray:
    """Variance of every window (µV²), shape (n_channels, n_windows).

    Parameters
    ----------
    data : ndarray, shape (n_channels, n_times), µV
    grid : WindowGrid
    """
    out = np.empty((data.shape[0], len(grid.starts)))
    n = grid.length
    for lo in range(0, data.shape[0], _BLOCK_CHANNELS):
        block = np.asarray(data[lo : lo + _BLOCK_CHANNELS], dtype=np.float64)
        block -= block.mean(axis=1, keepdims=True)  # keeps the sums of squares well conditioned
        mean = _window_sums(block, grid) / n
        out[lo : lo + _BLOCK_CHANNELS] = np.maximum(_window_sums(np.square(block, out=block), grid) / n - mean**2, 0.0)
    return out


def window_robust_amplitude(data: np.ndarray, grid: WindowGrid) -> np.ndarray:
    """Robust amplitude of every window: 1.4826 × the median absolute deviation (µV), shape (n_channels, n_windows).

    The medians are taken over every ``k``-th sample of the window, ``k`` keeping at most
    :data:`AMPLITUDE_RATE_HZ` samples per second (a subset of the samples, not a filtered signal: the
    amplitude distribution is the same; a 2-s window still gives 500 samples, a relative standard error
    of the MAD of about 5 % per window, averaged over the recording's windows). Four times cheaper at 1 kHz.

    Parameters
    ----------
    data : ndarray, shape (n_channels, n_times), µV
    grid : WindowGrid
    """
    step = max(1, int(grid.sfreq // AMPLITUDE_RATE_HZ))
    out = np.empty((data.shape[0], len(grid.starts)))
    for lo in range(0, data.shape[0], _BLOCK_CHANNELS):
        seg = np.asarray(grid.segments(data[lo : lo + _BLOCK_CHANNELS])[..., ::step], dtype=np.float64)
        centre = np.median(seg, axis=-1, keepdims=True)
        out[lo : lo + _BLOCK_CHANNELS] = ROBUST_SD_PER_MAD * np.median(np.abs(seg - centre), axis=-1)
    return out


def window_line_length(data: np.ndarray, grid: WindowGrid) -> np.ndarray:
    """Line length of every window as a rate: mean |x[n] − x[n−1]| × sfreq (µV/s), shape (n_channels, n_windows).

    Esteller et al. 2001 sum the absolute differences over the window; dividing by its duration
    makes windows of different lengths (and recordings at different rates, for the same signal)
    comparable.

    Parameters
    ----------
    data : ndarray, shape (n_channels, n_times), µV
    grid : WindowGrid
    """
    if grid.length < 2:
        return np.zeros((data.shape[0], len(grid.starts)))
    out = np.empty((data.shape[0], len(grid.starts)))
    for lo in range(0, data.shape[0], _BLOCK_CHANNELS):
        steps = np.abs(np.diff(data[lo : lo + _BLOCK_CHANNELS], axis=1))
        out[lo : lo + _BLOCK_CHANNELS] = _window_sums(steps, grid, grid.length - 1)
    return out / (grid.length - 1) * grid.sfreq


class VarianceScorer(BiomarkerScorer):
    """Floor: each channel's variance, averaged over windows."""

    info = ScorerInfo(
        name="variance",
        title="Channel variance",
        unit="µV²",
        reference="trivial floor",
        kind="floor",
        validation="a trivial floor: every ranking is read beside it",
    )

    def window_values(self, data: np.ndarray, grid: WindowGrid, recording: Recording) -> np.ndarray:
        return window_variance(data, grid)


class AmplitudeScorer(BiomarkerScorer):
    """Floor: each channel's robust amplitude (1.4826 × MAD), averaged over windows."""

    info = ScorerInfo(
        name="amplitude",
        title="Robust amplitude",
        unit="µV",
        reference="trivial floor (1.4826 × MAD)",
        kind="floor",
        validation="a trivial floor: every ranking is read beside it",
    )

    def window_values(self, data: np.ndarray, grid: WindowGrid, recording: Recording) -> np.ndarray:
        return window_robust_amplitude(data, grid)


class LineLengthScorer(BiomarkerScorer):
    """Line length (Esteller et al. 2001): a floor and a published SOZ marker."""

    info = ScorerInfo(
        name="line_length",
        title="Line length",
        unit="µV/s",
        reference="Esteller R, et al. Line length: an efficient feature for seizure onset detection. IEEE EMBS 2001",
        kind="floor",
        validation="a trivial floor and a published marker: every ranking is read beside it",
    )

    def window_values(self, data: np.ndarray, grid: WindowGrid, recording: Recording) -> np.ndarray:
        return window_line_length(data, grid)

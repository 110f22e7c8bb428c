"""Band power per window and the spectral SOZ ratios built on it.

One Hann-tapered periodogram per window (mean removed), vectorised over channels and windows and
computed in bounded blocks:

- :func:`band_power` — power in one band (µV²) per channel and window;
- :func:`band_powers` — several bands from the same periodograms;
- :func:`energy_ratio` — (E_β + E_γ) / (E_θ + E_α) of Bartolomei et al. 2008 (bands θ 3.5–7.4,
  α 7.4–12.4, β 12.4–24, γ 24–97 Hz, γ clipped below Nyquist);
- :func:`high_frequency_activity` — power 80–250 Hz relative to 1–250 Hz (both clipped below
  Nyquist).

Mains harmonics (50 or 60 Hz, both when unknown) are left out of every band's bins by default
(``exclude_mains``), so that line-noise pickup cannot make a ratio.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

import numpy as np
from scipy import fft as sp_fft
from scipy import signal

from sss_viewer._validate import check_positive_int
from sss_viewer.biomarkers._filtering import (
    BLOCK_SAMPLES,
    channel_blocks,
    check_band,
    check_line_freq,
    check_sfreq,
    check_signal,
    mains_frequencies,
)

logger = logging.getLogger(__name__)

THETA = (3.5, 7.4)
ALPHA = (7.4, 12.4)
BETA = (12.4, 24.0)
GAMMA = (24.0, 97.0)
"""Bands of the energy ratio (Hz), Bartolomei et al. 2008."""
HFA_BAND = (80.0, 250.0)
HFA_REFERENCE = (1.0, 250.0)
"""High-frequency activity band and the band it is relative to (Hz)."""
MAINS_HALF_WIDTH_HZ = 2.0
"""Bins within this distance (Hz) of a mains harmonic are left out of the bands."""
NYQUIST_FRACTION = 0.95
"""A band's top is clipped to this fraction of Nyquist."""


def check_windows(starts, length, n_times: int) -> tuple[np.ndarray, int]:
    """Validate window starts and length (samples) against the recording length.

    Parameters
    ----------
    starts : array_like of int, shape (n_windows,)
        First sample of each window.
    length : int
        Samples per window (≥ 2).
    n_times : int
        Samples in the recording.

    Returns
    -------
    starts : ndarray, shape (n_windows,), int64
    length : int

    Raises
    ------
    ValueError
        Non-integer or out-of-range starts, or a length below 2 or above ``n_times``.
    """
    if isinstance(length, (np.integer,)):
        length = int(length)
    check_positive_int("length", length)
    if length < 2 or length > n_times:
        raise ValueError(f"Invalid length={length}: expected 2 ≤ length ≤ n_times = {n_times} samples.")
    arr = np.asarray(starts)
    if arr.ndim != 1 or not (np.issubdtype(arr.dtype, np.integer) or (arr.size == 0)):
        raise ValueError(
            f"Invalid starts: expected a 1-D array of integer sample indices, got shape {arr.shape} dtype {arr.dtype}."
        )
    arr = arr.astype(np.int64)
    if arr.size and (arr.min() < 0 or arr.max() + length > n_times):
        raise ValueError(
            f"Invalid starts: every window [start, start + {length}) must lie within the {n_times} samples "
            f"(got starts from {arr.min()} to {arr.max()})."
        )
    return arr, length


def band_powers(
    data,
    sfreq: float,
    starts,
    length: int,
    bands: Sequence[tuple[float, float]],
    *,
    line_freq: float | None = None,
    exclude_mains: bool = True,
) -> np.ndarray:
    """Power in several bands per channel and window, from one Hann-tapered periodogram per window.

    Parameters
    ----------
    data : array_like, shape (n_channels, n_times)
        Samples in µV.
    sfreq : float
        Sampling rate (Hz).
    starts : array_like of int, shape (n_windows,)
        First sample of each window.
    length : int
        Samples per window.
    bands : sequence of (low_hz, high_hz)
        Bands ``[low, high)``; a top above 0.95 × Nyquist is clipped (logged).
    line_freq : {50, 60, None}
        Mains frequency; None (unknown) means both 50 and 60 Hz.
    exclude_mains : bool
        Leave the bins within ±2 Hz of mains harmonics out of every band.

    Returns
    -------
    power : ndarray, shape (n_bands, n_channels, n_windows), float64
        Band power in µV² (the one-sided PSD, µV²/Hz, summed over the band's bins × bin width).

    Raises
    ------
    ValueError
        Bad ``data``, ``sfreq``, ``starts``/``length``, a band, or ``line_freq``.
    """
    data = check_signal(data)
    sfreq = check_sfreq(sfreq)
    line_freq = check_line_freq(line_freq)
    starts, length = check_windows(starts, length, data.shape[1])
    bands = [check_band(b, sfreq, name="band", max_fraction=NYQUIST_FRACTION) for b in bands]

    freqs = sp_fft.rfftfreq(length, 1.0 / sfreq)
    keep = np.ones(len(freqs), dtype=bool)
    if exclude_mains:
        for f0 in mains_frequencies(line_freq, sfreq):
            keep &= np.abs(freqs - f0) > MAINS_HALF_WIDTH_HZ
    masks = np.stack([(freqs >= lo) & (freqs < hi) & keep for lo, hi in bands])
    for (lo, hi), mask in zip(bands, masks):
        if not mask.any():
            raise ValueError(
                f"Invalid band=({lo:g}, {hi:g}): no frequency bin of a {length}-sample window at {sfreq:g} Hz "
                f"(resolution {sfreq / length:g} Hz) falls in it; use longer windows."
            )

    taper = signal.windows.hann(length, sym=False)
    # one-sided PSD scaling (µV²/Hz) times the bin width → µV² per bin
    scale = np.full(len(freqs), 2.0 / (sfreq * np.sum(taper**2)) * (sfreq / length))
    scale[0] /= 2
    if length % 2 == 0:
        scale[-1] /= 2
    weights = (masks * scale).T  # (n_freqs, n_bands)

    n_channels = data.shape[0]
    n_windows = len(starts)
    out = np.zeros((len(bands), n_channels, n_windows))
    if n_windows == 0:
        return out
    offsets = np.arange(length)
    per_chunk = max(1, BLOCK_SAMPLES // (length * 4))
    for block in channel_blocks(n_channels, length, max_samples=BLOCK_SAMPLES // 4):
        x = data[block]
        n_ch = x.shape[0]
        win_chunk = max(1, per_chunk // n_ch)
        for lo in range(0, n_windows, win_chunk):
            idx = starts[lo : lo + win_chunk, None] + offsets
            seg = np.asarray(x[:, idx], dtype=np.float64)  # (n_ch, n_win, length)
            seg -= seg.mean(axis=-1, keepdims=True)
            seg *= taper
            spec = sp_fft.rfft(seg, axis=-1)
            pxx = spec.real**2 + spec.imag**2
            out[:, block, lo : lo + win_chunk] = np.moveaxis(pxx @ weights, -1, 0)
    return out


def band_power(
    data,
    sfreq: float,
    starts,
    length: int,
    band: tuple[float, float],
    *,
    line_freq: float | None = None,
    exclude_mains: bool = True,
) -> np.ndarray:
    """Power in one band per channel and window (Hann-tapered periodogram of each window).

    Parameters
    ----------
    data : array_like, shape (n_channels, n_times)
        Samples in µV.
    sfreq : float
        Sampling rate (Hz).
    starts : array_like of int, shape (n_windows,)
        First sample of each window (e.g. ``WindowGrid.starts``).
    length : int
        Samples per window.
    band : (low_hz, high_hz)
        Band ``[low, high)``; a top above 0.95 × Nyquist is clipped (logged).
    line_freq : {50, 60, None}
    exclude_mains : bool
        Leave bins within ±2 Hz of mains harmonics out (default).

    Returns
    -------
    power : ndarray, shape (n_channels, n_windows), float64
        µV².
    """
    return band_powers(data, sfreq, starts, length, [band], line_freq=line_freq, exclude_mains=exclude_mains)[0]


def energy_ratio(
    data, sfreq: float, starts, length: int, *, line_freq: float | None = None, exclude_mains: bool = True
) -> np.ndarray:
    """Energy ratio (E_β + E_γ) / (E_θ + E_α) per channel and window (Bartolomei et al. 2008).

    Parameters
    ----------
    data : array_like, shape (n_channels, n_times)
        Samples in µV.
    sfreq : float
        Sampling rate (Hz); γ (24–97 Hz) is clipped to 0.95 × Nyquist, and a rate with
        Nyquist below ≈ 26 Hz is refused.
    starts : array_like of int, shape (n_windows,)
        First sample of each window.
    length : int
        Samples per window (≥ 1 s recommended: θ needs bins between 3.5 and 7.4 Hz).
    line_freq : {50, 60, None}
    exclude_mains : bool

    Returns
    -------
    ratio : ndarray, shape (n_channels, n_windows), float64
        Dimensionless, finite: a window without θ + α power divides by the smallest positive float.
    """
    powers = band_powers(
        data, sfreq, starts, length, [THETA, ALPHA, BETA, GAMMA], line_freq=line_freq, exclude_mains=exclude_mains
    )
    return _ratio(powers[2] + powers[3], powers[0] + powers[1])


def high_frequency_activity(
    data, sfreq: float, starts, length: int, *, line_freq: float | None = None, exclude_mains: bool = True
) -> np.ndarray:
    """Power 80–250 Hz relative to 1–250 Hz per channel and window (both clipped below Nyquist).

    Parameters
    ----------
    data : array_like, shape (n_channels, n_times)
        Samples in µV.
    sfreq : float
        Sampling rate (Hz); needs 0.95 × Nyquist above 80 Hz (sfreq > ≈ 170 Hz).
    starts : array_like of int, shape (n_windows,)
        First sample of each window.
    length : int
        Samples per window.
    line_freq : {50, 60, None}
    exclude_mains : bool
        Leave mains harmonics (100, 150, 200 / 120, 180, 240 Hz …) out of both bands (default).

    Returns
    -------
    fraction : ndarray, shape (n_channels, n_windows), float64, in [0, 1]
    """
    powers = band_powers(
        data, sfreq, starts, length, [HFA_BAND, HFA_REFERENCE], line_freq=line_freq, exclude_mains=exclude_mains
    )
    return _ratio(powers[0], powers[1])


def _ratio(num: np.ndarray, den: np.ndarray) -> np.ndarray:
    tiny = np.finfo(np.float64).tiny
    return num / np.maximum(den, tiny)

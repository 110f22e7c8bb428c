"""Filters and helpers shared by the training-free SOZ detectors (HFOs, spikes, spectral markers).

Pure array functions, vectorised over channels (axis 0) and applied along time (the last axis):

- :func:`check_signal`, :func:`check_sfreq`, :func:`check_band` — input validation with messages
  that name the parameter and what was expected;
- :func:`channel_blocks` — channel blocks small enough that float64 copies of long recordings stay
  bounded in memory;
- :func:`mains_frequencies` / :func:`notch_sos` — the mains harmonics below Nyquist (50 or 60 Hz;
  both when unknown, the rule of :mod:`sss_viewer.preprocessing.filters`) as a notch cascade;
- :func:`bandpass_sos`, :func:`highpass_sos`, :func:`filtfilt` — zero-phase Butterworth filtering
  of a 2-D block as second-order sections;
- :func:`count_events_per_window` — events per channel and window, for event rates.

Internal to the stage: not part of the public API (:mod:`sss_viewer.biomarkers`'s ``__all__``, ``docs/api.md``).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

import numpy as np
from scipy import signal

from sss_viewer._validate import check_positive_int, check_range
from sss_viewer.preprocessing.filters import _notch_frequencies

logger = logging.getLogger(__name__)

BLOCK_CHANNELS = 16
"""Most channels filtered at a time."""
BLOCK_SAMPLES = 1 << 23
"""Most samples (channels × times) in one block: ≈ 67 MB per float64 copy."""
NOTCH_QUALITY = 30.0
"""Quality factor of each mains notch (−3 dB width = f0 / Q: 1.7 Hz at 50 Hz, 6.7 Hz at 200 Hz)."""
PAD_S = 1.0
"""Padding (s) at each end before zero-phase filtering: longer than the notches' ringing
(time constant Q / (π f0) ≈ 0.2 s at 50 Hz), which then dies out inside the padding."""


# -- validation ----------------------------------------------------------------------------------


def check_signal(data, name: str = "data") -> np.ndarray:
    """Return ``data`` as a 2-D floating array, or raise a ValueError naming ``name``.

    Parameters
    ----------
    data : array_like, shape (n_channels, n_times)
        Samples in µV.
    name : str
        Parameter name for the messages.

    Returns
    -------
    data : ndarray, shape (n_channels, n_times), float32 or float64
        A view when the input already is a floating ndarray.

    Raises
    ------
    ValueError
        Not 2-D, empty, not real numbers, or with NaN/inf samples.
    """
    arr = np.asarray(data)
    if arr.ndim != 2:
        raise ValueError(f"Invalid {name}: expected a 2-D array (n_channels, n_times), got shape {arr.shape}.")
    if arr.shape[0] < 1 or arr.shape[1] < 2:
        raise ValueError(f"Invalid {name}: expected at least 1 channel and 2 samples, got shape {arr.shape}.")
    if not (np.issubdtype(arr.dtype, np.floating) or np.issubdtype(arr.dtype, np.integer)):
        raise ValueError(f"Invalid {name}: expected real numbers, got dtype {arr.dtype}.")
    if not np.issubdtype(arr.dtype, np.floating):
        arr = arr.astype(np.float64)
    bad = ~np.isfinite(arr)
    if bad.any():
        channels = np.flatnonzero(bad.any(axis=1))
        raise ValueError(
            f"Invalid {name}: expected finite samples, got {int(bad.sum())} NaN/inf samples in channel(s) "
            f"{channels[:10].tolist()}{' …' if len(channels) > 10 else ''}."
        )
    return arr


def check_sfreq(sfreq) -> float:
    """Return ``sfreq`` as a float if it is a positive finite rate, else raise a ValueError naming it.

    Parameters
    ----------
    sfreq : float
        Sampling rate (Hz).

    Returns
    -------
    float
    """
    number = not isinstance(sfreq, bool) and isinstance(sfreq, (int, float, np.integer, np.floating))
    if not (number and np.isfinite(sfreq) and sfreq > 0):
        raise ValueError(f"Invalid sfreq={sfreq!r}: expected a positive sampling rate in Hz.")
    return float(sfreq)


def check_line_freq(line_freq) -> float | None:
    """Return the mains frequency, else raise a ValueError naming ``line_freq``.

    Parameters
    ----------
    line_freq : {50, 60, None}
        Mains frequency (Hz); None when unknown (both 50 and 60 Hz are then treated as mains).

    Returns
    -------
    float or None
    """
    if line_freq is None:
        return None
    number = not isinstance(line_freq, bool) and isinstance(line_freq, (int, float, np.integer, np.floating))
    if not (number and float(line_freq) in (50.0, 60.0)):
        raise ValueError(f"Invalid line_freq={line_freq!r}: expected 50, 60 or None (unknown: notch both).")
    return float(line_freq)


def check_band(
    band, sfreq: float, *, name: str = "band", max_fraction: float = 0.9, clip: bool = True
) -> tuple[float, float]:
    """Validate a frequency band against the sampling rate, clipping its top below Nyquist.

    Parameters
    ----------
    band : tuple of float
        ``(low_hz, high_hz)`` with ``0 < low_hz < high_hz``.
    sfreq : float
        Sampling rate (Hz).
    name : str
        Parameter name for the messages.
    max_fraction : float
        The band's top must lie below ``max_fraction × sfreq / 2``.
    clip : bool
        Clip a top above that limit to it (logged) when the band keeps some width; False refuses.

    Returns
    -------
    low_hz, high_hz : float

    Raises
    ------
    ValueError
        Not two increasing positive numbers, or (after clipping) no band left below the limit.
    """
    try:
        low, high = (float(b) for b in band)
    except (TypeError, ValueError):
        raise ValueError(f"Invalid {name}={band!r}: expected (low_hz, high_hz).") from None
    if not (np.isfinite(low) and np.isfinite(high) and 0 < low < high):
        raise ValueError(f"Invalid {name}={band!r}: expected 0 < low_hz < high_hz.")
    limit = max_fraction * sfreq / 2
    if high > limit:
        if not clip or low >= limit:
            raise ValueError(
                f"Invalid {name}={band!r} for sfreq={sfreq:g} Hz: the band must lie below "
                f"{max_fraction:g} × Nyquist = {limit:g} Hz (record at ≥ {high / max_fraction * 2:g} Hz for this band)."
            )
        logger.warning(
            "%s (%g, %g) Hz clipped to (%g, %g) Hz: sfreq=%g Hz allows up to %g × Nyquist",
            name,
            low,
            high,
            low,
            limit,
            sfreq,
            max_fraction,
        )
        high = limit
    return low, high


# -- blocks --------------------------------------------------------------------------------------


def channel_blocks(
    n_channels: int, n_times: int, *, max_channels: int = BLOCK_CHANNELS, max_samples: int = BLOCK_SAMPLES
):
    """Consecutive channel slices to process together, each at most ``max_channels`` and ``max_samples`` large.

    Parameters
    ----------
    n_channels, n_times : int
    max_channels : int
    max_samples : int
        Bound on channels × n_times per block (one channel at least).

    Returns
    -------
    list of slice
    """
    check_positive_int("max_channels", max_channels)
    per_block = max(1, min(max_channels, max_samples // max(n_times, 1)))
    return [slice(lo, min(lo + per_block, n_channels)) for lo in range(0, n_channels, per_block)]


# -- filter design -------------------------------------------------------------------------------


def mains_frequencies(
    line_freq: float | None, sfreq: float, *, low: float = 0.0, high: float | None = None
) -> list[float]:
    """The mains frequency and its harmonics below Nyquist, optionally within ``[low, high]`` Hz.

    The rule of :mod:`sss_viewer.preprocessing.filters`: multiples of ``line_freq`` (both 50 and 60
    Hz when it is None) below 0.98 × Nyquist.

    Parameters
    ----------
    line_freq : {50, 60, None}
    sfreq : float
        Sampling rate (Hz).
    low, high : float
        Keep only harmonics in this range (Hz); ``high=None`` means Nyquist.

    Returns
    -------
    list of float
        Sorted frequencies (Hz).
    """
    line_freq = check_line_freq(line_freq)
    freqs = _notch_frequencies(line_freq, sfreq / 2)
    high = np.inf if high is None else high
    return [f for f in freqs if low <= f <= high]


def notch_sos(freqs: Sequence[float], sfreq: float, *, quality: float = NOTCH_QUALITY) -> np.ndarray:
    """IIR notches (``scipy.signal.iirnotch``) at ``freqs`` as one SOS cascade.

    Parameters
    ----------
    freqs : sequence of float
        Notch centres (Hz), each below Nyquist.
    sfreq : float
    quality : float
        Quality factor (centre / −3 dB width).

    Returns
    -------
    sos : ndarray, shape (len(freqs), 6)
    """
    sections = [signal.tf2sos(*signal.iirnotch(f, quality, fs=sfreq)) for f in freqs]
    return np.vstack(sections) if sections else np.zeros((0, 6))


def bandpass_sos(band: tuple[float, float], sfreq: float, *, order: int = 4) -> np.ndarray:
    """Butterworth band-pass as second-order sections.

    Parameters
    ----------
    band : (low_hz, high_hz)
        Validated band (see :func:`check_band`).
    sfreq : float
    order : int
        Order of the prototype (the band-pass has ``order`` sections; zero-phase doubles it).

    Returns
    -------
    sos : ndarray, shape (order, 6)
    """
    return signal.butter(order, band, btype="bandpass", fs=sfreq, output="sos")


def highpass_sos(cutoff_hz: float, sfreq: float, *, order: int = 4) -> np.ndarray:
    """Butterworth high-pass as second-order sections.

    Parameters
    ----------
    cutoff_hz : float
        −3 dB frequency (Hz), between 0 and Nyquist.
    sfreq : float
    order : int

    Returns
    -------
    sos : ndarray, shape (ceil(order / 2), 6)
    """
    check_range("cutoff_hz", cutoff_hz, 0, sfreq / 2, low_inclusive=False, high_inclusive=False)
    return signal.butter(order, cutoff_hz, btype="highpass", fs=sfreq, output="sos")


def mains_period_samples(
    line_freq: float | None, sfreq: float, *, max_samples: int | None = None, tolerance: float = 0.02
) -> int | None:
    """The shortest whole number of samples that is (within ``tolerance`` samples) a whole number of mains periods.

    Every harmonic of the mains repeats after it, so copying the data that many samples away
    continues stationary line noise in phase (see :func:`filtfilt`).

    Parameters
    ----------
    line_freq : {50, 60, None}
        None: the common period of 50 and 60 Hz (0.1 s).
    sfreq : float
    max_samples : int, optional
        Longest acceptable result.
    tolerance : float
        Largest distance (samples) from an exact multiple of the period.

    Returns
    -------
    int or None
        None when no multiple up to ``max_samples`` (or 100 periods) is close enough.
    """
    base = check_line_freq(line_freq) or 10.0
    per = sfreq / base
    for k in range(1, 101):
        q = round(k * per)
        if max_samples is not None and q > max_samples:
            return None
        if q >= 1 and abs(k * per - q) <= tolerance:
            return q
    return None


def filtfilt(
    sos: np.ndarray, x: np.ndarray, sfreq: float, *, pad_s: float = PAD_S, period: int | None = None
) -> np.ndarray:
    """Zero-phase filtering of a block along its last axis (``scipy.signal.sosfiltfilt``), float64.

    Parameters
    ----------
    sos : ndarray, shape (n_sections, 6)
        An empty cascade returns a float64 copy.
    x : ndarray, shape (n_channels, n_times)
    sfreq : float
    pad_s : float
        Padding at each end (s), at most the recording's length.
    period : int, optional
        A whole number of mains periods in samples (:func:`mains_period_samples`). When given and
        the block is at least two of them long, each end is padded with a copy of the data a whole
        number of periods inside (shifted in level to meet the end) instead of an odd extension:
        stationary line noise then continues in phase across the ends and the notches do not ring
        into the first and last samples (an odd extension flips the phase of a sinusoid at the
        junction, and a Q = 30 notch at 100 Hz rings for ≈ 0.5 s after that).

    Returns
    -------
    y : ndarray, shape (n_channels, n_times), float64
    """
    x = np.asarray(x, dtype=np.float64)
    if len(sos) == 0:
        return x.copy()
    n = x.shape[-1]
    pad = round(pad_s * sfreq)
    if period is not None and period >= 1 and n >= 2 * period and pad > 0:
        pad = min(pad, ((n - period) // period) * period)
        shift = int(np.ceil(pad / period)) * period
        # the copies are shifted in level to meet the ends (means over one period: the mains cancel),
        # so that a slow drift does not make a step at the junctions
        left_level = x[:, :period].mean(axis=1, keepdims=True) - x[:, shift : shift + period].mean(
            axis=1, keepdims=True
        )
        right_level = x[:, n - period :].mean(axis=1, keepdims=True) - x[:, n - shift - period : n - shift].mean(
            axis=1, keepdims=True
        )
        left = x[:, shift - pad : shift] + left_level
        right = x[:, n - shift : n - shift + pad] + right_level
        padded = np.concatenate([left, x, right], axis=1)
        return signal.sosfiltfilt(sos, padded, axis=-1, padlen=0)[:, pad : pad + n]
    default = 3 * (2 * len(sos) + 1)
    padlen = min(n - 1, max(default, pad))
    return signal.sosfiltfilt(sos, x, axis=-1, padlen=padlen)


# -- event counts --------------------------------------------------------------------------------


def count_events_per_window(events: Sequence[np.ndarray], starts_s, length_s: float) -> np.ndarray:
    """Number of events starting in each window of each channel.

    Parameters
    ----------
    events : sequence of ndarray, length n_channels
        Per channel, event times in seconds: shape (n_events,) (e.g. spike peaks) or
        (n_events, 2) ``[start_s, end_s]`` rows (e.g. HFOs; the start counts).
    starts_s : array_like, shape (n_windows,)
        Window starts (s).
    length_s : float
        Window length (s); a window holds the events with ``start ≤ t < start + length``.

    Returns
    -------
    counts : ndarray, shape (n_channels, n_windows), int64
        Divide by ``length_s`` for a rate in events/s.
    """
    starts = np.asarray(starts_s, dtype=np.float64).reshape(-1)
    check_range("length_s", float(length_s), 0, None, low_inclusive=False)
    if not np.all(np.isfinite(starts)):
        raise ValueError("Invalid starts_s: expected finite window starts in seconds.")
    counts = np.zeros((len(events), len(starts)), dtype=np.int64)
    for ch, ev in enumerate(events):
        times = np.asarray(ev, dtype=np.float64)
        if times.ndim == 2:
            times = times[:, 0]
        elif times.ndim != 1:
            raise ValueError(f"Invalid events[{ch}]: expected shape (n_events,) or (n_events, 2), got {times.shape}.")
        times = np.sort(times)
        counts[ch] = np.searchsorted(times, starts + length_s, side="left") - np.searchsorted(
            times, starts, side="left"
        )
    return counts


# -- runs of a boolean mask ----------------------------------------------------------------------


def runs(mask: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Runs of True along the last axis of a 2-D mask, vectorised over rows.

    Parameters
    ----------
    mask : ndarray, shape (n_channels, n_times), bool

    Returns
    -------
    channel, start, stop : ndarray, shape (n_runs,), int64
        Row of each run and its samples ``[start, stop)``, ordered by channel then start.
    """
    mask = np.asarray(mask, dtype=bool)
    padded = np.zeros((mask.shape[0], mask.shape[1] + 2), dtype=np.int8)
    padded[:, 1:-1] = mask
    edges = np.diff(padded, axis=1)
    ch_on, on = np.nonzero(edges == 1)
    _, off = np.nonzero(edges == -1)
    return ch_on.astype(np.int64), on.astype(np.int64), off.astype(np.int64)

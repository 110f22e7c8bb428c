"""Interictal epileptiform discharges (spikes) by envelope distribution modelling (Janča et al. 2015).

Janča R, Ježdík P, Čmejla R, Tomášek M, Worrell GA, Stead M, Wagenaar J, Jefferys JGR, Kršek P,
Komárek V, Jiruška P, Marusič P. Detection of interictal epileptiform discharges using signal
envelope distribution modelling: application to epileptic and non-epileptic intracranial
recordings. Brain Topography 2015; 28:172–183.

Per channel (vectorised over a block of channels):

1. resample to 200 Hz (the published implementation's working rate), notch the mains frequency,
   band-pass 10–60 Hz (Chebyshev II, zero-phase, with the published implementation's pass/stop
   edges and ripple);
2. envelope: magnitude of the analytic signal (Hilbert);
3. the envelope's distribution is modelled as log-normal in sliding segments (5 s every 1 s, i.e.
   4 s overlap): maximum-likelihood μ, σ of log(envelope) per segment, smoothed over ≈ 5 segments,
   then interpolated over time by a cubic spline between segment centres (constant beyond);
4. threshold k·(mode + median) of the log-normal, ``k = 3.65``: mode = exp(μ − σ²), median = exp(μ);
5. spikes are the local envelope maxima above the threshold; maxima less than 120 ms apart form a
   polyspike train in which only the peaks of the sequence of maxima are kept, and detections
   closer than ≈ 120 ms are then merged into their largest (the published "polyspike union");
6. detections within ``edge_s`` of either end are dropped (filter and Hilbert edge effects). The
   published implementation drops 1 s; here the filters are padded with the data itself (see
   :func:`~sss_viewer.biomarkers._filtering.filtfilt`) and 0.25 s is enough (no detection at the
   ends of noise with strong drifts, slow waves or mains in the tests), which leaves most of a
   3-s clip around a seizure onset. Pass ``edge_s=1.0`` to reproduce the published output.

The detector's second ("ambiguous", k2 < k1) class needs a simultaneous obvious detection on
another channel; it is not implemented here (``k2 = k1`` in the published defaults).
A recording shorter than one 5-s segment is modelled as one segment.
"""

from __future__ import annotations

import logging
from fractions import Fraction

import numpy as np
from scipy import fft as sp_fft
from scipy import signal
from scipy.interpolate import CubicSpline

from sss_viewer._validate import check_range
from sss_viewer.biomarkers._filtering import (
    channel_blocks,
    check_band,
    check_line_freq,
    check_sfreq,
    check_signal,
    filtfilt,
    mains_frequencies,
    mains_period_samples,
    notch_sos,
)

logger = logging.getLogger(__name__)

SPIKE_BAND = (10.0, 60.0)
"""Band of the envelope (Hz)."""
WORK_SFREQ = 200.0
"""Rate the detector works at (Hz), as in the published implementation."""


def detect_spikes(
    data,
    sfreq: float,
    *,
    line_freq: float | None = None,
    k: float = 3.65,
    band: tuple[float, float] = SPIKE_BAND,
    segment_s: float = 5.0,
    segment_step_s: float = 1.0,
    polyspike_union_s: float = 0.12,
    edge_s: float = 0.25,
) -> list[np.ndarray]:
    """Detect interictal spikes per channel (Janča et al. 2015).

    Parameters
    ----------
    data : array_like, shape (n_channels, n_times)
        Samples in µV (float32 or float64), finite.
    sfreq : float
        Sampling rate (Hz). Resampled to 200 Hz (kept as is below 200 Hz).
    line_freq : {50, 60, None}
        Mains frequency, notched below 1.1 × the band's top; None (unknown) notches 50 and 60 Hz.
    k : float
        Threshold factor on mode + median of the envelope's log-normal model (3.65 in the paper).
    band : (low_hz, high_hz)
        Envelope band, 10–60 Hz; clipped to 0.9 × Nyquist of the working rate.
    segment_s : float
        Length of the segments the distribution is fitted on (s), 5 s.
    segment_step_s : float
        Step between segments (s), 1 s (4 s overlap).
    polyspike_union_s : float
        Maxima closer than this (s) are one polyspike train, 0.12 s.
    edge_s : float
        Detections within this (s) of either end are dropped, 0.25 s (1 s in the published
        implementation); 0 keeps all, including filter transients at the ends.

    Returns
    -------
    spikes : list of ndarray, length n_channels
        Per channel, shape (n_spikes,), float64: times of the envelope peaks in seconds from the
        first sample (at the 200-Hz working rate: 5-ms resolution), ascending.

    Raises
    ------
    ValueError
        Bad ``data`` (not 2-D, NaN/inf), ``sfreq``, ``line_freq``, ``band`` or a detector parameter.
    """
    data = check_signal(data)
    sfreq = check_sfreq(sfreq)
    line_freq = check_line_freq(line_freq)
    check_range("k", k, 0, None, low_inclusive=False)
    for name, value in (
        ("segment_s", segment_s),
        ("segment_step_s", segment_step_s),
        ("polyspike_union_s", polyspike_union_s),
    ):
        check_range(name, value, 0, None, low_inclusive=False)
    check_range("edge_s", edge_s, 0, None)

    if sfreq >= WORK_SFREQ:
        ratio = Fraction(WORK_SFREQ / sfreq).limit_denominator(1000)
        up, down = ratio.numerator, ratio.denominator
        fs = sfreq * up / down
    else:
        up = down = 1
        fs = sfreq
        logger.info("spikes: sfreq=%g Hz is below %g Hz; working at the native rate", sfreq, WORK_SFREQ)
    low, high = check_band(band, fs, name="band")
    notches = mains_frequencies(line_freq, fs, high=1.1 * high)
    sos = np.vstack([notch_sos(notches, fs), _band_sos(low, high, fs)])
    period = mains_period_samples(line_freq, fs) if notches else None

    n_channels, n_times = data.shape
    out: list[np.ndarray] = []
    for block in channel_blocks(n_channels, n_times):
        out.extend(
            _detect_block(
                data[block], sfreq, fs, up, down, sos, period, k, segment_s, segment_step_s, polyspike_union_s, edge_s
            )
        )
    return out


def _band_sos(low: float, high: float, fs: float) -> np.ndarray:
    """Chebyshev II high-pass and low-pass with the published edges: pass 10/60 Hz, stop 5/70 Hz at 200 Hz, Rp 6 dB, Rs 60 dB."""
    nyq = fs / 2
    stop_low = max(low - 0.025 * fs, 0.1 * low)
    n_hp, wn_hp = signal.cheb2ord(low, stop_low, 6, 60, fs=fs)
    sections = [signal.cheby2(n_hp, 60, wn_hp, btype="highpass", fs=fs, output="sos")]
    stop_high = min(high + 0.05 * fs, 0.99 * nyq)
    if stop_high > high:
        n_lp, wn_lp = signal.cheb2ord(high, stop_high, 6, 60, fs=fs)
        sections.append(signal.cheby2(n_lp, 60, wn_lp, btype="lowpass", fs=fs, output="sos"))
    return np.vstack(sections)


def _detect_block(x, sfreq, fs, up, down, sos, period, k, segment_s, step_s, union_s, edge_s) -> list[np.ndarray]:
    n_channels = x.shape[0]
    flat = np.ptp(x, axis=1) == 0
    y = np.asarray(x, dtype=np.float64)
    if up != down:
        y = signal.resample_poly(y, up, down, axis=-1)
    n = y.shape[1]
    if n < 3:
        logger.info("spikes: %d samples at %g Hz are too few to detect anything", n, fs)
        return [np.zeros(0) for _ in range(n_channels)]
    y = filtfilt(sos, y, fs, period=period)

    n_fft = sp_fft.next_fast_len(n)
    envelope = np.abs(signal.hilbert(y, N=n_fft, axis=-1)[:, :n])
    del y
    scale = envelope.max(axis=1, keepdims=True)
    np.maximum(envelope, np.where(scale > 0, scale, 1.0) * 1e-12, out=envelope)
    threshold = _lognormal_threshold(np.log(envelope), fs, k, segment_s, step_s)

    peaks = _spike_peaks(envelope, threshold, union_s * fs)
    edge = round(edge_s * fs)
    out = []
    for ch in range(n_channels):
        idx = peaks[ch]
        idx = idx[(idx >= edge) & (idx < n - edge)]
        out.append(np.zeros(0) if flat[ch] else idx / fs)
    return out


def _lognormal_threshold(log_env: np.ndarray, fs: float, k: float, segment_s: float, step_s: float) -> np.ndarray:
    """k·(mode + median) of the log-normal fitted in sliding segments, per sample, shape like ``log_env``."""
    n_channels, n = log_env.shape
    win = round(segment_s * fs)
    step = max(1, round(step_s * fs))
    win = min(n, win)
    starts = np.arange(0, n - win + 1, step)
    centred = log_env - log_env.mean(axis=1, keepdims=True)
    csum = np.zeros((n_channels, n + 1))
    np.cumsum(centred, axis=1, out=csum[:, 1:])
    csq = np.zeros((n_channels, n + 1))
    np.cumsum(centred * centred, axis=1, out=csq[:, 1:])
    mean = (csum[:, starts + win] - csum[:, starts]) / win
    var = np.maximum((csq[:, starts + win] - csq[:, starts]) / win - mean**2, 0.0)
    mu = mean + log_env.mean(axis=1, keepdims=True)
    sigma = np.sqrt(var)

    # smooth the segment estimates over ≈ segment_s of segments (moving average, forward-backward)
    n_seg = len(starts)
    length = round(segment_s * n_seg / (n / fs))
    if length > 1 and n_seg > 1:
        kernel = np.ones(length) / length
        padlen = min(3 * length, n_seg - 1)
        mu = signal.filtfilt(kernel, [1.0], mu, axis=1, padlen=padlen)
        sigma = signal.filtfilt(kernel, [1.0], sigma, axis=1, padlen=padlen)

    centres = starts + win // 2
    if n_seg == 1:
        mu_t = np.repeat(mu, n, axis=1)
        sigma_t = np.repeat(sigma, n, axis=1)
    else:
        t = np.clip(np.arange(n), centres[0], centres[-1])
        spline = CubicSpline(centres, np.concatenate([mu, sigma]), axis=1)
        both = spline(t)
        mu_t, sigma_t = both[:n_channels], both[n_channels:]
    return k * (np.exp(mu_t - sigma_t**2) + np.exp(mu_t))


def _spike_peaks(envelope: np.ndarray, threshold: np.ndarray, union: float) -> list[np.ndarray]:
    """Sample indices of the spikes per channel: supra-threshold maxima after the polyspike union."""
    n_channels, n = envelope.shape
    e = envelope
    is_max = np.zeros((n_channels, n), dtype=bool)
    is_max[:, 1:-1] = (e[:, 1:-1] > e[:, :-2]) & (e[:, 1:-1] >= e[:, 2:])
    is_max[:, 0] = e[:, 0] >= e[:, 1]
    is_max[:, -1] = e[:, -1] > e[:, -2]
    ch, idx = np.nonzero(is_max & (e > threshold))
    if len(ch) == 0:
        return [np.zeros(0, dtype=np.int64) for _ in range(n_channels)]
    vals = e[ch, idx]

    # polyspike trains: successive maxima ≤ ceil(union) samples apart; keep the peaks of each train's maxima
    gap_max = int(np.ceil(union - 1e-9))
    same = (ch[1:] == ch[:-1]) & (idx[1:] - idx[:-1] <= gap_max)
    prev_ok = np.ones(len(idx), dtype=bool)
    next_ok = np.ones(len(idx), dtype=bool)
    prev_ok[1:] = ~same | (vals[1:] >= vals[:-1])
    next_ok[:-1] = ~same | (vals[1:] < vals[:-1])
    keep = prev_ok & next_ok
    ch, idx, vals = ch[keep], idx[keep], vals[keep]

    # union of detections closer than the (odd) union length: the largest of each group
    span = gap_max if gap_max % 2 else gap_max + 1
    new = np.ones(len(idx), dtype=bool)
    new[1:] = (ch[1:] != ch[:-1]) | (idx[1:] - idx[:-1] > span)
    group = np.cumsum(new) - 1
    order = np.lexsort((-vals, group))
    first_of_group = order[np.r_[True, group[order][1:] != group[order][:-1]]]
    ch, idx = ch[first_of_group], idx[first_of_group]
    bounds = np.searchsorted(ch, np.arange(n_channels + 1))
    return [idx[bounds[i] : bounds[i + 1]].astype(np.int64) for i in range(n_channels)]

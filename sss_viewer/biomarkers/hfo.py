"""High-frequency oscillations (HFOs) by the RMS detector of Staba et al. 2002.

Staba RJ, Wilson CL, Bragin A, Fried I, Engel J Jr. Quantitative analysis of high-frequency
oscillations (80–500 Hz) recorded in human epileptic hippocampus and entorhinal cortex.
J Neurophysiol 2002; 88:1743–1752.

Per channel (vectorised over a block of channels):

1. notch the mains harmonics near the band (otherwise 100/150/200 Hz fire as ripples), then
   band-pass (zero-phase Butterworth): ripples 80–250 Hz, fast ripples 250–500 Hz;
2. RMS of the band-passed signal in a sliding 3-ms window (one value per sample);
3. threshold: mean + 5 SD of the channel's RMS; runs above it lasting ≥ 6 ms are candidate events;
4. candidates less than 10 ms apart are merged into one event;
5. an event is kept when the rectified band-passed signal has ≥ 6 peaks above
   mean + 3 SD of the channel's rectified band-passed signal within it;
6. events within 0.1 s of either end are dropped, and the thresholds' mean and SD leave those
   samples out (filter ringing at the edges; not in the paper).

Zero-phase filtering pads each end with the data a whole number of mains periods inside
(:func:`~sss_viewer.biomarkers._filtering.filtfilt`), so that stationary line noise is notched
up to the ends instead of ringing there.

The thresholds are relative to the whole channel (as in the paper), so a recording's length and
its other events shift them; rates are comparable within a recording.
"""

from __future__ import annotations

import logging

import numpy as np
from scipy import ndimage

from sss_viewer._validate import check_positive_int, check_range
from sss_viewer.biomarkers._filtering import (
    bandpass_sos,
    channel_blocks,
    check_band,
    check_line_freq,
    check_sfreq,
    check_signal,
    filtfilt,
    mains_frequencies,
    mains_period_samples,
    notch_sos,
    runs,
)

logger = logging.getLogger(__name__)

RIPPLE_BAND = (80.0, 250.0)
"""Ripples (Hz)."""
FAST_RIPPLE_BAND = (250.0, 500.0)
"""Fast ripples (Hz); needs a sampling rate above ≈ 1.1 kHz, clipped to 0.9 × Nyquist below."""


def detect_hfos(
    data,
    sfreq: float,
    band: tuple[float, float] = RIPPLE_BAND,
    *,
    line_freq: float | None = None,
    rms_window_s: float = 0.003,
    rms_threshold_sd: float = 5.0,
    min_duration_s: float = 0.006,
    min_gap_s: float = 0.010,
    peak_threshold_sd: float = 3.0,
    min_peaks: int = 6,
    filter_order: int = 4,
    clip_band: bool = True,
    edge_s: float = 0.1,
) -> list[np.ndarray]:
    """Detect HFOs per channel with the RMS detector of Staba et al. 2002.

    Parameters
    ----------
    data : array_like, shape (n_channels, n_times)
        Samples in µV (float32 or float64), finite.
    sfreq : float
        Sampling rate (Hz).
    band : (low_hz, high_hz)
        :data:`RIPPLE_BAND` (default) or :data:`FAST_RIPPLE_BAND`, or another band. A top above
        0.9 × Nyquist is clipped to it (logged) when ``clip_band``, else refused.
    line_freq : {50, 60, None}
        Mains frequency; its harmonics within the band are notched before band-passing. None
        (unknown) notches both the 50- and the 60-Hz harmonics.
    rms_window_s : float
        Sliding RMS window (s), 3 ms in the paper.
    rms_threshold_sd : float
        RMS threshold in SDs above the channel's mean RMS (5).
    min_duration_s : float
        Shortest run above the RMS threshold kept as a candidate (s), 6 ms.
    min_gap_s : float
        Candidates separated by less than this (s) are merged, 10 ms.
    peak_threshold_sd : float
        Peak threshold on the rectified band-passed signal, SDs above its mean (3).
    min_peaks : int
        Fewest peaks above that threshold for an event to be kept (6).
    filter_order : int
        Butterworth prototype order of the band-pass.
    clip_band : bool
        Clip a band above 0.9 × Nyquist instead of refusing it.
    edge_s : float
        Events starting within this (s) of the first sample or ending within it of the last are
        dropped: the zero-phase filters ring there on strong slow activity (e.g. mains at 50 Hz).
        0 keeps all.

    Returns
    -------
    events : list of ndarray, length n_channels
        Per channel, shape (n_events, 2), float64: ``[start_s, end_s]`` of each HFO in seconds
        from the first sample, ordered by start.

    Raises
    ------
    ValueError
        Bad ``data`` (not 2-D, NaN/inf), ``sfreq`` (not a positive rate), ``band`` (not increasing
        positive, or nothing below 0.9 × Nyquist), ``line_freq`` or a detector parameter.
    """
    data = check_signal(data)
    sfreq = check_sfreq(sfreq)
    line_freq = check_line_freq(line_freq)
    low, high = check_band(band, sfreq, clip=clip_band)
    for name, value in (
        ("rms_window_s", rms_window_s),
        ("min_gap_s", min_gap_s),
        ("rms_threshold_sd", rms_threshold_sd),
        ("peak_threshold_sd", peak_threshold_sd),
    ):
        check_range(name, value, 0, None, low_inclusive=False)
    check_range("min_duration_s", min_duration_s, 0, None)
    check_range("edge_s", edge_s, 0, None)
    check_positive_int("min_peaks", min_peaks)
    check_positive_int("filter_order", filter_order)

    rms_width = max(1, round(rms_window_s * sfreq))
    edge = round(edge_s * sfreq)
    min_len = int(np.ceil(min_duration_s * sfreq - 1e-9))
    min_gap = int(np.ceil(min_gap_s * sfreq - 1e-9))
    notches = mains_frequencies(line_freq, sfreq, low=low / 1.5, high=min(1.5 * high, 0.98 * sfreq / 2))
    sos = np.vstack([notch_sos(notches, sfreq), bandpass_sos((low, high), sfreq, order=filter_order)])
    period = mains_period_samples(line_freq, sfreq) if notches else None
    logger.debug("HFO %g-%g Hz at %g Hz: notches %s, padding period %s samples", low, high, sfreq, notches, period)

    n_channels, n_times = data.shape
    out: list[np.ndarray] = []
    for block in channel_blocks(n_channels, n_times):
        out.extend(
            _detect_block(
                data[block],
                sfreq,
                sos,
                period,
                rms_width,
                rms_threshold_sd,
                min_len,
                min_gap,
                peak_threshold_sd,
                min_peaks,
                edge,
            )
        )
    return out


def _detect_block(
    x, sfreq, sos, period, rms_width, rms_sd, min_len, min_gap, peak_sd, min_peaks, edge
) -> list[np.ndarray]:
    n_channels, n_times = x.shape
    filtered = filtfilt(sos, x, sfreq, period=period)
    # thresholds from the samples away from the ends (where the filters may ring), when there are enough
    inner = slice(edge, n_times - edge) if n_times > 4 * edge else slice(0, n_times)

    # RMS in a centred sliding window, one value per sample
    rms = ndimage.uniform_filter1d(filtered * filtered, size=rms_width, axis=-1, mode="reflect")
    np.sqrt(np.maximum(rms, 0.0, out=rms), out=rms)
    threshold = rms[:, inner].mean(axis=1, keepdims=True) + rms_sd * rms[:, inner].std(axis=1, keepdims=True)
    ch, start, stop = runs(rms > threshold)
    del rms

    # candidates: long enough, then merged across short gaps
    keep = (stop - start) >= min_len
    ch, start, stop = ch[keep], start[keep], stop[keep]
    if len(ch):
        new = np.ones(len(ch), dtype=bool)
        new[1:] = (ch[1:] != ch[:-1]) | (start[1:] - stop[:-1] >= min_gap)
        first = np.flatnonzero(new)
        ch, start, stop = ch[first], start[first], np.maximum.reduceat(stop, first)

    # peaks of the rectified band-passed signal above mean + peak_sd SD, counted per event
    np.abs(filtered, out=filtered)
    peak_threshold = filtered[:, inner].mean(axis=1, keepdims=True) + peak_sd * filtered[:, inner].std(
        axis=1, keepdims=True
    )
    peaks = np.zeros((n_channels, n_times + 1), dtype=np.int32)
    is_peak = (
        (filtered[:, 1:-1] > filtered[:, :-2])
        & (filtered[:, 1:-1] >= filtered[:, 2:])
        & (filtered[:, 1:-1] > peak_threshold)
    )
    np.cumsum(is_peak, axis=1, out=peaks[:, 2:-1])
    peaks[:, -1] = peaks[:, -2]
    n_peaks = peaks[ch, stop] - peaks[ch, start]
    keep = (n_peaks >= min_peaks) & (start >= edge) & (stop <= n_times - edge)
    ch, start, stop = ch[keep], start[keep], stop[keep]

    events = np.stack([start / sfreq, stop / sfreq], axis=1) if len(ch) else np.zeros((0, 2))
    bounds = np.searchsorted(ch, np.arange(n_channels + 1))
    return [events[bounds[i] : bounds[i + 1]].astype(np.float64) for i in range(n_channels)]

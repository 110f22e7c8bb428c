"""The Epileptogenicity Index (EI) of Bartolomei et al. 2008 for a recording with a seizure onset.

Bartolomei F, Chauvel P, Wendling F. Epileptogenicity of brain structures in human temporal lobe
epilepsy: a quantified study from intracerebral EEG. Brain 2008; 131:1818–1830.

1. Energy ratio per channel on sliding windows: ER[n] = (E_β + E_γ) / (E_θ + E_α), bands θ 3.5–7.4,
   α 7.4–12.4, β 12.4–24, γ 24–97 Hz (γ clipped below Nyquist), from Hann-tapered periodograms
   (:func:`sss_viewer.biomarkers._spectral.energy_ratio`).
2. From the search start ``onset_s`` on, the Page–Hinkley cumulative sum
   U_N = Σ_{n ≤ N} (ER[n] − ER̄_n − ν), ER̄_n the mean of ER from the search start to n, and its
   running minimum u_N = min_{n ≤ N} U_n. The alarm is the first N with U_N − u_N > λ; the
   detection time N_d is the last frame before the alarm where U reached that minimum (the
   estimated start of the rise).
3. N_0 = the earliest detection over channels, and
   EI_i = 1 / (N_d,i − N_0 + τ) · Σ_{n = N_d,i}^{N_d,i + H} ER_i[n] (times in s, τ = 1 s, H = 5 s,
   the sum clipped at the end of the recording), normalised to the maximum over channels. A
   channel without an alarm gets EI 0.

The paper sets ν and λ empirically; implementations differ (ν 0.1–0.5, λ 1–30, on ER frames every
0.25–1 s). The defaults here (1-s windows every 0.25 s, ν = 0.1, λ = 15) are documented choices,
not the paper's verified numbers: the ranking depends on them mainly through which channels reach
an alarm at all, so pass the values of a published protocol when reproducing one.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

import numpy as np

from sss_viewer._validate import check_range
from sss_viewer.biomarkers._filtering import check_line_freq, check_sfreq, check_signal
from sss_viewer.biomarkers._spectral import energy_ratio

logger = logging.getLogger(__name__)

WINDOW_S = 1.0
"""Energy-ratio window (s)."""
STEP_S = 0.25
"""Step between energy-ratio windows (s)."""
BIAS = 0.1
"""Page–Hinkley bias ν (ER units per frame)."""
THRESHOLD = 15.0
"""Page–Hinkley alarm threshold λ (ER units)."""
TAU_S = 1.0
"""τ of the EI denominator (s)."""
HORIZON_S = 5.0
"""H: the span of ER summed after each detection (s)."""


@dataclass(frozen=True)
class EpileptogenicityResult:
    """The EI of each channel and what it was computed from.

    Attributes
    ----------
    ei : ndarray, shape (n_channels,), float64
        Epileptogenicity Index in [0, 1] (1 for the top channel; 0 without an alarm, all 0 when no
        channel has one).
    detection_s : ndarray, shape (n_channels,), float64
        Detection time N_d (s from the first sample, a frame centre); NaN without an alarm.
    alarm_s : ndarray, shape (n_channels,), float64
        Alarm time (first U_N − u_N > λ, s); NaN without an alarm.
    energy_ratio : ndarray, shape (n_channels, n_frames), float64
        ER of every frame, including the frames before ``onset_s``.
    frame_times_s : ndarray, shape (n_frames,), float64
        Centre of each frame (s).
    onset_s : float
        Where the search started (s).
    """

    ei: np.ndarray
    detection_s: np.ndarray
    alarm_s: np.ndarray
    energy_ratio: np.ndarray
    frame_times_s: np.ndarray
    onset_s: float


def epileptogenicity_index(
    data,
    sfreq: float,
    onset_s: float,
    *,
    line_freq: float | None = None,
    window_s: float = WINDOW_S,
    step_s: float = STEP_S,
    bias: float = BIAS,
    threshold: float = THRESHOLD,
    tau_s: float = TAU_S,
    horizon_s: float = HORIZON_S,
) -> EpileptogenicityResult:
    """Epileptogenicity Index per channel (Bartolomei et al. 2008).

    Parameters
    ----------
    data : array_like, shape (n_channels, n_times)
        Samples in µV around a seizure, finite.
    sfreq : float
        Sampling rate (Hz); Nyquist must exceed ≈ 26 Hz (γ starts at 24 Hz).
    onset_s : float
        Where the change detection starts, in s from the first sample: a few seconds before the
        clinical onset marker (or the start of a clip that begins shortly before it).
    line_freq : {50, 60, None}
        Mains frequency, whose harmonics are left out of the bands; None (unknown) leaves out both
        50- and 60-Hz harmonics.
    window_s : float
        Energy-ratio window (s); shortened to the recording when it is longer.
    step_s : float
        Step between windows (s).
    bias : float
        Page–Hinkley ν (≥ 0), the drift subtracted per frame.
    threshold : float
        Page–Hinkley λ (> 0).
    tau_s : float
        τ (> 0), s.
    horizon_s : float
        H (≥ 0), s.

    Returns
    -------
    EpileptogenicityResult

    Raises
    ------
    ValueError
        Bad ``data``, ``sfreq``, ``line_freq``, a parameter out of range, or ``onset_s`` outside the
        recording (no frame centre at or after it).
    """
    data = check_signal(data)
    sfreq = check_sfreq(sfreq)
    line_freq = check_line_freq(line_freq)
    for name, value in (("window_s", window_s), ("step_s", step_s), ("threshold", threshold), ("tau_s", tau_s)):
        check_range(name, value, 0, None, low_inclusive=False)
    check_range("bias", bias, 0, None)
    check_range("horizon_s", horizon_s, 0, None)
    n_channels, n_times = data.shape
    duration = n_times / sfreq
    if not np.isfinite(onset_s):
        raise ValueError(
            f"Invalid onset_s={onset_s!r}: expected a time in seconds within the recording (0 to {duration:g} s)."
        )

    length = min(n_times, round(window_s * sfreq))
    if length < round(window_s * sfreq):
        logger.info(
            "EI: recording (%g s) shorter than window_s=%g s; one window of the whole recording", duration, window_s
        )
    step = max(1, round(step_s * sfreq))
    starts = np.arange(0, n_times - length + 1, step, dtype=np.int64)
    times = (starts + length / 2) / sfreq
    search = np.flatnonzero(times >= onset_s)
    if onset_s < 0 or len(search) == 0:
        raise ValueError(
            f"Invalid onset_s={onset_s!r}: expected a time from 0 to the last frame centre {times[-1]:g} s "
            f"(recording of {duration:g} s, {window_s:g}-s windows)."
        )

    er = energy_ratio(data, sfreq, starts, length, line_freq=line_freq)
    first = search[0]
    detect_idx, alarm_idx = page_hinkley(er[:, first:], bias, threshold)
    detected = detect_idx >= 0
    detection_s = np.where(detected, times[np.maximum(detect_idx, 0) + first], np.nan)
    alarm_s = np.where(detected, times[np.maximum(alarm_idx, 0) + first], np.nan)

    ei = np.zeros(n_channels)
    if detected.any():
        n0 = np.nanmin(detection_s)
        within = (times[None, :] >= detection_s[:, None] - 1e-9) & (
            times[None, :] <= detection_s[:, None] + horizon_s + 1e-9
        )
        total = np.where(within, er, 0.0).sum(axis=1)
        raw = np.where(detected, total / (np.where(detected, detection_s, n0) - n0 + tau_s), 0.0)
        top = raw.max()
        ei = raw / top if top > 0 else raw
    else:
        logger.info(
            "EI: no channel reached the Page-Hinkley alarm (threshold=%g, bias=%g) after %g s", threshold, bias, onset_s
        )
    return EpileptogenicityResult(
        ei=ei, detection_s=detection_s, alarm_s=alarm_s, energy_ratio=er, frame_times_s=times, onset_s=float(onset_s)
    )


def page_hinkley(values: np.ndarray, bias: float, threshold: float) -> tuple[np.ndarray, np.ndarray]:
    """Page–Hinkley detection of an increase in the mean, per row.

    U_N = Σ_{n ≤ N} (x[n] − x̄_n − ν) with x̄_n the mean of x[0..n]; alarm at the first N with
    U_N − min_{n ≤ N} U_n > λ; detection at the last n ≤ alarm where U_n equals that minimum.

    Parameters
    ----------
    values : ndarray, shape (n_rows, n_frames)
    bias : float
        ν ≥ 0.
    threshold : float
        λ > 0.

    Returns
    -------
    detection, alarm : ndarray, shape (n_rows,), int64
        Frame indices; −1 where no alarm.
    """
    x = np.asarray(values, dtype=np.float64)
    n_rows, n = x.shape
    if n == 0:
        return np.full(n_rows, -1, dtype=np.int64), np.full(n_rows, -1, dtype=np.int64)
    running_mean = np.cumsum(x, axis=1) / np.arange(1, n + 1)
    u = np.cumsum(x - running_mean - bias, axis=1)
    running_min = np.minimum.accumulate(u, axis=1)
    over = (u - running_min) > threshold
    has = over.any(axis=1)
    alarm = np.where(has, over.argmax(axis=1), -1)
    at_min = u <= running_min[np.arange(n_rows), np.maximum(alarm, 0)][:, None]
    at_min &= np.arange(n)[None, :] <= alarm[:, None]
    last = n - 1 - at_min[:, ::-1].argmax(axis=1)
    detection = np.where(has, last, -1)
    return detection.astype(np.int64), alarm.astype(np.int64)

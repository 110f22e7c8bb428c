"""The signal model: 1/f background, line noise, waveforms (spikes, ripples, seizures, distractors) and their placement.

Internal to the stage: not part of the public API (:mod:`sss_viewer.synth`'s ``__all__``, ``docs/api.md``).
"""

from __future__ import annotations

import logging

import numpy as np
import pandas as pd
import scipy.fft
from scipy.special import i0e

from sss_viewer.synth._patients import SynthPatient
from sss_viewer.synth.config import (
    CHUNK_CHANNELS,
    DISTRACTOR_KINDS,
    LOWPASS_TRANSITION_HZ,
    SynthConfig,
)

logger = logging.getLogger(__name__)


# --------------------------------------------------------------------------------------------
# Background
# --------------------------------------------------------------------------------------------


def _spectral_filter(freqs: np.ndarray, beta: float, knee: float, peaks: np.ndarray, floor_log: float) -> np.ndarray:
    """Amplitude response of one channel's background: 1/f^β with a knee plus spectral peaks.

    Parameters
    ----------
    freqs : ndarray, shape (n_freqs,)
        Non-negative rfft frequencies in Hz.
    beta, knee : float
        Spectral exponent and knee frequency (Hz).
    peaks : ndarray, shape (n_peaks, 3)
        Centre frequency (Hz), log10 gain relative to the 1/f floor at that frequency, and width (Hz).
    floor_log : float
        log10 of a white noise floor (amplifier noise) relative to the 1/f amplitude at 1 Hz.

    Returns
    -------
    h : ndarray, shape (n_freqs,), float32
        Scaled so that filtered unit white noise has unit variance.
    """
    h = (freqs**2 + knee**2) ** (-beta / 4.0)
    for f0, log_gain, width in peaks:
        floor = (f0**2 + knee**2) ** (-beta / 4.0)
        h = h + floor * 10.0**log_gain * np.exp(-0.5 * ((freqs - f0) / width) ** 2)
    h = h + (1.0 + knee**2) ** (-beta / 4.0) * 10.0**floor_log
    h[0] = 0.0
    # variance of irfft(rfft(white) * h) ≈ mean |h|^2 over the two-sided spectrum
    power = (2.0 * np.sum(h[1:] ** 2) + h[0] ** 2) / (2.0 * (len(h) - 1))
    return (h / np.sqrt(power)).astype(np.float32)


def background(rng: np.random.Generator, patient: SynthPatient, n_times: int, config: SynthConfig) -> np.ndarray:
    """Unit-variance coloured noise with rhythms, plus slow drift, in background-SD units.

    Returns
    -------
    data : ndarray, shape (n_channels, n_times), float32
    """
    n_channels = len(patient.ch_names)
    data = np.empty((n_channels, n_times), dtype=np.float32)
    freqs = np.fft.rfftfreq(n_times, d=1.0 / patient.sfreq)
    t = np.arange(n_times, dtype=np.float32) / np.float32(patient.sfreq)
    for start in range(0, n_channels, CHUNK_CHANNELS):
        stop = min(start + CHUNK_CHANNELS, n_channels)
        white = rng.standard_normal((stop - start, n_times), dtype=np.float32)
        spec = scipy.fft.rfft(white, axis=1, workers=-1)
        del white
        for row, c in enumerate(range(start, stop)):
            spec[row] *= _spectral_filter(
                freqs, patient.beta[c], patient.knee_hz[c], patient.peaks[c], patient.floor_log[c]
            )
        data[start:stop] = scipy.fft.irfft(spec, n=n_times, axis=1, workers=-1)
    # slow drift: two slow sinusoids per channel
    drift_amp = rng.uniform(*config.drift_amplitude, (n_channels, 2)).astype(np.float32)
    drift_f = rng.uniform(0.01, 0.15, (n_channels, 2)).astype(np.float32)
    drift_phase = rng.uniform(0, 2 * np.pi, (n_channels, 2)).astype(np.float32)
    for c in range(n_channels):
        for k in range(2):
            data[c] += drift_amp[c, k] * np.sin(np.float32(2 * np.pi) * drift_f[c, k] * t + drift_phase[c, k])
    return data


def add_line_noise(rng: np.random.Generator, data: np.ndarray, patient: SynthPatient) -> None:
    """Add mains noise (fundamental and harmonics below 0.45·sfreq) in µV, in place."""
    n_times = data.shape[1]
    t = np.arange(n_times, dtype=np.float64) / patient.sfreq
    phases = rng.uniform(0, 2 * np.pi, (len(data), 3))
    for k, rel in enumerate((1.0, 0.3, 0.1), start=1):
        freq = k * patient.line_freq
        if freq >= 0.45 * patient.sfreq:
            break
        s = np.sin(2 * np.pi * freq * t).astype(np.float32)
        c = np.cos(2 * np.pi * freq * t).astype(np.float32)
        amp = patient.line_gain * rel
        for ch in range(len(data)):
            data[ch] += np.float32(amp[ch] * np.cos(phases[ch, k - 1])) * s
            data[ch] += np.float32(amp[ch] * np.sin(phases[ch, k - 1])) * c


# --------------------------------------------------------------------------------------------
# Waveforms (all in background-SD units, at sfreq)
# --------------------------------------------------------------------------------------------


def _lowpass(x: np.ndarray, sfreq: float, f_stop: float, transition: float = LOWPASS_TRANSITION_HZ) -> np.ndarray:
    """Zero-phase FFT low-pass: gain 1 up to ``f_stop - transition``, raised-cosine to 0 at ``f_stop``.

    Parameters
    ----------
    x : ndarray, shape (..., n_times)
    sfreq : float
    f_stop, transition : float
        Stop-band edge and transition width (Hz).

    Returns
    -------
    y : ndarray, shape (..., n_times), float32
    """
    n = x.shape[-1]
    freqs = np.fft.rfftfreq(n, d=1.0 / sfreq)
    gain = np.clip((f_stop - freqs) / transition, 0.0, 1.0)
    gain = 0.5 - 0.5 * np.cos(np.pi * gain)
    return scipy.fft.irfft(scipy.fft.rfft(x, axis=-1) * gain, n=n, axis=-1).astype(np.float32)


def _gauss(t: np.ndarray, sigma: float) -> np.ndarray:
    return np.exp(-0.5 * (t / sigma) ** 2)


def spike_waveform(sfreq: float, width_s: float, rng: np.random.Generator) -> np.ndarray:
    """One interictal spike: an asymmetric sharp peak followed by an opposite slow wave.

    Parameters
    ----------
    sfreq : float
        Sampling rate in Hz.
    width_s : float
        Total duration of the sharp component (rise + fall, ≈ 20–70 ms).
    rng : Generator

    Returns
    -------
    w : ndarray, shape (n_samples,), float32
        Peak 1 at the sharp component; starts at the onset of the rise.
    """
    rise = width_s * rng.uniform(0.25, 0.4) / 2.5
    fall = width_s / 2.5 - rise
    wave_delay = width_s * 0.6 + rng.uniform(0.06, 0.12)
    wave_sigma = rng.uniform(0.04, 0.08)
    wave_ratio = rng.uniform(0.25, 0.5)
    t0 = 3 * rise
    t = np.arange(int((t0 + wave_delay + 3.5 * wave_sigma) * sfreq)) / sfreq - t0
    sharp = np.where(t < 0, _gauss(t, rise), _gauss(t, fall))
    wave = wave_ratio * _gauss(t - wave_delay, wave_sigma)
    return (sharp - wave).astype(np.float32)


def ripple_waveform(sfreq: float, freq_hz: float, duration_s: float, rng: np.random.Generator) -> np.ndarray:
    """An HFO-like ripple: a Hann-windowed sinusoid of ``freq_hz`` lasting ``duration_s`` (peak 1)."""
    n = max(int(duration_s * sfreq), 3)
    t = np.arange(n) / sfreq
    return (np.hanning(n) * np.sin(2 * np.pi * freq_hz * t + rng.uniform(0, 2 * np.pi))).astype(np.float32)


def _ramp(n: int, rise: float = 0.3, fall: float = 0.15) -> np.ndarray:
    """Trapezoid envelope of length ``n``: rises over ``rise`` of it, falls over the last ``fall``."""
    i = np.arange(n)
    return np.clip(i / max(rise * n, 1), 0, 1) * np.clip((n - i) / max(fall * n, 1), 0, 1)


def _spike_wave_train(phase: np.ndarray, kappa: np.ndarray | float, wave_ratio: float = 0.6) -> np.ndarray:
    """Periodic spike-and-wave as a function of the oscillation phase (von Mises pulses, zero mean)."""
    spike = np.exp(kappa * (np.cos(phase) - 1.0)) - i0e(kappa)
    wave = np.exp(2.0 * (np.cos(phase - 0.45 * 2 * np.pi) - 1.0)) - i0e(2.0)
    return spike - wave_ratio * wave


def _seizure_soz(
    sfreq: float, duration_s: float, rng: np.random.Generator, amp: float, lvfa_amplitude: tuple[float, float]
) -> tuple[np.ndarray, np.ndarray]:
    """SOZ seizure: low-voltage fast activity, then evolving rhythmic spike-wave (8 → 3 Hz).

    Returns
    -------
    signal : ndarray, shape (n_samples,), float32
        Additive seizure activity in background SDs.
    attenuation : ndarray, shape (n_samples,), float32
        Factor applied to the background (voltage depression during the fast onset).
    """
    n = int(duration_s * sfreq)
    n_fast = int(rng.uniform(0.12, 0.22) * n)
    f_fast = np.linspace(rng.uniform(55, 75), rng.uniform(22, 32), n_fast)
    fast = np.sin(2 * np.pi * np.cumsum(f_fast) / sfreq) * np.linspace(0.3, 1.0, n_fast) * rng.uniform(*lvfa_amplitude)
    n_slow = n - n_fast
    f_slow = np.linspace(rng.uniform(6, 8), rng.uniform(2.8, 4), n_slow)
    phase = 2 * np.pi * np.cumsum(f_slow) / sfreq + rng.uniform(0, 2 * np.pi)
    kappa = np.linspace(6.0, 14.0, n_slow)  # spikes sharpen as the seizure evolves
    slow = amp * (0.25 + 0.75 * _ramp(n_slow)) * _spike_wave_train(phase, kappa)
    signal = np.concatenate([fast, slow])
    attenuation = np.ones(n, dtype=np.float32)
    attenuation[:n_fast] = rng.uniform(0.3, 0.6)
    taper = min(int(0.5 * sfreq), n // 4)
    signal[:taper] *= np.hanning(2 * taper)[:taper]
    return signal.astype(np.float32), attenuation


def _seizure_spread(sfreq: float, duration_s: float, rng: np.random.Generator, amp: float) -> np.ndarray:
    """Propagated seizure activity: smoother, lower-amplitude rhythmic activity (no fast onset)."""
    n = int(duration_s * sfreq)
    f = np.linspace(rng.uniform(5, 7), rng.uniform(2.8, 4), n)
    phase = 2 * np.pi * np.cumsum(f) / sfreq + rng.uniform(0, 2 * np.pi)
    return (amp * _ramp(n) * _spike_wave_train(phase, rng.uniform(1.5, 3.5), wave_ratio=0.3)).astype(np.float32)


def _distractor(
    kind: str, sfreq: float, duration_s: float, rng: np.random.Generator, muscle_amplitude: tuple[float, float]
) -> np.ndarray:
    """One benign transient in background SDs (a kind of ``DISTRACTOR_KINDS``).

    Returns
    -------
    w : ndarray, shape (n_samples,), float32
    """
    n = max(int(duration_s * sfreq), 8)
    t = np.arange(n) / sfreq
    if kind == "theta":  # smooth rhythmic 3–8 Hz (benign rhythmic theta)
        freq, amp = rng.uniform(3.0, 8.0), rng.uniform(1.0, 3.0)
        return (amp * np.hanning(n) * np.sin(2 * np.pi * freq * t + rng.uniform(0, 2 * np.pi))).astype(np.float32)
    if kind == "burst":
        band = rng.choice(3, p=[0.25, 0.45, 0.3])
        lo, hi, amp = ((9.0, 15.0, (0.8, 2.5)), (15.0, 30.0, (0.6, 2.0)), (30.0, 90.0, (0.4, 1.2)))[band]
        freq = rng.uniform(lo, min(hi, 0.4 * sfreq))
        return (rng.uniform(*amp) * np.hanning(n) * np.sin(2 * np.pi * freq * t + rng.uniform(0, 2 * np.pi))).astype(
            np.float32
        )
    if kind == "kcomplex":
        sigma = rng.uniform(0.08, 0.16)
        centre = duration_s * 0.35
        w = -_gauss(t - centre, sigma) + rng.uniform(0.4, 0.8) * _gauss(t - centre - 2.5 * sigma, 1.5 * sigma)
        return (rng.uniform(2.5, 6.0) * rng.choice([-1.0, 1.0]) * w).astype(np.float32)
    noise = np.diff(rng.standard_normal(n + 1))  # EMG-like: high-pass white noise
    return (rng.uniform(*muscle_amplitude) * np.hanning(n) * noise / np.sqrt(2)).astype(np.float32)


# --------------------------------------------------------------------------------------------
# Event placement
# --------------------------------------------------------------------------------------------


def _place_intervals(
    rng: np.random.Generator,
    total_s: float,
    budget_s: float,
    length_range: tuple[float, float],
    blocked: list[tuple[float, float]],
    *,
    gap_s: float = 1.0,
    max_tries: int = 2000,
) -> list[tuple[float, float]]:
    """Place non-overlapping intervals of random length until ``budget_s`` seconds are covered.

    Intervals avoid ``blocked`` ones and each other by ``gap_s``; the last one is shortened so that
    the covered time never exceeds ``budget_s``.

    Returns
    -------
    intervals : list of (onset_s, offset_s), sorted
    """
    placed: list[tuple[float, float]] = []
    covered = 0.0
    for _ in range(max_tries):
        if budget_s - covered < 0.5 * length_range[0]:
            break
        length = min(rng.uniform(*length_range), budget_s - covered)
        onset = rng.uniform(1.0, max(total_s - length - 1.0, 1.0))
        offset = onset + length
        if any(onset < b + gap_s and offset > a - gap_s for a, b in blocked + placed):
            continue
        placed.append((onset, offset))
        covered += length
    return sorted(placed)


def add_segment(data: np.ndarray, ch: int, start: int, segment: np.ndarray) -> None:
    """Add ``segment`` into ``data[ch]`` from sample ``start``, clipping at the recording edges."""
    n = data.shape[1]
    if start >= n or start + len(segment) <= 0:
        return
    lo = max(start, 0)
    hi = min(start + len(segment), n)
    data[ch, lo:hi] += segment[lo - start : hi - start]


def add_distractors(rng: np.random.Generator, data: np.ndarray, patient: SynthPatient, config: SynthConfig) -> None:
    """Add benign bursts, K-complex-like waves and muscle bursts to every channel, in place."""
    sfreq = patient.sfreq
    total_s = data.shape[1] / sfreq
    lengths = {"theta": (1.0, 4.0), "burst": (0.4, 2.0), "kcomplex": (0.6, 1.4), "muscle": (0.1, 0.4)}
    for ch in range(len(data)):
        for kind, fraction in zip(DISTRACTOR_KINDS, patient.distractor_budget[ch]):
            budget = fraction * total_s
            covered = 0.0
            while covered < budget:
                length = rng.uniform(*lengths[kind])
                onset = rng.uniform(0, max(total_s - length, 0.0))
                wave = _distractor(kind, sfreq, length, rng, config.muscle_amplitude)
                add_segment(data, ch, int(onset * sfreq), wave)
                covered += length


def episode_segment(
    rng: np.random.Generator, patient: SynthPatient, channels: np.ndarray, length_s: float, config: SynthConfig
) -> np.ndarray:
    """Spike cluster of one episode on the participating ``channels`` (shared spike times, jittered).

    Returns
    -------
    segment : ndarray, shape (n_participating, n_samples), float32
        Low-passed below ``config.signature_max_freq_hz``.
    """
    sfreq = patient.sfreq
    n = int(length_s * sfreq)
    seg = np.zeros((len(channels), n), dtype=np.float32)
    rate = rng.uniform(*config.spike_rate_hz)
    times = np.cumsum(rng.uniform(0.5, 1.5, size=int(length_s * rate * 2) + 2) / rate)
    times = times[times < length_s - 0.5]
    if len(times) == 0:
        times = np.array([length_s / 2])
    for t_spike in times:
        width = rng.uniform(*config.spike_width_ms) / 1000
        template = spike_waveform(sfreq, width, rng)
        ripple = None
        if rng.random() < config.ripple_on_spike_prob:
            ripple = ripple_waveform(sfreq, rng.uniform(*config.hfo_freq_hz), rng.uniform(0.03, 0.08), rng)
        for row, ch in enumerate(channels):
            start = int((t_spike + rng.uniform(0, 0.015)) * sfreq)
            w = template * (patient.polarity[ch] * patient.spike_gain[ch] * rng.uniform(0.7, 1.2))
            stop = min(start + len(w), n)
            seg[row, start:stop] += w[: stop - start]
            if ripple is not None:
                r = ripple * rng.uniform(*config.hfo_amplitude)
                stop = min(start + len(r), n)
                seg[row, start:stop] += r[: stop - start]
    return _lowpass(seg, sfreq, config.signature_max_freq_hz)


def episode_members(rng: np.random.Generator, n_soz: int, n_episodes: int) -> np.ndarray:
    """Which SOZ channels take part in each episode: each with its own probability (0.6–1), and
    every channel in at least one episode.

    Returns
    -------
    members : ndarray, shape (n_episodes, n_soz), bool
    """
    members = rng.random((n_episodes, n_soz)) < rng.uniform(0.6, 1.0, n_soz)
    if n_episodes:
        for ch in np.flatnonzero(~members.any(axis=0)):
            members[int(rng.integers(n_episodes)), ch] = True
    return members


def add_seizure(
    rng: np.random.Generator, data: np.ndarray, patient: SynthPatient, config: SynthConfig, seizure: tuple[float, float]
) -> list[tuple[int, float, float, str]]:
    """Add the seizure to the SOZ channels and its delayed spread to the spread channels, in place.

    Returns
    -------
    intervals : list of (channel index, onset_s, offset_s, kind)
    """
    sfreq = patient.sfreq
    sz_on, sz_off = seizure
    intervals = []
    amp = rng.uniform(*config.seizure_amplitude)
    for ch in np.flatnonzero(patient.soz):
        lag = rng.uniform(0, 0.5)
        sig, att = _seizure_soz(sfreq, sz_off - sz_on - lag, rng, amp * rng.uniform(0.8, 1.2), config.lvfa_amplitude)
        start = int((sz_on + lag) * sfreq)
        data[ch, start : start + len(att)] *= att[: data.shape[1] - start]
        add_segment(data, ch, start, _lowpass(sig, sfreq, config.signature_max_freq_hz))
        intervals.append((int(ch), sz_on + lag, sz_off, "seizure"))
    for ch in np.flatnonzero(patient.spread):
        on = sz_on + min(rng.uniform(*config.spread_delay_s), 0.4 * (sz_off - sz_on))
        off = sz_off - min(rng.uniform(0, 3.0), 0.1 * (sz_off - sz_on))
        sig = _seizure_spread(sfreq, off - on, rng, rng.uniform(*config.spread_amplitude))
        add_segment(data, ch, int(on * sfreq), _lowpass(sig, sfreq, config.signature_max_freq_hz))
        intervals.append((int(ch), on, off, "seizure_spread"))
    return intervals


def _add_spike_episodes(
    rng: np.random.Generator, data: np.ndarray, patient: SynthPatient, config: SynthConfig, seizure: tuple[float, float]
) -> tuple[list[tuple[int, float, float, str]], list[tuple[float, float]]]:
    """Add interictal spike episodes shared by the SOZ channels (per-channel participation), in place.

    Episodes keep 5 s away from the seizure and fit, with it, within ``max_abnormal_fraction``.

    Returns
    -------
    intervals : list of (channel index, onset_s, offset_s, kind)
    episodes : list of (onset_s, offset_s)
    """
    sfreq = patient.sfreq
    total_s = data.shape[1] / sfreq
    sz_on, sz_off = seizure
    soz = np.flatnonzero(patient.soz)
    budget = min(
        rng.uniform(*config.episode_fraction) * total_s,
        0.95 * config.max_abnormal_fraction * total_s - (sz_off - sz_on) - 0.5,
    )
    episodes = _place_intervals(rng, total_s, budget, config.episode_duration_s, [(sz_on - 5.0, sz_off + 5.0)])
    intervals = []
    for (on, off), member in zip(episodes, episode_members(rng, len(soz), len(episodes))):
        channels = soz[member]
        seg = episode_segment(rng, patient, channels, off - on, config)
        for row, ch in enumerate(channels):
            add_segment(data, int(ch), int(on * sfreq), seg[row])
            intervals.append((int(ch), on, off, "spike_episode"))
    return intervals, episodes


def _add_isolated_ripples(
    rng: np.random.Generator,
    data: np.ndarray,
    patient: SynthPatient,
    config: SynthConfig,
    blocked: list[tuple[float, float]],
    budget_s: float,
) -> list[tuple[int, float, float, str]]:
    """Add HFO-like ripples at random times on SOZ channels, away from ``blocked`` intervals, in place.

    At most ``budget_s`` seconds of ripples per channel, so the abnormal-time bound always holds.
    """
    sfreq = patient.sfreq
    total_s = data.shape[1] / sfreq
    intervals = []
    for ch in np.flatnonzero(patient.soz):
        covered = 0.0
        for _ in range(rng.poisson(rng.uniform(*config.hfo_rate_hz) * total_s)):
            dur = rng.uniform(0.03, 0.1)
            if covered + dur > budget_s:
                break
            on = rng.uniform(0.5, total_s - 0.5 - dur)
            if any(on < b + 0.2 and on + dur > a - 0.2 for a, b in blocked):
                continue
            r = ripple_waveform(sfreq, rng.uniform(*config.hfo_freq_hz), dur, rng) * rng.uniform(*config.hfo_amplitude)
            add_segment(data, int(ch), int(on * sfreq), _lowpass(r, sfreq, config.signature_max_freq_hz))
            intervals.append((int(ch), on, on + dur, "hfo"))
            covered += dur
    return intervals


def phase_randomise(x: np.ndarray, rng: np.random.Generator, taper_fraction: float = 0.2) -> np.ndarray:
    """Surrogate with the power spectrum of ``x`` and random phases, Tukey-tapered at the ends.

    Keeps every band power of ``x`` (up to the taper) and destroys its morphology: a spike train
    becomes irregular noise with the same spectrum.

    Parameters
    ----------
    x : ndarray, shape (n_samples,)
    rng : Generator
    taper_fraction : float
        Fraction of the segment tapered (half at each end).

    Returns
    -------
    y : ndarray, shape (n_samples,), float32
    """
    n = len(x)
    spec = np.fft.rfft(x)
    phases = 2 * np.pi * rng.random(len(spec))
    phases[0] = 0.0  # DC (and Nyquist, for even n) must stay real
    if n % 2 == 0:
        phases[-1] = 0.0
    y = np.fft.irfft(spec * np.exp(1j * phases), n=n)
    return (y * _tukey(n, taper_fraction)).astype(np.float32)


def _tukey(n: int, fraction: float) -> np.ndarray:
    """Tukey (tapered-cosine) window of length ``n`` with ``fraction`` of it tapered."""
    w = np.ones(n)
    m = int(fraction * n / 2)
    if m < 1:
        return w
    ramp = 0.5 - 0.5 * np.cos(np.pi * np.arange(m) / m)
    w[:m] = ramp
    w[n - m :] = ramp[::-1]
    return w


def add_spectral_mimics(
    rng: np.random.Generator, data: np.ndarray, patient: SynthPatient, config: SynthConfig, seizure_s: float
) -> None:
    """Give every non-SOZ channel benign bursts with the power spectrum of the SOZ signature, in place.

    Each non-SOZ channel gets phase-randomised copies of spike episodes (same time-fraction range as
    the SOZ) and of a seizure (scaled by ``config.mimic_seizure_scale``) at random times. Band powers,
    variance and line length then match between SOZ and non-SOZ channels on average; only the
    morphology (sharp spikes, rhythmic spike-wave) tells them apart.
    """
    if config.mimic_strength <= 0:
        return
    sfreq = patient.sfreq
    total_s = data.shape[1] / sfreq
    f_stop = config.signature_max_freq_hz
    for ch in np.flatnonzero(~patient.soz):
        budget = rng.uniform(*config.episode_fraction) * total_s * config.mimic_strength
        for on, off in _place_intervals(rng, total_s, budget, config.episode_duration_s, [], gap_s=0.5):
            seg = episode_segment(rng, patient, np.array([ch]), off - on, config)[0]
            add_segment(data, int(ch), int(on * sfreq), phase_randomise(seg, rng))
        if seizure_s > 1.0:
            amp = rng.uniform(*config.seizure_amplitude) * rng.uniform(*config.mimic_seizure_scale)
            sig, _ = _seizure_soz(sfreq, seizure_s, rng, amp, config.lvfa_amplitude)
            on = rng.uniform(0.5, max(total_s - seizure_s - 0.5, 0.5))
            add_segment(data, int(ch), int(on * sfreq), phase_randomise(_lowpass(sig, sfreq, f_stop), rng, 0.1))


def add_signatures(
    seeds: np.random.SeedSequence,
    data: np.ndarray,
    patient: SynthPatient,
    config: SynthConfig,
    seizure: tuple[float, float],
) -> list[tuple[int, float, float, str]]:
    """Add the seizure and its spread, spike episodes and isolated ripples, in place.

    Each part draws from its own stream of ``seeds``, so switching one off leaves the others unchanged.

    Returns
    -------
    intervals : list of (channel index, onset_s, offset_s, kind)
    """
    seizure_rng, episode_rng, ripple_rng = (np.random.default_rng(s) for s in seeds.spawn(3))
    intervals = add_seizure(seizure_rng, data, patient, config, seizure)
    episode_intervals, episodes = _add_spike_episodes(episode_rng, data, patient, config, seizure)
    intervals += episode_intervals
    total_s = data.shape[1] / patient.sfreq
    used_s = (seizure[1] - seizure[0]) + sum(off - on for on, off in episodes)
    budget_s = 0.99 * config.max_abnormal_fraction * total_s - used_s
    intervals += _add_isolated_ripples(ripple_rng, data, patient, config, [seizure, *episodes], budget_s)
    return intervals


def abnormal_fraction(intervals: pd.DataFrame, channel: str, total_s: float) -> float:
    """Fraction of ``total_s`` covered by the union of ``channel``'s abnormal intervals."""
    rows = intervals[intervals["channel"] == channel].sort_values("onset_s")
    covered, end = 0.0, -np.inf
    for on, off in zip(rows["onset_s"], rows["offset_s"]):
        if on > end:
            covered += off - on
            end = off
        elif off > end:
            covered += off - end
            end = off
    return covered / total_s

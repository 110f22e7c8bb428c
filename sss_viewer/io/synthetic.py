"""A deterministic synthetic multi-centre iEEG cohort with known seizure-onset zones.

Each synthetic patient belongs to one of the four ds003029 centres (round-robin) and takes its
channel count, run duration, sampling rate, acquisition type, shaft names, mains frequency and
seizure-marker wording from the real per-centre table ``sss_viewer/data/ds003029_centres.json``
(written by ``training/summarise_ds003029.py`` from the dataset's sidecars).

Signal model, in µV, per channel::

    amplitude_c · [ 1/f^β background (knee, theta/alpha/beta/gamma peaks, white floor) + slow drift
                    + benign distractors (theta, alpha–gamma bursts, K-complex-like waves, muscle)
                    + SOZ channels:     spike episodes, HFO-like ripples, seizure
                      other channels:   seizure spread (some), spectral mimics of the SOZ signature ]
    + line noise (mains and harmonics)

The SOZ signature is local in time: interictal spike episodes (2–8 s clusters of 20–70 ms sharp
spikes, each followed by a slow wave, some with an 80–90 Hz ripple), isolated ripples, and a seizure
that starts with low-voltage fast activity and evolves into rhythmic 8 → 3 Hz spike-wave. All of it
is band-limited below ``SynthConfig.signature_max_freq_hz`` (< 100 Hz) so that it survives the
default resampling to 250 Hz. Abnormal activity covers at most ``max_abnormal_fraction`` of any SOZ
channel (asserted).

Whole-channel statistics must not give the SOZ away, so non-SOZ channels carry: wide per-channel
amplitude and spectral-shape variation, the same benign distractors, seizure spread, and *spectral
mimics* — phase-randomised copies of spike episodes and seizures, with the SOZ signature's power
spectrum but none of its sharp morphology. A global-feature classifier (log variance, line length,
band powers) then stays near chance while a 4-s spike detector separates SOZ channels well.

Determinism: ``np.random.SeedSequence(seed).spawn`` gives patient ``k`` its own stream, so patient
``k`` is identical whatever the cohort size, and two cohorts from the same seed are byte-identical.
"""

from __future__ import annotations

import dataclasses
import json
import logging
from dataclasses import dataclass, field
from functools import lru_cache
from importlib import resources
from pathlib import Path

import numpy as np
import pandas as pd
import scipy.fft
from scipy.special import i0e
from tqdm.auto import tqdm

from sss_viewer._validate import check_positive_int, check_range
from sss_viewer.recording import Event, Recording

logger = logging.getLogger(__name__)

CENTRES = ("JHH", "NIH", "UMMC", "UMF")
"""The four ds003029 centres, in the round-robin order patients are assigned to."""

ABNORMAL_KINDS = ("spike_episode", "hfo", "seizure", "seizure_spread")
"""Values of the ``kind`` column of the abnormal-interval table."""

ABNORMAL_COLUMNS = ("channel", "onset_s", "offset_s", "kind")

DISTRACTOR_KINDS = ("theta", "burst", "kcomplex", "muscle")
"""Benign transients every channel carries (see ``SynthConfig.distractor_mix``)."""

_LOWPASS_TRANSITION_HZ = 6.0
"""Width of the raised-cosine roll-off that band-limits every SOZ signature."""

_CHUNK_CHANNELS = 8
"""Channels synthesised per FFT batch (bounds temporary memory; fixed so output is deterministic)."""


@dataclass
class SynthConfig:
    """All knobs of the synthetic cohort. Defaults mimic ds003029; shrink them for tests.

    Parameters
    ----------
    duration_scale : float
        Multiplies every sampled run duration (0.3 → runs of ≈ 40–300 s instead of 140–990 s).
    max_channels : int or None
        Cap on the number of iEEG channels per patient (``None``: the real counts, 28–184).
    runs_per_patient : int
        Runs (seizures) per patient; runs share the montage and SOZ, not the signals.
    soz_fraction : float
        Target fraction of SOZ channels per patient (ds003029: about 1 in 6).
    extra_channels : bool
        Also write an ``EKG`` MISC channel, a ``$``-prefixed duplicate channel and one iEEG
        channel marked ``status=bad`` (as in ds003029 sidecars), to exercise readers.
    signatures : bool
        Add the SOZ signatures (seizure, spread, spike episodes, ripples). ``False`` gives a *null*
        cohort with the same labels, montages, backgrounds and distractors but no SOZ signal (every
        other part draws from its own random stream, so it is otherwise sample-identical).
    centre_amplitude_uv : dict
        Median background standard deviation (µV) per centre.
    amplitude_log_sigma : float
        Standard deviation of the per-channel log-normal amplitude factor.
    centre_line_noise_uv : dict
        Median mains amplitude (µV) per centre.
    line_freq_hz : dict or None
        Override of the mains frequency per centre (e.g. ``{"UMF": 50.0}``); by default the
        ds003029 value (60 Hz at all four centres).
    beta_range : tuple of float
        Range of the per-channel 1/f^β spectral exponent.
    knee_hz_range : tuple of float
        Range of the per-channel low-frequency knee of the 1/f spectrum.
    rhythm_gain_log_range : tuple of float
        Range of log10 gain of the theta, alpha, beta and gamma spectral peaks (relative to the
        1/f floor at the peak); theta and alpha reach 0.6 and 0.3 higher.
    noise_floor_log_range : tuple of float
        Range of log10 of the per-channel white noise floor relative to the 1/f amplitude at 1 Hz.
    drift_amplitude : tuple of float
        Amplitude of each of the two slow (0.01–0.15 Hz) drift sinusoids, in background SDs.
    episode_duration_s : tuple of float
        Duration range of one interictal spike episode.
    episode_fraction : tuple of float
        Range of the fraction of the run covered by spike episodes.
    spike_rate_hz : tuple of float
        Range of the spike rate within an episode.
    spike_amplitude : tuple of float
        Spike peak in units of the channel's background standard deviation.
    spike_width_ms : tuple of float
        Total spike duration (rise + fall), ms.
    ripple_on_spike_prob : float
        Probability that a spike carries an HFO-like ripple.
    hfo_rate_hz : tuple of float
        Rate of isolated ripples on SOZ channels outside episodes.
    hfo_freq_hz : tuple of float
        Ripple frequency range; must stay 6 Hz below ``signature_max_freq_hz``.
    hfo_amplitude : tuple of float
        Ripple amplitude in units of the channel's background standard deviation.
    seizure_duration_s : tuple of float
        Seizure duration range (capped by ``max_seizure_fraction`` of the run).
    max_seizure_fraction : float
        Largest fraction of a run the seizure may take.
    lvfa_amplitude : tuple of float
        Peak of the low-voltage fast activity at seizure onset, in background SDs.
    seizure_amplitude : tuple of float
        Peak spike-wave amplitude in the SOZ, in background standard deviations.
    spread_fraction : tuple of float
        Fraction of non-SOZ channels the seizure spreads to.
    spread_delay_s : tuple of float
        Delay of the spread after seizure onset.
    spread_amplitude : tuple of float
        Peak amplitude of spread seizure activity, in background standard deviations.
    max_abnormal_fraction : float
        Upper bound on the fraction of any SOZ channel's time that is abnormal (asserted).
    signature_max_freq_hz : float
        Every SOZ/seizure signature (and its spectral mimic) is low-passed to zero at this
        frequency (flat up to 6 Hz below it), so it survives resampling to 250 Hz.
    distractor_fraction : tuple of float
        Range of the fraction of time covered by benign distractors on a channel.
    soz_distractor_scale : tuple of float
        Factors on the time budget of each distractor kind (``DISTRACTOR_KINDS`` order) on SOZ
        channels. Below 1 they compensate for the energy the SOZ signature adds in that kind's
        band, so that band powers do not give the SOZ away.
    distractor_mix : tuple of float
        Mean time shares of (theta bursts, faster rhythmic bursts, K-complex-like waves, muscle
        bursts) among distractors; each channel draws its own shares from a Dirichlet around them.
    distractor_mix_concentration : float
        Dirichlet concentration of the per-channel shares (lower: more varied channels).
    mimic_strength : float
        Scale of the time non-SOZ channels spend in benign *spectral mimics* of the SOZ signature
        (phase-randomised spike episodes and seizures: same band powers, no sharp morphology);
        0 switches them off, which makes SOZ channels separable by band powers alone.
    mimic_seizure_scale : tuple of float
        Amplitude of the seizure mimic relative to a SOZ seizure.
    muscle_amplitude : tuple of float
        Muscle-burst amplitude in background SDs.
    """

    duration_scale: float = 1.0
    max_channels: int | None = None
    runs_per_patient: int = 1
    soz_fraction: float = 1 / 6
    extra_channels: bool = False
    signatures: bool = True
    centre_amplitude_uv: dict[str, float] = field(
        default_factory=lambda: {"JHH": 60.0, "NIH": 90.0, "UMMC": 45.0, "UMF": 120.0}
    )
    amplitude_log_sigma: float = 0.5
    centre_line_noise_uv: dict[str, float] = field(
        default_factory=lambda: {"JHH": 4.0, "NIH": 12.0, "UMMC": 2.0, "UMF": 8.0}
    )
    line_freq_hz: dict[str, float] | None = None
    beta_range: tuple[float, float] = (1.0, 2.0)
    knee_hz_range: tuple[float, float] = (0.5, 4.0)
    rhythm_gain_log_range: tuple[float, float] = (-1.0, 0.7)
    noise_floor_log_range: tuple[float, float] = (-3.0, -1.5)
    drift_amplitude: tuple[float, float] = (0.1, 0.8)
    episode_duration_s: tuple[float, float] = (2.0, 8.0)
    episode_fraction: tuple[float, float] = (0.05, 0.09)
    spike_rate_hz: tuple[float, float] = (0.7, 2.0)
    spike_amplitude: tuple[float, float] = (6.0, 14.0)
    spike_width_ms: tuple[float, float] = (20.0, 70.0)
    ripple_on_spike_prob: float = 0.3
    hfo_rate_hz: tuple[float, float] = (0.01, 0.05)
    hfo_freq_hz: tuple[float, float] = (80.0, 90.0)
    hfo_amplitude: tuple[float, float] = (0.4, 1.0)
    seizure_duration_s: tuple[float, float] = (20.0, 60.0)
    max_seizure_fraction: float = 0.1
    lvfa_amplitude: tuple[float, float] = (0.25, 0.7)
    seizure_amplitude: tuple[float, float] = (4.0, 8.0)
    spread_fraction: tuple[float, float] = (0.2, 0.5)
    spread_delay_s: tuple[float, float] = (3.0, 12.0)
    spread_amplitude: tuple[float, float] = (1.0, 3.0)
    max_abnormal_fraction: float = 0.2
    signature_max_freq_hz: float = 98.0
    distractor_fraction: tuple[float, float] = (0.06, 0.22)
    soz_distractor_scale: tuple[float, float, float, float] = (1.0, 1.0, 1.0, 1.0)
    distractor_mix: tuple[float, float, float, float] = (0.4, 0.25, 0.25, 0.1)
    distractor_mix_concentration: float = 4.0
    mimic_strength: float = 0.5
    mimic_seizure_scale: tuple[float, float] = (0.5, 1.0)
    muscle_amplitude: tuple[float, float] = (0.15, 0.5)

    def __post_init__(self) -> None:
        check_range("duration_scale", self.duration_scale, 0, None, low_inclusive=False)
        if self.max_channels is not None:
            check_positive_int("max_channels", self.max_channels)
            if self.max_channels < 6:
                raise ValueError(f"Invalid max_channels={self.max_channels}: need at least 6 for a SOZ.")
        check_positive_int("runs_per_patient", self.runs_per_patient)
        check_range("soz_fraction", self.soz_fraction, 0, 0.5, low_inclusive=False)
        check_range("max_abnormal_fraction", self.max_abnormal_fraction, 0, 1, low_inclusive=False)
        check_range("max_seizure_fraction", self.max_seizure_fraction, 0, self.max_abnormal_fraction)
        check_range("signature_max_freq_hz", self.signature_max_freq_hz, 20, 100)
        if max(self.hfo_freq_hz) > self.signature_max_freq_hz - _LOWPASS_TRANSITION_HZ:
            raise ValueError(
                f"Invalid hfo_freq_hz={self.hfo_freq_hz}: ripples must stay below "
                f"signature_max_freq_hz - {_LOWPASS_TRANSITION_HZ:g} = "
                f"{self.signature_max_freq_hz - _LOWPASS_TRANSITION_HZ:g} Hz."
            )
        if max(self.episode_fraction) + self.max_seizure_fraction > 0.95 * self.max_abnormal_fraction:
            raise ValueError(
                f"episode_fraction {self.episode_fraction} plus max_seizure_fraction {self.max_seizure_fraction} "
                f"leaves no room within max_abnormal_fraction={self.max_abnormal_fraction}."
            )
        for name in ("centre_amplitude_uv", "centre_line_noise_uv"):
            missing = sorted(set(CENTRES) - set(getattr(self, name)))
            if missing:
                raise ValueError(f"SynthConfig.{name} lacks centres {missing}.")

    def to_dict(self) -> dict:
        """A JSON-serialisable copy of the configuration."""
        return dataclasses.asdict(self)


@lru_cache(maxsize=1)
def centre_table() -> dict:
    """The per-centre ds003029 summary (``sss_viewer/data/ds003029_centres.json``).

    Returns
    -------
    table : dict
        ``{centre: {"n_good_channels": [...], "duration_s": [...], "sfreq_hz": [...], ...}}``.
    """
    text = resources.files("sss_viewer").joinpath("data", "ds003029_centres.json").read_text(encoding="utf-8")
    return json.loads(text)["centres"]


# --------------------------------------------------------------------------------------------
# Patient (montage) level
# --------------------------------------------------------------------------------------------


@dataclass
class SynthPatient:
    """Montage and per-channel parameters shared by all runs of one synthetic patient.

    The signal building blocks (``background``, ``add_distractors``, ``add_seizure``,
    ``episode_members``/``episode_segment``/``add_segment``, ``add_spectral_mimics``,
    ``add_line_noise``) take one, so other generators can fill one from a real montage (as the tests'
    ds003029-like BIDS fixture does, with ``channel_parameters`` and ``sample_distractor_budget``).
    """

    subject: str
    centre: str
    sfreq: float
    line_freq: float
    acquisition: str
    durations_s: list[float]
    ch_names: list[str]
    soz: np.ndarray  # (n_channels,) bool
    shaft_of: np.ndarray  # (n_channels,) int
    amplitude_uv: np.ndarray  # (n_channels,)
    beta: np.ndarray
    knee_hz: np.ndarray
    peaks: np.ndarray  # (n_channels, n_peaks, 3): frequency, log10 gain, width
    floor_log: np.ndarray  # (n_channels,) log10 white-noise floor
    line_gain: np.ndarray
    polarity: np.ndarray  # (n_channels,) ±1
    spike_gain: np.ndarray  # (n_channels,) in background SDs
    spread: np.ndarray  # (n_channels,) bool: seizure spreads here
    distractor_budget: np.ndarray  # (n_channels, n_kinds): fraction of time per distractor kind


def _shaft_montage(rng: np.random.Generator, shafts: dict[str, int], n_channels: int) -> tuple[list[str], np.ndarray]:
    """Draw shafts in random order until ``n_channels`` contacts are named (``LA1``, ``LA2`` …).

    Returns
    -------
    names : list of str, length n_channels
    shaft_of : ndarray, shape (n_channels,), int
        Index of each contact's shaft.
    """
    prefixes = sorted(shafts)
    order = rng.permutation(len(prefixes))
    names: list[str] = []
    shaft_of: list[int] = []
    for k, idx in enumerate(order):
        prefix = prefixes[idx]
        take = min(shafts[prefix], n_channels - len(names))
        names += [f"{prefix}{i}" for i in range(1, take + 1)]
        shaft_of += [k] * take
        if len(names) == n_channels:
            break
    k = len(order)
    while len(names) < n_channels:  # a pool too small for the count: add generic strips
        take = min(8, n_channels - len(names))
        names += [f"X{k}C{i}" for i in range(1, take + 1)]
        shaft_of += [k] * take
        k += 1
    return names, np.asarray(shaft_of)


def _choose_soz(rng: np.random.Generator, shaft_of: np.ndarray, n_soz: int) -> np.ndarray:
    """Mark ``n_soz`` contiguous contacts on one or two shafts as SOZ.

    Returns
    -------
    soz : ndarray, shape (n_channels,), bool
    """
    soz = np.zeros(len(shaft_of), dtype=bool)
    shafts, sizes = np.unique(shaft_of, return_counts=True)
    n_shafts = 2 if (n_soz >= 4 and len(shafts) >= 2 and rng.random() < 0.5) else 1
    counts = [n_soz] if n_shafts == 1 else [n_soz - n_soz // 2, n_soz // 2]
    candidates = list(rng.permutation(len(shafts)))
    for count in counts:
        # prefer a shaft that can hold the whole block
        fits = [i for i in candidates if sizes[i] >= count] or candidates
        pick = fits[0]
        candidates.remove(pick)
        idx = np.flatnonzero(shaft_of == shafts[pick])
        count = min(count, len(idx))
        start = int(rng.integers(0, len(idx) - count + 1))
        soz[idx[start : start + count]] = True
        if not candidates:
            break
    return soz


_PEAK_BANDS = ((4.0, 8.0, 1.0, 0.6), (8.0, 13.0, 1.2, 0.3), (14.0, 28.0, 3.0, 0.0), (35.0, 80.0, 12.0, 0.0))
"""Theta, alpha, beta and gamma spectral peaks: (low Hz, high Hz, width Hz, extra log10 gain range)."""


def _sample_peaks(rng: np.random.Generator, n_channels: int, config: SynthConfig) -> np.ndarray:
    """Per-channel spectral peaks (theta, alpha, beta, broad gamma) with random log gains.

    Returns
    -------
    peaks : ndarray, shape (n_channels, 4, 3)
        Centre frequency, log10 gain and width of each peak.
    """
    peaks = np.empty((n_channels, len(_PEAK_BANDS), 3))
    for j, (lo, hi, width, extra) in enumerate(_PEAK_BANDS):
        low, high = config.rhythm_gain_log_range
        peaks[:, j, 0] = rng.uniform(lo, hi, n_channels)
        peaks[:, j, 1] = rng.uniform(low, high + extra, n_channels)
        peaks[:, j, 2] = width
    return peaks


def sample_distractor_budget(rng: np.random.Generator, soz: np.ndarray, config: SynthConfig) -> np.ndarray:
    """Fraction of time each channel spends in each distractor kind.

    Returns
    -------
    budget : ndarray, shape (n_channels, len(DISTRACTOR_KINDS))
    """
    n_channels = len(soz)
    total = rng.uniform(*config.distractor_fraction, n_channels)
    shares = rng.dirichlet(np.asarray(config.distractor_mix) * config.distractor_mix_concentration, n_channels)
    budget = total[:, None] * shares
    budget[soz] *= np.asarray(config.soz_distractor_scale)
    return budget


def channel_parameters(rng: np.random.Generator, config: SynthConfig, centre: str, n: int) -> dict[str, np.ndarray]:
    """Per-channel background and spike parameters of ``n`` channels at ``centre`` (the ``SynthPatient`` fields).

    Returns
    -------
    params : dict
        ``amplitude_uv, beta, knee_hz, peaks, floor_log, line_gain, polarity, spike_gain``, each
        with ``n`` entries, drawn from ``rng`` in that order.
    """
    return {
        "amplitude_uv": config.centre_amplitude_uv[centre] * rng.lognormal(0.0, config.amplitude_log_sigma, n),
        "beta": rng.uniform(*config.beta_range, n),
        "knee_hz": rng.uniform(*config.knee_hz_range, n),
        "peaks": _sample_peaks(rng, n, config),
        "floor_log": rng.uniform(*config.noise_floor_log_range, n),
        "line_gain": config.centre_line_noise_uv[centre] * rng.lognormal(0.0, 0.5, n),
        "polarity": rng.choice([-1.0, 1.0], n),
        "spike_gain": rng.uniform(*config.spike_amplitude, n),
    }


def _sample_patient(rng: np.random.Generator, index: int, config: SynthConfig) -> SynthPatient:
    """Draw one patient's montage, SOZ and per-channel parameters from its centre's real table."""
    centre = CENTRES[index % len(CENTRES)]
    table = centre_table()[centre]
    n_runs_real = len(table["duration_s"])
    profile = int(rng.integers(n_runs_real))
    n_channels = int(table["n_good_channels"][profile])
    if config.max_channels is not None:
        n_channels = min(n_channels, config.max_channels)
    durations = [
        float(table["duration_s"][i]) * config.duration_scale
        for i in [profile] + list(rng.integers(n_runs_real, size=config.runs_per_patient - 1))
    ]
    line_freq = float(table["line_freq_hz"][0])
    if config.line_freq_hz and centre in config.line_freq_hz:
        line_freq = float(config.line_freq_hz[centre])
    names, shaft_of = _shaft_montage(rng, table["shafts"], n_channels)
    n_soz = int(np.clip(round(n_channels * config.soz_fraction * rng.uniform(0.8, 1.2)), 2, n_channels // 3))
    soz = _choose_soz(rng, shaft_of, n_soz)
    budget = sample_distractor_budget(rng, soz, config)
    spread = np.zeros(n_channels, dtype=bool)
    non_soz = np.flatnonzero(~soz)
    n_spread = int(round(len(non_soz) * rng.uniform(*config.spread_fraction)))
    spread[rng.choice(non_soz, size=n_spread, replace=False)] = True
    return SynthPatient(
        subject=f"synth{index + 1:02d}",
        centre=centre,
        sfreq=float(table["sfreq_hz"][profile]),
        line_freq=line_freq,
        acquisition=str(table["acquisition"][profile]),
        durations_s=durations,
        ch_names=names,
        soz=soz,
        shaft_of=shaft_of,
        **channel_parameters(rng, config, centre, n_channels),
        spread=spread,
        distractor_budget=budget,
    )


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
    for start in range(0, n_channels, _CHUNK_CHANNELS):
        stop = min(start + _CHUNK_CHANNELS, n_channels)
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


def _lowpass(x: np.ndarray, sfreq: float, f_stop: float, transition: float = _LOWPASS_TRANSITION_HZ) -> np.ndarray:
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


def _add_signatures(
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


def _abnormal_fraction(intervals: pd.DataFrame, channel: str, total_s: float) -> float:
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


# --------------------------------------------------------------------------------------------
# Public API
# --------------------------------------------------------------------------------------------


def _patient_seeds(seed: int, patient_index: int) -> np.random.SeedSequence:
    """The SeedSequence of patient ``patient_index``; identical whatever the cohort size."""
    return np.random.SeedSequence(seed).spawn(patient_index + 1)[patient_index]


def _seizure_markers(centre: str) -> tuple[str, str]:
    """The centre's most common seizure onset/offset wording in ds003029."""
    table = centre_table()[centre]
    return table["onset_marker"], table["offset_marker"]


def _synthesise_run(
    patient: SynthPatient, run_index: int, seeds: np.random.SeedSequence, config: SynthConfig
) -> tuple[Recording, pd.DataFrame]:
    """Synthesise run ``run_index`` (0-based) of ``patient`` from its own seed sequence."""
    noise_ss, distractor_ss, timing_ss, signature_ss, mimic_ss, line_ss = seeds.spawn(6)
    sfreq = patient.sfreq
    duration = patient.durations_s[run_index]
    n_times = int(round(duration * sfreq))
    total_s = n_times / sfreq
    data = background(np.random.default_rng(noise_ss), patient, n_times, config)
    add_distractors(np.random.default_rng(distractor_ss), data, patient, config)
    timing_rng = np.random.default_rng(timing_ss)
    sz_len = min(timing_rng.uniform(*config.seizure_duration_s), config.max_seizure_fraction * total_s)
    sz_on = min(timing_rng.uniform(0.25, 0.6) * total_s, total_s - sz_len - 1.0)
    intervals = []
    if config.signatures:
        intervals = _add_signatures(signature_ss, data, patient, config, (sz_on, sz_on + sz_len))
    add_spectral_mimics(np.random.default_rng(mimic_ss), data, patient, config, sz_len)
    data *= patient.amplitude_uv[:, None].astype(np.float32)
    add_line_noise(np.random.default_rng(line_ss), data, patient)
    table = pd.DataFrame(
        [(patient.ch_names[c], on, off, kind) for c, on, off, kind in intervals], columns=list(ABNORMAL_COLUMNS)
    )
    for ch in np.flatnonzero(patient.soz):  # the generator's promise: SOZ channels are mostly normal
        frac = _abnormal_fraction(table, patient.ch_names[ch], total_s)
        if frac > config.max_abnormal_fraction + 1e-9:
            raise AssertionError(
                f"sub-{patient.subject} {patient.ch_names[ch]}: abnormal {frac:.3f} of the run exceeds "
                f"max_abnormal_fraction={config.max_abnormal_fraction}."
            )
    onset_word, offset_word = _seizure_markers(patient.centre)
    recording = Recording(
        data=data,
        sfreq=sfreq,
        ch_names=list(patient.ch_names),
        ch_types=[patient.acquisition] * len(patient.ch_names),
        soz=patient.soz.copy(),
        events=[Event(round(sz_on, 3), 0.0, onset_word), Event(round(sz_on + sz_len, 3), 0.0, offset_word)],
        subject=patient.subject,
        centre=patient.centre,
        run=f"{run_index + 1:02d}",
        line_freq=patient.line_freq,
    )
    return recording, table.sort_values(["channel", "onset_s"], kind="stable").reset_index(drop=True)


def synthesise_recording(
    patient_index: int = 0, run: int = 1, *, seed: int = 0, config: SynthConfig | None = None
) -> tuple[Recording, pd.DataFrame]:
    """Synthesise one run of one patient in memory (the same signals ``generate_cohort`` writes).

    Parameters
    ----------
    patient_index : int
        0-based patient index; the centre is ``CENTRES[patient_index % 4]``.
    run : int
        1-based run number, at most ``config.runs_per_patient``.
    seed : int
        Cohort seed.
    config : SynthConfig, optional

    Returns
    -------
    recording : Recording
        Data (n_channels, n_times) float32 in µV, with ``soz`` labels and seizure events.
    abnormal : DataFrame, shape (n_intervals, 4)
        Columns ``channel, onset_s, offset_s, kind`` (kind in ``ABNORMAL_KINDS``).
    """
    config = config or SynthConfig()
    if patient_index < 0:
        raise ValueError(f"Invalid patient_index={patient_index}: expected a non-negative integer.")
    if not 1 <= run <= config.runs_per_patient:
        raise ValueError(f"Invalid run={run}: expected 1 … runs_per_patient={config.runs_per_patient}.")
    seeds = _patient_seeds(seed, patient_index)
    patient_ss, *run_ss = seeds.spawn(1 + config.runs_per_patient)
    patient = _sample_patient(np.random.default_rng(patient_ss), patient_index, config)
    return _synthesise_run(patient, run - 1, run_ss[run - 1], config)


# --------------------------------------------------------------------------------------------
# Writing (BIDS-like)
# --------------------------------------------------------------------------------------------


def _write_tsv(df: pd.DataFrame, path: Path) -> None:
    df.to_csv(path, sep="\t", index=False, lineterminator="\n", na_rep="n/a")


def _bids_base(subject: str, acquisition: str, run: str) -> str:
    return f"sub-{subject}_ses-presurgery_task-ictal_acq-{acquisition}_run-{run}"


def _extra_channels(recording: Recording) -> tuple[np.ndarray, list[str], list[str], list[str]]:
    """ds003029-like extra channels: an EKG (MISC, bad) and a ``$`` duplicate of the first contact.

    Returns
    -------
    data : ndarray, shape (2, n_times), float32
    names, types, status : list of str, length 2
    """
    n = recording.n_times
    t = np.arange(n) / recording.sfreq
    ekg = (400.0 * np.exp(-0.5 * ((t % 0.85 - 0.4) / 0.012) ** 2)).astype(np.float32)
    data = np.stack([ekg, recording.data[0]])
    return data, ["EKG1", f"${recording.ch_names[0]}"], ["MISC", "MISC"], ["bad", "good"]


def state_data_points(vhdr: Path, n_times: int) -> None:
    """Add ``DataPoints=<n_times>`` to a BrainVision header's ``[Common Infos]`` (pybv does not write it).

    With it a reader can tell a truncated ``.eeg`` from a shorter recording.

    Parameters
    ----------
    vhdr : Path
        A header without ``DataPoints``, rewritten in place.
    n_times : int
        Samples per channel in its data file.
    """
    lines = vhdr.read_text(encoding="utf-8").splitlines(keepends=True)
    if any(line.startswith("DataPoints=") for line in lines):
        raise ValueError(f"{vhdr} already states DataPoints.")
    at = next(i for i, line in enumerate(lines) if line.startswith("NumberOfChannels=")) + 1
    lines.insert(at, f"DataPoints={int(n_times)}\n")
    vhdr.write_text("".join(lines), encoding="utf-8")


def write_recording_bids(recording: Recording, out_dir: Path, *, extra_channels: bool = False) -> Path:
    """Write one Recording as BrainVision (float32 µV) plus BIDS sidecars under ``out_dir``.

    Parameters
    ----------
    recording : Recording
    out_dir : Path
        The cohort root; files go to ``sub-<id>/ses-presurgery/ieeg/``.
    extra_channels : bool
        Add ds003029-like EKG / ``$`` channels and mark the last iEEG contact bad in the sidecar.

    Returns
    -------
    vhdr : Path
        The written ``_ieeg.vhdr`` file; its header states ``DataPoints``.
    """
    from pybv import write_brainvision

    acquisition = recording.ch_types[0]
    folder = Path(out_dir) / f"sub-{recording.subject}" / "ses-presurgery" / "ieeg"
    folder.mkdir(parents=True, exist_ok=True)
    base = _bids_base(recording.subject, acquisition, recording.run)
    data, names = recording.data, list(recording.ch_names)
    types = [t.upper() for t in recording.ch_types]
    status = ["good"] * len(names)
    if extra_channels:
        extra, extra_names, extra_types, extra_status = _extra_channels(recording)
        data = np.concatenate([data, extra])
        names += extra_names
        types += extra_types
        status[len(recording.ch_names) - 1] = "bad"
        status += extra_status
    markers = [
        {"onset": int(round(e.onset * recording.sfreq)), "duration": 1, "description": e.description, "type": "Comment"}
        for e in recording.events
    ]
    write_brainvision(
        data=data * np.float32(1e-6),
        sfreq=recording.sfreq,
        ch_names=names,
        fname_base=f"{base}_ieeg",
        folder_out=folder,
        events=markers,
        resolution=1.0,
        unit="µV",
        overwrite=True,
    )
    state_data_points(folder / f"{base}_ieeg.vhdr", recording.n_times)
    channels = pd.DataFrame(
        {
            "name": names,
            "type": types,
            "units": "µV",
            "low_cutoff": 0.0,
            "high_cutoff": round(recording.sfreq / 2, 6),
            "sampling_frequency": recording.sfreq,
            "status": status,
            "status_description": "n/a",
        }
    )
    _write_tsv(channels, folder / f"{base}_channels.tsv")
    events = pd.DataFrame(
        {
            "onset": [e.onset for e in recording.events],
            "duration": [e.duration for e in recording.events],
            "trial_type": [e.description for e in recording.events],
            "value": list(range(1, len(recording.events) + 1)),
            "sample": [m["onset"] for m in markers],
        }
    )
    _write_tsv(events, folder / f"{base}_events.tsv")
    sidecar = {
        "TaskName": "ictal",
        "Manufacturer": "sss-viewer synthetic generator",
        "PowerLineFrequency": recording.line_freq,
        "SamplingFrequency": recording.sfreq,
        "SoftwareFilters": "n/a",
        "RecordingDuration": round(recording.duration_s, 6),
        "RecordingType": "continuous",
        "iEEGReference": "n/a",
        "ECOGChannelCount": types.count("ECOG"),
        "SEEGChannelCount": types.count("SEEG"),
        "MiscChannelCount": types.count("MISC"),
    }
    (folder / f"{base}_ieeg.json").write_text(json.dumps(sidecar, indent=4) + "\n")
    return folder / f"{base}_ieeg.vhdr"


def _dataset_description(seed: int, n_patients: int, config: SynthConfig) -> dict:
    return {
        "Name": "sss-viewer synthetic multi-centre iEEG cohort",
        "BIDSVersion": "1.4.0",
        "DatasetType": "raw",
        "GeneratedBy": [{"Name": "sss_viewer.io.synthetic.generate_cohort"}],
        "SynthSeed": seed,
        "SynthPatients": n_patients,
        "SynthConfig": config.to_dict(),
    }


def _cohort_row(recording: Recording, path: str) -> dict:
    """One ``cohort.tsv`` row for a written run (``path`` relative to the cohort root)."""
    return {
        "subject": recording.subject,
        "centre": recording.centre,
        "run": recording.run,
        "path": path,
        "sfreq": recording.sfreq,
        "line_freq": recording.line_freq,
        "n_channels": recording.n_channels,
        "duration_s": round(recording.duration_s, 6),
    }


def _write_tables(out: Path, cohort: pd.DataFrame, labels: pd.DataFrame, abnormal: list[pd.DataFrame]) -> None:
    """Write ``participants.tsv``, ``cohort.tsv``, ``labels.tsv`` and ``abnormal.tsv`` under ``out``."""
    first_runs = cohort.drop_duplicates("subject")
    participants = pd.DataFrame({"participant_id": "sub-" + first_runs["subject"], "site": first_runs["centre"]})
    _write_tsv(participants, out / "participants.tsv")
    _write_tsv(cohort, out / "cohort.tsv")
    _write_tsv(labels, out / "labels.tsv")
    columns = ["subject", "run", *ABNORMAL_COLUMNS]
    frames = [frame[columns] for frame in abnormal if not frame.empty]
    table = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=columns)
    table["onset_s"] = table["onset_s"].astype(float).round(4)
    table["offset_s"] = table["offset_s"].astype(float).round(4)
    _write_tsv(table, out / "abnormal.tsv")


def generate_cohort(
    out_dir: str | Path, n_patients: int, seed: int = 0, config: SynthConfig | None = None, *, progress: bool = True
) -> Path:
    """Write a synthetic multi-centre cohort (BIDS-like BrainVision tree plus label tables).

    Patients are assigned to JHH, NIH, UMMC, UMF round-robin. Layout::

        OUT/participants.tsv   participant_id, site
        OUT/cohort.tsv         subject, centre, run, path, sfreq, line_freq, n_channels, duration_s
        OUT/labels.tsv         subject, channel, soz (0/1)
        OUT/abnormal.tsv       subject, run, channel, onset_s, offset_s, kind
        OUT/sub-<id>/ses-presurgery/ieeg/sub-<id>_ses-presurgery_task-ictal_acq-<ecog|seeg>_run-<NN>_ieeg.vhdr …

    Parameters
    ----------
    out_dir : str or Path
        Output directory (created; existing files of the same names are overwritten).
    n_patients : int
        Number of patients.
    seed : int
        Cohort seed; the same seed gives byte-identical files.
    config : SynthConfig, optional
    progress : bool
        Show a progress bar over patients.

    Returns
    -------
    out_dir : Path
    """
    config = config or SynthConfig()
    check_positive_int("n_patients", n_patients)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    cohort_rows, label_rows, abnormal = [], [], []
    for k in tqdm(range(n_patients), desc="synthetic patients", unit="patient", disable=not progress or None):
        for run in range(1, config.runs_per_patient + 1):
            recording, intervals = synthesise_recording(k, run, seed=seed, config=config)
            vhdr = write_recording_bids(recording, out, extra_channels=config.extra_channels)
            cohort_rows.append(_cohort_row(recording, vhdr.relative_to(out).as_posix()))
            abnormal.append(intervals.assign(subject=recording.subject, run=recording.run))
            if run == 1:
                label_rows += [
                    {"subject": recording.subject, "channel": name, "soz": int(s)}
                    for name, s in zip(recording.ch_names, recording.soz)
                ]
            logger.info(
                "sub-%s run-%s (%s): %d channels (%d SOZ), %.1f s at %g Hz",
                recording.subject, recording.run, recording.centre, recording.n_channels,
                int(recording.soz.sum()), recording.duration_s, recording.sfreq,
            )  # fmt: skip
    _write_tables(out, pd.DataFrame(cohort_rows), pd.DataFrame(label_rows), abnormal)
    description = _dataset_description(seed, n_patients, config)
    (out / "dataset_description.json").write_text(json.dumps(description, indent=2) + "\n")
    return out

"""Configuration of the synthetic cohort: the ds003029 centres, ``SynthConfig`` and the per-centre table."""

from __future__ import annotations

import dataclasses
import json
import logging
from dataclasses import dataclass, field
from functools import lru_cache
from importlib import resources

from sss_viewer._validate import check_positive_int, check_range

logger = logging.getLogger(__name__)


CENTRES = ("JHH", "NIH", "UMMC", "UMF")
"""The four ds003029 centres, in the round-robin order patients are assigned to."""

ABNORMAL_KINDS = ("spike_episode", "hfo", "seizure", "seizure_spread")
"""Values of the ``kind`` column of the abnormal-interval table."""

ABNORMAL_COLUMNS = ("channel", "onset_s", "offset_s", "kind")

DISTRACTOR_KINDS = ("theta", "burst", "kcomplex", "muscle")
"""Benign transients every channel carries (see ``SynthConfig.distractor_mix``)."""

LOWPASS_TRANSITION_HZ = 6.0
"""Width of the raised-cosine roll-off that band-limits every SOZ signature."""

CHUNK_CHANNELS = 8
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
        if max(self.hfo_freq_hz) > self.signature_max_freq_hz - LOWPASS_TRANSITION_HZ:
            raise ValueError(
                f"Invalid hfo_freq_hz={self.hfo_freq_hz}: ripples must stay below "
                f"signature_max_freq_hz - {LOWPASS_TRANSITION_HZ:g} = "
                f"{self.signature_max_freq_hz - LOWPASS_TRANSITION_HZ:g} Hz."
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

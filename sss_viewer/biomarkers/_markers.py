"""The published SOZ markers as scorers: HFO and spike rates, the Epileptogenicity Index, spectral ratios.

Each wraps a detector of this package (``hfo``, ``spikes``, ``epileptogenicity``, ``spectral``) in
the :class:`~sss_viewer.biomarkers.base.BiomarkerScorer` contract: one value per channel and window
(an event rate per minute, an energy ratio, a power ratio), averaged over the clean windows into the
channel's value — except the Epileptogenicity Index, which is one value per channel by definition.
"""

from __future__ import annotations

import numpy as np

from sss_viewer.biomarkers._filtering import count_events_per_window
from sss_viewer.biomarkers._floors import window_robust_amplitude
from sss_viewer.biomarkers._spectral import energy_ratio, high_frequency_activity
from sss_viewer.biomarkers.base import BiomarkerScorer, ScorerInfo, WindowGrid
from sss_viewer.biomarkers.epileptogenicity import epileptogenicity_index
from sss_viewer.biomarkers.hfo import FAST_RIPPLE_BAND, RIPPLE_BAND, detect_hfos
from sss_viewer.biomarkers.spikes import detect_spikes
from sss_viewer.io.recording import Recording

EI_LOOKBACK_S = 5.0
"""The Epileptogenicity Index's change detection starts this long before the seizure-onset marker
(or at the recording's start): Page–Hinkley needs the pre-ictal baseline."""


def _rate_per_minute(events: list[np.ndarray], grid: WindowGrid) -> np.ndarray:
    """Events per minute in every window, shape (n_channels, n_windows)."""
    length_s = grid.length / grid.sfreq
    return count_events_per_window(events, grid.start_s, length_s) * (60.0 / length_s)


class RippleRateScorer(BiomarkerScorer):
    """Ripples (80–250 Hz) per minute, by the RMS detector of Staba et al. 2002."""

    info = ScorerInfo(
        name="ripple_rate",
        title="Ripple rate",
        unit="/min",
        reference="RMS detector, 80–250 Hz (Staba RJ, et al. J Neurophysiol 2002;88:1743)",
    )
    band = RIPPLE_BAND
    min_sfreq = 450.0
    """The band's top is clipped to 0.9 × Nyquist: at 450 Hz the ripples still reach 200 Hz."""

    def window_values(self, data: np.ndarray, grid: WindowGrid, recording: Recording) -> np.ndarray:
        events = detect_hfos(data, recording.sfreq, self.band, line_freq=recording.line_freq)
        return _rate_per_minute(events, grid)


class FastRippleRateScorer(RippleRateScorer):
    """Fast ripples (250–500 Hz, up to 0.9 × Nyquist) per minute, by the same detector."""

    info = ScorerInfo(
        name="fast_ripple_rate",
        title="Fast-ripple rate",
        unit="/min",
        reference="RMS detector, 250–500 Hz up to 0.9 × Nyquist (Staba RJ, et al. J Neurophysiol 2002;88:1743)",
    )
    band = FAST_RIPPLE_BAND
    min_sfreq = 780.0
    """Fast ripples need the band to reach 350 Hz below 0.9 × Nyquist."""


class SpikeRateScorer(BiomarkerScorer):
    """Interictal spikes per minute, by the envelope-distribution detector of Janča et al. 2015."""

    info = ScorerInfo(
        name="spike_rate",
        title="Spike rate",
        unit="/min",
        reference="envelope log-normal model, 10–60 Hz, k = 3.65 (Janča R, et al. Brain Topogr 2015;28:172)",
    )
    min_sfreq = 135.0
    """The 10–60 Hz envelope band must lie below 0.9 × Nyquist."""

    def window_values(self, data: np.ndarray, grid: WindowGrid, recording: Recording) -> np.ndarray:
        spikes = detect_spikes(data, recording.sfreq, line_freq=recording.line_freq)
        return _rate_per_minute(spikes, grid)


class SpikeRateAmplitudeScorer(SpikeRateScorer):
    """Spike rate, with channels of equal rate ordered by their robust amplitude (docs/results.md §8, rule 2).

    Short clips leave most channels without a detected spike, and a tie carries no information; the
    amplitude (1.4826 × MAD over the same artifact-free windows) orders them. The value and the heat
    map stay the spike rate; a channel with more spikes is never ranked below one with fewer.
    """

    info = ScorerInfo(
        name="spike_rate_amplitude",
        title="Spike rate (ties by amplitude)",
        unit="/min",
        reference="envelope log-normal model, 10–60 Hz, k = 3.65 (Janča R, et al. Brain Topogr 2015;28:172); "
        "equal rates ordered by robust amplitude (1.4826 × MAD)",
    )

    def tie_break_values(
        self, data: np.ndarray, grid: WindowGrid, recording: Recording, clean: np.ndarray
    ) -> np.ndarray:
        """Robust amplitude per channel over the windows the spike rate was taken from, shape (n_channels,)."""
        amplitude = window_robust_amplitude(data, grid)
        counts = clean.sum(axis=1)
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(counts > 0, np.where(clean, amplitude, 0.0).sum(axis=1) / np.maximum(counts, 1), np.nan)


class EnergyRatioScorer(BiomarkerScorer):
    """The energy ratio (β + γ)/(θ + α) of Bartolomei et al. 2008, averaged over windows."""

    info = ScorerInfo(
        name="energy_ratio",
        title="Energy ratio (β+γ)/(θ+α)",
        unit="ratio",
        reference="fast-to-slow energy ratio (Bartolomei F, et al. Brain 2008;131:1818)",
    )
    min_sfreq = 60.0

    def window_values(self, data: np.ndarray, grid: WindowGrid, recording: Recording) -> np.ndarray:
        return energy_ratio(data, recording.sfreq, grid.starts, grid.length, line_freq=recording.line_freq)


class HighFrequencyActivityScorer(BiomarkerScorer):
    """High-frequency activity: the share of 1–250 Hz power in 80–250 Hz, averaged over windows."""

    info = ScorerInfo(
        name="hfa",
        title="High-frequency activity",
        unit="power ratio",
        reference="80–250 Hz power relative to 1–250 Hz (interictal high-frequency activity, e.g. "
        "Arroyo-Romero et al. / Guirgis et al.)",
    )
    min_sfreq = 450.0

    def window_values(self, data: np.ndarray, grid: WindowGrid, recording: Recording) -> np.ndarray:
        return high_frequency_activity(data, recording.sfreq, grid.starts, grid.length, line_freq=recording.line_freq)


def seizure_onset(recording: Recording) -> float | None:
    """The recording's seizure-onset time (s): ``seizure_onset_s``, else its events' onset marker, else None."""
    if recording.seizure_onset_s is not None:
        return float(recording.seizure_onset_s)
    from sss_viewer.io.seizure_events import find_seizure_markers

    markers = find_seizure_markers(recording.events, source=recording.label)
    return None if markers.onset_s is None else float(markers.onset_s)


class EpileptogenicityScorer(BiomarkerScorer):
    """The Epileptogenicity Index (Bartolomei et al. 2008) of a recording with a seizure-onset marker.

    The heat map shows the energy ratio of every window; the channel value is the EI itself
    (Page–Hinkley detection from :data:`EI_LOOKBACK_S` before the onset marker, normalised to the
    top channel), computed on the artifact-free channels over the whole recording.
    """

    info = ScorerInfo(
        name="epileptogenicity",
        title="Epileptogenicity Index",
        unit="EI (0–1)",
        reference="energy ratio + Page–Hinkley detection (Bartolomei F, et al. Brain 2008;131:1818)",
    )
    min_sfreq = 60.0

    def check_fit(self, recording: Recording) -> str | None:
        reason = super().check_fit(recording)
        if reason is None and seizure_onset(recording) is None:
            reason = (
                f"The Epileptogenicity Index needs a seizure-onset marker; recording {recording.label} has none "
                "(add an onset annotation, e.g. 'sz onset', or set seizure_onset_s)."
            )
        return reason

    def window_values(self, data: np.ndarray, grid: WindowGrid, recording: Recording) -> np.ndarray:
        return energy_ratio(data, recording.sfreq, grid.starts, grid.length, line_freq=recording.line_freq)

    def channel_values(
        self, values: np.ndarray, clean: np.ndarray, data: np.ndarray, grid: WindowGrid, recording: Recording
    ) -> np.ndarray:
        onset = seizure_onset(recording)
        start = min(max(0.0, onset - EI_LOOKBACK_S), recording.duration_s)
        usable = clean.any(axis=1)
        ei = np.full(data.shape[0], np.nan)
        if usable.any():  # flagged channels take no part: a square wave would set N_0 for everyone
            result = epileptogenicity_index(data[usable], recording.sfreq, start, line_freq=recording.line_freq)
            ei[usable] = result.ei
        return ei

"""Synthetic patients: montage (shafts and contacts), SOZ choice and per-channel signal parameters.

Internal to the stage: not part of the public API (:mod:`sss_viewer.synth`'s ``__all__``, ``docs/api.md``).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

import numpy as np

from sss_viewer.synth.config import CENTRES, SynthConfig, centre_table

logger = logging.getLogger(__name__)


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


def sample_patient(rng: np.random.Generator, index: int, config: SynthConfig) -> SynthPatient:
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

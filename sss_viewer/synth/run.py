"""One synthetic run as a ``Recording``: a patient's signals, events and SOZ labels, deterministic per seed."""

from __future__ import annotations

import logging

import numpy as np
import pandas as pd

from sss_viewer.io.recording import Event, Recording
from sss_viewer.synth._patients import SynthPatient, sample_patient
from sss_viewer.synth._signals import (
    abnormal_fraction,
    add_distractors,
    add_line_noise,
    add_signatures,
    add_spectral_mimics,
    background,
)
from sss_viewer.synth.config import ABNORMAL_COLUMNS, SynthConfig, centre_table

logger = logging.getLogger(__name__)


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
        intervals = add_signatures(signature_ss, data, patient, config, (sz_on, sz_on + sz_len))
    add_spectral_mimics(np.random.default_rng(mimic_ss), data, patient, config, sz_len)
    data *= patient.amplitude_uv[:, None].astype(np.float32)
    add_line_noise(np.random.default_rng(line_ss), data, patient)
    table = pd.DataFrame(
        [(patient.ch_names[c], on, off, kind) for c, on, off, kind in intervals], columns=list(ABNORMAL_COLUMNS)
    )
    for ch in np.flatnonzero(patient.soz):  # the generator's promise: SOZ channels are mostly normal
        frac = abnormal_fraction(table, patient.ch_names[ch], total_s)
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
    patient = sample_patient(np.random.default_rng(patient_ss), patient_index, config)
    return _synthesise_run(patient, run - 1, run_ss[run - 1], config)

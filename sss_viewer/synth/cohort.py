"""A whole synthetic cohort on disk: every patient's runs, the cohort table, labels and abnormal intervals."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pandas as pd
from tqdm.auto import tqdm

from sss_viewer._validate import check_positive_int
from sss_viewer.synth.bids import (
    cohort_row,
    dataset_description,
    write_cohort_tables,
    write_recording_bids,
)
from sss_viewer.synth.config import SynthConfig
from sss_viewer.synth.run import synthesise_recording

logger = logging.getLogger(__name__)


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
            cohort_rows.append(cohort_row(recording, vhdr.relative_to(out).as_posix()))
            abnormal.append(intervals.assign(subject=recording.subject, run=recording.run))
            if run == 1:
                label_rows += [
                    {"subject": recording.subject, "channel": name, "soz": int(s)}
                    for name, s in zip(recording.ch_names, recording.soz)
                ]
            logger.info(
                "sub-%s run-%s (%s): %d channels (%d SOZ), %.1f s at %g Hz",
                recording.subject,
                recording.run,
                recording.centre,
                recording.n_channels,
                int(recording.soz.sum()),
                recording.duration_s,
                recording.sfreq,
            )
    write_cohort_tables(out, pd.DataFrame(cohort_rows), pd.DataFrame(label_rows), abnormal)
    description = dataset_description(seed, n_patients, config)
    (out / "dataset_description.json").write_text(json.dumps(description, indent=2) + "\n")
    return out

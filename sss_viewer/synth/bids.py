"""Writing synthetic runs as a BIDS-like dataset (BrainVision, sidecars, labels and abnormal-interval tables)."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import numpy as np
import pandas as pd

from sss_viewer.fileio import write_tsv
from sss_viewer.io.recording import Recording
from sss_viewer.synth.config import ABNORMAL_COLUMNS, SynthConfig

logger = logging.getLogger(__name__)


# --------------------------------------------------------------------------------------------
# Writing (BIDS-like)
# --------------------------------------------------------------------------------------------


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
    write_tsv(channels, folder / f"{base}_channels.tsv", na_rep="n/a")
    events = pd.DataFrame(
        {
            "onset": [e.onset for e in recording.events],
            "duration": [e.duration for e in recording.events],
            "trial_type": [e.description for e in recording.events],
            "value": list(range(1, len(recording.events) + 1)),
            "sample": [m["onset"] for m in markers],
        }
    )
    write_tsv(events, folder / f"{base}_events.tsv", na_rep="n/a")
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


def dataset_description(seed: int, n_patients: int, config: SynthConfig) -> dict:
    return {
        "Name": "sss-viewer synthetic multi-centre iEEG cohort",
        "BIDSVersion": "1.4.0",
        "DatasetType": "raw",
        "GeneratedBy": [{"Name": "sss_viewer.synth.cohort.generate_cohort"}],
        "SynthSeed": seed,
        "SynthPatients": n_patients,
        "SynthConfig": config.to_dict(),
    }


def cohort_row(recording: Recording, path: str) -> dict:
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


def write_cohort_tables(out: Path, cohort: pd.DataFrame, labels: pd.DataFrame, abnormal: list[pd.DataFrame]) -> None:
    """Write ``participants.tsv``, ``cohort.tsv``, ``labels.tsv`` and ``abnormal.tsv`` under ``out``."""
    first_runs = cohort.drop_duplicates("subject")
    participants = pd.DataFrame({"participant_id": "sub-" + first_runs["subject"], "site": first_runs["centre"]})
    write_tsv(participants, out / "participants.tsv", na_rep="n/a")
    write_tsv(cohort, out / "cohort.tsv", na_rep="n/a")
    write_tsv(labels, out / "labels.tsv", na_rep="n/a")
    columns = ["subject", "run", *ABNORMAL_COLUMNS]
    frames = [frame[columns] for frame in abnormal if not frame.empty]
    table = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=columns)
    table["onset_s"] = table["onset_s"].astype(float).round(4)
    table["offset_s"] = table["offset_s"].astype(float).round(4)
    write_tsv(table, out / "abnormal.tsv", na_rep="n/a")

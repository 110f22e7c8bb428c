"""BIDS iEEG datasets (OpenNeuro ds003029 rules by default): runs, participants, seizure times, SOZ labels.

mne-bids does what it is the reference for; the project's stricter checks sit on top. A BIDS root is read
as follows:

* runs are found with ``mne_bids.find_matching_paths`` (``ieeg`` data type and suffix; BrainVision,
  EDF/BDF, EEGLAB and FIF files), every subject, session, task, acquisition and run;
* each run is opened lazily with :func:`read_recording`, which opens a run laid out as BIDS with
  ``mne_bids.read_raw_bids`` (its ``_channels.tsv`` types, units and ``status=bad``, its ``_events.tsv``
  as the events, its ``_ieeg.json`` mains frequency); sidecars are the run's own, or inherited as
  mne-bids matches them (``BIDSPath.find_matching_sidecar``: a ``…_task-ictal_channels.tsv`` without a
  run entity serves every run of the task); names are parsed by ``get_entities_from_fname``
  (:mod:`sss_viewer.io._bids_paths`). On top: a listed type always wins over the name rules of
  :mod:`sss_viewer.io._channel_conventions`, which type only unlisted channels; ``$``-prefixed duplicates
  are dropped (every ``$`` channel the sidecar lists); the sidecars must agree with the data (same channel
  names, same sampling rate to 0.01 Hz) or the run is refused, where mne-bids would warn; an inherited
  sidecar must lie in the run's subject folder or at the root (not a link elsewhere);
* ``participants.tsv`` gives the centre (``site``), outcome and Engel/ILAE scores;
* the run's ``_events.tsv`` replaces the file's own annotations (an onset that is not a number is an
  error naming the line, where mne-bids drops the row), and its free-text seizure markers give
  ``seizure_onset_s``/``seizure_offset_s`` (:mod:`sss_viewer.io.seizure_events`);
* SOZ labels come from a user table (``subject, channel, soz``; TSV or CSV) when one is given, else
  from ``sourcedata/clinical_data_summary.xlsx``; SOZ names that match no channel are logged and
  kept in ``Recording.info["unmatched_soz"]``.

A run that cannot be read is skipped with a warning naming the file and the reason; the load goes on."""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from sss_viewer.io._bids_paths import find_bids_root
from sss_viewer.io._channel_conventions import duplicate_channels
from sss_viewer.io.readers import (
    SUPPORTED_FORMATS,
    RecordingReadError,
    bids_entities,
    bids_sidecar,
    check_inside,
    read_channels_tsv,
    read_recording,
    read_table_file,
)
from sss_viewer.io.recording import IEEG_CH_TYPES, Event, Recording
from sss_viewer.io.seizure_events import find_seizure_markers
from sss_viewer.io.soz_labels import match_soz, read_clinical_summary, read_soz_table
from sss_viewer.io.tables import read_table

logger = logging.getLogger(__name__)

PARTICIPANTS_FILE = "participants.tsv"
CLINICAL_SUMMARY = Path("sourcedata") / "clinical_data_summary.xlsx"
RATE_TOLERANCE_HZ = 0.01
"""Largest accepted difference between a sidecar's ``SamplingFrequency`` and the file's rate."""
_PARTICIPANT_FIELDS = {"outcome": "outcome", "engel_score": "engel_score", "ilae_score": "ilae_score"}


def is_bids_root(path: str | Path) -> bool:
    """True when ``path`` is a directory holding ``dataset_description.json`` or ``participants.tsv``.

    Parameters
    ----------
    path : str or Path
        Any path; it need not exist.

    Returns
    -------
    bool
        Whether ``path`` is a folder with either file directly in it (its subfolders are not searched).
    """
    path = Path(path)
    return path.is_dir() and ((path / "dataset_description.json").is_file() or (path / PARTICIPANTS_FILE).is_file())


def read_participants(root: Path) -> pd.DataFrame:
    """``participants.tsv`` indexed by subject label (``pt01``, not ``sub-pt01``).

    Raises
    ------
    FileNotFoundError
        The root has no ``participants.tsv``.
    ValueError
        It has no ``participant_id`` column, or lists a participant twice.
    """
    path = root / PARTICIPANTS_FILE
    if not path.is_file():
        raise FileNotFoundError(
            f"{root} is not a usable BIDS root: {PARTICIPANTS_FILE} is missing (expected {path}); "
            "it lists the subjects and their centre (site)."
        )
    check_inside(root, path, PARTICIPANTS_FILE)
    table = read_table(path, ("participant_id",), what="BIDS participants table")
    table["subject"] = table["participant_id"].str.removeprefix("sub-")
    repeated = sorted(set(table["subject"][table["subject"].duplicated()]))
    if repeated:
        raise ValueError(
            f"{path} lists participant(s) {', '.join('sub-' + r for r in repeated)} more than once; keep one row each."
        )
    return table.set_index("subject")


def find_runs(root: Path, subjects: Sequence[str] | None = None) -> list[Path]:
    """Every iEEG data file of the dataset (one per run), sorted.

    Parameters
    ----------
    root : Path
    subjects : sequence of str, optional
        Restrict to these subject labels.

    Returns
    -------
    paths : list of Path
    """
    import mne_bids

    extensions = [ext for ext in SUPPORTED_FORMATS if ext not in (".fif.gz",)]
    paths = mne_bids.find_matching_paths(
        root, subjects=list(subjects) if subjects else None, datatypes="ieeg", suffixes="ieeg", extensions=extensions
    )
    return sorted({p.fpath for p in paths})


def check_sidecars(recording: Recording) -> None:
    """Refuse a BIDS run whose ``_channels.tsv`` or ``_ieeg.json`` disagrees with its data file.

    ``$`` channels listed in the sidecar, or dropped by the reader, are not compared.

    Raises
    ------
    RecordingReadError
        Channel names differ (listed), or the sampling rates differ by more than 0.01 Hz.
    """
    path = recording.source
    channels_tsv = bids_sidecar(path, "channels.tsv")
    if channels_tsv is not None:
        listed = read_channels_tsv(channels_tsv).index.tolist()
        dropped = set(recording.info.get("dropped_duplicates", [])) | set(duplicate_channels(listed, listed))
        listed = [n for n in listed if n not in dropped]
        missing = [n for n in listed if n not in set(recording.ch_names)]
        extra = [n for n in recording.ch_names if n not in set(listed)]
        if missing or extra:
            raise RecordingReadError(
                f"{channels_tsv.name} disagrees with {path}: channels listed but not in the data file "
                f"{missing[:8]}{'…' if len(missing) > 8 else ''}; channels in the data file but not listed "
                f"{extra[:8]}{'…' if len(extra) > 8 else ''}."
            )
    ieeg_json = bids_sidecar(path, "ieeg.json")
    if ieeg_json is not None:
        try:
            rate = json.loads(ieeg_json.read_text(encoding="utf-8")).get("SamplingFrequency")
        except json.JSONDecodeError as exc:
            raise RecordingReadError(f"{ieeg_json} is not valid JSON: {exc}") from exc
        if isinstance(rate, int | float) and abs(rate - recording.sfreq) > RATE_TOLERANCE_HZ:
            raise RecordingReadError(
                f"{ieeg_json.name} says SamplingFrequency {rate:g} Hz but {path} is sampled at {recording.sfreq:g} Hz."
            )


def _apply_events(recording: Recording) -> None:
    """Find the seizure onset/offset among the run's events, its ``_events.tsv`` checked first.

    A run opened by ``mne_bids.read_raw_bids`` (``info["read_by"] == "mne-bids"``) already has its
    ``_events.tsv`` as its events, by mne-bids' event handling (``trial_type``, else ``value``; rows
    without a trial type left out). The table is still checked here, more strictly than mne-bids does: an
    ``onset`` that is not a number is an error naming the lines (mne-bids would drop those rows). A run
    read by MNE alone (a BIDS-named file outside a BIDS layout) takes its events from the table here.
    """
    events_tsv = bids_sidecar(recording.source, "events.tsv")
    if events_tsv is not None:
        table = _checked_events_table(events_tsv)
        if recording.info.get("read_by") != "mne-bids":
            durations = (
                pd.to_numeric(table["duration"], errors="coerce").fillna(0.0)
                if "duration" in table.columns
                else pd.Series(0.0, index=table.index)
            )
            recording.events = [
                Event(float(o), float(d), str(t)) for o, d, t in zip(table["onset"], durations, table["trial_type"])
            ]
    source = (events_tsv or recording.source).name
    markers = find_seizure_markers(recording.events, source=source)
    recording.seizure_onset_s, recording.seizure_offset_s = markers.onset_s, markers.offset_s
    recording.info["seizure_onset_text"] = markers.onset_text
    recording.info["seizure_offset_text"] = markers.offset_text


def _checked_events_table(events_tsv: Path) -> pd.DataFrame:
    """A run's ``_events.tsv`` with ``onset`` (numbers, s) and ``trial_type`` columns.

    Returns
    -------
    DataFrame
        One row per event, ``onset`` as float.

    Raises
    ------
    RecordingReadError
        A column is missing, or an onset is not a number (the lines named).
    """
    table = read_table_file(events_tsv, sep="\t", keep_default_na=False, na_values=["n/a"])
    if not {"onset", "trial_type"} <= set(table.columns):
        raise RecordingReadError(f"{events_tsv} lacks onset/trial_type columns; it has {list(table.columns)}.")
    onsets = pd.to_numeric(table["onset"], errors="coerce")
    if onsets.isna().any():
        lines = (np.flatnonzero(onsets.isna().to_numpy()) + 2).tolist()[:5]
        raise RecordingReadError(f"{events_tsv}: onset is not a number on lines {lines}.")
    return table.assign(onset=onsets.astype(float))


@dataclass
class SozLabels:
    """SOZ contact names per subject and where they came from.

    Parameters
    ----------
    contacts : dict
        ``{subject: [SOZ names]}``; subjects absent here have unknown labels.
    source : str
        The file the labels came from.
    """

    contacts: dict[str, list[str]] = field(default_factory=dict)
    source: str = ""

    def apply(self, recording: Recording) -> None:
        """Set ``recording.soz`` (None when the subject is unlabelled) and log unmatched names."""
        names = self.contacts.get(recording.subject)
        if names is None:
            return
        mask, unmatched = match_soz(recording.ch_names, names, source=self.source, recording=recording.label)
        recording.soz = mask
        recording.info["soz_source"] = self.source
        recording.info["unmatched_soz"] = unmatched
        if unmatched:
            logger.warning(
                "%s: SOZ names from %s that match no channel: %s",
                recording.label,
                Path(self.source).name,
                ", ".join(unmatched),
            )


def read_soz_labels(
    root: Path | None, labels: str | Path | None = None, subjects: Sequence[str] | None = None
) -> SozLabels:
    """SOZ names per subject from a user table, else the dataset's clinical spreadsheet, else none.

    Parameters
    ----------
    root : Path, optional
        BIDS root (for ``sourcedata/clinical_data_summary.xlsx``).
    labels : str or Path, optional
        A ``subject, channel, soz`` table (TSV/CSV); overrides the spreadsheet.
    subjects : sequence of str, optional
        The dataset's subject labels, to reconcile spreadsheet ids (``pt1`` → ``pt01``).
    """
    if labels is not None:
        table = read_soz_table(labels)
        contacts = {
            str(subject): group.loc[group["soz"], "channel"].astype(str).tolist()
            for subject, group in table.groupby("subject", sort=False)
        }
        return SozLabels(contacts, str(labels))
    if root is not None and (root / CLINICAL_SUMMARY).is_file():
        check_inside(root, root / CLINICAL_SUMMARY, "clinical summary")
        summary = read_clinical_summary(root / CLINICAL_SUMMARY, subjects)
        contacts = {row.subject: list(row.soz_contacts) for row in summary.itertuples() if len(row.soz_contacts)}
        return SozLabels(contacts, str(root / CLINICAL_SUMMARY))
    return SozLabels()


def read_bids_run(
    path: str | Path,
    *,
    root: Path | None = None,
    participants: pd.DataFrame | None = None,
    soz: SozLabels | None = None,
    preload: bool = False,
) -> Recording:
    """Read one run of a BIDS iEEG dataset with its sidecars, participant data and SOZ labels.

    Parameters
    ----------
    path : str or Path
        The run's data file (``…_ieeg.vhdr`` etc.).
    root : Path, optional
        The dataset root; found from ``dataset_description.json`` above ``path`` when None.
    participants : DataFrame, optional
        ``read_participants(root)``; read when None and the root has one.
    soz : SozLabels, optional
        ``read_soz_labels(root)``; read when None.
    preload : bool

    Returns
    -------
    Recording
        Lazy unless ``preload``; ``subject``, ``session``, ``run``, ``centre`` (participants'
        ``site``), ``seizure_onset_s``/``seizure_offset_s``, ``soz`` and ``info`` filled in.

    Raises
    ------
    RecordingReadError
        The file cannot be read, has no iEEG channel, or disagrees with its sidecars.
    """
    path = Path(path)
    recording = read_recording(path, preload=preload)
    check_sidecars(recording)
    entities = bids_entities(path)
    recording.subject = entities.get("subject", recording.subject)
    recording.run = entities.get("run", recording.run)
    recording.session = entities.get("session", "")
    root = root or find_bids_root(path)
    if participants is None and root is not None and (root / PARTICIPANTS_FILE).is_file():
        participants = read_participants(root)
    if participants is not None and recording.subject in participants.index:
        row = participants.loc[recording.subject]
        recording.centre = str(row.get("site", "") or "") if pd.notna(row.get("site", "")) else ""
        for column, key in _PARTICIPANT_FIELDS.items():
            if column in row and pd.notna(row[column]):
                recording.info[key] = row[column]
    _apply_events(recording)
    if soz is None:
        subjects = list(participants.index) if participants is not None else None
        soz = read_soz_labels(root, subjects=subjects)
    soz.apply(recording)
    return recording


def load_bids_cohort(
    root: str | Path,
    *,
    labels: str | Path | None = None,
    subjects: Sequence[str] | None = None,
    preload: bool = False,
) -> list[Recording]:
    """Load every iEEG run of a BIDS dataset.

    Parameters
    ----------
    root : str or Path
        The dataset root (with ``participants.tsv``).
    labels : str or Path, optional
        A ``subject, channel, soz`` table overriding ``sourcedata/clinical_data_summary.xlsx``.
    subjects : sequence of str, optional
        Load only these subjects.
    preload : bool

    Returns
    -------
    recordings : list of Recording
        One per readable run, lazy unless ``preload``. Unreadable runs are skipped with a warning.

    Raises
    ------
    FileNotFoundError
        ``root`` or its ``participants.tsv`` is missing.
    RecordingReadError
        No run could be read.
    """
    root = Path(root)
    if not root.is_dir():
        raise FileNotFoundError(f"BIDS root not found: {root}")
    participants = read_participants(root)
    soz = read_soz_labels(root, labels, subjects=list(participants.index))
    paths = find_runs(root, subjects)
    if not paths:
        raise RecordingReadError(
            f"No iEEG runs under {root} (looked for sub-*/[ses-*/]ieeg/*_ieeg.{{vhdr,edf,bdf,set,fif}})."
        )
    recordings, failures = [], []
    for path in paths:
        try:
            recording = read_bids_run(path, root=root, participants=participants, soz=soz, preload=preload)
        except (OSError, ValueError) as exc:
            logger.warning("Skipping %s: %s", path.relative_to(root), exc)
            failures.append(path)
            continue
        if recording.subject not in participants.index:
            logger.warning("%s: subject %s is not in participants.tsv (no centre).", path.name, recording.subject)
        recordings.append(recording)
    if not recordings:
        raise RecordingReadError(f"None of the {len(paths)} runs under {root} could be read.")
    logger.info("Loaded %d of %d runs from %s (%d skipped).", len(recordings), len(paths), root, len(failures))
    return recordings


def summarise_bids(root: str | Path, *, labels: str | Path | None = None) -> dict:
    """Check a BIDS copy and summarise it per centre, reading headers and sidecars only.

    Parameters
    ----------
    root : str or Path
    labels : str or Path, optional
        User SOZ table overriding the clinical spreadsheet.

    Returns
    -------
    summary : dict
        ``centres``: one dict per centre with ``centre, subjects, runs, channels`` (good iEEG
        channels summed over runs), ``hours``, ``sampling_rates_hz``, ``soz_fraction`` (SOZ among
        the good iEEG channels of labelled runs), ``labelled_subjects``, ``runs_without_onset``;
        ``unmatched_soz``: ``{subject: [names]}``; ``skipped``: ``{run file: reason}``;
        ``soz_source``; and the same totals over all centres in ``total``.
    """
    root = Path(root)
    participants = read_participants(root)
    soz = read_soz_labels(root, labels, subjects=list(participants.index))
    rows, skipped, unmatched = [], {}, {}
    for path in find_runs(root):
        try:
            rec = read_bids_run(path, root=root, participants=participants, soz=soz)
        except (OSError, ValueError) as exc:
            skipped[str(path.relative_to(root))] = str(exc)
            logger.warning("Skipping %s: %s", path.relative_to(root), exc)
            continue
        picks = rec.ieeg_picks()
        n_soz = int(rec.soz[picks].sum()) if rec.soz is not None else None
        if rec.info.get("unmatched_soz"):
            unmatched[rec.subject] = sorted(set(unmatched.get(rec.subject, [])) | set(rec.info["unmatched_soz"]))
        rows.append(
            (
                rec.centre or "unknown",
                rec.subject,
                len(picks),
                rec.duration_s / 3600,
                rec.sfreq,
                n_soz,
                rec.seizure_onset_s is None,
            )
        )
    table = pd.DataFrame(rows, columns=["centre", "subject", "channels", "hours", "sfreq", "n_soz", "no_onset"])

    def describe(group: pd.DataFrame, centre: str) -> dict:
        labelled = group[group["n_soz"].notna()]
        return {
            "centre": centre,
            "subjects": int(group["subject"].nunique()),
            "runs": len(group),
            "channels": int(group["channels"].sum()),
            "hours": round(float(group["hours"].sum()), 3),
            "sampling_rates_hz": sorted({round(float(r), 2) for r in group["sfreq"]}),
            "labelled_subjects": int(labelled["subject"].nunique()),
            "soz_fraction": round(float(labelled["n_soz"].sum() / labelled["channels"].sum()), 4)
            if len(labelled)
            else None,
            "runs_without_onset": int(group["no_onset"].sum()),
        }

    centres = [describe(g, c) for c, g in table.groupby("centre", sort=True)] if len(table) else []
    return {
        "root": str(root),
        "soz_source": soz.source or None,
        "centres": centres,
        "total": describe(table, "all") if len(table) else None,
        "unmatched_soz": unmatched,
        "skipped": skipped,
    }


def ieeg_channel_types() -> tuple[str, ...]:
    """Channel types kept for scoring (lower-case MNE names of BIDS ``ECOG``/``SEEG``/``DBS``)."""
    return IEEG_CH_TYPES

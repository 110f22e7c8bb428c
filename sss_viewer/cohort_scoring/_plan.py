"""Which recordings a cohort holds, and how a worker opens one of them.

The client lists the recordings of a root without opening them (a cohort folder's ``cohort.tsv``
rows, a BIDS root's iEEG runs), so a recording that cannot be read becomes a failed task with its
error instead of disappearing from the list. A worker re-opens its recording from the path: an open
``Recording`` holds a file reader, which is not sent between processes.
"""

from __future__ import annotations

import logging
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from sss_viewer.io.bids import (
    CLINICAL_SUMMARY,
    PARTICIPANTS_FILE,
    SozLabels,
    find_runs,
    is_bids_root,
    read_bids_run,
    read_participants,
    read_soz_labels,
)
from sss_viewer.io.bonn import is_bonn
from sss_viewer.io.cohort import COHORT_COLUMNS, COHORT_FILE, LABELS_FILE, apply_labels, read_cohort_run, read_labels
from sss_viewer.io.readers import bids_entities
from sss_viewer.io.recording import Recording
from sss_viewer.io.tables import read_table

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class RecordingTask:
    """One recording of a cohort, as listed before it is opened.

    Parameters
    ----------
    recording_id : str
        Its output folder's name (``OUT/<recording_id>/``): the file name without extensions, or,
        where two recordings share one, the path below the root with ``/`` as ``__``.
    path : Path
        The recording's file (absolute).
    source : str
        ``path`` relative to the root (for tables and messages).
    subject, session, run, centre : str
        As listed (``cohort.tsv`` columns, BIDS entities); empty when unknown.
    listed_duration : float, optional
        ``cohort.tsv``'s ``duration_s``, checked against the file when opened.
    """

    recording_id: str
    path: Path
    source: str
    subject: str = ""
    session: str = ""
    run: str = ""
    centre: str = ""
    listed_duration: float | None = None


@dataclass
class CohortSource:
    """What every worker needs to open any recording of one root (scattered once with the run).

    Parameters
    ----------
    root : Path
        The BIDS root or cohort folder (absolute).
    kind : {"cohort", "bids"}
    cohort_labels : DataFrame, optional
        A cohort folder's ``labels.tsv``.
    participants : DataFrame, optional
        A BIDS root's ``participants.tsv`` (:func:`~sss_viewer.io.bids.read_participants`).
    soz : SozLabels, optional
        A BIDS root's SOZ labels (its clinical sheet), as ``load_bids_cohort`` reads them.
    labels : Path, optional
        ``--labels``: the only source of labels for the subjects it names.
    labels_fallback : bool
        ``--labels-fallback``.
    label_files : list of Path
        Every file the labels come from (for the outputs' fingerprint).
    """

    root: Path
    kind: str
    cohort_labels: pd.DataFrame | None = None
    participants: pd.DataFrame | None = None
    soz: SozLabels | None = None
    labels: Path | None = None
    labels_fallback: bool = False
    label_files: list[Path] = field(default_factory=list)

    def open(self, task: RecordingTask) -> Recording:
        """Open ``task``'s recording (lazily) with its metadata and labels, as ``load_data`` would.

        Raises
        ------
        RecordingReadError, OSError, ValueError
            The file cannot be read, is truncated, disagrees with its sidecars or has no iEEG channel.
        """
        if self.kind == "cohort":
            recording = read_cohort_run(
                self.root,
                task.path,
                subject=task.subject,
                run=task.run,
                centre=task.centre,
                listed_duration=task.listed_duration,
                labels=self.cohort_labels,
            )
        else:
            recording = read_bids_run(task.path, root=self.root, participants=self.participants, soz=self.soz)
        if self.labels is not None:
            apply_labels([recording], self.labels, fallback=self.labels_fallback)
        return recording


def _recording_ids(paths: list[Path], root: Path) -> list[str]:
    """Output folder names: file names without extensions, made unique by their path below ``root`` where needed."""
    stems = [p.name.split(".", 1)[0] for p in paths]
    counts = Counter(stems)
    ids = []
    for path, stem in zip(paths, stems):
        if counts[stem] == 1:
            ids.append(stem)
            continue
        relative = path.relative_to(root) if path.is_relative_to(root) else path
        ids.append("__".join((*relative.parent.parts, stem)).lstrip("_/"))
    twice = sorted(i for i, n in Counter(ids).items() if n > 1)
    if twice:
        raise ValueError(f"{root} lists the same recording more than once: {', '.join(twice[:5])}.")
    return ids


def _cohort_tasks(root: Path) -> list[RecordingTask]:
    """The rows of ``root/cohort.tsv`` (read as ``load_cohort`` reads it)."""
    table_path = root / COHORT_FILE
    dtype = {"subject": str, "run": str, "centre": str}
    table = read_table(table_path, COHORT_COLUMNS, what="cohort table", dtype=dtype)
    if table.empty:
        raise ValueError(f"{table_path} lists no recording (expected one row per run: {', '.join(COHORT_COLUMNS)}).")
    paths = [(root / str(p)).absolute() for p in table["path"]]
    ids = _recording_ids(paths, root)
    tasks = []
    for row, path, recording_id in zip(table.itertuples(index=False), paths, ids):
        listed = getattr(row, "duration_s", None)
        task = RecordingTask(
            recording_id=recording_id,
            path=path,
            source=str(row.path),
            subject=str(row.subject),
            run=str(row.run),
            session=bids_entities(path).get("session", ""),
            centre=str(getattr(row, "centre", "") or ""),
            listed_duration=None if listed is None or pd.isna(listed) else listed,
        )
        tasks.append(task)
    return tasks


def _bids_tasks(root: Path, participants: pd.DataFrame) -> list[RecordingTask]:
    """Every iEEG run of a BIDS root, with its entities and the centre (``site``) of its subject."""
    paths = [p.absolute() for p in find_runs(root)]
    if not paths:
        raise ValueError(f"No iEEG runs under {root} (looked for sub-*/[ses-*/]ieeg/*_ieeg.{{vhdr,edf,bdf,set,fif}}).")
    tasks = []
    for path, recording_id in zip(paths, _recording_ids(paths, root)):
        entities = bids_entities(path)
        subject = entities.get("subject", "")
        site = participants["site"].get(subject, "") if "site" in participants.columns else ""
        task = RecordingTask(
            recording_id=recording_id,
            path=path,
            source=path.relative_to(root).as_posix(),
            subject=subject,
            session=entities.get("session", ""),
            run=entities.get("run", ""),
            centre="" if pd.isna(site) else str(site),
        )
        tasks.append(task)
    return tasks


def find_recordings(
    root: str | Path, *, labels: str | Path | None = None, labels_fallback: bool = False
) -> tuple[CohortSource, list[RecordingTask]]:
    """List the recordings of a cohort folder or BIDS root without opening them.

    Parameters
    ----------
    root : str or Path
        A cohort folder (``cohort.tsv``) or a BIDS root (``participants.tsv``), as ``load_data``
        takes them.
    labels : str or Path, optional
        ``--labels``: a ``subject, channel, soz`` table (checked here, applied on the workers).
    labels_fallback : bool

    Returns
    -------
    source : CohortSource
        How a worker opens them.
    tasks : list of RecordingTask
        In ``cohort.tsv`` order, or the BIDS runs sorted by path.

    Raises
    ------
    FileNotFoundError
        ``root`` (or ``labels``) does not exist, or is neither a cohort folder nor a BIDS root.
    ValueError
        A table lacks a column or lists nothing; a Bonn data set (its segments are not files).
    """
    root = Path(root).absolute()
    if not root.is_dir():
        raise FileNotFoundError(f"Cohort not found: {root} (expected a BIDS root or a cohort folder).")
    label_path = Path(labels).absolute() if labels is not None else None
    label_files = []
    if label_path is not None:
        read_labels(label_path)  # a missing, header-only or malformed table is refused before any work
        label_files.append(label_path)
    if is_bonn(root):
        raise ValueError(
            f"{root} is the Bonn data set: its segments are not recording files and are not scored as a cohort "
            "(use sss-viewer experiment bonn)."
        )
    if (root / COHORT_FILE).is_file():
        labels_tsv = root / LABELS_FILE
        cohort_labels = read_labels(labels_tsv) if labels_tsv.is_file() else None
        label_files += [labels_tsv] if labels_tsv.is_file() else []
        source = CohortSource(root, "cohort", cohort_labels=cohort_labels)
        tasks = _cohort_tasks(root)
    elif is_bids_root(root):
        participants = read_participants(root)
        soz = read_soz_labels(root, subjects=list(participants.index))
        label_files += [root / CLINICAL_SUMMARY] if (root / CLINICAL_SUMMARY).is_file() else []
        source = CohortSource(root, "bids", participants=participants, soz=soz)
        tasks = _bids_tasks(root, participants)
    else:
        raise FileNotFoundError(
            f"{root} is a directory without {COHORT_FILE} or {PARTICIPANTS_FILE}; pass a BIDS root or a cohort folder."
        )
    source.labels, source.labels_fallback, source.label_files = label_path, labels_fallback, label_files
    logger.info("%s: %d recording(s) to consider.", root, len(tasks))
    return source, tasks

"""Load a cohort directory (``cohort.tsv`` + optional ``labels.tsv``) or a single recording file.

A cohort directory is what ``generate_cohort`` writes, and what a user prepares for their own data::

    ROOT/cohort.tsv     subject, centre, run, path (relative to ROOT)   [+ any other columns]
    ROOT/labels.tsv     subject, channel, soz (0/1)                     (optional)
    ROOT/abnormal.tsv   subject, run, channel, onset_s, offset_s, kind  (optional, synthetic only)
"""

from __future__ import annotations

import logging
from pathlib import Path

import numpy as np
import pandas as pd

from sss_viewer.io.bids import find_bids_root, is_bids_root, load_bids_cohort, read_bids_run, read_soz_labels
from sss_viewer.io.bonn import is_bonn, load_bonn
from sss_viewer.io.readers import LENGTH_TOLERANCE_S, RecordingReadError, bids_entities, check_inside, read_recording
from sss_viewer.io.recording import Recording
from sss_viewer.io.seizure_events import with_seizure_times
from sss_viewer.io.soz_labels import match_soz, read_soz_table
from sss_viewer.io.tables import read_table

logger = logging.getLogger(__name__)

COHORT_FILE = "cohort.tsv"
LABELS_FILE = "labels.tsv"
ABNORMAL_FILE = "abnormal.tsv"
COHORT_COLUMNS = ("subject", "run", "path")
LABEL_COLUMNS = ("subject", "channel", "soz")
ABNORMAL_COLUMNS = ("subject", "run", "channel", "onset_s", "offset_s", "kind")


def _read_table(path: Path, required: tuple[str, ...], dtype: dict | None = None) -> pd.DataFrame:
    """Read a TSV and check that it has the ``required`` columns (:func:`sss_viewer.io.tables.read_table`)."""
    return read_table(path, required, what=f"{path.name} table", dtype=dtype)


def read_labels(path: str | Path) -> pd.DataFrame:
    """Read a SOZ label table (``subject``, ``channel``, ``soz`` as 0/1), tab- or comma-separated.

    Parameters
    ----------
    path : str or Path
        A ``labels.tsv`` (or ``.csv``).

    Returns
    -------
    labels : DataFrame, shape (n_rows, >= 3)
        ``subject`` and ``channel`` as str, ``soz`` as bool.
    """
    return read_soz_table(path)


def read_abnormal_intervals(root: str | Path) -> pd.DataFrame:
    """Read the ground-truth abnormal intervals of a synthetic cohort.

    Parameters
    ----------
    root : str or Path
        The cohort directory (holding ``abnormal.tsv``), or the table itself.

    Returns
    -------
    intervals : DataFrame, shape (n_intervals, 6)
        ``subject, run, channel`` (str), ``onset_s, offset_s`` (float s), ``kind``.
    """
    root = Path(root)
    path = root / ABNORMAL_FILE if root.is_dir() else root
    dtype = {"subject": str, "run": str, "channel": str, "kind": str}
    return _read_table(path, ABNORMAL_COLUMNS, dtype=dtype)


def soz_from_table(recording: Recording, labels: pd.DataFrame, source: str | Path | None = None) -> np.ndarray | None:
    """SOZ labels of ``recording``'s channels from its subject's label rows; None without rows.

    The one way a labels table labels channels, for every command (``train``, ``evaluate``,
    ``score --labels``, a cohort's ``labels.tsv``): :func:`sss_viewer.io.soz_labels.match_soz`
    (``channel_key``: ``G11`` labels ``POL G11``; ``lpt8``, ``LPT 8`` and ``LPT08`` label
    ``LPT08``). A recording without a subject (a plain clinical file) takes the rows of a table
    that labels a single subject.

    Parameters
    ----------
    recording : Recording
        Its ``info["unmatched_soz"]`` is set to the SOZ names matching no channel (logged).
    labels : DataFrame
        ``subject, channel, soz`` rows (:func:`read_labels`).
    source : str or Path, optional
        The table's file, named in errors.

    Returns
    -------
    soz : ndarray, shape (n_channels,), bool, or None
        None when the table has no row for the recording's subject.

    Raises
    ------
    ValueError
        A SOZ row matches several channels of the recording (the message names ``source``, the
        recording and the channels).
    """
    subjects = labels["subject"].astype(str)
    single = not recording.subject and subjects.nunique() == 1
    rows = labels if single else labels[subjects == recording.subject]
    if rows.empty:
        return None
    names = rows.loc[rows["soz"], "channel"].astype(str)
    mask, unmatched = match_soz(recording.ch_names, names, source=source, recording=recording.label)
    recording.info["unmatched_soz"] = unmatched
    if unmatched:
        logger.warning(
            "%s: SOZ channels in the labels table match no channel of the recording: %s", recording.label, unmatched
        )
    return mask


def _check_listed_duration(recording: Recording, listed, table: Path) -> None:
    """Refuse a run whose length differs from the ``duration_s`` that ``cohort.tsv`` lists for it (when listed)."""
    try:
        listed = float(listed)
    except (TypeError, ValueError):
        return
    if np.isfinite(listed) and abs(listed - recording.duration_s) > LENGTH_TOLERANCE_S + 2 / recording.sfreq:
        raise RecordingReadError(
            f"{recording.source} holds {recording.duration_s:.3f} s but {table} lists duration_s {listed:g}; "
            "the file looks truncated (or the table is out of date)."
        )


def read_cohort_run(
    root: str | Path,
    path: str | Path,
    *,
    subject: str,
    run: str,
    centre: str = "",
    listed_duration=None,
    labels: pd.DataFrame | None = None,
    preload: bool = False,
) -> Recording:
    """Read one run listed in ``ROOT/cohort.tsv`` as :func:`load_cohort` does (one row of it).

    Parameters
    ----------
    root : str or Path
        The cohort directory.
    path : str or Path
        The row's ``path`` (relative to ``root``).
    subject, run : str
        The row's ``subject`` and ``run``.
    centre : str
        The row's ``centre`` (empty when the table has none).
    listed_duration : float, optional
        The row's ``duration_s``: a file whose length differs is refused (a truncated data file).
    labels : DataFrame, optional
        ``ROOT/labels.tsv`` (:func:`read_labels`), labelling the run's channels.
    preload : bool

    Returns
    -------
    Recording
        With ``subject``, ``run`` and ``centre`` from the row.

    Raises
    ------
    RecordingReadError
        The file cannot be read or its length disagrees with its files or ``duration_s``.
    """
    root = Path(root)
    recording = read_recording(root / str(path), preload=preload)
    _check_listed_duration(recording, listed_duration, root / COHORT_FILE)
    recording.subject = str(subject)
    recording.run = str(run)
    recording.centre = str(centre or "")
    if labels is not None:
        recording.soz = soz_from_table(recording, labels, root / LABELS_FILE)
    return recording


def load_cohort(root: str | Path, *, preload: bool = False) -> list[Recording]:
    """Load every run listed in ``ROOT/cohort.tsv``, with SOZ labels from ``ROOT/labels.tsv`` if present.

    Parameters
    ----------
    root : str or Path
        Cohort directory.
    preload : bool
        Passed to ``read_recording``.

    Returns
    -------
    recordings : list of Recording
        In ``cohort.tsv`` order, with ``subject``, ``centre`` and ``run`` from the table. Runs that
        fail to load, or whose length disagrees with what the files or the table's ``duration_s``
        state (a truncated data file), are skipped with a warning naming them.

    Raises
    ------
    FileNotFoundError
        ``root`` or its ``cohort.tsv`` is missing.
    RecordingReadError
        No run could be loaded.
    """
    root = Path(root)
    if not root.is_dir():
        raise FileNotFoundError(f"Cohort directory not found: {root}")
    table = _read_table(root / COHORT_FILE, COHORT_COLUMNS, dtype={"subject": str, "run": str, "centre": str})
    labels_file = root / LABELS_FILE
    labels = read_labels(check_inside(root, labels_file, LABELS_FILE)) if labels_file.is_file() else None
    recordings, failures = [], []
    for row in table.itertuples(index=False):
        path = root / str(row.path)
        try:
            recording = read_cohort_run(
                root,
                row.path,
                subject=row.subject,
                run=row.run,
                centre=getattr(row, "centre", ""),
                listed_duration=getattr(row, "duration_s", None),
                labels=labels,
                preload=preload,
            )
        except (OSError, ValueError) as exc:
            logger.warning("Skipping sub-%s run-%s (%s): %s", row.subject, row.run, path, exc)
            failures.append(str(path))
            continue
        recordings.append(recording)
    if not recordings:
        raise RecordingReadError(
            f"No run of the cohort {root} could be loaded (tried {len(failures)}: {failures[:3]})."
        )
    logger.info("Loaded %d of %d runs from %s.", len(recordings), len(table), root)
    return recordings


def load_recording(path: str | Path, *, preload: bool = False, require_ieeg: bool = True) -> Recording:
    """Read one recording file; inside a BIDS dataset, with its sidecars, participant data and SOZ labels.

    The one way a single recording is opened (the CLI, the viewer, the cohort loader). A BIDS run
    (``sub-…`` file under a folder with ``dataset_description.json``) is read with
    :func:`sss_viewer.io.bids.read_bids_run`: events, seizure times, centre, and SOZ labels from
    ``labels.tsv`` at the BIDS root when there is one (a synthetic cohort's or the demo's), else from
    the dataset's clinical spreadsheet. Any other file is read with ``read_recording``, its seizure
    times taken from its own annotations (:func:`sss_viewer.io.seizure_events.with_seizure_times`).

    Parameters
    ----------
    path : str or Path
        A file ``read_recording`` accepts.
    preload : bool
    require_ieeg : bool
        Refuse a file without iEEG channels (False opens it for reading, as the viewer does).

    Returns
    -------
    Recording
    """
    path = Path(path)
    root = find_bids_root(path) if path.is_file() and "subject" in bids_entities(path) else None
    if root is None:
        return with_seizure_times(read_recording(path, preload=preload, require_ieeg=require_ieeg))
    labels = root / LABELS_FILE
    if labels.is_file():
        check_inside(root, labels, LABELS_FILE)
    soz = read_soz_labels(root, labels=labels) if labels.is_file() else None  # None: the clinical sheet, ids reconciled
    return read_bids_run(path, root=root, soz=soz, preload=preload)


def apply_labels(recordings: list[Recording], path: str | Path, *, fallback: bool = False) -> list[str]:
    """Label ``recordings`` from an explicit ``subject, channel, soz`` table, the only source for the subjects it names.

    Parameters
    ----------
    recordings : list of Recording
        Modified in place: ``soz`` from the table, ``info["soz_source"]`` its path.
    path : str or Path
        The table (:func:`read_labels`; a table without rows is an error).
    fallback : bool
        What a recording whose subject the table does not name keeps: False (default) no labels
        (``soz`` None, ``info["labels_excluded"]`` set: training and evaluation leave it out);
        True the data's own labels (``labels.tsv`` of a cohort, a BIDS dataset's clinical sheet).

    Returns
    -------
    unnamed : list of str
        The subjects of the data the table does not name (reported with a warning: count and names).
    """
    path = Path(path)
    table = read_labels(path)
    unnamed: dict[str, None] = {}
    for recording in recordings:
        soz = soz_from_table(recording, table, path)
        if soz is not None:
            recording.soz = soz
            recording.info["soz_source"] = str(path)
            continue
        unnamed[recording.subject or recording.label] = None
        if not fallback:
            recording.soz = None
            recording.info["soz_source"] = None
            recording.info["labels_excluded"] = str(path)
    if unnamed:
        what = (
            "they keep the data's own labels (--labels-fallback)"
            if fallback
            else (
                "they are left unlabelled: not trained or evaluated on (--labels-fallback uses the data's own labels)"
            )
        )
        logger.warning(
            "%s names no label for %d subject(s) of the data: %s; %s.", path, len(unnamed), ", ".join(unnamed), what
        )
    return list(unnamed)


def load_data(
    path: str | Path, *, preload: bool = False, labels: str | Path | None = None, labels_fallback: bool = False
) -> list[Recording]:
    """Load the CLI's DATA argument: a BIDS root, a cohort directory or a single recording file.

    Parameters
    ----------
    path : str or Path
        A BIDS dataset root (``participants.tsv``/``dataset_description.json``), a directory with
        ``cohort.tsv``, the Bonn data set (its ``.npz`` or folder: sets C and D, D = SOZ; see
        :mod:`sss_viewer.io.bonn`), or a file ``read_recording`` accepts (read as a BIDS run when it
        sits in one).
    preload : bool
    labels : str or Path, optional
        A ``subject, channel, soz`` table (TSV/CSV): the only source of labels for the subjects it
        names (see :func:`apply_labels`).
    labels_fallback : bool
        With ``labels``: subjects it does not name keep the data's own labels (default: none).

    Returns
    -------
    recordings : list of Recording
        One element for a single file.
    """
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"Data not found: {path} (expected a BIDS root, a cohort folder or a recording file).")
    if is_bonn(path):
        recordings = load_bonn(path)
    elif path.is_dir():
        if (path / COHORT_FILE).is_file():
            recordings = load_cohort(path, preload=preload)
        elif is_bids_root(path):
            recordings = load_bids_cohort(path, preload=preload)
        else:
            raise FileNotFoundError(
                f"{path} is a directory without {COHORT_FILE} or participants.tsv; pass a BIDS root, "
                "a cohort directory or a recording file."
            )
    else:
        recordings = [load_recording(path, preload=preload)]
    if labels is not None:
        apply_labels(recordings, labels, fallback=labels_fallback)
    return recordings

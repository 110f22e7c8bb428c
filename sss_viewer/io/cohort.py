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

from sss_viewer.io.bonn import is_bonn, load_bonn
from sss_viewer.io.bids import find_bids_root, is_bids_root, load_bids_cohort, read_bids_run
from sss_viewer.io.readers import RecordingReadError, bids_entities, read_recording
from sss_viewer.io.soz_labels import match_soz, read_soz_table
from sss_viewer.recording import Recording

logger = logging.getLogger(__name__)

COHORT_FILE = "cohort.tsv"
LABELS_FILE = "labels.tsv"
ABNORMAL_FILE = "abnormal.tsv"
COHORT_COLUMNS = ("subject", "run", "path")
LABEL_COLUMNS = ("subject", "channel", "soz")
ABNORMAL_COLUMNS = ("subject", "run", "channel", "onset_s", "offset_s", "kind")


def _read_table(path: Path, required: tuple[str, ...], dtype: dict | None = None) -> pd.DataFrame:
    """Read a TSV and check that it has the ``required`` columns."""
    if not path.is_file():
        raise FileNotFoundError(f"Table not found: {path}")
    table = pd.read_csv(path, sep="\t", dtype=dtype, keep_default_na=False, na_values=["n/a"])
    missing = [c for c in required if c not in table.columns]
    if missing:
        raise ValueError(f"{path} lacks columns {missing}; it has {list(table.columns)}.")
    return table


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


def _soz_vector(recording: Recording, labels: pd.DataFrame) -> np.ndarray | None:
    """SOZ labels of ``recording``'s channels from its subject's label rows; None without rows.

    Channels are matched with ``channel_key`` (``G11`` labels ``POL G11``), as ``sss-viewer score
    --labels`` does. A recording without a subject (a plain clinical file) takes the rows of a
    table that labels a single subject, also as ``score`` does.
    """
    subjects = labels["subject"].astype(str)
    single = not recording.subject and subjects.nunique() == 1
    rows = labels if single else labels[subjects == recording.subject]
    if rows.empty:
        return None
    mask, unmatched = match_soz(recording.ch_names, rows.loc[rows["soz"], "channel"].astype(str))
    recording.info["unmatched_soz"] = unmatched
    if unmatched:
        logger.warning("%s: SOZ channels in the labels table match no channel of the recording: %s", recording.label, unmatched)
    return mask


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
        fail to load are skipped with a warning naming them.

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
    labels = read_labels(root / LABELS_FILE) if (root / LABELS_FILE).is_file() else None
    recordings, failures = [], []
    for row in table.itertuples(index=False):
        path = root / str(row.path)
        try:
            recording = read_recording(path, preload=preload)
        except (OSError, ValueError) as exc:
            logger.warning("Skipping sub-%s run-%s (%s): %s", row.subject, row.run, path, exc)
            failures.append(str(path))
            continue
        recording.subject = str(row.subject)
        recording.run = str(row.run)
        recording.centre = str(getattr(row, "centre", "") or "")
        if labels is not None:
            recording.soz = _soz_vector(recording, labels)
        recordings.append(recording)
    if not recordings:
        raise RecordingReadError(
            f"No run of the cohort {root} could be loaded (tried {len(failures)}: {failures[:3]})."
        )
    logger.info("Loaded %d of %d runs from %s.", len(recordings), len(table), root)
    return recordings


def load_recording(path: str | Path, *, preload: bool = False) -> Recording:
    """Read one recording file; inside a BIDS dataset, with its sidecars, participant data and SOZ labels.

    Parameters
    ----------
    path : str or Path
        A file ``read_recording`` accepts.
    preload : bool

    Returns
    -------
    Recording
    """
    path = Path(path)
    if path.is_file() and "subject" in bids_entities(path) and find_bids_root(path) is not None:
        return read_bids_run(path, preload=preload)
    return read_recording(path, preload=preload)


def load_data(path: str | Path, *, preload: bool = False, labels: str | Path | None = None) -> list[Recording]:
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
        A ``subject, channel, soz`` table (TSV/CSV) overriding the data's own labels.

    Returns
    -------
    recordings : list of Recording
        One element for a single file.
    """
    path = Path(path)
    if is_bonn(path):
        recordings = load_bonn(path)
    elif path.is_dir():
        if (path / COHORT_FILE).is_file():
            recordings = load_cohort(path, preload=preload)
        elif is_bids_root(path):
            return load_bids_cohort(path, labels=labels, preload=preload)
        else:
            raise FileNotFoundError(
                f"{path} is a directory without {COHORT_FILE} or participants.tsv; pass a BIDS root, "
                "a cohort directory or a recording file."
            )
    else:
        recordings = [load_recording(path, preload=preload)]
    if labels is not None:
        table = read_labels(labels)
        for recording in recordings:
            soz = _soz_vector(recording, table)
            if soz is not None:
                recording.soz = soz
    return recordings

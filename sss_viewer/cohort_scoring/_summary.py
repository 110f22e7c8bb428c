"""The cohort's tables: one summary row per recording (``cohort.csv``) and the patients' rankings (``patients.csv``).

Internal to the stage: not part of the public API (:mod:`sss_viewer.cohort_scoring`'s ``__all__``, ``docs/api.md``).
"""

from __future__ import annotations

import logging
import math
from pathlib import Path

import numpy as np
import pandas as pd

from sss_viewer.cohort_scoring._plan import RecordingTask
from sss_viewer.cohort_scoring.outputs import CHANNELS
from sss_viewer.evaluation.patient_ranking import rank_patient_channels
from sss_viewer.metrics import binary_auc, unscored_last

logger = logging.getLogger(__name__)

COHORT_COLUMNS = (
    "recording",
    "subject",
    "session",
    "run",
    "centre",
    "source",
    "duration_s",
    "channels_scored",
    "excluded",
    "n_soz",
    "auc",
    "top_channels",
    "status",
    "error",
)
"""``cohort.csv``'s columns, one row per recording of the cohort."""
TOP_CHANNELS = 5
"""Channels named in a row's ``top_channels``."""
OK, SKIPPED, FAILED = "ok", "skipped", "failed"
"""A row's ``status``: scored by this run, up to date from an earlier run (not scored again), not scored."""


def channel_auc(channels: pd.DataFrame) -> float:
    """AUC of the channel scores against the labels; NaN without labels or without both classes."""
    if "label" not in channels:
        return math.nan
    known = channels.dropna(subset=["label"])
    labels = known["label"].astype(int)
    if labels.nunique() < 2:
        return math.nan
    return binary_auc(unscored_last(known["score"].to_numpy(float)), labels.to_numpy())


def top_channels(channels: pd.DataFrame, n: int = TOP_CHANNELS) -> str:
    """The ``n`` highest-ranked channels with their scores: ``"A1 0.83; A2 0.71; …"``."""
    ranked = channels[np.isfinite(channels["score"].to_numpy(float))].sort_values("rank").head(n)
    return "; ".join(f"{name} {score:.2f}" for name, score in zip(ranked["channel"], ranked["score"]))


def recording_row(task: RecordingTask, recording, channels: pd.DataFrame, excluded: pd.DataFrame) -> dict:
    """The ``cohort.csv`` row of a scored recording (metadata as the opened recording states it)."""
    n_soz = int(np.count_nonzero(channels["label"] == 1)) if "label" in channels else None
    return {
        "recording": task.recording_id,
        "subject": recording.subject or task.subject,
        "session": recording.session or task.session,
        "run": recording.run or task.run,
        "centre": recording.centre or task.centre,
        "source": task.source,
        "duration_s": float(recording.duration_s),
        "channels_scored": len(channels),
        "excluded": len(excluded),
        "n_soz": n_soz,
        "auc": _json_float(channel_auc(channels)),
        "top_channels": top_channels(channels),
        "status": OK,
        "error": "",
    }


def failed_row(task: RecordingTask, error: str) -> dict:
    """The ``cohort.csv`` row of a recording that could not be scored."""
    row = dict.fromkeys(COHORT_COLUMNS)
    row.update(
        recording=task.recording_id,
        subject=task.subject,
        session=task.session,
        run=task.run,
        centre=task.centre,
        source=task.source,
        status=FAILED,
        error=error,
    )
    return row


def _json_float(value: float) -> float | None:
    return None if value is None or math.isnan(value) else float(value)


def cohort_table(rows: list[dict]) -> pd.DataFrame:
    """``cohort.csv``: ``rows`` (in the cohort's order) with :data:`COHORT_COLUMNS`."""
    table = pd.DataFrame(rows, columns=list(COHORT_COLUMNS))
    for column in ("channels_scored", "excluded", "n_soz"):
        table[column] = table[column].astype("Int64")
    return table


def short_run_name(recording: str, subject: str | None) -> str:
    """A recording's name within its subject, for ``run_scores``: ``ses-presurgery_task-ictal_run-01``.

    The ``sub-<subject>_`` prefix and the ``_ieeg`` suffix of a BIDS name say nothing within one
    patient's row; other names are kept whole.
    """
    name = recording
    for prefix in (f"sub-{subject}_", f"{subject}_") if subject else ():
        if name.startswith(prefix) and len(name) > len(prefix):
            name = name[len(prefix) :]
            break
    return name[: -len("_ieeg")] if name.endswith("_ieeg") and len(name) > len("_ieeg") else name


def run_channels(out: Path, cohort: pd.DataFrame) -> pd.DataFrame:
    """Every scored recording's ``channels.csv`` with its ``subject`` and ``run`` (= the recording's id).

    Parameters
    ----------
    out : Path
        The output folder.
    cohort : DataFrame
        :func:`cohort_table`; rows with status ok or skipped are read.

    Returns
    -------
    run_channels : DataFrame
        ``subject, run, channel, score`` (+ ``label``), the input of
        :func:`~sss_viewer.evaluation.patient_ranking.rank_patient_channels`.
    """
    tables = []
    for row in cohort[cohort["status"].isin([OK, SKIPPED])].itertuples(index=False):
        path = out / row.recording / CHANNELS
        try:
            channels = pd.read_csv(path, dtype={"channel": str}, keep_default_na=False, na_values=[""])
        except pd.errors.EmptyDataError:
            raise ValueError(
                f"{path} is empty (edited or cut after its run finished); rescore that recording: sss-viewer score "
                "MODEL ROOT --out OUT --overwrite."
            ) from None
        tables.append(channels.assign(subject=row.subject or "", run=short_run_name(row.recording, row.subject)))
    if not tables:
        return pd.DataFrame(columns=["subject", "run", "channel", "score"])
    table = pd.concat(tables, ignore_index=True)
    unscored = ~np.isfinite(table["score"].to_numpy(float))
    if unscored.any():  # no artifact-free window in that run: the patient's mean is over the runs that scored it
        logger.info(
            "patients.csv: %d run channel(s) without a score (artifacts) left out of the means", int(unscored.sum())
        )
    columns = ["subject", "run", "channel", "score", *(["label"] if "label" in table else [])]
    return table.loc[~unscored, columns]


def patients_table(out: Path, cohort: pd.DataFrame) -> pd.DataFrame:
    """``patients.csv``: each patient's channels ranked by the mean of their runs' scores (each run's kept)."""
    return rank_patient_channels(run_channels(out, cohort))

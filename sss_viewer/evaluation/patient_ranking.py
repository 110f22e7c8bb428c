"""Patient-level channel ranking: one SOZ score per channel of a patient over all of their runs.

A patient usually has several recordings (runs); the model scores each on its own. The patient's
score of a channel is the mean of the scores the runs gave it, and each run's contribution is kept
beside it so a clinician can see whether one run carries the ranking.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from sss_viewer.io._channel_names import channel_key

RUN_COLUMNS = ("subject", "run", "channel", "score")
"""Columns a run-channel table must have (``label`` is optional: 1 SOZ, 0 not, NaN unknown)."""


def rank_patient_channels(run_channels: pd.DataFrame) -> pd.DataFrame:
    """Rank each patient's channels by the mean of their runs' channel scores.

    Channels of the same patient are matched across runs by :func:`~sss_viewer.io._channel_names.channel_key`
    (``POL G11`` in one export and ``G11`` in another are one contact); the name shown is the one of
    the first run that scored it.

    Parameters
    ----------
    run_channels : DataFrame
        One row per (run, channel) scored: ``subject, run, channel, score`` (+ ``label``), e.g. the
        ``channels.csv`` of every run with the run and subject added.

    Returns
    -------
    patients : DataFrame
        One row per (subject, channel), sorted by subject then rank: ``subject, channel, score``
        (mean over the runs that scored it), ``min_score, max_score, n_runs``, ``runs`` (number of
        runs of that subject), ``rank`` (1 = highest score within the subject), ``run_scores``
        (``"run=score; …"`` in run order: every run's contribution) and ``label`` when given.

    Raises
    ------
    ValueError
        A required column is missing, or a run scores one contact twice.
    """
    missing = [c for c in RUN_COLUMNS if c not in run_channels.columns]
    if missing:
        raise ValueError(f"Run-channel table lacks column(s) {', '.join(missing)} (expected {', '.join(RUN_COLUMNS)}).")
    table = run_channels.copy()
    table["subject"] = table["subject"].fillna("").astype(str)
    table["run"] = table["run"].astype(str)
    table["key"] = [channel_key(str(name)) for name in table["channel"]]
    twice = table[table.duplicated(["subject", "run", "key"], keep=False)]
    if len(twice):
        row = twice.iloc[0]
        same = twice[(twice["run"] == row["run"]) & (twice["key"] == row["key"])]
        names = ", ".join(sorted(same["channel"].astype(str)))
        raise ValueError(f"Run {row['run']} of subject {row['subject'] or '?'} scores one contact twice ({names}).")
    has_label = "label" in table.columns
    rows = []
    for subject, runs in table.groupby("subject", sort=True):
        run_order = list(dict.fromkeys(runs["run"]))
        for _, group in runs.groupby("key", sort=False):
            group = group.set_index("run").loc[[r for r in run_order if r in set(group["run"])]]
            scores = group["score"].to_numpy(dtype=float)
            row = {
                "subject": subject,
                "channel": str(group["channel"].iloc[0]),
                "score": float(np.mean(scores)),
                "min_score": float(np.min(scores)),
                "max_score": float(np.max(scores)),
                "n_runs": len(scores),
                "runs": len(run_order),
                "run_scores": "; ".join(f"{run}={score:.3f}" for run, score in zip(group.index, scores, strict=True)),
            }
            if has_label:
                known = group["label"].dropna()
                row["label"] = float(known.max()) if len(known) else np.nan
            rows.append(row)
    columns = ["subject", "channel", "score", "min_score", "max_score", "n_runs", "runs", "rank", "run_scores"]
    if has_label:
        columns.append("label")
    if not rows:
        return pd.DataFrame(columns=columns)
    patients = pd.DataFrame(rows)
    patients = patients.sort_values(["subject", "score", "channel"], ascending=[True, False, True], kind="stable")
    patients["rank"] = patients.groupby("subject").cumcount() + 1
    return patients[columns].reset_index(drop=True)

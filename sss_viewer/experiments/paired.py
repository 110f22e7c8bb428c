"""Paired comparison of cross-validated models on the same folds, and what each model cost.

Two rows of a repeated k-fold protocol (``bonn``, ``bonn-candidates``) are compared fold by fold:
both were trained and tested on the same (seed, fold), so the per-fold differences carry the
comparison, not the spread of either model over folds. The folds of repeated k-fold CV share
training data, so the plain paired t-test is over-confident; the **corrected resampled t-test** of
Nadeau & Bengio (2003) inflates the variance of the mean difference by ``n_test / n_train``:

    t = mean(d) / sqrt((1 / n + n_test / n_train) * var(d)),   n − 1 degrees of freedom,

with ``n`` paired folds and ``n_test``, ``n_train`` the test and training(+validation) channels of a
fold. The same variance gives the 95 % interval of the mean difference.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd
from scipy import stats

from sss_viewer.experiments.protocols import PROTOCOLS
from sss_viewer.experiments.runner import read_run_records
from sss_viewer.experiments.tables import SELECTED_LABEL, select_on_validation

__all__ = ["cost_summary", "load_many", "load_runs", "markdown_comparison", "paired_differences"]

PAIR_KEYS = ("seed", "setting")
"""What makes two runs a pair: the repeat (seed) and the fold."""


def load_runs(folder: str | Path) -> pd.DataFrame:
    """Every finished run of one experiment folder, with its wall time, in plan order.

    A protocol with variants (``bonn-candidates``) also gets the nested choice per fold, labelled
    :data:`~sss_viewer.experiments.tables.SELECTED_LABEL`, on the folds where every variant finished.

    Parameters
    ----------
    folder : str or Path
        An ``--out`` folder of ``sss-viewer experiment`` (``plan.json`` and ``runs/``).

    Returns
    -------
    DataFrame
        One row per run: ``protocol``, ``label``, ``seed``, ``setting``, the test metrics,
        ``val_auc``, ``n_train``, ``n_val``, ``n_test`` and ``seconds`` (training + scoring wall time).

    Raises
    ------
    ValueError
        ``folder`` is not an experiment folder, or none of its runs has finished.
    """
    folder = Path(folder)
    plan_file = folder / "plan.json"
    if not plan_file.is_file():
        raise ValueError(
            f"{folder} is not an experiment folder: no plan.json (an --out folder of sss-viewer experiment)."
        )
    plan = json.loads(plan_file.read_text())
    rows = read_run_records(folder, plan["runs"])
    if not rows:
        raise ValueError(f"{folder}: none of the {len(plan['runs'])} planned runs has finished yet.")
    runs = pd.DataFrame(rows)
    protocol = plan["protocol"]
    if PROTOCOLS[protocol].variants and PROTOCOLS[protocol].nested_choice and runs["label"].nunique() > 1:
        # choose only where every candidate has finished: a choice among fewer would be another experiment
        complete = runs.groupby(list(PAIR_KEYS))["label"].transform("nunique") == runs["label"].nunique()
        if complete.any():
            chosen = select_on_validation(runs[complete]).drop(columns="chosen")
            runs = pd.concat([runs, chosen], ignore_index=True)
    runs["protocol"] = protocol
    return runs


def load_many(folders: Sequence[str | Path]) -> pd.DataFrame:
    """:func:`load_runs` of several folders; a label found in more than one becomes ``<protocol>:<label>``.

    Parameters
    ----------
    folders : sequence of str or Path
        ``--out`` folders of ``sss-viewer experiment``, each of another protocol.

    Returns
    -------
    DataFrame
        The folders' :func:`load_runs` tables concatenated in the order given (a fresh index), the shared
        labels prefixed with their protocol.

    Raises
    ------
    ValueError
        A folder is given twice or two folders hold the same protocol (their labels could not be told apart).
    """
    if len({Path(f).resolve() for f in folders}) != len(folders):
        raise ValueError("the same experiment folder is given twice")
    tables = [load_runs(f) for f in folders]
    protocols = [t["protocol"].iloc[0] for t in tables]
    if len(set(protocols)) != len(protocols):
        raise ValueError(
            f"two folders hold the same protocol ({protocols}); compare runs of one protocol from one folder"
        )
    owners: dict[str, int] = {}
    for table in tables:
        for label in set(table["label"]):
            owners[label] = owners.get(label, 0) + 1
    for table in tables:
        table["label"] = [
            f"{p}:{label}" if owners[label] > 1 else label for p, label in zip(table["protocol"], table["label"])
        ]
    return pd.concat(tables, ignore_index=True)


def _resolve_label(runs: pd.DataFrame, name: str) -> str:
    """``name`` as a label of ``runs``: ``<protocol>:<label>`` also names a label its protocol's runs hold unprefixed.

    :func:`load_many` prefixes only labels found in several folders; this lets a command name a
    row by its protocol whether or not the other folders hold the same label. Unknown names are
    returned unchanged (the caller reports them).
    """
    labels = set(runs["label"])
    if name in labels or ":" not in name:
        return name
    protocol, label = name.split(":", 1)
    held = (runs["protocol"] == protocol) & (runs["label"] == label)
    return label if held.any() else name


def paired_differences(
    runs: pd.DataFrame, candidate: str, references: Sequence[str], metric: str = "auc"
) -> pd.DataFrame:
    """``candidate − reference`` on the folds both finished, for each reference.

    Parameters
    ----------
    runs : DataFrame
        Runs as :func:`load_runs` gives them (several folders concatenated).
    candidate : str
        A ``label`` of ``runs``.
    references : sequence of str
        Labels to compare ``candidate`` with.
    metric : str
        A test-metric column (default ``auc``).

    Returns
    -------
    DataFrame
        One row per reference: ``n`` pairs, candidate and reference means, ``mean_diff``, ``std_diff``
        (ddof 1), ``ci_low`` / ``ci_high`` (95 %, corrected), ``t``, ``p`` (two-sided, corrected
        resampled t-test), ``wins`` / ``ties`` / ``losses`` of the candidate.

    Raises
    ------
    ValueError
        A label is not in ``runs``, it occurs twice for one fold, or the two share fewer than 2 folds.
    """
    candidate, *references = (_resolve_label(runs, name) for name in (candidate, *references))
    missing = [label for label in (candidate, *references) if label not in set(runs["label"])]
    if missing:
        raise ValueError(f"no runs labelled {missing}; labels present: {sorted(set(runs['label']))}")
    if metric not in runs:
        raise ValueError(f"metric {metric!r} is not a column of the runs; expected e.g. auc, auprc, balanced_accuracy")
    rows = []
    for reference in references:
        a, b = (_per_fold(runs, label, metric) for label in (candidate, reference))
        pairs = a.add_suffix("_a").join(b.add_suffix("_b"), how="inner")
        if len(pairs) < 2:
            raise ValueError(
                f"{candidate!r} and {reference!r} share {len(pairs)} fold(s); a paired comparison needs 2 or more"
            )
        d = (pairs[f"{metric}_a"] - pairs[f"{metric}_b"]).to_numpy(dtype=float)
        n = len(d)
        ratio = float(np.median(pairs["n_test_a"] / pairs["n_fit_a"]))
        var = float(np.var(d, ddof=1))
        se = np.sqrt((1.0 / n + ratio) * var)
        t = float(np.mean(d) / se) if se > 0 else (0.0 if np.mean(d) == 0 else np.sign(np.mean(d)) * np.inf)
        half = float(stats.t.ppf(0.975, n - 1) * se)
        rows.append(
            {
                "candidate": candidate,
                "reference": reference,
                "n": n,
                "candidate_mean": float(pairs[f"{metric}_a"].mean()),
                "reference_mean": float(pairs[f"{metric}_b"].mean()),
                "mean_diff": float(np.mean(d)),
                "std_diff": float(np.sqrt(var)),
                "ci_low": float(np.mean(d)) - half,
                "ci_high": float(np.mean(d)) + half,
                "t": t,
                "p": float(2 * stats.t.sf(abs(t), n - 1)),
                "wins": int((d > 0).sum()),
                "ties": int((d == 0).sum()),
                "losses": int((d < 0).sum()),
            }
        )
    return pd.DataFrame(rows)


def _per_fold(runs: pd.DataFrame, label: str, metric: str) -> pd.DataFrame:
    rows = runs[runs["label"] == label]
    if rows.duplicated(list(PAIR_KEYS)).any():
        protocols = sorted(set(rows["protocol"])) if "protocol" in rows else []
        raise ValueError(
            f"label {label!r} has more than one run per fold (in {protocols}); compare folders that do not both hold it"
        )
    rows = rows.assign(n_fit=rows["n_train"] + rows["n_val"])
    return rows.set_index(list(PAIR_KEYS))[[metric, "n_test", "n_fit"]]


def cost_summary(runs: pd.DataFrame, labels: Sequence[str]) -> pd.DataFrame:
    """Median and total wall time per run of each label (training and test scoring; nested choice: all of its rows).

    Parameters
    ----------
    runs : DataFrame
        Runs as :func:`load_many` gives them (``label``, ``protocol``, ``seed``, ``setting``, ``seconds``).
    labels : sequence of str
        The labels to cost, each a label of ``runs`` or ``<protocol>:<label>``. The nested choice
        (:data:`~sss_viewer.experiments.tables.SELECTED_LABEL`) costs, per fold, every candidate's run.

    Returns
    -------
    DataFrame, shape (n_labels, 4)
        ``label``, ``runs`` (folds costed), ``median_s`` and ``total_s`` (seconds), in the order of ``labels``.
    """
    rows = []
    for label in (_resolve_label(runs, name) for name in labels):
        if label == SELECTED_LABEL or label.endswith(":" + SELECTED_LABEL):  # choosing costs every candidate's training
            own = runs[(runs["label"] != label) & (runs["protocol"] == _protocol_of(runs, label))]
            per_fold = own.groupby(list(PAIR_KEYS))["seconds"].sum()
        else:
            per_fold = runs.loc[runs["label"] == label, "seconds"]
        rows.append(
            {
                "label": label,
                "runs": len(per_fold),
                "median_s": float(per_fold.median()),
                "total_s": float(per_fold.sum()),
            }
        )
    return pd.DataFrame(rows)


def _protocol_of(runs: pd.DataFrame, label: str) -> str:
    return str(runs.loc[runs["label"] == label, "protocol"].iloc[0])


def markdown_comparison(diffs: pd.DataFrame, costs: pd.DataFrame | None = None, metric: str = "auc") -> str:
    """The paired differences as a Markdown table, then the wall time of each model when ``costs`` is given.

    Parameters
    ----------
    diffs : DataFrame
        :func:`paired_differences`' table, one row per reference.
    costs : DataFrame, optional
        :func:`cost_summary`'s table; None leaves the wall-time table out.
    metric : str
        The metric compared, named in the header.

    Returns
    -------
    str
        The Markdown, one table row per row of ``diffs`` (and of ``costs``), ending in a newline.
    """
    lines = [
        f"| {metric}: candidate − reference | n | candidate | reference | mean diff [95 % CI] | std | t | p | W/T/L |",
        "|---|---:|---:|---:|---|---:|---:|---:|---|",
    ]
    for r in diffs.itertuples():
        lines.append(
            f"| {r.candidate} − {r.reference} | {r.n} | {r.candidate_mean:.4f} | {r.reference_mean:.4f} | "
            f"{r.mean_diff:+.4f} [{r.ci_low:+.4f}, {r.ci_high:+.4f}] | {r.std_diff:.4f} | {r.t:.2f} | {r.p:.3f} | "
            f"{r.wins}/{r.ties}/{r.losses} |"
        )
    if costs is not None:
        lines += ["", "| model | runs | median s per fold | total s |", "|---|---:|---:|---:|"]
        lines += [f"| {r.label} | {r.runs} | {r.median_s:.1f} | {r.total_s:.0f} |" for r in costs.itertuples()]
    return "\n".join(lines) + "\n"

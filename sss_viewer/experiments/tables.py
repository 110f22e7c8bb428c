"""Markdown tables laid out like the paper's: rows = models, columns = setting × metric, mean ± std over seeds."""

from __future__ import annotations

import numpy as np
import pandas as pd

from sss_viewer.experiments.protocols import PROTOCOLS

MAIN_METRICS = (("f1", "F1"), ("auc", "AUC"), ("accuracy", "Acc"))
EXTRA_METRICS = (("auprc", "AUPRC"), ("balanced_accuracy", "Bal. acc"))
CV_METRICS = (("auc", "AUC"), ("auprc", "AUPRC"), ("balanced_accuracy", "Bal. acc"), ("f1", "F1"), ("accuracy", "Acc"))
SELECTED_LABEL = "selected on inner validation"
"""Row of a cross-validated ablation: per fold, the variant with the best inner-validation AUC."""


def summarise(results: pd.DataFrame) -> pd.DataFrame:
    """Mean and std over seeds per (split mode, setting, model label) and metric.

    Returns
    -------
    summary : DataFrame
        Index (split_mode, setting, label); columns ``<metric>_mean``, ``<metric>_std``, ``n_seeds``.
    """
    metrics = [m for m, _ in MAIN_METRICS + EXTRA_METRICS]
    grouped = results.groupby(["split_mode", "setting", "label"], sort=False)[metrics]
    mean, std = grouped.mean(), grouped.std(ddof=0)
    out = mean.add_suffix("_mean").join(std.add_suffix("_std"))
    out["n_seeds"] = grouped.size()
    return out


def _cell(mean: float, std: float, rank: int | None) -> str:
    if not np.isfinite(mean):
        return "–"
    text = f"{mean:.3f} ± {std:.3f}"
    return f"**{text}**" if rank == 0 else (f"<u>{text}</u>" if rank == 1 else text)


def _table(summary: pd.DataFrame, mode: str, metrics) -> str:
    part = summary.xs(mode, level="split_mode")
    settings = list(dict.fromkeys(part.index.get_level_values("setting")))
    labels = list(dict.fromkeys(part.index.get_level_values("label")))
    header = "| model | " + " | ".join(f"{s} {name}" for s in settings for _, name in metrics) + " |"
    lines = [header, "|---|" + "---:|" * (len(settings) * len(metrics))]
    ranks = {}
    for setting in settings:
        for metric, _ in metrics:
            values = part.xs(setting, level="setting")[f"{metric}_mean"]
            order = values.dropna().sort_values(ascending=False).index.tolist()
            ranks.update({(setting, metric, label): i for i, label in enumerate(order[:2])})
    for label in labels:
        cells = []
        for setting in settings:
            for metric, _ in metrics:
                if (setting, label) in part.index:
                    row = part.loc[(setting, label)]
                    cells.append(
                        _cell(row[f"{metric}_mean"], row[f"{metric}_std"], ranks.get((setting, metric, label)))
                    )
                else:
                    cells.append("–")
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def select_on_validation(results: pd.DataFrame) -> pd.DataFrame:
    """Nested selection: per (seed, fold), the run whose ``val_auc`` is highest (ties: first in plan order).

    Returns
    -------
    DataFrame
        One row per (seed, setting), labelled :data:`SELECTED_LABEL`, with a ``chosen`` column.
    """
    rows = []
    for _, group in results.groupby(["seed", "setting"], sort=False):
        best = group.iloc[int(np.argmax(group["val_auc"].fillna(-1.0).to_numpy()))].copy()
        best["chosen"] = best["label"]
        best["label"] = SELECTED_LABEL
        rows.append(best)
    return pd.DataFrame(rows)


def cv_table(results: pd.DataFrame) -> str:
    """Rows = models, columns = test metrics (mean ± std over every fold and repeat) and validation AUC."""
    metrics = [m for m, _ in CV_METRICS]
    grouped = results.groupby("label", sort=False)
    mean, std = grouped[metrics].mean(), grouped[metrics].std(ddof=0)
    ranks = {}
    for metric in metrics:
        order = mean[metric].dropna().sort_values(ascending=False).index.tolist()
        ranks.update({(metric, label): i for i, label in enumerate(order[:2])})
    header = "| model | " + " | ".join(name for _, name in CV_METRICS) + " | inner-val AUC | runs |"
    lines = [header, "|---|" + "---:|" * (len(CV_METRICS) + 2)]
    val = grouped["val_auc"].mean() if "val_auc" in results else None
    for label in mean.index:
        cells = [_cell(mean.loc[label, m], std.loc[label, m], ranks.get((m, label))) for m in metrics]
        val_text = f"{val[label]:.3f}" if val is not None and np.isfinite(val[label]) else "–"
        lines.append(f"| {label} | " + " | ".join(cells) + f" | {val_text} | {int(grouped.size()[label])} |")
    return "\n".join(lines)


def markdown_tables(results: pd.DataFrame, protocol: str) -> str:
    """Every table of one protocol: per split mode, the main metrics and AUPRC / balanced accuracy.

    Best per column in **bold**, second best underlined; mean ± std (population) over seeds.

    Parameters
    ----------
    results : DataFrame
        One row per finished run (:func:`~sss_viewer.experiments.collect_results`): ``split_mode``,
        ``setting``, ``label``, ``seed`` and the test metrics (``val_auc`` for a cross-validated protocol).
    protocol : str
        A key of :data:`~sss_viewer.experiments.protocols.PROTOCOLS`, the page's title.

    Returns
    -------
    str
        The Markdown page: a cross-validated protocol's one table over folds and repeats (and the nested
        choice where it has variants), else two tables per split mode; a line saying so when no run finished.
    """
    if results.empty:
        return f"# {protocol}\n\nNo finished runs yet.\n"
    if set(results["split_mode"]) == {"cv"}:
        folds = results["setting"].nunique()
        repeats = results["seed"].nunique()
        parts = [
            f"# {protocol}\n",
            f"Test metrics, mean ± std over {folds} folds x {repeats} repeat(s) (the same folds for "
            "every model); thresholds chosen on each fold's inner validation split; best in bold, second underlined.\n",
            cv_table(results) + "\n",
        ]
        spec = PROTOCOLS[protocol]
        if spec.variants and spec.nested_choice and results["label"].nunique() > 1 and "val_auc" in results:
            chosen = select_on_validation(results)
            counts = chosen["chosen"].value_counts()
            parts += [
                "## Choosing on inner validation\n",
                "Per fold, the row with the best inner-validation AUC (no test data involved):\n",
                cv_table(chosen) + "\n",
                "Chosen: " + ", ".join(f"{label} ({n}x)" for label, n in counts.items()) + "\n",
            ]
        return "\n".join(parts)
    summary = summarise(results)
    seeds = int(summary["n_seeds"].max())
    parts = [f"# {protocol}\n", f"Mean ± std over {seeds} seed(s); best in bold, second underlined.\n"]
    for mode in dict.fromkeys(results["split_mode"]):
        split_text = (
            "channel-level, 1:1 balanced, 70/10/20 as the paper"
            if mode == "channel"
            else "patient-level, no patient in two splits"
        )
        parts.append(f"## {mode} split ({split_text})\n")
        parts.append(_table(summary, mode, MAIN_METRICS) + "\n")
        parts.append(_table(summary, mode, EXTRA_METRICS) + "\n")
    return "\n".join(parts)

"""Markdown tables laid out like the paper's: rows = models, columns = setting × metric, mean ± std over seeds."""

from __future__ import annotations

import numpy as np
import pandas as pd

MAIN_METRICS = (("f1", "F1"), ("auc", "AUC"), ("accuracy", "Acc"))
EXTRA_METRICS = (("auprc", "AUPRC"), ("balanced_accuracy", "Bal. acc"))


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
                    cells.append(_cell(row[f"{metric}_mean"], row[f"{metric}_std"], ranks.get((setting, metric, label))))
                else:
                    cells.append("–")
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def markdown_tables(results: pd.DataFrame, protocol: str) -> str:
    """Every table of one protocol: per split mode, the main metrics and AUPRC / balanced accuracy.

    Best per column in **bold**, second best underlined; mean ± std (population) over seeds.
    """
    if results.empty:
        return f"# {protocol}\n\nNo finished runs yet.\n"
    summary = summarise(results)
    seeds = int(summary["n_seeds"].max())
    parts = [f"# {protocol}\n", f"Mean ± std over {seeds} seed(s); best in bold, second underlined.\n"]
    for mode in dict.fromkeys(results["split_mode"]):
        split_text = "channel-level, 1:1 balanced, 70/10/20 as the paper" if mode == "channel" else "patient-level, no patient in two splits"
        parts.append(f"## {mode} split ({split_text})\n")
        parts.append(_table(summary, mode, MAIN_METRICS) + "\n")
        parts.append(_table(summary, mode, EXTRA_METRICS) + "\n")
    return "\n".join(parts)

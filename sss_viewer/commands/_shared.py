"""Helpers several ``sss-viewer`` commands use: the usage error, the cache, labelled data, names, the ranking text."""

from __future__ import annotations

import logging
import math
import sys
from pathlib import Path

logger = logging.getLogger("sss_viewer")  # the name cli.py logs under: messages read as before


class UsageError(ValueError):
    """The command line is wrong in a way argparse cannot see (checked after parsing); exits 2."""


def say(text: str = "", end: str = "\n") -> None:
    """Write one line of a command's result to standard output (results go here; progress and warnings to logging).

    Parameters
    ----------
    text : str
        The line (without its newline).
    end : str
        What follows it (a newline; ``""`` for text that ends in one).
    """
    sys.stdout.write(f"{text}{end}")


def _cache(args):
    """The SeriesCache the command's options ask for, or None."""
    from sss_viewer.preprocessing.cache import SeriesCache, default_cache_dir

    if args.no_cache:
        return None
    return SeriesCache(args.cache_dir or default_cache_dir())


def _labelled_data(args) -> list:
    """``load_data`` of ``args.data`` with ``--labels`` or ``--viewer-labels``; recordings left unlabelled are dropped.

    With ``--viewer-labels`` (``train``) the viewer's channels sidecars label the recordings
    (:func:`sss_viewer.io.viewer_labels.apply_viewer_labels`); the sidecars are only read.
    """
    from sss_viewer.io.cohort import load_data

    viewer_out = getattr(args, "viewer_labels", None)
    if viewer_out is not None:
        from sss_viewer.io.viewer_labels import apply_viewer_labels

        if args.labels is not None:
            raise UsageError("--labels and --viewer-labels are two sources of labels; pass one of them.")
        recordings = load_data(args.data)
        root = args.data if args.data.is_dir() else args.data.parent
        apply_viewer_labels(recordings, root, viewer_out, fallback=args.labels_fallback)
        kept = [r for r in recordings if "labels_excluded" not in r.info]
        if not kept:
            raise ValueError(
                f"No recording left: no channel of {args.data} is marked SOZ or not SOZ in the viewer folder "
                f"{viewer_out} (mark channels in the viewer's SOZ column, or pass --labels-fallback to train on the "
                "data's own labels)."
            )
        return kept
    recordings = load_data(args.data, labels=args.labels, labels_fallback=args.labels_fallback)
    kept = [r for r in recordings if "labels_excluded" not in r.info]
    if len(kept) < len(recordings):
        left_out = len(recordings) - len(kept)
        logger.warning(
            "%d of %d recordings left out: their subjects have no row in %s.", left_out, len(recordings), args.labels
        )
    if not kept:
        raise ValueError(f"No recording left: {args.labels} names none of the data's subjects (see the warning above).")
    return kept


def _names(entries: list[str]) -> str:
    return ", ".join(entries[:5]) + (f" … ({len(entries)} in all)" if len(entries) > 5 else "")


def _bundled_model_dir() -> Path:
    """The bundled model's directory (package data; the viewer's demo model), without importing the viewer."""
    from importlib import resources

    return Path(str(resources.files("sss_viewer").joinpath("data", "demo", "model")))


def _ranking_text(channels, threshold: float, top: int = 15, unit: str | None = None) -> str:
    """The top of a ranking as text: the model's interval, or a marker's value in ``unit``; artifact flags last."""
    middle = f"{'value (' + unit + ')':<15}" if unit else f"{'interval':<15}"
    lines = [f"{'rank':>4}  {'channel':<10} {'score':>6}  {middle} label  artifact", "-" * 60]
    for row in channels.head(top).itertuples():
        label = getattr(row, "label", None)
        label_text = (
            "" if label is None or (isinstance(label, float) and math.isnan(label)) else ("SOZ" if label == 1 else "-")
        )
        mark = "*" if row.score >= threshold else " "
        detail = f"{row.value:<15.4g}" if unit else f"[{row.lower:.3f}, {row.upper:.3f}]"
        flag = getattr(row, "artifact", "") or ""
        score = "   n/a" if math.isnan(row.score) else f"{row.score:6.3f}"
        lines.append(f"{row.rank:>4}{mark} {row.channel:<10} {score}  {detail:<15} {label_text:<5}  {flag}".rstrip())
    what = "half the top channel's value" if unit else "the validation threshold"
    lines.append(f"(* = above {what} {threshold:.3f}; {len(channels)} channels scored)")
    return "\n".join(lines)

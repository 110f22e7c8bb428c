"""``sss-viewer compare``: paired differences of cross-validated models on the same folds, and their cost."""

from __future__ import annotations

from sss_viewer.commands._shared import say


def run(args, progress: bool) -> int:
    """Print the candidate's paired differences with the ``--against`` rows as Markdown."""
    from sss_viewer.experiments.paired import cost_summary, load_many, markdown_comparison, paired_differences

    runs = load_many(args.folders)
    diffs = paired_differences(runs, args.candidate, args.against, metric=args.metric)
    say(markdown_comparison(diffs, cost_summary(runs, [args.candidate, *args.against]), metric=args.metric), end="")
    return 0

"""``sss-viewer scoreboard``: every scorer on labelled real recordings, channel AUC and AUPRC per recording."""

from __future__ import annotations

from pathlib import Path

from sss_viewer.commands._shared import UsageError, _bundled_model_dir, say
from sss_viewer.engine.score_files import write_csv


def run(args, progress: bool) -> int:
    """Score the labelled recordings with every scorer and print (and write) the table."""
    from sss_viewer.biomarkers import FITTED, FLOORS, SCORERS, get_scorer
    from sss_viewer.engine.bundle import ModelBundle
    from sss_viewer.evaluation import scoreboard as board

    taken = [p for p in (args.out, args.out and args.out.with_suffix(".md")) if p is not None and p.exists()]
    if taken and not args.overwrite:
        raise ValueError(f"{taken[0]} exists; pass --overwrite to replace it, or choose another --out.")
    markers = [n for n in SCORERS if n not in FLOORS and n not in FITTED]
    if args.scorers:
        markers = [n.strip() for n in args.scorers.split(",") if n.strip()]
        unknown = [n for n in markers if n not in SCORERS or n in FITTED]
        if unknown:
            known = ", ".join(n for n in SCORERS if n not in FITTED)
            raise UsageError(
                f"argument --scorers: unknown {unknown} (choose from {known}; a fitted scorer: --combined FILE)"
            )
    if args.shared is None and not args.data and not args.synthetic:
        raise UsageError("no labelled recording to score: pass DATA, --shared DIR and/or --synthetic N.")
    scorers = {name: get_scorer(name) for name in FLOORS}
    scorers["sss (bundled)"] = ModelBundle.load(_bundled_model_dir())
    for path in args.model:
        label = path.parent.name if path.name == "model" else path.name  # experiments/X/model → X
        scorers[f"sss ({label})"] = ModelBundle.load(path)
    scorers.update({name: get_scorer(name) for name in markers if name not in FLOORS})
    for path in args.combined:
        scorers[f"combined ({path.stem})"] = get_scorer("combined", weights=path)
    recordings = []
    if args.shared is not None:
        recordings += board.shared_recordings(args.shared)
    for path in args.data:
        recordings += board.user_recordings(path, labels=args.labels)
    if args.synthetic:
        recordings += board.synthetic_recordings(args.synthetic)
    if not recordings:
        raise ValueError("none of the recordings given has SOZ labels (pass --labels FILE).")
    table = board.run_scoreboard(recordings, scorers, progress=progress)
    summary = board.summarise(table)
    text = board.format_table(table, summary)
    say(text)
    if summary["kind"].ne("floor").any():
        name, reason = board.choose_default(summary)
        say(f"\nBy the rule of docs/results.md §8 the default would be: {name} ({reason})")
    if args.out is not None:
        from sss_viewer.fileio import atomic_write

        write_csv(table, args.out)
        atomic_write(args.out.with_suffix(".md"), lambda p: Path(p).write_text(text + "\n", encoding="utf-8"))
        say(f"wrote {args.out} and {args.out.with_suffix('.md')}")
    return 0

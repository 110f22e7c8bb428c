"""``sss-viewer cohort``: check a BIDS iEEG dataset and print its per-centre summary."""

from __future__ import annotations

import json

from sss_viewer.commands._shared import _names, say


def run(args, progress: bool) -> int:
    """Print the BIDS dataset's per-centre summary (as JSON with ``--json``)."""
    from sss_viewer.io.bids import summarise_bids

    summary = summarise_bids(args.root, labels=args.labels)
    if not summary["total"] or not summary["total"].get("runs"):
        skipped = summary["skipped"]
        why = f"; skipped: {_names([f'{k} ({v})' for k, v in skipped.items()])}" if skipped else ""
        raise ValueError(
            f"{args.root} holds no readable iEEG run (sub-*/[ses-*/]ieeg/*_ieeg.<vhdr|edf|…>){why}; "
            "check the BIDS root."
        )
    if args.json:
        say(json.dumps(summary, indent=2))
        return 0
    say(f"BIDS dataset {summary['root']}; SOZ labels from {summary['soz_source'] or 'nowhere (unlabelled)'}")
    header = (
        f"{'centre':<8} {'subjects':>8} {'runs':>5} {'channels':>8} {'hours':>6} {'SOZ frac':>8} {'no onset':>8}  "
        "rates (Hz)"
    )
    say(header)
    say("-" * len(header))
    for row in summary["centres"] + ([summary["total"]] if summary["total"] else []):
        frac = "-" if row["soz_fraction"] is None else f"{row['soz_fraction']:.3f}"
        rates = ", ".join(f"{r:g}" for r in row["sampling_rates_hz"])
        say(
            f"{row['centre']:<8} {row['subjects']:>8} {row['runs']:>5} {row['channels']:>8} {row['hours']:>6.2f} "
            f"{frac:>8} {row['runs_without_onset']:>8}  {rates}"
        )
    for subject, names in summary["unmatched_soz"].items():
        say(f"sub-{subject}: SOZ names matching no channel: {', '.join(names)}")
    for run, reason in summary["skipped"].items():
        say(f"skipped {run}: {reason}")
    return 0

"""``sss-viewer synth``: write a deterministic synthetic multi-centre cohort."""

from __future__ import annotations

from sss_viewer.commands._shared import _names, say


def run(args, progress: bool) -> int:
    """Write the synthetic cohort into ``--out`` (refusing a non-empty folder without ``--overwrite``)."""
    from sss_viewer.synth.cohort import generate_cohort
    from sss_viewer.synth.config import SynthConfig

    if args.out.exists() and not args.out.is_dir():
        raise ValueError(f"Output folder {args.out} exists and is not a folder.")
    entries = sorted(p.name for p in args.out.iterdir()) if args.out.is_dir() else []
    if entries and not args.overwrite:
        raise ValueError(
            f"Output folder {args.out} is not empty ({_names(entries)}); synth would replace its files of the same "
            "names (labels.tsv, cohort.tsv, participants.tsv, …). Pass --overwrite to write into it, or choose an "
            "empty folder."
        )
    config = SynthConfig(duration_scale=args.duration_scale, max_channels=args.max_channels, runs_per_patient=args.runs)
    out = generate_cohort(args.out, args.patients, args.seed, config, progress=progress)
    say(f"wrote synthetic cohort of {args.patients} patients to {out}")
    return 0

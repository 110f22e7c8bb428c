"""``sss-viewer demo``: synthesise a cohort, train a small model, score a held-out patient."""

from __future__ import annotations

from sss_viewer.commands._shared import _ranking_text, say


def run(args, progress: bool) -> int:
    """Synthesise, train and score in ``--out``; print the held-out patient's ranking."""
    from sss_viewer.engine.config import train_preset
    from sss_viewer.engine.inference import score_recording
    from sss_viewer.engine.training import train
    from sss_viewer.io.cohort import load_data
    from sss_viewer.synth.cohort import generate_cohort
    from sss_viewer.synth.config import SynthConfig

    cohort = args.out / "cohort"
    if not (cohort / "cohort.tsv").is_file():
        config = SynthConfig(duration_scale=args.duration_scale, max_channels=args.max_channels)
        generate_cohort(cohort, args.patients, 0, config, progress=progress)
    recordings = load_data(cohort)
    overrides = {"device": args.device}
    if args.epochs:
        overrides["epochs"] = args.epochs
    bundle = train(recordings, train_preset("default", **overrides), progress=progress)
    bundle.save(args.out / "model")
    test = set(bundle.info["split"]["test"])
    recording = next(r for r in recordings if r.subject in test)
    result = score_recording(bundle, recording, device=args.device, progress=progress)
    say(f"Demo model trained on synthetic data; ranking of held-out patient {recording.label}:")
    say(_ranking_text(result.channels, bundle.threshold))
    return 0

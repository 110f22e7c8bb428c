"""``sss-viewer fit-combined``: fit a centre's own combined scorer on its labelled recordings."""

from __future__ import annotations

from sss_viewer.commands._shared import say


def run(args, progress: bool) -> int:
    """Fit the combined scorer's weights and write them to ``--out``."""
    from sss_viewer.biomarkers.combined import COMBINED_MARKERS, fit_combined, save_weights
    from sss_viewer.io.cohort import load_data

    if args.out.exists() and not args.overwrite:
        raise ValueError(f"{args.out} exists; pass --overwrite to replace it, or choose another --out.")
    markers = tuple(m.strip() for m in args.markers.split(",") if m.strip()) if args.markers else COMBINED_MARKERS
    recordings = [
        r for path in args.data for r in load_data(path, labels=args.labels, labels_fallback=args.labels_fallback)
    ]
    model = None
    if args.model is not None:
        from sss_viewer.engine.bundle import ModelBundle

        model = ModelBundle.load(args.model)
    description = "; ".join(str(p) for p in args.data) + (f" (labels {args.labels})" if args.labels else "")
    weights = fit_combined(recordings, markers=markers, model=model, progress=progress, description=description)
    save_weights(weights, args.out, overwrite=args.overwrite)
    auc = weights["validation_auc"]
    say(
        f"fitted on {weights['n_patients']} patients, {weights['n_channels']} channels: C = {weights['C']:g}, "
        f"leave-one-patient-out channel AUC {'n/a' if auc is None else f'{auc:.3f}'}"
    )
    for name, coef in zip(weights["features"], weights["coefficients"]):
        say(f"  {name:<18} {coef:+.3f}")
    say(f"wrote {args.out}; score with: sss-viewer score RECORDING --scorer combined --weights {args.out} --out DIR")
    return 0

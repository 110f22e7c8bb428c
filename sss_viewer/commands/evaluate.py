"""``sss-viewer evaluate``: channel metrics of a model on held-out patients."""

from __future__ import annotations

import json

from sss_viewer.commands._shared import _cache, _labelled_data, say


def run(args, progress: bool) -> int:
    """Print the model's channel metrics on its test split (or every recording with ``--all``)."""
    from sss_viewer.engine.bundle import ModelBundle
    from sss_viewer.evaluation.held_out import evaluate_bundle
    from sss_viewer.io.cohort import read_abnormal_intervals

    bundle = ModelBundle.load(args.model)
    recordings = _labelled_data(args)
    abnormal = read_abnormal_intervals(args.data) if (args.data / "abnormal.tsv").is_file() else None
    report = evaluate_bundle(
        bundle,
        recordings,
        held_out_only=not args.all,
        abnormal=abnormal,
        device=args.device,
        progress=progress,
        cache=_cache(args),
    )
    if args.json:
        say(json.dumps(report, indent=2, default=float))
    else:
        pooled = report["pooled"]
        say(
            f"{report['n_channels']} channels ({report['n_soz']} SOZ) in {report['n_recordings']} recordings: "
            + ", ".join(f"{k} {v:.3f}" for k, v in pooled.items())
        )
        if "heatmap_auc" in report:
            say(f"heat map abnormal-vs-normal AUC within SOZ channels (median): {report['heatmap_auc']:.3f}")
    return 0

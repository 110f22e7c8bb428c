"""``sss-viewer experiment``: run (or resume) one of the paper's protocols."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from sss_viewer.commands._shared import UsageError, _cache, say


def run(args, progress: bool) -> int:
    """List the protocols, or run ``protocol`` on ``--data`` into ``--out``."""
    from sss_viewer.experiments import MODELS, PRESETS, PROTOCOLS, plan_runs
    from sss_viewer.experiments.protocols import check_models

    if args.list or not args.protocol:
        say("protocols:")
        for spec in PROTOCOLS.values():
            say(f"  {spec.name:<22} {spec.description}")
        say("models: " + ", ".join(MODELS) + " (and sss-<backbone> for SSS with another local model)")
        say("presets: " + ", ".join(PRESETS))
        return 0
    from sss_viewer.experiments import run_experiment
    from sss_viewer.io.cohort import load_data

    if args.protocol not in PROTOCOLS:
        raise UsageError(f"unknown protocol {args.protocol!r}: expected one of {', '.join(PROTOCOLS)} (see --list)")
    preset = args.preset or PROTOCOLS[args.protocol].default_preset
    if preset not in PRESETS:
        raise UsageError(f"argument --preset: invalid choice {preset!r}: expected one of {', '.join(PRESETS)}")
    if args.models:
        try:
            check_models(args.models)
        except ValueError as err:
            raise UsageError(f"argument --models: {err}") from None
    if args.data is None:
        raise UsageError(
            "the following arguments are required: --data (a BIDS root, a cohort folder or a recording file)"
        )
    recordings = load_data(args.data, labels=args.labels, labels_fallback=args.labels_fallback)
    recordings = [r for r in recordings if "labels_excluded" not in r.info]
    centres = sorted({r.centre for r in recordings if r.centre})
    plan_runs(
        args.protocol,
        centres,
        args.models or MODELS,
        args.seeds or (0,),
        args.split_modes or PRESETS[preset].split_modes,
    )
    out = args.out or Path("experiments") / f"{args.protocol}-{preset}"
    spec = PRESETS[preset]
    if args.gpu_kernels is not None:
        spec = dataclasses.replace(spec, patchtst_gpu_kernels=args.gpu_kernels)
    results = run_experiment(
        args.protocol,
        recordings,
        out,
        preset=spec,
        models=args.models,
        seeds=args.seeds,
        split_modes=args.split_modes,
        progress=progress,
        cache=_cache(args),
    )
    say(f"{len(results)} runs; wrote {out / 'results.csv'} and {out / 'tables.md'}")
    return 0

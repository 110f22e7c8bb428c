"""``sss-viewer score``: score one recording (a model or a marker) or a cohort folder on Dask."""

from __future__ import annotations

import logging
from pathlib import Path

from sss_viewer.commands._shared import UsageError, _bundled_model_dir, _cache, _ranking_text, say
from sss_viewer.commands.score_output import ScoreOutput

logger = logging.getLogger("sss_viewer")  # the name cli.py logs under: messages read as before


class ScoreFailures(ValueError):
    """Some runs of a folder could not be scored (the others were)."""


def _resolve_score_paths(args) -> None:
    """``args.model``, ``args.recording`` and ``args.scorer`` from ``score [MODEL] RECORDING [--scorer NAME]``."""
    from sss_viewer.biomarkers import DEFAULT_SCORER, MODEL_SCORER, scorer_names

    if len(args.paths) > 2:
        raise UsageError(f"expected [MODEL] RECORDING; got {len(args.paths)} paths: {' '.join(map(str, args.paths))}")
    model, recording = (None, args.paths[0]) if len(args.paths) == 1 else args.paths
    scorer = args.scorer or (MODEL_SCORER if model is not None else DEFAULT_SCORER)
    if scorer not in scorer_names():
        raise UsageError(f"argument --scorer: invalid choice {scorer!r} (choose from {', '.join(scorer_names())})")
    if model is not None and scorer != MODEL_SCORER:
        raise UsageError(f"a MODEL ({model}) scores with --scorer sss only; --scorer {scorer} needs no model.")
    if scorer == MODEL_SCORER and model is None:
        model = _bundled_model_dir()
    args.model, args.recording, args.scorer = model, recording, scorer


def run(args, progress: bool) -> int:
    """Score ``[MODEL] RECORDING`` into ``--out``: one file here, a folder on Dask."""
    from sss_viewer.biomarkers import FITTED, MODEL_SCORER, get_scorer
    from sss_viewer.engine.bundle import ModelBundle
    from sss_viewer.io.cohort import load_recording, read_labels

    _resolve_score_paths(args)
    _check_score_numbers(args)
    if args.recording.is_dir():
        if args.scorer != MODEL_SCORER:
            raise UsageError(
                f"--scorer {args.scorer} scores one recording file; {args.recording} is a folder "
                "(score a folder with a model, or rank its labelled recordings with every scorer: "
                "sss-viewer scoreboard FOLDER)."
            )
        return _score_cohort(args, progress)
    if args.workers is not None or args.scheduler is not None:
        raise UsageError(f"--workers and --scheduler score a cohort folder; {args.recording} is one recording file.")
    if args.scorer == MODEL_SCORER:
        scorer = ModelBundle.load(args.model)
    elif args.scorer in FITTED:
        if args.weights is None:
            raise UsageError(f"--scorer {args.scorer} needs --weights FILE (written by sss-viewer fit-combined).")
        scorer = get_scorer(args.scorer, weights=args.weights, artifacts=not args.keep_artifacts)
    else:
        scorer = get_scorer(args.scorer, artifacts=not args.keep_artifacts)
    output = ScoreOutput(args.out, args.overwrite)  # checked now; the previous run is removed only when we write
    recording = load_recording(args.recording)
    if args.subject:
        recording.subject = args.subject
    if args.labels is not None:
        recording.soz = _labels_for(recording, read_labels(args.labels), args.labels)
    if args.scorer == MODEL_SCORER:
        _check_stride_fits(scorer, recording, args.stride)
    _score_one(args, scorer, recording, output, args.out, progress, top=15)
    return 0


def _check_score_numbers(args) -> None:
    """``--stride`` and ``--batch-size`` must be positive (0 is not "the model's default": leave the option out)."""
    if args.stride is not None and args.stride <= 0:
        raise UsageError(
            f"argument --stride: expected a positive number of preprocessed samples; got {args.stride} "
            "(leave --stride out for the model's own stride)"
        )
    if args.batch_size is not None and args.batch_size <= 0:
        raise UsageError(f"argument --batch-size: expected at least 1 window per batch; got {args.batch_size}")


def _check_stride_fits(bundle, recording, stride: int | None) -> None:
    """Warn when the stride leaves room for one window per channel only (a sliver of the recording scored).

    Both lengths are named: the stride (``--stride`` or the model's) and the recording's, in
    preprocessed samples. A window longer than the recording is refused by the scorer itself
    (naming both lengths).
    """
    try:
        n_out = int(bundle.preprocess.output_length(recording.n_times, recording.sfreq))
    except (ValueError, ZeroDivisionError):  # a rate the model refuses: the scorer says so
        return
    window = int(bundle.window_length)
    step = int(stride or bundle.inference_stride)
    what = "--stride" if stride else "the model's inference_stride (config.json)"
    if window < n_out and n_out - window < step:  # (a recording exactly one window long has one window at any stride)
        logger.warning(
            "%s %d is longer than recording %s leaves after its first window (%d preprocessed samples, window %d): "
            "only one window per channel is scored, the channel scores rest on its first %d of %d samples; "
            "pass a --stride of at most %d.",
            what,
            step,
            recording.label,
            n_out,
            window,
            window,
            n_out,
            n_out - window,
        )


def _score_cohort(args, progress: bool) -> int:
    """``score MODEL ROOT``: every recording of a BIDS root or cohort folder as one Dask task."""
    from sss_viewer.cohort_scoring import CohortOptions, prepare_cohort, run_cohort
    from sss_viewer.cohort_scoring.cluster import dask_client
    from sss_viewer.cohort_scoring.outputs import cohort_output_lock, is_cohort_output
    from sss_viewer.preprocessing.cache import default_cache_dir

    if args.workers is not None and args.workers < 1:
        raise UsageError(f"argument --workers: expected at least 1 worker process; got {args.workers}")
    single = None if is_cohort_output(args.out) else ScoreOutput(args.out, args.overwrite)  # checked, not yet cleared
    options = CohortOptions(
        stride=args.stride,
        batch_size=args.batch_size,
        device=args.device,
        cache_dir=None if args.no_cache else (args.cache_dir or default_cache_dir()),
        labels=args.labels,
        labels_fallback=args.labels_fallback,
    )
    with cohort_output_lock(args.out):  # two runs into one folder would score and summarise each other's recordings
        plan = prepare_cohort(args.model, args.recording, args.out, options, overwrite=args.overwrite)
        if single is not None:  # model and recordings found: a single-file run's files make way now
            single.clear_previous()
        import distributed  # noqa: F401  (importing it sets its loggers' levels: ours must come after)

        logging.getLogger("distributed").setLevel(logging.DEBUG if args.verbose > 1 else logging.WARNING)  # chatty INFO
        if plan.to_score:
            with dask_client(scheduler=args.scheduler, workers=args.workers) as client:
                report = run_cohort(plan, client, progress=progress)
        else:
            report = run_cohort(plan, progress=progress)
    counts = ", ".join(f"{report.count(s)} {s}" for s in ("ok", "skipped", "failed"))
    skipped = " (skipped: up to date from an earlier run into this folder)" if report.count("skipped") else ""
    say(f"{len(report.cohort)} recordings of {args.recording}: {counts}{skipped}")
    for row in report.failed.itertuples(index=False):
        say(f"  failed {row.recording}: {row.error}")
    patients = report.patients["subject"].nunique()
    say(f"wrote {args.out / 'cohort.csv'} and {args.out / 'patients.csv'} ({patients} patients)")
    if len(report.failed):
        failed = list(report.failed["recording"])
        raise ScoreFailures(
            f"{len(failed)} of {len(report.cohort)} run(s) of {args.recording} not scored: {', '.join(failed)} "
            f"(errors in {args.out / 'cohort.csv'}); the others are in {args.out}."
        )
    return 0


def _score_one(args, scorer, recording, output: ScoreOutput, out: Path, progress: bool, top: int) -> None:
    """Score ``recording`` with a model bundle or a marker and write its CSVs into ``out`` (inside ``output``)."""
    from sss_viewer.biomarkers import is_marker, score_with

    if is_marker(scorer):
        result = score_with(scorer, recording, progress=progress)
    else:
        result = score_with(
            scorer,
            recording,
            stride=args.stride,
            batch_size=args.batch_size,
            device=args.device,
            progress=progress,
            cache=_cache(args),
            artifacts=not args.keep_artifacts,
        )
    output.write(result.windows, out, "windows.csv")
    output.write(result.ranking_table(), out, "channels.csv")
    if len(result.excluded):
        output.write(result.excluded, out, "excluded.csv")
    say(f"{recording.label}: {_scorer_line(result, scorer)}")
    say(_ranking_text(result.channels, scorer.threshold, top=top, unit=(result.scorer_info or {}).get("unit")))
    say(f"wrote {out / 'windows.csv'} and {out / 'channels.csv'}")


def _scorer_line(result, scorer) -> str:
    """What ranked the channels and how it was validated, in one line."""
    info = result.scorer_info or {}
    if info:
        return f"{info.get('title', result.scorer)} ({info.get('reference', '')}; {info.get('validation', '')})"
    description = str((getattr(scorer, "info", None) or {}).get("description") or "a trained SSS model")
    return f"SSS model: {description}"


def _labels_for(recording, labels, source: Path):
    """SOZ vector of ``recording`` from a labels table (subject, channel, soz).

    Channels are matched as in ``train`` and ``evaluate``
    (:func:`sss_viewer.io.cohort.soz_from_table`: ``G11`` labels ``POL G11``, ``lpt7`` labels
    ``LPT07``), so one labels file labels the same channels everywhere.
    """
    from sss_viewer.io.cohort import soz_from_table

    soz = soz_from_table(recording, labels, source)
    if soz is not None:
        return soz
    if recording.subject:
        raise ValueError(f"{source} has no labels for subject {recording.subject!r}.")
    raise ValueError(
        f"{source} labels several subjects and the file name of {recording.source} names none; pass --subject."
    )

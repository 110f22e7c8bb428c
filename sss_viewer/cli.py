"""The ``sss-viewer`` command: synth, train, score, evaluate, demo."""

from __future__ import annotations

import argparse
import dataclasses
import json
import logging
import math
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path

from sss_viewer._lazy import MissingExtraError
from sss_viewer.engine.score_files import SCORE_MANIFEST, write_csv

logger = logging.getLogger("sss_viewer")

EXIT_ERROR = 1
"""Exit status of a command that failed at run time (a missing or unreadable file, a bad model folder)."""
EXIT_USAGE = 2
"""Exit status of a command line that is wrong (unknown option, missing argument, invalid choice), as argparse's."""


class UsageError(ValueError):
    """The command line is wrong in a way argparse cannot see (checked after parsing); exits 2."""


class _TrainingChoices(Sequence):
    """``choices`` of a ``train`` option: the tuple ``name`` of :mod:`sss_viewer.engine.config`, read on first use.

    That module imports torch; reading its option names only when an option is parsed or its help
    shown keeps ``sss-viewer --help`` and the torch-free commands fast without repeating them here.
    """

    def __init__(self, name: str):
        self._name = name

    def _values(self) -> tuple[str, ...]:
        from sss_viewer.engine import config

        return tuple(getattr(config, self._name))

    def __getitem__(self, index):
        return self._values()[index]

    def __len__(self) -> int:
        return len(self._values())

    def __iter__(self) -> Iterator[str]:
        return iter(self._values())

    def __contains__(self, value) -> bool:
        return value in self._values()


def _add_common(p: argparse.ArgumentParser) -> None:
    p.add_argument("-v", "--verbose", action="count", default=0, help="more logging (-vv for debug)")
    p.add_argument("-q", "--quiet", action="store_true", help="warnings and errors only, no progress bars")


def _add_device(p: argparse.ArgumentParser) -> None:
    p.add_argument("--device", default="auto", help="auto (CUDA when available), cpu or cuda (default: auto)")


DATA_HELP = "BIDS root (e.g. ds003029), cohort folder (cohort.tsv + labels.tsv) or a recording file"


def _add_cache(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--cache-dir",
        type=Path,
        default=None,
        help="preprocessed-channel cache (memory-mapped; default $SSS_VIEWER_CACHE or ~/.cache/sss-viewer)",
    )
    p.add_argument("--no-cache", action="store_true", help="preprocess in memory, write no cache")


def _add_labels(p: argparse.ArgumentParser, help_text: str) -> None:
    p.add_argument("--labels", type=Path, help=help_text)
    p.add_argument(
        "--labels-fallback",
        action="store_true",
        help="subjects the --labels file does not name keep the data's own labels (default: they are left unlabelled "
        "and out of training/evaluation; either way they are listed)",
    )


LABELS_HELP = "TSV/CSV with subject, channel, soz: the only labels of the subjects it names"


def _cache(args):
    """The SeriesCache the command's options ask for, or None."""
    from sss_viewer.preprocessing.cache import SeriesCache, default_cache_dir

    if args.no_cache:
        return None
    return SeriesCache(args.cache_dir or default_cache_dir())


def build_parser() -> argparse.ArgumentParser:
    """The argument parser with one sub-command per job."""
    from sss_viewer._version import __version__

    parser = argparse.ArgumentParser(
        prog="sss-viewer",
        description="Stochastic Sparse Sampling (SSS) for seizure-onset-zone localisation in intracranial EEG.",
        epilog="Exit status: 0 success, 1 runtime error (a missing or unreadable file, a bad model folder), "
        "2 usage error (unknown option, missing argument, invalid choice), 130 interrupted (Ctrl-C), "
        "143 terminated (SIGTERM).",
    )
    parser.add_argument(
        "--version", action="version", version=f"sss-viewer {__version__}", help="print the version and exit"
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    p = sub.add_parser("synth", help="write a deterministic synthetic multi-centre iEEG cohort (BrainVision + labels)")
    p.add_argument("--out", required=True, type=Path, help="output folder (created)")
    p.add_argument("--patients", type=int, default=12, help="number of patients (default 12)")
    p.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    p.add_argument(
        "--duration-scale", type=float, default=1.0, help="scale the real ds003029 run durations (default 1)"
    )
    p.add_argument("--max-channels", type=int, default=None, help="cap channels per patient (default: real counts)")
    p.add_argument("--runs", type=int, default=1, help="runs per patient (default 1)")
    p.add_argument(
        "--overwrite",
        action="store_true",
        help="write into a non-empty folder (files of the same names are replaced, others kept)",
    )
    _add_common(p)

    p = sub.add_parser("cohort", help="check a BIDS iEEG dataset and print its per-centre summary")
    p.add_argument("root", type=Path, help="BIDS root (with participants.tsv), e.g. a copy of OpenNeuro ds003029")
    p.add_argument(
        "--labels", type=Path, help="TSV/CSV with subject, channel, soz (default: the dataset's clinical sheet)"
    )
    p.add_argument("--json", action="store_true", help="print the summary as JSON")
    _add_common(p)

    p = sub.add_parser("train", help="train an SSS model on a labelled cohort or file")
    p.add_argument("data", type=Path, help=DATA_HELP)
    _add_labels(p, LABELS_HELP)
    p.add_argument(
        "--viewer-labels",
        type=Path,
        metavar="VIEWER_OUT",
        help="the viewer's output folder: the clinician's marks saved there (<recording>_desc-sssviewer_channels.tsv, "
        "keyed by the recording's path below DATA) are the labels: marked SOZ = 1, marked not SOZ = 0, unlabelled "
        "channels and channels marked bad are left out; recordings without marks are left out unless "
        "--labels-fallback (never read unless given; not with --labels)",
    )
    p.add_argument("--out", required=True, type=Path, help="model directory to write")
    p.add_argument(
        "--preset",
        default="default",
        choices=_TrainingChoices("TRAIN_PRESETS"),
        metavar="PRESET",
        help="training preset, one of %(choices)s: default (PatchTST, CPU-sized), paper (App. C budget), "
        "minirocket (the real-data recipe, Venn-Abers intervals), hydra / hydra_minirocket (the recipe with a Hydra "
        "or Hydra + MiniRocket local model), quick (the minirocket recipe on windows every 8.2 s: minutes on a laptop, "
        "the README's example); the options below override it (default: default)",
    )
    p.add_argument("--backbone", help="local model, e.g. patchtst or minirocket (default: the preset's)")
    p.add_argument("--epochs", type=int, help="training epochs (default: the preset's)")
    p.add_argument("--batch-size", type=int, help="windows per training batch (default: the preset's)")
    p.add_argument("--lr", type=float, help="Adam learning rate (default: the preset's)")
    p.add_argument("--window-length", type=int, help="window length L in preprocessed samples")
    p.add_argument(
        "--target-sfreq",
        type=float,
        help="common rate (Hz) every recording is resampled to before pooling (default preset: 250; 0 keeps native rates)",
    )
    p.add_argument(
        "--scale",
        choices=("channel", "recording", "shaft"),
        help="what each zero-mean channel is divided by: channel (its own SD, the per-channel z-score; the presets' "
        "default), recording (the median channel SD of its recording: amplitude differences between channels are "
        "kept) or shaft (the median SD of its shaft's channels)",
    )
    p.add_argument("--train-stride", type=int, help="stride of the training windows")
    p.add_argument("--windows-per-epoch", type=int, help="train each epoch on a random draw of this many windows")
    p.add_argument(
        "--calibrator",
        choices=("isotonic", "venn-abers", "none"),
        help="probability calibration of the window scores (default: the preset's: isotonic, venn-abers for the "
        "minirocket and hydra presets)",
    )
    p.add_argument(
        "--calibrate-on",
        choices=_TrainingChoices("CALIBRATE_ON"),
        metavar="WINDOWS",
        help="windows the calibrator is fit on, %(choices)s (default val)",
    )
    p.add_argument(
        "--split",
        choices=_TrainingChoices("SPLIT_MODES"),
        metavar="MODE",
        help="split by patient (default) or by channel (paper): %(choices)s",
    )
    p.add_argument(
        "--balance",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="--balance drops non-SOZ channels at random to 1:1 (paper), --no-balance keeps them all "
        "(default: the preset's, no balancing)",
    )
    p.add_argument("--window-loss-weight", type=float, help="weight of the window-level BCE (default 0)")
    p.add_argument(
        "--head-solver",
        choices=_TrainingChoices("HEAD_SOLVERS"),
        metavar="SOLVER",
        help="%(choices)s; lbfgs: fit a frozen-front-end model's head (minirocket, rocket) by full-batch L-BFGS, "
        "penalty chosen on validation (default adam)",
    )
    p.add_argument(
        "--refit-on-train-val",
        action="store_const",
        const=True,
        default=None,
        help="with --head-solver lbfgs and --calibrator none: after the penalty is chosen on validation, fit the "
        "standardisation and head once more on training + validation windows (the model's validation figures are "
        "then in-sample)",
    )
    p.add_argument("--seed", type=int, help="random seed of the split, sampling and initialisation (default 0)")
    p.add_argument(
        "--overwrite",
        action="store_true",
        help="replace an existing model directory (and start over instead of resuming an interrupted run's checkpoint)",
    )
    p.add_argument(
        "--resume",
        action="store_true",
        help="continue an interrupted run after its last completed epoch, from OUT.checkpoint.pt (written after every "
        "epoch; same command and data as the interrupted run)",
    )
    _add_cache(p)
    _add_device(p)
    _add_common(p)

    p = sub.add_parser(
        "score", help="score a recording (windows.csv, channels.csv) or a cohort on Dask (per run + cohort.csv)"
    )
    p.add_argument(
        "paths",
        nargs="+",
        type=Path,
        metavar="[MODEL] RECORDING",
        help="MODEL: a model directory (with --scorer sss, the default when a MODEL is given; without one, the bundled "
        "model). RECORDING: a recording file (EDF/BDF, BrainVision .vhdr, FIF, EEGLAB .set, .npz), or, for a model, a "
        "BIDS root / cohort folder (every run one Dask task, each into OUT/<run>/: windows.parquet, channels.csv, "
        "done.json; then OUT/cohort.csv and OUT/patients.csv)",
    )
    p.add_argument(
        "--scorer",
        metavar="NAME",
        help="what ranks the channels: sss (a trained model) or a training-free marker — "
        + ", ".join(_scorer_names())
        + " (default: sss with a MODEL, else the default scorer chosen on real "
        "recordings, docs/results.md §8)",
    )
    p.add_argument(
        "--keep-artifacts",
        action="store_true",
        help="score the windows the artifact detector flags too (default: they are left out of the channel scores; "
        "flagged channels are named in channels.csv either way)",
    )
    p.add_argument(
        "--weights",
        type=Path,
        metavar="FILE",
        help="--scorer combined: the weights file written by sss-viewer fit-combined",
    )
    p.add_argument(
        "--out",
        required=True,
        type=Path,
        help="output folder (empty, or pass --overwrite; a folder an earlier cohort run wrote is resumed: "
        "up-to-date runs are skipped). For a cohort it must be reachable by every worker at the same path",
    )
    p.add_argument(
        "--overwrite",
        action="store_true",
        help="score into a used output folder: first remove what the previous run wrote (listed in its manifest)",
    )
    where = p.add_mutually_exclusive_group()
    where.add_argument(
        "--workers",
        type=int,
        metavar="N",
        help="cohort: start a local Dask cluster of N single-threaded worker processes (default min(4, CPU cores))",
    )
    where.add_argument(
        "--scheduler",
        metavar="ADDRESS",
        help="cohort: score on the workers of a running Dask scheduler, e.g. tcp://host:8786 (the data and --out on "
        "a file system they all reach, at the same paths; --cache-dir the same path on each, a local disk per machine)",
    )
    p.add_argument(
        "--stride",
        type=int,
        help="window stride in preprocessed samples (default: the model's, a quarter window; a MiniRocket model reading windows within their channel scores any stride at the same cost)",
    )
    _add_labels(p, "TSV/CSV with subject, channel, soz to add a label column")
    p.add_argument("--subject", help="subject id of the recording (default: from a BIDS file name)")
    p.add_argument("--batch-size", type=int, default=1024, help="windows scored per batch (default 1024)")
    _add_cache(p)
    _add_device(p)
    _add_common(p)

    p = sub.add_parser(
        "scoreboard",
        help="every scorer (models, markers, the floors) on labelled real recordings: channel AUC and AUPRC per recording",
    )
    p.add_argument(
        "data",
        nargs="*",
        type=Path,
        help="BIDS roots, cohort folders or recording files with SOZ labels (their own, or --labels)",
    )
    _add_labels(p, "TSV/CSV with subject, channel, soz for DATA")
    p.add_argument(
        "--shared",
        type=Path,
        metavar="DIR",
        help="a data folder holding ezfragility-pt01/ and bonn-epilepsy/ (this project's ../shared/data): pt01 and "
        "Bonn D vs C are added",
    )
    p.add_argument(
        "--model",
        type=Path,
        action="append",
        default=[],
        metavar="DIR",
        help="a model directory to score with as well (repeatable; the bundled model is always included)",
    )
    p.add_argument(
        "--scorers", help="comma-separated marker names (default: every marker; the floors are always included)"
    )
    p.add_argument(
        "--synthetic",
        type=int,
        default=0,
        metavar="N",
        help="also score N held-out synthetic patients (seed 3; the rule of docs/results.md §8 uses 8)",
    )
    p.add_argument(
        "--combined",
        type=Path,
        action="append",
        default=[],
        metavar="FILE",
        help="a combined scorer's weights file (sss-viewer fit-combined) to score with as well (repeatable)",
    )
    p.add_argument("--out", type=Path, help="write the table as CSV (and the Markdown beside it as .md)")
    p.add_argument("--overwrite", action="store_true", help="replace an existing --out file")
    _add_common(p)

    p = sub.add_parser(
        "fit-combined",
        help="fit a centre's own combined scorer (markers + optional SSS model) on its labelled recordings, "
        "C chosen by leave-one-patient-out",
    )
    p.add_argument("data", nargs="+", type=Path, help="BIDS roots, cohort folders or recording files with SOZ labels")
    _add_labels(p, LABELS_HELP)
    p.add_argument("--out", required=True, type=Path, help="weights file to write (JSON)")
    p.add_argument("--overwrite", action="store_true", help="replace an existing --out file")
    p.add_argument("--model", type=Path, metavar="DIR", help="add this SSS model's channel scores as a feature")
    p.add_argument(
        "--markers", help="comma-separated marker names (default: amplitude, line_length, spike_rate, ripple_rate, hfa)"
    )
    _add_common(p)

    p = sub.add_parser(
        "model-accept",
        help="accept a deliberately edited model config.json (a retune): record its values as the model's own",
    )
    p.add_argument("model", type=Path, help="model directory whose config.json was edited on purpose")
    _add_common(p)

    p = sub.add_parser("evaluate", help="channel metrics of a model on held-out patients")
    p.add_argument("model", type=Path, help="model directory")
    p.add_argument("data", type=Path, help=DATA_HELP)
    _add_labels(p, LABELS_HELP)
    p.add_argument("--all", action="store_true", help="score every recording, not only the model's test split")
    p.add_argument("--json", action="store_true", help="print the metrics as JSON")
    _add_cache(p)
    _add_device(p)
    _add_common(p)

    p = sub.add_parser("experiment", help="run (or resume) one of the paper's protocols; --list shows them")
    p.add_argument("protocol", nargs="?", help="protocol name (see --list)")
    p.add_argument("--list", action="store_true", help="list every protocol and model")
    p.add_argument("--data", type=Path, help=DATA_HELP)
    p.add_argument("--out", type=Path, help="results folder (default experiments/<protocol>-<preset>)")
    p.add_argument(
        "--preset", help="cpu (2-core sizes), paper (App. C sizes, for a GPU) or bonn; default: the protocol's"
    )
    p.add_argument("--models", nargs="+", help="models (default: the protocol's, SSS and every baseline)")
    p.add_argument("--seeds", type=int, nargs="+", help="seeds (default: the preset's; repeats for cross-validation)")
    p.add_argument("--split-modes", nargs="+", choices=("channel", "patient", "cv"), help="default: the preset's")
    _add_labels(p, LABELS_HELP)
    _add_cache(p)
    _add_common(p)

    p = sub.add_parser(
        "compare",
        help="paired differences of cross-validated models on the same folds (corrected resampled t-test) and their cost",
    )
    p.add_argument(
        "folders", type=Path, nargs="+", help="--out folders of sss-viewer experiment (e.g. bonn, bonn-candidates)"
    )
    p.add_argument(
        "--candidate",
        required=True,
        help="the row to compare (a label of the runs; 'selected on inner validation' for a protocol's nested choice)",
    )
    p.add_argument("--against", nargs="+", required=True, help="rows to compare it with")
    p.add_argument("--metric", default="auc", help="test metric (default auc)")
    _add_common(p)

    p = sub.add_parser(
        "demo", help="synthesise a cohort, train a small model, score a held-out patient, print the ranking"
    )
    p.add_argument("--out", type=Path, default=Path("demo_output"), help="working folder (default ./demo_output)")
    p.add_argument("--patients", type=int, default=12, help="patients of the synthetic cohort (default 12)")
    p.add_argument(
        "--duration-scale", type=float, default=0.5, help="scale the real ds003029 run durations (default 0.5)"
    )
    p.add_argument("--max-channels", type=int, default=64, help="cap channels per patient (default 64)")
    p.add_argument("--epochs", type=int, default=None, help="training epochs (default: the default preset's)")
    _add_device(p)
    _add_common(p)
    return parser


def _setup_logging(args) -> bool:
    level = logging.WARNING if args.quiet else (logging.DEBUG if args.verbose > 1 else logging.INFO)
    logging.basicConfig(level=level, format="%(levelname)s %(name)s: %(message)s", stream=sys.stderr)
    return not args.quiet


def _cmd_synth(args, progress: bool) -> int:
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
    print(f"wrote synthetic cohort of {args.patients} patients to {out}")
    return 0


def _train_overrides(args) -> dict:
    names = {
        "backbone": "backbone",
        "epochs": "epochs",
        "batch_size": "batch_size",
        "lr": "lr",
        "window_length": "window_length",
        "train_stride": "train_stride",
        "calibrator": "calibrator",
        "calibrate_on": "calibrate_on",
        "split": "split",
        "balance": "balance",
        "window_loss_weight": "window_loss_weight",
        "seed": "seed",
        "device": "device",
        "windows_per_epoch": "windows_per_epoch",
        "head_solver": "head_solver",
        "refit_on_train_val": "refit_on_train_val",
    }
    overrides = {field: getattr(args, arg) for arg, field in names.items() if getattr(args, arg) is not None}
    if args.scale is not None:
        overrides["preprocess"] = {"scale": args.scale}  # train_preset applies it to the preset's preprocessing
    if "window_length" in overrides:
        overrides.setdefault("inference_stride", max(1, overrides["window_length"] // 4))
    return overrides


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


def _cmd_train(args, progress: bool) -> int:
    from sss_viewer.engine import distributed
    from sss_viewer.engine.bundle import check_model_destination
    from sss_viewer.engine.checkpoint import checkpoint_path_for
    from sss_viewer.engine.config import train_preset
    from sss_viewer.engine.training import train

    if args.out.exists() and args.out.is_dir() and any(args.out.iterdir()) and not args.overwrite:
        raise ValueError(f"Model directory {args.out} exists and is not empty; pass --overwrite to replace it.")
    check_model_destination(args.out)  # before training: nothing else in it would be lost
    checkpoint = checkpoint_path_for(args.out)
    if checkpoint.exists() and not (args.resume or args.overwrite):
        raise ValueError(
            f"An interrupted training run left its checkpoint at {checkpoint}: pass --resume to continue it, or "
            "--overwrite to start over (the checkpoint is then replaced)."
        )
    if args.resume and args.overwrite:
        raise ValueError("--resume continues the interrupted run and --overwrite starts over; pass one of them.")
    config = train_preset(args.preset, **_train_overrides(args))
    if args.target_sfreq is not None:
        preprocess = dataclasses.replace(config.preprocess, target_sfreq=args.target_sfreq or None)
        config = dataclasses.replace(config, preprocess=preprocess)
    recordings = _labelled_data(args)
    ranks = distributed.start(config.device)  # a no-op unless torchrun started several ranks
    try:
        with distributed.stopped_by_launcher(ranks):  # another rank failed: torchrun's SIGTERM becomes a clear error
            bundle = train(
                recordings,
                config,
                progress=progress and ranks.is_main,
                cache=_cache(args),
                checkpoint=checkpoint,
                resume=args.resume,
            )
    except RuntimeError as exc:
        hint = (
            f" The last completed epoch is in {checkpoint}: rerun the same command with --resume."
            if checkpoint.exists()
            else ""
        )
        lost = distributed.lost_rank(exc, ranks, hint)
        if lost is None:
            raise
        raise lost from exc
    finally:
        distributed.stop()
    if not ranks.is_main:  # rank 0 saves the model
        return 0
    if getattr(args, "viewer_labels", None) is not None:  # which sidecars labelled which recording, in the model
        bundle.info["viewer_labels"] = {
            "viewer_out": str(args.viewer_labels),
            "recordings": {r.label: r.info.get("viewer_labels", {}) for r in recordings},
        }
    bundle.save(args.out)
    checkpoint.unlink(missing_ok=True)  # the model is saved: nothing left to resume
    val = bundle.info["val_metrics"]
    fitted = (
        f"L-BFGS head, l2 {bundle.info['head_l2']:g}"
        if "head_l2" in bundle.info
        else f"best epoch {bundle.info['best_epoch']}"
    )
    print(
        f"saved model to {args.out}: {fitted}, validation AUC {val['auc']:.3f}, "
        f"threshold {bundle.threshold:.3f}; test split: {', '.join(bundle.info['split']['test']) or '-'}"
    )
    return 0


SCORE_OUTPUTS = ("windows.csv", "channels.csv", "excluded.csv")
"""The files ``score`` writes per recording."""


class ScoreOutput:
    """The output folder of one ``score`` run: refuses a used folder, clears its previous run, lists what it writes.

    Rules: ``--overwrite`` removes only the files a previous run's manifest (``sss-viewer-score.json``)
    lists, never files found by name; a non-empty folder without a manifest is refused, naming what is
    there. The previous run is removed only when the new results are ready (at the first
    :meth:`write`, after the input and model were read and scored), so a failing new run leaves
    the previous one whole.

    Parameters
    ----------
    root : Path
        The ``--out`` folder.
    overwrite : bool
        A non-empty folder is refused unless True and it holds a previous run's manifest.
    """

    def __init__(self, root: Path, overwrite: bool):
        self.root = root
        self.written: list[str] = []
        if root.exists() and not root.is_dir():
            raise ValueError(f"Output folder {root} exists and is not a folder.")
        entries = sorted(p.name for p in root.iterdir()) if root.is_dir() else []
        if entries and not overwrite:
            raise ValueError(
                f"Output folder {root} is not empty ({_names(entries)}); pass --overwrite to replace the previous "
                "run's files, or choose an empty folder."
            )
        self._pending = self._previous() if entries else []

    def _previous(self) -> list[Path]:
        """The files the previous run wrote, as its manifest lists them (read and checked now, removed later)."""
        manifest = self.root / SCORE_MANIFEST
        if not manifest.is_file():
            entries = sorted(p.name for p in self.root.iterdir())
            raise ValueError(
                f"Output folder {self.root} holds no {SCORE_MANIFEST} (no earlier score run wrote it), so --overwrite "
                f"would not touch its files ({_names(entries)}): --overwrite removes only what a run's manifest lists. "
                "Empty the folder yourself, or choose another --out."
            )
        try:
            listed = json.loads(manifest.read_text(encoding="utf-8"))["files"]
            if not isinstance(listed, list):
                raise TypeError("'files' is not a list")
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise ValueError(
                f"Cannot replace the previous run in {self.root}: {manifest} is unreadable ({exc})."
            ) from None
        root = self.root.resolve()
        inside = [
            self.root / n for n in listed if isinstance(n, str) and (self.root / n).resolve().is_relative_to(root)
        ]
        if len(inside) < len(listed):
            logger.warning(
                "%s lists %d path(s) outside %s; left alone.", manifest, len(listed) - len(inside), self.root
            )
        return [*inside, manifest]

    def clear_previous(self) -> None:
        """Remove the previous run's files (once; called when the new results are ready to be written)."""
        pending, self._pending = self._pending, []
        if not pending:
            return
        removed = 0
        for path in pending:
            if path.is_file() and not path.is_symlink():
                path.unlink()
                removed += 1
                if path.parent != self.root and not any(path.parent.iterdir()):
                    path.parent.rmdir()
        left = sorted(p.name for p in self.root.iterdir())
        logger.info(
            "%s: removed %d file(s) of the previous run%s.",
            self.root,
            removed,
            f"; kept {', '.join(left)}" if left else "",
        )

    def write(self, df, folder: Path, name: str) -> Path:
        """Write ``df`` as ``folder/name`` (atomically) and list it in the manifest."""
        self.clear_previous()
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / name
        write_csv(df, path)
        self.written.append(path.relative_to(self.root).as_posix())
        self._write_manifest()
        return path

    def _write_manifest(self) -> None:
        from sss_viewer._version import __version__
        from sss_viewer.fileio import atomic_write

        text = json.dumps({"command": "score", "sss_viewer_version": __version__, "files": self.written}, indent=1)
        atomic_write(self.root / SCORE_MANIFEST, lambda p: Path(p).write_text(text, encoding="utf-8"))


def _names(entries: list[str]) -> str:
    return ", ".join(entries[:5]) + (f" … ({len(entries)} in all)" if len(entries) > 5 else "")


class ScoreFailures(ValueError):
    """Some runs of a folder could not be scored (the others were)."""


def _scorer_names() -> list[str]:
    from sss_viewer.biomarkers import scorer_names

    return scorer_names(with_model=False)


def _bundled_model_dir() -> Path:
    """The bundled model's directory (package data; the viewer's demo model), without importing the viewer."""
    from importlib import resources

    return Path(str(resources.files("sss_viewer").joinpath("data", "demo", "model")))


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


def _cmd_score(args, progress: bool) -> int:
    from sss_viewer.biomarkers import FITTED, MODEL_SCORER, get_scorer
    from sss_viewer.engine.bundle import ModelBundle
    from sss_viewer.io.cohort import load_recording, read_labels

    _resolve_score_paths(args)
    _check_score_numbers(args)
    if args.recording.is_dir():
        if args.scorer != MODEL_SCORER:
            raise UsageError(
                f"--scorer {args.scorer} scores one recording file; {args.recording} is a folder (score a folder with a "
                "model, or rank its labelled recordings with every scorer: sss-viewer scoreboard FOLDER)."
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
    print(f"{len(report.cohort)} recordings of {args.recording}: {counts}{skipped}")
    for row in report.failed.itertuples(index=False):
        print(f"  failed {row.recording}: {row.error}")
    patients = report.patients["subject"].nunique()
    print(f"wrote {args.out / 'cohort.csv'} and {args.out / 'patients.csv'} ({patients} patients)")
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
    print(f"{recording.label}: {_scorer_line(result, scorer)}")
    print(_ranking_text(result.channels, scorer.threshold, top=top, unit=(result.scorer_info or {}).get("unit")))
    print(f"wrote {out / 'windows.csv'} and {out / 'channels.csv'}")


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


def _cmd_scoreboard(args, progress: bool) -> int:
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
    print(text)
    if summary["kind"].ne("floor").any():
        name, reason = board.choose_default(summary)
        print(f"\nBy the rule of docs/results.md §8 the default would be: {name} ({reason})")
    if args.out is not None:
        from sss_viewer.fileio import atomic_write

        write_csv(table, args.out)
        atomic_write(args.out.with_suffix(".md"), lambda p: Path(p).write_text(text + "\n", encoding="utf-8"))
        print(f"wrote {args.out} and {args.out.with_suffix('.md')}")
    return 0


def _cmd_fit_combined(args, progress: bool) -> int:
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
    print(
        f"fitted on {weights['n_patients']} patients, {weights['n_channels']} channels: C = {weights['C']:g}, "
        f"leave-one-patient-out channel AUC {'n/a' if auc is None else f'{auc:.3f}'}"
    )
    for name, coef in zip(weights["features"], weights["coefficients"]):
        print(f"  {name:<18} {coef:+.3f}")
    print(f"wrote {args.out}; score with: sss-viewer score RECORDING --scorer combined --weights {args.out} --out DIR")
    return 0


def _cmd_evaluate(args, progress: bool) -> int:
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
        print(json.dumps(report, indent=2, default=float))
    else:
        pooled = report["pooled"]
        print(
            f"{report['n_channels']} channels ({report['n_soz']} SOZ) in {report['n_recordings']} recordings: "
            + ", ".join(f"{k} {v:.3f}" for k, v in pooled.items())
        )
        if "heatmap_auc" in report:
            print(f"heat map abnormal-vs-normal AUC within SOZ channels (median): {report['heatmap_auc']:.3f}")
    return 0


def _cmd_demo(args, progress: bool) -> int:
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
    print(f"Demo model trained on synthetic data; ranking of held-out patient {recording.label}:")
    print(_ranking_text(result.channels, bundle.threshold))
    return 0


def _cmd_model_accept(args, progress: bool) -> int:
    from sss_viewer.engine.bundle import accept_config

    path = accept_config(args.model)
    print(f"accepted {path}: the model now loads with its current values (the weights are unchanged)")
    return 0


def _cmd_cohort(args, progress: bool) -> int:
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
        print(json.dumps(summary, indent=2))
        return 0
    print(f"BIDS dataset {summary['root']}; SOZ labels from {summary['soz_source'] or 'nowhere (unlabelled)'}")
    header = f"{'centre':<8} {'subjects':>8} {'runs':>5} {'channels':>8} {'hours':>6} {'SOZ frac':>8} {'no onset':>8}  rates (Hz)"
    print(header)
    print("-" * len(header))
    for row in summary["centres"] + ([summary["total"]] if summary["total"] else []):
        frac = "-" if row["soz_fraction"] is None else f"{row['soz_fraction']:.3f}"
        rates = ", ".join(f"{r:g}" for r in row["sampling_rates_hz"])
        print(
            f"{row['centre']:<8} {row['subjects']:>8} {row['runs']:>5} {row['channels']:>8} {row['hours']:>6.2f} "
            f"{frac:>8} {row['runs_without_onset']:>8}  {rates}"
        )
    for subject, names in summary["unmatched_soz"].items():
        print(f"sub-{subject}: SOZ names matching no channel: {', '.join(names)}")
    for run, reason in summary["skipped"].items():
        print(f"skipped {run}: {reason}")
    return 0


def _cmd_experiment(args, progress: bool) -> int:
    from sss_viewer.experiments import MODELS, PRESETS, PROTOCOLS, plan_runs
    from sss_viewer.experiments.protocols import check_models

    if args.list or not args.protocol:
        print("protocols:")
        for spec in PROTOCOLS.values():
            print(f"  {spec.name:<22} {spec.description}")
        print("models: " + ", ".join(MODELS) + " (and sss-<backbone> for SSS with another local model)")
        print("presets: " + ", ".join(PRESETS))
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
    results = run_experiment(
        args.protocol,
        recordings,
        out,
        preset=preset,
        models=args.models,
        seeds=args.seeds,
        split_modes=args.split_modes,
        progress=progress,
        cache=_cache(args),
    )
    print(f"{len(results)} runs; wrote {out / 'results.csv'} and {out / 'tables.md'}")
    return 0


def _cmd_compare(args, progress: bool) -> int:
    from sss_viewer.experiments.paired import cost_summary, load_many, markdown_comparison, paired_differences

    runs = load_many(args.folders)
    diffs = paired_differences(runs, args.candidate, args.against, metric=args.metric)
    print(markdown_comparison(diffs, cost_summary(runs, [args.candidate, *args.against]), metric=args.metric), end="")
    return 0


def _one_line(err: BaseException) -> str:
    """``err``'s message on one line (a multi-line message's lines joined with "; ")."""
    text = str(err) or type(err).__name__
    return "; ".join(line.strip() for line in text.splitlines() if line.strip())


COMMANDS = {
    "experiment": _cmd_experiment,
    "compare": _cmd_compare,
    "cohort": _cmd_cohort,
    "synth": _cmd_synth,
    "train": _cmd_train,
    "score": _cmd_score,
    "scoreboard": _cmd_scoreboard,
    "fit-combined": _cmd_fit_combined,
    "evaluate": _cmd_evaluate,
    "demo": _cmd_demo,
    "model-accept": _cmd_model_accept,
}

EXIT_TERMINATED = 128 + 15
"""Exit status after SIGTERM (as a shell reports a process it terminated)."""


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised in the main thread like Ctrl-C, so every ``finally`` and temporary-file cleanup runs."""


def _raise_terminated(signum, frame) -> None:
    raise Terminated()


def _check_labels_option(args) -> None:
    """``--labels`` names a file: a folder is refused by name (not as an unknown extension)."""
    labels = getattr(args, "labels", None)
    if labels is not None and Path(labels).is_dir():
        raise ValueError(
            f"--labels {labels} is a folder, not a labels file; pass the TSV/CSV file with subject, channel, soz "
            "columns."
        )


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``sss-viewer`` console script (and ``python -m sss_viewer``).

    Parameters
    ----------
    argv : list of str, optional
        The arguments (default: ``sys.argv[1:]``).

    Returns
    -------
    status : int
        0 success (``--help`` and ``--version`` included); 1 (:data:`EXIT_ERROR`) a runtime error
        (a missing or unreadable file, a bad model folder, an invalid value), reported as one
        ``error:`` line on stderr without a traceback (``-vv`` logs it); 2 (:data:`EXIT_USAGE`) a
        usage error (unknown option, missing argument, invalid choice), with argparse's message;
        130 interrupted (Ctrl-C); 143 (:data:`EXIT_TERMINATED`) terminated by SIGTERM, handled like
        Ctrl-C (one ``error:`` line, temporary files removed).
    """
    try:
        args = build_parser().parse_args(argv)
    except SystemExit as exc:  # argparse: --help/--version (0) or a usage error (2), already printed
        return exc.code if isinstance(exc.code, int) else (0 if exc.code is None else EXIT_USAGE)
    progress = _setup_logging(args)
    previous = _install_sigterm()
    try:
        _check_labels_option(args)
        return COMMANDS[args.command](args, progress)
    except UsageError as err:
        print(f"sss-viewer {args.command}: error: {err}", file=sys.stderr)
        return EXIT_USAGE
    except (ValueError, OSError, RuntimeError, MemoryError, MissingExtraError) as err:
        logger.debug("details", exc_info=True)
        print(f"error: {_one_line(err)}", file=sys.stderr)
        return EXIT_ERROR
    except KeyboardInterrupt as exc:  # Ctrl-C or SIGTERM: every output is written whole or not at all
        out = getattr(args, "out", None)
        where = f"; no partial model was written to {out}" if out is not None and args.command == "train" else ""
        if isinstance(exc, Terminated):
            print(f"error: terminated (SIGTERM){where}.", file=sys.stderr)
            return EXIT_TERMINATED
        print(f"error: interrupted{where}.", file=sys.stderr)
        return 130
    finally:
        _restore_sigterm(previous)


def _install_sigterm():
    """Make SIGTERM raise :class:`Terminated` in the main thread; the previous handler (None off the main thread)."""
    import signal
    import threading

    if threading.current_thread() is not threading.main_thread():
        return None
    return signal.signal(signal.SIGTERM, _raise_terminated)


def _restore_sigterm(previous) -> None:
    if previous is not None:
        import signal

        signal.signal(signal.SIGTERM, previous)


if __name__ == "__main__":
    sys.exit(main())

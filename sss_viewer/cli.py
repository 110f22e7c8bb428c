"""The ``sss-viewer`` command line: its arguments, exit codes and errors (the commands: :mod:`sss_viewer.commands`)."""

from __future__ import annotations

import argparse
import importlib
import logging
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path

from sss_viewer._lazy import MissingExtraError
from sss_viewer.commands._shared import UsageError
from sss_viewer.engine.score_files import SCORE_MANIFEST  # noqa: F401  (importable from here, as before)

logger = logging.getLogger("sss_viewer")

EXIT_ERROR = 1
"""Exit status of a command that failed at run time (a missing or unreadable file, a bad model folder)."""
EXIT_USAGE = 2
"""Exit status of a command line that is wrong (unknown option, missing argument, invalid choice), as argparse's."""


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


def _scorer_names() -> list[str]:
    from sss_viewer.biomarkers import scorer_names

    return scorer_names(with_model=False)


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
    _synth_parser(sub)
    _cohort_parser(sub)
    _train_parser(sub)
    _score_parser(sub)
    _scoreboard_parser(sub)
    _fit_combined_parser(sub)
    _model_accept_parser(sub)
    _evaluate_parser(sub)
    _experiment_parser(sub)
    _compare_parser(sub)
    _demo_parser(sub)
    return parser


def _synth_parser(sub) -> None:
    """Add ``sss-viewer synth`` and its options to ``sub`` (the sub-parsers)."""
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


def _cohort_parser(sub) -> None:
    """Add ``sss-viewer cohort`` and its options to ``sub`` (the sub-parsers)."""
    p = sub.add_parser("cohort", help="check a BIDS iEEG dataset and print its per-centre summary")
    p.add_argument("root", type=Path, help="BIDS root (with participants.tsv), e.g. a copy of OpenNeuro ds003029")
    p.add_argument(
        "--labels", type=Path, help="TSV/CSV with subject, channel, soz (default: the dataset's clinical sheet)"
    )
    p.add_argument("--json", action="store_true", help="print the summary as JSON")
    _add_common(p)


def _train_parser(sub) -> None:
    """Add ``sss-viewer train`` and its options to ``sub`` (the sub-parsers)."""
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
    _add_train_recipe(p)
    _add_train_fit(p)
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


def _add_train_recipe(p: argparse.ArgumentParser) -> None:
    """Add the ``train`` options of the preset and the windows: ``--preset`` to ``--windows-per-epoch``."""
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
    p.add_argument(
        "--gpu-kernels",
        choices=_TrainingChoices("PATCHTST_GPU_KERNELS"),
        metavar="KERNELS",
        help="PatchTST on a GPU: %(choices)s — which encoder sub-layers run through the project's fused Triton kernels "
        "(fused: feed-forward and attention). The model and its saved weights are the same; the CPU always runs the "
        "stock layers. Default stock, until a GPU has measured them faster (docs/results.md §3)",
    )
    p.add_argument("--epochs", type=int, help="training epochs (default: the preset's)")
    p.add_argument("--batch-size", type=int, help="windows per training batch (default: the preset's)")
    p.add_argument("--lr", type=float, help="Adam learning rate (default: the preset's)")
    p.add_argument("--window-length", type=int, help="window length L in preprocessed samples")
    p.add_argument(
        "--target-sfreq",
        type=float,
        help="common rate (Hz) every recording is resampled to before pooling "
        "(default preset: 250; 0 keeps native rates)",
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


def _add_train_fit(p: argparse.ArgumentParser) -> None:
    """Add the ``train`` options of calibration, split and head fit: ``--calibrator`` to ``--refit-on-train-val``."""
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


def _score_parser(sub) -> None:
    """Add ``sss-viewer score`` and its options to ``sub`` (the sub-parsers)."""
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
    _add_score_output(p)
    p.add_argument(
        "--stride",
        type=int,
        help="window stride in preprocessed samples (default: the model's, a quarter window; a MiniRocket model "
        "reading windows within their channel scores any stride at the same cost)",
    )
    _add_labels(p, "TSV/CSV with subject, channel, soz to add a label column")
    p.add_argument("--subject", help="subject id of the recording (default: from a BIDS file name)")
    p.add_argument("--batch-size", type=int, default=1024, help="windows scored per batch (default 1024)")
    _add_cache(p)
    _add_device(p)
    _add_common(p)


def _add_score_output(p: argparse.ArgumentParser) -> None:
    """Add the ``score`` options of where the results go and who scores a cohort: ``--out`` to ``--scheduler``."""
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


def _scoreboard_parser(sub) -> None:
    """Add ``sss-viewer scoreboard`` and its options to ``sub`` (the sub-parsers)."""
    p = sub.add_parser(
        "scoreboard",
        help="every scorer (models, markers, the floors) on labelled real recordings: "
        "channel AUC and AUPRC per recording",
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


def _fit_combined_parser(sub) -> None:
    """Add ``sss-viewer fit-combined`` and its options to ``sub`` (the sub-parsers)."""
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


def _model_accept_parser(sub) -> None:
    """Add ``sss-viewer model-accept`` and its options to ``sub`` (the sub-parsers)."""
    p = sub.add_parser(
        "model-accept",
        help="accept a deliberately edited model config.json (a retune): record its values as the model's own",
    )
    p.add_argument("model", type=Path, help="model directory whose config.json was edited on purpose")
    _add_common(p)


def _evaluate_parser(sub) -> None:
    """Add ``sss-viewer evaluate`` and its options to ``sub`` (the sub-parsers)."""
    p = sub.add_parser("evaluate", help="channel metrics of a model on held-out patients")
    p.add_argument("model", type=Path, help="model directory")
    p.add_argument("data", type=Path, help=DATA_HELP)
    _add_labels(p, LABELS_HELP)
    p.add_argument("--all", action="store_true", help="score every recording, not only the model's test split")
    p.add_argument("--json", action="store_true", help="print the metrics as JSON")
    _add_cache(p)
    _add_device(p)
    _add_common(p)


def _experiment_parser(sub) -> None:
    """Add ``sss-viewer experiment`` and its options to ``sub`` (the sub-parsers)."""
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
    p.add_argument(
        "--gpu-kernels",
        choices=_TrainingChoices("PATCHTST_GPU_KERNELS"),
        metavar="KERNELS",
        help="SSS runs with a PatchTST local model on a GPU: %(choices)s, as sss-viewer train --gpu-kernels. Recorded "
        "in each run's record; not a setting of the result (a resume with another value keeps the finished runs)",
    )
    _add_labels(p, LABELS_HELP)
    _add_cache(p)
    _add_common(p)


def _compare_parser(sub) -> None:
    """Add ``sss-viewer compare`` and its options to ``sub`` (the sub-parsers)."""
    p = sub.add_parser(
        "compare",
        help="paired differences of cross-validated models on the same folds (corrected resampled t-test) "
        "and their cost",
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


def _demo_parser(sub) -> None:
    """Add ``sss-viewer demo`` and its options to ``sub`` (the sub-parsers)."""
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


def _setup_logging(args) -> bool:
    level = logging.WARNING if args.quiet else (logging.DEBUG if args.verbose > 1 else logging.INFO)
    logging.basicConfig(level=level, format="%(levelname)s %(name)s: %(message)s", stream=sys.stderr)
    return not args.quiet


def _one_line(err: BaseException) -> str:
    """``err``'s message on one line (a multi-line message's lines joined with "; ")."""
    text = str(err) or type(err).__name__
    return "; ".join(line.strip() for line in text.splitlines() if line.strip())


COMMANDS = {
    "experiment": "experiment",
    "compare": "compare",
    "cohort": "cohort",
    "synth": "synth",
    "train": "train",
    "score": "score",
    "scoreboard": "scoreboard",
    "fit-combined": "fit_combined",
    "evaluate": "evaluate",
    "demo": "demo",
    "model-accept": "model_accept",
}
"""Each command's module in :mod:`sss_viewer.commands` (its ``run(args, progress)``), imported when it runs."""


def _run_command(args, progress: bool) -> int:
    """Import the command's module (only now: ``--help`` stays quick) and run it."""
    module = importlib.import_module(f"sss_viewer.commands.{COMMANDS[args.command]}")
    return module.run(args, progress)


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
        return _run_command(args, progress)
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

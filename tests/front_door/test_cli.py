"""The ``sss-viewer`` command line, in process: every sub-command, its exit status and its messages.

Contract (``sss_viewer.cli.main``): 0 success; 1 a runtime error (missing file, unreadable recording,
bad model folder, invalid value) with one ``error:`` line on stderr naming the file or parameter and
no traceback; 2 a usage error (unknown option, missing argument, invalid choice). Inputs are tiny:
a 4-patient synthetic cohort of 6-channel runs (≈ 8-60 s), a one-epoch PatchTST and the bundled
demo model. About 30-40 s on 2 cores.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import sss_viewer
from sss_viewer.cli import EXIT_ERROR, EXIT_USAGE, build_parser, main
from tests.fixtures.cli import one_error_line, run
from tests.fixtures.recordings import toy_recording

DEMO_MODEL = Path(sss_viewer.__file__).parent / "data" / "demo" / "model"
SYNTH = ["--patients", "4", "--duration-scale", "0.06", "--max-channels", "6"]
"""The smallest cohort the commands accept: a patient split needs 3 patients, the demo model a 4.1-s window."""
TINY_TRAIN = [
    "--epochs",
    "1",
    "--window-length",
    "128",
    "--train-stride",
    "64",
    "--batch-size",
    "64",
    "--device",
    "cpu",
]


@pytest.fixture(scope="module")
def cohort(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("cli") / "cohort"
    assert main(["synth", "--out", str(root), *SYNTH, "-q"]) == 0
    return root


@pytest.fixture(scope="module")
def model(cohort, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("cli-model") / "model"
    # --gpu-kernels: on the CPU the stock layers run; the saved model is the same model (test_gpu_kernels_...)
    command = ["train", str(cohort), "--out", str(out), *TINY_TRAIN, "--balance", "--gpu-kernels", "fused"]
    assert main([*command, "--no-cache", "-q"]) == 0
    return out


# ------------------------------------------------------------------------------------------------
# Parser: version, help, options
# ------------------------------------------------------------------------------------------------

COMMANDS = (
    "synth",
    "cohort",
    "train",
    "score",
    "scoreboard",
    "fit-combined",
    "evaluate",
    "experiment",
    "compare",
    "demo",
    "model-accept",
)


def test_every_command_is_tested_here():
    parser = build_parser()
    (sub,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    assert set(sub.choices) == set(COMMANDS)


def test_version(capsys):
    code, out, _ = run(capsys, "--version")
    assert code == 0 and out == f"sss-viewer {sss_viewer.__version__}\n"


@pytest.mark.parametrize("command", [None, *COMMANDS])
def test_help_exits_0(capsys, command):
    code, out, _ = run(capsys, *([command] if command else []), "--help")
    assert code == 0 and out.startswith("usage: sss-viewer")


def test_help_and_torch_free_commands_do_not_import_torch():
    code = (
        "import sys; from sss_viewer.cli import main; "
        "codes = [main(['--help']), main(['train', 'd', '--out', 'm', '--definitely-not-an-option'])]; "
        "print(codes, 'torch' in sys.modules)"
    )
    done = subprocess.run([sys.executable, "-c", code], check=False, capture_output=True, text=True, timeout=120)
    assert done.stdout.splitlines()[-1] == "[0, 2] False", done.stdout[-500:] + done.stderr[-2000:]


def test_the_training_choices_are_the_training_modules():
    from sss_viewer.engine import config as training

    parser = build_parser()
    for option, values in [
        ("--preset", training.TRAIN_PRESETS),
        ("--split", training.SPLIT_MODES),
        ("--calibrate-on", training.CALIBRATE_ON),
        ("--head-solver", training.HEAD_SOLVERS),
    ]:
        for value in values:
            assert (
                getattr(parser.parse_args(["train", "d", "--out", "m", option, value]), option[2:].replace("-", "_"))
                == value
            )


def test_python_dash_m_runs_the_command():
    argv = [sys.executable, "-m", "sss_viewer", "--version"]
    done = subprocess.run(argv, check=False, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and done.stdout == f"sss-viewer {sss_viewer.__version__}\n", done.stderr


def test_every_option_has_help_text():
    parser = build_parser()
    (sub,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    missing = [
        f"{name} {action.option_strings or action.dest}"
        for name, p in [("sss-viewer", parser), *sub.choices.items()]
        for action in p._actions
        if not (action.help and action.help.strip()) and not isinstance(action, argparse._SubParsersAction)
    ]
    assert not missing


def test_balance_can_be_turned_on_and_off_and_reaches_the_training_config(model):
    from sss_viewer.commands.train import _train_overrides
    from sss_viewer.engine.config import train_preset

    def config(*flags):
        return train_preset(
            "default", **_train_overrides(build_parser().parse_args(["train", "d", "--out", "m", *flags]))
        )

    assert config("--balance").balance is True
    assert config("--no-balance").balance is False
    assert config().balance == train_preset("default").balance
    assert config("--preset", "paper", "--no-balance").balance is False
    saved = json.loads((model / "config.json").read_text())  # trained with --balance
    assert saved["info"]["train_config"]["balance"] is True


def test_gpu_kernels_reach_patchtst_and_are_not_saved_with_the_model(model):
    from sss_viewer.commands.train import train_config

    def config(*flags):
        return train_config(build_parser().parse_args(["train", "d", "--out", "m", *flags]))

    assert config("--gpu-kernels", "fused-attention").model_params["gpu_kernels"] == "fused-attention"
    assert "gpu_kernels" not in config().model_params
    with pytest.raises(
        ValueError, match="applies to the patchtst local model; preset 'minirocket' trains 'minirocket'"
    ):
        config("--preset", "minirocket", "--gpu-kernels", "fused")
    with pytest.raises(SystemExit):
        build_parser().parse_args(["train", "d", "--out", "m", "--gpu-kernels", "triton"])
    saved = json.loads((model / "config.json").read_text())  # trained with --gpu-kernels fused on the CPU
    assert saved["model"]["name"] == "patchtst" and "gpu_kernels" not in saved["model"]
    assert saved["info"]["train_config"]["model_params"]["gpu_kernels"] == "fused"  # the run's record says how


# ------------------------------------------------------------------------------------------------
# Every sub-command succeeds on small real inputs
# ------------------------------------------------------------------------------------------------


def test_synth_writes_the_cohort(cohort):
    table = pd.read_csv(cohort / "cohort.tsv", sep="\t")
    assert len(table) == 4 and all((cohort / p).is_file() for p in table["path"])
    assert (cohort / "labels.tsv").is_file()


def test_cohort_summarises_the_dataset(capsys, cohort):
    code, out, _ = run(capsys, "cohort", cohort, "--json", "-q")
    assert code == 0 and json.loads(out)["total"]["runs"] == 4
    code, out, _ = run(capsys, "cohort", cohort, "-q")
    assert code == 0 and "centre" in out


def test_train_saves_a_model(model):
    assert (model / "config.json").is_file() and (model / "model.safetensors").is_file()


def test_train_refits_the_head_on_training_and_validation_when_asked(capsys, cohort, tmp_path):
    lbfgs = ["--backbone", "minirocket", "--head-solver", "lbfgs", "--calibrator", "none"]
    code, _, err = run(
        capsys,
        "train",
        cohort,
        "--out",
        tmp_path / "m",
        *TINY_TRAIN,
        *lbfgs,
        "--refit-on-train-val",
        "--no-cache",
        "-q",
    )
    assert code == 0, err
    info = json.loads((tmp_path / "m" / "config.json").read_text())["info"]
    assert info["train_config"]["refit_on_train_val"] is True
    assert [h["l2"] for h in info["refit_history"]] == [info["head_l2"]]
    # without the L-BFGS head (or with a calibrator) the flag is refused by name, before any data is read
    code, _, err = run(capsys, "train", cohort, "--out", tmp_path / "m2", *TINY_TRAIN, "--refit-on-train-val", "-q")
    assert code == EXIT_ERROR
    one_error_line(err, "refit_on_train_val", "head_solver='lbfgs'")
    assert not (tmp_path / "m2").exists()


def test_score_one_recording_with_the_demo_model(capsys, cohort, tmp_path):
    table = pd.read_csv(cohort / "cohort.tsv", sep="\t")
    vhdr = cohort / table["path"][0]
    code, out, _ = run(
        capsys, "score", DEMO_MODEL, vhdr, "--out", tmp_path / "out", "--device", "cpu", "--no-cache", "-q"
    )
    assert code == 0, out
    channels = pd.read_csv(tmp_path / "out" / "channels.csv")
    assert len(channels) == 6 and channels["score"].between(0, 1).all()
    # a used folder is refused (exit 1), and replaced with --overwrite
    code, _, err = run(capsys, "score", DEMO_MODEL, vhdr, "--out", tmp_path / "out", "--no-cache", "-q")
    assert code == EXIT_ERROR
    one_error_line(err, tmp_path / "out", "--overwrite")
    code, _, _ = run(capsys, "score", DEMO_MODEL, vhdr, "--out", tmp_path / "out", "--overwrite", "--no-cache", "-q")
    assert code == 0


def test_score_a_cohort_folder_and_evaluate(capsys, cohort, model, tmp_path):
    code, _, _ = run(
        capsys, "score", model, cohort, "--out", tmp_path / "scores", "--stride", "128", "--no-cache", "-q"
    )
    assert code == 0
    assert len(list((tmp_path / "scores").glob("*/channels.csv"))) == 4
    code, out, _ = run(capsys, "evaluate", model, cohort, "--all", "--json", "--no-cache", "-q")
    assert code == 0 and json.loads(out)["n_recordings"] == 4
    code, out, _ = run(capsys, "evaluate", model, cohort, "--no-cache", "-q")  # its test split only
    assert code == 0 and "channels" in out


def test_experiment_lists_and_runs_a_protocol(capsys, cohort, tmp_path):
    code, out, _ = run(capsys, "experiment", "--list")
    assert code == 0 and "ablation-calibration" in out
    out_dir = tmp_path / "experiment"
    code, out, _ = run(
        capsys,
        "experiment",
        "ablation-calibration",
        "--data",
        cohort,
        "--preset",
        "smoke",
        "--models",
        "sss",
        "--seeds",
        "0",
        "--split-modes",
        "patient",
        "--out",
        out_dir,
        "--gpu-kernels",
        "fused-attention",  # on the CPU the stock layers run; each run's record says what a GPU would have run
        "--no-cache",
        "-q",
    )
    assert code == 0, out
    results = pd.read_csv(out_dir / "results.csv")
    assert len(results) == 3 and (out_dir / "tables.md").is_file()
    assert (results["gpu_kernels"] == "fused-attention").all()


def test_demo(capsys, tmp_path):
    code, out, _ = run(capsys, "demo", "--out", tmp_path / "demo", *SYNTH, "--epochs", "1", "--device", "cpu", "-q")
    assert code == 0 and "held-out patient" in out
    assert (tmp_path / "demo" / "model" / "config.json").is_file()


# ------------------------------------------------------------------------------------------------
# Usage errors: exit 2 (argparse's message)
# ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("argv", "needle"),
    [
        ([], "required: COMMAND"),
        (["synth", "--out", "x", "--bogus"], "unrecognized arguments: --bogus"),
        (["frobnicate"], "invalid choice: 'frobnicate'"),
        (["synth"], "--out"),
        (["synth", "--out", "x", "--patients", "three"], "--patients"),
        (["cohort"], "root"),
        (["train", "data"], "--out"),
        (["train", "data", "--out", "m", "--preset", "nope"], "invalid choice: 'nope'"),
        (["train", "data", "--out", "m", "--split", "nope"], "invalid choice: 'nope'"),
        (["train", "data", "--out", "m", "--calibrator", "nope"], "invalid choice: 'nope'"),
        (["train", "data", "--out", "m", "--balance", "yes"], "unrecognized arguments: yes"),
        (["score", "rec.edf"], "--out"),
        (["score", "model", "rec.edf", "third", "--out", "o"], "expected [MODEL] RECORDING"),
        (["score", "rec.edf", "--out", "o", "--scorer", "nope"], "invalid choice 'nope'"),
        (["scoreboard", "--scorers", "nope", "--synthetic", "1"], "unknown ['nope']"),
        (["score", "model", "rec.edf", "--out", "o", "--stride"], "--stride"),
        (["evaluate", "model"], "data"),
        (["experiment", "nope"], "unknown protocol 'nope'"),
        (["experiment", "bonn"], "--data"),
        (["experiment", "bonn", "--data", "d", "--preset", "nope"], "--preset"),
        (["experiment", "bonn", "--data", "d", "--models", "nope"], "--models"),
        (["experiment", "bonn", "--split-modes", "nope"], "invalid choice: 'nope'"),
        (["experiment", "bonn", "--gpu-kernels", "triton"], "invalid choice: 'triton'"),
        (["demo", "--epochs"], "--epochs"),
    ],
)
def test_usage_errors_exit_2(capsys, argv, needle):
    code, _, err = run(capsys, *argv)
    assert code == EXIT_USAGE, err
    one_error_line(err, needle)


# ------------------------------------------------------------------------------------------------
# Runtime errors: exit 1, one line naming the file or parameter
# ------------------------------------------------------------------------------------------------


def test_missing_files_exit_1(capsys, cohort, tmp_path):
    missing = tmp_path / "nope.vhdr"
    code, _, err = run(capsys, "score", DEMO_MODEL, missing, "--out", tmp_path / "o1", "-q")
    assert code == EXIT_ERROR
    one_error_line(err, missing)
    code, _, err = run(capsys, "score", tmp_path / "no-model", missing, "--out", tmp_path / "o2", "-q")
    assert code == EXIT_ERROR
    one_error_line(err, tmp_path / "no-model")
    code, _, err = run(capsys, "train", tmp_path / "no-data", "--out", tmp_path / "m", "-q")
    assert code == EXIT_ERROR
    one_error_line(err, tmp_path / "no-data")
    code, _, err = run(capsys, "cohort", tmp_path / "no-root", "-q")
    assert code == EXIT_ERROR
    one_error_line(err, tmp_path / "no-root")
    labels = tmp_path / "no-labels.tsv"
    code, _, err = run(capsys, "train", cohort, "--labels", labels, "--out", tmp_path / "m", "-q")
    assert code == EXIT_ERROR
    one_error_line(err, labels)


def test_unreadable_recording_exits_1(capsys, tmp_path):
    bad = tmp_path / "garbage.edf"
    bad.write_bytes(b"this is not an EDF file" * 20)
    code, _, err = run(capsys, "score", DEMO_MODEL, bad, "--out", tmp_path / "out", "-q")
    assert code == EXIT_ERROR
    one_error_line(err, bad)


@pytest.mark.parametrize("damage", ["empty", "bad-json", "no-weights"])
def test_bad_model_folder_exits_1(capsys, cohort, tmp_path, damage):
    model = tmp_path / "model"
    model.mkdir()
    if damage != "empty":
        (model / "config.json").write_text(
            "{not json" if damage == "bad-json" else (DEMO_MODEL / "config.json").read_text()
        )
    code, _, err = run(capsys, "evaluate", model, cohort, "-q")
    assert code == EXIT_ERROR
    one_error_line(err, model)


def test_invalid_values_and_refusals_exit_1(capsys, cohort, model, tmp_path):
    code, _, err = run(capsys, "synth", "--out", tmp_path / "s", "--max-channels", "4", "-q")
    assert code == EXIT_ERROR
    one_error_line(err, "max_channels=4")
    code, _, err = run(capsys, "train", cohort, "--out", model, *TINY_TRAIN, "-q")  # an existing model
    assert code == EXIT_ERROR
    one_error_line(err, model, "--overwrite")
    code, _, err = run(capsys, "train", cohort, "--out", tmp_path / "m", "--epochs", "0", "-q")
    assert code == EXIT_ERROR
    one_error_line(err, "epochs")


# ------------------------------------------------------------------------------------------------
# One label → channel rule for score and train
# ------------------------------------------------------------------------------------------------


def labelled_cohort(root: Path, ch_names: list[str]) -> tuple[Path, Path]:
    """A one-recording cohort (subject p01, 20 s at 250 Hz) with these channel names; (root, its .vhdr)."""
    from sss_viewer.synth.bids import write_recording_bids

    recording = toy_recording("p01", 0, n_channels=len(ch_names), duration_s=20.0)
    recording.ch_names = list(ch_names)
    vhdr = write_recording_bids(recording, root)
    pd.DataFrame([{"subject": "p01", "centre": "JHH", "run": "01", "path": vhdr.relative_to(root).as_posix()}]).to_csv(
        root / "cohort.tsv", sep="\t", index=False
    )
    return root, vhdr


def labels_file(path: Path, rows: list[tuple[str, int]]) -> Path:
    pd.DataFrame([{"subject": "p01", "channel": c, "soz": s} for c, s in rows]).to_csv(path, sep="\t", index=False)
    return path


@pytest.mark.parametrize("spelling", ["LPT08", "lpt8", "LPT 8", "lpt 08"])
def test_score_and_train_label_the_same_channels(capsys, tmp_path, spelling):
    from sss_viewer.commands._shared import _labelled_data

    names = ["LPT08", "LPT09", "LPT10", "G1", "G2", "G3"]
    root, vhdr = labelled_cohort(tmp_path / "cohort", names)
    labels = labels_file(tmp_path / "labels.tsv", [(spelling, 1), ("LPT 9", 0), ("g01", 1)])
    expected = [True, False, False, True, False, False]
    # train / evaluate side: the cohort with --labels
    (recording,) = _labelled_data(argparse.Namespace(data=root, labels=labels, labels_fallback=False))
    assert recording.soz.tolist() == expected
    # score side: the single file with --labels
    code, out, _ = run(
        capsys, "score", DEMO_MODEL, vhdr, "--labels", labels, "--out", tmp_path / "out", "--no-cache", "-q"
    )
    assert code == 0, out
    channels = pd.read_csv(tmp_path / "out" / "channels.csv").set_index("channel")
    assert channels.loc[names, "label"].astype(bool).tolist() == expected


def test_an_ambiguous_label_is_an_error_naming_the_file_and_channels(capsys, tmp_path):
    from sss_viewer.commands._shared import _labelled_data

    root, vhdr = labelled_cohort(tmp_path / "cohort", ["LPT08", "LPT8", "G1", "G2", "G3", "G4"])
    labels = labels_file(tmp_path / "labels.tsv", [("lpt 8", 1), ("G1", 0)])
    with pytest.raises(ValueError, match="ambiguous") as caught:
        _labelled_data(argparse.Namespace(data=root, labels=labels, labels_fallback=False))
    for needle in (labels, "'lpt 8'", "LPT08", "LPT8"):
        assert str(needle) in str(caught.value)
    code, _, err = run(capsys, "train", root, "--labels", labels, "--out", tmp_path / "model", *TINY_TRAIN, "-q")
    assert code == EXIT_ERROR
    one_error_line(err, labels, "LPT08, LPT8")
    code, _, err = run(capsys, "score", DEMO_MODEL, vhdr, "--labels", labels, "--out", tmp_path / "out", "-q")
    assert code == EXIT_ERROR
    one_error_line(err, labels, "LPT08, LPT8")
    assert not (tmp_path / "model").exists() and not (tmp_path / "out" / "channels.csv").exists()
    # a channel name shared only by rows that are not SOZ is no ambiguity
    labels_file(labels, [("G1", 1), ("lpt8", 0)])
    (recording,) = _labelled_data(argparse.Namespace(data=root, labels=labels, labels_fallback=False))
    assert np.flatnonzero(recording.soz).tolist() == [2]

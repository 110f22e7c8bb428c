"""Outputs, model configs, score numbers and one-line errors (tester's report rows 5, 10, 11 and 12's CLI parts).

The rules checked here:

* Output commands never delete or overwrite what they did not write: ``score --overwrite`` removes
  only the files a previous run's manifest lists (a folder without one is refused, naming its
  files), and only once the new input and model were read and scored; ``synth --out`` refuses a
  non-empty folder unless ``--overwrite``.
* A model's ``config.json`` carries a digest of its own canonical JSON: an edit (even to valid
  values) is refused by name until ``sss-viewer model-accept MODEL``; a model saved before the digest
  loads with a warning (the bundled demo model, left unchanged, too).
* ``score --stride`` and ``--batch-size`` must be positive; a stride that leaves room for one window
  per channel is warned about, naming both lengths.
* Every failure is one line naming the file and the fix: a full disk under torch's writer, a window
  longer than every training recording, ``--labels`` naming a folder, a model path that is a file, a
  BIDS root without runs; SIGTERM of ``train`` ends like Ctrl-C (one line, exit 143, no temporary
  folder left beside ``--out``), checked with real processes and real signals.

Inputs are tiny: the bundled demo model, toy BrainVision files written by pybv, and one 4-patient
synthetic cohort shared by the module.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import re
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pybv
import pytest
import torch

import sss_viewer
from sss_viewer.cli import EXIT_ERROR, EXIT_TERMINATED, EXIT_USAGE, SCORE_MANIFEST, main
from sss_viewer.engine.bundle import CONFIG_FILE, CONFIG_HASH_KEY, WEIGHTS_FILE, ModelBundle, config_digest
from sss_viewer.engine.checkpoint import TrainingCheckpoint, checkpoint_path_for
from sss_viewer.engine.config import train_preset
from sss_viewer.engine.training import train
from tests.fixtures.cli import one_error_line, run
from tests.fixtures.recordings import toy_recording

DEMO_MODEL = Path(sss_viewer.__file__).parent / "data" / "demo" / "model"
SYNTH = ["--patients", "4", "--duration-scale", "0.06", "--max-channels", "6"]
"""tests/front_door/test_cli.py's smallest cohort the commands accept."""
TINY_TRAIN = [
    "--backbone",
    "patchtst",
    "--window-length",
    "128",
    "--train-stride",
    "64",
    "--batch-size",
    "64",
    "--device",
    "cpu",
    "--no-cache",
]
TINY = dict(
    window_length=128,
    train_stride=64,
    val_stride=64,
    batch_size=64,
    epochs=1,
    model_params={"d_model": 16, "d_ff": 32, "n_heads": 2, "n_layers": 1},
    device="cpu",
)
CLI = [sys.executable, "-m", "sss_viewer"]


@pytest.fixture(scope="module")
def cohort(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("outputs") / "cohort"
    assert main(["synth", "--out", str(root), *SYNTH, "-q"]) == 0
    return root


@pytest.fixture(scope="module")
def recording(tmp_path_factory) -> Path:
    """A 20-s, 6-channel toy recording at 250 Hz (the demo model's rate) as BrainVision."""
    return _write_vhdr(tmp_path_factory.mktemp("rec"), "toy", toy_recording("toy", 1, n_channels=6, duration_s=20.0))


@pytest.fixture(scope="module")
def model(tmp_path_factory) -> Path:
    """The demo model saved by the current code (so its config carries the digest)."""
    return ModelBundle.load(DEMO_MODEL).save(tmp_path_factory.mktemp("model") / "model")


def _write_vhdr(folder: Path, stem: str, rec) -> Path:
    pybv.write_brainvision(
        data=rec.data.astype(np.float64) * 1e-6,
        sfreq=rec.sfreq,
        ch_names=rec.ch_names,
        fname_base=stem,
        folder_out=folder,
        unit="µV",
        fmt="binary_float32",
    )
    return folder / f"{stem}.vhdr"


def _files(folder: Path) -> dict[str, bytes]:
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


@contextlib.contextmanager
def _tmpfs(path: Path, size: str):
    """A real, small tmpfs mounted at ``path`` for the block (the test is skipped where mounting is not allowed)."""
    path.mkdir(parents=True, exist_ok=True)
    mount = ["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(path)]
    proc = subprocess.run(mount, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here (needs root): {proc.stderr.strip()}")
    try:
        yield path
    finally:
        subprocess.run(["umount", "-l", str(path)], check=True)


# ------------------------------------------------------------------------------------------------
# 5. Output commands delete or overwrite only what they wrote, and only when the new run is ready
# ------------------------------------------------------------------------------------------------


def test_overwrite_without_a_manifest_deletes_nothing_and_names_the_files(capsys, recording, tmp_path):
    out = tmp_path / "out"
    (out / "patient2").mkdir(parents=True)
    for name in ("channels.csv", "windows.csv", "excluded.csv"):
        (out / name).write_text(f"my own {name}\n")
        (out / "patient2" / name).write_text(f"my own {name} too\n")
    before = _files(out)
    code, _, err = run(capsys, "score", DEMO_MODEL, recording, "--out", out, "--overwrite", "--no-cache", "-q")
    assert code == EXIT_ERROR
    one_error_line(err, str(out), f"holds no {SCORE_MANIFEST}", "channels.csv, excluded.csv, patient2, windows.csv")
    assert _files(out) == before


@pytest.mark.parametrize("bad", ["unreadable-input", "unscorable-input"])
def test_overwrite_keeps_the_previous_run_when_the_new_one_fails(capsys, recording, tmp_path, bad):
    out = tmp_path / "out"
    assert run(capsys, "score", DEMO_MODEL, recording, "--out", out, "--no-cache", "-q")[0] == 0
    before = _files(out)
    assert {"windows.csv", "channels.csv", SCORE_MANIFEST} <= set(before)
    if bad == "unreadable-input":
        new = tmp_path / "broken.vhdr"
        new.write_text("not a BrainVision header\n")
    else:  # read, then refused by the model: shorter than one of its windows
        new = _write_vhdr(tmp_path, "short", toy_recording("short", 2, n_channels=6, duration_s=2.0))
    code, _, err = run(capsys, "score", DEMO_MODEL, new, "--out", out, "--overwrite", "--no-cache", "-q")
    assert code == EXIT_ERROR
    one_error_line(err, new.name if bad == "unreadable-input" else "shorter than one")
    assert _files(out) == before


def test_overwrite_still_replaces_a_previous_run(capsys, recording, tmp_path):
    out = tmp_path / "out"
    assert run(capsys, "score", DEMO_MODEL, recording, "--out", out, "--no-cache", "-q")[0] == 0
    (out / "channels.csv").write_text("stale\n")
    (out / "notes.txt").write_text("mine\n")
    assert run(capsys, "score", DEMO_MODEL, recording, "--out", out, "--overwrite", "--no-cache", "-q")[0] == 0
    assert (out / "notes.txt").read_text() == "mine\n" and len(pd.read_csv(out / "channels.csv")) == 6


def test_synth_refuses_a_non_empty_folder_unless_overwrite(capsys, tmp_path):
    out = tmp_path / "mine"
    out.mkdir()
    (out / "labels.tsv").write_text("subject\tchannel\tsoz\nme\tA1\t1\n")
    tiny = ["--patients", "1", "--duration-scale", "0.05", "--max-channels", "6", "-q"]
    code, _, err = run(capsys, "synth", "--out", out, *tiny)
    assert code == EXIT_ERROR
    one_error_line(err, str(out), "not empty (labels.tsv)", "--overwrite")
    assert _files(out) == {"labels.tsv": b"subject\tchannel\tsoz\nme\tA1\t1\n"}
    code, _, _ = run(capsys, "synth", "--out", out, *tiny, "--overwrite")
    assert code == 0 and "me" not in pd.read_csv(out / "labels.tsv", sep="\t")["subject"].tolist()


# ------------------------------------------------------------------------------------------------
# 10. config.json carries a digest of itself: edits are refused by name until model-accept
# ------------------------------------------------------------------------------------------------


def _edit_config(model: Path, **values) -> None:
    config = json.loads((model / CONFIG_FILE).read_text())
    (model / CONFIG_FILE).write_text(json.dumps({**config, **values}, indent=2))


def test_a_saved_config_records_the_digest_of_its_canonical_json(model):
    config = json.loads((model / CONFIG_FILE).read_text())
    assert re.fullmatch(r"[0-9a-f]{64}", config[CONFIG_HASH_KEY])
    assert config[CONFIG_HASH_KEY] == config_digest(config)
    # canonical: the same content in another key order and layout has the same digest
    shuffled = dict(reversed(list(config.items())))
    assert config_digest(shuffled) == config[CONFIG_HASH_KEY]


def test_a_valid_edit_is_refused_by_name_until_model_accept(capsys, model, recording, tmp_path):
    edited = tmp_path / "model"
    shutil.copytree(model, edited)
    _edit_config(edited, threshold=0.123)  # a valid value: validation alone would load it
    with pytest.raises(
        ValueError,
        match=rf"{CONFIG_FILE} of {re.escape(str(edited))} was edited after training.*"
        rf"sss-viewer model-accept {re.escape(str(edited))}",
    ):
        ModelBundle.load(edited)
    code, _, err = run(capsys, "score", edited, recording, "--out", tmp_path / "out", "--no-cache", "-q")
    assert code == EXIT_ERROR
    one_error_line(err, str(edited), "edited after training", "model-accept")
    assert not (tmp_path / "out").exists()

    code, out, _ = run(capsys, "model-accept", edited, "-q")
    assert code == 0 and f"accepted {edited / CONFIG_FILE}" in out
    assert ModelBundle.load(edited).threshold == pytest.approx(0.123)
    assert (edited / WEIGHTS_FILE).read_bytes() == (model / WEIGHTS_FILE).read_bytes()


def test_model_accept_refuses_weights_that_do_not_match(capsys, model, tmp_path):
    edited = tmp_path / "model"
    shutil.copytree(model, edited)
    weights = bytearray((edited / WEIGHTS_FILE).read_bytes())
    weights[-1] ^= 1
    (edited / WEIGHTS_FILE).write_bytes(bytes(weights))
    config_before = (edited / CONFIG_FILE).read_bytes()
    code, _, err = run(capsys, "model-accept", edited, "-q")
    assert code == EXIT_ERROR
    one_error_line(err, str(edited), "SHA-256")
    assert (edited / CONFIG_FILE).read_bytes() == config_before


def test_a_model_saved_before_the_digest_loads_with_a_warning(model, tmp_path, caplog):
    old = tmp_path / "model"
    shutil.copytree(model, old)
    config = json.loads((old / CONFIG_FILE).read_text())
    del config[CONFIG_HASH_KEY]
    (old / CONFIG_FILE).write_text(json.dumps(config))
    with caplog.at_level(logging.WARNING, logger="sss_viewer.engine.bundle"):
        bundle = ModelBundle.load(old)
    assert bundle.threshold == ModelBundle.load(model).threshold
    assert f"{old / CONFIG_FILE} records no {CONFIG_HASH_KEY}" in caplog.text and "model-accept" in caplog.text


def test_the_bundled_demo_model_loads_quietly_and_model_accept_leaves_it_alone(capsys, caplog):
    before = _files(DEMO_MODEL)
    assert CONFIG_HASH_KEY not in json.loads(before[CONFIG_FILE])  # shipped before the digest (the demo's cache key)
    with caplog.at_level(logging.WARNING, logger="sss_viewer.engine.bundle"):
        ModelBundle.load(DEMO_MODEL)
    assert [r.getMessage() for r in caplog.records if r.name == "sss_viewer.engine.bundle"] == []
    code, _, err = run(capsys, "model-accept", DEMO_MODEL, "-q")
    assert code == EXIT_ERROR
    one_error_line(err, f"{DEMO_MODEL} is the model shipped with sss-viewer", "copy the folder")
    assert _files(DEMO_MODEL) == before


# ------------------------------------------------------------------------------------------------
# 11. score --stride / --batch-size: positive; a stride that leaves one window per channel is warned about
# ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("option", "value"), [("--stride", "0"), ("--stride", "-64"), ("--batch-size", "0")])
def test_score_refuses_non_positive_stride_and_batch_size(capsys, recording, tmp_path, option, value):
    code, _, err = run(capsys, "score", DEMO_MODEL, recording, "--out", tmp_path / "out", option, value, "-q")
    assert code == EXIT_USAGE
    one_error_line(err, f"argument {option}", f"got {value}")
    assert not (tmp_path / "out").exists()


def test_a_stride_leaving_one_window_per_channel_is_warned_naming_both_lengths(capsys, recording, tmp_path, caplog):
    # 20 s at 250 Hz = 5000 samples, window 1024: a stride of 4000 leaves only the first window
    score = ["score", DEMO_MODEL, recording, "--no-cache", "-q", "--out"]
    with caplog.at_level(logging.WARNING, logger="sss_viewer"):
        code, _, _ = run(capsys, *score, tmp_path / "a", "--stride", "4000")
    assert code == 0
    (message,) = [r.getMessage() for r in caplog.records if r.name == "sss_viewer" and r.levelno == logging.WARNING]
    assert "--stride 4000" in message and "(5000 preprocessed samples, window 1024)" in message
    assert "at most 3976" in message
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="sss_viewer"):
        code, _, _ = run(capsys, *score, tmp_path / "b", "--stride", "512")
    assert code == 0 and [r for r in caplog.records if r.name == "sss_viewer"] == []


# ------------------------------------------------------------------------------------------------
# 12. One-line messages naming the file and the fix
# ------------------------------------------------------------------------------------------------


def test_checkpoint_on_a_full_disk_names_the_path_and_the_free_space(tmp_path):
    with _tmpfs(tmp_path / "small", "16k") as small:
        checkpoint = TrainingCheckpoint(small / "m.checkpoint.pt", "fingerprint")
        with pytest.raises(OSError) as err:
            checkpoint.save({"weights": torch.zeros(100_000)})  # torch raises "[enforce fail at inline_container.cc…"
        message = str(err.value)
        assert message.startswith(f"Cannot write the training checkpoint {small / 'm.checkpoint.pt'}: ")
        assert re.search(rf"\([\d.,]+ MB free on the disk of {re.escape(str(small))}; free some space", message)
        assert "inline_container" not in message and "\n" not in message
        assert list(small.iterdir()) == []


def test_model_save_on_a_full_disk_names_the_free_space(tmp_path):
    bundle = ModelBundle.load(DEMO_MODEL)
    with _tmpfs(tmp_path / "small", "16k") as small:
        with pytest.raises(OSError) as err:
            bundle.save(small / "model")
        assert f"Cannot save the model to {small / 'model'}: No space left on device (" in str(err.value)
        assert re.search(rf"\([\d.,]+ MB free on the disk of {re.escape(str(small))}; free some space", str(err.value))
        assert list(small.iterdir()) == []


def test_train_with_a_window_longer_than_every_recording_says_so():
    recordings = [toy_recording(f"p{i}", i, duration_s=3.0) for i in range(4)]  # 750 samples at 250 Hz
    config = train_preset("default", **{**TINY, "window_length": 1024, "train_stride": 256, "val_stride": 256})
    with pytest.raises(ValueError) as err:
        train(recordings, config, progress=False)
    assert str(err.value).startswith(
        "The training window (1024 preprocessed samples = 4.10 s at 250 Hz) is longer than every training recording "
        "(the longest, "
    )
    assert str(err.value).endswith(
        ", gives 750 samples = 3.00 s); pass a --window-length of at most 750, or longer recordings."
    )


def test_labels_naming_a_folder_says_it_is_a_folder(capsys, recording, tmp_path):
    code, _, err = run(capsys, "score", DEMO_MODEL, recording, "--out", tmp_path / "out", "--labels", tmp_path, "-q")
    assert code == EXIT_ERROR
    one_error_line(err, f"--labels {tmp_path} is a folder, not a labels file")


def test_a_model_path_that_is_a_file_says_so(capsys, recording, tmp_path):
    code, _, err = run(capsys, "score", DEMO_MODEL / CONFIG_FILE, recording, "--out", tmp_path / "out", "-q")
    assert code == EXIT_ERROR
    one_error_line(err, f"Model path {DEMO_MODEL / CONFIG_FILE} is a file, not a model folder")


def test_cohort_of_a_bids_root_without_runs_exits_1(capsys, tmp_path):
    root = tmp_path / "bids"
    root.mkdir()
    (root / "dataset_description.json").write_text(json.dumps({"Name": "empty", "BIDSVersion": "1.8.0"}))
    (root / "participants.tsv").write_text("participant_id\tsite\nsub-01\tJHH\n")
    code, out, err = run(capsys, "cohort", root, "-q")
    assert code == EXIT_ERROR and out == ""
    one_error_line(err, f"{root} holds no readable iEEG run")


def test_train_on_a_full_disk_is_one_line_naming_the_checkpoint(capsys, cohort, tmp_path):
    with _tmpfs(tmp_path / "small", "16k") as small:
        out = small / "model"
        code, _, err = run(capsys, "train", cohort, "--out", out, *TINY_TRAIN, "--epochs", "2", "-q")
        assert code == EXIT_ERROR
        one_error_line(err, f"Cannot write the training checkpoint {checkpoint_path_for(out)}", "MB free")
        assert list(small.iterdir()) == []


SAVE_THEN_SIGTERM = textwrap.dedent(
    """
    import os, signal, sys
    from sss_viewer.cli import main
    from sss_viewer.engine import bundle, training

    demo = bundle.ModelBundle.load(sys.argv[1])
    training.train = lambda *args, **kwargs: demo  # the save is the point: skip the fit
    write = bundle._write_synced

    def write_then_terminated(path, data):
        write(path, data)
        if path.name == bundle.CONFIG_FILE:  # both files written into the hidden folder, not yet swapped in
            os.kill(os.getpid(), signal.SIGTERM)

    bundle._write_synced = write_then_terminated
    sys.exit(main(["train", sys.argv[2], "--out", sys.argv[3], "--no-cache", "-q"]))
    """
)


def test_sigterm_while_train_saves_leaves_no_hidden_folder(cohort, tmp_path):
    out = tmp_path / "runs" / "model"
    done = subprocess.run(
        [sys.executable, "-c", SAVE_THEN_SIGTERM, str(DEMO_MODEL), str(cohort), str(out)],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == EXIT_TERMINATED, done.stderr[-2000:]
    assert one_error_line(done.stderr) == f"error: terminated (SIGTERM); no partial model was written to {out}."
    assert sorted(p.name for p in out.parent.iterdir()) == []


def test_sigterm_during_training_exits_143_in_one_line_and_keeps_the_checkpoint(cohort, tmp_path):
    out = tmp_path / "model"
    checkpoint = checkpoint_path_for(out)
    command = [*CLI, "train", str(cohort), "--out", str(out), *TINY_TRAIN, "--epochs", "500", "-q"]
    job = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 300
    try:
        while job.poll() is None and time.monotonic() < deadline and not checkpoint.exists():
            time.sleep(0.05)
        assert job.poll() is None, f"train ended ({job.returncode}) before its first checkpoint"
        job.send_signal(signal.SIGTERM)
        _, stderr = job.communicate(timeout=120)
    finally:
        if job.poll() is None:
            job.kill()
            job.wait()
    assert job.returncode == EXIT_TERMINATED, stderr[-2000:]
    assert one_error_line(stderr) == f"error: terminated (SIGTERM); no partial model was written to {out}."
    assert sorted(p.name for p in tmp_path.iterdir()) == [checkpoint.name]  # resumable; no model, no hidden .tmp
    assert not os.path.exists(out)


def test_a_participant_listed_twice_is_refused_naming_the_file(tmp_path):
    from sss_viewer.io.bids import read_participants

    (tmp_path / "participants.tsv").write_text("participant_id\tsite\nsub-pt1\tNIH\nsub-pt2\tJHH\nsub-pt1\tNIH\n")
    with pytest.raises(ValueError, match=r"participants\.tsv lists participant\(s\) sub-pt1 more than once"):
        read_participants(tmp_path)


def test_an_emptied_channels_csv_of_a_finished_run_is_named(tmp_path):
    import pandas as pd

    from sss_viewer.cohort_scoring._summary import run_channels

    (tmp_path / "rec1").mkdir()
    (tmp_path / "rec1" / "channels.csv").write_text("")
    cohort = pd.DataFrame({"recording": ["rec1"], "subject": ["pt1"], "status": ["ok"]})
    with pytest.raises(ValueError, match=r"rec1/channels\.csv is empty"):
        run_channels(tmp_path, cohort)

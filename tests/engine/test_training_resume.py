"""``train --resume``: a run killed after some epochs continues from its checkpoint to the uninterrupted model."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
import torch
from safetensors.numpy import load_file

from sss_viewer.cli import main
from sss_viewer.engine.checkpoint import checkpoint_path_for

EPOCHS = 5


@pytest.fixture(scope="module")
def cohort(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("resume") / "cohort"
    assert (
        main(["synth", "--out", str(root), "--patients", "8", "--duration-scale", "0.15", "--max-channels", "16", "-q"])
        == 0
    )
    return root


def _train_args(cohort: Path, out: Path, cache: Path, epochs: int = EPOCHS) -> list[str]:
    # PatchTST trains its whole network (dropout, Adam moments, the schedule): all of it must resume
    return [
        "train",
        str(cohort),
        "--out",
        str(out),
        "--backbone",
        "patchtst",
        "--window-length",
        "256",
        "--epochs",
        str(epochs),
        "--device",
        "cpu",
        "--cache-dir",
        str(cache),
        "-q",
    ]


def _checkpoint_epoch(path: Path) -> int:
    try:
        return int(torch.load(path, map_location="cpu", weights_only=True)["epoch"])
    except Exception:  # not written yet, or being replaced
        return 0


def kill_after_epoch(command: list[str], checkpoint: Path, epoch: int, timeout_s: float = 300) -> int:
    """Run ``command``, SIGKILL it once ``checkpoint`` holds ``epoch``; returns the epoch the checkpoint had."""
    job = subprocess.Popen(command)
    deadline = time.monotonic() + timeout_s
    try:
        while job.poll() is None and time.monotonic() < deadline:
            if checkpoint.exists() and _checkpoint_epoch(checkpoint) >= epoch:
                job.send_signal(signal.SIGKILL)
                break
            time.sleep(0.02)
        code = job.wait(timeout=60)
    finally:
        if job.poll() is None:
            job.kill()
    assert code == -signal.SIGKILL, f"the run ended ({code}) before its checkpoint reached epoch {epoch}"
    return _checkpoint_epoch(checkpoint)


def _same_model(a: Path, b: Path) -> None:
    """Equal to float32 rounding: the resumed process's BLAS may sum in another order (thread timing, memory
    alignment), which a bit-equal comparison would flag; a lost optimiser, schedule or RNG state moves the weights
    by orders of magnitude more (every Adam step moves a weight by up to lr = 1e-3)."""
    wa, wb = load_file(str(a / "model.safetensors")), load_file(str(b / "model.safetensors"))
    assert wa.keys() == wb.keys()
    for key in wa:
        np.testing.assert_allclose(wa[key], wb[key], rtol=0, atol=2e-4, err_msg=key)
    difference = np.sqrt(sum(float(np.sum((wa[k] - wb[k]) ** 2)) for k in wa))
    norm = np.sqrt(sum(float(np.sum(wa[k] ** 2)) for k in wa))
    assert difference <= 1e-3 * norm, (difference, norm)  # the whole model, relative
    ha = json.loads((a / "config.json").read_text())["info"]
    hb = json.loads((b / "config.json").read_text())["info"]
    assert [h["train_loss"] for h in ha["history"]] == pytest.approx([h["train_loss"] for h in hb["history"]], abs=1e-4)
    assert [h["val_auc"] for h in ha["history"]] == pytest.approx([h["val_auc"] for h in hb["history"]], abs=0.02)


def test_a_killed_run_resumes_to_the_uninterrupted_model(cohort, tmp_path):
    cache = tmp_path / "cache"
    assert main(_train_args(cohort, tmp_path / "whole", cache)) == 0
    assert not checkpoint_path_for(tmp_path / "whole").exists()  # removed once the model is saved

    out = tmp_path / "part"
    checkpoint = checkpoint_path_for(out)
    done = kill_after_epoch([sys.executable, "-m", "sss_viewer", *_train_args(cohort, out, cache)], checkpoint, epoch=2)
    assert 2 <= done < EPOCHS
    assert not out.exists()  # killed before saving: no model, the checkpoint beside it

    assert main(_train_args(cohort, out, cache)) == 1  # a checkpoint is never replaced unasked
    assert _checkpoint_epoch(checkpoint) == done
    assert main([*_train_args(cohort, out, cache), "--resume"]) == 0
    assert not checkpoint.exists()
    _same_model(tmp_path / "whole", out)


def test_resume_refuses_another_run_s_checkpoint_and_a_missing_one(cohort, tmp_path, capsys):
    cache = tmp_path / "cache"
    out = tmp_path / "model"
    assert main([*_train_args(cohort, out, cache), "--resume"]) == 1
    assert f"no training checkpoint at {checkpoint_path_for(out)}" in capsys.readouterr().err
    checkpoint = checkpoint_path_for(out)
    kill_after_epoch([sys.executable, "-m", "sss_viewer", *_train_args(cohort, out, cache)], checkpoint, epoch=1)
    before = checkpoint.read_bytes()
    assert main([*_train_args(cohort, out, cache, epochs=EPOCHS + 1), "--resume"]) == 1  # other options
    assert "checkpoint of a run with another configuration or other data" in capsys.readouterr().err
    assert main([*_train_args(cohort, out, cache), "--resume", "--overwrite"]) == 1
    assert "pass one of them" in capsys.readouterr().err
    assert checkpoint.read_bytes() == before  # refusing left it as it was
    checkpoint.write_bytes(b"not a checkpoint")
    assert main([*_train_args(cohort, out, cache), "--resume"]) == 1
    assert "not a readable training checkpoint" in capsys.readouterr().err
    assert main([*_train_args(cohort, out, cache), "--overwrite"]) == 0  # starting over replaces it
    assert not checkpoint.exists() and (out / "model.safetensors").is_file()


@pytest.mark.slow
def test_a_torchrun_job_that_lost_a_rank_resumes_on_two_ranks_to_the_uninterrupted_model(cohort, tmp_path):
    """Kill rank 1 of a 2-rank job after epoch 2: a clear error, then ``torchrun ... --resume`` ends where an
    uninterrupted 2-rank run ends (rank 0 wrote the checkpoint; every rank reads it)."""
    import os

    from tests.engine.test_distributed import SURVIVOR_SAYS_WHY, _children

    torchrun = Path(sys.executable).with_name("torchrun")
    if not torchrun.exists() or not Path("/proc/self/task").exists():
        pytest.skip("needs torchrun and /proc")
    cache = tmp_path / "cache"
    env = {k: v for k, v in os.environ.items() if k not in ("RANK", "WORLD_SIZE", "LOCAL_RANK")}

    def job(out: Path, *extra: str) -> list[str]:
        args = _train_args(cohort, out, cache)
        return [
            str(torchrun),
            "--standalone",
            "--nproc_per_node",
            "2",
            "-m",
            "sss_viewer",
            *args,
            "--batch-size",
            "32",
            *extra,
        ]

    whole = subprocess.run(job(tmp_path / "whole"), capture_output=True, text=True, timeout=600, env=env, check=False)
    assert whole.returncode == 0, whole.stdout[-2000:] + whole.stderr[-2000:]

    out = tmp_path / "part"
    checkpoint = checkpoint_path_for(out)
    running = subprocess.Popen(job(out), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
    try:
        deadline = time.monotonic() + 300
        while running.poll() is None and time.monotonic() < deadline and _checkpoint_epoch(checkpoint) < 2:
            time.sleep(0.02)
        ranks = _children(running.pid)
        assert len(ranks) == 2, "the job ended before its checkpoint reached epoch 2"
        os.kill(ranks[1], signal.SIGKILL)
        output, _ = running.communicate(timeout=300)
    finally:
        if running.poll() is None:
            running.kill()
    assert running.returncode != 0
    assert SURVIVOR_SAYS_WHY.search(output), output[-3000:]
    assert f"The last completed epoch is in {checkpoint}: rerun the same command with --resume." in output
    assert not out.exists() and 2 <= _checkpoint_epoch(checkpoint) < EPOCHS

    resumed = subprocess.run(job(out, "--resume"), capture_output=True, text=True, timeout=600, env=env, check=False)
    assert resumed.returncode == 0, resumed.stdout[-2000:] + resumed.stderr[-2000:]
    assert not checkpoint.exists()
    _same_model(tmp_path / "whole", out)


def test_a_checkpoint_is_read_once_however_often_its_state_is_asked_for(tmp_path):
    from sss_viewer.engine.checkpoint import TrainingCheckpoint

    path = tmp_path / "model.checkpoint.pt"
    TrainingCheckpoint(path, "run-a").save({"epoch": 2, "weights": torch.arange(3.0)})
    checkpoint = TrainingCheckpoint(path, "run-a", resume=True)
    first = checkpoint.load()
    path.unlink()  # a second read would now fail
    assert checkpoint.load() is first and first["epoch"] == 2
    TrainingCheckpoint(path, "run-a").save({"epoch": 1})
    with pytest.raises(ValueError, match="another configuration"):
        TrainingCheckpoint(path, "run-b", resume=True).load()


def test_a_rank_stopped_by_torchrun_says_why_instead_of_dying_silently(tmp_path):
    """The SIGTERM torchrun sends a surviving rank becomes RankStopped (a real signal to a real process)."""
    code = (
        "import os, signal, sys\n"
        "from sss_viewer.engine._distributed import Ranks, RankStopped, lost_rank, stopped_by_launcher\n"
        "ranks = Ranks(0, 2, 0)\n"
        "try:\n"
        "    with stopped_by_launcher(ranks):\n"
        "        os.kill(os.getpid(), signal.SIGTERM)\n"
        "        sum(range(10**6))\n"
        "except RankStopped as exc:\n"
        "    print(lost_rank(exc, ranks, ' Resume with --resume.'))\n"
        "print(signal.getsignal(signal.SIGTERM) is signal.SIG_DFL)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    message, restored = done.stdout.splitlines()
    assert message.startswith("rank 0 of 2 was stopped by torchrun during training: another rank died or was killed")
    assert message.endswith("No model was saved. Resume with --resume.") and restored == "True"

"""Distributed training pieces on real torch.distributed ranks (2 CPU processes, gloo)."""

from __future__ import annotations

import re

import numpy as np
import pytest
import torch
import torch.distributed as dist
import torch.multiprocessing as mp

from sss_viewer.engine.training import channel_loss
from sss_viewer.windows.sampler import epoch_batches

WORLD = 2
N_SERIES, N_WINDOWS, FEATURES, BATCH = 6, 120, 5, 16


def _problem(seed: int = 0):
    """Window features, their series and the series' labels and weights (the same in every process)."""
    rng = np.random.default_rng(seed)
    x = torch.from_numpy(rng.standard_normal((N_WINDOWS, FEATURES)).astype(np.float32))
    series = torch.from_numpy(rng.integers(0, N_SERIES, N_WINDOWS)).long()
    labels = torch.tensor([1, 0, 0, 1, 0, 0], dtype=torch.float32)
    weights = torch.tensor([1.5, 0.75, 0.75, 1.5, 0.75, 0.75])
    return x, series, labels, weights


def _head(seed: int = 1) -> torch.nn.Linear:
    torch.manual_seed(seed)
    return torch.nn.Linear(FEATURES, 1)


def _single_process(window_loss_weight: float):
    """Loss and head gradient of every global batch of one epoch, computed in one process."""
    x, series, labels, weights = _problem()
    head = _head()
    out = []
    for idx in epoch_batches(N_WINDOWS, BATCH * WORLD, torch.Generator().manual_seed(3)):
        head.zero_grad()
        loss = channel_loss(head(x[idx])[:, 0], series[idx], labels, weights, window_loss_weight)
        loss.backward()
        out.append((float(loss.detach()), head.weight.grad.clone(), head.bias.grad.clone()))
    return out


def _rank(rank: int, init_file: str, window_loss_weight: float, results) -> None:
    import warnings

    from sss_viewer.engine._distributed import sum_over_ranks

    warnings.simplefilter("error", DeprecationWarning)  # as the test suite does in its own process
    warnings.simplefilter("error", FutureWarning)

    dist.init_process_group("gloo", init_method=f"file://{init_file}", rank=rank, world_size=WORLD)
    try:
        x, series, labels, weights = _problem()
        head = _head()
        steps = []
        for idx in epoch_batches(N_WINDOWS, BATCH, torch.Generator().manual_seed(3), rank=rank, world_size=WORLD):
            head.zero_grad()
            loss = channel_loss(
                head(x[idx])[:, 0], series[idx], labels, weights, window_loss_weight, all_reduce=sum_over_ranks
            )
            loss.backward()
            grads = [head.weight.grad.clone(), head.bias.grad.clone()]
            for g in grads:  # what DDP does: average the ranks' gradients
                dist.all_reduce(g)
                g /= WORLD
            steps.append((float(loss.detach()), *grads))
        results[rank] = steps
    finally:
        dist.destroy_process_group()


def run_ranks(target, init_file: str, *args) -> list:
    """Run ``target(rank, init_file, *args, results)`` in WORLD spawned processes; every rank's ``results[rank]``."""
    ctx = mp.get_context("spawn")
    with ctx.Manager() as manager:
        results = manager.dict()
        procs = [ctx.Process(target=target, args=(r, init_file, *args, results)) for r in range(WORLD)]
        for p in procs:
            p.start()
        for p in procs:
            p.join(timeout=240)
            if p.is_alive():
                p.kill()
        assert [p.exitcode for p in procs] == [0] * WORLD, "a rank failed"
        return [results[r] for r in range(WORLD)]


@pytest.mark.parametrize("window_loss_weight", [0.0, 0.5])
def test_channel_loss_over_ranks_is_the_global_batch_loss_and_gradient(tmp_path, window_loss_weight):
    """A series' windows of one global batch fall on both ranks: the per-series sums are summed over ranks."""
    expected = _single_process(window_loss_weight)
    ranks = run_ranks(_rank, str(tmp_path / "init"), window_loss_weight)
    assert len(ranks[0]) == len(ranks[1]) == len(expected)
    for step, (loss, grad_w, grad_b) in enumerate(expected):
        for rank in range(WORLD):
            r_loss, r_w, r_b = ranks[rank][step]
            assert r_loss == pytest.approx(loss, rel=1e-5), (step, rank)
            torch.testing.assert_close(r_w, grad_w, rtol=1e-4, atol=1e-6)
            torch.testing.assert_close(r_b, grad_b, rtol=1e-4, atol=1e-6)


def _feature_problem():
    """A MiniRocket model (fitted biases) and two window sets of a store of random channels, equal in every process."""
    from sss_viewer.models import build_window_model
    from sss_viewer.windows.store import SeriesStore, WindowIndex

    rng = np.random.default_rng(5)
    store = SeriesStore.from_series([rng.standard_normal(n).astype(np.float32) for n in (3000, 2200, 4100, 900)])
    starts = WindowIndex.build(store.lengths, 256, 37).absolute_starts(store)
    torch.manual_seed(0)
    model = build_window_model("minirocket", 256)
    model.initialise_from_data(torch.from_numpy(store.windows(starts[::7], 256)))
    return model, store, (starts[: len(starts) // 3], starts[len(starts) // 3 :])


def _feature_rank(rank: int, init_file: str, results) -> None:
    import warnings

    from sss_viewer.engine.training import _frozen_features

    warnings.simplefilter("error", DeprecationWarning)
    warnings.simplefilter("error", FutureWarning)
    dist.init_process_group("gloo", init_method=f"file://{init_file}", rank=rank, world_size=WORLD)
    try:
        model, store, sets = _feature_problem()
        results[rank] = [f.numpy() for f in _frozen_features(model, store, sets, 256, torch.device("cpu"), None)]
    finally:
        dist.destroy_process_group()


def test_frozen_features_are_computed_in_shards_and_gathered_on_every_rank(tmp_path):
    """MiniRocket's feature extraction split over 2 ranks: every rank ends with the single process's features."""
    from sss_viewer.engine import _distributed as distributed
    from sss_viewer.engine.training import _frozen_features

    model, store, sets = _feature_problem()
    expected = [f.numpy() for f in _frozen_features(model, store, sets, 256, torch.device("cpu"), None)]
    assert [len(f) for f in expected] == [len(s) for s in sets] and min(len(s) for s in sets) > WORLD
    bounds = [distributed.shard_bounds(len(sets[1]), distributed.Ranks(r, WORLD)) for r in range(WORLD)]
    assert bounds[0][0] == 0 and bounds[0][1] == bounds[1][0] and bounds[-1][1] == len(sets[1])
    gathered = run_ranks(_feature_rank, str(tmp_path / "init"))
    for rank in range(WORLD):
        for got, want in zip(gathered[rank], expected):
            np.testing.assert_array_equal(got, want)


def test_a_mean_of_per_rank_losses_would_differ():
    """The reason for the all-reduce: per-rank channel means are not the global batch's (guards the test above)."""
    x, series, labels, weights = _problem()
    head = _head()
    idx = next(epoch_batches(N_WINDOWS, BATCH * WORLD, torch.Generator().manual_seed(3)))
    with torch.no_grad():
        whole = float(channel_loss(head(x[idx])[:, 0], series[idx], labels, weights))
        parts = torch.tensor_split(idx, WORLD)
        halves = [float(channel_loss(head(x[part])[:, 0], series[part], labels, weights)) for part in parts]
    assert abs(np.mean(halves) - whole) > 1e-4


@pytest.mark.slow
def test_torchrun_trains_one_model_on_two_ranks(tmp_path):
    """``torchrun --nproc_per_node 2 -m sss_viewer train``: real ranks (gloo), rank 0 saves, the model matches one process's."""
    import json
    import shutil
    import subprocess
    import sys
    from pathlib import Path

    from sss_viewer.cli import main

    torchrun = Path(sys.executable).with_name("torchrun")
    if not torchrun.exists():
        pytest.skip("torchrun is not installed next to this Python")
    assert (
        main(
            [
                "synth",
                "--out",
                str(tmp_path / "cohort"),
                "--patients",
                "8",
                "--duration-scale",
                "0.15",
                "--max-channels",
                "16",
                "-q",
            ]
        )
        == 0
    )
    common = [
        "train",
        str(tmp_path / "cohort"),
        "--preset",
        "minirocket",
        "--epochs",
        "3",
        "--device",
        "cpu",
        "-q",
        "--cache-dir",
        str(tmp_path / "cache"),
    ]
    assert main([*common, "--batch-size", "64", "--out", str(tmp_path / "one")]) == 0
    env = {k: v for k, v in __import__("os").environ.items() if k not in ("RANK", "WORLD_SIZE", "LOCAL_RANK")}
    done = subprocess.run(
        [
            str(torchrun),
            "--standalone",
            "--nproc_per_node",
            "2",
            "-m",
            "sss_viewer",
            *common,
            "--batch-size",
            "32",
            "--out",
            str(tmp_path / "two"),
        ],
        capture_output=True,
        text=True,
        timeout=600,
        env=env,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert "Warning" not in done.stderr, done.stderr[-3000:]
    assert done.stdout.count("saved model to") == 1  # rank 0 only
    assert sorted(p.name for p in (tmp_path / "two").iterdir()) == sorted(p.name for p in (tmp_path / "one").iterdir())
    one = json.loads((tmp_path / "one" / "config.json").read_text())
    two = json.loads((tmp_path / "two" / "config.json").read_text())
    assert one["model"] == two["model"]  # same front end (same seed, same initialisation data)
    # same seed and global batch (2 ranks x 32 = 64 windows): the same batches and gradients; the feature
    # standardiser's running statistics come from rank 0's half batch (DDP broadcasts its buffers), hence a tolerance
    auc_one = one["info"]["val_metrics"]["auc"]
    auc_two = two["info"]["val_metrics"]["auc"]
    assert abs(auc_one - auc_two) <= 0.05, (auc_one, auc_two)
    shutil.rmtree(tmp_path / "cache", ignore_errors=True)


def _children(pid: int) -> list[int]:
    from pathlib import Path

    found = []
    for task in Path(f"/proc/{pid}/task").glob("*"):
        text = (task / "children").read_text() if (task / "children").exists() else ""
        found += [int(c) for c in text.split()]
    return found


SURVIVOR_SAYS_WHY = re.compile(
    r"error: rank 0 of 2 (lost contact with the other ranks|was stopped by torchrun) during training"
)
"""What the surviving rank prints when another is killed: it noticed the lost peer itself, or torchrun's SIGTERM
reached it first (both are real outcomes of the same kill; which one depends on timing)."""


@pytest.mark.slow
def test_a_rank_killed_mid_training_ends_the_job_and_writes_no_model(tmp_path):
    import os
    import signal
    import subprocess
    import sys
    import time
    from pathlib import Path

    from sss_viewer.cli import main

    torchrun = Path(sys.executable).with_name("torchrun")
    if not torchrun.exists() or not Path("/proc/self/task").exists():
        pytest.skip("needs torchrun and /proc")
    assert (
        main(
            [
                "synth",
                "--out",
                str(tmp_path / "cohort"),
                "--patients",
                "8",
                "--duration-scale",
                "0.15",
                "--max-channels",
                "16",
                "-q",
            ]
        )
        == 0
    )
    job = subprocess.Popen(
        [
            str(torchrun),
            "--standalone",
            "--nproc_per_node",
            "2",
            "-m",
            "sss_viewer",
            "train",
            str(tmp_path / "cohort"),
            "--out",
            str(tmp_path / "model"),
            "--backbone",
            "patchtst",
            "--window-length",
            "256",
            "--epochs",
            "50",
            "--device",
            "cpu",
            "--no-cache",
            "-v",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    lines = []
    try:
        for line in job.stdout:  # wait until the ranks train
            lines.append(line)
            if "epoch 1:" in line:
                break
        workers = _children(job.pid)
        assert len(workers) == 2, lines[-20:]
        time.sleep(0.5)
        os.kill(workers[1], signal.SIGKILL)
        rest, _ = job.communicate(timeout=300)
    finally:
        if job.poll() is None:
            job.kill()
    output = "".join(lines) + rest
    assert job.returncode != 0, output[-3000:]
    assert "SIGKILL" in output or "Signal 9" in output or "exitcode" in output, output[-3000:]
    assert SURVIVOR_SAYS_WHY.search(output), output[-3000:]
    model = tmp_path / "model"
    assert not model.exists() or not any(model.iterdir())  # nothing half-written
    assert not list(tmp_path.glob(".model*"))  # no temporary folder left beside it

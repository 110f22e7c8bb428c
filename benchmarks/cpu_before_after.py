"""The CPU paths before and after a change, in one run: scoring latency and training speed, head against a base commit.

Issue 33's goal 4 ("the CPU benchmarks do not get slower") and any refactor that must leave behaviour and speed
unchanged: a temporary ``git worktree`` of ``BASE`` is timed beside the working tree, alternately (head, base, head,
base, …) so that load on the machine falls on both; each figure is the median over the rounds.

* **score**: ``benchmarks/score_latency.py --skip-naive --skip-per-window`` with the bundled demo model (100 channels ×
  5 min at 1 kHz, the MiniRocket evidence series on the CPU): its median ``score_recording`` seconds.
* **train**: the ``default`` preset (PatchTST) for 3 epochs on 4 small synthetic patients on the CPU, 2 threads: wall
  seconds of ``train``.

Each tree's own code runs (``PYTHONPATH`` = the tree; the same virtual environment). Ratios above 1 mean head is
slower; quote them beside the spread of the rounds.

    .venv/bin/python benchmarks/cpu_before_after.py BASE [--rounds 2]
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import re
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
logger = logging.getLogger("cpu_before_after")

TRAIN_CODE = r"""
import json, logging, time
import torch
torch.set_num_threads(2)
logging.disable(logging.WARNING)
from sss_viewer.engine.config import train_preset
from sss_viewer.engine.training import train
from sss_viewer.synth.config import SynthConfig
from sss_viewer.synth.run import synthesise_recording
recordings = [
    synthesise_recording(p, 1, seed=0, config=SynthConfig(duration_scale=0.15, max_channels=12))[0] for p in range(4)
]
config = train_preset("default", epochs=3, patience=10, device="cpu")
t0 = time.perf_counter()
train(recordings, config, progress=False)
print(json.dumps({"train_s": time.perf_counter() - t0}))
"""


def _run(tree: Path, args: list[str]) -> str:
    """Run ``python ARGS`` in ``tree`` with that tree's code first on the path; its stdout (raises on failure)."""
    env = {**os.environ, "PYTHONPATH": str(tree), "OMP_NUM_THREADS": "2"}
    done = subprocess.run(
        [sys.executable, *args], cwd=tree, env=env, capture_output=True, text=True, timeout=900, check=False
    )
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(args[:2])} failed in {tree} (exit {done.returncode}):\n{done.stderr[-2000:]}")
    return done.stdout


def score_seconds(tree: Path) -> float:
    """Median ``score_recording`` seconds printed by ``score_latency.py`` run in ``tree``."""
    options = ["--skip-naive", "--skip-per-window", "--repeats", "3", "--model", "sss_viewer/data/demo/model"]
    out = _run(tree, ["benchmarks/score_latency.py", *options])
    found = re.search(r"score_recording: median ([0-9.]+) s", out)
    if not found:
        raise RuntimeError(f"score_latency.py printed no median in {tree}:\n{out[-1000:]}")
    return float(found.group(1))


def train_seconds(tree: Path) -> float:
    """Wall seconds of a short CPU training run in ``tree``."""
    return float(json.loads(_run(tree, ["-c", TRAIN_CODE]).strip().splitlines()[-1])["train_s"])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("base", help="the commit to compare with (e.g. the session's first commit)")
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s", stream=sys.stdout)
    rev = subprocess.run(
        ["git", "rev-parse", "--verify", f"{args.base}^{{commit}}"], cwd=ROOT, capture_output=True, text=True
    )
    if rev.returncode != 0:
        logger.error("error: BASE %r is not a commit of %s", args.base, ROOT)
        return 2
    with tempfile.TemporaryDirectory(prefix="sss-base-") as tmp:
        base = Path(tmp) / "base"
        subprocess.run(
            ["git", "worktree", "add", "--detach", "-q", str(base), rev.stdout.strip()], cwd=ROOT, check=True
        )
        try:
            figures = {("head", k): [] for k in ("score", "train")} | {("base", k): [] for k in ("score", "train")}
            for r in range(args.rounds):
                for label, tree in (("head", ROOT), ("base", base)):
                    figures[label, "score"].append(score_seconds(tree))
                    figures[label, "train"].append(train_seconds(tree))
                    logger.info(
                        "round %d %s: score %.2f s, train %.2f s",
                        r + 1,
                        label,
                        figures[label, "score"][-1],
                        figures[label, "train"][-1],
                    )
        finally:
            subprocess.run(["git", "worktree", "remove", "--force", str(base)], cwd=ROOT, check=False)
    logger.info("\n| CPU path | head s (median) | base %s s (median) | head / base |", args.base)
    logger.info("|---|---:|---:|---:|")
    for kind, what in (("score", "score_recording, 100 ch x 5 min, demo model"), ("train", "train, default preset")):
        head, before = statistics.median(figures["head", kind]), statistics.median(figures["base", kind])
        logger.info("| %s | %.2f | %.2f | %.2f |", what, head, before, head / before)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""Training throughput on 1 and N ranks (torchrun, gloo on the CPU or nccl on GPUs), side by side.

Writes a small synthetic cohort once, then trains the same preset with ``torchrun --standalone
--nproc_per_node 1`` and ``--nproc_per_node N`` (the per-rank batch halved for N = 2, so the global
batch and the epochs' batches are the same), and prints the median wall time of each, the training
windows per second (from the model's recorded history) and the ratio. On a 2-core box two CPU ranks
share the two cores (each rank runs one thread), so the ratio there says what the distribution costs,
not what more hardware buys; on a GPU machine run it with ``--device cuda --ranks <GPUs>``.

    .venv/bin/python benchmarks/ddp_training.py [--ranks 2] [--preset minirocket] [--epochs 3] [--repeats 3]
        [--device cpu] [--patients 8] [--work DIR]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def parse_args(argv=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--ranks", type=int, default=2, help="ranks of the distributed run (default 2)")
    p.add_argument("--preset", default="minirocket", help="training preset (default minirocket)")
    p.add_argument("--epochs", type=int, default=3, help="epochs (default 3)")
    p.add_argument("--batch-size", type=int, default=64, help="global batch (default 64; per rank: this / ranks)")
    p.add_argument("--repeats", type=int, default=3, help="runs of each (default 3; the median is printed)")
    p.add_argument("--device", default="cpu", help="cpu (gloo) or cuda (nccl)")
    p.add_argument("--patients", type=int, default=8, help="synthetic patients (default 8)")
    p.add_argument("--work", type=Path, default=None, help="working folder (default: a temporary one)")
    return p.parse_args(argv)


def torchrun_command() -> list[str]:
    """``torchrun`` next to this Python, else its module (a machine whose scripts are not on the path)."""
    script = Path(sys.executable).with_name("torchrun")
    return [str(script)] if script.exists() else [sys.executable, "-m", "torch.distributed.run"]


def train_once(torchrun: list[str], ranks: int, cohort: Path, out: Path, args) -> tuple[float, float]:
    """Wall seconds and training windows/s (mean over epochs, all ranks together) of one run."""
    command = [
        *torchrun,
        "--standalone",
        "--nproc_per_node",
        str(ranks),
        "-m",
        "sss_viewer",
        "train",
        str(cohort),
        "--out",
        str(out),
        "--preset",
        args.preset,
        "--epochs",
        str(args.epochs),
        "--device",
        args.device,
        "--batch-size",
        str(args.batch_size // ranks),
        "--cache-dir",
        str(cohort.parent / "cache"),
        "--overwrite",
        "-q",
    ]
    t0 = time.perf_counter()
    subprocess.run(command, check=True, capture_output=True, text=True)
    seconds = time.perf_counter() - t0
    history = json.loads((out / "config.json").read_text())["info"]["history"]
    per_rank = statistics.mean(h["train_windows_per_s"] for h in history)  # rank 0's windows / its training time
    return seconds, per_rank * ranks


def main(argv=None) -> int:
    args = parse_args(argv)
    torchrun = torchrun_command()
    with tempfile.TemporaryDirectory() as tmp:
        work = args.work or Path(tmp)
        cohort = work / "cohort"
        if not (cohort / "cohort.tsv").is_file():
            subprocess.run(
                [
                    sys.executable,
                    "-m",
                    "sss_viewer",
                    "synth",
                    "--out",
                    str(cohort),
                    "--patients",
                    str(args.patients),
                    "--duration-scale",
                    "0.3",
                    "--max-channels",
                    "32",
                    "-q",
                ],
                check=True,
            )
        results = {}
        for ranks in sorted({1, args.ranks}):
            runs = [train_once(torchrun, ranks, cohort, work / f"model-{ranks}", args) for _ in range(args.repeats)]
            results[ranks] = (statistics.median(r[0] for r in runs), statistics.median(r[1] for r in runs))
            print(
                f"{ranks} rank(s): wall {results[ranks][0]:.1f} s (median of {args.repeats}), "
                f"training {results[ranks][1]:.0f} windows/s"
            )
    one, many = results[1], results[args.ranks]
    if args.ranks == 1:
        return 0
    print(
        f"{args.ranks} ranks / 1 rank: training windows/s ratio {many[1] / one[1]:.2f}, wall-time ratio {many[0] / one[0]:.2f}"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

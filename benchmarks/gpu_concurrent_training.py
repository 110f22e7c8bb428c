"""Paper-preset training in N processes sharing one GPU, against one process alone: the grid's throughput per GPU.

Issue 33, goal 3 asks for the paper grid (``training/paper_tables_gpu.sh``: 1,080 independent runs) in <= 5 h on
one H200. One training run at the paper's sizes (PatchTST of d_model 32) may leave the GPU part idle — host gaps
between kernels, kernels too small to fill its SMs — and the grid's runs are independent, so the script can run
several on each GPU (``PROCS_PER_GPU``). Whether that pays is a measurement: this script trains the same
synthetic cohort as ``gpu_training.py`` (its functions, its "new" path: bf16, windows on the device,
``torch.compile`` on CUDA) in one process, then in ``--processes`` processes started together on the same
device, and prints each process's windows/s (median of the epochs after the first), their sum, the ratio of
the sum to the lone process's rate, and the grid's implied hours at each. The processes train the same epochs from
a common start (a barrier after each has built its cohort), so their timed epochs overlap; one that ends first
leaves the others' last epoch alone, which overstates the sum slightly.

    python benchmarks/gpu_concurrent_training.py                       # CUDA, the paper sizes, 2 processes
    python benchmarks/gpu_concurrent_training.py --device cpu --tiny   # the logic on the CPU (a minute or two)

Exit 1 when a process fails (its error is printed), 2 when the run overruns ``--timeout``.
"""

from __future__ import annotations

import argparse
import logging
import multiprocessing as mp
import os
import sys
import time

import gpu_training
import torch

from sss_viewer.engine.config import train_preset


def parse_args(argv=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--device", default="cuda", help="cuda (default) or cpu")
    p.add_argument("--tiny", action="store_true", help="tiny sizes (a check of the logic on the CPU)")
    p.add_argument("--processes", type=int, default=2, help="processes sharing the device (2)")
    p.add_argument("--patients", type=int, default=None, help="synthetic patients (default 16; tiny 6)")
    p.add_argument("--batches", type=int, default=None, help="batches per epoch (default 20; tiny 3)")
    p.add_argument("--epochs", type=int, default=None, help="epochs per process, the first is warm-up (4; tiny 2)")
    p.add_argument("--timeout", type=int, default=280, help="seconds before the run is ended (280)")
    args = p.parse_args(argv)
    if args.processes < 2:
        p.error(f"--processes must be at least 2 (the lone process is always run); got {args.processes}")
    return args


def _sizes(args) -> dict:
    """``gpu_training``'s sizes for these arguments (batch size, durations and strides are its defaults)."""
    full = argparse.Namespace(
        tiny=args.tiny,
        patients=args.patients,
        duration_scale=None,
        batch_size=None,
        batches=args.batches,
        epochs=args.epochs,
        val_stride=None,
    )
    return gpu_training.sizes(full)


def _train_one(slot: int, args, threads: int, barrier, results) -> None:
    """One process: build the cohort, wait for the others, train the new path, report its row (or its error)."""
    try:
        torch.set_num_threads(threads)
        logging.basicConfig(level=logging.WARNING)
        s = _sizes(args)
        common = dict(
            device=args.device,
            seed=slot,
            batch_size=s["batch_size"],
            epochs=s["epochs"],
            patience=s["epochs"],
            val_stride=s["val_stride"],
        )
        paper = train_preset("paper", **common)
        series_set = gpu_training.cohort_series(
            s["patients"], s["duration_scale"], paper.window_length, paper.preprocess
        )
        batches, _ = gpu_training.full_batches(series_set, paper, s)
        options = gpu_training.new_path_options(args.device)
        config = train_preset("paper", **common, windows_per_epoch=batches * s["batch_size"], **options)
        barrier.wait()
        results.put((slot, gpu_training.train_path(f"process {slot}", series_set, config)))
    except BaseException as error:  # the parent prints it; a broken barrier frees the others
        barrier.abort()
        results.put((slot, f"{type(error).__name__}: {str(error).splitlines()[0][:200] if str(error) else ''}"))


def run_group(n: int, args, deadline: float) -> list[dict]:
    """Train in ``n`` processes started together; their rows, in slot order. Raises on a failure or the deadline."""
    context = mp.get_context("spawn")
    barrier, results = context.Barrier(n), context.Queue()
    threads = max(1, (os.cpu_count() or 1) // n)
    procs = [context.Process(target=_train_one, args=(k, args, threads, barrier, results)) for k in range(n)]
    for proc in procs:
        proc.start()
    rows: dict[int, dict] = {}
    try:
        while len(rows) < n:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError(f"--timeout {args.timeout} s passed with {n - len(rows)} process(es) still training")
            try:
                slot, row = results.get(timeout=min(left, 5.0))
            except Exception:  # queue.Empty: check the processes are alive
                dead = [k for k, proc in enumerate(procs) if proc.exitcode not in (None, 0) and k not in rows]
                if dead:
                    raise RuntimeError(f"process {dead[0]} died (exit code {procs[dead[0]].exitcode})") from None
                continue
            if isinstance(row, str):
                raise RuntimeError(f"process {slot} failed: {row}")
            rows[slot] = row
    finally:
        for proc in procs:
            proc.join(timeout=10)
            if proc.is_alive():
                proc.terminate()
    return [rows[k] for k in range(n)]


def main(argv=None) -> int:
    args = parse_args(argv)
    if args.device.startswith("cuda") and not torch.cuda.is_available():
        print("no CUDA device: run with --device cpu --tiny to check the logic")
        return 1
    deadline = time.monotonic() + args.timeout
    name = torch.cuda.get_device_name(0) if args.device.startswith("cuda") else "cpu"
    print(f"torch {torch.__version__}, {name}, {os.cpu_count()} CPUs, sizes {_sizes(args)}", flush=True)
    try:
        alone = run_group(1, args, deadline)[0]
        group = run_group(args.processes, args, deadline)
    except TimeoutError as error:
        print(f"stopped: {error}")
        return 2
    except RuntimeError as error:
        print(f"failed: {error}")
        return 1
    total = sum(row["windows_per_s"] for row in group)
    print("\n| processes on the device | windows/s each | windows/s together | vs one alone | paper grid (h) |")
    print("|---:|---|---:|---:|---:|")
    print(
        f"| 1 | {alone['windows_per_s']:,.0f} | {alone['windows_per_s']:,.0f} | 1.00 | "
        f"{gpu_training.grid_hours(alone['windows_per_s'], alone['val_windows_per_s']):.1f} |"
    )
    each = ", ".join(f"{row['windows_per_s']:,.0f}" for row in group)
    print(
        f"| {args.processes} | {each} | {total:,.0f} | {total / alone['windows_per_s']:.2f} | "
        f"{gpu_training.grid_hours(total, sum(row['val_windows_per_s'] for row in group)):.1f} |"
    )
    aucs = ", ".join(f"{row['val_auc']:.3f}" for row in [alone, *group])
    print(f"\nvalidation channel AUC (alone, then each process; seeds 0..{args.processes - 1}): {aucs}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

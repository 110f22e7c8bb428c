"""The paper grid's whole-channel baselines on one GPU: each one's time, for the full grid's estimate.

Issue 33, goal 3 asks for ``training/paper_tables_gpu.sh``'s estimate of the **full** grid (goal <= 5 h on one
H200). ``gpu_training.py`` measures the SSS rows (PatchTST windows/s); the grid's eleven whole-channel baselines
(``sss_viewer.experiments.protocols.BASELINES``: four finite-context models on the first ``window_length``
samples of a channel, seven infinite-context ones on whole channels, one channel a step) had never been timed on
a GPU. This script trains each at the ``paper`` experiment preset's settings (App. C sizes, 50 epochs, L = 10000
for the finite-context ones) for ``--epochs`` epochs on random-walk channels as long as ds003029's after the
paper's pooling, and scales what it measured to one pooled-setting run on ds003029:

* a run's **set-up** (model, data-dependent initialisation, frozen features, final scoring): the wall time not
  inside an epoch, scaled by the channels (ds003029's train + validation + test / the measured ones);
* an **epoch** (training + validation): the median of the epochs after the first, scaled by the channels, times
  50 epochs (an upper bound: early stopping, patience 15, may end a run sooner).

ds003029 (docs/results.md §3: 7,998 good ECoG/SEEG channel-runs, 2.0e9 channel-samples at native rates, 1 in 6
contacts SOZ): pooled 24/12, a channel is ~20,840 samples; the pooled setting after 1:1 balancing keeps ~2,666
channels, split 70/10/20 (the paper's channel split; the SSS rows' 7.9e6 of 1.1e7 windows are 72 %): 1,866 train,
267 validation, 533 test. The grid holds ~50 pooled-setting runs of each model (5 pooled-setting equivalents x 2 split modes x 5
seeds, ``gpu_training.GRID_SSS_RUNS``). The table gives each baseline's hours in the grid, their sum, and with
``--sss-hours`` (the SSS rows' hours from ``gpu_training.py``) the full grid.

    python benchmarks/gpu_grid_baselines.py                      # CUDA, the paper's settings (a few minutes)
    python benchmarks/gpu_grid_baselines.py --device cpu --tiny  # the logic on the CPU (small models, short channels)
"""

from __future__ import annotations

import argparse
import dataclasses
import logging
import signal
import statistics
import sys
import time
from types import SimpleNamespace

import gpu_training
import numpy as np
import pandas as pd
import torch

from sss_viewer.baselines.whole_channel import fit_whole_channel
from sss_viewer.experiments.protocols import BASELINES
from sss_viewer.experiments.runner import PRESETS, SMALL_BASELINE_PARAMS, _baseline_config
from sss_viewer.models import FINITE_CONTEXT
from sss_viewer.windows.series_set import SeriesSet
from sss_viewer.windows.store import SeriesStore

DS003029 = {"train": 1866, "val": 267, "test": 533, "channel_samples": 20_840}
"""One pooled-setting run on ds003029 (see the module docstring for the arithmetic)."""
GRID_EPOCHS = PRESETS["paper"].baseline["epochs"]
"""The ``paper`` experiment preset's baseline epochs, 50 (an upper bound: its patience, 15, may stop a run sooner)."""


def parse_args(argv=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--device", default="cuda", help="cuda (default) or cpu")
    p.add_argument("--tiny", action="store_true", help="small models, short channels, L = 1024 (the logic on a CPU)")
    p.add_argument("--channels", type=int, default=None, help="training channels measured (48; tiny 12)")
    p.add_argument("--samples", type=int, default=None, help="samples a channel (ds003029's 20,840; tiny 3,000)")
    p.add_argument("--epochs", type=int, default=None, help="epochs measured, the first is warm-up (3; tiny 2)")
    p.add_argument("--baselines", default=",".join(BASELINES), help="comma-separated, of " + ", ".join(BASELINES))
    p.add_argument("--sss-hours", type=float, default=None, help="the SSS rows' hours (gpu_training.py): the sum")
    p.add_argument("--timeout", type=int, default=400, help="seconds before the run is ended with the table so far")
    return p.parse_args(argv)


def synthetic_set(n_train: int, n_samples: int, seed: int = 0) -> tuple[SeriesSet, np.ndarray]:
    """Random-walk channels, half SOZ, split like ds003029's pooled setting: the set and its split."""
    n_val, n_test = (max(2, round(n_train * DS003029[part] / DS003029["train"])) for part in ("val", "test"))
    split = np.array(["train"] * n_train + ["val"] * n_val + ["test"] * n_test)
    rng = np.random.default_rng(seed)
    series = [(rng.standard_normal(n_samples).cumsum() / 30.0).astype(np.float32) for _ in split]
    labels = np.concatenate([np.arange(n) % 2 for n in (n_train, n_val, n_test)])  # both classes in each part
    meta = pd.DataFrame(
        {
            "recording": 0,
            "subject": [f"sub-{i // 8:02d}" for i in range(len(split))],
            "centre": "synthetic",
            "run": "01",
            "channel": [f"C{i}" for i in range(len(split))],
            "label": labels,
            "sfreq": 1000.0 / 12,
        }
    )
    excluded = pd.DataFrame(columns=["recording", "subject", "run", "channel", "reason"])
    return SeriesSet(store=SeriesStore.from_series(series), meta=meta, excluded=excluded), split


def time_baseline(name: str, series_set: SeriesSet, split: np.ndarray, args, sizes: dict) -> dict:
    """Train baseline ``name`` for ``sizes['epochs']`` epochs; its set-up and epoch seconds, scaled to ds003029."""
    config = _baseline_config(PRESETS["paper"], SimpleNamespace(model=name, seed=0))
    overrides = {"epochs": sizes["epochs"], "patience": sizes["epochs"], "device": args.device}
    if args.tiny:
        overrides.update(window_length=1024, model_params=dict(SMALL_BASELINE_PARAMS[name]))
    config = dataclasses.replace(config, **overrides)
    gpu_training.sync(args.device)
    t0 = time.perf_counter()
    result = fit_whole_channel(series_set, split, config)
    gpu_training.sync(args.device)
    wall = time.perf_counter() - t0
    epoch_s = [h["seconds"] for h in result.history]
    epoch = statistics.median(epoch_s[1:] or epoch_s)
    setup = max(wall - sum(epoch_s), 0.0)
    n_train = int((split == "train").sum())
    scale_all = (DS003029["train"] + DS003029["val"] + DS003029["test"]) / len(split)
    scale_epoch = DS003029["train"] / n_train  # validation scales with it: the split keeps ds003029's proportions
    run_s = setup * scale_all + epoch * scale_epoch * GRID_EPOCHS
    return {
        "name": name,
        "context": "finite" if name in FINITE_CONTEXT else "infinite",
        "epoch_s": epoch,
        "setup_s": setup,
        "run_s": run_s,
        "grid_h": run_s * gpu_training.GRID_SSS_RUNS / 3600,
    }


def print_table(rows: list[dict], sizes: dict, args) -> None:
    print(
        f"\nmeasured on {sizes['channels']} training channels of {sizes['samples']:,} samples; scaled to one "
        f"pooled-setting run on ds003029 ({DS003029['train']:,} train channels, {GRID_EPOCHS} epochs) and to the grid's "
        f"{gpu_training.GRID_SSS_RUNS} runs of each model"
    )
    print("\n| baseline | context | epoch (measured) | set-up (measured) | a run on ds003029 (est.) | grid (est.) |")
    print("|---|---|---:|---:|---:|---:|")
    for row in rows:
        print(
            f"| {row['name']} | {row['context']} | {row['epoch_s']:.2f} s | {row['setup_s']:.2f} s | "
            f"{row['run_s'] / 60:.1f} min | {row['grid_h']:.2f} h |"
        )
    total = sum(row["grid_h"] for row in rows)
    print(f"| **all {len(rows)} measured** | | | | | **{total:.1f} h** |")
    if args.sss_hours is not None:
        verdict = "ok" if total + args.sss_hours <= gpu_training.GRID_GOAL_HOURS else "OVER"
        print(
            f"\nfull grid on one GPU: SSS rows {args.sss_hours:.1f} h + baselines {total:.1f} h = "
            f"{total + args.sss_hours:.1f} h (goal <= {gpu_training.GRID_GOAL_HOURS:g} h: {verdict})"
        )


def main(argv=None) -> int:
    args = parse_args(argv)
    if args.device.startswith("cuda") and not torch.cuda.is_available():
        print("no CUDA device: run with --device cpu --tiny to check the logic")
        return 1
    names = [n.strip() for n in args.baselines.split(",") if n.strip()]
    unknown = sorted(set(names) - set(BASELINES))
    if unknown:
        print(f"unknown baseline(s) {unknown}: expected any of {', '.join(BASELINES)}")
        return 2
    defaults = {"channels": 12, "samples": 3000, "epochs": 2} if args.tiny else {"channels": 48, "epochs": 3}
    defaults.setdefault("samples", DS003029["channel_samples"])
    sizes = {k: getattr(args, k) if getattr(args, k) is not None else v for k, v in defaults.items()}
    logging.basicConfig(level=logging.WARNING)
    name = torch.cuda.get_device_name(0) if args.device.startswith("cuda") else "cpu"
    print(f"torch {torch.__version__}, {name}; baselines {', '.join(names)}; sizes {sizes}", flush=True)
    series_set, split = synthetic_set(sizes["channels"], sizes["samples"])

    def on_alarm(signum, frame):
        raise TimeoutError

    signal.signal(signal.SIGALRM, on_alarm)
    signal.alarm(args.timeout)
    rows, failed = [], []
    try:
        # the first fit in a process pays one-time costs (imports, the device's start) that belong to no run
        time_baseline("dlinear", series_set, split, argparse.Namespace(**{**vars(args), "tiny": True}), sizes)
        for baseline in names:
            try:
                row = time_baseline(baseline, series_set, split, args, sizes)
            except TimeoutError:
                raise
            except Exception as error:  # the others still run: the failure is reported and fails the run
                failed.append(f"{baseline}: {type(error).__name__}: {str(error).splitlines()[0][:160]}")
                continue
            rows.append(row)
            print(
                f"{baseline}: epoch {row['epoch_s']:.2f} s, set-up {row['setup_s']:.2f} s -> "
                f"{row['run_s'] / 60:.1f} min a ds003029 run",
                flush=True,
            )
    except TimeoutError:
        failed.append(f"--timeout {args.timeout} s passed before {', '.join(names[len(rows) + len(failed) :])}")
    finally:
        signal.alarm(0)
    print_table(rows, sizes, args)
    for line in failed:
        print(f"FAILED {line}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

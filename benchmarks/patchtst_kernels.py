"""PatchTST's custom CPU kernels against the stock ones, at the sizes of the training presets.

``PatchTST(cpu_kernels="custom")`` computes dropout with a NumPy-drawn mask and attention with
dropout in chunks with a hand-written backward pass; ``cpu_kernels="stock"`` uses
:class:`torch.nn.Dropout` and :func:`torch.nn.functional.scaled_dot_product_attention` (with
``dropout_p``). Both models hold the same weights. For each training preset (``default``,
``paper``: model sizes, window length and batch size read from
:func:`sss_viewer.engine.config.train_preset`) the script times, alternating the two paths in every
repeat so that drift on the machine hits both alike:

* a **training step**: forward, BCE against random targets, backward, Adam step, at the preset's
  batch size (train mode: all dropout active);
* **inference**: eval mode under :func:`torch.inference_mode`, at the scoring batch size
  (``--infer-batch``, 1024 as :func:`sss_viewer.engine.inference.predict_window_probs`).

It prints windows/s per repeat, the medians and the ratio custom/stock, and the peak resident
memory of the process during each path's training steps (sampled every 5 ms).

    .venv/bin/python benchmarks/patchtst_kernels.py [--presets default,paper] [--repeats 5] [--threads 2]
"""

from __future__ import annotations

import argparse
import os
import statistics
import threading
import time
from contextlib import contextmanager

import torch
import torch.nn.functional as F

from sss_viewer.engine.config import train_preset
from sss_viewer.models import build_model

KERNELS = ("stock", "custom")
_PAGE = os.sysconf("SC_PAGE_SIZE")


class PeakRSS:
    """Peak resident memory of this process per label, sampled from ``/proc/self/statm`` by a thread."""

    def __init__(self) -> None:
        self.peak: dict[str, int] = {}
        self._label: str | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)
        self._thread.start()

    def _sample(self) -> None:
        while not self._stop.wait(0.005):
            label = self._label
            if label is not None:
                with open("/proc/self/statm") as f:
                    rss = int(f.read().split()[1]) * _PAGE
                self.peak[label] = max(self.peak.get(label, 0), rss)

    @contextmanager
    def during(self, label: str):
        self._label = label
        try:
            yield
        finally:
            self._label = None

    def close(self) -> None:
        self._stop.set()
        self._thread.join()


def preset_sizes(name: str) -> tuple[dict, int, int]:
    """PatchTST parameters (``window_length`` filled in), window length and batch size of a training preset."""
    config = train_preset(name)
    if config.backbone != "patchtst":
        raise SystemExit(f"preset {name!r} trains {config.backbone!r}, not PatchTST")
    params = {**config.model_params, "window_length": config.window_length}
    return params, config.window_length, config.batch_size


def train_rate(model, optimiser, x: torch.Tensor, y: torch.Tensor, steps: int) -> float:
    """Windows/s of ``steps`` training steps on batch ``x``."""
    model.train()
    start = time.perf_counter()
    for _ in range(steps):
        optimiser.zero_grad(set_to_none=True)
        F.binary_cross_entropy_with_logits(model(x), y).backward()
        optimiser.step()
    return steps * len(x) / (time.perf_counter() - start)


def infer_rate(model, x: torch.Tensor, passes: int) -> float:
    """Windows/s of ``passes`` eval-mode passes over ``x``."""
    model.eval()
    start = time.perf_counter()
    with torch.inference_mode():
        for _ in range(passes):
            model(x)
    return passes * len(x) / (time.perf_counter() - start)


def run_preset(name: str, args: argparse.Namespace, memory: PeakRSS) -> dict[str, dict[str, float]]:
    """Time both kernel paths at one preset's sizes; returns the medians."""
    params, length, batch = preset_sizes(name)
    torch.manual_seed(0)
    models = {k: build_model("patchtst", **params, cpu_kernels=k) for k in KERNELS}
    models["custom"].load_state_dict(models["stock"].state_dict())
    optimisers = {k: torch.optim.Adam(m.parameters(), lr=1e-4, weight_decay=1e-4) for k, m in models.items()}
    x_train = torch.randn(batch, length)
    y_train = torch.randint(0, 2, (batch,)).float()
    x_infer = torch.randn(args.infer_batch, length)
    # steps per repeat: about --train-windows windows, at least one step
    steps = max(1, args.train_windows // batch)
    passes = max(1, args.infer_windows // args.infer_batch)
    print(
        f"\n[{name}] PatchTST {params}, training batch {batch} x {steps} step(s), "
        f"inference batch {args.infer_batch} x {passes} pass(es), {torch.get_num_threads()} threads"
    )
    for k in KERNELS:  # warm-up: allocator, OpenMP pools
        train_rate(models[k], optimisers[k], x_train[: min(batch, 128)], y_train[: min(batch, 128)], 1)
        infer_rate(models[k], x_infer[:256], 1)
    rates: dict[str, dict[str, list[float]]] = {k: {"train": [], "infer": []} for k in KERNELS}
    for r in range(args.repeats):
        order = KERNELS if r % 2 == 0 else KERNELS[::-1]
        for k in order:
            with memory.during(f"{name}/{k}"):
                rates[k]["train"].append(train_rate(models[k], optimisers[k], x_train, y_train, steps))
        for k in order:
            rates[k]["infer"].append(infer_rate(models[k], x_infer, passes))
        print(
            f"  repeat {r + 1}: "
            + ", ".join(f"{k} train {rates[k]['train'][-1]:.0f} / infer {rates[k]['infer'][-1]:.0f}" for k in KERNELS)
            + f"  (load average {os.getloadavg()[0]:.1f})",
            flush=True,
        )
    medians = {k: {what: statistics.median(v) for what, v in rates[k].items()} for k in KERNELS}
    for what, label in (("train", "training step (fwd+bwd+Adam)"), ("infer", "inference")):
        stock, custom = medians["stock"][what], medians["custom"][what]
        print(f"  {label:30s} windows/s  stock {stock:7.1f}  custom {custom:7.1f}  custom/stock {custom / stock:.2f}")
    print(
        "  peak RSS while training        "
        + "  ".join(f"{k} {memory.peak.get(f'{name}/{k}', 0) / 2**30:.1f} GiB" for k in KERNELS)
    )
    return medians


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--presets", default="default,paper", help="comma-separated training presets")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--train-windows", type=int, default=1024, help="training windows per timed repeat")
    parser.add_argument("--infer-windows", type=int, default=4096, help="inference windows per timed repeat")
    parser.add_argument("--infer-batch", type=int, default=1024)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    memory = PeakRSS()
    summary = {name: run_preset(name, args, memory) for name in args.presets.split(",")}
    memory.close()
    print(f"\nsummary (medians, windows/s; {args.threads} threads; peak RSS while training)")
    for name, medians in summary.items():
        s, c = medians["stock"], medians["custom"]
        rss = {k: memory.peak.get(f"{name}/{k}", 0) / 2**30 for k in KERNELS}
        print(
            f"  {name:8s} train stock {s['train']:.1f} custom {c['train']:.1f} ratio {c['train'] / s['train']:.2f} | "
            f"infer stock {s['infer']:.1f} custom {c['infer']:.1f} ratio {c['infer'] / s['infer']:.2f} | "
            f"RSS stock {rss['stock']:.1f} GiB custom {rss['custom']:.1f} GiB"
        )


if __name__ == "__main__":
    main()

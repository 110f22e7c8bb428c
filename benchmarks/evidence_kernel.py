"""The MiniRocket evidence kernel alone: today's torch path ("search") against the fused Triton kernel (issue 33).

The bundled demo model (``sss_viewer/data/demo/model``, loaded with ``ModelBundle.load``; its
features and folded head taken as the scoring code takes them, ``fold_head``) scores ``--rows``
channels of ``--samples`` samples already on the device, windows of the model's length every
``--stride`` samples (default: the model's inference stride), every row in one call with ``rows=``
as ``MiniRocketClassifier.store_window_logits`` calls it. Each path: a warm-up call (Triton
compiles), then the median of ``--repeats`` calls (CUDA events on a GPU, wall time on the CPU).
The Triton kernel is timed at each ``--configs`` entry: ``BLOCKxWARPS`` for the generic kernel (the step
tables in device memory; ``1024x4`` is the library's tile) and ``bakedBLOCKxWARPS`` for the kernel with
each dilation's biases and weights compiled in (``baked128x4`` the library's; one compile per dilation,
so its warm-up call is the longer one); a ``+tile`` suffix has the kernel write running sums over its tile
in place of a ``torch.cumsum`` pass over each dilation's series (``prefix="tile"``). The table lists each
and judges the fastest; an entry that fails to compile or run is logged and skipped. ``benchmarks/evidence_sass.py`` counts both kernels' machine
code without a GPU.

Exactness, checked on every run (exit status 1 when one fails):

* Triton against "search" on every window: max abs logit difference;
* every entry against the first: max abs logit difference (limit 1e-9: the same float32 evidence, float64 sums
  over other tiles);
* Triton against the CPU path (numba; the torch "compare" path where numba is missing) on the
  first ``--check-rows`` rows, windows within their first ``--check-samples`` samples: max abs logit
  difference (limit 2e-5, the test suite's) and max abs probability difference (limit 1e-6).

Goal (issue 33): the Triton path ≥ 1e9 samples/s on an H100/H200; the table prints ok or OVER.
On a CUDA machine a torch profile of one Triton call follows the table (time per CUDA kernel).

    python benchmarks/evidence_kernel.py                      # CUDA: 100 rows x 300,000 samples
    python benchmarks/evidence_kernel.py --device cpu --rows 2 --samples 5000   # logic check: Triton's interpreter

A watchdog (``--timeout`` seconds, default 480) ends a run that would not finish, with status 2.
"""

from __future__ import annotations

import argparse
import copy
import logging
import os
import re
import statistics
import sys
import threading
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
DEMO_MODEL = ROOT / "sss_viewer" / "data" / "demo" / "model"
GOAL = 1e9
"""Samples per second the Triton path should reach (issue 33, goal 1)."""
LOGIT_TOL = 2e-5
TILE_TOL = 1e-9
"""Between kernels and tiles: the same float32 evidence, float64 sums added in another order."""
PROB_TOL = 1e-6

logger = logging.getLogger("evidence_kernel")


def _args(argv=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    p.add_argument("--device", default="cuda", help="cuda (default) or cpu (Triton's interpreter: tiny sizes only)")
    p.add_argument("--rows", type=int, default=100)
    p.add_argument("--samples", type=int, default=300_000)
    p.add_argument("--stride", type=int, default=None, help="window stride (default: the model's inference stride)")
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--search-repeats", type=int, default=3, help="repeats of the slow 'search' path")
    p.add_argument(
        "--configs",
        default="1024x4,baked128x4,baked128x4+tile,baked256x8",
        help="Triton tiles to time: [baked]BLOCKxWARPS[+tile] (generic or baked kernel; running sums over tiles)",
    )
    p.add_argument("--check-rows", type=int, default=2)
    p.add_argument("--check-samples", type=int, default=100_000)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--timeout", type=int, default=480, help="seconds before the watchdog ends the run (status 2)")
    args = p.parse_args(argv)
    for config in args.configs.split(","):
        try:
            _tile(config)
        except ValueError as exc:
            p.error(str(exc))
    return args


def _watchdog(seconds: int) -> threading.Timer:
    """End the process with status 2 after ``seconds``: a thread, so that a call stuck in C (a device wait) ends too."""

    def fire():
        logger.error("watchdog: no result after %d s; giving up", seconds)
        sys.stdout.flush()
        os._exit(2)

    timer = threading.Timer(seconds, fire)
    timer.daemon = True
    timer.start()
    return timer


def _signal(rows: int, samples: int, seed: int) -> np.ndarray:
    """EEG-like rows: a random walk pulled back to zero (1/f-ish) plus white noise, z-scored; shape (rows, samples)."""
    rng = np.random.default_rng(seed)
    white = rng.standard_normal((rows, samples), dtype=np.float32)
    walk = np.cumsum(rng.standard_normal((rows, samples), dtype=np.float32), axis=1)
    walk -= np.cumsum(walk, axis=1) / np.arange(1, samples + 1, dtype=np.float32)  # remove the drift
    x = 0.5 * walk / walk.std(axis=1, keepdims=True) + white
    return ((x - x.mean(axis=1, keepdims=True)) / x.std(axis=1, keepdims=True)).astype(np.float32)


def _timer(device):
    """``time(fn) -> seconds`` for one call, synchronised with the device."""
    import torch

    if device.type == "cuda":

        def timed(fn):
            start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            result = fn()
            stop.record()
            stop.synchronize()
            return start.elapsed_time(stop) / 1e3, result

    else:

        def timed(fn):
            t0 = time.perf_counter()
            result = fn()
            return time.perf_counter() - t0, result

    return timed


def _median(timed, fn, repeats: int):
    """Warm-up, then the median seconds of ``repeats`` calls, and the last call's result."""
    _, result = timed(fn)
    times = []
    for _ in range(max(1, repeats)):
        seconds, result = timed(fn)
        times.append(seconds)
    return statistics.median(times), result


def main(argv=None) -> int:
    args = _args(argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s", stream=sys.stdout)
    if args.device == "cpu":
        os.environ["TRITON_INTERPRET"] = "1"  # before triton is imported
    watchdog = _watchdog(args.timeout)
    import torch

    from sss_viewer.engine.bundle import ModelBundle
    from sss_viewer.models import _minirocket_series as series
    from sss_viewer.models import _minirocket_triton as minirocket_triton

    device = torch.device(args.device)
    if device.type == "cuda" and not torch.cuda.is_available():
        logger.error("--device cuda: no CUDA device here (use --device cpu for the interpreter check)")
        return 2
    if not minirocket_triton.triton_available(device):
        logger.error("triton cannot run on %s (installed: %s)", device, minirocket_triton.triton is not None)
        return 2
    bundle = ModelBundle.load(DEMO_MODEL)
    cpu_features = copy.deepcopy(bundle.model.features).cpu()  # the CPU reference's own copy
    model = bundle.model.eval()
    L = int(bundle.window_length)
    stride = int(args.stride or bundle.inference_stride)
    weights, constant = series.fold_head(model)
    features = model.to(device).features
    if args.samples < L:
        logger.error("--samples %d is shorter than one window (%d)", args.samples, L)
        return 2
    host = _signal(args.rows, args.samples, args.seed)
    x = torch.from_numpy(host).to(device)
    layout = series.SeriesLayout.of(features, L)
    per_row = np.arange(0, args.samples - L + 1, stride, dtype=np.int64)
    rows = np.repeat(np.arange(args.rows, dtype=np.int64), len(per_row))
    starts = np.tile(per_row, args.rows)
    n_samples = args.rows * args.samples
    timed = _timer(device)
    versions = f"torch {torch.__version__}, triton {minirocket_triton.triton.__version__}"
    name = torch.cuda.get_device_name(device) if device.type == "cuda" else "CPU (Triton interpreter)"
    logger.info("device %s; %s", name, versions)
    logger.info(
        "demo model: %d features, %d dilations, window %d, stride %d; %d rows x %d samples, %d windows",
        features.n_features,
        len(features.dilations),
        L,
        stride,
        args.rows,
        args.samples,
        len(starts),
    )

    def run(evidence: str, config: str = ""):
        if evidence == "triton":
            kernel, block, warps, prefix = _tile(config)
            return lambda: minirocket_triton.triton_window_logits(
                features,
                layout,
                weights,
                constant,
                x,
                starts,
                rows=rows,
                block=block,
                num_warps=warps,
                kernel=kernel,
                prefix=prefix,
            )
        return lambda: series.torch_window_logits(
            features, weights, constant, x, starts, L, rows=rows, evidence=evidence
        )

    t_search, search = _median(timed, run("search"), args.search_repeats)
    logger.info("search: %.4f s", t_search)
    by_tile = {}
    for config in args.configs.split(","):
        try:
            t, result = _median(timed, run("triton", config), args.repeats)
        except Exception:  # noqa: BLE001 - report every tile: one that fails to compile or run is a result too
            logger.exception("triton %s FAILED", config)
            continue
        by_tile[config] = (t, result)
        logger.info("triton %s: %.4f s (%.3g samples/s)", config, t, n_samples / t)
    if not by_tile:
        print(f"\n| search (today's torch path) | {t_search:.4f} s | {n_samples / t_search:.3g} samples/s |")
        print("| triton | FAILED on every tile (see the log above) | |")
        return 1
    best = min(by_tile, key=lambda c: by_tile[c][0])
    t_triton, triton_logits = by_tile[best]

    # exactness
    checks = []
    first_config, (_, first_result) = next(iter(by_tile.items()))
    for config, (_, result) in by_tile.items():
        diff = float((result - search).abs().max())
        checks.append((f"triton {config} vs search, every window: max abs logit diff", diff, LOGIT_TOL))
        if config != first_config:
            diff = float((result - first_result).abs().max())
            checks.append((f"triton {config} vs {first_config}, every window: max abs logit diff", diff, TILE_TOL))
    n_check = min(args.check_rows, args.rows)
    margin = layout.margin
    span = min(args.check_samples, args.samples)
    # a prefix of a row: windows whose kernels reach no further than it read the same samples
    inside = np.ones(len(starts), dtype=bool) if span == args.samples else starts + L + margin <= span
    pick = np.flatnonzero((rows < n_check) & inside)
    reference = series.window_logits(
        cpu_features,
        weights,
        constant,
        [host[i, :span] for i in range(n_check)],
        rows[pick],
        starts[pick],
        L,
    )
    cpu_path = "numba" if series.numba is not None else "torch compare (no numba)"
    got = triton_logits.cpu().numpy()[pick]
    checks.append(
        (f"triton vs CPU ({cpu_path}), {len(pick)} windows: max abs logit diff", _maxdiff(got, reference), LOGIT_TOL)
    )
    p_diff = _maxdiff(1 / (1 + np.exp(-got)), 1 / (1 + np.exp(-reference)))
    checks.append(("triton vs CPU: max abs probability diff", p_diff, PROB_TOL))
    s_diff = _maxdiff(search.cpu().numpy()[pick], reference)
    checks.append(("search vs CPU (today's agreement): max abs logit diff", s_diff, LOGIT_TOL))

    rate_search, rate_triton = n_samples / t_search, n_samples / t_triton
    print()
    print(f"| evidence kernel, {args.rows} x {args.samples:,} samples on {name} | median s | samples/s | goal | |")
    print("|---|---:|---:|---:|---|")
    print(f"| search (today's torch path) | {t_search:.4f} | {rate_search:.3g} | | |")
    for config, (t, _) in by_tile.items():
        mark = " (fastest)" if config == best else ""
        print(f"| triton {config}{mark} | {t:.4f} | {n_samples / t:.3g} | | |")
    verdict = "ok" if rate_triton >= GOAL else "OVER"
    print(f"| **triton (fastest tile)** | {t_triton:.4f} | {rate_triton:.3g} | >= {GOAL:.0e} | {verdict} |")
    print(f"| speed-up triton / search | | {rate_triton / rate_search:.1f}x | | |")
    print()
    print("| exactness check | value | limit | |")
    print("|---|---:|---:|---|")
    failed = False
    for label, value, limit in checks:
        ok = bool(np.isfinite(value) and value <= limit)
        failed |= not ok
        print(f"| {label} | {value:.3g} | {limit:.0e} | {'ok' if ok else 'FAILED'} |")
    print()
    if device.type == "cuda":
        _profile(run("triton", best))
    watchdog.cancel()
    if failed:
        logger.error("an exactness check FAILED")
        return 1
    return 0


def _tile(config: str) -> tuple[str, int, int, str]:
    """``"1024x4"`` -> ("generic", 1024, 4, "torch"); ``"baked128x4+tile"`` -> ("baked", 128, 4, "tile")."""
    match = re.fullmatch(r"(baked)?(\d+)x(\d+)(\+tile)?", config.strip().lower())
    if match is None:
        raise ValueError(f"--configs entry {config!r}: expected [baked]BLOCKxWARPS[+tile], e.g. baked128x4+tile")
    kernel = "baked" if match.group(1) else "generic"
    return kernel, int(match.group(2)), int(match.group(3)), "tile" if match.group(4) else "torch"


def _maxdiff(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.max(np.abs(np.asarray(a, dtype=np.float64) - np.asarray(b, dtype=np.float64)), initial=0.0))


def _profile(fn) -> None:
    """Time per CUDA kernel of one call (torch profiler); never fails the run."""
    try:
        import torch
        from torch.profiler import ProfilerActivity, profile

        with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
            fn()
            torch.cuda.synchronize()
        table = prof.key_averages().table(sort_by="self_cuda_time_total", row_limit=10)
        print("torch profile of one triton call (by CUDA time):")
        print(table)
    except Exception as exc:  # noqa: BLE001 - a profile is a bonus: the measurements above stand without it
        logger.warning("profile skipped: %s", exc)


if __name__ == "__main__":
    sys.exit(main())

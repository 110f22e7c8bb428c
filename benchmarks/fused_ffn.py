"""PatchTST's feed-forward sub-layer, stock against fused: time and memory of a training step's forward + backward.

Issue 33, goal 3 (paper-preset training >= 1e6 windows/s on one H200). Each encoder layer's ``Linear(32, 128) →
GELU → Dropout(0.3) → Linear(128, 32)`` over 8192 windows × 128 tokens is the widest tensor traffic of a step: the
stock layers write the 128-wide hidden pre-activation, GELU output and dropout mask and read them back, while the
fused kernels (:mod:`sss_viewer.models._patchtst_triton`, ``PatchTST(gpu_kernels="fused")``) keep the hidden layer on
the chip and recompute it in the backward pass. In one run, on the same tokens and weights, under bf16 autocast as in
training, this times (median of ``--repeats``) forward + backward of:

* ``stock eager``: the ``nn.Sequential`` of the model;
* ``stock compiled``: the same under :func:`torch.compile` (what the training path's compiled model does today);
* ``fused``: the fused operator at the module's tiles (``FORWARD_ROWS`` × ``FORWARD_WARPS`` / ``BACKWARD_ROWS`` ×
  ``BACKWARD_WARPS``), and eager at each of ``--tiles`` (``patchtst_sass.py`` counts their instructions);
  ``fused compiled``: the module's tiles inside :func:`torch.compile`;

with each one's peak memory above the inputs, its tokens/s and windows/s (tokens / 128), its ratio to ``stock
compiled``, and with the dropout off, the largest difference of its output from the stock layers' relative to their
largest value (bf16: a few 1e-3).

    python benchmarks/fused_ffn.py                                          # CUDA, the paper's sizes (seconds)
    TRITON_INTERPRET=1 python benchmarks/fused_ffn.py --device cpu --tiny  # the logic on the CPU (no compile)
"""

from __future__ import annotations

import argparse
import contextlib
import os
import statistics
import sys
import time

import torch
from gpu_training import sync
from torch import nn

from sss_viewer.models import _patchtst_triton as kernels
from sss_viewer.models._patchtst_triton import fused_feed_forward


def parse_args(argv=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--device", default="cuda")
    p.add_argument("--tiny", action="store_true", help="small sizes, float32, no compile (the logic on the CPU)")
    p.add_argument("--windows", type=int, default=None, help="windows a step (paper 8192; tiny 4)")
    p.add_argument("--tokens", type=int, default=128, help="patch tokens a window (paper 128)")
    p.add_argument("--d-model", type=int, default=32)
    p.add_argument("--d-ff", type=int, default=128)
    p.add_argument("--dropout", type=float, default=0.3)
    p.add_argument("--repeats", type=int, default=None, help="timed steps a variant (20; tiny 2)")
    p.add_argument(
        "--tiles",
        default="128x8/128x8",
        help="extra eager fused rows at other tiles than the module's defaults: forward ROWSxWARPS/backward "
        "ROWSxWARPS, comma-separated (patchtst_sass.py counts their instructions; default 128x8/128x8)",
    )
    return p.parse_args(argv)


def _layers(d_model: int, d_ff: int, p: float, device: str) -> nn.Sequential:
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(d_model, d_ff), nn.GELU(), nn.Dropout(p), nn.Linear(d_ff, d_model)).to(device)


def _fused_call(ff: nn.Sequential):
    first, _, dropout, second = ff
    return lambda x: fused_feed_forward(x, first.weight, first.bias, second.weight, second.bias, dropout.p)


def _step(fn, x: torch.Tensor, dy: torch.Tensor, autocast: bool) -> torch.Tensor:
    with torch.autocast(x.device.type, dtype=torch.bfloat16, enabled=autocast):
        y = fn(x)
    y.backward(dy)
    return y


def _time(fn, x, dy, autocast: bool, repeats: int, device: str, tiles: str | None = None) -> tuple[float, float]:
    """Median seconds of forward + backward (at ``tiles``, if given), and the peak memory above what was allocated
    before (GiB)."""
    with _tiles(tiles):
        _step(fn, x, dy, autocast)  # warm-up: compilation, autotuning
        sync(device)
        base = 0
        if device.startswith("cuda"):
            torch.cuda.reset_peak_memory_stats()
            base = torch.cuda.memory_allocated()
        times = []
        for _ in range(repeats):
            t0 = time.perf_counter()
            _step(fn, x, dy, autocast)
            sync(device)
            times.append(time.perf_counter() - t0)
    peak = (torch.cuda.max_memory_allocated() - base) / 2**30 if device.startswith("cuda") else float("nan")
    return statistics.median(times), peak


TILE_NAMES = ("FORWARD_ROWS", "FORWARD_WARPS", "BACKWARD_ROWS", "BACKWARD_WARPS")


@contextlib.contextmanager
def _tiles(spec: str | None):
    """The fused kernels at other tiles (``"FRxFW/BRxBW"``) for the steps run inside; the module's defaults after."""
    if spec is None:
        yield
        return
    values = [int(v) for half in spec.split("/") for v in half.split("x")]
    saved = [getattr(kernels, name) for name in TILE_NAMES]
    for name, value in zip(TILE_NAMES, values, strict=True):
        setattr(kernels, name, value)
    try:
        yield
    finally:
        for name, value in zip(TILE_NAMES, saved, strict=True):
            setattr(kernels, name, value)


def main(argv=None) -> int:
    args = parse_args(argv)
    device = args.device
    if device.startswith("cuda") and not torch.cuda.is_available():
        print("no CUDA device: run TRITON_INTERPRET=1 python benchmarks/fused_ffn.py --device cpu --tiny")
        return 1
    if device == "cpu" and os.environ.get("TRITON_INTERPRET") != "1":
        print("on the CPU the fused kernels run only under Triton's interpreter: set TRITON_INTERPRET=1")
        return 1
    windows = args.windows or (4 if args.tiny else 8192)
    repeats = args.repeats or (2 if args.tiny else 20)
    autocast = device.startswith("cuda")
    m = windows * args.tokens
    print(
        f"torch {torch.__version__}, {torch.cuda.get_device_name(0) if autocast else 'cpu'}: {windows} windows × "
        f"{args.tokens} tokens, d_model {args.d_model}, d_ff {args.d_ff}, dropout {args.dropout}, "
        f"{'bf16 autocast' if autocast else 'float32'}, median of {repeats}",
        flush=True,
    )
    ff = _layers(args.d_model, args.d_ff, args.dropout, device).train()
    x = torch.randn(windows, args.tokens, args.d_model, device=device, requires_grad=True)
    dy = torch.randn(windows, args.tokens, args.d_model, device=device)
    default_tiles = f"{kernels.FORWARD_ROWS}x{kernels.FORWARD_WARPS}/{kernels.BACKWARD_ROWS}x{kernels.BACKWARD_WARPS}"
    variants = {"stock eager": (ff, None), f"fused {default_tiles}": (_fused_call(ff), None)}
    if device.startswith("cuda"):
        variants["stock compiled"] = (torch.compile(ff), None)
        variants[f"fused compiled {default_tiles}"] = (torch.compile(_fused_call(ff)), None)
    for spec in [t for t in args.tiles.split(",") if t and t != default_tiles]:
        variants[f"fused {spec}"] = (_fused_call(ff), spec)
    ff_off = _layers(args.d_model, args.d_ff, 0.0, device).eval()
    with torch.no_grad(), torch.autocast(device, dtype=torch.bfloat16, enabled=autocast):
        want = ff_off(x).float()
        agree = (_fused_call(ff_off)(x).float() - want).abs().max().item() / want.abs().max().item()
    rows = {}
    for name, (fn, tiles) in variants.items():
        try:
            rows[name] = _time(fn, x, dy, autocast, repeats, device, tiles)
        except Exception as error:  # a variant that fails says why; the others still print
            print(f"{name}: failed: {type(error).__name__}: {str(error).splitlines()[0][:200]}", flush=True)
    reference = rows.get("stock compiled", rows.get("stock eager"))
    print(f"{'variant':<32} {'ms':>8} {'Mtokens/s':>10} {'windows/s':>11} {'peak GiB':>9} {'vs stock':>9}")
    for name, (seconds, peak) in rows.items():
        ratio = reference[0] / seconds if reference else float("nan")
        print(
            f"{name:<32} {seconds * 1e3:8.2f} {m / seconds / 1e6:10.1f} {windows / seconds:11,.0f} {peak:9.2f} "
            f"{ratio:8.2f}x"
        )
    print(f"dropout off: |fused - stock| / max|stock| = {agree:.1e}")
    ok = agree < (2e-2 if autocast else 1e-5) and f"fused {default_tiles}" in rows
    print("ok" if ok else "FAILED: the fused layers disagree with the stock ones or did not run")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())

"""The paper preset's attention on each of torch's attention kernels: time of a training step's attention.

Issue 33, goal 3 (paper-preset training >= 1e6 windows/s on one H200). PatchTST at the paper's sizes attends over
128 patch tokens with 4 heads of width 8 (d_model 32) and dropout 0.3 on the attention weights, in each of its 2
layers. Counted per window, that is where a step's element-wise work is: 4 x 128 x 128 weights a layer, each
scored, exponentiated, dropped out (one random draw) and multiplied, forward and backward — while the head width of
8 leaves the matrix units nearly idle. Which of torch's kernels does this fastest
(:func:`torch.nn.functional.scaled_dot_product_attention` under :func:`torch.nn.attention.sdpa_kernel`: flash,
memory-efficient, cuDNN, math) is a measurement, not a reading of the documentation; this script makes it in
seconds, through the model's own attention call (``patchtst._stock_attention``: queries, keys and values as strided
views of one fused projection).

For each kernel that accepts the shapes: the median time of the forward and backward of both layers' attention for
one batch (``--batch`` windows), the windows/s of attention alone, and its share of a training step at the last
measured throughput (``--step-windows-per-s``, 632,336 on an H200: docs/results.md §3). A kernel that refuses the
shapes prints why. Without dropout the kernels' outputs are compared with the math kernel's (max |difference|). The
last row, ``triton``, is this project's fused attention (``sss_viewer/models/_attention_triton.py``,
``PatchTST(gpu_kernels="fused-attention")``: one program a window and head, hashed dropout), timed the same way.

    python benchmarks/attention_backends.py                    # CUDA, the paper's sizes (seconds)
    python benchmarks/attention_backends.py --device cpu --tiny  # the logic on the CPU
    TRITON_INTERPRET=1 python benchmarks/attention_backends.py --device cpu --tiny   # with the "triton" row
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
from torch.nn.attention import SDPBackend, sdpa_kernel

from sss_viewer.models.patchtst import _stock_attention

BACKENDS = {
    "flash": "FLASH_ATTENTION",
    "efficient": "EFFICIENT_ATTENTION",
    "cudnn": "CUDNN_ATTENTION",
    "math": "MATH",
}
"""Name here -> :class:`torch.nn.attention.SDPBackend` member (those a torch version lacks are skipped)."""
ROWS = (*BACKENDS, "triton")
"""The table's rows: torch's kernels, then the fused Triton kernels of ``sss_viewer/models/_attention_triton.py``."""


def parse_args(argv=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--device", default="cuda")
    p.add_argument("--tiny", action="store_true", help="small sizes, float32 (a check of the logic on the CPU)")
    p.add_argument("--batch", type=int, default=None, help="windows a step (paper 8192; tiny 16)")
    p.add_argument("--tokens", type=int, default=128, help="patch tokens a window (paper 128)")
    p.add_argument("--heads", type=int, default=4)
    p.add_argument("--head-dim", type=int, default=8, help="d_model / heads (paper 32 / 4)")
    p.add_argument("--layers", type=int, default=2)
    p.add_argument("--dropout", type=float, default=0.3, help="on the attention weights (paper 0.3)")
    p.add_argument("--repeats", type=int, default=None, help="timed steps a kernel (20; tiny 3)")
    p.add_argument("--step-windows-per-s", type=float, default=632_336.0, help="measured training throughput")
    p.add_argument("--backends", default=",".join(ROWS), help="comma-separated, of " + ", ".join(ROWS))
    return p.parse_args(argv)


def _qkv(batch: int, tokens: int, heads: int, head_dim: int, dtype, device, seed: int = 0) -> torch.Tensor:
    """A fused projection's output ``(B, N, 3, H, d)``, as PatchTST's attention receives it (requires grad)."""
    g = torch.Generator(device="cpu").manual_seed(seed)
    x = torch.randn(batch, tokens, 3, heads, head_dim, generator=g).to(device=device, dtype=dtype)
    return x.requires_grad_(True)


def _attention_for(name: str, device: str):
    """``(attend, context)`` for a row: torch's attention under one kernel, or the fused Triton kernels ("triton")."""
    if name == "triton":
        if not (device.startswith("cuda") or os.environ.get("TRITON_INTERPRET") == "1"):
            raise RuntimeError("needs a CUDA device (or TRITON_INTERPRET=1 on the CPU)")
        from sss_viewer.models._attention_triton import fused_attention  # needs triton

        return fused_attention, contextlib.nullcontext
    backend = getattr(SDPBackend, BACKENDS[name], None)
    if backend is None:
        raise RuntimeError(f"not in torch {torch.__version__}")
    return _stock_attention, lambda: sdpa_kernel([backend])


def time_backend(attend, context, args, sizes, dtype) -> float:
    """Median seconds of ``--layers`` attentions forward and backward on one batch through ``attend``."""
    layers = [_qkv(sizes["batch"], args.tokens, args.heads, args.head_dim, dtype, args.device, s) for s in range(2)]
    grads = [torch.randn_like(layer[:, :, 0]) for layer in layers]
    times = []
    with context():
        for step in range(sizes["repeats"] + 1):  # the first is warm-up
            sync(args.device)
            t0 = time.perf_counter()
            for i in range(args.layers):
                out = attend(layers[i % 2], args.dropout)
                out.backward(grads[i % 2])
            sync(args.device)
            if step:
                times.append(time.perf_counter() - t0)
    return statistics.median(times)


def max_difference(attend, context, args, dtype) -> float:
    """Max |output difference| without dropout between ``attend`` and torch's math kernel on 32 windows."""
    qkv = _qkv(32, args.tokens, args.heads, args.head_dim, dtype, args.device, seed=7).detach()
    with torch.no_grad():
        with context():
            got = attend(qkv, 0.0).float()
        with sdpa_kernel([SDPBackend.MATH]):
            expected = _stock_attention(qkv, 0.0).float()
    return float((got - expected).abs().max())


def main(argv=None) -> int:
    args = parse_args(argv)
    if args.device.startswith("cuda") and not torch.cuda.is_available():
        print("no CUDA device: run with --device cpu --tiny to check the logic")
        return 1
    sizes = {"batch": args.batch or (16 if args.tiny else 8192), "repeats": args.repeats or (3 if args.tiny else 20)}
    dtype = torch.float32 if args.tiny or not args.device.startswith("cuda") else torch.bfloat16
    names = [n.strip() for n in args.backends.split(",") if n.strip()]
    unknown = sorted(set(names) - set(ROWS))
    if unknown:
        print(f"unknown backend(s) {unknown}: expected any of {', '.join(ROWS)}")
        return 2
    device_name = torch.cuda.get_device_name(0) if args.device.startswith("cuda") else "cpu"
    print(
        f"torch {torch.__version__}, {device_name}; attention of {sizes['batch']} windows x {args.layers} layers: "
        f"{args.heads} heads x {args.tokens} tokens x width {args.head_dim}, dropout {args.dropout}, {dtype}",
        flush=True,
    )
    step_s = sizes["batch"] / args.step_windows_per_s
    print(
        "\n| kernel | attention fwd + bwd a step | windows/s (attention alone) | share of a step | max diff vs math |"
    )
    print("|---|---:|---:|---:|---:|")
    measured = 0
    for name in names:
        try:
            attend, context = _attention_for(name, args.device)
            seconds = time_backend(attend, context, args, sizes, dtype)
            diff = max_difference(attend, context, args, dtype)
        except (RuntimeError, ImportError) as error:  # the kernel refuses these shapes, dtype or device
            print(f"| {name} | refused: {str(error).splitlines()[0][:110]} | | | |")
            continue
        measured += 1
        print(
            f"| {name} | {seconds * 1e3:.2f} ms | {sizes['batch'] / seconds:,.0f} | {100 * seconds / step_s:.0f} % | "
            f"{diff:.1e} |",
            flush=True,
        )
    print(
        f"\na training step of {sizes['batch']} windows at {args.step_windows_per_s:,.0f} windows/s takes "
        f"{step_s * 1e3:.2f} ms; goal 3 (1e6 windows/s) allows {sizes['batch'] / 1e6 * 1e3:.2f} ms"
    )
    return 0 if measured else 1


if __name__ == "__main__":
    sys.exit(main())

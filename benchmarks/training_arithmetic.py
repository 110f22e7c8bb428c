"""What a paper-preset training step asks of a GPU, counted on the CPU: FLOPs and activation bytes per window.

Issue 33, goal 3 asks for >= 1,000,000 paper-preset training windows/s on one H200 (PatchTST at the authors'
sizes, L = 1024, batch 8192). Before a GPU profile says where a step's time goes, two floors can be counted
here on a small batch of the same model in training mode (dropout on), under bf16 autocast as on CUDA:

* **FLOPs** of the forward and backward (``torch.utils.flop_counter``), per window;
* **activation bytes** autograd saves for the backward (``saved_tensors_hooks``, each storage counted once),
  per window, split into the attention's N x N matrices (the CPU's attention keeps them; the flash kernel the
  GPU path uses does not) and the rest.

From these, two ceilings for one H200: compute at its dense bf16 tensor-core rate (``--tflops``, 989) and
memory at its HBM bandwidth (``--tb-per-s``, 4.8), taking a step's traffic as ``--traffic-factor`` (4) times
the saved bytes (written in the forward, read in the backward, and activation gradients of the same size
written and read). Both are estimates with their assumptions printed, not measurements: a step also reads the
windows, writes intermediates a compiled graph may fuse away, and small matrices (d_model 32) run tensor cores
far below their peak. What they say is whether the goal is near a floor of the hardware (as goal 1 is) or
leaves room that kernels and launches are wasting — which ``gpu_training.py --profile`` then locates.

    python benchmarks/training_arithmetic.py              # seconds on the CPU
    TRITON_INTERPRET=1 python benchmarks/training_arithmetic.py --gpu-kernels fused   # the fused feed-forward layers

With ``--gpu-kernels fused-ffn|fused-attention|fused`` those sub-layers run through the fused Triton kernels
(:mod:`sss_viewer.models._patchtst_triton`, :mod:`sss_viewer.models._attention_triton`; on the CPU through Triton's
interpreter, which is why it needs ``TRITON_INTERPRET=1``): they save only their inputs (and the attention its output
and each query's log-sum-exp) for the backward pass, so the saved bytes show what fusing removes. The interpreter's
bf16 products are not real numbers (it multiplies raw bits), which changes no byte count, and the flop counter does
not see inside the kernels: the FLOPs line then leaves their products out (their backward also recomputes the
forward's).
"""

from __future__ import annotations

import argparse
import collections
import os
import sys

import torch
from torch.utils.flop_counter import FlopCounterMode

from sss_viewer.engine.config import train_preset
from sss_viewer.models import build_window_model
from sss_viewer.models.patchtst import GPU_KERNELS

GOAL = 1e6
"""Training windows/s (issue 33, goal 3)."""


def _args(argv=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    p.add_argument("--batch", type=int, default=64, help="windows in the counted batch (per-window figures)")
    p.add_argument("--tflops", type=float, default=989.0, help="dense bf16 tensor-core TFLOPS (H200: 989)")
    p.add_argument("--tb-per-s", type=float, default=4.8, help="HBM bandwidth, TB/s (H200: 4.8)")
    p.add_argument("--traffic-factor", type=float, default=4.0, help="HBM bytes a step moves per saved byte")
    p.add_argument("--gpu-kernels", choices=GPU_KERNELS, default="stock", help="PatchTST(gpu_kernels=...)")
    return p.parse_args(argv)


def count(batch: int, gpu_kernels: str = "stock") -> tuple[float, dict[str, float], int]:
    """FLOPs per window (forward + backward) and saved activation bytes per window by kind; the patch count."""
    torch.manual_seed(0)
    config = train_preset("paper")
    params = {**config.model_params, "gpu_kernels": gpu_kernels}
    model = build_window_model(config.backbone, config.window_length, **params).train()
    n = model.n_patches
    saved: collections.Counter = collections.Counter()
    seen: set = set()

    def pack(t: torch.Tensor) -> torch.Tensor:
        key = (t.untyped_storage().data_ptr(), t.dtype)
        if key not in seen:
            seen.add(key)
            # attention weights: (B, H, N, N) or (B * H, N, N); not the feed-forward hidden (B, N, d_ff = 128 = N)
            square = t.dim() >= 3 and t.shape[-1] == n and t.shape[-2] == n and t.numel() // (n * n) != batch
            saved["attention N x N" if square else "other"] += t.untyped_storage().nbytes()
        return t

    x = torch.randn(batch, config.window_length)
    with FlopCounterMode(display=False) as flops:
        with torch.autocast("cpu", dtype=torch.bfloat16), torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
            out = model(x)
        out.float().sum().backward()
    return flops.get_total_flops() / batch, {k: v / batch for k, v in saved.items()}, n


def main(argv=None) -> int:
    args = _args(argv)
    if args.gpu_kernels != "stock" and os.environ.get("TRITON_INTERPRET") != "1":
        print("--gpu-kernels runs the fused kernels through Triton's interpreter on the CPU: set TRITON_INTERPRET=1")
        return 1
    flops, saved, n = count(args.batch, args.gpu_kernels)
    kept = saved.get("other", 0.0)
    compute_ceiling = args.tflops * 1e12 / flops
    memory_ceiling = args.tb_per_s * 1e12 / (args.traffic_factor * kept)
    print(
        f"paper preset PatchTST, L = 1024, {n} patches; counted on {args.batch} windows (training mode, bf16 autocast), "
        f"gpu_kernels={args.gpu_kernels}"
        + (" (FLOPs without the fused kernels' products)" if args.gpu_kernels != "stock" else "")
    )
    print("\n| per window | value |")
    print("|---|---:|")
    print(f"| FLOPs, forward + backward | {flops:.3g} |")
    for kind, nbytes in sorted(saved.items()):
        print(f"| saved for backward: {kind} | {nbytes / 1e6:.3f} MB |")
    print("\n| ceiling on one H200 (estimate) | windows/s | goal 1e6 needs |")
    print("|---|---:|---:|")
    print(f"| compute, {args.tflops:g} TFLOPS bf16 | {compute_ceiling:.3g} | {100 * GOAL / compute_ceiling:.0f} % |")
    print(
        f"| memory, {args.tb_per_s:g} TB/s x {args.traffic_factor:g} x saved bytes without N x N "
        f"| {memory_ceiling:.3g} | {100 * GOAL / memory_ceiling:.0f} % |"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())

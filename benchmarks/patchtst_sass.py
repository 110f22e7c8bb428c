"""The fused feed-forward kernels' machine code, counted without a GPU: instructions a token, registers, spills.

Issue 33, goal 3. :mod:`sss_viewer.models._patchtst_triton` fuses PatchTST's ``Linear(32, 128) → GELU → Dropout →
Linear(128, 32)`` into one Triton kernel a direction. Which tile (tokens a program) and how many warps it runs at, and
what its dropout stream costs, can be read before a GPU is at hand: Triton compiles each kernel to a cubin for
``--arch`` (sm_90 = H100/H200) on this machine and the ``cuobjdump`` it ships lists the SASS
(``evidence_sass.py``'s helpers). For each ``ROWSxWARPS`` configuration and dropout off / on (bf16 inputs, the paper's
widths) it prints the static instruction count, the lane-instructions a token (``instructions × 32 × warps / rows``:
the forward kernel is straight-line; the backward one's count is its loop body, which runs once a block of rows),
registers a thread and local-memory (spill) bytes. At an H200's ~3.35e13 lane-instructions/s the sum of both
kernels over 2 layers and 128 tokens gives the FFN's own ceiling in windows/s (a bound, not a measurement:
``fused_ffn.py`` measures on a GPU).

    python benchmarks/fused_ffn_sass.py                          # sm_90, 64x4, 128x8, 32x8 (about half a minute)
    python benchmarks/fused_ffn_sass.py --configs 64x4 --arch 100
"""

from __future__ import annotations

import argparse
import sys
import warnings

import triton
from evidence_sass import H200_LANE_RATE, _cuobjdump, _sass_stats
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource

from sss_viewer.models import _patchtst_triton as kernels

TOKENS, LAYERS = 128, 2
"""Tokens a window and encoder layers of the paper preset's PatchTST."""
BF16 = "*bf16"
FORWARD = dict(x_ptr=BF16, w1_ptr=BF16, b1_ptr=BF16, w2_ptr=BF16, b2_ptr=BF16, seed_ptr="*i64", y_ptr=BF16, M="i32")
BACKWARD = dict(x_ptr=BF16, dy_ptr=BF16, w1_ptr=BF16, b1_ptr=BF16, w2_ptr=BF16, seed_ptr="*i64", dx_ptr=BF16)
BACKWARD.update(dict.fromkeys(("dw1_part_ptr", "db1_part_ptr", "dw2_part_ptr", "db2_part_ptr"), "*fp32"), M="i32")
CONSTANTS = ("D_MODEL", "D_FF", "ROWS", "KEEP_FROM", "SCALE", "PRECISION")


def _args(argv=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    p.add_argument("--configs", default="64x4,128x8,32x8", help="ROWSxWARPS, comma-separated")
    p.add_argument("--arch", type=int, default=90, help="CUDA compute capability x 10 (90: H100/H200)")
    p.add_argument("--d-model", type=int, default=32)
    p.add_argument("--d-ff", type=int, default=128)
    p.add_argument("--dropout", type=float, default=0.3)
    p.add_argument("--lane-rate", type=float, default=H200_LANE_RATE, help="lane-instructions/s for the ceiling")
    return p.parse_args(argv)


def count(kernel, signature: dict, rows: int, warps: int, p: float, args, tool: str) -> tuple[int, int, int]:
    """(instructions, registers, local bytes) of one kernel compiled for ``args.arch``."""
    constants = dict(D_MODEL=args.d_model, D_FF=args.d_ff, ROWS=rows, KEEP_FROM=kernels._keep_from(p))
    constants.update(SCALE=kernels._scale(p), PRECISION="tf32")
    source = ASTSource(kernel, {**signature, **dict.fromkeys(CONSTANTS, "constexpr")}, constexprs=constants)
    with warnings.catch_warnings():  # triton 3.9 warns that its fp-fusion default will change; the default is used
        warnings.simplefilter("ignore", UserWarning)
        compiled = triton.compile(source, target=GPUTarget("cuda", args.arch, 32), options={"num_warps": warps})
    return _sass_stats(compiled.asm["cubin"], tool)


def main(argv=None) -> int:
    args = _args(argv)
    tool = _cuobjdump()
    print(f"sm_{args.arch}, triton {triton.__version__}, d_model {args.d_model}, d_ff {args.d_ff}, bf16\n")
    print(
        "| config | dropout | forward lane-instr/token | backward lane-instr/token | registers | spill B | "
        "FFN ceiling, windows/s |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|")
    for config in args.configs.split(","):
        rows, warps = (int(v) for v in config.split("x"))
        for p in (0.0, args.dropout):
            per_token, regs, spill = [], [], 0
            for kernel, signature in ((kernels._ffn_forward_kernel, FORWARD), (kernels._ffn_backward_kernel, BACKWARD)):
                n, r, local = count(kernel, signature, rows, warps, p, args, tool)
                per_token.append(n * 32 * warps / rows)
                regs.append(r)
                spill += local
            ceiling = args.lane_rate / (sum(per_token) * TOKENS * LAYERS)
            print(
                f"| {config} | {p:g} | {per_token[0]:,.0f} | {per_token[1]:,.0f} | {regs[0]} / {regs[1]} | {spill} | "
                f"{ceiling:.2g} |"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())

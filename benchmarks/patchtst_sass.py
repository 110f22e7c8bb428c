"""PatchTST's fused Triton kernels' machine code, counted without a GPU: instructions, registers, spills.

Issue 33, goal 3. :mod:`sss_viewer.models._patchtst_triton` fuses PatchTST's ``Linear(32, 128) → GELU → Dropout →
Linear(128, 32)`` into one Triton kernel a direction, :mod:`sss_viewer.models._attention_triton` its attention with
dropout. Which tile and how many warps they run at, and what their dropout streams cost, can be read before a GPU is
at hand: Triton compiles each kernel to a cubin for ``--arch`` (sm_90 = H100/H200) on this machine and the
``cuobjdump`` it ships lists the SASS (``evidence_sass.py``'s helpers). For each configuration and dropout off / on
(bf16 inputs, the paper's sizes) it prints the lane-instructions a unit of work (``instructions × 32 × warps`` over
the units a program's code handles once): a token for the feed-forward kernels (``ROWSxWARPS``: tokens a program; the
backward kernel's count is its loop body, which runs once a block of tokens), an attention weight for the attention
kernels (``BLOCK_QxWARPS``: queries a program handles at a time; 128 tokens, 4 heads of width 8); registers a thread
and local-memory (spill) bytes. At an H200's ~3.35e13 lane-instructions/s the sum of a kernel pair over 2 layers
gives that sub-layer's own ceiling in windows/s (a bound, not a measurement: ``fused_ffn.py`` and
``attention_backends.py`` measure on a GPU).

    python benchmarks/patchtst_sass.py                          # sm_90, both kernel pairs (about a minute)
    python benchmarks/patchtst_sass.py --configs 64x4 --attention-configs 128x8 --arch 100
"""

from __future__ import annotations

import argparse
import sys
import warnings

import torch
import triton
from evidence_sass import H200_LANE_RATE, _cuobjdump, _sass_stats
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource

from sss_viewer.models import _attention_triton as attention
from sss_viewer.models import _patchtst_triton as kernels

TOKENS, LAYERS, HEADS, HEAD_WIDTH = 128, 2, 4, 8
"""Tokens a window, encoder layers, heads and head width of the paper preset's PatchTST."""
BF16 = "*bf16"
BF16_TOKENS = torch.empty(0, dtype=torch.bfloat16)
"""Stands for the tokens when the launch constants are chosen (only their dtype is read)."""
FORWARD = dict(x_ptr=BF16, w1_ptr=BF16, b1_ptr=BF16, w2_ptr=BF16, b2_ptr=BF16, seed_ptr="*i64", y_ptr=BF16, M="i32")
BACKWARD = dict(x_ptr=BF16, dy_ptr=BF16, w1_ptr=BF16, b1_ptr=BF16, w2_ptr=BF16, seed_ptr="*i64", dx_ptr=BF16)
BACKWARD.update(dict.fromkeys(("dw1_part_ptr", "db1_part_ptr", "dw2_part_ptr", "db2_part_ptr"), "*fp32"), M="i32")
ATTENTION_FORWARD = dict(qkv_ptr=BF16, out_ptr=BF16, lse_ptr="*fp32", seed_ptr="*i64", N="i32")
ATTENTION_BACKWARD = dict(qkv_ptr=BF16, out_ptr=BF16, dout_ptr=BF16, lse_ptr="*fp32", seed_ptr="*i64", dqkv_ptr=BF16)
ATTENTION_BACKWARD["N"] = "i32"


def _args(argv=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    p.add_argument("--configs", default="64x4,128x8,32x8", help="feed-forward ROWSxWARPS, comma-separated")
    p.add_argument(
        "--attention-configs", default="128x8,128x4,64x4,64x8", help="attention BLOCK_QxWARPS, comma-separated"
    )
    p.add_argument("--arch", type=int, default=90, help="CUDA compute capability x 10 (90: H100/H200)")
    p.add_argument("--d-model", type=int, default=32)
    p.add_argument("--d-ff", type=int, default=128)
    p.add_argument("--dropout", type=float, default=0.3)
    p.add_argument("--lane-rate", type=float, default=H200_LANE_RATE, help="lane-instructions/s for the ceiling")
    return p.parse_args(argv)


def compile_stats(kernel, signature: dict, constants: dict, warps: int, arch: int, tool: str) -> tuple[int, int, int]:
    """(instructions, registers, local bytes) of one kernel compiled for sm_``arch``."""
    source = ASTSource(kernel, {**signature, **dict.fromkeys(constants, "constexpr")}, constexprs=constants)
    with warnings.catch_warnings():  # triton 3.9 warns that its fp-fusion default will change; the default is used
        warnings.simplefilter("ignore", UserWarning)
        compiled = triton.compile(source, target=GPUTarget("cuda", arch, 32), options={"num_warps": warps})
    return _sass_stats(compiled.asm["cubin"], tool)


def count(kernel, signature: dict, rows: int, warps: int, p: float, args, tool: str) -> tuple[int, int, int]:
    """(instructions, registers, local bytes) of one feed-forward kernel."""
    constants = dict(D_MODEL=args.d_model, D_FF=args.d_ff, ROWS=rows, **kernels.dropout_constants(BF16_TOKENS, p))
    return compile_stats(kernel, signature, constants, warps, args.arch, tool)


def count_attention(kernel, signature: dict, block_q: int, warps: int, p: float, args, tool: str):
    """(instructions, registers, local bytes) of one attention kernel at the paper's shapes."""
    constants = dict(H=HEADS, DH=HEAD_WIDTH, DP=16, BLOCK_N=TOKENS, BLOCK_Q=block_q, SM_SCALE=HEAD_WIDTH**-0.5)
    constants.update(kernels.dropout_constants(BF16_TOKENS, p))
    return compile_stats(kernel, signature, constants, warps, args.arch, tool)


def attention_table(args, tool: str) -> None:
    """Lane-instructions an attention weight of both attention kernels, each configuration, dropout off and on."""
    print(f"\nattention: {TOKENS} tokens, {HEADS} heads of width {HEAD_WIDTH}, bf16\n")
    print(
        "| config | dropout | forward lane-instr/weight | backward lane-instr/weight | registers | spill B | "
        "attention ceiling, windows/s |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|")
    pairs = (
        (attention._attention_forward_kernel, ATTENTION_FORWARD),
        (attention._attention_backward_kernel, ATTENTION_BACKWARD),
    )
    for config in args.attention_configs.split(","):
        block_q, warps = (int(v) for v in config.split("x"))
        for p in (0.0, args.dropout):
            per_weight, regs, spill = [], [], 0
            for kernel, signature in pairs:
                n, r, local = count_attention(kernel, signature, block_q, warps, p, args, tool)
                per_weight.append(n * 32 * warps / (TOKENS * TOKENS))  # the query blocks are unrolled: all N x N
                regs.append(r)
                spill += local
            ceiling = args.lane_rate / (sum(per_weight) * TOKENS * TOKENS * HEADS * LAYERS)
            print(
                f"| {config} | {p:g} | {per_weight[0]:.1f} | {per_weight[1]:.1f} | {regs[0]} / {regs[1]} | {spill} | "
                f"{ceiling:.2g} |"
            )


def main(argv=None) -> int:
    args = _args(argv)
    tool = _cuobjdump()
    print(
        f"sm_{args.arch}, triton {triton.__version__}\n\nfeed-forward: d_model {args.d_model}, d_ff {args.d_ff}, bf16\n"
    )
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
    attention_table(args, tool)
    return 0


if __name__ == "__main__":
    sys.exit(main())

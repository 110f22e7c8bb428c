"""The evidence kernels' machine code, counted without a GPU: instructions per sample, registers, code size.

Issue 33, goal 1 asks the MiniRocket evidence kernel for >= 1e9 samples/s on an H100/H200. Before any GPU
is at hand, the code ``ptxas`` makes for the target can be read on this machine: Triton compiles each kernel
to a cubin for ``--arch`` (sm_90 = H100/H200) without a device, and the ``cuobjdump`` Triton ships lists its
SASS. For the bundled demo model (or ``--model``), every dilation's kernel is compiled in both forms of
:mod:`sss_viewer.models._minirocket_triton`:

* ``generic``: the step tables read from device memory (the library's default on CUDA; its tile 1024x4,
  8 positions a thread);
* ``baked``: the dilation's biases and weights compiled in as immediates (``--block`` x ``--warps``,
  default 128x4: one position a thread).

Per dilation it prints the static instruction count per position (the code is straight-line: every position
runs every instruction once), registers a thread, local-memory (spill) bytes and code size; then the
per-sample totals (the sum over dilations), the ratio baked/generic, and the arithmetic ceiling of each:
``lane-instructions per second / instructions per sample``, where an H200 issues at most one warp
instruction per clock on each of its 4 x 132 schedulers (``--lane-rate``, default 132 SMs x 128 lanes x
1.98 GHz = 3.35e13). A real kernel reaches a fraction of that (latency, occupancy, memory, clocks under
load): the ceiling says what no tuning can pass, not what the kernel does; ``benchmarks/evidence_kernel.py``
measures that on a GPU. Compile times (a fresh Triton cache in a temporary folder) are what a machine's
first scoring with a model pays once.

    python benchmarks/evidence_sass.py                    # demo model, sm_90, baked 128x4 (about a minute)
    python benchmarks/evidence_sass.py --block 256 --warps 8 --arch 100
    python benchmarks/evidence_sass.py --tile-sums         # with the running sums over the tile (prefix="tile")
"""

from __future__ import annotations

import argparse
import importlib.util
import logging
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DEMO_MODEL = ROOT / "sss_viewer" / "data" / "demo" / "model"
H200_LANE_RATE = 132 * 128 * 1.98e9
"""FP32 lane-instructions per second an H200 issues at most (132 SMs, 4 schedulers x 32 lanes, 1.98 GHz boost)."""
GOAL = 1e9

logger = logging.getLogger("evidence_sass")


def _args(argv=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    p.add_argument("--model", type=Path, default=DEMO_MODEL, help="a MiniRocket model bundle (default: the demo's)")
    p.add_argument("--arch", type=int, default=90, help="CUDA compute capability x 10 (90: H100/H200)")
    p.add_argument("--block", type=int, default=128, help="baked kernel: positions per program")
    p.add_argument("--warps", type=int, default=4, help="baked kernel: warps per program")
    p.add_argument(
        "--tile-sums", action="store_true", help="both kernels with running sums over the tile (prefix='tile')"
    )
    p.add_argument("--lane-rate", type=float, default=H200_LANE_RATE, help="lane-instructions/s for the ceiling")
    return p.parse_args(argv)


def _cuobjdump() -> str:
    """The ``cuobjdump`` that ships with Triton's NVIDIA backend."""
    import triton

    path = Path(triton.__file__).parent / "backends" / "nvidia" / "bin" / "cuobjdump"
    if not path.exists():
        raise SystemExit(f"no cuobjdump at {path}: this triton has no NVIDIA tools")
    return str(path)


def _sass_stats(cubin: bytes, tool: str) -> tuple[int, int, int]:
    """(instructions, registers, local bytes) of the one kernel in ``cubin``."""
    with tempfile.NamedTemporaryFile(suffix=".cubin") as f:
        f.write(cubin)
        f.flush()
        out = subprocess.run([tool, "-res-usage", "-sass", f.name], capture_output=True, text=True, check=True).stdout
    n = sum(1 for line in out.splitlines() if re.match(r"\s*/\*[0-9a-f]{4,}\*/\s+\S", line))
    regs = int(re.search(r"REG:(\d+)", out).group(1))
    local = int(re.search(r"LOCAL:(\d+)", out).group(1))
    return n, regs, local


def main(argv=None) -> int:
    args = _args(argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s", stream=sys.stdout)
    cache = tempfile.TemporaryDirectory(prefix="evidence-sass-")
    os.environ["TRITON_CACHE_DIR"] = cache.name  # before triton is imported: compile times from scratch
    if importlib.util.find_spec("triton") is None:
        raise SystemExit("evidence_sass.py needs triton (the [dev] extra installs it); it is not installed here")
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    from sss_viewer.engine.bundle import ModelBundle
    from sss_viewer.models import _minirocket_series as series
    from sss_viewer.models import _minirocket_triton as kernels

    tool = _cuobjdump()
    bundle = ModelBundle.load(args.model)
    model = bundle.model.eval()
    window = int(bundle.window_length)
    weights, _ = series.fold_head(model)
    layout = series.SeriesLayout.of(model.features, window)
    tables = kernels._tables(model.features, layout, weights, "cpu")
    target = GPUTarget("cuda", args.arch, 32)
    common = {"x_ptr": "*fp32", "x_stride": "i32", "T": "i32", "whole_ptr": "*fp64", "part_ptr": "*fp64"}
    common["out_stride"] = "i32"
    signature = dict(common, sb_ptr="*fp32", sw_ptr="*fp32", step0="i32", d="i32", pad_even="i32", inner="i32")
    forms = ("NGROUPS", "BLOCK", "IN_ORDER", "RUNNING", "BAKED", "B", "W", "NB", "D", "PAD_EVEN", "INNER")
    signature.update(dict.fromkeys(forms, "constexpr"))
    generic_form = {"BAKED": False, "B": (), "W": (), "NB": 0, "D": 0, "PAD_EVEN": False, "INNER": False}
    g_block, g_warps = kernels.TILES["generic"]
    logger.info(
        "model %s: %d features, %d dilations, window %d; sm_%d, triton %s",
        args.model,
        model.features.n_features,
        len(layout.dilations),
        window,
        args.arch,
        triton.__version__,
    )
    logger.info(
        "%5s %3s | %-36s | %-36s", "d", "nb", f"generic {g_block}x{g_warps}", f"baked {args.block}x{args.warps}"
    )
    totals = {"generic": 0.0, "baked": 0.0}
    seconds = {"generic": 0.0, "baked": 0.0}
    compiled_groups = {}
    for di, d in enumerate(layout.dilations.tolist()):
        u0, u1 = layout.positions(di, False)
        inner = u1 - u0 < window
        groups = tables.groups[di]
        t0 = time.perf_counter()
        if groups not in compiled_groups:  # the generic kernel compiles once per group count
            constants = {"NGROUPS": groups, "BLOCK": g_block, "IN_ORDER": True, "RUNNING": args.tile_sums}
            compiled_groups[groups] = triton.compile(
                ASTSource(kernels._evidence_kernel, signature, constexprs=dict(generic_form, **constants)),
                target=target,
                options={"num_warps": g_warps, "enable_fp_fusion": False},
            )
            seconds["generic"] += time.perf_counter() - t0
        g_n, g_regs, g_local = _sass_stats(compiled_groups[groups].asm["cubin"], tool)
        biases, cum_weights, nb = tables.baked[di]
        constants = {"B": biases, "W": cum_weights, "NB": nb, "D": int(d), "PAD_EVEN": di % 2 == 0, "INNER": inner}
        constants.update(BAKED=True, NGROUPS=0, IN_ORDER=False, RUNNING=args.tile_sums, BLOCK=args.block)
        t0 = time.perf_counter()
        baked = triton.compile(
            ASTSource(kernels._evidence_kernel, signature, constexprs=constants),
            target=target,
            options={"num_warps": args.warps, "enable_fp_fusion": False},
        )
        seconds["baked"] += time.perf_counter() - t0
        b_n, b_regs, b_local = _sass_stats(baked.asm["cubin"], tool)
        g_per = g_n / (g_block // (32 * g_warps))
        b_per = b_n / max(1, args.block // (32 * args.warps))
        totals["generic"] += g_per
        totals["baked"] += b_per
        logger.info(
            "%5d %3d | %7.0f /pos %3d regs %4d B local %4.0f KB | %7.0f /pos %3d regs %4d B local %4.0f KB",
            d,
            nb,
            g_per,
            g_regs,
            g_local,
            g_n * 16 / 1024,
            b_per,
            b_regs,
            b_local,
            b_n * 16 / 1024,
        )
    ratio = totals["baked"] / totals["generic"]
    print(f"\n| per sample, sm_{args.arch} | generic {g_block}x{g_warps} | baked {args.block}x{args.warps} | ratio |")
    print("|---|---:|---:|---:|")
    print(f"| instructions (all dilations) | {totals['generic']:,.0f} | {totals['baked']:,.0f} | {ratio:.3f} |")
    ceilings = {k: args.lane_rate / v for k, v in totals.items()}
    print(
        f"| ceiling at {args.lane_rate:.3g} lane-instr/s | {ceilings['generic']:.3g} samples/s | "
        f"{ceilings['baked']:.3g} samples/s | {ceilings['baked'] / ceilings['generic']:.3f} |"
    )
    print(f"| compile, fresh cache | {seconds['generic']:.1f} s | {seconds['baked']:.1f} s | |")
    print(
        f"\ngoal 1 (>= {GOAL:.0e} samples/s) needs {100 * GOAL / ceilings['baked']:.0f} % of the baked kernel's issue "
        f"ceiling ({100 * GOAL / ceilings['generic']:.0f} % of the generic one's)"
    )
    cache.cleanup()
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""The MiniRocket evidence series in one fused Triton kernel (issue 33): window logits on a GPU.

What the kernel computes
------------------------
One program per (tile of ``BLOCK`` positions, row) and dilation reads the 9 dilated taps of its
positions once, forms the outputs of all 84 MiniRocket kernels (unrolled at compile time: the
fixed 3-of-9 tap combinations of :func:`~sss_viewer.models.minirocket_features.kernel_taps`, in
kernel order, each pair sum ``x_a + x_b`` shared by the kernels that start with it), thresholds
each against its sorted biases and adds the weights, and writes, per position:

* of the padded ("same") kernels, and at dilations whose reach covers the window
  (``L <= 8 d``) the unpadded ones too: the evidence itself, added in float64 to a ``whole`` series
  shared by all dilations (every such group averages over the window's own ``L`` positions), turned
  into a prefix sum (``torch.cumsum``) once after the last dilation;
* of the unpadded kernels of the other dilations (``L > 8 d``): one float64 series per dilation
  (``torch.cumsum`` makes it a prefix sum), or with ``prefix="tile"`` of running sums (from the
  tile's first position: ``tl.cumsum`` over the tile), from which
  :func:`triton_window_logits` gathers the windows ``[s + 4 d, s + L - 4 d)`` before the next
  dilation overwrites it. With running sums, a window's sum is the difference of two prefix sums,
  each a running sum plus the total of the tiles before it (:func:`_tile_offsets`: a cumulative sum over one value a
  tile; :func:`_prefix_at`), so no dilation needs a pass of ``torch.cumsum`` over its whole float64
  series (these passes took 12 % of a call's time on the H200). The scan in the kernel costs ~90
  instructions a position (``benchmarks/evidence_sass.py``), ~8 % of the baked kernel's: which is
  faster is for a GPU to say, so it is a choice (``prefix="tile"``; the default is the pass).

The arithmetic is the numba CPU path's (:func:`sss_viewer.models._minirocket_series.window_logits`)
operation for operation: the taps added left to right in float32, ``(x_a + x_b + x_c) * 3 - base``
with no fused multiply-add (the launch passes ``enable_fp_fusion=False``), each kernel's biases
sorted in groups of four with cumulative weights (:meth:`SeriesLayout.steps`, a chain of selects
per group), kernels added in kernel order. The per-position evidence is the numba path's bit for
bit; only the float64 sums are added in another order.

Thresholding: comparisons, not a search
---------------------------------------
The biases and weights of a kernel are the same for every position of a program: loaded once per
thread as scalars, a group of four sorted biases costs 4 compares + 4 selects (the cumulative weight
of the highest bias below the output) + 1 add per position, 2.25 instructions a bias. A branch-free
search over the same four biases in registers needs 3 compare-and-select rounds to find the count
and 4 selects to pick its summed weight (>= 10 instructions, not 9); a search over a table in memory
adds dependent per-thread loads, which issue at a quarter of the arithmetic rate. Comparisons are
the cheaper design here.

Counted in the SASS ``ptxas`` makes for sm_90 (``triton.compile`` to a cubin on a CPU machine,
``cuobjdump -sass``; ``BLOCK=1024``, 4 warps: 8 positions a thread, no spills, 201 registers), per
position and dilation: **1,340 instructions** with one group of four biases per kernel (336 FSETP,
317 FSEL, 287 FADD, 84 FMUL, 94 loads, ~220 integer and predicate bookkeeping; 1,024 of them the
arithmetic itself), 2,084 with two groups, 2,926 with three, 3,779 with four. The demo model (25
dilations; 4, 3, 1 and 2 groups at the first four, 1 after): **about 38,300 instructions per
sample**, so at an H200's ~33 T float32 lane-instructions/s a ceiling near 0.9 G samples/s. Each
kernel's partial sum passes through an ordered move (``_after``): without it the compiler hoisted
all 672 scalar bias loads to the top of the program and spilled (20,080 instructions, 43 % of them
local-memory traffic).

The baked kernel: the numbers compiled in
-----------------------------------------
:func:`_evidence_kernel` with ``BAKED`` is the same arithmetic with one dilation's sorted biases, cumulative weights
and dilation passed as compile-time constants (tuples of the float32 values), so ``ptxas`` writes them into
the compare and select instructions as immediates: no table loads, no address arithmetic, no ``+inf``
padding compared (a kernel's last group holds only its remaining biases), and one position a thread. Counted
the same way for the demo model (``benchmarks/evidence_sass.py``, sm_90, tile 128 x 4): **32,336
instructions a sample** against the generic kernel's 38,269 (0.845), 1,144 a position at a dilation of four
biases a kernel (336 FSETP, 336 FSEL, 284 FADD, 84 FMUL: 1,040 the arithmetic itself), 32-48 registers
instead of ~200 (so an SM holds 4-6 times the warps to hide latency) and 15-53 KB of code a kernel instead
of 168-472 KB. Two or four positions a thread made ``ptxas`` hold the immediates in registers: more
instructions a position and up to 255 registers. The cost is compiling: one kernel per model and dilation
(25 for the demo model, about a second each on a 2-core CPU), cached on disk by Triton after a machine's
first use. Its per-position evidence is the generic kernel's bit for bit, and so are its window logits with the
``torch.cumsum`` pass; with running sums over tiles (``prefix="tile"``) of another size the float64 sums are
added in another order (the tests allow 1e-12).

What goal 1 asks of the hardware
--------------------------------
Every sample is compared with each of the model's 9,996 biases and each comparison feeds a select: two
issued instructions a bias, plus three a kernel for its output, is the floor of an exact compare-based
evaluation. An H200 issues at most one warp instruction per clock on each of its 528 schedulers, 3.35e13
lane-instructions a second at 1.98 GHz: the baked kernel's ceiling is 1.03e9 samples/s (the generic one's
8.7e8), so 1e9 would need 97 % of every issue slot of the chip, which no kernel sustains. The measured
figure for the generic kernel, 2.44e8, is 28 % of its ceiling; what the baked kernel's registers and code
size buy is a larger share of a higher ceiling, measured on a GPU by ``benchmarks/evidence_kernel.py``.

Tables
------
The step tables (sorted biases, cumulative weights) are uploaded to the device once per
(transform, head weights, window length, device) and kept in a small cache; a call launches one
kernel per dilation with plain integers from the host, so nothing waits on the device inside it.

Triton's interpreter (``TRITON_INTERPRET=1`` set before this module is imported) runs the same
kernel on the CPU: that is how the tests check its logic without a GPU.
"""

from __future__ import annotations

import logging
import threading
from collections import OrderedDict
from dataclasses import dataclass

import numpy as np
import torch

from sss_viewer._validate import check_option
from sss_viewer.models.minirocket_features import N_KERNELS

try:
    import triton
    import triton.language as tl
except ImportError:  # pragma: no cover - triton ships with CUDA builds of torch; a CPU machine may lack it
    triton = None
    tl = None

logger = logging.getLogger(__name__)

__all__ = ["triton_available", "triton_window_logits"]

BLOCK = 1024
"""Positions per program of the generic kernel (8 per thread with 4 warps)."""
NUM_WARPS = 4
"""Warps per program of the generic kernel."""
KERNELS = ("generic", "baked")
"""The two forms of the kernel (:func:`triton_window_logits`'s ``kernel``)."""
PREFIXES = ("torch", "tile")
"""How the unpadded kernels' window sums are formed at each dilation (:func:`triton_window_logits`'s ``prefix``)."""
DEFAULT_PREFIX = "torch"
"""The prefix scoring uses, until a GPU has measured "tile" against it."""
DEFAULT_KERNEL = "generic"
"""The form scoring uses. The baked form has 16 % fewer instructions a sample, 32-48 registers instead of ~200
and a tenth of the code (``benchmarks/evidence_sass.py``), but pays one compile per model and dilation on a
machine's first use; it becomes the default when a GPU has measured it faster (``benchmarks/evidence_kernel.py``)."""
TILES = {"generic": (BLOCK, NUM_WARPS), "baked": (128, 4)}
"""Default (positions, warps) per program of each kernel. The baked kernel takes one position a thread: with
its numbers compiled in as immediates it needs 32-48 registers; two or four positions a thread made ptxas
hold the immediates in registers (more instructions a position, up to 255 registers)."""
_CACHE_SIZE = 8
"""Device tables kept (one per model, head, window length and device)."""


def triton_available(device: torch.device | str = "cuda") -> bool:
    """Whether the fused Triton kernel can run on ``device``.

    Parameters
    ----------
    device : torch.device or str
        ``cuda`` devices need triton; the CPU runs the kernel only under Triton's interpreter
        (``TRITON_INTERPRET=1`` set before this module was imported).

    Returns
    -------
    bool
    """
    if triton is None:
        return False
    kind = torch.device(device).type
    if kind == "cuda":
        return torch.cuda.is_available()
    if kind == "cpu":
        from triton.runtime.interpreter import InterpretedFunction

        return isinstance(_evidence_kernel, InterpretedFunction)
    return False


if triton is not None:

    @triton.jit
    def _pick(j: tl.constexpr, x0, x1, x2, x3, x4, x5, x6, x7, x8):
        """Tap ``j`` (a compile-time index) of the nine."""
        if j == 0:
            r = x0
        elif j == 1:
            r = x1
        elif j == 2:
            r = x2
        elif j == 3:
            r = x3
        elif j == 4:
            r = x4
        elif j == 5:
            r = x5
        elif j == 6:
            r = x6
        elif j == 7:
            r = x7
        else:
            r = x8
        return r

    @triton.jit
    def _steps(v, e, sb_ptr, sw_ptr, first, NGROUPS: tl.constexpr):
        """``e + sum_q w_q [v > b_q]`` for one kernel's outputs ``v`` (BLOCK,), float32: per group of four sorted
        biases the cumulative weight of the highest bias below ``v``, added to ``e`` group by group."""
        for g in tl.static_range(NGROUPS):
            s = first + 4 * g
            b0 = tl.load(sb_ptr + s)
            b1 = tl.load(sb_ptr + s + 1)
            b2 = tl.load(sb_ptr + s + 2)
            b3 = tl.load(sb_ptr + s + 3)
            w0 = tl.load(sw_ptr + s)
            w1 = tl.load(sw_ptr + s + 1)
            w2 = tl.load(sw_ptr + s + 2)
            w3 = tl.load(sw_ptr + s + 3)
            a = tl.where(v > b0, w0, 0.0)
            a = tl.where(v > b1, w1, a)
            a = tl.where(v > b2, w2, a)
            a = tl.where(v > b3, w3, a)
            e = e + a
        return e

    @triton.jit
    def _after(e):
        """``e`` itself, through an ordered (side-effecting) move: the loads of the next kernel's biases are
        issued after this kernel's arithmetic, not all hoisted to the top of the program (a register for
        each, then spills)."""
        return tl.inline_asm_elementwise("mov.b32 $0, $1;", "=r,r", [e], dtype=tl.float32, is_pure=False, pack=1)

    @triton.constexpr_function
    def _kernel_index(a, b, c):
        """Index of the kernel whose 2-weighted taps are ``(a, b, c)`` among the 3-of-9 combinations in
        lexicographic order (:func:`~sss_viewer.models.minirocket_features.kernel_taps`), at compile time."""
        return (84 - (9 - a) * (8 - a) * (7 - a) // 6 + (8 - a) * (7 - a) // 2) - (9 - b) * (8 - b) // 2 + (c - b - 1)

    @triton.constexpr_function
    def _baked_index(a, b, c, nb, j):
        """Position of bias ``j`` of kernel ``(a, b, c)`` in a dilation's baked table of ``nb`` biases a kernel."""
        return _kernel_index(a, b, c) * nb + j

    @triton.jit
    def _taps(x_ptr, x_stride, T, BLOCK: tl.constexpr, d, BOTH_ENDS: tl.constexpr):
        """The row, positions and mask of this program, and the 9 taps at dilation ``d`` of each position
        (zeros outside ``[0, T)``) with their left-to-right float32 sum ``base``. ``BOTH_ENDS``: the left taps' masks test ``p < T`` too
        (always true there; the generic kernel's SASS, as measured, has it)."""
        row = tl.program_id(1).to(tl.int64)
        t = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        live = t < T
        src = x_ptr + row * x_stride
        left_end = T if BOTH_ENDS else 2**31 - 1
        p = t - 4 * d
        x0 = tl.load(src + p, mask=live & (p >= 0) & (p < left_end), other=0.0)
        p = t - 3 * d
        x1 = tl.load(src + p, mask=live & (p >= 0) & (p < left_end), other=0.0)
        p = t - 2 * d
        x2 = tl.load(src + p, mask=live & (p >= 0) & (p < left_end), other=0.0)
        p = t - d
        x3 = tl.load(src + p, mask=live & (p >= 0) & (p < left_end), other=0.0)
        x4 = tl.load(src + t, mask=live, other=0.0)
        p = t + d
        x5 = tl.load(src + p, mask=live & (p < T), other=0.0)
        p = t + 2 * d
        x6 = tl.load(src + p, mask=live & (p < T), other=0.0)
        p = t + 3 * d
        x7 = tl.load(src + p, mask=live & (p < T), other=0.0)
        p = t + 4 * d
        x8 = tl.load(src + p, mask=live & (p < T), other=0.0)
        base = x0 + x1
        base = base + x2
        base = base + x3
        base = base + x4
        base = base + x5
        base = base + x6
        base = base + x7
        base = base + x8
        return row, t, live, x0, x1, x2, x3, x4, x5, x6, x7, x8, base

    @triton.jit
    def _write(whole_ptr, part_ptr, out_stride, row, t, live, e_even, e_odd, pad_even, inner, RUNNING: tl.constexpr):
        """Add the padded kernels' evidence (the even or the odd ones) to ``whole`` (float64, column ``1 + t``); write
        the unpadded ones' to ``part`` when ``inner`` — with ``RUNNING`` their running sum over the tile (from the
        tile's first position; :func:`_prefix_at` adds the earlier tiles' totals) — else add them to ``whole`` too."""
        even = pad_even != 0
        e_pad = tl.where(even, e_even, e_odd)
        e_unp = tl.where(even, e_odd, e_even)
        dst = row * out_stride + 1 + t
        whole = tl.load(whole_ptr + dst, mask=live, other=0.0)
        if inner != 0:
            tl.store(whole_ptr + dst, whole + e_pad.to(tl.float64), mask=live)
            if RUNNING:
                tl.store(part_ptr + dst, tl.cumsum(e_unp.to(tl.float64), 0), mask=live)
            else:
                tl.store(part_ptr + dst, e_unp.to(tl.float64), mask=live)
        else:
            tl.store(whole_ptr + dst, whole + (e_pad + e_unp).to(tl.float64), mask=live)

    @triton.jit(do_not_specialize=["x_stride", "T", "out_stride", "step0", "d", "pad_even", "inner"])
    def _evidence_kernel(
        x_ptr,
        x_stride,
        T,
        whole_ptr,
        part_ptr,
        out_stride,
        sb_ptr,
        sw_ptr,
        step0,
        d,
        pad_even,
        inner,
        NGROUPS: tl.constexpr,
        BLOCK: tl.constexpr,
        IN_ORDER: tl.constexpr,
        RUNNING: tl.constexpr,
        BAKED: tl.constexpr = False,
        B: tl.constexpr = (),
        W: tl.constexpr = (),
        NB: tl.constexpr = 0,
        D: tl.constexpr = 0,
        PAD_EVEN: tl.constexpr = False,
        INNER: tl.constexpr = False,
    ):
        """Evidence of one dilation at positions ``tile * BLOCK + arange(BLOCK)`` of row ``program_id(1)``.

        ``x`` (B, T) float32; ``whole`` and ``part`` (B, T + 1) float64, written at columns ``1 + t``.

        The generic form (``BAKED`` False) reads its numbers at run time: the dilation ``d``; kernel ``k``'s
        steps start at ``step0 + k * 4 * NGROUPS`` of the tables ``sb`` (sorted biases) and ``sw`` (cumulative
        weights within each group of four); ``pad_even``: the padded kernels are the even ones; ``inner``: the
        unpadded kernels go to ``part`` (else to ``whole``).

        The baked form (``BAKED`` True; the run-time numbers above are not read) has one dilation's numbers
        compiled in: ``B`` and ``W`` (tuples of ``84 * NB`` floats, kernel by kernel) the sorted biases and the
        cumulative weights, ``D``, ``PAD_EVEN`` and ``INNER``; the last group of a kernel holds
        ``NB - 4 * (NB // 4)`` biases when ``NB`` is not a multiple of four (no ``+inf`` padding compared).
        """
        if BAKED:  # the dilation and where the kernels' evidence goes: compile-time numbers
            dilation, pads_even, to_part = D, PAD_EVEN, INNER
        else:
            dilation, pads_even, to_part = d, pad_even, inner
        row, t, live, x0, x1, x2, x3, x4, x5, x6, x7, x8, base = _taps(x_ptr, x_stride, T, BLOCK, dilation, not BAKED)
        e_even = tl.zeros_like(base)
        e_odd = tl.zeros_like(base)
        stride: tl.constexpr = 4 * NGROUPS
        for a in tl.static_range(7):
            xa = _pick(a, x0, x1, x2, x3, x4, x5, x6, x7, x8)
            for b in tl.static_range(a + 1, 8):
                pair = xa + _pick(b, x0, x1, x2, x3, x4, x5, x6, x7, x8)
                for c in tl.static_range(b + 1, 9):
                    v = (pair + _pick(c, x0, x1, x2, x3, x4, x5, x6, x7, x8)) * 3.0 - base
                    if BAKED:
                        for g in tl.static_range(0, NB, 4):
                            s = tl.where(v > B[_baked_index(a, b, c, NB, g)], W[_baked_index(a, b, c, NB, g)], 0.0)
                            if g + 1 < NB:
                                s = tl.where(
                                    v > B[_baked_index(a, b, c, NB, g + 1)], W[_baked_index(a, b, c, NB, g + 1)], s
                                )
                            if g + 2 < NB:
                                s = tl.where(
                                    v > B[_baked_index(a, b, c, NB, g + 2)], W[_baked_index(a, b, c, NB, g + 2)], s
                                )
                            if g + 3 < NB:
                                s = tl.where(
                                    v > B[_baked_index(a, b, c, NB, g + 3)], W[_baked_index(a, b, c, NB, g + 3)], s
                                )
                            if _kernel_index(a, b, c) % 2 == 0:
                                e_even = e_even + s
                            else:
                                e_odd = e_odd + s
                    else:
                        first = step0 + _kernel_index(a, b, c) * stride
                        if _kernel_index(a, b, c) % 2 == 0:
                            e_even = _steps(v, e_even, sb_ptr, sw_ptr, first, NGROUPS)
                            if IN_ORDER:
                                e_even = _after(e_even)
                        else:
                            e_odd = _steps(v, e_odd, sb_ptr, sw_ptr, first, NGROUPS)
                            if IN_ORDER:
                                e_odd = _after(e_odd)
        _write(whole_ptr, part_ptr, out_stride, row, t, live, e_even, e_odd, pads_even, to_part, RUNNING)


@dataclass(frozen=True)
class _Tables:
    """One model's numbers on one device: the layout, the step tables and the per-dilation launch arguments."""

    layout: object  # the SeriesLayout the tables were made from
    step_biases: torch.Tensor  # (n_steps,), float32, on the device
    step_weights: torch.Tensor  # (n_steps,), float32, on the device
    first_step: tuple[int, ...]  # per dilation: the first step of kernel 0
    groups: tuple[int, ...]  # per dilation: groups of four steps per kernel
    baked: tuple[tuple[tuple[float, ...], tuple[float, ...], int], ...]  # per dilation: biases, weights, per kernel
    keep: tuple  # the keyed objects themselves, so that their ids stay theirs while cached


_TABLES: OrderedDict[tuple, _Tables] = OrderedDict()
_TABLES_LOCK = threading.Lock()


def _tables(features, layout, weights: np.ndarray, device: torch.device) -> _Tables:
    """The device tables of ``features`` (laid out as ``layout``) with head ``weights``, uploaded on first use and cached.

    Keyed on the identity of the bias tensor (and its in-place version counter), of ``weights`` (an
    array :func:`~sss_viewer.models._minirocket_series.fold_head` made: never changed in place), the
    window length and the device.
    """
    key = (id(features.biases), features.biases._version, id(weights), int(layout.window_length), str(device))
    with _TABLES_LOCK:
        hit = _TABLES.get(key)
        if hit is not None:
            _TABLES.move_to_end(key)
            return hit
    offsets, counts, step_b, step_w = layout.steps(weights)
    tables = _Tables(
        layout=layout,
        step_biases=torch.from_numpy(step_b).to(device),
        step_weights=torch.from_numpy(step_w).to(device),
        first_step=tuple(int(o) for o in offsets[:, 0]),
        groups=tuple(int(c) // 4 for c in counts),
        baked=_baked_tables(offsets, counts, layout.n_biases, step_b, step_w),
        keep=(features.biases, weights),
    )
    with _TABLES_LOCK:
        _TABLES[key] = tables
        while len(_TABLES) > _CACHE_SIZE:
            _TABLES.popitem(last=False)
    return tables


def _baked_tables(offsets, counts, n_biases, step_b, step_w) -> tuple:
    """Per dilation, the step tables of :meth:`SeriesLayout.steps` without their ``+inf`` padding, as the
    tuples of Python floats :func:`_evidence_kernel` compiles in with ``BAKED`` (each a float32 value, exactly).

    Parameters
    ----------
    offsets : ndarray, shape (D, 84), int64
    counts, n_biases : ndarray, shape (D,), int64
        Steps (a multiple of four) and biases per kernel at each dilation.
    step_b, step_w : ndarray, shape (n_steps,), float32

    Returns
    -------
    tuple of (biases, weights, nb)
        ``biases`` and ``weights`` hold ``84 * nb`` floats, kernel by kernel.
    """
    out = []
    for di, (count, nb) in enumerate(zip(counts.tolist(), n_biases.tolist(), strict=True)):
        first = int(offsets[di, 0])
        keep = (np.arange(N_KERNELS)[:, None] * count + np.arange(nb)).reshape(-1) + first
        out.append((tuple(step_b[keep].tolist()), tuple(step_w[keep].tolist()), int(nb)))
    return tuple(out)


def triton_window_logits(
    features,
    layout,
    weights: np.ndarray,
    constant: float,
    x: torch.Tensor,
    starts: np.ndarray,
    rows: np.ndarray | None = None,
    *,
    block: int | None = None,
    num_warps: int | None = None,
    kernel: str | None = None,
    prefix: str | None = None,
) -> torch.Tensor:
    """Window logits through the evidence series, its per-position evidence from the fused Triton kernel.

    The contract of :func:`sss_viewer.models._minirocket_series.torch_window_logits` (which calls this
    for ``evidence="triton"``).

    Parameters
    ----------
    features : MiniRocketFeatures
        Fitted transform (its bias tensor keys the cache of device tables).
    layout : SeriesLayout
        ``SeriesLayout.of(features, window_length)``: the dilations, biases and window length.
    weights : ndarray, shape (F,), float64
    constant : float
        From :func:`~sss_viewer.models._minirocket_series.fold_head`.
    x : Tensor, shape (B, T), float32
        Channels (zero-padded at the end to one length), on a CUDA device or, under Triton's
        interpreter, the CPU.
    starts : ndarray, shape (W,), int64
        Window starts.
    rows : ndarray, shape (W,), int64, optional
        The row of ``x`` each window is in; without it every row has a window at every start.
    block, num_warps : int, optional
        Positions per program (a power of two) and warps per program; default :data:`TILES` of ``kernel``.
    kernel : {"generic", "baked"}, optional
        Default :data:`DEFAULT_KERNEL`. ``"generic"`` reads the model's step tables from device memory (one compiled kernel per
        bias-group count); ``"baked"`` compiles each dilation's biases and weights into its kernel
        (:func:`_evidence_kernel` with ``BAKED``: one compile per model and dilation, cached on disk by Triton).
        The same float32 operations on the same numbers: the same evidence bit for bit (and logits, with the
        same ``prefix`` and tile).
    prefix : {"torch", "tile"}, optional
        Default :data:`DEFAULT_PREFIX`. How the unpadded kernels' window sums are formed at a dilation whose
        reach is inside the window: ``"torch"`` writes the evidence and runs ``torch.cumsum`` over the whole
        float64 series; ``"tile"`` has the kernel write running sums over its tile (``tl.cumsum``) and adds
        the earlier tiles' totals at the windows' ends only. The same sums in another order.

    Returns
    -------
    Tensor, shape (B, W) without ``rows``, else shape (W,); float64
    """
    kernel = DEFAULT_KERNEL if kernel is None else kernel
    prefix = DEFAULT_PREFIX if prefix is None else prefix
    check_option("kernel", kernel, KERNELS)
    check_option("prefix", prefix, PREFIXES)
    running = prefix == "tile"
    if not triton_available(x.device):
        raise RuntimeError(
            f"evidence='triton' needs triton and a CUDA device (or TRITON_INTERPRET=1 on the CPU); got device {x.device}."
        )
    if x.ndim != 2:
        raise ValueError(f"x must have shape (B, T); got {tuple(x.shape)}.")
    default_block, default_warps = TILES[kernel]
    block, num_warps = block or default_block, num_warps or default_warps
    device = x.device
    tables = _tables(features, layout, weights, device)
    window_length = layout.window_length
    b_rows, T = x.shape
    x = x.float().contiguous()
    starts_t = torch.as_tensor(np.asarray(starts, dtype=np.int64)).to(device)
    rows_t = None if rows is None else torch.as_tensor(np.asarray(rows, dtype=np.int64)).to(device)
    out = torch.zeros((b_rows, len(starts)) if rows is None else (len(starts),), dtype=torch.float64, device=device)
    whole = torch.zeros((b_rows, T + 1), dtype=torch.float64, device=device)
    part = torch.zeros((b_rows, T + 1), dtype=torch.float64, device=device)
    grid = (triton.cdiv(T, block), b_rows)

    def gather(prefix: torch.Tensor, u0: int, u1: int) -> torch.Tensor:
        if rows_t is None:
            return prefix[:, starts_t + u1] - prefix[:, starts_t + u0]
        return prefix[rows_t, starts_t + u1] - prefix[rows_t, starts_t + u0]

    def gather_running(running: torch.Tensor, u0: int, u1: int) -> torch.Tensor:
        offsets = _tile_offsets(running, block)
        return _prefix_at(running, offsets, starts_t + u1, rows_t, block) - _prefix_at(
            running, offsets, starts_t + u0, rows_t, block
        )

    for di, d in enumerate(layout.dilations.tolist()):
        u0, u1 = layout.positions(di, False)
        inner = u1 - u0 < window_length
        if kernel == "baked":  # this dilation's numbers compiled in (the run-time ones are not read)
            biases, cum_weights, nb = tables.baked[di]
            form = {"BAKED": True, "B": biases, "W": cum_weights, "NB": nb, "D": int(d)}
            form.update(PAD_EVEN=di % 2 == 0, INNER=inner, NGROUPS=0, IN_ORDER=False)
        else:
            form = {"NGROUPS": tables.groups[di], "IN_ORDER": device.type == "cuda"}  # no inline asm in the interpreter
        _evidence_kernel[grid](
            x,
            x.stride(0),
            T,
            whole,
            part,
            whole.stride(0),
            tables.step_biases,
            tables.step_weights,
            tables.first_step[di],
            int(d),
            int(di % 2 == 0),
            int(inner),
            BLOCK=block,
            RUNNING=running,
            num_warps=num_warps,
            enable_fp_fusion=False,
            **form,
        )
        if inner and running:
            out += gather_running(part, u0, u1) / (u1 - u0)
        elif inner:
            part.cumsum_(1)  # column 0 stays 0: the prefix E[t] = sum of evidence before t
            out += gather(part, u0, u1) / (u1 - u0)
    whole.cumsum_(1)  # once for all dilations; column 0 stays 0: the prefix E[t] = sum of evidence before t
    out += gather(whole, 0, window_length) / window_length
    return out + constant


def _tile_offsets(running: torch.Tensor, block: int) -> torch.Tensor:
    """The sum of the evidence in the tiles before each tile, for :func:`_prefix_at`.

    Parameters
    ----------
    running : Tensor, shape (B, T + 1), float64
        Column ``1 + t``: the sum of the evidence from the first position of ``t``'s tile of ``block``
        positions to ``t`` (the kernels' running sums); column 0 is 0.
    block : int

    Returns
    -------
    Tensor, shape (B, n_tiles + 1), float64
        Column 0 is 0 (for the prefix before position 0), column ``m + 1`` the total of tiles ``0 .. m-1``.
    """
    b_rows, n_cols = running.shape
    n_tiles = -(-(n_cols - 1) // block)
    offsets = running.new_zeros((b_rows, n_tiles + 1))
    if n_tiles > 1:
        totals = running[:, block::block]  # column (k + 1) * block: the total of complete tile k
        offsets[:, 2:] = totals[:, : n_tiles - 1].cumsum(1)
    return offsets


def _prefix_at(
    running: torch.Tensor, offsets: torch.Tensor, j: torch.Tensor, rows: torch.Tensor | None, block: int
) -> torch.Tensor:
    """The prefix sum ``E[j]`` (the evidence of positions ``< j``) from the tiles' running sums and offsets.

    Parameters
    ----------
    running : Tensor, shape (B, T + 1), float64
    offsets : Tensor, shape (B, n_tiles + 1), float64
        :func:`_tile_offsets` of ``running``.
    j : Tensor, shape (W,), int64
        Prefix lengths, ``0 <= j <= T``.
    rows : Tensor, shape (W,), int64, optional
        The row of each ``j``; without it every row at every ``j``.
    block : int

    Returns
    -------
    Tensor, shape (W,) with ``rows``, else (B, W); float64
    """
    tile = torch.div(j - 1, block, rounding_mode="floor") + 1  # position j - 1's tile, + 1; 0 for j = 0
    if rows is None:
        return running[:, j] + offsets[:, tile]
    return running[rows, j] + offsets[rows, tile]

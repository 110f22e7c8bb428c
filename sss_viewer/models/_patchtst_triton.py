"""PatchTST's feed-forward sub-layer in one fused Triton kernel a direction (issue 33, goal 3): training on a GPU.

What it computes
----------------
``y = W2 · dropout(GELU(W1 · x + b1)) + b2`` on every token, the encoder's ``ff`` block
(``Linear(d_model, d_ff) → GELU → Dropout → Linear(d_ff, d_model)``,
:class:`~sss_viewer.models.patchtst.PatchTST`), forward and backward, for ``x`` of shape ``(M, d_model)``
(``M`` = windows × tokens).

Why fuse it
-----------
At the ``paper`` preset's sizes (``d_model`` 32, ``d_ff`` 128, 128 tokens, batch 8192) the matrices are too narrow
(``K`` = 32) for the tensor cores to bound a training step: its time goes to element-wise work and the memory
traffic around it, and the hidden layer is four times as wide as the tokens. Stock torch (compiled or not) writes
the hidden pre-activation, the GELU output and the dropout mask to device memory in the forward pass (3 × 128 values
a token, against ~10 × 32 for the rest of an encoder layer with a flash attention kernel) and reads them back in the
backward. Here the hidden layer never leaves the chip: the forward kernel keeps it in registers between its two
matrix products; the backward kernel recomputes it from ``x`` (two 32-wide products are cheaper than reading
128-wide tensors back) and regenerates the dropout mask from the same counter-based random stream, so nothing but
``x`` and one seed is kept for the backward pass.

Whether this is faster on a GPU is a measurement (``benchmarks/fused_ffn.py``, part ``fused`` of
``benchmarks/gpu_issue33.sh``), which is why :class:`~sss_viewer.models.patchtst.PatchTST` keeps the stock layers
unless its ``gpu_kernels`` asks for these.

The weight gradients are summed per program over its row blocks (a persistent grid, a few programs an SM), written
as float32 partial sums and added by one ``torch.sum``: deterministic, no atomics.

Precision and randomness
------------------------
Inputs in bfloat16 (autocast, as the ``Linear`` layers would be under it) or float32; products accumulate in
float32, GELU (the exact ``erf`` form of :class:`torch.nn.GELU`) and its derivative are evaluated in float32. With
float32 inputs the products are full float32 (``input_precision="ieee"``), as torch's default matmul. Dropout drops
a unit with probability ``p`` and scales the kept ones by ``1 / (1 - p)``, as :class:`torch.nn.Dropout` (with ``p``
a multiple of 1/256, below), but from another random stream, so masks differ from the stock path's (as with the
custom CPU kernels). The stream is a counter-based hash, not Philox: one ``x = mix(mix(c) ^ mix(seed))`` per counter
``c = t · d_ff / 4 + g`` (token ``t``, group ``g`` of four hidden units), ``mix`` being the ``lowbias32`` integer
hash (C. Wellons' hash-prospector: two rounds of xor-shift and multiply, full avalanche); byte ``m`` of ``x``
decides unit ``4 g + m``, kept when it is at least ``round(256 p)``, so ``p`` is used as a multiple of 1/256 (0.3 →
0.3008) and kept units are scaled by ``256 / (256 - round(256 p))``; the flash-attention kernels torch uses also
compare 8-bit draws. Counted in the SASS (``benchmarks/patchtst_sass.py``, forward kernel, 64 tokens × 4 warps):
14,400 lane-instructions a token with ``tl.rand``'s Philox (one draw a unit, two thirds of the kernel), 8,224 with a
hash a unit, 7,280 with a hash for four (5,536 without dropout). Dropout needs independent fair coins, not
cryptographic strength; the tests check the kept share, the independence of neighbouring units and tokens, and that
the mask is exactly this hash (a NumPy reference). :func:`keep_mask` materialises the mask a seed gives.

Both kernels run on the CPU through Triton's interpreter (``TRITON_INTERPRET=1``), which is how the tests check them
without a GPU (``tests/models/test_patchtst_triton.py``). The operator is a :func:`torch.library.triton_op`, so
:func:`torch.compile` traces through it instead of breaking the graph.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl
from torch import Tensor
from torch.library import triton_op, wrap_triton

FORWARD_ROWS = 64
"""Tokens a forward program handles (its hidden tile is ``FORWARD_ROWS × d_ff`` float32 in registers)."""
FORWARD_WARPS = 4
"""Warps a forward program (its ``FORWARD_ROWS × d_ff`` hidden tile: 64 float32 registers a thread at 4)."""
BACKWARD_ROWS = 64
"""Tokens a backward program handles per loop step (it holds the hidden tile, its gradient and the weight sums)."""
BACKWARD_WARPS = 4
"""Warps a backward program. Tiles and warps were chosen from ``benchmarks/patchtst_sass.py`` (sm_90, no spills at
any of them): 64 × 4 and 128 × 8 issue the fewest instructions a token (~7,200 forward, ~13,000 backward with
dropout); 32 × 8 issues three times as many (each warp repeats the per-program work on a smaller share)."""
PROGRAMS_PER_SM = 2
"""Backward programs an SM: each sums the weight gradients of its row blocks, and one ``torch.sum`` adds them. At 255
registers a thread and 4 warps, two programs fit an SM's 65,536 registers: one wave."""
INTERPRETER_PROGRAMS = 3
"""Backward programs on the CPU (the interpreter): enough for the partial sums to be added across programs."""


@triton.jit
def _mix(x):
    """A 32-bit integer hash with full avalanche (``lowbias32``: xor-shift, multiply, twice); ``x`` uint32."""
    x ^= x >> 16
    x *= tl.full(x.shape, 0x7FEB352D, tl.uint32)
    x ^= x >> 15
    x *= tl.full(x.shape, 0x846CA68B, tl.uint32)
    x ^= x >> 16
    return x


@triton.jit
def _keep_bytes(seed, counters, WIDTH: tl.constexpr, KEEP_FROM: tl.constexpr):
    """Keep (True) or drop: ``(R, WIDTH)`` booleans from ``(R, WIDTH // 4)`` counters, one hash each.

    ``x = mix(mix(counter) ^ mix(seed))``; its byte ``m`` (bits ``8m … 8m + 7``) decides column ``4 g + m`` of the
    counter's group ``g``, kept when the byte is at least ``KEEP_FROM`` (``round(256 p)``).
    """
    key = _mix(seed.to(tl.uint32) + tl.zeros((1, 1), tl.uint32))
    x = _mix(_mix(counters.to(tl.uint32)) ^ key)
    draws = tl.join(tl.join(x & 0xFF, (x >> 16) & 0xFF), tl.join((x >> 8) & 0xFF, x >> 24))  # [.., a, c]: byte a + 2c
    return tl.reshape(draws, (counters.shape[0], WIDTH)) >= KEEP_FROM


@triton.jit
def _keep(seed, rows, D_FF: tl.constexpr, KEEP_FROM: tl.constexpr):
    """The hidden units' dropout decisions of these tokens: ``(R, D_FF)``; counter ``token · d_ff / 4 + group``."""
    groups = tl.arange(0, D_FF // 4)
    return _keep_bytes(seed, rows[:, None] * (D_FF // 4) + groups[None, :], D_FF, KEEP_FROM)


@triton.jit
def _hidden(
    x,
    w1t,
    b1,
    rows,
    seed,
    D_FF: tl.constexpr,
    KEEP_FROM: tl.constexpr,
    SCALE: tl.constexpr,
    PRECISION: tl.constexpr,
):
    """The hidden layer of a row block: pre-activation ``h``, and ``GELU(h)`` after dropout (float32, ``(R, D_FF)``)."""
    h = tl.dot(x, w1t, input_precision=PRECISION) + b1[None, :]
    a = 0.5 * h * (1.0 + tl.erf(h * 0.7071067811865476))
    if KEEP_FROM > 0:
        a = tl.where(_keep(seed, rows, D_FF, KEEP_FROM), a * SCALE, 0.0)
    return h, a


@triton.jit
def _ffn_forward_kernel(
    x_ptr,
    w1_ptr,
    b1_ptr,
    w2_ptr,
    b2_ptr,
    seed_ptr,
    y_ptr,
    M,
    D_MODEL: tl.constexpr,
    D_FF: tl.constexpr,
    ROWS: tl.constexpr,
    KEEP_FROM: tl.constexpr,
    SCALE: tl.constexpr,
    PRECISION: tl.constexpr,
):
    """One block of ``ROWS`` tokens: ``y = W2 · dropout(GELU(W1 · x + b1)) + b2``, the hidden layer in registers."""
    rows = tl.program_id(0) * ROWS + tl.arange(0, ROWS)
    inside = rows < M
    feats = tl.arange(0, D_MODEL)
    units = tl.arange(0, D_FF)
    seed = tl.load(seed_ptr)
    x = tl.load(x_ptr + rows[:, None] * D_MODEL + feats[None, :], mask=inside[:, None], other=0.0)
    w1t = tl.load(w1_ptr + units[None, :] * D_MODEL + feats[:, None])  # (D_MODEL, D_FF): W1 is (D_FF, D_MODEL)
    b1 = tl.load(b1_ptr + units).to(tl.float32)
    _, a = _hidden(x, w1t, b1, rows, seed, D_FF, KEEP_FROM, SCALE, PRECISION)
    w2t = tl.load(w2_ptr + feats[None, :] * D_FF + units[:, None])  # (D_FF, D_MODEL): W2 is (D_MODEL, D_FF)
    y = tl.dot(a.to(x.dtype), w2t, input_precision=PRECISION)
    y += tl.load(b2_ptr + feats).to(tl.float32)[None, :]
    tl.store(y_ptr + rows[:, None] * D_MODEL + feats[None, :], y.to(y_ptr.dtype.element_ty), mask=inside[:, None])


@triton.jit
def _ffn_backward_kernel(
    x_ptr,
    dy_ptr,
    w1_ptr,
    b1_ptr,
    w2_ptr,
    seed_ptr,
    dx_ptr,
    dw1_part_ptr,
    db1_part_ptr,
    dw2_part_ptr,
    db2_part_ptr,
    M,
    D_MODEL: tl.constexpr,
    D_FF: tl.constexpr,
    ROWS: tl.constexpr,
    KEEP_FROM: tl.constexpr,
    SCALE: tl.constexpr,
    PRECISION: tl.constexpr,
):
    """Gradients of one program's row blocks: ``dx`` per token, the weight gradients summed into its partial row.

    The hidden layer and the dropout mask are recomputed from ``x`` and the seed, not read back.
    """
    pid = tl.program_id(0)
    n_programs = tl.num_programs(0)
    feats = tl.arange(0, D_MODEL)
    units = tl.arange(0, D_FF)
    seed = tl.load(seed_ptr)
    w1t = tl.load(w1_ptr + units[None, :] * D_MODEL + feats[:, None])  # (D_MODEL, D_FF)
    w1 = tl.load(w1_ptr + units[:, None] * D_MODEL + feats[None, :])  # (D_FF, D_MODEL)
    w2 = tl.load(w2_ptr + feats[:, None] * D_FF + units[None, :])  # (D_MODEL, D_FF)
    b1 = tl.load(b1_ptr + units).to(tl.float32)
    dw1 = tl.zeros((D_FF, D_MODEL), dtype=tl.float32)
    db1 = tl.zeros((D_FF,), dtype=tl.float32)
    dw2 = tl.zeros((D_MODEL, D_FF), dtype=tl.float32)
    db2 = tl.zeros((D_MODEL,), dtype=tl.float32)
    for block in range(pid, tl.cdiv(M, ROWS), n_programs):
        rows = block * ROWS + tl.arange(0, ROWS)
        inside = rows < M
        tile = rows[:, None] * D_MODEL + feats[None, :]
        x = tl.load(x_ptr + tile, mask=inside[:, None], other=0.0)
        dy = tl.load(dy_ptr + tile, mask=inside[:, None], other=0.0)
        h, a = _hidden(x, w1t, b1, rows, seed, D_FF, KEEP_FROM, SCALE, PRECISION)
        dw2 += tl.dot(tl.trans(dy), a.to(x.dtype), input_precision=PRECISION)
        db2 += tl.sum(dy.to(tl.float32), axis=0)
        da = tl.dot(dy, w2, input_precision=PRECISION)  # (ROWS, D_FF): gradient of the dropped-out GELU output
        if KEEP_FROM > 0:
            da = tl.where(_keep(seed, rows, D_FF, KEEP_FROM), da * SCALE, 0.0)
        cdf = 0.5 * (1.0 + tl.erf(h * 0.7071067811865476))
        pdf = tl.exp(-0.5 * h * h) * 0.3989422804014327
        dh = da * (cdf + h * pdf)  # rows outside M have dy = 0, so dh = 0: they add nothing to the sums
        db1 += tl.sum(dh, axis=0)
        dh_in = dh.to(x.dtype)
        dw1 += tl.dot(tl.trans(dh_in), x, input_precision=PRECISION)
        dx = tl.dot(dh_in, w1, input_precision=PRECISION)
        tl.store(dx_ptr + tile, dx.to(dx_ptr.dtype.element_ty), mask=inside[:, None])
    tl.store(dw1_part_ptr + pid * D_FF * D_MODEL + units[:, None] * D_MODEL + feats[None, :], dw1)
    tl.store(db1_part_ptr + pid * D_FF + units, db1)
    tl.store(dw2_part_ptr + pid * D_MODEL * D_FF + feats[:, None] * D_FF + units[None, :], dw2)
    tl.store(db2_part_ptr + pid * D_MODEL + feats, db2)


@triton.jit
def _keep_mask_kernel(seed_ptr, out_ptr, M, D_FF: tl.constexpr, ROWS: tl.constexpr, KEEP_FROM: tl.constexpr):
    """The dropout mask of ``ROWS`` tokens as the kernels above draw it (for tests)."""
    rows = tl.program_id(0) * ROWS + tl.arange(0, ROWS)
    units = tl.arange(0, D_FF)
    keep = _keep(tl.load(seed_ptr), rows, D_FF, KEEP_FROM)
    tl.store(out_ptr + rows[:, None] * D_FF + units[None, :], keep.to(tl.int8), mask=(rows < M)[:, None])


def _check_shapes(x: Tensor, w1: Tensor, w2: Tensor) -> tuple[int, int, int]:
    """``(M, d_model, d_ff)`` of a call, or a ValueError naming what the kernels expect.

    The widths themselves (powers of two of at least 16) are checked where the layers are built
    (:func:`~sss_viewer.models.patchtst.fused_widths_ok`, when ``PatchTST(gpu_kernels=...)`` is made).
    """
    m, d_model = x.shape
    d_ff = w1.shape[0]
    if tuple(w1.shape) != (d_ff, d_model) or tuple(w2.shape) != (d_model, d_ff):
        raise ValueError(
            f"fused feed-forward: x {tuple(x.shape)}, W1 {tuple(w1.shape)}, W2 {tuple(w2.shape)}; expected W1 "
            "(d_ff, d_model) and W2 (d_model, d_ff)"
        )
    if m * d_ff >= 2**31:
        raise ValueError(f"fused feed-forward: {m} tokens × d_ff {d_ff} ≥ 2^31 dropout counters; use a smaller batch")
    return m, d_model, d_ff


def dropout_constants(x: Tensor, p: float) -> dict:
    """The launch constants every fused kernel takes for tokens ``x`` and dropout ``p``: the byte threshold, the scale of
    kept units and ``tl.dot``'s input precision."""
    return dict(KEEP_FROM=_keep_byte(p), SCALE=_byte_scale(p), PRECISION=_precision(x))


def _precision(x: Tensor) -> str:
    """``tl.dot``'s input precision: full float32 for float32 tokens (torch's default matmul), else the default."""
    return "ieee" if x.dtype == torch.float32 else "tf32"


def _keep_byte(p: float) -> int:
    """The byte a unit's draw must reach to be kept: ``round(256 p)``, so ``p`` is used as a multiple of 1/256."""
    if not 0.0 <= p < 1.0 - 1.0 / 512:
        raise ValueError(f"fused kernels: dropout p={p}; expected 0 <= p < 0.998")
    return round(256 * p)


def _byte_scale(p: float) -> float:
    """``1 / (1 - p')`` for the ``p'`` the byte threshold keeps (the expectation of a kept unit is unchanged)."""
    return 256.0 / (256 - _keep_byte(p))


@triton_op("sss_viewer::fused_ffn", mutates_args={})
def fused_ffn_forward(x: Tensor, w1: Tensor, b1: Tensor, w2: Tensor, b2: Tensor, seed: Tensor, p: float) -> Tensor:
    """The feed-forward sub-layer, forward: ``(M, d_model)`` tokens to ``(M, d_model)``.

    Parameters
    ----------
    x : Tensor, shape (M, d_model)
        Contiguous tokens, bfloat16 or float32; the weights in the same dtype.
    w1 : Tensor, shape (d_ff, d_model)
    b1 : Tensor, shape (d_ff,)
    w2 : Tensor, shape (d_model, d_ff)
    b2 : Tensor, shape (d_model,)
    seed : Tensor, shape (1,), int64
        The dropout stream's seed (:func:`new_seed`); the backward pass regenerates the mask from it.
    p : float
        Dropout probability on the hidden units (0 in eval mode).

    Returns
    -------
    Tensor, shape (M, d_model), the dtype of ``x``
    """
    m, d_model, d_ff = _check_shapes(x, w1, w2)
    y = torch.empty_like(x)
    grid = (triton.cdiv(m, FORWARD_ROWS),)
    wrap_triton(_ffn_forward_kernel)[grid](
        x,
        w1,
        b1,
        w2,
        b2,
        seed,
        y,
        m,
        D_MODEL=d_model,
        D_FF=d_ff,
        ROWS=FORWARD_ROWS,
        **dropout_constants(x, p),
        num_warps=FORWARD_WARPS,
    )
    return y


@triton_op("sss_viewer::fused_ffn_backward", mutates_args={})
def fused_ffn_backward(
    dy: Tensor, x: Tensor, w1: Tensor, b1: Tensor, w2: Tensor, seed: Tensor, p: float
) -> tuple[Tensor, Tensor, Tensor, Tensor, Tensor]:
    """Gradients of :func:`fused_ffn_forward`: ``(dx, dW1, db1, dW2, db2)`` in the shapes and dtype of the inputs."""
    m, d_model, d_ff = _check_shapes(x, w1, w2)
    n_blocks = triton.cdiv(m, BACKWARD_ROWS)
    if x.device.type == "cuda":
        cap = torch.cuda.get_device_properties(x.device).multi_processor_count * PROGRAMS_PER_SM
    else:
        cap = INTERPRETER_PROGRAMS
    n_programs = max(1, min(n_blocks, cap))
    dx = torch.empty_like(x)
    f32 = dict(device=x.device, dtype=torch.float32)
    dw1 = torch.empty((n_programs, d_ff, d_model), **f32)
    db1 = torch.empty((n_programs, d_ff), **f32)
    dw2 = torch.empty((n_programs, d_model, d_ff), **f32)
    db2 = torch.empty((n_programs, d_model), **f32)
    wrap_triton(_ffn_backward_kernel)[(n_programs,)](
        x,
        dy.contiguous(),
        w1,
        b1,
        w2,
        seed,
        dx,
        dw1,
        db1,
        dw2,
        db2,
        m,
        D_MODEL=d_model,
        D_FF=d_ff,
        ROWS=BACKWARD_ROWS,
        **dropout_constants(x, p),
        num_warps=BACKWARD_WARPS,
    )
    return dx, dw1.sum(0).to(w1.dtype), db1.sum(0).to(b1.dtype), dw2.sum(0).to(w2.dtype), db2.sum(0).to(w2.dtype)


def _setup_context(ctx, inputs, output) -> None:
    x, w1, b1, w2, _b2, seed, p = inputs
    ctx.save_for_backward(x, w1, b1, w2, seed)
    ctx.p = p


def _backward(ctx, dy: Tensor):
    x, w1, b1, w2, seed = ctx.saved_tensors
    dx, dw1, db1, dw2, db2 = fused_ffn_backward(dy, x, w1, b1, w2, seed, ctx.p)
    return dx, dw1, db1, dw2, db2, None, None


fused_ffn_forward.register_autograd(_backward, setup_context=_setup_context)


def new_seed(device: torch.device | str) -> Tensor:
    """A fresh dropout seed drawn from torch's generator, shape (1,) int64 on ``device`` (traceable by compile)."""
    return torch.randint(0, 2**31 - 1, (1,), device=device, dtype=torch.int64)


def fused_feed_forward(x: Tensor, w1: Tensor, b1: Tensor, w2: Tensor, b2: Tensor, p: float) -> Tensor:
    """The encoder's ``ff`` block on tokens of any leading shape, through the fused kernels.

    Under autocast the tokens and weights are cast to its dtype first, as the ``Linear`` layers would be.

    Parameters
    ----------
    x : Tensor, shape (..., d_model)
    w1, b1, w2, b2 : Tensor
        ``ff[0].weight`` (d_ff, d_model), ``ff[0].bias``, ``ff[3].weight`` (d_model, d_ff), ``ff[3].bias``.
    p : float
        Dropout on the hidden units (pass 0 in eval mode).

    Returns
    -------
    Tensor, shape (..., d_model)
    """
    device_type = x.device.type
    dtype = torch.get_autocast_dtype(device_type) if torch.is_autocast_enabled(device_type) else x.dtype
    with torch.autocast(device_type, enabled=False):
        w1, b1, w2, b2 = (t.to(dtype) for t in (w1, b1, w2, b2))
        tokens = x.to(dtype).reshape(-1, x.shape[-1]).contiguous()
        y = fused_ffn_forward(tokens, w1, b1, w2, b2, new_seed(x.device), float(p))
    return y.view(x.shape[:-1] + (w2.shape[0],))


def keep_mask(seed: Tensor, m: int, d_ff: int, p: float) -> Tensor:
    """The dropout mask the kernels draw for ``m`` tokens from ``seed``: ``(m, d_ff)`` bool (for tests)."""
    out = torch.empty((m, d_ff), dtype=torch.int8, device=seed.device)
    _keep_mask_kernel[(triton.cdiv(m, FORWARD_ROWS),)](
        seed, out, m, D_FF=d_ff, ROWS=FORWARD_ROWS, KEEP_FROM=_keep_byte(p)
    )
    return out.bool()

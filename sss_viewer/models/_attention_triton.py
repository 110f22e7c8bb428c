"""PatchTST's self-attention with dropout in one Triton kernel a direction (issue 33, goal 3): training on a GPU.

What it computes
----------------
For every window ``b`` and head ``h``: ``out = dropout(softmax(q kᵀ / √d_head)) v`` over the window's ``N`` tokens,
forward and backward, reading queries, keys and values where the fused QKV projection wrote them (``(B, N, 3, H,
d_head)``, :class:`~sss_viewer.models.patchtst._SelfAttention`) and writing ``(B, N, H, d_head)``: the function of
:func:`torch.nn.functional.scaled_dot_product_attention` with ``dropout_p``.

Why a kernel of its own
-----------------------
At the ``paper`` preset's shapes (128 tokens, 4 heads of width 8, dropout 0.3, batch 8192) the attention weights
are the largest element-wise work of a training step: 4 × 128 × 128 a window and layer, each scored, exponentiated,
dropped out and multiplied, forward and backward, while the head width of 8 leaves the matrix units idle. torch's
kernels are written for long sequences and wide heads: they tile the keys in blocks and rescale running sums
(flash), pad a width of 8 to their smallest template, and draw dropout from Philox. Here one program holds a
(window, head)'s whole sequence (``N`` ≤ 256): the softmax is exact in one pass over its ``BLOCK_Q`` queries × all
keys, the head width is padded only to 16 (``tl.dot``'s smallest side), and dropout is the hash of
:mod:`sss_viewer.models._patchtst_triton` drawn once a query and group of four keys: counter ``(bh · N + i) ·
N_pad / 4 + g`` for query ``i`` of program ``bh`` (``N_pad``: ``N`` to a power of two), whose byte ``m`` decides key
``4 g + m`` — kept when the byte is at least ``round(256 p)``, so ``p`` is used as a multiple of 1/256 (0.3 → 0.3008)
and kept weights are scaled by ``256 / (256 - round(256 p))``, as the flash-attention kernels torch uses also compare
8-bit draws. A hash a weight cost 42 / 48 lane-instructions a weight forward / backward, a hash for four 34 / 41
(19 / 25 without dropout). The forward pass keeps each row's log-sum-exp (``N`` floats a window and head) for the
backward, which recomputes the weights and the mask from it: nothing ``N × N`` is ever written to memory.

Backward (standard): with ``A`` the softmax, ``M`` the kept mask and ``s = 1 / (1 - p)``, ``dV = (A ∘ M s)ᵀ dO``,
``dA = (dO vᵀ) ∘ M s``, ``dS = A ∘ (dA − δ)`` with ``δ_i = Σ_k dO_ik O_ik`` (the dropped output's row product, equal to
``Σ_j A_ij dA_ij``), ``dQ = dS k / √d``, ``dK = dSᵀ q / √d``; each program sums its keys' ``dK`` and ``dV`` over its
query blocks. Whether this beats torch's kernels on a GPU is a measurement (``benchmarks/attention_backends.py``
times it beside them); :class:`~sss_viewer.models.patchtst.PatchTST` uses it only with ``gpu_kernels="fused-attention"``
or ``"fused"``. On the CPU the kernels run through Triton's interpreter (``TRITON_INTERPRET=1``) for the tests
(``tests/models/test_attention_triton.py``); the interpreter misreads bfloat16 products, so bfloat16 is checked on a
GPU only.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl
from torch import Tensor
from torch.library import triton_op, wrap_triton

from sss_viewer.models._patchtst_triton import _keep_byte, _keep_bytes, dropout_constants, new_seed
from sss_viewer.models.patchtst import FUSED_ATTENTION_MAX_HEAD_WIDTH, FUSED_ATTENTION_MAX_TOKENS

BLOCK_Q = 128
"""Queries a program handles at a time (its ``BLOCK_Q × N`` weight tiles are in registers)."""
WARPS = 8
"""Warps a program. ``BLOCK_Q`` × ``WARPS`` were chosen from ``benchmarks/patchtst_sass.py`` (sm_90, no
spills): at 128 × 8 the fewest lane-instructions a weight with dropout 0.3 (33.9 forward, 41.4 backward; 64 × 4: 33.5
and 44.1; 64 × 8: 54.0 and 63.9, its warps repeating work on a smaller share)."""
MAX_TOKENS = FUSED_ATTENTION_MAX_TOKENS
"""Longest sequence one program holds (keys are not tiled); set in ``patchtst``, which checks a model against it
without importing Triton."""
MAX_HEAD_WIDTH = FUSED_ATTENTION_MAX_HEAD_WIDTH
"""Widest head a program takes (padded to a tile of at least 16); set in ``patchtst`` too."""


@triton.jit
def _keep_weights(seed, bh, queries, N, BLOCK_N: tl.constexpr, KEEP_FROM: tl.constexpr):
    """Keep (True) or drop each attention weight ``(query, key)`` of program ``bh``: ``(BLOCK_Q, BLOCK_N)`` booleans;
    counter ``(bh · N + query) · BLOCK_N / 4 + group`` (:func:`~sss_viewer.models._patchtst_triton._keep_bytes`)."""
    groups = tl.arange(0, BLOCK_N // 4)
    return _keep_bytes(seed, (bh * N + queries[:, None]) * (BLOCK_N // 4) + groups[None, :], BLOCK_N, KEEP_FROM)


@triton.jit
def _scores(q, k, keys, N, SM_SCALE: tl.constexpr, PRECISION: tl.constexpr):
    """``q kᵀ / √d`` of a query block, keys past ``N`` at ``-inf``: ``(BLOCK_Q, BLOCK_N)`` float32."""
    s = tl.dot(q, tl.trans(k), input_precision=PRECISION) * SM_SCALE
    return tl.where((keys < N)[None, :], s, float("-inf"))


@triton.jit
def _keys_and_values(qkv_ptr, N, H: tl.constexpr, DH: tl.constexpr, DP: tl.constexpr, BLOCK_N: tl.constexpr):
    """This program's window and head, and their keys and values ``(BLOCK_N, DP)``, zero past ``N`` and ``DH``.

    Returns ``(bh, bases, keys, k_at, v_at, kv_mask, k, v)``: ``bases`` the program's first offsets in ``(B, N, 3,
    H, DH)`` and in the ``(B, N, H, DH)`` output (for :func:`_query_block`), ``k_at`` / ``v_at`` the keys' and values'
    offsets (where their gradients go in ``dqkv``).
    """
    bh = tl.program_id(0)
    base = (bh // H) * N * 3 * H * DH + (bh % H) * DH
    out_base = (bh // H) * N * H * DH + (bh % H) * DH
    keys = tl.arange(0, BLOCK_N)
    dims = tl.arange(0, DP)
    kv_mask = (keys < N)[:, None] & (dims < DH)[None, :]
    k_at = base + H * DH + keys[:, None] * (3 * H * DH) + dims[None, :]
    v_at = k_at + H * DH
    k = tl.load(qkv_ptr + k_at, mask=kv_mask, other=0.0)
    v = tl.load(qkv_ptr + v_at, mask=kv_mask, other=0.0)
    return bh, (base, out_base), keys, k_at, v_at, kv_mask, k, v


@triton.jit
def _query_block(qkv_ptr, bases, start, N, H: tl.constexpr, DH: tl.constexpr, DP: tl.constexpr, BLOCK_Q: tl.constexpr):
    """Queries ``start … start + BLOCK_Q`` of the program whose ``bases`` :func:`_keys_and_values` gave:
    ``(queries, q_mask, q_at, o_at, q)``, ``q_at`` their offsets in ``(B, N, 3, H, DH)``, ``o_at`` in the
    ``(B, N, H, DH)`` output (and its gradient)."""
    base, out_base = bases
    queries = start + tl.arange(0, BLOCK_Q)
    dims = tl.arange(0, DP)
    q_mask = (queries < N)[:, None] & (dims < DH)[None, :]
    q_at = base + queries[:, None] * (3 * H * DH) + dims[None, :]
    o_at = out_base + queries[:, None] * (H * DH) + dims[None, :]
    q = tl.load(qkv_ptr + q_at, mask=q_mask, other=0.0)
    return queries, q_mask, q_at, o_at, q


@triton.jit
def _attention_forward_kernel(
    qkv_ptr,
    out_ptr,
    lse_ptr,
    seed_ptr,
    N,
    H: tl.constexpr,
    DH: tl.constexpr,
    DP: tl.constexpr,
    BLOCK_N: tl.constexpr,
    BLOCK_Q: tl.constexpr,
    SM_SCALE: tl.constexpr,
    KEEP_FROM: tl.constexpr,
    SCALE: tl.constexpr,
    PRECISION: tl.constexpr,
):
    """One (window, head): every query block against all keys; the output and each query's log-sum-exp."""
    bh, bases, keys, _, _, _, k, v = _keys_and_values(qkv_ptr, N, H, DH, DP, BLOCK_N)
    seed = tl.load(seed_ptr)
    for start in tl.static_range(0, BLOCK_N, BLOCK_Q):
        queries, q_mask, _, o_at, q = _query_block(qkv_ptr, bases, start, N, H, DH, DP, BLOCK_Q)
        s = _scores(q, k, keys, N, SM_SCALE, PRECISION)
        m = tl.max(s, axis=1)
        a = tl.exp(s - m[:, None])
        total = tl.sum(a, axis=1)
        if KEEP_FROM > 0:
            a = tl.where(_keep_weights(seed, bh, queries, N, BLOCK_N, KEEP_FROM), a * SCALE, 0.0)
        o = tl.dot(a.to(v.dtype), v, input_precision=PRECISION) / total[:, None]
        tl.store(out_ptr + o_at, o.to(out_ptr.dtype.element_ty), mask=q_mask)
        tl.store(lse_ptr + bh * N + queries, m + tl.log(total), mask=queries < N)


@triton.jit
def _attention_backward_kernel(
    qkv_ptr,
    out_ptr,
    dout_ptr,
    lse_ptr,
    seed_ptr,
    dqkv_ptr,
    N,
    H: tl.constexpr,
    DH: tl.constexpr,
    DP: tl.constexpr,
    BLOCK_N: tl.constexpr,
    BLOCK_Q: tl.constexpr,
    SM_SCALE: tl.constexpr,
    KEEP_FROM: tl.constexpr,
    SCALE: tl.constexpr,
    PRECISION: tl.constexpr,
):
    """One (window, head): weights and mask recomputed from the log-sum-exp; dQ per query block, dK and dV summed."""
    bh, bases, keys, k_at, v_at, kv_mask, k, v = _keys_and_values(qkv_ptr, N, H, DH, DP, BLOCK_N)
    seed = tl.load(seed_ptr)
    dk = tl.zeros((BLOCK_N, DP), dtype=tl.float32)
    dv = tl.zeros((BLOCK_N, DP), dtype=tl.float32)
    for start in tl.static_range(0, BLOCK_N, BLOCK_Q):
        queries, q_mask, q_at, o_at, q = _query_block(qkv_ptr, bases, start, N, H, DH, DP, BLOCK_Q)
        o = tl.load(out_ptr + o_at, mask=q_mask, other=0.0).to(tl.float32)
        do = tl.load(dout_ptr + o_at, mask=q_mask, other=0.0)
        lse = tl.load(lse_ptr + bh * N + queries, mask=queries < N, other=0.0)
        a = tl.exp(_scores(q, k, keys, N, SM_SCALE, PRECISION) - lse[:, None])  # the softmax; 0 past N
        da = tl.dot(do, tl.trans(v), input_precision=PRECISION)  # gradient of the dropped weights
        if KEEP_FROM > 0:
            keep = _keep_weights(seed, bh, queries, N, BLOCK_N, KEEP_FROM)
            dropped = tl.where(keep, a * SCALE, 0.0)
            da = tl.where(keep, da * SCALE, 0.0)
        else:
            dropped = a
        dv += tl.dot(tl.trans(dropped.to(do.dtype)), do, input_precision=PRECISION)
        delta = tl.sum(do.to(tl.float32) * o, axis=1)
        ds = (a * (da - delta[:, None])).to(q.dtype)
        dq = tl.dot(ds, k, input_precision=PRECISION) * SM_SCALE
        dk += tl.dot(tl.trans(ds), q, input_precision=PRECISION)
        tl.store(dqkv_ptr + q_at, dq.to(dqkv_ptr.dtype.element_ty), mask=q_mask)
    tl.store(dqkv_ptr + k_at, (dk * SM_SCALE).to(dqkv_ptr.dtype.element_ty), mask=kv_mask)
    tl.store(dqkv_ptr + v_at, dv.to(dqkv_ptr.dtype.element_ty), mask=kv_mask)


@triton.jit
def _keep_weights_kernel(seed_ptr, out_ptr, N, BLOCK_N: tl.constexpr, KEEP_FROM: tl.constexpr):
    """The dropout mask of program ``bh``'s ``N × N`` weights as the kernels above draw it (for tests)."""
    bh = tl.program_id(0)
    rows = tl.arange(0, BLOCK_N)
    keep = _keep_weights(tl.load(seed_ptr), bh, rows, N, BLOCK_N, KEEP_FROM)
    inside = (rows < N)[:, None] & (rows < N)[None, :]
    tl.store(out_ptr + (bh * N + rows[:, None]) * N + rows[None, :], keep.to(tl.int8), mask=inside)


def _tile(n: int) -> int:
    """A tile side holding ``n``: the next power of two, at least 16 (``tl.dot``'s smallest). The keys' tile also
    numbers the dropout counters, so the attention kernels and :func:`keep_weights_mask` must take it from here."""
    return max(16, triton.next_power_of_2(n))


def _sizes(qkv: Tensor) -> dict:
    """Launch constants for ``qkv`` of shape (B, N, 3, H, d_head), or a ValueError naming what is expected."""
    if qkv.dim() != 5 or qkv.shape[2] != 3 or not qkv.is_contiguous():
        raise ValueError(f"fused attention: qkv {tuple(qkv.shape)}; expected a contiguous (B, N, 3, H, d_head)")
    b, n, _, h, dh = qkv.shape
    if not 1 <= n <= MAX_TOKENS or dh > MAX_HEAD_WIDTH:
        raise ValueError(
            f"fused attention: {n} tokens, head width {dh}; expected ≤ {MAX_TOKENS} tokens, width ≤ {MAX_HEAD_WIDTH}"
        )
    if b * h * n * n >= 2**32:
        raise ValueError(f"fused attention: {b} windows × {h} heads × {n}² weights ≥ 2^32 dropout counters")
    block_n = _tile(n)
    return dict(
        H=h,
        DH=dh,
        DP=_tile(dh),
        BLOCK_N=block_n,
        BLOCK_Q=min(BLOCK_Q, block_n),
        SM_SCALE=dh**-0.5,
    )


@triton_op("sss_viewer::fused_attention", mutates_args={})
def fused_attention_forward(qkv: Tensor, seed: Tensor, p: float) -> tuple[Tensor, Tensor]:
    """Self-attention with dropout ``p`` on the weights, forward.

    Parameters
    ----------
    qkv : Tensor, shape (B, N, 3, H, d_head)
        Contiguous stacked queries, keys and values (bfloat16, float16 or float32).
    seed : Tensor, shape (1,), int64
        The dropout stream's seed; the backward pass regenerates the mask from it.
    p : float
        Dropout probability on the attention weights (0 in eval mode).

    Returns
    -------
    out : Tensor, shape (B, N, H, d_head), the dtype of ``qkv``
    lse : Tensor, shape (B * H, N), float32
        Each query's log-sum-exp of its scores (kept for the backward pass).
    """
    b, n, _, h, dh = qkv.shape
    sizes = _sizes(qkv)
    out = torch.empty((b, n, h, dh), device=qkv.device, dtype=qkv.dtype)
    lse = torch.empty((b * h, n), device=qkv.device, dtype=torch.float32)
    wrap_triton(_attention_forward_kernel)[(b * h,)](
        qkv,
        out,
        lse,
        seed,
        n,
        **sizes,
        **dropout_constants(qkv, p),
        num_warps=WARPS,
    )
    return out, lse


@triton_op("sss_viewer::fused_attention_backward", mutates_args={})
def fused_attention_backward(dout: Tensor, qkv: Tensor, out: Tensor, lse: Tensor, seed: Tensor, p: float) -> Tensor:
    """Gradient of :func:`fused_attention_forward` with respect to ``qkv``: shape (B, N, 3, H, d_head)."""
    b, n, _, h, _ = qkv.shape
    dqkv = torch.empty_like(qkv)
    wrap_triton(_attention_backward_kernel)[(b * h,)](
        qkv,
        out,
        dout.contiguous(),
        lse,
        seed,
        dqkv,
        n,
        **_sizes(qkv),
        **dropout_constants(qkv, p),
        num_warps=WARPS,
    )
    return dqkv


def _setup_context(ctx, inputs, output) -> None:
    qkv, seed, p = inputs
    out, lse = output
    ctx.save_for_backward(qkv, out, lse, seed)
    ctx.p = p


def _backward(ctx, dout: Tensor, _dlse: Tensor | None):
    qkv, out, lse, seed = ctx.saved_tensors
    return fused_attention_backward(dout, qkv, out, lse, seed, ctx.p), None, None


fused_attention_forward.register_autograd(_backward, setup_context=_setup_context)


def fused_attention(qkv: Tensor, p: float) -> Tensor:
    """:func:`~sss_viewer.models.patchtst._stock_attention` through the fused kernels.

    Parameters
    ----------
    qkv : Tensor, shape (B, N, 3, H, d_head)
    p : float
        Dropout on the attention weights (pass 0 in eval mode).

    Returns
    -------
    Tensor, shape (B, N, H, d_head)
    """
    out, _ = fused_attention_forward(qkv.contiguous(), new_seed(qkv.device), float(p))
    return out


def keep_weights_mask(seed: Tensor, n_programs: int, n: int, p: float) -> Tensor:
    """The dropout mask the kernels draw from ``seed``: ``(B * H, N, N)`` bool, program ``b * H + h`` (for tests)."""
    out = torch.empty((n_programs, n, n), dtype=torch.int8, device=seed.device)
    _keep_weights_kernel[(n_programs,)](seed, out, n, BLOCK_N=_tile(n), KEEP_FROM=_keep_byte(p))
    return out.bool()

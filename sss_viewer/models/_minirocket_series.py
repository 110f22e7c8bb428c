"""MiniRocket read over whole series: window features by segment sums, window logits by an evidence series.

The "series" feature definition
-------------------------------
The convolutions of a channel are computed once over the whole channel (zero padding only beyond
the channel's own ends), and a window ``[s, s + L)`` averages over its own positions:

* a *padded* kernel (MiniRocket's "same" padding; kernel ``k`` at dilation index ``i`` with
  ``i + k`` even) over every position ``t`` in ``[s, s + L)``: positions near the window's edges
  see their real neighbours instead of zeros;
* an *unpadded* kernel (valid outputs only) over the positions whose receptive field lies inside
  the window, ``[s + r, s + L - r)`` with ``r = 4 * dilation`` — the same numbers the per-window
  transform computes (all of ``[s, s + L)`` when ``L <= 2 r``, as there).

A feature is ``PPV = (number of positions with C(t) > bias) / n`` over a window's ``n`` positions:
MiniRocket's own strict ``>`` (Dempster et al.; aeon too). The per-window "window" definition
(:func:`sss_viewer.models.minirocket._ppv`) counts a position equal to the bias one half; ties
happen where a signal is flat (``C = 0``).

Evidence series
---------------
With the standardised linear head, a window's logit is ``c + sum_f w_f PPV_f`` where
``w_f = a_f / sd_f``. Grouping features by (dilation, padded), with ``n_g`` positions per window,

    logit(window) = c + sum_g (E_g[end_g] - E_g[start_g]) / n_g,
    e_g(t) = sum over the kernels of g, and their biases, of w_f * [C(t) > bias_f],

``E_g`` the prefix sum of ``e_g`` (float64). One pass of the convolution bank per sample scores
windows at any stride; stride 1 costs what stride 256 costs. The same segment sums give the
per-window PPV features for training (:func:`window_features`).

Arithmetic
----------
A convolution output is ``3 * (x[t+a] + x[t+b] + x[t+c]) - (x[t-4d] + ... + x[t+4d])`` in
float32, added left to right, on every path here (numba on the CPU, torch on any device, and the
explicit per-window reference :func:`explicit_window_features`), so that all of them compare the
same numbers with the biases.
"""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F

try:
    import numba
    from numba import njit, prange
except ImportError:  # pragma: no cover - a GPU machine's own python may lack numba: the torch paths serve
    numba = None
    prange = range

    def njit(*args, **kwargs):
        """Stand-in decorator: the function stays plain Python (never called without numba)."""
        return args[0] if args and callable(args[0]) else (lambda f: f)


from sss_viewer._validate import check_option
from sss_viewer.models.minirocket_features import (
    KERNEL_LENGTH,
    N_KERNELS,
    MiniRocketFeatures,
    kernel_taps,
)

logger = logging.getLogger(__name__)

__all__ = [
    "SeriesLayout",
    "explicit_window_features",
    "fold_head",
    "torch_window_logits",
    "window_features",
    "window_logits",
]

_BLOCK = 2048
"""Samples per block in the numba evidence kernel (its float32 buffers stay in the L1/L2 cache)."""
_KERNEL_LOCK = threading.Lock()
"""One numba parallel kernel at a time per process: viewer sessions score on their own threads, and
numba's fallback threading layer (workqueue, where neither OpenMP nor TBB is available) aborts the
process on concurrent parallel calls."""
_TORCH_BLOCK = 1 << 16
"""Samples per block in the torch evidence path (84 x block float32 per dilation)."""


@dataclass(frozen=True)
class SeriesLayout:
    """The numbers of one fitted :class:`MiniRocketFeatures`, laid out for the series kernels.

    Attributes
    ----------
    dilations : ndarray, shape (D,), int64
    n_biases : ndarray, shape (D,), int64
        Biases per kernel at each dilation.
    feature_offsets : ndarray, shape (D,), int64
        First feature of each dilation (features: per dilation, per kernel, per bias).
    padded : ndarray, shape (D, 84), bool
        Whether kernel k at dilation index i is a padded ("same") kernel.
    taps : ndarray, shape (84, 3), int64
        The three positions (0-8) of weight 2 of each kernel.
    biases : ndarray, shape (F,), float32
    window_length : int
    """

    dilations: np.ndarray
    n_biases: np.ndarray
    feature_offsets: np.ndarray
    padded: np.ndarray
    taps: np.ndarray
    biases: np.ndarray
    window_length: int

    @classmethod
    def of(cls, features: MiniRocketFeatures, window_length: int) -> SeriesLayout:
        """Layout of ``features`` for windows of ``window_length`` samples."""
        dilations = np.asarray(features.dilations, dtype=np.int64)
        n_biases = np.asarray(features.per_dilation, dtype=np.int64)
        offsets = np.concatenate([[0], np.cumsum(N_KERNELS * n_biases)[:-1]]).astype(np.int64)
        index = np.arange(len(dilations))[:, None] + np.arange(N_KERNELS)[None, :]
        return cls(
            dilations=dilations,
            n_biases=n_biases,
            feature_offsets=offsets,
            padded=(index % 2 == 0),
            taps=kernel_taps().astype(np.int64),
            biases=features.biases.detach().cpu().numpy().astype(np.float32),
            window_length=int(window_length),
        )

    def steps(self, weights: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Each kernel's biases sorted, in groups of four, with cumulative weights within each group.

        Parameters
        ----------
        weights : ndarray, shape (F,), float64
            Per-feature weights (:func:`fold_head`).

        Returns
        -------
        offsets : ndarray, shape (D, 84), int64
            First step of kernel k at dilation index i.
        counts : ndarray, shape (D,), int64
            Steps per kernel at each dilation: the biases per kernel rounded up to a multiple of 4.
        biases : ndarray, shape (n_steps,), float32
            Sorted within each kernel; ``+inf`` where a group of four has no bias left.
        weights : ndarray, shape (n_steps,), float32
            Within each group of four, the summed weight of the biases up to and including this one
            (float64 sums, then float32).
        """
        weights = np.asarray(weights, dtype=np.float64)
        counts = -(-self.n_biases // 4) * 4
        offsets = (
            np.concatenate([[0], np.cumsum(N_KERNELS * counts)[:-1]])[:, None] + np.arange(N_KERNELS) * counts[:, None]
        )
        total = int(N_KERNELS * counts.sum())
        step_b = np.full(total, np.inf, dtype=np.float32)
        step_w = np.zeros(total, dtype=np.float64)
        for di, (nb, cnt) in enumerate(zip(self.n_biases.tolist(), counts.tolist(), strict=True)):
            sb = np.full((N_KERNELS, cnt), np.inf, dtype=np.float32)
            sw = np.zeros((N_KERNELS, cnt), dtype=np.float64)
            sb[:, :nb], sw[:, :nb] = self.sorted_biases(weights, di)
            sw = sw.reshape(N_KERNELS, cnt // 4, 4).cumsum(axis=2).reshape(N_KERNELS, cnt)
            lo = int(offsets[di, 0])
            step_b[lo : lo + N_KERNELS * cnt] = sb.reshape(-1)
            step_w[lo : lo + N_KERNELS * cnt] = sw.reshape(-1)
        return offsets.astype(np.int64), counts.astype(np.int64), step_b, step_w.astype(np.float32)

    def sorted_biases(self, weights: np.ndarray, dilation_index: int) -> tuple[np.ndarray, np.ndarray]:
        """One dilation's biases sorted within each kernel, and their per-feature weights in that order.

        Parameters
        ----------
        weights : ndarray, shape (F,)
            Per-feature weights (:func:`fold_head`).
        dilation_index : int

        Returns
        -------
        biases : ndarray, shape (84, nb), float32
        weights : ndarray, shape (84, nb), float64
        """
        nb = int(self.n_biases[dilation_index])
        f0 = int(self.feature_offsets[dilation_index])
        b = self.biases[f0 : f0 + N_KERNELS * nb].reshape(N_KERNELS, nb)
        w = np.asarray(weights, dtype=np.float64)[f0 : f0 + N_KERNELS * nb].reshape(N_KERNELS, nb)
        order = np.argsort(b, axis=1, kind="stable")
        return np.take_along_axis(b, order, axis=1), np.take_along_axis(w, order, axis=1)

    @property
    def margin(self) -> int:
        """Zero samples each side of a series: the reach of the largest dilation."""
        return KERNEL_LENGTH // 2 * int(self.dilations.max())

    def positions(self, dilation_index: int, padded: bool) -> tuple[int, int]:
        """``(first, stop)`` offsets of a window's averaged positions from its start, for one group."""
        reach = KERNEL_LENGTH // 2 * int(self.dilations[dilation_index])
        if padded or self.window_length <= 2 * reach:
            return 0, self.window_length
        return reach, self.window_length - reach


def fold_head(model) -> tuple[np.ndarray, float]:
    """Per-feature weights and the constant of a MiniRocket classifier's standardised linear head.

    Parameters
    ----------
    model : MiniRocketClassifier

    Returns
    -------
    weights : ndarray, shape (F,), float64
        ``a_f / sd_f``: the logit changes by ``weights[f]`` per unit of PPV ``f``.
    constant : float
        ``bias - sum_f a_f mean_f / sd_f`` (the logit of all-zero PPV).
    """
    a = model.head.weight.detach().double().cpu().reshape(-1)
    bias = float(model.head.bias.detach().double().cpu().reshape(()))
    norm = model.norm
    if float(norm.count) == 0:  # never trained: features pass through unstandardised
        return a.numpy(), bias
    scale = torch.rsqrt(norm.m2.double().cpu() / norm.count.double().cpu() + norm.eps)
    weights = a * scale
    return weights.numpy(), bias - float((weights * norm.mean.double().cpu()).sum())


# ---------------------------------------------------------------------------------------------
# numba kernels (CPU)


@njit(cache=True, inline="always")
def _base_block(xp: np.ndarray, at: int, d: int, n: int, base: np.ndarray) -> None:
    """base[t] = x[t-4d] + ... + x[t+4d] (left to right) for t = at .. at+n in padded coordinates."""
    lo = at - 4 * d
    first = xp[lo : lo + n]  # slices, so that the loops index from 0 and vectorise
    for t in range(n):
        base[t] = first[t]
    for j in range(1, 9):
        tap = xp[lo + j * d : lo + j * d + n]
        for t in range(n):
            base[t] += tap[t]


@njit(cache=True, inline="always")
def _kernel_block(
    xp: np.ndarray, at: int, d: int, taps: np.ndarray, k: int, n: int, base: np.ndarray, c: np.ndarray
) -> None:
    """c[t] = 3 * (x[t+a] + x[t+b] + x[t+c]) - base[t], the output of kernel k."""
    three = np.float32(3.0)
    o0 = at + (taps[k, 0] - 4) * d
    o1 = at + (taps[k, 1] - 4) * d
    o2 = at + (taps[k, 2] - 4) * d
    x0, x1, x2 = xp[o0 : o0 + n], xp[o1 : o1 + n], xp[o2 : o2 + n]
    for t in range(n):
        c[t] = (x0[t] + x1[t] + x2[t]) * three - base[t]


@njit(cache=True, inline="always")
def _add_steps(
    c: np.ndarray, e: np.ndarray, n: int, step_biases: np.ndarray, step_weights: np.ndarray, s0: int, ns: int
) -> None:
    """e[t] += the step function of one kernel at c[t], four sorted biases per pass.

    ``step_biases[s0:s0+ns]`` are the kernel's biases sorted in groups of four (``+inf`` fills the
    last group) and ``step_weights`` the cumulative weights within each group, so the contribution
    of a group is the weight of its highest bias below ``c[t]``: a chain of selects.
    """
    zero = np.float32(0.0)
    for g in range(s0, s0 + ns, 4):
        b0, b1, b2, b3 = step_biases[g], step_biases[g + 1], step_biases[g + 2], step_biases[g + 3]
        w0, w1, w2, w3 = step_weights[g], step_weights[g + 1], step_weights[g + 2], step_weights[g + 3]
        for t in range(n):
            v = c[t]
            a = w0 if v > b0 else zero
            a = w1 if v > b1 else a
            a = w2 if v > b2 else a
            a = w3 if v > b3 else a
            e[t] += a


@njit(cache=True, inline="always")
def _kernel_steps(xp, at, d, taps, k, n, base, c, e, step_biases, step_weights, s0, ns):
    """:func:`_kernel_block` then :func:`_add_steps`, the first four steps in the same pass.

    The output stays in a register for the first group (most kernels have four biases or fewer);
    it is written to ``c`` only when more groups follow.
    """
    three = np.float32(3.0)
    zero = np.float32(0.0)
    o0 = at + (taps[k, 0] - 4) * d
    o1 = at + (taps[k, 1] - 4) * d
    o2 = at + (taps[k, 2] - 4) * d
    x0, x1, x2 = xp[o0 : o0 + n], xp[o1 : o1 + n], xp[o2 : o2 + n]
    b0, b1, b2, b3 = step_biases[s0], step_biases[s0 + 1], step_biases[s0 + 2], step_biases[s0 + 3]
    w0, w1, w2, w3 = step_weights[s0], step_weights[s0 + 1], step_weights[s0 + 2], step_weights[s0 + 3]
    if ns <= 4:
        for t in range(n):
            v = (x0[t] + x1[t] + x2[t]) * three - base[t]
            a = w0 if v > b0 else zero
            a = w1 if v > b1 else a
            a = w2 if v > b2 else a
            a = w3 if v > b3 else a
            e[t] += a
        return
    for t in range(n):
        v = (x0[t] + x1[t] + x2[t]) * three - base[t]
        c[t] = v
        a = w0 if v > b0 else zero
        a = w1 if v > b1 else a
        a = w2 if v > b2 else a
        a = w3 if v > b3 else a
        e[t] += a
    _add_steps(c, e, n, step_biases, step_weights, s0 + 4, ns - 4)


@njit(cache=True, inline="always")
def _count_steps(c: np.ndarray, lo: int, hi: int, biases: np.ndarray, f0: int, nb: int, counts: np.ndarray) -> None:
    """counts[q] = number of t in [lo, hi) with c[t] > biases[f0 + q], for q < nb, four biases per pass."""
    seg = c[lo:hi]  # a slice, so that the loops index from 0 and vectorise
    m = hi - lo
    q = 0
    while q + 4 <= nb:
        b0, b1, b2, b3 = biases[f0 + q], biases[f0 + q + 1], biases[f0 + q + 2], biases[f0 + q + 3]
        a0 = a1 = a2 = a3 = 0
        for t in range(m):
            v = seg[t]
            a0 += v > b0
            a1 += v > b1
            a2 += v > b2
            a3 += v > b3
        counts[q], counts[q + 1], counts[q + 2], counts[q + 3] = a0, a1, a2, a3
        q += 4
    while q < nb:
        b0 = biases[f0 + q]
        a0 = 0
        for t in range(m):
            a0 += seg[t] > b0
        counts[q] = a0
        q += 1


@njit(cache=True, parallel=True)
def _evidence_logits(
    data,
    offsets,
    lengths,
    margin,
    win_start,
    win_first,
    win_stop,
    dilations,
    step_offsets,
    step_counts,
    padded,
    taps,
    step_biases,
    step_weights,
    window_length,
    out,
):
    """Every window's evidence into ``out`` (float64, n_windows), one series per thread.

    Windows ``win_first[i]:win_stop[i]`` (sorted by start) belong to series ``i``.
    """
    n_series = len(offsets)
    zero = np.float32(0.0)
    for i in prange(n_series):
        if win_stop[i] <= win_first[i]:
            continue
        T = lengths[i]
        xp = np.zeros(T + 2 * margin, dtype=np.float32)
        xp[margin : margin + T] = data[offsets[i] : offsets[i] + T]
        base = np.empty(_BLOCK, dtype=np.float32)
        c = np.empty(_BLOCK, dtype=np.float32)
        e_pad = np.empty(_BLOCK, dtype=np.float32)
        e_unp = np.empty(_BLOCK, dtype=np.float32)
        n_starts = T - window_length + 1
        by_start = np.zeros(n_starts, dtype=np.float64)  # the evidence of a window starting at each sample
        whole = np.zeros(T + 1, dtype=np.float64)  # evidence of the groups averaged over [s, s + L)
        cum = np.empty(T + 1, dtype=np.float64)
        for di in range(len(dilations)):
            d = dilations[di]
            reach = 4 * d
            inner = window_length > 2 * reach  # unpadded kernels average over [s + reach, s + L - reach)
            cum[0] = 0.0
            for lo in range(0, T, _BLOCK):
                n = min(_BLOCK, T - lo)
                at = margin + lo
                _base_block(xp, at, d, n, base)
                e_pad[:n] = zero
                e_unp[:n] = zero
                for k in range(84):
                    e = e_pad if padded[di, k] else e_unp
                    _kernel_steps(
                        xp,
                        at,
                        d,
                        taps,
                        k,
                        n,
                        base,
                        c,
                        e,
                        step_biases,
                        step_weights,
                        step_offsets[di, k],
                        step_counts[di],
                    )
                if inner:
                    for t in range(n):
                        whole[lo + t + 1] += e_pad[t]
                        cum[lo + t + 1] = cum[lo + t] + e_unp[t]
                else:
                    for t in range(n):
                        whole[lo + t + 1] += e_pad[t] + e_unp[t]
            if inner:  # every possible start at once: contiguous, so the cost is the same at any stride
                inv = 1.0 / (window_length - 2 * reach)
                upper = cum[window_length - reach : window_length - reach + n_starts]
                lower = cum[reach : reach + n_starts]
                for s in range(n_starts):
                    by_start[s] += (upper[s] - lower[s]) * inv
        for t in range(T):
            whole[t + 1] += whole[t]
        inv = 1.0 / window_length
        upper = whole[window_length : window_length + n_starts]
        for s in range(n_starts):
            by_start[s] += (upper[s] - whole[s]) * inv
        for w_i in range(win_first[i], win_stop[i]):
            out[w_i] = by_start[win_start[w_i]]


@njit(cache=True, parallel=True)
def _segment_features(
    data,
    offsets,
    lengths,
    margin,
    win_start,
    win_first,
    win_stop,
    dilations,
    n_biases,
    feature_offsets,
    padded,
    taps,
    biases,
    window_length,
    out,
):
    """PPV of every feature in every window, ``out`` (n_windows, F) float32, one series per thread."""
    n_series = len(offsets)
    for i in prange(n_series):
        w_lo, w_hi = win_first[i], win_stop[i]
        if w_hi <= w_lo:
            continue
        T = lengths[i]
        xp = np.zeros(T + 2 * margin, dtype=np.float32)
        xp[margin : margin + T] = data[offsets[i] : offsets[i] + T]
        starts = win_start[w_lo:w_hi]
        base = np.empty(T, dtype=np.float32)
        c = np.empty(T, dtype=np.float32)
        for di in range(len(dilations)):
            d = dilations[di]
            nb = n_biases[di]
            reach = 4 * d
            _base_block(xp, margin, d, T, base)
            for group in range(2):
                is_padded = group == 0
                if is_padded or window_length <= 2 * reach:
                    u0, u1 = 0, window_length
                else:
                    u0, u1 = reach, window_length - reach
                n_pos = u1 - u0
                points = np.unique(np.concatenate((starts + u0, starts + u1)))
                first_at = np.searchsorted(points, starts + u0)
                stop_at = np.searchsorted(points, starts + u1)
                cum = np.empty((len(points), nb), dtype=np.int64)
                counts = np.empty(nb, dtype=np.int64)
                for k in range(84):
                    if padded[di, k] != is_padded:
                        continue
                    _kernel_block(xp, margin, d, taps, k, T, base, c)
                    f0 = feature_offsets[di] + k * nb
                    cum[0, :] = 0
                    for j in range(len(points) - 1):
                        _count_steps(c, points[j], points[j + 1], biases, f0, nb, counts)
                        for q in range(nb):
                            cum[j + 1, q] = cum[j, q] + counts[q]
                    for w_i in range(w_hi - w_lo):
                        for q in range(nb):
                            total = cum[stop_at[w_i], q] - cum[first_at[w_i], q]
                            out[w_lo + w_i, f0 + q] = np.float32(total) / np.float32(n_pos)


# ---------------------------------------------------------------------------------------------
# Python entry points


def _group_windows(series: np.ndarray, start: np.ndarray, n_series: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Order windows by (series, start); returns the order and each series' first/stop in that order."""
    later = (series[1:] > series[:-1]) | ((series[1:] == series[:-1]) & (start[1:] >= start[:-1]))
    order = np.arange(len(series)) if later.all() else np.lexsort((start, series))
    counts = np.bincount(series, minlength=n_series)
    stop = np.cumsum(counts)
    return order, (stop - counts).astype(np.int64), stop.astype(np.int64)


def _check_windows(lengths: np.ndarray, series: np.ndarray, start: np.ndarray, window_length: int) -> None:
    if len(series) and ((start < 0).any() or (start + window_length > lengths[series]).any()):
        bad = int(np.flatnonzero((start < 0) | (start + window_length > lengths[series]))[0])
        raise ValueError(
            f"Window {bad} (series {int(series[bad])}, start {int(start[bad])}) does not fit its series of "
            f"{int(lengths[series[bad]])} samples with window_length={window_length}."
        )


def _run_per_series(series_list, series, start, window_length: int, margin: int, call) -> None:
    """Run a numba kernel over groups of series that bound one call's samples (~256 MB of float32).

    Each series is cut to the span its windows need (their first start minus ``margin`` to their
    last end plus ``margin``; the kernels reach no further), so a few windows of a long channel
    cost what they read. ``call(data, offsets, lengths, idx, first, stop, local)`` gets the group's
    cut series back to back; ``idx``: the group's windows (indices into ``series``/``start``)
    sorted by series and start, series ``j`` of the group owning ``idx[first[j]:stop[j]]``;
    ``local``: their starts within the cut series.
    """
    n = len(series_list)
    lengths = np.array([len(s) for s in series_list], dtype=np.int64)
    _check_windows(lengths, series, start, window_length)
    order, first, stop = _group_windows(series, start, n)
    used = np.flatnonzero(stop > first)
    cut_lo = np.zeros(n, dtype=np.int64)
    cut_hi = lengths.copy()
    cut_lo[used] = np.maximum(start[order[first[used]]] - margin, 0)
    cut_hi[used] = np.minimum(start[order[stop[used] - 1]] + window_length + margin, lengths[used])
    budget = 1 << 26
    k = 0
    while k < len(used):
        group, total = [], 0
        while k < len(used) and (not group or total + cut_hi[used[k]] - cut_lo[used[k]] <= budget):
            group.append(int(used[k]))
            total += int(cut_hi[used[k]] - cut_lo[used[k]])
            k += 1
        group = np.array(group)
        pieces = [np.asarray(series_list[i][cut_lo[i] : cut_hi[i]], dtype=np.float32) for i in group]
        sizes = (cut_hi - cut_lo)[group]
        offsets = np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(np.int64)
        idx = np.concatenate([order[first[i] : stop[i]] for i in group])
        counts = (stop - first)[group]
        g_stop = np.cumsum(counts).astype(np.int64)
        local = start[idx] - np.repeat(cut_lo[group], counts)
        call(np.concatenate(pieces), offsets, sizes.astype(np.int64), idx, g_stop - counts, g_stop, local)


def window_logits(
    features: MiniRocketFeatures, weights: np.ndarray, constant: float, series_list, series, start, window_length: int
) -> np.ndarray:
    """Window logits of a MiniRocket classifier through the evidence series, on the CPU (numba).

    Parameters
    ----------
    features : MiniRocketFeatures
        Fitted transform.
    weights : ndarray, shape (F,), float64
    constant : float
        From :func:`fold_head`.
    series_list : list of ndarray, each shape (T_i,), float32
        The channels.
    series : ndarray, shape (n_windows,), int64
        Channel of each window.
    start : ndarray, shape (n_windows,), int64
        Start of each window within its channel.
    window_length : int

    Returns
    -------
    logits : ndarray, shape (n_windows,), float64
    """
    layout = SeriesLayout.of(features, window_length)
    series = np.asarray(series, dtype=np.int64)
    start = np.asarray(start, dtype=np.int64)
    out = np.zeros(len(series), dtype=np.float64)
    if numba is None:
        _check_windows(np.array([len(x) for x in series_list], dtype=np.int64), series, start, window_length)
        for i in np.unique(series):
            sel = series == i
            x = torch.from_numpy(np.ascontiguousarray(series_list[i], dtype=np.float32))[None]
            out[sel] = torch_window_logits(features, weights, constant, x, start[sel], window_length).numpy()[0]
        return out
    step_offsets, step_counts, step_biases, step_weights = layout.steps(weights)

    def call(data, offsets, lengths, idx, first, stop, local):
        part = np.zeros(len(idx), dtype=np.float64)
        with _KERNEL_LOCK:
            _evidence_logits(
                data,
                offsets,
                lengths,
                layout.margin,
                local,
                first,
                stop,
                layout.dilations,
                step_offsets,
                step_counts,
                layout.padded,
                layout.taps,
                step_biases,
                step_weights,
                window_length,
                part,
            )
        out[idx] = part

    _run_per_series(series_list, series, start, window_length, layout.margin, call)
    return out + constant


def window_features(features: MiniRocketFeatures, series_list, series, start, window_length: int) -> np.ndarray:
    """Per-window PPV features under the series definition, on the CPU (numba).

    Parameters
    ----------
    features : MiniRocketFeatures
        Fitted transform.
    series_list : list of ndarray, each shape (T_i,), float32
    series, start : ndarray, shape (n_windows,), int64
        Channel and start of each window.
    window_length : int

    Returns
    -------
    ndarray, shape (n_windows, F), float32
        In the order of ``features`` (per dilation, per kernel, per bias).
    """
    layout = SeriesLayout.of(features, window_length)
    series = np.asarray(series, dtype=np.int64)
    start = np.asarray(start, dtype=np.int64)
    out = np.empty((len(series), features.n_features), dtype=np.float32)
    if numba is None:
        _check_windows(np.array([len(x) for x in series_list], dtype=np.int64), series, start, window_length)
        margin = layout.margin
        for i in np.unique(series):
            sel = np.flatnonzero(series == i)
            padded = np.pad(np.asarray(series_list[i], dtype=np.float32), margin)
            cut = np.stack([padded[s : s + window_length + 2 * margin] for s in start[sel]])
            out[sel] = explicit_window_features(features, torch.from_numpy(cut), window_length).numpy()
        return out

    def call(data, offsets, lengths, idx, first, stop, local):
        block = np.empty((len(idx), features.n_features), dtype=np.float32)
        with _KERNEL_LOCK:
            _segment_features(
                data,
                offsets,
                lengths,
                layout.margin,
                local,
                first,
                stop,
                layout.dilations,
                layout.n_biases,
                layout.feature_offsets,
                layout.padded,
                layout.taps,
                layout.biases,
                window_length,
                block,
            )
        out[idx] = block

    _run_per_series(series_list, series, start, window_length, layout.margin, call)
    return out


# ---------------------------------------------------------------------------------------------
# torch paths (any device): the evidence series for GPUs, the explicit per-window reference


def _conv_outputs(xp: torch.Tensor, at: int, n: int, d: int, taps: torch.Tensor) -> torch.Tensor:
    """Outputs of all 84 kernels at dilation d for positions at..at+n of padded rows ``xp`` (B, *): (B, 84, n)."""
    lo = at - 4 * d
    base = xp[:, lo : lo + n].clone()
    for j in range(1, 9):
        base += xp[:, lo + j * d : lo + j * d + n]
    shifted = torch.stack([xp[:, lo + j * d : lo + j * d + n] for j in range(9)], dim=1)  # (B, 9, n)
    three = shifted[:, taps[:, 0]] + shifted[:, taps[:, 1]]
    three += shifted[:, taps[:, 2]]
    return three * 3.0 - base[:, None, :]


def torch_window_logits(
    features: MiniRocketFeatures,
    weights: np.ndarray,
    constant: float,
    x: torch.Tensor,
    starts: np.ndarray,
    window_length: int,
    rows: np.ndarray | None = None,
    evidence: str | None = None,
) -> torch.Tensor:
    """Window logits through the evidence series in torch, for one or more channels of equal length.

    Channels of different lengths may be zero-padded at the end to one length: a window lies inside
    its channel, and the kernels read zeros beyond a channel's end either way.

    Parameters
    ----------
    features : MiniRocketFeatures
    weights : ndarray, shape (F,), float64
    constant : float
        From :func:`fold_head`.
    x : Tensor, shape (B, T), float32
        Channels, on the device that computes.
    starts : ndarray, shape (W,), int64
        Window starts.
    window_length : int
    rows : ndarray, shape (W,), int64, optional
        The row of ``x`` each window is in; without it every row has a window at every start.
    evidence : {"triton", "search", "compare"}, optional
        How each kernel's thresholded sum is formed (the same numbers up to float rounding);
        default "compare" on the CPU, elsewhere "triton" where it can run
        (:func:`~sss_viewer.models._minirocket_triton.triton_available`), else "search".

    Returns
    -------
    Tensor, shape (B, W) without ``rows``, else shape (W,); float64

    Notes
    -----
    "compare" tests each bias in turn (on the CPU as fast as a search or faster). "search" counts
    the biases below each output by one ``searchsorted`` over each kernel's sorted biases and
    gathers their summed weight, so a block costs a handful of kernel launches whatever the bias
    count (on an H200 with 16 channels a call: 4.5x the per-channel comparisons, docs/results.md §3).
    "triton" runs one fused kernel per dilation (:mod:`sss_viewer.models._minirocket_triton`): the
    numba path's arithmetic, its tables uploaded once per model and device.
    """
    dev = x.device
    if evidence is None:
        evidence = "compare" if dev.type == "cpu" else ("triton" if _triton_available(dev) else "search")
    check_option("evidence", evidence, ("triton", "search", "compare"))
    layout = SeriesLayout.of(features, window_length)
    if evidence == "triton":
        from sss_viewer.models._minirocket_triton import triton_window_logits

        return triton_window_logits(features, layout, weights, constant, x, starts, rows=rows)
    b_rows, T = x.shape
    margin = layout.margin
    xp = F.pad(x.float(), (margin, margin))
    taps = torch.from_numpy(layout.taps).to(dev)
    starts_t = torch.from_numpy(np.asarray(starts, dtype=np.int64)).to(dev)
    rows_t = None if rows is None else torch.from_numpy(np.asarray(rows, dtype=np.int64)).to(dev)
    out = torch.zeros((b_rows, len(starts)) if rows is None else (len(starts),), dtype=torch.float64, device=dev)
    kernel_evidence = _evidence_by_search if evidence == "search" else _evidence_by_comparison
    # every table uploaded once, before the loops: a host-to-device copy waits for the device
    all_tables = _evidence_tables(layout, weights, b_rows, dev, sorted_=evidence == "search")
    kernel_groups = [np.flatnonzero(p) for p in layout.padded] + [np.flatnonzero(~p) for p in layout.padded]
    groups = torch.from_numpy(np.stack(kernel_groups)).to(dev)  # (2 D, 42): each dilation's padded, then unpadded
    n_dil = len(layout.dilations)
    zero = torch.zeros(b_rows, 1, dtype=torch.float64, device=dev)
    for di, d in enumerate(layout.dilations.tolist()):
        tables = all_tables[di]
        cum = {True: [zero], False: [zero]}
        for lo in range(0, T, _TORCH_BLOCK):
            n = min(_TORCH_BLOCK, T - lo)
            per_kernel = kernel_evidence(_conv_outputs(xp, margin + lo, n, d, taps), *tables)  # (B, 84, n)
            for is_padded, kernels in ((True, groups[di]), (False, groups[n_dil + di])):
                e = per_kernel[:, kernels].sum(1)
                cum[is_padded].append(e.double().cumsum(1) + cum[is_padded][-1][:, -1:])
        for is_padded in (True, False):
            prefix = torch.cat(cum[is_padded], dim=1)  # (B, T + 1)
            u0, u1 = layout.positions(di, is_padded)
            if rows_t is None:
                total = prefix[:, starts_t + u1] - prefix[:, starts_t + u0]
            else:
                total = prefix[rows_t, starts_t + u1] - prefix[rows_t, starts_t + u0]
            out += total / (u1 - u0)
    return out + constant


def _triton_available(device: torch.device) -> bool:
    """Whether the fused Triton kernel runs on ``device`` (imports triton only when asked)."""
    from sss_viewer.models._minirocket_triton import triton_available

    return triton_available(device)


def _evidence_tables(
    layout: SeriesLayout, weights: np.ndarray, b_rows: int, device: torch.device, sorted_: bool
) -> list[tuple[torch.Tensor, torch.Tensor]]:
    """Every dilation's biases and weights for :func:`_evidence_by_search` or :func:`_evidence_by_comparison`.

    Built on the host and uploaded in one copy per table kind; the dilations' tables are views of it.

    Returns
    -------
    list, one per dilation, of (biases, weights):
        biases : Tensor, shape (b_rows, 84, nb) for the search, (84, nb) for the comparison; float32
            Sorted within each kernel (:meth:`SeriesLayout.sorted_biases`).
        weights : Tensor, shape (b_rows, 84, nb + 1) ``[0, w_1, w_1 + w_2, ...]`` for the search (float64
            sums, then float32), (84, nb) for the comparison; float32
    """
    host_b, host_w = [], []
    for di in range(len(layout.dilations)):
        b, w = layout.sorted_biases(weights, di)  # a comparison per bias gives the same sum in any order
        if sorted_:
            cumulative = np.zeros((N_KERNELS, b.shape[1] + 1), dtype=np.float64)
            cumulative[:, 1:] = np.cumsum(w, axis=1)
            w = cumulative
        host_b.append(b)
        host_w.append(w.astype(np.float32))
    flat_b = torch.from_numpy(np.concatenate([b.reshape(-1) for b in host_b])).to(device)
    flat_w = torch.from_numpy(np.concatenate([w.reshape(-1) for w in host_w])).to(device)
    tables, at_b, at_w = [], 0, 0
    for b, w in zip(host_b, host_w, strict=True):
        steps = flat_b[at_b : at_b + b.size].view(b.shape)
        summed = flat_w[at_w : at_w + w.size].view(w.shape)
        at_b, at_w = at_b + b.size, at_w + w.size
        if sorted_:
            steps = steps.expand(b_rows, -1, -1).contiguous()
            summed = summed.expand(b_rows, -1, -1).contiguous()
        tables.append((steps, summed))
    return tables


def _evidence_by_search(c: torch.Tensor, steps: torch.Tensor, summed: torch.Tensor) -> torch.Tensor:
    """``sum_q w_q [c > b_q]`` per kernel and position as the summed weight of the biases below ``c``.

    ``c`` (B, 84, n) kernel outputs; the left-side search counts the biases strictly below each output.
    """
    return torch.gather(summed, 2, torch.searchsorted(steps, c.contiguous()))


def _evidence_by_comparison(c: torch.Tensor, biases: torch.Tensor, weights: torch.Tensor) -> torch.Tensor:
    """``sum_q w_q [c > b_q]`` per kernel and position, one bias at a time; ``c`` (B, 84, n)."""
    e = torch.zeros_like(c)
    for q in range(biases.shape[1]):
        e += (c > biases[None, :, q, None]) * weights[None, :, q, None]
    return e


def explicit_window_features(features: MiniRocketFeatures, windows: torch.Tensor, window_length: int) -> torch.Tensor:
    """Per-window PPV features under the series definition, computed window by window (the reference).

    Parameters
    ----------
    features : MiniRocketFeatures
    windows : Tensor, shape (B, window_length + 2 * M), float32
        Each window with ``M = 4 * max(dilation)`` samples of its channel on either side (zeros
        beyond the channel's ends).
    window_length : int

    Returns
    -------
    Tensor, shape (B, F), float32
    """
    layout = SeriesLayout.of(features, window_length)
    margin = layout.margin
    if windows.shape[1] != window_length + 2 * margin:
        raise ValueError(f"windows must have {window_length} + 2 x {margin} samples; got {windows.shape[1]}.")
    taps = torch.from_numpy(layout.taps).to(windows.device)
    biases = torch.from_numpy(layout.biases).to(windows.device)
    out = windows.new_empty(windows.shape[0], features.n_features)
    for di, d in enumerate(layout.dilations.tolist()):
        nb = int(layout.n_biases[di])
        f0 = int(layout.feature_offsets[di])
        c = _conv_outputs(windows, margin, window_length, d, taps)  # (B, 84, L)
        for k in range(N_KERNELS):
            u0, u1 = layout.positions(di, bool(layout.padded[di, k]))
            seg = c[:, k, u0:u1]
            bias = biases[f0 + k * nb : f0 + (k + 1) * nb]
            above = (seg[:, None, :] > bias[None, :, None]).sum(-1, dtype=torch.int64)
            out[:, f0 + k * nb : f0 + (k + 1) * nb] = above.float() / (u1 - u0)
    return out


def numba_threads() -> int:
    """Threads the numba kernels use (torch's threads without numba)."""
    return int(numba.get_num_threads()) if numba is not None else torch.get_num_threads()

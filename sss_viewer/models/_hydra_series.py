"""Hydra read over whole channels: window counts from segment sums of one pass of the kernels per channel.

The "series" definition
-----------------------
Hydra's features are sums over positions (:mod:`sss_viewer.models.hydra`), so a window's counts
are the sums of per-position contributions over the window's positions. Here the convolutions of a
channel are computed once over the whole channel, zero-padded only beyond the channel's own ends,
and a window ``[s, s + L)`` sums the contributions of its own positions:

* the input's positions ``[s, s + L)``, each seeing its real neighbours (not zeros at the window's
  edges, as a window read on its own does);
* the first difference's positions ``[s, s + L - 1)`` (the ``L - 1`` differences inside the
  window), the difference taken over the whole channel.

A window that is the whole channel gets the counts the per-window transform gives it. Counts are
scaled by ``input_length / L``, as there.

Ties count as in the per-window transform: a position where several kernels of a group share the
largest (or smallest) response counts for every one of them.

Work
----
Windows of a channel are taken in start order, in groups whose spans overlap (at most
:data:`GROUP_WINDOWS` windows). A group's boundaries (``s``, ``s + L - 1``, ``s + L`` of each
window) cut its span into segments; one pass of every (dilation, input) kernel bank over the span
(a matrix product of the kernels with the nine shifted copies of the input) adds each position's
winner response (soft max count) and loser count (hard min count) into its segment
(``scatter_add``; the winner found as ``sum_k k * [response_k == max]``); a cumulative sum over
the segments (float64) turns those into prefix sums, and a window's count is the difference of the
prefix sums at its two ends. Every position of a span is convolved once whatever the stride of the
windows (the per-window transform convolves a position once per window holding it, ``L / stride``
times); what grows with the number of windows is only the prefix sums and the head. Training
windows at random starts take the same path.

Internal to the stage: not part of the public API (:mod:`sss_viewer.models`'s ``__all__``, ``docs/api.md``).
"""

from __future__ import annotations

import numpy as np
import torch
import torch.nn.functional as F
from torch import Tensor

from sss_viewer.models.hydra_features import KERNEL_LENGTH, HydraFeatures

__all__ = ["GROUP_WINDOWS", "window_counts"]

GROUP_WINDOWS = 512
"""Most windows whose segment sums are held at once (their prefix sums: ``3 x windows x n_features`` floats)."""
_CPU_POSITIONS = 1 << 12
"""Positions convolved at once on the CPU: ``kernels x positions`` float32 outputs (4 MB at 256 kernels) stay in
the cache (16,384 positions ran ~20 % slower on this project's 2-core machine)."""
_DEVICE_POSITIONS = 1 << 18
"""The same on an accelerator."""


def window_counts(features: HydraFeatures, x: Tensor, starts: np.ndarray, window_length: int) -> Tensor:
    """Hydra counts of windows of one channel under the series definition.

    Parameters
    ----------
    features : HydraFeatures
    x : Tensor, shape (T,), float
        The channel, on the device to compute on.
    starts : ndarray, shape (n_windows,), int64
        Window starts within the channel; every window must lie inside it.
    window_length : int
        ``L``, at least 9.

    Returns
    -------
    Tensor, shape (n_windows, n_features), dtype of ``x``
        In the order of ``starts``; laid out as :meth:`HydraFeatures.forward`'s, counts per
        ``input_length`` positions.

    Raises
    ------
    ValueError
        If a window does not lie inside the channel, or ``L < 9``.
    """
    if x.ndim != 1:
        raise ValueError(f"Expected one channel of shape (T,), got shape {tuple(x.shape)}.")
    starts = np.asarray(starts, dtype=np.int64)
    L, T = int(window_length), int(x.shape[0])
    if L < KERNEL_LENGTH:
        raise ValueError(f"Invalid window_length={L}: Hydra needs at least {KERNEL_LENGTH} samples.")
    if len(starts) and (starts.min() < 0 or starts.max() + L > T):
        raise ValueError(
            f"Windows of {L} samples at starts {starts.min()}..{starts.max()} do not lie inside a channel of {T} samples."
        )
    n_features = features.n_features
    out = x.new_zeros(len(starts), n_features)
    if not len(starts):
        return out
    reach = KERNEL_LENGTH // 2 * features.dilations[-1]
    inputs = [x, torch.diff(x)][: features.n_inputs]
    padded = [F.pad(series[None, None], (reach, reach))[0, 0] for series in inputs]
    weights = features.weights.to(x.dtype)
    order = np.argsort(starts, kind="stable")
    for group in _overlapping_groups(starts[order], L):
        picked = order[group]
        counts = _group_counts(features, padded, [len(s) for s in inputs], reach, weights, starts[picked], L)
        out[torch.as_tensor(picked, device=x.device)] = counts.to(x.dtype)
    return out * (features.input_length / L)


def _overlapping_groups(sorted_starts: np.ndarray, L: int) -> list[np.ndarray]:
    """Split windows (sorted by start) into runs whose spans overlap or touch, of at most GROUP_WINDOWS each.

    Returns
    -------
    list of ndarray of int64
        Indices into ``sorted_starts``.
    """
    gaps = np.flatnonzero(np.diff(sorted_starts) > L) + 1  # the next window starts after this one ends
    groups = []
    for run in np.split(np.arange(len(sorted_starts)), gaps):
        groups.extend(run[lo : lo + GROUP_WINDOWS] for lo in range(0, len(run), GROUP_WINDOWS))
    return groups


def _group_counts(
    features: HydraFeatures,
    padded: list[Tensor],
    lengths: list[int],
    reach: int,
    weights: Tensor,
    starts: np.ndarray,
    L: int,
) -> Tensor:
    """Counts ``(n, n_features)`` float64 of windows whose spans overlap, from prefix sums over their segments."""
    device = padded[0].device
    bounds_np = np.unique(np.concatenate([starts, starts + L - 1, starts + L]))
    bounds = torch.as_tensor(bounds_np, device=device)
    n_dil, n_in = len(features.dilations), features.n_inputs
    h, k = features.groups_per_input, features.kernels_per_group
    sums = _segment_sums(features, padded, lengths, reach, weights, bounds)  # (n_dil, n_in, 2, n_seg, h, k)
    prefix = torch.cat([sums.new_zeros(n_dil, n_in, 2, 1, h, k), sums.double().cumsum(3)], 3)
    at = {
        edge: torch.as_tensor(np.searchsorted(bounds_np, values), device=device)
        for edge, values in (("start", starts), ("end", starts + L), ("diff_end", starts + L - 1))
    }
    ends = [at["end"], at["diff_end"]][:n_in]
    counts = torch.stack(
        [prefix[:, j].index_select(2, ends[j]) - prefix[:, j].index_select(2, at["start"]) for j in range(n_in)], 1
    )  # (n_dil, n_in, 2, n, h, k)
    return counts.permute(3, 0, 1, 2, 4, 5).reshape(len(starts), -1)


def _segment_sums(
    features: HydraFeatures, padded: list[Tensor], lengths: list[int], reach: int, weights: Tensor, bounds: Tensor
) -> Tensor:
    """Winner responses and loser counts summed per segment ``[bounds[q], bounds[q + 1])``.

    Parameters
    ----------
    padded : list of Tensor, each shape (T_j + 2 * reach,)
        The input (and its first difference), zero-padded by ``reach`` on both sides.
    lengths : list of int
        ``T_j``: positions past them are not summed.
    bounds : Tensor, shape (m,), int64
        Increasing segment boundaries.

    Returns
    -------
    Tensor, shape (n_dilations, n_inputs, 2, m - 1, h, k), dtype of ``weights``
        Soft max sums in ``[:, :, 0]``, hard min counts in ``[:, :, 1]``.
    """
    h, k = features.groups_per_input, features.kernels_per_group
    n_seg = len(bounds) - 1
    device = bounds.device
    sums = torch.zeros(len(features.dilations), features.n_inputs, 2, n_seg * h * k, dtype=weights.dtype, device=device)
    step = _CPU_POSITIONS if device.type == "cpu" else _DEVICE_POSITIONS
    group_base = (torch.arange(h, device=device) * k)[:, None]
    first, last = int(bounds[0]), int(bounds[-1])
    mask = torch.empty(h, k, min(step, max(last - first, 1)), dtype=weights.dtype, device=device)
    ramp = torch.stack([torch.arange(k, device=device), torch.ones(k, device=device)]).to(weights.dtype)
    for j, (series, length) in enumerate(zip(padded, lengths)):
        stop = min(last, length)
        for p0 in range(first, stop, step):
            p1 = min(stop, p0 + step)
            segment = torch.searchsorted(bounds, torch.arange(p0, p1, device=device), right=True) - 1
            base = segment[None, :] * (h * k) + group_base  # (h, P)
            for i, dilation in enumerate(features.dilations):
                lo = reach + p0 - KERNEL_LENGTH // 2 * dilation
                taps = torch.stack(
                    [series[lo + m * dilation : lo + m * dilation + p1 - p0] for m in range(KERNEL_LENGTH)]
                )
                resp = torch.matmul(weights[i, j], taps).view(h, k, p1 - p0)  # a GEMM: ~3x faster than conv1d here
                top = resp.amax(1, keepdim=True)
                _add_extremes(resp, top, top, base, sums[i, j, 0], mask, ramp)  # soft max: the winner's response
                bottom = resp.amin(1, keepdim=True)
                _add_extremes(resp, bottom, torch.ones_like(bottom), base, sums[i, j, 1], mask, ramp)  # hard min: 1
    return sums.view(len(features.dilations), features.n_inputs, 2, n_seg, h, k)


def _add_extremes(
    resp: Tensor, extreme: Tensor, value: Tensor, base: Tensor, flat: Tensor, mask: Tensor, ramp: Tensor
) -> None:
    """Add ``value`` at every position to the kernel(s) whose response equals the group's ``extreme``.

    Parameters
    ----------
    resp : Tensor, shape (h, k, P)
        Responses of the kernels of ``h`` groups at ``P`` positions.
    extreme : Tensor, shape (h, 1, P)
        The group's largest (or smallest) response at each position.
    value : Tensor, shape (h, 1, P)
        What the extreme kernel gets: its response (soft max) or 1 (hard min).
    base : Tensor, shape (h, P), int64
        Flat index of kernel 0 of the group in the position's segment.
    flat : Tensor, shape (n_segments * h * k,)
        Sums, added to.
    mask : Tensor, shape (h, k, >= P)
        Scratch space.
    ramp : Tensor, shape (2, k)
        ``[0, 1, ..., k - 1]`` over ``[1, ..., 1]``.

    Notes
    -----
    A position with one extreme kernel (the rule for distinct random kernels) adds once, at the
    kernel found as ``sum_k k * [resp == extreme]``; a position where several kernels tie (flat
    stretches) adds to every tied kernel, as the per-window transform does.
    """
    n = resp.shape[-1]
    hit = torch.eq(resp, extreme, out=mask[..., :n])
    which, ties = torch.matmul(ramp, hit).unbind(1)  # (h, P) each: sum of k over hits, number of hits
    single = ties == 1
    k = ramp.shape[1]
    index = base + which.long().clamp_(max=k - 1)
    flat.scatter_add_(0, index.reshape(-1), torch.where(single, value[:, 0], 0).reshape(-1))
    if not bool(single.all()):
        group, position = torch.nonzero(~single, as_tuple=True)
        tied = hit[group, :, position]  # (n_tied, k)
        kernel_index = base[group, position][:, None] + torch.arange(k, device=resp.device)
        flat.index_add_(0, kernel_index.reshape(-1), (tied * value[group, 0, position][:, None]).reshape(-1))

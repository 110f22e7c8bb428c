"""The preprocessing of :mod:`sss_viewer.preprocessing.filters` in torch, on any device, for a block of channels.

:func:`preprocess_channels_torch` is :func:`~sss_viewer.preprocessing.filters.preprocess_channels` for a
``(n_channels, n_times)`` tensor: the same resampling, notches, high-pass, pooling and normalisation
(``PreprocessConfig.scale`` included, flat and NaN/inf channels reported and left out of the scales
the same way), computed where the tensor lives (a GPU when scoring runs there). How each step stays
equal to the SciPy reference:

resampling
    ``scipy.signal.resample_poly``'s own FIR (``firwin(20 * max(up, down) + 1, 1 / max(up, down),
    window=("kaiser", 5.0)) * up``, zero-padded at the front exactly as SciPy pads it), applied
    polyphase: one strided ``conv1d`` with one output channel per phase, so nothing is zero-stuffed,
    and the same zero padding outside the channel, so the output (``ceil(n_times * up / down)``
    samples) equals SciPy's to float64 rounding, ends included.
notches and high-pass (``sosfiltfilt`` of the cascade)
    away from the ends, a zero-phase FFT convolution with the cascade's forward-backward impulse
    response ``g = h ⋆ h`` (the autocorrelation of the forward impulse response ``h``), ``h``
    truncated after :data:`IIR_TAIL` of its L1 mass; within ``len(h)`` samples of either end (where
    ``sosfiltfilt``'s padding and initial conditions act) the ends are filtered by SciPy itself on
    the CPU, on pieces of ``2 * len(h)`` samples (the cut's own edge effect dies out within the
    discarded half). A series shorter than ``4 * len(h)`` is filtered whole by SciPy.
pooling, mean, standard deviation and scales
    float64 on the device; the scales by :func:`~sss_viewer.preprocessing.filters.channel_scales`.

Tolerance: the series equal ``preprocess_channels``' within ``TOLERANCE`` (1e-5) in absolute value of
the normalised (z-scored or scaled) series, at every sample, ends included (float32 rounding of the
output is the largest part; ``tests/preprocessing/test_torch_filters.py`` checks rates 1000, 512,
2048 and 250 Hz, mains 50, 60 and unknown, a channel shorter than the IIR span and the recording
scale).
"""

from __future__ import annotations

import functools
import logging
import math
from collections.abc import Callable, Sequence

import numpy as np
import torch
from scipy import fft as sp_fft
from scipy import signal

from sss_viewer.preprocessing.config import PreprocessConfig
from sss_viewer.preprocessing.filters import _iir_cascade, channel_scales, unusable_reason

logger = logging.getLogger(__name__)

IIR_TAIL = 1e-13
"""Fraction of the forward impulse response's L1 mass left out where it is truncated."""
TOLERANCE = 1e-5
"""Largest absolute difference to ``preprocess_channels`` of the normalised series (tested)."""
CPU_BLOCK_BYTES = 1 << 30
"""Float64 working memory per block of channels off the GPU."""


@functools.lru_cache(maxsize=32)
def resample_taps(up: int, down: int) -> tuple[np.ndarray, int]:
    """``resample_poly``'s FIR for ``up / down`` (coprime), front-padded as SciPy pads it, and its ``n_pre_remove``.

    Parameters
    ----------
    up, down : int
        The reduced resampling ratio.

    Returns
    -------
    h : ndarray, shape (n_taps,), float64
        ``firwin`` taps times ``up`` behind ``down - half_len % down`` zeros (SciPy's post-padding is
        zeros past the end, which the zero-padded convolution here gives by itself).
    n_pre_remove : int
        Output samples of the full upfirdn that SciPy drops at the front.
    """
    max_rate = max(up, down)
    half_len = 10 * max_rate
    h = signal.firwin(2 * half_len + 1, 1.0 / max_rate, window=("kaiser", 5.0)) * up
    n_pre_pad = down - half_len % down
    h = np.concatenate([np.zeros(n_pre_pad), h])
    return h, (half_len + n_pre_pad) // down


@functools.lru_cache(maxsize=32)
def _polyphase_kernel(up: int, down: int) -> tuple[np.ndarray, int]:
    """Polyphase weights for one strided ``conv1d`` and its left padding.

    Output sample ``i = up * m + s`` of ``resample_poly`` is ``Σ_k h[r_s + up k] x[m down + c_s - k]``
    with ``a_s = (s + n_pre_remove) down``, ``c_s = a_s // up``, ``r_s = a_s % up``; with ``x`` padded by
    ``pad`` zeros on the left this is ``Σ_j W[s, j] x_pad[m down + j]``.

    Returns
    -------
    weights : ndarray, shape (up, 1, n_kernel), float64
    pad : int
        Zeros in front of the channel.
    """
    h, n_pre_remove = resample_taps(up, down)
    phases = []
    for s in range(up):
        a = (s + n_pre_remove) * down
        c, r = divmod(a, up)
        phases.append((c, h[r::up]))
    pad = max(0, max(len(taps) - 1 - c for c, taps in phases))
    n_kernel = max(c for c, _ in phases) + pad + 1
    weights = np.zeros((up, 1, n_kernel))
    for s, (c, taps) in enumerate(phases):
        j = c + pad - np.arange(len(taps))
        weights[s, 0, j] = taps
    return weights, pad


def resample_poly_torch(x: torch.Tensor, up: int, down: int) -> torch.Tensor:
    """``scipy.signal.resample_poly(x, up, down, axis=-1)`` (default window and zero padding) in torch.

    Parameters
    ----------
    x : Tensor, shape (n_channels, n_times), float64
    up, down : int
        Positive; reduced by their gcd here as SciPy reduces them.

    Returns
    -------
    y : Tensor, shape (n_channels, ceil(n_times * up / down)), float64, on ``x``'s device
    """
    g = math.gcd(up, down)
    up, down = up // g, down // g
    n_channels, n_in = x.shape
    if up == down == 1:
        return x.clone()
    n_out = -(-n_in * up // down)
    weights, pad = _polyphase_kernel(up, down)
    n_kernel = weights.shape[-1]
    per_phase = -(-n_out // up)
    right = max(0, (per_phase - 1) * down + n_kernel - (pad + n_in))
    x_pad = torch.nn.functional.pad(x[:, None, :], (pad, right))
    w = torch.as_tensor(weights, dtype=x.dtype, device=x.device)
    y = torch.nn.functional.conv1d(x_pad, w, stride=down)[:, :, :per_phase]  # (C, up, per_phase)
    return y.transpose(1, 2).reshape(n_channels, per_phase * up)[:, :n_out]


@functools.lru_cache(maxsize=32)
def forward_backward_response(sos_bytes: bytes, n_sections: int) -> np.ndarray:
    """The forward impulse response ``h`` of a cascade, truncated after :data:`IIR_TAIL` of its L1 mass.

    Parameters
    ----------
    sos_bytes : bytes
        ``sos.tobytes()`` of the float64 cascade, shape (n_sections, 6) (hashable for the cache).
    n_sections : int

    Returns
    -------
    h : ndarray, shape (n_taps,), float64
        ``sosfilt(sos, δ)[:n_taps]``; ``sosfiltfilt`` is the convolution with ``np.convolve(h, h[::-1])``
        away from the ends.
    """
    sos = np.frombuffer(sos_bytes, dtype=np.float64).reshape(n_sections, 6).copy()
    n = 4096
    while True:
        impulse = np.zeros(n)
        impulse[0] = 1.0
        h = signal.sosfilt(sos, impulse)
        tail = np.cumsum(np.abs(h[::-1]))[::-1]  # tail[k] = Σ_{j ≥ k} |h_j|
        if tail[n // 2] <= IIR_TAIL * tail[0] or n >= 1 << 24:  # the cut lies in the first half
            break
        n *= 2
    keep = int(np.argmax(tail <= IIR_TAIL * tail[0]))
    return h[: max(keep, 1)]


def sosfiltfilt_torch(y: torch.Tensor, sos: np.ndarray) -> torch.Tensor:
    """``filters.filter_block``'s ``sosfiltfilt(sos, y, padlen=...)`` on every row, zero-phase FFT convolution inside.

    Parameters
    ----------
    y : Tensor, shape (n_channels, n), float64
    sos : ndarray, shape (n_sections, 6)

    Returns
    -------
    z : Tensor, shape (n_channels, n), float64, on ``y``'s device
    """
    if len(sos) == 0 or y.shape[1] == 0:
        return y
    n = y.shape[1]
    padlen = 3 * (2 * len(sos) + 1)
    sos = np.ascontiguousarray(sos, dtype=np.float64)
    h = forward_backward_response(sos.tobytes(), len(sos))
    span = len(h)
    if n < 4 * span:  # too short for an inside: SciPy filters it whole, as filter_block does
        whole = signal.sosfiltfilt(sos, y.cpu().numpy(), axis=-1, padlen=min(padlen, n - 1))
        return torch.from_numpy(np.ascontiguousarray(whole)).to(y.device)
    g = np.convolve(h, h[::-1])  # centre at span - 1
    n_fft = sp_fft.next_fast_len(n + len(g) - 1, real=True)
    g_hat = torch.fft.rfft(torch.as_tensor(g, dtype=y.dtype, device=y.device), n_fft)
    z = torch.fft.irfft(torch.fft.rfft(y, n_fft) * g_hat, n_fft)[:, span - 1 : span - 1 + n]
    ends = y[:, : 2 * span].cpu().numpy(), y[:, n - 2 * span :].cpu().numpy()
    head, tail = (signal.sosfiltfilt(sos, piece, axis=-1, padlen=min(padlen, 2 * span - 1)) for piece in ends)
    z[:, :span] = torch.from_numpy(np.ascontiguousarray(head[:, :span])).to(y.device)
    z[:, n - span :] = torch.from_numpy(np.ascontiguousarray(tail[:, span:])).to(y.device)
    return z


def filter_and_pool_torch(
    x: torch.Tensor, sfreq: float, config: PreprocessConfig, line_freq: float | None = None
) -> torch.Tensor:
    """``filters._filter_and_pool`` of every row: resample, notch, high-pass, pool (no normalisation).

    Parameters
    ----------
    x : Tensor, shape (n_channels, n_times)
        Samples in µV at ``sfreq`` (any float dtype; computed in float64). Rows must be finite.
    sfreq : float
    config : PreprocessConfig
    line_freq : float, optional

    Returns
    -------
    y : Tensor, shape (n_channels, config.output_length(n_times, sfreq)), float64, on ``x``'s device
    """
    y = x.to(torch.float64)
    rate = sfreq
    if config.target_sfreq is not None:
        config.check_sfreq(sfreq)
        up, down = config.resample_ratio(sfreq)
        rate = config.resampled_sfreq(sfreq)
        if up != down:
            y = resample_poly_torch(y, up, down)
    y = sosfiltfilt_torch(y, _iir_cascade(config, rate, line_freq))
    if config.pool_kernel > 1 or config.pool_stride > 1:
        if y.shape[1] < config.pool_kernel:
            return y.new_zeros((y.shape[0], 0))
        y = torch.nn.functional.avg_pool1d(y[:, None, :], config.pool_kernel, config.pool_stride)[:, 0]
    return y


def rows_per_block(n_times: int, sfreq: float, config: PreprocessConfig, device: torch.device) -> int:
    """Channels filtered at once so that the float64 temporaries fit the device (a quarter of its free memory).

    Returns
    -------
    rows : int
        At least 1.
    """
    up, down = config.resample_ratio(sfreq)
    n_res = -(-n_times * up // down)
    per_row = 8 * (3 * n_times + 8 * n_res)  # float64 input and its padded copy; resampled, FFTs, product, output
    if device.type == "cuda":
        free, _ = torch.cuda.mem_get_info(device)
        budget = free // 4
    else:
        budget = CPU_BLOCK_BYTES
    return max(1, int(budget // max(per_row, 1)))


def preprocess_channels_torch(
    data: torch.Tensor,
    sfreq: float,
    config: PreprocessConfig,
    ch_names: Sequence[str],
    *,
    line_freq: float | None = None,
    block_rows: int | None = None,
) -> tuple[torch.Tensor, dict[int, str]]:
    """:func:`~sss_viewer.preprocessing.filters.preprocess_channels` on ``data``'s device.

    Within :data:`TOLERANCE` (absolute, of the normalised series, every sample) of the SciPy
    reference; see the module docstring for how.

    Parameters
    ----------
    data : Tensor, shape (n_channels, n_times)
        Samples in µV at ``sfreq`` (float32 or float64), on any device.
    sfreq : float
        Native sampling rate in Hz.
    config : PreprocessConfig
    ch_names : sequence of str, length n_channels
        Channel names (their shafts group channels under ``scale="shaft"``).
    line_freq : float, optional
        Mains frequency when known.
    block_rows : int, optional
        Channels filtered at once (default :func:`rows_per_block`: what fits the device).

    Returns
    -------
    y : Tensor, shape (n_channels, config.output_length(n_times, sfreq)), float32, on ``data``'s device
        Preprocessed series; rows of unusable channels are NaN.
    unusable : dict
        ``{channel index: reason}``: ``"<n> NaN/inf samples"`` or ``"flat signal"``, as ``preprocess_channels``.

    Raises
    ------
    ValueError
        ``data`` not 2-D with one name per row, or a rate the config refuses.
    """
    if data.ndim != 2 or len(ch_names) != data.shape[0]:
        raise ValueError(
            f"Invalid data of shape {tuple(data.shape)} with {len(ch_names)} ch_names: expected (n_channels, n_times) "
            "with one name per row."
        )
    return preprocess_rows(
        lambda rows: data[torch.as_tensor(rows, device=data.device)],
        data.shape[1],
        sfreq,
        config,
        ch_names,
        data.device,
        line_freq=line_freq,
        block_rows=block_rows,
    )


def preprocess_rows(
    read_rows: Callable[[np.ndarray], torch.Tensor],
    n_times: int,
    sfreq: float,
    config: PreprocessConfig,
    ch_names: Sequence[str],
    device: torch.device,
    *,
    line_freq: float | None = None,
    block_rows: int | None = None,
) -> tuple[torch.Tensor, dict[int, str]]:
    """:func:`preprocess_channels_torch` of channels read a block of rows at a time (a recording bigger than the device).

    Parameters
    ----------
    read_rows : callable
        ``read_rows(rows)`` with ``rows`` an int ndarray of shape (n_rows,) gives those channels' samples
        in µV, a Tensor of shape (n_rows, n_times) on ``device``.
    n_times : int
    sfreq : float
    config : PreprocessConfig
    ch_names : sequence of str, length n_channels
    device : torch.device
        Where the work and the result are.
    line_freq : float, optional
    block_rows : int, optional
        Rows read and filtered at once (default :func:`rows_per_block`).

    Returns
    -------
    y : Tensor, shape (n_channels, config.output_length(n_times, sfreq)), float32, on ``device``
    unusable : dict
        ``{channel index: reason}``.
    """
    config.check_sfreq(sfreq)
    device = torch.device(device)
    n_channels = len(ch_names)
    n_out = config.output_length(n_times, sfreq)
    filtered = torch.full((n_channels, n_out), math.nan, dtype=torch.float64, device=device)
    unusable: dict[int, str] = {}
    block = block_rows or rows_per_block(n_times, sfreq, config, device)
    for lo in range(0, n_channels, block):
        rows = np.arange(lo, min(lo + block, n_channels))
        raw = read_rows(rows)
        finite = torch.isfinite(raw)
        n_bad = (~finite).sum(dim=1).cpu().numpy()
        raw_std = torch.where(finite, raw, 0).to(torch.float64).std(dim=1, correction=0).cpu().numpy()
        good = []
        for r, j in enumerate(rows):
            reason = unusable_reason(int(n_bad[r]), float(raw_std[r]))
            if reason is None:
                good.append(r)
            else:
                unusable[int(j)] = reason
        if good:
            keep = torch.as_tensor(good, device=device)
            filtered[keep + lo] = filter_and_pool_torch(raw[keep], sfreq, config, line_freq)
        del raw, finite
    if config.zscore:
        usable = np.array([j not in unusable for j in range(n_channels)], dtype=bool)
        means = filtered.mean(dim=1)
        stds = filtered.std(dim=1, correction=0) if n_out else torch.zeros_like(means)
        scales = channel_scales(stds.cpu().numpy(), usable, ch_names, config.scale)
        filtered -= means[:, None]
        filtered /= torch.as_tensor(scales, dtype=torch.float64, device=device)[:, None]
    return filtered.to(torch.float32), unusable

"""Preprocessing of iEEG channels into the normalised series that SSS windows.

Pure array functions plus a frozen config. Two presets:

``default``
    resample with an anti-aliasing filter to one common rate (250 Hz), notch the mains
    harmonics that survive, high-pass 0.5 Hz, per-channel z-score. Line noise cannot alias into a
    per-centre fingerprint, and every centre's windows span the same seconds.
``paper``
    the paper's App. B: 1-D average pooling (kernel 24, stride 12) on the native rate, per-channel
    z-score. At 1 kHz this leaves ≈ 83 Hz of bandwidth with no anti-aliasing, so 50/60 Hz mains
    fold to 33/23 Hz; kept for faithful reproduction only.

Both z-score each channel alone (``scale="channel"``); ``scale="recording"`` / ``"shaft"`` divide
every channel of a recording (of a shaft) by one robust scale instead (:func:`channel_scales`), so
amplitude differences between channels survive preprocessing.
"""

from __future__ import annotations

import functools
import logging
import math
from collections.abc import Sequence

import numpy as np
from scipy import signal

from sss_viewer._validate import check_option
from sss_viewer.io._channel_names import display_name
from sss_viewer.io._channel_names import shaft_name as io_shaft_name
from sss_viewer.preprocessing.config import MIN_SHAFT_CHANNELS, SCALES, PreprocessConfig

logger = logging.getLogger(__name__)

FLAT_STD_UV = 1e-6
"""Standard deviation (µV) at or below which a channel counts as flat."""


def unusable_reason(n_nonfinite: int, raw_std: float) -> str | None:
    """Why a channel cannot be preprocessed or scored, or None when it can.

    The one rule every path shares (``preprocess_channels``, the streamed, the torch and the
    biomarker reads): NaN/inf samples come first, then a flat signal.

    Parameters
    ----------
    n_nonfinite : int
        The channel's NaN/inf samples, of its shape (n_times,) raw samples.
    raw_std : float
        Standard deviation (µV) of its raw samples; NaN (an empty channel, or one with NaN/inf
        samples whose SD was not taken) counts as flat.

    Returns
    -------
    reason : str or None
        ``"<n_nonfinite> NaN/inf samples"`` when ``n_nonfinite`` > 0, else ``"flat signal"`` when
        ``raw_std`` is not above ``FLAT_STD_UV``, else None.
    """
    if n_nonfinite:
        return f"{int(n_nonfinite)} NaN/inf samples"
    if not raw_std > FLAT_STD_UV:  # not `<=`: a NaN SD is flat too
        return "flat signal"
    return None


def _notch_frequencies(line_freq: float | None, nyquist: float) -> list[float]:
    bases = [line_freq] if line_freq else [50.0, 60.0]
    freqs = {k * base for base in bases for k in range(1, int(nyquist // base) + 1)}
    return sorted(f for f in freqs if f < 0.98 * nyquist)


def filter_block(
    x: np.ndarray, sfreq: float, config: PreprocessConfig, *, line_freq: float | None = None
) -> np.ndarray:
    """Resample, notch and high-pass one block of one channel (no pooling, no z-score).

    Parameters
    ----------
    x : ndarray, shape (n_times,)
        Samples in µV at ``sfreq``.
    sfreq : float
    config : PreprocessConfig
    line_freq : float, optional

    Returns
    -------
    y : ndarray, shape (n_resampled,), float64
        ``n_resampled = ceil(n_times * up / down)`` for the resampling ratio ``up / down``.
    """
    y = np.asarray(x, dtype=np.float64)
    rate = sfreq
    if config.target_sfreq is not None:
        config.check_sfreq(sfreq)
        up, down = config.resample_ratio(sfreq)
        rate = config.resampled_sfreq(sfreq)
        if up != down:
            y = signal.resample_poly(y, up, down)
    sos = _iir_cascade(config, rate, line_freq)
    if len(sos):
        y = signal.sosfiltfilt(sos, y, padlen=min(3 * (2 * len(sos) + 1), len(y) - 1))
    return y


@functools.lru_cache(maxsize=64)
def _iir_cascade(config: PreprocessConfig, rate: float, line_freq: float | None) -> np.ndarray:
    """The notches and the high-pass as one second-order-section cascade, shape (n_sections, 6).

    Filtering forward and backward once with the whole cascade equals filtering with each filter in
    turn away from the block's ends (linear time-invariant filters commute) and costs a third as
    much; near the ends the padding differs, as it would with any other padding choice.
    """
    sections = []
    if config.notch:
        for freq in _notch_frequencies(line_freq, rate / 2):
            sections.append(signal.tf2sos(*signal.iirnotch(freq, config.notch_quality, fs=rate)))
    if config.highpass_hz is not None:
        sections.append(signal.butter(2, config.highpass_hz, btype="highpass", fs=rate, output="sos"))
    return np.vstack(sections) if sections else np.zeros((0, 6))


def preprocess_channel(
    x: np.ndarray,
    sfreq: float,
    config: PreprocessConfig,
    *,
    line_freq: float | None = None,
    scale_uv: float | None = None,
) -> np.ndarray:
    """Preprocess one whole channel in memory (the reference for the chunked ``preprocess_into``).

    Parameters
    ----------
    x : ndarray, shape (n_times,)
        One channel in µV at ``sfreq``.
    sfreq : float
        Native sampling rate in Hz.
    config : PreprocessConfig
    line_freq : float, optional
        Mains frequency when known.
    scale_uv : float, optional
        With ``config.scale`` ``"recording"`` or ``"shaft"`` (and ``zscore``): the scale (µV) the
        zero-mean series is divided by, which one channel alone cannot know
        (:func:`preprocess_channels` computes it for a whole recording). Must be omitted with
        ``scale="channel"`` (the channel's own SD) and is ignored with ``zscore=False``.

    Returns
    -------
    y : ndarray, shape (config.output_length(n_times, sfreq),), float32
        The preprocessed series at ``config.output_sfreq(sfreq)`` Hz.

    Raises
    ------
    ValueError
        ``scale_uv`` missing under a recording or shaft scale, given under the channel scale, or
        not a positive finite number.
    """
    if config.zscore:
        if config.scale == "channel" and scale_uv is not None:
            raise ValueError(
                f"Invalid scale_uv={scale_uv!r}: config.scale='channel' divides each channel by its own SD; "
                "scale_uv is for scale='recording' or 'shaft'."
            )
        if config.scale != "channel" and scale_uv is None:
            raise ValueError(
                f"scale_uv is required with config.scale={config.scale!r}: one channel cannot know its "
                "recording's (shaft's) scale; pass it, or preprocess the whole recording with preprocess_channels."
            )
        if scale_uv is not None and not (np.isfinite(scale_uv) and scale_uv > 0):
            raise ValueError(f"Invalid scale_uv={scale_uv!r}: expected a positive finite scale in µV.")
    y = _filter_and_pool(x, sfreq, config, line_freq)
    if config.zscore:
        if scale_uv is None:
            std = y.std()
            y = (y - y.mean()) / (std if std > 0 else 1.0)
        else:
            y = (y - y.mean()) / scale_uv
    return y.astype(np.float32)


def _filter_and_pool(x: np.ndarray, sfreq: float, config: PreprocessConfig, line_freq: float | None) -> np.ndarray:
    """:func:`filter_block` of a whole channel, then the pooling.

    Returns
    -------
    y : ndarray, shape (config.output_length(n_times, sfreq),), float64
    """
    y = filter_block(x, sfreq, config, line_freq=line_freq)
    if config.pool_kernel > 1 or config.pool_stride > 1:
        y = average_pool(y, config.pool_kernel, config.pool_stride)
    return y


def preprocess_channels(
    data: np.ndarray,
    sfreq: float,
    config: PreprocessConfig,
    ch_names: Sequence[str],
    *,
    line_freq: float | None = None,
) -> tuple[np.ndarray, dict[int, str]]:
    """Preprocess every channel of one recording in memory (the reference for ``preprocess_into``).

    Unlike :func:`preprocess_channel` it knows the whole recording, so it applies every
    ``config.scale``: channels with NaN/inf samples or a flat signal (:func:`unusable_reason`)
    are reported and left out of the scales.

    Parameters
    ----------
    data : ndarray, shape (n_channels, n_times)
        Samples in µV at ``sfreq``.
    sfreq : float
        Native sampling rate in Hz.
    config : PreprocessConfig
    ch_names : sequence of str, length n_channels
        Channel names (their shafts group channels under ``scale="shaft"``).
    line_freq : float, optional
        Mains frequency when known.

    Returns
    -------
    y : ndarray, shape (n_channels, config.output_length(n_times, sfreq)), float32
        Preprocessed series; rows of unusable channels are NaN.
    unusable : dict
        ``{channel index: reason}``, the reasons ``preprocess_into`` gives.
    """
    data = np.asarray(data)
    if data.ndim != 2 or len(ch_names) != len(data):
        raise ValueError(
            f"Invalid data of shape {data.shape} with {len(ch_names)} ch_names: expected (n_channels, n_times) "
            "with one name per row."
        )
    n_out = config.output_length(data.shape[1], sfreq)
    filtered = np.full((len(data), n_out), np.nan)
    unusable: dict[int, str] = {}
    for j, x in enumerate(data):
        n_bad = int(np.count_nonzero(~np.isfinite(x)))
        raw_std = math.nan if n_bad else float(np.asarray(x, dtype=np.float64).std())
        reason = unusable_reason(n_bad, raw_std)
        if reason is None:
            filtered[j] = _filter_and_pool(x, sfreq, config, line_freq)
        else:
            unusable[j] = reason
    if config.zscore:
        usable = np.array([j not in unusable for j in range(len(data))])
        means = np.array([y.mean() if ok else np.nan for y, ok in zip(filtered, usable, strict=True)])
        stds = np.array([y.std() if ok else np.nan for y, ok in zip(filtered, usable, strict=True)])
        scales = channel_scales(stds, usable, ch_names, config.scale)
        filtered = (filtered - means[:, None]) / scales[:, None]
    return filtered.astype(np.float32), unusable


def shaft_name(channel: str) -> str:
    """The electrode shaft (grid, strip) of a contact: ``LA1`` → ``LA``, ``POL A'12`` → ``A'``, ``G`` → ``G``.

    :func:`sss_viewer.io._channel_names.shaft_name` (the viewer's rule) on the vendor-prefix-free name
    (``sss_viewer.io._channel_names.display_name``); a name ending in no digits is its own shaft.
    """
    return io_shaft_name(display_name(channel))


def channel_scales(stds: np.ndarray, usable: np.ndarray, ch_names: Sequence[str], scale: str) -> np.ndarray:
    """What each channel's zero-mean series is divided by under ``PreprocessConfig.scale``.

    Parameters
    ----------
    stds : ndarray, shape (n_channels,)
        Each channel's standard deviation after filtering and pooling (µV); ignored where not ``usable``.
    usable : ndarray, shape (n_channels,), bool
        Channels that enter the scales (not NaN/inf, not flat).
    ch_names : sequence of str, length n_channels
        Channel names, for the shafts.
    scale : {"channel", "recording", "shaft"}
        ``"channel"``: each channel's own SD; ``"recording"``: the median SD of the usable
        channels; ``"shaft"``: the median SD of the shaft's usable channels, or the recording's
        when the shaft has fewer than ``MIN_SHAFT_CHANNELS``.

    Returns
    -------
    scales : ndarray, shape (n_channels,), float64
        Positive divisors (a zero or undefined scale becomes 1.0, as a zero SD always has).
    """
    check_option("scale", scale, SCALES)
    stds = np.asarray(stds, dtype=np.float64)
    usable = np.asarray(usable, dtype=bool)
    if stds.shape != usable.shape or len(ch_names) != len(stds):
        raise ValueError(
            f"Invalid stds of shape {stds.shape}, usable of shape {usable.shape} and {len(ch_names)} ch_names: "
            "expected one of each per channel."
        )

    def positive(value: float) -> float:
        return float(value) if np.isfinite(value) and value > 0 else 1.0

    if scale == "channel":
        return np.array([positive(s) for s in stds])
    recording = positive(np.median(stds[usable])) if usable.any() else 1.0
    scales = np.full(len(stds), recording)
    if scale == "recording":
        return scales
    shafts = np.array([shaft_name(c) for c in ch_names], dtype=object)
    for shaft in dict.fromkeys(shafts):
        members = shafts == shaft
        if np.count_nonzero(members & usable) >= MIN_SHAFT_CHANNELS:
            scales[members] = positive(np.median(stds[members & usable]))
    return scales


def average_pool(x: np.ndarray, kernel: int, stride: int) -> np.ndarray:
    """1-D average pooling without padding (``torch.nn.AvgPool1d`` semantics).

    Parameters
    ----------
    x : ndarray, shape (n_times,)
    kernel, stride : int

    Returns
    -------
    y : ndarray, shape ((n_times - kernel) // stride + 1,)
    """
    n_out = (len(x) - kernel) // stride + 1
    if n_out < 1:
        return np.zeros(0, dtype=np.float64)
    csum = np.concatenate([[0.0], np.cumsum(x, dtype=np.float64)])
    starts = np.arange(n_out) * stride
    return (csum[starts + kernel] - csum[starts]) / kernel

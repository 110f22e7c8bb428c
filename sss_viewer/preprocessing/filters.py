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
"""

from __future__ import annotations

import functools
import logging

import numpy as np
from scipy import signal

from sss_viewer.preprocessing.config import PreprocessConfig

logger = logging.getLogger(__name__)


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
    x: np.ndarray, sfreq: float, config: PreprocessConfig, *, line_freq: float | None = None
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

    Returns
    -------
    y : ndarray, shape (config.output_length(n_times, sfreq),), float32
        The preprocessed series at ``config.output_sfreq(sfreq)`` Hz.
    """
    y = filter_block(x, sfreq, config, line_freq=line_freq)
    if config.pool_kernel > 1 or config.pool_stride > 1:
        y = average_pool(y, config.pool_kernel, config.pool_stride)
    if config.zscore:
        std = y.std()
        y = (y - y.mean()) / (std if std > 0 else 1.0)
    return y.astype(np.float32)


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

"""Bounded-memory preprocessing: a recording's channels into a flat float32 array, chunk by chunk.

``preprocess_channel`` needs a whole channel (and SciPy/MNE filters need preloaded data); a
multi-hour channel at 2 kHz does not fit that comfortably, and a 100-channel recording certainly
does not. ``preprocess_into`` reads a group of channels over one time chunk at a time (plus a
margin either side), filters it with the same ``filter_block`` as the whole-channel path, keeps
the chunk's centre, pools with a carry-over between chunks and writes the result straight into
the output (an in-memory array or the cache's ``np.memmap``); a second pass, once every channel
of the recording is filtered, normalises in place (each channel to zero mean, divided by its own SD
or by its recording's / shaft's scale, ``PreprocessConfig.scale``).

Edges are correct because

* chunks start on multiples of the resampling ``down`` factor, so every chunk's resampled samples
  sit on the whole channel's output grid;
* the margin (≥ 10 s, plus 10 time constants of the high-pass) is far longer than the anti-alias
  FIR's half-length and the IIR filters' decay, so the kept centre matches whole-channel filtering
  to float rounding (``tests/preprocessing/test_preprocess_stream.py`` checks this), and the recording's own
  first and last samples are filtered exactly as in the whole-channel path;
* average pooling carries its unfinished kernel into the next chunk, which is exact.

Internal to the stage: not part of the public API (:mod:`sss_viewer.preprocessing`'s ``__all__``, ``docs/api.md``).
"""

from __future__ import annotations

import logging
import math
import os
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np
from tqdm.auto import tqdm

from sss_viewer.io.recording import Recording
from sss_viewer.preprocessing.config import PreprocessConfig
from sss_viewer.preprocessing.filters import average_pool, channel_scales, filter_block, unusable_reason

logger = logging.getLogger(__name__)

DEFAULT_CHUNK_SECONDS = 600.0
"""Time chunk length; most ds003029 runs (≤ 10 min) are filtered whole."""
DEFAULT_MEMORY_BYTES = 512 * 2**20
"""Budget for the float32 raw samples in flight: the block being filtered and the one read ahead
(the filters' float64 temporaries are per thread)."""
FILTER_THREADS = min(4, os.cpu_count() or 1)
"""Channels of a block filtered at once: resampling and IIR filtering run in scipy without the GIL."""


@dataclass
class _RunningMoments:
    """Count, mean and sum of squared deviations, merged chunk by chunk (Chan et al.)."""

    n: int = 0
    mean: float = 0.0
    m2: float = 0.0

    def add(self, x: np.ndarray) -> None:
        if len(x) == 0:
            return
        n_b, mean_b = len(x), float(np.mean(x))
        m2_b = float(np.sum((x - mean_b) ** 2))
        n = self.n + n_b
        delta = mean_b - self.mean
        self.mean += delta * n_b / n
        self.m2 += m2_b + delta**2 * self.n * n_b / n
        self.n = n

    @property
    def std(self) -> float:
        return math.sqrt(self.m2 / self.n) if self.n else 0.0


class _Pooler:
    """Average pooling over a stream of chunks, exact across chunk borders."""

    def __init__(self, kernel: int, stride: int):
        self.kernel, self.stride = kernel, stride
        self.carry = np.zeros(0, dtype=np.float64)

    def __call__(self, y: np.ndarray) -> np.ndarray:
        if self.kernel == 1 and self.stride == 1:
            return y
        buf = np.concatenate([self.carry, y])
        pooled = average_pool(buf, self.kernel, self.stride)
        self.carry = buf[len(pooled) * self.stride :]
        return pooled


def chunk_plan(n_times: int, sfreq: float, config: PreprocessConfig, chunk_seconds: float) -> tuple[int, int]:
    """Chunk step and margin in input samples, both multiples of the resampling ``down`` factor.

    Returns
    -------
    step, margin : int
    """
    up, down = config.resample_ratio(sfreq)
    filtering = up != down or config.notch or config.highpass_hz is not None
    margin_s = 10.0 + (10.0 / config.highpass_hz if config.highpass_hz else 0.0) if filtering else 0.0
    step = max(1, math.ceil(chunk_seconds * sfreq / down)) * down
    margin = math.ceil(margin_s * sfreq / down) * down
    return min(step, max(n_times, 1) + down), margin


def block_plan(
    n_times: int, n_picks: int, sfreq: float, config: PreprocessConfig, chunk_seconds: float, memory_bytes: int
) -> tuple[int, int, int]:
    """Channels read at once, time step and margin (input samples) for ``preprocess_into``.

    Readers of multiplexed formats (EDF records, BrainVision, most vendor files) decode every channel
    of a time span whatever channels are asked for, so the plan reads all picks at once and shortens
    the time step until two of their float32 blocks (step plus both margins; one filtered, one read
    ahead) fit ``memory_bytes``. Only when that step would fall below twice the margin (filtering
    would then cost more than twice the samples kept) does it read channel groups instead.

    Returns
    -------
    group, step, margin : int
        ``step`` is at most :func:`chunk_plan`'s step and a multiple of the resampling ``down`` factor.
    """
    _, down = config.resample_ratio(sfreq)
    step, margin = chunk_plan(n_times, sfreq, config, chunk_seconds)
    per_sample = 8 * max(n_picks, 1)  # the block being filtered and the one read ahead
    fitting = (memory_bytes // per_sample - 2 * margin) // down * down
    shortest = min(step, max(2 * margin, down))
    if fitting >= shortest:
        return max(n_picks, 1), min(step, fitting), margin
    group = max(1, memory_bytes // (8 * (shortest + 2 * margin)))
    return min(group, max(n_picks, 1)), shortest, margin


def preprocess_into(
    recording: Recording,
    picks: np.ndarray,
    config: PreprocessConfig,
    out: np.ndarray,
    offsets: np.ndarray,
    *,
    chunk_seconds: float = DEFAULT_CHUNK_SECONDS,
    memory_bytes: int = DEFAULT_MEMORY_BYTES,
    progress: bool = False,
) -> dict[int, str]:
    """Preprocess channels ``picks`` of ``recording`` into ``out`` with bounded memory.

    Parameters
    ----------
    recording : Recording
        In memory or lazy (``read_recording``'s default); read with ``get_data`` block by block.
    picks : ndarray, shape (n_picks,), int
        Channel indices.
    config : PreprocessConfig
    out : ndarray, shape (n_total,), float32
        Writable destination (e.g. an ``np.memmap``). Channel ``j`` is written to
        ``out[offsets[j] : offsets[j] + n_out]`` with ``n_out = config.output_length(n_times, sfreq)``.
    offsets : ndarray, shape (n_picks,), int
    chunk_seconds : float
        Time chunk length (s).
    memory_bytes : int
        Budget for the float32 raw blocks in flight (channels × samples × 2); see :func:`block_plan`.
    progress : bool

    Returns
    -------
    unusable : dict
        ``{j: reason}`` for picks with NaN/inf samples or a flat signal; their output slots hold
        no meaningful values, and they do not enter a recording or shaft scale.

    Notes
    -----
    With ``config.scale`` ``"recording"`` or ``"shaft"`` the scale is the median over ``picks``:
    the same recording preprocessed with other picks gives other series.
    """
    picks = np.asarray(picks, dtype=int)
    sfreq, n_times = recording.sfreq, recording.n_times
    config.check_sfreq(sfreq, what=f"recording {recording.label} ({recording.source or 'in memory'})")
    n_out = config.output_length(n_times, sfreq)
    up, down = config.resample_ratio(sfreq)
    group, step, margin = block_plan(n_times, len(picks), sfreq, config, chunk_seconds, memory_bytes)
    unusable: dict[int, str] = {}
    means = np.zeros(len(picks))  # of each pick's filtered (and pooled) series
    stds = np.zeros(len(picks))
    n_chunks = -(-n_times // step)
    bar = tqdm(
        total=len(picks) * n_chunks, desc=f"preprocess {recording.label}", unit="chunk", disable=not progress or None
    )
    pool = (
        ThreadPoolExecutor(FILTER_THREADS, thread_name_prefix="sss-preprocess")
        if FILTER_THREADS > 1 and len(picks) > 1
        else None
    )
    reader = ThreadPoolExecutor(1, thread_name_prefix="sss-read-ahead")
    try:
        for g0 in range(0, len(picks), group):
            rows = np.arange(g0, min(g0 + group, len(picks)))
            poolers = [_Pooler(config.pool_kernel, config.pool_stride) for _ in rows]
            written = np.zeros(len(rows), dtype=np.int64)
            raw_moments = [_RunningMoments() for _ in rows]
            out_moments = [_RunningMoments() for _ in rows]
            n_nonfinite = np.zeros(len(rows), dtype=np.int64)
            starts = range(0, n_times, step)
            ahead = reader.submit(_read_block, recording, picks[rows], starts[0], step, margin) if starts else None
            for k, s in enumerate(starts):
                block, e, a = ahead.result()
                if k + 1 < len(starts):  # read the next block while this one is filtered
                    ahead = reader.submit(_read_block, recording, picks[rows], starts[k + 1], step, margin)
                keep_lo = (s - a) * up // down
                keep_hi = None if e == n_times else (e - a) * up // down

                def one_channel(r: int, j: int) -> None:  # state of row r only: rows run on threads
                    x = block[r]
                    core = x[s - a : e - a]
                    n_nonfinite[r] += int(np.count_nonzero(~np.isfinite(core)))
                    if n_nonfinite[r]:
                        return
                    raw_moments[r].add(core.astype(np.float64))
                    y = filter_block(x, sfreq, config, line_freq=recording.line_freq)[keep_lo:keep_hi]
                    y = poolers[r](y)
                    out_moments[r].add(y)
                    lo = int(offsets[j] + written[r])
                    out[lo : lo + len(y)] = y
                    written[r] += len(y)

                if pool is None:
                    for r, j in enumerate(rows):
                        one_channel(r, j)
                else:
                    list(pool.map(one_channel, range(len(rows)), rows))
                bar.update(len(rows))
            for r, j in enumerate(rows):
                reason = unusable_reason(int(n_nonfinite[r]), raw_moments[r].std)
                if reason is not None:
                    unusable[int(j)] = reason
                    continue
                if written[r] != n_out:
                    raise RuntimeError(f"chunked preprocessing wrote {written[r]} samples, expected {n_out}")
                means[j], stds[j] = out_moments[r].mean, out_moments[r].std
        if config.zscore:  # after every group: a recording's or shaft's scale needs all its channels
            usable = np.array([j not in unusable for j in range(len(picks))], dtype=bool)
            names = [recording.ch_names[p] for p in picks]
            scales = channel_scales(stds, usable, names, config.scale)
            for j in np.flatnonzero(usable):
                _normalise_in_place(out, int(offsets[j]), n_out, float(means[j]), float(scales[j]))
    finally:
        reader.shutdown()
        if pool is not None:
            pool.shutdown()
    bar.close()
    return unusable


def _read_block(
    recording: Recording, picks: np.ndarray, start: int, step: int, margin: int
) -> tuple[np.ndarray, int, int]:
    """Samples ``[start - margin, start + step + margin)`` (clipped to the recording) of channels ``picks``.

    Returns
    -------
    block : ndarray, shape (n_picks, n), float32
    stop, first : int
        End of the kept part and the block's first sample.
    """
    n_times = recording.n_times
    stop = min(start + step, n_times)
    first = max(0, start - margin)
    return recording.get_data(picks, first, min(n_times, stop + margin)), stop, first


def _normalise_in_place(out: np.ndarray, offset: int, n: int, mean: float, std: float, block: int = 1 << 22) -> None:
    """``out[offset : offset + n] = (out[...] - mean) / std`` block by block (float64 arithmetic)."""
    for lo in range(offset, offset + n, block):
        hi = min(lo + block, offset + n)
        out[lo:hi] = (out[lo:hi].astype(np.float64) - mean) / std

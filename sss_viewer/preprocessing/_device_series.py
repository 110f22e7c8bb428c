"""Preprocessing a recording on a GPU for scoring: read with threads, filter there, hand the series on.

:class:`DeviceSeriesBuilder` stands where a :class:`~sss_viewer.preprocessing.cache.SeriesCache` stands
in :func:`~sss_viewer.windows.series_set.build_series_set` (its ``load_or_build``): it reads the picked
channels straight into device memory (:func:`read_to_device`: time spans read by threads, each
through ``Recording.get_data``, so exactly what the CPU path reads), preprocesses them there
(:func:`~sss_viewer.preprocessing._torch_filters.preprocess_rows`, within its stated tolerance of the
CPU filters) and returns the series as an in-memory :class:`~sss_viewer.preprocessing.cache.CachedSeries`
(nothing is written to or read from a disk cache). The device copy of the series stays on the
builder (``series``) for a consumer that can read it there.

Internal to the stage: not part of the public API.
"""

from __future__ import annotations

import logging
import os
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import torch

from sss_viewer.io.readers import multiplexed_samples
from sss_viewer.io.recording import Recording
from sss_viewer.preprocessing._artifacts_torch import DeviceArtifactCheck
from sss_viewer.preprocessing._torch_filters import preprocess_rows
from sss_viewer.preprocessing.cache import CachedSeries
from sss_viewer.preprocessing.config import PreprocessConfig

logger = logging.getLogger(__name__)

READ_THREADS = min(16, os.cpu_count() or 1)
"""Threads reading time spans of a recording at once (MNE's readers and NumPy's conversions release the GIL)."""
READ_SPAN_BYTES = 64 * 2**20
"""Float32 bytes of one thread's read (all picked channels over one time span)."""


def read_to_device(
    recording: Recording, picks: np.ndarray, device: torch.device | str, *, threads: int = READ_THREADS
) -> torch.Tensor:
    """Channels ``picks`` of ``recording``, whole, in device memory.

    Parameters
    ----------
    recording : Recording
        In memory or lazy, read over time spans of :data:`READ_SPAN_BYTES` by ``threads`` threads at
        once: a multiplexed binary BrainVision file (:func:`~sss_viewer.io.readers.multiplexed_samples`)
        frame by frame, its frames copied to the device as stored and calibrated there with
        ``get_data``'s float64 operations; anything else through ``get_data``. Either way the values
        are those one ``get_data`` of everything gives.
    picks : ndarray, shape (n_picks,), int
    device : torch.device or str
    threads : int

    Returns
    -------
    data : Tensor, shape (n_picks, n_times), float32 µV, on ``device``
    """
    picks = np.asarray(picks, dtype=int)
    device = torch.device(device)
    n_times = recording.n_times
    out = torch.empty((len(picks), n_times), dtype=torch.float32, device=device)
    if len(picks) == 0 or n_times == 0:
        return out
    layout = multiplexed_samples(recording)
    if layout is None:
        span = max(1, READ_SPAN_BYTES // (4 * len(picks)))
    else:  # the file's frames go to the device as they are; picked, calibrated and scaled there
        span = max(1, READ_SPAN_BYTES // (layout.dtype.itemsize * layout.n_file_channels))
        columns = torch.as_tensor(layout.columns[picks], device=device)
        factors = [
            torch.as_tensor(v[picks], dtype=torch.float64, device=device)[:, None]
            for v in (layout.cals, layout.scale, layout.offset)
        ]
    starts = range(0, n_times, span)

    def one(start: int) -> None:
        stop = min(start + span, n_times)
        if layout is None:
            block = np.ascontiguousarray(recording.get_data(picks, start, stop), dtype=np.float32)
            out[:, start:stop].copy_(torch.from_numpy(block))
            return
        frames = torch.from_numpy(layout.read_frames(start, stop)).to(device)
        x = frames[:, columns].T.to(torch.float64)
        # get_data's operations in its order, each rounded in float64: the same float32 values
        x = x * factors[0]
        x = x * factors[1]
        x = x - factors[2]
        out[:, start:stop] = x.to(torch.float32)

    if threads <= 1 or len(starts) == 1:
        for s in starts:
            one(s)
    else:
        with ThreadPoolExecutor(min(threads, len(starts)), thread_name_prefix="sss-device-read") as pool:
            list(pool.map(one, starts))
    return out


class DeviceSeriesBuilder:
    """A :class:`~sss_viewer.preprocessing.cache.SeriesSource` that preprocesses on a device and caches nothing.

    Parameters
    ----------
    device : torch.device or str
        Where the channels are preprocessed (a CUDA device when scoring runs there).
    artifact_check : DeviceArtifactCheck, optional
        Given each block of raw channels as it is read (the artifact check without a second read).

    Attributes
    ----------
    series : Tensor, shape (n_picks, n_out), float32, or None
        The last recording's preprocessed picks on ``device`` (rows of unusable channels NaN).
    timings : dict
        Seconds of the last build: ``read`` (file to device), ``artifacts`` (the artifact statistics of what was
        read, with an ``artifact_check``) and ``preprocess`` (filters, scales, copy back).
    """

    def __init__(self, device: torch.device | str, artifact_check: DeviceArtifactCheck | None = None):
        self.device = torch.device(device)
        self.artifact_check = artifact_check
        self.series: torch.Tensor | None = None
        self.timings: dict[str, float] = {}

    def __repr__(self) -> str:
        return f"DeviceSeriesBuilder({str(self.device)!r})"

    def load_or_build(
        self,
        recording: Recording,
        picks: np.ndarray,
        config: PreprocessConfig,
        *,
        progress: bool = False,
        **stream_options,
    ) -> CachedSeries:
        """The picks of ``recording`` preprocessed on the device: ``load_or_build`` of :class:`SeriesSource
        <sss_viewer.preprocessing.cache.SeriesSource>`, which states the parameters and the result.

        What differs from a :class:`~sss_viewer.preprocessing.cache.SeriesCache`: ``progress`` and
        ``**stream_options`` are ignored (nothing to show; channel blocks follow the device's memory), ``data``
        is in memory rather than a memmap, ``key`` is ``""`` (nothing is cached), and the series also stay on the
        device in :attr:`series` (rows of unusable channels NaN), the build's seconds in :attr:`timings`.
        """
        picks = np.asarray(picks, dtype=int)
        config.check_sfreq(recording.sfreq, what=f"recording {recording.label} ({recording.source or 'in memory'})")
        names = [recording.ch_names[p] for p in picks]
        n_out = config.output_length(recording.n_times, recording.sfreq)
        read_s = artifacts_s = 0.0

        def read_rows(rows: np.ndarray) -> torch.Tensor:
            nonlocal read_s, artifacts_s
            t0 = time.perf_counter()
            block = read_to_device(recording, picks[rows], self.device)
            read_s += time.perf_counter() - t0
            if self.artifact_check is not None:  # the artifact statistics from the same read, on the device
                t0 = time.perf_counter()
                self.artifact_check.add(block, [names[r] for r in rows])
                artifacts_s += time.perf_counter() - t0
            return block

        t0 = time.perf_counter()
        series, unusable = preprocess_rows(
            read_rows, recording.n_times, recording.sfreq, config, names, self.device, line_freq=recording.line_freq
        )
        data = series.reshape(-1).cpu().numpy()
        self.timings = {
            "read": read_s,
            "artifacts": artifacts_s,
            "preprocess": time.perf_counter() - t0 - read_s - artifacts_s,
        }
        self.series = series
        logger.info(
            "Preprocessed %s on %s: %d channels, read %.2f s, preprocessing %.2f s.",
            recording.label,
            self.device,
            len(picks),
            self.timings["read"],
            self.timings["preprocess"],
        )
        return CachedSeries(
            data=data,
            channels=names,
            offsets=np.arange(len(picks), dtype=np.int64) * n_out,
            lengths=np.full(len(picks), n_out, dtype=np.int64),
            unusable={names[j]: reason for j, reason in unusable.items()},
            key="",
        )

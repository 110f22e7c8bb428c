"""Window index over one contiguous store of preprocessed series, and the SSS epoch sampler.

A window is a row ``(series, start)``; batches are gathered by index arithmetic from flat 1-D
float32 segments (in memory or memory-mapped from the preprocessed-series cache), so the dataset is
never materialised as copies of overlapping windows (braindecode's ``i_start_in_trial`` idea,
without a per-item ``Dataset``).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

import numpy as np

from sss_viewer._validate import check_positive_int

logger = logging.getLogger(__name__)


@runtime_checkable
class WindowSource(Protocol):
    """What a model that reads windows within their channel needs from a store (the model–store contract).

    :class:`SeriesStore` is one; the series-route models (MiniRocket, Hydra: ``store_window_features``,
    ``store_window_logits``) call only these two methods, so anything providing them can be read.
    """

    def locate(self, starts: np.ndarray, length: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(series, local, used)`` of windows of ``length`` samples at absolute ``starts`` (shape (B,), int64):
        the series holding each window (B,), its start within it (B,), the distinct series increasing (n_used,)."""
        ...

    def series(self, i: int) -> np.ndarray:
        """Samples of series ``i``, shape (length_i,), float32 (may be a read-only view)."""
        ...


class SeriesStore:
    """Variable-length univariate series laid out back to back in one flat address space.

    The samples live in one or more float32 segments (in-memory arrays or read-only
    ``np.memmap`` files of the preprocessed-series cache, typically one per recording); series
    ``i`` occupies ``[offsets[i], offsets[i] + lengths[i])`` of the concatenation of the segments,
    and never straddles two segments. Windows are gathered from the segments by index arithmetic,
    so a memory-mapped store is read page by page, never loaded whole.

    Parameters
    ----------
    segments : sequence of ndarray, each shape (n_samples_k,), float32
        The sample segments (may be ``np.memmap``).
    offsets : ndarray, shape (n_series,), int64
        Start of each series in the concatenated address space.
    lengths : ndarray, shape (n_series,), int64
        Number of samples of each series.
    """

    def __init__(self, segments: Sequence[np.ndarray], offsets: np.ndarray, lengths: np.ndarray):
        self.segments = [s if s.dtype == np.float32 else np.asarray(s, dtype=np.float32) for s in segments]
        for k, seg in enumerate(self.segments):
            if seg.ndim != 1:
                raise ValueError(f"Store segment {k} must be 1-D; got shape {seg.shape}.")
        sizes = np.array([len(seg) for seg in self.segments], dtype=np.int64)
        self.segment_starts = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
        self.offsets = np.asarray(offsets, dtype=np.int64)
        self.lengths = np.asarray(lengths, dtype=np.int64)
        if self.offsets.shape != self.lengths.shape:
            raise ValueError(f"offsets {self.offsets.shape} and lengths {self.lengths.shape} differ in shape.")
        if len(self.offsets):
            first = self.segment_of(self.offsets)
            last = self.segment_of(self.offsets + np.maximum(self.lengths, 1) - 1)
            if (
                (self.offsets < 0).any()
                or (self.offsets + self.lengths > self.segment_starts[-1]).any()
                or (first != last).any()
            ):
                raise ValueError("Every series must lie inside one store segment.")

    @classmethod
    def from_series(cls, series: Sequence[np.ndarray]) -> SeriesStore:
        """Concatenate 1-D arrays (each shape (n_i,)) into one in-memory segment."""
        lengths = np.array([len(s) for s in series], dtype=np.int64)
        offsets = np.concatenate([[0], np.cumsum(lengths)[:-1]]).astype(np.int64) if len(series) else lengths
        data = (
            np.concatenate([np.asarray(s, dtype=np.float32) for s in series])
            if len(series)
            else np.zeros(0, np.float32)
        )
        return cls([data], offsets, lengths)

    @classmethod
    def concatenate(cls, stores: Sequence[SeriesStore]) -> SeriesStore:
        """One store holding every series of ``stores`` in order (segments are shared, not copied)."""
        segments, offsets, lengths, base = [], [], [], 0
        for store in stores:
            segments.extend(store.segments)
            offsets.append(store.offsets + base)
            lengths.append(store.lengths)
            base += int(store.segment_starts[-1])
        if not offsets:
            return cls([], np.zeros(0, np.int64), np.zeros(0, np.int64))
        return cls(segments, np.concatenate(offsets), np.concatenate(lengths))

    @property
    def n_series(self) -> int:
        """Number of series."""
        return len(self.lengths)

    @property
    def n_samples(self) -> int:
        """Samples in all segments."""
        return int(self.segment_starts[-1])

    def segment_of(self, positions: np.ndarray) -> np.ndarray:
        """Segment number of each absolute position, shape like ``positions``."""
        return np.searchsorted(self.segment_starts, positions, side="right") - 1

    def series(self, i: int) -> np.ndarray:
        """Samples of series ``i``, shape (lengths[i],) (a view; a memmap slice for cached stores)."""
        k = int(self.segment_of(self.offsets[i]))
        lo = int(self.offsets[i] - self.segment_starts[k])
        return self.segments[k][lo : lo + int(self.lengths[i])]

    def locate(self, starts: np.ndarray, length: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The series holding each window, and the window's start within it.

        Parameters
        ----------
        starts : ndarray, shape (B,), int64
            Absolute window starts.
        length : int
            Window length; every window must lie inside one series.

        Returns
        -------
        series : ndarray, shape (B,), int64
        local : ndarray, shape (B,), int64
            ``starts - offsets[series]``.
        used : ndarray, shape (n_used,), int64
            The distinct series, increasing.

        Raises
        ------
        ValueError
            When a window does not lie inside a series.
        """
        starts = np.asarray(starts, dtype=np.int64)
        if self.n_series == 0:
            if len(starts):
                raise ValueError("This store holds no series: no window lies inside one.")
            empty = np.zeros(0, np.int64)
            return empty, empty, empty
        in_order = bool((np.diff(self.offsets) > 0).all())
        order = np.arange(self.n_series) if in_order else np.argsort(self.offsets, kind="stable")
        pos = np.searchsorted(self.offsets[order], starts, side="right") - 1
        series = order[np.maximum(pos, 0)] if not in_order else np.maximum(pos, 0)
        local = starts - self.offsets[series]
        outside = (pos < 0) | (local + length > self.lengths[series])
        if outside.any():
            bad = int(np.flatnonzero(outside)[0])
            raise ValueError(
                f"Window start {int(starts[bad])} (length {length}) does not lie inside one series of this store."
            )
        used = np.flatnonzero(np.bincount(series, minlength=self.n_series))
        return series.astype(np.int64), local, used.astype(np.int64)

    def windows(self, starts: np.ndarray, length: int) -> np.ndarray:
        """Gather windows by index arithmetic.

        Parameters
        ----------
        starts : ndarray, shape (B,), int64
            Absolute start of each window (window ``b`` is ``[starts[b], starts[b] + length)``).
        length : int
            Window length L.

        Returns
        -------
        windows : ndarray, shape (B, L), float32
            A new array; only the pages of the B windows are read from a memory-mapped segment.
        """
        starts = np.asarray(starts, dtype=np.int64)
        out = np.empty((len(starts), length), dtype=np.float32)
        if len(starts) == 0:
            return out
        seg = self.segment_of(starts)
        if len(self.segments) == 1:
            groups = [(0, np.arange(len(starts)))]
        else:
            order = np.argsort(seg, kind="stable")
            bounds = np.flatnonzero(np.diff(seg[order])) + 1
            groups = [(int(seg[g[0]]), g) for g in np.split(order, bounds)]
        for k, rows in groups:
            local = starts[rows] - self.segment_starts[k]
            view = np.lib.stride_tricks.sliding_window_view(self.segments[k], length)
            out[rows] = view[local]
        return out


DEVICE_WINDOWS_FRACTION = 0.25
"""Largest share of a device's free memory :meth:`DeviceWindows.fits` lets a store's samples take."""


class DeviceWindows:
    """A store's samples copied once to a torch device, with windows gathered there by index arithmetic.

    The segments are laid end to end in one flat 1-D tensor, so an absolute start of the store's
    address space is also an offset into that tensor, and window ``b`` is
    ``flat[starts[b] : starts[b] + length]``: the same samples :meth:`SeriesStore.windows` gathers on
    the host, without the host gather and the host-to-device copy of every batch. It is also a
    :class:`WindowSource` (``locate`` and ``series`` are the store's), and :meth:`device_series` gives a
    series on the device, so the series-route models read their channels there without a copy.

    Parameters
    ----------
    store : SeriesStore
        Its segments are read once (memory-mapped ones page by page) and copied to ``device``.
    device : torch.device or str
    chunk : int
        Samples copied per host-to-device transfer (bounds the host memory of the copy).
    flat : Tensor, shape (n_samples,), float32, optional
        The store's samples already on ``device``, laid out as its address space (GPU scoring's series,
        preprocessed there): adopted as they are, nothing copied.

    Raises
    ------
    ValueError
        ``flat`` is not a float32 vector of the store's length on ``device``.
    """

    def __init__(self, store: SeriesStore, device, chunk: int = 1 << 24, *, flat=None):
        import torch

        check_positive_int("chunk", chunk)
        self.device = torch.device(device)
        self.store = store
        self.n_samples = store.n_samples
        if flat is not None:
            if (
                flat.dtype != torch.float32
                or tuple(flat.shape) != (self.n_samples,)
                or flat.device.type != self.device.type
                or self.device.index not in (None, flat.device.index)
            ):
                raise ValueError(
                    f"flat must be the store's samples on {self.device}: float32 of shape ({self.n_samples},); got "
                    f"{flat.dtype} of shape {tuple(flat.shape)} on {flat.device}."
                )
            self.flat = flat
        else:
            self.flat = torch.empty(self.n_samples, dtype=torch.float32, device=self.device)
            for k, segment in enumerate(store.segments):
                base = int(store.segment_starts[k])
                for lo in range(0, len(segment), chunk):
                    part = np.array(segment[lo : lo + chunk], dtype=np.float32)  # writable (memmaps are read-only)
                    self.flat[base + lo : base + lo + len(part)].copy_(torch.from_numpy(part))
        self.device = self.flat.device  # with its index ("cuda" becomes "cuda:0")

    def locate(self, starts: np.ndarray, length: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """:meth:`SeriesStore.locate` of the store."""
        return self.store.locate(starts, length)

    def series(self, i: int) -> np.ndarray:
        """:meth:`SeriesStore.series` of the store (on the host)."""
        return self.store.series(i)

    def device_series(self, i: int):
        """Samples of series ``i`` on the device: a view of :attr:`flat`, shape (length_i,), float32."""
        lo = int(self.store.offsets[i])
        return self.flat[lo : lo + int(self.store.lengths[i])]

    @staticmethod
    def fits(store: SeriesStore, device, fraction: float = DEVICE_WINDOWS_FRACTION) -> bool:
        """Whether the store's samples take at most ``fraction`` of ``device``'s free memory (always, off CUDA).

        Parameters
        ----------
        store : SeriesStore
        device : torch.device or str
        fraction : float
            Share of the free device memory (``torch.cuda.mem_get_info``) the samples may take.

        Returns
        -------
        bool
        """
        import torch

        device = torch.device(device)
        if device.type != "cuda":
            return True
        free, _ = torch.cuda.mem_get_info(device)
        return store.n_samples * 4 <= fraction * free

    def windows(self, starts, length: int):
        """Gather windows on the device.

        Parameters
        ----------
        starts : Tensor or ndarray, shape (B,), int64
            Absolute window starts in the store's address space (a tensor on this device avoids a copy).
        length : int
            Window length L; every window must lie inside the store (as for :meth:`SeriesStore.windows`).

        Returns
        -------
        windows : Tensor, shape (B, L), float32, on the device
            A new tensor, equal to ``SeriesStore.windows(starts, length)``.

        Raises
        ------
        ValueError
            When ``length`` exceeds the store's samples.
        """
        import torch

        check_positive_int("length", length)
        if length > self.n_samples:
            raise ValueError(f"Invalid length={length}: longer than the store's {self.n_samples} samples.")
        starts = torch.as_tensor(starts, dtype=torch.int64, device=self.device)
        return self.flat.unfold(0, length, 1)[starts]


@dataclass
class WindowIndex:
    """All windows of length ``window_length`` taken every ``stride`` samples of each series.

    Parameters
    ----------
    series : ndarray, shape (n_windows,), int64
        Series number of each window.
    start : ndarray, shape (n_windows,), int64
        Start sample of each window within its series.
    window_length : int
    """

    series: np.ndarray
    start: np.ndarray
    window_length: int

    @classmethod
    def build(
        cls,
        lengths: np.ndarray,
        window_length: int,
        stride: int,
        *,
        cover_end: bool = False,
    ) -> WindowIndex:
        """Slide a window over each series: series ``i`` gives ``floor((T_i - L) / S) + 1`` windows.

        Parameters
        ----------
        lengths : ndarray, shape (n_series,)
            Samples per series; series shorter than ``window_length`` give no windows.
        window_length, stride : int
        cover_end : bool
            Add one window ending at the last sample when the stride leaves a tail uncovered
            (inference uses it so the heat map reaches the end of the recording).
        """
        check_positive_int("window_length", window_length)
        check_positive_int("stride", stride)
        lengths = np.asarray(lengths, dtype=np.int64)
        counts = np.where(lengths >= window_length, (lengths - window_length) // stride + 1, 0)
        series = np.repeat(np.arange(len(lengths), dtype=np.int64), counts)
        first = np.concatenate([[0], np.cumsum(counts)[:-1]]) if len(counts) else counts
        start = (np.arange(len(series), dtype=np.int64) - np.repeat(first, counts)) * stride
        if cover_end:
            last_end = np.where(counts > 0, (counts - 1) * stride + window_length, lengths)
            tail = np.flatnonzero((counts > 0) & (last_end < lengths))
            if len(tail):
                series = np.concatenate([series, tail])
                start = np.concatenate([start, lengths[tail] - window_length])
                order = np.lexsort((start, series))
                series, start = series[order], start[order]
        return cls(series=series, start=start, window_length=window_length)

    def __len__(self) -> int:
        return len(self.series)

    def counts(self, n_series: int) -> np.ndarray:
        """Windows per series, shape (n_series,)."""
        return np.bincount(self.series, minlength=n_series)

    def absolute_starts(self, store: SeriesStore) -> np.ndarray:
        """Start of each window in the store's address space, shape (n_windows,), int64."""
        return store.offsets[self.series] + self.start

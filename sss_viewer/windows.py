"""Window index over one contiguous store of preprocessed series, and the SSS epoch sampler.

A window is a row ``(series, start)``; batches are gathered by index arithmetic from a single
1-D float32 store, so the dataset is never materialised as copies of overlapping windows
(braindecode's ``i_start_in_trial`` idea, without a per-item ``Dataset``).
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import numpy as np
import torch

from sss_viewer._validate import check_positive_int

logger = logging.getLogger(__name__)


@dataclass
class SeriesStore:
    """Variable-length univariate series concatenated into one contiguous float32 array.

    Parameters
    ----------
    data : ndarray, shape (n_samples_total,), float32
        All series back to back (may be a ``np.memmap``).
    offsets : ndarray, shape (n_series,), int64
        Start of each series in ``data``.
    lengths : ndarray, shape (n_series,), int64
        Number of samples of each series.
    """

    data: np.ndarray
    offsets: np.ndarray
    lengths: np.ndarray

    @classmethod
    def from_series(cls, series: Sequence[np.ndarray]) -> SeriesStore:
        """Concatenate 1-D arrays (each shape (n_i,)) into one store."""
        lengths = np.array([len(s) for s in series], dtype=np.int64)
        offsets = np.concatenate([[0], np.cumsum(lengths)[:-1]]).astype(np.int64) if len(series) else lengths
        data = np.concatenate([np.asarray(s, dtype=np.float32) for s in series]) if len(series) else np.zeros(0, np.float32)
        return cls(data=data, offsets=offsets, lengths=lengths)

    @property
    def n_series(self) -> int:
        """Number of series."""
        return len(self.lengths)

    def tensor(self) -> torch.Tensor:
        """The store as a CPU tensor sharing memory with ``data``, shape (n_samples_total,)."""
        return torch.from_numpy(np.ascontiguousarray(self.data))


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
        """Start of each window in the store's flat array, shape (n_windows,), int64."""
        return store.offsets[self.series] + self.start


def gather_windows(store: torch.Tensor, starts: torch.Tensor, length: int) -> torch.Tensor:
    """Gather windows from a flat store by index arithmetic.

    Parameters
    ----------
    store : Tensor, shape (n_samples_total,)
    starts : Tensor, shape (B,), int64
        Absolute start of each window in ``store``.
    length : int
        Window length L.

    Returns
    -------
    windows : Tensor, shape (B, L)
        ``store[starts[:, None] + arange(L)]`` (a new tensor; the store itself is not copied).
        Computed as a row selection from the strided view ``store.unfold(0, L, 1)``, which costs
        one copy of the B windows and no (B, L) index tensor.
    """
    return store.unfold(0, length, 1).index_select(0, starts.to(store.device))


def epoch_batches(n_windows: int, batch_size: int, generator: torch.Generator) -> Iterator[torch.Tensor]:
    """Algorithm 1's epoch: batches drawn uniformly without replacement until the pool is empty.

    Every window index in ``range(n_windows)`` appears in exactly one batch. A series with
    ``A_i`` windows contributes a hypergeometric count to each full batch, with mean
    ``B * A_i / sum_j A_j`` (the paper's Binomial is the with-replacement approximation).

    Parameters
    ----------
    n_windows : int
    batch_size : int
    generator : torch.Generator
        Seeded generator; the permutation is drawn on the CPU.

    Yields
    ------
    idx : Tensor, shape (B,) (the last batch may be smaller), int64
    """
    check_positive_int("batch_size", batch_size)
    perm = torch.randperm(n_windows, generator=generator)
    yield from torch.split(perm, batch_size)

"""Channel data that stays in the file until a block of it is asked for.

``LazySignals`` stands in for a recording's ``(n_channels, n_times)`` float32 array when a file is
opened with ``preload=False``: indexing with a channel *and* a time range reads just that block
through MNE (converted to µV), indexing with channels alone returns another lazy view, and
``np.asarray`` reads the whole thing (block by block, once). So a multi-hour file can be shown a
page at a time or preprocessed channel group by channel group without pulling it into RAM.

Samples are scaled and, where a channel sits on a large constant level, shifted by that level
(``offset``) in float64 before they become float32: float32 keeps 24 bits, so a 1e9 µV level plus
10 µV of signal would otherwise be rounded to a few distinct values (:func:`dc_offsets` decides).

Internal to the stage: not part of the public API (:mod:`sss_viewer.io`'s ``__all__``, ``docs/api.md``).
"""

from __future__ import annotations

import logging
from pathlib import Path

import numpy as np

logger = logging.getLogger(__name__)

_BLOCK_VALUES = 4_000_000
"""Values read per MNE call when a large block is requested (≈ 32 MB of float64 temporaries)."""

OFFSET_LIMIT_UV = 1e5
"""Channel level (µV) above which the level is removed before float32 conversion.

At 1e5 µV float32 values are 0.008 µV apart; further up the spacing grows towards the size of
iEEG signals (0.06 µV at 1e6, 64 µV at 1e9), which no physiological level reaches.
"""

_PROBE_POSITIONS = 5
_PROBE_SAMPLES = 200
"""Where :func:`probe_levels` reads: this many samples at each of this many evenly spaced places."""


def dc_offsets(levels: np.ndarray, limit: float = OFFSET_LIMIT_UV) -> np.ndarray:
    """The offsets to subtract: a channel's level where its magnitude exceeds ``limit``, else 0.

    Parameters
    ----------
    levels : ndarray, shape (n_channels,), float64
        Typical value of each channel in µV (e.g. a median from :func:`probe_levels`).
    limit : float
        Levels up to this magnitude are kept (the data stay exactly as stored).

    Returns
    -------
    offsets : ndarray, shape (n_channels,), float64
    """
    levels = np.asarray(levels, dtype=np.float64)
    return np.where(np.isfinite(levels) & (np.abs(levels) > limit), levels, 0.0)


def probe_slices(n_times: int) -> list[slice]:
    """Short stretches spread evenly across ``n_times`` samples where a channel's level is measured."""
    length = min(_PROBE_SAMPLES, n_times)
    starts = np.unique(np.linspace(0, n_times - length, _PROBE_POSITIONS).astype(int))
    return [slice(int(s), int(s) + length) for s in starts]


def array_levels(data: np.ndarray) -> np.ndarray:
    """:func:`probe_levels` of an in-memory ``(n_channels, n_times)`` array, in float64."""
    blocks = [np.asarray(data[:, s], dtype=np.float64) for s in probe_slices(data.shape[1])]
    with np.errstate(invalid="ignore"):
        return np.nanmedian(np.concatenate(blocks, axis=1), axis=1)


def probe_levels(raw, picks: np.ndarray, scale: np.ndarray) -> np.ndarray:
    """Median of each picked channel over a few short stretches spread across the file, in float64.

    Parameters
    ----------
    raw : mne.io.BaseRaw
    picks : ndarray, shape (n_channels,), int
    scale : ndarray, shape (n_channels,), float

    Returns
    -------
    levels : ndarray, shape (n_channels,), float64
    """
    blocks = [raw.get_data(picks=picks, start=s.start, stop=s.stop) for s in probe_slices(int(raw.n_times))]
    with np.errstate(invalid="ignore"):
        return np.nanmedian(np.concatenate(blocks, axis=1), axis=1) * np.asarray(scale, dtype=np.float64)


class LazySignals:
    """A read-only, lazily read ``(n_channels, n_times)`` float32 µV view of an MNE ``Raw``.

    Parameters
    ----------
    raw : mne.io.BaseRaw
        The opened file (``preload=False``); only ``get_data`` is used.
    picks : ndarray, shape (n_channels,), int
        Channel indices of ``raw`` in this view.
    scale : ndarray, shape (n_channels,), float
        Factor from the file's units to the recording's (1e6 for volts → µV, 1 otherwise).
    source : Path, optional
        The file, for messages.
    offset : ndarray, shape (n_channels,), float, optional
        Level (in the recording's units) subtracted in float64 after scaling; default 0.
    """

    ndim = 2
    dtype = np.dtype(np.float32)

    def __init__(
        self, raw, picks: np.ndarray, scale: np.ndarray, source: Path | None = None, offset: np.ndarray | None = None
    ):
        self._raw = raw
        self._picks = np.asarray(picks, dtype=int)
        self._scale = np.asarray(scale, dtype=np.float64)
        self._offset = np.zeros(len(self._picks)) if offset is None else np.asarray(offset, dtype=np.float64)
        if not self._picks.shape == self._scale.shape == self._offset.shape:
            raise ValueError(
                f"picks {self._picks.shape}, scale {self._scale.shape} and offset {self._offset.shape} "
                "must have the same shape."
            )
        self.source = source

    @property
    def offset(self) -> np.ndarray:
        """Level subtracted from each channel before float32 conversion, shape (n_channels,), float64."""
        return self._offset.copy()

    @property
    def shape(self) -> tuple[int, int]:
        """``(n_channels, n_times)``."""
        return (len(self._picks), int(self._raw.n_times))

    @property
    def nbytes(self) -> int:
        """Bytes the view would take as a float32 array."""
        return self.shape[0] * self.shape[1] * 4

    def __len__(self) -> int:
        return len(self._picks)

    def __repr__(self) -> str:
        return f"LazySignals(shape={self.shape}, source={self.source})"

    def read(self, rows=None, start: int = 0, stop: int | None = None) -> np.ndarray:
        """Read channels ``rows`` (of this view) over samples ``[start, stop)`` as float32 µV.

        Parameters
        ----------
        rows : int, slice, sequence of int or None
            Rows of this view; ``None`` for all.
        start, stop : int
            Sample range; ``stop=None`` is the end.

        Returns
        -------
        data : ndarray, shape (n_rows, stop - start), float32
        """
        idx = np.arange(len(self._picks))[slice(None) if rows is None else rows]
        idx = np.atleast_1d(idx)
        n_times = self.shape[1]
        stop = n_times if stop is None else int(stop)
        start = int(start)
        if not 0 <= start <= stop <= n_times:
            raise IndexError(
                f"Sample range [{start}, {stop}) is outside 0…{n_times} of {self.source or 'the recording'}."
            )
        out = np.empty((len(idx), stop - start), dtype=np.float32)
        if len(idx) == 0 or stop == start:
            return out
        picks, scale, offset = self._picks[idx], self._scale[idx][:, None], self._offset[idx][:, None]
        block = max(1, _BLOCK_VALUES // len(idx))
        for lo in range(start, stop, block):
            hi = min(lo + block, stop)
            try:
                values = self._raw.get_data(picks=picks, start=lo, stop=hi)
            except (OSError, ValueError) as exc:
                raise OSError(f"Could not read samples {lo}…{hi} of {self.source or 'the recording'}: {exc}") from exc
            out[:, lo - start : hi - start] = values * scale - offset  # float64 until assigned
        return out

    def __getitem__(self, key):
        if isinstance(key, tuple):
            if len(key) != 2:
                raise IndexError(f"LazySignals takes [channels] or [channels, samples]; got {len(key)} indices.")
            rows, times = key
            if isinstance(times, int | np.integer):
                times = (
                    slice(int(times), int(times) + 1)
                    if times >= 0
                    else slice(self.shape[1] + int(times), self.shape[1] + int(times) + 1)
                )
                squeeze_time = True
            else:
                squeeze_time = False
            if not isinstance(times, slice) or times.step not in (None, 1):
                raise IndexError("LazySignals reads contiguous sample ranges only (a slice with step 1).")
            start, stop, _ = times.indices(self.shape[1])
            data = self.read(rows, start, max(start, stop))
            if isinstance(rows, int | np.integer):
                data = data[0]
            return data[..., 0] if squeeze_time else data
        if isinstance(key, int | np.integer):
            return self.read(int(key))[0]
        idx = np.atleast_1d(np.arange(len(self._picks))[key])
        return LazySignals(self._raw, self._picks[idx], self._scale[idx], self.source, self._offset[idx])

    def __array__(self, dtype=None, copy=None):
        logger.info("Reading all of %s into memory (%.1f MB).", self.source or "the recording", self.nbytes / 1e6)
        data = self.read()
        return data if dtype is None else data.astype(dtype, copy=False)

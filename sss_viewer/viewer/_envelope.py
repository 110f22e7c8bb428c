"""The trace view's arithmetic: which samples to read, min/max envelopes, row offsets and scales.

Arrays in, arrays out (numpy; datashader only to rasterise envelopes into pixels): no HoloViews,
Bokeh or Panel, and no recording. :class:`sss_viewer.viewer._trace_data.TraceData` reads the signals
and calls these; :mod:`sss_viewer.viewer._trace_elements` turns the results into plot elements.

Data flow of one drawn window:

1. :func:`sample_range` — the samples ``[start, stop)`` of the window; :func:`filter_margin_samples`
   — how far beyond them to read so the display filters have no edge effects.
2. Zoomed out, :func:`chunked_envelope` reads the window in blocks of at most ``CHUNK_VALUES``
   values and reduces each to per-bin minima and maxima (:func:`minmax_envelope`); a cached
   whole-recording envelope fine enough is coarsened instead (:func:`rebin_envelope`).
3. :func:`row_units` puts row ``k`` of ``n`` slots at ``y = n − 1 − k`` with its half-row
   amplitude as ±0.5 (after :func:`sss_viewer.viewer._display.clip_envelope` with
   :func:`clip_limits`), and :func:`rasterise_envelopes` draws them into one RGBA image.

The automatic amplitude is measured over :func:`scale_window` on :func:`scale_rows`; the scale bar
has the length :func:`nice_scale`.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
import pandas as pd

from sss_viewer.viewer._display import MontageRows

CHUNK_VALUES = 1 << 24
"""Samples × channels read per block when reducing a long range to its envelope (64 MB float32)."""
MAX_FILTER_MARGIN_S = 10.0
"""Longest stretch read beyond each end of a block for the display filters to settle (s)."""
CLIP_ROWS = 0.75
"""With clipping on, a row shows at most ±``CLIP_ROWS`` row spacings (±2·CLIP_ROWS × its half-row amplitude)."""
SCALE_MAX_ROWS = 64
"""Rows (evenly spaced over the montage) read to set the automatic amplitude."""
SCALE_MIN_S = 10.0
"""The automatic amplitude is measured over at least this much of the recording from the view's start."""


# --------------------------------------------------------------------------------------------
# What to read
# --------------------------------------------------------------------------------------------


def sample_range(t0: float, t1: float, sfreq: float, n_times: int) -> tuple[int, int]:
    """Samples ``[start, stop)`` covering the window ``[t0, t1]`` s (at least one, within the recording)."""
    start = int(np.clip(math.floor(t0 * sfreq), 0, n_times - 1))
    stop = int(np.clip(math.ceil(t1 * sfreq) + 1, start + 1, n_times))
    return start, stop


def filter_margin_samples(
    sfreq: float, highpass_hz: float | None, lowpass_hz: float | None, notch_hz: float | None
) -> int:
    """Samples read beyond each end of a block so the zero-phase display filters have no edge effects there.

    Three periods of the high-pass, twenty of the low-pass, one second for a notch; at most
    ``MAX_FILTER_MARGIN_S``. 0 without filters.
    """
    seconds = 0.0
    if highpass_hz:
        seconds = max(seconds, 3.0 / highpass_hz)
    if lowpass_hz:
        seconds = max(seconds, 20.0 / lowpass_hz)
    if notch_hz:
        seconds = max(seconds, 1.0)
    return math.ceil(min(seconds, MAX_FILTER_MARGIN_S) * sfreq)


# --------------------------------------------------------------------------------------------
# Amplitude scale
# --------------------------------------------------------------------------------------------


def scale_window(t0: float, t1: float, sfreq: float, n_times: int, min_s: float = SCALE_MIN_S) -> tuple[int, int]:
    """Samples ``[start, stop)`` the automatic amplitude is measured on: the window, at least ``min_s`` long.

    Read from the window's start; near the end of the recording, its last stretch of that length.
    """
    seconds = max(t1 - t0, min_s)
    length = max(2, math.ceil(seconds * sfreq))
    stop = int(min(n_times, max(0, math.floor(t0 * sfreq)) + length))
    start = max(0, stop - length)
    return start, stop


def scale_rows(rows: MontageRows, max_rows: int = SCALE_MAX_ROWS) -> MontageRows:
    """At most ``max_rows`` rows of ``rows``, evenly spaced (what the automatic amplitude is measured on)."""
    if len(rows) <= max_rows:
        return rows
    keep = np.unique(np.linspace(0, len(rows) - 1, max_rows).round().astype(int))
    return MontageRows(
        [rows.labels[i] for i in keep], [rows.members[i] for i in keep], [rows.shafts[i] for i in keep], rows.kind
    )


def nice_scale(value: float) -> float:
    """The largest 1, 2 or 5 × 10^k not above ``value`` (a scale-bar length)."""
    if not np.isfinite(value) or value <= 0:
        return 1.0
    exponent = math.floor(math.log10(value))
    for mantissa in (5.0, 2.0, 1.0):
        if mantissa * 10**exponent <= value * (1 + 1e-9):
            return mantissa * 10**exponent
    return 10.0 ** (exponent - 1) * 5


def clip_limits(amplitudes: np.ndarray) -> np.ndarray:
    """Largest excursion drawn per row (µV): ``CLIP_ROWS`` row spacings of each row's half-row amplitude."""
    return CLIP_ROWS * 2.0 * amplitudes


# --------------------------------------------------------------------------------------------
# Min/max envelopes
# --------------------------------------------------------------------------------------------


def minmax_envelope(data: np.ndarray, offsets: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per-bin minimum and maximum of each row.

    Parameters
    ----------
    data : ndarray, shape (n_rows, n_times)
    offsets : ndarray of int, shape (n_bins,)
        Start sample of each bin (increasing, first 0, all < n_times); a bin runs to the next start.

    Returns
    -------
    lo, hi : ndarray, shape (n_rows, n_bins), same dtype as ``data``
    """
    return np.minimum.reduceat(data, offsets, axis=1), np.maximum.reduceat(data, offsets, axis=1)


def chunked_envelope(
    read: Callable[[int, int], np.ndarray], start: int, stop: int, n_bins: int, *, n_rows: int, n_channels: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per-bin min/max of ``read(a, b)`` over ``[start, stop)``, read in blocks of whole bins.

    Parameters
    ----------
    read : callable
        ``read(a, b)`` → the rows over samples ``[a, b)``, shape (n_rows, b − a).
    start, stop : int
        Samples.
    n_bins : int
        Bins wanted (at most ``stop - start``).
    n_rows : int
        Rows ``read`` returns.
    n_channels : int
        Channels one sample of a block reads: a block is at most ``CHUNK_VALUES // n_channels`` samples
        (or one bin, when a bin is longer).

    Returns
    -------
    edges : ndarray, shape (n_bins + 1,), int
        Bin edges in samples.
    lo, hi : ndarray, shape (n_rows, n_bins), float32
    """
    n_bins = max(1, min(int(n_bins), stop - start))
    edges = np.unique(np.linspace(start, stop, n_bins + 1).round().astype(np.int64))
    n_bins = len(edges) - 1
    lo = np.empty((n_rows, n_bins), dtype=np.float32)
    hi = np.empty((n_rows, n_bins), dtype=np.float32)
    per_block = max(1, CHUNK_VALUES // max(1, n_channels))
    j = 0
    while j < n_bins:
        j1 = int(np.searchsorted(edges, edges[j] + per_block, side="right")) - 1
        j1 = min(max(j1, j + 1), n_bins)
        block = read(int(edges[j]), int(edges[j1]))
        lo[:, j:j1], hi[:, j:j1] = minmax_envelope(block, edges[j:j1] - edges[j])
        j = j1
    return edges, lo, hi


def rebin_envelope(
    edges: np.ndarray, lo: np.ndarray, hi: np.ndarray, start: int, stop: int, n_bins: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """Coarsen a cached min/max envelope to ``n_bins`` bins over samples ``[start, stop)``.

    Uses the cached bins that lie inside the range (the partial bins at its ends are dropped,
    less than one cached bin each).

    Parameters
    ----------
    edges : ndarray, shape (n_cached + 1,), int
        Cached bin edges in samples.
    lo, hi : ndarray, shape (n_rows, n_cached)
    start, stop : int
    n_bins : int

    Returns
    -------
    (edges, lo, hi) with ``n_bins`` bins or fewer, or None when the cache holds fewer bins than
    ``n_bins`` over the range (too coarse: read the signals instead).
    """
    j0 = int(np.searchsorted(edges, start, side="left"))
    j1 = int(np.searchsorted(edges, stop, side="right")) - 1
    if j1 - j0 < n_bins:
        return None
    groups = np.unique(np.linspace(j0, j1, n_bins + 1).round().astype(np.int64))
    return (
        edges[groups],
        np.minimum.reduceat(lo[:, j0:j1], groups[:-1] - j0, axis=1),
        np.maximum.reduceat(hi[:, j0:j1], groups[:-1] - j0, axis=1),
    )


# --------------------------------------------------------------------------------------------
# Rows on the plot
# --------------------------------------------------------------------------------------------


def bin_centres(edges: np.ndarray, sfreq: float) -> np.ndarray:
    """Centre (s) of each envelope bin ``[edges[j], edges[j + 1])`` of samples, shape (n_bins,)."""
    return (edges[:-1] + edges[1:] - 1) / 2.0 / sfreq


def row_units(lo: np.ndarray, hi: np.ndarray, amplitudes: np.ndarray, n_slots: int) -> tuple[np.ndarray, np.ndarray]:
    """Envelopes in row units: row ``k`` centred on ``y = n_slots − 1 − k``, its half-row amplitude 0.5.

    Parameters
    ----------
    lo, hi : ndarray, shape (n_rows, n_bins)
        µV, centred (and clipped) per row.
    amplitudes : ndarray, shape (n_rows,)
        Half-row amplitude of each row (µV).
    n_slots : int
        Row slots of the plot (at least n_rows); the first row is at the top.

    Returns
    -------
    lo, hi : ndarray, shape (n_rows, n_bins)
    """
    k = (n_slots - 1 - np.arange(len(amplitudes)))[:, None]
    scale = 1.0 / (2.0 * amplitudes[:, None])
    return k + lo * scale, k + hi * scale


def rasterise_envelopes(
    centres: np.ndarray,
    lo: np.ndarray,
    hi: np.ndarray,
    x_range: tuple[float, float],
    n_rows: int,
    width: int,
    height: int,
    colours: list[str],
) -> np.ndarray:
    """Draw per-row min/max envelopes as lines with ``datashader.Canvas.line``.

    Parameters
    ----------
    centres : ndarray, shape (n_bins,)
        Bin centres (s).
    lo, hi : ndarray, shape (n_rows, n_bins)
        Envelopes already in row units (row ``k`` centred on ``y = k``, 0 at the bottom).
    x_range : (float, float)
    n_rows : int
        The canvas spans ``y`` ∈ [−0.5, n_rows − 0.5].
    width, height : int
        Pixels.
    colours : list of str, length n_rows
        Hex colour per row; rows sharing a colour are drawn in one pass.

    Returns
    -------
    rgba : ndarray, shape (height, width, 4), uint8
        Image row 0 at the top (as ``hv.RGB`` expects); transparent where no line passes.
    """
    import datashader as ds

    pixels = np.zeros((height, width), dtype=np.uint32)  # RGBA bytes seen as one uint32 per pixel
    if lo.size == 0:
        return pixels.view(np.uint8).reshape(height, width, 4)
    canvas = ds.Canvas(plot_width=width, plot_height=height, x_range=x_range, y_range=(-0.5, n_rows - 0.5))
    n_bins = lo.shape[1]
    x = np.empty(2 * n_bins + 1)
    x[0 : 2 * n_bins : 2] = centres
    x[1 : 2 * n_bins : 2] = centres
    x[-1] = np.nan  # breaks the line between rows
    for colour in dict.fromkeys(colours):
        idx = [i for i, c in enumerate(colours) if c == colour]
        y = np.empty((len(idx), 2 * n_bins + 1))
        y[:, 0 : 2 * n_bins : 2] = lo[idx]
        y[:, 1 : 2 * n_bins : 2] = hi[idx]
        y[:, -1] = np.nan
        frame = pd.DataFrame({"x": np.tile(x, len(idx)), "y": y.ravel()})
        hit = canvas.line(frame, "x", "y", agg=ds.any()).to_numpy()[::-1]
        rgba = np.array([int(colour[i : i + 2], 16) for i in (1, 3, 5)] + [255], dtype=np.uint8)
        pixels[hit] = rgba.view(np.uint32)[0]
    return pixels.view(np.uint8).reshape(height, width, 4)

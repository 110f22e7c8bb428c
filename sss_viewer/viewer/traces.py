"""Stacked iEEG traces with the SOZ heat map underneath: :class:`TraceView`.

What is drawn
-------------
One row per montage row of the page's contacts, first row at the top. Under the traces, an
``hv.Image`` of the binned calibrated window probabilities (p(SOZ), colour range fixed at 0–1),
aligned row-for-row with the traces and second-for-second with the time axis. Below, a datashaded
overview of the page over the whole recording with a range tool that moves the main view.

How it stays fast
-----------------
* Only the visible block (plus a filter margin) is read with ``Recording.get_data``; long blocks
  are read in chunks and reduced to a per-bin min/max envelope on the way.
* Zoomed in (span ≤ ``datashade_above_s`` and at most ``max_curve_rows`` rows): one ``hv.Curve``
  per row on ``subcoordinate_y`` axes, each decimated with MinMax-LTTB to about two points per
  pixel. Zoomed out, or pages with many rows: the per-row min/max envelopes are rasterised with
  ``datashader.Canvas.line`` into one RGBA image, so a 128-channel, 10-min, 1 kHz page is a single
  image however many samples it has.
* The overview reads the page once per page/montage into a fine min/max envelope (8 bins per
  pixel); unfiltered views spanning at least a quarter of the recording are drawn from it without
  reading the file again.
* A ``hv.DynamicMap`` driven by a ``RangeX`` stream (bokeh zoom/pan) and by this object's
  ``start_s/span_s`` and display parameters re-reads and re-decimates the visible range server-side.
  Parameters that change what the rows are (recording, montage, page, …) rebuild the figure.

Everything is per instance (streams, caches, widgets), so each browser session has its own state.
"""

from __future__ import annotations

import logging
import math
import warnings
from dataclasses import dataclass

import holoviews as hv
import numpy as np
import pandas as pd
import panel as pn
import param
from bokeh.models import CustomJSHover

from sss_viewer.inference import RecordingScores, window_heatmap
from sss_viewer.recording import Recording
from sss_viewer.viewer.display import (
    MONTAGES,
    MontageRows,
    apply_montage,
    decimate_minmax_lttb,
    display_filter,
    group_by_shaft,
    heatmap_rows,
    montage_rows,
    shaft_name,
)
from sss_viewer.viewer.timecourse import SozTimeCourse, ensure_bokeh, infer_bin_s

logger = logging.getLogger(__name__)

MARKER_KINDS = ("onset", "offset", "note", "event")
MARKER_COLOURS = {"onset": "#2ca02c", "offset": "#d62728", "note": "#7f7f7f", "event": "#1f77b4"}
SPAN_CHOICES_S = (1.0, 2.0, 5.0, 10.0, 20.0, 30.0, 60.0, 120.0, 300.0, 600.0, 1200.0, 3600.0)
TRACE_COLOUR = "#202020"
FOCUS_COLOUR = "#c2185b"
HEAT_CMAP = "YlOrRd"
CHUNK_VALUES = 1 << 24
"""Samples × channels read per block when reducing a long range to its envelope (64 MB float32)."""
MAX_FILTER_MARGIN_S = 10.0
OVERVIEW_BINS_PER_PX = 8
"""Resolution of the cached whole-recording envelope (bins per pixel of plot width): zoomed-out
views whose span needs at most 1/4 of it (with no display filter) are drawn from it without reading."""

_ViewEvent = hv.streams.Stream.define("TraceWindow", window=(0.0, 10.0), version=0)
"""Per-figure stream: the visible window set from the widgets, and a counter bumped on display changes."""


# --------------------------------------------------------------------------------------------
# Plain helpers (arrays in, arrays out)
# --------------------------------------------------------------------------------------------


def binned_interval(
    scores: RecordingScores, bin_s: float, channels: list[str]
) -> tuple[np.ndarray, np.ndarray]:
    """Bin-average the Venn–Abers bounds ``p0``/``p1`` exactly as ``RecordingScores.heatmap`` does ``p_cal``.

    Parameters
    ----------
    scores : RecordingScores
    bin_s : float
        Bin width in seconds.
    channels : list of str, length n_channels
        Row order of the result.

    Returns
    -------
    p0, p1 : ndarray, shape (n_channels, n_bins), float64
        NaN where no window covers a bin.
    """
    windows = scores.windows
    out = []
    for column in ("p0", "p1"):
        table = pd.DataFrame(
            {
                "channel": windows["channel"].to_numpy(),
                "start_s": windows["start_s"].to_numpy(),
                "end_s": windows["end_s"].to_numpy(),
                "p_cal": windows[column].to_numpy(),
            }
        )
        out.append(window_heatmap(table, channels, scores.duration_s, bin_s)[0])
    return out[0], out[1]


def nice_scale(value: float) -> float:
    """The largest 1, 2 or 5 × 10^k not above ``value`` (a scale-bar length)."""
    if not np.isfinite(value) or value <= 0:
        return 1.0
    exponent = math.floor(math.log10(value))
    for mantissa in (5.0, 2.0, 1.0):
        if mantissa * 10**exponent <= value * (1 + 1e-9):
            return mantissa * 10**exponent
    return 10.0 ** (exponent - 1) * 5


def auto_amplitude(recording: Recording, picks: np.ndarray, seconds: float = 10.0) -> float:
    """Display amplitude (µV per half row): 3 × the median channel SD over the first ``seconds``.

    Parameters
    ----------
    recording : Recording
    picks : ndarray of int, shape (n_picks,)
        Channels to measure (the good iEEG channels).
    seconds : float

    Returns
    -------
    amplitude : float
        Rounded to two significant digits; 100 µV when the channels are flat or there are none.
    """
    if len(picks) == 0:
        return 100.0
    stop = min(recording.n_times, max(2, int(seconds * recording.sfreq)))
    block = recording.get_data(picks, 0, stop).astype(np.float64)
    sd = np.nanstd(block - np.nanmedian(block, axis=1, keepdims=True), axis=1)
    sd = sd[np.isfinite(sd) & (sd > 0)]
    if not len(sd):
        return 100.0
    value = 3.0 * float(np.median(sd))
    return float(f"{value:.2g}")


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


@dataclass(frozen=True)
class ReadPlan:
    """What to read for a page: recording channel ``picks`` and the page rows over them.

    ``rows.members`` index into ``picks``; ``average`` says the reference is the mean of all picks
    (the good iEEG channels) rather than nothing.
    """

    picks: np.ndarray
    rows: MontageRows
    average: bool


# --------------------------------------------------------------------------------------------
# The component
# --------------------------------------------------------------------------------------------


class TraceView(pn.viewable.Viewer):
    """Stacked iEEG traces by shaft, with the p(SOZ) heat map underneath and an overview strip.

    Rows are the recording's good iEEG channels (``recording.ieeg_picks()`` minus
    ``bad_channels``, which are hidden) grouped by shaft, as rows of ``montage``, ``page_size`` per
    page. Use :meth:`figure` for the HoloViews object (export) and :meth:`state` for a caption.
    """

    recording = param.ClassSelector(class_=Recording, default=None, allow_None=True, doc="The recording shown.")
    scores = param.ClassSelector(
        class_=RecordingScores, default=None, allow_None=True, doc="Window scores for the heat map (optional)."
    )
    montage = param.Selector(objects=list(MONTAGES), default="monopolar", doc="monopolar, average or bipolar.")
    start_s = param.Number(default=0.0, bounds=(0, None), doc="Left edge of the visible window (s).")
    span_s = param.Number(
        default=10.0, bounds=(0, None), inclusive_bounds=(False, True), doc="Width of the visible window (s)."
    )
    page = param.Integer(default=0, bounds=(0, None), doc="Channel page (0-based).")
    page_size = param.Integer(default=16, bounds=(1, None), doc="Rows per channel page.")
    amplitude_uv = param.Number(
        default=None,
        allow_None=True,
        bounds=(0, None),
        inclusive_bounds=(False, True),
        doc="µV per half row (every row shows ±amplitude/gain); None = 3 × the median channel SD.",
    )
    shaft_gain = param.Dict(default={}, doc="Per-shaft gain: shaft → multiplier (a row shows ±amplitude/gain).")
    highpass_hz = param.Number(default=None, allow_None=True, bounds=(0, None), doc="Display high-pass (Hz).")
    lowpass_hz = param.Number(default=None, allow_None=True, bounds=(0, None), doc="Display low-pass (Hz).")
    notch_hz = param.Number(default=None, allow_None=True, bounds=(0, None), doc="Display notch and harmonics (Hz).")
    heat_opacity = param.Number(default=0.5, bounds=(0, 1), doc="Opacity of the heat map.")
    show_heatmap = param.Boolean(default=True, doc="Draw the p(SOZ) heat map under the traces.")
    bad_channels = param.List(default=[], item_type=str, doc="Channels hidden (and left out of the average).")
    markers = param.List(
        default=[], item_type=dict, doc="Annotations {onset, duration, description, kind}; kind in onset/offset/note/event."
    )
    focus_channel = param.String(default=None, allow_None=True, doc="Channel to show and highlight.")
    bin_s = param.Number(
        default=None,
        allow_None=True,
        bounds=(0, None),
        inclusive_bounds=(False, True),
        doc="Heat-map bin (s); None = the scores' window stride.",
    )
    datashade_above_s = param.Number(default=60.0, bounds=(0, None), doc="Spans longer than this are datashaded.")
    max_curve_rows = param.Integer(
        default=32, bounds=(1, None), doc="Pages with more rows are always datashaded (a curve per row costs ~5 ms)."
    )
    plot_width = param.Integer(default=1000, bounds=(200, None), doc="Width of the plot area (px).")
    row_height = param.Integer(default=30, bounds=(4, None), doc="Height per row (px), within 240–900 px in all.")
    show_overview = param.Boolean(default=True, doc="Draw the whole-recording overview with its range tool.")
    timecourse = param.ClassSelector(
        class_=SozTimeCourse, default=None, allow_None=True, doc="A time course drawn under the traces on the same time axis."
    )

    _STRUCTURE = (
        "recording",
        "scores",
        "montage",
        "page",
        "page_size",
        "bad_channels",
        "markers",
        "focus_channel",
        "bin_s",
        "datashade_above_s",
        "max_curve_rows",
        "plot_width",
        "row_height",
        "show_overview",
        "timecourse",
    )
    _DISPLAY = ("amplitude_uv", "shaft_gain", "highpass_hz", "lowpass_hz", "notch_hz", "heat_opacity", "show_heatmap")

    def __init__(self, **params):
        self._syncing = False
        self._figure = None
        self._main = None
        self._stream = None
        self._range = None
        self._last_x_range = None
        self._last_good = None
        self._panel = None
        self._pane = None
        self._alert = None
        self._heat_cache = {}
        self._overview_cache = {}
        self._main_opts = None
        self._notice = ""
        super().__init__(**params)
        if self.recording is not None and self.amplitude_uv is None:
            self.amplitude_uv = auto_amplitude(self.recording, self.contact_picks())
        if self.focus_channel:
            self._go_to_focus()
        self._clamp_page()
        self._timecourse_watcher = None
        self._watch_timecourse(self.timecourse)
        self.param.watch(self._on_recording, ["recording"])
        self.param.watch(self._on_timecourse, ["timecourse"])
        self.param.watch(self._on_focus, ["focus_channel", "montage", "bad_channels"])
        self.param.watch(self._on_structure, list(self._STRUCTURE))
        self.param.watch(self._on_window, ["start_s", "span_s"])
        self.param.watch(self._on_display, list(self._DISPLAY))

    # ---------------------------------------------------------------- rows and pages

    def contact_picks(self) -> np.ndarray:
        """Recording indices of the shown contacts: good iEEG channels minus ``bad_channels``, grouped by shaft.

        Returns
        -------
        picks : ndarray, shape (n_contacts,), int
        """
        if self.recording is None:
            return np.zeros(0, dtype=int)
        bad = set(self.bad_channels)
        picks = [int(i) for i in self.recording.ieeg_picks() if self.recording.ch_names[i] not in bad]
        names = [self.recording.ch_names[i] for i in picks]
        return np.array([picks[i] for idx in group_by_shaft(names).values() for i in idx], dtype=int)

    def contacts(self) -> list[str]:
        """Names of the shown contacts, in display order (shafts contiguous)."""
        return [self.recording.ch_names[i] for i in self.contact_picks()] if self.recording is not None else []

    def rows(self) -> MontageRows:
        """All rows of the montage over :meth:`contacts` (``members`` index into that list)."""
        return montage_rows(self.contacts(), self.montage)

    @property
    def n_pages(self) -> int:
        """Number of channel pages."""
        return max(1, math.ceil(len(self.rows()) / self.page_size))

    def page_rows(self) -> MontageRows:
        """The rows of the current page, top to bottom (``members`` index into :meth:`contacts`)."""
        rows = self.rows()
        lo = min(self.page, self.n_pages - 1) * self.page_size
        sl = slice(lo, lo + self.page_size)
        return MontageRows(rows.labels[sl], rows.members[sl], rows.shafts[sl], rows.kind)

    def shafts(self) -> list[str]:
        """Shafts of the shown contacts, in display order."""
        return list(dict.fromkeys(shaft_name(c) for c in self.contacts()))

    def row_amplitudes(self, rows: MontageRows | None = None) -> np.ndarray:
        """Half-row amplitude of each row, ``amplitude_uv / shaft_gain[shaft]`` (µV), shape (n_rows,)."""
        rows = self.page_rows() if rows is None else rows
        base = self.amplitude_uv or 100.0
        gains = self.shaft_gain or {}
        return np.array([base / float(gains.get(s, 1.0) or 1.0) for s in rows.shafts], dtype=np.float64)

    def _clamp_page(self) -> None:
        if self.page > self.n_pages - 1:
            self.page = self.n_pages - 1

    def _focus_row(self, rows: MontageRows | None = None) -> int | None:
        """Index in ``rows`` (default: all rows) of the first row made from ``focus_channel``."""
        if not self.focus_channel:
            return None
        rows = self.rows() if rows is None else rows
        contacts = self.contacts()
        if self.focus_channel not in contacts:
            return None
        target = contacts.index(self.focus_channel)
        for r, members in enumerate(rows.members):
            if target in members:
                return r
        return None

    def _go_to_focus(self) -> None:
        row = self._focus_row()
        if row is None:
            if self.focus_channel:
                logger.warning("Focus channel %r is not a shown iEEG channel of this recording.", self.focus_channel)
                self._notice = f"Channel {self.focus_channel!r} is not shown (not a good iEEG channel of this recording)."
                self._show_error(self._notice)
            return
        page = row // self.page_size
        if page != self.page:
            self.page = page

    # ---------------------------------------------------------------- time

    @property
    def duration_s(self) -> float:
        """Length of the recording (s); 0 without one."""
        return self.recording.duration_s if self.recording is not None else 0.0

    def window(self) -> tuple[float, float]:
        """The visible window ``(t0, t1)`` in s, clipped to the recording."""
        duration = self.duration_s or self.span_s
        span = min(self.span_s, duration)
        t0 = min(max(0.0, self.start_s), max(0.0, duration - span))
        return float(t0), float(t0 + span)

    def effective_bin_s(self) -> float:
        """Heat-map bin: ``bin_s``, else the scores' window stride, else 1 s."""
        return float(self.bin_s) if self.bin_s else infer_bin_s(self.scores)

    def _margin_samples(self) -> int:
        seconds = 0.0
        if self.highpass_hz:
            seconds = max(seconds, 3.0 / self.highpass_hz)
        if self.lowpass_hz:
            seconds = max(seconds, 20.0 / self.lowpass_hz)
        if self.notch_hz:
            seconds = max(seconds, 1.0)
        return int(math.ceil(min(seconds, MAX_FILTER_MARGIN_S) * self.recording.sfreq))

    # ---------------------------------------------------------------- reading

    def read_plan(self, rows: MontageRows | None = None) -> ReadPlan:
        """Which channels to read for ``rows`` (default the page's), with the rows re-indexed onto them."""
        rows = self.page_rows() if rows is None else rows
        picks = self.contact_picks()
        if rows.kind == "average":
            return ReadPlan(picks, rows, True)
        needed = list(dict.fromkeys(m for members in rows.members for m in members))
        local = {m: i for i, m in enumerate(needed)}
        local_rows = MontageRows(rows.labels, [tuple(local[m] for m in ms) for ms in rows.members], rows.shafts, rows.kind)
        return ReadPlan(picks[needed] if needed else picks[:0], local_rows, False)

    def read_rows(self, plan: ReadPlan, start: int, stop: int, *, filtered: bool = True) -> np.ndarray:
        """Montage signals of ``plan.rows`` over samples ``[start, stop)``, display-filtered.

        Reads ``[start - margin, stop + margin)`` (clipped to the recording) so the zero-phase
        filters have no edge effects inside the block.

        Returns
        -------
        data : ndarray, shape (n_rows, stop - start), float32 µV
        """
        rec = self.recording
        use_filters = filtered and any((self.highpass_hz, self.lowpass_hz, self.notch_hz))
        margin = self._margin_samples() if use_filters else 0
        r0, r1 = max(0, start - margin), min(rec.n_times, stop + margin)
        block = rec.get_data(plan.picks, r0, r1)
        if plan.rows.kind == "monopolar" and [m[0] for m in plan.rows.members] == list(range(len(plan.picks))):
            signals = block
        else:
            reference = block.mean(axis=0) if plan.average else None
            signals = apply_montage(block, plan.rows, reference=reference)
        if use_filters:
            signals = display_filter(
                signals, rec.sfreq, highpass_hz=self.highpass_hz, lowpass_hz=self.lowpass_hz, notch_hz=self.notch_hz
            )
        return signals[:, start - r0 : stop - r0]

    def envelope(
        self, plan: ReadPlan, start: int, stop: int, n_bins: int, *, filtered: bool = True
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Per-bin min/max of the rows of ``plan`` over ``[start, stop)``, read in blocks.

        Returns
        -------
        edges : ndarray, shape (n_bins + 1,), int
            Bin edges in samples (at most ``stop - start`` bins).
        lo, hi : ndarray, shape (n_rows, n_bins), float32 µV
        """
        n_bins = max(1, min(int(n_bins), stop - start))
        edges = np.unique(np.linspace(start, stop, n_bins + 1).round().astype(np.int64))
        n_bins = len(edges) - 1
        n_rows = len(plan.rows)
        lo = np.empty((n_rows, n_bins), dtype=np.float32)
        hi = np.empty((n_rows, n_bins), dtype=np.float32)
        per_block = max(1, CHUNK_VALUES // max(1, len(plan.picks)))
        j = 0
        while j < n_bins:
            j1 = int(np.searchsorted(edges, edges[j] + per_block, side="right")) - 1
            j1 = min(max(j1, j + 1), n_bins)
            block = self.read_rows(plan, int(edges[j]), int(edges[j1]), filtered=filtered)
            lo[:, j:j1], hi[:, j:j1] = minmax_envelope(block, edges[j:j1] - edges[j])
            j = j1
        return edges, lo, hi

    def page_envelope(self, rows: MontageRows | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Unfiltered min/max envelope of ``rows`` over the whole recording (one pass, cached per page/montage).

        ``OVERVIEW_BINS_PER_PX × plot_width`` bins. The overview is drawn from it, and so are
        zoomed-out views coarse enough (see :meth:`visible_envelope`).

        Returns
        -------
        edges : ndarray, shape (n_bins + 1,), int
        lo, hi : ndarray, shape (n_rows, n_bins), float32 µV
        """
        rows = self.page_rows() if rows is None else rows
        key = (id(self.recording), tuple(rows.labels), tuple(self.contacts()), self.plot_width)
        if key not in self._overview_cache:
            self._overview_cache.clear()
            n_bins = OVERVIEW_BINS_PER_PX * self.plot_width
            self._overview_cache[key] = self.envelope(
                self.read_plan(rows), 0, self.recording.n_times, n_bins, filtered=False
            )
        return self._overview_cache[key]

    def visible_envelope(self, plan: ReadPlan, start: int, stop: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Min/max envelope of the page over ``[start, stop)`` at two bins per pixel.

        Taken from the cached whole-recording envelope when it exists, no display filter is on and
        it has at least one cached bin per output bin; read from the recording otherwise.
        """
        n_bins = 2 * self.plot_width
        filters = any((self.highpass_hz, self.lowpass_hz, self.notch_hz))
        key = (id(self.recording), tuple(plan.rows.labels), tuple(self.contacts()), self.plot_width)
        if not filters and key in self._overview_cache:
            coarse = rebin_envelope(*self._overview_cache[key], start, stop, n_bins)
            if coarse is not None:
                return coarse
        return self.envelope(plan, start, stop, n_bins)

    # ---------------------------------------------------------------- heat map

    def heat_rows(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Binned p(SOZ) and its interval for every row of :meth:`rows` (cached).

        Returns
        -------
        values, p0, p1 : ndarray, shape (n_rows, n_bins), float64
            Bipolar rows are the mean of their two contacts. NaN = not scored.
        edges : ndarray, shape (n_bins + 1,)
        """
        rows = self.rows()
        bin_s = self.effective_bin_s()
        key = (id(self.scores), bin_s, tuple(rows.labels))
        if key not in self._heat_cache:
            self._heat_cache.clear()
            if self.scores is None:
                n_bins = max(1, math.ceil(self.duration_s / bin_s - 1e-9))
                nan = np.full((len(rows), n_bins), np.nan)
                self._heat_cache[key] = (nan, nan, nan, np.arange(n_bins + 1) * bin_s)
            else:
                contacts = self.contacts()
                values, edges = self.scores.heatmap(bin_s, channels=contacts)
                p0, p1 = binned_interval(self.scores, bin_s, contacts)
                self._heat_cache[key] = (
                    heatmap_rows(values, rows),
                    heatmap_rows(p0, rows),
                    heatmap_rows(p1, rows),
                    edges,
                )
        return self._heat_cache[key]

    def page_heat(self) -> tuple[np.ndarray, np.ndarray]:
        """The page's heat-map rows (top row first) with their bin edges.

        Returns
        -------
        values : ndarray, shape (n_page_rows, n_bins, 3)
            p(SOZ), p0, p1.
        edges : ndarray, shape (n_bins + 1,)
        """
        values, p0, p1, edges = self.heat_rows()
        lo = min(self.page, self.n_pages - 1) * self.page_size
        sl = slice(lo, lo + self.page_size)
        return np.stack([values[sl], p0[sl], p1[sl]], axis=-1), edges

    # ---------------------------------------------------------------- elements

    def _plot_height(self, n_rows: int) -> int:
        return int(np.clip(self.row_height * max(n_rows, 1), 240, 900))

    def _curves_enabled(self, n_rows: int) -> bool:
        return n_rows <= self.max_curve_rows

    def main_element(self, t0: float, t1: float) -> hv.Overlay:
        """The main overlay for the window ``[t0, t1]`` (what the DynamicMap callback returns).

        Layers, bottom to top: heat map ``hv.Image``, datashaded ``hv.RGB`` (empty when curves are
        drawn), one ``hv.Curve`` per row when the page can have curves (empty when datashaded),
        marker spans and lines, the focus band, marker labels, the scale bar.
        """
        ensure_bokeh()
        rows = self.page_rows()
        n = len(rows)
        T = hv.Dimension("time", label="time", unit="s", range=(t0, t1))
        Y = hv.Dimension("row", label=" ")
        amplitudes = self.row_amplitudes(rows)
        focus = self._focus_row(rows)
        curves_enabled = self._curves_enabled(n)
        zoomed_in = curves_enabled and (t1 - t0) <= self.datashade_above_s
        height = self._plot_height(n)
        rec = self.recording
        start = int(np.clip(math.floor(t0 * rec.sfreq), 0, rec.n_times - 1))
        stop = int(np.clip(math.ceil(t1 * rec.sfreq) + 1, start + 1, rec.n_times))
        plan = self.read_plan(rows)

        layers = [self._heat_image(t0, t1, T, Y, n)]
        curves = []
        if zoomed_in and n:
            data = self.read_rows(plan, start, stop)
            t = np.arange(start, stop) / rec.sfreq
            rgba = np.zeros((1, 1, 4), dtype=np.uint8)
            for r in range(n):
                idx = decimate_minmax_lttb(t, data[r], 2 * self.plot_width)
                curves.append((t[idx], data[r, idx].astype(np.float64)))
        else:
            if n:
                edges, lo, hi = self.visible_envelope(plan, start, stop)
                centres = (edges[:-1] + edges[1:] - 1) / 2.0 / rec.sfreq
                k = (n - 1 - np.arange(n))[:, None]
                scale = 1.0 / (2.0 * amplitudes[:, None])
                colours = [FOCUS_COLOUR if r == focus else TRACE_COLOUR for r in range(n)]
                rgba = rasterise_envelopes(
                    centres, k + lo * scale, k + hi * scale, (t0, t1), n, self.plot_width, height, colours
                )
            else:
                rgba = np.zeros((1, 1, 4), dtype=np.uint8)
            curves = [(np.zeros(0), np.zeros(0))] * n
        layers.append(hv.RGB(rgba, bounds=(t0, -0.5, t1, max(n, 1) - 0.5), kdims=[T, Y], label="traces"))
        if curves_enabled:
            # subcoordinate_y puts curve k at y = k (bottom up): add the page's last row first.
            for r in reversed(range(n)):
                # HoloViews merges value ranges of dimensions sharing a label: one label per row
                # keeps each row's (−a, a); the column stays "amplitude" for the hover.
                A = hv.Dimension(
                    "amplitude", label=f"{rows.labels[r]} amplitude", unit="µV", range=(-amplitudes[r], amplitudes[r])
                )
                curve = hv.Curve(curves[r], kdims=[T], vdims=[A], label=rows.labels[r])
                layers.append(curve)
        layers.extend(self._marker_elements(T, Y, n))
        if focus is not None:
            k = n - 1 - focus
            layers.append(hv.HSpan(k - 0.5, k + 0.5).opts(color=FOCUS_COLOUR, alpha=0.08, line_alpha=0))
        layers.append(self._marker_labels(t0, t1, T, Y, n))
        layers.extend(self._scale_bar(t0, t1, T, Y, n, amplitudes, rows))
        # Options on clones, never in place: HoloViews may reuse the id of an in-place custom
        # option tree once unreferenced, and another plot's options then leak into this one.
        overlay = hv.Overlay(layers).opts(*self._main_options())
        if curves_enabled and focus is not None:
            label = rows.labels[focus]
            overlay = overlay.map(
                lambda el: el.opts(color=FOCUS_COLOUR, line_width=1.2),
                lambda el: isinstance(el, hv.Curve) and el.label == label,
            )
        if not curves_enabled:
            overlay = overlay.opts(yticks=[(n - 1 - r, label) for r, label in enumerate(rows.labels)])
        return overlay

    @staticmethod
    def _curve_options() -> dict:
        return dict(
            framewise=True,
            subcoordinate_y=True,
            tools=["hover"],
            hover_tooltips=[("channel", "$label"), ("time (s)", "@{time}{0.000}"), ("amplitude (µV)", "@{amplitude}{0.0}")],
        )

    def _main_options(self) -> list:
        """HoloViews options of the main overlay (built once per figure structure)."""
        if self._main_opts is not None:
            return self._main_opts
        rows = self.page_rows()
        contacts = self.contacts()
        notes = [
            f"{label} (mean of {', '.join(contacts[m] for m in members)})" if len(members) > 1 else label
            for label, members in zip(rows.labels, rows.members)
        ]
        bin_s = self.effective_bin_s()
        heat_hover = {
            "$y": CustomJSHover(
                args={"labels": notes[::-1]},
                code="const k = Math.round(value); return (k >= 0 && k < labels.length) ? labels[k] : '';",
            ),
            "$x": CustomJSHover(
                args={"bin": bin_s},
                code="const b = Math.floor(value / bin) * bin; return b.toFixed(2) + '–' + (b + bin).toFixed(2) + ' s';",
            ),
        }
        self._main_opts = [
            hv.opts.Image(
                framewise=True,
                cmap=HEAT_CMAP,
                clim=(0, 1),
                colorbar=True,
                colorbar_opts={"title": "p(SOZ)"},
                clipping_colors={"NaN": (0, 0, 0, 0)},
                tools=["hover"],
                hover_tooltips=[
                    ("channel", "$y{custom}"),
                    ("time bin", "$x{custom}"),
                    ("p(SOZ)", "@image{0.00}"),
                    ("interval [p0, p1]", "[@{p0}{0.00}, @{p1}{0.00}]"),
                ],
                hover_formatters=heat_hover,
            ),
            hv.opts.RGB(framewise=True),
            hv.opts.Curve(**self._curve_options(), color=TRACE_COLOUR, line_width=0.7),
            hv.opts.Path(framewise=True),
            hv.opts.Text(framewise=True),
            hv.opts.Labels(framewise=True),
            hv.opts.Overlay(
                frame_width=self.plot_width,
                frame_height=self._plot_height(len(rows)),
                show_legend=False,
                ylabel="",
                backend_opts={"plot.min_border_left": 110},
                title=f"{self._label()} — {self.montage}, rows {self._page_range_text()}",
                active_tools=["xwheel_zoom", "xpan"],
                default_tools=["xpan", "xwheel_zoom", "xbox_zoom", "reset", "save"],
            ),
        ]
        return self._main_opts

    def _heat_image(self, t0: float, t1: float, T, Y, n: int) -> hv.Image:
        heat, edges = self.page_heat()
        n_bins = heat.shape[1]
        bin_s = edges[1] - edges[0]
        b0 = int(np.clip(math.floor(t0 / bin_s + 1e-9), 0, n_bins - 1))
        b1 = int(np.clip(math.ceil(t1 / bin_s - 1e-9), b0 + 1, n_bins))
        block = heat[:, b0:b1] if n else np.full((1, b1 - b0, 3), np.nan)
        vdims = [
            hv.Dimension("p_soz", label="p(SOZ)", range=(0, 1)),
            hv.Dimension("p0", range=(0, 1)),
            hv.Dimension("p1", range=(0, 1)),
        ]
        image = hv.Image(
            np.ascontiguousarray(block), bounds=(edges[b0], -0.5, edges[b1], max(n, 1) - 0.5), kdims=[T, Y], vdims=vdims
        )
        return image.opts(alpha=self.heat_opacity if self.show_heatmap else 0.0)

    def _marker_elements(self, T, Y, n: int) -> list:
        out = []
        for marker in self.markers:
            kind = marker.get("kind", "event")
            colour = MARKER_COLOURS.get(kind, MARKER_COLOURS["event"])
            onset = float(marker["onset"])
            duration = float(marker.get("duration") or 0.0)
            if duration > 0:
                out.append(hv.VSpan(onset, onset + duration).opts(color=colour, alpha=0.12, line_alpha=0))
            dash = "dashed" if kind in ("note", "event") else "solid"
            out.append(hv.VLine(onset).opts(color=colour, line_width=1.5, line_dash=dash))
        return out

    def _marker_labels(self, t0: float, t1: float, T, Y, n: int) -> hv.Labels:
        xs, texts = [], []
        for marker in self.markers:
            onset = float(marker["onset"])
            if t0 <= onset <= t1:
                xs.append(onset)
                texts.append(str(marker.get("description", "")))
        top = max(n, 1) - 0.5
        labels = hv.Labels((np.array(xs, dtype=float), np.full(len(xs), top), texts), kdims=[T, Y], vdims=["description"])
        return labels.opts(text_align="left", text_baseline="top", text_font_size="8pt", xoffset=0.003 * (t1 - t0))

    def _scale_bar(self, t0: float, t1: float, T, Y, n: int, amplitudes: np.ndarray, rows: MontageRows) -> list:
        if not n:
            return [hv.Path([], kdims=[T, Y]), hv.Text(t1, 0, "", kdims=[T, Y])]
        a = float(amplitudes[0])
        length = nice_scale(a)
        height = length / (2 * a)
        x = t1 - 0.01 * (t1 - t0)
        k = n - 1
        gains = {s: g for s, g in (self.shaft_gain or {}).items() if g not in (None, 1, 1.0)}
        text = f"{length:g} µV" + (f" ({rows.shafts[0]})" if gains else "")
        path = hv.Path([np.array([[x, k - height / 2], [x, k + height / 2]])], kdims=[T, Y])
        return [
            path.opts(color="black", line_width=3),
            hv.Text(x - 0.005 * (t1 - t0), k, text, halign="right", fontsize=9, kdims=[T, Y]),
        ]

    # ---------------------------------------------------------------- the figure

    def _callback(self, x_range=None, window=(0.0, 10.0), version=0):
        """DynamicMap callback: a bokeh zoom/pan (``x_range``) wins over the last widget window."""
        if x_range is not None and x_range != self._last_x_range and None not in x_range:
            self._last_x_range = x_range
            t0 = max(0.0, float(x_range[0]))
            t1 = min(self.duration_s, float(x_range[1]))
            if t1 <= t0:
                t0, t1 = window
            else:
                self._sync_window(t0, t1)
        else:
            t0, t1 = window
        key = (round(t0, 6), round(t1, 6), version)
        if self._last_good is not None and self._last_good[0] == key:
            return self._last_good[1]
        try:
            overlay = self.main_element(t0, t1)
        except Exception as err:  # leave the previous view intact and say what went wrong
            logger.exception("Could not draw %s over %.2f–%.2f s", self._label(), t0, t1)
            self._show_error(f"Could not draw {self._label()} over {t0:.2f}–{t1:.2f} s: {err}")
            if self._last_good is None:
                raise
            return self._last_good[1]
        self._last_good = (key, overlay)
        return overlay

    def _label(self) -> str:
        return self.recording.label if self.recording is not None else "no recording"

    def _sync_window(self, t0: float, t1: float) -> None:
        """Reflect a bokeh zoom/pan in ``start_s``/``span_s`` without redrawing again."""
        self._syncing = True
        try:
            self.param.update(start_s=t0, span_s=max(t1 - t0, 1e-6))
        finally:
            self._syncing = False
        if self._stream is not None:
            self._stream.update(window=(t0, t1))

    def _build(self):
        """Compose the DynamicMap main view, the optional time course and the overview."""
        if self.recording is None:
            return hv.Div("<p>No recording loaded.</p>")
        ensure_bokeh()
        t0, t1 = self.window()
        self._last_good = None
        self._last_x_range = None
        self._main_opts = None
        self._stream = _ViewEvent(window=(t0, t1), version=0)
        self._range = hv.streams.RangeX()
        # Options are set inside the callback (main_element), not with DynamicMap.opts, which
        # wraps the callback in an operation that applies them to every frame a second time.
        dmap = hv.DynamicMap(self._callback, streams=[self._range, self._stream])
        self._main = dmap
        parts = [dmap]
        if self.timecourse is not None:
            course = self.timecourse.figure().redim.range(time=(t0, t1))
            parts.append(course.opts(hv.opts.Overlay(frame_width=self.plot_width, backend_opts={"plot.min_border_left": 110})))
        if self.show_overview:
            overview, source = self.overview()
            hv.plotting.links.RangeToolLink(source, dmap, axes=["x"])
            parts.append(overview)
        if len(parts) == 1:
            return dmap
        # Layout shares axes by default (the time course follows the traces). No .opts() here: on
        # a Layout it wraps the DynamicMap in an operation that re-applies options to every frame.
        return hv.Layout(parts).cols(1)

    def _page_range_text(self) -> str:
        labels = self.page_rows().labels
        if not labels:
            return "none"
        return f"{labels[0]} … {labels[-1]} (page {min(self.page, self.n_pages - 1) + 1}/{self.n_pages})"

    def overview(self) -> tuple[hv.Overlay, hv.RGB]:
        """Whole-recording overview of the page (min-max envelope, datashaded; cached per page/montage).

        The background is the page's mean p(SOZ) over time. Display filters are not applied here:
        each row's median is removed instead, so reading it stays one pass over the file.

        Returns
        -------
        overview : hv.Overlay
        source : hv.RGB
            The element the range tool is attached to.
        """
        ensure_bokeh()
        rows = self.page_rows()
        n = len(rows)
        amplitudes = self.row_amplitudes(rows)
        if n:
            edges, lo, hi = self.page_envelope(rows)
            coarse = rebin_envelope(edges, lo, hi, 0, self.recording.n_times, 2 * self.plot_width)
            edges, lo, hi = coarse if coarse is not None else (edges, lo, hi)
            middle = np.median((lo + hi) / 2, axis=1, keepdims=True)
            lo, hi = lo - middle, hi - middle
        else:
            edges, lo, hi = np.array([0, 1]), np.zeros((0, 1)), np.zeros((0, 1))
        duration = self.duration_s
        OT = hv.Dimension("overview_time", label="time", unit="s")
        OY = hv.Dimension("overview_row", label=" ")
        height = 110
        if n:
            k = (n - 1 - np.arange(n))[:, None]
            scale = 1.0 / (2.0 * amplitudes[:, None])
            centres = (edges[:-1] + edges[1:] - 1) / 2.0 / self.recording.sfreq
            rgba = rasterise_envelopes(
                centres, k + lo * scale, k + hi * scale, (0.0, duration), n, self.plot_width, height, [TRACE_COLOUR] * n
            )
        else:
            rgba = np.zeros((1, 1, 4), dtype=np.uint8)
        heat, heat_edges = self.page_heat()
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message="Mean of empty slice", category=RuntimeWarning)
            mean = np.nanmean(heat[..., 0], axis=0)[None, :] if n else np.full((1, heat.shape[1]), np.nan)
        strip = hv.Image(
            mean,
            bounds=(heat_edges[0], -0.5, heat_edges[-1], max(n, 1) - 0.5),
            kdims=[OT, OY],
            vdims=[hv.Dimension("p_mean", label="mean p(SOZ)", range=(0, 1))],
        )
        strip = strip.opts(cmap=HEAT_CMAP, clim=(0, 1), alpha=0.6, clipping_colors={"NaN": (0, 0, 0, 0)})
        source = hv.RGB(rgba, bounds=(0.0, -0.5, duration, max(n, 1) - 0.5), kdims=[OT, OY], label="overview")
        overview = (strip * source).opts(
            hv.opts.Image(default_tools=[]),
            hv.opts.RGB(default_tools=[]),
            hv.opts.Overlay(
                frame_width=self.plot_width,
                frame_height=height,
                yaxis=None,
                backend_opts={"plot.min_border_left": 110},
                toolbar=None,
                default_tools=[],
                shared_axes=False,
                title="overview (drag the box to move the view; background: mean p(SOZ) of the page)",
                fontsize={"title": "9pt"},
                xlim=(0.0, duration),
            )
        )
        return overview, source

    def figure(self):
        """The current composed HoloViews object (main view, optional time course, overview).

        Build it once per structure (recording, montage, page …); zoom/pan and display changes
        update it in place. Export with ``hv.render(view.figure())`` or ``hv.save``.
        """
        if self._figure is None:
            self._figure = self._build()
        return self._figure

    def main_plot(self):
        """The main DynamicMap (``None`` before :meth:`figure` or without a recording)."""
        self.figure()
        return self._main

    def state(self) -> dict:
        """What is displayed, for export captions."""
        t0, t1 = self.window()
        rows = self.page_rows()
        return {
            "recording": self._label(),
            "start_s": t0,
            "end_s": t1,
            "span_s": t1 - t0,
            "montage": self.montage,
            "page": min(self.page, self.n_pages - 1),
            "n_pages": self.n_pages,
            "rows": list(rows.labels),
            "amplitude_uv": self.amplitude_uv,
            "shaft_gain": dict(self.shaft_gain or {}),
            "highpass_hz": self.highpass_hz,
            "lowpass_hz": self.lowpass_hz,
            "notch_hz": self.notch_hz,
            "heatmap": bool(self.show_heatmap and self.scores is not None),
            "heat_bin_s": self.effective_bin_s(),
            "bad_channels": list(self.bad_channels),
            "focus_channel": self.focus_channel,
            "datashaded": not (
                self._curves_enabled(len(rows)) and (t1 - t0) <= self.datashade_above_s
            ),
        }

    # ---------------------------------------------------------------- reactions

    def _on_recording(self, *events) -> None:
        self._overview_cache.clear()
        self._heat_cache.clear()
        self._stream = None  # the old figure must not redraw with the new recording
        self._figure = None
        if self.recording is not None:
            self.amplitude_uv = auto_amplitude(self.recording, self.contact_picks())
            if self.start_s > self.recording.duration_s:
                self.start_s = 0.0

    def _on_focus(self, *events) -> None:
        if self.focus_channel:
            self._go_to_focus()
        self._clamp_page()

    def _on_timecourse(self, *events) -> None:
        self._watch_timecourse(self.timecourse)

    def _watch_timecourse(self, course: SozTimeCourse | None) -> None:
        """Redraw when the attached time course changes (and stop watching the previous one)."""
        if self._timecourse_watcher is not None:
            old, watcher = self._timecourse_watcher
            old.param.unwatch(watcher)
            self._timecourse_watcher = None
        if course is not None:
            names = ["scores", "soz_channels", "bad_channels", "bin_s"]
            self._timecourse_watcher = (course, course.param.watch(self._on_structure, names))

    def _on_structure(self, *events) -> None:
        self._clamp_page()
        self._figure = None
        self._main_opts = None
        if self._pane is not None:
            self._refresh_pane()

    def _on_window(self, *events) -> None:
        if self._syncing or self._stream is None:
            return
        self._stream.event(window=self.window())
        self._sync_widgets()

    def _on_display(self, *events) -> None:
        if self._stream is not None:
            self._stream.event(version=self._stream.version + 1)

    # ---------------------------------------------------------------- widgets

    def _show_error(self, message: str) -> None:
        if self._alert is not None:
            self._alert.object = message
            self._alert.visible = True

    def _refresh_pane(self) -> None:
        try:
            figure = self.figure()
        except Exception as err:
            logger.exception("Could not build the trace view of %s", self._label())
            self._figure = None
            self._show_error(f"Could not draw {self._label()}: {err}")
            return
        if self._alert is not None:
            self._alert.object = self._notice
            self._alert.visible = bool(self._notice)
        self._notice = ""
        self._pane.object = figure
        self._sync_widgets()

    def _page_options(self) -> dict:
        rows = self.rows()
        options = {}
        for p in range(self.n_pages):
            labels = rows.labels[p * self.page_size : (p + 1) * self.page_size]
            text = f"{p + 1}: {labels[0]} … {labels[-1]}" if labels else f"{p + 1}"
            options[text] = p
        return options

    def _sync_widgets(self) -> None:
        w = getattr(self, "_widgets", None)
        if not w:
            return
        duration = self.duration_s or 1.0
        w["start"].end = max(duration, 1e-3)
        w["page"].options = self._page_options()
        w["page"].value = min(self.page, self.n_pages - 1)
        shafts = self.shafts()
        w["shaft"].options = shafts
        if shafts and w["shaft"].value not in shafts:
            w["shaft"].value = shafts[0]

    def _step_time(self, direction: int) -> None:
        duration = self.duration_s
        t0 = self.start_s + direction * self.span_s
        self.start_s = float(np.clip(t0, 0.0, max(0.0, duration - self.span_s)))

    def _step_page(self, direction: int) -> None:
        self.page = int(np.clip(self.page + direction, 0, self.n_pages - 1))

    def _make_widgets(self) -> dict:
        w = {}
        duration = self.duration_s or 1.0
        w["start"] = pn.widgets.FloatSlider.from_param(
            self.param.start_s, start=0.0, end=max(duration, 1e-3), step=0.1, label="start (s)", width=320
        )
        w["prev_time"] = pn.widgets.Button(label="◀ time", width=70)
        w["next_time"] = pn.widgets.Button(label="time ▶", width=70)
        w["prev_time"].on_click(lambda e: self._step_time(-1))
        w["next_time"].on_click(lambda e: self._step_time(+1))
        spans = {f"{s:g} s": s for s in SPAN_CHOICES_S}
        if self.span_s not in spans.values():
            spans[f"{self.span_s:g} s"] = self.span_s
        w["span"] = pn.widgets.Select(label="span", options=spans, value=self.span_s, width=90)
        w["span"].link(self, value="span_s")
        self.param.watch(lambda e: _set_option(w["span"], e.new), ["span_s"])
        w["page"] = pn.widgets.Select(label="channels", options=self._page_options(), value=self.page, width=220)
        w["page"].link(self, value="page")
        self.param.watch(lambda e: setattr(w["page"], "value", e.new), ["page"])
        w["prev_page"] = pn.widgets.Button(label="▲ rows", width=70)
        w["next_page"] = pn.widgets.Button(label="rows ▼", width=70)
        w["prev_page"].on_click(lambda e: self._step_page(-1))
        w["next_page"].on_click(lambda e: self._step_page(+1))
        w["montage"] = pn.widgets.RadioButtonGroup.from_param(self.param.montage, label="montage")
        w["amplitude"] = pn.widgets.FloatInput.from_param(
            self.param.amplitude_uv, label="amplitude (µV)", step=10.0, width=110
        )
        shafts = self.shafts()
        w["shaft"] = pn.widgets.Select(label="shaft", options=shafts, value=shafts[0] if shafts else None, width=90)
        w["gain"] = pn.widgets.FloatInput(label="gain ×", value=1.0, step=0.5, start=0.01, width=80)

        def _gain_from_shaft(event):
            w["gain"].value = float((self.shaft_gain or {}).get(event.new, 1.0))

        def _set_gain(event):
            shaft = w["shaft"].value
            if shaft is not None and event.new:
                self.shaft_gain = {**(self.shaft_gain or {}), shaft: float(event.new)}

        w["shaft"].param.watch(_gain_from_shaft, "value")
        w["gain"].param.watch(_set_gain, "value")
        w["highpass"] = pn.widgets.FloatInput.from_param(self.param.highpass_hz, label="high-pass (Hz)", width=100)
        w["lowpass"] = pn.widgets.FloatInput.from_param(self.param.lowpass_hz, label="low-pass (Hz)", width=100)
        w["notch"] = pn.widgets.FloatInput.from_param(self.param.notch_hz, label="notch (Hz)", width=90)
        w["opacity"] = pn.widgets.FloatSlider.from_param(self.param.heat_opacity, label="heat opacity", width=140)
        w["show_heat"] = pn.widgets.Checkbox.from_param(self.param.show_heatmap, label="heat map")
        return w

    def __panel__(self):
        if self._panel is None:
            self._widgets = self._make_widgets()
            w = self._widgets
            self._alert = pn.pane.Alert("", alert_type="danger", visible=False)
            self._pane = pn.pane.HoloViews(None, linked_axes=False)
            self._refresh_pane()
            navigation = pn.Row(
                w["prev_time"], w["start"], w["next_time"], w["span"], w["prev_page"], w["page"], w["next_page"]
            )
            display = pn.Row(
                w["montage"],
                w["amplitude"],
                w["shaft"],
                w["gain"],
                w["highpass"],
                w["lowpass"],
                w["notch"],
                w["opacity"],
                w["show_heat"],
            )
            self._panel = pn.Column(navigation, display, self._alert, self._pane)
        return self._panel


def _set_option(select, value) -> None:
    options = select.options
    known = options.values() if isinstance(options, dict) else options
    if value not in known and isinstance(options, dict):
        select.options = {**options, f"{value:g} s": value}
    select.value = value


"""Stacked iEEG traces with the SOZ heat map underneath: :class:`TraceView`.

What is drawn
-------------
One row per montage row of the page's contacts, first row at the top. Under the traces, an
``hv.Image`` of the binned calibrated window probabilities (p(SOZ), colour range fixed at 0–1),
aligned row-for-row with the traces and second-for-second with the time axis. Where the scores
flag windows as artifacts (their ``artifact`` column), a grey image over it, row-aligned on the same
bins, shows how much of each bin's window time was flagged, and a flagged channel's row label ends
in ``[artifact]``. Below, a datashaded overview of the page over the whole recording with a range
tool that moves the main view.

Where what is
-------------
* This module: the Panel component — its parameters, the figure's DynamicMaps and streams, the
  reactions to parameter changes and the widgets.
* :mod:`sss_viewer.viewer._trace_data`: the data side, :class:`~.trace_data.TraceData` (``view.data``,
  given the view's parameters of the same names as they change) — which rows and pages there are,
  what is read from the recording for them, envelopes and heat-map rows, and their caches; no Panel.
* :mod:`sss_viewer.viewer._envelope`: the arithmetic on what was read (sample ranges, filter
  margins, min/max envelopes, row offsets and scales, the datashaded raster); numpy only.
* :mod:`sss_viewer.viewer._trace_elements`: the HoloViews elements made of it (curves, heat-map
  image, markers, overview) and the Bokeh hooks that set what changes with the page.

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
  Parameters that change what the rows are (recording, rows per page, …) rebuild the figure.
  A montage switch that keeps the number of row slots updates the drawn figure instead: in a served
  session its new rows, labels, amplitude ranges and overview strip go straight into the drawn
  glyphs (as a page step's do, below); elsewhere it takes HoloViews' own update. New markers never
  rebuild: their elements are a fixed few, and in a session only the glyphs whose markers changed
  get new data (an Undo of a note sends the notes' lines, nothing else).
* Every page has the same row slots, so a page or time step in a served session puts new data
  straight into the drawn glyphs (:mod:`sss_viewer.viewer._inplace`): the traces as plain columns,
  the other layers through HoloViews' per-glyph update, all in one message to the browser and
  without recomputing the document's model graph. Zoom/pan and display changes take HoloViews'
  own update; a page drawn either way is the same (a browser test checks it).

Everything is per instance (streams, caches, widgets), so each browser session has its own state.
"""

from __future__ import annotations

import html
import logging
import math
from contextlib import nullcontext
from functools import partial

import holoviews as hv
import numpy as np
import panel as pn
import param
from panel.io.state import set_curdoc

from sss_viewer.viewer._display import (
    MONTAGES,
    MontageRows,
    centre_and_clip,
    clip_envelope,
    decimate_minmax_lttb,
    display_amplitude,
    implausible_unit_message,
)
from sss_viewer.viewer._envelope import (
    bin_centres,
    nice_scale,
    rasterise_envelopes,
    rebin_envelope,
    row_units,
    sample_range,
)
from sss_viewer.viewer._excluded import EXCLUDED_COLOUR
from sss_viewer.viewer._inplace import LayerPlots, data_only_freeze
from sss_viewer.viewer._trace_cursor import MARKER_MODES, TraceCursor, add_span_tool, set_span_tool_active
from sss_viewer.viewer._trace_data import (  # noqa: F401  (DrawnRows … OVERVIEW_READ_BUDGET: re-exported, moved there)
    OVERVIEW_BINS_PER_PX,
    OVERVIEW_CACHE_PAGES,
    OVERVIEW_READ_BUDGET,
    OVERVIEW_TOP_K,
    READ_ONLY_HIDDEN_TYPES,
    DrawnRows,
    ReadPlan,
    TraceData,
    TraceParams,
    auto_amplitude,
    binned_interval,
    lru_get,
    lru_put,
)
from sss_viewer.viewer._trace_elements import (
    ARTIFACT_MARK,
    FOCUS_COLOUR,
    HEAT_TITLE,
    OVERVIEW_HEIGHT,
    OVERVIEW_TRACE_COLOUR,
    TRACE_COLOUR,
    add_range_tool,
    amplitude_dimension,
    artifact_template,
    curve_template,
    decorate_page,
    focus_band_template,
    heat_template,
    holds_data,
    main_overlay_template,
    marker_element_data,
    marker_elements,
    marker_label_data,
    marker_label_template,
    overview_marker_data,
    overview_overlay,
    scale_bar_templates,
    set_changed,
    slot_index,
    slot_label,
    traces_template,
)
from sss_viewer.viewer.export import register_static_copy
from sss_viewer.viewer.timecourse import PLOT_BACKEND_OPTS, SozTimeCourse, ensure_bokeh

logger = logging.getLogger(__name__)

SPAN_CHOICES_S = (1.0, 2.0, 5.0, 10.0, 20.0, 30.0, 60.0, 120.0, 300.0, 600.0, 1200.0, 3600.0)
OVERVIEW_INK_PAGES = 32  # overview rasters kept (OVERVIEW_HEIGHT x plot_width bytes each)

_DATA_PARAMS = tuple(name for name in TraceParams.param if name != "name")
"""The view's parameters its data object has too (set on it as they change): those of :class:`.TraceParams`."""

_LAYERS_AFTER_MARKERS = 4
"""Layers of the main overlay above the markers' elements: the focus band, the marker labels, the scale bar's two."""

ALL_ON_PAGE = "*"
"""The gain picker's value for "all on this page": the gain applies to every shaft of the page in view."""
ALL_ON_PAGE_LABEL = "all on this page"

_ViewEvent = hv.streams.Stream.define("TraceWindow", window=(0.0, 10.0), version=0)
"""Per-figure stream: the visible window set from the widgets, and a counter bumped on display and page changes."""
_OverviewEvent = hv.streams.Stream.define("OverviewPage", version=0)
"""Per-figure stream of the overview: a counter bumped on page and display changes."""


# --------------------------------------------------------------------------------------------
# Plain helpers
# --------------------------------------------------------------------------------------------


def _session_document():
    """The Bokeh document of the current server session, or None (tests, notebooks, no session)."""
    doc = pn.state.curdoc
    return doc if doc is not None and getattr(doc, "session_context", None) is not None else None


def _one_message():
    """Send the bokeh changes made inside as one message (Panel's ``unlocked``: hold, then write once).

    Bokeh otherwise sends each changed property as its own message, and the browser applies (and
    may redraw after) each. Outside a server session, a no-op.
    """
    return pn.io.unlocked() if _session_document() is not None else nullcontext()


# --------------------------------------------------------------------------------------------
# The component
# --------------------------------------------------------------------------------------------


class TraceView(pn.viewable.Viewer, TraceParams):
    """Stacked iEEG traces by shaft, with the p(SOZ) heat map underneath and an overview strip.

    Rows are the recording's good iEEG channels (``recording.ieeg_picks()`` minus
    ``bad_channels``) grouped by shaft in contact-number order, as rows of ``montage``, ``page_size``
    per page; in the monopolar montage the excluded channels (bad, ECG, DC, trigger …) follow as greyed
    rows on pages of their own, and every montage lists them with the reason (:meth:`excluded`).
    Use :meth:`figure` for the HoloViews object (export) and :meth:`state` for a caption.
    """

    # recording, scores, montage, the window, pages, amplitude, filters, bad channels, focus, heat-map bin, plot
    # width and overview: the parameters shared with the data object, declared once (TraceParams)
    amplitude_warning = param.String(
        default="",
        doc="Set by the view: why the recording's amplitudes are implausible for µV (shown above the plot), or empty.",
    )
    heat_opacity = param.Number(default=0.5, bounds=(0, 1), doc="Opacity of the heat map.")
    show_heatmap = param.Boolean(default=True, doc="Draw the p(SOZ) heat map under the traces.")
    markers = param.List(
        default=[],
        item_type=dict,
        doc="Annotations {onset, duration, description, kind}; kind in onset/offset/note/event.",
    )
    datashade_above_s = param.Number(default=60.0, bounds=(0, None), doc="Spans longer than this are datashaded.")
    max_curve_rows = param.Integer(
        default=32, bounds=(1, None), doc="Pages with more rows are always datashaded (a curve per row costs ~5 ms)."
    )
    row_height = param.Integer(default=30, bounds=(4, None), doc="Height per row (px), within 240–900 px in all.")
    timecourse = param.ClassSelector(
        class_=SozTimeCourse,
        default=None,
        allow_None=True,
        doc="A time course drawn under the traces on the same time axis.",
    )

    _STRUCTURE = (
        "recording",
        "scores",
        "montage",
        "page_size",
        "bad_channels",
        "show_excluded",
        "markers",
        "bin_s",
        "datashade_above_s",
        "max_curve_rows",
        "plot_width",
        "row_height",
        "show_overview",
        "timecourse",
    )
    _DISPLAY = (
        "amplitude_uv",
        "shaft_gain",
        "highpass_hz",
        "lowpass_hz",
        "notch_hz",
        "heat_opacity",
        "show_heatmap",
        "clip_traces",
    )
    _IN_PLACE = ("page", "focus_channel")
    """Redrawn in place (same bokeh models, new data): a page shows the same number of rows as any other."""
    _REBUILT = tuple(name for name in _STRUCTURE if name not in ("montage", "markers"))
    """Structure parameters that always rebuild the figure; a montage switch does only when the row slots change,
    new markers never (their elements are a fixed few: :meth:`_on_markers` puts them into the drawn figure)."""

    def __init__(self, **params):
        self._syncing = False
        self._figure = None
        self._main = None
        self._overview_dmap = None
        self._stream = None
        self._overview_stream = None
        self._range = None
        self._last_x_range = None
        self._last_good = None
        self._panel = None
        self._pane = None
        self._alert = None
        self._warning = None
        self._ink_cache = {}
        self._templates = {}
        self._main_x_range = None
        self._main_layers = LayerPlots()
        self._overview_layers = LayerPlots()
        self._built_slots = None
        self._montage_pending = False
        self._notice = ""
        self._setting_amplitude = False
        self._amplitude_auto = params.get("amplitude_uv") is None
        super().__init__(**params)
        self.data = TraceData(**{name: getattr(self, name) for name in _DATA_PARAMS})
        """The data side (:class:`.trace_data.TraceData`): rows, pages, reads, envelopes, heat-map rows, caches."""
        self._data_values = {name: getattr(self.data, name) for name in _DATA_PARAMS}
        if self.recording is not None:
            self._rescale(warn=True)
        if self.focus_channel:
            self._go_to_focus()
        self._clamp_page()
        self._timecourse_watcher = None
        self._watch_timecourse(self.timecourse)
        self._dirty = False
        self._refresh_scheduled = False
        self._page_key = None
        self.param.watch(self._invalidate, list(self._REBUILT))  # first: no update reaches a stale figure
        self.param.watch(self._begin_montage, ["montage"])  # rebuild (as above), or one update at the end
        self.param.watch(self._on_recording, ["recording"])
        self.param.watch(self._on_timecourse, ["timecourse"])
        self.param.watch(self._on_focus, ["focus_channel", "montage", "bad_channels"])
        self.param.watch(self._on_amplitude, ["amplitude_uv"])
        self.param.watch(self._on_montage, ["montage"])
        self.param.watch(self._on_structure, list(self._REBUILT))
        self.param.watch(self._end_montage, ["montage"])
        self.param.watch(self._on_markers, ["markers"])
        self.param.watch(self._on_page, list(self._IN_PLACE))
        self.param.watch(self._on_window, ["start_s", "span_s"])
        self.param.watch(self._on_display, list(self._DISPLAY))
        self.param.watch(self._on_warning, ["amplitude_warning"])

    @param.depends(*_DATA_PARAMS, watch=True)
    def _to_data(self) -> None:
        """Set the changed parameters on :attr:`data` (the same names).

        A ``param.depends`` watcher: param runs these before every other watcher of the view (and
        any a widget adds), so what those read from the data object is current.
        """
        last = self.__dict__.get("_data_values")  # what was last set on the data object (None while constructing)
        if last is None:
            return
        for name in _DATA_PARAMS:
            value = getattr(self, name)
            if value is not last[name]:
                last[name] = value
                setattr(self.data, name, value)

    # ---------------------------------------------------------------- amplitude scale

    def measure_scale(self, montage: str | None = None) -> float:
        """Robust scale (µV) of ``montage`` over the visible window (:meth:`.TraceData.measure_scale`).

        Returns
        -------
        scale : float
            NaN when there is nothing to measure (no rows, flat signals).
        """
        return self.data.measure_scale(montage)

    def _rescale(self, *, warn: bool) -> None:
        """Set the automatic amplitude (unless set by hand) and, with ``warn``, the implausible-unit warning."""
        monopolar = None
        if warn:
            monopolar = self.measure_scale("monopolar")
            self.amplitude_warning = implausible_unit_message(monopolar)
            if self.amplitude_warning:
                logger.warning("%s: %s", self._label(), self.amplitude_warning)
        if self._amplitude_auto or self.amplitude_uv is None:
            scale = monopolar if monopolar is not None and self.montage == "monopolar" else self.measure_scale()
            self._set_amplitude(display_amplitude(scale))

    def _set_amplitude(self, value: float) -> None:
        self._setting_amplitude = True
        try:
            self.amplitude_uv = value
        finally:
            self._setting_amplitude = False
        self._amplitude_auto = True

    def _on_amplitude(self, event) -> None:
        if self._setting_amplitude:
            return
        if event.new is None:  # back to automatic
            self._amplitude_auto = True
            if self.recording is not None:
                self._set_amplitude(display_amplitude(self.measure_scale()))
        else:
            self._amplitude_auto = False

    def _on_montage(self, event) -> None:
        if self.recording is not None and self._amplitude_auto:
            self._set_amplitude(display_amplitude(self.measure_scale()))

    # ---------------------------------------------------------------- rows and pages (answered by self.data)

    def contact_picks(self) -> np.ndarray:
        """Recording indices of the shown contacts, shape (n_contacts,), int (:meth:`.TraceData.contact_picks`)."""
        return self.data.contact_picks()

    def contacts(self) -> list[str]:
        """Names of the shown contacts, in display order (:meth:`.TraceData.contacts`)."""
        return self.data.contacts()

    def display_contacts(self) -> list[str]:
        """How each of :meth:`contacts` is read (:meth:`.TraceData.display_contacts`)."""
        return self.data.display_contacts()

    def display_labels(self, rows: MontageRows | None = None) -> list[str]:
        """Labels of ``rows`` (default: the page's) as shown (:meth:`.TraceData.display_labels`)."""
        return self.data.display_labels(rows)

    def rows(self) -> MontageRows:
        """All scored rows of the montage over :meth:`contacts` (:meth:`.TraceData.rows`)."""
        return self.data.rows()

    def drawn_rows(self) -> MontageRows:
        """The rows paged and drawn: :meth:`rows`, then the greyed rows (:meth:`.TraceData.drawn_rows`)."""
        return self.data.drawn_rows()

    def excluded(self) -> dict[str, str]:
        """``{channel: reason}`` of every channel that is not a scored contact (:meth:`.TraceData.excluded`)."""
        return self.data.excluded()

    def excluded_line(self) -> str:
        """The line shown under the traces (:meth:`.TraceData.excluded_line`; empty if none)."""
        return self.data.excluded_line()

    def greyed_slots(self, rows: MontageRows | None = None) -> list[int]:
        """Indices in ``rows`` (default: the page's) of the greyed rows of excluded channels."""
        return self.data.greyed_slots(rows)

    @property
    def n_pages(self) -> int:
        """Number of channel pages."""
        return self.data.n_pages

    def page_bounds(self) -> list[tuple[int, int]]:
        """``(first, end)`` indices into :meth:`drawn_rows` of each page (:meth:`.TraceData.page_bounds`)."""
        return self.data.page_bounds()

    def page_rows(self) -> MontageRows:
        """The rows of the current page, top to bottom (:meth:`.TraceData.page_rows`)."""
        return self.data.page_rows()

    def page_contacts(self) -> list[str]:
        """Recording names of the scored contacts the page draws (:meth:`.TraceData.page_contacts`)."""
        return self.data.page_contacts()

    def shafts(self) -> list[str]:
        """Shafts of the shown contacts, in display order."""
        return self.data.shafts()

    def shaft_options(self, *, greyed: bool = False) -> dict[str, str]:
        """``{shaft as shown: shaft}`` of the contacts (``greyed``: and greyed rows), ``POL LA`` shown as ``LA``."""
        return self.data.shaft_options(greyed=greyed)

    def page_shafts(self) -> list[str]:
        """The shafts of the rows on the current page, top first (what the gain picker offers)."""
        return self.data.page_shafts()

    def page_shaft_options(self) -> dict[str, str]:
        """The gain picker's choices: ``{shaft as shown: shaft}`` of the page's shafts, then ``all on this page``."""
        on_page = set(self.page_shafts())
        options = {shown: shaft for shown, shaft in self.shaft_options(greyed=True).items() if shaft in on_page}
        if options:
            options[ALL_ON_PAGE_LABEL] = ALL_ON_PAGE
        return options

    def picked_gain(self, choice: str | None) -> float | None:
        """The gain the picker shows for ``choice`` (a shaft or ``ALL_ON_PAGE``): None when the page's shafts differ."""
        gains = self.shaft_gain or {}
        shafts = self.page_shafts() if choice == ALL_ON_PAGE else [choice]
        values = {float(gains.get(s, 1.0) or 1.0) for s in shafts if s is not None}
        return values.pop() if len(values) == 1 else None

    def set_picked_gain(self, choice: str | None, gain: float) -> None:
        """Set the gain of shaft ``choice``, or with ``ALL_ON_PAGE`` of every shaft on the page in view.

        Raises
        ------
        ValueError
            ``gain`` is not a positive number.
        """
        if not (isinstance(gain, int | float) and math.isfinite(gain) and gain > 0):
            raise ValueError(f"gain must be a positive number; got {gain!r}.")
        shafts = self.page_shafts() if choice == ALL_ON_PAGE else [choice] if choice is not None else []
        if shafts:
            self.shaft_gain = {**(self.shaft_gain or {}), **{s: float(gain) for s in shafts}}

    def row_amplitudes(self, rows: MontageRows | None = None) -> np.ndarray:
        """Half-row amplitude of each row, ``amplitude_uv / shaft_gain[shaft]`` (µV), shape (n_rows,)."""
        return self.data.row_amplitudes(rows)

    def _clamp_page(self) -> None:
        if self.page > self.n_pages - 1:
            self.page = self.n_pages - 1

    def _focus_row(self, rows: MontageRows | None = None) -> int | None:
        """Index in ``rows`` (default: all drawn rows) of the first row made from ``focus_channel``."""
        return self.data.focus_row(rows)

    def _go_to_focus(self) -> None:
        row = self._focus_row()
        if row is None:
            if self.focus_channel:
                logger.warning("Focus channel %r is not a shown iEEG channel of this recording.", self.focus_channel)
                self._notice = (
                    f"Channel {self.focus_channel!r} is not shown (not a good iEEG channel of this recording)."
                )
                self._show_error(self._notice)
            return
        page = self.data.page_of_row(row)
        if page != self.page:
            self.page = page

    # ---------------------------------------------------------------- time

    @property
    def duration_s(self) -> float:
        """Length of the recording (s); 0 without one."""
        return self.data.duration_s

    def window(self) -> tuple[float, float]:
        """The visible window ``(t0, t1)`` in s, clipped to the recording."""
        return self.data.window()

    def effective_bin_s(self) -> float:
        """Heat-map bin: ``bin_s``, else the scores' window stride, else 1 s."""
        return self.data.effective_bin_s()

    # ---------------------------------------------------------------- reading (answered by self.data)

    def read_plan(self, rows: MontageRows | None = None) -> ReadPlan:
        """Which channels to read for ``rows`` (default the page's), with the rows re-indexed onto them."""
        return self.data.read_plan(rows)

    def read_rows(self, plan: ReadPlan, start: int, stop: int, *, filtered: bool = True) -> np.ndarray:
        """Montage signals of ``plan.rows`` over samples ``[start, stop)``, shape (n_rows, stop - start), float32 µV.

        See :meth:`.TraceData.read_rows`.
        """
        return self.data.read_rows(plan, start, stop, filtered=filtered)

    def envelope(
        self, plan: ReadPlan, start: int, stop: int, n_bins: int, *, filtered: bool = True
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Per-bin min/max of the rows of ``plan`` over ``[start, stop)``: edges (n_bins + 1,), lo, hi (n_rows, n_bins).

        See :meth:`.TraceData.envelope`.
        """
        return self.data.envelope(plan, start, stop, n_bins, filtered=filtered)

    def page_envelope(self, rows: MontageRows | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Unfiltered min/max envelope of ``rows`` over the whole recording (cached)."""
        return self.data.page_envelope(rows)

    def can_summarise(self, rows: MontageRows | None = None) -> bool:
        """Whether the overview may read ``rows`` (default the page's) over the whole recording."""
        return self.data.can_summarise(rows)

    def visible_envelope(self, plan: ReadPlan, start: int, stop: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Min/max envelope of the page over ``[start, stop)`` at two bins per pixel (cached or read)."""
        return self.data.visible_envelope(plan, start, stop)

    # ---------------------------------------------------------------- heat map (answered by self.data)

    def heat_rows(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Binned p(SOZ), p0, p1 (n_rows, n_bins) for every row of :meth:`rows`, and the edges (n_bins + 1,)."""
        return self.data.heat_rows()

    def has_artifacts(self) -> bool:
        """Whether the scores flag any window as an artifact (the main plot then has the artifact overlay)."""
        return self.data.has_artifacts()

    def artifact_rows(self) -> tuple[np.ndarray, np.ndarray]:
        """Share of each row's window time flagged as artifact (n_rows, n_bins), and the edges (n_bins + 1,)."""
        return self.data.artifact_rows()

    def flagged_channels(self) -> dict[str, str]:
        """``{channel: reason}`` of the shown contacts the artifact detector flagged (from the scores' channel flags)."""
        from sss_viewer.viewer.ranking import channel_artifacts

        flags = channel_artifacts(self.scores)
        return {c: flags[c] for c in self.contacts() if c in flags}

    def page_heat(self) -> tuple[np.ndarray, np.ndarray]:
        """The page's heat-map rows (n_page_rows, n_bins, 3: p(SOZ), p0, p1), top row first, and the edges."""
        return self.data.page_heat()

    # ---------------------------------------------------------------- elements

    def _plot_height(self, n_rows: int) -> int:
        return int(np.clip(self.row_height * max(n_rows, 1), 240, 900))

    def _curves_enabled(self, n_rows: int) -> bool:
        return n_rows <= self.max_curve_rows

    def n_slots(self) -> int:
        """Rows drawn on every page: ``page_size``, or all rows when there are fewer (a short last page has empty rows)."""
        return self.data.n_slots()

    def slot_labels(self) -> list[str]:
        """The page's row labels, top first, padded with ``""`` to :meth:`n_slots`.

        A row made from a channel the artifact detector flagged ends in ``[artifact]``; a greyed row
        of an excluded channel ends in its reason (``EKG1 [ecg — not scored]``, ``LA2 [bad (marked)]``).
        """
        labels = self.display_labels()
        flagged = self.flagged_channels()
        drawn = self.data.drawn()
        members_of = self.page_rows().members
        if flagged:
            labels = [
                f"{label} {ARTIFACT_MARK}" if any(drawn.names[m] in flagged for m in members) else label
                for label, members in zip(labels, members_of)
            ]
        for r in self.greyed_slots():
            labels[r] = f"{labels[r]} [{drawn.excluded[drawn.names[members_of[r][0]]]}]"
        return labels + [""] * (self.n_slots() - len(labels))

    def _clip_limits(self, amplitudes: np.ndarray) -> np.ndarray | None:
        """Largest excursion drawn per row (µV): ``CLIP_ROWS`` row spacings, or None with clipping off."""
        return self.data.clip_limits(amplitudes)

    def main_element(self, t0: float, t1: float) -> hv.Overlay:
        """The main overlay for the window ``[t0, t1]`` (what the DynamicMap callback returns).

        See :meth:`main_layers` for the layers.
        """
        overlay = self._template(
            "overlay",
            lambda: main_overlay_template(
                self.plot_width, self._plot_height(self.n_slots()), self._title(), self._decorate_main
            ),
        )
        return overlay.clone(self.main_layers(t0, t1))

    def main_layers(self, t0: float, t1: float, *, raw_curves: bool = False) -> list:
        """The layers of the main overlay for the window ``[t0, t1]``, bottom to top.

        Layers, bottom to top: heat map ``hv.Image``, the artifact overlay ``hv.Image`` (only when the
        scores flag windows: :meth:`has_artifacts`), datashaded ``hv.RGB`` (empty when curves are
        drawn), one ``hv.Curve`` per row slot when the page can have curves (empty when datashaded
        or past the last row), marker spans and lines, the focus band, marker labels, the scale bar.
        With ``raw_curves``, each curve is its data source's columns instead (``{"time": (n,) float64,
        "amplitude": (n,) float32}``), for :class:`.inplace.LayerPlots` to put in place without
        building HoloViews elements (only valid while every row keeps its amplitude range).
        Every page has :meth:`n_slots` rows, so paging updates the same bokeh models. Each row is
        drawn minus its median over the window and, with ``clip_traces``, clipped to ±``CLIP_ROWS``
        row spacings.
        """
        ensure_bokeh()
        rows = self.page_rows()
        n = len(rows)
        slots = max(self.n_slots(), n)
        m = max(slots, 1)
        T = hv.Dimension("time", label="time", unit="s", range=(t0, t1))
        Y = hv.Dimension("row", label=" ")
        amplitudes = self.row_amplitudes(rows)
        limits = self._clip_limits(amplitudes)
        focus = self._focus_row(rows)
        curves_enabled = self._curves_enabled(slots)
        zoomed_in = curves_enabled and (t1 - t0) <= self.datashade_above_s
        rec = self.recording
        start, stop = sample_range(t0, t1, rec.sfreq, rec.n_times)
        plan = self.read_plan(rows)

        layers = [self._heat_image(t0, t1, T, Y, m)]
        if self.has_artifacts():
            layers.append(self._artifact_image(t0, t1, T, Y, m))
        curves = [(np.zeros(0), np.zeros(0))] * slots
        rgba = np.zeros((1, 1, 4), dtype=np.uint8)
        if zoomed_in and n:
            data = centre_and_clip(self.read_rows(plan, start, stop), limits)
            t = np.arange(start, stop) / rec.sfreq
            for r in range(n):
                idx = decimate_minmax_lttb(t, data[r], 2 * self.plot_width)
                curves[r] = (t[idx], data[r, idx].astype(np.float32))  # half the bytes to the browser
        elif n:
            edges, lo, hi = self.visible_envelope(plan, start, stop)
            lo, hi = row_units(*clip_envelope(lo, hi, limits), amplitudes, m)
            greyed = set(self.greyed_slots(rows))
            colours = [
                FOCUS_COLOUR if r == focus else EXCLUDED_COLOUR if r in greyed else TRACE_COLOUR for r in range(n)
            ]
            rgba = rasterise_envelopes(
                bin_centres(edges, rec.sfreq), lo, hi, (t0, t1), m, self.plot_width, self._plot_height(slots), colours
            )
        rgb = self._template("rgb", traces_template)
        layers.append(rgb.clone(rgba, bounds=(t0, -0.5, t1, m - 0.5), kdims=[T, Y]))
        if curves_enabled:
            base = float(self.amplitude_uv or 100.0)
            # subcoordinate_y puts curve k at y = k (bottom up): add the page's last slot first.
            for r in reversed(range(slots)):
                a = float(amplitudes[r]) if r < n else base
                if raw_curves:
                    layers.append({"time": curves[r][0], "amplitude": curves[r][1]})
                    continue
                curve = self._template(("curve", r), lambda r=r: curve_template(r))
                layers.append(curve.clone(curves[r], kdims=[T], vdims=[amplitude_dimension(r, a)]))
        layers.extend(self._template("markers", lambda: marker_elements(self.markers)))
        layers.append(self._focus_band(t0, t1, T, Y, m, focus))
        layers.extend(self._marker_labels(t0, t1, T, Y, m))
        layers.extend(self._scale_bar(t0, t1, T, Y, m, amplitudes, rows))
        # Every element is a clone of a template made once per figure with its options (a clone
        # keeps them): no .opts() per frame, which costs more than drawing the frame. Never
        # .opts() in place either: HoloViews may reuse the id of an unreferenced custom option
        # tree, and another plot's options then leak into this one.
        return layers

    def _template(self, key, make):
        """The element ``make()`` (with its options) for ``key``, made once per figure structure."""
        template = self._templates.get(key)
        if template is None:
            template = self._templates[key] = make()
        return template

    def _title(self) -> str:
        return f"{self._label()} — {self.montage}, rows {self._page_range_text()}"

    def _heat_notes(self, labels: list[str]) -> list[str]:
        """Heat-map hover text per slot, bottom row first: ``LA1-LA2 (mean of LA1, LA2)`` for bipolar rows."""
        contacts = self.data.drawn().display
        notes = [
            f"{label} (mean of {', '.join(contacts[m] for m in members)})" if len(members) > 1 else label
            for label, members in zip(labels, self.page_rows().members)
        ]
        return (notes + labels[len(notes) :])[::-1]

    def _decorate_main(self, plot, element) -> None:
        """HoloViews hook, run on every frame: what changes with the page in the bokeh models.

        The title, the row labels on the y axis, the curves' names, colours and hover text, the heat
        map's hover rows and the focus band. Models are only touched where a value changed, and the
        hover formatters are made per plot (a bokeh model never serves two documents).
        """
        self._main_x_range = plot.state.x_range  # for the overview drawn next in the same layout
        self._main_layers.note(plot, element)
        self._decorate_page(plot)
        self._skip_range_echo(plot)

    def _skip_range_echo(self, plot) -> None:
        """Spare a newly drawn main plot HoloViews' second drawing of the same window.

        Drawing a new overlay, HoloViews queues its ``RangeX`` stream to be triggered once the
        figure is made (an overlay's ``xlim`` default, ``(nan, nan)``, counts as set), which
        draws the first frame a second time: every glyph updated again, about a page change's
        cost on each figure build. Where the range it would send is the window just drawn, that
        frame would be the same (:meth:`_callback` returns the one it drew), so the trigger is
        dropped and the range noted as seen; any other range is left to HoloViews.
        """
        stream, window = self._range, self._stream
        queued = getattr(plot, "_trigger", None)
        if stream is None or window is None or not queued or stream not in queued:
            return
        x_range = stream.x_range
        if x_range is None or None in x_range:
            return
        t0, t1 = max(0.0, float(x_range[0])), min(self.duration_s, float(x_range[1]))
        if (round(t0, 6), round(t1, 6)) != tuple(round(float(v), 6) for v in window.window):
            return
        self._last_x_range = x_range
        queued.remove(stream)

    def _decorate_page(self, plot) -> None:
        """Title, row labels, curve names and colours, heat-map hover rows of the current page."""
        labels = self.slot_labels()
        decorate_page(
            plot,
            title=self._title(),
            labels=labels,
            focus=self._focus_row(self.page_rows()),
            heat_notes=self._heat_notes(labels),
            bin_s=self.effective_bin_s(),
        )
        self._grey_excluded_curves(plot)

    def _grey_excluded_curves(self, plot) -> None:
        """Draw the curves of the page's greyed rows (excluded channels) in ``EXCLUDED_COLOUR``."""
        greyed = self.greyed_slots()
        if not greyed:
            return
        focus = self._focus_row(self.page_rows())
        names = {slot_label(r): r for r in greyed if r != focus}
        for sub in plot.subplots.values():
            frame = getattr(sub, "current_frame", None)
            renderer = sub.handles.get("glyph_renderer") if isinstance(frame, hv.Curve) else None
            if renderer is not None and frame.label in names:
                set_changed(renderer.glyph, line_color=EXCLUDED_COLOUR)

    def _decorate_overview(self, plot, element) -> None:
        """HoloViews hook of the overview: one RangeTool on the x range of the main plot of the same layout.

        Layout plots are made in order, so the main plot (first) has just been decorated with
        :meth:`_decorate_main`, which noted its x range. Later frames find the tool in place.
        """
        self._overview_layers.note(plot, element)
        add_range_tool(plot.state, self._main_x_range)

    def _heat_image(self, t0: float, t1: float, T, Y, m: int) -> hv.Image:
        """The page's heat-map rows over ``[t0, t1]`` on ``m`` slots (empty slots are NaN: transparent)."""
        heat, edges = self.page_heat()
        n_bins = heat.shape[1]
        bin_s = edges[1] - edges[0]
        b0 = int(np.clip(math.floor(t0 / bin_s + 1e-9), 0, n_bins - 1))
        b1 = int(np.clip(math.ceil(t1 / bin_s - 1e-9), b0 + 1, n_bins))
        block = np.full((m, b1 - b0, 3), np.nan)
        block[: heat.shape[0]] = heat[:, b0:b1]
        alpha = self.heat_opacity if self.show_heatmap else 0.0
        title = self.heat_title()
        image = self._template(("heat", alpha, title), lambda: heat_template(alpha, title))
        return image.clone(block, bounds=(edges[b0], -0.5, edges[b1], m - 0.5), kdims=[T, Y])

    def _artifact_image(self, t0: float, t1: float, T, Y, m: int) -> hv.Image:
        """The page's artifact shares over ``[t0, t1]`` on ``m`` slots, on the heat map's bins (NaN: transparent)."""
        share, edges = self.artifact_rows()
        page = share[self.data.page_slice()]
        n_bins = share.shape[1]
        bin_s = edges[1] - edges[0]
        b0 = int(np.clip(math.floor(t0 / bin_s + 1e-9), 0, n_bins - 1))
        b1 = int(np.clip(math.ceil(t1 / bin_s - 1e-9), b0 + 1, n_bins))
        block = np.full((m, b1 - b0), np.nan)
        block[: page.shape[0]] = page[:, b0:b1]
        image = self._template("artifact", artifact_template)
        return image.clone(block, bounds=(edges[b0], -0.5, edges[b1], m - 0.5), kdims=[T, Y])

    def heat_title(self) -> str:
        """What the heat map's colour shows: p(SOZ) for a model, a marker's value ÷ the top channel's for a marker."""
        info = getattr(self.scores, "scorer_info", None) or {}
        if self.scores is None or self.scores.scorer == "sss" or not info.get("title"):
            return HEAT_TITLE
        return f"{str(info['title']).lower()} ÷ top channel"

    def _marker_labels(self, t0: float, t1: float, T, Y, n: int) -> list[hv.Labels]:
        """Bold labels at the top of the plot in their markers' colours, shortened to ``MARKER_LABEL_CHARS``.

        One element; each label's colour is a column of its data source and the offset from the
        line is in the data, so a new window or page changes only the data source.
        """
        xs, texts, colours = marker_label_data(self.markers, t0, t1)
        labels = self._template("labels", marker_label_template)
        return [labels.clone((xs, np.full(len(xs), max(n, 1) - 0.5), texts, colours), kdims=[T, Y])]

    def _focus_band(self, t0: float, t1: float, T, Y, m: int, focus: int | None) -> hv.Rectangles:
        """A faint band behind the focus row (a glyph, so moving it only changes data; empty without focus)."""
        k = m - 1 - focus if focus is not None else 0
        boxes = [(t0, k - 0.5, t1, k + 0.5)] if focus is not None else []
        band = self._template("focus", focus_band_template)
        return band.clone(boxes, kdims=[T, Y, "time_end", "row_top"])

    def _scale_bar(self, t0: float, t1: float, T, Y, m: int, amplitudes: np.ndarray, rows: MontageRows) -> list:
        path, label = self._template("scale", scale_bar_templates)
        if not len(amplitudes):
            return [path.clone([], kdims=[T, Y]), label.clone(([], [], []), kdims=[T, Y])]
        a = float(amplitudes[0])
        length = nice_scale(a)
        height = length / (2 * a)
        x = t1 - 0.01 * (t1 - t0)
        k = m - 1
        text = f"{length:g} µV"
        if self.data.custom_gains():
            shown = {key: name for name, key in self.shaft_options().items()}
            text += f" ({shown.get(rows.shafts[0], rows.shafts[0])})"
        return [
            path.clone([np.array([[x, k - height / 2], [x, k + height / 2]])], kdims=[T, Y]),
            label.clone(([x - 0.005 * (t1 - t0)], [k], [text]), kdims=[T, Y]),
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

    def _timecourse_element(self, t0: float, t1: float):
        course = self.timecourse.figure().redim.range(time=(t0, t1))
        return course.opts(hv.opts.Overlay(frame_width=self.plot_width, backend_opts=PLOT_BACKEND_OPTS))

    def _build(self):
        """Compose the DynamicMap main view, the optional time course and the DynamicMap overview."""
        if self.recording is None:
            return hv.Div("<p>No recording loaded.</p>")
        ensure_bokeh()
        t0, t1 = self.window()
        self._last_good = None
        self._last_x_range = None
        self._templates = {}
        self._main_layers.forget()
        self._overview_layers.forget()
        self._built_slots = self.n_slots()
        self._montage_pending = False
        self._page_key = (min(self.page, self.n_pages - 1), self.focus_channel)
        self._stream = _ViewEvent(window=(t0, t1), version=0)
        self._overview_stream = _OverviewEvent(version=0)
        self._range = hv.streams.RangeX()
        # Options are set inside the callback (main_element), not with DynamicMap.opts, which
        # wraps the callback in an operation that applies them to every frame a second time.
        dmap = hv.DynamicMap(self._callback, streams=[self._range, self._stream])
        self._main = dmap
        self._attach_cursor(dmap)  # pointer readout, clicks and x-drags: subscribers, never inputs of _callback
        parts = [dmap]
        if self.timecourse is not None:
            parts.append(self._timecourse_element(t0, t1))
        self._overview_dmap = None
        if self.show_overview:
            # Not a RangeToolLink (see range_tool): the overview's hook adds the tool for the main x range.
            overview = hv.DynamicMap(lambda version: self.overview(), streams=[self._overview_stream])
            self._overview_dmap = overview
            parts.append(overview)
        if len(parts) == 1:
            return dmap
        # Layout shares axes by default (the time course follows the traces). No .opts() here: on
        # a Layout it wraps the DynamicMap in an operation that re-applies options to every frame.
        return hv.Layout(parts).cols(1)

    def static_figure(self):
        """A copy of what is shown made of plain elements (no DynamicMap, no stream, no link to the live plot).

        What exports render: each export draws it into new bokeh models, so the live document's
        models are never touched or shared. The overview marks the visible window with a box.
        """
        if self.recording is None:
            return hv.Div("<p>No recording loaded.</p>")
        ensure_bokeh()
        t0, t1 = self.window()
        parts = [self.main_element(t0, t1)]
        if self.timecourse is not None:
            parts.append(self._timecourse_element(t0, t1))
        if self.show_overview:
            parts.append(self.overview())  # its hook draws the window box for this copy's main plot
        return parts[0] if len(parts) == 1 else hv.Layout(parts).cols(1)

    def _page_range_text(self) -> str:
        labels = self.display_labels()
        if not labels:
            return "none"
        return f"{labels[0]} … {labels[-1]} (page {min(self.page, self.n_pages - 1) + 1}/{self.n_pages})"

    def overview_heat(self) -> tuple[np.ndarray, np.ndarray]:
        """Where p(SOZ) is high over the whole recording: per bin, the mean of the ``OVERVIEW_TOP_K`` highest rows.

        Over every row of the montage (all pages), so it does not change with the page
        (:meth:`.TraceData.overview_heat`).

        Returns
        -------
        values : ndarray, shape (n_bins,)
            NaN where nothing was scored.
        edges : ndarray, shape (n_bins + 1,)
        """
        return self.data.overview_heat()

    def _overview_ink(self, rows: MontageRows, m: int) -> np.ndarray:
        """The overview's raster of the page's envelopes: 1 where a trace passes, else 0.

        Returns
        -------
        ink : ndarray, shape (OVERVIEW_HEIGHT, plot_width), uint8
            Row 0 at the top. One colour, so a byte per pixel (coloured in the browser): a quarter
            of RGBA's bytes. Kept per page (with the page envelopes), so going back costs nothing.
        """
        amplitudes = self.row_amplitudes(rows)
        key = (self.data.envelope_key(rows), m, tuple(amplitudes), self.clip_traces)
        cached = lru_get(self._ink_cache, key)
        if cached is not None:
            return cached
        n = len(rows)
        edges, lo, hi = self.page_envelope(rows)
        coarse = rebin_envelope(edges, lo, hi, 0, self.recording.n_times, 2 * self.plot_width)
        edges, lo, hi = coarse if coarse is not None else (edges, lo, hi)
        lo, hi = row_units(*clip_envelope(lo, hi, self._clip_limits(amplitudes)), amplitudes, m)
        centres = bin_centres(edges, self.recording.sfreq)
        rgba = rasterise_envelopes(
            centres, lo, hi, (0.0, self.duration_s), m, self.plot_width, OVERVIEW_HEIGHT, [OVERVIEW_TRACE_COLOUR] * n
        )
        return lru_put(self._ink_cache, key, (rgba[..., 3] > 0).astype(np.uint8), OVERVIEW_INK_PAGES)

    def overview(self) -> hv.Overlay:
        """Whole-recording overview: top-k p(SOZ) heat strip under a light envelope of the page's rows, and the markers.

        The strip has the main heat map's colours and fixed 0–1 scale, with its own colour bar.
        The traces are the page's min-max envelope (cached per page), each row minus its median and
        clipped as in the main view; display filters are not applied, so reading stays one pass.

        Returns
        -------
        overview : hv.Overlay
        """
        ensure_bokeh()
        rows = self.page_rows()
        n = len(rows)
        m = max(self.n_slots(), n, 1)
        ink = np.zeros((1, 1), dtype=np.uint8)
        summarised = bool(n) and self.can_summarise(rows)
        if summarised:
            ink = self._overview_ink(rows, m)
        top, heat_edges = self.overview_heat()
        return overview_overlay(
            top,
            heat_edges,
            ink,
            duration=self.duration_s,
            n_slots=m,
            markers=self.markers,
            plot_width=self.plot_width,
            top_k=OVERVIEW_TOP_K,
            summarised=summarised,
            hook=self._decorate_overview,
        )

    def figure(self):
        """The current composed HoloViews object (main view, optional time course, overview).

        Build it once per structure (recording, montage, rows …); zoom/pan, page and display
        changes update it in place. Export :meth:`static_figure` (a plain copy), not this one.
        """
        if self._figure is None:
            self._figure = self._build()
            register_static_copy(self._figure, self.static_figure)
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
            "excluded_channels": self.excluded(),
            "focus_channel": self.focus_channel,
            "datashaded": not (self._curves_enabled(self.n_slots()) and (t1 - t0) <= self.datashade_above_s),
            "clip_traces": self.clip_traces,
            "amplitude_warning": self.amplitude_warning,
        }

    # ---------------------------------------------------------------- reactions

    def _invalidate(self, *events) -> None:
        """A structure change: the current figure takes no more updates until it is rebuilt."""
        self._dirty = True
        self._stream = None
        self._overview_stream = None

    def _begin_montage(self, *events) -> None:
        """A montage switch: update the drawn figure when it keeps its row slots, else rebuild it.

        Runs before the other watchers of ``montage`` (the focus page, the automatic amplitude):
        while it is pending, they change no plot, and :meth:`_end_montage`, the last watcher,
        updates the main plot and the overview once. A rebuild (a different number of row slots,
        or no drawn figure) goes the way of every structure change.
        """
        updatable = (
            self._figure is not None
            and self._stream is not None
            and not self._dirty
            and self.recording is not None
            and self.n_slots() == self._built_slots
        )
        if updatable:
            self._montage_pending = True
        else:
            self._invalidate()

    def _end_montage(self, *events) -> None:
        """After a montage switch's other watchers: one update of the drawn figure (in place in a session), or the rebuild.

        The rebuild is left out where another structure change of the same batch has already
        rebuilt the figure (outside a server session, :meth:`_on_structure` rebuilds at once).
        """
        if not self._montage_pending:
            if self._dirty:
                self._on_structure()
            return
        self._montage_pending = False
        self._clamp_page()
        if self._stream is None:  # a structure change came in between: it rebuilds
            return
        self._page_key = (min(self.page, self.n_pages - 1), self.focus_channel)
        self._last_good = None
        with _one_message(), data_only_freeze(pn.state.curdoc):
            # In a session: the new rows' data, labels and amplitude ranges into the drawn glyphs.
            if not self._redraw_in_place(self.window(), overview=True, heat=True):
                self._main_layers.forget()  # the hooks of the update below note the new frames again
                self._overview_layers.forget()
                self._stream.event(version=self._stream.version + 1)
                if self._overview_stream is not None:
                    self._overview_stream.event(version=self._overview_stream.version + 1)
            self._sync_widgets()

    def _on_markers(self, *events) -> None:
        """New markers: their layers of the drawn figure take the new data (no rebuild).

        In a session only the markers' glyphs change (:meth:`_redraw_markers`); elsewhere the
        figure takes HoloViews' update. A pending rebuild or montage update draws them anyway.
        """
        self._last_good = None
        if self._dirty or self._montage_pending or self._stream is None or self._figure is None:
            self._templates.pop("markers", None)
            return
        with _one_message(), data_only_freeze(pn.state.curdoc):
            if self._redraw_markers(_session_document()):
                return
            self._templates.pop("markers", None)
            self._stream.event(version=self._stream.version + 1)
            if self._overview_stream is not None:
                self._overview_stream.event(version=self._overview_stream.version + 1)

    def _on_recording(self, *events) -> None:
        self._ink_cache.clear()  # the data object forgets its envelopes and heat rows itself
        self._figure = None
        self.amplitude_warning = ""
        if self.recording is not None:
            if self.start_s > self.recording.duration_s:
                self.start_s = 0.0
            self._rescale(warn=True)

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
            self._timecourse_watcher = (course, course.param.watch(self._on_timecourse_change, names))

    def _on_timecourse_change(self, *events) -> None:
        self._invalidate()
        self._on_structure()

    def _on_structure(self, *events) -> None:
        """Rebuild the figure; in a server session once per tick, however many changes the tick brings.

        Opening a recording sets the recording, the page, the markers and the bad channels in
        separate steps: the figure is built once, after the last of them.
        """
        self._clamp_page()
        self._figure = None
        self._templates = {}
        doc = _session_document()
        if self._pane is None or doc is None:
            self._dirty = False
            if self._pane is not None:
                self._refresh_pane()
            return
        if not self._refresh_scheduled:
            self._refresh_scheduled = True
            doc.add_next_tick_callback(partial(self._deferred_refresh, doc))

    def _deferred_refresh(self, doc) -> None:
        self._refresh_scheduled = False
        if not self._dirty:
            return
        self._dirty = False
        with set_curdoc(doc):
            self._refresh_pane()

    def _on_page(self, *events) -> None:
        """Page or focus change: new data in the same bokeh models (no rebuild, nothing new for the browser to lay out)."""
        if self._dirty or self._montage_pending:  # a structure change or montage switch in the same batch redraws
            return
        self._clamp_page()
        if self._stream is None:
            if self._pane is not None and self._figure is None:
                self._refresh_pane()
            return
        key = (min(self.page, self.n_pages - 1), self.focus_channel)
        if key == self._page_key:
            return
        new_page = self._page_key is None or key[0] != self._page_key[0]
        self._page_key = key
        # Both plots update in one message to the browser; the model graph is left as it is.
        with _one_message(), data_only_freeze(pn.state.curdoc):
            if self._redraw_in_place(self.window(), overview=new_page):
                return
            self._stream.event(version=self._stream.version + 1)
            if new_page and self._overview_stream is not None:
                self._overview_stream.event(version=self._overview_stream.version + 1)

    def _redraw_in_place(self, window: tuple[float, float], *, overview: bool, heat: bool = False) -> bool:
        """Draw ``window`` of the current page into the session's drawn glyphs (see :mod:`._inplace`).

        Only new data: the same row slots, templates and options as the last full update. Each
        curve's amplitude range (its ``subcoordinate_y`` source range, ±the row's amplitude) is
        set with it, so new rows, a new amplitude or shaft gains draw in place too. With
        ``overview``, the overview's page traces follow (with ``heat``, its p(SOZ) strip too: a
        montage switch changes the rows it summarises). Returns False, having changed nothing,
        where the layers do not fit the drawn plot.
        """
        doc = _session_document()
        if not self._main_layers.ready_for(doc) or self._stream is None:
            return False
        t0, t1 = window
        if not self._main_layers.redraw(self.main_layers(t0, t1, raw_curves=True)):
            return False
        # What a later full update (zoom, display change) starts from: this window, a new version.
        self._stream.update(window=(t0, t1), version=self._stream.version + 1)
        self._last_good = None
        plot = self._main_layers.plot
        set_changed(plot.state.x_range, start=t0, end=t1)
        self._set_row_ranges(plot)
        self._decorate_page(plot)
        if overview and self._overview_stream is not None and not self._redraw_overview(doc, heat=heat):
            self._overview_stream.event(version=self._overview_stream.version + 1)
        return True

    def _set_row_ranges(self, plot) -> None:
        """Each drawn curve's amplitude range: ±its row's amplitude (an empty slot: ±``amplitude_uv``).

        What HoloViews' full update sets from the curve's value dimension (:func:`amplitude_dimension`).
        """
        rows = self.page_rows()
        amplitudes = self.row_amplitudes(rows)
        base = float(self.amplitude_uv or 100.0)
        for sub in plot.subplots.values():
            frame = getattr(sub, "current_frame", None)
            y_range = sub.handles.get("y_range") if isinstance(frame, hv.Curve) else None
            slot = slot_index(frame.label) if y_range is not None else None
            if slot is not None:
                a = float(amplitudes[slot]) if slot < len(rows) else base
                set_changed(y_range, start=-a, end=a)

    def _redraw_overview(self, doc, *, heat: bool = False) -> bool:
        """Put the page's envelopes (with ``heat``, the p(SOZ) strip too) into the drawn overview, or False."""
        layers = self._overview_layers
        current = layers.plot.current_frame if layers.ready_for(doc) else None
        rows = self.page_rows()
        if current is None or not len(rows) or not self.can_summarise(rows):
            return False
        parts = list(current)
        if len(parts) < 3 or not isinstance(parts[0], hv.Image) or not isinstance(parts[1], hv.Image):
            return False
        m = max(self.n_slots(), len(rows), 1)
        parts[1] = parts[1].clone(self._overview_ink(rows, m))
        if heat:
            top, edges = self.overview_heat()
            parts[0] = parts[0].clone(top[None, :], bounds=(edges[0], -0.5, edges[-1], m - 0.5))
        return layers.redraw(current.clone(parts))

    def _redraw_markers(self, doc) -> bool:
        """Put the markers into the drawn main plot and overview (only the layers whose data changed), or False.

        The main overlay's layers end with the markers' elements (:func:`marker_elements`, a fixed
        number), the focus band, the marker labels and the scale bar's two (:meth:`main_layers`);
        the overview's last layer is its marker lines (:func:`overview_overlay`). Each changed
        layer is a clone of the drawn one with the new data (same options), and becomes the
        template later frames are made of. Returns False, having changed nothing, where the drawn
        layers are not these.
        """
        main, overview = self._main_layers, self._overview_layers
        if not main.ready_for(doc) or (self._overview_dmap is not None and not overview.ready_for(doc)):
            return False
        layers = [sub.current_frame for sub in main.subplots]
        data = marker_element_data(self.markers)
        first = len(layers) - _LAYERS_AFTER_MARKERS - len(data)
        labels = first + len(data) + 1
        kinds = [hv.VSpans] + [hv.VLines] * (len(data) - 1)
        parts = list(overview.plot.current_frame) if self._overview_dmap is not None else None
        if first < 0 or [type(el) for el in layers[first : first + len(data)]] != kinds:
            return False
        if not isinstance(layers[labels], hv.Labels) or (parts is not None and not isinstance(parts[-1], hv.VLines)):
            return False
        markers = [el if holds_data(el, d) else el.clone(d) for el, d in zip(layers[first : first + len(data)], data)]
        layers[first : first + len(data)] = markers
        t0, t1 = self._stream.window
        m = max(self.n_slots(), len(self.page_rows()), 1)
        xs, texts, colours = marker_label_data(self.markers, t0, t1)
        label_data = (xs, np.full(len(xs), m - 0.5), texts, colours)
        if not holds_data(layers[labels], label_data):
            layers[labels] = layers[labels].clone(label_data)
        if not main.redraw(layers):
            return False
        self._templates["markers"] = markers
        if parts is not None:
            lines = overview_marker_data(self.markers)
            if not holds_data(parts[-1], lines):
                parts[-1] = parts[-1].clone(lines)
                overview.redraw(parts)
        return True

    def _on_warning(self, *events) -> None:
        if self._warning is not None:
            self._warning.object = self.amplitude_warning
            self._warning.visible = bool(self.amplitude_warning)

    def _on_window(self, *events) -> None:
        if self._syncing or self._stream is None or self._montage_pending:
            return
        with _one_message(), data_only_freeze(pn.state.curdoc):
            if not self._redraw_in_place(self.window(), overview=False):
                self._stream.event(window=self.window())
        self._sync_widgets()

    def _on_display(self, *events) -> None:
        if self._montage_pending:  # the montage switch's own update draws the new amplitude too
            return
        with data_only_freeze(pn.state.curdoc):
            if self._stream is not None:
                self._stream.event(version=self._stream.version + 1)
            overview = {"amplitude_uv", "shaft_gain", "clip_traces"}
            if self._overview_stream is not None and overview & {e.name for e in events}:
                self._overview_stream.event(version=self._overview_stream.version + 1)

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
        labels_all = self.display_labels(self.drawn_rows())
        options = {}
        for p, (lo, hi) in enumerate(self.page_bounds()):
            labels = labels_all[lo:hi]
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
        self._sync_shaft_picker()
        pane = getattr(self, "_excluded_pane", None)
        if pane is not None:
            line = self.excluded_line()
            pane.object = f'<span style="color:#666">{html.escape(line)}</span>' if line else ""
            pane.visible = bool(line)

    def _sync_shaft_picker(self) -> None:
        """The gain picker offers the page's shafts (and ``all on this page``) and shows the gain of the choice.

        A choice still in view is kept; otherwise the first shaft in view is picked.
        """
        w = getattr(self, "_widgets", None)
        if not w:
            return
        options = self.page_shaft_options()
        choice = w["shaft"].value if w["shaft"].value in options.values() else next(iter(options.values()), None)
        self._showing_gain = True  # showing a gain is not setting one
        try:
            w["shaft"].param.update(options=options, value=choice)
            w["gain"].value = self.picked_gain(choice)
        finally:
            self._showing_gain = False

    def _step_time(self, direction: int) -> None:
        duration = self.duration_s
        t0 = self.start_s + direction * self.span_s
        self._set_together(start_s=float(np.clip(t0, 0.0, max(0.0, duration - self.span_s))))

    def _step_page(self, direction: int) -> None:
        self._set_together(page=int(np.clip(self.page + direction, 0, self.n_pages - 1)))

    def _set_together(self, **values) -> None:
        """Set parameters from a widget: every change it causes reaches the browser in one message.

        Other components that follow these parameters (panes of the page re-rendered, widgets)
        change in the same batch, and the document's model graph, which each new bokeh model
        makes bokeh recompute, is recomputed once at the end (:func:`.inplace.data_only_freeze`).
        """
        with _one_message(), data_only_freeze(pn.state.curdoc):
            self.param.update(**values)

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
        # Not linked with from_param: a switch from the buttons goes through _set_together.
        w["montage"] = pn.widgets.RadioButtonGroup(label="montage", options=list(MONTAGES), value=self.montage)
        w["montage"].param.watch(lambda e: self._set_together(montage=e.new), "value")
        self.param.watch(lambda e: setattr(w["montage"], "value", e.new), ["montage"])
        w["amplitude"] = pn.widgets.FloatInput.from_param(
            self.param.amplitude_uv, label="amplitude (µV)", step=10.0, width=110
        )
        # The gain acts on what is visible: the picker offers the page's shafts and "all on this page".
        shafts = self.page_shaft_options()
        first = next(iter(shafts.values()), None)
        w["shaft"] = pn.widgets.Select(label="shaft", options=shafts, value=first, width=130)
        gain = self.picked_gain(first)
        w["gain"] = pn.widgets.FloatInput(label="gain ×", value=gain, step=0.5, start=0.01, width=80)
        self._showing_gain = False

        def _gain_from_shaft(event):
            self._showing_gain = True
            try:
                w["gain"].value = self.picked_gain(event.new)
            finally:
                self._showing_gain = False

        def _set_gain(event):
            if not self._showing_gain and event.new:
                self.set_picked_gain(w["shaft"].value, float(event.new))

        w["shaft"].param.watch(_gain_from_shaft, "value")
        w["gain"].param.watch(_set_gain, "value")
        self.param.watch(lambda e: self._sync_shaft_picker(), ["page", "shaft_gain"])
        w["show_excluded"] = pn.widgets.Checkbox.from_param(self.param.show_excluded, label="excluded channels")
        w["highpass"] = pn.widgets.FloatInput.from_param(self.param.highpass_hz, label="high-pass (Hz)", width=100)
        w["lowpass"] = pn.widgets.FloatInput.from_param(self.param.lowpass_hz, label="low-pass (Hz)", width=100)
        w["notch"] = pn.widgets.FloatInput.from_param(self.param.notch_hz, label="notch (Hz)", width=90)
        w["opacity"] = pn.widgets.FloatSlider.from_param(self.param.heat_opacity, label="heat opacity", width=140)
        w["show_heat"] = pn.widgets.Checkbox.from_param(self.param.show_heatmap, label="heat map")
        w["clip"] = pn.widgets.Checkbox.from_param(self.param.clip_traces, label="clip rows")
        return w

    def __panel__(self):
        if self._panel is None:
            self._widgets = self._make_widgets()
            w = self._widgets
            self._alert = pn.pane.Alert("", alert_type="danger", visible=False)
            self._warning = pn.pane.Alert(
                self.amplitude_warning,
                alert_type="warning",
                visible=bool(self.amplitude_warning),
                sizing_mode="stretch_width",
            )
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
                w["clip"],
                w["show_excluded"],
            )
            line = self.excluded_line()
            self._excluded_pane = pn.pane.HTML(
                f'<span style="color:#666">{html.escape(line)}</span>' if line else "",
                visible=bool(line),
                sizing_mode="stretch_width",
                css_classes=["sss-excluded-channels"],
            )
            self._panel = pn.Column(navigation, display, self._warning, self._alert, self._pane, self._excluded_pane)
            self._panel.insert(list(self._panel).index(self._pane), self.cursor)  # readout + "click adds" over the plot
        return self._panel

    # ---------------------------------------------------------------- pointer readout, measurement, markers

    cursor_s = param.Number(
        default=None,
        allow_None=True,
        doc="Time (s) under the pointer on the traces, to the ms; None once the pointer leaves them (set by cursor).",
    )

    @property
    def cursor(self) -> TraceCursor:
        """The readout, two-point measurement and "click adds" mode of the traces (:mod:`._trace_cursor`)."""
        cursor = self.__dict__.get("_cursor")
        if cursor is None:
            cursor = self._cursor = TraceCursor(view=self)
        return cursor

    def _attach_cursor(self, dmap: hv.DynamicMap) -> None:
        """Connect the main plot's gestures to :attr:`cursor` and give the plot its x-select tool.

        Linked streams with ``dmap`` as their source, each with one subscriber: they are not
        inputs of the DynamicMap, so no pointer move, click or drag redraws the traces.
        """
        cursor = self.cursor
        hv.streams.PointerXY(source=dmap).add_subscriber(cursor.hover)
        hv.streams.MouseLeave(source=dmap).add_subscriber(cursor.leave)
        hv.streams.SingleTap(source=dmap).add_subscriber(cursor.tap)
        hv.streams.DoubleTap(source=dmap).add_subscriber(cursor.double_tap)
        hv.streams.BoundsX(source=dmap).add_subscriber(cursor.select_x)
        self._cursor_plot = None
        # The main overlay's template (made once per figure), with a hook that adds the x-select tool.
        template = main_overlay_template(
            self.plot_width, self._plot_height(self.n_slots()), self._title(), self._decorate_main
        )
        self._templates["overlay"] = template.opts(hv.opts.Overlay(hooks=[self._decorate_main, self._decorate_cursor]))

    def _decorate_cursor(self, plot, element) -> None:
        """HoloViews hook of the main plot: its x-select tool (added once); a new live plot gets the mode's drag."""
        add_span_tool(plot.state)
        doc = _session_document()
        if plot is self.__dict__.get("_cursor_plot") or (doc is not None and plot.document not in (None, doc)):
            return  # the same plot, or an export's copy
        self._cursor_plot = plot
        set_span_tool_active(plot.state, self.cursor.mode in MARKER_MODES)

    def activate_span_tool(self, active: bool) -> None:
        """Make a drag on the traces draw a marker span (``True``) or pan in time (``False``)."""
        plot = self.__dict__.get("_cursor_plot")
        if plot is not None:
            set_span_tool_active(plot.state, active)


def _set_option(select, value) -> None:
    options = select.options
    known = options.values() if isinstance(options, dict) else options
    if value not in known and isinstance(options, dict):
        select.options = {**options, f"{value:g} s": value}
    select.value = value

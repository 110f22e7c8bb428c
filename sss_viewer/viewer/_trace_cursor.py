"""Reading the traces under the pointer, measuring between two points, and adding markers from the plot.

What a position on the main trace plot means
--------------------------------------------
The trace view stacks the page's rows with the first row at the top: in plot coordinates row ``k``
(0 = top) of a page with ``m`` row slots is centred on ``y = m − 1 − k`` and spans ``y ± 0.5``
(the y axis runs from −0.5 to m − 0.5; :func:`sss_viewer.viewer._envelope.row_units`). The x axis
is the time in seconds. :func:`row_at` turns a plot ``y`` into the row under it and
:func:`read_at` a plot position into a :class:`TraceReading`: the row's channel, the time and the
signal's value at the nearest sample, in µV, as the view's montage and display filters make it
(the value itself, not minus the row median the plot draws it around).

Gestures (:class:`TraceCursor`, shown above the traces)
-------------------------------------------------------
* **Pointer**: the readout ``t = 12.345 s · RG10 · −123.4 µV``, at most every ``POINTER_THROTTLE_S``
  seconds (bokeh reports every pointer move; a 2-core server is not flooded), and the view's
  ``cursor_s`` (None once the pointer leaves the plot).
* **"click adds"** mode: ``nothing`` (the default: a stray click never adds a marker), ``onset``,
  ``offset``, ``note`` or ``measure``. In a marker mode a *double-click* asks for a marker of that
  kind at that time, and an x-range drag (the toolbar's x-select tool, made the active drag while
  a marker mode is chosen) asks for a span marker: its onset at the left edge, its duration the
  width. In ``measure`` a *single click* sets the first point, the next the second (Δt, ΔV, 1/Δt
  and both channels), a third starts a new measurement; **Clear** drops it.

Marker requests go out through :attr:`TraceCursor.marker_request` (the app adds them to the
annotations); nothing here writes annotations.
"""

from __future__ import annotations

import html
import logging
import math
import time
from dataclasses import dataclass
from functools import partial

import numpy as np
import panel as pn
import param
from bokeh.models import BoxSelectTool, PanTool
from panel.io.state import set_curdoc

from sss_viewer.viewer._display import MontageRows

logger = logging.getLogger(__name__)

POINTER_THROTTLE_S = 0.15
"""Shortest time between two pointer readouts (the last position is always shown, after the wait)."""
MARKER_MODES = ("onset", "offset", "note")
"""Modes in which a double-click or an x-range drag on the traces asks for a marker of that kind."""
CLICK_MODES = ("nothing", *MARKER_MODES, "measure")
"""What the "click adds" picker offers; ``nothing`` is the default."""
NO_READING = "t = – · move the pointer over the traces"
MARKER_DECIMALS = 3
"""Marker times from the plot are rounded to the millisecond."""
HELP = (
    "Pointer over the traces: time, channel and value (µV) at the nearest sample. "
    "“click adds” onset / offset / note: double-click the traces to add that marker there, or drag across "
    "them (x-select tool, made active in these modes) to add it as a span. "
    "measure: click a first and a second point for Δt, ΔV and 1/Δt; a third click starts again; Clear drops it. "
    "nothing (default): clicks add nothing; dragging pans."
)


@dataclass(frozen=True)
class TraceReading:
    """What is under one plot position.

    Attributes
    ----------
    time_s : float
        Time of the sample read (s), ``sample / sfreq``.
    sample : int
        Index of the nearest sample.
    row : int
        Page row (0 = top).
    channel : str
        The row's label as shown (``RG10``, ``RG10-RG11``, ``RG10-avg``).
    value_uv : float
        The row's signal at that sample (µV): montage applied, display filters applied.
    """

    time_s: float
    sample: int
    row: int
    channel: str
    value_uv: float


@dataclass(frozen=True)
class Measurement:
    """Two readings and what lies between them."""

    first: TraceReading
    second: TraceReading

    @property
    def dt_s(self) -> float:
        """Second time minus first (s)."""
        return self.second.time_s - self.first.time_s

    @property
    def dv_uv(self) -> float:
        """Second value minus first (µV)."""
        return self.second.value_uv - self.first.value_uv

    @property
    def frequency_hz(self) -> float:
        """``1 / |Δt|`` (Hz); NaN for two points at the same time."""
        return 1.0 / abs(self.dt_s) if self.dt_s else float("nan")


# --------------------------------------------------------------------------------------------
# Plain functions
# --------------------------------------------------------------------------------------------


def row_at(y: float | None, n_slots: int, n_rows: int) -> int | None:
    """The page row under plot ``y`` (0 = top), or None off the rows.

    Parameters
    ----------
    y : float or None
        Plot y: row ``k`` is centred on ``n_slots − 1 − k``.
    n_slots : int
        Row slots of the plot (a short last page has empty slots at the bottom).
    n_rows : int
        Rows with a signal on this page (``n_rows <= n_slots``).
    """
    if y is None or not math.isfinite(y) or n_rows <= 0:
        return None
    k = int(math.floor(n_slots - 1 - y + 0.5))
    return k if 0 <= k < min(n_rows, n_slots) else None


def signed(value: float, decimals: int = 1) -> str:
    """``value`` with a typographic minus (``−123.4``)."""
    return f"{value:.{decimals}f}".replace("-", "−")


def interval_text(dt_s: float) -> str:
    """A time interval in ms below a second (``250 ms``), else in s (``1.250 s``); signed."""
    if abs(dt_s) < 1.0:
        return f"{signed(dt_s * 1000.0, 1 if abs(dt_s) < 0.1 else 0)} ms"
    return f"{signed(dt_s, 3)} s"


def readout_text(reading: TraceReading | None) -> str:
    """``t = 12.345 s · RG10 · −123.4 µV``, or :data:`NO_READING`."""
    if reading is None:
        return NO_READING
    value = signed(reading.value_uv) if math.isfinite(reading.value_uv) else "–"
    return f"t = {reading.time_s:.3f} s · {reading.channel} · {value} µV"


def measurement_text(first: TraceReading | None, second: TraceReading | None) -> str:
    """What the measurement shows: a prompt for the next click, or Δt, 1/Δt, ΔV and the two channels."""
    if first is None:
        return "measure: click a first point"
    if second is None:
        return f"measure from {first.channel} at {first.time_s:.3f} s: click a second point"
    m = Measurement(first, second)
    freq = f"{m.frequency_hz:.2f} Hz" if math.isfinite(m.frequency_hz) else "– Hz"
    channels = f"{first.channel} → {second.channel}"
    return f"Δt = {interval_text(m.dt_s)} (1/Δt = {freq}) · ΔV = {signed(m.dv_uv)} µV · {channels}"


def read_at(view, x: float | None, y: float | None) -> TraceReading | None:
    """The reading of ``view``'s page at plot position ``(x, y)``, or None off the rows (or without a recording).

    Parameters
    ----------
    view : sss_viewer.viewer.traces.TraceView
        Its page rows, montage, display filters and recording are read.
    x : float
        Time (s); the nearest sample of the recording is read.
    y : float
        Plot y (see :func:`row_at`).
    """
    rec = getattr(view, "recording", None)
    if rec is None or x is None or not math.isfinite(x):
        return None
    rows = view.page_rows()
    n = len(rows)
    slots = max(view.n_slots(), n)
    k = row_at(y, slots, n)
    if k is None:
        return None
    sample = int(np.clip(round(float(x) * rec.sfreq), 0, rec.n_times - 1))
    one = MontageRows(rows.labels[k : k + 1], rows.members[k : k + 1], rows.shafts[k : k + 1], rows.kind)
    value = float(view.read_rows(view.read_plan(one), sample, sample + 1)[0, 0])
    return TraceReading(sample / rec.sfreq, sample, k, view.display_labels(one)[0], value)


def marker_time(x: float | None, duration_s: float) -> float | None:
    """A plot ``x`` as a marker time: within ``[0, duration_s]``, to the millisecond; None without one."""
    if x is None or not math.isfinite(x):
        return None
    return round(float(np.clip(x, 0.0, max(duration_s, 0.0))), MARKER_DECIMALS)


def span_request(kind: str, bounds, duration_s: float) -> dict | None:
    """``{kind, onset_s, duration_s}`` for an x-range ``bounds = (x0, x1)`` dragged on the traces, or None.

    Clipped to the recording (``[0, duration_s]``), rounded to the millisecond; None for no bounds
    or a range of zero width.
    """
    if bounds is None or len(bounds) != 2 or None in bounds:
        return None
    t0, t1 = sorted(marker_time(v, duration_s) for v in bounds)
    if t0 is None or t1 is None or t1 <= t0:
        return None
    return {"kind": kind, "onset_s": t0, "duration_s": round(t1 - t0, MARKER_DECIMALS)}


def span_tool(state) -> BoxSelectTool | None:
    """The x-select tool (a ``BoxSelectTool`` over the width) of a bokeh figure ``state``, or None."""
    tools = getattr(getattr(state, "toolbar", None), "tools", None) or []
    return next((t for t in tools if isinstance(t, BoxSelectTool) and t.dimensions == "width"), None)


def add_span_tool(state) -> BoxSelectTool:
    """The x-select tool of the bokeh figure ``state``, added when it has none.

    It selects no glyph (``renderers=[]``): it only reports the dragged range (selecting would dim
    every glyph outside it, marker labels and spans, until the next reset). One new tool per figure:
    a bokeh model never serves two documents.
    """
    tool = span_tool(state)
    if tool is None:
        tool = BoxSelectTool(dimensions="width", renderers=[], description="Drag a marker span (x-select)")
        state.add_tools(tool)
    return tool


def set_span_tool_active(state, active: bool) -> None:
    """Make a drag on ``state`` draw a span (the x-select tool) or pan in time (the x-pan tool)."""
    toolbar = getattr(state, "toolbar", None)
    tool = span_tool(state)
    if toolbar is None or tool is None:
        return
    pan = next((t for t in toolbar.tools if isinstance(t, PanTool)), None)
    target = tool if active else pan
    if target is not None and toolbar.active_drag is not target:
        toolbar.active_drag = target


def _session_document():
    doc = pn.state.curdoc
    return doc if doc is not None and getattr(doc, "session_context", None) is not None else None


# --------------------------------------------------------------------------------------------
# The component
# --------------------------------------------------------------------------------------------


class TraceCursor(pn.viewable.Viewer):
    """The pointer readout, the two-point measurement and the "click adds" mode of a trace view.

    The trace view attaches its plot's pointer, click, double-click and x-drag streams to
    :meth:`hover`, :meth:`leave`, :meth:`tap`, :meth:`double_tap` and :meth:`select_x` (as
    subscribers: a gesture never redraws the traces). Each may also be called directly.
    """

    view = param.Parameter(default=None, doc="The TraceView read (page rows, montage, filters, recording).")
    mode = param.Selector(objects=list(CLICK_MODES), default="nothing", doc="What a click on the traces does.")
    reading = param.ClassSelector(class_=TraceReading, default=None, allow_None=True, doc="Under the pointer.")
    first = param.ClassSelector(class_=TraceReading, default=None, allow_None=True, doc="Measurement: first point.")
    second = param.ClassSelector(class_=TraceReading, default=None, allow_None=True, doc="Measurement: second point.")
    readout = param.String(default=NO_READING, doc="The readout text.")
    measurement = param.String(default="", doc="The measurement text (empty outside measure mode with no point).")
    marker_request = param.Dict(
        default=None,
        allow_None=True,
        doc="{kind, onset_s, duration_s}: set (and triggered, also when equal to the last) by a double-click or "
        "an x-range drag in a marker mode.",
    )
    throttle_s = param.Number(default=POINTER_THROTTLE_S, bounds=(0, None), doc="Shortest time between readouts.")

    def __init__(self, **params):
        super().__init__(**params)
        self._pending: tuple | None = None
        self._last_shown = -math.inf
        self._scheduled = False
        self._mode = pn.widgets.RadioButtonGroup.from_param(
            self.param.mode, name="click adds", color="light", variant="outline", width=330
        )
        self._readout = pn.pane.HTML(html.escape(self.readout), width=300, margin=(8, 10))
        self._measure = pn.pane.HTML("", min_width=200, margin=(8, 10), sizing_mode="stretch_width")
        self._clear = pn.widgets.Button(label="Clear", width=60, disabled=True)
        self._clear.on_click(lambda e: self.clear())
        self._panel = pn.Row(
            pn.pane.HTML("click adds:", margin=(8, 0, 8, 5)),
            self._mode,
            pn.widgets.TooltipIcon(value=HELP),
            self._readout,
            self._measure,
            self._clear,
            sizing_mode="stretch_width",
        )
        self.param.watch(self._on_mode, "mode")

    def __panel__(self):
        return self._panel

    # ------------------------------------------------------------------ pointer

    def hover(self, x: float | None = None, y: float | None = None) -> None:
        """The pointer moved to ``(x, y)``: show its reading now, or after the throttle wait (only the latest)."""
        self._pending = (x, y)
        doc = _session_document()
        wait = self.throttle_s - (time.monotonic() - self._last_shown)
        if doc is None or wait <= 0:
            self._flush()
        elif not self._scheduled:
            self._scheduled = True
            doc.add_timeout_callback(partial(self._flush_later, doc), max(1, int(wait * 1000)))

    def _flush_later(self, doc) -> None:
        self._scheduled = False
        with set_curdoc(doc):
            self._flush()

    def _flush(self) -> None:
        if self._pending is None:
            return
        x, y = self._pending
        self._pending = None
        self._last_shown = time.monotonic()
        self.show(x, y)

    def show(self, x: float | None, y: float | None) -> TraceReading | None:
        """Read ``(x, y)`` into the readout and the view's ``cursor_s`` at once; the reading (None off the rows)."""
        view = self.view
        try:
            reading = read_at(view, x, y)
        except Exception:  # a reading must never break the plot's interaction
            logger.exception("Could not read the traces at x=%r, y=%r", x, y)
            reading = None
        t = marker_time(x, view.duration_s) if view is not None and view.recording is not None else None
        self.reading = reading
        self.readout = readout_text(reading) if reading is not None or t is None else f"t = {t:.3f} s"
        if view is not None:
            view.cursor_s = t
        return reading

    def leave(self, x: float | None = None, y: float | None = None) -> None:
        """The pointer left the plot: no reading, ``cursor_s`` None (a pending readout is dropped)."""
        self._pending = None
        self.reading = None
        self.readout = NO_READING
        if self.view is not None:
            self.view.cursor_s = None

    # ------------------------------------------------------------------ clicks and drags

    def tap(self, x: float | None = None, y: float | None = None) -> None:
        """A single click: in ``measure`` mode, the first point, else the second, a third starts again."""
        if self.mode != "measure" or x is None or y is None:
            return
        reading = read_at(self.view, x, y)
        if reading is None:
            return
        if self.first is None or self.second is not None:
            self.param.update(first=reading, second=None)
        else:
            self.second = reading

    def double_tap(self, x: float | None = None, y: float | None = None) -> dict | None:
        """A double-click: in a marker mode, ask for a marker of that kind at ``x``; the request, or None."""
        view = self.view
        if self.mode not in MARKER_MODES or view is None or view.recording is None:
            return None
        onset = marker_time(x, view.duration_s)
        if onset is None:
            return None
        return self._request({"kind": self.mode, "onset_s": onset, "duration_s": 0.0})

    def select_x(self, boundsx=None) -> dict | None:
        """An x-range drag ``(x0, x1)``: in a marker mode, ask for a span marker of that kind; the request, or None."""
        view = self.view
        if self.mode not in MARKER_MODES or view is None or view.recording is None:
            return None
        request = span_request(self.mode, boundsx, view.duration_s)
        return self._request(request) if request is not None else None

    def _request(self, request: dict) -> dict:
        with param.discard_events(self):
            self.marker_request = request
        self.param.trigger("marker_request")
        return request

    def clear(self) -> None:
        """Drop the measurement."""
        self.param.update(first=None, second=None)

    @property
    def current_measurement(self) -> Measurement | None:
        """The measurement once both points are set, else None."""
        return Measurement(self.first, self.second) if self.first is not None and self.second is not None else None

    # ------------------------------------------------------------------ display

    def _on_mode(self, event) -> None:
        if event.old == "measure" and event.new != "measure":
            self.clear()
        self._show_measurement()
        if self.view is not None:
            self.view.activate_span_tool(event.new in MARKER_MODES)

    @param.depends("readout", watch=True)
    def _show_readout(self) -> None:
        self._readout.object = html.escape(self.readout)

    @param.depends("first", "second", watch=True)
    def _show_measurement(self) -> None:
        shown = self.mode == "measure" or self.first is not None
        self.measurement = measurement_text(self.first, self.second) if shown else ""
        self._measure.object = html.escape(self.measurement)
        self._clear.disabled = self.first is None

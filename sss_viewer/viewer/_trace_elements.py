"""The trace view's HoloViews elements and Bokeh hooks: curves, heat-map image, markers, overview.

Functions of plain values: no :class:`sss_viewer.viewer.traces.TraceView` state, no reading. The
view makes each element once per figure as a *template* with its options (:func:`curve_template`,
:func:`heat_template`, …) and clones it with each frame's data (a clone keeps the options, so no
``.opts()`` per frame). The hooks (:func:`decorate_page`, :func:`add_range_tool`) set what changes
with the page in the drawn Bokeh models, touching a model only where a value changed
(:func:`set_changed`), so an unchanged value sends nothing to the browser.

The main plot, bottom to top: the p(SOZ) heat map (:func:`heat_template`), the artifact overlay
(:func:`artifact_template`, only when the scores flag windows), the traces raster
(:func:`traces_template`), one curve per row slot (:func:`curve_template`), marker spans and lines
(:func:`marker_elements`), the focus band (:func:`focus_band_template`), marker labels
(:func:`marker_label_template`, :func:`marker_label_data`) and the scale bar
(:func:`scale_bar_templates`). Under it, :func:`overview_overlay` with its :func:`range_tool`.
"""

from __future__ import annotations

from collections.abc import Callable

import holoviews as hv
import numpy as np
from bokeh.models import CustomJSHover, FixedTicker, RangeTool

from sss_viewer.viewer.timecourse import PLOT_BACKEND_OPTS

MARKER_COLOURS = {"onset": "#c62828", "offset": "#212121", "note": "#616161", "event": "#1565c0"}
"""Seizure onset red, offset dark, notes grey, other events blue (lines and their labels)."""
MARKER_LABEL_CHARS = 28
"""Marker labels longer than this are shortened with an ellipsis (the full text is in the annotations)."""
RANGE_BOX_COLOUR = "#1565c0"
OVERVIEW_HEIGHT = 110
TRACE_COLOUR = "#202020"
OVERVIEW_TRACE_COLOUR = "#455a64"
OVERVIEW_INK_CMAP = ["#ffffff00", OVERVIEW_TRACE_COLOUR]
"""Overview trace raster colours: 0 transparent, 1 the trace colour."""
FOCUS_COLOUR = "#c2185b"
HEAT_CMAP = "YlOrRd"
ARTIFACT_CMAP = ["#d6d6d6", "#4a4a4a"]
"""Artifact overlay: light grey where a little of a bin's window time is flagged, dark grey where all of it is."""
ARTIFACT_ALPHA = 0.75
"""Opacity of the artifact overlay (the traces are drawn over it)."""
ARTIFACT_MARK = "[artifact]"
"""Appended to a flagged channel's row label (plain text: it renders without emoji fonts)."""

_SLOT_PREFIX = "row "
_LABEL_COLOUR = "label_colour"
"""Column of the marker labels' data source holding each label's colour."""
_MARKER_COLOUR = "marker_colour"
"""Column of the marker lines' and spans' data sources holding each one's colour."""

CURVE_TOOLTIPS = [("channel", "$name"), ("time (s)", "@{time}{0.000}"), ("amplitude (µV)", "@{amplitude}{0.0}")]
"""Hover text of a trace row; ``$name`` is the row's renderer name, set per page by :func:`decorate_curve`."""


# --------------------------------------------------------------------------------------------
# Small helpers
# --------------------------------------------------------------------------------------------


def slot_label(slot: int) -> str:
    """The HoloViews label of curve slot ``slot`` (stable across pages; the row's name is set by the hook)."""
    return f"{_SLOT_PREFIX}{slot:03d}"


def slot_index(label: str) -> int | None:
    """The curve slot whose :func:`slot_label` is ``label``, or None for any other label."""
    rest = label[len(_SLOT_PREFIX) :] if label.startswith(_SLOT_PREFIX) else ""
    return int(rest) if rest.isdigit() else None


def set_changed(model, **values) -> None:
    """Set bokeh model properties that differ (an unchanged value sends nothing to the browser)."""
    for name, value in values.items():
        if getattr(model, name) != value:
            setattr(model, name, value)


def short_text(text: str, limit: int = MARKER_LABEL_CHARS) -> str:
    """``text`` on one line, cut to ``limit`` characters with an ellipsis."""
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


# --------------------------------------------------------------------------------------------
# Templates of the main plot (made once per figure, cloned with each frame's data)
# --------------------------------------------------------------------------------------------


def main_overlay_template(width: int, height: int, title: str, hook: Callable) -> hv.Overlay:
    """The empty main overlay with its options (page-specific parts are set by ``hook``, see :func:`decorate_page`)."""
    return hv.Overlay([]).opts(
        hv.opts.Overlay(
            frame_width=width,
            frame_height=height,
            show_legend=False,
            ylabel="",
            backend_opts=PLOT_BACKEND_OPTS,
            title=title,
            active_tools=["xwheel_zoom", "xpan"],
            default_tools=["xpan", "xwheel_zoom", "xbox_zoom", "reset", "save"],
            hooks=[hook],
        ),
    )


HEAT_TITLE = "p(SOZ)"
"""What the heat map shows for a model: calibrated window probabilities."""


def heat_options(title: str = HEAT_TITLE) -> dict:
    """Options of the heat map: fixed 0–1 colour range, NaN transparent, hover with the interval (a model's only).

    Parameters
    ----------
    title : str
        What the colour shows: :data:`HEAT_TITLE` for a model; for a marker, its window value
        divided by the top channel's (the ranking's 0–1 scale), e.g. ``"line length ÷ top channel"``.
    """
    tooltips = [("channel", "$y{custom}"), ("time bin", "$x{custom}"), (title, "@image{0.00}")]
    if title == HEAT_TITLE:
        tooltips.append(("interval [p0, p1]", "[@{p0}{0.00}, @{p1}{0.00}]"))
    return {
        "framewise": True,
        "cmap": HEAT_CMAP,
        "clim": (0, 1),
        "colorbar": True,
        "colorbar_opts": {"title": title},
        "clipping_colors": {"NaN": (0, 0, 0, 0)},
        "tools": ["hover"],
        "hover_tooltips": tooltips,
    }


def heat_template(alpha: float, title: str = HEAT_TITLE) -> hv.Image:
    """The heat-map image (values p(SOZ), p0, p1 per bin and row) at opacity ``alpha``, its colour bar titled ``title``."""
    vdims = [
        hv.Dimension("p_soz", label=title, range=(0, 1)),
        hv.Dimension("p0", range=(0, 1)),
        hv.Dimension("p1", range=(0, 1)),
    ]
    image = hv.Image(np.full((1, 1, 3), np.nan), kdims=["time", "row"], vdims=vdims)
    return image.opts(**heat_options(title), alpha=alpha)


def artifact_template() -> hv.Image:
    """The artifact overlay: per row and heat-map bin, the share of window time the detector flagged (NaN: none, transparent).

    Row-aligned with the heat map (one image per frame, never a glyph per window), grey over the
    heat colours, with its own hover (the row's channel, the time bin and the flagged share).
    """
    vdim = hv.Dimension("artifact", label="artifact share", range=(0, 1))
    image = hv.Image(np.full((1, 1), np.nan), kdims=["time", "row"], vdims=[vdim])
    return image.opts(
        framewise=True,
        cmap=ARTIFACT_CMAP,
        clim=(0, 1),
        clipping_colors={"NaN": (0, 0, 0, 0)},
        alpha=ARTIFACT_ALPHA,
        colorbar=False,
        tools=["hover"],
        hover_tooltips=[
            ("channel", "$y{custom}"),
            ("time bin", "$x{custom}"),
            ("artifact", "@image{0%} of the window time flagged"),
        ],
    )


def traces_template() -> hv.RGB:
    """The datashaded traces raster (an RGBA image; 1 × 1 transparent while curves are drawn)."""
    return hv.RGB(np.zeros((1, 1, 4), dtype=np.uint8), label="traces").opts(framewise=True)


def amplitude_dimension(slot: int, half_range: float | None = None) -> hv.Dimension:
    """The value dimension of curve slot ``slot``, with the range ±``half_range`` µV when given.

    HoloViews merges value ranges of dimensions sharing a label: one label per slot keeps each
    row's range; the column stays "amplitude" for the hover.
    """
    label = f"{slot_label(slot)} amplitude"
    if half_range is None:
        return hv.Dimension("amplitude", label=label, unit="µV")
    return hv.Dimension("amplitude", label=label, unit="µV", range=(-half_range, half_range))


def curve_options() -> dict:
    """Options of a trace row: on its own ``subcoordinate_y`` axis, with a hover."""
    return {
        "framewise": True,
        "subcoordinate_y": True,
        "tools": ["hover"],
        "hover_tooltips": list(CURVE_TOOLTIPS),
    }


def curve_template(slot: int) -> hv.Curve:
    """The curve of row slot ``slot`` (empty; its name and colour are set per page by :func:`decorate_curve`)."""
    empty = (np.zeros(0), np.zeros(0))
    curve = hv.Curve(empty, kdims=["time"], vdims=[amplitude_dimension(slot)], label=slot_label(slot))
    return curve.opts(**curve_options(), color=TRACE_COLOUR, line_width=0.7)


MARKER_LINE_STYLES = (("solid", 2.0), ("dashed", 1.5), ("solid", 1.5))
"""``(dash, width)`` of the marker lines: seizure onset/offset, notes and events, any other kind."""


def marker_line_style(kind: str) -> tuple[str, float]:
    """``(dash, width)`` of a marker's line: solid and thicker for onset/offset, dashed for notes and events."""
    dash = "dashed" if kind in ("note", "event") else "solid"
    return dash, 2.0 if kind in ("onset", "offset") else 1.5


def _marker_colour(marker: dict) -> str:
    return MARKER_COLOURS.get(marker.get("kind", "event"), MARKER_COLOURS["event"])


def _colour_column(colours: list[str]) -> np.ndarray:
    """Literal colours as a column (object dtype, also when empty: no colour mapper is made for it)."""
    column = np.empty(len(colours), dtype=object)
    column[:] = colours
    return column


def marker_elements(markers: list[dict]) -> list:
    """The markers' lines and duration spans as a fixed number of elements, however many markers there are.

    One ``hv.VSpans`` holds every marker's faint duration span and one ``hv.VLines`` per line style
    (:data:`MARKER_LINE_STYLES`: solid for onset/offset, dashed for notes and events) holds every
    line of that style; each line's or span's colour is a column of its data. HoloViews draws
    each element as one glyph, so neither the option processing nor its per-element hooks grow
    with the number of markers (one element per marker made a recording with a thousand
    annotations take minutes to draw). An element with no marker is drawn empty.

    Parameters
    ----------
    markers : list of dict
        ``{onset, duration, description, kind}`` (seconds).

    Returns
    -------
    elements : list
        ``[hv.VSpans, hv.VLines, …]``: the spans first (under the lines), then one ``hv.VLines``
        per entry of :data:`MARKER_LINE_STYLES`, in that order.
    """
    spans, *lines = marker_element_data(markers)
    out = [
        hv.VSpans(spans, kdims=["time", "time_end"], vdims=[_MARKER_COLOUR]).opts(
            color=hv.dim(_MARKER_COLOUR),
            alpha=0.08,
            line_alpha=0,
            apply_ranges=False,
        )
    ]
    for (dash, width), data in zip(MARKER_LINE_STYLES, lines):
        element = hv.VLines(data, kdims=["time"], vdims=[_MARKER_COLOUR])
        out.append(element.opts(color=hv.dim(_MARKER_COLOUR), line_width=width, line_dash=dash, apply_ranges=False))
    return out


def marker_element_data(markers: list[dict]) -> list[tuple]:
    """The data of each element of :func:`marker_elements`, in their order (for a clone with new markers).

    Returns
    -------
    data : list of tuple
        The spans' ``(x0, x1, colours)``, each shape (n_spans,), then per line style ``(xs, colours)``,
        each shape (n_lines,): times float64 (s), colours object (literal colours).
    """
    spans = [m for m in markers if float(m.get("duration") or 0.0) > 0]
    x0 = np.array([float(m["onset"]) for m in spans], dtype=float)
    x1 = x0 + np.array([float(m.get("duration") or 0.0) for m in spans], dtype=float)
    out = [(x0, x1, _colour_column([_marker_colour(m) for m in spans]))]
    for dash, width in MARKER_LINE_STYLES:
        shown = [m for m in markers if marker_line_style(m.get("kind", "event")) == (dash, width)]
        xs = np.array([float(m["onset"]) for m in shown], dtype=float)
        out.append((xs, _colour_column([_marker_colour(m) for m in shown])))
    return out


def holds_data(element, data: tuple) -> bool:
    """Whether ``element`` holds exactly the columns ``data`` (in its dimensions' order)."""
    columns = [element.dimension_values(d) for d in element.dimensions()]
    return len(columns) == len(data) and all(
        len(c) == len(d) and np.array_equal(np.asarray(c), np.asarray(d)) for c, d in zip(columns, data)
    )


def marker_times(elements: list) -> np.ndarray:
    """The onset times drawn by :func:`marker_elements`' lines, sorted (for checks and tests)."""
    times = [el.dimension_values(0) for el in elements if isinstance(el, hv.VLines)]
    return np.sort(np.concatenate(times)) if times else np.zeros(0)


def marker_label_data(markers: list[dict], t0: float, t1: float) -> tuple[np.ndarray, list[str], list[str]]:
    """Positions, texts and colours of the labels of the markers within ``[t0, t1]``.

    Each label sits just right of its line, shortened to ``MARKER_LABEL_CHARS``, in its marker's
    colour. Without a marker in the window, one empty label (an empty colour column would be
    colour-mapped).

    Returns
    -------
    xs : ndarray, shape (n_labels,)
    texts, colours : list of str, length n_labels
    """
    shown = [m for m in markers if t0 <= float(m["onset"]) <= t1]
    xs = np.array([float(m["onset"]) for m in shown], dtype=float) + 0.004 * (t1 - t0)
    texts = [short_text(str(m.get("description", "")) or str(m.get("kind", "event"))) for m in shown]
    colours = [MARKER_COLOURS.get(m.get("kind", "event"), MARKER_COLOURS["event"]) for m in shown]
    if not shown:
        xs, texts, colours = np.array([t0]), [""], ["#ffffff"]
    return xs, texts, colours


def marker_label_template() -> hv.Labels:
    """Bold labels at the top of the plot; each label's colour is a column of its data (no colour mapper)."""
    labels = hv.Labels(([], [], [], []), kdims=["time", "row"], vdims=["description", _LABEL_COLOUR])
    return labels.opts(
        text_align="left",
        text_baseline="top",
        text_font_size="10.5pt",
        text_font_style="bold",
        text_color=hv.dim(_LABEL_COLOUR),  # literal colours in a column: no colour mapper
        background_fill_color="white",
        background_fill_alpha=0.75,
        framewise=True,
    )


def focus_band_template() -> hv.Rectangles:
    """The faint band behind the focus row (a glyph, so moving it only changes data)."""
    return hv.Rectangles([]).opts(color=FOCUS_COLOUR, alpha=0.08, line_alpha=0, framewise=True)


def scale_bar_templates() -> tuple[hv.Path, hv.Labels]:
    """The scale bar: a thick vertical line and its ``… µV`` text to its left."""
    path = hv.Path([]).opts(color="black", line_width=3, framewise=True)
    label = hv.Labels(([], [], []), kdims=["time", "row"], vdims=["text"]).opts(
        text_align="right", text_baseline="middle", text_font_size="9pt", text_color="black", framewise=True
    )
    return path, label


# --------------------------------------------------------------------------------------------
# Hooks: what changes with the page, in the drawn bokeh models
# --------------------------------------------------------------------------------------------


def decorate_page(
    plot, *, title: str, labels: list[str], focus: int | None, heat_notes: list[str], bin_s: float
) -> None:
    """Title, row labels, curve names and colours, heat-map hover rows of the page in the drawn main plot.

    Parameters
    ----------
    plot : holoviews OverlayPlot
        The main plot (bokeh backend).
    title : str
    labels : list of str
        The page's row labels, top first, one per slot (``""`` for an empty slot).
    focus : int, optional
        Slot of the focus row.
    heat_notes : list of str
        Heat-map hover text per slot, bottom row first.
    bin_s : float
        Heat-map bin (s), for the hover's time bin.
    """
    m = max(len(labels), 1)
    fig = plot.state
    if fig.title is not None and fig.title.text != title:
        fig.title.text = title
    axis = fig.yaxis[0]
    ticks = list(range(m))
    overrides = {m - 1 - r: label for r, label in enumerate(labels)}
    if not isinstance(axis.ticker, FixedTicker):
        axis.ticker = FixedTicker(ticks=ticks)
    elif list(axis.ticker.ticks) != ticks:
        axis.ticker.ticks = ticks
    if axis.major_label_overrides != overrides:
        axis.major_label_overrides = overrides
    for sub in plot.subplots.values():
        frame = getattr(sub, "current_frame", None)
        slot = slot_index(frame.label) if isinstance(frame, hv.Curve) else None
        if slot is not None:
            decorate_curve(sub, slot, labels, focus)
        elif isinstance(frame, hv.Image) and "hover" in sub.handles:
            decorate_heat_hover(sub.handles["hover"], heat_notes, bin_s)


def decorate_curve(sub, slot: int, labels: list[str], focus: int | None) -> None:
    """Name (for the hover) and colour of the drawn curve of slot ``slot``: the focus row is thicker, in colour."""
    renderer = sub.handles.get("glyph_renderer")
    if renderer is None:
        return
    label = labels[slot] if slot < len(labels) else ""
    set_changed(renderer, name=label)
    focused = slot == focus
    set_changed(
        renderer.glyph, line_color=FOCUS_COLOUR if focused else TRACE_COLOUR, line_width=1.2 if focused else 0.7
    )


def decorate_heat_hover(hover, notes: list[str], bin_s: float) -> None:
    """The heat map's hover: channel ``notes`` by row (bottom first) and the time bin of width ``bin_s``.

    The formatters are made per plot (a bokeh model never serves two documents) and updated in place after.
    """
    formatters = dict(hover.formatters or {})
    y, x = formatters.get("$y"), formatters.get("$x")
    if isinstance(y, CustomJSHover) and isinstance(x, CustomJSHover):
        set_changed(y, args={"labels": notes})
        set_changed(x, args={"bin": bin_s})
        return
    hover.formatters = {
        "$y": CustomJSHover(
            args={"labels": notes},
            code="const k = Math.round(value); return (k >= 0 && k < labels.length) ? labels[k] : '';",
        ),
        "$x": CustomJSHover(
            args={"bin": bin_s},
            code="const b = Math.floor(value / bin) * bin; return b.toFixed(2) + '–' + (b + bin).toFixed(2) + ' s';",
        ),
    }


# --------------------------------------------------------------------------------------------
# The overview
# --------------------------------------------------------------------------------------------


def range_tool(x_range) -> RangeTool:
    """The overview's RangeTool driving ``x_range`` (the main plot's): a blue box with handles, nothing greyed.

    Added by :func:`add_range_tool` (the overview's hook) to the overview plot's own toolbar, and only there.
    (HoloViews' ``RangeToolLink`` also appends its tool to the first ``Toolbar`` found under the
    *root* model; under Panel that root is the whole page, so the tool landed in an arbitrary plot's
    toolbar on every rebuild: the time course's, greyed over once more per page, or the overview's own
    a second time, which bokeh refuses with "RangeTool … already registered" and the page or a
    PNG/SVG export of it fails to render.)
    """
    tool = RangeTool(x_range=x_range, start_gesture="pan")
    box = tool.overlay
    box.inverted = False
    box.fill_color, box.fill_alpha = RANGE_BOX_COLOUR, 0.12
    box.line_color, box.line_alpha, box.line_width, box.line_dash = RANGE_BOX_COLOUR, 1.0, 2.5, "solid"
    box.handles.all.fill_alpha, box.handles.all.line_alpha = 0.25, 0.6
    return tool


def add_range_tool(fig, x_range) -> None:
    """Give the drawn overview ``fig`` one :func:`range_tool` on ``x_range`` (none without a range, or if it has one)."""
    if x_range is None or any(isinstance(t, RangeTool) for t in fig.tools):
        return
    fig.add_tools(range_tool(x_range))


def overview_marker_data(markers: list[dict]) -> tuple[np.ndarray, np.ndarray]:
    """The overview's marker lines: onsets, shape (n_markers,) float64, and colours, shape (n_markers,) object."""
    onsets = np.array([float(mk["onset"]) for mk in markers], dtype=float)
    return onsets, _colour_column([_marker_colour(mk) for mk in markers])


def overview_overlay(
    top: np.ndarray,
    heat_edges: np.ndarray,
    ink: np.ndarray,
    *,
    duration: float,
    n_slots: int,
    markers: list[dict],
    plot_width: int,
    top_k: int,
    summarised: bool,
    hook: Callable,
) -> hv.Overlay:
    """The whole-recording overview: the top-k p(SOZ) strip, the page's trace raster and the marker lines.

    Parameters
    ----------
    top : ndarray, shape (n_bins,)
        Per bin, the mean p(SOZ) of the ``top_k`` highest rows (NaN: not scored).
    heat_edges : ndarray, shape (n_bins + 1,)
    ink : ndarray, shape (OVERVIEW_HEIGHT, plot_width), uint8
        1 where a trace passes (row 0 at the top); 1 × 1 when the traces are not summarised.
    duration : float
        Length of the recording (s).
    n_slots : int
        Row slots the strip and the raster span.
    markers : list of dict
    plot_width : int
    top_k : int
    summarised : bool
        Whether ``ink`` holds the page's traces (said in the title).
    hook : callable
        HoloViews hook of the overview plot (it adds the :func:`range_tool`).
    """
    m = n_slots
    OT = hv.Dimension("overview_time", label="time", unit="s")
    OY = hv.Dimension("overview_row", label=" ")
    strip = hv.Image(
        top[None, :],
        bounds=(heat_edges[0], -0.5, heat_edges[-1], m - 0.5),
        kdims=[OT, OY],
        vdims=[hv.Dimension("p_top", label="p(SOZ)", range=(0, 1))],
    ).opts(
        cmap=HEAT_CMAP,
        clim=(0, 1),
        colorbar=True,
        colorbar_opts={"title": "p(SOZ)"},
        clipping_colors={"NaN": (0, 0, 0, 0)},
        default_tools=[],
    )
    traces = hv.Image(
        ink, bounds=(0.0, -0.5, duration, m - 0.5), kdims=[OT, OY], vdims=[hv.Dimension("ink", range=(0, 1))]
    ).opts(cmap=OVERVIEW_INK_CMAP, clim=(0, 1), alpha=0.35, default_tools=[])
    lines = hv.VLines(overview_marker_data(markers), kdims=[OT], vdims=[_MARKER_COLOUR]).opts(
        color=hv.dim(_MARKER_COLOUR), line_width=2, apply_ranges=False
    )  # one glyph for every marker
    return hv.Overlay([strip, traces, lines]).opts(
        hv.opts.Overlay(
            frame_width=plot_width,
            frame_height=OVERVIEW_HEIGHT,
            yaxis=None,
            backend_opts=PLOT_BACKEND_OPTS,
            toolbar=None,
            default_tools=[],
            shared_axes=False,
            show_legend=False,
            title=(
                f"overview of the whole recording — colour: mean p(SOZ) of the {top_k} highest channels; "
                + ("grey: this page's traces" if summarised else "traces not summarised (recording too long)")
                + " — drag the blue box to move the view"
            ),
            fontsize={"title": "9pt"},
            xlim=(0.0, duration),
            hooks=[hook],
        )
    )

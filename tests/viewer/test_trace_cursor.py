"""The trace cursor: readings under the pointer, two-point measurements, markers from double-clicks and x-drags,
and the annotation list's search and jump (no browser; the browser side is tests/browser/test_browser_annotate.py)."""

from __future__ import annotations

import holoviews as hv
import numpy as np
import pybv
import pytest

from sss_viewer.io.annotation_model import filter_markers, make_marker
from sss_viewer.io.recording import Recording
from sss_viewer.viewer import _trace_cursor as trace_cursor
from sss_viewer.viewer._annotations import AnnotationPanel
from sss_viewer.viewer._trace_cursor import (
    NO_READING,
    TraceCursor,
    measurement_text,
    read_at,
    readout_text,
    row_at,
    span_request,
)
from sss_viewer.viewer.app import build_app
from sss_viewer.viewer.traces import TraceView

pytestmark = pytest.mark.filterwarnings(
    "ignore:The inplace keyword in DataFrame.reset_index is deprecated:DeprecationWarning"
)

SFREQ = 200.0


def _recording(n_channels: int = 6, seconds: float = 20.0) -> Recording:
    rng = np.random.default_rng(7)
    data = (rng.standard_normal((n_channels, int(seconds * SFREQ))) * 50).astype(np.float32)
    names = [f"RG{i + 1}" for i in range(n_channels)]
    return Recording(data=data, sfreq=SFREQ, ch_names=names, ch_types=["seeg"] * n_channels)


def _view(**params) -> TraceView:
    view = TraceView(recording=_recording(), show_overview=False, page_size=4, **params)
    view.figure()
    return view


def _y(view: TraceView, row: int) -> float:
    """Plot y of page row ``row`` (0 = top), a little off its centre."""
    return view.n_slots() - 1 - row + 0.3


def _linked(view: TraceView, kind) -> hv.streams.Stream:
    """The view's linked stream of type ``kind`` on its main DynamicMap."""
    return next(s for s in hv.streams.Stream.registry[view.main_plot()] if type(s) is kind)


def test_row_at_maps_plot_y_to_page_rows_top_first():
    assert [row_at(y, 4, 4) for y in (3.0, 2.6, 2.4, 0.0, -0.49)] == [0, 0, 1, 3, 3]
    assert row_at(3.6, 4, 4) is None and row_at(-0.6, 4, 4) is None  # above the top row, below the last
    assert row_at(0.0, 4, 3) is None  # the empty slot of a short last page
    assert row_at(None, 4, 4) is None and row_at(float("nan"), 4, 4) is None


def test_reading_is_the_sample_value_monopolar_and_bipolar():
    view = _view()
    data = view.recording.data
    sample = 1234
    x = (sample + 0.4) / SFREQ  # the nearest sample is read
    reading = read_at(view, x, _y(view, 2))
    assert (reading.row, reading.channel, reading.sample) == (2, "RG3", sample)
    assert reading.time_s == pytest.approx(sample / SFREQ)
    assert reading.value_uv == pytest.approx(float(data[2, sample]), abs=1e-4)
    view.montage = "bipolar"
    reading = read_at(view, x, _y(view, 1))
    assert reading.channel == "RG2-RG3"
    assert reading.value_uv == pytest.approx(float(data[1, sample] - data[2, sample]), abs=1e-4)
    view.montage = "average"
    reading = read_at(view, x, _y(view, 0))
    assert reading.value_uv == pytest.approx(float(data[0, sample] - data[:, sample].mean()), abs=1e-3)
    assert read_at(view, x, view.n_slots() + 1.0) is None  # above the rows


def test_reading_follows_the_page_and_the_display_filter():
    view = _view(page=1)  # rows RG5, RG6 and two empty slots
    data = view.recording.data
    reading = read_at(view, 3.0, _y(view, 1))
    assert reading.channel == "RG6" and reading.value_uv == pytest.approx(float(data[5, 600]), abs=1e-4)
    assert read_at(view, 3.0, _y(view, 2)) is None  # an empty slot
    view.highpass_hz = 1.0
    filtered = read_at(view, 3.0, _y(view, 1)).value_uv
    expected = view.read_rows(view.read_plan(), 0, view.recording.n_times)[1, 600]  # what the plot reads
    assert filtered == pytest.approx(float(expected), abs=0.05) and filtered != pytest.approx(float(data[5, 600]))


def test_readout_text_and_cursor_time_follow_the_pointer_without_redrawing():
    view = _view()
    hv.renderer("bokeh").get_plot(view.figure())  # a drawn plot: a stream input of its DynamicMap redraws it
    drawn = []
    draw = view.main_element
    view.main_element = lambda t0, t1: drawn.append((t0, t1)) or draw(t0, t1)  # the DynamicMap callback's drawing
    view._stream.event(version=view._stream.version + 1)  # the check below can fail: an input redraws
    assert drawn == [(0.0, 10.0)]
    drawn.clear()
    _linked(view, hv.streams.PointerXY).event(x=2.5, y=_y(view, 0))
    value = float(view.recording.data[0, 500])
    assert view.cursor.readout == f"t = 2.500 s · RG1 · {value:.1f} µV".replace("-", "−")
    assert view.cursor_s == 2.5 and drawn == []
    _linked(view, hv.streams.PointerXY).event(x=4.0, y=view.n_slots() + 0.2)  # over the plot, off the rows
    assert view.cursor.readout == "t = 4.000 s" and view.cursor.reading is None and view.cursor_s == 4.0
    _linked(view, hv.streams.MouseLeave).event(x=2.5, y=0.0)
    assert view.cursor_s is None and view.cursor.readout == NO_READING and drawn == []
    assert readout_text(None) == NO_READING


def test_pointer_readouts_are_throttled_to_the_latest_position(monkeypatch):
    class Document:  # a session document: it only queues timeout callbacks, as bokeh's does
        session_context = object()

        def __init__(self):
            self.queued = []

        def add_timeout_callback(self, callback, timeout_ms):
            self.queued.append((callback, timeout_ms))

    doc = Document()
    view = _view()
    cursor = view.cursor
    monkeypatch.setattr(trace_cursor, "_session_document", lambda: doc)
    cursor.hover(1.0, _y(view, 0))  # the first is shown at once
    assert view.cursor_s == 1.0 and doc.queued == []
    cursor.hover(2.0, _y(view, 0))
    cursor.hover(3.0, _y(view, 1))  # within the wait: one callback, for the latest position
    assert view.cursor_s == 1.0 and len(doc.queued) == 1
    callback, timeout_ms = doc.queued[0]
    assert 0 < timeout_ms <= 1000 * cursor.throttle_s
    callback()
    assert view.cursor_s == 3.0 and " · RG2 · " in cursor.readout


def test_measurement_between_two_clicks_in_measure_mode():
    view = _view()
    cursor, data = view.cursor, view.recording.data
    tap = _linked(view, hv.streams.SingleTap)
    tap.event(x=1.0, y=_y(view, 0))
    assert cursor.first is None  # "nothing": a click measures nothing
    cursor.mode = "measure"
    assert cursor.measurement == "measure: click a first point" and cursor._clear.disabled
    tap.event(x=1.0, y=_y(view, 0))
    tap.event(x=1.25, y=_y(view, 3))
    m = cursor.current_measurement
    assert m.dt_s == pytest.approx(0.25) and m.frequency_hz == pytest.approx(4.0)
    assert m.dv_uv == pytest.approx(float(data[3, 250] - data[0, 200]), abs=1e-4)
    dv = f"{data[3, 250] - data[0, 200]:.1f}".replace("-", "−")
    assert cursor.measurement == f"Δt = 250 ms (1/Δt = 4.00 Hz) · ΔV = {dv} µV · RG1 → RG4"
    assert not cursor._clear.disabled
    tap.event(x=2.0, y=_y(view, 1))  # a third click starts a new measurement
    assert cursor.first.channel == "RG2" and cursor.second is None
    cursor._clear.clicks += 1
    assert cursor.first is None and cursor.current_measurement is None
    a, b = read_at(view, 1.0, _y(view, 0)), read_at(view, 3.5, _y(view, 0))
    assert measurement_text(a, b).startswith("Δt = 2.500 s (1/Δt = 0.40 Hz)")


def test_double_click_and_x_drag_ask_for_markers_only_in_a_marker_mode():
    view = _view()
    cursor = view.cursor
    requests = []
    cursor.param.watch(lambda e: requests.append(e.new), "marker_request")
    double, drag = _linked(view, hv.streams.DoubleTap), _linked(view, hv.streams.BoundsX)
    for mode in ("nothing", "measure"):
        cursor.mode = mode
        double.event(x=3.0, y=1.0)
        drag.event(boundsx=(2.0, 4.0))
    assert requests == []
    cursor.mode = "offset"
    double.event(x=3.14159, y=1.0)
    double.event(x=3.14159, y=1.0)  # the same again is asked again (the annotations say it exists)
    drag.event(boundsx=(6.0, 4.5))
    drag.event(boundsx=(19.0, 25.0))  # clipped to the recording
    assert requests == [
        {"kind": "offset", "onset_s": 3.142, "duration_s": 0.0},
        {"kind": "offset", "onset_s": 3.142, "duration_s": 0.0},
        {"kind": "offset", "onset_s": 4.5, "duration_s": 1.5},
        {"kind": "offset", "onset_s": 19.0, "duration_s": 1.0},
    ]
    assert span_request("note", (5.0, 5.0), 20.0) is None and span_request("note", None, 20.0) is None


def test_marker_modes_make_the_drag_draw_a_span_in_the_drawn_plot():
    view = _view()
    plot = hv.renderer("bokeh").get_plot(view.figure())
    toolbar = plot.state.toolbar
    tool = trace_cursor.span_tool(plot.state)
    assert tool is not None and tool.renderers == []  # reports the range, selects no glyph
    assert type(toolbar.active_drag).__name__ == "PanTool"
    view.cursor.mode = "onset"
    assert toolbar.active_drag is tool
    view.cursor.mode = "nothing"
    assert type(toolbar.active_drag).__name__ == "PanTool"


def _write(folder, seconds=4.0):
    data = np.random.default_rng(3).standard_normal((4, int(seconds * 250))).astype(np.float32) * 30
    pybv.write_brainvision(
        data=data,
        sfreq=250.0,
        ch_names=[f"LQ{i + 1}" for i in range(4)],
        fname_base="short",
        folder_out=folder,
        fmt="binary_float32",
        unit="µV",
    )
    return folder / "short.vhdr"


def test_the_app_adds_what_the_traces_ask_for(tmp_path):
    app = build_app(data_root=tmp_path, out_dir=tmp_path / "out", load_demo=False)
    assert app.open(_write(tmp_path))
    cursor = app.traces.cursor
    double = _linked(app.traces, hv.streams.DoubleTap)
    double.event(x=1.234, y=1.0)
    assert app.annotations.markers == []  # "nothing" by default: a stray double-click adds nothing
    cursor.mode = "onset"
    double.event(x=1.234, y=1.0)
    _linked(app.traces, hv.streams.BoundsX).event(boundsx=(2.0, 3.5))
    added = [(m["kind"], m["onset_s"], m["duration_s"]) for m in app.annotations.markers]
    assert added == [("onset", 1.234, 0.0), ("onset", 2.0, 1.5)]
    assert [(m["onset"], m["duration"]) for m in app.traces.markers] == [(1.234, 0.0), (2.0, 1.5)]  # drawn
    assert app.annotations._list.options == {"1. onset at 1.23 s": 0, "2. onset at 2.00 s (span 1.50 s)": 1}
    assert app.annotations.undo_actions == ["add onset at 1.23 s", "add onset at 2.00 s"]


def _panel() -> AnnotationPanel:
    markers = [
        make_marker(10.0, "onset", "clinical onset"),
        make_marker(31.0, "event", "sz spread to RG"),
        make_marker(56.02, "note", "artifact from chewing", 2.5),
        make_marker(70.0, "offset"),
    ]
    return AnnotationPanel(markers=markers)


def test_search_narrows_the_list_by_text_kind_and_time():
    panel = _panel()
    assert filter_markers(panel.markers, "") == [0, 1, 2, 3]
    assert filter_markers(panel.markers, "ONSET") == [0]
    assert filter_markers(panel.markers, "sz rg") == [1]  # every word, in any order
    assert filter_markers(panel.markers, "56") == [2]  # a time as listed
    assert filter_markers(panel.markers, "span") == [2]
    assert filter_markers(panel.markers, "nothing like it") == []
    panel._search.value_input = "chew"  # as typed, before Enter
    assert list(panel._list.options.values()) == [2] and panel._list.name == "Markers (1 of 4)"
    assert panel.search("o") == [0, 1, 2, 3] and panel.search("offset") == [3]
    panel.select(3)
    panel.search("onset")  # the selected marker is filtered out: nothing stays selected
    assert panel.selected_index is None and panel._goto.disabled
    assert panel.search("") == [0, 1, 2, 3] and panel._list.name == "Markers"


def test_choosing_a_marker_in_the_list_jumps_to_it_but_selecting_from_code_does_not():
    panel = _panel()
    seen = []
    panel.param.watch(lambda e: seen.append(e.new), "goto_s")
    panel.select(1)  # from code (after an add, a move): the view stays
    assert seen == []
    panel.search("note")
    panel._list.value = [2]  # a clinician's choice in the filtered list
    assert seen == [56.02] and "View centred on note at 56.02 s" in panel.status
    panel._list.value = [2]  # unchanged: no second jump
    panel._goto.clicks += 1  # Go to still works
    assert seen == [56.02, 56.02]
    panel.search("")
    panel._list.value = [0, 3]  # several chosen: where to go is not one place
    assert seen == [56.02, 56.02]


def test_a_cursor_without_a_view_or_recording_reads_nothing():
    cursor = TraceCursor()
    cursor.hover(1.0, 0.0)
    cursor.mode = "onset"
    assert cursor.reading is None and cursor.double_tap(1.0, 0.0) is None and cursor.select_x((1.0, 2.0)) is None
    assert read_at(TraceView(), 1.0, 0.0) is None

"""What keeps a recording with many annotations fast to draw: the markers' elements do not grow with their number.

One HoloViews element (so one Bokeh glyph) per marker made every element's option processing and
hooks run over every other one: a recording with 1,000 annotations took minutes to draw. These
tests count elements and renderers and look for every marker in the drawn data; the timings are in
``benchmarks/annotation_render.py``. A montage switch that keeps the row slots updates the drawn
models instead of rebuilding them.
"""

import dataclasses

import holoviews as hv
import numpy as np
import pytest
from bokeh.models import Line, Plot, VSpan, VStrip

from sss_viewer.viewer._display import display_amplitude
from sss_viewer.viewer._trace_elements import MARKER_COLOURS, marker_elements, marker_times
from sss_viewer.viewer.timecourse import ensure_bokeh
from sss_viewer.viewer.traces import TraceView
from tests.fixtures.recordings import toy_recording

NAMES = ["LA1", "LA2", "LA3", "LA4", "LB1", "LB2", "LB3", "LB4"]
KINDS = ("onset", "offset", "note", "event")


@pytest.fixture(scope="module", autouse=True)
def bokeh_backend():
    ensure_bokeh()  # marker_elements sets bokeh options


@pytest.fixture(scope="module")
def recording():
    rec = toy_recording("markers", 3, n_channels=8, duration_s=60.0)
    return dataclasses.replace(rec, ch_names=list(NAMES))


def many_markers(n: int, seed: int = 0) -> list[dict]:
    """``n`` markers of every kind at distinct times in 1–59 s, every third with a 0.5-s duration."""
    times = np.sort(np.random.default_rng(seed).choice(np.arange(1.0, 59.0, 0.01), size=n, replace=False))
    return [
        {"onset": float(t), "duration": 0.5 if k % 3 == 0 else 0.0, "description": f"m{k}", "kind": KINDS[k % 4]}
        for k, t in enumerate(times)
    ]


def plots(layout) -> list[Plot]:
    return [layout] if isinstance(layout, Plot) else list(layout.select({"type": Plot}))


def glyph_renderers(plot, glyph_type):
    return [r for r in plot.renderers if isinstance(getattr(r, "glyph", None), glyph_type)]


def colours(renderer) -> list[str]:
    """Each drawn line's colour: a column, or the glyph's one colour (HoloViews folds a column of one value)."""
    data = renderer.data_source.data
    n = len(next(iter(data.values())))
    return list(data["color"]) if "color" in data else [renderer.glyph.line_color] * n


def render(view: TraceView):
    layout = hv.render(view.figure())
    ps = plots(layout)
    main = max(ps, key=lambda p: p.frame_height or 0)
    overview = next(p for p in ps if p.title.text.startswith("overview"))
    return layout, main, overview


def test_marker_elements_are_a_fixed_few_whatever_their_number():
    few, many = marker_elements(many_markers(5)), marker_elements(many_markers(500))
    assert [type(el) for el in few] == [type(el) for el in many] == [hv.VSpans, hv.VLines, hv.VLines, hv.VLines]
    assert len(marker_elements([])) == len(few)
    np.testing.assert_allclose(marker_times(many), [m["onset"] for m in many_markers(500)])


def test_renderers_do_not_grow_with_the_markers_and_every_marker_is_drawn(recording):
    counts = {}
    for n in (5, 500):
        markers = many_markers(n)
        view = TraceView(recording=recording, markers=markers, span_s=60.0, page_size=4)
        layout, main, overview = render(view)
        counts[n] = sorted(len(p.renderers) + len(p.center) for p in plots(layout))
        onsets = sorted(m["onset"] for m in markers)
        drawn = sorted(x for r in glyph_renderers(main, VSpan) for x in r.data_source.data["time"])
        np.testing.assert_allclose(drawn, onsets)  # every line in the main plot
        np.testing.assert_allclose(sorted(overview_times(overview)), onsets)  # and in the overview
        spans = sorted(
            (a, b)
            for r in glyph_renderers(main, VStrip)
            for a, b in zip(r.data_source.data["time"], r.data_source.data["time_end"])
        )
        assert spans == [(m["onset"], m["onset"] + 0.5) for m in markers if m["duration"]]
    assert counts[5] == counts[500]


def overview_times(overview) -> list[float]:
    return [x for r in glyph_renderers(overview, VSpan) for x in r.data_source.data["overview_time"]]


def test_each_marker_keeps_its_colour_dash_and_width(recording):
    markers = many_markers(12)
    view = TraceView(recording=recording, markers=markers, span_s=60.0, show_overview=False)
    main = max(plots(hv.render(view.figure())), key=lambda p: p.frame_height or 0)
    style = {}
    for r in glyph_renderers(main, VSpan):
        for x, colour in zip(r.data_source.data["time"], colours(r)):
            style[float(x)] = (colour, r.glyph.line_dash, r.glyph.line_width)
    for m in markers:  # seizure onset/offset solid and thicker, notes and events dashed
        solid = m["kind"] in ("onset", "offset")
        assert style[m["onset"]] == (MARKER_COLOURS[m["kind"]], "solid" if solid else "dashed", 2.0 if solid else 1.5)


def test_montage_switch_keeping_the_row_slots_updates_the_drawn_models(recording):
    view = TraceView(recording=recording, page_size=3, markers=many_markers(20), span_s=10.0)
    layout, main, overview = render(view)
    figure = view.figure()
    view.montage = "bipolar"  # 8 contacts -> 6 bipolar rows: still 3 slots per page
    assert view.figure() is figure  # not rebuilt
    assert [r.name for r in glyph_renderers(main, Line)] == ["LA1-LA2", "LA2-LA3", "LA3-LA4"]
    assert set(main.yaxis[0].major_label_overrides.values()) == {"LA1-LA2", "LA2-LA3", "LA3-LA4"}
    assert "bipolar" in main.title.text
    assert view.amplitude_uv == display_amplitude(view.measure_scale())  # rescaled for the new montage
    assert len(view._page_options()) == view.n_pages == 2
    fresh = max(plots(hv.render(view.static_figure())), key=lambda p: p.frame_height or 0)
    for drawn, new in zip(glyph_renderers(main, Line), glyph_renderers(fresh, Line)):  # same as a fresh drawing
        np.testing.assert_allclose(drawn.data_source.data["amplitude"], new.data_source.data["amplitude"])
    view.page = 1
    assert [r.name for r in glyph_renderers(main, Line)] == ["LB1-LB2", "LB2-LB3", "LB3-LB4"]
    view.page_size = 8  # a different number of slots rebuilds, as before
    assert view.figure() is not figure

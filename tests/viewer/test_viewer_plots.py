"""The trace view and the SOZ time course, rendered with bokeh (no browser).

Alignment of the heat map with the trace rows, bipolar averaging, the zoomed-in curve path and the
zoomed-out datashader path, reads limited to the visible block, paging, montages, markers and
per-shaft gains — checked on the bokeh models HoloViews produces.
"""

import dataclasses

import holoviews as hv
import numpy as np
import pandas as pd
import pytest
from bokeh.models import HoverTool, Image, ImageRGBA, Line, Plot, RangeTool, VSpan, VStrip

from sss_viewer.engine.config import train_preset
from sss_viewer.engine.inference import RecordingScores, score_recording
from sss_viewer.engine.training import train
from sss_viewer.viewer._display import display_amplitude, robust_scale, top_k_mean
from sss_viewer.viewer._envelope import CLIP_ROWS, minmax_envelope, nice_scale, rebin_envelope
from sss_viewer.viewer._trace_elements import MARKER_COLOURS, RANGE_BOX_COLOUR, short_text
from sss_viewer.viewer.timecourse import SozTimeCourse, infer_bin_s, mean_sd
from sss_viewer.viewer.traces import OVERVIEW_TOP_K, TraceView, binned_interval
from tests.fixtures.recordings import toy_recording

NAMES = ["LA1", "LB1", "LA2", "LB2", "LA3", "LB3", "LA4", "LB4"]
"""Interleaved on purpose: the view must regroup them by shaft."""
BY_SHAFT = ["LA1", "LA2", "LA3", "LA4", "LB1", "LB2", "LB3", "LB4"]


def shaft_recording(duration_s: float = 90.0, seed: int = 5):
    """An 8-contact, two-shaft toy recording (250 Hz); SOZ = the first two contacts."""
    rec = toy_recording("view", seed, n_channels=8, duration_s=duration_s)
    return dataclasses.replace(rec, ch_names=list(NAMES))


@pytest.fixture(scope="module")
def bundle(toy_cohort):
    config = train_preset(
        "default",
        window_length=128,
        train_stride=64,
        val_stride=64,
        batch_size=64,
        epochs=1,
        device="cpu",
        model_params={"d_model": 16, "d_ff": 32, "n_heads": 2, "n_layers": 1},
    )
    return train(toy_cohort, config, progress=False)


@pytest.fixture(scope="module")
def recording():
    return shaft_recording()


@pytest.fixture(scope="module")
def scores(bundle, recording):
    return score_recording(bundle, recording, progress=False, device="cpu")


# ------------------------------------------------------------------------------- helpers


def renderers(plot, glyph_type):
    return [r for r in plot.renderers if isinstance(getattr(r, "glyph", None), glyph_type)]


def main_figure(plot):
    """The main bokeh figure of a rendered TraceView (the tallest plot)."""
    plots = [plot] if isinstance(plot, Plot) else list(plot.select({"type": Plot}))
    return max(plots, key=lambda p: p.frame_height or 0)


def lines_by_name(plot):
    return {r.name: r for r in renderers(plot, Line)}


def row_centre(renderer) -> float:
    target = renderer.coordinates.y_target
    return (target.start + target.end) / 2


def assert_same(a, b):
    np.testing.assert_allclose(np.asarray(a, dtype=float), np.asarray(b, dtype=float), equal_nan=True, atol=1e-9)


def spy_reads(monkeypatch, rec):
    calls = []
    original = rec.get_data

    def get_data(picks=None, start=0, stop=None):
        calls.append((start, rec.n_times if stop is None else stop))
        return original(picks, start, stop)

    monkeypatch.setattr(rec, "get_data", get_data)
    return calls


# ------------------------------------------------------------------------------- rows


def test_rows_are_grouped_by_shaft_and_paged(recording):
    view = TraceView(recording=recording, page_size=3)
    assert view.contacts() == BY_SHAFT
    assert view.n_pages == 3
    assert view.page_rows().labels == ["LA1", "LA2", "LA3"]
    view.page = 2
    assert view.page_rows().labels == ["LB3", "LB4"]
    view.bad_channels = ["LA2"]
    assert "LA2" not in view.contacts() and len(view.rows()) == 7
    assert view.amplitude_uv > 0  # auto: 3 × the median channel SD


def test_montage_changes_row_labels(recording):
    view = TraceView(recording=recording, show_overview=False)
    assert view.rows().labels == BY_SHAFT
    plot = main_figure(hv.render(view.figure()))
    assert set(lines_by_name(plot)) == set(BY_SHAFT)
    view.montage = "average"
    assert view.rows().labels == [c + "-avg" for c in BY_SHAFT]
    view.montage = "bipolar"
    assert view.rows().labels == ["LA1-LA2", "LA2-LA3", "LA3-LA4", "LB1-LB2", "LB2-LB3", "LB3-LB4"]
    plot = main_figure(hv.render(view.figure()))
    assert set(lines_by_name(plot)) == set(view.rows().labels)
    assert set(plot.yaxis[0].major_label_overrides.values()) == set(view.rows().labels)


def test_average_montage_references_all_good_contacts(recording):
    view = TraceView(recording=recording, montage="average", page_size=2)
    plan = view.read_plan()
    assert len(plan.picks) == 8  # the page shows 2 rows but the reference is all 8 contacts
    block = view.read_rows(plan, 0, 500)
    raw = recording.get_data(view.contact_picks(), 0, 500)
    assert_same(block, raw[:2] - raw.mean(axis=0))


def test_focus_channel_changes_page_and_highlights(recording):
    view = TraceView(recording=recording, page_size=3, show_overview=False)
    view.focus_channel = "LB2"
    assert view.page == 1 and "LB2" in view.page_rows().labels
    overlay = view.main_element(0.0, 10.0)
    k = len(view.page_rows()) - 1 - view.page_rows().labels.index("LB2")
    (band,) = [el for el in overlay if isinstance(el, hv.Rectangles)]
    assert list(band.array()[0]) == [0.0, k - 0.5, 10.0, k + 0.5]
    plot = main_figure(hv.render(view.figure()))
    colours = {name: r.glyph.line_color for name, r in lines_by_name(plot).items()}
    assert colours.pop("LB2") != colours["LB1"] and len(set(colours.values())) == 1
    view.focus_channel = "LA1"
    assert view.page == 0


# ------------------------------------------------------------------------------- heat map


def test_heatmap_rows_align_with_curves(recording, scores):
    view = TraceView(recording=recording, scores=scores, show_overview=False, start_s=20.0, span_s=10.0)
    bin_s = view.effective_bin_s()
    assert bin_s == pytest.approx(infer_bin_s(scores))
    plot = main_figure(hv.render(view.figure()))
    n = len(BY_SHAFT)
    assert (plot.y_range.start, plot.y_range.end) == (-0.5, n - 0.5)
    (heat,) = renderers(plot, Image)
    data = heat.data_source.data
    assert data["y"][0] == -0.5 and data["dh"][0] == n
    x0, width = data["x"][0], data["dw"][0]
    assert x0 <= 20.0 and x0 + width >= 30.0
    b0 = int(round(x0 / bin_s))
    image = data["image"][0]  # bokeh image row k is drawn at y = k (bottom up)
    full, _ = scores.heatmap(bin_s, channels=BY_SHAFT)
    lines = lines_by_name(plot)
    assert len(lines) == n
    for name, line in lines.items():
        k = int(round(row_centre(line)))
        assert_same(image[k], full[BY_SHAFT.index(name), b0 : b0 + image.shape[1]])
    assert np.isfinite(image).any()
    assert heat.glyph.color_mapper.low == 0 and heat.glyph.color_mapper.high == 1
    assert heat.glyph.global_alpha == pytest.approx(0.5)


def test_heat_map_hover_and_colour_bar(recording, scores):
    view = TraceView(recording=recording, scores=scores, show_overview=False)
    plot = main_figure(hv.render(view.figure()))
    tips = [dict(h.tooltips) for h in plot.select({"type": HoverTool}) if "p(SOZ)" in dict(h.tooltips or [])]
    assert tips and {"channel", "time bin", "interval [p0, p1]"} <= set(tips[0])
    # One hover for every row: the channel is each renderer's name ($name), so paging sends no new tooltips.
    (curve_hover,) = [h for h in plot.select({"type": HoverTool}) if "amplitude (µV)" in dict(h.tooltips or [])]
    assert dict(curve_hover.tooltips)["channel"] == "$name" and "time (s)" in dict(curve_hover.tooltips)
    lines = lines_by_name(plot)
    assert sorted(lines) == sorted(BY_SHAFT)
    assert curve_hover.renderers == "auto" or set(curve_hover.renderers) >= set(lines.values())
    (bar,) = [r for r in plot.right if type(r).__name__ == "ColorBar"]
    assert bar.title == "p(SOZ)"


def test_bipolar_rows_average_their_contacts(recording, scores):
    view = TraceView(recording=recording, scores=scores, montage="bipolar")
    values, p0, p1, _ = view.heat_rows()
    full, _ = scores.heatmap(view.effective_bin_s(), channels=BY_SHAFT)
    lo, hi = binned_interval(scores, view.effective_bin_s(), BY_SHAFT)
    row = view.rows().labels.index("LA1-LA2")
    with np.errstate(invalid="ignore"):
        import warnings

        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            assert_same(values[row], np.nanmean(full[[0, 1]], axis=0))
            assert_same(p0[row], np.nanmean(lo[[0, 1]], axis=0))
            assert_same(p1[row], np.nanmean(hi[[0, 1]], axis=0))
    plot = main_figure(hv.render(view.figure()))
    hover = next(h for h in plot.select({"type": HoverTool}) if "p(SOZ)" in dict(h.tooltips or []))
    assert "LA1-LA2 (mean of LA1, LA2)" in hover.formatters["$y"].args["labels"]


def test_binned_interval_weights_like_the_heat_map():
    windows = pd.DataFrame(
        {
            "channel": ["A", "A", "B"],
            "start_s": [0.0, 0.5, 0.0],
            "end_s": [1.0, 1.5, 2.0],
            "p_raw": [0.1, 0.2, 0.3],
            "p_cal": [0.2, 0.6, 0.5],
            "p0": [0.2, 0.6, 0.5],
            "p1": [0.4, 0.8, 0.7],
        }
    )
    scores = RecordingScores(windows, pd.DataFrame({"channel": ["A", "B"]}), pd.DataFrame(), 2.0)
    p0, p1 = binned_interval(scores, 1.0, ["A", "B"])
    values, _ = scores.heatmap(1.0, ["A", "B"])
    assert_same(p0, values)  # p0 equals p_cal here, so it must bin identically
    assert_same(p1[0], [(0.4 * 1.0 + 0.8 * 0.5) / 1.5, 0.8])


# ------------------------------------------------------------------------------- rendering paths


def test_zoomed_in_draws_one_subcoordinate_curve_per_row(recording):
    view = TraceView(recording=recording, span_s=10.0, show_overview=False)
    plot = main_figure(hv.render(view.figure()))
    lines = lines_by_name(plot)
    assert sorted(int(round(row_centre(r))) for r in lines.values()) == list(range(8))
    assert int(round(row_centre(lines["LA1"]))) == 7  # first row on top
    for r in lines.values():
        n = len(r.data_source.data["time"])
        assert 100 < n <= 2 * view.plot_width
        assert r.data_source.data["time"].dtype.kind == "f"
    (rgba,) = renderers(plot, ImageRGBA)
    assert rgba.data_source.data["image"][0].size == 1  # the datashaded layer is empty
    assert not view.state()["datashaded"]


def test_zoomed_out_is_datashaded(recording):
    view = TraceView(recording=recording, span_s=90.0, show_overview=False)
    assert view.state()["datashaded"]
    plot = main_figure(hv.render(view.figure()))
    (rgba,) = renderers(plot, ImageRGBA)
    image = rgba.data_source.data["image"][0]
    assert image.shape == (plot.frame_height, view.plot_width) and (image != 0).any()
    assert all(len(r.data_source.data["time"]) == 0 for r in renderers(plot, Line))
    # A page with more rows than max_curve_rows has no per-row line glyph at all.
    many = TraceView(recording=recording, span_s=10.0, max_curve_rows=4, show_overview=False)
    plot = main_figure(hv.render(many.figure()))
    assert not renderers(plot, Line) and renderers(plot, ImageRGBA)
    assert set(plot.yaxis[0].ticker.ticks) == set(range(8))


def test_range_tool_drives_the_main_view(recording, scores):
    course = SozTimeCourse(scores=scores, soz_channels=["LA1", "LB1"])
    view = TraceView(recording=recording, scores=scores, timecourse=course, start_s=5.0, span_s=10.0)
    layout = hv.render(view.figure())
    (tool,) = layout.select({"type": RangeTool})
    main = main_figure(layout)
    assert tool.x_range is main.x_range
    assert (main.x_range.start, main.x_range.end) == (5.0, 15.0)
    overview = next(p for p in layout.select({"type": Plot}) if p.title.text.startswith("overview"))
    assert tool in overview.tools
    assert overview.x_range.end == pytest.approx(recording.duration_s)
    course_plot = next(p for p in layout.select({"type": Plot}) if p.title.text.startswith("mean"))
    assert course_plot.x_range is main.x_range  # same time axis
    figure = view.figure()
    course.soz_channels = ["LA1"]  # a change of the attached time course redraws the figure
    assert view.figure() is not figure


def test_window_and_zoom_are_synchronised(recording):
    view = TraceView(recording=recording, show_overview=False)
    plot = main_figure(hv.render(view.figure()))
    view.param.update(start_s=30.0, span_s=5.0)
    assert (plot.x_range.start, plot.x_range.end) == (30.0, 35.0)
    t = lines_by_name(plot)["LA1"].data_source.data["time"]
    assert t[0] >= 30.0 and t[-1] <= 35.0 + 1e-9
    view._range.event(x_range=(40.0, 42.0))  # what a bokeh zoom/pan sends
    assert (view.start_s, view.span_s) == (40.0, 2.0)
    t = lines_by_name(plot)["LA1"].data_source.data["time"]
    assert t[0] >= 40.0 and t[-1] <= 42.0 + 1e-9


def test_only_the_visible_block_is_read(monkeypatch):
    rec = shaft_recording(duration_s=200.0)
    calls = spy_reads(monkeypatch, rec)
    view = TraceView(recording=rec, show_overview=False, start_s=100.0, span_s=10.0, highpass_hz=1.0)
    calls.clear()
    plot = main_figure(hv.render(view.figure()))
    margin = 3.0 * rec.sfreq  # 3 / highpass_hz
    assert calls and all(100 * rec.sfreq - margin <= a and b <= 110 * rec.sfreq + margin + 1 for a, b in calls)
    calls.clear()
    view.param.update(start_s=20.0, span_s=120.0)  # zoomed out: chunked, still only the window
    assert renderers(plot, ImageRGBA)[0].data_source.data["image"][0].size > 1
    assert calls and all(20 * rec.sfreq - margin <= a and b <= 140 * rec.sfreq + margin + 1 for a, b in calls)
    assert sum(b - a for a, b in calls) < rec.n_times


def test_far_zoomed_out_views_reuse_the_overview_envelope(monkeypatch):
    rec = shaft_recording(duration_s=200.0)
    calls = spy_reads(monkeypatch, rec)
    view = TraceView(recording=rec, span_s=200.0, plot_width=200)
    hv.render(view.figure())
    assert len({(a, b) for a, b in calls if b - a > rec.n_times // 2}) == 1  # one pass for the overview
    calls.clear()
    view.param.update(start_s=10.0, span_s=150.0)  # coarse enough: drawn from the cached envelope
    assert calls == []
    view.param.update(start_s=10.0, span_s=30.0)  # finer than the cache: read
    assert calls and all(10 * rec.sfreq <= a and b <= 40 * rec.sfreq + 1 for a, b in calls)
    calls.clear()
    view.highpass_hz = 1.0
    view.param.update(start_s=10.0, span_s=150.0)  # filtered views are always read
    assert calls


def test_rebin_envelope_matches_a_direct_reduction():
    rng = np.random.default_rng(0)
    data = rng.standard_normal((3, 1000)).astype(np.float32)
    edges = np.arange(0, 1001, 10)
    lo, hi = minmax_envelope(data, edges[:-1])
    out_edges, out_lo, out_hi = rebin_envelope(edges, lo, hi, 100, 900, 20)
    assert out_edges[0] == 100 and out_edges[-1] == 900 and len(out_edges) == 21
    direct_lo, direct_hi = minmax_envelope(data[:, 100:900], out_edges[:-1] - 100)
    assert_same(out_lo, direct_lo) and assert_same(out_hi, direct_hi)
    assert rebin_envelope(edges, lo, hi, 100, 200, 20) is None  # only 10 cached bins: too coarse


def test_shaft_gain_changes_only_that_shaft(recording):
    view = TraceView(recording=recording, amplitude_uv=80.0, show_overview=False)
    plot = main_figure(hv.render(view.figure()))

    def ranges():
        return {k: (r.coordinates.y_source.start, r.coordinates.y_source.end) for k, r in lines_by_name(plot).items()}

    assert set(ranges().values()) == {(-80.0, 80.0)}
    view.shaft_gain = {"LB": 4.0}
    after = ranges()
    assert all(after[c] == (-80.0, 80.0) for c in BY_SHAFT[:4])
    assert all(after[c] == (-20.0, 20.0) for c in BY_SHAFT[4:])
    view.amplitude_uv = 40.0
    assert ranges()["LA1"] == (-40.0, 40.0) and ranges()["LB1"] == (-10.0, 10.0)


def test_markers_are_drawn(recording):
    markers = [
        {"onset": 3.0, "duration": 4.0, "description": "seizure", "kind": "onset"},
        {"onset": 8.0, "duration": 0.0, "description": "end", "kind": "offset"},
    ]
    view = TraceView(recording=recording, markers=markers, show_overview=False)
    overlay = view.main_element(0.0, 10.0)
    lines = [el for el in overlay if isinstance(el, hv.VLines)]  # one element per line style, not per marker
    assert sorted(x for el in lines for x in el.dimension_values(0)) == [3.0, 8.0]
    (spans,) = [el for el in overlay if isinstance(el, hv.VSpans)]
    assert list(spans.dimension_values(0)) == [3.0] and list(spans.dimension_values(1)) == [7.0]
    texts = [t for el in overlay if isinstance(el, hv.Labels) for t in el.dimension_values(2)]
    assert texts[:2] == ["seizure", "end"]  # onset and offset labels (then the scale bar's)
    plot = main_figure(hv.render(view.figure()))
    assert sorted(x for r in renderers(plot, VSpan) for x in r.data_source.data["time"]) == [3.0, 8.0]
    spans = [r.data_source.data for r in renderers(plot, VStrip)]
    assert [(list(d["time"]), list(d["time_end"])) for d in spans] == [([3.0], [7.0])]


def test_heat_opacity_and_toggle(recording, scores):
    view = TraceView(recording=recording, scores=scores, show_overview=False)
    plot = main_figure(hv.render(view.figure()))
    (heat,) = renderers(plot, Image)
    view.heat_opacity = 0.8
    assert heat.glyph.global_alpha == pytest.approx(0.8)
    view.show_heatmap = False
    assert heat.glyph.global_alpha == 0


def test_scale_bar_matches_amplitude(recording):
    assert nice_scale(73.0) == 50.0 and nice_scale(100.0) == 100.0 and nice_scale(0.3) == pytest.approx(0.2)
    view = TraceView(recording=recording, amplitude_uv=73.0, show_overview=False)
    overlay = view.main_element(0.0, 10.0)
    path = next(el for el in overlay if isinstance(el, hv.Path))
    (xy,) = path.split(datatype="array")
    assert xy[1, 1] - xy[0, 1] == pytest.approx(50.0 / (2 * 73.0))
    scale_text = [el for el in overlay if isinstance(el, hv.Labels)][-1]  # after the marker labels
    assert list(scale_text.dimension_values("text")) == ["50 µV"]


def test_figure_state_and_export(recording, scores):
    view = TraceView(recording=recording, scores=scores, montage="bipolar", start_s=12.0, span_s=6.0)
    state = view.state()
    assert state["start_s"] == 12.0 and state["span_s"] == 6.0 and state["montage"] == "bipolar"
    assert state["rows"] == view.page_rows().labels
    assert view.figure() is view.figure()
    hv.render(view.figure())  # exportable as is


def test_minmax_envelope_and_chunked_reads(recording, monkeypatch):
    data = np.array([[0, 5, -1, 2, 7, 3]], dtype=np.float32)
    lo, hi = minmax_envelope(data, np.array([0, 2, 4]))
    assert_same(lo, [[0, -1, 3]]) and assert_same(hi, [[5, 2, 7]])
    monkeypatch.setattr("sss_viewer.viewer._envelope.CHUNK_VALUES", 8 * 1000)
    view = TraceView(recording=recording)
    plan = view.read_plan()
    edges, lo, hi = view.envelope(plan, 0, recording.n_times, 500)
    full = recording.get_data(view.contact_picks(), 0, recording.n_times)
    assert_same(lo, np.minimum.reduceat(full, edges[:-1], axis=1))
    assert_same(hi, np.maximum.reduceat(full, edges[:-1], axis=1))


def test_read_error_keeps_the_previous_view(monkeypatch):
    rec = shaft_recording(duration_s=60.0)
    view = TraceView(recording=rec, show_overview=False)
    view.__panel__()
    plot = main_figure(hv.render(view.figure()))
    before = lines_by_name(plot)["LA1"].data_source.data["time"].copy()

    def broken(picks=None, start=0, stop=None):
        raise OSError("disk gone")

    monkeypatch.setattr(rec, "get_data", broken)
    view.start_s = 30.0
    assert_same(lines_by_name(plot)["LA1"].data_source.data["time"], before)
    assert view._alert.visible and "disk gone" in view._alert.object and "Traceback" not in view._alert.object


def test_panel_widgets_drive_the_view(recording):
    view = TraceView(recording=recording, page_size=3)
    view.__panel__().get_root()  # the Panel layout builds its bokeh models (what a session serves)
    w = view._widgets
    w["next_time"].clicks += 1
    assert view.start_s == 10.0
    w["next_page"].clicks += 1
    assert view.page == 1
    w["shaft"].value = "LB"
    w["gain"].value = 2.0
    assert view.shaft_gain == {"LB": 2.0}
    w["span"].value = 30.0
    assert view.span_s == 30.0
    view.montage = "bipolar"
    assert len(w["page"].options) == view.n_pages == 2


# ------------------------------------------------------------------------------- time course


def test_time_course_groups_mean_and_sd(scores):
    course = SozTimeCourse(scores=scores, soz_channels=["LA1", "LB1", "nonexistent"], bad_channels=["LB4"])
    soz, rest = course.groups()
    assert soz == [c for c in scores.channels["channel"] if c in ("LA1", "LB1")]
    assert "LB4" not in rest and len(rest) == 5
    table = course.stats()
    values, _ = scores.heatmap(course.effective_bin_s(), channels=soz + rest)
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        assert_same(table["soz_mean"], np.nanmean(values[:2], axis=0))
        assert_same(table["rest_sd"], np.nanstd(values[2:], axis=0))
    overlay = course.figure()
    labels = {el.label for el in overlay}
    assert labels == {"SOZ (n=2)", "rest (n=5)"}
    assert {type(el).__name__ for el in overlay} == {"Curve", "Spread"}
    plot = hv.render(overlay)
    assert (plot.y_range.start, plot.y_range.end) == (0, 1)
    assert {item.label["value"] for item in plot.legend[0].items} == labels


def test_mean_sd_counts_bins_without_a_value_as_nan_and_warns_nothing():
    values = np.array([[0.2, np.nan, 0.5, np.nan], [0.4, np.nan, np.nan, 0.1], [0.9, np.nan, 0.7, np.nan]], np.float32)
    mean, sd = mean_sd(values)  # filterwarnings=error: NumPy's "Mean of empty slice" would fail here
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        assert_same(mean, np.nanmean(values, axis=0))
        assert_same(sd, np.nanstd(values, axis=0))
    assert np.isnan(mean[1]) and np.isnan(sd[1])
    assert sd[3] == 0.0


def test_time_course_without_scores():
    course = SozTimeCourse()
    assert course.stats().empty
    hv.render(course.figure())


def test_empty_view_filled_in_one_batch(recording, scores):
    """How the app drives it: an empty view, then recording, page, focus, bads and markers at once."""
    view = TraceView()
    view.__panel__()
    assert isinstance(view._pane.object, hv.Div)
    markers = [{"onset": 5.0, "duration": 0.0, "kind": "onset", "description": "SZ"}]
    view.param.update(
        recording=recording, scores=None, start_s=0.0, page=0, focus_channel="", bad_channels=["LA3"], markers=markers
    )
    assert view.contacts() == [c for c in BY_SHAFT if c != "LA3"] and view.amplitude_uv > 0
    assert view._pane.object is view.figure() and not view._alert.visible
    assert view._widgets["start"].end == pytest.approx(recording.duration_s)
    view.scores = scores
    assert view.state()["heatmap"]
    hv.render(view.figure())


# ------------------------------------------------------------------------------- amplitude, units, clipping


def scaled_recording(factor: float, spike_uv: float = 0.0):
    """The shaft recording times ``factor``; with ``spike_uv``, LA2 gets a spike at 5 s."""
    rec = shaft_recording()
    data = rec.data * np.float32(factor)
    if spike_uv:
        i = BY_SHAFT.index("LA2")
        data[NAMES.index(BY_SHAFT[i]), int(5.0 * rec.sfreq) : int(5.0 * rec.sfreq) + 10] += np.float32(spike_uv)
    return dataclasses.replace(rec, data=data)


def test_auto_amplitude_is_a_robust_scale_of_the_visible_block():
    view = TraceView(recording=scaled_recording(1.0), show_overview=False)
    block = view.read_rows(view.read_plan(view.rows()), 0, int(10 * view.recording.sfreq), filtered=False)
    assert view.amplitude_uv == display_amplitude(robust_scale(block))
    spiky = TraceView(recording=scaled_recording(1.0, spike_uv=1e5), show_overview=False)
    assert spiky.amplitude_uv == pytest.approx(view.amplitude_uv, rel=0.1)  # one 100 mV spike moves nothing
    assert view.amplitude_warning == "" and spiky.amplitude_warning == ""


def test_implausible_amplitudes_are_said_above_the_plot():
    view = TraceView(recording=scaled_recording(5000.0), show_overview=False)  # nV stored as µV
    assert "amplitudes look like nV mislabelled as µV" in view.amplitude_warning
    assert view.state()["amplitude_warning"] == view.amplitude_warning
    column = view.__panel__()
    warning = column.objects[2]
    assert warning.visible and warning.object == view.amplitude_warning
    assert column.objects.index(warning) < column.objects.index(view._pane)  # above the plot
    view.recording = shaft_recording()
    assert view.amplitude_warning == "" and not warning.visible


def test_rows_are_clipped_to_their_spacing_unless_turned_off():
    view = TraceView(recording=scaled_recording(1.0, spike_uv=1e5), show_overview=False, span_s=10.0)
    plot = main_figure(hv.render(view.figure()))
    a = view.amplitude_uv
    spike = np.asarray(lines_by_name(plot)["LA2"].data_source.data["amplitude"])
    assert np.abs(spike).max() == pytest.approx(2 * CLIP_ROWS * a, rel=1e-5)  # ±CLIP_ROWS row spacings, not 100 mV
    view.clip_traces = False  # updates the same plot
    spike = np.asarray(lines_by_name(plot)["LA2"].data_source.data["amplitude"])
    assert np.abs(spike).max() > 100 * a
    # Zoomed out (datashaded): the spike's pixel column stays within LA2's row ± one spacing.
    rec = shaft_recording()
    flat = np.zeros_like(rec.data)
    flat[NAMES.index("LA2"), int(45 * rec.sfreq) : int(45 * rec.sfreq) + 10] = 1e5
    for clip, reach in ((True, CLIP_ROWS), (False, None)):
        shaded = TraceView(
            recording=dataclasses.replace(rec, data=flat),
            amplitude_uv=50.0,
            clip_traces=clip,
            show_overview=False,
            span_s=90.0,
        )
        image = renderers(main_figure(hv.render(shaded.figure())), ImageRGBA)[0].data_source.data["image"][0]
        alpha = image.view(np.uint8).reshape(*image.shape, 4)[..., 3]
        height, width = alpha.shape
        column = alpha[:, int(45.0 / 90.0 * width) - 1 : int(45.0 / 90.0 * width) + 2].max(axis=1) > 0
        rows = (np.flatnonzero(column) + 0.5) / height * len(BY_SHAFT) - 0.5  # bokeh image row 0 is the bottom
        centre = len(BY_SHAFT) - 1 - BY_SHAFT.index("LA2")
        others = np.array([c for c in range(len(BY_SHAFT)) if c != centre])
        rows = rows[np.abs(rows[:, None] - others[None, :]).min(axis=1) > 0.04]  # not the other rows' flat lines
        if reach is None:
            assert rows.max() > len(BY_SHAFT) - 1  # unclipped, the spike runs off the top
        else:
            assert rows.max() <= centre + reach + 0.1


def test_montage_change_rescales_unless_the_amplitude_was_set_by_hand():
    view = TraceView(recording=scaled_recording(1.0), show_overview=False)
    monopolar = view.amplitude_uv
    view.montage = "bipolar"
    plan = view.read_plan(view.rows())
    bipolar = display_amplitude(robust_scale(view.read_rows(plan, 0, int(10 * view.recording.sfreq), filtered=False)))
    assert view.amplitude_uv == bipolar != monopolar
    view.amplitude_uv = 80.0  # by hand: kept across montages
    view.montage = "average"
    assert view.amplitude_uv == 80.0
    view.amplitude_uv = None  # back to automatic
    plan = view.read_plan(view.rows())
    assert view.amplitude_uv == display_amplitude(
        robust_scale(view.read_rows(plan, 0, int(10 * view.recording.sfreq), filtered=False))
    )


# ------------------------------------------------------------------------------- paging in place, overview, export copy


def test_page_change_updates_the_same_bokeh_models(recording, scores):
    view = TraceView(recording=recording, scores=scores, page_size=3, markers=[{"onset": 2.0, "kind": "onset"}])
    layout = hv.render(view.figure())
    main = main_figure(layout)
    before = {id(m) for m in layout.references()}
    view.page = 1
    assert view.figure() is view.figure() and main_figure(layout) is main
    assert {id(m) for m in layout.references()} == before  # nothing made or dropped
    assert [r.name for r in renderers(main, Line)] == ["LA4", "LB1", "LB2"]
    assert set(main.yaxis[0].major_label_overrides.values()) == {"LA4", "LB1", "LB2"}
    assert "LA4 … LB2 (page 2/3)" in main.title.text
    view.page = 2  # the short last page: two rows and an empty one
    assert [r.name for r in renderers(main, Line)] == ["LB3", "LB4", ""]
    assert len(list(layout.select({"type": RangeTool}))) == 1


def test_overview_shows_where_p_soz_is_high_with_a_colour_bar(recording, scores):
    view = TraceView(recording=recording, scores=scores, page_size=3, markers=[{"onset": 2.0, "kind": "onset"}])
    layout = hv.render(view.figure())
    overview = next(p for p in layout.select({"type": Plot}) if p.title.text.startswith("overview"))
    strip, ink = sorted(renderers(overview, Image), key=lambda r: r.data_source.data["image"][0].shape[0])
    traces = ink.data_source.data["image"][0]  # the page's envelopes: a byte per pixel, 1 = ink
    assert traces.dtype == np.uint8 and set(np.unique(traces)) == {0, 1} and traces.shape[1] == view.plot_width
    values, _, _, _ = view.heat_rows()
    assert_same(strip.data_source.data["image"][0][0], top_k_mean(values, OVERVIEW_TOP_K))
    assert strip.glyph.color_mapper.low == 0 and strip.glyph.color_mapper.high == 1
    (bar,) = [r for r in overview.right if type(r).__name__ == "ColorBar"]
    assert bar.color_mapper.palette == main_figure(layout).right[0].color_mapper.palette  # the main map's colours
    assert not overview.legend or not overview.legend[0].items  # no stray legend
    (tool,) = list(overview.select({"type": RangeTool}))
    assert tool.overlay.line_color == RANGE_BOX_COLOUR and not tool.overlay.inverted and tool.overlay.line_width >= 2
    (lines,) = renderers(overview, VSpan)  # every marker in one glyph
    assert list(lines.data_source.data["overview_time"]) == [2.0] and lines.glyph.line_color == MARKER_COLOURS["onset"]


def test_marker_labels_are_bold_dark_and_short(recording):
    long = "seizure onset with low-voltage fast activity in LA1-LA3"
    markers = [
        {"onset": 3.0, "kind": "onset", "description": long},
        {"onset": 6.0, "kind": "offset", "description": "end"},
        {"onset": 8.0, "kind": "note", "description": "artefact"},
    ]
    view = TraceView(recording=recording, markers=markers, show_overview=False)
    plot = main_figure(hv.render(view.figure()))
    (labels,) = [
        r
        for r in plot.renderers
        if type(getattr(r, "glyph", None)).__name__ == "Text" and "description" in r.data_source.data
    ]
    data = labels.data_source.data
    assert list(data["description"]) == [short_text(long), "end", "artefact"] and short_text(long).endswith("…")
    assert list(data["text_color"]) == [MARKER_COLOURS[k] for k in ("onset", "offset", "note")]
    assert (
        labels.glyph.text_font_style == "bold"
        and float(str(getattr(labels.glyph.text_font_size, "value", labels.glyph.text_font_size)).rstrip("pt")) >= 10
    )
    assert MARKER_COLOURS["onset"].startswith("#c") and MARKER_COLOURS["offset"] == "#212121"


def test_export_renders_a_static_copy_not_the_live_figure(recording, scores):
    from sss_viewer.viewer.export import static_copy, to_bokeh

    view = TraceView(recording=recording, scores=scores, start_s=20.0, span_s=10.0)
    figure = view.figure()
    layout = hv.render(figure)
    live = {id(m) for m in layout.references()}
    copy = static_copy(figure)
    assert not [x for x in copy.traverse(lambda x: x) if isinstance(x, hv.DynamicMap)]
    exported = to_bokeh(figure)
    assert not live & {id(m) for m in exported.references()}  # no model shared with the live document
    assert len(list(exported.select({"type": RangeTool}))) == 1 and len(list(layout.select({"type": RangeTool}))) == 1
    assert {p.output_backend for p in exported.select({"type": Plot})} == {"canvas"}
    view.start_s = 40.0  # the live figure still follows the view after an export
    assert (main_figure(layout).x_range.start, main_figure(layout).x_range.end) == (40.0, 50.0)

"""A montage switch, new markers and an Undo in a served session change only the drawn data (issue 31, row 2).

The trace view is drawn into a bokeh document that stands for a served session's (a session
context, as ``panel serve`` gives it). A montage switch that keeps the rows per page puts the new
rows, labels and amplitude ranges into the drawn glyphs: the same bokeh figure, and the
DynamicMap's callback (HoloViews' whole-plot update) is not run. New markers change only the
markers' glyph data, and the Undo button's tooltip takes its new text without a new bokeh model
(each new model makes bokeh recompute the whole document's model graph). Timings are in
``benchmarks/browser_interaction.py``.
"""

from __future__ import annotations

import dataclasses
from contextlib import contextmanager

import holoviews as hv
import numpy as np
import pytest
from bokeh.document import Document
from bokeh.models import ColumnDataSource, Line, Plot, VSpan
from panel.io.state import set_curdoc

from sss_viewer.viewer._annotations import AnnotationPanel
from sss_viewer.viewer._display import display_amplitude
from sss_viewer.viewer._trace_elements import slot_label
from sss_viewer.viewer.timecourse import ensure_bokeh
from sss_viewer.viewer.traces import TraceView
from tests.fixtures.recordings import toy_recording

NAMES = ["LA1", "LA2", "LA3", "LA4", "LB1", "LB2", "LB3", "LB4"]


class _Request:
    arguments: dict = {}
    cookies: dict = {}
    headers: dict = {}


class _SessionContext:
    """What the viewer reads of a served session's context: an id and the request."""

    id = "test-session"
    server_context = None
    request = _Request()


@contextmanager
def served_document():
    """A bokeh document with a session context, current while the block runs."""
    doc = Document()
    context = _SessionContext()
    doc._session_context = lambda: context
    with set_curdoc(doc):
        yield doc


@pytest.fixture(scope="module", autouse=True)
def bokeh_backend():
    ensure_bokeh()


@pytest.fixture(scope="module")
def recording():
    rec = toy_recording("inplace", 3, n_channels=8, duration_s=60.0)
    return dataclasses.replace(rec, ch_names=list(NAMES))


def drawn_view(doc, recording, **params) -> TraceView:
    """A trace view (3 rows per page) drawn into ``doc``, counting the frames its DynamicMap's callback makes."""
    view = TraceView(recording=recording, page_size=3, span_s=10.0, **params)
    doc.add_root(view.__panel__().get_root(doc))
    frame = view.main_element  # what the callback draws a frame with (HoloViews' whole-plot update)
    view.callback_calls = 0

    def counted(*args, **kwargs):
        view.callback_calls += 1
        return frame(*args, **kwargs)

    view.main_element = counted
    return view


def main_figure(view) -> Plot:
    return view._main_layers.plot.state


def curve_subplots(view) -> dict[int, object]:
    """``{slot: subplot}`` of the drawn curves."""
    slots = {slot_label(k): k for k in range(view.n_slots())}
    return {
        slots[sub.current_frame.label]: sub
        for sub in view._main_layers.plot.subplots.values()
        if isinstance(sub.current_frame, hv.Curve) and sub.current_frame.label in slots
    }


def line_renderers(figure) -> list:
    return [r for r in figure.renderers if isinstance(getattr(r, "glyph", None), Line)]


def test_montage_switch_with_the_same_row_slots_draws_in_place(recording):
    with served_document() as doc:
        view = drawn_view(doc, recording)
        figure, pane_object = main_figure(view), view._pane.object
        view._widgets["montage"].value = "bipolar"  # 8 contacts -> 6 bipolar rows: still 3 slots per page
        assert view.montage == "bipolar" and view.callback_calls == 0  # no HoloViews update
        assert main_figure(view) is figure and view._pane.object is pane_object  # the same models
        assert [r.name for r in line_renderers(figure)] == ["LA1-LA2", "LA2-LA3", "LA3-LA4"]
        assert set(figure.yaxis[0].major_label_overrides.values()) == {"LA1-LA2", "LA2-LA3", "LA3-LA4"}
        assert "bipolar" in figure.title.text
        amplitude = display_amplitude(view.measure_scale())
        assert view.amplitude_uv == amplitude  # rescaled for the new montage ...
        for sub in curve_subplots(view).values():  # ... and every row drawn on that scale
            assert (sub.handles["y_range"].start, sub.handles["y_range"].end) == (-amplitude, amplitude)
        fresh = max(hv.render(view.static_figure()).select({"type": Plot}), key=lambda p: p.frame_height or 0)
        for drawn, new in zip(line_renderers(figure), line_renderers(fresh), strict=True):  # as a fresh drawing
            assert drawn.name == new.name
            np.testing.assert_allclose(drawn.data_source.data["amplitude"], new.data_source.data["amplitude"])
        assert view._widgets["page"].options == view._page_options()  # the page selector names bipolar rows
        view.callback_calls = 0  # the fresh drawing's frame
        view._widgets["montage"].value = "monopolar"
        assert view.callback_calls == 0 and main_figure(view) is figure
        assert [r.name for r in line_renderers(figure)] == ["LA1", "LA2", "LA3"]


def test_montage_switch_changing_the_row_slots_still_rebuilds(recording):
    with served_document() as doc:
        view = TraceView(recording=recording, page_size=8, span_s=10.0)
        doc.add_root(view.__panel__().get_root(doc))
        figure = view.figure()
        view.montage = "bipolar"  # 8 slots -> 7 bipolar rows: fewer slots
        assert view._dirty or view.figure() is not figure


def marker_times(figure, column: str) -> list[float]:
    """The times of the marker lines drawn in ``figure`` (bokeh ``VSpan`` glyphs)."""
    return sorted(float(x) for r in marker_renderers(figure) for x in r.data_source.data[column])


def marker_renderers(figure) -> list:
    return [r for r in figure.renderers if isinstance(getattr(r, "glyph", None), VSpan)]


def marker_line_models(*figures) -> set[int]:
    """``id`` of the data sources and glyphs of the marker lines drawn in ``figures``."""
    glyphs = ("glyph", "selection_glyph", "nonselection_glyph", "hover_glyph", "muted_glyph")
    return {
        id(model)
        for figure in figures
        for r in marker_renderers(figure)
        for model in [r.data_source, *(getattr(r, name) for name in glyphs)]
        if model is not None
    }


def test_new_markers_change_only_the_markers_glyph_data(recording):
    onset = {"onset": 2.0, "duration": 0.0, "description": "SZ", "kind": "onset"}
    with served_document() as doc:
        view = drawn_view(doc, recording, markers=[onset])
        figure, overview = main_figure(view), view._overview_layers.plot.state
        curves = {slot: sub.handles["source"].data for slot, sub in curve_subplots(view).items()}
        models = {m.id for m in doc.models}
        changed = []
        doc.on_change(lambda event: changed.append((getattr(event, "model", None), getattr(event, "attr", None))))
        note = {"onset": 40.0, "duration": 0.0, "description": "later", "kind": "note"}  # outside the window
        view.markers = [onset, note]
        assert view.callback_calls == 0 and main_figure(view) is figure and not view._dirty  # no update, no rebuild
        assert marker_times(figure, "time") == [2.0, 40.0]
        assert marker_times(overview, "overview_time") == [2.0, 40.0]
        # only the marker lines changed (their data, and the colour HoloViews folds into the glyph for
        # one line): not the curves, not the other glyphs, and no new model
        assert changed and {id(m) for m, _ in changed} <= marker_line_models(figure, overview)
        notes = [r.data_source for r in marker_renderers(figure) if 40.0 in list(r.data_source.data["time"])]
        assert len(notes) == 1  # the notes' and events' lines
        sources = {id(m) for m, _ in changed if isinstance(m, ColumnDataSource)}
        assert sources == {id(notes[0])} | {id(r.data_source) for r in marker_renderers(overview)}
        assert {slot: sub.handles["source"].data for slot, sub in curve_subplots(view).items()} == curves
        assert {m.id for m in doc.models} == models
        changed.clear()
        view.markers = [onset]  # the note undone
        assert view.callback_calls == 0 and main_figure(view) is figure
        assert changed and {id(m) for m, _ in changed} <= marker_line_models(figure, overview)
        assert marker_times(figure, "time") == [2.0] and marker_times(overview, "overview_time") == [2.0]
        view.start_s = 35.0  # a later frame (drawn in place) keeps the markers as they are now
        assert marker_times(figure, "time") == [2.0]
        view.markers = [onset, note]  # in the window now: its label is drawn too
        labels = [r.data_source.data for r in figure.renderers if type(r.glyph).__name__ == "Text"]
        assert any("later" in list(data.get("description", [])) for data in labels)


def test_undo_tooltip_takes_its_text_in_place():
    panel = AnnotationPanel(channels=["A1"])
    doc = Document()
    doc.add_root(panel.__panel__().get_root(doc))
    ((button, _),) = panel._undo._models.values()
    tooltip = button.tooltip
    assert tooltip.content == AnnotationPanel.NOTHING_TO_UNDO
    panel.add_marker("note", onset_s=3.0, text="look here")
    assert button.tooltip is tooltip and tooltip.content == "Undo: add note at 3.00 s — look here"
    assert panel._undo.description == tooltip.content and not button.disabled
    panel.undo()
    assert button.tooltip is tooltip and tooltip.content == AnnotationPanel.NOTHING_TO_UNDO and button.disabled
    again = panel._undo._get_model(Document())  # a later drawing shows the current text
    assert again.tooltip.content == AnnotationPanel.NOTHING_TO_UNDO

"""Bokeh document batching for in-place redraws: the model graph is recomputed only when it changed."""

from __future__ import annotations

import numpy as np
from bokeh.document import Document
from bokeh.models import ColumnDataSource, HoverTool
from bokeh.plotting import figure

from sss_viewer.viewer._inplace import data_only_freeze


def _document():
    doc = Document()
    plot = figure()
    source = ColumnDataSource({"x": np.arange(3.0), "y": np.zeros(3)})
    plot.line("x", "y", source=source)
    doc.add_root(plot)
    calls = []
    original = doc.models.recompute
    doc.models.recompute = lambda: (calls.append(1), original())[1]  # count, then do the real work
    return doc, plot, source, calls


def test_a_data_change_leaves_the_model_graph_alone():
    doc, _, source, calls = _document()
    before = {m.id for m in doc.models}
    with data_only_freeze(doc):
        with doc.models.freeze():  # HoloViews holds its own freeze inside
            source.data = {"x": np.arange(5.0), "y": np.ones(5)}
    assert calls == [] and {m.id for m in doc.models} == before and doc.models._freeze_count == 0
    assert "invalidate" not in vars(doc.models)  # the document's own method is back


def test_a_new_model_reference_is_registered_at_the_end():
    doc, plot, _, calls = _document()
    tool = HoverTool()
    with data_only_freeze(doc):
        plot.add_tools(tool)
        assert doc.get_model_by_id(tool.id) is None  # deferred while frozen
    assert calls == [1] and doc.get_model_by_id(tool.id) is tool


def test_a_new_root_is_registered_at_the_end():
    doc, _, _, calls = _document()
    other = figure()
    with data_only_freeze(doc):
        doc.add_root(other)
    assert calls and doc.get_model_by_id(other.id) is other


def test_without_a_document_it_does_nothing():
    with data_only_freeze(None):
        pass

"""New data into a drawn HoloViews overlay's bokeh glyphs, without HoloViews' whole-plot update.

A page or time step of the trace view changes the data of the same glyphs (every page has the same
row slots, every option is fixed per figure). HoloViews' ``Stream.event`` path redraws such a frame
through its general machinery — the DynamicMap callback, display compositors, range computation
for every layer, plot options, hooks and a recomputation of the whole document's model graph —
which on two cores costs several times what drawing the new data costs. :class:`LayerPlots` keeps,
for a drawn overlay, the subplot of each layer (noted from a HoloViews hook on a full update) and
hands new layers straight to each subplot's glyph update (HoloViews' own ``_update_glyphs``: the
same column data, colour mapping and transforms a full update would produce).

:func:`data_only_freeze` batches the bokeh changes of such an update and recomputes the document's
model graph only when a model reference changed (bokeh's ``Model.trigger`` reports every such
change through ``invalidate``); a data change leaves the graph as it was.
"""

from __future__ import annotations

import logging
from contextlib import contextmanager

import holoviews as hv

logger = logging.getLogger(__name__)


class LayerPlots:
    """The subplot drawing each layer of one overlay plot, in the overlay's layer order."""

    def __init__(self) -> None:
        self.plot = None
        self.subplots: list = []

    def note(self, plot, element) -> None:
        """From a HoloViews hook of the overlay: match each layer of ``element`` to its subplot.

        Parameters
        ----------
        plot : holoviews OverlayPlot
        element : hv.Overlay
            The frame the plot has just drawn.

        A plot in a document stays noted until :meth:`forget`: another plot outside that document
        (a copy drawn for an export, whose hooks run too) is not noted in its place.
        """
        known = self.plot
        if (
            known is not None
            and plot is not known
            and known.document is not None
            and plot.document is not known.document
        ):
            return
        drawn = {id(sub.current_frame): sub for sub in plot.subplots.values() if sub.current_frame is not None}
        subplots = [drawn.get(id(layer)) for layer in element]
        if any(sub is None for sub in subplots):  # layers merged or split on the way: no in-place path
            self.plot, self.subplots = None, []
            return
        self.plot, self.subplots = plot, subplots

    def forget(self) -> None:
        self.plot, self.subplots = None, []

    def ready_for(self, document) -> bool:
        """Whether a drawn plot of ``document`` is known (one plot per session document)."""
        plot = self.plot
        return plot is not None and document is not None and plot.document is document and bool(self.subplots)

    def redraw(self, layers) -> bool:
        """Put each layer into its subplot's glyphs; False (nothing changed) when they do not fit.

        Parameters
        ----------
        layers : hv.Overlay or list
            The layers of the noted frame, in the same order: HoloViews elements of the same types
            with options unchanged (clones of the same templates; ranges stay those of the last full
            update), or, for a layer whose glyph reads one data source, that source's columns as a
            dict (the same column names; set as they are, no HoloViews element is built).
        """
        layers = list(layers)
        if self.plot is None or len(layers) != len(self.subplots):
            return False
        for layer, sub in zip(layers, self.subplots):
            if isinstance(layer, dict):
                source = sub.handles.get("source")
                if source is None or set(source.data) != set(layer):
                    return False
            elif type(layer) is not type(sub.current_frame):
                return False
        for layer, sub in zip(layers, self.subplots):
            if layer is sub.current_frame:  # the same element (e.g. the markers): its glyphs hold it already
                continue
            if isinstance(layer, dict):
                sub.handles["source"].data = layer
                continue
            sub.prev_frame, sub.current_frame = sub.current_frame, layer
            ranges = sub.current_ranges if sub.current_ranges is not None else {}
            sub._update_glyphs(layer, ranges, sub.style[sub.cyclic_index])
        if all(isinstance(layer, hv.Element) for layer in layers):
            self.plot.current_frame = self.plot.current_frame.clone(layers)
        return True


@contextmanager
def data_only_freeze(document):
    """Batch bokeh changes on ``document``; recompute its model graph at the end only if a reference changed.

    Nested freezes (HoloViews holds one per plot update) end inside this one. Without a document,
    a plain no-op context.
    """
    models = getattr(document, "models", None)
    if models is None or not hasattr(models, "_push_freeze"):
        yield
        return
    changed = []
    roots = list(document.roots)
    original = models.__dict__.get("invalidate")
    models.invalidate = lambda: changed.append(True)  # called by Model.trigger when a reference changes
    models._push_freeze()
    try:
        yield
    finally:
        if original is None:
            del models.invalidate
        else:
            models.invalidate = original
        models._freeze_count -= 1
        if models._freeze_count == 0 and (changed or list(document.roots) != roots):
            models.recompute()

"""The whole recording at a glance: channels × time heat map of the window scores, :class:`RecordingHeatmap`.

EZTrack-style: one row per scored channel, ranked (top channel at the top), the recording's window
probabilities (a marker's 0–1 values) binned into a fixed number of columns over its whole length
with :meth:`RecordingScores.heatmap` (overlap-weighted, as the trace view's heat map). With a seizure
onset, the time axis is onset-locked (0 = the onset, a line drawn there); without one it is the time
from the recording start. Clicking a cell asks for that channel and time (:attr:`RecordingHeatmap.selected`;
the app brings them into view).
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass

import holoviews as hv
import numpy as np
import panel as pn
import param

from sss_viewer.engine.inference import RecordingScores
from sss_viewer.viewer.timecourse import PLOT_BACKEND_OPTS, ensure_bokeh

logger = logging.getLogger(__name__)

N_BINS = 240
"""Columns of the heat map, whatever the recording's length."""
MAX_TICK_LABELS = 48
"""At most this many channel names on the y axis (every k-th above it; hover names every row)."""
ONSET_COLOUR = "#d62728"


@dataclass(frozen=True)
class HeatGrid:
    """The numbers the heat map draws.

    Attributes
    ----------
    values : ndarray, shape (n_channels, n_bins)
        Binned window probabilities (NaN: not scored there); row 0 is the top-ranked channel.
    channels : list of str, length n_channels
        Rank order, top first.
    edges_s : ndarray, shape (n_bins + 1,)
        Bin edges, s from the recording start.
    onset_s : float or None
        The onset the axis is locked to (None: absolute time).
    """

    values: np.ndarray
    channels: list[str]
    edges_s: np.ndarray
    onset_s: float | None

    @property
    def x_edges(self) -> np.ndarray:
        """Bin edges on the drawn axis: s from the onset, else from the recording start; shape (n_bins + 1,)."""
        return self.edges_s - (self.onset_s or 0.0)

    def cell(self, x: float, y: float) -> tuple[str, float] | None:
        """``(channel, time_s)`` under the drawn point ``(x, y)`` (time from the recording start), or None outside."""
        n = len(self.channels)
        row = n - 1 - int(round(y))
        if not 0 <= row < n or not self.x_edges[0] <= x <= self.x_edges[-1]:
            return None
        return self.channels[row], float(x + (self.onset_s or 0.0))


def ranked_channels(scores: RecordingScores, exclude=()) -> list[str]:
    """Scored channels by rank, top first (unranked last), without ``exclude``."""
    table = scores.channels
    if "rank" in table.columns:
        table = table.sort_values("rank", kind="stable", na_position="last")
    drop = set(exclude)
    return [str(c) for c in table["channel"] if c not in drop]


def first_onset(markers) -> float | None:
    """The earliest ``kind == "onset"`` of annotation ``markers`` (``{"onset_s", "kind", …}``), or None."""
    onsets = [float(m["onset_s"]) for m in markers or () if m.get("kind") == "onset"]
    return min(onsets) if onsets else None


def heat_grid(
    scores: RecordingScores, *, channels: list[str] | None = None, onset_s: float | None = None, n_bins: int = N_BINS
) -> HeatGrid:
    """Bin ``scores``' window probabilities into ``n_bins`` columns over the whole recording.

    Parameters
    ----------
    scores : RecordingScores
    channels : list of str, optional
        Rows, top first (default :func:`ranked_channels`).
    onset_s : float, optional
        Lock the axis to this time (s from the start); ignored when outside the recording.
    n_bins : int

    Returns
    -------
    grid : HeatGrid
        ``values`` of shape (n_channels, n_bins).
    """
    if n_bins < 1:
        raise ValueError(f"Invalid n_bins={n_bins!r}: expected at least one column.")
    duration = float(scores.duration_s)
    if not duration > 0:
        raise ValueError(f"Invalid scores.duration_s={scores.duration_s!r}: expected a positive length.")
    rows = ranked_channels(scores) if channels is None else list(channels)
    values, edges = scores.heatmap(duration / n_bins, channels=rows)
    values, edges = values[:, :n_bins], edges[: n_bins + 1]  # rounding never adds a column
    if onset_s is not None and not 0.0 <= float(onset_s) <= duration:
        logger.info("Onset at %.2f s is outside the recording (%.2f s): absolute time axis.", onset_s, duration)
        onset_s = None
    return HeatGrid(values, rows, edges, None if onset_s is None else float(onset_s))


def score_label(scores: RecordingScores | None) -> str:
    """What the colour shows: ``p(SOZ)`` for a model, a marker's value ÷ the top channel's for a marker."""
    info = getattr(scores, "scorer_info", None) or {}
    if scores is None or scores.scorer == "sss" or not info.get("title"):
        return "p(SOZ)"
    return f"{str(info['title']).lower()} ÷ top channel"


def heat_element(
    grid: HeatGrid, *, width: int = 1000, title: str = "", labels: dict | None = None, value_label: str = "p(SOZ)"
) -> hv.Overlay:
    """The grid as ``hv.Image`` (rows top-ranked first) with the onset line; ``labels`` maps names to shown names."""
    ensure_bokeh()
    n = len(grid.channels)
    onset = grid.onset_s is not None
    X = hv.Dimension("t_rel" if onset else "t_rec", label="time from onset" if onset else "time", unit="s")
    Y = hv.Dimension("channel_row", label=" ")
    V = hv.Dimension("p", label=value_label, range=(0, 1))
    x = grid.x_edges
    data = grid.values if n else np.full((1, len(x) - 1), np.nan)
    image = hv.Image(data, bounds=(x[0], -0.5, x[-1], max(n, 1) - 0.5), kdims=[X, Y], vdims=[V])
    shown = [(labels or {}).get(c, c) for c in grid.channels]
    step = max(1, math.ceil(n / MAX_TICK_LABELS))
    ticks = [(n - 1 - i, shown[i]) for i in range(0, n, step)]
    height = int(np.clip(9 * n, 140, 460))
    image = image.opts(
        cmap="viridis",
        clim=(0, 1),
        colorbar=True,
        yticks=ticks or [(0, "")],
        frame_width=width,
        frame_height=height,
        tools=["hover", "tap"],
        title=title,
        fontsize={"title": "9pt", "yticks": "7pt"},
        backend_opts=PLOT_BACKEND_OPTS,
    )
    layers = [image]
    if onset:
        layers.append(hv.VLine(0.0).opts(color=ONSET_COLOUR, line_width=2, line_dash="dashed"))
    return hv.Overlay(layers)


class RecordingHeatmap(pn.viewable.Viewer):
    """Whole-recording channels × time heat map of the window scores, ranked, onset-locked when there is an onset.

    ``selected`` becomes ``(channel, time_s)`` when a cell is clicked.
    """

    scores = param.ClassSelector(class_=RecordingScores, default=None, allow_None=True, doc="Window scores.")
    bad_channels = param.List(default=[], item_type=str, doc="Channels left out.")
    onset_s = param.Number(default=None, allow_None=True, doc="Seizure onset (s from the start); None: absolute time.")
    display_names = param.Dict(default={}, doc="Channel name → name shown.")
    n_bins = param.Integer(default=N_BINS, bounds=(1, None), doc="Columns over the whole recording.")
    plot_width = param.Integer(default=1000, bounds=(200, None), doc="Width of the plot area (px).")
    selected = param.Tuple(default=None, allow_None=True, length=2, doc="(channel, time_s) of the last clicked cell.")

    def grid(self) -> HeatGrid | None:
        """The drawn numbers (None without scores)."""
        if self.scores is None:
            return None
        channels = ranked_channels(self.scores, exclude=self.bad_channels)
        return heat_grid(self.scores, channels=channels, onset_s=self.onset_s, n_bins=self.n_bins)

    def title(self, grid: HeatGrid | None) -> str:
        """What the heat map shows, in words."""
        if grid is None:
            return "whole recording: no scores yet"
        where = f"time from the onset at {grid.onset_s:.1f} s" if grid.onset_s is not None else "time from the start"
        return f"whole recording, {len(grid.channels)} channels by rank (top first), {where}"

    def figure(self) -> hv.Overlay:
        """The heat map of :meth:`grid` (an empty one without scores)."""
        grid = self.grid()
        if grid is None:
            grid = HeatGrid(np.full((0, 1), np.nan), [], np.array([0.0, 1.0]), None)
        return heat_element(
            grid,
            width=self.plot_width,
            title=self.title(self.grid()),
            labels=self.display_names,
            value_label=score_label(self.scores),
        )

    def select_at(self, x: float | None, y: float | None) -> None:
        """Set :attr:`selected` from a click at drawn point ``(x, y)`` (nothing outside the cells)."""
        grid = self.grid()
        if grid is None or x is None or y is None:
            return
        cell = grid.cell(float(x), float(y))
        if cell is None:
            return
        if cell == self.selected:
            self.param.trigger("selected")  # the same cell again: the view goes back there
        else:
            self.selected = cell

    @param.depends("scores", "bad_channels", "onset_s", "display_names", "n_bins", "plot_width")
    def _view(self):
        figure = self.figure()
        image = figure.get(0)
        tap = hv.streams.Tap(source=image)
        tap.add_subscriber(lambda x=None, y=None: self.select_at(x, y))
        return figure

    def __panel__(self):
        return pn.pane.HoloViews(self._view, linked_axes=False)

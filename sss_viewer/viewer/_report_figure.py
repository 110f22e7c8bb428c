"""The report's figure, chosen on purpose rather than whatever page is on screen.

:func:`choose_report_view` picks what the report shows: the top-ranked channels (``N_TOP``, plus the
clinician's SOZ channels when only a few of them are not among those) around the seizure onset
(``BEFORE_S`` before to ``AFTER_S`` after the first onset marker), else around the highest-scoring
window of the top channel, else the start of the recording. :func:`report_figure` draws it with a
copy of the live :class:`TraceView` (same montage, filters, amplitude and gains; the live view is not
touched) that shows only those channels' rows, in rank order, above the whole-recording heat map
(:mod:`sss_viewer.viewer.recording_heatmap`) with the figure's span boxed.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

import holoviews as hv
import pandas as pd
import param

from sss_viewer.engine.inference import RecordingScores
from sss_viewer.viewer.recording_heatmap import heat_element, heat_grid, ranked_channels, score_label
from sss_viewer.viewer.traces import TraceView

logger = logging.getLogger(__name__)

N_TOP = 8
"""Top-ranked channels the report figure shows."""
MAX_SOZ_EXTRA = 4
"""Labelled SOZ channels outside the top ones are added when there are at most this many."""
BEFORE_S = 5.0
AFTER_S = 15.0
"""The figure spans ``BEFORE_S`` before to ``AFTER_S`` after the onset (or the best window's centre ± half of it)."""
COPIED = (
    "recording",
    "scores",
    "montage",
    "amplitude_uv",
    "shaft_gain",
    "highpass_hz",
    "lowpass_hz",
    "notch_hz",
    "heat_opacity",
    "show_heatmap",
    "markers",
    "bin_s",
    "clip_traces",
    "plot_width",
    "row_height",
)
"""What the report's trace view copies from the live one (everything that decides how a row looks)."""


@dataclass(frozen=True)
class ReportView:
    """What the report figure shows and why.

    Attributes
    ----------
    channels : list of str
        Recording channel names, top-ranked first (then the added SOZ channels).
    n_ranked : int
        How many of ``channels`` are the top-ranked ones.
    t0, t1 : float
        The traces' time span (s from the recording start).
    onset_s : float or None
        The seizure onset the span is placed around (None when there is none).
    why : str
        Why this span: the onset, or the best window.
    """

    channels: list[str]
    n_ranked: int
    t0: float
    t1: float
    onset_s: float | None
    why: str

    def caption(self, montage: str = "") -> str:
        """The sentence the report prints above the figure."""
        top = ", ".join(self.channels[: self.n_ranked]) or "none"
        text = f"Top {self.n_ranked} channels by the ranking ({top})"
        extra = self.channels[self.n_ranked :]
        if extra:
            text += f" and the labelled SOZ channel{'s' * (len(extra) != 1)} not among them ({', '.join(extra)})"
        text += f", {self.t0:.1f}–{self.t1:.1f} s: {self.why}"
        if montage:
            text += f"; {montage} montage and display filters as in the viewer"
        return text + ". Below: every scored channel over the whole recording, ranked, the span of the figure boxed."


def _fit(t0: float, t1: float, duration: float) -> tuple[float, float]:
    """``[t0, t1]`` moved inside ``[0, duration]`` keeping its length where the recording is long enough."""
    span = t1 - t0
    if span >= duration:
        return 0.0, float(duration)
    t0 = min(max(0.0, t0), duration - span)
    return float(t0), float(t0 + span)


def best_window(scores: RecordingScores | None, channel: str) -> tuple[float, float, float] | None:
    """``(start_s, end_s, p)`` of ``channel``'s highest-scoring window in ``scores``' heat table, or None."""
    if scores is None:
        return None
    table = scores.heat_table
    rows = table.loc[(table["channel"] == channel) & table["p_cal"].notna()]
    if rows.empty:
        return None
    best = rows.loc[rows["p_cal"].idxmax()]
    return float(best["start_s"]), float(best["end_s"]), float(best["p_cal"])


def choose_report_view(
    ranking: pd.DataFrame | None,
    *,
    shown: list[str],
    duration_s: float,
    onset_s: float | None = None,
    soz_channels: list[str] = (),
    scores: RecordingScores | None = None,
    n_top: int = N_TOP,
) -> ReportView:
    """What the report figure shows (see the module docstring).

    Parameters
    ----------
    ranking : DataFrame or None
        The ranking in rank order (a ``channel`` column); None or empty: the first ``shown`` channels.
    shown : list of str
        Channels the trace view can draw (good iEEG channels not marked bad).
    duration_s : float
    onset_s : float, optional
        The first seizure-onset marker (s).
    soz_channels : list of str
        The clinician's SOZ channels.
    scores : RecordingScores, optional
        For the best window when there is no onset.
    n_top : int

    Returns
    -------
    view : ReportView
    """
    if n_top < 1:
        raise ValueError(f"Invalid n_top={n_top!r}: expected at least one channel.")
    allowed = set(shown)
    ranked = [] if ranking is None or ranking.empty else [str(c) for c in ranking["channel"] if c in allowed]
    channels = (ranked or list(shown))[:n_top]
    n_ranked = len(channels) if ranked else 0
    missing = [c for c in soz_channels if c in allowed and c not in channels]
    if missing and len(missing) <= MAX_SOZ_EXTRA:
        channels += missing
    if onset_s is not None and 0.0 <= onset_s <= duration_s:
        t0, t1 = _fit(onset_s - BEFORE_S, onset_s + AFTER_S, duration_s)
        why = f"{onset_s - t0:.0f} s before to {t1 - onset_s:.0f} s after the seizure onset at {onset_s:.1f} s"
        return ReportView(channels, n_ranked, t0, t1, float(onset_s), why)
    best = best_window(scores, channels[0]) if n_ranked else None
    if best is not None:
        centre = (best[0] + best[1]) / 2
        t0, t1 = _fit(centre - (BEFORE_S + AFTER_S) / 2, centre + (BEFORE_S + AFTER_S) / 2, duration_s)
        why = (
            f"no seizure onset is marked, so around the highest-scoring window of {channels[0]} "
            f"({best[0]:.1f}–{best[1]:.1f} s, p = {best[2]:.2f})"
        )
        return ReportView(channels, n_ranked, t0, t1, None, why)
    t0, t1 = _fit(0.0, BEFORE_S + AFTER_S, duration_s)
    return ReportView(channels, n_ranked, t0, t1, None, "no seizure onset is marked and nothing is scored: the start")


class ReportTraces(TraceView):
    """A trace view that draws only the montage rows of ``report_channels``, in that order, on one page.

    Its data object's ``channels`` (:class:`.trace_data.TraceData`) choose the rows; the montage is
    still built over every shown channel, so an average reference and bipolar pairs are those of the
    live view.
    """

    report_channels = param.List(default=[], item_type=str, doc="Channels whose rows are drawn, in order.")

    def __init__(self, **params):
        super().__init__(**params)
        self.data.channels = list(self.report_channels)
        self.param.watch(self._on_report_channels, ["report_channels"])

    def _on_report_channels(self, event) -> None:
        self.data.channels = list(event.new)


def report_traces(live: TraceView, view: ReportView) -> ReportTraces:
    """A :class:`ReportTraces` copy of ``live`` over ``view``'s channels and span (``live`` is not changed)."""
    copy = ReportTraces(
        **{name: getattr(live, name) for name in COPIED},
        report_channels=list(view.channels),
        bad_channels=list(live.bad_channels),
        show_overview=False,
        focus_channel="",
        page=0,
        page_size=max(1, len(view.channels)),
        start_s=view.t0,
        span_s=max(view.t1 - view.t0, 1e-3),
    )
    return copy


def report_figure(
    live: TraceView, view: ReportView, scores: RecordingScores | None, *, bad_channels=()
) -> hv.Layout | hv.Overlay | None:
    """The report figure: ``view``'s traces (a copy of ``live``) above the whole-recording heat map.

    Parameters
    ----------
    live : TraceView
        The viewer's trace view (montage, filters, amplitude, gains, markers are copied).
    view : ReportView
    scores : RecordingScores or None
        Without scores the heat map is left out.
    bad_channels : sequence of str
        Left out of the heat map.

    Returns
    -------
    figure : hv.Layout, hv.Overlay or None
        The traces alone without scores; None when ``view`` has no channel (nothing to draw).
    """
    if not view.channels or live.recording is None:
        return None
    traces = report_traces(live, view).static_figure()
    if scores is None:
        return traces
    grid = heat_grid(scores, channels=ranked_channels(scores, exclude=bad_channels), onset_s=view.onset_s)
    shift = grid.onset_s or 0.0
    names = dict(zip(live.recording.ch_names, live.recording.display_names)) if live.recording is not None else {}
    title = "whole recording by rank" + (f", time from the onset at {shift:.1f} s" if grid.onset_s is not None else "")
    heat = heat_element(grid, width=live.plot_width, title=title, labels=names, value_label=score_label(scores))
    box = hv.VSpan(view.t0 - shift, view.t1 - shift).opts(color="white", alpha=0.25, line_color="white")
    logger.debug(
        "Report figure: %d rows, %.1f–%.1f s, heat map %s", len(view.channels), view.t0, view.t1, grid.values.shape
    )
    return hv.Layout([traces, heat * box]).cols(1).opts(shared_axes=False)

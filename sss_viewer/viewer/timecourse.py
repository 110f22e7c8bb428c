"""Time course of the window probabilities: SOZ channels against the rest, :class:`SozTimeCourse`.

Drawn under the heat map on the same time axis (the ``time`` dimension, in s): for every heat-map
bin, the mean ± SD over channels of the binned calibrated window probabilities, once for the SOZ
channels and once for the other scored channels.
"""

from __future__ import annotations

import logging

import holoviews as hv
import numpy as np
import pandas as pd
import panel as pn
import param

from sss_viewer.engine.inference import RecordingScores
from sss_viewer.viewer._trace_data import infer_bin_s

logger = logging.getLogger(__name__)

SOZ_COLOUR = "#d62728"
PLOT_BACKEND_OPTS = {"plot.min_border_left": 110, "plot.output_backend": "canvas"}
"""Bokeh options of the viewer's plots: a common left border (stacked plots share pixel-aligned time
axes) and canvas drawing. HoloViews asks for WebGL, which a browser without a GPU (a hospital PC, a
headless export or test browser) emulates in software: every redraw of a page then costs ~0.5 s."""
REST_COLOUR = "#1f77b4"


def ensure_bokeh() -> None:
    """Load HoloViews' bokeh backend (for ``.opts``) without notebook output, once per process.

    Also silences bokeh's W-1005 check ("'fixed' sizing mode requires width and height"): the
    viewer sizes plot *frames* (``frame_width``) so stacked plots share pixel-aligned time axes,
    which HoloViews renders as fixed sizing without ``width``; bokeh lays such plots out correctly
    but logs the warning on every serialisation.
    """
    if "bokeh" not in hv.Store.renderers:
        hv.renderer("bokeh")
    if hv.Store.current_backend != "bokeh" or not hasattr(hv.opts, "Overlay"):
        # Importing holoviews.plotting.bokeh (e.g. for its links) registers the backend without
        # building hv.opts for it; switching to it does.
        hv.Store.set_current_backend("bokeh")
    from bokeh.core.validation import silence
    from bokeh.core.validation.warnings import FIXED_SIZING_MODE

    silence(FIXED_SIZING_MODE, True)


def mean_sd(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """NaN-aware mean and SD over channels.

    Parameters
    ----------
    values : ndarray, shape (n_channels, n_bins)

    Returns
    -------
    mean, sd : ndarray, shape (n_bins,)
        NaN where no channel has a value (all NaN when there are no channels).
    """
    if values.shape[0] == 0:
        nan = np.full(values.shape[1], np.nan)
        return nan, nan.copy()
    # Counted by hand rather than np.nanmean/np.nanstd, whose warnings for an all-NaN bin would need
    # process-wide warning filters (which race with the session's other threads).
    present = ~np.isnan(values)
    counts = present.sum(axis=0)
    with np.errstate(invalid="ignore", divide="ignore"):  # NumPy's error state is the calling thread's
        mean = np.where(present, values, 0.0).sum(axis=0) / counts
        sd = np.sqrt((np.where(present, values - mean, 0.0) ** 2).sum(axis=0) / counts)
    return mean, sd


class SozTimeCourse(pn.viewable.Viewer):
    """Mean ± SD over time of the binned window probabilities, SOZ channels vs the rest.

    ``soz_channels`` may be the clinician's labels or the channels above the threshold; names
    that were not scored are ignored. ``bad_channels`` are left out of both groups.
    """

    scores = param.ClassSelector(class_=RecordingScores, default=None, allow_None=True, doc="Window scores.")
    soz_channels = param.List(default=[], item_type=str, doc="Channels of the SOZ group.")
    bad_channels = param.List(default=[], item_type=str, doc="Channels left out of both groups.")
    bin_s = param.Number(
        default=None,
        allow_None=True,
        bounds=(0, None),
        inclusive_bounds=(False, True),
        doc="Time bin (s); None = the scores' window stride.",
    )
    plot_width = param.Integer(default=1000, bounds=(200, None), doc="Width of the plot area (px).")
    plot_height = param.Integer(default=150, bounds=(60, None), doc="Height of the plot area (px).")

    def groups(self) -> tuple[list[str], list[str]]:
        """``(soz, rest)``: scored, non-bad channels in and out of ``soz_channels``."""
        if self.scores is None:
            return [], []
        bad = set(self.bad_channels)
        scored = [c for c in self.scores.channels["channel"] if c not in bad]
        wanted = set(self.soz_channels)
        missing = sorted(wanted - set(scored) - bad)
        if missing:
            logger.info("SOZ channels not scored (left out of the time course): %s", missing)
        return [c for c in scored if c in wanted], [c for c in scored if c not in wanted]

    def effective_bin_s(self) -> float:
        """``bin_s``, else the scores' window stride, else 1 s."""
        return float(self.bin_s) if self.bin_s else infer_bin_s(self.scores)

    def stats(self) -> pd.DataFrame:
        """The plotted numbers, one row per bin.

        Returns
        -------
        table : DataFrame
            ``time_s`` (bin centre), ``soz_mean, soz_sd, rest_mean, rest_sd``; NaN where a group
            has no value in that bin.
        """
        if self.scores is None:
            return pd.DataFrame(columns=["time_s", "soz_mean", "soz_sd", "rest_mean", "rest_sd"])
        soz, rest = self.groups()
        bin_s = self.effective_bin_s()
        values, edges = self.scores.heatmap(bin_s, channels=soz + rest)
        soz_mean, soz_sd = mean_sd(values[: len(soz)])
        rest_mean, rest_sd = mean_sd(values[len(soz) :])
        return pd.DataFrame(
            {
                "time_s": (edges[:-1] + edges[1:]) / 2,
                "soz_mean": soz_mean,
                "soz_sd": soz_sd,
                "rest_mean": rest_mean,
                "rest_sd": rest_sd,
            }
        )

    def figure(self) -> hv.Overlay:
        """Two curves (SOZ, rest) with ±SD bands, y in 0–1, on the ``time`` axis shared with the traces."""
        ensure_bokeh()
        T = hv.Dimension("time", label="time", unit="s")
        P = hv.Dimension("p_mean", label="p(SOZ)", range=(0, 1))
        layers = []
        if self.scores is not None:
            table = self.stats()
            soz, rest = self.groups()
            x = table["time_s"].to_numpy()
            for name, group, colour in (("soz", soz, SOZ_COLOUR), ("rest", rest, REST_COLOUR)):
                if not group:
                    continue
                label = f"{'SOZ' if name == 'soz' else 'rest'} (n={len(group)})"
                mean = table[f"{name}_mean"].to_numpy()
                sd = table[f"{name}_sd"].to_numpy()
                below = mean - np.clip(mean - sd, 0, 1)
                above = np.clip(mean + sd, 0, 1) - mean
                band = hv.Spread((x, mean, below, above), kdims=[T], vdims=[P, "below", "above"], label=label)
                layers.append(band.opts(color=colour, alpha=0.2, line_alpha=0))
                curve = hv.Curve((x, mean), kdims=[T], vdims=[P], label=label)
                layers.append(curve.opts(color=colour, line_width=1.5, interpolation="steps-mid"))
        title = "mean ± SD of window p(SOZ)" if layers else "no scores to plot"
        if not layers:
            layers.append(hv.Curve((np.zeros(0), np.zeros(0)), kdims=[T], vdims=[P]))
        return hv.Overlay(layers).opts(
            hv.opts.Overlay(
                frame_width=self.plot_width,
                frame_height=self.plot_height,
                ylim=(0, 1),
                ylabel="p(SOZ)",
                legend_position="top_left",
                title=title,
                fontsize={"title": "9pt"},
                backend_opts=PLOT_BACKEND_OPTS,
                show_legend=True,
            )
        )

    @param.depends("scores", "soz_channels", "bad_channels", "bin_s", "plot_width", "plot_height")
    def _view(self):
        return self.figure()

    def __panel__(self):
        return pn.pane.HoloViews(self._view, linked_axes=False)

"""The channel ranking: a sortable table of SOZ scores, a threshold, and the per-patient agreement.

The pure part (:func:`ranking_frame`, :func:`agreement`, :func:`agreement_text`) turns a
``RecordingScores.channels`` table into what the clinician sees, so every rule is testable without
Panel: bad channels leave the table and the ranks are recomputed without them; a channel is
*above* the threshold when ``score >= threshold`` (the rule :mod:`sss_viewer.metrics` uses to
predict SOZ); the agreement with clinician labels is computed over the channels still in the table.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Iterable

import numpy as np
import pandas as pd
import panel as pn
import param

from sss_viewer.inference import RecordingScores
from sss_viewer.metrics import binary_auc
from sss_viewer.viewer.display import shaft_name

logger = logging.getLogger(__name__)

RANKING_COLUMNS = ("rank", "channel", "shaft", "score", "interval", "label", "n_windows", "above", "lower", "upper")
"""Columns of :func:`ranking_frame` (``label`` only when clinician labels are known)."""

SOZ_LABEL = "SOZ"
NON_SOZ_LABEL = "—"
UNKNOWN_LABEL = "?"
NO_LABELS_TEXT = "no clinician labels for this recording"


def labels_known(channels: pd.DataFrame | None) -> bool:
    """Whether a channel table carries clinician SOZ labels (a ``label`` column with a known value)."""
    return channels is not None and "label" in channels.columns and bool(channels["label"].notna().any())


NO_INTERVAL = "n/a (isotonic)"


def _interval_text(lower: np.ndarray, upper: np.ndarray) -> list[str]:
    """``"[lower, upper]"`` per channel; a calibrator without intervals (every lower == upper) says so."""
    if len(lower) and np.allclose(lower, upper):
        return [NO_INTERVAL] * len(lower)
    return [f"[{lo:.3f}, {hi:.3f}]" for lo, hi in zip(lower, upper)]


def ranking_frame(
    channels: pd.DataFrame | None, threshold: float, bad_channels: Iterable[str] = ()
) -> pd.DataFrame:
    """The ranking the table shows.

    Parameters
    ----------
    channels : DataFrame or None
        ``RecordingScores.channels``: ``channel, score, lower, upper, n_windows`` (+ ``label`` 0/1/NA).
    threshold : float
        Channels with ``score >= threshold`` are flagged ``above``.
    bad_channels : iterable of str
        Channels left out of the ranking (names not in ``channels`` are ignored).

    Returns
    -------
    ranking : DataFrame, one row per remaining channel, best first
        ``rank`` (1..n, recomputed without the bad channels), ``channel``, ``shaft``, ``score``,
        ``interval`` (``"[lower, upper]"``, or :data:`NO_INTERVAL` when the calibrator gives point
        probabilities only), ``label`` (``"SOZ"``/``"—"``/``"?"``, only when labels are
        known), ``n_windows``, ``above`` (bool), ``lower``, ``upper``.
    """
    columns = [c for c in RANKING_COLUMNS if c != "label" or labels_known(channels)]
    if channels is None or channels.empty:
        return pd.DataFrame({c: pd.Series(dtype=object) for c in columns})
    bad = set(bad_channels)
    df = channels.loc[~channels["channel"].isin(bad)].copy()
    df = df.sort_values(["score", "channel"], ascending=[False, True], kind="stable").reset_index(drop=True)
    out = pd.DataFrame(
        {
            "rank": np.arange(1, len(df) + 1, dtype=np.int64),
            "channel": df["channel"].astype(str).to_numpy(),
            "shaft": [shaft_name(c) for c in df["channel"].astype(str)],
            "score": df["score"].to_numpy(dtype=np.float64),
            "interval": _interval_text(df["lower"].to_numpy(dtype=np.float64), df["upper"].to_numpy(dtype=np.float64)),
            "n_windows": df["n_windows"].to_numpy(dtype=np.int64),
            "above": df["score"].to_numpy(dtype=np.float64) >= float(threshold),
            "lower": df["lower"].to_numpy(dtype=np.float64),
            "upper": df["upper"].to_numpy(dtype=np.float64),
        }
    )
    if "label" in columns:
        out["label"] = [
            UNKNOWN_LABEL if pd.isna(v) else (SOZ_LABEL if int(v) == 1 else NON_SOZ_LABEL) for v in df["label"]
        ]
    return out[columns]


def agreement(ranking: pd.DataFrame, threshold: float) -> dict[str, float] | None:
    """Agreement of the ranking with the clinician labels, over channels with a known label.

    Parameters
    ----------
    ranking : DataFrame
        :func:`ranking_frame` output.
    threshold : float

    Returns
    -------
    metrics : dict or None
        ``auc`` (``nan`` with one class), ``f1``, ``precision``, ``recall``, ``threshold``,
        ``n_soz``, ``n_soz_above``, ``n_above``, ``n_channels``; None when no label is known.
        Threshold figures follow :mod:`sss_viewer.metrics` (``score >= threshold`` is predicted SOZ; a
        ratio with a zero denominator is 0).
    """
    if "label" not in ranking.columns:
        return None
    known = ranking.loc[ranking["label"] != UNKNOWN_LABEL]
    if known.empty:
        return None
    scores = known["score"].to_numpy(dtype=np.float64)
    labels = (known["label"] == SOZ_LABEL).to_numpy().astype(np.int8)
    above = scores >= float(threshold)
    tp = int(np.sum(above & (labels == 1)))
    fp = int(np.sum(above & (labels == 0)))
    fn = int(np.sum(~above & (labels == 1)))
    return {
        "auc": binary_auc(scores, labels),
        "f1": 2 * tp / (2 * tp + fp + fn) if tp + fp + fn else 0.0,
        "precision": tp / (tp + fp) if tp + fp else 0.0,
        "recall": tp / (tp + fn) if tp + fn else 0.0,
        "threshold": float(threshold),
        "n_soz": int(labels.sum()),
        "n_soz_above": tp,
        "n_above": int(above.sum()),
        "n_channels": len(known),
    }


def agreement_text(metrics: dict[str, float] | None) -> str:
    """One line for the clinician, e.g. ``AUC 0.91 · F1 0.67 · precision 0.50 · recall 1.00 at 0.42 (…)``."""
    if metrics is None:
        return NO_LABELS_TEXT
    auc = "AUC n/a (one class)" if math.isnan(metrics["auc"]) else f"AUC {metrics['auc']:.2f}"
    return (
        f"{auc} · F1 {metrics['f1']:.2f} · precision {metrics['precision']:.2f} · recall {metrics['recall']:.2f} "
        f"at {metrics['threshold']:.2f} ({metrics['n_soz_above']} of {metrics['n_soz']} SOZ channels above; "
        f"{metrics['n_above']} of {metrics['n_channels']} channels above)"
    )


def _highlight_above(row: pd.Series) -> list[str]:
    style = "background-color: #fde2c8; font-weight: bold" if row.get("above", False) else ""
    return [style] * len(row)


class RankingTable(pn.viewable.Viewer):
    """Channel ranking with a threshold slider and the agreement with clinician labels.

    Rows at or above ``threshold`` are highlighted and ticked; channels in ``bad_channels`` leave
    the table, the ranks and the agreement figures. Clicking (selecting) a row sets
    ``selected_channel``; setting ``selected_channel`` from outside selects its row.
    """

    scores = param.ClassSelector(class_=RecordingScores, default=None, allow_None=True, doc="Scores of the recording.")
    threshold = param.Number(default=0.5, bounds=(0.0, 1.0), doc="Channels with score >= threshold are flagged.")
    bad_channels = param.List(default=[], item_type=str, doc="Channels left out of the ranking and the agreement.")
    selected_channel = param.String(default=None, allow_None=True, doc="The channel of the row last clicked.")
    labels_known = param.Boolean(default=False, readonly=True, doc="Whether clinician SOZ labels are known.")
    page_size = param.Integer(default=20, bounds=(5, None), doc="Rows per page of the table.")

    def __init__(self, **params):
        super().__init__(**params)
        self._syncing = False
        self._tabulator = pn.widgets.Tabulator(
            value=ranking_frame(None, self.threshold),
            pagination="local",
            page_size=self.page_size,
            sortable=True,
            selectable=1,
            disabled=True,
            show_index=False,
            hidden_columns=["lower", "upper"],
            formatters={"above": {"type": "tickCross", "crossElement": False}},
            titles={"n_windows": "windows", "above": "≥ thr", "label": "clinician"},
            sizing_mode="stretch_width",
        )
        self._tabulator.style.apply(_highlight_above, axis=1)
        self._tabulator.param.watch(self._on_selection, "selection")
        self._tabulator.on_click(self._on_click)
        self._slider = pn.widgets.FloatSlider.from_param(
            self.param.threshold, name="Threshold", step=0.01, sizing_mode="stretch_width"
        )
        self._agreement = pn.pane.Markdown("", sizing_mode="stretch_width")
        self._excluded = pn.pane.Markdown("", sizing_mode="stretch_width", styles={"color": "#666"})
        self._layout = pn.Column(
            self._slider, self._agreement, self._tabulator, self._excluded, sizing_mode="stretch_width"
        )
        self._refresh()

    def __panel__(self):
        return self._layout

    # ------------------------------------------------------------------ state

    def table(self) -> pd.DataFrame:
        """The current ranking (a copy of what the table shows, hidden ``lower``/``upper`` included)."""
        return ranking_frame(self._channels(), self.threshold, self.bad_channels)

    def agreement(self) -> dict[str, float] | None:
        """:func:`agreement` of the current table; None when labels are unknown."""
        return agreement(self.table(), self.threshold)

    def _channels(self) -> pd.DataFrame | None:
        return None if self.scores is None else self.scores.channels

    def _set_labels_known(self, value: bool) -> None:
        if value == self.labels_known:
            return
        self.param.labels_known.readonly = False
        try:
            with param.edit_constant(self):
                self.labels_known = value
        finally:
            self.param.labels_known.readonly = True

    @param.depends("scores", "threshold", "bad_channels", watch=True)
    def _refresh(self) -> None:
        self._set_labels_known(labels_known(self._channels()))
        ranking = self.table()
        self._syncing = True
        try:
            self._tabulator.value = ranking
            self._tabulator.selection = self._rows_of(self.selected_channel, ranking)
        finally:
            self._syncing = False
        self._agreement.object = f"**Agreement:** {agreement_text(agreement(ranking, self.threshold))}"
        self._excluded.object = self._excluded_text()

    def _excluded_text(self) -> str:
        parts = []
        if self.scores is not None and len(self.scores.excluded):
            ex = self.scores.excluded
            parts.append("Not scored: " + "; ".join(f"{c} ({r})" for c, r in zip(ex["channel"], ex["reason"])))
        scored = set() if self.scores is None else set(self.scores.channels["channel"])
        bad = [c for c in self.bad_channels if c in scored]
        if bad:
            parts.append("Marked bad (left out of the ranking): " + ", ".join(bad))
        return "  \n".join(parts)

    # ------------------------------------------------------------------ selection

    @staticmethod
    def _rows_of(channel: str | None, ranking: pd.DataFrame) -> list[int]:
        if channel is None or ranking.empty:
            return []
        return [int(i) for i in np.flatnonzero(ranking["channel"].to_numpy() == channel)]

    def _select_row(self, row: int | None) -> None:
        value = self._tabulator.value
        if row is None or value is None or not 0 <= row < len(value):
            return
        self.selected_channel = str(value["channel"].iloc[row])

    def _on_selection(self, event) -> None:
        if self._syncing or not event.new:
            return
        self._select_row(int(event.new[0]))

    def _on_click(self, event) -> None:
        self._select_row(None if event.row is None else int(event.row))

    @param.depends("selected_channel", watch=True)
    def _sync_selection(self) -> None:
        rows = self._rows_of(self.selected_channel, self._tabulator.value)
        if rows != list(self._tabulator.selection):
            self._syncing = True
            try:
                self._tabulator.selection = rows
            finally:
                self._syncing = False

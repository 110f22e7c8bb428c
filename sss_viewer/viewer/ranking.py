"""The channel ranking: a sortable table of SOZ scores, a threshold, and the per-patient agreement.

The pure part (:func:`ranking_frame`, :func:`agreement`, :func:`agreement_text`,
:func:`scorer_text`, :func:`channel_artifacts`) turns a ``RecordingScores.channels`` table into what
the clinician sees, so every rule is testable without Panel: bad channels leave the table and the
ranks are recomputed without them; a channel is *above* the threshold when ``score >= threshold``
(the rule :mod:`sss_viewer.metrics` uses to predict SOZ); the agreement with clinician labels is
computed over the channels still in the table that have a score. A channel flagged by the artifact
detector carries its reason in the ``artifact`` column (and a badge in the table); a channel with
no clean window has no score and is listed last with its reason. Above the table, one line says
what produced the ranking and how it was validated (:func:`scorer_text`): the same text goes into
the report and the CSV.
"""

from __future__ import annotations

import html
import logging
import math
from collections.abc import Iterable

import numpy as np
import pandas as pd
import panel as pn
import param
from bokeh.models.widgets.tables import NumberFormatter

from sss_viewer.engine.inference import RecordingScores
from sss_viewer.metrics import binary_auc
from sss_viewer.viewer._display import shaft_name

logger = logging.getLogger(__name__)

RANKING_COLUMNS = (
    "rank",
    "channel",
    "shaft",
    "score",
    "value",
    "time_above",
    "interval",
    "label",
    "artifact",
    "n_windows",
    "above",
    "lower",
    "upper",
)
"""Columns of :func:`ranking_frame` (``interval`` only when the model gives intervals, ``value`` only for a
marker, which has a value in its own unit)."""

CSV_COLUMNS = (
    "rank",
    "channel",
    "shaft",
    "score",
    "time_above",
    "lower",
    "upper",
    "label",
    "n_windows",
    "above",
    "scorer",
    "value",
    "artifact",
    "scorer_note",
)
"""Columns of the ranking CSV (:func:`ranking_csv_frame`): the original ten, then what scored the ranking
(registry name), the marker's value, the artifact reason, and :func:`scorer_text`."""

PROB_DECIMALS = 2
"""One rounding rule for every probability the viewer shows or writes: scores, thresholds, intervals."""
VALUE_DIGITS = 4
"""Significant digits of a marker's value (in its own unit: µV², µV/s, events/min …) in the table and the CSV."""
ARTIFACT_BADGE = "artifact"
"""The badge a flagged channel's row carries in the table (plain text: it renders without emoji fonts)."""

SOZ_LABEL = "SOZ"
NON_SOZ_LABEL = "not SOZ"
UNKNOWN_LABEL = ""
LABEL_CHOICES = (SOZ_LABEL, NON_SOZ_LABEL, UNKNOWN_LABEL)
"""What the clinician column can hold (editable in the table)."""
NO_LABELS_TEXT = "no clinician labels for this recording (mark channels SOZ / not SOZ in the 'clinician' column)"

SCORE_HELP = (
    "**score** = mean calibrated window probability over the whole recording (how much of the recording "
    "looks like SOZ); **time ≥ thr** = share of the channel's windows at or above the threshold; rows at or "
    "above the threshold are highlighted."
)
MARKER_SCORE_HELP = (
    "**score** = the channel's **value** divided by the top channel's (1 = the top channel; comparable within this "
    "recording only); **value** = the marker in its own unit, over the channel's clean windows; **time ≥ thr** = "
    "share of the channel's clean windows at or above the threshold; rows at or above the threshold are highlighted."
)
HEADER_TOOLTIPS = {
    "score": "Mean calibrated window probability over the whole recording (a marker: value / top channel's value)",
    "value": "The marker's value in its own unit, over the channel's clean windows",
    "artifact": "Why the artifact detector flagged this channel (empty when it did not)",
    "time_above": "Share of this channel's clean windows whose score is at or above the threshold",
    "interval": "Venn–Abers interval of the score (mean lower and upper window probabilities)",
    "label": "Clinician SOZ label: click to set SOZ / not SOZ (saved with the annotations)",
    "above": "Score at or above the threshold",
}


def round_prob(value):
    """``value`` (a float or an array) rounded by :data:`PROB_DECIMALS`."""
    return np.round(value, PROB_DECIMALS)


def format_prob(value: float) -> str:
    """A probability as text, by the one rounding rule (``0.2764`` → ``"0.28"``)."""
    return f"{float(value):.{PROB_DECIMALS}f}"


def labels_known(channels: pd.DataFrame | None) -> bool:
    """Whether a channel table carries clinician SOZ labels (a ``label`` column with a known value)."""
    return channels is not None and "label" in channels.columns and bool(channels["label"].notna().any())


def has_intervals(channels: pd.DataFrame | None) -> bool:
    """Whether the model gives intervals (Venn–Abers): some channel's ``lower`` differs from its ``upper``.

    A marker's bounds are NaN (no interval): NaN equals NaN here.
    """
    if channels is None or channels.empty or "lower" not in channels.columns:
        return False
    lower = channels["lower"].to_numpy(dtype=np.float64)
    upper = channels["upper"].to_numpy(dtype=np.float64)
    return not np.allclose(lower, upper, equal_nan=True)


def has_values(channels: pd.DataFrame | None) -> bool:
    """Whether a channel table carries a marker's ``value`` (in its own unit) for some channel."""
    if channels is None or channels.empty or "value" not in channels.columns:
        return False
    return bool(np.isfinite(channels["value"].to_numpy(dtype=np.float64)).any())


def round_value(value):
    """A marker's value (a float or an array) rounded to :data:`VALUE_DIGITS` significant digits (NaN stays NaN)."""
    x = np.asarray(value, dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        magnitude = np.where(np.isfinite(x) & (x != 0), np.floor(np.log10(np.abs(np.where(x == 0, 1.0, x)))), 0.0)
    scale = 10.0 ** (VALUE_DIGITS - 1 - magnitude)
    out = np.round(x * scale) / scale
    return float(out) if out.ndim == 0 else out


def format_value(value) -> str:
    """A marker's value as text by :data:`VALUE_DIGITS` (``12345.6`` → ``"1.235e+04"``, ``0.01234`` → ``"0.01234"``); NaN → ``""``."""
    if value is None or pd.isna(value):
        return ""
    return f"{float(value):.{VALUE_DIGITS}g}"


def channel_artifacts(scores: RecordingScores | None) -> dict[str, str]:
    """``{channel: reason}`` of the channels the artifact detector flagged in ``scores``.

    The union of the channel table's ``artifact`` column (markers, and models that report it) and the
    scores' ``artifacts`` table (``channel, reason``), when either is there; empty otherwise.
    """
    out: dict[str, str] = {}
    if scores is None:
        return out
    table = getattr(scores, "artifacts", None)
    if isinstance(table, pd.DataFrame) and {"channel", "reason"} <= set(table.columns):
        for channel, reason in zip(table["channel"].astype(str), table["reason"]):
            if isinstance(reason, str) and reason:
                out.setdefault(channel, reason)
    channels = scores.channels
    if channels is not None and "artifact" in channels.columns:
        for channel, reason in zip(channels["channel"].astype(str), channels["artifact"]):
            if isinstance(reason, str) and reason:
                out[channel] = reason
    return out


def scorer_text(info: dict | None) -> str:
    """One line saying what produced a ranking and how it was validated (the table, the report and the CSV).

    Parameters
    ----------
    info : dict or None
        ``RecordingScores.scorer_info``: ``title``, ``unit``, ``reference``, ``validation``.

    Returns
    -------
    text : str
        ``"Line length (value in µV/s) — Esteller R, et al. … — validation: …"``; ``""`` without ``info``.
    """
    if not info:
        return ""
    title = str(info.get("title") or info.get("name") or "unknown scorer")
    unit = str(info.get("unit") or "")
    head = f"{title} (value in {unit})" if unit else title
    parts = [head]
    if info.get("reference"):
        parts.append(str(info["reference"]))
    if info.get("validation"):
        parts.append(f"validation: {info['validation']}")
    return " — ".join(parts)


def _label_text(value) -> str:
    if value is None or pd.isna(value):
        return UNKNOWN_LABEL
    return SOZ_LABEL if int(value) == 1 else NON_SOZ_LABEL


def _time_above(windows: pd.DataFrame | None, channels: np.ndarray, threshold: float) -> np.ndarray:
    """Share (0–1) of each channel's clean windows with ``p_cal`` at or above ``threshold`` (NaN without any).

    Windows the artifact detector flagged (a non-empty ``artifact``) are left out, as they are of a
    marker's score.
    """
    if windows is None or windows.empty:
        return np.full(len(channels), np.nan)
    if "artifact" in windows.columns:
        flagged = windows["artifact"].fillna("").astype(str).to_numpy() != ""
        if flagged.any():
            windows = windows.loc[~flagged]
    above = round_prob(windows["p_cal"].to_numpy(dtype=np.float64)) >= threshold
    share = pd.Series(above, index=windows["channel"].to_numpy()).groupby(level=0).mean()
    return share.reindex(channels).to_numpy(dtype=np.float64)


def ranking_frame(
    channels: pd.DataFrame | None,
    threshold: float,
    bad_channels: Iterable[str] = (),
    *,
    windows: pd.DataFrame | None = None,
    clinician_labels: dict[str, bool] | None = None,
    display_names: dict[str, str] | None = None,
    artifacts: dict[str, str] | None = None,
) -> pd.DataFrame:
    """The ranking the table shows.

    Parameters
    ----------
    channels : DataFrame or None
        ``RecordingScores.channels``: ``channel, score, lower, upper, n_windows`` (+ ``label`` 0/1/NA).
    threshold : float
        Rounded by :data:`PROB_DECIMALS`; a channel is ``above`` when its rounded score is ``>=`` it,
        so what the table shows and what it flags never disagree.
    bad_channels : iterable of str
        Channels left out of the ranking (names not in ``channels`` are ignored).
    windows : DataFrame, optional
        ``RecordingScores.windows`` (``channel, p_cal``) for the ``time_above`` column.
    clinician_labels : dict, optional
        ``{channel: True/False}`` entered by the clinician; they take precedence over ``label``.
    display_names : dict, optional
        ``{channel: name as shown}`` (vendor prefixes stripped); the shaft is read from it.
    artifacts : dict, optional
        ``{channel: reason}`` of flagged channels (:func:`channel_artifacts`); default the
        ``artifact`` column of ``channels`` when it has one.

    Returns
    -------
    ranking : DataFrame, one row per remaining channel, best first, channels without a score last
        ``rank`` (1..n, recomputed without the bad channels), ``channel``, ``shaft``, ``score``
        (full precision; shown and written rounded; NaN: no clean window), ``value`` (a marker's value in
        its unit; only for a marker), ``time_above`` (0–1), ``interval`` (``"[lower, upper]"``, only when
        the model gives intervals), ``label`` (``"SOZ"``/``"not SOZ"``/``""``), ``artifact`` (the
        detector's reason, ``""`` when the channel is not flagged), ``n_windows``, ``above`` (bool),
        ``lower``, ``upper`` (rounded; NaN without intervals).
    """
    intervals = has_intervals(channels)
    values = has_values(channels)
    columns = [c for c in RANKING_COLUMNS if (c != "interval" or intervals) and (c != "value" or values)]
    if channels is None or channels.empty:
        return pd.DataFrame({c: pd.Series(dtype=object) for c in columns})
    threshold = float(round_prob(threshold))
    bad = set(bad_channels)
    df = channels.loc[~channels["channel"].isin(bad)].copy()
    df = df.sort_values(["score", "channel"], ascending=[False, True], kind="stable", na_position="last")
    df = df.reset_index(drop=True)
    if artifacts is None:
        reasons = df["artifact"] if "artifact" in df.columns else pd.Series([""] * len(df))
        artifacts = {c: r for c, r in zip(df["channel"].astype(str), reasons) if isinstance(r, str) and r}
    names = df["channel"].astype(str).to_numpy()
    score = df["score"].to_numpy(dtype=np.float64)
    lower = round_prob(df["lower"].to_numpy(dtype=np.float64)) if intervals else np.full(len(df), np.nan)
    upper = round_prob(df["upper"].to_numpy(dtype=np.float64)) if intervals else np.full(len(df), np.nan)
    labels = df["label"] if "label" in df.columns else pd.Series([pd.NA] * len(df))
    text = [_label_text(v) for v in labels]
    for i, name in enumerate(names):
        if clinician_labels and name in clinician_labels and clinician_labels[name] is not None:
            text[i] = SOZ_LABEL if clinician_labels[name] else NON_SOZ_LABEL
    out = pd.DataFrame(
        {
            "rank": np.arange(1, len(df) + 1, dtype=np.int64),
            "channel": names,
            "shaft": [shaft_name((display_names or {}).get(c, c)) for c in names],
            "score": score,
            "value": df["value"].to_numpy(dtype=np.float64) if values else np.full(len(df), np.nan),
            "time_above": _time_above(windows, names, threshold),
            "interval": [f"[{format_prob(lo)}, {format_prob(hi)}]" for lo, hi in zip(lower, upper)],
            "label": text,
            "artifact": [artifacts.get(c, "") for c in names],
            "n_windows": df["n_windows"].to_numpy(dtype=np.int64),
            "above": round_prob(score) >= threshold,
            "lower": lower,
            "upper": upper,
        }
    )
    return out[columns]


def ranking_csv_frame(ranking: pd.DataFrame, scorer_info: dict | None = None) -> pd.DataFrame:
    """The ranking as written to CSV: labels as 1/0/empty, interval bounds empty when there are none.

    Parameters
    ----------
    ranking : DataFrame
        :func:`ranking_frame` output.
    scorer_info : dict, optional
        ``RecordingScores.scorer_info`` of the ranked scores (its name and :func:`scorer_text` are
        written on every row).

    Returns
    -------
    table : DataFrame
        :data:`CSV_COLUMNS`: ``rank, channel, shaft, score, time_above, lower, upper, label, n_windows,
        above`` as ever (numbers rounded by :data:`PROB_DECIMALS`, ``lower``/``upper`` empty without
        intervals, ``label`` ``1``/``0``/empty, ``above`` ``1``/``0``), then ``scorer`` (registry name,
        ``sss`` for a trained model), ``value`` (a marker's value to :data:`VALUE_DIGITS` significant
        digits; empty for a model), ``artifact`` (the detector's reason; empty when not flagged) and
        ``scorer_note`` (:func:`scorer_text`: title, reference, validation).
    """
    out = ranking.drop(columns=[c for c in ("interval",) if c in ranking.columns]).copy()
    out["label"] = out["label"].map({SOZ_LABEL: "1", NON_SOZ_LABEL: "0"}).fillna("")
    out["above"] = out["above"].astype(int)
    for column in ("score", "time_above", "lower", "upper"):
        out[column] = round_prob(out[column].astype(np.float64))
    value = out["value"].to_numpy(dtype=np.float64) if "value" in out.columns else np.full(len(out), np.nan)
    out["value"] = round_value(value) if len(out) else value
    out["artifact"] = out["artifact"].fillna("").astype(str) if "artifact" in out.columns else ""
    info = scorer_info or {}
    out["scorer"] = str(info.get("name") or "")
    out["scorer_note"] = scorer_text(info)
    return out[list(CSV_COLUMNS)]


def agreement(
    ranking: pd.DataFrame, threshold: float, *, unlabelled_as_not_soz: bool = False
) -> dict[str, float] | None:
    """Agreement of the ranking with the clinician labels, over channels with a known label and a score.

    Parameters
    ----------
    ranking : DataFrame
        :func:`ranking_frame` output.
    threshold : float
    unlabelled_as_not_soz : bool
        Count the scored channels without a label as not SOZ (marking the SOZ contacts alone then
        gives an AUC); the labels themselves are not changed. Default False: only labelled channels count.

    Returns
    -------
    metrics : dict or None
        ``auc`` (``nan`` with one class), ``f1``, ``precision``, ``recall``, ``threshold``,
        ``n_soz``, ``n_soz_above``, ``n_above``, ``n_channels``, ``n_unlabelled_as_not_soz`` (unlabelled
        channels counted as not SOZ; 0 unless ``unlabelled_as_not_soz``); None when no label is known.
        Threshold figures follow :mod:`sss_viewer.metrics` (``score >= threshold`` is predicted SOZ; a
        ratio with a zero denominator is 0).
    """
    if "label" not in ranking.columns:
        return None
    scored = np.isfinite(ranking["score"].to_numpy(dtype=np.float64))
    labelled = ranking["label"].isin((SOZ_LABEL, NON_SOZ_LABEL)).to_numpy()
    if not (labelled & scored).any():
        return None
    counted = scored if unlabelled_as_not_soz else labelled & scored
    known = ranking.loc[counted]
    scores = known["score"].to_numpy(dtype=np.float64)
    labels = (known["label"] == SOZ_LABEL).to_numpy().astype(np.int8)
    above = known["above"].to_numpy(dtype=bool)
    tp = int(np.sum(above & (labels == 1)))
    fp = int(np.sum(above & (labels == 0)))
    fn = int(np.sum(~above & (labels == 1)))
    return {
        "auc": binary_auc(scores, labels),
        "f1": 2 * tp / (2 * tp + fp + fn) if tp + fp + fn else 0.0,
        "precision": tp / (tp + fp) if tp + fp else 0.0,
        "recall": tp / (tp + fn) if tp + fn else 0.0,
        "threshold": float(round_prob(threshold)),
        "n_soz": int(labels.sum()),
        "n_soz_above": tp,
        "n_above": int(above.sum()),
        "n_channels": len(known),
        "n_unlabelled_as_not_soz": int(np.sum(counted & ~labelled)),
    }


def agreement_text(metrics: dict[str, float] | None) -> str:
    """One line for the clinician, e.g. ``AUC 0.91 · F1 0.67 · precision 0.50 · recall 1.00 at 0.42 (…)``."""
    if metrics is None:
        return NO_LABELS_TEXT
    auc = "AUC n/a (one class)" if math.isnan(metrics["auc"]) else f"AUC {metrics['auc']:.2f}"
    text = (
        f"{auc} · F1 {metrics['f1']:.2f} · precision {metrics['precision']:.2f} · recall {metrics['recall']:.2f} "
        f"at {format_prob(metrics['threshold'])} ({metrics['n_soz_above']} of {metrics['n_soz']} SOZ channels above; "
        f"{metrics['n_above']} of {metrics['n_channels']} channels above)"
    )
    n_assumed = int(metrics.get("n_unlabelled_as_not_soz", 0))
    if n_assumed:
        text += f"; {n_assumed} unlabelled channel{'s' * (n_assumed != 1)} counted as not SOZ"
    return text


def blank_missing(frame: pd.DataFrame, columns) -> pd.DataFrame:
    """``frame`` with NaN in ``columns`` as None, so the browser's table shows an empty cell, not ``NaN``."""
    out = frame.copy()
    for column in columns:
        if column in out.columns and out[column].isna().any():
            out[column] = out[column].astype(object).where(out[column].notna(), None)
    return out


def _highlight_above(row: pd.Series) -> list[str]:
    style = "background-color: #fde2c8; font-weight: bold" if row.get("above", False) else ""
    if row.get("artifact_reason", ""):
        style = (style + "; " if style else "") + "color: #6d4c41; font-style: italic"
    return [style] * len(row)


ARTIFACT_BADGE_STYLE = (
    "display:inline-block;background:#b71c1c;color:#fff;border-radius:3px;padding:0 5px;margin-right:4px;"
    "font-size:0.85em;font-weight:bold;font-style:normal"
)


def artifact_cell_html(reason: str) -> str:
    """The table cell of a flagged channel: an ``artifact`` badge (the reason on hover) and the reason; ``""`` when clean."""
    if not reason:
        return ""
    text = html.escape(str(reason), quote=True)
    return f'<span class="sss-artifact" title="{text}" style="{ARTIFACT_BADGE_STYLE}">{ARTIFACT_BADGE}</span>{text}'


class RankingTable(pn.viewable.Viewer):
    """Channel ranking with a threshold slider and the agreement with clinician labels.

    Rows at or above ``threshold`` are highlighted and ticked; channels in ``bad_channels`` leave
    the table, the ranks and the agreement figures. Clicking (selecting) a row sets
    ``selected_channel``; setting ``selected_channel`` from outside selects its row. The
    ``clinician`` column is editable (SOZ / not SOZ / empty): an edit updates ``clinician_labels``,
    which the app saves with the annotations.
    """

    scores = param.ClassSelector(class_=RecordingScores, default=None, allow_None=True, doc="Scores of the recording.")
    threshold = param.Number(default=0.5, bounds=(0.0, 1.0), doc="Channels with score >= threshold are flagged.")
    bad_channels = param.List(default=[], item_type=str, doc="Channels left out of the ranking and the agreement.")
    clinician_labels = param.Dict(default={}, doc="{channel: True/False} SOZ labels entered by the clinician.")
    display_names = param.Dict(default={}, doc="{channel: name shown} (vendor prefixes stripped).")
    selected_channel = param.String(default=None, allow_None=True, doc="The channel of the row last clicked.")
    labels_known = param.Boolean(default=False, readonly=True, doc="Whether clinician SOZ labels are known.")
    page_size = param.Integer(default=20, bounds=(5, None), doc="Rows per page of the table.")
    unlabelled_as_not_soz = param.Boolean(
        default=False, doc="Count scored channels without a label as not SOZ in the agreement (stated in its text)."
    )

    def __init__(self, **params):
        if "threshold" in params:
            params["threshold"] = float(round_prob(params["threshold"]))
        super().__init__(**params)
        self._syncing = False
        self._tabulator = pn.widgets.Tabulator(
            value=ranking_frame(None, self.threshold),
            pagination="local",
            page_size=self.page_size,
            sortable=True,
            selectable=1,
            show_index=False,
            hidden_columns=["lower", "upper", "artifact_reason"],
            editors={
                **{c: None for c in (*RANKING_COLUMNS, "artifact_reason") if c != "label"},
                "label": {"type": "list", "values": list(LABEL_CHOICES)},
            },
            formatters=self._formatters(),
            titles=self._titles(),
            header_tooltips=dict(HEADER_TOOLTIPS),
            sizing_mode="stretch_width",
        )
        self._tabulator.style.apply(_highlight_above, axis=1)
        self._tabulator.param.watch(self._on_selection, "selection")
        self._tabulator.on_click(self._on_click)
        self._tabulator.on_edit(self._on_edit)
        self._slider = pn.widgets.FloatSlider.from_param(
            self.param.threshold, name="Threshold", step=0.01, format="0.00", sizing_mode="stretch_width"
        )
        self._agreement = pn.pane.Markdown("", sizing_mode="stretch_width")
        self._unlabelled = pn.widgets.Checkbox.from_param(
            self.param.unlabelled_as_not_soz, name="count unlabelled as not SOZ (agreement only; labels unchanged)"
        )
        self._provenance = pn.pane.Markdown("", sizing_mode="stretch_width", css_classes=["sss-ranking-scorer"])
        self._help = pn.pane.Markdown(
            SCORE_HELP, sizing_mode="stretch_width", styles={"color": "#444", "font-size": "0.9em"}
        )
        self._excluded = pn.pane.Markdown("", sizing_mode="stretch_width", styles={"color": "#666"})
        self._layout = pn.Column(
            self._provenance,
            self._slider,
            self._agreement,
            self._unlabelled,
            self._help,
            self._tabulator,
            self._excluded,
            sizing_mode="stretch_width",
        )
        self._refresh()

    def __panel__(self):
        return self._layout

    def _formatters(self) -> dict:
        number = {"type": "money", "decimal": ".", "thousand": "", "precision": PROB_DECIMALS}
        formatters = {
            "above": {"type": "tickCross", "crossElement": False},
            "artifact": {"type": "html"},
            "value": NumberFormatter(format="0,0.[0000]"),
            "score": number,
            "time_above": {
                "type": "money",
                "decimal": ".",
                "thousand": "",
                "precision": 0,
                "symbol": " %",
                "symbolAfter": True,
            },
        }
        if self.display_names:
            formatters["channel"] = {"type": "lookup", **{k: v for k, v in self.display_names.items() if k != "type"}}
        return formatters

    def _titles(self) -> dict:
        unit = str(self.scorer_info().get("unit") or "")
        return {
            "n_windows": "windows",
            "above": "≥ thr",
            "label": "clinician",
            "time_above": "time ≥ thr",
            "value": f"value ({unit})" if unit else "value",
        }

    # ------------------------------------------------------------------ state

    def scorer_info(self) -> dict:
        """What produced the ranking (``RecordingScores.scorer_info``; empty before scores)."""
        return dict(self.scores.scorer_info or {}) if self.scores is not None else {}

    def scorer_text(self) -> str:
        """:func:`scorer_text` of the ranked scores: title, reference and validation (the report and the CSV say the same)."""
        return scorer_text(self.scorer_info())

    def table(self) -> pd.DataFrame:
        """The current ranking (a copy of what the table shows, hidden ``lower``/``upper`` included)."""
        scores = self.scores
        return ranking_frame(
            self._channels(),
            self.threshold,
            self.bad_channels,
            windows=None if scores is None else scores.windows,
            clinician_labels=self.clinician_labels,
            display_names=self.display_names,
            artifacts=channel_artifacts(scores),
        )

    def csv_table(self) -> pd.DataFrame:
        """:func:`ranking_csv_frame` of the current ranking (what the CSV export writes)."""
        return ranking_csv_frame(self.table(), self.scorer_info())

    def agreement(self) -> dict[str, float] | None:
        """:func:`agreement` of the current table; None when labels are unknown.

        With ``unlabelled_as_not_soz``, scored channels without a label count as not SOZ (the text says how many).
        """
        return agreement(self.table(), self.threshold, unlabelled_as_not_soz=self.unlabelled_as_not_soz)

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

    @param.depends("threshold", watch=True)
    def _snap_threshold(self) -> None:
        """Keep the threshold on the rounding grid, so the slider, table and report say the same number."""
        snapped = float(round_prob(self.threshold))
        if snapped != self.threshold:
            self.threshold = snapped

    @param.depends("display_names", watch=True)
    def _on_display_names(self) -> None:
        self._tabulator.formatters = self._formatters()
        self._refresh()

    @param.depends("scores", "threshold", "bad_channels", "clinician_labels", "unlabelled_as_not_soz", watch=True)
    def _refresh(self) -> None:
        ranking = self.table()
        self._set_labels_known(bool(ranking["label"].isin((SOZ_LABEL, NON_SOZ_LABEL)).any()) if len(ranking) else False)
        self._syncing = True
        try:
            self._tabulator.titles = self._titles()
            flagged = bool((ranking["artifact"] != "").any()) if len(ranking) else False
            self._tabulator.hidden_columns = ["lower", "upper", "artifact_reason"] + ([] if flagged else ["artifact"])
            shown = ranking.assign(
                time_above=100 * ranking["time_above"].astype(float),  # shown in %
                **({"value": round_value(ranking["value"].to_numpy(dtype=np.float64))} if "value" in ranking else {}),
                artifact=[artifact_cell_html(r) for r in ranking["artifact"]],
                artifact_reason=ranking["artifact"],
            )
            self._tabulator.value = blank_missing(shown, ("score", "value", "time_above"))
            self._tabulator.selection = self._rows_of(self.selected_channel, ranking)
        finally:
            self._syncing = False
        self._provenance.object = self._provenance_text()
        self._help.object = MARKER_SCORE_HELP if has_values(self._channels()) else SCORE_HELP
        metrics = agreement(ranking, self.threshold, unlabelled_as_not_soz=self.unlabelled_as_not_soz)
        self._agreement.object = f"**Agreement:** {agreement_text(metrics)}"
        self._excluded.object = self._excluded_text()

    def _provenance_text(self) -> str:
        """Markdown line above the table: what produced the ranking and how it was validated."""
        info = self.scorer_info()
        if not info:
            return ""
        title = str(info.get("title") or info.get("name") or "unknown scorer")
        unit = f" (value in {info['unit']})" if info.get("unit") else ""
        parts = [f"**Ranking by {title}**{unit}"]
        if info.get("reference"):
            parts.append(str(info["reference"]))
        if info.get("validation"):
            parts.append(f"**Validation:** {info['validation']}")
        return " — ".join(parts)

    def set_label(self, channel: str, label: str) -> None:
        """Set ``channel``'s clinician label to ``"SOZ"``, ``"not SOZ"`` or ``""`` (unknown).

        Raises
        ------
        ValueError
            When ``label`` is not one of :data:`LABEL_CHOICES`.
        """
        if label not in LABEL_CHOICES:
            raise ValueError(f"Invalid label {label!r} for channel {channel}: expected one of {list(LABEL_CHOICES)}.")
        labels = dict(self.clinician_labels)
        if label == UNKNOWN_LABEL:
            labels.pop(channel, None)
        else:
            labels[channel] = label == SOZ_LABEL
        self.clinician_labels = labels

    def _on_edit(self, event) -> None:
        if event.column != "label":
            return
        value = self._tabulator.value
        channel = str(value["channel"].iloc[int(event.row)])
        label = event.value if event.value in LABEL_CHOICES else UNKNOWN_LABEL
        self.set_label(channel, label)

    def _excluded_text(self) -> str:
        parts = []
        if self.scores is not None and len(self.scores.excluded):
            ex = self.scores.excluded
            parts.append("Not scored: " + "; ".join(f"{c} ({r})" for c, r in zip(ex["channel"], ex["reason"])))
        scored = set() if self.scores is None else set(self.scores.channels["channel"])
        bad = [c for c in self.bad_channels if c in scored]
        if bad:
            parts.append("Marked bad (left out of the ranking): " + ", ".join(bad))
        if self.scores is not None:
            ranking = self.table()
            unscored = ranking.loc[~np.isfinite(ranking["score"].to_numpy(dtype=np.float64))]
            if len(unscored):
                parts.append(
                    "No score (listed last): "
                    + "; ".join(
                        f"{c} ({r or 'no window scored'})" for c, r in zip(unscored["channel"], unscored["artifact"])
                    )
                )
        return "  \n".join(parts)

    # ------------------------------------------------------------------ selection

    @staticmethod
    def _rows_of(channel: str | None, ranking: pd.DataFrame) -> list[int]:
        if channel is None or ranking.empty:
            return []
        return [int(i) for i in np.flatnonzero(ranking["channel"].to_numpy() == channel)]

    def _select_row(self, row: int | None, *, again: bool = False) -> None:
        """Select the channel of table row ``row``; with ``again``, tell the watchers even when it is already selected.

        A click on the row already selected (after paging the traces away from it) must bring its
        channel into view again, so a click re-announces ``selected_channel``.
        """
        value = self._tabulator.value
        if row is None or value is None or not 0 <= row < len(value):
            return
        channel = str(value["channel"].iloc[row])
        if again and channel == self.selected_channel:
            self.param.trigger("selected_channel")
        else:
            self.selected_channel = channel

    def _on_selection(self, event) -> None:
        if self._syncing or not event.new:
            return
        self._select_row(int(event.new[0]))

    def _on_click(self, event) -> None:
        self._select_row(None if event.row is None else int(event.row), again=True)

    @param.depends("selected_channel", watch=True)
    def _sync_selection(self) -> None:
        rows = self._rows_of(self.selected_channel, self._tabulator.value)
        if rows != list(self._tabulator.selection):
            self._syncing = True
            try:
                self._tabulator.selection = rows
            finally:
                self._syncing = False

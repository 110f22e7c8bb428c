"""Choosing what ranks a recording, saying what it is, and comparing two rankings.

A recording can be ranked by the chosen SSS model or by any training-free marker of
:mod:`sss_viewer.biomarkers` (line length, variance, ripple rate, the consensus …). What ranks it
when nobody chooses is :data:`sss_viewer.biomarkers.DEFAULT_SCORER`, read here at run time, never
fixed in the viewer.

Components (``pn.viewable.Viewer`` subclasses):

``ScorerPicker``
    "Ranking by" (the SSS model or a marker, by title) and "Compare with" (none, or a second scorer).
``ScorerComparison``
    The two rankings side by side (rank, channel, score per scorer) with their agreement above:
    Spearman rank correlation over the channels both ranked, the overlap of their top-k, and each
    scorer's channel AUC when the recording has clinician labels (:func:`compare_rankings`).

Pure functions: :func:`scorer_choices`, :func:`make_scorer`, :func:`model_scorer_info` (what a trained
model is and how it was validated, for the ranking's line; a model trained on synthetic data only
says so), :func:`compare_rankings`, :func:`comparison_frame`, :func:`comparison_text`.
"""

from __future__ import annotations

import logging
import math
import os

import numpy as np
import pandas as pd
import panel as pn
import param
from scipy.stats import spearmanr

import sss_viewer.biomarkers as biomarkers
from sss_viewer.biomarkers import FITTED, MODEL_SCORER, SCORERS, get_scorer, scorer_class
from sss_viewer.engine.inference import RecordingScores
from sss_viewer.metrics import binary_auc
from sss_viewer.viewer.ranking import (
    NON_SOZ_LABEL,
    SOZ_LABEL,
    blank_missing,
    channel_artifacts,
    ranking_frame,
)

logger = logging.getLogger(__name__)

MODEL_TITLE = "SSS model"
"""How the trained model appears among the scorers (the model directory is chosen below it)."""
NO_COMPARISON = ""
"""The "Compare with" value that compares with nothing."""
DEFAULT_TOP_K = 10
"""Top-k of the comparison when the first scorer has no channel above its threshold."""
SYNTHETIC_VALIDATION = "synthetic-data model: not validated on real recordings"
"""What the ranking says of a model trained on synthetic data only (the bundled demo model)."""


# --------------------------------------------------------------------------------------------
# The scorers on offer
# --------------------------------------------------------------------------------------------


def scorer_choices() -> dict[str, str]:
    """``{title: registry name}`` of every scorer the viewer can use now: the SSS model first, then the markers.

    A marker whose module cannot be imported (not installed or being written) is left out and logged;
    scorers that need fitted weights (:data:`sss_viewer.biomarkers.FITTED`) are not offered here.
    """
    choices = {MODEL_TITLE: MODEL_SCORER}
    for name in (n for n in SCORERS if n not in FITTED):
        try:
            title = str(scorer_class(name).info.title)
        except (ImportError, AttributeError) as exc:
            logger.info("scorer %s is not available: %s", name, exc)
            continue
        choices[title if title not in choices else f"{title} ({name})"] = name
    return choices


def scorer_title(name: str) -> str:
    """The title of scorer ``name`` as the pickers show it (the name itself when unknown)."""
    if name == MODEL_SCORER:
        return MODEL_TITLE
    try:
        return str(scorer_class(name).info.title)
    except (ImportError, AttributeError, ValueError):
        return name


SCORER_ENV = "SSS_VIEWER_SCORER"
"""Environment variable naming the scorer a site's viewer ranks with by default (e.g. ``sss`` for its own model)."""


def default_scorer(choices: dict[str, str] | None = None) -> str:
    """The scorer a new session ranks with: ``$SSS_VIEWER_SCORER`` when set and available, else
    :data:`~sss_viewer.biomarkers.DEFAULT_SCORER` (read when called), else the SSS model."""
    names = set((choices or scorer_choices()).values())
    wanted = os.environ.get(SCORER_ENV, "").strip()
    if wanted:
        if wanted in names:
            return wanted
        logger.warning(
            "%s=%r is not a scorer of this viewer (%s); using the default", SCORER_ENV, wanted, ", ".join(sorted(names))
        )
    default = biomarkers.DEFAULT_SCORER
    if default in names:
        return default
    logger.warning("the default scorer %r is not available; ranking with the SSS model", default)
    return MODEL_SCORER


def make_scorer(name: str):
    """A new training-free marker ``name`` (:func:`sss_viewer.biomarkers.get_scorer`); ValueError for the SSS model."""
    if name == MODEL_SCORER:
        raise ValueError(f"{name!r} is the trained model: use the chosen model bundle, not a marker.")
    return get_scorer(name)


def is_synthetic_model(bundle) -> bool:
    """Whether a model bundle says it was trained on synthetic data only (its description or its training data)."""
    info = getattr(bundle, "info", None) or {}
    description = str(info.get("description") or "").lower()
    generator = str((info.get("training_data") or {}).get("generator") or "").lower()
    return "synthetic" in description or "synth" in generator


def model_scorer_info(bundle, model_dir=None) -> dict:
    """What a trained SSS model is and how it was validated, as a ``ScorerInfo``-like dict.

    Parameters
    ----------
    bundle : ModelBundle
    model_dir : path, optional
        Its directory (named when the bundle has no description).

    Returns
    -------
    info : dict
        ``name`` (``"sss"``), ``title``, ``unit`` (``""``: the score is a probability), ``reference``
        (the method and the model's own description), ``kind`` (``"model"``) and ``validation``: for a
        model trained on synthetic data only, :data:`SYNTHETIC_VALIDATION` first; otherwise its
        validation channel AUC on held-out patients of its training cohort, when recorded.
    """
    info = getattr(bundle, "info", None) or {}
    backbone = str((info.get("train_config") or {}).get("backbone") or "")
    method = "Stochastic Sparse Sampling: calibrated window probabilities averaged per channel"
    if backbone:
        method += f" ({backbone} local model)"
    description = str(info.get("description") or (f"model in {model_dir}" if model_dir else "a trained model"))
    auc = (info.get("val_metrics") or {}).get("auc")
    auc_text = (
        f"channel AUC {float(auc):.2f} on its validation patients"
        if isinstance(auc, (int, float)) and math.isfinite(float(auc))
        else "no validation metrics recorded"
    )
    if is_synthetic_model(bundle):
        validation = f"{SYNTHETIC_VALIDATION} ({auc_text}, all synthetic)"
    else:
        validation = f"{auc_text} (held out from its training cohort); see its training record"
    return {
        "name": MODEL_SCORER,
        "title": MODEL_TITLE,
        "unit": "",
        "reference": f"{method}; {description}",
        "kind": "model",
        "validation": validation,
    }


# --------------------------------------------------------------------------------------------
# Comparing two rankings
# --------------------------------------------------------------------------------------------


def _scored(ranking: pd.DataFrame) -> pd.DataFrame:
    """The rows of a ranking that have a score (in rank order)."""
    return ranking.loc[np.isfinite(ranking["score"].to_numpy(dtype=np.float64))]


def _channel_auc(ranking: pd.DataFrame) -> float | None:
    """Channel AUC of a ranking against its labels (``label`` SOZ / not SOZ); None without both classes' labels."""
    known = _scored(ranking)
    known = known.loc[known["label"].isin((SOZ_LABEL, NON_SOZ_LABEL))]
    labels = (known["label"] == SOZ_LABEL).to_numpy().astype(np.int8)
    if len(known) == 0 or labels.min() == labels.max():
        return None
    return float(binary_auc(known["score"].to_numpy(dtype=np.float64), labels))


def compare_rankings(first: pd.DataFrame, second: pd.DataFrame, k: int | None = None) -> dict:
    """How far two rankings of one recording agree.

    Parameters
    ----------
    first, second : DataFrame
        :func:`~sss_viewer.viewer.ranking.ranking_frame` outputs (``channel``, ``score``, ``above``,
        ``label``), the first being the ranking the table shows.
    k : int, optional
        Top-k of the overlap; default the number of channels at or above the first ranking's
        threshold, or :data:`DEFAULT_TOP_K` when there is none.

    Returns
    -------
    metrics : dict
        ``spearman`` (Spearman rank correlation of the two scores over the channels both scored;
        NaN with fewer than 3 such channels or a constant score), ``n_common``, ``k``, ``overlap``
        (channels in both top-k), ``top_first``/``top_second`` (the two top-k lists), ``auc_first``,
        ``auc_second`` (channel AUC against the labels, None without SOZ and non-SOZ labels).
    """
    a, b = _scored(first), _scored(second)
    if k is None:
        above = int(first["above"].sum()) if "above" in first.columns and len(first) else 0
        k = above or DEFAULT_TOP_K
    k = max(1, min(int(k), len(a), len(b))) if len(a) and len(b) else 0
    top_a, top_b = list(a["channel"].iloc[:k]), list(b["channel"].iloc[:k])
    both = a[["channel", "score"]].merge(b[["channel", "score"]], on="channel", suffixes=("_first", "_second"))
    x = both["score_first"].to_numpy(dtype=np.float64)
    y = both["score_second"].to_numpy(dtype=np.float64)
    rho = float("nan")
    if len(both) >= 3 and np.ptp(x) > 0 and np.ptp(y) > 0:
        rho = float(spearmanr(x, y).statistic)
    return {
        "spearman": rho,
        "n_common": len(both),
        "k": k,
        "overlap": len(set(top_a) & set(top_b)),
        "top_first": top_a,
        "top_second": top_b,
        "auc_first": _channel_auc(first),
        "auc_second": _channel_auc(second),
    }


def comparison_text(metrics: dict, first_title: str, second_title: str) -> str:
    """One line: ``Spearman ρ 0.83 over 36 channels · top-10 overlap 7 of 10 · channel AUC: A 0.91, B 0.85``."""
    rho = metrics["spearman"]
    rho_text = "Spearman ρ n/a" if math.isnan(rho) else f"Spearman ρ {rho:.2f}"
    parts = [
        f"{rho_text} over the {metrics['n_common']} channels both scored",
        f"top-{metrics['k']} overlap {metrics['overlap']} of {metrics['k']}",
    ]
    aucs = [(t, metrics[key]) for t, key in ((first_title, "auc_first"), (second_title, "auc_second"))]
    if any(v is not None for _, v in aucs):
        parts.append("channel AUC: " + ", ".join(f"{t} {'n/a' if v is None else f'{v:.2f}'}" for t, v in aucs))
    else:
        parts.append("no clinician labels (channel AUC needs SOZ and non-SOZ labels)")
    return " · ".join(parts)


def comparison_frame(first: pd.DataFrame, second: pd.DataFrame) -> pd.DataFrame:
    """The two rankings side by side, row *i* holding each one's *i*-th channel.

    Parameters
    ----------
    first, second : DataFrame
        :func:`~sss_viewer.viewer.ranking.ranking_frame` outputs.

    Returns
    -------
    table : DataFrame
        ``rank``, ``channel_1``, ``score_1``, ``artifact_1``, ``channel_2``, ``score_2``,
        ``artifact_2`` (a shorter ranking is padded with ``""`` and NaN).
    """
    n = max(len(first), len(second))

    def column(frame: pd.DataFrame, name: str, fill):
        values = list(frame[name]) if name in frame.columns else [fill] * len(frame)
        return values + [fill] * (n - len(frame))

    return pd.DataFrame(
        {
            "rank": np.arange(1, n + 1, dtype=np.int64),
            "channel_1": column(first, "channel", ""),
            "score_1": np.asarray(column(first, "score", np.nan), dtype=np.float64),
            "artifact_1": column(first, "artifact", ""),
            "channel_2": column(second, "channel", ""),
            "score_2": np.asarray(column(second, "score", np.nan), dtype=np.float64),
            "artifact_2": column(second, "artifact", ""),
        }
    )


# --------------------------------------------------------------------------------------------
# Components
# --------------------------------------------------------------------------------------------


class ScorerPicker(pn.viewable.Viewer):
    """Choose what ranks the recording ("Ranking by") and a second scorer to compare with ("Compare with").

    ``scorer`` is a registry name: ``"sss"`` (the model chosen below it) or a marker of
    :data:`sss_viewer.biomarkers.SCORERS`; its default is
    :data:`~sss_viewer.biomarkers.DEFAULT_SCORER`. ``compare`` is ``""`` (none) or another name.
    """

    scorer = param.Selector(default=None, objects=[], doc="Registry name of the scorer that ranks the recording.")
    compare = param.Selector(
        default=NO_COMPARISON, objects=[NO_COMPARISON], doc="A second scorer to compare with ('' = none)."
    )

    def __init__(self, **params):
        choices = scorer_choices()
        self.choices = choices
        self.param.scorer.objects = list(choices.values())
        self.param.compare.objects = [NO_COMPARISON, *choices.values()]
        params.setdefault("scorer", default_scorer(choices))
        super().__init__(**params)

    def title(self, name: str | None = None) -> str:
        """The title of ``name`` (default the chosen scorer)."""
        name = self.scorer if name is None else name
        return next((t for t, n in self.choices.items() if n == name), scorer_title(name))

    def __panel__(self):
        pick = pn.widgets.Select.from_param(
            self.param.scorer, name="Ranking by", options=dict(self.choices), sizing_mode="stretch_width"
        )
        other = pn.widgets.Select.from_param(
            self.param.compare,
            name="Compare with",
            options={"none": NO_COMPARISON, **self.choices},
            sizing_mode="stretch_width",
        )
        return pn.Column(pick, other, sizing_mode="stretch_width")


class ScorerComparison(pn.viewable.Viewer):
    """Two rankings of the recording side by side, with their agreement stated above them.

    ``first`` is the ranking the table shows; ``second`` the "Compare with" scorer's. Both are
    ranked by the same rules as the table (bad channels out, clinician labels on top), so the
    agreement is over what the clinician sees.
    """

    first = param.ClassSelector(class_=RecordingScores, default=None, allow_None=True, doc="The ranking's scores.")
    second = param.ClassSelector(
        class_=RecordingScores, default=None, allow_None=True, doc="The compared scorer's scores."
    )
    second_title = param.String(default="", doc="Title of the compared scorer (shown while it scores).")
    status = param.String(default="", doc="Why there is no comparison yet (scoring, or the reason it cannot score).")
    threshold = param.Number(default=0.5, bounds=(0.0, 1.0), doc="The first ranking's threshold (its top-k).")
    bad_channels = param.List(default=[], item_type=str, doc="Channels left out of both rankings.")
    clinician_labels = param.Dict(default={}, doc="{channel: True/False} SOZ labels entered by the clinician.")
    display_names = param.Dict(default={}, doc="{channel: name shown}.")

    def __init__(self, **params):
        super().__init__(**params)
        self._title = pn.pane.Markdown("", sizing_mode="stretch_width")
        self._agreement = pn.pane.Markdown("", sizing_mode="stretch_width", css_classes=["sss-comparison-agreement"])
        number = {"type": "money", "decimal": ".", "thousand": "", "precision": 2}
        self._tabulator = pn.widgets.Tabulator(
            value=comparison_frame(ranking_frame(None, 0.5), ranking_frame(None, 0.5)),
            pagination="local",
            page_size=20,
            show_index=False,
            sortable=False,
            disabled=True,
            hidden_columns=["artifact_1", "artifact_2"],
            formatters={"score_1": number, "score_2": number},
            sizing_mode="stretch_width",
        )
        self._tabulator.style.apply(_mark_artifacts, axis=1)
        self._layout = pn.Column(
            self._title, self._agreement, self._tabulator, sizing_mode="stretch_width", visible=False
        )
        self._refresh()

    def __panel__(self):
        return self._layout

    def rankings(self) -> tuple[pd.DataFrame, pd.DataFrame] | None:
        """The two rankings (:func:`ranking_frame`), or None until both are scored."""
        if self.first is None or self.second is None:
            return None
        options = {"clinician_labels": self.clinician_labels, "display_names": self.display_names}
        a = ranking_frame(
            self.first.channels, self.threshold, self.bad_channels, artifacts=channel_artifacts(self.first), **options
        )
        b = ranking_frame(
            self.second.channels, self.threshold, self.bad_channels, artifacts=channel_artifacts(self.second), **options
        )
        return a, b

    def metrics(self) -> dict | None:
        """:func:`compare_rankings` of the two rankings; None until both are scored."""
        pair = self.rankings()
        return None if pair is None else compare_rankings(*pair)

    def titles(self) -> tuple[str, str]:
        """The two scorers' titles (from their scores; the compared one's before it has scored)."""
        first = str((self.first.scorer_info or {}).get("title") or self.first.scorer) if self.first is not None else ""
        second = self.second_title
        if self.second is not None:
            second = str((self.second.scorer_info or {}).get("title") or self.second.scorer)
        return first, second

    def text(self) -> str | None:
        """The agreement line (:func:`comparison_text`) for the report; None without a comparison."""
        metrics = self.metrics()
        return None if metrics is None else comparison_text(metrics, *self.titles())

    def table(self) -> pd.DataFrame:
        """:func:`comparison_frame` of the two rankings (empty until both are scored)."""
        pair = self.rankings()
        empty = ranking_frame(None, self.threshold)
        return comparison_frame(*(pair or (empty, empty)))

    @param.depends(
        "first",
        "second",
        "second_title",
        "status",
        "threshold",
        "bad_channels",
        "clinician_labels",
        "display_names",
        watch=True,
    )
    def _refresh(self) -> None:
        first, second = self.titles()
        self._layout.visible = bool(self.second is not None or self.status)
        self._title.object = f"#### {first or 'This ranking'} compared with {second}" if second else ""
        metrics = self.metrics()
        if metrics is None:
            self._agreement.object = self.status
        else:
            self._agreement.object = f"**Agreement:** {comparison_text(metrics, first, second)}"
        names = self.display_names
        self._tabulator.titles = {
            "channel_1": f"{first} channel",
            "score_1": f"{first} score",
            "channel_2": f"{second} channel",
            "score_2": f"{second} score",
        }
        if names:
            lookup = {"type": "lookup", **{k: v for k, v in names.items() if k != "type"}}
            self._tabulator.formatters = {**self._tabulator.formatters, "channel_1": lookup, "channel_2": lookup}
        self._tabulator.value = blank_missing(self.table(), ("score_1", "score_2"))


def _mark_artifacts(row: pd.Series) -> list[str]:
    """Italic brown cells for a channel the artifact detector flagged (in either ranking)."""
    styles = []
    for column in row.index:
        side = column.rsplit("_", 1)[-1]
        flagged = column.startswith(("channel_", "score_")) and bool(row.get(f"artifact_{side}", ""))
        styles.append("color: #6d4c41; font-style: italic" if flagged else "")
    return styles


__all__ = [
    "DEFAULT_TOP_K",
    "MODEL_TITLE",
    "NO_COMPARISON",
    "SYNTHETIC_VALIDATION",
    "ScorerComparison",
    "ScorerPicker",
    "compare_rankings",
    "comparison_frame",
    "comparison_text",
    "default_scorer",
    "is_synthetic_model",
    "make_scorer",
    "model_scorer_info",
    "scorer_choices",
    "scorer_title",
]

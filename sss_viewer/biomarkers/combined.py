"""A fitted combination of markers (and optionally a trained SSS model): one logistic regression per channel.

Every feature is a *within-recording* percentile rank (:func:`~sss_viewer.biomarkers._consensus.percentile_ranks`,
1/n … 1, ties averaged), so that no marker's unit, amplifier gain or recording length enters the
weights, and a recording is ranked with the same scale whatever its channel count:

- ``<marker>_rank`` for each chosen marker (default :data:`COMBINED_MARKERS`): the rank of the
  marker's channel value. A marker the recording cannot support (its sampling rate is too low, a
  needed seizure-onset marker is missing) gives **0.5 for every channel** — the middle of the scale,
  so its weight moves no channel relative to another and the ranking is the one of the remaining
  features. No "missing" indicator is added: the indicator is the same for every channel of a
  recording and could only shift the intercept, which leaves the within-recording ranking unchanged.
- ``sss_rank`` (with a model): the rank of the SSS channel score of a trained
  :class:`~sss_viewer.engine.bundle.ModelBundle`; 0.5 for every channel when the model cannot
  score the recording (too short for one window, sampling rate too low).

A channel's ``value`` is the fitted probability ``1 / (1 + exp(−(w·x + b)))``; its ``score`` is the
value divided by the recording's top value (the marker contract of :mod:`~sss_viewer.biomarkers.base`).
A channel with no clean window in a computed feature has a NaN value and ranks last, as in the
consensus. The heat map shows the mean of the markers' normalised window values, as the consensus.

The weights are fitted by :func:`fit_combined` (``class_weight="balanced"``, the inverse of the
penalty ``C`` chosen by leave-one-patient-out channel AUC) and kept as JSON
(:func:`save_weights` / :func:`load_weights`; never a pickle).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import logging
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd
from scipy.special import expit
from sklearn.linear_model import LogisticRegression
from tqdm.auto import tqdm

from sss_viewer._version import __version__
from sss_viewer.biomarkers._consensus import percentile_ranks
from sss_viewer.biomarkers.base import (
    BiomarkerScorer,
    ScorerInfo,
    WindowGrid,
    artifact_flags,
    progress_reporter,
    read_scored_channels,
    scores_from_values,
)
from sss_viewer.engine.inference import RecordingScores
from sss_viewer.fileio import atomic_write
from sss_viewer.io.recording import Recording
from sss_viewer.metrics import binary_auc

logger = logging.getLogger(__name__)

COMBINED_MARKERS = ("amplitude", "line_length", "spike_rate", "ripple_rate", "hfa")
"""The markers whose ranks the combined scorer weighs by default (registry names)."""
COMPOSITE_SCORERS = ("consensus", "combined")
"""Registry names that combine other scorers and cannot be a feature."""
MODEL_FEATURE = "sss_rank"
"""Feature name of the SSS model's channel-score rank."""
UNSUPPORTED_RANK = 0.5
"""The rank of every channel in a feature the recording cannot support (the middle of the scale)."""
DEFAULT_CS = (0.01, 0.1, 1.0, 10.0)
"""Inverse penalties tried by :func:`fit_combined`."""
WEIGHTS_FORMAT = "sss-viewer-combined-weights"
"""The ``format`` field of a weights file."""
WEIGHTS_VERSION = 1
"""The ``format_version`` field of a weights file."""
MAX_ITER = 1000
"""Iterations of the logistic regression's solver (the features are ranks in (0, 1]: it converges fast)."""


def feature_name(marker: str) -> str:
    """The feature name of a marker's rank, e.g. ``"spike_rate_rank"``."""
    return f"{marker}_rank"


def feature_names(markers: Sequence[str], with_model: bool) -> list[str]:
    """Feature names in the order of the weights: the markers', then :data:`MODEL_FEATURE` with a model."""
    return [feature_name(m) for m in markers] + ([MODEL_FEATURE] if with_model else [])


def check_markers(markers: Sequence[str]) -> tuple[str, ...]:
    """``markers`` as a tuple if each is a registry name of a single marker, else a ValueError listing them."""
    from sss_viewer.biomarkers.registry import SCORERS

    allowed = [n for n in SCORERS if n not in COMPOSITE_SCORERS]
    markers = tuple(markers) if not isinstance(markers, str) else (markers,)
    unknown = [m for m in markers if m not in allowed]
    if unknown or not markers or len(set(markers)) != len(markers):
        raise ValueError(
            f"Invalid markers={markers!r}: expected one or more distinct registry names of markers among {allowed}"
            + (f" ({unknown} unknown)." if unknown else ".")
        )
    return markers


# ------------------------------------------------------------------------------------------------
# The model feature's identity
# ------------------------------------------------------------------------------------------------


def model_config_sha256(bundle) -> str:
    """SHA-256 of a model bundle's configuration, less the package version.

    The configuration holds the architecture, preprocessing, calibrator and training record; the
    version is left out so that weights fitted with a model stay usable with the same model after
    an upgrade of sss-viewer.

    Parameters
    ----------
    bundle : ModelBundle

    Returns
    -------
    digest : str
        64 hexadecimal digits.
    """
    config = {k: v for k, v in bundle.config_dict().items() if k != "sss_viewer_version"}
    return hashlib.sha256(json.dumps(config, sort_keys=True, default=str).encode()).hexdigest()


def _load_model(model) -> tuple[object | None, str | None]:
    """A ModelBundle (loaded from ``model`` when a directory) and that directory, absolute (None for a bundle)."""
    if model is None:
        return None, None
    if isinstance(model, (str, Path)):
        from sss_viewer.engine.bundle import ModelBundle

        return ModelBundle.load(model), str(Path(model).resolve())
    if not hasattr(model, "config_dict") or not hasattr(model, "preprocess"):
        raise ValueError(f"Invalid model={model!r}: expected a ModelBundle or a model directory.")
    return model, None


# ------------------------------------------------------------------------------------------------
# Features of one recording
# ------------------------------------------------------------------------------------------------


@dataclass
class PreparedRecording:
    """A recording's scored channels, window grid and artifact flags: what every feature is computed on.

    Parameters
    ----------
    data : ndarray, shape (n_channels, n_times), float32, µV
    names : list of str, length n_channels
    excluded : list of (channel, reason)
    grid : WindowGrid
    flags : ndarray, shape (n_channels, n_windows), object (str)
        Artifact reason per window, ``""`` when clean.
    channel_flags : dict of str to str
    artifact_table : DataFrame or None
    clean : ndarray, shape (n_channels, n_windows), bool
    """

    data: np.ndarray
    names: list[str]
    excluded: list[tuple[str, str]]
    grid: WindowGrid
    flags: np.ndarray
    channel_flags: dict[str, str]
    artifact_table: pd.DataFrame | None
    clean: np.ndarray


def prepare_recording(recording: Recording, window_s: float, step_s: float, artifacts: bool) -> PreparedRecording:
    """Read the good iEEG channels, lay the window grid and flag artifacts, as a marker does before scoring.

    Raises
    ------
    ValueError
        No channel can be scored (every reason named).
    """
    data, names, excluded = read_scored_channels(recording)
    if not names:
        reasons = "; ".join(f"{c}: {r}" for c, r in excluded)
        raise ValueError(f"Recording {recording.label} has no channel the combined scorer can score: {reasons}")
    grid = WindowGrid.over(data.shape[1], recording.sfreq, window_s, step_s)
    flags, channel_flags, table = artifact_flags(data, recording, names, grid, artifacts)
    clean = flags == "" if artifacts else np.ones(flags.shape, dtype=bool)
    return PreparedRecording(data, names, excluded, grid, flags, channel_flags, table, np.asarray(clean, dtype=bool))


@dataclass
class RecordingFeatures:
    """The combined scorer's features of one recording.

    Parameters
    ----------
    names : list of str, length n_channels
    matrix : ndarray, shape (n_channels, n_features), float64
        Percentile ranks in (0, 1]; :data:`UNSUPPORTED_RANK` in a feature the recording cannot
        support; NaN where a channel has no clean window in a computed feature.
    window_values : ndarray, shape (n_channels, n_windows), float64
        Mean of the computed markers' window values, each divided by its top channel value.
    clean : ndarray, shape (n_channels, n_windows), bool
        Windows clean in every computed marker.
    left_out : dict of str to str
        Feature name → why the recording cannot support it.
    labels : ndarray, shape (n_channels,), int64, optional
        SOZ labels of the channels (None for an unlabelled recording).
    """

    names: list[str]
    matrix: np.ndarray
    window_values: np.ndarray
    clean: np.ndarray
    left_out: dict[str, str] = field(default_factory=dict)
    labels: np.ndarray | None = None

    def table(self, features: Sequence[str]) -> pd.DataFrame:
        """The features as a table, one row per channel: ``channel``, the feature columns, ``label``."""
        table = pd.DataFrame(self.matrix, columns=list(features))
        table.insert(0, "channel", self.names)
        if self.labels is not None:
            table["label"] = self.labels
        return table


class CombinedFeatures:
    """Computes the combined scorer's per-channel features of a recording.

    Parameters
    ----------
    markers : sequence of str
        Registry names of markers (not composites).
    model : ModelBundle, optional
        Adds :data:`MODEL_FEATURE`.
    window_s, step_s : float
    artifacts : bool
        As for every marker (:class:`~sss_viewer.biomarkers.base.BiomarkerScorer`); the model is
        scored with the same ``artifacts``.
    """

    def __init__(self, markers: Sequence[str], model=None, *, window_s: float, step_s: float, artifacts: bool):
        from sss_viewer.biomarkers.registry import get_scorer

        self.markers = check_markers(markers)
        self.model = model
        self.window_s, self.step_s, self.artifacts = float(window_s), float(step_s), bool(artifacts)
        params = {"window_s": self.window_s, "step_s": self.step_s, "artifacts": self.artifacts}
        self.scorers = [get_scorer(m, **params) for m in self.markers]

    @property
    def names(self) -> list[str]:
        """Feature names, in the order of the matrix's columns."""
        return feature_names(self.markers, self.model is not None)

    def left_out(self, recording: Recording) -> dict[str, str]:
        """Feature name → why ``recording`` cannot support it (the features it supports are absent)."""
        reasons = {feature_name(s.info.name): s.check_fit(recording) for s in self.scorers}
        if self.model is not None:
            from sss_viewer.engine.inference import check_fit

            reasons[MODEL_FEATURE] = check_fit(self.model, recording)
        return {name: reason for name, reason in reasons.items() if reason is not None}

    def check_fit(self, recording: Recording, left: dict[str, str] | None = None) -> str | None:
        """Why no feature's heat map can be drawn for ``recording`` (no marker supports it), or None.

        ``left`` is :meth:`left_out` of ``recording`` when already known.
        """
        left = self.left_out(recording) if left is None else left
        if all(feature_name(m) in left for m in self.markers):
            reasons = "; ".join(f"{m}: {left[feature_name(m)]}" for m in self.markers)
            return f"none of the combined scorer's markers can score recording {recording.label} ({reasons})"
        return None

    def compute(
        self, recording: Recording, on_progress: Callable[[float], None] | None = None
    ) -> tuple[PreparedRecording, RecordingFeatures]:
        """Every feature of every scored channel of ``recording``.

        Parameters
        ----------
        recording : Recording
        on_progress : callable, optional
            Called with the fraction done (0–1).

        Returns
        -------
        prepared : PreparedRecording
        features : RecordingFeatures

        Raises
        ------
        ValueError
            No marker supports the recording, or it has no scorable channel.
        """
        left_out = self.left_out(recording)
        reason = self.check_fit(recording, left_out)
        if reason is not None:
            raise ValueError(reason)
        report = progress_reporter(on_progress)
        prepared = prepare_recording(recording, self.window_s, self.step_s, self.artifacts)
        report(0.2)
        columns, window_parts, clean = [], [], prepared.clean
        for scorer in self.scorers:
            if feature_name(scorer.info.name) in left_out:
                columns.append(np.full(len(prepared.names), UNSUPPORTED_RANK))
                continue
            values, channel_value, ok = scorer.evaluate(prepared.data, prepared.grid, recording, prepared.clean)
            window_parts.append(_normalised(values, channel_value))
            columns.append(percentile_ranks(channel_value))
            clean = clean & ok
        report(0.7)
        if self.model is not None:
            columns.append(self._model_ranks(recording, prepared.names, MODEL_FEATURE in left_out))
        report(1.0)
        with np.errstate(invalid="ignore"):
            window_values = np.mean(window_parts, axis=0)
        features = RecordingFeatures(
            names=prepared.names,
            matrix=np.column_stack(columns),
            window_values=window_values,
            clean=clean,
            left_out=left_out,
            labels=_labels(recording, prepared.names),
        )
        return prepared, features

    def _model_ranks(self, recording: Recording, names: list[str], unsupported: bool) -> np.ndarray:
        """Percentile rank of the model's channel score per name, shape (n_channels,); 0.5 for all when unsupported."""
        if unsupported:
            return np.full(len(names), UNSUPPORTED_RANK)
        from sss_viewer.engine.inference import score_recording

        scores = score_recording(self.model, recording, progress=False, artifacts=self.artifacts)
        by_name = dict(zip(scores.channels["channel"], scores.channels["score"].astype(float)))
        return percentile_ranks(np.array([by_name.get(n, np.nan) for n in names], dtype=np.float64))


def _normalised(values: np.ndarray, channel_value: np.ndarray) -> np.ndarray:
    """Window values divided by the top channel value (1 when there is none), NaN kept, shape as ``values``."""
    finite = channel_value[np.isfinite(channel_value)]
    top = float(finite.max()) if finite.size and finite.max() > 0 else 1.0
    return np.where(np.isfinite(values), values / top, np.nan)


def _labels(recording: Recording, names: list[str]) -> np.ndarray | None:
    """SOZ labels of ``names`` (0/1), or None for an unlabelled recording."""
    if recording.soz is None:
        return None
    labels = dict(zip(recording.ch_names, np.asarray(recording.soz, dtype=bool)))
    return np.array([int(labels[n]) for n in names], dtype=np.int64)


# ------------------------------------------------------------------------------------------------
# The scorer
# ------------------------------------------------------------------------------------------------


class CombinedScorer(BiomarkerScorer):
    """Logistic regression over within-recording ranks of markers (and optionally the SSS score).

    Parameters
    ----------
    weights : str, Path or dict
        A weights file written by :func:`save_weights`, or the dict :func:`fit_combined` returns.
        It names the markers (and whether a model is a feature) and the window settings they were
        fitted with.
    model : ModelBundle, str or Path, optional
        The model of the :data:`MODEL_FEATURE` feature (a bundle or its directory). Default: the
        directory recorded in the weights, when they have a model feature. Its configuration must
        match the one recorded in the weights.
    **params
        ``window_s``, ``step_s``, ``artifacts``; default those recorded in the weights.

    Raises
    ------
    ValueError
        Malformed weights (the field named), a model given to weights fitted without one, a
        model missing or different from the one the weights were fitted with.
    """

    info = ScorerInfo(
        name="combined",
        title="Combined (fitted)",
        unit="probability",
        reference="logistic regression over within-recording percentile ranks of markers (and the SSS score)",
        kind="combined",
        validation="fitted: C chosen by leave-one-patient-out channel AUC (see the weights file)",
    )

    def __init__(self, weights: str | Path | dict | None = None, *, model=None, **params):
        if weights is None:
            raise ValueError(
                "CombinedScorer needs weights=: a weights file written by save_weights (training/fit_combined.py) "
                "or the dict fit_combined returns."
            )
        self.weights_source = str(weights) if isinstance(weights, (str, Path)) else "dict"
        if isinstance(weights, (str, Path)):
            self._weights = load_weights(weights)
        else:  # a copy through JSON: the caller's dict may change, and it must be what a file would hold
            self._weights = validate_weights(json.loads(json.dumps(validate_weights(weights, "weights"))), "weights")
        params = {**self._weights["params"], **params}
        super().__init__(**params)
        self.weights_sha256 = hashlib.sha256(json.dumps(self._weights, sort_keys=True).encode()).hexdigest()
        self.markers = tuple(self._weights["markers"])
        bundle, self.model_id = self._model(model)
        self._features = CombinedFeatures(
            self.markers, bundle, window_s=self.window_s, step_s=self.step_s, artifacts=self.artifacts
        )
        self._coef = np.asarray(self._weights["coefficients"], dtype=np.float64)
        self._intercept = float(self._weights["intercept"])

    def __repr__(self) -> str:
        return f"CombinedScorer({self.weights_source!r}, markers={self.markers}, model={self.model_id!r})"

    @property
    def weights(self) -> dict:
        """The validated weights (a copy)."""
        return json.loads(json.dumps(self._weights))

    @property
    def feature_names(self) -> list[str]:
        """The features, in the order of the coefficients."""
        return list(self._weights["features"])

    def _model(self, model) -> tuple[object | None, str | None]:
        """The feature's model bundle and its identity (``directory@config hash``); checked against the weights."""
        recorded = self._weights["model"]
        if recorded is None:
            if model is not None:
                raise ValueError(
                    f"Invalid model={model!r}: the weights ({self.weights_source}) were fitted without a model "
                    "feature; leave model=None or fit weights with this model (fit_combined(..., model=...))."
                )
            return None, None
        if model is None:
            model = recorded["path"]
            if model is None:
                raise ValueError(
                    f"The weights ({self.weights_source}) were fitted with a model given in memory: pass model= "
                    f"(its configuration hash is {recorded['config_sha256']})."
                )
            if not Path(model).is_dir():
                raise ValueError(
                    f"The weights ({self.weights_source}) name the model directory {model}, which does not exist: "
                    "pass model=."
                )
        bundle, directory = _load_model(model)
        digest = model_config_sha256(bundle)
        if recorded["config_sha256"] is not None and digest != recorded["config_sha256"]:
            raise ValueError(
                f"Invalid model={model!r}: its configuration hash {digest[:12]}… differs from the one the weights "
                f"({self.weights_source}) were fitted with ({recorded['config_sha256'][:12]}…, {recorded['path']}); "
                "fit weights with this model."
            )
        return bundle, f"{directory or recorded['path'] or 'in memory'}@{digest[:12]}"

    def predict(self, matrix: np.ndarray) -> np.ndarray:
        """Fitted probability of each row, shape (n_channels,); NaN where a feature is NaN.

        Parameters
        ----------
        matrix : ndarray, shape (n_channels, n_features)
        """
        return probability(matrix, self._coef, self._intercept)

    def channel_features(self, recording: Recording) -> pd.DataFrame:
        """The features of ``recording``'s scored channels: ``channel``, one column per feature, ``label``."""
        _, features = self._features.compute(recording)
        return features.table(self.feature_names)

    def check_fit(self, recording: Recording) -> str | None:
        reason = super().check_fit(recording)
        return reason if reason is not None else self._features.check_fit(recording)

    def describe(self, recording: Recording) -> ScorerInfo:
        """:attr:`info` naming the features computed on ``recording`` (those at 0.5 too), the weights, their fit."""
        return self._describe(self._features.left_out(recording))

    def _describe(self, left_out: dict[str, str]) -> ScorerInfo:
        used = [f for f in self.feature_names if f not in left_out]
        weights = ", ".join(f"{f} {w:+.2f}" for f, w in zip(self.feature_names, self._coef))
        reference = f"logistic regression ({weights}) over the within-recording percentile ranks of {', '.join(used)}"
        if left_out:
            reference += f" ({', '.join(left_out)} at 0.5: not supported by this recording)"
        w = self._weights
        data = w["training"].get("description") or "see the weights"
        validation = (
            f"fitted on {w['n_patients']} patients, {w['n_channels']} channels ({data}); C = {w['C']:g} chosen by "
            f"leave-one-patient-out channel AUC {_fmt(w['validation_auc'])}; weights {self.weights_source}"
        )
        return dataclasses.replace(self.info, reference=reference, validation=validation)

    def score(
        self,
        recording: Recording,
        *,
        progress: bool = False,
        on_progress: Callable[[float], None] | None = None,
    ) -> RecordingScores:
        """Score every good iEEG channel of ``recording`` (the tables of :meth:`BiomarkerScorer.score`).

        ``value`` is the fitted probability, ``score`` the value over the recording's top value,
        ``p_raw`` of a window the mean of the markers' normalised window values.

        Raises
        ------
        ValueError
            The recording cannot be scored (the reason names it).
        """
        reason = self.check_fit(recording)
        if reason is not None:
            raise ValueError(reason)
        prepared, features = self._features.compute(recording, on_progress)
        value = self.predict(features.matrix)
        result = scores_from_values(
            recording,
            prepared.names,
            prepared.grid,
            features.window_values,
            value,
            prepared.flags,
            prepared.channel_flags,
            prepared.excluded,
            prepared.artifact_table,
            self._describe(features.left_out),
            features.clean,
        )
        if progress:
            logger.info("combined: scored %d channels of %s", len(prepared.names), recording.label)
        return result


def probability(matrix: np.ndarray, coef: np.ndarray, intercept: float) -> np.ndarray:
    """Logistic probability of each row, shape (n_rows,); NaN where a feature is NaN.

    Parameters
    ----------
    matrix : ndarray, shape (n_rows, n_features)
    coef : ndarray, shape (n_features,)
    intercept : float
    """
    matrix = np.asarray(matrix, dtype=np.float64)
    out = np.full(matrix.shape[0], np.nan)
    finite = np.isfinite(matrix).all(axis=1)
    out[finite] = expit(matrix[finite] @ coef + intercept)
    return out


def _fmt(x: float | None) -> str:
    return "n/a" if x is None else f"{x:.3f}"


# ------------------------------------------------------------------------------------------------
# Fitting
# ------------------------------------------------------------------------------------------------


@dataclass
class _Item:
    """One labelled recording's features, for the fit (rows with a NaN feature dropped)."""

    patient: str
    label: str
    x: np.ndarray
    """shape (n_rows, n_features)"""
    y: np.ndarray
    """shape (n_rows,), int64"""
    description: dict


def fit_combined(
    recordings: Sequence[Recording],
    *,
    markers: Sequence[str] = COMBINED_MARKERS,
    model=None,
    patients: Sequence[str] | None = None,
    Cs: Sequence[float] = DEFAULT_CS,
    progress: bool = True,
    description: str = "",
    **params,
) -> dict:
    """Fit the combined scorer's weights on labelled recordings, choosing C by leave-one-patient-out validation.

    Each recording's features are computed once. For every C, each patient in turn is held out: a
    logistic regression (``class_weight="balanced"``) is fitted on the channels of every other
    patient and ranks the held-out patient's channels; the patient's AUC is the mean channel AUC
    of its recordings (each ranked within itself). The chosen C has the highest mean over patients
    (ties: the smallest C, the strongest penalty); the weights are then fitted on every patient.

    Parameters
    ----------
    recordings : sequence of Recording
        With ``soz`` labels (an unlabelled one is left out with a warning, as one no marker supports).
    markers : sequence of str
        Registry names of the markers whose ranks are features (default :data:`COMBINED_MARKERS`).
    model : ModelBundle, str or Path, optional
        Adds the SSS channel-score rank as a feature (a bundle or its directory).
    patients : sequence of str, optional
        The patient of each recording; default each recording's ``subject``.
    Cs : sequence of float
        Inverse penalties tried (> 0).
    progress : bool
        A progress bar over the recordings.
    description : str
        The training data in words, kept in the weights.
    **params
        ``window_s``, ``step_s``, ``artifacts`` of the markers.

    Returns
    -------
    weights : dict
        JSON-serialisable: ``features``, ``coefficients``, ``intercept``, ``C``, ``validation``
        (one entry per C: ``C``, ``mean_auc``, ``patients`` → held-out AUC), ``validation_auc``,
        ``n_patients``, ``n_recordings``, ``n_channels``, ``n_soz``, ``training``, ``markers``,
        ``model`` (``path``, ``config_sha256``) and ``params``.

    Raises
    ------
    ValueError
        Unknown markers, invalid Cs, a recording without a patient, fewer than two patients with
        labelled channels, a training fold of one class, or no patient with both classes.
    """
    recordings = list(recordings)
    Cs = _check_cs(Cs)
    patient_ids = _patients(recordings, patients)
    defaults = BiomarkerScorer(**params)
    bundle, model_dir = _load_model(model)
    extractor = CombinedFeatures(
        markers, bundle, window_s=defaults.window_s, step_s=defaults.step_s, artifacts=defaults.artifacts
    )
    items, skipped = _extract(recordings, patient_ids, extractor, progress)
    groups = sorted({item.patient for item in items})
    if len(groups) < 2:
        raise ValueError(
            f"fit_combined needs labelled recordings of at least two patients for leave-one-patient-out validation; "
            f"got {len(groups)} ({groups}) from {len(recordings)} recordings (skipped: {skipped or 'none'})."
        )
    table = [_validate_c(C, items, groups) for C in Cs]
    best = _choose(table)
    final = _fit(items, best["C"])
    n_channels = int(sum(len(item.y) for item in items))
    logger.info(
        "combined: C = %g (leave-one-patient-out AUC %s) on %d patients, %d channels",
        best["C"],
        _fmt(best["mean_auc"]),
        len(groups),
        n_channels,
    )
    return {
        "format": WEIGHTS_FORMAT,
        "format_version": WEIGHTS_VERSION,
        "sss_viewer_version": __version__,
        "features": extractor.names,
        "coefficients": [float(c) for c in final.coef_[0]],
        "intercept": float(final.intercept_[0]),
        "C": best["C"],
        "validation": table,
        "validation_auc": best["mean_auc"],
        "n_patients": len(groups),
        "n_recordings": len(items),
        "n_channels": n_channels,
        "n_soz": int(sum(item.y.sum() for item in items)),
        "training": {
            "description": description,
            "recordings": [item.description for item in items],
            "skipped": skipped,
        },
        "markers": list(extractor.markers),
        "model": None if bundle is None else {"path": model_dir, "config_sha256": model_config_sha256(bundle)},
        "params": {"window_s": extractor.window_s, "step_s": extractor.step_s, "artifacts": extractor.artifacts},
    }


def _check_cs(Cs: Sequence[float]) -> list[float]:
    """``Cs`` as a list of positive finite floats, else a ValueError naming the parameter."""
    try:
        values = [float(c) for c in Cs]
    except (TypeError, ValueError):
        values = []
    if not values or not all(math.isfinite(c) and c > 0 for c in values):
        raise ValueError(f"Invalid Cs={Cs!r}: expected one or more positive finite numbers.")
    return sorted(set(values))


def _patients(recordings: list[Recording], patients: Sequence[str] | None) -> list[str]:
    """The patient of each recording: ``patients`` or each ``subject`` (a ValueError names a recording without one)."""
    if patients is not None:
        patients = [str(p) for p in patients]
        if len(patients) != len(recordings) or not all(patients):
            raise ValueError(
                f"Invalid patients: expected one non-empty patient id per recording ({len(recordings)}); "
                f"got {patients!r}."
            )
        return patients
    missing = [r.label for r in recordings if not r.subject]
    if missing:
        raise ValueError(
            f"Recordings {missing} have no subject: leave-one-patient-out needs each recording's patient "
            "(set Recording.subject or pass patients=)."
        )
    return [r.subject for r in recordings]


def _extract(
    recordings: list[Recording], patients: list[str], extractor: CombinedFeatures, progress: bool
) -> tuple[list[_Item], list[dict]]:
    """Features of every labelled recording, computed once; the recordings left out with why."""
    items, skipped = [], []
    pairs = list(zip(recordings, patients, strict=True))
    for recording, patient in tqdm(pairs, desc="combined features", unit="rec", disable=not progress or None):
        if recording.soz is None:
            reason = "no SOZ labels"
        else:
            try:
                _, features = extractor.compute(recording)
                reason = None
            except ValueError as exc:
                reason = str(exc)
        if reason is not None:
            logger.warning("fit_combined leaves out %s: %s", recording.label, reason)
            skipped.append({"recording": recording.label, "patient": patient, "reason": reason})
            continue
        items.append(_item(recording, patient, features))
    return items, skipped


def _item(recording: Recording, patient: str, features: RecordingFeatures) -> _Item:
    """The fit's view of one recording: its finite feature rows and their labels, and its description."""
    keep = np.isfinite(features.matrix).all(axis=1)
    if not keep.all():
        logger.info("fit_combined: %s: %d channels without a clean window left out", recording.label, (~keep).sum())
    description = {
        "recording": recording.label,
        "patient": patient,
        "source": str(recording.source or ""),
        "sfreq": float(recording.sfreq),
        "duration_s": float(recording.duration_s),
        "n_channels": int(keep.sum()),
        "n_soz": int(features.labels[keep].sum()),
        "left_out": dict(features.left_out),
    }
    return _Item(patient, recording.label, features.matrix[keep], features.labels[keep], description)


def _fit(items: Sequence[_Item], C: float) -> LogisticRegression:
    """A balanced logistic regression fitted on the rows of ``items`` (a ValueError when they are of one class)."""
    x = np.concatenate([item.x for item in items])
    y = np.concatenate([item.y for item in items])
    if len(np.unique(y)) < 2:
        names = sorted({item.patient for item in items})
        raise ValueError(
            f"fit_combined: the channels of patients {names} are all of one class (SOZ = "
            f"{int(y[0]) if len(y) else 'none'}); the fit needs SOZ and non-SOZ channels."
        )
    return LogisticRegression(C=C, class_weight="balanced", max_iter=MAX_ITER).fit(x, y)


def _held_out_auc(model: LogisticRegression, items: Sequence[_Item]) -> float | None:
    """Mean channel AUC of ``items`` (each recording ranked within itself); None when none has both classes."""
    aucs = [binary_auc(model.decision_function(item.x), item.y) for item in items if len(np.unique(item.y)) == 2]
    return float(np.mean(aucs)) if aucs else None


def _validate_c(C: float, items: list[_Item], groups: list[str]) -> dict:
    """Leave-one-patient-out for one C: ``{"C", "mean_auc", "patients": {patient: held-out AUC or None}}``."""
    per_patient = {}
    for patient in groups:
        model = _fit([item for item in items if item.patient != patient], C)
        per_patient[patient] = _held_out_auc(model, [item for item in items if item.patient == patient])
    scored = [auc for auc in per_patient.values() if auc is not None]
    mean = float(np.mean(scored)) if scored else None
    logger.info("combined: C = %g: leave-one-patient-out AUC %s", C, _fmt(mean))
    return {"C": C, "mean_auc": mean, "patients": per_patient}


def _choose(table: list[dict]) -> dict:
    """The entry of ``table`` with the highest mean AUC (ties: the smallest C); a ValueError when none was measured."""
    measured = [row for row in table if row["mean_auc"] is not None]
    if not measured:
        raise ValueError("fit_combined: no held-out patient has both SOZ and non-SOZ channels; C cannot be chosen.")
    best = max(row["mean_auc"] for row in measured)
    return min((row for row in measured if row["mean_auc"] >= best - 1e-12), key=lambda row: row["C"])


# ------------------------------------------------------------------------------------------------
# Weights files
# ------------------------------------------------------------------------------------------------


def save_weights(weights: dict, path: str | Path, *, overwrite: bool = False) -> Path:
    """Write ``weights`` as JSON, atomically (the folder is created).

    Parameters
    ----------
    weights : dict
        :func:`fit_combined`'s output (validated first).
    path : str or Path
    overwrite : bool
        Replace an existing file.

    Returns
    -------
    path : Path

    Raises
    ------
    FileExistsError
        ``path`` exists and ``overwrite`` is False.
    ValueError
        Malformed weights (the field named).
    """
    path = Path(path)
    validate_weights(weights, "weights")
    if path.exists() and not overwrite:
        raise FileExistsError(f"Combined weights file {path} exists; pass overwrite=True to replace it.")
    text = json.dumps(weights, indent=2, allow_nan=False) + "\n"
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(path, lambda tmp: Path(tmp).write_text(text, encoding="utf-8"))
    logger.info("saved combined weights to %s", path)
    return path


def load_weights(path: str | Path) -> dict:
    """Read and validate a weights file written by :func:`save_weights` (JSON; nothing is unpickled).

    Parameters
    ----------
    path : str or Path
        The weights file (``sss-viewer fit-combined``'s JSON).

    Returns
    -------
    weights : dict
        The file's fields as written, each checked by :func:`validate_weights`; among them ``markers``
        (list of str), ``features`` (list of str, length n_features: the markers' ranks, then the model's
        p(SOZ) with a model), ``coefficients`` (list of float, length n_features), ``intercept`` and ``params``.

    Raises
    ------
    FileNotFoundError
        No such file.
    ValueError
        Not JSON, or a field missing or invalid (the message names the file and the field).
    """
    path = Path(path)
    try:
        weights = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise FileNotFoundError(f"Combined weights file {path} does not exist.") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise ValueError(f"{path} is not a combined weights file (JSON): {exc}") from None
    return validate_weights(weights, str(path))


def _is_number(x) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)


def _bad(source: str, name: str, expected: str, value) -> ValueError:
    shown = repr(value)
    shown = shown if len(shown) <= 80 else shown[:77] + "..."
    return ValueError(f"{source}: field '{name}' must be {expected}; got {shown}.")


def validate_weights(weights: dict, source: str) -> dict:
    """Check every field a scorer reads from ``weights``; return them.

    Parameters
    ----------
    weights : dict
    source : str
        The file (or ``"weights"``) named in the messages.

    Raises
    ------
    ValueError
        ``"<source>: field '<name>' must be …; got …"``.
    """
    if not isinstance(weights, dict):
        raise ValueError(f"{source}: expected a JSON object of combined weights; got {type(weights).__name__}.")
    missing = object()

    def need(name: str, ok: Callable[[object], bool], expected: str):
        value = weights.get(name, missing)
        if value is missing:
            raise ValueError(f"{source}: field '{name}' is missing (expected {expected}).")
        if not ok(value):
            raise _bad(source, name, expected, value)
        return value

    need("format", lambda v: v == WEIGHTS_FORMAT, repr(WEIGHTS_FORMAT))
    need("format_version", lambda v: v == WEIGHTS_VERSION, str(WEIGHTS_VERSION))
    markers = need("markers", lambda v: isinstance(v, list) and all(isinstance(m, str) for m in v), "a list of names")
    try:
        check_markers(markers)
    except ValueError as exc:
        raise ValueError(f"{source}: field 'markers': {exc}") from None
    model = need("model", _is_model_record, "null or {'path': str or null, 'config_sha256': str or null}")
    expected = feature_names(markers, model is not None)
    need("features", lambda v: v == expected, f"{expected} (the markers' ranks, then {MODEL_FEATURE!r} with a model)")
    n = len(expected)
    need("coefficients", lambda v: isinstance(v, list) and len(v) == n and all(map(_is_number, v)), f"{n} numbers")
    need("intercept", _is_number, "a finite number")
    need("C", lambda v: _is_number(v) and v > 0, "a positive number")
    need("params", _is_params, "{'window_s': > 0, 'step_s': > 0, 'artifacts': bool}")
    need("validation", lambda v: isinstance(v, list) and all(isinstance(r, dict) for r in v), "a list of objects")
    need("validation_auc", lambda v: v is None or _is_number(v), "null or a number")
    for name in ("n_patients", "n_recordings", "n_channels", "n_soz"):
        need(name, lambda v: isinstance(v, int) and not isinstance(v, bool) and v >= 0, "a non-negative integer")
    need("training", lambda v: isinstance(v, dict), "an object describing the training data")
    return weights


def _is_model_record(v) -> bool:
    return v is None or (
        isinstance(v, dict)
        and isinstance(v.get("path"), (str, type(None)))
        and isinstance(v.get("config_sha256"), (str, type(None)))
        and {"path", "config_sha256"} <= set(v)
    )


def _is_params(v) -> bool:
    return (
        isinstance(v, dict)
        and _is_number(v.get("window_s"))
        and v["window_s"] > 0
        and _is_number(v.get("step_s"))
        and v["step_s"] > 0
        and isinstance(v.get("artifacts"), bool)
    )


__all__ = [
    "COMBINED_MARKERS",
    "CombinedFeatures",
    "CombinedScorer",
    "RecordingFeatures",
    "fit_combined",
    "load_weights",
    "model_config_sha256",
    "save_weights",
    "validate_weights",
]

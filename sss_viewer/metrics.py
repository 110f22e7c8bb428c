"""Channel-level evaluation metrics (paper §4: F1, AUC, accuracy; plus AUPRC, Brier and ECE).

Every function takes 1-D ``scores`` (or probabilities) and binary ``labels`` of the same length and
returns plain Python floats. Threshold metrics predict SOZ where ``score >= threshold``. Metrics
that are undefined when only one class is present (AUC, AUPRC) return ``float("nan")`` with a
logged warning instead of raising, so a per-patient table with an all-negative patient still
renders. No function here emits Python warnings.
"""

from __future__ import annotations

import logging
import math
from typing import Any

import numpy as np
from sklearn.metrics import average_precision_score, roc_auc_score

from sss_viewer._validate import check_option, check_positive_int

logger = logging.getLogger(__name__)

THRESHOLD_CRITERIA = ("f1", "youden")
"""Criteria accepted by :func:`choose_threshold`."""


# --------------------------------------------------------------------------------------------
# validation helpers (also used by calibration and baselines)
# --------------------------------------------------------------------------------------------


def as_float_1d(name: str, x: Any) -> np.ndarray:
    """Return ``x`` as a finite 1-D float64 array, or raise a ValueError naming ``name``.

    Parameters
    ----------
    name : str
        Parameter name shown in the message.
    x : array-like, shape (n,)
        Numbers, all finite.

    Returns
    -------
    arr : np.ndarray, shape (n,), float64
    """
    try:
        arr = np.asarray(x, dtype=np.float64)
    except (TypeError, ValueError) as err:
        raise ValueError(f"{name} must be a 1-D array of numbers: {err}") from None
    if arr.ndim != 1:
        raise ValueError(f"{name} must be 1-D with shape (n,), got shape {arr.shape}.")
    if not np.all(np.isfinite(arr)):
        n_bad = int(np.sum(~np.isfinite(arr)))
        raise ValueError(f"{name} must be finite: found {n_bad} NaN/inf value(s) out of {arr.size}.")
    return arr


def as_binary_labels(name: str, y: Any) -> np.ndarray:
    """Return ``y`` as a 1-D int8 array of 0/1, or raise a ValueError naming ``name``.

    Parameters
    ----------
    name : str
        Parameter name shown in the message.
    y : array-like, shape (n,)
        Labels: bool, or integers / floats that are all 0 or 1.

    Returns
    -------
    labels : np.ndarray, shape (n,), int8
    """
    arr = np.asarray(y)
    if arr.ndim != 1:
        raise ValueError(f"{name} must be 1-D with shape (n,), got shape {arr.shape}.")
    if arr.dtype == bool:
        return arr.astype(np.int8)
    if not (np.issubdtype(arr.dtype, np.integer) or np.issubdtype(arr.dtype, np.floating)):
        raise ValueError(f"{name} must hold binary labels 0/1 (or bool), got dtype {arr.dtype}.")
    bad = ~((arr == 0) | (arr == 1))
    if np.any(bad):
        examples = np.unique(arr[bad])[:5].tolist()
        raise ValueError(f"{name} must hold binary labels 0/1 (or bool): found other values {examples}.")
    return arr.astype(np.int8)


def _check_pair(scores: Any, labels: Any, scores_name: str = "scores") -> tuple[np.ndarray, np.ndarray]:
    """Validate a (scores, labels) pair of equal, non-zero length."""
    s = as_float_1d(scores_name, scores)
    y = as_binary_labels("labels", labels)
    if s.shape[0] != y.shape[0]:
        raise ValueError(f"{scores_name} and labels must have the same length: got {s.shape[0]} and {y.shape[0]}.")
    if s.shape[0] == 0:
        raise ValueError(f"{scores_name} and labels are empty: expected at least one channel.")
    return s, y


def _check_probabilities(name: str, p: np.ndarray) -> np.ndarray:
    if np.any((p < 0.0) | (p > 1.0)):
        raise ValueError(f"{name} must be probabilities in [0, 1]: got min={p.min()!r}, max={p.max()!r}.")
    return p


def _both_classes(y: np.ndarray, metric: str) -> bool:
    n_pos = int(y.sum())
    if 0 < n_pos < y.shape[0]:
        return True
    logger.warning(
        "%s is undefined with a single class in labels (%d positive of %d): returning nan.",
        metric,
        n_pos,
        y.shape[0],
    )
    return False


# --------------------------------------------------------------------------------------------
# ranking metrics
# --------------------------------------------------------------------------------------------


def unscored_last(scores: Any, *, floor: float | None = None) -> np.ndarray:
    """Channel scores with the unscored ones (NaN: no artifact-free window) ranked below every scored one.

    A channel the scorer could not score stays in the ranking, last (see
    :mod:`sss_viewer.preprocessing.artifacts`); metrics read it the same way.

    Parameters
    ----------
    scores : array-like, shape (n_channels,)
    floor : float, optional
        The value given to unscored channels (default: one below the lowest finite score, or -1).

    Returns
    -------
    scores : ndarray, shape (n_channels,), float64
    """
    s = np.asarray(scores, dtype=np.float64)
    finite = np.isfinite(s)
    if finite.all():
        return s
    if floor is None:
        floor = float(s[finite].min()) - 1.0 if finite.any() else -1.0
    return np.where(finite, s, floor)


def binary_auc(scores: Any, labels: Any) -> float:
    """Area under the ROC curve (ties count one half).

    Parameters
    ----------
    scores : array-like, shape (n,)
        Higher means more likely SOZ; any real values.
    labels : array-like, shape (n,)
        Binary labels 0/1.

    Returns
    -------
    auc : float
        In [0, 1]; ``nan`` (with a logged warning) when only one class is present.
    """
    s, y = _check_pair(scores, labels)
    if not _both_classes(y, "AUC"):
        return math.nan
    return float(roc_auc_score(y, s))


def average_precision(scores: Any, labels: Any) -> float:
    """Area under the precision-recall curve as average precision (AUPRC).

    Parameters
    ----------
    scores : array-like, shape (n,)
    labels : array-like, shape (n,)

    Returns
    -------
    ap : float
        In [0, 1]; ``nan`` (with a logged warning) when only one class is present.
    """
    s, y = _check_pair(scores, labels)
    if not _both_classes(y, "AUPRC"):
        return math.nan
    return float(average_precision_score(y, s))


# --------------------------------------------------------------------------------------------
# probability metrics
# --------------------------------------------------------------------------------------------


def brier_score(p: Any, labels: Any) -> float:
    """Mean squared error between probabilities and labels.

    Parameters
    ----------
    p : array-like, shape (n,)
        Probabilities in [0, 1].
    labels : array-like, shape (n,)

    Returns
    -------
    brier : float
        In [0, 1]; lower is better.
    """
    p, y = _check_pair(p, labels, scores_name="p")
    _check_probabilities("p", p)
    return float(np.mean((p - y) ** 2))


def expected_calibration_error(p: Any, labels: Any, n_bins: int = 10) -> float:
    """Expected calibration error over equal-width probability bins.

    ``ECE = sum_b (n_b / n) * |mean(y in b) - mean(p in b)|``; bins are ``[i/n_bins, (i+1)/n_bins)``,
    the last one closed at 1. Empty bins contribute nothing.

    Parameters
    ----------
    p : array-like, shape (n,)
        Probabilities in [0, 1].
    labels : array-like, shape (n,)
    n_bins : int
        Number of bins (>= 1).

    Returns
    -------
    ece : float
        In [0, 1]; lower is better calibrated.
    """
    n_bins = check_positive_int("n_bins", int(n_bins) if isinstance(n_bins, np.integer) else n_bins)
    p, y = _check_pair(p, labels, scores_name="p")
    _check_probabilities("p", p)
    bins = np.minimum((p * n_bins).astype(np.int64), n_bins - 1)
    sum_p = np.bincount(bins, weights=p, minlength=n_bins)
    sum_y = np.bincount(bins, weights=y.astype(np.float64), minlength=n_bins)
    return float(np.sum(np.abs(sum_y - sum_p)) / p.shape[0])


# --------------------------------------------------------------------------------------------
# threshold metrics
# --------------------------------------------------------------------------------------------


def _confusion(s: np.ndarray, y: np.ndarray, threshold: float) -> tuple[int, int, int, int]:
    pred = s >= threshold
    pos = y == 1
    tp = int(np.sum(pred & pos))
    fp = int(np.sum(pred & ~pos))
    fn = int(np.sum(~pred & pos))
    tn = int(np.sum(~pred & ~pos))
    return tp, fp, fn, tn


def _ratio(num: int, den: int) -> float:
    return num / den if den > 0 else 0.0


def _threshold_metrics(tp: int, fp: int, fn: int, tn: int) -> dict[str, float]:
    n = tp + fp + fn + tn
    recall = _ratio(tp, tp + fn)
    specificity = _ratio(tn, tn + fp)
    present = [r for r, d in ((recall, tp + fn), (specificity, tn + fp)) if d > 0]
    return {
        "accuracy": _ratio(tp + tn, n),
        "balanced_accuracy": float(np.mean(present)),
        "f1": _ratio(2 * tp, 2 * tp + fp + fn),
        "precision": _ratio(tp, tp + fp),
        "recall": recall,
        "specificity": specificity,
    }


def _check_threshold(threshold: Any) -> float:
    if isinstance(threshold, bool) or not isinstance(threshold, (int, float, np.integer, np.floating)):
        raise ValueError(f"Invalid threshold={threshold!r}: expected a finite number.")
    if not math.isfinite(float(threshold)):
        raise ValueError(f"Invalid threshold={threshold!r}: expected a finite number.")
    return float(threshold)


def f1_at(scores: Any, labels: Any, threshold: float = 0.5) -> float:
    """F1 score of ``scores >= threshold`` (0 when there are no true and no predicted positives).

    Parameters
    ----------
    scores, labels : array-like, shape (n,)
    threshold : float

    Returns
    -------
    f1 : float
    """
    s, y = _check_pair(scores, labels)
    return _threshold_metrics(*_confusion(s, y, _check_threshold(threshold)))["f1"]


def accuracy_at(scores: Any, labels: Any, threshold: float = 0.5) -> float:
    """Accuracy of ``scores >= threshold``.

    Parameters
    ----------
    scores, labels : array-like, shape (n,)
    threshold : float

    Returns
    -------
    accuracy : float
    """
    s, y = _check_pair(scores, labels)
    return _threshold_metrics(*_confusion(s, y, _check_threshold(threshold)))["accuracy"]


def balanced_accuracy_at(scores: Any, labels: Any, threshold: float = 0.5) -> float:
    """Balanced accuracy (mean of sensitivity and specificity) of ``scores >= threshold``.

    With a single class present it is the recall of that class (scikit-learn's convention, without
    its warning).

    Parameters
    ----------
    scores, labels : array-like, shape (n,)
    threshold : float

    Returns
    -------
    balanced_accuracy : float
    """
    s, y = _check_pair(scores, labels)
    return _threshold_metrics(*_confusion(s, y, _check_threshold(threshold)))["balanced_accuracy"]


def choose_threshold(scores: Any, labels: Any, criterion: str = "f1") -> float:
    """Threshold that maximises a criterion on validation channels.

    Every cut between consecutive distinct scores is tried. The returned threshold is the midpoint
    between the lowest score predicted positive and the highest score predicted negative (or the
    lowest score itself when everything is predicted positive), so ``scores >= threshold`` reproduces
    the best validation split while staying away from the validation scores. Ties in the criterion
    go to the higher threshold (fewer channels flagged).

    Parameters
    ----------
    scores : array-like, shape (n,)
        Validation channel scores.
    labels : array-like, shape (n,)
        Validation labels 0/1.
    criterion : {"f1", "youden"}
        ``"f1"`` maximises F1; ``"youden"`` maximises sensitivity + specificity - 1.

    Returns
    -------
    threshold : float
    """
    check_option("criterion", criterion, THRESHOLD_CRITERIA)
    s, y = _check_pair(scores, labels)
    n_pos = int(y.sum())
    n_neg = y.shape[0] - n_pos
    if n_pos == 0 or n_neg == 0:
        logger.warning(
            "choose_threshold: labels hold a single class (%d positive of %d); the criterion is degenerate.",
            n_pos,
            y.shape[0],
        )
    # Descending distinct scores; cut k flags every channel with score >= uniq[k].
    uniq, inverse = np.unique(-s, return_inverse=True)
    uniq = -uniq
    tp = np.cumsum(np.bincount(inverse, weights=y, minlength=uniq.size))
    fp = np.cumsum(np.bincount(inverse, weights=1 - y, minlength=uniq.size))
    if criterion == "f1":
        den = 2 * tp + fp + (n_pos - tp)
        value = np.divide(2 * tp, den, out=np.zeros_like(tp), where=den > 0)
    else:
        tpr = tp / n_pos if n_pos else np.zeros_like(tp)
        fpr = fp / n_neg if n_neg else np.zeros_like(fp)
        value = tpr - fpr
    best = int(np.argmax(value))  # first maximum = highest threshold among ties
    if best + 1 < uniq.size:
        return float(0.5 * (uniq[best] + uniq[best + 1]))
    return float(uniq[best])


def evaluate_scores(scores: Any, labels: Any, threshold: float = 0.5) -> dict[str, float]:
    """All channel-level metrics at once.

    Parameters
    ----------
    scores : array-like, shape (n_channels,)
        Channel scores (SSS: mean calibrated window probability).
    labels : array-like, shape (n_channels,)
        SOZ labels 0/1.
    threshold : float
        Channels with ``score >= threshold`` are predicted SOZ.

    Returns
    -------
    metrics : dict of str to float
        ``auc``, ``auprc`` (``nan`` with one class), ``brier`` (``nan`` when scores are not
        probabilities), ``accuracy``, ``balanced_accuracy``, ``f1``, ``precision``, ``recall``,
        ``specificity``, ``threshold``.
    """
    s, y = _check_pair(scores, labels)
    threshold = _check_threshold(threshold)
    out: dict[str, float] = {"auc": binary_auc(s, y), "auprc": average_precision(s, y)}
    if np.all((s >= 0.0) & (s <= 1.0)):
        out["brier"] = brier_score(s, y)
    else:
        logger.info("Scores are not probabilities in [0, 1]: brier is nan.")
        out["brier"] = math.nan
    out.update(_threshold_metrics(*_confusion(s, y, threshold)))
    out["threshold"] = threshold
    return {key: float(value) for key, value in out.items()}

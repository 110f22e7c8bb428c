"""MiniRocket + logistic regression on whole channels: the reference classifier of issue 6.

The MiniRocket transform (:class:`~sss_viewer.models.minirocket_features.MiniRocketFeatures`, biases fitted on
the training channels) turns every whole channel into ~10,000 PPV features; ``StandardScaler +
LogisticRegression`` (lbfgs) classifies them. The inverse regularisation strength ``C`` is chosen on
the validation channels (highest AUC, ties to the stronger regularisation); every candidate is fit on
the training channels only, and the test channels are never looked at. This is the strong
non-deep reference that an SSS model has to match on Bonn (D vs C).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

import numpy as np
import torch
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from sss_viewer._validate import check_option
from sss_viewer.baselines.whole_channel import whole_channel_features
from sss_viewer.metrics import binary_auc
from sss_viewer.models.minirocket_features import MiniRocketFeatures
from sss_viewer.windows.series_set import SeriesSet
from sss_viewer.windows.splits import SPLIT_NAMES

logger = logging.getLogger(__name__)

__all__ = ["FIT_ON", "MINIROCKET_CS", "ReferenceResult", "fit_minirocket_logistic", "select_logistic", "training_rows"]

FIT_ON = ("train", "train+val")
"""What the final reference is trained on: the training channels, or the whole training fold."""

MINIROCKET_CS = (0.01, 0.1, 1.0)
"""Candidate inverse regularisation strengths of the logistic regression."""


@dataclass
class ReferenceResult:
    """Validation and test probabilities of :func:`fit_minirocket_logistic` and the chosen ``C``."""

    val_probs: np.ndarray
    test_probs: np.ndarray
    C: float
    val_auc_by_C: dict


def _features(transform: MiniRocketFeatures, series_set: SeriesSet, members: np.ndarray) -> np.ndarray:
    """MiniRocket features of whole channels, (n, n_features)."""
    return whole_channel_features(transform, series_set, members, n_features=transform.n_features).numpy()


def training_rows(series_set: SeriesSet, train: np.ndarray) -> np.ndarray:
    """The training channels cut to the shortest of them: what a fixed transform is fitted on.

    Parameters
    ----------
    series_set : SeriesSet
    train : ndarray, shape (n_train,), int
        Series numbers of the training channels.

    Returns
    -------
    ndarray, shape (n_train, reference), float32
        ``reference`` (the shortest training length) is also the transform's reference length.
    """
    reference = int(series_set.store.lengths[train].min())
    return np.stack([series_set.store.series(int(i))[:reference] for i in train]).astype(np.float32)


def select_logistic(
    f_train: np.ndarray, y_train: np.ndarray, f_val: np.ndarray, y_val: np.ndarray, Cs: tuple[float, ...], seed: int
) -> tuple[float, object, dict]:
    """``StandardScaler + LogisticRegression`` fitted on the training features for each ``C``, chosen on validation AUC.

    Parameters
    ----------
    f_train : ndarray, shape (n_train, n_features)
    y_train : ndarray, shape (n_train,)
    f_val : ndarray, shape (n_val, n_features)
    y_val : ndarray, shape (n_val,)
    Cs : tuple of float
        Candidate inverse regularisation strengths; ties go to the smallest (the strongest regularisation).
    seed : int
        The solver's random state.

    Returns
    -------
    C : float
        The chosen ``C``.
    pipeline : sklearn Pipeline
        Its pipeline, fitted on the training features.
    val_auc : dict
        Validation AUC by ``C``.
    """
    fitted, val_auc = {}, {}
    for C in sorted(Cs):
        fitted[C] = make_pipeline(StandardScaler(), LogisticRegression(C=C, max_iter=1000, random_state=seed))
        fitted[C].fit(f_train, y_train)
        val_auc[C] = binary_auc(fitted[C].predict_proba(f_val)[:, 1], y_val)
    best = max(sorted(Cs), key=lambda C: (np.nan_to_num(val_auc[C], nan=-1.0), -C))
    return float(best), fitted[best], val_auc


def fit_minirocket_logistic(
    series_set: SeriesSet,
    split: np.ndarray,
    *,
    seed: int = 0,
    num_features: int = 9_996,
    Cs: tuple[float, ...] = MINIROCKET_CS,
    fit_on: str = "train",
) -> ReferenceResult:
    """Fit MiniRocket + logistic regression on the ``train`` channels and score ``val`` and ``test``.

    Parameters
    ----------
    series_set : SeriesSet
    split : ndarray of str, shape (n_series,)
        ``train`` / ``val`` / ``test`` / ``unused`` per series.
    seed : int
        Seed of the bias fitting and of the solver.
    num_features : int
    Cs : tuple of float
        Candidate ``C`` values, chosen on validation AUC.
    fit_on : {"train", "train+val"}
        ``"train+val"``: the reference trained on the whole training fold, as plain k-fold CV trains
        it — the biases are fitted on the training and validation channels, ``C`` is still chosen by
        fits on ``train`` scored on ``val``, and the final model is refit with that ``C`` on both.
        ``val_probs`` then come from the ``train``-only fit (a threshold is chosen on them).

    Returns
    -------
    ReferenceResult
    """
    check_option("fit_on", fit_on, FIT_ON)
    split = np.asarray(split)
    labels = series_set.labels()
    train, val, test = (np.flatnonzero(split == name) for name in SPLIT_NAMES)
    whole = np.concatenate([train, val]) if fit_on == "train+val" else train
    fit_rows = training_rows(series_set, whole)
    transform = MiniRocketFeatures(fit_rows.shape[1], num_features, seed)
    transform.fit(torch.from_numpy(fit_rows))
    f_train, f_val, f_test = (_features(transform, series_set, rows) for rows in (train, val, test))

    best, chosen, val_auc = select_logistic(f_train, labels[train], f_val, labels[val], Cs, seed)
    logger.info("MiniRocket + logistic regression: validation AUC by C %s, chose C=%g", val_auc, best)
    final = chosen
    if fit_on == "train+val":
        final = make_pipeline(StandardScaler(), LogisticRegression(C=best, max_iter=1000, random_state=seed))
        final.fit(np.concatenate([f_train, f_val]), np.concatenate([labels[train], labels[val]]))
    return ReferenceResult(
        val_probs=chosen.predict_proba(f_val)[:, 1].astype(np.float64),
        test_probs=final.predict_proba(f_test)[:, 1].astype(np.float64),
        C=float(best),
        val_auc_by_C={str(k): float(v) for k, v in val_auc.items()},
    )

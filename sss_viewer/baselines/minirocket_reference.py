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

from sss_viewer.baselines.whole_channel import whole_channel_features
from sss_viewer.metrics import binary_auc
from sss_viewer.models.minirocket_features import MiniRocketFeatures
from sss_viewer.windows.series_set import SeriesSet
from sss_viewer.windows.splits import SPLIT_NAMES

logger = logging.getLogger(__name__)

__all__ = ["MINIROCKET_CS", "ReferenceResult", "fit_minirocket_logistic"]

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


def fit_minirocket_logistic(
    series_set: SeriesSet,
    split: np.ndarray,
    *,
    seed: int = 0,
    num_features: int = 9_996,
    Cs: tuple[float, ...] = MINIROCKET_CS,
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

    Returns
    -------
    ReferenceResult
    """
    split = np.asarray(split)
    labels = series_set.labels()
    train, val, test = (np.flatnonzero(split == name) for name in SPLIT_NAMES)
    lengths = series_set.store.lengths[train]
    reference = int(lengths.min())
    transform = MiniRocketFeatures(reference, num_features, seed)
    fit_rows = [series_set.store.series(int(i))[:reference] for i in train]
    transform.fit(torch.from_numpy(np.stack(fit_rows).astype(np.float32)))
    f_train, f_val, f_test = (_features(transform, series_set, rows) for rows in (train, val, test))

    fitted, val_auc = {}, {}
    for C in sorted(Cs):
        fitted[C] = make_pipeline(StandardScaler(), LogisticRegression(C=C, max_iter=1000, random_state=seed))
        fitted[C].fit(f_train, labels[train])
        val_auc[C] = binary_auc(fitted[C].predict_proba(f_val)[:, 1], labels[val])
    best = max(sorted(Cs), key=lambda C: (np.nan_to_num(val_auc[C], nan=-1.0), -C))
    chosen = fitted[best]
    logger.info("MiniRocket + logistic regression: validation AUC by C %s, chose C=%g", val_auc, best)
    return ReferenceResult(
        val_probs=chosen.predict_proba(f_val)[:, 1].astype(np.float64),
        test_probs=chosen.predict_proba(f_test)[:, 1].astype(np.float64),
        C=float(best),
        val_auc_by_C={str(k): float(v) for k, v in val_auc.items()},
    )

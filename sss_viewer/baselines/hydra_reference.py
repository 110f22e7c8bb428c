"""Hydra (+ MiniRocket) features of whole channels with a ridge (or logistic) head: the strongest ROCKET-family peer.

Issue 18 asks SSS to beat, besides MiniRocket-LR (:mod:`sss_viewer.baselines.minirocket_reference`),
the strongest whole-segment classifier of the ROCKET family: Hydra + MiniRocket (Dempster, Schmidt &
Webb 2023 combine Hydra with MultiRocket; MiniRocket here, the project's tested transform). Every
whole channel goes through the front end of
:class:`~sss_viewer.models.hydra.HydraMiniRocketClassifier` (reference length = the shortest
training channel, MiniRocket's biases fitted on the training channels, exactly as MiniRocket-LR
does) — or, with ``transform="hydra"``, of :class:`~sss_viewer.models.hydra.HydraClassifier`
(Hydra alone: the paper's Hydra classifier) —, its :class:`~sss_viewer.models.hydra.SparseStandardizer` fitted on the channels the head is
fitted on (square root and sparse scaling of the Hydra counts, standardisation of the PPV), then:

* ``head="ridge"`` (the Hydra paper's classifier): ``RidgeClassifierCV`` over
  :data:`RIDGE_ALPHAS`, the penalty chosen by its efficient leave-one-out error on the fitted
  channels (no validation channel is needed for it). Scores are the logistic function of the
  ridge's decision values: monotone, so ranks and AUC are the ridge's, but not calibrated
  probabilities.
* ``head="logistic"``: MiniRocket-LR's rule (:func:`~sss_viewer.baselines.minirocket_reference.select_logistic`):
  ``C`` chosen on validation AUC among fits on the training channels.

``fit_on="train+val"`` fits the final head (and the scaling) on the training and validation
channels together (the ridge penalty re-chosen by leave-one-out on both; the logistic head refitted
with the ``C`` chosen as above) for the test scores; the validation scores, on which the decision
threshold is chosen, still come from the head fitted on the training channels alone, so they stay
out of sample (as in :func:`~sss_viewer.baselines.minirocket_reference.fit_minirocket_logistic`).
Test channels are never looked at before scoring.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

import numpy as np
import torch
from scipy.special import expit
from sklearn.base import clone
from sklearn.linear_model import RidgeClassifierCV

from sss_viewer._validate import check_option
from sss_viewer.baselines.minirocket_reference import FIT_ON, MINIROCKET_CS, select_logistic, training_rows
from sss_viewer.baselines.whole_channel import whole_channel_features
from sss_viewer.engine.device import resolve_device
from sss_viewer.models.hydra import HydraClassifier, HydraMiniRocketClassifier
from sss_viewer.windows.series_set import SeriesSet
from sss_viewer.windows.splits import SPLIT_NAMES

logger = logging.getLogger(__name__)

__all__ = ["FIT_ON", "PEER_HEADS", "PEER_TRANSFORMS", "RIDGE_ALPHAS", "PeerResult", "fit_hydra_peer"]

RIDGE_ALPHAS = tuple(float(a) for a in np.logspace(-3, 3, 10))
"""Ridge penalties tried by leave-one-out (the Hydra and ROCKET papers' grid)."""
PEER_HEADS = ("ridge", "logistic")
PEER_TRANSFORMS = ("hydra_minirocket", "hydra")
"""Front ends: Hydra + MiniRocket, or Hydra alone (registered backbone names)."""


@dataclass
class PeerResult:
    """Validation and test scores of :func:`fit_hydra_peer` and the chosen penalty.

    ``alpha`` is the ridge penalty (None for the logistic head), ``C`` the logistic inverse penalty
    (None for the ridge); ``n_features`` the front end's feature count.
    """

    val_probs: np.ndarray
    test_probs: np.ndarray
    transform: str
    head: str
    fit_on: str
    n_features: int
    alpha: float | None = None
    C: float | None = None


def fit_hydra_peer(
    series_set: SeriesSet,
    split: np.ndarray,
    *,
    seed: int = 0,
    transform: str = "hydra_minirocket",
    head: str = "ridge",
    fit_on: str = "train",
    kernels_per_group: int = 8,
    groups: int = 64,
    num_features: int = 9_996,
    alphas: tuple[float, ...] = RIDGE_ALPHAS,
    Cs: tuple[float, ...] = MINIROCKET_CS,
    device: str = "auto",
) -> PeerResult:
    """Fit Hydra (+ MiniRocket) + a ridge or logistic head on whole channels and score ``val`` and ``test``.

    Parameters
    ----------
    series_set : SeriesSet
    split : ndarray of str, shape (n_series,)
        ``train`` / ``val`` / ``test`` / ``unused`` per series.
    seed : int
        Seed of the Hydra kernels, of MiniRocket's bias fitting and of the logistic solver.
    transform : {"hydra_minirocket", "hydra"}
        The front end.
    head : {"ridge", "logistic"}
    fit_on : {"train", "train+val"}
        Channels the final head and the scaling are fitted on (module docstring).
    kernels_per_group, groups : int
        Hydra's ``k`` and ``g``.
    num_features : int
        MiniRocket features (``transform="hydra_minirocket"``).
    alphas : tuple of float
        Ridge penalties (leave-one-out choice).
    Cs : tuple of float
        Logistic candidates (validation choice).
    device : str
        Where the features are computed: ``"auto"``, ``"cpu"`` or ``"cuda[:N]"``.

    Returns
    -------
    PeerResult
    """
    check_option("transform", transform, PEER_TRANSFORMS)
    check_option("head", head, PEER_HEADS)
    check_option("fit_on", fit_on, FIT_ON)
    split = np.asarray(split)
    labels = series_set.labels()
    train, val, test = (np.flatnonzero(split == name) for name in SPLIT_NAMES)
    for name, rows in (("train", train), ("val", val), ("test", test)):
        if len(rows) == 0:
            raise ValueError(f"The {name} split is empty: fit_hydra_peer needs train, val and test channels.")
    dev = resolve_device(device)
    fit_rows = training_rows(series_set, train)
    # Each whole channel is read on its own (MiniRocket's PPV with its half-count ties, as the MiniRocket-LR peer).
    if transform == "hydra":
        model = HydraClassifier(fit_rows.shape[1], kernels_per_group, groups, seed, feature_context="window").to(dev)
    else:
        model = HydraMiniRocketClassifier(
            fit_rows.shape[1], kernels_per_group, groups, num_features, seed, feature_context="window"
        ).to(dev)
        model.initialise_from_data(torch.from_numpy(fit_rows).to(dev))
    model.eval()
    raw = {
        name: whole_channel_features(model.frozen_features, series_set, rows, n_features=model.n_features, device=dev)
        for name, rows in (("train", train), ("val", val), ("test", test))
    }
    fitted = np.concatenate([train, val]) if fit_on == "train+val" else train
    scaled = _scaled(model, raw, ("train", "val") if fit_on == "train+val" else ("train",))
    # validation probabilities always come from a head that did not see validation (the threshold is chosen on them)
    train_only = _scaled(model, raw, ("train",)) if fit_on == "train+val" else scaled
    f_fit = np.concatenate([scaled["train"], scaled["val"]]) if fit_on == "train+val" else scaled["train"]
    result = PeerResult(np.empty(0), np.empty(0), transform, head, fit_on, model.n_features)
    if head == "ridge":
        on_train = _fit_ridge(train_only["train"], labels[train], alphas)
        final = _fit_ridge(f_fit, labels[fitted], alphas) if fit_on == "train+val" else on_train
        result.alpha = float(final.alpha_)
        result.val_probs = expit(on_train.decision_function(train_only["val"]))
        result.test_probs = expit(final.decision_function(scaled["test"]))
        logger.info(
            "%s + ridge: %d features, alpha=%g by leave-one-out on %s",
            transform,
            model.n_features,
            result.alpha,
            fit_on,
        )
    else:
        C, on_train, val_auc = select_logistic(
            train_only["train"], labels[train], train_only["val"], labels[val], Cs, seed
        )
        final = clone(on_train).fit(f_fit, labels[fitted]) if fit_on == "train+val" else on_train
        result.C = C
        result.val_probs = on_train.predict_proba(train_only["val"])[:, 1]
        result.test_probs = final.predict_proba(scaled["test"])[:, 1]
        logger.info("%s + logistic regression: validation AUC by C %s, chose C=%g", transform, val_auc, C)
    result.val_probs = np.asarray(result.val_probs, dtype=np.float64)
    result.test_probs = np.asarray(result.test_probs, dtype=np.float64)
    return result


def _fit_ridge(features: np.ndarray, labels: np.ndarray, alphas) -> RidgeClassifierCV:
    """Ridge classifier with the penalty chosen by leave-one-out on ``features (n, n_features)``."""
    ridge = RidgeClassifierCV(alphas=alphas).fit(features, labels)
    if list(ridge.classes_) != [0, 1]:
        raise ValueError(f"The fitted channels hold class(es) {list(ridge.classes_)}: need SOZ and non-SOZ.")
    return ridge


def _scaled(model: HydraClassifier | HydraMiniRocketClassifier, raw: dict, fit_names: tuple[str, ...]) -> dict:
    """Every feature matrix of ``raw`` scaled by the model's standardiser fitted on the ``fit_names`` matrices.

    Parameters
    ----------
    model : HydraClassifier or HydraMiniRocketClassifier
        Its ``norm`` is reset and refitted.
    raw : dict of str to Tensor, shape (n, n_features)
    fit_names : tuple of str

    Returns
    -------
    dict of str to ndarray, shape (n, n_features), float64
    """
    with torch.no_grad():
        model.norm.reset()
        model.norm.update(torch.cat([raw[name] for name in fit_names]))
        model.norm.eval()
        return {name: model.norm(f).cpu().double().numpy() for name, f in raw.items()}

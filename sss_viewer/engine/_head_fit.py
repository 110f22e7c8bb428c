"""Full-batch L-BFGS fit of a linear head on frozen window features, with its L2 penalty chosen on validation.

With a frozen front end (MiniRocket, ROCKET) the SSS objective is a function of the head alone:
``(1/n) sum_i w_i BCE(mean_{w in W_i} sigmoid(f(w)), y_i)`` over every training window at once.
Instead of mini-batch Adam epochs, L-BFGS on the whole training feature matrix converges to the
penalised optimum in a few hundred evaluations, with no learning rate or epoch count to choose; the
only choice, the L2 penalty, is picked from a grid on the validation channels the way early stopping
picks an epoch. On Bonn it matched the Adam head (``docs/results.md``); it needs every training
window's features in memory, which the Adam loop does not.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence

import numpy as np
import torch
from torch import nn

from sss_viewer.engine._early_stopping import EarlyStopping
from sss_viewer.models.rocket import RunningStandardizer

logger = logging.getLogger(__name__)


def fit_head_lbfgs(
    model: nn.Module,
    train_features: torch.Tensor,
    val_features: torch.Tensor,
    loss_of_logits: Callable[[torch.Tensor], torch.Tensor],
    score_val_probs: Callable[[np.ndarray], float],
    l2_grid: Sequence[float],
    max_iter: int,
) -> tuple[list[dict], float]:
    """Fit ``model``'s head for each L2 penalty; keep the one with the best validation score.

    Parameters
    ----------
    model : nn.Module
        A local model with a frozen front end: ``classify(features)`` maps ``(N, F)`` features to
        ``(N,)`` logits through ``model.norm`` (a :class:`RunningStandardizer`) and then
        ``head_logits(scaled)``, the model's trainable parameters (the head; everything trainable is
        fitted and penalised). The training features are standardised once, after ``norm`` has seen them.
    train_features : Tensor, shape (N_train, F)
        Frozen features of every training window.
    val_features : Tensor, shape (N_val, F)
        Frozen features of every validation window.
    loss_of_logits : callable
        ``(N_train,)`` training-window logits → scalar training loss (the SSS channel loss).
    score_val_probs : callable
        ``(N_val,)`` validation-window probabilities → selection score (higher is better).
    l2_grid : sequence of float
        Penalties ``lambda`` on ``sum(weight ** 2)`` (biases are not penalised), tried in order;
        a later penalty must score strictly higher to be chosen, so list the strongest first to
        break ties towards the simpler head.
    max_iter : int
        L-BFGS iterations per penalty.

    Returns
    -------
    history : list of dict
        One record per penalty: ``l2``, ``train_loss``, ``val_auc``, ``iterations``.
    best_l2 : float
        The chosen penalty; ``model`` holds its head.
    """
    norm = getattr(model, "norm", None)
    if not isinstance(norm, RunningStandardizer) or not callable(getattr(model, "head_logits", None)):
        raise ValueError(
            f"head_solver='lbfgs' needs a local model whose features are standardised by a RunningStandardizer "
            f"(model.norm) and a head on the scaled features (model.head_logits); {type(model).__name__} has "
            f"{type(norm).__name__}. Use head_solver='adam'."
        )
    norm.reset()
    norm.update(train_features)  # statistics of every training window, once; frozen from here on
    model.eval()
    with torch.no_grad():  # the standardisation is frozen: scale once, not at every L-BFGS evaluation
        train_scaled = norm(train_features)
    params = [p for p in model.parameters() if p.requires_grad]
    stopper = EarlyStopping(patience=len(l2_grid) + 1, no_best_epoch=0)
    history = []
    for i, l2 in enumerate(l2_grid):
        with torch.no_grad():
            for p in params:
                p.zero_()
        optimiser = torch.optim.LBFGS(
            params,
            lr=1.0,
            max_iter=max_iter,
            history_size=20,
            line_search_fn="strong_wolfe",
            tolerance_grad=1e-7,
            tolerance_change=1e-10,
        )

        def closure() -> torch.Tensor:
            optimiser.zero_grad(set_to_none=True)
            loss = loss_of_logits(model.head_logits(train_scaled))
            loss = loss + l2 * sum(p.square().sum() for p in params if p.ndim > 1)
            loss.backward()
            return loss

        optimiser.step(closure)
        with torch.no_grad():
            train_loss = float(loss_of_logits(model.head_logits(train_scaled)))
        p_val = frozen_probs(model, val_features)
        score = score_val_probs(p_val)
        iterations = int(optimiser.state[params[0]].get("n_iter", 0))
        history.append({"l2": float(l2), "train_loss": train_loss, "val_auc": score, "iterations": iterations})
        logger.info(
            "L-BFGS head, l2 %.0e: loss %.4f after %d iterations, val channel AUC %.3f",
            l2,
            train_loss,
            iterations,
            score,
        )
        stopper.update(score, i + 1, model)
    stopper.restore_best(model)
    best_l2 = float(l2_grid[max(stopper.best_epoch, 1) - 1])
    logger.info("L-BFGS head: chose l2 %.0e on validation", best_l2)
    return history, best_l2


def frozen_probs(model: torch.nn.Module, features: torch.Tensor) -> np.ndarray:
    """Probabilities ``(N,)`` from frozen features ``(N, F)`` through the model's head (``classify``), in eval mode.

    The model's training/eval mode is restored afterwards.
    """
    was_training = model.training
    model.eval()
    try:
        with torch.no_grad():
            return torch.sigmoid(model.classify(features).float()).cpu().numpy()
    finally:
        model.train(was_training)

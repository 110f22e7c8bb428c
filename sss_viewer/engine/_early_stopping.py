"""Early stopping on a validation score, keeping the best epoch's weights (SSS and the whole-channel baselines)."""

from __future__ import annotations

import copy
import logging

import numpy as np
from torch import nn

logger = logging.getLogger(__name__)


class EarlyStopping:
    """Track the best validation score; say when ``patience`` epochs have passed without a better one.

    Parameters
    ----------
    patience : int
        Epochs without a strictly higher finite score before stopping.
    no_best_epoch : int
        ``best_epoch`` until some epoch has a finite score.
    """

    def __init__(self, patience: int, *, no_best_epoch: int = 0):
        self.patience = patience
        self.best_score = -np.inf
        self.best_epoch = no_best_epoch
        self._best_state = None
        self._stale = 0

    def update(self, score: float, epoch: int, model: nn.Module) -> bool:
        """Record epoch ``epoch`` (1-based) with validation ``score``; True when training should stop."""
        if np.isfinite(score) and score > self.best_score:
            self.best_score, self.best_epoch, self._stale = score, epoch, 0
            self._best_state = copy.deepcopy(model.state_dict())
            return False
        self._stale += 1
        if self._stale >= self.patience:
            logger.info("early stopping after epoch %d (best %d)", epoch, self.best_epoch)
            return True
        return False

    def state_dict(self) -> dict:
        """What a training checkpoint needs to resume the rule: best score and epoch, stale count, best weights."""
        return {
            "best_score": float(self.best_score),
            "best_epoch": int(self.best_epoch),
            "stale": int(self._stale),
            "best_state": self._best_state,
        }

    def load_state_dict(self, state: dict) -> None:
        """Resume from :meth:`state_dict` (a checkpoint's)."""
        self.best_score = float(state["best_score"])
        self.best_epoch = int(state["best_epoch"])
        self._stale = int(state["stale"])
        self._best_state = state["best_state"]

    def restore_best(self, model: nn.Module) -> None:
        """Load the best epoch's weights into ``model`` (a no-op when no epoch had a finite score)."""
        if self._best_state is not None:
            model.load_state_dict(self._best_state)

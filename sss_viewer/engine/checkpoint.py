"""A training run's state after its last completed epoch, in one file, for ``train --resume``.

Rank 0 (or the single process) writes it atomically after every epoch: the model's and
optimiser's state, the learning-rate schedule, the early-stopping rule (with the best epoch's
weights), the history so far and the random generators. A run of the same configuration on the
same data that finds it continues after that epoch and ends with the model an uninterrupted run
would have given. The file holds tensors and plain values only; it is read with
``torch.load(weights_only=True)`` (nothing is unpickled).
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
from pathlib import Path

import numpy as np
import pandas as pd
import torch

from sss_viewer.fileio import atomic_write, free_space_note

logger = logging.getLogger(__name__)

__all__ = ["CHECKPOINT_FORMAT", "TrainingCheckpoint", "checkpoint_path_for", "run_fingerprint"]

CHECKPOINT_FORMAT = 1
"""Version of the checkpoint's layout; another version is refused."""


def checkpoint_path_for(model_dir: str | Path) -> Path:
    """Where ``train --out MODEL`` keeps its checkpoint: ``MODEL.checkpoint.pt`` beside the model folder.

    Parameters
    ----------
    model_dir : str or Path
        The model folder ``train`` writes (it need not exist yet).

    Returns
    -------
    Path
        ``model_dir`` with ``.checkpoint.pt`` appended to its last component, in the same parent folder.
    """
    model_dir = Path(model_dir)
    return model_dir.with_name(model_dir.name + ".checkpoint.pt")


def run_fingerprint(config: dict, meta: pd.DataFrame, split: np.ndarray) -> str:
    """Digest of what a resumed run must share with the interrupted one: its configuration, series, labels and split.

    Parameters
    ----------
    config : dict
        ``TrainConfig.to_dict()``.
    meta : DataFrame, shape (n_series, ...)
        The series set's ``meta`` (``subject, run, channel, label`` are used).
    split : ndarray of str, shape (n_series,)
    """
    h = hashlib.sha256(json.dumps(config, sort_keys=True, default=str).encode())
    for column in ("subject", "run", "channel", "label"):
        h.update("\x1f".join(map(str, meta[column].tolist())).encode())
    h.update("\x1f".join(map(str, split)).encode())
    return h.hexdigest()


class TrainingCheckpoint:
    """The checkpoint file of one training run.

    Parameters
    ----------
    path : str or Path
    fingerprint : str
        :func:`run_fingerprint` of this run; a checkpoint of another run is refused, not resumed.
    resume : bool
        Continue from the file when it exists (otherwise :meth:`load` returns None).
    write : bool
        Whether this process writes the file (rank 0 only under ``torchrun``).
    """

    def __init__(self, path: str | Path, fingerprint: str, *, resume: bool = False, write: bool = True):
        self.path = Path(path)
        self.fingerprint = fingerprint
        self.resume = resume
        self.write = write
        self._loaded: dict | None = None

    def load(self) -> dict | None:
        """The state to resume from, or None to start at epoch 1.

        The file is read and checked once; later calls return the same state (the trainer checks it
        before any feature work and resumes from it after).

        Raises
        ------
        ValueError
            The file is unreadable, of another format, or of another run (configuration or data).
        """
        if not self.resume:
            return None
        if self._loaded is not None:
            return self._loaded
        if not self.path.is_file():
            raise ValueError(f"Nothing to resume: no training checkpoint at {self.path} (train without --resume).")
        try:
            state = torch.load(self.path, map_location="cpu", weights_only=True)
        except Exception as exc:  # torch raises several types for a damaged or foreign file
            raise ValueError(f"Cannot resume from {self.path}: not a readable training checkpoint ({exc}).") from None
        if not isinstance(state, dict) or state.get("format") != CHECKPOINT_FORMAT:
            raise ValueError(f"Cannot resume from {self.path}: not a checkpoint of format {CHECKPOINT_FORMAT}.")
        if state.get("fingerprint") != self.fingerprint:
            raise ValueError(
                f"Cannot resume from {self.path}: it is the checkpoint of a run with another configuration or other data "
                "(options, recordings, labels or split differ); run the same command as the interrupted run, or start over "
                "(--overwrite)."
            )
        logger.info("resuming from %s after epoch %d", self.path, state["epoch"])
        self._loaded = state
        return state

    def save(self, state: dict) -> None:
        """Write ``state`` (tensors and plain values) atomically, stamped with the format and fingerprint."""
        if not self.write:
            return
        stamped = {**state, "format": CHECKPOINT_FORMAT, "fingerprint": self.fingerprint}
        try:
            atomic_write(self.path, lambda tmp: torch.save(stamped, tmp))
        except (RuntimeError, OSError) as exc:  # torch's own writer fails as "[enforce fail at inline_container.cc…"
            message, note = f"Cannot write the training checkpoint {self.path}: ", free_space_note(self.path.parent)
            if isinstance(exc, OSError) and exc.errno is not None:
                raise OSError(exc.errno, f"{message}{os.strerror(exc.errno)}{note}") from exc
            raise OSError(f"{message}the write failed{note}") from exc

    def remove(self) -> None:
        """Delete the file (after the finished model is saved)."""
        if self.write:
            self.path.unlink(missing_ok=True)

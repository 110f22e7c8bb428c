"""Training rules that SSS and the whole-channel baselines share, written once.

* :func:`class_balanced_weights` — each class carries half of the training weight;
* :func:`channel_means` — the mean of window probabilities per series (SSS's aggregation);
* :func:`seeded_torch` — a training run's seed and thread count, restored afterwards, so training
  leaves no process-wide state behind (a notebook's own torch RNG and threads are untouched);
* :func:`fit_epochs` — Adam, cosine annealing and early stopping on a validation score.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass

import numpy as np
import torch
from torch import nn
from tqdm.auto import tqdm

from sss_viewer.engine._early_stopping import EarlyStopping

logger = logging.getLogger(__name__)

__all__ = [
    "EpochPlan",
    "channel_means",
    "class_balanced_weights",
    "fit_epochs",
    "seeded_run_on_another_thread",
    "seeded_torch",
]


def class_balanced_weights(labels: np.ndarray, members: np.ndarray) -> np.ndarray:
    """Weights with which each class carries half of the total weight of ``members``, mean 1 over them.

    Parameters
    ----------
    labels : ndarray, shape (n,)
        0/1 labels of every item (series or channel).
    members : ndarray, shape (m,), int
        Indices of the training items the weights are balanced over.

    Returns
    -------
    weights : ndarray, shape (n,), float32
        ``0.5 * m / n_pos`` for positives and ``0.5 * m / n_neg`` for negatives (a class absent
        from ``members`` counts as one item, so no division by zero).
    """
    train = np.asarray(labels)[members]
    n_pos = float(np.sum(train == 1))
    n_neg = len(train) - n_pos
    weights = np.where(np.asarray(labels) == 1, 0.5 / max(n_pos, 1.0), 0.5 / max(n_neg, 1.0)) * len(train)
    return weights.astype(np.float32)


def channel_means(p: np.ndarray, series: np.ndarray, n_series: int) -> np.ndarray:
    """Mean window probability per series.

    Parameters
    ----------
    p : ndarray, shape (n_windows,)
    series : ndarray, shape (n_windows,), int
        Series number of each window.
    n_series : int

    Returns
    -------
    means : ndarray, shape (n_series,), float64
        NaN for a series without windows.
    """
    counts = np.bincount(series, minlength=n_series)
    sums = np.bincount(series, weights=p, minlength=n_series)
    with np.errstate(invalid="ignore", divide="ignore"):
        return sums / counts


_SEEDED_RUN = threading.RLock()
"""Held by the thread inside :func:`seeded_torch` (re-entrant: a run may nest one)."""


def seeded_run_on_another_thread() -> bool:
    """Whether another thread of this process is inside :func:`seeded_torch` now (a run started here would wait)."""
    if _SEEDED_RUN.acquire(blocking=False):
        _SEEDED_RUN.release()
        return False
    return True


@contextlib.contextmanager
def seeded_torch(
    seed: int, num_threads: int | None = None, device: str | torch.device = "cpu"
) -> Iterator[torch.Generator]:
    """Seed torch's global RNG (and set its thread count) for one run; both are restored on exit.

    Model initialisation and dropout draw from the global RNG, so a run seeds it; forking it here
    keeps that seed from leaking into the caller's process. That RNG (and the thread count) is one
    per process: runs started on several threads at once (two viewer sessions training) take turns,
    one seeded run at a time in a process, since interleaved draws from one stream would make each
    run's model depend on the other's timing. A run that has to wait says so in the log.

    Parameters
    ----------
    seed : int
    num_threads : int, optional
        ``torch.set_num_threads`` for the run; None leaves the current count.
    device : str or torch.device
        A CUDA device's RNG is forked too.

    Yields
    ------
    generator : torch.Generator
        A CPU generator seeded with ``seed`` for the run's own draws.
    """
    device = torch.device(device)
    cuda = [device.index or 0] if device.type == "cuda" else []
    if not _SEEDED_RUN.acquire(blocking=False):
        logger.info(
            "Waiting for another training run of this process to finish (torch's random state is one per process)"
        )
        _SEEDED_RUN.acquire()
    try:
        threads = torch.get_num_threads()
        with torch.random.fork_rng(devices=cuda):
            torch.manual_seed(seed)
            if num_threads:
                torch.set_num_threads(num_threads)
            try:
                yield torch.Generator().manual_seed(seed)
            finally:
                torch.set_num_threads(threads)
    finally:
        _SEEDED_RUN.release()


@dataclass(frozen=True)
class EpochPlan:
    """Optimiser, schedule and stopping rule of :func:`fit_epochs`.

    Parameters
    ----------
    epochs : int
    lr : float
        Adam's initial learning rate.
    weight_decay : float
    lr_final_factor : float
        Cosine annealing ends at ``lr * lr_final_factor``.
    patience : int
        Epochs without a better validation score before stopping.
    scheduler_step : {"epoch", "batch"}
        Anneal once per epoch or once per batch.
    batches_per_epoch : int
        Needed for ``scheduler_step="batch"`` (the schedule's length).
    fused : bool
        Adam's fused implementation (``torch.optim.Adam(fused=True)``: one kernel per step on CUDA);
        the same update up to float rounding.
    """

    epochs: int
    lr: float
    weight_decay: float
    lr_final_factor: float
    patience: int
    scheduler_step: str = "epoch"
    batches_per_epoch: int = 1
    fused: bool = False


def fit_epochs(
    model: nn.Module,
    plan: EpochPlan,
    batch_losses: Callable[[int], Iterable[tuple[torch.Tensor, int]]],
    validate: Callable[[], float],
    *,
    unit: str = "windows",
    no_best_epoch: int = 0,
    progress: bool = False,
    desc: str = "epochs",
    checkpoint=None,
    rng: torch.Generator | None = None,
) -> tuple[list[dict], int]:
    """Adam epochs with cosine annealing and early stopping; ``model`` ends with its best epoch's weights.

    Parameters
    ----------
    model : nn.Module
    plan : EpochPlan
    batch_losses : callable
        ``batch_losses(epoch)`` yields ``(loss, n_items)`` per batch, the loss computed with the
        model's current weights; each is minimised before the next batch is drawn.
    validate : callable
        Validation score (higher is better; NaN counts as no improvement) after an epoch.
    unit : str
        What a batch's items are, for the history (``train_<unit>_per_s``) and the log.
    no_best_epoch : int
        Best epoch reported when no epoch had a finite score.
    progress : bool
        A progress bar over epochs.
    desc : str
    checkpoint : TrainingCheckpoint, optional
        Saved after every epoch (:mod:`sss_viewer.engine.checkpoint`); a state it loads is resumed
        (weights, optimiser, schedule, early stopping, history, generators) after its last epoch.
    rng : torch.Generator, optional
        The generator ``batch_losses`` draws its batches from, saved and restored with the checkpoint
        (torch's global generator, which dropout draws from, always is).

    Returns
    -------
    history : list of dict
        Per epoch: ``epoch`` (1-based), ``train_loss`` (mean over items), ``val_auc``, ``lr`` (the
        epoch's initial learning rate), ``seconds`` (training and validation) and
        ``train_<unit>_per_s`` (training only).
    best_epoch : int
    """
    fused = {"fused": True} if plan.fused else {}
    optimiser = torch.optim.Adam(model.parameters(), lr=plan.lr, weight_decay=plan.weight_decay, **fused)
    per_batch = plan.scheduler_step == "batch"
    t_max = plan.epochs * (plan.batches_per_epoch if per_batch else 1)
    scheduler = torch.optim.lr_scheduler.CosineAnnealingLR(
        optimiser, T_max=max(t_max, 1), eta_min=plan.lr * plan.lr_final_factor
    )
    history: list[dict] = []
    stopper = EarlyStopping(plan.patience, no_best_epoch=no_best_epoch)
    first_epoch, stopped = 0, False
    resumed = checkpoint.load() if checkpoint is not None else None
    if resumed is not None:
        first_epoch, stopped, history = _restore(resumed, model, optimiser, scheduler, stopper, rng)
    for epoch in tqdm(
        range(first_epoch, plan.epochs), desc=desc, unit="epoch", disable=not progress or stopped or None
    ):
        if stopped:
            break
        model.train()
        lr = optimiser.param_groups[0]["lr"]
        t0 = time.perf_counter()
        losses, counts = [], []
        for loss, n_items in batch_losses(epoch):
            optimiser.zero_grad(set_to_none=True)
            loss.backward()
            optimiser.step()
            if per_batch:
                scheduler.step()
            losses.append(loss.detach())  # read once per epoch: no device sync per batch
            counts.append(n_items)
        if not per_batch:
            scheduler.step()
        total, n_seen = _weighted_total(losses, counts), sum(counts)
        train_seconds = time.perf_counter() - t0
        val_auc = float(validate())
        record = {
            "epoch": epoch + 1,
            "train_loss": total / max(n_seen, 1),
            "val_auc": val_auc,
            "lr": lr,
            "seconds": time.perf_counter() - t0,
            f"train_{unit}_per_s": n_seen / train_seconds if train_seconds > 0 else float("inf"),
        }
        history.append(record)
        logger.info(
            "epoch %d: loss %.4f, val channel AUC %.3f, %.0f %s/s",
            epoch + 1,
            record["train_loss"],
            val_auc,
            record[f"train_{unit}_per_s"],
            unit,
        )
        stopped = stopper.update(val_auc, epoch + 1, model)
        if checkpoint is not None:
            checkpoint.save(_epoch_state(epoch + 1, stopped, model, optimiser, scheduler, stopper, history, rng))
    stopper.restore_best(model)
    return history, stopper.best_epoch


def _weighted_total(losses: list[torch.Tensor], counts: list[int]) -> float:
    """``sum_k float(losses[k]) * counts[k]`` in batch order, the losses (0-d tensors) read in one transfer."""
    values = torch.stack([loss.reshape(()) for loss in losses]).cpu().tolist() if losses else []
    total = 0.0
    for value, n in zip(values, counts, strict=True):
        total += value * n
    return total


def _epoch_state(epoch, stopped, model, optimiser, scheduler, stopper, history, rng) -> dict:
    """Everything :func:`fit_epochs` needs to go on after ``epoch`` (1-based) as if never interrupted."""
    state = {
        "epoch": epoch,
        "stopped": stopped,
        "model": model.state_dict(),
        "optimiser": optimiser.state_dict(),
        "scheduler": scheduler.state_dict(),
        "stopper": stopper.state_dict(),
        "history": history,
        "torch_rng": torch.get_rng_state(),
    }
    if rng is not None:
        state["rng"] = rng.get_state()
    if torch.cuda.is_available() and torch.cuda.is_initialized():
        state["cuda_rng"] = torch.cuda.get_rng_state()
    return state


def _restore(state, model, optimiser, scheduler, stopper, rng) -> tuple[int, bool, list[dict]]:
    """Load an :func:`_epoch_state`; returns the epochs done, whether early stopping had ended the run, the history."""
    model.load_state_dict(state["model"])
    optimiser.load_state_dict(state["optimiser"])
    scheduler.load_state_dict(state["scheduler"])
    stopper.load_state_dict(state["stopper"])
    torch.set_rng_state(state["torch_rng"])
    if rng is not None and "rng" in state:
        rng.set_state(state["rng"])
    if "cuda_rng" in state and torch.cuda.is_available():
        torch.cuda.set_rng_state(state["cuda_rng"])
    return int(state["epoch"]), bool(state["stopped"]), list(state["history"])

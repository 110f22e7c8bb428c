"""The SSS training loop (paper Algorithm 1) with early stopping, calibration and threshold choice.

Only this module and the CLI know the whole sequence: recordings → series set → split →
window indices → epochs of uniform batches without replacement → channel loss → best epoch on
validation → calibrator fit on validation windows → channel threshold chosen on validation.
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np
import pandas as pd
import torch
import torch.nn.functional as F
from tqdm.auto import tqdm

from sss_viewer.engine import _distributed as distributed
from sss_viewer.engine._execution import Execution, resolve_execution
from sss_viewer.engine._feature_memo import FeatureMemo, front_end_digest
from sss_viewer.engine._fit import (
    EpochPlan,
    channel_means,
    class_balanced_weights,
    fit_epochs,
    seeded_run_on_another_thread,
    seeded_torch,
)
from sss_viewer.engine._head_fit import fit_head_lbfgs, frozen_probs
from sss_viewer.engine.bundle import ModelBundle
from sss_viewer.engine.calibration import make_calibrator
from sss_viewer.engine.checkpoint import TrainingCheckpoint, run_fingerprint
from sss_viewer.engine.config import TrainConfig
from sss_viewer.engine.device import resolve_device
from sss_viewer.engine.inference import predict_window_probs
from sss_viewer.io.recording import Recording
from sss_viewer.metrics import binary_auc, choose_threshold, evaluate_scores
from sss_viewer.models import build_window_model
from sss_viewer.preprocessing.cache import SeriesCache
from sss_viewer.preprocessing.config import PreprocessConfig, native_rates
from sss_viewer.windows.sampler import epoch_batches
from sss_viewer.windows.series_set import SeriesSet, build_series_set
from sss_viewer.windows.splits import SPLIT_NAMES, UNUSED, assign_splits
from sss_viewer.windows.store import DeviceWindows, WindowIndex

logger = logging.getLogger(__name__)


FEATURE_CACHE_BYTES = 2 << 30
"""Largest feature matrix (bytes) kept for a local model with a frozen front end (see ``_frozen_features``)."""


INITIALISATION_WINDOWS = 1024
"""Training windows shown to a local model's ``initialise_from_data`` (MiniRocket's bias quantiles)."""


def channel_loss(
    logits: torch.Tensor,
    series: torch.Tensor,
    labels: torch.Tensor,
    series_weight: torch.Tensor | None = None,
    window_loss_weight: float = 0.0,
    all_reduce: Callable[[torch.Tensor], torch.Tensor] | None = None,
) -> torch.Tensor:
    """SSS loss: BCE of the mean window probability of each series present in the batch.

    Written without data-dependent shapes (no ``torch.unique``, no boolean indexing): the window
    probabilities are summed per series over all ``n_series`` and a series absent from the batch
    gets loss weight 0, whatever its label or weight. A CUDA device therefore never waits for the
    host to learn which series a batch holds.

    Parameters
    ----------
    logits : Tensor, shape (B,)
        Window logits.
    series : Tensor, shape (B,), int64
        Series number of each window.
    labels : Tensor, shape (n_series,), float
        0/1 label of every series.
    series_weight : Tensor, shape (n_series,), optional
        Per-series loss weight (class balancing).
    window_loss_weight : float
        Adds this times the window-level BCE (each window inherits its series' label).
    all_reduce : callable, optional
        Distributed training, where a series' windows of one global batch fall on several ranks:
        a differentiable sum over ranks (:func:`sss_viewer.engine._distributed.sum_over_ranks`). It
        is applied to the dense per-series sums and window counts (shape (n_series,)) and to the
        window-level BCE sum before any mean is taken, so every rank gets the loss of the whole
        global batch (not a mean of per-rank losses); its gradient, averaged over ranks by DDP, is
        the single-process gradient of that batch.

    Returns
    -------
    loss : Tensor, shape ()
        ``sum_i w_i BCE(mean_{w in W_i} sigmoid(f(w)), y_i) / sum_i w_i`` over the series i in the
        batch (``w_i = 1`` without ``series_weight``), plus ``window_loss_weight`` times the mean
        window-level BCE.
    """
    reduce = all_reduce if all_reduce is not None else _unchanged
    probs = torch.sigmoid(logits.float())
    sums = reduce(torch.zeros(len(labels), device=logits.device).index_add(0, series, probs))
    counts = reduce(torch.zeros(len(labels), device=logits.device).index_add(0, series, torch.ones_like(probs)))
    present = counts > 0
    mean_p = (sums / counts.clamp(min=1.0)).clamp(1e-6, 1 - 1e-6)
    target = torch.where(present, labels, 0.0)  # whatever an absent series' label (-1: unknown), its loss is finite
    weight = present.to(probs.dtype) if series_weight is None else torch.where(present, series_weight, 0.0)
    losses = F.binary_cross_entropy(mean_p, target, reduction="none")
    loss = (losses * weight).sum() / weight.sum()
    if window_loss_weight > 0:
        window_sum = reduce(F.binary_cross_entropy_with_logits(logits.float(), labels[series], reduction="sum"))
        loss = loss + window_loss_weight * window_sum / counts.sum()
    return loss


def _unchanged(tensor: torch.Tensor) -> torch.Tensor:
    """The identity: :func:`channel_loss`'s sum over ranks in a single process."""
    return tensor


class _Subset:
    """Windows of one split, with their series numbers and absolute starts."""

    def __init__(self, series_set: SeriesSet, mask: np.ndarray, length: int, stride: int):
        lengths = np.where(mask, series_set.store.lengths, 0)
        self.index = WindowIndex.build(lengths, length, stride)
        self.starts = self.index.absolute_starts(series_set.store)
        self.series = self.index.series
        self.members = np.flatnonzero(mask)

    def __len__(self) -> int:
        return len(self.series)


def another_training_run_in_progress() -> bool:
    """Whether a training run on another thread of this process is under way: :func:`train` called now waits for it.

    Runs of one process take turns on torch's one random stream (:func:`sss_viewer.engine._fit.seeded_torch`), so a
    caller (the viewer's training panel) can say that it waits rather than seem to train slowly.
    """
    return seeded_run_on_another_thread()


def train(
    recordings: Sequence[Recording],
    config: TrainConfig,
    *,
    progress: bool = True,
    series_set: SeriesSet | None = None,
    cache: SeriesCache | None = None,
    split: np.ndarray | None = None,
    feature_memo: FeatureMemo | None = None,
    checkpoint: str | Path | None = None,
    resume: bool = False,
) -> ModelBundle | None:
    """Train an SSS model on labelled recordings.

    Parameters
    ----------
    recordings : sequence of Recording
        Recordings with SOZ labels. Channels without labels are not used.
    config : TrainConfig
    progress : bool
        Progress bars over batches.
    series_set : SeriesSet, optional
        Already preprocessed series (skips preprocessing; must match ``config.preprocess``).
    cache : SeriesCache, optional
        On-disk cache of preprocessed channels: series are memory-mapped and windows streamed
        from disk, so memory stays bounded by the batch, not the cohort.
    split : ndarray of str, shape (n_series,), optional
        A given assignment of every series of ``series_set`` to ``"train"``, ``"val"``, ``"test"`` or
        ``"unused"`` (experiment protocols such as leave-one-centre-out); ``config.split`` decides
        it otherwise.
    feature_memo : FeatureMemo, optional
        Frozen-front-end features shared by runs on the same ``series_set`` (an experiment's
        ablation rows); None computes them for this run only.
    checkpoint : str or Path, optional
        A file the state after every completed epoch is written to (atomically; by rank 0 under
        ``torchrun``), see :mod:`sss_viewer.engine.checkpoint`. The caller removes it once the
        model is saved.
    resume : bool
        Continue from ``checkpoint`` (which must exist and come from a run of the same configuration
        on the same data) after its last epoch; the result equals an uninterrupted run's.

    Returns
    -------
    ModelBundle or None
        The best epoch's model, its calibrator, threshold and a record of the run in ``info``
        (None on the ranks other than 0 of a ``torchrun`` job: :mod:`sss_viewer.engine._distributed`); a
        native-rate model (``preprocess.target_sfreq`` None) records the rates it was trained on
        in ``preprocess.native_sfreqs``.

    Raises
    ------
    ValueError
        No labelled channel, a split without both classes, (native rates) recordings sampled at
        different rates without ``config.mixed_native_rates``, the L-BFGS head under ``torchrun``, or
        ``resume`` without a matching checkpoint.
    """
    device = resolve_device(config.device)
    ranks = distributed.current()
    if ranks.distributed and config.head_solver == "lbfgs":  # refused before any preprocessing or feature work
        raise ValueError("head_solver='lbfgs' fits the head in one process; train it without torchrun (or use 'adam').")
    if resume and checkpoint is None:
        raise ValueError("resume=True needs the checkpoint file to resume from (checkpoint=...).")
    if checkpoint is not None and config.head_solver == "lbfgs":
        if resume:
            raise ValueError(
                "head_solver='lbfgs' fits the head in one step, without epochs: there is nothing to resume."
            )
        checkpoint = None
    if ranks.distributed and device.type == "cuda":
        device = torch.device("cuda", ranks.local_rank)
    with seeded_torch(config.seed, config.num_threads, device) as generator:
        return _train(
            recordings,
            config,
            device,
            generator,
            progress=progress,
            series_set=series_set,
            cache=cache,
            split=split,
            feature_memo=feature_memo,
            checkpoint=checkpoint,
            resume=resume,
        )


def default_split(meta: pd.DataFrame, config) -> np.ndarray:
    """Each series' split as :func:`train` draws it when none is given: labelled series by ``config``, others unused.

    Parameters
    ----------
    meta : DataFrame
        A series set's ``meta`` (one row per series; ``label`` -1 when unknown).
    config : TrainConfig
        Its ``split``, ``val_fraction``, ``test_fraction``, ``balance`` and ``seed``.

    Returns
    -------
    split : ndarray, shape (n_series,), object
        ``"train"``, ``"val"``, ``"test"`` or :data:`UNUSED` per series.
    """
    labelled = meta["label"].to_numpy() >= 0
    split = np.full(len(meta), UNUSED, dtype=object)
    split[labelled] = assign_splits(
        meta[labelled],
        config.split,
        val_fraction=config.val_fraction,
        test_fraction=config.test_fraction,
        balance=config.balance,
        seed=config.seed,
    )
    return split


def _train(
    recordings, config, device, generator, *, progress, series_set, cache, split, feature_memo, checkpoint, resume
) -> ModelBundle | None:
    """:func:`train` inside its seeded torch state."""
    started = time.perf_counter()
    if config.preprocess.target_sfreq is None and series_set is None:  # refuse before preprocessing
        native_rates([r.sfreq for r in recordings if r.soz is not None], allow_mixed=config.mixed_native_rates)
    if series_set is None:
        series_set = build_series_set(
            recordings, config.preprocess, min_length=config.window_length, progress=progress, cache=cache
        )
    meta = series_set.meta
    labelled = meta["label"].to_numpy() >= 0
    if not labelled.any():
        _refuse_short_recordings(recordings, config)
        raise ValueError("None of the training recordings has SOZ labels; training needs labelled channels.")
    if split is None:
        split = default_split(meta, config)
    else:
        split = np.asarray(split, dtype=object)
        if split.shape != (len(meta),):
            raise ValueError(f"split must give one entry per series ({len(meta)}); got shape {split.shape}.")
        split = np.where(labelled, split, UNUSED)
    labels_np = meta["label"].to_numpy().astype(np.float32)
    for name in ("train", "val"):
        classes = set(labels_np[split == name].astype(int))
        if classes != {0, 1}:
            raise ValueError(
                f"The {name} split has channels of class(es) {sorted(int(c) for c in classes)} only; it needs SOZ and non-SOZ "
                f"channels. Use more patients or another seed/split."
            )
    if checkpoint is not None:  # checked before any feature work: a wrong checkpoint fails fast
        fingerprint = run_fingerprint(config.to_dict(), meta, split)
        checkpoint = TrainingCheckpoint(checkpoint, fingerprint, resume=resume, write=distributed.current().is_main)
        if resume:
            checkpoint.load()
    L = config.window_length
    train_set = _Subset(series_set, split == "train", L, config.train_stride)
    val_set = _Subset(series_set, split == "val", L, config.val_stride)
    logger.info(
        "training on %d series (%d windows), validating on %d series (%d windows), device %s",
        len(train_set.members),
        len(train_set),
        len(val_set.members),
        len(val_set),
        device,
    )
    model = build_window_model(config.backbone, L, **config.model_params).to(device)
    if hasattr(model, "initialise_from_data"):  # data-dependent set-up (MiniRocket's biases)
        pick = torch.randperm(len(train_set), generator=generator)[:INITIALISATION_WINDOWS].numpy()
        model.initialise_from_data(torch.from_numpy(series_set.store.windows(train_set.starts[pick], L)).to(device))
    if config.head_solver == "lbfgs" and not getattr(model, "has_frozen_front_end", False):
        raise ValueError(
            f"head_solver='lbfgs' needs a local model with a frozen front end (minirocket, or rocket without "
            f"affine RevIN); backbone {config.backbone!r} with {config.model_params} has none. Use head_solver='adam'."
        )
    labels_t = torch.from_numpy(labels_np).to(device)
    series_weight = _series_weights(config, labels_np, train_set.members, device)
    frozen = _frozen_features(model, series_set.store, (train_set.starts, val_set.starts), L, device, feature_memo)
    extra_info = {}
    if config.head_solver == "lbfgs":
        if frozen is None:
            raise ValueError(
                f"head_solver='lbfgs' keeps every window's features in memory; {len(train_set) + len(val_set)} windows x "
                f"{model.n_features} features exceed FEATURE_CACHE_BYTES ({FEATURE_CACHE_BYTES / 1e9:.1f} GB). "
                f"Use a larger train_stride/val_stride or head_solver='adam'."
            )
        train_series = torch.from_numpy(train_set.series).to(device)
        history, extra_info["head_l2"] = fit_head_lbfgs(
            model,
            frozen[0],
            frozen[1],
            lambda logits: channel_loss(logits, train_series, labels_t, series_weight, config.window_loss_weight),
            lambda p: _selection_auc(p, val_set, labels_np, config.calibrator),
            config.head_l2,
            config.head_max_iter,
        )
        best_epoch = 0
        if config.refit_on_train_val:
            extra_info["refit_history"] = _refit_head_on_train_val(
                model, frozen, train_set, val_set, labels_np, labels_t, config, extra_info["head_l2"], device
            )
    else:
        windows_path = frozen is None and not getattr(model, "reads_series", False)
        execution = resolve_execution(
            config,
            device,
            series_set.store,
            windows_path,
            planned_windows=min(len(train_set), config.windows_per_epoch or len(train_set)) * config.epochs,
        )
        extra_info["execution"] = execution.to_dict()
        logger.info("execution on %s: %s", device, execution.to_dict())
        history, best_epoch = _train_epochs(
            model,
            config,
            series_set,
            train_set,
            val_set,
            labels_np,
            labels_t,
            series_weight,
            frozen,
            generator,
            device,
            progress,
            checkpoint,
            execution,
        )
    model.eval()
    if not distributed.current().is_main:  # rank 0 calibrates and returns the model
        return None

    p_val = frozen_probs(model, frozen[1]) if frozen is not None else None
    calibrator, threshold, val_metrics = _calibrate(
        model, series_set, train_set, val_set, labels_np, config, device, p_val
    )
    info = {
        "train_config": config.to_dict(),
        "split": _split_record(meta, split, config.split),
        "history": history,
        "best_epoch": best_epoch,
        **extra_info,
        "val_metrics": val_metrics,
        "excluded_channels": series_set.excluded.astype({"recording": int}).to_dict(orient="records"),
        "train_seconds": time.perf_counter() - started,
        "device": str(device),
    }
    return ModelBundle(
        model=model.cpu(),
        preprocess=_with_native_rates(config, meta, split),
        window_length=L,
        inference_stride=config.inference_stride,
        calibrator=calibrator,
        threshold=threshold,
        info=info,
    )


def _refuse_short_recordings(recordings: Sequence[Recording], config: TrainConfig) -> None:
    """Say so when the labelled recordings exist but every one is shorter than the training window.

    Their channels are dropped before labels are counted, which would otherwise read as "no labels".
    """
    labelled = [r for r in recordings if r.soz is not None]
    if not labelled:
        return
    lengths = []
    for r in labelled:
        try:
            lengths.append((config.preprocess.output_length(r.n_times, r.sfreq), r))
        except (ValueError, ZeroDivisionError, AttributeError):
            return
    longest, rec = max(lengths, key=lambda x: x[0])
    if longest >= config.window_length:
        return
    rate = config.preprocess.output_sfreq(rec.sfreq)
    raise ValueError(
        f"The training window ({config.window_length} preprocessed samples = {config.window_length / rate:.2f} s at "
        f"{rate:g} Hz) is longer than every training recording (the longest, {rec.label}, gives {longest} samples = "
        f"{longest / rate:.2f} s); pass a --window-length of at most {longest}, or longer recordings."
    )


def _with_native_rates(config: TrainConfig, meta: pd.DataFrame, split: np.ndarray) -> PreprocessConfig:
    """The model's preprocessing: a native-rate config records the rates of the series it was fit on.

    Parameters
    ----------
    meta : DataFrame, shape (n_series, ...)
        The series set's ``meta`` (``sfreq`` is the preprocessed rate: native / ``pool_stride``).
    split : ndarray of str, shape (n_series,)
    """
    preprocess = config.preprocess
    if preprocess.target_sfreq is not None:
        return preprocess
    used = np.isin(split, ("train", "val"))
    rates = meta["sfreq"].to_numpy()[used] * preprocess.pool_stride
    trained = native_rates(rates, allow_mixed=config.mixed_native_rates)
    shown = ", ".join(f"{r:g}" for r in trained)
    logger.info("native-rate model: trained on %s Hz recordings; other rates will be refused.", shown)
    return dataclasses.replace(preprocess, native_sfreqs=trained)


def _series_weights(config, labels_np: np.ndarray, members: np.ndarray, device) -> torch.Tensor | None:
    """Class-balanced per-series loss weights ``(n_series,)`` over ``members``, or None without ``class_balanced_loss``."""
    if not config.class_balanced_loss:
        return None
    return torch.from_numpy(class_balanced_weights(labels_np, members)).to(device)


def _refit_head_on_train_val(model, frozen, train_set, val_set, labels_np, labels_t, config, l2, device) -> list[dict]:
    """Fit the L-BFGS head once more, at the chosen penalty ``l2``, on training and validation windows together.

    ``frozen`` holds the training and validation windows' features (``(N_train, F)``, ``(N_val, F)``);
    the validation score it logs is in-sample and chooses nothing.
    """
    members = np.concatenate([train_set.members, val_set.members])
    both_series = torch.from_numpy(np.concatenate([train_set.series, val_set.series])).to(device)
    weight = _series_weights(config, labels_np, members, device)
    history, _ = fit_head_lbfgs(
        model,
        torch.cat([frozen[0], frozen[1]]),
        frozen[1],
        lambda logits: channel_loss(logits, both_series, labels_t, weight, config.window_loss_weight),
        lambda p: _selection_auc(p, val_set, labels_np, config.calibrator),
        (l2,),
        config.head_max_iter,
    )
    logger.info("refitted the head on %d training + validation series at l2 %.0e", len(members), l2)
    return history


def _train_epochs(
    model,
    config,
    series_set,
    train_set,
    val_set,
    labels_np,
    labels_t,
    series_weight,
    frozen,
    generator,
    device,
    progress,
    checkpoint=None,
    execution: Execution | None = None,
) -> tuple[list[dict], int]:
    """Algorithm 1: Adam epochs over (a draw of) the training windows, early stopping on validation channel AUC.

    Returns the per-epoch history and the best epoch (1-based; -1 if no epoch had a finite AUC),
    whose weights ``model`` holds on return. ``execution`` (default: fp32, eager, host gather) says
    whether batches are gathered on the device, the forward runs under bf16 autocast and through
    :func:`torch.compile`.
    """
    execution = execution or Execution()
    L = config.window_length
    ranks = distributed.current()
    n_epoch_windows = min(len(train_set), config.windows_per_epoch or len(train_set))
    n_batches = -(-n_epoch_windows // (config.batch_size * ranks.world_size))  # steps per rank
    plan = EpochPlan(
        epochs=config.epochs,
        lr=config.lr,
        weight_decay=config.weight_decay,
        lr_final_factor=config.lr_final_factor,
        patience=config.patience,
        scheduler_step=config.scheduler_step,
        batches_per_epoch=n_batches,
        fused=device.type == "cuda" and execution != Execution(),
    )
    train_starts = train_set.starts
    train_series = torch.from_numpy(train_set.series)
    on_device = _DeviceBatches(series_set.store, train_set, device) if execution.device_windows else None
    logits_of = _WindowLogits(torch.compile(model, mode=execution.compile_mode) if execution.compile else model)
    all_reduce = None
    if ranks.distributed:  # DDP averages the gradients; the channel loss sums per-series sums over ranks
        from torch.nn.parallel import DistributedDataParallel

        all_reduce = distributed.sum_over_ranks
        logits_of = DistributedDataParallel(logits_of, device_ids=[device.index] if device.type == "cuda" else None)

    def batch_losses(epoch: int):
        batches = epoch_batches(
            len(train_set),
            config.batch_size,
            generator,
            limit=n_epoch_windows,
            rank=ranks.rank,
            world_size=ranks.world_size,
        )
        if on_device is not None:  # the epoch's indices go to the device in one copy
            batches = on_device.split(batches)
        bar = tqdm(
            batches,
            total=n_batches,
            desc=f"epoch {epoch + 1}/{config.epochs}",
            unit="batch",
            disable=not (progress and ranks.is_main) or None,
        )
        for idx in bar:
            head_only = True
            if on_device is not None:
                x, s, head_only = on_device.windows(idx, L), on_device.series[idx], False
            else:
                if frozen is not None:
                    x = frozen[0][idx.to(device)]
                elif getattr(model, "reads_series", False):  # windows read within their channel
                    x = model.store_window_features(series_set.store, train_starts[idx.numpy()], L).to(device)
                else:
                    x = torch.from_numpy(series_set.store.windows(train_starts[idx.numpy()], L)).to(
                        device, non_blocking=True
                    )
                    head_only = False
                s = train_series[idx].to(device)
            with execution.autocast(device):
                logits = logits_of(x, head_only)
            loss = channel_loss(logits, s, labels_t, series_weight, config.window_loss_weight, all_reduce=all_reduce)
            yield loss, len(idx)

    def validate() -> float:
        auc = None
        if ranks.is_main:  # rank 0 validates; every rank gets its score, so all stop at the same epoch
            if frozen is not None:
                p_val = frozen_probs(model, frozen[1])
            else:
                store, batch_size = series_set.store, 1024
                if on_device is not None:
                    store, batch_size = on_device.store, max(batch_size, config.batch_size)
                with execution.autocast(device):
                    p_val = predict_window_probs(model, store, val_set.starts, L, device=device, batch_size=batch_size)
            auc = _selection_auc(p_val, val_set, labels_np, config.calibrator)
        return distributed.broadcast_float(auc, ranks)

    with _compile_errors_fall_back(execution.compile and config.compile == "auto"):
        return fit_epochs(
            model, plan, batch_losses, validate, unit="windows", no_best_epoch=-1, checkpoint=checkpoint, rng=generator
        )


def _compile_errors_fall_back(enabled: bool) -> contextlib.AbstractContextManager:
    """With ``compile="auto"``, a frame :func:`torch.compile` cannot compile runs eagerly instead of failing."""
    if not enabled:
        return contextlib.nullcontext()
    import torch._dynamo

    return torch._dynamo.config.patch(suppress_errors=True)


class _DeviceBatches:
    """The training windows' starts and series numbers, and the store's samples, on the training device.

    Parameters
    ----------
    store : SeriesStore
    subset : _Subset
        The training windows.
    device : torch.device
    """

    def __init__(self, store, subset: _Subset, device: torch.device):
        self.store = DeviceWindows(store, device)
        self.starts = torch.from_numpy(subset.starts).to(device)
        self.series = torch.from_numpy(subset.series).to(device)
        self.device = device
        logger.info("training windows gathered on %s (%.0f MB of series)", device, store.n_samples * 4 / 1e6)

    def split(self, batches) -> list[torch.Tensor]:
        """An epoch's index batches (CPU tensors, shape (B_k,)) as slices of one copy on the device."""
        batches = list(batches)
        if not batches:
            return []
        sizes = [len(b) for b in batches]
        return list(torch.cat(batches).to(self.device).split(sizes))

    def windows(self, idx: torch.Tensor, length: int) -> torch.Tensor:
        """Windows ``(B, length)`` of training-window numbers ``idx`` (shape (B,), on the device)."""
        return self.store.windows(self.starts[idx], length)


class _WindowLogits(torch.nn.Module):
    """One forward for every training path (what DDP wraps): the head on features, or the whole model on windows."""

    def __init__(self, model: torch.nn.Module):
        super().__init__()
        self.model = model

    def forward(self, x: torch.Tensor, head_only: bool) -> torch.Tensor:
        return self.model.classify(x) if head_only else self.model(x)


def _frozen_features(model, store, start_sets, L, device, memo: FeatureMemo | None) -> list[torch.Tensor] | None:
    """Features of fixed window sets under a model's frozen front end, computed once; None if not applicable.

    A local model whose front end is not trained (MiniRocket: fixed kernels and fitted biases)
    exposes ``frozen_features(x)`` and ``classify(features)``; its features are computed once per
    window here, so each epoch trains only the head. Skipped (None) when the model has no frozen
    front end or the features would take more than :data:`FEATURE_CACHE_BYTES`. Features of the same
    windows under the same (untrained) model are reused from earlier runs when a ``memo`` is given.
    Under ``torchrun`` each rank computes a contiguous shard of every window set and the shards are
    gathered, so every rank holds all features (its batches draw from all training windows).
    """
    if not getattr(model, "has_frozen_front_end", False):
        return None
    n_windows = sum(len(starts) for starts in start_sets)
    needed = n_windows * model.n_features * 4
    if needed > FEATURE_CACHE_BYTES:
        logger.info(
            "frozen features of %d windows would need %.1f GB: computing them per batch", n_windows, needed / 1e9
        )
        return None
    ranks = distributed.current()
    if ranks.distributed:
        memo = None  # what one rank remembers, the others may not: each run computes its shard
    out, n_computed = [], 0
    digest = front_end_digest(model) if memo is not None else ""
    model.eval()
    with torch.no_grad():
        for starts in start_sets:
            feats = memo.recall(store, digest, starts, L, device) if memo is not None else None
            if feats is None:
                lo, hi = distributed.shard_bounds(len(starts), ranks)
                feats = distributed.gather_rows(
                    _window_features(model, store, starts[lo:hi], L, device), len(starts), ranks
                )
                if memo is not None:
                    memo.remember(store, digest, starts, L, device, feats)
                n_computed += len(starts)
            else:
                logger.info("reusing the frozen features of %d windows from an earlier run", len(starts))
            out.append(feats)
    model.train()
    shards = f" ({ranks.world_size} ranks, one shard each)" if ranks.distributed else ""
    logger.info(
        "frozen features of %d windows (%.0f MB) ready, %d computed now%s", n_windows, needed / 1e6, n_computed, shards
    )
    return out


def _window_features(model, store, starts: np.ndarray, L: int, device) -> torch.Tensor:
    """Frozen-front-end features ``(len(starts), n_features)`` of windows of ``store``."""
    if getattr(model, "reads_series", False):
        return model.store_window_features(store, starts, L).to(device)
    parts = [
        model.frozen_features(torch.from_numpy(store.windows(starts[lo : lo + 256], L)).to(device))
        for lo in range(0, len(starts), 256)
    ]
    return torch.cat(parts) if parts else torch.empty(0, model.n_features, device=device)


def _selection_auc(p_val: np.ndarray, val_set: _Subset, labels_np: np.ndarray, calibrator: str) -> float:
    """Validation channel AUC used for early stopping, measured the way the model will be used.

    The channel score is the mean of *calibrated* window probabilities, and calibration can
    reorder channel means (a channel with many middling windows can fall below one with a few
    confident ones), so the raw mean is a poor guide. Isotonic regression fitted on the validation
    windows stands in for the configured calibrator (Venn-Abers is built from the same isotonic
    fits); with ``calibrator="none"`` the raw mean is used.
    """
    window_labels = labels_np[val_set.series].astype(int)
    if calibrator != "none":
        p_val = make_calibrator("isotonic").fit(p_val, window_labels).transform(p_val)[0]
    scores = channel_means(p_val, val_set.series, len(labels_np))[val_set.members]
    return binary_auc(scores, labels_np[val_set.members].astype(int))


def _calibrate(model, series_set, train_set, val_set, labels_np, config, device, p_val=None):
    """Fit the calibrator on window probabilities and pick the channel threshold on validation.

    ``p_val`` (the validation windows' raw probabilities) is computed here unless given.
    """
    L = config.window_length
    if p_val is None:
        p_val = predict_window_probs(model, series_set.store, val_set.starts, L, device=device)
    fit_p, fit_y = p_val, labels_np[val_set.series]
    if config.calibrate_on == "train+val":
        p_train = predict_window_probs(model, series_set.store, train_set.starts, L, device=device)
        fit_p = np.concatenate([p_train, p_val])
        fit_y = np.concatenate([labels_np[train_set.series], fit_y])
    calibrator = make_calibrator(config.calibrator).fit(fit_p, fit_y.astype(int))
    p_cal = calibrator.transform(p_val)[0]
    n_series = len(labels_np)
    scores = channel_means(p_cal, val_set.series, n_series)[val_set.members]
    y = labels_np[val_set.members].astype(int)
    threshold = float(choose_threshold(scores, y, criterion=config.threshold_criterion))
    metrics = evaluate_scores(scores, y, threshold)
    logger.info("validation after calibration: %s", {k: round(v, 3) for k, v in metrics.items()})
    return calibrator, threshold, metrics


def _split_record(meta, split, mode) -> dict:
    """Which subjects (patient split) or channels (channel split) went where."""
    record = {"mode": mode}
    for name in SPLIT_NAMES:
        rows = meta[split == name]
        record[name] = sorted(rows["subject"].unique().tolist())
        if mode == "channel":
            record[f"{name}_channels"] = [
                f"{s}|{r}|{c}" for s, r, c in zip(rows["subject"], rows["run"], rows["channel"])
            ]
    return record

"""The SSS training loop (paper Algorithm 1) with early stopping, calibration and threshold choice.

Only this module and the CLI know the whole sequence: recordings → series set → split →
window indices → epochs of uniform batches without replacement → channel loss → best epoch on
validation → calibrator fit on validation windows → channel threshold chosen on validation.
"""

from __future__ import annotations

import dataclasses
import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
import torch
import torch.nn.functional as F
from tqdm.auto import tqdm

from sss_viewer import feature_memo
from sss_viewer._validate import check_option, check_positive_int, check_range
from sss_viewer.cache import SeriesCache
from sss_viewer.calibration import make_calibrator
from sss_viewer.checkpoint import ModelBundle
from sss_viewer.dataset import SeriesSet, build_series_set
from sss_viewer.device import resolve_device
from sss_viewer.fitting import (
    EpochPlan,
    channel_means,
    class_balanced_weights,
    fit_epochs,
    seeded_torch,
)
from sss_viewer.head_fit import fit_head_lbfgs, frozen_probs
from sss_viewer.inference import predict_window_probs
from sss_viewer.metrics import binary_auc, choose_threshold, evaluate_scores
from sss_viewer.models import MODEL_REGISTRY, build_window_model
from sss_viewer.preprocess import PreprocessConfig, native_rates, preprocess_preset
from sss_viewer.recording import Recording
from sss_viewer.splits import SPLIT_MODES, SPLIT_NAMES, UNUSED, assign_splits
from sss_viewer.windows import WindowIndex, epoch_batches

logger = logging.getLogger(__name__)

TRAIN_PRESETS = ("default", "paper", "minirocket")
CALIBRATE_ON = ("val", "train+val")
HEAD_SOLVERS = ("adam", "lbfgs")
FEATURE_CACHE_BYTES = 2 << 30
"""Largest feature matrix (bytes) kept for a local model with a frozen front end (see ``_frozen_features``)."""
INITIALISATION_WINDOWS = 1024
"""Training windows shown to a local model's ``initialise_from_data`` (MiniRocket's bias quantiles)."""


@dataclass
class TrainConfig:
    """Everything that defines a training run (JSON-serialisable through :meth:`to_dict`).

    Parameters
    ----------
    backbone : str
        Registered local model name.
    model_params : dict
        Keyword arguments of the backbone (``window_length`` is filled in).
    preprocess : PreprocessConfig
    window_length : int
        L in preprocessed samples.
    train_stride : int
        Stride of the training window index (the paper's authors used 5 pooled samples).
    val_stride : int
        Stride of the validation index used for early stopping and calibration.
    inference_stride : int or None
        Default scoring stride; ``None`` means a quarter window.
    batch_size : int
    epochs : int
    windows_per_epoch : int or None
        Train each epoch on this many windows drawn without replacement from all training
        windows (a fresh draw per epoch), for cohorts too large to sweep every epoch; ``None``
        sweeps every training window once per epoch (Algorithm 1).
    lr, weight_decay : float
        Adam parameters.
    head_solver : {"adam", "lbfgs"}
        ``"lbfgs"`` (local models with a frozen front end only: MiniRocket, ROCKET): instead of the
        epoch loop, fit the head by full-batch L-BFGS on the channel loss over every training
        window, once per penalty in ``head_l2``, and keep the one with the best validation channel
        AUC (see :mod:`sss_viewer.head_fit`). ``epochs``, ``batch_size``, ``lr`` and
        ``windows_per_epoch`` do not apply then.
    head_l2 : tuple of float
        L2 penalties on the head's weights tried by ``head_solver="lbfgs"``, strongest first (ties
        go to the stronger penalty).
    head_max_iter : int
        L-BFGS iterations per penalty.
    lr_final_factor : float
        Cosine annealing ends at ``lr * lr_final_factor`` (two orders of magnitude by default).
    scheduler_step : {"epoch", "batch"}
        ``"batch"`` reproduces the authors' code, which stepped the per-epoch schedule every batch.
    patience : int
        Early-stopping patience in epochs on the validation channel AUC.
    window_loss_weight : float
        Weight of an extra window-level BCE (the paper uses 0: the channel loss alone).
    class_balanced_loss : bool
        Weight each series in the channel loss by the inverse frequency of its class among the
        training series, so a 1:5 SOZ imbalance does not teach the model to say "not SOZ".
    calibrator : {"isotonic", "venn-abers", "none"}
    calibrate_on : {"val", "train+val"}
        ``"train+val"`` reproduces the authors' leak (the calibrator sees the model's own training
        windows).
    split : {"patient", "channel"}
    balance : bool
        Drop non-SOZ channels at random to 1:1 (the paper's App. B; whole data set for the channel
        split, training split only for the patient split).
    val_fraction, test_fraction : float
    threshold_criterion : {"f1", "youden"}
    mixed_native_rates : bool
        With native rates (``preprocess.target_sfreq`` None): accept training recordings sampled
        at different rates (a warning; the ``paper`` preset, as the paper pools them). False
        (default): refused with the rates found. The model records the rate(s) it was trained on
        (``preprocess.native_sfreqs``) and refuses to score any other.
    seed : int
    device : str
    num_threads : int or None
        Torch threads during training (restored afterwards); ``None`` keeps the current count.
    """

    backbone: str = "patchtst"
    model_params: dict = field(default_factory=dict)
    preprocess: PreprocessConfig = field(default_factory=PreprocessConfig)
    window_length: int = 1024
    train_stride: int = 1024
    val_stride: int = 512
    inference_stride: int | None = None
    batch_size: int = 128
    epochs: int = 5
    windows_per_epoch: int | None = None
    lr: float = 1e-3
    weight_decay: float = 1e-4
    lr_final_factor: float = 0.01
    head_solver: str = "adam"
    head_l2: tuple[float, ...] = (1e-1, 1e-2, 1e-3, 1e-4)
    head_max_iter: int = 300
    scheduler_step: str = "epoch"
    patience: int = 15
    window_loss_weight: float = 0.0
    class_balanced_loss: bool = True
    calibrator: str = "isotonic"
    calibrate_on: str = "val"
    split: str = "patient"
    balance: bool = False
    val_fraction: float = 0.15
    test_fraction: float = 0.25
    threshold_criterion: str = "f1"
    mixed_native_rates: bool = False
    seed: int = 0
    device: str = "auto"
    num_threads: int | None = None

    def __post_init__(self) -> None:
        check_option("backbone", self.backbone, sorted(MODEL_REGISTRY))
        check_option("calibrator", self.calibrator, ("isotonic", "venn-abers", "none"))
        check_option("calibrate_on", self.calibrate_on, CALIBRATE_ON)
        check_option("split", self.split, SPLIT_MODES)
        check_option("scheduler_step", self.scheduler_step, ("epoch", "batch"))
        check_option("threshold_criterion", self.threshold_criterion, ("f1", "youden"))
        check_option("head_solver", self.head_solver, HEAD_SOLVERS)
        try:
            penalties = tuple(float(v) for v in np.atleast_1d(self.head_l2))
        except (TypeError, ValueError):
            penalties = ()
        if not penalties or any(not np.isfinite(v) or v < 0 for v in penalties):
            raise ValueError(f"Invalid head_l2={self.head_l2!r}: expected one or more finite penalties >= 0.")
        self.head_l2 = penalties
        for name in ("window_length", "train_stride", "val_stride", "batch_size", "epochs", "patience", "head_max_iter"):
            check_positive_int(name, getattr(self, name))
        if self.windows_per_epoch is not None:
            check_positive_int("windows_per_epoch", self.windows_per_epoch)
        check_range("lr", self.lr, 0, None, low_inclusive=False)
        check_range("lr_final_factor", self.lr_final_factor, 0, 1)
        check_range("window_loss_weight", self.window_loss_weight, 0, None)
        if self.inference_stride is None:
            self.inference_stride = max(1, self.window_length // 4)

    def to_dict(self) -> dict:
        """JSON-serialisable parameters (``mixed_native_rates`` only when True, so older records compare equal)."""
        out = dataclasses.asdict(self)
        out["preprocess"] = self.preprocess.to_dict()
        if not self.mixed_native_rates:
            del out["mixed_native_rates"]
        return out


def train_preset(name: str, **overrides) -> TrainConfig:
    """The named training preset with parameter overrides.

    ``default``
        CPU-sized: the paper's PatchTST sizes, L = 1024 at 250 Hz (4.1 s), non-overlapping
        training windows, batch 128, Adam lr 1e-3 for 5 epochs with per-epoch cosine annealing, class-balanced
        channel loss, isotonic calibration on validation windows, split by patient.
    ``paper``
        The paper's budget and choices: average pooling 24/12 on the native rate, L = 1024,
        stride 5, batch 8192, Adam lr 1e-4 / wd 1e-4, 50 epochs, patience 15, isotonic calibration.
        The data-leaking choices of the authors' code (calibration on train+val, channel split) are
        separate options, not part of the preset.
    ``minirocket``
        The recipe that works on real intracranial EEG (the ``bonn`` experiment preset, see
        ``docs/results.md``): a MiniRocket local model (9,996 PPV features of each L = 1024 window,
        no per-window normalisation: the per-channel z-score keeps amplitude differences between
        windows), training/validation/scoring stride 256, a standardised logistic head trained by
        the channel loss on features computed once (Adam 1e-3, wd 1e-4, 20 epochs, patience 10),
        isotonic calibration (the Bonn experiment turns calibration off: its 32 validation segments
        are too few for isotonic regression).
    """
    check_option("training preset", name, TRAIN_PRESETS)
    if name == "paper":
        base = TrainConfig(
            preprocess=preprocess_preset("paper"),
            train_stride=5,
            val_stride=5,
            batch_size=8192,
            epochs=50,
            lr=1e-4,
            class_balanced_loss=False,
            mixed_native_rates=True,
        )
    elif name == "minirocket":
        base = TrainConfig(
            backbone="minirocket",
            model_params={"num_features": 9996, "revin": False},
            window_length=1024,
            train_stride=256,
            val_stride=256,
            inference_stride=256,
            batch_size=64,
            epochs=20,
            patience=10,
        )
    else:
        base = TrainConfig()
    if overrides.get("backbone", base.backbone) != base.backbone and "model_params" not in overrides:
        overrides["model_params"] = {}  # the preset's sizes belong to its own backbone
    if "preprocess" in overrides and isinstance(overrides["preprocess"], dict):
        overrides["preprocess"] = dataclasses.replace(base.preprocess, **overrides["preprocess"])
    return dataclasses.replace(base, **overrides)


def channel_loss(
    logits: torch.Tensor,
    series: torch.Tensor,
    labels: torch.Tensor,
    series_weight: torch.Tensor | None = None,
    window_loss_weight: float = 0.0,
) -> torch.Tensor:
    """SSS loss: BCE of the mean window probability of each series present in the batch.

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

    Returns
    -------
    loss : Tensor, shape ()
        ``(1/n) sum_i w_i BCE(mean_{w in W_i} sigmoid(f(w)), y_i)`` over the n series in the batch.
    """
    probs = torch.sigmoid(logits.float())
    present, inverse = torch.unique(series, return_inverse=True)
    sums = torch.zeros(len(present), device=logits.device).index_add_(0, inverse, probs)
    counts = torch.bincount(inverse, minlength=len(present)).to(probs.dtype)
    mean_p = (sums / counts).clamp(1e-6, 1 - 1e-6)
    target = labels[present]
    losses = F.binary_cross_entropy(mean_p, target, reduction="none")
    if series_weight is not None:
        w = series_weight[present]
        loss = (losses * w).sum() / w.sum()
    else:
        loss = losses.mean()
    if window_loss_weight > 0:
        loss = loss + window_loss_weight * F.binary_cross_entropy_with_logits(logits.float(), labels[series])
    return loss


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


def train(
    recordings: Sequence[Recording],
    config: TrainConfig,
    *,
    progress: bool = True,
    series_set: SeriesSet | None = None,
    cache: SeriesCache | None = None,
    split: np.ndarray | None = None,
) -> ModelBundle:
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

    Returns
    -------
    ModelBundle
        The best epoch's model, its calibrator, threshold and a record of the run in ``info``; a
        native-rate model (``preprocess.target_sfreq`` None) records the rates it was trained on
        in ``preprocess.native_sfreqs``.

    Raises
    ------
    ValueError
        No labelled channel, a split without both classes, or (native rates) recordings sampled at
        different rates without ``config.mixed_native_rates``.
    """
    device = resolve_device(config.device)
    with seeded_torch(config.seed, config.num_threads, device) as generator:
        return _train(recordings, config, device, generator, progress=progress, series_set=series_set, cache=cache, split=split)


def _train(recordings, config, device, generator, *, progress, series_set, cache, split) -> ModelBundle:
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
        raise ValueError("None of the training recordings has SOZ labels; training needs labelled channels.")
    if split is None:
        split = np.full(len(meta), UNUSED, dtype=object)
        split[labelled] = assign_splits(
            meta[labelled],
            config.split,
            val_fraction=config.val_fraction,
            test_fraction=config.test_fraction,
            balance=config.balance,
            seed=config.seed,
        )
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
    L = config.window_length
    train_set = _Subset(series_set, split == "train", L, config.train_stride)
    val_set = _Subset(series_set, split == "val", L, config.val_stride)
    logger.info(
        "training on %d series (%d windows), validating on %d series (%d windows), device %s",
        len(train_set.members), len(train_set), len(val_set.members), len(val_set), device,
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
    series_weight = None
    if config.class_balanced_loss:
        series_weight = torch.from_numpy(class_balanced_weights(labels_np, train_set.members)).to(device)
    frozen = _frozen_features(model, series_set.store, (train_set.starts, val_set.starts), L, device)
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
            model, frozen[0], frozen[1],
            lambda logits: channel_loss(logits, train_series, labels_t, series_weight, config.window_loss_weight),
            lambda p: _selection_auc(p, val_set, labels_np, config.calibrator),
            config.head_l2, config.head_max_iter,
        )  # fmt: skip
        best_epoch = 0
    else:
        history, best_epoch = _train_epochs(
            model, config, series_set, train_set, val_set, labels_np, labels_t, series_weight, frozen, generator, device, progress
        )
    model.eval()

    p_val = frozen_probs(model, frozen[1]) if frozen is not None else None
    calibrator, threshold, val_metrics = _calibrate(model, series_set, train_set, val_set, labels_np, config, device, p_val)
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


def _train_epochs(
    model, config, series_set, train_set, val_set, labels_np, labels_t, series_weight, frozen, generator, device, progress
) -> tuple[list[dict], int]:
    """Algorithm 1: Adam epochs over (a draw of) the training windows, early stopping on validation channel AUC.

    Returns the per-epoch history and the best epoch (1-based; -1 if no epoch had a finite AUC),
    whose weights ``model`` holds on return.
    """
    L = config.window_length
    n_epoch_windows = min(len(train_set), config.windows_per_epoch or len(train_set))
    n_batches = -(-n_epoch_windows // config.batch_size)
    plan = EpochPlan(
        epochs=config.epochs, lr=config.lr, weight_decay=config.weight_decay, lr_final_factor=config.lr_final_factor,
        patience=config.patience, scheduler_step=config.scheduler_step, batches_per_epoch=n_batches,
    )  # fmt: skip
    train_starts = train_set.starts
    train_series = torch.from_numpy(train_set.series)

    def batch_losses(epoch: int):
        bar = tqdm(
            epoch_batches(len(train_set), config.batch_size, generator, limit=n_epoch_windows),
            total=n_batches, desc=f"epoch {epoch + 1}/{config.epochs}", unit="batch", disable=not progress or None,
        )  # fmt: skip
        for idx in bar:
            if frozen is not None:
                logits = model.classify(frozen[0][idx.to(device)])
            elif getattr(model, "reads_series", False):  # windows read within their channel
                feats = model.store_window_features(series_set.store, train_starts[idx.numpy()], L).to(device)
                logits = model.classify(feats)
            else:
                x = torch.from_numpy(series_set.store.windows(train_starts[idx.numpy()], L)).to(device, non_blocking=True)
                logits = model(x)
            s = train_series[idx].to(device)
            yield channel_loss(logits, s, labels_t, series_weight, config.window_loss_weight), len(idx)

    def validate() -> float:
        if frozen is not None:
            model.eval()
            p_val = frozen_probs(model, frozen[1])
        else:
            p_val = predict_window_probs(model, series_set.store, val_set.starts, L, device=device)
        return _selection_auc(p_val, val_set, labels_np, config.calibrator)

    return fit_epochs(model, plan, batch_losses, validate, unit="windows", no_best_epoch=-1)


def _frozen_features(model, store, start_sets, L, device) -> list[torch.Tensor] | None:
    """Features of fixed window sets under a model's frozen front end, computed once; None if not applicable.

    A local model whose front end is not trained (MiniRocket: fixed kernels and fitted biases)
    exposes ``frozen_features(x)`` and ``classify(features)``; its features are computed once per
    window here, so each epoch trains only the head. Skipped (None) when the model has no frozen
    front end or the features would take more than :data:`FEATURE_CACHE_BYTES`. Features of the same
    windows under the same (untrained) model are reused from earlier runs (:mod:`sss_viewer.feature_memo`).
    """
    if not getattr(model, "has_frozen_front_end", False):
        return None
    n_windows = sum(len(starts) for starts in start_sets)
    needed = n_windows * model.n_features * 4
    if needed > FEATURE_CACHE_BYTES:
        logger.info("frozen features of %d windows would need %.1f GB: computing them per batch", n_windows, needed / 1e9)
        return None
    out, n_computed = [], 0
    digest = feature_memo.front_end_digest(model)
    model.eval()
    with torch.no_grad():
        for starts in start_sets:
            feats = feature_memo.recall(store, digest, starts, L, device)
            if feats is None and getattr(model, "reads_series", False):
                feats = model.store_window_features(store, starts, L).to(device)
                feature_memo.remember(store, digest, starts, L, device, feats)
                n_computed += len(starts)
            elif feats is None:
                parts = [
                    model.frozen_features(torch.from_numpy(store.windows(starts[lo : lo + 256], L)).to(device))
                    for lo in range(0, len(starts), 256)
                ]
                feats = torch.cat(parts) if parts else torch.empty(0, model.n_features, device=device)
                feature_memo.remember(store, digest, starts, L, device, feats)
                n_computed += len(starts)
            else:
                logger.info("reusing the frozen features of %d windows from an earlier run", len(starts))
            out.append(feats)
    model.train()
    logger.info("frozen features of %d windows (%.0f MB) ready, %d computed now", n_windows, needed / 1e6, n_computed)
    return out


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
            record[f"{name}_channels"] = [f"{s}|{r}|{c}" for s, r, c in zip(rows["subject"], rows["run"], rows["channel"])]
    return record

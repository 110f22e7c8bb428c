"""Whole-channel baselines (paper App. C): one backbone classifies an entire channel.

SSS scores a channel from many short windows; the paper compares it against the same backbones
trained to classify a *whole* channel in one pass:

* **Finite-context** backbones (``patchtst``, ``timesnet``, ``moderntcn``, ``dlinear``) have a fixed
  input length L (``window_length``). Every channel is truncated to its first L samples or padded
  with zeros at the end up to L, as in the paper. A padding mask ``(B, L)`` (True on real samples)
  goes to ``model.forward(x, mask=...)`` where the backbone accepts one (TimesNet, ModernTCN and
  DLinear do; PatchTST does not and sees the zero padding).
* **Infinite-context** backbones (``rocket``, ``mamba``, ``gru``, ``lstm``, ``minirocket``) read the
  whole variable-length channel, one channel per batch (batch size 1, one optimiser step per
  channel). ``max_length`` optionally trains them on a random crop of at most that many samples per
  channel per epoch, and ``batch_size`` > 1 batches equal-length crops (to bound CPU time and
  memory); validation and test always read the whole channel. ROCKET and MiniRocket train only
  their head: their features are computed once per whole channel (no crops) and each epoch fits
  the head on them.

Training follows App. C: Adam (App. C's learning rate of the backbone unless overridden), weight
decay 1e-4, cosine annealing over the epochs down to ``lr * lr_final_factor`` (two orders of
magnitude by default), early stopping on validation channel AUC with patience 15, and the best
epoch's weights kept. RevIN lives inside the backbones. With ``class_balanced_loss`` the binary
cross-entropy weighs SOZ and non-SOZ training channels so that both classes count equally (the
paper balanced by dropping non-SOZ channels instead).
"""

from __future__ import annotations

import copy
import dataclasses
import inspect
import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from sss_viewer._validate import check_non_negative_int, check_option, check_positive_int, check_range
from sss_viewer.engine._fit import EpochPlan, class_balanced_weights, fit_epochs, seeded_torch
from sss_viewer.engine._head_fit import frozen_probs
from sss_viewer.engine.device import resolve_device
from sss_viewer.metrics import binary_auc
from sss_viewer.models.registry import (
    FINITE_CONTEXT,
    MODEL_REGISTRY,
    app_c_best,
    build_window_model,
)
from sss_viewer.windows.series_set import SeriesSet
from sss_viewer.windows.splits import SPLIT_VALUES

logger = logging.getLogger(__name__)

__all__ = [
    "DEFAULT_BATCH_SIZE",
    "WholeChannelConfig",
    "WholeChannelResult",
    "fit_whole_channel",
    "pad_or_truncate",
    "predict_channels",
]

DEFAULT_BATCH_SIZE = 64
"""Finite-context batch size when ``batch_size`` is None: all training channels, at most this many."""
INITIALISATION_CHANNELS = 256
"""Training channels shown to a model's ``initialise_from_data`` (MiniRocket's bias quantiles)."""
INFINITE_EVAL_BATCH = 32
"""Infinite-context scoring: whole channels of equal length (those of one recording) per forward pass."""


@dataclass
class WholeChannelConfig:
    """Parameters of a whole-channel baseline run.

    Parameters
    ----------
    backbone : str
        A key of :data:`~sss_viewer.models.registry.MODEL_REGISTRY`.
    model_params : dict
        Constructor arguments of the backbone (``window_length`` excepted: set it here).
    window_length : int
        L of finite-context backbones (channels are truncated / zero-padded to it); for ROCKET the
        reference length of its kernel dilations (``input_length``) unless ``model_params`` gives
        one; unused by the recurrent and Mamba backbones.
    max_length : int or None
        Infinite-context backbones only: train on a random crop of at most this many samples of each
        channel, drawn afresh every epoch (validation and test read the whole channel). None trains
        on whole channels. Ignored by finite-context backbones.
    epochs : int
        Maximum number of epochs.
    lr : float or None
        Adam learning rate; None takes App. C's best for the backbone (``app_c_best(backbone)["lr"]``).
    weight_decay : float
        Adam weight decay.
    batch_size : int or None
        Channels per optimiser step. Finite context (and scoring batches): None means all training
        channels (App. C: "the entire dataset"), capped at :data:`DEFAULT_BATCH_SIZE`. Infinite
        context: None means one whole channel per step (the paper); a larger batch trains on random
        crops of one common length — the batch's shortest channel, at most ``max_length`` — so a
        CPU preset can take fewer, larger steps. Scoring always reads whole channels, those of equal
        length together (:data:`INFINITE_EVAL_BATCH`; models are row-independent in eval mode).
    patience : int
        Epochs without a strictly better validation AUC before stopping.
    seed : int
        Seeds torch's global generator (model initialisation, dropout) and the shuffling / cropping.
    device : str
        ``"auto"``, ``"cpu"`` or ``"cuda[:N]"``.
    lr_final_factor : float
        The cosine schedule ends at ``lr * lr_final_factor`` after ``epochs`` epochs.
    class_balanced_loss : bool
        Weigh the loss so that SOZ and non-SOZ training channels count equally.
    """

    backbone: str = "patchtst"
    model_params: dict = field(default_factory=dict)
    window_length: int = 1024
    max_length: int | None = None
    epochs: int = 50
    lr: float | None = None
    weight_decay: float = 1e-4
    batch_size: int | None = None
    patience: int = 15
    seed: int = 0
    device: str = "auto"
    lr_final_factor: float = 0.01
    class_balanced_loss: bool = True

    def __post_init__(self) -> None:
        check_option("backbone", self.backbone, sorted(MODEL_REGISTRY))
        if not isinstance(self.model_params, dict):
            raise ValueError(f"Invalid model_params={self.model_params!r}: expected a dict.")
        if "window_length" in self.model_params:
            raise ValueError(
                "Set the window length with WholeChannelConfig.window_length, not model_params['window_length'] "
                "(channels are padded / truncated to it)."
            )
        for name in ("window_length", "epochs", "patience"):
            check_positive_int(name, getattr(self, name))
        for name in ("max_length", "batch_size"):
            if getattr(self, name) is not None:
                check_positive_int(name, getattr(self, name))
        if self.max_length is not None and self.max_length < 2:
            raise ValueError(f"Invalid max_length={self.max_length!r}: expected at least 2 samples or None.")
        if self.lr is not None:
            check_range("lr", self.lr, 0, None, low_inclusive=False)
        check_range("weight_decay", self.weight_decay, 0, None)
        check_range("lr_final_factor", self.lr_final_factor, 0, 1)
        check_non_negative_int("seed", self.seed)
        if not isinstance(self.device, str):
            raise ValueError(f"Invalid device={self.device!r}: expected 'auto', 'cpu' or 'cuda[:N]'.")
        check_option("device", self.device.split(":")[0], ("auto", "cpu", "cuda"))
        if not isinstance(self.class_balanced_loss, bool):
            raise ValueError(f"Invalid class_balanced_loss={self.class_balanced_loss!r}: expected a bool.")

    @property
    def finite_context(self) -> bool:
        """Whether the backbone has a fixed input length (channels padded / truncated to L)."""
        return self.backbone in FINITE_CONTEXT

    def resolved_lr(self) -> float:
        """The learning rate used: ``lr``, or App. C's best for the backbone."""
        if self.lr is not None:
            return float(self.lr)
        return float(app_c_best(self.backbone)["lr"])

    def to_dict(self) -> dict:
        """JSON-serialisable parameters (``lr`` as given; see :meth:`resolved_lr`)."""
        out = dataclasses.asdict(self)
        out["model_params"] = copy.deepcopy(dict(self.model_params))
        return out


@dataclass
class WholeChannelResult:
    """Outcome of :func:`fit_whole_channel`.

    Attributes
    ----------
    model : nn.Module
        The best epoch's model, in eval mode, on the training device.
    val_probs, test_probs : ndarray, shapes (n_val,), (n_test,), float64
        SOZ probabilities of ``np.flatnonzero(split == "val")`` / ``== "test"``, in that order.
    history : list of dict
        Per epoch (:func:`sss_viewer.engine._fit.fit_epochs`): ``epoch`` (1-based), ``train_loss``,
        ``val_auc``, ``lr`` (the rate the epoch started with), ``seconds`` (training plus
        validation) and ``train_channels_per_s``.
    best_epoch : int
        1-based epoch whose weights ``model`` holds (0 if no epoch had a finite validation AUC; the
        last weights are kept then).
    config : WholeChannelConfig
    """

    model: nn.Module
    val_probs: np.ndarray
    test_probs: np.ndarray
    history: list[dict[str, Any]]
    best_epoch: int
    config: WholeChannelConfig


# --------------------------------------------------------------------------------------------
# batching
# --------------------------------------------------------------------------------------------


def pad_or_truncate(series: Sequence[np.ndarray], length: int) -> tuple[np.ndarray, np.ndarray]:
    """Lay channels out as fixed-length rows: the first ``length`` samples, zero-padded at the end.

    Parameters
    ----------
    series : sequence of ndarray, each shape (n_i,)
    length : int
        L.

    Returns
    -------
    x : ndarray, shape (B, L), float32
    mask : ndarray, shape (B, L), bool
        True on real samples, False on padding.
    """
    check_positive_int("length", length)
    x = np.zeros((len(series), length), dtype=np.float32)
    mask = np.zeros((len(series), length), dtype=bool)
    for row, s in enumerate(series):
        s = np.asarray(s)
        if s.ndim != 1:
            raise ValueError(f"Series {row} must be 1-D; got shape {s.shape}.")
        n = min(len(s), length)
        x[row, :n] = s[:n]
        mask[row, :n] = True
    return x, mask


def _accepts_mask(model: nn.Module) -> bool:
    return "mask" in inspect.signature(model.forward).parameters


def _finite_logits(
    model: nn.Module, series_set: SeriesSet, members: np.ndarray, length: int, device: torch.device, use_mask: bool
) -> torch.Tensor:
    x, mask = pad_or_truncate([series_set.store.series(int(i)) for i in members], length)
    xt = torch.from_numpy(x).to(device)
    if use_mask:
        return model(xt, mask=torch.from_numpy(mask).to(device))
    return model(xt)


def _crop(s: np.ndarray, max_length: int | None, rng: np.random.Generator) -> np.ndarray:
    if max_length is None or len(s) <= max_length:
        return s
    start = int(rng.integers(0, len(s) - max_length + 1))
    return s[start : start + max_length]


def _equal_length_batches(lengths: np.ndarray, batch_size: int) -> list[np.ndarray]:
    """Positions of ``lengths`` grouped by equal length, at most ``batch_size`` per group (stable order)."""
    batches = []
    for value in np.unique(lengths):
        rows = np.flatnonzero(lengths == value)
        batches.extend(rows[lo : lo + batch_size] for lo in range(0, len(rows), batch_size))
    return batches


def _crop_batch(series: Sequence[np.ndarray], max_length: int | None, rng: np.random.Generator) -> np.ndarray:
    """Random crops of one common length (the shortest channel's, at most ``max_length``): (B, T)."""
    length = min(len(s) for s in series)
    if max_length is not None:
        length = min(length, max_length)
    return np.stack([_crop(np.asarray(s), length, rng) for s in series]).astype(np.float32, copy=False)


def predict_channels(model: nn.Module, series_set: SeriesSet, members: Any, config: WholeChannelConfig) -> np.ndarray:
    """SOZ probabilities of whole channels (eval mode, no gradients).

    Finite-context backbones score channels truncated / zero-padded to ``config.window_length``
    (with the padding mask where accepted), ``batch_size`` at a time; infinite-context backbones
    score whole channels (``max_length`` does not apply), those of equal length together.

    Parameters
    ----------
    model : nn.Module
        A backbone of ``config.backbone``; its device is used.
    series_set : SeriesSet
    members : array-like of int, shape (n,)
        Series indices to score.
    config : WholeChannelConfig

    Returns
    -------
    ndarray, shape (n,), float64
        Probabilities in [0, 1], in the order of ``members``.
    """
    members = np.asarray(members, dtype=np.int64).reshape(-1)
    n_series = len(series_set.meta)
    if len(members) and (members.min() < 0 or members.max() >= n_series):
        raise ValueError(f"members must be series indices in [0, {n_series}); got {members.min()}..{members.max()}.")
    out = np.empty(len(members), dtype=np.float64)
    if not len(members):
        return out
    try:
        device = next(model.parameters()).device
    except StopIteration:
        device = torch.device("cpu")
    was_training = model.training
    model.eval()
    try:
        with torch.no_grad():
            if config.finite_context:
                use_mask = _accepts_mask(model)
                bs = config.batch_size or DEFAULT_BATCH_SIZE
                for lo in range(0, len(members), bs):
                    logits = _finite_logits(
                        model, series_set, members[lo : lo + bs], config.window_length, device, use_mask
                    )
                    out[lo : lo + bs] = torch.sigmoid(logits.float()).cpu().numpy()
            else:
                for rows in _equal_length_batches(series_set.store.lengths[members], INFINITE_EVAL_BATCH):
                    x = np.stack([series_set.store.series(int(i)) for i in members[rows]])
                    logits = model(torch.from_numpy(np.ascontiguousarray(x, dtype=np.float32)).to(device))
                    out[rows] = torch.sigmoid(logits.float()).cpu().numpy()
    finally:
        model.train(was_training)
    return out


# --------------------------------------------------------------------------------------------
# training
# --------------------------------------------------------------------------------------------


def _initialisation_sample(
    series_set: SeriesSet, train_idx: np.ndarray, config: WholeChannelConfig, rng: np.random.Generator
) -> np.ndarray:
    """Training channels for a model's data-dependent set-up, (N, T): padded/truncated or equal-length crops."""
    pick = train_idx[rng.permutation(len(train_idx))[:INITIALISATION_CHANNELS]]
    series = [series_set.store.series(int(i)) for i in pick]
    if config.finite_context:
        return pad_or_truncate(series, config.window_length)[0]
    return _crop_batch(series, config.max_length, rng)


def whole_channel_features(
    extract, series_set: SeriesSet, members: np.ndarray, *, n_features: int, device: torch.device | str = "cpu"
) -> torch.Tensor:
    """Features of whole channels under a fixed transform, channels of equal length batched together.

    Parameters
    ----------
    extract : callable
        ``(B, T)`` float32 tensor on ``device`` → ``(B, n_features)`` (a frozen front end's
        ``frozen_features``, or a ``MiniRocketFeatures`` transform).
    series_set : SeriesSet
    members : ndarray, shape (n,), int
        Series numbers.
    n_features : int
    device : torch.device or str

    Returns
    -------
    features : Tensor, shape (n, n_features), on ``device``
    """
    out = torch.empty(len(members), n_features, device=device)
    with torch.no_grad():
        for rows in _equal_length_batches(series_set.store.lengths[members], INFINITE_EVAL_BATCH):
            x = np.stack([series_set.store.series(int(i)) for i in members[rows]]).astype(np.float32, copy=False)
            out[torch.from_numpy(rows).to(device)] = extract(torch.from_numpy(x).to(device))
    return out


def _whole_channel_features(model: nn.Module, series_set: SeriesSet, members: np.ndarray) -> torch.Tensor:
    """Frozen front-end features of whole channels, (n, n_features), on the model's device (eval mode)."""
    was_training = model.training
    model.eval()
    try:
        device = next(model.buffers()).device
        return whole_channel_features(
            model.frozen_features, series_set, members, n_features=model.n_features, device=device
        )
    finally:
        model.train(was_training)


def _frozen_probs(model: nn.Module, frozen: dict, name: str) -> np.ndarray:
    """Probabilities of the cached ``name`` channels' features under the current head."""
    return frozen_probs(model, frozen[name]).astype(np.float64)


def _check_split(series_set: SeriesSet, split: Any) -> tuple[np.ndarray, np.ndarray]:
    split = np.asarray(split)
    n_series = len(series_set.meta)
    if split.shape != (n_series,):
        raise ValueError(f"split must have shape ({n_series},) (one entry per series); got {split.shape}.")
    bad = sorted({str(v) for v in np.unique(split.astype(str))} - set(SPLIT_VALUES))
    if bad:
        raise ValueError(f"split holds unknown value(s) {bad}: expected only {list(SPLIT_VALUES)}.")
    split = split.astype(str)
    labels = series_set.labels()
    for name in ("train", "val"):
        got = labels[split == name]
        if len(got) == 0:
            raise ValueError(f"The {name} split is empty; it needs SOZ and non-SOZ channels.")
        if (got < 0).any():
            raise ValueError(f"The {name} split holds {int((got < 0).sum())} unlabelled channel(s) (label -1).")
        classes = sorted(set(got.tolist()))
        if classes != [0, 1]:
            raise ValueError(
                f"The {name} split has channels of class {classes} only; it needs SOZ and non-SOZ channels."
            )
    return split, labels


def fit_whole_channel(
    series_set: SeriesSet, split: Any, config: WholeChannelConfig, *, progress: bool = False
) -> WholeChannelResult:
    """Train a whole-channel baseline and score its validation and test channels.

    Parameters
    ----------
    series_set : SeriesSet
        Preprocessed channels.
    split : array-like of str, shape (n_series,)
        ``"train"``, ``"val"``, ``"test"`` or ``"unused"`` per series. Train and validation
        channels must be labelled and hold both classes.
    config : WholeChannelConfig
    progress : bool
        A progress bar over epochs.

    Returns
    -------
    WholeChannelResult
        Deterministic for a given ``config.seed`` (on the CPU).
    """
    if not isinstance(config, WholeChannelConfig):
        raise ValueError(f"config must be a WholeChannelConfig; got {type(config).__name__}.")
    split, labels = _check_split(series_set, split)
    train_idx = np.flatnonzero(split == "train")
    val_idx = np.flatnonzero(split == "val")
    test_idx = np.flatnonzero(split == "test")
    device = resolve_device(config.device)
    with seeded_torch(config.seed, device=device):
        return _fit(series_set, config, labels, train_idx, val_idx, test_idx, device, progress)


def _fit(series_set, config, labels, train_idx, val_idx, test_idx, device, progress) -> WholeChannelResult:
    """:func:`fit_whole_channel` inside its seeded torch state."""
    lr = config.resolved_lr()
    L = config.window_length
    rng = np.random.default_rng(config.seed)
    model = build_window_model(config.backbone, L, **config.model_params).to(device)
    if hasattr(model, "initialise_from_data"):  # data-dependent set-up (MiniRocket's biases)
        model.initialise_from_data(
            torch.from_numpy(_initialisation_sample(series_set, train_idx, config, rng)).to(device)
        )
    y_train = labels[train_idx].astype(np.float32)
    if config.class_balanced_loss:
        w_train = class_balanced_weights(labels, train_idx)[train_idx]
    else:
        w_train = np.ones_like(y_train)
    use_mask = config.finite_context and _accepts_mask(model)
    frozen = None
    if not config.finite_context and getattr(model, "has_frozen_front_end", False):
        frozen = {
            name: _whole_channel_features(model, series_set, idx)
            for name, idx in (("train", train_idx), ("val", val_idx), ("test", test_idx))
        }
    if config.finite_context:
        batch_size = min(len(train_idx), config.batch_size or DEFAULT_BATCH_SIZE)
    else:
        batch_size = min(len(train_idx), config.batch_size or 1)
    logger.info(
        "whole-channel %s (%s context): %d train, %d val, %d test channels; lr %.3g, device %s",
        config.backbone,
        "finite" if config.finite_context else "infinite",
        len(train_idx),
        len(val_idx),
        len(test_idx),
        lr,
        device,
    )

    def logits_of(pick: np.ndarray) -> torch.Tensor:
        """Training logits of the channels ``train_idx[pick]``: padded/truncated, cached features, or crops."""
        if config.finite_context:
            return _finite_logits(model, series_set, train_idx[pick], L, device, use_mask)
        if frozen is not None:
            return model.classify(frozen["train"][torch.from_numpy(pick).to(device)])
        if len(pick) == 1:
            x = _crop(series_set.store.series(int(train_idx[pick[0]])), config.max_length, rng)[None]
        else:
            x = _crop_batch([series_set.store.series(int(i)) for i in train_idx[pick]], config.max_length, rng)
        # a copy: a single channel's crop is a view of the (read-only, memory-mapped) store
        return model(torch.from_numpy(np.array(x, dtype=np.float32)).to(device))

    def batch_losses(epoch: int):
        order = rng.permutation(len(train_idx))
        for lo in range(0, len(order), batch_size):
            pick = order[lo : lo + batch_size]
            logits = logits_of(pick)
            y = torch.from_numpy(y_train[pick]).to(device)
            w = torch.from_numpy(w_train[pick]).to(device)
            yield (F.binary_cross_entropy_with_logits(logits.float(), y, reduction="none") * w).mean(), len(pick)

    def validate() -> float:
        val_probs = (
            _frozen_probs(model, frozen, "val") if frozen else predict_channels(model, series_set, val_idx, config)
        )
        return binary_auc(val_probs, labels[val_idx])

    plan = EpochPlan(
        epochs=config.epochs,
        lr=lr,
        weight_decay=config.weight_decay,
        lr_final_factor=config.lr_final_factor,
        patience=config.patience,
    )
    history, best_epoch = fit_epochs(
        model, plan, batch_losses, validate, unit="channels", progress=progress, desc=f"whole-channel {config.backbone}"
    )
    model.eval()
    if frozen is not None:
        val_probs, test_probs = _frozen_probs(model, frozen, "val"), _frozen_probs(model, frozen, "test")
    else:
        val_probs = predict_channels(model, series_set, val_idx, config)
        test_probs = predict_channels(model, series_set, test_idx, config)
    return WholeChannelResult(
        model=model,
        val_probs=val_probs,
        test_probs=test_probs,
        history=history,
        best_epoch=best_epoch,
        config=config,
    )

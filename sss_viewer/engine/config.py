"""Training configuration: ``TrainConfig`` and the named training presets."""

from __future__ import annotations

import dataclasses
import logging
from dataclasses import dataclass, field

import numpy as np

from sss_viewer._validate import check_option, check_positive_int, check_range
from sss_viewer.models import MODEL_REGISTRY
from sss_viewer.models.patchtst import GPU_KERNELS
from sss_viewer.preprocessing.config import PreprocessConfig, preprocess_preset
from sss_viewer.windows.splits import SPLIT_MODES

logger = logging.getLogger(__name__)


TRAIN_PRESETS = ("default", "paper", "minirocket", "hydra", "hydra_minirocket", "quick")
"""The names :func:`train_preset` accepts (``train --preset``)."""


_RECIPE_SIZES = {
    "minirocket": {"num_features": 9996, "revin": False},
    "quick": {"num_features": 9996, "revin": False},
    "hydra": {"kernels_per_group": 8, "groups": 64, "revin": False},
    "hydra_minirocket": {"kernels_per_group": 8, "groups": 64, "num_features": 9996, "revin": False},
}
"""Local model sizes of the real-data recipe, its Hydra variants (same training, backbone swapped) and ``quick``."""


QUICK_STRIDE = 2048
"""Training and validation window stride of the ``quick`` preset (8.2 s at 250 Hz; half-window gaps)."""


CALIBRATE_ON = ("val", "train+val")


PATCHTST_GPU_KERNELS = GPU_KERNELS
"""Values of ``sss-viewer train --gpu-kernels``: ``PatchTST(gpu_kernels=...)``, the sub-layers a GPU runs fused."""
HEAD_SOLVERS = ("adam", "lbfgs")


PRECISIONS = ("auto", "fp32", "bf16")
"""Values of ``TrainConfig.precision``."""


AUTO_SWITCHES = ("auto", True, False)
"""Values of ``TrainConfig.compile`` and ``TrainConfig.device_windows``."""

COMPILE_MODES = ("default", "reduce-overhead", "max-autotune", "max-autotune-no-cudagraphs")
""":func:`torch.compile` modes ``TrainConfig.compile`` also accepts (compile, in that mode; ``True`` is ``"default"``)."""


EXECUTION_OPTIONS = ("precision", "compile", "device_windows")
"""How a run executes on its device (:mod:`sss_viewer.engine._execution`): recorded by :meth:`TrainConfig.to_dict`
only when not ``"auto"``, so records written before they existed compare equal."""


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
        AUC (see :mod:`sss_viewer.engine._head_fit`). ``epochs``, ``batch_size``, ``lr`` and
        ``windows_per_epoch`` do not apply then.
    head_l2 : tuple of float
        L2 penalties on the head's weights tried by ``head_solver="lbfgs"``, strongest first (ties
        go to the stronger penalty).
    head_max_iter : int
        L-BFGS iterations per penalty.
    refit_on_train_val : bool
        After the penalty is chosen on validation, fit the head once more with that penalty on the
        training and validation windows together (the standardisation too) — what plain k-fold CV
        gives a model. ``head_solver="lbfgs"`` and ``calibrator="none"`` only: nothing held out is
        left to calibrate on. The threshold is still picked on the (now seen) validation channels, so
        F1 and accuracy of a refitted model lean optimistic; AUC does not use it.
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
    precision : {"auto", "fp32", "bf16"}
        Arithmetic of the training forward and backward passes and of the per-epoch validation:
        ``"bf16"`` runs them under bfloat16 autocast (weights, optimiser state and checkpoints stay
        float32); ``"auto"`` is bf16 on CUDA devices that support it for a model trained on raw windows
        (PatchTST), fp32 elsewhere (the CPU; a head on frozen features). Calibration, threshold and
        scoring always run in fp32.
    compile : {"auto", True, False, "default", "reduce-overhead", "max-autotune", "max-autotune-no-cudagraphs"}
        Train the window model through :func:`torch.compile`; ``"auto"`` compiles on CUDA only
        (never on the CPU), for runs long enough that its warm-up pays
        (:data:`~sss_viewer.engine._execution.COMPILE_MIN_WINDOWS` planned windows). A mode of
        :data:`COMPILE_MODES` compiles in that mode (``"reduce-overhead"``: CUDA graphs); ``True`` is ``"default"``.
    device_windows : {"auto", True, False}
        Copy the store's samples to the device once and gather each batch there
        (:class:`~sss_viewer.windows.store.DeviceWindows`) instead of gathering it on the host and
        copying it; ``"auto"`` does so on CUDA when the samples take at most
        :data:`~sss_viewer.windows.store.DEVICE_WINDOWS_FRACTION` of the free device memory.
        The windows are the same either way.
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
    refit_on_train_val: bool = False
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
    precision: str = "auto"
    compile: bool | str = "auto"
    device_windows: bool | str = "auto"

    def __post_init__(self) -> None:
        check_option("backbone", self.backbone, sorted(MODEL_REGISTRY))
        check_option("calibrator", self.calibrator, ("isotonic", "venn-abers", "none"))
        check_option("calibrate_on", self.calibrate_on, CALIBRATE_ON)
        check_option("split", self.split, SPLIT_MODES)
        check_option("scheduler_step", self.scheduler_step, ("epoch", "batch"))
        check_option("threshold_criterion", self.threshold_criterion, ("f1", "youden"))
        check_option("head_solver", self.head_solver, HEAD_SOLVERS)
        check_option("precision", self.precision, PRECISIONS)
        if not (isinstance(self.device_windows, bool) or self.device_windows == "auto"):  # 1/0 are not switches
            raise ValueError(f"Invalid device_windows={self.device_windows!r}: expected one of 'auto', True, False.")
        if not (isinstance(self.compile, bool) or self.compile == "auto" or self.compile in COMPILE_MODES):
            modes = ", ".join(repr(m) for m in COMPILE_MODES)
            raise ValueError(
                f"Invalid compile={self.compile!r}: expected one of 'auto', True, False, or a mode: {modes}."
            )
        try:
            penalties = tuple(float(v) for v in np.atleast_1d(self.head_l2))
        except (TypeError, ValueError):
            penalties = ()
        if not penalties or any(not np.isfinite(v) or v < 0 for v in penalties):
            raise ValueError(f"Invalid head_l2={self.head_l2!r}: expected one or more finite penalties >= 0.")
        self.head_l2 = penalties
        if not isinstance(self.refit_on_train_val, bool):
            raise ValueError(f"Invalid refit_on_train_val={self.refit_on_train_val!r}: expected True or False.")
        if self.refit_on_train_val and (self.head_solver != "lbfgs" or self.calibrator != "none"):
            raise ValueError(
                f"refit_on_train_val=True needs head_solver='lbfgs' (a penalty chosen on validation, then one refit) and "
                f"calibrator='none' (no held-out windows are left to calibrate on); got head_solver={self.head_solver!r}, "
                f"calibrator={self.calibrator!r}."
            )
        for name in (
            "window_length",
            "train_stride",
            "val_stride",
            "batch_size",
            "epochs",
            "patience",
            "head_max_iter",
        ):
            check_positive_int(name, getattr(self, name))
        if self.windows_per_epoch is not None:
            check_positive_int("windows_per_epoch", self.windows_per_epoch)
        check_range("lr", self.lr, 0, None, low_inclusive=False)
        check_range("lr_final_factor", self.lr_final_factor, 0, 1)
        check_range("window_loss_weight", self.window_loss_weight, 0, None)
        if self.inference_stride is None:
            self.inference_stride = max(1, self.window_length // 4)

    def to_dict(self) -> dict:
        """JSON-serialisable parameters (flags added later only when True, and the execution options only when
        not ``"auto"``, so older records compare equal)."""
        out = dataclasses.asdict(self)
        out["preprocess"] = self.preprocess.to_dict()
        for later_flag in ("mixed_native_rates", "refit_on_train_val"):
            if not out[later_flag]:
                del out[later_flag]
        for option in EXECUTION_OPTIONS:
            if out[option] == "auto":
                del out[option]
        return out

    @classmethod
    def from_dict(cls, params: dict) -> TrainConfig:
        """Rebuild from :meth:`to_dict` output (after a JSON round trip too); unknown keys are an error naming them.

        Missing keys take their defaults: a record written before the execution options existed loads
        with ``"auto"`` for each, which on the CPU is what it ran with (fp32, no compile, host gather).

        Parameters
        ----------
        params : dict
            ``preprocess`` may be a dict (:meth:`PreprocessConfig.from_dict`).

        Returns
        -------
        TrainConfig

        Raises
        ------
        ValueError
            An unknown key, or a value ``__post_init__`` refuses.
        """
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(params) - known)
        if unknown:
            raise ValueError(f"Unknown training parameters {unknown}; known: {sorted(known)}.")
        params = dict(params)
        if isinstance(params.get("preprocess"), dict):
            params["preprocess"] = PreprocessConfig.from_dict(params["preprocess"])
        return cls(**params)


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
        Venn–Abers calibration: the isotonic fits of both labels, so every channel score carries an
        interval ``[p0, p1]`` (ranking and Brier as with isotonic: ``docs/results.md``; the Bonn
        experiment turns calibration off: its 32 validation segments are too few for it).
    ``hydra``, ``hydra_minirocket``
        The ``minirocket`` recipe with the local model swapped for Hydra (k = 8, g = 64: 7,168
        counts at L = 1024) or Hydra + MiniRocket (17,164 features), issue 18.
    ``quick``
        The ``minirocket`` recipe sized for a whole cohort on a laptop (the README's training
        example): training and validation windows every 2,048 samples (:data:`QUICK_STRIDE`, 8.2 s)
        instead of 256, so the frozen features of every training and validation window fit in
        memory (under ``FEATURE_CACHE_BYTES`` for the README's 12-patient synthetic cohort: 17,739
        windows, 709 MB) and are computed once instead of once per epoch; the head trained in
        batches of 512 at Adam lr 3e-3 for at most 10 epochs (patience 5). Scoring keeps stride 256.

    Parameters
    ----------
    name : str
        One of :data:`TRAIN_PRESETS` (above).
    **overrides
        :class:`TrainConfig` fields to change. A different ``backbone`` without ``model_params`` drops the preset's
        model sizes (they belong to its own backbone); ``preprocess`` may be a dict of
        :class:`~sss_viewer.preprocessing.config.PreprocessConfig` fields changed on the preset's preprocessing.

    Returns
    -------
    TrainConfig

    Raises
    ------
    ValueError
        ``name`` is not a preset, or an override's value is invalid.
    TypeError
        An override is not a :class:`TrainConfig` field.
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
    elif name in _RECIPE_SIZES:
        base = TrainConfig(
            backbone="minirocket" if name == "quick" else name,
            model_params=dict(_RECIPE_SIZES[name]),
            window_length=1024,
            train_stride=256,
            val_stride=256,
            inference_stride=256,
            batch_size=64,
            epochs=20,
            patience=10,
            calibrator="venn-abers",
        )
        if name == "quick":
            base = dataclasses.replace(
                base, train_stride=QUICK_STRIDE, val_stride=QUICK_STRIDE, batch_size=512, lr=3e-3, epochs=10, patience=5
            )
    else:
        base = TrainConfig()
    if overrides.get("backbone", base.backbone) != base.backbone and "model_params" not in overrides:
        overrides["model_params"] = {}  # the preset's sizes belong to its own backbone
    if "preprocess" in overrides and isinstance(overrides["preprocess"], dict):
        overrides["preprocess"] = dataclasses.replace(base.preprocess, **overrides["preprocess"])
    return dataclasses.replace(base, **overrides)

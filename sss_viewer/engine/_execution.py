"""How a training run executes on its device: arithmetic precision, compilation, where windows are gathered.

:func:`resolve_execution` turns a :class:`~sss_viewer.engine.config.TrainConfig`'s ``precision``,
``compile`` and ``device_windows`` options (each possibly ``"auto"``) into an :class:`Execution` for one
device and one model. On the CPU the ``"auto"`` answers are today's path (fp32, eager, host gather);
on CUDA they are bf16 autocast, :func:`torch.compile` and windows gathered on the device, which the
paper preset's small PatchTST needs to keep an H200 busy (``benchmarks/gpu_training.py``).
"""

from __future__ import annotations

import contextlib
import logging
from dataclasses import dataclass

import torch

from sss_viewer.windows.store import DeviceWindows, SeriesStore

logger = logging.getLogger(__name__)

__all__ = ["COMPILE_MIN_WINDOWS", "Execution", "resolve_execution"]

COMPILE_MIN_WINDOWS = 30_000_000
"""Planned training windows (epochs × training windows) below which ``compile="auto"`` stays eager on CUDA.

:func:`torch.compile` costs about 17 s of warm-up and, on the paper preset on an H200, trained 632,336
windows/s against 473,993 eager in bf16 (``benchmarks/gpu_training.py``, docs/results.md §3): 0.53 µs saved a
window, so the warm-up pays from about 32 million windows. A clinic's own model from a few patients, or a
check run, is far below that and trains sooner eager."""


@dataclass(frozen=True)
class Execution:
    """The resolved execution options of one training run.

    Parameters
    ----------
    precision : {"fp32", "bf16"}
        ``"bf16"``: the training forward/backward and the per-epoch validation run under bfloat16 autocast.
    compile : bool
        The window model's training forward goes through :func:`torch.compile`.
    compile_mode : str
        Its ``mode`` (one of :data:`~sss_viewer.engine.config.COMPILE_MODES`; ``"default"`` unless asked).
    device_windows : bool
        The store's samples sit on the device and batches are gathered there.
    """

    precision: str = "fp32"
    compile: bool = False
    device_windows: bool = False
    compile_mode: str = "default"

    def autocast(self, device: torch.device) -> contextlib.AbstractContextManager:
        """bfloat16 autocast on ``device`` when ``precision`` is ``"bf16"``, else a context that does nothing."""
        if self.precision == "bf16":
            return torch.autocast(device.type, dtype=torch.bfloat16)
        return contextlib.nullcontext()

    def to_dict(self) -> dict:
        """JSON-serialisable record (a run's ``info["execution"]``)."""
        record = {"precision": self.precision, "compile": self.compile, "device_windows": self.device_windows}
        if self.compile and self.compile_mode != "default":
            record["compile_mode"] = self.compile_mode
        return record


def resolve_execution(
    config, device: torch.device, store: SeriesStore, windows_path: bool, planned_windows: int | None = None
) -> Execution:
    """Resolve a configuration's ``"auto"`` execution options for one device.

    Parameters
    ----------
    config : TrainConfig
        Its ``precision``, ``compile`` and ``device_windows``.
    device : torch.device
        The training device.
    store : SeriesStore
        The training data (its size decides ``device_windows="auto"`` on CUDA).
    windows_path : bool
        Whether the model is trained on raw windows (not on frozen features, not reading windows within
        their channel): compilation and device-resident windows apply to that path only, and ``"auto"``
        precision is bf16 on that path only (a head on frozen features trains in fp32 unless asked).
    planned_windows : int, optional
        Training windows the run may see (epochs × windows per epoch); ``compile="auto"`` compiles only from
        :data:`COMPILE_MIN_WINDOWS` (None: as many as that).

    Returns
    -------
    Execution

    Raises
    ------
    ValueError
        ``precision="bf16"`` on a CUDA device without bfloat16 support.
    """
    cuda = device.type == "cuda"
    precision = config.precision
    if precision == "auto":
        precision = "bf16" if cuda and windows_path and torch.cuda.is_bf16_supported() else "fp32"
    elif precision == "bf16" and cuda and not torch.cuda.is_bf16_supported():
        raise ValueError(f"Invalid precision='bf16': the CUDA device {device} does not support bfloat16; use 'fp32'.")
    compile_, compile_mode = config.compile, "default"
    if isinstance(compile_, str) and compile_ != "auto":  # a mode: compile in it
        compile_, compile_mode = True, config.compile
    if compile_ == "auto":
        compile_ = cuda and windows_path
        if compile_ and planned_windows is not None and planned_windows < COMPILE_MIN_WINDOWS:
            logger.info(
                "training eagerly: %d planned windows are too few for torch.compile's warm-up to pay (from %d)",
                planned_windows,
                COMPILE_MIN_WINDOWS,
            )
            compile_ = False
    device_windows = config.device_windows
    if device_windows == "auto":
        device_windows = cuda and windows_path and DeviceWindows.fits(store, device)
        if cuda and windows_path and not device_windows:
            logger.info("the series take more than the device-memory share allowed: gathering windows on the host")
    elif device_windows and not windows_path:
        logger.info("device_windows=True does not apply to this model (it does not train on raw windows)")
        device_windows = False
    if compile_ and not windows_path:
        compile_ = False
    return Execution(
        precision=precision,
        compile=bool(compile_),
        device_windows=bool(device_windows),
        compile_mode=compile_mode if compile_ else "default",
    )

"""Model directories: safetensors weights + one JSON config. Loading never unpickles."""

from __future__ import annotations

import json
import logging
import os
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import torch
from safetensors.torch import load_file, save_file

from sss_viewer import __version__
from sss_viewer.calibration import calibrator_from_state
from sss_viewer.models import model_from_config
from sss_viewer.preprocess import PreprocessConfig

logger = logging.getLogger(__name__)

WEIGHTS_FILE = "model.safetensors"
CONFIG_FILE = "config.json"
FORMAT_VERSION = 1


@dataclass
class ModelBundle:
    """A trained SSS model with everything needed to score a new recording.

    Parameters
    ----------
    model : nn.Module
        The local window model, (B, L) → (B,) logits.
    preprocess : PreprocessConfig
        Channel preprocessing the model was trained with.
    window_length : int
        L, in preprocessed samples.
    inference_stride : int
        Default stride for scoring (a quarter window).
    calibrator : object
        Fitted window calibrator with ``transform(p) -> (p_cal, p0, p1)``.
    threshold : float
        Channel-score threshold chosen on the validation split.
    info : dict
        JSON-serialisable record of training: config, split (subjects/channels per split),
        history, validation metrics, data description.
    """

    model: torch.nn.Module
    preprocess: PreprocessConfig
    window_length: int
    inference_stride: int
    calibrator: object
    threshold: float
    info: dict = field(default_factory=dict)

    def config_dict(self) -> dict:
        """Everything but the weights, as a JSON-serialisable dict."""
        return {
            "format_version": FORMAT_VERSION,
            "sss_viewer_version": __version__,
            "model": self.model.get_config(),
            "preprocess": self.preprocess.to_dict(),
            "window_length": self.window_length,
            "inference_stride": self.inference_stride,
            "calibrator": self.calibrator.get_state(),
            "threshold": self.threshold,
            "info": self.info,
        }

    def save(self, directory: str | Path) -> Path:
        """Write ``model.safetensors`` and ``config.json`` into ``directory`` (created if missing)."""
        directory = Path(directory)
        directory.mkdir(parents=True, exist_ok=True)
        state = {k: v.detach().cpu().contiguous() for k, v in self.model.state_dict().items()}
        atomic_write(directory / WEIGHTS_FILE, lambda p: save_file(state, str(p)))
        text = json.dumps(self.config_dict(), indent=2, allow_nan=True)
        atomic_write(directory / CONFIG_FILE, lambda p: Path(p).write_text(text))
        logger.info("saved model to %s", directory)
        return directory

    @classmethod
    def load(cls, directory: str | Path, *, device: str | torch.device = "cpu") -> ModelBundle:
        """Load a model directory written by :meth:`save`.

        Raises
        ------
        FileNotFoundError
            When the directory or one of its two files is missing.
        ValueError
            When the config is not valid JSON or describes an unknown model/calibrator.
        """
        directory = Path(directory)
        if not directory.is_dir():
            raise FileNotFoundError(f"Model directory {directory} does not exist.")
        missing = [name for name in (WEIGHTS_FILE, CONFIG_FILE) if not (directory / name).is_file()]
        if missing:
            raise FileNotFoundError(
                f"Model directory {directory} is missing {', '.join(missing)}; a model directory holds "
                f"{WEIGHTS_FILE} and {CONFIG_FILE} as written by `sss-viewer train`."
            )
        try:
            config = json.loads((directory / CONFIG_FILE).read_text())
        except json.JSONDecodeError as err:
            raise ValueError(f"{directory / CONFIG_FILE} is not valid JSON: {err}") from None
        missing_keys = [k for k in ("model", "preprocess", "window_length", "calibrator", "threshold") if k not in config]
        if missing_keys:
            raise ValueError(f"{directory / CONFIG_FILE} lacks the keys {missing_keys}.")
        model = model_from_config(config["model"])
        try:
            state = load_file(str(directory / WEIGHTS_FILE))
            model.load_state_dict(state)
        except Exception as err:  # safetensors / torch raise several types for a corrupt or mismatched file
            raise ValueError(f"Could not load weights from {directory / WEIGHTS_FILE}: {err}") from None
        model.to(device).eval()
        return cls(
            model=model,
            preprocess=PreprocessConfig.from_dict(config["preprocess"]),
            window_length=int(config["window_length"]),
            inference_stride=int(config.get("inference_stride") or config["window_length"] // 4),
            calibrator=calibrator_from_state(config["calibrator"]),
            threshold=float(config["threshold"]),
            info=config.get("info", {}),
        )


def atomic_write(path: Path, write) -> None:
    """Write through a temporary file in the same folder, then rename over ``path``."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    os.close(fd)
    try:
        write(tmp)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise

"""Where the bundled demo files live: the demo model and its precomputed scores (package data).

A module of its own so that the model picker (:mod:`sss_viewer.viewer._loader`) and the demo
(:mod:`sss_viewer.viewer.demo`) share the paths without importing each other.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path

__all__ = ["BUNDLED_SCORES_DIR", "DEMO_DATA_DIR", "DEMO_MODEL_DIR"]


def _package_data(*parts: str) -> Path:
    """A folder or file under ``sss_viewer/data`` as a filesystem path."""
    root = resources.files("sss_viewer")
    if not isinstance(root, Path):  # a zipped install: not supported for the demo files
        raise RuntimeError(f"sss_viewer is installed as {root!r}, not as files; the demo needs a regular install.")
    return root.joinpath("data", *parts)


DEMO_DATA_DIR = _package_data("demo")
"""``sss_viewer/data/demo``: the bundled model and its precomputed demo scores."""
DEMO_MODEL_DIR = DEMO_DATA_DIR / "model"
"""The bundled demo model directory (``model.safetensors`` + ``config.json``)."""
BUNDLED_SCORES_DIR = DEMO_DATA_DIR / "scores"
"""Demo scores precomputed by ``training/build_demo_model.py`` (used when their key matches)."""

"""Window backbones ``f_θ``: float32 windows ``(B, L)`` → one logit per window ``(B,)``."""

from sss_viewer.models.patchtst import PatchTST
from sss_viewer.models.registry import (
    FINITE_CONTEXT,
    INFINITE_CONTEXT,
    MODEL_REGISTRY,
    app_c_best,
    build_model,
    build_window_model,
    model_from_config,
)
from sss_viewer.models.revin import RevIN

__all__ = [
    "FINITE_CONTEXT",
    "INFINITE_CONTEXT",
    "MODEL_REGISTRY",
    "PatchTST",
    "RevIN",
    "app_c_best",
    "build_model",
    "build_window_model",
    "model_from_config",
]

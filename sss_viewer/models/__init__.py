"""Window backbones ``f_θ``: float32 windows ``(B, L)`` → one logit per window ``(B,)``."""

from sss_viewer.models.patchtst import PatchTST
from sss_viewer.models.registry import MODEL_REGISTRY, build_model, model_from_config
from sss_viewer.models.revin import RevIN

__all__ = ["MODEL_REGISTRY", "PatchTST", "RevIN", "build_model", "model_from_config"]

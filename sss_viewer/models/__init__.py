"""Window backbones ``f_θ``: float32 windows ``(B, L)`` → one logit per window ``(B,)``."""

from sss_viewer._lazy import attach

_PUBLIC = {
    "sss_viewer.models.registry": (
        "FINITE_CONTEXT",
        "INFINITE_CONTEXT",
        "MODEL_REGISTRY",
        "app_c_best",
        "build_model",
        "build_window_model",
        "model_from_config",
    ),
    "sss_viewer.models.base": ("WindowModel",),
    "sss_viewer.models.revin": ("MaskedRevIN", "RevIN"),
    "sss_viewer.models.patchtst": ("PatchTST",),
    "sss_viewer.models.dlinear": ("DLinear",),
    "sss_viewer.models.timesnet": ("TimesNet",),
    "sss_viewer.models.moderntcn": ("ModernTCN",),
    "sss_viewer.models.mamba": ("MambaClassifier",),
    "sss_viewer.models.rnn": ("GRUClassifier", "LSTMClassifier"),
    "sss_viewer.models.rocket": ("RocketClassifier",),
    "sss_viewer.models.minirocket": ("MiniRocketClassifier",),
    "sss_viewer.models.minirocket_features": ("MiniRocketFeatures",),
    "sss_viewer.models.hydra": ("HydraClassifier", "HydraMiniRocketClassifier"),
    "sss_viewer.models.hydra_features": ("HydraFeatures",),
}
"""The public names, by the module that defines them; each is imported on first use (:mod:`sss_viewer._lazy`)."""

__getattr__, __dir__, __all__ = attach(__name__, _PUBLIC)

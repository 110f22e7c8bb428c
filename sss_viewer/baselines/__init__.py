"""Stage 8 — baselines the paper and the issues compare SSS against.

``global_features`` (whole-channel statistics + logistic regression: the "no local model" control) ·
``whole_channel`` (the paper's deep baselines trained on whole channels) · ``minirocket_reference``
(MiniRocket-LR on whole segments).
"""

from sss_viewer._lazy import attach

_PUBLIC = {
    # the function global_features shares its module's name: sss_viewer.baselines.global_features.global_features
    "sss_viewer.baselines.global_features": ("FEATURE_NAMES", "GlobalFeatureBaseline", "feature_matrix"),
    "sss_viewer.baselines.whole_channel": (
        "WholeChannelConfig",
        "WholeChannelResult",
        "fit_whole_channel",
        "predict_channels",
    ),
    "sss_viewer.baselines.minirocket_reference": ("ReferenceResult", "fit_minirocket_logistic"),
    "sss_viewer.baselines.hydra_reference": ("PeerResult", "fit_hydra_peer"),
}
"""The public names, by the module that defines them; each is imported on first use (:mod:`sss_viewer._lazy`)."""

__getattr__, __dir__, __all__ = attach(__name__, _PUBLIC)

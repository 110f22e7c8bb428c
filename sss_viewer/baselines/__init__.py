"""Stage 8 — baselines the paper and the issues compare SSS against.

``global_features`` (whole-channel statistics + logistic regression: the "no local model" control) ·
``whole_channel`` (the paper's deep baselines trained on whole channels) · ``minirocket_reference``
(MiniRocket-LR on whole segments).
"""

from sss_viewer.baselines.global_features import FEATURE_NAMES, GlobalFeatureBaseline, feature_matrix, global_features

__all__ = ["FEATURE_NAMES", "GlobalFeatureBaseline", "feature_matrix", "global_features"]

"""Stage 6 — engine: training, calibration, the saved model and scoring.

``config`` (``TrainConfig``, presets) · ``fit`` (Adam + cosine + early stopping, class balance,
seeded torch state) · ``early_stopping`` · ``head_fit`` (L-BFGS head on frozen features) ·
``feature_memo`` · ``training`` (Algorithm 1 end to end) · ``calibration`` (isotonic,
Venn–Abers) · ``bundle`` (``ModelBundle``: safetensors + JSON, validated on load) · ``inference``
(window probabilities, channel aggregation, ``score_recording``) · ``device``.
"""

from sss_viewer._lazy import attach

_PUBLIC = {
    "sss_viewer.engine.config": ("TRAIN_PRESETS", "TrainConfig", "train_preset"),
    "sss_viewer.engine.training": ("train",),
    "sss_viewer.engine.bundle": ("ModelBundle", "check_model_destination"),
    "sss_viewer.engine.inference": (
        "RecordingScores",
        "aggregate_channels",
        "fine_heat_stride",
        "predict_window_probs",
        "score_recording",
        "window_heatmap",
    ),
    "sss_viewer.engine.calibration": (
        "IdentityCalibrator",
        "IsotonicCalibrator",
        "VennAbersCalibrator",
        "make_calibrator",
    ),
    "sss_viewer.engine.score_files": ("SCORE_MANIFEST", "ranking_table", "read_scores", "save_scores", "write_csv"),
    "sss_viewer.engine.checkpoint": ("TrainingCheckpoint", "checkpoint_path_for"),
    "sss_viewer.engine.device": ("resolve_device",),
}
"""The public names, by the module that defines them; each is imported on first use (:mod:`sss_viewer._lazy`)."""

__getattr__, __dir__, __all__ = attach(__name__, _PUBLIC)

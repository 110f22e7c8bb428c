"""Stage 7 — evaluation of a trained model on held-out recordings (channel metrics, heat-map timing)."""

from sss_viewer._lazy import attach

_PUBLIC = {
    "sss_viewer.evaluation.held_out": ("evaluate_bundle", "heatmap_abnormal_auc", "held_out_selection"),
    "sss_viewer.evaluation.patient_ranking": ("rank_patient_channels",),
    "sss_viewer.evaluation.scoreboard": ("LabelledRecording", "choose_default", "run_scoreboard"),
}
"""The public names, by the module that defines them; each is imported on first use (:mod:`sss_viewer._lazy`)."""

__getattr__, __dir__, __all__ = attach(__name__, _PUBLIC)

"""Stage 7 — evaluation of a trained model on held-out recordings (channel metrics, heat-map timing)."""

from sss_viewer.evaluation.held_out import evaluate_bundle, heatmap_abnormal_auc, held_out_selection

__all__ = ["evaluate_bundle", "heatmap_abnormal_auc", "held_out_selection"]

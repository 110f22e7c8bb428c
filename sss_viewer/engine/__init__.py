"""Stage 6 — engine: training, calibration, the saved model and scoring.

``config`` (``TrainConfig``, presets) · ``fit`` (Adam + cosine + early stopping, class balance,
seeded torch state) · ``early_stopping`` · ``head_fit`` (L-BFGS head on frozen features) ·
``feature_memo`` · ``training`` (Algorithm 1 end to end) · ``calibration`` (isotonic,
Venn–Abers) · ``bundle`` (``ModelBundle``: safetensors + JSON, validated on load) · ``inference``
(window probabilities, channel aggregation, ``score_recording``) · ``device``.
"""

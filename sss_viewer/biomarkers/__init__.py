"""Training-free SOZ markers as scorers, with the same outputs as the SSS engine.

Each scorer turns a :class:`~sss_viewer.io.recording.Recording` into a
:class:`~sss_viewer.engine.inference.RecordingScores` (a window table for the heat map and a ranked
channel table), after leaving out the windows the artifact detector flags::

    from sss_viewer.biomarkers import get_scorer
    scores = get_scorer("consensus").score(recording)

``sss`` (a trained model) is scored by :func:`sss_viewer.engine.inference.score_recording`;
:func:`score_with` takes either.
"""

from __future__ import annotations

from sss_viewer._lazy import attach

_PUBLIC = {
    "sss_viewer.biomarkers.registry": (
        "DEFAULT_SCORER",
        "DEFAULT_SCORER_EVIDENCE",
        "FITTED",
        "FLOORS",
        "MODEL_SCORER",
        "SCORERS",
        "get_scorer",
        "scorer_class",
        "scorer_names",
    ),
    "sss_viewer.biomarkers.base": ("BiomarkerScorer", "ScorerInfo"),
    "sss_viewer.biomarkers.combined": (
        "COMBINED_MARKERS",
        "CombinedScorer",
        "fit_combined",
        "load_weights",
        "save_weights",
    ),
    "sss_viewer.biomarkers.hfo": ("detect_hfos",),
    "sss_viewer.biomarkers.spikes": ("detect_spikes",),
    "sss_viewer.biomarkers.epileptogenicity": ("epileptogenicity_index",),
}
"""The public names, by the module that defines them; each is imported on first use (:mod:`sss_viewer._lazy`)."""

__getattr__, __dir__, _LAZY_ALL = attach(__name__, _PUBLIC)


def is_marker(scorer) -> bool:
    """Whether ``scorer`` is a training-free scorer rather than a trained model bundle.

    Parameters
    ----------
    scorer : ModelBundle or BiomarkerScorer

    Returns
    -------
    bool
        True for a :class:`~sss_viewer.biomarkers.base.BiomarkerScorer`, False otherwise.
    """
    from sss_viewer.biomarkers.base import BiomarkerScorer

    return isinstance(scorer, BiomarkerScorer)


def score_with(scorer, recording, **options):
    """Score ``recording`` with a trained model bundle or a training-free scorer.

    Parameters
    ----------
    scorer : ModelBundle or BiomarkerScorer
    recording : Recording
    **options
        ``progress`` and ``on_progress`` for either; the others (``stride``, ``device``,
        ``first_channels``, …) for a model only.

    Returns
    -------
    RecordingScores
    """
    if is_marker(scorer):
        return scorer.score(recording, progress=options.get("progress", False), on_progress=options.get("on_progress"))
    from sss_viewer.engine.inference import score_recording

    return score_recording(scorer, recording, **options)


__all__ = sorted([*_LAZY_ALL, "is_marker", "score_with"])

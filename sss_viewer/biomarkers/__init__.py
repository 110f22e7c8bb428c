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

from sss_viewer.biomarkers.registry import (  # noqa: F401  (the public names)
    DEFAULT_SCORER,
    DEFAULT_SCORER_EVIDENCE,
    FITTED,
    FLOORS,
    MODEL_SCORER,
    SCORERS,
    get_scorer,
    scorer_class,
    scorer_names,
)


def is_marker(scorer) -> bool:
    """True for a training-free scorer, False for a trained model bundle."""
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


__all__ = ["DEFAULT_SCORER", "DEFAULT_SCORER_EVIDENCE", "FITTED", "FLOORS", "MODEL_SCORER", "SCORERS", "get_scorer", "is_marker", "score_with", "scorer_class", "scorer_names"]

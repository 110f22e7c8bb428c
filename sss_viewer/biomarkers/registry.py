"""The scorer registry: names, the default and how it was chosen (no scorer module is imported here).

Scorer modules import this one (a consensus builds its components by name); the package's
``__init__`` re-exports it.
"""

from __future__ import annotations

import importlib

from sss_viewer._validate import check_option

SCORERS: dict[str, str] = {
    "variance": "sss_viewer.biomarkers._floors:VarianceScorer",
    "amplitude": "sss_viewer.biomarkers._floors:AmplitudeScorer",
    "line_length": "sss_viewer.biomarkers._floors:LineLengthScorer",
    "ripple_rate": "sss_viewer.biomarkers._markers:RippleRateScorer",
    "fast_ripple_rate": "sss_viewer.biomarkers._markers:FastRippleRateScorer",
    "spike_rate": "sss_viewer.biomarkers._markers:SpikeRateScorer",
    "spike_rate_amplitude": "sss_viewer.biomarkers._markers:SpikeRateAmplitudeScorer",
    "epileptogenicity": "sss_viewer.biomarkers._markers:EpileptogenicityScorer",
    "energy_ratio": "sss_viewer.biomarkers._markers:EnergyRatioScorer",
    "hfa": "sss_viewer.biomarkers._markers:HighFrequencyActivityScorer",
    "consensus": "sss_viewer.biomarkers._consensus:ConsensusScorer",
    "combined": "sss_viewer.biomarkers.combined:CombinedScorer",
}
"""Registry name → ``module:class`` of every training-free scorer (imported on first use)."""

MODEL_SCORER = "sss"
"""The name of a trained SSS model among the scorers (``score --scorer sss``, the default with a model)."""

DEFAULT_SCORER = "spike_rate"
"""What ranks a recording when nobody chooses (the CLI without a model, the viewer, the API): chosen by the
rule registered in docs/results.md §8 before the comparison ran, from the real-data scoreboard
(``sss-viewer scoreboard --shared ../shared/data --synthetic 8 --model experiments/scale/L512-recording/model``).
The viewer's ``SSS_VIEWER_SCORER`` overrides it for a site (e.g. ``sss`` for a centre's own model)."""

DEFAULT_SCORER_EVIDENCE = (
    "default by the rule registered before the comparison (docs/results.md §8): channel AUC 0.839 on ds003029 "
    "pt01 and 0.652 on Bonn D vs C (mean 0.746, +0.002 over the best trivial floor, channel variance 0.743), "
    "0.928 on 8 held-out synthetic patients; not validated on recordings from other centres"
)
"""How the default scorer was validated, in words: shown beside its ranking (the figures of docs/results.md §8)."""

FITTED = ("combined",)
"""Scorers that need fitted weights (``weights=`` a file from ``sss-viewer fit-combined``): not built without them."""

FLOORS = ("variance", "amplitude", "line_length")
"""The trivial floors every ranking is reported beside."""


def scorer_class(name: str) -> type:
    """The class of the training-free scorer ``name`` (a ValueError lists the names).

    Parameters
    ----------
    name : str
        A key of :data:`SCORERS`; its module is imported here on first use.

    Returns
    -------
    type
        The scorer's class (a ``BiomarkerScorer`` subclass), not an instance: see :func:`get_scorer`.

    Raises
    ------
    ValueError
        ``name`` is not a key of :data:`SCORERS` (the message lists them).
    """
    check_option("scorer", name, SCORERS)
    module, _, cls = SCORERS[name].partition(":")
    return getattr(importlib.import_module(module), cls)


def get_scorer(name: str, **params):
    """A new training-free scorer by registry name.

    Parameters
    ----------
    name : str
        One of :data:`SCORERS`.
    **params
        Passed to its constructor (``window_s``, ``step_s``, ``artifacts``, …).

    Returns
    -------
    BiomarkerScorer
    """
    return scorer_class(name)(**params)


def scorer_names(*, with_model: bool = True, with_fitted: bool = True) -> list[str]:
    """Every scorer name, ``sss`` first when ``with_model``; the ones needing weights (:data:`FITTED`) unless not ``with_fitted``.

    Parameters
    ----------
    with_model : bool
        Start with :data:`MODEL_SCORER` (``"sss"``, a trained model's scores).
    with_fitted : bool
        Include the scorers that need fitted weights (:data:`FITTED`).

    Returns
    -------
    list of str
        The names, the training-free ones in :data:`SCORERS`' order.
    """
    names = [n for n in SCORERS if with_fitted or n not in FITTED]
    return ([MODEL_SCORER] if with_model else []) + names

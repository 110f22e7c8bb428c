"""A consensus of published interictal markers: the mean within-recording percentile rank.

Each component ranks the recording's channels by its own value; a channel's consensus value is
the mean of its percentile ranks (ties share their mean rank; 1/n … 1). Ranks, not values, are
averaged so that no marker's unit or scale dominates and one extreme channel moves each component
by one rank at most. Components whose sampling-rate needs the recording does not meet are left out
(ripples need ≥ 556 Hz) and named in the scorer's description of the result.

Why these components (the choice is written down in docs/results.md before the comparison ran):
robust amplitude and line length are the strongest one-line statistics on real SOZ (they rank
resected contacts at 0.82–0.93 channel AUC in the recordings this issue was judged on); interictal
spike rate (Janča et al. 2015's detector) and ripple rate (Staba et al. 2002's detector) are the
two most studied interictal SOZ markers. Combining several markers is the published direction
(e.g. Varatharajah et al. 2018; Cimbálník et al. 2019) — here without fitted weights, so nothing is
tuned to the few labelled recordings at hand.
"""

from __future__ import annotations

import dataclasses
import logging

import numpy as np
from scipy.stats import rankdata

from sss_viewer.biomarkers.base import BiomarkerScorer, ScorerInfo, WindowGrid
from sss_viewer.io.recording import Recording

logger = logging.getLogger(__name__)

CONSENSUS_COMPONENTS = ("amplitude", "line_length", "spike_rate", "ripple_rate")
"""The registry names the consensus averages, in order."""


def percentile_ranks(values: np.ndarray) -> np.ndarray:
    """Within-recording percentile rank of each finite value (1/n … 1, ties averaged), NaN stays NaN.

    Parameters
    ----------
    values : ndarray, shape (n_channels,)

    Returns
    -------
    ranks : ndarray, shape (n_channels,), float64
    """
    values = np.asarray(values, dtype=np.float64)
    out = np.full(values.shape, np.nan)
    finite = np.isfinite(values)
    if finite.any():
        out[finite] = rankdata(values[finite], method="average") / finite.sum()
    return out


class ConsensusScorer(BiomarkerScorer):
    """Mean percentile rank of robust amplitude, line length, spike rate and ripple rate.

    Parameters
    ----------
    components : tuple of str
        Registry names of the markers averaged (default :data:`CONSENSUS_COMPONENTS`).
    **params
        ``window_s``, ``step_s``, ``artifacts`` (shared by every component).
    """

    info = ScorerInfo(
        name="consensus",
        title="Marker consensus",
        unit="mean percentile rank",
        reference="mean rank of robust amplitude, line length, spike rate (Janča et al. 2015) and ripple rate "
        "(Staba et al. 2002)",
        kind="consensus",
    )

    def __init__(self, components: tuple[str, ...] = CONSENSUS_COMPONENTS, **params):
        super().__init__(**params)
        from sss_viewer.biomarkers.registry import FITTED, SCORERS, get_scorer

        markers = [n for n in SCORERS if n != "consensus" and n not in FITTED]
        unknown = [c for c in components if c not in markers]
        if unknown or not components:
            raise ValueError(
                f"Invalid components={components!r}: expected registry names of markers, one or more of {markers}."
            )
        self.components = tuple(components)
        self._scorers = [
            get_scorer(c, window_s=self.window_s, step_s=self.step_s, artifacts=self.artifacts) for c in self.components
        ]

    def usable(self, recording: Recording) -> list[BiomarkerScorer]:
        """The components that can score ``recording`` (others are named in the log)."""
        usable = []
        for scorer in self._scorers:
            reason = scorer.check_fit(recording)
            if reason is None:
                usable.append(scorer)
            else:
                logger.info("consensus leaves out %s: %s", scorer.info.name, reason)
        return usable

    def describe(self, recording: Recording) -> ScorerInfo:
        """:attr:`info` with the components that scored ``recording`` (and those left out) named."""
        used = [s.info.name for s in self.usable(recording)]
        left = [c for c in self.components if c not in used]
        reference = f"mean percentile rank of {', '.join(used)}" + (
            f" ({', '.join(left)} left out: sampling rate)" if left else ""
        )
        return dataclasses.replace(self.info, reference=reference)

    def check_fit(self, recording: Recording) -> str | None:
        reason = super().check_fit(recording)
        if reason is None and not self.usable(recording):
            reason = (
                f"none of the consensus components ({', '.join(self.components)}) can score recording {recording.label}"
            )
        return reason

    def evaluate(
        self, data: np.ndarray, grid: WindowGrid, recording: Recording, clean: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Mean of the components' normalised window values and of their channel percentile ranks.

        Returns
        -------
        values : ndarray, shape (n_channels, n_windows)
            Mean over components of each window's value divided by that component's top channel value.
        channel_value : ndarray, shape (n_channels,)
            Mean percentile rank over components (NaN where any component has no clean window).
        clean : ndarray, shape (n_channels, n_windows), bool
        """
        window_parts, rank_parts = [], []
        for scorer in self.usable(recording):
            values, channel_value, ok = scorer.evaluate(data, grid, recording, clean)
            finite = channel_value[np.isfinite(channel_value)]
            top = float(finite.max()) if finite.size and finite.max() > 0 else 1.0
            window_parts.append(np.where(np.isfinite(values), values / top, np.nan))
            rank_parts.append(percentile_ranks(channel_value))
            clean = clean & ok
        with np.errstate(invalid="ignore"):
            values = np.mean(window_parts, axis=0)
            channel_value = np.mean(rank_parts, axis=0)
        return values, channel_value, clean

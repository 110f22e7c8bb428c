"""The scorer contract: a training-free marker scores a recording with the same outputs as SSS.

A :class:`BiomarkerScorer` reads a recording's good iEEG channels, lays one grid of windows over
them (``window_s`` long, every ``step_s``), computes one value per channel and window
(:meth:`BiomarkerScorer.window_values`, in the marker's own unit), leaves out the windows that the
artifact detector flags, and returns a :class:`~sss_viewer.engine.inference.RecordingScores` — the
window table under the traces' heat map and the channel ranking — as the SSS engine does.

How values become the viewer's 0–1 scale (written once, here):

- a channel's ``value`` is the mean of its clean windows' values (a rate for event markers, a mean
  power or line length otherwise; :meth:`BiomarkerScorer.channel_values` may define another, e.g.
  the Epileptogenicity Index);
- its ``score`` is ``value / max(value)`` over the recording's channels — the normalisation of the
  Epileptogenicity Index (Bartolomei et al. 2008), so the top channel scores 1 and scores are
  comparable within one recording only;
- a window's ``p_cal`` (what the heat map draws) is its value divided by the same maximum, clipped
  to [0, 1]; ``p_raw`` keeps the value in the marker's unit; ``p0``/``p1`` are NaN (no interval).
"""

from __future__ import annotations

import dataclasses
import logging
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import ClassVar

import numpy as np
import pandas as pd

from sss_viewer._validate import check_range
from sss_viewer.engine.inference import RecordingScores
from sss_viewer.io.recording import IEEG_CH_TYPES, Recording
from sss_viewer.preprocessing.filters import unusable_reason

logger = logging.getLogger(__name__)

WINDOW_S = 2.0
"""Default window of every marker (s): short clips (5 s) still give several windows."""
STEP_S = 1.0
"""Default step between windows (s)."""
READ_BLOCK_CHANNELS = 16
"""Channels read from the recording at a time."""


@dataclass(frozen=True)
class ScorerInfo:
    """What a scorer is, for the ranking, the report and the scoreboard.

    Parameters
    ----------
    name : str
        Registry name (``score --scorer NAME``).
    title : str
        Short human name, e.g. ``"Line length"``.
    unit : str
        Unit of the channel ``value`` column.
    reference : str
        The published method it follows.
    kind : str
        ``"floor"`` (a trivial statistic every ranking is read beside), ``"biomarker"``,
        ``"consensus"`` or ``"model"``.
    validation : str
        How it was validated, in words (shown in the app beside the ranking).
    """

    name: str
    title: str
    unit: str
    reference: str
    kind: str = "biomarker"
    validation: str = "training-free: nothing fitted; see docs/results.md (real-data scoreboard)"

    def as_dict(self) -> dict:
        """The fields as a JSON-serialisable dict."""
        return dict(self.__dict__)


@dataclass
class WindowGrid:
    """One grid of windows over a recording.

    Parameters
    ----------
    starts : ndarray, shape (n_windows,), int64
        First sample of each window.
    length : int
        Samples per window (the whole recording when it is shorter than one window).
    sfreq : float
        Sampling rate (Hz).
    """

    starts: np.ndarray
    length: int
    sfreq: float

    @classmethod
    def over(cls, n_times: int, sfreq: float, window_s: float, step_s: float) -> WindowGrid:
        """Windows of ``window_s`` every ``step_s`` covering ``n_times`` samples, the last one ending at the end."""
        length = min(n_times, max(1, int(round(window_s * sfreq))))
        step = max(1, int(round(step_s * sfreq)))
        starts = np.arange(0, n_times - length + 1, step, dtype=np.int64)
        if starts[-1] + length < n_times:
            starts = np.append(starts, n_times - length)
        return cls(starts=starts, length=length, sfreq=float(sfreq))

    @property
    def start_s(self) -> np.ndarray:
        """Window starts in seconds, shape (n_windows,)."""
        return self.starts / self.sfreq

    @property
    def end_s(self) -> np.ndarray:
        """Window ends in seconds, shape (n_windows,)."""
        return (self.starts + self.length) / self.sfreq

    def segments(self, data: np.ndarray) -> np.ndarray:
        """Every window of every channel as a strided view, shape (n_channels, n_windows, length)."""
        view = np.lib.stride_tricks.sliding_window_view(data, self.length, axis=-1)
        return view[:, self.starts]


class BiomarkerScorer:
    """Base class of training-free scorers (one marker, one value per channel and window).

    Parameters
    ----------
    window_s : float
        Window length in seconds.
    step_s : float
        Step between windows in seconds.
    artifacts : bool
        Detect artifacts first and leave flagged windows out of the channel values (default).
        False keeps every window; flagged channels are still named in the ranking.
    """

    info: ClassVar[ScorerInfo]
    min_sfreq: ClassVar[float] = 0.0
    """Lowest sampling rate (Hz) the marker needs; a slower recording is refused with the reason."""
    threshold: float = 0.5
    """Default highlight threshold on the 0–1 score: half the top channel's value."""

    def __init__(self, *, window_s: float = WINDOW_S, step_s: float = STEP_S, artifacts: bool = True):
        check_range("window_s", window_s, 0, None, low_inclusive=False)
        check_range("step_s", step_s, 0, None, low_inclusive=False)
        self.window_s = float(window_s)
        self.step_s = float(step_s)
        self.artifacts = bool(artifacts)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(window_s={self.window_s:g}, step_s={self.step_s:g}, artifacts={self.artifacts})"

    # -- what subclasses define -------------------------------------------------------------------

    def window_values(self, data: np.ndarray, grid: WindowGrid, recording: Recording) -> np.ndarray:
        """The marker's value in every window of every channel.

        Parameters
        ----------
        data : ndarray, shape (n_channels, n_times), float32, µV
            The scored channels (finite, not flat).
        grid : WindowGrid
        recording : Recording
            For metadata only (``line_freq``, ``seizure_onset_s``, events); read ``data``, not it.

        Returns
        -------
        values : ndarray, shape (n_channels, n_windows), float64, ≥ 0
        """
        raise NotImplementedError

    def channel_values(
        self, values: np.ndarray, clean: np.ndarray, data: np.ndarray, grid: WindowGrid, recording: Recording
    ) -> np.ndarray:
        """One value per channel: the mean over its clean windows (NaN where none is clean).

        Parameters
        ----------
        values : ndarray, shape (n_channels, n_windows)
        clean : ndarray, shape (n_channels, n_windows), bool
        data, grid, recording
            As for :meth:`window_values`, for markers that need them.

        Returns
        -------
        value : ndarray, shape (n_channels,), float64
        """
        counts = clean.sum(axis=1)
        total = np.where(clean, values, 0.0).sum(axis=1)
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(counts > 0, total / np.maximum(counts, 1), np.nan)

    def evaluate(
        self, data: np.ndarray, grid: WindowGrid, recording: Recording, clean: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Window values, channel values and the windows they were taken from.

        :meth:`window_values`, then :meth:`channel_values` over the artifact-free windows with a
        finite value; a scorer whose channel value is not an average of its windows' overrides this.

        Parameters
        ----------
        data : ndarray, shape (n_channels, n_times), float32, µV
        grid : WindowGrid
        recording : Recording
        clean : ndarray, shape (n_channels, n_windows), bool
            Windows free of artifacts (all True when artifacts are kept).

        Returns
        -------
        values : ndarray, shape (n_channels, n_windows), float64
        channel_value : ndarray, shape (n_channels,), float64
        clean : ndarray, shape (n_channels, n_windows), bool
        """
        values = np.asarray(self.window_values(data, grid, recording), dtype=np.float64)
        expected = (data.shape[0], len(grid.starts))
        if values.shape != expected:
            raise RuntimeError(f"{type(self).__name__}.window_values gave shape {values.shape}, expected {expected}")
        clean = clean & np.isfinite(values)
        channel_value = np.asarray(self.channel_values(values, clean, data, grid, recording), dtype=np.float64)
        return values, channel_value, clean

    def tie_break_values(
        self, data: np.ndarray, grid: WindowGrid, recording: Recording, clean: np.ndarray
    ) -> np.ndarray | None:
        """A second value per channel that orders channels whose channel values are equal, or None (ties by name).

        Parameters
        ----------
        data, grid, recording
            As for :meth:`window_values`.
        clean : ndarray, shape (n_channels, n_windows), bool
            The windows the channel values were taken from (the second value reads the same ones).

        Returns
        -------
        ndarray, shape (n_channels,), float64, or None
        """
        return None

    def describe(self, recording: Recording) -> ScorerInfo:
        """What scored ``recording``, for its result (:attr:`info`; a composite names its parts).

        The default scorer's ``validation`` is the evidence that made it the default
        (:data:`sss_viewer.biomarkers.DEFAULT_SCORER_EVIDENCE`).
        """
        from sss_viewer.biomarkers.registry import DEFAULT_SCORER, DEFAULT_SCORER_EVIDENCE

        if self.info.name == DEFAULT_SCORER:
            return dataclasses.replace(self.info, validation=DEFAULT_SCORER_EVIDENCE)
        return self.info

    def check_fit(self, recording: Recording) -> str | None:
        """Why this scorer cannot score ``recording``, or None when it can."""
        if recording.sfreq < self.min_sfreq:
            return (
                f"{self.info.title} needs a sampling rate of at least {self.min_sfreq:g} Hz; recording "
                f"{recording.label} is sampled at {recording.sfreq:g} Hz."
            )
        if len(recording.ieeg_picks()) == 0:
            types = ", ".join(sorted(set(recording.ch_types))) or "none"
            return (
                f"Recording {recording.label} has no good iEEG channel to score: {self.info.title} scores "
                f"{'/'.join(IEEG_CH_TYPES)} channels and the recording has channel types {types}."
            )
        return None

    # -- the shared path ----------------------------------------------------------------------------

    def score(
        self,
        recording: Recording,
        *,
        progress: bool = False,
        on_progress: Callable[[float], None] | None = None,
    ) -> RecordingScores:
        """Score every good iEEG channel of ``recording``.

        Parameters
        ----------
        recording : Recording
        progress : bool
            Log progress (the markers are quick; no bar).
        on_progress : callable, optional
            Called with the fraction done (0–1); an exception it raises stops the scoring.

        Returns
        -------
        RecordingScores
            ``windows``: ``channel, start_s, end_s, p_raw`` (value), ``p_cal`` (0–1), ``p0, p1``
            (NaN), ``artifact``; ``channels``: ``channel, score, lower, upper, n_windows, rank,
            value, artifact`` (+ ``label``); ``excluded``: ``channel, reason``.

        Raises
        ------
        ValueError
            The recording cannot be scored by this marker (the reason names it).
        """
        reason = self.check_fit(recording)
        if reason is not None:
            raise ValueError(reason)
        report = progress_reporter(on_progress)
        data, names, excluded = read_scored_channels(recording)
        report(0.2)
        if not names:
            reasons = "; ".join(f"{c}: {r}" for c, r in excluded)
            raise ValueError(f"Recording {recording.label} has no channel {self.info.title} can score: {reasons}")
        grid = WindowGrid.over(data.shape[1], recording.sfreq, self.window_s, self.step_s)
        flags, channel_flags, artifact_table = artifact_flags(data, recording, names, grid, self.artifacts)
        report(0.3)
        clean = flags == "" if self.artifacts else np.ones(flags.shape, dtype=bool)
        values, channel_value, clean = self.evaluate(data, grid, recording, clean)
        tie_break = self.tie_break_values(data, grid, recording, clean)
        report(0.9)
        result = scores_from_values(
            recording,
            names,
            grid,
            values,
            channel_value,
            flags,
            channel_flags,
            excluded,
            artifact_table,
            self.describe(recording),
            clean,
            tie_break=tie_break,
        )
        report(1.0)
        if progress:
            logger.info("%s: scored %d channels of %s", self.info.name, len(names), recording.label)
        return result


def progress_reporter(on_progress: Callable[[float], None] | None) -> Callable[[float], None]:
    """``on_progress``, or a function that does nothing."""
    return on_progress if on_progress is not None else (lambda fraction: None)


def read_scored_channels(recording: Recording) -> tuple[np.ndarray, list[str], list[tuple[str, str]]]:
    """The good iEEG channels that can be scored, read into memory, and the ones left out with why.

    Returns
    -------
    data : ndarray, shape (n_scored, n_times), float32, µV
    names : list of str, length n_scored
    excluded : list of (channel, reason)
        Channels with NaN/inf samples or a flat signal, by the preprocessing's rule
        (:func:`sss_viewer.preprocessing.filters.unusable_reason`).
    """
    picks = recording.ieeg_picks()
    blocks, names, excluded = [], [], []
    for lo in range(0, len(picks), READ_BLOCK_CHANNELS):
        rows = picks[lo : lo + READ_BLOCK_CHANNELS]
        block = np.asarray(recording.get_data(rows), dtype=np.float32)
        finite = np.isfinite(block)
        for j, pick in enumerate(rows):
            name = recording.ch_names[pick]
            bad = int((~finite[j]).sum())
            raw_std = math.nan if bad else float(block[j].std(dtype=np.float64))
            reason = unusable_reason(bad, raw_std)
            if reason is None:
                names.append(name)
                blocks.append(block[j : j + 1])
            else:
                excluded.append((name, reason))
    data = np.concatenate(blocks) if blocks else np.zeros((0, recording.n_times), dtype=np.float32)
    return data, names, excluded


def artifact_flags(
    data: np.ndarray, recording: Recording, names: list[str], grid: WindowGrid, enabled: bool
) -> tuple[np.ndarray, dict[str, str], pd.DataFrame | None]:
    """Per-window artifact reasons (``""`` when clean), per-channel reasons and the report's channel table.

    Returns
    -------
    flags : ndarray, shape (n_channels, n_windows), object (str)
    channel_flags : dict of str to str
    table : DataFrame or None
        ``channel, reason`` of flagged channels (None when detection is off).
    """
    from sss_viewer.preprocessing.artifacts import detect_artifacts

    n_windows = len(grid.starts)
    flags = np.full((len(names), n_windows), "", dtype=object)
    report = detect_artifacts(data, recording.sfreq, names, line_freq=recording.line_freq)
    channel_flags = report.channel_reasons()
    if not enabled:
        return flags, channel_flags, report.channels
    channel = np.repeat(np.asarray(names, dtype=object), n_windows)
    start = np.tile(grid.start_s, len(names))
    end = np.tile(grid.end_s, len(names))
    flags = np.asarray(report.window_flags(channel, start, end), dtype=object).reshape(len(names), n_windows)
    return flags, channel_flags, report.channels


def scores_from_values(
    recording: Recording,
    names: list[str],
    grid: WindowGrid,
    values: np.ndarray,
    channel_value: np.ndarray,
    flags: np.ndarray,
    channel_flags: dict[str, str],
    excluded: list[tuple[str, str]],
    artifact_table: pd.DataFrame | None,
    info: ScorerInfo,
    clean: np.ndarray,
    *,
    tie_break: np.ndarray | None = None,
) -> RecordingScores:
    """Window and channel tables of a marker, on the 0–1 scale of the module's docstring.

    Parameters
    ----------
    recording : Recording
    names : list of str, length n_channels
    grid : WindowGrid
    values : ndarray, shape (n_channels, n_windows)
        Window values in the marker's unit.
    channel_value : ndarray, shape (n_channels,)
        Channel values in the marker's unit (NaN: no clean window).
    flags : ndarray, shape (n_channels, n_windows), object
        Artifact reason per window, ``""`` when clean.
    channel_flags : dict
        Artifact reason per flagged channel.
    excluded : list of (channel, reason)
    artifact_table : DataFrame or None
    info : ScorerInfo
    clean : ndarray, shape (n_channels, n_windows), bool
        The windows the channel values were taken from.
    tie_break : ndarray, shape (n_channels,), optional
        Orders channels of equal value (higher first) through the score: see :func:`break_ties`.

    Returns
    -------
    RecordingScores
    """
    n_channels, n_windows = values.shape
    finite = channel_value[np.isfinite(channel_value)]
    top = float(finite.max()) if finite.size and finite.max() > 0 else 1.0
    with np.errstate(invalid="ignore"):
        p_cal = np.clip(values / top, 0.0, 1.0)
    windows = pd.DataFrame(
        {
            "channel": np.repeat(np.asarray(names, dtype=object), n_windows),
            "start_s": np.tile(grid.start_s, n_channels),
            "end_s": np.tile(grid.end_s, n_channels),
            "p_raw": values.reshape(-1),
            "p_cal": p_cal.reshape(-1),
            "p0": np.nan,
            "p1": np.nan,
            "artifact": flags.reshape(-1).astype(str),
        }
    )
    score = channel_value / top
    if tie_break is not None:
        score = break_ties(score, tie_break)
    channels = pd.DataFrame(
        {
            "channel": names,
            "score": score,
            "lower": np.nan,
            "upper": np.nan,
            "n_windows": clean.sum(axis=1).astype(np.int64),
            "value": channel_value,
            "artifact": [channel_flags.get(n, "") or _no_clean_window(clean[i], flags[i]) for i, n in enumerate(names)],
        }
    )
    channels = rank_channels(channels)
    if recording.soz is not None:
        labels = {c: int(s) for c, s in zip(recording.ch_names, recording.soz)}
        channels["label"] = channels["channel"].map(labels).astype("Int64")
    return RecordingScores(
        windows=windows,
        channels=channels,
        excluded=pd.DataFrame(excluded, columns=["channel", "reason"]),
        duration_s=recording.duration_s,
        artifacts=artifact_table,
        scorer=info.name,
        scorer_info=info.as_dict(),
    )


TIE_SHARE = 1e-3
"""How far a tie-break may move a score: this share of the smallest gap between distinct scores."""


def break_ties(score: np.ndarray, secondary: np.ndarray) -> np.ndarray:
    """Scores that keep their order and order equal scores by ``secondary`` (lexicographic ranking).

    Each finite score gains ``ε × q``, ``q`` the channel's within-recording percentile rank of
    ``secondary`` (0 where it is not finite), ``ε`` :data:`TIE_SHARE` of the smallest gap between
    distinct scores (of 1 when all are equal); the result is divided by ``1 + ε`` so the top stays ≤ 1.
    A channel with a higher score stays above one with a lower score whatever their secondary values.

    Parameters
    ----------
    score : ndarray, shape (n_channels,)
        Scores in 0–1 (NaN: unscored, stays NaN).
    secondary : ndarray, shape (n_channels,)

    Returns
    -------
    ndarray, shape (n_channels,), float64
    """
    from scipy.stats import rankdata

    score = np.asarray(score, dtype=np.float64)
    secondary = np.asarray(secondary, dtype=np.float64)
    if secondary.shape != score.shape:
        raise ValueError(
            f"Invalid tie_break: expected one value per channel ({score.shape}), got shape {secondary.shape}."
        )
    finite = np.isfinite(score)
    distinct = np.unique(score[finite])
    gap = float(np.diff(distinct).min()) if distinct.size > 1 else 1.0
    epsilon = TIE_SHARE * gap
    q = np.zeros(score.shape)
    ok = np.isfinite(secondary)
    if ok.any():
        q[ok] = rankdata(secondary[ok], method="average") / ok.sum()
    return np.where(finite, (score + epsilon * q) / (1.0 + epsilon), np.nan)


def _no_clean_window(clean: np.ndarray, flags: np.ndarray) -> str:
    """A channel's artifact text when none of its windows is clean (the first window reason), else ``""``."""
    if clean.any():
        return ""
    reasons = [f for f in flags if f]
    return f"no clean window ({reasons[0]})" if reasons else ""


def rank_channels(channels: pd.DataFrame) -> pd.DataFrame:
    """Sort by score (NaN last, ties by name) and number the ranks from 1.

    Parameters
    ----------
    channels : DataFrame with ``channel`` and ``score``

    Returns
    -------
    DataFrame
        The same rows, sorted, with ``rank`` after ``n_windows``.
    """
    table = channels.sort_values(["score", "channel"], ascending=[False, True], na_position="last", kind="stable")
    table = table.reset_index(drop=True)
    position = list(table.columns).index("n_windows") + 1 if "n_windows" in table else len(table.columns)
    table.insert(position, "rank", np.arange(1, len(table) + 1))
    return table

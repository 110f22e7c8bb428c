"""Window inference, channel aggregation and the time-binned heat map.

``score_recording`` runs every window of every channel at a chosen stride and returns the window
table (channel, start_s, end_s in the recording's own seconds, p_raw, p_cal, p0, p1, artifact), the
channel table (mean of calibrated window probabilities with the mean Venn-Abers interval, ranked,
and the channel's artifact reason), and which channels were left out and why.

Before scoring, :func:`~sss_viewer.preprocessing.artifacts.detect_recording_artifacts` checks the
scored channels for flat lines, saturation, jumps, out-of-range amplitude and mains pickup; windows it
flags are left out of the ranking (``score_recording(artifacts=False)`` skips the check and keeps every
window), so an artifact contact is not ranked as seizure-onset zone.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
import torch
from tqdm.auto import tqdm

from sss_viewer.engine.device import resolve_device
from sss_viewer.io.recording import IEEG_CH_TYPES, Recording
from sss_viewer.preprocessing._artifacts_torch import DeviceArtifactCheck
from sss_viewer.preprocessing._device_series import DeviceSeriesBuilder
from sss_viewer.preprocessing.artifacts import ArtifactReport, detect_recording_artifacts
from sss_viewer.preprocessing.cache import SeriesCache
from sss_viewer.windows.series_set import build_series_set
from sss_viewer.windows.store import DeviceWindows, SeriesStore, WindowIndex

logger = logging.getLogger(__name__)

WINDOW_COLUMNS = ("channel", "start_s", "end_s", "p_raw", "p_cal", "p0", "p1")
HEAT_STRIDE_DIVISOR = 4
"""A model that reads windows within their channel has its heat map scored at this fraction of its
stride (64 for the bundled model's 256: 0.26-s steps at 250 Hz); its cost does not grow with the
stride (issue 15). The ranking stays at the model's stride."""
HEAT_WINDOW_BUDGET = 600_000
"""Most windows scored at ``heat_stride`` for the heat map (≈ 100 channels × 25 min at 250 Hz and stride 64):
beyond it the heat map reads the ranking's windows, so that binning and paging stay quick."""
CHANNEL_COLUMNS = ("channel", "score", "lower", "upper", "n_windows", "rank")
"""``RecordingScores.channels`` of a model (in memory; ``channels.csv`` holds ``score_files.ranking_table``)."""
ARTIFACT_COLUMN = "artifact"
"""Column that ``score_recording`` adds to the window tables and the channel table (after the columns
above and ``label``): why the window or channel is left out of the ranking, ``""`` when clean (or
not checked)."""


@torch.inference_mode()
def predict_window_probs(
    model: torch.nn.Module,
    store: SeriesStore,
    starts: np.ndarray,
    window_length: int,
    *,
    batch_size: int = 1024,
    device: torch.device | str = "cpu",
    progress: bool = False,
    desc: str = "score",
    on_progress: Callable[[float], None] | None = None,
) -> np.ndarray:
    """Sigmoid probability of every window.

    Parameters
    ----------
    model : nn.Module
        Maps (B, L) float32 to (B,) logits.
    store : SeriesStore or DeviceWindows
        A :class:`~sss_viewer.windows.store.DeviceWindows` (the store's samples already on ``device``)
        gathers each batch there.
    starts : ndarray, shape (n_windows,), int64
        Absolute window starts in the store's address space.
    window_length : int
    batch_size : int
    device : torch.device or str
    progress : bool
    desc : str
        Progress-bar label.
    on_progress : callable, optional
        Called with the fraction of windows done (0–1) after each batch; an exception it raises
        stops the loop and propagates (a viewer uses this to cancel an outdated job).

    Returns
    -------
    p : ndarray, shape (n_windows,), float32
    """
    device = torch.device(device)
    was_training = model.training
    model.eval()
    starts = np.asarray(starts, dtype=np.int64)
    if getattr(model, "reads_series", False):
        try:
            return _series_window_probs(model, store, starts, window_length, device, progress, desc, on_progress)
        finally:
            model.train(was_training)
    out = np.empty(len(starts), dtype=np.float32)
    try:
        for lo in tqdm(range(0, len(starts), batch_size), desc=desc, unit="batch", disable=not progress or None):
            x = store.windows(starts[lo : lo + batch_size], window_length)  # a tensor from a DeviceWindows
            x = x if isinstance(x, torch.Tensor) else torch.from_numpy(x).to(device, non_blocking=True)
            out[lo : lo + len(x)] = torch.sigmoid(model(x).float()).cpu().numpy()
            if on_progress is not None:
                on_progress((lo + len(x)) / len(starts))
    finally:
        model.train(was_training)
    return out


def _series_window_probs(model, store, starts, window_length, device, progress, desc, on_progress) -> np.ndarray:
    """Window probabilities of a model that reads windows within their channel (its evidence series)."""
    with tqdm(total=len(starts), desc=desc, unit="window", disable=not progress or None) as bar:

        def report(fraction: float) -> None:
            bar.update(round(fraction * len(starts)) - bar.n)
            if on_progress is not None:
                on_progress(fraction)

        logits = model.store_window_logits(store, starts, window_length, device=device, on_progress=report)
    return (0.5 * (1.0 + np.tanh(0.5 * logits))).astype(np.float32)


def aggregate_channels(
    windows: pd.DataFrame, labels: dict[str, int] | None = None, *, exclude: np.ndarray | pd.Series | None = None
) -> pd.DataFrame:
    """Mean (convex) aggregation of calibrated window probabilities per channel, ranked.

    Parameters
    ----------
    windows : DataFrame
        Window table with columns ``channel``, ``p_cal``, ``p0``, ``p1``.
    labels : dict, optional
        ``{channel: 0/1}`` clinician SOZ labels; adds a ``label`` column when given.
    exclude : array-like of bool, shape (n_windows,), optional
        Windows left out of the means (artifacts). A channel all of whose windows are left out
        keeps its row with ``score``/``lower``/``upper`` NaN and ``n_windows`` 0, ranked after
        every scored channel. Default: every window counts.

    Returns
    -------
    channels : DataFrame, one row per channel
        ``channel, score, lower, upper, n_windows, rank`` (+ ``label``), sorted by rank
        (1 = most likely SOZ; channels without a score last, by name). ``score`` is a valid
        probability because it is a convex combination of probabilities; ``lower``/``upper`` are
        the mean p0 and p1; ``n_windows`` counts the windows averaged.
    """
    channels = pd.unique(windows["channel"])
    if exclude is not None:
        exclude = np.asarray(exclude, dtype=bool)
        if exclude.shape != (len(windows),):
            raise ValueError(f"exclude must have shape ({len(windows)},), one flag per window; got {exclude.shape}.")
        windows = windows[~exclude]
    grouped = windows.groupby("channel", sort=False)
    table = pd.DataFrame(
        {
            "score": grouped["p_cal"].mean(),
            "lower": grouped["p0"].mean(),
            "upper": grouped["p1"].mean(),
            "n_windows": grouped["p_cal"].size(),
        }
    )
    table = table.reindex(pd.Index(channels, name="channel")).reset_index()
    table["n_windows"] = table["n_windows"].fillna(0).astype(np.int64)
    table = table.sort_values(
        ["score", "channel"], ascending=[False, True], kind="stable", na_position="last"
    ).reset_index(drop=True)
    table["rank"] = np.arange(1, len(table) + 1)
    if labels is not None:
        table["label"] = table["channel"].map(labels).astype("Int64")
    return table


def window_heatmap(
    windows: pd.DataFrame, channels: list[str], duration_s: float, bin_s: float
) -> tuple[np.ndarray, np.ndarray]:
    """Average window probabilities into fixed time bins, weighting by overlap.

    Each bin's value is ``sum_w p_w * |w ∩ bin| / sum_w |w ∩ bin|`` over the windows ``w`` of that
    channel: a window counts in proportion to how much of it falls inside the bin.

    Parameters
    ----------
    windows : DataFrame
        Window table with ``channel``, ``start_s``, ``end_s`` and ``p_cal``.
    channels : list of str, length n_channels
        Row order of the result.
    duration_s : float
        Recording length; bins cover ``[0, duration_s]``.
    bin_s : float
        Bin width in seconds.

    Returns
    -------
    values : ndarray, shape (n_channels, n_bins), float64
        NaN where no window covers a bin.
    edges : ndarray, shape (n_bins + 1,)
        Bin edges in seconds.
    """
    if bin_s <= 0:
        raise ValueError(f"Invalid bin_s={bin_s!r}: expected a positive number of seconds.")
    n_bins = max(1, int(np.ceil(duration_s / bin_s - 1e-9)))
    edges = np.arange(n_bins + 1) * bin_s
    row_of = {c: i for i, c in enumerate(channels)}
    rows = windows["channel"].map(row_of)
    keep = rows.notna().to_numpy()
    rows = rows.to_numpy()[keep].astype(np.int64)
    start = windows["start_s"].to_numpy()[keep]
    end = windows["end_s"].to_numpy()[keep]
    p = windows["p_cal"].to_numpy()[keep]
    weighted = np.zeros((len(channels), n_bins))
    weight = np.zeros((len(channels), n_bins))
    first = np.clip(np.floor(start / bin_s).astype(np.int64), 0, n_bins - 1)
    last = np.clip(np.ceil(end / bin_s).astype(np.int64) - 1, 0, n_bins - 1)
    for k in range(int((last - first).max(initial=-1)) + 1):
        b = first + k
        ok = b <= last
        overlap = np.minimum(end[ok], edges[b[ok] + 1]) - np.maximum(start[ok], edges[b[ok]])
        overlap = np.maximum(overlap, 0.0)
        np.add.at(weighted, (rows[ok], b[ok]), overlap * p[ok])
        np.add.at(weight, (rows[ok], b[ok]), overlap)
    with np.errstate(invalid="ignore", divide="ignore"):
        values = np.where(weight > 0, weighted / weight, np.nan)
    return values, edges


@dataclass
class RecordingScores:
    """The result of scoring one recording.

    Parameters
    ----------
    windows : DataFrame
        ``channel, start_s, end_s, p_raw, p_cal, p0, p1``, one row per window (+ ``artifact``: why
        the window is left out of the ranking, ``""`` when it counts; from ``score_recording``).
    channels : DataFrame
        ``channel, score, lower, upper, n_windows, rank`` (+ ``label`` when known) (+ ``artifact``:
        the channel's artifact reason or ``""``; its ``score`` is NaN when no window of it is clean).
    excluded : DataFrame
        Channels not scored: ``channel, reason``.
    duration_s : float
        Length of the recording in seconds.
    pending : int
        Channels not scored yet (a partial result, see ``score_recording(first_channels=...)``); 0
        when complete.
    heat_windows : DataFrame, optional
        The same columns as ``windows`` at a finer stride, for the heat map only (``windows`` is a
        subset of it); None when the heat map reads ``windows``.
    scorer : str
        Registry name of what scored it: ``"sss"`` for a trained model, else a training-free marker
        (``sss_viewer.biomarkers``).
    scorer_info : dict
        What the scorer is and how it was validated (``ScorerInfo.as_dict()``; for a model, from its
        bundle's description), for the ranking, the report and the CSV.
    artifacts : DataFrame, optional
        Channels flagged as artifact before scoring: ``channel, reason`` (no rows when none is);
        None when the check did not run (``score_recording(artifacts=False)``). Their windows and
        those of flagged segments carry the reason in ``windows["artifact"]`` and are left out of
        the ranking.
    """

    windows: pd.DataFrame
    channels: pd.DataFrame
    excluded: pd.DataFrame
    duration_s: float
    pending: int = 0
    heat_windows: pd.DataFrame | None = None
    scorer: str = "sss"
    scorer_info: dict = field(default_factory=dict)
    artifacts: pd.DataFrame | None = None

    @property
    def heat_table(self) -> pd.DataFrame:
        """The windows the heat map averages: ``heat_windows`` when scored finer, else ``windows``."""
        return self.windows if self.heat_windows is None else self.heat_windows

    def heatmap(self, bin_s: float = 1.0, channels: list[str] | None = None) -> tuple[np.ndarray, np.ndarray]:
        """:func:`window_heatmap` of the heat table; rows default to the ranking's order."""
        rows = list(self.channels["channel"]) if channels is None else channels
        return window_heatmap(self.heat_table, rows, self.duration_s, bin_s)

    def ranking_table(self) -> pd.DataFrame:
        """The ranking as ``channels.csv`` holds it (:func:`sss_viewer.engine.score_files.ranking_table`)."""
        from sss_viewer.engine.score_files import ranking_table

        return ranking_table(self)

    def save(self, folder, key: str | None = None) -> None:
        """Write every table at full precision into ``folder`` (:func:`sss_viewer.engine.score_files.save_scores`)."""
        from sss_viewer.engine.score_files import save_scores

        save_scores(self, folder, key)

    @classmethod
    def load(cls, folder, key: str | None = None) -> RecordingScores | None:
        """Read what :meth:`save` wrote; None when absent, unreadable or saved under another ``key``."""
        from sss_viewer.engine.score_files import read_scores

        parts = read_scores(folder, key)
        return None if parts is None else cls(**parts)


def fine_heat_stride(bundle) -> int | None:
    """The finer heat-map stride to ask ``score_recording`` for (it decides whether it applies).

    Parameters
    ----------
    bundle : ModelBundle
        The model; its ``inference_stride`` (preprocessed samples) is divided by :data:`HEAT_STRIDE_DIVISOR`.

    Returns
    -------
    int or None
        The stride in preprocessed samples, or None when the division leaves 0 (a stride under the divisor).
    """
    stride = int(bundle.inference_stride) // HEAT_STRIDE_DIVISOR
    return stride or None


def check_fit(bundle, recording: Recording) -> str | None:
    """Why ``bundle`` cannot score ``recording``, or None when it can (before any preprocessing).

    Checks, in order: the sampling rate reaches the model's preprocessing rate; one window fits in
    the recording (both durations given in seconds); there is a good iEEG channel. The viewer shows
    the reason and disables scoring; :func:`score_recording` raises it.

    Returns
    -------
    reason : str or None
    """
    label = recording.label
    try:
        bundle.preprocess.check_sfreq(recording.sfreq, what=f"recording {label}")
    except ValueError as exc:
        return str(exc)
    n_out = bundle.preprocess.output_length(recording.n_times, recording.sfreq)
    if n_out < bundle.window_length:
        rate = bundle.preprocess.output_sfreq(recording.sfreq)
        return (
            f"Recording {label} ({recording.source or 'in memory'}) lasts {recording.duration_s:.2f} s, shorter than one "
            f"window of this model ({bundle.window_length} samples = {bundle.window_length / rate:.2f} s at {rate:g} Hz); "
            "choose a longer recording or a model trained on shorter windows (sss-viewer train --window-length N)."
        )
    if len(recording.ieeg_picks()) == 0:
        types = ", ".join(sorted(set(recording.ch_types))) or "none"
        bads = f"; marked bad: {', '.join(recording.bads)}" if recording.bads else ""
        return (
            f"Recording {label} has no good iEEG channel to score: the model scores {'/'.join(IEEG_CH_TYPES)} "
            f"channels and the recording has channel types {types}{bads}."
        )
    return None


def score_recording(
    bundle,
    recording: Recording,
    *,
    stride: int | None = None,
    batch_size: int = 1024,
    device: str = "auto",
    progress: bool = True,
    cache: SeriesCache | None = None,
    on_progress: Callable[[float], None] | None = None,
    first_channels: Sequence[str] | None = None,
    on_partial: Callable[[RecordingScores], None] | None = None,
    heat_stride: int | None = None,
    artifacts: bool = True,
) -> RecordingScores:
    """Score every window of every good iEEG channel of ``recording`` with a trained model.

    Unless ``artifacts`` is False, the channels are first checked for artifacts
    (:func:`~sss_viewer.preprocessing.artifacts.detect_recording_artifacts`, once per call): the
    windows of flagged channels and flagged segments carry the reason in their ``artifact`` column
    and are left out of the ranking; a channel with no clean window keeps its row with a NaN score,
    ranked last, ``n_windows`` 0 and the reason in its ``artifact`` column.

    Parameters
    ----------
    bundle : ModelBundle
        A trained model with its preprocessing, calibrator and window length.
    recording : Recording
    stride : int, optional
        Window stride in preprocessed samples; default the bundle's (a quarter window).
    batch_size : int
    device : str
        ``"auto"``, ``"cpu"`` or ``"cuda"``. On CUDA the artifact check's statistics are computed on the GPU
        from the channels it reads for scoring (unless ``first_channels`` splits the work).
    progress : bool
    cache : SeriesCache, optional
        On-disk cache of preprocessed channels (the recording is preprocessed in memory otherwise).
        Not used on a CUDA device: there the channels are read into the device and preprocessed on it
        (:mod:`sss_viewer.preprocessing._device_series`, within ``torch_filters.TOLERANCE`` of the CPU
        filters), neither read from nor written to the cache.
    on_progress : callable, optional
        Called with the fraction of windows scored (0–1) after each batch (see
        :func:`predict_window_probs`).
    first_channels : sequence of str, optional
        Channels to preprocess and score first (a viewer's visible page); the others follow. The
        result is the same as scoring all at once (each channel is preprocessed and scored on its
        own).
    on_partial : callable, optional
        Called with the scores of ``first_channels`` alone (``pending`` = channels still to score)
        before the others are scored.
    heat_stride : int, optional
        A finer stride (dividing ``stride``) for the heat map: the windows at it go to
        ``heat_windows``, while ``windows`` and the ranking stay those of ``stride``. Taken when
        the model reads windows within their channel (its cost does not depend on the stride) and
        the recording gives at most :data:`HEAT_WINDOW_BUDGET` such windows.
    artifacts : bool
        Check for artifacts and leave flagged windows out of the ranking (default). False keeps
        every window (``artifact`` columns all ``""``, ``RecordingScores.artifacts`` None).

    Returns
    -------
    RecordingScores
        Window tables with :data:`WINDOW_COLUMNS` + ``artifact``; channel table with
        :data:`CHANNEL_COLUMNS` (+ ``label``) + ``artifact``.

    Raises
    ------
    ValueError
        When no channel is long enough for one window, or the sampling rate cannot reach the
        model's preprocessing rate.
    """
    reason = check_fit(bundle, recording)
    if reason is not None:
        raise ValueError(reason)
    heat_stride = _usable_heat_stride(bundle, recording, stride or bundle.inference_stride, heat_stride)
    wanted = set(first_channels or ())
    if artifacts and not wanted & set(recording.ch_names) and resolve_device(device).type == "cuda":
        # the artifact statistics come from the channels the GPU reads for scoring (no second read of the file)
        check = DeviceArtifactCheck(recording)
        tables = _score_windows(
            bundle,
            recording,
            stride=stride,
            batch_size=batch_size,
            device=device,
            progress=progress,
            cache=cache,
            on_progress=on_progress,
            heat_stride=heat_stride,
            artifact_check=check,
        )
        report = check.report()
        if report is None:  # some checked channel was not read for scoring: the CPU check reads them
            report = detect_recording_artifacts(recording)
        return _recording_scores(*tables, recording, report=report)
    report = detect_recording_artifacts(recording) if artifacts else None
    options = {
        "stride": stride,
        "batch_size": batch_size,
        "device": device,
        "progress": progress,
        "cache": cache,
        "heat_stride": heat_stride,
    }
    first = [i for i, name in enumerate(recording.ch_names) if name in wanted]
    rest = [i for i in range(recording.n_channels) if recording.ch_names[i] not in wanted]
    if first and rest:
        share = len(first) / recording.n_channels
        try:
            part = _score_windows(
                bundle, recording.pick(first), on_progress=_scaled(on_progress, 0.0, share), **options
            )
        except ValueError:  # nothing scorable among them: one pass gives the recording's own message
            part = None
        if part is not None:
            if on_partial is not None:
                on_partial(_recording_scores(*part, recording, pending=len(rest), report=report))
            try:
                more = _score_windows(
                    bundle, recording.pick(rest), on_progress=_scaled(on_progress, share, 1.0), **options
                )
            except ValueError:  # none of the others is scorable: say why for each
                more = (
                    part[0].iloc[:0],
                    None if part[1] is None else part[1].iloc[:0],
                    _unscorable(bundle, recording.pick(rest), options),
                )
            order = {name: i for i, name in enumerate(recording.ch_names)}
            tables = [_in_channel_order(a, b, order) for a, b in zip(part, more, strict=True)]
            return _recording_scores(*tables, recording, report=report)
    tables = _score_windows(bundle, recording, on_progress=on_progress, **options)
    return _recording_scores(*tables, recording, report=report)


def _in_channel_order(
    first: pd.DataFrame | None, second: pd.DataFrame | None, order: dict[str, int]
) -> pd.DataFrame | None:
    """Two tables with a ``channel`` column as one, in the recording's channel order (then ``start_s``)."""
    if first is None or second is None:
        return first if second is None else second
    table = pd.concat([first, second], ignore_index=True)
    keys = [table["channel"].map(order).to_numpy()]
    if "start_s" in table:
        keys.insert(0, table["start_s"].to_numpy())
    return table.iloc[np.lexsort(keys)].reset_index(drop=True)


def _usable_heat_stride(bundle, recording: Recording, stride: int, heat_stride: int | None) -> int | None:
    """``heat_stride`` when it divides ``stride``, the model's cost does not grow with the stride and
    the recording gives at most :data:`HEAT_WINDOW_BUDGET` windows at it; else None.

    Decided once for the recording, so that both parts of a page-first scoring agree.
    """
    if (
        not heat_stride
        or heat_stride >= stride
        or stride % heat_stride
        or not getattr(bundle.model, "reads_series", False)
    ):
        return None
    samples = bundle.preprocess.output_length(recording.n_times, recording.sfreq)
    per_channel = max(0, samples - bundle.window_length) // heat_stride + 2  # + the first and the end-covering window
    return heat_stride if recording.n_channels * per_channel <= HEAT_WINDOW_BUDGET else None


def _scaled(on_progress, lo: float, hi: float):
    """``on_progress`` for one part of the work: fractions 0–1 of the part become ``lo``–``hi``."""
    if on_progress is None:
        return None
    return lambda fraction: on_progress(lo + (hi - lo) * fraction)


def _unscorable(bundle, recording: Recording, options: dict) -> pd.DataFrame:
    """``channel, reason`` of channels that cannot be scored (preprocessing only)."""
    series = build_series_set(
        [recording], bundle.preprocess, min_length=bundle.window_length, progress=False, cache=options["cache"]
    )
    return series.excluded[["channel", "reason"]].reset_index(drop=True)


def _recording_scores(
    windows: pd.DataFrame,
    heat_windows: pd.DataFrame | None,
    excluded: pd.DataFrame,
    recording: Recording,
    pending: int = 0,
    report: ArtifactReport | None = None,
) -> RecordingScores:
    """Window tables, channel ranking and exclusions of ``recording`` as :class:`RecordingScores`.

    ``report`` (the artifact check; None when it did not run) fills the ``artifact`` columns, and
    the windows it flags are left out of the ranking.
    """
    labels = None
    if recording.soz is not None:
        labels = {c: int(s) for c, s in zip(recording.ch_names, recording.soz)}
    windows = _with_artifacts(windows, report)
    heat_windows = None if heat_windows is None else _with_artifacts(heat_windows, report)
    exclude = None if report is None else (windows[ARTIFACT_COLUMN] != "").to_numpy()
    channels = aggregate_channels(windows, labels, exclude=exclude)
    reasons = {} if report is None else report.channel_reasons()
    channel_flags = [reasons.get(name, "") for name in channels["channel"]]
    channels[ARTIFACT_COLUMN] = pd.Series(channel_flags, index=channels.index, dtype=str)
    flagged = None
    if report is not None:
        here = set(channels["channel"]) | set(excluded["channel"] if "channel" in excluded else ())
        flagged = report.channels[report.channels["channel"].isin(here)].reset_index(drop=True)
    return RecordingScores(
        windows=windows,
        channels=channels,
        excluded=excluded,
        duration_s=recording.duration_s,
        pending=pending,
        heat_windows=heat_windows,
        artifacts=flagged,
    )


def _with_artifacts(windows: pd.DataFrame, report: ArtifactReport | None) -> pd.DataFrame:
    """``windows`` with its ``artifact`` column: each window's reason, ``""`` when clean or not checked."""
    if report is None:
        flags = [""] * len(windows)
    else:
        flags = report.window_flags(
            windows["channel"].to_numpy(), windows["start_s"].to_numpy(), windows["end_s"].to_numpy()
        )
    return windows.assign(**{ARTIFACT_COLUMN: pd.Series(flags, index=windows.index, dtype=str)})


def _reading_store(store: SeriesStore, source) -> SeriesStore | DeviceWindows:
    """What the model reads ``store``'s windows from: where the series were preprocessed on a device
    (a :class:`DeviceSeriesBuilder` ``source``), their copy there — window gathers and channel rows stay on the
    device, with no copy back to it — else ``store`` itself.

    Parameters
    ----------
    store : SeriesStore
        One recording's series as :func:`build_series_set` laid them out from ``source``'s ``data``.
    source : DeviceSeriesBuilder or SeriesCache or None

    Returns
    -------
    SeriesStore or DeviceWindows
    """
    if not isinstance(source, DeviceSeriesBuilder) or source.series is None:
        return store
    flat = source.series.reshape(-1)  # the builder's data, on its device (DeviceWindows checks type and length)
    return DeviceWindows(store, flat.device, flat=flat)


def _score_windows(
    bundle,
    recording: Recording,
    *,
    stride,
    batch_size,
    device,
    progress,
    cache,
    on_progress,
    heat_stride=None,
    artifact_check=None,
) -> tuple[pd.DataFrame, pd.DataFrame | None, pd.DataFrame]:
    """Window table (``WINDOW_COLUMNS``), the finer heat-map table (or None) and exclusions (``channel, reason``)."""
    length = bundle.window_length
    stride = stride or bundle.inference_stride
    dev = resolve_device(device)
    # on a GPU the channels are read into it and preprocessed there (no disk cache); elsewhere as always
    source = DeviceSeriesBuilder(dev, artifact_check=artifact_check) if dev.type == "cuda" else cache
    series = build_series_set([recording], bundle.preprocess, min_length=length, progress=False, cache=source)
    if series.store.n_series == 0:
        rate = bundle.preprocess.output_sfreq(recording.sfreq)
        where = f"Recording {recording.label} ({recording.source or 'in memory'})"
        if series.excluded["reason"].str.startswith("shorter than one window").all():
            raise ValueError(
                f"{where} is shorter than one window of this model: it lasts {recording.duration_s:.2f} s "
                f"({bundle.preprocess.output_length(recording.n_times, recording.sfreq)} samples after preprocessing "
                f"at {rate:g} Hz) and one window is {length} samples = {length / rate:.2f} s. Score it with a model "
                f"trained on shorter windows (sss-viewer train --window-length N)."
            )
        reasons = "; ".join(f"{c}: {r}" for c, r in zip(series.excluded["channel"], series.excluded["reason"]))
        raise ValueError(f"{where} has no channel the model can score: {reasons}")
    index = WindowIndex.build(series.store.lengths, length, stride, cover_end=True)
    scored = WindowIndex.build(series.store.lengths, length, heat_stride, cover_end=True) if heat_stride else index
    bundle.model.to(dev)
    p_raw = predict_window_probs(
        bundle.model,
        _reading_store(series.store, source),
        scored.absolute_starts(series.store),
        length,
        batch_size=batch_size,
        device=dev,
        progress=progress,
        desc=f"score {recording.label}",
        on_progress=on_progress,
    )
    p_cal, p0, p1 = bundle.calibrator.transform(p_raw)
    rate = series.meta["sfreq"].to_numpy()[scored.series]
    start_s = scored.start / rate
    windows = pd.DataFrame(
        {
            "channel": series.meta["channel"].to_numpy()[scored.series],
            "start_s": start_s,
            "end_s": start_s + length / rate,
            "p_raw": p_raw,
            "p_cal": p_cal,
            "p0": p0,
            "p1": p1,
        }
    )
    heat = None
    if scored is not index:  # the ranking's windows are among the finer ones (the stride divides)
        span = int(series.store.lengths.max()) + 1
        rows = np.searchsorted(scored.series * span + scored.start, index.series * span + index.start)
        heat, windows = windows, windows.iloc[rows].reset_index(drop=True)
    return windows, heat, series.excluded[["channel", "reason"]].reset_index(drop=True)

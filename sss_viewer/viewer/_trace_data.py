"""The trace view's data side: which rows and pages there are, what is read for them, and the caches.

:class:`TraceData` answers, for a recording, a montage, the bad channels and the rows chosen (every
row of the montage, or an explicit list of channels: the report's figure), what a page shows: the
rows and their pages, the read plans and the montage signals read for them, the min/max envelopes
(the whole-recording one cached per page or montage), the heat-map rows of the scores and the
artifact shares, the rows' amplitudes. Parameters, numpy and pandas only: no Panel, HoloViews or
Bokeh. :class:`sss_viewer.viewer.traces.TraceView` holds one (``view.data``), sets its own
parameters of the same names on it, and draws what it answers; the arithmetic on what was read is
:mod:`sss_viewer.viewer._envelope`'s.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import partial

import numpy as np
import pandas as pd
import param

from sss_viewer.engine.inference import RecordingScores, window_heatmap
from sss_viewer.io.recording import Recording
from sss_viewer.viewer._display import (
    MONTAGES,
    MontageRows,
    apply_montage,
    display_amplitude,
    display_filter,
    group_by_shaft,
    heatmap_rows,
    montage_rows,
    robust_scale,
    row_labels,
    shaft_name,
    top_k_mean,
)
from sss_viewer.viewer._envelope import (
    SCALE_MIN_S,
    chunked_envelope,
    clip_limits,
    filter_margin_samples,
    rebin_envelope,
    scale_rows,
    scale_window,
)
from sss_viewer.viewer._excluded import excluded_channels, excluded_text

READ_ONLY_HIDDEN_TYPES = ("stim", "misc")
"""Channel types not drawn even when a recording has no iEEG channel (triggers, spares, references)."""
OVERVIEW_TOP_K = 3
"""The overview's colour is the mean p(SOZ) of the ``OVERVIEW_TOP_K`` highest channels per bin."""
OVERVIEW_BINS_PER_PX = 8
"""Resolution of the cached whole-recording envelope (bins per pixel of plot width): zoomed-out
views whose span needs at most 1/4 of it (with no display filter) are drawn from it without reading."""
OVERVIEW_CACHE_PAGES = 8
"""Pages whose whole-recording envelope is kept (paging back and forth reads each page once)."""
OVERVIEW_READ_BUDGET = {"memory": 2e8, "file": 5e7}
"""Most values the overview reads to summarise a page's traces over the whole recording. From a file
read lazily every channel is read (multiplexed formats store all channels of a time range together),
in memory only the page's. Above the budget the overview shows p(SOZ) and markers without traces."""


def lru_get(cache: dict, key):
    """``cache[key]`` marked most recently used (moved last), or None."""
    if key not in cache:
        return None
    cache[key] = cache.pop(key)
    return cache[key]


def lru_put(cache: dict, key, value, limit: int):
    """Store ``value`` under ``key``, first dropping the least recently used entries beyond ``limit - 1``."""
    while len(cache) >= limit:
        cache.pop(next(iter(cache)))
    cache[key] = value
    return value


def infer_bin_s(scores: RecordingScores | None) -> float:
    """The heat map's window stride of ``scores`` in seconds (median step between a channel's window starts), else 1 s."""
    if scores is None or scores.heat_table.empty:
        return 1.0
    windows = scores.heat_table
    first = windows["channel"].iloc[0]
    starts = np.sort(windows.loc[windows["channel"] == first, "start_s"].to_numpy())
    steps = np.diff(starts)
    steps = steps[steps > 0]
    return float(np.median(steps)) if len(steps) else 1.0


def binned_interval(scores: RecordingScores, bin_s: float, channels: list[str]) -> tuple[np.ndarray, np.ndarray]:
    """Bin-average the Venn–Abers bounds ``p0``/``p1`` exactly as ``RecordingScores.heatmap`` does ``p_cal``.

    Parameters
    ----------
    scores : RecordingScores
    bin_s : float
        Bin width in seconds.
    channels : list of str, length n_channels
        Row order of the result.

    Returns
    -------
    p0, p1 : ndarray, shape (n_channels, n_bins), float64
        NaN where no window covers a bin.
    """
    windows = scores.heat_table
    out = []
    for column in ("p0", "p1"):
        table = pd.DataFrame(
            {
                "channel": windows["channel"].to_numpy(),
                "start_s": windows["start_s"].to_numpy(),
                "end_s": windows["end_s"].to_numpy(),
                "p_cal": windows[column].to_numpy(),
            }
        )
        out.append(window_heatmap(table, channels, scores.duration_s, bin_s)[0])
    return out[0], out[1]


def auto_amplitude(recording: Recording, picks: np.ndarray, seconds: float = SCALE_MIN_S) -> float:
    """Display amplitude (µV per half row) of the monopolar channels ``picks`` over the first ``seconds``.

    The robust scale of :func:`sss_viewer.viewer._display.robust_scale` (median over channels of the
    99th percentile of ``|x − median|``) to two significant digits; see :meth:`TraceData.measure_scale`
    for the view's own rule (its montage, from the visible window).

    Parameters
    ----------
    recording : Recording
    picks : ndarray of int, shape (n_picks,)
        Channels to measure (the good iEEG channels).
    seconds : float

    Returns
    -------
    amplitude : float
        100 µV when the channels are flat or there are none.
    """
    if len(picks) == 0:
        return 100.0
    stop = min(recording.n_times, max(2, int(seconds * recording.sfreq)))
    return display_amplitude(robust_scale(recording.get_data(picks, 0, stop)))


@dataclass(frozen=True)
class DrawnRows:
    """What a page can draw: the scored rows, then (monopolar) the excluded channels as greyed rows.

    Parameters
    ----------
    picks : ndarray, shape (n_channels,), int
        Recording indices: the contacts, then the greyed channels.
    names, display : list of str, length n_channels
        Their recording and shown names.
    rows : MontageRows
        The rows paged and drawn; ``members`` index into ``names``.
    n_contacts : int
        How many of ``names`` are scored contacts (a member at or past it is a greyed row).
    excluded : dict of str to str
        ``{channel: reason}`` of every channel that is not a contact (see :mod:`._excluded`).
    """

    picks: np.ndarray
    names: list[str]
    display: list[str]
    rows: MontageRows
    n_contacts: int
    excluded: dict[str, str]


@dataclass(frozen=True)
class ReadPlan:
    """What to read for a page: recording channel ``picks`` and the page rows over them.

    ``rows.members`` index into ``picks``; ``average`` says the reference is the mean of all picks
    (the good iEEG channels) rather than nothing.
    """

    picks: np.ndarray
    rows: MontageRows
    average: bool


def chosen_rows(rows: MontageRows, contacts: list[str], channels: list[str]) -> MontageRows:
    """The rows of ``rows`` made from ``channels``, in the order of ``channels`` (each row once).

    Parameters
    ----------
    rows : MontageRows
        ``members`` index into ``contacts``.
    contacts : list of str
    channels : list of str
        A channel that is no contact, or whose row is already chosen, adds nothing.

    Returns
    -------
    rows : MontageRows
        The first row holding each channel, same ``kind``.
    """
    index = {c: i for i, c in enumerate(contacts)}
    picked: list[int] = []
    for channel in channels:
        i = index.get(channel)
        r = None if i is None else next((r for r, m in enumerate(rows.members) if i in m), None)
        if r is not None and r not in picked:
            picked.append(r)
    return MontageRows(
        [rows.labels[r] for r in picked],
        [rows.members[r] for r in picked],
        [rows.shafts[r] for r in picked],
        rows.kind,
    )


class TraceParams(param.Parameterized):
    """The parameters a trace view and its data object share, declared once.

    :class:`TraceData` and :class:`sss_viewer.viewer.traces.TraceView` both derive from it; a view
    sets each of them on its data object (``view.data``) as it changes.
    """

    recording = param.ClassSelector(class_=Recording, default=None, allow_None=True, doc="The recording shown.")
    scores = param.ClassSelector(
        class_=RecordingScores, default=None, allow_None=True, doc="Window scores for the heat map (optional)."
    )
    montage = param.Selector(objects=list(MONTAGES), default="monopolar", doc="monopolar, average or bipolar.")
    start_s = param.Number(default=0.0, bounds=(0, None), doc="Left edge of the visible window (s).")
    span_s = param.Number(
        default=10.0, bounds=(0, None), inclusive_bounds=(False, True), doc="Width of the visible window (s)."
    )
    page = param.Integer(default=0, bounds=(0, None), doc="Channel page (0-based; past the last means the last).")
    page_size = param.Integer(default=16, bounds=(1, None), doc="Rows per channel page.")
    amplitude_uv = param.Number(
        default=None,
        allow_None=True,
        bounds=(0, None),
        inclusive_bounds=(False, True),
        doc="µV per half row (every row shows ±amplitude/gain). None: a TraceView measures it (automatic, see "
        "measure_scale; set by hand, it is kept when the montage changes; set to None to go back to automatic); "
        "a TraceData on its own uses 100 µV.",
    )
    clip_traces = param.Boolean(
        default=True,
        doc="Clip each row to ±CLIP_ROWS row spacings, so large spikes do not cross the neighbouring rows.",
    )
    shaft_gain = param.Dict(default={}, doc="Per-shaft gain: shaft → multiplier (a row shows ±amplitude/gain).")
    highpass_hz = param.Number(default=None, allow_None=True, bounds=(0, None), doc="Display high-pass (Hz).")
    lowpass_hz = param.Number(default=None, allow_None=True, bounds=(0, None), doc="Display low-pass (Hz).")
    notch_hz = param.Number(default=None, allow_None=True, bounds=(0, None), doc="Display notch and harmonics (Hz).")
    bad_channels = param.List(
        default=[], item_type=str, doc="Channels marked bad: not scored, left out of the average, shown greyed."
    )
    show_excluded = param.Boolean(
        default=True,
        doc="Show bad and non-iEEG channels as greyed rows after the scored contacts (monopolar montage); "
        "every montage lists them with the reason under the traces either way.",
    )
    focus_channel = param.String(default=None, allow_None=True, doc="Channel to show and highlight.")
    bin_s = param.Number(
        default=None,
        allow_None=True,
        bounds=(0, None),
        inclusive_bounds=(False, True),
        doc="Heat-map bin (s); None = the scores' window stride.",
    )
    plot_width = param.Integer(
        default=1000,
        bounds=(200, None),
        doc="Width of the plot area (px); the min/max envelopes' bin counts follow it.",
    )
    show_overview = param.Boolean(
        default=True,
        doc="Draw the whole-recording overview with its range tool (a wide view is then drawn from the page's "
        "whole-recording envelope, read once).",
    )


class TraceData(TraceParams):
    """The rows, pages, reads, envelopes and heat-map rows of a trace view, with their caches.

    Rows are the recording's good iEEG channels (``recording.ieeg_picks()`` minus ``bad_channels``)
    grouped by shaft in contact-number order, as rows of ``montage``, ``page_size`` per page; in the
    monopolar montage the excluded channels (bad, ECG, DC, trigger …) follow as greyed rows on pages
    of their own. With ``channels``, only the rows made from those channels, in that order (the
    montage still over every contact: the same average reference and bipolar pairs).

    Its parameters are those of :class:`TraceParams` (which :class:`sss_viewer.viewer.traces.TraceView`
    shares and sets on it), plus ``channels``.
    """

    channels = param.List(
        default=None,
        allow_None=True,
        item_type=str,
        doc="Channels whose rows are drawn, in this order, and no greyed row; None = every row of the montage.",
    )

    def __init__(self, **params):
        self._layout_cache = None
        self._shaft_cache = None
        self._heat_cache = {}
        self._bin_cache = None
        self._overview_cache = {}
        super().__init__(**params)
        self.param.watch(self._on_recording, ["recording"])

    def _on_recording(self, *events) -> None:
        self.clear_caches()

    def clear_caches(self) -> None:
        """Forget the envelopes and heat-map rows read so far (a new recording)."""
        self._overview_cache.clear()
        self._heat_cache.clear()

    # ---------------------------------------------------------------- rows and pages

    def contact_picks(self) -> np.ndarray:
        """Recording indices of the shown contacts: good iEEG channels minus ``bad_channels``, grouped by shaft.

        A recording without any iEEG channel shows its other signal channels instead (not stim or
        misc), so it can still be read while scoring is disabled.

        Returns
        -------
        picks : ndarray, shape (n_contacts,), int
        """
        return self._layout()[0].copy()

    def contacts(self) -> list[str]:
        """Names of the shown contacts, in display order (shafts contiguous, contacts in numeric order)."""
        return list(self._layout()[1])

    def display_contacts(self) -> list[str]:
        """How each of :meth:`contacts` is read (vendor prefixes and ``-Ref`` removed), same order."""
        return list(self._layout()[3])

    def display_labels(self, rows: MontageRows | None = None) -> list[str]:
        """Labels of ``rows`` (default: the page's) as shown: display names in place of recording names.

        ``rows`` index into :meth:`drawn_rows`' channels (the contacts, then greyed channels). The
        montage's own labels (original channel names) stay what data, state and exports use.
        """
        rows = self.page_rows() if rows is None else rows
        return row_labels(rows, self._layout()[4].display)

    def rows(self) -> MontageRows:
        """The scored rows: every row of the montage over :meth:`contacts`, or those of ``channels``.

        ``members`` index into :meth:`contacts`.
        """
        return self._layout()[2]

    def drawn_rows(self) -> MontageRows:
        """The rows paged and drawn: :meth:`rows`, then (monopolar, ``show_excluded``) a greyed row per excluded channel.

        ``members`` index into the contacts followed by the greyed channels; a greyed row is never
        part of the heat map, the average reference, a bipolar pair or the scores. With ``channels``,
        :meth:`rows` alone.
        """
        return self._layout()[4].rows

    def drawn(self) -> DrawnRows:
        """The channels and rows a page can draw (see :class:`DrawnRows`)."""
        return self._layout()[4]

    def excluded(self) -> dict[str, str]:
        """``{channel: reason}`` of every channel that is not a scored contact (bad, ECG, DC, trigger, ``$`` …)."""
        return dict(self._layout()[4].excluded)

    def excluded_line(self) -> str:
        """The line shown under the traces: ``Not shown / not scored: EKG1: ecg — not scored · …`` (empty if none)."""
        rec = self.recording
        if rec is None:
            return ""
        return excluded_text(self._layout()[4].excluded, dict(zip(rec.ch_names, rec.display_names, strict=True)))

    def greyed_slots(self, rows: MontageRows | None = None) -> list[int]:
        """Indices in ``rows`` (default: the page's) of the greyed rows of excluded channels."""
        rows = self.page_rows() if rows is None else rows
        n = self._layout()[4].n_contacts
        return [r for r, members in enumerate(rows.members) if members[0] >= n]

    def _layout(self) -> tuple[np.ndarray, list[str], MontageRows, list[str], DrawnRows]:
        """``(contact_picks, contacts, rows, display_contacts, drawn)``, recomputed only when their inputs change."""
        rec = self.recording
        if rec is None:
            rows = montage_rows([], self.montage)
            return np.zeros(0, dtype=int), [], rows, [], DrawnRows(np.zeros(0, dtype=int), [], [], rows, 0, {})
        key = (
            id(rec),
            tuple(rec.ch_names),
            tuple(rec.ch_types),
            tuple(rec.bads),
            tuple(self.bad_channels),
            self.montage,
            self.show_excluded,
            None if self.channels is None else tuple(self.channels),
        )
        if self._layout_cache is None or self._layout_cache[0] != key:
            bad = set(self.bad_channels)
            shown = rec.ieeg_picks()
            if len(shown) == 0:  # nothing scorable (a scalp or polygraphy file): show its signals for reading
                shown = [
                    i
                    for i, t in enumerate(rec.ch_types)
                    if t not in READ_ONLY_HIDDEN_TYPES and rec.ch_names[i] not in rec.bads
                ]
            picks = [int(i) for i in shown if rec.ch_names[i] not in bad]
            names = [rec.ch_names[i] for i in picks]
            ordered = np.array([picks[i] for idx in group_by_shaft(names).values() for i in idx], dtype=int)
            contacts = [rec.ch_names[i] for i in ordered]
            shown_as = rec.display_names
            display = [shown_as[i] for i in ordered]
            rows = montage_rows(contacts, self.montage)
            excluded = excluded_channels(rec, bad, contacts)
            if self.channels is not None:
                rows = chosen_rows(rows, contacts, self.channels)
                drawn = DrawnRows(ordered, list(contacts), list(display), rows, len(contacts), excluded)
            else:
                drawn = self._drawn_rows(ordered, contacts, display, rows, excluded)
            self._layout_cache = (key, (ordered, contacts, rows, display, drawn))
        return self._layout_cache[1]

    def _drawn_rows(
        self, picks: np.ndarray, contacts: list[str], display: list[str], rows: MontageRows, excluded: dict[str, str]
    ) -> DrawnRows:
        """The scored rows, then (monopolar, ``show_excluded``) a greyed row per excluded channel."""
        if self.montage != "monopolar" or not self.show_excluded or not excluded:
            return DrawnRows(picks, list(contacts), list(display), rows, len(contacts), excluded)
        rec = self.recording
        index = {name: i for i, name in enumerate(rec.ch_names)}
        shown_as = rec.display_names
        greyed = list(excluded)
        n = len(contacts)
        drawn = MontageRows(
            rows.labels + greyed,
            rows.members + [(n + j,) for j in range(len(greyed))],
            rows.shafts + [shaft_name(name) for name in greyed],
            rows.kind,
        )
        return DrawnRows(
            np.concatenate([picks, np.array([index[g] for g in greyed], dtype=int)]),
            list(contacts) + greyed,
            list(display) + [shown_as[index[g]] for g in greyed],
            drawn,
            n,
            excluded,
        )

    @property
    def n_pages(self) -> int:
        """Number of channel pages."""
        return len(self.page_bounds())

    def page_bounds(self) -> list[tuple[int, int]]:
        """``(first, end)`` indices into :meth:`drawn_rows` of each page, ``page_size`` rows at most.

        The scored rows page by page, then the greyed rows of excluded channels on pages of their
        own: page ``p`` of the scored rows starts at ``p * page_size`` (as the heat map's rows do).
        """
        n_scored, n_drawn, size = len(self.rows()), len(self.drawn_rows()), self.page_size
        bounds = [(lo, min(lo + size, n_scored)) for lo in range(0, n_scored, size)]
        bounds += [(lo, min(lo + size, n_drawn)) for lo in range(n_scored, n_drawn, size)]
        return bounds or [(0, 0)]

    def page_slice(self, page: int | None = None) -> slice:
        """The drawn rows of ``page`` (default the current one, clamped to the last)."""
        bounds = self.page_bounds()
        lo, hi = bounds[min(self.page if page is None else page, len(bounds) - 1)]
        return slice(lo, hi)

    def page_of_row(self, row: int) -> int:
        """The page showing drawn row ``row``."""
        return next((p for p, (lo, hi) in enumerate(self.page_bounds()) if lo <= row < hi), 0)

    def page_rows(self) -> MontageRows:
        """The rows of the current page, top to bottom (``members`` index into :meth:`drawn_rows`' channels)."""
        rows = self.drawn_rows()
        sl = self.page_slice()
        return MontageRows(rows.labels[sl], rows.members[sl], rows.shafts[sl], rows.kind)

    def page_contacts(self) -> list[str]:
        """Recording names of the scored contacts the page draws (both contacts of a bipolar row; no greyed row)."""
        contacts = self.contacts()
        members = sorted({int(m) for row in self.page_rows().members for m in row if m < len(contacts)})
        return [contacts[m] for m in members]

    def n_slots(self) -> int:
        """Rows drawn on every page: ``page_size``, or all rows when there are fewer (a short last page has empty rows)."""
        return min(self.page_size, len(self.drawn_rows()))

    def shafts(self) -> list[str]:
        """Shafts of the shown contacts, in display order."""
        return list(dict.fromkeys(shaft_name(c) for c in self.contacts()))

    def shaft_options(self, *, greyed: bool = False) -> dict[str, str]:
        """``{shaft as shown: shaft}`` of the contacts (``greyed``: and greyed rows), ``POL LA`` shown as ``LA``."""
        drawn = self._layout()[4]
        cached = self._shaft_cache  # (drawn, greyed, options): once per layout, not per page
        if cached is None or cached[0] is not drawn or cached[1] != greyed:
            n = len(drawn.names) if greyed else drawn.n_contacts
            pairs = dict.fromkeys(zip(map(shaft_name, drawn.display[:n]), map(shaft_name, drawn.names[:n])))
            shown = [a for a, _ in pairs]
            cached = self._shaft_cache = (drawn, greyed, {(a if shown.count(a) == 1 else b): b for a, b in pairs})
        return dict(cached[2])

    def page_shafts(self) -> list[str]:
        """The shafts of the rows on the current page, top first (what the gain picker offers)."""
        return list(dict.fromkeys(self.page_rows().shafts))

    def focus_row(self, rows: MontageRows | None = None) -> int | None:
        """Index in ``rows`` (default: all drawn rows) of the first row made from ``focus_channel``, or None."""
        if not self.focus_channel:
            return None
        rows = self.drawn_rows() if rows is None else rows
        contacts = self._layout()[4].names
        if self.focus_channel not in contacts:
            return None
        target = contacts.index(self.focus_channel)
        for r, members in enumerate(rows.members):
            if target in members:
                return r
        return None

    # ---------------------------------------------------------------- amplitudes

    def custom_gains(self) -> dict[str, float]:
        """The shaft gains that differ from 1 (rows of those shafts have their own amplitude range)."""
        return {s: g for s, g in (self.shaft_gain or {}).items() if g not in (None, 1, 1.0)}

    def row_amplitudes(self, rows: MontageRows | None = None) -> np.ndarray:
        """Half-row amplitude of each row, ``amplitude_uv / shaft_gain[shaft]`` (µV), shape (n_rows,)."""
        rows = self.page_rows() if rows is None else rows
        base = self.amplitude_uv or 100.0
        gains = self.shaft_gain or {}
        return np.array([base / float(gains.get(s, 1.0) or 1.0) for s in rows.shafts], dtype=np.float64)

    def clip_limits(self, amplitudes: np.ndarray) -> np.ndarray | None:
        """Largest excursion drawn per row (µV), shape (n_rows,): ``CLIP_ROWS`` row spacings; None unclipped."""
        return clip_limits(amplitudes) if self.clip_traces else None

    def measure_scale(self, montage: str | None = None) -> float:
        """Robust scale (µV) of ``montage`` (default ``montage``) over the visible window, at least ``SCALE_MIN_S``.

        Up to ``SCALE_MAX_ROWS`` rows evenly spaced over the montage (all pages), read from the
        window's start; the median over rows of each row's 99th percentile of ``|x − median|``
        (:func:`sss_viewer.viewer._display.robust_scale`), so seizure spikes and a few broken
        channels do not set the scale.

        Returns
        -------
        scale : float
            NaN when there is nothing to measure (no rows, flat signals).
        """
        if self.recording is None:
            return float("nan")
        rows = montage_rows(self.contacts(), montage or self.montage)
        if not len(rows):
            return float("nan")
        start, stop = scale_window(*self.window(), self.recording.sfreq, self.recording.n_times)
        plan = self.read_plan(scale_rows(rows))
        return robust_scale(self.read_rows(plan, start, stop, filtered=False))

    # ---------------------------------------------------------------- time

    @property
    def duration_s(self) -> float:
        """Length of the recording (s); 0 without one."""
        return self.recording.duration_s if self.recording is not None else 0.0

    def window(self) -> tuple[float, float]:
        """The visible window ``(t0, t1)`` in s, clipped to the recording."""
        duration = self.duration_s or self.span_s
        span = min(self.span_s, duration)
        t0 = min(max(0.0, self.start_s), max(0.0, duration - span))
        return float(t0), float(t0 + span)

    def effective_bin_s(self) -> float:
        """Heat-map bin: ``bin_s``, else the scores' window stride, else 1 s."""
        if self.bin_s:
            return float(self.bin_s)
        cached = self._bin_cache  # (scores, bin): holding the scores keeps their id from being reused
        if cached is None or cached[0] is not self.scores:
            cached = self._bin_cache = (self.scores, infer_bin_s(self.scores))
        return cached[1]

    def _filters_on(self) -> bool:
        return bool(any((self.highpass_hz, self.lowpass_hz, self.notch_hz)))

    # ---------------------------------------------------------------- reading

    def read_plan(self, rows: MontageRows | None = None) -> ReadPlan:
        """Which channels to read for ``rows`` (default the page's), with the rows re-indexed onto them."""
        rows = self.page_rows() if rows is None else rows
        if rows.kind == "average":
            return ReadPlan(self.contact_picks(), rows, True)
        picks = self._layout()[4].picks  # the contacts, then the greyed channels
        needed = list(dict.fromkeys(m for members in rows.members for m in members))
        local = {m: i for i, m in enumerate(needed)}
        local_rows = MontageRows(
            rows.labels, [tuple(local[m] for m in ms) for ms in rows.members], rows.shafts, rows.kind
        )
        return ReadPlan(picks[needed] if needed else picks[:0], local_rows, False)

    def read_rows(self, plan: ReadPlan, start: int, stop: int, *, filtered: bool = True) -> np.ndarray:
        """Montage signals of ``plan.rows`` over samples ``[start, stop)``, display-filtered.

        Reads ``[start - margin, stop + margin)`` (clipped to the recording) so the zero-phase
        filters have no edge effects inside the block.

        Returns
        -------
        data : ndarray, shape (n_rows, stop - start), float32 µV
        """
        rec = self.recording
        use_filters = filtered and self._filters_on()
        margin = (
            filter_margin_samples(rec.sfreq, self.highpass_hz, self.lowpass_hz, self.notch_hz) if use_filters else 0
        )
        r0, r1 = max(0, start - margin), min(rec.n_times, stop + margin)
        block = rec.get_data(plan.picks, r0, r1)
        if plan.rows.kind == "monopolar" and [m[0] for m in plan.rows.members] == list(range(len(plan.picks))):
            signals = block
        else:
            reference = block.mean(axis=0) if plan.average else None
            signals = apply_montage(block, plan.rows, reference=reference)
        if use_filters:
            signals = display_filter(
                signals, rec.sfreq, highpass_hz=self.highpass_hz, lowpass_hz=self.lowpass_hz, notch_hz=self.notch_hz
            )
        return signals[:, start - r0 : stop - r0]

    def envelope(
        self, plan: ReadPlan, start: int, stop: int, n_bins: int, *, filtered: bool = True
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Per-bin min/max of the rows of ``plan`` over ``[start, stop)``, read in blocks.

        Returns
        -------
        edges : ndarray, shape (n_bins + 1,), int
            Bin edges in samples (at most ``stop - start`` bins).
        lo, hi : ndarray, shape (n_rows, n_bins), float32 µV
        """
        read = partial(self.read_rows, plan, filtered=filtered)
        return chunked_envelope(read, start, stop, n_bins, n_rows=len(plan.rows), n_channels=len(plan.picks))

    def page_envelope(self, rows: MontageRows | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Unfiltered min/max envelope of ``rows`` over the whole recording (cached).

        ``OVERVIEW_BINS_PER_PX × plot_width`` bins. When the whole montage fits the overview's read
        budget it is read in one pass for every row (so paging never reads again); otherwise per
        page, the last ``OVERVIEW_CACHE_PAGES`` pages kept. The overview is drawn from it, and so
        are zoomed-out views coarse enough (see :meth:`visible_envelope`).

        Returns
        -------
        edges : ndarray, shape (n_bins + 1,), int
        lo, hi : ndarray, shape (n_rows, n_bins), float32 µV
        """
        rows = self.page_rows() if rows is None else rows
        cached = self.cached_envelope(rows)
        if cached is not None:
            return cached
        everything = self.drawn_rows()
        if self.can_summarise(everything):
            key = self.envelope_key(everything)
            self._overview_cache[key] = self._read_envelope(everything)
            return self.cached_envelope(rows)
        return lru_put(self._overview_cache, self.envelope_key(rows), self._read_envelope(rows), OVERVIEW_CACHE_PAGES)

    def envelope_key(self, rows: MontageRows) -> tuple:
        """What the whole-recording envelope of ``rows`` depends on (its cache key)."""
        return (id(self.recording), tuple(rows.labels), tuple(self._layout()[4].names), self.plot_width)

    def _read_envelope(self, rows: MontageRows) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        n_bins = OVERVIEW_BINS_PER_PX * self.plot_width
        return self.envelope(self.read_plan(rows), 0, self.recording.n_times, n_bins, filtered=False)

    def cached_envelope(self, rows: MontageRows) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
        """The whole-recording envelope of ``rows`` from the cache (the montage's or the page's), or None."""
        everything = self._overview_cache.get(self.envelope_key(self.drawn_rows()))
        if everything is not None:
            index = {label: i for i, label in enumerate(self.drawn_rows().labels)}
            if all(label in index for label in rows.labels):
                pick = [index[label] for label in rows.labels]
                edges, lo, hi = everything
                return edges, lo[pick], hi[pick]
        return lru_get(self._overview_cache, self.envelope_key(rows))

    def can_summarise(self, rows: MontageRows | None = None) -> bool:
        """Whether the overview may read ``rows`` (default the page's) over the whole recording (``OVERVIEW_READ_BUDGET``)."""
        if self.recording is None:
            return False
        rows = self.page_rows() if rows is None else rows
        rec = self.recording
        if rec.is_lazy:
            return rec.n_times * rec.n_channels <= OVERVIEW_READ_BUDGET["file"]
        return rec.n_times * len(self.read_plan(rows).picks) <= OVERVIEW_READ_BUDGET["memory"]

    def visible_envelope(self, plan: ReadPlan, start: int, stop: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Min/max envelope of the page over ``[start, stop)`` at two bins per pixel.

        Taken from the cached whole-recording envelope when it exists, no display filter is on and
        it has at least one cached bin per output bin; read from the recording otherwise.

        Returns
        -------
        edges : ndarray, shape (n_bins + 1,), int
        lo, hi : ndarray, shape (n_rows, n_bins), float32 µV
        """
        n_bins = 2 * self.plot_width
        filters = self._filters_on()
        cached = None if filters else self.cached_envelope(plan.rows)
        wide = (stop - start) * OVERVIEW_BINS_PER_PX * self.plot_width >= n_bins * self.recording.n_times
        if cached is None and not filters and wide and self.show_overview:
            page = self.page_rows()  # the overview reads this envelope anyway: read it once, now
            if page.labels == plan.rows.labels and self.can_summarise(page):
                cached = self.page_envelope(page)
        if cached is not None:
            coarse = rebin_envelope(*cached, start, stop, n_bins)
            if coarse is not None:
                return coarse
        return self.envelope(plan, start, stop, n_bins)

    # ---------------------------------------------------------------- heat map

    def heat_rows(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Binned p(SOZ) and its interval for every row of :meth:`rows` (cached).

        Returns
        -------
        values, p0, p1 : ndarray, shape (n_rows, n_bins), float64
            Bipolar rows are the mean of their two contacts. NaN = not scored.
        edges : ndarray, shape (n_bins + 1,)
        """
        rows = self.rows()
        bin_s = self.effective_bin_s()
        key = (id(self.scores), bin_s, tuple(rows.labels))
        if key not in self._heat_cache:
            self._heat_cache.clear()
            if self.scores is None:
                n_bins = max(1, math.ceil(self.duration_s / bin_s - 1e-9))
                nan = np.full((len(rows), n_bins), np.nan)
                self._heat_cache[key] = (nan, nan, nan, np.arange(n_bins + 1) * bin_s)
            else:
                contacts = self.contacts()
                values, edges = self.scores.heatmap(bin_s, channels=contacts)
                windows = self.scores.heat_table
                same = windows["p_cal"].to_numpy()
                if np.array_equal(windows["p0"].to_numpy(), same) and np.array_equal(windows["p1"].to_numpy(), same):
                    p0 = p1 = values  # no intervals (not Venn–Abers): the bounds are the probability itself
                else:
                    p0, p1 = binned_interval(self.scores, bin_s, contacts)
                self._heat_cache[key] = (
                    heatmap_rows(values, rows),
                    heatmap_rows(p0, rows),
                    heatmap_rows(p1, rows),
                    edges,
                )
        return self._heat_cache[key]

    def page_heat(self) -> tuple[np.ndarray, np.ndarray]:
        """The page's heat-map rows (top row first) with their bin edges.

        Returns
        -------
        values : ndarray, shape (n_page_rows, n_bins, 3)
            p(SOZ), p0, p1.
        edges : ndarray, shape (n_bins + 1,)
        """
        values, p0, p1, edges = self.heat_rows()
        sl = self.page_slice()  # a page of greyed rows has no heat-map row
        return np.stack([values[sl], p0[sl], p1[sl]], axis=-1), edges

    def overview_heat(self) -> tuple[np.ndarray, np.ndarray]:
        """Where p(SOZ) is high over the whole recording: per bin, the mean of the ``OVERVIEW_TOP_K`` highest rows.

        Over every row of :meth:`rows` (all pages), so it does not change with the page.

        Returns
        -------
        values : ndarray, shape (n_bins,)
            NaN where nothing was scored.
        edges : ndarray, shape (n_bins + 1,)
        """
        values, _, _, edges = self.heat_rows()
        key = ("overview", id(values))
        if key not in self._heat_cache:
            self._heat_cache[key] = top_k_mean(values, OVERVIEW_TOP_K)
        return self._heat_cache[key], edges

    def _flagged_windows(self) -> pd.DataFrame | None:
        """The window table the artifact overlay reads (the heat map's, else the ranking's), or None without a flagged window."""
        scores = self.scores
        if scores is None:
            return None
        for table in (scores.heat_table, scores.windows):
            if table is not None and "artifact" in table.columns:
                flagged = table["artifact"].fillna("").astype(str).to_numpy() != ""
                return table.assign(p_cal=flagged.astype(np.float64)) if flagged.any() else None
        return None

    def has_artifacts(self) -> bool:
        """Whether the scores flag any window as an artifact (the main plot then has the artifact overlay)."""
        key = ("has_artifacts", id(self.scores))
        if key not in self._heat_cache:
            self._heat_cache[key] = self._flagged_windows() is not None
        return self._heat_cache[key]

    def artifact_rows(self) -> tuple[np.ndarray, np.ndarray]:
        """Share of each row's window time flagged as artifact, on the heat map's bins (cached).

        Returns
        -------
        share : ndarray, shape (n_rows, n_bins), float64
            0–1; NaN where nothing is flagged (drawn transparent). A bipolar row takes the larger share
            of its two contacts (a row made from a flagged contact is flagged).
        edges : ndarray, shape (n_bins + 1,)
        """
        rows = self.rows()
        bin_s = self.effective_bin_s()
        key = ("artifact", id(self.scores), bin_s, tuple(rows.labels))
        if key not in self._heat_cache:
            edges = self.heat_rows()[3]
            table = self._flagged_windows()
            share = np.full((len(rows), len(edges) - 1), np.nan)
            if table is not None:
                per_contact, _ = window_heatmap(table, self.contacts(), self.duration_s, bin_s)
                for r, members in enumerate(rows.members):
                    block = per_contact[list(members)]
                    share[r] = np.where(np.isfinite(block), block, 0.0).max(axis=0)
                share[share <= 0] = np.nan
            self._heat_cache[key] = (share, edges)
        return self._heat_cache[key]

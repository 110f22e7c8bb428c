"""Find the seizure onset and offset among the free-text annotations of an iEEG run.

The annotations of OpenNeuro ds003029 (``*_events.tsv``: onset, duration, trial_type, value,
sample) are free text whose wording differs per centre, for example:

* NIH -- onset: ``onset``, ``definite onset``, ``EEG onset``, ``ictal onset``, ``onset TT3``,
  ``AD1-3 onset``, ``sz onset #18``, ``SEIZURE #17 ONSET``, ``Seizure #2``, ``sz``, ``start``,
  ``?onset ?TT1 then PST``, ``clinical onset``, ``clincial osnet`` (sic); offset: ``offset``,
  ``OFFSET``, ``offset with attenuation``, ``sz end``, ``definite off``, ``seizure off``, ``end``.
* JHH (texts cut at 20 characters, reviewer notes prefixed ``Z``) -- onset: ``SZ EVENT # (EEG SZ)``,
  ``SZ EVENT #(PB SZ)``, ``Z ELECTROGRAPHIC ONS``, ``Z ELELCTROGRAPHIC ON`` (sic),
  ``z clinical onset``; offset: ``Z ELECTROGRAPHIC END``, ``Z SEIZURE OVER``, ``Z EVENT OVER``,
  ``OVER``, ``Z STOPPING``, ``Z CLINICAL END``.
* UMF -- ``eeg sz start`` / ``eeg sz end``.
* UMMC -- ``sz onset`` / ``sz offset``.

Everything else is ignored: clock ticks (``+75.000000``), recording segments (``Segment: REC START
Kelly EEG``), reference switches (``A1+A2 OFF``), SPECT injections (``MARK ON``), contact lists
(``AD1-4, ATT1,2``), partial ends (``OVER ON LEFT``, ``Z RIGHT OVER``, ``generalized off``,
``END FAST``) and behaviour or spread notes (``Z SPREAD TO LAD``, ``i'm having sz``).

Classification
--------------
A text is lower-cased, every character other than a letter or digit becomes a space, runs of
spaces collapse, and JHH's reviewer prefix ``z`` is dropped (``"SZ EVENT #(PB SZ)"`` ->
``"sz event pb sz"``; ``"Z ELECTROGRAPHIC ONS"`` -> ``"electrographic ons"``). The first matching
rule of :data:`MARKER_RULES` then gives the kind (onset or offset) and a *rank*; a text that no
rule matches is not a seizure marker. Rules match whole phrases, never a word on its own, except
for the exact one-word texts ``start``/``end``/``over``/``sz``/``seizure``.

Which marker is *the* onset
---------------------------
A run often holds several onset-classified markers (JHH: ``SZ EVENT #`` then ``Z ELECTROGRAPHIC
ONSET``; NIH: ``onset`` then ``clinical onset``). The onset is the **earliest marker of the
best rank present**, ranks being (lower is better):

0. an explicit electrographic onset (``onset``, ``sz onset``, ``eeg sz start``, ``electrographic
   onset``, ``definite onset``, ``ictal onset``, ``start``);
1. a seizure event label (``SZ EVENT # (PB SZ)``, ``Seizure #2``, ``sz``);
2. a hedged onset (``?onset ?TT1 then PST``, ``* poss r onset``);
3. a clinical (behavioural) onset (``clinical onset``); 5 when hedged (``??clinical onset??``).

Why not simply the earliest marker: JHH's ``SZ EVENT #`` is the event (push-button or detector)
mark, placed about 60 s into every clip, and the reviewer's ``Z ELECTROGRAPHIC ONSET`` follows it
by 1-23 s (23 s in sub-jh102 run-05); the reviewer's explicit mark is the electrographic onset.
Clinical onsets lag the electrographic onset by up to 60 s and hedged marks are guesses, so they
only stand in when nothing better exists (sub-pt2 run-01 has only ``?onset ?TT1 then PST``).

NIH's ``1st change`` (the *earliest electrographic change*, EEC) is deliberately **not** an onset:
the same reviewer marks the *unequivocal* onset (``onset``/``definite onset``) 1-8 s later in every
run that has a ``1st change``, sometimes questions it (``1st change?``), and the other centres
mark only the unequivocal onset; using it for NIH alone would shift NIH's ictal labels earlier
than every other centre's.

The offset is chosen the same way among the offset markers *after* the onset (ranks: 0 explicit,
2 hedged or approximate such as ``possible off``/``Z ENDING``/``Z STOPPING``, 3 clinical end). An
offset marker before the onset is ignored with a warning (it cannot end this seizure). An offset
in a run without any onset is **kept** (``onset_s`` is None): a clip that starts mid-seizure is
real, and dropping its end would lose information; a warning names the run.
"""

from __future__ import annotations

import logging
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, NamedTuple

import pandas as pd

from sss_viewer.io.recording import Event, Recording

logger = logging.getLogger(__name__)

MarkerKind = Literal["onset", "offset"]

EVENTS_COLUMNS = ("onset", "trial_type")

#: Rank added to a rule's rank when the raw text hedges (``?``, ``poss``, ``likely`` ...).
HEDGE_PENALTY = 2


@dataclass(frozen=True)
class SeizureMarkers:
    """Seizure onset and offset of one run, in seconds from the recording start.

    Attributes
    ----------
    onset_s, offset_s : float or None
        Time of the chosen onset / offset marker; None where the run has none.
    onset_text, offset_text : str or None
        The annotation text that gave each time, as written in the file.
    """

    onset_s: float | None
    offset_s: float | None
    onset_text: str | None
    offset_text: str | None


class MarkerRule(NamedTuple):
    """One classification rule: ``pattern`` searched in the normalised text."""

    name: str
    pattern: re.Pattern[str]
    kind: MarkerKind | None
    rank: int


class MarkerMatch(NamedTuple):
    """How one annotation text was classified."""

    kind: MarkerKind
    rank: int
    rule: str


def _rule(name: str, pattern: str, kind: MarkerKind | None, rank: int = 0) -> MarkerRule:
    return MarkerRule(name, re.compile(pattern), kind, rank)


# "osnet" is a real typo (sub-pt7); "ons"/"onse" only at the end: a word cut by the 20-character limit.
_ONSET_WORD = r"(?:\b(?:onset|osnet)\b|\b(?:onse|ons)$)"
_CLINICAL = r"cl(?:in|ni)\w*"

#: Ordered rules; the first match decides. ``kind=None`` rules exclude a text outright.
MARKER_RULES: tuple[MarkerRule, ...] = (
    # --- never seizure markers ---------------------------------------------------------
    _rule("recording segment", r"^segment\b|\brec start\b", None),
    _rule("reference switch", r"^a1 a2 off$", None),
    _rule("spect marker", r"^mark (?:on|off)$", None),
    _rule("schedule", r"^schedule$", None),
    _rule("earliest change (not the onset)", r"^(?:1st|first) change\b", None),
    # --- clinical (behavioural) onset and end --------------------------------------------
    _rule("clinical end", rf"\b{_CLINICAL} (?:signs? )?(?:end|offset|off|over|ove|ov)\b", "offset", 3),
    _rule("clinical onset", rf"\b{_CLINICAL} o(?:ns|sn)\w*", "onset", 3),
    # --- electrographic end / onset ------------------------------------------------------
    _rule("electrographic end", r"\be\w*graphic (?:end|offset|off|over)\b", "offset", 0),
    _rule("electrographic onset", r"\be\w*graphic on(?:s|se|set)?\b", "onset", 0),
    # --- explicit offset -----------------------------------------------------------------
    _rule("offset", r"\boff?set\b", "offset", 0),
    _rule("seizure end", r"^(?:eeg )?(?:sz|seizure|event) (?:end|ended|ends|over|off|stops?|stopped)\b", "offset"),
    _rule("end of seizure", r"\bend of (?:the )?(?:sz|seizure)\b", "offset", 0),
    _rule("qualified off", r"^(?:definite|definitely|possible|poss|probable|likely) off\b", "offset", 0),
    _rule("bare end", r"^(?:end|over)$", "offset", 0),
    _rule("approximate end", r"^(?:ending|stopping|ends|stops)$", "offset", 2),
    # --- explicit onset ------------------------------------------------------------------
    _rule("onset", _ONSET_WORD, "onset", 0),
    _rule("seizure start", r"^(?:eeg )?(?:sz|seizure) (?:start|starts|started|begins?)\b", "onset", 0),
    _rule("start of seizure", r"\b(?:start|beginning) of (?:the )?(?:sz|seizure)\b", "onset", 0),
    _rule("bare start", r"^start$", "onset", 0),
    # --- seizure event label -------------------------------------------------------------
    _rule("seizure event", r"^sz event\b|^(?:sz|seizure)(?: \d+)?$", "onset", 1),
)

_CLOCK_TICK = re.compile(r"^\s*[+-]?\d+(?:\.\d*)?\s*$")
_HEDGE_WORDS = re.compile(r"\b(?:poss|possible|possibly|probable|probably|likely|maybe|questionable)\b")


CLOCK_STAMP = re.compile(r"^\s*[+-]\d+(?:\.\d+)?\s*$")
"""An annotation text that is only a signed number of seconds (``+75.000000``): a time-keeping entry of an EDF
export (Nihon Kohden writes one per data record), not an event."""


def is_clock_stamp(text: str) -> bool:
    """Whether ``text`` is an EDF export's time-keeping entry (:data:`CLOCK_STAMP`), e.g. ``"+75.000000"``.

    Parameters
    ----------
    text : str
        An annotation text as read from the file.

    Returns
    -------
    bool
        True for a bare signed number (``+75.000000``, ``-0.5``); False for anything with words, an
        unsigned number (``"3"``, which a site may use as an event code) or an empty text.
    """
    return bool(CLOCK_STAMP.match(str(text)))


def normalise_marker(text: str) -> str:
    """Lower-case ``text``, turn punctuation into spaces, collapse spaces, drop JHH's ``z`` prefix.

    Parameters
    ----------
    text : str
        An annotation as written, e.g. ``"SZ EVENT #(PB SZ)"``.

    Returns
    -------
    normalised : str
        E.g. ``"sz event pb sz"``.
    """
    words = re.sub(r"[^a-z0-9]+", " ", text.lower()).split()
    if len(words) > 1 and words[0] == "z":
        words = words[1:]
    return " ".join(words)


def _is_hedged(text: str, normalised: str) -> bool:
    """Whether the annotation questions itself (``?onset``, ``poss r onset``, ``LIKELY CLINICAL``)."""
    return "?" in text or _HEDGE_WORDS.search(normalised) is not None


def match_marker(text: str) -> MarkerMatch | None:
    """Classify one annotation and say which rule and rank decided it.

    Parameters
    ----------
    text : str
        An annotation (``trial_type`` of an events.tsv, or an ``Event.description``).

    Returns
    -------
    match : MarkerMatch or None
        ``kind`` (``"onset"``/``"offset"``), ``rank`` (lower is more trustworthy, see the module
        docstring) and the rule's name; None when the text is not a seizure marker.
    """
    if not isinstance(text, str) or _CLOCK_TICK.match(text):
        return None
    normalised = normalise_marker(text)
    for rule in MARKER_RULES:
        if rule.pattern.search(normalised):
            if rule.kind is None:
                return None
            penalty = HEDGE_PENALTY if _is_hedged(text, normalised) else 0
            return MarkerMatch(rule.kind, rule.rank + penalty, rule.name)
    return None


def classify_marker(text: str) -> MarkerKind | None:
    """Whether an annotation marks a seizure onset, a seizure offset, or neither.

    Parameters
    ----------
    text : str
        An annotation, e.g. ``"sz onset"``, ``"Z ELECTROGRAPHIC END"`` or ``"A1+A2 OFF"``.

    Returns
    -------
    kind : {"onset", "offset"} or None
    """
    match = match_marker(text)
    return None if match is None else match.kind


def _events_table(events: pd.DataFrame | Sequence[Event], source: str) -> list[tuple[float, str]]:
    """``(onset_s, text)`` pairs from a DataFrame (``onset``, ``trial_type``) or a list of Event."""
    if isinstance(events, pd.DataFrame):
        missing = [c for c in EVENTS_COLUMNS if c not in events.columns]
        if missing:
            raise ValueError(f"{source}: events lack columns {missing}; they have {list(events.columns)}.")
        onsets = pd.to_numeric(events["onset"], errors="coerce").tolist()
        return list(zip(onsets, events["trial_type"].tolist(), strict=True))
    pairs = []
    for event in events:
        if not isinstance(event, Event):
            raise TypeError(f"{source}: expected a DataFrame or a sequence of Event, got an item {event!r}.")
        pairs.append((float(event.onset), event.description))
    return pairs


def _classified(pairs: list[tuple[float, str]], source: str) -> list[tuple[float, str, MarkerMatch]]:
    """The seizure markers among ``pairs``; markers without a finite time are skipped with a warning."""
    markers = []
    for onset, text in pairs:
        match = match_marker(text) if isinstance(text, str) else None
        if match is None:
            continue
        if onset is None or not math.isfinite(onset):
            logger.warning("%s: seizure marker %r has no valid onset time (%r); ignored.", source, text, onset)
            continue
        markers.append((float(onset), text, match))
    return markers


def _best(markers: list[tuple[float, str, MarkerMatch]]) -> tuple[float, str] | None:
    """The earliest marker of the best (lowest) rank."""
    if not markers:
        return None
    onset, text, _ = min(markers, key=lambda m: (m[2].rank, m[0]))
    return onset, text


def find_seizure_markers(events: pd.DataFrame | Sequence[Event], *, source: str | None = None) -> SeizureMarkers:
    """Choose the seizure onset and offset among a run's annotations.

    Parameters
    ----------
    events : DataFrame or sequence of Event
        A table with ``onset`` (s) and ``trial_type`` (text) columns, e.g. a ds003029
        ``*_events.tsv``, or the ``Recording.events`` list.
    source : str, optional
        What to call the run in log messages and errors (e.g. its file name).

    Returns
    -------
    markers : SeizureMarkers
        Onset: the earliest onset marker of the best rank; offset: the same among the offset
        markers after the onset (see the module docstring for the ranks and why).
    """
    source = source or "events"
    markers = _classified(_events_table(events, source), source)
    onset = _best([m for m in markers if m[2].kind == "onset"])
    offsets = [m for m in markers if m[2].kind == "offset"]
    if onset is None:
        offset = _best(offsets)
        if offset is not None:
            logger.warning("%s: offset %r at %.3f s but no onset marker; kept.", source, offset[1], offset[0])
        return _markers(None, offset)
    before = [(text, round(time, 3)) for time, text, _ in offsets if time <= onset[0]]
    if before:
        logger.warning("%s: offset markers at or before the onset (%.3f s) ignored: %s", source, onset[0], before)
    offset = _best([m for m in offsets if m[0] > onset[0]])
    if offset is None:
        logger.debug("%s: onset %r at %.3f s has no offset marker after it.", source, onset[1], onset[0])
    return _markers(onset, offset)


def _markers(onset: tuple[float, str] | None, offset: tuple[float, str] | None) -> SeizureMarkers:
    """Pack the chosen ``(time, text)`` pairs."""
    return SeizureMarkers(
        onset_s=None if onset is None else onset[0],
        offset_s=None if offset is None else offset[0],
        onset_text=None if onset is None else onset[1],
        offset_text=None if offset is None else offset[1],
    )


def read_seizure_markers(path: str | Path) -> SeizureMarkers:
    """Read one BIDS ``*_events.tsv`` and find its seizure onset and offset.

    Parameters
    ----------
    path : str or Path
        A tab-separated events file with at least ``onset`` and ``trial_type`` columns.

    Returns
    -------
    markers : SeizureMarkers

    Raises
    ------
    FileNotFoundError
        ``path`` does not exist.
    ValueError
        The file is empty or lacks the ``onset``/``trial_type`` columns.
    """
    from sss_viewer.io.tables import read_table

    path = Path(path)
    table = read_table(path, EVENTS_COLUMNS, what="BIDS events file", dtype={"trial_type": str})
    return find_seizure_markers(table, source=path.name)


def with_seizure_times(recording: Recording) -> Recording:
    """Fill ``seizure_onset_s``/``seizure_offset_s`` from the file's own annotations when not known.

    A plain EDF/BrainVision/FIF file carries its seizure markers as free-text annotations
    (``EEG SZ START``, ``sz onset`` …); they are recognised by the same rules as a BIDS
    ``events.tsv`` (:func:`sss_viewer.io.seizure_events.find_seizure_markers`).
    """
    if recording.seizure_onset_s is not None or not recording.events:
        return recording
    source = recording.source.name if recording.source is not None else recording.label
    markers = find_seizure_markers(recording.events, source=source)
    recording.seizure_onset_s, recording.seizure_offset_s = markers.onset_s, markers.offset_s
    recording.info["seizure_onset_text"] = markers.onset_text
    recording.info["seizure_offset_text"] = markers.offset_text
    return recording

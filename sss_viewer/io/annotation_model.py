"""Clinician annotations in memory: markers, the :class:`AnnotationSet`, and the :class:`Edit` that changes one.

A marker is a dict ``{"onset_s", "duration_s", "kind", "text", "author", "modified", "id"}``
(:func:`make_marker`); notes are markers of kind ``"note"``. Markers carry an ``id`` that a move
keeps, so two sessions moving one marker, or one deleting what the other moved, are told apart from
two sessions adding two markers (:mod:`sss_viewer.io.annotation_merge`).

Every change a clinician makes is an :class:`Edit` (what was there before, what is there after, who,
when) that can be undone and is appended to the edit log (:mod:`sss_viewer.io.annotation_store`).
Nothing here needs Panel: the CLI and the engine read clinician labels without the ``[viewer]`` extra.
"""

from __future__ import annotations

import functools
import getpass
import hashlib
import math
import uuid
from dataclasses import dataclass, field
from datetime import datetime, timezone

MARKER_KINDS = ("onset", "offset", "note", "event")
"""Kinds of marker: clinical seizure onset / offset, a free-text note, an event from the recording."""
SEED_AUTHOR = "recording"
"""``author`` of markers seeded from the recording itself."""


def utc_now() -> str:
    """The current time as ISO-8601 UTC to the second (``2025-01-31T12:00:00Z``)."""
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def default_author(user: str | None = None) -> str:
    """Who edits: ``user`` (else the OS user) and a short per-session id (``alice#3f9a0c``).

    Parameters
    ----------
    user : str, optional
        The authenticated user (the viewer passes the server's); default the OS user, else ``"unknown"``.
    """
    if not user:
        try:
            user = getpass.getuser()
        except (KeyError, OSError):
            user = "unknown"
    return f"{user}#{uuid.uuid4().hex[:6]}"


def new_marker_id() -> str:
    """A fresh marker id (12 random hex digits)."""
    return uuid.uuid4().hex[:12]


def content_marker_id(m: dict) -> str:
    """A marker id derived from its content (:func:`marker_key`): the same in every session.

    Given to markers that have no id yet (seeded from the recording, read from an events file
    written before ids existed), so that two sessions reading the same file agree on the ids.
    """
    return "c" + hashlib.sha256("|".join(marker_key(m)).encode()).hexdigest()[:11]


def make_marker(
    onset_s: float,
    kind: str,
    text: str = "",
    duration_s: float = 0.0,
    *,
    author: str = "",
    modified: str = "",
    marker_id: str = "",
) -> dict:
    """A validated marker ``{"onset_s", "duration_s", "kind", "text", "author", "modified", "id"}``.

    ``id`` identifies the marker across moves and sessions (default: a new one, :func:`new_marker_id`);
    a moved marker keeps its id, so two sessions moving (or one deleting, the other moving) the same
    marker are told apart from two sessions adding two markers.

    Parameters
    ----------
    onset_s : float
        Start of the marker (s from the recording's start), finite and ≥ 0.
    kind : str
        One of :data:`MARKER_KINDS` (onset, offset, note, …).
    text : str
        The clinician's note.
    duration_s : float
        Length of a span (0 for a point marker), finite and ≥ 0.
    author : str
        Who made it (the session's user).
    modified : str
        ISO-8601 UTC time of the last change (default: now).
    marker_id : str
        The marker's identity (default: a new one).

    Returns
    -------
    dict

    Raises
    ------
    ValueError
        When ``kind`` is not one of :data:`MARKER_KINDS` or the times are not finite and >= 0.
    """
    if kind not in MARKER_KINDS:
        raise ValueError(f"Invalid marker kind={kind!r}: expected one of {', '.join(map(repr, MARKER_KINDS))}.")
    for name, value in (("onset_s", onset_s), ("duration_s", duration_s)):
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
            raise ValueError(f"Invalid marker {name}={value!r}: expected a finite number of seconds >= 0.")
    return {
        "onset_s": float(onset_s),
        "duration_s": float(duration_s),
        "kind": kind,
        "text": str(text),
        "author": str(author or ""),
        "modified": str(modified or ""),
        "id": tsv_text(marker_id) or new_marker_id(),
    }


def _copy_marker(m: dict) -> dict:
    marker = make_marker(
        m["onset_s"],
        m["kind"],
        m.get("text", ""),
        m.get("duration_s", 0.0),
        author=m.get("author", ""),
        modified=m.get("modified", ""),
        marker_id=m.get("id", ""),
    )
    if not m.get("id"):
        marker["id"] = content_marker_id(marker)
    return marker


def _with_content_id(m: dict) -> dict:
    return {**m, "id": content_marker_id(m)}


def marker_identity(m: dict) -> tuple:
    """``(id, marker_key)``: the same marker, unchanged (a move changes the key, not the id)."""
    return (m.get("id", ""), *marker_key(m))


def marker_key(m: dict) -> tuple:
    """What makes two markers the same marker: time (to the µs written), duration, kind and text.

    ``author``/``modified`` are not part of it: the same onset entered in two sessions is one marker.
    """
    onset, duration = float(m["onset_s"]), float(m.get("duration_s", 0.0))
    return (f"{onset:.6f}", f"{duration:.6f}", m["kind"], tsv_text(m.get("text", "")))


def sort_markers(markers: list[dict]) -> list[dict]:
    """Markers in time order (stable for equal onsets)."""
    return sorted(markers, key=lambda m: m["onset_s"])


def marker_label(m: dict) -> str:
    """``onset at 56.02 s`` (with `` — text`` when there is one)."""
    text = f" — {m['text']}" if m.get("text") else ""
    return f"{m['kind']} at {m['onset_s']:.2f} s{text}"


def tsv_text(text: str) -> str:
    """``text`` on one line: tabs and line breaks (which would break a TSV cell) as spaces, stripped."""
    return " ".join(str(text).replace("\t", " ").splitlines()).strip()


@functools.lru_cache(maxsize=1)
def channel_types() -> frozenset[str]:
    """The channel types MNE knows (``seeg``, ``ecog``, ``ecg``, ``misc``, …)."""
    from mne.io import get_channel_type_constants

    return frozenset(get_channel_type_constants())


def check_channel_type(ch_type: str) -> str:
    """``ch_type`` lower-cased when MNE knows it.

    Raises
    ------
    ValueError
        Naming the known types otherwise.
    """
    value = str(ch_type).strip().lower()
    known = channel_types()
    if value not in known:
        raise ValueError(f"Invalid channel type {ch_type!r}: expected one of {', '.join(sorted(known))}.")
    return value


@dataclass
class AnnotationSet:
    """A recording's annotations.

    Parameters
    ----------
    markers : list of dict
        ``{"onset_s", "duration_s", "kind", "text", "author", "modified"}`` with kind in
        :data:`MARKER_KINDS`; notes are markers of kind ``"note"`` (a note always has a time).
        Identical markers (:func:`marker_key`) are kept once, and so are markers with the same ``id``
        (the first); a marker without an id gets :func:`content_marker_id`.
    bad_channels : list of str
        Channels the clinician marked bad (they leave the ranking).
    unknown_bad_channels : list of str
        Bad channels read from a sidecar that are not channels of the recording: reported, never
        kept in ``bad_channels`` and not written back.
    soz_labels : dict
        Channel → the clinician's SOZ label (True = SOZ, False = not SOZ); unlabelled channels are absent.
    type_overrides : dict
        Channel → MNE channel type set by the clinician (overriding the recording's).
    unknown_label_channels : list of str
        Channels with a SOZ label or a type in a sidecar that are not channels of the recording.
    """

    markers: list[dict] = field(default_factory=list)
    bad_channels: list[str] = field(default_factory=list)
    unknown_bad_channels: list[str] = field(default_factory=list)
    soz_labels: dict[str, bool] = field(default_factory=dict)
    type_overrides: dict[str, str] = field(default_factory=dict)
    unknown_label_channels: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        unique, ids = {}, set()
        for m in self.markers:
            marker = _copy_marker(m)
            if marker_key(marker) not in unique and marker["id"] not in ids:
                unique[marker_key(marker)] = marker
                ids.add(marker["id"])
        self.markers = sort_markers(list(unique.values()))
        self.bad_channels = list(dict.fromkeys(str(c) for c in self.bad_channels))
        self.soz_labels = {str(c): bool(v) for c, v in dict(self.soz_labels).items() if v is not None}
        self.type_overrides = {str(c): check_channel_type(t) for c, t in dict(self.type_overrides).items() if t}

    @property
    def notes(self) -> list[dict]:
        """The markers of kind ``"note"``."""
        return [m for m in self.markers if m["kind"] == "note"]

    @property
    def empty(self) -> bool:
        """Whether there is nothing to save."""
        return not (self.markers or self.bad_channels or self.soz_labels or self.type_overrides)

    def same_as(self, other: AnnotationSet) -> bool:
        """Same markers (by :func:`marker_key`), bad channels, SOZ labels and types; who/when aside."""
        return (
            {marker_key(m) for m in self.markers} == {marker_key(m) for m in other.markers}
            and set(self.bad_channels) == set(other.bad_channels)
            and self.soz_labels == other.soz_labels
            and self.type_overrides == other.type_overrides
        )

    def same_ids_as(self, other: AnnotationSet) -> bool:
        """:meth:`same_as`, and every marker with the same id (what the events file must hold)."""
        ids = {marker_identity(m) for m in self.markers} == {marker_identity(m) for m in other.markers}
        return ids and self.same_as(other)


def annotation_fields(a: AnnotationSet) -> dict:
    """``a``'s markers, bad channels, SOZ labels and types as :class:`AnnotationSet` keyword arguments (copies)."""
    return {
        "markers": list(a.markers),
        "bad_channels": list(a.bad_channels),
        "soz_labels": dict(a.soz_labels),
        "type_overrides": dict(a.type_overrides),
    }


# ---------------------------------------------------------------------------------------------- edits


def _part(markers=(), bad_channels=(), soz=None, types=None) -> dict:
    return {
        "markers": list(markers),
        "bad_channels": list(bad_channels),
        "soz": dict(soz or {}),
        "type": dict(types or {}),
    }


@dataclass
class Edit:
    """One change: what was there ``before`` and what is there ``after``, who made it and when.

    ``before``/``after`` hold only what changed: ``{"markers": [...], "bad_channels": [...],
    "soz": {channel: True/False/None}, "type": {channel: type or None}}`` (markers removed/added,
    channels unmarked/marked bad, labels' old/new values; None = no label).

    ``recorded`` holds the recording's own values (``{"soz": {channel: True/False}, "type": {channel:
    type}}``) of the channels whose label or type changes: what is in effect where the clinician has
    set nothing. It does not take part in :meth:`apply`; the log (:meth:`to_json`) writes the values
    in effect, so a label taken from the file is not logged as ``null``.
    """

    action: str
    before: dict
    after: dict
    author: str = ""
    time: str = field(default_factory=utc_now)
    recorded: dict = field(default_factory=dict)

    @property
    def empty(self) -> bool:
        """Whether nothing changes."""
        return not any(self.before.values()) and not any(self.after.values())

    def inverse(self, action: str, author: str = "") -> Edit:
        """The edit that takes ``after`` back to ``before``."""
        return Edit(action, self.after, self.before, author or self.author, recorded=self.recorded)

    def apply(self, annotations: AnnotationSet) -> AnnotationSet:
        """``annotations`` with this edit made; what else is there (e.g. another session's) stays."""
        removed = {m.get("id") for m in [*self.before["markers"], *self.after["markers"]]}
        markers = [m for m in annotations.markers if m.get("id") not in removed] + list(self.after["markers"])
        gone = set(self.before["bad_channels"])
        bads = [c for c in annotations.bad_channels if c not in gone] + list(self.after["bad_channels"])
        return AnnotationSet(
            markers=markers,
            bad_channels=bads,
            soz_labels=_apply_labels(annotations.soz_labels, self.before["soz"], self.after["soz"]),
            type_overrides=_apply_labels(annotations.type_overrides, self.before["type"], self.after["type"]),
        )

    def to_json(self) -> dict:
        """The edit log's line: ``before``/``after`` with the values in effect.

        A label or type the clinician had not set (None) is logged as the recording's own value when it has
        one (``recorded``, also written), so "not SOZ" from the file reads ``false``, not ``null``.
        """
        entry = {"time": self.time, "author": self.author, "action": self.action}
        entry["before"], entry["after"] = (self._in_effect(part) for part in (self.before, self.after))
        if any(self.recorded.values()):
            entry["recorded"] = {key: dict(values) for key, values in self.recorded.items() if values}
        return entry

    def _in_effect(self, part: dict) -> dict:
        """``part`` (``before`` or ``after``) with unset labels and types as the recording's own."""
        if not any(self.recorded.values()):
            return part
        out = dict(part)
        for key in ("soz", "type"):
            own = self.recorded.get(key) or {}
            if key in out and own:
                out[key] = {c: own.get(c) if v is None else v for c, v in out[key].items()}
        return out


def _apply_labels(current: dict, before: dict, after: dict) -> dict:
    labels = dict(current)
    for channel in {*before, *after}:
        value = after.get(channel)
        if value is None:
            labels.pop(channel, None)
        else:
            labels[channel] = value
    return labels


def _label_diff(old: dict, new: dict) -> tuple[dict, dict]:
    changed = [c for c in dict.fromkeys([*old, *new]) if old.get(c) != new.get(c)]
    return {c: old.get(c) for c in changed}, {c: new.get(c) for c in changed}


def diff_annotations(old: AnnotationSet, new: AnnotationSet, action: str | None = None, author: str = "") -> Edit:
    """The :class:`Edit` from ``old`` to ``new`` (``action`` default: :func:`describe_edit`)."""
    old_keys = {marker_identity(m): m for m in old.markers}
    new_keys = {marker_identity(m): m for m in new.markers}
    soz_before, soz_after = _label_diff(old.soz_labels, new.soz_labels)
    type_before, type_after = _label_diff(old.type_overrides, new.type_overrides)
    edit = Edit(
        action or "",
        _part(
            [m for k, m in old_keys.items() if k not in new_keys],
            [c for c in old.bad_channels if c not in set(new.bad_channels)],
            soz_before,
            type_before,
        ),
        _part(
            [m for k, m in new_keys.items() if k not in old_keys],
            [c for c in new.bad_channels if c not in set(old.bad_channels)],
            soz_after,
            type_after,
        ),
        author,
    )
    edit.action = action or describe_edit(edit)
    return edit


def soz_text(value) -> str:
    """``"SOZ"``, ``"not SOZ"`` or ``"unlabelled"`` for a SOZ label True / False / None."""
    return {True: "SOZ", False: "not SOZ", None: "unlabelled"}[value]


def describe_edit(edit: Edit) -> str:
    """A short description: ``add onset at 12.50 s``, ``mark LTP2 bad``, ``LA1: SOZ``, …"""
    b, a = edit.before, edit.after
    parts = []
    if len(b["markers"]) == 1 and len(a["markers"]) == 1:
        old, new = b["markers"][0], a["markers"][0]
        parts.append(f"move {old['kind']} from {old['onset_s']:.2f} s to {new['onset_s']:.2f} s")
    else:
        parts += [f"delete {marker_label(m)}" for m in b["markers"]]
        parts += [f"add {marker_label(m)}" for m in a["markers"]]
    if a["bad_channels"]:
        parts.append(f"mark {', '.join(a['bad_channels'])} bad")
    if b["bad_channels"]:
        parts.append(f"unmark {', '.join(b['bad_channels'])}")
    parts += [f"{c}: {soz_text(v)}" for c, v in a["soz"].items()]
    parts += [f"type of {c}: {v or 'as recorded'}" for c, v in a["type"].items()]
    return "; ".join(parts) or "no change"


def seed_from_recording(recording) -> AnnotationSet:
    """Annotations known from the recording: seizure onset/offset, its events, its bad channels.

    An event at the seizure onset/offset time whose text is the one the seizure time came from
    (``info["seizure_onset_text"]``/``["seizure_offset_text"]``) is not repeated as an event.
    """
    markers = []
    seizure = {}
    for kind, attr in (("onset", "seizure_onset_s"), ("offset", "seizure_offset_s")):
        t = getattr(recording, attr, None)
        if t is not None:
            text = recording.info.get(f"seizure_{kind}_text") or f"clinical seizure {kind} (from the recording)"
            markers.append(_with_content_id(make_marker(max(0.0, float(t)), kind, str(text), author=SEED_AUTHOR)))
            seizure[kind] = (float(t), recording.info.get(f"seizure_{kind}_text"))
    for ev in recording.events:
        dup = any(abs(ev.onset - t) < 1e-6 and (txt is None or txt == ev.description) for t, txt in seizure.values())
        if not dup and math.isfinite(ev.onset) and ev.onset >= 0:
            marker = make_marker(ev.onset, "event", ev.description, max(0.0, ev.duration), author=SEED_AUTHOR)
            markers.append(_with_content_id(marker))
    return AnnotationSet(markers=markers, bad_channels=list(recording.bads))


def listed_text(m: dict) -> str:
    """A marker as the list shows it, without its number: :func:`marker_label`, and a span's duration."""
    duration = float(m.get("duration_s") or 0.0)
    return marker_label(m) + (f" (span {duration:.2f} s)" if duration > 0 else "")


def filter_markers(markers: list[dict], query: str) -> list[int]:
    """Indices of the ``markers`` the search ``query`` finds, in their order.

    Each whitespace-separated word of ``query`` must occur (case-insensitive) in the marker's list
    text — its kind, its time as listed (``56.02``), its text and, for a span, its duration — or
    in its author. An empty query finds every marker.

    Parameters
    ----------
    markers : list of dict, length n_markers
    query : str

    Returns
    -------
    indices : list of int
    """
    words = str(query or "").casefold().split()
    found = []
    for i, m in enumerate(markers):
        haystack = f"{listed_text(m)} {m.get('author', '')}".casefold()
        if all(word in haystack for word in words):
            found.append(i)
    return found

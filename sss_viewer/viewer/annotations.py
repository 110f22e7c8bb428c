"""Clinician annotations: seizure markers, notes, bad channels, SOZ labels and channel types, as BIDS-style sidecars.

Nothing a clinician enters is lost or changed behind their back:

- every change is an :class:`Edit` (what was there before, what is there after, who, when) that can
  be undone and is appended to an edit log;
- each save is made under an inter-process lock, re-reads the sidecars, and when another session
  changed them since this one read them, *merges* (:func:`merge_annotations`) instead of
  overwriting; what a union cannot settle is kept and reported as a :class:`Conflict`;
- each write is atomic, and the previous files are kept as numbered backups.

The pure part (:class:`AnnotationSet`, :func:`save_annotations`, :func:`load_annotations`,
:func:`sync_annotations`, :func:`merge_annotations`) is testable without Panel. Files, written next
to the exports and never into the recording:

- ``<stem>_desc-sssviewer_events.tsv``: ``onset, duration, trial_type, description, author,
  modified, id`` (one row per marker; ``trial_type`` is the marker kind; ``author`` the session that
  made it, ``modified`` an ISO-8601 UTC time, ``id`` the marker's identity, kept when it is moved
  and derived from the content for files written before ids; ``n/a`` marks an empty cell);
- ``<stem>_desc-sssviewer_channels.tsv``: ``name, type, status, status_description, soz,
  type_source`` (every channel of the recording when the names are known, otherwise only those
  with a mark). ``soz`` is the clinician's SOZ label (``1``/``0``/``n/a``); ``type`` the MNE
  channel type, ``type_source`` ``clinician`` where the clinician set it (an override),
  ``recording`` where it is the recording's own;
- ``<stem>_desc-sssviewer_log.jsonl``: the append-only edit log, one JSON object per line
  (``time, author, action, before, after``), also recording merges and conflicts;
- ``.sssviewer/backups/<sidecar>.1`` … ``.20``: the previous versions (1 = newest),
  ``.sssviewer/<stem>.lock``, the lock file, and ``.sssviewer/<stem>.source.json``, the manifest
  naming the recording (path and content digest) the sidecars belong to.

Which folder: recordings of different patients often share a file name (``EEG.edf``), so the
sidecars are keyed by the recording's identity, not its file name (:func:`locate_sidecars`,
:mod:`sss_viewer.viewer.annotation_identity`): a file inside the data root writes to the folder of
the output folder mirroring its own (``OUT/patA/rec_desc-sssviewer_events.tsv``), any other file
(an upload) to ``OUT/<stem>_src-<digest>_desc-…``, a recording held in memory to ``OUT`` itself. Sidecars
of the old naming (``OUT/<stem>_desc-…``) are copied to their recording's folder only when they can
be nobody else's; otherwise they are left untouched and the clinician is told.

Markers carry an ``id`` that a move keeps: two sessions moving one marker, or one deleting what
the other moved, are conflicts (**Keep mine** / **Keep theirs**), not two markers or a silent keep.

Writing into the recording's own folder is refused unless asked for (``allow_source_dir=True``):
that folder is often a shared, read-only or BIDS *raw* dataset, where extra ``desc-`` files break
validation and mix the viewer's output with the source data; choose an output folder (for BIDS a
``derivatives/`` folder) instead. The recording's own file is never written, whatever the folder.
"""

from __future__ import annotations

import functools
import getpass
import glob
import hashlib
import json
import logging
import math
import uuid
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

import pandas as pd
import panel as pn
import param

from sss_viewer.fileio import (
    append_line,
    atomic_write_bytes,
    backup_file,
    file_lock,
    fingerprint,
    numbered_backups,
    same_files,
    write_tsv,
)
from sss_viewer.io.readers import SUPPORTED_FORMATS
from sss_viewer.viewer.annotation_identity import (
    RecordingIdentity,
    manifest_match,
    read_manifest,
    recording_identity,
    write_manifest,
)

logger = logging.getLogger(__name__)

MARKER_KINDS = ("onset", "offset", "note", "event")
"""Kinds of marker: clinical seizure onset / offset, a free-text note, an event from the recording."""

EVENTS_SUFFIX = "_desc-sssviewer_events.tsv"
CHANNELS_SUFFIX = "_desc-sssviewer_channels.tsv"
LOG_SUFFIX = "_desc-sssviewer_log.jsonl"
STATE_DIR = ".sssviewer"
"""Hidden folder (inside the output folder) of the lock files and the numbered backups."""
MAX_BACKUPS = 20
"""Numbered backups kept per sidecar."""
EVENT_COLUMNS = ("onset", "duration", "trial_type", "description")
"""Columns an events sidecar must have (``author``/``modified`` are optional when reading)."""
EVENT_EXTRA_COLUMNS = ("author", "modified", "id")
"""Optional when reading: an events file without ``id`` (written before ids) gets :func:`content_marker_id`."""
CHANNEL_COLUMNS = ("name", "status", "status_description")
"""Columns a channels sidecar must have (``type``/``soz``/``type_source`` are optional when reading)."""
CHANNEL_WRITE_COLUMNS = ("name", "type", "status", "status_description", "soz", "type_source")
BAD_DESCRIPTION = "marked bad in the SSS viewer"
SEED_AUTHOR = "recording"
"""``author`` of markers seeded from the recording itself."""
_NA = "n/a"


class AnnotationFileError(ValueError):
    """A sidecar file exists but cannot be read as annotations (the message names the file)."""


def utc_now() -> str:
    """The current time as ISO-8601 UTC to the second (``2025-01-31T12:00:00Z``)."""
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def default_author() -> str:
    """Who edits: the server's authenticated user (else the OS user) and a short per-session id."""
    user = None
    try:
        user = pn.state.user
    except Exception:  # noqa: BLE001 - no server context
        user = None
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
        "id": _tsv_text(marker_id) or new_marker_id(),
    }


def _copy_marker(m: dict) -> dict:
    marker = make_marker(
        m["onset_s"], m["kind"], m.get("text", ""), m.get("duration_s", 0.0),
        author=m.get("author", ""), modified=m.get("modified", ""), marker_id=m.get("id", ""),
    )  # fmt: skip
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
    return (f"{onset:.6f}", f"{duration:.6f}", m["kind"], _tsv_text(m.get("text", "")))


def sort_markers(markers: list[dict]) -> list[dict]:
    """Markers in time order (stable for equal onsets)."""
    return sorted(markers, key=lambda m: m["onset_s"])


def marker_label(m: dict) -> str:
    """``onset at 56.02 s`` (with `` — text`` when there is one)."""
    text = f" — {m['text']}" if m.get("text") else ""
    return f"{m['kind']} at {m['onset_s']:.2f} s{text}"


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


# ---------------------------------------------------------------------------------------------- edits


def _part(markers=(), bad_channels=(), soz=None, types=None) -> dict:
    return {
        "markers": list(markers), "bad_channels": list(bad_channels), "soz": dict(soz or {}), "type": dict(types or {}),
    }  # fmt: skip


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
        _part([m for k, m in old_keys.items() if k not in new_keys],
              [c for c in old.bad_channels if c not in set(new.bad_channels)], soz_before, type_before),
        _part([m for k, m in new_keys.items() if k not in old_keys],
              [c for c in new.bad_channels if c not in set(old.bad_channels)], soz_after, type_after),
        author,
    )  # fmt: skip
    edit.action = action or describe_edit(edit)
    return edit


def _soz_text(value) -> str:
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
    parts += [f"{c}: {_soz_text(v)}" for c, v in a["soz"].items()]
    parts += [f"type of {c}: {v or 'as recorded'}" for c, v in a["type"].items()]
    return "; ".join(parts) or "no change"


# ------------------------------------------------------------------------------------------- merging


@dataclass(frozen=True)
class Conflict:
    """A disagreement with another session that a union cannot settle; what was kept is on disk.

    Attributes
    ----------
    what : str
        ``"marker"`` (one marker — the same ``id`` — deleted in one session and kept or moved in
        the other, or moved differently in both), ``"bad"`` (the other session unmarked a channel
        this one has bad), ``"soz"`` or ``"type"`` (both sessions changed a channel's label differently).
    item : str
        The channel, or the marker's description (as it was before either change).
    mine, theirs
        This session's value and the other session's: for markers the marker (None = deleted),
        for bad channels True/False (bad/not), for labels the label.
    kept : str
        ``"mine"`` or ``"theirs"``: the value now saved. A deletion against a kept or moved marker
        keeps the marker (nothing is lost); two moves, and labels, keep the file's value.
    marker : dict or None
        For marker conflicts: the marker as it was before (the common ancestor).
    """

    what: str
    item: str
    mine: object
    theirs: object
    kept: str
    marker: dict | None = None

    @property
    def message(self) -> str:
        """One line saying what happened and what was kept."""
        if self.what == "marker":
            return self._marker_message()
        if self.what == "bad":
            return f"{self.item} was unmarked bad in another session; kept bad here."
        fmt = _soz_text if self.what == "soz" else (lambda v: v or "as recorded")
        name = "SOZ label" if self.what == "soz" else "type"
        kept = fmt(self.mine if self.kept == "mine" else self.theirs)
        return f"{name} of {self.item}: yours {fmt(self.mine)}, other session's {fmt(self.theirs)}; kept {kept}."

    def _marker_message(self) -> str:
        mine, theirs, base = self.mine, self.theirs, self.marker
        if theirs is None:
            if base is None or marker_key(mine) == marker_key(base):
                return f"'{self.item}' was deleted in another session; kept here."
            return f"'{self.item}' was deleted in another session but moved here to {mine['onset_s']:.2f} s; kept here."
        if mine is None:
            return (
                f"'{self.item}' was deleted here but moved in another session to {theirs['onset_s']:.2f} s; "
                "kept there."
            )
        kept = theirs if self.kept == "theirs" else mine
        return (
            f"'{self.item}' was moved here to {mine['onset_s']:.2f} s and in another session to "
            f"{theirs['onset_s']:.2f} s; kept {kept['onset_s']:.2f} s."
        )

    def resolve(self, choice: str, current: AnnotationSet, author: str = "") -> Edit:
        """The edit that makes ``current`` hold ``choice``'s value (``"mine"`` or ``"theirs"``); may be empty."""
        if choice not in ("mine", "theirs"):
            raise ValueError(f"Invalid choice={choice!r}: expected 'mine' or 'theirs'.")
        value = self.mine if choice == "mine" else self.theirs
        target = AnnotationSet(**_fields(current))
        if self.what == "marker":
            ids = {m["id"] for m in (self.marker, self.mine, self.theirs) if isinstance(m, dict)}
            keys = {marker_key(m) for m in (self.mine, self.theirs) if isinstance(m, dict)}
            others = [m for m in target.markers if m["id"] not in ids and marker_key(m) not in keys]
            target.markers = sort_markers([*others, value] if value else others)
        elif self.what == "bad":
            bads = [c for c in target.bad_channels if c != self.item]
            target.bad_channels = [*bads, self.item] if value else bads
        else:
            labels = target.soz_labels if self.what == "soz" else target.type_overrides
            labels.pop(self.item, None)
            if value is not None:
                labels[self.item] = value
        return diff_annotations(current, target, author=author)


def _fields(a: AnnotationSet) -> dict:
    return {
        "markers": list(a.markers), "bad_channels": list(a.bad_channels),
        "soz_labels": dict(a.soz_labels), "type_overrides": dict(a.type_overrides),
    }  # fmt: skip


def _merge_items(base: dict, local: dict, disk: dict, what: str) -> tuple[dict, list[Conflict]]:
    """Three-way union of keyed items; a deletion by the other session of an item kept here is a conflict."""
    merged, conflicts = {}, []
    for key in dict.fromkeys([*local, *disk]):
        in_base, in_local, in_disk = key in base, key in local, key in disk
        if in_local and in_disk:
            merged[key] = local[key]
        elif in_local:  # absent on disk: new here, or deleted there
            merged[key] = local[key]
            if in_base:
                conflicts.append(Conflict(what, key, True, False, "mine"))
        elif not in_base:  # on disk only: added there (on disk only and in base: deleted here)
            merged[key] = disk[key]
    return merged, conflicts


def _merge_labels(base: dict, local: dict, disk: dict, what: str) -> tuple[dict, list[Conflict]]:
    """Per channel: one side's change wins over no change; two different changes keep the file's value."""
    merged, conflicts = {}, []
    for channel in dict.fromkeys([*base, *local, *disk]):
        b, mine, theirs = base.get(channel), local.get(channel), disk.get(channel)
        if mine == theirs or mine == b:
            value = theirs
        elif theirs == b:
            value = mine
        else:
            value = theirs
            conflicts.append(Conflict(what, channel, mine, theirs, "theirs"))
        if value is not None:
            merged[channel] = value
    return merged, conflicts


def _changed(a: dict, b: dict) -> bool:
    return marker_key(a) != marker_key(b)


def _merge_markers(base: list, local: list, disk: list) -> tuple[list, list[Conflict]]:
    """Three-way merge of markers by ``id``: a move is a change of one marker, not a deletion and an addition.

    Per id: kept or changed on one side only → that side; added on one side → added; deleted on
    one side and unchanged on the other → deleted. A deletion against a kept or moved marker keeps
    the marker; two different moves keep the file's; both are a :class:`Conflict`.
    """
    base_ids, disk_ids = {m["id"]: m for m in base}, {m["id"]: m for m in disk}
    local_ids = {m["id"]: m for m in local}
    merged, conflicts = [], []
    for mid in dict.fromkeys([*local_ids, *disk_ids]):
        b, mine, theirs = base_ids.get(mid), local_ids.get(mid), disk_ids.get(mid)
        if mine is not None and theirs is not None:
            if not _changed(mine, theirs) or b is None or not _changed(theirs, b):
                merged.append(mine)  # the same, or only I changed it
            elif not _changed(mine, b):
                merged.append(theirs)  # only they changed it
            else:  # both moved it, differently: the file's stays, mine is offered
                merged.append(theirs)
                conflicts.append(Conflict("marker", marker_label(b), mine, theirs, "theirs", b))
        elif mine is not None:  # absent on disk: new here, or deleted there
            merged.append(mine)
            if b is not None:
                conflicts.append(Conflict("marker", marker_label(b), mine, None, "mine", b))
        elif b is None:  # on disk only: added there
            merged.append(theirs)
        elif _changed(theirs, b):  # deleted here, moved there: the moved marker stays, the deletion is offered
            merged.append(theirs)
            conflicts.append(Conflict("marker", marker_label(b), None, theirs, "theirs", b))
        # else: deleted here, unchanged there → deleted
    return merged, conflicts


def merge_annotations(
    base: AnnotationSet, local: AnnotationSet, disk: AnnotationSet
) -> tuple[AnnotationSet, list[Conflict]]:
    """Merge this session's annotations with the files another session changed.

    Parameters
    ----------
    base : AnnotationSet
        What this session last read or wrote (the common ancestor).
    local : AnnotationSet
        This session's annotations now.
    disk : AnnotationSet
        What the files hold now.

    Returns
    -------
    merged : AnnotationSet
        Markers, by ``id`` (:func:`_merge_markers`): both sides' additions (identical markers
        once), each side's moves and deletions; a marker deleted in one session and kept or moved
        in the other is kept, and one moved differently in both keeps the file's time, each with a
        :class:`Conflict`. Bad channels: the union of both sides' additions with this session's
        removals applied; a channel the *other* session unmarked while this one has it bad stays
        bad, with a Conflict. SOZ labels and types, per channel: a change on one side wins over no
        change; two different changes keep the file's value, with a Conflict.
    conflicts : list of Conflict
    """
    markers, c1 = _merge_markers(base.markers, local.markers, disk.markers)
    bads, c2 = _merge_items(
        dict.fromkeys(base.bad_channels, True), dict.fromkeys(local.bad_channels, True),
        dict.fromkeys(disk.bad_channels, True), "bad",
    )  # fmt: skip
    soz, c3 = _merge_labels(base.soz_labels, local.soz_labels, disk.soz_labels, "soz")
    types, c4 = _merge_labels(base.type_overrides, local.type_overrides, disk.type_overrides, "type")
    merged = AnnotationSet(markers=markers, bad_channels=list(bads), soz_labels=soz, type_overrides=types)
    return merged, [*c1, *c2, *c3, *c4]


# ------------------------------------------------------------------------------------------- files


def recording_stem(recording) -> str:
    """Stem of the sidecar names: the source file's name without its format extension, else the label.

    ``sub-01_task-ictal_ieeg.vhdr`` → ``sub-01_task-ictal_ieeg``; ``raw.fif.gz`` → ``raw``; a
    recording held in memory → its label with spaces as ``_`` (``sub-pt01_run-01``).
    """
    source = getattr(recording, "source", None)
    if source is not None:
        name = Path(source).name
        for ext in sorted(SUPPORTED_FORMATS, key=len, reverse=True):
            if name.lower().endswith(ext):
                return name[: -len(ext)]
        return Path(name).stem
    return "_".join(str(recording.label).split()).replace("/", "-") or "recording"


def sidecar_paths(out_dir: str | Path, stem: str) -> tuple[Path, Path]:
    """``(events.tsv, channels.tsv)`` paths of ``stem``'s annotations in ``out_dir``."""
    out_dir = Path(out_dir)
    return out_dir / f"{stem}{EVENTS_SUFFIX}", out_dir / f"{stem}{CHANNELS_SUFFIX}"


def log_path(out_dir: str | Path, stem: str) -> Path:
    """The edit log ``<stem>_desc-sssviewer_log.jsonl`` in ``out_dir``."""
    return Path(out_dir) / f"{stem}{LOG_SUFFIX}"


def backup_dir(out_dir: str | Path) -> Path:
    """Folder of the numbered backups (``.sssviewer/backups``)."""
    return Path(out_dir) / STATE_DIR / "backups"


def _lock_path(out_dir: Path, stem: str) -> Path:
    return out_dir / STATE_DIR / f"{stem}.lock"


def check_out_dir(out_dir: str | Path, source: str | Path | None, *, allow_source_dir: bool = False) -> Path:
    """Refuse an output folder that is the recording's own folder (unless allowed).

    Raises
    ------
    ValueError
        When ``out_dir`` is the folder holding ``source`` and ``allow_source_dir`` is False.
    """
    out_dir = Path(out_dir).expanduser()
    if source is not None and not allow_source_dir:
        if out_dir.resolve() == Path(source).expanduser().resolve().parent:
            raise ValueError(
                f"Refusing to write annotations into the recording's own folder {out_dir}: choose another output "
                f"folder (for a BIDS dataset, a derivatives/ folder), or pass allow_source_dir=True."
            )
    return out_dir


def _na(text: str) -> str:
    return text if text else _NA


def _events_frame(markers: list[dict]) -> pd.DataFrame:
    return pd.DataFrame(
        {
            "onset": [f"{m['onset_s']:.6f}" for m in markers],
            "duration": [f"{m['duration_s']:.6f}" for m in markers],
            "trial_type": [m["kind"] for m in markers],
            "description": [_na(_tsv_text(m["text"])) for m in markers],
            "author": [_na(_tsv_text(m.get("author", ""))) for m in markers],
            "modified": [_na(_tsv_text(m.get("modified", ""))) for m in markers],
            "id": [m["id"] for m in markers],
        },
        columns=[*EVENT_COLUMNS, *EVENT_EXTRA_COLUMNS],
    )


def _tsv_text(text: str) -> str:
    """Tabs and line breaks would break the TSV: write them as spaces."""
    return " ".join(str(text).replace("\t", " ").splitlines()).strip()


def _channels_frame(
    annotations: AnnotationSet, channel_names: list[str] | None, recorded_types: list[str] | None
) -> pd.DataFrame:
    if channel_names is not None:
        names = list(channel_names)
    else:
        names = list(dict.fromkeys([*annotations.bad_channels, *annotations.soz_labels, *annotations.type_overrides]))
    recorded = dict(zip(channel_names, recorded_types)) if channel_names is not None and recorded_types else {}
    bad, soz, types = set(annotations.bad_channels), annotations.soz_labels, annotations.type_overrides
    return pd.DataFrame(
        {
            "name": names,
            "type": [types.get(n) or recorded.get(n) or _NA for n in names],
            "status": ["bad" if n in bad else "good" for n in names],
            "status_description": [BAD_DESCRIPTION if n in bad else _NA for n in names],
            "soz": [{True: "1", False: "0"}.get(soz.get(n), _NA) for n in names],
            "type_source": ["clinician" if n in types else ("recording" if n in recorded else _NA) for n in names],
        },
        columns=list(CHANNEL_WRITE_COLUMNS),
    )


def _prepare_out_dir(out_dir, stem: str, source, allow_source_dir: bool) -> tuple[Path, tuple[Path, Path]]:
    if not stem or "/" in stem or "\\" in stem:
        raise ValueError(f"Invalid annotation stem={stem!r}: expected a file-name stem without folders.")
    out_dir = check_out_dir(out_dir, source, allow_source_dir=allow_source_dir)
    paths = sidecar_paths(out_dir, stem)
    if source is not None and Path(source).expanduser().resolve() in (paths[0].resolve(), paths[1].resolve()):
        raise ValueError(f"Refusing to overwrite the recording's own file {source} with annotations.")
    out_dir.mkdir(parents=True, exist_ok=True)
    return out_dir, paths


def _check_channels(annotations: AnnotationSet, channel_names: list[str] | None) -> None:
    if channel_names is None:
        return
    names = set(channel_names)
    for what, channels in (
        ("Bad channels", annotations.bad_channels),
        ("Labelled channels", [*annotations.soz_labels, *annotations.type_overrides]),
    ):
        unknown = list(dict.fromkeys(c for c in channels if c not in names))
        if unknown:
            raise ValueError(f"{what} {unknown} are not channels of the recording; cannot save them.")


def _write_sidecars(annotations, out_dir, paths, channel_names, recorded_types) -> None:
    """Back the current files up, then write both sidecars atomically (call with the lock held)."""
    for path in paths:
        backup_file(path, backup_dir(out_dir), keep=MAX_BACKUPS)
    write_tsv(_events_frame(sort_markers(annotations.markers)), paths[0])
    write_tsv(_channels_frame(annotations, channel_names, recorded_types), paths[1])


def save_annotations(
    annotations: AnnotationSet,
    out_dir: str | Path,
    stem: str,
    *,
    channel_names: list[str] | None = None,
    channel_types: list[str] | None = None,
    source: str | Path | None = None,
    allow_source_dir: bool = False,
) -> tuple[Path, Path]:
    """Write the annotations as two BIDS-style sidecars, atomically, replacing what is there.

    The previous files are kept as numbered backups (:func:`backup_dir`). To merge with what
    another session saved meanwhile, use :func:`sync_annotations`.

    Parameters
    ----------
    annotations : AnnotationSet
    out_dir : path
        Output folder (created when missing).
    stem : str
        File-name stem (:func:`recording_stem`).
    channel_names : list of str, optional
        Every channel of the recording; the channels file then lists all of them (good/bad),
        otherwise only those with a mark.
    channel_types : list of str, optional
        The recording's channel types (same order), written in ``type`` where the clinician set none.
    source : path, optional
        The recording's file; its folder is refused as ``out_dir`` unless ``allow_source_dir``.
    allow_source_dir : bool

    Returns
    -------
    paths : (Path, Path)
        The events and channels files written.
    """
    out_dir, paths = _prepare_out_dir(out_dir, stem, source, allow_source_dir)
    _check_channels(annotations, channel_names)
    with file_lock(_lock_path(out_dir, stem)):
        _write_sidecars(annotations, out_dir, paths, channel_names, channel_types)
    logger.info("Saved annotations to %s and %s", *paths)
    return paths


def _read_tsv(path: Path, columns: tuple[str, ...]) -> pd.DataFrame:
    try:
        df = pd.read_csv(path, sep="\t", dtype=str, keep_default_na=False)
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError) as err:
        raise AnnotationFileError(f"Cannot read annotation file {path}: {err}") from None
    missing = [c for c in columns if c not in df.columns]
    if missing:
        raise AnnotationFileError(
            f"Annotation file {path} lacks column(s) {missing}: expected tab-separated columns {list(columns)}, "
            f"found {list(df.columns)}."
        )
    return df


def _cell(row, name: str) -> str:
    value = getattr(row, name, "")
    return "" if value in (None, _NA) else str(value)


def _read_markers(path: Path) -> list[dict]:
    df = _read_tsv(path, EVENT_COLUMNS)
    markers, ids = [], set()
    for line, row in enumerate(df.itertuples(index=False), start=2):
        try:
            duration = 0.0 if row.duration in ("", _NA) else float(row.duration)
            marker = make_marker(
                float(row.onset), row.trial_type, _cell(row, "description"), duration,
                author=_cell(row, "author"), modified=_cell(row, "modified"),
            )  # fmt: skip
        except ValueError as err:
            raise AnnotationFileError(f"Annotation file {path}, line {line}: {err}") from None
        # no id (a file written before ids) or a repeated one (edited by hand): one every session derives alike
        given = _cell(row, "id").strip()
        if not given:
            marker["id"] = content_marker_id(marker)
        elif given in ids:
            marker["id"] = content_marker_id({**marker, "text": f"{given}|{marker['text']}"})
        else:
            marker["id"] = given
        ids.add(marker["id"])
        markers.append(marker)
    return markers


_SOZ_VALUES = {"1": True, "0": False, _NA: None, "": None}


def _read_channels(path: Path) -> tuple[list[str], dict[str, bool], dict[str, str]]:
    """``(bad channels, SOZ labels, type overrides)`` of a channels sidecar."""
    df = _read_tsv(path, CHANNEL_COLUMNS)
    names = df["name"].str.strip()
    status = df["status"].str.strip().str.lower()
    wrong = sorted(set(status) - {"good", "bad", _NA, ""})
    if wrong:
        raise AnnotationFileError(f"Annotation file {path}: status must be 'good' or 'bad', found {wrong}.")
    soz = {}
    if "soz" in df.columns:
        values = df["soz"].str.strip().str.lower()
        wrong = sorted(set(values) - set(_SOZ_VALUES))
        if wrong:
            raise AnnotationFileError(f"Annotation file {path}: soz must be 1, 0 or n/a, found {wrong}.")
        soz = {n: _SOZ_VALUES[v] for n, v in zip(names, values) if _SOZ_VALUES[v] is not None}
    types = {}
    if "type" in df.columns and "type_source" in df.columns:
        for line, (n, t, s) in enumerate(zip(names, df["type"], df["type_source"].str.strip().str.lower()), start=2):
            if s == "clinician":
                try:
                    types[n] = check_channel_type(t)
                except ValueError as err:
                    raise AnnotationFileError(f"Annotation file {path}, line {line}: {err}") from None
    return names[status == "bad"].tolist(), soz, types


def _read_sidecars(out_dir, stem: str, channel_names: list[str] | None) -> AnnotationSet:
    events_path, channels_path = sidecar_paths(out_dir, stem)
    markers = _read_markers(events_path) if events_path.is_file() else []
    bad, soz, types = _read_channels(channels_path) if channels_path.is_file() else ([], {}, {})
    unknown, unknown_labels = [], []
    if channel_names is not None:
        names = set(channel_names)
        unknown = [c for c in bad if c not in names]
        unknown_labels = [c for c in dict.fromkeys([*soz, *types]) if c not in names]
        bad = [c for c in bad if c in names]
        soz = {c: v for c, v in soz.items() if c in names}
        types = {c: v for c, v in types.items() if c in names}
        if unknown:
            logger.warning("%s lists bad channels not in the recording, ignored: %s", channels_path, ", ".join(unknown))
        if unknown_labels:
            logger.warning(
                "%s labels channels not in the recording, ignored: %s", channels_path, ", ".join(unknown_labels)
            )
    return AnnotationSet(
        markers=markers, bad_channels=bad, unknown_bad_channels=unknown, soz_labels=soz, type_overrides=types,
        unknown_label_channels=unknown_labels,
    )  # fmt: skip


def _fingerprints(paths) -> dict:
    return {str(p): fingerprint(p) for p in paths}


def read_annotations(
    out_dir: str | Path, stem: str, channel_names: list[str] | None = None, attempts: int = 5
) -> tuple[AnnotationSet, dict]:
    """:func:`load_annotations` and the files' fingerprints, consistent with each other.

    The files are fingerprinted before and after reading, and read again while a writer changes
    them in between (writes are atomic renames, so each read is of whole files).

    Returns
    -------
    annotations : AnnotationSet
    fingerprints : dict
        Path → :class:`~sss_viewer.fileio.Fingerprint` or None (absent), to pass to :func:`sync_annotations`.
    """
    paths = sidecar_paths(out_dir, stem)
    for _ in range(max(1, attempts)):
        before = _fingerprints(paths)
        annotations = _read_sidecars(out_dir, stem, channel_names)
        after = _fingerprints(paths)
        if same_files(before, after):
            return annotations, after
    return annotations, after


def load_annotations(out_dir: str | Path, stem: str, channel_names: list[str] | None = None) -> AnnotationSet:
    """Read the sidecars written by :func:`save_annotations` / :func:`sync_annotations`.

    Parameters
    ----------
    out_dir : path
    stem : str
    channel_names : list of str, optional
        The recording's channels; bad channels that are not among them go to
        ``unknown_bad_channels`` (SOZ labels and types to ``unknown_label_channels``), with a
        logged warning, instead of being kept.

    Returns
    -------
    AnnotationSet
        Empty when neither file exists (either file may be absent on its own).

    Raises
    ------
    AnnotationFileError
        When a file exists but is malformed; the message names the file (and the line).
    """
    return read_annotations(out_dir, stem, channel_names)[0]


def read_log(out_dir: str | Path, stem: str) -> list[dict]:
    """The edit log's entries, oldest first (a line cut short by a crash is skipped)."""
    path = log_path(out_dir, stem)
    if not path.is_file():
        return []
    entries = []
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            entries.append(json.loads(line))
        except json.JSONDecodeError:
            logger.warning("Skipped an unreadable line of %s", path)
    return entries


def _log(out_dir: Path, stem: str, entries: list[dict]) -> None:
    for entry in entries:
        append_line(log_path(out_dir, stem), json.dumps(entry, ensure_ascii=False))


def sidecar_backups(out_dir: str | Path, stem: str) -> dict[str, list[Path]]:
    """``{"events": [...], "channels": [...]}``: the numbered backups of each sidecar, newest first."""
    events, channels = sidecar_paths(out_dir, stem)
    folder = backup_dir(out_dir)
    return {"events": numbered_backups(folder, events.name), "channels": numbered_backups(folder, channels.name)}


def restore_backup(out_dir: str | Path, stem: str, n: int = 1, *, author: str = "") -> tuple[Path, Path]:
    """Put backup ``n`` (1 = the version before the last save) back in place; the current files are backed up.

    Raises
    ------
    FileNotFoundError
        When there is no backup ``n`` of either sidecar.
    """
    out_dir = Path(out_dir)
    paths = sidecar_paths(out_dir, stem)
    with file_lock(_lock_path(out_dir, stem)):
        sources = [backup_dir(out_dir) / f"{p.name}.{n}" for p in paths]
        if not any(s.is_file() for s in sources):
            raise FileNotFoundError(f"No backup {n} of {stem}'s annotations in {backup_dir(out_dir)}.")
        data = [s.read_bytes() if s.is_file() else None for s in sources]
        for path, content in zip(paths, data):
            if content is not None:
                backup_file(path, backup_dir(out_dir), keep=MAX_BACKUPS)
                atomic_write_bytes(path, content)
        entry = {"time": utc_now(), "author": author, "action": f"restore backup {n}", "before": None, "after": None}
        _log(out_dir, stem, [entry])
    logger.info("Restored backup %d of %s's annotations in %s", n, stem, out_dir)
    return paths


@dataclass
class SyncResult:
    """What :func:`sync_annotations` did.

    Attributes
    ----------
    annotations : AnnotationSet
        What the files hold now (this session's view from here on, and the next merge's base).
    conflicts : list of Conflict
    fingerprints : dict
        The files' fingerprints now (the next sync's ``seen``).
    paths : (Path, Path)
    merged : bool
        Whether the files had changed since this session read them (and were merged).
    wrote : bool
        Whether the files were written.
    incoming : Edit or None
        What the merge brought into this session's view (another session's changes).
    """

    annotations: AnnotationSet
    conflicts: list[Conflict]
    fingerprints: dict
    paths: tuple[Path, Path]
    merged: bool = False
    wrote: bool = False
    incoming: Edit | None = None


def sync_annotations(
    local: AnnotationSet,
    out_dir: str | Path,
    stem: str,
    *,
    base: AnnotationSet | None = None,
    seen: dict | None = None,
    channel_names: list[str] | None = None,
    channel_types: list[str] | None = None,
    source: str | Path | None = None,
    allow_source_dir: bool = False,
    author: str = "",
    edits: list[Edit] = (),
    force: bool = False,
    lock_timeout_s: float = 10.0,
    identity: RecordingIdentity | None = None,
) -> SyncResult:
    """Save this session's annotations, merging what another session saved since this one read the files.

    Under an inter-process lock: fingerprint the sidecars; when they differ from ``seen`` (mtime,
    size and SHA-256 as read by this session), read them and :func:`merge_annotations` ``(base,
    local, disk)``; back up the current files; write the result atomically; append ``edits``, the
    merge and any conflicts to the edit log.

    Parameters
    ----------
    local : AnnotationSet
        This session's annotations.
    out_dir, stem, channel_names, channel_types, source, allow_source_dir
        As :func:`save_annotations`.
    base : AnnotationSet, optional
        What this session last read or wrote (default: nothing).
    seen : dict, optional
        The fingerprints from :func:`read_annotations` or the last sync (default: nothing seen, so
        existing files are merged).
    author : str
        Who saves (goes to the log and to the markers this session made).
    edits : list of Edit
        This session's edits since its last save (logged).
    force : bool
        Write even when nothing changed, and replace a sidecar that cannot be read (it stays
        among the backups); without it an unreadable changed file raises.
    lock_timeout_s : float
    identity : RecordingIdentity, optional
        The recording's identity (:func:`locate_sidecars`), recorded in the folder's manifest with
        the first save (and updated when the source changed).

    Returns
    -------
    SyncResult

    Raises
    ------
    AnnotationFileError
        When the files changed on disk and cannot be read (and not ``force``).
    ValueError
        For a refused folder or channels that are not the recording's.
    OSError
        When the folder cannot be written or the lock not taken (:class:`~sss_viewer.fileio.LockTimeout`).
    """
    out_dir, paths = _prepare_out_dir(out_dir, stem, source, allow_source_dir)
    _check_channels(local, channel_names)
    base = base if base is not None else AnnotationSet()
    with file_lock(_lock_path(out_dir, stem), lock_timeout_s):
        now = _fingerprints(paths)
        merged, conflicts, disk, changed = local, [], None, not same_files(seen or {}, now)
        if changed:
            try:
                disk = _read_sidecars(out_dir, stem, channel_names)
            except AnnotationFileError:
                if not force:
                    raise
                logger.warning("Replacing unreadable annotation files %s (kept among the backups)", paths)
            else:
                merged, conflicts = merge_annotations(base, local, disk)
        absent = any(fp is None for fp in now.values())
        write = force or bool(edits) or (disk is not None and not merged.same_ids_as(disk)) or (not changed and absent)
        if write:
            _write_sidecars(merged, out_dir, paths, channel_names, channel_types)
            now = _fingerprints(paths)
            if identity is not None and identity.key != "label":
                if manifest_match(read_manifest(out_dir, stem), identity) != "same":
                    write_manifest(out_dir, stem, identity)
        incoming = diff_annotations(local, merged, author=author) if disk is not None else None
        _log(out_dir, stem, _log_entries(edits, incoming, conflicts, author))
    if write:
        logger.info("Saved annotations to %s and %s%s", *paths, " (merged with another session's)" if changed else "")
    return SyncResult(merged, conflicts, now, paths, merged=disk is not None, wrote=write, incoming=incoming)


def _log_entries(edits, incoming: Edit | None, conflicts: list[Conflict], author: str) -> list[dict]:
    entries = [e.to_json() for e in edits]
    if incoming is not None and not incoming.empty:
        entries.append({**incoming.to_json(), "action": f"merge from another session: {incoming.action}"})
    time = utc_now()
    entries += [
        {"time": time, "author": author, "action": f"conflict: {c.message}", "before": None, "after": None}
        for c in conflicts
    ]
    return entries


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


# --------------------------------------------------------------------------------- which recording


CLAIM_SUFFIX = ".claim.json"
"""Record, beside old-style sidecars, of the recording they were copied to (``.sssviewer/<stem>.claim.json``)."""


@dataclass
class SidecarLocation:
    """Where a recording's sidecars are (:func:`locate_sidecars`).

    Attributes
    ----------
    folder : Path
        The folder of its sidecars (inside the output folder).
    stem : str
        Their names' stem: the recording's, with ``_src-<digest>`` for a content key.
    identity : RecordingIdentity
        What keys them.
    note : str
        What the clinician should know (old sidecars copied, or left untouched and why); may be empty.
    migrated_from : Path or None
        The folder of old-style sidecars copied here by this call.
    """

    folder: Path
    stem: str
    identity: RecordingIdentity
    note: str = ""
    migrated_from: Path | None = None


def _file_stem(name: str) -> str:
    for ext in sorted(SUPPORTED_FORMATS, key=len, reverse=True):
        if name.lower().endswith(ext):
            return name[: -len(ext)]
    return Path(name).stem


def _has_sidecars(folder: Path, stem: str) -> bool:
    return any(p.is_file() for p in sidecar_paths(folder, stem))


def _claim_path(folder: Path, stem: str) -> Path:
    return folder / STATE_DIR / f"{stem}{CLAIM_SUFFIX}"


def _read_claim(folder: Path, stem: str) -> dict | None:
    path = _claim_path(folder, stem)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as err:
        logger.warning("Unreadable claim %s (%s): the old sidecars are treated as taken", path, err)
        return {"source": "an unknown recording"}
    return data if isinstance(data, dict) else {"source": "an unknown recording"}


def _mismatch(folder: Path, stem: str, recording) -> str | None:
    """Why sidecars in ``folder`` cannot be ``recording``'s (None: nothing against it)."""
    events, channels = sidecar_paths(folder, stem)
    try:
        markers = _read_markers(events) if events.is_file() else []
        listed = _read_tsv(channels, CHANNEL_COLUMNS) if channels.is_file() else None
    except AnnotationFileError as err:
        return f"they cannot be read: {err}"
    names = set(recording.ch_names)
    if listed is not None:
        written = set(listed["name"].str.strip())
        full = (listed["status"].str.strip().str.lower() == "good").any()  # every channel was listed
        if not written <= names or (full and written != names):
            return "their channels are not this recording's"
    duration = float(getattr(recording, "duration_s", math.inf))
    if any(m["onset_s"] > duration + 1e-6 for m in markers):
        return "they have markers after the end of this recording"
    seeded = {marker_key(m) for m in seed_from_recording(recording).markers}
    if any(m["author"] == SEED_AUTHOR and marker_key(m) not in seeded for m in markers):
        return "their markers from the recording file are not this recording's"
    return None


def _same_stem_folders(data_root, stem: str, recording_folder: Path) -> list[str]:
    """Folders of the data root (other than ``recording_folder``) holding a recording named ``stem``."""
    root = Path(data_root).expanduser().resolve()
    found = set()
    for path in root.rglob(f"{glob.escape(stem)}.*"):
        if path.parent != recording_folder and _file_stem(path.name) == stem and path.is_file():
            found.add(path.parent.relative_to(root).as_posix())
    return sorted(found)


def _legacy_verdict(legacy: Path, stem: str, recording, identity: RecordingIdentity, data_root) -> str | None:
    """Why old-style sidecars in ``legacy`` are not to be attached to ``recording`` (None: they are its own).

    They are its own only when nothing in them contradicts it (:func:`_mismatch`), no other
    recording took them, and it is the only recording of that name in the data root: two
    same-named recordings could each own them, and one patient's marks are never attached to another.
    """
    claim = _read_claim(legacy, stem)
    if claim is not None:
        if claim.get("source") == identity.source and claim.get("digest") == identity.digest:
            return None
        return f"they were already copied to {claim.get('source')}'s annotations"
    reason = _mismatch(legacy, stem, recording)
    if reason is not None:
        return reason
    if identity.key != "path" or data_root is None:
        return f"without a data root to look in, it cannot be told which recording named {stem!r} they belong to"
    here = Path(recording.source).expanduser().resolve().parent
    others = _same_stem_folders(data_root, stem, here)
    if others:
        shown = ", ".join(f"{o}/" for o in others[:3]) + (" …" if len(others) > 3 else "")
        return f"other recordings are named {stem!r} too ({shown}): they could be any of theirs"
    return None


def _migrate(legacy: Path, stem: str, folder: Path, own: str, identity: RecordingIdentity, author: str) -> bool:
    """Copy ``stem``'s old-style sidecars and log from ``legacy`` to ``folder`` as ``own``'s; the old files stay.

    Returns False when another session copied them meanwhile.
    """
    folder.mkdir(parents=True, exist_ok=True)
    with file_lock(_lock_path(legacy, stem)), file_lock(_lock_path(folder, own)):
        if _has_sidecars(folder, own):  # another session migrated meanwhile
            return False
        sources = [*sidecar_paths(legacy, stem), log_path(legacy, stem)]
        pairs = zip(sources, [*sidecar_paths(folder, own), log_path(folder, own)])
        copied = []
        for src, dst in pairs:
            if src.is_file():
                atomic_write_bytes(dst, src.read_bytes())
                copied.append(src.name)
        write_manifest(folder, own, identity)
        claim = {**identity.manifest(), "copied_to": str(folder), "time": utc_now()}
        _claim_path(legacy, stem).parent.mkdir(parents=True, exist_ok=True)
        atomic_write_bytes(_claim_path(legacy, stem), (json.dumps(claim, indent=1, sort_keys=True) + "\n").encode())
        entry = {
            "time": utc_now(), "author": author, "before": None, "after": None,
            "action": f"migrate: copied {', '.join(copied)} from {legacy} (named by the file name only) for "
            f"{identity.source}; the old files are kept",
        }  # fmt: skip
        _log(folder, own, [entry])
    logger.info("Copied the old annotation sidecars %s of %s to %s (the old files are kept)", copied, stem, folder)
    return True


def _elsewhere(root: Path, stem: str, identity: RecordingIdentity, note: str) -> SidecarLocation:
    """Key ``identity``'s sidecars by its content, because its usual ones are another recording's."""
    content = identity.as_content()
    where = SidecarLocation(root, stem + content.stem_suffix, content)
    where.note = f"{note} This recording's annotations are kept as {where.stem}_desc-sssviewer_*."
    return where


def locate_sidecars(
    out_dir: str | Path, stem: str, recording, *, data_root: str | Path | None = None, author: str = ""
) -> SidecarLocation:
    """Find (and when needed migrate) ``recording``'s sidecars in the output folder ``out_dir``.

    They are keyed by the recording's identity
    (:func:`~sss_viewer.viewer.annotation_identity.recording_identity`): its path relative to
    ``data_root`` (``out_dir/patA/rec_desc-…`` for ``patA/rec.edf``), else its content digest
    (``out_dir/rec_src-<digest>_desc-…``), else (held in memory) ``out_dir/<stem>_desc-…``. A
    manifest next to the sidecars records the source's size and digest:

    - sidecars with this recording's manifest are used;
    - sidecars with the manifest of a different file at the same path are used with a warning when
      nothing in them contradicts this file, and are otherwise left untouched (this recording's
      are then keyed by its content);
    - sidecars of the old naming (by file stem only, no manifest: ``out_dir/<stem>_desc-…``) are
      adopted only when they are this recording's (:func:`_legacy_verdict`): copied to its folder
      with their log (the old files are kept, a claim records where they went, the copy is
      logged), or, for a recording at the top of the data root, recorded in place. Otherwise they
      are left untouched, ``note`` says why, and this recording starts fresh.

    Parameters
    ----------
    out_dir : path
        The output folder.
    stem : str
        :func:`recording_stem`.
    recording : Recording
    data_root : path, optional
        The folder recordings are browsed in.
    author : str
        Who opens it (for the log of a migration).

    Returns
    -------
    SidecarLocation
        Nothing is written unless old sidecars are adopted.
    """
    root = Path(out_dir).expanduser()
    identity = recording_identity(recording, data_root)
    if identity.key == "label":
        return SidecarLocation(root, stem, identity)
    folder, own = root / identity.folder, stem + identity.stem_suffix
    manifest = read_manifest(folder, own)
    match = manifest_match(manifest, identity)
    if _has_sidecars(folder, own):
        if match == "same" or (identity.stem_suffix and match == "none"):  # a digest in the name: its own
            return SidecarLocation(folder, own, identity)
        if match == "other":
            owner = manifest.get("source") or "another recording"
            note = f"⚠ The annotations {own} in {folder} are {owner}'s: left untouched."
            return _elsewhere(root, stem, identity, note)
        if match == "changed":
            reason = _mismatch(folder, own, recording)
            if reason is None:
                note = (
                    f"⚠ {identity.source} is not the file these annotations were made on (its size or content "
                    "changed since); check that they still fit."
                )
                return SidecarLocation(folder, own, identity, note)
            return _elsewhere(
                root, stem, identity, f"⚠ The annotations in {folder} were made on another file at {identity.source} "
                f"({reason}): left untouched.",
            )  # fmt: skip
        # the old naming, in this very folder (a recording at the top of the data root)
        content = _elsewhere(root, stem, identity, "")
        if _has_sidecars(root, content.stem):
            return SidecarLocation(root, content.stem, content.identity)
        reason = _legacy_verdict(folder, own, recording, identity, data_root)
        if reason is None:
            with file_lock(_lock_path(folder, own)):
                write_manifest(folder, own, identity)
            _log(folder, own, [{
                "time": utc_now(), "author": author, "before": None, "after": None,
                "action": f"migrate: these sidecars (named by the file name only) recorded as {identity.source}'s",
            }])  # fmt: skip
            return SidecarLocation(folder, own, identity, "Annotations of the old naming adopted as this recording's.")
        note = f"⚠ The old annotations {own} in {folder} were not used: {reason}. They are kept untouched."
        logger.warning("%s", note)
        return _elsewhere(root, stem, identity, note)
    if identity.key == "path":
        content = _elsewhere(root, stem, identity, "")
        if _has_sidecars(root, content.stem):  # kept by content earlier, when the path's were another's
            return SidecarLocation(root, content.stem, content.identity)
    if (folder, own) != (root, stem) and _has_sidecars(root, stem) and read_manifest(root, stem) is None:
        reason = _legacy_verdict(root, stem, recording, identity, data_root)
        legacy = ", ".join(p.name for p in sidecar_paths(root, stem) if p.is_file())
        if reason is None:
            if _migrate(root, stem, folder, own, identity, author):
                note = f"Annotations saved under the old naming ({legacy}) were copied here; the old files are kept."
                return SidecarLocation(folder, own, identity, note, migrated_from=root)
            return SidecarLocation(folder, own, identity)
        note = (
            f"⚠ The old annotations {legacy} in {root} were not used: {reason}. They are kept untouched; "
            "this recording starts fresh."
        )
        logger.warning("%s", note)
        return SidecarLocation(folder, own, identity, note)
    return SidecarLocation(folder, own, identity)


# ------------------------------------------------------------------------------------------- panel


def _listed_text(m: dict) -> str:
    """A marker as the list shows it, without its number: :func:`marker_label`, and a span's duration."""
    duration = float(m.get("duration_s") or 0.0)
    return marker_label(m) + (f" (span {duration:.2f} s)" if duration > 0 else "")


def _marker_label(i: int, m: dict) -> str:
    return f"{i + 1}. {_listed_text(m)}"


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
        haystack = f"{_listed_text(m)} {m.get('author', '')}".casefold()
        if all(word in haystack for word in words):
            found.append(i)
    return found


class AnnotationPanel(pn.viewable.Viewer):
    """Add, move, delete and go to markers; mark channels bad; SOZ labels and channel types; undo; save.

    Nothing is pre-selected, and the buttons that act on a marker stay disabled until one is
    chosen. **Go to** only moves the view (``goto_s``); **Move…** shows the old and new time and
    waits for **Apply**. Every change is an :class:`Edit`: **Undo** reverts the last ones (several
    levels), and each is logged. Changes are saved at once when ``autosave`` is on (the default)
    and an output folder is set, through :func:`sync_annotations`: another session's changes to
    the same files are merged in, and what cannot be merged is listed as a conflict the clinician
    resolves (**Keep mine** / **Keep theirs**). Use :meth:`set_recording` (or
    :meth:`from_recording`) to switch recordings: it loads or seeds without writing anything.
    """

    markers = param.List(default=[], item_type=dict, doc="Markers {onset_s, duration_s, kind, text, author, modified}.")
    bad_channels = param.List(default=[], item_type=str, doc="Channels marked bad.")
    soz_labels = param.Dict(default={}, doc="Channel → the clinician's SOZ label (True/False), labelled ones only.")
    type_overrides = param.Dict(default={}, doc="Channel → MNE channel type set by the clinician.")
    channels = param.List(default=[], item_type=str, doc="Channel names to choose from.")
    current_time_s = param.Number(default=0.0, bounds=(0, None), doc="Where a new marker goes by default.")
    goto_s = param.Number(default=None, allow_None=True, doc="Set (and triggered) by Go to: centre the view here.")
    out_dir = param.Path(default=None, allow_None=True, check_exists=False, doc="The output folder.")
    sidecar_dir = param.Path(
        default=None, allow_None=True, check_exists=False,
        doc="Folder of this recording's sidecars inside out_dir (keyed by the recording: locate_sidecars); "
        "None: out_dir itself.",
    )  # fmt: skip
    data_root = param.Path(
        default=None, allow_None=True, check_exists=False,
        doc="Folder recordings are browsed in: a file inside it keys its sidecars by its path relative to it.",
    )  # fmt: skip
    stem = param.String(default="recording", doc="Sidecar name stem (the recording source's name).")
    source = param.Path(default=None, allow_None=True, check_exists=False, doc="The recording's file, if any.")
    autosave = param.Boolean(default=True, doc="Save on every change when an output folder is set.")
    author = param.String(default="", doc="Who edits (default: user and a per-session id).")
    conflicts = param.List(default=[], item_type=Conflict, doc="Unresolved conflicts with other sessions.")
    status = param.String(default="", doc="Last save / load message.")

    _STATE = ("markers", "bad_channels", "soz_labels", "type_overrides")

    def __init__(self, annotations: AnnotationSet | None = None, **params):
        if annotations is not None:
            params.setdefault("markers", list(annotations.markers))
            params.setdefault("bad_channels", list(annotations.bad_channels))
            params.setdefault("soz_labels", dict(annotations.soz_labels))
            params.setdefault("type_overrides", dict(annotations.type_overrides))
        params.setdefault("author", default_author())
        super().__init__(**params)
        self._loading = False
        self._undoing = False
        self._autosave_blocked = False
        self._next_action: str | None = None
        self._undo_stack: list[Edit] = []
        self._unsaved: list[Edit] = []
        self._base = self.annotations
        self._seen: dict = {}
        self._recorded_types: list[str] | None = None
        self._recorded: dict = {}
        self._identity: RecordingIdentity | None = None
        self._selected_key: tuple | None = None
        self._pending_move: tuple | None = None
        self._query = ""
        self._quiet_list = False  # the list's selection set by the panel itself, not chosen: no jump
        self._make_widgets()
        self.param.watch(self._on_edit, list(self._STATE))
        self._refresh_list()

    def _make_widgets(self) -> None:
        self._time = pn.widgets.FloatInput(label="Time (s)", value=self.current_time_s, start=0.0, step=0.1, width=120)
        self._text = pn.widgets.TextInput(label="Note / marker text", placeholder="optional text", width=260)
        self._add_onset = pn.widgets.Button(label="Add onset", color="primary", width=100)
        self._add_offset = pn.widgets.Button(label="Add offset", color="primary", width=100)
        self._add_note = pn.widgets.Button(label="Add note", width=100)
        self._search = pn.widgets.TextInput(
            label="Search markers", placeholder="text, kind or time, e.g. onset 56", sizing_mode="stretch_width"
        )
        self._list = pn.widgets.MultiSelect(label="Markers", options={}, value=[], size=6, sizing_mode="stretch_width")
        self._goto = pn.widgets.Button(label="Go to", width=70, disabled=True)
        self._move = pn.widgets.Button(label="Move…", width=70, disabled=True)
        self._delete = pn.widgets.Button(label="Delete", color="danger", width=70, disabled=True)
        self._undo = pn.widgets.Button(label="Undo", width=70, disabled=True)
        self._move_time = pn.widgets.FloatInput(label="Move to (s)", value=0.0, start=0.0, step=0.1, width=120)
        self._move_text = pn.pane.Markdown("", sizing_mode="stretch_width")
        self._apply = pn.widgets.Button(label="Apply", color="primary", width=80)
        self._cancel = pn.widgets.Button(label="Cancel", width=80)
        self._move_row = pn.Column(
            self._move_text, pn.Row(self._move_time, self._apply, self._cancel), visible=False,
            sizing_mode="stretch_width",
        )  # fmt: skip
        self._bad = pn.widgets.MultiChoice(
            label="Bad channels", options=list(self.channels), value=list(self.bad_channels)
        )
        self._save = pn.widgets.Button(label="Save", color="success", width=80)
        self._check = pn.widgets.Button(label="Check for changes", width=150)
        self._conflict_list = pn.widgets.Select(
            label="Conflicts with another session", options={}, sizing_mode="stretch_width"
        )
        self._keep_mine = pn.widgets.Button(label="Keep mine", width=100)
        self._keep_theirs = pn.widgets.Button(label="Keep theirs", width=100)
        self._conflict_row = pn.Column(
            self._conflict_list, pn.Row(self._keep_mine, self._keep_theirs), visible=False, sizing_mode="stretch_width"
        )
        self._status = pn.pane.Markdown(self.status, sizing_mode="stretch_width")
        self._add_onset.on_click(lambda e: self.add_marker("onset"))
        self._add_offset.on_click(lambda e: self.add_marker("offset"))
        self._add_note.on_click(lambda e: self.add_marker("note"))
        self._goto.on_click(lambda e: self.go_to_selected())
        self._move.on_click(lambda e: self.request_move())
        self._apply.on_click(lambda e: self.apply_move())
        self._cancel.on_click(lambda e: self.cancel_move())
        self._delete.on_click(lambda e: self.delete_selected())
        self._undo.on_click(lambda e: self.undo())
        self._save.on_click(lambda e: self.save())
        self._check.on_click(lambda e: self.refresh())
        self._keep_mine.on_click(lambda e: self.resolve_conflict(self._conflict_list.value, "mine"))
        self._keep_theirs.on_click(lambda e: self.resolve_conflict(self._conflict_list.value, "theirs"))
        self._list.param.watch(self._on_select, "value")
        self._list.param.watch(self._jump_to_choice, "value")  # after _on_select: the choice is the selection
        self._search.param.watch(self._on_search, ["value", "value_input"])
        self._move_time.param.watch(lambda e: self._show_move(), "value")
        self._bad.param.watch(lambda e: setattr(self, "bad_channels", list(e.new)), "value")
        self._layout = pn.Column(
            pn.Row(self._time, self._text),
            pn.Row(self._add_onset, self._add_offset, self._add_note),
            self._search,
            self._list,
            pn.Row(self._goto, self._move, self._delete, self._undo),
            self._move_row,
            self._bad,
            pn.Row(self._save, self._check),
            self._conflict_row,
            self._status,
            sizing_mode="stretch_width",
        )

    def __panel__(self):
        return self._layout

    @classmethod
    def from_recording(cls, recording, out_dir: str | Path | None, **params) -> AnnotationPanel:
        """A panel for ``recording`` (see :meth:`set_recording`)."""
        panel = cls(**params)
        panel.set_recording(recording, out_dir, stem=params.get("stem"))
        return panel

    def set_recording(
        self, recording, out_dir: str | Path | None, *, stem: str | None = None, data_root: str | Path | None = None
    ) -> None:
        """Show ``recording``'s annotations: saved sidecars from ``out_dir`` when present, else seeded.

        The sidecars are this recording's own, told apart from any other recording's of the same
        file name (:func:`locate_sidecars`: keyed by the path relative to ``data_root``, else by a
        content digest); sidecars of the old naming are copied over only when they are this
        recording's, and otherwise left untouched with a warning in ``status``.

        Seeding uses :func:`seed_from_recording` (seizure onset/offset, events, the source's bad
        channels). Nothing is written by this call (autosave starts with the clinician's first
        change), nothing is selected, and the undo history starts empty. A malformed sidecar is
        never overwritten by autosave: the panel starts from the recording's own annotations, says
        why in ``status``, and autosave waits until an explicit :meth:`save` (which keeps the
        malformed file among the backups).

        Parameters
        ----------
        recording : Recording
        out_dir : path or None
        stem : str, optional
            Default :func:`recording_stem`.
        data_root : path, optional
            Default: the ``data_root`` parameter.
        """
        stem = stem or recording_stem(recording)
        names = list(recording.ch_names)
        status, blocked, annotations, seen, folder, note = "", False, None, {}, None, ""
        self._identity = None
        if out_dir is not None:
            try:
                where = locate_sidecars(
                    out_dir, stem, recording, data_root=data_root or self.data_root, author=self.author
                )
            except OSError as err:
                logger.warning("Could not look for %s's annotations in %s: %s", stem, out_dir, err)
                folder, note = Path(out_dir), f" ⚠ Could not look for this recording's own annotations: {err}"
            else:
                folder, stem, self._identity = where.folder, where.stem, where.identity
                note = f" {where.note}" if where.note else ""
            seen = _fingerprints(sidecar_paths(folder, stem))
            try:
                loaded, seen = read_annotations(folder, stem, names)
            except AnnotationFileError as err:
                status, blocked = f"⚠ {err} Autosave waits until you press Save (which replaces that file).", True
            else:
                if any(fp is not None for fp in seen.values()):
                    annotations, status = loaded, f"Loaded annotations from {folder}."
                    status += _unknown_text(loaded)
        if annotations is None:
            annotations = seed_from_recording(recording)
            status = status or "Annotations seeded from the recording (not saved yet)."
        status += note
        self._recorded_types = list(getattr(recording, "ch_types", []) or []) or None
        self._recorded = _recorded_labels(recording)
        self._adopt(
            annotations, channels=names, out_dir=None if out_dir is None else str(out_dir), stem=stem,
            sidecar_dir=None if folder is None else str(folder),
            source=None if recording.source is None else str(recording.source), status=status, conflicts=[],
        )  # fmt: skip
        self._base, self._seen, self._autosave_blocked = annotations, seen, blocked
        self._undo_stack, self._unsaved = [], []
        self._refresh_undo()
        self.cancel_move()
        self._search.param.update(value="", value_input="")  # a new recording lists all its markers
        self.select(None)

    def _adopt(self, annotations: AnnotationSet, **params) -> None:
        """Show ``annotations`` (and set ``params``) without recording an edit."""
        self._loading = True
        try:
            self.param.update(
                markers=list(annotations.markers), bad_channels=list(annotations.bad_channels),
                soz_labels=dict(annotations.soz_labels), type_overrides=dict(annotations.type_overrides), **params,
            )  # fmt: skip
        finally:
            self._loading = False

    # ------------------------------------------------------------------ state

    @property
    def annotations(self) -> AnnotationSet:
        """The current annotations."""
        return AnnotationSet(
            markers=list(self.markers), bad_channels=list(self.bad_channels),
            soz_labels=dict(self.soz_labels), type_overrides=dict(self.type_overrides),
        )  # fmt: skip

    @property
    def undo_actions(self) -> list[str]:
        """What :meth:`undo` would revert, most recent last."""
        return [e.action for e in self._undo_stack]

    @property
    def selected_index(self) -> int | None:
        """Index (into ``markers``) of the one marker selected in the list, else None."""
        value = list(self._list.value or [])
        return value[0] if len(value) == 1 else None

    @property
    def selected_marker(self) -> dict | None:
        """The selected marker, else None."""
        i = self.selected_index
        return self.markers[i] if i is not None and i < len(self.markers) else None

    def select(self, index: int | None) -> None:
        """Select marker ``index`` in the list (None: nothing); unlike choosing it in the list, the view stays."""
        self._quiet_list = True
        try:
            self._list.value = [] if index is None else [index]
        finally:
            self._quiet_list = False

    @property
    def listed(self) -> list[int]:
        """Indices (into ``markers``) of the markers the list shows: those the search finds (:func:`filter_markers`)."""
        return filter_markers(self.markers, self._query)

    def search(self, query: str) -> list[int]:
        """Show only the markers ``query`` finds (see :func:`filter_markers`); empty: all. Returns :attr:`listed`."""
        self._search.value = str(query or "")
        return self.listed

    def _commit(self, action: str, **state) -> None:
        """Change the state as one edit named ``action``."""
        self._next_action = action
        try:
            self.param.update(**state)
        finally:
            self._next_action = None

    def add_marker(
        self, kind: str, onset_s: float | None = None, text: str | None = None, duration_s: float = 0.0
    ) -> None:
        """Add a marker at ``onset_s`` (default: the time field) with ``text`` (default: the text field).

        ``duration_s`` > 0 makes it a span (drawn as a band over the traces from the onset on).
        """
        onset = self._time.value if onset_s is None else onset_s
        text = self._text.value if text is None else text
        try:
            onset = onset if onset is not None else self.current_time_s
            marker = make_marker(onset, kind, text or "", duration_s, author=self.author, modified=utc_now())
        except ValueError as err:
            self.status = f"⚠ {err}"
            return
        if any(marker_key(m) == marker_key(marker) for m in self.markers):
            self.status = f"⚠ There already is a marker '{marker_label(marker)}'."
            return
        self._selected_key = marker_key(marker)
        self._commit(f"add {marker_label(marker)}", markers=sort_markers([*self.markers, marker]))
        self._text.value = ""

    def move_selected(self, onset_s: float) -> None:
        """Set the time of the selected marker to ``onset_s`` now (the UI asks first: :meth:`request_move`)."""
        marker = self.selected_marker
        if marker is None:
            self.status = "⚠ Select a marker to move."
            return
        try:
            moved = make_marker(
                onset_s, marker["kind"], marker["text"], marker["duration_s"], author=self.author, modified=utc_now(),
                marker_id=marker["id"],
            )  # fmt: skip
        except ValueError as err:
            self.status = f"⚠ {err}"
            return
        if marker_key(moved) == marker_key(marker):
            self.status = f"'{marker_label(marker)}' is already at {onset_s:.2f} s: nothing to move."
            return
        others = [m for m in self.markers if marker_key(m) != marker_key(marker)]
        self._selected_key = marker_key(moved)
        action = f"move {marker['kind']} from {marker['onset_s']:.2f} s to {moved['onset_s']:.2f} s"
        self._commit(action, markers=sort_markers([*others, moved]))

    def request_move(self) -> None:
        """Show the move of the selected marker, awaiting a new time, then Apply or Cancel.

        The new time starts at a time typed into the time field, else at the marker's own time (an
        Apply without an edit then moves nothing) — never at the view's left edge, which the time field
        follows until a time is typed.
        """
        marker = self.selected_marker
        if marker is None:
            self.status = "⚠ Select a marker to move."
            return
        self._pending_move = marker_key(marker)
        typed = self._time.value
        following_view = typed is None or abs(float(typed) - float(self.current_time_s)) < 1e-9
        self._move_time.value = float(marker["onset_s"] if following_view else typed)
        self._move_row.visible = True
        self._show_move()

    def _pending_marker(self) -> dict | None:
        return next((m for m in self.markers if marker_key(m) == self._pending_move), None)

    def _show_move(self) -> None:
        marker = self._pending_marker()
        if marker is not None and self._move_time.value is not None:
            self._move_text.object = (
                f"Move {marker['kind']} from {marker['onset_s']:.2f} s to {float(self._move_time.value):.2f} s?"
            )

    def apply_move(self) -> None:
        """Apply the move shown by :meth:`request_move`."""
        marker = self._pending_marker()
        if marker is None or self._move_time.value is None:
            self.cancel_move()
            self.status = "⚠ That marker changed meanwhile; choose it again."
            return
        self.select(self.markers.index(marker))
        self.cancel_move()
        self.move_selected(float(self._move_time.value))

    def cancel_move(self) -> None:
        """Drop the move awaiting Apply."""
        self._pending_move = None
        self._move_row.visible = False

    def delete_selected(self) -> None:
        """Delete the selected marker (Undo brings it back)."""
        marker = self.selected_marker
        if marker is None:
            self.status = "⚠ Select a marker to delete."
            return
        self._selected_key = None
        self._commit(f"delete {marker_label(marker)}", markers=[m for m in self.markers if m is not marker])

    def go_to_selected(self) -> None:
        """Centre the view on the selected marker (``goto_s`` is set and triggered); the marker is unchanged."""
        marker = self.selected_marker
        if marker is None:
            self.status = "⚠ Select a marker to go to."
            return
        with param.discard_events(self):
            self.goto_s = marker["onset_s"]
        self.param.trigger("goto_s")
        self.status = f"View centred on {marker_label(marker)} (marker unchanged)."

    def set_soz_label(self, channel: str, value: bool | None) -> None:
        """Label ``channel`` SOZ (True), not SOZ (False) or unlabelled (None)."""
        if not self._known_channel(channel):
            return
        labels = {c: v for c, v in self.soz_labels.items() if c != channel}
        if value is not None:
            labels[channel] = bool(value)
        self._commit(f"{channel}: {_soz_text(None if value is None else bool(value))}", soz_labels=labels)

    def set_channel_type(self, channel: str, ch_type: str | None) -> None:
        """Set ``channel``'s type to the MNE type ``ch_type`` (None or "": back to the recording's)."""
        if not self._known_channel(channel):
            return
        types = {c: t for c, t in self.type_overrides.items() if c != channel}
        if ch_type:
            try:
                types[channel] = check_channel_type(ch_type)
            except ValueError as err:
                self.status = f"⚠ {err}"
                return
        self._commit(f"type of {channel}: {types.get(channel, 'as recorded')}", type_overrides=types)

    def _recorded_values(self, edit: Edit) -> dict:
        """The recording's own labels and types of the channels ``edit`` changes (see :attr:`Edit.recorded`)."""
        out = {}
        for key in ("soz", "type"):
            own = self._recorded.get(key, {})
            changed = {*edit.before[key], *edit.after[key]}
            values = {c: own[c] for c in changed if c in own}
            if values:
                out[key] = values
        return out

    def _known_channel(self, channel: str) -> bool:
        if self.channels and channel not in self.channels:
            self.status = f"⚠ {channel!r} is not a channel of this recording."
            return False
        return True

    def undo(self) -> None:
        """Revert the last edit still in the history (other sessions' changes merged since stay)."""
        if not self._undo_stack:
            self.status = "Nothing to undo."
            return
        edit = self._undo_stack.pop()
        inverse = edit.inverse(f"undo {edit.action}", self.author)
        target = inverse.apply(self.annotations)
        if edit.after["markers"] and edit.before["markers"]:
            self._selected_key = marker_key(edit.before["markers"][0])
        self._undoing = True
        try:
            self._commit(inverse.action, **_fields(target))
        finally:
            self._undoing = False
        self._refresh_undo()

    def resolve_conflict(self, index: int | None, choice: str) -> None:
        """Settle conflict ``index`` with ``"mine"`` or ``"theirs"`` (an edit, so it can be undone)."""
        if index is None or not 0 <= index < len(self.conflicts):
            self.status = "⚠ Choose a conflict to resolve."
            return
        conflict = self.conflicts[index]
        edit = conflict.resolve(choice, self.annotations, self.author)
        self.conflicts = [c for k, c in enumerate(self.conflicts) if k != index]
        if edit.empty:
            self.status = f"Kept {'yours' if choice == 'mine' else 'the other session’s'}: {conflict.item}."
            return
        self._commit(f"{edit.action} (resolving a conflict)", **_fields(edit.apply(self.annotations)))

    # ------------------------------------------------------------------ saving

    def _on_edit(self, *events) -> None:
        """Every change of the state (from a button, a widget or code) becomes an undoable, logged edit."""
        if self._loading:
            return
        old = AnnotationSet(**{**_fields(self.annotations), **{e.name: e.old for e in events}})
        edit = diff_annotations(old, self.annotations, self._next_action, self.author)
        if edit.empty:
            return
        edit.recorded = self._recorded_values(edit)
        if not self._undoing:
            self._undo_stack.append(edit)
            self._refresh_undo()
        self._unsaved.append(edit)
        if self.autosave and not self._autosave_blocked and self.out_dir is not None:
            self._sync(force=False, done=f"Saved: {edit.action}")
        else:
            self.status = f"{edit.action[:1].upper()}{edit.action[1:]} (not saved yet)."

    def save(self) -> tuple[Path, Path] | None:
        """Write the sidecars to ``out_dir`` now (merging another session's changes); the status says how."""
        counts = (len(self.markers), len(self.bad_channels), len(self.soz_labels))
        result = self._sync(force=True, done="Saved {} marker(s), {} bad channel(s), {} SOZ label(s)".format(*counts))
        return None if result is None else result.paths

    def refresh(self) -> SyncResult | None:
        """Merge in what another session saved since this one last read or wrote (writes only if needed)."""
        unchanged = self.out_dir is not None and same_files(
            self._seen, _fingerprints(sidecar_paths(self._folder, self.stem))
        )
        if unchanged:
            self.status = "No changes from other sessions."
            return None
        return self._sync(force=False, done="Checked for changes")

    def poll(self) -> SyncResult | None:
        """Quiet periodic check (the app calls it every few seconds): merge only when the sidecars changed.

        Unlike :meth:`refresh` it leaves the status alone when nothing changed, so another session's
        marks appear without a click and this session's last message stays readable.
        """
        if self.out_dir is None or self._loading:
            return None
        if same_files(self._seen, _fingerprints(sidecar_paths(self._folder, self.stem))):
            return None
        return self._sync(force=False, done="Merged changes from another session")

    @property
    def _folder(self) -> str | None:
        """The folder of this recording's sidecars."""
        return self.sidecar_dir or self.out_dir

    def _sync(self, *, force: bool, done: str) -> SyncResult | None:
        if self.out_dir is None:
            self.status = "⚠ Choose an output folder to save the annotations."
            return None
        try:
            check_out_dir(self.out_dir, self.source)
            result = sync_annotations(
                self.annotations, self._folder, self.stem, base=self._base, seen=self._seen,
                channel_names=list(self.channels) or None, channel_types=self._recorded_types, source=self.source,
                author=self.author, edits=list(self._unsaved), force=force, identity=self._identity,
            )  # fmt: skip
        except AnnotationFileError as err:
            self._autosave_blocked = True
            self.status = f"⚠ Not saved: {err} Press Save to replace it (the old file is kept as a backup)."
            return None
        except (OSError, ValueError) as err:
            logger.warning("Could not save annotations: %s", err)
            self.status = f"⚠ Not saved: {err}"
            return None
        self._unsaved, self._autosave_blocked = [], False
        self._base, self._seen = result.annotations, result.fingerprints
        if result.merged:
            self._adopt(result.annotations)
        self._add_conflicts(result.conflicts)
        self.status = self._sync_text(result, done)
        return result

    def _sync_text(self, result: SyncResult, done: str) -> str:
        where = f" to {result.paths[0].parent}" if result.wrote else ""
        text = f"{done}{where}."
        if result.incoming is not None and not result.incoming.empty:
            text += f" Merged from another session: {result.incoming.action}."
        if self.conflicts:
            text += f" ⚠ {len(self.conflicts)} conflict(s) with another session: {self.conflicts[0].message}"
        return text

    def _add_conflicts(self, conflicts: list[Conflict]) -> None:
        known = {(c.what, c.item) for c in self.conflicts}
        new = [c for c in conflicts if (c.what, c.item) not in known]
        if new:
            self.conflicts = [*self.conflicts, *new]

    # ------------------------------------------------------------------ widgets

    @param.depends("current_time_s", watch=True)
    def _follow_time(self) -> None:
        self._time.value = self.current_time_s

    def _on_select(self, event) -> None:
        marker = self.selected_marker
        self._selected_key = None if marker is None else marker_key(marker)
        for button in (self._goto, self._move, self._delete):
            button.disabled = marker is None
        if self._pending_move is not None and self._selected_key != self._pending_move:
            self.cancel_move()

    def _jump_to_choice(self, event) -> None:
        """A marker chosen in the list (one, newly): the view goes to it, as with **Go to**."""
        if self._quiet_list or len(event.new or []) != 1 or list(event.new) == list(event.old or []):
            return
        self.go_to_selected()

    def _on_search(self, event) -> None:
        query = str(event.new or "")
        if query != self._query:
            self._query = query
            self._refresh_list()

    @param.depends("markers", watch=True)
    def _refresh_list(self) -> None:
        listed = self.listed
        options = {_marker_label(i, self.markers[i]): i for i in listed}
        keys = [marker_key(m) for m in self.markers]
        selected = [keys.index(self._selected_key)] if self._selected_key in keys else []
        selected = [i for i in selected if i in listed]
        self._quiet_list = True
        try:
            self._list.param.update(options=options, value=selected)
            self._list.name = f"Markers ({len(listed)} of {len(self.markers)})" if self._query.strip() else "Markers"
        finally:
            self._quiet_list = False
        if self._pending_move is not None and self._pending_move not in keys:
            self.cancel_move()
        self._on_select(None)

    @param.depends("channels", watch=True)
    def _refresh_channels(self) -> None:
        self._bad.options = list(self.channels)

    @param.depends("bad_channels", watch=True)
    def _refresh_bad(self) -> None:
        if list(self._bad.value) != list(self.bad_channels):
            self._bad.value = list(self.bad_channels)

    def _refresh_undo(self) -> None:
        self._undo.disabled = not self._undo_stack
        self._undo.description = f"Undo: {self._undo_stack[-1].action}" if self._undo_stack else None

    @param.depends("conflicts", watch=True)
    def _refresh_conflicts(self) -> None:
        self._conflict_list.options = {c.message: i for i, c in enumerate(self.conflicts)}
        self._conflict_list.value = 0 if self.conflicts else None
        self._conflict_row.visible = bool(self.conflicts)

    @param.depends("status", watch=True)
    def _show_status(self) -> None:
        self._status.object = self.status


def _recorded_labels(recording) -> dict:
    """``{"soz": {channel: True/False}, "type": {channel: type}}``: the recording's own SOZ labels and channel types."""
    names = list(getattr(recording, "ch_names", []) or [])
    out = {"soz": {}, "type": {}}
    soz = getattr(recording, "soz", None)
    if soz is not None:
        out["soz"] = {c: bool(v) for c, v in zip(names, soz)}
    types = getattr(recording, "ch_types", None)
    if types is not None:
        out["type"] = {c: str(t) for c, t in zip(names, types)}
    return out


def _unknown_text(loaded: AnnotationSet) -> str:
    text = ""
    if loaded.unknown_bad_channels:
        text += f" ⚠ Ignored bad channels not in this recording: {', '.join(loaded.unknown_bad_channels)}."
    if loaded.unknown_label_channels:
        text += f" ⚠ Ignored labels of channels not in this recording: {', '.join(loaded.unknown_label_channels)}."
    return text

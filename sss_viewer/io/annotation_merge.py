"""Merging two sessions' annotations: a three-way merge that loses nothing and reports what it cannot settle.

When another session saved the sidecars since this one read them, the store
(:func:`~sss_viewer.io.annotation_store.sync_annotations`) *merges* (:func:`merge_annotations`)
instead of overwriting: both sides' additions are kept, each side's moves and deletions applied,
and what a union cannot settle is kept and reported as a :class:`Conflict` (**Keep mine** /
**Keep theirs**). Markers are merged by their ``id``, which a move keeps: two sessions moving one
marker, or one deleting what the other moved, are conflicts, not two markers or a silent keep.
"""

from __future__ import annotations

from dataclasses import dataclass

from sss_viewer.io.annotation_model import (
    AnnotationSet,
    Edit,
    annotation_fields,
    diff_annotations,
    marker_key,
    marker_label,
    sort_markers,
    soz_text,
)


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
        fmt = soz_text if self.what == "soz" else (lambda v: v or "as recorded")
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
                f"'{self.item}' was deleted here but moved in another session to {theirs['onset_s']:.2f} s; kept there."
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
        target = AnnotationSet(**annotation_fields(current))
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
        dict.fromkeys(base.bad_channels, True),
        dict.fromkeys(local.bad_channels, True),
        dict.fromkeys(disk.bad_channels, True),
        "bad",
    )
    soz, c3 = _merge_labels(base.soz_labels, local.soz_labels, disk.soz_labels, "soz")
    types, c4 = _merge_labels(base.type_overrides, local.type_overrides, disk.type_overrides, "type")
    merged = AnnotationSet(markers=markers, bad_channels=list(bads), soz_labels=soz, type_overrides=types)
    return merged, [*c1, *c2, *c3, *c4]

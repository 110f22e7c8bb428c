"""The annotation panel: add, move, delete and go to markers; mark channels bad; SOZ labels, channel types; save.

The annotations themselves and their sidecar files live below the viewer, in the ``io`` stage, so that
the CLI and the engine read clinician labels and bad marks without the ``[viewer]`` extra:

- :mod:`sss_viewer.io.annotation_model`: markers, :class:`AnnotationSet`, :class:`Edit`;
- :mod:`sss_viewer.io.annotation_merge`: :func:`merge_annotations` of two sessions, :class:`Conflict`;
- :mod:`sss_viewer.io.annotation_store`: the sidecars (save, load, sync, backups, the edit log, the lock);
- :mod:`sss_viewer.io._annotation_identity`, :mod:`sss_viewer.io.annotation_location`: which recording the
  sidecars belong to, and in which folder they are (:func:`locate_sidecars`).

Their public names are re-exported here (:data:`__all__`) for code that imported them from this module.
"""

from __future__ import annotations

import logging
from pathlib import Path

import panel as pn
import param
from bokeh.models import Tooltip

from sss_viewer.fileio import same_files
from sss_viewer.io._annotation_identity import RecordingIdentity
from sss_viewer.io.annotation_location import CLAIM_SUFFIX, SidecarLocation, locate_sidecars
from sss_viewer.io.annotation_merge import Conflict, merge_annotations
from sss_viewer.io.annotation_model import (
    MARKER_KINDS,
    SEED_AUTHOR,
    AnnotationSet,
    Edit,
    channel_types,
    check_channel_type,
    content_marker_id,
    describe_edit,
    diff_annotations,
    filter_markers,
    make_marker,
    marker_identity,
    marker_key,
    marker_label,
    new_marker_id,
    seed_from_recording,
    sort_markers,
    utc_now,
)
from sss_viewer.io.annotation_model import annotation_fields as _fields
from sss_viewer.io.annotation_model import default_author as _author_of
from sss_viewer.io.annotation_model import listed_text as _listed_text
from sss_viewer.io.annotation_model import soz_text as _soz_text
from sss_viewer.io.annotation_store import (
    BAD_DESCRIPTION,
    CHANNEL_COLUMNS,
    CHANNEL_WRITE_COLUMNS,
    CHANNELS_SUFFIX,
    EVENT_COLUMNS,
    EVENT_EXTRA_COLUMNS,
    EVENTS_SUFFIX,
    LOG_SUFFIX,
    MAX_BACKUPS,
    STATE_DIR,
    AnnotationFileError,
    SyncResult,
    backup_dir,
    check_out_dir,
    load_annotations,
    log_path,
    read_annotations,
    read_log,
    recording_stem,
    restore_backup,
    save_annotations,
    sidecar_backups,
    sidecar_paths,
    sync_annotations,
)
from sss_viewer.io.annotation_store import sidecar_fingerprints as _fingerprints

__all__ = [
    "BAD_DESCRIPTION",
    "CHANNELS_SUFFIX",
    "CHANNEL_COLUMNS",
    "CHANNEL_WRITE_COLUMNS",
    "CLAIM_SUFFIX",
    "EVENTS_SUFFIX",
    "EVENT_COLUMNS",
    "EVENT_EXTRA_COLUMNS",
    "LOG_SUFFIX",
    "MARKER_KINDS",
    "MAX_BACKUPS",
    "SEED_AUTHOR",
    "STATE_DIR",
    "AnnotationFileError",
    "AnnotationPanel",
    "AnnotationSet",
    "Conflict",
    "Edit",
    "RecordingIdentity",
    "SidecarLocation",
    "SyncResult",
    "backup_dir",
    "channel_types",
    "check_channel_type",
    "check_out_dir",
    "content_marker_id",
    "default_author",
    "describe_edit",
    "diff_annotations",
    "filter_markers",
    "load_annotations",
    "locate_sidecars",
    "log_path",
    "make_marker",
    "marker_identity",
    "marker_key",
    "marker_label",
    "merge_annotations",
    "new_marker_id",
    "read_annotations",
    "read_log",
    "recording_stem",
    "restore_backup",
    "save_annotations",
    "seed_from_recording",
    "sidecar_backups",
    "sidecar_paths",
    "sort_markers",
    "sync_annotations",
    "utc_now",
]

logger = logging.getLogger(__name__)


def default_author() -> str:
    """Who edits: the server's authenticated user (else the OS user) and a short per-session id."""
    try:
        user = pn.state.user
    except Exception:  # noqa: BLE001 - no server context
        user = None
    return _author_of(user)


def _marker_label(i: int, m: dict) -> str:
    return f"{i + 1}. {_listed_text(m)}"


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

    NOTHING_TO_UNDO = "Nothing to undo."
    """The Undo button's tooltip with an empty history (it always has one: a new tooltip model costs a model-graph pass)."""

    markers = param.List(default=[], item_type=dict, doc="Markers {onset_s, duration_s, kind, text, author, modified}.")
    bad_channels = param.List(default=[], item_type=str, doc="Channels marked bad.")
    soz_labels = param.Dict(default={}, doc="Channel → the clinician's SOZ label (True/False), labelled ones only.")
    type_overrides = param.Dict(default={}, doc="Channel → MNE channel type set by the clinician.")
    channels = param.List(default=[], item_type=str, doc="Channel names to choose from.")
    current_time_s = param.Number(default=0.0, bounds=(0, None), doc="Where a new marker goes by default.")
    goto_s = param.Number(default=None, allow_None=True, doc="Set (and triggered) by Go to: centre the view here.")
    out_dir = param.Path(default=None, allow_None=True, check_exists=False, doc="The output folder.")
    sidecar_dir = param.Path(
        default=None,
        allow_None=True,
        check_exists=False,
        doc="Folder of this recording's sidecars inside out_dir (keyed by the recording: locate_sidecars); "
        "None: out_dir itself.",
    )
    data_root = param.Path(
        default=None,
        allow_None=True,
        check_exists=False,
        doc="Folder recordings are browsed in: a file inside it keys its sidecars by its path relative to it.",
    )
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
        self._undo = pn.widgets.Button(label="Undo", width=70, disabled=True, description=self.NOTHING_TO_UNDO)
        self._move_time = pn.widgets.FloatInput(label="Move to (s)", value=0.0, start=0.0, step=0.1, width=120)
        self._move_text = pn.pane.Markdown("", sizing_mode="stretch_width")
        self._apply = pn.widgets.Button(label="Apply", color="primary", width=80)
        self._cancel = pn.widgets.Button(label="Cancel", width=80)
        self._move_row = pn.Column(
            self._move_text,
            pn.Row(self._move_time, self._apply, self._cancel),
            visible=False,
            sizing_mode="stretch_width",
        )
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
            annotations,
            channels=names,
            out_dir=None if out_dir is None else str(out_dir),
            stem=stem,
            sidecar_dir=None if folder is None else str(folder),
            source=None if recording.source is None else str(recording.source),
            status=status,
            conflicts=[],
        )
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
                markers=list(annotations.markers),
                bad_channels=list(annotations.bad_channels),
                soz_labels=dict(annotations.soz_labels),
                type_overrides=dict(annotations.type_overrides),
                **params,
            )
        finally:
            self._loading = False

    # ------------------------------------------------------------------ state

    @property
    def annotations(self) -> AnnotationSet:
        """The current annotations."""
        return AnnotationSet(
            markers=list(self.markers),
            bad_channels=list(self.bad_channels),
            soz_labels=dict(self.soz_labels),
            type_overrides=dict(self.type_overrides),
        )

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
                onset_s,
                marker["kind"],
                marker["text"],
                marker["duration_s"],
                author=self.author,
                modified=utc_now(),
                marker_id=marker["id"],
            )
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
                self.annotations,
                self._folder,
                self.stem,
                base=self._base,
                seen=self._seen,
                channel_names=list(self.channels) or None,
                channel_types=self._recorded_types,
                source=self.source,
                author=self.author,
                edits=list(self._unsaved),
                force=force,
                identity=self._identity,
            )
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
        text = f"Undo: {self._undo_stack[-1].action}" if self._undo_stack else self.NOTHING_TO_UNDO
        if not self._retext_tooltip(self._undo, text):
            self._undo.description = text

    @staticmethod
    def _retext_tooltip(button: pn.widgets.Button, text: str) -> bool:
        """Put ``text`` into the drawn tooltips of ``button`` (False, having changed nothing, if it has none).

        Setting ``description`` makes Panel send a new tooltip model, and a new model makes bokeh
        recompute the whole document's model graph (a fifth of a second on the viewer's page); new
        text in the drawn tooltip is a string change. ``description`` takes the text for later drawings.
        """
        drawn = [getattr(model, "tooltip", None) for model, _ in button._models.values()]
        if not drawn or not all(isinstance(tip, Tooltip) and isinstance(tip.content, str) for tip in drawn):
            return False
        with param.discard_events(button):
            button.description = text
        with pn.io.unlocked():  # as Panel writes its models: held, then sent (a click's callback has no document lock)
            for tip in drawn:
                tip.content = text
        return True

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

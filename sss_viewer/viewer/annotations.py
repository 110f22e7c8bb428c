"""Clinician annotations: seizure onset/offset markers, notes, bad channels, saved as BIDS-style sidecars.

The pure part (:class:`AnnotationSet`, :func:`save_annotations`, :func:`load_annotations`) is
testable without Panel. Annotations are written next to the exports, never into the recording:

- ``<stem>_desc-sssviewer_events.tsv``: ``onset, duration, trial_type, description`` (one row per
  marker; ``trial_type`` is the marker kind, ``n/a`` marks an empty description);
- ``<stem>_desc-sssviewer_channels.tsv``: ``name, status, status_description`` (every channel of the
  recording when the names are known, otherwise only the bad ones).

Writing into the recording's own folder is refused unless asked for (``allow_source_dir=True``):
that folder is often a shared, read-only or BIDS *raw* dataset, where extra ``desc-`` files break
validation and mix the viewer's output with the source data; choose an output folder (for BIDS a
``derivatives/`` folder) instead. The recording's own file is never written, whatever the folder.
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd
import panel as pn
import param

from sss_viewer.checkpoint import atomic_write
from sss_viewer.io.readers import SUPPORTED_FORMATS

logger = logging.getLogger(__name__)

MARKER_KINDS = ("onset", "offset", "note", "event")
"""Kinds of marker: clinical seizure onset / offset, a free-text note, an event from the recording."""

EVENTS_SUFFIX = "_desc-sssviewer_events.tsv"
CHANNELS_SUFFIX = "_desc-sssviewer_channels.tsv"
EVENT_COLUMNS = ("onset", "duration", "trial_type", "description")
CHANNEL_COLUMNS = ("name", "status", "status_description")
BAD_DESCRIPTION = "marked bad in the SSS viewer"
_NA = "n/a"


class AnnotationFileError(ValueError):
    """A sidecar file exists but cannot be read as annotations (the message names the file)."""


def make_marker(onset_s: float, kind: str, text: str = "", duration_s: float = 0.0) -> dict:
    """A validated marker ``{"onset_s", "duration_s", "kind", "text"}``.

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
    return {"onset_s": float(onset_s), "duration_s": float(duration_s), "kind": kind, "text": str(text)}


def sort_markers(markers: list[dict]) -> list[dict]:
    """Markers in time order (stable for equal onsets)."""
    return sorted(markers, key=lambda m: m["onset_s"])


@dataclass
class AnnotationSet:
    """A recording's annotations.

    Parameters
    ----------
    markers : list of dict
        ``{"onset_s", "duration_s", "kind", "text"}`` with kind in :data:`MARKER_KINDS`; notes are
        markers of kind ``"note"`` (a note always has a time).
    bad_channels : list of str
        Channels the clinician marked bad (they leave the ranking).
    unknown_bad_channels : list of str
        Bad channels read from a sidecar that are not channels of the recording: reported, never
        kept in ``bad_channels`` and not written back.
    """

    markers: list[dict] = field(default_factory=list)
    bad_channels: list[str] = field(default_factory=list)
    unknown_bad_channels: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.markers = sort_markers(
            [make_marker(m["onset_s"], m["kind"], m.get("text", ""), m.get("duration_s", 0.0)) for m in self.markers]
        )
        self.bad_channels = list(dict.fromkeys(str(c) for c in self.bad_channels))

    @property
    def notes(self) -> list[dict]:
        """The markers of kind ``"note"``."""
        return [m for m in self.markers if m["kind"] == "note"]

    @property
    def empty(self) -> bool:
        """Whether there is nothing to save."""
        return not self.markers and not self.bad_channels


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


def _events_frame(markers: list[dict]) -> pd.DataFrame:
    return pd.DataFrame(
        {
            "onset": [f"{m['onset_s']:.6f}" for m in markers],
            "duration": [f"{m['duration_s']:.6f}" for m in markers],
            "trial_type": [m["kind"] for m in markers],
            "description": [_tsv_text(m["text"]) or _NA for m in markers],
        },
        columns=list(EVENT_COLUMNS),
    )


def _tsv_text(text: str) -> str:
    """Tabs and line breaks would break the TSV: write them as spaces."""
    return " ".join(str(text).replace("\t", " ").splitlines()).strip()


def _channels_frame(bad_channels: list[str], channel_names: list[str] | None) -> pd.DataFrame:
    names = list(channel_names) if channel_names is not None else list(bad_channels)
    bad = set(bad_channels)
    return pd.DataFrame(
        {
            "name": names,
            "status": ["bad" if n in bad else "good" for n in names],
            "status_description": [BAD_DESCRIPTION if n in bad else _NA for n in names],
        },
        columns=list(CHANNEL_COLUMNS),
    )


def _write_tsv(df: pd.DataFrame, path: Path) -> None:
    atomic_write(path, lambda tmp: df.to_csv(tmp, sep="\t", index=False, lineterminator="\n"))


def save_annotations(
    annotations: AnnotationSet,
    out_dir: str | Path,
    stem: str,
    *,
    channel_names: list[str] | None = None,
    source: str | Path | None = None,
    allow_source_dir: bool = False,
) -> tuple[Path, Path]:
    """Write the annotations as two BIDS-style sidecars, atomically.

    Parameters
    ----------
    annotations : AnnotationSet
    out_dir : path
        Output folder (created when missing).
    stem : str
        File-name stem (:func:`recording_stem`).
    channel_names : list of str, optional
        Every channel of the recording; the channels file then lists all of them (good/bad),
        otherwise only the bad ones.
    source : path, optional
        The recording's file; its folder is refused as ``out_dir`` unless ``allow_source_dir``.
    allow_source_dir : bool

    Returns
    -------
    paths : (Path, Path)
        The events and channels files written.
    """
    if not stem or "/" in stem or "\\" in stem:
        raise ValueError(f"Invalid annotation stem={stem!r}: expected a file-name stem without folders.")
    out_dir = check_out_dir(out_dir, source, allow_source_dir=allow_source_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    events_path, channels_path = sidecar_paths(out_dir, stem)
    if source is not None and Path(source).expanduser().resolve() in (events_path.resolve(), channels_path.resolve()):
        raise ValueError(f"Refusing to overwrite the recording's own file {source} with annotations.")
    if channel_names is not None:
        unknown = [c for c in annotations.bad_channels if c not in set(channel_names)]
        if unknown:
            raise ValueError(f"Bad channels {unknown} are not channels of the recording; cannot save them.")
    _write_tsv(_events_frame(sort_markers(annotations.markers)), events_path)
    _write_tsv(_channels_frame(annotations.bad_channels, channel_names), channels_path)
    logger.info("Saved annotations to %s and %s", events_path, channels_path)
    return events_path, channels_path


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


def _read_markers(path: Path) -> list[dict]:
    df = _read_tsv(path, EVENT_COLUMNS)
    markers = []
    for line, row in enumerate(df.itertuples(index=False), start=2):
        try:
            duration = 0.0 if row.duration in ("", _NA) else float(row.duration)
            text = "" if row.description == _NA else row.description
            markers.append(make_marker(float(row.onset), row.trial_type, text, duration))
        except ValueError as err:
            raise AnnotationFileError(f"Annotation file {path}, line {line}: {err}") from None
    return markers


def _read_bad_channels(path: Path) -> list[str]:
    df = _read_tsv(path, CHANNEL_COLUMNS)
    status = df["status"].str.strip().str.lower()
    wrong = sorted(set(status) - {"good", "bad", _NA, ""})
    if wrong:
        raise AnnotationFileError(f"Annotation file {path}: status must be 'good' or 'bad', found {wrong}.")
    return df.loc[status == "bad", "name"].str.strip().tolist()


def load_annotations(out_dir: str | Path, stem: str, channel_names: list[str] | None = None) -> AnnotationSet:
    """Read the sidecars written by :func:`save_annotations`.

    Parameters
    ----------
    out_dir : path
    stem : str
    channel_names : list of str, optional
        The recording's channels; bad channels that are not among them go to
        ``unknown_bad_channels`` (with a logged warning) instead of ``bad_channels``.

    Returns
    -------
    AnnotationSet
        Empty when neither file exists (either file may be absent on its own).

    Raises
    ------
    AnnotationFileError
        When a file exists but is malformed; the message names the file (and the line).
    """
    events_path, channels_path = sidecar_paths(out_dir, stem)
    markers = _read_markers(events_path) if events_path.is_file() else []
    bad = _read_bad_channels(channels_path) if channels_path.is_file() else []
    unknown: list[str] = []
    if channel_names is not None:
        names = set(channel_names)
        unknown = [c for c in bad if c not in names]
        bad = [c for c in bad if c in names]
        if unknown:
            logger.warning("%s lists bad channels not in the recording, ignored: %s", channels_path, ", ".join(unknown))
    return AnnotationSet(markers=markers, bad_channels=bad, unknown_bad_channels=unknown)


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
            markers.append(make_marker(max(0.0, float(t)), kind, str(text)))
            seizure[kind] = (float(t), recording.info.get(f"seizure_{kind}_text"))
    for ev in recording.events:
        dup = any(abs(ev.onset - t) < 1e-6 and (txt is None or txt == ev.description) for t, txt in seizure.values())
        if not dup and math.isfinite(ev.onset) and ev.onset >= 0:
            markers.append(make_marker(ev.onset, "event", ev.description, max(0.0, ev.duration)))
    return AnnotationSet(markers=markers, bad_channels=list(recording.bads))


def _marker_label(i: int, m: dict) -> str:
    text = f" — {m['text']}" if m["text"] else ""
    return f"{i + 1}. {m['kind']} at {m['onset_s']:.2f} s{text}"


class AnnotationPanel(pn.viewable.Viewer):
    """Add, move and delete onset/offset markers and notes; mark channels bad; save as sidecars.

    Every change is saved at once when ``autosave`` is on (the default) and an output folder is
    set: a clinician's marks are never only in the browser, and each save is an atomic rename, so a
    crash leaves the previous files whole. Use :meth:`set_recording` (or :meth:`from_recording`) to
    switch recordings: it loads or seeds without writing anything.
    """

    markers = param.List(default=[], item_type=dict, doc="Markers {onset_s, duration_s, kind, text}, time order.")
    bad_channels = param.List(default=[], item_type=str, doc="Channels marked bad.")
    channels = param.List(default=[], item_type=str, doc="Channel names to choose from.")
    current_time_s = param.Number(default=0.0, bounds=(0, None), doc="Where a new marker goes by default.")
    out_dir = param.Path(default=None, allow_None=True, check_exists=False, doc="Folder of the sidecars.")
    stem = param.String(default="recording", doc="Sidecar name stem (the recording source's name).")
    source = param.Path(default=None, allow_None=True, check_exists=False, doc="The recording's file, if any.")
    autosave = param.Boolean(default=True, doc="Save on every change when an output folder is set.")
    status = param.String(default="", doc="Last save / load message.")

    def __init__(self, annotations: AnnotationSet | None = None, **params):
        if annotations is not None:
            params.setdefault("markers", list(annotations.markers))
            params.setdefault("bad_channels", list(annotations.bad_channels))
        super().__init__(**params)
        self._loading = False
        self._autosave_blocked = False
        self._time = pn.widgets.FloatInput(label="Time (s)", value=self.current_time_s, start=0.0, step=0.1, width=120)
        self._text = pn.widgets.TextInput(label="Note / marker text", placeholder="optional text", width=260)
        self._add_onset = pn.widgets.Button(label="Add onset", color="primary", width=100)
        self._add_offset = pn.widgets.Button(label="Add offset", color="primary", width=100)
        self._add_note = pn.widgets.Button(label="Add note", width=100)
        self._list = pn.widgets.Select(label="Markers", options={}, size=6, sizing_mode="stretch_width")
        self._move = pn.widgets.Button(label="Move to time", width=120)
        self._delete = pn.widgets.Button(label="Delete", color="danger", width=100)
        self._bad = pn.widgets.MultiChoice(
            label="Bad channels", options=list(self.channels), value=list(self.bad_channels)
        )
        self._save = pn.widgets.Button(label="Save", color="success", width=100)
        self._status = pn.pane.Markdown(self.status, sizing_mode="stretch_width")
        self._add_onset.on_click(lambda e: self.add_marker("onset"))
        self._add_offset.on_click(lambda e: self.add_marker("offset"))
        self._add_note.on_click(lambda e: self.add_marker("note"))
        self._move.on_click(lambda e: self.move_selected())
        self._delete.on_click(lambda e: self.delete_selected())
        self._save.on_click(lambda e: self.save())
        self._bad.param.watch(lambda e: setattr(self, "bad_channels", list(e.new)), "value")
        self._layout = pn.Column(
            pn.Row(self._time, self._text),
            pn.Row(self._add_onset, self._add_offset, self._add_note),
            self._list,
            pn.Row(self._move, self._delete),
            self._bad,
            pn.Row(self._save),
            self._status,
            sizing_mode="stretch_width",
        )
        self._refresh_list()

    def __panel__(self):
        return self._layout

    @classmethod
    def from_recording(cls, recording, out_dir: str | Path | None, **params) -> AnnotationPanel:
        """A panel for ``recording`` (see :meth:`set_recording`)."""
        panel = cls(**params)
        panel.set_recording(recording, out_dir, stem=params.get("stem"))
        return panel

    def set_recording(self, recording, out_dir: str | Path | None, *, stem: str | None = None) -> None:
        """Show ``recording``'s annotations: saved sidecars from ``out_dir`` when present, else seeded.

        Seeding uses :func:`seed_from_recording` (seizure onset/offset, events, the source's bad
        channels). Nothing is written by this call (autosave starts with the clinician's first
        change). A malformed sidecar is never overwritten by autosave: the panel starts from the
        recording's own annotations, says why in ``status``, and autosave waits until an explicit
        :meth:`save`.

        Parameters
        ----------
        recording : Recording
        out_dir : path or None
        stem : str, optional
            Default :func:`recording_stem`.
        """
        stem = stem or recording_stem(recording)
        names = list(recording.ch_names)
        status, blocked, annotations = "", False, None
        if out_dir is not None:
            try:
                loaded = load_annotations(out_dir, stem, names)
            except AnnotationFileError as err:
                status, blocked = f"⚠ {err} Autosave waits until you press Save (which replaces that file).", True
            else:
                if any(p.is_file() for p in sidecar_paths(out_dir, stem)):
                    annotations = loaded
                    status = f"Loaded annotations from {Path(out_dir)}."
                    if loaded.unknown_bad_channels:
                        unknown = ", ".join(loaded.unknown_bad_channels)
                        status += f" ⚠ Ignored bad channels not in this recording: {unknown}."
        if annotations is None:
            annotations = seed_from_recording(recording)
            status = status or "Annotations seeded from the recording (not saved yet)."
        self._loading = True
        try:
            self.param.update(
                channels=names,
                markers=list(annotations.markers),
                bad_channels=list(annotations.bad_channels),
                out_dir=None if out_dir is None else str(out_dir),
                stem=stem,
                source=None if recording.source is None else str(recording.source),
                status=status,
            )
        finally:
            self._loading = False
        self._autosave_blocked = blocked
        self._list.value = None

    # ------------------------------------------------------------------ state

    @property
    def annotations(self) -> AnnotationSet:
        """The current annotations."""
        return AnnotationSet(markers=list(self.markers), bad_channels=list(self.bad_channels))

    @property
    def selected_index(self) -> int | None:
        """Index (into ``markers``) of the marker selected in the list."""
        return self._list.value

    def select(self, index: int | None) -> None:
        """Select marker ``index`` in the list."""
        self._list.value = index

    def add_marker(self, kind: str, onset_s: float | None = None, text: str | None = None) -> None:
        """Add a marker at ``onset_s`` (default: the time field) with ``text`` (default: the text field)."""
        onset = self._time.value if onset_s is None else onset_s
        text = self._text.value if text is None else text
        try:
            marker = make_marker(onset if onset is not None else self.current_time_s, kind, text or "")
        except ValueError as err:
            self.status = f"⚠ {err}"
            return
        markers = sort_markers([*self.markers, marker])
        self.markers = markers
        self.select(next(i for i, m in enumerate(markers) if m is marker))
        self._text.value = ""

    def move_selected(self, onset_s: float | None = None) -> None:
        """Set the time of the selected marker to ``onset_s`` (default: the time field)."""
        i = self.selected_index
        if i is None:
            self.status = "⚠ Select a marker to move."
            return
        onset = self._time.value if onset_s is None else onset_s
        try:
            moved = make_marker(onset, self.markers[i]["kind"], self.markers[i]["text"], self.markers[i]["duration_s"])
        except ValueError as err:
            self.status = f"⚠ {err}"
            return
        markers = sort_markers([*self.markers[:i], moved, *self.markers[i + 1 :]])
        self.markers = markers
        self.select(next(k for k, m in enumerate(markers) if m is moved))

    def delete_selected(self) -> None:
        """Delete the selected marker."""
        i = self.selected_index
        if i is None:
            self.status = "⚠ Select a marker to delete."
            return
        self.markers = [m for k, m in enumerate(self.markers) if k != i]

    def save(self) -> tuple[Path, Path] | None:
        """Write the sidecars to ``out_dir``; the status says where, or why not (no traceback)."""
        if self.out_dir is None:
            self.status = "⚠ Choose an output folder to save the annotations."
            return None
        try:
            paths = save_annotations(
                self.annotations, self.out_dir, self.stem, channel_names=list(self.channels) or None, source=self.source
            )
        except (OSError, ValueError) as err:
            logger.warning("Could not save annotations: %s", err)
            self.status = f"⚠ Not saved: {err}"
            return None
        self._autosave_blocked = False
        self.status = (
            f"Saved {len(self.markers)} marker(s) and {len(self.bad_channels)} bad channel(s) to {paths[0].parent}."
        )
        return paths

    # ------------------------------------------------------------------ widgets

    @param.depends("current_time_s", watch=True)
    def _follow_time(self) -> None:
        self._time.value = self.current_time_s

    @param.depends("markers", watch=True)
    def _refresh_list(self) -> None:
        selected = self._list.value
        options = {_marker_label(i, m): i for i, m in enumerate(self.markers)}
        self._list.options = options
        self._list.value = selected if selected in options.values() else None

    @param.depends("channels", watch=True)
    def _refresh_channels(self) -> None:
        self._bad.options = list(self.channels)

    @param.depends("bad_channels", watch=True)
    def _refresh_bad(self) -> None:
        if list(self._bad.value) != list(self.bad_channels):
            self._bad.value = list(self.bad_channels)

    @param.depends("markers", "bad_channels", watch=True)
    def _autosave(self) -> None:
        if self.autosave and not self._loading and not self._autosave_blocked and self.out_dir is not None:
            self.save()

    @param.depends("status", watch=True)
    def _show_status(self) -> None:
        self._status.object = self.status

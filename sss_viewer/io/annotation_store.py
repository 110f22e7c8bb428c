"""Clinician annotations on disk: BIDS-style sidecars, saved and merged safely, with backups and an edit log.

Nothing a clinician enters is lost or changed behind their back:

- every change is an :class:`~sss_viewer.io.annotation_model.Edit` that can be undone and is
  appended to an edit log (:func:`read_log`);
- each save is made under an inter-process lock, re-reads the sidecars, and when another session
  changed them since this one read them, *merges*
  (:func:`~sss_viewer.io.annotation_merge.merge_annotations`) instead of overwriting
  (:func:`sync_annotations`); what a union cannot settle is kept and reported as a
  :class:`~sss_viewer.io.annotation_merge.Conflict`;
- each write is atomic, and the previous files are kept as numbered backups (:func:`restore_backup`).

Files, written next to the exports and never into the recording:

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
  naming the recording (path and content digest) the sidecars belong to
  (:mod:`sss_viewer.io._annotation_identity`; which folder: :mod:`sss_viewer.io.annotation_location`).

Writing into the recording's own folder is refused unless asked for (``allow_source_dir=True``):
that folder is often a shared, read-only or BIDS *raw* dataset, where extra ``desc-`` files break
validation and mix the viewer's output with the source data; choose an output folder (for BIDS a
``derivatives/`` folder) instead. The recording's own file is never written, whatever the folder.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

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
from sss_viewer.io._annotation_identity import RecordingIdentity, manifest_match, read_manifest, write_manifest
from sss_viewer.io.annotation_merge import Conflict, merge_annotations
from sss_viewer.io.annotation_model import (
    AnnotationSet,
    Edit,
    check_channel_type,
    content_marker_id,
    diff_annotations,
    make_marker,
    sort_markers,
    tsv_text,
    utc_now,
)
from sss_viewer.io.viewer_labels import (  # the sidecar format's facts, defined once (the training labels read them)
    CHANNELS_SUFFIX,
    NA,
    SOZ_VALUES,
    STATE_DIR,
)
from sss_viewer.io.viewer_labels import recording_stem as file_stem

logger = logging.getLogger(__name__)

EVENTS_SUFFIX = "_desc-sssviewer_events.tsv"
"""The events sidecar: ``<stem>_desc-sssviewer_events.tsv`` (channels: ``CHANNELS_SUFFIX``)."""
LOG_SUFFIX = "_desc-sssviewer_log.jsonl"
"""The edit log: ``<stem>_desc-sssviewer_log.jsonl``."""
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


class AnnotationFileError(ValueError):
    """A sidecar file exists but cannot be read as annotations (the message names the file)."""


def recording_stem(recording) -> str:
    """Stem of the sidecar names: the source file's name without its format extension, else the label.

    ``sub-01_task-ictal_ieeg.vhdr`` → ``sub-01_task-ictal_ieeg``; ``raw.fif.gz`` → ``raw``; a
    recording held in memory → its label with spaces as ``_`` (``sub-pt01_run-01``).
    """
    source = getattr(recording, "source", None)
    if source is not None:
        return file_stem(source)
    return "_".join(str(recording.label).split()).replace("/", "-") or "recording"


def sidecar_paths(out_dir: str | Path, stem: str) -> tuple[Path, Path]:
    """``(events.tsv, channels.tsv)`` paths of ``stem``'s annotations in ``out_dir``."""
    out_dir = Path(out_dir)
    return out_dir / f"{stem}{EVENTS_SUFFIX}", out_dir / f"{stem}{CHANNELS_SUFFIX}"


def log_path(out_dir: str | Path, stem: str) -> Path:
    """The edit log ``<stem>_desc-sssviewer_log.jsonl`` in ``out_dir``."""
    return Path(out_dir) / f"{stem}{LOG_SUFFIX}"


def has_sidecars(folder: Path, stem: str) -> bool:
    """Whether ``folder`` holds either sidecar of ``stem``."""
    return any(p.is_file() for p in sidecar_paths(folder, stem))


def backup_dir(out_dir: str | Path) -> Path:
    """Folder of the numbered backups (``.sssviewer/backups``)."""
    return Path(out_dir) / STATE_DIR / "backups"


def sidecar_lock_path(out_dir: Path, stem: str) -> Path:
    """The lock file of ``stem``'s sidecars in ``out_dir`` (``.sssviewer/<stem>.lock``)."""
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
    return text if text else NA


def _events_frame(markers: list[dict]) -> pd.DataFrame:
    return pd.DataFrame(
        {
            "onset": [f"{m['onset_s']:.6f}" for m in markers],
            "duration": [f"{m['duration_s']:.6f}" for m in markers],
            "trial_type": [m["kind"] for m in markers],
            "description": [_na(tsv_text(m["text"])) for m in markers],
            "author": [_na(tsv_text(m.get("author", ""))) for m in markers],
            "modified": [_na(tsv_text(m.get("modified", ""))) for m in markers],
            "id": [m["id"] for m in markers],
        },
        columns=[*EVENT_COLUMNS, *EVENT_EXTRA_COLUMNS],
    )


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
            "type": [types.get(n) or recorded.get(n) or NA for n in names],
            "status": ["bad" if n in bad else "good" for n in names],
            "status_description": [BAD_DESCRIPTION if n in bad else NA for n in names],
            "soz": [{True: "1", False: "0"}.get(soz.get(n), NA) for n in names],
            "type_source": ["clinician" if n in types else ("recording" if n in recorded else NA) for n in names],
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
    with file_lock(sidecar_lock_path(out_dir, stem)):
        _write_sidecars(annotations, out_dir, paths, channel_names, channel_types)
    logger.info("Saved annotations to %s and %s", *paths)
    return paths


def read_tsv(path: Path, columns: tuple[str, ...]) -> pd.DataFrame:
    """A sidecar as strings (``n/a`` kept as text), checked to have ``columns``.

    Raises
    ------
    AnnotationFileError
        When it cannot be parsed or lacks a column (the message names the file).
    """
    from sss_viewer.io.tables import read_table

    return read_table(path, columns, what="annotation sidecar", na_values=None, error=AnnotationFileError)


def _cell(row, name: str) -> str:
    value = getattr(row, name, "")
    return "" if value in (None, NA) else str(value)


def read_markers(path: Path) -> list[dict]:
    """The markers of an events sidecar, in file order; every marker has an id (one derived alike by every session
    where the file has none, or repeats one).

    Raises
    ------
    AnnotationFileError
        When the file or a row is malformed (the message names the file and the line).
    """
    df = read_tsv(path, EVENT_COLUMNS)
    markers, ids = [], set()
    for line, row in enumerate(df.itertuples(index=False), start=2):
        try:
            duration = 0.0 if row.duration in ("", NA) else float(row.duration)
            marker = make_marker(
                float(row.onset),
                row.trial_type,
                _cell(row, "description"),
                duration,
                author=_cell(row, "author"),
                modified=_cell(row, "modified"),
            )
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


def _read_channels(path: Path) -> tuple[list[str], dict[str, bool], dict[str, str]]:
    """``(bad channels, SOZ labels, type overrides)`` of a channels sidecar."""
    df = read_tsv(path, CHANNEL_COLUMNS)
    names = df["name"].str.strip()
    status = df["status"].str.strip().str.lower()
    wrong = sorted(set(status) - {"good", "bad", NA, ""})
    if wrong:
        raise AnnotationFileError(f"Annotation file {path}: status must be 'good' or 'bad', found {wrong}.")
    soz = {}
    if "soz" in df.columns:
        values = df["soz"].str.strip().str.lower()
        wrong = sorted(set(values) - set(SOZ_VALUES))
        if wrong:
            raise AnnotationFileError(f"Annotation file {path}: soz must be 1, 0 or n/a, found {wrong}.")
        soz = {n: SOZ_VALUES[v] for n, v in zip(names, values) if SOZ_VALUES[v] is not None}
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
    markers = read_markers(events_path) if events_path.is_file() else []
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
        markers=markers,
        bad_channels=bad,
        unknown_bad_channels=unknown,
        soz_labels=soz,
        type_overrides=types,
        unknown_label_channels=unknown_labels,
    )


def sidecar_fingerprints(paths) -> dict:
    """Path (as text) → :class:`~sss_viewer.fileio.Fingerprint` of each of ``paths``, or None where absent."""
    return {str(p): fingerprint(p) for p in paths}


def read_annotations(
    out_dir: str | Path, stem: str, channel_names: list[str] | None = None, attempts: int = 5
) -> tuple[AnnotationSet, dict]:
    """:func:`load_annotations` and the files' fingerprints, consistent with each other.

    The files are fingerprinted before and after reading, and read again while a writer changes
    them in between (writes are atomic renames, so each read is of whole files).

    Parameters
    ----------
    out_dir : str or Path
        The folder holding the recording's sidecars.
    stem : str
        The sidecars' file stem (:func:`recording_stem`).
    channel_names : list of str, optional
        The recording's channels (a sidecar naming another channel is refused).
    attempts : int
        Reads tried while a writer keeps changing the files.

    Returns
    -------
    annotations : AnnotationSet
    fingerprints : dict
        Path → :class:`~sss_viewer.fileio.Fingerprint` or None (absent), to pass to :func:`sync_annotations`.
    """
    paths = sidecar_paths(out_dir, stem)
    for _ in range(max(1, attempts)):
        before = sidecar_fingerprints(paths)
        annotations = _read_sidecars(out_dir, stem, channel_names)
        after = sidecar_fingerprints(paths)
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
    """The edit log's entries, oldest first (a line cut short by a crash is skipped).

    Parameters
    ----------
    out_dir : str or Path
        The folder holding the recording's sidecars.
    stem : str
        The sidecars' file stem.

    Returns
    -------
    list of dict
        ``time, author, action, before, after`` per entry.
    """
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


def append_log(out_dir: Path, stem: str, entries: list[dict]) -> None:
    """Append ``entries`` (JSON objects) to ``stem``'s edit log in ``out_dir``, one line each."""
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
    with file_lock(sidecar_lock_path(out_dir, stem)):
        sources = [backup_dir(out_dir) / f"{p.name}.{n}" for p in paths]
        if not any(s.is_file() for s in sources):
            raise FileNotFoundError(f"No backup {n} of {stem}'s annotations in {backup_dir(out_dir)}.")
        data = [s.read_bytes() if s.is_file() else None for s in sources]
        for path, content in zip(paths, data):
            if content is not None:
                backup_file(path, backup_dir(out_dir), keep=MAX_BACKUPS)
                atomic_write_bytes(path, content)
        entry = {"time": utc_now(), "author": author, "action": f"restore backup {n}", "before": None, "after": None}
        append_log(out_dir, stem, [entry])
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
        The recording's identity (:func:`~sss_viewer.io.annotation_location.locate_sidecars`), recorded in the
        folder's manifest with the first save (and updated when the source changed).

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
    with file_lock(sidecar_lock_path(out_dir, stem), lock_timeout_s):
        now = sidecar_fingerprints(paths)
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
            now = sidecar_fingerprints(paths)
            if identity is not None and identity.key != "label":
                if manifest_match(read_manifest(out_dir, stem), identity) != "same":
                    write_manifest(out_dir, stem, identity)
        incoming = diff_annotations(local, merged, author=author) if disk is not None else None
        append_log(out_dir, stem, _log_entries(edits, incoming, conflicts, author))
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

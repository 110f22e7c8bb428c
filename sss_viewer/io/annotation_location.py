"""Which folder holds a recording's annotation sidecars, and when old sidecars are adopted (:func:`locate_sidecars`).

Recordings of different patients often share a file name (``EEG.edf``), so the sidecars are keyed
by the recording's identity, not its file name (:mod:`sss_viewer.io._annotation_identity`): a file
inside the data root writes to the folder of the output folder mirroring its own
(``OUT/patA/rec_desc-sssviewer_events.tsv``), any other file (an upload) to
``OUT/<stem>_src-<digest>_desc-…``, a recording held in memory to ``OUT`` itself. Sidecars of the
old naming (``OUT/<stem>_desc-…``) are copied to their recording's folder only when they can be
nobody else's; otherwise they are left untouched and the clinician is told.
"""

from __future__ import annotations

import glob
import json
import logging
import math
from dataclasses import dataclass
from pathlib import Path

from sss_viewer.fileio import atomic_write_bytes, file_lock
from sss_viewer.io._annotation_identity import (
    RecordingIdentity,
    manifest_match,
    read_manifest,
    recording_identity,
    write_manifest,
)
from sss_viewer.io.annotation_model import SEED_AUTHOR, marker_key, seed_from_recording, utc_now
from sss_viewer.io.annotation_store import (
    CHANNEL_COLUMNS,
    AnnotationFileError,
    append_log,
    has_sidecars,
    log_path,
    read_markers,
    read_tsv,
    sidecar_lock_path,
    sidecar_paths,
)
from sss_viewer.io.viewer_labels import STATE_DIR
from sss_viewer.io.viewer_labels import recording_stem as file_stem

logger = logging.getLogger(__name__)

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
        markers = read_markers(events) if events.is_file() else []
        listed = read_tsv(channels, CHANNEL_COLUMNS) if channels.is_file() else None
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
        if path.parent != recording_folder and file_stem(path.name) == stem and path.is_file():
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
    with file_lock(sidecar_lock_path(legacy, stem)), file_lock(sidecar_lock_path(folder, own)):
        if has_sidecars(folder, own):  # another session migrated meanwhile
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
            "time": utc_now(),
            "author": author,
            "before": None,
            "after": None,
            "action": f"migrate: copied {', '.join(copied)} from {legacy} (named by the file name only) for "
            f"{identity.source}; the old files are kept",
        }
        append_log(folder, own, [entry])
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
    (:func:`~sss_viewer.io._annotation_identity.recording_identity`): its path relative to
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
        :func:`~sss_viewer.io.annotation_store.recording_stem`.
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
    if has_sidecars(folder, own):
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
                root,
                stem,
                identity,
                f"⚠ The annotations in {folder} were made on another file at {identity.source} "
                f"({reason}): left untouched.",
            )
        # the old naming, in this very folder (a recording at the top of the data root)
        content = _elsewhere(root, stem, identity, "")
        if has_sidecars(root, content.stem):
            return SidecarLocation(root, content.stem, content.identity)
        reason = _legacy_verdict(folder, own, recording, identity, data_root)
        if reason is None:
            with file_lock(sidecar_lock_path(folder, own)):
                write_manifest(folder, own, identity)
            append_log(
                folder,
                own,
                [
                    {
                        "time": utc_now(),
                        "author": author,
                        "before": None,
                        "after": None,
                        "action": f"migrate: these sidecars (named by the file name only) recorded as {identity.source}'s",
                    }
                ],
            )
            return SidecarLocation(folder, own, identity, "Annotations of the old naming adopted as this recording's.")
        note = f"⚠ The old annotations {own} in {folder} were not used: {reason}. They are kept untouched."
        logger.warning("%s", note)
        return _elsewhere(root, stem, identity, note)
    if identity.key == "path":
        content = _elsewhere(root, stem, identity, "")
        if has_sidecars(root, content.stem):  # kept by content earlier, when the path's were another's
            return SidecarLocation(root, content.stem, content.identity)
    if (folder, own) != (root, stem) and has_sidecars(root, stem) and read_manifest(root, stem) is None:
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

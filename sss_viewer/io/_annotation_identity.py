"""Which recording a set of annotation sidecars belongs to: the recording's identity and the folder it keys.

Sidecars used to be named by the recording's file stem alone, so ``patA/rec.edf`` and
``patB/rec.edf`` shared ``rec_desc-sssviewer_*.tsv`` and one patient's marks were drawn on, and
then overwritten by, the other's. A recording's sidecars are now keyed by its *identity*:

- a file inside the data root: its path relative to the data root. The sidecars go to a folder
  of the output folder that mirrors the recording's folder (``OUT/patA/rec_desc-sssviewer_events.tsv``),
  the layout of a BIDS ``derivatives/`` folder. The path is what a clinician knows the recording
  by and stays the same when the file is copied to a new server with its data root; a content
  digest alone would change with a re-export and read as nothing to a person browsing the folder.
- a file outside the data root (an upload, which has no stable path) or when the data root is
  not known: a digest of its content, in the sidecars' names (``OUT/EEG_src-<digest>_desc-sssviewer_events.tsv``,
  a BIDS-shaped ``src-`` entity). The same upload made again finds its annotations; another file
  named alike does not.
- a recording held in memory (no file): its label, in the output folder itself (as before).

Either way the source's size and digest are recorded in a small manifest next to the sidecars
(``.sssviewer/<stem>.source.json``), so that a different file later found at the same path is
noticed instead of silently inheriting the annotations.

The digest is the SHA-256 of the size and the first MiB of the file and of its companions
(BrainVision ``.eeg``/``.vmrk``, EEGLAB ``.fdt``): the header (patient, start time, channels) and
the first samples tell two exports apart without reading gigabytes.

Where a recording's sidecars are found, and when old ones are adopted: :mod:`sss_viewer.io.annotation_location`.
"""

from __future__ import annotations

import json
import logging
from dataclasses import asdict, dataclass, replace
from pathlib import Path

from sss_viewer.fileio import atomic_write_bytes
from sss_viewer.io.viewer_labels import (  # noqa: F401  (the sidecar format's facts live once, below the viewer)
    COMPANIONS,
    CONTENT_ENTITY,
    DIGEST_BYTES,
    DIGEST_CHARS,
    MANIFEST_SUFFIX,
    STATE_DIR,
    content_suffix,
    read_manifest,
    source_digest,
)

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class RecordingIdentity:
    """What keys a recording's sidecars.

    Attributes
    ----------
    key : str
        ``"path"`` (relative to the data root), ``"content"`` (a digest) or ``"label"`` (in memory).
    source : str or None
        The path relative to the data root (POSIX), or the file's name for a content key.
    size : int or None
        Bytes of the file and its companions.
    digest : str or None
        :func:`source_digest`.
    folder : str
        The sidecars' folder relative to the output folder (POSIX; ``""`` = the output folder).
    stem_suffix : str
        Added to the recording's stem in the sidecars' names (``_src-<digest>`` for a content key).
    """

    key: str
    source: str | None = None
    size: int | None = None
    digest: str | None = None
    folder: str = ""
    stem_suffix: str = ""

    def as_content(self) -> RecordingIdentity:
        """The same recording keyed by its content digest (where a path key cannot be used)."""
        return replace(self, folder="", stem_suffix=content_suffix(self.digest)) if self.digest else self

    def manifest(self) -> dict:
        """What the manifest records."""
        return {k: v for k, v in asdict(self).items() if k not in ("folder", "stem_suffix")}


def recording_identity(recording, data_root: str | Path | None = None) -> RecordingIdentity:
    """The identity keying ``recording``'s sidecars (see the module's docstring).

    Parameters
    ----------
    recording : Recording
        Its ``source`` is the file it was read from (None when held in memory).
    data_root : path, optional
        The folder recordings are browsed in; a file inside it is keyed by its relative path.
    """
    source = getattr(recording, "source", None)
    if source is None:
        return RecordingIdentity("label")
    path = Path(source).expanduser().resolve()
    try:
        size, digest = source_digest(path)
    except OSError as err:
        logger.warning("Cannot read %s to key its annotations (%s); keyed by its name", path, err)
        return RecordingIdentity("label")
    if data_root is not None:
        try:
            rel = path.relative_to(Path(data_root).expanduser().resolve())
        except ValueError:
            rel = None
        if rel is not None:
            parent = rel.parent.as_posix()
            return RecordingIdentity("path", rel.as_posix(), size, digest, "" if parent == "." else parent)
    return RecordingIdentity("content", path.name, size, digest, "", content_suffix(digest))


def manifest_path(folder: str | Path, stem: str) -> Path:
    """The manifest of ``stem``'s sidecars in ``folder``: ``.sssviewer/<stem>.source.json``."""
    return Path(folder) / STATE_DIR / f"{stem}{MANIFEST_SUFFIX}"


def write_manifest(folder: str | Path, stem: str, identity: RecordingIdentity) -> Path:
    """Record ``identity`` as the owner of ``stem``'s sidecars in ``folder`` (atomically)."""
    path = manifest_path(folder, stem)
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_bytes(path, (json.dumps(identity.manifest(), indent=1, sort_keys=True) + "\n").encode())
    return path


def manifest_match(manifest: dict | None, identity: RecordingIdentity) -> str:
    """How a manifest relates to ``identity``.

    Returns
    -------
    str
        ``"none"`` (no manifest), ``"same"`` (this file), ``"changed"`` (the same source path with
        other content: a different file at that path) or ``"other"`` (another recording).
    """
    if manifest is None:
        return "none"
    if identity.key == "content" or manifest.get("key") == "content":
        return "same" if manifest.get("digest") == identity.digest else "other"
    if manifest.get("source") != identity.source:
        return "other"
    same = manifest.get("digest") == identity.digest and manifest.get("size") == identity.size
    return "same" if same else "changed"

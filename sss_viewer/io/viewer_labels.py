"""Training labels from the viewer's annotation sidecars: the clinician's SOZ column and bad marks.

The viewer saves what a clinician marks on a recording as BIDS-style sidecars in its output folder
(:mod:`sss_viewer.io.annotation_store`), keyed by the recording's identity
(:mod:`sss_viewer.io._annotation_identity`):

- a recording inside the data root: ``OUT/<its folder below the root>/<stem>_desc-sssviewer_channels.tsv``,
  with a manifest ``.sssviewer/<stem>.source.json`` beside it naming the recording (path below the
  root, size, content digest);
- a recording whose path-keyed folder holds another recording's sidecars, or any file outside the
  data root: ``OUT/<stem>_src-<digest>_desc-sssviewer_channels.tsv`` (the content digest in the name).

The channels sidecar has the columns ``name, type, status, status_description, soz, type_source``;
``status`` is ``good``/``bad`` and ``soz`` ``1``/``0``/``n/a``. This module holds the format's shared
facts (suffixes, manifest, content digest; the store and the identity import them from here), reads
the channels sidecar strictly, and turns it into training labels (:func:`apply_viewer_labels`):

- a channel marked SOZ (``soz`` 1) is a positive, one marked not SOZ (``soz`` 0) a negative;
- a channel left unlabelled (``n/a``) is unknown: left out of training and evaluation, like a
  subject a labels table does not name (nothing is guessed for it);
- a channel marked bad is left out whatever its label (as are the recording's own bad channels);
- a recording with no channel marked SOZ or not SOZ has no viewer labels: it is left out, or keeps
  the data's own labels with ``fallback`` (the ``--labels``/``--labels-fallback`` rule).

The sidecars are only read; the labels on disk are never changed.
"""

from __future__ import annotations

import hashlib
import json
import logging
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from sss_viewer.io.readers import SUPPORTED_FORMATS
from sss_viewer.io.recording import Recording

logger = logging.getLogger(__name__)

CHANNELS_SUFFIX = "_desc-sssviewer_channels.tsv"
"""The viewer's channels sidecar: ``<stem>_desc-sssviewer_channels.tsv``."""
STATE_DIR = ".sssviewer"
MANIFEST_SUFFIX = ".source.json"
CONTENT_ENTITY = "src"
DIGEST_BYTES = 1 << 20
DIGEST_CHARS = 16
COMPANIONS = {".vhdr": (".eeg", ".vmrk"), ".set": (".fdt",)}
REQUIRED_COLUMNS = ("name", "status")
NA = "n/a"
"""An empty cell of a sidecar."""
SOZ_VALUES = {"1": True, "0": False, NA: None, "": None}
"""The ``soz`` column's values → the label (None = unlabelled)."""
_STATUS_VALUES = ("good", "bad", NA, "")


class ViewerLabelsError(ValueError):
    """A viewer sidecar that cannot be used as labels (the message names the file)."""


@dataclass
class ChannelMarks:
    """What one channels sidecar says.

    Attributes
    ----------
    path : Path
        The sidecar.
    soz : dict of str to bool
        Channels marked SOZ (True) or not SOZ (False); unlabelled channels are absent.
    bad : list of str
        Channels marked bad.
    names : list of str
        Every channel the sidecar lists.
    """

    path: Path
    soz: dict[str, bool] = field(default_factory=dict)
    bad: list[str] = field(default_factory=list)
    names: list[str] = field(default_factory=list)


def read_channel_marks(path: str | Path) -> ChannelMarks:
    """Read a viewer channels sidecar (``<stem>_desc-sssviewer_channels.tsv``).

    Parameters
    ----------
    path : str or Path

    Returns
    -------
    ChannelMarks

    Raises
    ------
    ViewerLabelsError
        When the file is not a channels sidecar: unreadable, missing ``name``/``status``, a
        ``status`` other than good/bad, a ``soz`` other than 1/0/n/a, or a channel listed twice.
    """
    from sss_viewer.io.tables import read_table

    path = Path(path)
    try:
        df = read_table(path, REQUIRED_COLUMNS, what="viewer channels sidecar", na_values=None, error=ViewerLabelsError)
    except OSError as err:
        raise ViewerLabelsError(f"Cannot read the viewer sidecar {path}: {err}") from None
    names = df["name"].str.strip()
    repeated = sorted(set(names[names.duplicated()]))
    if repeated:
        raise ViewerLabelsError(f"Viewer sidecar {path} lists channel(s) {repeated} more than once.")
    status = df["status"].str.strip().str.lower()
    wrong = sorted(set(status) - set(_STATUS_VALUES))
    if wrong:
        raise ViewerLabelsError(f"Viewer sidecar {path}: status must be 'good' or 'bad', found {wrong}.")
    soz: dict[str, bool] = {}
    if "soz" in df.columns:
        values = df["soz"].str.strip().str.lower()
        wrong = sorted(set(values) - set(SOZ_VALUES))
        if wrong:
            raise ViewerLabelsError(f"Viewer sidecar {path}: soz must be 1, 0 or n/a, found {wrong}.")
        soz = {n: SOZ_VALUES[v] for n, v in zip(names, values) if SOZ_VALUES[v] is not None}
    return ChannelMarks(path, soz, names[status == "bad"].tolist(), names.tolist())


def recording_stem(source: str | Path) -> str:
    """The sidecars' stem of a recording file: its name without the format extension (as the viewer names them)."""
    name = Path(source).name
    for ext in sorted(SUPPORTED_FORMATS, key=len, reverse=True):
        if name.lower().endswith(ext):
            return name[: -len(ext)]
    return Path(name).stem


def source_digest(path: str | Path) -> tuple[int, str]:
    """``(size, SHA-256)`` of a recording file and its companions, as the viewer keys its sidecars.

    The digest covers each file's suffix, size and first MiB (BrainVision ``.eeg``/``.vmrk``,
    EEGLAB ``.fdt`` beside the header).
    """
    path = Path(path)
    files = [path, *(path.with_suffix(s) for s in COMPANIONS.get(path.suffix.lower(), ()))]
    h, total = hashlib.sha256(), 0
    for file in (f for i, f in enumerate(files) if i == 0 or f.is_file()):
        size = file.stat().st_size
        total += size
        h.update(f"{file.suffix.lower()}\0{size}\0".encode())
        with open(file, "rb") as fh:
            h.update(fh.read(DIGEST_BYTES))
    return total, h.hexdigest()


def content_suffix(digest: str) -> str:
    """``_src-<first 16 hex characters of digest>``, added by the viewer to the stem of a recording keyed by content."""
    return f"_{CONTENT_ENTITY}-{digest[:DIGEST_CHARS]}"


def read_manifest(folder: str | Path, stem: str) -> dict | None:
    """The viewer's manifest of ``stem``'s sidecars in ``folder`` (``.sssviewer/<stem>.source.json``: ``key, source,
    size, digest``), or None when absent or unreadable (logged)."""
    path = Path(folder) / STATE_DIR / f"{stem}{MANIFEST_SUFFIX}"
    if not path.is_file():
        return None
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as err:
        logger.warning("Ignored the unreadable manifest %s: %s", path, err)
        return None
    return data if isinstance(data, dict) else None


def find_channels_sidecar(source: str | Path, data_root: str | Path, viewer_out: str | Path) -> Path | None:
    """The viewer channels sidecar of the recording file ``source``, or None when it has none.

    Looked up as the viewer keys it: by the path below ``data_root`` or below one of its parent
    folders (the viewer may have browsed a folder above it; used only when the sidecar's manifest
    names this very file: same path, size and digest), then by content digest at the top of
    ``viewer_out``. Sidecars whose manifest names another file, or sidecars of the old naming (no
    manifest), are not used (logged): the viewer adopts old sidecars only after checking them,
    when the recording is opened, and another file's labels are never attached to this one.

    Parameters
    ----------
    source : str or Path
        The recording file.
    data_root : str or Path
        The data root the viewer browsed (the ``train`` DATA folder), or a folder below it.
    viewer_out : str or Path
        The viewer's output folder.
    """
    path = Path(source).expanduser().resolve()
    out = Path(viewer_out).expanduser()
    stem = recording_stem(path)
    size, digest = source_digest(path)
    root = Path(data_root).expanduser().resolve()
    for base in (root, *root.parents):  # the viewer may have browsed a folder above DATA; the manifest decides
        try:
            rel = path.relative_to(base)
        except ValueError:
            continue
        folder = out / rel.parent
        sidecar = folder / f"{stem}{CHANNELS_SUFFIX}"
        if not sidecar.is_file():
            continue
        manifest = read_manifest(folder, stem)
        if manifest is None:
            logger.warning(
                "%s has no manifest naming its recording (the old naming, by file name only): not used as labels of "
                "%s. Open the recording in the viewer once to adopt it.",
                sidecar,
                rel.as_posix(),
            )
        elif manifest.get("source") == rel.as_posix() and manifest.get("key") == "path":
            if manifest.get("digest") == digest and manifest.get("size") == size:
                return sidecar
            logger.warning(
                "%s was made on another file at %s (its size or content changed since): not used as labels; open the "
                "recording in the viewer to check them and save them again.",
                sidecar,
                rel.as_posix(),
            )
    by_content = out / f"{stem}{content_suffix(digest)}{CHANNELS_SUFFIX}"
    return by_content if by_content.is_file() else None


def apply_viewer_labels(
    recordings: list[Recording], data_root: str | Path, viewer_out: str | Path, *, fallback: bool = False
) -> dict:
    """Label ``recordings`` from the viewer's channels sidecars (see the module's docstring for the rules).

    Parameters
    ----------
    recordings : list of Recording
        Read from files below ``data_root``. Modified in place (the files are never written): a
        recording with viewer labels gets ``soz`` (True for SOZ, False otherwise),
        ``info["soz_source"]`` the sidecar, and its bad and unlabelled channels added to ``bads``
        (so training and evaluation leave them out; ``info["viewer_labels"]`` lists them). A
        recording without viewer labels keeps the data's own labels with ``fallback``, otherwise
        ``soz`` None and ``info["labels_excluded"]`` (left out of training and evaluation); its
        viewer bad marks apply either way.
    data_root : str or Path
        The folder the viewer browsed.
    viewer_out : str or Path
        The viewer's output folder.
    fallback : bool
        Recordings without viewer labels keep the data's own labels.

    Returns
    -------
    summary : dict
        ``labelled`` (recording labels), ``unlabelled`` (recording labels without viewer labels),
        ``n_soz``, ``n_not_soz``, ``n_unknown``, ``n_bad`` (channels).

    Raises
    ------
    FileNotFoundError
        ``viewer_out`` is not a folder.
    ViewerLabelsError
        A sidecar found for a recording is malformed (named).
    """
    out = Path(viewer_out)
    if not out.is_dir():
        raise FileNotFoundError(f"Viewer output folder not found: {out} (expected the folder the viewer saved to).")
    summary = {"labelled": [], "unlabelled": [], "n_soz": 0, "n_not_soz": 0, "n_unknown": 0, "n_bad": 0}
    for recording in recordings:
        sidecar = None if recording.source is None else find_channels_sidecar(recording.source, data_root, out)
        marks = read_channel_marks(sidecar) if sidecar is not None else None
        names = list(recording.ch_names)
        if marks is not None:
            unknown = sorted(set(marks.names) - set(names))
            if unknown:
                logger.warning("%s lists channels not in %s, ignored: %s", sidecar, recording.label, ", ".join(unknown))
        bad = [n for n in names if marks is not None and n in set(marks.bad)]
        labels = {n: v for n, v in (marks.soz if marks is not None else {}).items() if n in set(names)}
        if labels:
            soz = np.array([labels.get(n) is True for n in names], dtype=bool)
            unlabelled = [n for n in names if n not in labels and n not in bad and n not in recording.bads]
            recording.soz = soz
            recording.info["soz_source"] = str(sidecar)
            recording.info.pop("labels_excluded", None)
            summary["labelled"].append(recording.label)
            summary["n_soz"] += sum(1 for n, v in labels.items() if v and n not in bad)
            summary["n_not_soz"] += sum(1 for n, v in labels.items() if not v and n not in bad)
            summary["n_unknown"] += len(unlabelled)
        else:
            unlabelled = []
            summary["unlabelled"].append(recording.label)
            if not fallback:
                recording.soz = None
                recording.info["soz_source"] = None
                recording.info["labels_excluded"] = str(out)
        summary["n_bad"] += len([n for n in bad if n not in recording.bads])
        recording.bads = list(dict.fromkeys([*recording.bads, *bad, *unlabelled]))
        recording.info["viewer_labels"] = {
            "sidecar": None if sidecar is None else str(sidecar),
            "bad": bad,
            "unlabelled": unlabelled,
        }
    if summary["unlabelled"]:
        what = "they keep the data's own labels" if fallback else "they are left out of training"
        shown = ", ".join(summary["unlabelled"][:10]) + (" …" if len(summary["unlabelled"]) > 10 else "")
        logger.warning(
            "%d of %d recordings have no channel marked SOZ or not SOZ in the viewer folder %s (%s); %s.",
            len(summary["unlabelled"]),
            len(recordings),
            out,
            shown,
            what,
        )
    logger.info(
        "Viewer labels from %s: %d recording(s), %d SOZ and %d not-SOZ channels; %d unlabelled and %d bad channels "
        "left out.",
        out,
        len(summary["labelled"]),
        summary["n_soz"],
        summary["n_not_soz"],
        summary["n_unknown"],
        summary["n_bad"],
    )
    return summary

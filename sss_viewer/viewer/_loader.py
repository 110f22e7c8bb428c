"""Choosing what to look at: a recording inside a data root, an upload, a BIDS run, a model.

Every path a user can name is resolved against a configurable data root and refused when it
leaves it (``..``, an absolute path, a symlink pointing outside); uploads are written under a
per-session temporary folder with sanitised names. Nothing here reads signals: the chosen file is
emitted as ``RecordingBrowser.selected`` and the app reads it (lazily) with :func:`load_selected`.

Components (``pn.viewable.Viewer`` subclasses, usable in Jupyter and in ``panel serve``):

``RecordingBrowser``
    a folder listing restricted to the data root, a chunked upload drop zone and a BIDS
    subject/run picker; emits ``selected`` (Path) or a readable ``error``.
``ModelPicker``
    a model directory inside a models root (default: the bundled demo model), loaded as
    ``bundle``; :func:`sss_viewer.engine.inference.check_fit` says why a model cannot score a recording.
"""

from __future__ import annotations

import logging
import os
import re
import shutil
import tempfile
import time
import unicodedata
from collections.abc import Mapping
from pathlib import Path

import panel as pn
import param

from sss_viewer.engine.bundle import CONFIG_FILE, WEIGHTS_FILE, ModelBundle
from sss_viewer.io.cohort import load_recording
from sss_viewer.io.readers import SUPPORTED_FORMATS, brainvision_header_fields
from sss_viewer.io.recording import Recording
from sss_viewer.viewer.demo_files import DEMO_MODEL_DIR

logger = logging.getLogger(__name__)

DATA_ROOT_ENV = "SSS_VIEWER_DATA_ROOT"
"""Environment variable giving the default data root (else the current working directory)."""
MODELS_ROOT_ENV = "SSS_VIEWER_MODELS_ROOT"
"""Environment variable giving the default models root (else the folder of the bundled demo model)."""
MODEL_ENV = "SSS_VIEWER_MODEL"
"""Environment variable naming one model directory: its parent becomes the models root, it the choice."""
"""A ``subject, channel, soz`` table at a BIDS root; overrides the dataset's clinical spreadsheet."""

COMPANION_EXTENSIONS = {".vmrk": ".vhdr", ".eeg": ".vhdr", ".fdt": ".set"}
"""Files uploaded alongside a recording: BrainVision marker/data files, EEGLAB data files."""
MB = 1_000_000
"""Bytes per MB, as the upload widget (FilePond) counts them."""
_UNSAFE_CHARS = re.compile(r"[^\w .()+-]")
_MAX_NAME = 200


class UploadError(ValueError):
    """An upload was refused; the message says why and what to do."""


# --------------------------------------------------------------------------------------------
# Paths
# --------------------------------------------------------------------------------------------


def recording_extension(name: str) -> str | None:
    """The supported recording extension ``name`` ends with (``.fif.gz`` before ``.gz``), or None."""
    lower = name.lower()
    for ext in sorted(SUPPORTED_FORMATS, key=len, reverse=True):
        if lower.endswith(ext):
            return ext
    return None


def _resolve(root: str | Path, relative: str | Path) -> tuple[Path, Path]:
    """``(root / relative, its resolution)`` after refusing absolute paths, ``..`` and escapes.

    Raises
    ------
    ValueError
        ``relative`` is absolute, contains ``..`` or a NUL byte, or resolves (through symlinks)
        outside ``root``.
    """
    root = Path(root)
    text = str(relative)
    if "\x00" in text:
        raise ValueError(f"Refused path {text!r}: it contains a NUL byte.")
    rel = Path(text)
    if rel.is_absolute() or rel.drive or text.startswith(("/", "\\")):
        raise ValueError(
            f"Refused path {text!r}: absolute paths are not accepted; give a path relative to the data root {root}."
        )
    if ".." in re.split(r"[\\/]", text):
        raise ValueError(f"Refused path {text!r}: '..' is not allowed; choose a path inside the data root {root}.")
    try:
        real_root = root.resolve(strict=True)
    except OSError as exc:
        raise ValueError(f"The data root {root} does not exist or cannot be read ({exc.strerror}).") from None
    candidate = root / rel
    try:
        real = candidate.resolve()
    except (OSError, RuntimeError) as exc:  # a symlink loop
        raise ValueError(f"Refused path {text!r}: it cannot be resolved inside the data root {root} ({exc}).") from None
    if not real.is_relative_to(real_root):
        raise ValueError(
            f"Refused path {text!r}: it leads to {real}, outside the data root {real_root} (through a symlink)."
        )
    return candidate, real


def resolve_inside(root: str | Path, relative: str | Path) -> Path:
    """The recording file ``relative`` inside ``root``, or a ValueError saying why it is refused.

    Parameters
    ----------
    root : str or Path
        The data root; every accepted path resolves (symlinks followed) inside it.
    relative : str or Path
        A path relative to ``root``.

    Returns
    -------
    path : Path
        ``root / relative`` (symlinks inside the root are kept as named, so a BIDS file name and
        its sidecars stay together even when the data are git-annex links).

    Raises
    ------
    ValueError
        ``relative`` is absolute, contains ``..``, leaves the root through a symlink, is not an
        existing regular file, or has an extension no reader supports; the message names the path
        and the root.
    """
    candidate, real = _resolve(root, relative)
    if not real.is_file():
        what = "a folder" if real.is_dir() else "not an existing file"
        raise ValueError(
            f"Refused path {str(relative)!r}: it is {what} in the data root {root}; choose a recording file."
        )
    if recording_extension(candidate.name) is None:
        raise ValueError(
            f"Refused path {str(relative)!r} in the data root {root}: unsupported file type; "
            f"supported: {', '.join(SUPPORTED_FORMATS)}."
        )
    return candidate


def resolve_folder_inside(root: str | Path, relative: str | Path) -> Path:
    """The folder ``relative`` inside ``root`` (``""`` is the root itself); ValueError as in :func:`resolve_inside`."""
    if str(relative) in ("", "."):
        relative = "."
    candidate, real = _resolve(root, relative)
    if not real.is_dir():
        raise ValueError(f"Refused folder {str(relative)!r}: it is not a folder in the data root {root}.")
    return candidate


def list_folder(root: str | Path, folder: str = "") -> tuple[list[str], list[str]]:
    """Sub-folders and supported recording files of ``root/folder`` that stay inside ``root``.

    Hidden entries (``.name``) and symlinks that lead outside the root are left out.

    Returns
    -------
    folders, files : list of str
        Paths relative to ``root`` (POSIX separators), each sorted case-insensitively.
    """
    base = resolve_folder_inside(root, folder)
    prefix = "" if str(folder) in ("", ".") else str(folder).strip("/") + "/"
    folders, files = [], []
    try:
        entries = sorted(os.scandir(base), key=lambda e: e.name.lower())
    except OSError as exc:
        raise ValueError(f"Cannot list the folder {folder or '.'!r} of the data root {root}: {exc.strerror}.") from None
    for entry in entries:
        if entry.name.startswith("."):
            continue
        rel = prefix + entry.name
        try:
            _, real = _resolve(root, rel)
        except ValueError:
            continue
        if real.is_dir():
            folders.append(rel)
        elif real.is_file() and recording_extension(entry.name) is not None:
            files.append(rel)
    return folders, files


# --------------------------------------------------------------------------------------------
# Uploads
# --------------------------------------------------------------------------------------------


def sanitise_filename(name: str) -> str:
    """A safe file name from a client-supplied one: no folders, no hidden or control characters.

    Keeps the last path component (``/`` or ``\\``), letters, digits, spaces and ``._-+()``;
    anything else becomes ``_``; leading dots and spaces are dropped; at most 200 characters.

    Raises
    ------
    UploadError
        Nothing usable is left (``..``, ``""``, ``"///"``).
    """
    base = re.split(r"[\\/]", unicodedata.normalize("NFC", str(name)))[-1]
    base = _UNSAFE_CHARS.sub("_", base).strip(" ").lstrip(".").strip(" ")
    if len(base) > _MAX_NAME:
        ext = recording_extension(base) or Path(base).suffix
        base = base[: _MAX_NAME - len(ext)] + ext
    if not base or not re.search(r"\w", base):
        raise UploadError(f"Refused upload {name!r}: the file name has no usable characters.")
    return base


def _upload_kind(name: str) -> tuple[str, str]:
    """``("recording", ext)`` or ``("companion", ext)`` of a sanitised name, else UploadError."""
    ext = recording_extension(name)
    if ext is not None:
        return "recording", ext
    suffix = Path(name).suffix.lower()
    if suffix in COMPANION_EXTENSIONS:
        return "companion", suffix
    allowed = ", ".join([*SUPPORTED_FORMATS, *COMPANION_EXTENSIONS])
    raise UploadError(f"Refused upload {name!r}: unsupported file type; accepted: {allowed}.")


def _check_brainvision(vhdr: str, files: Mapping[str, bytes]) -> None:
    """Require the ``.vhdr``'s DataFile and MarkerFile among the uploaded names (plain names only).

    The header is read as the reader (and MNE) read it (:func:`~sss_viewer.io.readers.brainvision_header_fields`),
    so an upload is refused exactly when the file could not be opened.
    """
    fields = brainvision_header_fields(files[vhdr])
    if "datafile" not in fields:
        raise UploadError(f"{vhdr} is not a BrainVision header: it has no DataFile= line in [Common Infos].")
    if "markerfile" not in fields:
        raise UploadError(f"{vhdr} is not a complete BrainVision header: it has no MarkerFile= line in [Common Infos].")
    for key, ext in (("DataFile", ".eeg"), ("MarkerFile", ".vmrk")):
        named = fields[key.lower()]
        if re.search(r"[\\/]", named) or named in ("", ".", ".."):
            raise UploadError(
                f"{vhdr} names its {key} as {named!r}, which is not a plain file name; only files uploaded "
                "together can be read."
            )
        if named not in files:
            got = ", ".join(sorted(files))
            raise UploadError(
                f"BrainVision upload incomplete: {vhdr} needs its {key} {named!r} (the {ext} file), which was not "
                f"uploaded (got {got}). Drop the .vhdr, .vmrk and .eeg files together."
            )


def save_upload(files: Mapping[str, bytes | str], upload_dir: str | Path, max_mb: float = 512) -> Path:
    """Check uploaded files and write them into a new sub-folder of ``upload_dir``.

    Parameters
    ----------
    files : mapping
        ``{client file name: content}`` as ``pn.widgets.FileDropper.value`` holds it (bytes, or
        str for files the browser called text, which are written back as UTF-8).
    upload_dir : str or Path
        Created if missing; each call writes into its own ``upload-XXXX`` sub-folder.
    max_mb : float
        Largest accepted size of one file, in MB (10^6 bytes).

    Returns
    -------
    path : Path
        The written recording file (for BrainVision the ``.vhdr``).

    Raises
    ------
    UploadError
        A file is too large or of an unsupported type, names collide after sanitising, there is
        not exactly one recording, or a BrainVision header's DataFile/MarkerFile was not uploaded.
    """
    if not files:
        raise UploadError("No file was uploaded.")
    clean: dict[str, bytes] = {}
    for name, content in files.items():
        data = content.encode("utf-8") if isinstance(content, str) else bytes(content)
        safe = sanitise_filename(name)
        if len(data) > max_mb * MB:
            raise UploadError(
                f"Refused upload {safe!r}: it is {len(data) / MB:.1f} MB, above the {max_mb:g} MB upload limit. "
                "Copy large recordings into the data folder and open them from the file browser."
            )
        if safe in clean:
            raise UploadError(f"Two uploaded files have the same name {safe!r} once made safe; rename one.")
        clean[safe] = data
    kinds = {name: _upload_kind(name) for name in clean}
    recordings = [n for n, (kind, _) in kinds.items() if kind == "recording"]
    if not recordings:
        needs = sorted({COMPANION_EXTENSIONS[ext] for _, ext in kinds.values()})
        raise UploadError(
            f"Upload incomplete: {', '.join(sorted(clean))} need their {' / '.join(needs)} file; "
            "drop all files of the recording together (BrainVision: .vhdr, .vmrk and .eeg)."
        )
    if len(recordings) > 1:
        raise UploadError(f"Upload one recording at a time; got {len(recordings)}: {', '.join(sorted(recordings))}.")
    primary = recordings[0]
    if kinds[primary][1] == ".vhdr":
        _check_brainvision(primary, clean)
    folder = Path(upload_dir)
    folder.mkdir(parents=True, exist_ok=True)
    target = Path(tempfile.mkdtemp(dir=folder, prefix="upload-"))
    for name, data in clean.items():
        with open(target / name, "xb") as f:
            f.write(data)
    logger.info("saved upload %s (%d files, %.1f MB)", target / primary, len(clean), sum(map(len, clean.values())) / MB)
    return target / primary


# --------------------------------------------------------------------------------------------
# Reading the chosen file
# --------------------------------------------------------------------------------------------


def load_selected(path: str | Path, *, preload: bool = False) -> Recording:
    """Read a chosen recording for viewing: :func:`sss_viewer.io.cohort.load_recording` with a file
    that has no iEEG channel opened too (the viewer then says why it is not scored)."""
    return load_recording(path, preload=preload, require_ieeg=False)


# --------------------------------------------------------------------------------------------
# Recording browser
# --------------------------------------------------------------------------------------------


CHOOSE_PROMPT = "— choose a recording —"
"""First entry of the file list: choosing it does nothing."""


def _default_data_root() -> str:
    return os.environ.get(DATA_ROOT_ENV) or os.getcwd()


def _in_server_session() -> bool:
    doc = pn.state.curdoc
    return doc is not None and doc.session_context is not None


UPLOAD_IDLE_ENV = "SSS_VIEWER_UPLOAD_IDLE_S"
"""Environment variable: seconds without a chunk after which an unfinished upload is discarded (default 120)."""
FILES_HELD = 3
"""Files a session may hold at once (a BrainVision ``.vhdr`` + ``.vmrk`` + ``.eeg``): the server keeps at
most this many times the per-file limit for one session, finished and unfinished uploads together."""


def _default_idle_s() -> float:
    try:
        return max(1.0, float(os.environ.get(UPLOAD_IDLE_ENV) or 120))
    except ValueError:
        logger.error("%s=%r is not a number of seconds; using 120", UPLOAD_IDLE_ENV, os.environ.get(UPLOAD_IDLE_ENV))
        return 120.0


class LimitedFileDropper(pn.widgets.FileDropper):
    """A ``FileDropper`` whose server side enforces the upload limit, chunk by chunk.

    Panel's ``FileDropper`` checks ``max_file_size`` only in the browser; the server appends every
    ``upload_event`` chunk it receives to a per-file buffer, and keeps the buffer of an upload that
    never finishes. Whoever sends the chunks themselves can therefore grow the server without
    bound. The rule here: the bytes one session holds for uploads are bounded and always freed —

    - an upload is refused and its buffer discarded as soon as its received bytes exceed
      ``max_bytes`` (later chunks of it are dropped unread), or the bytes held for all uploads of
      the session (unfinished buffers and finished files not yet taken) would exceed
      ``max_held_bytes``;
    - an unfinished upload without a chunk for ``idle_s`` seconds is discarded (checked on every
      chunk, and every ``idle_s / 2`` seconds in a served session while one is pending);
    - :meth:`discard_all` drops everything; in a served session it runs when the session is destroyed.

    ``refused`` says why the last upload was discarded.
    """

    max_bytes = param.Integer(default=512 * MB, bounds=(0, None), doc="Largest accepted file, bytes.")
    max_held_bytes = param.Integer(
        default=FILES_HELD * 512 * MB, bounds=(0, None), doc="Most bytes held for this session's uploads at once."
    )
    idle_s = param.Number(
        default=120.0, bounds=(0, None), doc="Seconds without a chunk before an unfinished upload is discarded."
    )
    refused = param.String(default="", doc="Why the last upload was discarded on the server (empty if none was).")

    _rename = {  # server-side only: not synced to the browser
        **pn.widgets.FileDropper._rename,
        "max_bytes": None,
        "max_held_bytes": None,
        "idle_s": None,
        "refused": None,
    }

    def __init__(self, **params):
        params.setdefault("idle_s", _default_idle_s())
        super().__init__(**params)
        self._received: dict[str, int] = {}
        self._last_chunk: dict[str, float] = {}
        self._sweeper = None
        self._doc = pn.state.curdoc if _in_server_session() else None  # events arrive without a curdoc set
        if self._doc is not None:
            pn.state.on_session_destroyed(self._on_session_destroyed)

    # -- what the session holds ---------------------------------------------------------------

    def held_bytes(self) -> int:
        """Bytes held for this session's uploads: unfinished chunks plus finished files not yet taken."""
        pending = sum(self._received.values())
        done = sum(len(v.encode("utf-8")) if isinstance(v, str) else len(v) for v in self.value.values())
        return pending + done

    def pending(self) -> dict[str, int]:
        """``{name: bytes received}`` of the unfinished uploads."""
        return dict(self._received)

    def _drop(self, name: str) -> int:
        self._file_buffer.pop(name, None)
        self._last_chunk.pop(name, None)
        return self._received.pop(name, 0)

    def discard_all(self) -> None:
        """Drop every unfinished upload and every finished file this widget holds."""
        freed = self.held_bytes()
        for name in list(self._file_buffer) + list(self._received):
            self._drop(name)
        self._file_buffer.clear()
        self.value.clear()
        self.mime_type.clear()
        self._stop_sweeper()
        if freed:
            logger.info("freed %.1f MB of uploads", freed / MB)

    def _on_session_destroyed(self, session_context) -> None:
        self.discard_all()

    def expire_idle(self, now: float | None = None) -> list[str]:
        """Discard unfinished uploads without a chunk for ``idle_s`` seconds.

        Parameters
        ----------
        now : float, optional
            The ``time.monotonic()`` to compare the last chunks with (default: now).

        Returns
        -------
        list of str
            The names of the uploads discarded.
        """
        now = time.monotonic() if now is None else now
        stale = [name for name, last in self._last_chunk.items() if now - last > self.idle_s]
        for name in stale:
            received = self._drop(name)
            logger.warning(
                "discarded the unfinished upload %r (%.1f MB): no chunk for %g s", name, received / MB, self.idle_s
            )
        if not self._received:
            self._stop_sweeper()
        return stale

    def _stop_sweeper(self) -> None:
        sweeper, self._sweeper = self._sweeper, None
        if sweeper is not None and self._doc is not None:
            try:
                self._doc.remove_periodic_callback(sweeper)
            except (ValueError, KeyError, AttributeError):  # already gone with its session
                pass

    def _start_sweeper(self) -> None:
        if self._sweeper is None and self._doc is not None and self._doc.session_context is not None:
            self._sweeper = self._doc.add_periodic_callback(self.expire_idle, max(500, int(self.idle_s * 500)))

    def _refuse(self, name: str, reason: str) -> None:
        received = self._drop(name)
        logger.warning("discarded the upload %r after %.1f MB: %s", name, received / MB, reason)
        self.refused = f"Refused upload {name!r}: {reason}"

    # -- the server side of the chunked upload ------------------------------------------------

    def _process_event(self, event) -> None:
        data = event.data if isinstance(event.data, dict) else {}
        if event.event_name != "upload_event":
            self._drop(str(data.get("name")))
            super()._process_event(event)
            return
        self.expire_idle()
        name, chunk, payload = data.get("name"), data.get("chunk"), data.get("data")
        well_formed = (
            isinstance(name, str)
            and isinstance(chunk, int)
            and isinstance(data.get("type"), str)
            and isinstance(payload, (bytes, bytearray, memoryview))
        )
        if not well_formed:
            logger.warning("dropped a malformed upload chunk (name %r, chunk %r)", name, chunk)
            return
        if chunk == 1:
            self._drop(name)  # a new upload under this name replaces an unfinished one
        elif name not in self._received:
            return  # a chunk of an upload already discarded (or never started): dropped unread
        received = self._received.get(name, 0) + len(payload)
        if received > self.max_bytes:
            limit = self.max_bytes / MB
            self._refuse(name, f"it is over the {limit:g} MB upload limit ({received / MB:.1f} MB received).")
            return
        if self.held_bytes() + len(payload) > self.max_held_bytes:
            self._refuse(
                name,
                f"this session already holds {self.held_bytes() / MB:.1f} MB of uploads, and at most "
                f"{self.max_held_bytes / MB:g} MB are kept; upload one recording at a time.",
            )
            return
        self._received[name] = received
        self._last_chunk[name] = time.monotonic()
        self._start_sweeper()
        super()._process_event(event)
        if name not in self._file_buffer:  # finished: the bytes now live in ``value``
            self._received.pop(name, None)
            self._last_chunk.pop(name, None)
            if not self._received:
                self._stop_sweeper()


class RecordingBrowser(pn.viewable.Viewer):
    """Choose a recording: browse the data root, upload files, or pick a BIDS subject and run.

    The chosen file is emitted as ``selected``; a refused choice sets ``error`` and leaves
    ``selected`` as it was.
    """

    data_root = param.Foldername(default=None, doc="Folder every browsed path must stay inside.")
    folder = param.String(default="", doc="Current folder of the browser, relative to data_root.")
    path = param.String(default=None, allow_None=True, doc="The chosen file, relative to data_root.")
    max_upload_mb = param.Number(default=512, bounds=(0, None), doc="Largest accepted upload per file, MB.")
    upload_dir = param.ClassSelector(
        class_=Path,
        default=None,
        allow_None=True,
        doc="Where uploads are written; by default a per-session temporary folder deleted when the session ends.",
    )
    selected = param.ClassSelector(class_=Path, default=None, allow_None=True, doc="The chosen recording file.")
    error = param.String(default="", doc="Why the last choice or upload was refused (empty when it was not).")
    message = param.String(default="", doc="What happened last (for the status line).")
    is_bids = param.Boolean(default=False, doc="The current folder is a BIDS dataset root.")
    bids_subject = param.String(default="", doc="The subject chosen in the BIDS picker (empty outside a BIDS root).")

    def __init__(self, **params):
        params["data_root"] = os.path.abspath(params.get("data_root") or _default_data_root())
        super().__init__(**params)
        self._tmp: tempfile.TemporaryDirectory | None = None
        self._runs: dict[str, list[str]] = {}
        self._listing = pn.widgets.Select(
            label="Recordings in the data folder", options={}, size=12, sizing_mode="stretch_width"
        )
        self._up = pn.widgets.Button(label="⬆ Up", width=80)
        self._dropper = LimitedFileDropper(
            multiple=True, max_file_size=f"{self.max_upload_mb:g}MB", sizing_mode="stretch_width", **self._limits()
        )
        self._subject = pn.widgets.Select(label="Subject", options=[], visible=False)
        self._run = pn.widgets.Select(label="Run", options={}, visible=False)
        self._listing.param.watch(self._on_listing, "value")
        self._up.on_click(self._go_up)
        self._dropper.param.watch(self._on_upload, "value")
        self._dropper.param.watch(self._on_refused, "refused")
        self._subject.param.watch(self._on_subject, "value")
        self._run.param.watch(self._on_run, "value")
        self._refresh()
        if self.path:
            self._choose(self.path)

    # -- choosing -----------------------------------------------------------------------------

    def select(self, relative: str) -> Path | None:
        """Choose ``relative`` (inside the data root); returns the selection, None when refused."""
        if relative == self.path:
            return self._choose(relative)
        self.path = relative
        return self.selected if not self.error else None

    @param.depends("path", watch=True)
    def _on_path(self) -> None:
        if self.path is not None:
            self._choose(self.path)

    def _choose(self, relative: str) -> Path | None:
        try:
            chosen = resolve_inside(self.data_root, relative)
        except ValueError as exc:
            self.error = str(exc)
            return None
        except OSError as exc:  # e.g. "File name too long"
            self.error = f"Cannot open {str(relative)!r} in the data root {self.data_root}: {exc.strerror or exc}."
            return None
        self.param.update(selected=chosen, error="", message=f"Chose {relative}")
        return chosen

    @param.depends("folder", "data_root", watch=True)
    def _refresh(self) -> None:
        """List the current folder; set up the BIDS picker when it is a BIDS root."""
        try:
            folders, files = list_folder(self.data_root, self.folder)
        except (ValueError, OSError) as exc:
            if isinstance(exc, OSError):
                exc = (
                    f"Cannot list the folder {self.folder!r} of the data root {self.data_root}: {exc.strerror or exc}."
                )
            self.error = str(exc)
            if self.folder:
                self.folder = ""
            return
        # The first entry is a harmless placeholder: a browser's list box (and Bokeh's Select) reports
        # its first option as chosen when nothing is, and that must never open a patient's recording.
        options = {CHOOSE_PROMPT: ""}
        options.update({"📁 " + f.rsplit("/", 1)[-1] + "/": f + "/" for f in folders})
        options.update({f.rsplit("/", 1)[-1]: f for f in files})
        self._listing.param.update(options=options, value="")
        self._up.disabled = self.folder in ("", ".")
        self._update_bids()

    def _update_bids(self) -> None:
        from sss_viewer.io.bids import is_bids_root

        base = resolve_folder_inside(self.data_root, self.folder)
        self.is_bids = is_bids_root(base)
        self._runs = {}
        if self.is_bids:
            try:
                self._runs = self._bids_runs(base)
            except Exception as exc:  # mne-bids raises several types on malformed trees
                logger.warning("Could not list the BIDS runs of %s: %s", base, exc)
                self.error = f"Could not list the BIDS runs of {base}: {exc}"
        subjects = sorted(self._runs)
        self._subject.param.update(options=subjects, value=subjects[0] if subjects else None, visible=bool(subjects))
        self._run.visible = bool(subjects)
        self._on_subject()

    def _bids_runs(self, base: Path) -> dict[str, list[str]]:
        """``{subject: [run paths relative to the data root]}`` of the BIDS dataset at ``base``."""
        from sss_viewer.io.bids import find_runs
        from sss_viewer.io.readers import bids_entities

        runs: dict[str, list[str]] = {}
        root = Path(self.data_root)
        for path in find_runs(base):
            try:
                rel = Path(path).relative_to(root).as_posix()
                resolve_inside(root, rel)
            except (ValueError, OSError):
                continue
            runs.setdefault(bids_entities(Path(path)).get("subject", "?"), []).append(rel)
        return runs

    def bids_subjects(self) -> list[str]:
        """Subjects of the BIDS dataset in the current folder (empty when it is not one)."""
        return list(self._subject.options)

    def bids_runs(self, subject: str | None = None) -> dict[str, str]:
        """``{run file name: path relative to the data root}`` of ``subject`` (default: the chosen one)."""
        subject = subject or self._subject.value
        return {p.rsplit("/", 1)[-1]: p for p in self._runs.get(subject, [])}

    def bids_run_files(self, subject: str | None = None) -> dict[str, Path]:
        """``{run file name: absolute path}`` of ``subject`` (default: the chosen one), checked inside the data root."""
        return {name: resolve_inside(self.data_root, rel) for name, rel in self.bids_runs(subject).items()}

    def _on_subject(self, *_) -> None:
        self._run.param.update(options=self.bids_runs(), value=None)
        self.bids_subject = (self._subject.value or "") if self.is_bids else ""

    def _on_run(self, event) -> None:
        if event.new:
            self.select(event.new)

    def _on_listing(self, event) -> None:
        value = event.new
        if not value:
            return
        if value.endswith("/"):
            self.folder = value.rstrip("/")
        else:
            self.select(value)

    def _go_up(self, *_) -> None:
        if self.folder not in ("", "."):
            self.folder = self.folder.rstrip("/").rpartition("/")[0]

    # -- uploads ------------------------------------------------------------------------------

    @param.depends("max_upload_mb", watch=True)
    def _on_limit(self) -> None:
        self._dropper.param.update(max_file_size=f"{self.max_upload_mb:g}MB", **self._limits())

    def _limits(self) -> dict[str, int]:
        """The server-side limits of the drop zone (:class:`LimitedFileDropper`) for ``max_upload_mb``."""
        per_file = int(self.max_upload_mb * MB)
        return {"max_bytes": per_file, "max_held_bytes": FILES_HELD * per_file}

    def _on_refused(self, event) -> None:
        if event.new:
            self.error = event.new
            self._dropper.refused = ""  # the next refusal of the same upload is reported again

    def _upload_root(self) -> Path:
        """``upload_dir``, creating a per-session temporary folder on first use."""
        if self.upload_dir is None:
            self._tmp = tempfile.TemporaryDirectory(prefix="sss-viewer-upload-")
            self.upload_dir = Path(self._tmp.name)
            if _in_server_session():
                pn.state.on_session_destroyed(self._on_session_destroyed)
        return Path(self.upload_dir)

    def _on_session_destroyed(self, session_context) -> None:
        self.cleanup()

    def cleanup(self) -> None:
        """Delete the temporary upload folder this browser created (a given ``upload_dir`` is kept)."""
        if self._tmp is not None:
            self._tmp.cleanup()
            self._tmp = None
            logger.info("deleted the session's uploads in %s", self.upload_dir)
            self.upload_dir = None  # a later upload makes a new temporary folder

    def handle_upload(self, files: Mapping[str, bytes | str]) -> Path | None:
        """Save uploaded files (see :func:`save_upload`), check the recording opens, select it.

        Returns the saved recording, or None when refused (``error`` says why).
        """
        from sss_viewer.io.readers import read_recording

        try:
            path = save_upload(files, self._upload_root(), self.max_upload_mb)
        except UploadError as exc:
            self.error = str(exc)
            return None
        try:
            read_recording(path)  # lazy: reads the header only
        except (OSError, ValueError) as exc:
            shutil.rmtree(path.parent, ignore_errors=True)
            self.error = f"The uploaded {path.name} could not be read: {exc}"
            return None
        self.param.update(selected=path, error="", message=f"Uploaded {path.name}")
        return path

    def _on_upload(self, event) -> None:
        if event.new and self.handle_upload(event.new) is not None:
            self._dropper.value = {}  # the bytes are on disk now; free them

    # -- view ---------------------------------------------------------------------------------

    def __panel__(self):
        error = pn.pane.Alert(
            pn.bind(lambda e: e or "", self.param.error),
            alert_type="danger",
            visible=pn.bind(bool, self.param.error),
            sizing_mode="stretch_width",
        )
        where = pn.pane.Markdown(
            pn.bind(lambda f: f"**Data folder:** `{self.data_root}` / `{f or '.'}`", self.param.folder),
            sizing_mode="stretch_width",
        )
        bids = pn.Column(pn.pane.Markdown("**BIDS dataset**", visible=self.param.is_bids), self._subject, self._run)
        max_mb = pn.bind(
            lambda mb: f"Drop a recording (BrainVision: .vhdr + .vmrk + .eeg together; ≤ {mb:g} MB per file)",
            self.param.max_upload_mb,
        )
        return pn.Column(
            where,
            pn.Row(self._up),
            self._listing,
            bids,
            pn.pane.Markdown(max_mb),
            self._dropper,
            pn.pane.Markdown(pn.bind(lambda m: f"_{m}_" if m else "", self.param.message)),
            error,
            sizing_mode="stretch_width",
        )


# --------------------------------------------------------------------------------------------
# Models
# --------------------------------------------------------------------------------------------


def is_model_dir(path: Path) -> bool:
    """True when ``path`` holds ``model.safetensors`` and ``config.json``."""
    return (path / WEIGHTS_FILE).is_file() and (path / CONFIG_FILE).is_file()


def _default_model() -> tuple[str, str | None]:
    """``(models root, model name)`` from ``SSS_VIEWER_MODEL`` / ``SSS_VIEWER_MODELS_ROOT``, else the demo model."""
    if os.environ.get(MODEL_ENV):
        model = Path(os.environ[MODEL_ENV]).absolute()
        return str(model.parent), model.name
    return os.environ.get(MODELS_ROOT_ENV) or str(DEMO_MODEL_DIR.parent), None


class ModelPicker(pn.viewable.Viewer):
    """Choose a model directory inside ``models_root`` and load it as ``bundle``."""

    models_root = param.Foldername(
        default=None, doc="Folder holding model directories (default: the bundled demo model's)."
    )
    model = param.Selector(default=None, objects=[], allow_None=True, doc="Model directory, relative to models_root.")
    bundle = param.ClassSelector(class_=ModelBundle, default=None, allow_None=True, doc="The loaded model.")
    model_dir = param.ClassSelector(class_=Path, default=None, allow_None=True, doc="Directory of the loaded model.")
    error = param.String(default="", doc="Why the chosen model could not be loaded.")

    def __init__(self, **params):
        chosen = params.pop("model", None)
        if "models_root" not in params:
            params["models_root"], env_model = _default_model()
            chosen = chosen or env_model
        params["models_root"] = os.path.abspath(params["models_root"])
        self._names: list[str] = []
        super().__init__(**params)
        self._scan()
        if chosen is not None:
            self.model = chosen

    def _preferred(self) -> str:
        """The bundled demo model when it is listed, else the first model."""
        root = Path(self.models_root)
        for name in self._names:
            if (root / name).resolve() == DEMO_MODEL_DIR.resolve():
                return name
        return self._names[0]

    @param.depends("models_root", watch=True)
    def _scan(self) -> None:
        """List the model directories directly in ``models_root`` (and the root itself if it is one)."""
        root = Path(self.models_root)
        names = ["."] if is_model_dir(root) else []
        try:
            folders, _ = list_folder(root, "")
        except ValueError as exc:
            self.error = str(exc)
            folders = []
        names += [f for f in folders if is_model_dir(root / f)]
        self._names = names
        self.param.model.objects = list(names)
        if self.model not in names:
            self.model = self._preferred() if names else None
        if not names:
            self.error = f"No model directory (holding {WEIGHTS_FILE} and {CONFIG_FILE}) in {root}."

    @param.depends("model", watch=True)
    def _load(self) -> None:
        if self.model is None:
            return
        try:
            directory = resolve_folder_inside(self.models_root, self.model)
            bundle = ModelBundle.load(directory, device="cpu")
        except (OSError, ValueError) as exc:
            self.error = f"Could not load the model {self.model!r}: {exc}"
            return
        self.param.update(bundle=bundle, model_dir=directory, error="")

    def description(self) -> str:
        """One line about the loaded model (its ``info["description"]`` and validation AUC)."""
        if self.bundle is None:
            return "No model loaded."
        info = self.bundle.info
        text = info.get("description") or f"Model in {self.model_dir}"
        auc = info.get("val_metrics", {}).get("auc")
        return text + (f" (validation channel AUC {auc:.2f})" if isinstance(auc, float) else "")

    def __panel__(self):
        select = pn.widgets.Select.from_param(self.param.model, label="Model")
        about = pn.pane.Markdown(pn.bind(lambda b: self.description(), self.param.bundle), sizing_mode="stretch_width")
        error = pn.pane.Alert(
            self.param.error, alert_type="danger", visible=pn.bind(bool, self.param.error), sizing_mode="stretch_width"
        )
        return pn.Column(select, about, error, sizing_mode="stretch_width")

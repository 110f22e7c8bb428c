"""Read one recording file (EDF/BDF, BrainVision, FIF, EEGLAB) into a ``Recording`` through MNE.

Files are opened read-only with ``mne.io.read_raw(..., preload=False)`` where the format allows it
and converted to float32 µV in time blocks, so no float64 copy of the whole recording is made.
A BIDS ``_channels.tsv`` beside the file (``…_ieeg.vhdr`` → ``…_channels.tsv``) supplies channel
types and ``status``; a BIDS ``_ieeg.json`` supplies the mains frequency when the file lacks it.
Types the file does not state are inferred from the names, and ``$`` duplicates are dropped, by
:mod:`sss_viewer.io._channel_conventions` (the same rules for every format).

Bad input is refused here, the one place every caller (CLI, API, viewer) reads through:

* companion files: a BrainVision header's ``DataFile=``/``MarkerFile=`` and an EEGLAB ``.set``'s
  ``.fdt`` (any file MNE opens for a recording), and every BIDS sidecar read beside it
  (``_channels.tsv``, ``_events.tsv``, ``_ieeg.json``…), must lie in the recording's own folder after
  symlinks are followed (git-annex links into the same dataset's ``.git/annex/objects`` excepted);
  dataset-level tables (``participants.tsv``, ``labels.tsv``) inside the dataset's folder
  (:func:`check_inside`);
* lengths: the samples found must agree with every length the files state: BrainVision
  ``DataPoints`` and whole frames, an EEGLAB ``.fdt``'s size, markers (``.vmrk``) inside the data,
  and the BIDS sidecars' ``RecordingDuration`` (``_ieeg.json``) and event onsets (``_events.tsv``),
  to within ``LENGTH_TOLERANCE_S``; a truncated file is never read as a shorter recording, a longer
  one never cut silently (an EDF with more records than its header states is read up to the stated
  records, with a warning; one stating ``-1`` records, "unknown", is read whole);
* headers: a BrainVision ``NumberOfChannels`` must match its ``Ch`` lines; a rate outside
  ``SFREQ_RANGE_HZ``, an EDF without data records and a ``.npz`` that is no archive are refused
  in one line naming the file; blank EDF labels (MNE's ``-0``, ``-1``) are typed ``misc``;
* plausibility: a cheap look at a few seconds warns (log and ``Recording.info["warnings"]``) when the
  mains hum sits where a rate off by 2× puts it, or the samples look like a misstated format;
* huge levels: a channel sitting on a level above ``OFFSET_LIMIT_UV`` has it removed in float64
  before the float32 conversion (logged, ``Recording.info["dc_offsets_uv"]``).
"""

from __future__ import annotations

import configparser
import json
import logging
import os
import re
import zipfile
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from sss_viewer._thread_warnings import quiet_log_records, recorded_warnings
from sss_viewer.io._bids_paths import bids_entities, bids_path_of, find_bids_root, inherited_sidecar
from sss_viewer.io._channel_conventions import TYPE_ALIASES, duplicate_channels, resolve_channel_types
from sss_viewer.io._fif_tags import fif_cut_short
from sss_viewer.io._lazy import OFFSET_LIMIT_UV, LazySignals, array_levels, dc_offsets, probe_levels
from sss_viewer.io.recording import IEEG_CH_TYPES, Event, Recording
from sss_viewer.io.seizure_events import is_clock_stamp
from sss_viewer.io.tables import TableError, read_table

logger = logging.getLogger(__name__)

SUPPORTED_FORMATS = {
    ".vhdr": "BrainVision",
    ".edf": "EDF",
    ".bdf": "BDF",
    ".fif": "FIF",
    ".fif.gz": "FIF",
    ".set": "EEGLAB",
    ".npz": "NumPy archive",
}
"""File extensions ``read_recording`` accepts, with the format name used in messages."""

_BIDS_TYPES = TYPE_ALIASES
"""BIDS channel types whose MNE name differs (others are lower-cased)."""
_MNE_TYPES = {"ecog", "seeg", "dbs", "eeg", "ecg", "eog", "emg", "misc", "stim", "resp", "bio", "temperature", "gsr"}

_READ_BY_MNE_BIDS = (".vhdr", ".edf", ".bdf", ".set", ".fif")
"""Extensions of BIDS runs opened by ``mne_bids.read_raw_bids`` (others, such as ``.fif.gz``, by MNE alone)."""

_EXPECTED_BIDS_NOTES = (
    "Did not find any electrodes.tsv",
    "Did not find any coordsystem.json",
    "Did not find any events.tsv",
    "participants.tsv file not found",
    "Channel mismatch between",
    "does not match the number of channels in the raw data file",
    "Cannot set channel type for the following channels",
    'Cannot set "bad" status for the following channels',
    "Unable to map the following column(s) to MNE",
)
"""mne-bids warnings that are not news for this reader: a run without electrode positions (not used),
``participants.tsv`` columns MNE has no field for (read by :mod:`sss_viewer.io.bids`), or a channel list
the project's own rules reconcile (``$`` duplicates) or refuse. Logged at INFO, not WARNING."""

_TRUNCATION_HINTS = ("does not match the file size", "Invalid tag with only")
"""Fragments of MNE warnings that mean the file is cut short (EDF/BDF, FIF)."""

_BRAINVISION_WIDTH = {"INT_16": 2, "UINT_16": 2, "INT_32": 4, "IEEE_FLOAT_32": 4}
"""Bytes per value of BrainVision binary formats."""

LENGTH_TOLERANCE_S = 1.0
"""Largest accepted difference (s, plus two samples) between a stated length and the data found.

Covers a ``RecordingDuration`` of ``(n - 1) / sfreq`` (mne-bids) or rounded to whole seconds.
"""

SFREQ_RANGE_HZ = (1.0, 100_000.0)
"""Sampling rates a recording may state (Hz); outside this range the header is wrong and the file is refused."""

_ANNEX_OBJECTS = (".git", "annex", "objects")
"""Where git-annex (DataLad, OpenNeuro) keeps the files a dataset's symlinks point to."""


class RecordingReadError(ValueError):
    """MNE could not read a file, or the file holds nothing SSS can score."""


def _format_of(path: Path) -> tuple[str, str]:
    """Return ``(extension, format name)`` of ``path`` or raise for an unsupported extension."""
    name = path.name.lower()
    for ext in sorted(SUPPORTED_FORMATS, key=len, reverse=True):
        if name.endswith(ext):
            return ext, SUPPORTED_FORMATS[ext]
    supported = ", ".join(SUPPORTED_FORMATS)
    extension = "".join(path.suffixes) or "(none)"
    raise ValueError(f"Unsupported recording file {path}: extension {extension!r}; supported: {supported}.")


def bids_sidecar(path: Path, suffix: str) -> Path | None:
    """BIDS sidecar of the recording ``path`` with ``suffix`` (``"channels.tsv"``), or None when absent or not BIDS-named.

    The run's own sidecar first: the recording's extension (the longest of :data:`SUPPORTED_FORMATS` it
    ends with, so ``.fif.gz`` whole; else its last suffix) and its BIDS suffix are replaced:
    ``sub-1_task-a_ieeg.vhdr`` → ``sub-1_task-a_channels.tsv``. A run laid out in a BIDS dataset that has
    none of its own takes the one mne-bids matches by the inheritance principle
    (:func:`sss_viewer.io._bids_paths.inherited_sidecar`: ``sub-1_task-a_channels.tsv`` for ``…_run-02``).
    A sidecar is one of the recording's files: the run's own must lie in the recording's folder after
    symlinks are followed (:func:`check_companion`), an inherited one in the run's subject folder or at the
    dataset's root, else the run is refused. The one rule for every reader of sidecars (the reader's channel
    types and durations, the BIDS run's checks and events).
    """
    name = path.name
    ext = next((e for e in sorted(SUPPORTED_FORMATS, key=len, reverse=True) if name.lower().endswith(e)), path.suffix)
    stem = name[: len(name) - len(ext)] if ext else name
    if "_" not in stem:
        return None
    candidate = path.with_name(stem.rsplit("_", 1)[0] + "_" + suffix)
    if candidate.is_file() or candidate.is_symlink():
        return check_sidecar(path, candidate)
    inherited = inherited_sidecar(path, suffix)
    return None if inherited is None else _check_inherited(path, inherited)


def _check_inherited(path: Path, sidecar: Path) -> Path | None:
    """``sidecar`` (inherited by the run ``path``) when it stays in the run's subject folder or the dataset's root.

    Raises
    ------
    RecordingReadError
        The sidecar is a link leading elsewhere (another subject's files, outside the dataset).
    """
    root = find_bids_root(path)
    subject_dir = next((p for p in path.absolute().parents if p.name.startswith("sub-")), None)
    where = subject_dir if subject_dir is not None and sidecar.absolute().is_relative_to(subject_dir) else root
    if where is None:
        return None
    try:
        check_inside(where, sidecar, f"sidecar of {path.name}")
    except RecordingReadError:
        raise RecordingReadError(
            f"Refusing {path}: the sidecar it inherits, {sidecar}, is a link leading outside {where} "
            "(an inherited sidecar must lie in the run's subject folder or at the dataset's root)."
        ) from None
    return sidecar if sidecar.is_file() else None


def check_sidecar(path: Path, sidecar: Path) -> Path | None:
    """``sidecar`` (a file beside the recording ``path``) when it lies in the recording's folder, None when absent.

    The rule of :func:`check_companion`: after symlinks are followed the sidecar must lie in the
    recording's folder (a git-annex object of the same dataset excepted). The message names the
    sidecar and the folder, not where the link leads (another patient's files, for instance).

    Raises
    ------
    RecordingReadError
        The sidecar leads outside the folder.
    """
    try:
        check_companion(path, sidecar.name, "sidecar ")
    except RecordingReadError:
        raise RecordingReadError(
            f"Refusing {path}: its sidecar {sidecar.name} points outside the recording's folder {path.absolute().parent} "
            "(a symlink); a recording's sidecars must lie in its folder."
        ) from None
    return sidecar if sidecar.is_file() else None


def check_inside(root: Path, path: Path, what: str) -> Path:
    """Refuse ``path`` (a dataset-level file: ``participants.tsv``, ``labels.tsv``…) unless it lies inside ``root``.

    The rule of :func:`check_companion` for files at a dataset's root: after symlinks are followed
    the file must resolve inside ``root`` (a git-annex object of the same dataset excepted).

    Raises
    ------
    RecordingReadError
        Naming ``path``, where it leads and ``root``; never the file's content.
    """
    root = Path(root).absolute()
    path = Path(path).absolute()
    resolved = path.resolve()
    lexical = Path(os.path.normpath(path))
    if lexical.is_relative_to(root) and (
        resolved.is_relative_to(root.resolve()) or _annexed_in_dataset(root, resolved)
    ):
        return path
    raise RecordingReadError(
        f"Refusing the {what} {path}: it is a link leading outside the dataset's folder {root} "
        "(a dataset's files must lie inside it)."
    )


@contextmanager
def _mne_errors(path: Path, fmt: str, size_checked: bool = False) -> Iterator[None]:
    """Turn MNE failures into RecordingReadError and MNE's warnings into log records.

    The warnings this thread raises inside the block are recorded (nothing is silenced globally, and
    a read on another thread at the same time keeps its own: :func:`sss_viewer._thread_warnings.recorded_warnings`);
    those that reveal a truncated file raise instead, unless ``size_checked`` (an EDF/BDF whose size was
    already compared with its header by :func:`_check_edf_header`). MNE's own log output is dropped for
    this thread meanwhile (its warnings are said here, in the file's name). No MNE call here passes
    ``verbose=``: that sets MNE's one logger's level for the whole process while the call runs, which
    reads on other threads would race with.
    """
    with recorded_warnings() as caught, quiet_log_records(logging.getLogger("mne")):
        try:
            yield
        except MemoryError:
            raise
        except RecordingReadError:
            raise
        except Exception as exc:  # MNE raises many types for malformed files
            text = str(exc).split(", please report")[0].strip()
            raise RecordingReadError(f"Could not read {path} as {fmt}: {text}") from exc
    for w in caught:
        message = str(w.message)
        if any(hint in message for hint in _TRUNCATION_HINTS):
            if not size_checked:
                raise RecordingReadError(f"Could not read {path} as {fmt}: the file looks truncated ({message})")
            logger.info("%s: %s", path.name, message)  # expected: said in our own words by _check_edf_header
            continue
        if any(note in message for note in _EXPECTED_BIDS_NOTES):
            logger.info("%s: %s", path.name, message)
            continue
        logger.warning("%s: %s", path.name, message)


def brainvision_header_fields(header: bytes) -> dict[str, str]:
    """``[Common Infos]`` and ``[Binary Infos]`` entries of a BrainVision header's bytes, keys lower-cased.

    Parsed as MNE parses it (``configparser``: keys in any case, ``=`` or ``:``; the first line, the
    format's identification, skipped; UTF-8, else Latin-1), so a check sees the same ``DataFile`` and
    ``MarkerFile`` that MNE will open — the reader's checks and the viewer's upload check alike.
    Empty when the header cannot be parsed (MNE then says why).

    Parameters
    ----------
    header : bytes
        The ``.vhdr`` file's content.

    Returns
    -------
    dict
        ``{"datafile": …, "markerfile": …, "dataformat": …, …}`` as written (values stripped).
    """
    body = header.partition(b"\n")[2]
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError:
        text = body.decode("latin-1")
    cfg = configparser.ConfigParser(interpolation=None, strict=False)
    try:
        cfg.read_string(text.split("[Comment]")[0])
    except configparser.Error:
        return {}
    return {
        key: value.strip()
        for section in ("Common Infos", "Binary Infos")
        if cfg.has_section(section)
        for key, value in cfg.items(section)
    }


def _brainvision_fields(vhdr: Path) -> dict[str, str]:
    """:func:`brainvision_header_fields` of the header file ``vhdr``."""
    return brainvision_header_fields(vhdr.read_bytes())


def _annexed_in_dataset(folder: Path, resolved: Path) -> bool:
    """True when ``resolved`` is a git-annex object of a repository that contains ``folder``."""
    parts = resolved.parts
    for i in range(len(parts) - len(_ANNEX_OBJECTS)):
        if parts[i : i + len(_ANNEX_OBJECTS)] == _ANNEX_OBJECTS:
            repository = Path(*parts[:i])
            return folder.is_relative_to(repository) or folder.resolve().is_relative_to(repository)
    return False


def check_companion(header: Path, target: str | Path, what: str) -> Path:
    """Refuse a file named by a recording's header unless it lies in the header's own folder.

    Parameters
    ----------
    header : Path
        The file that names ``target`` (a ``.vhdr``, a ``.set``).
    target : str or Path
        The name as written (relative to the header's folder) or the path MNE opened.
    what : str
        What names it, for the message (``"DataFile="``).

    Returns
    -------
    path : Path
        ``target`` joined to the header's folder (not resolved).

    Raises
    ------
    RecordingReadError
        ``target`` leaves the folder: ``..``, an absolute path elsewhere, or a symlink whose target
        lies outside (a git-annex object of the dataset the folder belongs to is accepted).
    """
    folder = header.absolute().parent
    path = folder / target
    resolved = path.resolve()
    lexical = Path(os.path.normpath(path))
    inside = lexical.is_relative_to(folder) and resolved.is_relative_to(folder.resolve())
    if inside or (lexical.is_relative_to(folder) and _annexed_in_dataset(folder, resolved)):
        return path
    raise RecordingReadError(
        f"Refusing {header}: its {what}{target} points outside the header's folder ({resolved}); "
        f"a recording's files must lie in the folder of its header ({folder})."
    )


def _check_brainvision_header(vhdr: Path) -> dict[str, str]:
    """Check ``DataFile=`` / ``MarkerFile=`` before MNE opens anything; return the header's fields."""
    fields = _brainvision_fields(vhdr)
    for key in ("DataFile", "MarkerFile"):
        if fields.get(key.lower()):
            check_companion(vhdr, fields[key.lower()], f"{key}=")
    return fields


def _check_opened_files(raw, path: Path) -> None:
    """Refuse a recording whose MNE reader opened files outside the header's folder (EEGLAB ``.fdt``, FIF splits)."""
    for name in getattr(raw, "filenames", ()) or ():
        if name is not None and Path(name).absolute() != path.absolute():
            check_companion(path, Path(name).absolute(), "data file ")


def _check_fif_tags(raw, path: Path) -> None:
    """Refuse a FIF recording one of whose files (``path`` and any split parts MNE opened) is cut short.

    Told from the files' bytes (:func:`sss_viewer.io._fif_tags.fif_cut_short`), not only from MNE's warning,
    which process-wide logging and warning state can keep from this read.
    """
    names = [Path(name) for name in (getattr(raw, "filenames", ()) or ()) if name is not None] or [path]
    for name in names:
        if name.name.lower().endswith(".gz"):
            continue  # a cut gzip stream ends in gzip's own error
        if (why := fif_cut_short(name)) is not None:
            part = "" if name.absolute() == path.absolute() else f"its part {name.name}: "
            raise RecordingReadError(f"Could not read {path} as FIF: the file looks truncated ({part}{why})")


def _brainvision_size_error(vhdr: Path, fields: dict[str, str]) -> str | None:
    """Why a binary data file's size disagrees with the header (not whole frames, not ``DataPoints``), or None.

    MNE infers the number of samples from the data file's size, so a truncated ``.eeg`` would
    otherwise load silently as a shorter recording.
    """
    if fields.get("dataformat", "BINARY").upper() != "BINARY" or not fields.get("datafile"):
        return None
    width = _BRAINVISION_WIDTH.get(fields.get("binaryformat", "").upper())
    data_file = vhdr.parent / fields["datafile"]
    if width is None or not data_file.is_file() or not fields.get("numberofchannels", "").isdigit():
        return None
    frame = width * int(fields["numberofchannels"])
    size = data_file.stat().st_size
    points = fields.get("datapoints", "")
    if points.isdigit() and size != int(points) * frame:
        return f"the header states DataPoints={points} ({data_file.name} holds {size} bytes of {frame}-byte frames)"
    if size % frame:
        return f"the data file {data_file.name} ({size} bytes) is not a whole number of {frame}-byte frames"
    return None


def _marker_file(vhdr: Path, fields: dict[str, str]) -> Path | None:
    """The marker file MNE reads for ``vhdr`` (the named one, else the header's ``.vmrk`` sibling)."""
    for candidate in (fields.get("markerfile"), vhdr.with_suffix(".vmrk").name):
        if candidate and (vhdr.parent / candidate).is_file():
            return vhdr.parent / candidate
    return None


def _last_marker_sample(marker_file: Path) -> tuple[str, int] | None:
    """``(marker name, 1-based sample)`` of the marker furthest into the data, or None without markers."""
    last = None
    for line in marker_file.read_text(encoding="utf-8", errors="replace").splitlines():
        key, sep, value = line.partition("=")
        fields = value.split(",")
        if not sep or not re.fullmatch(r"Mk\d+", key.strip()) or len(fields) < 3 or not fields[2].strip().isdigit():
            continue
        position = int(fields[2])
        if last is None or position > last[1]:
            last = (key.strip(), position)
    return last


def _stated_duration(path: Path) -> tuple[str, float] | None:
    """``RecordingDuration`` of a BIDS ``_ieeg.json`` / ``_eeg.json`` beside ``path``, with the sidecar's name."""
    for suffix in ("ieeg.json", "eeg.json"):
        sidecar = bids_sidecar(path, suffix)
        if sidecar is None:
            continue
        try:
            value = json.loads(sidecar.read_text(encoding="utf-8")).get("RecordingDuration")
        except (OSError, json.JSONDecodeError, AttributeError):
            return None  # reported where the sidecar is read for its other keys
        if isinstance(value, int | float) and not isinstance(value, bool) and np.isfinite(value):
            return sidecar.name, float(value)
    return None


def _last_event_onset(path: Path) -> tuple[str, float] | None:
    """Latest ``onset`` (s) of a BIDS ``_events.tsv`` beside ``path``, with the file's name; None without one."""
    sidecar = bids_sidecar(path, "events.tsv")
    if sidecar is None:
        return None
    try:
        table = read_table_file(sidecar, sep="\t", dtype=str, keep_default_na=False)
    except (OSError, ValueError, pd.errors.ParserError):
        return None  # reported where the events are read
    if "onset" not in table.columns:
        return None
    onsets = pd.to_numeric(table["onset"], errors="coerce").dropna()
    return (sidecar.name, float(onsets.max())) if len(onsets) else None


def check_stated_lengths(raw, path: Path, ext: str, fmt: str, fields: dict[str, str] | None = None) -> None:
    """Refuse a recording whose samples disagree with a length its header or sidecars state.

    Compared with the ``n_times`` samples MNE found: BrainVision ``DataPoints`` and the data file's
    size, the last ``.vmrk`` marker, the BIDS ``_ieeg.json`` ``RecordingDuration`` and the last
    ``_events.tsv`` onset; each to within ``LENGTH_TOLERANCE_S`` plus two samples.

    Parameters
    ----------
    raw : mne.io.BaseRaw
        The opened file.
    path : Path
    ext, fmt : str
        Extension and format name (``_format_of``).
    fields : dict, optional
        The BrainVision header's entries.

    Raises
    ------
    RecordingReadError
        Naming the file, the stated length, the length found and where the statement is.
    """
    sfreq, n_times = float(raw.info["sfreq"]), int(raw.n_times)
    found = f"{n_times} samples = {n_times / sfreq:.3f} s at {sfreq:g} Hz"
    tolerance = LENGTH_TOLERANCE_S + 2 / sfreq
    problems = []
    if fmt == "BrainVision" and fields is not None:
        if size_error := _brainvision_size_error(path, fields):
            problems.append(size_error)
        marker_file = _marker_file(path, fields)
        last = _last_marker_sample(marker_file) if marker_file is not None else None
        if last is not None and last[1] > n_times + 1:
            problems.append(f"{marker_file.name} places marker {last[0]} at sample {last[1]}, beyond the data")
    if (stated := _stated_duration(path)) is not None and abs(stated[1] - n_times / sfreq) > tolerance:
        problems.append(f"{stated[0]} states RecordingDuration {stated[1]:g} s")
    if (onset := _last_event_onset(path)) is not None and onset[1] > n_times / sfreq + tolerance:
        problems.append(f"{onset[0]} has an event at {onset[1]:g} s, after the data ends")
    if problems:
        raise RecordingReadError(
            f"Could not read {path} as {fmt}: it holds {found}, but {'; '.join(problems)}. The data file looks "
            "truncated (or the header/sidecar is wrong); it is not read as a shorter recording."
        )


def _edf_header(path: Path) -> dict | None:
    """The fields of an EDF/BDF header that say how long the file must be, or None when it cannot be parsed.

    Returns
    -------
    header : dict
        ``header_bytes``, ``n_records`` (as stated; -1 means "unknown", written while recording),
        ``record_s`` (duration of a record), ``labels`` (list of str, as written, stripped),
        ``samples`` (samples per record of each signal), ``width`` (bytes per sample: 2, BDF 3).
    """
    try:
        with open(path, "rb") as f:
            head = f.read(256)
            n_signals = int(head[252:256].decode("ascii").strip())
            if n_signals <= 0 or len(head) < 256:
                return None
            body = f.read(n_signals * 256)
        header_bytes = int(head[184:192].decode("ascii").strip())
        n_records = int(head[236:244].decode("ascii").strip())
        record_s = float(head[244:252].decode("ascii").strip())
        labels = [body[i * 16 : (i + 1) * 16].decode("latin-1").strip() for i in range(n_signals)]
        at = n_signals * (16 + 80 + 8 + 8 + 8 + 8 + 8 + 80)
        samples = [int(body[at + i * 8 : at + (i + 1) * 8].decode("ascii").strip()) for i in range(n_signals)]
    except (OSError, ValueError, UnicodeDecodeError):
        return None  # MNE says what is wrong
    width = 3 if head[:1] == b"\xff" else 2
    return {
        "header_bytes": header_bytes,
        "n_records": n_records,
        "record_s": record_s,
        "labels": labels,
        "samples": samples,
        "width": width,
    }


def _check_rate(path: Path, fmt: str, sfreq: float, how: str = "") -> None:
    """Refuse a sampling rate outside ``SFREQ_RANGE_HZ`` (a wrong header: 1e-9 s records, ``fs = 1e9``)."""
    low, high = SFREQ_RANGE_HZ
    if not (np.isfinite(sfreq) and low <= sfreq <= high):
        raise RecordingReadError(
            f"Could not read {path} as {fmt}: it states a sampling rate of {sfreq:g} Hz{how}, outside the plausible "
            f"{low:g} Hz - {high / 1000:g} kHz; correct the rate in the file's header."
        )


def _check_edf_header(path: Path, fmt: str) -> dict:
    """Compare an EDF/BDF header with the file before MNE opens it.

    * no data record (a header only): refused, "no data records";
    * an absurd rate (record duration ``1e-09`` s): refused;
    * ``-1`` records (the spec's "unknown", left by a recorder that was not stopped): the number is
      computed from the file size (as MNE does), logged;
    * more data than the stated records: read up to the stated records (``crop_records``), warned;
    * fewer whole records than stated: refused as truncated.

    Returns
    -------
    notes : dict
        ``size_checked`` (MNE's size warning is expected and harmless), ``crop_records`` (int or
        None), ``empty_labels`` (indices, among the non-annotation signals, of blank labels),
        ``warnings`` (messages for ``Recording.info``).
    """
    notes = {"size_checked": False, "crop_records": None, "empty_labels": [], "warnings": []}
    header = _edf_header(path)
    if header is None:
        return notes
    signals = [i for i, label in enumerate(header["labels"]) if label not in ("EDF Annotations", "BDF Annotations")]
    notes["empty_labels"] = [k for k, i in enumerate(signals) if not header["labels"][i]]
    notes["n_signals"], notes["record_s"] = len(signals), header["record_s"]
    if header["record_s"] <= 0 and header["n_records"] != 0 and signals:
        raise RecordingReadError(
            f"Could not read {path} as {fmt}: its header states a data record duration of {header['record_s']:g} s, "
            "so no sampling rate follows; correct the record duration in the file's header."
        )
    if header["record_s"] > 0 and signals:
        rate = max(header["samples"][i] for i in signals) / header["record_s"]
        _check_rate(
            path,
            fmt,
            rate,
            f" ({max(header['samples'][i] for i in signals)} samples per {header['record_s']:g} s record)",
        )
    record_bytes = sum(header["samples"]) * header["width"]
    if record_bytes <= 0:
        return notes
    data_bytes = path.stat().st_size - header["header_bytes"]
    found = max(data_bytes, 0) // record_bytes
    stated = header["n_records"]
    if found == 0 or stated == 0:
        raise RecordingReadError(
            f"Could not read {path} as {fmt}: it has no data records (a header of {header['header_bytes']} bytes "
            f"and {max(data_bytes, 0)} bytes of data; the header states {stated} records). Export the recording again."
        )
    if stated == -1:
        notes["size_checked"] = True
        logger.info(
            "%s: the header states -1 data records (unknown: written while recording); reading the %d whole "
            "records the file holds.",
            path.name,
            found,
        )
    elif stated < found:
        notes["size_checked"] = True
        notes["crop_records"] = stated
        message = (
            f"{path.name} holds {found} data records but its header states {stated}; read up to the stated "
            f"{stated} records ({stated * header['record_s']:g} s), the {found - stated} after them are ignored."
        )
        logger.warning(message)
        notes["warnings"].append(message)
    elif stated > found:  # told here, not left to MNE's warning (which process-wide state can keep from this read)
        raise RecordingReadError(
            f"Could not read {path} as {fmt}: the file looks truncated (its header states {stated} data records of "
            f"{record_bytes} bytes; the file holds {found} whole records, {max(data_bytes, 0)} bytes after its "
            f"{header['header_bytes']}-byte header)."
        )
    return notes


def _brainvision_channel_count(vhdr: Path, fields: dict[str, str]) -> None:
    """Refuse a header whose ``NumberOfChannels`` disagrees with its ``[Channel Infos]`` ``Ch`` lines.

    MNE reads ``NumberOfChannels`` interleaved channels and drops the extra ``Ch`` lines with a
    warning, so 8-channel data would be read as 4 wrong channels.
    """
    stated = fields.get("numberofchannels", "")
    if not stated.isdigit():
        return
    body = vhdr.read_bytes().partition(b"\n")[2].decode("utf-8", errors="replace").split("[Comment]")[0]
    cfg = configparser.ConfigParser(interpolation=None, strict=False)
    try:
        cfg.read_string(body)
    except configparser.Error:
        return
    if not cfg.has_section("Channel Infos"):
        return
    listed = sum(1 for key in cfg.options("Channel Infos") if re.fullmatch(r"ch\d+", key.strip()))
    if listed and listed != int(stated):
        raise RecordingReadError(
            f"Could not read {vhdr} as BrainVision: the header states NumberOfChannels={stated} but lists {listed} "
            f"channels (Ch1..Ch{listed}) in [Channel Infos]; correct NumberOfChannels (or the channel list) to the "
            "number of channels in the data file."
        )


def _check_eeglab_length(path: Path, raw=None) -> None:
    """Refuse an EEGLAB ``.set`` whose ``.fdt`` holds more or fewer samples than ``nbchan × pnts × trials``.

    The rule of BrainVision ``DataPoints``: MNE cuts a longer ``.fdt`` to the ``.set`` silently and
    fails on a shorter one with an internal error; either way the files disagree and the run is refused.
    Checked before MNE opens the file (``raw`` None, from the ``.set``) and again after, from ``raw``.
    """
    if raw is not None:
        names = [Path(n) for n in getattr(raw, "filenames", ()) or () if n is not None]
        fdt = next((n for n in names if n.suffix.lower() == ".fdt"), None)
        n_chan, n_times = len(raw.ch_names), int(raw.n_times)
    else:
        try:
            from mne.io.eeglab.eeglab import _check_load_mat

            eeg = _check_load_mat(str(path), None)
            data = eeg.get("data")
            n_chan, n_times = int(eeg.nbchan), int(eeg.pnts) * int(eeg.trials)
        except Exception:  # noqa: BLE001 - MNE says what is wrong when it opens the file
            return
        if not isinstance(data, str) or not data:
            return
        fdt = path.parent / data
        try:
            check_companion(path, data, "data file ")
        except RecordingReadError:
            return  # refused with its own message once MNE has named the file it opens
    if fdt is None or not fdt.is_file():
        return
    size = fdt.stat().st_size
    expected = n_chan * n_times * 4
    if size != expected:
        held = f"{size / (4 * n_chan):g} samples" if n_chan else f"{size} bytes"
        raise RecordingReadError(
            f"Could not read {path} as EEGLAB: {fdt.name} holds {size} bytes ({held} of {n_chan} float32 channels) "
            f"but the .set states {n_times} samples ({expected} bytes); the data file is "
            f"{'longer' if size > expected else 'shorter'} than its .set. It is not read cut to either length: "
            "save the recording again from EEGLAB."
        )


def _read_raw(path: Path, ext: str, fmt: str):
    """Open ``path`` with MNE (read-only, samples left in the file where the format allows it).

    A BrainVision header's companion files and channel count, an EDF/BDF header's records and an
    EEGLAB ``.fdt``'s length are checked before MNE opens anything; the files MNE opened, the rate
    and the lengths stated beside the file are checked before any sample is read. See
    ``_mne_errors`` for error and warning handling.

    Returns
    -------
    raw : mne.io.BaseRaw
    notes : dict
        ``empty_labels`` (indices of channels whose label in the file is blank), ``warnings`` and
        ``read_by``: ``"mne-bids"`` for a run laid out in a BIDS dataset (opened by ``read_raw_bids``, which
        applies its sidecars: :func:`_read_raw_bids`), else ``"mne"`` (``mne.io.read_raw``).
    """
    import mne

    notes = {"size_checked": False, "crop_records": None, "empty_labels": [], "warnings": []}
    fields = None
    if fmt == "BrainVision":
        fields = _check_brainvision_header(path)
        _brainvision_channel_count(path, fields)
    elif fmt in ("EDF", "BDF"):
        notes = _check_edf_header(path, fmt)
    elif fmt == "EEGLAB":
        _check_eeglab_length(path)
    with _mne_errors(path, fmt, size_checked=notes["size_checked"]):
        bids_path = bids_path_of(path)
        if bids_path is None or str(bids_path.extension).lower() not in _READ_BY_MNE_BIDS:
            raw = mne.io.read_raw(path, preload=False)
            notes["read_by"] = "mne"
        else:
            raw = _read_raw_bids(bids_path)
            notes["read_by"] = "mne-bids"
    _check_opened_files(raw, path)
    if fmt == "FIF":
        _check_fif_tags(raw, path)
    _check_rate(path, fmt, float(raw.info["sfreq"]))
    if fmt == "EEGLAB":
        _check_eeglab_length(path, raw)
    if notes["crop_records"] is not None:
        n_keep = int(round(notes["crop_records"] * notes["record_s"] * raw.info["sfreq"]))
        if 0 < n_keep < raw.n_times:
            with _mne_errors(path, fmt):
                raw.crop(tmax=(n_keep - 1) / raw.info["sfreq"], include_tmax=True)
    if notes.get("n_signals") != len(raw.ch_names):
        notes["empty_labels"] = []  # the header's signals and MNE's channels do not pair up: the name rules decide
    check_stated_lengths(raw, path, ext, fmt, fields)
    return raw, notes


def _read_raw_bids(bids_path):
    """A BIDS run opened by ``mne_bids.read_raw_bids``: its ``channels.tsv`` types, units and bad marks, its
    ``events.tsv`` as the annotations, its ``_ieeg.json`` mains frequency, applied by the reference reader.

    A channel list that disagrees with the data is not applied there (``on_ch_mismatch="warn"``): the
    project's own rules decide (``$`` duplicates a sidecar leaves out are dropped; otherwise the BIDS run is
    refused naming the channels, :func:`sss_viewer.io.bids.check_sidecars`).

    Parameters
    ----------
    bids_path : mne_bids.BIDSPath
        From :func:`sss_viewer.io._bids_paths.bids_path_of`.

    Returns
    -------
    raw : mne.io.BaseRaw
        Samples left in the file.
    """
    from mne_bids import read_raw_bids

    from sss_viewer.io._mne_bids_reads import read_sidecars_without_lock_files

    read_sidecars_without_lock_files()  # no <sidecar>.lock written into the patient's folder (see that module)
    # Called inside ``_mne_errors``, which records its warnings and keeps MNE's own log output off for this thread
    # (mne-bids warns through MNE's ``warn``, which can also write a copy to standard output: seen under pytest,
    # where the copy landed inside ``cohort --json``'s output).
    return read_raw_bids(bids_path, extra_params={"preload": False}, on_ch_mismatch="warn")


def read_table_file(path: Path, **options) -> pd.DataFrame:
    """``pd.read_csv(path, **options)``; a malformed file (stray quote, bad bytes) raises RecordingReadError naming it."""
    try:
        return pd.read_csv(path, **options)
    except (pd.errors.ParserError, UnicodeDecodeError) as exc:
        raise RecordingReadError(f"Could not read the table {path}: {str(exc).strip()}") from None
    except pd.errors.EmptyDataError:
        raise RecordingReadError(f"The table {path} is empty (not even a header line).") from None


def read_channels_tsv(path: Path) -> pd.DataFrame:
    """Read a BIDS ``_channels.tsv`` with ``name`` (and usually ``type``, ``status``) columns.

    A name listed twice keeps its first row (the data file's duplicate channels are dropped anyway).

    Returns
    -------
    DataFrame, one row per listed channel, indexed by ``name``, in the file's order; every cell a str.
    """
    try:
        table = read_table(path, ("name",), what="BIDS channels file", na_values=None)
    except TableError as exc:
        raise RecordingReadError(str(exc)) from None
    return table.drop_duplicates("name", keep="first").set_index("name")


def _channel_info(
    raw, sidecar: pd.DataFrame | None, path: Path, keep: np.ndarray, blank: Sequence[int] = ()
) -> tuple[list[str], list[str], list[str], dict]:
    """Names, lower-case MNE types, bad channels and types inferred from names, of the kept channels.

    A sidecar's ``type`` wins; other channels go through
    :func:`sss_viewer.io._channel_conventions.resolve_channel_types`.

    Parameters
    ----------
    keep : ndarray, shape (n_kept,), int
        Indices of the file's channels to describe (``$`` duplicates left out).
    blank : sequence of int
        Indices of channels whose label in the file is blank (MNE renames two or more of them
        ``-0``, ``-1``…): typed ``misc`` like any empty name, never scored.

    Returns
    -------
    names : list of str, length n_kept
    types : list of str, length n_kept
    bads : list of str
    inferred : dict
        ``{name: type}`` set by a name rule.
    """
    all_types = raw.get_channel_types()
    names = [raw.ch_names[i] for i in keep]
    types = [all_types[i] for i in keep]
    stated = [False] * len(names)
    bads = set(raw.info["bads"])
    if sidecar is not None:
        for i, name in enumerate(names):
            if name not in sidecar.index:
                continue
            row = sidecar.loc[name]
            if "type" in row and row["type"]:
                kind = str(row["type"]).lower()
                types[i] = _BIDS_TYPES.get(kind, kind if kind in _MNE_TYPES else "misc")
                stated[i] = True
            if "status" in row and str(row["status"]).lower() == "bad":
                bads.add(name)
    blank_names = {raw.ch_names[i] for i in blank}
    for i, name in enumerate(names):
        if name in blank_names and not stated[i]:
            types[i], stated[i] = "misc", True
    resolved = _resolve_types(names, types, stated, path)
    inferred = {**resolved.inferred, **{n: "misc" for n in names if n in blank_names}}
    if blank_names:
        logger.info(
            "%s: %d channel(s) have a blank label in the file (named %s by MNE): typed misc, not scored.",
            path.name,
            len(blank_names),
            ", ".join(sorted(blank_names)),
        )
    return names, resolved.types, [n for n in names if n in bads], inferred


def _resolve_types(names: list[str], types: list[str], stated: list[bool], path: Path):
    """``resolve_channel_types`` with one log line saying what the names decided."""
    resolved = resolve_channel_types(names, types, stated)
    if resolved.inferred:
        shown = ", ".join(f"{n or repr(n)}: {t}" for n, t in resolved.inferred.items())
        logger.info("%s: channel types inferred from names (not scored): %s.", path.name, shown)
    if resolved.promoted:
        logger.info(
            "%s: no ecog/seeg channels; treating its %d eeg channels as iEEG candidates (type seeg), "
            "as clinical EDF/BrainVision exports type every channel eeg.",
            path.name,
            resolved.promoted,
        )
    return resolved


def _drop_duplicates(names: list[str], path: Path, sidecar: pd.DataFrame | None = None) -> np.ndarray:
    """Indices of the channels to keep: ``$`` copies are dropped (logged once), see ``duplicate_channels``.

    Returns
    -------
    keep : ndarray, shape (n_kept,), int
    """
    duplicates = set(duplicate_channels(names, () if sidecar is None else sidecar.index))
    if duplicates:
        logger.info(
            "%s: dropped %d '$'-prefixed duplicate channels: %s.",
            path.name,
            len(duplicates),
            ", ".join(n for n in names if n in duplicates),
        )
    return np.array([i for i, n in enumerate(names) if n not in duplicates], dtype=int)


def _require_ieeg(types: list[str], inferred: dict[str, str], path: Path) -> None:
    """Raise RecordingReadError naming the types found when no channel is an iEEG candidate."""
    if any(t in IEEG_CH_TYPES for t in types):
        return
    found = ", ".join(sorted(set(types))) or "none"
    by_name = f"; typed from their names: {', '.join(f'{n} ({t})' for n, t in inferred.items())}" if inferred else ""
    raise RecordingReadError(
        f"No iEEG channels in {path}: need ecog/seeg/dbs (or eeg) channels; found types {found}{by_name}."
    )


def _naming_info(all_names: list[str], names: list[str], inferred: dict[str, str]) -> dict:
    """``Recording.info`` entries: ``inferred_types`` ({name: type}) and ``dropped_duplicates`` (names)."""
    return {"inferred_types": dict(inferred), "dropped_duplicates": [n for n in all_names if n not in set(names)]}


def _log_offsets(names: list[str], offsets: np.ndarray, path: Path) -> dict[str, float]:
    """``{channel: offset}`` of the channels given a non-zero offset, logged once as a warning."""
    removed = {name: float(o) for name, o in zip(names, offsets, strict=True) if o != 0}
    if removed:
        shown = ", ".join(f"{n} ({o:.6g} µV)" for n, o in removed.items())
        logger.warning(
            "%s: %d channel(s) sit on a level above %g µV, removed in float64 before float32 conversion so "
            "their signal keeps its resolution: %s.",
            path.name,
            len(removed),
            OFFSET_LIMIT_UV,
            shown,
        )
    return removed


def _signals_uv(raw, picks: np.ndarray, path: Path, types: list[str]) -> tuple[LazySignals, np.ndarray]:
    """The picked channels as a lazy float32 view: volts → µV; stim and other units as stored.

    A voltage channel whose level exceeds ``OFFSET_LIMIT_UV`` has that level subtracted in float64
    (see :func:`sss_viewer.io._lazy.dc_offsets`).

    Parameters
    ----------
    types : list of str, length n_picks
        The resolved types of the picked channels (a trigger typed ``stim`` by its name is not a voltage).

    Returns
    -------
    data : LazySignals, shape (n_picks, n_times)
    offsets : ndarray, shape (n_picks,), float64
        The level subtracted from each channel (0 for most).
    """
    from mne.io.constants import FIFF

    volts = np.array(
        [raw.info["chs"][p]["unit"] == FIFF.FIFF_UNIT_V and t != "stim" for p, t in zip(picks, types, strict=True)],
        dtype=bool,
    )
    scale = np.where(volts, 1e6, 1.0)
    offsets = np.zeros(len(picks))
    if volts.any():
        offsets[volts] = dc_offsets(probe_levels(raw, np.asarray(picks)[volts], scale[volts]))
    return LazySignals(raw, picks, scale, source=path, offset=offsets), offsets


def _events(raw, fmt: str, path: Path | None = None) -> list[Event]:
    """Annotations as events, onsets in seconds from the first sample.

    In EDF/BDF files, annotations whose text is only a signed number of seconds (``+75.000000``, the
    clock stamps a Nihon Kohden export writes as annotations; :func:`~sss_viewer.io.seizure_events.is_clock_stamp`)
    are time-keeping, not events: they are dropped, and how many is logged.
    """
    annotations = raw.annotations
    events = []
    stamps = 0
    for onset, duration, description in zip(annotations.onset, annotations.duration, annotations.description):
        text = str(description)
        if fmt == "BrainVision" and text.startswith("Comment/"):
            text = text[len("Comment/") :]
        if fmt in ("EDF", "BDF") and is_clock_stamp(text):
            stamps += 1
            continue
        events.append(Event(float(onset - raw.first_time), float(duration), text))
    if stamps:
        logger.info(
            "%s: %d annotation(s) that are only a time stamp (e.g. '+75.000000', an EDF export's time-keeping) "
            "dropped; %d event(s) kept.",
            path or fmt,
            stamps,
            len(events),
        )
    return events


def _line_freq(raw, path: Path, ext: str) -> float | None:
    """Mains frequency from the file or a BIDS ``_ieeg.json`` / ``_eeg.json`` sidecar."""
    line_freq = raw.info.get("line_freq")
    if line_freq:
        return float(line_freq)
    for suffix in ("ieeg.json", "eeg.json"):
        sidecar = bids_sidecar(path, suffix)
        if sidecar is None:
            continue
        try:
            value = json.loads(sidecar.read_text(encoding="utf-8")).get("PowerLineFrequency")
        except (OSError, json.JSONDecodeError) as exc:
            logger.warning("Ignoring unreadable sidecar %s: %s", sidecar, exc)
            continue
        if isinstance(value, int | float) and value > 0:
            return float(value)
    return None


def _opened_files(raw, path: Path) -> list[str]:
    """The files the recording's samples and markers come from: ``path`` and those MNE opened, as absolute paths."""
    files = {path.absolute(), *(Path(n).absolute() for n in getattr(raw, "filenames", ()) or () if n is not None)}
    if path.suffix.lower() == ".vhdr" and (marker := _marker_file(path, _brainvision_fields(path))) is not None:
        files.add(marker.absolute())
    return sorted(str(f) for f in files)


def read_recording(path: str | Path, *, preload: bool = False, require_ieeg: bool = True) -> Recording:
    """Read one EDF/BDF, BrainVision, FIF or EEGLAB file into a ``Recording``.

    Parameters
    ----------
    path : str or Path
        The recording (for BrainVision the ``.vhdr`` header). Opened read-only.
    preload : bool
        False (default): ``data`` is a ``LazySignals`` view that reads blocks from the file when
        asked (formats MNE must preload, such as a single-file EEGLAB ``.set``, are read whole and
        say so in a warning). True: ``data`` is a float32 µV array in memory, built block by block.
    require_ieeg : bool
        True (default): a file without any iEEG channel is refused (nothing in it can be scored).
        False: it is read all the same, for viewing (the viewer opens it with scoring disabled).

    Returns
    -------
    recording : Recording
        ``data`` of shape (n_channels, n_times), float32 µV (lazy unless ``preload``); ``$``-prefixed
        duplicates of present channels (or listed in a BIDS sidecar) dropped; ``ch_types`` resolved by
        :func:`sss_viewer.io._channel_conventions.resolve_channel_types`; ``info["inferred_types"]``
        (``{name: type}`` set from names) and ``info["dropped_duplicates"]``; ``soz`` is None (labels
        come from a cohort's ``labels.tsv``).

    Raises
    ------
    FileNotFoundError
        The file does not exist.
    ValueError
        Unsupported extension.
    RecordingReadError
        MNE fails to read the file, or it has no iEEG (ecog/seeg/dbs, or eeg) channel and
        ``require_ieeg`` is True.
    """
    path = Path(path)
    ext, fmt = _format_of(path)
    if not path.is_file():
        raise FileNotFoundError(f"Recording file not found: {path}")
    if fmt == "NumPy archive":
        return read_npz_recording(path)
    raw, notes = _read_raw(path, ext, fmt)
    sidecar_path = bids_sidecar(path, "channels.tsv")
    sidecar = read_channels_tsv(sidecar_path) if sidecar_path else None
    keep = _drop_duplicates(list(raw.ch_names), path, sidecar)
    names, types, bads, inferred = _channel_info(raw, sidecar, path, keep, notes["empty_labels"])
    if require_ieeg:
        _require_ieeg(types, inferred, path)
    with _mne_errors(path, fmt):
        data, offsets = _signals_uv(raw, keep, path, types)
    if preload or raw.preload:
        with _mne_errors(path, fmt):
            data = data.read()
    if fmt == "EEGLAB" and raw.preload and not preload:
        logger.warning(
            "%s keeps its samples inside the .set file, which MNE can only read whole: all %d channels "
            "(%.1f MB) are in memory. Save it as .set + .fdt to read it lazily.",
            path,
            len(names),
            data.nbytes / 1e6,
        )
    recording = Recording(
        data=data,
        sfreq=float(raw.info["sfreq"]),
        ch_names=names,
        ch_types=types,
        events=_events(raw, fmt, path),
        line_freq=_line_freq(raw, path, ext),
        bads=[b for b in bads if b in names],
        source=path,
        **{k: v for k, v in bids_entities(path).items() if k != "session"},
        session=bids_entities(path).get("session", ""),
        info={
            **_naming_info(list(raw.ch_names), names, inferred),
            "source_files": _opened_files(raw, path),
            "dc_offsets_uv": _log_offsets(names, offsets, path),
            "blank_labels": [raw.ch_names[i] for i in notes["empty_labels"] if raw.ch_names[i] in names],
            "read_by": notes["read_by"],
        },
    )
    recording.info["warnings"] = notes["warnings"] + plausibility_warnings(recording)
    logger.info(
        "Read %s: %d channels (%d iEEG, %d bad), %.1f s at %g Hz.",
        path.name,
        recording.n_channels,
        len(recording.ieeg_picks()),
        len(recording.bads),
        recording.duration_s,
        recording.sfreq,
    )
    return recording


NPZ_KEYS = {"data": "(n_channels, n_times) samples in µV", "ch_names": "(n_channels,) str", "fs or sfreq": "Hz"}
"""What a ``.npz`` recording must hold; optional: ``soz`` (n_channels,) bool, ``ch_types`` (n_channels,) str."""


def read_npz_recording(path: str | Path) -> Recording:
    """Read a recording saved as a NumPy archive (research exports such as the EZFragility pt01 epoch).

    The archive is read without unpickling (``allow_pickle=False``) and entirely into memory.

    Parameters
    ----------
    path : str or Path
        ``.npz`` with ``data`` (n_channels, n_times) in µV, ``ch_names`` (n_channels,), ``fs`` or
        ``sfreq`` (Hz); optionally ``soz`` (n_channels,) bool and ``ch_types`` (n_channels,) str
        (default: typed from the names as in :mod:`sss_viewer.io._channel_conventions`, every other
        channel ``seeg``: any iEEG type is scored the same way).

    Returns
    -------
    Recording
        With ``soz`` when the archive has it.

    Raises
    ------
    RecordingReadError
        Not a readable archive, or a key is missing or malformed.
    """
    path = Path(path)
    with open(path, "rb") as f:
        start = f.read(8)
    if not start.startswith(b"PK"):
        what = "an empty file" if not start else f"a file starting with {start!r}"
        if start.startswith(b"\x93NUMPY"):
            what = "a single NumPy array (.npy), not an archive of named arrays"
        raise RecordingReadError(
            f"Could not read {path}: not a NumPy archive ({what}); a .npz recording is written with "
            f"numpy.savez holding {', '.join(NPZ_KEYS)}."
        )
    try:
        with np.load(path, allow_pickle=False) as archive:
            arrays = {key: archive[key] for key in archive.files}
    except ValueError as exc:
        if "pickle" in str(exc):
            raise RecordingReadError(
                f"Could not read {path}: an array in the archive holds Python objects, which are not read "
                "(unsafe); save names and types as string arrays (numpy.savez with dtype str)."
            ) from None
        raise RecordingReadError(f"Could not read {path} as a NumPy archive: {exc}") from exc
    except (OSError, EOFError, KeyError, zipfile.BadZipFile) as exc:
        raise RecordingReadError(f"Could not read {path} as a NumPy archive: {exc}") from exc
    rate_key = "sfreq" if "sfreq" in arrays else "fs"
    missing = [k for k in ("data", "ch_names", rate_key) if k not in arrays]
    if missing:
        need = "; ".join(f"{k}: {v}" for k, v in NPZ_KEYS.items())
        raise RecordingReadError(f"{path} lacks {missing}; a recording archive needs {need}. It has {sorted(arrays)}.")
    data = arrays["data"]
    if data.ndim != 2 or not np.issubdtype(data.dtype, np.number):
        raise RecordingReadError(
            f"{path}: 'data' must be a numeric (n_channels, n_times) array; got {data.dtype} {data.shape}."
        )
    all_names = [str(n) for n in arrays["ch_names"]]
    for key in ("ch_names", "ch_types", "soz"):
        if key in arrays and np.shape(arrays[key]) != (data.shape[0],):
            raise RecordingReadError(
                f"{path}: '{key}' must have shape ({data.shape[0]},), one entry per row of 'data'; got {np.shape(arrays[key])}."
            )
    keep = _drop_duplicates(all_names, path)
    names = [all_names[i] for i in keep]
    given = [str(t).lower() for t in arrays["ch_types"]] if "ch_types" in arrays else ["eeg"] * len(all_names)
    if "ch_types" not in arrays:
        logger.info("%s has no ch_types; its channels are typed from their names (others: seeg).", path.name)
    resolved = _resolve_types(names, [given[i] for i in keep], [False] * len(names), path)
    try:
        sfreq = float(np.asarray(arrays[rate_key]).reshape(-1)[0])
    except (ValueError, TypeError, IndexError):
        raise RecordingReadError(f"{path}: '{rate_key}' must be one number of Hz; got {arrays[rate_key]!r}.") from None
    _check_rate(path, "a NumPy archive", sfreq, f" ('{rate_key}')")
    samples, offsets = _float32_without_offsets(data[keep], resolved.types)
    try:
        recording = Recording(
            data=samples,
            sfreq=sfreq,
            ch_names=names,
            ch_types=resolved.types,
            soz=arrays["soz"][keep] if "soz" in arrays else None,
            source=path,
            info={
                **_naming_info(all_names, names, resolved.inferred),
                "source_files": [str(path.absolute())],
                "dc_offsets_uv": _log_offsets(names, offsets, path),
            },
            **{k: v for k, v in bids_entities(path).items() if k != "session"},
        )
    except ValueError as exc:
        raise RecordingReadError(f"{path}: {exc}") from exc
    recording.info["warnings"] = plausibility_warnings(recording)
    return recording


def _float32_without_offsets(data: np.ndarray, types: list[str]) -> tuple[np.ndarray, np.ndarray]:
    """``data`` as float32, each non-stim channel's level above ``OFFSET_LIMIT_UV`` removed in float64 first.

    Parameters
    ----------
    data : ndarray, shape (n_channels, n_times), any numeric dtype
    types : list of str, length n_channels

    Returns
    -------
    samples : ndarray, shape (n_channels, n_times), float32
    offsets : ndarray, shape (n_channels,), float64
    """
    offsets = dc_offsets(array_levels(data)) * (np.asarray(types) != "stim")
    samples = np.ascontiguousarray(data, dtype=np.float32)
    for i in np.flatnonzero(offsets):
        samples[i] = np.asarray(data[i], dtype=np.float64) - offsets[i]
    return samples, offsets


PLAUSIBILITY_SECONDS = 10.0
"""Seconds (from the middle of the recording) of at most ``PLAUSIBILITY_CHANNELS`` channels looked at."""
PLAUSIBILITY_CHANNELS = 8
_LINE_PEAK_RATIO = 10.0
"""How far (×) a narrow spectral peak must stand above its ±5 Hz surroundings to count as mains hum."""


def _narrow_peak(freqs: np.ndarray, psd: np.ndarray, f: float) -> float:
    """How many times the spectrum at ``f`` (±0.6 Hz) exceeds its median over ``f`` ± 1.5..5 Hz (0 when out of band)."""
    near = np.abs(freqs - f)
    if f + 5 > freqs[-1] or not (near <= 0.6).any():
        return 0.0
    around = psd[(near >= 1.5) & (near <= 5)]
    base = np.median(around) if len(around) else 0.0
    return float(psd[near <= 0.6].max() / base) if base > 0 else 0.0


def plausibility_warnings(recording: Recording) -> list[str]:
    """Cheap checks that a self-consistent file states its rate and sample format truly; warnings, never errors.

    A few seconds (``PLAUSIBILITY_SECONDS``) of a few channels (``PLAUSIBILITY_CHANNELS``) are read:

    * mains hum: when the median channel's spectrum has a narrow peak at 25/30 Hz or 100/120 Hz but
      none at 50/60 Hz, the stated rate is probably off by 2× (the hum is where the rate puts it);
    * sample format: many values that are not finite, subnormal-small or astronomically large mean
      integer samples read as floats (or the reverse).

    Each warning is logged and returned (``read_recording`` keeps them in ``info["warnings"]`` for the viewer).
    """
    from scipy.signal import welch

    sfreq, n_times = recording.sfreq, recording.n_times
    picks = recording.ieeg_picks()
    if not len(picks):
        picks = np.array([i for i, t in enumerate(recording.ch_types) if t != "stim"], dtype=int)
    if not len(picks):
        return []
    picks = picks[np.linspace(0, len(picks) - 1, min(len(picks), PLAUSIBILITY_CHANNELS)).round().astype(int)]
    length = min(n_times, int(PLAUSIBILITY_SECONDS * sfreq))
    start = (n_times - length) // 2
    try:
        with np.errstate(all="ignore"), recorded_warnings() as caught:
            data = np.asarray(recording.get_data(np.unique(picks), start, start + length), dtype=np.float64)
        for w in caught:  # NaN/overflow in a misread file is what is looked for; anything else is said
            if not issubclass(w.category, RuntimeWarning):
                logger.warning("%s: %s", recording.label, w.message)
    except Exception as exc:  # noqa: BLE001 - the check is advisory; reading errors surface when scored
        logger.debug("%s: plausibility check skipped: %s", recording.label, exc)
        return []
    name = recording.source.name if recording.source is not None else recording.label
    warnings_ = []
    finite = np.isfinite(data)
    data = np.where(finite, data, 0.0)
    magnitude = np.abs(data)
    odd = (~finite) | ((magnitude > 0) & (magnitude < 1e-20)) | (magnitude > 1e12)
    if odd.mean() > 0.01:
        warnings_.append(
            f"{name}: {odd.mean():.0%} of the samples checked are not finite, subnormal-small or above 1e12 µV: "
            "the file's sample format is probably misstated (integers read as floats or the reverse)."
        )
    nperseg = int(2 * sfreq)
    if length >= 2 * nperseg and sfreq >= 60 and finite.all():
        freqs, psd = welch(data - data.mean(axis=1, keepdims=True), fs=sfreq, nperseg=nperseg, axis=1)
        median = np.median(psd, axis=0)
        lines = (recording.line_freq,) if recording.line_freq in (50.0, 60.0) else (50.0, 60.0)
        if not any(_narrow_peak(freqs, median, f) >= _LINE_PEAK_RATIO for f in lines):
            for line in lines:
                for factor, what in ((0.5, "half"), (2.0, "twice")):
                    f = line * factor
                    if _narrow_peak(freqs, median, f) >= _LINE_PEAK_RATIO:
                        true_rate = sfreq / factor
                        warnings_.append(
                            f"{name}: a narrow peak at {f:g} Hz and none at {line:g} Hz: if it is {line:g} Hz mains hum, "
                            f"the stated rate {sfreq:g} Hz is {what} the true rate (probably {true_rate:g} Hz); "
                            "check the file's header."
                        )
                        break
                if warnings_ and "narrow peak" in warnings_[-1]:
                    break
    for message in warnings_:
        logger.warning(message)
    return warnings_


_MULTIPLEXED_DTYPES = {"short": "<i2", "int": "<i4", "single": "<f4"}
"""BrainVision ``BinaryFormat`` → the dtype MNE reads it as (``mne.io.brainvision``)."""


@dataclass(frozen=True)
class MultiplexedSamples:
    """Where a lazily read BrainVision recording's samples lie in its data file, to be converted elsewhere.

    Sample ``t`` of channel ``j`` is ``float32((float64(file[t, columns[j]]) * cals[j]) * scale[j] - offset[j])``
    with ``file`` the data file as a ``(n_times, n_file_channels)`` array of ``dtype`` from ``byte_offset``:
    the operations, in this order and in float64, that ``Recording.get_data`` (MNE's calibration, then
    the µV scale and the level of :class:`~sss_viewer.io._lazy.LazySignals`) performs, so a reader that
    repeats them gets the same float32 values.

    Parameters
    ----------
    path : Path
        The data file (``.eeg``).
    dtype : numpy.dtype
        Little-endian int16, int32 or float32.
    n_file_channels : int
        Channels interleaved in each frame of the file.
    byte_offset : int
        Byte of the recording's first sample.
    columns : ndarray, shape (n_channels,), int64
        The file column of each of the recording's channels.
    cals, scale, offset : ndarray, shape (n_channels,), float64
    """

    path: Path
    dtype: np.dtype
    n_file_channels: int
    byte_offset: int
    columns: np.ndarray
    cals: np.ndarray
    scale: np.ndarray
    offset: np.ndarray

    def read_frames(self, start: int, stop: int) -> np.ndarray:
        """The raw frames ``[start, stop)`` of every file channel, shape (stop - start, n_file_channels), ``dtype``."""
        count = (stop - start) * self.n_file_channels
        at = self.byte_offset + start * self.n_file_channels * self.dtype.itemsize
        frames = np.fromfile(self.path, dtype=self.dtype, count=count, offset=at)
        if frames.size != count:
            raise OSError(f"{self.path} ends before sample {stop}: expected {count} values from byte {at}.")
        return frames.reshape(stop - start, self.n_file_channels)


def multiplexed_samples(recording: Recording) -> MultiplexedSamples | None:
    """The file layout of a lazily read, multiplexed binary BrainVision recording, or None for anything else.

    None (read through ``get_data``) unless MNE would read the samples itself with a plain
    calibration: one data file, ``DataOrientation=MULTIPLEXED``, ``BinaryFormat`` INT_16/INT_32/
    IEEE_FLOAT_32, no projector or compensation.

    Parameters
    ----------
    recording : Recording

    Returns
    -------
    MultiplexedSamples or None
    """
    signals = recording.data
    raw = getattr(signals, "_raw", None)
    if not isinstance(signals, LazySignals) or type(raw).__name__ != "RawBrainVision" or raw.preload:
        return None
    extras = raw._raw_extras
    if len(extras) != 1 or len(raw.filenames) != 1 or extras[0].get("order") == "C":
        return None
    fmt = extras[0].get("fmt")
    if not isinstance(fmt, str) or fmt not in _MULTIPLEXED_DTYPES:
        return None
    if raw._projector is not None or getattr(raw, "_comp", None) is not None:
        return None
    dtype = np.dtype(_MULTIPLEXED_DTYPES[fmt])
    n_file = int(extras[0]["orig_nchan"])
    picks = signals._picks
    return MultiplexedSamples(
        path=Path(raw.filenames[0]),
        dtype=dtype,
        n_file_channels=n_file,
        byte_offset=int(raw._first_samps[0]) * n_file * dtype.itemsize,
        columns=np.asarray(raw._read_picks[0][picks], dtype=np.int64),
        cals=np.asarray(raw._cals.ravel()[picks], dtype=np.float64),
        scale=np.asarray(signals._scale, dtype=np.float64),
        offset=np.asarray(signals._offset, dtype=np.float64),
    )

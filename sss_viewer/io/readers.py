"""Read one recording file (EDF/BDF, BrainVision, FIF, EEGLAB) into a ``Recording`` through MNE.

Files are opened read-only with ``mne.io.read_raw(..., preload=False)`` where the format allows it
and converted to float32 µV in time blocks, so no float64 copy of the whole recording is made.
A BIDS ``_channels.tsv`` beside the file (``…_ieeg.vhdr`` → ``…_channels.tsv``) supplies channel
types and ``status``; a BIDS ``_ieeg.json`` supplies the mains frequency when the file lacks it.
Types the file does not state are inferred from the names, and ``$`` duplicates are dropped, by
:mod:`sss_viewer.io.channel_conventions` (the same rules for every format).
"""

from __future__ import annotations

import json
import logging
import re
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import pandas as pd

from sss_viewer.io.channel_conventions import TYPE_ALIASES, duplicate_channels, resolve_channel_types
from sss_viewer.io.lazy import LazySignals
from sss_viewer.recording import IEEG_CH_TYPES, Event, Recording

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

_TRUNCATION_HINTS = ("does not match the file size", "Invalid tag with only")
"""Fragments of MNE warnings that mean the file is cut short (EDF/BDF, FIF)."""

_BRAINVISION_WIDTH = {"INT_16": 2, "UINT_16": 2, "INT_32": 4, "IEEE_FLOAT_32": 4}
"""Bytes per value of BrainVision binary formats."""


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


def _sidecar(path: Path, ext: str, suffix: str) -> Path | None:
    """BIDS sidecar of ``path`` with ``suffix`` (``"channels.tsv"``), or None when absent or not BIDS-named."""
    stem = path.name[: -len(ext)]
    if "_" not in stem:
        return None
    candidate = path.with_name(stem.rsplit("_", 1)[0] + "_" + suffix)
    return candidate if candidate.is_file() else None


@contextmanager
def _mne_errors(path: Path, fmt: str) -> Iterator[None]:
    """Turn MNE failures into RecordingReadError and MNE's warnings into log records.

    Warnings are recorded only inside this block (nothing is silenced globally); those that
    reveal a truncated file raise instead.
    """
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            yield
        except MemoryError:
            raise
        except RecordingReadError:
            raise
        except Exception as exc:  # MNE raises many types for malformed files
            raise RecordingReadError(f"Could not read {path} as {fmt}: {exc}") from exc
    for w in caught:
        message = str(w.message)
        if any(hint in message for hint in _TRUNCATION_HINTS):
            raise RecordingReadError(f"Could not read {path} as {fmt}: the file looks truncated ({message})")
        logger.warning("%s: %s", path.name, message)


def _check_brainvision_size(vhdr: Path) -> None:
    """Raise if a binary BrainVision data file's size is not whole samples of all channels.

    MNE infers the number of samples from the data file's size, so a truncated ``.eeg`` would
    otherwise load silently as a shorter recording.
    """
    fields = {}
    for line in vhdr.read_text(encoding="utf-8", errors="replace").splitlines():
        key, sep, value = line.partition("=")
        if sep and key.strip() in ("DataFile", "BinaryFormat", "NumberOfChannels", "DataPoints", "DataFormat"):
            fields[key.strip()] = value.strip()
    if fields.get("DataFormat", "BINARY").upper() != "BINARY" or "DataFile" not in fields:
        return
    width = _BRAINVISION_WIDTH.get(fields.get("BinaryFormat", "").upper())
    data_file = vhdr.parent / fields["DataFile"]
    if width is None or not data_file.is_file() or not fields.get("NumberOfChannels", "").isdigit():
        return
    frame = width * int(fields["NumberOfChannels"])
    size = data_file.stat().st_size
    expected = int(fields["DataPoints"]) * frame if fields.get("DataPoints", "").isdigit() else None
    if size % frame or (expected is not None and size != expected):
        raise RecordingReadError(
            f"Could not read {vhdr} as BrainVision: the data file {data_file.name} looks truncated "
            f"({size} bytes is not {'DataPoints × ' if expected else ''}{frame}-byte frames)."
        )


def _read_raw(path: Path, fmt: str, preload: bool):
    """Open ``path`` with MNE (read-only); see ``_mne_errors`` for error and warning handling."""
    import mne

    with _mne_errors(path, fmt):
        raw = mne.io.read_raw(path, preload=preload, verbose="warning")
    if fmt == "BrainVision":
        _check_brainvision_size(path)
    return raw


def _read_channels_tsv(path: Path) -> pd.DataFrame:
    """Read a BIDS ``_channels.tsv`` with ``name`` (and usually ``type``, ``status``) columns."""
    table = pd.read_csv(path, sep="\t", dtype=str, keep_default_na=False)
    if "name" not in table.columns:
        raise RecordingReadError(f"{path} has no 'name' column.")
    return table.set_index("name")


def _channel_info(
    raw, sidecar: pd.DataFrame | None, path: Path, keep: np.ndarray
) -> tuple[list[str], list[str], list[str], dict]:
    """Names, lower-case MNE types, bad channels and types inferred from names, of the kept channels.

    A sidecar's ``type`` wins; other channels go through
    :func:`sss_viewer.io.channel_conventions.resolve_channel_types`.

    Parameters
    ----------
    keep : ndarray, shape (n_kept,), int
        Indices of the file's channels to describe (``$`` duplicates left out).

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
    resolved = _resolve_types(names, types, stated, path)
    return names, resolved.types, [n for n in names if n in bads], resolved.inferred


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
            path.name, len(duplicates), ", ".join(n for n in names if n in duplicates),
        )  # fmt: skip
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


def _signals_uv(raw, picks: np.ndarray, path: Path, types: list[str]) -> LazySignals:
    """The picked channels as a lazy float32 view: volts → µV; stim and other units as stored.

    Parameters
    ----------
    types : list of str, length n_picks
        The resolved types of the picked channels (a trigger typed ``stim`` by its name is not a voltage).

    Returns
    -------
    data : LazySignals, shape (n_picks, n_times)
    """
    from mne.io.constants import FIFF

    volts = [raw.info["chs"][p]["unit"] == FIFF.FIFF_UNIT_V and t != "stim" for p, t in zip(picks, types, strict=True)]
    return LazySignals(raw, picks, np.where(volts, 1e6, 1.0), source=path)


def _events(raw, fmt: str) -> list[Event]:
    """Annotations as events, onsets in seconds from the first sample."""
    annotations = raw.annotations
    events = []
    for onset, duration, description in zip(annotations.onset, annotations.duration, annotations.description):
        text = str(description)
        if fmt == "BrainVision" and text.startswith("Comment/"):
            text = text[len("Comment/") :]
        events.append(Event(float(onset - raw.first_time), float(duration), text))
    return events


def _line_freq(raw, path: Path, ext: str) -> float | None:
    """Mains frequency from the file or a BIDS ``_ieeg.json`` / ``_eeg.json`` sidecar."""
    line_freq = raw.info.get("line_freq")
    if line_freq:
        return float(line_freq)
    for suffix in ("ieeg.json", "eeg.json"):
        sidecar = _sidecar(path, ext, suffix)
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


def bids_entities(path: Path) -> dict[str, str]:
    """``subject``, ``session`` and ``run`` from a BIDS-style file name (``sub-pt01_ses-x_..._run-01_ieeg.vhdr``).

    Absent keys are left out.
    """
    out = {}
    for key, entity in (("subject", "sub"), ("session", "ses"), ("run", "run")):
        match = re.search(rf"(?:^|_){entity}-([A-Za-z0-9]+)", path.name)
        if match:
            out[key] = match.group(1)
    return out


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
        :func:`sss_viewer.io.channel_conventions.resolve_channel_types`; ``info["inferred_types"]``
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
    raw = _read_raw(path, fmt, preload)
    sidecar_path = _sidecar(path, ext, "channels.tsv")
    sidecar = _read_channels_tsv(sidecar_path) if sidecar_path else None
    keep = _drop_duplicates(list(raw.ch_names), path, sidecar)
    names, types, bads, inferred = _channel_info(raw, sidecar, path, keep)
    if require_ieeg:
        _require_ieeg(types, inferred, path)
    data = _signals_uv(raw, keep, path, types)
    if preload or raw.preload:
        with _mne_errors(path, fmt):
            data = data.read()
    if fmt == "EEGLAB" and raw.preload and not preload:
        logger.warning(
            "%s keeps its samples inside the .set file, which MNE can only read whole: all %d channels "
            "(%.1f MB) are in memory. Save it as .set + .fdt to read it lazily.",
            path, len(names), data.nbytes / 1e6,
        )  # fmt: skip
    recording = Recording(
        data=data,
        sfreq=float(raw.info["sfreq"]),
        ch_names=names,
        ch_types=types,
        events=_events(raw, fmt),
        line_freq=_line_freq(raw, path, ext),
        bads=[b for b in bads if b in names],
        source=path,
        **{k: v for k, v in bids_entities(path).items() if k != "session"},
        session=bids_entities(path).get("session", ""),
        info=_naming_info(list(raw.ch_names), names, inferred),
    )
    logger.info(
        "Read %s: %d channels (%d iEEG, %d bad), %.1f s at %g Hz.",
        path.name, recording.n_channels, len(recording.ieeg_picks()), len(recording.bads),
        recording.duration_s, recording.sfreq,
    )  # fmt: skip
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
        (default: typed from the names as in :mod:`sss_viewer.io.channel_conventions`, every other
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
    try:
        with np.load(path, allow_pickle=False) as archive:
            arrays = {key: archive[key] for key in archive.files}
    except (OSError, ValueError, EOFError) as exc:
        raise RecordingReadError(f"Could not read {path} as a NumPy archive: {exc}") from exc
    rate_key = "sfreq" if "sfreq" in arrays else "fs"
    missing = [k for k in ("data", "ch_names", rate_key) if k not in arrays]
    if missing:
        need = "; ".join(f"{k}: {v}" for k, v in NPZ_KEYS.items())
        raise RecordingReadError(f"{path} lacks {missing}; a recording archive needs {need}. It has {sorted(arrays)}.")
    data = arrays["data"]
    if data.ndim != 2 or not np.issubdtype(data.dtype, np.number):
        raise RecordingReadError(f"{path}: 'data' must be a numeric (n_channels, n_times) array; got {data.dtype} {data.shape}.")
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
        return Recording(
            data=np.ascontiguousarray(data[keep], dtype=np.float32),
            sfreq=float(np.asarray(arrays[rate_key]).reshape(-1)[0]),
            ch_names=names,
            ch_types=resolved.types,
            soz=arrays["soz"][keep] if "soz" in arrays else None,
            source=path,
            info=_naming_info(all_names, names, resolved.inferred),
            **{k: v for k, v in bids_entities(path).items() if k != "session"},
        )
    except ValueError as exc:
        raise RecordingReadError(f"{path}: {exc}") from exc

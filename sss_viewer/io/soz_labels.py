"""Seizure-onset-zone (SOZ) labels: the ds003029 clinical spreadsheet, user tables, channel matching.

Two sources of SOZ labels:

* the dataset's ``sourcedata/clinical_data_summary.xlsx``: one row per patient, with ``dataset_id``
  (e.g. ``pt1`` for BIDS subject ``pt01``, ``ummc_001`` for ``ummc001``) and ``soz_contacts`` in
  clinical shorthand (``AD1-4, ATT1,2``; ``TT1-6; AST1-2, mst1-2``), plus outcome columns;
* a user table with one row per channel: ``subject, channel, soz`` (TSV or CSV by extension).

Contact shorthand (:func:`expand_contacts`)
-------------------------------------------
Tokens are separated by ``,`` ``;`` ``:`` ``/``, whitespace or newlines. A token is

* ``NAME<n>`` -- one contact (``ATT1``, ``A'1``);
* ``NAME<a>-<b>`` or ``NAME<a>-NAME<b>`` -- contacts a..b of electrode NAME (``AD1-4``, ``X1-X4``);
* ``<n>`` or ``<a>-<b>`` -- more contacts of the electrode named last (``ATT1,2`` -> ATT1, ATT2;
  ``LAT8-10, 13-15``);
* any other name without a range (``FPZ``, ``PT3'``) -- kept literally.

``NAME 1-4`` (a space between name and number) reads as ``NAME1-4``. Zero padding of a range is kept
(``ATT01-03`` -> ATT01, ATT02, ATT03). Empty text, NaN, ``n/a``, ``none``, ``unknown``, ``?`` mean
*unknown* and give no contacts.

Channel matching (:func:`match_soz`)
------------------------------------
A SOZ name matches a channel when both are equal after removing vendor prefixes and reference
suffixes (``POL G11``, ``EEG G11-Ref`` and ``G11 Ref`` read as ``G11``; see
:func:`sss_viewer.io._channel_conventions.display_name`), removing whitespace, ignoring case,
and dropping leading zeros of numbers (``att 01`` == ``ATT1``). Apostrophes of SEEG names are
kept literally (``A'1`` matches ``A'1``, never ``A1``); typographic apostrophes (``’``) count as
``'``. Nothing fuzzier: ``PT3`` does not match ``PT3'`` and ``G11`` does not match ``$G11``.

This is the one matching rule of the project: ``train``, ``evaluate``, ``score --labels``, the
cohort ``labels.tsv`` and a BIDS dataset's labels (the viewer's included) all label channels
through :func:`match_soz` (tables through :func:`sss_viewer.io.cohort.soz_from_table`). A SOZ name that
matches two channels of one recording (``LPT8`` with channels ``LPT08`` and ``LPT8``) is an error
naming the labels file and the channels, never a silent pick.
"""

from __future__ import annotations

import logging
import re
import zipfile
from collections.abc import Iterable, Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from sss_viewer._lazy import require
from sss_viewer.io._channel_names import APOSTROPHES, channel_key

logger = logging.getLogger(__name__)

SUMMARY_REQUIRED = ("dataset_id", "soz_contacts")
#: Optional spreadsheet columns carried into :func:`read_clinical_summary`'s result, with their new names.
SUMMARY_OPTIONAL = {
    "outcome": "outcome",
    "engel_score": "engel_score",
    "ilae_score": "ilae_score",
    "clinical_center": "centre",
    "surgery_type": "surgery_type",
}
SOZ_TABLE_COLUMNS = ("subject", "channel", "soz")
SOZ_TABLE_SEPARATORS = {".tsv": "\t", ".txt": "\t", ".csv": ","}

_UNKNOWN = {"", "nan", "n/a", "na", "none", "unknown", "?", "-"}
_SEPARATORS = re.compile(r"[,;:/\s]+")
_NAME = r"[A-Za-z$][A-Za-z$'_.]*"
_SINGLE = re.compile(rf"^(?P<name>{_NAME})(?P<num>\d+)$")
_RANGE = re.compile(rf"^(?P<name>{_NAME})(?P<start>\d+)-(?P<name2>{_NAME})?(?P<stop>\d+)$")
_CONTINUATION = re.compile(r"^(?P<start>\d+)(?:-(?P<stop>\d+))?$")
_LITERAL = re.compile(r"^[A-Za-z$'][A-Za-z0-9$'_.]*$")
_SOZ_TRUE = {"1", "true"}
_SOZ_FALSE = {"0", "false"}


# ---------------------------------------------------------------------------- contact shorthand


def _numbered(name: str, start: str, stop: str | None, text: str, token: str) -> list[str]:
    """``name`` + each number from ``start`` to ``stop`` (inclusive), keeping ``start``'s zero padding."""
    first = int(start)
    last = first if stop is None else int(stop)
    if last < first:
        raise ValueError(
            f"Cannot parse SOZ contacts {text!r}: reversed range {token!r} (expected low-high, e.g. AD1-4)."
        )
    width = len(start) if start.startswith("0") and len(start) > 1 else 0
    return [f"{name}{n:0{width}d}" for n in range(first, last + 1)]


def _tokens(text: str) -> list[str]:
    """Split shorthand into tokens, joining ``NAME 1-4`` and ``X1 - X4`` first."""
    text = text.translate(APOSTROPHES).strip()
    text = re.sub(r"\s*-\s*", "-", text)
    text = re.sub(rf"(?<![A-Za-z0-9$'_.])({_NAME})[ \t]+(?=\d)", r"\1", text)
    return [t for t in _SEPARATORS.split(text) if t]


def _expand_token(token: str, prefix: str | None, text: str) -> tuple[list[str], str | None]:
    """Contacts of one token and the electrode name that later bare numbers continue."""
    if match := _SINGLE.match(token):
        return [token], match["name"]
    if match := _RANGE.match(token):
        name, name2 = match["name"], match["name2"]
        if name2 is not None and name2.lower() != name.lower():
            raise ValueError(f"Cannot parse SOZ contacts {text!r}: range {token!r} spans two electrodes.")
        return _numbered(name, match["start"], match["stop"], text, token), name
    if match := _CONTINUATION.match(token):
        if prefix is None:
            raise ValueError(f"Cannot parse SOZ contacts {text!r}: {token!r} continues no electrode name before it.")
        return _numbered(prefix, match["start"], match["stop"], text, token), prefix
    if _LITERAL.match(token):
        return [token], None
    raise ValueError(
        f"Cannot parse SOZ contacts {text!r}: token {token!r} is not a contact (NAME1), a range (NAME1-4, "
        "NAME1-NAME4) or a continuation (2, 3-4)."
    )


def expand_contacts(text: str) -> list[str]:
    """Expand clinical contact shorthand into contact names.

    Parameters
    ----------
    text : str
        E.g. ``"AD1-4, ATT1,2"`` or ``"TT1-6; AST1-2, mst1-2"``; see the module docstring.

    Returns
    -------
    contacts : list of str
        In the order written, spelled as written, duplicates (as :func:`match_soz` sees them)
        removed. Empty when the text says *unknown* (empty, ``n/a``, ``none``, ``?``).

    Raises
    ------
    ValueError
        A token cannot be read (a reversed range ``AD4-1``, a range across two electrodes, a
        continuation with no electrode before it, stray symbols); the message names the text.
    """
    if not isinstance(text, str):
        raise TypeError(f"SOZ contacts must be text, got {type(text).__name__} {text!r}.")
    if text.strip().lower() in _UNKNOWN:
        return []
    contacts: list[str] = []
    seen: set[str] = set()
    prefix = None
    for token in _tokens(text):
        names, prefix = _expand_token(token, prefix, text)
        for name in names:
            key = channel_key(name)
            if key not in seen:
                seen.add(key)
                contacts.append(name)
    return contacts


# ---------------------------------------------------------------------------- channel matching


def match_soz(
    ch_names: Sequence[str], soz_names: Iterable[str], *, source: str | Path | None = None, recording: str | None = None
) -> tuple[np.ndarray, list[str]]:
    """Mark the channels named as SOZ.

    Parameters
    ----------
    ch_names : sequence of str, length n_channels
        The recording's channel names.
    soz_names : iterable of str
        SOZ contact names, e.g. from :func:`expand_contacts`.
    source : str or Path, optional
        Where the names come from (the labels file), for the error message.
    recording : str, optional
        The recording's label, for the error message.

    Returns
    -------
    mask : ndarray of bool, shape (n_channels,)
        True where a channel matches a SOZ name (see the module docstring for what matches).
    unmatched : list of str
        The SOZ names that match no channel, in the order given, without duplicates; the caller
        should report them.

    Raises
    ------
    ValueError
        A SOZ name matches several channels (``lpt8`` with channels ``LPT08`` and ``LPT8``): the
        message names ``source``, the name and the channels.
    """
    by_key: dict[str, list[int]] = {}
    for index, name in enumerate(ch_names):
        by_key.setdefault(channel_key(name), []).append(index)
    mask = np.zeros(len(ch_names), dtype=bool)
    unmatched: list[str] = []
    for name in soz_names:
        indices = by_key.get(channel_key(name))
        if indices is None:
            if name not in unmatched:
                unmatched.append(name)
            continue
        if len(indices) > 1:
            raise ValueError(_ambiguous_message(name, [ch_names[i] for i in indices], source, recording))
        mask[indices] = True
    return mask, unmatched


def _ambiguous_message(name: str, channels: list[str], source: str | Path | None, recording: str | None) -> str:
    where = f" of {recording}" if recording else ""
    origin = f"{source}: " if source else ""
    return (
        f"{origin}SOZ label {name!r} is ambiguous: it matches {len(channels)} channels{where} "
        f"({', '.join(channels)}), which are one name once case, spaces, zero padding and vendor prefixes are "
        "ignored; rename the recording's channels so that they differ."
    )


# ---------------------------------------------------------------------------- subject ids


def _id_parts(label: str) -> tuple[str, int | None, str]:
    """``(letters, number, compact)`` of an id: ``"ummc_001"`` -> ``("ummc", 1, "ummc001")``."""
    label = label.strip().lower()
    compact = re.sub(r"[\s_\-]+", "", label.removeprefix("sub-"))
    match = re.fullmatch(r"([a-z]*)(\d+)", compact)
    if match is None:
        return compact, None, compact
    return match[1], int(match[2]), compact


def normalise_subject_id(dataset_id: str, subjects: Iterable[str]) -> str | None:
    """The BIDS subject label that a spreadsheet id refers to.

    Parameters
    ----------
    dataset_id : str
        An id as written in the spreadsheet (``pt1``, ``ummc_001``, ``JH101``).
    subjects : iterable of str
        BIDS subject labels (``pt01``, ``ummc001``; a ``sub-`` prefix is allowed).

    Returns
    -------
    subject : str or None
        The matching label as given in ``subjects``; None when none matches. Case and
        underscores are ignored and the numbers are compared as integers (``pt1`` -> ``pt01``).

    Raises
    ------
    ValueError
        Several subjects match (e.g. both ``pt1`` and ``pt01`` are listed) and none exactly.
    """
    letters, number, compact = _id_parts(str(dataset_id))
    candidates = []
    for subject in subjects:
        s_letters, s_number, s_compact = _id_parts(subject)
        if s_compact == compact:
            return subject
        if number is not None and (s_letters, s_number) == (letters, number):
            candidates.append(subject)
    if len(candidates) > 1:
        raise ValueError(f"Spreadsheet id {dataset_id!r} matches several subjects: {candidates}.")
    return candidates[0] if candidates else None


# ---------------------------------------------------------------------------- clinical spreadsheet


def _read_excel(path: Path) -> pd.DataFrame:
    """The first sheet of ``path``, with a clear error when it is missing or not a workbook."""
    if not path.is_file():
        raise FileNotFoundError(f"Clinical summary not found: {path}")
    require("openpyxl", extra="excel", feature=f"Reading the clinical spreadsheet {path}")
    try:
        table = pd.read_excel(path, sheet_name=0, dtype={"dataset_id": str, "soz_contacts": str})
    except (ValueError, OSError, KeyError, zipfile.BadZipFile) as exc:
        raise ValueError(f"{path} could not be read as an Excel workbook (.xlsx): {exc}") from exc
    table.columns = [str(c).strip() for c in table.columns]
    missing = [c for c in SUMMARY_REQUIRED if c not in table.columns]
    if missing:
        raise ValueError(f"{path} lacks columns {missing}; it has {list(table.columns)}.")
    return table


def _expand_cell(value: object, path: Path, line: int, dataset_id: str) -> list[str]:
    """Contacts of one ``soz_contacts`` cell; NaN or empty -> []."""
    if value is None or (isinstance(value, float) and np.isnan(value)):
        return []
    try:
        return expand_contacts(str(value))
    except ValueError as exc:
        raise ValueError(f"{path}, row {line} (dataset_id {dataset_id!r}): {exc}") from exc


def _subject_labels(ids: pd.Series, subjects: Iterable[str] | None, path: Path) -> pd.Series:
    """BIDS labels for the spreadsheet ids (NaN where none matches); raw ids when ``subjects`` is None."""
    if subjects is None:
        return ids
    subjects = list(subjects)
    try:
        labels = ids.map(lambda i: normalise_subject_id(i, subjects))
    except ValueError as exc:
        raise ValueError(f"{path}: {exc}") from exc
    unmatched = ids[labels.isna()].tolist()
    if unmatched:
        logger.info("%s: %d ids match no given subject and are left out: %s", path.name, len(unmatched), unmatched)
    duplicated = labels[labels.notna() & labels.duplicated(keep=False)]
    if not duplicated.empty:
        pairs = sorted(zip(duplicated, ids[duplicated.index], strict=True))
        raise ValueError(f"{path}: several rows map to the same subject: {pairs}.")
    return labels


def read_clinical_summary(path: str | Path, subjects: Iterable[str] | None = None) -> pd.DataFrame:
    """Read the per-patient clinical spreadsheet of ds003029 (``clinical_data_summary.xlsx``).

    Parameters
    ----------
    path : str or Path
        An .xlsx whose first sheet has one row per patient with ``dataset_id`` and
        ``soz_contacts`` columns (others optional).
    subjects : iterable of str, optional
        BIDS subject labels; when given, ids are mapped to them with :func:`normalise_subject_id`
        and rows matching no subject are left out (logged).

    Returns
    -------
    summary : DataFrame, shape (n_patients, 3 + n_optional)
        ``subject`` (str), ``dataset_id`` (str), ``soz_contacts`` (list of str, empty when
        unknown), then whichever of ``outcome``, ``engel_score``, ``ilae_score``, ``centre`` (from
        ``clinical_center``) and ``surgery_type`` the sheet has.

    Raises
    ------
    FileNotFoundError
        ``path`` does not exist.
    ValueError
        The file is not a readable workbook, lacks ``dataset_id``/``soz_contacts``, has a row
        without an id, has shorthand that cannot be parsed (the row is named), or maps two rows
        to one subject.
    MissingExtraError
        ``openpyxl`` is not installed (the ``excel`` extra).
    """
    path = Path(path)
    table = _read_excel(path)
    ids = table["dataset_id"].astype("string").str.strip()
    no_id = ids.isna() | (ids == "")
    if no_id.any():
        lines = (np.flatnonzero(no_id.to_numpy()) + 2).tolist()
        raise ValueError(f"{path}: rows {lines} have no dataset_id.")
    ids = ids.astype(str)
    contacts = [
        _expand_cell(value, path, line, dataset_id)
        for line, (value, dataset_id) in enumerate(zip(table["soz_contacts"], ids, strict=True), start=2)
    ]
    subject = _subject_labels(ids, subjects, path)
    summary = pd.DataFrame({"subject": subject, "dataset_id": ids, "soz_contacts": contacts})
    for column, name in SUMMARY_OPTIONAL.items():
        if column in table.columns:
            summary[name] = table[column]
    return summary[summary["subject"].notna()].reset_index(drop=True)


def _contacts_text(value: object) -> object:
    """A ``soz_contacts`` cell as text: lists are joined with ``", "``."""
    if isinstance(value, (list, tuple)):
        return ", ".join(str(v) for v in value)
    return value


def write_clinical_summary(rows: pd.DataFrame, path: str | Path) -> Path:
    """Write a spreadsheet in the format of ds003029's ``clinical_data_summary.xlsx``.

    Parameters
    ----------
    rows : DataFrame, shape (n_patients, >= 2)
        ``dataset_id`` and ``soz_contacts`` (shorthand text, or lists of names, joined with
        ``", "``), plus any other columns (``engel_score``, ``clinical_center`` ...), written as given.
    path : str or Path
        The .xlsx to write; its folder must exist.

    Returns
    -------
    path : Path
    """
    path = Path(path)
    missing = [c for c in SUMMARY_REQUIRED if c not in rows.columns]
    if missing:
        raise ValueError(f"Cannot write {path}: rows lack columns {missing}; they have {list(rows.columns)}.")
    if path.suffix.lower() != ".xlsx":
        raise ValueError(f"Cannot write {path}: expected a .xlsx file name.")
    order = list(SUMMARY_REQUIRED) + [c for c in rows.columns if c not in SUMMARY_REQUIRED]
    table = rows[order].assign(soz_contacts=rows["soz_contacts"].map(_contacts_text))
    require("openpyxl", extra="excel", feature=f"Writing the clinical spreadsheet {path}")
    table.to_excel(path, index=False, engine="openpyxl")
    return path


# ---------------------------------------------------------------------------- user SOZ table


def _soz_values(values: pd.Series, path: Path) -> pd.Series:
    """``soz`` column as bool; 0/1/true/false (any case) only, else an error naming the lines."""
    lowered = values.str.strip().str.lower()
    bad = ~lowered.isin(_SOZ_TRUE | _SOZ_FALSE)
    if bad.any():
        lines = (np.flatnonzero(bad.to_numpy()) + 2).tolist()
        shown = values[bad].tolist()[:5]
        raise ValueError(f"{path}: soz must be 0, 1, true or false; lines {lines} hold {shown}.")
    return lowered.isin(_SOZ_TRUE)


def read_soz_table(path: str | Path) -> pd.DataFrame:
    """Read a user SOZ table: one row per channel with ``subject``, ``channel``, ``soz``.

    Parameters
    ----------
    path : str or Path
        ``.tsv`` or ``.txt`` (tab-separated) or ``.csv`` (comma-separated), with a header line.

    Returns
    -------
    table : DataFrame, shape (n_rows, 3)
        ``subject`` and ``channel`` (str, stripped), ``soz`` (bool).

    Raises
    ------
    FileNotFoundError
        ``path`` does not exist.
    ValueError
        Unknown extension, missing columns, no rows (a header only), empty subject/channel, a
        ``soz`` value other than 0/1/true/false, or one channel given both values; messages name
        the file and lines.
    """
    path = Path(path)
    separator = SOZ_TABLE_SEPARATORS.get(path.suffix.lower())
    if separator is None:
        raise ValueError(f"{path}: unknown SOZ table extension; expected one of {sorted(SOZ_TABLE_SEPARATORS)}.")
    from sss_viewer.io.tables import read_table

    table = read_table(
        path,
        SOZ_TABLE_COLUMNS,
        what="SOZ table",
        sep=separator,
        na_values=None,
        strip_headers=True,
        allow_no_rows=False,
    )
    table = table[list(SOZ_TABLE_COLUMNS)].apply(lambda column: column.str.strip())
    empty = (table["subject"] == "") | (table["channel"] == "")
    if empty.any():
        lines = (np.flatnonzero(empty.to_numpy()) + 2).tolist()
        raise ValueError(f"{path}: lines {lines} have an empty subject or channel.")
    table["soz"] = _soz_values(table["soz"], path)
    return _check_conflicts(table, path)


def _check_conflicts(table: pd.DataFrame, path: Path) -> pd.DataFrame:
    """Drop repeated rows; a channel labelled both SOZ and not SOZ is an error naming its lines."""
    keys = table["subject"] + "\t" + table["channel"].map(channel_key)
    conflicting = table.groupby(keys)["soz"].transform("nunique") > 1
    if conflicting.any():
        lines = (np.flatnonzero(conflicting.to_numpy()) + 2).tolist()
        raise ValueError(f"{path}: lines {lines} give the same channel both soz values.")
    repeated = keys.duplicated()
    if repeated.any():
        logger.debug("%s: %d repeated rows dropped.", path.name, int(repeated.sum()))
    return table[~repeated].reset_index(drop=True)

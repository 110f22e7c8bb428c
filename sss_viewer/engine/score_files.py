"""The one on-disk format of a recording's scores: what ``score`` writes, what a cohort run writes, what the demo caches.

Two forms of the same :class:`~sss_viewer.engine.inference.RecordingScores`:

* **Exchange** (``score`` and ``score ROOT``, for people and spreadsheets): ``channels.csv`` (the ranking,
  :func:`ranking_table`: ``channel, score``, the model's ``lower, upper`` or the marker's ``value``,
  ``rank``, then ``label`` and ``artifact`` when known, and ``scorer``), the window table and
  ``excluded.csv``; floats to 6 significant digits (:func:`write_csv`); the run's manifest
  :data:`SCORE_MANIFEST` lists the files a run wrote (what ``--overwrite`` may remove).
* **Full precision** (:func:`save_scores` / :func:`read_scores`, ``RecordingScores.save`` / ``.load``):
  every table with its dtypes in ``meta.json``, so a read gives back the same values — the viewer's
  cached demo scores.

Every file is written atomically: a reader never sees half a file.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

from sss_viewer._version import __version__
from sss_viewer.fileio import atomic_write

if TYPE_CHECKING:  # pandas is imported where a table is read: the CLI imports this module at start
    import pandas as pd

logger = logging.getLogger(__name__)

__all__ = [
    "SCORE_MANIFEST",
    "SCORE_TABLES",
    "ranking_columns",
    "ranking_table",
    "read_scores",
    "save_scores",
    "write_csv",
]

SCORE_MANIFEST = "sss-viewer-score.json"
"""What a ``score`` run (one file or a cohort) wrote into its output folder: paths relative to it."""

SCORE_TABLES = {
    "windows": "windows.csv.gz",
    "channels": "channels.csv",
    "excluded": "excluded.csv",
    "heat_windows": "heat_windows.csv.gz",
    "artifacts": "artifacts.csv",
}
"""File of each ``RecordingScores`` table in the full-precision form (the window tables gzipped)."""
_OPTIONAL_TABLES = ("heat_windows", "artifacts")
"""Tables a result may lack (then not written, and None when read back)."""
_TEXT_COLUMNS = ("artifact", "reason")
"""Text columns whose empty cells mean "" (no flag), not a missing value."""
_GZIP = {"method": "gzip", "mtime": 0}
_MODEL = "sss"
"""The registry name of the SSS model among the scorers (``sss_viewer.biomarkers.MODEL_SCORER``)."""


def write_csv(df: pd.DataFrame, path: str | Path) -> None:
    """Write ``df`` as CSV atomically, floats to 6 significant digits (every exchange CSV of ``score``).

    Parameters
    ----------
    df : DataFrame, shape (n_rows, n_columns)
        Written without its index, one line per row after the header.
    path : str or Path
        The CSV file; its folder must exist. Written beside it first, then renamed over it, so a reader
        sees the old file or the new one, never a part.
    """
    atomic_write(Path(path), lambda p: df.to_csv(p, index=False, float_format="%.6g"))


def ranking_columns(channels: pd.DataFrame, scorer: str = _MODEL) -> pd.DataFrame:
    """The channel table as ``channels.csv`` holds it.

    Parameters
    ----------
    channels : DataFrame, one row per scored channel
        ``RecordingScores.channels`` (``channel, score, lower, upper`` or ``value``, ``n_windows``, ``rank``,
        optional ``label`` and ``artifact``).
    scorer : str
        What ranked them (``"sss"`` for a model; a marker's registry name otherwise).

    Returns
    -------
    DataFrame
        ``channel, score``, the model's ``lower, upper`` or a marker's ``value``, ``rank``, then ``label``
        and ``artifact`` where present, and ``scorer`` — the columns of earlier releases first.
    """
    middle = ["lower", "upper"] if scorer == _MODEL else ["value"]
    missing = [c for c in ("channel", "score", *middle, "rank") if c not in channels]
    if missing:
        raise ValueError(
            f"A channel table scored by {scorer!r} lacks column(s) {missing}: got {list(channels.columns)}."
        )
    extra = [c for c in ("label", "artifact") if c in channels]
    return channels[["channel", "score", *middle, "rank", *extra]].assign(scorer=scorer)


def ranking_table(scores) -> pd.DataFrame:
    """``channels.csv`` of a ``RecordingScores`` (:func:`ranking_columns` of its channels and scorer).

    Parameters
    ----------
    scores : RecordingScores
        Its ``channels`` (one row per scored channel) and ``scorer`` are used.

    Returns
    -------
    DataFrame, shape (n_channels, n_columns)
        ``channel, score``, the model's ``lower, upper`` or a marker's ``value``, ``rank``, then ``label``
        and ``artifact`` where present, and ``scorer``.

    Raises
    ------
    ValueError
        The channel table lacks a column its scorer's table needs.
    """
    return ranking_columns(scores.channels, scores.scorer)


def save_scores(scores, folder: str | Path, key: str | None = None) -> None:
    """Write ``scores`` in the full-precision form: one file per table (:data:`SCORE_TABLES`) and ``meta.json``.

    The folder is replaced as a whole (written beside it, then renamed), so a reader sees the old
    scores or the new ones, never a mixture.

    Parameters
    ----------
    scores : RecordingScores
    folder : str or Path
        Created (its parent too); an existing one is replaced.
    key : str, optional
        What the scores were made from (a digest); :func:`read_scores` with another key reads nothing.
    """
    folder = Path(folder)
    folder.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(dir=folder.parent, prefix=f".{folder.name}."))
    try:
        dtypes = {}
        for name, file in SCORE_TABLES.items():
            table = getattr(scores, name)
            if table is None:
                continue
            compression = _GZIP if file.endswith(".gz") else None
            table.to_csv(tmp / file, index=False, lineterminator="\n", compression=compression)
            dtypes[name] = {c: str(t) for c, t in table.dtypes.items()}
        meta = {
            "key": key,
            "duration_s": scores.duration_s,
            "dtypes": dtypes,
            "sss_viewer_version": __version__,
            "scorer": scores.scorer,
            "scorer_info": scores.scorer_info,
        }
        (tmp / "meta.json").write_text(json.dumps(meta, indent=2) + "\n")
        os.chmod(tmp, 0o755)
        if folder.exists():
            shutil.rmtree(folder)
        os.rename(tmp, folder)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)


def read_scores(folder: str | Path, key: str | None = None) -> dict | None:
    """Read what :func:`save_scores` wrote, as ``RecordingScores`` keyword arguments (``RecordingScores.load``).

    Parameters
    ----------
    folder : str or Path
        The folder :func:`save_scores` wrote (``meta.json`` and one file per table of :data:`SCORE_TABLES`).
    key : str, optional
        What the scores must have been made from: scores saved under another key are not read. None reads
        them whatever their key.

    Returns
    -------
    dict or None
        ``windows, channels, excluded`` (+ ``heat_windows``, ``artifacts`` when saved) with the dtypes
        they were saved with, ``duration_s``, ``scorer``, ``scorer_info``; None when the folder is
        absent, unreadable or saved under another ``key``.
    """
    import pandas as pd

    folder = Path(folder)
    try:
        meta = json.loads((folder / "meta.json").read_text())
        if key is not None and meta.get("key") != key:
            return None
        tables = {}
        for name, file in SCORE_TABLES.items():
            if name in _OPTIONAL_TABLES and name not in meta["dtypes"]:
                continue
            dtypes = meta["dtypes"][name]
            text = {c: str for c, t in dtypes.items() if t in ("object", "str", "string")}
            table = pd.read_csv(folder / file, dtype=text, keep_default_na=False, na_values=[""])
            for column in _TEXT_COLUMNS:
                if column in table:
                    table[column] = table[column].fillna("")
            tables[name] = table.astype({c: _dtype(t) for c, t in dtypes.items()})
        duration_s = float(meta["duration_s"])
    except (OSError, ValueError, KeyError, TypeError, EOFError) as exc:
        logger.info("no usable scores in %s (%s)", folder, exc)
        return None
    extra = {k: meta[k] for k in ("scorer", "scorer_info") if k in meta}
    return {"duration_s": duration_s, **tables, **extra}


def _dtype(name: str):
    """The pandas dtype to restore for a dtype name recorded by :func:`save_scores`."""
    return object if name == "object" else name

"""The files of a cohort run: each recording's folder, the run's manifest, and what a rerun finds there.

Layout of ``OUT``::

    OUT/sss-viewer-score.json       manifest: command, fingerprint, every recording folder a run planned
    OUT/<recording>/windows.parquet the windows table
    OUT/<recording>/channels.csv    the channel ranking
    OUT/<recording>/excluded.csv    channels not scored and why (only when any)
    OUT/<recording>/done.json       written last: what the scores were made from, the summary row
    OUT/cohort.csv, OUT/patients.csv

Every file is written atomically (:func:`sss_viewer.fileio.atomic_write`). A recording folder
without ``done.json`` (a task killed while writing) is not done: its files are replaced when it is
scored again, and hidden temporary files that a killed writer left are removed.
"""

from __future__ import annotations

import contextlib
import json
import logging
from collections.abc import Iterator
from pathlib import Path

import pandas as pd

from sss_viewer._version import __version__
from sss_viewer.engine.score_files import SCORE_MANIFEST, ranking_columns, write_csv
from sss_viewer.fileio import LockTimeout, atomic_write, file_lock

logger = logging.getLogger(__name__)

MANIFEST = SCORE_MANIFEST
"""The manifest every ``score`` run writes into ``OUT`` (:data:`sss_viewer.engine.score_files.SCORE_MANIFEST`)."""
COHORT_MODE = "cohort"
"""The manifest's ``mode`` for a cohort run (a single-file run has none)."""
WINDOWS = "windows.parquet"
CHANNELS = "channels.csv"
EXCLUDED = "excluded.csv"
DONE = "done.json"
RECORDING_FILES = (WINDOWS, CHANNELS, EXCLUDED, DONE)
"""What a task may write into its recording's folder."""
COHORT_CSV = "cohort.csv"
PATIENTS_CSV = "patients.csv"
COHORT_FILES = (COHORT_CSV, PATIENTS_CSV)


def write_json(data: dict, path: Path) -> None:
    """Write ``data`` as indented JSON atomically."""
    text = json.dumps(data, indent=1, allow_nan=True)
    atomic_write(path, lambda p: Path(p).write_text(text, encoding="utf-8"))


def read_json(path: Path) -> dict | None:
    """``path``'s JSON object, or None when it is missing or unreadable (logged)."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:
        logger.warning("%s is unreadable (%s); treated as absent.", path, exc)
        return None
    return data if isinstance(data, dict) else None


def leftovers(folder: Path) -> list[Path]:
    """Hidden temporary files a killed writer of ``folder``'s outputs left (``.<name>.*.tmp``)."""
    names = (*RECORDING_FILES, *COHORT_FILES, MANIFEST)
    return sorted(p for name in names for p in Path(folder).glob(f".{name}.*.tmp") if p.is_file())


def remove_leftovers(folder: Path) -> int:
    """Remove :func:`leftovers` of ``folder``; the number removed."""
    found = leftovers(folder)
    for path in found:
        path.unlink(missing_ok=True)
    if found:
        logger.info("%s: removed %d temporary file(s) left by an interrupted write.", folder, len(found))
    return len(found)


def write_recording(
    folder: Path, windows: pd.DataFrame, channels: pd.DataFrame, excluded: pd.DataFrame, done: dict
) -> list[str]:
    """Write one recording's outputs, ``done.json`` last.

    A previous ``done.json`` is removed first, so the folder never claims to be done while its files
    are being replaced, and files of an earlier attempt that this one does not write go too.

    Parameters
    ----------
    folder : Path
        ``OUT/<recording>`` (created).
    windows : DataFrame
        Written as Parquet.
    channels : DataFrame
        The ranking (``RecordingScores.channels`` of a model): written as ``channels.csv`` holds it
        (:func:`~sss_viewer.engine.score_files.ranking_columns`).
    excluded : DataFrame
        Written when it has rows.
    done : dict
        The record (:func:`~sss_viewer.cohort_scoring._task.score_task`); ``files`` is added.

    Returns
    -------
    files : list of str
        The names written besides ``done.json``.
    """
    folder.mkdir(parents=True, exist_ok=True)
    for name in (DONE, *RECORDING_FILES):
        (folder / name).unlink(missing_ok=True)
    atomic_write(folder / WINDOWS, lambda p: windows.to_parquet(p, index=False))
    write_csv(ranking_columns(channels), folder / CHANNELS)  # a cohort is ranked by a model
    files = [WINDOWS, CHANNELS]
    if len(excluded):
        write_csv(excluded, folder / EXCLUDED)
        files.append(EXCLUDED)
    write_json({**done, "files": files}, folder / DONE)
    return files


def read_done(folder: Path) -> dict | None:
    """A recording folder's ``done.json`` when the files it lists are all there, else None (not done)."""
    done = read_json(folder / DONE)
    if done is None:
        return None
    files = done.get("files")
    if not isinstance(files, list) or not all(isinstance(n, str) and (folder / n).is_file() for n in files):
        logger.warning("%s lists files that are missing; the recording is scored again.", folder / DONE)
        return None
    return done


def read_manifest(out: Path) -> dict | None:
    """The manifest of a previous cohort run in ``out``, or None (none, unreadable, or a single-file run's)."""
    manifest = read_json(out / MANIFEST)
    if manifest is None or manifest.get("command") != "score" or manifest.get("mode") != COHORT_MODE:
        return None
    return manifest


def output_lock_path(out: Path) -> Path:
    """The lock file of a cohort output folder: hidden, beside the folder (so the folder's own checks never see it)."""
    out = Path(out).absolute()
    return out.parent / f".{out.name}.sss-viewer-score.lock"


@contextlib.contextmanager
def cohort_output_lock(out: Path) -> Iterator[None]:
    """Hold ``out`` for one cohort run: a second run into the same folder is refused at once, not interleaved.

    The lock (``flock`` on :func:`output_lock_path`) is released when the block ends or the process
    dies, so a killed run never blocks the next one; the empty lock file stays.

    Raises
    ------
    ValueError
        Another process is scoring into ``out``.
    """
    with contextlib.ExitStack() as held:
        try:
            held.enter_context(file_lock(output_lock_path(out), timeout_s=0.0))
        except LockTimeout:
            raise ValueError(
                f"Output folder {Path(out).absolute()} is being written by another sss-viewer score run; wait for it "
                "to finish (rerun then: finished recordings are skipped) or choose another folder."
            ) from None
        yield


def is_cohort_output(out: Path) -> bool:
    """Whether ``out`` holds the output of an earlier cohort ``score`` run (its manifest says so).

    Parameters
    ----------
    out : Path
        A ``score`` output folder (it need not exist).

    Returns
    -------
    bool
        True when ``out`` is a folder whose ``sss-viewer-score.json`` (:data:`MANIFEST`) is readable and was
        written by a cohort run; False for a missing folder, a single-file run's or an unreadable manifest.
    """
    return Path(out).is_dir() and read_manifest(Path(out)) is not None


def write_manifest(out: Path, fingerprint: dict, recordings: list[str], root: Path, files: list[str]) -> None:
    """Write ``OUT/sss-viewer-score.json``: the run's fingerprint, the recording folders it planned, its cohort files.

    ``recordings`` should include those an earlier run into the same folder planned, so that
    ``--overwrite`` finds every folder a run may have written.
    """
    manifest = {
        "command": "score",
        "mode": COHORT_MODE,
        "sss_viewer_version": __version__,
        "source": str(root),
        "fingerprint": fingerprint,
        "recordings": sorted(set(recordings)),
        "files": files,
    }
    write_json(manifest, out / MANIFEST)


def remove_previous(out: Path, manifest: dict) -> int:
    """Remove what earlier cohort runs wrote into ``out`` (per their manifest); other files are left alone.

    Parameters
    ----------
    out : Path
    manifest : dict
        :func:`read_manifest` of ``out``.

    Returns
    -------
    removed : int
        Files removed (emptied recording folders are removed too).
    """
    root = out.resolve()
    removed = 0
    for name in manifest.get("recordings", []):
        folder = out / str(name)
        if (
            not folder.is_dir()
            or folder.is_symlink()
            or not folder.resolve().is_relative_to(root)
            or folder.resolve() == root
        ):
            continue
        for path in [*(folder / n for n in RECORDING_FILES), *leftovers(folder)]:
            if path.is_file() and not path.is_symlink():
                path.unlink()
                removed += 1
        if not any(folder.iterdir()):
            folder.rmdir()
    for path in [*(out / n for n in COHORT_FILES), *leftovers(out), out / MANIFEST]:
        if path.is_file() and not path.is_symlink():
            path.unlink()
            removed += 1
    left = sorted(p.name for p in out.iterdir())
    logger.info(
        "%s: removed %d file(s) of the previous cohort run%s.",
        out,
        removed,
        f"; kept {', '.join(left)}" if left else "",
    )
    return removed

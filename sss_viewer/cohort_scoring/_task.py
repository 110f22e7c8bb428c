"""One Dask task: open a recording on the worker, score it, write its folder, return its summary row.

Internal to the stage: not part of the public API (:mod:`sss_viewer.cohort_scoring`'s ``__all__``, ``docs/api.md``).
"""

from __future__ import annotations

import logging
import os
import socket
import time
from dataclasses import dataclass
from pathlib import Path

from sss_viewer._version import __version__
from sss_viewer.cohort_scoring._digests import Fingerprint, source_digests
from sss_viewer.cohort_scoring._plan import CohortSource, RecordingTask
from sss_viewer.cohort_scoring._summary import FAILED, failed_row, recording_row
from sss_viewer.cohort_scoring._worker_model import worker_model
from sss_viewer.cohort_scoring.outputs import write_recording
from sss_viewer.engine.inference import score_recording
from sss_viewer.preprocessing.cache import SeriesCache

logger = logging.getLogger(__name__)

EXPECTED_ERRORS = (ValueError, OSError, RuntimeError, MemoryError)
"""What a recording may raise that is reported in its row (the CLI's runtime errors); anything else is a bug and reaches the client as the task's exception."""


@dataclass(frozen=True)
class ScoreSettings:
    """How every recording of a cohort run is scored and where it goes (sent with each task; small).

    Parameters
    ----------
    out : Path
        The output folder (absolute; on a file system every worker reaches).
    fingerprint : Fingerprint
        Model, stride and labels, recorded in each ``done.json``.
    batch_size : int
    device : str
        ``auto``, ``cpu`` or ``cuda``, resolved on each worker.
    cache_dir : Path, optional
        The preprocessed-series cache every worker uses (None: preprocess in memory).
    model_dir : Path, optional
        The model directory (absolute; on a file system every worker reaches): a task given no model
        loads it from there, once per worker process, checked against ``fingerprint.model``.
    """

    out: Path
    fingerprint: Fingerprint
    batch_size: int = 1024
    device: str = "auto"
    cache_dir: Path | None = None
    model_dir: Path | None = None


@dataclass(frozen=True)
class TaskResult:
    """What a task returns to the client.

    Parameters
    ----------
    recording_id : str
    row : dict
        The recording's ``cohort.csv`` row (status ``ok`` or ``failed`` with its error).
    worker : str
        ``host:pid`` of the process that ran it.
    model_id : int
        ``id()`` of the model object the task used (0 when none was loaded): one per worker process,
        which loads the model once.
    seconds : float
        Time the task took.
    """

    recording_id: str
    row: dict
    worker: str
    model_id: int
    seconds: float

    @property
    def failed(self) -> bool:
        return self.row["status"] == FAILED


def _check_reachable(task: RecordingTask, settings: ScoreSettings, host: str) -> None:
    """Refuse, naming this worker, a recording or output folder that this worker cannot see."""
    if not task.path.exists():
        raise FileNotFoundError(
            f"{task.path} not found on worker {host}: the cohort must be on a file system every worker reaches, "
            "at the same path."
        )
    if not settings.out.is_dir():
        raise FileNotFoundError(
            f"Output folder {settings.out} not found on worker {host}: it must be on a file system every worker "
            "reaches, at the same path."
        )


def score_task(bundle, source: CohortSource, task: RecordingTask, settings: ScoreSettings) -> TaskResult:
    """Score one recording of a cohort and write ``OUT/<recording>/`` (``done.json`` last).

    Parameters
    ----------
    bundle : ModelBundle or None
        The model; None on a Dask worker, which loads ``settings.model_dir`` once per process
        (:func:`~sss_viewer.cohort_scoring._worker_model.worker_model`).
    source : CohortSource
        How to open the cohort's recordings (scattered once with the run).
    task : RecordingTask
    settings : ScoreSettings

    Returns
    -------
    TaskResult
        A recording that cannot be opened or scored, or whose folder cannot be written, gives a
        ``failed`` row with the error (:data:`EXPECTED_ERRORS`); the task itself succeeds.
    """
    start = time.perf_counter()
    host = socket.gethostname()
    worker = f"{host}:{os.getpid()}"
    try:
        _check_reachable(task, settings, host)
        if bundle is None:
            bundle = worker_model(settings.model_dir, settings.fingerprint.model, host)
        recording = source.open(task)
        cache = SeriesCache(settings.cache_dir) if settings.cache_dir is not None else None
        scores = score_recording(
            bundle,
            recording,
            stride=settings.fingerprint.stride,
            batch_size=settings.batch_size,
            device=settings.device,
            progress=False,
            cache=cache,
        )
        row = recording_row(task, recording, scores.channels, scores.excluded)
        done = {
            "command": "score",
            "recording": task.recording_id,
            "source": task.source,
            "sss_viewer_version": __version__,
            **settings.fingerprint.to_dict(),
            "sources": source_digests(task.path, source.root, cache, recording.info.get("source_files", ())),
            "summary": row,
            "worker": worker,
            "finished": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        }
        write_recording(settings.out / task.recording_id, scores.windows, scores.channels, scores.excluded, done)
    except EXPECTED_ERRORS as exc:
        logger.warning("%s not scored: %s", task.recording_id, exc)
        row = failed_row(task, _one_line(exc))
    seconds = time.perf_counter() - start
    logger.info("%s: %s on %s in %.1f s", task.recording_id, row["status"], worker, seconds)
    return TaskResult(task.recording_id, row, worker, 0 if bundle is None else id(bundle), seconds)


def _one_line(exc: BaseException) -> str:
    """``exc``'s message on one line, or its type's name when it has none."""
    text = str(exc) or type(exc).__name__
    return "; ".join(line.strip() for line in text.splitlines() if line.strip())

"""The client's side of a cohort run: plan and check before any work, then one Dask task per recording.

:func:`prepare_cohort` loads the model, lists the recordings and reads the output folder: recordings
whose ``done.json`` matches the model, stride, labels and source files are skipped (not submitted);
outputs made with other inputs are refused up front, naming them, unless ``overwrite`` (which first
removes what the earlier runs wrote). :func:`run_cohort` sends the model and the cohort's opening
instructions to every worker once, submits the rest, follows the futures as they complete (a
progress bar over recordings), and writes ``cohort.csv`` and ``patients.csv``.
"""

from __future__ import annotations

import logging
import uuid
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from sss_viewer._lazy import require
from sss_viewer.cohort_scoring._digests import Fingerprint, labels_digest, model_digest, sources_unchanged
from sss_viewer.cohort_scoring._plan import CohortSource, RecordingTask, find_recordings
from sss_viewer.cohort_scoring._summary import FAILED, SKIPPED, cohort_table, failed_row, patients_table
from sss_viewer.cohort_scoring._task import ScoreSettings, TaskResult, score_task
from sss_viewer.cohort_scoring.outputs import (
    COHORT_CSV,
    MANIFEST,
    PATIENTS_CSV,
    read_done,
    read_manifest,
    remove_leftovers,
    remove_previous,
    write_csv,
    write_manifest,
)
from sss_viewer.preprocessing.cache import SeriesCache

logger = logging.getLogger(__name__)

_SHOWN = 5
"""Recordings named in a refusal before "… (N in all)"."""


@dataclass(frozen=True)
class CohortOptions:
    """How the recordings are scored (the ``score`` options that apply to every recording).

    Parameters
    ----------
    stride : int, optional
        Window stride in preprocessed samples (default: the model's).
    batch_size : int
    device : str
    cache_dir : Path, optional
        The preprocessed-series cache (None: ``--no-cache``); every worker uses it.
    labels : Path, optional
        ``--labels``.
    labels_fallback : bool
    """

    stride: int | None = None
    batch_size: int = 1024
    device: str = "auto"
    cache_dir: Path | None = None
    labels: Path | None = None
    labels_fallback: bool = False


@dataclass
class CohortPlan:
    """What :func:`prepare_cohort` decided; :func:`run_cohort` carries it out.

    Parameters
    ----------
    bundle : ModelBundle
    source : CohortSource
    tasks : list of RecordingTask
        Every recording of the cohort, in its order.
    to_score : list of RecordingTask
        Those to submit.
    skipped : dict
        ``{recording_id: cohort.csv row}`` of those up to date (from their ``done.json``).
    settings : ScoreSettings
    """

    bundle: object
    source: CohortSource
    tasks: list[RecordingTask]
    to_score: list[RecordingTask]
    skipped: dict[str, dict]
    settings: ScoreSettings

    @property
    def out(self) -> Path:
        return self.settings.out


@dataclass
class CohortReport:
    """The outcome of a cohort run.

    Parameters
    ----------
    cohort : DataFrame
        ``cohort.csv``'s rows.
    patients : DataFrame
        ``patients.csv``'s rows.
    results : list of TaskResult
        What this run's tasks returned (empty when every recording was skipped).
    files : list of Path
        The cohort-level files written.
    """

    cohort: pd.DataFrame
    patients: pd.DataFrame
    results: list[TaskResult] = field(default_factory=list)
    files: list[Path] = field(default_factory=list)

    def count(self, status: str) -> int:
        """Recordings with ``status`` (``ok``, ``skipped``, ``failed``)."""
        return int((self.cohort["status"] == status).sum())

    @property
    def failed(self) -> pd.DataFrame:
        """The rows of recordings not scored, with their errors."""
        return self.cohort[self.cohort["status"] == FAILED]


def _shown(names: list[str]) -> str:
    return ", ".join(names[:_SHOWN]) + (f" … ({len(names)} in all)" if len(names) > _SHOWN else "")


def _check_out(out: Path, overwrite: bool) -> dict | None:
    """The manifest of an earlier cohort run in ``out`` (None: absent, empty, or other files and ``overwrite``)."""
    if out.exists() and not out.is_dir():
        raise ValueError(f"Output folder {out} exists and is not a folder.")
    manifest = read_manifest(out) if out.is_dir() else None
    entries = sorted(p.name for p in out.iterdir()) if out.is_dir() else []
    if entries and manifest is None and not overwrite:
        raise ValueError(
            f"Output folder {out} is not empty ({_shown(entries)}) and holds no earlier cohort run to resume; pass "
            "--overwrite to replace the previous run's files, or choose an empty folder."
        )
    return manifest


def _stale(
    tasks: list[RecordingTask], out: Path, fingerprint: Fingerprint, source: CohortSource, cache
) -> tuple[dict, dict]:
    """Split the recordings with a ``done.json`` into up to date (``{id: row}``) and made otherwise (``{id: reasons}``)."""
    skipped, conflicts = {}, {}
    for task in tasks:
        folder = out / task.recording_id
        done = read_done(folder) if folder.is_dir() else None
        if done is None:
            continue
        reasons = fingerprint.differences(done)
        if not reasons and not sources_unchanged(done.get("sources"), task.path, source.root, cache):
            reasons = ["source files"]
        if reasons:
            conflicts[task.recording_id] = reasons
        else:
            skipped[task.recording_id] = {**done["summary"], "status": SKIPPED}
    return skipped, conflicts


def prepare_cohort(
    model_dir: str | Path, root: str | Path, out: str | Path, options: CohortOptions, *, overwrite: bool = False
) -> CohortPlan:
    """Check everything a cohort run needs before it starts, and decide which recordings to score.

    Parameters
    ----------
    model_dir : str or Path
        The model directory.
    root : str or Path
        A BIDS root or cohort folder.
    out : str or Path
        The output folder: absent, empty, or the output of an earlier cohort run (resumed).
    options : CohortOptions
    overwrite : bool
        Remove what earlier cohort runs wrote into ``out`` (per its manifest) and score every recording
        again; other files in ``out`` are left where they are (the CLI first removes a single-file
        run's outputs, as ``score FILE --overwrite`` does).

    Returns
    -------
    CohortPlan
        The manifest is written (``out`` created), so an interrupted run can be resumed.

    Raises
    ------
    ValueError
        ``out`` is used by something else; or (without ``overwrite``) it holds outputs made with
        another model, stride, labels or source files (named); or the model or cohort is invalid.
    FileNotFoundError
        The model, the cohort or a labels file is missing.
    MissingExtraError
        Dask's ``distributed`` or ``pyarrow`` is not installed (the ``cohort`` extra).
    """
    from sss_viewer.engine.bundle import ModelBundle

    for module in ("distributed", "pyarrow"):  # before any work: Dask runs the tasks, Parquet holds the window tables
        require(module, extra="cohort", feature="Scoring a cohort")
    out = Path(out).absolute()
    manifest = _check_out(out, overwrite)
    bundle = ModelBundle.load(model_dir)
    source, tasks = find_recordings(root, labels=options.labels, labels_fallback=options.labels_fallback)
    fingerprint = Fingerprint(
        model=model_digest(model_dir),
        stride=int(options.stride or bundle.inference_stride),
        labels=labels_digest(source.label_files, options.labels_fallback),
    )
    cache_dir = Path(options.cache_dir).absolute() if options.cache_dir is not None else None
    cache = SeriesCache(cache_dir) if cache_dir is not None else None
    skipped: dict[str, dict] = {}
    if manifest is not None and overwrite:
        remove_previous(out, manifest)
    elif manifest is not None:
        differ = fingerprint.differences(manifest.get("fingerprint") or {})
        present = sorted(n for n in manifest.get("recordings", []) if (out / str(n)).is_dir())
        if differ and present:
            raise ValueError(
                f"Output folder {out} holds scores made with another {' and '.join(differ)} "
                f"({len(present)} recording folder(s): {_shown(present)}); pass --overwrite to replace them, or "
                "choose another folder."
            )
        skipped, conflicts = _stale(tasks, out, fingerprint, source, cache)
        if conflicts:
            names = sorted(conflicts)
            reasons = sorted({r for rs in conflicts.values() for r in rs})
            raise ValueError(
                f"Output folder {out} holds scores of {len(names)} recording(s) made from other {' and '.join(reasons)}: "
                f"{_shown(names)}; pass --overwrite to replace the earlier run's files, or choose another folder."
            )
    out.mkdir(parents=True, exist_ok=True)
    earlier = [] if manifest is None or overwrite else list(manifest.get("recordings", []))
    write_manifest(out, fingerprint.to_dict(), earlier + [t.recording_id for t in tasks], source.root, [])
    to_score = [t for t in tasks if t.recording_id not in skipped]
    for task in to_score:  # a killed task's hidden temporaries; its other files are replaced when it is scored
        if (out / task.recording_id).is_dir():
            remove_leftovers(out / task.recording_id)
    settings = ScoreSettings(
        out=out,
        fingerprint=fingerprint,
        batch_size=options.batch_size,
        device=options.device,
        cache_dir=cache_dir,
        model_dir=Path(model_dir).absolute(),
    )
    logger.info("%s: %d recording(s) to score, %d up to date.", out, len(to_score), len(skipped))
    return CohortPlan(bundle, source, tasks, to_score, skipped, settings)


def _error_text(exc: BaseException) -> str:
    """A failed future's exception as one line (a worker that kept dying says so)."""
    from distributed import KilledWorker

    if isinstance(exc, KilledWorker):
        return f"the workers running it died repeatedly (out of memory or a crash in native code?): {exc}"
    text = " ".join(str(exc).split())
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def run_cohort(plan: CohortPlan, client=None, *, progress: bool = True) -> CohortReport:
    """Score ``plan.to_score`` on ``client``'s workers and write the cohort's tables.

    Parameters
    ----------
    plan : CohortPlan
        From :func:`prepare_cohort`.
    client : distributed.Client, optional
        Needed when anything is to be scored.
    progress : bool
        A progress bar over recordings as they complete.

    Returns
    -------
    CohortReport
        Every recording exactly once, in the cohort's order; failed ones with their errors.
    """
    rows = dict(plan.skipped)
    results: list[TaskResult] = []
    if plan.to_score:
        if client is None:
            raise ValueError(f"{len(plan.to_score)} recording(s) to score but no Dask client to score them on.")
        results = _submit_and_follow(plan, client, rows, progress)
    for task in plan.tasks:  # a task of this run that is gone (a zombie) cannot leave temporaries now
        if (plan.out / task.recording_id).is_dir():
            remove_leftovers(plan.out / task.recording_id)
    cohort = cohort_table([rows[t.recording_id] for t in plan.tasks])
    patients = patients_table(plan.out, cohort)
    write_csv(cohort, plan.out / COHORT_CSV)
    write_csv(patients, plan.out / PATIENTS_CSV)
    manifest = read_manifest(plan.out) or {}
    write_manifest(
        plan.out,
        plan.settings.fingerprint.to_dict(),
        manifest.get("recordings", []),
        plan.source.root,
        [COHORT_CSV, PATIENTS_CSV],
    )
    return CohortReport(
        cohort, patients, results, [plan.out / COHORT_CSV, plan.out / PATIENTS_CSV, plan.out / MANIFEST]
    )


def _submit_and_follow(plan: CohortPlan, client, rows: dict, progress: bool) -> list[TaskResult]:
    """Submit one task per recording (each worker loads the model once itself), collect rows as the futures complete.

    The cohort's source is scattered once and handed by Dask to the workers that need it. The model
    is not sent: ``broadcast=True`` copies are dropped by the scheduler's active memory manager
    whenever no waiting task needs them, so a worker could be sent it again mid-run; each worker
    loads ``plan.settings.model_dir`` instead (:mod:`~sss_viewer.cohort_scoring._worker_model`).
    """
    from distributed import as_completed
    from tqdm.auto import tqdm

    source = client.scatter(plan.source, hash=False)
    run = uuid.uuid4().hex[:8]
    futures = {
        client.submit(
            score_task, None, source, task, plan.settings, key=f"score-{task.recording_id}-{run}", pure=False
        ): task
        for task in plan.to_score
    }
    results = []
    bar = tqdm(total=len(futures), desc="recordings", unit="rec", disable=not progress)
    try:
        for future in as_completed(futures):
            task = futures[future]
            if future.status == "error":
                error = _error_text(future.exception())
                logger.warning("%s not scored: %s", task.recording_id, error)
                rows[task.recording_id] = failed_row(task, error)
            else:
                result = future.result()
                if result.failed:
                    logger.warning("%s not scored: %s", task.recording_id, result.row["error"])
                rows[task.recording_id] = result.row
                results.append(result)
            bar.update(1)
    finally:
        bar.close()
        client.cancel([source, *futures])
    return results

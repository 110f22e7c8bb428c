"""The patient-level ranking of the BIDS picker: one subject's channels ranked over all of their runs.

A patient usually has several recordings (ds003029's pt01 has four). :class:`PatientRankingPanel`
scores every run of the chosen subject with the open model on a worker thread (one run after the
other, each as :func:`~sss_viewer.engine.inference.score_recording` scores it for the viewer), then
ranks the channels by the mean of the runs' scores
(:func:`~sss_viewer.evaluation.patient_ranking.rank_patient_channels`) with every run's score
beside it. A run the model cannot score (too short, another sampling rate, no iEEG) is listed
with its reason and left out of the mean; the others are ranked.
"""

from __future__ import annotations

import logging
import threading
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

import pandas as pd
import panel as pn
import param

from sss_viewer.engine.inference import check_fit, score_recording
from sss_viewer.evaluation.patient_ranking import rank_patient_channels
from sss_viewer.io.cohort import load_recording
from sss_viewer.viewer._scoring import run_in_session

logger = logging.getLogger(__name__)

SHOWN_COLUMNS = ("rank", "channel", "score", "n_runs", "run_scores", "label")
"""Columns of the table on the page (``label`` only when the runs carry SOZ labels)."""


class PatientRankingPanel(pn.viewable.Viewer):
    """Rank one subject's channels over all of their runs, in the background.

    Call :meth:`rank` with the model, the subject and its run files; ``ranking`` then holds the
    table (:func:`rank_patient_channels`'s columns for that subject), ``skipped`` the runs left out
    with their reasons, ``status`` and ``progress`` what is happening.
    """

    subject = param.String(default="", doc="The subject ranked (or being ranked).")
    ranking = param.DataFrame(default=None, allow_None=True, doc="Channels of the subject over its runs, rank 1 first.")
    skipped = param.Dict(default={}, doc="Runs not scored: {run file name: reason}.")
    status = param.String(default="", doc="What the panel is doing, in words.")
    progress = param.Number(default=0.0, bounds=(0, 1), doc="Fraction of the subject's runs scored.")
    running = param.Boolean(default=False)
    error = param.String(default="", doc="Why no ranking could be made (empty when one was).")

    def __init__(self, **params):
        super().__init__(**params)
        self._executor: ThreadPoolExecutor | None = None
        self._job = 0
        self._lock = threading.Lock()
        self._future: Future | None = None
        self._doc = None
        self.button = pn.widgets.Button(label="Rank channels over all runs", disabled=True)
        self._table = pn.widgets.Tabulator(
            pd.DataFrame(columns=list(SHOWN_COLUMNS)),
            show_index=False,
            disabled=True,
            height=320,
            sizing_mode="stretch_width",
            pagination=None,
        )

    # -- public -------------------------------------------------------------------------------

    def rank(self, bundle, subject: str, runs: dict[str, Path]) -> Future:
        """Score every run of ``subject`` and rank its channels; supersedes a ranking in progress.

        Parameters
        ----------
        bundle : ModelBundle
        subject : str
        runs : dict
            ``{run file name: absolute path}`` of the subject's recordings.

        Returns
        -------
        Future
            Done when the ranking has finished (its parameters follow on the session's next tick
            when served).
        """
        with self._lock:
            self._job += 1
            job = self._job
        self._doc = pn.state.curdoc
        self.param.update(
            subject=subject,
            ranking=None,
            skipped={},
            error="",
            progress=0.0,
            running=True,
            status=f"Scoring the {len(runs)} run{'s' * (len(runs) != 1)} of {subject}…",
        )
        if self._executor is None:
            self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="sss-viewer-patient")
            if self._doc is not None and getattr(self._doc, "session_context", None) is not None:
                pn.state.on_session_destroyed(lambda _ctx: self.shutdown())
        self._future = self._executor.submit(self._run, job, bundle, subject, dict(runs))
        return self._future

    def wait(self, timeout: float | None = None) -> bool:
        """Block until the current ranking has finished (tests, notebooks); False on timeout."""
        if self._future is None:
            return True
        try:
            self._future.result(timeout=timeout)
        except TimeoutError:
            return False
        return True

    def shutdown(self) -> None:
        """Stop after the run being scored and end the worker thread."""
        with self._lock:
            self._job += 1
        if self._executor is not None:
            self._executor.shutdown(wait=False, cancel_futures=True)
            self._executor = None

    # -- worker -------------------------------------------------------------------------------

    def _run(self, job: int, bundle, subject: str, runs: dict[str, Path]) -> pd.DataFrame | None:
        tables, skipped = [], {}
        for done, (name, path) in enumerate(runs.items()):
            if job != self._job:
                return None
            self._publish(job, status=f"Scoring run {done + 1} of {len(runs)} of {subject}: {name}…")
            try:
                recording = load_recording(path)
                reason = check_fit(bundle, recording)
                if reason:
                    raise ValueError(reason)
                scores = score_recording(bundle, recording, progress=False)
            except (ValueError, OSError) as exc:  # the readers' and engine's readable refusals
                skipped[name] = str(exc)
                logger.warning("patient ranking of %s: run %s not scored: %s", subject, name, exc)
            else:
                table = scores.channels.assign(subject=subject, run=name)
                tables.append(table)
            self._publish(job, progress=(done + 1) / len(runs))
        if not tables:
            self._publish(
                job,
                running=False,
                skipped=skipped,
                status=f"No run of {subject} could be scored",
                error=f"None of the {len(runs)} run(s) of {subject} could be scored: "
                + "; ".join(f"{n}: {r}" for n, r in skipped.items()),
            )
            return None
        ranking = rank_patient_channels(pd.concat(tables, ignore_index=True))
        left_out = f"; {len(skipped)} run(s) left out (see below)" if skipped else ""
        self._publish(
            job,
            ranking=ranking,
            skipped=skipped,
            running=False,
            progress=1.0,
            status=f"{subject}: {len(ranking)} channels ranked by the mean of {len(tables)} run(s){left_out}",
        )
        return ranking

    def _publish(self, job: int, **values) -> None:
        def apply() -> None:
            if job == self._job:
                self.param.update(**values)

        run_in_session(self._doc, apply)

    # -- view ---------------------------------------------------------------------------------

    @param.depends("ranking", watch=True)
    def _show(self) -> None:
        if self.ranking is None:
            self._table.value = pd.DataFrame(columns=list(SHOWN_COLUMNS))
            return
        columns = [c for c in SHOWN_COLUMNS if c in self.ranking.columns]
        self._table.value = self.ranking[columns].round({"score": 3})

    def __panel__(self):
        skipped = pn.bind(
            lambda s: "\n".join(f"- **{name}** not scored: {reason}" for name, reason in s.items()), self.param.skipped
        )
        return pn.Column(
            pn.pane.Markdown(pn.bind(lambda s: f"### Patient ranking: {s}, all runs", self.param.subject)),
            pn.pane.Markdown(self.param.status, sizing_mode="stretch_width"),
            pn.pane.Alert(self.param.error, alert_type="danger", visible=pn.bind(bool, self.param.error)),
            self._table,
            pn.pane.Markdown(skipped, sizing_mode="stretch_width"),
            visible=pn.bind(lambda s, r: bool(s) or r, self.param.status, self.param.running),
            sizing_mode="stretch_width",
        )

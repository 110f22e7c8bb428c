"""Train a centre's own model in the viewer on the data root's recordings the clinicians labelled.

The SOZ column and bad marks a clinician saves in the viewer are training labels
(:func:`sss_viewer.io.viewer_labels.apply_viewer_labels`: marked SOZ = 1, marked not SOZ = 0,
unlabelled and bad channels left out, recordings without marks left out). :class:`TrainPanel`
trains on them on a worker thread, then shows the new model's figures on the patients it held out
beside the bundled (open) model's on the same recordings, and saves the new model into the models
folder, where the model picker lists it.

The model is the ``quick`` preset (:func:`sss_viewer.engine.config.train_preset`: the MiniRocket
recipe on windows every 8.2 s): 1.6 CPU-minutes for the README's twelve-patient synthetic cohort
(862 MB, about 1,000 channels), so a clinician can wait for it. It is validated on whole patients:
the preset's patient split holds a quarter of the patients out of training (and 15 % more out
for the early stopping and calibration), and the figures are those held-out patients'. A full
leave-one-patient-out of SSS training (one training per patient) would take the number of
patients times as long (twelve trainings: about 20 minutes on two cores); the ``combined`` marker
scorer's leave-one-patient-out (``sss-viewer fit-combined``) is fast but gives marker weights,
not a model directory the model picker can load.
"""

from __future__ import annotations

import logging
import threading
import time
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

import pandas as pd
import panel as pn
import param

from sss_viewer.engine.config import TRAIN_PRESETS, train_preset
from sss_viewer.engine.training import another_training_run_in_progress, train
from sss_viewer.evaluation.held_out import evaluate_bundle
from sss_viewer.io.cohort import load_data
from sss_viewer.io.viewer_labels import apply_viewer_labels
from sss_viewer.viewer._scoring import run_in_session

logger = logging.getLogger(__name__)

DEFAULT_PRESET = "quick"
"""The preset the viewer trains with (see the module's docstring)."""
FIGURES = ("auc", "auprc", "f1", "accuracy")
"""Pooled metrics shown for both models (those :func:`evaluate_bundle` reports)."""


class TrainPanel(pn.viewable.Viewer):
    """A button that trains a model on the data root's viewer-labelled recordings, in the background.

    Call :meth:`train` (or press the button) with the open model to compare against; ``status``
    and ``progress`` follow the run, ``figures`` then holds the new and the open model's figures on
    the held-out patients and ``model_dir`` where the new model was saved.
    """

    data_root = param.String(default="", doc="The folder the viewer browses (a BIDS root or cohort folder).")
    viewer_out = param.String(default="", doc="The viewer's output folder, where the clinicians' sidecars are.")
    models_root = param.String(default="", doc="Folder of model directories: the new model is saved into it.")
    preset = param.Selector(default=DEFAULT_PRESET, objects=list(TRAIN_PRESETS), doc="Training preset.")
    overrides = param.Dict(default={}, doc="TrainConfig values replacing the preset's (tests, smaller runs).")
    status = param.String(default="", doc="What the panel is doing, in words.")
    progress = param.Number(default=0.0, bounds=(0, 1), doc="Fraction of the run done (by stage).")
    running = param.Boolean(default=False)
    error = param.String(default="", doc="Why no model was trained (empty when one was).")
    figures = param.DataFrame(
        default=None, allow_None=True, doc="Held-out figures: one row per metric, one column per model."
    )
    model_dir = param.String(default="", doc="Where the new model was saved (empty until then).")

    def __init__(self, **params):
        super().__init__(**params)
        self._executor: ThreadPoolExecutor | None = None
        self._lock = threading.Lock()
        self._job = 0
        self._future: Future | None = None
        self._doc = None
        self._bundled = None
        self.button = pn.widgets.Button(label="Train a model on this data root's labelled recordings")
        self.button.on_click(lambda _event: self.train(self._bundled))
        self._table = pn.widgets.Tabulator(
            pd.DataFrame(), show_index=False, disabled=True, sizing_mode="stretch_width", pagination=None
        )
        self._table_slot = pn.Column(sizing_mode="stretch_width")  # holds the table once there are figures

    # -- public -------------------------------------------------------------------------------

    def set_comparison(self, bundle) -> None:
        """The model the button compares the new one with (the viewer's open model)."""
        self._bundled = bundle

    def train(self, bundled=None, *, name: str | None = None) -> Future:
        """Train on the labelled recordings of ``data_root`` and save the model into ``models_root``.

        Parameters
        ----------
        bundled : ModelBundle, optional
            The model to show beside the new one on the same held-out recordings (the open model).
        name : str, optional
            The new model's folder name in ``models_root`` (default ``centre-<date>-<time>``).

        Returns
        -------
        Future
            Its result is the new model's directory (None when training failed: see ``error``).
        """
        with self._lock:
            self._job += 1
            job = self._job
        self._doc = pn.state.curdoc
        name = name or time.strftime("centre-%Y%m%d-%H%M%S")
        self.param.update(
            running=True, progress=0.0, error="", figures=None, model_dir="", status="Reading the labels…"
        )
        self.button.disabled = True
        if self._executor is None:
            self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="sss-viewer-train")
            if self._doc is not None and getattr(self._doc, "session_context", None) is not None:
                pn.state.on_session_destroyed(lambda _ctx: self.shutdown())
        self._future = self._executor.submit(self._run, job, bundled, name)
        return self._future

    def wait(self, timeout: float | None = None) -> bool:
        """Block until the current run has finished (tests, notebooks); False on timeout."""
        if self._future is None:
            return True
        try:
            self._future.result(timeout=timeout)
        except TimeoutError:
            return False
        return True

    def shutdown(self) -> None:
        """End the worker thread after the current run (its result is then not shown)."""
        with self._lock:
            self._job += 1
        if self._executor is not None:
            self._executor.shutdown(wait=False, cancel_futures=True)
            self._executor = None

    # -- worker -------------------------------------------------------------------------------

    def _run(self, job: int, bundled, name: str) -> Path | None:
        try:
            return self._train(job, bundled, name)
        except (ValueError, OSError, RuntimeError) as exc:
            logger.warning("Training in the viewer failed: %s", exc)
            self._publish(job, running=False, error=str(exc), status="No model trained.")
            return None
        finally:
            run_in_session(self._doc, lambda: setattr(self.button, "disabled", False))

    def _train(self, job: int, bundled, name: str) -> Path | None:
        if not (self.data_root and self.viewer_out and self.models_root):
            raise ValueError("Training needs a data root, the viewer's output folder and a models folder.")
        destination = Path(self.models_root) / name
        if destination.exists():
            raise ValueError(f"{destination} exists already; choose another name.")
        recordings = load_data(self.data_root)
        summary = apply_viewer_labels(recordings, self.data_root, self.viewer_out)
        labelled = [r for r in recordings if "labels_excluded" not in r.info]
        if not labelled:
            raise ValueError(
                f"No recording of {self.data_root} has a channel marked SOZ or not SOZ in {self.viewer_out}: mark "
                "channels in the SOZ column first."
            )
        subjects = sorted({r.subject or r.label for r in labelled})
        waits = (
            "Waiting for another training run of this viewer to finish, then training"
            if another_training_run_in_progress()  # runs of one process take turns (a seed gives one model)
            else "Training"
        )
        self._publish(
            job,
            progress=0.1,
            status=f"{waits} ({self.preset}) on {len(labelled)} labelled recording(s) of "
            f"{len(subjects)} patient(s): {summary['n_soz']} SOZ and {summary['n_not_soz']} not-SOZ channels…",
        )
        bundle = train(labelled, train_preset(self.preset, **dict(self.overrides)), progress=False)
        if job != self._job:
            return None
        bundle.info["description"] = (
            f"Trained in the viewer on {len(labelled)} recording(s) of {len(subjects)} patient(s) of {self.data_root}, "
            f"clinician labels from {self.viewer_out} ({self.preset} preset, {time.strftime('%Y-%m-%d %H:%M')})"
        )
        bundle.info["viewer_labels"] = {"viewer_out": str(self.viewer_out), **summary}
        self._publish(job, progress=0.7, status="Evaluating the new model on the patients it held out…")
        new = evaluate_bundle(bundle, labelled, held_out_only=True, progress=False)
        held_out = [r for r in labelled if r.subject in set(bundle.info["split"]["test"])]
        columns = {"new model": new}
        if bundled is not None:
            self._publish(job, progress=0.85, status="Evaluating the open model on the same recordings…")
            try:
                columns["open model"] = evaluate_bundle(bundled, held_out, held_out_only=False, progress=False)
            except (ValueError, OSError) as exc:  # another rate, too short…: the new model's figures still stand
                logger.warning("The open model could not be evaluated on the held-out recordings: %s", exc)
                columns["open model"] = {"pooled": {}, "per_patient": {}, "error": str(exc)}
        figures = _figures(columns)
        destination.parent.mkdir(parents=True, exist_ok=True)
        destination = bundle.save(destination)
        logger.info("Saved the viewer-trained model to %s", destination)
        test = ", ".join(bundle.info["split"]["test"])
        self._publish(
            job,
            running=False,
            progress=1.0,
            figures=figures,
            model_dir=str(destination),
            status=f"Saved **{name}** to the models folder (pick it under Model). Held-out patients: {test}.",
        )
        return Path(destination)

    def _publish(self, job: int, **values) -> None:
        def apply() -> None:
            if job == self._job:
                self.param.update(**values)

        run_in_session(self._doc, apply)

    # -- view ---------------------------------------------------------------------------------

    @param.depends("figures", watch=True)
    def _show(self) -> None:
        self._table.value = pd.DataFrame() if self.figures is None else self.figures.round(3)
        self._table_slot.objects = [self._table] if self.figures is not None and not self.figures.empty else []

    def __panel__(self):
        return pn.Column(
            pn.pane.Markdown("### Train a model on this centre's labels"),
            self.button,
            pn.indicators.Progress(
                value=pn.bind(lambda p: int(round(100 * p)), self.param.progress),
                max=100,
                visible=self.param.running,
                sizing_mode="stretch_width",
            ),
            pn.pane.Markdown(self.param.status, sizing_mode="stretch_width"),
            pn.pane.Alert(self.param.error, alert_type="danger", visible=pn.bind(bool, self.param.error)),
            self._table_slot,
            sizing_mode="stretch_width",
        )


def _figures(columns: dict[str, dict]) -> pd.DataFrame:
    """One row per pooled metric and per held-out patient's AUC, one column per model."""
    rows = {f"pooled {m}": {k: r["pooled"].get(m) for k, r in columns.items()} for m in FIGURES}
    patients = sorted({p for r in columns.values() for p in r.get("per_patient", {})})
    for p in patients:
        rows[f"AUC {p}"] = {k: r.get("per_patient", {}).get(p) for k, r in columns.items()}
    table = pd.DataFrame.from_dict(rows, orient="index").astype(float)
    return table.rename_axis("figure").reset_index()

"""The whole viewer: loading, scoring, traces + heat map, ranking, annotations, export.

``build_app()`` returns one ``ViewerApp`` — a ``pn.viewable.Viewer`` made of the components in this
package, wired through their ``param`` parameters. ``panel serve app.py`` calls it once per browser
session, so sessions never share state; in Jupyter the same object (or any of its parts) displays
as widgets.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path

import panel as pn
import param

from sss_viewer.checkpoint import ModelBundle
from sss_viewer.inference import RecordingScores
from sss_viewer.recording import Recording
from sss_viewer.viewer.annotations import AnnotationPanel, recording_stem
from sss_viewer.viewer.demo import DEMO_MODEL_DIR, demo_scores, load_demo
from sss_viewer.viewer.export import (
    download_buttons,
    export_basename,
    export_figure,
    export_ranking_csv,
    export_report_html,
    figure_bytes,
)
from sss_viewer.viewer.loader import ModelPicker, RecordingBrowser, check_fit, load_selected
from sss_viewer.viewer.ranking import RankingTable
from sss_viewer.viewer.scoring import BackgroundScorer, ScoringProgress
from sss_viewer.viewer.timecourse import SozTimeCourse
from sss_viewer.viewer.traces import TraceView

logger = logging.getLogger(__name__)

DEMO_NOTICE = (
    "**Demo**: a synthetic recording scored by a small demo model trained on synthetic data by this "
    "project's own training code. Not for clinical use."
)


def trace_markers(markers: list[dict]) -> list[dict]:
    """Annotation markers (``onset_s, duration_s, kind, text``) as the trace view draws them."""
    return [
        {"onset": m["onset_s"], "duration": m.get("duration_s", 0.0), "kind": m["kind"], "description": m.get("text", "")}
        for m in markers
    ]


class ViewerApp(pn.viewable.Viewer):
    """The clinician viewer for one session.

    Parameters
    ----------
    data_root : str or Path
        Folder the file browser may open (nothing outside it is reachable).
    model_dir : str or Path
        Model directory; the bundled demo model by default.
    out_dir : str or Path
        Where annotations sidecars and exports go (``./sss-viewer-output`` by default).
    load_demo : bool
        Open the bundled demo recording with precomputed scores at start.
    """

    recording = param.ClassSelector(class_=Recording, default=None, allow_None=True)
    bundle = param.ClassSelector(class_=ModelBundle, default=None, allow_None=True)
    scores = param.ClassSelector(class_=RecordingScores, default=None, allow_None=True)
    message = param.String(default="", doc="Last error or notice, shown above the plots.")
    is_demo = param.Boolean(default=False)
    out_dir = param.Path(default=None, allow_None=True, check_exists=False)

    def __init__(self, data_root=None, model_dir=None, out_dir=None, load_demo: bool = True, **params):
        super().__init__(out_dir=Path(out_dir or os.environ.get("SSS_VIEWER_OUTPUT", "sss-viewer-output")), **params)
        root = Path(data_root or os.environ.get("SSS_VIEWER_DATA_ROOT") or Path.cwd())
        self.browser = RecordingBrowser(
            data_root=root, max_upload_mb=float(os.environ.get("SSS_VIEWER_MAX_UPLOAD_MB") or 512)
        )
        self.models = ModelPicker(model_dir=Path(model_dir or os.environ.get("SSS_VIEWER_MODEL") or DEMO_MODEL_DIR))
        self.scorer = BackgroundScorer()
        # The overview's datashader compile (≈ 4 s once per process) waits until the page has loaded,
        # so the ranking, traces and heat map appear first (in Jupyter onload runs at once).
        self.traces = TraceView(show_overview=False)
        self.timecourse = SozTimeCourse()
        self.ranking = RankingTable()
        self.annotations = AnnotationPanel()
        self._message = pn.pane.Alert("", alert_type="danger", visible=False, sizing_mode="stretch_width")
        self._notice = pn.pane.Alert(DEMO_NOTICE, alert_type="info", visible=False, sizing_mode="stretch_width")
        self._wire()
        self.bundle = self.models.bundle
        if load_demo:
            self.open_demo()
        pn.state.onload(self._enable_overview)

    def _enable_overview(self) -> None:
        self.traces.show_overview = True

    # ------------------------------------------------------------------ wiring
    def _wire(self) -> None:
        self.browser.param.watch(lambda e: e.new and self.open(e.new), "selected")
        self.models.param.watch(self._on_model, "bundle")
        self.scorer.param.watch(self._on_scores, "result")
        self.scorer.param.watch(lambda e: e.new and self._show_message(e.new), "error")
        self.ranking.param.watch(self._on_selected, "selected_channel")
        self.annotations.param.watch(self._on_annotations, ["markers", "bad_channels"])
        self.traces.param.watch(lambda e: setattr(self.annotations, "current_time_s", float(e.new)), "start_s")

    def _show_message(self, text: str) -> None:
        self.message = text
        self._message.object = text
        self._message.visible = bool(text)

    def _on_model(self, event) -> None:
        bundle = event.new
        if bundle is None:
            return
        if self.recording is not None:
            reason = check_fit(bundle, self.recording)
            if reason:
                self._show_message(f"Model {self.models.model_dir} cannot score {self.recording.label}: {reason}")
                return
        self.bundle = bundle
        self.ranking.threshold = float(bundle.threshold)
        if self.recording is not None:
            self.scorer.start(bundle, self.recording)

    def _on_scores(self, event) -> None:
        if event.new is not None:
            self._set_scores(event.new)

    def _on_selected(self, event) -> None:
        if event.new:
            self.traces.focus_channel = event.new

    def _on_annotations(self, *events) -> None:
        for event in events:
            if event.name == "markers":
                self.traces.markers = trace_markers(event.new)
            else:
                bad = list(event.new)
                self.traces.bad_channels = bad
                self.ranking.bad_channels = bad
                self.timecourse.bad_channels = bad

    # ------------------------------------------------------------------ actions
    def open(self, path) -> bool:
        """Load ``path`` and score it in the background; on failure keep the current view and say why."""
        try:
            recording = load_selected(path)
        except (OSError, ValueError) as exc:
            self._show_message(f"Could not open {Path(path).name}: {exc}")
            return False
        if self.bundle is not None:
            reason = check_fit(self.bundle, recording)
            if reason:
                self._show_message(f"{recording.label} cannot be scored with this model: {reason}")
                return False
        self._show_message("")
        self._set_recording(recording, is_demo=False)
        if self.bundle is not None:
            self.scorer.start(self.bundle, recording)
        return True

    def open_demo(self) -> None:
        """Show the bundled demo recording with its precomputed scores."""
        recording = load_demo()
        self._set_recording(recording, is_demo=True)
        self._set_scores(demo_scores())

    def _set_recording(self, recording: Recording, *, is_demo: bool) -> None:
        self.is_demo = is_demo
        self._notice.visible = is_demo
        self.recording = recording
        self.scores = None
        self.annotations.set_recording(recording, self.out_dir)
        self.traces.param.update(
            recording=recording, scores=None, start_s=0.0, page=0, focus_channel="",
            bad_channels=list(self.annotations.bad_channels), markers=trace_markers(self.annotations.markers),
        )  # fmt: skip

    def _set_scores(self, scores: RecordingScores) -> None:
        self.scores = scores
        soz = []
        if self.recording is not None and self.recording.soz is not None:
            soz = [c for c, s in zip(self.recording.ch_names, self.recording.soz) if s]
        if self.bundle is not None:
            self.ranking.threshold = float(self.bundle.threshold)
        self.ranking.param.update(scores=scores, bad_channels=list(self.annotations.bad_channels))
        self.traces.scores = scores
        self.timecourse.param.update(scores=scores, soz_channels=soz, bad_channels=list(self.annotations.bad_channels))

    # ------------------------------------------------------------------ export
    @property
    def model_description(self) -> str:
        """What the model is, for reports (the demo model says it was trained on synthetic data)."""
        if self.bundle is None:
            return "no model"
        return str(self.bundle.info.get("description") or f"model {self.models.model_dir}")

    @property
    def is_demo_model(self) -> bool:
        """True for the bundled demo model."""
        return self.bundle is not None and "demo model" in self.model_description.lower()

    def export_basename(self) -> str:
        """File-name base: recording stem and the visible time range."""
        if self.recording is None:
            return "recording"
        t0 = float(self.traces.start_s)
        return export_basename(recording_stem(self.recording), t0, t0 + float(self.traces.span_s))

    def _figure(self):
        return self.traces.figure()

    def _report(self, path: Path, figure, overwrite: bool) -> Path:
        return export_report_html(
            path, figure=figure, ranking_df=self.ranking.table(), recording_label=self.recording.label,
            model_description=self.model_description, annotations=self.annotations.annotations,
            demo_model=self.is_demo_model, threshold=float(self.ranking.threshold),
            agreement=self._agreement_text(), overwrite=overwrite,
        )  # fmt: skip

    def _agreement_text(self) -> str | None:
        from sss_viewer.viewer.ranking import agreement_text

        metrics = self.ranking.agreement()
        return agreement_text(metrics) if metrics is not None else None

    def _report_bytes(self) -> bytes:
        import tempfile

        png, _ = figure_bytes(self._figure(), "png")
        with tempfile.TemporaryDirectory() as tmp:
            return self._report(Path(tmp) / "report.html", png, overwrite=True).read_bytes()

    def export(self, out_dir, *, overwrite: bool = False) -> dict[str, Path]:
        """Write the current view's figure (PNG, SVG, HTML), the ranking CSV and the one-page report.

        Files are named after the recording and the visible time range, written atomically, and
        never overwrite an existing file unless ``overwrite``.

        Returns
        -------
        paths : dict
            ``{"png", "svg", "html", "csv", "report"}`` → written file.
        """
        if self.recording is None or self.scores is None:
            raise ValueError("Nothing to export: open and score a recording first.")
        out_dir = Path(out_dir)
        out_dir.mkdir(parents=True, exist_ok=True)
        base = out_dir / self.export_basename()
        figure = self._figure()
        paths = {}
        for fmt in ("png", "svg", "html"):
            paths[fmt] = Path(f"{base}.{fmt}")
            export_figure(figure, paths[fmt], overwrite=overwrite)
        paths["csv"] = export_ranking_csv(self.ranking.table(), f"{base}_ranking.csv", overwrite=overwrite)
        paths["report"] = self._report(Path(f"{base}_report.html"), paths["png"], overwrite)
        return paths

    def _downloads(self) -> list:
        return download_buttons(
            lambda: figure_bytes(self._figure(), "png")[0],
            lambda: figure_bytes(self._figure(), "svg")[0],
            lambda: self.ranking.table().to_csv(index=False),
            self._report_bytes,
            basename=self.export_basename,
            on_error=self._show_message,
        )

    # ------------------------------------------------------------------ layout
    def __panel__(self):
        sidebar = pn.Column(
            "### Recording", self.browser, "### Model", self.models, ScoringProgress(scorer=self.scorer),
            "### Annotations", self.annotations, "### Export", *self._downloads(), width=340,
        )  # fmt: skip
        main = pn.Column(
            self._notice, self._message, self.traces, self.timecourse, "### Channel ranking", self.ranking,
            sizing_mode="stretch_width",
        )  # fmt: skip
        return pn.Row(sidebar, main, sizing_mode="stretch_width")


def build_app(**params) -> ViewerApp:
    """A new viewer for one session (``panel serve app.py`` calls this per browser session)."""
    pn.extension("tabulator", "filedropper", notifications=True)
    return ViewerApp(**params)

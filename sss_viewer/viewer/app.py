"""The whole viewer: loading, scoring (the SSS model or a training-free marker), traces + heat map, ranking,
a second scorer's ranking beside it, annotations, export.

``build_app()`` returns one ``ViewerApp`` — a ``pn.viewable.Viewer`` made of the components in this
package, wired through their ``param`` parameters. ``panel serve app.py`` calls it once per browser
session, so sessions never share state; in Jupyter the same object (or any of its parts) displays
as widgets.
"""

from __future__ import annotations

import dataclasses
import logging
import os
from pathlib import Path

import panel as pn
import param

from sss_viewer.biomarkers import FITTED, MODEL_SCORER
from sss_viewer.engine.bundle import ModelBundle
from sss_viewer.engine.inference import RecordingScores, check_fit, fine_heat_stride
from sss_viewer.io._channel_conventions import apply_type_overrides
from sss_viewer.io.annotation_store import recording_stem
from sss_viewer.io.recording import Recording
from sss_viewer.viewer._access import refusal
from sss_viewer.viewer._annotations import AnnotationPanel
from sss_viewer.viewer._channel_types import ChannelTypeEditor
from sss_viewer.viewer._export_widgets import download_buttons
from sss_viewer.viewer._keyboard import KeyboardReview
from sss_viewer.viewer._loader import ModelPicker, RecordingBrowser, load_selected
from sss_viewer.viewer._report_figure import ReportView, choose_report_view, report_figure
from sss_viewer.viewer._scorers import (
    NO_COMPARISON,
    ScorerComparison,
    ScorerPicker,
    make_scorer,
    model_scorer_info,
)
from sss_viewer.viewer._scoring import BackgroundScorer, ScoringProgress, is_marker
from sss_viewer.viewer._spectrum import FocusSpectrum
from sss_viewer.viewer._train_panel import TrainPanel
from sss_viewer.viewer.demo import DEMO_MODEL_DIR, demo_marker_scores, demo_scores, load_demo
from sss_viewer.viewer.export import (
    BrowserUnavailable,
    export_basename,
    export_figure,
    export_ranking_csv,
    export_report_html,
    figure_bytes,
)
from sss_viewer.viewer.patient_ranking import PatientRankingPanel
from sss_viewer.viewer.ranking import RankingTable
from sss_viewer.viewer.recording_heatmap import RecordingHeatmap, first_onset
from sss_viewer.viewer.timecourse import SozTimeCourse
from sss_viewer.viewer.traces import TraceView

logger = logging.getLogger(__name__)

ANNOTATION_POLL_MS = 3000
"""How often a session looks for annotation changes saved by another session."""
FIRST_VIEW_GRACE_S = 1.5
"""A newly opened recording's scoring starts this long after the click, once its first view is drawn
and sent (on two cores a scorer started at once doubles the time to the first view); minutes of
scoring are not delayed noticeably, and cached scores are shown at once."""

DEMO_NOTICE = (
    "**Demo**: a synthetic recording scored by a small demo model trained on synthetic data by this "
    "project's own training code. Not for clinical use."
)
DEMO_MARKER_NOTICE = (
    "**Demo**: a synthetic recording, ranked here by {title} (the SSS demo model among the scorers was trained "
    "on synthetic data by this project's own training code). Not for clinical use."
)
"""The demo's notice while a training-free marker ranks it."""


def trace_markers(markers: list[dict]) -> list[dict]:
    """Annotation markers (``onset_s, duration_s, kind, text``) as the trace view draws them."""
    return [
        {
            "onset": m["onset_s"],
            "duration": m.get("duration_s", 0.0),
            "kind": m["kind"],
            "description": m.get("text", ""),
        }
        for m in markers
    ]


class ViewerApp(pn.viewable.Viewer):
    """The clinician viewer for one session.

    The recording is ranked by the scorer chosen in :attr:`scorers` ("Ranking by": the SSS model
    of :attr:`models`, or a training-free marker; default
    :data:`sss_viewer.biomarkers.DEFAULT_SCORER`), scored in the background by :attr:`scorer`; a
    second scorer ("Compare with") is scored by :attr:`compare_scorer` and shown beside it in
    :attr:`comparison`.

    Parameters
    ----------
    data_root : str or Path
        Folder the file browser may open (nothing outside it is reachable).
    model_dir : str or Path
        Model directory; the bundled demo model by default.
    out_dir : str or Path
        Where annotations sidecars and exports go (``./sss-viewer-output`` by default).
    load_demo : bool
        Open the bundled demo recording at start: with its precomputed scores when the SSS model
        ranks, else scored by the chosen marker (about a second).
    scorer : str, optional
        Registry name of the scorer that ranks (default :data:`~sss_viewer.biomarkers.DEFAULT_SCORER`).
    """

    recording = param.ClassSelector(class_=Recording, default=None, allow_None=True)
    bundle = param.ClassSelector(class_=ModelBundle, default=None, allow_None=True)
    scores = param.ClassSelector(class_=RecordingScores, default=None, allow_None=True)
    message = param.String(default="", doc="Last error or notice, shown above the plots.")
    scoring_disabled = param.String(
        default="", doc="Why the chosen scorer does not score this recording (empty when it does)."
    )
    is_demo = param.Boolean(default=False)
    out_dir = param.Path(default=None, allow_None=True, check_exists=False)

    def __init__(
        self, data_root=None, model_dir=None, out_dir=None, load_demo: bool = True, scorer: str | None = None, **params
    ):
        super().__init__(out_dir=Path(out_dir or os.environ.get("SSS_VIEWER_OUTPUT", "sss-viewer-output")), **params)
        root = Path(data_root or os.environ.get("SSS_VIEWER_DATA_ROOT") or Path.cwd())
        self.browser = RecordingBrowser(
            data_root=root, max_upload_mb=float(os.environ.get("SSS_VIEWER_MAX_UPLOAD_MB") or 512)
        )
        model_dir = Path(model_dir or os.environ.get("SSS_VIEWER_MODEL") or DEMO_MODEL_DIR).absolute()
        self.models = ModelPicker(models_root=str(model_dir.parent), model=model_dir.name)
        self.scorers = ScorerPicker(**({"scorer": scorer} if scorer else {}))
        self.scorer = BackgroundScorer(session_start_delay_s=FIRST_VIEW_GRACE_S)
        self.compare_scorer = BackgroundScorer(session_start_delay_s=FIRST_VIEW_GRACE_S)
        self.comparison = ScorerComparison()
        self._demo_scores: RecordingScores | None = None
        # The overview's datashader compile (≈ 4 s once per process) waits until the page has loaded,
        # so the ranking, traces and heat map appear first (in Jupyter onload runs at once).
        self.traces = TraceView(show_overview=False)
        self.timecourse = SozTimeCourse()
        self.spectrum = FocusSpectrum(traces=self.traces)  # computed only while its checkbox is on
        self.recording_heat = RecordingHeatmap()  # whole recording, channels by rank, onset-locked
        self.ranking = RankingTable()
        self.annotations = AnnotationPanel(data_root=str(root))  # sidecars keyed by the path below the data root
        self.keyboard = KeyboardReview(traces=self.traces, annotations=self.annotations)  # keys page, scale, mark
        self.channel_types = ChannelTypeEditor()
        self.patient = PatientRankingPanel()
        # a centre's own model from its clinicians' labels (issue 31): saved beside the viewer's sidecars
        self.trainer = TrainPanel(
            data_root=str(root), viewer_out=str(self.out_dir), models_root=str(Path(self.out_dir) / "models")
        )
        self.trainer.set_comparison(self.models.bundle)
        self._source_recording: Recording | None = None
        self._navigated = False
        self._opening = False
        self._span_s = float(self.traces.span_s)  # the span the user chose (a short recording's clamp is not one)
        self._view_window: tuple[float, float] | None = None
        self._message = pn.pane.Alert("", alert_type="danger", visible=False, sizing_mode="stretch_width")
        self._notice = pn.pane.Alert(DEMO_NOTICE, alert_type="info", visible=False, sizing_mode="stretch_width")
        self._disabled = pn.pane.Alert("", alert_type="warning", visible=False, sizing_mode="stretch_width")
        self._wire()
        self.bundle = self.models.bundle
        self._update_patient_button()
        if load_demo:
            self.open_demo()
        pn.state.onload(self._enable_overview)

    def _enable_overview(self) -> None:
        self.traces.show_overview = True
        # Another session's saved marks, labels and bad channels appear here within seconds.
        pn.state.add_periodic_callback(self.annotations.poll, period=ANNOTATION_POLL_MS)

    # ------------------------------------------------------------------ wiring
    def _wire(self) -> None:
        self.browser.param.watch(lambda e: e.new and self.open(e.new), "selected")
        self.models.param.watch(self._on_model, "bundle")
        self.models.param.watch(lambda e: self.trainer.set_comparison(e.new), "bundle")
        self.trainer.param.watch(self._on_trained_model, "model_dir")
        self.scorer.param.watch(self._on_scores, "result")
        self.scorer.param.watch(self._on_partial_scores, "partial")
        self.scorer.param.watch(lambda e: e.new and self._show_message(e.new), "error")
        self.scorers.param.watch(self._on_scorer_choice, "scorer")
        self.scorers.param.watch(lambda _event: self._score_comparison(), "compare")
        self.compare_scorer.param.watch(self._on_compare_scores, "result")
        self.compare_scorer.param.watch(self._on_compare_error, "error")
        self.ranking.param.watch(
            lambda e: self.comparison.param.update(**{e.name: e.new}),
            ["threshold", "bad_channels", "clinician_labels", "display_names"],
        )
        self.ranking.param.watch(self._on_selected, "selected_channel")
        self.annotations.param.watch(self._on_annotations, ["markers", "bad_channels"])
        self.annotations.param.watch(self._on_soz_labels, "soz_labels")
        self.ranking.param.watch(self._on_label_edit, "clinician_labels")
        self.annotations.param.watch(self._on_type_overrides, "type_overrides")
        self.channel_types.param.watch(self._on_type_request, "requested")
        self.browser.param.watch(self._update_patient_button, ["bids_subject", "is_bids"])
        self.patient.button.on_click(lambda _event: self.rank_patient())
        self.traces.param.watch(self._on_navigate, ["start_s", "page", "span_s"])
        # the whole-recording heat map follows the time course's scores and bad channels, and the first onset
        self.timecourse.param.watch(lambda e: setattr(self.recording_heat, e.name, e.new), ["scores", "bad_channels"])
        self.ranking.param.watch(lambda e: setattr(self.recording_heat, "display_names", dict(e.new)), "display_names")
        self.annotations.param.watch(lambda e: setattr(self.recording_heat, "onset_s", first_onset(e.new)), "markers")
        self.recording_heat.param.watch(  # a click on the heat map: that channel, centred on that time
            lambda e: (
                e.new is not None
                and self.traces.param.update(
                    focus_channel=e.new[0],
                    start_s=max(
                        0.0, min(e.new[1] - self.traces.span_s / 2, self.traces.duration_s - self.traces.span_s)
                    ),
                )
            ),
            "selected",
        )
        self.traces.param.watch(lambda e: setattr(self.annotations, "current_time_s", float(e.new)), "start_s")
        self.annotations.param.watch(  # "Go to": centre the view on the marker (the marker is not changed)
            lambda e: (
                e.new is not None
                and setattr(
                    self.traces,
                    "start_s",
                    max(0.0, min(float(e.new) - self.traces.span_s / 2, self.traces.duration_s - self.traces.span_s)),
                )
            ),
            "goto_s",
        )
        self.traces.cursor.param.watch(  # a double-click or x-drag on the traces in a "click adds" mode
            lambda e: (
                e.new
                and self.annotations.add_marker(e.new["kind"], onset_s=e.new["onset_s"], duration_s=e.new["duration_s"])
            ),
            "marker_request",
        )

    def _on_trained_model(self, event) -> None:
        """A model trained on this data root's labels: list its folder in the model picker and pick it."""
        if not event.new:
            return
        folder = Path(event.new)
        self.models.models_root = str(folder.parent)
        self.models._scan()
        self.models.model = folder.name

    def _update_patient_button(self, *_events) -> None:
        """The BIDS picker's "rank over all runs" button names the subject and its number of runs."""
        subject = self.browser.bids_subject
        runs = self.browser.bids_runs(subject) if subject else {}
        button = self.patient.button
        button.visible = bool(self.browser.is_bids and subject)
        button.disabled = not runs or self.bundle is None
        button.label = f"Rank {subject}'s channels over {len(runs)} run{'s' * (len(runs) != 1)}" if subject else ""

    def rank_patient(self, subject: str | None = None):
        """Rank ``subject``'s channels (default: the BIDS picker's) over all of its runs with the open model.

        Returns the :class:`~concurrent.futures.Future` of :meth:`PatientRankingPanel.rank`, or None
        when there is no model or no such subject.
        """
        subject = subject or self.browser.bids_subject
        runs = self.browser.bids_run_files(subject) if subject else {}
        if self.bundle is None or not runs:
            self._show_message("Choose a BIDS subject with runs and load a model to rank its channels over all runs.")
            return None
        return self.patient.rank(self.bundle, subject, runs)

    def _show_message(self, text: str) -> None:
        self.message = text
        self._message.object = text
        self._message.visible = bool(text)

    def _set_disabled(self, reason: str) -> None:
        """Show (or clear) why scoring is off for this recording, next to the model picker."""
        self.scoring_disabled = reason
        self._disabled.object = f"**Scoring disabled** for this recording: {reason}" if reason else ""
        self._disabled.visible = bool(reason)

    def _scorer_for(self, name: str, recording: Recording):
        """``(scorer, reason)``: the model bundle or a new marker for ``name``, and why it cannot score ``recording`` (or None)."""
        if name == MODEL_SCORER:
            if self.bundle is None:
                return None, "no model is loaded."
            return self.bundle, check_fit(self.bundle, recording)
        title = self.scorers.title(name)
        try:
            scorer = make_scorer(name)
        except (ImportError, ValueError) as exc:
            return None, f"{title} is not available: {exc}"
        return scorer, scorer.check_fit(recording)

    def _start(self, background: BackgroundScorer, scorer, recording: Recording) -> None:
        """Start ``background`` on ``recording`` with a marker, or with the model (visible page first, fine heat map)."""
        if is_marker(scorer):
            background.start(scorer, recording)
        else:
            background.start(
                scorer, recording, first_channels=self.traces.page_contacts(), heat_stride=fine_heat_stride(scorer)
            )

    def demo_scores(self) -> RecordingScores:
        """The demo recording's precomputed scores by the bundled model (read once per session)."""
        if self._demo_scores is None:
            self._demo_scores = demo_scores()
        return self._demo_scores

    def types_corrected(self) -> bool:
        """Whether the open recording's channel types differ from its file's (a clinician's correction)."""
        source, recording = self._source_recording, self.recording
        if source is None or recording is None:
            return False
        return list(recording.ch_types) != list(source.ch_types)

    def _precomputed_demo(self) -> bool:
        """Whether the demo's precomputed scores stand for the open recording: the demo with its file's channel types.

        A corrected type (a contact typed ECG, a spare typed SEEG) changes which channels are scored, so
        the demo is then rescored like any recording.
        """
        return self.is_demo and not self.types_corrected()

    def _score_if_possible(self) -> None:
        """Score the open recording with the chosen scorer, or say why not (the recording stays open for reading).

        The demo ranked by the SSS model shows its precomputed scores at once (unless its channel types
        were corrected: then it is rescored).
        """
        recording = self.recording
        if recording is None:
            return
        name = self.scorers.scorer
        precomputed = self._precomputed_demo()
        if precomputed and name == MODEL_SCORER:
            self.scorer.cancel()
            self._set_disabled("")
            self._set_scores(self.demo_scores())
            return
        if precomputed and name not in FITTED:  # a marker's demo ranking: computed once per machine, then read
            self.scorer.cancel()
            self._set_disabled("")
            self._set_scores(demo_marker_scores(name))
            return
        scorer, reason = self._scorer_for(name, recording)
        if reason:
            self.scorer.cancel()
            self._set_disabled(reason)
            return
        self._set_disabled("")
        self._start(self.scorer, scorer, recording)

    def _clear_scores(self) -> None:
        self.scores = None
        self.ranking.scores = None
        self.traces.scores = None
        self.timecourse.scores = None
        self.comparison.first = None

    def _on_model(self, event) -> None:
        bundle = event.new
        if bundle is None:
            return
        self.bundle = bundle
        self._update_patient_button()
        if self.scorers.scorer == MODEL_SCORER:
            self.ranking.threshold = float(bundle.threshold)
            if self.recording is not None and not self._precomputed_demo():
                self._clear_scores()
                self._score_if_possible()
        if self.scorers.compare == MODEL_SCORER and self.recording is not None and not self._precomputed_demo():
            self._score_comparison()

    def _on_scorer_choice(self, event) -> None:
        """Another scorer ranks the recording: rescore it in the background (the old ranking is cleared meanwhile)."""
        if self.recording is None:
            return
        self._clear_scores()
        self._score_if_possible()

    def _score_comparison(self) -> None:
        """Score the open recording with the "Compare with" scorer (or clear the comparison when none is chosen)."""
        name, recording = self.scorers.compare, self.recording
        self.comparison.second = None
        if name == NO_COMPARISON or recording is None:
            self.compare_scorer.cancel()
            self.comparison.param.update(status="", second_title="")
            return
        title = self.scorers.title(name)
        self.comparison.second_title = title
        if self._precomputed_demo() and name == MODEL_SCORER:
            self.compare_scorer.cancel()
            self.comparison.param.update(status="", second=self.described(self.demo_scores()))
            return
        scorer, reason = self._scorer_for(name, recording)
        if reason:
            self.compare_scorer.cancel()
            self.comparison.status = f"**{title} cannot score this recording:** {reason}"
            return
        self.comparison.status = f"Scoring with {title}…"
        self._start(self.compare_scorer, scorer, recording)

    def _on_compare_scores(self, event) -> None:
        if event.new is not None:
            self.comparison.param.update(status="", second=self.described(event.new))

    def _on_compare_error(self, event) -> None:
        if event.new:
            self.comparison.param.update(second=None, status=f"**{self.comparison.second_title}:** {event.new}")

    def described(self, scores: RecordingScores) -> RecordingScores:
        """``scores`` with its ``scorer_info`` filled in: a model's from its bundle (:func:`model_scorer_info`)."""
        if scores.scorer_info or scores.scorer != MODEL_SCORER or self.bundle is None:
            return scores
        return dataclasses.replace(scores, scorer_info=model_scorer_info(self.bundle, self.models.model_dir))

    def _on_scores(self, event) -> None:
        if event.new is not None:
            self._set_scores(self.described(event.new))

    def _on_partial_scores(self, event) -> None:
        """The visible channels' scores while the others are scored: the heat map only.

        The ranking, the time course and the move to the top channel wait for the whole recording
        (a ranking of a few channels would read as the recording's).
        """
        if event.new is not None and self.scores is None:
            self.traces.scores = event.new

    def _on_selected(self, event) -> None:
        """A ranking row clicked: bring its channel into view — again, when it is the channel already focused."""
        if not event.new:
            return
        if self.traces.focus_channel == event.new:
            self.traces.param.trigger("focus_channel")  # paged away since: the same channel is shown again
        else:
            self.traces.focus_channel = event.new

    def _on_navigate(self, *events) -> None:
        """The user moved (time, span or page): the view stays where they put it when scores arrive.

        A change that shows the same stretch of time is not a move: the browser narrows the span to a
        recording shorter than it (10 s on a 6-s recording shows the whole 6 s either way), and that
        neither counts as navigating nor becomes the span the next recording opens with.
        """
        window = self.traces.window()
        if self._opening:
            self._view_window = window
            return
        timing = all(e.name in ("start_s", "span_s") for e in events)
        same_view = self._view_window is not None and all(abs(a - b) < 1e-6 for a, b in zip(window, self._view_window))
        self._view_window = window
        for event in events:
            if event.name == "span_s" and not self._whole_recording_clamp(float(event.new)):
                self._span_s = float(event.new)
        if timing and same_view:
            return
        self._navigated = True

    def _whole_recording_clamp(self, span: float) -> bool:
        """Whether ``span`` is the open recording's whole length standing in for the user's longer span."""
        duration = float(self.traces.duration_s)
        return duration > 0 and abs(span - duration) < 1e-6 and self._span_s >= duration - 1e-6

    def soz_channels(self) -> list[str]:
        """SOZ channels: the recording's labels with the clinician's (from the ranking table) on top."""
        recording = self.recording
        if recording is None:
            return []
        soz = set()
        if recording.soz is not None:
            soz = {c for c, s in zip(recording.ch_names, recording.soz) if s}
        for channel, value in self.annotations.soz_labels.items():
            (soz.add if value else soz.discard)(channel)
        return [c for c in recording.ch_names if c in soz]

    def _on_soz_labels(self, event) -> None:
        self.ranking.clinician_labels = dict(event.new)
        self.timecourse.soz_channels = self.soz_channels()

    def _on_label_edit(self, event) -> None:
        """A label set in the ranking table goes to the annotations (saved, undoable, merged)."""
        labels, current = dict(event.new), dict(self.annotations.soz_labels)
        if labels == current:
            return
        for channel in set(labels) | set(current):
            if labels.get(channel) != current.get(channel):
                self.annotations.set_soz_label(channel, labels.get(channel))

    def _on_type_request(self, event) -> None:
        if event.new:
            channel, ch_type = event.new
            self.annotations.set_channel_type(channel, ch_type)

    def _on_type_overrides(self, event) -> None:
        """Types corrected by the clinician: rebuild the recording's types and rescore (the demo too).

        While a recording opens, its saved corrections are applied by :meth:`_set_recording` itself.
        """
        if self._opening or self._source_recording is None or self.recording is None:
            return
        try:
            recording = apply_type_overrides(self._source_recording, dict(event.new))
        except ValueError as exc:
            self._show_message(str(exc))
            return
        if list(recording.ch_types) == list(self.recording.ch_types):
            return
        self.recording = recording
        self.channel_types.types = dict(zip(recording.ch_names, recording.ch_types))
        self.traces.recording = recording
        self._clear_scores()  # the old ranking scored other channels: it goes until the new one is ready
        self._score_if_possible()
        self._score_comparison()

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
        """Load ``path`` for reading and score it in the background when the model fits.

        A file that cannot be read keeps the current view and says why. A recording the model
        cannot score (too short, a rate below the model's, no iEEG channel) still opens — traces,
        montages, filters, annotations and export work — with scoring disabled and the reason shown
        next to the model picker.
        """
        try:
            recording = load_selected(path)
        except (OSError, ValueError) as exc:
            self._show_message(f"Could not open {Path(path).name}: {exc}")
            return False
        self._show_message("")
        self._set_recording(recording, is_demo=False)
        self._score_if_possible()
        self._score_comparison()
        return True

    def open_demo(self) -> None:
        """Show the bundled demo recording: with its precomputed scores when the SSS model ranks, else scored by the chosen marker."""
        self.scorer.cancel()
        self._set_disabled("")
        recording = load_demo()
        self._set_recording(recording, is_demo=True)
        self._score_if_possible()
        self._score_comparison()

    def first_view_start(self, recording: Recording, span_s: float | None = None) -> float:
        """Where the first view opens: a little before the first seizure-onset marker, else the start.

        The onset sits a quarter of the way into the view (of ``span_s``, default the view's span),
        so the build-up before it is in sight.
        """
        onsets = [m["onset_s"] for m in self.annotations.markers if m["kind"] == "onset"]
        if not onsets:
            return 0.0
        span = float(self.traces.span_s if span_s is None else span_s)
        latest = max(0.0, recording.duration_s - span)
        return float(min(max(0.0, min(onsets) - span / 4), latest))

    def _set_recording(self, recording: Recording, *, is_demo: bool) -> None:
        self.is_demo = is_demo
        self._notice.visible = is_demo
        self._source_recording = recording
        self.scores = None
        self.comparison.param.update(first=None, second=None, status="")
        self._opening = True
        try:
            self.annotations.set_recording(recording, self.out_dir)
            overrides = dict(self.annotations.type_overrides)
            if overrides:
                try:
                    recording = apply_type_overrides(recording, overrides)
                except ValueError as exc:
                    self._show_message(str(exc))
            self.recording = recording
            names = dict(zip(recording.ch_names, recording.display_names))
            self.channel_types.param.update(
                channels=list(recording.ch_names),
                types=dict(zip(recording.ch_names, recording.ch_types)),
                display_names=names,
            )
            self.ranking.param.update(
                scores=None, display_names=names, clinician_labels=dict(self.annotations.soz_labels)
            )
            self.timecourse.scores = None
            span = self._span_s  # the user's span, not one a shorter recording narrowed
            self.traces.param.update(
                recording=recording,
                scores=None,
                span_s=span,
                start_s=self.first_view_start(recording, span),
                page=0,
                focus_channel="",
                bad_channels=list(self.annotations.bad_channels),
                markers=trace_markers(self.annotations.markers),
            )
            self._view_window = self.traces.window()
            self._navigated = False
        finally:
            self._opening = False

    def _set_scores(self, scores: RecordingScores) -> None:
        scores = self.described(scores)
        self.scores = scores
        if self.is_demo:
            title = str((scores.scorer_info or {}).get("title") or scores.scorer)
            self._notice.object = (
                DEMO_NOTICE if scores.scorer == MODEL_SCORER else DEMO_MARKER_NOTICE.format(title=title)
            )
        soz = self.soz_channels()
        if scores.scorer != MODEL_SCORER:
            self.ranking.threshold = float(self._marker_threshold(scores.scorer))
        elif self.bundle is not None:
            self.ranking.threshold = float(self.bundle.threshold)
        self.comparison.param.update(
            first=scores,
            threshold=float(self.ranking.threshold),
            bad_channels=list(self.ranking.bad_channels),
            clinician_labels=dict(self.ranking.clinician_labels),
            display_names=dict(self.ranking.display_names),
        )
        self.ranking.param.update(scores=scores, bad_channels=list(self.annotations.bad_channels))
        self.traces.scores = scores
        self.timecourse.param.update(scores=scores, soz_channels=soz, bad_channels=list(self.annotations.bad_channels))
        self._show_top_channel()

    @staticmethod
    def _marker_threshold(name: str) -> float:
        """A marker's default highlight threshold on its 0–1 score (half the top channel's value unless it says otherwise)."""
        try:
            return float(make_scorer(name).threshold)
        except (ImportError, ValueError):
            return 0.5

    def _show_top_channel(self) -> None:
        """Once scored, bring the top-ranked channel's page into view — unless the user has moved already."""
        if self._navigated:
            return
        table = self.ranking.table()
        if len(table):
            self._opening = True
            try:
                self.traces.focus_channel = str(table["channel"].iloc[0])
            finally:
                self._opening = False

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

    def report_view(self) -> ReportView:
        """What the report's figure shows, whatever is on screen: the top-ranked channels around the first onset.

        See :func:`sss_viewer.viewer._report_figure.choose_report_view` (no onset: around the top
        channel's highest-scoring window).
        """
        return choose_report_view(
            self.ranking.table() if self.scores is not None else None,
            shown=self.traces.contacts(),
            duration_s=float(self.traces.duration_s),
            onset_s=first_onset(self.annotations.markers),
            soz_channels=self.soz_channels(),
            scores=self.scores,
        )

    def _report(self, path: Path, overwrite: bool) -> Path:
        """The one-page report; its figure is :meth:`report_view` (a copy of the trace view), not the page on screen."""
        by_model = self.scorers.scorer == MODEL_SCORER
        description = (
            self.model_description if by_model else f"{self.scorers.title()}: a training-free marker (nothing fitted)"
        )
        view = self.report_view()
        figure = report_figure(self.traces, view, self.scores, bad_channels=list(self.annotations.bad_channels))
        return export_report_html(
            path,
            figure=figure,
            figure_caption=view.caption(self.traces.montage),
            ranking_df=self.ranking.table(),
            recording_label=self.recording.label,
            model_description=description,
            annotations=self.annotations.annotations,
            demo_model=self.is_demo_model and by_model,
            threshold=float(self.ranking.threshold),
            agreement=self._agreement_text(),
            overwrite=overwrite,
            notes=f"Not scored: {self.scoring_disabled}" if self.scoring_disabled else None,
            scorer_info=self.ranking.scorer_info() or None,
            comparison=self.comparison.text(),
        )

    def _agreement_text(self) -> str | None:
        from sss_viewer.viewer.ranking import agreement_text

        metrics = self.ranking.agreement()
        return agreement_text(metrics) if metrics is not None else None

    def _report_bytes(self) -> bytes:
        import tempfile

        with tempfile.TemporaryDirectory() as tmp:  # the figure is drawn as PNG (or the report says why not)
            return self._report(Path(tmp) / "report.html", overwrite=True).read_bytes()

    def export(self, out_dir, *, overwrite: bool = False) -> dict[str, Path]:
        """Write the current view's figure (PNG, SVG, HTML), the ranking CSV and the one-page report.

        The report's figure is chosen on purpose (:meth:`report_view`), not the page on screen.

        Files are named after the recording and the visible time range, written atomically, and
        never overwrite an existing file unless ``overwrite``.

        A recording that is not scored (scoring disabled, or still running) exports its figure and
        report without the ranking CSV. Without a browser to draw PNG/SVG (see
        :mod:`sss_viewer.viewer.export`) those two are left out, the report says why it has no
        figure, and :attr:`message` says so.

        Returns
        -------
        paths : dict
            ``{"png", "svg", "html", "csv", "report"}`` → written file (no ``"csv"`` without scores,
            no ``"png"``/``"svg"`` without a browser).
        """
        if self.recording is None:
            raise ValueError("Nothing to export: open a recording first.")
        out_dir = Path(out_dir)
        out_dir.mkdir(parents=True, exist_ok=True)
        base = out_dir / self.export_basename()
        figure = self._figure()
        paths = {}
        no_browser = None
        for fmt in ("png", "svg", "html"):
            if fmt != "html" and no_browser is not None:
                continue
            try:
                export_figure(figure, f"{base}.{fmt}", overwrite=overwrite)
            except BrowserUnavailable as exc:  # PNG/SVG only; HTML needs no browser
                no_browser = exc
                continue
            paths[fmt] = Path(f"{base}.{fmt}")
        if self.scores is not None:
            paths["csv"] = export_ranking_csv(self.ranking.csv_table(), f"{base}_ranking.csv", overwrite=overwrite)
        # the report draws its own figure (the top channels around the onset), or says in its place why it cannot
        paths["report"] = self._report(Path(f"{base}_report.html"), overwrite)
        if no_browser is not None:
            self._show_message(f"Exported without PNG/SVG: {no_browser}")
        return paths

    def _downloads(self) -> list:
        return download_buttons(
            lambda: figure_bytes(self._figure(), "png")[0],
            lambda: figure_bytes(self._figure(), "svg")[0],
            lambda: self.ranking.csv_table().to_csv(index=False),
            self._report_bytes,
            basename=self.export_basename,
            on_error=self._show_message,
        )

    # ------------------------------------------------------------------ layout
    def __panel__(self):
        sidebar = pn.Column(
            "### Recording",
            self.browser,
            self.patient.button,
            "### Model",
            self.scorers,
            self.models,
            self._disabled,
            ScoringProgress(scorer=self.scorer),
            self.trainer,
            "### Annotations",
            self.annotations,
            "### Channel types",
            self.channel_types,
            "### Export",
            *self._downloads(),
            width=340,
        )
        main = pn.Column(
            self._notice,
            self._message,
            self.keyboard,
            self.traces,
            self.spectrum,
            self.timecourse,
            self.recording_heat,
            "### Channel ranking",
            self.ranking,
            self.comparison,
            self.patient,
            sizing_mode="stretch_width",
        )
        return pn.Row(sidebar, main, sizing_mode="stretch_width")


def build_app(**params):
    """A new viewer for one session (``panel serve app.py`` calls this per browser session).

    Returns a ``ViewerApp`` — or, for an unauthenticated session from outside this machine, a page
    that refuses it and says how to serve the viewer safely (:mod:`sss_viewer.viewer._access`);
    nothing of a recording is loaded for such a session.

    Parameters
    ----------
    **params
        Keyword arguments of :class:`ViewerApp` (``data_root``, ``model_dir``, ``out_dir``, ``load_demo``,
        ``scorer``, or one of its parameters); unused for a refused session.

    Returns
    -------
    ViewerApp or panel.pane.Alert
        The app, or the refusal (a danger alert naming the reason) for a session that may not see it.
    """
    pn.extension("tabulator", "filedropper", notifications=True)
    reason = refusal()
    if reason is not None:
        return pn.pane.Alert(reason, alert_type="danger", sizing_mode="stretch_width")
    return ViewerApp(**params)

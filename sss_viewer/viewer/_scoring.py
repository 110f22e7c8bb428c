"""Scoring a recording in the background so the viewer stays responsive.

``BackgroundScorer`` scores a recording with a trained SSS model (a ``ModelBundle``, through
:func:`sss_viewer.engine.inference.score_recording`) or a training-free marker (a
:class:`sss_viewer.biomarkers.base.BiomarkerScorer`; :func:`sss_viewer.biomarkers.score_with`
dispatches) on a worker thread (one ``ThreadPoolExecutor(max_workers=1)`` per scorer, so each
browser session has its own) and
reports through param parameters: ``progress`` (0–1), ``status``, ``running``, ``result`` and
``error``. In a served Panel session the worker never touches the parameters itself: each update
is scheduled on the session's event loop (``pn.state.execute`` with the session's document, which
Bokeh runs under the document lock); in Jupyter or plain Python the parameters are set directly.

A newer :meth:`BackgroundScorer.start` supersedes the running job: the old job stops at its next
batch (its progress callback raises) and its result is never shown. The last few results are
kept, keyed by the scorer (a model's configuration, or a marker's name and parameters) and the
recording file's identity (path, size, mtime), so going back to a recording shows its scores at once.
"""

from __future__ import annotations

import hashlib
import json
import logging
import threading
import time
from collections import OrderedDict
from concurrent.futures import Future, ThreadPoolExecutor

import panel as pn
import param
from panel.io.state import set_curdoc

from sss_viewer.biomarkers import score_with
from sss_viewer.engine.inference import RecordingScores
from sss_viewer.io.recording import Recording

logger = logging.getLogger(__name__)

_PROGRESS_STEP = 0.01
"""Smallest progress change sent to the view (a long recording has thousands of batches)."""


class ScoringCancelled(Exception):
    """Raised inside an outdated job's progress callback to stop it."""


def model_key(bundle) -> str:
    """SHA-256 of a model bundle's configuration (architecture, preprocessing, calibrator, training record)."""
    text = json.dumps(bundle.config_dict(), sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()


def is_marker(scorer) -> bool:
    """Whether ``scorer`` is a training-free marker (it scores by itself) rather than a model bundle."""
    return hasattr(scorer, "score") and hasattr(scorer, "info")


def scorer_key(scorer, model_id: str | None = None) -> str:
    """Cache identity of a scorer: a marker's registry name and parameters, or a model's ``model_id``/configuration hash.

    Parameters
    ----------
    scorer : ModelBundle or BiomarkerScorer
    model_id : str, optional
        Identity of a model (e.g. its directory); ignored for a marker.

    Returns
    -------
    key : str
    """
    if is_marker(scorer):
        params = {k: v for k, v in sorted(vars(scorer).items()) if not k.startswith("_")}
        return f"marker:{scorer.info.name}:{json.dumps(params, sort_keys=True, default=str)}"
    return f"model:{model_id or model_key(scorer)}"


def recording_key(recording: Recording) -> tuple | None:
    """Identity of a recording read from a file: its files' paths, sizes and mtimes, plus labels and bads.

    Returns None for a recording held only in memory (such results are not cached).
    """
    from sss_viewer.preprocessing.cache import source_files

    if recording.source is None:
        return None
    try:
        stamps = tuple(
            (str(p.resolve()), st.st_size, st.st_mtime_ns) for p in source_files(recording.source) for st in [p.stat()]
        )
    except OSError:
        return None
    soz = None if recording.soz is None else tuple(bool(s) for s in recording.soz)
    return stamps, tuple(recording.ch_names), tuple(recording.ch_types), tuple(sorted(recording.bads)), soz


def channels_to_score(recording: Recording, exclude=()) -> int:
    """How many channels of ``recording`` a scorer scores, leaving out ``exclude``.

    Only good iEEG channels (:meth:`Recording.ieeg_picks`: ecog/seeg/dbs, not bad) are scored; ECG, DC,
    trigger and bare vendor-prefix channels are not, so they are not counted.

    Parameters
    ----------
    recording : Recording
    exclude : iterable of str
        Channel names not counted (those already scored).

    Returns
    -------
    int
    """
    skip = set(exclude)
    return sum(1 for i in recording.ieeg_picks() if recording.ch_names[int(i)] not in skip)


class BackgroundScorer(param.Parameterized):
    """Score recordings on a worker thread and publish progress and results as parameters."""

    progress = param.Number(default=0.0, bounds=(0, 1), doc="Fraction of windows scored (0–1).")
    status = param.String(default="", doc="What the scorer is doing, in words.")
    running = param.Boolean(default=False, doc="A job is in progress.")
    result = param.ClassSelector(class_=RecordingScores, default=None, allow_None=True, doc="The last finished scores.")
    partial = param.ClassSelector(
        class_=RecordingScores,
        default=None,
        allow_None=True,
        doc="Scores of the channels asked for first (``start(first_channels=...)``) while the others are scored; "
        "``pending`` says how many are left. Superseded by ``result``.",
    )
    error = param.String(default="", doc="Why the last job failed (empty when it did not).")
    cache_size = param.Integer(default=4, bounds=(0, None), doc="Finished results kept for reuse.")
    session_start_delay_s = param.Number(
        default=0.0,
        bounds=(0, None),
        doc="In a served session, seconds the worker waits before it starts (the first view of a newly "
        "opened recording is drawn and sent without a scorer competing for the cores). Cached results are "
        "published at once; a newer job ends the wait.",
    )

    def __init__(self, **params):
        super().__init__(**params)
        self._executor: ThreadPoolExecutor | None = None
        self._job = 0
        self._future: Future | None = None
        self._lock = threading.Lock()
        self._cache: OrderedDict = OrderedDict()
        self._doc = None

    # -- public -------------------------------------------------------------------------------

    def start(
        self,
        scorer,
        recording: Recording,
        device: str = "auto",
        *,
        stride: int | None = None,
        model_id: str | None = None,
        first_channels: list[str] | None = None,
        heat_stride: int | None = None,
    ) -> Future:
        """Score ``recording`` with ``scorer`` in the background; supersedes any running job.

        Parameters
        ----------
        scorer : ModelBundle or BiomarkerScorer
            A trained SSS model or a training-free marker (:func:`sss_viewer.biomarkers.get_scorer`).
        recording : Recording
        device : str
            ``"auto"`` (the GPU when there is one), ``"cpu"`` or ``"cuda"``; a model only.
        stride : int, optional
            Window stride in preprocessed samples (default the bundle's); a model only.
        model_id : str, optional
            Cache identity of the model (e.g. its directory); default a hash of its configuration.
            A marker's identity is its name and parameters (:func:`scorer_key`).
        first_channels : list of str, optional
            Channels to score first (the visible page): their scores are published as ``partial``
            before the others are scored; the final ``result`` is the same either way. A model only
            (a marker scores every channel in about a second).
        heat_stride : int, optional
            A finer stride for the heat map (``score_recording(heat_stride=...)``); a model only.

        Returns
        -------
        Future
            Done when the job has finished (at once for a cached result). Without a served session
            the parameters are set by then; in one they follow on the session's next event-loop tick.
        """
        rec_key = recording_key(recording)
        marker = is_marker(scorer)
        if marker:
            stride = heat_stride = None
            first_channels = None
        key = None if rec_key is None else (scorer_key(scorer, model_id), rec_key, stride, heat_stride)
        with self._lock:
            self._job += 1
            job = self._job
            cached = self._cache.get(key) if key is not None else None
            if cached is not None:
                self._cache.move_to_end(key)
        self._doc = pn.state.curdoc
        if cached is not None:
            self.param.update(
                result=cached, progress=1.0, running=False, error="", status=f"Scores of {recording.label} (cached)"
            )
            done: Future = Future()
            done.set_result(cached)
            self._future = done
            return done
        self.param.update(
            running=True, progress=0.0, error="", partial=None, status=f"Preprocessing {recording.label}…"
        )
        served = self._doc is not None and getattr(self._doc, "session_context", None) is not None
        if self._executor is None:
            self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="sss-viewer-score")
            if served:
                pn.state.on_session_destroyed(self._on_session_destroyed)
        delay = self.session_start_delay_s if served else 0.0
        self._future = self._executor.submit(
            self._run, job, key, scorer, recording, device, stride, delay, first_channels, heat_stride
        )
        return self._future

    def cancel(self) -> None:
        """Stop the running job at its next batch and forget its result."""
        with self._lock:
            self._job += 1
        if self.running:
            self.param.update(running=False, status="Scoring cancelled")

    def wait(self, timeout: float | None = None) -> bool:
        """Block until the current job has finished (for tests and notebooks); False on timeout.

        Without a served session its parameters are set by then (see :meth:`start`).
        """
        future = self._future
        if future is None:
            return True
        try:
            future.result(timeout=timeout)
        except TimeoutError:
            return False
        except Exception:  # the job reports its own errors through ``error``
            pass
        return True

    def shutdown(self) -> None:
        """Cancel the running job and stop the worker thread."""
        self.cancel()
        if self._executor is not None:
            self._executor.shutdown(wait=False, cancel_futures=True)
            self._executor = None

    def _on_session_destroyed(self, session_context) -> None:
        self.shutdown()

    def clear_cache(self) -> None:
        """Forget the kept results."""
        self._cache.clear()

    # -- worker -------------------------------------------------------------------------------

    def _run(
        self,
        job: int,
        key,
        scorer,
        recording: Recording,
        device: str,
        stride: int | None,
        delay_s: float = 0.0,
        first_channels: list[str] | None = None,
        heat_stride: int | None = None,
    ) -> RecordingScores | None:
        """The job body, on the worker thread (after ``delay_s`` unless a newer job comes first)."""
        label = recording.label
        waited_until = time.monotonic() + delay_s
        while job == self._job and time.monotonic() < waited_until:
            time.sleep(min(0.05, max(0.0, waited_until - time.monotonic())))
        if job != self._job:
            logger.info("scoring of %s superseded by a newer job before it started", label)
            return None
        last = [-1.0]

        shown_first = [False]

        def on_progress(fraction: float) -> None:
            if job != self._job:
                raise ScoringCancelled
            if fraction >= 1.0 or fraction - last[0] >= _PROGRESS_STEP:
                last[0] = fraction
                what = "the other channels" if shown_first[0] else "windows"
                self._publish(job, progress=min(fraction, 1.0), status=f"Scoring {label}: {fraction:.0%} of {what}")

        def on_partial(scores: RecordingScores) -> None:
            if job != self._job:
                raise ScoringCancelled
            shown_first[0] = True
            n = scores.channels.shape[0]
            others = channels_to_score(recording, exclude=first_channels or ())
            self._publish(
                job,
                partial=scores,
                status=f"Scored the {n} visible channel{'s' * (n != 1)} of {label}; scoring the other {others}…",
            )

        options = {"progress": False, "on_progress": on_progress}
        if not is_marker(scorer):
            options.update(
                stride=stride,
                device=device,
                first_channels=first_channels,
                on_partial=on_partial,
                heat_stride=heat_stride,
            )
        try:
            scores = score_with(scorer, recording, **options)
        except ScoringCancelled:
            logger.info("scoring of %s superseded by a newer job", label)
            return None
        except (ValueError, OSError) as exc:  # the engine's and readers' readable refusals
            self._publish(job, running=False, error=str(exc), status=f"Could not score {label}")
            return None
        except Exception as exc:  # anything else: log the traceback, show one line
            logger.exception("scoring %s failed", label)
            self._publish(
                job,
                running=False,
                error=f"Scoring {label} failed: {type(exc).__name__}: {exc}",
                status=f"Could not score {label}",
            )
            return None
        if key is not None and self.cache_size > 0:
            with self._lock:
                self._cache[key] = scores
                while len(self._cache) > self.cache_size:
                    self._cache.popitem(last=False)
        n = len(scores.channels)
        self._publish(
            job, result=scores, partial=None, progress=1.0, running=False, status=f"Scored {n} channels of {label}"
        )
        return scores

    def _publish(self, job: int, **values) -> None:
        """Set parameters from the worker: on the session's event loop when served, directly otherwise."""

        def apply() -> None:
            if job == self._job:  # a newer job owns the parameters
                self.param.update(**values)

        run_in_session(self._doc, apply)


def run_in_session(doc, apply) -> None:
    """Call ``apply()`` from a worker thread: on the served session's event loop, directly elsewhere.

    Parameters
    ----------
    doc : bokeh Document or None
        ``pn.state.curdoc`` captured on the session's thread when the work was started.
    apply : callable
        Sets the parameters the page shows; Bokeh runs it under the document lock.
    """
    if doc is not None and doc.session_context is not None:
        try:
            with set_curdoc(doc):
                pn.state.execute(apply, schedule=True)
        except Exception as exc:  # the session may have closed meanwhile
            logger.debug("could not schedule a session update: %s", exc)
    else:
        apply()


class ScoringProgress(pn.viewable.Viewer):
    """A progress bar and status line bound to a ``BackgroundScorer`` (and its error, if any)."""

    scorer = param.ClassSelector(class_=BackgroundScorer, doc="The scorer to follow.")

    def __init__(self, **params):
        params.setdefault("scorer", BackgroundScorer())
        super().__init__(**params)

    def __panel__(self):
        s = self.scorer.param

        def bar_value(progress: float, running: bool) -> int:
            if running and progress <= 0:
                return -1  # preprocessing: an indeterminate (pulsing) bar
            return int(round(100 * progress))

        bar = pn.indicators.Progress(
            value=pn.bind(bar_value, s.progress, s.running),
            max=100,
            active=s.running,
            bar_color="primary",
            sizing_mode="stretch_width",
        )
        status = pn.pane.Markdown(s.status, sizing_mode="stretch_width")
        error = pn.pane.Alert(s.error, alert_type="danger", visible=pn.bind(bool, s.error), sizing_mode="stretch_width")
        return pn.Column(bar, status, error, sizing_mode="stretch_width")

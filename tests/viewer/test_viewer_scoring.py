"""Background scoring: progress to 1.0, readable errors, superseded jobs, the result cache, session-safe updates."""

import dataclasses
import logging
import threading
import time

import numpy as np
import pandas as pd
import pytest
from panel.io.state import set_curdoc

from sss_viewer.engine.config import train_preset
from sss_viewer.engine.training import train
from sss_viewer.io.readers import read_recording
from sss_viewer.io.recording import Recording
from sss_viewer.viewer._scoring import BackgroundScorer, ScoringProgress, model_key, recording_key
from tests.fixtures.recordings import toy_recording

TIMEOUT_S = 120


@pytest.fixture(scope="module")
def bundle(toy_cohort):
    config = train_preset(
        "default",
        window_length=128,
        train_stride=64,
        val_stride=64,
        batch_size=64,
        epochs=1,
        device="cpu",
        model_params={"d_model": 16, "d_ff": 32, "n_heads": 2, "n_layers": 1},
    )
    return train(toy_cohort, config, progress=False)


def renamed(recording: Recording, prefix: str) -> Recording:
    return dataclasses.replace(recording, ch_names=[f"{prefix}{i + 1}" for i in range(recording.n_channels)])


def npz_recording(tmp_path, name="rec.npz", duration_s=40.0) -> Recording:
    source = toy_recording("file", 3, duration_s=duration_s)
    path = tmp_path / name
    np.savez(path, data=source.data, ch_names=np.array(source.ch_names), sfreq=np.array(source.sfreq))
    return read_recording(path)


def test_background_scoring_reports_progress_up_to_one(bundle):
    scorer = BackgroundScorer()
    seen, threads = [], set()
    scorer.param.watch(lambda e: (seen.append(e.new), threads.add(threading.current_thread().name)), "progress")
    recording = toy_recording("bg", 11, duration_s=60.0)
    future = scorer.start(bundle, recording, device="cpu", stride=16)  # ≈ 7 400 windows: 8 batches
    assert scorer.running or future.done()
    assert scorer.wait(TIMEOUT_S)
    assert scorer.error == "" and not scorer.running
    assert scorer.progress == 1.0 and seen[-1] == 1.0
    assert seen == sorted(seen) and len(seen) >= 2  # several batches were reported
    assert any(name.startswith("sss-viewer-score") for name in threads)  # it ran on the worker
    result = scorer.result
    assert set(result.channels["channel"]) == set(recording.ch_names)
    assert "Scored 8 channels" in scorer.status


def test_a_failing_job_sets_a_readable_error(bundle):
    scorer = BackgroundScorer()
    short = toy_recording("short", 12, duration_s=0.3)
    scorer.start(bundle, short, device="cpu")
    assert scorer.wait(TIMEOUT_S)
    assert not scorer.running and scorer.result is None
    assert "shorter than one window" in scorer.error and "Traceback" not in scorer.error
    assert scorer.status.startswith("Could not score")
    scorer.start(bundle, toy_recording("ok", 13), device="cpu")  # a later job clears the error
    assert scorer.wait(TIMEOUT_S) and scorer.error == "" and scorer.result is not None


def test_a_newer_start_supersedes_the_running_job(bundle, caplog):
    caplog.set_level(logging.INFO, logger="sss_viewer.viewer._scoring")
    scorer = BackgroundScorer()
    results = []
    scorer.param.watch(lambda e: results.append(e.new), "result")
    first = renamed(toy_recording("old", 14, n_channels=8, duration_s=120.0), "OLD")
    second = renamed(toy_recording("new", 15, n_channels=4), "NEW")
    scorer.start(bundle, first, device="cpu", stride=8)
    scorer.start(bundle, second, device="cpu")
    assert scorer.wait(TIMEOUT_S)
    assert len(results) == 1 and set(results[0].channels["channel"]) == {"NEW1", "NEW2", "NEW3", "NEW4"}
    assert scorer.result is results[0] and scorer.progress == 1.0
    assert "scoring of sub-old run-01 superseded by a newer job" in caplog.text


def test_same_model_and_file_reuse_the_last_result(bundle, tmp_path):
    scorer = BackgroundScorer()
    recording = npz_recording(tmp_path)
    assert recording_key(recording) is not None and recording_key(toy_recording("mem", 1)) is None
    scorer.start(bundle, recording, device="cpu")
    assert scorer.wait(TIMEOUT_S)
    first = scorer.result
    future = scorer.start(bundle, read_recording(recording.source), device="cpu")
    assert future.done() and scorer.result is first and "(cached)" in scorer.status
    other = npz_recording(tmp_path, "other.npz")
    scorer.start(bundle, other, device="cpu")
    assert scorer.wait(TIMEOUT_S) and scorer.result is not first
    assert model_key(bundle) == model_key(bundle)


class FakeSessionDocument:
    """Stands in for a served Bokeh document: callbacks are queued for the event loop."""

    session_context = object()

    def __init__(self):
        self.callbacks = []

    def add_next_tick_callback(self, callback):
        self.callbacks.append(callback)

    def on_session_destroyed(self, callback):
        self.destroyed = callback


def test_in_a_served_session_updates_wait_for_the_event_loop(bundle):
    doc = FakeSessionDocument()
    scorer = BackgroundScorer()
    with set_curdoc(doc):
        scorer.start(bundle, toy_recording("served", 16), device="cpu")
    assert scorer.wait(TIMEOUT_S)
    assert scorer.running and scorer.result is None  # the worker did not touch the parameters
    assert doc.callbacks
    for callback in doc.callbacks:  # what the server's event loop does, in its own thread
        callback()
    assert not scorer.running and scorer.progress == 1.0 and scorer.result is not None
    doc.destroyed(None)  # the session ends: the worker thread is stopped
    assert scorer._executor is None


def test_in_a_served_session_scoring_waits_for_the_first_view(bundle):
    """A newly opened recording is drawn first: the worker starts after the grace period, or not at all if cancelled."""
    scorer = BackgroundScorer(session_start_delay_s=0.8)
    started = time.monotonic()
    with set_curdoc(FakeSessionDocument()):
        future = scorer.start(bundle, toy_recording("late", 17, duration_s=10.0), device="cpu")
    assert not scorer.wait(0.4)  # still in its grace period
    assert scorer.wait(TIMEOUT_S) and future.result() is not None and time.monotonic() - started >= 0.8
    with set_curdoc(FakeSessionDocument()):
        future = scorer.start(bundle, toy_recording("dropped", 18, duration_s=10.0), device="cpu")
    scorer.cancel()  # e.g. another recording opened within the grace period
    assert future.result(timeout=2.0) is None  # ended without scoring
    assert scorer.wait(0.1)


def test_outside_a_served_session_scoring_starts_at_once(bundle):
    scorer = BackgroundScorer(session_start_delay_s=60.0)
    scorer.start(bundle, toy_recording("now", 19, duration_s=10.0), device="cpu")
    assert scorer.wait(30.0) and scorer.result is not None


def test_progress_view_follows_the_scorer(bundle):
    scorer = BackgroundScorer()
    view = ScoringProgress(scorer=scorer).__panel__()
    bar = view[0]
    scorer.param.update(running=True, progress=0.0)
    assert bar.value == -1 and bar.active  # preprocessing: indeterminate
    scorer.start(bundle, toy_recording("view", 17), device="cpu")
    assert scorer.wait(TIMEOUT_S)
    assert bar.value == 100 and not bar.active
    assert "Scored" in view[1].object


def test_the_visible_channels_are_scored_and_shown_first(bundle):
    """``first_channels``: a partial result for the page, then the full one, equal to a single pass."""
    recording = toy_recording("page", 13, duration_s=40.0)
    page = recording.ch_names[2:4]
    scorer = BackgroundScorer()
    partials, statuses = [], []
    scorer.param.watch(lambda e: partials.append(e.new), "partial")
    scorer.param.watch(lambda e: statuses.append(e.new), "status")
    scorer.start(bundle, recording, device="cpu", first_channels=page)
    assert scorer.wait(TIMEOUT_S) and scorer.error == ""
    shown = [p for p in partials if p is not None]
    assert len(shown) == 1 and set(shown[0].windows["channel"]) == set(page)
    assert shown[0].pending == recording.n_channels - len(page)
    assert scorer.partial is None  # the full result took its place
    assert any("Scored the 2 visible channels" in s and "scoring the other 6" in s for s in statuses)
    alone = BackgroundScorer()
    alone.start(bundle, recording, device="cpu")
    assert alone.wait(TIMEOUT_S)
    # equal to a single pass up to float rounding (PatchTST's stock attention kernels round differently for
    # different batch compositions: about 6e-8)
    pd.testing.assert_frame_equal(scorer.result.windows, alone.result.windows, check_exact=False, rtol=1e-6, atol=1e-6)
    pd.testing.assert_frame_equal(
        scorer.result.channels, alone.result.channels, check_exact=False, rtol=1e-6, atol=1e-6
    )

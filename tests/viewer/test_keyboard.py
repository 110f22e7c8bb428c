"""Keyboard review's controller without a browser: every key on a toy recording, bounds, and the app's wiring."""

from __future__ import annotations

import pytest

from sss_viewer.viewer._annotations import AnnotationPanel
from sss_viewer.viewer._keyboard import AMPLITUDE_STEP, KEY_ACTIONS, KEY_HELP, KeyboardReview, KeyListener
from sss_viewer.viewer.app import build_app
from sss_viewer.viewer.traces import TraceView
from tests.fixtures.recordings import toy_recording

DURATION_S = 35.0  # 3.5 pages of 10 s: the last page is clamped to the end
N_CHANNELS = 40  # 3 channel pages of 16 rows


@pytest.fixture
def review():
    recording = toy_recording("keys", 0, n_channels=N_CHANNELS, duration_s=DURATION_S)
    traces = TraceView(recording=recording, page_size=16, span_s=10.0, show_overview=False)
    annotations = AnnotationPanel()
    annotations.set_recording(recording, None)  # no output folder: nothing is written
    return KeyboardReview(traces=traces, annotations=annotations)


def test_time_keys_page_and_stop_at_the_ends(review):
    traces = review.traces
    assert review.handle("ArrowRight") == "page later: 10.00–20.00 s" and traces.start_s == 10.0
    assert review.handle("PageDown") is not None and traces.start_s == 20.0
    review.handle("ArrowRight")
    assert traces.start_s == DURATION_S - 10.0  # the last page ends at the end, not past it
    assert review.handle("PageDown").startswith("at the end") and traces.start_s == DURATION_S - 10.0
    assert review.handle("ArrowLeft") is not None and traces.start_s == DURATION_S - 20.0
    assert review.handle("PageUp") is not None and traces.start_s == DURATION_S - 30.0
    review.handle("ArrowLeft", shift=True)  # half a page, kept inside the recording
    assert traces.start_s == 0.0
    assert review.handle("ArrowRight", shift=True) == "half a page later: 5.00–15.00 s" and traces.start_s == 5.0
    assert review.handle("End") == "end: 25.00–35.00 s" and traces.start_s == DURATION_S - 10.0
    assert review.handle("Home") == "start: 0.00–10.00 s" and traces.start_s == 0.0
    assert review.handle("PageUp").startswith("at the start") and traces.start_s == 0.0


def test_channel_keys_page_through_the_rows(review):
    traces = review.traces
    assert traces.n_pages == 3 and traces.page == 0
    assert review.handle("ArrowDown") == "channel page 2 of 3" and traces.page == 1
    review.handle("ArrowDown")
    assert review.handle("ArrowDown") == "last channel page 3 of 3" and traces.page == 2
    assert review.handle("ArrowUp") == "channel page 2 of 3" and traces.page == 1
    review.handle("ArrowUp")
    assert review.handle("ArrowUp") == "first channel page 1 of 3" and traces.page == 0
    assert traces.start_s == 0.0  # the time did not move


@pytest.mark.parametrize(
    ("key", "factor"),
    [("+", 1 / AMPLITUDE_STEP), ("=", 1 / AMPLITUDE_STEP), ("-", AMPLITUDE_STEP), ("_", AMPLITUDE_STEP)],
)
def test_amplitude_keys_scale_the_traces(review, key, factor):
    traces = review.traces
    before = traces.amplitude_uv
    assert before > 0
    assert review.handle(key).startswith("amplitude ")
    assert traces.amplitude_uv == pytest.approx(before * factor)  # µV per half row: smaller = bigger traces
    traces.montage = "bipolar"  # set by the keys, the amplitude is the user's: a montage change keeps it
    assert traces.amplitude_uv == pytest.approx(before * factor)


def test_plus_then_minus_gives_the_amplitude_back(review):
    before = review.traces.amplitude_uv
    for key in ("+", "+", "+", "-", "-", "-"):
        review.handle(key)
    assert review.traces.amplitude_uv == pytest.approx(before)


@pytest.mark.parametrize(("key", "kind"), [("o", "onset"), ("f", "offset"), ("n", "note"), ("O", "onset")])
def test_marker_keys_add_a_marker_at_the_view_centre_and_u_undoes(review, key, kind):
    review.traces.start_s = 20.0
    annotations = review.annotations
    before = list(annotations.markers)
    assert review.handle(key) == f"{kind} marker at 25.00 s"
    added = [m for m in annotations.markers if m not in before]
    assert [(m["kind"], m["onset_s"]) for m in added] == [(kind, 25.0)]
    assert review.handle("u") == "undone"
    assert annotations.markers == before
    assert review.handle("u") == "Nothing to undo."


def test_marker_keys_use_the_time_under_the_pointer_when_the_view_has_one(review, monkeypatch):
    review.traces.start_s = 10.0
    assert review.marker_time() == 15.0
    # the time under the mouse pointer: TraceView.cursor_s (None when the pointer is off the traces)
    monkeypatch.setattr(review.traces, "cursor_s", 12.345, raising=False)
    assert review.handle("o") == "onset marker at 12.35 s"
    assert [m["onset_s"] for m in review.annotations.markers if m["kind"] == "onset"] == [12.345]
    monkeypatch.setattr(review.traces, "cursor_s", None, raising=False)
    assert review.marker_time() == 15.0


def test_a_duplicate_marker_is_refused_with_the_panels_reason(review):
    review.handle("o")
    n = len(review.annotations.markers)
    assert review.handle("o").startswith("⚠ There already is a marker")
    assert len(review.annotations.markers) == n


def test_help_toggles_and_lists_every_key(review):
    assert not review.help_visible and not review._help.visible
    assert review.handle("?") == "help shown" and review.help_visible and review._help.visible
    text = review._help.object
    for keys, does in KEY_HELP:
        assert keys in text and does in text
    assert review.handle("?") == "help hidden" and not review._help.visible


@pytest.mark.parametrize("key", ["x", "Enter", "Escape", " ", "Tab", "a", "ArrowRightX", "", "F5"])
def test_other_keys_are_not_handled_and_change_nothing(review, key):
    state = (review.traces.start_s, review.traces.page, review.traces.amplitude_uv, list(review.annotations.markers))
    assert review.handle(key) is None
    assert (review.traces.start_s, review.traces.page, review.traces.amplitude_uv, review.annotations.markers) == state


def test_keys_without_a_recording_or_annotations_do_nothing_and_say_so():
    review = KeyboardReview(traces=TraceView(show_overview=False))
    assert review.handle("ArrowRight") == "no recording open"
    assert review.handle("+") == "no recording open"
    assert review.handle("o") == "no annotation panel"
    with pytest.raises(ValueError, match="traces"):
        KeyboardReview()


def test_a_press_from_the_browser_runs_the_action_each_time(review):
    """The listener's ``pressed`` (what the browser sends) drives the controller; the count makes a repeat a change."""
    listener = review.listener
    assert set(KEY_ACTIONS) <= set(listener.keys) and "O" in listener.keys
    listener.pressed = {"key": "ArrowRight", "shift": False, "count": 1}
    listener.pressed = {"key": "ArrowRight", "shift": False, "count": 2}
    assert review.traces.start_s == 20.0
    listener.pressed = {"key": "ArrowLeft", "shift": True, "count": 3}
    assert review.traces.start_s == 15.0 and review.last_action == "half a page earlier: 15.00–25.00 s"
    listener.pressed = {"key": "x", "shift": False, "count": 4}  # not a review key: nothing happens
    assert review.traces.start_s == 15.0


def test_every_listener_has_its_own_id():
    assert KeyListener().listener_id != KeyListener().listener_id


def test_the_app_wires_the_keys_to_its_traces_and_annotations(tmp_path):
    app = build_app(data_root=tmp_path, out_dir=tmp_path / "out", scorer="sss")
    assert app.keyboard.traces is app.traces and app.keyboard.annotations is app.annotations
    start = app.traces.start_s
    app.keyboard.handle("ArrowRight")
    span, duration = app.traces.span_s, app.traces.duration_s
    assert app.traces.start_s == pytest.approx(min(start + span, duration - span))
    assert app.annotations.current_time_s == app.traces.start_s  # the app follows the move as it does for the buttons
    n = len(app.annotations.markers)
    app.keyboard.handle("o")
    assert len(app.annotations.markers) == n + 1

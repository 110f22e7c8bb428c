"""Annotations in the served app, as a clinician uses them: Go to, Move with Apply, Undo, two sessions at once."""

from __future__ import annotations

import re
import time
from pathlib import Path

import pytest
from playwright.sync_api import expect

from sss_viewer.io.annotation_store import load_annotations, sidecar_paths
from tests.browser_support import chromium_missing, open_page

pytestmark = [pytest.mark.browser, pytest.mark.skipif(chromium_missing() is not None, reason=chromium_missing() or "")]

LOAD_TIMEOUT_MS = 90_000
STEP_TIMEOUT_MS = 20_000
DEMO_ONSET = "onset at 56.02 s"


def _open(browser, url):
    return open_page(browser, url, timeout_ms=LOAD_TIMEOUT_MS)


def _markers(page):
    """The annotation panel's marker list (a multi-select whose options read ``1. onset at …``)."""
    option = page.locator("option", has_text=re.compile(r"^\s*\d+\. \w+ at "))
    return page.locator("select[multiple]").filter(has=option)


def _options(page) -> list[str]:
    return _markers(page).evaluate("s => Array.from(s.options).map(o => o.text)")


def _choose(page, text: str) -> None:
    select = _markers(page)
    select.select_option(label=next(o for o in _options(page) if text in o))
    expect(page.get_by_role("button", name="Go to")).to_be_enabled(timeout=STEP_TIMEOUT_MS)


def _wait_option(page, text: str, present: bool = True) -> None:
    """Wait until a marker option containing ``text`` is (or is not) listed.

    Polled through the locator: bokeh may replace the ``<select>`` when its options change, so a
    handle taken before would go stale.
    """
    deadline = time.monotonic() + STEP_TIMEOUT_MS / 1000
    while any(text in o for o in _options(page)) != present:
        assert time.monotonic() < deadline, f"marker option {text!r} {'never appeared' if present else 'stayed'}"
        page.wait_for_timeout(100)


def _demo_onset_on_disk(env) -> list[float]:
    """Onset times in the demo's events sidecar (empty when nothing was saved)."""
    out = Path(env["SSS_VIEWER_OUTPUT"])
    events = [p for p in out.glob("*_desc-sssviewer_events.tsv")] if out.is_dir() else []
    if not events:
        return []
    stem = events[0].name[: -len("_desc-sssviewer_events.tsv")]
    return [m["onset_s"] for m in load_annotations(out, stem).markers if m["kind"] == "onset"]


def test_go_to_moves_the_view_and_leaves_the_marker(browser, app_url, app_env):
    page = _open(browser, app_url)
    # a fresh page selects nothing, and the buttons that act on a marker wait for one
    assert page.evaluate("s => s.selectedOptions.length", _markers(page).element_handle()) == 0
    for name in ("Go to", "Move…", "Delete", "Undo"):
        assert page.get_by_role("button", name=name).is_disabled()
    assert any(DEMO_ONSET in o for o in _options(page))
    # move the view away from the onset, then go back to it
    readout = page.locator(".bk-slider-title", has_text="start (s)").first
    before = readout.inner_text()
    page.get_by_role("button", name="time ▶").click()
    expect(readout).not_to_have_text(before, timeout=STEP_TIMEOUT_MS)
    away = readout.inner_text()
    _choose(page, DEMO_ONSET)
    page.get_by_role("button", name="Go to").click()
    expect(readout).to_have_text("start (s): 51.02", timeout=STEP_TIMEOUT_MS)  # centred: 56.02 s − 10 s / 2
    assert away != "start (s): 51.02"
    page.wait_for_selector("text=/View centred on onset at 56.02 s/", timeout=STEP_TIMEOUT_MS)
    assert any(DEMO_ONSET in o for o in _options(page))  # the marker did not move
    assert _demo_onset_on_disk(app_env) in ([], [pytest.approx(56.018, abs=1e-3)])
    page.context.close()


def test_move_shows_the_new_time_needs_apply_and_undo_restores(browser, app_url, app_env):
    page = _open(browser, app_url)
    _choose(page, DEMO_ONSET)
    time_input = page.get_by_label("Time (s)", exact=True)
    time_input.fill("12.5")
    time_input.press("Enter")
    page.get_by_role("button", name="Move…").click()
    page.wait_for_selector("text=Move onset from 56.02 s to 12.50 s?", timeout=STEP_TIMEOUT_MS)
    page.wait_for_timeout(500)
    assert any(DEMO_ONSET in o for o in _options(page))  # nothing moved before Apply
    assert _demo_onset_on_disk(app_env) in ([], [pytest.approx(56.018, abs=1e-3)])
    page.get_by_role("button", name="Apply").click()
    _wait_option(page, "onset at 12.50 s")
    _wait_option(page, DEMO_ONSET, present=False)
    assert _demo_onset_on_disk(app_env) == [12.5]
    page.get_by_role("button", name="Undo").click()
    _wait_option(page, DEMO_ONSET)
    # bokeh may redraw the options in more than one step: wait for the moved marker to go
    _wait_option(page, "onset at 12.50 s", present=False)
    assert _demo_onset_on_disk(app_env) == [pytest.approx(56.018, abs=1e-3)]
    page.context.close()


def _bad_channel_input(page):
    return page.locator(".bk-input-group").filter(has_text="Bad channels").locator("input.choices__input--cloned")


def _bad_chips(page) -> list[str]:
    group = page.locator(".bk-input-group").filter(has_text="Bad channels")
    chips = group.locator(".choices__list--multiple .choices__item").all_inner_texts()
    return [t.replace("Remove item", "").strip() for t in chips]  # each chip carries its ✕ button's text


def test_two_pages_on_one_recording_keep_both_edits(browser, app_url, app_env):
    first, second = _open(browser, app_url), _open(browser, app_url)
    note = f"spread to RG {int(time.time())}"
    bad = _bad_channel_input(first)
    bad.click()
    bad.fill("LTP2")
    first.locator(".choices__item--choice", has_text=re.compile(r"^LTP2$")).first.click()
    first.wait_for_selector("text=/Saved: mark LTP2 bad/", timeout=STEP_TIMEOUT_MS)
    # the second page still shows what it loaded; its note must not erase the first page's bad channel
    text = second.get_by_label("Note / marker text")
    text.fill(note)
    time_input = second.get_by_label("Time (s)", exact=True)
    time_input.fill("30")
    time_input.press("Enter")
    second.get_by_role("button", name="Add note").click()
    _wait_option(second, note)
    # the first page's mark arrives on the second page, by its periodic check or when its note is saved
    deadline = time.monotonic() + STEP_TIMEOUT_MS / 1000
    while "LTP2" not in _bad_chips(second) and time.monotonic() < deadline:
        second.wait_for_timeout(250)
    assert "LTP2" in _bad_chips(second)
    out = Path(app_env["SSS_VIEWER_OUTPUT"])
    stem = next(out.glob("*_desc-sssviewer_events.tsv")).name[: -len("_desc-sssviewer_events.tsv")]
    on_disk = load_annotations(out, stem)
    assert "LTP2" in on_disk.bad_channels and note in [m["text"] for m in on_disk.notes]
    assert all(p.is_file() for p in sidecar_paths(out, stem))
    for page in (first, second):
        page.reload()
        page.wait_for_selector(".tabulator-row", timeout=LOAD_TIMEOUT_MS)
        _wait_option(page, note)
        assert "LTP2" in _bad_chips(page)
        assert "LTP2" not in page.locator(".tabulator").first.inner_text()  # bad channels leave the ranking
        page.context.close()

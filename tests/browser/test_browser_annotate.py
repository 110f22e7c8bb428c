"""Annotating on the traces in the served app, as a clinician does it: the pointer readout, a double-click that
adds an onset where the pointer is, and the marker list's search (real chromium against ``panel serve app.py``)."""

from __future__ import annotations

import re
import time

import pytest
from playwright.sync_api import expect

from tests.browser_support import chromium_missing, open_page

pytestmark = [pytest.mark.browser, pytest.mark.skipif(chromium_missing() is not None, reason=chromium_missing() or "")]

LOAD_TIMEOUT_MS = 90_000
STEP_TIMEOUT_MS = 30_000
READOUT = re.compile(r"t = (\d+\.\d{3}) s · (\S+) · (−?\d+\.\d) µV")


def _open(browser, url):
    return open_page(browser, url, timeout_ms=LOAD_TIMEOUT_MS)


def _trace_canvas_box(page) -> dict:
    """Page box of the main trace plot: the tallest bokeh canvas (16 rows over the heat map)."""
    deadline = time.monotonic() + LOAD_TIMEOUT_MS / 1000
    while True:
        boxes = [b for b in (c.bounding_box() for c in page.locator("canvas").all()) if b and b["height"] > 200]
        if boxes:
            return max(boxes, key=lambda b: b["height"])
        assert time.monotonic() < deadline, "the trace plot was never drawn"
        page.wait_for_timeout(250)


def _marker_select(page):
    option = page.locator("option", has_text=re.compile(r"^\s*\d+\. \w+ at "))
    return page.locator("select[multiple]").filter(has=option)


def _options(page) -> list[str]:
    return _marker_select(page).evaluate("s => Array.from(s.options).map(o => o.text)")


def _hover_readout(page, fraction_y: float = 0.1) -> tuple[float, float, re.Match]:
    """Move the pointer over the trace plot until the readout answers; ``(x, y, readout match)``.

    The pointer moves a pixel at a time, as a hand does: a figure drawn anew after the page
    loaded (the overview is added once it has) hears only the moves made over it.
    """
    found = page.get_by_text(READOUT).first
    deadline = time.monotonic() + LOAD_TIMEOUT_MS / 1000
    step = 0
    while True:
        box = _trace_canvas_box(page)
        x, y = box["x"] + box["width"] * 0.45 + step % 3, box["y"] + box["height"] * fraction_y
        page.mouse.move(x, y)
        step += 1
        try:
            expect(found).to_be_visible(timeout=1000)
            match = READOUT.search(found.inner_text())
            if match:
                return x, y, match
        except AssertionError:
            pass
        assert time.monotonic() < deadline, "the readout never answered the pointer"


def test_hover_reads_out_and_a_double_click_adds_an_onset_there(browser, app_url):
    page = _open(browser, app_url)
    x, y, reading = _hover_readout(page)
    t_hover, channel = float(reading.group(1)), reading.group(2)
    assert re.match(r"[A-Z]+\d+$", channel), channel  # a contact of the demo's page in view
    before = _options(page)
    page.mouse.dblclick(x, y)  # "nothing" is the default: a stray double-click adds no marker
    page.wait_for_timeout(1500)
    assert _options(page) == before
    page.get_by_role("button", name="onset", exact=True).click()
    page.wait_for_timeout(500)
    page.mouse.move(x, y)
    page.mouse.dblclick(x, y)
    deadline = time.monotonic() + STEP_TIMEOUT_MS / 1000
    while len(_options(page)) == len(before):
        assert time.monotonic() < deadline, "no marker was added by the double-click"
        page.wait_for_timeout(200)
    added = [o for o in _options(page) if o.split(". ", 1)[1] not in {b.split(". ", 1)[1] for b in before}]
    assert len(added) == 1 and " onset at " in f" {added[0]}", added
    onset = float(re.search(r"onset at (\d+\.\d+) s", added[0]).group(1))
    assert onset == pytest.approx(t_hover, abs=0.05)  # where the pointer was
    page.context.close()


def test_search_narrows_the_marker_list(browser, app_url):
    page = _open(browser, app_url)
    expect(_marker_select(page)).to_be_visible(timeout=STEP_TIMEOUT_MS)
    everything = _options(page)
    assert len(everything) >= 2, everything  # the demo's seizure onset, offset and events
    onset = next(o for o in everything if "onset at 56.02 s" in o)
    search = page.get_by_placeholder("text, kind or time, e.g. onset 56")
    search.fill("56.02")  # typed: the list follows each key, no Enter needed
    deadline = time.monotonic() + STEP_TIMEOUT_MS / 1000
    while _options(page) != [onset]:
        assert time.monotonic() < deadline, f"the list shows {_options(page)}"
        page.wait_for_timeout(200)
    search.fill("")
    deadline = time.monotonic() + STEP_TIMEOUT_MS / 1000
    while _options(page) != everything:
        assert time.monotonic() < deadline, f"the list shows {_options(page)}"
        page.wait_for_timeout(200)
    page.context.close()

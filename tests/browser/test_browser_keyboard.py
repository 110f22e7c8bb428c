"""Keyboard review in the served app, in real chromium: keys page and scale, never while typing in a field."""

from __future__ import annotations

import re
import time

import pytest
from playwright.sync_api import Error as PlaywrightError
from playwright.sync_api import expect

from tests.browser_support import chromium_missing, open_page

pytestmark = [pytest.mark.browser, pytest.mark.skipif(chromium_missing() is not None, reason=chromium_missing() or "")]

LOAD_TIMEOUT_MS = 90_000
STEP_TIMEOUT_MS = 20_000
FIRST_STEP_S = 120.0  # the first action after a page loads waits behind its onload work (the overview)
SPAN_S = 10.0  # the demo opens with a 10-s page
MARKER_OPTION = re.compile(r"^\s*\d+\. \w+ at ")


def _open(browser, url):
    page = open_page(browser, url, timeout_ms=LOAD_TIMEOUT_MS)
    page.get_by_text("⌨ keys: ?").wait_for(timeout=STEP_TIMEOUT_MS)  # the key listener is rendered (listening)
    return page


def _start_s(page) -> float:
    """The trace view's start, as its slider shows it (``start (s): 53.52``)."""
    text = page.locator(".bk-slider-title", has_text="start (s)").first.inner_text()
    return float(re.search(r"start \(s\):\s*([\d.]+)", text).group(1))


def _wait(what: str, condition, timeout_s: float = STEP_TIMEOUT_MS / 1000) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            met = condition()
        except (PlaywrightError, AttributeError):  # an element re-rendered between two reads, or not drawn yet
            met = False
        if met:
            return
        time.sleep(0.2)
    raise AssertionError(f"timed out after {timeout_s:g} s waiting for {what}")


def _channel_page_select(page):
    """The trace view's channel-page selector (options like ``1: LTP1 … RABT1``)."""
    return page.locator("select").filter(has=page.locator("option", has_text=re.compile(r"^\s*1: ")))


def _channel_page(page) -> tuple[int, int]:
    """(selected index, number of channel pages)."""
    return tuple(_channel_page_select(page).evaluate("s => [s.selectedIndex, s.options.length]"))


def _marker_options(page) -> list[str]:
    select = page.locator("select[multiple]").filter(has=page.locator("option", has_text=MARKER_OPTION))
    return select.evaluate("s => Array.from(s.options).map(o => o.text)")


def _amplitude(page) -> float:
    return float(page.get_by_label("amplitude (µV)").input_value())


def _blur(page) -> None:
    """Leave any field, as a reader clicking on an empty part of the page (the ranking's heading)."""
    page.get_by_text("Channel ranking", exact=True).click()


def test_arrows_page_time_and_channels_and_plus_scales(browser, app_url):
    page = _open(browser, app_url)
    start = _start_s(page)
    page.keyboard.press("ArrowRight")

    def one_page_later() -> bool:
        return _start_s(page) == pytest.approx(start + SPAN_S, abs=0.011)

    _wait("→ to move one page later", one_page_later, FIRST_STEP_S)
    page.keyboard.press("PageUp")
    _wait("PageUp to move one page back", lambda: _start_s(page) == pytest.approx(start, abs=0.011))
    page.keyboard.press("Shift+ArrowRight")
    _wait("Shift+→ to move half a page", lambda: _start_s(page) == pytest.approx(start + SPAN_S / 2, abs=0.011))
    page.keyboard.press("Home")
    _wait("Home to go to the start", lambda: _start_s(page) == 0.0)

    index, n_pages = _channel_page(page)
    assert n_pages >= 2
    if index == n_pages - 1:  # on the last channel page: go up one first
        page.keyboard.press("ArrowUp")
        _wait("↑ to show the previous channel page", lambda: _channel_page(page)[0] == index - 1)
        index -= 1
    page.keyboard.press("ArrowDown")
    _wait("↓ to show the next channel page", lambda: _channel_page(page)[0] == index + 1)

    amplitude = _amplitude(page)
    page.keyboard.press("+")
    _wait("+ to make the traces bigger", lambda: _amplitude(page) == pytest.approx(amplitude / 1.25, rel=0.01))
    page.keyboard.press("-")
    _wait("− to make them smaller again", lambda: _amplitude(page) == pytest.approx(amplitude, rel=0.01))

    page.keyboard.press("?")
    expect(page.get_by_text("next / previous channel page")).to_be_visible(timeout=STEP_TIMEOUT_MS)
    page.keyboard.press("?")
    expect(page.get_by_text("next / previous channel page")).to_be_hidden(timeout=STEP_TIMEOUT_MS)
    page.context.close()


def test_typing_in_a_field_never_pages_or_marks(browser, app_url):
    page = _open(browser, app_url)
    start, channels, markers = _start_s(page), _channel_page(page), _marker_options(page)
    note = page.get_by_label("Note / marker text")
    note.click()
    for key in ("ArrowRight", "PageDown", "ArrowDown", "o", "f", "n", "u", "+", "?"):
        note.press(key)
    assert note.input_value().endswith("ofnu+?")  # the letters went into the field …
    time_field = page.get_by_label("Time (s)", exact=True)
    time_field.click()
    for key in ("ArrowRight", "PageDown", "End", "o"):
        time_field.press(key)
    page.keyboard.press("Control+ArrowRight")  # a chord is the browser's, not ours (focus still in the field)
    page.wait_for_timeout(2000)
    assert _start_s(page) == start  # … and nothing paged or was marked
    assert not page.get_by_text("next / previous channel page").is_visible()
    # the listener was live all along: out of the fields, the same key pages — exactly one page, so no key
    # typed above reached the view late either (the server applies the keys in the order they were sent)
    _blur(page)
    page.keyboard.press("ArrowRight")
    _wait("→ outside a field to page", lambda: _start_s(page) != start, FIRST_STEP_S)
    page.wait_for_timeout(1000)
    assert _start_s(page) == pytest.approx(start + SPAN_S, abs=0.011)
    assert _channel_page(page) == channels
    assert _marker_options(page) == markers
    page.context.close()


def test_o_adds_an_onset_at_the_view_centre_and_u_undoes(browser, app_url):
    page = _open(browser, app_url)
    before = _marker_options(page)
    centre = _start_s(page) + SPAN_S / 2  # the pointer is not over the traces: the centre of the view
    page.keyboard.press("o")
    _wait("o to add an onset marker", lambda: len(_marker_options(page)) == len(before) + 1, FIRST_STEP_S)
    added = [o for o in _marker_options(page) if o.split(". ", 1)[1] not in {b.split(". ", 1)[1] for b in before}]
    assert len(added) == 1 and re.search(r"onset at ([\d.]+) s", added[0]), added
    assert float(re.search(r"onset at ([\d.]+) s", added[0]).group(1)) == pytest.approx(centre, abs=0.011)
    page.keyboard.press("u")
    _wait("u to undo the marker", lambda: len(_marker_options(page)) == len(before))
    page.context.close()

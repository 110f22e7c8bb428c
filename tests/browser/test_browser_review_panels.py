"""The spectrogram panel and the whole-recording heat map in a real browser (chromium, ``panel serve app.py``)."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import TimeoutError as PlaywrightTimeoutError

from tests.browser_support import chromium_missing, open_page

pytestmark = [pytest.mark.browser, pytest.mark.skipif(chromium_missing() is not None, reason=chromium_missing() or "")]

LOAD_TIMEOUT_MS = 120_000


def _open(browser, url):
    return open_page(browser, url, width=1700, height=1400, timeout_ms=LOAD_TIMEOUT_MS)


def _figures(page) -> list[dict]:
    figures = page.locator(".bk-Figure")
    return [figures.nth(i).bounding_box() for i in range(figures.count())]


def _side_by_side(boxes: list[dict]) -> list[tuple[dict, dict]]:
    """Pairs of plots on one line, left one first (only the spectrogram and its band-power bars are)."""
    return [(a, b) for a in boxes for b in boxes if a["x"] + 1 < b["x"] and abs(a["y"] - b["y"]) < 2]


def test_the_spectrogram_appears_when_ticked_on_the_traces_time_axis(browser, app_url):
    page = _open(browser, app_url)
    assert not _side_by_side(_figures(page))  # not drawn (nor computed) until asked for
    label = page.get_by_text("spectrogram and band power of the focused channel").first
    label.evaluate("e => e.getRootNode().querySelector('input[type=checkbox]').click()")  # the box by its label
    for _ in range(90):  # computed and drawn on a busy 2-core box: up to 90 s
        boxes = _figures(page)
        if _side_by_side(boxes):
            break
        page.wait_for_timeout(1000)
    ((spectrogram, bars),) = _side_by_side(boxes)
    traces = max(boxes, key=lambda box: box["height"])  # the tallest plot: the traces
    assert bars["width"] < spectrogram["width"] and spectrogram["y"] > traces["y"]
    assert abs(spectrogram["x"] - traces["x"]) <= 1  # its frame starts where the traces' does: one time axis
    page.context.close()


def test_a_click_on_the_whole_recording_heat_map_brings_that_channel_into_view(browser, app_url):
    page = _open(browser, app_url)
    select = page.locator("select").filter(has=page.locator("option", has_text=re.compile(r"^\s*1: ")))
    before = select.evaluate("s => s.options[s.selectedIndex].text")
    assert "RG" in before  # the demo opens on the top-ranked channel's page
    heat = max(_figures(page), key=lambda box: box["y"])  # the lowest plot: the whole-recording heat map
    # the middle of its frame (110 px left border, 1000 px wide): a low-ranked channel, not on the RG page
    x, y = heat["x"] + 110 + 500, heat["y"] + heat["height"] / 2
    for attempt in range(3):  # a click while the page is still drawing may be lost: click again, as a reader does
        page.mouse.click(x, y)
        try:
            page.wait_for_function(
                "([s, b]) => s.options[s.selectedIndex].text !== b",
                arg=[select.element_handle(), before],
                timeout=30_000,
            )
            break
        except PlaywrightTimeoutError:
            if attempt == 2:
                raise
    assert select.evaluate("s => s.options[s.selectedIndex].text") != before
    page.context.close()

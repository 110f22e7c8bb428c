"""Viewer fixes whose behaviour is the browser's: a click on the selected ranking row, a recording shorter than the span.

Debian chromium driven by Playwright against ``panel serve app.py`` (see ``tests/browser_support.py``).
"""

from __future__ import annotations

import re
import time

import numpy as np
import pybv
import pytest

from tests.browser_support import chromium_missing, open_page
from tests.fixtures.recordings import toy_recording

pytestmark = [pytest.mark.browser, pytest.mark.skipif(chromium_missing() is not None, reason=chromium_missing() or "")]

LOAD_TIMEOUT_MS = 90_000
STEP_TIMEOUT_MS = 30_000
N_SHORT = 40
"""Channels of the short recording: three pages of 16 rows; its spiking channels are the last ones."""


def _write(folder, name: str, seconds: float, n_channels: int, *, spikes_last: bool = False) -> None:
    rec = toy_recording(name, 2, n_channels=n_channels, duration_s=seconds)
    data = rec.data[::-1] if spikes_last else rec.data  # the spiking (top-ranked) channels on the last page
    pybv.write_brainvision(
        data=np.ascontiguousarray(data),
        sfreq=rec.sfreq,
        ch_names=[f"LQ{i + 1}" for i in range(n_channels)],
        fname_base=name,
        folder_out=folder,
        fmt="binary_float32",
        unit="µV",
    )


@pytest.fixture(scope="module")
def app_env(tmp_path_factory):
    root = tmp_path_factory.mktemp("data-root")
    _write(root, "short", 6.0, N_SHORT, spikes_last=True)
    _write(root, "longer", 30.0, 8)
    out = tmp_path_factory.mktemp("viewer-output")
    return {"SSS_VIEWER_DATA_ROOT": str(root), "SSS_VIEWER_OUTPUT": str(out / "annotations"), "BOKEH_IN_DOCKER": "1"}


def _open(browser, url):
    return open_page(browser, url, timeout_ms=LOAD_TIMEOUT_MS)


def _select_with(page, pattern: str):
    return page.locator("select").filter(has=page.locator("option", has_text=re.compile(pattern)))


def _channel_pages(page):
    return _select_with(page, r"^\s*1: ")


def _spans(page):
    return _select_with(page, r"^\s*3600 s\s*$")


def _selected(select) -> str:
    return select.evaluate("s => s.options[s.selectedIndex].text")


def _choose_file(page, name: str) -> None:
    listing = page.locator("select").filter(has=page.locator("option", has_text=name))
    options = listing.evaluate("s => Array.from(s.options).map(o => o.text)")
    listing.select_option(label=next(o for o in options if name in o))


def _wait_selected(page, select, predicate, what: str, timeout_s: float = 30.0) -> str:
    deadline = time.monotonic() + timeout_s
    text = ""
    while time.monotonic() < deadline:
        text = _selected(select)
        if predicate(text):
            return text
        page.wait_for_timeout(200)
    raise AssertionError(f"{what}: still {text!r} after {timeout_s} s")


def test_clicking_the_selected_row_after_paging_away_shows_its_channel_again(browser, app_url):
    page = _open(browser, app_url)
    pages = _channel_pages(page)
    row = page.locator(".tabulator-row").first
    channel = row.locator('[tabulator-field="channel"]').inner_text().strip()
    shaft = channel.rstrip("0123456789")
    row.locator('[tabulator-field="channel"]').click()
    shown = _wait_selected(page, pages, lambda t: shaft in t, f"{channel}'s page after the first click")
    away = 0 if pages.evaluate("s => s.selectedIndex") != 0 else 1
    pages.select_option(index=away)
    _wait_selected(page, pages, lambda t: t != shown, "paging away")
    page.wait_for_timeout(1000)  # the page change reaches the server
    row.locator('[tabulator-field="channel"]').click()  # the same row, still the selected one
    assert _wait_selected(page, pages, lambda t: t == shown, f"{channel}'s page after clicking it again") == shown
    page.context.close()


def test_a_short_recording_opens_on_the_top_channels_page_and_the_span_comes_back(browser, app_url):
    page = _open(browser, app_url)
    spans = _spans(page)
    assert _selected(spans).strip() == "10 s"
    _choose_file(page, "short.vhdr")
    page.wait_for_selector(f".tabulator-row:has-text('LQ{N_SHORT}')", timeout=60_000)
    top = page.locator(".tabulator-row").first.locator('[tabulator-field="channel"]').inner_text().strip()
    number = int(top.removeprefix("LQ"))
    assert number > 16, top  # the spiking channels are the last ones: the top one is not on the first page
    pages = _channel_pages(page)
    expected = (number - 1) // 16
    _wait_selected(
        page, pages, lambda t: t.startswith(f"{expected + 1}: "), f"the top channel {top}'s page", timeout_s=30.0
    )
    page.wait_for_timeout(1500)  # any late range update from the browser
    assert _selected(pages).startswith(f"{expected + 1}: ")
    _choose_file(page, "longer.vhdr")
    page.wait_for_selector(".tabulator-row:has-text('LQ8')", timeout=60_000)
    assert (
        _wait_selected(page, spans, lambda t: t.strip() == "10 s", "the span on the next recording").strip() == "10 s"
    )
    page.context.close()

"""Excluded channels in the served app, in a real browser: opened from the file browser, an ECG lead and a DC
input are not scored, and the page says so with the reason (nothing vanishes unexplained)."""

from __future__ import annotations

import re
import time

import numpy as np
import pybv
import pytest

from tests.browser_support import chromium_missing, open_page

pytestmark = [pytest.mark.browser, pytest.mark.skipif(chromium_missing() is not None, reason=chromium_missing() or "")]

LOAD_TIMEOUT_MS = 90_000
NAMES = ["LA10", "LA2", "LA1", "EKG1", "LA3", "DC01", "LA11", "LB1"]
"""As a clinic exports them: contacts out of order, an ECG lead and a DC input among them."""


@pytest.fixture(scope="module")
def app_env(tmp_path_factory):
    """A data root with one BrainVision recording (every channel typed eeg, as exports write it)."""
    root = tmp_path_factory.mktemp("recordings")
    rng = np.random.default_rng(7)
    data = rng.standard_normal((len(NAMES), 250 * 30)) * 30e-6
    pybv.write_brainvision(
        data=data,
        sfreq=250.0,
        ch_names=NAMES,
        fname_base="clinic_export",
        folder_out=root,
        fmt="binary_float32",
        unit="µV",
    )
    out = tmp_path_factory.mktemp("viewer-output")
    return {
        "SSS_VIEWER_DATA_ROOT": str(root),
        "SSS_VIEWER_OUTPUT": str(out / "annotations"),
        "BOKEH_IN_DOCKER": "1",
        "SSS_VIEWER_SCORER": "sss",
    }


def _wait_for(condition, what: str, timeout_s: float = 60.0) -> None:
    """Poll ``condition`` (locators pierce Panel's shadow DOM; ``document.querySelector`` does not)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            if condition():
                return
        except Exception:  # an element may be re-rendered between two reads
            pass
        time.sleep(0.25)
    raise AssertionError(f"timed out after {timeout_s:g} s waiting for {what}")


def _page_options(page) -> list[str]:
    select = page.locator("select").filter(has=page.locator("option", has_text=re.compile(r"^\s*1: ")))
    return select.evaluate("s => Array.from(s.options).map(o => o.text)")


def test_an_ecg_lead_and_a_dc_input_are_shown_with_the_reason_they_are_not_scored(browser, app_url):
    page = open_page(browser, app_url, height=1400, timeout_ms=LOAD_TIMEOUT_MS)  # the demo is up
    context = page.context
    listing = page.locator("select").filter(has=page.locator("option", has_text="clinic_export"))
    options = listing.evaluate("s => Array.from(s.options).map(o => o.text)")
    listing.select_option(label=next(o for o in options if "clinic_export" in o))
    line = page.get_by_text("Not shown / not scored:", exact=False)  # pierces the HTML pane's shadow root
    _wait_for(lambda: "EKG1" in line.first.inner_text(), "the excluded-channel line of the opened file")
    text = line.first.inner_text()
    assert line.count() == 1 and line.first.is_visible()
    assert "EKG1: ecg — not scored" in text and "DC01: dc — not scored" in text
    assert "LA1" not in text  # contacts are scored, not listed
    # the contacts in numeric order on the first channel page, the excluded ones greyed on a page of their own
    _wait_for(lambda: _page_options(page)[0].startswith("1: LA1 … LB1"), "the file's channel pages")
    assert _page_options(page)[1:] == ["2: EKG1 … DC01"]
    context.close()

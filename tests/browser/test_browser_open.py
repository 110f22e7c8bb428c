"""Opening recordings in the served app, as a clinician does: nothing opens by itself, short clips open
for reading with scoring disabled, and a recording opens at its seizure onset."""

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


def _write(folder, name: str, seconds: float, *, onset_s: float | None = None, n_channels: int = 8) -> None:
    rec = toy_recording(name, 4, n_channels=n_channels, duration_s=seconds)
    events = None if onset_s is None else np.array([[int(onset_s * rec.sfreq), 1, 1]])
    pybv.write_brainvision(
        data=rec.data,
        sfreq=rec.sfreq,
        ch_names=[f"LQ{i + 1}" for i in range(n_channels)],
        fname_base=name,
        folder_out=folder,
        fmt="binary_float32",
        unit="µV",
        events=events,
        overwrite=True,
    )
    if onset_s is not None:  # name the marker as clinics do: a Comment "sz onset"
        vmrk = folder / f"{name}.vmrk"
        vmrk.write_text(vmrk.read_text().replace("Stimulus,S  1", "Comment,sz onset"))


@pytest.fixture(scope="module")
def app_env(tmp_path_factory):
    """A data root of recordings (the first one alphabetically is a 30-s recording) and a 3-s clip."""
    root = tmp_path_factory.mktemp("recordings")
    _write(root, "a_first_patient", 30.0, onset_s=20.0)
    _write(root, "clip_3s", 3.0)
    out = tmp_path_factory.mktemp("viewer-output")
    # ranked by the SSS model (a 3-s clip is shorter than its window); the default scorer: test_browser_scorers.py
    return {
        "SSS_VIEWER_DATA_ROOT": str(root),
        "SSS_VIEWER_OUTPUT": str(out / "annotations"),
        "BOKEH_IN_DOCKER": "1",
        "SSS_VIEWER_SCORER": "sss",
    }


def _open(browser, url):
    return open_page(browser, url, height=1400, timeout_ms=LOAD_TIMEOUT_MS)


def _choose(page, name: str) -> None:
    listing = page.locator("select").filter(has=page.locator("option", has_text=name))
    options = listing.evaluate("s => Array.from(s.options).map(o => o.text)")
    listing.select_option(label=next(o for o in options if name in o))


def _channel_page(page) -> str:
    select = page.locator("select").filter(has=page.locator("option", has_text=re.compile(r"^\s*1: ")))
    return select.evaluate("s => s.options[s.selectedIndex].text")


def _wait_for(condition, what: str, timeout_s: float = 30.0) -> None:
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


def _start_s(page) -> float:
    """The trace view's start, as its slider shows it (``start (s): 53.5``)."""
    text = page.locator(".bk-slider-title", has_text="start (s)").first.inner_text()
    return float(re.search(r"start \(s\):\s*([\d.]+)", text).group(1))


def test_a_fresh_session_shows_the_demo_and_scores_nothing(browser, app_url, app_env):
    page = _open(browser, app_url)
    page.wait_for_timeout(3000)  # time for any automatic choice to arrive
    assert page.get_by_text("trained on synthetic data", exact=False).first.is_visible()
    select = page.locator("select").filter(has=page.locator("option", has_text=re.compile(r"^\s*1: ")))
    pages = select.evaluate("s => Array.from(s.options).map(o => o.text)")
    assert pages[0].startswith("1: LTP1") and "LQ1" not in _channel_page(page)  # the demo, not the first file
    listing = page.locator("select").filter(has=page.locator("option", has_text="a_first_patient"))
    assert listing.count() == 1  # listed in the browser …
    assert page.get_by_text(re.compile(r"(Preprocessing|Scoring|Scored \d+ channels of)")).count() == 0  # … not opened
    chosen = listing.evaluate("s => s.selectedIndex < 0 ? '' : s.options[s.selectedIndex].text")
    assert "a_first_patient" not in chosen
    page.context.close()


def test_a_3s_clip_opens_for_reading_with_scoring_disabled(browser, app_url):
    page = _open(browser, app_url)
    _choose(page, "clip_3s")
    page.wait_for_selector("text=/Scoring disabled/", timeout=30_000)
    assert page.get_by_text(re.compile("Scoring disabled.*shorter than one window")).count() >= 1
    _wait_for(lambda: _channel_page(page).startswith("1: LQ1"), "the clip's channels in view")
    assert not page.get_by_text("trained on synthetic data by this project", exact=False).first.is_visible()
    page.get_by_role("button", name="bipolar").click()  # montages work on the clip
    _wait_for(lambda: "LQ1-LQ2" in _channel_page(page), "bipolar rows")
    assert page.locator(".tabulator-row").count() == 0  # nothing ranked
    page.context.close()


def test_a_recording_opens_at_its_seizure_onset(browser, app_url):
    page = _open(browser, app_url)
    assert 40.0 < _start_s(page) < 56.0  # the demo: onset at 56.02 s, a quarter into the 10-s view
    _choose(page, "a_first_patient")
    page.wait_for_selector(".tabulator-row:has-text('LQ1')", timeout=90_000)
    _wait_for(lambda: _start_s(page) == pytest.approx(17.5), "the view at sz onset (20 s) − 10 s / 4")
    page.context.close()

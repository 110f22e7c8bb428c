"""Choosing what ranks the recording in the served app: the ranking's title says which scorer made it."""

from __future__ import annotations

import os
import re

import pytest

from tests.browser_support import chromium_missing, open_page

pytestmark = [pytest.mark.browser, pytest.mark.skipif(chromium_missing() is not None, reason=chromium_missing() or "")]

LOAD_TIMEOUT_MS = 120_000


def test_picking_a_scorer_rescores_and_the_ranking_title_changes(browser, app_url):
    page = open_page(browser, app_url, height=1400, timeout_ms=LOAD_TIMEOUT_MS)
    context = page.context
    title = page.get_by_text(re.compile(r"^Ranking by ")).first
    title.wait_for(timeout=LOAD_TIMEOUT_MS)
    before = title.inner_text()
    target = "Channel variance" if before.startswith("Ranking by Line length") else "Line length"
    # "Ranking by" lists the SSS model and the markers; "Compare with" also lists "none"
    picker = (
        page.locator("select")
        .filter(has=page.locator("option", has_text="SSS model"))
        .filter(has_not=page.locator("option", has_text=re.compile(r"^none$")))
    )
    assert picker.count() == 1
    picker.select_option(label=target)
    page.get_by_text(f"Ranking by {target}").first.wait_for(timeout=60_000)
    unit = "µV/s" if target == "Line length" else "µV²"
    page.locator(".tabulator-col-title", has_text=f"value ({unit})").first.wait_for(timeout=30_000)
    assert page.get_by_text(before).count() == 0  # the previous scorer's title is gone
    assert page.locator(".tabulator-row").count() > 0  # the demo is ranked by the new scorer
    shot = os.environ.get("SSS_VIEWER_SCREENSHOT")
    if shot:
        page.screenshot(path=shot, full_page=True)
    context.close()

"""The trace view in a real browser: paging leaves no error and no stray range tool; SVG is drawn by the browser.

Debian chromium driven by playwright against ``panel serve app.py`` (the demo), as a user does it:
clicks on the page buttons, then the "⬇ SVG" download.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from sss_viewer.viewer.export import BROWSER_MARK, FALLBACK_MARK
from tests.browser_support import app_environment, chromium_missing

pytestmark = [pytest.mark.browser, pytest.mark.skipif(chromium_missing() is not None, reason=chromium_missing() or "")]

LOAD_TIMEOUT_MS = 90_000
QUIET_MS = 400

_MODELS = "doc => [...(doc.all_models ?? doc._all_models.values())]"
_STATE = f"""() => {{
  const models = Bokeh.documents.flatMap({_MODELS});
  const plots = models.filter(m => m.title != null && m.title.text != null && Array.isArray(m.renderers));
  const find = prefix => plots.filter(p => p.title.text.startsWith(prefix));
  const tools = p => p.toolbar.tools.map(t => t.type);
  const course = find("mean ± SD");
  return {{
    overviews: find("overview").length,
    range_tools: models.filter(m => m.type == "RangeTool").length,
    range_tool_owners: plots.filter(p => p.toolbar.tools.some(t => t.type == "RangeTool")).map(p => p.title.text.slice(0, 8)),
    course: course.map(p => [p.renderers.length, tools(p), p.center.length]),
  }};
}}"""
_LISTEN = """() => {
  window.__sss_changes = [];
  for (const doc of Bokeh.documents) doc.on_change(() => window.__sss_changes.push(performance.now()), true);
}"""
_QUIET = """q => window.__sss_changes.length > 0
  && performance.now() - window.__sss_changes[window.__sss_changes.length - 1] > q"""


@pytest.fixture(scope="module")
def app_env(tmp_path_factory):
    """The demo ranked by the SSS model: its p(SOZ) heat map and Venn-Abers intervals are drawn (served by ``app_url``)."""
    root, out = tmp_path_factory.mktemp("render-data-root"), tmp_path_factory.mktemp("render-output")
    return app_environment(root, out, SSS_VIEWER_SCORER="sss")


def _open(browser, url, errors: list[str]):
    context = browser.new_context(viewport={"width": 1600, "height": 1400}, accept_downloads=True)
    page = context.new_page()
    page.on("console", lambda m: errors.append(f"console {m.type}: {m.text}") if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(f"pageerror: {e}"))
    page.goto(url)
    page.wait_for_selector(".tabulator-row", timeout=LOAD_TIMEOUT_MS)
    page.wait_for_function(f"() => ({_STATE})().overviews == 1", timeout=LOAD_TIMEOUT_MS)  # added after load
    page.evaluate(_LISTEN)
    return page


def _course_box(page) -> dict:
    """The time course plot's box on the page (its Bokeh view's element)."""
    return page.evaluate(
        """() => {
          function* views(vs) { for (const v of vs) { yield v; if (v.child_views) yield* views(v.child_views.values()); } }
          for (const v of views(Bokeh.index)) {
            const t = v.model.title;
            if (t != null && t.text != null && t.text.startsWith("mean ± SD")) {
              const r = v.el.getBoundingClientRect();
              return {x: r.x + window.scrollX, y: r.y + window.scrollY, width: r.width, height: r.height};
            }
          }
          return null;
        }"""
    )


def _click_and_settle(page, name: str) -> None:
    page.evaluate("() => { window.__sss_changes = []; }")
    page.get_by_role("button", name=name).click()
    page.wait_for_function(_QUIET, arg=QUIET_MS, timeout=30_000)


def test_twenty_page_changes_leave_no_error_and_the_time_course_unchanged(browser, app_url):
    errors: list[str] = []
    page = _open(browser, app_url, errors)
    before = page.evaluate(_STATE)
    assert before["range_tools"] == 1 and before["range_tool_owners"] == ["overview"] and len(before["course"]) == 1
    box = _course_box(page)
    assert box is not None and box["width"] > 100
    box = {**box, "x": box["x"] + 2, "width": box["width"] - 2}  # not the sidebar's edge, which it touches
    shot = page.screenshot(clip=box, full_page=True)
    select = page.locator("select").filter(has=page.locator("option", has_text=re.compile(r"^\s*1: ")))
    seen = set()
    steps = ["rows ▼", "rows ▼", "▲ rows", "▲ rows", "time ▶"] * 2 + [
        "◀ time",
        "rows ▼",
        "time ▶",
        "▲ rows",
        "time ▶",
    ] * 2
    for name in steps:  # 20 changes: channel pages and time pages
        _click_and_settle(page, name)
        seen.add(select.evaluate("s => s.options[s.selectedIndex].text"))
    assert len(seen) == 3  # every channel page of the demo was shown
    after = page.evaluate(_STATE)
    assert errors == []
    assert after == before  # one overview, one range tool in its own toolbar, the time course as it was
    changed = _changed_pixels(page.screenshot(clip=box, full_page=True), shot)
    assert changed <= 20, f"{changed} pixels of the time course changed"  # redrawn or moved: thousands
    page.context.close()


def _changed_pixels(png_a: bytes, png_b: bytes) -> int:
    """Pixels that differ visibly between two screenshots of one box.

    Not byte equality: the page around the time course reflows while paging (the sidebar's fields follow
    the view), which may move its anti-aliased edges by a fraction of a pixel; a redraw, a second legend
    or a shifted plot changes thousands of pixels.
    """
    import io

    import numpy as np
    from PIL import Image

    a, b = (np.asarray(Image.open(io.BytesIO(x)).convert("RGB"), dtype=int) for x in (png_a, png_b))
    assert a.shape == b.shape
    return int((np.abs(a - b).sum(axis=2) > 96).sum())


_DRAWN = """() => {
  function* views(vs) { for (const v of vs) { yield v; if (v.child_views) yield* views(v.child_views.values()); } }
  const plots = [...views(Bokeh.index)].map(v => v.model)  // the plots on screen, not models left in the document
    .filter(m => m.title != null && m.title.text != null && Array.isArray(m.renderers));
  const main = plots.find(p => p.title.text.startsWith("sub-demo"));
  const overview = plots.find(p => p.title.text.startsWith("overview"));
  const total = a => { let s = 0, n = 0; for (const v of a) if (Number.isFinite(v)) { s += v; n += 1; } return [s, n]; };
  const column = (r, c) => Array.from(r.data_source.get_column(c) ?? []);
  const images = p => p.renderers.filter(r => r.glyph?.type == "Image").map(r => total(r.data_source.get_column("image")[0]));
  return {
    title: main.title.text,
    x: [main.x_range.start, main.x_range.end],
    labels: (o => o instanceof Map ? Object.fromEntries(o) : o)(main.left.find(a => a.major_label_overrides != null).major_label_overrides),
    rows: main.renderers.filter(r => r.glyph?.type == "Line").map(r =>
      [r.name, r.glyph.line_color, total(column(r, "amplitude")), column(r, "time")[0], column(r, "time").at(-1)]),
    heat: images(main),
    overview: images(overview),
  };
}"""


def test_a_page_drawn_in_place_equals_the_same_page_drawn_by_holoviews(browser, app_url):
    """Paging puts new data into the drawn glyphs (no HoloViews update); a full update of the same page draws the same."""
    errors: list[str] = []
    page = _open(browser, app_url, errors)
    for name in ("rows ▼", "time ▶", "▲ rows", "rows ▼"):
        _click_and_settle(page, name)
    in_place = page.evaluate(_DRAWN)
    clip = page.locator(".bk-Checkbox", has=page.get_by_text("clip rows", exact=True)).locator("input")
    for checked in (False, True):  # clipping off and on again: a display change, drawn by HoloViews' own update
        page.evaluate("() => { window.__sss_changes = []; }")
        clip.click()
        page.wait_for_function(_QUIET, arg=1000, timeout=30_000)
        assert clip.is_checked() == checked
    redrawn = page.evaluate(_DRAWN)
    assert errors == []
    assert in_place["rows"] and len(in_place["rows"]) == len(redrawn["rows"])
    assert in_place["title"] == redrawn["title"] and in_place["labels"] == redrawn["labels"]
    assert in_place["x"] == pytest.approx(redrawn["x"])
    for ours, theirs in zip(in_place["rows"], redrawn["rows"]):
        assert ours[:2] == theirs[:2]  # the row's name and colour
        assert ours[2][1] == theirs[2][1] and ours[2][0] == pytest.approx(theirs[2][0], rel=1e-6, abs=1e-3)
        assert ours[3:] == pytest.approx(theirs[3:])
    for key in ("heat", "overview"):  # (sum of finite values, how many) per image
        assert sum(in_place[key], []) == pytest.approx(sum(redrawn[key], [])), key
    page.context.close()


def test_svg_download_is_drawn_by_the_browser_with_the_colour_bars(browser, app_url):
    errors: list[str] = []
    page = _open(browser, app_url, errors)
    _click_and_settle(page, "▲ rows")
    select = page.locator("select").filter(has=page.locator("option", has_text=re.compile(r"^\s*1: ")))
    rows = select.evaluate("s => s.options[s.selectedIndex].text").split(": ", 1)[1]  # e.g. "RABT2 … RG13"
    with page.expect_download(timeout=60_000) as info:
        page.get_by_role("button", name="⬇ SVG").click()
    text = Path(info.value.path()).read_text(encoding="utf-8")
    assert text.startswith(BROWSER_MARK) and FALLBACK_MARK not in text  # not the matplotlib fallback
    assert "<svg" in text and text.count(">p(SOZ)<") >= 2  # the colour bars of the heat map and the overview
    assert ">overview of the whole recording" in text and f"rows {rows} (page" in text  # the overview, the page shown
    assert errors == []
    page.context.close()

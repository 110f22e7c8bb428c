"""Retake ``docs/viewer.png``: the served app on its demo, in Debian chromium, as a user first sees it.

    .venv/bin/python docs/make_screenshot.py [--out docs/viewer.png] [--width 1600] [--height 1500]

Serves ``app.py`` on a free loopback port (``tests/browser_support.served_app``, private output and
cache folders), waits for the ranking and the overview, and saves a full-page PNG.
"""

from __future__ import annotations

import argparse
import logging
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from tests.browser_support import CHROMIUM, served_app  # noqa: E402

logger = logging.getLogger("make_screenshot")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=REPO / "docs" / "viewer.png")
    parser.add_argument("--width", type=int, default=1600)
    parser.add_argument("--height", type=int, default=1500)
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    from playwright.sync_api import sync_playwright

    with tempfile.TemporaryDirectory() as tmp:
        env = {"SSS_VIEWER_DATA_ROOT": tmp, "SSS_VIEWER_OUTPUT": f"{tmp}/out", "BOKEH_IN_DOCKER": "1"}
        with served_app(env) as url, sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
            page = browser.new_page(viewport={"width": args.width, "height": args.height})
            page.goto(url, wait_until="commit", timeout=120_000)
            page.wait_for_selector(".tabulator-row", timeout=120_000)
            page.wait_for_timeout(8000)  # the overview is drawn after the page has loaded
            tmp_png = Path(tmp) / "viewer.png"
            page.screenshot(path=str(tmp_png), full_page=False)
            browser.close()
        args.out.write_bytes(tmp_png.read_bytes())
    logger.info("wrote %s", args.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""Time from ``panel serve app.py`` starting to the demo's ranking and heat map being visible in Chromium.

Target (issue 4): within 15 s on 2 cores. Also prints the time a second browser session takes
(the server is warm then), as the baseline the cold start is compared with.

Run: ``.venv/bin/python benchmarks/app_startup.py [--repeats 3]`` (needs Debian chromium).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from playwright.sync_api import sync_playwright  # noqa: E402

from tests.browser_support import CHROMIUM, served_app  # noqa: E402


def one_run(browser) -> tuple[float, float]:
    """(cold seconds from server start to visible ranking + heat map, warm seconds for a second session)."""
    with tempfile.TemporaryDirectory() as tmp:
        env = {"SSS_VIEWER_OUTPUT": f"{tmp}/out", "SSS_VIEWER_DATA_ROOT": tmp, "BOKEH_IN_DOCKER": "1"}
        started = time.monotonic()
        with served_app(env) as url:
            times = []
            for _ in range(2):
                t0 = time.monotonic()
                page = browser.new_page(viewport={"width": 1600, "height": 1200})
                page.goto(url)
                page.wait_for_selector(".tabulator-row", timeout=120_000)
                page.wait_for_selector("canvas", timeout=120_000)  # the bokeh plots (traces + heat map)
                times.append(time.monotonic() - (started if not times else t0))
                page.close()
    return times[0], times[1]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        runs = [one_run(browser) for _ in range(args.repeats)]
        browser.close()
    cold = statistics.median(r[0] for r in runs)
    warm = statistics.median(r[1] for r in runs)
    print(
        f"server start -> demo ranking + heat map visible: median {cold:.1f} s over {args.repeats} runs (target <= 15 s)"
    )
    print(f"second session on the warm server: median {warm:.1f} s; cold/warm ratio {cold / warm:.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

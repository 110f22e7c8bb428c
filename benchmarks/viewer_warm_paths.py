"""Cold vs warm times of two viewer paths whose tests used to assert a time (moved here: the time depends on load).

* demo scores: the first ``demo.demo_scores`` scores the demo recording; the second reads the cached tables
  (``tests/viewer/test_viewer_demo.py`` checks that the second call does not score).
* SVG export: the first ``export_figure`` starts the headless Chromium; the second reuses the warm browser
  (``tests/viewer/test_viewer_export.py`` checks the browser is reused). Skipped without Chromium.

Run: ``.venv/bin/python benchmarks/viewer_warm_paths.py [--repeats 3]``.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path


def demo_scores_times() -> tuple[float, float]:
    """(cold seconds: score the demo, warm seconds: read the cached scores), with no bundled scores."""
    from sss_viewer.viewer import demo

    with tempfile.TemporaryDirectory() as tmp:
        demo.BUNDLED_SCORES_DIR = Path(tmp) / "none"
        times = []
        for _ in range(2):
            started = time.perf_counter()
            demo.demo_scores(tmp, device="cpu")
            times.append(time.perf_counter() - started)
    return times[0], times[1]


def export_times() -> tuple[float, float] | None:
    """(seconds for an SVG export that starts Chromium, seconds for one on the warm browser), or None."""
    import holoviews as hv
    import numpy as np

    from sss_viewer.viewer import export

    if export.find_browser() is None:
        return None
    hv.extension("bokeh", logo=False)
    export._WARM.quit()
    times = []
    with tempfile.TemporaryDirectory() as tmp:
        for seed in range(2):
            curve = hv.Curve(np.random.default_rng(seed).standard_normal(100).cumsum()).opts(width=400, height=200)
            started = time.perf_counter()
            export.export_figure(curve, Path(tmp) / f"figure{seed}.svg")
            times.append(time.perf_counter() - started)
    export._WARM.quit()
    return times[0], times[1]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    demo_runs = [demo_scores_times() for _ in range(args.repeats)]
    print(
        f"demo scores: cold median {statistics.median(r[0] for r in demo_runs):.1f} s, "
        f"warm (cached) median {statistics.median(r[1] for r in demo_runs):.2f} s over {args.repeats} runs"
    )
    export_runs = [export_times() for _ in range(args.repeats)]
    if export_runs[0] is None:
        print("SVG export: skipped (no Chromium browser found)")
    else:
        print(
            f"SVG export: starting Chromium median {statistics.median(r[0] for r in export_runs):.2f} s, "
            f"warm browser median {statistics.median(r[1] for r in export_runs):.2f} s over {args.repeats} runs"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Per-window MiniRocket training features: this project against aeon's MiniRocket on the same windows.

The windows are those training takes: length 1024 every 256 samples of ``--channels`` channels of
``--minutes`` minutes at 250 Hz (the bundled model's rate). Timed in one run, each the median of
``--repeats`` passes after a warm-up (numba compiles on first use):

* **series** — ``MiniRocketClassifier.store_window_features``: the windows' 9,996 PPV features
  read within their channel, by segment sums over one pass of the kernels per channel (issue 15);
* **per window** — the same model with ``feature_context="window"`` (torch, each window convolved
  on its own; the path before issue 15);
* **aeon** — ``aeon.transformations.collection.convolution_based.MiniRocket(n_kernels=10000,
  n_jobs=2)`` ``transform`` of the same windows materialised as ``(N, 1, 1024)``, fitted on 256 of
  them. aeon is not a dependency of sss-viewer (its pins would move numpy/numba/pandas): it runs in
  its own environment, ``--aeon-python`` (default ``.venv-aeon/bin/python``; ``make bench-env``
  builds it), in a child process given the same windows.

    .venv/bin/python benchmarks/minirocket_features.py [--channels 8] [--minutes 5] [--repeats 3]
"""

from __future__ import annotations

import argparse
import copy
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import torch

from sss_viewer.models import build_window_model, model_from_config
from sss_viewer.windows.store import SeriesStore, WindowIndex

ROOT = Path(__file__).resolve().parents[1]
L, STRIDE, RATE = 1024, 256, 250.0

AEON_SCRIPT = """
import json, statistics, sys, time
import numpy as np
from aeon.transformations.collection.convolution_based import MiniRocket
x = np.load(sys.argv[1])[:, None, :].astype(np.float32)
repeats = int(sys.argv[2])
rocket = MiniRocket(n_kernels=10000, n_jobs=2, random_state=0).fit(x[:256])
rocket.transform(x[:64])  # warm-up (numba)
times = []
for _ in range(repeats):
    t0 = time.perf_counter()
    rocket.transform(x)
    times.append(time.perf_counter() - t0)
import aeon
print(json.dumps({"seconds": statistics.median(times), "version": aeon.__version__}))
"""


def median_seconds(fn, repeats: int) -> float:
    """Median wall time of ``fn()`` over ``repeats`` calls, after one warm-up call."""
    fn()
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--channels", type=int, default=8)
    p.add_argument("--minutes", type=float, default=5.0)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--aeon-python", default=str(ROOT / ".venv-aeon" / "bin" / "python"))
    args = p.parse_args(argv)
    torch.set_num_threads(2)
    rng = np.random.default_rng(0)
    n_times = int(args.minutes * 60 * RATE)
    store = SeriesStore.from_series([rng.standard_normal(n_times).astype(np.float32) for _ in range(args.channels)])
    starts = WindowIndex.build(store.lengths, L, STRIDE).absolute_starts(store)
    windows = store.windows(starts, L)
    model = build_window_model("minirocket", L, num_features=9996)
    model.initialise_from_data(torch.from_numpy(windows[:256]))
    model.eval()
    per_window = model_from_config({**model.get_config(), "feature_context": "window"})
    per_window.load_state_dict(copy.deepcopy(model.state_dict()))
    per_window.eval()
    n = len(starts)
    print(
        f"{n} windows of {L} samples, stride {STRIDE}, from {args.channels} channels x {args.minutes:g} min at {RATE:g} Hz; "
        f"{model.n_features} features"
    )
    series_s = median_seconds(lambda: model.store_window_features(store, starts, L), args.repeats)
    print(f"series (segment sums, issue 15): {series_s:.2f} s, {n / series_s:.0f} windows/s")

    def by_window():
        with torch.inference_mode():
            for lo in range(0, n, 256):
                per_window.transform(torch.from_numpy(windows[lo : lo + 256]))

    window_s = median_seconds(by_window, max(1, args.repeats // 3))
    print(
        f"per window (torch, before issue 15): {window_s:.2f} s, {n / window_s:.0f} windows/s; series {window_s / series_s:.1f}x faster"
    )
    if not Path(args.aeon_python).exists():
        print(f"aeon: not measured ({args.aeon_python} missing; `make bench-env` builds it)")
        return 0
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "windows.npy"
        np.save(path, windows)
        out = subprocess.run(
            [args.aeon_python, "-c", AEON_SCRIPT, str(path), str(args.repeats)],
            capture_output=True,
            text=True,
            check=False,
        )
    if out.returncode != 0:
        print(
            f"aeon: failed ({out.stderr.strip().splitlines()[-1] if out.stderr.strip() else out.returncode})",
            file=sys.stderr,
        )
        return 1
    aeon = json.loads(out.stdout.strip().splitlines()[-1])
    print(
        f"aeon {aeon['version']} MiniRocket(n_kernels=10000, n_jobs=2).transform: {aeon['seconds']:.2f} s, "
        f"{n / aeon['seconds']:.0f} windows/s; series / aeon windows/s = {aeon['seconds'] / series_s:.2f}"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

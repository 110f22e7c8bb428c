"""Time to score a 100-channel, 5-minute, 1 kHz recording (target ≤ 5 s on 2 cores with the bundled model).

Prints the median wall time of ``score_recording`` over repeats, split into preprocessing and model
time. Baselines measured in the same run:

* a model that reads windows within their channel (the bundled MiniRocket recipe, issue 15) is also
  timed through the per-window path it replaced: the same weights with ``feature_context="window"``,
  every window convolved on its own (``--skip-per-window`` skips it; it takes about a minute);
* ``--strides 256,64,1`` times the model at each stride (end to end, and the model's window logits
  alone), to show the cost does not depend on the stride;
* the naive loop (windows materialised as a copy and fed through a per-item ``Dataset`` +
  ``DataLoader``) unless ``--skip-naive``.

    .venv/bin/python benchmarks/score_latency.py [--channels 100] [--minutes 5] [--repeats 3] [--model DIR]
        [--strides 256,64,1] [--skip-per-window] [--skip-naive]

The model is an untrained ``default``-preset PatchTST unless ``--model`` names a saved model directory
(``--model sss_viewer/data/demo/model``: the viewer's bundled model, the MiniRocket recipe).
"""

from __future__ import annotations

import argparse
import copy
import statistics
import time

import numpy as np
import torch

from sss_viewer.engine.bundle import ModelBundle
from sss_viewer.engine.calibration import make_calibrator
from sss_viewer.engine.inference import predict_window_probs, score_recording
from sss_viewer.io.recording import Recording
from sss_viewer.models import build_model, model_from_config
from sss_viewer.preprocessing.config import preprocess_preset
from sss_viewer.windows.series_set import build_series_set
from sss_viewer.windows.store import WindowIndex


class _NaiveWindows(torch.utils.data.Dataset):
    def __init__(self, windows: np.ndarray):
        self.windows = windows

    def __len__(self) -> int:
        return len(self.windows)

    def __getitem__(self, i: int) -> torch.Tensor:
        return torch.from_numpy(self.windows[i])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--channels", type=int, default=100)
    parser.add_argument("--minutes", type=float, default=5.0)
    parser.add_argument("--sfreq", type=float, default=1000.0)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--batch-size", type=int, default=1024)
    parser.add_argument("--skip-naive", action="store_true")
    parser.add_argument(
        "--skip-per-window", action="store_true", help="skip the per-window path of a series-reading model"
    )
    parser.add_argument(
        "--strides", default="", help="comma-separated strides to time besides the model's (e.g. 256,64,1)"
    )
    parser.add_argument("--model", help="saved model directory (default: an untrained default-preset PatchTST)")
    args = parser.parse_args()

    rng = np.random.default_rng(0)
    n_times = int(args.minutes * 60 * args.sfreq)
    data = (rng.standard_normal((args.channels, n_times), dtype=np.float32) * 50).astype(np.float32)
    rec = Recording(data, args.sfreq, [f"C{i}" for i in range(args.channels)], ["seeg"] * args.channels, line_freq=60.0)
    if args.model:
        bundle = ModelBundle.load(args.model)
        model, calibrator = bundle.model.eval(), bundle.calibrator
    else:
        model = build_model("patchtst", window_length=1024).eval()
        calibrator = make_calibrator("isotonic").fit(rng.random(1000), rng.integers(0, 2, 1000))
        bundle = ModelBundle(model, preprocess_preset("default"), 1024, 256, calibrator, 0.5)
    length, stride = bundle.window_length, bundle.inference_stride

    times, prep = [], []
    for _ in range(args.repeats):
        t0 = time.perf_counter()
        build_series_set([rec], bundle.preprocess, min_length=length, progress=False)
        prep.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        result = score_recording(bundle, rec, device="cpu", progress=False)
        times.append(time.perf_counter() - t0)
    n_windows = len(result.windows)
    fast = statistics.median(times)
    print(f"model: {args.model or 'untrained PatchTST (default preset)'} ({model.get_config()['name']})")
    print(
        f"recording: {args.channels} channels x {args.minutes:g} min at {args.sfreq:g} Hz; {n_windows} windows (L={length}, stride {stride})"
    )
    print(
        f"score_recording: median {fast:.2f} s over {args.repeats} (preprocessing {statistics.median(prep):.2f} s), "
        f"{n_windows / fast:.0f} windows/s end to end, torch threads {torch.get_num_threads()}"
    )
    print(f"goal 5 s (the bundled model, issue 15): ratio {fast / 5:.2f}")
    series = build_series_set([rec], bundle.preprocess, min_length=length, progress=False)
    for other in [int(v) for v in args.strides.split(",") if v.strip()]:
        index = WindowIndex.build(series.store.lengths, length, other, cover_end=True)
        starts = index.absolute_starts(series.store)
        ends, alone = [], []
        for _ in range(args.repeats):
            t0 = time.perf_counter()
            score_recording(bundle, rec, stride=other, device="cpu", progress=False)
            ends.append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            predict_window_probs(model, series.store, starts, length)
            alone.append(time.perf_counter() - t0)
        print(
            f"stride {other}: {len(starts)} windows; score_recording median {statistics.median(ends):.2f} s "
            f"({statistics.median(ends) / fast:.2f}x stride {stride}); window probabilities alone {statistics.median(alone):.2f} s"
        )
    if getattr(model, "reads_series", False) and not args.skip_per_window:
        per_window = model_from_config({**model.get_config(), "feature_context": "window"})
        per_window.load_state_dict(copy.deepcopy(model.state_dict()))
        per_window.eval()
        starts = WindowIndex.build(series.store.lengths, length, stride, cover_end=True).absolute_starts(series.store)
        t0 = time.perf_counter()
        build_series_set([rec], bundle.preprocess, min_length=length, progress=False)
        p = predict_window_probs(per_window, series.store, starts, length, batch_size=args.batch_size)
        calibrator.transform(p)
        old = time.perf_counter() - t0
        print(
            f"per-window path (the same weights, each window convolved on its own; the path before issue 15), once: "
            f"{old:.2f} s, {len(starts) / old:.0f} windows/s; evidence series {old / fast:.1f}x faster"
        )
    if args.skip_naive:
        return
    index = WindowIndex.build(series.store.lengths, length, stride, cover_end=True)
    starts = index.absolute_starts(series.store)
    naive_times = []
    for _ in range(args.repeats):
        t0 = time.perf_counter()
        windows = np.stack([series.store.windows(starts[i : i + 1], length)[0] for i in range(len(starts))])
        loader = torch.utils.data.DataLoader(_NaiveWindows(windows), batch_size=args.batch_size)
        with torch.inference_mode():
            out = [torch.sigmoid(model(x)) for x in loader]
        calibrator.transform(torch.cat(out).numpy())
        naive_times.append(time.perf_counter() - t0 + statistics.median(prep))
    naive = statistics.median(naive_times)
    print(f"naive (materialised windows + per-item Dataset): median {naive:.2f} s; speed-up {naive / fast:.2f}x")


if __name__ == "__main__":
    main()

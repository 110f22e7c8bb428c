"""Trace view render times on a 128-channel, 10-min, 1 kHz recording (targets on 2 cores: first ≤ 3 s, update ≤ 0.3 s).

Builds an in-memory float32 recording (~300 MB) with synthetic window scores, then times

* **first render**: a fresh ``TraceView`` with one 128-row page over the whole 10 min (the
  zoomed-out datashader path, with the heat map and the whole-recording overview), ``figure()`` +
  ``hv.render``; then ``bokeh.embed.json_item`` of the result (what goes to the browser);
* **zoom/pan updates**: a ``RangeX`` event on the rendered plot (what a bokeh zoom or pan sends):
  the DynamicMap callback reads and reduces the new range and HoloViews updates the bokeh models
  in place. 10-min, 60-s and 10-s windows at several offsets; the callback alone is timed too;
* the same updates on a 16-row page (the default page size: one decimated curve per row when
  zoomed in), and on the 128-row page forced to curves (``max_curve_rows=128``), which is why
  pages above ``max_curve_rows`` (32) stay datashaded;
* **page changes** on the 16-row page: ``view.page`` set (what the page buttons do), which updates
  the main plot and the overview in place (same bokeh models, new data);
* **baseline**: a plain Bokeh figure with every sample, 128 ``line`` glyphs over one
  ``ColumnDataSource``, built and serialised with ``json_item`` in the same run.

Every figure is the median of ``--repeats`` (≥ 5). Datashader's numba kernels compile on first use
in a process; that one-off cost is printed separately (a server pays it once, at start-up).

    .venv/bin/python benchmarks/viewer_render.py [--channels 128] [--minutes 10] [--repeats 5] [--skip-bokeh]
"""

from __future__ import annotations

import argparse
import gc
import statistics
import time

import holoviews as hv
import numpy as np
import pandas as pd

from sss_viewer.engine.inference import RecordingScores
from sss_viewer.io.recording import Recording
from sss_viewer.viewer._envelope import rasterise_envelopes
from sss_viewer.viewer.timecourse import ensure_bokeh
from sss_viewer.viewer.traces import TraceView

SHAFT_LETTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"


def synthetic_recording(n_channels: int, minutes: float, sfreq: float, seed: int = 0) -> Recording:
    """Noise plus a 7 Hz rhythm and sparse spikes, in shafts of 8 contacts (µV, float32)."""
    rng = np.random.default_rng(seed)
    n_times = int(minutes * 60 * sfreq)
    data = rng.standard_normal((n_channels, n_times), dtype=np.float32)
    data *= 30.0
    t = np.arange(n_times, dtype=np.float32) / np.float32(sfreq)
    data += (20.0 * np.sin(2 * np.pi * 7.0 * t)).astype(np.float32)
    spike = (300.0 * np.hanning(30)).astype(np.float32)
    for ch in range(0, n_channels, 9):
        for start in rng.integers(0, n_times - 30, size=int(minutes * 30)):
            data[ch, start : start + 30] += spike
    names = [f"{SHAFT_LETTERS[(i // 8) % 26]}{'' if i < 208 else i // 208}{i % 8 + 1}" for i in range(n_channels)]
    return Recording(data, sfreq, names, ["seeg"] * n_channels, subject="bench", run="01", line_freq=50.0)


def synthetic_scores(rec: Recording, window_s: float = 1.0, stride_s: float = 0.25, seed: int = 0) -> RecordingScores:
    """Random calibrated window probabilities (1-s windows every 0.25 s) for every channel."""
    rng = np.random.default_rng(seed)
    starts = np.arange(0.0, rec.duration_s - window_s + 1e-9, stride_s)
    n_ch, n_w = rec.n_channels, len(starts)
    p = rng.beta(2, 5, size=(n_ch, n_w))
    windows = pd.DataFrame(
        {
            "channel": np.repeat(rec.ch_names, n_w),
            "start_s": np.tile(starts, n_ch),
            "end_s": np.tile(starts + window_s, n_ch),
            "p_raw": p.ravel(),
            "p_cal": p.ravel(),
            "p0": np.clip(p.ravel() - 0.05, 0, 1),
            "p1": np.clip(p.ravel() + 0.05, 0, 1),
        }
    )
    channels = pd.DataFrame({"channel": rec.ch_names, "score": p.mean(axis=1)})
    channels = channels.sort_values("score", ascending=False).reset_index(drop=True)
    channels["rank"] = np.arange(1, n_ch + 1)
    return RecordingScores(windows, channels, pd.DataFrame(columns=["channel", "reason"]), rec.duration_s)


def timed(fn):
    start = time.perf_counter()
    out = fn()
    return time.perf_counter() - start, out


def median_text(values: list[float]) -> str:
    return f"{statistics.median(values):7.3f} s  (runs: {', '.join(f'{v:.3f}' for v in values)})"


def warm_up_datashader() -> float:
    """Compile datashader's line kernels on a tiny canvas; returns the seconds it took."""
    seconds, _ = timed(
        lambda: rasterise_envelopes(
            np.linspace(0, 1, 8), np.zeros((2, 8)), np.ones((2, 8)), (0.0, 1.0), 2, 16, 16, ["#202020", "#c2185b"]
        )
    )
    return seconds


def first_render(rec, scores, page_size, repeats):
    build, render, serialise = [], [], []
    view = plot = None
    for _ in range(repeats):
        del view, plot
        gc.collect()
        view = TraceView(recording=rec, scores=scores, page_size=page_size, start_s=0.0, span_s=rec.duration_s)
        t_build, figure = timed(view.figure)
        t_render, plot = timed(lambda: hv.render(figure))
        t_json, _ = timed(lambda: _json_item(plot))
        build.append(t_build)
        render.append(t_render)
        serialise.append(t_json)
    return view, plot, build, render, serialise


def _json_item(plot):
    import logging

    from bokeh.embed import json_item

    # json_item warns (through logging) that Python callbacks cannot run standalone; expected here.
    logger = logging.getLogger("bokeh.embed.util")
    level = logger.level
    logger.setLevel(logging.ERROR)
    try:
        return json_item(plot)
    finally:
        logger.setLevel(level)


def update_times(view, windows):
    """Time a RangeX event (callback + in-place bokeh update) and the callback alone for each window."""
    event, callback = [], []
    for t0, t1 in windows:
        seconds, _ = timed(lambda: view._range.event(x_range=(t0, t1)))
        event.append(seconds)
        seconds, _ = timed(lambda: view.main_element(t0, t1))
        callback.append(seconds)
    return event, callback


def page_change_times(view, repeats: int) -> list[float]:
    """Seconds per ``view.page`` change (main plot and overview updated in place), cycling over the pages."""
    out = []
    for i in range(repeats):
        page = (view.page + 1) % view.n_pages
        seconds, _ = timed(lambda: setattr(view, "page", page))
        out.append(seconds)
    return out


def window_sets(duration: float, repeats: int) -> dict[str, list[tuple[float, float]]]:
    rng = np.random.default_rng(1)
    sets = {}
    for span in (duration, 60.0, 10.0):
        if span >= duration:
            offsets = [(0.0, duration)] + [
                (float(a), duration - float(b)) for a, b in rng.uniform(0, 2, (repeats - 1, 2))
            ]
        else:
            starts = rng.uniform(0, duration - span, repeats)
            offsets = [(float(s), float(s) + span) for s in starts]
        label = f"{span / 60:g}-min" if span >= 60 and span == duration else f"{span:g}-s"
        sets[label] = offsets
    return sets


def bokeh_baseline(rec: Recording, repeats: int):
    """128 line glyphs with every sample on one ColumnDataSource, built and serialised with json_item."""
    from bokeh.models import ColumnDataSource
    from bokeh.plotting import figure

    build, serialise = [], []
    n = rec.n_channels
    t = np.arange(rec.n_times) / rec.sfreq
    scale = np.float32(1.0 / (2 * 90.0))
    for _ in range(repeats):
        gc.collect()
        start = time.perf_counter()
        columns = {"t": t}
        for k in range(n):
            columns[f"c{k}"] = rec.data[k] * scale + np.float32(n - 1 - k)
        source = ColumnDataSource(columns)
        fig = figure(width=1000, height=900, x_range=(0, rec.duration_s), output_backend="webgl")
        for k in range(n):
            fig.line("t", f"c{k}", source=source, line_width=0.6, color="#202020")
        build.append(time.perf_counter() - start)
        seconds, item = timed(lambda fig=fig: _json_item(fig))
        serialise.append(seconds)
        size = len(str(item["doc"]))
        del columns, source, fig, item
    return build, serialise, size


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--channels", type=int, default=128)
    parser.add_argument("--minutes", type=float, default=10.0)
    parser.add_argument("--sfreq", type=float, default=1000.0)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--skip-bokeh", action="store_true", help="skip the plain Bokeh baseline")
    parser.add_argument("--skip-forced-curves", action="store_true", help="skip the 128 curves-per-page case")
    args = parser.parse_args()
    repeats = max(5, args.repeats)
    ensure_bokeh()

    seconds, rec = timed(lambda: synthetic_recording(args.channels, args.minutes, args.sfreq))
    scores = synthetic_scores(rec)
    print(
        f"recording: {rec.n_channels} channels x {rec.duration_s / 60:g} min at {rec.sfreq:g} Hz, "
        f"{rec.data.nbytes / 1e6:.0f} MB float32 in memory (made in {seconds:.1f} s); "
        f"{len(scores.windows)} scored windows"
    )
    print(f"datashader JIT warm-up (once per process): {warm_up_datashader():.2f} s")

    print(f"\n== first render: 1 page x {rec.n_channels} rows over {rec.duration_s:g} s (datashaded) ==")
    view, plot, build, render, serialise = first_render(rec, scores, rec.n_channels, repeats)
    total = [a + b for a, b in zip(build, render)]
    print(f"  figure() (the DynamicMaps, nothing read yet):    {median_text(build)}")
    print(f"  hv.render (read + reduce + heat map + overview): {median_text(render)}")
    print(f"  first render (figure + hv.render):              {median_text(total)}   target <= 3 s")
    print(f"  json_item of it (serialisation for the browser): {median_text(serialise)}")

    print(f"\n== zoom/pan updates, {rec.n_channels}-row page (RangeX event: callback + bokeh update) ==")
    updates = {}
    for label, windows in window_sets(rec.duration_s, repeats).items():
        event, callback = update_times(view, windows)
        updates[label] = event
        print(f"  {label:>7} window: update {median_text(event)}; callback alone {statistics.median(callback):.3f} s")

    print("\n== zoom/pan updates, 16-row page (curves when span <= 60 s) ==")
    small = TraceView(recording=rec, scores=scores, page_size=16, start_s=0.0, span_s=10.0)
    small_plot = hv.render(small.figure())
    for label, windows in window_sets(rec.duration_s, repeats).items():
        event, callback = update_times(small, windows)
        print(f"  {label:>7} window: update {median_text(event)}; callback alone {statistics.median(callback):.3f} s")
    pages = page_change_times(small, repeats)
    print(f"  page change (in place, 10-s window): {median_text(pages)}")
    del small, small_plot

    if not args.skip_forced_curves:
        print(f"\n== {rec.n_channels}-row page forced to curves (max_curve_rows={rec.n_channels}) ==")
        forced = TraceView(
            recording=rec,
            scores=scores,
            page_size=rec.n_channels,
            max_curve_rows=rec.n_channels,
            span_s=10.0,
            show_overview=False,
        )
        seconds, forced_plot = timed(lambda: hv.render(forced.figure()))
        print(f"  first render at 10 s: {seconds:.2f} s")
        sets = window_sets(rec.duration_s, repeats)
        for label in ("60-s", "10-s"):
            event, callback = update_times(forced, sets[label])
            print(
                f"  {label:>7} window: update {median_text(event)}; callback alone {statistics.median(callback):.3f} s"
            )
        del forced, forced_plot

    if args.skip_bokeh:
        return
    del view, plot
    gc.collect()
    print(
        f"\n== plain Bokeh: {rec.n_channels} line glyphs, every sample ({rec.n_channels * rec.n_times / 1e6:.0f} M points) =="
    )
    build_b, serialise_b, size = bokeh_baseline(rec, repeats)
    total_b = [a + b for a, b in zip(build_b, serialise_b)]
    print(f"  build:     {median_text(build_b)}")
    print(f"  json_item: {median_text(serialise_b)}  ({size / 1e6:.0f} MB of JSON)")
    print(f"  total:     {median_text(total_b)}")
    ours = statistics.median([a + b for a, b in zip(total, serialise)])
    print(
        f"\nfirst render + json_item: TraceView {ours:.2f} s vs plain Bokeh {statistics.median(total_b):.2f} s "
        f"(plain / TraceView = {statistics.median(total_b) / ours:.1f})"
    )
    print(
        "zoom/pan update (TraceView, "
        + " / ".join(updates)
        + " median): "
        + " / ".join(f"{statistics.median(v):.3f} s" for v in updates.values())
        + f"; plain Bokeh has no server update: every change re-sends {size / 1e6:.0f} MB "
        f"({statistics.median(total_b) / statistics.median(updates['10-s']):.0f}x the 10-s update time)"
    )


if __name__ == "__main__":
    main()

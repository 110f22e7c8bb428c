"""Scoring cost of each SSS candidate of the ``bonn-candidates`` protocol, on the real Bonn segments.

For every candidate (the ``bonn`` preset's local model and window, with the protocol's overrides) it
builds the local model exactly as training does (data-dependent set-up on training windows), then
scores every window of the 200 Bonn segments at the candidate's scoring stride through
``predict_window_probs`` — the product's scoring path (the per-sample evidence route where the model
has one). Weights do not change the cost of a frozen front end plus a linear head, so no training is
needed; the training time of each candidate is in its protocol runs (``seconds``).

It prints, per candidate, the median over ``--repeats`` of windows/s and of seconds of signal scored
per second (windows of different lengths at different strides are not comparable by count alone),
and the ratio to the ``bonn`` preset's model (MiniRocket, L = 1024) measured in the same run.

Usage::

    .venv/bin/python benchmarks/bonn_candidate_cost.py --data ../shared/data/bonn-epilepsy --repeats 3
"""

from __future__ import annotations

import argparse
import logging
import statistics
import time

import numpy as np
import torch

from sss_viewer.engine.inference import predict_window_probs
from sss_viewer.experiments.protocols import BONN_CANDIDATES, plan_runs
from sss_viewer.experiments.runner import PRESETS, sss_run_config
from sss_viewer.io.cohort import load_data
from sss_viewer.models import build_window_model
from sss_viewer.preprocessing.config import preprocess_preset
from sss_viewer.windows.series_set import build_series_set
from sss_viewer.windows.store import WindowIndex

logger = logging.getLogger("bonn_candidate_cost")


def candidate_configs(seed: int = 0) -> dict:
    """``{label: TrainConfig}`` of every ``bonn-candidates`` row, for ``seed``'s first fold."""
    runs = plan_runs("bonn-candidates", ["Bonn"], ["sss"], [seed], ["cv"])
    configs = {}
    for variant in BONN_CANDIDATES:
        run = next(r for r in runs if r.overrides == variant)
        configs[run.label] = sss_run_config(PRESETS["bonn"], run)
    return configs


def time_scoring(config, series_set, repeats: int) -> dict:
    """Median windows/s and signal-seconds/s of scoring every window of ``series_set`` with ``config``'s model."""
    L = config.window_length
    torch.manual_seed(config.seed)
    model = build_window_model(config.backbone, L, **config.model_params)
    index = WindowIndex.build(series_set.store.lengths, L, config.inference_stride, cover_end=True)
    starts = index.absolute_starts(series_set.store)
    if hasattr(model, "initialise_from_data"):
        pick = np.random.default_rng(config.seed).permutation(len(starts))[:2048]
        model.initialise_from_data(torch.from_numpy(series_set.store.windows(starts[pick], L)))
    rates = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        probs = predict_window_probs(model, series_set.store, starts, L)
        rates.append(len(starts) / (time.perf_counter() - t0))
    assert np.isfinite(probs).all()
    rate = statistics.median(rates)
    fs = float(np.median(series_set.meta["sfreq"]))
    return {"windows": len(starts), "stride": config.inference_stride, "L": L, "windows_per_s": rate,
            "signal_s_per_s": rate * config.inference_stride / fs, "repeats": rates}  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", required=True, help="the Bonn data folder (as for sss-viewer experiment bonn)")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(message)s", force=True)
    torch.set_num_threads(args.threads)
    configs = candidate_configs()
    preprocess = preprocess_preset("default", **PRESETS["bonn"].preprocess)
    min_length = max(c.window_length for c in configs.values())
    series_set = build_series_set(load_data(args.data), preprocess, min_length=min_length, progress=False)
    results = {}
    for label, config in configs.items():
        results[label] = time_scoring(config, series_set, args.repeats)
        logger.info("%s: %.0f windows/s (repeats %s)", label, results[label]["windows_per_s"],
                    [round(x) for x in results[label]["repeats"]])  # fmt: skip
    base = results["sss"]["signal_s_per_s"]
    print("| candidate | L | stride | windows | windows/s | signal s/s | ratio to sss |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for label, r in results.items():
        print(f"| {label} | {r['L']} | {r['stride']} | {r['windows']} | {r['windows_per_s']:,.0f} | "
              f"{r['signal_s_per_s']:,.0f} | {r['signal_s_per_s'] / base:.2f} |")  # fmt: skip
    print(f"(median of {args.repeats} repeat(s), {args.threads} threads)")


if __name__ == "__main__":
    main()

"""Training time and scoring speed of each SSS candidate of ``bonn-candidates`` (or ``bonn-refit``), on the real Bonn segments.

Training: each candidate (the ``bonn`` preset's local model and window, with the protocol's overrides)
is trained once on the first fold of seed 0, from scratch (no feature memo: in a protocol run, rows
that share a front end reuse its features, so the runs' ``seconds`` depend on their order), and so are
the whole-segment references of the ``bonn`` protocol on the same fold.

Scoring: the candidate's local model, built and set up from data as training does, scores every window
of the 200 segments at its scoring stride through ``predict_window_probs`` — the product's scoring
path (the per-sample evidence route where the model has one); weights do not change the cost of a
frozen front end plus a linear head. Printed: the median over ``--repeats`` of windows/s and of
seconds of signal scored per second (windows of different lengths and strides are not comparable by
count alone), and the ratio to the protocol's first row (``bonn-candidates``: the ``bonn`` preset's model,
MiniRocket at L = 1024; ``bonn-refit``: the same model with the L-BFGS head) in the same run. A window
ensemble costs its members: each is trained and scored as a single-window run.
``--window-route`` adds, for each Hydra candidate, the same model reading every window on its own
(``feature_context="window"``: the route before the series one), scored in the same run.

Usage::

    .venv/bin/python benchmarks/bonn_candidate_cost.py --data ../shared/data/bonn-epilepsy --repeats 3
    .venv/bin/python benchmarks/bonn_candidate_cost.py --data ../shared/data/bonn-epilepsy --protocol bonn-refit
"""

from __future__ import annotations

import argparse
import json
import logging
import statistics
import time

import numpy as np
import torch

from sss_viewer.engine.inference import predict_window_probs
from sss_viewer.engine.training import train
from sss_viewer.experiments.protocols import PROTOCOLS, ensemble_members, plan_runs, split_for_run
from sss_viewer.experiments.runner import PRESETS, sss_run_config
from sss_viewer.io.cohort import load_data
from sss_viewer.models import build_window_model
from sss_viewer.preprocessing.config import preprocess_preset
from sss_viewer.windows.series_set import build_series_set
from sss_viewer.windows.store import WindowIndex

logger = logging.getLogger("bonn_candidate_cost")


COST_PROTOCOLS = ("bonn-candidates", "bonn-refit")
"""The Bonn protocols whose SSS rows this benchmark times."""


def candidate_runs(seed: int = 0, protocol: str = "bonn-candidates") -> dict:
    """``{label: (RunSpec, TrainConfig)}`` of every single-window run ``protocol``'s rows need, on ``seed``'s first fold.

    A window ensemble's members (single-window runs) are listed in its place, once each.
    """
    runs = plan_runs(protocol, ["Bonn"], ["sss"], [seed], ["cv"])
    chosen = {}
    for variant in PROTOCOLS[protocol].variants:
        run = next(r for r in runs if r.overrides == variant and r.setting == "fold 1")
        for member in ensemble_members(run):  # a window ensemble costs the sum of its members
            config = sss_run_config(PRESETS["bonn"], member)
            if all(_config_key(config) != _config_key(c) for _, c in chosen.values()):
                chosen[member.label] = (member, config)
    return chosen


def _config_key(config) -> str:
    return json.dumps(config.to_dict(), sort_keys=True, default=str)


def ensemble_costs(results: dict, seed: int = 0, protocol: str = "bonn-candidates") -> dict:
    """Cost of each window ensemble of ``protocol`` from its members' rows in ``results``: both trained, both scored."""
    out = {}
    by_config = {_config_key(config): label for label, (_, config) in candidate_runs(seed, protocol).items()}
    for run in plan_runs(protocol, ["Bonn"], ["sss"], [seed], ["cv"]):
        members = ensemble_members(run)
        if run.setting != "fold 1" or len(members) == 1:
            continue
        # a member trains exactly as a single-window row: find that row by its training configuration
        parts = [results[by_config[_config_key(sss_run_config(PRESETS["bonn"], m))]] for m in members]
        signal = 1.0 / sum(1.0 / p["signal_s_per_s"] for p in parts)
        out[run.label] = {
            "L": "+".join(str(p["L"]) for p in parts),
            "stride": "+".join(str(p["stride"]) for p in parts),
            "windows": sum(p["windows"] for p in parts),
            "windows_per_s": float("nan"),
            "signal_s_per_s": signal,
            "train_s": sum(p["train_s"] for p in parts),
        }
    return out


def time_training(config, series_set, split: np.ndarray) -> float:
    """Wall seconds of one SSS training run of ``config`` on ``split`` (features computed from scratch)."""
    t0 = time.perf_counter()
    train([], config, progress=False, series_set=series_set, split=split, feature_memo=None)
    return time.perf_counter() - t0


def time_references(series_set, split: np.ndarray, seed: int = 0) -> dict:
    """Wall seconds of fitting each whole-segment reference of the ``bonn`` protocol on ``split``."""
    from sss_viewer.baselines.hydra_reference import fit_hydra_peer
    from sss_viewer.baselines.minirocket_reference import fit_minirocket_logistic

    fits = {
        "minirocket-lr": lambda: fit_minirocket_logistic(series_set, split, seed=seed),
        "minirocket-lr-full": lambda: fit_minirocket_logistic(series_set, split, seed=seed, fit_on="train+val"),
        "hydra-minirocket-ridge": lambda: fit_hydra_peer(series_set, split, seed=seed),
        "hydra-minirocket-ridge-full": lambda: fit_hydra_peer(series_set, split, seed=seed, fit_on="train+val"),
    }
    seconds = {}
    for name, fit in fits.items():
        t0 = time.perf_counter()
        fit()
        seconds[name] = time.perf_counter() - t0
        logger.info("%s fitted in %.1f s", name, seconds[name])
    return seconds


def time_scoring(config, series_set, repeats: int, **model_overrides) -> dict:
    """Median windows/s and signal-seconds/s of scoring every window of ``series_set`` with ``config``'s model."""
    L = config.window_length
    torch.manual_seed(config.seed)
    model = build_window_model(config.backbone, L, **{**config.model_params, **model_overrides})
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
    return {
        "windows": len(starts),
        "stride": config.inference_stride,
        "L": L,
        "windows_per_s": rate,
        "signal_s_per_s": rate * config.inference_stride / fs,
        "repeats": rates,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", required=True, help="the Bonn data folder (as for sss-viewer experiment bonn)")
    parser.add_argument(
        "--protocol",
        choices=COST_PROTOCOLS,
        default="bonn-candidates",
        help="whose SSS rows to time (default bonn-candidates)",
    )
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--skip-training", action="store_true", help="time scoring only")
    parser.add_argument(
        "--window-route", action="store_true", help="also score each Hydra candidate reading every window on its own"
    )
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(message)s", force=True)
    torch.set_num_threads(args.threads)
    candidates = candidate_runs(protocol=args.protocol)
    preprocess = preprocess_preset("default", **PRESETS["bonn"].preprocess)
    min_length = max(config.window_length for _, config in candidates.values())
    series_set = build_series_set(load_data(args.data), preprocess, min_length=min_length, progress=False)
    split = split_for_run(series_set.meta, next(iter(candidates.values()))[0])  # the same fold for every candidate
    results = {}
    for label, (run, config) in candidates.items():
        results[label] = time_scoring(config, series_set, args.repeats)
        results[label]["train_s"] = float("nan") if args.skip_training else time_training(config, series_set, split)
        logger.info(
            "%s: %.0f windows/s (repeats %s), trained in %.1f s",
            label,
            results[label]["windows_per_s"],
            [round(x) for x in results[label]["repeats"]],
            results[label]["train_s"],
        )
    results.update(ensemble_costs(results, protocol=args.protocol))
    if args.window_route:
        for label, (run, config) in candidates.items():
            if config.backbone in ("hydra", "hydra_minirocket"):
                results[f"{label} [each window on its own]"] = {
                    **time_scoring(config, series_set, args.repeats, feature_context="window"),
                    "train_s": float("nan"),
                }
    first = next(iter(results))
    base = results[first]["signal_s_per_s"]
    print(
        f"| candidate | L | stride | training s (fold 1) | windows | windows/s | signal s/s | scoring ratio to {first} |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for label, r in results.items():
        print(
            f"| {label} | {r['L']} | {r['stride']} | {r['train_s']:.1f} | {r['windows']} | {r['windows_per_s']:,.0f} | "
            f"{r['signal_s_per_s']:,.0f} | {r['signal_s_per_s'] / base:.2f} |"
        )
    if not args.skip_training:
        print("\n| whole-segment reference | training + scoring s (fold 1) |\n|---|---:|")
        for name, seconds in time_references(series_set, split).items():
            print(f"| {name} | {seconds:.1f} |")
    print(f"(scoring: median of {args.repeats} repeat(s); {args.threads} threads; training once each)")


if __name__ == "__main__":
    main()

"""Fit the combined scorer's weights on the bundled model's training cohort; score the scoreboard's recordings.

Two weight sets are fitted on the cohort the demo model was trained on (``build_demo_model``:
seed ``TRAIN_SEED``, ``TRAIN_SYNTH``, 12 patients), each with C chosen by leave-one-patient-out
channel AUC (:func:`sss_viewer.biomarkers.combined.fit_combined`):

* ``markers.json``: the ranks of amplitude, line length, spike rate, ripple rate and HFA;
* ``markers_sss.json``: the same plus the rank of the bundled SSS model's channel score.

Both are then read beside the consensus, the bundled model and the floors on the scoreboard's
recordings: pt01 and Bonn D-vs-C (real, when ``--shared`` holds them) and the held-out synthetic
cohort (seed 3, never trained on). Nothing is tuned to the real recordings: the markers, the Cs and
the training cohort are fixed beforehand, and a fit on synthetic data weights what the generator
injects — read the weights as a description of the generator, not of epilepsy.

Usage (≈ 1–2 min on 2 CPU cores)::

    python training/fit_combined.py --out experiments/combined
"""

from __future__ import annotations

import argparse
import json
import logging
import time
from pathlib import Path

import pandas as pd
from build_demo_model import TRAIN_SEED, TRAIN_SYNTH

from sss_viewer.biomarkers import FLOORS, get_scorer
from sss_viewer.biomarkers.combined import COMBINED_MARKERS, DEFAULT_CS, CombinedScorer, fit_combined, save_weights
from sss_viewer.engine.bundle import ModelBundle
from sss_viewer.evaluation.scoreboard import (
    SYNTHETIC_SEED,
    format_table,
    run_scoreboard,
    shared_recordings,
    summarise,
    synthetic_recordings,
)
from sss_viewer.synth.config import SynthConfig
from sss_viewer.synth.run import synthesise_recording

logger = logging.getLogger("fit_combined")

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared" / "data"
BUNDLED_MODEL = ROOT / "sss_viewer" / "data" / "demo" / "model"
WEIGHT_SETS = {"markers": False, "markers_sss": True}
"""Weights file stem → whether the SSS model is a feature."""


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    """Command-line options (``--help`` lists them)."""
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", type=Path, required=True, help="results folder (weights, scoreboard.csv/.md, results.json)")
    p.add_argument("--patients", type=int, default=12, help="synthetic training patients (default 12, the model's)")
    p.add_argument("--seed", type=int, default=TRAIN_SEED, help=f"training cohort seed (default {TRAIN_SEED})")
    p.add_argument("--model", type=Path, default=BUNDLED_MODEL, help="the SSS model directory (default: bundled)")
    p.add_argument("--markers", nargs="+", default=list(COMBINED_MARKERS), help="markers whose ranks are features")
    p.add_argument("--cs", nargs="+", type=float, default=list(DEFAULT_CS), help="inverse penalties tried")
    p.add_argument("--shared", type=Path, default=SHARED, help="shared data folder with pt01 and Bonn")
    p.add_argument("--test-patients", type=int, default=8, help="held-out synthetic patients (default 8)")
    p.add_argument("--overwrite", action="store_true", help="replace weights files already in --out")
    return p.parse_args(argv)


def training_cohort(n_patients: int, seed: int) -> list:
    """The bundled model's training recordings, synthesised in memory.

    Returns
    -------
    recordings : list of Recording, length n_patients
        One run per patient, with ``soz`` labels and ``subject`` set.
    """
    config = SynthConfig(**TRAIN_SYNTH)
    return [synthesise_recording(k, seed=seed, config=config)[0] for k in range(n_patients)]


def fit_weight_sets(args: argparse.Namespace, cohort: list, bundle: ModelBundle) -> dict[str, dict]:
    """Fit and save every weight set of :data:`WEIGHT_SETS` under ``args.out``.

    Returns
    -------
    weights : dict of str to dict
        File stem → the weights :func:`fit_combined` returned.
    """
    out = {}
    description = f"synthetic cohort seed {args.seed}, patients 0–{args.patients - 1}, SynthConfig{TRAIN_SYNTH}"
    for stem, with_model in WEIGHT_SETS.items():
        start = time.perf_counter()
        weights = fit_combined(
            cohort,
            markers=args.markers,
            model=args.model if with_model else None,
            Cs=args.cs,
            description=description,
        )
        save_weights(weights, args.out / f"{stem}.json", overwrite=args.overwrite)
        logger.info("%s: fitted in %.1f s; %s", stem, time.perf_counter() - start, describe_weights(weights))
        out[stem] = weights
    return out


def describe_weights(weights: dict) -> str:
    """The fitted weights and the leave-one-patient-out table in one line."""
    coef = ", ".join(f"{f} {c:+.3f}" for f, c in zip(weights["features"], weights["coefficients"], strict=True))
    rows = [row for row in weights["validation"] if row["mean_auc"] is not None]
    table = "; ".join(f"C={row['C']:g}: {row['mean_auc']:.3f}" for row in rows)
    return f"C = {weights['C']:g}, intercept {weights['intercept']:+.3f}, {coef} (leave-one-patient-out AUC {table})"


def scorers(weights: dict[str, dict], bundle: ModelBundle) -> dict[str, object]:
    """The rows of the scoreboard: the combined scorers, the consensus, the bundled model and the floors."""
    rows = {}
    for stem, w in weights.items():
        rows[f"combined ({stem})"] = CombinedScorer(w, model=bundle if WEIGHT_SETS[stem] else None)
    rows["consensus"] = get_scorer("consensus")
    rows["sss (bundled)"] = bundle
    rows.update({name: get_scorer(name) for name in FLOORS})
    return rows


def main(argv: list[str] | None = None) -> int:
    """Fit, save, score, and write ``scoreboard.csv``, ``scoreboard.md`` and ``results.json`` under ``--out``."""
    args = parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    args.out.mkdir(parents=True, exist_ok=True)
    bundle = ModelBundle.load(args.model)
    cohort = training_cohort(args.patients, args.seed)
    weights = fit_weight_sets(args, cohort, bundle)
    recordings = shared_recordings(args.shared) + synthetic_recordings(args.test_patients, SYNTHETIC_SEED)
    table = run_scoreboard(recordings, scorers(weights, bundle))
    summary = summarise(table)
    table.to_csv(args.out / "scoreboard.csv", index=False)
    (args.out / "scoreboard.md").write_text(format_table(table, summary) + "\n", encoding="utf-8")
    results = {
        "weights": {stem: describe_weights(w) for stem, w in weights.items()},
        "summary": summary.to_dict(orient="records"),
        "auc": pivot(table).to_dict(),
    }
    (args.out / "results.json").write_text(json.dumps(results, indent=2, default=str) + "\n", encoding="utf-8")
    logger.info("channel AUC per recording:\n%s", pivot(table).round(3).to_string())
    logger.info("summary:\n%s", summary.round(3).to_string())
    return 0


def pivot(table: pd.DataFrame) -> pd.DataFrame:
    """Channel AUC with one row per recording and one column per scorer, shape (n_recordings, n_scorers)."""
    return table.pivot(index="recording", columns="scorer", values="auc")


if __name__ == "__main__":
    raise SystemExit(main())

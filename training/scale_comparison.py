"""Compare the preprocessing scales (``PreprocessConfig.scale``: channel, recording, shaft) on the bundled recipe.

The recipe is the demo model's (``training/build_demo_model.py``): ``train_preset("minirocket")``, split by
patient, trained on the same synthetic cohort (seed ``TRAIN_SEED``, ``TRAIN_SYNTH``) once per scale and
window length. Each model is measured on

* its own test split of the training cohort (patient-level, a handful of patients);
* a separate synthetic cohort drawn with another seed (``--test-seed``; every patient unseen): pooled
  channel AUC, median per-patient channel AUC and the heat map's abnormal-vs-normal AUC;
* the real patient pt01 (``--pt01``: 84 ECoG channels, 3 s at 1 kHz, 10 SOZ channels): channel AUC. Its
  3 s give 750 samples at 250 Hz, so only window lengths up to 750 fit; longer ones are reported as
  not fitting.

As context it also reports the ranking by plain amplitude: the AUC of each channel's SD after the
recipe's filtering (no model). On Bonn D vs C every segment is its own one-channel recording, so a
recording's (or shaft's) scale is the channel's own SD and every scale gives the same series: the
script checks that bit for bit on all C and D segments (``--bonn``) instead of training on them.
Nothing here is tuned to pt01: the recipe, the cohorts and the window lengths are fixed beforehand.

Usage (≈ 1–2 min per model on 2 CPU cores)::

    python training/scale_comparison.py --out experiments/scale [--window-lengths 1024 512]
"""

from __future__ import annotations

import argparse
import json
import logging
import time
from pathlib import Path

import numpy as np
import pandas as pd
from build_demo_model import TRAIN_SEED, TRAIN_SYNTH, synth_cohort

from sss_viewer.engine.config import train_preset
from sss_viewer.engine.training import train
from sss_viewer.evaluation.held_out import evaluate_bundle
from sss_viewer.io.bonn import load_bonn
from sss_viewer.io.readers import read_recording
from sss_viewer.metrics import binary_auc
from sss_viewer.preprocessing.config import SCALES, PreprocessConfig, preprocess_preset
from sss_viewer.preprocessing.filters import filter_block
from sss_viewer.synth.config import SynthConfig
from sss_viewer.synth.run import synthesise_recording
from sss_viewer.windows.series_set import build_series_set

logger = logging.getLogger("scale_comparison")

ROOT = Path(__file__).resolve().parents[1]
PT01 = ROOT.parent / "shared" / "data" / "ezfragility-pt01" / "pt01_sz1_ecog_m1s_p2s.npz"
BONN = ROOT.parent / "shared" / "data" / "bonn-epilepsy"
TEST_SEED = 11
"""Seed of the separate synthetic test cohort (not ``TRAIN_SEED``, not the demo recording's 7)."""


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", type=Path, required=True, help="results folder (models, results.json, results.md)")
    p.add_argument("--scales", nargs="+", choices=SCALES, default=list(SCALES), help="scales to compare (default all)")
    p.add_argument(
        "--window-lengths",
        nargs="+",
        type=int,
        default=[1024, 512],
        help="window lengths L in samples at 250 Hz (default 1024, the recipe's, and 512, which fits pt01's 3 s)",
    )
    p.add_argument("--patients", type=int, default=12, help="synthetic training patients (default 12, the demo's)")
    p.add_argument("--train-seed", type=int, default=TRAIN_SEED, help=f"training cohort seed (default {TRAIN_SEED})")
    p.add_argument("--test-patients", type=int, default=12, help="patients of the separate test cohort (default 12)")
    p.add_argument("--test-seed", type=int, default=TEST_SEED, help=f"test cohort seed (default {TEST_SEED})")
    p.add_argument("--pt01", type=Path, default=PT01, help="the pt01 .npz (skipped when missing)")
    p.add_argument(
        "--bonn", type=Path, default=BONN, help="Bonn data folder for the identity check (skipped when missing)"
    )
    return p.parse_args(argv)


def test_cohort(n_patients: int, seed: int) -> tuple[list, pd.DataFrame]:
    """The separate synthetic cohort and its abnormal intervals.

    Returns
    -------
    recordings : list of Recording, length n_patients
    abnormal : DataFrame
        ``subject, run, channel, onset_s, offset_s, kind``, as ``evaluate_bundle`` expects.
    """
    if seed == TRAIN_SEED:
        raise ValueError(f"Invalid test_seed={seed}: it is the training cohort's seed; expected another.")
    config = SynthConfig(**TRAIN_SYNTH)
    recordings, frames = [], []
    for k in range(n_patients):
        recording, abnormal = synthesise_recording(k, 1, seed=seed, config=config)
        recordings.append(recording)
        frames.append(abnormal.assign(subject=recording.subject, run=recording.run))
    return recordings, pd.concat(frames, ignore_index=True)


def amplitude_auc(recordings: list, config: PreprocessConfig) -> dict:
    """Channel AUC of each channel's SD after ``config``'s filters (no normalisation, no model).

    Returns
    -------
    auc : dict
        ``pooled`` (all channels together, amplitudes differing between patients) and ``median_per_patient``.
    """
    sds, labels, per_patient = [], [], []
    for recording in recordings:
        sd = np.array(
            [filter_block(x, recording.sfreq, config, line_freq=recording.line_freq).std() for x in recording.data]
        )
        soz = np.asarray(recording.soz, dtype=int)
        sds.append(sd)
        labels.append(soz)
        per_patient.append(binary_auc(sd, soz))
    return {
        "pooled": float(binary_auc(np.concatenate(sds), np.concatenate(labels))),
        "median_per_patient": float(np.nanmedian(per_patient)),
    }


def bonn_identity(path: Path) -> dict:
    """Whether every scale gives the same series as the channel scale on Bonn C and D (one channel per recording).

    Returns
    -------
    check : dict
        ``segments`` and, per scale, ``identical`` (bit for bit) and ``max_abs_difference``.
    """
    recordings = load_bonn(path, sets=("C", "D"))
    stores = {
        scale: build_series_set(
            recordings, preprocess_preset("default", target_sfreq=None, scale=scale), progress=False
        ).store
        for scale in SCALES
    }
    reference = stores["channel"]
    check: dict = {"segments": len(recordings)}
    for scale, store in stores.items():
        diffs = [np.abs(store.series(i) - reference.series(i)).max() for i in range(reference.n_series)]
        identical = all(np.array_equal(store.series(i), reference.series(i)) for i in range(reference.n_series))
        check[scale] = {"identical": bool(identical), "max_abs_difference": float(max(diffs))}
    return check


def run_variant(
    scale: str, length: int, train_set: list, test_set: list, abnormal: pd.DataFrame, pt01, out: Path
) -> dict:
    """Train the recipe with ``scale`` and window length ``length``; measure it on the three sets.

    Returns
    -------
    row : dict
        ``scale, window_length``, ``train_s``, ``own_test_auc``, ``test_cohort_auc``,
        ``test_cohort_median_patient_auc``, ``test_cohort_heatmap_auc`` and ``pt01_auc`` (None when
        pt01 is shorter than one window or not given).
    """
    overrides = {"window_length": length, "preprocess": {"scale": scale}}
    if length != train_preset("minirocket").window_length:
        overrides["inference_stride"] = max(1, length // 4)  # as sss-viewer train --window-length sets it
    config = train_preset("minirocket", device="cpu", seed=0, split="patient", **overrides)
    t0 = time.perf_counter()
    bundle = train(train_set, config, progress=False)
    train_s = time.perf_counter() - t0
    bundle.save(out / f"L{length}-{scale}" / "model")
    own = evaluate_bundle(bundle, train_set, held_out_only=True, device="cpu", progress=False)
    test = evaluate_bundle(bundle, test_set, held_out_only=False, abnormal=abnormal, device="cpu", progress=False)
    row = {
        "scale": scale,
        "window_length": length,
        "window_s": length / config.preprocess.target_sfreq,
        "train_s": round(train_s, 1),
        "own_test_auc": own["pooled"]["auc"],
        "own_test_patients": sorted(own["per_patient"]),
        "test_cohort_auc": test["pooled"]["auc"],
        "test_cohort_median_patient_auc": float(np.nanmedian(list(test["per_patient"].values()))),
        "test_cohort_heatmap_auc": test.get("heatmap_auc"),
        "pt01_auc": None,
    }
    if pt01 is not None and config.preprocess.output_length(pt01.n_times, pt01.sfreq) >= length:
        row["pt01_auc"] = evaluate_bundle(bundle, [pt01], held_out_only=False, device="cpu", progress=False)["pooled"][
            "auc"
        ]
    logger.info("L=%d scale=%s: %s", length, scale, {k: v for k, v in row.items() if k != "own_test_patients"})
    return row


def markdown(rows: list[dict], context: dict) -> str:
    """The results as a Markdown table and notes."""
    fmt = lambda v: "—" if v is None or (isinstance(v, float) and not np.isfinite(v)) else f"{v:.3f}"  # noqa: E731
    lines = [
        "| L (s) | scale | own test AUC | test cohort AUC (pooled) | test cohort AUC (median patient) | heat-map AUC | pt01 AUC | train s |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r['window_length']} ({r['window_s']:.2f}) | {r['scale']} | {fmt(r['own_test_auc'])} | {fmt(r['test_cohort_auc'])} "
            f"| {fmt(r['test_cohort_median_patient_auc'])} | {fmt(r['test_cohort_heatmap_auc'])} | {fmt(r['pt01_auc'])} | {r['train_s']} |"
        )
    lines += ["", "Plain amplitude (SD after the recipe's filters, no model):", ""]
    for name, auc in context["amplitude_auc"].items():
        lines.append(f"- {name}: " + ", ".join(f"{k} {fmt(v)}" for k, v in auc.items()))
    if "bonn_identity" in context:
        lines += ["", f"Bonn C+D identity check: {json.dumps(context['bonn_identity'])}"]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    args.out.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    train_set = synth_cohort(args.patients, args.train_seed)
    test_set, abnormal = test_cohort(args.test_patients, args.test_seed)
    pt01 = read_recording(args.pt01) if args.pt01.is_file() else None
    if pt01 is None:
        logger.warning("%s not found: pt01 is skipped", args.pt01)
    logger.info("cohorts ready in %.1f s", time.perf_counter() - t0)
    filters = train_preset("minirocket").preprocess
    context: dict = {
        "train_seed": args.train_seed,
        "patients": args.patients,
        "test_seed": args.test_seed,
        "test_patients": args.test_patients,
        "synth_config": TRAIN_SYNTH,
        "amplitude_auc": {
            "synthetic test cohort": amplitude_auc(test_set, filters),
            **({"pt01": amplitude_auc([pt01], filters)} if pt01 is not None else {}),
        },
    }
    if (args.bonn / "bonn_sets_ABCDE_int16.npz").is_file():
        context["bonn_identity"] = bonn_identity(args.bonn)
        logger.info("Bonn identity check: %s", context["bonn_identity"])
    rows = []
    for length in args.window_lengths:
        for scale in args.scales:
            rows.append(run_variant(scale, length, train_set, test_set, abnormal, pt01, args.out))
            (args.out / "results.json").write_text(json.dumps({"context": context, "rows": rows}, indent=1))
    (args.out / "results.md").write_text(markdown(rows, context))
    logger.info("results in %s after %.1f s:\n%s", args.out, time.perf_counter() - t0, markdown(rows, context))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

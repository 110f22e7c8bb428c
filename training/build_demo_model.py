"""Train the small demo model bundled with the viewer, and precompute its scores of the demo recording.

The model is trained with the project's own training code (``sss_viewer.engine.training.train``, split by
patient) with the ``minirocket`` preset — the recipe that works on real intracranial EEG (Bonn D
vs C, ``docs/results.md`` §2), so what the viewer shows comes from the recipe that held up on
real data; ``--preset default`` builds the PatchTST model instead — on a synthetic cohort drawn
with seed ``TRAIN_SEED``, which
differs from the demo recording's seed (``sss_viewer.viewer.demo.DEMO_SEED``): the demo patient
is not in its training, validation or test data. It is saved with ``ModelBundle.save`` into
``sss_viewer/data/demo/model/`` (``model.safetensors`` + ``config.json``), and the demo recording's
window and channel scores go to ``sss_viewer/data/demo/scores/`` so the viewer's demo starts
without scoring. Usage (59 s on 2 CPU cores since issue 15 — it was 6 min 18 s with the per-window
features; ``--preset default`` ≈ 3–5 min)::

    python training/build_demo_model.py [--preset minirocket] [--patients 12] [--out sss_viewer/data/demo]
"""

from __future__ import annotations

import argparse
import logging
import shutil
import tempfile
import time
from pathlib import Path

import numpy as np

from sss_viewer.engine.bundle import ModelBundle
from sss_viewer.engine.config import TRAIN_PRESETS, train_preset
from sss_viewer.engine.inference import fine_heat_stride, score_recording
from sss_viewer.engine.training import train
from sss_viewer.metrics import binary_auc
from sss_viewer.synth.config import SynthConfig
from sss_viewer.synth.run import synthesise_recording
from sss_viewer.viewer.demo import (
    DEMO_DESCRIPTION,
    DEMO_PATIENT_INDEX,
    DEMO_SEED,
    demo_scores_key,
    load_demo,
    save_scores,
)

logger = logging.getLogger("build_demo_model")

TRAIN_SEED = 1
"""Seed of the training cohort; must differ from ``DEMO_SEED``."""
TRAIN_SYNTH = {"duration_scale": 0.3, "max_channels": 40}
"""``SynthConfig`` overrides of the training cohort (runs of ≈ 40–300 s, at most 40 contacts)."""
DEFAULT_OUT = Path(__file__).resolve().parents[1] / "sss_viewer" / "data" / "demo"


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--patients", type=int, default=12, help="synthetic training patients (default 12)")
    p.add_argument(
        "--preset",
        default="minirocket",
        choices=TRAIN_PRESETS,
        help="training preset (default minirocket: the real-data recipe; default: PatchTST)",
    )
    p.add_argument(
        "--calibrator",
        choices=("isotonic", "venn-abers", "none"),
        default=None,
        help="calibrator (default: the preset's; venn-abers gives each channel score an interval)",
    )
    p.add_argument("--epochs", type=int, default=0, help="training epochs (default 0: the preset's)")
    p.add_argument("--train-stride", type=int, default=256, help="training window stride in samples (default 256)")
    p.add_argument("--seed", type=int, default=TRAIN_SEED, help=f"cohort seed (default {TRAIN_SEED}; not {DEMO_SEED})")
    p.add_argument("--out", type=Path, default=DEFAULT_OUT, help="writes OUT/model/ and OUT/scores/")
    p.add_argument(
        "--scores-only",
        action="store_true",
        help="keep OUT/model/ and only re-score the demo recording (after a change to preprocessing or scoring)",
    )
    return p.parse_args(argv)


def synth_cohort(n_patients: int, seed: int) -> list:
    """The training recordings, in memory (the same signals ``sss-viewer synth`` would write)."""
    if seed == DEMO_SEED:
        raise ValueError(f"--seed {seed} is the demo recording's seed; the demo patient must not be trained on.")
    config = SynthConfig(**TRAIN_SYNTH)
    return [synthesise_recording(k, 1, seed=seed, config=config)[0] for k in range(n_patients)]


def channel_metrics(bundle: ModelBundle, recordings: list) -> dict:
    """Pooled channel AUC and Brier score of ``bundle`` over ``recordings``, and its channel intervals' widths.

    Returns
    -------
    metrics : dict
        ``auc``, ``brier`` (of the channel scores against the channels' labels), ``mean_interval``
        and ``median_interval`` (``upper - lower`` of the channel scores; 0 without Venn–Abers).
    """
    scores, labels, widths = [], [], []
    for recording in recordings:
        table = score_recording(bundle, recording, device="cpu", progress=False).channels
        soz = dict(zip(recording.ch_names, recording.soz, strict=True))
        scores += table["score"].tolist()
        labels += [int(soz[c]) for c in table["channel"]]
        widths += (table["upper"] - table["lower"]).tolist()
    scores_np, labels_np = np.asarray(scores), np.asarray(labels)
    return {
        "auc": float(binary_auc(scores_np, labels_np)),
        "brier": float(np.mean((scores_np - labels_np) ** 2)),
        "mean_interval": float(np.mean(widths)),
        "median_interval": float(np.median(widths)),
    }


def write_demo_scores(model_dir: Path, out: Path, cache: str) -> None:
    """Score the demo recording with the saved model at the fine heat-map stride into ``out``."""
    t0 = time.perf_counter()
    saved = ModelBundle.load(model_dir)
    scores = score_recording(saved, load_demo(cache), device="cpu", progress=False, heat_stride=fine_heat_stride(saved))
    save_scores(scores, out, demo_scores_key(model_dir, cache))
    logger.info("demo scores written to %s in %.1f s", out, time.perf_counter() - t0)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    if args.scores_only:
        with tempfile.TemporaryDirectory() as cache:
            write_demo_scores(args.out / "model", args.out / "scores", cache)
        return 0
    started = time.perf_counter()
    recordings = synth_cohort(args.patients, args.seed)
    logger.info("synthesised %d patients in %.1f s", len(recordings), time.perf_counter() - started)
    overrides = {
        k: v
        for k, v in (("epochs", args.epochs), ("train_stride", args.train_stride), ("calibrator", args.calibrator))
        if v
    }
    config = train_preset(args.preset, device="cpu", seed=0, split="patient", **overrides)
    t0 = time.perf_counter()
    bundle = train(recordings, config, progress=False)
    train_seconds = time.perf_counter() - t0
    test = set(bundle.info["split"]["test"])
    test_metrics = channel_metrics(bundle, [r for r in recordings if r.subject in test])
    with tempfile.TemporaryDirectory() as cache:
        demo = load_demo(cache)
        demo_metrics = channel_metrics(bundle, [demo])
        bundle.info["description"] = DEMO_DESCRIPTION
        bundle.info["training_preset"] = args.preset
        bundle.info["training_data"] = {
            "generator": "sss_viewer.synth.run.synthesise_recording",
            "seed": args.seed,
            "patients": args.patients,
            "synth_config": TRAIN_SYNTH,
            "demo_recording": {"seed": DEMO_SEED, "patient_index": DEMO_PATIENT_INDEX, "in_training_data": False},
        }
        bundle.info["demo_metrics"] = {
            "held_out_test_channel_auc": test_metrics["auc"],
            "demo_recording_channel_auc": demo_metrics["auc"],
            "held_out_test": test_metrics,
            "demo_recording": demo_metrics,
        }
        model_dir = args.out / "model"
        if model_dir.exists():
            shutil.rmtree(model_dir)
        bundle.save(model_dir)
        for path in model_dir.iterdir():
            path.chmod(0o644)  # atomic_write's temporary files are private; these are package data
        size = sum(p.stat().st_size for p in model_dir.iterdir())
        logger.info("saved %s (%.2f MB) after %.1f s of training", model_dir, size / 1e6, train_seconds)
        write_demo_scores(model_dir, args.out / "scores", cache)
    for name, m in (("held-out test", test_metrics), ("demo recording", demo_metrics)):
        logger.info(
            "%s channels: AUC %.3f, Brier %.4f, interval width mean %.4f / median %.4f",
            name,
            m["auc"],
            m["brier"],
            m["mean_interval"],
            m["median_interval"],
        )
    logger.info("calibrator %s; total %.1f s", config.calibrator, time.perf_counter() - started)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

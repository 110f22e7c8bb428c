"""GPU check: train the ``default`` and ``minirocket`` presets on CUDA and compare CPU vs GPU scoring.

Run by ``benchmarks/gpu_check.sh`` on a machine with a CUDA device (the project never needs one).
Prints, for each model, the training wall time on CUDA, and for the bundled demo model and the
two freshly trained models the CPU-vs-GPU agreement of window probabilities (max abs difference of
``p_raw`` and ``p_cal``, goal ≤ 1e-4) and the scoring throughput (windows/s) on both devices,
measured in the same run on the same recording.

    python benchmarks/gpu_check.py [--channels 100] [--minutes 5] [--patients 6] [--repeats 3]
"""

from __future__ import annotations

import argparse
import logging
import statistics
import time
from pathlib import Path

import numpy as np
import torch

from sss_viewer.engine.bundle import ModelBundle
from sss_viewer.engine.config import train_preset
from sss_viewer.engine.inference import score_recording
from sss_viewer.engine.training import train
from sss_viewer.io.recording import Recording
from sss_viewer.synth.config import SynthConfig
from sss_viewer.synth.run import synthesise_recording

DEMO_MODEL = Path(__file__).resolve().parents[1] / "sss_viewer" / "data" / "demo" / "model"
AGREEMENT_GOAL = 1e-4

logger = logging.getLogger("gpu_check")


def latency_recording(n_channels: int, minutes: float, sfreq: float = 1000.0) -> Recording:
    """The score-latency benchmark's recording: ``n_channels`` × ``minutes`` of white noise (50 µV)."""
    rng = np.random.default_rng(0)
    n_times = int(minutes * 60 * sfreq)
    data = (rng.standard_normal((n_channels, n_times), dtype=np.float32) * 50).astype(np.float32)
    return Recording(data, sfreq, [f"C{i}" for i in range(n_channels)], ["seeg"] * n_channels, line_freq=60.0)


def small_cohort(n_patients: int) -> list[Recording]:
    """A small synthetic multi-centre cohort in memory (short runs, ≤ 24 channels)."""
    config = SynthConfig(duration_scale=0.25, max_channels=24)
    return [synthesise_recording(p, 1, seed=0, config=config)[0] for p in range(n_patients)]


def timed_scores(bundle: ModelBundle, recording: Recording, device: str, repeats: int):
    """Median wall time of ``score_recording`` on ``device`` and the last result (one warm-up on CUDA)."""
    if device == "cuda":
        score_recording(bundle, recording, device=device, progress=False)
        torch.cuda.synchronize()
    times, result = [], None
    for _ in range(repeats):
        t0 = time.perf_counter()
        result = score_recording(bundle, recording, device=device, progress=False)
        if device == "cuda":
            torch.cuda.synchronize()
        times.append(time.perf_counter() - t0)
    return statistics.median(times), result


def compare(name: str, bundle: ModelBundle, recording: Recording, repeats: int) -> bool:
    """Print CPU vs GPU agreement and windows/s for one model; True when within the goal."""
    cpu_s, cpu = timed_scores(bundle, recording, "cpu", max(1, repeats - 2))
    gpu_s, gpu = timed_scores(bundle, recording, "cuda", repeats)
    n = len(cpu.windows)
    raw = float(np.max(np.abs(cpu.windows["p_raw"].to_numpy() - gpu.windows["p_raw"].to_numpy())))
    cal_gap = np.abs(cpu.windows["p_cal"].to_numpy() - gpu.windows["p_cal"].to_numpy())
    # the calibrators are step functions of p_raw: a 1e-6 change of p_raw on a step's edge moves p_cal by the
    # step. The goal is on p_raw; p_cal must be the CPU calibrator's value at the GPU's p_raw (nothing else differs)
    recalibrated = bundle.calibrator.transform(gpu.windows["p_raw"].to_numpy())[0]
    same_map = bool(np.allclose(recalibrated, gpu.windows["p_cal"].to_numpy(), rtol=0, atol=1e-12))
    ok = raw <= AGREEMENT_GOAL and same_map
    print(
        f"{name}: {n} windows | CPU {cpu_s:.2f} s ({n / cpu_s:,.0f} windows/s) | GPU {gpu_s:.2f} s "
        f"({n / gpu_s:,.0f} windows/s, {cpu_s / gpu_s:.1f}x) | max |p_raw cpu-gpu| {raw:.2e} "
        f"(goal <= {AGREEMENT_GOAL:g}: {'ok' if raw <= AGREEMENT_GOAL else 'FAIL'}) | p_cal: "
        f"{int((cal_gap > AGREEMENT_GOAL).sum())} windows differ by > {AGREEMENT_GOAL:g} (max {cal_gap.max():.2e}), "
        f"{'each the calibrator at the GPU p_raw (steps)' if same_map else 'NOT the calibrator at the GPU p_raw: FAIL'}",
        flush=True,
    )
    return ok


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--channels", type=int, default=100)
    parser.add_argument("--minutes", type=float, default=5.0)
    parser.add_argument("--patients", type=int, default=6)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--out", type=Path, default=Path("/tmp/sss-gpu-check"))
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)
    if not torch.cuda.is_available():
        print("no CUDA device: nothing to check")
        return 1
    print(
        f"torch {torch.__version__}, {torch.cuda.get_device_name(0)}, CPU threads {torch.get_num_threads()}", flush=True
    )
    recording = latency_recording(args.channels, args.minutes)
    print(f"latency recording: {args.channels} ch x {args.minutes:g} min at 1 kHz", flush=True)
    ok = compare("bundled demo model (minirocket recipe)", ModelBundle.load(DEMO_MODEL), recording, args.repeats)

    cohort = small_cohort(args.patients)
    print(
        f"training cohort: {len(cohort)} synthetic patients, {sum(r.n_channels for r in cohort)} channels", flush=True
    )
    for preset in ("default", "minirocket"):
        t0 = time.perf_counter()
        bundle = train(cohort, train_preset(preset, device="cuda", seed=0), progress=False)
        train_s = time.perf_counter() - t0
        print(
            f"train --preset {preset} on cuda: {train_s:.1f} s; validation threshold {bundle.threshold:.3f}", flush=True
        )
        out = args.out / preset
        bundle.save(out)
        reloaded = ModelBundle.load(out)
        ok &= compare(f"trained {preset} (reloaded)", reloaded, recording, args.repeats)
    print("GPU CHECK " + ("PASSED" if ok else "FAILED"), flush=True)
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())

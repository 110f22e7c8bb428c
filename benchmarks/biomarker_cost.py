"""Cost of each training-free scorer on 100 channels × 5 min at 1 kHz (target ≤ 5 s each on 2 cores).

Every training-free scorer of ``sss_viewer.biomarkers`` (not the fitted ``combined``; artifact detection included, as a user runs it) and, as the
baseline measured in the same run, the bundled SSS model (the MiniRocket recipe) on the same
recording: the median wall time over repeats, and each scorer's ratio to the SSS recipe.

    .venv/bin/python benchmarks/biomarker_cost.py [--channels 100] [--minutes 5] [--sfreq 1000] [--repeats 3]
        [--scorers line_length,spike_rate]

The recording is pink-ish noise with spikes and ripple bursts on a tenth of the channels, a seizure
onset marker at one minute (so the Epileptogenicity Index runs), and 60 Hz mains on every channel.
"""

from __future__ import annotations

import argparse
import logging
import statistics
import time
from importlib import resources
from pathlib import Path

import numpy as np

from sss_viewer.biomarkers import FITTED, SCORERS, get_scorer
from sss_viewer.engine.bundle import ModelBundle
from sss_viewer.engine.inference import score_recording
from sss_viewer.io.recording import Event, Recording

logger = logging.getLogger("biomarker_cost")


def benchmark_recording(n_channels: int, minutes: float, sfreq: float, seed: int = 0) -> Recording:
    """A labelled recording with spikes and ripples on the first tenth of the channels, float32 µV."""
    rng = np.random.default_rng(seed)
    n = int(minutes * 60 * sfreq)
    data = np.empty((n_channels, n), dtype=np.float32)
    t = np.arange(n) / sfreq
    mains = (3.0 * np.sin(2 * np.pi * 60.0 * t)).astype(np.float32)
    for ch in range(n_channels):
        x = np.cumsum(rng.standard_normal(n)).astype(np.float32)
        x -= np.convolve(x, np.ones(501, dtype=np.float32) / 501, mode="same")
        data[ch] = x * 8.0 + mains
    soz = np.zeros(n_channels, dtype=bool)
    soz[: max(1, n_channels // 10)] = True
    spike = (-np.hanning(int(0.06 * sfreq)) * 300).astype(np.float32)
    burst_t = np.arange(int(0.04 * sfreq)) / sfreq
    ripple = (np.hanning(len(burst_t)) * 40 * np.sin(2 * np.pi * 120 * burst_t)).astype(np.float32)
    for ch in np.flatnonzero(soz):
        for start in rng.integers(0, n - len(spike), size=int(minutes * 20)):
            data[ch, start : start + len(spike)] += spike
        for start in rng.integers(0, n - len(ripple), size=int(minutes * 10)):
            data[ch, start : start + len(ripple)] += ripple
    return Recording(
        data=data,
        sfreq=sfreq,
        ch_names=[f"C{i + 1}" for i in range(n_channels)],
        ch_types=["seeg"] * n_channels,
        soz=soz,
        events=[Event(60.0, 0.0, "sz onset")],
        line_freq=60.0,
    )


def median_seconds(run, repeats: int) -> tuple[float, list[float]]:
    """Median wall time of ``run()`` over ``repeats`` calls, and every time."""
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return statistics.median(times), times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--channels", type=int, default=100)
    parser.add_argument("--minutes", type=float, default=5.0)
    parser.add_argument("--sfreq", type=float, default=1000.0)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--scorers", help="comma-separated names (default: all)")
    parser.add_argument("--model", type=Path, help="SSS model directory (default: the bundled model)")
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    logging.getLogger("sss_viewer").setLevel(logging.WARNING)

    recording = benchmark_recording(args.channels, args.minutes, args.sfreq)
    logger.info("recording: %d channels × %.1f min at %g Hz", args.channels, args.minutes, args.sfreq)
    model_dir = args.model or Path(str(resources.files("sss_viewer").joinpath("data", "demo", "model")))
    bundle = ModelBundle.load(model_dir)
    sss_s, sss_all = median_seconds(lambda: score_recording(bundle, recording, progress=False), args.repeats)
    logger.info("%-18s %7.2f s (median of %s)  baseline", "sss (recipe)", sss_s, ", ".join(f"{t:.2f}" for t in sss_all))
    names = args.scorers.split(",") if args.scorers else [n for n in SCORERS if n not in FITTED]
    for name in names:
        scorer = get_scorer(name)
        seconds, every = median_seconds(lambda s=scorer: s.score(recording), args.repeats)
        verdict = "ok" if seconds <= 5.0 else "OVER 5 s"
        logger.info(
            "%-18s %7.2f s (median of %s)  %.2fx the SSS recipe  %s",
            name,
            seconds,
            ", ".join(f"{t:.2f}" for t in every),
            seconds / sss_s,
            verdict,
        )


if __name__ == "__main__":
    main()

"""Scoring throughput (windows/s) of the MiniRocket local model against the default PatchTST, L = 1024.

What it costs a clinician to score a recording with the real-data recipe (``--preset minirocket``,
9,996 MiniRocket features per window) rather than the ``default`` preset's PatchTST, measured in
the same run on the same random windows, eval mode, ``torch.inference_mode()``. Each figure is the
median of ``--repeats`` timed passes over ``--windows`` windows in batches of 256; the ratio is
MiniRocket's windows/s over PatchTST's. It also prints what one hour of a 100-channel recording
at 250 Hz and stride 256 (≈ 351,000 windows) would take at that rate.

    .venv/bin/python benchmarks/minirocket_scoring.py [--windows 1024] [--repeats 3] [--threads 2]
"""

from __future__ import annotations

import argparse
import logging
import statistics
import time

import torch

from sss_viewer.models import build_window_model

logger = logging.getLogger("minirocket_scoring")

HOUR_WINDOWS = 100 * (3600 * 250 - 1024) // 256 + 100
"""Windows of a 1-h, 100-channel recording at 250 Hz, L = 1024, stride 256."""


def windows_per_second(model: torch.nn.Module, x: torch.Tensor, repeats: int) -> float:
    """Median windows/s of ``model`` over ``x`` (N, L) in batches of 256."""
    model.eval()
    times = []
    with torch.inference_mode():
        model(x[:64])  # warm-up
        for _ in range(repeats):
            t0 = time.perf_counter()
            for lo in range(0, len(x), 256):
                model(x[lo : lo + 256])
            times.append(time.perf_counter() - t0)
    return len(x) / statistics.median(times)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--windows", type=int, default=1024)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--threads", type=int, default=2)
    args = p.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    torch.set_num_threads(args.threads)
    x = torch.randn(args.windows, 1024, generator=torch.Generator().manual_seed(0))
    from sss_viewer.training import train_preset

    default = train_preset("default")
    baseline = windows_per_second(build_window_model("patchtst", 1024, **default.model_params), x, args.repeats)
    logger.info("PatchTST (default preset): %.0f windows/s; 1 h x 100 channels in %.1f min", baseline, HOUR_WINDOWS / baseline / 60)
    for n_features in (9996, 2520):
        model = build_window_model("minirocket", 1024, num_features=n_features, revin=False)
        model.initialise_from_data(x[:512])
        rate = windows_per_second(model, x, args.repeats)
        logger.info(
            "MiniRocket %d features: %.0f windows/s (%.3f x PatchTST); 1 h x 100 channels in %.1f min",
            n_features, rate, rate / baseline, HOUR_WINDOWS / rate / 60,
        )  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

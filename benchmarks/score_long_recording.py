"""Score one hour of 128 channels at 1 kHz from a file: wall time and peak memory (goal ≤ 60 s, ≤ 2 GB on 2 cores).

The recording is a BrainVision file of random noise (written once, by a child process, to
``--file``; reused afterwards) read the way the viewer reads a clinic's file: lazily, block by block
(``read_recording(preload=False)``). Scoring runs in a fresh child process so that its peak
resident memory (``ru_maxrss``) is its own: reading, preprocessing to the model's rate, the window
logits and the window table. Baseline in the same run: the per-window path (the same weights with
``feature_context="window"``, each window convolved on its own) timed on ``--baseline-channels``
channels of the same file and scaled to all channels (it is linear in the channels; a full run of
it takes about half an hour).

    .venv/bin/python benchmarks/score_long_recording.py [--channels 128] [--minutes 60] [--model DIR]
        [--file benchmarks/.cache/long.vhdr] [--baseline-channels 4] [--skip-per-window]
"""

from __future__ import annotations

import argparse
import copy
import multiprocessing as mp
import resource
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
DEFAULT_MODEL = HERE.parent / "sss_viewer" / "data" / "demo" / "model"


def write_recording(path: Path, channels: int, minutes: float, sfreq: float) -> None:
    """A BrainVision file of ``channels`` sEEG channels of noise (µV), written channel block by block."""
    import pybv

    rng = np.random.default_rng(0)
    n_times = int(minutes * 60 * sfreq)
    data = np.empty((channels, n_times), dtype=np.float64)
    for i in range(channels):
        data[i] = rng.standard_normal(n_times) * 50e-6  # volts, as MNE hands data to pybv
    path.parent.mkdir(parents=True, exist_ok=True)
    pybv.write_brainvision(
        data=data,
        sfreq=sfreq,
        ch_names=[f"A{i + 1}" for i in range(channels)],
        fname_base=path.stem,
        folder_out=str(path.parent),
        fmt="binary_float32",
        unit="µV",
        overwrite=True,
    )


def score_child(path: str, model: str, queue) -> None:
    """Read, preprocess and score the file; put (seconds, windows, peak RSS bytes) on ``queue``."""
    from sss_viewer.engine.bundle import ModelBundle
    from sss_viewer.engine.inference import score_recording
    from sss_viewer.io.readers import read_recording

    bundle = ModelBundle.load(model)
    t0 = time.perf_counter()
    recording = read_recording(path, preload=False)
    result = score_recording(bundle, recording, device="cpu", progress=False)
    seconds = time.perf_counter() - t0
    queue.put((seconds, len(result.windows), resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024))


def per_window_child(path: str, model: str, channels: int, queue) -> None:
    """The per-window path on the first ``channels`` channels: (seconds, windows)."""
    from sss_viewer.engine.bundle import ModelBundle
    from sss_viewer.engine.inference import score_recording
    from sss_viewer.io.readers import read_recording
    from sss_viewer.models import model_from_config

    bundle = ModelBundle.load(model)
    old = model_from_config({**bundle.model.get_config(), "feature_context": "window"})
    old.load_state_dict(copy.deepcopy(bundle.model.state_dict()))
    bundle.model = old.eval()
    recording = read_recording(path, preload=False).pick(list(range(channels)))
    t0 = time.perf_counter()
    result = score_recording(bundle, recording, device="cpu", progress=False)
    queue.put((time.perf_counter() - t0, len(result.windows)))


def _in_child(target, *args):
    ctx = mp.get_context("spawn")
    queue = ctx.Queue()
    proc = ctx.Process(target=target, args=(*args, queue))
    proc.start()
    out = queue.get()
    proc.join()
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--channels", type=int, default=128)
    p.add_argument("--minutes", type=float, default=60.0)
    p.add_argument("--sfreq", type=float, default=1000.0)
    p.add_argument("--model", default=str(DEFAULT_MODEL))
    p.add_argument(
        "--file",
        type=Path,
        help="BrainVision header to (re)use (default benchmarks/.cache/long-<channels>ch-<minutes>min.vhdr)",
    )
    p.add_argument("--repeats", type=int, default=1)
    p.add_argument("--baseline-channels", type=int, default=4)
    p.add_argument("--skip-per-window", action="store_true")
    args = p.parse_args(argv)
    path = args.file or HERE / ".cache" / f"long-{args.channels}ch-{args.minutes:g}min.vhdr"
    if not path.exists():
        t0 = time.perf_counter()
        ctx = mp.get_context("spawn")
        proc = ctx.Process(target=write_recording, args=(path, args.channels, args.minutes, args.sfreq))
        proc.start()
        proc.join()
        print(f"wrote {path} in {time.perf_counter() - t0:.0f} s")
    runs = [_in_child(score_child, str(path), args.model) for _ in range(args.repeats)]
    seconds = float(np.median([r[0] for r in runs]))
    windows, peak = runs[0][1], max(r[2] for r in runs)
    print(
        f"recording: {args.channels} channels x {args.minutes:g} min at {args.sfreq:g} Hz, read lazily from {path.name}"
    )
    print(
        f"evidence series: {seconds:.1f} s (median of {len(runs)}), {windows} windows, peak RSS {peak / 2**30:.2f} GB; "
        f"goals 60 s and 2 GB: ratios {seconds / 60:.2f} and {peak / 2**31:.2f}"
    )
    if not args.skip_per_window:
        old_s, old_windows = _in_child(per_window_child, str(path), args.model, args.baseline_channels)
        scaled = old_s * args.channels / args.baseline_channels
        print(
            f"per-window path on {args.baseline_channels} channels: {old_s:.1f} s ({old_windows / old_s:.0f} windows/s), "
            f"scaled to {args.channels} channels {scaled / 60:.1f} min; evidence series {scaled / seconds:.0f}x faster"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""Peak anonymous memory while training SSS on a cohort larger than RAM budgets allow.

Builds a cohort of BrainVision float32 recordings totalling ``--size-gb`` (default 8.5 GB, written
block by block), then runs ``sss-viewer train`` on it in a child process with the on-disk
preprocessed-series cache (the cache holds another ≈ 8 GB of float32, memory-mapped), sampling
the child's ``RssAnon`` from ``/proc`` every 50 ms. ``RssAnon`` is the memory the process owns;
``VmRSS`` also counts the page cache of memory-mapped files, which the kernel reclaims at will.

Prints the cohort size, the cache size, peak ``RssAnon`` and peak ``VmRSS``, and the ratio of peak
``RssAnon`` to the float32 bytes of the cohort — the baseline of loading the cohort into memory,
as the paper's pickles did (its authors needed 250 GB of RAM). Target: peak ``RssAnon`` ≤ 2 GB.

Run: ``.venv/bin/python benchmarks/memory_bounded_training.py --work /tmp/sss-membench``
(≈ 10–15 min on 2 cores, ≈ 17 GB of disk; ``--keep`` keeps the files for a rerun).
"""

from __future__ import annotations

import argparse
import logging
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np

logger = logging.getLogger("memory_bounded_training")

SFREQ = 250.0
N_CHANNELS = 128
SOZ_EVERY = 6  # one channel in six is SOZ, as in ds003029


def _write_vhdr(folder: Path, stem: str, names: list[str]) -> None:
    """BrainVision header and marker file for multiplexed float32 µV data."""
    channels = "\n".join(f"Ch{i + 1}={name},,1,µV" for i, name in enumerate(names))
    (folder / f"{stem}.vhdr").write_text(
        "Brain Vision Data Exchange Header File Version 1.0\n\n[Common Infos]\nCodepage=UTF-8\n"
        f"DataFile={stem}.eeg\nMarkerFile={stem}.vmrk\nDataFormat=BINARY\nDataOrientation=MULTIPLEXED\n"
        f"NumberOfChannels={len(names)}\nSamplingInterval={1e6 / SFREQ:g}\n\n[Binary Infos]\n"
        f"BinaryFormat=IEEE_FLOAT_32\n\n[Channel Infos]\n{channels}\n",
        encoding="utf-8",
    )
    (folder / f"{stem}.vmrk").write_text(
        "Brain Vision Data Exchange Marker File, Version 1.0\n\n[Common Infos]\nCodepage=UTF-8\n"
        f"DataFile={stem}.eeg\n\n[Marker Infos]\nMk1=New Segment,,1,1,0\n",
        encoding="utf-8",
    )


def build_cohort(root: Path, size_gb: float, seed: int = 0) -> int:
    """Write ``cohort.tsv``, ``labels.tsv`` and BrainVision runs totalling ``size_gb``; return bytes of signal."""
    n_subjects = 16
    n_times = int(size_gb * 1e9 / 4 / N_CHANNELS / n_subjects) + 1
    names = [f"{shaft}{k}" for shaft in "ABCDEFGH" for k in range(1, N_CHANNELS // 8 + 1)]
    soz = np.arange(N_CHANNELS) % SOZ_EVERY == 0
    spike = (np.hanning(12) * 150).astype(np.float32)
    rng = np.random.default_rng(seed)
    root.mkdir(parents=True, exist_ok=True)
    cohort_rows, label_rows = ["subject\tcentre\trun\tpath"], ["subject\tchannel\tsoz"]
    block = 250_000
    for s in range(n_subjects):
        subject = f"mem{s:02d}"
        stem = f"sub-{subject}_run-01_ieeg"
        _write_vhdr(root, stem, names)
        with (root / f"{stem}.eeg").open("wb") as f:
            for start in range(0, n_times, block):
                n = min(block, n_times - start)
                x = rng.standard_normal((n, N_CHANNELS), dtype=np.float32) * 20
                for ch in np.flatnonzero(soz):
                    for t in rng.integers(0, n - len(spike), size=max(1, n // 500)):
                        x[t : t + len(spike), ch] += spike
                f.write(x.tobytes())
        cohort_rows.append(f"{subject}\t{'ABCD'[s % 4]}\t01\t{stem}.vhdr")
        label_rows.extend(f"{subject}\t{name}\t{int(flag)}" for name, flag in zip(names, soz))
        logger.info("wrote %s (%d of %d)", stem, s + 1, n_subjects)
    (root / "cohort.tsv").write_text("\n".join(cohort_rows) + "\n", encoding="utf-8")
    (root / "labels.tsv").write_text("\n".join(label_rows) + "\n", encoding="utf-8")
    return n_subjects * n_times * N_CHANNELS * 4


def _status_kib(pid: int, field: str) -> int | None:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith(field + ":"):
                return int(line.split()[1])
    except OSError:
        return None
    return None


def run_monitored(cmd: list[str]) -> tuple[int, float, float, float]:
    """Run ``cmd``; return (exit code, peak RssAnon MB, peak VmRSS MB, seconds)."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd)
    peaks = {"RssAnon": 0, "VmRSS": 0}

    def sample() -> None:
        while proc.poll() is None:
            for field in peaks:
                value = _status_kib(proc.pid, field)
                if value is not None:
                    peaks[field] = max(peaks[field], value)
            time.sleep(0.05)

    thread = threading.Thread(target=sample, daemon=True)
    thread.start()
    code = proc.wait()
    thread.join()
    return code, peaks["RssAnon"] / 1024, peaks["VmRSS"] / 1024, time.perf_counter() - t0


def _du(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--work", type=Path, default=Path("/tmp/sss-membench"))
    parser.add_argument("--size-gb", type=float, default=8.5)
    parser.add_argument("--windows-per-epoch", type=int, default=20_000)
    parser.add_argument("--keep", action="store_true", help="keep the cohort and cache for a rerun")
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    cohort, cache, model = args.work / "cohort", args.work / "cache", args.work / "model"
    if (cohort / "labels.tsv").is_file():
        signal_bytes = sum(p.stat().st_size for p in cohort.glob("*.eeg"))
        logger.info("reusing the cohort in %s", cohort)
    else:
        t0 = time.perf_counter()
        signal_bytes = build_cohort(cohort, args.size_gb)
        logger.info("built the cohort in %.0f s", time.perf_counter() - t0)
    shutil.rmtree(model, ignore_errors=True)
    cmd = [
        sys.executable,
        "-m",
        "sss_viewer.cli",
        "train",
        str(cohort),
        "--out",
        str(model),
        "--cache-dir",
        str(cache),
        "--epochs",
        "1",
        "--windows-per-epoch",
        str(args.windows_per_epoch),
        "--device",
        "cpu",
        "-q",
    ]
    code, anon_mb, rss_mb, seconds = run_monitored(cmd)
    if code != 0:
        logger.error("training failed with exit code %d", code)
        return code
    cache_bytes = _du(cache)
    print(
        f"cohort on disk: {signal_bytes / 1e9:.2f} GB float32 ({signal_bytes / 4 / 1e9:.2f} G samples, 16 runs × {N_CHANNELS} ch)"
    )
    print(f"preprocessed cache (memmap): {cache_bytes / 1e9:.2f} GB")
    print(f"train (preprocess + 1 epoch of {args.windows_per_epoch} windows + validation): {seconds:.0f} s")
    print(f"peak RssAnon: {anon_mb:.0f} MB   (target <= 2048 MB)")
    print(f"peak VmRSS (includes mapped file pages): {rss_mb:.0f} MB")
    print(f"ratio peak RssAnon / cohort float32 bytes (in-memory baseline): {anon_mb * 2**20 / signal_bytes:.3f}")
    if not args.keep:
        shutil.rmtree(args.work, ignore_errors=True)
    return 0 if anon_mb <= 2048 else 1


if __name__ == "__main__":
    sys.exit(main())

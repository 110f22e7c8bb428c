"""Shared fixtures: small in-memory recordings for fast engine tests."""

from pathlib import Path

import numpy as np
import pytest

from sss_viewer.recording import Event, Recording

SHARED_DATA = Path(__file__).resolve().parents[2] / "shared" / "data"


def toy_recording(subject: str, seed: int, n_channels: int = 8, duration_s: float = 40.0, sfreq: float = 250.0) -> Recording:
    """A small labelled recording: the first quarter of channels carry sharp spikes (SOZ)."""
    rng = np.random.default_rng(seed)
    n = int(duration_s * sfreq)
    data = rng.standard_normal((n_channels, n)).astype(np.float32) * 20
    soz = np.zeros(n_channels, dtype=bool)
    soz[: max(1, n_channels // 4)] = True
    for ch in np.flatnonzero(soz):
        for t in rng.integers(0, n - 20, size=int(duration_s)):
            data[ch, t : t + 8] += np.hanning(8).astype(np.float32) * 200
    return Recording(
        data=data,
        sfreq=sfreq,
        ch_names=[f"A{i + 1}" for i in range(n_channels)],
        ch_types=["seeg"] * n_channels,
        soz=soz,
        events=[Event(10.0, 0.0, "sz onset")],
        subject=subject,
        centre=["JHH", "NIH"][seed % 2],
        run="01",
        line_freq=60.0,
    )


@pytest.fixture(scope="session")
def toy_cohort() -> list[Recording]:
    """Eight small labelled recordings from eight patients."""
    return [toy_recording(f"toy{i:02d}", i) for i in range(8)]

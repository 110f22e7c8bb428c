"""Shared fixtures: small in-memory recordings for fast engine tests."""

from pathlib import Path

import numpy as np
import pytest

from sss_viewer.io.recording import Event, Recording

SHARED_DATA = Path(__file__).resolve().parents[2] / "shared" / "data"
"""Real signal data sets outside the repository (``../shared/data``); tests on them are marked ``realdata``."""

TEST_DATA = Path(__file__).resolve().parent / "data"
"""Small data files vendored with the tests (see ``tests/data/README.md``)."""


@pytest.fixture(autouse=True, scope="session")
def _private_series_cache(tmp_path_factory):
    """Point the CLI's default preprocessed-series cache at a per-session folder, not ~/.cache."""
    mp = pytest.MonkeyPatch()
    mp.setenv("SSS_VIEWER_CACHE", str(tmp_path_factory.mktemp("series-cache")))
    yield
    mp.undo()


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


@pytest.fixture(scope="session")
def toy_series_split(toy_cohort):
    """The first four toy recordings as a series set, split into channels to train, validate and test.

    Returns ``(series_set, split)``: 8 SOZ and 24 other channels; 2 + 2 of each class validate and test,
    the rest train (split: (n_channels,) of "train" / "val" / "test", seed 0).
    """
    from sss_viewer.preprocessing.config import preprocess_preset
    from sss_viewer.windows.series_set import build_series_set

    series_set = build_series_set(toy_cohort[:4], preprocess_preset("default"), min_length=256, progress=False)
    labels = series_set.labels()
    split = np.full(len(labels), "train", dtype=object)
    rng = np.random.default_rng(0)
    for label in (0, 1):
        rows = rng.permutation(np.flatnonzero(labels == label))
        split[rows[:2]] = "val"
        split[rows[2:4]] = "test"
    return series_set, split.astype(str)


DS003029_META = TEST_DATA / "ds003029-meta"
"""The vendored subset of the real ds003029 sidecars (CC0, no signals) that ``write_ds003029_like`` mirrors."""


@pytest.fixture(scope="session")
def ds003029_like_root(tmp_path_factory) -> Path:
    """A small ds003029-shaped BIDS tree, written once per session (≈ 3 s).

    Default subjects (``tests.fixtures.bids_fixture.DEFAULT_SUBJECTS``), two runs each, 24-s runs at
    the real sampling rates, at most 40 channels per run; ``fixture_manifest.json`` in the root says
    what was written, from the sidecars vendored in ``tests/data/ds003029-meta``.
    """
    from .fixtures.bids_fixture import write_ds003029_like

    out = tmp_path_factory.mktemp("ds003029-like")
    return write_ds003029_like(DS003029_META, out, duration_s=24.0, max_channels=40)


@pytest.fixture(scope="session")
def browser_type_launch_args(browser_type_launch_args):
    """pytest-playwright launches Debian's chromium (``playwright install`` cannot download here), for every browser test."""
    from .browser_support import CHROMIUM

    return {**browser_type_launch_args, "executable_path": CHROMIUM, "args": ["--no-sandbox"]}

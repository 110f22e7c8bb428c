"""Shared fixtures and the central ``browser`` marking; importable helpers live in ``tests/fixtures`` and ``tests/*_support.py``."""

from pathlib import Path

import numpy as np
import pytest

from sss_viewer.io.recording import Recording

from .fixtures.recordings import DS003029_META, toy_recording


@pytest.fixture(autouse=True, scope="session")
def _private_series_cache(tmp_path_factory):
    """Point the CLI's default preprocessed-series cache at a per-session folder, not ~/.cache."""
    mp = pytest.MonkeyPatch()
    mp.setenv("SSS_VIEWER_CACHE", str(tmp_path_factory.mktemp("series-cache")))
    yield
    mp.undo()


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


@pytest.fixture(scope="module")
def app_env(tmp_path_factory) -> dict[str, str]:
    """The served demo's environment: an empty data root (the app opens the demo) and a private output folder.

    A browser test module with its own recordings or settings overrides this fixture; ``app_url`` serves it.
    """
    from .browser_support import app_environment

    return app_environment(tmp_path_factory.mktemp("data-root"), tmp_path_factory.mktemp("viewer-output"))


@pytest.fixture(scope="module")
def app_url(app_env):
    """``panel serve app.py`` with ``app_env``, once per test module; the URL of its app."""
    from .browser_support import served_app

    with served_app(app_env) as url:
        yield url


BROWSER_FIXTURES = frozenset({"browser", "page", "context", "app_url", "chromium"})
"""A test that requests any of these drives a real Chromium: it is marked ``browser`` (``-m "not browser"`` skips it)."""


def pytest_collection_modifyitems(config, items):
    """Mark every test that drives a browser ``browser``, wherever it is written."""
    for item in items:
        if BROWSER_FIXTURES.intersection(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.browser)


@pytest.fixture
def chromium() -> str:
    """The Chromium executable the exporter drives; skips the test where there is none."""
    from sss_viewer.viewer import export

    found = export.find_browser()
    if found is None:
        pytest.skip(export._missing_browser() or "no Chromium browser found")
    return found


@pytest.fixture(scope="session")
def browser_type_launch_args(browser_type_launch_args):
    """pytest-playwright launches Debian's chromium (``playwright install`` cannot download here), for every browser test."""
    from .browser_support import CHROMIUM

    return {**browser_type_launch_args, "executable_path": CHROMIUM, "args": ["--no-sandbox"]}

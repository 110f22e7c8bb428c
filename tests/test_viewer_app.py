"""The assembled viewer in Python (no browser): open, refuse, score, annotate, export."""

import numpy as np
import pybv
import pytest

from sss_viewer.viewer.app import build_app

from .conftest import toy_recording

pytestmark = pytest.mark.filterwarnings(
    "ignore:The inplace keyword in DataFrame.reset_index is deprecated:DeprecationWarning"
)


def _write(folder, name, seconds, sfreq=250.0, n_channels=6):
    rec = toy_recording(name, 2, n_channels=n_channels, duration_s=seconds, sfreq=sfreq)
    pybv.write_brainvision(
        data=rec.data, sfreq=sfreq, ch_names=[f"LQ{i + 1}" for i in range(n_channels)], fname_base=name,
        folder_out=folder, fmt="binary_float32", unit="µV",
    )  # fmt: skip
    return folder / f"{name}.vhdr"


@pytest.fixture
def app(tmp_path):
    return build_app(data_root=tmp_path, out_dir=tmp_path / "out")


def test_starts_on_the_demo_with_scores_and_threshold(app):
    assert app.is_demo and app.scores is not None
    assert app.ranking.threshold == pytest.approx(app.bundle.threshold)
    assert len(app.ranking.table()) == app.recording.n_channels - len(app.scores.excluded)
    assert "synthetic" in app.model_description.lower()


def test_unfit_or_broken_recordings_leave_the_view_intact(app, tmp_path):
    short = _write(tmp_path, "short", 2.0)
    assert app.open(short) is False
    assert "shorter than one window" in app.message and app.is_demo
    broken = tmp_path / "broken.edf"
    broken.write_bytes(b"not an edf" * 30)
    assert app.open(broken) is False
    assert "Could not open broken.edf" in app.message and app.is_demo
    slow = _write(tmp_path, "slow", 30.0, sfreq=200.0)
    assert app.open(slow) is False and "200 Hz" in app.message


def test_opening_scores_in_the_background_then_exports(app, tmp_path):
    assert app.open(_write(tmp_path, "patient", 30.0))
    app.scorer.wait(120)
    assert app.scorer.error == ""
    assert list(app.ranking.table()["channel"].str.startswith("LQ")) == [True] * 6
    assert not app.is_demo
    app.annotations.add_marker("onset", 5.0)
    app.annotations.bad_channels = ["LQ2"]
    assert "LQ2" not in set(app.ranking.table()["channel"])
    paths = app.export(tmp_path / "exports")
    assert set(paths) == {"png", "svg", "html", "csv", "report"}
    assert paths["png"].read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "LQ1" in paths["report"].read_text() and "LQ2" not in paths["csv"].read_text()
    with pytest.raises(FileExistsError):
        app.export(tmp_path / "exports")
    assert np.isfinite(app.scores.channels["score"]).all()

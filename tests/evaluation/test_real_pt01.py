"""Real multichannel smoke test: ds003029 pt01 (EZFragility export), 84 ECoG channels, 3 s, 10 SOZ."""

import hashlib

import numpy as np
import pytest

from sss_viewer import read_recording
from sss_viewer.cli import main
from sss_viewer.engine.config import train_preset
from sss_viewer.engine.inference import score_recording
from sss_viewer.engine.training import train
from tests.fixtures.recordings import SHARED_DATA

PT01 = SHARED_DATA / "ezfragility-pt01" / "pt01_sz1_ecog_m1s_p2s.npz"
SOZ = {"ATT1", "ATT2", "AD1", "AD2", "AD3", "AD4", "PD1", "PD2", "PD3", "PD4"}

pytestmark = [
    pytest.mark.realdata,
    pytest.mark.skipif(not PT01.is_file(), reason=f"real data not present: {PT01} (see ../shared/data)"),
]


@pytest.fixture(scope="module")
def pt01():
    return read_recording(PT01)


def test_loads_with_names_and_soz_labels(pt01):
    assert pt01.n_channels == 84 and pt01.sfreq == 1000.0
    assert pt01.duration_s == pytest.approx(3.0, abs=0.01)
    assert len(set(pt01.ch_names)) == 84
    assert {n for n, s in zip(pt01.ch_names, pt01.soz) if s} == SOZ
    assert len(pt01.ieeg_picks()) == 84


def test_short_window_model_scores_it_end_to_end(pt01, toy_cohort):
    config = train_preset(
        "default",
        window_length=256,
        train_stride=256,
        val_stride=256,
        epochs=1,
        batch_size=64,
        device="cpu",
        model_params={"d_model": 16, "d_ff": 32, "n_heads": 2, "n_layers": 1},
    )
    bundle = train(toy_cohort, config, progress=False)
    result = score_recording(bundle, pt01, progress=False)
    assert len(result.channels) == 84 and result.excluded.empty
    assert np.isfinite(result.channels["score"]).all()
    assert result.channels["score"].between(0, 1).all()
    assert result.windows["end_s"].max() == pytest.approx(pt01.duration_s, abs=0.01)
    assert int(result.channels["label"].sum()) == 10


def test_default_model_says_the_recording_is_shorter_than_one_window(tmp_path, toy_cohort, capsys):
    config = train_preset("default", epochs=1, train_stride=2048, val_stride=2048, device="cpu")
    assert config.window_length == 1024
    train(toy_cohort, config, progress=False).save(tmp_path / "model")
    before = hashlib.sha256(PT01.read_bytes()).hexdigest()
    code = main(["score", str(tmp_path / "model"), str(PT01), "--out", str(tmp_path / "scores"), "-q"])
    err = capsys.readouterr().err
    assert code == 1  # a runtime error
    assert "shorter than one window" in err and "lasts 3.00 s" in err and "1024 samples = 4.10 s" in err
    assert hashlib.sha256(PT01.read_bytes()).hexdigest() == before

"""Training loop, checkpoint round trip and scoring on small in-memory recordings."""

import json

import numpy as np
import pytest
import torch

from sss_viewer.engine.bundle import ModelBundle
from sss_viewer.engine.config import TrainConfig, train_preset
from sss_viewer.engine.inference import score_recording
from sss_viewer.engine.training import train
from tests.fixtures.recordings import toy_recording
from tests.fixtures.threads import run_threads

TINY = dict(
    window_length=128,
    train_stride=64,
    val_stride=64,
    batch_size=64,
    epochs=2,
    model_params={"d_model": 16, "d_ff": 32, "n_heads": 2, "n_layers": 1},
    device="cpu",
)


@pytest.fixture(scope="module")
def tiny_bundle(toy_cohort):
    return train(toy_cohort, train_preset("default", **TINY), progress=False)


def test_training_records_split_history_and_threshold(tiny_bundle):
    info = tiny_bundle.info
    split = info["split"]
    assert split["mode"] == "patient"
    assert not set(split["train"]) & set(split["test"])
    assert not set(split["val"]) & set(split["test"])
    assert len(info["history"]) == 2
    assert 0.0 <= tiny_bundle.threshold <= 1.0
    json.dumps(tiny_bundle.config_dict())


def test_two_runs_trained_on_two_threads_at_once_equal_the_run_trained_alone(tiny_bundle, toy_cohort):
    """Two viewer sessions training at once: each model is the one its seed gives, not a mix of both runs' draws."""
    bundles = []

    def run():
        bundles.append(train(toy_cohort, train_preset("default", **TINY), progress=False))

    run_threads(run, run, timeout_s=600)
    alone = tiny_bundle.model.state_dict()
    for bundle in bundles:
        weights = bundle.model.state_dict()
        assert weights.keys() == alone.keys()
        assert all(torch.equal(weights[k], alone[k]) for k in alone)


def test_checkpoint_round_trip_gives_identical_scores(tiny_bundle, tmp_path, toy_cohort):
    tiny_bundle.save(tmp_path / "model")
    loaded = ModelBundle.load(tmp_path / "model")
    rec = toy_cohort[0]
    a = score_recording(tiny_bundle, rec, device="cpu", progress=False)
    b = score_recording(loaded, rec, device="cpu", progress=False)
    np.testing.assert_array_equal(a.windows["p_cal"].to_numpy(), b.windows["p_cal"].to_numpy())
    assert a.channels.equals(b.channels)


def test_scores_cover_the_recording_in_its_own_seconds(tiny_bundle):
    rec = toy_recording("other", 99, sfreq=500.0)  # resampled to 250 Hz inside
    result = score_recording(tiny_bundle, rec, device="cpu", progress=False)
    w = result.windows
    assert set(w.columns) == {"channel", "start_s", "end_s", "p_raw", "p_cal", "p0", "p1", "artifact"}
    assert (w["artifact"] == "").all()  # toy noise: nothing flagged
    assert w["start_s"].min() == 0.0
    assert w["end_s"].max() == pytest.approx(rec.duration_s, abs=1 / 250)
    assert np.allclose(w["end_s"] - w["start_s"], 128 / 250)
    values, edges = result.heatmap(bin_s=1.0)
    assert values.shape == (rec.n_channels, 40) and np.isfinite(values).all()


def test_short_and_bad_channels_are_skipped_with_reasons(tiny_bundle, caplog):
    rec = toy_recording("short", 5, duration_s=0.4)
    with pytest.raises(ValueError, match=r"0\.40 s, shorter than one window.*128 samples = 0\.51 s"):
        score_recording(tiny_bundle, rec, device="cpu", progress=False)
    rec = toy_recording("bad", 6)
    rec.data[1] = 0.0
    rec.data[2, 5] = np.inf
    result = score_recording(tiny_bundle, rec, device="cpu", progress=False)
    assert dict(zip(result.excluded["channel"], result.excluded["reason"])) == {
        "A2": "flat signal",
        "A3": "1 NaN/inf samples",
    }
    assert "excluded 1 channel(s), flat signal: A2" in caplog.text
    assert "excluded 1 channel(s), 1 NaN/inf samples: A3" in caplog.text
    assert set(result.channels["channel"]) == {f"A{i}" for i in (1, 4, 5, 6, 7, 8)}


def test_missing_model_files_are_named(tmp_path):
    (tmp_path / "m").mkdir()
    (tmp_path / "m" / "config.json").write_text("{}")
    with pytest.raises(FileNotFoundError, match="missing model.safetensors"):
        ModelBundle.load(tmp_path / "m")


def test_unknown_names_fail_before_training():
    with pytest.raises(ValueError, match="backbone"):
        TrainConfig(backbone="transformer-xl")
    with pytest.raises(ValueError, match="calibrator"):
        TrainConfig(calibrator="platt")


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_cpu_and_gpu_window_probabilities_agree(tiny_bundle, toy_cohort):
    rec = toy_cohort[1]
    cpu = score_recording(tiny_bundle, rec, device="cpu", progress=False).windows["p_raw"].to_numpy()
    gpu = score_recording(tiny_bundle, rec, device="cuda", progress=False).windows["p_raw"].to_numpy()
    tiny_bundle.model.cpu()
    np.testing.assert_allclose(cpu, gpu, atol=1e-4)


@pytest.mark.parametrize("backbone", ["timesnet", "moderntcn", "dlinear", "rocket", "mamba", "gru", "lstm"])
def test_every_backbone_serves_as_the_sss_local_model(backbone, toy_cohort, tmp_path):
    """SSS is backbone-agnostic: any registered window model trains, saves, loads and scores."""
    from tests.models.test_models import SMALL_PARAMS

    params = {k: v for k, v in SMALL_PARAMS[backbone].items() if k not in ("window_length", "input_length")}
    config = train_preset(
        "default",
        backbone=backbone,
        model_params=params,
        window_length=64,
        train_stride=64,
        val_stride=256,
        windows_per_epoch=256,
        batch_size=64,
        epochs=1,
        device="cpu",
    )
    bundle = train(toy_cohort[:6], config, progress=False)
    bundle.save(tmp_path / "model")
    loaded = ModelBundle.load(tmp_path / "model")
    assert loaded.model.get_config()["name"] == backbone
    result = score_recording(loaded, toy_cohort[6], stride=128, device="cpu", progress=False)
    assert len(result.channels) == 8 and result.channels["score"].between(0, 1).all()

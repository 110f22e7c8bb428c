"""Whole-channel baselines (App. C): padding/truncation, training, prediction, early stopping."""

import numpy as np
import pandas as pd
import pytest
import torch

from sss_viewer.baselines.whole_channel import (
    WholeChannelConfig,
    _accepts_mask,
    fit_whole_channel,
    pad_or_truncate,
    predict_channels,
)
from sss_viewer.metrics import binary_auc
from sss_viewer.models.registry import app_c_best, build_window_model
from sss_viewer.preprocessing.config import preprocess_preset
from sss_viewer.windows.series_set import SeriesSet, build_series_set
from sss_viewer.windows.store import SeriesStore

L = 256
DLINEAR = {"backbone": "dlinear", "window_length": L, "lr": 1e-2, "device": "cpu"}
GRU = {
    "backbone": "gru",
    "model_params": {"d_model": 8, "n_layers": 1, "patch_size": 32, "patch_stride": 32},
    "window_length": L,
    "max_length": 1024,
    "lr": 1e-2,
    "device": "cpu",
}
ROCKET = {
    "backbone": "rocket",
    "model_params": {"num_kernels": 200},
    "window_length": L,
    "max_length": 2048,
    "lr": 1e-2,
    "device": "cpu",
}


@pytest.fixture(scope="module")
def toy_set(toy_cohort):
    return build_series_set(toy_cohort, preprocess_preset("default"), min_length=L, progress=False)


@pytest.fixture(scope="module")
def toy_split(toy_set):
    """Patients 0-3 train, 4-5 validation, 6-7 test."""
    subject = toy_set.meta["subject"].to_numpy()
    split = np.full(len(subject), "test", dtype=object)
    split[np.isin(subject, ["toy00", "toy01", "toy02", "toy03"])] = "train"
    split[np.isin(subject, ["toy04", "toy05"])] = "val"
    return split


def _small_set(lengths, labels, seed=0):
    rng = np.random.default_rng(seed)
    series = [rng.standard_normal(n).astype(np.float32) for n in lengths]
    meta = pd.DataFrame(
        {
            "recording": 0,
            "subject": "s",
            "centre": "c",
            "run": "01",
            "channel": [f"A{i}" for i in range(len(lengths))],
            "label": labels,
            "sfreq": 250.0,
        }
    )
    return SeriesSet(SeriesStore.from_series(series), meta, pd.DataFrame())


# ---------------------------------------------------------------------------------- batching


def test_pad_or_truncate_truncates_long_and_pads_short():
    long = np.arange(10, dtype=np.float32) + 1
    short = np.arange(3, dtype=np.float32) + 1
    exact = np.ones(6, dtype=np.float32)
    x, mask = pad_or_truncate([long, short, exact], 6)
    assert x.shape == mask.shape == (3, 6)
    assert x.dtype == np.float32 and mask.dtype == bool
    np.testing.assert_array_equal(x[0], long[:6])  # first L samples kept
    assert mask[0].all()
    np.testing.assert_array_equal(x[1], [1, 2, 3, 0, 0, 0])  # zero-padded at the end
    np.testing.assert_array_equal(mask[1], [True, True, True, False, False, False])
    assert mask[2].all()


def test_mask_passed_only_where_accepted():
    assert _accepts_mask(build_window_model("dlinear", L))
    assert _accepts_mask(build_window_model("timesnet", L, d_model=8, d_ff=8, n_layers=1))
    assert not _accepts_mask(build_window_model("patchtst", L, d_model=8, n_layers=1, n_heads=1))


def test_predict_channels_finite_uses_padding_mask():
    ss = _small_set([100, 300, 256], [1, 0, 1])
    params = {"d_model": 8, "d_ff": 8, "n_layers": 1}
    config = WholeChannelConfig(backbone="timesnet", model_params=params, window_length=L, batch_size=2, device="cpu")
    torch.manual_seed(0)
    model = build_window_model("timesnet", L, **params).eval()
    probs = predict_channels(model, ss, [0, 1, 2], config)
    x, mask = pad_or_truncate([ss.store.series(i) for i in range(3)], L)
    with torch.no_grad():
        expected = torch.sigmoid(model(torch.from_numpy(x), mask=torch.from_numpy(mask))).numpy()
        unmasked = torch.sigmoid(model(torch.from_numpy(x))).numpy()
    np.testing.assert_allclose(probs, expected, rtol=1e-5, atol=1e-6)
    assert not np.allclose(probs[0], unmasked[0])  # the short channel's mask mattered


def test_predict_channels_infinite_reads_whole_variable_length_channels():
    ss = _small_set([100, 700, 333], [1, 0, 1])
    config = WholeChannelConfig(**GRU)
    torch.manual_seed(0)
    model = build_window_model("gru", L, **GRU["model_params"]).eval()
    probs = predict_channels(model, ss, np.array([2, 0, 1]), config)
    with torch.no_grad():
        expected = [float(torch.sigmoid(model(torch.from_numpy(ss.store.series(i))[None]))[0]) for i in (2, 0, 1)]
    np.testing.assert_allclose(probs, expected, rtol=1e-5)
    assert predict_channels(model, ss, [], config).shape == (0,)


def test_equal_length_channels_are_scored_together_with_the_same_result():
    """Infinite-context scoring batches channels of equal length; rows stay independent."""
    ss = _small_set([300, 300, 500, 300, 500], [1, 0, 1, 0, 1])
    config = WholeChannelConfig(**GRU)
    torch.manual_seed(0)
    model = build_window_model("gru", L, **GRU["model_params"]).eval()
    probs = predict_channels(model, ss, np.arange(5), config)
    with torch.no_grad():
        one_by_one = [float(torch.sigmoid(model(torch.from_numpy(ss.store.series(i))[None]))[0]) for i in range(5)]
    np.testing.assert_allclose(probs, one_by_one, rtol=1e-5, atol=1e-6)


def test_crop_batches_share_one_length():
    from sss_viewer.baselines.whole_channel import _crop_batch, _equal_length_batches

    rng = np.random.default_rng(0)
    x = _crop_batch([np.arange(900.0), np.arange(400.0), np.arange(2000.0)], 512, rng)
    assert x.shape == (3, 400) and x.dtype == np.float32
    assert _crop_batch([np.arange(900.0), np.arange(2000.0)], 512, rng).shape == (2, 512)
    batches = _equal_length_batches(np.array([5, 7, 5, 5, 7]), 2)
    assert [b.tolist() for b in batches] == [[0, 2], [3], [1, 4]]


def test_infinite_context_batched_crops_train(toy_set, toy_split):
    result = fit_whole_channel(toy_set, toy_split, WholeChannelConfig(**{**GRU, "batch_size": 4}, epochs=2))
    _check_result(result, toy_split)


def test_frozen_front_end_features_are_computed_once_and_match_scoring(toy_set, toy_split):
    """ROCKET/MiniRocket train only their head on cached whole-channel features; scoring the model agrees."""
    config = WholeChannelConfig(
        backbone="minirocket",
        model_params={"num_features": 336},
        window_length=L,
        epochs=3,
        lr=1e-2,
        batch_size=8,
        device="cpu",
    )
    result = fit_whole_channel(toy_set, toy_split, config)
    _check_result(result, toy_split)
    rescored = predict_channels(result.model, toy_set, np.flatnonzero(toy_split == "test"), config)
    np.testing.assert_allclose(result.test_probs, rescored, rtol=1e-5, atol=1e-6)
    labels = toy_set.labels()
    assert binary_auc(result.test_probs, labels[toy_split == "test"]) > 0.7


# ---------------------------------------------------------------------------------- training


def _check_result(result, split):
    n_val, n_test = int((split == "val").sum()), int((split == "test").sum())
    assert result.val_probs.shape == (n_val,) and result.test_probs.shape == (n_test,)
    for p in (result.val_probs, result.test_probs):
        assert np.all((p >= 0) & (p <= 1)) and np.all(np.isfinite(p))
    assert not result.model.training
    assert 1 <= len(result.history) <= result.config.epochs
    assert set(result.history[0]) >= {"epoch", "train_loss", "val_auc", "seconds"}
    assert 1 <= result.best_epoch <= len(result.history)
    best = result.history[result.best_epoch - 1]["val_auc"]
    assert best == max(h["val_auc"] for h in result.history)


def test_finite_dlinear_trains(toy_set, toy_split):
    result = fit_whole_channel(toy_set, toy_split, WholeChannelConfig(**DLINEAR, epochs=3))
    _check_result(result, toy_split)
    assert result.history[0]["lr"] == pytest.approx(1e-2)
    assert result.history[-1]["lr"] < 1e-2  # cosine annealing


def test_finite_patchtst_trains_without_mask(toy_set, toy_split):
    config = WholeChannelConfig(
        backbone="patchtst",
        model_params={"d_model": 8, "n_layers": 1, "n_heads": 1},
        window_length=L,
        epochs=2,
        lr=1e-3,
        batch_size=16,
        device="cpu",
    )
    _check_result(fit_whole_channel(toy_set, toy_split, config), toy_split)


def test_infinite_gru_trains(toy_set, toy_split):
    result = fit_whole_channel(toy_set, toy_split, WholeChannelConfig(**GRU, epochs=1))
    _check_result(result, toy_split)


def test_rocket_learns_toy_task(toy_set, toy_split):
    """The toy SOZ channels carry large spikes; ROCKET's max features find them."""
    result = fit_whole_channel(toy_set, toy_split, WholeChannelConfig(**ROCKET, epochs=2))
    _check_result(result, toy_split)
    labels = toy_set.labels()
    assert max(h["val_auc"] for h in result.history) > 0.7
    assert binary_auc(result.val_probs, labels[toy_split == "val"]) > 0.7
    assert binary_auc(result.test_probs, labels[toy_split == "test"]) > 0.7


def test_deterministic_with_seed(toy_set, toy_split):
    a = fit_whole_channel(toy_set, toy_split, WholeChannelConfig(**DLINEAR, epochs=2, seed=3))
    b = fit_whole_channel(toy_set, toy_split, WholeChannelConfig(**DLINEAR, epochs=2, seed=3))
    np.testing.assert_array_equal(a.val_probs, b.val_probs)
    np.testing.assert_array_equal(a.test_probs, b.test_probs)
    assert [h["train_loss"] for h in a.history] == [h["train_loss"] for h in b.history]
    c = fit_whole_channel(toy_set, toy_split, WholeChannelConfig(**DLINEAR, epochs=2, seed=4))
    assert not np.array_equal(a.test_probs, c.test_probs)


def test_early_stopping(toy_set, toy_split):
    """With a vanishing learning rate the validation AUC never improves: stop after patience epochs."""
    config = WholeChannelConfig(**{**DLINEAR, "lr": 1e-12}, epochs=5, patience=1)
    result = fit_whole_channel(toy_set, toy_split, config)
    assert len(result.history) == 2
    assert result.best_epoch == 1


def test_lr_defaults_to_app_c():
    config = WholeChannelConfig(backbone="gru")
    assert config.lr is None
    assert config.resolved_lr() == app_c_best("gru")["lr"]
    assert config.to_dict()["backbone"] == "gru"
    assert WholeChannelConfig(backbone="gru", lr=0.5).resolved_lr() == 0.5


# ---------------------------------------------------------------------------------- errors


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"backbone": "nope"}, "backbone"),
        ({"backbone": "dlinear", "model_params": {"window_length": 10}}, "window_length"),
        ({"backbone": "dlinear", "epochs": 0}, "epochs"),
        ({"backbone": "dlinear", "lr": 0.0}, "lr"),
        ({"backbone": "gru", "max_length": 1}, "max_length"),
        ({"backbone": "gru", "batch_size": 0}, "batch_size"),
        ({"backbone": "gru", "device": "tpu"}, "device"),
        ({"backbone": "gru", "seed": -1}, "seed"),
    ],
)
def test_config_errors(kwargs, match):
    with pytest.raises(ValueError, match=match):
        WholeChannelConfig(**kwargs)


def test_split_errors(toy_set, toy_split):
    config = WholeChannelConfig(**DLINEAR, epochs=1)
    labels = toy_set.labels()
    no_pos_train = toy_split.copy()
    no_pos_train[(toy_split == "train") & (labels == 1)] = "unused"
    with pytest.raises(ValueError, match="train split has channels of class"):
        fit_whole_channel(toy_set, no_pos_train, config)
    no_val = np.where(toy_split == "val", "test", toy_split)
    with pytest.raises(ValueError, match="val split is empty"):
        fit_whole_channel(toy_set, no_val, config)
    with pytest.raises(ValueError, match="shape"):
        fit_whole_channel(toy_set, toy_split[:-1], config)
    bad = toy_split.copy()
    bad[0] = "training"
    with pytest.raises(ValueError, match="unknown value"):
        fit_whole_channel(toy_set, bad, config)

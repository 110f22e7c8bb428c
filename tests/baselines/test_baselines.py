"""Tests for the global-feature (no local model) baseline."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.exceptions import NotFittedError

from sss_viewer.baselines.global_features import FEATURE_NAMES, GlobalFeatureBaseline, global_features
from sss_viewer.metrics import binary_auc

SFREQ = 256.0


def _channels(n: int, seed: int, scale_pos: float = 1.0) -> tuple[list[np.ndarray], np.ndarray]:
    """White-noise channels of varying length; label-1 channels scaled by ``scale_pos``."""
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, 2, n)
    signals = [rng.normal(0.0, scale_pos if lab else 1.0, int(rng.integers(600, 1200))) for lab in labels]
    return signals, labels


def test_global_features_shape_and_values() -> None:
    rng = np.random.default_rng(0)
    x = rng.normal(0.0, 2.0, 4096)
    f = global_features(x, SFREQ)
    assert f.shape == (len(FEATURE_NAMES),)
    assert np.all(np.isfinite(f))
    assert f[0] == pytest.approx(np.log(4.0), abs=0.1)  # log variance
    # white noise: band power grows with bandwidth (beta 17 Hz wide > theta 4 Hz wide)
    names = list(FEATURE_NAMES)
    assert f[names.index("log_power_beta")] > f[names.index("log_power_theta")]


def test_global_features_low_rate_and_short_channels() -> None:
    rng = np.random.default_rng(1)
    f = global_features(rng.normal(size=4097), 173.61)  # Bonn: 0.45 * sfreq = 78 Hz < 80 Hz
    assert np.isnan(f[list(FEATURE_NAMES).index("log_power_high")])
    assert np.all(np.isfinite(f[:-1]))
    assert np.all(np.isfinite(global_features(rng.normal(size=40), 1000.0)))
    assert np.all(np.isfinite(global_features(np.zeros(100), 500.0)))  # flat channel: floored logs


def test_global_features_errors() -> None:
    with pytest.raises(ValueError, match="x is too short"):
        global_features(np.zeros(3), SFREQ)
    with pytest.raises(ValueError, match="sfreq"):
        global_features(np.zeros(100), -1.0)
    with pytest.raises(ValueError, match=r"shape \(n_times,\)"):
        global_features(np.zeros((2, 100)), SFREQ)


def test_baseline_learns_variance_difference() -> None:
    train, y_train = _channels(80, seed=2, scale_pos=1.6)
    test, y_test = _channels(80, seed=3, scale_pos=1.6)
    model = GlobalFeatureBaseline().fit(train, SFREQ, y_train)
    proba = model.predict_proba(test, [SFREQ] * len(test))
    assert proba.shape == (80,)
    assert np.all((proba >= 0) & (proba <= 1))
    assert binary_auc(proba, y_test) > 0.95


def test_baseline_is_chance_on_noise_labels() -> None:
    train, y_train = _channels(120, seed=4)
    test, y_test = _channels(200, seed=5)
    proba = GlobalFeatureBaseline().fit(train, SFREQ, y_train).predict_proba(test, SFREQ)
    assert abs(binary_auc(proba, y_test) - 0.5) < 0.12


def test_baseline_drops_features_missing_at_low_rate() -> None:
    train, y_train = _channels(40, seed=6, scale_pos=2.0)
    rates = [173.61 if i % 2 else SFREQ for i in range(len(train))]
    model = GlobalFeatureBaseline().fit(train, rates, y_train)
    assert "log_power_high" not in model.feature_names_
    assert model.predict_proba(train[:3], 173.61).shape == (3,)


def test_baseline_errors() -> None:
    train, y_train = _channels(10, seed=7)
    with pytest.raises(NotFittedError, match="not fitted"):
        GlobalFeatureBaseline().predict_proba(train, SFREQ)
    with pytest.raises(ValueError, match="single class"):
        GlobalFeatureBaseline().fit(train, SFREQ, np.zeros(10, dtype=int))
    with pytest.raises(ValueError, match="one entry per channel"):
        GlobalFeatureBaseline().fit(train, SFREQ, y_train[:5])
    with pytest.raises(ValueError, match="sfreqs must be one number or one per channel"):
        GlobalFeatureBaseline().fit(train, [SFREQ] * 3, y_train)

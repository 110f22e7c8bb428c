"""Preprocessing presets: rates, anti-aliasing, notch, pooling, z-score, refusals."""

import numpy as np
import pytest
from scipy import signal

from sss_viewer.preprocessing.config import PreprocessConfig, preprocess_preset
from sss_viewer.preprocessing.filters import average_pool, preprocess_channel


def _band_power(x, fs, lo, hi):
    """Mean power spectral density in [lo, hi] Hz."""
    f, pxx = signal.welch(x, fs=fs, nperseg=1024)
    return pxx[(f >= lo) & (f <= hi)].mean()


@pytest.mark.parametrize("sfreq", [249.85, 499.71, 999.41, 1000.0, 2000.0])
def test_default_reaches_one_common_rate(sfreq):
    config = preprocess_preset("default")
    x = np.random.default_rng(0).standard_normal(int(sfreq * 20)).astype(np.float32)
    y = preprocess_channel(x, sfreq, config, line_freq=60)
    assert y.dtype == np.float32
    assert config.output_sfreq(sfreq) == pytest.approx(250.0, rel=1e-5)
    assert len(y) == pytest.approx(20 * 250, abs=2)
    assert abs(y.mean()) < 1e-3 and y.std() == pytest.approx(1.0, rel=1e-3)


def test_default_removes_mains_instead_of_aliasing_it():
    fs = 1000.0
    t = np.arange(int(fs * 30)) / fs
    rng = np.random.default_rng(1)
    x = (rng.standard_normal(len(t)) + 20 * np.sin(2 * np.pi * 60 * t)).astype(np.float32)
    default = preprocess_channel(x, fs, preprocess_preset("default"), line_freq=60)
    paper = preprocess_channel(x, fs, preprocess_preset("paper"))
    # paper: 24/12 pooling at 1 kHz -> 83.3 Hz, 60 Hz folds to 83.3 - 60 = 23.3 Hz
    fs_paper = preprocess_preset("paper").output_sfreq(fs)
    alias = _band_power(paper, fs_paper, 22, 25) / _band_power(paper, fs_paper, 5, 20)
    assert alias > 1.0
    # a 20x-noise sinusoid would sit ~3 orders of magnitude above the floor; after the notch none is left
    ratio = _band_power(default, 250, 58, 62) / _band_power(default, 250, 30, 50)
    assert ratio < 1.0


def test_signal_below_target_nyquist_survives():
    fs = 2000.0
    t = np.arange(int(fs * 10)) / fs
    x = np.sin(2 * np.pi * 90 * t).astype(np.float32)
    y = preprocess_channel(x, fs, preprocess_preset("default", notch=False), line_freq=None)
    peak = np.argmax(np.abs(np.fft.rfft(y)))
    assert np.fft.rfftfreq(len(y), 1 / 250)[peak] == pytest.approx(90, abs=0.2)


def test_average_pool_matches_torch_semantics():
    x = np.arange(30, dtype=np.float64)
    y = average_pool(x, 24, 12)
    assert len(y) == (30 - 24) // 12 + 1
    assert y[0] == pytest.approx(x[:24].mean())


def test_upsampling_is_refused_with_the_rates_named():
    config = preprocess_preset("default")
    with pytest.raises(ValueError, match=r"200 Hz.*250 Hz"):
        preprocess_channel(np.zeros(1000, np.float32), 200.0, config)
    config.check_sfreq(249.85)  # UMMC's rate is accepted


def test_config_validation_and_round_trip():
    with pytest.raises(ValueError, match="pool_stride"):
        PreprocessConfig(pool_kernel=2, pool_stride=3)
    with pytest.raises(ValueError, match="preset"):
        preprocess_preset("fancy")
    config = preprocess_preset("paper")
    assert PreprocessConfig.from_dict(config.to_dict()) == config
    with pytest.raises(ValueError, match="Unknown preprocessing parameters"):
        PreprocessConfig.from_dict({"bogus": 1})

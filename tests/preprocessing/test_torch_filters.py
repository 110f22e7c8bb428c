"""The torch preprocessing equals the SciPy reference (``preprocess_channels``) within its stated tolerance."""

import numpy as np
import pytest
import torch
from scipy import signal

from sss_viewer.preprocessing._torch_filters import (
    TOLERANCE,
    forward_backward_response,
    preprocess_channels_torch,
    resample_poly_torch,
)
from sss_viewer.preprocessing.config import PreprocessConfig, preprocess_preset
from sss_viewer.preprocessing.filters import _iir_cascade, preprocess_channels
from tests.fixtures.recordings import brainvision_recording

NAMES = ["LA1", "LA2", "LA3", "LB1"]


def _data(sfreq: float, seconds: float, n_channels: int = 4, seed: int = 0) -> np.ndarray:
    """Random walks with a DC level, 50 and 60 Hz mains and per-channel amplitudes, shape (n_channels, n), float32 µV."""
    rng = np.random.default_rng(seed)
    n = int(seconds * sfreq)
    t = np.arange(n) / sfreq
    walk = rng.standard_normal((n_channels, n)).cumsum(axis=1) * 2
    mains = 30 * np.sin(2 * np.pi * 60 * t) + 12 * np.sin(2 * np.pi * 50 * t + 0.3)
    gains = np.linspace(1.0, 4.0, n_channels)[:, None]
    return ((walk + mains + 500) * gains).astype(np.float32)


def _compare(data, sfreq, config, names, line_freq=None):
    ref, ref_unusable = preprocess_channels(data, sfreq, config, names, line_freq=line_freq)
    got, unusable = preprocess_channels_torch(torch.from_numpy(data), sfreq, config, names, line_freq=line_freq)
    assert got.dtype == torch.float32
    assert unusable == ref_unusable
    got = got.numpy()
    assert got.shape == ref.shape == (len(data), config.output_length(data.shape[1], sfreq))
    np.testing.assert_array_equal(np.isnan(got), np.isnan(ref))
    ok = ~np.isnan(ref)
    assert np.abs(got[ok] - ref[ok]).max() <= TOLERANCE
    return got, ref


@pytest.mark.parametrize(("up", "down"), [(1, 4), (125, 256), (125, 1024), (3, 7), (250, 249), (2, 4)])
def test_resampling_is_scipys_resample_poly(up, down):
    x = np.random.default_rng(1).standard_normal((3, 5003))
    expected = signal.resample_poly(x, up, down, axis=-1)
    got = resample_poly_torch(torch.from_numpy(x), up, down).numpy()
    assert got.shape == expected.shape
    np.testing.assert_allclose(got, expected, rtol=0, atol=1e-12)


@pytest.mark.parametrize("sfreq", [1000.0, 512.0, 2048.0, 250.0])
@pytest.mark.parametrize("line_freq", [50.0, 60.0, None])
def test_default_chain_matches_preprocess_channels(sfreq, line_freq):
    config = preprocess_preset("default")
    data = _data(sfreq, 60.0)
    rate = config.resampled_sfreq(sfreq)
    sos = _iir_cascade(config, rate, line_freq)
    span = len(forward_backward_response(sos.tobytes(), len(sos)))
    assert config.output_length(data.shape[1], sfreq) >= 4 * span  # the FFT-convolution inside is exercised
    _compare(data, sfreq, config, NAMES, line_freq)


def test_a_channel_shorter_than_the_iir_span_is_filtered_whole():
    config = preprocess_preset("default")
    got, _ = _compare(_data(1000.0, 8.0), 1000.0, config, NAMES, 60.0)
    assert got.shape == (4, 2000)


@pytest.mark.parametrize("scale", ["recording", "shaft"])
def test_recording_and_shaft_scales_with_unusable_channels(scale):
    config = preprocess_preset("default", scale=scale)
    data = _data(1000.0, 60.0, n_channels=4)
    data[1, 777] = np.nan
    data = np.vstack([data, np.full((1, data.shape[1]), 3.0, np.float32)])
    names = [*NAMES, "LA4"]
    got, _ = _compare(data, 1000.0, config, names, 50.0)
    assert np.isnan(got[1]).all() and np.isnan(got[4]).all()
    stds = got[[0, 2, 3]].std(axis=1)
    assert stds.max() / stds.min() > 2  # amplitude ratios survive a shared scale


def test_paper_preset_and_pooling_without_resampling():
    _compare(_data(512.0, 30.0), 512.0, preprocess_preset("paper"), NAMES)
    config = PreprocessConfig(target_sfreq=None, notch=True, highpass_hz=1.0, pool_kernel=4, pool_stride=2)
    _compare(_data(512.0, 60.0), 512.0, config, NAMES, 60.0)


def test_channel_blocks_give_the_same_series():
    config = preprocess_preset("default")
    data = torch.from_numpy(_data(1000.0, 60.0))
    whole, _ = preprocess_channels_torch(data, 1000.0, config, NAMES, block_rows=4)
    blocks, _ = preprocess_channels_torch(data, 1000.0, config, NAMES, block_rows=1)
    torch.testing.assert_close(blocks, whole, rtol=0, atol=1e-6)


def test_bad_shapes_and_rates_are_refused():
    config = preprocess_preset("default")
    with pytest.raises(ValueError, match="one name per row"):
        preprocess_channels_torch(torch.zeros(2, 100), 1000.0, config, ["A1"])
    with pytest.raises(ValueError, match="upsampling"):
        preprocess_channels_torch(torch.zeros(1, 100), 100.0, config, ["A1"])


@pytest.mark.parametrize(("fmt", "resolution"), [("binary_float32", 1.0), ("binary_int16", 10.0)])
def test_device_reads_of_a_brainvision_file_are_get_datas_values(tmp_path, monkeypatch, fmt, resolution):
    from sss_viewer.io.readers import multiplexed_samples
    from sss_viewer.preprocessing import _device_series as device_series

    data = _data(1000.0, 20.0)
    data[1] += 2e5  # above OFFSET_LIMIT_UV: its level is subtracted before the float32 conversion
    recording = brainvision_recording(tmp_path, data, 1000.0, NAMES, fmt, resolution)
    assert recording.is_lazy and recording.data.offset[1] != 0
    assert multiplexed_samples(recording) is not None
    monkeypatch.setattr(device_series, "READ_SPAN_BYTES", 4 * 4 * 1000)  # 1000-frame spans: 20 reads
    picks = np.array([3, 1, 2])
    got = device_series.read_to_device(recording, picks, "cpu", threads=4)
    np.testing.assert_array_equal(got.numpy(), recording.get_data(picks))
    picked = recording.pick([2, 1])  # a picked view keeps the file's columns
    np.testing.assert_array_equal(
        device_series.read_to_device(picked, np.array([1, 0]), "cpu").numpy(), picked.get_data([1, 0])
    )


def test_device_reads_of_other_recordings_go_through_get_data(monkeypatch):
    from sss_viewer.io.readers import multiplexed_samples
    from sss_viewer.io.recording import Recording
    from sss_viewer.preprocessing import _device_series as device_series

    recording = Recording(_data(1000.0, 20.0), 1000.0, NAMES, ["seeg"] * 4)
    assert multiplexed_samples(recording) is None
    monkeypatch.setattr(device_series, "READ_SPAN_BYTES", 3 * 4 * 1000)
    picks = np.array([3, 0, 2])
    got = device_series.read_to_device(recording, picks, "cpu", threads=4)
    np.testing.assert_array_equal(got.numpy(), recording.get_data(picks))


def test_device_builder_gives_the_cpu_series_set(tmp_path):
    from sss_viewer.preprocessing._device_series import DeviceSeriesBuilder
    from sss_viewer.windows.series_set import build_series_set

    data = _data(1000.0, 60.0)
    data[2] = 5.0  # flat: excluded by both
    recording = brainvision_recording(tmp_path, data, 1000.0, NAMES)
    config = preprocess_preset("default", scale="recording")
    builder = DeviceSeriesBuilder("cpu")
    on_device = build_series_set([recording], config, min_length=1024, progress=False, cache=builder)
    reference = build_series_set([recording], config, min_length=1024, progress=False)
    assert on_device.meta.equals(reference.meta) and on_device.excluded.equals(reference.excluded)
    assert list(on_device.meta["channel"]) == ["LA1", "LA2", "LB1"]
    for i in range(3):
        np.testing.assert_allclose(on_device.store.series(i), reference.store.series(i), rtol=0, atol=TOLERANCE)
    assert builder.series.shape == (4, config.output_length(recording.n_times, 1000.0))
    assert set(builder.timings) == {"read", "artifacts", "preprocess"} and builder.timings["artifacts"] == 0.0


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_cuda_scoring_preprocesses_on_the_gpu_like_the_cpu(tmp_path):
    from pathlib import Path

    from sss_viewer.engine.bundle import ModelBundle
    from sss_viewer.engine.inference import score_recording

    bundle = ModelBundle.load(Path(__file__).resolve().parents[2] / "sss_viewer" / "data" / "demo" / "model")
    recording = brainvision_recording(tmp_path, _data(1000.0, 120.0), 1000.0, NAMES)
    cpu = score_recording(bundle, recording, device="cpu", progress=False)
    gpu = score_recording(bundle, recording, device="cuda", progress=False)
    assert gpu.windows[["channel", "start_s"]].equals(cpu.windows[["channel", "start_s"]])
    # inputs within TOLERANCE; a MiniRocket feature is a share of positions above a bias, so a comparison at the
    # bias may flip (seen on the CPU with these series: 9e-4 in one window's probability, 3e-6 in a channel's score)
    np.testing.assert_allclose(gpu.windows["p_raw"], cpu.windows["p_raw"], rtol=0, atol=5e-3)
    by_name = [r.channels.set_index("channel")["score"].sort_index() for r in (gpu, cpu)]
    np.testing.assert_allclose(by_name[0], by_name[1], rtol=0, atol=1e-4)

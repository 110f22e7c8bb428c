"""Chunked preprocessing matches whole-channel preprocessing, edges included."""

import numpy as np
import pytest

from sss_viewer.io.recording import Recording
from sss_viewer.preprocessing._streaming import block_plan, chunk_plan, preprocess_into
from sss_viewer.preprocessing.config import PreprocessConfig, preprocess_preset
from sss_viewer.preprocessing.filters import preprocess_channel


def _recording(sfreq: float, seconds: float, n_channels: int = 3, seed: int = 0) -> Recording:
    rng = np.random.default_rng(seed)
    n = int(seconds * sfreq)
    t = np.arange(n) / sfreq
    data = rng.standard_normal((n_channels, n)).cumsum(axis=1) * 2 + 30 * np.sin(2 * np.pi * 60 * t) + 500
    names = [f"LA{i + 1}" for i in range(n_channels)]
    return Recording(data.astype(np.float32), sfreq, names, ["seeg"] * n_channels, line_freq=60.0)


@pytest.mark.parametrize(
    ("sfreq", "config"),
    [
        (1000.0, preprocess_preset("default")),
        (999.41, preprocess_preset("default")),
        (249.85, preprocess_preset("default")),
        (2000.0, preprocess_preset("default", highpass_hz=None)),
        (1000.0, preprocess_preset("paper")),
        (512.0, PreprocessConfig(target_sfreq=None, notch=True, highpass_hz=1.0, pool_kernel=4, pool_stride=2)),
    ],
)
def test_chunked_equals_whole_channel(sfreq, config):
    recording = _recording(sfreq, 200.0)
    n_out = config.output_length(recording.n_times, sfreq)
    step, margin = chunk_plan(recording.n_times, sfreq, config, chunk_seconds=30.0)
    assert step < recording.n_times  # several chunks, so chunk edges are exercised
    picks = np.arange(3)
    out = np.full(3 * n_out, np.nan, dtype=np.float32)
    unusable = preprocess_into(recording, picks, config, out, picks * n_out, chunk_seconds=30.0, memory_bytes=1)
    assert unusable == {}
    for j in picks:
        whole = preprocess_channel(recording.data[j], sfreq, config, line_freq=60.0)
        assert len(whole) == n_out
        np.testing.assert_allclose(out[j * n_out : (j + 1) * n_out], whole, atol=2e-4)


def test_output_length_matches_the_filters():
    for sfreq in (1000.0, 999.41, 499.71, 249.85, 2000.0, 1024.6):
        for preset in ("default", "paper"):
            config = preprocess_preset(preset)
            x = np.zeros(12345, dtype=np.float32)
            x[::7] = 1.0
            assert len(preprocess_channel(x, sfreq, config)) == config.output_length(len(x), sfreq)


def test_unusable_channels_are_reported_not_normalised():
    recording = _recording(1000.0, 60.0, n_channels=3)
    recording.data[1, 5000] = np.nan
    recording.data[2] = 7.0
    config = preprocess_preset("default")
    n_out = config.output_length(recording.n_times, 1000.0)
    out = np.zeros(3 * n_out, dtype=np.float32)
    unusable = preprocess_into(recording, np.arange(3), config, out, np.arange(3) * n_out, chunk_seconds=20.0)
    assert unusable == {1: "1 NaN/inf samples", 2: "flat signal"}
    assert abs(out[:n_out].mean()) < 1e-4 and out[:n_out].std() == pytest.approx(1.0, abs=1e-4)


def test_block_plan_reads_all_channels_at_once_when_they_fit():
    config = preprocess_preset("default")
    sfreq, n_times = 1000.0, 3_600_000
    group, step, margin = block_plan(n_times, 128, sfreq, config, 600.0, 512 * 2**20)
    _, down = config.resample_ratio(sfreq)
    assert group == 128  # multiplexed files decode every channel of a span: read it once
    assert step % down == 0 and 2 * margin <= step <= 600_000
    assert 2 * 128 * (step + 2 * margin) * 4 <= 512 * 2**20  # the block filtered and the one read ahead


def test_block_plan_falls_back_to_channel_groups_when_a_short_step_would_not_fit():
    config = preprocess_preset("default")
    group, step, margin = block_plan(3_600_000, 10_000, 1000.0, config, 600.0, 64 * 2**20)
    assert 1 <= group < 10_000
    assert step == 2 * margin  # the shortest step that keeps filtering under twice the kept samples
    assert 2 * group * (step + 2 * margin) * 4 <= 64 * 2**20


def test_read_ahead_gives_the_same_output_for_several_blocks_and_groups():
    recording = _recording(1000.0, 200.0, n_channels=5)
    config = preprocess_preset("default")
    n_out = config.output_length(recording.n_times, 1000.0)
    picks = np.arange(5)
    outputs = []
    for memory_bytes in (1 << 40, 5 * 2 * 4 * 90_000, 1):  # one block; all channels in short blocks; groups of one
        out = np.full(5 * n_out, np.nan, dtype=np.float32)
        assert (
            preprocess_into(recording, picks, config, out, picks * n_out, chunk_seconds=60.0, memory_bytes=memory_bytes)
            == {}
        )
        outputs.append(out)
    for out in outputs[1:]:
        np.testing.assert_allclose(out, outputs[0], atol=2e-4)

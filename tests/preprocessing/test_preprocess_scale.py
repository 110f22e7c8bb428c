"""``PreprocessConfig.scale``: per-channel z-score unchanged, recording and shaft scales keep amplitude contrast."""

import json
from pathlib import Path

import numpy as np
import pybv
import pytest

from sss_viewer.cli import build_parser
from sss_viewer.commands.train import _train_overrides
from sss_viewer.engine.bundle import validate_config
from sss_viewer.engine.config import train_preset
from sss_viewer.io.readers import read_recording
from sss_viewer.io.recording import Recording
from sss_viewer.preprocessing import cache as cache_module
from sss_viewer.preprocessing._streaming import preprocess_into
from sss_viewer.preprocessing.cache import SeriesCache
from sss_viewer.preprocessing.config import SCALES, PreprocessConfig, preprocess_preset
from sss_viewer.preprocessing.filters import (
    FLAT_STD_UV,
    channel_scales,
    filter_block,
    preprocess_channel,
    preprocess_channels,
    shaft_name,
    unusable_reason,
)

DEMO_CONFIG = Path(__file__).resolve().parents[2] / "sss_viewer" / "data" / "demo" / "model" / "config.json"
SFREQ = 500.0


def _noise(n_channels: int, seconds: float = 40.0, seed: int = 0) -> np.ndarray:
    """Brown-ish noise plus 60 Hz mains and an offset, shape (n_channels, n_times), unit-order amplitude."""
    rng = np.random.default_rng(seed)
    n = int(seconds * SFREQ)
    t = np.arange(n) / SFREQ
    walk = rng.standard_normal((n_channels, n)).cumsum(axis=1) * 0.05 + rng.standard_normal((n_channels, n))
    return walk + 0.3 * np.sin(2 * np.pi * 60 * t) + 40.0


def _recording(data: np.ndarray, names: list[str]) -> Recording:
    return Recording(data.astype(np.float32), SFREQ, names, ["seeg"] * len(names), line_freq=60.0)


def _stream(recording: Recording, config: PreprocessConfig, **options) -> tuple[np.ndarray, dict]:
    """``preprocess_into`` all channels, shape (n_channels, n_out)."""
    n_out = config.output_length(recording.n_times, recording.sfreq)
    picks = np.arange(len(recording.ch_names))
    out = np.full(len(picks) * n_out, np.nan, dtype=np.float32)
    unusable = preprocess_into(recording, picks, config, out, picks * n_out, **options)
    return out.reshape(len(picks), n_out), unusable


def _filtered_stds(data: np.ndarray, config: PreprocessConfig) -> np.ndarray:
    """SD (µV) of each channel after filtering, before any normalisation, shape (n_channels,)."""
    return np.array([filter_block(x, SFREQ, config, line_freq=60.0).std() for x in data.astype(np.float32)])


def test_channel_scale_is_bit_identical_to_the_per_channel_zscore_before_the_option():
    data = _noise(3) * np.array([[1.0], [4.0], [0.2]])
    recording = _recording(data, ["LA1", "LA2", "LA3"])
    config = preprocess_preset("default")
    assert config.scale == "channel"
    streamed, unusable = _stream(recording, config, chunk_seconds=1e6)  # one chunk: the old moments are one np.mean
    assert unusable == {}
    reference, _ = preprocess_channels(recording.data, SFREQ, config, recording.ch_names, line_freq=60.0)
    for j, x in enumerate(recording.data):
        y = filter_block(x, SFREQ, config, line_freq=60.0)
        # preprocess_channel before the option: (y - mean) / std with numpy's own moments
        old_whole = ((y - y.mean()) / y.std()).astype(np.float32)
        # preprocess_into before the option: float32 output, Chan-merged moments of one chunk, float64 arithmetic
        n, mean_b = len(y), float(np.mean(y))
        m2 = float(np.sum((y - mean_b) ** 2))
        mean = 0.0 + (mean_b - 0.0) * n / n
        std = (m2 / n) ** 0.5
        old_stream = ((y.astype(np.float32).astype(np.float64) - mean) / std).astype(np.float32)
        assert np.array_equal(preprocess_channel(x, SFREQ, config, line_freq=60.0), old_whole)
        assert np.array_equal(reference[j], old_whole)
        assert np.array_equal(streamed[j], old_stream)


@pytest.mark.parametrize("stream", [False, True])
def test_recording_scale_keeps_amplitude_ratios_and_puts_the_median_channel_at_unit_sd(stream):
    base = _noise(4, seed=1)
    data = np.vstack([base[0], base[1], 0.5 * base[2], 2.0 * base[3], 10.0 * base[0]])
    recording = _recording(data, ["LA1", "LA2", "LB1", "LB2", "LC1"])
    config = preprocess_preset("default", scale="recording")
    if stream:
        y, unusable = _stream(recording, config, chunk_seconds=15.0, memory_bytes=1)  # chunks, groups of one channel
    else:
        y, unusable = preprocess_channels(recording.data, SFREQ, config, recording.ch_names, line_freq=60.0)
    assert unusable == {}
    sds = y.astype(np.float64).std(axis=1)
    assert sds[4] / sds[0] == pytest.approx(10.0, rel=1e-4)  # the same signal at 10x stays at 10x
    assert sds[3] / sds[0] == pytest.approx(2.0, rel=0.1)  # independent noise at twice the amplitude
    assert np.median(sds) == pytest.approx(1.0, rel=1e-4)
    assert np.abs(y.mean(axis=1)).max() < 1e-3
    channel = preprocess_preset("default")
    per_channel, _ = preprocess_channels(recording.data, SFREQ, channel, recording.ch_names, line_freq=60.0)
    assert per_channel.std(axis=1) == pytest.approx(np.ones(5), rel=1e-4)  # what the channel scale makes of them


def test_unusable_channels_do_not_enter_the_recording_scale():
    good = _noise(3, seed=2) * np.array([[1.0], [3.0], [9.0]])
    config = preprocess_preset("default", scale="recording")
    alone, _ = _stream(_recording(good, ["A1", "A2", "A3"]), config)
    bad = np.vstack([good, np.full((2, good.shape[1]), 7.0), 1e4 * _noise(1, seed=3)])
    bad[5, 100] = np.nan
    with_bad, unusable = _stream(_recording(bad, ["A1", "A2", "A3", "A4", "A5", "A6"]), config)
    assert unusable == {3: "flat signal", 4: "flat signal", 5: "1 NaN/inf samples"}
    np.testing.assert_array_equal(with_bad[:3], alone)  # two flat channels would halve the median, a huge one raise it


@pytest.mark.parametrize(
    ("n_nonfinite", "raw_std", "reason"),
    [
        (0, 0.0, "flat signal"),
        (0, FLAT_STD_UV, "flat signal"),  # the threshold itself is flat
        (0, np.nan, "flat signal"),  # an SD that could not be taken (empty channel) is flat, not usable
        (3, 0.0, "3 NaN/inf samples"),  # NaN/inf wins over flat
        (np.int64(1), np.nan, "1 NaN/inf samples"),
        (0, 2 * FLAT_STD_UV, None),
        (0, 25.0, None),
    ],
)
def test_unusable_reason_is_the_one_rule(n_nonfinite, raw_std, reason):
    assert unusable_reason(n_nonfinite, raw_std) == reason


@pytest.mark.parametrize("stream", [False, True])
def test_shaft_scale_per_shaft_and_the_recordings_for_small_shafts(stream):
    base = _noise(10, seed=4)
    amplitude = np.array([1, 1, 1, 1, 5, 5, 5, 5, 20, 20], dtype=float)
    data = base * amplitude[:, None]
    names = ["POL LA1", "POL LA2", "POL LA3", "POL LA4", "LB'1", "LB'2", "LB'3", "LB'4", "C1", "C2"]
    recording = _recording(data, names)
    config = preprocess_preset("default", scale="shaft")
    if stream:
        y, unusable = _stream(recording, config, chunk_seconds=15.0, memory_bytes=1)
    else:
        y, unusable = preprocess_channels(recording.data, SFREQ, config, names, line_freq=60.0)
    assert unusable == {}
    sds = y.astype(np.float64).std(axis=1)
    raw = _filtered_stds(recording.data, config)
    assert sds[:4] == pytest.approx(raw[:4] / np.median(raw[:4]), rel=1e-4)
    assert sds[4:8] == pytest.approx(raw[4:8] / np.median(raw[4:8]), rel=1e-4)
    assert np.median(sds[:4]) == pytest.approx(1.0, rel=1e-4) and np.median(sds[4:8]) == pytest.approx(1.0, rel=1e-4)
    # shaft C has 2 < 3 channels: the recording's scale (median of all ten, ≈ 5), so it stays at ≈ 4
    assert sds[8:] == pytest.approx(raw[8:] / np.median(raw), rel=1e-4)
    assert sds[8:].min() > 3.0


def test_shaft_names_and_scales_of_a_toy_montage():
    names = ("LA1", "POL LA12", "A'3", "EEG G11-Ref", "G", "RH_2")
    assert [shaft_name(c) for c in names] == ["LA", "LA", "A'", "G", "G", "RH"]
    stds = np.array([1.0, 2.0, 3.0, 100.0, 10.0, 20.0, 30.0, 7.0])
    usable = np.array([True, True, True, False, True, True, True, True])
    names = ["A1", "A2", "A3", "A4", "B1", "B2", "B3", "C1"]
    assert channel_scales(stds, usable, names, "channel") == pytest.approx(stds)
    assert channel_scales(stds, usable, names, "recording") == pytest.approx(np.full(8, 7.0))  # median of 7 usable
    assert channel_scales(stds, usable, names, "shaft") == pytest.approx([2, 2, 2, 2, 20, 20, 20, 7])
    assert channel_scales(np.zeros(2), np.zeros(2, bool), ["A1", "A2"], "recording") == pytest.approx([1.0, 1.0])


def test_zscore_false_means_no_normalisation_whatever_the_scale():
    recording = _recording(_noise(3, seed=5) * np.array([[1.0], [2.0], [3.0]]), ["A1", "A2", "A3"])
    raw, _ = _stream(recording, preprocess_preset("default", zscore=False))
    for scale in SCALES:
        y, _ = _stream(recording, preprocess_preset("default", zscore=False, scale=scale))
        np.testing.assert_array_equal(y, raw)
    assert abs(float(raw.mean()) - 0.0) < 5.0 and raw[2].std() > 2.5 * raw[0].std()  # µV, not normalised


def _write_vhdr(folder: Path, data: np.ndarray, names: list[str]) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    pybv.write_brainvision(
        data=data,
        sfreq=SFREQ,
        ch_names=names,
        fname_base="sub-01_run-01_ieeg",
        folder_out=folder,
        fmt="binary_float32",
        unit="µV",
    )
    return folder / "sub-01_run-01_ieeg.vhdr"


def test_cache_and_in_memory_paths_agree_and_each_scale_has_its_own_key(tmp_path):
    names = ["LA1", "LA2", "LA3", "LB1", "LB2", "LB3", "C1"]
    data = _noise(7, seed=6) * np.array([1, 2, 3, 10, 10, 30, 5], dtype=float)[:, None]
    recording = read_recording(_write_vhdr(tmp_path / "data", data, names))
    assert recording.is_lazy
    cache = SeriesCache(tmp_path / "cache")
    picks = np.arange(7)
    in_memory = np.asarray(recording.get_data(picks, 0, recording.n_times))
    keys = set()
    for scale in SCALES:
        config = preprocess_preset("default", scale=scale)
        keys.add(cache.key(recording, picks, config))
        entry = cache.load_or_build(recording, picks, config, chunk_seconds=15.0, memory_bytes=1)
        cached = np.vstack([entry.data[o : o + n] for o, n in zip(entry.offsets, entry.lengths, strict=True)])
        reference, _ = preprocess_channels(in_memory, SFREQ, config, recording.ch_names, line_freq=recording.line_freq)
        np.testing.assert_allclose(cached, reference, atol=2e-4)
    assert len(keys) == 3
    # the channel scale's key is the one entries written before the option have: they stay valid
    assert "scale" not in cache_module._config_spec(preprocess_preset("default"))
    assert cache_module._config_spec(preprocess_preset("default", scale="shaft"))["scale"] == "shaft"


def test_bad_scales_raise_naming_the_parameter():
    with pytest.raises(ValueError, match=r"Invalid scale='global': expected one of 'channel', 'recording', 'shaft'"):
        PreprocessConfig(scale="global")
    with pytest.raises(ValueError, match="scale"):
        PreprocessConfig.from_dict({"scale": None})
    with pytest.raises(ValueError, match="scale"):
        channel_scales(np.ones(2), np.ones(2, bool), ["A1", "A2"], "Recording")
    config = json.loads(DEMO_CONFIG.read_text())
    config["preprocess"]["scale"] = "electrode"
    with pytest.raises(ValueError, match=r"'preprocess\.scale' must be one of 'channel', 'recording', 'shaft'"):
        validate_config(config, DEMO_CONFIG)
    x = _noise(1)[0].astype(np.float32)
    with pytest.raises(ValueError, match="scale_uv is required with config.scale='recording'"):
        preprocess_channel(x, SFREQ, preprocess_preset("default", scale="recording"))
    with pytest.raises(ValueError, match=r"Invalid scale_uv=2\.0: config.scale='channel'"):
        preprocess_channel(x, SFREQ, preprocess_preset("default"), scale_uv=2.0)
    with pytest.raises(ValueError, match="Invalid scale_uv=0"):
        preprocess_channel(x, SFREQ, preprocess_preset("default", scale="shaft"), scale_uv=0)


def test_one_channel_with_a_given_scale_matches_the_recording_path():
    data = (_noise(3, seed=7) * np.array([[1.0], [2.0], [6.0]])).astype(np.float32)
    config = preprocess_preset("default", scale="recording")
    reference, _ = preprocess_channels(data, SFREQ, config, ["A1", "A2", "A3"], line_freq=60.0)
    scale = float(np.median(_filtered_stds(data, config)))
    y = preprocess_channel(data[2], SFREQ, config, line_freq=60.0, scale_uv=scale)
    np.testing.assert_array_equal(y, reference[2])


def test_configs_saved_before_the_option_load_as_channel_scale():
    saved = json.loads(DEMO_CONFIG.read_text())
    assert "scale" not in saved["preprocess"]  # the bundled model predates the option
    assert validate_config(saved, DEMO_CONFIG)["preprocess"].scale == "channel"
    old = {k: v for k, v in preprocess_preset("paper").to_dict().items() if k != "scale"}
    assert PreprocessConfig.from_dict(old) == preprocess_preset("paper")
    for scale in SCALES:
        config = preprocess_preset("default", scale=scale)
        assert PreprocessConfig.from_dict(config.to_dict()) == config
        saved["preprocess"] = config.to_dict()
        assert validate_config(saved, DEMO_CONFIG)["preprocess"] == config


def test_train_scale_flag_reaches_the_preset_preprocessing():
    def config(*flags):
        args = build_parser().parse_args(["train", "d", "--out", "m", "--preset", "minirocket", *flags])
        return train_preset(args.preset, **_train_overrides(args))

    assert config().preprocess == train_preset("minirocket").preprocess
    shaft = config("--scale", "shaft", "--window-length", "512")
    assert shaft.preprocess == preprocess_preset("default", scale="shaft") and shaft.window_length == 512
    for scale in SCALES:
        assert config("--scale", scale).preprocess.scale == scale
    with pytest.raises(SystemExit):
        build_parser().parse_args(["train", "d", "--out", "m", "--scale", "global"])

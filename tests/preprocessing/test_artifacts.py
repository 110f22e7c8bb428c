"""Artifact detection before scoring (``sss_viewer.preprocessing.artifacts``) and its use in SSS scoring.

The artifacts are those clinics record: a contact swinging as a ±12.7 mV square wave at 25× its
neighbours, a disconnected flat contact, 50/60 Hz pickup on one contact, a segment clipped at the
amplifier's rail, an electrode pop. Each is planted in a realistic multichannel recording (20 contacts
of 1/f background with rhythmic bursts, interictal spikes on three contacts, a little common mains,
1000 Hz, 60 s) that on its own gets no flag.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pandas as pd
import pytest

from sss_viewer import read_recording
from sss_viewer.engine.bundle import ModelBundle
from sss_viewer.engine.inference import ARTIFACT_COLUMN, aggregate_channels, score_recording
from sss_viewer.io.bonn import load_bonn
from sss_viewer.io.recording import Recording
from sss_viewer.preprocessing.artifacts import (
    REASON_FLAT,
    REASON_SATURATED,
    ArtifactConfig,
    ArtifactReport,
    detect_artifacts,
    detect_recording_artifacts,
)
from sss_viewer.viewer.demo import load_demo
from sss_viewer.viewer.demo_files import DEMO_MODEL_DIR
from tests.fixtures.recordings import SHARED_DATA, toy_recording

SFREQ = 1000.0
DURATION_S = 60.0
N_CHANNELS = 20
PT01 = SHARED_DATA / "ezfragility-pt01" / "pt01_sz1_ecog_m1s_p2s.npz"
BONN = SHARED_DATA / "bonn-epilepsy" / "bonn_sets_ABCDE_int16.npz"


def clinical_like(seed: int = 0, n_channels: int = N_CHANNELS, line_freq: float = 60.0) -> np.ndarray:
    """A clean iEEG-like array, shape (n_channels, 60 000), µV at 1000 Hz.

    1/f background (≈ 100 µV SD, gains 0.5–2× between contacts), waxing and waning 6–12 Hz bursts on
    half of the contacts, sharp interictal spikes (≈ 8× background, 30 ms) on the first three, and a
    common mains residue of 2 µV.
    """
    rng = np.random.default_rng(seed)
    n = int(DURATION_S * SFREQ)
    freqs = np.fft.rfftfreq(n, 1 / SFREQ)
    shape = 1 / np.sqrt(np.maximum(freqs, 0.5))
    shape[freqs > 300] *= np.exp(-(freqs[freqs > 300] - 300) / 50)  # the amplifier's anti-alias roll-off
    size = (n_channels, len(freqs))
    spectrum = (rng.standard_normal(size) + 1j * rng.standard_normal(size)) * shape
    x = np.fft.irfft(spectrum, n=n, axis=1)
    x *= 100.0 / x.std(axis=1, keepdims=True) * rng.uniform(0.5, 2.0, (n_channels, 1))
    t = np.arange(n) / SFREQ
    for ch in range(0, n_channels, 2):
        f = rng.uniform(6, 12)
        envelope = np.clip(np.sin(2 * np.pi * t / rng.uniform(3, 8) + rng.uniform(0, 6)), 0, None)
        x[ch] += 80 * envelope * np.sin(2 * np.pi * f * t)
    spike = np.hanning(30) * 800
    for ch in range(3):
        for start in rng.integers(0, n - 30, size=40):
            x[ch, start : start + 30] += spike
    x += 2.0 * np.sin(2 * np.pi * line_freq * t + 0.3)
    return x.astype(np.float32)


def names(n: int = N_CHANNELS) -> list[str]:
    return [f"{shaft}{k}" for shaft in ("LA", "LH", "RA", "RH") for k in range(1, n // 4 + 1)][:n]


def as_recording(data: np.ndarray, line_freq: float | None = 60.0) -> Recording:
    n = len(data)
    return Recording(
        data=data,
        sfreq=SFREQ,
        ch_names=names(n),
        ch_types=["seeg"] * n,
        subject="art",
        run="01",
        line_freq=line_freq,
        soz=np.arange(n) < 3,
    )


def reasons_of(report: ArtifactReport) -> dict[str, str]:
    return report.channel_reasons()


# --- no false flags ----------------------------------------------------------------------------


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("line_freq", [None, 60.0])
def test_clean_recording_gets_no_flag(seed, line_freq):
    data = clinical_like(seed)
    report = detect_artifacts(data, SFREQ, names(), line_freq=line_freq)
    assert report.channels.empty and report.segments.empty and not report.flagged
    assert list(report.measures["channel"]) == names()
    assert report.measures["amplitude_ratio"].between(0.3, 3).all()


def test_toy_recordings_of_the_engine_tests_get_no_flag():
    for seed in range(4):
        rec = toy_recording(f"toy{seed}", seed, n_channels=16, duration_s=60.0)
        report = detect_recording_artifacts(rec)
        assert not report.flagged, report.segments


def test_the_demo_recording_gets_no_flag(tmp_path):
    rec = load_demo(tmp_path)  # lazy BrainVision: 38 SEEG contacts, ≈ 199 s at 999.41 Hz, a seizure at ≈ 56 s
    report = detect_recording_artifacts(rec, block_samples=2_000_000)
    assert not report.flagged, (report.channels, report.segments)
    assert len(report.measures) == 38


@pytest.mark.realdata
@pytest.mark.skipif(not PT01.is_file(), reason=f"real data not present: {PT01} (see ../shared/data)")
def test_real_pt01_seizure_onset_is_not_flagged():
    """84 ECoG channels, −1…+2 s around seizure onset: the SOZ's seizure amplitude is not an artifact."""
    rec = read_recording(PT01)
    report = detect_recording_artifacts(rec)
    assert report.channels.empty, report.channels
    assert report.segments.empty, report.segments
    measures = report.measures.set_index("channel")
    # the largest contact is SOZ contact AD2, high but well below the amplitude factor
    assert measures["amplitude_ratio"].idxmax() == "AD2"
    assert 5 < measures.loc["AD2", "amplitude_ratio"] < ArtifactConfig().amplitude_factor


@pytest.mark.realdata
@pytest.mark.skipif(not BONN.is_file(), reason=f"the Bonn data set is not at {BONN}")
def test_real_bonn_segments_flag_only_their_clipping_at_the_adc_limit():
    """All 500 Bonn segments (12-bit, 173.61 Hz, one channel each): the only flags are seconds clipped at 2047."""
    flagged = {}
    for rec in load_bonn(BONN, sets=("A", "B", "C", "D", "E"), soz_sets=()):
        report = detect_recording_artifacts(rec)
        assert report.channels.empty, (rec.subject, report.channels)
        if report.flagged:
            assert (report.segments["reason"] == REASON_SATURATED).all()
            flagged[rec.subject] = len(report.segments)
            assert rec.data.max() == 2047.0  # the 12-bit converter's top code
    assert flagged == {"F009": 8, "S065": 3}


# --- artifacts as clinics record them ----------------------------------------------------------


def square_wave_contact(seed: int = 0, channel: int = 8) -> tuple[np.ndarray, float]:
    """The clean recording with one contact a ±A square wave at 25× its neighbours' SD; A is returned (µV)."""
    data = clinical_like(seed)
    neighbours = np.median(np.delete(data, channel, axis=0).std(axis=1))
    amplitude = 25 * neighbours
    t = np.arange(data.shape[1]) / SFREQ
    data[channel] = np.where(np.sin(2 * np.pi * 1.3 * t) >= 0, amplitude, -amplitude).astype(np.float32)
    return data, amplitude


def test_square_wave_contact_at_25x_is_flagged_for_its_amplitude():
    data, _ = square_wave_contact()
    report = detect_artifacts(data, SFREQ, names(), line_freq=60.0)
    assert list(report.channels["channel"]) == [names()[8]]
    reason = reasons_of(report)[names()[8]]
    assert reason.startswith("amplitude ") and "× the recording's median" in reason
    ratio = report.measures.set_index("channel").loc[names()[8], "amplitude_ratio"]
    assert 18 < ratio < 35
    # the segments of the other contacts stay clean
    assert set(report.segments["channel"]) <= {names()[8]}


def test_disconnected_flat_contact_is_flagged_flat():
    data = clinical_like(1)
    rng = np.random.default_rng(5)
    data[4] = (rng.standard_normal(data.shape[1]) * 0.5).astype(np.float32)  # the amplifier's own noise, 0.5 µV
    data[11] = 3.0  # a contact held at a constant level
    report = detect_artifacts(data, SFREQ, names(), line_freq=60.0)
    assert reasons_of(report) == {names()[4]: REASON_FLAT, names()[11]: REASON_FLAT}
    for name in (names()[4], names()[11]):
        spans = report.segments[report.segments["channel"] == name]
        rows = list(spans[["start_s", "end_s", "reason"]].itertuples(index=False, name=None))
        assert rows == [(0.0, DURATION_S, REASON_FLAT)]


def test_contact_disconnected_for_the_second_half_is_flagged_with_the_share():
    data = clinical_like(1)
    data[6, 24_000:] = data[6, 24_000]  # from 24 s on the contact holds one value
    report = detect_artifacts(data, SFREQ, names(), line_freq=60.0)
    assert reasons_of(report) == {names()[6]: f"{REASON_FLAT} 60% of the time"}


@pytest.mark.parametrize(("pickup_hz", "line_freq"), [(60.0, 60.0), (60.0, None), (50.0, 50.0), (50.0, None)])
def test_mains_pickup_on_one_contact(pickup_hz, line_freq):
    data = clinical_like(2, line_freq=pickup_hz)
    t = np.arange(data.shape[1]) / SFREQ
    # 400 µV of mains on one contact, 0.1 Hz off its nominal value as mains drifts
    data[13] += (400.0 * np.sin(2 * np.pi * (pickup_hz + 0.1) * t)).astype(np.float32)
    report = detect_artifacts(data, SFREQ, names(), line_freq=line_freq)
    assert list(report.channels["channel"]) == [names()[13]]
    reason = reasons_of(report)[names()[13]]
    assert reason.startswith(f"{pickup_hz:g} Hz pickup ") and reason.endswith("× the recording's median")
    assert report.segments.empty  # pickup is a channel-level finding


def test_pickup_at_the_other_mains_frequency_is_not_looked_for_when_the_recording_says():
    data = clinical_like(2, line_freq=50.0)
    t = np.arange(data.shape[1]) / SFREQ
    data[13] += (400.0 * np.sin(2 * np.pi * 50.0 * t)).astype(np.float32)
    assert detect_artifacts(data, SFREQ, names(), line_freq=60.0).channels.empty
    assert not detect_artifacts(data, SFREQ, names(), line_freq=50.0).channels.empty


def test_broadband_fast_activity_is_not_read_as_mains():
    """Ictal fast activity (40–90 Hz, 6× the background) raises a contact's 60-Hz power without a narrow peak."""
    data = clinical_like(3)
    rng = np.random.default_rng(9)
    n = data.shape[1]
    freqs = np.fft.rfftfreq(n, 1 / SFREQ)
    spectrum = rng.standard_normal(len(freqs)) + 1j * rng.standard_normal(len(freqs))
    spectrum[(freqs < 40) | (freqs > 90)] = 0
    fast = np.fft.irfft(spectrum, n=n)
    data[2] += (fast / fast.std() * 600).astype(np.float32)
    report = detect_artifacts(data, SFREQ, names(), line_freq=None)
    assert report.channels.empty and report.segments.empty
    assert report.measures.set_index("channel").loc[names()[2], "line_ratio"] > ArtifactConfig().line_factor
    # it is the narrow-peak test that keeps it: without it the contact would read as pickup
    unpeaked = detect_artifacts(data, SFREQ, names(), line_freq=None, config=ArtifactConfig(line_prominence=1.0))
    assert list(unpeaked.channels["channel"]) == [names()[2]]


def saturated_segment(seed: int = 0, channel: int = 5) -> np.ndarray:
    """The clean recording with one contact driven into its amplifier's rail for 2 s (20.5–22.5 s)."""
    data = clinical_like(seed)
    rail = np.float32(30 * data[channel].std())
    data[channel, 20_500:22_500] += 100 * rail
    data[channel] = np.clip(data[channel], -rail, rail)
    return data


def test_saturated_segment_flags_only_its_seconds():
    data = saturated_segment()
    report = detect_artifacts(data, SFREQ, names(), line_freq=60.0)
    assert report.channels.empty  # 2 s of 60 do not make the contact bad
    spans = report.segments
    assert list(spans.itertuples(index=False, name=None)) == [(names()[5], 20.0, 23.0, REASON_SATURATED)]
    windows = pd.DataFrame(
        {
            "channel": [names()[5]] * 4 + [names()[6]],
            "start_s": [15.904, 16.9, 23.0, 21.0, 21.0],
            "end_s": [20.0, 20.996, 27.1, 25.1, 25.1],
        }
    )
    flags = report.window_flags(windows["channel"], windows["start_s"], windows["end_s"])
    assert list(flags) == ["", REASON_SATURATED, "", REASON_SATURATED, ""]


def test_contact_saturated_most_of_the_time_is_flagged_with_the_share():
    data = clinical_like(0)
    rail = np.float32(1.2 * data[7].std())
    data[7] = np.clip(data[7], -rail, rail)  # a gain set far too high: every large wave clips
    report = detect_artifacts(data, SFREQ, names(), line_freq=60.0)
    reason = reasons_of(report)[names()[7]]
    assert reason.startswith("saturated ") and reason.endswith("% of the time")
    share = float(reason.split()[1].rstrip("%")) / 100
    clipped = np.mean(np.abs(data[7]) == rail)
    assert share == pytest.approx(clipped, abs=0.01)


def test_electrode_pop_is_a_jump_in_its_second_only():
    data = clinical_like(1)
    t = np.arange(data.shape[1] - 30_500) / SFREQ
    data[9, 30_500:] += (4000.0 * np.exp(-t / 0.3)).astype(np.float32)  # a 4 mV step decaying over 0.3 s
    report = detect_artifacts(data, SFREQ, names(), line_freq=60.0)
    assert report.channels.empty
    assert len(report.segments) == 1
    row = report.segments.iloc[0]
    assert (row["channel"], row["start_s"], row["end_s"]) == (names()[9], 30.0, 31.0)
    assert row["reason"].startswith("jump")


def test_missing_samples_are_flagged():
    data = clinical_like(0)
    data[3, 10_200:10_300] = np.nan
    report = detect_artifacts(data, SFREQ, names(), line_freq=60.0)
    assert report.channels.empty
    rows = list(report.segments.itertuples(index=False, name=None))
    assert rows == [(names()[3], 10.0, 11.0, "missing samples (NaN/inf)")]


def test_several_artifacts_at_once_each_flagged_for_its_own_reason():
    data, _ = square_wave_contact(channel=8)
    rng = np.random.default_rng(5)
    data[4] = (rng.standard_normal(data.shape[1]) * 0.5).astype(np.float32)
    t = np.arange(data.shape[1]) / SFREQ
    data[13] += (400.0 * np.sin(2 * np.pi * 60.0 * t)).astype(np.float32)
    report = detect_artifacts(data, SFREQ, names(), line_freq=None)
    reasons = reasons_of(report)
    assert set(reasons) == {names()[4], names()[8], names()[13]}
    assert reasons[names()[4]] == REASON_FLAT
    assert reasons[names()[8]].startswith("amplitude")
    assert reasons[names()[13]].startswith("60 Hz pickup")


# --- the report --------------------------------------------------------------------------------


def test_window_flags_semantics():
    report = ArtifactReport(
        channels=pd.DataFrame({"channel": ["B"], "reason": ["flat (disconnected?)"]}),
        segments=pd.DataFrame(
            {
                "channel": ["A", "A", "B"],
                "start_s": [10.0, 12.0, 0.0],
                "end_s": [12.0, 13.0, 60.0],
                "reason": ["saturated", "jump", "flat (disconnected?)"],
            }
        ),
    )
    channel = np.array(["A", "A", "A", "A", "A", "A", "B", "C"], dtype=object)
    start = np.array([6.0, 9.0, 12.0, 11.0, 13.0, 14.0, 50.0, 11.0])
    end = np.array([10.0, 11.0, 14.0, 15.0, 17.0, 18.0, 54.0, 12.0])
    flags = report.window_flags(channel, start, end)
    assert flags.shape == (8,)
    # touching a span is clean; the first span overlapped names it; a flagged channel names all its
    # windows; a channel the report does not know is clean
    assert list(flags) == ["", "saturated", "jump", "saturated", "", "", "flat (disconnected?)", ""]
    assert report.window_flags(np.array([], dtype=object), np.array([]), np.array([])).shape == (0,)
    with pytest.raises(ValueError, match="one length"):
        report.window_flags(channel, start[:3], end)


def test_reading_in_blocks_of_channels_gives_the_same_report():
    data = saturated_segment()
    data[4] = 3.0
    rec = as_recording(data)
    whole = detect_artifacts(data, SFREQ, names(), line_freq=60.0)
    blocks = detect_recording_artifacts(rec, block_samples=3 * data.shape[1])  # 7 blocks of ≤ 3 channels
    pd.testing.assert_frame_equal(whole.channels, blocks.channels)
    pd.testing.assert_frame_equal(whole.segments, blocks.segments)
    pd.testing.assert_frame_equal(whole.measures, blocks.measures)


def test_recording_picks_default_to_good_ieeg_channels():
    data, _ = square_wave_contact(channel=8)
    rec = dataclasses.replace(as_recording(data), bads=[names()[8]])
    report = detect_recording_artifacts(rec)
    assert report.channels.empty and names()[8] not in set(report.measures["channel"])


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("segment_s", 0.0),
        ("amplitude_factor", 0.5),
        ("segment_amplitude_factor", 1.0),
        ("flat_factor", 1.5),
        ("flat_run_s", -1.0),
        ("clip_run_s", 0.0),
        ("jump_factor", float("nan")),
        ("line_factor", "10"),
        ("line_prominence", 0.5),
        ("channel_fraction", 0.0),
    ],
)
def test_bad_config_values_are_refused_by_name(field, value):
    with pytest.raises(ValueError, match=field):
        ArtifactConfig(**{field: value})


def test_bad_inputs_are_refused_by_name():
    data = clinical_like(0, n_channels=4)
    with pytest.raises(ValueError, match="ch_names"):
        detect_artifacts(data, SFREQ, ["a", "b"])
    with pytest.raises(ValueError, match="sfreq"):
        detect_artifacts(data, 0.0, names(4))
    with pytest.raises(ValueError, match="line_freq"):
        detect_artifacts(data, SFREQ, names(4), line_freq=-50.0)
    with pytest.raises(ValueError, match="data"):
        detect_artifacts(data[0], SFREQ, names(1))
    with pytest.raises(ValueError, match="block_samples"):
        detect_recording_artifacts(as_recording(data), block_samples=0)


def test_thresholds_come_from_the_config():
    data = clinical_like(1)
    t = np.arange(data.shape[1] - 30_500) / SFREQ
    data[9, 30_500:] += (4000.0 * np.exp(-t / 0.3)).astype(np.float32)
    strict = detect_artifacts(data, SFREQ, names(), line_freq=60.0)
    lenient = detect_artifacts(data, SFREQ, names(), line_freq=60.0, config=ArtifactConfig(jump_factor=1000.0))
    assert len(strict.segments) == 1 and lenient.segments.empty


# --- in SSS scoring ----------------------------------------------------------------------------


def test_aggregate_channels_leaves_excluded_windows_out():
    windows = pd.DataFrame(
        {
            "channel": ["A", "A", "B", "B", "C"],
            "p_cal": [0.2, 0.9, 0.5, 0.7, 0.99],
            "p0": [0.1, 0.8, 0.4, 0.5, 0.9],
            "p1": [0.3, 0.95, 0.6, 0.7, 1.0],
        }
    )
    table = aggregate_channels(windows, exclude=np.array([False, True, False, False, True]))
    assert list(table["channel"]) == ["B", "A", "C"]
    assert table["score"].iloc[:2].tolist() == pytest.approx([0.6, 0.2])
    assert np.isnan(table["score"].iloc[2]) and np.isnan(table["upper"].iloc[2])
    assert table["n_windows"].tolist() == [2, 1, 0] and table["rank"].tolist() == [1, 2, 3]
    unchanged = aggregate_channels(windows)
    assert list(unchanged["channel"]) == ["C", "B", "A"] and unchanged["n_windows"].tolist() == [1, 2, 2]
    with pytest.raises(ValueError, match="exclude"):
        aggregate_channels(windows, exclude=np.zeros(3, dtype=bool))


@pytest.fixture(scope="module")
def demo_bundle():
    bundle = ModelBundle.load(DEMO_MODEL_DIR)
    assert bundle.window_length == 1024 and bundle.preprocess.target_sfreq == 250.0  # 4.1-s windows
    return bundle


@pytest.fixture(scope="module")
def artifact_recording() -> Recording:
    """20 contacts with a ±A square-wave contact (LH4, index 8) and a 2-s saturation on LH1 (index 5)."""
    data, _ = square_wave_contact(channel=8)
    clean = saturated_segment()
    data[5] = clean[5]
    return as_recording(data)


@pytest.fixture(scope="module")
def scored(demo_bundle, artifact_recording):
    return score_recording(demo_bundle, artifact_recording, device="cpu", progress=False)


def test_sss_scoring_leaves_the_square_wave_contact_out_of_the_ranking(scored, artifact_recording):
    square, clipped = artifact_recording.ch_names[8], artifact_recording.ch_names[5]
    channels = scored.channels.set_index("channel")
    assert len(channels) == N_CHANNELS
    assert scored.channels["channel"].iloc[0] != square
    assert channels.loc[square, "rank"] == N_CHANNELS  # ranked last, with no score
    assert np.isnan(channels.loc[square, "score"]) and channels.loc[square, "n_windows"] == 0
    assert channels.loc[square, ARTIFACT_COLUMN].startswith("amplitude")
    assert list(scored.artifacts["channel"]) == [square]
    assert scored.artifacts["reason"].iloc[0] == channels.loc[square, ARTIFACT_COLUMN]
    others = channels.drop(index=square)
    assert (others[ARTIFACT_COLUMN] == "").all() and np.isfinite(others["score"]).all()
    # the clipped contact keeps its clean windows; those over 20–23 s are out
    windows = scored.windows
    assert (windows.loc[windows["channel"] == square, ARTIFACT_COLUMN] != "").all()
    mine = windows[windows["channel"] == clipped]
    over = (mine["start_s"] < 23.0) & (mine["end_s"] > 20.0)
    assert over.any() and (mine.loc[over, ARTIFACT_COLUMN] == REASON_SATURATED).all()
    assert (mine.loc[~over, ARTIFACT_COLUMN] == "").all()
    assert channels.loc[clipped, "n_windows"] == (~over).sum()
    assert channels.loc[clipped, "score"] == pytest.approx(mine.loc[~over, "p_cal"].mean())
    assert (windows.loc[~windows["channel"].isin([square, clipped]), ARTIFACT_COLUMN] == "").all()


def test_sss_scoring_keeps_every_window_when_asked(demo_bundle, artifact_recording, scored):
    kept = score_recording(demo_bundle, artifact_recording, device="cpu", progress=False, artifacts=False)
    assert kept.artifacts is None
    assert (kept.windows[ARTIFACT_COLUMN] == "").all() and (kept.channels[ARTIFACT_COLUMN] == "").all()
    assert np.isfinite(kept.channels["score"]).all()
    per_channel = kept.windows.groupby("channel").size()
    assert (kept.channels.set_index("channel")["n_windows"].sort_index() == per_channel.sort_index()).all()
    # the same windows and probabilities; only the flags and the ranking differ
    columns = ["channel", "start_s", "end_s", "p_raw", "p_cal", "p0", "p1"]
    pd.testing.assert_frame_equal(kept.windows[columns], scored.windows[columns])


def test_page_first_scoring_gives_the_same_flags_and_ranking(demo_bundle, artifact_recording, scored):
    partial = []
    first = [artifact_recording.ch_names[i] for i in (5, 8, 12)]
    result = score_recording(
        demo_bundle, artifact_recording, device="cpu", progress=False, first_channels=first, on_partial=partial.append
    )
    assert len(partial) == 1 and set(partial[0].channels["channel"]) == set(first)
    assert list(partial[0].artifacts["channel"]) == [artifact_recording.ch_names[8]]
    pd.testing.assert_frame_equal(result.windows, scored.windows)
    pd.testing.assert_frame_equal(result.channels, scored.channels)
    pd.testing.assert_frame_equal(result.artifacts, scored.artifacts)


def test_the_finer_heat_map_windows_carry_the_flags_too(demo_bundle, artifact_recording, scored):
    fine = score_recording(demo_bundle, artifact_recording, device="cpu", progress=False, heat_stride=64)
    heat = fine.heat_windows
    assert heat is not None and len(heat) > len(fine.windows)
    report = detect_recording_artifacts(artifact_recording)
    expected = report.window_flags(heat["channel"].to_numpy(), heat["start_s"].to_numpy(), heat["end_s"].to_numpy())
    assert list(heat[ARTIFACT_COLUMN]) == list(expected)
    assert (heat[ARTIFACT_COLUMN] != "").any() and (heat[ARTIFACT_COLUMN] == "").any()
    pd.testing.assert_frame_equal(fine.channels, scored.channels)

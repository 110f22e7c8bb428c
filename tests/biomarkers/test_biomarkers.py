"""The scorer contract, the floors, the consensus and ``score --scorer``: training-free rankings with SSS's outputs."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from sss_viewer import Recording
from sss_viewer.biomarkers import DEFAULT_SCORER, FLOORS, SCORERS, get_scorer, is_marker, score_with, scorer_names
from sss_viewer.biomarkers._consensus import ConsensusScorer, percentile_ranks
from sss_viewer.biomarkers._floors import window_line_length, window_robust_amplitude, window_variance
from sss_viewer.biomarkers.base import WindowGrid, rank_channels
from sss_viewer.cli import main


def noisy_recording(n_channels=12, duration_s=20.0, sfreq=500.0, gains=None, seed=0) -> Recording:
    """Pink-ish noise per channel, channel ``i`` scaled by ``gains[i]`` (µV), SOZ = the channels with gain > 1."""
    rng = np.random.default_rng(seed)
    n = int(duration_s * sfreq)
    white = rng.standard_normal((n_channels, n))
    data = np.cumsum(white, axis=1)
    data -= np.cumsum(data, axis=1) / np.arange(1, n + 1)  # remove the random walk's drift, keep the 1/f-ish shape
    data = data / data.std(axis=1, keepdims=True) * 30.0 + rng.standard_normal((n_channels, n)) * 5.0
    gains = np.ones(n_channels) if gains is None else np.asarray(gains, dtype=float)
    data *= gains[:, None]
    return Recording(
        data=data.astype(np.float32),
        sfreq=sfreq,
        ch_names=[f"A{i + 1}" for i in range(n_channels)],
        ch_types=["seeg"] * n_channels,
        soz=gains > 1,
        line_freq=50.0,
    )


def test_window_grid_covers_the_recording_and_short_clips():
    grid = WindowGrid.over(10_250, 1000.0, 2.0, 1.0)
    assert grid.length == 2000 and grid.starts[0] == 0
    assert grid.starts[-1] + grid.length == 10_250  # the last window ends at the end
    assert np.all(np.diff(grid.starts) <= 1000)
    short = WindowGrid.over(900, 1000.0, 2.0, 1.0)
    assert short.length == 900 and list(short.starts) == [0]
    np.testing.assert_allclose(grid.end_s - grid.start_s, 2.0)


def test_floor_values_are_the_one_line_statistics():
    rng = np.random.default_rng(1)
    data = (rng.standard_normal((3, 5000)) * [[1.0], [4.0], [9.0]] + 100.0).astype(np.float32)
    grid = WindowGrid.over(5000, 250.0, 2.0, 1.0)
    seg = np.stack([data[:, s : s + grid.length] for s in grid.starts], axis=1).astype(np.float64)
    np.testing.assert_allclose(window_variance(data, grid), seg.var(axis=-1), rtol=1e-6)
    mad = np.median(np.abs(seg - np.median(seg, axis=-1, keepdims=True)), axis=-1)
    np.testing.assert_allclose(window_robust_amplitude(data, grid), 1.4826 * mad, rtol=1e-6)  # 250 Hz: every sample
    fast = WindowGrid.over(5000, 1000.0, 2.0, 1.0)  # at 1 kHz every 4th sample: the same robust SD within a few %
    every4 = np.stack([data[:, s : s + fast.length : 4] for s in fast.starts], axis=1).astype(np.float64)
    mad4 = np.median(np.abs(every4 - np.median(every4, axis=-1, keepdims=True)), axis=-1)
    np.testing.assert_allclose(window_robust_amplitude(data, fast), 1.4826 * mad4, rtol=1e-6)
    np.testing.assert_allclose(window_robust_amplitude(data, fast).mean(axis=1), [1.0, 4.0, 9.0], rtol=0.1)
    ll = np.abs(np.diff(seg, axis=-1)).mean(axis=-1) * 250.0
    np.testing.assert_allclose(window_line_length(data, grid), ll, rtol=1e-6)


def test_marker_scores_have_the_engines_tables_and_rank_by_value():
    rec = noisy_recording(gains=[1, 1, 3, 1, 1, 2, 1, 1, 1, 1, 1, 1])
    scores = get_scorer("variance").score(rec)
    ch = scores.channels
    assert list(ch["channel"][:2]) == ["A3", "A6"]  # the loud contacts first
    assert ch["score"].iloc[0] == pytest.approx(1.0) and ch["score"].between(0, 1).all()
    np.testing.assert_allclose(ch["score"], ch["value"] / ch["value"].max())
    assert list(ch["rank"]) == list(range(1, 13))
    assert set(ch["label"].iloc[:2]) == {1} and ch["label"].sum() == 2
    assert scores.scorer == "variance" and scores.scorer_info["kind"] == "floor"
    w = scores.windows
    assert {"channel", "start_s", "end_s", "p_raw", "p_cal", "p0", "p1", "artifact"} <= set(w)
    assert w["p_cal"].between(0, 1).all() and w["p0"].isna().all()
    assert w["end_s"].max() == pytest.approx(rec.duration_s)
    # the heat map of a marker is the engine's own
    values, edges = scores.heatmap(bin_s=1.0)
    assert values.shape == (12, 20) and np.nanmax(values) <= 1.0


def test_a_square_wave_contact_at_25x_is_flagged_and_never_first_unflagged():
    rec = noisy_recording(n_channels=16, duration_s=30.0, sfreq=1000.0)
    t = np.arange(rec.n_times) / rec.sfreq
    square = np.sign(np.sin(2 * np.pi * 1.0 * t)) * 25 * float(np.std(rec.data[1]))
    rec.data[4] = square.astype(np.float32)
    for name in ("variance", "line_length", "amplitude"):
        ch = get_scorer(name).score(rec).channels
        row = ch[ch["channel"] == "A5"].iloc[0]
        assert row["artifact"], f"{name}: the square wave carries no flag"
        first = ch.iloc[0]
        assert first["channel"] != "A5" or first["artifact"], name
    kept = get_scorer("variance", artifacts=False).score(rec).channels
    assert kept.iloc[0]["channel"] == "A5" and kept.iloc[0]["artifact"]  # kept on request, still flagged


def test_consensus_is_the_mean_percentile_rank_of_its_components():
    rec = noisy_recording(gains=[1, 1, 3, 1, 1, 2, 1, 1, 1.5, 1, 1, 1], seed=4)
    parts = ("amplitude", "line_length", "variance")
    consensus = ConsensusScorer(components=parts).score(rec).channels.set_index("channel")
    expected = np.mean(
        [
            percentile_ranks(get_scorer(p).score(rec).channels.set_index("channel").loc[rec.ch_names, "value"])
            for p in parts
        ],
        axis=0,
    )
    np.testing.assert_allclose(consensus.loc[rec.ch_names, "value"], expected)
    assert consensus["score"].max() == pytest.approx(1.0)


def test_percentile_ranks_ties_and_nan():
    r = percentile_ranks(np.array([3.0, 1.0, 1.0, np.nan, 5.0]))
    np.testing.assert_allclose(r[[0, 1, 2, 4]], [3 / 4, 1.5 / 4, 1.5 / 4, 1.0])
    assert np.isnan(r[3])


def test_rank_channels_puts_unscored_channels_last():
    table = pd.DataFrame({"channel": ["b", "a", "c"], "score": [0.2, np.nan, 0.9], "n_windows": [3, 0, 3]})
    ranked = rank_channels(table)
    assert list(ranked["channel"]) == ["c", "b", "a"] and list(ranked["rank"]) == [1, 2, 3]


def test_registry_and_refusals_name_what_is_wrong():
    assert set(FLOORS) <= set(SCORERS) and scorer_names()[0] == "sss"
    assert DEFAULT_SCORER in scorer_names()
    with pytest.raises(ValueError, match="Invalid scorer='nope'"):
        get_scorer("nope")
    with pytest.raises(ValueError, match="window_s"):
        get_scorer("line_length", window_s=0)
    with pytest.raises(ValueError, match="components"):
        ConsensusScorer(components=("consensus",))
    scorer = get_scorer("line_length")
    assert is_marker(scorer) and not is_marker(object())
    eeg_only = noisy_recording(n_channels=3)
    eeg_only.ch_types = ["eeg"] * 3
    with pytest.raises(ValueError, match="no good iEEG channel"):
        score_with(scorer, eeg_only)


def test_cli_scores_a_file_with_a_marker(tmp_path, capsys):
    rec = noisy_recording(gains=[1, 1, 3, 1, 1, 2, 1, 1, 1, 1, 1, 1])
    path = tmp_path / "rec.npz"
    np.savez(path, data=rec.data, ch_names=np.array(rec.ch_names), fs=rec.sfreq, soz=rec.soz)
    before = path.read_bytes()
    assert main(["score", str(path), "--scorer", "line_length", "--out", str(tmp_path / "out"), "-q"]) == 0
    out = capsys.readouterr().out
    assert "Line length" in out and "value (µV/s)" in out
    channels = pd.read_csv(tmp_path / "out" / "channels.csv")
    assert list(channels.columns) == ["channel", "score", "value", "rank", "label", "artifact", "scorer"]
    assert (channels["scorer"] == "line_length").all() and channels["channel"].iloc[0] == "A3"
    windows = pd.read_csv(tmp_path / "out" / "windows.csv")
    assert len(windows) == 12 * len(WindowGrid.over(rec.n_times, rec.sfreq, 2.0, 1.0).starts)
    assert path.read_bytes() == before  # the source is only read


def test_cli_refuses_a_marker_with_a_model_and_unknown_scorers(tmp_path, capsys):
    rec = tmp_path / "r.npz"
    np.savez(rec, data=np.zeros((2, 10), np.float32), ch_names=np.array(["A1", "A2"]), fs=100.0)
    code = main(["score", str(tmp_path), str(rec), "--scorer", "line_length", "--out", str(tmp_path / "o")])
    assert code == 2 and "needs no model" in capsys.readouterr().err
    code = main(["score", str(rec), "--scorer", "hfo9", "--out", str(tmp_path / "o")])
    assert code == 2 and "invalid choice 'hfo9'" in capsys.readouterr().err

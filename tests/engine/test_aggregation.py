"""Channel aggregation and the time-binned heat map."""

import numpy as np
import pandas as pd
import pytest

from sss_viewer.engine.inference import aggregate_channels, window_heatmap


def _windows(rng, channels=("A1", "A2", "B1"), n=50):
    rows = []
    for c in channels:
        p = rng.random(n)
        lo = p * rng.random(n)
        hi = p + (1 - p) * rng.random(n)
        for k in range(n):
            rows.append((c, k * 1.0, k * 1.0 + 4.0, p[k], p[k], lo[k], hi[k]))
    return pd.DataFrame(rows, columns=["channel", "start_s", "end_s", "p_raw", "p_cal", "p0", "p1"])


def test_aggregate_is_a_valid_probability_and_ranked():
    rng = np.random.default_rng(0)
    windows = _windows(rng)
    table = aggregate_channels(windows, {"A1": 1, "A2": 0})
    assert ((table["score"] >= 0) & (table["score"] <= 1)).all()
    assert (table["lower"] <= table["score"]).all() and (table["score"] <= table["upper"]).all()
    assert table["rank"].tolist() == [1, 2, 3]
    assert table["score"].is_monotonic_decreasing
    for row in table.itertuples():
        assert row.score == pytest.approx(windows.loc[windows.channel == row.channel, "p_cal"].mean())
    assert table.set_index("channel")["label"].isna()["B1"]


def test_heatmap_weights_windows_by_overlap():
    windows = pd.DataFrame(
        {
            "channel": ["A", "A", "B"],
            "start_s": [0.0, 1.5, 0.0],
            "end_s": [2.0, 3.5, 1.0],
            "p_cal": [0.2, 0.8, 0.5],
        }
    )
    values, edges = window_heatmap(windows, ["A", "B"], duration_s=4.0, bin_s=1.0)
    assert edges.tolist() == [0, 1, 2, 3, 4]
    # bin [1, 2): window 1 covers 1 s at 0.2, window 2 covers 0.5 s at 0.8
    assert values[0, 1] == pytest.approx((0.2 * 1 + 0.8 * 0.5) / 1.5)
    assert values[0, 0] == pytest.approx(0.2)
    assert values[0, 2] == pytest.approx(0.8)
    assert values[1, 0] == pytest.approx(0.5)
    assert np.isnan(values[1, 1:]).all()


def test_heatmap_rejects_bad_bin_width():
    with pytest.raises(ValueError, match="bin_s"):
        window_heatmap(_windows(np.random.default_rng(0)), ["A1"], 10.0, 0)

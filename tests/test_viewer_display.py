"""Display rules: shafts, montages, display filters, decimation, heat-map rows."""

import numpy as np
import pytest

from sss_viewer.viewer.display import (
    apply_montage,
    contact_number,
    decimate_minmax_lttb,
    display_filter,
    group_by_shaft,
    heatmap_rows,
    montage_rows,
    shaft_name,
)


@pytest.mark.parametrize(
    ("name", "shaft", "number"),
    [("LA1", "LA", 1), ("LA12", "LA", 12), ("A'3", "A'", 3), ("LTP03", "LTP", 3), ("G", "G", None), ("EKG", "EKG", None)],
)
def test_shaft_and_contact(name, shaft, number):
    assert shaft_name(name) == shaft and contact_number(name) == number


def test_shafts_keep_first_appearance_order():
    assert group_by_shaft(["LA1", "RB1", "LA2", "RB2", "LA3"]) == {"LA": [0, 2, 4], "RB": [1, 3]}


def test_bipolar_pairs_neighbours_within_a_shaft_in_contact_order():
    rows = montage_rows(["LA2", "LA1", "LA3", "RB1", "X"], "bipolar")
    assert rows.labels == ["LA1-LA2", "LA2-LA3"]
    assert rows.members == [(1, 0), (0, 2)] and rows.shafts == ["LA", "LA"]
    data = np.array([[2.0, 4.0], [1.0, 1.0], [5.0, 0.0], [9.0, 9.0], [7.0, 7.0]])
    np.testing.assert_array_equal(apply_montage(data, rows), [[-1.0, -3.0], [-3.0, 4.0]])


def test_common_average_uses_the_given_reference():
    data = np.array([[1.0, 2.0], [3.0, 6.0]])
    rows = montage_rows(["A1", "A2"], "average")
    assert rows.labels == ["A1-avg", "A2-avg"]
    np.testing.assert_allclose(apply_montage(data, rows), [[-1.0, -2.0], [1.0, 2.0]])
    np.testing.assert_allclose(apply_montage(data, rows, reference=np.array([0.0, 1.0])), [[1.0, 1.0], [3.0, 5.0]])
    with pytest.raises(ValueError, match="montage"):
        montage_rows(["A1"], "laplacian")


def test_bipolar_heatmap_row_is_the_mean_of_its_contacts():
    rows = montage_rows(["LA1", "LA2", "LA3"], "bipolar")
    values = np.array([[0.2, np.nan], [0.4, 0.5], [0.6, np.nan]])
    np.testing.assert_allclose(heatmap_rows(values, rows), [[0.3, 0.5], [0.5, 0.5]])
    mono = montage_rows(["LA1", "LA2", "LA3"], "monopolar")
    np.testing.assert_array_equal(heatmap_rows(values, mono), values)


def test_display_filters_remove_what_they_should():
    sfreq = 500.0
    t = np.arange(5000) / sfreq
    slow, mains, fast = np.sin(2 * np.pi * 0.1 * t), np.sin(2 * np.pi * 50 * t), np.sin(2 * np.pi * 150 * t)
    x = (slow + mains + fast)[None, :]
    y = display_filter(x, sfreq, highpass_hz=1.0, lowpass_hz=100.0, notch_hz=50.0)[0, 500:-500]
    assert np.std(y) < 0.05
    np.testing.assert_allclose(display_filter(x, sfreq)[0], x[0], atol=1e-6)


def test_minmax_lttb_keeps_extremes_and_bounds_the_points():
    t = np.arange(200_000, dtype=np.float64)
    y = np.sin(t / 500.0)
    y[123_456] = 9.0
    idx = decimate_minmax_lttb(t, y, 2000)
    assert len(idx) <= 2000 and np.all(np.diff(idx) > 0)
    assert 123_456 in idx
    np.testing.assert_array_equal(decimate_minmax_lttb(t[:100], y[:100], 2000), np.arange(100))

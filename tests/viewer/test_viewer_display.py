"""Display rules: shafts, montages, display filters, decimation, heat-map rows, amplitude scale, units, clipping."""

import numpy as np
import pytest

from sss_viewer.viewer._display import (
    apply_montage,
    centre_and_clip,
    clip_envelope,
    contact_number,
    decimate_minmax_lttb,
    display_amplitude,
    display_filter,
    group_by_shaft,
    heatmap_rows,
    implausible_unit_message,
    montage_rows,
    robust_scale,
    shaft_name,
    top_k_mean,
)


@pytest.mark.parametrize(
    ("name", "shaft", "number"),
    [
        ("LA1", "LA", 1),
        ("LA12", "LA", 12),
        ("A'3", "A'", 3),
        ("LTP03", "LTP", 3),
        ("G", "G", None),
        ("EKG", "EKG", None),
    ],
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


# ------------------------------------------------------------------------------- amplitude scale


def test_robust_scale_ignores_spikes_and_a_broken_channel():
    rng = np.random.default_rng(0)
    data = rng.standard_normal((8, 10_000)) * 50.0 + 1000.0  # DC offsets do not matter
    quiet = robust_scale(data)
    assert 50.0 * 2.4 < quiet < 50.0 * 2.8  # the 99th percentile of |N(0, 50)| is 2.58 σ
    spiky = data.copy()
    spiky[:, ::500] += 20_000.0  # seizure spikes on every row (0.2 % of samples)
    spiky[3] *= 1000.0  # one broken channel
    assert robust_scale(spiky) == pytest.approx(quiet, rel=0.1)
    assert np.abs(spiky).max() > 100 * quiet  # what a max-based scale would have used
    assert np.isnan(robust_scale(np.zeros((3, 100)))) and np.isnan(robust_scale(np.zeros((0, 5))))
    assert display_amplitude(robust_scale(np.zeros((3, 100)))) == 100.0
    assert display_amplitude(123.456) == 120.0 and display_amplitude(0.0123) == 0.012


@pytest.mark.parametrize(
    ("scale", "expected"),
    [
        (300_000.0, "amplitudes look like nV mislabelled as µV"),
        (0.2, "amplitudes look like mV mislabelled as µV"),
        (1e-4, "amplitudes look like V mislabelled as µV"),
        (5e9, "amplitudes are far too large for µV"),
        (1e-9, "amplitudes are far too small for µV"),
    ],
)
def test_implausible_units_are_named(scale, expected):
    message = implausible_unit_message(scale)
    assert expected in message and "usually 10–2,000 µV" in message


@pytest.mark.parametrize("scale", [0.5, 5.0, 80.0, 1500.0, 10_000.0, float("nan"), 0.0])
def test_plausible_or_unknown_scales_give_no_warning(scale):
    assert implausible_unit_message(scale) == ""


def test_rows_are_centred_and_clipped_to_their_own_limit():
    data = np.array([[100.0, 101.0, 99.0, 5000.0, 100.0], [0.0, 1.0, -1.0, 0.0, -9000.0]])
    out = centre_and_clip(data, np.array([10.0, 50.0]))
    np.testing.assert_allclose(out, [[0.0, 1.0, -1.0, 10.0, 0.0], [0.0, 1.0, -1.0, 0.0, -50.0]])
    np.testing.assert_allclose(centre_and_clip(data, None)[0], data[0] - 100.0)  # clipping off: centred only
    lo, hi = clip_envelope(np.array([[90.0, -500.0]]), np.array([[110.0, 700.0]]), np.array([20.0]))
    np.testing.assert_allclose(lo, [[-10.0, -20.0]])
    np.testing.assert_allclose(hi, [[10.0, 20.0]])


def test_top_k_mean_per_bin():
    values = np.array([[0.9, np.nan, 0.1], [0.5, np.nan, 0.2], [0.1, 0.4, np.nan], [0.3, np.nan, np.nan]])
    np.testing.assert_allclose(top_k_mean(values, 2), [0.7, 0.4, 0.15])
    assert np.isnan(top_k_mean(np.full((2, 1), np.nan), 3)).all()
    assert top_k_mean(np.zeros((0, 4)), 3).shape == (4,)

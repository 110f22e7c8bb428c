"""Tests for the window calibrators (isotonic, Venn-Abers, none)."""

from __future__ import annotations

import json
import logging

import numpy as np
import pytest
from sklearn.exceptions import NotFittedError
from sklearn.isotonic import IsotonicRegression

from sss_viewer.engine.calibration import (
    CALIBRATORS,
    IdentityCalibrator,
    IsotonicCalibrator,
    VennAbersCalibrator,
    calibrator_from_state,
    make_calibrator,
)
from sss_viewer.metrics import expected_calibration_error

NAMES = list(CALIBRATORS)


def _miscalibrated(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Scores ``q**3`` for true probabilities ``q ~ U(0, 1)``: ranked right, calibrated wrong."""
    rng = np.random.default_rng(seed)
    q = rng.random(n)
    y = (rng.random(n) < q).astype(np.int8)
    return q**3, y


@pytest.fixture(scope="module")
def cal_data() -> tuple[np.ndarray, np.ndarray]:
    return _miscalibrated(2000, seed=0)


def _brute_force_ivap(p: np.ndarray, y: np.ndarray, s: float) -> tuple[float, float]:
    """p0, p1 by definition: isotonic fits on the calibration set plus (s, 0) and (s, 1)."""
    out = []
    for label in (0.0, 1.0):
        iso = IsotonicRegression(out_of_bounds="clip").fit(np.append(p, s), np.append(y, label))
        out.append(float(iso.predict([s])[0]))
    return out[0], out[1]


@pytest.mark.parametrize("name", NAMES)
def test_transform_contract(name: str, cal_data: tuple[np.ndarray, np.ndarray]) -> None:
    p, y = cal_data
    cal = make_calibrator(name).fit(p, y)
    grid = np.linspace(0.0, 1.0, 501)
    p_cal, p0, p1 = cal.transform(grid)
    for arr in (p_cal, p0, p1):
        assert arr.shape == grid.shape
        assert arr.dtype == np.float64
        assert np.all((arr >= 0.0) & (arr <= 1.0))
        assert np.all(np.diff(arr) >= 0), "calibrated outputs must be non-decreasing in p"
    assert np.all(p0 <= p_cal) and np.all(p_cal <= p1)
    if name != "venn-abers":
        np.testing.assert_array_equal(p0, p_cal)
        np.testing.assert_array_equal(p1, p_cal)


@pytest.mark.parametrize("name", NAMES)
def test_out_of_range_inputs_are_clipped(name: str, cal_data, caplog: pytest.LogCaptureFixture) -> None:
    cal = make_calibrator(name).fit(*cal_data)
    with caplog.at_level(logging.WARNING, logger="sss_viewer.engine.calibration"):
        outside = cal.transform(np.array([-0.5, 1.5]))
    assert "Clipping 2 of 2" in caplog.text
    inside = cal.transform(np.array([0.0, 1.0]))
    for a, b in zip(outside, inside, strict=True):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("name", NAMES)
def test_state_round_trip_is_identical(name: str, cal_data) -> None:
    cal = make_calibrator(name).fit(*cal_data)
    state = json.loads(json.dumps(cal.get_state()))
    assert state["name"] == name
    rebuilt = calibrator_from_state(state)
    assert type(rebuilt) is type(cal)
    test = np.random.default_rng(1).random(3000).astype(np.float32)
    for a, b in zip(cal.transform(test), rebuilt.transform(test), strict=True):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("name", ["isotonic", "venn-abers"])
def test_calibration_improves_ece(name: str, cal_data) -> None:
    p_test, y_test = _miscalibrated(5000, seed=2)
    p_cal = make_calibrator(name).fit(*cal_data).transform(p_test)[0]
    raw = expected_calibration_error(p_test, y_test)
    calibrated = expected_calibration_error(p_cal, y_test)
    assert raw > 0.1
    assert calibrated < raw / 3


def test_venn_abers_matches_definition() -> None:
    """The O(k) algorithm equals two brute-force isotonic fits per test score, ties included."""
    rng = np.random.default_rng(3)
    for _ in range(15):
        n = int(rng.integers(2, 30))
        p = np.round(rng.random(n), 1)  # many ties
        y = (rng.random(n) < p).astype(np.int8)
        y[:2] = [0, 1]
        cal = VennAbersCalibrator().fit(p, y)
        u = np.unique(p)
        tests = np.concatenate([u, 0.5 * (u[:-1] + u[1:]), [0.0, 1.0], rng.random(3)])
        _, p0, p1 = cal.transform(tests)
        expected = np.array([_brute_force_ivap(p, y, s) for s in tests])
        np.testing.assert_allclose(p0, expected[:, 0], atol=1e-12)
        np.testing.assert_allclose(p1, expected[:, 1], atol=1e-12)


def test_venn_abers_merged_probability() -> None:
    p, y = _miscalibrated(300, seed=4)
    p_cal, p0, p1 = VennAbersCalibrator().fit(p, y).transform(np.linspace(0, 1, 50))
    np.testing.assert_allclose(p_cal, p1 / (1 - p0 + p1), rtol=0, atol=1e-15)


def test_venn_abers_interval_narrows_with_more_data() -> None:
    test = np.linspace(0.0, 1.0, 201)
    widths = []
    for n in (100, 1000, 10000):
        _, p0, p1 = VennAbersCalibrator().fit(*_miscalibrated(n, seed=5)).transform(test)
        widths.append(float(np.mean(p1 - p0)))
    assert widths[0] > widths[1] > widths[2]
    assert widths[2] < 0.02


def test_venn_abers_leaves_numpy_error_state_alone(cal_data) -> None:
    before = np.geterr()
    VennAbersCalibrator().fit(*cal_data).transform(np.linspace(0, 1, 11))
    assert np.geterr() == before


def test_venn_abers_scales() -> None:
    """A quarter of the production size (200k fit / 100k transform) stays well under a second."""
    rng = np.random.default_rng(6)
    p = rng.random(50_000)
    y = (rng.random(50_000) < p).astype(np.int8)
    p_cal, p0, p1 = VennAbersCalibrator().fit(p, y).transform(rng.random(25_000))
    assert np.all(p0 <= p_cal) and np.all(p_cal <= p1)


def test_isotonic_step_matches_sklearn(cal_data) -> None:
    p, y = cal_data
    test = np.linspace(0.0, 1.0, 301)
    ours = IsotonicCalibrator(centered=False).fit(p, y).transform(test)[0]
    ref = IsotonicRegression(out_of_bounds="clip", y_min=0, y_max=1).fit(p, y).predict(test)
    np.testing.assert_allclose(ours, ref, atol=1e-12)


def test_centred_isotonic_keeps_block_levels_and_order(cal_data) -> None:
    p, y = cal_data
    step = IsotonicRegression(out_of_bounds="clip", y_min=0, y_max=1).fit(p, y)
    cir = IsotonicCalibrator().fit(p, y)
    fitted = step.predict(p)
    # one knot per PAV block, at the block's mean raw probability, with the block's fitted level
    for level, centre in zip(cir.y_thresholds_, cir.X_thresholds_):
        members = fitted == level
        assert centre == pytest.approx(p[members].mean())
    assert np.all(np.diff(cir.X_thresholds_) > 0) and np.all(np.diff(cir.y_thresholds_) > 0)
    # strictly increasing between the first and last centre: windows keep their order
    inside = np.linspace(cir.X_thresholds_[0], cir.X_thresholds_[-1], 500)
    assert np.all(np.diff(cir.transform(inside)[0]) > 0)
    assert len(np.unique(cir.transform(p)[0])) > 5 * len(np.unique(fitted))
    # the calibration error stays that of the step fit's order of magnitude
    assert expected_calibration_error(cir.transform(p)[0], y) < 0.05


def test_identity_needs_no_fit() -> None:
    p_cal, p0, p1 = IdentityCalibrator().transform([0.2, 0.7])
    np.testing.assert_array_equal(p_cal, [0.2, 0.7])
    assert calibrator_from_state(IdentityCalibrator().get_state()).transform([0.3])[0][0] == 0.3


@pytest.mark.parametrize("name", ["isotonic", "venn-abers"])
def test_unfitted_raises(name: str) -> None:
    with pytest.raises(NotFittedError, match="not fitted"):
        make_calibrator(name).transform([0.5])
    with pytest.raises(NotFittedError, match="not fitted"):
        make_calibrator(name).get_state()


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize(
    ("p", "y", "match"),
    [
        ([0.1, 0.2, 0.3], [1, 1, 1], "single class"),
        ([0.1, np.nan, 0.3], [0, 1, 1], "p must be finite"),
        ([0.1, 1.2, 0.3], [0, 1, 1], r"p must contain probabilities in \[0, 1\]"),
        ([0.1, 0.2, 0.3], [0, 1], "same length"),
        ([0.1, 0.2, 0.3], [0, 2, 1], "y must hold binary labels"),
        ([[0.1, 0.2]], [0, 1], r"p must be 1-D"),
    ],
)
def test_fit_errors(name: str, p, y, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        make_calibrator(name).fit(p, y)


def test_transform_rejects_nan(cal_data) -> None:
    with pytest.raises(ValueError, match="p must be finite"):
        IsotonicCalibrator().fit(*cal_data).transform([0.2, np.nan])


def test_make_calibrator_unknown_name() -> None:
    with pytest.raises(ValueError, match=r"Unknown calibrator 'platt'.*'isotonic', 'venn-abers', 'none'"):
        make_calibrator("platt")


def test_calibrator_from_state_errors() -> None:
    with pytest.raises(ValueError, match="Unknown calibrator 'beta'"):
        calibrator_from_state({"name": "beta"})
    with pytest.raises(ValueError, match="lacks the key 'p1_knots'"):
        calibrator_from_state({"name": "venn-abers", "p0_knots": [0.5], "p0_values": [0.4]})
    with pytest.raises(ValueError, match="format_version"):
        calibrator_from_state({"name": "none", "format_version": 99})


def test_calibrators_are_scikit_learn_estimators():
    """clone copies an unfitted calibrator with its parameters; check_is_fitted knows a fitted one."""
    from sklearn.base import clone
    from sklearn.exceptions import NotFittedError
    from sklearn.utils.validation import check_is_fitted

    from sss_viewer.engine.calibration import IdentityCalibrator, IsotonicCalibrator, VennAbersCalibrator

    rng = np.random.default_rng(0)
    p = rng.random(200)
    y = (rng.random(200) < p).astype(int)
    iso = IsotonicCalibrator(centered=False).fit(p, y)
    copy = clone(iso)
    assert copy.get_params() == {"centered": False} and not hasattr(copy, "X_thresholds_")
    with pytest.raises(NotFittedError, match="call fit"):
        copy.transform(p)
    for calibrator in (iso, VennAbersCalibrator().fit(p, y), IdentityCalibrator()):
        check_is_fitted(calibrator)  # raises when not fitted
    with pytest.raises(NotFittedError):
        check_is_fitted(VennAbersCalibrator())
    np.testing.assert_array_equal(clone(iso).fit(p, y).transform(p)[0], iso.transform(p)[0])

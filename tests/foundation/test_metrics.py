"""Tests for channel-level metrics against hand-computed cases."""

from __future__ import annotations

import logging
import math

import numpy as np
import pytest

from sss_viewer.metrics import (
    accuracy_at,
    average_precision,
    balanced_accuracy_at,
    binary_auc,
    brier_score,
    choose_threshold,
    evaluate_scores,
    expected_calibration_error,
    f1_at,
)

# Four channels: two SOZ. Pairs (pos, neg): (0.8, 0.1) ok, (0.8, 0.4) ok, (0.35, 0.1) ok, (0.35, 0.4) wrong.
SCORES = np.array([0.1, 0.4, 0.35, 0.8])
LABELS = np.array([0, 0, 1, 1])


def test_auc_hand_computed() -> None:
    assert binary_auc(SCORES, LABELS) == pytest.approx(3 / 4)
    assert binary_auc([0.5, 0.5], [0, 1]) == pytest.approx(0.5)  # ties count one half


def test_average_precision_hand_computed() -> None:
    # Ranked: 0.8 (pos, P=1, R=.5), 0.4 (neg), 0.35 (pos, P=2/3, R=1): AP = .5*1 + .5*2/3.
    assert average_precision(SCORES, LABELS) == pytest.approx(0.5 + 1 / 3)


def test_brier_hand_computed() -> None:
    expected = (0.1**2 + 0.4**2 + 0.65**2 + 0.2**2) / 4
    assert brier_score(SCORES, LABELS) == pytest.approx(expected)


def test_threshold_metrics_hand_computed() -> None:
    # threshold 0.38: predictions [0, 1, 0, 1] -> TP=1, FP=1, FN=1, TN=1.
    assert f1_at(SCORES, LABELS, 0.38) == pytest.approx(0.5)
    assert accuracy_at(SCORES, LABELS, 0.38) == pytest.approx(0.5)
    assert balanced_accuracy_at(SCORES, LABELS, 0.38) == pytest.approx(0.5)
    # threshold 0.3: predictions [0, 1, 1, 1] -> TP=2, FP=1, TN=1: F1 = 4/5, bal. acc = (1 + .5)/2.
    assert f1_at(SCORES, LABELS, 0.3) == pytest.approx(0.8)
    assert balanced_accuracy_at(SCORES, LABELS, 0.3) == pytest.approx(0.75)
    # the threshold itself counts as positive
    assert f1_at(SCORES, LABELS, 0.35) == pytest.approx(0.8)
    # nothing predicted, nothing positive: F1 is 0 by convention, not an error
    assert f1_at([0.1, 0.2], [0, 0], 0.5) == 0.0


def test_ece_hand_computed() -> None:
    # bin [0.1, 0.2): p=.15, y=0 -> .15; bin [0.9, 1]: p=.95 and 1.0, y=1,1 -> mean gap .025.
    p = np.array([0.15, 0.95, 1.0])
    y = np.array([0, 1, 1])
    assert expected_calibration_error(p, y, n_bins=10) == pytest.approx((0.15 + 2 * 0.025) / 3)
    assert expected_calibration_error([0.5, 0.5], [0, 1]) == pytest.approx(0.0)


def test_choose_threshold_maximises_f1() -> None:
    threshold = choose_threshold(SCORES, LABELS, criterion="f1")
    # Best F1 = 0.8 flags {0.8, 0.4, 0.35}; the midpoint to the next score (0.1) is returned.
    assert threshold == pytest.approx(0.225)
    assert f1_at(SCORES, LABELS, threshold) == pytest.approx(0.8)
    rng = np.random.default_rng(0)
    s, y = rng.random(40), rng.integers(0, 2, 40)
    best = max(f1_at(s, y, t) for t in s)
    assert f1_at(s, y, choose_threshold(s, y)) == pytest.approx(best)


def test_choose_threshold_youden() -> None:
    s = np.array([0.1, 0.2, 0.6, 0.7, 0.3])
    y = np.array([0, 0, 1, 1, 0])
    t = choose_threshold(s, y, criterion="youden")
    assert 0.3 < t < 0.6
    assert balanced_accuracy_at(s, y, t) == 1.0


def test_choose_threshold_bad_criterion() -> None:
    with pytest.raises(ValueError, match=r"criterion='auc'.*'f1', 'youden'"):
        choose_threshold(SCORES, LABELS, criterion="auc")


def test_evaluate_scores_returns_plain_floats() -> None:
    out = evaluate_scores(SCORES, LABELS, threshold=0.3)
    expected_keys = {
        "auc",
        "auprc",
        "brier",
        "accuracy",
        "balanced_accuracy",
        "f1",
        "precision",
        "recall",
        "specificity",
        "threshold",
    }
    assert set(out) == expected_keys
    assert all(type(v) is float for v in out.values())
    assert out["auc"] == pytest.approx(0.75)
    assert out["f1"] == pytest.approx(0.8)
    assert out["precision"] == pytest.approx(2 / 3)
    assert out["recall"] == pytest.approx(1.0)
    assert out["specificity"] == pytest.approx(0.5)


def test_single_class_is_nan_not_error(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="sss_viewer.metrics"):
        out = evaluate_scores([0.2, 0.7, 0.9], [0, 0, 0], threshold=0.5)
    assert math.isnan(out["auc"]) and math.isnan(out["auprc"])
    assert "AUC is undefined" in caplog.text
    assert out["accuracy"] == pytest.approx(1 / 3)
    assert out["balanced_accuracy"] == pytest.approx(1 / 3)  # recall of the only class present


def test_brier_nan_for_non_probability_scores() -> None:
    out = evaluate_scores([-2.0, 3.0], [0, 1], threshold=0.0)
    assert math.isnan(out["brier"])
    assert out["auc"] == 1.0


def test_auc_large_arrays() -> None:
    rng = np.random.default_rng(1)
    y = rng.integers(0, 2, 200_000)
    s = y + rng.normal(0, 1, y.size)
    assert 0.7 < binary_auc(s, y) < 0.8


@pytest.mark.parametrize(
    ("scores", "labels", "match"),
    [
        ([0.1, 0.2], [0, 1, 1], "same length"),
        ([0.1, np.nan], [0, 1], "scores must be finite"),
        ([0.1, 0.2], [0, 3], "labels must hold binary labels"),
        ([], [], "empty"),
    ],
)
def test_input_errors(scores, labels, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        evaluate_scores(scores, labels)


def test_probability_errors() -> None:
    with pytest.raises(ValueError, match=r"p must be probabilities in \[0, 1\]"):
        brier_score([0.2, 1.5], [0, 1])
    with pytest.raises(ValueError, match="n_bins"):
        expected_calibration_error([0.2], [1], n_bins=0)

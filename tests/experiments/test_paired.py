"""Paired comparison of cross-validated rows (``sss-viewer compare``): fold pairing, the corrected t-test, nested choice."""

from __future__ import annotations

import json

import numpy as np
import pytest

from sss_viewer.experiments import plan_runs
from sss_viewer.experiments.paired import cost_summary, load_many, load_runs, paired_differences
from sss_viewer.experiments.tables import SELECTED_LABEL
from tests.fixtures.cli import one_error_line, run


def write_folder(folder, protocol, models, seeds, scores, val=None, seconds=None):
    """An experiment folder as the runner writes it: plan.json and one record per run (metrics from ``scores``)."""
    runs = plan_runs(protocol, ["Bonn"], models, seeds, ["cv"])
    (folder / "runs").mkdir(parents=True)
    (folder / "plan.json").write_text(
        json.dumps({"protocol": protocol, "preset": "bonn", "runs": [r.key for r in runs]})
    )
    for r in runs:
        fold = int(r.setting.split()[-1])
        record = {
            "protocol": protocol,
            "model": r.model,
            "label": r.label,
            "setting": r.setting,
            "split_mode": "cv",
            "seed": r.seed,
            "key": r.key,
            "n_train": 128,
            "n_val": 32,
            "n_test": 40,
            "auc": scores(r.label, r.seed, fold),
            "val_auc": (val or scores)(r.label, r.seed, fold),
            "seconds": (seconds or {}).get(r.label, 1.0),
        }
        (folder / "runs" / f"{r.key}.json").write_text(json.dumps(record))
    return runs


def test_the_differences_are_paired_by_fold_and_the_t_test_is_corrected(tmp_path):
    gain = {(s, f): 0.01 * ((s * 5 + f) % 4) for s in (0, 1) for f in range(1, 6)}  # 0, .01, .02, .03, ...
    write_folder(
        tmp_path / "b",
        "bonn",
        ["sss", "minirocket-lr"],
        [0, 1],
        lambda label, s, f: 0.9 + 0.005 * f + (gain[s, f] if label == "sss" else 0.0),
    )
    runs = load_runs(tmp_path / "b")
    diffs = paired_differences(runs, "sss", ["minirocket-lr"]).iloc[0]
    d = np.array([gain[s, f] for s in (0, 1) for f in range(1, 6)])
    n, ratio = len(d), 40 / (128 + 32)
    t = d.mean() / np.sqrt((1 / n + ratio) * d.var(ddof=1))  # Nadeau & Bengio (2003)
    assert diffs["n"] == 10 and diffs["mean_diff"] == pytest.approx(d.mean()) and diffs["t"] == pytest.approx(t)
    assert diffs["p"] == pytest.approx(2 * (1 - __import__("scipy").stats.t.cdf(abs(t), n - 1)))
    # the fold-to-fold spread (0.005 per fold) cancels in the pairs: the uncorrected paired t would be larger
    assert abs(t) < abs(d.mean() / (d.std(ddof=1) / np.sqrt(n)))
    assert (diffs["wins"], diffs["ties"], diffs["losses"]) == (int((d > 0).sum()), int((d == 0).sum()), 0)
    assert diffs["ci_low"] < d.mean() < diffs["ci_high"]


def test_nested_choice_is_made_on_validation_only_where_every_candidate_finished(tmp_path):
    runs = write_folder(
        tmp_path / "c",
        "bonn-candidates",
        ["sss"],
        [0],
        scores=lambda label, s, f: 0.95 if "rocket" in label else 0.90,
        val=lambda label, s, f: 1.0 if "hydra" in label and "2048" not in label else 0.5,
    )
    (tmp_path / "c" / "runs" / f"{runs[-1].key}.json").unlink()  # one candidate of one fold unfinished
    loaded = load_runs(tmp_path / "c")
    chosen = loaded[loaded["label"] == SELECTED_LABEL]
    assert len(chosen) == 4  # 5 folds, one incomplete
    assert set(chosen["auc"]) == {0.90}  # the best validation AUC (Hydra) was chosen, not the best test AUC (ROCKET)
    costs = cost_summary(loaded, [SELECTED_LABEL, "sss"])
    assert (
        costs.set_index("label").loc[SELECTED_LABEL, "median_s"] == len(set(loaded["label"])) - 1
    )  # every candidate's run


def test_refitted_rows_take_no_part_in_a_nested_choice(tmp_path):
    write_folder(tmp_path / "r", "bonn-refit", ["sss"], [0], scores=lambda label, s, f: 0.9)
    loaded = load_runs(tmp_path / "r")
    assert SELECTED_LABEL not in set(loaded["label"])  # a refitted row's validation AUC is in-sample
    assert (
        len(set(loaded["label"])) == 4
        and sum("refit_on_train_val=True" in label for label in set(loaded["label"])) == 2
    )


def test_folders_are_combined_and_clashing_labels_named_by_protocol(tmp_path, capsys):
    write_folder(
        tmp_path / "b", "bonn", ["sss", "minirocket-lr"], [0], lambda label, s, f: 0.9 + 0.01 * (label == "sss")
    )
    write_folder(tmp_path / "c", "bonn-candidates", ["sss"], [0], lambda label, s, f: 0.92)
    runs = load_many([tmp_path / "b", tmp_path / "c"])
    assert {"bonn:sss", "bonn-candidates:sss", "minirocket-lr", SELECTED_LABEL} <= set(runs["label"])
    code, out, _ = run(
        capsys,
        "compare",
        tmp_path / "b",
        tmp_path / "c",
        "--candidate",
        SELECTED_LABEL,
        "--against",
        "minirocket-lr",
        "bonn:sss",
    )
    assert code == 0
    assert f"| {SELECTED_LABEL} − minirocket-lr | 5 | 0.9200 | 0.9000 | +0.0200" in out
    assert f"| {SELECTED_LABEL} − bonn:sss | 5 | 0.9200 | 0.9100 | +0.0100" in out
    assert "| minirocket-lr | 5 | 1.0 | 5 |" in out  # the cost table: runs, median s per fold, total s


def test_a_row_can_be_named_by_its_protocol_where_its_label_is_not_shared(tmp_path, capsys):
    write_folder(
        tmp_path / "b",
        "bonn",
        ["sss", "minirocket-lr"],
        [0],
        lambda label, s, f: 0.9 + 0.01 * (label == "sss"),
        seconds={"sss": 3.0},
    )
    write_folder(tmp_path / "r", "bonn-refit", ["sss"], [0], lambda label, s, f: 0.95)
    candidate = "sss head_solver=lbfgs, refit_on_train_val=True"
    code, out, _ = run(
        capsys,
        "compare",
        tmp_path / "b",
        tmp_path / "r",
        "--candidate",
        f"bonn-refit:{candidate}",
        "--against",
        "bonn:sss",
        "minirocket-lr",
    )
    assert code == 0
    assert f"| {candidate} − sss | 5 | 0.9500 | 0.9100 | +0.0400" in out
    assert "| sss | 5 | 3.0 | 15 |" in out  # the cost table finds the row too
    code, _, err = run(
        capsys, "compare", tmp_path / "b", tmp_path / "r", "--candidate", "bonn-refit:sss", "--against", "bonn:sss"
    )
    assert code == 1 and one_error_line(err, "no runs labelled ['bonn-refit:sss']")  # that protocol holds no such row


def test_bad_comparisons_are_named(tmp_path, capsys):
    write_folder(tmp_path / "b", "bonn", ["sss", "minirocket-lr"], [0], lambda label, s, f: 0.9)
    code, _, err = run(capsys, "compare", tmp_path / "b", "--candidate", "ssss", "--against", "minirocket-lr")
    assert code == 1 and "minirocket-lr" in one_error_line(err, "no runs labelled ['ssss']", "labels present")
    code, _, err = run(
        capsys, "compare", tmp_path / "b", tmp_path / "b", "--candidate", "sss", "--against", "minirocket-lr"
    )
    assert code == 1 and one_error_line(err, "given twice")
    code, _, err = run(capsys, "compare", tmp_path, "--candidate", "sss", "--against", "minirocket-lr")
    assert code == 1 and one_error_line(err, str(tmp_path), "no plan.json")
    code, _, err = run(
        capsys, "compare", tmp_path / "b", "--candidate", "sss", "--against", "minirocket-lr", "--metric", "x"
    )
    assert code == 1 and one_error_line(err, "metric 'x'")

"""The Bonn data set reader and the cross-validation protocol (real data; skipped without ../shared/data)."""

from __future__ import annotations

import numpy as np
import pytest

from sss_viewer.io.bonn import is_bonn, load_bonn
from sss_viewer.io.cohort import load_data

from .conftest import SHARED_DATA

BONN = SHARED_DATA / "bonn-epilepsy"
needs_bonn = pytest.mark.skipif(not (BONN / "bonn_sets_ABCDE_int16.npz").is_file(),
                                reason=f"the Bonn data set is not at {BONN}")


def _fake_bonn(tmp_path, n=12, length=600):
    rng = np.random.default_rng(0)
    arrays = {s: rng.integers(-300, 300, size=(n, length)).astype(np.int16) for s in "ABCDE"}
    path = tmp_path / "bonn_sets_ABCDE_int16.npz"
    np.savez(path, fs=173.61, **arrays)
    return path


def test_reader_labels_d_as_soz_and_names_segments(tmp_path):
    path = _fake_bonn(tmp_path)
    assert is_bonn(path) and is_bonn(tmp_path)
    recs = load_bonn(tmp_path)
    assert len(recs) == 24
    assert [r.subject for r in recs[:2]] == ["N001", "N002"] and recs[12].subject == "F001"
    assert [bool(r.soz[0]) for r in recs] == [False] * 12 + [True] * 12
    assert {tuple(r.ch_names) for r in recs} == {("depth",)}  # the name says nothing about the label
    assert recs[0].sfreq == pytest.approx(173.61) and recs[0].data.dtype == np.float32
    assert len(load_data(path)) == 24  # the CLI's --data recognises it


def test_reader_errors_name_the_file(tmp_path):
    np.savez(tmp_path / "bonn_sets_ABCDE_int16.npz", fs=173.61, C=np.zeros((2, 10), np.int16))
    assert not is_bonn(tmp_path)
    with pytest.raises(ValueError, match=r"bonn_sets_ABCDE_int16.npz.*lacks key\(s\) \['D'\]"):
        load_bonn(tmp_path)
    with pytest.raises(ValueError, match="Unknown Bonn set"):
        load_bonn(tmp_path, sets=("X",))
    with pytest.raises(FileNotFoundError, match="no Bonn data set"):
        load_bonn(tmp_path / "missing")


def test_cv_folds_are_stratified_disjoint_and_the_same_for_every_model(tmp_path):
    from sss_viewer.experiments import plan_runs, split_for_run
    from sss_viewer.preprocessing.config import preprocess_preset
    from sss_viewer.windows.series_set import build_series_set

    recs = load_bonn(_fake_bonn(tmp_path, n=20))
    series = build_series_set(recs, preprocess_preset("default", target_sfreq=None), min_length=64, progress=False)
    runs = plan_runs("bonn", ["Bonn"], ["sss", "minirocket-lr"], [0, 1], ["cv"])
    assert len(runs) == 2 * 5 * 2
    tests = []
    for run in runs:
        split = split_for_run(series.meta, run)
        labels = series.labels()
        assert (split == "test").sum() == 8 and labels[split == "test"].sum() == 4  # stratified 1/5
        assert (split == "val").sum() == 6 or (split == "val").sum() == 7
        tests.append((run.model, run.seed, run.setting, tuple(np.flatnonzero(split == "test"))))
    by_fold = {}
    for model, seed, setting, test in tests:
        by_fold.setdefault((seed, setting), set()).add(test)
    assert all(len(v) == 1 for v in by_fold.values())  # same folds for every model
    seed0 = [next(iter(by_fold[(0, f"fold {k}")])) for k in range(1, 6)]
    assert sorted(i for t in seed0 for i in t) == list(range(40))  # every segment tested once per repeat
    with pytest.raises(ValueError, match="split mode of bonn"):
        plan_runs("bonn", ["Bonn"], ["sss"], [0], ["channel"])


@needs_bonn
@pytest.mark.realdata
@pytest.mark.slow
def test_sss_reaches_auc_090_on_bonn_d_vs_c(tmp_path):
    """Reduced configuration of the ``bonn`` preset (one repeat, two folds, fewer features): SSS AUC >= 0.90."""
    import dataclasses

    from sss_viewer.experiments import runner

    recs = load_data(BONN)
    assert len(recs) == 200 and sum(bool(r.soz[0]) for r in recs) == 100
    base = runner.PRESETS["bonn"]
    reduced = dataclasses.replace(base, name="bonn-test", sss={**base.sss, "model_params": {"num_features": 840, "revin": False}})
    results = runner.run_experiment("bonn", recs, tmp_path, preset=reduced, models=["sss"], seeds=[0],
                                    progress=False, max_new_runs=2)
    assert len(results) == 2
    assert results["auc"].mean() >= 0.90, results[["setting", "auc", "val_auc"]]

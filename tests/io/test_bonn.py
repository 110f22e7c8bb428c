"""The Bonn data set reader and the cross-validation protocol (real data; skipped without ../shared/data)."""

from __future__ import annotations

import re

import numpy as np
import pytest

from sss_viewer.io.bonn import is_bonn, load_bonn
from sss_viewer.io.cohort import load_data
from tests.fixtures.recordings import SHARED_DATA

BONN = SHARED_DATA / "bonn-epilepsy"
needs_bonn = pytest.mark.skipif(
    not (BONN / "bonn_sets_ABCDE_int16.npz").is_file(), reason=f"the Bonn data set is not at {BONN}"
)


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


def test_a_window_ensemble_averages_the_single_window_rows_exactly(tmp_path):
    """``window_lengths=1024+2048`` trains the L = 1024 and L = 2048 rows' very models and averages their probabilities."""
    import dataclasses

    from sss_viewer.engine._feature_memo import FeatureMemo
    from sss_viewer.experiments import plan_runs, split_for_run
    from sss_viewer.experiments.protocols import ensemble_members
    from sss_viewer.experiments.runner import PRESETS, _sss_run_probs, run_settings_digest, sss_run_config
    from sss_viewer.preprocessing.config import preprocess_preset
    from sss_viewer.windows.series_set import build_series_set

    runs = {r.label: r for r in plan_runs("bonn-candidates", ["Bonn"], ["sss"], [0], ["cv"]) if r.setting == "fold 1"}
    bonn = PRESETS["bonn"]
    config = lambda run: sss_run_config(bonn, run).to_dict()  # noqa: E731
    for backbone in ("", "backbone=hydra_minirocket, "):
        ensemble = runs[f"sss {backbone}window_lengths=1024+2048"]
        short, long = ensemble_members(ensemble)
        assert config(short) == config(runs[f"sss {backbone}".strip().rstrip(",")])
        assert config(long) == config(runs[f"sss {backbone}window_length=2048"])
        assert run_settings_digest(bonn, ensemble) not in {run_settings_digest(bonn, m) for m in (short, long)}
    for bad in ("1024", "1024+1024", "1024+x", "0+2048"):
        with pytest.raises(
            ValueError, match=re.escape(f"window_lengths={bad!r}: expected two or more different window lengths")
        ):
            ensemble_members(dataclasses.replace(ensemble, overrides=(("window_lengths", bad),)))

    # the same on a small fake Bonn set, trained for real: the ensemble's probabilities are the members' mean
    small = dataclasses.replace(
        bonn, name="bonn-test", sss={**bonn.sss, "epochs": 2, "model_params": {"num_features": 840, "revin": False}}
    )
    series = build_series_set(
        load_bonn(_fake_bonn(tmp_path, n=20, length=4097)),
        preprocess_preset("default", target_sfreq=None),
        min_length=2048,
        progress=False,
    )
    ensemble = runs["sss window_lengths=1024+2048"]
    split = split_for_run(series.meta, ensemble)
    val, test, _ = _sss_run_probs(ensemble, series, split, small, FeatureMemo())
    members = [_sss_run_probs(m, series, split, small, FeatureMemo())[:2] for m in ensemble_members(ensemble)]
    assert val.shape == ((split == "val").sum(),) and test.shape == ((split == "test").sum(),)
    np.testing.assert_allclose(val, np.mean([m[0] for m in members], axis=0), rtol=1e-6)
    np.testing.assert_allclose(test, np.mean([m[1] for m in members], axis=0), rtol=1e-6)
    assert not np.allclose(members[0][1], members[1][1])  # two different models were averaged


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
    reduced = dataclasses.replace(
        base, name="bonn-test", sss={**base.sss, "model_params": {"num_features": 840, "revin": False}}
    )
    results = runner.run_experiment(
        "bonn", recs, tmp_path, preset=reduced, models=["sss"], seeds=[0], progress=False, max_new_runs=2
    )
    assert len(results) == 2
    assert results["auc"].mean() >= 0.90, results[["setting", "auc", "val_auc"]]

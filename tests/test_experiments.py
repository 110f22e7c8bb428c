"""The paper's protocols: plans, splits, resumable runs and tables."""

import numpy as np
import pandas as pd
import pytest

from sss_viewer.dataset import build_series_set
from sss_viewer.experiments import PROTOCOLS, plan_runs, run_experiment, split_for_run
from sss_viewer.experiments.protocols import MODELS
from sss_viewer.preprocess import preprocess_preset

from .conftest import toy_recording


@pytest.fixture(scope="module")
def cohort():
    """Twelve toy patients in three centres (JHH, NIH, UMMC), two SOZ channels of eight each."""
    recs = [toy_recording(f"toy{i:02d}", i, duration_s=30.0) for i in range(12)]
    for i, rec in enumerate(recs):
        rec.centre = ("JHH", "NIH", "UMMC")[i % 3]
    return recs


@pytest.fixture(scope="module")
def series(cohort):
    return build_series_set(cohort, preprocess_preset("default"), min_length=256, progress=False)


def test_plans_cover_every_setting_model_seed_and_split():
    runs = plan_runs("paper-table1", ["A", "B", "C"], MODELS, [0, 1], ["channel", "patient"])
    assert len(runs) == 4 * len(MODELS) * 2 * 2
    assert {r.setting for r in runs} == {"A", "B", "C", "all"}
    assert len({r.key for r in runs}) == len(runs)
    table2 = plan_runs("paper-table2", ["A", "B", "C"], ["sss"], [0], ["patient"])
    assert [(r.setting, r.train_centres, r.test_centre) for r in table2] == [
        ("unseen A", ("B", "C"), "A"), ("unseen B", ("A", "C"), "B"), ("unseen C", ("A", "B"), "C")
    ]
    batch = plan_runs("ablation-batch", ["A", "B"], MODELS, [0], ["channel"])
    assert [r.label for r in batch] == [f"sss batch_size={b}" for b in (128, 512, 2048, 8192)]
    assert set(PROTOCOLS) >= {"paper-table1", "paper-table2", "ablation-batch", "ablation-window", "ablation-calibration"}


def test_bad_names_fail_before_training():
    with pytest.raises(ValueError, match="protocol"):
        plan_runs("table9", ["A"], ["sss"], [0], ["channel"])
    with pytest.raises(ValueError, match="model"):
        plan_runs("paper-table1", ["A"], ["transformer9000"], [0], ["channel"])
    with pytest.raises(ValueError, match="at least two centres"):
        plan_runs("paper-table2", ["A"], ["sss"], [0], ["channel"])


def test_splits_follow_the_protocol(series):
    meta = series.meta
    run = plan_runs("paper-table2", ["JHH", "NIH", "UMMC"], ["sss"], [3], ["patient"])[0]
    split = split_for_run(meta, run)
    assert set(meta.loc[split == "test", "centre"]) == {"JHH"}
    assert not set(meta.loc[np.isin(split, ["train", "val"]), "centre"]) & {"JHH"}
    by_subject = pd.Series(split).groupby(meta["subject"].to_numpy()).nunique()
    assert (by_subject == 1).all()  # patient split: no patient in two splits
    run = plan_runs("paper-table1", ["JHH", "NIH", "UMMC"], ["sss"], [0], ["channel"])[3]  # all centres
    split = split_for_run(meta, run)
    train_labels = meta["label"].to_numpy()[split == "train"]
    assert train_labels.sum() * 2 == len(train_labels)  # 1:1 balanced as the paper


def test_too_few_soz_channels_is_named(series):
    meta = series.meta.copy()
    meta.loc[meta["centre"] == "NIH", "label"] = 0
    run = plan_runs("paper-table1", ["JHH", "NIH", "UMMC"], ["sss"], [0], ["channel"])[1]
    with pytest.raises(ValueError, match="NIH.*too few SOZ channels"):
        split_for_run(meta, run)


def test_kill_and_resume_gives_the_same_csv(cohort, tmp_path):
    kwargs = dict(models=["sss"], seeds=[0, 1], split_modes=["channel"], progress=False)
    straight = run_experiment("paper-table2", cohort, tmp_path / "straight", **kwargs)
    partial = run_experiment("paper-table2", cohort, tmp_path / "resumed", max_new_runs=2, **kwargs)
    assert len(partial) == 2 and len(straight) == 6
    resumed = run_experiment("paper-table2", cohort, tmp_path / "resumed", **kwargs)
    assert (tmp_path / "straight" / "results.csv").read_bytes() == (tmp_path / "resumed" / "results.csv").read_bytes()
    assert len(resumed) == 6
    tables = (tmp_path / "resumed" / "tables.md").read_text()
    assert "unseen JHH F1" in tables and "| sss |" in tables


@pytest.mark.slow
@pytest.mark.parametrize("protocol", ["paper-table1", "paper-table2"])
def test_full_grid_smoke(cohort, tmp_path, protocol):
    """Every model, every setting, both split modes, one epoch: the table has every row and column."""
    results = run_experiment(protocol, cohort, tmp_path, preset="smoke", progress=False)
    settings = ["JHH", "NIH", "UMMC", "all"] if protocol == "paper-table1" else ["unseen JHH", "unseen NIH", "unseen UMMC"]
    assert len(results) == len(MODELS) * len(settings) * 2
    assert results[["f1", "auc", "accuracy", "auprc", "balanced_accuracy"]].notna().all().all()
    tables = (tmp_path / "tables.md").read_text()
    for mode in ("channel split", "patient split"):
        assert mode in tables
    for model in MODELS:
        assert tables.count(f"| {model} |") == 4  # 2 split modes × (main + extra metrics)
    for setting in settings:
        for metric in ("F1", "AUC", "Acc", "AUPRC", "Bal. acc"):
            assert f"{setting} {metric}" in tables

"""The paper's protocols: plans, splits, resumable runs and tables."""

import numpy as np
import pandas as pd
import pytest

from sss_viewer.experiments import PROTOCOLS, plan_runs, run_experiment, split_for_run
from sss_viewer.experiments.protocols import BASELINES, MODELS, SSS_MODEL, SSS_ROWS
from sss_viewer.preprocessing.config import preprocess_preset
from sss_viewer.windows.series_set import build_series_set
from tests.fixtures.recordings import toy_recording


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
        ("unseen A", ("B", "C"), "A"),
        ("unseen B", ("A", "C"), "B"),
        ("unseen C", ("A", "B"), "C"),
    ]
    batch = plan_runs("ablation-batch", ["A", "B"], MODELS, [0], ["channel"])
    sss_rows = ("sss", *SSS_ROWS)  # an ablation varies every SSS row it is given
    assert [r.label for r in batch] == [f"{m} batch_size={b}" for m in sss_rows for b in (128, 512, 2048, 4096, 8192)]
    assert set(PROTOCOLS) >= {
        "paper-table1",
        "paper-table2",
        "ablation-batch",
        "ablation-window",
        "ablation-calibration",
    }


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
    used = split != "unused"
    by_subject = pd.Series(split[used]).groupby(meta["subject"].to_numpy()[used]).nunique()
    assert (by_subject == 1).all()  # patient split: no patient in two splits
    labels = meta["label"].to_numpy()
    assert labels[split == "train"].sum() * 2 == (split == "train").sum()  # training split balanced 1:1
    assert (split == "test").sum() == (meta["centre"] == "JHH").sum()  # the unseen centre keeps every channel
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
    kwargs = dict(models=["sss"], seeds=[0, 1], split_modes=["channel"], progress=False, preset="smoke")
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
    settings = (
        ["JHH", "NIH", "UMMC", "all"] if protocol == "paper-table1" else ["unseen JHH", "unseen NIH", "unseen UMMC"]
    )
    models = (SSS_MODEL, *BASELINES)
    assert len(results) == len(models) * len(settings) * 2
    assert results[["f1", "auc", "accuracy", "auprc", "balanced_accuracy"]].notna().all().all()
    tables = (tmp_path / "tables.md").read_text()
    for mode in ("channel split", "patient split"):
        assert mode in tables
    for model in models:
        assert tables.count(f"| {model} |") == 4  # 2 split modes × (main + extra metrics)
    for setting in settings:
        for metric in ("F1", "AUC", "Acc", "AUPRC", "Bal. acc"):
            assert f"{setting} {metric}" in tables


def test_resuming_with_a_changed_preset_reruns_only_the_runs_it_changes(cohort, tmp_path, caplog):
    import dataclasses
    import json

    from sss_viewer.experiments import runner

    kwargs = dict(models=["dlinear", "sss"], seeds=[0], split_modes=["channel"], progress=False, preset="smoke")
    first = run_experiment("paper-table2", cohort, tmp_path, max_new_runs=2, **kwargs)
    assert len(first) == 2
    records = {p.name: json.loads(p.read_text()) for p in (tmp_path / "runs").iterdir()}
    original = runner.PRESETS["smoke"]
    changed = dataclasses.replace(original, baseline={**original.baseline, "epochs": 2})
    with caplog.at_level("WARNING", logger="sss_viewer.experiments.runner"):
        results = run_experiment("paper-table2", cohort, tmp_path, **{**kwargs, "preset": changed})
    assert len(results) == 6
    rerun = [name for name, rec in records.items() if rec["model"] == "dlinear"]
    kept = [name for name, rec in records.items() if rec["model"] == "sss"]
    assert caplog.text.count("was made with other settings") == len(rerun)
    for name in rerun:
        assert json.loads((tmp_path / "runs" / name).read_text())["settings_digest"] != records[name]["settings_digest"]
    for name in kept:
        assert json.loads((tmp_path / "runs" / name).read_text()) == records[name]


def test_gpu_kernels_reach_the_patchtst_runs_and_are_recorded_not_a_setting_of_the_result(cohort, tmp_path, caplog):
    """``patchtst_gpu_kernels`` (``experiment --gpu-kernels``) sets PatchTST's, like the device: a resume without it keeps
    the finished runs; a plan without any PatchTST run is refused before anything is written."""
    import dataclasses
    import json

    from sss_viewer.experiments.runner import PRESETS, run_settings_digest, sss_run_config

    smoke = PRESETS["smoke"]  # its d_model of 8 is below the fused feed-forward kernels' 16
    plain = dataclasses.replace(smoke, sss={**smoke.sss, "model_params": {"d_model": 16, "d_ff": 16, "n_heads": 2}})
    fused = dataclasses.replace(plain, patchtst_gpu_kernels="fused")
    runs = {
        r.model: r for r in plan_runs("paper-table2", ["A", "B"], ["sss", "sss-recipe", "patchtst"], [0], ["channel"])
    }
    assert sss_run_config(fused, runs["sss"]).model_params["gpu_kernels"] == "fused"
    assert "gpu_kernels" not in sss_run_config(plain, runs["sss"]).model_params
    assert "gpu_kernels" not in sss_run_config(fused, runs["sss-recipe"]).model_params  # MiniRocket: nothing to fuse
    assert run_settings_digest(fused, runs["sss"]) == run_settings_digest(plain, runs["sss"])
    assert run_settings_digest(fused, runs["patchtst"]) == run_settings_digest(plain, runs["patchtst"])

    kwargs = dict(models=["sss"], seeds=[0], split_modes=["channel"], progress=False)
    first = run_experiment("paper-table2", cohort, tmp_path, max_new_runs=1, preset=fused, **kwargs)
    assert list(first["gpu_kernels"]) == ["fused"]
    (record,) = [json.loads(p.read_text()) for p in (tmp_path / "runs").iterdir()]
    with caplog.at_level("WARNING", logger="sss_viewer.experiments.runner"):
        results = run_experiment("paper-table2", cohort, tmp_path, preset=plain, **kwargs)
    assert len(results) == 3 and "was made with other settings" not in caplog.text
    assert json.loads((tmp_path / "runs" / f"{record['key']}.json").read_text()) == record  # kept, not run again
    assert results["gpu_kernels"].isna().sum() == 2

    empty = tmp_path / "refused"
    with pytest.raises(
        ValueError, match=r"gpu_kernels='fused' applies to SSS runs with a PatchTST local model.*dlinear"
    ):
        run_experiment("paper-table2", cohort, empty, preset=fused, **{**kwargs, "models": ["dlinear", "sss-recipe"]})
    too_small = dataclasses.replace(smoke, patchtst_gpu_kernels="fused")
    with pytest.raises(ValueError, match=r"Preset 'smoke', run sss: Invalid gpu_kernels='fused' with d_model=8"):
        run_experiment("paper-table2", cohort, empty, preset=too_small, **kwargs)
    assert not empty.exists()


def test_a_folder_of_another_protocol_is_refused(cohort, tmp_path):
    kwargs = dict(models=["dlinear"], seeds=[0], split_modes=["channel"], progress=False, preset="smoke")
    run_experiment("paper-table2", cohort, tmp_path, max_new_runs=1, **kwargs)
    with pytest.raises(ValueError, match="holds runs of protocol 'paper-table2'"):
        run_experiment("paper-table1", cohort, tmp_path, **kwargs)


def test_a_preset_that_cannot_fit_in_memory_is_refused_before_training(cohort, tmp_path):
    from sss_viewer.experiments.memory import check_fits_in_memory, estimate_run_bytes
    from sss_viewer.experiments.runner import PRESETS, sss_run_config

    run = plan_runs("paper-table1", ["JHH", "NIH", "UMMC"], ["sss"], [0], ["channel"])[0]
    config = sss_run_config(PRESETS["paper"], run)
    estimate = estimate_run_bytes(cohort, preprocess_preset("default"), config)
    assert estimate["window_index"] > 0 and estimate["total"] == sum(v for k, v in estimate.items() if k != "total")
    with pytest.raises(ValueError, match=r"Preset 'paper' cannot fit in memory.*GB are available"):
        check_fits_in_memory(cohort, preprocess_preset("default"), config, preset="paper", available=10_000_000)
    assert check_fits_in_memory(cohort, preprocess_preset("default"), config, preset="paper", available=1 << 40)
    with pytest.raises(ValueError, match="cannot fit in memory"):  # the runner checks before any run
        import sss_viewer.experiments.runner as runner_module

        original = runner_module.check_fits_in_memory
        runner_module.check_fits_in_memory = lambda *a, **k: original(*a, **k, available=1000)
        try:
            run_experiment(
                "paper-table1",
                cohort,
                tmp_path,
                models=["sss"],
                seeds=[0],
                split_modes=["channel"],
                progress=False,
                preset="smoke",
            )
        finally:
            runner_module.check_fits_in_memory = original
    assert not (tmp_path / "runs").exists() or not any((tmp_path / "runs").iterdir())


def test_cross_validation_tables_aggregate_folds_and_select_on_validation():
    from sss_viewer.experiments.tables import SELECTED_LABEL, markdown_tables

    rows = []
    for seed in (0, 1):
        for fold in range(1, 6):
            for label, auc, val in (("sss", 0.9, 0.95), ("sss window_length=512", 0.8, 0.99 if fold == 1 else 0.5)):
                rows.append(
                    {
                        "protocol": "bonn-ablation",
                        "model": "sss",
                        "label": label,
                        "setting": f"fold {fold}",
                        "split_mode": "cv",
                        "seed": seed,
                        "auc": auc,
                        "auprc": auc,
                        "balanced_accuracy": auc,
                        "f1": auc,
                        "accuracy": auc,
                        "val_auc": val,
                    }
                )
    text = markdown_tables(pd.DataFrame(rows), "bonn-ablation")
    assert "5 folds x 2 repeat(s)" in text
    assert "| sss | **0.900 ± 0.000**" in text and "| 10 |" in text
    # per fold the best validation AUC picks the variant: fold 1 -> L=512, the others -> sss
    assert f"| {SELECTED_LABEL} | **0.880 ± 0.040**" in text
    assert "Chosen: sss (8x), sss window_length=512 (2x)" in text


def test_named_sss_rows_of_the_tables():
    """``sss-recipe`` is the minirocket training preset at its own sizes; ``sss-patchtst-l1024`` the preset's SSS at L=1024."""
    from sss_viewer.engine.config import train_preset
    from sss_viewer.experiments.protocols import check_models
    from sss_viewer.experiments.runner import PRESETS, sss_run_config

    runs = {
        r.model: r
        for r in plan_runs("paper-table1", ["A", "B"], ["sss", "sss-recipe", "sss-patchtst-l1024"], [3], ["patient"])
    }
    recipe = sss_run_config(PRESETS["cpu"], runs["sss-recipe"])
    assert recipe == train_preset("minirocket", seed=3, device="auto")
    plain, wide = (
        sss_run_config(PRESETS["cpu"], runs["sss"]),
        sss_run_config(PRESETS["cpu"], runs["sss-patchtst-l1024"]),
    )
    assert (plain.backbone, plain.window_length) == ("patchtst", 256)
    assert (wide.backbone, wide.window_length, wide.train_stride, wide.inference_stride) == (
        "patchtst",
        1024,
        1024,
        256,
    )
    assert wide.model_params == plain.model_params and wide.epochs == plain.epochs
    with pytest.raises(ValueError, match="SSS backbone"):
        check_models(["sss-recipes"])


def test_the_hydra_ensemble_row_is_two_hydra_recipe_windows():
    """``sss-hydra-ensemble``: the hydra_minirocket training preset at L = 1024 and at L = 2048, its own strides."""
    from sss_viewer.engine.config import train_preset
    from sss_viewer.experiments.protocols import ensemble_members
    from sss_viewer.experiments.runner import PRESETS, run_settings_digest, sss_run_config

    (run,) = plan_runs("paper-table1", ["A"], ["sss-hydra-ensemble"], [2], ["channel"])[:1]
    members = ensemble_members(run)
    for preset in ("cpu", "paper"):  # whatever the experiment preset
        configs = [sss_run_config(PRESETS[preset], m) for m in members]
        assert configs == [
            train_preset("hydra_minirocket", seed=2, device="auto", window_length=L) for L in (1024, 2048)
        ]
        assert run_settings_digest(PRESETS[preset], run) not in {
            run_settings_digest(PRESETS[preset], m) for m in members
        }
    assert run.label == "sss-hydra-ensemble"


def test_the_cpu_grid_script_runs_every_sss_row_and_baseline():
    """training/cpu_grid.sh names its rows by hand: they must be the project's."""
    import re
    from pathlib import Path

    from sss_viewer.experiments.protocols import check_models

    script = (Path(__file__).parents[2] / "training" / "cpu_grid.sh").read_text()
    rows = {
        name: re.search(rf'^{name}="([^"]+)"', script, re.M).group(1).split() for name in ("SSS_ROWS", "BASELINE_ROWS")
    }
    check_models(rows["SSS_ROWS"] + rows["BASELINE_ROWS"])
    assert rows["BASELINE_ROWS"] == list(BASELINES)
    # every named SSS row but the Hydra ensemble, which is too slow for 2 cores (the script says how to add it)
    assert rows["SSS_ROWS"] == ["sss", *(r for r in SSS_ROWS if r != "sss-hydra-ensemble")]
    assert "sss-hydra-ensemble" in script

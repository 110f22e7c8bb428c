"""Full-batch L-BFGS head on frozen features, the feature memo across runs, and the MiniRocket training preset."""

import numpy as np
import pytest
import torch

from sss_viewer.engine._head_fit import fit_head_lbfgs
from sss_viewer.engine.bundle import ModelBundle
from sss_viewer.engine.config import TrainConfig, train_preset
from sss_viewer.engine.inference import score_recording
from sss_viewer.engine.training import train
from sss_viewer.metrics import binary_auc
from sss_viewer.models.minirocket import MiniRocketClassifier
from sss_viewer.models.rocket import RunningStandardizer


def _linear_task(n: int, n_features: int, seed: int):
    """Features (n, F) with mean 5 and sd 3 whose label depends on the first two features."""
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, n_features)).astype(np.float32) * 3 + 5
    y = (x[:, 0] - x[:, 1] > 0).astype(np.float32)
    return torch.from_numpy(x), torch.from_numpy(y)


def _FrozenHeadModel(n_features: int) -> MiniRocketClassifier:
    """MiniRocket's trainable part (standardiser + linear head) on given features."""
    model = MiniRocketClassifier(input_length=64, num_features=84)
    model.n_features = n_features
    model.norm = RunningStandardizer(n_features)
    model.head = torch.nn.Linear(n_features, 1)
    return model


def _bce(y):
    return lambda logits: torch.nn.functional.binary_cross_entropy_with_logits(logits, y)


def test_lbfgs_reaches_the_logistic_optimum_and_separates_held_out_rows():
    x, y = _linear_task(400, 20, seed=0)
    x_val, y_val = _linear_task(200, 20, seed=1)
    model = _FrozenHeadModel(20)
    history, best = fit_head_lbfgs(
        model, x, x_val, _bce(y), lambda p: binary_auc(p, y_val.numpy().astype(int)), (1e-3,), max_iter=200
    )
    assert best == 1e-3 and len(history) == 1
    assert history[0]["val_auc"] > 0.99
    # The gradient of the penalised objective vanishes at the returned head (it converged).
    params = [p for p in model.parameters() if p.requires_grad]
    loss = _bce(y)(model.classify(x)) + 1e-3 * sum(p.square().sum() for p in params if p.ndim > 1)
    grads = torch.autograd.grad(loss, params)
    assert max(float(g.abs().max()) for g in grads) < 1e-4
    # The standardiser holds the statistics of the training rows (mean 5, sd 3), not running batch updates.
    torch.testing.assert_close(model.norm.mean.float(), x.mean(0).double().float(), atol=1e-4, rtol=0)
    assert int(model.norm.count) == 400


def test_lbfgs_standardises_the_training_features_once_not_at_every_evaluation():
    x, y = _linear_task(400, 20, seed=0)
    x_val, y_val = _linear_task(200, 20, seed=1)
    model = _FrozenHeadModel(20)
    rows_scaled = []
    model.norm.register_forward_hook(lambda module, args, out: rows_scaled.append(out.shape[0]))
    grid = (1e-1, 1e-3)
    history, _ = fit_head_lbfgs(model, x, x_val, _bce(y), lambda p: binary_auc(p, y_val.numpy().astype(int)), grid, 200)
    assert sum(h["iterations"] for h in history) > 10  # the solver evaluated the head many times ...
    assert rows_scaled == [400, 200, 200]  # ... on training features scaled once; validation once per penalty


def test_penalty_is_chosen_on_validation_and_ties_go_to_the_first():
    x, y = _linear_task(60, 200, seed=2)  # few rows, many features: strong penalties generalise better
    x_val, y_val = _linear_task(300, 200, seed=3)

    def score(p):
        return binary_auc(p, y_val.numpy().astype(int))

    grid = (10.0, 1e-1, 1e-5)
    history, best = fit_head_lbfgs(_FrozenHeadModel(200), x, x_val, _bce(y), score, grid, max_iter=100)
    scores = {h["l2"]: h["val_auc"] for h in history}
    assert [h["l2"] for h in history] == list(grid)
    assert scores[best] == max(scores.values())
    assert best == next(l2 for l2 in grid if scores[l2] == max(scores.values()))
    # A constant score ties every penalty: the first (strongest) one is kept.
    _, tied = fit_head_lbfgs(_FrozenHeadModel(200), x, x_val, _bce(y), lambda p: 0.5, grid, max_iter=5)
    assert tied == 10.0


def test_sss_training_with_lbfgs_head_records_the_choice_and_round_trips(toy_cohort, tmp_path):
    config = train_preset(
        "default",
        backbone="minirocket",
        model_params={"num_features": 336},
        window_length=128,
        train_stride=64,
        val_stride=64,
        calibrator="none",
        head_solver="lbfgs",
        head_l2=(1e-1, 1e-3),
        head_max_iter=50,
        device="cpu",
    )
    bundle = train(toy_cohort, config, progress=False)
    info = bundle.info
    assert info["head_l2"] in (1e-1, 1e-3)
    assert [h["l2"] for h in info["history"]] == [1e-1, 1e-3]
    assert all(h["iterations"] > 0 for h in info["history"])
    bundle.save(tmp_path / "model")
    loaded = ModelBundle.load(tmp_path / "model")
    rec = toy_cohort[0]
    a = score_recording(bundle, rec, device="cpu", progress=False).channels["score"].to_numpy()
    b = score_recording(loaded, rec, device="cpu", progress=False).channels["score"].to_numpy()
    np.testing.assert_allclose(a, b, atol=1e-6)


def test_refit_fits_the_chosen_penalty_again_on_training_and_validation_windows(toy_cohort):
    common = {
        "backbone": "minirocket",
        "model_params": {"num_features": 336},
        "window_length": 128,
        "train_stride": 64,
        "val_stride": 64,
        "calibrator": "none",
        "head_solver": "lbfgs",
        "head_l2": (1e-1, 1e-3),
        "head_max_iter": 50,
        "device": "cpu",
    }
    plain = train(toy_cohort, train_preset("default", **common), progress=False)
    refit = train(toy_cohort, train_preset("default", refit_on_train_val=True, **common), progress=False)
    assert refit.info["split"] == plain.info["split"] and refit.info["head_l2"] == plain.info["head_l2"]
    assert [h["l2"] for h in refit.info["refit_history"]] == [plain.info["head_l2"]]  # no second choice
    torch.testing.assert_close(refit.model.features.biases, plain.model.features.biases)  # the same front end
    assert float(refit.model.norm.count) == float(plain.model.norm.count) + _n_val_windows(refit, toy_cohort, common)
    assert not torch.equal(refit.model.head.weight, plain.model.head.weight)
    assert "refit_on_train_val" not in plain.info["train_config"]  # older run records keep their settings digest


def _n_val_windows(bundle, cohort, params: dict) -> int:
    """Validation windows of the bundle's training (its split's validation patients, labelled channels)."""
    from sss_viewer.engine.training import _Subset
    from sss_viewer.windows.series_set import build_series_set

    config = train_preset("default", **params)
    series_set = build_series_set(cohort, config.preprocess, min_length=config.window_length, progress=False)
    meta = series_set.meta
    in_val = meta["subject"].isin(bundle.info["split"]["val"]).to_numpy() & (meta["label"].to_numpy() >= 0)
    return len(_Subset(series_set, in_val, config.window_length, config.val_stride))


@pytest.mark.parametrize("bad", [{"head_solver": "adam"}, {"head_solver": "lbfgs", "calibrator": "isotonic"}])
def test_refit_without_lbfgs_head_or_with_a_calibrator_is_refused_by_name(bad):
    with pytest.raises(ValueError, match="refit_on_train_val=True needs head_solver='lbfgs'"):
        TrainConfig(refit_on_train_val=True, **{"calibrator": "none", **bad})


def test_lbfgs_head_is_refused_for_a_trained_front_end(toy_cohort):
    config = train_preset(
        "default",
        window_length=128,
        train_stride=64,
        val_stride=64,
        head_solver="lbfgs",
        device="cpu",
        model_params={"d_model": 16, "d_ff": 32, "n_heads": 2, "n_layers": 1},
    )
    with pytest.raises(ValueError, match="head_solver='lbfgs' needs a local model with a frozen front end"):
        train(toy_cohort, config, progress=False)


@pytest.mark.parametrize("bad", [(), (-1.0,), ("strong",), (float("nan"),)])
def test_bad_penalty_grids_are_named(bad):
    with pytest.raises(ValueError, match="head_l2"):
        TrainConfig(head_l2=bad)


def test_unknown_head_solver_is_named():
    with pytest.raises(ValueError, match="head_solver"):
        TrainConfig(head_solver="sgd")


def test_frozen_features_are_reused_across_runs_that_share_the_front_end(toy_cohort, caplog):
    """Runs given one memo and differing only in head training/calibration reuse the features; another
    front end does not, and a run without a memo computes its own."""
    from sss_viewer.engine._feature_memo import FeatureMemo
    from sss_viewer.windows.series_set import build_series_set

    base = dict(
        backbone="minirocket",
        model_params={"num_features": 168},
        window_length=128,
        train_stride=64,
        val_stride=64,
        epochs=1,
        device="cpu",
    )
    series_set = build_series_set(
        toy_cohort, train_preset("default", **base).preprocess, min_length=128, progress=False
    )
    memo = FeatureMemo()
    with caplog.at_level("INFO", logger="sss_viewer.engine.training"):
        first = train([], train_preset("default", **base), progress=False, series_set=series_set, feature_memo=memo)
        assert "reusing the frozen features" not in caplog.text and len(memo) == 2
        second = train(
            [],
            train_preset("default", calibrator="none", **base),
            progress=False,
            series_set=series_set,
            feature_memo=memo,
        )
        assert caplog.text.count("reusing the frozen features") == 2  # training and validation windows
        caplog.clear()
        other = dict(base, model_params={"num_features": 168, "seed": 1})
        train([], train_preset("default", **other), progress=False, series_set=series_set, feature_memo=memo)
        assert "reusing the frozen features" not in caplog.text
        train([], train_preset("default", **base), progress=False, series_set=series_set)
        assert (
            "reusing the frozen features" not in caplog.text
        )  # no memo given: nothing shared behind the caller's back
    # Same data, same front end, same head training: the reused features give the same head.
    torch.testing.assert_close(first.model.head.weight, second.model.head.weight)


def test_feature_memo_forgets_the_oldest_beyond_its_budget():
    import gc

    from sss_viewer.engine._feature_memo import FeatureMemo
    from sss_viewer.windows.store import SeriesStore

    memo = FeatureMemo(max_bytes=2 * 10 * 4 * 4)  # two (10, 4) float32 matrices
    store = SeriesStore.from_series([np.zeros(100, np.float32)])
    cpu = torch.device("cpu")
    for i in range(3):
        memo.remember(store, "front", np.array([i]), 8, cpu, torch.full((10, 4), float(i)))
    assert memo.recall(store, "front", np.array([0]), 8, cpu) is None
    assert float(memo.recall(store, "front", np.array([2]), 8, cpu)[0, 0]) == 2.0
    assert memo.recall(store, "other", np.array([2]), 8, cpu) is None
    assert memo.recall(store, "front", np.array([2]), 16, cpu) is None
    del store  # the memo does not keep a store alive
    gc.collect()
    assert len(memo) == 0


def test_minirocket_training_preset_is_the_real_data_recipe_and_a_cli_choice():
    from sss_viewer.cli import build_parser
    from sss_viewer.engine.config import TRAIN_PRESETS
    from sss_viewer.experiments.runner import PRESETS

    for name in TRAIN_PRESETS:  # the CLI reads its choices from sss_viewer.engine.config
        assert build_parser().parse_args(["train", "data", "--out", "m", "--preset", name]).preset == name
    config = train_preset("minirocket")
    assert PRESETS["bonn"].sss == {"preset": "minirocket", "calibrator": "none"}  # the recipe, written once
    assert config.backbone == "minirocket" and config.model_params == {"num_features": 9996, "revin": False}
    assert config.calibrator == "venn-abers"  # every channel score with its interval (docs/results.md)
    # Another backbone does not inherit MiniRocket's sizes.
    assert train_preset("minirocket", backbone="patchtst").model_params == {}


def test_cli_train_passes_the_head_solver_and_preset():
    from sss_viewer.cli import build_parser
    from sss_viewer.commands.train import _train_overrides

    args = build_parser().parse_args(
        ["train", "data", "--out", "m", "--preset", "minirocket", "--head-solver", "lbfgs"]
    )
    config = train_preset(args.preset, **_train_overrides(args))
    assert config.backbone == "minirocket" and config.head_solver == "lbfgs"


def test_a_subclass_with_another_signature_is_told_to_declare_its_checks():
    class Other(MiniRocketClassifier):
        def __init__(self, width: int):
            super().__init__(input_length=64, num_features=84)

    with pytest.raises(TypeError, match="does not take .*declares checks for"):
        Other(3)

"""Hydra and Hydra + MiniRocket: the transform's definition, its scaling, SSS training and the whole-segment peer."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from sss_viewer.engine.config import train_preset
from sss_viewer.models import build_model, build_window_model, model_from_config
from sss_viewer.models import hydra_features as hydra_features_module
from sss_viewer.models.hydra import (
    HydraClassifier,
    HydraFeatures,
    HydraMiniRocketClassifier,
    SparseStandardizer,
    hydra_dilations,
)


def test_dilations_and_feature_counts_follow_the_paper():
    assert hydra_dilations(9) == [1]
    assert hydra_dilations(1024) == [1, 2, 4, 8, 16, 32, 64]  # 8 * 128 = 1024 > 1023
    assert hydra_dilations(1025) == [1, 2, 4, 8, 16, 32, 64, 128]
    assert hydra_dilations(4097)[-1] == 512  # a Bonn segment
    assert HydraClassifier().n_features == 7 * 2 * 64 * 8 == 7168
    assert HydraMiniRocketClassifier().n_features == 7168 + 9996
    features = HydraFeatures(1024, kernels_per_group=8, groups=64)
    assert features.weights.shape == (7, 2, 32 * 8, 9)
    torch.testing.assert_close(features.weights.sum(-1), torch.zeros(7, 2, 256), atol=1e-6, rtol=0)  # centred
    torch.testing.assert_close(features.weights.abs().sum(-1), torch.ones(7, 2, 256))  # unit L1 norm
    assert HydraFeatures(64, kernels_per_group=4, groups=1).weights.shape[1] == 1  # one group: no difference


@pytest.mark.parametrize(
    ("params", "match"),
    [
        ({"groups": 3}, "Invalid groups=3: expected 1 or an even number"),
        ({"input_length": 8}, "Invalid input_length=8: expected at least 9"),
        ({"kernels_per_group": 0}, "Invalid kernels_per_group=0"),
        ({"seed": -2}, "Invalid seed=-2"),
    ],
)
def test_bad_arguments_are_named(params, match):
    with pytest.raises(ValueError, match=match):
        build_model("hydra", **params)


def test_input_is_checked_with_the_model_name():
    model = build_model("hydra", input_length=64, groups=4).eval()
    with pytest.raises(ValueError, match=r"HydraClassifier needs sequences of at least 9 samples, got T=8"):
        model(torch.randn(2, 8))
    with pytest.raises(ValueError, match=r"HydraMiniRocketClassifier expects a float tensor of shape \(B, T\)"):
        build_model("hydra_minirocket", input_length=64, groups=4, num_features=84)(torch.randn(2, 1, 64))


def test_kernels_are_determined_by_the_seed():
    a, b, c = (HydraFeatures(128, 4, 8, seed=s) for s in (3, 3, 4))
    assert torch.equal(a.weights, b.weights) and not torch.equal(a.weights, c.weights)
    x = torch.randn(3, 128)
    assert torch.equal(a(x), b(x))
    model = build_model("hydra", input_length=128, kernels_per_group=4, groups=8, seed=3)
    clone = model_from_config(model.get_config())
    assert torch.equal(clone.features.weights, model.features.weights)


def _sign_pair(length: int) -> HydraFeatures:
    """Two groups of two hand-set kernels (one group on the input, one on its difference): ``+x[t]`` and ``-x[t]``."""
    features = HydraFeatures(length, kernels_per_group=2, groups=2)
    centre = torch.zeros(9)
    centre[4] = 1.0
    features.weights.copy_(torch.stack([centre, -centre]).expand_as(features.weights))
    return features


def test_counts_are_what_the_definition_says_on_a_hand_built_signal():
    """Kernel 0 (+x) wins the max where x > 0 and is the min where x < 0; kernel 1 (-x) the reverse; at x = 0
    both tie and both count as the min (the tie rule of the module docstring)."""
    x = torch.tensor([[2.0, -1.0, 0.0, 3.0, -4.0, 0.5, 0.0, -0.5, 1.0, 2.0, -3.0, 1.0, 0.0, 0.0, 2.0, -1.0]])
    features = _sign_pair(16)
    assert features.dilations == [1]
    out = features(x).view(2, 2, 1, 2)  # (input / difference, soft max / hard min, group, kernel)
    for branch, series in enumerate((x[0], torch.diff(x[0]))):
        positive, negative = series.clamp(min=0), (-series).clamp(min=0)
        torch.testing.assert_close(out[branch, 0, 0], torch.stack([positive.sum(), negative.sum()]))
        zero = int((series == 0).sum())
        expected_min = torch.tensor([float((series < 0).sum() + zero), float((series > 0).sum() + zero)])
        torch.testing.assert_close(out[branch, 1, 0], expected_min)
    # Counts are per input_length positions: the same signal twice over, read by the same model, counts the same.
    torch.testing.assert_close(features(torch.cat([x, x], 1))[:, :4], features(x)[:, :4])


def test_features_do_not_depend_on_the_batch_or_the_chunking(monkeypatch):
    torch.manual_seed(0)
    features = HydraFeatures(256, kernels_per_group=8, groups=16, seed=1)
    x = torch.randn(12, 256)
    whole = features(x)
    alone = torch.cat([features(x[i : i + 1]) for i in range(len(x))])
    torch.testing.assert_close(alone, whole, rtol=1e-6, atol=1e-5)
    monkeypatch.setattr(hydra_features_module, "_CPU_CHUNK_ELEMENTS", 1000)  # rows one by one, positions in stretches
    torch.testing.assert_close(features(x), whole, rtol=1e-6, atol=1e-4)
    long = torch.randn(1, 5000)
    chunked = features(long)
    monkeypatch.undo()
    torch.testing.assert_close(chunked, features(long), rtol=1e-6, atol=1e-4)


def test_float32_agrees_with_float64():
    torch.manual_seed(0)
    features = HydraFeatures(256, kernels_per_group=8, groups=16, seed=0)
    x = torch.randn(8, 256, dtype=torch.float64)
    single, double = features(x.float()), features(x)
    assert single.dtype == torch.float32 and double.dtype == torch.float64
    torch.testing.assert_close(single.double(), double, rtol=1e-5, atol=1e-4)


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device")
def test_cuda_agrees_with_the_cpu():
    torch.manual_seed(0)
    model = build_model("hydra_minirocket", input_length=512, num_features=840)
    x = torch.randn(64, 512)
    model.initialise_from_data(x)
    model.eval()
    cpu = model.frozen_features(x)
    gpu = model.cuda().frozen_features(x.cuda()).cpu()
    torch.testing.assert_close(gpu, cpu, rtol=1e-4, atol=1e-3)


def test_sparse_standardizer_scales_like_the_paper():
    """Sparse columns: root of the clipped value, (v - mean) / (std + zero_fraction ** 4), zeros kept at 0."""
    rng = np.random.default_rng(0)
    raw = rng.standard_normal((50, 4)) * 3
    raw[:30, 1] = 0.0  # mostly zero
    norm = SparseStandardizer(torch.tensor([True, True, False, False]), eps=0.0)
    feats = torch.from_numpy(raw)
    norm.train()
    norm(feats[:20])
    norm(feats[20:])  # running statistics over both batches
    norm.eval()
    out = norm(feats).numpy()
    rooted = np.where([True, True, False, False], np.sqrt(np.clip(raw, 0, None)), raw)
    damp = np.where([True, True, False, False], (rooted == 0).mean(0) ** 4, 0.0)
    expected = (rooted - rooted.mean(0)) / (rooted.std(0) + damp)
    expected[:, :2] = np.where(rooted[:, :2] == 0, 0.0, expected[:, :2])
    np.testing.assert_allclose(out, expected, rtol=1e-10, atol=1e-12)
    norm.reset()
    assert float(norm.count) == 0 and float(norm.zeros.sum()) == 0
    norm.update(feats)  # what the L-BFGS head fit calls
    np.testing.assert_allclose(norm(feats).numpy(), expected, rtol=1e-10, atol=1e-12)


def test_hydra_minirocket_concatenates_the_two_front_ends():
    torch.manual_seed(0)
    model = build_window_model("hydra_minirocket", 128, kernels_per_group=4, groups=8, num_features=168)
    x = torch.randn(20, 128)
    model.initialise_from_data(x)
    model.eval()
    feats = model.frozen_features(x)
    hydra = build_window_model("hydra", 128, kernels_per_group=4, groups=8)
    torch.testing.assert_close(feats[:, : hydra.n_features], hydra.frozen_features(x))
    torch.testing.assert_close(feats[:, hydra.n_features :], model.minirocket(x))
    assert bool(model.norm.sparse[: hydra.n_features].all()) and not bool(model.norm.sparse[hydra.n_features :].any())
    unfitted = build_window_model("hydra_minirocket", 128, kernels_per_group=4, groups=8, num_features=168).eval()
    with pytest.raises(RuntimeError, match="MiniRocket's biases were never fitted"):
        unfitted(x)


@pytest.mark.parametrize("preset", ["hydra", "hydra_minirocket"])
def test_tiny_sss_run_with_the_hydra_presets_reaches_a_finite_validation_auc(toy_cohort, preset):
    sizes = {"kernels_per_group": 4, "groups": 8, "revin": False}
    if preset == "hydra_minirocket":
        sizes["num_features"] = 168
    config = train_preset(
        preset,
        window_length=128,
        train_stride=64,
        val_stride=64,
        inference_stride=64,
        epochs=2,
        model_params=sizes,
        calibrator="none",
        device="cpu",
        head_solver="lbfgs" if preset == "hydra_minirocket" else "adam",
        head_l2=(1e-2,),
        head_max_iter=30,
    )
    assert config.backbone == preset
    from sss_viewer.engine.training import train

    bundle = train(toy_cohort, config, progress=False)
    aucs = [h["val_auc"] for h in bundle.info["history"]]
    assert aucs and np.isfinite(aucs).all()
    assert bundle.model.get_config()["name"] == preset


def test_presets_swap_only_the_backbone():
    base, hydra = train_preset("minirocket"), train_preset("hydra")
    assert hydra.backbone == "hydra" and hydra.model_params == {"kernels_per_group": 8, "groups": 64, "revin": False}
    assert train_preset("hydra_minirocket").model_params["num_features"] == 9996
    differing = {k for k, v in base.to_dict().items() if hydra.to_dict()[k] != v}
    assert differing == {"backbone", "model_params"}


@pytest.mark.parametrize(
    ("transform", "head", "fit_on"), [("hydra_minirocket", "ridge", "train"), ("hydra", "logistic", "train+val")]
)
def test_whole_segment_peer_fits_and_scores(toy_series_split, transform, head, fit_on):
    from sss_viewer.baselines.hydra_reference import fit_hydra_peer
    from sss_viewer.metrics import binary_auc

    series_set, split = toy_series_split
    labels = series_set.labels()
    result = fit_hydra_peer(
        series_set,
        split,
        transform=transform,
        head=head,
        fit_on=fit_on,
        kernels_per_group=4,
        groups=8,
        num_features=168,
        device="cpu",
    )
    n_dilations = len(hydra_dilations(int(series_set.store.lengths[split == "train"].min())))  # the reference length
    assert result.n_features == n_dilations * 2 * 8 * 4 + (168 if transform == "hydra_minirocket" else 0)
    assert result.val_probs.shape == ((split == "val").sum(),) and result.test_probs.shape == ((split == "test").sum(),)
    assert np.isfinite(result.test_probs).all() and ((result.test_probs > 0) & (result.test_probs < 1)).all()
    assert (result.alpha is not None) == (head == "ridge") and (result.C is not None) == (head == "logistic")
    assert binary_auc(result.test_probs, labels[split == "test"]) > 0.5  # the toy SOZ channels carry spikes


def test_whole_segment_peer_is_a_bonn_model_and_checks_its_options(toy_series_split):
    from sss_viewer.baselines.hydra_reference import fit_hydra_peer
    from sss_viewer.experiments.protocols import HYDRA_MINIROCKET_RIDGE, PROTOCOLS, plan_runs
    from sss_viewer.experiments.runner import PRESETS, run_settings_digest

    assert HYDRA_MINIROCKET_RIDGE in PROTOCOLS["bonn"].models
    runs = plan_runs("bonn", ["Bonn"], [HYDRA_MINIROCKET_RIDGE, "sss-hydra", "hydra_minirocket"], [0], ["cv"])
    assert {r.model for r in runs} == {HYDRA_MINIROCKET_RIDGE, "sss-hydra", "hydra_minirocket"}
    assert len({run_settings_digest(PRESETS["bonn"], r) for r in runs if r.setting == "fold 1"}) == 3
    series_set, split = toy_series_split
    with pytest.raises(ValueError, match="Invalid head='svm'"):
        fit_hydra_peer(series_set, split, head="svm")
    with pytest.raises(ValueError, match="Invalid transform='rocket'"):
        fit_hydra_peer(series_set, split, transform="rocket")
    with pytest.raises(ValueError, match="Invalid fit_on='all'"):
        fit_hydra_peer(series_set, split, fit_on="all")


@pytest.mark.parametrize("head", ["ridge", "logistic"])
def test_the_full_fold_peer_keeps_validation_scores_out_of_sample(toy_series_split, head):
    """fit_on="train+val" changes the test scores only: the threshold is chosen on a head that never saw validation."""
    from sss_viewer.baselines.hydra_reference import fit_hydra_peer

    series_set, split = toy_series_split
    kwargs = dict(transform="hydra", head=head, kernels_per_group=4, groups=8, device="cpu")
    inner = fit_hydra_peer(series_set, split, fit_on="train", **kwargs)
    full = fit_hydra_peer(series_set, split, fit_on="train+val", **kwargs)
    np.testing.assert_allclose(full.val_probs, inner.val_probs, rtol=1e-10, atol=1e-12)
    assert not np.allclose(full.test_probs, inner.test_probs)  # another training set, another model

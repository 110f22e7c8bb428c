"""Tests for the backbone registry, RevIN and PatchTST (looped over every registered backbone)."""

from __future__ import annotations

import json

import pytest
import torch
import torch.nn.functional as F
from safetensors.torch import load_file, save_file

from sss_viewer.models import MODEL_REGISTRY, PatchTST, RevIN, build_model, model_from_config
from sss_viewer.models import patchtst as patchtst_module

SMALL_PARAMS: dict[str, dict] = {
    "patchtst": {
        "window_length": 64,
        "patch_len": 8,
        "patch_stride": 4,
        "d_model": 8,
        "d_ff": 16,
        "n_heads": 2,
        "n_layers": 1,
    },
    "timesnet": {"window_length": 64, "d_model": 8, "d_ff": 8, "num_kernels": 2, "top_k": 2, "n_layers": 1},
    "moderntcn": {"window_length": 64, "d_model": 8, "dw_dims": 8, "n_layers": 1},
    "dlinear": {"window_length": 64, "d_hidden": 8},
    "rocket": {"num_kernels": 50, "input_length": 64},
    "mamba": {"d_model": 8, "n_layers": 1, "patch_size": 16, "patch_stride": 8},
    "gru": {"d_model": 8, "n_layers": 1},
    "lstm": {"d_model": 8, "n_layers": 1},
    "minirocket": {"input_length": 64, "num_features": 168},
    "hydra": {"input_length": 64, "kernels_per_group": 4, "groups": 8},
    "hydra_minirocket": {"input_length": 64, "kernels_per_group": 4, "groups": 8, "num_features": 168},
}
"""Small, fast sizes per backbone; every registered backbone needs an entry."""

BATCH = 6


@pytest.fixture(params=sorted(MODEL_REGISTRY))
def name(request: pytest.FixtureRequest) -> str:
    return request.param


def _small(name: str) -> torch.nn.Module:
    """A small model, set up on data first where it needs that (MiniRocket's biases), as training loops do."""
    torch.manual_seed(0)
    model = build_model(name, **SMALL_PARAMS[name])
    if hasattr(model, "initialise_from_data"):
        model.initialise_from_data(torch.randn(16, 64))
    return model


def _windows(model: torch.nn.Module, batch: int = BATCH) -> torch.Tensor:
    """Windows of the model's fixed length (finite context) or of 64 samples (infinite context)."""
    return torch.randn(batch, model.get_config().get("window_length", 64))


def test_every_backbone_has_small_params() -> None:
    assert set(SMALL_PARAMS) == set(MODEL_REGISTRY)


def test_forward_shape_and_backward(name: str) -> None:
    model = _small(name).train()
    x = _windows(model)
    logits = model(x)
    assert logits.shape == (BATCH,)
    assert logits.dtype == torch.float32
    F.binary_cross_entropy_with_logits(logits, torch.ones(BATCH)).backward()
    grads = [p.grad for p in model.parameters() if p.requires_grad]
    assert grads and all(g is not None and torch.isfinite(g).all() for g in grads)


def test_eval_inference_mode(name: str) -> None:
    if name == "timesnet":
        pytest.skip("TimesNet picks its FFT periods from the whole batch (as in the original), so outputs depend on it")
    model = _small(name).eval()
    x = _windows(model)
    with torch.inference_mode():
        a = model(x)
        b = torch.cat([model(x[:2]), model(x[2:])])  # eval output does not depend on the batch
    assert a.shape == (BATCH,)
    torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-5)


def test_patchtst_eval_chunking_is_exact(monkeypatch: pytest.MonkeyPatch) -> None:
    model = _small("patchtst").eval()
    x = _windows(model, batch=10)
    with torch.inference_mode():
        whole = model(x)
        monkeypatch.setattr(patchtst_module, "_EVAL_CHUNK", 4)
        chunked = model(x)
    torch.testing.assert_close(chunked, whole, rtol=1e-5, atol=1e-6)


def test_config_round_trip(name: str, tmp_path) -> None:
    model = _small(name).eval()
    cfg = model.get_config()
    assert cfg["name"] == name
    path = tmp_path / "model.safetensors"
    save_file(model.state_dict(), str(path))
    cfg_back = json.loads(json.dumps(cfg))
    assert cfg_back == cfg
    clone = model_from_config(cfg_back).eval()
    clone.load_state_dict(load_file(str(path)))
    assert build_model(**cfg).get_config() == cfg
    x = _windows(model)
    with torch.inference_mode():
        torch.testing.assert_close(model(x), clone(x), rtol=0, atol=0)


def test_every_backbone_has_its_app_c_configuration() -> None:
    from sss_viewer.models import FINITE_CONTEXT, INFINITE_CONTEXT, app_c_best

    assert set(FINITE_CONTEXT) | set(INFINITE_CONTEXT) == set(MODEL_REGISTRY)
    expected = {
        "patchtst": {"d_model": 32, "d_ff": 32, "n_heads": 4, "lr": 1e-5, "window_length": 10000},
        "timesnet": {
            "d_model": 64,
            "d_ff": 32,
            "num_kernels": 4,
            "top_k": 3,
            "n_layers": 2,
            "lr": 1e-5,
            "window_length": 5000,
        },
        "moderntcn": {
            "d_model": 32,
            "n_layers": 1,
            "large_size": 9,
            "small_size": 5,
            "dw_dims": 128,
            "ffn_ratio": 4,
            "lr": 1e-4,
            "window_length": 10000,
        },
        "dlinear": {"moving_avg": 25, "lr": 1e-6, "window_length": 10000},
        "rocket": {"num_kernels": 10_000, "lr": 1e-4},
        "mamba": {"lr": 1e-6, "n_layers": 2, "patch_size": 64, "patch_stride": 16},
        "gru": {"lr": 1e-4, "d_model": 32, "n_layers": 3, "bidirectional": True},
        "lstm": {"lr": 1e-4, "d_model": 32, "n_layers": 3, "bidirectional": True},
        "minirocket": {"num_features": 9_996},  # not in the paper: Dempster et al.'s default
        "hydra": {"kernels_per_group": 8, "groups": 64},  # not in the paper: Dempster et al. (2023)
        "hydra_minirocket": {"kernels_per_group": 8, "groups": 64, "num_features": 9_996},
    }
    for name, values in expected.items():
        best = app_c_best(name)
        assert {k: best[k] for k in values} == values, name
        sizes = {k: v for k, v in best.items() if k not in ("lr", "note", "window_length") and v is not None}
        build_model(name, **{k: v for k, v in sizes.items() if k in build_model(name).get_config()})


def test_unknown_backbone() -> None:
    with pytest.raises(ValueError, match=r"Unknown backbone 'nope'.*'patchtst'"):
        build_model("nope")


def test_unknown_parameter(name: str) -> None:
    with pytest.raises(ValueError, match=rf"'not_a_param'.*backbone '{name}'"):
        build_model(name, not_a_param=1)


def test_config_without_name() -> None:
    with pytest.raises(ValueError, match="lacks 'name'"):
        model_from_config({"d_model": 8})


def test_wrong_window_shape() -> None:
    model = _small("patchtst")
    with pytest.raises(ValueError, match=r"\(B, 64\)"):
        model(torch.randn(2, 65))


@pytest.mark.parametrize(
    ("params", "match"),
    [
        ({"d_model": 30, "n_heads": 4}, "must divide d_model"),
        ({"patch_len": 2048}, "longer than window_length"),
        ({"dropout": 1.0}, "dropout"),
        ({"norm": "group"}, "norm"),
        ({"n_layers": 0}, "n_layers"),
    ],
)
def test_patchtst_invalid_params(params: dict, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        PatchTST(**params)


def test_revin_constant_window_is_finite() -> None:
    revin = RevIN()
    x = torch.full((3, 100), 7.5, requires_grad=True)
    y = revin(x)
    assert torch.isfinite(y).all()
    torch.testing.assert_close(y, torch.zeros_like(y))
    y.sum().backward()
    assert torch.isfinite(x.grad).all()


def test_revin_normalises_each_window() -> None:
    x = torch.randn(4, 256) * torch.tensor([[1.0], [10.0], [0.1], [3.0]]) + 5.0
    y = RevIN(affine=False)(x)
    torch.testing.assert_close(y.mean(-1), torch.zeros(4), atol=1e-5, rtol=0)
    torch.testing.assert_close(y.std(-1, correction=0), torch.ones(4), atol=1e-3, rtol=0)


def test_patchtst_constant_window_is_finite() -> None:
    model = _small("patchtst").eval()
    with torch.inference_mode():
        assert torch.isfinite(model(torch.zeros(2, 64))).all()


def test_patchtst_defaults_are_the_papers() -> None:
    cfg = PatchTST().get_config()
    expected = {
        "window_length": 1024,
        "patch_len": 16,
        "patch_stride": 8,
        "d_model": 32,
        "d_ff": 128,
        "n_heads": 4,
        "n_layers": 2,
        "dropout": 0.3,
        "attn_dropout": 0.3,
        "norm": "batch",
        "revin": True,
        "pad_end": True,
    }
    assert {k: cfg[k] for k in expected} == expected
    assert PatchTST().n_patches == 128
    assert PatchTST(pad_end=False).n_patches == 127


def test_patchify_pads_with_last_value() -> None:
    model = PatchTST(window_length=32, patch_len=8, patch_stride=4, d_model=8, d_ff=8, n_heads=2, n_layers=1)
    x = torch.arange(32.0)[None]
    patches = model.patchify(x)
    assert patches.shape == (1, model.n_patches, 8) == (1, 8, 8)
    torch.testing.assert_close(patches[0, -1], torch.tensor([28.0, 29, 30, 31, 31, 31, 31, 31]))


def test_authors_block_variant(tmp_path) -> None:
    params = {**SMALL_PARAMS["patchtst"], "n_layers": 2, "authors_block": True}
    model = build_model("patchtst", **params)
    assert not any("norm_ff" in key for key in model.state_dict())  # one shared norm per layer
    model(torch.randn(4, 64)).sum().backward()
    path = tmp_path / "authors.safetensors"
    save_file(model.state_dict(), str(path))
    clone = model_from_config(model.get_config())
    clone.load_state_dict(load_file(str(path)))
    x = torch.randn(3, 64)
    with torch.inference_mode():
        torch.testing.assert_close(model.eval()(x), clone.eval()(x), rtol=0, atol=0)


@pytest.mark.parametrize("p", [0.0, 0.3])
def test_chunked_attention_matches_reference(p: float, monkeypatch: pytest.MonkeyPatch) -> None:
    """The CPU chunked attention (dropout mask regenerated in backward) equals plain autograd."""
    b, n, h, d = 7, 10, 2, 4
    monkeypatch.setattr(patchtst_module, "_ATTN_CHUNK_SCORES", 3 * h * n * n)  # 3 chunks
    qkv = torch.randn(b, n, 3, h, d, dtype=torch.float64, requires_grad=True)
    grad_out = torch.randn(b, n, h, d, dtype=torch.float64)
    torch.manual_seed(1)
    out = patchtst_module._attention(qkv, p)
    (grad,) = torch.autograd.grad(out, qkv, grad_out)

    torch.manual_seed(1)
    chunks = patchtst_module._qkv_chunks(b, h, n)
    keep = torch.ones(b, h, n, n, dtype=torch.float64)
    scale = 1.0
    if p > 0:
        threshold, scale = patchtst_module._keep_threshold(p)
        seeds = [patchtst_module._new_seed() for _ in chunks]
        keep = torch.cat(
            [
                patchtst_module._fill_keep_mask(
                    torch.empty(sl.stop - sl.start, h, n, n, dtype=torch.float64), threshold, seed
                )
                for sl, seed in zip(chunks, seeds, strict=True)
            ]
        )
        assert 0.5 < keep.mean() < 0.9
    q, k, v = qkv.permute(2, 0, 3, 1, 4).unbind(0)
    weights = torch.softmax(q @ k.transpose(-1, -2) / d**0.5, dim=-1)
    ref = ((weights * keep * scale) @ v).transpose(1, 2)
    (ref_grad,) = torch.autograd.grad(ref, qkv, grad_out)
    torch.testing.assert_close(out, ref)
    torch.testing.assert_close(grad, ref_grad)


def test_cpu_dropout_rate_and_gradient() -> None:
    torch.manual_seed(0)
    drop = patchtst_module._Dropout(0.3).train()
    x = torch.ones(200, 500, requires_grad=True)
    y = drop(x)
    assert abs((y == 0).float().mean().item() - 0.3) < 0.01
    torch.testing.assert_close(y.mean(), torch.tensor(1.0), atol=0.02, rtol=0)
    y.sum().backward()
    assert torch.equal(x.grad, y.detach())  # mask * scale, since x is ones
    assert drop.eval()(x) is x


def test_train_mode_without_grad_is_stochastic() -> None:
    """Monte-Carlo dropout: train mode under inference_mode runs and draws fresh masks."""
    model = _small("patchtst").train()
    x = torch.randn(4, 64)
    with torch.inference_mode():
        assert not torch.equal(model(x), model(x))


def test_training_is_reproducible_under_manual_seed() -> None:
    outs = []
    for _ in range(2):
        model = _small("patchtst").train()
        torch.manual_seed(3)
        outs.append(model(torch.ones(4, 64)))
    torch.testing.assert_close(outs[0], outs[1], rtol=0, atol=0)

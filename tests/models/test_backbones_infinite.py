"""Tests for the infinite-context backbones: GRU, LSTM, Mamba (mambapy) and ROCKET."""

from __future__ import annotations

import json
import math

import pytest
import torch
import torch.nn.functional as F

from sss_viewer.models.mamba import MambaClassifier
from sss_viewer.models.rnn import GRUClassifier, LSTMClassifier
from sss_viewer.models.rocket import RocketClassifier, generate_kernels

SMALL: dict[type, dict] = {
    GRUClassifier: {"d_model": 8, "n_layers": 2, "patch_size": 16, "patch_stride": 8},
    LSTMClassifier: {"d_model": 8, "n_layers": 2, "patch_size": 16, "patch_stride": 8},
    MambaClassifier: {"d_model": 16, "n_layers": 2},
    RocketClassifier: {"num_kernels": 200, "input_length": 512},
}
CLASSES = list(SMALL)
IDS = [cls.name for cls in CLASSES]


def _small(cls: type, **extra) -> torch.nn.Module:
    torch.manual_seed(0)
    return cls(**{**SMALL[cls], **extra})


@pytest.mark.parametrize("cls", CLASSES, ids=IDS)
def test_defaults_build_with_app_c_sizes(cls: type) -> None:
    model = cls()
    cfg = model.get_config()
    assert cfg["name"] == cls.name
    json.dumps(cfg)
    if cls is RocketClassifier:
        assert cfg["num_kernels"] == 10_000
    elif cls is MambaClassifier:
        assert (cfg["patch_size"], cfg["patch_stride"], cfg["n_layers"]) == (64, 16, 2)
    else:
        assert (cfg["d_model"], cfg["n_layers"], cfg["bidirectional"]) == (32, 3, True)


@pytest.mark.parametrize("cls", CLASSES, ids=IDS)
@pytest.mark.parametrize("shape", [(3, 512), (1, 5000), (1, 3001)])
def test_forward_any_length(cls: type, shape: tuple[int, int]) -> None:
    model = _small(cls).eval()
    with torch.no_grad():
        logits = model(torch.randn(*shape))
    assert logits.shape == (shape[0],)
    assert logits.dtype == torch.float32
    assert torch.isfinite(logits).all()


@pytest.mark.parametrize("cls", [GRUClassifier, LSTMClassifier], ids=["gru", "lstm"])
def test_rnn_raw_samples_and_last_pooling(cls: type) -> None:
    for extra in (
        {"patch_size": 1, "patch_stride": 1},
        {"pooling": "last"},
        {"bidirectional": False, "pooling": "last"},
    ):
        model = _small(cls, **extra).eval()
        with torch.no_grad():
            assert torch.isfinite(model(torch.randn(2, 300))).all()


@pytest.mark.parametrize("cls", CLASSES, ids=IDS)
def test_backward_finite_gradients(cls: type) -> None:
    model = _small(cls).train()
    x = torch.randn(3, 512)
    logits = model(x)
    F.binary_cross_entropy_with_logits(logits, torch.tensor([0.0, 1.0, 1.0])).backward()
    params = [p for p in model.parameters() if p.requires_grad]
    assert params and all(p.grad is not None and torch.isfinite(p.grad).all() for p in params)


def test_rocket_kernels_are_buffers() -> None:
    model = _small(RocketClassifier)
    trainable = {n for n, p in model.named_parameters() if p.requires_grad}
    assert trainable == {"head.weight", "head.bias"}
    buffers = dict(model.named_buffers())
    assert buffers["weights"].shape == (200, 11)
    assert {"biases", "lengths", "dilations", "paddings"} <= set(buffers)


def test_rocket_single_row_training_and_batchnorm_variant() -> None:
    model = _small(RocketClassifier).train()
    for t in (700, 900):  # batch size 1, variable length: the running normaliser copes
        loss = F.binary_cross_entropy_with_logits(model(torch.randn(1, t)), torch.ones(1))
        loss.backward()
        assert torch.isfinite(model.head.weight.grad).all()
    bn = _small(RocketClassifier, normalisation="batch").train()
    assert torch.isfinite(bn(torch.randn(4, 512))).all()


@pytest.mark.parametrize("cls", CLASSES, ids=IDS)
def test_config_round_trip_same_outputs(cls: type) -> None:
    model = _small(cls).train()
    model(torch.randn(4, 600))  # move running statistics where there are any
    model.eval()
    cfg = json.loads(json.dumps(model.get_config()))
    torch.manual_seed(123)  # a different init must not matter after loading
    clone = cls(**{k: v for k, v in cfg.items() if k != "name"})
    clone.load_state_dict(model.state_dict())
    clone.eval()
    x = torch.randn(2, 1500)
    with torch.no_grad():
        torch.testing.assert_close(clone(x), model(x))
        # eval output of one row does not depend on the rest of the batch
        torch.testing.assert_close(model(x[:1]), model(x)[:1], rtol=1e-5, atol=1e-5)


def test_rocket_same_seed_same_kernels() -> None:
    a, b = generate_kernels(300, 1024, seed=7), generate_kernels(300, 1024, seed=7)
    c = generate_kernels(300, 1024, seed=8)
    assert all(torch.equal(a[k], b[k]) for k in a)
    assert not torch.equal(a["weights"], c["weights"])
    assert set(a["lengths"].tolist()) <= {7, 9, 11}
    # mean-centred weights, dilation within the reference length, padding 0 or "same"
    assert torch.allclose(a["weights"].sum(1), torch.zeros(300), atol=1e-5)
    span = (a["lengths"] - 1) * a["dilations"] + 1
    assert (span <= 1024).all() and (a["dilations"] >= 1).all()
    same = (a["lengths"] - 1) * a["dilations"] // 2
    assert ((a["paddings"] == 0) | (a["paddings"] == same)).all()


def test_rocket_features_match_conv1d() -> None:
    model = _small(RocketClassifier)
    x = torch.randn(2, 800)
    feats = model.transform(x)
    k = model.biases.shape[0]
    for i in range(0, k, 17):
        length, dil, pad = (int(model.lengths[i]), int(model.dilations[i]), int(model.paddings[i]))
        start = (11 - length) // 2
        w = model.weights[i, start : start + length].view(1, 1, length)
        out = F.conv1d(x[:, None], w, model.biases[i : i + 1], padding=pad, dilation=dil)[:, 0]
        torch.testing.assert_close(feats[:, i], (out > 0).float().mean(-1))
        torch.testing.assert_close(feats[:, k + i], out.amax(-1), rtol=1e-5, atol=1e-5)


def test_rocket_default_10000_kernels_shape() -> None:
    model = RocketClassifier().eval()
    assert model.n_features == 20_000
    with torch.no_grad():
        logits = model(torch.randn(2, 64))
    assert logits.shape == (2,) and torch.isfinite(logits).all()


@pytest.mark.parametrize("cls", CLASSES, ids=IDS)
def test_bad_input_raises(cls: type) -> None:
    model = _small(cls)
    with pytest.raises(ValueError, match=r"shape \(B, T\)"):
        model(torch.randn(512))
    with pytest.raises(ValueError, match="floating-point"):
        model(torch.ones(2, 512, dtype=torch.int64))
    if cls is not RocketClassifier:
        with pytest.raises(ValueError, match=f"at least {model.min_length} samples"):
            model(torch.randn(2, model.min_length - 1))


def test_mamba_min_length_message() -> None:
    model = _small(MambaClassifier)
    with pytest.raises(ValueError, match="at least 64 samples, got T=63"):
        model(torch.randn(1, 63))
    assert model(torch.randn(1, 64)).shape == (1,)


def test_bad_constructor_arguments() -> None:
    with pytest.raises(ValueError, match="pooling"):
        GRUClassifier(pooling="max")
    with pytest.raises(ValueError, match="d_model"):
        MambaClassifier(d_model=0)
    with pytest.raises(ValueError, match="normalisation"):
        RocketClassifier(num_kernels=10, normalisation="none")
    with pytest.raises(ValueError, match="seed"):
        RocketClassifier(num_kernels=10, seed=-1)


def _sine_vs_noise(n: int, t: int) -> tuple[torch.Tensor, torch.Tensor]:
    gen = torch.Generator().manual_seed(1)
    time = torch.arange(t) / t
    freq = 4 + 4 * torch.rand(n // 2, 1, generator=gen)
    phase = 2 * math.pi * torch.rand(n // 2, 1, generator=gen)
    sines = torch.sin(2 * math.pi * freq * time + phase) + 0.1 * torch.randn(n // 2, t, generator=gen)
    noise = torch.randn(n - n // 2, t, generator=gen)
    x = torch.cat([sines, noise])
    y = torch.cat([torch.ones(n // 2), torch.zeros(n - n // 2)])
    return x, y


@pytest.mark.parametrize("cls", CLASSES, ids=IDS)
def test_learns_sine_vs_noise(cls: type) -> None:
    model = _small(cls)
    x, y = _sine_vs_noise(16, 512)
    opt = torch.optim.Adam([p for p in model.parameters() if p.requires_grad], lr=1e-2)
    model.eval()
    with torch.no_grad():
        before = F.binary_cross_entropy_with_logits(model(x), y).item()
    for _ in range(15):
        model.train()
        opt.zero_grad()
        F.binary_cross_entropy_with_logits(model(x), y).backward()
        opt.step()
    model.eval()
    with torch.no_grad():
        after = F.binary_cross_entropy_with_logits(model(x), y).item()
    assert after < before

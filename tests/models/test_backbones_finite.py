"""Finite-context baseline backbones: DLinear, TimesNet, ModernTCN (shapes, config, mask, learning)."""

from __future__ import annotations

import json

import pytest
import torch

from sss_viewer.models.dlinear import DLinear, MaskedRevIN, moving_average
from sss_viewer.models.moderntcn import ModernTCN
from sss_viewer.models.revin import RevIN
from sss_viewer.models.timesnet import TimesNet

L = 256
SMALL = {
    DLinear: {"moving_avg": 9, "d_hidden": 8},
    TimesNet: {"d_model": 8, "d_ff": 8, "num_kernels": 2, "top_k": 2, "n_layers": 1},
    ModernTCN: {"d_model": 8, "dw_dims": 16, "large_size": 7, "small_size": 3, "ffn_ratio": 2},
}
MODELS = list(SMALL)
IDS = [cls.name for cls in MODELS]


def _small(cls, **kw):
    return cls(window_length=L, **SMALL[cls], **kw)


@pytest.fixture(autouse=True)
def _seed():
    torch.manual_seed(0)


@pytest.mark.parametrize("cls", MODELS, ids=IDS)
def test_defaults_build_and_score(cls):
    model = cls(window_length=L).eval()
    with torch.no_grad():
        out = model(torch.randn(3, L))
    assert out.shape == (3,) and out.dtype == torch.float32
    assert torch.isfinite(out).all()
    assert model.get_config()["name"] == cls.name


@pytest.mark.parametrize("cls", MODELS, ids=IDS)
@pytest.mark.parametrize("small", [False, True])
def test_backward_finite_gradients(cls, small):
    # Default sizes on a shorter window keep the TimesNet case fast.
    length = L if small else 128
    model = _small(cls) if small else cls(window_length=length)
    model.train()
    x = torch.randn(3, length)
    out = model(x)
    assert out.shape == (3,) and torch.isfinite(out).all()
    torch.nn.functional.binary_cross_entropy_with_logits(out, torch.tensor([0.0, 1.0, 1.0])).backward()
    for name, p in model.named_parameters():
        assert p.grad is not None, name
        assert torch.isfinite(p.grad).all(), name
    assert any(p.grad.abs().sum() > 0 for p in model.parameters())


@pytest.mark.parametrize("cls", MODELS, ids=IDS)
def test_config_roundtrip(cls):
    model = _small(cls, dropout=0.25)
    # Put some state in BatchNorm running stats.
    model.train()
    model(torch.randn(4, L))
    model.eval()
    cfg = json.loads(json.dumps(model.get_config()))
    assert cfg["name"] == cls.name and cfg["window_length"] == L and cfg["dropout"] == 0.25
    rebuilt = cls(**{k: v for k, v in cfg.items() if k != "name"})
    rebuilt.load_state_dict(model.state_dict())
    rebuilt.eval()
    x = torch.randn(5, L)
    with torch.no_grad():
        assert torch.equal(model(x), rebuilt(x))
    assert rebuilt.get_config() == cfg


@pytest.mark.parametrize("cls", MODELS, ids=IDS)
def test_wrong_length_raises(cls):
    model = _small(cls)
    with pytest.raises(ValueError, match=rf"{cls.__name__}.*\(B, {L}\)"):
        model(torch.randn(2, L + 1))
    with pytest.raises(ValueError, match=cls.__name__):
        model(torch.randn(2, L), torch.ones(2, L - 1, dtype=torch.bool))


@pytest.mark.parametrize("cls", MODELS, ids=IDS)
def test_mask(cls):
    model = _small(cls).eval()
    with torch.no_grad():  # leave the structured initialisation (DLinear's uniform weights)
        for p in model.parameters():
            p.add_(0.1 * torch.randn_like(p))
    x = torch.randn(3, L)
    mask = torch.ones(3, L, dtype=torch.bool)
    mask[0, 200:] = False
    mask[2, 100:] = False
    x_zero = x.masked_fill(~mask, 0.0)
    x_rand = torch.where(mask, x, 50 * torch.randn(3, L) + 7)
    with torch.no_grad():
        plain = model(x_zero)
        all_valid = model(x, torch.ones_like(mask))
        masked_zero = model(x_zero, mask)
        masked_rand = model(x_rand, mask)
        masked_nan = model(x.masked_fill(~mask, float("nan")), mask)
    # An all-valid mask is the same as no mask.
    torch.testing.assert_close(all_valid, model(x), rtol=1e-5, atol=1e-5)
    # The mask matters where there is padding ...
    assert not torch.allclose(masked_zero[[0, 2]], plain[[0, 2]], atol=1e-4)
    # ... and then the padding values do not.
    torch.testing.assert_close(masked_rand, masked_zero, rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(masked_nan, masked_zero, rtol=1e-5, atol=1e-5)


def _sine_vs_noise(n: int, gen: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
    t = torch.arange(L, dtype=torch.float32)
    freq = 0.05 + 0.02 * torch.rand(n // 2, 1, generator=gen)
    phase = 6.28 * torch.rand(n // 2, 1, generator=gen)
    sines = torch.sin(freq * t + phase) + 0.1 * torch.randn(n // 2, L, generator=gen)
    noise = torch.randn(n - n // 2, L, generator=gen)
    return torch.cat([sines, noise]), torch.cat([torch.ones(n // 2), torch.zeros(n - n // 2)])


@pytest.mark.parametrize("cls", MODELS, ids=IDS)
def test_learns_sine_vs_noise(cls):
    gen = torch.Generator().manual_seed(1)
    x, y = _sine_vs_noise(24, gen)
    model = _small(cls, dropout=0.0)
    opt = torch.optim.Adam(model.parameters(), lr=3e-3)
    loss_fn = torch.nn.BCEWithLogitsLoss()
    model.eval()
    with torch.no_grad():
        before = loss_fn(model(x), y).item()
    model.train()
    for _ in range(25):
        opt.zero_grad()
        loss = loss_fn(model(x), y)
        loss.backward()
        opt.step()
    model.eval()
    with torch.no_grad():
        after = loss_fn(model(x), y).item()
    assert after < 0.85 * before, (before, after)


def test_masked_revin_matches_revin():
    x = torch.randn(4, 50) * 3 + 2
    ref = RevIN()
    masked = MaskedRevIN()
    torch.testing.assert_close(masked(x), ref(x))
    mask = torch.ones(4, 50, dtype=torch.bool)
    mask[1, 30:] = False
    out = masked(x, mask)
    torch.testing.assert_close(out[1, :30], ref(x[1:2, :30])[0])
    assert (out[1, 30:] == 0).all()
    assert masked.state_dict().keys() == ref.state_dict().keys()


def test_moving_average_same_length_even_and_odd():
    x = torch.randn(2, 40)
    for k in (1, 10, 25):
        trend = moving_average(x, k)
        assert trend.shape == x.shape
    const = torch.full((1, 30), 3.0)
    torch.testing.assert_close(moving_average(const, 10), const)


def test_timesnet_inception_fusion_matches_average():
    from sss_viewer.models.timesnet import _Inception

    block = _Inception(3, 4, 3)
    with torch.no_grad():
        block.biases.normal_()
    z = torch.randn(2, 3, 5, 6)
    ref = sum(torch.nn.functional.conv2d(z, w, block.biases[i], padding=i) for i, w in enumerate(block.weights)) / 3
    torch.testing.assert_close(block(z), ref, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize(
    ("cls", "kw"),
    [
        (DLinear, {"moving_avg": 0}),
        (DLinear, {"dropout": 1.0}),
        (TimesNet, {"top_k": 0}),
        (ModernTCN, {"large_size": 8}),
        (ModernTCN, {"small_size": 11}),
        (ModernTCN, {"patch_stride": 16}),
    ],
)
def test_invalid_sizes_raise(cls, kw):
    with pytest.raises(ValueError, match="Invalid"):
        cls(window_length=L, **kw)

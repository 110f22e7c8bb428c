"""PatchTST's two CPU kernel paths (``cpu_kernels="stock"``, the default, and ``"custom"``)."""

from __future__ import annotations

import json

import pytest
import torch

from sss_viewer.models import PatchTST, model_from_config
from sss_viewer.models import patchtst as patchtst_module

SMALL = {"window_length": 64, "patch_len": 8, "patch_stride": 4, "d_model": 8, "d_ff": 16, "n_heads": 2, "n_layers": 2}


def test_cpu_kernels_default_to_stock_and_are_not_saved() -> None:
    model = PatchTST(**SMALL)
    assert model.cpu_kernels == "stock"
    assert "cpu_kernels" not in model.get_config()
    custom = PatchTST(**SMALL, cpu_kernels="custom")
    assert custom.get_config() == model.get_config()
    assert model_from_config(json.loads(json.dumps(custom.get_config()))).cpu_kernels == "stock"
    with pytest.raises(ValueError, match="cpu_kernels"):
        PatchTST(**SMALL, cpu_kernels="fast")


@pytest.mark.parametrize("authors_block", [False, True])
def test_cpu_kernels_same_weights_same_scores(authors_block: bool) -> None:
    """Same state dict (names and shapes) under both paths, and equal eval-mode scores with the same weights."""
    torch.manual_seed(0)
    stock = PatchTST(**SMALL, authors_block=authors_block)
    custom = PatchTST(**SMALL, authors_block=authors_block, cpu_kernels="custom")
    assert {k: v.shape for k, v in stock.state_dict().items()} == {k: v.shape for k, v in custom.state_dict().items()}
    stock.train()(torch.randn(16, 64))  # BatchNorm running statistics that are not the initial ones
    custom.load_state_dict(stock.state_dict())
    x = torch.randn(300, 64)  # more than the CPU eval chunk (256)
    with torch.inference_mode():
        torch.testing.assert_close(custom.eval()(x), stock.eval()(x), rtol=1e-5, atol=1e-5)


def test_cpu_kernels_same_gradients_without_dropout() -> None:
    torch.manual_seed(0)
    params = {**SMALL, "dropout": 0.0, "attn_dropout": 0.0}
    stock = PatchTST(**params)
    custom = PatchTST(**params, cpu_kernels="custom")
    custom.load_state_dict(stock.state_dict())
    x = torch.randn(8, 64)
    grads = []
    for model in (stock, custom):
        model.train()(x).square().sum().backward()
        grads.append({k: p.grad for k, p in model.named_parameters()})
    for key, grad in grads[0].items():
        torch.testing.assert_close(grads[1][key], grad, rtol=1e-5, atol=1e-6, msg=key)


@pytest.mark.parametrize("cpu_kernels", ["stock", "custom"])
def test_cpu_kernels_train_with_dropout(cpu_kernels: str) -> None:
    torch.manual_seed(0)
    model = PatchTST(**SMALL, cpu_kernels=cpu_kernels).train()
    x = torch.randn(8, 64)
    out = model(x)
    assert not torch.equal(out, model(x))  # dropout draws fresh masks
    out.sum().backward()
    assert all(p.grad is not None and torch.isfinite(p.grad).all() for p in model.parameters())


def test_the_choice_picks_the_kernels() -> None:
    custom, stock = PatchTST(**SMALL, cpu_kernels="custom"), PatchTST(**SMALL)
    assert sum(isinstance(m, patchtst_module._Dropout) for m in custom.modules()) == 1 + 2 * SMALL["n_layers"]
    assert not any(isinstance(m, patchtst_module._Dropout) for m in stock.modules())
    assert all(layer.attn._attend is patchtst_module._attention for layer in custom.layers)
    assert all(layer.attn._attend is patchtst_module._stock_attention for layer in stock.layers)

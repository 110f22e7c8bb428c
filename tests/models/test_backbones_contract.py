"""The backbone contract (sss_viewer.models.base.WindowModel): saved configs, argument and input checks."""

from __future__ import annotations

import copy

import pytest
import torch

from sss_viewer.models import MODEL_REGISTRY, build_model
from sss_viewer.models.base import WindowModel

DEFAULT_CONFIGS: dict[str, dict] = {
    "dlinear": {
        "name": "dlinear",
        "window_length": 1024,
        "moving_avg": 25,
        "d_hidden": 128,
        "dropout": 0.2,
        "revin": True,
        "revin_affine": True,
        "revin_eps": 1e-05,
    },
    "gru": {
        "name": "gru",
        "d_model": 32,
        "n_layers": 3,
        "bidirectional": True,
        "patch_size": 1,
        "patch_stride": 1,
        "dropout": 0.2,
        "head_dropout": 0.2,
        "pooling": "mean",
        "revin": True,
        "revin_affine": True,
        "revin_eps": 1e-05,
    },
    "lstm": {
        "name": "lstm",
        "d_model": 32,
        "n_layers": 3,
        "bidirectional": True,
        "patch_size": 1,
        "patch_stride": 1,
        "dropout": 0.2,
        "head_dropout": 0.2,
        "pooling": "mean",
        "revin": True,
        "revin_affine": True,
        "revin_eps": 1e-05,
    },
    "mamba": {
        "name": "mamba",
        "d_model": 32,
        "n_layers": 2,
        "patch_size": 64,
        "patch_stride": 16,
        "d_state": 16,
        "expand_factor": 2,
        "d_conv": 4,
        "head_dropout": 0.2,
        "revin": True,
        "revin_affine": True,
        "revin_eps": 1e-05,
    },
    "hydra": {
        "name": "hydra",
        "input_length": 1024,
        "kernels_per_group": 8,
        "groups": 64,
        "seed": 0,
        "revin": False,
        "revin_eps": 1e-05,
        "feature_context": "series",
    },
    "hydra_minirocket": {
        "name": "hydra_minirocket",
        "input_length": 1024,
        "kernels_per_group": 8,
        "groups": 64,
        "num_features": 9996,
        "seed": 0,
        "revin": False,
        "revin_eps": 1e-05,
        "feature_context": "series",
        "dilation_split": "reference",
    },
    "minirocket": {
        "name": "minirocket",
        "input_length": 1024,
        "num_features": 9996,
        "seed": 0,
        "revin": False,
        "revin_eps": 1e-05,
        "feature_context": "series",
        "dilation_split": "reference",
    },
    "moderntcn": {
        "name": "moderntcn",
        "window_length": 1024,
        "patch_size": 8,
        "patch_stride": 4,
        "d_model": 32,
        "n_layers": 1,
        "large_size": 9,
        "small_size": 5,
        "dw_dims": 128,
        "ffn_ratio": 4,
        "dropout": 0.2,
        "revin": True,
        "revin_affine": True,
        "revin_eps": 1e-05,
    },
    "patchtst": {
        "name": "patchtst",
        "window_length": 1024,
        "patch_len": 16,
        "patch_stride": 8,
        "d_model": 32,
        "d_ff": 128,
        "n_heads": 4,
        "n_layers": 2,
        "dropout": 0.3,
        "attn_dropout": 0.3,
        "head_dropout": 0.0,
        "pad_end": True,
        "norm": "batch",
        "revin": True,
        "revin_affine": True,
        "revin_eps": 1e-05,
        "authors_block": False,
    },
    "rocket": {
        "name": "rocket",
        "num_kernels": 10000,
        "input_length": 1024,
        "seed": 0,
        "normalisation": "running",
        "revin": True,
        "revin_affine": False,
        "revin_eps": 1e-05,
    },
    "timesnet": {
        "name": "timesnet",
        "window_length": 1024,
        "d_model": 64,
        "d_ff": 32,
        "num_kernels": 4,
        "top_k": 3,
        "n_layers": 2,
        "dropout": 0.2,
        "revin": True,
        "revin_affine": True,
        "revin_eps": 1e-05,
    },
}
"""``build_model(name).get_config()`` as written by each backbone's own code before the base class (MiniRocket's
``dilation_split`` added since: configs without it are read as ``"legacy"``, CHANGELOG.md)."""


@pytest.mark.parametrize("name", sorted(MODEL_REGISTRY))
def test_default_config_is_unchanged(name: str) -> None:
    cfg = build_model(name).get_config()
    assert cfg == DEFAULT_CONFIGS[name]
    assert list(cfg) == list(DEFAULT_CONFIGS[name])  # same key order: the same config.json
    assert all(type(cfg[k]) is type(v) for k, v in DEFAULT_CONFIGS[name].items())


def test_every_backbone_is_a_window_model() -> None:
    assert set(DEFAULT_CONFIGS) == set(MODEL_REGISTRY)
    for cls in MODEL_REGISTRY.values():
        assert issubclass(cls, WindowModel)
        assert "get_config" not in vars(cls)  # the one in the base class


def test_config_casts_like_the_constructors_did() -> None:
    cfg = build_model("dlinear", window_length=32, moving_avg=3, d_hidden=4, dropout=0, revin=1).get_config()
    assert cfg["dropout"] == 0.0 and type(cfg["dropout"]) is float
    assert cfg["revin"] is True
    for name in ("minirocket", "hydra", "hydra_minirocket"):  # RevIN normalises each window: no shared series
        assert build_model(name, input_length=64, revin=True).get_config()["feature_context"] == "window"


def test_config_survives_copy() -> None:
    """``deepcopy`` rebuilds through ``__reduce_ex__`` → ``cls.__new__(cls)`` without arguments, the path an unpickler
    takes too (the project never unpickles, so the test does not either)."""
    model = build_model("gru", d_model=8, n_layers=1, pooling="last")
    for clone in (copy.deepcopy(model), copy.copy(model)):
        assert clone.get_config() == model.get_config()


@pytest.mark.parametrize(
    ("name", "params", "match"),
    [
        ("timesnet", {"top_k": 0}, "Invalid top_k=0: expected a positive integer"),
        ("mamba", {"head_dropout": 1.0}, r"Invalid head_dropout=1.0: expected a value in \[0.0, 1.0\)"),
        ("rocket", {"seed": -1}, "Invalid seed=-1: expected a non-negative integer"),
        ("gru", {"pooling": "max"}, "Invalid pooling='max': expected one of 'mean', 'last'"),
        ("minirocket", {"seed": True}, "Invalid seed=True"),
        ("hydra", {"groups": 0}, "Invalid groups=0: expected a positive integer"),
        ("hydra_minirocket", {"kernels_per_group": 2.5}, "Invalid kernels_per_group=2.5"),
    ],
)
def test_declared_arguments_are_checked(name: str, params: dict, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        build_model(name, **params)


def test_record_args_refuses_unknown_names() -> None:
    model = build_model("dlinear", window_length=32, moving_avg=3, d_hidden=4)
    with pytest.raises(TypeError, match="no constructor argument"):
        model.record_args(not_an_argument=1)


@pytest.mark.parametrize("name", ["dlinear", "gru"])
def test_one_input_check(name: str) -> None:
    model = build_model(name, **({"window_length": 32, "moving_avg": 3, "d_hidden": 4} if name == "dlinear" else {}))
    with pytest.raises(ValueError, match=type(model).__name__):
        model(torch.randn(2, 3, 4))

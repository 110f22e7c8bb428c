"""The backbone registry: a plain ``{name: class}`` dict filled by explicit imports.

Every backbone is a :class:`~sss_viewer.models.base.WindowModel`: it maps float32 windows ``(B, L)``
to one logit per window ``(B,)``, takes only shape/size keyword arguments, and exposes
``get_config()`` (JSON-serialisable, with ``"name"``) such that ``build_model(**model.get_config())``
rebuilds it. To add a backbone, subclass ``WindowModel``, import the class here and add it to
:data:`MODEL_REGISTRY`; nothing scans directories.
"""

from __future__ import annotations

import inspect
import logging
from typing import Any

from sss_viewer.models.base import WindowModel
from sss_viewer.models.dlinear import DLinear
from sss_viewer.models.hydra import HydraClassifier, HydraMiniRocketClassifier
from sss_viewer.models.mamba import MambaClassifier
from sss_viewer.models.minirocket import MiniRocketClassifier
from sss_viewer.models.moderntcn import ModernTCN
from sss_viewer.models.patchtst import PatchTST
from sss_viewer.models.rnn import GRUClassifier, LSTMClassifier
from sss_viewer.models.rocket import RocketClassifier
from sss_viewer.models.timesnet import TimesNet

logger = logging.getLogger(__name__)

__all__ = [
    "FINITE_CONTEXT",
    "INFINITE_CONTEXT",
    "MODEL_REGISTRY",
    "app_c_best",
    "build_model",
    "build_window_model",
    "model_from_config",
]

MODEL_REGISTRY: dict[str, type[WindowModel]] = {
    cls.name: cls
    for cls in (
        PatchTST,
        TimesNet,
        ModernTCN,
        DLinear,
        RocketClassifier,
        MambaClassifier,
        GRUClassifier,
        LSTMClassifier,
        MiniRocketClassifier,
        HydraClassifier,
        HydraMiniRocketClassifier,
    )
}
"""Known backbones by name."""

FINITE_CONTEXT = ("patchtst", "timesnet", "moderntcn", "dlinear")
"""Backbones with a fixed input length L (``window_length``): whole channels are padded or truncated to L."""
INFINITE_CONTEXT = ("rocket", "mamba", "gru", "lstm", "minirocket", "hydra", "hydra_minirocket")
"""Backbones that read a whole variable-length channel (and equally a batch of fixed windows)."""


def _accepted_params(cls: type[WindowModel]) -> list[str]:
    """Keyword parameters of ``cls.__init__`` (without ``self``)."""
    sig = inspect.signature(cls.__init__)
    return [p.name for p in list(sig.parameters.values())[1:] if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]


def build_model(name: str, **params: Any) -> WindowModel:
    """Build a backbone by name.

    Parameters
    ----------
    name : str
        A key of :data:`MODEL_REGISTRY` (e.g. ``"patchtst"``).
    **params
        Constructor arguments of that backbone; omitted ones take the backbone's defaults.

    Returns
    -------
    WindowModel
        A freshly initialised model mapping ``(B, L)`` windows to ``(B,)`` logits.

    Raises
    ------
    ValueError
        If ``name`` is not registered, or a parameter is not one the backbone accepts.
    """
    if name not in MODEL_REGISTRY:
        known = ", ".join(repr(k) for k in sorted(MODEL_REGISTRY))
        raise ValueError(f"Unknown backbone {name!r}: expected one of {known}.")
    cls = MODEL_REGISTRY[name]
    accepted = _accepted_params(cls)
    unknown = [key for key in params if key not in accepted]
    if unknown:
        raise ValueError(
            f"Unknown parameter(s) {', '.join(repr(k) for k in unknown)} for backbone {name!r}: "
            f"expected some of {', '.join(accepted)}."
        )
    logger.debug("Building backbone %r with %s", name, params)
    return cls(**params)


def build_window_model(name: str, window_length: int, **params: Any) -> WindowModel:
    """A backbone that scores windows of ``window_length`` samples (the SSS local model).

    Finite-context backbones get ``window_length``; ROCKET, MiniRocket and Hydra get it as the
    reference length of their kernel dilations (``input_length``); recurrent and Mamba backbones take
    any length.

    Parameters
    ----------
    name : str
        A key of :data:`MODEL_REGISTRY`.
    window_length : int
        Samples per window L; a ``window_length`` or ``input_length`` in ``params`` takes precedence.
    **params
        Other constructor arguments of that backbone (see :func:`build_model`).

    Returns
    -------
    WindowModel
        A freshly initialised model mapping ``(B, L)`` windows to ``(B,)`` logits.

    Raises
    ------
    ValueError
        If ``name`` is not registered, or a parameter is not one the backbone accepts.
    """
    accepted = _accepted_params(MODEL_REGISTRY[name]) if name in MODEL_REGISTRY else []
    if "window_length" in accepted:
        params.setdefault("window_length", window_length)
    elif "input_length" in accepted:
        params.setdefault("input_length", window_length)
    return build_model(name, **params)


def app_c_best(name: str) -> dict[str, Any]:
    """The paper's best configuration of a backbone (App. C, red in its tables), incl. ``lr`` and L where given.

    Parameters
    ----------
    name : str
        A key of :data:`MODEL_REGISTRY`.

    Returns
    -------
    dict of str to Any
        A copy of the ``APP_C_BEST`` of the backbone's module (its entry for ``name`` where the module
        holds several backbones): constructor arguments, ``lr``, ``window_length`` where the paper gives
        one, and a ``note`` on the source where there is one.

    Raises
    ------
    ValueError
        If ``name`` is not registered (the message lists the backbones).
    """
    if name not in MODEL_REGISTRY:
        known = ", ".join(repr(k) for k in sorted(MODEL_REGISTRY))
        raise ValueError(f"Unknown backbone {name!r}: expected one of {known}.")
    module = inspect.getmodule(MODEL_REGISTRY[name])
    best = module.APP_C_BEST
    return dict(best[name] if name in best and isinstance(best[name], dict) else best)


def model_from_config(cfg: dict[str, Any]) -> WindowModel:
    """Build a backbone from a ``get_config()`` dict (e.g. read back from JSON).

    Parameters
    ----------
    cfg : dict
        Must hold ``"name"``; the other keys are constructor arguments.

    Returns
    -------
    WindowModel
        A freshly initialised model; load its weights separately.
    """
    if "name" not in cfg:
        raise ValueError(f"Model config lacks 'name': got keys {sorted(cfg)}.")
    params = dict(cfg)
    if params["name"] in ("minirocket", "hydra", "hydra_minirocket"):  # saved before their series route: windows
        params.setdefault("feature_context", "window")  # were read on their own
    if params["name"] in ("minirocket", "hydra_minirocket"):  # saved before MiniRocket's split matched the
        params.setdefault("dilation_split", "legacy")  # reference: their biases are laid out by the old split
    return build_model(params.pop("name"), **params)

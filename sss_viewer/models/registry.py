"""The backbone registry: a plain ``{name: class}`` dict filled by explicit imports.

Every backbone maps float32 windows ``(B, L)`` to one logit per window ``(B,)``, takes only
shape/size keyword arguments, and exposes ``get_config()`` (JSON-serialisable, with ``"name"``)
such that ``build_model(**model.get_config())`` rebuilds it. To add a backbone, import its class
here and add it to :data:`MODEL_REGISTRY`; nothing scans directories.
"""

from __future__ import annotations

import inspect
import logging
from typing import Any

from torch import nn

from sss_viewer.models.patchtst import PatchTST

logger = logging.getLogger(__name__)

__all__ = ["MODEL_REGISTRY", "build_model", "model_from_config"]

MODEL_REGISTRY: dict[str, type[nn.Module]] = {
    PatchTST.name: PatchTST,
}
"""Known backbones by name."""


def _accepted_params(cls: type[nn.Module]) -> list[str]:
    """Keyword parameters of ``cls.__init__`` (without ``self``)."""
    sig = inspect.signature(cls.__init__)
    return [
        p.name
        for p in list(sig.parameters.values())[1:]
        if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)
    ]


def build_model(name: str, **params: Any) -> nn.Module:
    """Build a backbone by name.

    Parameters
    ----------
    name : str
        A key of :data:`MODEL_REGISTRY` (e.g. ``"patchtst"``).
    **params
        Constructor arguments of that backbone; omitted ones take the backbone's defaults.

    Returns
    -------
    nn.Module
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


def model_from_config(cfg: dict[str, Any]) -> nn.Module:
    """Build a backbone from a ``get_config()`` dict (e.g. read back from JSON).

    Parameters
    ----------
    cfg : dict
        Must hold ``"name"``; the other keys are constructor arguments.

    Returns
    -------
    nn.Module
        A freshly initialised model; load its weights separately.
    """
    if "name" not in cfg:
        raise ValueError(f"Model config lacks 'name': got keys {sorted(cfg)}.")
    params = dict(cfg)
    return build_model(params.pop("name"), **params)

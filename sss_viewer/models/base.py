"""The contract of a window backbone, and the input checks every backbone shares.

A backbone maps float32 windows ``(B, L)`` to one logit per window ``(B,)``. Finite-context
backbones take exactly ``window_length`` samples (and an optional validity mask); infinite-context
ones any ``T >= min_length`` (a batch of windows, or one whole channel with ``B = 1``).

:class:`WindowModel` gives every backbone:

* :meth:`~WindowModel.get_config`, built from the constructor's signature: the arguments the
  model was built with (defaults filled in, ``float``/``bool`` parameters cast to their type, in
  signature order) under ``"name"``, so that ``build_model(**model.get_config())`` rebuilds it.
  Nothing is stored by hand: the arguments are recorded when the object is created. A constructor
  that resolves an argument (a ``None`` default made concrete) records the value it chose with
  :meth:`~WindowModel.record_args`; :attr:`~WindowModel.runtime_args` names arguments that change
  how the model computes but not what (left out of the config).
* the validation of its declared arguments (:attr:`~WindowModel.positive_ints`,
  :attr:`~WindowModel.non_negative_ints`, :attr:`~WindowModel.fractions`,
  :attr:`~WindowModel.choices`), run by ``super().__init__()``, with readable messages naming the
  argument; checks that relate arguments stay in the constructor;
* :meth:`~WindowModel.check_input`, the one shape check (exact length and mask for finite-context
  models, minimum length otherwise), and the documentation of ``forward``.
"""

from __future__ import annotations

import inspect
from typing import Any, ClassVar, Self

import torch
from torch import Tensor, nn

from sss_viewer._validate import check_non_negative_int, check_option, check_positive_int, check_range
from sss_viewer.models.revin import MaskedRevIN

__all__ = ["WindowModel", "check_sequence", "check_window"]


def check_sequence(x: Tensor, min_length: int, model: str) -> None:
    """Raise a clear ValueError unless ``x`` is a float ``(B, T)`` tensor with ``T >= min_length``.

    Parameters
    ----------
    x : Tensor
        Model input.
    min_length : int
        Smallest accepted ``T``.
    model : str
        Model name used in the message.
    """
    if not isinstance(x, Tensor) or x.ndim != 2:
        shape = tuple(x.shape) if isinstance(x, Tensor) else type(x).__name__
        raise ValueError(f"{model} expects a float tensor of shape (B, T), got {shape}.")
    if not x.is_floating_point():
        raise ValueError(f"{model} expects a floating-point tensor, got dtype {x.dtype}.")
    if x.shape[0] < 1:
        raise ValueError(f"{model} got an empty batch, shape {tuple(x.shape)}.")
    if x.shape[1] < min_length:
        raise ValueError(f"{model} needs sequences of at least {min_length} samples, got T={x.shape[1]}.")


def check_window(model_name: str, window_length: int, x: Tensor, mask: Tensor | None) -> None:
    """Raise a ValueError unless ``x`` is ``(B, window_length)`` and ``mask`` matches it.

    Parameters
    ----------
    model_name : str
        Shown in the message.
    window_length : int
        The expected ``L``.
    x : Tensor
        The input windows.
    mask : Tensor or None
        Optional validity mask.
    """
    if x.ndim != 2 or x.shape[1] != window_length:
        raise ValueError(f"{model_name} expects windows of shape (B, {window_length}), got {tuple(x.shape)}.")
    if mask is not None:
        if mask.shape != x.shape:
            raise ValueError(f"{model_name}: mask shape {tuple(mask.shape)} differs from x shape {tuple(x.shape)}.")
        if mask.dtype != torch.bool:
            raise ValueError(f"{model_name}: mask must be bool, got {mask.dtype}.")


def _constructor_parameters(cls: type) -> list[inspect.Parameter]:
    """The named parameters of ``cls.__init__`` after ``self``."""
    params = list(inspect.signature(cls.__init__).parameters.values())[1:]
    return [p for p in params if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]


_CASTS = {"float": float, "bool": bool, float: float, bool: bool}
"""Saved-config casts by annotation (``dropout=0`` is saved as ``0.0``, ``revin=1`` as ``true``)."""


class WindowModel(nn.Module):
    """Base class of the window backbones: ``(B, T)`` float32 → ``(B,)`` logits.

    Subclasses set :attr:`name`, declare the checks of their arguments in the class attributes
    below and call ``super().__init__()`` first in their constructor (which runs those checks).
    Finite-context models set :attr:`window_length`, the others :attr:`min_length`.
    """

    name: ClassVar[str] = ""
    """Registry name, saved as the config's ``"name"``."""
    positive_ints: ClassVar[tuple[str, ...]] = ()
    """Constructor arguments that must be positive integers."""
    non_negative_ints: ClassVar[tuple[str, ...]] = ()
    """Constructor arguments that must be integers >= 0 (seeds)."""
    fractions: ClassVar[tuple[str, ...]] = ()
    """Constructor arguments in ``[0, 1)`` (dropout probabilities)."""
    choices: ClassVar[dict[str, tuple[Any, ...]]] = {}
    """Constructor arguments with a fixed set of values."""
    runtime_args: ClassVar[tuple[str, ...]] = ()
    """Constructor arguments left out of :meth:`get_config`: how the model computes, not what."""

    window_length: int | None = None
    """The input length of a finite-context model; None: any ``T >= min_length``."""
    min_length: int = 1
    """Smallest accepted ``T`` of an infinite-context model."""

    def __new__(cls, *args: Any, **kwargs: Any) -> Self:
        """Record the constructor's arguments, defaults filled in, before ``__init__`` runs."""
        self = super().__new__(cls)
        try:
            bound = inspect.signature(cls.__init__).bind(self, *args, **kwargs)
        except TypeError:  # __init__ raises the same error; unpickling and copying pass no arguments
            self.__dict__["_init_args"] = {}
            return self
        bound.apply_defaults()
        self.__dict__["_init_args"] = {p.name: bound.arguments[p.name] for p in _constructor_parameters(cls)}
        return self

    def __init__(self) -> None:
        super().__init__()
        args = self._init_args
        declared = (*self.positive_ints, *self.non_negative_ints, *self.fractions, *self.choices)
        missing = [key for key in declared if key not in args]
        if missing:
            raise TypeError(
                f"{type(self).__name__}'s constructor does not take {missing}, which its class declares checks for: "
                "a subclass with another signature must declare its own checks (and cannot be saved as the parent)."
            )
        for key in self.positive_ints:
            check_positive_int(key, args[key])
        for key in self.non_negative_ints:
            check_non_negative_int(key, args[key])
        for key in self.fractions:
            check_range(key, args[key], 0.0, 1.0, high_inclusive=False)
        for key, allowed in self.choices.items():
            check_option(key, args[key], allowed)

    def record_args(self, **resolved: Any) -> None:
        """Record the values the constructor resolved some of its arguments to (saved by :meth:`get_config`)."""
        unknown = set(resolved) - set(self._init_args)
        if unknown:
            raise TypeError(f"{type(self).__name__} has no constructor argument(s) {sorted(unknown)}.")
        self._init_args.update(resolved)

    def get_config(self) -> dict[str, Any]:
        """Return the JSON-serialisable constructor arguments, with ``"name"``.

        Returns
        -------
        dict
            ``build_model(**cfg)`` (or ``model_from_config(cfg)``) rebuilds an identically shaped
            model; for backbones with fixed random kernels, the same kernels.
        """
        config: dict[str, Any] = {"name": self.name}
        for param in _constructor_parameters(type(self)):
            if param.name in self.runtime_args:
                continue
            value = self._init_args[param.name]
            cast = _CASTS.get(param.annotation)
            config[param.name] = cast(value) if cast is not None and value is not None else value
        return config

    def check_input(self, x: Tensor, mask: Tensor | None = None) -> None:
        """Raise a ValueError naming the model unless ``x`` (and ``mask``) fit it.

        Finite-context models: ``x`` of shape ``(B, window_length)``, ``mask`` of the same shape and
        bool. Others: a float ``(B, T)`` tensor, ``B >= 1``, ``T >= min_length``.
        """
        if self.window_length is not None:
            check_window(type(self).__name__, self.window_length, x, mask)
        else:
            check_sequence(x, self.min_length, type(self).__name__)

    def masked_input(self, x: Tensor, mask: Tensor | None, revin: MaskedRevIN | None) -> Tensor:
        """Check the windows (:meth:`check_input`), then RevIN them over their valid samples (or just zero the padding).

        Parameters
        ----------
        x : Tensor, shape (B, window_length)
        mask : Tensor, shape (B, window_length), bool, optional
            True at valid samples.
        revin : MaskedRevIN or None

        Returns
        -------
        Tensor, shape (B, window_length)
            Padded samples are 0.
        """
        self.check_input(x, mask)
        if revin is not None:
            return revin(x, mask)
        if mask is not None:
            return torch.where(mask, x, torch.zeros((), dtype=x.dtype, device=x.device))
        return x

    def forward(self, x: Tensor, mask: Tensor | None = None) -> Tensor:
        """Score windows.

        Parameters
        ----------
        x : Tensor, shape (B, T), float32
            Finite-context models: windows with ``T == window_length``. Others: a batch of windows
            or one whole channel (``B = 1``), any ``T >= min_length``.
        mask : Tensor, shape (B, T), bool, optional
            True at valid (non-padded) samples; only the finite-context models that take one (see
            their module notes).

        Returns
        -------
        Tensor, shape (B,)
            One logit per row (apply a sigmoid for probabilities).

        Raises
        ------
        ValueError
            If the input does not fit the model (:meth:`check_input`).
        """
        raise NotImplementedError

"""A model built without drawing from torch's global random stream: for a model whose weights are loaded next.

A module's constructor initialises its weights from torch's one global generator (``nn.Linear``'s
``kaiming_uniform_``, …). A training run seeds that generator and draws its initial weights and
dropout masks from it (:func:`sss_viewer.engine._fit.seeded_torch`); a model built on another thread
meanwhile — the viewer opening a saved model for another session — would take draws from the middle
of the run's stream, and the run's model would then depend on that session's timing, not only on its
seed. :func:`draws_from` makes this thread's random initialisation draw from a generator of its own:
a thread-local ``TorchFunctionMode`` that passes ``generator=`` to every call that takes one and was
given none. Other threads are not affected.

Only for building: dropout (``torch.nn.functional.dropout``) takes no generator and still draws from
the global one, so training keeps :func:`~sss_viewer.engine._fit.seeded_torch`.

Internal to the package: not part of the public API.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import torch
from torch.overrides import TorchFunctionMode

__all__ = ["draws_from"]

_BUILT_IN_DRAWS = frozenset(
    {
        torch.Tensor.uniform_,
        torch.Tensor.normal_,
        torch.Tensor.bernoulli_,
        torch.Tensor.random_,
        torch.Tensor.exponential_,
        torch.Tensor.geometric_,
        torch.Tensor.cauchy_,
        torch.Tensor.log_normal_,
        torch.rand,
        torch.randn,
        torch.randint,
        torch.randperm,
        torch.normal,
        torch.bernoulli,
        torch.multinomial,
        torch.poisson,
    }
)
"""Tensor methods that draw in place and torch's drawing functions (built-ins: their signatures cannot be inspected)."""


@functools.lru_cache(maxsize=1024)
def _takes_generator(func: Callable) -> bool:
    """Whether ``func`` accepts a ``generator=`` argument (``torch.nn.init.*``, ``torch.rand``, the in-place draws)."""
    if func in _BUILT_IN_DRAWS:
        return True
    try:
        return "generator" in inspect.signature(func).parameters
    except (TypeError, ValueError):  # a built-in without a signature
        return False


class _PrivateGenerator(TorchFunctionMode):
    """Passes ``generator`` to each torch call on this thread that takes one and was given none."""

    def __init__(self, generator: torch.Generator) -> None:
        super().__init__()
        self.generator = generator

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = dict(kwargs or {})
        if kwargs.get("generator") is None and _takes_generator(func):
            kwargs["generator"] = self.generator
        return func(*args, **kwargs)


@contextmanager
def draws_from(generator: torch.Generator) -> Iterator[torch.Generator]:
    """Within the block, this thread's random initialisation draws from ``generator``, not the global stream.

    Parameters
    ----------
    generator : torch.Generator
        A CPU generator (models are built on the CPU and moved afterwards).

    Yields
    ------
    torch.Generator
        ``generator``.
    """
    with _PrivateGenerator(generator):
        yield generator

"""Small validators with readable messages (in the spirit of MNE's ``_check_option``)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any


def check_option(name: str, value: Any, allowed: Iterable[Any]) -> Any:
    """Return ``value`` if it is one of ``allowed``, else raise a ValueError naming ``name``.

    Parameters
    ----------
    name : str
        Parameter name shown in the message.
    value : object
        The value given.
    allowed : iterable
        The accepted values.
    """
    allowed = list(allowed)
    if value not in allowed:
        options = ", ".join(repr(a) for a in allowed)
        raise ValueError(f"Invalid {name}={value!r}: expected one of {options}.")
    return value


def check_range(
    name: str,
    value: float,
    low: float | None = None,
    high: float | None = None,
    *,
    low_inclusive: bool = True,
    high_inclusive: bool = True,
) -> float:
    """Return ``value`` if it lies within the given bounds, else raise a ValueError naming ``name``."""
    ok = True
    if low is not None:
        ok &= value >= low if low_inclusive else value > low
    if high is not None:
        ok &= value <= high if high_inclusive else value < high
    if not ok:
        lo = "-inf" if low is None else f"{low}"
        hi = "inf" if high is None else f"{high}"
        lb = "[" if low_inclusive else "("
        hb = "]" if high_inclusive else ")"
        raise ValueError(f"Invalid {name}={value!r}: expected a value in {lb}{lo}, {hi}{hb}.")
    return value


def check_positive_int(name: str, value: Any) -> int:
    """Return ``value`` as an int if it is a positive integer, else raise a ValueError naming ``name``."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"Invalid {name}={value!r}: expected a positive integer.")
    return value

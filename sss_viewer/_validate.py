"""Small validators with readable messages (in the spirit of MNE's ``_check_option`` and ``_validate_type``).

Every message reads ``Invalid {name}={value!r}: expected …`` so a caller's error names the parameter and
what was accepted. A value of the wrong type raises ``TypeError`` (:func:`check_type`); a value of the
right type outside what is accepted raises ``ValueError``.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any


def check_type(name: str, value: Any, types: type | tuple[type, ...], type_name: str | None = None) -> Any:
    """Return ``value`` if it is an instance of ``types``, else raise a TypeError naming ``name``.

    ``bool`` is not accepted as a number: when ``types`` holds ``int`` (or a numbers ABC) but not
    ``bool``, ``True`` / ``False`` are rejected (a flag passed where a count was meant).

    Parameters
    ----------
    name : str
        Parameter name shown in the message.
    value : object
        The value given.
    types : type or tuple of type
        The accepted types (as for :func:`isinstance`).
    type_name : str, optional
        How the message names the accepted types (e.g. ``"a path"``); by default their names,
        e.g. ``"int or float"``.

    Returns
    -------
    value : object
        ``value`` unchanged.

    Raises
    ------
    TypeError
        ``Invalid {name}={value!r}: expected {type_name}; got {type(value).__name__}.``
    """
    accepted = types if isinstance(types, tuple) else (types,)
    is_bool_for_number = isinstance(value, bool) and bool not in accepted
    if is_bool_for_number or not isinstance(value, accepted):
        if type_name is None:
            names = [getattr(t, "__name__", repr(t)) for t in accepted]
            type_name = names[0] if len(names) == 1 else ", ".join(names[:-1]) + " or " + names[-1]
        raise TypeError(f"Invalid {name}={value!r}: expected {type_name}; got {type(value).__name__}.")
    return value


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
        lb = "[" if low_inclusive and low is not None else "("  # an infinite bound is never included
        hb = "]" if high_inclusive and high is not None else ")"
        raise ValueError(f"Invalid {name}={value!r}: expected a value in {lb}{lo}, {hi}{hb}.")
    return value


def check_positive_int(name: str, value: Any) -> int:
    """Return ``value`` if it is a positive Python ``int``, else raise a ValueError naming ``name``.

    ``bool`` is not accepted; convert a NumPy integer with ``int()`` first.
    """
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"Invalid {name}={value!r}: expected a positive integer.")
    return value


def check_non_negative_int(name: str, value: Any) -> int:
    """Return ``value`` if it is a Python ``int`` >= 0, else raise a ValueError naming ``name``.

    ``bool`` is not accepted; convert a NumPy integer with ``int()`` first.
    """
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(f"Invalid {name}={value!r}: expected a non-negative integer.")
    return value

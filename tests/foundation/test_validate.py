"""The shared validators: each names the parameter and what it expected, with the right exception type."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

from sss_viewer._validate import check_non_negative_int, check_option, check_positive_int, check_range, check_type


def test_check_type_returns_the_value_of_an_accepted_type():
    path = Path("x")
    assert check_type("path", path, (str, Path)) is path
    assert check_type("n", 3, int) == 3
    assert check_type("flag", True, bool) is True


@pytest.mark.parametrize(
    ("value", "types", "type_name", "message"),
    [
        ("3", int, None, "Invalid n='3': expected int; got str."),
        (3.5, (int, str), None, "Invalid n=3.5: expected int or str; got float."),
        (None, (int, float, complex), None, "Invalid n=None: expected int, float or complex; got NoneType."),
        ([1], dict, "a mapping of names to values", "Invalid n=[1]: expected a mapping of names to values; got list."),
        (True, int, None, "Invalid n=True: expected int; got bool."),
    ],
)
def test_check_type_raises_a_type_error_naming_the_parameter_and_the_types(value, types, type_name, message):
    with pytest.raises(TypeError, match=f"^{re.escape(message)}$"):
        check_type("n", value, types, type_name)


def test_check_type_takes_a_bool_where_bool_is_accepted():
    assert check_type("flag", False, (bool, int)) is False


def test_check_option_range_and_ints_keep_their_messages():
    assert check_option("mode", "a", ("a", "b")) == "a"
    with pytest.raises(ValueError, match=r"^Invalid mode='c': expected one of 'a', 'b'\.$"):
        check_option("mode", "c", ("a", "b"))
    with pytest.raises(ValueError, match=r"^Invalid eps=0: expected a value in \(0, inf\)\.$"):
        check_range("eps", 0, 0, None, low_inclusive=False)
    with pytest.raises(ValueError, match=r"^Invalid eps=nan: expected a value in \(0, inf\)\.$"):
        check_range("eps", float("nan"), 0, None, low_inclusive=False)
    with pytest.raises(ValueError, match=r"^Invalid k=0: expected a positive integer\.$"):
        check_positive_int("k", 0)


@pytest.mark.parametrize("value", [-1, True, 1.0, np.int64(2), "2"])
def test_check_non_negative_int_refuses_what_is_not_a_python_int_from_zero(value):
    with pytest.raises(
        ValueError, match=rf"^Invalid seed={re.escape(repr(value))}: expected a non-negative integer\.$"
    ):
        check_non_negative_int("seed", value)


def test_check_non_negative_int_accepts_zero():
    assert check_non_negative_int("seed", 0) == 0

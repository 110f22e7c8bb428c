"""Reading a table with required columns (BIDS TSVs, cohort and label tables): one reader, one error style.

Every refusal names the file and what was expected of it:

- a missing file: ``FileNotFoundError`` "<what> not found: <path>";
- an empty file, a malformed one (stray quote, bad bytes) or one without a required column: a
  ``ValueError`` (:class:`TableError`) "<path> …; expected a <tab-separated> <what> with columns […]".
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pandas as pd

SEPARATOR_NAMES = {"\t": "tab-separated", ",": "comma-separated"}


class TableError(ValueError):
    """A table file that cannot be read as the table it should be (the message names the file)."""


def _expected(what: str, sep: str, required: Sequence[str]) -> str:
    kind = SEPARATOR_NAMES.get(sep, f"{sep!r}-separated")
    return f"expected a {kind} {what} with columns {list(required)}"


def read_table(
    path: str | Path,
    required: Sequence[str] = (),
    *,
    what: str = "table",
    sep: str = "\t",
    dtype=str,
    na_values: Sequence[str] | None = ("n/a",),
    strip_headers: bool = False,
    allow_no_rows: bool = True,
    error: type[ValueError] | None = None,
) -> pd.DataFrame:
    """Read ``path`` as a table that must have the ``required`` columns.

    Parameters
    ----------
    path : str or Path
    required : sequence of str
        Column names the table must have (others are kept).
    what : str
        What the table is, for messages ("BIDS events file", "cohort table", …).
    sep : str
        Column separator (default tab).
    dtype : type or dict
        As for :func:`pandas.read_csv` (default: every cell a ``str``).
    na_values : sequence of str or None
        Cells read as missing (default ``n/a``, BIDS's); None: none (empty cells stay ``""``).
    strip_headers : bool
        Strip spaces around column names (hand-written sheets).
    allow_no_rows : bool
        False: a header without rows is refused too.
    error : subclass of ValueError, optional
        The class of the refusals (default :class:`TableError`): a reader of a domain keeps its own error.

    Returns
    -------
    DataFrame, one row per line after the header.

    Raises
    ------
    FileNotFoundError
        ``path`` is not a file.
    TableError
        Empty, malformed, a required column missing, or (with ``allow_no_rows=False``) no rows (``error``
        when given).
    """
    error = TableError if error is None else error
    path = Path(path)
    expected = _expected(what, sep, required)
    if not path.is_file():
        raise FileNotFoundError(f"{what[:1].upper()}{what[1:]} not found: {path}")
    options = {"keep_default_na": False}
    if na_values is not None:
        options["na_values"] = list(na_values)
    try:
        table = pd.read_csv(path, sep=sep, dtype=dtype, **options)
    except pd.errors.EmptyDataError:
        raise error(f"{path} is empty (not even a header line); {expected}.") from None
    except (pd.errors.ParserError, UnicodeDecodeError) as exc:
        raise error(f"Could not read {path}: {str(exc).strip()}; {expected}.") from None
    if strip_headers:
        table.columns = [str(c).strip() for c in table.columns]
    missing = [c for c in required if c not in table.columns]
    if missing:
        raise error(f"{path} lacks columns {missing}; it has {list(table.columns)} ({expected}).")
    if not allow_no_rows and table.empty:
        raise error(f"{path} has a header but no rows; {expected}, one row per entry.")
    return table

"""Write ``docs/api.md``: every stage's public names (its ``__all__``), each with its signature and summary.

``python docs/make_api.py`` rewrites the page; ``python docs/make_api.py --check`` exits 1 when the committed
page differs from what the code says now (``tests/foundation/test_public_api.py`` runs the same comparison).
"""

from __future__ import annotations

import argparse
import ast
import importlib
import inspect
import logging
import sys
from pathlib import Path
from types import ModuleType

logger = logging.getLogger(__name__)

PAGE = Path(__file__).resolve().with_name("api.md")
"""The generated page."""

STAGES = (
    "sss_viewer",
    "sss_viewer.io",
    "sss_viewer.synth",
    "sss_viewer.preprocessing",
    "sss_viewer.windows",
    "sss_viewer.models",
    "sss_viewer.engine",
    "sss_viewer.biomarkers",
    "sss_viewer.evaluation",
    "sss_viewer.baselines",
    "sss_viewer.experiments",
    "sss_viewer.cohort_scoring",
    "sss_viewer.viewer",
)
"""The packages whose ``__all__`` is the public API, front door first, then the stages in data-flow order."""

SHOWN_VALUE_CHARS = 100
"""A constant's value is shown when its ``repr`` is at most this long (and it is a plain string, number or tuple)."""
SIGNATURE_CHARS = 160
"""A longer signature is cut after its last whole parameter within this many characters (``, …)``)."""


def defining_module(package: ModuleType, name: str, value: object) -> str:
    """The module that defines ``package.name``: where its docstring is read.

    Parameters
    ----------
    package : ModuleType
        A stage package.
    name : str
        A name in its ``__all__``.
    value : object
        ``getattr(package, name)``.

    Returns
    -------
    str
        The module's full name: a class's or function's ``__module__``; for a constant, the module the package
        lists it under (its ``_PUBLIC``) or imports it from; else the package itself.
    """
    if inspect.isclass(value) or inspect.isroutine(value):
        return value.__module__
    for module, names in getattr(package, "_PUBLIC", {}).items():
        if name in names:
            return module
    tree = ast.parse(Path(package.__file__).read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and any(a.name == name for a in node.names):
            return node.module
    return package.__name__


def attribute_docstring(module: str, name: str) -> str | None:
    """The string literal right after the module-level assignment of ``name`` in ``module``'s source.

    Parameters
    ----------
    module : str
        A module's full name.
    name : str
        A module-level variable.

    Returns
    -------
    str or None
        The attribute docstring (``inspect.cleandoc``-ed), None when the assignment has none.
    """
    source = Path(importlib.import_module(module).__file__).read_text(encoding="utf-8")
    body = ast.parse(source).body
    for node, following in zip(body, body[1:], strict=False):
        targets = {ast.Assign: lambda n: n.targets, ast.AnnAssign: lambda n: [n.target]}.get(type(node), lambda n: [])(
            node
        )
        if any(isinstance(t, ast.Name) and t.id == name for t in targets):
            if isinstance(following, ast.Expr) and isinstance(following.value, ast.Constant):
                if isinstance(following.value.value, str):
                    return inspect.cleandoc(following.value.value)
            return None
    return None


def own_docstring(package: ModuleType, name: str, value: object) -> str | None:
    """The docstring that documents ``package.name`` itself (never one inherited from a base class or a type).

    Parameters
    ----------
    package : ModuleType
    name : str
    value : object
        ``getattr(package, name)``.

    Returns
    -------
    str or None
        A class's own ``__doc__`` (not a dataclass's generated signature), a function's ``__doc__``, a
        constant's attribute docstring; None when there is none.
    """
    if inspect.isclass(value):
        doc = value.__dict__.get("__doc__")
        if doc and doc.startswith(f"{value.__name__}("):  # what @dataclass writes when the class has no docstring
            return None
    elif inspect.isroutine(value):
        doc = value.__doc__
    else:
        doc = attribute_docstring(defining_module(package, name, value), name)
    return inspect.cleandoc(doc) if doc else None


def summary(doc: str | None) -> str:
    """The first paragraph of a docstring, on one line ("(undocumented)" without one)."""
    if not doc:
        return "(undocumented)"
    return " ".join(doc.split("\n\n", 1)[0].split())


def signature(name: str, value: object) -> str:
    """How ``name`` is used: ``name(params)`` for a class or function, ``name = value`` or ``name: type`` else.

    Parameters
    ----------
    name : str
    value : object

    Returns
    -------
    str
        Without memory addresses or machine paths: a default that is not a plain literal shows its type.
    """
    if inspect.isclass(value) or inspect.isroutine(value):
        try:
            sig = inspect.signature(value)
        except (TypeError, ValueError):
            return f"{name}(...)"
        params = []
        for param in sig.parameters.values():
            default = param.default
            if default is not inspect.Parameter.empty and not isinstance(default, (str, int, float, bool, type(None))):
                shown = type(default).__name__
                default = _Shown("factory" if shown.startswith("_HAS_DEFAULT_FACTORY") else shown)
            params.append(param.replace(annotation=inspect.Parameter.empty, default=default))
        text = f"{name}{sig.replace(parameters=params, return_annotation=inspect.Signature.empty)}"
        if len(text) > SIGNATURE_CHARS:
            text = text[: text.rindex(", ", 0, SIGNATURE_CHARS - 3)] + ", …)"
        return text
    shown = repr(value)
    if isinstance(value, (str, int, float, tuple)) and len(shown) <= SHOWN_VALUE_CHARS and "0x" not in shown:
        return f"{name} = {shown}"
    return f"{name}: {type(value).__name__}"


class _Shown:
    """A default shown by its type's name (``<Path>``): its ``repr`` could name this machine's paths."""

    def __init__(self, text: str) -> None:
        self.text = text

    def __repr__(self) -> str:
        return f"<{self.text}>"


def render() -> str:
    """The page: one section per package of :data:`STAGES`, one row per public name, sorted.

    Returns
    -------
    str
        Markdown.
    """
    lines = [
        "# API reference",
        "",
        "Generated by `python docs/make_api.py` from each package's `__all__` and docstrings; do not edit by hand",
        "(`tests/foundation/test_public_api.py` fails when this page and the code disagree). Every name is imported from its",
        "package (`from sss_viewer.models import PatchTST`); the modules behind them are the packages' own.",
        "",
    ]
    for stage in STAGES:
        package = importlib.import_module(stage)
        lines += [f"## `{stage}`", "", summary(inspect.getdoc(package)), ""]
        for name in sorted(package.__all__):
            value = getattr(package, name)
            lines += [f"- `{signature(name, value)}`", f"  {summary(own_docstring(package, name, value))}"]
        lines.append("")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    """Write :data:`PAGE`, or with ``--check`` compare it with :func:`render`.

    Parameters
    ----------
    argv : list of str, optional
        Command-line arguments (default ``sys.argv[1:]``).

    Returns
    -------
    int
        The exit status: 0, or 1 when ``--check`` finds the page stale.
    """
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="exit 1 when docs/api.md differs from the code")
    args = parser.parse_args(argv)
    page = render()
    if args.check:
        if not PAGE.is_file() or PAGE.read_text(encoding="utf-8") != page:
            logger.error("%s is stale: run python docs/make_api.py", PAGE)
            return 1
        return 0
    PAGE.write_text(page, encoding="utf-8")
    logger.info("wrote %s", PAGE)
    return 0


if __name__ == "__main__":
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    sys.exit(main())

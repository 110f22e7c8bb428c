"""Lazy imports: the stage packages' re-exports (:func:`attach`) and the optional dependencies (:func:`require`).

A stage's ``__init__`` lists its public names by the module that defines them; importing the stage then
costs no more than the package itself (no torch, MNE, Panel, mambapy or Dask until a name that needs one
is used), and ``from sss_viewer.models import PatchTST`` works as an eager re-export would::

    _PUBLIC = {"sss_viewer.models.patchtst": ("PatchTST",)}
    __getattr__, __dir__, __all__ = attach(__name__, _PUBLIC)

A feature that needs an optional dependency (an extra of ``pyproject.toml``) imports it where it is used,
through :func:`require`, which names the extra to install when it is missing::

    mamba = require("mambapy.mamba", extra="mamba", feature="The Mamba backbone")
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Iterable, Mapping
from types import ModuleType
from typing import Any

__all__ = ["MissingExtraError", "attach", "require"]


def attach(
    package: str, public: Mapping[str, Iterable[str]]
) -> tuple[Callable[[str], Any], Callable[[], list[str]], list[str]]:
    """Module-level ``__getattr__``, ``__dir__`` and ``__all__`` for names imported from their modules on first use.

    Parameters
    ----------
    package : str
        The package's ``__name__``.
    public : Mapping[str, Iterable[str]]
        The full name of a module → the public names it defines (looked up there under the same name).
        A public name may not also be the name of one of the package's submodules.

    Returns
    -------
    getattr_ : Callable[[str], Any]
        The package's ``__getattr__``: the object for a public name, imported on first use and then kept in
        the package's namespace; ``AttributeError`` for any other name (so that ``from package import
        submodule`` goes on to import the submodule).
    dir_ : Callable[[], list[str]]
        The package's ``__dir__``: its namespace and the public names, sorted.
    all_ : list[str]
        The public names, sorted: the package's ``__all__``.

    Raises
    ------
    ValueError
        When a name is listed under two modules.
    """
    where: dict[str, str] = {}
    for module, names in public.items():
        for name in names:
            if name in where:
                raise ValueError(f"{package}: public name {name!r} listed under both {where[name]} and {module}")
            where[name] = module

    def getattr_(name: str) -> Any:
        module = where.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module), name)
        setattr(sys.modules[package], name, value)
        return value

    def dir_() -> list[str]:
        return sorted(set(vars(sys.modules[package])) | set(where))

    return getattr_, dir_, sorted(where)


class MissingExtraError(ImportError):
    """An optional dependency is missing; the message names the ``pip install 'sss-viewer[EXTRA]'`` that adds it."""


def require(module: str, *, extra: str, feature: str) -> ModuleType:
    """Import an optional dependency, or say which extra of sss-viewer installs it.

    Parameters
    ----------
    module : str
        The module to import (``"mambapy.mamba"``, ``"distributed"``).
    extra : str
        The extra of ``pyproject.toml`` that installs it (``"mamba"``, ``"cohort"``, ``"excel"``).
    feature : str
        What needs it, as the start of a sentence (``"The Mamba backbone"``).

    Returns
    -------
    ModuleType
        The imported module.

    Raises
    ------
    MissingExtraError
        ``module`` (or a module it needs) cannot be imported.
    """
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise MissingExtraError(
            f"{feature} needs {module.split('.')[0]}, which this installation lacks: pip install 'sss-viewer[{extra}]'",
            name=module,
        ) from exc

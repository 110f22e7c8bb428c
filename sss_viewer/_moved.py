"""Old import paths of modules that moved into the stage packages, kept for one release (as MNE does).

``import sss_viewer.training`` or ``from sss_viewer.io.synthetic import SynthConfig`` still work and
emit a ``DeprecationWarning`` naming the new module. A moved module maps to one new module; a
module split in several maps to all of them, and a name is looked up in each in turn.
:func:`install` registers the finder; ``sss_viewer/__init__.py`` calls it.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.util
import sys
import types
import warnings

__all__ = ["MOVED", "install"]

MOVED: dict[str, tuple[str, ...]] = {
    "sss_viewer.io.synthetic": (
        "sss_viewer.synth.config", "sss_viewer.synth.patients", "sss_viewer.synth.signals", "sss_viewer.synth.run",
        "sss_viewer.synth.bids", "sss_viewer.synth.cohort",
    ),
}  # fmt: skip
"""Old module → the module(s) that now hold its names (release 0.2; the old paths go in 0.3)."""


class _MovedModule(types.ModuleType):
    """Stands in for a moved module: each attribute comes from the first new module that has it."""

    def __init__(self, name: str, targets: tuple[str, ...]):
        super().__init__(name, f"Moved to {', '.join(targets)}.")
        self._targets = targets

    def __getattr__(self, attr: str):
        if attr.startswith("__"):
            raise AttributeError(attr)
        for target in self._targets:
            module = importlib.import_module(target)
            if hasattr(module, attr):
                warnings.warn(
                    f"{self.__name__}.{attr} moved to {target}.{attr}; the old path goes in the next release.",
                    DeprecationWarning,
                    stacklevel=2,
                )
                return getattr(module, attr)
        raise AttributeError(f"module {self.__name__!r} (moved to {', '.join(self._targets)}) has no attribute {attr!r}")

    def __dir__(self):
        return sorted({name for t in self._targets for name in dir(importlib.import_module(t)) if not name.startswith("_")})


class _MovedFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Finds the old paths of :data:`MOVED` and loads a :class:`_MovedModule` for each."""

    def find_spec(self, fullname, path=None, target=None):
        if fullname in MOVED:
            return importlib.util.spec_from_loader(fullname, self)
        return None

    def create_module(self, spec):
        warnings.warn(
            f"{spec.name} moved to {', '.join(MOVED[spec.name])}; the old path goes in the next release.",
            DeprecationWarning,
            stacklevel=2,
        )
        return _MovedModule(spec.name, MOVED[spec.name])

    def exec_module(self, module) -> None:
        return None


def install() -> None:
    """Register the finder once (idempotent)."""
    if not any(isinstance(finder, _MovedFinder) for finder in sys.meta_path):
        sys.meta_path.append(_MovedFinder())

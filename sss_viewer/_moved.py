"""Old import paths of modules that moved into the stage packages, kept for one release (as MNE does).

``import sss_viewer.training`` or ``from sss_viewer.io.synthetic import SynthConfig`` still work and
emit a ``FutureWarning`` (shown to users by default, as MNE does for deprecations) naming the new module
and the release that removes the old path (:data:`REMOVED_IN`). (``sss_viewer.windows``, ``sss_viewer.evaluation``
and ``sss_viewer.baselines`` became packages of the same name that re-export the old modules' names.) A moved module maps to one new module; a
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

__all__ = ["MOVED", "MOVED_IN", "PRIVATISED", "REMOVED_IN", "install"]

MOVED_IN = "0.1"
"""The release whose development moved these modules (see CHANGELOG.md)."""
REMOVED_IN = "0.2"
"""The release that removes the old paths."""

MOVED: dict[str, tuple[str, ...]] = {
    "sss_viewer.io.synthetic": (
        "sss_viewer.synth.config",
        "sss_viewer.synth._patients",
        "sss_viewer.synth._signals",
        "sss_viewer.synth.run",
        "sss_viewer.synth.bids",
        "sss_viewer.synth.cohort",
    ),
    "sss_viewer.recording": ("sss_viewer.io.recording",),
    "sss_viewer.preprocess": ("sss_viewer.preprocessing.config", "sss_viewer.preprocessing.filters"),
    "sss_viewer.preprocess_stream": ("sss_viewer.preprocessing._streaming",),
    "sss_viewer.cache": ("sss_viewer.preprocessing.cache",),
    "sss_viewer.dataset": ("sss_viewer.windows.series_set",),
    "sss_viewer.splits": ("sss_viewer.windows.splits",),
    "sss_viewer.device": ("sss_viewer.engine.device",),
    "sss_viewer.early_stopping": ("sss_viewer.engine._early_stopping",),
    "sss_viewer.head_fit": ("sss_viewer.engine._head_fit",),
    "sss_viewer.calibration": ("sss_viewer.engine.calibration",),
    "sss_viewer.checkpoint": ("sss_viewer.engine.bundle",),
    "sss_viewer.inference": ("sss_viewer.engine.inference",),
    "sss_viewer.feature_memo": ("sss_viewer.engine._feature_memo",),
    "sss_viewer.training": ("sss_viewer.engine.config", "sss_viewer.engine.training"),
    "sss_viewer.minirocket_reference": ("sss_viewer.baselines.minirocket_reference",),
    "sss_viewer.whole_channel": ("sss_viewer.baselines.whole_channel",),
    "sss_viewer.viewer.annotation_identity": ("sss_viewer.io._annotation_identity",),
}
"""Old module → the module(s) that now hold its names (moved in :data:`MOVED_IN`, removed in :data:`REMOVED_IN`)."""

PRIVATISED: dict[str, tuple[str, ...]] = {
    "biomarkers": ("consensus", "filtering", "floors", "markers", "spectral"),
    "cohort_scoring": ("digests", "plan", "summary", "task"),
    "engine": ("distributed", "early_stopping", "execution", "feature_memo", "fit", "head_fit"),
    "io": ("annotation_identity", "channel_conventions", "channel_names", "lazy"),
    "models": ("feature_context", "hydra_series", "minirocket_series", "minirocket_triton"),
    "preprocessing": ("artifacts_torch", "device_series", "streaming", "torch_filters"),
    "synth": ("patients", "signals"),
    "viewer": (
        "access",
        "annotations",
        "channel_types",
        "display",
        "envelope",
        "excluded",
        "export_widgets",
        "inplace",
        "keyboard",
        "loader",
        "report_figure",
        "scorers",
        "scoring",
        "spectrum",
        "trace_cursor",
        "trace_data",
        "trace_elements",
        "train_panel",
    ),
}
"""Stage → its internal modules, renamed with a leading underscore in :data:`MOVED_IN` (their names are in no
stage's ``__all__``); the old paths still import, with a ``FutureWarning``, until :data:`REMOVED_IN`."""

MOVED.update(
    {
        f"sss_viewer.{stage}.{name}": (f"sss_viewer.{stage}._{name}",)
        for stage, names in PRIVATISED.items()
        for name in names
    }
)


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
                    f"{self.__name__}.{attr} moved to {target}.{attr} in sss-viewer {MOVED_IN}; "
                    f"the old path will be removed in {REMOVED_IN}.",
                    FutureWarning,
                    stacklevel=2,
                )
                return getattr(module, attr)
        raise AttributeError(
            f"module {self.__name__!r} (moved to {', '.join(self._targets)}) has no attribute {attr!r}"
        )

    def __dir__(self):
        return sorted(
            {name for t in self._targets for name in dir(importlib.import_module(t)) if not name.startswith("_")}
        )


class _MovedFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Finds the old paths of :data:`MOVED` and loads a :class:`_MovedModule` for each."""

    def find_spec(self, fullname, path=None, target=None):
        if fullname in MOVED:
            return importlib.util.spec_from_loader(fullname, self)
        return None

    def create_module(self, spec):
        warnings.warn(
            f"{spec.name} moved to {', '.join(MOVED[spec.name])} in sss-viewer {MOVED_IN}; "
            f"the old path will be removed in {REMOVED_IN}.",
            FutureWarning,
            stacklevel=2,
        )
        return _MovedModule(spec.name, MOVED[spec.name])

    def exec_module(self, module) -> None:
        return None


def install() -> None:
    """Register the finder once (idempotent)."""
    if not any(isinstance(finder, _MovedFinder) for finder in sys.meta_path):
        sys.meta_path.append(_MovedFinder())

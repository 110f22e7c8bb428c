"""sss-viewer: Stochastic Sparse Sampling for seizure-onset-zone localisation in iEEG.

The front door. The common steps, each imported on first use (MNE and torch are slow to import)::

    import sss_viewer as sss

    recording = sss.read_recording("run.edf")                 # io
    bundle = sss.ModelBundle.load("model/")                   # engine
    scores = sss.score_recording(bundle, recording)           # window probabilities, channel ranking
    model = sss.train(sss.load_data("cohort/"), sss.train_preset("minirocket"))

The stages (``io`` → ``synth`` → ``preprocessing`` → ``windows`` → ``models`` → ``engine`` →
``evaluation`` → ``baselines`` → ``experiments`` → ``viewer``) are listed in the README's
"Architecture" section.
"""

import importlib
import logging

from sss_viewer import _moved
from sss_viewer._version import __version__
from sss_viewer.io.recording import Event, Recording

_moved.install()  # old import paths of moved modules keep working for one release, with a FutureWarning

_LAZY = {
    "read_recording": "sss_viewer.io.readers",
    "load_recording": "sss_viewer.io.cohort",
    "load_data": "sss_viewer.io.cohort",
    "SynthConfig": "sss_viewer.synth.config",
    "generate_cohort": "sss_viewer.synth.cohort",
    "PreprocessConfig": "sss_viewer.preprocessing.config",
    "TrainConfig": "sss_viewer.engine.config",
    "train_preset": "sss_viewer.engine.config",
    "train": "sss_viewer.engine.training",
    "ModelBundle": "sss_viewer.engine.bundle",
    "score_recording": "sss_viewer.engine.inference",
    "evaluate_bundle": "sss_viewer.evaluation.held_out",
}
"""Public name → the module that defines it."""

__all__ = ["Event", "Recording", "__version__", *sorted(_LAZY)]


def __getattr__(name: str):
    """The names of :data:`_LAZY`, imported on first use."""
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'sss_viewer' has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(_LAZY))


logging.getLogger(__name__).addHandler(logging.NullHandler())

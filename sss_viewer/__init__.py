"""sss-viewer: Stochastic Sparse Sampling for seizure-onset-zone localisation in iEEG.

The front door. The common steps, each imported on first use (MNE and torch are slow to import)::

    import sss_viewer as sss

    recording = sss.read_recording("run.edf")                 # io
    bundle = sss.ModelBundle.load("model/")                   # engine
    scores = sss.score_recording(bundle, recording)           # window probabilities, channel ranking
    model = sss.train(sss.load_data("cohort/"), sss.train_preset("minirocket"))
    ranking = sss.get_scorer("spike_rate").score(recording)  # a training-free marker instead

Each stage re-exports its own public names (``from sss_viewer.models import PatchTST``); ``docs/api.md``
lists them all.

The stages (``io`` → ``synth`` → ``preprocessing`` → ``windows`` → ``models`` → ``engine`` →
``evaluation`` → ``baselines`` → ``experiments`` → ``viewer``) are listed in the README's
"Architecture" section.
"""

import logging

from sss_viewer import _moved
from sss_viewer._lazy import attach
from sss_viewer._version import __version__
from sss_viewer.io.recording import Event, Recording

_moved.install()  # old import paths of moved modules keep working for one release, with a FutureWarning

_PUBLIC = {
    "sss_viewer.io.readers": ("read_recording",),
    "sss_viewer.io.cohort": ("load_data", "load_recording"),
    "sss_viewer.synth.config": ("SynthConfig",),
    "sss_viewer.synth.cohort": ("generate_cohort",),
    "sss_viewer.preprocessing.config": ("PreprocessConfig",),
    "sss_viewer.engine.config": ("TrainConfig", "train_preset"),
    "sss_viewer.engine.training": ("train",),
    "sss_viewer.engine.bundle": ("ModelBundle",),
    "sss_viewer.engine.inference": ("score_recording",),
    "sss_viewer.biomarkers.registry": ("get_scorer",),
    "sss_viewer.evaluation.held_out": ("evaluate_bundle",),
}
"""The common steps' names, by the module that defines them; each is imported on first use (:mod:`sss_viewer._lazy`)."""

__getattr__, __dir__, _LAZY_ALL = attach(__name__, _PUBLIC)
__all__ = ["Event", "Recording", "__version__", *_LAZY_ALL]


logging.getLogger(__name__).addHandler(logging.NullHandler())

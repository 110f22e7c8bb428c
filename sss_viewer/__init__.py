"""sss-viewer: Stochastic Sparse Sampling for seizure-onset-zone localisation in iEEG."""

import logging

from sss_viewer.recording import Event, Recording

__all__ = ["Event", "Recording", "__version__"]
__version__ = "0.1.0"

logging.getLogger(__name__).addHandler(logging.NullHandler())

"""sss-viewer: Stochastic Sparse Sampling for seizure-onset-zone localisation in iEEG."""

import logging

from sss_viewer import _moved
from sss_viewer._version import __version__
from sss_viewer.recording import Event, Recording

_moved.install()  # old import paths of moved modules keep working for one release, with a DeprecationWarning

__all__ = ["Event", "Recording", "__version__", "load_data", "load_recording", "read_recording"]

_IO_NAMES = {"read_recording", "load_recording", "load_data"}


def __getattr__(name: str):
    """``sss_viewer.read_recording`` etc., imported on first use (MNE is slow to import)."""
    if name in _IO_NAMES:
        from sss_viewer import io

        return getattr(io, name)
    raise AttributeError(f"module 'sss_viewer' has no attribute {name!r}")

logging.getLogger(__name__).addHandler(logging.NullHandler())

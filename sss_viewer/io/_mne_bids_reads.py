"""mne-bids reads a BIDS run without writing into the run's folder.

mne-bids opens each sidecar it reads (``_ieeg.json``, ``_coordsystem.json``, ``_electrodes.tsv``) under a
file lock (``mne_bids._fileio._open_lock``, a ``filelock.SoftFileLock``): it creates ``<sidecar>.lock``
beside the sidecar, in the patient's data folder, and deletes it after the read. For this project that
is wrong four ways: a source folder is only ever read; a read-only share makes mne-bids warn on every
read; a reader killed during the read (a Dask worker, a closed viewer session) leaves the lock file
behind in the dataset; and for the time of a read a file appears among the recording's companions
(``preprocessing.cache.source_files`` lists ``<stem>.*``), which is how one recording of a cohort run
could get a second cache key.

The lock guards a read against a concurrent mne-bids *write* of the same sidecar; this project never
writes a BIDS sidecar. So :func:`read_sidecars_without_lock_files` makes the read-only opens of the
mne-bids modules that read runs (``mne_bids.read``, ``.dig``, ``.path``) take no lock (mne-bids' own
``lock=False``); opens for writing, and bare locks, keep it. A concurrent writer can at worst hand this
reader a half-written JSON file, which the reader refuses with an error naming it.

Internal to the reader (:mod:`sss_viewer.io.readers`): not part of the public API.
"""

from __future__ import annotations

import functools
import importlib
import logging
import threading
from collections.abc import Callable

logger = logging.getLogger(__name__)

READING_MODULES = ("mne_bids.read", "mne_bids.dig", "mne_bids.path")
"""The mne-bids modules whose ``_open_lock`` opens sidecars for reading a run."""
_MARK = "sss_viewer_reads_unlocked"
_install_lock = threading.Lock()


def _opens_for_reading(args: tuple, kwargs: dict) -> bool:
    """Whether ``open(path, *args, **kwargs)`` (as ``_open_lock`` forwards them) opens for reading only.

    No arguments at all is a bare lock (mne-bids takes one around a write), which is kept.
    """
    if not args and not kwargs:
        return False
    mode = args[0] if args else kwargs.get("mode", "r")
    return isinstance(mode, str) and set(mode) <= set("rbt")


def _unlocked_for_reads(open_lock: Callable) -> Callable:
    """``open_lock`` (mne-bids' ``_open_lock``) with ``lock=False`` whenever it opens a file for reading only."""

    @functools.wraps(open_lock)
    def open_lock_unless_reading(path, *args, lock_timeout=None, lock=True, **kwargs):
        lock = lock and not _opens_for_reading(args, kwargs)
        return open_lock(path, *args, lock_timeout=lock_timeout, lock=lock, **kwargs)

    setattr(open_lock_unless_reading, _MARK, True)
    return open_lock_unless_reading


def read_sidecars_without_lock_files() -> list[str]:
    """Make mne-bids read sidecars without creating ``.lock`` files beside them (idempotent, thread-safe).

    Returns
    -------
    modules : list of str
        The modules of :data:`READING_MODULES` whose ``_open_lock`` now reads without a lock (all of them
        with the mne-bids versions this project supports; a module without ``_open_lock`` is left as it is
        and logged at debug level).
    """
    done = []
    with _install_lock:
        for name in READING_MODULES:
            module = importlib.import_module(name)
            current = getattr(module, "_open_lock", None)
            if current is None:
                logger.debug("%s has no _open_lock: nothing to change there", name)
                continue
            if not getattr(current, _MARK, False):
                module._open_lock = _unlocked_for_reads(current)
            done.append(name)
    return done

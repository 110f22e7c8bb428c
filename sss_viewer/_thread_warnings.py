"""Warnings and log records kept apart per thread: a block sees what its own thread raises, whatever other threads do.

``warnings.catch_warnings`` saves the process's warning filters and ``showwarning`` hook on entry and puts
them back on exit. Two threads inside one at once put them back in the wrong order (Python before 3.14 has
no context-aware warnings): a warning raised while one thread reads a patient's file lands in the list of
the block another thread entered last (so a truncated file can be refused under another patient's name,
or read as whole), and the hook of a finished block can stay installed for good, swallowing every later
warning of the process. The viewer reads recordings on several sessions' worker threads at once.

:func:`recorded_warnings` replaces it for this package. While any thread is inside a block, one
process-wide state is installed (the first block to enter installs it, the last to leave removes it,
under a lock): an ``"always"`` filter in front, so no warning is turned into an error or shown only once
while blocks are open, and a ``showwarning`` hook that hands each warning to the innermost block *of the
thread that raised it*. A thread outside every block has its warnings filtered as before by the other
filters (ignored, raised as errors, or shown through the hook installed before), only without the
once-per-place rule for that time.

:func:`quiet_log_records` does the same for a logger: the records a thread emits inside the block are
dropped (a ``logging.Filter`` keyed by thread), where setting ``logger.disabled`` and putting it back
would race in the same way.

Code outside this package that uses ``catch_warnings`` on another thread (HoloViews does, on every
redraw) can still undo the installed state while a block is open, or put an entry of ours back after
the last block ended; the next block to enter installs it again, and the next to end removes every
entry of ours. So nothing that must not be missed rests on a recorded warning alone: the reader tells a
cut file from its bytes (:mod:`sss_viewer.io._fif_tags`, the EDF/BDF and BrainVision size checks).
"""

from __future__ import annotations

import logging
import re
import sys
import threading
import warnings
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["quiet_log_records", "recorded_warnings"]

_lock = threading.Lock()
_open_blocks = 0
_saved_showwarning = None
_OURS = re.compile("")
"""The message pattern of this module's ``"always"`` filter: matches every message (as None does) and marks the
entry as ours, so that an entry of ours another library's ``catch_warnings`` put back later is still found."""
_per_thread = threading.local()
_modules_by_file: dict[str, str] = {}
_modules_seen = -1


def _stack() -> list[list[warnings.WarningMessage]]:
    """This thread's open blocks' lists, innermost last."""
    stack = getattr(_per_thread, "stack", None)
    if stack is None:
        stack = _per_thread.stack = []
    return stack


def _module_named_by(filename: str) -> str:
    """The name of the imported module whose source is ``filename`` (what ``warnings.warn`` matches filters against)."""
    global _modules_by_file, _modules_seen
    if len(sys.modules) != _modules_seen:  # a module imported since: look again
        seen, found = len(sys.modules), {}
        for name, module in list(sys.modules.items()):
            path = getattr(module, "__file__", None)
            if isinstance(path, str):
                found.setdefault(path, name)
        _modules_by_file, _modules_seen = found, seen
    name = _modules_by_file.get(filename)
    if name is not None:
        return name
    return filename[:-3] if filename.lower().endswith(".py") else filename  # as warn_explicit names it


def _action_outside_blocks(message, category, filename: str, lineno: int) -> str:
    """The action the filters other than this module's ``"always"`` give a warning (first match wins)."""
    text = str(message)
    module = _module_named_by(filename)
    for item in list(warnings.filters):
        if _is_ours(item):
            continue
        action, pattern, kind, module_pattern, at_line = item
        if (
            (pattern is None or pattern.match(text))
            and issubclass(category, kind)
            and (module_pattern is None or module_pattern.match(module))
            and (at_line == 0 or lineno == at_line)
        ):
            return action
    return warnings.defaultaction


def _show_to_raising_thread(message, category, filename, lineno, file=None, line=None) -> None:
    """The installed ``showwarning``: the raising thread's innermost block records the warning.

    A thread outside every block gets what the other filters say: ``"ignore"`` drops it, ``"error"``
    raises it in that thread, anything else shows it through the hook installed before (every time: the
    once-per-place actions are not kept while blocks are open).
    """
    stack = getattr(_per_thread, "stack", None)
    if stack:
        stack[-1].append(warnings.WarningMessage(message, category, filename, lineno, file, line))
        return
    action = _action_outside_blocks(message, category, filename, lineno)
    if action == "ignore":
        return
    if action == "error":
        raise message if isinstance(message, Warning) else category(message)
    show = _saved_showwarning or warnings._showwarning_orig
    show(message, category, filename, lineno, file, line)


def _is_ours(item: tuple) -> bool:
    """Whether a ``warnings.filters`` entry is an ``"always"`` filter this module put there."""
    return item[1] is _OURS


def _filters_changed() -> None:
    """Tell the warnings module that ``warnings.filters`` changed (its once-per-place registries are then reset)."""
    mutated = getattr(warnings, "_filters_mutated", None)
    if mutated is not None:
        mutated()


def _install() -> None:
    """Put the ``"always"`` filter in front and the per-thread hook in place, if they are not (caller holds ``_lock``)."""
    global _saved_showwarning
    if warnings.showwarning is not _show_to_raising_thread:
        _saved_showwarning = warnings.showwarning
        warnings.showwarning = _show_to_raising_thread
    if not warnings.filters or not _is_ours(warnings.filters[0]):
        # Inserted, not simplefilter("always"), which would first remove an equal entry someone else put there;
        # earlier ones of ours that others' filters have since been put in front of are taken out.
        kept = [item for item in warnings.filters if not _is_ours(item)]
        warnings.filters[:] = [("always", _OURS, Warning, None, 0), *kept]
        _filters_changed()


def _uninstall() -> None:
    """Remove what :func:`_install` put in place, leaving anything others changed since (caller holds ``_lock``)."""
    global _saved_showwarning
    if warnings.showwarning is _show_to_raising_thread and _saved_showwarning is not None:
        warnings.showwarning = _saved_showwarning
    # else the hook is someone else's now, or ours was put back by another library's catch_warnings without
    # what it replaced: it stays, showing other threads' warnings as the filters say (through Python's own hook)
    _saved_showwarning = None
    kept = [item for item in warnings.filters if not _is_ours(item)]
    if len(kept) != len(warnings.filters):
        warnings.filters[:] = kept
        _filters_changed()


@contextmanager
def recorded_warnings() -> Iterator[list[warnings.WarningMessage]]:
    """Record every warning this thread raises inside the block, and only those.

    Blocks nest (the innermost one records); blocks of different threads may overlap in any order.
    Nothing is silenced beyond the block: a warning the caller does not act on is the caller's to log.

    Yields
    ------
    list of warnings.WarningMessage
        Filled as the block runs, in the order raised; each repeat of the same warning is recorded.
    """
    global _open_blocks
    caught: list[warnings.WarningMessage] = []
    with _lock:
        _install()
        _open_blocks += 1
    stack = _stack()
    stack.append(caught)
    try:
        yield caught
    finally:
        stack.pop()
        with _lock:
            _open_blocks -= 1
            if _open_blocks == 0:
                _uninstall()


class _DropThreads(logging.Filter):
    """Drops the records of the threads currently inside a :func:`quiet_log_records` block of its logger."""

    def __init__(self) -> None:
        super().__init__()
        self.quiet: dict[int, int] = {}  # thread ident -> open blocks of that thread

    def filter(self, record: logging.LogRecord) -> bool:
        return record.thread not in self.quiet


_DROP_FILTER_ATTRIBUTE = "_sss_viewer_drop_threads"


@contextmanager
def quiet_log_records(logger: logging.Logger) -> Iterator[None]:
    """Drop the records this thread emits on ``logger`` inside the block; other threads' records pass.

    Parameters
    ----------
    logger : logging.Logger
        Its own records only (records of child loggers pass through their own filters, not this one's).
    """
    with _lock:
        drop = getattr(logger, _DROP_FILTER_ATTRIBUTE, None)
        if drop is None:
            drop = _DropThreads()
            logger.addFilter(drop)
            setattr(logger, _DROP_FILTER_ATTRIBUTE, drop)
        me = threading.get_ident()
        drop.quiet[me] = drop.quiet.get(me, 0) + 1
    try:
        yield
    finally:
        with _lock:
            left = drop.quiet[me] - 1
            if left:
                drop.quiet[me] = left
            else:
                del drop.quiet[me]

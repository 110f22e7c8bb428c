"""Small, dependency-free file helpers: atomic writes, an inter-process lock, fingerprints, backups.

Nothing here imports torch (the viewer's annotation sidecars use it). Every helper is safe against a
crash at any point: a write goes through a temporary file that is fsynced and renamed over the target,
so readers see either the previous file or the new one, whole.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import logging
import os
import shutil
import tempfile
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from filelock import FileLock, Timeout

logger = logging.getLogger(__name__)


def _fsync_dir(folder: Path) -> None:
    """Make a rename in ``folder`` durable (a no-op where folders cannot be opened, e.g. Windows)."""
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def atomic_write(path: str | Path, write: Callable[[str], object]) -> None:
    """Write through a temporary file in the same folder, fsync it, then rename it over ``path``.

    Parameters
    ----------
    path : path
        The file to (re)place.
    write : callable
        ``write(tmp_path)`` writes the whole content to ``tmp_path``.

    A crash or an exception inside ``write`` leaves ``path`` as it was (the temporary file is
    removed on an exception; after a hard crash a hidden ``.<name>.*.tmp`` file may remain).
    """
    path = Path(path)
    try:
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    except OSError as exc:
        raise _naming(exc, path) from None
    os.close(fd)
    try:
        os.chmod(tmp, 0o666 & ~current_umask())  # mkstemp makes 0600: give the file the usual permissions
        write(tmp)
        with open(tmp, "rb+") as fh:
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except OSError as exc:
        Path(tmp).unlink(missing_ok=True)
        raise _naming(exc, path) from None
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    _fsync_dir(path.parent)


def _naming(exc: OSError, path: Path) -> OSError:
    """``exc`` as an OSError that names ``path`` (a failed write, e.g. ``[Errno 28]``, names no file)."""
    if exc.filename is not None and str(path) in str(exc):
        return exc
    note = free_space_note(path.parent) if exc.errno in (errno.ENOSPC, errno.EDQUOT) else ""
    new = OSError(exc.errno, f"Cannot write {path}: {exc.strerror or exc}{note}")
    return new


def free_space_note(folder: Path) -> str:
    """``" (N MB free on the disk of FOLDER; …)"`` (its nearest existing folder), or "" when unreadable.

    Parameters
    ----------
    folder : Path
        Where a write failed.

    Returns
    -------
    note : str
        To append to an error message.
    """
    folder = Path(folder)
    while not folder.exists() and folder != folder.parent:
        folder = folder.parent
    try:
        free = shutil.disk_usage(folder).free
    except OSError:
        return ""
    return f" ({free / 1e6:,.1f} MB free on the disk of {folder}; free some space or choose another folder)"


_UMASK_LOCK = threading.Lock()


def current_umask() -> int:
    """The process's umask (read from ``/proc`` where possible, so no other thread sees it changed)."""
    try:
        with open("/proc/self/status", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    # No /proc (macOS): umask can only be read by setting it. Our own callers take turns (two interleaved
    # set-and-restore pairs could leave the process with the temporary value for good), and the temporary
    # value is the strictest, so a file another thread creates meanwhile is private rather than public.
    with _UMASK_LOCK:
        mask = os.umask(0o077)
        os.umask(mask)
    return mask


def write_tsv(table, path: str | Path, *, na_rep: str = "") -> None:
    """Write a DataFrame as a tab-separated file with ``\\n`` line ends, atomically.

    Parameters
    ----------
    table : pandas.DataFrame
        Written without its index.
    path : str or Path
    na_rep : str
        Text of missing values (BIDS sidecars use ``"n/a"``).
    """
    atomic_write(path, lambda tmp: table.to_csv(tmp, sep="\t", index=False, lineterminator="\n", na_rep=na_rep))


def pid_alive(pid: int) -> bool:
    """Whether process ``pid`` exists (on this machine): a writer that left a temporary file may still be writing it."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def atomic_write_bytes(path: str | Path, data: bytes) -> None:
    """:func:`atomic_write` of ``data``."""
    atomic_write(path, lambda tmp: Path(tmp).write_bytes(data))


def append_line(path: str | Path, line: str) -> None:
    """Append one line (a newline is added) and fsync: an append-only log survives a crash whole-line.

    A crash during the append can leave a partial last line; readers should skip a line they cannot
    parse.
    """
    with open(path, "a", encoding="utf-8") as fh:
        fh.write(line.rstrip("\n") + "\n")
        fh.flush()
        os.fsync(fh.fileno())


@dataclass(frozen=True)
class Fingerprint:
    """What a file was when read: ``mtime_ns``, ``size`` and the SHA-256 of its bytes."""

    mtime_ns: int
    size: int
    sha256: str

    def same_content(self, other: Fingerprint | None) -> bool:
        """Whether ``other`` has the same bytes (a touch that changes only the mtime is no change)."""
        return other is not None and self.size == other.size and self.sha256 == other.sha256


def fingerprint(path: str | Path) -> Fingerprint | None:
    """The file's :class:`Fingerprint`, or None when it does not exist."""
    path = Path(path)
    try:
        data = path.read_bytes()
        stat = path.stat()
    except FileNotFoundError:
        return None
    return Fingerprint(stat.st_mtime_ns, len(data), hashlib.sha256(data).hexdigest())


def same_files(seen: dict, now: dict) -> bool:
    """Whether ``now`` (path → fingerprint or None) has the same contents as ``seen``."""
    for key in set(seen) | set(now):
        a, b = seen.get(key), now.get(key)
        if a is None and b is None:
            continue
        if a is None or not a.same_content(b):
            return False
    return True


class LockTimeout(OSError):
    """Another process held the lock for longer than the timeout."""


@contextlib.contextmanager
def file_lock(lock_path: str | Path, timeout_s: float = 10.0) -> Iterator[None]:
    """Hold an exclusive inter-process lock on ``lock_path`` (created if missing) within the block.

    A :class:`filelock.FileLock` made for this block alone: on POSIX an ``flock`` on its own open file, so
    two sessions (threads) in one server process exclude each other as two processes do, and a nested
    ``file_lock`` on the same path in one thread waits like any other holder (not re-entrant). The
    lock is released when the block ends or the process dies; the lock file is left in place.

    Parameters
    ----------
    lock_path : str or Path
        The lock file; its folder is created if missing.
    timeout_s : float
        How long to wait for another holder; 0 tries once.

    Raises
    ------
    LockTimeout
        When the lock is not obtained within ``timeout_s`` seconds.
    """
    lock_path = Path(lock_path)
    lock_path.parent.mkdir(parents=True, exist_ok=True)
    lock = FileLock(lock_path, timeout=max(0.0, timeout_s), poll_interval=0.02, thread_local=False)
    try:
        lock.acquire()
    except Timeout:
        raise LockTimeout(f"{lock_path} is locked by another session; try again.") from None
    try:
        yield
    finally:
        lock.release()


def numbered_backups(folder: str | Path, name: str) -> list[Path]:
    """Existing backups ``<folder>/<name>.1``, ``.2``, … (1 = newest), in that order."""
    folder = Path(folder)
    found = []
    for p in folder.glob(f"{name}.*"):
        suffix = p.name[len(name) + 1 :]
        if suffix.isdigit():
            found.append((int(suffix), p))
    return [p for _, p in sorted(found)]


def backup_file(path: str | Path, folder: str | Path, keep: int = 20) -> Path | None:
    """Copy ``path`` to ``<folder>/<name>.1`` after shifting older copies up; keep the newest ``keep``.

    Returns
    -------
    Path or None
        The new backup, or None when ``path`` does not exist.
    """
    path, folder = Path(path), Path(folder)
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return None
    folder.mkdir(parents=True, exist_ok=True)
    for old in reversed(numbered_backups(folder, path.name)):
        n = int(old.name.rsplit(".", 1)[1])
        if n >= keep:
            old.unlink(missing_ok=True)
        else:
            os.replace(old, folder / f"{path.name}.{n + 1}")
    target = folder / f"{path.name}.1"
    atomic_write_bytes(target, data)
    return target

"""On-disk cache of preprocessed channels (float32, memory-mapped), keyed by content and config.

One entry per (recording content, picked channels, preprocessing config)::

    CACHE/<sha256 key>/series.f32    the picked channels' preprocessed samples back to back
    CACHE/<sha256 key>/index.json    channel names, offsets, lengths, unusable channels, provenance, key inputs

The key hashes the bytes of every file the reader opened for the recording (the header and the
data and marker files it names, whatever their names: ``Recording.info["source_files"]``), of
the files sharing its stem (``.vhdr``/``.vmrk``/``.eeg``, ``.set``/``.fdt``) and of the BIDS
``_channels.tsv``, not its path or date, so a copied dataset hits the cache and an edited file
misses it; recordings held only in memory are keyed by their samples. Hashes of large files are
remembered per (path, size, mtime, ctime, inode) in ``CACHE/file_digests.json`` so a second run
does not re-read them. Entries are written to a temporary folder and renamed into place, so an
interrupted build leaves no half entry; ``index.json`` records the SHA-256 of ``series.f32``,
checked on every use (through the same remembered digests), so an entry altered in place is
rebuilt instead of served. Source files are only ever read.

:class:`SeriesSource` states what :func:`~sss_viewer.windows.series_set.build_series_set` needs of a cache
(and of anything that stands in for one).
"""

from __future__ import annotations

import errno
import hashlib
import json
import logging
import os
import re
import shutil
import socket
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol, runtime_checkable

import numpy as np

from sss_viewer.fileio import pid_alive
from sss_viewer.io.recording import Recording
from sss_viewer.preprocessing._streaming import preprocess_into
from sss_viewer.preprocessing.config import PreprocessConfig

logger = logging.getLogger(__name__)

_HOST = re.sub(r"[^A-Za-z0-9._-]", "_", socket.gethostname()) or "localhost"
"""This machine's name as it appears in the names of its temporary folders."""
_TEMPORARY_NAME = re.compile(r"^\.(?:tmp|discard)-[0-9a-f]+(?:t\d+)?-(?P<pid>\d+)(?:@(?P<host>[A-Za-z0-9._-]+))?$")
"""``.tmp-<key>t<thread>-<pid>@<host>`` (or, from before threads and hosts were recorded, ``.tmp-<key>-<pid>``)."""
FOREIGN_TEMPORARY_AGE_S = 2 * 86400
"""Age after which another machine's temporary folder in a shared cache counts as abandoned."""


def _owner() -> str:
    """``<pid>@<host>``: who builds a temporary folder (a pid alone is ambiguous in a cache shared by machines)."""
    return f"{os.getpid()}@{_HOST}"


CACHE_VERSION = 3
"""Bump when the preprocessing code changes what it writes for the same config (2: entries carry a checksum; 3: notches and high-pass filtered as one cascade)."""
_DIGESTS_FILE = "file_digests.json"


_SPARE_BYTES = 16 * 2**20
"""Free space left over after an entry (its ``index.json``, the digests file, other writers)."""


def _size(n: int) -> str:
    return f"{n / 2**30:.2f} GiB" if n >= 2**30 else f"{n / 2**20:.1f} MiB"


def _reserve(path: Path, size: int) -> None:
    """Create ``path`` with ``size`` bytes allocated on disk (a full disk raises ENOSPC here)."""
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o666)
    try:
        if hasattr(os, "posix_fallocate"):
            os.posix_fallocate(fd, 0, size)
        else:  # pragma: no cover - no fallocate (macOS): a sparse file, checked by the free-space test only
            os.ftruncate(fd, size)
    finally:
        os.close(fd)


def default_cache_dir() -> Path:
    """``$SSS_VIEWER_CACHE``, else ``$XDG_CACHE_HOME/sss-viewer``, else ``~/.cache/sss-viewer``."""
    if os.environ.get("SSS_VIEWER_CACHE"):
        return Path(os.environ["SSS_VIEWER_CACHE"])
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return base / "sss-viewer"


def source_files(path: Path, opened: list[str] | tuple[str, ...] = ()) -> list[Path]:
    """The files a recording's samples and channel metadata come from, sorted.

    Parameters
    ----------
    path : Path
        The recording's file (for BrainVision the header).
    opened : sequence of str
        Files the reader opened for it (``Recording.info["source_files"]``: a ``.vhdr``'s
        ``DataFile``/``MarkerFile`` whatever their names, an EEGLAB ``.fdt``).

    Returns
    -------
    files : list of Path
        ``path``, ``opened``, files sharing ``path``'s stem with another extension (BrainVision
        ``.eeg``/``.vmrk``, EEGLAB ``.fdt``, the BIDS ``_ieeg.json``) but not lock, temporary or backup files
        (:data:`TRANSIENT_SUFFIXES`), and the BIDS ``_channels.tsv`` beside a ``…_ieeg.*`` file.
    """
    path = Path(path)
    stem = path.name.split(".", 1)[0]
    files = {path, *(Path(p) for p in opened if Path(p).is_file())}
    files.update(p for p in path.parent.glob(f"{stem}.*") if p.is_file() and not _transient(p))
    if "_" in stem:
        channels = path.with_name(stem.rsplit("_", 1)[0] + "_channels.tsv")
        if channels.is_file():
            files.add(channels)
    return sorted(files)


TRANSIENT_SUFFIXES = (".lock", ".tmp", ".swp", ".part", "~")
"""Endings of files that sit beside a recording for a while without being part of it: a lock another program holds
while it reads or writes a sidecar (``<stem>_ieeg.json.lock``), or is left behind when it was killed, an editor's
swap or backup file, a copy in progress. :func:`source_files` leaves them out, so they never change a cache key or
make a cohort run score a recording again."""


def _transient(path: Path) -> bool:
    """Whether ``path`` is a lock, temporary or backup file (:data:`TRANSIENT_SUFFIXES`) rather than a companion."""
    return path.name.endswith(TRANSIENT_SUFFIXES)


def _digest_of(spec: dict) -> str:
    """SHA-256 of ``spec`` as sorted JSON: a cache key."""
    return hashlib.sha256(json.dumps(spec, sort_keys=True).encode()).hexdigest()


def _config_spec(config: PreprocessConfig) -> dict:
    """The preprocessing parameters that decide the series (a native-rate model's recorded rates do not).

    ``scale`` is left out when it is ``"channel"``, which is what every entry written before the
    option existed holds: their keys stay valid, and any other scale gets a key of its own.
    """
    spec = config.to_dict()
    spec.pop("native_sfreqs", None)
    if spec.get("scale") == "channel":
        del spec["scale"]
    return spec


@dataclass
class CachedSeries:
    """The preprocessed picks of one recording, memory-mapped.

    Parameters
    ----------
    data : ndarray, shape (n_total,), float32
        Read-only memmap (or an empty array).
    channels : list of str, length n_picks
    offsets, lengths : ndarray, shape (n_picks,), int64
        Where each channel's series lies in ``data``.
    unusable : dict
        ``{channel: reason}`` for channels that could not be preprocessed (NaN, flat).
    key : str
    """

    data: np.ndarray
    channels: list[str]
    offsets: np.ndarray
    lengths: np.ndarray
    unusable: dict[str, str]
    key: str


@runtime_checkable
class SeriesSource(Protocol):
    """Where a recording's preprocessed channels come from (the series-source contract).

    :func:`~sss_viewer.windows.series_set.build_series_set` calls only ``load_or_build`` and reads only ``data``,
    ``offsets`` and ``unusable`` of what it returns. :class:`SeriesCache` is one (preprocessed on a miss,
    memory-mapped from disk); GPU scoring's device builder (``_device_series.DeviceSeriesBuilder``) is another
    (preprocessed on a device, cached nowhere).
    """

    def load_or_build(
        self,
        recording: Recording,
        picks: np.ndarray,
        config: PreprocessConfig,
        *,
        progress: bool = False,
        **stream_options,
    ) -> CachedSeries:
        """Channels ``picks`` of ``recording`` preprocessed with ``config``.

        Parameters
        ----------
        recording : Recording
            In memory or lazy.
        picks : ndarray, shape (n_picks,), int
            Channel indices into ``recording.ch_names``; the series come back in this order.
        config : PreprocessConfig
        progress : bool
            Show the progress of preprocessing; a source with nothing to show ignores it.
        **stream_options
            The CPU streaming options (``chunk_seconds`` / ``memory_bytes`` of ``preprocess_into``). A source that
            does not stream may ignore them: they choose how the work is chunked, never the series.

        Returns
        -------
        CachedSeries
            ``data``, shape (n_picks * n_out,), float32 (a read-only memmap or in memory), with
            ``n_out = config.output_length(recording.n_times, recording.sfreq)``; ``channels``, the picks' names
            (n_picks,); ``offsets`` and ``lengths``, shape (n_picks,), int64: pick ``j``'s series is
            ``data[offsets[j] : offsets[j] + n_out]`` (``lengths[j] == n_out``); ``unusable``,
            ``{channel name: reason}`` for the picks that could not be preprocessed (NaN/inf samples, a flat
            signal), whose slots in ``data`` hold no meaningful values; ``key``, the cache entry's key (``""`` when
            nothing is cached).
        """
        ...


class SeriesCache:
    """Directory of preprocessed-channel entries.

    Parameters
    ----------
    root : str or Path
        Created when missing.
    """

    def __init__(self, root: str | Path):
        self.root = Path(root)
        try:
            self.root.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise OSError(f"Cannot create the cache directory {self.root}: {exc}") from exc
        self._digests_path = self.root / _DIGESTS_FILE
        self._digests = self._read_digests()
        self._digests_lock = threading.Lock()
        self._remove_stale_temporaries()

    def __repr__(self) -> str:
        return f"SeriesCache({str(self.root)!r})"

    def _remove_stale_temporaries(self) -> None:
        """Remove ``.tmp-<key>-<pid>@<host>`` / ``.discard-…`` folders of builds that were killed.

        A process id means something on its own machine only: a folder of this host goes when its
        process is gone; one of another host sharing the cache (a network file system) is left to
        its own machine, unless it has not changed for :data:`FOREIGN_TEMPORARY_AGE_S`.
        """
        for folder in [*self.root.glob(".tmp-*-*"), *self.root.glob(".discard-*-*")]:
            owner = _TEMPORARY_NAME.match(folder.name)
            if owner is None or not folder.is_dir():
                continue
            pid, host = int(owner["pid"]), owner["host"]
            if host in (None, _HOST):
                stale, why = not pid_alive(pid), f"process {pid} is gone"
            else:
                age = time.time() - folder.stat().st_mtime
                stale, why = age > FOREIGN_TEMPORARY_AGE_S, f"host {host}'s build, untouched for {age / 86400:.1f} days"
            if stale:
                logger.info("removing %s, left by an interrupted cache build (%s)", folder, why)
                shutil.rmtree(folder, ignore_errors=True)

    def _check_free_space(self, needed: int, recording: Recording) -> None:
        """Refuse to start an entry of ``needed`` bytes that the cache's file system cannot hold."""
        free = shutil.disk_usage(self.root).free
        if needed + _SPARE_BYTES > free:
            raise OSError(
                errno.ENOSPC,
                f"Not enough free space in the cache directory {self.root} for {recording.label}: its preprocessed "
                f"channels need {_size(needed)}, {_size(free)} are free. Free space there, choose another "
                "--cache-dir (or $SSS_VIEWER_CACHE), or pass --no-cache",
            )

    def _read_digests(self) -> dict:
        try:
            return json.loads(self._digests_path.read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError):
            return {}

    @staticmethod
    def _stamp(path: Path) -> list[int]:
        """What changes when a file's bytes do: size, mtime, ctime (which no utime can set back) and inode."""
        st = path.stat()
        return [st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino]

    def file_digest(self, path: Path) -> str:
        """SHA-256 of a file's bytes, remembered while its size, mtime, ctime and inode stay the same."""
        path = Path(path).resolve()
        stamp = self._stamp(path)
        known = self._digests.get(str(path))
        if known and known[0] == stamp:
            return known[1]
        with path.open("rb") as f:
            digest = hashlib.file_digest(f, "sha256").hexdigest()
        self._remember_digest(path, stamp, digest)
        return digest

    def _remember_digest(self, path: Path, stamp: list[int], digest: str) -> None:
        """Record ``digest`` of ``path`` (resolved) at ``stamp`` in ``file_digests.json``."""
        tmp = self._digests_path.with_suffix(f".{os.getpid()}-{threading.get_ident()}.tmp")
        try:
            with self._digests_lock:  # one cache object may serve several threads (a Dask worker's)
                self._digests[str(path)] = [stamp, digest]
                text = json.dumps(self._digests)
            tmp.write_text(text, encoding="utf-8")
            os.replace(tmp, self._digests_path)
        except OSError as exc:  # only a speed-up: a full disk costs a re-hash next time
            tmp.unlink(missing_ok=True)
            logger.warning(
                "Could not update %s (%s); file digests will be computed again.",
                self._digests_path,
                exc.strerror or exc,
            )

    def key(self, recording: Recording, picks: np.ndarray, config: PreprocessConfig) -> str:
        """Cache key of ``recording``'s ``picks`` under ``config``: the SHA-256 of :meth:`key_inputs`."""
        return _digest_of(self.key_inputs(recording, picks, config))

    def key_inputs(self, recording: Recording, picks: np.ndarray, config: PreprocessConfig) -> dict:
        """What the key of ``recording``'s ``picks`` under ``config`` hashes (kept in each entry's ``index.json``).

        Returns
        -------
        dict
            ``version``, ``content`` (each source file's SHA-256, or the samples' for a recording in
            memory), ``channels``, ``sfreq``, ``n_times``, ``line_freq`` and ``config``.
        """
        picks = np.asarray(picks, dtype=int)
        if recording.is_lazy and recording.source is not None:
            opened = recording.info.get("source_files", ())
            content = {p.name: self.file_digest(p) for p in source_files(recording.source, opened)}
        else:
            h = hashlib.sha256()
            for j in picks:
                h.update(np.ascontiguousarray(recording.data[j], dtype=np.float32).tobytes())
            content = {"samples": h.hexdigest()}
        spec = {
            "version": CACHE_VERSION,
            "content": content,
            "channels": [recording.ch_names[j] for j in picks],
            "sfreq": recording.sfreq,
            "n_times": recording.n_times,
            "line_freq": recording.line_freq,
            "config": _config_spec(config),
        }
        return spec

    def load_or_build(
        self,
        recording: Recording,
        picks: np.ndarray,
        config: PreprocessConfig,
        *,
        progress: bool = False,
        **stream_options,
    ) -> CachedSeries:
        """The cached entry for ``recording``'s ``picks``, preprocessing them first on a miss.

        Parameters
        ----------
        recording : Recording
        picks : ndarray, shape (n_picks,), int
        config : PreprocessConfig
        progress : bool
        **stream_options
            ``chunk_seconds`` / ``memory_bytes`` for ``preprocess_into``.

        Returns
        -------
        CachedSeries
        """
        inputs = self.key_inputs(recording, picks, config)
        key = _digest_of(inputs)
        entry = self.root / key
        if (entry / "index.json").is_file():
            problem = self._check_entry(entry)
            if problem is None:
                logger.debug("cache hit %s for %s", key[:12], recording.label)
                return self._open(entry, key)
            logger.warning("Cache entry %s is damaged (%s); rebuilding it from %s.", entry, problem, recording.label)
            self._discard(entry)
        logger.info("Preprocessing %s into the cache %s", recording.label, entry)
        n_out = config.output_length(recording.n_times, recording.sfreq)
        picks = np.asarray(picks, dtype=int)
        offsets = np.arange(len(picks), dtype=np.int64) * n_out
        total = n_out * len(picks)
        self._check_free_space(4 * total, recording)
        tmp = self.root / f".tmp-{key}t{threading.get_ident()}-{_owner()}"  # two threads may build one key at once
        shutil.rmtree(tmp, ignore_errors=True)
        try:
            tmp.mkdir()
            if total:
                _reserve(tmp / "series.f32", 4 * total)  # ENOSPC now, not SIGBUS when the memmap is written
                out = np.memmap(tmp / "series.f32", dtype=np.float32, mode="r+", shape=(total,))
                unusable = preprocess_into(recording, picks, config, out, offsets, progress=progress, **stream_options)
                out.flush()
                checksum = hashlib.sha256(memoryview(out).cast("B")).hexdigest()
                del out
            else:
                (tmp / "series.f32").touch()
                unusable = {}
                checksum = hashlib.sha256(b"").hexdigest()
            index = {
                "version": CACHE_VERSION,
                "channels": [recording.ch_names[j] for j in picks],
                "offsets": offsets.tolist(),
                "lengths": [n_out] * len(picks),
                "unusable": {recording.ch_names[picks[j]]: reason for j, reason in unusable.items()},
                "source": str(recording.source) if recording.source else None,
                "recording": recording.label,
                "output_sfreq": config.output_sfreq(recording.sfreq),
                "config": _config_spec(config),
                "series_sha256": checksum,
                "key_inputs": inputs,
            }
            (tmp / "index.json").write_text(json.dumps(index, indent=1), encoding="utf-8")
            series_stamp = self._stamp(tmp / "series.f32")  # a rename of the folder leaves the file's stamp
            try:
                os.replace(tmp, entry)
            except OSError:
                if not (entry / "index.json").is_file():
                    raise
            else:
                self._remember_digest((entry / "series.f32").resolve(), series_stamp, checksum)
        except OSError as exc:
            if str(self.root) in str(exc):
                raise
            raise OSError(
                exc.errno, f"Cannot write the cache entry for {recording.label} in {self.root}: {exc.strerror or exc}"
            ) from None
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        return self._open(entry, key)

    def _check_entry(self, entry: Path) -> str | None:
        """Why an entry cannot be used (unreadable index, wrong size, checksum mismatch), or None."""
        try:
            try:
                index = json.loads((entry / "index.json").read_text(encoding="utf-8"))
            except ValueError as exc:
                return f"{entry / 'index.json'} is not valid JSON: {exc}"
            expected = 4 * int(np.sum(index["lengths"]))
            series = entry / "series.f32"
            size = series.stat().st_size
            if size != expected:
                return f"{series.name} has {size} bytes, expected {expected}"
            if index.get("series_sha256") != self.file_digest(series):
                return f"{series.name} does not match the SHA-256 recorded in index.json: it was altered after it was written"
        except (OSError, ValueError, KeyError, TypeError) as exc:
            return f"{type(exc).__name__}: {exc}"
        return None

    def _discard(self, entry: Path) -> None:
        """Move a damaged entry aside and delete it (a reader holding its memmap keeps its bytes)."""
        trash = self.root / f".discard-{entry.name}-{_owner()}"
        try:
            os.replace(entry, trash)
        except OSError:
            return  # another process moved it first
        shutil.rmtree(trash, ignore_errors=True)

    @staticmethod
    def _open(entry: Path, key: str) -> CachedSeries:
        try:
            index = json.loads((entry / "index.json").read_text(encoding="utf-8"))
        except ValueError as exc:
            raise OSError(
                f"Cache entry {entry} is damaged: {entry / 'index.json'} is not valid JSON ({exc})."
            ) from None
        lengths = np.asarray(index["lengths"], dtype=np.int64)
        total = int(lengths.sum())
        path = entry / "series.f32"
        if path.stat().st_size != 4 * total:
            raise OSError(
                f"Cache entry {entry} is damaged: {path.name} has {path.stat().st_size} bytes, expected {4 * total}."
            )
        data = np.memmap(path, dtype=np.float32, mode="r", shape=(total,)) if total else np.zeros(0, np.float32)
        return CachedSeries(
            data=data,
            channels=list(index["channels"]),
            offsets=np.asarray(index["offsets"], dtype=np.int64),
            lengths=lengths,
            unusable=dict(index["unusable"]),
            key=key,
        )

"""What a recording's scores were made from: the model, the source files, the stride, the labels.

A recording's ``done.json`` records these; a later run into the same folder skips the recording when
they are the same now, and refuses to replace it when they are not (unless told to).

Internal to the stage: not part of the public API (:mod:`sss_viewer.cohort_scoring`'s ``__all__``, ``docs/api.md``).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass
from pathlib import Path

from sss_viewer.engine.bundle import CONFIG_FILE, HASH_KEY, WEIGHTS_FILE
from sss_viewer.preprocessing.cache import SeriesCache, source_files


@dataclass(frozen=True)
class Fingerprint:
    """The inputs shared by every recording of one cohort run.

    Parameters
    ----------
    model : str
        :func:`model_digest` of the model directory.
    stride : int
        The scoring stride in preprocessed samples (the model's default resolved).
    labels : str
        :func:`labels_digest` of the label sources.
    """

    model: str
    stride: int
    labels: str

    def to_dict(self) -> dict:
        """As stored in ``done.json`` and the cohort manifest."""
        return asdict(self)

    def differences(self, recorded: dict) -> list[str]:
        """The fields of ``recorded`` (a stored :meth:`to_dict`) that differ from this one: ``model``, ``stride``, ``labels``."""
        return [name for name, value in self.to_dict().items() if recorded.get(name) != value]


def _sha256_file(path: Path) -> str:
    with Path(path).open("rb") as f:
        return hashlib.file_digest(f, "sha256").hexdigest()


def model_digest(model_dir: str | Path) -> str:
    """SHA-256 naming a model: its whole ``config.json`` (which records the weights' SHA-256).

    A model saved before ``config.json`` recorded the weights' SHA-256 is named by its
    ``model.safetensors`` too.

    Parameters
    ----------
    model_dir : str or Path
        A model directory (``ModelBundle.save``).

    Returns
    -------
    digest : str
        64 hex digits.
    """
    model_dir = Path(model_dir)
    config_path = model_dir / CONFIG_FILE
    try:
        config = json.loads(config_path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ValueError(f"Cannot read the model's {config_path}: {exc}") from None
    if not isinstance(config, dict):  # a bad file, not a bad argument: a ValueError, the CLI's runtime error
        raise ValueError(f"{config_path} holds no JSON object (expected a model configuration).")  # noqa: TRY004
    if not config.get(HASH_KEY):
        config[HASH_KEY] = _sha256_file(model_dir / WEIGHTS_FILE)
    text = json.dumps(config, sort_keys=True, allow_nan=True)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def labels_digest(files: list[Path], fallback: bool) -> str:
    """SHA-256 of the label sources' bytes (in order) and of ``--labels-fallback``; the same for no labels at all."""
    h = hashlib.sha256(f"fallback={bool(fallback)}".encode())
    for path in files:
        h.update(b"\0" + _sha256_file(path).encode())
    return h.hexdigest()


def file_digest(path: Path, cache: SeriesCache | None) -> str:
    """SHA-256 of a file's bytes, through the cache's remembered digests when there is a cache."""
    return cache.file_digest(path) if cache is not None else _sha256_file(path)


def _name(path: Path, root: Path) -> str:
    """``path`` relative to ``root`` when inside it (a moved cohort keeps its names), else absolute."""
    path = Path(path).absolute()
    return path.relative_to(root).as_posix() if path.is_relative_to(root) else str(path)


def source_digests(
    path: Path, root: Path, cache: SeriesCache | None, opened: list[str] | tuple[str, ...] = ()
) -> dict[str, str]:
    """SHA-256 of every file a recording's samples and channels come from.

    Parameters
    ----------
    path : Path
        The recording's file.
    root : Path
        The cohort's root: names are relative to it.
    cache : SeriesCache, optional
        Its remembered digests save re-reading unchanged files.
    opened : sequence of str
        Files the reader opened (``Recording.info["source_files"]``).

    Returns
    -------
    digests : dict
        ``{name: sha256}`` for :func:`~sss_viewer.preprocessing.cache.source_files`.
    """
    return {_name(p, root): file_digest(p, cache) for p in source_files(path, opened)}


def sources_unchanged(recorded: dict, path: Path, root: Path, cache: SeriesCache | None) -> bool:
    """Whether the source files of a recording are those ``recorded`` (a :func:`source_digests`) names.

    Every recorded file must hold the same bytes, and no file that a recording's sources now include
    (a companion file added beside it) may be missing from the record.
    """
    if not isinstance(recorded, dict) or not recorded:
        return False
    now = {_name(p, root) for p in source_files(path)}
    if not now <= set(recorded):
        return False
    for name, digest in recorded.items():
        file = Path(name) if Path(name).is_absolute() else root / name
        if not file.is_file() or file_digest(file, cache) != digest:
            return False
    return True

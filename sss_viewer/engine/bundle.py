"""Model directories: safetensors weights + one JSON config. Loading never unpickles.

A model directory holds ``model.safetensors`` and ``config.json``; the config records the
SHA-256 of the weights (``weights_sha256``) and a SHA-256 of its own canonical JSON without that
field (``config_sha256``), and every value in it is checked on load, each error naming the file and
the key: a config edited after training (even to other valid values) is refused by name until
``sss-viewer model-accept MODEL`` records the retune. A directory is written whole into a temporary sibling and swapped
in with one rename (an atomic exchange where the system has one), the previous model removed only
afterwards, so a reader sees the old model or the new one and never a mix; a reader that does
meet a mix (or altered weights) is stopped by the checksum.
"""

from __future__ import annotations

import ctypes
import errno
import hashlib
import json
import logging
import math
import os
import shutil
import uuid
from dataclasses import dataclass, field, fields
from pathlib import Path

import torch
from safetensors.torch import load as load_weights
from safetensors.torch import save as save_weights

from sss_viewer._version import __version__
from sss_viewer.engine.calibration import calibrator_from_state
from sss_viewer.fileio import free_space_note, pid_alive
from sss_viewer.models import model_from_config
from sss_viewer.models._private_draws import draws_from
from sss_viewer.preprocessing.config import SCALES, PreprocessConfig

logger = logging.getLogger(__name__)

WEIGHTS_FILE = "model.safetensors"
CONFIG_FILE = "config.json"
FORMAT_VERSION = 1
HASH_KEY = "weights_sha256"
"""``config.json`` key holding the SHA-256 (hex) of ``model.safetensors``."""
CONFIG_HASH_KEY = "config_sha256"
"""``config.json`` key holding the SHA-256 of the config's canonical JSON without this key (:func:`config_digest`)."""
MODEL_FILES = (WEIGHTS_FILE, CONFIG_FILE)
"""What a model directory holds; a directory holding anything else is never replaced."""


@dataclass
class ModelBundle:
    """A trained SSS model with everything needed to score a new recording.

    Parameters
    ----------
    model : nn.Module
        The local window model, (B, L) → (B,) logits.
    preprocess : PreprocessConfig
        Channel preprocessing the model was trained with.
    window_length : int
        L, in preprocessed samples.
    inference_stride : int
        Default stride for scoring (a quarter window).
    calibrator : object
        Fitted window calibrator with ``transform(p) -> (p_cal, p0, p1)``.
    threshold : float
        Channel-score threshold chosen on the validation split.
    info : dict
        JSON-serialisable record of training: config, split (subjects/channels per split),
        history, validation metrics, data description.
    """

    model: torch.nn.Module
    preprocess: PreprocessConfig
    window_length: int
    inference_stride: int
    calibrator: object
    threshold: float
    info: dict = field(default_factory=dict)

    def config_dict(self) -> dict:
        """Everything but the weights, as a JSON-serialisable dict."""
        return {
            "format_version": FORMAT_VERSION,
            "sss_viewer_version": __version__,
            "model": self.model.get_config(),
            "preprocess": self.preprocess.to_dict(),
            "window_length": self.window_length,
            "inference_stride": self.inference_stride,
            "calibrator": self.calibrator.get_state(),
            "threshold": self.threshold,
            "info": self.info,
        }

    def save(self, directory: str | Path) -> Path:
        """Write the model directory: ``model.safetensors`` and ``config.json`` (with the weights' SHA-256).

        Both files are written into a temporary sibling folder, which then replaces ``directory``
        in one rename; a previous model there is removed only after the new one is in place.

        Parameters
        ----------
        directory : str or Path
            Absent, empty, or a model directory (holding only ``MODEL_FILES``).

        Returns
        -------
        directory : Path

        Raises
        ------
        ValueError
            ``directory`` holds other files (they would be lost), or is not a directory.
        """
        directory = check_model_destination(directory)
        state = {k: v.detach().cpu().contiguous() for k, v in self.model.state_dict().items()}
        weights = save_weights(state)
        config = {**self.config_dict(), HASH_KEY: hashlib.sha256(weights).hexdigest()}
        config = json.loads(json.dumps(config, allow_nan=True))  # the digest covers what a reader parses
        config[CONFIG_HASH_KEY] = config_digest(config)
        text = json.dumps(config, indent=2, allow_nan=True)
        directory.parent.mkdir(parents=True, exist_ok=True)
        _remove_stale_siblings(directory)
        tmp = directory.parent / f".{directory.name}.tmp-{os.getpid()}-{uuid.uuid4().hex[:8]}"
        tmp.mkdir()  # the usual permissions (umask), unlike mkdtemp's 0700
        try:
            _write_synced(tmp / WEIGHTS_FILE, weights)
            _write_synced(tmp / CONFIG_FILE, text.encode())
            _swap_into_place(tmp, directory)
        except OSError as exc:  # a full disk: say where, leave the previous model (if any) as it was
            note = free_space_note(directory.parent)
            raise OSError(exc.errno, f"Cannot save the model to {directory}: {exc.strerror or exc}{note}") from None
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        logger.info("saved model to %s", directory)
        return directory

    @classmethod
    def load(cls, directory: str | Path, *, device: str | torch.device = "cpu") -> ModelBundle:
        """Load a model directory written by :meth:`save`.

        ``config.json`` is validated key by key (:func:`validate_config`) and the weights are
        checked against its ``weights_sha256``; a directory saved before the checksum existed loads
        with a warning.

        Raises
        ------
        FileNotFoundError
            When the directory or one of its two files is missing.
        ValueError
            When the config is not valid JSON, a value in it is invalid (the message names the file
            and the key), or the weights do not match the recorded checksum or the model.
        """
        directory = Path(directory)
        if directory.exists() and not directory.is_dir():
            raise ValueError(
                f"Model path {directory} is a file, not a model folder; pass the folder that holds {WEIGHTS_FILE} and "
                f"{CONFIG_FILE} (written by `sss-viewer train --out`)."
            )
        if not directory.is_dir():
            raise FileNotFoundError(f"Model directory {directory} does not exist.")
        missing = [name for name in MODEL_FILES if not (directory / name).is_file()]
        if missing:
            raise FileNotFoundError(
                f"Model directory {directory} is missing {', '.join(missing)}; a model directory holds "
                f"{WEIGHTS_FILE} and {CONFIG_FILE} as written by `sss-viewer train`."
            )
        config_bytes, weights = _read_model_files(directory)
        config_path = directory / CONFIG_FILE
        try:
            config = json.loads(config_bytes)
        except (json.JSONDecodeError, UnicodeDecodeError) as err:
            raise ValueError(f"{config_path} is not valid JSON: {err}") from None
        values = validate_config(config, config_path)
        _check_weights_hash(config.get(HASH_KEY), weights, directory)
        _check_model_size(config["model"], _weights_shapes(weights, directory / WEIGHTS_FILE), config_path)
        _check_config_hash(config, directory)  # after the specific checks: an edit they catch is named by them
        model = _build_model(config["model"], config_path)
        try:
            model.load_state_dict(load_weights(weights))
        except Exception as err:  # safetensors / torch raise several types for a corrupt or mismatched file
            raise ValueError(f"Could not load weights from {directory / WEIGHTS_FILE}: {err}") from None
        _check_finite(model, directory)
        model.to(device).eval()
        if values["preprocess"].target_sfreq is None and values["preprocess"].native_sfreqs is None:
            logger.warning(
                "%s keeps native rates but records no training rate (saved before rates were recorded): "
                "recordings at any rate are scored, as they were.",
                config_path,
            )
        return cls(model=model, **values)


# ------------------------------------------------------------------------------------------------
# Writing
# ------------------------------------------------------------------------------------------------


def check_model_destination(directory: str | Path) -> Path:
    """Check that a model may be saved to ``directory`` without losing anything; return it.

    Parameters
    ----------
    directory : str or Path
        A symlink is followed (the folder it points to is replaced).

    Returns
    -------
    directory : Path
        Absolute.

    Raises
    ------
    ValueError
        It exists and is not a directory, or holds files other than ``MODEL_FILES``.
    """
    directory = Path(directory)
    directory = directory.resolve() if directory.is_symlink() else directory.absolute()
    if directory.exists() and not directory.is_dir():
        raise ValueError(f"Cannot save a model to {directory}: it exists and is not a directory.")
    others = sorted(p.name for p in directory.iterdir() if p.name not in MODEL_FILES) if directory.is_dir() else []
    if others:
        shown = ", ".join(others[:5]) + (f" … ({len(others)} in all)" if len(others) > 5 else "")
        raise ValueError(
            f"Cannot save a model to {directory}: it holds files that are not part of a model directory ({shown}), "
            "which replacing it would delete. Choose another folder."
        )
    return directory


def _remove_stale_siblings(directory: Path) -> None:
    """Remove temporary folders of earlier saves to ``directory`` whose process died (killed mid-save)."""
    siblings = [
        *directory.parent.glob(f".{directory.name}.tmp-*-*"),
        *directory.parent.glob(f".{directory.name}.old-*-*"),
    ]
    for sibling in siblings:
        pid = sibling.name[len(directory.name) + 2 :].split("-")[1]
        if sibling.is_dir() and pid.isdigit() and not pid_alive(int(pid)):
            logger.info("removing %s, left by an interrupted save (process %s)", sibling, pid)
            shutil.rmtree(sibling, ignore_errors=True)


def _write_synced(path: Path, data: bytes) -> None:
    """Write ``data`` to a new file and flush it to disk."""
    with path.open("xb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())


_RENAME_EXCHANGE = 2
"""``renameat2`` flag that swaps two paths atomically (Linux ≥ 3.15)."""


def _exchange(a: Path, b: Path) -> bool:
    """Atomically swap the paths ``a`` and ``b`` (``renameat2(RENAME_EXCHANGE)``); False where unsupported."""
    try:
        renameat2 = ctypes.CDLL(None, use_errno=True).renameat2
    except (OSError, AttributeError):
        return False
    at_fdcwd = -100
    if renameat2(at_fdcwd, os.fsencode(a), at_fdcwd, os.fsencode(b), _RENAME_EXCHANGE) == 0:
        return True
    err = ctypes.get_errno()
    if err in (errno.EINVAL, errno.ENOSYS, errno.EOPNOTSUPP):
        return False
    raise OSError(err, f"Could not swap {a} into place at {b}: {os.strerror(err)}")


def _swap_into_place(tmp: Path, directory: Path) -> None:
    """Make the complete folder ``tmp`` become ``directory``; the previous ``directory`` ends up in ``tmp``.

    With an atomic exchange a reader never finds ``directory`` missing; without one (other
    systems) the old folder is renamed aside first, so for an instant there is no model at all,
    still never a mix. The caller removes ``tmp``.
    """
    if not directory.exists():
        os.rename(tmp, directory)
        return
    if _exchange(tmp, directory):
        return
    aside = directory.parent / f".{directory.name}.old-{os.getpid()}-{uuid.uuid4().hex[:8]}"
    os.rename(directory, aside)
    try:
        os.rename(tmp, directory)
    except BaseException:
        os.rename(aside, directory)
        raise
    shutil.rmtree(aside, ignore_errors=True)


# ------------------------------------------------------------------------------------------------
# Reading and validation
# ------------------------------------------------------------------------------------------------


def config_digest(config: dict) -> str:
    """SHA-256 (hex) of ``config``'s canonical JSON (sorted keys, no spaces) without its two checksums.

    ``weights_sha256`` is left out: it is checked against the weights themselves, and a model whose
    config lacks it loads with a warning as before (the digest protects the values training chose).

    Parameters
    ----------
    config : dict
        A parsed ``config.json`` (with or without its checksums).

    Returns
    -------
    digest : str
        64 hex digits, the same for any key order or layout of the same content.
    """
    body = {k: v for k, v in config.items() if k not in (CONFIG_HASH_KEY, HASH_KEY)}
    text = json.dumps(body, sort_keys=True, separators=(",", ":"), allow_nan=True, ensure_ascii=True)
    return hashlib.sha256(text.encode()).hexdigest()


def _check_config_hash(config: dict, directory: Path) -> None:
    """Refuse a ``config.json`` whose ``config_sha256`` differs from its content; warn when none is recorded."""
    recorded = config.get(CONFIG_HASH_KEY)
    path = directory / CONFIG_FILE
    if recorded is None:
        level = logging.INFO if _is_bundled(directory) else logging.WARNING
        logger.log(
            level,
            "%s records no %s (saved by an older sss-viewer): edits to it cannot be detected. Record its current "
            "values with `sss-viewer model-accept %s`.",
            path,
            CONFIG_HASH_KEY,
            directory,
        )
        return
    if not (isinstance(recorded, str) and len(recorded) == 64 and _is_hex(recorded)):
        raise _invalid(path, CONFIG_HASH_KEY, "the SHA-256 of the config (64 hex digits)", recorded)
    actual = config_digest(config)
    if actual != recorded:
        raise ValueError(
            f"{CONFIG_FILE} of {directory} was edited after training: its content no longer matches its "
            f"{CONFIG_HASH_KEY} recorded at training ({recorded[:12]}…, now {actual[:12]}…), so a value the model was "
            "trained with (rate, filters, window, stride, threshold, calibrator…) may have changed; retrain, or accept "
            f"a deliberate retune with `sss-viewer model-accept {directory}`."
        )


def _is_bundled(directory: Path) -> bool:
    """Whether ``directory`` is the model shipped inside the package (its files are package data)."""
    try:
        bundled = Path(__file__).resolve().parents[1] / "data" / "demo" / "model"
        return directory.resolve() == bundled
    except OSError:
        return False


def accept_config(directory: str | Path) -> Path:
    """Record the current ``config.json`` of a model as deliberate (``sss-viewer model-accept``): rewrite its digest.

    The config is validated and the weights checked against their SHA-256 and the described model
    first (a retune is accepted, a broken or mismatched model is not); the file is replaced atomically.
    The bundled demo model is package data and is refused (copy it first).

    Parameters
    ----------
    directory : str or Path
        A model directory whose ``config.json`` was edited on purpose.

    Returns
    -------
    path : Path
        The rewritten ``config.json``.

    Raises
    ------
    ValueError, FileNotFoundError
        As :meth:`ModelBundle.load`.
    """
    from sss_viewer.fileio import atomic_write_bytes

    directory = Path(directory)
    if directory.exists() and not directory.is_dir():
        raise ValueError(f"Model path {directory} is a file, not a model folder.")
    if not (directory / CONFIG_FILE).is_file():
        raise FileNotFoundError(f"Model directory {directory} has no {CONFIG_FILE}.")
    if _is_bundled(directory):
        raise ValueError(
            f"{directory} is the model shipped with sss-viewer (package data, left as installed); copy the folder "
            "and accept the copy."
        )
    config_bytes, weights = _read_model_files(directory)
    path = directory / CONFIG_FILE
    try:
        config = json.loads(config_bytes)
    except (json.JSONDecodeError, UnicodeDecodeError) as err:
        raise ValueError(f"{path} is not valid JSON: {err}") from None
    validate_config(config, path)
    if config.get(HASH_KEY) is None:
        raise ValueError(
            f"{path} records no {HASH_KEY}: the weights cannot be tied to it. Re-save the model with a current "
            "sss-viewer (ModelBundle.load(d).save(d)) instead."
        )
    _check_weights_hash(config[HASH_KEY], weights, directory)
    _check_model_size(config["model"], _weights_shapes(weights, directory / WEIGHTS_FILE), path)
    config[CONFIG_HASH_KEY] = config_digest(config)
    atomic_write_bytes(path, json.dumps(config, indent=2, allow_nan=True).encode())
    ModelBundle.load(directory)  # the accepted model loads
    return path


def _read_model_files(directory: Path, attempts: int = 3) -> tuple[bytes, bytes]:
    """``(config bytes, weights bytes)`` read from one and the same directory, even while a save swaps it.

    Both files are opened relative to one open handle on the directory, so a concurrent
    :meth:`ModelBundle.save` cannot hand over the config of one model and the weights of the
    other; when the directory is swapped and removed between the two reads, they are read again.
    """
    for attempt in range(attempts):
        fd = os.open(directory, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
        try:
            return tuple(_read_at(fd, name) for name in (CONFIG_FILE, WEIGHTS_FILE))
        except FileNotFoundError:
            if attempt == attempts - 1:
                raise
        finally:
            os.close(fd)
    raise AssertionError("unreachable")


def _read_at(dir_fd: int, name: str) -> bytes:
    with open(name, "rb", opener=lambda path, flags: os.open(path, flags, dir_fd=dir_fd)) as f:
        return f.read()


def _check_weights_hash(recorded, weights: bytes, directory: Path) -> None:
    """Raise when the weights' SHA-256 differs from ``config.json``'s; warn when none is recorded."""
    if recorded is None:
        logger.warning(
            "%s records no %s (saved by an older sss-viewer): the weights cannot be checked. Re-save the model "
            "(ModelBundle.load(d).save(d)) to add it.",
            directory / CONFIG_FILE,
            HASH_KEY,
        )
        return
    actual = hashlib.sha256(weights).hexdigest()
    if actual != recorded:
        raise ValueError(
            f"Model directory {directory}: {WEIGHTS_FILE} does not match the SHA-256 recorded in {CONFIG_FILE} "
            f"({HASH_KEY} {recorded[:12]}…, file {actual[:12]}…): the weights were altered or belong to another "
            "model. Restore the directory or train again."
        )


def _weights_shapes(weights: bytes, path: Path) -> dict[str, tuple[int, ...]]:
    """``{tensor name: shape}`` from the safetensors header of ``weights`` (nothing is allocated)."""
    try:
        n = int.from_bytes(weights[:8], "little")
        if len(weights) < 8 or n > len(weights) - 8:
            raise ValueError(f"the header claims {n} bytes of a {len(weights)}-byte file")
        header = json.loads(weights[8 : 8 + n])
        shapes = {k: tuple(int(d) for d in v["shape"]) for k, v in header.items() if k != "__metadata__"}
    except (ValueError, TypeError, KeyError, AttributeError) as err:
        raise ValueError(f"Could not load weights from {path}: its safetensors header is unreadable ({err}).") from None
    return shapes


_NOT_SIZES = {"name", "seed", "revin_eps"}
"""``model`` keys that are not sizes (never compared with the weights)."""


def _check_model_size(params: dict, shapes: dict[str, tuple[int, ...]], path: Path) -> None:
    """Refuse a ``model`` config whose tensors differ from the weights file's, before allocating anything.

    Every size in ``params`` must be plausible next to the number of values the weights hold, and
    the model built on the ``meta`` device (shapes only, no memory) must have the weights' tensor
    names and shapes. Errors name ``path`` and the key.
    """
    weights = path.with_name(WEIGHTS_FILE)
    stored = sum(math.prod(s) for s in shapes.values())
    limit = max(10**7, 100 * stored)
    for key, value in params.items():
        if key not in _NOT_SIZES and _is_number(value) and abs(value) > limit:
            raise _invalid(
                path, f"model.{key}", f"a size consistent with {weights.name} ({stored:,} values in all)", value
            )
    try:
        with torch.device("meta"):
            skeleton = model_from_config(params)
    except (TypeError, ValueError, KeyError) as err:
        raise ValueError(f"Invalid model config {path}: 'model' does not describe a model: {err}") from None
    except Exception:  # a backbone that computes on its tensors while being built (rocket): the bound above stands
        return
    expected = {k: tuple(v.shape) for k, v in skeleton.state_dict().items()}
    wrong = [name for name in sorted(set(expected) | set(shapes)) if expected.get(name) != shapes.get(name)]
    if not wrong:
        return

    def blamed(name: str) -> list[str]:  # the size keys whose value the config's shape has and the file's lacks
        ours, theirs = expected.get(name, ()), shapes.get(name, ())
        return [
            f"model.{k}"
            for k, v in params.items()
            if k not in _NOT_SIZES and _is_number(v) and v in ours and v not in theirs
        ]

    name = next((n for n in wrong if blamed(n)), wrong[0])
    keys = blamed(name)
    source = f" (from {', '.join(keys)})" if keys else ""
    raise ValueError(
        f"Invalid model config {path}: 'model' describes tensor {name!r} of shape {expected.get(name, 'none')}"
        f"{source}, but {weights.name} holds {shapes.get(name, 'none')} "
        f"({sum(math.prod(s) for s in expected.values()):,} values described, {stored:,} stored). "
        "The config does not belong to these weights."
    )


def _check_finite(model: torch.nn.Module, directory: Path) -> None:
    """Refuse weights holding NaN or infinity (a diverged training): they would score nothing."""
    for name, tensor in model.state_dict().items():
        if tensor.is_floating_point() and not bool(torch.isfinite(tensor).all()):
            raise ValueError(
                f"Model directory {directory}: {WEIGHTS_FILE} holds non-finite values (NaN or infinity) in "
                f"{name!r}; the model cannot score. Train it again."
            )


def _build_model(params: dict, path: Path) -> torch.nn.Module:
    """The (untrained) model described by the config's ``model`` mapping; errors name the file.

    Built without drawing from torch's global stream (its weights are loaded next): a training run on
    another thread draws from that stream, and its model would otherwise depend on when this one was built.
    """
    try:
        with draws_from(torch.Generator().manual_seed(0)):
            return model_from_config(params)
    except (TypeError, ValueError, KeyError) as err:
        raise ValueError(f"Invalid model config {path}: 'model' does not describe a model: {err}") from None


def _shown(value) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _invalid(path: Path, key: str, expected: str, value) -> ValueError:
    return ValueError(f"Invalid model config {path}: {key!r} must be {expected}; got {_shown(value)}.")


def _is_number(value) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _check_int(path: Path, key: str, value, low: int = 1) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < low:
        raise _invalid(path, key, f"an integer ≥ {low}", value)
    return value


def _check_mapping(path: Path, key: str, value) -> dict:
    if not isinstance(value, dict):
        raise _invalid(path, key, "a JSON object (mapping)", value)
    return value


_PREPROCESS_TYPES = {
    "target_sfreq": ("a positive number of Hz or null", lambda v: v is None or (_is_number(v) and v > 0)),
    "notch": ("true or false", lambda v: isinstance(v, bool)),
    "notch_quality": ("a positive number", lambda v: _is_number(v) and v > 0),
    "highpass_hz": ("a positive number of Hz or null", lambda v: v is None or (_is_number(v) and v > 0)),
    "pool_kernel": ("an integer ≥ 1", lambda v: isinstance(v, int) and not isinstance(v, bool) and v >= 1),
    "pool_stride": ("an integer ≥ 1", lambda v: isinstance(v, int) and not isinstance(v, bool) and v >= 1),
    "zscore": ("true or false", lambda v: isinstance(v, bool)),
    "scale": ("one of " + ", ".join(map(repr, SCALES)), lambda v: isinstance(v, str) and v in SCALES),
    "max_upsample": ("a number ≥ 1", lambda v: _is_number(v) and v >= 1),
    "native_sfreqs": (
        "a list of positive rates in Hz or null",
        lambda v: v is None or (isinstance(v, list) and len(v) > 0 and all(_is_number(r) and r > 0 for r in v)),
    ),
}
"""Each ``preprocess`` key: what it must be, and the test."""


def _check_preprocess(path: Path, params) -> PreprocessConfig:
    params = _check_mapping(path, "preprocess", params)
    known = {f.name for f in fields(PreprocessConfig)}
    unknown = sorted(set(params) - known)
    if unknown:
        raise _invalid(path, "preprocess", f"a mapping of {sorted(known)}", f"unknown keys {unknown}")
    for key, value in params.items():
        expected, ok = _PREPROCESS_TYPES[key]
        if not (ok(value) and (not _is_number(value) or math.isfinite(value))):
            raise _invalid(path, f"preprocess.{key}", expected, value)
    try:
        return PreprocessConfig.from_dict(params)
    except ValueError as err:
        raise ValueError(f"Invalid model config {path}: 'preprocess': {err}") from None


def _model_length(model: dict) -> int | None:
    """The window length the model's own parameters state (``window_length`` or ``input_length``)."""
    for key in ("window_length", "input_length"):
        if key in model:
            return model[key]
    return None


def validate_config(config, path: Path) -> dict:
    """Check every value of a model ``config.json``; return the :class:`ModelBundle` fields it gives.

    Parameters
    ----------
    config : object
        The parsed JSON.
    path : Path
        The file, for messages.

    Returns
    -------
    values : dict
        ``preprocess`` (PreprocessConfig), ``window_length``, ``inference_stride`` (int),
        ``calibrator`` (fitted), ``threshold`` (float), ``info`` (dict).

    Raises
    ------
    ValueError
        One line naming ``path`` and the key: missing keys; ``model`` not a mapping with a
        ``name``; ``window_length`` not a positive integer or not the model's own length;
        ``inference_stride`` not a positive integer; ``preprocess`` not a mapping of known keys
        with values of the right type (finite numeric rates); ``calibrator`` unreadable;
        ``threshold`` not a finite number in [0, 1]; ``info`` not a mapping; ``weights_sha256``
        not 64 hex digits.
    """
    if not isinstance(config, dict):
        raise ValueError(f"Invalid model config {path}: expected a JSON object; got {type(config).__name__}.")
    missing = [k for k in ("model", "preprocess", "window_length", "calibrator", "threshold") if k not in config]
    if missing:
        raise ValueError(f"{path} lacks the keys {missing}.")
    model = _check_mapping(path, "model", config["model"])
    if not isinstance(model.get("name"), str):
        raise _invalid(path, "model.name", "a model name (text)", model.get("name"))
    window_length = _check_int(path, "window_length", config["window_length"])
    own = _model_length(model)
    if own is not None and own != window_length:
        raise _invalid(path, "window_length", f"the model's own window length ({_shown(own)})", window_length)
    stride = config.get("inference_stride")
    stride = max(1, window_length // 4) if stride is None else _check_int(path, "inference_stride", stride)
    threshold = config["threshold"]
    if not _is_number(threshold) or not math.isfinite(threshold) or not 0 <= threshold <= 1:
        raise _invalid(path, "threshold", "a finite number in [0, 1]", threshold)
    info = _check_mapping(path, "info", config.get("info", {}))
    recorded = config.get(HASH_KEY)
    if recorded is not None and not (isinstance(recorded, str) and len(recorded) == 64 and _is_hex(recorded)):
        raise _invalid(path, HASH_KEY, "the SHA-256 of the weights (64 hex digits)", recorded)
    try:
        calibrator = calibrator_from_state(_check_mapping(path, "calibrator", config["calibrator"]))
    except (TypeError, ValueError, KeyError) as err:
        raise ValueError(f"Invalid model config {path}: 'calibrator': {err}") from None
    return {
        "preprocess": _check_preprocess(path, config["preprocess"]),
        "window_length": window_length,
        "inference_stride": stride,
        "calibrator": calibrator,
        "threshold": float(threshold),
        "info": info,
    }


def _is_hex(text: str) -> bool:
    return all(c in "0123456789abcdef" for c in text)

"""The viewer's demo: a synthetic recording, the bundled demo model and its precomputed scores.

The demo recording is one deterministic synthetic SEEG run (``sss_viewer.synth.config``: patient
``DEMO_PATIENT_INDEX`` of the cohort with seed ``DEMO_SEED``, 38 contacts on 6 shafts, ≈ 199 s at
999.41 Hz, a seizure at ≈ 56 s, 6 SOZ contacts). It is written on first use as a one-subject
BIDS-like BrainVision dataset into the cache folder, so the viewer exercises the real lazy reader::

    CACHE/demo/recording-<hash>/dataset_description.json, participants.tsv
                                labels.tsv       subject, channel, soz (the SOZ labels)
                                abnormal.tsv     the generator's abnormal intervals (ground truth)
                                manifest.json    sha256 of every file (written last: marks it complete)
                                sub-demo/ses-presurgery/ieeg/sub-demo_…_run-01_ieeg.vhdr|.vmrk|.eeg + sidecars

``CACHE`` is :func:`sss_viewer.preprocessing.cache.default_cache_dir` unless a folder is given. The files are
byte-identical on every machine with the same numpy (the generator is seeded; nothing written
holds a date).

The bundled model (``DEMO_MODEL_DIR``) was trained by ``training/build_demo_model.py`` on a
synthetic cohort drawn with another seed, so the demo patient is not in its training data.
:func:`demo_scores` scores the demo recording with it once and keeps the window and channel
tables on disk (CSV + JSON), keyed by the model's files and the recording's bytes; a copy made
by the build script ships in ``sss_viewer/data/demo/scores`` so even a first start is quick.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import shutil
import tempfile
from pathlib import Path

import pandas as pd

from sss_viewer._version import __version__
from sss_viewer.engine.inference import RecordingScores
from sss_viewer.engine.score_files import save_scores
from sss_viewer.fileio import write_tsv
from sss_viewer.io.recording import Recording
from sss_viewer.preprocessing.cache import default_cache_dir
from sss_viewer.synth.bids import write_recording_bids
from sss_viewer.synth.config import SynthConfig
from sss_viewer.synth.run import synthesise_recording
from sss_viewer.viewer.demo_files import (
    BUNDLED_SCORES_DIR,
    DEMO_DATA_DIR,
    DEMO_MODEL_DIR,
)

logger = logging.getLogger(__name__)

DEMO_SEED = 7
"""Cohort seed of the demo patient (``training/build_demo_model.py`` must train on another seed)."""
DEMO_PATIENT_INDEX = 3
"""0-based patient index in that cohort: a UMF SEEG patient (non-integer 999.41 Hz rate)."""
DEMO_SUBJECT = "demo"
"""BIDS subject label the demo recording is written under."""
DEMO_SYNTH = {"max_channels": 40, "duration_scale": 0.8}
"""``SynthConfig`` overrides of the demo recording (38 contacts, ≈ 199 s)."""
DEMO_VERSION = 1
"""Bump when the demo recording's layout changes (old cache folders are then ignored)."""

DEMO_DESCRIPTION = "Demo model trained on synthetic data by training/build_demo_model.py — not for clinical use"
"""``bundle.info["description"]`` of the bundled demo model."""

_MANIFEST = "manifest.json"
_SCORES_VERSION = 2


def demo_synth_config() -> SynthConfig:
    """The ``SynthConfig`` the demo recording is drawn with."""
    return SynthConfig(**DEMO_SYNTH)


def _recording_key() -> str:
    """Short hash of everything that defines the demo recording's bytes."""
    spec = {
        "version": DEMO_VERSION,
        "seed": DEMO_SEED,
        "patient": DEMO_PATIENT_INDEX,
        "subject": DEMO_SUBJECT,
        "synth": demo_synth_config().to_dict(),
    }
    return hashlib.sha256(json.dumps(spec, sort_keys=True).encode()).hexdigest()[:12]


def _sha256(path: Path) -> str:
    with path.open("rb") as f:
        return hashlib.file_digest(f, "sha256").hexdigest()


def _demo_root(cache_dir: str | Path | None) -> Path:
    base = Path(cache_dir) if cache_dir is not None else default_cache_dir()
    return base / "demo" / f"recording-{_recording_key()}"


def _write_demo(out: Path) -> Path:
    """Synthesise the demo run and write the dataset into ``out`` (an empty folder).

    Returns
    -------
    vhdr : Path
        The run's ``_ieeg.vhdr``.
    """
    recording, abnormal = synthesise_recording(DEMO_PATIENT_INDEX, 1, seed=DEMO_SEED, config=demo_synth_config())
    recording.subject = DEMO_SUBJECT
    vhdr = write_recording_bids(recording, out)
    description = {
        "Name": "sss-viewer demo recording (synthetic)",
        "BIDSVersion": "1.4.0",
        "DatasetType": "raw",
        "GeneratedBy": [{"Name": "sss_viewer.viewer.demo", "Version": __version__}],
        "SynthSeed": DEMO_SEED,
        "SynthPatientIndex": DEMO_PATIENT_INDEX,
        "SynthConfig": demo_synth_config().to_dict(),
    }
    (out / "dataset_description.json").write_text(json.dumps(description, indent=2) + "\n")
    write_tsv(
        pd.DataFrame({"participant_id": [f"sub-{DEMO_SUBJECT}"], "site": [recording.centre]}), out / "participants.tsv"
    )
    labels = pd.DataFrame({"subject": DEMO_SUBJECT, "channel": recording.ch_names, "soz": recording.soz.astype(int)})
    write_tsv(labels, out / "labels.tsv")
    abnormal = abnormal.assign(subject=DEMO_SUBJECT, run=recording.run)
    abnormal[["onset_s", "offset_s"]] = abnormal[["onset_s", "offset_s"]].round(4)
    write_tsv(abnormal[["subject", "run", "channel", "onset_s", "offset_s", "kind"]], out / "abnormal.tsv")
    files = sorted(p for p in out.rglob("*") if p.is_file())
    manifest = {
        "vhdr": vhdr.relative_to(out).as_posix(),
        "files": {p.relative_to(out).as_posix(): {"size": p.stat().st_size, "sha256": _sha256(p)} for p in files},
    }
    (out / _MANIFEST).write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n")
    return vhdr


def _complete(root: Path) -> Path | None:
    """The vhdr of a finished demo folder (manifest present, every file of the listed size), else None."""
    try:
        manifest = json.loads((root / _MANIFEST).read_text())
        for name, entry in manifest["files"].items():
            if (root / name).stat().st_size != entry["size"]:
                return None
        return root / manifest["vhdr"]
    except (OSError, ValueError, KeyError, TypeError):
        return None


def demo_recording(cache_dir: str | Path | None = None) -> Path:
    """The demo recording's BrainVision header, written on first use.

    Parameters
    ----------
    cache_dir : str or Path, optional
        Base cache folder; default :func:`sss_viewer.preprocessing.cache.default_cache_dir`. The dataset lives in
        ``cache_dir/demo/recording-<hash>/``.

    Returns
    -------
    vhdr : Path
        ``…/sub-demo/ses-presurgery/ieeg/sub-demo_ses-presurgery_task-ictal_acq-seeg_run-01_ieeg.vhdr``.
    """
    root = _demo_root(cache_dir)
    vhdr = _complete(root)
    if vhdr is not None:
        return vhdr
    root.parent.mkdir(parents=True, exist_ok=True)
    if root.exists():  # an incomplete folder left by an interrupted write
        shutil.rmtree(root, ignore_errors=True)
    tmp = Path(tempfile.mkdtemp(dir=root.parent, prefix=f".{root.name}."))
    try:
        _write_demo(tmp)
        os.chmod(tmp, 0o755)  # mkdtemp makes it private; the files in it are not secret
        try:
            os.rename(tmp, root)
        except OSError:  # another session finished first; use its copy
            if _complete(root) is None:
                raise
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
    logger.info("wrote the demo recording to %s", root)
    vhdr = _complete(root)
    if vhdr is None:
        raise RuntimeError(f"The demo recording in {root} is incomplete after writing it; delete the folder and retry.")
    return vhdr


def load_demo(cache_dir: str | Path | None = None) -> Recording:
    """The demo recording, read lazily from its BrainVision file with SOZ labels and seizure times.

    Parameters
    ----------
    cache_dir : str or Path, optional
        See :func:`demo_recording`.

    Returns
    -------
    Recording
        ``data`` is a lazy ``LazySignals`` view (38 × ≈ 198 600 samples, float32 µV); ``soz``,
        ``seizure_onset_s``/``seizure_offset_s`` and ``centre`` come from the BIDS sidecars and
        ``labels.tsv``.
    """
    from sss_viewer.viewer._loader import load_selected

    return load_selected(demo_recording(cache_dir))


def demo_abnormal(cache_dir: str | Path | None = None) -> pd.DataFrame:
    """The generator's abnormal intervals of the demo run (``subject, run, channel, onset_s, offset_s, kind``)."""
    from sss_viewer.io.cohort import read_abnormal_intervals

    return read_abnormal_intervals(demo_recording(cache_dir).parents[3])


# --------------------------------------------------------------------------------------------
# Precomputed scores
# --------------------------------------------------------------------------------------------


def demo_scores_key(model_dir: str | Path = DEMO_MODEL_DIR, cache_dir: str | Path | None = None) -> str:
    """SHA-256 over the model's ``config.json`` and weights, the demo recording's file bytes and the
    preprocessing code's version (``cache.CACHE_VERSION``: scores made with other filters are stale)."""
    from sss_viewer.engine.bundle import CONFIG_FILE, WEIGHTS_FILE
    from sss_viewer.preprocessing.cache import CACHE_VERSION

    model_dir = Path(model_dir)
    root = demo_recording(cache_dir).parents[3]
    manifest = json.loads((root / _MANIFEST).read_text())
    digest = hashlib.sha256(f"demo-scores-v{_SCORES_VERSION}\npreprocessing-v{CACHE_VERSION}\n".encode())
    for name in (CONFIG_FILE, WEIGHTS_FILE):
        digest.update(f"model/{name} {_sha256(model_dir / name)}\n".encode())
    for name in sorted(manifest["files"]):  # the bytes are rehashed, not trusted from the manifest
        if name.startswith("sub-"):
            digest.update(f"recording/{name} {_sha256(root / name)}\n".encode())
    digest.update(f"labels.tsv {_sha256(root / 'labels.tsv')}\n".encode())
    return digest.hexdigest()


def load_scores(folder: Path, key: str | None = None) -> RecordingScores | None:
    """Scores saved by :func:`~sss_viewer.engine.score_files.save_scores` (``RecordingScores.load``)."""
    return RecordingScores.load(folder, key)


def demo_scores(
    cache_dir: str | Path | None = None, *, model_dir: str | Path = DEMO_MODEL_DIR, device: str = "auto"
) -> RecordingScores:
    """Scores of the demo recording by a model, computed once and then read from disk.

    Looks, in order, in ``cache_dir/demo/scores-<key>/``, then in the copy shipped with the package
    (``BUNDLED_SCORES_DIR``, made by ``training/build_demo_model.py``); scores the recording only
    when neither matches the key (:func:`demo_scores_key`), and caches the result.

    Parameters
    ----------
    cache_dir : str or Path, optional
        Base cache folder (see :func:`demo_recording`).
    model_dir : str or Path
        Default the bundled demo model.
    device : str
        Used only when the scores must be computed.

    Returns
    -------
    RecordingScores
        The same values on every call (the computed result is read back from its files).
    """
    key = demo_scores_key(model_dir, cache_dir)
    folder = _demo_root(cache_dir).parent / f"scores-{key[:16]}"
    for candidate in (folder, BUNDLED_SCORES_DIR):
        scores = load_scores(candidate, key)
        if scores is not None:
            logger.info("demo scores read from %s", candidate)
            return scores
    from sss_viewer.engine.bundle import ModelBundle
    from sss_viewer.engine.inference import fine_heat_stride, score_recording

    logger.info("scoring the demo recording with %s (once; cached in %s)", model_dir, folder)
    bundle = ModelBundle.load(model_dir)
    scores = score_recording(
        bundle, load_demo(cache_dir), device=device, progress=False, heat_stride=fine_heat_stride(bundle)
    )
    save_scores(scores, folder, key)
    loaded = load_scores(folder, key)
    if loaded is None:
        raise RuntimeError(f"Could not read back the demo scores just written to {folder}.")
    return loaded


def demo_marker_scores(name: str, cache_dir: str | Path | None = None) -> RecordingScores:
    """Scores of the demo recording by the training-free scorer ``name``: computed once (about a second), then read from disk.

    The cache key covers the scorer (its name and parameters), the package version, the source of the
    markers and the artifact detector, and the demo recording's bytes, so changed code is never read
    back from an old result.

    Parameters
    ----------
    name : str
        A registry name of :mod:`sss_viewer.biomarkers` (not a fitted one).
    cache_dir : str or Path, optional
        Base cache folder (see :func:`demo_recording`).

    Returns
    -------
    RecordingScores
    """
    import sss_viewer.biomarkers as biomarkers
    import sss_viewer.preprocessing.artifacts as artifacts

    scorer = biomarkers.get_scorer(name)
    digest = hashlib.sha256(f"demo-marker-scores-v1\n{scorer!r}\n{__version__}\n".encode())
    for source in sorted(Path(biomarkers.__file__).parent.glob("*.py")) + [Path(artifacts.__file__)]:
        digest.update(f"{source.name} {_sha256(source)}\n".encode())
    digest.update(demo_scores_key(DEMO_MODEL_DIR, cache_dir).encode())  # the demo recording's and labels' bytes
    key = digest.hexdigest()
    folder = _demo_root(cache_dir).parent / f"scores-{name}-{key[:16]}"
    scores = load_scores(folder, key)
    if scores is not None:
        return scores
    logger.info("scoring the demo recording with %s (once; cached in %s)", name, folder)
    save_scores(scorer.score(load_demo(cache_dir)), folder, key)
    loaded = load_scores(folder, key)
    if loaded is None:
        raise RuntimeError(f"Could not read back the demo scores just written to {folder}.")
    return loaded


__all__ = [
    "BUNDLED_SCORES_DIR",
    "DEMO_DATA_DIR",
    "DEMO_DESCRIPTION",
    "DEMO_MODEL_DIR",
    "DEMO_PATIENT_INDEX",
    "DEMO_SEED",
    "demo_abnormal",
    "demo_marker_scores",
    "demo_recording",
    "demo_scores",
    "demo_scores_key",
    "demo_synth_config",
    "load_demo",
    "load_scores",
    "save_scores",
]

"""The Bonn epilepsy EEG data set (Andrzejak et al. 2001) as single-channel recordings.

Five sets of 100 single-channel segments (4097 samples at 173.61 Hz, 23.6 s, band-passed
0.53–40 Hz by the authors). Sets C and D are intracranial interictal segments from the
hippocampal formation *opposite* the epileptogenic zone (C) and from *within* it (D): D vs C is a
real SOZ-vs-not task, one label per segment. The copy here is one ``.npz`` with keys ``A``…``E``
(int16, shape (100, 4097), row ``i`` = file number ``i + 1``) and ``fs``, beside a
``manifest.csv`` (see the data folder's ``PROVENANCE.md``).

Each segment becomes a :class:`~sss_viewer.io.recording.Recording` with one ``seeg`` channel named
``depth`` (the same name for every set, so the name says nothing about the label), ``subject``
= the original file stem (``F001``, ``N042``…), ``centre`` = ``Bonn`` and ``soz`` = whether its set
is one of ``soz_sets``. The recordings carry no patient identity (the data set does not give it),
so splits are by segment.
"""

from __future__ import annotations

import logging
from pathlib import Path

import numpy as np

from sss_viewer.io.recording import Recording

logger = logging.getLogger(__name__)

__all__ = ["BONN_FILE", "BONN_SETS", "is_bonn", "load_bonn"]

BONN_FILE = "bonn_sets_ABCDE_int16.npz"
"""File name of the converted data set."""

BONN_SETS = {
    "A": ("Z", "scalp EEG, healthy volunteers, eyes open"),
    "B": ("O", "scalp EEG, healthy volunteers, eyes closed"),
    "C": ("N", "intracranial, hippocampal formation opposite the epileptogenic zone, interictal"),
    "D": ("F", "intracranial, within the epileptogenic zone, interictal"),
    "E": ("S", "intracranial, ictal"),
}
"""Set name → (letter of the original file names, what the set holds)."""

CHANNEL_NAME = "depth"
SCALP_SETS = ("A", "B")


def _npz_path(path: Path) -> Path:
    return path / BONN_FILE if path.is_dir() else path


def is_bonn(path: str | Path) -> bool:
    """Whether ``path`` is the Bonn ``.npz`` or a folder holding it.

    Parameters
    ----------
    path : str or Path
        A ``.npz`` file, or a folder (then its :data:`BONN_FILE` is looked at); it need not exist.

    Returns
    -------
    bool
        True when the file is a readable ``.npz`` (nothing unpickled) holding ``fs`` and every set of
        :data:`BONN_SETS`; False otherwise, never an error.
    """
    path = _npz_path(Path(path))
    if not path.is_file() or path.suffix.lower() != ".npz":
        return False
    try:
        with np.load(path, allow_pickle=False) as npz:
            return {"fs", *BONN_SETS} <= set(npz.files)
    except (OSError, ValueError):
        return False


def load_bonn(
    path: str | Path, sets: tuple[str, ...] = ("C", "D"), soz_sets: tuple[str, ...] = ("D",)
) -> list[Recording]:
    """Read Bonn segments as one-channel recordings.

    Parameters
    ----------
    path : str or Path
        ``bonn_sets_ABCDE_int16.npz`` or the folder holding it.
    sets : tuple of str
        Which sets to read (default the interictal intracranial pair C, D).
    soz_sets : tuple of str
        Sets whose segments are labelled SOZ (default D: recorded within the epileptogenic zone).

    Returns
    -------
    recordings : list of Recording
        Set by set, in file order; data in the file's units (12-bit ADC values), float32 (1, 4097).
    """
    file = _npz_path(Path(path))
    if not file.is_file():
        raise FileNotFoundError(f"{file}: no Bonn data set here (expected {BONN_FILE}).")
    unknown = [s for s in (*sets, *soz_sets) if s not in BONN_SETS]
    if unknown:
        raise ValueError(f"Unknown Bonn set(s) {unknown}: expected some of {sorted(BONN_SETS)}.")
    with np.load(file, allow_pickle=False) as npz:
        missing = sorted({"fs", *sets} - set(npz.files))
        if missing:
            raise ValueError(f"{file}: lacks key(s) {missing}; expected {sorted(BONN_SETS)} and 'fs'.")
        sfreq = float(np.asarray(npz["fs"]))
        arrays = {s: np.asarray(npz[s]) for s in sets}
    recordings = []
    for name, segments in arrays.items():
        if segments.ndim != 2:
            raise ValueError(f"{file}: set {name} must be 2-D (segments, samples); got shape {segments.shape}.")
        letter, description = BONN_SETS[name]
        ch_type = "eeg" if name in SCALP_SETS else "seeg"
        for row, segment in enumerate(segments):
            recordings.append(
                Recording(
                    data=segment.astype(np.float32)[None, :],
                    sfreq=sfreq,
                    ch_names=[CHANNEL_NAME],
                    ch_types=[ch_type],
                    soz=np.array([name in soz_sets]),
                    subject=f"{letter}{row + 1:03d}",
                    centre="Bonn",
                    line_freq=50.0,
                    source=file,
                    info={
                        "bonn_set": name,
                        "description": description,
                        "clipped_samples": int((np.abs(segment) >= 2047).sum()),
                    },
                )
            )
    logger.info(
        "read %d Bonn segments (sets %s; SOZ = %s) from %s", len(recordings), ",".join(sets), ",".join(soz_sets), file
    )
    return recordings

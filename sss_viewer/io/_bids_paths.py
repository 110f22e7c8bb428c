"""Where a file sits in a BIDS dataset, as mne-bids reads it: root, entities, its ``BIDSPath``, inherited sidecars.

The project's readers add their own rules on top (:func:`sss_viewer.io.readers.bids_sidecar`: a sidecar named
like the run and lying in its folder is taken first, and any sidecar must stay inside the dataset after
symlinks are followed). This module only asks mne-bids, so that BIDS's naming and inheritance rules are
decided in one place, the reference implementation:

* ``get_entities_from_fname`` parses ``sub-…_ses-…_task-…_run-…_ieeg.vhdr``;
* ``get_bids_path_from_fname`` gives the run's ``BIDSPath`` (root, datatype, suffix, extension);
* ``BIDSPath.find_matching_sidecar`` applies the inheritance principle: a sidecar with fewer entities
  (``sub-01_ses-01_task-ictal_channels.tsv`` for every run of the task; a root-level
  ``task-ictal_ieeg.json``) serves a run that has none of its own, and one whose entities conflict with
  the run's (another run's ``run-02``) never does; two equally good candidates mean none.
"""

from __future__ import annotations

import logging
from pathlib import Path

from sss_viewer._thread_warnings import quiet_log_records, recorded_warnings

logger = logging.getLogger(__name__)

BIDS_DATATYPES = ("ieeg", "eeg")
"""Datatype folders whose runs are read through mne-bids (``read_raw_bids``)."""

_ENTITIES = ("subject", "session", "run")


def find_bids_root(path: str | Path) -> Path | None:
    """The BIDS root above a file (the nearest folder with ``dataset_description.json``), or None.

    Parameters
    ----------
    path : str or Path
        A file inside the dataset (symlinks followed: a git-annex object finds its dataset too).

    Returns
    -------
    Path or None
    """
    for parent in Path(path).resolve().parents:
        if (parent / "dataset_description.json").is_file():
            return parent
    return None


def bids_entities(path: Path) -> dict[str, str]:
    """``subject``, ``session`` and ``run`` from a BIDS-style file name (``sub-pt01_ses-x_..._run-01_ieeg.vhdr``).

    Parameters
    ----------
    path : Path

    Returns
    -------
    dict
        Parsed by mne-bids (``get_entities_from_fname``); absent keys are left out, and a name that is
        not BIDS-style gives ``{}``.
    """
    from mne_bids import get_entities_from_fname

    entities = get_entities_from_fname(path.name, on_error="ignore")
    return {key: entities[key] for key in _ENTITIES if entities.get(key)}


def bids_path_of(path: Path):
    """The mne-bids ``BIDSPath`` of a data file laid out as BIDS, or None for any other file.

    A file is laid out as BIDS when its name has a subject entity, a dataset root
    (``dataset_description.json``) lies above it, mne-bids finds that same root from the path
    (``root/sub-<label>/[ses-<label>/]<datatype>/``) and the ``BIDSPath`` it builds names this very file.

    Parameters
    ----------
    path : Path
        A recording file (``…_ieeg.vhdr``, ``…_ieeg.edf``…).

    Returns
    -------
    mne_bids.BIDSPath or None
        With ``root``, ``datatype`` (one of :data:`BIDS_DATATYPES`), ``suffix`` and ``extension`` set.
    """
    if "subject" not in bids_entities(path):
        return None
    root = find_bids_root(path)
    if root is None:
        return None
    from mne_bids import get_bids_path_from_fname

    # A name mne-bids reads loosely is answered below, not warned about. Quiet for this thread only: its
    # ``verbose="error"`` would raise MNE's one logger's level for the process, and with it stop the warnings
    # (a cut file's) of reads on other threads meanwhile.
    with recorded_warnings(), quiet_log_records(logging.getLogger("mne")):
        try:
            bids_path = get_bids_path_from_fname(Path(path).absolute(), check=False)
        except (ValueError, RuntimeError, KeyError):
            return None
    if bids_path.root is None or bids_path.datatype not in BIDS_DATATYPES:
        return None
    if Path(bids_path.root).resolve() != root or Path(bids_path.fpath).name != Path(path).name:
        return None
    return bids_path


def inherited_sidecar(path: Path, suffix: str) -> Path | None:
    """The sidecar mne-bids matches to a BIDS run by the inheritance principle, or None.

    Parameters
    ----------
    path : Path
        The run's data file.
    suffix : str
        BIDS suffix and extension, ``"channels.tsv"``, ``"events.tsv"``, ``"ieeg.json"``.

    Returns
    -------
    Path or None
        As mne-bids found it (not resolved; :func:`sss_viewer.io.readers.bids_sidecar` checks where it
        leads). None when ``path`` is not laid out as BIDS, nothing matches, or two candidates tie.
    """
    bids_path = bids_path_of(path)
    if bids_path is None:
        return None
    name, _, extension = suffix.partition(".")
    found = bids_path.find_matching_sidecar(suffix=name, extension=f".{extension}", on_error="ignore")
    if found is None:
        return None
    logger.debug("%s: %s inherited from %s (BIDS inheritance, matched by mne-bids).", path.name, suffix, found)
    return Path(found)

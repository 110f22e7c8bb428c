"""The model on a cohort worker: loaded from its directory once per worker process, not sent with the tasks.

Dask's ``Client.scatter(..., broadcast=True)`` does not keep a copy on every worker: the scheduler's
active memory manager (on by default) drops the replicas no waiting task needs, so a worker could be
sent the model again mid-run (Dask's ``scatter`` documentation says as much). Each worker therefore
loads the model itself, from the directory the run was started with, once, and keeps it for the
run's later tasks. The directory must be on a file system every worker reaches, at the same path,
like the recordings and the output folder; its digest is checked, so a model replaced during a run
fails its recordings with a message instead of mixing two models in one cohort.

Internal to the stage: not part of the public API.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from pathlib import Path

from sss_viewer.cohort_scoring._digests import model_digest

KEPT_MODELS = 2
"""Models a worker process keeps loaded (the most recently used), for clusters that serve several runs."""

_loaded: OrderedDict[tuple[str, str], object] = OrderedDict()
_lock = threading.Lock()


def worker_model(model_dir: Path, digest: str, host: str):
    """The model in ``model_dir``, loaded once in this process and checked against the run's ``digest``.

    Parameters
    ----------
    model_dir : Path
        The model directory the run was started with (absolute).
    digest : str
        Its :func:`~sss_viewer.cohort_scoring._digests.model_digest` when the run was planned.
    host : str
        This worker's host name, for the messages.

    Returns
    -------
    ModelBundle
        The same object for every task of this process that asks for ``(model_dir, digest)``.

    Raises
    ------
    FileNotFoundError
        This worker cannot see ``model_dir``.
    ValueError
        The directory now holds another model than the run was planned with.
    """
    from sss_viewer.engine.bundle import ModelBundle

    key = (str(model_dir), digest)
    with _lock:  # a worker with several threads loads the model once, not once a thread
        bundle = _loaded.get(key)
        if bundle is None:
            if not model_dir.is_dir():
                raise FileNotFoundError(
                    f"Model {model_dir} not found on worker {host}: the model must be on a file system every worker "
                    "reaches, at the same path."
                )
            before = model_digest(model_dir)
            bundle = ModelBundle.load(model_dir)
            if before != digest or model_digest(model_dir) != digest:  # replaced before or while it was read
                raise ValueError(
                    f"The model in {model_dir} was replaced after this cohort run started (its config.json or weights "
                    "differ): its recordings are not scored with a mix of two models. Start the run again."
                )
            _loaded[key] = bundle
            while len(_loaded) > KEPT_MODELS:
                _loaded.popitem(last=False)
        _loaded.move_to_end(key)
        return bundle

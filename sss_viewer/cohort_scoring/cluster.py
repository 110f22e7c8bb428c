"""A Dask client: on a local cluster of worker processes started for the run, or on an existing scheduler."""

from __future__ import annotations

import contextlib
import logging
import os
from collections.abc import Iterator

from sss_viewer._lazy import require

logger = logging.getLogger(__name__)

MAX_DEFAULT_WORKERS = 4
"""The default local cluster has one single-threaded worker process per CPU core, at most this many."""
CONNECT_TIMEOUT_S = 30
LOOPBACK = "127.0.0.1"
"""Where a local cluster listens: nothing of it is reachable from another machine."""
"""How long connecting to an existing scheduler may take."""


def default_workers() -> int:
    """Worker processes of the default local cluster: ``min(4, CPU cores)``."""
    return max(1, min(MAX_DEFAULT_WORKERS, os.cpu_count() or 1))


@contextlib.contextmanager
def dask_client(scheduler: str | None = None, workers: int | None = None) -> Iterator:
    """A ``distributed.Client``, closed (with the local cluster it started, if any) on exit.

    Parameters
    ----------
    scheduler : str, optional
        Address of a running scheduler (``tcp://host:8786``): its workers score, and are left
        running afterwards.
    workers : int, optional
        Without ``scheduler``: worker processes of a ``LocalCluster`` started here (one thread each;
        default :func:`default_workers`).

    Yields
    ------
    client : distributed.Client

    Raises
    ------
    ValueError
        Both ``scheduler`` and ``workers`` given, or ``workers`` < 1.
    OSError
        The scheduler cannot be reached (the message names the address).
    MissingExtraError
        Dask's ``distributed`` is not installed (the ``cohort`` extra).
    """
    require("distributed", extra="cohort", feature="A Dask client")
    from distributed import Client, LocalCluster

    if scheduler is not None and workers is not None:
        raise ValueError(
            "--scheduler uses the workers of a running cluster; --workers starts a local one: pass one of them."
        )
    if scheduler is not None:
        try:
            client = Client(scheduler, timeout=CONNECT_TIMEOUT_S)
        except (OSError, ValueError) as exc:  # TimeoutError is an OSError; a malformed address a ValueError
            raise OSError(f"Cannot connect to the Dask scheduler at {scheduler}: {exc}") from None
        logger.info("connected to %s (%d workers)", scheduler, len(client.scheduler_info().get("workers", {})))
        with contextlib.closing(client):
            yield client
        return
    n = default_workers() if workers is None else workers
    if n < 1:
        raise ValueError(f"--workers must be at least 1; got {n}.")
    # the scheduler, workers and dashboard on loopback only (task names are recording names, i.e. patient
    # identifiers), the dashboard on a free port, not 8787: two runs on one machine must not collide
    with (
        LocalCluster(
            n_workers=n, threads_per_worker=1, processes=True, host=LOOPBACK, dashboard_address=f"{LOOPBACK}:0"
        ) as cluster,
        Client(cluster) as client,
    ):
        logger.info(
            "started a local Dask cluster of %d worker process(es) at %s (dashboard %s)",
            n,
            cluster.scheduler_address,
            cluster.dashboard_link,
        )
        yield client

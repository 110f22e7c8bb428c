"""The SSS epoch sampler (Algorithm 1): uniform batches of window indices without replacement."""

from __future__ import annotations

import logging
from collections.abc import Iterator

import torch

from sss_viewer._validate import check_positive_int

logger = logging.getLogger(__name__)


def epoch_batches(
    n_windows: int, batch_size: int, generator: torch.Generator, *, limit: int | None = None
) -> Iterator[torch.Tensor]:
    """Algorithm 1's epoch: batches drawn uniformly without replacement until the pool is empty.

    Every window index in ``range(n_windows)`` appears in exactly one batch. A series with
    ``A_i`` windows contributes a hypergeometric count to each full batch, with mean
    ``B * A_i / sum_j A_j`` (the paper's Binomial is the with-replacement approximation).

    Parameters
    ----------
    n_windows : int
    batch_size : int
    generator : torch.Generator
        Seeded generator; the permutation is drawn on the CPU.
    limit : int, optional
        Stop after this many windows (the first ``limit`` of the permutation: a uniform draw
        without replacement).

    Yields
    ------
    idx : Tensor, shape (B,) (the last batch may be smaller), int64
    """
    check_positive_int("batch_size", batch_size)
    perm = torch.randperm(n_windows, generator=generator)
    if limit is not None:
        perm = perm[:limit]
    yield from torch.split(perm, batch_size)

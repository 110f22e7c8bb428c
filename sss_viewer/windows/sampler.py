"""The SSS epoch sampler (Algorithm 1): uniform batches of window indices without replacement."""

from __future__ import annotations

import logging
from collections.abc import Iterator

import torch

from sss_viewer._validate import check_positive_int

logger = logging.getLogger(__name__)


def epoch_batches(
    n_windows: int,
    batch_size: int,
    generator: torch.Generator,
    *,
    limit: int | None = None,
    rank: int = 0,
    world_size: int = 1,
) -> Iterator[torch.Tensor]:
    """Algorithm 1's epoch: batches drawn uniformly without replacement until the pool is empty.

    Every window index in ``range(n_windows)`` appears in exactly one batch. A series with
    ``A_i`` windows contributes a hypergeometric count to each full batch, with mean
    ``B * A_i / sum_j A_j`` (the paper's Binomial is the with-replacement approximation).

    Sharded over ``world_size`` ranks (distributed training), every rank draws the same
    permutation from the same seeded ``generator``, cuts it into global batches of
    ``batch_size * world_size`` windows and takes its own contiguous slice of each: the ranks'
    batches together are exactly the single-process epoch at that global batch size (every window
    once, none twice), each rank's batch is itself a uniform draw without replacement, and every
    rank takes the same number of steps (a short last global batch is cut as evenly as it goes;
    a rank may then get fewer windows, or none).

    Parameters
    ----------
    n_windows : int
    batch_size : int
        Windows per batch on each rank.
    generator : torch.Generator
        Seeded generator; the permutation is drawn on the CPU.
    limit : int, optional
        Stop after this many windows (the first ``limit`` of the permutation: a uniform draw
        without replacement).
    rank, world_size : int
        This process's rank and the number of ranks.

    Yields
    ------
    idx : Tensor, shape (B,) (smaller in the last step), int64
    """
    check_positive_int("batch_size", batch_size)
    check_positive_int("world_size", world_size)
    if isinstance(rank, bool) or not isinstance(rank, int) or not 0 <= rank < world_size:
        raise ValueError(f"Invalid rank={rank!r}: expected an integer in [0, {world_size}).")
    perm = torch.randperm(n_windows, generator=generator)
    if limit is not None:
        perm = perm[:limit]
    if world_size == 1:
        yield from torch.split(perm, batch_size)
        return
    for global_batch in torch.split(perm, batch_size * world_size):
        yield torch.tensor_split(global_batch, world_size)[rank]

"""Training across processes with ``torch.distributed``, launched by ``torchrun``.

``torchrun --nproc_per_node N -m sss_viewer train DATA --out MODEL`` starts N processes with
``RANK``, ``WORLD_SIZE``, ``LOCAL_RANK``, ``MASTER_ADDR`` and ``MASTER_PORT`` set; :func:`start`
joins them into one process group (``nccl`` on CUDA devices, ``gloo`` on the CPU). Inside
:func:`sss_viewer.engine.training.train` every rank draws the same epoch permutation and takes its
slice of each global batch (:func:`sss_viewer.windows.sampler.epoch_batches`), the channel loss sums
per-series window sums over ranks (``channel_loss(all_reduce=...)``) and DDP averages the gradients;
rank 0 validates and its score is broadcast, so every rank stops at the same epoch; rank 0
calibrates and returns the model, the other ranks return None.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import threading
from collections.abc import Iterator
from dataclasses import dataclass

import torch
import torch.distributed as dist

logger = logging.getLogger(__name__)

__all__ = [
    "RankLost",
    "RankStopped",
    "Ranks",
    "broadcast_float",
    "current",
    "gather_rows",
    "lost_rank",
    "shard_bounds",
    "start",
    "stop",
    "stopped_by_launcher",
    "sum_over_ranks",
]


@dataclass(frozen=True)
class Ranks:
    """This process's place in the process group.

    Attributes
    ----------
    rank, world_size, local_rank : int
    """

    rank: int = 0
    world_size: int = 1
    local_rank: int = 0

    @property
    def is_main(self) -> bool:
        """Rank 0: validates, calibrates and saves."""
        return self.rank == 0

    @property
    def distributed(self) -> bool:
        return self.world_size > 1


class RankLost(RuntimeError):
    """This rank lost contact with the others (one died, was killed, or its node went away)."""


class RankStopped(RankLost):
    """torchrun stopped this rank (SIGTERM) because another rank failed first."""


@contextlib.contextmanager
def stopped_by_launcher(ranks: Ranks) -> Iterator[None]:
    """Within the block, the SIGTERM torchrun sends the surviving ranks when one fails raises :class:`RankStopped`.

    Without it a surviving rank that had not yet noticed the loss (busy computing, not communicating) dies
    silently on torchrun's SIGTERM; with it, it reports what happened like a rank that lost contact.
    A no-op in a single process or outside the main thread.
    """
    if not ranks.distributed or threading.current_thread() is not threading.main_thread():
        yield
        return

    def stop(signum, frame):
        raise RankStopped(
            f"rank {ranks.rank} of {ranks.world_size} was stopped by torchrun during training: another rank died or "
            "was killed (torchrun's report names it and its exit code). No model was saved."
        )

    previous = signal.signal(signal.SIGTERM, stop)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def lost_rank(exc: BaseException, ranks: Ranks, resume_hint: str = "") -> RankLost | None:
    """A :class:`RankLost` saying what happened in plain words, when ``exc`` is a failed collective; else None.

    Parameters
    ----------
    exc : BaseException
        What training raised.
    ranks : Ranks
    resume_hint : str
        How to go on (e.g. where the last epoch's checkpoint is), appended to the message.
    """
    if not ranks.distributed:
        return None
    if isinstance(exc, RankLost):
        return type(exc)(f"{exc}{resume_hint}")
    text = str(exc)
    if not (
        isinstance(exc, dist.DistError)
        or any(k in text for k in ("gloo", "NCCL", "Connection reset", "Connection closed"))
    ):
        return None
    detail = text.splitlines()[0][:200] if text else type(exc).__name__
    return RankLost(
        f"rank {ranks.rank} of {ranks.world_size} lost contact with the other ranks during training: another rank died or "
        f"was killed (torchrun's report names it and its exit code). No model was saved.{resume_hint} "
        f"[{type(exc).__name__}: {detail}]"
    )


def launched_by_torchrun() -> bool:
    """True in a process that ``torchrun`` started as one of several ranks."""
    return int(os.environ.get("WORLD_SIZE", "1")) > 1 and "RANK" in os.environ


def start(device: str = "auto") -> Ranks:
    """Join the process group ``torchrun`` set up (a no-op outside it); returns this process's ranks.

    Parameters
    ----------
    device : str
        ``"cuda"``/``"auto"`` with CUDA available: ``nccl`` and this rank's GPU (``LOCAL_RANK``);
        otherwise ``gloo``.
    """
    if not launched_by_torchrun():
        return Ranks()
    if not dist.is_initialized():
        local_rank = int(os.environ.get("LOCAL_RANK", "0"))
        use_cuda = device != "cpu" and torch.cuda.is_available()
        if use_cuda:
            torch.cuda.set_device(local_rank)
        dist.init_process_group("nccl" if use_cuda else "gloo")
        logger.info("rank %d of %d joined (%s)", dist.get_rank(), dist.get_world_size(), dist.get_backend())
    return current()


def current() -> Ranks:
    """The ranks of the initialised process group, or a single process."""
    if not (dist.is_available() and dist.is_initialized()):
        return Ranks()
    return Ranks(dist.get_rank(), dist.get_world_size(), int(os.environ.get("LOCAL_RANK", "0")))


def stop() -> None:
    """Leave the process group (a no-op when none was joined)."""
    if dist.is_available() and dist.is_initialized():
        dist.destroy_process_group()


def broadcast_float(value: float | None, ranks: Ranks) -> float:
    """Rank 0's ``value`` on every rank (other ranks pass anything, e.g. None)."""
    if not ranks.distributed:
        return float(value)
    box = [value if ranks.is_main else None]
    dist.broadcast_object_list(box, src=0)
    return float(box[0])


def shard_bounds(n_items: int, ranks: Ranks) -> tuple[int, int]:
    """The contiguous slice ``[lo, hi)`` of ``n_items`` this rank works on (shards differ in size by at most one)."""
    base, extra = divmod(n_items, ranks.world_size)
    lo = ranks.rank * base + min(ranks.rank, extra)
    return lo, lo + base + (ranks.rank < extra)


def gather_rows(local: torch.Tensor, n_items: int, ranks: Ranks) -> torch.Tensor:
    """Every rank's :func:`shard_bounds` rows, concatenated in rank order, on every rank.

    Parameters
    ----------
    local : Tensor, shape (hi - lo, ...)
        This rank's rows.
    n_items : int
        Rows over all ranks.

    Returns
    -------
    rows : Tensor, shape (n_items, ...)
    """
    if not ranks.distributed:
        return local
    sizes = [shard_bounds(n_items, Ranks(r, ranks.world_size)) for r in range(ranks.world_size)]
    longest = max(hi - lo for lo, hi in sizes)
    padded = local.new_zeros((longest, *local.shape[1:]))
    padded[: len(local)] = local
    parts = [torch.empty_like(padded) for _ in range(ranks.world_size)]
    dist.all_gather(parts, padded.contiguous())  # all_gather needs equal shapes: padded to the longest shard
    return torch.cat([part[: hi - lo] for part, (lo, hi) in zip(parts, sizes)])


class _SumOverRanks(torch.autograd.Function):
    """All-reduce (sum) with its gradient: the backward of a sum over ranks is the sum of the ranks' gradients."""

    @staticmethod
    def forward(ctx, tensor: torch.Tensor) -> torch.Tensor:
        out = tensor.clone()
        dist.all_reduce(out, op=dist.ReduceOp.SUM)
        return out

    @staticmethod
    def backward(ctx, grad: torch.Tensor) -> torch.Tensor:
        grad = grad.clone()
        dist.all_reduce(grad, op=dist.ReduceOp.SUM)
        return grad


def sum_over_ranks(tensor: torch.Tensor) -> torch.Tensor:
    """The sum of ``tensor`` over all ranks, differentiable (every rank gets the same result).

    Each rank then computes the same loss from the sums; its gradient with respect to this rank's
    input is the sum over ranks of the loss's gradient, i.e. ``world_size`` times the gradient of
    the one global loss, which DDP's average over ranks brings back to that gradient.
    """
    return _SumOverRanks.apply(tensor)

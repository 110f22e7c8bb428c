"""Remember frozen-front-end window features across training runs on the same series.

An experiment trains many SSS runs on one :class:`~sss_viewer.windows.SeriesStore`; runs that
differ only in how the head is trained or calibrated (an ablation's calibration, epochs or solver
rows) have the same front end (same fitted MiniRocket biases / ROCKET kernels) and the same windows,
so their features are identical. This memo keys them by a digest of the untrained model's state,
the window length and the window starts, holds them for as long as the store lives (weakly
referenced), and forgets the least recently used ones beyond :data:`FEATURE_MEMO_BYTES`.
"""

from __future__ import annotations

import hashlib
import json
import logging
import weakref
from collections import OrderedDict

import numpy as np
import torch
from torch import nn

logger = logging.getLogger(__name__)

FEATURE_MEMO_BYTES = 1 << 30
"""Bytes of features kept between runs (per process, over all stores)."""

_memo: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def front_end_digest(model: nn.Module) -> str:
    """Digest of a model's configuration and complete state (call it before any training step).

    Two models with equal digests compute equal frozen features; the head and the feature
    standardiser are part of the state too, which only makes the key stricter.
    """
    h = hashlib.sha256(json.dumps(model.get_config(), sort_keys=True, default=str).encode())
    for name, tensor in sorted(model.state_dict().items()):
        h.update(name.encode())
        h.update(tensor.detach().cpu().contiguous().numpy().tobytes())
    return h.hexdigest()


def _key(digest: str, starts: np.ndarray, length: int, device: torch.device) -> str:
    h = hashlib.sha256(f"{digest}|{length}|{device}".encode())
    h.update(np.ascontiguousarray(starts, dtype=np.int64).tobytes())
    return h.hexdigest()


def _total_bytes() -> int:
    return sum(t.numel() * t.element_size() for entries in _memo.values() for t in entries.values())


def recall(store, digest: str, starts: np.ndarray, length: int, device: torch.device) -> torch.Tensor | None:
    """Features remembered for these windows of ``store`` under this front end, or None."""
    entries = _memo.get(store)
    if entries is None:
        return None
    key = _key(digest, starts, length, device)
    if key in entries:
        entries.move_to_end(key)
        return entries[key]
    return None


def remember(store, digest: str, starts: np.ndarray, length: int, device: torch.device, features: torch.Tensor) -> None:
    """Keep ``features`` ``(len(starts), F)`` for later runs; evict the oldest beyond the budget."""
    size = features.numel() * features.element_size()
    if size > FEATURE_MEMO_BYTES:
        return
    try:
        entries = _memo.setdefault(store, OrderedDict())
    except TypeError:  # a store type that cannot be weakly referenced: no memo
        return
    entries[_key(digest, starts, length, device)] = features
    while _total_bytes() > FEATURE_MEMO_BYTES:
        oldest = next((e for e in _memo.values() if e), None)
        if oldest is None:
            break
        oldest.popitem(last=False)


def forget_all() -> None:
    """Drop every remembered feature matrix."""
    _memo.clear()

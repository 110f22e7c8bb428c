"""Remember frozen-front-end window features across training runs on the same series.

An experiment trains many SSS runs on one :class:`~sss_viewer.windows.store.SeriesStore`; runs that
differ only in how the head is trained or calibrated (an ablation's calibration, epochs or solver
rows) have the same front end (same fitted MiniRocket biases / ROCKET kernels) and the same windows,
so their features are identical. A :class:`FeatureMemo` keys them by a digest of the untrained
model's state, the window length and the window starts, holds them for as long as the store lives
(weakly referenced), and forgets the least recently used ones beyond its byte budget. It is an
object the caller owns (the experiment runner makes one per experiment and hands it to
``train``), not process-wide state: a plain ``train`` call remembers nothing.

Internal to the stage: not part of the public API (:mod:`sss_viewer.engine`'s ``__all__``, ``docs/api.md``).
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
"""Default byte budget of a :class:`FeatureMemo` (over all its stores)."""


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


class FeatureMemo:
    """Frozen-front-end features of window sets, per store, least recently used forgotten first.

    Parameters
    ----------
    max_bytes : int
        Budget over all stores; a single matrix larger than it is not kept.
    """

    def __init__(self, max_bytes: int = FEATURE_MEMO_BYTES):
        self.max_bytes = int(max_bytes)
        self._entries: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()

    def __len__(self) -> int:
        return sum(len(entries) for entries in self._entries.values())

    def total_bytes(self) -> int:
        """Bytes of the features held."""
        return sum(t.numel() * t.element_size() for entries in self._entries.values() for t in entries.values())

    def recall(self, store, digest: str, starts: np.ndarray, length: int, device: torch.device) -> torch.Tensor | None:
        """Features remembered for these windows of ``store`` under this front end, or None."""
        entries = self._entries.get(store)
        if entries is None:
            return None
        key = _key(digest, starts, length, device)
        if key in entries:
            entries.move_to_end(key)
            return entries[key]
        return None

    def remember(
        self, store, digest: str, starts: np.ndarray, length: int, device: torch.device, features: torch.Tensor
    ) -> None:
        """Keep ``features`` ``(len(starts), F)`` for later runs; forget the oldest beyond the budget."""
        if features.numel() * features.element_size() > self.max_bytes:
            return
        try:
            entries = self._entries.setdefault(store, OrderedDict())
        except TypeError:  # a store type that cannot be weakly referenced: nothing kept
            return
        entries[_key(digest, starts, length, device)] = features
        while self.total_bytes() > self.max_bytes:
            oldest = next((e for e in self._entries.values() if e), None)
            if oldest is None:
                break
            oldest.popitem(last=False)

    def clear(self) -> None:
        """Forget every feature matrix."""
        self._entries.clear()

"""How a frozen-front-end model reads a window: within its channel ("series") or on its own ("window").

MiniRocket (:mod:`sss_viewer.models.minirocket`) and Hydra (:mod:`sss_viewer.models.hydra`) pool
sums over positions, so a window's features can come from one pass of their kernels over the whole
channel ("series": positions near a window's edges see their real neighbours, and windows at any
stride cost one pass). "window" cuts each window out and reads it alone, zero-padded at its edges:
the only choice with RevIN, which normalises every window separately, and what models saved before
their series route did.
"""

from __future__ import annotations

import numpy as np

from sss_viewer._validate import check_option
from sss_viewer.windows.store import WindowSource

__all__ = ["FEATURE_CONTEXTS", "SeriesReading", "resolve_feature_context"]

FEATURE_CONTEXTS = ("series", "window")
"""How a window's positions are read: within its channel, or on their own."""


def resolve_feature_context(feature_context: str | None, revin: bool) -> str:
    """The feature context a model gets: ``"series"`` by default, ``"window"`` with RevIN.

    Parameters
    ----------
    feature_context : {"series", "window"} or None
    revin : bool

    Returns
    -------
    str

    Raises
    ------
    ValueError
        For an unknown context, or ``"series"`` with RevIN.
    """
    if feature_context is None:
        feature_context = "window" if revin else "series"
    check_option("feature_context", feature_context, FEATURE_CONTEXTS)
    if feature_context == "series" and revin:
        raise ValueError(
            "feature_context='series' shares one pass of the kernels over the channel between windows; revin=True "
            "normalises each window on its own. Use feature_context='window' with revin=True."
        )
    return feature_context


class SeriesReading:
    """Mixin of the models with a feature context: ``self.feature_context`` set by :meth:`set_feature_context`."""

    feature_context: str = "window"

    def set_feature_context(self, feature_context: str | None, revin: bool) -> None:
        """Resolve and record the context (saved in the model's config)."""
        self.feature_context = resolve_feature_context(feature_context, revin)
        self.record_args(feature_context=self.feature_context)

    @property
    def reads_series(self) -> bool:
        """Whether windows are read within their channel (``feature_context="series"``)."""
        return self.feature_context == "series"

    def store_window_features(self, store: WindowSource, starts: np.ndarray, window_length: int):
        """Features of windows of a store, each read within its channel (what training caches per window).

        Parameters
        ----------
        store : WindowSource
            E.g. a :class:`~sss_viewer.windows.store.SeriesStore`.
        starts : ndarray, shape (n_windows,), int64
            Absolute window starts in the store's address space.
        window_length : int

        Returns
        -------
        Tensor, shape (n_windows, n_features), float32
        """
        raise NotImplementedError

    def store_window_logits(
        self, store: WindowSource, starts: np.ndarray, window_length: int, *, device="cpu", on_progress=None
    ):
        """Window logits through the series route: one pass of the kernels per channel, any stride.

        Parameters
        ----------
        store : WindowSource
            E.g. a :class:`~sss_viewer.windows.store.SeriesStore`.
        starts : ndarray, shape (n_windows,), int64
            Absolute window starts in the store's address space.
        window_length : int
        device : torch.device or str
            Where the work runs.
        on_progress : callable, optional
            Called with the fraction of windows done as the work goes; an exception it raises stops it.

        Returns
        -------
        ndarray, shape (n_windows,), float64
        """
        raise NotImplementedError

"""Global-feature baseline: the "no local model" control for SOZ channel classification.

Each channel is reduced to a handful of whole-channel statistics (log variance, log line length,
log Welch band powers) and classified with ``StandardScaler + LogisticRegression``. It sees no
windows and learns no waveform shapes, so it answers one question: *can whole-channel statistics
alone separate SOZ from non-SOZ?* On the synthetic benchmark it should sit near chance, which proves
the task is not trivially separable by amplitude or spectrum and that an SSS gain comes from the
local model. On real data it is the floor that any window model must beat (a per-centre amplitude
or mains fingerprint shows up here first).
"""

from __future__ import annotations

import logging
import math
from collections.abc import Sequence
from typing import Any

import numpy as np
from scipy.signal import welch
from sklearn.exceptions import NotFittedError
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import Pipeline, make_pipeline
from sklearn.preprocessing import StandardScaler

from sss_viewer.metrics import as_binary_labels

logger = logging.getLogger(__name__)

BANDS_HZ: dict[str, tuple[float, float]] = {
    "delta": (1.0, 4.0),
    "theta": (4.0, 8.0),
    "alpha": (8.0, 13.0),
    "beta": (13.0, 30.0),
    "gamma": (30.0, 80.0),
    "high": (80.0, 150.0),
}
"""Frequency bands (Hz). Every band's upper edge is capped at ``NYQUIST_FRACTION * sfreq``."""

NYQUIST_FRACTION = 0.45
"""Highest usable frequency as a fraction of ``sfreq`` (below Nyquist, clear of anti-alias roll-off)."""

FEATURE_NAMES: tuple[str, ...] = ("log_variance", "log_line_length", *(f"log_power_{b}" for b in BANDS_HZ))
"""Names of the columns returned by :func:`global_features`."""

MIN_SAMPLES = 16
"""Shortest channel accepted by :func:`global_features`."""

_LOG_FLOOR = 1e-30  # keeps log finite for flat (zero-variance) channels


def _check_sfreq(sfreq: Any) -> float:
    if isinstance(sfreq, bool) or not isinstance(sfreq, (int, float, np.integer, np.floating)):
        raise ValueError(f"Invalid sfreq={sfreq!r}: expected a positive number in Hz.")
    sfreq = float(sfreq)
    if not (math.isfinite(sfreq) and sfreq > 0):
        raise ValueError(f"Invalid sfreq={sfreq!r}: expected a positive number in Hz.")
    return sfreq


def _check_channel(x: Any) -> np.ndarray:
    arr = np.asarray(x, dtype=np.float64)
    if arr.ndim != 1:
        raise ValueError(f"x must be one channel with shape (n_times,), got shape {arr.shape}.")
    if arr.shape[0] < MIN_SAMPLES:
        raise ValueError(f"x is too short: got {arr.shape[0]} samples, expected at least {MIN_SAMPLES}.")
    if not np.all(np.isfinite(arr)):
        raise ValueError("x must be finite: found NaN/inf samples.")
    return arr


def _band_power(freqs: np.ndarray, psd: np.ndarray, lo: float, hi: float) -> float:
    """Power in ``[lo, hi)`` Hz by summing the PSD; a band narrower than one bin uses the PSD at its centre."""
    df = freqs[1] - freqs[0]
    mask = (freqs >= lo) & (freqs < hi)
    if np.any(mask):
        return float(np.sum(psd[mask]) * df)
    return float(np.interp(0.5 * (lo + hi), freqs, psd) * (hi - lo))


def global_features(x: np.ndarray, sfreq: float) -> np.ndarray:
    """Whole-channel features of one iEEG channel.

    Parameters
    ----------
    x : ndarray, shape (n_times,)
        One channel, any length >= ``MIN_SAMPLES``, any units (the features are logs, so a unit
        change shifts them by a constant).
    sfreq : float
        Sampling rate in Hz (may be non-integer).

    Returns
    -------
    features : ndarray, shape (n_features,), float64
        In the order of :data:`FEATURE_NAMES`: log variance, log line length (mean absolute first
        difference), and the log band powers of :data:`BANDS_HZ` from a Welch PSD (Hann, 2-s
        segments or the whole channel when shorter, 50 % overlap). A band whose lower edge lies at or
        above ``NYQUIST_FRACTION * sfreq`` is ``nan`` (e.g. "high" at 173.61 Hz); the baseline drops
        such columns.
    """
    sfreq = _check_sfreq(sfreq)
    x = _check_channel(x)
    feats = [
        math.log(max(float(np.var(x)), _LOG_FLOOR)),
        math.log(max(float(np.mean(np.abs(np.diff(x)))), _LOG_FLOOR)),
    ]
    nperseg = min(x.shape[0], max(MIN_SAMPLES, int(round(2.0 * sfreq))))
    freqs, psd = welch(x - x.mean(), fs=sfreq, window="hann", nperseg=nperseg, detrend=False)
    f_max = NYQUIST_FRACTION * sfreq
    for lo, hi in BANDS_HZ.values():
        hi = min(hi, f_max)
        feats.append(math.log(max(_band_power(freqs, psd, lo, hi), _LOG_FLOOR)) if lo < hi else math.nan)
    return np.asarray(feats, dtype=np.float64)


def _broadcast_sfreqs(sfreqs: float | Sequence[float], n: int) -> list[float]:
    if isinstance(sfreqs, (int, float, np.integer, np.floating)) and not isinstance(sfreqs, bool):
        return [_check_sfreq(sfreqs)] * n
    sfreqs = list(sfreqs)
    if len(sfreqs) != n:
        raise ValueError(f"sfreqs must be one number or one per channel: got {len(sfreqs)} for {n} channels.")
    return [_check_sfreq(f) for f in sfreqs]


def feature_matrix(signals: Sequence[np.ndarray], sfreqs: float | Sequence[float]) -> np.ndarray:
    """Stack :func:`global_features` over channels.

    Parameters
    ----------
    signals : sequence of ndarray, each shape (n_times_i,)
        Channels of any lengths.
    sfreqs : float or sequence of float, length n_channels
        One rate for all channels or one per channel.

    Returns
    -------
    X : ndarray, shape (n_channels, n_features)
    """
    if isinstance(signals, np.ndarray) and signals.ndim == 2:
        signals = list(signals)
    signals = list(signals)
    if not signals:
        raise ValueError("signals is empty: expected at least one channel.")
    rates = _broadcast_sfreqs(sfreqs, len(signals))
    return np.vstack([global_features(x, f) for x, f in zip(signals, rates, strict=True)])


class GlobalFeatureBaseline:
    """``StandardScaler + LogisticRegression`` on :func:`global_features` — the no-local-model control.

    Parameters
    ----------
    C : float
        Inverse L2 regularisation strength of the logistic regression.
    class_weight : {"balanced"} or None
        ``"balanced"`` reweights the (typically 1:5) SOZ imbalance.
    max_iter : int
        Solver iteration cap.

    Attributes
    ----------
    feature_mask_ : ndarray, shape (n_features,), bool
        Columns used: those finite for every training channel (bands above the lowest training
        rate's usable range are dropped).
    feature_names_ : list of str
        Names of the used columns.
    pipeline_ : sklearn.pipeline.Pipeline
        The fitted scaler and classifier.

    Examples
    --------
    >>> model = GlobalFeatureBaseline().fit(train_signals, 512.0, train_labels)  # doctest: +SKIP
    >>> scores = model.predict_proba(test_signals, 512.0)  # doctest: +SKIP
    """

    def __init__(self, C: float = 1.0, class_weight: str | None = "balanced", max_iter: int = 1000) -> None:
        self.C = C
        self.class_weight = class_weight
        self.max_iter = max_iter

    def fit(
        self,
        signals: Sequence[np.ndarray],
        sfreqs: float | Sequence[float],
        labels: Any,
    ) -> GlobalFeatureBaseline:
        """Fit on whole channels.

        Parameters
        ----------
        signals : sequence of ndarray, each shape (n_times_i,)
        sfreqs : float or sequence of float, length n_channels
        labels : array-like, shape (n_channels,)
            SOZ labels 0/1; both classes must be present.

        Returns
        -------
        self
        """
        y = as_binary_labels("labels", labels)
        X = feature_matrix(signals, sfreqs)
        if X.shape[0] != y.shape[0]:
            raise ValueError(f"labels must have one entry per channel: got {y.shape[0]} for {X.shape[0]} channels.")
        if y.min() == y.max():
            raise ValueError(f"labels contain a single class (all {int(y[0])}): expected SOZ and non-SOZ channels.")
        mask = np.all(np.isfinite(X), axis=0)
        if not np.all(mask):
            dropped = [n for n, m in zip(FEATURE_NAMES, mask, strict=True) if not m]
            logger.info("Dropping features undefined at the lowest sampling rate: %s", dropped)
        self.feature_mask_ = mask
        self.feature_names_ = [n for n, m in zip(FEATURE_NAMES, mask, strict=True) if m]
        self.pipeline_ = self._make_pipeline().fit(X[:, mask], y)
        return self

    def predict_proba(self, signals: Sequence[np.ndarray], sfreqs: float | Sequence[float]) -> np.ndarray:
        """SOZ probability per channel.

        Parameters
        ----------
        signals : sequence of ndarray, each shape (n_times_i,)
        sfreqs : float or sequence of float, length n_channels

        Returns
        -------
        proba : ndarray, shape (n_channels,)
            Probability of the SOZ class.
        """
        if not hasattr(self, "pipeline_"):
            raise NotFittedError("This GlobalFeatureBaseline is not fitted yet: call fit(signals, sfreqs, labels).")
        X = feature_matrix(signals, sfreqs)[:, self.feature_mask_]
        if not np.all(np.isfinite(X)):
            raise ValueError(
                "Some channels lack a feature the model was trained with (a band above "
                f"{NYQUIST_FRACTION} * sfreq): used features are {self.feature_names_}."
            )
        return self.pipeline_.predict_proba(X)[:, 1]

    def _make_pipeline(self) -> Pipeline:
        return make_pipeline(
            StandardScaler(),
            LogisticRegression(C=self.C, class_weight=self.class_weight, max_iter=self.max_iter),
        )

    def __repr__(self) -> str:
        return f"GlobalFeatureBaseline(C={self.C!r}, class_weight={self.class_weight!r}, max_iter={self.max_iter!r})"

"""Window-probability calibrators ``g_φ`` (paper §3.3 and the "Calibration" appendix).

Three calibrators share one small interface (scikit-learn style: ``__init__`` stores parameters,
``fit`` returns ``self``, fitted attributes end in ``_``):

``fit(p, y)``
    Learn the map from raw window probabilities ``p`` (shape (n,)) and window labels ``y``
    (shape (n,), inherited from the channel label) on held-out windows.
``transform(p) -> (p_cal, p0, p1)``
    Calibrated probabilities and an interval ``p0 <= p_cal <= p1``, each shape (n,), in [0, 1] and
    non-decreasing in ``p``. Only Venn-Abers gives a non-trivial interval; isotonic and identity
    return ``p0 = p1 = p_cal``.
``get_state() -> dict``
    JSON-serialisable state (lists and floats, no pickle); :func:`calibrator_from_state` rebuilds a
    calibrator whose ``transform`` gives identical outputs.

Names for configs and the CLI: ``"isotonic"``, ``"venn-abers"``, ``"none"``
(see :func:`make_calibrator`).

Venn-Abers is implemented here rather than through the ``venn_abers`` package: it is exact
(inductive Venn-Abers predictor, Vovk, Petej & Fedorova 2015, "Large-scale probabilistic predictors
with and without guarantees of validity", Algorithms 1-4), runs in O(n log n) for the sort plus O(k)
stack operations over the k distinct calibration scores, uses exact integer geometry, and leaves
NumPy's error state alone (importing ``venn_abers`` switches off divide/invalid warnings
process-wide).
"""

from __future__ import annotations

import logging
from typing import Any, ClassVar, Protocol, runtime_checkable

import numpy as np
from sklearn.base import BaseEstimator
from sklearn.isotonic import IsotonicRegression
from sklearn.utils.validation import check_is_fitted

from sss_viewer.metrics import as_binary_labels, as_float_1d

logger = logging.getLogger(__name__)

STATE_FORMAT_VERSION = 1
"""Version written into every ``get_state()`` dict; bumped when the layout changes."""


@runtime_checkable
class Calibrator(Protocol):
    """What every window calibrator provides."""

    name: ClassVar[str]

    def fit(self, p: np.ndarray, y: np.ndarray) -> Calibrator: ...

    def transform(self, p: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]: ...

    def get_state(self) -> dict[str, Any]: ...


# --------------------------------------------------------------------------------------------
# validation helpers
# --------------------------------------------------------------------------------------------


def _check_fit_inputs(p: Any, y: Any) -> tuple[np.ndarray, np.ndarray]:
    """Validate calibration-set probabilities and labels; return float64 and int8 arrays."""
    p = as_float_1d("p", p)
    y = as_binary_labels("y", y)
    if p.shape[0] != y.shape[0]:
        raise ValueError(f"p and y must have the same length: got len(p)={p.shape[0]} and len(y)={y.shape[0]}.")
    if p.shape[0] == 0:
        raise ValueError("p and y are empty: expected at least one window of each class to fit a calibrator.")
    if np.any((p < 0.0) | (p > 1.0)):
        bad = p[(p < 0.0) | (p > 1.0)]
        raise ValueError(
            f"p must contain probabilities in [0, 1]: got {bad.size} value(s) outside, "
            f"min={p.min()!r}, max={p.max()!r}. Apply a sigmoid to logits first."
        )
    n_pos = int(y.sum())
    if n_pos == 0 or n_pos == y.shape[0]:
        only = "1" if n_pos else "0"
        raise ValueError(
            f"y contains a single class (all {only}, n={y.shape[0]}): a calibrator needs windows of "
            "both classes (0 and 1)."
        )
    return p, y


def _check_transform_input(p: Any) -> np.ndarray:
    """Validate probabilities to calibrate; values outside [0, 1] are clipped with a logged warning."""
    p = as_float_1d("p", p)
    outside = (p < 0.0) | (p > 1.0)
    if np.any(outside):
        logger.warning(
            "Clipping %d of %d probabilities outside [0, 1] (min=%g, max=%g) before calibration.",
            int(outside.sum()),
            p.size,
            float(p.min()),
            float(p.max()),
        )
        p = np.clip(p, 0.0, 1.0)
    return p


def _state_array(state: dict[str, Any], key: str) -> np.ndarray:
    """Read a 1-D float64 array ``state[key]`` with a readable error when absent or malformed."""
    if key not in state:
        raise ValueError(f"Calibrator state for {state.get('name')!r} lacks the key {key!r}.")
    arr = np.asarray(state[key], dtype=np.float64)
    if arr.ndim != 1 or not np.all(np.isfinite(arr)):
        raise ValueError(f"Calibrator state key {key!r} must be a flat list of finite floats.")
    return arr


# --------------------------------------------------------------------------------------------
# base class
# --------------------------------------------------------------------------------------------


class _BaseCalibrator(BaseEstimator):
    """Shared validation; subclasses implement ``_fit``, ``_transform``, ``_get_state``, ``_set_state``.

    A scikit-learn estimator: ``sklearn.base.clone`` copies an unfitted one with the same parameters,
    ``get_params`` / ``set_params`` work, and ``sklearn.utils.validation.check_is_fitted`` knows
    whether it was fitted.
    """

    name: ClassVar[str] = ""
    _fitted_attr: ClassVar[str | None] = None

    def fit(self, p: Any, y: Any) -> _BaseCalibrator:
        """Fit the calibrator on held-out windows.

        Parameters
        ----------
        p : array-like, shape (n_windows,)
            Raw window probabilities in [0, 1].
        y : array-like, shape (n_windows,)
            Binary window labels (0/1 or bool); both classes must be present.

        Returns
        -------
        self
        """
        p, y = _check_fit_inputs(p, y)
        self._fit(p, y)
        self.n_samples_ = int(p.shape[0])
        logger.debug("Fitted %s calibrator on %d windows (%d positive).", self.name, p.shape[0], int(y.sum()))
        return self

    def transform(self, p: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Calibrate window probabilities.

        Parameters
        ----------
        p : array-like, shape (n_windows,)
            Raw window probabilities. Values outside [0, 1] are clipped (logged); NaN is an error.

        Returns
        -------
        p_cal, p0, p1 : ndarray, shape (n_windows,), float64
            Calibrated probability and its interval, ``0 <= p0 <= p_cal <= p1 <= 1``, each
            non-decreasing in ``p``.
        """
        self._check_fitted()
        p = _check_transform_input(p)
        return self._transform(p)

    def get_state(self) -> dict[str, Any]:
        """Return a JSON-serialisable description of the fitted calibrator (no pickle).

        Returns
        -------
        state : dict
            ``{"name": ..., "format_version": 1, ...}`` with plain lists and floats; pass it to
            :func:`calibrator_from_state`.
        """
        self._check_fitted()
        state: dict[str, Any] = {"name": self.name, "format_version": STATE_FORMAT_VERSION}
        state.update(self._get_state())
        return state

    def __sklearn_is_fitted__(self) -> bool:
        return self._fitted_attr is None or hasattr(self, self._fitted_attr)

    def _check_fitted(self) -> None:
        check_is_fitted(
            self, msg=f"This {type(self).__name__} is not fitted yet: call fit(p, y) on held-out windows first."
        )

    def __repr__(self) -> str:
        fitted = self._fitted_attr is None or hasattr(self, self._fitted_attr)
        return f"{type(self).__name__}({'fitted' if fitted else 'unfitted'})"

    # subclass hooks ------------------------------------------------------------------------
    def _fit(self, p: np.ndarray, y: np.ndarray) -> None:
        raise NotImplementedError

    def _transform(self, p: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        raise NotImplementedError

    def _get_state(self) -> dict[str, Any]:
        raise NotImplementedError

    def _set_state(self, state: dict[str, Any]) -> None:
        raise NotImplementedError


# --------------------------------------------------------------------------------------------
# identity
# --------------------------------------------------------------------------------------------


class IdentityCalibrator(_BaseCalibrator):
    """No calibration (``"none"``): ``p_cal = p0 = p1 = clip(p, 0, 1)``.

    The ablation's "No Calibration" row. ``fit`` only validates its inputs, and ``transform`` works
    without ``fit`` because there is nothing to learn.
    """

    name: ClassVar[str] = "none"
    _fitted_attr: ClassVar[str | None] = None

    def _fit(self, p: np.ndarray, y: np.ndarray) -> None:
        return None

    def _transform(self, p: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        p_cal = p.copy()
        return p_cal, p_cal.copy(), p_cal.copy()

    def _get_state(self) -> dict[str, Any]:
        return {}

    def _set_state(self, state: dict[str, Any]) -> None:
        return None


# --------------------------------------------------------------------------------------------
# isotonic
# --------------------------------------------------------------------------------------------


class IsotonicCalibrator(_BaseCalibrator):
    """Isotonic regression calibrator (``"isotonic"``, the paper's default ``g_φ``).

    Fits ``sklearn.isotonic.IsotonicRegression(out_of_bounds="clip", y_min=0, y_max=1)`` and keeps
    only its knots; ``transform`` is linear interpolation between them (``np.interp``), constant
    beyond the fitted range, so a calibrator rebuilt from :meth:`get_state` gives identical outputs.

    Parameters
    ----------
    centered : bool
        ``True`` (default): centred isotonic regression (Oron & Flournoy, 2017) — each flat block
        of the pool-adjacent-violators fit is replaced by one knot at the block's mean raw
        probability, and the map interpolates linearly between block centres. The fit is the same
        monotone least-squares solution at the block centres, but the map is strictly increasing
        between them, so windows inside one block keep their order instead of collapsing to a
        handful of values (which would flatten the time course of the heat map). ``False``: the
        plain step function of sklearn, as in the paper.

    Attributes
    ----------
    X_thresholds_ : ndarray, shape (n_thresholds,)
        Increasing raw-probability knots.
    y_thresholds_ : ndarray, shape (n_thresholds,)
        Non-decreasing calibrated values at the knots, in [0, 1].
    n_samples_ : int
        Number of calibration windows (absent after :func:`calibrator_from_state`).
    """

    name: ClassVar[str] = "isotonic"
    _fitted_attr: ClassVar[str | None] = "X_thresholds_"

    def __init__(self, centered: bool = True) -> None:
        self.centered = centered

    def _fit(self, p: np.ndarray, y: np.ndarray) -> None:
        iso = IsotonicRegression(out_of_bounds="clip", y_min=0.0, y_max=1.0, increasing=True)
        iso.fit(p, y.astype(np.float64))
        if self.centered:
            fitted = iso.predict(p)
            levels, block = np.unique(fitted, return_inverse=True)
            centres = np.bincount(block, weights=p) / np.bincount(block)
            self.X_thresholds_, self.y_thresholds_ = centres, np.clip(levels, 0.0, 1.0)
        else:
            self.X_thresholds_ = np.asarray(iso.X_thresholds_, dtype=np.float64)
            self.y_thresholds_ = np.clip(np.asarray(iso.y_thresholds_, dtype=np.float64), 0.0, 1.0)

    def _transform(self, p: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        p_cal = np.clip(np.interp(p, self.X_thresholds_, self.y_thresholds_), 0.0, 1.0)
        return p_cal, p_cal.copy(), p_cal.copy()

    def _get_state(self) -> dict[str, Any]:
        return {
            "centered": bool(self.centered),
            "X_thresholds": self.X_thresholds_.tolist(),
            "y_thresholds": self.y_thresholds_.tolist(),
        }

    def _set_state(self, state: dict[str, Any]) -> None:
        x = _state_array(state, "X_thresholds")
        y = _state_array(state, "y_thresholds")
        if x.size == 0 or x.shape != y.shape or np.any(np.diff(x) < 0) or np.any(np.diff(y) < 0):
            raise ValueError(
                "Isotonic state must hold equal-length, non-empty, non-decreasing 'X_thresholds' and 'y_thresholds'."
            )
        self.centered = bool(state.get("centered", False))
        self.X_thresholds_ = x
        self.y_thresholds_ = y


# --------------------------------------------------------------------------------------------
# Venn-Abers
# --------------------------------------------------------------------------------------------


def _ivap_upper_fractions(counts: np.ndarray, positives: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Exact ``p1`` at every distinct calibration score (Vovk et al. 2015, Algorithms 1-2).

    ``p1_j`` is the isotonic-regression value at score ``c_j`` after adding the test point
    ``(c_j, 1)`` to the calibration set. In the cumulative-sum diagram (CSD) with vertices
    ``P_i = (W_i, Y_i)`` (cumulative counts and positives), adding ``(c_j, 1)`` is the same as shifting
    ``P_0 .. P_{j-1}`` by ``(-1, -1)``; ``p1_j`` is then the slope of the greatest convex minorant
    over block ``j``, i.e. of the lower bridge between the shifted left part and the right part. One
    left-to-right sweep keeps that bridge on a stack. Coordinates are Python ints, so every
    orientation test is exact.

    Parameters
    ----------
    counts : ndarray, shape (k,), int
        Number of calibration windows at each distinct score, in increasing score order.
    positives : ndarray, shape (k,), int
        Number of label-1 windows at each distinct score.

    Returns
    -------
    num, den : ndarray, shape (k,), int64
        ``p1_j = num[j] / den[j]``.
    """
    k = counts.shape[0]
    xs = [0, *np.cumsum(counts, dtype=np.int64).tolist()]
    ys = [0, *np.cumsum(positives, dtype=np.int64).tolist()]

    # Algorithm 1: lower convex hull of P_{-1} = (-1, -1), P_0, ..., P_k (left to right).
    hx, hy = [-1, 0], [-1, 0]
    for i in range(1, k + 1):
        x, y = xs[i], ys[i]
        while len(hx) >= 2 and (hx[-1] - hx[-2]) * (y - hy[-2]) - (hy[-1] - hy[-2]) * (x - hx[-2]) <= 0:
            hx.pop()
            hy.pop()
        hx.append(x)
        hy.append(y)

    # Algorithm 2: reversed stack (top = leftmost vertex); sweep the test point to the right.
    sx, sy = hx[::-1], hy[::-1]
    num = np.empty(k, dtype=np.int64)
    den = np.empty(k, dtype=np.int64)
    for j in range(1, k + 1):
        tx, ty, nx, ny = sx[-1], sy[-1], sx[-2], sy[-2]
        num[j - 1] = ny - ty
        den[j - 1] = nx - tx
        if j == k:
            break
        qx, qy = xs[j] - 1, ys[j] - 1  # P_j shifted by (-1, -1): the new rightmost left vertex
        if (nx - tx) * (qy - ty) - (ny - ty) * (qx - tx) >= 0:
            continue  # not below the current bridge: the bridge is unchanged
        sx.pop()
        sy.pop()
        while len(sx) >= 2 and (sx[-1] - qx) * (sy[-2] - qy) - (sy[-1] - qy) * (sx[-2] - qx) <= 0:
            sx.pop()
            sy.pop()
        sx.append(qx)
        sy.append(qy)
    return num, den


def _ivap_tables(p: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Distinct calibration scores with the exact ``p0`` and ``p1`` of a test point at each.

    Parameters
    ----------
    p : ndarray, shape (n,), float64
        Calibration scores.
    y : ndarray, shape (n,), int8
        Calibration labels.

    Returns
    -------
    scores, p0, p1 : ndarray, shape (k,), float64
        ``k`` distinct scores in increasing order; ``p0``/``p1`` are non-decreasing.
    """
    order = np.argsort(p, kind="stable")
    p_sorted, y_sorted = p[order], y[order].astype(np.int64)
    scores, first = np.unique(p_sorted, return_index=True)
    counts = np.diff(np.append(first, p_sorted.shape[0])).astype(np.int64)
    positives = np.add.reduceat(y_sorted, first).astype(np.int64)

    num1, den1 = _ivap_upper_fractions(counts, positives)
    # p0 by symmetry: reverse the score order and swap the labels, then p0 = 1 - p1(flipped).
    num0f, den0f = _ivap_upper_fractions(counts[::-1].copy(), (counts - positives)[::-1].copy())
    p1 = num1 / den1
    p0 = ((den0f - num0f) / den0f)[::-1]
    return scores, p0, p1


def _step_table(scores: np.ndarray, values: np.ndarray, keep: str) -> tuple[np.ndarray, np.ndarray]:
    """Compress a step function on ``scores`` to the knots where its value changes.

    ``keep="first"`` keeps the first score of each run of equal values (right-continuous steps,
    looked up with ``searchsorted(side="right") - 1``); ``keep="last"`` keeps the last (left-continuous
    steps, ``searchsorted(side="left")``).
    """
    change = np.flatnonzero(np.diff(values) != 0)
    idx = np.concatenate([[0], change + 1]) if keep == "first" else np.concatenate([change, [values.size - 1]])
    return scores[idx], values[idx]


class VennAbersCalibrator(_BaseCalibrator):
    """Inductive Venn-Abers predictor (``"venn-abers"``), exact.

    For a test score ``s``, ``p0``/``p1`` are the isotonic-regression values at ``s`` after adding
    ``(s, 0)``/``(s, 1)`` to the calibration set; the merged probability is
    ``p_cal = p1 / (1 - p0 + p1)`` (paper, "Calibration" appendix), which lies in ``[p0, p1]``.

    Both functions are step functions of ``s`` that only change at calibration scores: at a
    calibration score ``c_j`` they take the precomputed exact values; strictly between ``c_j`` and
    ``c_{j+1}``, ``p0 = p0(c_j)`` and ``p1 = p1(c_{j+1})``; below the smallest score ``p0 = 0``, above
    the largest ``p1 = 1``. ``fit`` computes them for all distinct scores with Vovk et al.'s
    O(k) stack algorithm (after an O(n log n) sort); ``transform`` is two binary searches.

    Attributes
    ----------
    p0_knots_, p0_values_ : ndarray, shape (m0,)
        Right-continuous step table of ``p0``: ``p0(s) = p0_values_[i]`` for the last knot
        ``p0_knots_[i] <= s``, and 0 below the first knot.
    p1_knots_, p1_values_ : ndarray, shape (m1,)
        Left-continuous step table of ``p1``: ``p1(s) = p1_values_[i]`` for the first knot
        ``p1_knots_[i] >= s``, and 1 above the last knot.
    n_samples_ : int
        Number of calibration windows (absent after :func:`calibrator_from_state`).
    """

    name: ClassVar[str] = "venn-abers"
    _fitted_attr: ClassVar[str | None] = "p0_knots_"

    def _fit(self, p: np.ndarray, y: np.ndarray) -> None:
        scores, p0, p1 = _ivap_tables(p, y)
        self.p0_knots_, self.p0_values_ = _step_table(scores, p0, keep="first")
        self.p1_knots_, self.p1_values_ = _step_table(scores, p1, keep="last")

    def _transform(self, p: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        i0 = np.searchsorted(self.p0_knots_, p, side="right")  # 0 means below every knot
        p0 = np.concatenate([[0.0], self.p0_values_])[i0]
        i1 = np.searchsorted(self.p1_knots_, p, side="left")  # m1 means above every knot
        p1 = np.concatenate([self.p1_values_, [1.0]])[i1]
        p_cal = p1 / (1.0 - p0 + p1)
        # p1 >= p0 makes p_cal lie in [p0, p1]; the clip only absorbs floating-point rounding.
        p_cal = np.clip(p_cal, p0, p1)
        return p_cal, p0, p1

    def _get_state(self) -> dict[str, Any]:
        return {
            "p0_knots": self.p0_knots_.tolist(),
            "p0_values": self.p0_values_.tolist(),
            "p1_knots": self.p1_knots_.tolist(),
            "p1_values": self.p1_values_.tolist(),
        }

    def _set_state(self, state: dict[str, Any]) -> None:
        tables = {key: _state_array(state, key) for key in ("p0_knots", "p0_values", "p1_knots", "p1_values")}
        for which in ("p0", "p1"):
            knots, values = tables[f"{which}_knots"], tables[f"{which}_values"]
            if knots.size == 0 or knots.shape != values.shape or np.any(np.diff(knots) <= 0):
                raise ValueError(
                    f"Venn-Abers state must hold non-empty, equal-length '{which}_knots' (strictly "
                    f"increasing) and '{which}_values'."
                )
        self.p0_knots_, self.p0_values_ = tables["p0_knots"], tables["p0_values"]
        self.p1_knots_, self.p1_values_ = tables["p1_knots"], tables["p1_values"]


# --------------------------------------------------------------------------------------------
# registry
# --------------------------------------------------------------------------------------------

CALIBRATORS: dict[str, type[_BaseCalibrator]] = {
    IsotonicCalibrator.name: IsotonicCalibrator,
    VennAbersCalibrator.name: VennAbersCalibrator,
    IdentityCalibrator.name: IdentityCalibrator,
}
"""Calibrator classes by name: ``"isotonic"``, ``"venn-abers"``, ``"none"``."""


def _check_calibrator_name(name: Any) -> str:
    if not isinstance(name, str) or name not in CALIBRATORS:
        valid = ", ".join(repr(n) for n in CALIBRATORS)
        raise ValueError(f"Unknown calibrator {name!r}: expected one of {valid}.")
    return name


def make_calibrator(name: str) -> _BaseCalibrator:
    """Return a new, unfitted calibrator by name.

    Parameters
    ----------
    name : {"isotonic", "venn-abers", "none"}
        Calibrator name.

    Returns
    -------
    calibrator : IsotonicCalibrator | VennAbersCalibrator | IdentityCalibrator

    Raises
    ------
    ValueError
        When ``name`` is not a known calibrator; the message lists the valid names.
    """
    return CALIBRATORS[_check_calibrator_name(name)]()


def calibrator_from_state(state: dict[str, Any]) -> _BaseCalibrator:
    """Rebuild a fitted calibrator from :meth:`get_state` output (e.g. after a JSON round trip).

    Parameters
    ----------
    state : dict
        ``{"name": ..., "format_version": 1, ...}`` as written by ``get_state``.

    Returns
    -------
    calibrator : IsotonicCalibrator | VennAbersCalibrator | IdentityCalibrator
        Its ``transform`` gives outputs identical to the calibrator that wrote ``state``.
    """
    if not isinstance(state, dict) or "name" not in state:
        raise ValueError(f"Calibrator state must be a dict with a 'name' key, got {type(state).__name__}.")
    name = _check_calibrator_name(state["name"])
    version = state.get("format_version", STATE_FORMAT_VERSION)
    if version != STATE_FORMAT_VERSION:
        raise ValueError(
            f"Calibrator state format_version={version!r} is not supported: expected {STATE_FORMAT_VERSION}."
        )
    calibrator = CALIBRATORS[name]()
    calibrator._set_state(state)
    return calibrator

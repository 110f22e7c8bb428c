"""What the viewer draws, as plain arrays: shafts, montages, display filters, decimation, heat-map rows.

No Panel or HoloViews here, so every rule the clinician sees (which contacts form a shaft, what a
bipolar row is, what a heat-map row averages) is testable on its own.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy import signal

from sss_viewer._validate import check_option
from sss_viewer.io._channel_names import contact_number, shaft_name  # noqa: F401  (re-exported: the viewer's names)

MONTAGES = ("monopolar", "average", "bipolar")


def group_by_shaft(channels: Sequence[str]) -> dict[str, list[int]]:
    """Channel indices per shaft: shafts in order of first appearance, contacts in contact-number order.

    Parameters
    ----------
    channels : sequence of str, length n_channels
        Names as stored (``LA10``, ``POL LA2``, ``EEG LA3-Ref``: see :func:`shaft_name`).

    Returns
    -------
    groups : dict of str to list of int
        ``{shaft: indices into channels}``; within a shaft ``LA1, LA2, …, LA10`` (numbers, not
        text: never ``LA1, LA10, LA2``), whatever order the file stores them in. Contacts without
        a number come last, in the given order.
    """
    groups: dict[str, list[int]] = {}
    for i, name in enumerate(channels):
        groups.setdefault(shaft_name(name), []).append(i)
    numbers = [contact_number(name) for name in channels]
    return {shaft: sorted(idx, key=lambda i: (numbers[i] is None, numbers[i] or 0, i)) for shaft, idx in groups.items()}


@dataclass(frozen=True)
class MontageRows:
    """Rows of a montage built from a set of contacts.

    Parameters
    ----------
    labels : list of str, length n_rows
        ``LA1`` (monopolar), ``LA1-avg`` (common average) or ``LA1-LA2`` (bipolar).
    members : list of tuple of int
        Indices (into the contact list) each row is made of: one contact, or the bipolar pair.
    shafts : list of str, length n_rows
    kind : str
    """

    labels: list[str]
    members: list[tuple[int, ...]]
    shafts: list[str]
    kind: str

    def __len__(self) -> int:
        return len(self.labels)


def montage_rows(channels: Sequence[str], kind: str) -> MontageRows:
    """The rows of montage ``kind`` over ``channels``, shaft by shaft in contact-number order.

    Rows follow :func:`group_by_shaft` in every montage (``LA1, LA2, …, LA10`` however the file
    stores them; ``members`` index into ``channels``). Bipolar pairs are neighbouring contacts of
    one shaft by contact number (``LA1-LA2``, ``LA2-LA3``…); a shaft with one contact gives no
    bipolar row.
    """
    check_option("montage", kind, MONTAGES)
    channels = list(channels)
    groups = group_by_shaft(channels)
    if kind != "bipolar":
        suffix = "-avg" if kind == "average" else ""
        order = [i for idx in groups.values() for i in idx]
        return MontageRows(
            [channels[i] + suffix for i in order], [(i,) for i in order], [shaft_name(channels[i]) for i in order], kind
        )
    labels, members, shafts = [], [], []
    for shaft, ordered in groups.items():
        for a, b in zip(ordered[:-1], ordered[1:]):
            labels.append(f"{channels[a]}-{channels[b]}")
            members.append((a, b))
            shafts.append(shaft)
    return MontageRows(labels, members, shafts, kind)


def row_labels(rows: MontageRows, names: Sequence[str]) -> list[str]:
    """The labels of ``rows`` spelt with ``names`` (e.g. the contacts' display names).

    Parameters
    ----------
    rows : MontageRows
        Rows built from a contact list; ``members`` index into it.
    names : sequence of str, length n_contacts
        How each contact of that list is to be read (``POL LA1`` shown as ``LA1``).

    Returns
    -------
    labels : list of str, length n_rows
        ``LA1``, ``LA1-avg`` or ``LA1-LA2`` as :func:`montage_rows` would write them.
    """
    suffix = "-avg" if rows.kind == "average" else ""
    return ["-".join(names[i] for i in members) + suffix for members in rows.members]


def apply_montage(data: np.ndarray, rows: MontageRows, reference: np.ndarray | None = None) -> np.ndarray:
    """Signals of the montage rows.

    Parameters
    ----------
    data : ndarray, shape (n_contacts, n_times)
        The contacts ``rows`` was built from (µV).
    rows : MontageRows
    reference : ndarray, shape (n_times,), optional
        Common-average reference for ``kind == "average"`` (the mean of all good contacts, not only
        those shown); the mean of ``data`` when None.

    Returns
    -------
    out : ndarray, shape (n_rows, n_times), float32
    """
    data = np.asarray(data, dtype=np.float32)
    if rows.kind == "monopolar":
        return data[[m[0] for m in rows.members]]
    if rows.kind == "average":
        ref = data.mean(axis=0) if reference is None else np.asarray(reference, dtype=np.float32)
        return data[[m[0] for m in rows.members]] - ref[None, :]
    if not len(rows):
        return np.zeros((0, data.shape[1]), dtype=np.float32)
    a = np.array([m[0] for m in rows.members])
    b = np.array([m[1] for m in rows.members])
    return data[a] - data[b]


def display_filter(
    data: np.ndarray,
    sfreq: float,
    *,
    highpass_hz: float | None = None,
    lowpass_hz: float | None = None,
    notch_hz: float | None = None,
) -> np.ndarray:
    """Zero-phase display filters (4th-order Butterworth band edges, Q = 30 notch and harmonics).

    Parameters
    ----------
    data : ndarray, shape (n_rows, n_times)
    sfreq : float
    highpass_hz, lowpass_hz, notch_hz : float, optional
        Cut-offs; a cut-off at or above Nyquist is ignored.

    Returns
    -------
    out : ndarray, shape (n_rows, n_times), float32
    """
    y = np.asarray(data, dtype=np.float64)
    nyquist = sfreq / 2
    if y.shape[-1] < 16:
        return y.astype(np.float32)
    if highpass_hz and 0 < highpass_hz < nyquist:
        sos = signal.butter(4, highpass_hz, btype="highpass", fs=sfreq, output="sos")
        y = signal.sosfiltfilt(sos, y, axis=-1, padlen=min(y.shape[-1] - 1, 27))
    if lowpass_hz and 0 < lowpass_hz < nyquist:
        sos = signal.butter(4, lowpass_hz, btype="lowpass", fs=sfreq, output="sos")
        y = signal.sosfiltfilt(sos, y, axis=-1, padlen=min(y.shape[-1] - 1, 27))
    if notch_hz and 0 < notch_hz < nyquist:
        for freq in np.arange(notch_hz, nyquist * 0.98, notch_hz):
            b, a = signal.iirnotch(freq, 30.0, fs=sfreq)
            y = signal.filtfilt(b, a, y, axis=-1, padlen=min(y.shape[-1] - 1, 9))
    return y.astype(np.float32)


def decimate_minmax_lttb(t: np.ndarray, y: np.ndarray, n_out: int) -> np.ndarray:
    """Indices of at most ``n_out`` samples of ``y`` that keep its shape (MinMax-LTTB, tsdownsample).

    Parameters
    ----------
    t : ndarray, shape (n_times,)
        Sample times (increasing).
    y : ndarray, shape (n_times,)
    n_out : int

    Returns
    -------
    idx : ndarray, shape (<= n_out,), int64, increasing
    """
    if len(y) <= n_out:
        return np.arange(len(y))
    from tsdownsample import MinMaxLTTBDownsampler

    return np.asarray(
        MinMaxLTTBDownsampler().downsample(t, np.ascontiguousarray(y), n_out=max(n_out, 4)), dtype=np.int64
    )


def heatmap_rows(values: np.ndarray, rows: MontageRows) -> np.ndarray:
    """Heat-map rows of a montage from per-contact binned probabilities.

    A bipolar row shows the mean of its two contacts' window probabilities (NaN-aware); monopolar
    and average rows show their contact's.

    Parameters
    ----------
    values : ndarray, shape (n_contacts, n_bins)
        ``RecordingScores.heatmap`` of the contacts ``rows`` was built from (NaN = not scored).
    rows : MontageRows

    Returns
    -------
    out : ndarray, shape (n_rows, n_bins), float64
    """
    out = np.full((len(rows), values.shape[1]), np.nan)
    for r, members in enumerate(rows.members):
        block = values[list(members)]
        valid = np.isfinite(block)
        count = valid.sum(axis=0)
        total = np.where(valid, block, 0.0).sum(axis=0)
        out[r] = np.where(count > 0, total / np.maximum(count, 1), np.nan)
    return out


# --------------------------------------------------------------------------------------------
# Amplitude scale, unit plausibility and clipping
# --------------------------------------------------------------------------------------------

SCALE_PERCENTILE = 99.0
"""Percentile of ``|x − median|`` per row that sets the display scale (robust to a few spikes)."""
TYPICAL_IEEG_UV = (10.0, 2000.0)
"""Typical iEEG amplitudes (µV), quoted in the implausible-unit message."""
PLAUSIBLE_SCALE_UV = (0.5, 10_000.0)
"""Robust scales outside this range (µV) are implausible for iEEG stated in µV."""
_UNIT_FACTORS = {"nV": 1e-3, "mV": 1e3, "V": 1e6}
"""µV per stored unit, for guessing what a mislabelled file holds."""


def robust_scale(block: np.ndarray, percentile: float = SCALE_PERCENTILE) -> float:
    """Typical excursion of the rows: the median over rows of each row's ``percentile`` of ``|x − median(x)|``.

    Unlike the maximum or the SD, a few seizure spikes or one broken channel do not move it.

    Parameters
    ----------
    block : ndarray, shape (n_rows, n_times)
        Signals (µV); NaN is ignored.
    percentile : float
        In 0–100.

    Returns
    -------
    scale : float
        In the unit of ``block``; NaN when no row has a finite, non-zero excursion.
    """
    block = np.asarray(block, dtype=np.float64)
    if block.ndim != 2 or block.size == 0:
        return float("nan")
    finite = np.isfinite(block).any(axis=1)
    if not finite.any():
        return float("nan")
    block = block[finite]
    centred = np.abs(block - np.nanmedian(block, axis=1, keepdims=True))
    per_row = np.nanpercentile(centred, percentile, axis=1)
    per_row = per_row[np.isfinite(per_row) & (per_row > 0)]
    return float(np.median(per_row)) if len(per_row) else float("nan")


def display_amplitude(scale: float, default: float = 100.0) -> float:
    """The display amplitude (µV per half row) for a robust scale: the scale to two significant digits.

    Parameters
    ----------
    scale : float
        :func:`robust_scale` of the visible block.
    default : float
        Returned when ``scale`` is not a positive finite number (flat or empty block).

    Returns
    -------
    amplitude : float
    """
    if not np.isfinite(scale) or scale <= 0:
        return float(default)
    return float(f"{scale:.2g}")


def implausible_unit_message(scale: float, unit: str = "µV") -> str:
    """A warning when a robust scale is implausible for iEEG stated in ``unit`` (µV), else ``""``.

    Scales above ``PLAUSIBLE_SCALE_UV[1]`` or below ``PLAUSIBLE_SCALE_UV[0]`` are flagged, with the
    unit that would make them typical when there is one (``nV``, ``mV`` or ``V`` mislabelled as µV).

    Parameters
    ----------
    scale : float
        :func:`robust_scale` of the raw (monopolar) signals, in ``unit``.
    unit : str
        The unit the recording states (the viewer's recordings are in µV).

    Returns
    -------
    message : str
    """
    low, high = PLAUSIBLE_SCALE_UV
    if not np.isfinite(scale) or scale <= 0 or low <= scale <= high:
        return ""
    lo_typ, hi_typ = TYPICAL_IEEG_UV
    guesses = [name for name, factor in _UNIT_FACTORS.items() if lo_typ <= scale * factor <= hi_typ]
    if scale > high:
        guesses = [g for g in guesses if _UNIT_FACTORS[g] < 1]
        what = (
            f"amplitudes look like {guesses[0]} mislabelled as {unit}"
            if guesses
            else f"amplitudes are far too large for {unit}"
        )
    else:
        guesses = [g for g in guesses if _UNIT_FACTORS[g] > 1]
        what = (
            f"amplitudes look like {guesses[0]} mislabelled as {unit}"
            if guesses
            else f"amplitudes are far too small for {unit}"
        )
    return (
        f"Implausible amplitudes: {what}. The typical excursion is {scale:,.3g} {unit}, while iEEG is "
        f"usually {lo_typ:g}–{hi_typ:,.0f} {unit}. Check the file's units; values and the scale bar are shown as stored."
    )


def centre_and_clip(data: np.ndarray, limits: np.ndarray | None) -> np.ndarray:
    """Rows minus their median, clipped to ``±limits`` (so a large spike stays in its own row).

    Parameters
    ----------
    data : ndarray, shape (n_rows, n_times)
    limits : ndarray, shape (n_rows,), optional
        Largest excursion shown per row (µV); no clipping when None.

    Returns
    -------
    out : ndarray, shape (n_rows, n_times), float32
    """
    data = np.asarray(data, dtype=np.float32)
    if data.size == 0:
        return data.copy()
    out = data - np.nanmedian(data, axis=1, keepdims=True).astype(np.float32)
    if limits is not None:
        lim = np.asarray(limits, dtype=np.float32)[:, None]
        np.clip(out, -lim, lim, out=out)
    return out


def clip_envelope(lo: np.ndarray, hi: np.ndarray, limits: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
    """Per-bin min/max envelopes centred on each row's median bin centre and clipped to ``±limits``.

    Parameters
    ----------
    lo, hi : ndarray, shape (n_rows, n_bins)
    limits : ndarray, shape (n_rows,), optional

    Returns
    -------
    lo, hi : ndarray, shape (n_rows, n_bins), float32
    """
    lo = np.asarray(lo, dtype=np.float32)
    hi = np.asarray(hi, dtype=np.float32)
    if lo.size == 0:
        return lo.copy(), hi.copy()
    middle = np.nanmedian((lo + hi) / 2, axis=1, keepdims=True).astype(np.float32)
    lo, hi = lo - middle, hi - middle
    if limits is not None:
        lim = np.asarray(limits, dtype=np.float32)[:, None]
        np.clip(lo, -lim, lim, out=lo)
        np.clip(hi, -lim, lim, out=hi)
    return lo, hi


def top_k_mean(values: np.ndarray, k: int = 3) -> np.ndarray:
    """Per column, the mean of the ``k`` largest finite values (fewer when fewer are finite).

    Parameters
    ----------
    values : ndarray, shape (n_rows, n_bins)
        E.g. binned p(SOZ) of every channel; NaN = not scored.
    k : int

    Returns
    -------
    out : ndarray, shape (n_bins,), float64
        NaN where no row has a value.
    """
    values = np.asarray(values, dtype=np.float64)
    if values.shape[0] == 0:
        return np.full(values.shape[1], np.nan)
    k = max(1, min(int(k), values.shape[0]))
    filled = np.where(np.isfinite(values), values, -np.inf)
    top = -np.sort(-filled, axis=0)[:k]
    valid = np.isfinite(top)
    count = valid.sum(axis=0)
    total = np.where(valid, top, 0.0).sum(axis=0)
    return np.where(count > 0, total / np.maximum(count, 1), np.nan)

"""What the viewer draws, as plain arrays: shafts, montages, display filters, decimation, heat-map rows.

No Panel or HoloViews here, so every rule the clinician sees (which contacts form a shaft, what a
bipolar row is, what a heat-map row averages) is testable on its own.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy import signal

from sss_viewer._validate import check_option

MONTAGES = ("monopolar", "average", "bipolar")
_CONTACT = re.compile(r"^(?P<shaft>.*?)(?P<number>\d+)$")


def shaft_name(channel: str) -> str:
    """The electrode shaft (or grid/strip) of a contact: ``LA1`` → ``LA``, ``A'12`` → ``A'``, ``G`` → ``G``."""
    match = _CONTACT.match(channel.strip())
    if not match or not match.group("shaft"):
        return channel.strip()
    return match.group("shaft").rstrip("-_ ")


def contact_number(channel: str) -> int | None:
    """The contact's number on its shaft (``LA12`` → 12), or None when the name ends in no digits."""
    match = _CONTACT.match(channel.strip())
    return int(match.group("number")) if match and match.group("shaft") else None


def group_by_shaft(channels: Sequence[str]) -> dict[str, list[int]]:
    """Channel indices per shaft, shafts in order of first appearance, contacts in the given order."""
    groups: dict[str, list[int]] = {}
    for i, name in enumerate(channels):
        groups.setdefault(shaft_name(name), []).append(i)
    return groups


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
    """The rows of montage ``kind`` over ``channels``.

    Bipolar pairs are neighbouring contacts of one shaft, in contact-number order (``LA1-LA2``,
    ``LA2-LA3``…); a shaft with one contact gives no bipolar row.
    """
    check_option("montage", kind, MONTAGES)
    channels = list(channels)
    if kind != "bipolar":
        suffix = "-avg" if kind == "average" else ""
        return MontageRows(
            [c + suffix for c in channels], [(i,) for i in range(len(channels))], [shaft_name(c) for c in channels], kind
        )
    labels, members, shafts = [], [], []
    for shaft, idx in group_by_shaft(channels).items():
        ordered = sorted(idx, key=lambda i: (contact_number(channels[i]) is None, contact_number(channels[i]) or 0, i))
        for a, b in zip(ordered[:-1], ordered[1:]):
            labels.append(f"{channels[a]}-{channels[b]}")
            members.append((a, b))
            shafts.append(shaft)
    return MontageRows(labels, members, shafts, kind)


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

    return np.asarray(MinMaxLTTBDownsampler().downsample(t, np.ascontiguousarray(y), n_out=max(n_out, 4)), dtype=np.int64)


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

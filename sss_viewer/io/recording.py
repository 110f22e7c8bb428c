"""The ``Recording`` type: one patient's multichannel iEEG run with its labels and events.

Every reader (MNE files, BIDS, the synthetic generator) produces a ``Recording``; every later
stage (preprocessing, scoring, the viewer) consumes one.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple

import numpy as np

from sss_viewer.io._channel_names import display_names

IEEG_CH_TYPES = ("ecog", "seeg", "dbs")
"""Channel types that SSS scores. Others (eeg, ecg, misc, stim …) are carried but not scored."""


def _is_signal_array(data) -> bool:
    """An ndarray, or a lazy reader with the ndarray attributes ``Recording`` relies on."""
    if isinstance(data, np.ndarray):
        return True
    return all(hasattr(data, attr) for attr in ("read", "shape", "ndim", "dtype"))


class Event(NamedTuple):
    """One annotation: ``onset`` and ``duration`` in seconds from the recording start."""

    onset: float
    duration: float
    description: str


@dataclass
class Recording:
    """A multichannel iEEG recording.

    Parameters
    ----------
    data : ndarray or LazySignals, shape (n_channels, n_times), float32
        Signals in microvolts. May be a read-only ``np.memmap``, or a
        ``sss_viewer.io._lazy.LazySignals`` that reads blocks from the file on demand (what
        ``read_recording`` returns by default); use :meth:`get_data` to read a block either way.
    sfreq : float
        Sampling rate in Hz (may be non-integer, e.g. 249.85).
    ch_names : list of str, length n_channels
        Unique channel names.
    ch_types : list of str, length n_channels
        Lower-case MNE channel types (``"ecog"``, ``"seeg"``, ``"eeg"``, ``"misc"`` …).
    soz : ndarray, shape (n_channels,), bool, optional
        Clinician seizure-onset-zone labels; ``None`` when unknown.
    events : list of Event
        Annotations (seizure onset/offset markers and others).
    subject, centre, run : str
        Metadata used for patient-level splits and per-centre reports.
    session : str
        BIDS session label, when read from a BIDS dataset.
    line_freq : float, optional
        Mains frequency (50 or 60 Hz) when known.
    bads : list of str
        Channels marked bad at the source; they are never scored.
    source : Path, optional
        The file this recording was read from.
    seizure_onset_s, seizure_offset_s : float, optional
        Clinical seizure onset / offset (s from the recording start) found in its events.
    info : dict
        Anything else a reader knows: clinical outcome, Engel/ILAE scores, SOZ names that match
        no channel (``"unmatched_soz"``), the event texts the seizure times came from, the SOZ
        label source.
    """

    data: np.ndarray
    sfreq: float
    ch_names: list[str]
    ch_types: list[str]
    soz: np.ndarray | None = None
    events: list[Event] = field(default_factory=list)
    subject: str = ""
    centre: str = ""
    run: str = ""
    line_freq: float | None = None
    bads: list[str] = field(default_factory=list)
    source: Path | None = None
    session: str = ""
    seizure_onset_s: float | None = None
    seizure_offset_s: float | None = None
    info: dict = field(default_factory=dict)

    def __post_init__(self) -> None:
        where = f" in {self.source}" if self.source else ""
        data = self.data
        if not _is_signal_array(data) or data.ndim != 2:
            shape = getattr(data, "shape", None)
            raise ValueError(f"Recording{where}: data must be a 2-D array (n_channels, n_times); got shape {shape}.")
        if data.dtype != np.float32:
            raise ValueError(f"Recording{where}: data must be float32; got {data.dtype}.")
        n_channels, n_times = data.shape
        if n_channels == 0 or n_times == 0:
            raise ValueError(f"Recording{where}: data is empty (shape {data.shape}).")
        sfreq = float(self.sfreq)
        if not np.isfinite(sfreq) or sfreq <= 0:
            raise ValueError(f"Recording{where}: sfreq must be a positive finite number of Hz; got {self.sfreq!r}.")
        self.sfreq = sfreq
        self.ch_names = [str(c) for c in self.ch_names]
        self.ch_types = [str(t).lower() for t in self.ch_types]
        for attr in ("ch_names", "ch_types"):
            if len(getattr(self, attr)) != n_channels:
                raise ValueError(
                    f"Recording{where}: {attr} has {len(getattr(self, attr))} entries but data has {n_channels} channels."
                )
        dupes = sorted({c for c in self.ch_names if self.ch_names.count(c) > 1})
        if dupes:
            raise ValueError(f"Recording{where}: duplicate channel names {dupes}.")
        if self.soz is not None:
            soz = np.asarray(self.soz)
            if soz.shape != (n_channels,):
                raise ValueError(f"Recording{where}: soz must have shape ({n_channels},); got {soz.shape}.")
            if soz.dtype != bool:
                if not np.isin(soz, (0, 1)).all():
                    raise ValueError(f"Recording{where}: soz labels must be 0/1 or bool.")
                soz = soz.astype(bool)
            self.soz = soz
        unknown_bads = sorted(set(self.bads) - set(self.ch_names))
        if unknown_bads:
            raise ValueError(f"Recording{where}: bad channels {unknown_bads} are not channel names.")
        self.events = [Event(float(e[0]), float(e[1]), str(e[2])) for e in self.events]

    @property
    def n_channels(self) -> int:
        """Number of channels."""
        return self.data.shape[0]

    @property
    def n_times(self) -> int:
        """Number of samples per channel."""
        return self.data.shape[1]

    @property
    def duration_s(self) -> float:
        """Length in seconds."""
        return self.n_times / self.sfreq

    @property
    def label(self) -> str:
        """A short human-readable identifier, e.g. ``"sub-pt01 run-01"``."""
        parts = [p for p in (self.subject and f"sub-{self.subject}", self.run and f"run-{self.run}") if p]
        return " ".join(parts) or (self.source.name if self.source else "recording")

    def ieeg_picks(self) -> np.ndarray:
        """Indices of good iEEG channels (types in ``IEEG_CH_TYPES``, not in ``bads``).

        Returns
        -------
        picks : ndarray, shape (n_picks,), int
        """
        bads = set(self.bads)
        return np.array(
            [i for i, (n, t) in enumerate(zip(self.ch_names, self.ch_types)) if t in IEEG_CH_TYPES and n not in bads],
            dtype=int,
        )

    @property
    def display_names(self) -> list[str]:
        """Channel names as a clinician reads them, for display only (same order as ``ch_names``).

        Vendor prefixes and reference suffixes removed (``POL G11``, ``EEG G11-Ref`` -> ``G11``);
        where two channels would read the same, both keep their original names. Data, exports and
        labels files keep using ``ch_names``. See ``sss_viewer.io._channel_conventions``.

        Returns
        -------
        names : list of str, length n_channels
        """
        return display_names(self.ch_names)

    @property
    def is_lazy(self) -> bool:
        """True when ``data`` is read from the file on demand rather than held in memory."""
        return not isinstance(self.data, np.ndarray)

    def get_data(self, picks=None, start: int = 0, stop: int | None = None) -> np.ndarray:
        """Read channels ``picks`` over samples ``[start, stop)`` into memory.

        Parameters
        ----------
        picks : array of int, optional
            Channel indices; all channels when None.
        start, stop : int
            Sample range; ``stop=None`` is the end.

        Returns
        -------
        data : ndarray, shape (n_picks, stop - start), float32 µV
        """
        stop = self.n_times if stop is None else stop
        rows = slice(None) if picks is None else np.asarray(picks, dtype=int)
        if self.is_lazy:
            return self.data.read(rows, start, stop)
        return np.asarray(self.data[rows, start:stop])

    def load(self) -> Recording:
        """A copy with ``data`` read fully into memory (itself when already in memory)."""
        if not self.is_lazy:
            return self
        return dataclasses.replace(self, data=np.asarray(self.data))

    def pick(self, picks: np.ndarray) -> Recording:
        """Return a new Recording restricted to the channel indices ``picks`` (data is sliced, not copied where possible)."""
        picks = np.asarray(picks, dtype=int)
        names = [self.ch_names[i] for i in picks]
        return dataclasses.replace(
            self,
            data=self.data[picks],
            ch_names=names,
            ch_types=[self.ch_types[i] for i in picks],
            soz=None if self.soz is None else self.soz[picks],
            bads=[b for b in self.bads if b in names],
        )

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

IEEG_CH_TYPES = ("ecog", "seeg", "dbs")
"""Channel types that SSS scores. Others (eeg, ecg, misc, stim …) are carried but not scored."""


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
    data : ndarray, shape (n_channels, n_times), float32
        Signals in microvolts. May be a read-only ``np.memmap``.
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
    line_freq : float, optional
        Mains frequency (50 or 60 Hz) when known.
    bads : list of str
        Channels marked bad at the source; they are never scored.
    source : Path, optional
        The file this recording was read from.
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

    def __post_init__(self) -> None:
        where = f" in {self.source}" if self.source else ""
        data = self.data
        if not isinstance(data, np.ndarray) or data.ndim != 2:
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

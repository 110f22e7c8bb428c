"""Clinical-style EDF files for tests: what a Nihon Kohden (or similar) export looks like without sidecars.

``write_clinical_edf`` writes, with MNE's EDF writer (``mne.export.export_raw``, edfio underneath):

* three intracranial electrodes, named the vendor's way: ``POL G1``..``POL G12``, ``POL LA1``..``POL LA8``,
  ``POL LH1``..``POL LH6`` (style ``"pol"``), or ``EEG G1-Ref``.. (style ``"ref"``);
* ``$G11`` and ``POL $G12``: Nihon Kohden copies of ``G11``/``G12`` (dropped at read time) and
  ``$LH7``, a ``$`` channel whose twin is absent (kept, typed misc);
* scalp electrodes (``Fp1 Fp2 C3 C4 Cz O1 O2 T3``, with the same prefix/suffix): typed eeg, not scored;
* ``EKG1``, ``POL EKG2``, ``POL DC01``, ``DC02``, ``TRIG``, a channel named ``POL``, the ``POL E``
  ground and the spare input ``X1``: none of them scored;
* annotations ``EEG SZ START`` / ``EEG SZ END`` and a free note; a rhythmic seizure on LA1–LA3
  from the onset; every channel typed ``eeg`` in the file (EDF states no types).

The signals are small (45 channels, ≤ 30 s at 256 Hz by default) and deterministic (``seed``).
No "several files per recording" variant: nothing in sss-viewer joins files into one recording.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import mne
import numpy as np

SHAFTS = {"G": 12, "LA": 8, "LH": 6}
"""Intracranial electrodes and their contact counts."""
SCALP = ("Fp1", "Fp2", "C3", "C4", "Cz", "O1", "O2", "T3")
SOZ = ("LA1", "LA2", "LA3")
"""Contacts carrying the simulated seizure (plain names, as a clinician writes them in a labels file)."""
UNITS = ("uV", "mV", "blank")


@dataclass(frozen=True)
class ClinicalEdf:
    """A written clinical-style EDF and what a correct reader must make of it.

    Attributes
    ----------
    path : Path
        The ``.edf`` file.
    scored : list of str
        Original names (as stored in the file, e.g. ``"POL G1"``) of the channels that must be
        scored, in file order: the 26 contacts of G, LA, LH.
    types : dict
        ``{original name: expected type}`` of every channel kept at read time (scored ones ``seeg``).
    dropped : list of str
        ``$`` duplicates that must be dropped at read time.
    display : dict
        ``{original name: display name}`` of the kept channels (``"POL G1"`` -> ``"G1"``).
    soz : list of str
        Plain names of the seizure contacts (``["LA1", "LA2", "LA3"]``).
    onset_s, offset_s : float
        Times of the ``EEG SZ START`` / ``EEG SZ END`` annotations.
    units : str
        How the contacts' amplitude unit is stated (see :func:`write_clinical_edf`).
    """

    path: Path
    scored: list[str]
    types: dict[str, str]
    dropped: list[str]
    display: dict[str, str]
    soz: list[str] = field(default_factory=lambda: list(SOZ))
    onset_s: float = 0.0
    offset_s: float = 0.0
    units: str = "uV"


def _contact(style: str, name: str) -> str:
    """A contact or scalp name as the vendor writes it."""
    return f"POL {name}" if style == "pol" else f"EEG {name}-Ref"


def _montage(style: str) -> list[tuple[str, str, str]]:
    """``(name in the file, expected type, display name)`` of every channel, in file order."""
    rows = [(_contact(style, f"{s}{k}"), "seeg", f"{s}{k}") for s, n in SHAFTS.items() for k in range(1, n + 1)]
    rows += [(_contact(style, s), "eeg", s) for s in SCALP]
    rows += [("$G11", "dropped", "$G11"), ("POL $G12", "dropped", "$G12"), ("$LH7", "misc", "$LH7")]
    rows += [
        ("EKG1", "ecg", "EKG1"),
        ("POL EKG2", "ecg", "EKG2"),
        ("POL DC01", "misc", "DC01"),
        ("DC02", "misc", "DC02"),
    ]
    rows += [("TRIG", "stim", "TRIG"), ("POL", "misc", "POL"), ("POL E", "misc", "E"), ("X1", "misc", "X1")]
    return rows


def _signals(names: list[str], sfreq: float, n_times: int, onset_s: float, offset_s: float, seed: int) -> np.ndarray:
    """Plausible signals in µV.

    Returns
    -------
    data : ndarray, shape (n_channels, n_times), float64 µV
    """
    rng = np.random.default_rng(seed)
    t = np.arange(n_times) / sfreq
    white = rng.standard_normal((len(names), n_times))
    spectrum = np.fft.rfft(white, axis=1) / np.sqrt(np.maximum(np.fft.rfftfreq(n_times, 1 / sfreq), 1.0))
    data = np.fft.irfft(spectrum, n=n_times, axis=1)
    data *= 30.0 / data.std(axis=1, keepdims=True)
    ictal = (t >= onset_s) & (t < offset_s)
    for k, contact in enumerate(SOZ):
        rows = [i for i, n in enumerate(names) if n.endswith(f" {contact}") or n.endswith(f" {contact}-Ref")]
        phase = 2 * np.pi * 5.0 * t - 0.3 * k
        data[rows] += np.where(ictal, 250.0 * np.sign(np.sin(phase)) * np.abs(np.sin(phase)) ** 4, 0.0)
    beats = (np.mod(t, 0.85) < 0.03).astype(float)
    for i, name in enumerate(names):
        if "EKG" in name:
            data[i] = 1200.0 * beats + 20.0 * rng.standard_normal(n_times)
        elif "DC0" in name:
            data[i] = 0.5e6 * (np.mod(t, 10.0) < 5.0)  # 0.5 V steps, in µV
        elif name == "TRIG":
            data[i] = 0.0
            data[i, (np.mod(t, 5.0) < 0.1)] = 1.0
        elif name == "X1":
            data[i] = 2.0 * rng.standard_normal(n_times)
    for duplicate, twin in (("$G11", "G11"), ("POL $G12", "G12")):
        source = next(i for i, n in enumerate(names) if n.split()[-1].removesuffix("-Ref") == twin)
        data[names.index(duplicate)] = data[source]
    return data


def _restate_units(path: Path, contacts: list[str], units: str) -> None:
    """Rewrite the contacts' physical dimension: ``"mV"`` (values converted) or ``"blank"`` (µV numbers, no unit)."""
    import edfio

    edf = edfio.read_edf(path)
    signals = []
    for signal in edf.signals:
        values, dimension = signal.data, signal.physical_dimension
        if signal.label in contacts:
            values, dimension = (values / 1000.0, "mV") if units == "mV" else (values, "")
        signals.append(
            edfio.EdfSignal(values, signal.sampling_frequency, label=signal.label, physical_dimension=dimension)
        )
    edfio.Edf(signals, recording=edf.recording, starttime=edf.starttime, annotations=edf.annotations).write(path)


def write_clinical_edf(
    folder: str | Path,
    *,
    name: str = "clinical.edf",
    style: str = "pol",
    units: str = "uV",
    duration_s: float = 30.0,
    sfreq: float = 256.0,
    onset_s: float = 12.0,
    offset_s: float = 24.0,
    seed: int = 0,
) -> ClinicalEdf:
    """Write a clinical-style EDF (no sidecars) and say which channels a correct reader scores.

    Parameters
    ----------
    folder : str or Path
        Where to write (e.g. pytest's ``tmp_path``); must exist.
    name : str
        File name, ending in ``.edf``.
    style : {"pol", "ref"}
        ``"pol"``: Nihon Kohden names (``POL G1``); ``"ref"``: ``EEG G1-Ref`` for contacts and scalp.
    units : {"uV", "mV", "blank"}
        Physical dimension of the contacts: ``"uV"`` (MNE's default), ``"mV"`` (values converted, so the
        file reads back to the same µV), ``"blank"`` (µV numbers with no unit: MNE reads them as volts,
        a million times too large, as some clinical exports do).
    duration_s, sfreq : float
        Length and rate (≥ 5 s for one window of the demo model at 250 Hz).
    onset_s, offset_s : float
        Seizure onset/offset: annotations ``EEG SZ START``/``EEG SZ END`` and the rhythm on LA1–LA3.
    seed : int

    Returns
    -------
    ClinicalEdf
        ``.path`` and ``.scored`` (original names that must be scored), plus the expected types,
        dropped duplicates and display names.
    """
    if style not in ("pol", "ref"):
        raise ValueError(f"style must be 'pol' or 'ref'; got {style!r}.")
    if units not in UNITS:
        raise ValueError(f"units must be one of {UNITS}; got {units!r}.")
    if not 2.0 < onset_s < offset_s < duration_s:
        raise ValueError(f"need 2 < onset_s < offset_s < duration_s; got {onset_s}, {offset_s}, {duration_s}.")
    path = Path(folder) / name
    rows = _montage(style)
    names = [r[0] for r in rows]
    n_times = int(round(duration_s * sfreq))
    data_uv = _signals(names, sfreq, n_times, onset_s, offset_s, seed)
    types = ["stim" if n == "TRIG" else "misc" if "DC0" in n else "eeg" for n in names]
    volts = np.array([1.0 if t == "stim" else 1e-6 for t in types])[:, None]
    raw = mne.io.RawArray(data_uv * volts, mne.create_info(names, sfreq, types), verbose="error")
    raw.set_annotations(
        mne.Annotations([2.0, onset_s, offset_s], [0.0, 0.0, 0.0], ["Patient moving", "EEG SZ START", "EEG SZ END"])
    )
    mne.export.export_raw(path, raw, fmt="edf", overwrite=True, verbose="error")
    scored = [r[0] for r in rows if r[1] == "seeg"]
    if units != "uV":
        _restate_units(path, scored, units)
    kept = [r for r in rows if r[1] != "dropped"]
    return ClinicalEdf(
        path=path,
        scored=scored,
        types={r[0]: r[1] for r in kept},
        dropped=[r[0] for r in rows if r[1] == "dropped"],
        display={r[0]: r[2] for r in kept},
        onset_s=onset_s,
        offset_s=offset_s,
        units=units,
    )

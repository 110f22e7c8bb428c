"""Write a small BIDS iEEG dataset shaped like OpenNeuro ds003029 from its real sidecars.

The real dataset (Li et al., "Neural fragility as an EEG marker of the seizure onset zone",
OpenNeuro ds003029) is 11 GB of BrainVision files. Its sidecars alone — ``participants.tsv``,
``participants.json``, ``dataset_description.json`` and, per run, ``_ieeg.json``,
``_channels.tsv``, ``_events.tsv`` plus the per-session ``_scans.tsv`` — are enough to rebuild a
tree with the same layout, channel names, channel types, ``status``, ``$``-prefixed duplicates,
non-integer sampling rates and event texts, with short synthetic signals in place of the real ones.
``write_ds003029_like`` does that, so the project's BIDS path can be tested without the download.

What is real and what is not:

* ``participants.tsv`` (rows of the chosen subjects), ``participants.json`` and
  ``dataset_description.json`` are copied verbatim.
* ``_channels.tsv`` rows are copied verbatim (a subset of rows when ``max_channels`` is given).
* ``_ieeg.json`` is the real sidecar with ``RecordingDuration`` set to the shortened duration and the
  ``*ChannelCount`` fields recounted from the kept rows.
* ``_events.tsv`` rows are the real ones with ``onset`` linearly rescaled from the real run duration
  to the short one and ``sample`` recomputed; every other cell (``trial_type`` …) is verbatim.
* ``_scans.tsv`` keeps the real rows of the written runs.
* ``_ieeg.vhdr/.vmrk/.eeg`` are written with ``pybv`` (float32, µV) at the real, often non-integer,
  sampling rate, channels in ``channels.tsv`` order. As in ds003029 (converted with mne-bids 0.4,
  which passed ``events_from_annotations`` ids to pybv) the ``.vmrk`` holds ``Stimulus`` markers whose
  number is the ``value`` column of ``events.tsv`` and a ``New Segment`` date from ``scans.tsv``
  ``acq_time``; the event *texts* live only in ``events.tsv``. ``markers="comment"`` writes the
  texts as ``Comment`` markers instead.
* ``sourcedata/clinical_data_summary.xlsx`` has one row per patient in the layout of the
  publication's clinical table (``dataset_id`` spelled ``pt1``/``ummc_001`` as there).
* The signals are synthetic. Each run uses the generators of ``sss_viewer.io.synthetic``: 1/f
  background with rhythms and benign distractors on every channel; on the seizure-onset-zone (SOZ)
  channels, a seizure (low-voltage fast activity evolving into rhythmic spike-wave) from the rescaled
  onset to the rescaled offset and interictal spike episodes before it (and after it where ≥ 2 s
  remain; over the whole run when the run has no onset marker); delayed seizure spread on some other
  good iEEG channels; line noise. Onset and offset are the markers ``find_seizure_markers`` picks.

Default selection (``DEFAULT_SUBJECTS``, first ``max_runs_per_subject`` runs of each):

* ``pt01`` (NIH, 1000 Hz) with its clinical SOZ ``AD1-4, ATT1,2, PD1-4``;
* ``jh101`` (JHH, 1000 Hz, 26 bad contacts, ``SZ EVENT #`` markers) — its SOZ shorthand names one
  contact that exists in no run of the subject (``UNMATCHED_SOZ_SUBJECT``);
* ``ummc008`` (UMMC) — run 01 at 249.85 Hz and run 02 at 999.41 Hz with different MISC channels;
* ``umf004`` (UMF, the only SEEG subject, 999.41 Hz);
* ``pt17`` (NIH, 2000 Hz, ``$AST1``/``$AST2`` duplicates; run 01 has no seizure marker at all);
* ``ummc001`` (UMMC, 499.71 Hz, outcome NR) — no SOZ (empty cell, ``NO_SOZ_SUBJECT``).

Determinism: every random draw comes from ``SeedSequence([seed, crc32(subject), key])`` (key 0 for the
SOZ choice, the run number for a run's signals), so a subject's files do not depend on which other
subjects are written, and the same arguments give byte-identical ``.eeg`` files.
"""

from __future__ import annotations

import json
import logging
import math
import re
import shutil
import zlib
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

import numpy as np
import pandas as pd

from sss_viewer._validate import check_option, check_positive_int, check_range
from sss_viewer.io.seizure_events import find_seizure_markers
from sss_viewer.io.soz_labels import expand_contacts, match_soz, write_clinical_summary
from sss_viewer.io.synthetic import (
    CENTRES,
    SynthConfig,
    SynthPatient,
    add_distractors,
    add_line_noise,
    add_segment,
    add_seizure,
    add_spectral_mimics,
    background,
    channel_parameters,
    episode_members,
    episode_segment,
    sample_distractor_budget,
)

logger = logging.getLogger(__name__)

__all__ = [
    "CLINICAL_COLUMNS",
    "CLINICAL_SUMMARY",
    "DEFAULT_SUBJECTS",
    "MANIFEST_NAME",
    "NO_SOZ_SUBJECT",
    "PT01_SOZ",
    "UNMATCHED_SOZ_SUBJECT",
    "clinical_dataset_id",
    "read_manifest",
    "write_ds003029_like",
]

SESSION = "presurgery"
"""The only ds003029 session label."""

DEFAULT_SUBJECTS = ("pt01", "jh101", "ummc008", "umf004", "pt17", "ummc001")
"""Subjects written by default: every centre, every sampling rate, ECoG and SEEG (see module doc)."""

PT01_SOZ = "AD1-4, ATT1,2, PD1-4"
"""The clinical SOZ of ds003029 ``pt01`` (the publication's clinical table)."""

UNMATCHED_SOZ_SUBJECT = "jh101"
"""With the default subjects, the subject whose SOZ shorthand names a contact absent from its runs."""

NO_SOZ_SUBJECT = "ummc001"
"""With the default subjects, the subject written with an empty SOZ cell."""

MANIFEST_NAME = "fixture_manifest.json"
"""File in ``out_root`` describing what was written (see ``write_ds003029_like``)."""

CLINICAL_SUMMARY = Path("sourcedata") / "clinical_data_summary.xlsx"
"""Clinical table, relative to ``out_root``."""

CLINICAL_COLUMNS = (
    "dataset_id",
    "clinical_center",
    "outcome",
    "engel_score",
    "ilae_score",
    "surgery_type",
    "soz_contacts",
)
"""Columns of ``clinical_data_summary.xlsx``, one row per patient."""

MARKER_STYLES = ("stimulus", "comment")
"""``.vmrk`` marker styles: ds003029's numeric ``Stimulus`` markers, or the event texts as ``Comment``."""

_IEEG_TYPES = ("ECOG", "SEEG")
_COUNT_KEYS = {
    "ECOG": "ECOGChannelCount",
    "SEEG": "SEEGChannelCount",
    "EEG": "EEGChannelCount",
    "EOG": "EOGChannelCount",
    "ECG": "ECGChannelCount",
    "EMG": "EMGChannelCount",
    "MISC": "MiscChannelCount",
    "TRIG": "TriggerChannelCount",
}
"""``channels.tsv`` type → ``_ieeg.json`` count field."""

_CONTACT = re.compile(r"^(?P<shaft>[A-Za-z][A-Za-z']*?)(?P<number>\d+)$")

_MIN_DURATION_S = 6.0
_DEFAULT_SEIZURE_FRACTION = 0.3
"""Seizure length, as a fraction of the time after onset, when a run has an onset but no offset marker."""


# --------------------------------------------------------------------------------------------
# Real sidecars
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Table:
    """A TSV file kept as text cells, so that rows are written back verbatim."""

    header: list[str]
    rows: list[list[str]]

    def column(self, name: str) -> list[str]:
        """The cells of column ``name`` (KeyError naming the file's columns when absent)."""
        if name not in self.header:
            raise KeyError(f"No column {name!r}; columns are {self.header}.")
        i = self.header.index(name)
        return [row[i] for row in self.rows]


def _read_tsv(path: Path) -> _Table:
    """Read a TSV file as text cells (no quoting, no NA conversion)."""
    lines = path.read_text(encoding="utf-8").splitlines()
    if not lines:
        raise ValueError(f"{path} is empty: expected a header line.")
    header = lines[0].split("\t")
    rows = [line.split("\t") for line in lines[1:] if line.strip()]
    bad = [i + 2 for i, row in enumerate(rows) if len(row) != len(header)]
    if bad:
        raise ValueError(f"{path}: lines {bad[:5]} do not have the {len(header)} cells of the header.")
    return _Table(header, rows)


def _write_tsv(path: Path, table: _Table) -> None:
    lines = ["\t".join(table.header), *("\t".join(row) for row in table.rows)]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


@dataclass(frozen=True)
class _RealRun:
    """The real sidecars of one ds003029 run."""

    subject: str
    run: str
    base: str  # sub-X_ses-presurgery_task-ictal_acq-ecog_run-01
    sidecar: dict
    channels: _Table
    events: _Table

    @property
    def sfreq(self) -> float:
        return float(self.sidecar["SamplingFrequency"])

    @property
    def duration_s(self) -> float:
        return float(self.sidecar["RecordingDuration"])

    @property
    def names(self) -> list[str]:
        return self.channels.column("name")

    @property
    def types(self) -> list[str]:
        return [t.upper() for t in self.channels.column("type")]

    @property
    def status(self) -> list[str]:
        if "status" not in self.channels.header:
            return ["good"] * len(self.channels.rows)
        return [s.lower() for s in self.channels.column("status")]


def _ieeg_folder(root: Path, subject: str) -> Path:
    return root / f"sub-{subject}" / f"ses-{SESSION}" / "ieeg"


def _scans_path(root: Path, subject: str) -> Path:
    return root / f"sub-{subject}" / f"ses-{SESSION}" / f"sub-{subject}_ses-{SESSION}_scans.tsv"


def _read_participants(meta_root: Path) -> _Table:
    path = meta_root / "participants.tsv"
    if not path.is_file():
        raise FileNotFoundError(
            f"{meta_root} has no participants.tsv: expected the ds003029 sidecar tree "
            "(participants.tsv, dataset_description.json, sub-*/ses-presurgery/ieeg/*_ieeg.json …)."
        )
    table = _read_tsv(path)
    for column in ("participant_id", "site"):
        table.column(column)  # raises a KeyError naming the columns
    return table


def _participant_rows(participants: _Table) -> dict[str, dict[str, str]]:
    """``{subject (without "sub-"): {column: cell}}`` of ``participants.tsv``."""
    out = {}
    for row in participants.rows:
        cells = dict(zip(participants.header, row))
        out[cells["participant_id"].removeprefix("sub-")] = cells
    return out


def _resolve_subjects(available: dict[str, dict[str, str]], subjects) -> list[str]:
    """Subject labels without ``sub-``, checked against ``participants.tsv``, in the given order."""
    chosen = list(DEFAULT_SUBJECTS if subjects is None else ([subjects] if isinstance(subjects, str) else subjects))
    chosen = [str(s).removeprefix("sub-") for s in chosen]
    if not chosen:
        raise ValueError("Invalid subjects=[]: expected at least one subject.")
    duplicates = sorted({s for s in chosen if chosen.count(s) > 1})
    if duplicates:
        raise ValueError(f"Invalid subjects: {duplicates} given more than once.")
    missing = [s for s in chosen if s not in available]
    if missing:
        raise ValueError(f"Subjects {missing} are not in participants.tsv; available: {', '.join(sorted(available))}.")
    return chosen


def _real_runs(meta_root: Path, subject: str) -> list[_RealRun]:
    """Every run of ``subject`` that has ``_ieeg.json``, ``_channels.tsv`` and ``_events.tsv``, by run."""
    folder = _ieeg_folder(meta_root, subject)
    runs = []
    for sidecar_path in sorted(folder.glob(f"sub-{subject}_ses-{SESSION}_*_ieeg.json")):
        base = sidecar_path.name[: -len("_ieeg.json")]
        match = re.search(r"_run-(\d+)", base)
        channels, events = folder / f"{base}_channels.tsv", folder / f"{base}_events.tsv"
        if match is None or not channels.is_file() or not events.is_file():
            logger.warning("Skipping %s: no run entity, channels.tsv or events.tsv.", sidecar_path)
            continue
        sidecar = json.loads(sidecar_path.read_text(encoding="utf-8"))
        for key in ("SamplingFrequency", "RecordingDuration"):
            if not isinstance(sidecar.get(key), int | float) or sidecar[key] <= 0:
                raise ValueError(f"{sidecar_path}: {key} must be a positive number, got {sidecar.get(key)!r}.")
        runs.append(_RealRun(subject, match.group(1), base, sidecar, _read_tsv(channels), _read_tsv(events)))
    if not runs:
        raise FileNotFoundError(f"No runs for sub-{subject} under {folder} (expected *_ieeg.json with sidecars).")
    return sorted(runs, key=lambda r: int(r.run))


# --------------------------------------------------------------------------------------------
# SOZ shorthand
# --------------------------------------------------------------------------------------------


def _good_ieeg(run: _RealRun) -> list[str]:
    """Good ECoG/SEEG contacts (no ``$`` duplicates), in file order."""
    return [
        name
        for name, kind, status in zip(run.names, run.types, run.status)
        if kind in _IEEG_TYPES and status == "good" and not name.startswith("$")
    ]


def _contiguous_blocks(names: list[str]) -> list[tuple[str, list[int]]]:
    """Runs of consecutive contact numbers per shaft, in order of first appearance.

    Returns
    -------
    blocks : list of (shaft, numbers)
    """
    shafts: dict[str, list[int]] = {}
    for name in names:
        match = _CONTACT.match(name)
        if match:
            shafts.setdefault(match["shaft"], []).append(int(match["number"]))
    blocks = []
    for shaft, numbers in shafts.items():
        numbers = sorted(set(numbers))
        start = 0
        for i in range(1, len(numbers) + 1):
            if i == len(numbers) or numbers[i] != numbers[i - 1] + 1:
                blocks.append((shaft, numbers[start:i]))
                start = i
    return blocks


def _auto_soz(rng: np.random.Generator, good: list[str]) -> tuple[str, list[int]]:
    """Pick 2–4 contiguous good contacts on one shaft; prefer shafts with ≥ 4 contiguous contacts.

    Returns
    -------
    shaft : str
    numbers : list of int
    """
    blocks = [b for b in _contiguous_blocks(good) if len(b[1]) >= 2]
    if not blocks:
        raise ValueError("No shaft with two contiguous good ECOG/SEEG contacts to place a SOZ on.")
    long_blocks = [b for b in blocks if len(b[1]) >= 4] or blocks
    shaft, numbers = long_blocks[int(rng.integers(len(long_blocks)))]
    count = int(rng.integers(2, min(4, len(numbers)) + 1))
    start = int(rng.integers(0, len(numbers) - count + 1))
    return shaft, numbers[start : start + count]


def _shorthand(shaft: str, numbers: list[int]) -> str:
    return f"{shaft}{numbers[0]}-{numbers[-1]}" if len(numbers) > 1 else f"{shaft}{numbers[0]}"


def _absent_contact(shaft: str, runs: list[_RealRun]) -> str:
    """A contact name on ``shaft`` that no run of the subject has (one past its highest number)."""
    present = sorted({name for run in runs for name in run.names})
    numbers = [int(m["number"]) for m in map(_CONTACT.match, present) if m and m["shaft"] == shaft]
    number = max(numbers, default=0) + 1
    while not match_soz(present, [f"{shaft}{number}"])[1]:  # matched after all (case, zero padding)
        number += 1
    return f"{shaft}{number}"


def _subject_rng(seed: int, subject: str, key: int) -> np.random.Generator:
    return np.random.default_rng(_subject_seeds(seed, subject, key))


def _subject_seeds(seed: int, subject: str, key: int) -> np.random.SeedSequence:
    """Seeds of ``subject``: key 0 for its SOZ choice, the run number for a run's signals."""
    return np.random.SeedSequence([seed, zlib.crc32(subject.encode("utf-8")), key])


def _default_soz(
    subjects: list[str], runs: dict[str, list[_RealRun]], all_runs: dict[str, list[_RealRun]], seed: int
) -> dict[str, str]:
    """SOZ shorthand per subject by the documented rules (see ``write_ds003029_like``).

    ``runs`` are the runs to write (the SOZ lies on good contacts common to them); ``all_runs`` every
    real run (the absent contact is absent from all of them).
    """
    auto = [s for s in subjects if s != "pt01"]
    out = {}
    for subject in subjects:
        if subject == "pt01":
            out[subject] = PT01_SOZ
            continue
        if len(subjects) >= 4 and subject == auto[-1]:
            out[subject] = ""
            continue
        good = [set(_good_ieeg(run)) for run in runs[subject]]
        common = [name for name in _good_ieeg(runs[subject][0]) if all(name in g for g in good)]
        shaft, numbers = _auto_soz(_subject_rng(seed, subject, 0), common)
        text = _shorthand(shaft, numbers)
        if subject == auto[0]:
            text += f", {_absent_contact(shaft, all_runs[subject])}"
        out[subject] = text
    return out


# --------------------------------------------------------------------------------------------
# Channel subset
# --------------------------------------------------------------------------------------------


def _select_channels(run: _RealRun, soz: np.ndarray, max_channels: int | None) -> list[int]:
    """Rows of ``channels.tsv`` to keep, in file order.

    Always kept: the SOZ contacts and every ``$`` channel. Then up to ``max_channels // 10`` other
    MISC channels and ``max_channels // 8`` bad iEEG contacts (at least one of each when present),
    then good iEEG contacts — SOZ shafts first, then file order, so that shafts stay contiguous —
    and, if still short, whatever rows remain.

    Parameters
    ----------
    run : _RealRun
    soz : ndarray, shape (n_real_channels,), bool
        SOZ contacts among the real rows.
    max_channels : int or None

    Returns
    -------
    rows : list of int
    """
    n = len(run.names)
    if max_channels is None or max_channels >= n:
        return list(range(n))
    names, types, status = run.names, run.types, run.status
    required = [i for i in range(n) if soz[i] or names[i].startswith("$")]
    if len(required) > max_channels:
        raise ValueError(
            f"max_channels={max_channels} is smaller than the {len(required)} SOZ and '$' channels "
            f"of sub-{run.subject} run-{run.run} that must be kept."
        )
    keep = set(required)
    misc = [i for i in range(n) if i not in keep and types[i] not in _IEEG_TYPES]
    bad = [i for i in range(n) if i not in keep and types[i] in _IEEG_TYPES and status[i] != "good"]
    soz_shafts = {m["shaft"] for i in np.flatnonzero(soz) if (m := _CONTACT.match(names[i]))}
    good = [i for i in range(n) if i not in keep and types[i] in _IEEG_TYPES and status[i] == "good"]
    on_soz_shaft = [i for i in good if (m := _CONTACT.match(names[i])) and m["shaft"] in soz_shafts]
    good = on_soz_shaft + [i for i in good if i not in on_soz_shaft]
    for pool, quota in ((misc, max(1, max_channels // 10)), (bad, max(1, max_channels // 8)), (good, n), (range(n), n)):
        for i in [i for i in pool if i not in keep][:quota]:
            if len(keep) >= max_channels:
                break
            keep.add(i)
    return sorted(keep)


def _subset_channels(run: _RealRun, rows: list[int]) -> _Table:
    """The kept ``channels.tsv`` rows, with ``sampling_frequency`` checked against ``_ieeg.json``."""
    table = _Table(list(run.channels.header), [list(run.channels.rows[i]) for i in rows])
    if "sampling_frequency" in table.header:
        col = table.header.index("sampling_frequency")
        for row in table.rows:
            try:
                consistent = math.isclose(float(row[col]), run.sfreq, rel_tol=1e-9)
            except ValueError:
                consistent = False
            if not consistent:
                logger.warning(
                    "%s channel %s: sampling_frequency %s differs from SamplingFrequency %r; writing the latter.",
                    run.base, row[0], row[col], run.sfreq,
                )  # fmt: skip
                row[col] = repr(run.sfreq)
    return table


# --------------------------------------------------------------------------------------------
# Timing
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Timing:
    """Short-run timing: ``n_times`` samples at the real rate and the rescaled seizure."""

    n_times: int
    duration_s: float  # RecordingDuration = (n_times - 1) / sfreq, as mne-bids writes it
    scale: float  # short / real duration
    onset_s: float | None
    offset_s: float | None
    onset_marker: str | None
    offset_marker: str | None


def _timing(run: _RealRun, duration_s: float) -> _Timing:
    """Shortened duration and the rescaled seizure of ``run`` (markers chosen by ``find_seizure_markers``)."""
    n_times = int(round(duration_s * run.sfreq)) + 1
    short = (n_times - 1) / run.sfreq
    scale = short / run.duration_s
    onsets = [float(x) for x in run.events.column("onset")]
    table = pd.DataFrame({"onset": onsets, "trial_type": run.events.column("trial_type")})
    markers = find_seizure_markers(table, source=f"{run.base}_events.tsv")
    if markers.onset_s is None:  # no onset: no seizure (an offset alone is ignored here)
        return _Timing(n_times, short, scale, None, None, None, None)
    onset_s = min(markers.onset_s * scale, short)
    if markers.offset_s is not None:
        offset_s = min(markers.offset_s * scale, short)
    else:
        offset_s = onset_s + _DEFAULT_SEIZURE_FRACTION * (short - onset_s)
    return _Timing(n_times, short, scale, onset_s, offset_s, markers.onset_text, markers.offset_text)


def _rescaled_events(run: _RealRun, timing: _Timing) -> _Table:
    """``events.tsv`` with ``onset`` rescaled to the short run and ``sample`` recomputed; other cells verbatim."""
    header = list(run.events.header)
    i_onset = header.index("onset")
    i_sample = header.index("sample") if "sample" in header else None
    rows = []
    for row in run.events.rows:
        row = list(row)
        onset = min(max(float(row[i_onset]) * timing.scale, 0.0), timing.duration_s)
        row[i_onset] = repr(round(onset, 6))
        if i_sample is not None:
            row[i_sample] = str(min(int(round(onset * run.sfreq)), timing.n_times - 1))
        rows.append(row)
    return _Table(header, rows)


def _markers(events: _Table, sfreq: float, n_times: int, style: str) -> list[dict]:
    """pybv markers for the rescaled events (``Stimulus`` with the ``value`` number, or ``Comment`` text)."""
    values = events.column("value") if "value" in events.header else [""] * len(events.rows)
    markers = []
    for onset, value, text in zip(events.column("onset"), values, events.column("trial_type")):
        sample = min(int(round(float(onset) * sfreq)), n_times - 1)
        if style == "stimulus" and re.fullmatch(r"\d+", value.strip()):
            markers.append({"onset": sample, "duration": 1, "description": int(value), "type": "Stimulus"})
        else:  # BrainVision codes commas in descriptions as "\1"
            markers.append({"onset": sample, "duration": 1, "description": text.replace(",", r"\1"), "type": "Comment"})
    return markers


# --------------------------------------------------------------------------------------------
# Signals
# --------------------------------------------------------------------------------------------


def _fixture_config(config: SynthConfig | None) -> SynthConfig:
    """The synthetic-cohort settings; shorter spike episodes than the default so they fit short runs."""
    if config is not None:
        return config
    return SynthConfig(episode_duration_s=(1.0, 3.0), spike_rate_hz=(1.0, 2.5))


def _patient(
    rng: np.random.Generator,
    run: _RealRun,
    centre: str,
    names: list[str],
    types: list[str],
    status: list[str],
    soz: np.ndarray,
    config: SynthConfig,
) -> SynthPatient:
    """Per-channel parameters for one run's montage, drawn from ``config`` like the synthetic cohort.

    MISC channels get no distractors; seizure spread goes only to good non-SOZ iEEG contacts.
    """
    n = len(names)
    ieeg = np.array([t in _IEEG_TYPES for t in types])
    good = np.array([s == "good" for s in status])
    key = centre if centre in config.centre_amplitude_uv else CENTRES[0]
    candidates = np.flatnonzero(ieeg & good & ~soz)
    n_spread = int(round(len(candidates) * rng.uniform(*config.spread_fraction)))
    spread = np.zeros(n, dtype=bool)
    spread[rng.choice(candidates, size=n_spread, replace=False)] = True
    budget = sample_distractor_budget(rng, soz, config)
    budget[~ieeg] = 0.0
    acquisition = "seeg" if "SEEG" in types else "ecog"
    return SynthPatient(
        subject=run.subject,
        centre=key,
        sfreq=run.sfreq,
        line_freq=float(run.sidecar.get("PowerLineFrequency") or 60.0),
        acquisition=acquisition,
        durations_s=[],
        ch_names=list(names),
        soz=soz,
        shaft_of=np.zeros(n, dtype=int),
        **channel_parameters(rng, config, key, n),
        spread=spread,
        distractor_budget=budget,
    )


def _interictal_windows(timing: _Timing) -> list[tuple[float, float]]:
    """Where interictal spikes go: before and after the seizure (≥ 2 s each), or anywhere without one."""
    total = timing.duration_s
    if timing.onset_s is None:
        return [(0.5, total - 0.5)]
    windows = [(0.5, timing.onset_s - 1.0), (timing.offset_s + 1.0, total - 0.5)]
    return [(a, b) for a, b in windows if b - a >= 2.0]


def _episode_times(
    rng: np.random.Generator, windows: list[tuple[float, float]], length_s: tuple[float, float]
) -> list[tuple[float, float]]:
    """One episode per ≈ 4 s slot of each window, of random length (≤ 80 % of the slot) and position.

    Returns
    -------
    episodes : list of (onset_s, offset_s), sorted
    """
    episodes = []
    for start, stop in windows:
        n_slots = max(1, int((stop - start) // 4.0))
        slot = (stop - start) / n_slots
        for k in range(n_slots):
            length = min(rng.uniform(*length_s), 0.8 * slot)
            onset = start + k * slot + rng.uniform(0.0, slot - length)
            episodes.append((onset, onset + length))
    return episodes


def _add_interictal(
    rng: np.random.Generator,
    data: np.ndarray,
    patient: SynthPatient,
    config: SynthConfig,
    windows: list[tuple[float, float]],
) -> list[tuple[float, float]]:
    """Add interictal spike episodes, shared by (most of) the SOZ channels, in ``windows``, in place.

    Returns
    -------
    episodes : list of (onset_s, offset_s)
    """
    soz = np.flatnonzero(patient.soz)
    episodes = _episode_times(rng, windows, config.episode_duration_s)
    for (onset, offset), member in zip(episodes, episode_members(rng, len(soz), len(episodes))):
        channels = soz[member]
        segment = episode_segment(rng, patient, channels, offset - onset, config)
        for row, ch in enumerate(channels):
            add_segment(data, int(ch), int(onset * patient.sfreq), segment[row])
    return episodes


def _synthesise(
    seeds: np.random.SeedSequence, patient: SynthPatient, timing: _Timing, config: SynthConfig
) -> tuple[np.ndarray, list[tuple[float, float]]]:
    """The run's signals in µV, with the synthetic cohort's generators.

    Returns
    -------
    data : ndarray, shape (n_channels, n_times), float32
    episodes : list of (onset_s, offset_s)
        Interictal spike episodes on the SOZ channels.
    """
    noise_ss, distractor_ss, seizure_ss, episode_ss, mimic_ss, line_ss = seeds.spawn(6)
    data = background(np.random.default_rng(noise_ss), patient, timing.n_times, config)
    add_distractors(np.random.default_rng(distractor_ss), data, patient, config)
    has_soz = bool(patient.soz.any())
    seizure_s = 0.0
    if has_soz and timing.onset_s is not None and timing.offset_s - timing.onset_s > 1.0:
        add_seizure(np.random.default_rng(seizure_ss), data, patient, config, (timing.onset_s, timing.offset_s))
        seizure_s = timing.offset_s - timing.onset_s
    episodes = []
    windows = _interictal_windows(timing)
    if has_soz and windows:
        episodes = _add_interictal(np.random.default_rng(episode_ss), data, patient, config, windows)
    add_spectral_mimics(np.random.default_rng(mimic_ss), data, patient, config, seizure_s)
    data *= patient.amplitude_uv[:, None].astype(np.float32)
    add_line_noise(np.random.default_rng(line_ss), data, patient)
    return data, episodes


# --------------------------------------------------------------------------------------------
# Writing
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Settings:
    out_root: Path
    duration_s: float
    max_channels: int | None
    seed: int
    config: SynthConfig
    markers: str


def _meas_date(acq_time: str | None) -> datetime | None:
    if not acq_time or acq_time == "n/a":
        return None
    try:
        return datetime.fromisoformat(acq_time)
    except ValueError:
        logger.warning("Ignoring unparseable acq_time %r.", acq_time)
        return None


def _short_sidecar(run: _RealRun, timing: _Timing, types: list[str]) -> dict:
    """The real ``_ieeg.json`` with the short ``RecordingDuration`` and recounted channel counts."""
    sidecar = dict(run.sidecar)
    sidecar["RecordingDuration"] = timing.duration_s
    for kind, key in _COUNT_KEYS.items():
        if key in sidecar or kind in types:
            sidecar[key] = types.count(kind)
    return sidecar


def _write_run(run: _RealRun, soz_names: list[str], centre: str, acq_time: str | None, settings: _Settings) -> dict:
    """Write one run (signals and sidecars); return its manifest entry."""
    from pybv import write_brainvision

    real_soz, _ = match_soz(run.names, soz_names)
    rows = _select_channels(run, real_soz, settings.max_channels)
    channels = _subset_channels(run, rows)
    names = channels.column("name")
    types = [t.upper() for t in channels.column("type")]
    status = [s.lower() for s in channels.column("status")] if "status" in channels.header else ["good"] * len(names)
    soz = real_soz[rows]
    timing = _timing(run, settings.duration_s)
    events = _rescaled_events(run, timing)

    seeds = _subject_seeds(settings.seed, run.subject, int(run.run))
    patient_ss, signal_ss = seeds.spawn(2)
    patient = _patient(np.random.default_rng(patient_ss), run, centre, names, types, status, soz, settings.config)
    data, episodes = _synthesise(signal_ss, patient, timing, settings.config)

    folder = _ieeg_folder(settings.out_root, run.subject)
    folder.mkdir(parents=True, exist_ok=True)
    write_brainvision(
        data=data.astype(np.float64) * 1e-6,
        sfreq=run.sfreq,
        ch_names=names,
        fname_base=f"{run.base}_ieeg",
        folder_out=folder,
        events=_markers(events, run.sfreq, timing.n_times, settings.markers) or None,
        resolution=1.0,
        unit="µV",
        fmt="binary_float32",
        meas_date=_meas_date(acq_time),
        overwrite=True,
    )
    _write_tsv(folder / f"{run.base}_channels.tsv", channels)
    _write_tsv(folder / f"{run.base}_events.tsv", events)
    sidecar = _short_sidecar(run, timing, types)
    (folder / f"{run.base}_ieeg.json").write_text(json.dumps(sidecar, indent=4, ensure_ascii=False), encoding="utf-8")
    logger.info(
        "sub-%s run-%s: %d of %d channels (%d SOZ), %.3f s of %.3f s at %r Hz, seizure %s",
        run.subject, run.run, len(names), len(run.names), int(soz.sum()), timing.duration_s, run.duration_s,
        run.sfreq, "none" if timing.onset_s is None else f"{timing.onset_s:.2f}–{timing.offset_s:.2f} s",
    )  # fmt: skip
    vhdr = folder / f"{run.base}_ieeg.vhdr"
    return {
        "run": run.run,
        "vhdr": vhdr.relative_to(settings.out_root).as_posix(),
        "sfreq": run.sfreq,
        "n_times": timing.n_times,
        "duration_s": timing.duration_s,
        "real_duration_s": run.duration_s,
        "n_channels": len(names),
        "n_real_channels": len(run.names),
        "channels": names,
        "bad_channels": [n for n, s in zip(names, status) if s != "good"],
        "soz_channels": [n for n, is_soz in zip(names, soz) if is_soz],
        "seizure_onset_s": timing.onset_s,
        "seizure_offset_s": timing.offset_s,
        "onset_marker": timing.onset_marker,
        "offset_marker": timing.offset_marker,
        "interictal_episodes_s": [[round(a, 4), round(b, 4)] for a, b in episodes],
    }


def _write_scans(meta_root: Path, out_root: Path, subject: str, written: list[str]) -> dict[str, str | None]:
    """``scans.tsv`` with the real rows of the written runs; returns ``{vhdr filename: acq_time}``."""
    source = _scans_path(meta_root, subject)
    filenames = [f"ieeg/{Path(v).name}" for v in written]
    if source.is_file():
        real = _read_tsv(source)
        rows = [row for row in real.rows if row[real.header.index("filename")] in filenames]
        header = real.header
    else:
        logger.warning("sub-%s has no scans.tsv in %s; writing one without acq_time.", subject, meta_root)
        header, rows = ["filename", "acq_time"], []
    present = {row[header.index("filename")] for row in rows}
    for name in filenames:
        if name not in present:
            logger.warning("sub-%s: scans.tsv has no row for %s; adding one with n/a cells.", subject, name)
            rows.append([name] + ["n/a"] * (len(header) - 1))
    target = _scans_path(out_root, subject)
    target.parent.mkdir(parents=True, exist_ok=True)
    _write_tsv(target, _Table(header, rows))
    times = {}
    for row in rows:
        cells = dict(zip(header, row))
        times[Path(cells["filename"]).name] = cells.get("acq_time")
    return times


def _write_participants(meta_root: Path, out_root: Path, participants: _Table, subjects: list[str]) -> None:
    """``participants.tsv`` rows of ``subjects`` (real order), ``participants.json``, ``dataset_description.json``."""
    ids = {f"sub-{s}" for s in subjects}
    rows = [row for row in participants.rows if row[participants.header.index("participant_id")] in ids]
    _write_tsv(out_root / "participants.tsv", _Table(participants.header, rows))
    for name in ("participants.json", "dataset_description.json"):
        source = meta_root / name
        if source.is_file():
            shutil.copyfile(source, out_root / name)
        else:
            logger.warning("%s has no %s; not written.", meta_root, name)


def clinical_dataset_id(subject: str) -> str:
    """The ``dataset_id`` spelling of the publication's clinical table.

    ``pt01`` → ``pt1`` (number without zero padding), ``ummc001`` → ``ummc_001``; others unchanged.
    """
    match = re.fullmatch(r"pt0*(\d+)", subject)
    if match:
        return f"pt{int(match.group(1))}"
    match = re.fullmatch(r"ummc(\d+)", subject)
    if match:
        return f"ummc_{match.group(1)}"
    return subject


def _score(cell: str) -> float | int | None:
    """A participants.tsv score cell as a number (int when integral); ``n/a`` → None."""
    try:
        value = float(cell)
    except ValueError:
        return None
    return int(value) if value.is_integer() else value


def _clinical_rows(participants: dict[str, dict[str, str]], subjects: list[str], soz: dict[str, str]) -> pd.DataFrame:
    """One row per patient in ``CLINICAL_COLUMNS``."""
    rows = []
    for subject in subjects:
        cells = participants[subject]
        outcome = cells.get("outcome", "n/a")
        rows.append(
            {
                "dataset_id": clinical_dataset_id(subject),
                "clinical_center": cells["site"].lower(),
                "outcome": None if outcome == "n/a" else outcome,
                "engel_score": _score(cells.get("engel_score", "n/a")),
                "ilae_score": _score(cells.get("ilae_score", "n/a")),
                "surgery_type": None,
                "soz_contacts": soz[subject] or None,
            }
        )
    return pd.DataFrame(rows, columns=list(CLINICAL_COLUMNS))


def _write_subject(
    meta_root: Path,
    subject: str,
    participant: dict[str, str],
    runs: list[_RealRun],
    all_runs: list[_RealRun],
    soz: str,
    settings: _Settings,
) -> dict:
    """Write ``scans.tsv`` and the runs of one subject; return its manifest entry."""
    soz_names = expand_contacts(soz)
    _, unmatched = match_soz(sorted({name for run in all_runs for name in run.names}), soz_names)
    scans = _write_scans(meta_root, settings.out_root, subject, [f"{r.base}_ieeg.vhdr" for r in runs])
    centre = participant["site"].upper()
    entries = [_write_run(run, soz_names, centre, scans.get(f"{run.base}_ieeg.vhdr"), settings) for run in runs]
    return {
        "subject": subject,
        "site": participant["site"],
        "dataset_id": clinical_dataset_id(subject),
        "soz_contacts": soz,
        "soz_matched": [n for n in soz_names if n not in unmatched],
        "soz_unmatched": unmatched,
        "runs": entries,
    }


def _check_soz_overrides(soz_contacts: dict | None, subjects: list[str]) -> dict[str, str]:
    if soz_contacts is None:
        return {}
    overrides = {str(k).removeprefix("sub-"): ("" if v is None else str(v)) for k, v in soz_contacts.items()}
    unknown = sorted(set(overrides) - set(subjects))
    if unknown:
        raise ValueError(f"soz_contacts names subjects {unknown} that are not written (subjects: {subjects}).")
    for text in overrides.values():
        expand_contacts(text)  # parse errors surface here, before anything is written
    return overrides


def write_ds003029_like(
    meta_root: str | Path,
    out_root: str | Path,
    *,
    subjects: list[str] | tuple[str, ...] | None = None,
    max_runs_per_subject: int = 2,
    duration_s: float = 24.0,
    max_channels: int | None = None,
    seed: int = 0,
    soz_contacts: dict[str, str] | None = None,
    config: SynthConfig | None = None,
    markers: str = "stimulus",
) -> Path:
    """Write a small BIDS iEEG dataset mirroring ds003029 from its real sidecars (see module doc).

    Layout under ``out_root``::

        dataset_description.json, participants.tsv, participants.json   (real; rows of the subjects)
        fixture_manifest.json                                           (what was written)
        sourcedata/clinical_data_summary.xlsx                           (one row per patient)
        sub-<id>/ses-presurgery/sub-<id>_ses-presurgery_scans.tsv
        sub-<id>/ses-presurgery/ieeg/sub-<id>_ses-presurgery_task-ictal_acq-<ecog|seeg>_run-<NN>_
            {ieeg.vhdr, ieeg.vmrk, ieeg.eeg, ieeg.json, channels.tsv, events.tsv}

    Parameters
    ----------
    meta_root : str or Path
        The real ds003029 sidecar tree (``participants.tsv``, ``sub-*/ses-presurgery/…``).
    out_root : str or Path
        Output folder (created; files of the same names are overwritten).
    subjects : sequence of str, optional
        Subject labels (``"pt01"`` or ``"sub-pt01"``); default ``DEFAULT_SUBJECTS``.
    max_runs_per_subject : int
        The first runs (by run number) written per subject.
    duration_s : float
        Length of every written run (≥ 6 s); event onsets are rescaled from the real duration.
    max_channels : int, optional
        Cap on the channels per run (``None``: all real channels). SOZ contacts and ``$`` channels
        are always kept, with a few MISC and bad channels; see ``_select_channels``.
    seed : int
        Non-negative seed of the SOZ choice and the signals.
    soz_contacts : dict, optional
        ``{subject: shorthand}`` (e.g. ``"AD1-4, ATT1,2"``; ``""`` for no SOZ) overriding the defaults:
        ``pt01`` gets ``PT01_SOZ``; every other subject 2–4 contiguous good contacts of one shaft
        (common to its written runs) drawn from ``seed``; the first of those subjects also names one
        contact absent from all its runs (default subjects: ``UNMATCHED_SOZ_SUBJECT``); with four or
        more subjects the last non-``pt01`` one has no SOZ (default subjects: ``NO_SOZ_SUBJECT``).
    config : SynthConfig, optional
        Signal settings (default: the synthetic cohort's, with 1–3 s spike episodes).
    markers : {"stimulus", "comment"}
        ``.vmrk`` markers: numeric ``Stimulus`` markers from ``events.tsv`` ``value`` (as in ds003029)
        or the ``trial_type`` texts as ``Comment`` markers.

    Returns
    -------
    out_root : Path
        ``out_root / MANIFEST_NAME`` lists, per subject, the site, ``dataset_id``, SOZ shorthand,
        matched and unmatched SOZ contacts and, per run, the ``.vhdr`` path, rate, sample count,
        durations (short and real), channels, bad and SOZ channels, rescaled seizure onset/offset and
        their marker texts, and the interictal spike episodes.
    """
    meta_root, out_root = Path(meta_root), Path(out_root)
    check_positive_int("max_runs_per_subject", max_runs_per_subject)
    check_range("duration_s", float(duration_s), _MIN_DURATION_S, None)
    if max_channels is not None:
        check_positive_int("max_channels", max_channels)
    if isinstance(seed, bool) or not isinstance(seed, int | np.integer) or seed < 0:
        raise ValueError(f"Invalid seed={seed!r}: expected a non-negative integer.")
    check_option("markers", markers, MARKER_STYLES)

    participants = _read_participants(meta_root)
    by_subject = _participant_rows(participants)
    chosen = _resolve_subjects(by_subject, subjects)
    overrides = _check_soz_overrides(soz_contacts, chosen)
    all_runs = {s: _real_runs(meta_root, s) for s in chosen}
    runs = {s: all_runs[s][:max_runs_per_subject] for s in chosen}
    soz = {**_default_soz(chosen, runs, all_runs, int(seed)), **overrides}

    out_root.mkdir(parents=True, exist_ok=True)
    settings = _Settings(out_root, float(duration_s), max_channels, int(seed), _fixture_config(config), markers)
    _write_participants(meta_root, out_root, participants, chosen)
    manifest_subjects = [
        _write_subject(meta_root, s, by_subject[s], runs[s], all_runs[s], soz[s], settings) for s in chosen
    ]
    (out_root / CLINICAL_SUMMARY).parent.mkdir(parents=True, exist_ok=True)
    write_clinical_summary(_clinical_rows(by_subject, chosen, soz), out_root / CLINICAL_SUMMARY)
    manifest = {
        "generator": "sss_viewer.io.bids_fixture.write_ds003029_like",
        "source": "OpenNeuro ds003029 sidecars (synthetic signals)",
        "seed": int(seed),
        "duration_s": float(duration_s),
        "max_runs_per_subject": max_runs_per_subject,
        "max_channels": max_channels,
        "markers": markers,
        "clinical_summary": CLINICAL_SUMMARY.as_posix(),
        "config": settings.config.to_dict(),
        "subjects": manifest_subjects,
    }
    (out_root / MANIFEST_NAME).write_text(json.dumps(manifest, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    logger.info("Wrote %d subjects, %d runs to %s", len(chosen), sum(len(r) for r in runs.values()), out_root)
    return out_root


def read_manifest(root: str | Path) -> dict:
    """The ``fixture_manifest.json`` of a tree written by ``write_ds003029_like``."""
    path = Path(root) / MANIFEST_NAME
    if not path.is_file():
        raise FileNotFoundError(f"{root} has no {MANIFEST_NAME}: not written by write_ds003029_like.")
    return json.loads(path.read_text(encoding="utf-8"))


"""Clinical channel-naming conventions: types from names, ``$`` duplicates, display names.

Clinical exports (Nihon Kohden, Natus, Micromed … written as EDF/BDF, BrainVision or EEGLAB)
rarely state channel types: MNE reads every EDF/BrainVision channel as ``eeg``. Without this module
``EKG1``, ``DC01``, a ``POL`` channel or the ``E`` ground would be scored as iEEG. Every reader path
(``read_recording`` for EDF/BDF/BrainVision/FIF/EEGLAB/NumPy, hence the BIDS reader, the CLI, the
API and the viewer) resolves types through :func:`resolve_channel_types`, so the rules live here only.

Which channels the rules touch
------------------------------
Only channels whose type the file does not state: MNE's generic ``eeg`` (all EDF/BrainVision
channels) or ``misc``. A type stated by a BIDS ``_channels.tsv`` always wins, and so does a specific
type stored in the file (``seeg``/``ecog``/``ecg`` in a FIF). Rules only ever move a channel *away*
from scoring; afterwards, when the file states no iEEG type at all, the remaining ``eeg`` channels
become iEEG candidates (``seeg``), as before.

Names are matched after :func:`display_name` (vendor prefix and reference suffix removed,
``POL EKG1`` and ``EKG1-Ref`` read as ``EKG1``), upper-cased, as a whole (see :data:`NAME_RULES`).

Scalp electrodes (:func:`scalp_channels`)
-----------------------------------------
Intracranial exports often carry a few scalp electrodes (``Fp1``, ``C3``, ``Cz``, ``O1``, ``T3`` …):
they are typed ``eeg`` (kept, displayed, not scored). But ``C3``, ``T3``, ``P4``, ``FP1`` and ``A1``
are also ordinary contact names of intracranial electrodes ``C``, ``T``, ``P``, ``FP``, ``A`` (the
ds003029 sidecars hold thousands of ``C<n>`` ECoG contacts), so a 10-20 name is read as scalp only
when the file has a scalp montage and the electrode has no other contacts:

* midline names ``Fpz Fz Cz Pz Oz`` are always scalp: no intracranial contact is numbered ``z``;
* a lateral 10-20 name (``Fp1 Fp2 F3 F4 F7 F8 C3 C4 T3–T8 P3 P4 P7 P8 O1 O2 A1 A2 M1 M2``) is scalp
  when every channel with its letters is a 10-20 name (``C3`` next to ``C1``…``C8`` is a contact)
  and the file has a scalp montage: a midline name, or such names from at least three regions.

``$`` duplicates (:func:`duplicate_channels`)
---------------------------------------------
Nihon Kohden writes ``$G11`` as a copy of ``G11``. A ``$`` channel is dropped when its twin (same
name without ``$``, compared with :func:`sss_viewer.io.soz_labels.channel_key`) is in the file: the
twin carries the same signal. A ``$`` channel without a twin is kept (its data may be the only copy)
but typed ``misc`` unless the file states its type, so it is never scored by accident. In a BIDS
run, a ``$`` channel listed in ``_channels.tsv`` is dropped even without its twin: that is the
ds003029 convention (all 148 ``$`` channels of its 106 runs are MISC copies of a listed contact),
and BIDS fixtures subsample contacts.

Display and label matching (:func:`display_name`)
-------------------------------------------------
Vendor prefixes (``POL ``, ``EEG ``, ``SEEG ``, ``ECOG ``, ``IEEG ``) and reference suffixes
(``-Ref``, ``-REF``, ``-Org``, `` Ref``, ``_ref``) are removed for display and for matching SOZ
labels; ``Recording.ch_names``, the data and every export keep the original names.
"""

from __future__ import annotations

import dataclasses
import logging
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, NamedTuple

from sss_viewer.io._channel_names import channel_key, display_name
from sss_viewer.io.recording import IEEG_CH_TYPES

if TYPE_CHECKING:
    from sss_viewer.io.recording import Recording

logger = logging.getLogger(__name__)

GENERIC_TYPES = ("eeg", "misc")
"""MNE types that do not state what a channel records: EDF and BrainVision channels are all ``eeg``."""

CHANNEL_TYPES = (
    "seeg",
    "ecog",
    "dbs",
    "eeg",
    "ecg",
    "eog",
    "emg",
    "misc",
    "stim",
    "resp",
    "bio",
    "temperature",
    "gsr",
)
"""Lower-case MNE channel types a recording may carry (and :func:`apply_type_overrides` accepts)."""

TYPE_ALIASES = {"ekg": "ecg", "trig": "stim", "ref": "misc", "other": "misc", "audio": "misc", "pupil": "misc"}
"""BIDS channel types (lower-cased) whose MNE name differs."""


class NameRule(NamedTuple):
    """One row of :data:`NAME_RULES`: names fully matching ``pattern`` get ``ch_type``."""

    ch_type: str
    pattern: str
    reason: str


_SEP = r"(?:\d*|[LR]|[\s_+\-].*)"  # EKG, EKG1, EKGL, "ECG II", "EMG-chin"

NAME_RULES: tuple[NameRule, ...] = (
    NameRule("misc", r"\s*", "empty or blank name: nothing says what it records"),
    NameRule("misc", r"POL|EEG|SEEG|ECOG|IEEG", "only a vendor prefix (Nihon Kohden's 'POL' channel): no contact"),
    NameRule("misc", r"\$.*", "'$' copy of a contact whose twin is absent: kept, never scored"),
    NameRule("ecg", rf"(?:ECG|EKG){_SEP}", "electrocardiogram (EKG1, EKG2, EKGL, ECG II)"),
    NameRule("emg", rf"EMG{_SEP}", "electromyogram"),
    NameRule("eog", rf"(?:EOG|HEOG|VEOG){_SEP}|LOC|ROC", "electro-oculogram (LOC/ROC: outer canthi)"),
    NameRule("misc", r"DC\d+", "Nihon Kohden DC inputs (DC01-DC16): auxiliary voltages, not brain signal"),
    NameRule(
        "stim",
        r"TRIG(?:GER)?\d*|STIM?|STI\s*\d{3}|STATUS|EVENTS?|(?:EDF\s+)?ANNOTATIONS?|MARKERS?",
        "trigger, status or event line (BDF 'Status', MNE 'STI 014', Nihon Kohden 'EVENT')",
    ),
    NameRule("resp", r"RESP.*|PNEUMO.*|AIRFLOW|NASAL", "respiration"),
    NameRule("bio", r"SPO2|SAO2|PLETH.*|PR|PULSE.*|OXIMET.*|HR", "oximetry, pulse and heart rate"),
    NameRule("temperature", r"TEMP(?:ERATURE)?\d*", "temperature probe"),
    NameRule("gsr", r"GSR|EDA", "skin conductance"),
    NameRule("misc", r"REF\d*|GND\d*|GROUND|E|COM|CMS|DRL", "reference or ground electrode (Nihon Kohden's 'E')"),
    NameRule("misc", r"PHOTIC.*|PHOTO", "photic stimulator marker"),
    NameRule("misc", r"X\d+", "Nihon Kohden spare inputs X1..Xn (curated ds003029 runs mark them bad)"),
)
"""Name rules, first match wins; patterns match the whole upper-cased :func:`display_name`.

Anything no rule matches (and that is not a scalp electrode, see the module docstring) stays an
iEEG candidate. Contact names (letters, optional ``'``, digits: ``G11``, ``LA3``, ``A'2``) never
match: every rule needs a whole non-contact word or a reserved prefix (``EKG``, ``DC``, ``X``).
"""

_COMPILED = tuple((rule, re.compile(rule.pattern)) for rule in NAME_RULES)

SCALP_MIDLINE = frozenset({"FPZ", "FZ", "CZ", "PZ", "OZ"})
"""10-20 midline electrodes: never the name of an intracranial contact."""
SCALP_LATERAL = {
    "FP": {1, 2},
    "F": {3, 4, 7, 8},
    "C": {3, 4},
    "T": {3, 4, 5, 6, 7, 8},
    "P": {3, 4, 7, 8},
    "O": {1, 2},
    "A": {1, 2},
    "M": {1, 2},
}
"""10-20 lateral electrodes by letters (T7/T8, P7/P8 are the 10-10 names of T3/T4, T5/T6; A/M: ears, mastoids)."""
_SCALP_REGION = {"FP": "FP", "F": "F", "C": "C", "T": "T", "P": "P", "O": "O", "A": "EAR", "M": "EAR"}
_CONTACT = re.compile(r"^([A-Z']+?)(\d+)$")


def rule_for(name: str) -> NameRule | None:
    """The first row of :data:`NAME_RULES` that ``name`` matches (after :func:`display_name`), or None."""
    key = display_name(name).upper() if str(name).strip() else ""
    for rule, pattern in _COMPILED:
        if pattern.fullmatch(key):
            return rule
    return None


def infer_type(name: str) -> str | None:
    """The channel type that ``name`` alone implies (:data:`NAME_RULES`), or None (an iEEG candidate).

    Scalp electrodes depend on the other channels of the file: see :func:`scalp_channels`.
    """
    rule = rule_for(name)
    return None if rule is None else rule.ch_type


def _scalp_parts(name: str) -> tuple[str, str] | None:
    """``(letters, number or 'Z')`` of a 10-20 name (``"Fp1"`` -> ``("FP", "1")``), else None."""
    key = display_name(name).upper()
    if key in SCALP_MIDLINE:
        return key[:-1], "Z"
    match = _CONTACT.match(key)
    if match and match[1] in SCALP_LATERAL and int(match[2]) in SCALP_LATERAL[match[1]]:
        return match[1], match[2]
    return None


def scalp_channels(names: Sequence[str]) -> list[str]:
    """The channels of one file that are scalp 10-20 electrodes (rules in the module docstring).

    Parameters
    ----------
    names : sequence of str
        All channel names of the file.

    Returns
    -------
    scalp : list of str
        Original names, in file order.
    """
    letters_of: dict[str, set[str]] = {}
    for name in names:
        match = _CONTACT.match(display_name(name).upper())
        if match:
            letters_of.setdefault(match[1], set()).add(match[2])
    clean = {
        letters
        for letters, numbers in letters_of.items()
        if letters in SCALP_LATERAL and all(int(n) in SCALP_LATERAL[letters] for n in numbers)
    }
    parts = {name: _scalp_parts(name) for name in names}
    lateral = [n for n, p in parts.items() if p is not None and p[1] != "Z" and p[0] in clean]
    has_midline = any(p is not None and p[1] == "Z" for p in parts.values())
    regions = {_SCALP_REGION[parts[n][0]] for n in lateral}
    montage = has_midline or len(regions) >= 3
    return [n for n in names if (p := parts[n]) is not None and (p[1] == "Z" or (montage and n in lateral))]


# ---------------------------------------------------------------------------- $ duplicates


def duplicate_channels(names: Sequence[str], listed: Iterable[str] = ()) -> list[str]:
    """``$``-prefixed channels to drop: those whose twin (the same name without ``$``) is in the file.

    Parameters
    ----------
    names : sequence of str
        The file's channel names.
    listed : iterable of str
        Names listed in a BIDS ``_channels.tsv``; a ``$`` channel among them is dropped even
        without its twin (see the module docstring).

    Returns
    -------
    duplicates : list of str
        In file order; other ``$`` channels are kept.
    """
    listed = set(listed)
    plain = {channel_key(n) for n in names if not display_name(n).startswith("$")}
    return [
        n
        for n in names
        if display_name(n).startswith("$") and (n in listed or channel_key(display_name(n)[1:]) in plain)
    ]


# ---------------------------------------------------------------------------- resolution


@dataclasses.dataclass(frozen=True)
class ResolvedTypes:
    """What :func:`resolve_channel_types` decided for one file.

    Attributes
    ----------
    types : list of str, length n_channels
        Final lower-case MNE types.
    inferred : dict
        ``{name: type}`` of the channels typed by a name rule or as scalp electrodes.
    promoted : int
        How many generic ``eeg`` channels became iEEG candidates (``seeg``).
    """

    types: list[str]
    inferred: dict[str, str]
    promoted: int


def resolve_channel_types(
    names: Sequence[str], types: Sequence[str], stated: Sequence[bool] | None = None
) -> ResolvedTypes:
    """Channel types of one file, from what the file states and, where it states nothing, the names.

    Parameters
    ----------
    names : sequence of str, length n_channels
    types : sequence of str, length n_channels
        MNE types as read (after a BIDS sidecar's types were applied).
    stated : sequence of bool, length n_channels, optional
        True where a sidecar gave the type: never changed by a name. Default: none.

    Returns
    -------
    ResolvedTypes
        A channel whose type is stated (by the sidecar, or a type other than ``eeg``/``misc``) keeps
        it; others take the type of :func:`infer_type` or :func:`scalp_channels` (``eeg``) when one
        applies. Then, when no channel is ecog/seeg/dbs, the ``eeg`` channels that no rule typed
        become ``seeg`` (clinical exports type every channel ``eeg``).
    """
    names = [str(n) for n in names]
    types = [str(t).lower() for t in types]
    stated = [False] * len(names) if stated is None else list(stated)
    if not len(names) == len(types) == len(stated):
        raise ValueError(f"names, types and stated differ in length: {len(names)}, {len(types)}, {len(stated)}.")
    open_ = [not s and t in GENERIC_TYPES for s, t in zip(stated, types, strict=True)]
    scalp = set(scalp_channels(names))
    inferred: dict[str, str] = {}
    for i, name in enumerate(names):
        if not open_[i]:
            continue
        kind = infer_type(name) or ("eeg" if name in scalp else None)
        if kind is not None:
            inferred[name] = kind
            types[i] = kind
    promoted = 0
    if not any(t in IEEG_CH_TYPES for t in types):
        for i, name in enumerate(names):
            if types[i] == "eeg" and name not in inferred:
                types[i] = "seeg"
                promoted += 1
    return ResolvedTypes(types, inferred, promoted)


# ---------------------------------------------------------------------------- user corrections


def apply_type_overrides(recording: Recording, overrides: Mapping[str, str]) -> Recording:
    """A copy of ``recording`` with some channel types set by the user (e.g. a clinician in the viewer).

    Parameters
    ----------
    recording : Recording
    overrides : mapping of str to str
        ``{channel: type}``; a channel is its original name (``"POL G11"``) or its display name
        (``"G11"``, see ``Recording.display_names``); a type is one of :data:`CHANNEL_TYPES`, any
        case, or a BIDS alias (``EKG``, ``TRIG``).

    Returns
    -------
    recording : Recording
        New (``dataclasses.replace``; data shared, not copied) with ``ch_types`` changed and
        ``info["type_overrides"]`` holding every override applied so far (original names).
        Scoring follows the types: only ecog/seeg/dbs channels are scored.

    Raises
    ------
    ValueError
        A channel that is not in the recording, or a type that is not allowed (one line naming
        the channel and the allowed types).
    """
    by_display = dict(zip(recording.display_names, recording.ch_names, strict=True))
    index = {name: i for i, name in enumerate(recording.ch_names)}
    types = list(recording.ch_types)
    applied = dict(recording.info.get("type_overrides", {}))
    for channel, ch_type in overrides.items():
        name = channel if channel in index else by_display.get(channel)
        if name is None:
            raise ValueError(f"Cannot set the type of channel {channel!r}: it is not a channel of {recording.label}.")
        kind = str(ch_type).strip().lower()
        kind = TYPE_ALIASES.get(kind, kind)
        if kind not in CHANNEL_TYPES:
            raise ValueError(
                f"Cannot set channel {channel!r} to type {ch_type!r}: allowed types are {', '.join(CHANNEL_TYPES)}."
            )
        types[index[name]] = kind
        applied[name] = kind
    return dataclasses.replace(recording, ch_types=types, info={**recording.info, "type_overrides": applied})

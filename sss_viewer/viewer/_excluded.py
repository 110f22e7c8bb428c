"""Why a channel of a recording is not a scored row of the trace view, in the viewer's words.

Marked-bad contacts, ECG/DC/EMG/trigger/spare inputs, ``$`` copies and scalp electrodes are never
scored; the trace view shows them greyed after the scored contacts (monopolar) and lists them under
the traces with the reason from :func:`excluded_channels`, so no channel vanishes unexplained.
No Panel or HoloViews here.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from sss_viewer.io._channel_conventions import rule_for
from sss_viewer.io.recording import Recording
from sss_viewer.viewer._display import group_by_shaft

EXCLUDED_COLOUR = "#a8a8a8"
"""Trace colour of a channel that is shown but not scored (light grey)."""
EXCLUDED_HEADING = "Not shown / not scored:"
"""The start of the line under the traces that lists every excluded channel with its reason."""
BAD_FILE = "bad (file)"
BAD_MARKED = "bad (marked)"
NOT_SCORED = "not scored"

_MISC_KINDS = {
    r"DC\d+": "dc",
    r"\$.*": "$ copy",
    r"POL|EEG|SEEG|ECOG|IEEG": "no contact name",
    r"\s*": "no name",
    r"REF\d*|GND\d*|GROUND|E|COM|CMS|DRL": "reference/ground",
    r"X\d+": "spare input",
    r"PHOTIC.*|PHOTO": "photic",
}
"""Short names of what a ``misc`` channel is, by the :data:`~sss_viewer.io._channel_conventions.NAME_RULES`
pattern that typed it (a pattern not listed here reads as its type)."""


def channel_kind(name: str, ch_type: str) -> str:
    """What a non-iEEG channel records, in one or two words: ``ecg``, ``dc``, ``$ copy``, ``stim`` …

    Parameters
    ----------
    name : str
        The channel's name as stored (``POL DC01``).
    ch_type : str
        Its lower-case MNE type (``misc``).

    Returns
    -------
    kind : str
        The type, made more precise by the name rule that typed the channel where the type is ``misc``
        (``POL DC01`` → ``dc``, ``$LH7`` → ``$ copy``).
    """
    rule = rule_for(name)
    if ch_type == "misc" and rule is not None and rule.ch_type == "misc":
        return _MISC_KINDS.get(rule.pattern, ch_type)
    return ch_type


def exclusion_reason(name: str, ch_type: str, *, file_bad: bool, marked_bad: bool) -> str:
    """The reason a channel is not a scored row: ``bad (file)``, ``bad (marked)`` or ``<kind> — not scored``.

    Parameters
    ----------
    name : str
    ch_type : str
        Lower-case MNE type.
    file_bad : bool
        Marked bad in the file (``Recording.bads``); wins over the other reasons.
    marked_bad : bool
        Marked bad in the viewer (its ``bad_channels``).

    Returns
    -------
    reason : str
    """
    if file_bad:
        return BAD_FILE
    if marked_bad:
        return BAD_MARKED
    return f"{channel_kind(name, ch_type)} — {NOT_SCORED}"


def excluded_channels(recording: Recording, bad_channels: Iterable[str], shown: Sequence[str]) -> dict[str, str]:
    """``{channel: reason}`` of every channel of ``recording`` that is not among the ``shown`` (scored) rows.

    Parameters
    ----------
    recording : Recording
    bad_channels : iterable of str
        Channels marked bad in the viewer.
    shown : sequence of str
        The channels the view shows as ordinary rows (its contacts).

    Returns
    -------
    excluded : dict of str to str
        Original names; bad contacts first, then the other channels, each group by shaft in
        contact-number order (:func:`~sss_viewer.viewer._display.group_by_shaft`).
    """
    marked, file_bads, kept = set(bad_channels), set(recording.bads), set(shown)
    reasons = {
        name: exclusion_reason(name, ch_type, file_bad=name in file_bads, marked_bad=name in marked)
        for name, ch_type in zip(recording.ch_names, recording.ch_types, strict=True)
        if name not in kept
    }
    names = list(reasons)
    ordered = [names[i] for idx in group_by_shaft(names).values() for i in idx]
    ordered.sort(key=lambda n: reasons[n] not in (BAD_FILE, BAD_MARKED))  # stable: bad contacts first
    return {name: reasons[name] for name in ordered}


def excluded_text(excluded: dict[str, str], display: dict[str, str] | None = None) -> str:
    """The line under the traces: ``Not shown / not scored: LA2: bad (marked) · EKG1: ecg — not scored``.

    Parameters
    ----------
    excluded : dict of str to str
        ``{channel: reason}`` from :func:`excluded_channels`.
    display : dict of str to str, optional
        ``{channel: name as shown}`` (vendor prefixes removed).

    Returns
    -------
    text : str
        Empty when nothing is excluded.
    """
    if not excluded:
        return ""
    display = display or {}
    items = " · ".join(f"{display.get(name, name)}: {reason}" for name, reason in excluded.items())
    return f"{EXCLUDED_HEADING} {items}"

"""Channel names as clinicians read them and as labels are matched: the one naming rule of the package.

``display_name`` strips vendor prefixes and reference suffixes (``POL G11``, ``EEG G11-Ref`` →
``G11``); ``channel_key`` is the form in which SOZ labels and channel names are compared (also
case, whitespace, leading zeros and typographic apostrophes). Pure string functions: every other
module of :mod:`sss_viewer.io` may import them.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

__all__ = ["APOSTROPHES", "channel_key", "contact_number", "display_name", "display_names", "shaft_name"]

_VENDOR_PREFIX = re.compile(r"^(?:POL|EEG|SEEG|ECOG|IEEG)\s+(?=\S)", re.IGNORECASE)
_REF_SUFFIX = re.compile(r"(?<=\S)(?:\s*-\s*|\s+|_)(?:REF|ORG)$", re.IGNORECASE)
_CONTACT = re.compile(r"^(?P<shaft>.*?)(?P<number>\d+)$")
APOSTROPHES = str.maketrans({"\u2019": "'", "\u2018": "'", "\u2032": "'", "`": "'"})
"""Typographic apostrophes and primes read as ``'`` (contact names such as ``A'1``)."""


def display_name(name: str) -> str:
    """A channel name as a clinician reads it: vendor prefix and reference suffix removed.

    Parameters
    ----------
    name : str
        The name stored in the file (``"POL G11"``, ``"EEG G11-Ref"``, ``"G11 Ref"``).

    Returns
    -------
    name : str
        ``"G11"`` for all three; surrounding whitespace removed; a name that would become empty
        (``"POL"``, ``"Ref"``) is returned stripped but otherwise unchanged. ``$`` is kept.
    """
    text = str(name).strip()
    stripped = _REF_SUFFIX.sub("", _VENDOR_PREFIX.sub("", text)).strip()
    return stripped or text


def display_names(names: Sequence[str]) -> list[str]:
    """:func:`display_name` of each channel, keeping the original names where two would collide.

    Parameters
    ----------
    names : sequence of str, length n_channels

    Returns
    -------
    display : list of str, length n_channels
        Same order. Channels whose display names coincide (ignoring case), such as ``POL G11`` and
        ``EEG G11-Ref`` in one file, keep their original names so that no two rows read the same.
    """
    shown = [display_name(n) for n in names]
    folded = [s.casefold() for s in shown]
    counts: dict[str, int] = {}
    for key in folded:
        counts[key] = counts.get(key, 0) + 1
    result = [str(n) if counts[key] > 1 else s for n, s, key in zip(names, shown, folded, strict=True)]
    if len({r.casefold() for r in result}) < len(result):
        return [str(n) for n in names]
    return result


# ---------------------------------------------------------------------------- types from names


def channel_key(name: str) -> str:
    """The form in which SOZ names and channel names are compared.

    Parameters
    ----------
    name : str
        A channel or contact name.

    Returns
    -------
    key : str
        Without vendor prefix and reference suffix (``display_name``), whitespace and leading zeros
        of numbers, upper-case, typographic apostrophes as ``'`` (``" att 01"`` -> ``"ATT1"``,
        ``"a’1"`` -> ``"A'1"``, ``"POL G11"`` and ``"EEG G11-Ref"`` -> ``"G11"``).
    """
    key = re.sub(r"\s+", "", display_name(name.translate(APOSTROPHES))).upper()
    return re.sub(r"\d+", lambda m: str(int(m.group())), key)


def _contact_match(channel: str) -> re.Match | None:
    """``_CONTACT`` on ``channel`` with its reference suffix removed (``EEG LA2-Ref`` read as ``EEG LA2``)."""
    text = channel.strip()
    return _CONTACT.match(_REF_SUFFIX.sub("", text).strip() or text)


def shaft_name(channel: str) -> str:
    """The electrode shaft (or grid/strip) of a contact: ``LA1`` → ``LA``, ``A'12`` → ``A'``, ``G`` → ``G``.

    The name as given, less a reference suffix (``POL LA1`` → ``POL LA``, ``EEG LA2-Ref`` → ``EEG LA``;
    pass :func:`display_name`'s form to ignore the vendor prefix too); a name ending in no digits is
    its own shaft.
    """
    match = _contact_match(channel)
    if not match or not match.group("shaft"):
        return channel.strip()
    return match.group("shaft").rstrip("-_ ")


def contact_number(channel: str) -> int | None:
    """The contact's number on its shaft (``LA12``, ``POL LA12``, ``EEG LA12-Ref`` → 12), or None when it has none."""
    match = _contact_match(channel)
    return int(match.group("number")) if match and match.group("shaft") else None

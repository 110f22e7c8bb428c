"""Whether a FIF file's chain of tags runs to its end: a file cut short is told by its own bytes.

MNE notices a cut FIF only by warning (``Invalid tag with only 0/16 bytes …``) and then reads the
tags it found as a shorter recording. A warning is process-wide state: it is not raised at all while
MNE's one logger is above WARNING (a site's ``MNE_LOGGING_LEVEL=error``, or another thread's
``verbose="error"`` call at that moment), and another thread's ``warnings.catch_warnings`` can take it
from the reader. So the reader also walks the tags itself, as MNE's own scan does (each tag: kind,
type, size and the next tag's position, 16 big-endian bytes, then ``size`` bytes of data), and
refuses a file whose chain runs past its end.

Internal to the reader (:mod:`sss_viewer.io.readers`): not part of the public API.
"""

from __future__ import annotations

import struct
from pathlib import Path

TAG_HEADER = struct.Struct(">iIii")
"""A FIF tag's header: kind, type, data size in bytes, position of the next tag."""
NEXT_SEQUENTIAL = 0
"""``next`` of a tag followed directly by the next one (FIFFV_NEXT_SEQ)."""


def fif_cut_short(path: Path) -> str | None:
    """Why the tags of the FIF file ``path`` do not fit in it, or None when every tag does.

    Follows the chain from byte 0 as MNE's scan does: a tag whose ``next`` is 0 is followed by the
    next one directly, a positive ``next`` is the next tag's position, -1 ends the chain. Every tag's
    16-byte header and its data must lie inside the file. A chain that jumps backwards is not judged
    here (not a cut file: MNE says what it makes of it).

    Parameters
    ----------
    path : Path
        An uncompressed ``.fif`` file (a ``.fif.gz`` ends in gzip's own error when cut).

    Returns
    -------
    str or None
        The first tag that does not fit, with the file's size, in words.
    """
    size = path.stat().st_size
    position = 0
    with path.open("rb") as fid:
        while True:
            fid.seek(position)
            header = fid.read(TAG_HEADER.size)
            if len(header) < TAG_HEADER.size:
                return (
                    f"the tag at byte {position} has only {len(header)} of its {TAG_HEADER.size} header bytes "
                    f"(the file ends at byte {size})"
                )
            _kind, _type, data_size, following = TAG_HEADER.unpack(header)
            data_end = position + TAG_HEADER.size + data_size
            if data_size < 0 or data_end > size:
                return (
                    f"the tag at byte {position} states {data_size} bytes of data, up to byte {data_end} "
                    f"(the file ends at byte {size})"
                )
            if following == NEXT_SEQUENTIAL:
                following = data_end
            elif following < 0:
                return None  # the last tag
            if following <= position:
                return None
            position = following

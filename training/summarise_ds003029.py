"""Summarise the ds003029 sidecars into the small per-centre table the synthetic generator reads.

Reads only BIDS metadata (no signals) from a local copy of OpenNeuro ds003029:

- ``participants.tsv``: ``site`` column → centre (JHH, NIH, UMMC, UMF);
- per run ``*_channels.tsv``: good ECOG/SEEG channels (``status == good``, names not starting with
  ``$``) and their shaft prefixes (``LAF`` in ``LAF3``);
- per run ``*_ieeg.json``: ``SamplingFrequency``, ``RecordingDuration``, ``PowerLineFrequency``;
- per run ``*_events.tsv``: the seizure onset/offset markers (free text that differs per centre).

and writes ``sss_viewer/data/ds003029_centres.json`` (a few KB). Usage::

    python training/summarise_ds003029.py [--root ../shared/data/ds003029-meta] [--out PATH]
"""

from __future__ import annotations

import argparse
import json
import logging
import re
from collections import Counter
from pathlib import Path

import pandas as pd

logger = logging.getLogger("summarise_ds003029")

CENTRES = ("JHH", "NIH", "UMMC", "UMF")
IEEG_TYPES = ("ECOG", "SEEG")
DEFAULT_ROOT = Path(__file__).resolve().parents[2] / "shared" / "data" / "ds003029-meta"
DEFAULT_OUT = Path(__file__).resolve().parents[1] / "sss_viewer" / "data" / "ds003029_centres.json"

ONSET_RE = re.compile(r"^(sz event.*|sz onset|eeg sz start|onset)$", re.IGNORECASE)
"""Seizure-onset marker wording seen in ds003029 (JHH ``SZ EVENT # (PB SZ)``, NIH ``onset``, …)."""
OFFSET_RE = re.compile(r"^(z electrographic end|sz offset|eeg sz end|offset)$", re.IGNORECASE)
"""Seizure-offset marker wording seen in ds003029."""
SHAFT_RE = re.compile(r"^([A-Za-z']+?)(\d+)$")


def good_ieeg_channels(channels_tsv: Path) -> pd.DataFrame:
    """Return the rows of a ``_channels.tsv`` that are good ECOG/SEEG contacts.

    Parameters
    ----------
    channels_tsv : Path
        A BIDS ``*_channels.tsv`` file.

    Returns
    -------
    channels : DataFrame, shape (n_good, n_columns)
        Rows with type ECOG/SEEG, ``status == good`` and a name not starting with ``$``.
    """
    df = pd.read_csv(channels_tsv, sep="\t", dtype=str, keep_default_na=False)
    keep = df["type"].str.upper().isin(IEEG_TYPES) & (df["status"].str.lower() == "good")
    keep &= ~df["name"].str.startswith("$")
    return df[keep]


def shaft_sizes(names: list[str]) -> dict[str, int]:
    """Map each shaft prefix to its highest contact number (``["LA1", "LA8"]`` → ``{"LA": 8}``)."""
    sizes: dict[str, int] = {}
    for name in names:
        match = SHAFT_RE.match(name)
        if match:
            prefix, number = match.group(1), int(match.group(2))
            sizes[prefix] = max(sizes.get(prefix, 0), number)
    return sizes


def seizure_markers(events_tsv: Path) -> tuple[list[tuple[float, str]], list[tuple[float, str]]]:
    """Return the (onset_s, wording) of seizure-onset and seizure-offset markers of one run."""
    if not events_tsv.exists():
        return [], []
    df = pd.read_csv(events_tsv, sep="\t", dtype={"trial_type": str}, keep_default_na=False)
    onsets, offsets = [], []
    for onset, text in zip(df["onset"], df["trial_type"]):
        text = str(text).strip()
        if ONSET_RE.match(text):
            onsets.append((float(onset), text))
        elif OFFSET_RE.match(text):
            offsets.append((float(onset), text))
    return onsets, offsets


def summarise_run(ieeg_json: Path) -> dict:
    """Summarise one run from its ``_ieeg.json`` and the sibling channels/events sidecars."""
    prefix = str(ieeg_json)[: -len("_ieeg.json")]
    meta = json.loads(ieeg_json.read_text())
    channels = good_ieeg_channels(Path(prefix + "_channels.tsv"))
    onsets, offsets = seizure_markers(Path(prefix + "_events.tsv"))
    types = Counter(channels["type"].str.lower())
    return {
        "n_good_channels": int(len(channels)),
        "duration_s": round(float(meta["RecordingDuration"]), 3),
        "sfreq_hz": round(float(meta["SamplingFrequency"]), 6),
        "line_freq_hz": float(meta["PowerLineFrequency"]),
        "acquisition": types.most_common(1)[0][0] if types else "ecog",
        "seizure_onset_s": round(onsets[0][0], 3) if onsets else None,
        "seizure_offset_s": round(offsets[-1][0], 3) if offsets else None,
        "onset_words": [w for _, w in onsets],
        "offset_words": [w for _, w in offsets],
        "shafts": shaft_sizes(list(channels["name"])),
    }


def summarise_centre(root: Path, subjects: list[str]) -> dict:
    """Aggregate the runs of one centre's subjects into parallel per-run lists.

    Returns
    -------
    summary : dict
        ``n_subjects``, ``runs_per_subject``, per-run lists ``n_good_channels``, ``duration_s``,
        ``sfreq_hz``, ``acquisition``, ``seizure_onset_s``, ``seizure_offset_s``; ``line_freq_hz``;
        the most common ``onset_marker`` / ``offset_marker`` wording; ``shafts`` (prefix → contacts).
    """
    runs, runs_per_subject = [], []
    for subject in subjects:
        files = sorted((root / subject).glob("ses-*/ieeg/*_ieeg.json"))
        runs_per_subject.append(len(files))
        runs.extend(summarise_run(f) for f in files)
    onset_words = Counter(w for r in runs for w in r["onset_words"])
    offset_words = Counter(w for r in runs for w in r["offset_words"])
    shafts: dict[str, int] = {}
    for run in runs:
        for name, size in run["shafts"].items():
            shafts[name] = max(shafts.get(name, 0), size)
    per_run = ("n_good_channels", "duration_s", "sfreq_hz", "acquisition", "seizure_onset_s", "seizure_offset_s")
    summary = {"n_subjects": len(subjects), "runs_per_subject": runs_per_subject}
    summary.update({key: [r[key] for r in runs] for key in per_run})
    summary["line_freq_hz"] = sorted({r["line_freq_hz"] for r in runs})
    summary["onset_marker"] = onset_words.most_common(1)[0][0] if onset_words else "onset"
    summary["offset_marker"] = offset_words.most_common(1)[0][0] if offset_words else "offset"
    summary["shafts"] = dict(sorted(shafts.items()))
    return summary


def summarise(root: Path) -> dict:
    """Summarise every centre of a ds003029 metadata tree rooted at ``root``."""
    participants = pd.read_csv(root / "participants.tsv", sep="\t", dtype=str)
    centres = {}
    for centre in CENTRES:
        subjects = sorted(participants.loc[participants["site"] == centre, "participant_id"])
        centres[centre] = summarise_centre(root, subjects)
        logger.info("%s: %d subjects, %d runs", centre, len(subjects), len(centres[centre]["duration_s"]))
    return {
        "source": "OpenNeuro ds003029 v1.0.7 sidecars (participants.tsv, *_channels.tsv, *_ieeg.json, *_events.tsv)",
        "generated_by": "training/summarise_ds003029.py",
        "channel_rule": "type ECOG/SEEG, status good, name not starting with '$'",
        "centres": centres,
    }


def to_json(table: dict) -> str:
    """Serialise ``table`` with one key per line down to the per-centre fields and inline lists."""
    lines = ["{"]
    for i, (key, value) in enumerate(table.items()):
        comma = "," if i < len(table) - 1 else ""
        if key != "centres":
            lines.append(f" {json.dumps(key)}: {json.dumps(value)}{comma}")
            continue
        lines.append(' "centres": {')
        for j, (centre, fields) in enumerate(value.items()):
            lines.append(f"  {json.dumps(centre)}: {{")
            items = [f"   {json.dumps(k)}: {json.dumps(v, separators=(',', ':'))}" for k, v in fields.items()]
            lines.append(",\n".join(items))
            lines.append("  }" + ("," if j < len(value) - 1 else ""))
        lines.append(" }" + comma)
    lines.append("}")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> None:
    """Command-line entry point."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", type=Path, default=DEFAULT_ROOT, help="ds003029 metadata root")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="output JSON path")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    if not (args.root / "participants.tsv").exists():
        parser.error(f"{args.root} has no participants.tsv; point --root at a ds003029 metadata copy.")
    table = summarise(args.root)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(to_json(table))
    logger.info("wrote %s (%d bytes)", args.out, args.out.stat().st_size)


if __name__ == "__main__":
    main()

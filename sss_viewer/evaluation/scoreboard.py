"""The real-data scoreboard: every scorer on every labelled recording, beside the trivial floors.

Each recording is ranked by every scorer (trained models and training-free markers alike) on the
same channels (the good iEEG channels; EKG/DC/duplicates/bare prefixes are never iEEG), and each
ranking is summarised by its channel AUC and AUPRC against the recording's SOZ labels. The floors
(channel variance, robust amplitude, line length) are computed in the same run, so that a scorer is
always read beside what a one-line statistic does on the same channels.

Recordings come from: the ds003029 pt01 clip and the Bonn D-vs-C segments under ``../shared/data``
(:func:`pt01_recording`, :func:`bonn_recording`), any BIDS root / cohort folder / file with a labels
table (:func:`user_recordings`), and a held-out synthetic cohort (:func:`synthetic_recordings`).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
import pandas as pd
from tqdm.auto import tqdm

from sss_viewer.biomarkers import FLOORS, is_marker, score_with
from sss_viewer.io.recording import Recording
from sss_viewer.metrics import average_precision, binary_auc, unscored_last

logger = logging.getLogger(__name__)

PT01_FILE = Path("ezfragility-pt01") / "pt01_sz1_ecog_m1s_p2s.npz"
"""pt01 under a shared data folder."""
BONN_FOLDER = Path("bonn-epilepsy")
"""The Bonn data set under a shared data folder."""
SYNTHETIC_SEED = 3
"""Seed of the held-out synthetic cohort: neither the bundled model's training seed (1) nor the demo's (7)."""
SYNTHETIC_CONFIG = {"duration_scale": 0.3, "max_channels": 40}
"""``SynthConfig`` overrides of the held-out synthetic cohort (the bundled model's training settings)."""
UNSCORED_AUC = 0.5
"""What a recording a scorer cannot rank counts as in the summary (chance): a default must rank what it is given."""
SCOREBOARD_COLUMNS = (
    "recording",
    "group",
    "scorer",
    "kind",
    "n_channels",
    "n_soz",
    "auc",
    "auprc",
    "top_channel",
    "top_flag",
    "seconds",
    "note",
)


@dataclass
class LabelledRecording:
    """A recording with SOZ labels, and where it comes from.

    Parameters
    ----------
    name : str
        Short name in the table (``pt01``, ``bonn-DvsC``, ``synthetic-p3``, a file stem).
    group : str
        ``"real"`` or ``"synthetic"``.
    recording : Recording
        With ``soz`` labels.
    note : str
        What it is, in words.
    """

    name: str
    group: str
    recording: Recording
    note: str = ""


def pt01_recording(path: str | Path) -> LabelledRecording:
    """ds003029 pt01's first seizure, 84 ECoG contacts, 3 s: the onset at t = 0 of the archive's ``times_s``.

    Parameters
    ----------
    path : str or Path
        ``pt01_sz1_ecog_m1s_p2s.npz`` (see its folder's PROVENANCE.md).

    Returns
    -------
    LabelledRecording
        ``seizure_onset_s`` set from ``times_s`` (−1 … 2 s → onset 1.0 s into the clip).
    """
    from sss_viewer.io.readers import read_recording

    path = Path(path)
    recording = read_recording(path)
    with np.load(path, allow_pickle=False) as archive:
        times = np.asarray(archive["times_s"]) if "times_s" in archive.files else None
    if times is not None and times[0] < 0 < times[-1]:
        recording = replace(recording, seizure_onset_s=float(-times[0]))
    if recording.soz is None:
        raise ValueError(f"{path} has no 'soz' labels; the scoreboard needs labelled recordings.")
    return LabelledRecording(
        "pt01", "real", recording, "ds003029 pt01 (NIH), 84 ECoG, 3 s around seizure onset, 10 SOZ"
    )


def bonn_recording(path: str | Path) -> LabelledRecording:
    """Bonn D vs C as one recording of 200 single-contact channels (D = inside the epileptogenic zone = SOZ).

    The segments were recorded with one amplifier setting (12-bit ADC, 173.61 Hz, 0.53–40 Hz), so a
    ranking across them is what a ranking across one patient's contacts is: which contacts look
    epileptogenic. They come from five patients whose identity per segment the data set does not give.

    Parameters
    ----------
    path : str or Path
        The Bonn ``.npz`` or its folder.

    Returns
    -------
    LabelledRecording
    """
    from sss_viewer.io.bonn import load_bonn

    segments = load_bonn(path, sets=("D", "C"), soz_sets=("D",))
    data = np.concatenate([r.data for r in segments]).astype(np.float32)
    names = [r.subject for r in segments]
    recording = Recording(
        data=data,
        sfreq=segments[0].sfreq,
        ch_names=names,
        ch_types=["seeg"] * len(names),
        soz=np.array([bool(r.soz[0]) for r in segments]),
        subject="bonn",
        centre="Bonn",
        line_freq=50.0,
        source=segments[0].source,
    )
    return LabelledRecording("bonn-DvsC", "real", recording, "Bonn D (SOZ, 100) vs C (100), 173.61 Hz, 23.6 s each")


def shared_recordings(folder: str | Path) -> list[LabelledRecording]:
    """pt01 and Bonn from a shared data folder (those present; a missing one is logged)."""
    folder = Path(folder)
    found = []
    for relative, loader in ((PT01_FILE, pt01_recording), (BONN_FOLDER, bonn_recording)):
        if (folder / relative).exists():
            found.append(loader(folder / relative))
        else:
            logger.warning("scoreboard: %s not found; left out", folder / relative)
    return found


def user_recordings(path: str | Path, labels: str | Path | None = None) -> list[LabelledRecording]:
    """Every labelled recording of a BIDS root, cohort folder or file (``sss-viewer train``'s DATA argument).

    Parameters
    ----------
    path : str or Path
    labels : str or Path, optional
        ``subject, channel, soz`` table; without it the data's own labels.

    Returns
    -------
    list of LabelledRecording
        Recordings without labels are left out with a warning.
    """
    from sss_viewer.io.cohort import load_data

    out = []
    for recording in load_data(path, labels=labels):
        if recording.soz is None or not recording.soz.any():
            logger.warning("scoreboard: %s has no SOZ labels; left out", recording.label)
            continue
        name = recording.label if recording.subject else Path(recording.source or "recording").stem
        out.append(LabelledRecording(name, "real", recording, str(recording.source or path)))
    return out


def synthetic_recordings(n_patients: int = 8, seed: int = SYNTHETIC_SEED) -> list[LabelledRecording]:
    """The held-out synthetic cohort, synthesised in memory (one run per patient)."""
    from sss_viewer.synth.config import SynthConfig
    from sss_viewer.synth.run import synthesise_recording

    config = SynthConfig(**SYNTHETIC_CONFIG)
    out = []
    for k in range(n_patients):
        recording, _ = synthesise_recording(k, seed=seed, config=config)
        out.append(LabelledRecording(f"synthetic-{recording.subject or k}", "synthetic", recording, f"seed {seed}"))
    return out


def ranking_metrics(channels: pd.DataFrame) -> tuple[float, float, int, int]:
    """Channel AUC and AUPRC of one ranking; channels without a score (no clean window) rank last.

    Parameters
    ----------
    channels : DataFrame
        ``score`` and ``label`` per channel.

    Returns
    -------
    auc, auprc : float
        NaN when the labelled channels are of one class.
    n_channels, n_soz : int
    """
    labelled = channels[channels["label"].notna()]
    y = labelled["label"].to_numpy(dtype=np.int64)
    s = labelled["score"].to_numpy(dtype=np.float64)
    s = unscored_last(s)
    return binary_auc(s, y), average_precision(s, y), len(y), int(y.sum())


def _kind(scorer, scores) -> str:
    """The kind of the scorer that produced ``scores`` (``model`` for a trained bundle)."""
    return scores.scorer_info.get("kind", "biomarker") if is_marker(scorer) else "model"


def run_scoreboard(
    recordings: Iterable[LabelledRecording], scorers: Mapping[str, object], *, progress: bool = True
) -> pd.DataFrame:
    """Score every recording with every scorer and measure each ranking.

    Parameters
    ----------
    recordings : iterable of LabelledRecording
    scorers : mapping of str to ModelBundle or BiomarkerScorer
        Row name → scorer (the floors among them).
    progress : bool

    Returns
    -------
    table : DataFrame
        :data:`SCOREBOARD_COLUMNS`, one row per recording and scorer; ``auc``/``auprc`` NaN and
        ``note`` saying why where a scorer could not rank a recording.
    """
    rows = []
    recordings = list(recordings)
    for item in tqdm(recordings, desc="scoreboard", unit="rec", disable=not progress or None):
        for name, scorer in scorers.items():
            start = time.perf_counter()
            row = {"recording": item.name, "group": item.group, "scorer": name, "note": ""}
            try:
                scores = score_with(scorer, item.recording, progress=False)
            except ValueError as exc:
                row.update(
                    kind=_static_kind(name, scorer),
                    auc=np.nan,
                    auprc=np.nan,
                    n_channels=0,
                    n_soz=0,
                    top_channel="",
                    top_flag="",
                    note=f"not scored: {exc}",
                )
            else:
                auc, auprc, n, n_soz = ranking_metrics(scores.channels)
                top = scores.channels.iloc[0]
                row.update(
                    kind=_kind(scorer, scores),
                    auc=auc,
                    auprc=auprc,
                    n_channels=n,
                    n_soz=n_soz,
                    top_channel=str(top["channel"]),
                    top_flag=str(top.get("artifact", "") or ""),
                )
            row["seconds"] = time.perf_counter() - start
            rows.append(row)
            logger.info("scoreboard %s / %s: AUC %s (%.1f s)", item.name, name, row["auc"], row["seconds"])
    return pd.DataFrame(rows, columns=list(SCOREBOARD_COLUMNS))


def _static_kind(name: str, scorer) -> str:
    """The kind of a scorer that could not score (no result to read it from)."""
    if is_marker(scorer):
        return scorer.info.kind
    return "floor" if name in FLOORS else "model"


def summarise(table: pd.DataFrame) -> pd.DataFrame:
    """One row per scorer: mean real AUC (unscored recordings at chance), its minimum, the synthetic mean, and the floors.

    Parameters
    ----------
    table : DataFrame
        :func:`run_scoreboard`'s output.

    Returns
    -------
    summary : DataFrame
        ``scorer, kind, real_auc`` (mean over real recordings, :data:`UNSCORED_AUC` where not
        scored), ``real_min``, ``real_scored`` (how many it ranked), ``synthetic_auc`` (mean over
        synthetic patients), ``vs_best_floor`` (real_auc minus the best floor's), sorted by real_auc.
    """
    real = table[table["group"] == "real"]
    synthetic = table[table["group"] == "synthetic"]
    rows = []
    for name, group in table.groupby("scorer", sort=False):
        r = real[real["scorer"] == name]["auc"].to_numpy(dtype=np.float64)
        s = synthetic[synthetic["scorer"] == name]["auc"].to_numpy(dtype=np.float64)
        filled = np.where(np.isfinite(r), r, UNSCORED_AUC)
        rows.append(
            {
                "scorer": name,
                "kind": group["kind"].iloc[0],
                "real_auc": float(filled.mean()) if len(r) else np.nan,
                "real_min": float(filled.min()) if len(r) else np.nan,
                "real_scored": int(np.isfinite(r).sum()),
                "synthetic_auc": float(np.nanmean(s)) if np.isfinite(s).any() else np.nan,
            }
        )
    summary = pd.DataFrame(rows)
    floors = summary[summary["kind"] == "floor"]["real_auc"]
    best_floor = float(floors.max()) if len(floors) else np.nan
    summary["vs_best_floor"] = summary["real_auc"] - best_floor
    return summary.sort_values("real_auc", ascending=False, kind="stable").reset_index(drop=True)


def choose_default(summary: pd.DataFrame, *, guard: float = 0.90, tie: float = 0.01) -> tuple[str, str]:
    """The default scorer by the rule registered in docs/results.md §8, and why in words.

    Parameters
    ----------
    summary : DataFrame
        :func:`summarise`'s output.
    guard : float
        Lowest synthetic held-out AUC of an eligible candidate.
    tie : float
        Real scores closer than this are tied: training-free first, then the higher minimum.

    Returns
    -------
    name : str
    reason : str
    """
    candidates = summary[summary["kind"] != "floor"].copy()
    if candidates.empty:
        raise ValueError("choose_default: the summary has no candidate (only floors).")
    eligible = candidates[candidates["synthetic_auc"] >= guard]
    pool = eligible if len(eligible) else candidates
    best = float(pool["real_auc"].max())
    tied = pool[pool["real_auc"] >= best - tie].copy()
    tied["trained"] = tied["kind"] == "model"
    tied = tied.sort_values(["trained", "real_min", "real_auc"], ascending=[True, False, False], kind="stable")
    chosen = tied.iloc[0]
    notes = [
        f"real AUC {chosen['real_auc']:.3f} (min {chosen['real_min']:.3f}), synthetic {chosen['synthetic_auc']:.3f}"
    ]
    if not len(eligible):
        notes.append(f"no candidate reaches the synthetic guard {guard:.2f}: taken on real data alone")
    if not chosen["vs_best_floor"] > 0:
        notes.append(f"not ahead of the best floor ({chosen['vs_best_floor']:+.3f})")
    else:
        notes.append(f"{chosen['vs_best_floor']:+.3f} over the best floor")
    return str(chosen["scorer"]), "; ".join(notes)


def format_table(table: pd.DataFrame, summary: pd.DataFrame) -> str:
    """The scoreboard as Markdown: per recording × scorer, then the summary per scorer.

    Parameters
    ----------
    table, summary : DataFrame
        :func:`run_scoreboard` and :func:`summarise` outputs.

    Returns
    -------
    str
    """

    def cell(x: float) -> str:
        return "—" if not np.isfinite(x) else f"{x:.3f}"

    recordings = list(dict.fromkeys(table["recording"]))
    scorers = list(dict.fromkeys(table["scorer"]))
    lines = [
        "| scorer | kind | " + " | ".join(f"{r} AUC / AUPRC" for r in recordings) + " |",
        "|---|---|" + "---:|" * len(recordings),
    ]
    for name in scorers:
        sub = table[table["scorer"] == name].set_index("recording")
        cells = []
        for r in recordings:
            row = sub.loc[r]
            cells.append("n/a" if not np.isfinite(row["auc"]) else f"{cell(row['auc'])} / {cell(row['auprc'])}")
        lines.append(f"| {name} | {sub['kind'].iloc[0]} | " + " | ".join(cells) + " |")
    lines += [
        "",
        "| scorer | kind | real AUC (mean, unscored = 0.5) | real min | real ranked | synthetic AUC | vs best floor |",
        "|---|---|---:|---:|---:|---:|---:|",
    ]
    for row in summary.itertuples(index=False):
        lines.append(
            f"| {row.scorer} | {row.kind} | {cell(row.real_auc)} | {cell(row.real_min)} | {row.real_scored} | "
            f"{cell(row.synthetic_auc)} | {row.vs_best_floor:+.3f} |"
        )
    notes = table[table["note"] != ""]
    if len(notes):
        lines.append("")
        lines += [f"- {r.scorer} on {r.recording}: {r.note}" for r in notes.itertuples(index=False)]
    return "\n".join(lines)

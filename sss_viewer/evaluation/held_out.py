"""Evaluate a trained model on recordings: channel metrics, per patient and pooled, and heat-map timing."""

from __future__ import annotations

import logging
from collections.abc import Sequence

import numpy as np
import pandas as pd

from sss_viewer.engine.bundle import ModelBundle
from sss_viewer.engine.inference import RecordingScores, score_recording
from sss_viewer.io.recording import Recording
from sss_viewer.metrics import binary_auc, evaluate_scores, unscored_last
from sss_viewer.preprocessing.cache import SeriesCache

logger = logging.getLogger(__name__)


def held_out_selection(bundle: ModelBundle, recordings: Sequence[Recording]) -> list[tuple[Recording, set | None]]:
    """The recordings (and, for a channel split, the channels) the model never saw in training.

    Parameters
    ----------
    bundle : ModelBundle
        The trained model; its ``info["split"]`` (written by training) says what was held out: the test
        subjects of a patient split, or the ``subject|run|channel`` keys of a channel split.
    recordings : sequence of Recording
        The candidates, in order.

    Returns
    -------
    selection : list of (Recording, set of channel names or None)
        The held-out recordings in the order of ``recordings``; ``None`` means every channel of that
        recording is held out. With a channel split, a recording none of whose channels was held out is
        left out.

    Raises
    ------
    ValueError
        The model records no patient or channel split.
    """
    split = bundle.info.get("split", {})
    mode = split.get("mode")
    if mode == "patient":
        test = set(split.get("test", []))
        return [(r, None) for r in recordings if r.subject in test]
    if mode == "channel":
        keys = {tuple(k.split("|", 2)) for k in split.get("test_channels", [])}
        out = []
        for r in recordings:
            chans = {c for c in r.ch_names if (r.subject, r.run, c) in keys}
            if chans:
                out.append((r, chans))
        return out
    raise ValueError("The model directory records no split; evaluate with all=True to score every recording.")


def heatmap_abnormal_auc(
    scores: RecordingScores, abnormal: pd.DataFrame, soz_channels: Sequence[str], bin_s: float = 1.0
) -> float:
    """AUC of heat-map bins for abnormal vs normal time within SOZ channels.

    Parameters
    ----------
    scores : RecordingScores
    abnormal : DataFrame
        Ground-truth abnormal intervals of this recording: ``channel, onset_s, offset_s``.
    soz_channels : sequence of str
    bin_s : float
        Heat-map bin width; a bin is abnormal when at least half of it is abnormal.

    Returns
    -------
    auc : float (NaN when a class is missing)
    """
    channels = [c for c in soz_channels if c in set(scores.channels["channel"])]
    if not channels:
        return float("nan")
    values, edges = scores.heatmap(bin_s, channels)
    truth = np.zeros_like(values, dtype=bool)
    for row, channel in enumerate(channels):
        cover = np.zeros(len(edges) - 1)
        for onset, offset in abnormal.loc[abnormal["channel"] == channel, ["onset_s", "offset_s"]].to_numpy():
            cover += np.clip(np.minimum(edges[1:], offset) - np.maximum(edges[:-1], onset), 0, None)
        truth[row] = cover >= 0.5 * bin_s
    ok = np.isfinite(values)
    return binary_auc(values[ok], truth[ok].astype(int))


def evaluate_bundle(
    bundle: ModelBundle,
    recordings: Sequence[Recording],
    *,
    held_out_only: bool = True,
    abnormal: pd.DataFrame | None = None,
    device: str = "auto",
    progress: bool = True,
    cache: SeriesCache | None = None,
) -> dict:
    """Score recordings and report channel-level agreement with the SOZ labels.

    Parameters
    ----------
    bundle : ModelBundle
    recordings : sequence of Recording
        Labelled recordings.
    held_out_only : bool
        Score only the patients (or channels) of the model's test split.
    abnormal : DataFrame, optional
        Ground-truth abnormal intervals (``subject, run, channel, onset_s, offset_s``) from the
        synthetic generator; adds the heat-map abnormal-vs-normal AUC within SOZ channels.
    device : str
    progress : bool
    cache : SeriesCache, optional
        On-disk cache of preprocessed channels.

    Returns
    -------
    report : dict
        ``pooled`` metrics at the validation threshold (``threshold``) and at 0.5
        (``at_0.5``), ``per_patient`` AUCs, ``n_channels``, ``n_recordings`` and, with
        ``abnormal``, ``heatmap_auc`` (median over recordings) and its per-recording values.
    """
    selection = held_out_selection(bundle, recordings) if held_out_only else [(r, None) for r in recordings]
    if not selection:
        raise ValueError("No recording to evaluate: none of the given recordings is in the model's test split.")
    rows, heat = [], {}
    for rec, channels in selection:
        if rec.soz is None:
            logger.warning("%s has no SOZ labels; skipped in evaluation", rec.label)
            continue
        result = score_recording(bundle, rec, device=device, progress=progress, cache=cache)
        table = result.channels
        if channels is not None:
            table = table[table["channel"].isin(channels)]
        for channel, score, label in zip(table["channel"], table["score"], table["label"]):
            rows.append((rec.subject, rec.run, channel, float(score), int(label)))
        if abnormal is not None:
            truth = abnormal[(abnormal["subject"] == rec.subject) & (abnormal["run"].astype(str) == str(rec.run))]
            soz = [c for c, s in zip(rec.ch_names, rec.soz) if s]
            heat[rec.label] = heatmap_abnormal_auc(result, truth, soz)
    if not rows:
        raise ValueError("No labelled channel to evaluate.")
    df = pd.DataFrame(rows, columns=["subject", "run", "channel", "score", "label"])
    unscored = int(df["score"].isna().sum())
    if unscored:  # no artifact-free window: not called SOZ, ranked last
        logger.warning("%d channel(s) without an artifact-free window count as score 0 in the metrics", unscored)
        df["score"] = unscored_last(df["score"], floor=0.0)
    scores, labels = df["score"].to_numpy(), df["label"].to_numpy()
    report = {
        "n_recordings": len(selection),
        "n_channels": len(df),
        "n_soz": int(labels.sum()),
        "threshold": bundle.threshold,
        "pooled": evaluate_scores(scores, labels, bundle.threshold),
        "at_0.5": evaluate_scores(scores, labels, 0.5),
        "per_patient": {
            subject: binary_auc(g["score"].to_numpy(), g["label"].to_numpy()) for subject, g in df.groupby("subject")
        },
    }
    if abnormal is not None:
        values = [v for v in heat.values() if np.isfinite(v)]
        report["heatmap_auc"] = float(np.median(values)) if values else float("nan")
        report["heatmap_auc_per_recording"] = heat
    return report

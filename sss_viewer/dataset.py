"""From recordings to the series store SSS trains and scores on: one row per usable iEEG channel."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
from tqdm.auto import tqdm

from sss_viewer.preprocess import PreprocessConfig, find_unusable_channels, preprocess_channel
from sss_viewer.recording import Recording
from sss_viewer.windows import SeriesStore

logger = logging.getLogger(__name__)

SERIES_COLUMNS = ("recording", "subject", "centre", "run", "channel", "label", "sfreq")


@dataclass
class SeriesSet:
    """Preprocessed channels and their metadata.

    Parameters
    ----------
    store : SeriesStore
        The preprocessed samples of every kept channel.
    meta : DataFrame, n_series rows
        Columns ``recording`` (index into the input list), ``subject``, ``centre``, ``run``,
        ``channel``, ``label`` (1 SOZ, 0 not, -1 unknown) and ``sfreq`` (Hz of the series).
    excluded : DataFrame
        Channels left out, with columns ``recording``, ``subject``, ``run``, ``channel``, ``reason``.
    """

    store: SeriesStore
    meta: pd.DataFrame
    excluded: pd.DataFrame

    def labels(self) -> np.ndarray:
        """Series labels, shape (n_series,), int (1, 0 or -1 for unknown)."""
        return self.meta["label"].to_numpy(dtype=np.int64)


def build_series_set(
    recordings: Sequence[Recording],
    config: PreprocessConfig,
    *,
    min_length: int = 1,
    progress: bool = True,
) -> SeriesSet:
    """Pick good iEEG channels, preprocess them and concatenate them into one store.

    Channels with NaN/inf samples, flat channels and channels shorter than ``min_length``
    preprocessed samples are excluded, logged with their reason, and listed in ``excluded``.

    Parameters
    ----------
    recordings : sequence of Recording
    config : PreprocessConfig
    min_length : int
        Shortest series kept, in preprocessed samples (the window length L).
    progress : bool
        Show a progress bar over recordings.

    Returns
    -------
    SeriesSet
    """
    series, rows, excluded = [], [], []
    for rec_index, rec in enumerate(tqdm(recordings, desc="preprocess", unit="rec", disable=not progress or None)):
        config.check_sfreq(rec.sfreq, what=f"recording {rec.label} ({rec.source or 'in memory'})")
        picks = rec.ieeg_picks()
        if len(picks) == 0:
            raise ValueError(f"Recording {rec.label} ({rec.source or 'in memory'}) has no good iEEG (ECoG/SEEG) channels.")
        names = [rec.ch_names[i] for i in picks]
        unusable = find_unusable_channels(rec.data[picks], names)
        rate = config.output_sfreq(rec.sfreq)
        for pick, name in zip(picks, names):
            reason = unusable.get(name)
            y = None
            if reason is None:
                y = preprocess_channel(rec.data[pick], rec.sfreq, config, line_freq=rec.line_freq)
                if len(y) < min_length:
                    reason = (
                        f"shorter than one window: {len(y)} samples ({len(y) / rate:.2f} s) after preprocessing, "
                        f"window is {min_length} samples ({min_length / rate:.2f} s)"
                    )
            if reason is not None:
                excluded.append((rec_index, rec.subject, rec.run, name, reason))
                continue
            label = -1 if rec.soz is None else int(rec.soz[pick])
            series.append(y)
            rows.append((rec_index, rec.subject, rec.centre, rec.run, name, label, rate))
    excluded_df = pd.DataFrame(excluded, columns=["recording", "subject", "run", "channel", "reason"])
    for (subject, run), group in excluded_df.groupby(["subject", "run"], sort=False):
        listing = "; ".join(f"{c} ({r})" for c, r in zip(group["channel"], group["reason"]))
        logger.warning("sub-%s run-%s: excluded %d channel(s): %s", subject, run, len(group), listing)
    meta = pd.DataFrame(rows, columns=list(SERIES_COLUMNS))
    return SeriesSet(store=SeriesStore.from_series(series), meta=meta, excluded=excluded_df)

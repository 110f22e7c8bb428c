"""From recordings to the series store SSS trains and scores on: one row per usable iEEG channel."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
from tqdm.auto import tqdm

from sss_viewer.io.recording import Recording
from sss_viewer.preprocessing._streaming import preprocess_into
from sss_viewer.preprocessing.cache import SeriesSource
from sss_viewer.preprocessing.config import PreprocessConfig
from sss_viewer.windows.store import SeriesStore

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
    cache: SeriesSource | None = None,
    **stream_options,
) -> SeriesSet:
    """Pick good iEEG channels, preprocess them and lay them out in one store.

    Channels with NaN/inf samples, flat channels and channels shorter than ``min_length``
    preprocessed samples are excluded, logged with their reason, and listed in ``excluded``.
    Preprocessing is chunked (``preprocess_into``), so memory stays bounded whatever the length of
    the recordings; with a ``cache`` the series are the ones it gives (memory-mapped from disk and
    reused across runs by a ``SeriesCache``), otherwise they are held in memory, one array per recording.

    Parameters
    ----------
    recordings : sequence of Recording
        In memory or lazy (read from their files block by block).
    config : PreprocessConfig
    min_length : int
        Shortest series kept, in preprocessed samples (the window length L).
    progress : bool
        Show a progress bar over recordings.
    cache : SeriesSource, optional
        A series source: a SeriesCache (on disk) or a DeviceSeriesBuilder (on a device); given
        ``**stream_options``, which it may ignore.
    **stream_options
        ``chunk_seconds`` / ``memory_bytes`` for ``preprocess_into``.

    Returns
    -------
    SeriesSet
    """
    stores, rows, excluded = [], [], []
    for rec_index, rec in enumerate(tqdm(recordings, desc="preprocess", unit="rec", disable=not progress or None)):
        where = f"recording {rec.label} ({rec.source or 'in memory'})"
        config.check_sfreq(rec.sfreq, what=where)
        picks = rec.ieeg_picks()
        if len(picks) == 0:
            raise ValueError(f"The {where} has no good iEEG (ECoG/SEEG) channels.")
        names = [rec.ch_names[i] for i in picks]
        rate = config.output_sfreq(rec.sfreq)
        n_out = config.output_length(rec.n_times, rec.sfreq)
        if n_out < min_length:
            reason = (
                f"shorter than one window: {n_out} samples ({n_out / rate:.2f} s) after preprocessing, "
                f"window is {min_length} samples ({min_length / rate:.2f} s)"
            )
            excluded.extend((rec_index, rec.subject, rec.run, name, reason) for name in names)
            continue
        if cache is not None:
            entry = cache.load_or_build(rec, picks, config, **stream_options)
            segment, offsets, unusable = entry.data, entry.offsets, entry.unusable
        else:
            segment = np.empty(n_out * len(picks), dtype=np.float32)
            offsets = np.arange(len(picks), dtype=np.int64) * n_out
            reasons = preprocess_into(rec, picks, config, segment, offsets, **stream_options)
            unusable = {names[j]: reason for j, reason in reasons.items()}
        keep = []
        for j, (pick, name) in enumerate(zip(picks, names)):
            if name in unusable:
                excluded.append((rec_index, rec.subject, rec.run, name, unusable[name]))
                continue
            keep.append(j)
            label = -1 if rec.soz is None else int(rec.soz[pick])
            rows.append((rec_index, rec.subject, rec.centre, rec.run, name, label, rate))
        keep = np.asarray(keep, dtype=int)
        stores.append(SeriesStore([segment], offsets[keep], np.full(len(keep), n_out, dtype=np.int64)))
    excluded_df = pd.DataFrame(excluded, columns=["recording", "subject", "run", "channel", "reason"])
    for (rec_index, reason), group in excluded_df.groupby(["recording", "reason"], sort=False):
        names = group["channel"].tolist()
        listing = ", ".join(names[:12]) + (f" … ({len(names)} in all)" if len(names) > 12 else "")
        logger.warning("%s: excluded %d channel(s), %s: %s", recordings[rec_index].label, len(names), reason, listing)
    meta = pd.DataFrame(rows, columns=list(SERIES_COLUMNS))
    return SeriesSet(store=SeriesStore.concatenate(stores), meta=meta, excluded=excluded_df)

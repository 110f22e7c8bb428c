"""Train / validation / test splits: by patient (default, no leakage) or by channel (the paper's)."""

from __future__ import annotations

import logging

import numpy as np
import pandas as pd

from sss_viewer._validate import check_option, check_range

logger = logging.getLogger(__name__)

SPLIT_MODES = ("patient", "channel")
SPLIT_NAMES = ("train", "val", "test")
"""The splits a labelled series can belong to."""
UNUSED = "unused"
"""Split value of a series left out (dropped by balancing, unlabelled, or outside a protocol's split)."""
SPLIT_VALUES = (*SPLIT_NAMES, UNUSED)
"""Every value a split array may hold."""


def _split_sizes(n: int, val_fraction: float, test_fraction: float, what: str) -> tuple[int, int, int]:
    n_test = max(1, int(round(test_fraction * n))) if test_fraction > 0 else 0
    n_val = max(1, int(round(val_fraction * n))) if val_fraction > 0 else 0
    n_train = n - n_val - n_test
    if n_train < 1:
        raise ValueError(
            f"Cannot split {n} {what} into train/val/test with val_fraction={val_fraction} and "
            f"test_fraction={test_fraction}: at least {n_val + n_test + 1} are needed."
        )
    return n_train, n_val, n_test


def split_by_patient(
    meta: pd.DataFrame, *, val_fraction: float = 0.15, test_fraction: float = 0.25, seed: int = 0
) -> dict[str, str]:
    """Assign whole patients to train/val/test, spreading each centre across the splits.

    Subjects are shuffled within each centre and then interleaved across centres, so the
    held-out sets mix centres instead of taking one centre whole.

    Parameters
    ----------
    meta : DataFrame
        Series metadata with ``subject`` and ``centre`` columns.
    val_fraction, test_fraction : float
    seed : int

    Returns
    -------
    assignment : dict
        ``{subject: "train" | "val" | "test"}``.
    """
    check_range("val_fraction", val_fraction, 0, 1)
    check_range("test_fraction", test_fraction, 0, 1)
    rng = np.random.default_rng(seed)
    subjects = meta.drop_duplicates("subject")[["subject", "centre"]]
    ranked = []
    for _, group in subjects.groupby("centre", sort=True):
        order = rng.permutation(len(group))
        ranked += [(rank, rng.random(), s) for rank, s in zip(range(len(group)), group["subject"].to_numpy()[order])]
    ordered = [s for _, _, s in sorted(ranked)]
    n_train, n_val, n_test = _split_sizes(len(ordered), val_fraction, test_fraction, "patients")
    names = ["test"] * n_test + ["val"] * n_val + ["train"] * n_train
    return dict(zip(ordered, names))


def split_by_channel(
    labels: np.ndarray,
    *,
    val_fraction: float = 0.1,
    test_fraction: float = 0.2,
    balance: bool = True,
    seed: int = 0,
) -> np.ndarray:
    """The paper's split: channels (not patients) drawn into 70/10/20, optionally balanced 1:1.

    With ``balance`` the non-SOZ channels are dropped at random down to the number of SOZ
    channels first (App. B); dropped channels get the split name ``"unused"``. Each split is
    stratified by label. Channels of one patient end up in several splits: this leaks patient
    identity and is offered only to reproduce the paper.

    Parameters
    ----------
    labels : ndarray, shape (n_series,)
        1 SOZ, 0 not.
    val_fraction, test_fraction : float
    balance : bool
    seed : int

    Returns
    -------
    split : ndarray, shape (n_series,), object
        ``"train"``, ``"val"``, ``"test"`` or ``"unused"`` per series.
    """
    labels = np.asarray(labels)
    rng = np.random.default_rng(seed)
    split = np.full(len(labels), UNUSED, dtype=object)
    pos, neg = np.flatnonzero(labels == 1), np.flatnonzero(labels == 0)
    if len(pos) < 3 or len(neg) < 3:
        raise ValueError(f"Channel split needs at least 3 SOZ and 3 non-SOZ channels; got {len(pos)} and {len(neg)}.")
    if balance:
        neg = rng.choice(neg, size=min(len(neg), len(pos)), replace=False)
    for members in (pos, neg):
        members = rng.permutation(members)
        n_train, n_val, n_test = _split_sizes(len(members), val_fraction, test_fraction, "channels of one class")
        split[members[:n_test]] = "test"
        split[members[n_test : n_test + n_val]] = "val"
        split[members[n_test + n_val :]] = "train"
    return split


def assign_splits(
    meta: pd.DataFrame,
    mode: str = "patient",
    *,
    val_fraction: float = 0.15,
    test_fraction: float = 0.25,
    balance: bool = False,
    seed: int = 0,
) -> np.ndarray:
    """Split name per series for ``mode`` ``"patient"`` or ``"channel"``; shape (n_series,).

    Parameters
    ----------
    meta : DataFrame, shape (n_series, ...)
        Series metadata: ``label`` (1 SOZ, 0 not), and ``subject`` and ``centre`` for a patient split.
    mode : {"patient", "channel"}
        ``"patient"``: whole patients to train/val/test (:func:`split_by_patient`); ``"channel"``: the
        paper's split of channels, stratified by label (:func:`split_by_channel`).
    val_fraction, test_fraction : float
        Shares of patients (or of each class's channels) in validation and test, in [0, 1].
    balance : bool
        Drop non-SOZ series at random (split ``"unused"``) down to 1:1: over all channels in channel mode,
        inside the train split only in patient mode.
    seed : int
        Seed of the shuffles.

    Returns
    -------
    split : ndarray of str (object), shape (n_series,)
        ``"train"``, ``"val"``, ``"test"`` or ``"unused"`` per row of ``meta``.

    Raises
    ------
    ValueError
        An unknown ``mode``, a fraction outside [0, 1] (patient mode), or too few patients or channels to split.
    """
    check_option("split mode", mode, SPLIT_MODES)
    if mode == "patient":
        assignment = split_by_patient(meta, val_fraction=val_fraction, test_fraction=test_fraction, seed=seed)
        split = meta["subject"].map(assignment).to_numpy(dtype=object)
        if balance:
            split = _balance_within_splits(meta["label"].to_numpy(), split, seed)
        return split
    return split_by_channel(
        meta["label"].to_numpy(), val_fraction=val_fraction, test_fraction=test_fraction, balance=balance, seed=seed
    )


def _balance_within_splits(labels: np.ndarray, split: np.ndarray, seed: int) -> np.ndarray:
    """Drop non-SOZ series at random (marked ``"unused"``) to 1:1 inside the train split only."""
    rng = np.random.default_rng(seed)
    split = split.copy()
    train = split == "train"
    pos, neg = np.flatnonzero(train & (labels == 1)), np.flatnonzero(train & (labels == 0))
    if len(neg) > len(pos):
        split[rng.choice(neg, size=len(neg) - len(pos), replace=False)] = UNUSED
    return split

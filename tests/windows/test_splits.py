"""Patient and channel splits."""

import numpy as np
import pandas as pd
import pytest

from sss_viewer.windows.splits import assign_splits, split_by_channel, split_by_patient


def _meta(n_patients=12, channels=10):
    rows = []
    for p in range(n_patients):
        for c in range(channels):
            rows.append((f"p{p:02d}", ["JHH", "NIH", "UMMC", "UMF"][p % 4], f"C{c}", int(c < 2)))
    return pd.DataFrame(rows, columns=["subject", "centre", "channel", "label"])


def test_patient_split_never_shares_a_patient_and_mixes_centres():
    meta = _meta()
    assignment = split_by_patient(meta, val_fraction=0.15, test_fraction=0.25, seed=3)
    assert sorted(assignment.values()).count("test") == 3
    assert sorted(assignment.values()).count("val") == 2
    test_centres = {meta.loc[meta.subject == s, "centre"].iloc[0] for s, v in assignment.items() if v == "test"}
    assert len(test_centres) == 3
    split = assign_splits(meta, "patient", seed=3)
    for _, group in meta.assign(split=split).groupby("subject"):
        assert group["split"].nunique() == 1


def test_channel_split_is_balanced_and_stratified():
    labels = np.array([1] * 20 + [0] * 100)
    split = split_by_channel(labels, balance=True, seed=0)
    used = split != "unused"
    assert (labels[used] == 1).sum() == (labels[used] == 0).sum() == 20
    for name, frac in [("train", 0.7), ("val", 0.1), ("test", 0.2)]:
        assert ((split == name) & (labels == 1)).sum() == pytest.approx(20 * frac, abs=1)


def test_too_few_patients_is_a_clear_error():
    with pytest.raises(ValueError, match="Cannot split 2 patients"):
        split_by_patient(_meta(2), val_fraction=0.15, test_fraction=0.25)

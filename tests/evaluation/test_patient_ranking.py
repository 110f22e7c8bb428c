"""Patient-level ranking: the mean of a patient's runs, each run's contribution kept."""

import numpy as np
import pandas as pd
import pytest

from sss_viewer.evaluation.patient_ranking import rank_patient_channels


def _runs():
    return pd.DataFrame(
        {
            "subject": ["pt01"] * 5 + ["pt02"],
            "run": ["r1", "r1", "r2", "r2", "r2", "a"],
            "channel": ["POL G1", "G2", "G1", "G2", "G3", "X"],
            "score": [0.9, 0.1, 0.5, 0.3, 0.8, 0.5],
            "label": [1, 0, 1, np.nan, 0, np.nan],
        }
    )


def test_mean_over_runs_matched_by_contact_and_ranked_within_the_patient():
    patients = rank_patient_channels(_runs())
    pt01 = patients[patients["subject"] == "pt01"].set_index("channel")
    assert list(pt01.index) == ["G3", "POL G1", "G2"]  # 0.8, 0.7, 0.2
    assert pt01.loc["POL G1", "score"] == pytest.approx(0.7)
    assert pt01.loc["POL G1", "run_scores"] == "r1=0.900; r2=0.500"
    assert (pt01.loc["G3", "n_runs"], pt01.loc["G3", "runs"]) == (1, 2)
    assert list(pt01["rank"]) == [1, 2, 3]
    assert pt01.loc["G2", "label"] == 0 and pt01.loc["POL G1", "label"] == 1
    assert patients[patients["subject"] == "pt02"]["rank"].tolist() == [1]


def test_a_run_scoring_one_contact_twice_is_an_error_naming_both():
    runs = _runs()
    runs.loc[1, "channel"] = "EEG G1-Ref"
    with pytest.raises(ValueError, match=r"Run r1 of subject pt01 scores one contact twice \(EEG G1-Ref, POL G1\)"):
        rank_patient_channels(runs)


def test_missing_columns_are_named():
    with pytest.raises(ValueError, match="lacks column.*run"):
        rank_patient_channels(_runs().drop(columns="run"))

"""The real-data scoreboard: every scorer beside the floors, the registered rule, and the command that prints it."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from sss_viewer.biomarkers import get_scorer
from sss_viewer.cli import main
from sss_viewer.evaluation.scoreboard import (
    LabelledRecording,
    bonn_recording,
    choose_default,
    pt01_recording,
    ranking_metrics,
    run_scoreboard,
    summarise,
)
from sss_viewer.metrics import binary_auc
from tests.fixtures.recordings import SHARED_DATA, toy_recording

PT01 = SHARED_DATA / "ezfragility-pt01" / "pt01_sz1_ecog_m1s_p2s.npz"
BONN = SHARED_DATA / "bonn-epilepsy"


def test_ranking_metrics_put_unscored_channels_last():
    channels = pd.DataFrame({"score": [0.9, np.nan, 0.1, 0.5], "label": pd.array([1, 1, 0, 0], dtype="Int64")})
    auc, auprc, n, n_soz = ranking_metrics(channels)
    assert (n, n_soz) == (4, 2)
    assert auc == pytest.approx(binary_auc([0.9, -1.0, 0.1, 0.5], [1, 1, 0, 0]))  # the NaN channel below every score
    assert 0 < auprc <= 1


def test_scoreboard_rows_summary_and_floors_in_one_run():
    recordings = [LabelledRecording(f"toy{k}", "real", toy_recording(f"p{k}", seed=k, n_channels=12)) for k in range(2)]
    recordings.append(LabelledRecording("syn", "synthetic", toy_recording("s", seed=5, n_channels=12)))
    scorers = {name: get_scorer(name) for name in ("variance", "amplitude", "line_length")}
    scorers["consensus3"] = get_scorer("consensus", components=("amplitude", "line_length", "variance"))
    table = run_scoreboard(recordings, scorers, progress=False)
    assert len(table) == 3 * 4 and table["auc"].notna().all()
    summary = summarise(table)
    assert set(summary["scorer"]) == set(scorers)
    assert set(summary.loc[summary["kind"] == "floor", "scorer"]) == {"variance", "amplitude", "line_length"}
    real = table[(table["group"] == "real") & (table["scorer"] == "variance")]["auc"].mean()
    assert summary.set_index("scorer").loc["variance", "real_auc"] == pytest.approx(real)
    best_floor = summary[summary["kind"] == "floor"]["real_auc"].max()
    np.testing.assert_allclose(summary["vs_best_floor"], summary["real_auc"] - best_floor)


def test_a_recording_a_scorer_cannot_rank_counts_at_chance_with_its_reason():
    short_eeg = toy_recording("x", seed=1, n_channels=4)
    short_eeg.ch_types = ["eeg"] * 4  # no iEEG channel: every scorer refuses
    recordings = [
        LabelledRecording("a", "real", toy_recording("a", seed=2, n_channels=12)),
        LabelledRecording("eeg", "real", short_eeg),
    ]
    table = run_scoreboard(recordings, {"variance": get_scorer("variance")}, progress=False)
    refused = table[table["recording"] == "eeg"].iloc[0]
    assert np.isnan(refused["auc"]) and "no good iEEG channel" in refused["note"]
    summary = summarise(table).iloc[0]
    scored = table[table["recording"] == "a"]["auc"].iloc[0]
    assert summary["real_auc"] == pytest.approx((scored + 0.5) / 2) and summary["real_scored"] == 1


def _summary(rows):
    return pd.DataFrame(
        rows, columns=["scorer", "kind", "real_auc", "real_min", "real_scored", "synthetic_auc", "vs_best_floor"]
    )


def test_the_registered_rule():
    floor = ("variance", "floor", 0.80, 0.70, 2, 0.6, 0.0)
    # the best real score among candidates passing the synthetic guard
    name, why = choose_default(
        _summary([floor, ("a", "biomarker", 0.90, 0.85, 2, 0.95, 0.10), ("b", "model", 0.95, 0.9, 2, 0.85, 0.15)])
    )
    assert name == "a" and "+0.100 over the best floor" in why
    # no candidate passes the guard: the best real score, said so
    name, why = choose_default(
        _summary([floor, ("a", "biomarker", 0.90, 0.85, 2, 0.80, 0.10), ("b", "model", 0.70, 0.6, 2, 0.85, -0.1)])
    )
    assert name == "a" and "no candidate reaches the synthetic guard" in why
    # ties within 0.01: training-free before trained, then the higher minimum
    name, _ = choose_default(
        _summary([floor, ("m", "model", 0.905, 0.9, 2, 0.95, 0.1), ("a", "biomarker", 0.90, 0.80, 2, 0.95, 0.1)])
    )
    assert name == "a"
    name, _ = choose_default(
        _summary([floor, ("a", "biomarker", 0.905, 0.80, 2, 0.95, 0.1), ("c", "consensus", 0.90, 0.88, 2, 0.95, 0.1)])
    )
    assert name == "c"
    name, why = choose_default(
        _summary([("v", "floor", 0.9, 0.9, 2, 0.9, 0.0), ("a", "biomarker", 0.85, 0.8, 2, 0.95, -0.05)])
    )
    assert name == "a" and "not ahead of the best floor" in why


def test_cli_scoreboard_on_a_labelled_file(tmp_path, capsys):
    rec = toy_recording("p1", seed=3, n_channels=12)
    path = tmp_path / "sub-p1_run-01_ieeg.npz"
    np.savez(path, data=rec.data, ch_names=np.array(rec.ch_names), fs=rec.sfreq, soz=rec.soz)
    out = tmp_path / "board.csv"
    code = main(["scoreboard", str(path), "--scorers", "consensus", "--out", str(out), "-q"])
    assert code == 0
    printed = capsys.readouterr().out
    for name in ("variance", "amplitude", "line_length", "consensus", "sss (bundled)"):
        assert f"| {name} |" in printed
    table = pd.read_csv(out)
    assert set(table["scorer"]) == {"variance", "amplitude", "line_length", "sss (bundled)", "consensus"}
    assert out.with_suffix(".md").is_file()
    assert (
        main(["scoreboard", str(path), "--scorers", "consensus", "--out", str(out), "-q"]) == 1
    )  # never overwrites unasked
    assert "exists" in capsys.readouterr().err
    assert main(["scoreboard", "-q"]) == 2


@pytest.mark.realdata
@pytest.mark.skipif(not PT01.is_file(), reason=f"real data not present: {PT01} (see ../shared/data)")
def test_pt01_with_its_onset_and_bonn_pooled():
    pt01 = pt01_recording(PT01)
    assert pt01.recording.seizure_onset_s == pytest.approx(1.0, abs=1e-3) and pt01.recording.soz.sum() == 10
    bonn = bonn_recording(BONN)
    assert bonn.recording.n_channels == 200 and bonn.recording.soz.sum() == 100
    table = run_scoreboard([pt01, bonn], {n: get_scorer(n) for n in ("variance", "line_length")}, progress=False)
    assert table["auc"].between(0, 1).all() and (table["n_channels"] > 80).all()

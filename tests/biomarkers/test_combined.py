"""The combined scorer: rank features, leave-one-patient-out fitting, weights files, and the SSS model as a feature."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from sklearn.linear_model import LogisticRegression

import sss_viewer
from sss_viewer import Recording
from sss_viewer.biomarkers import combined as combined_module
from sss_viewer.biomarkers import get_scorer
from sss_viewer.biomarkers.combined import (
    MODEL_FEATURE,
    CombinedScorer,
    fit_combined,
    load_weights,
    save_weights,
)
from sss_viewer.metrics import binary_auc

DEMO_MODEL = Path(sss_viewer.__file__).parent / "data" / "demo" / "model"
MARKERS = ("amplitude", "line_length", "spike_rate", "ripple_rate")
"""Four markers at 500 Hz; spike rate alone ranks the spiking contacts of :func:`spiky_recording` first."""
N_SOZ = 4


def spiky_recording(subject: str, seed: int, *, duration_s: float = 12.0, flip: bool = False) -> Recording:
    """12 contacts at 500 Hz: 4 SOZ with a spike per second, 4 loud non-SOZ (×3 noise), 4 quiet non-SOZ.

    Only spike rate points at the SOZ: amplitude points at the loud contacts, line length and ripple
    rate at no one in particular. ``flip`` swaps the labels (the spiking contacts are called non-SOZ).
    """
    rng = np.random.default_rng(seed)
    n_channels, sfreq = 12, 500.0
    n = int(duration_s * sfreq)
    walk = np.cumsum(rng.standard_normal((n_channels, n)), axis=1)
    walk -= np.cumsum(walk, axis=1) / np.arange(1, n + 1)
    data = walk / walk.std(axis=1, keepdims=True) * 30.0 + rng.standard_normal((n_channels, n)) * 5.0
    data[N_SOZ : 2 * N_SOZ] *= 3.0
    t = np.arange(-0.05, 0.05, 1 / sfreq)
    spike = -150.0 * np.exp(-0.5 * (t / 0.008) ** 2)
    for ch in range(N_SOZ):
        for start in (rng.uniform(0.2, duration_s - 0.2, size=int(duration_s)) * sfreq).astype(int):
            data[ch, start : start + len(t)] += spike[: n - start]
    soz = np.arange(n_channels) < N_SOZ
    return Recording(
        data=data.astype(np.float32),
        sfreq=sfreq,
        ch_names=[f"A{i + 1}" for i in range(n_channels)],
        ch_types=["seeg"] * n_channels,
        soz=~soz if flip else soz,
        subject=subject,
        line_freq=50.0,
    )


@pytest.fixture(scope="module")
def cohort() -> list[Recording]:
    return [spiky_recording(f"p{i}", seed=i) for i in range(4)]


@pytest.fixture(scope="module")
def weights(cohort) -> dict:
    return fit_combined(cohort, markers=MARKERS, progress=False, description="spiky test cohort")


def auc_of(channels) -> float:
    return binary_auc(channels["score"].to_numpy(dtype=float), channels["label"].to_numpy(dtype=int))


def test_the_cohort_has_one_marker_that_separates(cohort):
    aucs = {m: auc_of(get_scorer(m).score(cohort[0]).channels) for m in MARKERS}
    assert aucs["spike_rate"] == 1.0
    assert all(auc < 0.7 for m, auc in aucs.items() if m != "spike_rate"), aucs


def test_the_fit_weights_the_separating_marker_and_ranks_a_held_out_recording(weights):
    coef = dict(zip(weights["features"], weights["coefficients"]))
    assert weights["features"] == [f"{m}_rank" for m in MARKERS]
    assert max(coef, key=coef.get) == "spike_rate_rank" and coef["spike_rate_rank"] > 0
    assert weights["n_patients"] == 4 and weights["n_channels"] == 48 and weights["n_soz"] == 16
    assert weights["training"]["description"] == "spiky test cohort"
    assert weights["model"] is None and weights["markers"] == list(MARKERS)
    scores = CombinedScorer(weights).score(spiky_recording("held-out", seed=99))
    ch = scores.channels
    assert set(ch["channel"][:N_SOZ]) == {f"A{i + 1}" for i in range(N_SOZ)}
    assert ch["value"].between(0, 1).all() and ch["score"].iloc[0] == pytest.approx(1.0)
    assert scores.scorer == "combined" and scores.scorer_info["kind"] == "combined"
    assert "spike_rate_rank" in scores.scorer_info["reference"] and "C = " in scores.scorer_info["validation"]
    assert scores.windows["p_cal"].between(0, 1).all()


def test_leave_one_patient_out_holds_each_patient_out(monkeypatch, cohort):
    """A patient with flipped labels ranks backwards when held out; each fold trains on the others' channels only."""
    recordings = [*cohort[:3], spiky_recording("flipped", seed=7, flip=True)]
    fitted_rows: list[int] = []

    class Spy(LogisticRegression):
        def fit(self, x, y, sample_weight=None):
            fitted_rows.append(len(x))
            return super().fit(x, y, sample_weight=sample_weight)

    monkeypatch.setattr(combined_module, "LogisticRegression", Spy)
    Cs = (0.1, 10.0)
    weights = fit_combined(recordings, markers=MARKERS, Cs=Cs, progress=False)
    table = weights["validation"]
    assert [row["C"] for row in table] == list(Cs)
    for row in table:
        assert set(row["patients"]) == {"p0", "p1", "p2", "flipped"}
        assert row["patients"]["flipped"] < 0.2  # trained without it: the spiking contacts still come first
        assert all(row["patients"][p] > 0.8 for p in ("p0", "p1", "p2"))
        assert row["mean_auc"] == pytest.approx(np.mean(list(row["patients"].values())))
    # one fit per C and patient on the 3 other patients' 36 channels, then the final fit on all 48
    assert fitted_rows == [36] * (len(Cs) * 4) + [48]


def test_patients_override_subjects_and_two_are_needed(cohort):
    with pytest.raises(ValueError, match="at least two patients"):
        fit_combined(cohort[:2], markers=MARKERS, patients=["same", "same"], progress=False)
    with pytest.raises(ValueError, match="Invalid patients"):
        fit_combined(cohort[:2], markers=MARKERS, patients=["only one"], progress=False)
    nameless = Recording(
        data=cohort[0].data,
        sfreq=cohort[0].sfreq,
        ch_names=cohort[0].ch_names,
        ch_types=cohort[0].ch_types,
        soz=cohort[0].soz,
    )
    with pytest.raises(ValueError, match="no subject"):
        fit_combined([nameless, cohort[1]], markers=MARKERS, progress=False)
    with pytest.raises(ValueError, match="Invalid Cs"):
        fit_combined(cohort, markers=MARKERS, Cs=(0.0, 1.0), progress=False)


def test_save_load_round_trip_and_refusals(tmp_path, weights, cohort):
    path = save_weights(weights, tmp_path / "sub" / "weights.json")
    loaded = load_weights(path)
    assert loaded == json.loads(json.dumps(weights))
    recording = cohort[1]
    from_file = CombinedScorer(path).score(recording).channels
    from_dict = CombinedScorer(weights).score(recording).channels
    np.testing.assert_allclose(from_file["value"], from_dict["value"])
    assert list(from_file["channel"]) == list(from_dict["channel"])
    with pytest.raises(FileExistsError, match="overwrite=True"):
        save_weights(weights, path)
    save_weights({**weights, "intercept": 1.5}, path, overwrite=True)
    assert load_weights(path)["intercept"] == 1.5


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"coefficients": [1.0, 2.0]}, "coefficients"),
        ({"coefficients": [1.0, float("nan"), 0.0, 0.0]}, "coefficients"),
        ({"markers": ["amplitude", "no_such_marker"]}, "markers"),
        ({"features": ["a", "b", "c", "d"]}, "features"),
        ({"C": -1}, "C"),
        ({"params": {"window_s": 2.0}}, "params"),
        ({"format": "something else"}, "format"),
    ],
)
def test_a_malformed_weights_file_is_refused_naming_the_file_and_field(tmp_path, weights, change, field):
    path = tmp_path / "bad.json"
    path.write_text(json.dumps({**weights, **change}))
    with pytest.raises(ValueError, match=rf"bad\.json: field '{field}'"):
        load_weights(path)


def test_unreadable_weights_and_bad_arguments_are_refused(tmp_path, weights):
    path = tmp_path / "broken.json"
    path.write_text("{not json")
    with pytest.raises(ValueError, match=r"broken\.json is not a combined weights file"):
        CombinedScorer(path)
    missing = {k: v for k, v in weights.items() if k != "intercept"}
    with pytest.raises(ValueError, match="field 'intercept' is missing"):
        CombinedScorer(missing)
    with pytest.raises(ValueError, match="needs weights="):
        CombinedScorer()
    with pytest.raises(ValueError, match=r"Invalid markers=.*no_such_marker"):
        fit_combined([], markers=("amplitude", "no_such_marker"), patients=[], progress=False)
    with pytest.raises(ValueError, match="Invalid markers"):
        fit_combined([], markers=("amplitude", "consensus"), patients=[], progress=False)
    with pytest.raises(ValueError, match="fitted without a model feature"):
        CombinedScorer(weights, model=DEMO_MODEL)


def test_an_unsupported_marker_ranks_every_channel_at_the_middle(weights):
    slow = spiky_recording("slow", seed=5)
    slow = Recording(
        data=slow.data[:, ::2].copy(),
        sfreq=250.0,
        ch_names=slow.ch_names,
        ch_types=slow.ch_types,
        soz=slow.soz,
        subject="slow",
        line_freq=50.0,
    )
    scorer = CombinedScorer(weights)
    table = scorer.channel_features(slow)
    assert (table["ripple_rate_rank"] == 0.5).all()  # ripples need ≥ 450 Hz
    assert table["spike_rate_rank"].nunique() > 1
    scores = scorer.score(slow)
    assert "ripple_rate_rank at 0.5" in scores.scorer_info["reference"]
    assert set(scores.channels["channel"][:N_SOZ]) == {f"A{i + 1}" for i in range(N_SOZ)}


def test_the_sss_model_is_a_feature_and_its_weights_name_it(cohort):
    weights = fit_combined(cohort[:3], markers=("amplitude", "spike_rate"), model=DEMO_MODEL, Cs=(1.0,), progress=False)
    assert weights["features"] == ["amplitude_rank", "spike_rate_rank", MODEL_FEATURE]
    assert weights["model"]["path"] == str(DEMO_MODEL.resolve()) and len(weights["model"]["config_sha256"]) == 64
    scorer = CombinedScorer(weights)  # the model is loaded from the directory in the weights
    table = scorer.channel_features(cohort[3])
    assert table[MODEL_FEATURE].nunique() > 1 and table[MODEL_FEATURE].between(0, 1).all()
    short = spiky_recording("short", seed=6, duration_s=3.0)  # shorter than one 4.1 s window of the model
    short_table = scorer.channel_features(short)
    assert (short_table[MODEL_FEATURE] == 0.5).all()
    assert f"{MODEL_FEATURE} at 0.5" in scorer.score(short).scorer_info["reference"]
    with pytest.raises(ValueError, match="configuration hash"):
        CombinedScorer({**weights, "model": {**weights["model"], "config_sha256": "0" * 64}})


def test_a_centre_fits_its_own_combined_scorer_and_scores_with_it_from_the_command_line(tmp_path, capsys):
    from sss_viewer.cli import main

    files = []
    for i in range(3):
        rec = spiky_recording(f"p{i}", seed=10 + i)
        path = tmp_path / f"sub-p{i}_run-01_ieeg.npz"
        np.savez(path, data=rec.data, ch_names=np.array(rec.ch_names), fs=rec.sfreq, soz=rec.soz)
        files.append(str(path))
    weights_file = tmp_path / "centre.json"
    argv = ["fit-combined", *files[:2], "--out", str(weights_file), "--markers", ",".join(MARKERS), "-q"]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "fitted on 2 patients" in out and "spike_rate_rank" in out
    assert main(argv) == 1 and "exists" in capsys.readouterr().err  # never overwritten unasked
    code = main(["score", files[2], "--scorer", "combined", "--out", str(tmp_path / "s"), "-q"])
    assert code == 2 and "needs --weights FILE" in capsys.readouterr().err
    code = main(
        ["score", files[2], "--scorer", "combined", "--weights", str(weights_file), "--out", str(tmp_path / "s"), "-q"]
    )
    assert code == 0
    import pandas as pd

    channels = pd.read_csv(tmp_path / "s" / "channels.csv")
    assert (channels["scorer"] == "combined").all()
    assert set(channels["channel"].iloc[:N_SOZ]) == {f"A{i + 1}" for i in range(N_SOZ)}  # the spiking contacts first

"""End to end through the real CLI on a synthetic cohort, split by patient.

synth (BrainVision files) → train → evaluate on held-out patients → score one file. The trained
model must rank SOZ channels of unseen patients (AUC ≥ 0.90) and its heat map must find the
abnormal seconds inside SOZ channels (AUC ≥ 0.85), while whole-channel statistics on the same
split stay ≤ 0.75 — so the task needs the local window model.
"""

import json
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

from sss_viewer.baselines.global_features import GlobalFeatureBaseline
from sss_viewer.io.cohort import load_data
from sss_viewer.metrics import binary_auc

pytestmark = pytest.mark.slow

SYNTH_ARGS = ["--patients", "12", "--seed", "0", "--duration-scale", "0.3", "--max-channels", "40"]
TRAIN_ARGS = ["--train-stride", "256", "--epochs", "4", "--device", "cpu", "--seed", "0"]


def run_cli(*args: str) -> subprocess.CompletedProcess:
    proc = subprocess.run(
        [sys.executable, "-m", "sss_viewer.cli", str(args[0]), "-q", *map(str, args[1:])],
        capture_output=True,
        text=True,
        timeout=1200,
    )
    assert proc.returncode == 0, f"sss-viewer {' '.join(map(str, args))} failed:\n{proc.stderr[-3000:]}"
    return proc


@pytest.fixture(scope="module")
def cohort(tmp_path_factory):
    out = tmp_path_factory.mktemp("e2e") / "cohort"
    run_cli("synth", "--out", out, *SYNTH_ARGS)
    return out


@pytest.fixture(scope="module")
def model_dir(cohort):
    out = cohort.parent / "model"
    run_cli("train", cohort, "--out", out, *TRAIN_ARGS)
    return out


def test_held_out_patients_are_ranked_and_localised(model_dir, cohort):
    report = json.loads(run_cli("evaluate", model_dir, cohort, "--json").stdout)
    config = json.loads((model_dir / "config.json").read_text())
    test_subjects = config["info"]["split"]["test"]
    assert config["info"]["split"]["mode"] == "patient"
    assert set(report["per_patient"]) == set(test_subjects)
    assert report["pooled"]["auc"] >= 0.90, report
    assert report["heatmap_auc"] >= 0.85, report
    for key in ("auc", "auprc", "brier", "balanced_accuracy", "f1", "accuracy"):
        assert np.isfinite(report["pooled"][key])
    assert report["at_0.5"]["threshold"] == 0.5


def test_global_features_fail_on_the_same_split(model_dir, cohort):
    split = json.loads((model_dir / "config.json").read_text())["info"]["split"]
    recordings = load_data(cohort)

    def channels(subjects):
        signals, rates, labels = [], [], []
        for rec in recordings:
            if rec.subject in subjects:
                for i in rec.ieeg_picks():
                    signals.append(np.asarray(rec.data[i]))
                    rates.append(rec.sfreq)
                    labels.append(int(rec.soz[i]))
        return signals, rates, np.array(labels)

    x_train, f_train, y_train = channels(set(split["train"]) | set(split["val"]))
    x_test, f_test, y_test = channels(set(split["test"]))
    baseline = GlobalFeatureBaseline().fit(x_train, f_train, y_train)
    auc = binary_auc(baseline.predict_proba(x_test, f_test), y_test)
    assert auc <= 0.75, f"global-feature baseline AUC {auc:.3f}: the synthetic task is separable without SSS"


def test_score_writes_window_and_channel_tables(model_dir, cohort, tmp_path):
    split = json.loads((model_dir / "config.json").read_text())["info"]["split"]
    table = pd.read_csv(cohort / "cohort.tsv", sep="\t", dtype=str)
    row = table[table["subject"] == split["test"][0]].iloc[0]
    out = tmp_path / "scores"
    run_cli("score", model_dir, cohort / row["path"], "--out", out, "--labels", cohort / "labels.tsv")
    windows = pd.read_csv(out / "windows.csv")
    channels = pd.read_csv(out / "channels.csv")
    assert list(windows.columns) == ["channel", "start_s", "end_s", "p_raw", "p_cal", "p0", "p1", "artifact"]
    assert list(channels.columns) == ["channel", "score", "lower", "upper", "rank", "label", "artifact", "scorer"]
    assert (channels["scorer"] == "sss").all()
    assert channels["rank"].tolist() == list(range(1, len(channels) + 1))
    assert windows["end_s"].max() == pytest.approx(float(row["duration_s"]), abs=0.01)
    assert channels["label"].sum() > 0
    # the source file is untouched (a second run into the same folder needs --overwrite: tests/front_door/test_bad_inputs.py)
    assert (cohort / row["path"]).exists()

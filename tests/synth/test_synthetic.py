"""The synthetic multi-centre cohort: determinism, layout, MNE readability, labels, band limits."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import mne
import numpy as np
import pandas as pd
import pytest
from scipy import signal

from sss_viewer.synth._signals import phase_randomise
from sss_viewer.synth.cohort import generate_cohort
from sss_viewer.synth.config import ABNORMAL_KINDS, CENTRES, SynthConfig, centre_table
from sss_viewer.synth.run import synthesise_recording

SEED = 9  # patient 3 (UMMC) draws a 249.85 Hz run at this seed
SMALL = SynthConfig(duration_scale=0.1, max_channels=12)


@pytest.fixture(scope="module")
def cohort(tmp_path_factory) -> Path:
    """Four small patients, one per centre."""
    return generate_cohort(tmp_path_factory.mktemp("synth") / "cohort", 4, seed=SEED, config=SMALL)


def _digest(root: Path) -> dict[str, str]:
    files = sorted(p for p in root.rglob("*") if p.is_file())
    return {p.relative_to(root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest() for p in files}


def _union_s(rows: pd.DataFrame) -> float:
    covered, end = 0.0, -np.inf
    for on, off in sorted(zip(rows["onset_s"], rows["offset_s"])):
        covered += max(0.0, off - max(on, end))
        end = max(end, off)
    return covered


def test_centre_table_has_real_rates():
    table = centre_table()
    assert set(table) == set(CENTRES)
    ummc = set(np.round(table["UMMC"]["sfreq_hz"], 2))
    assert {249.85, 499.71, 999.41} <= ummc
    for centre in CENTRES:
        entry = table[centre]
        assert len(entry["n_good_channels"]) == len(entry["duration_s"]) == len(entry["sfreq_hz"])
        assert sum(entry["runs_per_subject"]) == len(entry["duration_s"])
        assert entry["line_freq_hz"] and entry["shafts"]


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"max_channels": 3}, "max_channels"),
        ({"duration_scale": 0}, "duration_scale"),
        ({"runs_per_patient": 0}, "runs_per_patient"),
        ({"episode_fraction": (0.1, 0.15)}, "max_abnormal_fraction"),
        ({"hfo_freq_hz": (90.0, 99.0)}, "hfo_freq_hz"),
        ({"centre_amplitude_uv": {"JHH": 1.0}}, "lacks centres"),
    ],
)
def test_config_validation(kwargs, match):
    with pytest.raises(ValueError, match=match):
        SynthConfig(**kwargs)


def test_generation_is_deterministic_and_patient_stable(cohort, tmp_path):
    """Same seed → byte-identical files; patient k does not depend on the cohort size."""
    first = generate_cohort(tmp_path / "a", 2, seed=SEED, config=SMALL)
    second = generate_cohort(tmp_path / "b", 2, seed=SEED, config=SMALL)
    assert _digest(first) == _digest(second)
    big = _digest(cohort)
    for name, digest in _digest(first).items():
        if name.startswith("sub-"):
            assert big[name] == digest, name
    other = _digest(generate_cohort(tmp_path / "c", 1, seed=SEED + 1, config=SMALL))
    eeg = next(name for name in other if name.endswith(".eeg"))
    assert other[eeg] != big.get(eeg)


def test_in_memory_matches_written(cohort):
    recording, intervals = synthesise_recording(2, seed=SEED, config=SMALL)
    row = pd.read_csv(cohort / "cohort.tsv", sep="\t", dtype={"run": str}).iloc[2]
    raw = mne.io.read_raw_brainvision(cohort / row["path"], preload=True, verbose="error")
    np.testing.assert_allclose(raw.get_data() * 1e6, recording.data, atol=1e-3, rtol=1e-5)
    abnormal = pd.read_csv(cohort / "abnormal.tsv", sep="\t", dtype={"run": str})
    assert len(abnormal[abnormal["subject"] == recording.subject]) == len(intervals)


def test_layout_and_tables(cohort):
    participants = pd.read_csv(cohort / "participants.tsv", sep="\t")
    assert list(participants.columns) == ["participant_id", "site"]
    assert list(participants["site"]) == list(CENTRES)
    assert participants["participant_id"].tolist() == [f"sub-synth{i:02d}" for i in range(1, 5)]
    table = pd.read_csv(cohort / "cohort.tsv", sep="\t", dtype={"run": str})
    assert list(table.columns) == ["subject", "centre", "run", "path", "sfreq", "line_freq", "n_channels", "duration_s"]
    for row in table.itertuples():
        vhdr = cohort / row.path
        base = str(vhdr)[: -len("_ieeg.vhdr")]
        for suffix in ("_ieeg.vhdr", "_ieeg.vmrk", "_ieeg.eeg", "_channels.tsv", "_events.tsv", "_ieeg.json"):
            assert Path(base + suffix).is_file(), base + suffix
        assert vhdr.parent.relative_to(cohort).as_posix() == f"sub-{row.subject}/ses-presurgery/ieeg"
        sidecar = json.loads(Path(base + "_ieeg.json").read_text())
        assert sidecar["SamplingFrequency"] == pytest.approx(row.sfreq)
        assert sidecar["PowerLineFrequency"] == row.line_freq
        assert sidecar["RecordingDuration"] == pytest.approx(row.duration_s)
        channels = pd.read_csv(base + "_channels.tsv", sep="\t")
        assert set(channels["type"]) <= {"ECOG", "SEEG"} and set(channels["status"]) == {"good"}
        assert len(channels) == row.n_channels
    description = json.loads((cohort / "dataset_description.json").read_text())
    assert description["SynthSeed"] == SEED


def test_files_readable_by_mne(cohort):
    table = pd.read_csv(cohort / "cohort.tsv", sep="\t", dtype={"run": str})
    labels = pd.read_csv(cohort / "labels.tsv", sep="\t")
    assert any(abs(f - 249.853552) < 1e-3 for f in table["sfreq"]), "expected a 249.85 Hz UMMC run"
    for row in table.itertuples():
        raw = mne.io.read_raw_brainvision(cohort / row.path, preload=False, verbose="error")
        assert raw.info["sfreq"] == pytest.approx(row.sfreq, rel=1e-9)
        assert raw.n_times / raw.info["sfreq"] == pytest.approx(row.duration_s, abs=1e-3)
        assert raw.ch_names == labels.loc[labels["subject"] == row.subject, "channel"].tolist()
        onset_word = centre_table()[row.centre]["onset_marker"]
        offset_word = centre_table()[row.centre]["offset_marker"]
        descriptions = [d.split("/", 1)[1] for d in raw.annotations.description]
        assert descriptions == [onset_word, offset_word]
        events = pd.read_csv(str(cohort / row.path)[: -len("_ieeg.vhdr")] + "_events.tsv", sep="\t")
        assert events["trial_type"].tolist() == [onset_word, offset_word]
        np.testing.assert_allclose(raw.annotations.onset, events["onset"], atol=1.5 / row.sfreq)


def test_seizure_marker_wording_per_centre():
    """Markers use each centre's ds003029 wording."""
    words = {c: (centre_table()[c]["onset_marker"], centre_table()[c]["offset_marker"]) for c in CENTRES}
    assert words["NIH"] == ("onset", "offset")
    assert words["UMMC"] == ("sz onset", "sz offset")
    assert words["UMF"] == ("eeg sz start", "eeg sz end")
    assert words["JHH"][0].startswith("SZ EVENT")


def test_labels_and_abnormal_intervals_consistent(cohort):
    table = pd.read_csv(cohort / "cohort.tsv", sep="\t", dtype={"run": str})
    labels = pd.read_csv(cohort / "labels.tsv", sep="\t")
    abnormal = pd.read_csv(cohort / "abnormal.tsv", sep="\t", dtype={"run": str})
    assert list(abnormal.columns) == ["subject", "run", "channel", "onset_s", "offset_s", "kind"]
    assert set(abnormal["kind"]) <= set(ABNORMAL_KINDS)
    assert (abnormal["offset_s"] > abnormal["onset_s"]).all()
    for row in table.itertuples():
        subject_labels = labels[labels["subject"] == row.subject]
        soz = set(subject_labels.loc[subject_labels["soz"] == 1, "channel"])
        assert 2 <= len(soz) <= len(subject_labels) // 3
        rows = abnormal[(abnormal["subject"] == row.subject) & (abnormal["run"] == row.run)]
        assert rows["onset_s"].min() >= 0 and rows["offset_s"].max() <= row.duration_s
        assert set(rows["channel"]) <= set(subject_labels["channel"])
        for channel in soz:
            mine = rows[rows["channel"] == channel]
            assert len(mine) > 0, f"{row.subject} {channel} has no abnormal interval"
            assert "seizure" in set(mine["kind"])
            assert _union_s(mine) / row.duration_s <= 0.2 + 1e-6
        non_soz = rows[~rows["channel"].isin(soz)]
        assert set(non_soz["kind"]) <= {"seizure_spread"}


def test_soz_is_contiguous_contacts():
    recording, _ = synthesise_recording(1, seed=SEED, config=SynthConfig(duration_scale=0.05))
    soz = np.flatnonzero(recording.soz)
    shafts = {name.rstrip("0123456789") for name in np.array(recording.ch_names)[soz]}
    assert 1 <= len(shafts) <= 2
    runs = np.split(soz, np.flatnonzero(np.diff(soz) != 1) + 1)
    assert len(runs) <= 2
    assert 0.1 <= recording.soz.mean() <= 0.25


def test_soz_signature_survives_resampling_to_250_hz():
    """Spike-episode energy lies below 100 Hz, so resampling to 250 Hz keeps it."""
    config = SynthConfig(duration_scale=0.1, max_channels=16)
    with_sig, intervals = synthesise_recording(1, seed=SEED, config=config)
    null_config = SynthConfig(duration_scale=0.1, max_channels=16, signatures=False)
    null, null_intervals = synthesise_recording(1, seed=SEED, config=null_config)
    assert null_intervals.empty and with_sig.sfreq == 1000.0
    diff = with_sig.data.astype(np.float64) - null.data
    touched = {with_sig.ch_names[i] for i in np.flatnonzero(np.abs(diff).max(axis=1) > 0)}
    assert touched <= set(intervals["channel"])  # signatures only where the ground truth says
    episodes = intervals[intervals["kind"] == "spike_episode"]
    assert len(episodes) > 0
    above = total = kept = 0.0
    for row in episodes.itertuples():
        x = diff[with_sig.ch_names.index(row.channel), int(row.onset_s * 1000) : int(row.offset_s * 1000)]
        freqs, psd = signal.periodogram(x, fs=1000.0)
        above += psd[freqs >= 100].sum()
        total += psd.sum()
        kept += 4 * np.sum(signal.resample_poly(x, 1, 4) ** 2)  # 1000 → 250 Hz, anti-aliased
    assert above / total < 1e-3
    energy = sum(
        np.sum(diff[with_sig.ch_names.index(r.channel), int(r.onset_s * 1000) : int(r.offset_s * 1000)] ** 2)
        for r in episodes.itertuples()
    )
    assert kept / energy > 0.95


def test_phase_randomise_keeps_power_spectrum():
    rng = np.random.default_rng(0)
    x = np.zeros(4000)
    x[::400] = 10.0  # a sharp spike train
    y = phase_randomise(x, rng, taper_fraction=0.0)
    np.testing.assert_allclose(np.abs(np.fft.rfft(y)), np.abs(np.fft.rfft(x)), rtol=1e-4, atol=1e-3)
    assert np.abs(y).max() < 0.5 * np.abs(x).max()


def test_recording_metadata():
    recording, _ = synthesise_recording(0, seed=SEED, config=SMALL)
    assert recording.centre == "JHH" and recording.subject == "synth01" and recording.run == "01"
    assert recording.data.dtype == np.float32 and recording.line_freq == 60.0
    assert set(recording.ch_types) <= {"ecog", "seeg"}
    assert len(recording.events) == 2 and recording.events[0].onset < recording.events[1].onset
    with pytest.raises(ValueError, match="run"):
        synthesise_recording(0, run=2, seed=SEED, config=SMALL)


def test_line_freq_override():
    config = SynthConfig(duration_scale=0.1, max_channels=8, line_freq_hz={"JHH": 50.0})
    recording, _ = synthesise_recording(0, seed=SEED, config=config)
    assert recording.line_freq == 50.0


@pytest.mark.slow
def test_global_features_fail_where_local_spikes_succeed():
    """The benchmark's point: whole-channel statistics barely separate SOZ, 4-s spike morphology does."""
    baselines = pytest.importorskip("sss_viewer.baselines.global_features")
    from sklearn.metrics import roc_auc_score

    from sss_viewer.preprocessing.config import preprocess_preset
    from sss_viewer.preprocessing.filters import preprocess_channel

    config = SynthConfig(duration_scale=0.3, max_channels=40)
    prep = preprocess_preset("default", zscore=False)
    patients = []
    for k in range(12):
        recording, _ = synthesise_recording(k, seed=0, config=config)
        series = [preprocess_channel(x, recording.sfreq, prep, line_freq=recording.line_freq) for x in recording.data]
        patients.append((series, np.array([_spike_score(y) for y in series]), recording.soz.astype(int)))
    test = [8, 9, 10, 11]
    train = [k for k in range(12) if k not in test]
    y_train = np.concatenate([patients[k][2] for k in train])
    model = baselines.GlobalFeatureBaseline().fit([x for k in train for x in patients[k][0]], 250.0, y_train)
    y_test = np.concatenate([patients[k][2] for k in test])
    global_auc = roc_auc_score(y_test, model.predict_proba([x for k in test for x in patients[k][0]], 250.0))
    local_auc = roc_auc_score(y_test, np.concatenate([patients[k][1] for k in test]))
    assert global_auc <= 0.75
    assert local_auc > 0.85


def _spike_score(y: np.ndarray, window: int = 1000) -> float:
    """Top-decile mean over 4-s windows (at 250 Hz) of max |z-scored first difference|."""
    n = len(y) // window
    d = np.diff(y[: n * window].reshape(n, window).astype(np.float64), axis=1)
    z = np.abs((d - d.mean(axis=1, keepdims=True)) / d.std(axis=1, keepdims=True)).max(axis=1)
    return float(np.sort(z)[-max(1, int(np.ceil(0.1 * n))) :].mean())

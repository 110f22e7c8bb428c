"""The ds003029-like BIDS generator: layout, sidecars, signals and determinism.

Runs on the subset of the real ds003029 sidecars vendored in ``tests/data/ds003029-meta``.
"""

import json
import warnings
from pathlib import Path

import mne
import mne_bids
import numpy as np
import pandas as pd
import pytest
from scipy.signal import butter, sosfiltfilt

from sss_viewer.io.seizure_events import read_seizure_markers
from tests.fixtures.bids_fixture import (
    CLINICAL_COLUMNS,
    CLINICAL_SUMMARY,
    DEFAULT_SUBJECTS,
    NO_SOZ_SUBJECT,
    PT01_SOZ,
    UNMATCHED_SOZ_SUBJECT,
    clinical_dataset_id,
    read_manifest,
    write_ds003029_like,
)
from tests.fixtures.recordings import DS003029_META as META

_MNE_BIDS_EXPECTED_WARNINGS = (
    "Did not find any electrodes.tsv",  # ds003029 ships no electrode positions
    "Did not find any coordsystem.json",
    "Unable to map the following column",  # participants.tsv outcome/engel_score/site …
)


@pytest.fixture(scope="module")
def meta_root() -> Path:
    return META


def _runs(root: Path):
    for subject in read_manifest(root)["subjects"]:
        for run in subject["runs"]:
            yield subject, run


def _sidecar(vhdr: Path, suffix: str) -> Path:
    return vhdr.with_name(vhdr.name.replace("_ieeg.vhdr", f"_{suffix}"))


def _real(vhdr: Path, suffix: str) -> Path:
    subject = vhdr.name.split("_")[0]
    return META / subject / "ses-presurgery" / "ieeg" / _sidecar(vhdr, suffix).name


def _tsv(path: Path) -> pd.DataFrame:
    return pd.read_csv(path, sep="\t", dtype=str, keep_default_na=False)


def _small(meta_root: Path, out: Path, **kwargs) -> Path:
    defaults = {"subjects": ["ummc008"], "duration_s": 8.0, "max_channels": 12}
    return write_ds003029_like(meta_root, out, **{**defaults, **kwargs})


# ------------------------------------------------------------------------------------ layout


def test_mne_bids_lists_subjects_and_runs(ds003029_like_root):
    root = ds003029_like_root
    assert mne_bids.get_entity_vals(root, "subject") == sorted(DEFAULT_SUBJECTS)
    found = mne_bids.find_matching_paths(root, suffixes="ieeg", extensions=".vhdr")
    expected = {Path(run["vhdr"]).name for _, run in _runs(root)}
    assert {p.fpath.name for p in found} == expected
    assert len(expected) == 11  # two runs each, but umf004 has one


def test_participants_and_scans_keep_real_rows(ds003029_like_root):
    root = ds003029_like_root
    participants = _tsv(root / "participants.tsv")
    assert sorted(participants["participant_id"]) == sorted(f"sub-{s}" for s in DEFAULT_SUBJECTS)
    real = _tsv(META / "participants.tsv").set_index("participant_id")
    pd.testing.assert_frame_equal(participants.set_index("participant_id"), real.loc[participants["participant_id"]])
    assert (root / "dataset_description.json").read_bytes() == (META / "dataset_description.json").read_bytes()
    for subject in read_manifest(root)["subjects"]:
        name = f"sub-{subject['subject']}_ses-presurgery_scans.tsv"
        scans = _tsv(root / f"sub-{subject['subject']}" / "ses-presurgery" / name)
        assert list(scans["filename"]) == [f"ieeg/{Path(r['vhdr']).name}" for r in subject["runs"]]
        real_scans = _tsv(META / f"sub-{subject['subject']}" / "ses-presurgery" / name)
        assert scans.to_dict("records") == real_scans[real_scans["filename"].isin(scans["filename"])].to_dict("records")


# ------------------------------------------------------------------------------------ signals


def test_brainvision_has_real_channel_names_and_rates(ds003029_like_root):
    rates = set()
    for _, run in _runs(ds003029_like_root):
        vhdr = ds003029_like_root / run["vhdr"]
        raw = mne.io.read_raw_brainvision(vhdr, preload=False, verbose="error")
        channels = _tsv(_sidecar(vhdr, "channels.tsv"))
        real_sfreq = json.loads(_real(vhdr, "ieeg.json").read_text())["SamplingFrequency"]
        assert raw.ch_names == list(channels["name"]) == run["channels"]
        assert abs(raw.info["sfreq"] - real_sfreq) < 1e-3
        assert raw.n_times == run["n_times"]
        rates.add(round(raw.info["sfreq"], 2))
    assert {249.85, 499.71, 999.41, 1000.0, 2000.0} <= rates


def test_channels_tsv_rows_are_real_and_subset_keeps_dollar_bad_and_soz(ds003029_like_root):
    seen_dollar = False
    for subject, run in _runs(ds003029_like_root):
        vhdr = ds003029_like_root / run["vhdr"]
        lines = _sidecar(vhdr, "channels.tsv").read_text().splitlines()
        real_lines = _real(vhdr, "channels.tsv").read_text().splitlines()
        assert lines[0] == real_lines[0]
        assert set(lines[1:]) <= set(real_lines[1:])  # verbatim rows
        assert len(lines) - 1 == run["n_channels"] <= 40
        real = _tsv(_real(vhdr, "channels.tsv"))
        dollar = [n for n in real["name"] if n.startswith("$")]
        seen_dollar |= bool(dollar)
        assert set(dollar) <= set(run["channels"])
        if (real["status"] == "bad").any():
            assert run["bad_channels"]
        assert set(subject["soz_matched"]) <= set(run["channels"])
        channels = _tsv(_sidecar(vhdr, "channels.tsv"))
        sfreq = json.loads(_sidecar(vhdr, "ieeg.json").read_text())["SamplingFrequency"]
        assert np.allclose(channels["sampling_frequency"].astype(float), sfreq, rtol=1e-12)
    assert seen_dollar


def test_ieeg_json_is_real_with_short_duration_and_recounted_channels(ds003029_like_root):
    for _, run in _runs(ds003029_like_root):
        vhdr = ds003029_like_root / run["vhdr"]
        sidecar = json.loads(_sidecar(vhdr, "ieeg.json").read_text())
        real = json.loads(_real(vhdr, "ieeg.json").read_text())
        assert sidecar["RecordingDuration"] == pytest.approx((run["n_times"] - 1) / real["SamplingFrequency"])
        assert sidecar["RecordingDuration"] == pytest.approx(24.0, abs=0.01)
        types = list(_tsv(_sidecar(vhdr, "channels.tsv"))["type"])
        assert sidecar["ECOGChannelCount"] == types.count("ECOG")
        assert sidecar["SEEGChannelCount"] == types.count("SEEG")
        assert sidecar["MiscChannelCount"] == types.count("MISC")
        unchanged = {k: v for k, v in real.items() if k != "RecordingDuration" and not k.endswith("ChannelCount")}
        assert {k: sidecar[k] for k in unchanged} == unchanged


def test_events_are_rescaled_and_keep_text_verbatim(ds003029_like_root):
    for _, run in _runs(ds003029_like_root):
        vhdr = ds003029_like_root / run["vhdr"]
        events = _tsv(_sidecar(vhdr, "events.tsv"))
        real = _tsv(_real(vhdr, "events.tsv"))
        duration = json.loads(_sidecar(vhdr, "ieeg.json").read_text())["RecordingDuration"]
        onsets = events["onset"].astype(float).to_numpy()
        assert list(events["trial_type"]) == list(real["trial_type"])
        assert list(events["value"]) == list(real["value"])
        assert np.all((onsets >= 0) & (onsets <= duration))
        scale = duration / run["real_duration_s"]
        np.testing.assert_allclose(onsets, real["onset"].astype(float) * scale, atol=1e-6)
        np.testing.assert_array_equal(events["sample"].astype(int), np.round(onsets * run["sfreq"]).astype(int))
        markers = read_seizure_markers(_sidecar(vhdr, "events.tsv"))
        assert markers.onset_text == run["onset_marker"]
        if run["onset_marker"] is not None:
            assert run["onset_marker"] in set(real["trial_type"])
            assert markers.onset_s == pytest.approx(run["seizure_onset_s"], abs=1e-5)
    no_onset = [run for _, run in _runs(ds003029_like_root) if run["onset_marker"] is None]
    assert [Path(r["vhdr"]).name for r in no_onset] == ["sub-pt17_ses-presurgery_task-ictal_acq-ecog_run-01_ieeg.vhdr"]


def test_vmrk_holds_ds003029_style_stimulus_markers(ds003029_like_root):
    run = read_manifest(ds003029_like_root)["subjects"][0]["runs"][0]
    vhdr = ds003029_like_root / run["vhdr"]
    raw = mne.io.read_raw_brainvision(vhdr, preload=False, verbose="error")
    events = _tsv(_sidecar(vhdr, "events.tsv"))
    assert list(raw.annotations.description) == [f"Stimulus/S{int(v):>3}" for v in events["value"]]
    np.testing.assert_allclose(raw.annotations.onset, events["sample"].astype(int) / raw.info["sfreq"], atol=1e-9)
    assert raw.info["meas_date"].year == 1920  # scans.tsv acq_time of pt01 run-01


def test_mne_bids_reads_every_run(ds003029_like_root):
    with warnings.catch_warnings():
        for message in _MNE_BIDS_EXPECTED_WARNINGS:
            warnings.filterwarnings("ignore", message=message, category=RuntimeWarning)
        for _, run in _runs(ds003029_like_root):
            path = mne_bids.get_bids_path_from_fname(ds003029_like_root / run["vhdr"])
            raw = mne_bids.read_raw_bids(path, verbose="warning")
            assert sorted(raw.info["bads"]) == sorted(run["bad_channels"])
            if run["onset_marker"] is not None:
                assert run["onset_marker"] in set(raw.annotations.description)


def _spike_counts(data_uv: np.ndarray, sfreq: float) -> np.ndarray:
    """Sharp transients per channel: 8–70 Hz excursions beyond 6 robust SDs, 0.2 s apart."""
    sos = butter(4, [8.0, min(70.0, 0.45 * sfreq)], "bandpass", fs=sfreq, output="sos")
    y = sosfiltfilt(sos, data_uv, axis=1)
    y /= np.median(np.abs(y), axis=1, keepdims=True) / 0.6745
    counts = []
    for row in y:
        hits = np.flatnonzero(np.abs(row) > 6.0)
        counts.append(int(np.sum(np.diff(hits, prepend=-(10**9)) > 0.2 * sfreq)))
    return np.asarray(counts)


def test_soz_channels_carry_the_signature(ds003029_like_root):
    for subject, run in _runs(ds003029_like_root):
        if not run["soz_channels"]:
            continue
        raw = mne.io.read_raw_brainvision(ds003029_like_root / run["vhdr"], preload=True, verbose="error")
        keep = [i for i, n in enumerate(raw.ch_names) if n not in run["bad_channels"] and not n.startswith("$")]
        counts = _spike_counts(raw.get_data(picks=keep) * 1e6, raw.info["sfreq"])
        soz = np.isin(np.asarray(raw.ch_names)[keep], run["soz_channels"])
        pairs = counts[soz][:, None] - counts[~soz][None, :]
        auc = np.mean((pairs > 0) + 0.5 * (pairs == 0))
        assert auc >= 0.75, (subject["subject"], run["run"], counts[soz], counts[~soz])


# ------------------------------------------------------------------------------------ SOZ and clinical table


def test_default_soz_rules(ds003029_like_root):
    subjects = {s["subject"]: s for s in read_manifest(ds003029_like_root)["subjects"]}
    assert subjects["pt01"]["soz_contacts"] == PT01_SOZ
    assert subjects["pt01"]["soz_unmatched"] == []
    assert len(subjects[UNMATCHED_SOZ_SUBJECT]["soz_unmatched"]) == 1
    assert subjects[NO_SOZ_SUBJECT]["soz_contacts"] == ""
    for name, subject in subjects.items():
        if name in ("pt01", NO_SOZ_SUBJECT):
            continue
        assert 2 <= len(subject["soz_matched"]) <= 4
        for run in subject["runs"]:
            channels = _tsv(_sidecar(ds003029_like_root / run["vhdr"], "channels.tsv"))
            rows = channels.set_index("name").loc[subject["soz_matched"]]
            assert set(rows["status"]) == {"good"}
            assert set(rows["type"]) <= {"ECOG", "SEEG"}


def test_clinical_summary_reads_back(ds003029_like_root):
    table = pd.read_excel(ds003029_like_root / CLINICAL_SUMMARY)
    assert set(table.columns) == set(CLINICAL_COLUMNS)
    assert list(table["dataset_id"]) == ["pt1", "jh101", "ummc_008", "umf004", "pt17", "ummc_001"]
    assert set(table["clinical_center"]) == {"nih", "jhh", "ummc", "umf"}
    assert table.set_index("dataset_id").loc["pt1", "soz_contacts"] == PT01_SOZ
    assert pd.isna(table.set_index("dataset_id").loc[clinical_dataset_id(NO_SOZ_SUBJECT), "soz_contacts"])
    assert table["surgery_type"].isna().all()
    participants = _tsv(META / "participants.tsv").set_index("participant_id")
    for _, row in table.iterrows():
        subject = next(s for s in DEFAULT_SUBJECTS if clinical_dataset_id(s) == row["dataset_id"])
        real = participants.loc[f"sub-{subject}"]
        assert (row["outcome"], row["engel_score"], row["ilae_score"]) == (
            real["outcome"],
            float(real["engel_score"]),
            float(real["ilae_score"]),
        )


def test_clinical_dataset_id_quirks():
    assert [clinical_dataset_id(s) for s in ("pt01", "pt10", "pt2", "ummc001", "jh101", "umf004")] == [
        "pt1",
        "pt10",
        "pt2",
        "ummc_001",
        "jh101",
        "umf004",
    ]


# ------------------------------------------------------------------------------------ options and errors


def test_same_arguments_give_identical_eeg_bytes(meta_root, tmp_path):
    first = _small(meta_root, tmp_path / "a")
    second = _small(meta_root, tmp_path / "b")
    other_seed = _small(meta_root, tmp_path / "c", seed=1)
    eeg = sorted(p.relative_to(first) for p in first.rglob("*.eeg"))
    assert len(eeg) == 2
    for rel in eeg:
        assert (first / rel).read_bytes() == (second / rel).read_bytes()
        assert (first / rel).read_bytes() != (other_seed / rel).read_bytes()
    sidecars = [p for p in first.rglob("*") if p.suffix in (".tsv", ".json", ".vhdr", ".vmrk")]
    for rel in sorted(p.relative_to(first) for p in sidecars):
        assert (first / rel).read_bytes() == (second / rel).read_bytes(), rel


def test_mixed_rate_subject_keeps_each_runs_rate(meta_root, tmp_path):
    root = _small(meta_root, tmp_path)
    runs = read_manifest(root)["subjects"][0]["runs"]
    assert [round(r["sfreq"], 3) for r in runs] == [249.854, 999.412]
    assert all(len(r["channels"]) == 12 for r in runs)


def test_soz_override_and_comment_markers(meta_root, tmp_path):
    root = _small(
        meta_root,
        tmp_path,
        subjects=["sub-pt01"],
        max_runs_per_subject=1,
        max_channels=16,
        soz_contacts={"pt01": "G1-2, ZZ1"},
        markers="comment",
    )
    subject = read_manifest(root)["subjects"][0]
    assert subject["soz_contacts"] == "G1-2, ZZ1"
    assert subject["soz_unmatched"] == ["ZZ1"]
    assert subject["runs"][0]["soz_channels"] == ["G1", "G2"]
    raw = mne.io.read_raw_brainvision(root / subject["runs"][0]["vhdr"], preload=False, verbose="error")
    assert "Comment/AD1-4, ATT1,2" in set(raw.annotations.description)  # commas survive the .vmrk coding
    assert pd.read_excel(root / CLINICAL_SUMMARY)["soz_contacts"].tolist() == ["G1-2, ZZ1"]


def test_clear_errors(meta_root, tmp_path):
    with pytest.raises(FileNotFoundError, match="participants.tsv"):
        write_ds003029_like(tmp_path / "empty", tmp_path / "out")
    with pytest.raises(ValueError, match=r"\['pt99'\] are not in participants.tsv"):
        write_ds003029_like(meta_root, tmp_path / "out", subjects=["pt01", "pt99"])
    with pytest.raises(ValueError, match="smaller than the 12 SOZ and '\\$' channels"):
        write_ds003029_like(meta_root, tmp_path / "out", subjects=["pt01"], max_channels=8)
    with pytest.raises(ValueError, match="soz_contacts names subjects"):
        write_ds003029_like(meta_root, tmp_path / "out", subjects=["pt01"], soz_contacts={"jh101": "A1"})
    with pytest.raises(ValueError, match="duration_s"):
        write_ds003029_like(meta_root, tmp_path / "out", duration_s=1.0)
    with pytest.raises(ValueError, match="markers"):
        write_ds003029_like(meta_root, tmp_path / "out", markers="text")

"""BIDS datasets with ds003029 rules, on a fixture generated from the real ds003029 sidecars."""

import hashlib
import json
import logging
import shutil

import numpy as np
import pandas as pd
import pytest

from sss_viewer.cli import main
from sss_viewer.io import RecordingReadError, load_bids_cohort, load_data, load_recording, summarise_bids
from sss_viewer.io.bids import read_bids_run
from sss_viewer.io.readers import read_recording
from tests.fixtures.bids_fixture import read_manifest


@pytest.fixture(scope="module")
def manifest(ds003029_like_root):
    runs = {}
    for subject in read_manifest(ds003029_like_root)["subjects"]:
        for run in subject["runs"]:
            runs[(subject["subject"], run["run"])] = {
                **run,
                "site": subject["site"],
                "unmatched": subject["soz_unmatched"],
            }
    return runs


@pytest.fixture(scope="module")
def cohort(ds003029_like_root):
    return {(r.subject, r.run): r for r in load_bids_cohort(ds003029_like_root)}


def _tree_digests(root):
    return {
        str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


def test_every_run_loads_with_bids_metadata(cohort, manifest):
    assert set(cohort) == set(manifest)
    for key, rec in cohort.items():
        truth = manifest[key]
        assert rec.is_lazy
        assert rec.session == "presurgery" and rec.centre == truth["site"]
        assert rec.sfreq == pytest.approx(truth["sfreq"], abs=1e-6)  # non-integer rates kept
        assert rec.n_times == truth["n_times"]
        assert not any(n.startswith("$") for n in rec.ch_names)
        assert set(rec.ch_names) == {n for n in truth["channels"] if not n.startswith("$")}
        assert set(rec.bads) == set(truth["bad_channels"])
        assert all(rec.ch_types[i] in ("ecog", "seeg") for i in rec.ieeg_picks())
        assert "outcome" in rec.info and "engel_score" in rec.info


def test_seizure_times_come_from_events_tsv(cohort, manifest):
    for key, rec in cohort.items():
        truth = manifest[key]
        if truth["seizure_onset_s"] is None:
            assert rec.seizure_onset_s is None
        else:
            assert rec.seizure_onset_s == pytest.approx(truth["seizure_onset_s"], abs=1e-6)
            assert rec.info["seizure_onset_text"] == truth["onset_marker"]
        if truth["seizure_offset_s"] is not None:
            assert rec.seizure_offset_s == pytest.approx(truth["seizure_offset_s"], abs=1e-6)
        assert any(e.description == truth["onset_marker"] for e in rec.events) or truth["onset_marker"] is None
    assert cohort[("pt17", "01")].seizure_onset_s is None


def test_soz_labels_from_the_clinical_spreadsheet(cohort, manifest):
    for key, rec in cohort.items():
        truth = manifest[key]
        if key[0] == "ummc001":  # empty soz_contacts cell: labels unknown, not "no SOZ"
            assert rec.soz is None
            continue
        assert {n for n, s in zip(rec.ch_names, rec.soz) if s} == set(truth["soz_channels"])
        assert rec.info["unmatched_soz"] == truth["unmatched"]
    assert cohort[("pt01", "01")].soz.sum() == 10
    assert cohort[("jh101", "01")].info["unmatched_soz"] == ["LAH9"]


def test_user_label_table_overrides_the_spreadsheet(ds003029_like_root, tmp_path):
    table = tmp_path / "labels.csv"
    pd.DataFrame({"subject": ["pt01", "pt01", "pt01"], "channel": ["G1", "G2", "XX9"], "soz": [1, 0, 1]}).to_csv(
        table, index=False
    )
    recordings = load_data(ds003029_like_root, labels=table)
    pt01 = [r for r in recordings if r.subject == "pt01"][0]
    assert [n for n, s in zip(pt01.ch_names, pt01.soz) if s] == ["G1"]
    assert pt01.info["unmatched_soz"] == ["XX9"]
    assert all(r.soz is None for r in recordings if r.subject != "pt01")


def test_single_run_file_inside_bids_gets_its_labels(ds003029_like_root, manifest):
    path = ds003029_like_root / manifest[("ummc008", "01")]["vhdr"]
    rec = load_recording(path)
    assert rec.subject == "ummc008" and rec.centre == "UMMC" and rec.soz.sum() == 4


def test_summary_per_centre_and_cli(ds003029_like_root, capsys):
    summary = summarise_bids(ds003029_like_root)
    by_centre = {row["centre"]: row for row in summary["centres"]}
    assert set(by_centre) == {"JHH", "NIH", "UMF", "UMMC"}
    assert by_centre["UMMC"]["sampling_rates_hz"] == [249.85, 499.71, 999.41]
    assert by_centre["NIH"]["runs_without_onset"] == 1 and by_centre["UMMC"]["labelled_subjects"] == 1
    assert summary["total"]["runs"] == 11 and 0.05 < summary["total"]["soz_fraction"] < 0.3
    assert summary["unmatched_soz"] == {"jh101": ["LAH9"]} and summary["skipped"] == {}
    assert main(["cohort", str(ds003029_like_root), "--json", "-q"]) == 0
    assert json.loads(capsys.readouterr().out)["total"]["subjects"] == 6
    assert main(["cohort", str(ds003029_like_root), "-q"]) == 0
    out = capsys.readouterr().out
    assert "UMMC" in out and "LAH9" in out


@pytest.fixture
def broken_copy(ds003029_like_root, tmp_path):
    root = tmp_path / "ds"
    shutil.copytree(ds003029_like_root, root)
    return root


def test_missing_participants_tsv_is_named(broken_copy):
    (broken_copy / "participants.tsv").unlink()
    with pytest.raises(FileNotFoundError, match=r"participants\.tsv is missing"):
        load_bids_cohort(broken_copy)


def test_bad_runs_are_skipped_with_a_warning_and_sources_untouched(broken_copy, caplog):
    ieeg = broken_copy / "sub-pt01" / "ses-presurgery" / "ieeg"
    channels = ieeg / "sub-pt01_ses-presurgery_task-ictal_acq-ecog_run-01_channels.tsv"
    channels.write_text(channels.read_text().replace("\nG1\t", "\nG1X\t", 1))  # sidecar disagrees with data
    eeg = ieeg / "sub-pt01_ses-presurgery_task-ictal_acq-ecog_run-02_ieeg.eeg"
    eeg.write_bytes(eeg.read_bytes()[:-1000])  # truncated data file
    ummc = broken_copy / "sub-ummc001" / "ses-presurgery" / "ieeg"
    sidecar = ummc / "sub-ummc001_ses-presurgery_task-ictal_acq-ecog_run-01_ieeg.json"
    meta = json.loads(sidecar.read_text())
    meta["SamplingFrequency"] = 500.0
    sidecar.write_text(json.dumps(meta))
    before = _tree_digests(broken_copy)
    with caplog.at_level(logging.WARNING, logger="sss_viewer.io.bids"):
        recordings = load_bids_cohort(broken_copy)
    assert len(recordings) == 8
    assert "G1X" in caplog.text and "channels.tsv disagrees" in caplog.text
    assert "run-02_ieeg.vhdr" in caplog.text and "truncated" in caplog.text
    assert "SamplingFrequency 500 Hz" in caplog.text and "499.707 Hz" in caplog.text
    summary = summarise_bids(broken_copy)
    assert len(summary["skipped"]) == 3
    assert _tree_digests(broken_copy) == before


def test_run_without_ieeg_channels_is_refused(broken_copy):
    ieeg = broken_copy / "sub-umf004" / "ses-presurgery" / "ieeg"
    channels = ieeg / "sub-umf004_ses-presurgery_task-ictal_acq-seeg_run-01_channels.tsv"
    table = pd.read_csv(channels, sep="\t", dtype=str, keep_default_na=False)
    table["type"] = "MISC"
    table.to_csv(channels, sep="\t", index=False)
    with pytest.raises(RecordingReadError, match=r"No iEEG channels in .*umf004"):
        load_recording(ieeg / "sub-umf004_ses-presurgery_task-ictal_acq-seeg_run-01_ieeg.vhdr")


def test_train_and_evaluate_accept_a_bids_root(ds003029_like_root, tmp_path, capsys):
    before = _tree_digests(ds003029_like_root)
    model = tmp_path / "model"
    args = ["--window-length", "256", "--train-stride", "128", "--epochs", "1", "--seed", "1", "-q"]
    assert main(["train", str(ds003029_like_root), "--out", str(model), *args]) == 0
    assert "saved model" in capsys.readouterr().out
    assert main(["evaluate", str(model), str(ds003029_like_root), "--all", "--json", "-q"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["n_recordings"] == 11 and report["n_channels"] > 200
    assert np.isfinite(report["pooled"]["auc"])
    scores = tmp_path / "scores"
    assert main(["score", str(model), str(ds003029_like_root), "--out", str(scores), "-q"]) == 0
    runs = sorted(p.name for p in scores.iterdir() if p.is_dir())  # + the run's manifest, sss-viewer-score.json
    assert len(runs) == 11 and "sub-pt01_ses-presurgery_task-ictal_acq-ecog_run-01_ieeg" in runs
    table = pd.read_csv(scores / "sub-pt01_ses-presurgery_task-ictal_acq-ecog_run-01_ieeg" / "channels.csv")
    assert table["label"].sum() == 10 and table["score"].between(0, 1).all()
    assert _tree_digests(ds003029_like_root) == before


def _pt01_run(root, run):
    return (
        root
        / "sub-pt01"
        / "ses-presurgery"
        / "ieeg"
        / f"sub-pt01_ses-presurgery_task-ictal_acq-ecog_run-{run}_ieeg.vhdr"
    )


def test_runs_in_a_bids_layout_are_opened_by_mne_bids_with_the_same_result(ds003029_like_root, tmp_path):
    """``read_raw_bids`` applies the sidecars; a copy of the run outside any BIDS root, read by MNE alone and
    the project's own sidecar rules, gives the same channels, types, bad marks, events and seizure times."""
    bids_run = load_recording(_pt01_run(ds003029_like_root, "01"))
    assert bids_run.info["read_by"] == "mne-bids"
    loose = tmp_path / "loose"
    loose.mkdir()
    for f in _pt01_run(ds003029_like_root, "01").parent.glob("*run-01_*"):
        shutil.copy(f, loose / f.name)
    alone = read_bids_run(loose / _pt01_run(ds003029_like_root, "01").name)
    assert alone.info["read_by"] == "mne"
    assert alone.ch_names == bids_run.ch_names and alone.ch_types == bids_run.ch_types
    assert alone.bads == bids_run.bads and bids_run.bads
    assert [(e.onset, e.description) for e in alone.events] == [(e.onset, e.description) for e in bids_run.events]
    assert alone.seizure_onset_s == bids_run.seizure_onset_s is not None
    assert bids_run.line_freq == alone.line_freq == 60


def test_a_run_inherits_its_tasks_sidecars_as_mne_bids_matches_them(broken_copy, caplog):
    """BIDS inheritance: ``…_task-ictal_acq-ecog_channels.tsv`` (no run entity) serves run-02, which has no
    channels.tsv of its own; run-01's own sidecar is never taken for run-02 (its run entity conflicts)."""
    ieeg = _pt01_run(broken_copy, "02").parent
    own = ieeg / "sub-pt01_ses-presurgery_task-ictal_acq-ecog_run-02_channels.tsv"
    table = pd.read_csv(own, sep="\t", dtype=str, keep_default_na=False)
    table.loc[table["name"] == "G3", "status"] = "bad"
    own.unlink()
    before = load_recording(_pt01_run(broken_copy, "02"))  # no channels.tsv: run-01's is not inherited
    assert "G3" not in before.bads and set(before.bads).isdisjoint(set(table.loc[table["status"] == "bad", "name"]))
    table.to_csv(ieeg / "sub-pt01_ses-presurgery_task-ictal_acq-ecog_channels.tsv", sep="\t", index=False)
    after = load_recording(_pt01_run(broken_copy, "02"))
    assert set(after.bads) == set(table.loc[table["status"] == "bad", "name"]) and "G3" in after.bads
    run01 = load_recording(_pt01_run(broken_copy, "01"))
    assert "G3" not in run01.bads  # its own sidecar wins over the inherited one
    table.loc[table["name"] == "G3", "name"] = "G3X"  # the project's checks hold for an inherited sidecar too
    table.to_csv(ieeg / "sub-pt01_ses-presurgery_task-ictal_acq-ecog_channels.tsv", sep="\t", index=False)
    with pytest.raises(RecordingReadError, match=r"_channels\.tsv disagrees .*run-02.*\['G3X'\].*\['G3'\]"):
        load_recording(_pt01_run(broken_copy, "02"))


def test_an_inherited_sidecar_leading_to_another_subject_is_refused(broken_copy):
    ieeg = _pt01_run(broken_copy, "02").parent
    (ieeg / "sub-pt01_ses-presurgery_task-ictal_acq-ecog_run-02_channels.tsv").unlink()
    other = (
        broken_copy
        / "sub-jh101"
        / "ses-presurgery"
        / "ieeg"
        / "sub-jh101_ses-presurgery_task-ictal_acq-ecog_run-01_channels.tsv"
    )
    (ieeg / "sub-pt01_ses-presurgery_task-ictal_acq-ecog_channels.tsv").symlink_to(other)
    with pytest.raises(RecordingReadError, match=r"inherits.*channels\.tsv.*link leading outside .*sub-pt01"):
        load_recording(_pt01_run(broken_copy, "02"))
    assert other.is_file()  # nothing touched


def test_an_events_onset_mne_bids_would_drop_is_an_error_naming_the_line(broken_copy):
    events = _pt01_run(broken_copy, "01").with_name("sub-pt01_ses-presurgery_task-ictal_acq-ecog_run-01_events.tsv")
    lines = events.read_text().splitlines()
    lines[3] = "n/a" + lines[3][lines[3].index("\t") :]
    events.write_text("\n".join(lines) + "\n")
    with pytest.raises(RecordingReadError, match=r"onset is not a number on lines \[4\]"):
        load_recording(_pt01_run(broken_copy, "01"))


def test_an_edf_run_in_a_bids_layout_is_opened_by_mne_bids_with_its_sidecars(tmp_path):
    """Clinics' EDF exports in BIDS: the vendor-named EDF (``POL G1``…, mV contacts) read by ``read_raw_bids``;
    ``channels.tsv`` types and bad marks, ``events.tsv`` seizure onset (not the file's own annotations) applied."""
    import mne

    from tests.clinical_files import write_clinical_edf

    root = tmp_path / "ds"
    ieeg = root / "sub-01" / "ieeg"
    ieeg.mkdir(parents=True)
    (root / "dataset_description.json").write_text(json.dumps({"Name": "edf", "BIDSVersion": "1.9.0"}))
    (root / "participants.tsv").write_text("participant_id\tsite\nsub-01\tCLINIC\n")
    edf = write_clinical_edf(ieeg, name="sub-01_task-ictal_run-01_ieeg.edf", units="mV", onset_s=12.0)
    names = mne.io.read_raw_edf(edf.path, verbose="error").ch_names
    kinds = ["SEEG" if n in edf.scored else "MISC" for n in names]
    bad = edf.scored[1]
    status = ["bad" if n == bad else "good" for n in names]
    pd.DataFrame({"name": names, "type": kinds, "units": "uV", "status": status}).to_csv(
        ieeg / "sub-01_task-ictal_run-01_channels.tsv", sep="\t", index=False
    )
    (ieeg / "sub-01_task-ictal_run-01_ieeg.json").write_text(
        json.dumps({"PowerLineFrequency": 50, "SamplingFrequency": 256})
    )
    pd.DataFrame({"onset": [1.0, 15.5], "duration": [0.0, 0.0], "trial_type": ["A1+A2 OFF", "sz onset"]}).to_csv(
        ieeg / "sub-01_task-ictal_run-01_events.tsv", sep="\t", index=False
    )
    before = _tree_digests(root)
    rec = read_bids_run(edf.path)
    assert rec.info["read_by"] == "mne-bids" and rec.centre == "CLINIC" and rec.subject == "01"
    assert [rec.ch_names[i] for i in rec.ieeg_picks()] == [n for n in edf.scored if n != bad]
    assert bad in rec.bads
    assert rec.seizure_onset_s == pytest.approx(15.5)  # the events.tsv's, not the file's EEG SZ START at 12 s
    assert [e.description for e in rec.events] == ["A1+A2 OFF", "sz onset"] and rec.line_freq == 50
    loose = tmp_path / "loose"  # the same EDF outside any dataset, read by MNE alone: the same µV samples
    loose.mkdir()
    shutil.copy(edf.path, loose / edf.path.name)
    alone = read_recording(loose / edf.path.name)
    picks = rec.ieeg_picks()
    np.testing.assert_array_equal(
        rec.get_data(picks), alone.get_data([alone.ch_names.index(rec.ch_names[i]) for i in picks])
    )
    assert 1.0 < float(np.std(rec.get_data(picks[:1]))) < 1e4  # µV, as stated in mV in the file
    assert _tree_digests(root) == before


WRITES_UNDER_ROOT = """
import json, os, sys
from pathlib import Path
root, run = sys.argv[1], Path(sys.argv[2])
writes = []
def hook(event, args):
    if event in ("os.remove", "os.rename", "os.replace", "os.mkdir") and str(args[0]).startswith(root):
        writes.append([event, str(args[0])])
    elif event == "open" and isinstance(args[0], (str, os.PathLike)) and str(args[0]).startswith(root):
        mode, flags = args[1], args[2]
        if (isinstance(mode, str) and set(mode) & set("wax+")) or flags & (os.O_WRONLY | os.O_RDWR | os.O_CREAT):
            writes.append([event, str(args[0])])
sys.addaudithook(hook)
from sss_viewer.io import load_data
from sss_viewer.io.readers import read_recording
recording = read_recording(run)
assert recording.info["read_by"] == "mne-bids"
samples = recording.data[:, :1000]
runs = load_data(Path(root))
print(json.dumps({"writes": writes, "runs": len(runs)}))
"""


def test_reading_a_bids_dataset_writes_nothing_into_it(broken_copy):
    """mne-bids opens the sidecars it reads under a lock file it creates beside them (``<sidecar>.lock``);
    this reader makes it read them without one: no file is created, written, renamed or removed anywhere in the
    dataset while runs, their sidecars, electrodes and the whole cohort are read (the file system's own calls,
    seen by an audit hook in a child process)."""
    import subprocess
    import sys

    run = _pt01_run(broken_copy, "01")
    prefix = run.name.split("_task")[0]
    channels = pd.read_csv(run.with_name(run.name.replace("_ieeg.vhdr", "_channels.tsv")), sep="\t")
    positions = pd.DataFrame({"name": channels["name"], "x": 0.01, "y": 0.02, "z": 0.03, "size": 5})
    positions.to_csv(run.with_name(f"{prefix}_acq-ecog_space-ACPC_electrodes.tsv"), sep="\t", index=False)
    coordinates = {"iEEGCoordinateSystem": "ACPC", "iEEGCoordinateUnits": "m"}
    run.with_name(f"{prefix}_acq-ecog_space-ACPC_coordsystem.json").write_text(json.dumps(coordinates))
    before = _tree_digests(broken_copy)
    result = subprocess.run(
        [sys.executable, "-c", WRITES_UNDER_ROOT, str(broken_copy), str(run)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    seen = json.loads(result.stdout.strip().splitlines()[-1])
    assert seen["runs"] > 1 and seen["writes"] == []
    assert _tree_digests(broken_copy) == before


def test_mne_bids_reads_without_a_lock_file_and_still_locks_its_writes(tmp_path):
    import mne_bids.path

    from sss_viewer.io._mne_bids_reads import READING_MODULES, read_sidecars_without_lock_files

    assert read_sidecars_without_lock_files() == list(READING_MODULES)  # every module found in this mne-bids
    assert read_sidecars_without_lock_files() == list(READING_MODULES)  # and wrapped once, not twice
    sidecar = tmp_path / "sub-01_ieeg.json"
    sidecar.write_text("{}")
    lock = tmp_path / "sub-01_ieeg.json.lock"
    with mne_bids.path._open_lock(sidecar, encoding="utf-8") as f:
        assert f.read() == "{}" and not lock.exists()
    with mne_bids.path._open_lock(sidecar, "rb") as f:
        assert f.read() == b"{}" and not lock.exists()
    with mne_bids.path._open_lock(sidecar, "w", encoding="utf-8") as f:
        assert lock.exists()  # a write (which this project never makes) keeps mne-bids' lock
        f.write('{"a": 1}')
    with mne_bids.path._open_lock(sidecar):
        assert lock.exists()  # so does a bare lock

"""File readers (MNE formats, BIDS sidecars) and cohort loading."""

from __future__ import annotations

import hashlib
import logging
import shutil
from pathlib import Path

import mne
import numpy as np
import pandas as pd
import pytest
import scipy.io

from sss_viewer.io.cohort import load_cohort, load_data, read_abnormal_intervals, read_labels
from sss_viewer.io.readers import SUPPORTED_FORMATS, RecordingReadError, read_recording
from sss_viewer.synth.bids import write_recording_bids
from sss_viewer.synth.cohort import generate_cohort
from sss_viewer.synth.config import SynthConfig
from sss_viewer.synth.run import synthesise_recording

TINY = SynthConfig(duration_scale=0.05, max_channels=8)


@pytest.fixture(scope="module")
def bids_run(tmp_path_factory) -> tuple[Path, object]:
    """A ds003029-like BrainVision run with sidecars: EKG + '$' duplicate channels, one bad contact."""
    recording, _ = synthesise_recording(0, seed=1, config=TINY)
    vhdr = write_recording_bids(recording, tmp_path_factory.mktemp("bids"), extra_channels=True)
    return vhdr, recording


@pytest.fixture(scope="module")
def cohort(tmp_path_factory) -> Path:
    return generate_cohort(tmp_path_factory.mktemp("cohort") / "c", 2, seed=1, config=TINY)


def _raw(names, types, sfreq=250.0, seconds=8.0, seed=0) -> mne.io.RawArray:
    rng = np.random.default_rng(seed)
    info = mne.create_info(names, sfreq, types)
    return mne.io.RawArray(rng.standard_normal((len(names), int(seconds * sfreq))) * 50e-6, info, verbose="error")


def _sha(paths) -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in paths}


def _write_set(path: Path, data_uv: np.ndarray, sfreq: float, names: list[str]) -> None:
    """A minimal single-file EEGLAB dataset (data embedded in the .set)."""
    chanlocs = np.zeros((len(names),), dtype=[("labels", object), ("type", object)])
    for i, name in enumerate(names):
        chanlocs[i] = (name, "SEEG")
    event = np.zeros((1,), dtype=[("type", object), ("latency", float), ("duration", float)])
    event[0] = ("sz onset", sfreq + 1.0, 0.0)  # EEGLAB latencies are 1-based samples
    n_times = data_uv.shape[1]
    eeg = dict(
        setname="test",
        nbchan=float(len(names)),
        pnts=float(n_times),
        trials=1.0,
        srate=sfreq,
        xmin=0.0,
        xmax=(n_times - 1) / sfreq,
        data=data_uv.astype(np.float32),
        chanlocs=chanlocs,
        event=event,
        icawinv=np.array([]),
        icasphere=np.array([]),
        icaweights=np.array([]),
        ref="common",
    )
    scipy.io.savemat(path, {"EEG": eeg}, appendmat=False)


# ---------------------------------------------------------------------------- BrainVision + BIDS


def test_brainvision_with_bids_sidecars(bids_run):
    vhdr, original = bids_run
    recording = read_recording(vhdr)
    assert recording.ch_names == [*original.ch_names, "EKG1"]  # '$' duplicate dropped
    assert recording.ch_types == [*original.ch_types, "misc"]
    assert set(recording.bads) == {original.ch_names[-1], "EKG1"}
    assert recording.sfreq == pytest.approx(original.sfreq, rel=1e-9)
    assert recording.line_freq == 60.0  # from _ieeg.json: BrainVision has no mains field
    assert recording.data.dtype == np.float32
    np.testing.assert_allclose(recording.data[:-1], original.data, atol=1e-3, rtol=1e-5)
    assert [e.description for e in recording.events] == [e.description for e in original.events]
    np.testing.assert_allclose([e.onset for e in recording.events], [e.onset for e in original.events], atol=1e-3)
    assert recording.soz is None and recording.source == vhdr
    assert len(recording.ieeg_picks()) == original.n_channels - 1


def test_reading_leaves_source_untouched(bids_run):
    vhdr, _ = bids_run
    files = sorted(vhdr.parent.iterdir())
    before, mtimes = _sha(files), [f.stat().st_mtime_ns for f in files]
    read_recording(vhdr, preload=True)
    read_recording(vhdr)
    assert _sha(sorted(vhdr.parent.iterdir())) == before
    assert [f.stat().st_mtime_ns for f in files] == mtimes


def test_truncated_brainvision(bids_run, tmp_path):
    vhdr, _ = bids_run
    for f in vhdr.parent.iterdir():
        shutil.copy(f, tmp_path / f.name)
    eeg = tmp_path / vhdr.with_suffix(".eeg").name
    eeg.write_bytes(eeg.read_bytes()[:-6])
    with pytest.raises(RecordingReadError, match=r"as BrainVision: .*looks truncated"):
        read_recording(tmp_path / vhdr.name)


def test_brainvision_missing_data_file(bids_run, tmp_path):
    vhdr, _ = bids_run
    shutil.copy(vhdr, tmp_path / vhdr.name)
    with pytest.raises(RecordingReadError, match=r"Could not read .*\.vhdr as BrainVision"):
        read_recording(tmp_path / vhdr.name)


# ---------------------------------------------------------------------------- errors


def test_missing_file(tmp_path):
    with pytest.raises(FileNotFoundError, match=r"not found: .*absent\.edf"):
        read_recording(tmp_path / "absent.edf")


def test_unsupported_extension(tmp_path):
    path = tmp_path / "recording.txt"
    path.write_text("x")
    with pytest.raises(ValueError, match=r"Unsupported recording file .*recording\.txt.*supported: \.vhdr, \.edf"):
        read_recording(path)
    assert set(SUPPORTED_FORMATS) >= {".vhdr", ".edf", ".bdf", ".fif", ".set"}


@pytest.mark.parametrize(
    ("name", "fmt"),
    [
        ("bad.edf", "EDF"),
        ("bad.bdf", "BDF"),
        ("bad.vhdr", "BrainVision"),
        ("bad_raw.fif", "FIF"),
        ("bad.set", "EEGLAB"),
    ],
)
def test_corrupt_file(tmp_path, name, fmt):
    path = tmp_path / name
    path.write_bytes(b"this is not a recording\n" * 20)
    with pytest.raises(RecordingReadError, match=rf"Could not read .*{name} as {fmt}: "):
        read_recording(path)


def test_truncated_edf(tmp_path):
    path = tmp_path / "full.edf"
    mne.export.export_raw(path, _raw(["A1", "A2"], "eeg"), overwrite=True, verbose="error")
    cut = tmp_path / "cut.edf"
    cut.write_bytes(path.read_bytes()[: path.stat().st_size // 2])
    with pytest.raises(RecordingReadError, match=r"cut\.edf as EDF: the file looks truncated"):
        read_recording(cut)


def test_truncated_fif(tmp_path):
    path = tmp_path / "full_raw.fif"
    _raw(["A1"], "ecog", seconds=40).save(path, verbose="error")
    cut = tmp_path / "cut_raw.fif"
    cut.write_bytes(path.read_bytes()[: path.stat().st_size // 2])
    with pytest.raises(RecordingReadError, match=r"cut_raw\.fif as FIF"):
        read_recording(cut)


def test_no_ieeg_channels(tmp_path):
    path = tmp_path / "aux_raw.fif"
    _raw(["STI", "TEMP"], ["stim", "misc"]).save(path, verbose="error")
    match = r"No iEEG channels in .*aux_raw\.fif.*found types stim, temperature; typed from their names: TEMP \(temperature\)"
    with pytest.raises(RecordingReadError, match=match):  # a misc channel is typed by its name
        read_recording(path)


# ---------------------------------------------------------------------------- other formats


def test_edf_round_trip_treats_eeg_as_ieeg(tmp_path, caplog):
    raw = _raw(["LA1", "LA2", "LA3"], "eeg", sfreq=256.0)
    raw.set_annotations(mne.Annotations([2.0], [0.0], ["eeg sz start"]))
    path = tmp_path / "clinical.edf"
    mne.export.export_raw(path, raw, overwrite=True, verbose="error")
    with caplog.at_level(logging.INFO, logger="sss_viewer.io.readers"):
        recording = read_recording(path)
    assert "iEEG candidates" in caplog.text
    assert recording.ch_types == ["seeg"] * 3 and recording.sfreq == 256.0
    step = np.ptp(raw.get_data()) * 1e6 / 65535  # EDF stores 16-bit integers
    np.testing.assert_allclose(recording.data, raw.get_data() * 1e6, atol=2 * step)
    assert [(e.onset, e.description) for e in recording.events] == [(2.0, "eeg sz start")]


def test_fif_units_bads_line_freq_and_event_times(tmp_path):
    raw = _raw(["G1", "G2", "ECG", "STI"], ["ecog", "ecog", "ecg", "stim"], seconds=10)
    raw.info["line_freq"] = 50.0
    raw.info["bads"] = ["G2"]
    raw.set_annotations(mne.Annotations([4.0], [1.0], ["onset"]))
    raw.crop(tmin=1.0)  # first_samp > 0: events must be relative to the first kept sample
    path = tmp_path / "cropped_raw.fif"
    raw.save(path, verbose="error")
    recording = read_recording(path)
    assert recording.ch_types == ["ecog", "ecog", "ecg", "stim"]
    assert recording.bads == ["G2"] and recording.line_freq == 50.0
    assert recording.events[0].onset == pytest.approx(3.0) and recording.events[0].duration == pytest.approx(1.0)
    np.testing.assert_allclose(recording.data[:3], raw.get_data()[:3] * 1e6, rtol=1e-5, atol=1e-3)
    np.testing.assert_allclose(recording.data[3], raw.get_data()[3], atol=1e-9)  # stim: not a voltage


def test_single_file_eeglab(tmp_path, caplog):
    data = np.random.default_rng(0).standard_normal((3, 600)) * 20
    path = tmp_path / "patient.set"
    _write_set(path, data, 200.0, ["LA1", "LA2", "LA3"])
    with caplog.at_level(logging.WARNING):
        recording = read_recording(path)  # any MNE warning is re-logged, never raised
    assert "keeps its samples inside the .set" in caplog.text  # MNE had to preload: said, not hidden
    assert recording.ch_types == ["seeg"] * 3
    np.testing.assert_allclose(recording.data, data, rtol=1e-5, atol=1e-3)
    assert recording.events[0].description == "sz onset" and recording.events[0].onset == pytest.approx(1.0)


def test_recordings_are_read_lazily_block_by_block(tmp_path, monkeypatch):
    """A long file is opened without loading it; a page of it is read on demand."""
    path = tmp_path / "long_raw.fif"
    raw = _raw(["LA1", "LA2", "LA3", "EKG"], ["seeg", "seeg", "seeg", "ecg"], seconds=600.0)
    raw.save(path, verbose="error")
    recording = read_recording(path)
    assert recording.is_lazy and recording.n_times == 150_000
    calls = []
    original = mne.io.BaseRaw.get_data

    def counting(self, *args, **kwargs):
        if self is not raw:  # count reads of the file, not of the in-memory reference
            calls.append((kwargs.get("start"), kwargs.get("stop")))
        return original(self, *args, **kwargs)

    monkeypatch.setattr(mne.io.BaseRaw, "get_data", counting)
    page = recording.get_data([0, 3], start=2500, stop=5000)
    assert calls == [(2500, 5000)]
    np.testing.assert_allclose(page[0], raw.get_data(picks=[0], start=2500, stop=5000)[0] * 1e6, rtol=1e-6)
    np.testing.assert_allclose(page[1], raw.get_data(picks=[3], start=2500, stop=5000)[0] * 1e6, rtol=1e-6)
    view = recording.pick(np.array([1, 2]))
    assert view.is_lazy and view.data.shape == (2, 150_000) and len(calls) == 1  # picking reads nothing
    np.testing.assert_array_equal(view.data[0, 10:20], recording.get_data([1], 10, 20)[0])
    loaded = recording.load()
    assert not loaded.is_lazy and loaded.data.shape == (4, 150_000)


def test_mne_warnings_are_logged_not_raised(tmp_path, caplog):
    path = tmp_path / "dupes.edf"
    mne.export.export_raw(path, _raw(["AA1", "AA2"], "eeg"), overwrite=True, verbose="error")
    header = bytearray(path.read_bytes())
    header[256 + 16 : 256 + 32] = b"AA1".ljust(16)  # second label = first label
    path.write_bytes(bytes(header))
    with caplog.at_level(logging.WARNING, logger="sss_viewer.io.readers"):
        recording = read_recording(path)
    assert "unique" in caplog.text
    assert len(set(recording.ch_names)) == 2


# ---------------------------------------------------------------------------- cohort


def test_load_cohort_labels_and_metadata(cohort):
    recordings = load_cohort(cohort)
    assert [(r.subject, r.centre, r.run) for r in recordings] == [("synth01", "JHH", "01"), ("synth02", "NIH", "01")]
    for k, recording in enumerate(recordings):
        expected, _ = synthesise_recording(k, seed=1, config=TINY)
        np.testing.assert_array_equal(recording.soz, expected.soz)
        assert recording.ch_names == expected.ch_names


def test_unmatched_soz_labels_are_reported(cohort, tmp_path, caplog):
    root = shutil.copytree(cohort, tmp_path / "c")
    with open(root / "labels.tsv", "a") as fh:
        fh.write("synth01\tNOPE7\t1\n")
    with caplog.at_level(logging.WARNING, logger="sss_viewer.io.cohort"):
        recordings = load_cohort(root)
    assert "NOPE7" in caplog.text and "match no channel" in caplog.text
    assert len(recordings) == 2


def test_failing_runs_are_skipped_then_raise(cohort, tmp_path, caplog):
    root = shutil.copytree(cohort, tmp_path / "c")
    table = pd.read_csv(root / "cohort.tsv", sep="\t")
    (root / table["path"][1]).with_suffix(".eeg").unlink()
    with caplog.at_level(logging.WARNING, logger="sss_viewer.io.cohort"):
        recordings = load_cohort(root)
    assert [r.subject for r in recordings] == ["synth01"]
    assert "Skipping sub-synth02 run-01" in caplog.text
    (root / table["path"][0]).with_suffix(".eeg").unlink()
    with pytest.raises(RecordingReadError, match="No run of the cohort"):
        load_cohort(root)


def test_load_data_accepts_directory_or_file(cohort, tmp_path):
    assert len(load_data(cohort)) == 2
    path = cohort / pd.read_csv(cohort / "cohort.tsv", sep="\t")["path"][0]
    single = load_data(path)  # one run of the cohort: its labels from the cohort's labels.tsv, as the viewer shows them
    assert len(single) == 1 and single[0].soz is not None and single[0].info["soz_source"] == str(cohort / "labels.tsv")
    whole = {(r.subject, r.run): r for r in load_data(cohort)}
    np.testing.assert_array_equal(single[0].soz, whole[(single[0].subject, single[0].run)].soz)
    with pytest.raises(FileNotFoundError, match="without cohort.tsv or participants.tsv"):
        load_data(tmp_path)
    with pytest.raises(FileNotFoundError, match="not found"):
        load_cohort(tmp_path / "nowhere")


def test_read_labels_validation(tmp_path):
    path = tmp_path / "labels.tsv"
    path.write_text("subject\tchannel\tsoz\npt1\tLA1\t1\npt1\tLA2\tyes\n")
    with pytest.raises(ValueError, match=r"soz must be 0, 1, true or false; lines \[3\]"):
        read_labels(path)
    path.write_text("subject\tname\tsoz\npt1\tLA1\t1\n")
    with pytest.raises(ValueError, match=r"lacks columns \['channel'\]"):
        read_labels(path)
    path.write_text("subject\tchannel\tsoz\n007\tLA1\t1\n007\tLA2\t0\n")
    labels = read_labels(path)
    assert labels["subject"].tolist() == ["007", "007"] and labels["soz"].tolist() == [True, False]


def test_read_abnormal_intervals(cohort):
    intervals = read_abnormal_intervals(cohort)
    assert list(intervals.columns) == ["subject", "run", "channel", "onset_s", "offset_s", "kind"]
    assert intervals["run"].tolist()[0] == "01"
    assert intervals["onset_s"].dtype == np.float64
    assert read_abnormal_intervals(cohort / "abnormal.tsv").equals(intervals)

"""Bad recording files the readers must refuse with a one-line message, or read right with a warning.

Rows of the reader issue: ``4-`` sidecars (and dataset-level tables) that a symlink leads out of
the recording's folder / the data root; ``7-`` blank EDF labels (MNE renames them ``-0``, ``-1``);
``8-`` data files longer or wider than their headers (EEGLAB ``.fdt``, BrainVision
``NumberOfChannels``); ``9-`` plausibility warnings for files that misstate their rate or sample
format; ``12-`` absurd rates, EDF record counts (-1, more data than stated, none) and non-archives
named ``.npz``.

Files are written as clinics produce them, with real writers (edfio, pybv, scipy's MAT writer for
EEGLAB, NumPy); a header is then edited byte for byte where the row is about a header's statement.
"""

from __future__ import annotations

import logging
import os
import re
from pathlib import Path

import edfio
import numpy as np
import pandas as pd
import pybv
import pytest
import scipy.io

from sss_viewer.io.bids import read_bids_run, read_participants
from sss_viewer.io.cohort import load_cohort, load_recording
from sss_viewer.io.readers import RecordingReadError, read_recording
from sss_viewer.synth.bids import write_recording_bids
from tests.fixtures.recordings import toy_recording

SECRET = "PT02SECRET"
"""A channel name of another patient: it must never appear in a message about this patient's run."""


def _bids_run(root: Path, subject: str = "p01", seed: int = 1) -> Path:
    """A BIDS BrainVision run (sidecars, ``dataset_description.json``, ``participants.tsv``) under ``root``."""
    vhdr = write_recording_bids(toy_recording(subject, seed, duration_s=12.0), root)
    (root / "dataset_description.json").write_text('{"Name": "t", "BIDSVersion": "1.8.0"}')
    if not (root / "participants.tsv").is_file():
        pd.DataFrame({"participant_id": [f"sub-{subject}"], "site": ["X"]}).to_csv(
            root / "participants.tsv", sep="\t", index=False
        )
    return vhdr


def _sidecar_of(vhdr: Path, suffix: str) -> Path:
    return vhdr.with_name(vhdr.name.rsplit("_", 1)[0] + "_" + suffix)


def _other_patient(tmp: Path) -> Path:
    """Another patient's dataset outside the data root, its channels named ``SECRET…``."""
    other = _bids_run(tmp / "other", subject="p02", seed=2)
    channels = _sidecar_of(other, "channels.tsv")
    table = pd.read_csv(channels, sep="\t", dtype=str, keep_default_na=False)
    table["name"] = [f"{SECRET}{i}" for i in range(len(table))]
    table.to_csv(channels, sep="\t", index=False)
    return other


# ------------------------------------------------------------------------------------------------ 4


@pytest.mark.parametrize("suffix", ["channels.tsv", "events.tsv", "ieeg.json"])
def test_4_sidecar_symlinked_outside_the_folder_is_refused(tmp_path, suffix):
    vhdr = _bids_run(tmp_path / "root")
    outside = _sidecar_of(_other_patient(tmp_path), suffix)
    sidecar = _sidecar_of(vhdr, suffix)
    sidecar.unlink()
    sidecar.symlink_to(outside)
    for read in (read_recording, load_recording):
        with pytest.raises(RecordingReadError, match=rf"its sidecar {re.escape(sidecar.name)} points outside") as info:
            read(vhdr)
        assert SECRET not in str(info.value) and "p02" not in str(info.value) and "\n" not in str(info.value)


def test_4_sidecar_symlinked_inside_the_folder_is_read(tmp_path):
    vhdr = _bids_run(tmp_path / "root")
    sidecar = _sidecar_of(vhdr, "channels.tsv")
    kept = sidecar.with_name("channels-original.tsv")
    sidecar.rename(kept)
    sidecar.symlink_to(kept.name)
    assert load_recording(vhdr).n_channels == 8


def test_4_participants_symlinked_outside_the_root_is_refused(tmp_path):
    vhdr = _bids_run(tmp_path / "root")
    other = tmp_path / "other"
    other.mkdir()
    (other / "participants.tsv").write_text(f"participant_id\tsite\nsub-{SECRET}\tY\n")
    (tmp_path / "root" / "participants.tsv").unlink()
    (tmp_path / "root" / "participants.tsv").symlink_to(other / "participants.tsv")
    with pytest.raises(
        RecordingReadError, match=r"Refusing the participants\.tsv .* outside the dataset's folder"
    ) as info:
        read_participants(tmp_path / "root")
    assert SECRET not in str(info.value)
    with pytest.raises(RecordingReadError, match=r"participants\.tsv"):
        read_bids_run(vhdr)


def test_4_cohort_labels_symlinked_outside_the_root_is_refused(tmp_path, caplog):
    root = tmp_path / "cohort"
    vhdr = _bids_run(root)
    (root / "dataset_description.json").unlink()
    pd.DataFrame([{"subject": "p01", "run": "01", "path": vhdr.relative_to(root).as_posix()}]).to_csv(
        root / "cohort.tsv", sep="\t", index=False
    )
    (tmp_path / "labels.tsv").write_text(f"subject\tchannel\tsoz\np01\t{SECRET}\t1\n")
    (root / "labels.tsv").symlink_to(tmp_path / "labels.tsv")
    with pytest.raises(RecordingReadError, match=r"Refusing the labels\.tsv .* outside the dataset's folder") as info:
        load_cohort(root)
    assert SECRET not in str(info.value)


# ------------------------------------------------------------------------------------------------ 7


def _write_edf(path: Path, labels: list[str], data_uv: np.ndarray, sfreq: float) -> Path:
    """An EDF as edfio writes it (µV, ±5000 µV physical range, 1 s records)."""
    signals = [
        edfio.EdfSignal(
            row.astype(np.float64), sfreq, label=label, physical_dimension="uV", physical_range=(-5000, 5000)
        )
        for label, row in zip(labels, data_uv, strict=True)
    ]
    edfio.Edf(signals).write(path)
    return path


def _patch_header(path: Path, start: int, stop: int, value: str) -> None:
    """Rewrite one ASCII field of an EDF header in place (left-justified, space-padded, as the spec writes it)."""
    raw = bytearray(path.read_bytes())
    raw[start:stop] = value.ljust(stop - start).encode("ascii")
    path.write_bytes(bytes(raw))


def _noise(n_channels: int, n_times: int, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).normal(0, 40, (n_channels, n_times))


def test_7_two_blank_edf_labels_are_not_scored(tmp_path):
    path = _write_edf(tmp_path / "blank.edf", ["LA1", "", "LA2", "", "LA3"], _noise(5, 2560), 256.0)
    rec = read_recording(path)
    assert rec.ch_names == ["LA1", "-0", "LA2", "-1", "LA3"]  # MNE's running numbers for duplicate empty names
    assert rec.ch_types == ["seeg", "misc", "seeg", "misc", "seeg"]
    assert [rec.ch_names[i] for i in rec.ieeg_picks()] == ["LA1", "LA2", "LA3"]
    assert rec.info["blank_labels"] == ["-0", "-1"]


def test_7_a_contact_named_like_mnes_renaming_is_kept(tmp_path):
    path = _write_edf(tmp_path / "dash.edf", ["LA1", "-1", "LA2"], _noise(3, 2560), 256.0)
    rec = read_recording(path)
    assert rec.info["blank_labels"] == [] and rec.ch_names == [
        "LA1",
        "-1",
        "LA2",
    ]  # a written name: the name rules decide


# ------------------------------------------------------------------------------------------------ 8


def _write_set_fdt(folder: Path, n_chan: int, n_times: int, fdt_times: int) -> Path:
    """An EEGLAB ``.set`` stating ``n_times`` samples whose ``.fdt`` holds ``fdt_times``."""
    chanlocs = np.zeros((n_chan,), dtype=[("labels", object), ("type", object)])
    for i in range(n_chan):
        chanlocs[i] = (f"LA{i + 1}", "SEEG")
    eeg = dict(
        setname="t",
        nbchan=float(n_chan),
        pnts=float(n_times),
        trials=1.0,
        srate=256.0,
        xmin=0.0,
        xmax=(n_times - 1) / 256.0,
        data="rec.fdt",
        chanlocs=chanlocs,
        icawinv=np.array([]),
        icasphere=np.array([]),
        icaweights=np.array([]),
        ref="common",
    )
    folder.mkdir(parents=True, exist_ok=True)
    _noise(n_chan, fdt_times).astype("<f4").T.tofile(folder / "rec.fdt")  # channels vary fastest
    scipy.io.savemat(folder / "rec.set", {"EEG": eeg}, appendmat=False)
    return folder / "rec.set"


def test_8_eeglab_fdt_longer_than_set_is_refused(tmp_path):
    path = _write_set_fdt(tmp_path, 4, 2560, 2560 + 512)
    with pytest.raises(
        RecordingReadError,
        match=rf"Could not read {re.escape(str(path))} as EEGLAB: rec\.fdt holds 49152 bytes \(3072 samples of 4 float32 "
        r"channels\) but the \.set states 2560 samples \(40960 bytes\); the data file is longer than its \.set",
    ):
        read_recording(path)


def test_8_eeglab_fdt_shorter_than_set_is_refused_in_our_words(tmp_path):
    path = _write_set_fdt(tmp_path, 4, 2560, 2560 - 512)
    with pytest.raises(RecordingReadError, match=r"holds 32768 bytes .* shorter than its \.set") as info:
        read_recording(path)
    assert "MNE" not in str(info.value)


def test_8_eeglab_fdt_matching_set_is_read(tmp_path):
    assert read_recording(_write_set_fdt(tmp_path, 4, 2560, 2560)).n_times == 2560


def test_8_brainvision_number_of_channels_below_channel_lines_is_refused(tmp_path):
    names = [f"LA{i + 1}" for i in range(8)]
    pybv.write_brainvision(
        data=_noise(8, 2560) * 1e-6, sfreq=256.0, ch_names=names, fname_base="rec", folder_out=tmp_path
    )
    vhdr = tmp_path / "rec.vhdr"
    vhdr.write_text(
        vhdr.read_text(encoding="utf-8").replace("NumberOfChannels=8", "NumberOfChannels=4"), encoding="utf-8"
    )
    with pytest.raises(
        RecordingReadError,
        match=rf"Could not read {re.escape(str(vhdr))} as BrainVision: the header states NumberOfChannels=4 but lists 8 channels",
    ):
        read_recording(vhdr)


# ------------------------------------------------------------------------------------------------ 9


def _hum(n_channels: int, seconds: float, sfreq: float, line: float = 50.0) -> np.ndarray:
    t = np.arange(int(seconds * sfreq)) / sfreq
    return _noise(n_channels, len(t)) + 30 * np.sin(2 * np.pi * line * t)


def test_9_rate_stated_half_the_true_rate_is_warned(tmp_path, caplog):
    data = _hum(6, 20.0, 512.0)  # recorded at 512 Hz with 50 Hz mains
    path = _write_edf(tmp_path / "half.edf", [f"LA{i + 1}" for i in range(6)], data, 256.0)  # header says 256 Hz
    with caplog.at_level(logging.WARNING, logger="sss_viewer.io.readers"):
        rec = read_recording(path)
    assert rec.sfreq == 256.0
    assert len(rec.info["warnings"]) == 1
    assert re.search(
        r"a narrow peak at 25 Hz and none at 50 Hz: .* the stated rate 256 Hz is half the true rate \(probably 512 Hz\)",
        rec.info["warnings"][0],
    )
    assert rec.info["warnings"][0] in caplog.text


def test_9_rate_stated_twice_the_true_rate_is_warned(tmp_path):
    data = _hum(6, 40.0, 256.0, line=60.0)
    path = _write_edf(tmp_path / "twice.edf", [f"LA{i + 1}" for i in range(6)], data, 512.0)
    (warning,) = read_recording(path).info["warnings"]
    assert "a narrow peak at 120 Hz and none at 60 Hz" in warning and "probably 256 Hz" in warning


def test_9_true_rate_with_mains_hum_is_not_warned(tmp_path):
    path = _write_edf(tmp_path / "ok.edf", [f"LA{i + 1}" for i in range(6)], _hum(6, 20.0, 512.0), 512.0)
    assert read_recording(path).info["warnings"] == []


def test_9_integer_samples_read_as_float_are_warned(tmp_path):
    names = [f"LA{i + 1}" for i in range(4)]
    pybv.write_brainvision(
        data=_noise(4, 5120) * 1e-6,
        sfreq=256.0,
        ch_names=names,
        fname_base="rec",
        folder_out=tmp_path,
        fmt="binary_int16",
    )
    vhdr = tmp_path / "rec.vhdr"
    vhdr.write_text(
        vhdr.read_text(encoding="utf-8").replace("BinaryFormat=INT_16", "BinaryFormat=IEEE_FLOAT_32"), encoding="utf-8"
    )
    (warning,) = read_recording(vhdr).info["warnings"]
    assert "sample format is probably misstated" in warning


# ------------------------------------------------------------------------------------------------ 12


def test_12_edf_record_duration_1e_9_is_refused(tmp_path):
    path = _write_edf(tmp_path / "tiny.edf", ["LA1", "LA2"], _noise(2, 2560), 256.0)
    _patch_header(path, 244, 252, "1e-09")
    with pytest.raises(
        RecordingReadError,
        match=rf"Could not read {re.escape(str(path))} as EDF: it states a sampling rate of 2\.56e\+11 Hz \(256 samples per "
        r"1e-09 s record\), outside the plausible 1 Hz - 100 kHz",
    ):
        read_recording(path)


def test_12_edf_record_duration_0_is_refused(tmp_path):
    path = _write_edf(tmp_path / "zero.edf", ["LA1", "LA2"], _noise(2, 2560), 256.0)
    _patch_header(path, 244, 252, "0")
    with pytest.raises(RecordingReadError, match=r"as EDF: its header states a data record duration of 0 s"):
        read_recording(path)


def test_12_npz_rate_1e9_is_refused(tmp_path):
    path = tmp_path / "rec.npz"
    np.savez(path, data=_noise(2, 1000).astype(np.float32), ch_names=np.array(["LA1", "LA2"]), fs=1e9)
    with pytest.raises(
        RecordingReadError,
        match=rf"Could not read {re.escape(str(path))} as a NumPy archive: it states a sampling rate of 1e\+09 Hz \('fs'\)",
    ):
        read_recording(path)


def test_12_edf_with_minus_one_records_is_read_whole(tmp_path):
    data = _noise(3, 2560)
    path = _write_edf(tmp_path / "live.edf", ["LA1", "LA2", "LA3"], data, 256.0)
    expected = read_recording(path).get_data()
    _patch_header(path, 236, 244, "-1")
    rec = read_recording(path)
    assert rec.n_times == 2560
    np.testing.assert_array_equal(rec.get_data(), expected)


def test_12_edf_with_more_data_than_records_reads_the_stated_records(tmp_path):
    path = _write_edf(tmp_path / "long.edf", ["LA1", "LA2", "LA3"], _noise(3, 2560), 256.0)
    expected = read_recording(path).get_data()
    _patch_header(path, 236, 244, "7")
    rec = read_recording(path)
    assert rec.n_times == 7 * 256
    np.testing.assert_array_equal(rec.get_data(), expected[:, : 7 * 256])
    assert rec.info["warnings"][0].startswith(
        "long.edf holds 10 data records but its header states 7; read up to the stated 7"
    )


def test_12_edf_with_fewer_records_than_stated_is_still_refused_as_truncated(tmp_path):
    path = _write_edf(tmp_path / "cut.edf", ["LA1", "LA2", "LA3"], _noise(3, 2560), 256.0)
    path.write_bytes(path.read_bytes()[: -3 * 256 * 2 * 3])
    with pytest.raises(RecordingReadError, match="looks truncated"):
        read_recording(path)


@pytest.mark.parametrize("records", ["0", "10", "-1"])
def test_12_header_only_edf_says_no_data_records(tmp_path, records):
    path = _write_edf(tmp_path / "head.edf", ["LA1", "LA2"], _noise(2, 2560), 256.0)
    header_bytes = int(path.read_bytes()[184:192])
    path.write_bytes(path.read_bytes()[:header_bytes])
    _patch_header(path, 236, 244, records)
    with pytest.raises(
        RecordingReadError, match=rf"Could not read {re.escape(str(path))} as EDF: it has no data records"
    ):
        read_recording(path)


def test_12_text_file_named_npz_is_not_a_numpy_archive(tmp_path):
    path = tmp_path / "rec.npz"
    path.write_text("channel,value\nLA1,3\n")
    with pytest.raises(
        RecordingReadError,
        match=rf"Could not read {re.escape(str(path))}: not a NumPy archive \(a file starting with b'channel,'\)",
    ) as info:
        read_recording(path)
    assert "allow_pickle" not in str(info.value)


def test_12_npy_named_npz_is_not_a_numpy_archive(tmp_path):
    path = tmp_path / "rec.npz"
    with open(path, "wb") as f:
        np.save(f, _noise(2, 100))
    with pytest.raises(RecordingReadError, match=r"not a NumPy archive \(a single NumPy array"):
        read_recording(path)


def test_sidecar_rule_leaves_plain_runs_alone(tmp_path):
    """Guard: an ordinary BIDS run (sidecars as written) still reads, with no warnings."""
    vhdr = _bids_run(tmp_path / "root")
    rec = load_recording(vhdr)
    assert rec.n_channels == 8 and rec.info["warnings"] == []
    assert os.path.islink(vhdr) is False

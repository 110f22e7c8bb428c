"""Recordings read on several threads at once (the viewer's sessions each read on a worker thread): each read
keeps its own warnings, so a truncated file is refused under its own name and a whole file is not refused."""

from __future__ import annotations

import threading
import warnings
from pathlib import Path

import mne
import numpy as np
import pytest

from sss_viewer._thread_warnings import recorded_warnings
from sss_viewer.io._fif_tags import fif_cut_short
from sss_viewer.io.readers import RecordingReadError, _check_edf_header, _mne_errors, read_recording
from tests.fixtures.threads import run_threads

TIMEOUT_S = 60


def _save_fif(path: Path, seconds: float) -> Path:
    rng = np.random.default_rng(0)
    info = mne.create_info(["A1", "A2"], 250.0, "ecog")
    raw = mne.io.RawArray(rng.standard_normal((2, int(seconds * 250))) * 50e-6, info, verbose="error")
    raw.save(path, verbose="error")
    return path


@pytest.fixture(scope="module")
def files(tmp_path_factory) -> dict[str, Path]:
    """A whole FIF recording and a copy cut in half (MNE warns "Invalid tag with only …" reading it)."""
    folder = tmp_path_factory.mktemp("concurrent")
    whole = _save_fif(folder / "whole_raw.fif", seconds=40)
    cut = folder / "cut_raw.fif"
    cut.write_bytes(whole.read_bytes()[: whole.stat().st_size // 2])
    return {"whole": whole, "cut": cut}


def test_mnes_truncation_warning_is_charged_to_the_read_that_raised_it(files):
    """Read A opens, read B opens, A meets MNE's truncation warning, A closes, B closes (not last-in-first-out,
    which ``catch_warnings`` gets wrong): A is refused naming A's file, B is not refused."""
    with recorded_warnings() as real:
        mne.io.read_raw_fif(files["cut"], preload=False, verbose="warning")
    truncation = [str(w.message) for w in real if "Invalid tag with only" in str(w.message)]
    assert truncation, [str(w.message) for w in real]  # MNE's own words for a cut FIF, replayed below
    a_in, b_in, a_out = threading.Event(), threading.Event(), threading.Event()
    outcome: dict[str, str] = {}

    def read_a():
        try:
            with _mne_errors(files["cut"], "FIF"):
                a_in.set()
                assert b_in.wait(TIMEOUT_S)
                warnings.warn(truncation[0], RuntimeWarning, stacklevel=1)
            outcome["a"] = "read"
        except RecordingReadError as exc:
            outcome["a"] = str(exc)
        finally:
            a_out.set()

    def read_b():
        assert a_in.wait(TIMEOUT_S)
        try:
            with _mne_errors(files["whole"], "FIF"):
                b_in.set()
                assert a_out.wait(TIMEOUT_S)
            outcome["b"] = "read"
        except RecordingReadError as exc:
            outcome["b"] = str(exc)

    run_threads(read_a, read_b, timeout_s=TIMEOUT_S)
    assert "cut_raw.fif as FIF: the file looks truncated" in outcome["a"]
    assert outcome["b"] == "read"


def test_many_reads_at_once_each_get_their_own_answer(files):
    """Six threads read the whole and the cut file in turn, eight times each, all at once."""
    n_threads, rounds = 6, 8
    barrier = threading.Barrier(n_threads)
    answers: dict[int, list[str]] = {}

    def reader(index: int):
        own = []
        barrier.wait(TIMEOUT_S)
        for round_ in range(rounds):
            name = "cut" if (index + round_) % 2 else "whole"
            try:
                recording = read_recording(files[name])
                own.append(f"{name}: read {recording.n_channels} channels")
            except RecordingReadError as exc:
                own.append(f"{name}: refused ({'cut_raw.fif' in str(exc)}, {'whole_raw.fif' in str(exc)})")
        answers[index] = own

    read_recording(files["whole"])  # first imports done here: some add filters of their own when imported
    filters, hook = list(warnings.filters), warnings.showwarning
    run_threads(*[lambda i=i: reader(i) for i in range(n_threads)], timeout_s=TIMEOUT_S)
    expected = {"cut": "cut: refused (True, False)", "whole": "whole: read 2 channels"}
    for index in range(n_threads):
        assert answers[index] == [expected["cut" if (index + r) % 2 else "whole"] for r in range(rounds)]
    assert warnings.filters == filters and warnings.showwarning is hook


def test_reads_leave_mnes_process_wide_log_level_alone(files, tmp_path, monkeypatch):
    """MNE's ``verbose=`` sets the level of its one logger for the whole process while a call runs: raised to
    ERROR it would stop MNE's warnings, such as a cut file's, on every other thread's read meanwhile."""
    import logging

    from sss_viewer.io._bids_paths import bids_path_of
    from sss_viewer.synth.bids import write_recording_bids
    from sss_viewer.synth.config import SynthConfig
    from sss_viewer.synth.run import synthesise_recording

    recording, _ = synthesise_recording(0, seed=1, config=SynthConfig(duration_scale=0.05, max_channels=8))
    vhdr = write_recording_bids(recording, tmp_path / "bids")
    (tmp_path / "bids" / "dataset_description.json").write_text('{"Name": "x", "BIDSVersion": "1.8.0"}')
    mne_logger = logging.getLogger("mne")
    levels_set = []
    set_level = mne_logger.setLevel
    monkeypatch.setattr(mne_logger, "setLevel", lambda level: (levels_set.append(level), set_level(level))[1])
    assert bids_path_of(vhdr) is not None
    assert read_recording(vhdr).n_channels == 8  # the whole read, through mne-bids
    with pytest.raises(RecordingReadError):
        read_recording(files["cut"])
    assert all(level <= logging.WARNING for level in levels_set), levels_set


# ---------------------------------------------------------------------------- cut files told by their bytes
# MNE tells a cut FIF or EDF only by a warning, which process-wide state can keep from a read (above); the
# reader also tells them from the files' bytes, with no warning involved.


@pytest.mark.parametrize("keep", [0.5, 0.999, 10 / 40_000])
def test_a_fif_cut_anywhere_is_told_from_its_tags(files, tmp_path, keep):
    whole = files["whole"].read_bytes()
    cut = tmp_path / "cut_raw.fif"
    cut.write_bytes(whole[: max(1, int(len(whole) * keep))])
    why = fif_cut_short(cut)
    assert why is not None and f"the file ends at byte {cut.stat().st_size}" in why
    assert fif_cut_short(files["whole"]) is None
    with pytest.raises(RecordingReadError, match=r"cut_raw\.fif as FIF: "):
        read_recording(cut)


def test_split_fif_parts_are_each_checked(tmp_path):
    """A recording saved in parts: the whole set reads; a cut second part is refused, naming the part."""
    rng = np.random.default_rng(0)
    info = mne.create_info(["A1", "A2", "A3"], 1000.0, "seeg")
    raw = mne.io.RawArray(rng.standard_normal((3, 400_000)) * 50e-6, info, verbose="error")
    raw.save(tmp_path / "long_raw.fif", split_size="2MB", verbose="error")
    parts = sorted(tmp_path.glob("long_raw*.fif"))
    assert len(parts) >= 2 and all(fif_cut_short(p) is None for p in parts)
    assert read_recording(tmp_path / "long_raw.fif").n_times == 400_000
    second = parts[1]
    second.write_bytes(second.read_bytes()[: second.stat().st_size // 2])
    with pytest.raises(RecordingReadError, match=rf"long_raw\.fif as FIF: .*{second.name}|looks truncated"):
        read_recording(tmp_path / "long_raw.fif")


def test_an_edf_with_fewer_records_than_its_header_states_is_refused_before_mne_opens_it(tmp_path):
    path = tmp_path / "full.edf"
    rng = np.random.default_rng(0)
    raw = mne.io.RawArray(rng.standard_normal((2, 2000)) * 50e-6, mne.create_info(["A1", "A2"], 250.0, "eeg"))
    mne.export.export_raw(path, raw, overwrite=True, verbose="error")
    cut = tmp_path / "cut.edf"
    cut.write_bytes(path.read_bytes()[: path.stat().st_size - 700])
    with pytest.raises(
        RecordingReadError, match=r"cut\.edf as EDF: the file looks truncated \(its header states \d+ data"
    ):
        _check_edf_header(cut, "EDF")

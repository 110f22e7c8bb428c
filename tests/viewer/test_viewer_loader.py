"""Safe file access of the viewer: paths stay inside the data root, uploads are checked, BIDS runs listed, models fit."""

import os
from pathlib import Path

import numpy as np
import pytest

from sss_viewer.engine.inference import check_fit
from sss_viewer.io._lazy import LazySignals
from sss_viewer.io.recording import Recording
from sss_viewer.viewer._loader import (
    CHOOSE_PROMPT,
    ModelPicker,
    RecordingBrowser,
    UploadError,
    list_folder,
    load_selected,
    resolve_folder_inside,
    resolve_inside,
    sanitise_filename,
    save_upload,
)
from tests.fixtures.recordings import SHARED_DATA, toy_recording

PT01 = SHARED_DATA / "ezfragility-pt01" / "pt01_sz1_ecog_m1s_p2s.npz"


def write_npz(path: Path, n_channels: int = 4, n_times: int = 2500, sfreq: float = 250.0) -> Path:
    rng = np.random.default_rng(0)
    np.savez(
        path,
        data=rng.standard_normal((n_channels, n_times)).astype(np.float32),
        ch_names=np.array([f"A{i + 1}" for i in range(n_channels)]),
        sfreq=np.array(sfreq),
    )
    return path


def brainvision_bytes(tmp_path: Path, base: str = "rec", n_channels: int = 3, n_times: int = 1000) -> dict[str, bytes]:
    """A BrainVision triple written by pybv, as {file name: bytes}."""
    from pybv import write_brainvision

    folder = tmp_path / "bv-source"
    folder.mkdir(exist_ok=True)
    data = np.random.default_rng(1).standard_normal((n_channels, n_times)) * 1e-5
    write_brainvision(
        data=data,
        sfreq=500.0,
        ch_names=[f"LA{i + 1}" for i in range(n_channels)],
        fname_base=base,
        folder_out=folder,
        overwrite=True,
    )
    return {p.name: p.read_bytes() for p in sorted(folder.glob(f"{base}.*"))}


@pytest.fixture
def data_root(tmp_path):
    """ROOT/{a.npz, notes.txt, sub/b.npz, link_out.npz -> OUTSIDE/secret.npz, link_in.npz -> a.npz, .hidden.npz}."""
    root = tmp_path / "root"
    (root / "sub").mkdir(parents=True)
    outside = tmp_path / "outside"
    outside.mkdir()
    write_npz(root / "a.npz")
    write_npz(root / "sub" / "b.npz")
    write_npz(root / ".hidden.npz")
    (root / "notes.txt").write_text("not a recording")
    write_npz(outside / "secret.npz")
    os.symlink(outside / "secret.npz", root / "link_out.npz")
    os.symlink(outside, root / "dir_out")
    os.symlink(root / "a.npz", root / "link_in.npz")
    return root


# -- resolve_inside ------------------------------------------------------------------------------


def test_resolve_inside_accepts_files_and_symlinks_within_the_root(data_root):
    assert resolve_inside(data_root, "a.npz") == data_root / "a.npz"
    assert resolve_inside(data_root, "sub/b.npz") == data_root / "sub" / "b.npz"
    assert resolve_inside(data_root, "link_in.npz") == data_root / "link_in.npz"  # kept as named


@pytest.mark.parametrize(
    ("relative", "phrase"),
    [
        ("../outside/secret.npz", "'..' is not allowed"),
        ("sub/../../outside/secret.npz", "'..' is not allowed"),
        ("link_out.npz", "outside the data root"),
        ("dir_out/secret.npz", "outside the data root"),
        ("sub", "is a folder"),
        ("missing.npz", "not an existing file"),
        ("notes.txt", "unsupported file type"),
        ("a\x00.npz", "NUL byte"),
    ],
)
def test_resolve_inside_refuses_escapes_and_non_recordings(data_root, relative, phrase):
    with pytest.raises(ValueError, match=phrase) as info:
        resolve_inside(data_root, relative)
    assert repr(relative) in str(info.value) or "NUL" in phrase
    if phrase != "NUL byte":
        assert str(data_root) in str(info.value)


def test_resolve_inside_refuses_absolute_paths_even_inside_the_root(data_root, tmp_path):
    for absolute in (str(tmp_path / "outside" / "secret.npz"), str(data_root / "a.npz"), "/etc/passwd"):
        with pytest.raises(ValueError, match="absolute paths are not accepted"):
            resolve_inside(data_root, absolute)


def test_folders_and_listing_stay_inside_the_root(data_root):
    assert resolve_folder_inside(data_root, "") == data_root / "."
    with pytest.raises(ValueError, match="outside the data root"):
        resolve_folder_inside(data_root, "dir_out")
    folders, files = list_folder(data_root)
    assert folders == ["sub"]  # dir_out leads outside: not listed
    assert files == ["a.npz", "link_in.npz"]  # link_out, .hidden and notes.txt are not listed
    assert list_folder(data_root, "sub") == ([], ["sub/b.npz"])


# -- RecordingBrowser ----------------------------------------------------------------------------


def test_browser_selects_inside_and_keeps_the_selection_on_refusal(data_root):
    browser = RecordingBrowser(data_root=str(data_root))
    assert browser.select("a.npz") == data_root / "a.npz"
    assert browser.selected == data_root / "a.npz" and browser.error == ""
    for bad in ("../outside/secret.npz", "link_out.npz", "/etc/passwd"):
        assert browser.select(bad) is None
        assert "Refused path" in browser.error
        assert browser.selected == data_root / "a.npz"
    browser.path = "sub/b.npz"
    assert browser.selected == data_root / "sub" / "b.npz" and browser.error == ""


def test_browser_data_root_defaults_to_the_environment(data_root, monkeypatch):
    monkeypatch.setenv("SSS_VIEWER_DATA_ROOT", str(data_root))
    assert Path(RecordingBrowser().data_root) == data_root


def test_browser_navigates_folders_and_never_above_the_root(data_root):
    browser = RecordingBrowser(data_root=str(data_root))
    listing = browser._listing
    assert set(listing.options.values()) == {"", "sub/", "a.npz", "link_in.npz"}  # "" is the "choose" placeholder
    assert list(listing.options)[0] == CHOOSE_PROMPT and listing.value == "" and browser.selected is None
    listing.value = "sub/"
    assert browser.folder == "sub"
    assert list(listing.options.values()) == ["", "sub/b.npz"]
    listing.value = "sub/b.npz"
    assert browser.selected == data_root / "sub" / "b.npz"
    browser._go_up()
    assert browser.folder == ""
    browser._go_up()
    assert browser.folder == "" and browser._up.disabled
    browser.folder = "dir_out"
    assert "outside the data root" in browser.error and browser.folder == ""
    browser.__panel__()  # builds


# -- uploads ------------------------------------------------------------------------------------


def test_sanitise_filename_strips_folders_and_odd_characters():
    assert sanitise_filename("../../etc/passwd") == "passwd"
    assert sanitise_filename("C:\\Users\\x\\rec 1.vhdr") == "rec 1.vhdr"
    assert sanitise_filename(".bashrc") == "bashrc"
    assert sanitise_filename("a;rm -rf *.edf") == "a_rm -rf _.edf"
    for bad in ("..", "", "///", ". ."):
        with pytest.raises(UploadError, match="no usable characters"):
            sanitise_filename(bad)


def test_oversize_upload_is_refused(tmp_path, data_root):
    browser = RecordingBrowser(data_root=str(data_root), upload_dir=tmp_path / "up", max_upload_mb=0.001)
    browser.select("a.npz")
    content = (data_root / "a.npz").read_bytes()
    assert len(content) > 1000
    assert browser.handle_upload({"a.npz": content}) is None
    assert "above the 0.001 MB upload limit" in browser.error
    assert browser.selected == data_root / "a.npz"
    assert not any((tmp_path / "up").glob("upload-*/*"))
    assert browser._dropper.max_file_size == "0.001MB"


def test_brainvision_triple_upload_is_saved_with_safe_names_and_loads(tmp_path, data_root):
    files = brainvision_bytes(tmp_path)
    assert sorted(files) == ["rec.eeg", "rec.vhdr", "rec.vmrk"]
    upload = {"../../evil/" + name: content for name, content in files.items()}
    upload["../../evil/rec.vhdr"] = files["rec.vhdr"].decode("utf-8")  # text/* arrives as str
    browser = RecordingBrowser(data_root=str(data_root))
    path = browser.handle_upload(upload)
    assert browser.error == ""
    assert path is not None and path.name == "rec.vhdr" and browser.selected == path
    assert path.parent.parent == browser.upload_dir
    assert sorted(p.name for p in path.parent.iterdir()) == ["rec.eeg", "rec.vhdr", "rec.vmrk"]
    assert (path.parent / "rec.eeg").read_bytes() == files["rec.eeg"]
    recording = load_selected(path)
    assert isinstance(recording.data, LazySignals)
    assert recording.ch_names == ["LA1", "LA2", "LA3"] and recording.n_times == 1000 and recording.sfreq == 500.0
    upload_dir = browser.upload_dir
    browser.cleanup()
    assert not upload_dir.exists() and browser.upload_dir is None


class FakeSessionDocument:
    """Stands in for a served Bokeh document."""

    session_context = object()
    destroyed = None

    def on_session_destroyed(self, callback):
        self.destroyed = callback


def test_served_uploads_are_deleted_when_the_session_ends(tmp_path, data_root):
    from panel.io.state import set_curdoc

    doc = FakeSessionDocument()
    browser = RecordingBrowser(data_root=str(data_root))
    with set_curdoc(doc):
        path = browser.handle_upload(brainvision_bytes(tmp_path))
    assert path is not None and path.is_file() and doc.destroyed is not None
    upload_dir = browser.upload_dir
    doc.destroyed(None)
    assert not path.exists() and not upload_dir.exists()


def test_upload_through_the_drop_widget_frees_its_bytes(tmp_path, data_root):
    browser = RecordingBrowser(data_root=str(data_root), upload_dir=tmp_path / "up")
    browser._dropper.value = brainvision_bytes(tmp_path)
    assert browser.selected is not None and browser.selected.name == "rec.vhdr"
    assert browser._dropper.value == {}
    browser.cleanup()  # a given upload_dir is kept
    assert (tmp_path / "up").is_dir()


def test_brainvision_upload_without_its_eeg_gives_a_clear_message(tmp_path, data_root):
    files = brainvision_bytes(tmp_path)
    del files["rec.eeg"]
    browser = RecordingBrowser(data_root=str(data_root), upload_dir=tmp_path / "up")
    assert browser.handle_upload(files) is None
    assert "BrainVision upload incomplete" in browser.error
    assert "'rec.eeg'" in browser.error and ".vhdr, .vmrk and .eeg" in browser.error
    assert browser.selected is None


def test_brainvision_upload_checks_the_header_names(tmp_path):
    files = brainvision_bytes(tmp_path)
    renamed = {"other.eeg" if k == "rec.eeg" else k: v for k, v in files.items()}
    with pytest.raises(UploadError, match="needs its DataFile 'rec.eeg'"):
        save_upload(renamed, tmp_path / "up")
    header = files["rec.vhdr"].replace(b"DataFile=rec.eeg", b"DataFile=../../etc/rec.eeg")
    with pytest.raises(UploadError, match="not a plain file name"):
        save_upload({**files, "rec.vhdr": header}, tmp_path / "up")
    with pytest.raises(UploadError, match="need their .vhdr file"):
        save_upload({"rec.eeg": files["rec.eeg"]}, tmp_path / "up")
    with pytest.raises(UploadError, match="one recording at a time"):
        save_upload({**files, "x.edf": b"0"}, tmp_path / "up")
    with pytest.raises(UploadError, match="unsupported file type"):
        save_upload({"run.sh": b"#!/bin/sh"}, tmp_path / "up")


def test_brainvision_upload_reads_the_header_as_the_reader_does(tmp_path):
    """Keys in another case or written with ':' are what MNE reads: the upload check accepts them alike."""
    from sss_viewer.io.readers import brainvision_header_fields, read_recording

    files = brainvision_bytes(tmp_path)
    header = (
        files["rec.vhdr"]
        .replace(b"DataFile=rec.eeg", b"datafile: rec.eeg")
        .replace(b"MarkerFile=rec.vmrk", b"MARKERFILE=rec.vmrk")
    )
    assert brainvision_header_fields(header)["datafile"] == "rec.eeg"
    path = save_upload({**files, "rec.vhdr": header}, tmp_path / "up")
    assert len(read_recording(path, require_ieeg=False).ch_names) > 0  # and it opens
    without = header.replace(b"MARKERFILE=rec.vmrk", b"")
    with pytest.raises(UploadError, match="no MarkerFile= line in \\[Common Infos\\]"):
        save_upload({**files, "rec.vhdr": without}, tmp_path / "up2")


def test_unreadable_upload_is_refused_and_removed(tmp_path, data_root):
    browser = RecordingBrowser(data_root=str(data_root), upload_dir=tmp_path / "up")
    assert browser.handle_upload({"broken.npz": b"not an archive"}) is None
    assert "could not be read" in browser.error and "broken.npz" in browser.error
    assert not list((tmp_path / "up").glob("upload-*"))


# -- BIDS picker --------------------------------------------------------------------------------


def test_bids_picker_lists_subjects_and_runs(ds003029_like_root):
    from tests.fixtures.bids_fixture import read_manifest

    manifest = read_manifest(ds003029_like_root)["subjects"]
    browser = RecordingBrowser(data_root=str(ds003029_like_root))
    assert browser.is_bids and browser._subject.visible
    assert browser.bids_subjects() == sorted(entry["subject"] for entry in manifest)
    for entry in manifest:
        runs = browser.bids_runs(entry["subject"])
        assert len(runs) == len(entry["runs"]) >= 1
        assert all(name.startswith(f"sub-{entry['subject']}_") and name.endswith("_ieeg.vhdr") for name in runs)
    last = browser.bids_subjects()[-1]
    browser._subject.value = last
    runs = browser.bids_runs()
    assert list(browser._run.options) == list(runs)
    browser._run.value = next(iter(runs.values()))
    assert browser.error == "" and browser.selected == ds003029_like_root / next(iter(runs.values()))
    assert load_selected(browser.selected).subject == last


def test_bids_picker_is_hidden_outside_a_bids_folder(data_root):
    browser = RecordingBrowser(data_root=str(data_root))
    assert not browser.is_bids and browser.bids_subjects() == [] and not browser._subject.visible


# -- models -------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def demo_bundle():
    from sss_viewer.engine.bundle import ModelBundle
    from sss_viewer.viewer.demo import DEMO_MODEL_DIR

    return ModelBundle.load(DEMO_MODEL_DIR)


def test_model_picker_loads_the_bundled_demo_model_by_default():
    picker = ModelPicker()
    assert picker.error == "" and picker.bundle is not None
    assert "synthetic" in picker.description()
    picker.__panel__()


def test_model_picker_lists_model_folders_of_a_root(tmp_path, demo_bundle):
    demo_bundle.save(tmp_path / "models" / "mine")
    (tmp_path / "models" / "empty").mkdir()
    picker = ModelPicker(models_root=str(tmp_path / "models"))
    assert picker.param.model.objects == ["mine"] and picker.model == "mine"
    assert picker.model_dir == tmp_path / "models" / "mine" and picker.bundle.window_length == demo_bundle.window_length
    empty = ModelPicker(models_root=str(tmp_path / "models" / "empty"))
    assert empty.bundle is None and "No model directory" in empty.error


def test_model_picker_follows_the_model_environment_variable(tmp_path, demo_bundle, monkeypatch):
    demo_bundle.save(tmp_path / "models" / "b")
    demo_bundle.save(tmp_path / "models" / "a")
    monkeypatch.setenv("SSS_VIEWER_MODEL", str(tmp_path / "models" / "b"))
    picker = ModelPicker()
    assert picker.param.model.objects == ["a", "b"] and picker.model == "b" and picker.error == ""
    monkeypatch.delenv("SSS_VIEWER_MODEL")
    monkeypatch.setenv("SSS_VIEWER_MODELS_ROOT", str(tmp_path / "models"))
    assert ModelPicker().model == "a"


def test_check_fit_accepts_a_long_enough_recording(demo_bundle):
    assert check_fit(demo_bundle, toy_recording("ok", 0, duration_s=20.0, sfreq=500.0)) is None


def test_check_fit_says_a_short_recording_is_too_short(demo_bundle):
    recording = toy_recording("short", 0, duration_s=2.0, sfreq=500.0)
    reason = check_fit(demo_bundle, recording)
    window_s = demo_bundle.window_length / demo_bundle.preprocess.output_sfreq(500.0)
    assert reason is not None and "lasts 2.00 s" in reason and f"{window_s:.2f} s" in reason


@pytest.mark.realdata
def test_check_fit_on_the_real_3_s_pt01_epoch(demo_bundle):
    if not PT01.is_file():
        pytest.skip(f"{PT01} not found")
    reason = check_fit(demo_bundle, load_selected(PT01))
    assert reason is not None and "lasts 3.00 s" in reason and "shorter than one window" in reason


def test_check_fit_refuses_a_low_sampling_rate(demo_bundle):
    reason = check_fit(demo_bundle, toy_recording("slow", 0, duration_s=30.0, sfreq=200.0))
    assert reason is not None and "200 Hz" in reason and "250 Hz" in reason


def test_check_fit_needs_a_good_ieeg_channel(demo_bundle):
    recording = toy_recording("nobody", 0, n_channels=2, duration_s=30.0, sfreq=500.0)
    recording.bads = list(recording.ch_names)
    reason = check_fit(demo_bundle, recording)
    assert reason is not None and "no good iEEG channel" in reason and "A1, A2" in reason
    misc = Recording(
        data=np.zeros((1, 15000), np.float32), sfreq=500.0, ch_names=["EKG"], ch_types=["ecg"], subject="ecg"
    )
    assert "channel types ecg" in check_fit(demo_bundle, misc)

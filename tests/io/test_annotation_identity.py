"""Whose annotations: same-named recordings of different patients, old sidecars, and markers that keep their id.

Real files in temporary folders (BrainVision written by pybv, read by the viewer's loader), and
two ``AnnotationPanel``/``ViewerApp`` objects as two clinicians' sessions on one output folder.
"""

import json

import numpy as np
import pybv
import pytest

from sss_viewer.io._annotation_identity import (
    CONTENT_ENTITY,
    manifest_path,
    read_manifest,
    recording_identity,
    source_digest,
)
from sss_viewer.io.annotation_merge import merge_annotations
from sss_viewer.io.annotation_model import AnnotationSet, make_marker
from sss_viewer.io.annotation_store import load_annotations, read_log, save_annotations, sidecar_paths
from sss_viewer.viewer._annotations import AnnotationPanel
from sss_viewer.viewer._loader import load_selected
from tests.fixtures.recordings import toy_recording

CHANNELS = ["LQ1", "LQ2", "LQ3", "LQ4"]


def _write(folder, name="rec", seed=0, channels=CHANNELS, seconds=8.0):
    """A real BrainVision recording ``folder/name.vhdr`` (its samples differ by ``seed``), read back."""
    folder.mkdir(parents=True, exist_ok=True)
    data = np.random.default_rng(seed).standard_normal((len(channels), int(seconds * 250))) * 20
    pybv.write_brainvision(
        data=data,
        sfreq=250.0,
        ch_names=list(channels),
        fname_base=name,
        folder_out=folder,
        fmt="binary_float32",
        unit="µV",
        overwrite=True,
    )
    return load_selected(folder / f"{name}.vhdr")


def _session(recording, out, data_root=None):
    return AnnotationPanel.from_recording(recording, out, data_root=None if data_root is None else str(data_root))


def _texts(panel_or_set):
    return sorted(m["text"] for m in panel_or_set.markers)


def _old_style_sidecars(out, stem="rec", channels=CHANNELS, bad="LQ1", note="A's note"):
    """Sidecars as the viewer wrote them before recordings were told apart: flat, named by stem, no marker ids."""
    out.mkdir(parents=True, exist_ok=True)
    events, chans = sidecar_paths(out, stem)
    events.write_text(
        "onset\tduration\ttrial_type\tdescription\tauthor\tmodified\n"
        f"5.000000\t0.000000\tonset\tn/a\tdr.a#1\t2025-01-01T00:00:00Z\n"
        f"2.000000\t0.000000\tnote\t{note}\tdr.a#1\t2025-01-01T00:00:00Z\n"
    )
    rows = [
        f"{c}\tseeg\t{'bad' if c == bad else 'good'}\tn/a\t{'1' if c == 'LQ2' else 'n/a'}\trecording" for c in channels
    ]
    chans.write_text("name\ttype\tstatus\tstatus_description\tsoz\ttype_source\n" + "\n".join(rows) + "\n")
    return events, chans


# ------------------------------------------------------------------ recordings that share a file name


def test_same_named_recordings_of_two_patients_keep_separate_annotations(tmp_path):
    data, out = tmp_path / "data", tmp_path / "out"
    rec_a, rec_b = _write(data / "patA", seed=1), _write(data / "patB", seed=2)
    a = _session(rec_a, out, data)
    a.add_marker("onset", 3.0, "A's onset")
    a.add_marker("note", 1.0, "A's note")
    a.bad_channels = ["LQ1"]
    a.set_soz_label("LQ2", True)
    b = _session(rec_b, out, data)  # another clinician, the other patient's rec.vhdr
    assert b.markers == [] and b.bad_channels == [] and b.soz_labels == {}
    b.add_marker("onset", 2.5, "B's onset")
    a.poll()  # A's session is not disturbed by B's save
    assert _texts(a) == ["A's note", "A's onset"] and a.bad_channels == ["LQ1"] and a.soz_labels == {"LQ2": True}
    # each in the folder mirroring its recording's, with a manifest naming it
    assert _texts(load_annotations(out / "patA", "rec")) == ["A's note", "A's onset"]
    assert load_annotations(out / "patA", "rec").bad_channels == ["LQ1"]
    assert _texts(load_annotations(out / "patB", "rec")) == ["B's onset"]
    assert read_manifest(out / "patB", "rec")["source"] == "patB/rec.vhdr"
    assert not sidecar_paths(out, "rec")[0].exists()  # no flat file shared by both
    # reopened in new sessions, each patient gets their own back
    again_a, again_b = _session(rec_a, out, data), _session(_write(data / "patB", seed=2), out, data)
    assert _texts(again_a) == ["A's note", "A's onset"] and again_a.soz_labels == {"LQ2": True}
    assert _texts(again_b) == ["B's onset"] and again_b.bad_channels == []


def test_without_a_data_root_same_named_files_are_told_apart_by_content(tmp_path):
    """Uploads (no stable path) and an app that gives no data root: the content digest keys the sidecars."""
    out = tmp_path / "out"
    rec_a, rec_b = _write(tmp_path / "upload-1", seed=1), _write(tmp_path / "upload-2", seed=2)
    # the BrainVision headers are byte-identical: the data file makes the difference
    assert (tmp_path / "upload-1/rec.vhdr").read_bytes() == (tmp_path / "upload-2/rec.vhdr").read_bytes()
    assert source_digest(rec_a.source) != source_digest(rec_b.source)
    a, b = _session(rec_a, out), _session(rec_b, out)
    a.add_marker("note", 1.0, "A's note")
    b.add_marker("note", 1.0, "B's note")
    assert _texts(a) == ["A's note"] and _texts(b) == ["B's note"]
    assert recording_identity(rec_a).folder == "" and a.stem.startswith(f"rec_{CONTENT_ENTITY}-")
    assert sidecar_paths(out, a.stem)[0].is_file() and a.stem != b.stem
    # the same file uploaded again later finds its annotations
    again = _session(_write(tmp_path / "upload-3", seed=1), out)
    assert _texts(again) == ["A's note"]


@pytest.mark.filterwarnings(  # Bokeh's, as in test_viewer_app.py
    "ignore:The inplace keyword in DataFrame.reset_index is deprecated:DeprecationWarning"
)
def test_app_sessions_keep_same_named_recordings_of_two_patients_apart(tmp_path):
    from sss_viewer.viewer.app import build_app

    data, out = tmp_path / "data", tmp_path / "out"
    _write(data / "patA", seed=1, seconds=2.0), _write(data / "patB", seed=2, seconds=2.0)  # too short to score
    first = build_app(data_root=data, out_dir=out, load_demo=False)
    second = build_app(data_root=data, out_dir=out, load_demo=False)
    assert first.open(data / "patA" / "rec.vhdr") and second.open(data / "patB" / "rec.vhdr")
    first.annotations.add_marker("note", 1.0, "A's note")
    first.annotations.bad_channels = ["LQ3"]
    second.annotations.add_marker("onset", 0.5, "B's onset")
    first.annotations.poll(), second.annotations.poll()
    assert _texts(first.annotations) == ["A's note"] and first.annotations.bad_channels == ["LQ3"]
    assert _texts(second.annotations) == ["B's onset"] and second.annotations.bad_channels == []
    reopened = build_app(data_root=data, out_dir=out, load_demo=False)
    assert reopened.open(data / "patA" / "rec.vhdr")
    assert _texts(reopened.annotations) == ["A's note"] and reopened.annotations.bad_channels == ["LQ3"]


def test_a_different_file_at_the_same_path_is_noticed(tmp_path):
    data, out = tmp_path / "data", tmp_path / "out"
    first = _session(_write(data / "patA", seed=1), out, data)
    first.add_marker("note", 1.0, "made on the first file")
    # re-exported (same channels, other samples): the annotations are shown, with a warning
    changed = _session(_write(data / "patA", seed=5), out, data)
    assert _texts(changed) == ["made on the first file"]
    assert "is not the file these annotations were made on" in changed.status
    # another patient's file copied over it (other channels): not attached; the old ones stay as they were
    before = [p.read_bytes() for p in sidecar_paths(out / "patA", "rec")]
    other = _session(_write(data / "patA", seed=7, channels=["G1", "G2"]), out, data)
    assert other.markers == [] and "were made on another file at patA/rec.vhdr" in other.status
    other.add_marker("note", 0.5, "the new file's")
    assert [p.read_bytes() for p in sidecar_paths(out / "patA", "rec")] == before
    assert _texts(_session(_write(data / "patA", seed=7, channels=["G1", "G2"]), out, data)) == ["the new file's"]


# ------------------------------------------------------------------ sidecars of the old naming


def test_old_flat_sidecars_migrate_to_their_recording_and_no_other(tmp_path):
    data, out = tmp_path / "data", tmp_path / "out"
    rec_a = _write(data / "patA", seed=1)
    old = _old_style_sidecars(out)
    old_bytes = [p.read_bytes() for p in old]
    a = _session(rec_a, out, data)  # the only recording named rec: they are its own
    assert _texts(a) == ["", "A's note"] and a.bad_channels == ["LQ1"] and a.soz_labels == {"LQ2": True}
    assert "were copied here; the old files are kept" in a.status
    assert [p.read_bytes() for p in old] == old_bytes  # copied, never moved or changed
    assert _texts(load_annotations(out / "patA", "rec")) == ["", "A's note"]
    assert any(e["action"].startswith("migrate: copied") for e in read_log(out / "patA", "rec"))
    assert read_manifest(out / "patA", "rec")["source"] == "patA/rec.vhdr"
    # a second patient's rec.vhdr arrives later, same channels: the old sidecars are A's, not B's
    rec_b = _write(data / "patB", seed=2)
    b = _session(rec_b, out, data)
    assert b.markers == [] and b.bad_channels == [] and b.soz_labels == {}
    assert "were not used: they were already copied to patA/rec.vhdr" in b.status
    b.add_marker("note", 3.0, "B's note")
    assert _texts(_session(rec_a, out, data)) == ["", "A's note"]
    assert [p.read_bytes() for p in old] == old_bytes


def test_old_sidecars_two_recordings_could_own_are_left_untouched(tmp_path, caplog):
    data, out = tmp_path / "data", tmp_path / "out"
    rec_a, rec_b = _write(data / "patA", seed=1), _write(data / "patB", seed=2)
    top = _write(data, seed=3)  # data/rec.vhdr: its own sidecars would be named like the old ones
    old = _old_style_sidecars(out)
    old_bytes = [p.read_bytes() for p in old]
    for rec in (rec_a, rec_b, top):
        panel = _session(rec, out, data)
        assert panel.markers == [] and panel.bad_channels == []
        assert "could be any of theirs" in panel.status and "kept untouched" in panel.status
        panel.add_marker("note", 1.0, f"fresh {rec.source.parent.name}")
    assert [p.read_bytes() for p in old] == old_bytes
    assert _texts(_session(top, out, data)) == ["fresh data"]  # kept apart, keyed by its content
    assert "could be any of theirs" in caplog.text


def test_old_sidecars_of_another_recording_are_not_attached(tmp_path):
    data, out = tmp_path / "data", tmp_path / "out"
    rec = _write(data / "patB", seed=2, channels=["G1", "G2", "G3"])  # the old ones list LQ1..LQ4
    _old_style_sidecars(out)
    panel = _session(rec, out, data)
    assert panel.markers == [] and "their channels are not this recording's" in panel.status
    assert not (out / "patB").exists()  # nothing written by opening


def test_old_sidecars_at_the_top_of_the_output_folder_are_adopted_in_place(tmp_path):
    data, out = tmp_path / "data", tmp_path / "out"
    rec = _write(data, seed=1)  # data/rec.vhdr: its folder is the output folder itself
    _old_style_sidecars(out)
    panel = _session(rec, out, data)
    assert _texts(panel) == ["", "A's note"] and "adopted" in panel.status
    assert manifest_path(out, "rec").is_file()
    panel.add_marker("note", 3.0, "more")
    assert _texts(load_annotations(out, "rec")) == ["", "A's note", "more"]


# ------------------------------------------------------------------ markers keep their id


def _two_sessions(tmp_path):
    rec = toy_recording("01", 0)
    rec.seizure_onset_s, rec.events = 10.0, []
    return AnnotationPanel.from_recording(rec, tmp_path), AnnotationPanel.from_recording(rec, tmp_path)


def _onsets(out, stem):
    return [m["onset_s"] for m in load_annotations(out, stem).markers if m["kind"] == "onset"]


def _move(panel, onset, to):
    panel.select([m["onset_s"] for m in panel.markers].index(onset))
    panel.move_selected(to)


@pytest.mark.parametrize(("choice", "final"), [("mine", 14.0), ("theirs", 12.0)])
def test_two_sessions_moving_one_marker_is_a_conflict(tmp_path, choice, final):
    first, second = _two_sessions(tmp_path)
    _move(first, 10.0, 12.0)
    _move(second, 10.0, 14.0)  # the same onset, moved elsewhere
    assert _onsets(tmp_path, second.stem) == [12.0]  # one onset, the file's time, not two
    assert len(second.conflicts) == 1
    assert "moved here to 14.00 s and in another session to 12.00 s; kept 12.00 s" in second.conflicts[0].message
    second.resolve_conflict(0, choice)
    assert _onsets(tmp_path, second.stem) == [final] and second.conflicts == []
    first.refresh()
    assert [m["onset_s"] for m in first.markers] == [final]


@pytest.mark.parametrize(("choice", "final"), [("mine", [13.0]), ("theirs", [])])
def test_deleted_there_moved_here_is_a_conflict(tmp_path, choice, final):
    first, second = _two_sessions(tmp_path)
    first.select(0)
    first.delete_selected()
    _move(second, 10.0, 13.0)
    assert _onsets(tmp_path, second.stem) == [13.0]  # nothing lost until the clinician decides
    assert "was deleted in another session but moved here to 13.00 s" in second.conflicts[0].message
    second.resolve_conflict(0, choice)
    assert _onsets(tmp_path, second.stem) == final


@pytest.mark.parametrize(("choice", "final"), [("mine", []), ("theirs", [13.0])])
def test_moved_there_deleted_here_is_a_conflict(tmp_path, choice, final):
    first, second = _two_sessions(tmp_path)
    _move(first, 10.0, 13.0)
    second.select(0)
    second.delete_selected()  # used to keep the moved marker silently
    assert _onsets(tmp_path, second.stem) == [13.0]
    assert len(second.conflicts) == 1
    assert "was deleted here but moved in another session to 13.00 s; kept there" in second.conflicts[0].message
    second.resolve_conflict(0, choice)
    assert _onsets(tmp_path, second.stem) == final


def test_old_events_without_ids_load_and_sessions_agree_on_their_ids(tmp_path):
    rec = toy_recording("01", 0)
    rec.events = []
    _old_style_sidecars(tmp_path, stem="sub-01_run-01", channels=rec.ch_names)
    first, second = AnnotationPanel.from_recording(rec, tmp_path), AnnotationPanel.from_recording(rec, tmp_path)
    assert _texts(first) == ["", "A's note"] and [m["id"] for m in first.markers] == [m["id"] for m in second.markers]
    _move(first, 5.0, 7.0)
    second.refresh()  # the move arrives as a move: one onset, no conflict
    assert [m["onset_s"] for m in second.markers if m["kind"] == "onset"] == [7.0] and second.conflicts == []
    header = sidecar_paths(tmp_path, "sub-01_run-01")[0].read_text().splitlines()[0]
    assert header.endswith("\tid")
    ids = {m["id"] for m in load_annotations(tmp_path, "sub-01_run-01").markers}
    assert ids == {m["id"] for m in second.markers} and len(ids) == 2


def test_merge_by_id_and_ids_survive_a_round_trip(tmp_path):
    onset = make_marker(10.0, "onset", "sz")
    moved_here, moved_there = {**onset, "onset_s": 11.0}, {**onset, "onset_s": 12.0}
    base = AnnotationSet(markers=[onset])
    merged, conflicts = merge_annotations(base, AnnotationSet(markers=[moved_here]), AnnotationSet(markers=[onset]))
    assert [m["onset_s"] for m in merged.markers] == [11.0] and conflicts == []  # only I moved it
    merged, conflicts = merge_annotations(base, AnnotationSet(markers=[onset]), AnnotationSet(markers=[moved_there]))
    assert [m["onset_s"] for m in merged.markers] == [12.0] and conflicts == []  # only they moved it
    save_annotations(AnnotationSet(markers=[moved_there]), tmp_path, "rec")
    assert [m["id"] for m in load_annotations(tmp_path, "rec").markers] == [onset["id"]]
    # a hand-edited file repeating an id: both rows load, with distinct ids
    events = sidecar_paths(tmp_path, "rec")[0]
    events.write_text(events.read_text() + events.read_text().splitlines()[1].replace("12.000000", "13.000000") + "\n")
    loaded = load_annotations(tmp_path, "rec")
    assert [m["onset_s"] for m in loaded.markers] == [12.0, 13.0] and len({m["id"] for m in loaded.markers}) == 2
    assert json.loads(json.dumps(loaded.markers))  # ids are plain strings (the edit log is JSON)

"""Annotations: sidecar round trip, names, malformed files, the source folder, unknown bad channels, the panel."""

import logging
import subprocess
import sys
from pathlib import Path

import pytest

from sss_viewer.io.annotation_merge import merge_annotations
from sss_viewer.io.annotation_model import AnnotationSet, make_marker, marker_key, seed_from_recording
from sss_viewer.io.annotation_store import (
    MAX_BACKUPS,
    AnnotationFileError,
    load_annotations,
    log_path,
    read_log,
    recording_stem,
    restore_backup,
    save_annotations,
    sidecar_backups,
    sidecar_paths,
)
from sss_viewer.io.recording import Event
from sss_viewer.viewer._annotations import AnnotationPanel
from tests.fixtures.recordings import toy_recording


def demo_like_recording():
    """A toy recording with a seizure onset at 10 s and an offset at 31 s (as the demo has)."""
    rec = toy_recording("01", 0)
    rec.seizure_onset_s, rec.seizure_offset_s = 10.0, 31.0
    rec.info["seizure_onset_text"] = "sz onset"
    return rec


def sample_annotations() -> AnnotationSet:
    return AnnotationSet(
        markers=[
            make_marker(30.5, "offset", "clinical offset"),
            make_marker(12.25, "onset", "low-voltage fast activity\tLA1"),
            make_marker(20.0, "note", "spread to\nRB"),
            make_marker(5.0, "event", "", duration_s=2.5),
        ],
        bad_channels=["A3", "A7"],
    )


def test_save_load_round_trip(tmp_path):
    ann = sample_annotations()
    names = [f"A{i}" for i in range(1, 9)]
    events, channels = save_annotations(ann, tmp_path, "sub-01_run-01", channel_names=names)
    loaded = load_annotations(tmp_path, "sub-01_run-01", names)
    assert [m["onset_s"] for m in loaded.markers] == [5.0, 12.25, 20.0, 30.5]
    assert [m["kind"] for m in loaded.markers] == ["event", "onset", "note", "offset"]
    # tabs and line breaks cannot live in a TSV cell: they come back as spaces
    texts = [m["text"] for m in loaded.markers]
    assert texts == ["", "low-voltage fast activity LA1", "spread to RB", "clinical offset"]
    assert loaded.markers[0]["duration_s"] == 2.5
    assert loaded.bad_channels == ["A3", "A7"]
    assert loaded.unknown_bad_channels == []
    assert [n["text"] for n in loaded.notes] == ["spread to RB"]
    rows = channels.read_text().splitlines()
    assert rows[0] == "name\ttype\tstatus\tstatus_description\tsoz\ttype_source" and len(rows) == 9
    assert "A3\tn/a\tbad\t" in channels.read_text() and "A1\tn/a\tgood\tn/a\tn/a\tn/a" in rows
    assert events.read_text().splitlines()[0] == "onset\tduration\ttrial_type\tdescription\tauthor\tmodified\tid"


def test_sidecar_names_and_stems(tmp_path):
    ev, ch = sidecar_paths(tmp_path, "sub-01_ses-1_task-ictal_run-01_ieeg")
    assert ev.name == "sub-01_ses-1_task-ictal_run-01_ieeg_desc-sssviewer_events.tsv"
    assert ch.name == "sub-01_ses-1_task-ictal_run-01_ieeg_desc-sssviewer_channels.tsv"
    rec = toy_recording("pt01", 0)
    assert recording_stem(rec) == "sub-pt01_run-01"
    rec.source = Path("/data/sub-01_task-ictal_ieeg.vhdr")
    assert recording_stem(rec) == "sub-01_task-ictal_ieeg"
    rec.source = Path("/data/patient.raw.fif.gz")
    assert recording_stem(rec) == "patient.raw"
    saved = save_annotations(sample_annotations(), tmp_path / "new" / "folder", "stem")
    assert [p.name for p in saved] == ["stem_desc-sssviewer_events.tsv", "stem_desc-sssviewer_channels.tsv"]
    visible = [p.name for p in (tmp_path / "new" / "folder").iterdir() if not p.name.startswith(".")]
    assert sorted(visible) == sorted(p.name for p in saved)  # the lock and backups live in .sssviewer/


def test_absent_sidecars_give_empty_annotations(tmp_path):
    ann = load_annotations(tmp_path, "nothing", ["A1"])
    assert ann.empty and ann.markers == [] and ann.bad_channels == []


@pytest.mark.parametrize(
    ("which", "text", "match"),
    [
        ("events", "onset\tduration\n1.0\t0\n", r"lacks columns \['trial_type', 'description'\]"),
        ("events", "onset\tduration\ttrial_type\tdescription\n1.0\t0\tonset\tx\nsoon\t0\tonset\tx\n", "line 3"),
        ("events", "onset\tduration\ttrial_type\tdescription\n1.0\t0\tspike\tx\n", "Invalid marker kind='spike'"),
        ("events", "onset\tduration\ttrial_type\tdescription\n-4\t0\tonset\tx\n", "onset_s=-4.0"),
        ("channels", "name\tstatus\tstatus_description\nA1\tmaybe\tn/a\n", "status must be 'good' or 'bad'"),
        ("channels", "", "is empty"),
    ],
)
def test_malformed_sidecar_names_the_file(tmp_path, which, text, match):
    events, channels = sidecar_paths(tmp_path, "rec")
    target = events if which == "events" else channels
    target.write_text(text)
    with pytest.raises(AnnotationFileError, match=match) as info:
        load_annotations(tmp_path, "rec", ["A1"])
    assert str(target) in str(info.value)


def test_bad_channels_not_in_the_recording_are_reported(tmp_path, caplog):
    _, channels = sidecar_paths(tmp_path, "rec")
    channels.write_text("name\tstatus\tstatus_description\nA1\tbad\tn/a\nZZ9\tbad\tn/a\nA2\tgood\tn/a\n")
    with caplog.at_level(logging.WARNING, logger="sss_viewer.io.annotation_store"):
        ann = load_annotations(tmp_path, "rec", ["A1", "A2"])
    assert ann.bad_channels == ["A1"]
    assert ann.unknown_bad_channels == ["ZZ9"]
    assert "ZZ9" in caplog.text and str(channels) in caplog.text
    with pytest.raises(ValueError, match=r"\['ZZ9'\] are not channels"):
        save_annotations(AnnotationSet(bad_channels=["ZZ9"]), tmp_path, "rec", channel_names=["A1"])


def test_never_writes_into_the_source_folder(tmp_path):
    src = tmp_path / "bids" / "sub-01" / "ieeg"
    src.mkdir(parents=True)
    source = src / "sub-01_task-ictal_ieeg.vhdr"
    source.write_text("original")
    with pytest.raises(ValueError, match="recording's own folder"):
        save_annotations(sample_annotations(), src, "sub-01_task-ictal_ieeg", source=source)
    assert sorted(p.name for p in src.iterdir()) == ["sub-01_task-ictal_ieeg.vhdr"]
    # the panel says so in its status instead of raising, and writes nothing there either
    rec = toy_recording("01", 0)
    rec.source = source
    panel = AnnotationPanel.from_recording(rec, src)
    panel.add_marker("onset", 3.0)
    assert panel.save() is None
    assert "Not saved" in panel.status and "own folder" in panel.status
    assert sorted(p.name for p in src.iterdir()) == ["sub-01_task-ictal_ieeg.vhdr"]
    assert source.read_text() == "original"
    # an explicit opt-in is honoured, and a separate folder is fine
    save_annotations(sample_annotations(), src, "sub-01_task-ictal_ieeg", source=source, allow_source_dir=True)
    assert source.read_text() == "original"
    out = tmp_path / "derivatives"
    save_annotations(sample_annotations(), out, "sub-01_task-ictal_ieeg", source=source)
    assert len([p for p in out.iterdir() if not p.name.startswith(".")]) == 2


def test_seed_from_recording_uses_seizure_times_events_and_bads():
    rec = toy_recording("01", 0)
    rec.seizure_onset_s, rec.seizure_offset_s = 10.0, 31.0
    rec.info["seizure_onset_text"] = "sz onset"
    rec.events = [Event(10.0, 0.0, "sz onset"), Event(2.0, 0.5, "eyes open"), Event(31.0, 0.0, "offset")]
    rec.bads = ["A8"]
    ann = seed_from_recording(rec)
    kinds = [(m["kind"], m["onset_s"], m["text"]) for m in ann.markers]
    assert kinds == [
        ("event", 2.0, "eyes open"),
        ("onset", 10.0, "sz onset"),
        ("offset", 31.0, "clinical seizure offset (from the recording)"),
    ]
    assert ann.bad_channels == ["A8"]


def test_panel_add_move_delete_and_autosave(tmp_path):
    rec = toy_recording("01", 0)
    panel = AnnotationPanel.from_recording(rec, tmp_path)
    assert "seeded from the recording" in panel.status
    assert [m["text"] for m in panel.markers] == ["sz onset"]
    events, channels = sidecar_paths(tmp_path, "sub-01_run-01")
    assert not events.exists()  # nothing written until the clinician changes something
    panel.current_time_s = 12.5
    assert panel._time.value == 12.5
    panel._add_onset.clicks += 1
    assert [(m["kind"], m["onset_s"]) for m in panel.markers] == [("event", 10.0), ("onset", 12.5)]
    assert panel.selected_index == 1 and events.exists() and "Saved" in panel.status
    assert panel.markers[1]["author"] == panel.author and panel.markers[1]["modified"].endswith("Z")
    panel._time.value = 4.0
    panel._move.clicks += 1  # asks first
    assert panel._move_row.visible and "Move onset from 12.50 s to 4.00 s?" in panel._move_text.object
    assert [m["onset_s"] for m in panel.markers] == [10.0, 12.5]
    panel._apply.clicks += 1
    assert [(m["kind"], m["onset_s"]) for m in panel.markers] == [("onset", 4.0), ("event", 10.0)]
    assert panel.selected_index == 0 and not panel._move_row.visible
    panel._text.value = "spread"
    panel._time.value = 20.0
    panel._add_note.clicks += 1
    assert [(n["onset_s"], n["text"], n["author"]) for n in panel.annotations.notes] == [(20.0, "spread", panel.author)]
    panel.select(1)
    panel._delete.clicks += 1
    assert [m["kind"] for m in panel.markers] == ["onset", "note"]
    panel._bad.value = ["A2", "A5"]
    assert panel.bad_channels == ["A2", "A5"]
    again = AnnotationPanel.from_recording(rec, tmp_path)
    assert [marker_key(m) for m in again.markers] == [marker_key(m) for m in panel.markers]
    assert again.markers[0]["author"] == panel.author and again.bad_channels == ["A2", "A5"]
    assert again._bad.value == ["A2", "A5"] and "Loaded" in again.status


def test_fresh_panel_selects_nothing_and_edit_buttons_wait_for_a_marker(tmp_path):
    panel = AnnotationPanel.from_recording(demo_like_recording(), tmp_path)
    assert panel.selected_index is None and panel._list.value == []
    assert panel._goto.disabled and panel._move.disabled and panel._delete.disabled and panel._undo.disabled
    panel._move.clicks += 1  # a click on a disabled button that reached the server anyway changes nothing
    panel._delete.clicks += 1
    assert [m["onset_s"] for m in panel.markers] == [10.0, 31.0] and not any(tmp_path.iterdir())
    panel.select(0)
    assert not (panel._goto.disabled or panel._move.disabled or panel._delete.disabled)


def test_go_to_centres_the_view_and_leaves_the_marker(tmp_path):
    panel = AnnotationPanel.from_recording(demo_like_recording(), tmp_path)
    panel._bad.value = ["A3"]  # something on disk, to check that Go to does not write
    events, _ = sidecar_paths(tmp_path, panel.stem)
    before, markers = events.read_bytes(), [dict(m) for m in panel.markers]
    seen = []
    panel.param.watch(lambda e: seen.append(e.new), "goto_s")
    panel.select(0)
    panel._goto.clicks += 1
    panel._goto.clicks += 1  # twice on the same marker: the view is told twice
    assert seen == [10.0, 10.0]
    assert panel.markers == markers and events.read_bytes() == before
    assert "View centred on onset at 10.00 s" in panel.status and panel.undo_actions == ["mark A3 bad"]


def test_move_shows_the_new_time_and_needs_apply(tmp_path):
    panel = AnnotationPanel.from_recording(demo_like_recording(), tmp_path)
    panel.select(0)
    panel._time.value = 12.5
    panel.request_move()
    assert panel._move_text.object == "Move onset from 10.00 s to 12.50 s?"
    panel.current_time_s = 77.0  # the view moves: the pending move does not follow it
    assert panel._move_time.value == 12.5 and panel._time.value == 77.0
    panel._move_time.value = 14.0
    assert panel._move_text.object == "Move onset from 10.00 s to 14.00 s?"
    panel._cancel.clicks += 1
    assert [m["onset_s"] for m in panel.markers] == [10.0, 31.0] and not any(tmp_path.iterdir())
    panel.request_move()
    panel._move_time.value = 14.0
    panel.select(1)  # choosing another marker drops the pending move
    assert not panel._move_row.visible
    panel.select(0)
    panel.request_move()
    panel._move_time.value = 14.0
    panel._apply.clicks += 1
    assert [m["onset_s"] for m in panel.markers] == [14.0, 31.0]
    assert [m["onset_s"] for m in load_annotations(tmp_path, panel.stem).markers] == [14.0, 31.0]
    assert panel.undo_actions == ["move onset from 10.00 s to 14.00 s"]


def test_undo_reverts_each_kind_of_edit_in_turn(tmp_path):
    rec = demo_like_recording()
    panel = AnnotationPanel.from_recording(rec, tmp_path)
    states = [panel.annotations]
    panel.add_marker("note", 5.0, "spike run")
    states.append(panel.annotations)
    panel.select(0)
    panel.move_selected(7.5)
    states.append(panel.annotations)
    panel.select(2)
    panel.delete_selected()
    states.append(panel.annotations)
    panel._bad.value = ["A2"]
    states.append(panel.annotations)
    panel.set_soz_label("A1", True)
    states.append(panel.annotations)
    panel.set_channel_type("A8", "ecg")
    states.append(panel.annotations)
    assert len(panel.undo_actions) == 6
    for expected in reversed(states[:-1]):
        panel._undo.clicks += 1
        assert panel.annotations.same_as(expected)
        assert load_annotations(tmp_path, panel.stem, rec.ch_names).same_as(expected)  # the undo is saved too
    assert panel._undo.disabled and panel.undo_actions == []
    panel.undo()
    assert panel.status == "Nothing to undo."
    actions = [e["action"] for e in read_log(tmp_path, panel.stem)]
    assert actions[:2] == ["add note at 5.00 s — spike run", "move note from 5.00 s to 7.50 s"]
    assert actions[-1] == "undo add note at 5.00 s — spike run" and len(actions) == 12


def test_soz_labels_and_types_round_trip(tmp_path):
    rec = demo_like_recording()
    panel = AnnotationPanel.from_recording(rec, tmp_path)
    panel.set_soz_label("A1", True)
    panel.set_soz_label("A2", False)
    panel.set_soz_label("A3", True)
    panel.set_soz_label("A3", None)  # back to unlabelled
    panel.set_channel_type("A8", "ECG")
    panel.set_channel_type("A7", "not-a-type")
    assert "Invalid channel type 'not-a-type'" in panel.status
    panel.set_soz_label("ZZ", True)
    assert "'ZZ' is not a channel" in panel.status
    assert panel.soz_labels == {"A1": True, "A2": False} and panel.type_overrides == {"A8": "ecg"}
    _, channels = sidecar_paths(tmp_path, panel.stem)
    rows = channels.read_text().splitlines()
    assert rows[0] == "name\ttype\tstatus\tstatus_description\tsoz\ttype_source"
    assert rows[1] == "A1\tseeg\tgood\tn/a\t1\trecording"
    assert rows[2] == "A2\tseeg\tgood\tn/a\t0\trecording"
    assert rows[3] == "A3\tseeg\tgood\tn/a\tn/a\trecording"
    assert rows[8] == "A8\tecg\tgood\tn/a\tn/a\tclinician"
    again = AnnotationPanel.from_recording(rec, tmp_path)
    assert again.soz_labels == {"A1": True, "A2": False} and again.type_overrides == {"A8": "ecg"}
    again.soz_labels = {**again.soz_labels, "A4": True}  # the lead's ranking table sets the dict directly
    assert load_annotations(tmp_path, again.stem).soz_labels == {"A1": True, "A2": False, "A4": True}
    assert again.undo_actions == ["A4: SOZ"]
    again.set_channel_type("A8", None)
    assert load_annotations(tmp_path, again.stem).type_overrides == {}
    channels.write_text("name\tstatus\tstatus_description\tsoz\nA1\tgood\tn/a\tmaybe\n")
    with pytest.raises(AnnotationFileError, match="soz must be 1, 0 or n/a"):
        load_annotations(tmp_path, again.stem)


def test_panel_reports_unknown_bad_channels_and_malformed_files(tmp_path):
    rec = toy_recording("01", 0)
    events, channels = sidecar_paths(tmp_path, "sub-01_run-01")
    channels.write_text("name\tstatus\tstatus_description\nA1\tbad\tn/a\nQ7\tbad\tn/a\n")
    panel = AnnotationPanel.from_recording(rec, tmp_path)
    assert panel.bad_channels == ["A1"]
    assert "Q7" in panel.status
    events.write_text("this is not a table\n")
    broken = AnnotationPanel.from_recording(rec, tmp_path)
    assert str(events) in broken.status and "press Save" in broken.status
    broken.add_marker("onset", 1.0)
    assert events.read_text() == "this is not a table\n"  # autosave did not overwrite it
    assert broken.save() is not None  # an explicit save replaces it, and autosave resumes
    broken.add_marker("offset", 2.0)
    assert [m["kind"] for m in load_annotations(tmp_path, "sub-01_run-01").markers] == ["onset", "offset", "event"]


def test_set_recording_switches_without_writing(tmp_path):
    first, second = toy_recording("01", 0), toy_recording("02", 1, n_channels=4)
    panel = AnnotationPanel.from_recording(first, tmp_path)
    panel.add_marker("onset", 3.0)
    panel._bad.value = ["A8"]
    before = sorted(p.name for p in tmp_path.iterdir())
    panel.set_recording(second, tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == before  # seeding wrote nothing
    assert panel.stem == "sub-02_run-01" and panel.channels == ["A1", "A2", "A3", "A4"]
    assert panel.bad_channels == [] and panel._bad.options == ["A1", "A2", "A3", "A4"]
    assert [m["text"] for m in panel.markers] == ["sz onset"]
    panel.set_recording(first, tmp_path)
    assert [m["kind"] for m in panel.markers] == ["onset", "event"] and panel.bad_channels == ["A8"]


def test_invalid_marker_time_is_a_status_not_an_error(tmp_path):
    panel = AnnotationPanel(channels=["A1"], out_dir=str(tmp_path), stem="rec")
    panel.add_marker("onset", float("nan"))
    assert panel.markers == [] and "finite" in panel.status
    panel.move_selected(3.0)
    assert "Select a marker" in panel.status
    no_dir = AnnotationPanel(channels=["A1"])
    no_dir.add_marker("onset", 1.0)
    assert no_dir.save() is None and "output folder" in no_dir.status


# ------------------------------------------------------------------ merging with other sessions


def test_merge_rules():
    onset, note = make_marker(10.0, "onset", "sz"), make_marker(20.0, "note", "a")
    event = make_marker(3.0, "event", "x")
    base = AnnotationSet(markers=[onset, event], bad_channels=["A1"], soz_labels={"A1": True, "A2": True})
    mine = AnnotationSet(
        markers=[onset, note],
        bad_channels=["A1", "A2"],
        soz_labels={"A1": True, "A2": False, "A3": True},
        type_overrides={"A8": "ecg"},
    )
    theirs_note = make_marker(20.0, "note", "a", author="other")  # the same note made there: kept once
    theirs = AnnotationSet(
        markers=[event, theirs_note, make_marker(30.0, "offset")],
        bad_channels=["A1", "A5"],
        soz_labels={"A1": False, "A2": True, "A3": False},
        type_overrides={"A8": "ecg"},
    )
    merged, conflicts = merge_annotations(base, mine, theirs)
    # this session deleted the event: applied; the other deleted the onset this one has: kept, a conflict
    assert [(m["kind"], m["onset_s"]) for m in merged.markers] == [("onset", 10.0), ("note", 20.0), ("offset", 30.0)]
    assert sorted(merged.bad_channels) == ["A1", "A2", "A5"]
    # A1: only they changed → theirs; A2: only I changed → mine; A3: both, differently → the file's, a conflict
    assert merged.soz_labels == {"A1": False, "A2": False, "A3": False} and merged.type_overrides == {"A8": "ecg"}
    assert [(c.what, c.item, c.kept) for c in conflicts] == [
        ("marker", "onset at 10.00 s — sz", "mine"),
        ("soz", "A3", "theirs"),
    ]
    assert conflicts[1].message == "SOZ label of A3: yours SOZ, other session's not SOZ; kept not SOZ."
    keep_theirs = conflicts[0].resolve("theirs", merged)
    assert [m["kind"] for m in keep_theirs.apply(merged).markers] == ["note", "offset"]
    assert conflicts[1].resolve("mine", merged).apply(merged).soz_labels["A3"] is True
    assert conflicts[1].resolve("theirs", merged).empty


def test_two_panels_on_one_recording_merge_instead_of_overwriting(tmp_path):
    rec = demo_like_recording()
    first, second = AnnotationPanel.from_recording(rec, tmp_path), AnnotationPanel.from_recording(rec, tmp_path)
    assert first.author != second.author
    first._bad.value = ["A2"]
    second.add_marker("note", 20.0, "spread to A5")  # used to erase A2's bad mark
    on_disk = load_annotations(tmp_path, second.stem, rec.ch_names)
    assert on_disk.bad_channels == ["A2"] and [m["text"] for m in on_disk.notes] == ["spread to A5"]
    assert second.bad_channels == ["A2"] and "Merged from another session: mark A2 bad" in second.status
    first.refresh()
    assert first.annotations.same_as(on_disk) and "Merged from another session" in first.status
    first.refresh()
    assert first.status == "No changes from other sessions."
    second.undo()  # undoing my note leaves the other session's bad channel alone
    assert load_annotations(tmp_path, second.stem).bad_channels == ["A2"] and second.annotations.notes == []


def test_a_deletion_elsewhere_is_a_conflict_and_nothing_is_lost(tmp_path):
    rec = demo_like_recording()
    first, second = AnnotationPanel.from_recording(rec, tmp_path), AnnotationPanel.from_recording(rec, tmp_path)
    first.select(0)
    first.delete_selected()  # the onset
    second.add_marker("note", 20.0)  # still has the onset
    assert [m["kind"] for m in load_annotations(tmp_path, second.stem).markers] == ["onset", "note", "offset"]
    assert len(second.conflicts) == 1 and second._conflict_row.visible
    assert "1 conflict(s) with another session: 'onset at 10.00 s — sz onset' was deleted in another" in second.status
    second._keep_theirs.clicks += 1  # accept the deletion
    assert second.conflicts == [] and not second._conflict_row.visible
    assert [m["kind"] for m in load_annotations(tmp_path, second.stem).markers] == ["note", "offset"]
    second.undo()  # and change one's mind
    assert [m["kind"] for m in load_annotations(tmp_path, second.stem).markers] == ["onset", "note", "offset"]
    # labels both sessions changed differently: the file's value is kept, mine is offered
    first.refresh()
    first.set_soz_label("A1", True)
    second.set_soz_label("A1", False)
    assert load_annotations(tmp_path, second.stem).soz_labels == {"A1": True}
    assert second.soz_labels == {"A1": True} and "SOZ label of A1: yours not SOZ" in second.status
    second.resolve_conflict(0, "mine")
    assert load_annotations(tmp_path, second.stem).soz_labels == {"A1": False}
    log = "\n".join(e["action"] for e in read_log(tmp_path, second.stem))
    assert "conflict: 'onset at 10.00 s — sz onset' was deleted in another session" in log
    assert "conflict: SOZ label of A1" in log


_WORKER = r"""
import sys, time
from pathlib import Path
from sss_viewer.io.annotation_model import AnnotationSet, diff_annotations, make_marker
from sss_viewer.io.annotation_store import read_annotations, sync_annotations
out, stem, who, n, go = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), Path(sys.argv[5])
while not go.exists():
    time.sleep(0.005)
for k in range(n):
    disk, seen = read_annotations(out, stem)
    mine = AnnotationSet(
        markers=[*disk.markers, make_marker(float(k), "note", f"{who}-{k}", author=who)],
        bad_channels=[*disk.bad_channels, f"{who}{k}"], soz_labels={**disk.soz_labels, f"{who}{k}": k % 2 == 0},
    )
    edits = [diff_annotations(disk, mine, author=who)]
    sync_annotations(mine, out, stem, base=disk, seen=seen, author=who, edits=edits)
print("done", who)
"""


def _start_worker(out, who: str, n: int, go: Path) -> subprocess.Popen:
    args = [sys.executable, "-c", _WORKER, str(out), "rec", who, str(n), str(go)]
    return subprocess.Popen(args, stdout=subprocess.PIPE, text=True)


def test_separate_processes_editing_one_sidecar_lose_nothing(tmp_path):
    """Three processes read, edit and save the same sidecars at once; every edit of every one survives."""
    go, n = tmp_path / "go", 8
    workers = [_start_worker(tmp_path / "out", who, n, go) for who in ("a", "b", "c")]
    go.touch()
    for w in workers:
        out, _ = w.communicate(timeout=120)
        assert w.returncode == 0 and out.startswith("done")
    final = load_annotations(tmp_path / "out", "rec")
    assert sorted(m["text"] for m in final.notes) == sorted(f"{w}-{k}" for w in "abc" for k in range(n))
    assert sorted(final.bad_channels) == sorted(f"{w}{k}" for w in "abc" for k in range(n))
    assert len(final.soz_labels) == 3 * n
    assert {m["author"] for m in final.markers} == {"a", "b", "c"}
    edits = [e for e in read_log(tmp_path / "out", "rec") if not e["action"].startswith(("merge", "conflict"))]
    assert len(edits) == 3 * n


def test_another_process_marks_a_channel_bad_while_this_one_adds_a_marker(tmp_path):
    rec = demo_like_recording()
    here = AnnotationPanel.from_recording(rec, tmp_path, stem="rec")
    here._bad.value = ["A1"]  # the files exist and this session has read them
    script = (
        "import sys\nfrom sss_viewer.io.annotation_model import AnnotationSet, diff_annotations\n"
        "from sss_viewer.io.annotation_store import read_annotations, sync_annotations\n"
        "disk, seen = read_annotations(sys.argv[1], 'rec')\n"
        "mine = AnnotationSet(markers=disk.markers, bad_channels=[*disk.bad_channels, 'A4'])\n"
        "edits = [diff_annotations(disk, mine)]\n"
        "sync_annotations(mine, sys.argv[1], 'rec', base=disk, seen=seen, author='other', edits=edits)\n"
    )
    subprocess.run([sys.executable, "-c", script, str(tmp_path)], check=True, timeout=120)
    here.add_marker("note", 15.0, "here")
    on_disk = load_annotations(tmp_path, "rec")
    assert on_disk.bad_channels == ["A1", "A4"] and [m["text"] for m in on_disk.notes] == ["here"]
    assert here.bad_channels == ["A1", "A4"]


def test_a_crash_mid_write_leaves_the_previous_files_whole(tmp_path):
    rec = demo_like_recording()
    panel = AnnotationPanel.from_recording(rec, tmp_path)
    panel.add_marker("note", 5.0, "before the crash")
    events, channels = sidecar_paths(tmp_path, panel.stem)
    before = events.read_bytes(), channels.read_bytes()
    crash = (
        "import os, sys\nfrom sss_viewer.fileio import atomic_write\n"
        "def half(tmp):\n    with open(tmp, 'w') as fh:\n"
        "        fh.write('onset\\tduration\\n1.0'); fh.flush()\n    os._exit(9)\n"
        "atomic_write(sys.argv[1], half)\n"
    )
    for path in (events, channels):
        assert subprocess.run([sys.executable, "-c", crash, str(path)], timeout=60).returncode == 9
    assert (events.read_bytes(), channels.read_bytes()) == before
    assert [m["text"] for m in load_annotations(tmp_path, panel.stem).notes] == ["before the crash"]
    panel.add_marker("note", 6.0, "after")  # the leftover temporary files do not get in the way
    assert [m["text"] for m in load_annotations(tmp_path, panel.stem).notes] == ["before the crash", "after"]


def test_every_save_keeps_the_previous_version(tmp_path):
    rec = demo_like_recording()
    panel = AnnotationPanel.from_recording(rec, tmp_path)
    for k in range(MAX_BACKUPS + 3):
        panel.add_marker("note", float(k), f"n{k}")
    backups = sidecar_backups(tmp_path, panel.stem)
    assert len(backups["events"]) == len(backups["channels"]) == MAX_BACKUPS
    previous = load_annotations(tmp_path, panel.stem)
    assert [m["text"] for m in previous.notes][-1] == f"n{MAX_BACKUPS + 2}"
    restore_backup(tmp_path, panel.stem, 1)
    restored = load_annotations(tmp_path, panel.stem)
    assert [m["text"] for m in restored.notes][-1] == f"n{MAX_BACKUPS + 1}"
    restore_backup(tmp_path, panel.stem, 1)  # the restore itself kept the newer version: undo the restore
    assert load_annotations(tmp_path, panel.stem).same_as(previous)
    with pytest.raises(FileNotFoundError, match="No backup 99"):
        restore_backup(tmp_path, panel.stem, 99)
    # the log has every edit with before/after, and survives a line cut short by a crash
    with log_path(tmp_path, panel.stem).open("a") as fh:
        fh.write('{"time": "2025-01-01T00:0')
    entries = read_log(tmp_path, panel.stem)
    adds = [e for e in entries if e["action"].startswith("add")]
    assert len(adds) == MAX_BACKUPS + 3 and adds[0]["before"]["markers"] == []
    assert adds[0]["after"]["markers"][0]["text"] == "n0" and adds[0]["author"] == panel.author
    assert [e["action"] for e in entries[-2:]] == ["restore backup 1", "restore backup 1"]


def test_explicit_save_replaces_an_unreadable_file_but_keeps_it(tmp_path):
    rec = demo_like_recording()
    panel = AnnotationPanel.from_recording(rec, tmp_path)
    panel.add_marker("note", 5.0)
    events, _ = sidecar_paths(tmp_path, panel.stem)
    events.write_text("garbage\n")  # changed on disk and unreadable: autosave refuses
    panel.add_marker("note", 6.0)
    assert events.read_text() == "garbage\n" and "Press Save to replace it" in panel.status
    assert panel.save() is not None
    assert len(load_annotations(tmp_path, panel.stem).notes) == 2
    assert sidecar_backups(tmp_path, panel.stem)["events"][0].read_text() == "garbage\n"


def test_poll_merges_another_sessions_save_and_is_quiet_otherwise(tmp_path):
    import numpy as np

    from sss_viewer.io.recording import Recording

    rec = Recording(np.zeros((3, 500), dtype=np.float32), 250.0, ["A1", "A2", "A3"], ["seeg"] * 3)
    first = AnnotationPanel.from_recording(rec, tmp_path)
    second = AnnotationPanel.from_recording(rec, tmp_path)
    first.bad_channels = ["A2"]  # autosaved
    second.status = "last message"
    assert second.poll() is not None and second.bad_channels == ["A2"]
    second.status = "last message"
    assert second.poll() is None and second.status == "last message"  # nothing changed: nothing said

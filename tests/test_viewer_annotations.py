"""Annotations: sidecar round trip, names, malformed files, the source folder, unknown bad channels, the panel."""

import logging
from pathlib import Path

import pytest

from sss_viewer.recording import Event
from sss_viewer.viewer.annotations import (
    AnnotationFileError,
    AnnotationPanel,
    AnnotationSet,
    load_annotations,
    make_marker,
    recording_stem,
    save_annotations,
    seed_from_recording,
    sidecar_paths,
)

from .conftest import toy_recording


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
    assert rows[0] == "name\tstatus\tstatus_description" and len(rows) == 9
    assert "A3\tbad\t" in channels.read_text() and "A1\tgood\tn/a" in rows
    assert events.read_text().splitlines()[0] == "onset\tduration\ttrial_type\tdescription"


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
    assert sorted(p.name for p in (tmp_path / "new" / "folder").iterdir()) == sorted(p.name for p in saved)


def test_absent_sidecars_give_empty_annotations(tmp_path):
    ann = load_annotations(tmp_path, "nothing", ["A1"])
    assert ann.empty and ann.markers == [] and ann.bad_channels == []


@pytest.mark.parametrize(
    ("which", "text", "match"),
    [
        ("events", "onset\tduration\n1.0\t0\n", r"lacks column\(s\) \['trial_type', 'description'\]"),
        ("events", "onset\tduration\ttrial_type\tdescription\n1.0\t0\tonset\tx\nsoon\t0\tonset\tx\n", "line 3"),
        ("events", "onset\tduration\ttrial_type\tdescription\n1.0\t0\tspike\tx\n", "Invalid marker kind='spike'"),
        ("events", "onset\tduration\ttrial_type\tdescription\n-4\t0\tonset\tx\n", "onset_s=-4.0"),
        ("channels", "name\tstatus\tstatus_description\nA1\tmaybe\tn/a\n", "status must be 'good' or 'bad'"),
        ("channels", "", "Cannot read annotation file"),
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
    with caplog.at_level(logging.WARNING, logger="sss_viewer.viewer.annotations"):
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
    assert len(list(out.iterdir())) == 2


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
    panel._time.value = 4.0
    panel._move.clicks += 1
    assert [(m["kind"], m["onset_s"]) for m in panel.markers] == [("onset", 4.0), ("event", 10.0)]
    assert panel.selected_index == 0
    panel._text.value = "spread"
    panel._time.value = 20.0
    panel._add_note.clicks += 1
    assert panel.annotations.notes == [make_marker(20.0, "note", "spread")]
    panel.select(1)
    panel._delete.clicks += 1
    assert [m["kind"] for m in panel.markers] == ["onset", "note"]
    panel._bad.value = ["A2", "A5"]
    assert panel.bad_channels == ["A2", "A5"]
    again = AnnotationPanel.from_recording(rec, tmp_path)
    assert again.markers == panel.markers and again.bad_channels == ["A2", "A5"]
    assert again._bad.value == ["A2", "A5"] and "Loaded" in again.status


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

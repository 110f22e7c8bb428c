"""Seizure onset/offset markers in free-text annotations (``sss_viewer.io.seizure_events``)."""

from __future__ import annotations

import logging
import re
from pathlib import Path

import pandas as pd
import pytest

from sss_viewer.io.recording import Event
from sss_viewer.io.seizure_events import (
    SeizureMarkers,
    classify_marker,
    find_seizure_markers,
    match_marker,
    normalise_marker,
    read_seizure_markers,
)
from tests.fixtures.recordings import DS003029_META


def real_events_files() -> list[Path]:
    """Every ``*_events.tsv`` of ds003029 (all 106 runs are vendored in ``tests/data``)."""
    return sorted(DS003029_META.glob("sub-*/ses-*/ieeg/*_events.tsv"))


def run_name(path: Path) -> str:
    """``sub-pt17_ses-presurgery_task-ictal_acq-ecog_run-01_events.tsv`` -> ``sub-pt17 run-01``."""
    subject = path.name.split("_")[0]
    run = re.search(r"run-\d+", path.name).group(0)
    return f"{subject} {run}"


# ---------------------------------------------------------------------------- classify_marker

ONSETS = [
    # NIH
    "onset",
    "Onset",
    "definite onset",
    "DEFINITE ONSET",
    "EEG onset",
    "eeg onset",
    "ictal onset",
    "onset TT3",
    "onset TT1, PST1, MST",
    "AD1-3 onset",
    "sz onset",
    "sz onset #18",
    "sz #12 onset",
    "SEIZURE #17 ONSET",
    "Seizure #2",
    "sz",
    "start",
    "?onset ?TT1 then PST",
    "clinical onset",
    "clincial osnet",
    "??clinical onset??",
    "LIKELY CLINICAL ONSE",
    # JHH (annotations cut at 20 characters, reviewer prefix "Z")
    "SZ EVENT # (EEG SZ)",
    "SZ EVENT # (PB SZ)",
    "SZ EVENT #(PB SZ)",
    "Z ELECTROGRAPHIC ONS",
    "Z ELELCTROGRAPHIC ON",
    "Z CLINICAL ONSET",
    "z clinical onset",
    "* poss r onset",
    # UMF, UMMC
    "eeg sz start",
    "sz onset",
]

OFFSETS = [
    # NIH
    "offset",
    "Offset",
    "OFFSET",
    "offset with attenuat",
    "sz end",
    "seizure off",
    "definite off",
    "possible off",
    "end",
    # JHH
    "Z ELECTROGRAPHIC END",
    "Z SEIZURE OVER",
    "Z EVENT OVER",
    "OVER",
    "Z OVER",
    "Z STOPPING",
    "Z ENDING",
    "Z CLINICAL END",
    "z clinical signs ove",
    # UMF, UMMC
    "eeg sz end",
    "sz offset",
]

NEITHER = [
    # recording housekeeping
    "+0.000000",
    "+75.000000",
    "-3.5",
    "Segment: REC START Kelly EEG",
    "Segment: REC START  REC EEG",
    "A1+A2 OFF",
    "MARK ON",
    "Schedule",
    # earliest electrographic change: deliberately not the onset
    "1st change",
    "1ST CHANGE",
    "1st change?",
    "1ST CHANGE - INC SPI",
    "1st change attenuati",
    # contact lists and spread
    "AD1-4, ATT1,2",
    "G16",
    "SLT1-3",
    "PD",
    "LAT8-10, 13-15, 19",
    "Z SPREAD TO LAD, LFP",
    "TT,AST,MST,PST sprea",
    "spread G4,5,11,12,13",
    # partial or regional ends, ends of one pattern
    "OVER ON LEFT",
    "Z LEFT OVER",
    "Z RIGHT OVER",
    "Z RSF OVER",
    "off on left",
    "generalized off",
    "END FAST",
    "Z DEVOLUTION",
    "Z POST ICTAL DEPRESS",
    "postictal",
    # words that contain start/sz/seizure but mark nothing
    "Z START WITH LOW VOL",
    "Z FAST ACTIVITY STAR",
    "Z SPIKING STARTS BRO",
    "Z 2.5MIN SZ",
    "Z 2 MINUTE SEIZURE",
    "Z FAST RHY SZ RIH, R",
    "i'm having sz",
    "I think I'm going to",
    # behaviour notes
    "Z NO CLINICAL CHANGE",
    "Z NO CLEAR CLINICAL",
    "good clin example",
    "z eating breakfast",
    "laughs at TV",
    '"Yes, I\'m here"',
    "GTC",
    "?",
    "",
    "   ",
]


@pytest.mark.parametrize("text", ONSETS)
def test_onset_markers_of_every_centre(text):
    assert classify_marker(text) == "onset"


@pytest.mark.parametrize("text", OFFSETS)
def test_offset_markers_of_every_centre(text):
    assert classify_marker(text) == "offset"


@pytest.mark.parametrize("text", NEITHER)
def test_non_seizure_annotations_are_not_markers(text):
    assert classify_marker(text) is None


def test_non_text_is_not_a_marker():
    assert classify_marker(float("nan")) is None  # type: ignore[arg-type]


def test_normalise_drops_punctuation_and_reviewer_prefix():
    assert normalise_marker("SZ EVENT #(PB SZ)") == "sz event pb sz"
    assert normalise_marker("  Z ELECTROGRAPHIC   ONS ") == "electrographic ons"
    assert normalise_marker("z") == "z"


@pytest.mark.parametrize(
    ("text", "rank"),
    [
        ("onset", 0),
        ("Z ELECTROGRAPHIC ONS", 0),
        ("SZ EVENT # (PB SZ)", 1),
        ("?onset ?TT1 then PST", 2),
        ("clinical onset", 3),
        ("??clinical onset??", 5),
        ("possible off", 2),
        ("definite off", 0),
    ],
)
def test_ranks_order_explicit_before_event_hedged_clinical(text, rank):
    assert match_marker(text).rank == rank


# ---------------------------------------------------------------------------- find_seizure_markers


def events_frame(*rows: tuple[float, str]) -> pd.DataFrame:
    return pd.DataFrame({"onset": [r[0] for r in rows], "duration": 0.0, "trial_type": [r[1] for r in rows]})


def test_explicit_onset_beats_earlier_event_label_and_change():
    events = events_frame(
        (0.0, "Segment: REC START Kelly EEG"),
        (55.0, "1st change"),
        (59.8, "SZ EVENT # (EEG SZ)"),
        (83.0, "Z ELELCTROGRAPHIC ON"),
        (168.0, "z clinical onset"),
        (229.0, "OVER ON LEFT"),
        (230.0, "z clinical signs ove"),
        (250.0, "OVER"),
    )
    assert find_seizure_markers(events) == SeizureMarkers(83.0, 250.0, "Z ELELCTROGRAPHIC ON", "OVER")


def test_earliest_of_the_best_rank_wins():
    events = events_frame((90.5, "eeg onset"), (112.6, "eeg onset"), (206.1, "offset"), (300.0, "offset"))
    assert find_seizure_markers(events) == SeizureMarkers(90.5, 206.1, "eeg onset", "offset")


def test_hedged_and_clinical_onsets_stand_in_when_alone():
    assert find_seizure_markers(events_frame((10.0, "clinical onset"), (40.0, "?onset TT1"))).onset_s == 40.0
    assert find_seizure_markers(events_frame((10.0, "clinical onset"))).onset_s == 10.0


def test_accepts_recording_events():
    events = [Event(1.0, 0.0, "+1.000000"), Event(10.0, 0.0, "sz onset"), Event(40.0, 0.0, "sz offset")]
    assert find_seizure_markers(events) == SeizureMarkers(10.0, 40.0, "sz onset", "sz offset")


def test_no_markers_gives_all_none():
    assert find_seizure_markers(events_frame((0.0, "A1+A2 OFF"))) == SeizureMarkers(None, None, None, None)
    assert find_seizure_markers([]) == SeizureMarkers(None, None, None, None)


def test_offset_before_onset_is_ignored_with_a_warning(caplog):
    events = events_frame((5.0, "offset"), (20.0, "onset"))
    with caplog.at_level(logging.WARNING, logger="sss_viewer.io.seizure_events"):
        markers = find_seizure_markers(events, source="run-x")
    assert markers == SeizureMarkers(20.0, None, "onset", None)
    assert "run-x" in caplog.text and "before the onset" in caplog.text


def test_offset_without_onset_is_kept_with_a_warning(caplog):
    with caplog.at_level(logging.WARNING, logger="sss_viewer.io.seizure_events"):
        markers = find_seizure_markers(events_frame((30.0, "eeg sz end")), source="clip.tsv")
    assert markers == SeizureMarkers(None, 30.0, None, "eeg sz end")
    assert "clip.tsv" in caplog.text and "no onset" in caplog.text


def test_marker_without_time_is_skipped(caplog):
    events = events_frame((float("nan"), "onset"), (12.0, "sz onset"))
    with caplog.at_level(logging.WARNING, logger="sss_viewer.io.seizure_events"):
        assert find_seizure_markers(events).onset_s == 12.0
    assert "no valid onset time" in caplog.text


def test_missing_columns_and_wrong_items_are_errors():
    with pytest.raises(ValueError, match=r"my-run: events lack columns \['trial_type'\]"):
        find_seizure_markers(pd.DataFrame({"onset": [1.0], "description": ["onset"]}), source="my-run")
    with pytest.raises(TypeError, match="sequence of Event"):
        find_seizure_markers([(1.0, 0.0, "onset")])  # type: ignore[list-item]


# ---------------------------------------------------------------------------- read_seizure_markers


def test_read_seizure_markers_from_file(tmp_path):
    path = tmp_path / "sub-x_events.tsv"
    path.write_text(
        "onset\tduration\ttrial_type\tvalue\tsample\n"
        "0.0\t0.0\t+0.000000\t1\t0\n74.71\t0.0\t1st change\t2\t74710\n75.95\t0.0\tonset\t3\t75950\n"
        "161.82\t0.0\toffset\t4\t161820\n"
    )
    assert read_seizure_markers(path) == SeizureMarkers(75.95, 161.82, "onset", "offset")


def test_read_seizure_markers_errors_name_the_file(tmp_path):
    with pytest.raises(FileNotFoundError, match="nope_events.tsv"):
        read_seizure_markers(tmp_path / "nope_events.tsv")
    bad = tmp_path / "bad_events.tsv"
    bad.write_text("time\tdescription\n1.0\tonset\n")
    with pytest.raises(ValueError, match=r"bad_events.tsv lacks columns \['onset', 'trial_type'\]"):
        read_seizure_markers(bad)
    empty = tmp_path / "empty_events.tsv"
    empty.write_text("")
    with pytest.raises(ValueError, match="empty_events.tsv is empty"):
        read_seizure_markers(empty)


# ---------------------------------------------------------------------------- real ds003029 files

# Read by hand from the 106 files: the runs whose annotations hold no seizure offset (JHH runs that
# stop at "Z DEVOLUTION", "Z POST ICTAL DEPRESS", regional ends such as "Z LEFT OVER", or nothing).
RUNS_WITHOUT_OFFSET = {
    "sub-jh102 run-04",
    "sub-jh102 run-06",
    "sub-jh103 run-01",
    *(f"sub-jh104 run-0{k}" for k in range(1, 7)),
    "sub-jh105 run-01",
    "sub-jh105 run-03",
    "sub-jh105 run-05",
    "sub-jh106 run-01",
    "sub-jh108 run-01",
    "sub-jh108 run-02",
    "sub-jh108 run-03",
    "sub-pt17 run-01",
    "sub-pt17 run-03",
}


@pytest.fixture(scope="module")
def real_markers() -> dict[str, SeizureMarkers]:
    return {run_name(path): read_seizure_markers(path) for path in real_events_files()}


def test_real_onsets_found_in_104_of_106_runs(real_markers):
    assert len(real_markers) == 106
    without = sorted(run for run, m in real_markers.items() if m.onset_s is None)
    assert without == ["sub-pt17 run-01", "sub-pt17 run-03"]


def test_real_offsets_follow_their_onsets(real_markers):
    with_offset = {run for run, m in real_markers.items() if m.offset_s is not None}
    assert len(with_offset) == 88
    assert set(real_markers) - with_offset == RUNS_WITHOUT_OFFSET
    for run in with_offset:
        markers = real_markers[run]
        assert markers.onset_s is not None and markers.offset_s > markers.onset_s, run


@pytest.mark.parametrize(
    ("run", "expected"),
    [
        # NIH: the marked onset, not the "1st change" 1.2 s earlier
        ("sub-pt01 run-01", SeizureMarkers(75.95, 161.82, "onset", "offset")),
        # JHH: the reviewer's electrographic onset 23 s after the event label
        ("sub-jh102 run-05", SeizureMarkers(82.992, 249.964, "Z ELELCTROGRAPHIC ON", "OVER")),
        ("sub-jh101 run-01", SeizureMarkers(58.95, 79.875, "SZ EVENT # (EEG SZ)", "Z ELECTROGRAPHIC END")),
        # "possible off" at 356.6 s gives way to "definite off"
        ("sub-pt15 run-03", SeizureMarkers(115.218, 383.283, "Onset", "definite off")),
        ("sub-pt11 run-03", SeizureMarkers(67.62, 167.67, "start", "end")),
        ("sub-pt2 run-01", SeizureMarkers(105.9, 204.74, "?onset ?TT1 then PST", "offset")),
    ],
)
def test_real_runs_spot_checks(real_markers, run, expected):
    markers = real_markers[run]
    assert markers.onset_text == expected.onset_text and markers.offset_text == expected.offset_text
    assert markers.onset_s == pytest.approx(expected.onset_s, abs=1e-3)
    assert markers.offset_s == pytest.approx(expected.offset_s, abs=1e-3)


def test_real_housekeeping_texts_are_never_markers():
    housekeeping = re.compile(r"^\s*[+-]?\d+(\.\d*)?\s*$|REC START|A1\+A2 OFF|^MARK ON$|^Schedule$")
    contact_list = re.compile(r"^[A-Za-z]+\d+(-\d+)?(\s*,\s*[A-Za-z]*\d+(-\d+)?)*$")
    texts = set()
    for path in real_events_files():
        texts.update(pd.read_csv(path, sep="\t", dtype={"trial_type": str}, keep_default_na=False)["trial_type"])
    checked = [t for t in texts if housekeeping.search(t) or contact_list.match(t.strip())]
    assert len(checked) > 50
    assert [t for t in checked if classify_marker(t) is not None] == []
    onset_texts = {t for t in texts if classify_marker(t) == "onset"}
    assert all(re.search(r"(?i)onset|osnet|ons$|on$|onse$|^start$|sz|seizure", t) for t in onset_texts)

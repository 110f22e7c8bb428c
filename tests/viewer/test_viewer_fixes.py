"""Viewer fixes seen by testers (issue rows 3–9), each checked in Python without a browser.

The browser's own part (a click on the selected ranking row, the span a short recording narrows to in
the browser) is checked in ``tests/browser/test_browser_fixes.py``.
"""

from __future__ import annotations

import dataclasses
import logging
from types import SimpleNamespace

import mne
import numpy as np
import pandas as pd
import pybv
import pytest

from sss_viewer.engine.bundle import ModelBundle
from sss_viewer.engine.inference import RecordingScores, aggregate_channels
from sss_viewer.io.annotation_store import read_log
from sss_viewer.io.readers import read_recording
from sss_viewer.io.seizure_events import is_clock_stamp
from sss_viewer.viewer._annotations import AnnotationPanel
from sss_viewer.viewer._scoring import BackgroundScorer, channels_to_score
from sss_viewer.viewer.app import build_app
from sss_viewer.viewer.demo import DEMO_MODEL_DIR, load_demo
from sss_viewer.viewer.ranking import RankingTable, agreement, agreement_text, ranking_frame
from tests.fixtures.recordings import toy_recording

pytestmark = pytest.mark.filterwarnings(
    "ignore:The inplace keyword in DataFrame.reset_index is deprecated:DeprecationWarning"
)

TIMEOUT_S = 180


def _write_vhdr(folder, name, seconds, n_channels=6, sfreq=250.0):
    rec = toy_recording(name, 2, n_channels=n_channels, duration_s=seconds, sfreq=sfreq)
    pybv.write_brainvision(
        data=rec.data,
        sfreq=sfreq,
        ch_names=[f"LQ{i + 1}" for i in range(n_channels)],
        fname_base=name,
        folder_out=folder,
        fmt="binary_float32",
        unit="µV",
    )
    return folder / f"{name}.vhdr"


# ---------------------------------------------------------------------------------------- row 3


def test_a_type_correction_on_the_demo_rescores_it_and_survives_a_reload(tmp_path):
    app = build_app(data_root=tmp_path, out_dir=tmp_path / "out")
    top = str(app.ranking.table()["channel"].iloc[0])
    assert app.channel_types.types[top] in ("seeg", "ecog", "dbs")
    app.channel_types.request(top, "ecg")
    assert app.annotations.type_overrides == {top: "ecg"}
    assert app.types_corrected() and app.channel_types.types[top] == "ecg"
    app.channel_types._channel.value = top
    assert app.channel_types._current.object == "now: ecg (not scored)"
    assert app.scorer.wait(TIMEOUT_S) and app.scorer.error == ""
    ranking = app.ranking.table()
    assert len(ranking) and top not in set(ranking["channel"])  # rescored without it, not the precomputed ranking
    assert top not in set(app.ranking.csv_table()["channel"])
    again = build_app(data_root=tmp_path, out_dir=tmp_path / "out")  # a reload reads the correction back
    assert again.channel_types.types[top] == "ecg" and again.types_corrected()
    assert again.scorer.wait(TIMEOUT_S) and again.scorer.error == ""
    assert top not in set(again.ranking.table()["channel"])
    again.channel_types.request(top, "seeg")  # back to the file's type: the precomputed ranking stands again
    assert not again.types_corrected()
    assert str(again.ranking.table()["channel"].iloc[0]) == top


# ---------------------------------------------------------------------------------------- row 4


def _scores(n_channels: int, soz: set[str]) -> RecordingScores:
    rng = np.random.default_rng(0)
    rows = []
    for i in range(n_channels):
        name = f"C{i + 1}"
        level = 0.8 if name in soz else 0.3
        for w in range(4):
            p = float(np.clip(level + rng.normal(0, 0.1), 0, 1))
            rows.append((name, float(w), w + 1.0, p, p, p, p))
    windows = pd.DataFrame(rows, columns=["channel", "start_s", "end_s", "p_raw", "p_cal", "p0", "p1"])
    return RecordingScores(windows, aggregate_channels(windows, None), pd.DataFrame(columns=["channel", "reason"]), 4.0)


def test_unlabelled_channels_can_count_as_not_soz_and_the_agreement_says_so():
    soz = {f"C{i}" for i in range(1, 11)}
    table = RankingTable(scores=_scores(88, soz), threshold=0.5)
    table.clinician_labels = {c: True for c in soz}  # the 10 SOZ contacts, nothing else
    only_labelled = table.agreement()
    assert np.isnan(only_labelled["auc"]) and only_labelled["n_channels"] == 10
    assert "AUC n/a (one class)" in table._agreement.object
    table._unlabelled.value = True  # one action: "count unlabelled as not SOZ"
    counted = table.agreement()
    assert counted["n_channels"] == 88 and counted["n_unlabelled_as_not_soz"] == 78 and counted["auc"] > 0.9
    assert "78 unlabelled channels counted as not SOZ" in table._agreement.object
    assert "AUC n/a" not in table._agreement.object
    assert table.clinician_labels == {c: True for c in soz}  # nothing is written into the labels
    # a channel marked "not SOZ" is still counted once, and not among the assumed ones
    table.set_label("C88", "not SOZ")
    assert table.agreement()["n_unlabelled_as_not_soz"] == 77 and table.agreement()["n_channels"] == 88


def test_counting_unlabelled_needs_some_label_and_is_off_by_default():
    frame = ranking_frame(_scores(5, set()).channels, 0.5)
    assert agreement(frame, 0.5, unlabelled_as_not_soz=True) is None  # no label at all: nothing to compare with
    labelled = frame.assign(label=["SOZ", "", "", "", ""])
    assert agreement(labelled, 0.5)["n_channels"] == 1
    text = agreement_text(agreement(labelled, 0.5, unlabelled_as_not_soz=True))
    assert text.endswith("; 4 unlabelled channels counted as not SOZ")


def test_the_report_states_the_unlabelled_rule(tmp_path):
    app = build_app(data_root=tmp_path, out_dir=tmp_path / "out")
    soz = [c for c, s in zip(app.recording.ch_names, app.recording.soz) if s]
    app.ranking.unlabelled_as_not_soz = True
    assert "counted as not SOZ" not in app._agreement_text()  # the demo labels every channel: nothing assumed
    app.ranking.clinician_labels = {}
    app.recording = dataclasses.replace(app.recording, soz=None)
    app.ranking.scores = dataclasses.replace(
        app.scores, channels=app.scores.channels.drop(columns=[c for c in ("label",) if c in app.scores.channels])
    )
    app.ranking.clinician_labels = {c: True for c in soz}
    n_rest = len(app.ranking.table()) - len(soz)
    assert f"{n_rest} unlabelled channels counted as not SOZ" in app._agreement_text()


# ---------------------------------------------------------------------------------------- row 5


def test_the_log_records_the_recordings_own_label_as_before(tmp_path):
    recording = toy_recording("log", 0)  # A1, A2 SOZ; A3 … A8 not SOZ, from the file
    panel = AnnotationPanel.from_recording(recording, tmp_path)
    panel.set_soz_label("A3", True)
    panel.set_soz_label("A1", False)
    panel.undo()
    entries = read_log(tmp_path, panel.stem)
    assert entries[0]["before"]["soz"] == {"A3": False} and entries[0]["after"]["soz"] == {"A3": True}
    assert entries[0]["recorded"] == {"soz": {"A3": False}}  # the file's value, for the channel changed
    assert entries[1]["before"]["soz"] == {"A1": True} and entries[1]["after"]["soz"] == {"A1": False}
    assert entries[2]["before"]["soz"] == {"A1": False} and entries[2]["after"]["soz"] == {"A1": True}
    assert panel.soz_labels == {"A3": True}  # what is stored is unchanged: only the clinician's labels
    panel.set_channel_type("A4", "ecg")
    assert read_log(tmp_path, panel.stem)[-1]["before"]["type"] == {"A4": "seeg"}


# ---------------------------------------------------------------------------------------- row 6


def test_progress_counts_only_the_channels_that_are_scored():
    demo = load_demo()
    recording = demo.pick(np.arange(10))
    data = np.asarray(recording.data[:, : int(30 * recording.sfreq)])
    recording = dataclasses.replace(recording, ch_types=["seeg"] * 7 + ["ecg", "misc", "stim"], data=data)
    first = list(recording.ch_names[:2])
    assert channels_to_score(recording, exclude=first) == 5
    scorer = BackgroundScorer()
    statuses = []
    scorer.param.watch(lambda e: statuses.append(e.new), "status")
    scorer.start(ModelBundle.load(DEMO_MODEL_DIR), recording, device="cpu", first_channels=first)
    assert scorer.wait(TIMEOUT_S) and scorer.error == ""
    assert any("Scored the 2 visible channels" in s for s in statuses)
    assert any("scoring the other 5…" in s for s in statuses), statuses


# ---------------------------------------------------------------------------------------- row 7


def test_clicking_the_selected_row_again_brings_its_channel_back_into_view(tmp_path):
    app = build_app(data_root=tmp_path, out_dir=tmp_path / "out")
    table = app.ranking._tabulator.value
    channel = str(table["channel"].iloc[0])
    app.ranking._on_click(SimpleNamespace(row=0))
    page = app.traces.page
    assert app.traces.focus_channel == channel
    other = 0 if page != 0 else app.traces.n_pages - 1
    app.traces.page = other  # page away
    assert app.traces.page == other != page
    app.ranking._on_click(SimpleNamespace(row=0))  # the same, already selected row
    assert app.traces.page == page


# ---------------------------------------------------------------------------------------- row 8


def test_a_short_recording_keeps_the_users_span_and_opens_on_the_top_channels_page(tmp_path):
    app = build_app(data_root=tmp_path, out_dir=tmp_path / "out")
    short = _write_vhdr(tmp_path, "short", 6.0, n_channels=40)
    assert app.open(short)
    assert app.traces.span_s == 10.0
    app.traces.param.update(start_s=0.0, span_s=6.0)  # what the browser's range sends: the whole 6 s
    assert app.scorer.wait(TIMEOUT_S) and app.scorer.error == ""
    top = str(app.ranking.table()["channel"].iloc[0])
    assert app.traces.focus_channel == top  # not counted as the user moving away
    assert top in app.traces.page_contacts()
    assert app.open(_write_vhdr(tmp_path, "long", 30.0))
    assert app.traces.span_s == 10.0  # the next recording opens with the user's span
    app.traces.span_s = 20.0  # a span the user chooses is kept
    assert app.open(short) and app.traces.span_s == 20.0
    assert app.open(_write_vhdr(tmp_path, "long2", 30.0)) and app.traces.span_s == 20.0


def test_a_real_move_on_a_short_recording_still_counts(tmp_path):
    app = build_app(data_root=tmp_path, out_dir=tmp_path / "out")
    assert app.open(_write_vhdr(tmp_path, "short", 6.0, n_channels=40))
    app.traces.param.update(start_s=2.0, span_s=2.0)  # a zoom: another stretch of time
    assert app._navigated
    assert app.open(_write_vhdr(tmp_path, "long", 30.0)) and app.traces.span_s == 2.0


# ---------------------------------------------------------------------------------------- row 9


def test_move_starts_at_the_markers_own_time_not_the_views_edge(tmp_path):
    recording = toy_recording("move", 0)
    recording.seizure_onset_s = 10.0
    panel = AnnotationPanel.from_recording(recording, tmp_path)
    panel.current_time_s = 5.0  # the view's left edge, followed by the time field
    panel.select(0)
    panel.request_move()
    assert panel._move_time.value == 10.0
    panel.apply_move()  # one quick Apply moves nothing
    assert [m["onset_s"] for m in panel.markers if m["kind"] == "onset"] == [10.0]
    assert "nothing to move" in panel.status


@pytest.mark.parametrize(
    ("text", "stamp"),
    [
        ("+75.000000", True),
        ("-0.5", True),
        ("+0", True),
        ("EEG SZ START", False),
        ("75", False),
        ("+75 s marker", False),
        ("", False),
    ],
)
def test_clock_stamps_are_told_from_events(text, stamp):
    assert is_clock_stamp(text) is stamp


def test_nihon_kohden_clock_stamps_are_not_imported_as_events(tmp_path, caplog):
    sfreq = 256.0
    info = mne.create_info([f"G{i + 1}" for i in range(4)], sfreq, "seeg")
    raw = mne.io.RawArray(np.random.default_rng(0).standard_normal((4, int(20 * sfreq))) * 1e-5, info, verbose="error")
    raw.set_annotations(
        mne.Annotations([0.0, 5.0, 7.5, 10.0], [0.0] * 4, ["+0.000000", "+5.000000", "EEG SZ START", "+10.000000"])
    )
    path = tmp_path / "nk.edf"
    mne.export.export_raw(path, raw, fmt="edf", verbose="error")
    with caplog.at_level(logging.INFO, logger="sss_viewer.io.readers"):
        recording = read_recording(path)
    assert [(round(e.onset, 2), e.description) for e in recording.events] == [(7.5, "EEG SZ START")]
    assert any("3 annotation(s) that are only a time stamp" in r.getMessage() for r in caplog.records)

"""The assembled viewer in Python (no browser): open, refuse, score, annotate, export."""

import numpy as np
import pybv
import pytest

from sss_viewer.viewer.app import build_app
from tests.fixtures.recordings import toy_recording

pytestmark = pytest.mark.filterwarnings(
    "ignore:The inplace keyword in DataFrame.reset_index is deprecated:DeprecationWarning"
)


def _write(folder, name, seconds, sfreq=250.0, n_channels=6):
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


@pytest.fixture
def app(tmp_path):
    """The viewer ranking with the SSS model (what these tests are about; the default scorer is tested below)."""
    return build_app(data_root=tmp_path, out_dir=tmp_path / "out", scorer="sss")


def test_the_demo_opens_ranked_by_the_default_scorer_saying_how_it_was_chosen(tmp_path):
    from sss_viewer.biomarkers import DEFAULT_SCORER, DEFAULT_SCORER_EVIDENCE

    viewer = build_app(data_root=tmp_path, out_dir=tmp_path / "out")
    assert viewer.is_demo and viewer.scores is not None  # at once: no click, no wait
    assert viewer.scores.scorer == DEFAULT_SCORER == viewer.scorers.scorer
    assert viewer.scores.scorer_info["validation"] == DEFAULT_SCORER_EVIDENCE
    assert len(viewer.ranking.table()) == viewer.recording.n_channels - len(viewer.scores.excluded)
    again = build_app(data_root=tmp_path, out_dir=tmp_path / "out2")  # the second session reads the cached result
    assert again.scores.channels.equals(viewer.scores.channels)


def test_starts_on_the_demo_with_scores_and_threshold(app):
    assert app.is_demo and app.scores is not None
    assert app.ranking.threshold == pytest.approx(round(app.bundle.threshold, 2))  # on the 0.01 grid the table shows
    assert len(app.ranking.table()) == app.recording.n_channels - len(app.scores.excluded)
    assert "synthetic" in app.model_description.lower()


def test_broken_files_leave_the_view_intact(app, tmp_path):
    broken = tmp_path / "broken.edf"
    broken.write_bytes(b"not an edf" * 30)
    assert app.open(broken) is False
    assert "Could not open broken.edf" in app.message and app.is_demo


@pytest.mark.parametrize(
    ("name", "seconds", "sfreq", "reason"),
    [("short", 2.0, 250.0, "shorter than one window"), ("slow", 30.0, 200.0, "200 Hz")],
)
def test_unscorable_recordings_open_for_reading_with_scoring_disabled(app, tmp_path, name, seconds, sfreq, reason):
    assert app.open(_write(tmp_path, name, seconds, sfreq=sfreq)) is True
    assert not app.is_demo and app.recording.label and app.traces.recording is app.recording
    assert reason in app.scoring_disabled and app._disabled.visible and reason in app._disabled.object
    assert app.scores is None and app.ranking.table().empty and not app.scorer.running
    assert app.traces.state()["rows"]  # the traces are drawn
    app.traces.montage = "bipolar"
    app.annotations.add_marker("note", 1.0, "artefact")
    paths = app.export(tmp_path / "exports")
    assert set(paths) == {"png", "svg", "html", "report"}  # no ranking to write
    assert f"Not scored: {app.scoring_disabled}"[:60] in paths["report"].read_text()
    assert paths["png"].read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    # a scorable recording afterwards clears the reason
    assert app.open(_write(tmp_path, "long", 30.0)) and app.scoring_disabled == ""


def test_opening_scores_in_the_background_then_exports(app, tmp_path):
    assert app.open(_write(tmp_path, "patient", 30.0))
    app.scorer.wait(120)
    assert app.scorer.error == ""
    assert list(app.ranking.table()["channel"].str.startswith("LQ")) == [True] * 6
    assert not app.is_demo
    app.annotations.add_marker("onset", 5.0)
    app.annotations.bad_channels = ["LQ2"]
    assert "LQ2" not in set(app.ranking.table()["channel"])
    paths = app.export(tmp_path / "exports")
    assert set(paths) == {"png", "svg", "html", "csv", "report"}
    assert paths["png"].read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "LQ1" in paths["report"].read_text() and "LQ2" not in paths["csv"].read_text()
    with pytest.raises(FileExistsError):
        app.export(tmp_path / "exports")
    assert np.isfinite(app.scores.channels["score"]).all()


def test_demo_opens_at_the_seizure_onset_on_the_top_channels_page(app):
    onset = min(m["onset_s"] for m in app.annotations.markers if m["kind"] == "onset")
    t0, t1 = app.traces.window()
    assert t0 < onset < t1 and t0 == pytest.approx(max(0.0, onset - app.traces.span_s / 4))
    top = str(app.ranking.table()["channel"].iloc[0])
    assert top in app.traces.page_rows().labels or any(top in label for label in app.traces.page_rows().labels)


def test_a_recording_without_onset_opens_at_the_start_and_a_user_move_is_kept(app, tmp_path):
    path = _write(tmp_path, "plain", 40.0)  # toy_recording's "sz onset" event at 10 s is not written by pybv
    assert app.open(path)
    assert app.traces.start_s == 0.0
    app.traces.start_s = 20.0  # the clinician moves before the scores arrive
    app.scorer.wait(120)
    assert app.traces.start_s == 20.0 and app.traces.focus_channel == ""


def test_clinical_edf_in_the_viewer_scores_only_contacts_shown_by_their_names(app, tmp_path):
    from tests.clinical_files import write_clinical_edf

    edf = write_clinical_edf(tmp_path, duration_s=30.0)
    assert app.open(edf.path)
    app.scorer.wait(180)
    assert app.scorer.error == ""
    ranked = list(app.ranking.table()["channel"])
    assert sorted(ranked) == sorted(edf.scored)  # no EKG, DC, trigger, '$' duplicate, 'POL' or 'E' in the ranking
    assert not set(edf.dropped) & set(app.recording.ch_names)
    assert app.ranking.display_names["POL G1"] == "G1"
    assert set(app.ranking.table()["shaft"]) == {"G", "LA", "LH"}
    onset_view = app.traces.window()
    assert onset_view[0] < edf.onset_s < onset_view[1]  # opened at EEG SZ START


def test_clinician_corrects_a_type_and_labels_channels(app, tmp_path):
    from tests.clinical_files import write_clinical_edf

    edf = write_clinical_edf(tmp_path, duration_s=30.0)
    assert app.open(edf.path)
    app.scorer.wait(180)
    g1 = "POL G1"
    app.channel_types.request(g1, "ecg")  # e.g. a contact used as an ECG lead
    app.scorer.wait(180)
    assert g1 not in set(app.ranking.table()["channel"])
    assert app.annotations.type_overrides == {g1: "ecg"}
    app.ranking.set_label("POL LA1", "SOZ")
    app.ranking.set_label("POL G2", "not SOZ")
    assert app.annotations.soz_labels == {"POL LA1": True, "POL G2": False}
    assert app.ranking.agreement()["n_channels"] == 2
    assert "POL LA1" in app.timecourse.soz_channels
    # reopened in a new session: type, labels and the ranking follow
    again = build_app(data_root=tmp_path, out_dir=tmp_path / "out")
    assert again.open(edf.path)
    again.scorer.wait(180)
    assert g1 not in set(again.ranking.table()["channel"])
    assert again.ranking.clinician_labels == {"POL LA1": True, "POL G2": False}


def test_export_without_a_browser_writes_html_csv_and_report_and_says_why(app, tmp_path, monkeypatch):
    from sss_viewer.viewer import export

    monkeypatch.setattr(export, "find_browser", lambda: None)
    paths = app.export(tmp_path / "exports")
    assert set(paths) == {"html", "csv", "report"}  # PNG and SVG need a browser
    assert not list((tmp_path / "exports").glob("*.png")) and not list((tmp_path / "exports").glob("*.svg"))
    assert "Exported without PNG/SVG: PNG export needs a headless Chromium browser" in app.message
    report = paths["report"].read_text()
    assert "No figure: PNG export needs a headless Chromium browser" in report and "<td>" in report


def test_report_and_csv_follow_one_rounding_rule(app, tmp_path):
    import re

    paths = app.export(tmp_path / "exports")
    report = paths["report"].read_text()
    threshold = re.search(r"Threshold: ([\d.]+)", report).group(1)
    assert threshold == f"{app.ranking.threshold:.2f}" and f"at {threshold}" in report
    scores = re.findall(r"<td>(0\.\d+|1\.00)</td>", report)
    assert scores and all(len(s.split(".")[1]) == 2 for s in scores)
    csv = paths["csv"].read_text().splitlines()
    # the ten original columns first, then what scored the ranking, a marker's value and the artifact reason
    assert (
        csv[0]
        == "rank,channel,shaft,score,time_above,lower,upper,label,n_windows,above,scorer,value,artifact,scorer_note"
    )
    assert all(",sss,,," in line and "not validated on real recordings" in line for line in csv[1:])
    labels = {line.split(",")[7] for line in csv[1:]}
    assert labels <= {"1", "0", ""} and "1" in labels  # the demo's clinician labels as 1/0
    # Venn-Abers: every channel's interval [lower, upper] around its score, in the CSV and the report's table
    rows = [line.split(",") for line in csv[1:]]
    assert all(float(r[5]) <= float(r[3]) <= float(r[6]) for r in rows) and any(r[5] != r[6] for r in rows)
    intervals = re.findall(r"<td>\[([\d.]+), ([\d.]+)\]</td>", report)
    assert len(intervals) == min(len(rows), 30) and all(
        len(x.split(".")[1]) == 2 for pair in intervals for x in pair
    )  # top 30
    assert [tuple(map(float, pair)) for pair in intervals] == [(float(r[5]), float(r[6])) for r in rows[:30]]


def test_a_file_without_ieeg_channels_opens_for_reading(app, tmp_path):
    rec = toy_recording("scalp", 1, n_channels=4, duration_s=30.0)
    names = ["Fp1", "Cz", "EKG1", "TRIG"]  # a scalp + polygraphy file: nothing the model scores
    pybv.write_brainvision(
        data=rec.data,
        sfreq=rec.sfreq,
        ch_names=names,
        fname_base="scalp",
        folder_out=tmp_path,
        fmt="binary_float32",
        unit="µV",
    )
    assert app.open(tmp_path / "scalp.vhdr") is True
    assert "no good iEEG channel" in app.scoring_disabled and app.scores is None
    assert set(app.traces.contacts()) == {"Fp1", "Cz", "EKG1"}  # the trigger is not drawn


def test_the_page_on_screen_is_scored_first_and_its_heat_map_shown_before_the_ranking(app, tmp_path):
    """A 24-contact file, 4 rows a page: the first page's heat map arrives before the whole ranking."""
    app.traces.page_size = 4
    seen = []
    app.scorer.param.watch(
        lambda e: seen.append((e.new is not None and e.new.pending, app.traces.scores is e.new, app.scores)), "partial"
    )
    assert app.open(_write(tmp_path, "long", 30.0, n_channels=24))
    app.scorer.wait(120)
    assert app.scorer.error == ""
    partial = [s for s in seen if s[0]]
    assert partial == [(20, True, None)]  # the heat map had the page's 4 contacts; no ranking yet
    assert len(app.ranking.table()) == 24 and app.traces.scores is app.scores
    # the bundled model reads windows within their channel: its heat map is scored at a quarter stride
    assert app.scores.heat_windows is not None and app.traces.effective_bin_s() == pytest.approx(64 / 250)
    assert app.scores.channels["n_windows"].iloc[0] == len(app.scores.windows) / 24  # the ranking: stride 256


def test_model_dir_argument_is_the_model_used(tmp_path, monkeypatch):
    import shutil

    from sss_viewer.viewer.demo import DEMO_MODEL_DIR

    monkeypatch.delenv("SSS_VIEWER_MODEL", raising=False)
    chosen = tmp_path / "models" / "my-model"
    shutil.copytree(DEMO_MODEL_DIR, chosen)
    viewer = build_app(data_root=tmp_path, out_dir=tmp_path / "out", model_dir=chosen, load_demo=False)
    assert viewer.models.model_dir == chosen.absolute()
    assert viewer.models.models_root == str(chosen.parent.absolute())
    assert viewer.bundle is not None and viewer.models.error == ""

"""The BIDS picker's patient-level ranking: a subject's channels over all of their runs, in the viewer."""

import shutil

import numpy as np
import pandas as pd
import pytest

from sss_viewer.engine.inference import score_recording
from sss_viewer.evaluation.patient_ranking import rank_patient_channels
from sss_viewer.io.cohort import load_recording
from sss_viewer.viewer.app import build_app

pytestmark = pytest.mark.filterwarnings(
    "ignore:The inplace keyword in DataFrame.reset_index is deprecated:DeprecationWarning"
)


@pytest.fixture
def bids_app(ds003029_like_root, tmp_path):
    return build_app(data_root=ds003029_like_root, out_dir=tmp_path / "out")


def _subject_with_runs(app, at_least: int = 2) -> str:
    return next(s for s in app.browser.bids_subjects() if len(app.browser.bids_runs(s)) >= at_least)


def test_the_picker_ranks_a_subject_over_all_runs_as_the_engine_does(bids_app):
    app = bids_app
    subject = _subject_with_runs(app)
    app.browser._subject.value = subject
    runs = app.browser.bids_run_files()
    assert app.patient.button.visible and not app.patient.button.disabled
    assert app.patient.button.label == f"Rank {subject}'s channels over {len(runs)} runs"

    app.patient.button.clicks += 1  # what a click does
    assert app.patient.wait(timeout=600)
    ranking = app.patient.ranking
    assert app.patient.error == "" and app.patient.skipped == {} and ranking is not None
    assert set(ranking["subject"]) == {subject} and list(ranking["rank"]) == list(range(1, len(ranking) + 1))
    assert f"ranked by the mean of {len(runs)} run(s)" in app.patient.status

    tables = []  # the same ranking from the engine, run by run
    for name, path in runs.items():
        channels = score_recording(app.bundle, load_recording(path), progress=False).channels
        tables.append(channels.assign(subject=subject, run=name))
    expected = rank_patient_channels(pd.concat(tables, ignore_index=True))
    assert list(ranking["channel"]) == list(expected["channel"])
    np.testing.assert_allclose(ranking["score"], expected["score"], atol=1e-9)
    top = ranking.iloc[0]
    assert top["n_runs"] == len(runs) and top["run_scores"].count("=") == len(runs)
    shown = app.patient._table.value
    assert list(shown["channel"]) == list(ranking["channel"]) and "run_scores" in shown


def test_a_run_that_cannot_be_scored_is_listed_and_the_others_ranked(ds003029_like_root, tmp_path):
    root = tmp_path / "bids"
    shutil.copytree(ds003029_like_root, root)
    app = build_app(data_root=root, out_dir=tmp_path / "out")
    subject = _subject_with_runs(app)
    runs = app.browser.bids_run_files(subject)
    broken_name, broken = next(iter(runs.items()))
    broken.with_suffix(".eeg").write_bytes(b"\0" * 10)  # a truncated signal file
    app.rank_patient(subject)
    assert app.patient.wait(timeout=600)
    assert list(app.patient.skipped) == [broken_name]
    assert app.patient.ranking is not None and set(app.patient.ranking["n_runs"]) == {len(runs) - 1}
    assert "1 run(s) left out" in app.patient.status


def test_no_button_outside_a_bids_root(tmp_path):
    app = build_app(data_root=tmp_path, out_dir=tmp_path / "out")
    assert not app.patient.button.visible
    assert app.rank_patient("pt01") is None and "Choose a BIDS subject" in app.message

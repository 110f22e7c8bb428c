"""Training on the clinicians' viewer marks (issue rows 15-16): the sidecars the viewer saves are labels.

The sidecars are written by the viewer's own annotation panel (:class:`AnnotationPanel`: SOZ
column, bad channels, save), so the format read here is the real one. Marked SOZ = 1, marked not
SOZ = 0, unlabelled and bad channels left out, recordings without marks left out; the sidecars
are never changed by training. ``sss-viewer train DATA --viewer-labels OUT`` and the viewer's
:class:`TrainPanel` train on them (tiny PatchTST runs; the synthetic cohort is a BIDS tree).
"""

from __future__ import annotations

import json
import logging
import shutil
import time
from pathlib import Path

import numpy as np
import pytest

import sss_viewer
from sss_viewer.cli import EXIT_ERROR, EXIT_USAGE, main
from sss_viewer.io import annotation_store as annotations
from sss_viewer.io import viewer_labels
from sss_viewer.io.annotation_location import locate_sidecars
from sss_viewer.io.annotation_model import AnnotationSet
from sss_viewer.io.annotation_store import sync_annotations
from sss_viewer.io.cohort import load_data
from sss_viewer.io.recording import Recording
from sss_viewer.io.viewer_labels import (
    ViewerLabelsError,
    apply_viewer_labels,
    find_channels_sidecar,
    read_channel_marks,
)
from sss_viewer.viewer._annotations import AnnotationPanel
from tests.fixtures.cli import one_error_line, run

DEMO_MODEL = Path(sss_viewer.__file__).parent / "data" / "demo" / "model"
SYNTH = ["--patients", "4", "--duration-scale", "0.06", "--max-channels", "6"]
TINY = {
    "epochs": 1,
    "window_length": 128,
    "train_stride": 64,
    "batch_size": 64,
    "inference_stride": 32,
    "device": "cpu",
}
BOKEH_RESET_INDEX = pytest.mark.filterwarnings(  # Bokeh's (every Tabulator update), as in test_viewer_app.py
    "ignore:The inplace keyword in DataFrame.reset_index is deprecated:DeprecationWarning"
)
TINY_TRAIN = [
    "--epochs",
    "1",
    "--window-length",
    "128",
    "--train-stride",
    "64",
    "--batch-size",
    "64",
    "--device",
    "cpu",
]


@pytest.fixture(scope="module")
def cohort(tmp_path_factory) -> Path:
    """A 4-patient synthetic cohort (BIDS layout + cohort.tsv + labels.tsv)."""
    root = tmp_path_factory.mktemp("viewer-labels") / "cohort"
    assert main(["synth", "--out", str(root), *SYNTH, "-q"]) == 0
    return root


def label_in_viewer(recording: Recording, root: Path, out: Path, soz=(), not_soz=(), bad=()) -> Path:
    """Mark channels through the viewer's annotation panel and save, as a clinician does; the channels sidecar."""
    panel = AnnotationPanel(data_root=str(root))
    panel.set_recording(recording, str(out))
    for channel in soz:
        panel.set_soz_label(channel, True)
    for channel in not_soz:
        panel.set_soz_label(channel, False)
    if bad:
        panel.bad_channels = list(bad)
    assert panel.save() is not None, panel.status
    return panel.sidecar_dir and Path(panel.sidecar_dir) / f"{panel.stem}{annotations.CHANNELS_SUFFIX}"


@pytest.fixture(scope="module")
def marked(cohort, tmp_path_factory):
    """Viewer marks on three of the four patients (the fourth left unmarked): ``(viewer_out, plan)``.

    Each marked recording: its data's SOZ channels marked SOZ (all but the last when there are
    several), its other channels but two marked not SOZ, one of those also marked bad; the rest
    left unlabelled. Patient 2 also has a not-SOZ channel (per the data) marked SOZ, so the
    viewer's label visibly wins.
    """
    out = tmp_path_factory.mktemp("viewer-out")
    plan = {}
    recordings = load_data(cohort)
    for i, rec in enumerate(recordings[:3]):
        soz = [c for c, s in zip(rec.ch_names, rec.soz) if s]
        other = [c for c, s in zip(rec.ch_names, rec.soz) if not s]
        assert len(soz) >= 1 and len(other) >= 3, (rec.label, soz, other)
        marked_soz = (soz[:-1] if len(soz) > 1 else soz) + ([other[1]] if i == 1 else [])
        p = {
            "subject": rec.subject,
            "own_bads": list(rec.bads),
            "soz": marked_soz,
            "not_soz": other[2:],
            "bad": [other[2]],
            "unlabelled": [c for c in rec.ch_names if c not in marked_soz and c not in other[2:]],
        }
        label_in_viewer(rec, cohort, out, p["soz"], p["not_soz"], p["bad"])
        plan[rec.label] = p
    return out, plan


def sidecar_bytes(out: Path) -> dict:
    return {p: p.read_bytes() for p in sorted(out.rglob("*")) if p.is_file()}


# ----------------------------------------------------------------------------- the sidecar format


def test_the_reader_keys_sidecars_as_the_viewer_does(tmp_path):
    # the format's constants and digests are defined once (io.viewer_labels) and imported by the store; what can
    # still differ is the stem rule: the reader's from a path, the store's from a Recording
    for name in ("sub-01_task-ictal_ieeg.vhdr", "raw.fif.gz", "EEG.edf", "x.set"):
        rec = Recording(np.zeros((1, 10), np.float32), 100.0, ["A1"], ["seeg"], source=Path("/d") / name)
        assert viewer_labels.recording_stem(name) == annotations.recording_stem(rec)


def test_marks_saved_by_the_viewer_read_back_as_labels(cohort, marked):
    out, plan = marked
    recordings = load_data(cohort)
    own = {r.label: r.soz.copy() for r in recordings}
    before = sidecar_bytes(out)
    summary = apply_viewer_labels(recordings, cohort, out)
    assert sidecar_bytes(out) == before  # read only: the labels on disk are never changed
    assert summary["labelled"] == list(plan) and summary["unlabelled"] == [recordings[3].label]
    for rec in recordings[:3]:
        p = plan[rec.label]
        marks = read_channel_marks(rec.info["soz_source"])
        assert Path(rec.info["soz_source"]).parent == out / Path(rec.source).relative_to(cohort).parent
        assert set(marks.bad) == set(p["bad"])
        for channel, is_soz in zip(rec.ch_names, rec.soz):
            assert is_soz == (channel in p["soz"]), (rec.label, channel)
        assert set(rec.bads) == set(p["bad"]) | set(p["unlabelled"]) | set(
            p["own_bads"]
        )  # left out of training and evaluation
        assert set(rec.info["viewer_labels"]["unlabelled"]) == set(p["unlabelled"])
    relabelled = recordings[1]
    changed = [
        c
        for c, a, b in zip(relabelled.ch_names, own[relabelled.label], relabelled.soz)
        if a != b and c not in relabelled.bads
    ]
    assert changed == plan[relabelled.label]["soz"][-1:]  # the clinician's label wins over the data's
    assert recordings[3].soz is None and "labels_excluded" in recordings[3].info


def test_unlabelled_and_bad_channels_do_not_reach_training(cohort, marked):
    from sss_viewer.preprocessing.config import preprocess_preset
    from sss_viewer.windows.series_set import build_series_set

    out, plan = marked
    recordings = load_data(cohort)
    apply_viewer_labels(recordings, cohort, out)
    kept = [r for r in recordings if "labels_excluded" not in r.info]
    meta = build_series_set(kept, preprocess_preset("default"), min_length=128, progress=False).meta
    for index, rec in enumerate(kept):
        rows = meta[meta["recording"] == index]
        p = plan[rec.label]
        assert set(rows["channel"]) == set(p["soz"]) | set(p["not_soz"]) - set(p["bad"])
        assert set(rows.loc[rows["label"] == 1, "channel"]) == set(p["soz"])


def test_fallback_keeps_the_data_labels_of_unmarked_recordings(cohort, marked):
    out, _ = marked
    recordings = load_data(cohort)
    own = recordings[3].soz.copy()
    apply_viewer_labels(recordings, cohort, out, fallback=True)
    assert np.array_equal(recordings[3].soz, own) and "labels_excluded" not in recordings[3].info


def test_another_patients_same_named_file_or_a_changed_file_gets_no_labels(tmp_path, caplog):
    root, out = tmp_path / "data", tmp_path / "out"
    for patient, content in (("patA", b"A" * 500), ("patB", b"B" * 500)):
        (root / patient).mkdir(parents=True)
        (root / patient / "EEG.edf").write_bytes(content)
    rec_a = Recording(
        np.zeros((2, 10), np.float32), 100.0, ["X1", "X2"], ["seeg"] * 2, source=root / "patA" / "EEG.edf"
    )
    where = locate_sidecars(out, "EEG", rec_a, data_root=root)
    sync_annotations(
        AnnotationSet(soz_labels={"X1": True, "X2": False}),
        where.folder,
        where.stem,
        channel_names=rec_a.ch_names,
        identity=where.identity,
        force=True,
    )
    assert (
        find_channels_sidecar(root / "patA" / "EEG.edf", root, out) == out / "patA" / "EEG_desc-sssviewer_channels.tsv"
    )
    assert find_channels_sidecar(root / "patB" / "EEG.edf", root, out) is None
    # the viewer browsed the folder above: the manifest's path still names the file
    assert find_channels_sidecar(root / "patA" / "EEG.edf", root / "patA", out) is not None
    (root / "patA" / "EEG.edf").write_bytes(b"C" * 501)  # another file at the same path
    with caplog.at_level(logging.WARNING, logger="sss_viewer.io.viewer_labels"):
        assert find_channels_sidecar(root / "patA" / "EEG.edf", root, out) is None
    assert "made on another file at patA/EEG.edf" in caplog.text


def test_an_upload_keyed_by_content_is_found(tmp_path):
    outside, root, out = tmp_path / "upload", tmp_path / "data", tmp_path / "out"
    outside.mkdir()
    root.mkdir()
    (outside / "EEG.edf").write_bytes(b"U" * 300)
    rec = Recording(np.zeros((1, 10), np.float32), 100.0, ["X1"], ["seeg"], source=outside / "EEG.edf")
    where = locate_sidecars(out, "EEG", rec, data_root=root)
    sync_annotations(
        AnnotationSet(soz_labels={"X1": True}), where.folder, where.stem, identity=where.identity, force=True
    )
    found = find_channels_sidecar(outside / "EEG.edf", root, out)
    assert found is not None and "_src-" in found.name and read_channel_marks(found).soz == {"X1": True}


@pytest.mark.parametrize(
    "text, needle",
    [
        ("name\tsoz\nA1\t1\n", "lacks columns ['status']"),
        ("name\tstatus\tsoz\nA1\tgood\tyes\n", "soz must be 1, 0 or n/a"),
        ("name\tstatus\nA1\tbroken\n", "status must be 'good' or 'bad'"),
        ("name\tstatus\tsoz\nA1\tgood\t1\nA1\tgood\t0\n", "more than once"),
    ],
)
def test_a_malformed_sidecar_is_refused_by_name(tmp_path, text, needle):
    path = tmp_path / "r_desc-sssviewer_channels.tsv"
    path.write_text(text)
    with pytest.raises(ViewerLabelsError, match="r_desc-sssviewer_channels.tsv") as err:
        read_channel_marks(path)
    assert needle in str(err.value)


# ----------------------------------------------------------------------------- the command line


def test_train_on_viewer_labels_from_the_command_line(capsys, cohort, marked, tmp_path):
    out, plan = marked
    before = sidecar_bytes(out)
    code, stdout, err = run(
        capsys, "train", cohort, "--viewer-labels", out, "--out", tmp_path / "m", *TINY_TRAIN, "--no-cache", "-q"
    )
    assert code == 0, err
    assert sidecar_bytes(out) == before
    info = json.loads((tmp_path / "m" / "config.json").read_text())["info"]
    split = info["split"]
    assert sorted(split["train"] + split["val"] + split["test"]) == sorted(
        p["subject"] for p in plan.values()
    )  # 3 marked
    recorded = info["viewer_labels"]["recordings"]
    assert set(recorded) == set(plan)
    for label, p in plan.items():
        assert set(recorded[label]["unlabelled"]) == set(p["unlabelled"]) and recorded[label]["bad"] == p["bad"]


def test_viewer_labels_refusals(capsys, cohort, marked, tmp_path):
    out, _ = marked
    labels = tmp_path / "labels.tsv"
    labels.write_text("subject\tchannel\tsoz\nx\ty\t1\n")
    code, _, err = run(
        capsys, "train", cohort, "--viewer-labels", out, "--labels", labels, "--out", tmp_path / "m", "-q"
    )
    assert code == EXIT_USAGE and "pass one of them" in err
    empty = tmp_path / "empty"
    empty.mkdir()
    code, _, err = run(capsys, "train", cohort, "--viewer-labels", empty, "--out", tmp_path / "m", "-q")
    assert code == EXIT_ERROR
    one_error_line(err, str(empty), "marked SOZ or not SOZ")
    code, _, err = run(capsys, "train", cohort, "--viewer-labels", tmp_path / "nowhere", "--out", tmp_path / "m", "-q")
    assert code == EXIT_ERROR
    one_error_line(err, "Viewer output folder not found")


# ----------------------------------------------------------------------------- the viewer


@BOKEH_RESET_INDEX
def test_the_viewer_trains_a_pickable_model_and_compares_it(cohort, marked, tmp_path):
    from sss_viewer.engine.bundle import ModelBundle
    from sss_viewer.viewer._loader import ModelPicker
    from sss_viewer.viewer._train_panel import TrainPanel

    out, plan = marked
    models = tmp_path / "models"
    shutil.copytree(DEMO_MODEL, models / "demo")
    before = sidecar_bytes(out)
    panel = TrainPanel(
        data_root=str(cohort), viewer_out=str(out), models_root=str(models), preset="default", overrides=TINY
    )
    future = panel.train(ModelBundle.load(models / "demo", device="cpu"), name="centre")
    assert future.result(timeout=600) == models / "centre", panel.error
    assert not panel.running and panel.progress == 1.0 and panel.error == ""
    assert sidecar_bytes(out) == before
    figures = panel.figures.set_index("figure")
    assert list(figures.columns) == ["new model", "open model"]
    assert np.isfinite(figures.loc["pooled auc"]).all()
    test = json.loads((models / "centre" / "config.json").read_text())["info"]["split"]["test"]
    assert test and all(f"AUC {s}" in figures.index for s in test) and test[0] in panel.status
    picker = ModelPicker(models_root=str(models))
    assert "centre" in picker.param.model.objects
    picker.model = "centre"
    assert picker.error == "" and "Trained in the viewer" in picker.description()


@BOKEH_RESET_INDEX
def test_the_viewer_says_it_waits_while_another_session_trains(cohort, marked, tmp_path):
    """Training runs of one process take turns: a panel started while another thread trains says it waits."""
    import threading

    from sss_viewer.engine._fit import seeded_torch
    from sss_viewer.engine.training import another_training_run_in_progress
    from sss_viewer.viewer._train_panel import TrainPanel

    out, _ = marked
    panel = TrainPanel(data_root=str(cohort), viewer_out=str(out), models_root=str(tmp_path), overrides=TINY)
    holding, release = threading.Event(), threading.Event()
    statuses = []
    panel.param.watch(lambda event: statuses.append(event.new), "status")

    def other_session_training():
        with seeded_torch(0):
            holding.set()
            release.wait(60)

    other = threading.Thread(target=other_session_training)
    other.start()
    try:
        assert holding.wait(30) and another_training_run_in_progress()
        future = panel.train(None, name="second")
        deadline = time.monotonic() + 120
        while not any("Waiting for another training run" in s for s in statuses) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert any("Waiting for another training run" in s for s in statuses), statuses
        assert not future.done()  # it waits for the other run
    finally:
        release.set()
        other.join(30)
    assert future.result(timeout=600) == tmp_path / "second", panel.error
    assert not another_training_run_in_progress()


@BOKEH_RESET_INDEX
def test_the_viewer_says_why_it_cannot_train(cohort, tmp_path):
    from sss_viewer.viewer._train_panel import TrainPanel

    empty = tmp_path / "out"
    empty.mkdir()
    panel = TrainPanel(data_root=str(cohort), viewer_out=str(empty), models_root=str(tmp_path), overrides=TINY)
    assert panel.train(None).result(timeout=120) is None
    assert "marked SOZ or not SOZ" in panel.error and not panel.running and not panel.button.disabled


# ----------------------------------------------------------------------------- the README's preset


def test_the_quick_preset_is_the_minirocket_recipe_on_sparser_windows():
    from sss_viewer.engine.config import QUICK_STRIDE, TRAIN_PRESETS, train_preset
    from sss_viewer.viewer._train_panel import DEFAULT_PRESET

    quick, recipe = train_preset("quick"), train_preset("minirocket")
    assert "quick" in TRAIN_PRESETS and DEFAULT_PRESET == "quick"
    assert (quick.backbone, quick.model_params, quick.calibrator) == (
        recipe.backbone,
        recipe.model_params,
        recipe.calibrator,
    )
    assert quick.train_stride == quick.val_stride == QUICK_STRIDE == 8 * recipe.train_stride
    assert quick.inference_stride == recipe.inference_stride == 256  # scores (and heat maps) as fine as the recipe's
    assert (quick.batch_size, quick.epochs, quick.patience) == (512, 10, 5)
    assert train_preset("quick", epochs=3).epochs == 3 and train_preset("minirocket").train_stride == 256


@pytest.mark.filterwarnings("ignore:The inplace keyword in DataFrame.reset_index is deprecated:DeprecationWarning")
def test_the_app_offers_training_on_its_data_root_and_picks_the_new_model(tmp_path):
    """The viewer wires the panel: its data root and output folder, the open model for comparison, and the new
    model picked once trained (the training itself is tested above)."""
    from sss_viewer.viewer.app import build_app

    app = build_app(data_root=tmp_path, out_dir=tmp_path / "out", load_demo=False)
    assert app.trainer.data_root == str(tmp_path) and app.trainer.viewer_out == str(tmp_path / "out")
    model = tmp_path / "out" / "models" / "centre-test"
    import shutil

    from sss_viewer.viewer.demo_files import DEMO_MODEL_DIR

    shutil.copytree(DEMO_MODEL_DIR, model)
    app.trainer.model_dir = str(model)
    assert app.models.model == "centre-test" and app.models.bundle is not None

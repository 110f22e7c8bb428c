"""The viewer's demo: a deterministic lazily-read synthetic recording, the bundled model, cached scores."""

import hashlib
import json

import pandas as pd
import pytest

from sss_viewer.engine.bundle import ModelBundle
from sss_viewer.io._lazy import LazySignals
from sss_viewer.viewer import demo


def tree_digests(root):
    return {
        p.relative_to(root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


@pytest.fixture(scope="module")
def cache_dir(tmp_path_factory):
    return tmp_path_factory.mktemp("demo-cache")


def test_demo_recording_is_byte_identical_every_time(cache_dir, tmp_path):
    vhdr = demo.demo_recording(cache_dir)
    root = vhdr.parents[3]
    again = demo.demo_recording(tmp_path)
    assert vhdr.name == again.name == "sub-demo_ses-presurgery_task-ictal_acq-seeg_run-01_ieeg.vhdr"
    first, second = tree_digests(root), tree_digests(again.parents[3])
    assert first == second
    assert {"labels.tsv", "abnormal.tsv", "manifest.json", "dataset_description.json"} <= set(first)
    mtime = vhdr.stat().st_mtime_ns
    assert demo.demo_recording(cache_dir) == vhdr and vhdr.stat().st_mtime_ns == mtime  # reused, not rewritten


def test_an_interrupted_demo_folder_is_rewritten(tmp_path):
    vhdr = demo.demo_recording(tmp_path)
    eeg = vhdr.with_suffix(".eeg")
    eeg.write_bytes(eeg.read_bytes()[:100])  # a truncated data file
    again = demo.demo_recording(tmp_path)
    assert again == vhdr and again.with_suffix(".eeg").stat().st_size > 100


def test_demo_loads_lazily_with_soz_labels_and_seizure_times(cache_dir):
    recording = demo.load_demo(cache_dir)
    assert isinstance(recording.data, LazySignals)
    assert 32 <= recording.n_channels <= 48 and 120 <= recording.duration_s <= 240
    assert recording.subject == "demo" and recording.ch_types[0] == "seeg"
    assert recording.soz is not None and 2 <= recording.soz.sum() < recording.n_channels // 3
    assert recording.seizure_onset_s is not None and recording.seizure_offset_s > recording.seizure_onset_s
    labels = pd.read_csv(demo.demo_recording(cache_dir).parents[3] / "labels.tsv", sep="\t")
    assert labels.loc[labels["soz"] == 1, "channel"].tolist() == [
        c for c, s in zip(recording.ch_names, recording.soz) if s
    ]
    block = recording.get_data([0, 1], 1000, 1500)
    assert block.shape == (2, 500) and block.dtype.name == "float32"
    abnormal = demo.demo_abnormal(cache_dir)
    assert set(abnormal.loc[abnormal["kind"] == "seizure", "channel"]) <= set(labels.loc[labels["soz"] == 1, "channel"])


def test_bundled_model_loads_and_says_it_is_a_synthetic_demo():
    bundle = ModelBundle.load(demo.DEMO_MODEL_DIR)
    description = bundle.info["description"]
    assert description == demo.DEMO_DESCRIPTION and "Demo" in description and "synthetic" in description
    assert "not for clinical use" in description
    training = bundle.info["training_data"]
    assert training["seed"] != demo.DEMO_SEED and training["demo_recording"]["in_training_data"] is False
    assert bundle.info["split"]["mode"] == "patient"
    size = sum(p.stat().st_size for p in demo.DEMO_MODEL_DIR.iterdir())
    assert size <= 3_000_000
    assert json.loads((demo.DEMO_MODEL_DIR / "config.json").read_text())["info"]["description"] == description


def test_bundled_model_is_the_real_data_recipe():
    """Issue 6: what the clinician sees comes from the recipe that held up on real EEG (``--preset minirocket``)."""
    from sss_viewer.engine.config import train_preset

    recipe = train_preset("minirocket")
    bundle = ModelBundle.load(demo.DEMO_MODEL_DIR)
    model = bundle.model.get_config()
    assert bundle.info["training_preset"] == "minirocket"
    assert model["name"] == recipe.backbone == "minirocket"
    assert {k: model[k] for k in recipe.model_params} == recipe.model_params
    assert (bundle.window_length, bundle.inference_stride) == (recipe.window_length, recipe.inference_stride)
    assert bundle.calibrator.get_state()["name"] == recipe.calibrator


def test_bundled_scores_match_the_demo_recording(cache_dir):
    key = demo.demo_scores_key(cache_dir=cache_dir)
    bundled = demo.load_scores(demo.BUNDLED_SCORES_DIR, key)
    if bundled is None:
        pytest.skip("the bundled demo scores are keyed to other recording bytes (another numpy/scipy build)")
    scores = demo.demo_scores(cache_dir)
    pd.testing.assert_frame_equal(scores.channels, bundled.channels, check_exact=True)


def test_demo_scores_are_computed_once_then_read_from_disk(tmp_path, monkeypatch):
    monkeypatch.setattr(demo, "BUNDLED_SCORES_DIR", tmp_path / "none")
    from sss_viewer.engine import inference

    scored = []  # the real scorer, counted (the cold/warm times: benchmarks/viewer_warm_paths.py)
    real_score_recording = inference.score_recording
    monkeypatch.setattr(inference, "score_recording", lambda *a, **k: scored.append(1) or real_score_recording(*a, **k))
    cold = demo.demo_scores(tmp_path, device="cpu")
    assert len(scored) == 1
    warm = demo.demo_scores(tmp_path, device="cpu")
    assert len(scored) == 1  # read from disk, not scored again
    for name in ("windows", "channels", "excluded"):
        pd.testing.assert_frame_equal(getattr(cold, name), getattr(warm, name), check_exact=True)
    assert warm.duration_s == cold.duration_s
    recording = demo.load_demo(tmp_path)
    channels = cold.channels
    assert set(channels["channel"]) == set(recording.ch_names) and channels["rank"].tolist() == list(
        range(1, len(channels) + 1)
    )
    assert channels["label"].sum() == recording.soz.sum()
    values, edges = cold.heatmap(bin_s=1.0)
    assert values.shape == (recording.n_channels, len(edges) - 1)
    folders = list((tmp_path / "demo").glob("scores-*"))
    assert len(folders) == 1 and (folders[0] / "windows.csv.gz").is_file()

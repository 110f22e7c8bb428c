"""The on-disk cache of preprocessed channels: keys, reuse, equality with in-memory preprocessing."""

import hashlib
import inspect
import shutil
import threading

import numpy as np
import pybv
import pytest

from sss_viewer.io.readers import read_recording
from sss_viewer.preprocessing import cache as cache_module
from sss_viewer.preprocessing._device_series import DeviceSeriesBuilder
from sss_viewer.preprocessing.cache import SeriesCache, SeriesSource, source_files
from sss_viewer.preprocessing.config import preprocess_preset
from sss_viewer.windows.series_set import build_series_set
from tests.fixtures.threads import run_threads


def _write_vhdr(folder, seed=0, n_channels=4, seconds=30.0, sfreq=1000.0):
    folder.mkdir(parents=True, exist_ok=True)
    data = np.random.default_rng(seed).standard_normal((n_channels, int(seconds * sfreq))) * 50
    names = [f"LA{i + 1}" for i in range(n_channels)]
    pybv.write_brainvision(
        data=data,
        sfreq=sfreq,
        ch_names=names,
        fname_base="sub-01_run-01_ieeg",
        folder_out=folder,
        fmt="binary_float32",
        unit="µV",
    )
    return folder / "sub-01_run-01_ieeg.vhdr"


def _digests(folder):
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(folder.iterdir())}


def test_cached_series_equal_in_memory_preprocessing_and_are_reused(tmp_path, monkeypatch):
    vhdr = _write_vhdr(tmp_path / "data")
    before = _digests(vhdr.parent)
    recording = read_recording(vhdr)
    assert recording.is_lazy
    config = preprocess_preset("default")
    cache = SeriesCache(tmp_path / "cache")
    cached = build_series_set([recording], config, min_length=256, progress=False, cache=cache)
    in_memory = build_series_set([recording], config, min_length=256, progress=False)
    assert isinstance(cached.store.segments[0], np.memmap)
    for i in range(cached.store.n_series):
        np.testing.assert_array_equal(cached.store.series(i), in_memory.store.series(i))
    # a second build reads the entry: no preprocessing at all
    monkeypatch.setattr(cache_module, "preprocess_into", lambda *a, **k: pytest.fail("cache miss"))
    again = build_series_set([read_recording(vhdr)], config, min_length=256, progress=False, cache=cache)
    np.testing.assert_array_equal(again.store.series(0), cached.store.series(0))
    assert _digests(vhdr.parent) == before  # sources never modified


def test_key_follows_content_and_config_not_path(tmp_path):
    vhdr = _write_vhdr(tmp_path / "a")
    copy_dir = tmp_path / "b"
    shutil.copytree(vhdr.parent, copy_dir)
    cache = SeriesCache(tmp_path / "cache")
    picks = np.arange(4)
    default, paper = preprocess_preset("default"), preprocess_preset("paper")
    key = cache.key(read_recording(vhdr), picks, default)
    assert cache.key(read_recording(copy_dir / vhdr.name), picks, default) == key  # same bytes elsewhere
    assert cache.key(read_recording(vhdr), picks, paper) != key
    assert cache.key(read_recording(vhdr), picks[:2], default) != key
    other = _write_vhdr(tmp_path / "c", seed=1)
    assert cache.key(read_recording(other), picks, default) != key
    assert [p.suffix for p in source_files(vhdr)] == [".eeg", ".vhdr", ".vmrk"]


def test_lock_temporary_and_backup_files_beside_a_recording_are_not_its_sources(tmp_path):
    """A lock another program holds on a sidecar while reading it (or left behind when it was killed), an editor's
    swap or backup file, a copy in progress: none is part of the recording, so none changes its cache key."""
    vhdr = _write_vhdr(tmp_path / "data")
    cache = SeriesCache(tmp_path / "cache")
    picks, default = np.arange(4), preprocess_preset("default")
    key = cache.key(read_recording(vhdr), picks, default)
    passers_by = ["sub-01_run-01_ieeg.json.lock", "sub-01_run-01_ieeg.vhdr~", "sub-01_run-01_ieeg.vmrk.swp"]
    passers_by += ["sub-01_run-01_ieeg.eeg.part", "sub-01_run-01_ieeg.json.tmp"]
    for name in passers_by:
        (vhdr.parent / name).write_text("12345")
    assert [p.name for p in source_files(vhdr)] == [f"sub-01_run-01_ieeg{s}" for s in (".eeg", ".vhdr", ".vmrk")]
    assert cache.key(read_recording(vhdr), picks, default) == key
    (vhdr.parent / "sub-01_run-01_ieeg.json").write_text('{"PowerLineFrequency": 50}')  # a companion: a new key
    assert cache.key(read_recording(vhdr), picks, default) != key


def test_threads_building_one_entry_at_once_each_get_it_whole(tmp_path):
    """A Dask worker with several threads, handed two copies of one recording: both build the same key at once."""
    vhdr = _write_vhdr(tmp_path / "data", seconds=120.0)
    copy = tmp_path / "copy"
    shutil.copytree(vhdr.parent, copy)
    cache = SeriesCache(tmp_path / "cache")
    picks, default = np.arange(4), preprocess_preset("default")
    recordings = [read_recording(vhdr), read_recording(copy / vhdr.name)]
    expected = np.array(SeriesCache(tmp_path / "alone").load_or_build(recordings[0], picks, default).data)
    start, results = threading.Barrier(4), []

    def build(recording):
        start.wait(30)
        results.append(np.array(cache.load_or_build(recording, picks, default).data))

    run_threads(*[lambda r=recordings[i % 2]: build(r) for i in range(4)], timeout_s=120)
    assert len(results) == 4 and all(np.array_equal(r, expected) for r in results)
    assert sorted(p.name for p in (tmp_path / "cache").iterdir() if p.name.startswith(".")) == []
    again = SeriesCache(tmp_path / "cache")
    assert again._check_entry(tmp_path / "cache" / again.key(recordings[0], picks, default)) is None


def test_damaged_entry_is_reported_and_rebuilt(tmp_path, caplog):
    vhdr = _write_vhdr(tmp_path / "data")
    cache = SeriesCache(tmp_path / "cache")
    recording = read_recording(vhdr)
    entry = cache.load_or_build(recording, np.arange(4), preprocess_preset("default"))
    expected = np.array(entry.data)
    series = tmp_path / "cache" / entry.key / "series.f32"
    series.write_bytes(series.read_bytes()[:100])
    with caplog.at_level("WARNING", logger="sss_viewer.preprocessing.cache"):
        again = cache.load_or_build(recording, np.arange(4), preprocess_preset("default"))
    assert "is damaged" in caplog.text and "expected" in caplog.text
    np.testing.assert_array_equal(again.data, expected)


@pytest.mark.parametrize("source", [SeriesCache, DeviceSeriesBuilder])
def test_every_series_source_has_the_protocols_load_or_build(source):
    """build_series_set's two sources keep SeriesSource's signature: names, kinds, defaults, annotations."""
    expected = inspect.signature(SeriesSource.load_or_build)
    actual = inspect.signature(source.load_or_build)
    assert list(actual.parameters.values()) == list(expected.parameters.values())
    assert actual.return_annotation == expected.return_annotation


def test_the_cache_and_the_device_builder_are_series_sources(tmp_path):
    from sss_viewer.preprocessing import SeriesSource as exported

    assert exported is SeriesSource
    assert isinstance(SeriesCache(tmp_path / "cache"), SeriesSource)
    assert isinstance(DeviceSeriesBuilder("cpu"), SeriesSource)
    assert not isinstance(object(), SeriesSource)

"""GPU scoring reads the series it preprocessed on the device where they are (no copy back to the device).

The device here is the CPU (the same torch code; the CUDA path runs in ``test_torch_filters.py``'s GPU test):
what is checked is the layout — the device copy holds each channel where the store says it is — and that a
model reads the same windows and gives the same probabilities through it as through the host store.
"""

from pathlib import Path

import numpy as np
import pytest
import torch

from sss_viewer.engine.bundle import ModelBundle
from sss_viewer.engine.inference import _reading_store, predict_window_probs
from sss_viewer.models import build_window_model
from sss_viewer.models.minirocket import _on_device
from sss_viewer.preprocessing._device_series import DeviceSeriesBuilder
from sss_viewer.preprocessing.cache import SeriesCache
from sss_viewer.preprocessing.config import preprocess_preset
from sss_viewer.windows.series_set import build_series_set
from sss_viewer.windows.store import DeviceWindows, SeriesStore, WindowIndex
from tests.fixtures.recordings import brainvision_recording

DEMO_MODEL = Path(__file__).resolve().parents[2] / "sss_viewer" / "data" / "demo" / "model"
NAMES = ["LA1", "LA2", "LA3", "LB1", "LB2"]


def _recording(folder: Path, seconds: float = 30.0, sfreq: float = 1000.0):
    """A BrainVision file of 5 channels (the third flat: excluded), read lazily as the viewer reads it."""
    rng = np.random.default_rng(3)
    n = int(seconds * sfreq)
    data = rng.standard_normal((len(NAMES), n)).cumsum(axis=1) * 3 + 40 * np.sin(2 * np.pi * 7 * np.arange(n) / sfreq)
    data[2] = 5.0
    return brainvision_recording(folder, data, sfreq, NAMES)


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """The recording's series set built on the (CPU) device, the builder, and the store the model reads."""
    recording = _recording(tmp_path_factory.mktemp("rec"))
    builder = DeviceSeriesBuilder("cpu")
    series = build_series_set([recording], preprocess_preset("default"), min_length=1024, progress=False, cache=builder)
    return series, builder, _reading_store(series.store, builder)


def test_the_model_reads_the_builders_device_copy_in_the_stores_layout(built):
    series, builder, reading = built
    assert list(series.meta["channel"]) == ["LA1", "LA2", "LB1", "LB2"]  # LA3 (flat) left out
    assert isinstance(reading, DeviceWindows)
    assert reading.flat.data_ptr() == builder.series.data_ptr()  # adopted, not copied
    for i in range(series.store.n_series):
        on_device = reading.device_series(i)
        assert on_device.data_ptr() >= reading.flat.data_ptr()  # a view of the device copy
        np.testing.assert_array_equal(on_device.numpy(), series.store.series(i))
        assert _on_device(reading, i, series.store.series(i), reading.flat.device).data_ptr() == on_device.data_ptr()
    index = WindowIndex.build(series.store.lengths, 1024, 300, cover_end=True)
    starts = index.absolute_starts(series.store)
    np.testing.assert_array_equal(reading.windows(starts, 1024).numpy(), series.store.windows(starts, 1024))
    for a, b in zip(reading.locate(starts, 1024), series.store.locate(starts, 1024), strict=True):
        np.testing.assert_array_equal(a, b)


def test_a_store_without_a_device_copy_is_read_from_the_host(built, tmp_path):
    series, _, _ = built
    assert _reading_store(series.store, SeriesCache(tmp_path)) is series.store
    assert _reading_store(series.store, None) is series.store
    row = series.store.series(1)
    copied = _on_device(series.store, 1, row, torch.device("cpu"))
    np.testing.assert_array_equal(copied.numpy(), row)
    row_view = torch.from_numpy(np.asarray(row))
    assert copied.data_ptr() != row_view.data_ptr()  # a copy: the store's memmap views are read-only


@pytest.mark.parametrize("backbone", ["minirocket-demo", "patchtst"])
def test_probabilities_through_the_device_copy_equal_the_host_stores(built, backbone):
    series, _, reading = built
    if backbone == "patchtst":
        torch.manual_seed(0)
        model = build_window_model("patchtst", 1024, d_model=8, n_layers=1, n_heads=1)
    else:
        model = ModelBundle.load(DEMO_MODEL).model
    starts = WindowIndex.build(series.store.lengths, 1024, 256, cover_end=True).absolute_starts(series.store)
    host = predict_window_probs(model, series.store, starts, 1024, batch_size=16)
    on_device = predict_window_probs(model, reading, starts, 1024, batch_size=16)
    np.testing.assert_array_equal(on_device, host)


def test_an_adopted_copy_of_another_shape_or_type_is_refused():
    store = SeriesStore.from_series([np.arange(5.0), np.arange(3.0)])
    with pytest.raises(ValueError, match=r"float32 of shape \(8,\); got torch.float32 of shape \(7,\)"):
        DeviceWindows(store, "cpu", flat=torch.zeros(7))
    with pytest.raises(ValueError, match=r"got torch.float64 of shape \(8,\)"):
        DeviceWindows(store, "cpu", flat=torch.zeros(8, dtype=torch.float64))
    adopted = DeviceWindows(store, "cpu", flat=torch.arange(8, dtype=torch.float32))
    np.testing.assert_array_equal(adopted.device_series(1).numpy(), [5.0, 6.0, 7.0])
    assert adopted.device == torch.device("cpu")


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_cuda_scoring_reads_the_series_where_the_gpu_preprocessed_them(tmp_path):
    recording = _recording(tmp_path)
    builder = DeviceSeriesBuilder("cuda")
    series = build_series_set([recording], preprocess_preset("default"), min_length=1024, progress=False, cache=builder)
    reading = _reading_store(series.store, builder)
    assert isinstance(reading, DeviceWindows) and reading.device.type == "cuda"
    assert reading.flat.data_ptr() == builder.series.data_ptr()
    for i in range(series.store.n_series):
        np.testing.assert_array_equal(reading.device_series(i).cpu().numpy(), series.store.series(i))
    model = ModelBundle.load(DEMO_MODEL).model.to("cuda")
    starts = WindowIndex.build(series.store.lengths, 1024, 256, cover_end=True).absolute_starts(series.store)
    host = predict_window_probs(model, series.store, starts, 1024, device="cuda")
    on_device = predict_window_probs(model, reading, starts, 1024, device="cuda")
    np.testing.assert_array_equal(on_device, host)

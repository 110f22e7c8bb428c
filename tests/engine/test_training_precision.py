"""Training's execution options on the CPU: bf16 autocast, windows gathered on the device, their config round trip.

The CUDA path (bf16 by default, ``torch.compile``, device-resident windows) is measured by
``benchmarks/gpu_training.py``; here the same code runs on the CPU, forced, so CI checks its logic.
"""

import json

import numpy as np
import pytest
import torch

from sss_viewer.engine._execution import COMPILE_MIN_WINDOWS, Execution, resolve_execution
from sss_viewer.engine.config import TrainConfig, train_preset
from sss_viewer.engine.training import train
from sss_viewer.windows.store import DeviceWindows, SeriesStore

TINY = dict(
    window_length=128,
    train_stride=64,
    val_stride=64,
    batch_size=64,
    epochs=1,
    windows_per_epoch=512,
    model_params={"d_model": 16, "d_ff": 32, "n_heads": 2, "n_layers": 1},
    device="cpu",
)


@pytest.fixture(scope="module")
def host_bundle(toy_cohort):
    """Today's path: fp32, host gather (the CPU defaults)."""
    return train(toy_cohort[:4], train_preset("default", **TINY), progress=False)


def test_device_windows_are_the_host_windows(tmp_path):
    rng = np.random.default_rng(0)
    mapped = np.memmap(tmp_path / "seg.f32", dtype=np.float32, mode="w+", shape=(700,))
    mapped[:] = rng.standard_normal(700)
    mapped.flush()
    on_disk = SeriesStore([np.memmap(tmp_path / "seg.f32", dtype=np.float32, mode="r")], [0, 300], [300, 400])
    store = SeriesStore.concatenate([SeriesStore.from_series([rng.standard_normal(500)] * 2), on_disk])
    starts = np.concatenate([rng.integers(0, 500 - 64, 20), rng.integers(1000, 1300 - 64, 20), [1700 - 64, 0]])
    on_device = DeviceWindows(store, "cpu", chunk=97)  # chunks that straddle the segments' copies
    gathered = on_device.windows(torch.from_numpy(starts), 64)
    assert gathered.dtype == torch.float32 and gathered.shape == (len(starts), 64)
    np.testing.assert_array_equal(gathered.numpy(), store.windows(starts, 64))
    assert DeviceWindows.fits(store, "cpu")
    with pytest.raises(ValueError, match="length=2000: longer than the store's 1700 samples"):
        on_device.windows(starts, 2000)


def test_device_gather_trains_exactly_like_the_host_gather(toy_cohort, host_bundle):
    forced = train(toy_cohort[:4], train_preset("default", device_windows=True, **TINY), progress=False)
    assert forced.info["execution"] == {"precision": "fp32", "compile": False, "device_windows": True}
    assert host_bundle.info["execution"] == {"precision": "fp32", "compile": False, "device_windows": False}
    for key in ("train_loss", "val_auc"):
        assert [h[key] for h in forced.info["history"]] == [h[key] for h in host_bundle.info["history"]]
    host_state, forced_state = host_bundle.model.state_dict(), forced.model.state_dict()
    assert all(torch.equal(host_state[k], forced_state[k]) for k in host_state)  # same windows, same batches


def test_bf16_autocast_trains_fp32_weights_close_to_fp32(toy_cohort, host_bundle):
    bf16 = train(toy_cohort[:4], train_preset("default", precision="bf16", device_windows=True, **TINY), progress=False)
    assert bf16.info["execution"]["precision"] == "bf16"
    assert all(p.dtype == torch.float32 for p in bf16.model.parameters())  # checkpoints stay fp32
    loss_bf16, loss_fp32 = bf16.info["history"][0]["train_loss"], host_bundle.info["history"][0]["train_loss"]
    assert loss_bf16 != loss_fp32  # autocast did run in bf16 ...
    assert abs(loss_bf16 - loss_fp32) < 0.02  # ... on the same batches
    assert np.isfinite(bf16.info["val_metrics"]["auc"])


def test_cpu_defaults_are_todays_path():
    store = SeriesStore.from_series([np.zeros(2048, np.float32)])
    config = TrainConfig()
    assert (config.precision, config.compile, config.device_windows) == ("auto", "auto", "auto")
    assert resolve_execution(config, torch.device("cpu"), store, windows_path=True) == Execution()
    assert Execution() == Execution(precision="fp32", compile=False, device_windows=False)
    assert not {"precision", "compile", "device_windows"} & set(config.to_dict())  # older records compare equal


def test_options_that_do_not_apply_are_resolved_off():
    store = SeriesStore.from_series([np.zeros(2048, np.float32)])
    config = TrainConfig(compile=True, device_windows=True)
    assert resolve_execution(config, torch.device("cpu"), store, windows_path=False) == Execution()
    assert resolve_execution(config, torch.device("cpu"), store, windows_path=True) == Execution(
        compile=True, device_windows=True
    )


def test_auto_compiles_on_cuda_only_runs_long_enough_for_the_warm_up_to_pay():
    """Resolved for a CUDA device without one (no CUDA call on this path: precision and device windows are set)."""
    store = SeriesStore.from_series([np.zeros(2048, np.float32)])
    cuda = torch.device("cuda")
    config = TrainConfig(precision="fp32", device_windows=False)
    short, long_ = COMPILE_MIN_WINDOWS - 1, COMPILE_MIN_WINDOWS
    assert not resolve_execution(config, cuda, store, windows_path=True, planned_windows=short).compile
    assert resolve_execution(config, cuda, store, windows_path=True, planned_windows=long_).compile
    assert resolve_execution(config, cuda, store, windows_path=True).compile  # length unknown: compiled
    asked = TrainConfig(precision="fp32", device_windows=False, compile=True)
    assert resolve_execution(asked, cuda, store, windows_path=True, planned_windows=10).compile  # asked for: kept
    assert (
        resolve_execution(config, torch.device("cpu"), store, windows_path=True, planned_windows=long_) == Execution()
    )


def test_a_compile_mode_compiles_in_that_mode_and_is_recorded():
    store = SeriesStore.from_series([np.zeros(2048, np.float32)])
    config = TrainConfig(compile="reduce-overhead")
    execution = resolve_execution(config, torch.device("cpu"), store, windows_path=True, planned_windows=10)
    assert (execution.compile, execution.compile_mode) == (True, "reduce-overhead")  # asked for: on any device
    assert execution.to_dict()["compile_mode"] == "reduce-overhead"
    assert (
        "compile_mode" not in resolve_execution(TrainConfig(compile=True), torch.device("cpu"), store, True).to_dict()
    )
    assert TrainConfig.from_dict(json.loads(json.dumps(config.to_dict()))).compile == "reduce-overhead"
    assert not resolve_execution(config, torch.device("cpu"), store, windows_path=False).compile  # frozen features
    with pytest.raises(ValueError, match=r"Invalid compile='fast'.*'reduce-overhead'"):
        TrainConfig(compile="fast")
    with pytest.raises(ValueError, match=r"Invalid device_windows='reduce-overhead'"):
        TrainConfig(device_windows="reduce-overhead")


def test_config_round_trip_and_old_records():
    config = train_preset("paper", precision="bf16", compile=False, device_windows=True)
    record = json.loads(json.dumps(config.to_dict()))
    assert (record["precision"], record["compile"], record["device_windows"]) == ("bf16", False, True)
    assert TrainConfig.from_dict(record) == config
    old = json.loads(json.dumps(train_preset("paper").to_dict()))  # written before the options existed
    loaded = TrainConfig.from_dict(old)
    assert (loaded.precision, loaded.compile, loaded.device_windows) == ("auto", "auto", "auto")
    assert loaded == train_preset("paper")


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"precision": "fp16"}, r"Invalid precision='fp16': expected one of 'auto', 'fp32', 'bf16'"),
        ({"compile": 1}, r"Invalid compile=1: expected one of 'auto', True, False"),
        ({"device_windows": "yes"}, r"Invalid device_windows='yes': expected one of 'auto', True, False"),
    ],
)
def test_bad_execution_options_are_refused(params, message):
    with pytest.raises(ValueError, match=message):
        TrainConfig(**params)
    with pytest.raises(ValueError, match=message):
        TrainConfig.from_dict(params)


def test_unknown_keys_are_refused():
    with pytest.raises(ValueError, match=r"Unknown training parameters \['amp'\]"):
        TrainConfig.from_dict({"amp": True})


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_cuda_gathers_the_host_windows_and_defaults_to_bf16_on_device(toy_cohort):
    store = SeriesStore.from_series([np.arange(3000, dtype=np.float32), -np.arange(500, dtype=np.float32)])
    assert DeviceWindows.fits(store, "cuda")
    starts = np.array([0, 17, 2872, 3000, 3372])
    gathered = DeviceWindows(store, "cuda").windows(starts, 128)
    assert gathered.device.type == "cuda"
    np.testing.assert_array_equal(gathered.cpu().numpy(), store.windows(starts, 128))
    config = train_preset("default", **{**TINY, "device": "cuda"}, compile=False)  # compiling is the benchmark's
    bundle = train(toy_cohort[:4], config, progress=False)
    assert bundle.info["execution"] == {"precision": "bf16", "compile": False, "device_windows": True}
    assert all(p.dtype == torch.float32 for p in bundle.model.parameters())
    assert np.isfinite(bundle.info["history"][0]["train_loss"]) and np.isfinite(bundle.info["val_metrics"]["auc"])

"""The artifact check computed on a torch device (``preprocessing.artifacts_torch``) gives the CPU check's report.

Run here on CPU tensors (the same torch code runs on a GPU, where scoring uses it); each recording carries
the artifacts of ``test_artifacts.py``: a 25× square-wave contact, a flat contact, a contact stuck at one
value for its second half, mains pickup, a clipped segment, missing samples and an electrode pop.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import torch

from sss_viewer.preprocessing._artifacts_torch import DeviceArtifactCheck
from sss_viewer.preprocessing._device_series import DeviceSeriesBuilder
from sss_viewer.preprocessing.artifacts import detect_recording_artifacts
from sss_viewer.preprocessing.config import preprocess_preset
from sss_viewer.windows.series_set import build_series_set
from tests.preprocessing.test_artifacts import SFREQ, as_recording, clinical_like, square_wave_contact


def with_every_artifact(seed: int) -> np.ndarray:
    """The clean recording with one of each artifact on its own contact, shape (20, 60 000) µV."""
    data, amplitude = square_wave_contact(seed=seed, channel=8)
    rng = np.random.default_rng(seed)
    t = np.arange(data.shape[1]) / SFREQ
    data[4] = (rng.standard_normal(data.shape[1]) * 0.5).astype(np.float32)  # flat: the amplifier's noise
    data[6, 24_000:] = data[6, 24_000]  # stuck from 24 s on
    data[10] += (60 * np.sin(2 * np.pi * 60 * t)).astype(np.float32)  # mains pickup
    clipped = np.clip(data[12], -150, 150)
    data[12, 10_000:20_000] = clipped[10_000:20_000]  # clipped at a rail for 10 s
    data[14, 30_000:30_500] = np.nan  # missing samples
    data[16, 40_000:] += 4000.0  # an electrode pop: one step, a new level
    return data


def assert_same_report(device_report, cpu_report) -> None:
    for table in ("channels", "segments"):
        pd.testing.assert_frame_equal(
            getattr(device_report, table).reset_index(drop=True), getattr(cpu_report, table).reset_index(drop=True)
        )
    got, want = device_report.measures, cpu_report.measures
    assert list(got["channel"]) == list(want["channel"])
    for column in ("amplitude_ratio", "line_ratio", "flagged_fraction"):
        np.testing.assert_allclose(got[column], want[column], rtol=1e-5, err_msg=column)


@pytest.mark.parametrize("seed", [0, 1])
def test_device_statistics_give_the_cpu_report(seed):
    recording = as_recording(with_every_artifact(seed))
    cpu = detect_recording_artifacts(recording)
    flagged = set(cpu.channels["channel"]) | set(cpu.segments["channel"])
    assert len(flagged) >= 5, "the planted artifacts must be flagged for the comparison to mean something"
    check = DeviceArtifactCheck(recording)
    x = torch.from_numpy(recording.get_data())
    names = list(recording.ch_names)
    order = np.random.default_rng(seed).permutation(len(names))  # blocks in any order and size
    for part in np.array_split(order, 3):
        check.add(x[torch.from_numpy(part)], [names[i] for i in part])
    assert_same_report(check.report(), cpu)


def test_the_report_waits_for_every_checked_channel():
    recording = as_recording(clinical_like(0))
    check = DeviceArtifactCheck(recording)
    x = torch.from_numpy(recording.get_data())
    check.add(x[:-1], list(recording.ch_names[:-1]))
    assert check.report() is None  # the caller runs the CPU check
    check.add(x[-1:], list(recording.ch_names[-1:]))
    assert_same_report(check.report(), detect_recording_artifacts(recording))


def test_the_device_reader_feeds_the_check_as_scoring_reads(tmp_path):
    """The check rides on ``DeviceSeriesBuilder``'s reads (scoring on a GPU): same report, no second read."""
    recording = as_recording(with_every_artifact(2), line_freq=None)
    check = DeviceArtifactCheck(recording)
    builder = DeviceSeriesBuilder("cpu", artifact_check=check)
    build_series_set([recording], preprocess_preset("default"), min_length=256, progress=False, cache=builder)
    assert_same_report(check.report(), detect_recording_artifacts(recording))

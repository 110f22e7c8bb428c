"""Round-trip fuzzing: what the readers return is what the writers wrote (issue 30, the fuzz goal).

``test_fuzz_readers.py`` checks that mutated headers end in a valid recording or a named error;
this file checks *what* is read. Hypothesis draws a recording — channel count, contact names as
clinics write them, a sampling rate among those of real systems (non-integer ones included), a
duration, per-channel amplitudes over four decades, seizure markers — writes it with a real writer
(pybv for BrainVision, MNE's EDF export, MNE's FIF), reads it back with
:func:`sss_viewer.read_recording`, and requires the same channels in the same order, the same rate,
the same number of samples, the samples within the format's resolution, and the markers at their
times. Bounded: 25 examples per format, no deadline.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import mne
import numpy as np
import pybv
import pytest

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, given, reject, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from sss_viewer import read_recording  # noqa: E402

ROUNDTRIP = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow], derandomize=True)

_SHAFTS = ["LA", "RH", "G", "AD", "PD", "LPT", "A'", "B'"]
_RATES = [200.0, 250.0, 256.0, 500.0, 512.0, 999.412, 1000.0, 1024.0, 2000.0]


@st.composite
def recordings(draw, max_rate: float = 2000.0):
    """``(names, sfreq, data µV (n_channels, n_times) float64, markers [(onset_s, text)])``."""
    n_shafts = draw(st.integers(1, 3))
    shafts = draw(st.lists(st.sampled_from(_SHAFTS), min_size=n_shafts, max_size=n_shafts, unique=True))
    per_shaft = draw(st.integers(1, 4))
    names = [f"{s}{k}" for s in shafts for k in range(1, per_shaft + 1)]
    sfreq = draw(st.sampled_from([r for r in _RATES if r <= max_rate]))
    seconds = draw(st.integers(2, 12))
    n_times = int(round(seconds * sfreq))
    seed = draw(st.integers(0, 2**31 - 1))
    rng = np.random.default_rng(seed)
    amplitudes = 10.0 ** rng.uniform(0.5, 3.5, size=len(names))  # 3 µV … 3 mV
    data = rng.standard_normal((len(names), n_times)) * amplitudes[:, None]
    onset = draw(st.floats(0.5, seconds - 1.0))
    markers = [(round(onset, 3), "sz onset"), (round(min(seconds - 0.2, onset + 0.5), 3), "sz offset")]
    return names, sfreq, data, markers


def _check(recording, names, sfreq, data, markers, *, resolution_uv):
    assert recording.ch_names == names
    assert recording.sfreq == pytest.approx(sfreq, rel=1e-6)
    assert recording.n_times == data.shape[1]
    read = recording.get_data()
    error = np.abs(read.astype(np.float64) - data)
    assert error.max() <= resolution_uv(data).max(), f"samples changed by up to {error.max():.3g} µV"
    onsets = {text: onset for onset, _, text in recording.events}
    for onset, text in markers:
        assert onsets.get(text) == pytest.approx(onset, abs=1.5 / sfreq), (
            f"{text!r} at {onsets.get(text)}, wrote {onset}"
        )


@ROUNDTRIP
@given(recordings())
def test_brainvision_float32_reads_back_what_pybv_wrote(drawn):
    names, sfreq, data, markers = drawn
    with tempfile.TemporaryDirectory() as tmp:
        events = np.array([[int(round(onset * sfreq)), 1, 0] for onset, _ in markers])
        pybv.write_brainvision(
            data=data * 1e-6,
            sfreq=sfreq,
            ch_names=names,
            fname_base="rec",
            folder_out=tmp,
            fmt="binary_float32",
            unit="µV",
            events=[
                {"onset": int(e[0]), "duration": 1, "description": text, "type": "Comment"}
                for e, (_, text) in zip(events, markers)
            ],
        )
        recording = read_recording(Path(tmp) / "rec.vhdr").load()
        # float32 keeps 24 bits: relative error ≤ 2^-24 of each sample
        _check(recording, names, sfreq, data, markers, resolution_uv=lambda d: np.abs(d) * 2.0**-23 + 1e-6)


@ROUNDTRIP
@given(recordings(max_rate=1024.0))
def test_edf_reads_back_what_mne_exported_within_its_16_bit_resolution(drawn):
    names, sfreq, data, markers = drawn
    with tempfile.TemporaryDirectory() as tmp:
        raw = mne.io.RawArray(data * 1e-6, mne.create_info(names, sfreq, "eeg"), verbose="error")
        raw.set_annotations(mne.Annotations([m[0] for m in markers], [0.0] * len(markers), [m[1] for m in markers]))
        path = Path(tmp) / "rec.edf"
        try:
            mne.export.export_raw(path, raw, fmt="edf", overwrite=True, verbose="error")
        except ValueError as err:  # edfio writes whole data records only: at 999.412 Hz, 1,999 samples are not
            if "not exactly divisible" not in str(err):  # a whole number of MNE's chosen record length
                raise
            reject()  # a file the writer cannot make is not a reader's case
        recording = read_recording(path).load()
        # EDF: 16-bit integers between each channel's physical min and max (rounded in the 8-character header)
        span = np.ptp(data, axis=1, keepdims=True)
        _check(
            recording,
            names,
            recording.sfreq,
            data,
            markers,
            resolution_uv=lambda d: span / 65535 * 1.5 + 1e-3 * np.abs(d).max(),
        )
        assert recording.sfreq == pytest.approx(sfreq, rel=1e-3)  # EDF states a record duration, not a rate


@ROUNDTRIP
@given(recordings())
def test_fif_reads_back_what_mne_saved(drawn):
    names, sfreq, data, markers = drawn
    with tempfile.TemporaryDirectory() as tmp:
        raw = mne.io.RawArray(data * 1e-6, mne.create_info(names, sfreq, "seeg"), verbose="error")
        raw.set_annotations(mne.Annotations([m[0] for m in markers], [0.0] * len(markers), [m[1] for m in markers]))
        path = Path(tmp) / "rec_ieeg.fif"
        raw.save(path, verbose="error")
        recording = read_recording(path).load()
        _check(recording, names, sfreq, data, markers, resolution_uv=lambda d: np.abs(d) * 2.0**-23 + 1e-6)
        assert recording.ch_types == ["seeg"] * len(names)

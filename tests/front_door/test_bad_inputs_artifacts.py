"""Issue 30, row 7: contacts that must not be ranked, or not silently — in files as clinics write them.

A dead contact (zeros plus one 100-µV glitch) and contacts clipped at the ADC rails 60 % of the time,
written as EDF (16-bit), BrainVision INT_16 and an int16 ``.npz``, read back with the real readers and
ranked by the default scorer and by the bundled SSS model: each is flagged with its reason and never
ranked first unflagged.
"""

from __future__ import annotations

from pathlib import Path

import mne
import numpy as np
import pybv
import pytest

from sss_viewer import ModelBundle, read_recording
from sss_viewer.biomarkers import DEFAULT_SCORER, get_scorer
from sss_viewer.engine.inference import score_recording

DEMO_MODEL = Path(__file__).resolve().parents[2] / "sss_viewer" / "data" / "demo" / "model"
SFREQ = 500.0
SECONDS = 40.0
NAMES = [f"LA{i}" for i in range(1, 9)] + [f"RH{i}" for i in range(1, 9)]
DEAD, CLIPPED = "LA3", "RH5"


def _signals(seed: int = 0) -> np.ndarray:
    """16 contacts of 1/f-ish noise (µV, ≈ 40 µV SD), LA3 dead (zeros + one 100-µV glitch), RH5 clipped 60 % of the time."""
    rng = np.random.default_rng(seed)
    n = int(SECONDS * SFREQ)
    walk = np.cumsum(rng.standard_normal((len(NAMES), n)), axis=1)
    walk -= np.cumsum(walk, axis=1) / np.arange(1, n + 1)
    data = walk / walk.std(axis=1, keepdims=True) * 40.0 + rng.standard_normal((len(NAMES), n)) * 5.0
    dead = NAMES.index(DEAD)
    data[dead] = 0.0
    data[dead, n // 2] = 100.0
    clipped = NAMES.index(CLIPPED)
    data[clipped] *= 8.0  # a loud contact driven into the rails
    rail = np.quantile(np.abs(data[clipped]), 0.4)
    data[clipped] = np.clip(data[clipped], -rail, rail)  # |x| above the 40th percentile sits at a rail: ≈ 60 %
    return data


def _edf(folder: Path, data: np.ndarray) -> Path:
    raw = mne.io.RawArray(data * 1e-6, mne.create_info(NAMES, SFREQ, "seeg"), verbose="error")
    path = folder / "clinic.edf"
    mne.export.export_raw(path, raw, fmt="edf", overwrite=True, verbose="error")
    return path


def _brainvision_int16(folder: Path, data: np.ndarray) -> Path:
    pybv.write_brainvision(
        data=data * 1e-6,
        sfreq=SFREQ,
        ch_names=NAMES,
        fname_base="clinic",
        folder_out=folder,
        fmt="binary_int16",
        resolution=0.1,
        unit="µV",
    )
    return folder / "clinic.vhdr"


def _npz_int16(folder: Path, data: np.ndarray) -> Path:
    path = folder / "clinic.npz"
    np.savez(path, data=np.round(data * 10).astype(np.int16) / 10.0, ch_names=np.array(NAMES), fs=SFREQ)
    return path


@pytest.fixture(scope="module")
def bundle():
    return ModelBundle.load(DEMO_MODEL)


@pytest.mark.parametrize("write", [_edf, _brainvision_int16, _npz_int16], ids=["edf", "brainvision-int16", "npz-int16"])
def test_dead_and_clipped_contacts_are_flagged_and_never_first_unflagged(tmp_path, write, bundle):
    path = write(tmp_path, _signals())
    recording = read_recording(path)
    fraction = np.mean(
        np.abs(recording.get_data([NAMES.index(CLIPPED)])[0])
        >= np.abs(recording.get_data([NAMES.index(CLIPPED)])[0]).max() * 0.999
    )
    assert fraction > 0.5  # the file really holds a contact at its rails most of the time
    for result in (get_scorer(DEFAULT_SCORER).score(recording), score_recording(bundle, recording, progress=False)):
        channels = result.channels.set_index("channel")
        assert "flat" in channels.loc[DEAD, "artifact"], channels.loc[DEAD, "artifact"]
        assert "saturated" in channels.loc[CLIPPED, "artifact"], channels.loc[CLIPPED, "artifact"]
        top = result.channels.iloc[0]
        assert top["channel"] not in (DEAD, CLIPPED) or top["artifact"]
        clean = channels.drop([DEAD, CLIPPED])["artifact"]
        assert (clean == "").all(), clean[clean != ""]

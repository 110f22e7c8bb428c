"""Clinical channel conventions: types from names, '$' duplicates, display names, type overrides.

Rule-table unit tests, then real MNE round-trips of clinical-style EDFs (``tests/clinical_files.py``)
through the API (``read_recording`` → ``score_recording``), the CLI (``sss-viewer score`` as a
subprocess) and the viewer's own reading/fit check.
"""

from __future__ import annotations

import logging
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import sss_viewer
from sss_viewer.io._channel_conventions import (
    CHANNEL_TYPES,
    NAME_RULES,
    apply_type_overrides,
    duplicate_channels,
    infer_type,
    resolve_channel_types,
    scalp_channels,
)
from sss_viewer.io._channel_names import channel_key, display_name, display_names
from sss_viewer.io.cohort import load_data
from sss_viewer.io.recording import Recording
from sss_viewer.io.soz_labels import match_soz
from tests.clinical_files import write_clinical_edf

MODEL = Path(sss_viewer.__file__).parent / "data" / "demo" / "model"
CLI = Path(sys.executable).with_name("sss-viewer")


# ---------------------------------------------------------------------------- rule table


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("EKG1", "ecg"),
        ("POL EKG2", "ecg"),
        ("EKGL", "ecg"),
        ("ECG II", "ecg"),
        ("ekg", "ecg"),
        ("EMG chin", "emg"),
        ("EMG1", "emg"),
        ("EOG L", "eog"),
        ("LOC", "eog"),
        ("ROC", "eog"),
        ("DC01", "misc"),
        ("POL DC16", "misc"),
        ("TRIG", "stim"),
        ("Trigger1", "stim"),
        ("STI 014", "stim"),
        ("STI101", "stim"),
        ("Status", "stim"),
        ("EVENT", "stim"),
        ("EDF Annotations", "stim"),
        ("Resp", "resp"),
        ("RESP chest", "resp"),
        ("Pneumo", "resp"),
        ("SpO2", "bio"),
        ("SaO2", "bio"),
        ("Pleth", "bio"),
        ("PR", "bio"),
        ("Pulse", "bio"),
        ("HR", "bio"),
        ("TEMP", "temperature"),
        ("GSR", "gsr"),
        ("REF", "misc"),
        ("REF2", "misc"),
        ("GND", "misc"),
        ("E", "misc"),
        ("POL E", "misc"),
        ("EEG E-Ref", "misc"),
        ("PHOTIC", "misc"),
        ("X1", "misc"),
        ("X12", "misc"),
        ("", "misc"),
        ("   ", "misc"),
        ("POL", "misc"),
        ("EEG", "misc"),
        ("$G11", "misc"),
        # contacts stay iEEG candidates, whatever their letters
        ("G11", None),
        ("POL G11", None),
        ("EEG G11-Ref", None),
        ("LA1", None),
        ("A'2", None),
        ("E1", None),
        ("EKGX1", None),
        ("DC", None),
        ("STI1", None),
        ("PR1", None),
        ("X", None),
        ("HR3", None),
        ("C3", None),
    ],
)
def test_name_rules(name, expected):
    assert infer_type(name) == expected


def test_rule_table_is_documented():
    assert all(rule.reason and rule.ch_type in CHANNEL_TYPES for rule in NAME_RULES)


@pytest.mark.parametrize(
    ("name", "shown"),
    [
        ("POL G11", "G11"),
        ("EEG G11-Ref", "G11"),
        ("SEEG LA1", "LA1"),
        ("ECOG G1", "G1"),
        ("G11-REF", "G11"),
        ("G11-Org", "G11"),
        ("G11 Ref", "G11"),
        ("G11_ref", "G11"),
        ("  POL  G11 ", "G11"),
        ("POL $G12", "$G12"),
        ("POL", "POL"),
        ("Ref", "Ref"),
        ("EEG -Ref", "-Ref"),
        ("EKG1", "EKG1"),
        ("G11-G12", "G11-G12"),
    ],
)
def test_display_name(name, shown):
    assert display_name(name) == shown


def test_display_names_keep_originals_where_they_would_collide():
    names = ["POL G11", "EEG G11-Ref", "POL G12", "POL LA1", "la1"]
    assert display_names(names) == ["POL G11", "EEG G11-Ref", "G12", "POL LA1", "la1"]


@pytest.mark.parametrize(
    ("names", "scalp"),
    [
        # a scalp montage (midline Cz) next to intracranial shafts
        (["G1", "G2", "Fp1", "Fp2", "C3", "C4", "Cz", "O1", "T3"], ["Fp1", "Fp2", "C3", "C4", "Cz", "O1", "T3"]),
        # C1..C5 is an electrode: its C3/C4 are contacts; Cz still scalp
        (["C1", "C2", "C3", "C4", "C5", "Cz", "O1", "O2"], ["Cz", "O1", "O2"]),
        # no midline name, but 10-20 names from three regions
        (["POL Fp1", "POL Fp2", "POL C3", "POL O1", "POL G1"], ["POL Fp1", "POL Fp2", "POL C3", "POL O1"]),
        # two regions and no midline: could be small electrodes, stay iEEG
        (["A1", "A2", "T3", "T4", "LA1"], []),
        # ds003029-like grids C1..C64, FP1..FP48: never scalp
        ([f"C{k}" for k in range(1, 9)] + [f"FP{k}" for k in range(1, 9)] + ["T3", "O1"], []),
    ],
)
def test_scalp_channels(names, scalp):
    assert scalp_channels(names) == scalp


def test_duplicates_dropped_only_with_their_twin_or_when_listed():
    names = ["POL G11", "$G11", "POL $G12", "G12", "$LH7"]
    assert duplicate_channels(names) == ["$G11", "POL $G12"]
    assert duplicate_channels(names, listed=["$LH7"]) == ["$G11", "POL $G12", "$LH7"]


def test_resolve_keeps_stated_types_and_promotes_only_unruled_eeg():
    names = ["POL G1", "EKG1", "X1", "Cz", "G2", "TRIG"]
    resolved = resolve_channel_types(names, ["eeg"] * 6)
    assert resolved.types == ["seeg", "ecg", "misc", "eeg", "seeg", "stim"] and resolved.promoted == 2
    assert resolved.inferred == {"EKG1": "ecg", "X1": "misc", "Cz": "eeg", "TRIG": "stim"}
    # a sidecar-stated type wins over the name; a file with iEEG types promotes nothing
    stated = resolve_channel_types(
        names, ["seeg", "seeg", "eeg", "eeg", "misc", "stim"], [False, True, False, False, False, False]
    )
    assert stated.types == ["seeg", "seeg", "misc", "eeg", "misc", "stim"] and stated.promoted == 0


# ---------------------------------------------------------------------------- labels, display, overrides


def test_channel_key_strips_vendor_prefix_and_reference_suffix():
    assert channel_key("POL G11") == channel_key("EEG G11-Ref") == channel_key("g 011") == "G11"
    assert channel_key("$G11") != channel_key("G11")
    mask, unmatched = match_soz(["POL G10", "POL G11", "EEG LA1-Ref", "$G12"], ["G11", "LA1", "G12"])
    assert mask.tolist() == [False, True, True, False] and unmatched == ["G12"]


def _recording() -> Recording:
    names = ["POL G1", "POL G2", "EKG1", "POL"]
    return Recording(
        data=np.zeros((4, 100), np.float32), sfreq=100.0, ch_names=names, ch_types=["seeg", "seeg", "ecg", "misc"]
    )


def test_recording_display_names():
    assert _recording().display_names == ["G1", "G2", "EKG1", "POL"]


def test_type_overrides_change_what_is_scored():
    recording = _recording()
    fixed = apply_type_overrides(recording, {"G2": "ECG", "POL": "seeg"})
    assert fixed.ch_types == ["seeg", "ecg", "ecg", "seeg"] and fixed.ch_names == recording.ch_names
    assert fixed.ieeg_picks().tolist() == [0, 3] and fixed.data is recording.data
    assert fixed.info["type_overrides"] == {"POL G2": "ecg", "POL": "seeg"}
    assert recording.ch_types == ["seeg", "seeg", "ecg", "misc"] and "type_overrides" not in recording.info
    again = apply_type_overrides(fixed, {"EKG1": "EKG"})
    assert again.info["type_overrides"] == {"POL G2": "ecg", "POL": "seeg", "EKG1": "ecg"}


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"G9": "seeg"}, r"^Cannot set the type of channel 'G9': it is not a channel of recording\.$"),
        (
            {"POL G1": "brain"},
            r"^Cannot set channel 'POL G1' to type 'brain': allowed types are seeg, ecog, dbs, eeg, ecg",
        ),
    ],
)
def test_type_override_errors(overrides, message):
    with pytest.raises(ValueError, match=message) as info:
        apply_type_overrides(_recording(), overrides)
    assert "\n" not in str(info.value)


# ---------------------------------------------------------------------------- MNE round trips


@pytest.mark.parametrize(("style", "units"), [("pol", "uV"), ("ref", "uV"), ("pol", "mV"), ("pol", "blank")])
def test_clinical_edf_reads_as_clinicians_know_it(tmp_path, caplog, style, units):
    written = write_clinical_edf(tmp_path, style=style, units=units, duration_s=10.0, onset_s=4.0, offset_s=8.0)
    with caplog.at_level(logging.INFO, logger="sss_viewer.io.readers"):
        recording = sss_viewer.read_recording(written.path)
    assert dict(zip(recording.ch_names, recording.ch_types)) == written.types
    assert [recording.ch_names[i] for i in recording.ieeg_picks()] == written.scored
    assert recording.display_names == [written.display[n] for n in recording.ch_names]
    assert recording.info["dropped_duplicates"] == written.dropped
    assert caplog.text.count("'$'-prefixed duplicate channels: $G11, POL $G12") == 1
    assert [(e.onset, e.description) for e in recording.events if e.description.startswith("EEG SZ")] == [
        (written.onset_s, "EEG SZ START"),
        (written.offset_s, "EEG SZ END"),
    ]
    amplitude = np.abs(recording.get_data(recording.ieeg_picks()[:3])).max()
    # µV and correctly stated mV read back alike; no unit: MNE reads the µV numbers as volts
    assert (1e7 < amplitude) if units == "blank" else (20 < amplitude < 1000)


def test_bids_sidecar_type_wins_over_names(tmp_path):
    written = write_clinical_edf(tmp_path, name="sub-01_task-sz_ieeg.edf", duration_s=6.0, onset_s=3.0, offset_s=5.0)
    tsv = tmp_path / "sub-01_task-sz_channels.tsv"
    sidecar = pd.DataFrame(
        {"name": ["X1", "POL G1", "POL $G12"], "type": ["ECG", "MISC", "MISC"], "status": ["good"] * 3}
    )
    sidecar.to_csv(tsv, sep="\t", index=False)
    types = dict(zip(*(lambda r: (r.ch_names, r.ch_types))(sss_viewer.read_recording(written.path))))
    assert types["X1"] == "ecg" and types["POL G1"] == "misc"  # listed: the sidecar's type
    assert types["EKG1"] == "ecg" and types["POL G2"] == "seeg"  # unlisted: names, then eeg -> seeg
    assert "POL $G12" not in types and "$G11" not in types
    sidecar.assign(type=["SEEG", "MISC", "MISC"]).to_csv(tsv, sep="\t", index=False)
    recording = sss_viewer.read_recording(written.path)
    assert [recording.ch_names[i] for i in recording.ieeg_picks()] == ["X1"]  # the sidecar states the iEEG channels


def test_npz_archive_without_types_uses_the_same_rules(tmp_path):
    path = tmp_path / "export.npz"
    names = ["G1", "G2", "$G2", "EKG1", "DC01"]
    np.savez(
        path, data=np.ones((5, 500), np.float32), ch_names=np.array(names), fs=250.0, soz=np.array([1, 0, 0, 0, 0])
    )
    recording = sss_viewer.read_recording(path)
    assert recording.ch_names == ["G1", "G2", "EKG1", "DC01"]
    assert recording.ch_types == ["seeg", "seeg", "ecg", "misc"] and recording.soz.tolist() == [
        True,
        False,
        False,
        False,
    ]


@pytest.fixture(scope="module")
def clinical(tmp_path_factory):
    """A 12-s Nihon-Kohden-style EDF and a labels file naming its seizure contacts plainly (LA1, not POL LA1).

    12 s at 256 Hz holds two non-overlapping windows of the demo model (1024 samples at 250 Hz):
    the tests score with stride = one window to stay cheap on two shared cores.
    """
    folder = tmp_path_factory.mktemp("clinical")
    written = write_clinical_edf(folder, duration_s=12.0, onset_s=4.0, offset_s=9.0)
    labels = folder / "labels.tsv"
    rows = [("p1", name, int(name in written.soz)) for name in ("G11", "LA1", "LA2", "LA3", "LH1")]
    pd.DataFrame(rows, columns=["subject", "channel", "soz"]).to_csv(labels, sep="\t", index=False)
    return written, labels


def test_api_scores_only_the_intracranial_contacts(clinical):
    from sss_viewer.engine.bundle import ModelBundle
    from sss_viewer.engine.inference import score_recording

    written, _ = clinical
    bundle = ModelBundle.load(MODEL)
    recording = sss_viewer.read_recording(written.path)
    result = score_recording(bundle, recording, stride=bundle.window_length, progress=False)
    assert sorted(result.channels["channel"]) == sorted(written.scored)
    assert set(result.windows["channel"]) == set(written.scored)
    corrected = apply_type_overrides(recording, {"LH1": "misc"})
    again = score_recording(bundle, corrected, stride=bundle.window_length, progress=False)
    assert sorted(again.channels["channel"]) == sorted(set(written.scored) - {"POL LH1"})


def test_cli_scores_the_same_channels_and_plain_labels_match(clinical, tmp_path):
    written, labels = clinical
    out = tmp_path / "scores"
    cmd = [str(CLI), "score", str(MODEL), str(written.path), "--out", str(out), "--labels", str(labels), "--no-cache"]
    cmd += ["--stride", "1024"]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    channels = pd.read_csv(out / "channels.csv")
    assert sorted(channels["channel"]) == sorted(written.scored)  # original names in the export
    labelled = dict(zip(channels["channel"], channels["label"]))
    assert {c for c, v in labelled.items() if v == 1} == {"POL LA1", "POL LA2", "POL LA3"}
    assert "labels for channels not in the recording" not in done.stderr


def test_train_and_score_read_one_labels_file_alike(clinical):
    from sss_viewer.commands.score import _labels_for
    from sss_viewer.io.cohort import read_labels

    written, labels = clinical
    (recording,) = load_data(written.path, labels=labels)
    expected = [name in {"POL LA1", "POL LA2", "POL LA3"} for name in recording.ch_names]
    assert recording.soz is not None and recording.soz.tolist() == expected
    fresh = sss_viewer.read_recording(written.path)
    assert _labels_for(fresh, read_labels(labels), labels).tolist() == expected


def test_viewer_reads_and_fits_the_same_channels(clinical):
    from sss_viewer.engine.bundle import ModelBundle
    from sss_viewer.engine.inference import check_fit
    from sss_viewer.viewer._loader import load_selected

    written, _ = clinical
    bundle = ModelBundle.load(MODEL)
    recording = load_selected(written.path)
    assert [recording.ch_names[i] for i in recording.ieeg_picks()] == written.scored
    assert check_fit(bundle, recording) is None
    nothing = apply_type_overrides(recording, {name: "misc" for name in written.scored})
    assert "no good iEEG channel" in check_fit(bundle, nothing)


def test_trace_rows_read_display_names_and_keep_original_names_for_data(clinical):
    from sss_viewer.viewer._loader import load_selected
    from sss_viewer.viewer.traces import TraceView

    written, _ = clinical
    recording = load_selected(written.path)
    view = TraceView(recording=recording, page_size=64)
    shown = [written.display[n] for n in view.contacts()]
    assert view.display_contacts() == shown and not any(s.startswith("POL") for s in shown)
    assert view.slot_labels()[: len(shown)] == shown  # the y axis
    assert view.page_rows().labels == view.contacts()  # data and state keep the file's names
    assert set(view.shaft_options().values()) == set(view.shafts())
    assert "POL" not in " ".join(view.shaft_options()) and "POL" not in view._page_range_text()
    view.montage = "bipolar"
    a, b = view.page_rows().members[0]
    assert view.slot_labels()[0] == f"{shown[a]}-{shown[b]}"
    assert view.page_rows().labels[0] == f"{view.contacts()[a]}-{view.contacts()[b]}"

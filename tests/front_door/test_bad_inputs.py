"""Bad inputs that once gave silently wrong answers or poor errors (issue 14, points 1-13, 15): one row per case.

Every row ends in the right result or a one-line error naming the file / key / channel, checked
exactly. Real components only: files written by pybv / MNE / NumPy, the real readers, cache,
model directories, and ``sss-viewer`` subprocesses where the command line is the point. A tiny
native-rate model (250 Hz) is trained once per module.

Rows are grouped by the issue's points: ``1-`` truncated data, ``2-`` files named outside the
header's folder, ``3-`` cache keys and damaged entries, ``4-`` ``--labels``, ``5-`` model files,
``6-`` model config values, ``7-`` native-rate models, ``8-`` huge values, ``9-`` ``score --out``,
``11-`` a full disk (real small tmpfs mounts; skipped where mounting needs root), ``12-`` model sizes
checked against the weights, ``13-`` corrupt index, long names, NaN weights, failing runs, Ctrl-C,
``15-`` output permissions and plain values in messages.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import json
import logging
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from functools import cached_property
from pathlib import Path

import mne
import numpy as np
import pandas as pd
import pybv
import pytest
import scipy.io

import sss_viewer
from sss_viewer.engine.bundle import CONFIG_FILE, HASH_KEY, WEIGHTS_FILE, ModelBundle
from sss_viewer.engine.config import train_preset
from sss_viewer.engine.inference import score_recording
from sss_viewer.engine.training import train
from sss_viewer.io.cohort import load_cohort, load_data
from sss_viewer.io.readers import RecordingReadError, read_recording
from sss_viewer.io.recording import Recording
from sss_viewer.models import model_from_config
from sss_viewer.preprocessing.cache import SeriesCache
from sss_viewer.preprocessing.config import native_rates, preprocess_preset
from sss_viewer.synth.bids import write_recording_bids
from sss_viewer.synth.config import SynthConfig
from sss_viewer.synth.run import synthesise_recording
from sss_viewer.windows.series_set import build_series_set
from tests.fixtures.recordings import toy_recording

CLI = Path(sys.executable).with_name("sss-viewer")
TINY_TRAIN = dict(
    window_length=128,
    train_stride=64,
    val_stride=64,
    batch_size=64,
    epochs=1,
    model_params={"d_model": 16, "d_ff": 32, "n_heads": 2, "n_layers": 1},
    device="cpu",
)
"""tests/engine/test_training.py's TINY with one epoch: a model in ≈ 10 s on 2 cores."""
SYNTH = SynthConfig(duration_scale=0.05, max_channels=8)
"""≈ 9 s synthetic runs at 1 kHz with 8 channels."""


# ------------------------------------------------------------------------------------------------
# Shared material, built on first use (running a few rows builds only what they need)
# ------------------------------------------------------------------------------------------------


def _native(config):
    """``config`` keeping native rates (``--target-sfreq 0``)."""
    return dataclasses.replace(config, preprocess=dataclasses.replace(config.preprocess, target_sfreq=None))


def _write_cohort(root: Path, recordings: list[Recording]) -> Path:
    """Recordings as BrainVision + sidecars with ``cohort.tsv`` and ``labels.tsv`` (the data's own labels)."""
    rows, labels = [], []
    for rec in recordings:
        vhdr = write_recording_bids(rec, root)
        rows.append(
            {"subject": rec.subject, "centre": rec.centre, "run": rec.run, "path": vhdr.relative_to(root).as_posix()}
        )
        labels += [{"subject": rec.subject, "channel": c, "soz": int(s)} for c, s in zip(rec.ch_names, rec.soz)]
    pd.DataFrame(rows).to_csv(root / "cohort.tsv", sep="\t", index=False)
    pd.DataFrame(labels).to_csv(root / "labels.tsv", sep="\t", index=False)
    return root


class Material:
    """Files and a model shared by the rows, each made once per module on first use."""

    def __init__(self, factory: pytest.TempPathFactory):
        self._factory = factory

    def folder(self, name: str) -> Path:
        return self._factory.mktemp(name)

    @cached_property
    def synthetic_run(self) -> Path:
        """One synthetic BIDS BrainVision run (``DataPoints`` stated, sidecars, markers)."""
        recording, _ = synthesise_recording(0, seed=3, config=SYNTH)
        return write_recording_bids(recording, self.folder("synthetic"))

    @cached_property
    def toy(self) -> list[Recording]:
        """Eight labelled 250 Hz recordings of 20 s (8 channels, 2 SOZ) from eight subjects."""
        return [toy_recording(f"toy{i:02d}", i, duration_s=20.0) for i in range(8)]

    @cached_property
    def model_dir(self) -> Path:
        """The tiny native-rate model trained on ``toy`` (250 Hz)."""
        config = _native(train_preset("default", **TINY_TRAIN))
        bundle = train(self.toy, config, progress=False)
        return bundle.save(self.folder("model") / "model")

    @cached_property
    def bundle(self) -> ModelBundle:
        return ModelBundle.load(self.model_dir)

    @cached_property
    def toy_cohort(self) -> Path:
        """Four of ``toy`` as a cohort folder of BrainVision files."""
        return _write_cohort(
            self.folder("toy-cohort"), [toy_recording(f"toy{i:02d}", i, duration_s=20.0) for i in range(4)]
        )

    @cached_property
    def toy_file(self) -> Path:
        """One 250 Hz recording as a plain (non-BIDS) BrainVision file."""
        return _write_vhdr(self.folder("toy-file"), "rec", toy_recording("toy90", 90, duration_s=20.0))


@pytest.fixture(scope="module")
def material(tmp_path_factory) -> Material:
    return Material(tmp_path_factory)


def _write_vhdr(folder: Path, stem: str, rec: Recording) -> Path:
    pybv.write_brainvision(
        data=rec.data.astype(np.float64),
        sfreq=rec.sfreq,
        ch_names=rec.ch_names,
        fname_base=stem,
        folder_out=folder,
        unit="µV",
        fmt="binary_float32",
        events=[{"onset": 10, "duration": 1, "description": "sz onset", "type": "Comment"}],
    )
    return folder / f"{stem}.vhdr"


def _copy_run(vhdr: Path, dest: Path) -> Path:
    """The run's folder copied to ``dest`` (created); returns the copied header."""
    shutil.copytree(vhdr.parent, dest)
    return dest / vhdr.name


def _edit_header(vhdr: Path, **values) -> None:
    """Set (or with None drop) ``Key=value`` lines of a BrainVision header."""
    lines = []
    for line in vhdr.read_text(encoding="utf-8").splitlines():
        key = line.partition("=")[0]
        if key in values:
            if values[key] is not None:
                lines.append(f"{key}={values.pop(key)}")
            else:
                values.pop(key)
            continue
        lines.append(line)
    vhdr.write_text("\n".join(lines) + "\n", encoding="utf-8")


def _header(vhdr: Path) -> dict[str, str]:
    return dict(
        line.split("=", 1) for line in vhdr.read_text().splitlines() if "=" in line and not line.startswith(";")
    )


def _frames(vhdr: Path) -> tuple[Path, int]:
    """The data file and its frame size (4 bytes × channels) of a float32 header."""
    fields = _header(vhdr)
    return vhdr.parent / fields["DataFile"], 4 * int(fields["NumberOfChannels"])


def _truncate(vhdr: Path, seconds: float) -> None:
    """Cut the data file to ``seconds`` of whole frames (``truncate -s``)."""
    data_file, frame = _frames(vhdr)
    sfreq = 1e6 / float(_header(vhdr)["SamplingInterval"])
    os.truncate(data_file, round(seconds * sfreq) * frame)


def _cli(*args, timeout: float = 180) -> subprocess.CompletedProcess:
    """Run ``sss-viewer ARGS -q`` as a process (the session's private cache); returns the finished process."""
    return subprocess.run([str(CLI), *map(str, args), "-q"], capture_output=True, text=True, timeout=timeout)


def _one_line_error(proc: subprocess.CompletedProcess, *needles: str) -> str:
    """The process failed with exit 1 (a runtime error) and one ``error:`` line containing every needle; returns it."""
    assert proc.returncode == 1, (proc.returncode, proc.stderr[-2000:])
    errors = [line for line in proc.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and "Traceback" not in proc.stderr, proc.stderr[-2000:]
    for needle in needles:
        assert needle in errors[0], (needle, errors[0])
    return errors[0]


CASES = []


def case(case_id: str):
    """Register a row of the matrix."""

    def register(function):
        CASES.append(pytest.param(function, id=case_id))
        return function

    return register


# ------------------------------------------------------------------------------------------------
# 1. Truncated data is never read as a shorter recording
# ------------------------------------------------------------------------------------------------


@case("1-synthetic-header-states-datapoints")
def case_1_synthetic_header_states_datapoints(m: Material, tmp: Path, caplog):
    header = m.synthetic_run.read_text()
    recording = read_recording(m.synthetic_run)
    assert f"DataPoints={recording.n_times}\n" in header
    data_file, frame = _frames(m.synthetic_run)
    assert data_file.stat().st_size == recording.n_times * frame


@case("1-truncated-whole-frames-vs-datapoints")
def case_1_truncated_whole_frames_vs_datapoints(m: Material, tmp: Path, caplog):
    vhdr = _copy_run(m.synthetic_run, tmp / "run")
    _truncate(vhdr, 3.1)  # a whole number of frames: MNE alone would read 3.1 s
    with pytest.raises(
        RecordingReadError, match=rf"{re.escape(vhdr.name)} as BrainVision: it holds 3100 samples .*DataPoints="
    ):
        read_recording(vhdr)


@case("1-truncated-no-datapoints-vs-recording-duration")
def case_1_truncated_no_datapoints_vs_recording_duration(m: Material, tmp: Path, caplog):
    vhdr = _copy_run(m.synthetic_run, tmp / "run")
    _edit_header(vhdr, DataPoints=None, MarkerFile=None)  # only the sidecars state a length
    vhdr.with_suffix(".vmrk").unlink()
    next(vhdr.parent.glob("*_events.tsv")).unlink()
    _truncate(vhdr, 3.1)
    with pytest.raises(
        RecordingReadError, match=r"it holds 3100 samples .*, but \S+_ieeg\.json states RecordingDuration 12\.058 s\. "
    ):
        read_recording(vhdr)


@case("1-truncated-plain-file-vs-markers")
def case_1_truncated_plain_file_vs_markers(m: Material, tmp: Path, caplog):
    vhdr = _copy_run(m.toy_file, tmp / "run")  # not BIDS-named: no sidecar, no DataPoints; a marker at sample 11
    _truncate(vhdr, 0.02)
    with pytest.raises(RecordingReadError, match=r"rec\.vmrk places marker Mk\d+ at sample 11, beyond the data"):
        read_recording(vhdr)


@case("1-truncated-vs-events-tsv-only")
def case_1_truncated_vs_events_tsv_only(m: Material, tmp: Path, caplog):
    vhdr = _copy_run(m.synthetic_run, tmp / "run")
    _edit_header(vhdr, DataPoints=None, MarkerFile=None)
    vhdr.with_suffix(".vmrk").unlink()
    next(vhdr.parent.glob("*_ieeg.json")).unlink()
    _truncate(vhdr, 1.0)
    with pytest.raises(RecordingReadError, match=r"_events\.tsv has an event at [\d.]+ s, after the data ends"):
        read_recording(vhdr)


@case("1-rounded-recording-duration-accepted")
def case_1_rounded_recording_duration_accepted(m: Material, tmp: Path, caplog):
    vhdr = _copy_run(m.synthetic_run, tmp / "run")
    sidecar = next(vhdr.parent.glob("*_ieeg.json"))
    stated = json.loads(sidecar.read_text())
    sidecar.write_text(json.dumps({**stated, "RecordingDuration": round(stated["RecordingDuration"])}))
    assert read_recording(vhdr).duration_s == pytest.approx(stated["RecordingDuration"])


@case("1-cohort-skips-truncated-run-with-warning")
def case_1_cohort_skips_truncated_run_with_warning(m: Material, tmp: Path, caplog):
    root = shutil.copytree(m.toy_cohort, tmp / "cohort")
    table = pd.read_csv(root / "cohort.tsv", sep="\t")
    _truncate(root / table["path"][1], 5.0)
    with caplog.at_level(logging.WARNING, logger="sss_viewer.io.cohort"):
        recordings = load_cohort(root)
    assert [r.subject for r in recordings] == ["toy00", "toy02", "toy03"]
    assert f"Skipping sub-toy01 run-01 ({root / table['path'][1]})" in caplog.text and "DataPoints=5000" in caplog.text


@case("1-cohort-tsv-duration-disagrees")
def case_1_cohort_tsv_duration_disagrees(m: Material, tmp: Path, caplog):
    root = shutil.copytree(m.toy_cohort, tmp / "cohort")
    table = pd.read_csv(root / "cohort.tsv", sep="\t").assign(duration_s=[20.0, 20.0, 60.0, 20.0])
    table.to_csv(root / "cohort.tsv", sep="\t", index=False)
    with caplog.at_level(logging.WARNING, logger="sss_viewer.io.cohort"):
        recordings = load_cohort(root)
    assert [r.subject for r in recordings] == ["toy00", "toy01", "toy03"]
    assert "holds 20.000 s but" in caplog.text and "cohort.tsv lists duration_s 60" in caplog.text


@case("1-cli-score-truncated-refused")
def case_1_cli_score_truncated_refused(m: Material, tmp: Path, caplog):
    vhdr = _copy_run(m.synthetic_run, tmp / "run")
    os.truncate(_frames(vhdr)[0], 100_000 - 100_000 % _frames(vhdr)[1])
    proc = _cli("score", m.model_dir, vhdr, "--out", tmp / "scores")
    _one_line_error(proc, str(vhdr), "DataPoints=", "looks truncated")
    assert not (tmp / "scores" / "windows.csv").exists()


@case("1-cli-cohort-lists-truncated-run-as-skipped")
def case_1_cli_cohort_lists_truncated_run_as_skipped(m: Material, tmp: Path, caplog):
    root = shutil.copytree(m.toy_cohort, tmp / "cohort")
    (root / "participants.tsv").write_text("participant_id\tsite\n" + "".join(f"sub-toy0{i}\tJHH\n" for i in range(4)))
    run = pd.read_csv(root / "cohort.tsv", sep="\t")["path"][2]
    _truncate(root / run, 5.0)
    proc = _cli("cohort", root, "--json")
    assert proc.returncode == 0, proc.stderr
    summary = json.loads(proc.stdout)
    assert list(summary["skipped"]) == [run] and "looks truncated" in summary["skipped"][run]
    assert summary["total"]["runs"] == 3


# ------------------------------------------------------------------------------------------------
# 2. A recording's files lie in its header's folder
# ------------------------------------------------------------------------------------------------


def _outside_pair(tmp: Path, m: Material) -> tuple[Path, Path]:
    """A header in ``tmp/data/`` and a readable data file outside it, in ``tmp/secret/``."""
    secret = _copy_run(m.toy_file, tmp / "secret")
    vhdr = _copy_run(m.toy_file, tmp / "data")
    return vhdr, secret.with_suffix(".eeg")


@case("2-datafile-dotdot-refused")
def case_2_datafile_dotdot_refused(m: Material, tmp: Path, caplog):
    vhdr, outside = _outside_pair(tmp, m)
    _edit_header(vhdr, DataFile="../secret/rec.eeg")
    with pytest.raises(
        RecordingReadError, match=rf"Refusing {re.escape(str(vhdr))}: its DataFile=\.\./secret/rec\.eeg points outside"
    ):
        read_recording(vhdr)


@case("2-datafile-absolute-refused")
def case_2_datafile_absolute_refused(m: Material, tmp: Path, caplog):
    vhdr, outside = _outside_pair(tmp, m)
    _edit_header(vhdr, DataFile=str(outside))
    with pytest.raises(
        RecordingReadError,
        match=rf"Refusing {re.escape(str(vhdr))}: its DataFile={re.escape(str(outside))} points outside",
    ):
        read_recording(vhdr)


@case("2-datafile-symlink-out-refused")
def case_2_datafile_symlink_out_refused(m: Material, tmp: Path, caplog):
    vhdr, outside = _outside_pair(tmp, m)
    vhdr.with_suffix(".eeg").unlink()
    vhdr.with_suffix(".eeg").symlink_to(outside)
    with pytest.raises(
        RecordingReadError,
        match=rf"its DataFile=rec\.eeg points outside the header's folder \({re.escape(str(outside.resolve()))}\)",
    ):
        read_recording(vhdr)


@case("2-datafile-any-case-colon-refused")
def case_2_datafile_any_case_colon_refused(m: Material, tmp: Path, caplog):
    vhdr, outside = _outside_pair(tmp, m)
    vhdr.write_text(
        vhdr.read_text().replace("DataFile=rec.eeg", "datafile: ../secret/rec.eeg")
    )  # as MNE's configparser reads it
    with pytest.raises(RecordingReadError, match=r"its DataFile=\.\./secret/rec\.eeg points outside"):
        read_recording(vhdr)


@case("2-git-annex-link-of-same-dataset-accepted")
def case_2_git_annex_link_of_same_dataset_accepted(m: Material, tmp: Path, caplog):
    vhdr = _copy_run(
        m.toy_file, tmp / "dataset" / "sub-01" / "ieeg"
    )  # DataLad/OpenNeuro: data files link into .git/annex
    store = tmp / "dataset" / ".git" / "annex" / "objects" / "Xy" / "Zw"
    store.mkdir(parents=True)
    vhdr.with_suffix(".eeg").rename(store / "SHA256E-s1--abc.eeg")
    vhdr.with_suffix(".eeg").symlink_to(os.path.relpath(store / "SHA256E-s1--abc.eeg", vhdr.parent))
    np.testing.assert_array_equal(read_recording(vhdr).get_data(), read_recording(m.toy_file).get_data())


@case("2-markerfile-dotdot-refused")
def case_2_markerfile_dotdot_refused(m: Material, tmp: Path, caplog):
    vhdr, outside = _outside_pair(tmp, m)
    _edit_header(vhdr, MarkerFile="../secret/rec.vmrk")
    with pytest.raises(RecordingReadError, match=r"its MarkerFile=\.\./secret/rec\.vmrk points outside"):
        read_recording(vhdr)


@case("2-datafile-other-stem-inside-accepted")
def case_2_datafile_other_stem_inside_accepted(m: Material, tmp: Path, caplog):
    vhdr = _copy_run(m.toy_file, tmp / "data")
    vhdr.with_suffix(".eeg").rename(vhdr.with_name("data.eeg"))
    _edit_header(vhdr, DataFile="data.eeg")
    np.testing.assert_array_equal(read_recording(vhdr).get_data(), read_recording(m.toy_file).get_data())


def _write_set_fdt(folder: Path, data_name: str, fdt: Path, rec: Recording) -> Path:
    """An EEGLAB ``.set`` whose samples are in the ``.fdt`` named ``data_name`` (written to ``fdt``)."""
    chanlocs = np.zeros((rec.n_channels,), dtype=[("labels", object), ("type", object)])
    for i, name in enumerate(rec.ch_names):
        chanlocs[i] = (name, "SEEG")
    event = np.zeros((1,), dtype=[("type", object), ("latency", float), ("duration", float)])
    event[0] = ("sz onset", 11.0, 0.0)
    eeg = dict(
        setname="t",
        nbchan=float(rec.n_channels),
        pnts=float(rec.n_times),
        trials=1.0,
        srate=rec.sfreq,
        xmin=0.0,
        xmax=(rec.n_times - 1) / rec.sfreq,
        data=data_name,
        chanlocs=chanlocs,
        event=event,
        icawinv=np.array([]),
        icasphere=np.array([]),
        icaweights=np.array([]),
        ref="common",
    )
    folder.mkdir(parents=True, exist_ok=True)
    fdt.parent.mkdir(parents=True, exist_ok=True)
    np.asarray(rec.data, dtype="<f4").T.tofile(fdt)  # channels vary fastest
    scipy.io.savemat(folder / "rec.set", {"EEG": eeg}, appendmat=False)
    return folder / "rec.set"


@case("2-eeglab-fdt-outside-refused")
def case_2_eeglab_fdt_outside_refused(m: Material, tmp: Path, caplog):
    rec = toy_recording("x", 1, duration_s=4.0)
    path = _write_set_fdt(tmp / "data", "../secret/other.fdt", tmp / "secret" / "other.fdt", rec)
    with pytest.raises(
        RecordingReadError, match=rf"Refusing {re.escape(str(path))}: its data file .*other\.fdt points outside"
    ):
        read_recording(path)


@case("2-eeglab-fdt-inside-accepted")
def case_2_eeglab_fdt_inside_accepted(m: Material, tmp: Path, caplog):
    rec = toy_recording("x", 1, duration_s=4.0)
    path = _write_set_fdt(tmp / "data", "rec.fdt", tmp / "data" / "rec.fdt", rec)
    np.testing.assert_allclose(read_recording(path).get_data(), rec.data, rtol=1e-6)


@case("2-cli-score-escaping-header-refused")
def case_2_cli_score_escaping_header_refused(m: Material, tmp: Path, caplog):
    vhdr, outside = _outside_pair(tmp, m)
    _edit_header(vhdr, DataFile="../secret/rec.eeg")
    _one_line_error(_cli("score", m.model_dir, vhdr, "--out", tmp / "out"), f"Refusing {vhdr}", "points outside")


@case("2-viewer-loader-escaping-header-refused")
def case_2_viewer_loader_escaping_header_refused(m: Material, tmp: Path, caplog):
    from sss_viewer.viewer._loader import load_selected

    vhdr, outside = _outside_pair(tmp, m)
    _edit_header(vhdr, DataFile=str(outside))
    with pytest.raises(RecordingReadError, match=rf"Refusing {re.escape(str(vhdr))}: its DataFile="):
        load_selected(vhdr)


# ------------------------------------------------------------------------------------------------
# 3. The cache key covers every file read; an altered entry is rebuilt
# ------------------------------------------------------------------------------------------------


@case("3-cache-key-covers-datafile-with-other-stem")
def case_3_cache_key_covers_datafile_with_other_stem(m: Material, tmp: Path, caplog):
    vhdr = _copy_run(m.toy_file, tmp / "data")
    vhdr.with_suffix(".eeg").rename(vhdr.with_name("data.eeg"))
    _edit_header(vhdr, DataFile="data.eeg")
    cache, config, picks = SeriesCache(tmp / "cache"), preprocess_preset("default", target_sfreq=None), np.arange(8)
    before = cache.load_or_build(read_recording(vhdr), picks, config)
    other = _write_vhdr(tmp / "other", "x", toy_recording("toy91", 91, duration_s=20.0))  # same size, other values
    shutil.copyfile(other.with_suffix(".eeg"), vhdr.with_name("data.eeg"))
    changed = read_recording(vhdr)
    after = cache.load_or_build(changed, picks, config)
    assert after.key != before.key
    fresh = build_series_set([changed], config, min_length=1, progress=False)
    np.testing.assert_array_equal(after.data[: after.lengths[0]], fresh.store.series(0))


@case("3-cache-entry-altered-in-place-rebuilt")
def case_3_cache_entry_altered_in_place_rebuilt(m: Material, tmp: Path, caplog):
    cache, config, picks = SeriesCache(tmp / "cache"), preprocess_preset("default", target_sfreq=None), np.arange(8)
    recording = read_recording(m.toy_file)
    expected = np.array(cache.load_or_build(recording, picks, config).data)
    series = next((tmp / "cache").glob("*/series.f32"))
    stat = series.stat()
    with series.open("r+b") as f:  # same size, same mtime: only the checksum can tell
        f.seek(4000)
        f.write(np.full(100, 7.0, np.float32).tobytes())
    os.utime(series, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    with caplog.at_level(logging.WARNING, logger="sss_viewer.preprocessing.cache"):
        again = SeriesCache(tmp / "cache").load_or_build(read_recording(m.toy_file), picks, config)
    assert f"Cache entry {series.parent} is damaged (series.f32 does not match the SHA-256" in caplog.text
    np.testing.assert_array_equal(again.data, expected)


# ------------------------------------------------------------------------------------------------
# 4. --labels is the only source of labels for the subjects it names
# ------------------------------------------------------------------------------------------------


def _labels_file(path: Path, rows: list[tuple[str, str, int]]) -> Path:
    pd.DataFrame(rows, columns=["subject", "channel", "soz"]).to_csv(path, sep="\t", index=False)
    return path


@case("4-unnamed-subjects-reported-and-unlabelled")
def case_4_unnamed_subjects_reported_and_unlabelled(m: Material, tmp: Path, caplog):
    labels = _labels_file(tmp / "labels.tsv", [("toy00", "A8", 1), ("toy01", "A1", 0)])
    with caplog.at_level(logging.WARNING, logger="sss_viewer.io.cohort"):
        recordings = load_data(m.toy_cohort, labels=labels)
    soz = {r.subject: r.soz for r in recordings}
    np.testing.assert_array_equal(soz["toy00"], [False] * 7 + [True])  # only the table: A1, A2 no longer SOZ
    np.testing.assert_array_equal(soz["toy01"], [False] * 8)
    assert soz["toy02"] is None and soz["toy03"] is None
    assert f"{labels} names no label for 2 subject(s) of the data: toy02, toy03" in caplog.text


@case("4-unnamed-subjects-fall-back-when-asked")
def case_4_unnamed_subjects_fall_back_when_asked(m: Material, tmp: Path, caplog):
    labels = _labels_file(tmp / "labels.tsv", [("toy00", "A8", 1)])
    with caplog.at_level(logging.WARNING, logger="sss_viewer.io.cohort"):
        recordings = load_data(m.toy_cohort, labels=labels, labels_fallback=True)
    np.testing.assert_array_equal(recordings[1].soz, [True, True] + [False] * 6)  # the cohort's labels.tsv
    assert "names no label for 3 subject(s) of the data: toy01, toy02, toy03; they keep the data's own" in caplog.text


@case("4-unnamed-subjects-bids-root")
def case_4_unnamed_subjects_bids_root(m: Material, tmp: Path, caplog):
    root = shutil.copytree(m.toy_cohort, tmp / "bids")
    (root / "cohort.tsv").unlink()
    (root / "participants.tsv").write_text("participant_id\tsite\n" + "".join(f"sub-toy0{i}\tJHH\n" for i in range(4)))
    labels = _labels_file(tmp / "labels.csv", [("toy03", "A3", 1)])
    labels.write_text(labels.read_text().replace("\t", ","))
    with caplog.at_level(logging.WARNING, logger="sss_viewer.io.cohort"):
        recordings = load_data(root, labels=labels)
    assert [r.subject for r in recordings if r.soz is not None] == ["toy03"]
    assert "names no label for 3 subject(s) of the data: toy00, toy01, toy02" in caplog.text


@case("4-header-only-labels-file-is-an-error")
def case_4_header_only_labels_file_is_an_error(m: Material, tmp: Path, caplog):
    labels = tmp / "labels.tsv"
    labels.write_text("subject\tchannel\tsoz\n")
    with pytest.raises(ValueError, match=rf"{re.escape(str(labels))} has a header but no rows"):
        load_data(m.toy_cohort, labels=labels)
    _one_line_error(_cli("train", m.toy_cohort, "--labels", labels, "--out", tmp / "model"), str(labels), "no rows")
    assert not (tmp / "model").exists()


@case("4-one-channel-rule-score-and-load-data")
def case_4_one_channel_rule_score_and_load_data(m: Material, tmp: Path, caplog):
    rec = toy_recording("pt07", 7, duration_s=20.0)
    rec.ch_names = ["LPT07", "LPT08", "LPT09", "POL LPT10", "A5", "A6", "A7", "A8"]
    root = _write_cohort(tmp / "cohort", [rec])
    labels = _labels_file(tmp / "labels.tsv", [("pt07", "lpt7", 1), ("pt07", "LPT08", 1), ("pt07", "LPT 10", 1)])
    expected = [True, True, False, True] + [False] * 4
    np.testing.assert_array_equal(load_data(root, labels=labels)[0].soz, expected)
    vhdr = root / pd.read_csv(root / "cohort.tsv", sep="\t")["path"][0]
    proc = _cli("score", m.model_dir, vhdr, "--labels", labels, "--out", tmp / "scores")
    assert proc.returncode == 0, proc.stderr
    channels = pd.read_csv(tmp / "scores" / "channels.csv").set_index("channel")
    assert channels["label"].to_dict() == {c: int(s) for c, s in zip(rec.ch_names, expected)}


@case("4-cli-evaluate-excludes-unnamed-subjects")
def case_4_cli_evaluate_excludes_unnamed_subjects(m: Material, tmp: Path, caplog):
    labels = _labels_file(tmp / "labels.tsv", [("toy00", "A1", 1), ("toy00", "A2", 0), ("toy02", "A1", 1)])
    proc = _cli("evaluate", m.model_dir, m.toy_cohort, "--all", "--json", "--labels", labels)
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    assert report["n_recordings"] == 2 and report["n_soz"] == 2
    assert "names no label for 2 subject(s) of the data: toy01, toy03" in proc.stderr
    assert "2 of 4 recordings left out" in proc.stderr


@case("4-cli-train-with-labels-naming-no-subject-refused")
def case_4_cli_train_with_labels_naming_no_subject_refused(m: Material, tmp: Path, caplog):
    labels = _labels_file(tmp / "labels.tsv", [("nobody", "A1", 1)])
    _one_line_error(
        _cli("train", m.toy_cohort, "--labels", labels, "--out", tmp / "model"), "No recording left", str(labels)
    )
    assert not (tmp / "model").exists()


# ------------------------------------------------------------------------------------------------
# 5. Model files: checksummed weights, swapped in whole
# ------------------------------------------------------------------------------------------------


def _model_copy(m: Material, tmp: Path) -> Path:
    return Path(shutil.copytree(m.model_dir, tmp / "model"))


@case("5-weights-bytes-flipped-refused")
def case_5_weights_bytes_flipped_refused(m: Material, tmp: Path, caplog):
    model = _model_copy(m, tmp)
    weights = bytearray((model / WEIGHTS_FILE).read_bytes())
    header = 8 + int.from_bytes(weights[:8], "little")
    weights[header + 100] ^= 0xFF  # header intact: safetensors alone would load it
    (model / WEIGHTS_FILE).write_bytes(bytes(weights))
    with pytest.raises(
        ValueError,
        match=rf"Model directory {re.escape(str(model))}: {WEIGHTS_FILE} does not match the SHA-256 recorded in {CONFIG_FILE}",
    ):
        ModelBundle.load(model)


@case("5-new-weights-with-old-config-refused")
def case_5_new_weights_with_old_config_refused(m: Material, tmp: Path, caplog):
    model = _model_copy(m, tmp)
    dataclasses.replace(m.bundle, model=model_from_config(m.bundle.model.get_config())).save(tmp / "other")
    shutil.copyfile(
        tmp / "other" / WEIGHTS_FILE, model / WEIGHTS_FILE
    )  # as a kill between two file replacements left it
    with pytest.raises(ValueError, match=r"does not match the SHA-256 recorded"):
        ModelBundle.load(model)
    _one_line_error(_cli("score", model, m.toy_file, "--out", tmp / "out"), str(model), HASH_KEY)


@case("5-legacy-model-without-hash-loads-with-warning")
def case_5_legacy_model_without_hash_loads_with_warning(m: Material, tmp: Path, caplog):
    model = _model_copy(m, tmp)
    config = json.loads((model / CONFIG_FILE).read_text())
    del config[HASH_KEY]
    (model / CONFIG_FILE).write_text(json.dumps(config))
    with caplog.at_level(logging.WARNING, logger="sss_viewer.engine.bundle"):
        bundle = ModelBundle.load(model)
    assert bundle.threshold == m.bundle.threshold
    assert f"{model / CONFIG_FILE} records no {HASH_KEY}" in caplog.text


@case("5-bundled-demo-model-carries-its-hash")
def case_5_bundled_demo_model_carries_its_hash(m: Material, tmp: Path, caplog):
    demo = Path(sss_viewer.__file__).parent / "data" / "demo" / "model"
    config = json.loads((demo / CONFIG_FILE).read_text())
    assert config[HASH_KEY] == hashlib.sha256((demo / WEIGHTS_FILE).read_bytes()).hexdigest()
    with caplog.at_level(logging.WARNING, logger="sss_viewer.engine.bundle"):
        ModelBundle.load(demo)
    assert [r.getMessage() for r in caplog.records if r.name == "sss_viewer.engine.bundle"] == []


@case("5-save-replaces-whole-directory-never-foreign-files")
def case_5_save_replaces_whole_directory_never_foreign_files(m: Material, tmp: Path, caplog):
    model = _model_copy(m, tmp)
    changed = dataclasses.replace(m.bundle, threshold=0.125)
    changed.save(model)
    assert ModelBundle.load(model).threshold == 0.125
    assert sorted(p.name for p in tmp.iterdir()) == ["model"]  # no temporary or old folder left
    (model / "notes.txt").write_text("mine")
    with pytest.raises(
        ValueError,
        match=rf"Cannot save a model to {re.escape(str(model))}: it holds files that are not part of a model directory \(notes\.txt\)",
    ):
        m.bundle.save(model)
    assert (model / "notes.txt").read_text() == "mine" and ModelBundle.load(model).threshold == 0.125


SAVER = """
import copy, sys, dataclasses
from sss_viewer.engine.bundle import ModelBundle
a = ModelBundle.load(sys.argv[1])
b = dataclasses.replace(a, threshold=0.125, model=copy.deepcopy(a.model))
b.model.load_state_dict({k: v + 1 for k, v in a.model.state_dict().items()})
i = 0
while True:
    (a if i % 2 else b).save(sys.argv[2])
    i += 1
    if i == 2:
        print("saving", flush=True)
"""


@case("5-concurrent-saves-and-a-kill-never-show-a-mix")
def case_5_concurrent_saves_and_a_kill_never_show_a_mix(m: Material, tmp: Path, caplog):
    target = tmp / "model"
    saver = subprocess.Popen(
        [sys.executable, "-c", SAVER, str(m.model_dir), str(target)], stdout=subprocess.PIPE, text=True
    )
    try:
        assert saver.stdout.readline().strip() == "saving"
        weights_of = {}
        deadline, loads = time.monotonic() + 3.0, 0
        while time.monotonic() < deadline:
            bundle = ModelBundle.load(target)  # raises on a mix of the two models' files
            first = next(iter(bundle.model.state_dict().values())).flatten()[0].item()
            assert weights_of.setdefault(bundle.threshold, first) == first
            loads += 1
    finally:
        saver.send_signal(signal.SIGKILL)
        saver.wait()
        saver.stdout.close()
    assert loads > 10 and set(weights_of) == {m.bundle.threshold, 0.125}
    ModelBundle.load(target)  # whatever the kill interrupted, the directory holds one whole model
    m.bundle.save(target)  # the next save clears what the killed process left
    assert sorted(p.name for p in tmp.iterdir()) == ["model"]


# ------------------------------------------------------------------------------------------------
# 6. Model config values are validated on load, errors naming the file and the key
# ------------------------------------------------------------------------------------------------


def _set(*keys_value):
    *keys, value = keys_value

    def edit(config):
        target = config
        for key in keys[:-1]:
            target = target[key]
        target[keys[-1]] = value

    return edit


CONFIG_EDITS = {
    "threshold-5": (_set("threshold", 5), "'threshold' must be a finite number in [0, 1]; got 5"),
    "threshold-nan": (_set("threshold", float("nan")), "'threshold' must be a finite number in [0, 1]; got nan"),
    "threshold-text": (_set("threshold", "0.5"), "'threshold' must be a finite number in [0, 1]; got '0.5'"),
    "window-length-abc": (_set("window_length", "abc"), "'window_length' must be an integer ≥ 1; got 'abc'"),
    "window-length-float": (_set("window_length", 128.0), "'window_length' must be an integer ≥ 1; got 128.0"),
    "window-length-not-the-models": (
        _set("window_length", 256),
        "'window_length' must be the model's own window length (128); got 256",
    ),
    "inference-stride-0": (_set("inference_stride", 0), "'inference_stride' must be an integer ≥ 1; got 0"),
    "preprocess-null": (_set("preprocess", None), "'preprocess' must be a JSON object (mapping); got None"),
    "preprocess-rate-text": (
        _set("preprocess", "target_sfreq", "250"),
        "'preprocess.target_sfreq' must be a positive number of Hz or null; got '250'",
    ),
    "preprocess-pool-float": (
        _set("preprocess", "pool_kernel", 2.5),
        "'preprocess.pool_kernel' must be an integer ≥ 1; got 2.5",
    ),
    "preprocess-native-rate-text": (
        _set("preprocess", "native_sfreqs", ["fast"]),
        "'preprocess.native_sfreqs' must be a list of positive rates",
    ),
    "info-text": (_set("info", "trained yesterday"), "'info' must be a JSON object (mapping); got 'trained yesterday'"),
    "model-null": (_set("model", None), "'model' must be a JSON object (mapping); got None"),
    "hash-not-hex": (
        _set(HASH_KEY, "xyz"),
        f"'{HASH_KEY}' must be the SHA-256 of the weights (64 hex digits); got 'xyz'",
    ),
}


def _config_case(name: str, edit, expected: str):
    def config_case(m: Material, tmp: Path, caplog):
        model = _model_copy(m, tmp)
        config = json.loads((model / CONFIG_FILE).read_text())
        edit(config)
        (model / CONFIG_FILE).write_text(json.dumps(config))
        with pytest.raises(ValueError) as err:
            ModelBundle.load(model)
        assert str(err.value).startswith(f"Invalid model config {model / CONFIG_FILE}: ") and expected in str(err.value)
        assert "\n" not in str(err.value)

    config_case.__name__ = config_case.__qualname__ = "case_6_config_" + re.sub(r"\W+", "_", name)
    case(f"6-config-{name}")(config_case)


for _name, (_edit, _expected) in CONFIG_EDITS.items():
    _config_case(_name, _edit, _expected)


@case("6-cli-score-with-invalid-config-one-line")
def case_6_cli_score_with_invalid_config_one_line(m: Material, tmp: Path, caplog):
    model = _model_copy(m, tmp)
    config = json.loads((model / CONFIG_FILE).read_text())
    (model / CONFIG_FILE).write_text(json.dumps({**config, "window_length": "abc"}))
    _one_line_error(_cli("score", model, m.toy_file, "--out", tmp / "out"), str(model / CONFIG_FILE), "'window_length'")


# ------------------------------------------------------------------------------------------------
# 7. Native-rate models record their rate and refuse others
# ------------------------------------------------------------------------------------------------


@case("7-native-model-records-its-rate")
def case_7_native_model_records_its_rate(m: Material, tmp: Path, caplog):
    config = json.loads((m.model_dir / CONFIG_FILE).read_text())
    assert config["preprocess"]["target_sfreq"] is None and config["preprocess"]["native_sfreqs"] == [250.0]


@case("7-train-on-mixed-native-rates-refused")
def case_7_train_on_mixed_native_rates_refused(m: Material, tmp: Path, caplog):
    recordings = m.toy[:4] + [toy_recording(f"fast{i}", i, duration_s=10.0, sfreq=500.0) for i in range(2)]
    with pytest.raises(
        ValueError, match=r"sampled at 250 Hz \(4\), 500 Hz \(2\): windows of one length .* --target-sfreq"
    ):
        train(recordings, _native(train_preset("default", **TINY_TRAIN)), progress=False)


@case("7-cli-train-target-sfreq-0-mixed-rates-refused")
def case_7_cli_train_target_sfreq_0_mixed_rates_refused(m: Material, tmp: Path, caplog):
    recordings = [toy_recording(f"mix{i}", i, duration_s=12.0, sfreq=(250.0, 500.0)[i % 2]) for i in range(4)]
    root = _write_cohort(tmp / "cohort", recordings)
    proc = _cli("train", root, "--target-sfreq", "0", "--out", tmp / "model")
    _one_line_error(proc, "250 Hz (2), 500 Hz (2)", "--target-sfreq")
    assert not (tmp / "model").exists()


@case("7-paper-preset-pools-mixed-rates-with-a-warning")
def case_7_paper_preset_pools_mixed_rates_with_a_warning(m: Material, tmp: Path, caplog):
    assert train_preset("paper").mixed_native_rates
    with caplog.at_level(logging.WARNING, logger="sss_viewer.preprocessing.config"):
        assert native_rates([500.0, 1000.0, 999.41], allow_mixed=True) == (500.0, 999.41)
    assert "keep their native rates, which differ: 500 Hz (1), 999.41 Hz (2)" in caplog.text


@case("7-score-other-rate-refused-api")
def case_7_score_other_rate_refused_api(m: Material, tmp: Path, caplog):
    rec = toy_recording("slow", 5, duration_s=20.0, sfreq=100.0)
    with pytest.raises(
        ValueError, match=r"sampled at 100 Hz, but the model keeps native rates and was trained on 250 Hz"
    ):
        score_recording(m.bundle, rec, device="cpu", progress=False)


@case("7-score-other-rate-refused-cli")
def case_7_score_other_rate_refused_cli(m: Material, tmp: Path, caplog):
    vhdr = _write_vhdr(tmp, "fast", toy_recording("fast", 6, duration_s=20.0, sfreq=500.0))
    _one_line_error(_cli("score", m.model_dir, vhdr, "--out", tmp / "out"), "sampled at 500 Hz", "trained on 250 Hz")
    assert not (tmp / "out" / "windows.csv").exists()


@case("7-viewer-check-fit-follows-the-engine")
def case_7_viewer_check_fit_follows_the_engine(m: Material, tmp: Path, caplog):
    from sss_viewer.engine.inference import check_fit

    assert "trained on 250 Hz" in check_fit(m.bundle, toy_recording("fast", 6, duration_s=20.0, sfreq=500.0))
    assert check_fit(m.bundle, toy_recording("same", 6, duration_s=20.0, sfreq=250.0)) is None


@case("7-same-rate-scores")
def case_7_same_rate_scores(m: Material, tmp: Path, caplog):
    result = score_recording(m.bundle, read_recording(m.toy_file), device="cpu", progress=False)
    assert len(result.channels) == 8 and result.channels["score"].between(0, 1).all()


# ------------------------------------------------------------------------------------------------
# 8. Huge values keep their resolution
# ------------------------------------------------------------------------------------------------

OFFSET_UV = 1e9


def _fif_with_offset(path: Path, rec: Recording, channel: int, offset_uv: float) -> Path:
    data = rec.data.astype(np.float64)
    data[channel] += offset_uv
    info = mne.create_info(rec.ch_names, rec.sfreq, "seeg")
    mne.io.RawArray(data * 1e-6, info, verbose="error").save(path, fmt="double", verbose="error")
    return path


@case("8-fif-offset-removed-in-float64")
def case_8_fif_offset_removed_in_float64(m: Material, tmp: Path, caplog):
    rec = toy_recording("big", 4, duration_s=20.0)
    with caplog.at_level(logging.WARNING, logger="sss_viewer.io.readers"):
        read = read_recording(_fif_with_offset(tmp / "big_raw.fif", rec, 4, OFFSET_UV), preload=True)
    assert np.unique(read.data[4]).size > 4000  # not a handful of float32 levels
    residual = read.data[4].astype(np.float64) - rec.data[4]
    np.testing.assert_allclose(residual, residual[0], atol=1e-3)  # the signal kept to 0.001 µV, a constant removed
    assert set(read.info["dc_offsets_uv"]) == {"A5"} and read.info["dc_offsets_uv"]["A5"] == pytest.approx(
        OFFSET_UV, rel=1e-6
    )
    assert "1 channel(s) sit on a level above 100000 µV" in caplog.text and "A5 (1e+09 µV)" in caplog.text


@case("8-npz-offset-removed-in-float64")
def case_8_npz_offset_removed_in_float64(m: Material, tmp: Path, caplog):
    rec = toy_recording("big", 4, duration_s=20.0)
    data = rec.data.astype(np.float64)
    data[2] += OFFSET_UV
    np.savez(tmp / "big.npz", data=data, ch_names=rec.ch_names, fs=rec.sfreq)
    read = read_recording(tmp / "big.npz")
    residual = read.data[2].astype(np.float64) - rec.data[2]
    np.testing.assert_allclose(residual, residual[0], atol=1e-3)
    assert list(read.info["dc_offsets_uv"]) == ["A3"]


@case("8-offset-channel-keeps-its-rank")
def case_8_offset_channel_keeps_its_rank(m: Material, tmp: Path, caplog):
    rec = toy_recording("big", 4, duration_s=20.0)
    clean = score_recording(
        m.bundle, read_recording(_fif_with_offset(tmp / "a_raw.fif", rec, 4, 0.0)), device="cpu", progress=False
    )
    offset = score_recording(
        m.bundle, read_recording(_fif_with_offset(tmp / "b_raw.fif", rec, 4, OFFSET_UV)), device="cpu", progress=False
    )
    pd.testing.assert_frame_equal(clean.channels[["channel", "rank"]], offset.channels[["channel", "rank"]])
    np.testing.assert_allclose(clean.channels["score"], offset.channels["score"], atol=1e-4)


@case("8-ordinary-levels-untouched")
def case_8_ordinary_levels_untouched(m: Material, tmp: Path, caplog):
    rec = toy_recording("small", 4, duration_s=20.0)
    path = _fif_with_offset(tmp / "small_raw.fif", rec, 4, 5e4)  # 50 mV: below the limit, data exactly as stored
    read = read_recording(path, preload=True)
    raw = mne.io.read_raw_fif(path, verbose="error")
    np.testing.assert_array_equal(read.data, (raw.get_data() * 1e6).astype(np.float32))
    assert read.info["dc_offsets_uv"] == {}


# ------------------------------------------------------------------------------------------------
# 9. score --out never mixes runs
# ------------------------------------------------------------------------------------------------


@case("9-score-into-non-empty-folder-refused")
def case_9_score_into_non_empty_folder_refused(m: Material, tmp: Path, caplog):
    out = tmp / "out"
    out.mkdir()
    (out / "notes.txt").write_text("mine")
    _one_line_error(
        _cli("score", m.model_dir, m.toy_file, "--out", out),
        f"Output folder {out} is not empty (notes.txt)",
        "--overwrite",
    )
    assert sorted(p.name for p in out.iterdir()) == ["notes.txt"]


@case("9-overwrite-removes-the-previous-run-only")
def case_9_overwrite_removes_the_previous_run_only(m: Material, tmp: Path, caplog):
    flat = toy_recording("flat", 8, duration_s=20.0)
    flat.data[3] = 0.0  # excluded: flat signal
    first = _write_vhdr(tmp / "a", "flat", flat)
    out = tmp / "out"
    assert _cli("score", m.model_dir, first, "--out", out).returncode == 0
    assert (out / "excluded.csv").is_file()
    (out / "notes.txt").write_text("mine")
    proc = _cli("score", m.model_dir, m.toy_file, "--out", out, "--overwrite")
    assert proc.returncode == 0, proc.stderr
    assert sorted(p.name for p in out.iterdir()) == [
        "channels.csv",
        "notes.txt",
        "sss-viewer-score.json",
        "windows.csv",
    ]
    assert json.loads((out / "sss-viewer-score.json").read_text())["files"] == ["windows.csv", "channels.csv"]
    assert len(pd.read_csv(out / "channels.csv")) == 8


# ------------------------------------------------------------------------------------------------
# 11. A full disk: checked before a cache entry, every failure names the path, nothing left behind
# ------------------------------------------------------------------------------------------------


@contextlib.contextmanager
def _tmpfs(path: Path, size: str):
    """A real, small tmpfs mounted at ``path`` for the block (the row is skipped where mounting is not allowed)."""
    path.mkdir(parents=True, exist_ok=True)
    proc = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(path)], capture_output=True, text=True
    )
    if proc.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here (needs root): {proc.stderr.strip()}")
    try:
        yield path
    finally:
        subprocess.run(["umount", "-l", str(path)], check=True)


def _leftovers(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.rglob("*") if ".tmp" in p.name or p.name.startswith(".discard"))


@case("11-cache-entry-larger-than-free-space-refused")
def case_11_cache_entry_larger_than_free_space_refused(m: Material, tmp: Path, caplog):
    vhdr = _write_vhdr(tmp, "long", toy_recording("long", 3, duration_s=200.0))  # entry: 8 × 50000 float32 = 1.6 MB
    with _tmpfs(tmp / "small", "2m") as small:
        cache = SeriesCache(small / "cache")
        with pytest.raises(
            OSError,
            match=rf"Not enough free space in the cache directory {re.escape(str(small / 'cache'))} for .*need 1\.5 MiB, [\d.]+ MiB are free\. .*--no-cache",
        ):
            cache.load_or_build(read_recording(vhdr), np.arange(8), preprocess_preset("default", target_sfreq=None))
        assert _leftovers(small) == [] and [p.name for p in (small / "cache").iterdir()] == ["file_digests.json"]


@case("11-cache-reservation-on-full-disk-is-enospc-not-sigbus")
def case_11_cache_reservation_on_full_disk_is_enospc_not_sigbus(m: Material, tmp: Path, caplog):
    from sss_viewer.preprocessing.cache import _reserve

    with _tmpfs(tmp / "small", "1m") as small:
        with pytest.raises(OSError) as err:
            _reserve(small / "series.f32", 4 * 2**20)  # what the memmap would have hit as SIGBUS while writing
        assert err.value.errno == 28


@case("11-cli-score-cache-on-full-disk-one-line")
def case_11_cli_score_cache_on_full_disk_one_line(m: Material, tmp: Path, caplog):
    vhdr = _write_vhdr(tmp, "long", toy_recording("long", 3, duration_s=200.0))
    with _tmpfs(tmp / "small", "2m") as small:
        proc = _cli("score", m.model_dir, vhdr, "--out", tmp / "out", "--cache-dir", small / "cache")
        _one_line_error(proc, f"Not enough free space in the cache directory {small / 'cache'}", "--no-cache")
        assert _leftovers(small) == [] and not (tmp / "out" / "windows.csv").exists()


@case("11-cli-score-csv-on-full-disk-names-the-file")
def case_11_cli_score_csv_on_full_disk_names_the_file(m: Material, tmp: Path, caplog):
    vhdr = _write_vhdr(tmp, "long", toy_recording("long", 3, duration_s=200.0))  # windows.csv ≈ 0.5 MB
    with _tmpfs(tmp / "small", "64k") as small:
        proc = _cli("score", m.model_dir, vhdr, "--out", small / "out", "--no-cache")
        _one_line_error(proc, f"Cannot write {small / 'out' / 'windows.csv'}: No space left on device")
        assert _leftovers(small) == [] and not (small / "out" / "windows.csv").exists()


@case("11-model-save-on-full-disk-names-the-folder")
def case_11_model_save_on_full_disk_names_the_folder(m: Material, tmp: Path, caplog):
    with _tmpfs(tmp / "small", "16k") as small:
        with pytest.raises(
            OSError, match=rf"Cannot save the model to {re.escape(str(small / 'model'))}: No space left on device"
        ):
            m.bundle.save(small / "model")  # what `train` does last
        assert sorted(p.name for p in small.iterdir()) == []


@case("11-stale-cache-temporaries-of-dead-processes-removed")
def case_11_stale_cache_temporaries_of_dead_processes_removed(m: Material, tmp: Path, caplog):
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    dead_pid = int(dead.stdout)
    from sss_viewer.preprocessing.cache import _HOST, FOREIGN_TEMPORARY_AGE_S

    root = tmp / "cache"
    gone = [
        f".tmp-{'a' * 64}-{dead_pid}@{_HOST}",
        f".discard-{'b' * 64}-{dead_pid}@{_HOST}",
        f".tmp-{'d' * 64}-{dead_pid}",  # named before hosts were recorded
        f".tmp-{'e' * 64}-{dead_pid}@other-node.example",
    ]  # another machine's, abandoned long ago
    kept = [
        f".tmp-{'c' * 64}-{os.getpid()}@{_HOST}",  # a live build
        f".tmp-{'f' * 64}-{dead_pid}@other-node.example",
    ]  # another machine's pid means nothing here
    for name in gone + kept:
        (root / name).mkdir(parents=True)
        (root / name / "series.f32").write_bytes(b"\0" * 64)
    old = time.time() - FOREIGN_TEMPORARY_AGE_S - 60
    os.utime(root / gone[-1], (old, old))
    SeriesCache(root)
    assert sorted(p.name for p in root.iterdir()) == sorted(kept)


KILLED_BUILD = """
import sys
from sss_viewer.preprocessing.cache import SeriesCache
from sss_viewer.io.readers import read_recording
from sss_viewer.preprocessing.config import preprocess_preset
import numpy as np
print("building", flush=True)
SeriesCache(sys.argv[2]).load_or_build(read_recording(sys.argv[1]), np.arange(8), preprocess_preset("default", target_sfreq=None), chunk_seconds=1.0)
"""


@case("11-killed-cache-build-cleaned-at-next-start")
def case_11_killed_cache_build_cleaned_at_next_start(m: Material, tmp: Path, caplog):
    vhdr = _write_vhdr(tmp, "long", toy_recording("long", 3, duration_s=600.0))
    root = tmp / "cache"
    builder = subprocess.Popen(
        [sys.executable, "-c", KILLED_BUILD, str(vhdr), str(root)], stdout=subprocess.PIPE, text=True
    )
    try:
        assert builder.stdout.readline().strip() == "building"
        deadline = time.monotonic() + 60
        while not list(root.glob(".tmp-*/series.f32")) and time.monotonic() < deadline:
            time.sleep(0.01)
        assert list(root.glob(".tmp-*")), "the build never started"
    finally:
        builder.send_signal(signal.SIGKILL)
        builder.wait()
        builder.stdout.close()
    if not list(root.glob(".tmp-*")):
        pytest.fail("the build finished before the kill; make the recording longer")
    config = preprocess_preset("default", target_sfreq=None)
    series = SeriesCache(root).load_or_build(read_recording(vhdr), np.arange(8), config)
    assert _leftovers(root) == [] and series.lengths.tolist() == [150_000] * 8


# ------------------------------------------------------------------------------------------------
# 12. A model config's sizes are checked against the weights file before anything is allocated
# ------------------------------------------------------------------------------------------------


def _other_backbone(m: Material, tmp: Path, name: str, **params) -> Path:
    from sss_viewer.models import build_model

    return dataclasses.replace(m.bundle, model=build_model(name, **params)).save(tmp / "model")


def _peak_rss_mb() -> float:
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


@case("12-huge-d-hidden-refused-before-allocation")
def case_12_huge_d_hidden_refused_before_allocation(m: Material, tmp: Path, caplog):
    model = _other_backbone(m, tmp, "dlinear", window_length=128, d_hidden=32)
    config = json.loads((model / CONFIG_FILE).read_text())
    config["model"]["d_hidden"] = 1_000_000  # 2 × 128 M float32 = 1 GB if built
    (model / CONFIG_FILE).write_text(json.dumps(config))
    before = _peak_rss_mb()
    with pytest.raises(ValueError) as err:
        ModelBundle.load(model)
    assert _peak_rss_mb() - before < 200
    message = str(err.value)
    assert (
        message.startswith(f"Invalid model config {model / CONFIG_FILE}: 'model' describes tensor ")
        and "\n" not in message
    )
    assert re.search(
        r"of shape \([^)]*1000000[^)]*\) \(from model\.d_hidden\), but model\.safetensors holds \([^)]*32[^)]*\)",
        message,
    ), message


@case("12-huge-num-features-refused-before-allocation")
def case_12_huge_num_features_refused_before_allocation(m: Material, tmp: Path, caplog):
    model = _other_backbone(m, tmp, "minirocket", input_length=128, num_features=840)
    config = json.loads((model / CONFIG_FILE).read_text())
    config["model"]["num_features"] = 10_000_000_000
    (model / CONFIG_FILE).write_text(json.dumps(config))
    with pytest.raises(
        ValueError,
        match=rf"Invalid model config {re.escape(str(model / CONFIG_FILE))}: 'model\.num_features' must be a size consistent with model\.safetensors \([\d,]+ values in all\); got 10000000000\.",
    ):
        ModelBundle.load(model)
    _one_line_error(
        _cli("score", model, m.toy_file, "--out", tmp / "out"), str(model / CONFIG_FILE), "model.num_features"
    )


@case("12-config-of-other-sizes-refused-by-shape")
def case_12_config_of_other_sizes_refused_by_shape(m: Material, tmp: Path, caplog):
    model = _model_copy(m, tmp)
    config = json.loads((model / CONFIG_FILE).read_text())
    config["model"]["d_model"] = 24  # the trained PatchTST has 16
    (model / CONFIG_FILE).write_text(json.dumps(config))
    with pytest.raises(
        ValueError,
        match=r"'model' describes tensor '.+' of shape \(.*24.*\) \(from model\.d_model\), but model\.safetensors holds",
    ):
        ModelBundle.load(model)


@case("12-matching-sizes-load")
def case_12_matching_sizes_load(m: Material, tmp: Path, caplog):
    model = _other_backbone(m, tmp, "dlinear", window_length=128, d_hidden=32)
    assert ModelBundle.load(model).model.get_config()["d_hidden"] == 32


# ------------------------------------------------------------------------------------------------
# 13. Corrupt index, long file names, NaN weights, a failing run of a folder, Ctrl-C
# ------------------------------------------------------------------------------------------------


@case("13-cache-index-json-corrupt-rebuilt-naming-it")
def case_13_cache_index_json_corrupt_rebuilt_naming_it(m: Material, tmp: Path, caplog):
    cache, config, picks = SeriesCache(tmp / "cache"), preprocess_preset("default", target_sfreq=None), np.arange(8)
    expected = np.array(cache.load_or_build(read_recording(m.toy_file), picks, config).data)
    index = next((tmp / "cache").glob("*/index.json"))
    index.write_text(index.read_text().replace(",", " ", 1))
    with caplog.at_level(logging.WARNING, logger="sss_viewer.preprocessing.cache"):
        again = SeriesCache(tmp / "cache").load_or_build(read_recording(m.toy_file), picks, config)
    assert f"({index} is not valid JSON: Expecting ',' delimiter" in caplog.text
    np.testing.assert_array_equal(again.data, expected)


@case("13-browser-file-name-too-long")
def case_13_browser_file_name_too_long(m: Material, tmp: Path, caplog):
    from sss_viewer.viewer._loader import RecordingBrowser

    browser = RecordingBrowser(data_root=str(tmp))
    name = "a" * 300 + ".vhdr"
    browser.path = name
    assert browser.selected is None
    assert browser.error == f"Cannot open {name!r} in the data root {tmp}: File name too long."
    browser.folder = "b" * 300
    assert browser.error.startswith(f"Cannot list the folder {'b' * 300!r} of the data root {tmp}")


@case("13-nan-weights-name-the-model-directory")
def case_13_nan_weights_name_the_model_directory(m: Material, tmp: Path, caplog):
    import copy

    bundle = dataclasses.replace(m.bundle, model=copy.deepcopy(m.bundle.model))
    next(iter(bundle.model.parameters())).data[0] = float("nan")  # a diverged training, saved with its checksum
    model = bundle.save(tmp / "model")
    with pytest.raises(
        ValueError,
        match=rf"Model directory {re.escape(str(model))}: model\.safetensors holds non-finite values \(NaN or infinity\) in '.+'",
    ):
        ModelBundle.load(model)
    _one_line_error(_cli("score", model, m.toy_file, "--out", tmp / "out"), str(model), "non-finite")


@case("13-cli-score-folder-with-a-failing-run-exits-non-zero")
def case_13_cli_score_folder_with_a_failing_run_exits_non_zero(m: Material, tmp: Path, caplog):
    recordings = [toy_recording(f"toy{i:02d}", i, duration_s=20.0, sfreq=500.0 if i == 2 else 250.0) for i in range(3)]
    root = _write_cohort(tmp / "cohort", recordings)
    proc = _cli("score", m.model_dir, root, "--out", tmp / "out")
    error = _one_line_error(proc, f"1 of 3 run(s) of {root} not scored: sub-toy02", f"the others are in {tmp / 'out'}")
    assert "sampled at 500 Hz" in proc.stderr, error
    scored = sorted(p.parent.name for p in (tmp / "out").glob("*/channels.csv"))
    assert len(scored) == 2 and not any("toy02" in s for s in scored)


def _signal_masks(pid: int) -> str:
    """The ``SigBlk``/``SigIgn``/``SigCgt`` lines of a process (Linux), for a failure message."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError as exc:
        return f"unreadable ({exc})"
    return "; ".join(line for line in status.splitlines() if line.startswith(("SigBlk", "SigIgn", "SigCgt")))


@case("13-sigint-during-training-one-line-exit-130")
def case_13_sigint_during_training_one_line_exit_130(m: Material, tmp: Path, caplog):
    root = _write_cohort(tmp / "cohort", m.toy)
    args = [
        "train",
        root,
        "--out",
        tmp / "model",
        "--epochs",
        "200",
        "--window-length",
        "128",
        "--train-stride",
        "1",
        "--batch-size",
        "64",
        "--target-sfreq",
        "0",
        "--device",
        "cpu",
        "--cache-dir",
        tmp / "cache",
    ]
    # A job started in the background by a non-interactive shell (as CI may start this suite) inherits
    # SIGINT *ignored* (POSIX), and Python then installs no Ctrl-C handler: seen in CI as
    # "SigIgn: ...1006". The child gets the default disposition back, as in a terminal.
    restore_sigint = (
        "import os, signal, sys; signal.signal(signal.SIGINT, signal.SIG_DFL); os.execv(sys.argv[1], sys.argv[1:])"
    )
    proc = subprocess.Popen(
        [sys.executable, "-c", restore_sigint, str(CLI), *map(str, args)],
        stderr=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    lines = []
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            lines.append(proc.stderr.readline())
            if "training on" in lines[-1] or lines[-1] == "":
                break
        assert "training on" in lines[-1], "".join(lines)[-2000:]
        time.sleep(0.5)
        masks = _signal_masks(proc.pid)  # for the failure message: blocked, ignored and caught signals
        proc.send_signal(signal.SIGINT)
        try:
            _, rest = proc.communicate(timeout=120)
        except subprocess.TimeoutExpired:
            raise AssertionError(f"no exit 120 s after SIGINT; the child's signal masks then: {masks}") from None
    finally:
        if proc.poll() is None:  # reap it and close its pipes, or later tests see unraisable warnings
            proc.kill()
            proc.communicate()
    assert proc.returncode == 130, rest[-2000:]
    assert "Traceback" not in rest and [line for line in rest.splitlines() if line.startswith("error:")] == [
        f"error: interrupted; no partial model was written to {tmp / 'model'}."
    ]
    assert not (tmp / "model").exists() and not [p for p in tmp.iterdir() if p.name.startswith(".")]
    assert _leftovers(tmp / "cache") == []


# ------------------------------------------------------------------------------------------------
# 15. Outputs get the usual permissions; messages show plain values
# ------------------------------------------------------------------------------------------------


@case("15-csv-and-model-files-follow-the-umask")
def case_15_csv_and_model_files_follow_the_umask(m: Material, tmp: Path, caplog):
    for umask, mode in ((0o022, 0o644), (0o077, 0o600)):
        out = tmp / f"out-{umask:o}"
        proc = subprocess.run(
            [str(CLI), "score", str(m.model_dir), str(m.toy_file), "--out", str(out), "-q"],
            capture_output=True,
            text=True,
            timeout=180,
            preexec_fn=lambda u=umask: os.umask(u),
        )
        assert proc.returncode == 0, proc.stderr
        assert {p.name: p.stat().st_mode & 0o777 for p in out.iterdir()} == dict.fromkeys(
            ["windows.csv", "channels.csv", "sss-viewer-score.json"], mode
        )
    old = os.umask(0o022)
    try:
        model = m.bundle.save(tmp / "model")
    finally:
        os.umask(old)
    assert {p.name: p.stat().st_mode & 0o777 for p in model.iterdir()} == {WEIGHTS_FILE: 0o644, CONFIG_FILE: 0o644}


@case("15-one-class-split-error-shows-plain-values")
def case_15_one_class_split_error_shows_plain_values(m: Material, tmp: Path, caplog):
    recordings = [dataclasses.replace(r, soz=np.zeros(r.n_channels, dtype=bool)) for r in m.toy]
    with pytest.raises(ValueError) as err:
        train(recordings, _native(train_preset("default", **TINY_TRAIN)), progress=False)
    assert "class(es) [0] only" in str(err.value) and "np." not in str(err.value)


# ------------------------------------------------------------------------------------------------


@case("concurrency-two-score-runs-on-one-cache-agree")
def case_concurrency_two_score_runs_on_one_cache_agree(m: Material, tmp: Path, caplog):
    cache = tmp / "shared-cache"
    cmds = [
        [
            str(CLI),
            "score",
            str(m.model_dir),
            str(m.toy_file),
            "--out",
            str(tmp / f"out{i}"),
            "--cache-dir",
            str(cache),
            "-q",
        ]
        for i in (1, 2)
    ]
    procs = [subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for cmd in cmds]
    results = [p.communicate(timeout=300) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], [r[1][-1500:] for r in results]
    first, second = ((tmp / f"out{i}" / "channels.csv").read_text() for i in (1, 2))
    assert first == second  # the same answer whichever process built the cache entry
    entries = [d for d in cache.rglob("index.json")]
    assert len(entries) == 1 and not list(cache.rglob(".tmp-*"))  # one complete entry, no leftovers
    again = _cli("score", m.model_dir, m.toy_file, "--out", tmp / "out3", "--cache-dir", cache)
    assert again.returncode == 0 and (tmp / "out3" / "channels.csv").read_text() == first


@pytest.mark.parametrize("row", CASES)
def test_bad_input(row, material, tmp_path, caplog):
    row(material, tmp_path, caplog)

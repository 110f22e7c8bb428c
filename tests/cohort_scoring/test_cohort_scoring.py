"""Scoring a cohort on Dask (``sss-viewer score MODEL ROOT``), with real worker processes and files.

A real ``LocalCluster`` of 2 single-threaded worker processes (started here; the CLI reaches it with
``--scheduler``, or starts its own with ``--workers``), a synthetic cohort of 3 patients × 2 runs
(6 BrainVision recordings of 6 channels, 8-60 s) and the bundled demo model. Covered: every
recording scored with its files and the cohort/patient tables; the same numbers as the single-file
``score``; a rerun skips everything without touching a file; a changed model is refused without
``--overwrite``; a corrupt recording is listed with its error while the others are scored, and is
retried on a rerun; a worker SIGKILLed while it holds a task leaves every recording scored exactly
once; the model reaches each worker once; the workers use (and reuse) the preprocessing cache; a
worker that cannot see a file says so; a BIDS root gets the runs and labels ``load_data`` gives.
About 1 minute on 2 cores.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from distributed import Client, LocalCluster

import sss_viewer
from sss_viewer.cli import EXIT_ERROR, EXIT_USAGE, main
from sss_viewer.cohort_scoring import CohortOptions, prepare_cohort, run_cohort
from sss_viewer.cohort_scoring._digests import Fingerprint, model_digest
from sss_viewer.cohort_scoring._plan import RecordingTask, find_recordings
from sss_viewer.cohort_scoring._summary import short_run_name
from sss_viewer.cohort_scoring._task import ScoreSettings, score_task
from sss_viewer.cohort_scoring.outputs import leftovers
from sss_viewer.engine.bundle import ModelBundle
from sss_viewer.evaluation.patient_ranking import rank_patient_channels
from sss_viewer.io.cohort import load_data
from tests.fixtures.bids_fixture import write_ds003029_like
from tests.fixtures.cli import one_error_line, run
from tests.fixtures.recordings import DS003029_META

DEMO_MODEL = Path(sss_viewer.__file__).parent / "data" / "demo" / "model"
SYNTH = ["--patients", "3", "--runs", "2", "--duration-scale", "0.06", "--max-channels", "6"]
"""6 recordings (3 patients × 2 runs) of 6 channels, 8.5-60 s: each longer than the demo model's 4.1-s window."""
N_RECORDINGS = 6


def local_cluster() -> LocalCluster:
    return LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0")


def cache_entries(cache: Path) -> dict[str, int]:
    """``{entry: mtime_ns of its series.f32}`` of a preprocessed-series cache."""
    return {p.parent.name: p.stat().st_mtime_ns for p in cache.glob("*/series.f32")}


def rebuilt_inputs(cache: Path, before: dict, after: dict) -> dict[str, dict]:
    """``{recording: {key input: (earlier entry's, new entry's)}}`` for entries written since ``before``: why they were keyed anew."""
    index = {key: json.loads((cache / key / "index.json").read_text()) for key in after}
    earlier = {index[key]["recording"]: index[key].get("key_inputs", {}) for key in before}
    why = {}
    for key in set(after) - set(before):
        recording, inputs = index[key]["recording"], index[key].get("key_inputs", {})
        old = earlier.get(recording, {})
        why[recording] = {
            k: (old.get(k), inputs.get(k)) for k in sorted({*old, *inputs}) if old.get(k) != inputs.get(k)
        }
    return why


def output_files(out: Path) -> dict[str, int]:
    """``{recording/file: mtime_ns}`` of every file in the recording folders of a cohort output."""
    return {f"{p.parent.name}/{p.name}": p.stat().st_mtime_ns for p in out.glob("*/*") if p.is_file()}


def cohort_csv(out: Path) -> pd.DataFrame:
    return pd.read_csv(out / "cohort.csv", dtype={"run": str, "subject": str}, keep_default_na=False, na_values=[""])


def assert_each_recording_once(out: Path, statuses=("ok",)) -> pd.DataFrame:
    """Every recording of the cohort is one row of cohort.csv and one complete folder, with no leftovers."""
    cohort = cohort_csv(out)
    assert len(cohort) == N_RECORDINGS and cohort["recording"].is_unique, cohort
    assert cohort["status"].isin(statuses).all(), cohort[["recording", "status", "error"]]
    folders = sorted(p.name for p in out.iterdir() if p.is_dir())
    assert folders == sorted(cohort["recording"])
    for name in folders:
        done = json.loads((out / name / "done.json").read_text())
        assert sorted(p.name for p in (out / name).iterdir()) == sorted([*done["files"], "done.json"])
        assert done["recording"] == name and not leftovers(out / name)
    return cohort


@pytest.fixture(scope="module")
def cohort(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("cohort-scoring") / "cohort"
    assert main(["synth", "--out", str(root), *SYNTH, "-q"]) == 0
    return root


@pytest.fixture(scope="module")
def client():
    """A client of a 2-worker LocalCluster started here (the CLI reaches it with --scheduler)."""
    with local_cluster() as cluster, Client(cluster) as client:
        yield client


@pytest.fixture(scope="module")
def scored(cohort, client, tmp_path_factory) -> tuple[Path, Path]:
    """The cohort scored by ``sss-viewer score MODEL ROOT --scheduler ADDRESS``: (output folder, cache folder)."""
    base = tmp_path_factory.mktemp("scored")
    out, cache = base / "out", base / "cache"
    where = ["--scheduler", client.scheduler.address, "--cache-dir", cache]
    assert main([str(a) for a in ["score", DEMO_MODEL, cohort, "--out", out, *where, "-q"]]) == 0
    return out, cache


@pytest.fixture(scope="module")
def api_run(cohort, client, scored, tmp_path_factory):
    """The cohort scored again through the Python API into a new folder, sharing the cache: (report, cache before, cache after)."""
    _, cache = scored
    before = cache_entries(cache)
    options = CohortOptions(cache_dir=cache, device="cpu")
    plan = prepare_cohort(DEMO_MODEL, cohort, tmp_path_factory.mktemp("api") / "out", options)
    report = run_cohort(plan, client, progress=False)
    return report, before, cache_entries(cache)


# ------------------------------------------------------------------------------------------------
# What is written
# ------------------------------------------------------------------------------------------------


def test_every_recording_is_scored_with_its_files_and_the_cohort_tables(cohort, scored):
    out, _ = scored
    table = assert_each_recording_once(out)
    listed = pd.read_csv(cohort / "cohort.tsv", sep="\t", dtype=str)
    assert sorted(table["source"]) == sorted(listed["path"]) and set(table["subject"]) == set(listed["subject"])
    assert (table["channels_scored"] == 6).all() and (table["excluded"] == 0).all()
    assert table["auc"].between(0, 1).all() and (table["n_soz"] > 0).all()  # labels.tsv labels every patient
    assert all(len(cell.split("; ")) == 5 for cell in table["top_channels"])
    manifest = json.loads((out / "sss-viewer-score.json").read_text())
    assert manifest["mode"] == "cohort" and sorted(manifest["recordings"]) == sorted(table["recording"])
    windows = pd.read_parquet(out / table["recording"][0] / "windows.parquet")
    assert list(windows.columns) == ["channel", "start_s", "end_s", "p_raw", "p_cal", "p0", "p1", "artifact"] and len(
        windows
    )


def test_patients_csv_ranks_each_patient_over_the_written_runs(scored):
    out, _ = scored
    table = cohort_csv(out)
    runs = [
        pd.read_csv(out / row.recording / "channels.csv").assign(
            subject=row.subject, run=short_run_name(row.recording, row.subject)
        )
        for row in table.itertuples()
    ]
    expected = rank_patient_channels(pd.concat(runs, ignore_index=True))
    patients = pd.read_csv(out / "patients.csv", dtype={"subject": str})
    assert (patients["n_runs"] == 2).all() and patients["subject"].nunique() == 3  # every patient has 2 runs
    pd.testing.assert_frame_equal(
        patients[["subject", "channel", "rank", "n_runs", "label"]],
        expected[["subject", "channel", "rank", "n_runs", "label"]],
        check_dtype=False,
    )
    np.testing.assert_allclose(patients["score"], expected["score"], atol=1e-6)
    assert list(patients["run_scores"]) == list(expected["run_scores"])
    assert not any("sub-" in cell or "_ieeg" in cell for cell in patients["run_scores"])  # names within the patient


def test_a_recording_scores_as_the_single_file_score_does(capsys, cohort, scored, tmp_path):
    out, _ = scored
    row = cohort_csv(out).iloc[3]
    code, _, _ = run(capsys, "score", DEMO_MODEL, cohort / row["source"], "--out", tmp_path / "one", "--no-cache", "-q")
    assert code == 0
    single = pd.read_csv(tmp_path / "one" / "channels.csv").set_index("channel")
    distributed = pd.read_csv(out / row["recording"] / "channels.csv").set_index("channel").loc[single.index]
    np.testing.assert_allclose(distributed["score"], single["score"], atol=1e-6)
    assert list(distributed["rank"]) == list(single["rank"])
    windows = pd.read_parquet(out / row["recording"] / "windows.parquet")
    single_windows = pd.read_csv(tmp_path / "one" / "windows.csv")
    assert list(windows["channel"]) == list(single_windows["channel"])
    for column in ("start_s", "end_s", "p_raw", "p_cal"):  # windows.csv keeps 6 significant digits
        np.testing.assert_allclose(windows[column], single_windows[column], rtol=1e-5, atol=1e-7)


# ------------------------------------------------------------------------------------------------
# Resuming, refusing
# ------------------------------------------------------------------------------------------------


def test_a_rerun_skips_every_recording_and_touches_no_file(capsys, cohort, scored, tmp_path):
    out = tmp_path / "out"
    shutil.copytree(scored[0], out)
    before = output_files(out)
    code, stdout, _ = run(
        capsys, "score", DEMO_MODEL, cohort, "--out", out, "--cache-dir", scored[1], "-q"
    )  # no cluster
    assert code == 0 and "6 skipped" in stdout
    assert output_files(out) == before
    assert (cohort_csv(out)["status"] == "skipped").all()
    assert cohort_csv(out).drop(columns="status").equals(cohort_csv(scored[0]).drop(columns="status"))


def test_a_changed_model_is_refused_unless_overwrite(capsys, cohort, client, scored, tmp_path):
    out, model = tmp_path / "out", tmp_path / "model"
    shutil.copytree(scored[0], out)
    shutil.copytree(DEMO_MODEL, model)
    config = json.loads((model / "config.json").read_text())
    config["threshold"] = 0.5
    (model / "config.json").write_text(json.dumps(config))
    before = output_files(out)
    where = ["--scheduler", client.scheduler.address, "--no-cache", "-q"]
    code, _, err = run(capsys, "score", model, cohort, "--out", out, *where)
    assert code == EXIT_ERROR
    one_error_line(err, out, "another model", "6 recording folder(s)", "--overwrite")
    assert output_files(out) == before
    code, _, _ = run(capsys, "score", model, cohort, "--out", out, *where, "--overwrite")
    assert code == 0
    assert_each_recording_once(out)
    recorded = {json.loads(p.read_text())["model"] for p in out.glob("*/done.json")}
    original = {json.loads(p.read_text())["model"] for p in scored[0].glob("*/done.json")}
    assert len(recorded) == 1 and recorded != original


def test_a_second_run_into_a_folder_in_use_is_refused_and_a_killed_holder_frees_it(capsys, cohort, scored, tmp_path):
    out = tmp_path / "out"
    shutil.copytree(scored[0], out)
    before = output_files(out)
    hold = (
        "import sys, time; from pathlib import Path; from sss_viewer.cohort_scoring.outputs import cohort_output_lock\n"
        "with cohort_output_lock(Path(sys.argv[1])):\n    print('held', flush=True); time.sleep(120)"
    )
    holder = subprocess.Popen([sys.executable, "-c", hold, str(out)], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        code, _, err = run(capsys, "score", DEMO_MODEL, cohort, "--out", out, "--cache-dir", scored[1], "-q")
        assert code == EXIT_ERROR
        one_error_line(err, out, "being written by another sss-viewer score run")
        assert output_files(out) == before
    finally:
        holder.kill()
        holder.communicate()
    code, stdout, _ = run(capsys, "score", DEMO_MODEL, cohort, "--out", out, "--cache-dir", scored[1], "-q")
    assert code == 0 and "6 skipped" in stdout  # a SIGKILLed holder leaves no stale lock


def test_a_folder_that_is_not_a_cohort_output_is_refused(capsys, cohort, tmp_path):
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "notes.txt").write_text("mine")
    code, _, err = run(capsys, "score", DEMO_MODEL, cohort, "--out", tmp_path / "out", "-q")
    assert code == EXIT_ERROR
    one_error_line(err, tmp_path / "out", "not empty (notes.txt)", "--overwrite")
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["notes.txt"]


@pytest.mark.parametrize(
    "extra, needle",
    [(["--workers", "2", "--scheduler", "tcp://127.0.0.1:8786"], "not allowed"), (["--workers", "0"], "at least 1")],
)
def test_workers_and_scheduler_usage_errors_exit_2(capsys, cohort, tmp_path, extra, needle):
    code, _, err = run(capsys, "score", DEMO_MODEL, cohort, "--out", tmp_path / "out", *extra, "-q")
    assert code == EXIT_USAGE and needle in err, err
    assert not (tmp_path / "out").exists()


def test_workers_apply_to_a_cohort_not_a_file(capsys, cohort, tmp_path):
    vhdr = next(cohort.glob("sub-*/*/ieeg/*_ieeg.vhdr"))
    code, _, err = run(capsys, "score", DEMO_MODEL, vhdr, "--out", tmp_path / "out", "--workers", "2", "-q")
    assert code == EXIT_USAGE and "one recording file" in err


# ------------------------------------------------------------------------------------------------
# Failures
# ------------------------------------------------------------------------------------------------


def test_a_corrupt_recording_is_listed_the_others_scored_and_it_is_retried(capsys, cohort, client, tmp_path):
    root, out = tmp_path / "cohort", tmp_path / "out"
    shutil.copytree(cohort, root)
    eeg = min(root.glob("sub-synth02/*/ieeg/*run-01_ieeg.eeg"))
    intact = eeg.read_bytes()
    eeg.write_bytes(intact[: len(intact) // 3])  # truncated: shorter than its header says
    bad = eeg.name.removesuffix(".eeg")
    # a local cluster started by the command (--workers)
    code, stdout, err = run(capsys, "score", DEMO_MODEL, root, "--out", out, "--workers", "2", "--no-cache", "-q")
    assert code == EXIT_ERROR
    one_error_line(err, f"1 of 6 run(s) of {root} not scored: {bad}", out / "cohort.csv")
    table = cohort_csv(out).set_index("recording")
    assert table.loc[bad, "status"] == "failed" and str(eeg.with_suffix(".vhdr").name) in table.loc[bad, "error"]
    assert (table.drop(index=bad)["status"] == "ok").all()
    assert not (out / bad / "done.json").exists() and f"failed {bad}" in stdout
    assert set(pd.read_csv(out / "patients.csv", dtype=str)["subject"]) == {"synth01", "synth02", "synth03"}
    # a rerun skips the 5 scored and tries the failed one again
    address = client.scheduler.address
    code, stdout, _ = run(capsys, "score", DEMO_MODEL, root, "--out", out, "--scheduler", address, "--no-cache", "-q")
    assert code == EXIT_ERROR and "0 ok, 5 skipped, 1 failed" in stdout
    eeg.write_bytes(intact)  # repaired: the next run scores it
    code, stdout, _ = run(capsys, "score", DEMO_MODEL, root, "--out", out, "--scheduler", address, "--no-cache", "-q")
    assert code == 0 and "1 ok, 5 skipped, 0 failed" in stdout
    assert_each_recording_once(out, statuses=("ok", "skipped"))


def test_a_worker_killed_while_it_holds_a_task_leaves_every_recording_scored_once(cohort, tmp_path):
    out = tmp_path / "out"
    with local_cluster() as cluster, Client(cluster) as client:
        command = [sys.executable, "-m", "sss_viewer", "score", str(DEMO_MODEL), str(cohort), "--out", str(out)]
        command += ["--scheduler", cluster.scheduler_address, "--no-cache", "-q"]
        proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            killed = None
            deadline = time.monotonic() + 120
            while killed is None and proc.poll() is None and time.monotonic() < deadline:
                if any(out.glob("*/done.json")):  # the workers are warm: tasks are being scored now
                    pids = client.run(os.getpid)
                    for address, keys in client.processing().items():
                        if any(str(k).startswith("score-") for k in keys) and address in pids:
                            os.kill(pids[address], signal.SIGKILL)
                            killed = pids[address]
                            break
                time.sleep(0.02)
            stdout, stderr = proc.communicate(timeout=180)
        finally:
            if proc.poll() is None:
                proc.kill()
        assert killed is not None, "no worker held a scoring task while the run lasted"
        assert proc.returncode == 0, stderr[-3000:]
        assert killed not in client.run(os.getpid).values()  # the nanny started a new worker process
    assert_each_recording_once(out)
    assert "6 ok, 0 skipped, 0 failed" in stdout


def test_a_worker_that_cannot_see_the_recording_fails_it_naming_the_shared_file_system(cohort, tmp_path):
    source, tasks = find_recordings(cohort)
    missing = RecordingTask("gone", tmp_path / "gone_ieeg.vhdr", "gone_ieeg.vhdr", subject="synth01")
    settings = ScoreSettings(out=tmp_path, fingerprint=Fingerprint("m", 256, "l"), device="cpu")
    result = score_task(ModelBundle.load(DEMO_MODEL), source, missing, settings)
    assert result.failed and "not found on worker" in result.row["error"] and "same path" in result.row["error"]
    settings = ScoreSettings(out=tmp_path / "elsewhere", fingerprint=Fingerprint("m", 256, "l"), device="cpu")
    result = score_task(ModelBundle.load(DEMO_MODEL), source, tasks[0], settings)
    assert result.failed and f"Output folder {tmp_path / 'elsewhere'} not found on worker" in result.row["error"]


def test_a_worker_loads_the_model_once_and_fails_recordings_when_it_cannot_see_it_or_it_was_replaced(cohort, tmp_path):
    source, tasks = find_recordings(cohort)
    model = tmp_path / "model"
    shutil.copytree(DEMO_MODEL, model)
    fingerprint = Fingerprint(model_digest(model), 256, "l")
    settings = ScoreSettings(out=tmp_path, fingerprint=fingerprint, device="cpu", model_dir=model)
    first, second = (score_task(None, source, task, settings) for task in tasks[:2])
    assert not first.failed and not second.failed and first.model_id == second.model_id != 0
    gone = ScoreSettings(out=tmp_path, fingerprint=fingerprint, device="cpu", model_dir=tmp_path / "gone")
    result = score_task(None, source, tasks[2], gone)
    assert result.failed and f"Model {tmp_path / 'gone'} not found on worker" in result.row["error"]
    config = json.loads((model / "config.json").read_text())
    (model / "config.json").write_text(json.dumps({**config, "threshold": 0.25}))  # replaced during the run
    elsewhere = ScoreSettings(out=tmp_path, fingerprint=fingerprint, device="cpu", model_dir=model.with_name("m2"))
    shutil.copytree(model, model.with_name("m2"))  # a worker that had not loaded it yet
    result = score_task(None, source, tasks[3], elsewhere)
    assert result.failed and "was replaced after this cohort run started" in result.row["error"]
    assert not (tmp_path / tasks[3].recording_id / "done.json").exists()


# ------------------------------------------------------------------------------------------------
# A BIDS root
# ------------------------------------------------------------------------------------------------


def test_a_bids_root_is_scored_with_the_runs_and_labels_load_data_gives(client, tmp_path):
    root = write_ds003029_like(DS003029_META, tmp_path / "bids", subjects=("pt01", "ummc001"), max_channels=12)
    plan = prepare_cohort(DEMO_MODEL, root, tmp_path / "out", CohortOptions(device="cpu"))
    report = run_cohort(plan, client, progress=False)
    expected = {(r.subject, r.run): r.soz is not None for r in load_data(root)}
    table = report.cohort
    assert (table["status"] == "ok").all() and len(table) == len(expected) == 4
    assert {(s, r): pd.notna(n) for s, r, n in zip(table["subject"], table["run"], table["n_soz"])} == expected
    assert set(table["centre"]) == {"NIH", "UMMC"} and set(table["session"]) == {"presurgery"}
    assert set(report.patients["subject"]) == {"pt01", "ummc001"} and (report.patients["n_runs"] == 2).all()


# ------------------------------------------------------------------------------------------------
# The model once per worker, the cache on the workers
# ------------------------------------------------------------------------------------------------


def test_the_model_reaches_each_worker_once(api_run):
    report, _, _ = api_run
    assert len(report.results) == N_RECORDINGS and report.count("ok") == N_RECORDINGS
    ids: dict[str, set[int]] = {}
    for result in report.results:
        ids.setdefault(result.worker, set()).add(result.model_id)
    assert all(len(seen) == 1 for seen in ids.values()), ids
    assert max(sum(r.worker == w for r in report.results) for w in ids) >= 2  # some worker ran several tasks


def test_workers_use_the_preprocessing_cache_and_a_second_run_reuses_it(scored, api_run):
    _, before, after = api_run
    assert len(before) == N_RECORDINGS  # the first run's workers wrote one entry per recording
    assert after == before, rebuilt_inputs(
        scored[1], before, after
    )  # the second run, into another folder, rebuilt none


def test_the_local_cluster_listens_on_loopback_only():
    """Task names are recording names (patient identifiers): nothing of a local cluster is reachable from outside."""
    from sss_viewer.cohort_scoring.cluster import dask_client

    with dask_client(workers=1) as client:
        info = client.scheduler_info()
        assert info["address"].startswith("tcp://127.0.0.1:")
        assert all(address.startswith("tcp://127.0.0.1:") for address in info["workers"])
        assert client.dashboard_link.startswith("http://127.0.0.1:")

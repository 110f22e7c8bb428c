"""Run a protocol: train and test every planned run, resumably, and tabulate the results.

Each finished run is written as ``OUT/runs/<key>.json`` (atomically) before the next starts, so an
interrupted experiment continues from its finished runs, and the final ``OUT/results.csv`` (one row
per run, in plan order) and ``OUT/tables.md`` are rebuilt from those files: a kill-and-resume gives
the same CSV as an uninterrupted run. Runs are deterministic given their seed. Each record holds a
digest of the settings that made it (:func:`run_settings_digest`): resuming after a preset changed
runs again exactly the runs whose settings changed and keeps the others.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd
from tqdm.auto import tqdm

from sss_viewer._validate import check_option
from sss_viewer.engine._feature_memo import FeatureMemo
from sss_viewer.engine._fit import channel_means
from sss_viewer.engine.config import train_preset
from sss_viewer.engine.inference import predict_window_probs
from sss_viewer.engine.training import train
from sss_viewer.experiments.memory import check_fits_in_memory
from sss_viewer.experiments.protocols import (
    BASELINES,
    FULL_FOLD,
    HYDRA_MINIROCKET_RIDGE,
    MINIROCKET_LR,
    PROTOCOLS,
    REFERENCES,
    SSS_MODEL,
    SSS_ROWS,
    WINDOW_ENSEMBLE,
    RunSpec,
    ensemble_members,
    plan_runs,
    split_for_run,
)
from sss_viewer.experiments.tables import markdown_tables
from sss_viewer.fileio import atomic_write
from sss_viewer.io.recording import Recording
from sss_viewer.metrics import binary_auc, choose_threshold, evaluate_scores
from sss_viewer.models import build_window_model
from sss_viewer.preprocessing.cache import SeriesCache
from sss_viewer.preprocessing.config import preprocess_preset
from sss_viewer.windows.series_set import SeriesSet, build_series_set
from sss_viewer.windows.store import WindowIndex

logger = logging.getLogger(__name__)

METRICS = ("f1", "auc", "accuracy", "auprc", "balanced_accuracy")


@dataclass(frozen=True)
class ExperimentPreset:
    """Sizes of an experiment: SSS training preset + overrides, whole-channel baseline settings, seeds."""

    name: str
    sss: dict = field(default_factory=dict)
    baseline: dict = field(default_factory=dict)
    seeds: tuple[int, ...] = (0, 1, 2, 3, 4)
    split_modes: tuple[str, ...] = ("channel", "patient")
    preprocess: dict = field(default_factory=dict)
    backbone_params: dict = field(default_factory=dict)
    """Model sizes per SSS backbone (``sss-<backbone>`` runs and ``backbone`` overrides)."""
    strides_follow_window: bool = True
    """A ``window_length`` override also sets the training stride to L and the scoring stride to L/4."""
    patchtst_gpu_kernels: str | None = None
    """``PatchTST(gpu_kernels=...)`` for every SSS run whose local model is PatchTST (``sss-viewer experiment
    --gpu-kernels``); ``None``: the model's default. How a GPU runs the same model, like the device: it is
    recorded in each run's record but is not a setting that decides the result (a resume with another value keeps
    the finished runs, and the whole-channel PatchTST baseline keeps torch's layers)."""


PRESETS = {
    "cpu": ExperimentPreset(
        "cpu",
        sss={
            "preset": "default",
            "epochs": 8,
            "window_length": 256,
            "train_stride": 128,
            "val_stride": 256,
            "windows_per_epoch": 2048,
            "batch_size": 64,
            "model_params": {"d_model": 32, "d_ff": 64, "n_heads": 4, "n_layers": 2},
        },
        baseline={
            "epochs": 5,
            "window_length": 1024,
            "max_length": 4096,
            "batch_size": 16,
            "patience": 15,
            "small": True,
        },
    ),
    "smoke": ExperimentPreset(
        "smoke",
        sss={
            "preset": "default",
            "epochs": 1,
            "window_length": 256,
            "train_stride": 256,
            "val_stride": 1024,
            "windows_per_epoch": 128,
            "batch_size": 64,
            "model_params": {"d_model": 8, "d_ff": 16, "n_heads": 2, "n_layers": 1},
        },
        baseline={"epochs": 1, "window_length": 1024, "max_length": 1024, "small": True},
        seeds=(0,),
    ),
    "paper": ExperimentPreset(
        "paper",
        sss={"preset": "paper"},
        baseline={"epochs": 50, "window_length": 10000, "patience": 15},
    ),
    "bonn": ExperimentPreset(
        "bonn",
        sss={
            "preset": "minirocket",
            "calibrator": "none",
        },  # the recipe; 32 validation segments are too few for isotonic
        baseline={"epochs": 30, "window_length": 4096, "patience": 10, "batch_size": 16, "small": True},
        seeds=(0, 1, 2),
        split_modes=("cv",),
        preprocess={"target_sfreq": None},
        backbone_params={
            "patchtst": {"d_model": 64, "d_ff": 128, "n_heads": 4, "n_layers": 2},
            "minirocket": {"num_features": 9996, "revin": False},
            "rocket": {"num_kernels": 2000},
            "dlinear": {},
            "hydra": {"kernels_per_group": 8, "groups": 64},
            "hydra_minirocket": {"kernels_per_group": 8, "groups": 64, "num_features": 9996},
        },
        strides_follow_window=False,
    ),
}
"""``cpu``: minutes on 2 cores with small models; ``smoke``: one epoch, one seed, tiny models — a minute-long check that an
installation or a new protocol runs end to end (the tests use it too); ``paper``: App. C sizes,
for a GPU and a real ds003029 copy."""

SMALL_BASELINE_PARAMS = {
    "patchtst": {"d_model": 16, "d_ff": 32, "n_heads": 2, "n_layers": 1},
    "timesnet": {"d_model": 16, "d_ff": 16, "num_kernels": 2, "top_k": 2, "n_layers": 1},
    "moderntcn": {"d_model": 16, "dw_dims": 32, "n_layers": 1},
    "dlinear": {"d_hidden": 32},
    "rocket": {"num_kernels": 500},
    "mamba": {"d_model": 16, "n_layers": 1},
    "gru": {"d_model": 16, "n_layers": 2, "patch_size": 64, "patch_stride": 32},
    "lstm": {"d_model": 16, "n_layers": 2, "patch_size": 64, "patch_stride": 32},
    "minirocket": {"num_features": 840},
    "hydra": {"groups": 16},
    "hydra_minirocket": {"groups": 16, "num_features": 840},
}
"""Model sizes of the ``cpu`` preset's baselines (App. C sizes in the ``paper`` preset)."""


def sss_run_config(preset: ExperimentPreset, run: RunSpec):
    """The SSS training configuration of a run: the preset's, its backbone's sizes, then the run's overrides.

    Overrides ``backbone=<name>`` switch the local model (with the preset's sizes for it),
    ``model.<param>=<value>`` set one model parameter, anything else a ``TrainConfig`` field. A
    batch larger than the preset's ``windows_per_epoch`` raises the latter to one full batch (else
    every batch size above it would train identically).

    Parameters
    ----------
    preset : ExperimentPreset
        The experiment preset: its ``sss`` training settings, baseline sizes and whether strides follow the
        window length.
    run : RunSpec
        The run: its model (``sss``, a named SSS row or ``sss-<backbone>``), seed and overrides.

    Returns
    -------
    TrainConfig
        The training preset named by the row (``default`` otherwise) with these settings, ``seed=run.seed``
        and ``device="auto"``.
    """
    row = {k: v for k, v in SSS_ROWS.get(run.model, {}).items() if k != WINDOW_ENSEMBLE}  # members: ensemble_members
    params = dict(row) if "preset" in row else dict(preset.sss)  # a named training preset at its own sizes
    name = params.pop("preset", "default")
    # the training preset's own model sizes unless the experiment preset or the run says otherwise
    params["model_params"] = dict(params.get("model_params", train_preset(name).model_params))
    overrides = {**({} if "preset" in row else row), **dict(run.overrides)}
    named_backbone = run.model[len(SSS_MODEL) + 1 :] if run.model != SSS_MODEL and not row else None
    backbone = overrides.pop("backbone", named_backbone)
    if backbone is not None:
        params["backbone"] = backbone
        if preset.name == "cpu":
            params["model_params"] = dict(SMALL_BASELINE_PARAMS[backbone])
        else:
            params["model_params"] = dict(preset.backbone_params.get(backbone, {}))
    for key in [k for k in overrides if k.startswith("model.")]:
        params["model_params"][key[len("model.") :]] = overrides.pop(key)
    params.update(overrides)
    if params.get("windows_per_epoch") and params.get("batch_size", 0) > params["windows_per_epoch"]:
        params["windows_per_epoch"] = params["batch_size"]  # one full batch per epoch at least (batch ablation)
    if "window_length" in overrides and preset.strides_follow_window and "preset" not in row:
        params["inference_stride"] = max(1, params["window_length"] // 4)
        params["train_stride"] = params["window_length"]
    config = train_preset(name, seed=run.seed, device="auto", **params)
    if preset.patchtst_gpu_kernels is not None and config.backbone == "patchtst":
        config = dataclasses.replace(
            config, model_params={**config.model_params, "gpu_kernels": preset.patchtst_gpu_kernels}
        )
    return config


def _result_settings(config) -> dict:
    """``config.to_dict()`` without what decides only how a GPU runs the model (``model_params["gpu_kernels"]``)."""
    settings = config.to_dict()
    settings["model_params"] = {k: v for k, v in settings.get("model_params", {}).items() if k != "gpu_kernels"}
    return settings


def _preset_digest(spec: ExperimentPreset) -> str:
    """Digest of an experiment preset's settings (``plan.json``), ``patchtst_gpu_kernels`` left out as in runs'."""
    settings = {k: v for k, v in dataclasses.asdict(spec).items() if k != "patchtst_gpu_kernels"}
    return hashlib.sha256(json.dumps(settings, sort_keys=True, default=str).encode()).hexdigest()[:16]


def _baseline_config(preset: ExperimentPreset, run: RunSpec):
    """The whole-channel training configuration of a baseline run."""
    from sss_viewer.baselines.whole_channel import WholeChannelConfig

    params = dict(preset.baseline)
    if params.pop("small", False):
        params["model_params"] = SMALL_BASELINE_PARAMS[run.model]
    return WholeChannelConfig(backbone=run.model, seed=run.seed, **params)


def run_settings_digest(preset: ExperimentPreset, run: RunSpec) -> str:
    """Digest of everything that decides a run's result besides its key: preprocessing and training settings.

    Stored in each run's record; on resume, a finished run whose digest differs from the current
    preset's was made with other settings and is run again (other runs are kept).
    """
    if run.model.startswith(SSS_MODEL) and len(members := ensemble_members(run)) > 1:
        settings = {"ensemble": [_result_settings(sss_run_config(preset, m)) for m in members]}
    elif run.model.startswith(SSS_MODEL):
        settings = _result_settings(sss_run_config(preset, run))
    elif run.model in REFERENCES:
        settings = {"model": run.model}
    else:
        settings = dataclasses.asdict(_baseline_config(preset, run))
    settings["experiment_preprocess"] = preprocess_preset("default", **preset.preprocess).to_dict()
    return hashlib.sha256(json.dumps(settings, sort_keys=True, default=str).encode()).hexdigest()[:16]


def _sss_run_probs(run: RunSpec, series_set: SeriesSet, split: np.ndarray, preset: ExperimentPreset, memo: FeatureMemo):
    """Validation and test segment probabilities of an SSS run (the mean of its members' for a window ensemble).

    Returns
    -------
    val_probs : ndarray, shape (n_val,)
    test_probs : ndarray, shape (n_test,)
    extra : dict
        ``best_epoch`` (the latest of the members'), for one model with an L-BFGS head ``head_l2``, and
        ``gpu_kernels`` when the preset sets PatchTST's.
    """
    val, test = np.flatnonzero(split == "val"), np.flatnonzero(split == "test")
    val_probs, test_probs, extra = [], [], {"best_epoch": 0}
    members = ensemble_members(run)
    for member in members:
        config = sss_run_config(preset, member)
        bundle = train([], config, progress=False, series_set=series_set, split=split, feature_memo=memo)
        val_probs.append(_sss_test_probs(bundle, series_set, val))
        test_probs.append(_sss_test_probs(bundle, series_set, test))
        extra["best_epoch"] = max(extra["best_epoch"], int(bundle.info["best_epoch"]))
        if "head_l2" in bundle.info and len(members) == 1:
            extra["head_l2"] = float(bundle.info["head_l2"])
        if "gpu_kernels" in config.model_params:  # how a GPU ran it: recorded, not a setting of the result
            extra["gpu_kernels"] = config.model_params["gpu_kernels"]
    return np.mean(val_probs, axis=0), np.mean(test_probs, axis=0), extra


def _sss_test_probs(bundle, series_set: SeriesSet, members: np.ndarray) -> np.ndarray:
    """Mean calibrated window probability of each member series (SSS inference)."""
    lengths = np.where(np.isin(np.arange(series_set.store.n_series), members), series_set.store.lengths, 0)
    index = WindowIndex.build(lengths, bundle.window_length, bundle.inference_stride, cover_end=True)
    p = predict_window_probs(
        bundle.model, series_set.store, index.absolute_starts(series_set.store), bundle.window_length
    )
    p_cal = bundle.calibrator.transform(p)[0]
    return channel_means(p_cal, index.series, series_set.store.n_series)[members]


def _execute(run: RunSpec, series_set: SeriesSet, preset: ExperimentPreset, memo: FeatureMemo) -> dict:
    """Train and test one run; return its record (metrics on the test channels)."""
    split = split_for_run(series_set.meta, run)
    labels = series_set.meta["label"].to_numpy()
    test = np.flatnonzero(split == "test")
    val = np.flatnonzero(split == "val")
    started = time.perf_counter()
    extra = {}
    if run.model.startswith(SSS_MODEL):
        val_probs, test_probs, extra = _sss_run_probs(run, series_set, split, preset, memo)
    elif run.model.startswith(MINIROCKET_LR):
        from sss_viewer.baselines.minirocket_reference import fit_minirocket_logistic

        fit_on = "train+val" if run.model.endswith(FULL_FOLD) else "train"
        reference = fit_minirocket_logistic(series_set, split, seed=run.seed, fit_on=fit_on)
        val_probs, test_probs = reference.val_probs, reference.test_probs
        extra["C"] = reference.C
    elif run.model.startswith(HYDRA_MINIROCKET_RIDGE):
        from sss_viewer.baselines.hydra_reference import fit_hydra_peer

        fit_on = "train+val" if run.model.endswith(FULL_FOLD) else "train"
        peer = fit_hydra_peer(series_set, split, seed=run.seed, fit_on=fit_on)
        val_probs, test_probs = peer.val_probs, peer.test_probs
        extra["alpha"] = peer.alpha
    else:
        from sss_viewer.baselines.whole_channel import fit_whole_channel

        result = fit_whole_channel(series_set, split, _baseline_config(preset, run))
        val_probs, test_probs = result.val_probs, result.test_probs
        extra["best_epoch"] = int(result.best_epoch)
    threshold = choose_threshold(val_probs, labels[val])
    metrics = evaluate_scores(test_probs, labels[test], threshold)
    return {
        **dataclasses.asdict(run),
        "key": run.key,
        "settings_digest": run_settings_digest(preset, run),
        "label": run.label,
        "n_train": int((split == "train").sum()),
        "n_val": int(len(val)),
        "n_test": int(len(test)),
        "n_test_soz": int(labels[test].sum()),
        "seconds": round(time.perf_counter() - started, 2),
        **{m: float(metrics[m]) for m in METRICS},
        "threshold": float(threshold),
        "val_auc": float(binary_auc(val_probs, labels[val])),
        **extra,
    }


def run_experiment(
    protocol: str,
    recordings: Sequence[Recording],
    out_dir: str | Path,
    *,
    preset: str | ExperimentPreset | None = None,
    models: Sequence[str] | None = None,
    seeds: Sequence[int] | None = None,
    split_modes: Sequence[str] | None = None,
    progress: bool = True,
    max_new_runs: int | None = None,
    cache: SeriesCache | None = None,
) -> pd.DataFrame:
    """Run (or resume) ``protocol`` on labelled recordings; write ``results.csv`` and ``tables.md``.

    Parameters
    ----------
    protocol : str
        A key of :data:`sss_viewer.experiments.protocols.PROTOCOLS`.
    recordings : sequence of Recording
        Labelled recordings with ``centre`` set.
    out_dir : str or Path
    preset : str or ExperimentPreset, optional
        A key of :data:`PRESETS` or a preset of one's own (e.g. ``dataclasses.replace`` of one);
        default the protocol's (``cpu``; ``bonn`` for the Bonn protocols).
    models, seeds, split_modes : sequences, optional
        Default: the protocol's models (SSS and every baseline), the preset's seeds and split modes.
    progress : bool
    max_new_runs : int, optional
        Stop after this many new runs (the rest continue on the next call).
    cache : SeriesCache, optional
        On-disk cache of the preprocessed series (shared by protocols run on the same data).

    Returns
    -------
    results : DataFrame
        One row per finished run, in plan order.
    """
    check_option("protocol", protocol, sorted(PROTOCOLS))
    if isinstance(preset, ExperimentPreset):
        spec, preset = preset, preset.name
    else:
        preset = preset or PROTOCOLS[protocol].default_preset
        check_option("experiment preset", preset, sorted(PRESETS))
        spec = PRESETS[preset]
    models = list(models or PROTOCOLS[protocol].models or (SSS_MODEL, *BASELINES))
    centres = sorted({r.centre for r in recordings if r.centre})
    runs = plan_runs(protocol, centres, models, seeds or spec.seeds, split_modes or spec.split_modes)
    sss_configs = _distinct_sss_configs(spec, runs)
    if spec.patchtst_gpu_kernels is not None:
        _check_gpu_kernels(
            spec, sss_configs, f"{len(runs)} planned run(s) of {protocol!r} (models {', '.join(models)})"
        )
    out_dir = Path(out_dir)
    (out_dir / "runs").mkdir(parents=True, exist_ok=True)
    digest = _preset_digest(spec)
    plan_file = out_dir / "plan.json"
    unchanged_preset = False
    if plan_file.is_file():
        previous = json.loads(plan_file.read_text())
        unchanged_preset = previous.get("preset_digest") == digest
        if previous.get("protocol") != protocol and any((out_dir / "runs").iterdir()):
            raise ValueError(
                f"{out_dir} holds runs of protocol {previous.get('protocol')!r}, not {protocol!r}; "
                f"use another --out or delete that folder."
            )
    atomic_write(
        plan_file,
        lambda p: Path(p).write_text(
            json.dumps(
                {"protocol": protocol, "preset": preset, "preset_digest": digest, "runs": [r.key for r in runs]},
                indent=1,
            )
        ),
    )
    min_length = max([c.window_length for _, c in sss_configs.values()] or [1])
    preprocess = preprocess_preset("default", **spec.preprocess)
    for _, config in sss_configs.values():  # refuse a preset that cannot fit before anything is trained
        check_fits_in_memory(recordings, preprocess, config, preset=preset)
    todo = [r for r in runs if not _finished(out_dir, r, spec, unchanged_preset)]
    logger.info("%s: %d runs planned, %d finished, %d to do", protocol, len(runs), len(runs) - len(todo), len(todo))
    if todo:
        series_set = build_series_set(recordings, preprocess, min_length=min_length, progress=progress, cache=cache)
        memo = FeatureMemo()  # ablation rows that share a front end share its window features
        for n, run in enumerate(tqdm(todo, desc=protocol, unit="run", disable=not progress or None)):
            if max_new_runs is not None and n >= max_new_runs:
                break
            record = _execute(run, series_set, spec, memo)
            atomic_write(
                out_dir / "runs" / f"{run.key}.json", lambda p, r=record: Path(p).write_text(json.dumps(r, indent=1))
            )
    results = collect_results(out_dir, runs)
    atomic_write(out_dir / "results.csv", lambda p: results.to_csv(p, index=False, float_format="%.6g"))
    atomic_write(
        out_dir / "tables.md", lambda p: Path(p).write_text(markdown_tables(results, protocol), encoding="utf-8")
    )
    return results


def _distinct_sss_configs(spec: ExperimentPreset, runs: Sequence[RunSpec]) -> dict[str, tuple]:
    """The distinct SSS training configurations of the planned runs (a window ensemble's members each count).

    Returns
    -------
    dict
        ``{the configuration as sorted JSON: (the first run member that trains it, its TrainConfig)}``, in plan order.
    """
    configs = {}
    for member in (m for r in runs if r.model.startswith(SSS_MODEL) for m in ensemble_members(r)):
        config = sss_run_config(spec, member)
        configs.setdefault(json.dumps(config.to_dict(), sort_keys=True, default=str), (member, config))
    return configs


def _check_gpu_kernels(spec: ExperimentPreset, sss_configs: dict[str, tuple], what: str) -> None:
    """Refuse, before anything is written, a ``patchtst_gpu_kernels`` that no planned run uses or one of them cannot.

    Each distinct PatchTST of ``sss_configs`` (:func:`_distinct_sss_configs`) is built once (milliseconds on the CPU)
    so that a size the fused kernels do not take (the ``smoke`` preset's d_model of 8) is named now, not after hours
    of other runs. ``what`` names the plan in the message.
    """
    patchtsts = [(member, config) for member, config in sss_configs.values() if config.backbone == "patchtst"]
    if not patchtsts:
        raise ValueError(
            f"gpu_kernels={spec.patchtst_gpu_kernels!r} applies to SSS runs with a PatchTST local model; none of the "
            f"{what} has one."
        )
    for member, config in patchtsts:
        try:
            build_window_model(config.backbone, config.window_length, **config.model_params)
        except ValueError as exc:
            raise ValueError(f"Preset {spec.name!r}, run {member.label}: {exc}") from None


def _finished(out_dir: Path, run: RunSpec, spec: ExperimentPreset, unchanged_preset: bool) -> bool:
    """True when the run's record exists and was made with the current settings (else it is run again).

    Records written before runs carried a settings digest count as current only when the folder's
    plan was made with the same preset digest (``unchanged_preset``).
    """
    path = out_dir / "runs" / f"{run.key}.json"
    if not path.is_file():
        return False
    stored = json.loads(path.read_text()).get("settings_digest")
    if stored is None and unchanged_preset:
        return True
    if stored != run_settings_digest(spec, run):
        logger.warning(
            "%s (%s) was made with other settings than preset %r's now: running it again", path, run.label, spec.name
        )
        return False
    return True


def read_run_records(out_dir: str | Path, keys: Sequence[str]) -> list[dict]:
    """The records of the finished runs among ``keys`` (``runs/<key>.json`` of ``out_dir``), in that order."""
    paths = (Path(out_dir) / "runs" / f"{key}.json" for key in keys)
    return [json.loads(path.read_text()) for path in paths if path.is_file()]


def collect_results(out_dir: Path, runs: Sequence[RunSpec]) -> pd.DataFrame:
    """The finished runs' records, in plan order (runs not finished yet are left out).

    Parameters
    ----------
    out_dir : Path
        The experiment's ``--out`` folder (each finished run's record is ``runs/<key>.json``).
    runs : sequence of RunSpec
        The planned runs, in plan order.

    Returns
    -------
    DataFrame, shape (n_finished, n_fields)
        One row per finished run: the run's fields (``train_centres`` and ``overrides`` as JSON text),
        ``key``, ``label``, split sizes, the test metrics and ``threshold``; without the wall time and
        settings digest, so an interrupted and a straight run give the same table.
    """
    rows = read_run_records(out_dir, [run.key for run in runs])
    for record in rows:
        record.pop("seconds", None)  # wall time differs between an interrupted and a straight run
        record.pop("settings_digest", None)
    table = pd.DataFrame(rows)
    for column in ("train_centres", "overrides"):
        if column in table:
            table[column] = table[column].map(lambda v: json.dumps(v))
    return table

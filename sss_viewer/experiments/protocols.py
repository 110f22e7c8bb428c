"""The paper's evaluation protocols as plans of runs: Table 1, Table 2 and the App. A ablations.

A protocol expands, for the centres of a cohort, the models, the seeds and the split modes, into
``RunSpec``s — one trained-and-tested model each. Plans are plain data, so a runner can skip the runs
it has already finished (resumable experiments) and a table can be laid out from the specs alone.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass, field, replace

import numpy as np
import pandas as pd

from sss_viewer._validate import check_option
from sss_viewer.models import FINITE_CONTEXT, INFINITE_CONTEXT
from sss_viewer.windows.splits import SPLIT_NAMES, UNUSED, assign_splits

SSS_MODEL = "sss"
"""SSS with its default local model (PatchTST); ``sss-<backbone>`` uses another registered backbone."""
BASELINES = (*FINITE_CONTEXT, *INFINITE_CONTEXT)
MINIROCKET_LR = "minirocket-lr"
"""MiniRocket features of the whole channel + logistic regression (the issue-6 reference, not trained by SGD)."""
HYDRA_MINIROCKET_RIDGE = "hydra-minirocket-ridge"
"""Hydra + MiniRocket features of the whole channel + ridge (issue 18's strongest ROCKET-family peer, not trained by SGD)."""
WINDOW_ENSEMBLE = "window_lengths"
"""Override of an SSS run that trains one model per window length (``"1024+2048"``) and averages their
segment probabilities (validation and test alike); see :func:`ensemble_members`."""

SSS_ROWS = {
    "sss-recipe": {"preset": "minirocket"},
    "sss-patchtst-l1024": {"window_length": 1024},
    "sss-hydra-ensemble": {"preset": "hydra_minirocket", WINDOW_ENSEMBLE: "1024+2048"},
}
"""Named SSS rows of the tables: ``sss-recipe`` is the ``minirocket`` training preset at its own sizes (the
recipe that works on real data: MiniRocket, L = 1024, stride 256, Venn–Abers), whatever the experiment
preset; ``sss-patchtst-l1024`` is the experiment preset's SSS (PatchTST) with the window raised to
L = 1024 (strides following it); ``sss-hydra-ensemble`` is the ``hydra_minirocket`` training preset at its own
sizes with two windows, L = 1024 and 2048, whose probabilities are averaged (one of issue 18's Bonn
candidates; too slow for the 2-core grid until Hydra scores on a per-sample route). Plain ``sss`` stays the experiment preset's SSS (``cpu``: PatchTST at L = 256, which does
not learn on the synthetic cohort)."""

FULL_FOLD = "-full"
"""Suffix of a reference trained on the whole training fold (train + inner validation), choices still made on
the inner validation split: what plain k-fold CV gives it (``minirocket-lr-full``, ``hydra-minirocket-ridge-full``)."""
REFERENCES = (MINIROCKET_LR, MINIROCKET_LR + FULL_FOLD, HYDRA_MINIROCKET_RIDGE, HYDRA_MINIROCKET_RIDGE + FULL_FOLD)
"""Whole-channel references fitted in closed form (not by SGD)."""
MODELS = (SSS_MODEL, *SSS_ROWS, *BASELINES, *REFERENCES)
"""Every model a protocol can compare: SSS, its other local models, the whole-channel baselines, the references."""
SPLIT_MODES = ("channel", "patient")
CV_SPLIT = "cv"
"""Split mode of cross-validation protocols: stratified k-fold by patient, inner validation from the training folds."""
ALL_CENTRES = "all"


@dataclass(frozen=True)
class Protocol:
    """One experiment: which settings, and (for ablations) which SSS parameter varies over which values."""

    name: str
    description: str
    kind: str  # "table1", "table2", "ablation" or "cv"
    parameter: str | None = None
    values: tuple = ()
    folds: int = 5
    variants: tuple = ()  # cv ablations: SSS override tuples, one row each
    default_preset: str = "cpu"
    models: tuple = ()  # default models (empty: SSS and every baseline)
    nested_choice: bool = True  # variants: add the per-fold choice among them by inner-validation AUC


BONN_ABLATION = (
    (),
    (("window_length", 512),),
    (("window_length", 2048),),
    (("model.revin", True),),
    (("backbone", "patchtst"),),
    (("backbone", "rocket"),),
    (("backbone", "dlinear"),),
    (("model.num_features", 2520),),
    (("calibrator", "isotonic"),),
    (("calibrator", "venn-abers"),),
    (("epochs", 1),),
    (("epochs", 5),),
    (("head_solver", "lbfgs"),),
    (("inference_stride", 512),),
    (("inference_stride", 1024),),
)
"""Variants of the ``bonn`` SSS preset, one change each (the empty tuple is the preset itself).

The scoring strides (test windows every 512 / 1024 samples instead of 256) measure what a cheaper
viewer default costs: MiniRocket scoring time is proportional to the number of windows."""

BONN_CANDIDATES = (
    (),
    (("window_length", 2048),),
    (("backbone", "rocket"),),
    (("backbone", "hydra"),),
    (("backbone", "hydra_minirocket"),),
    (("backbone", "hydra_minirocket"), ("window_length", 2048)),
    ((WINDOW_ENSEMBLE, "1024+2048"),),
    (("backbone", "hydra_minirocket"), (WINDOW_ENSEMBLE, "1024+2048")),
)
"""Issue 18's candidates for SSS on Bonn, one row each (the empty tuple is the ``bonn`` preset, MiniRocket at
L = 1024; ``window_lengths=1024+2048`` averages the probabilities of the two single-window models); the
protocol's tables add the nested choice among them by inner-validation AUC."""

BONN_REFIT = (
    (("head_solver", "lbfgs"),),
    (("head_solver", "lbfgs"), ("refit_on_train_val", True)),
    (("backbone", "hydra_minirocket"), (WINDOW_ENSEMBLE, "1024+2048"), ("head_solver", "lbfgs")),
    (
        ("backbone", "hydra_minirocket"),
        (WINDOW_ENSEMBLE, "1024+2048"),
        ("head_solver", "lbfgs"),
        ("refit_on_train_val", True),
    ),
)
"""Issue 18's pre-registered last Bonn candidates (docs/results.md §7): the recipe and the best candidate with the
L-BFGS head (penalty chosen on inner validation), each as it is and refitted on the whole training fold at the chosen
penalty — the counterpart of the references' ``-full`` rows. Refitted rows take no part in a nested choice: their
validation score is in-sample."""

PROTOCOLS = {
    p.name: p
    for p in (
        Protocol("paper-table1", "Table 1: train and test within each centre, and all centres pooled", "table1"),
        Protocol(
            "paper-table2", "Table 2: leave one centre out; train on the others, test on the unseen centre", "table2"
        ),
        Protocol("ablation-batch", "App. A: SSS batch size", "ablation", "batch_size", (128, 512, 2048, 4096, 8192)),
        Protocol("ablation-window", "App. A: SSS window length L", "ablation", "window_length", (512, 1024, 2048)),
        Protocol(
            "ablation-calibration",
            "App. A: SSS calibration",
            "ablation",
            "calibrator",
            ("isotonic", "venn-abers", "none"),
        ),
        Protocol(
            "bonn",
            "Bonn D vs C: stratified 5-fold CV x the seeds (repeats), inner validation in the training folds",
            "cv",
            default_preset="bonn",
            models=(SSS_MODEL, *REFERENCES, *BASELINES),
        ),
        Protocol(
            "bonn-candidates",
            "Bonn: SSS local models and windows of issue 18 (MiniRocket, ROCKET, Hydra, "
            "Hydra + MiniRocket; L = 1024 / 2048), chosen per fold on inner validation",
            "cv",
            variants=BONN_CANDIDATES,
            default_preset="bonn",
            models=(SSS_MODEL,),
        ),
        Protocol(
            "bonn-refit",
            "Bonn: the recipe and the best candidate with an L-BFGS head, as chosen on inner validation "
            "and refitted on the whole training fold",
            "cv",
            variants=BONN_REFIT,
            default_preset="bonn",
            models=(SSS_MODEL,),
            nested_choice=False,
        ),
        Protocol(
            "bonn-ablation",
            "Bonn: which SSS choices matter (window, normalisation, backbone, calibration, epochs)",
            "cv",
            variants=BONN_ABLATION,
            default_preset="bonn",
            models=(SSS_MODEL,),
        ),
    )
}
"""Every protocol by name (``sss-viewer experiment --list``)."""


@dataclass(frozen=True)
class RunSpec:
    """One run: a model trained on ``train_centres`` and tested on ``test_centre`` with one split and seed.

    ``setting`` is the table column group: a centre, ``all``, or ``unseen <centre>`` (Table 2);
    ``overrides`` are SSS parameters an ablation changes (``(("batch_size", 512),)``).
    """

    protocol: str
    model: str
    setting: str
    split_mode: str
    seed: int
    train_centres: tuple[str, ...]
    test_centre: str | None = None
    overrides: tuple = field(default_factory=tuple)

    @property
    def key(self) -> str:
        """Stable identifier of the run (file name of its result)."""
        text = json.dumps(asdict(self), sort_keys=True, default=str)
        return hashlib.sha256(text.encode()).hexdigest()[:16]

    @property
    def label(self) -> str:
        """Row label in tables: the model, plus the ablated value."""
        if not self.overrides:
            return self.model
        return f"{self.model} " + ", ".join(f"{k}={v}" for k, v in self.overrides)


def ensemble_members(run: RunSpec) -> list[RunSpec]:
    """The single-window runs an SSS run averages: itself, or one per length of its ``window_lengths`` override.

    A member is the run with ``window_lengths=A+B`` (an override, or a named row's setting) replaced by
    ``window_length=A`` (then ``B``), so it is trained exactly as the single-window row of that length
    (same seed, same split).

    Parameters
    ----------
    run : RunSpec
        A planned run; its ``window_lengths`` comes from its overrides, or else from its named SSS row.

    Returns
    -------
    list of RunSpec
        ``[run]`` when it has no ``window_lengths``; else one run per length, in the order given.

    Raises
    ------
    ValueError
        The lengths are not positive integers joined by ``+``, fewer than two, or repeated.
    """
    overrides = dict(run.overrides)
    row_value = None if "window_length" in overrides else SSS_ROWS.get(run.model, {}).get(WINDOW_ENSEMBLE)
    value = overrides.get(WINDOW_ENSEMBLE, row_value)  # a member of a named row has its own window_length
    if value is None:
        return [run]
    parts = str(value).split("+")
    if len(parts) < 2 or not all(p.isdigit() and int(p) > 0 for p in parts) or len(set(parts)) != len(parts):
        raise ValueError(
            f"{WINDOW_ENSEMBLE}={value!r}: expected two or more different window lengths joined by '+', "
            "e.g. '1024+2048'"
        )
    others = tuple(o for o in run.overrides if o[0] not in (WINDOW_ENSEMBLE, "window_length"))
    return [replace(run, overrides=(*others, ("window_length", int(p)))) for p in parts]


def check_models(models) -> list[str]:
    """Validate model names (``sss``, a named SSS row, ``sss-<backbone>`` or a baseline) before anything is trained.

    Parameters
    ----------
    models : iterable of str
        The names, as given on the command line.

    Returns
    -------
    list of str
        The same names, in the same order.

    Raises
    ------
    ValueError
        A name is not one of :data:`MODELS`, or an ``sss-<backbone>`` names no backbone of :data:`BASELINES`
        (the message lists the valid ones).
    """
    out = []
    for name in models:
        if name.startswith(SSS_MODEL + "-") and name not in SSS_ROWS:
            check_option("SSS backbone", name[len(SSS_MODEL) + 1 :], BASELINES)
        else:
            check_option("model", name, MODELS)
        out.append(name)
    return out


def plan_runs(protocol: str, centres: list[str], models, seeds, split_modes) -> list[RunSpec]:
    """All runs of ``protocol`` for a cohort with ``centres``.

    Parameters
    ----------
    protocol : str
        A key of :data:`PROTOCOLS`.
    centres : list of str
        Centres of the cohort (at least two for Table 2).
    models : iterable of str
        Models (ablations use the SSS models among them, or ``sss`` when none is given).
    seeds : iterable of int
    split_modes : iterable of str
        ``channel`` (the paper's: 1:1 balanced, 70/10/20) and/or ``patient``.
    """
    check_option("protocol", protocol, sorted(PROTOCOLS))
    spec = PROTOCOLS[protocol]
    models = check_models(models)
    for mode in split_modes:
        check_option(f"split mode of {protocol}", mode, (CV_SPLIT,) if spec.kind == "cv" else SPLIT_MODES)
    centres = sorted(centres)
    if spec.kind == "table2" and len(centres) < 2:
        raise ValueError(f"{protocol} needs at least two centres; the cohort has {centres}.")
    if spec.kind == "table1":
        settings = [(c, (c,), None) for c in centres] + [(ALL_CENTRES, tuple(centres), None)]
    elif spec.kind == "table2":
        settings = [(f"unseen {c}", tuple(x for x in centres if x != c), c) for c in centres]
    elif spec.kind == "cv":
        settings = [(f"fold {k + 1}", tuple(centres), None) for k in range(spec.folds)]
    else:
        settings = [(ALL_CENTRES, tuple(centres), None)]
    if spec.kind == "ablation":
        variants = [((spec.parameter, v),) for v in spec.values]
    else:
        variants = list(spec.variants) or [()]
    if spec.kind == "ablation" or spec.variants:
        models = [m for m in models if m.startswith(SSS_MODEL)] or [SSS_MODEL]
    return [
        RunSpec(protocol, model, setting, mode, int(seed), train, test, overrides)
        for mode in split_modes
        for setting, train, test in settings
        for model in models
        for overrides in variants
        for seed in seeds
    ]


def split_for_run(meta: pd.DataFrame, run: RunSpec) -> np.ndarray:
    """Assign every series of ``meta`` to train/val/test/unused for ``run``.

    Table 1 and ablations: the labelled series of the run's centres, split 70/10/20 by channel
    (non-SOZ dropped at random to 1:1 first, as the paper) or by patient (the training split
    balanced 1:1 the same way; validation and test keep every channel, as a clinician would see
    them). Table 2: the unseen centre is the test set; the other centres give train and validation
    (1/8 of them) by channel or by patient, balanced likewise.

    Parameters
    ----------
    meta : DataFrame, shape (n_series, ...)
        The series set's ``meta``: ``label`` (1 SOZ, 0 not, negative unlabelled), ``centre``, ``subject``.
    run : RunSpec
        Its protocol, setting, split mode, seed, training centres and unseen test centre.

    Returns
    -------
    split : ndarray of str, shape (n_series,)
        ``"train"``, ``"val"``, ``"test"`` or ``"unused"`` per row of ``meta``.

    Raises
    ------
    ValueError
        The training centres have too few SOZ channels or patients to split, or a split lacks a class.
    """
    split = np.full(len(meta), UNUSED, dtype=object)
    labelled = meta["label"].to_numpy() >= 0
    in_train = meta["centre"].isin(run.train_centres).to_numpy() & labelled
    balance = True  # channel mode: the whole set 1:1 (paper); patient mode: the training split only
    where = f"{run.protocol} {run.setting} ({run.split_mode} split, seed {run.seed})"
    if run.split_mode == CV_SPLIT:
        fold = int(run.setting.split()[-1]) - 1
        split[in_train] = _cv_split(meta[in_train], PROTOCOLS[run.protocol].folds, fold, run.seed, where)
        return _check_classes(meta, split, run, where)
    fractions = (0.1, 0.2) if run.test_centre is None else (0.125, 0.0)
    try:
        split[in_train] = assign_splits(
            meta[in_train],
            run.split_mode,
            val_fraction=fractions[0],
            test_fraction=fractions[1],
            balance=balance,
            seed=run.seed,
        )
    except ValueError as exc:
        raise ValueError(
            f"{where}: centre(s) {', '.join(run.train_centres)} have too few SOZ channels or patients to split: {exc}"
        ) from exc
    if run.test_centre is not None:
        split[(meta["centre"] == run.test_centre).to_numpy() & labelled] = "test"
    return _check_classes(meta, split, run, where)


def _cv_split(meta: pd.DataFrame, folds: int, fold: int, seed: int, where: str) -> np.ndarray:
    """Fold ``fold`` of a stratified k-fold by patient is the test set; a stratified 1/k of the rest validates.

    The folds depend only on the labelled series, ``folds`` and ``seed``, so every model of a
    repeat sees the same folds. Patients never straddle folds (Bonn's segments are their own
    patients, so this is a plain stratified k-fold there).
    """
    from sklearn.model_selection import StratifiedGroupKFold

    labels = meta["label"].to_numpy()
    groups = meta["subject"].to_numpy()
    n_pos = int(labels.sum())
    if min(n_pos, len(labels) - n_pos) < 2 * folds:
        raise ValueError(
            f"{where}: {n_pos} SOZ and {len(labels) - n_pos} non-SOZ channels are too few for {folds}-fold "
            f"cross-validation with inner validation (need at least {2 * folds} of each)."
        )
    outer = StratifiedGroupKFold(n_splits=folds, shuffle=True, random_state=seed)
    rest, test = list(outer.split(np.zeros(len(labels)), labels, groups))[fold]
    inner = StratifiedGroupKFold(n_splits=folds, shuffle=True, random_state=seed * 1000 + fold + 1)
    _, val = next(inner.split(np.zeros(len(rest)), labels[rest], groups[rest]))
    split = np.full(len(labels), "train", dtype=object)
    split[test] = "test"
    split[rest[val]] = "val"
    return split


def _check_classes(meta: pd.DataFrame, split: np.ndarray, run: RunSpec, where: str) -> np.ndarray:
    """``split``, after checking that train, validation and test each hold SOZ and non-SOZ series."""
    for name in SPLIT_NAMES:
        classes = set(meta["label"].to_numpy()[split == name])
        if classes != {0, 1}:
            centres = run.test_centre if name == "test" and run.test_centre else ", ".join(run.train_centres)
            raise ValueError(
                f"{where}: the {name} split of centre(s) {centres} has class(es) {sorted(int(c) for c in classes)} only — "
                "too few SOZ channels to split."
            )
    return split

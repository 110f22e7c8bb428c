"""Hydra in this project against aeon 1.6 on Bonn D vs C (accuracy, AUC, feature time), and window speed.

**Cross-check.** The Bonn C and D segments (``--data``), preprocessed as the ``bonn`` experiment does
(band-pass, notch, per-channel z-score, native rate), are split by a stratified ``--folds``-fold
cross-validation (``--seed``). Per fold, on the same training and test segments:

* **ours** — :func:`sss_viewer.baselines.hydra_reference.fit_hydra_peer` with ``transform="hydra"``
  (the paper's Hydra classifier: k = 8, g = 64, sparse scaling, ``RidgeClassifierCV``) and
  ``transform="hydra_minirocket"``, ridge head fitted on every training segment (``fit_on="train+val"``);
* **aeon** — ``HydraClassifier``, ``MultiRocketHydraClassifier`` (the paper's Hydra + MultiRocket)
  and Hydra + MiniRocket assembled from aeon's transformers and scalers the way its
  ``MultiRocketHydraClassifier`` assembles Hydra + MultiRocket; ``n_jobs=2``, ``random_state=seed``.

Accuracy is the ridge's own decision (sign of the decision value); AUC ranks the decision values.
The kernels are random in both, so the two agree within a few points, not exactly. Also timed: the
Hydra features of every segment (ours: ``HydraClassifier.frozen_features``; aeon:
``HydraTransformer.fit_transform``).

**Speed.** Windows/s of the frozen front ends for ``--batch`` (512) windows of L = 1024 on this
machine, each the median of ``--repeats`` passes after a warm-up, in the same run: ``hydra``,
``hydra_minirocket``, ``minirocket`` reading each window on its own (``feature_context="window"``),
``minirocket`` reading each row as a channel (``"series"``, the default, numba's own threads) and
aeon's ``HydraTransformer`` (``n_jobs=--threads``).

aeon is not a dependency (its pins would move numpy/numba/pandas): it runs in its own environment,
``--aeon-python`` (``make bench-env``), in a child process given the same arrays; that environment
lacks torch, which aeon's Hydra needs, so the child appends this environment's ``site-packages`` to
its path (after its own, so numpy and the rest stay aeon's).

    .venv/bin/python benchmarks/hydra_reference.py [--folds 5] [--seed 0] [--skip-aeon] [--skip-speed]
"""

from __future__ import annotations

import argparse
import json
import logging
import statistics
import subprocess
import sys
import sysconfig
import tempfile
import time
from pathlib import Path

import numpy as np
import torch

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_DATA = ROOT.parent / "shared" / "data" / "bonn-epilepsy"

AEON_SCRIPT = r"""
import json, sys, time
if len(sys.argv) > 3:
    sys.path.append(sys.argv[3])  # torch for aeon's Hydra, after aeon's own packages
import numpy as np
import aeon
from sklearn.linear_model import RidgeClassifierCV
from sklearn.metrics import roc_auc_score
from sklearn.preprocessing import StandardScaler
from aeon.classification.convolution_based import HydraClassifier, MultiRocketHydraClassifier
from aeon.classification.convolution_based._hydra import _SparseScaler
from aeon.transformations.collection.convolution_based import HydraTransformer, MiniRocket, MultiRocket

data = np.load(sys.argv[1])
seed = int(sys.argv[2])
x, y, fold = data["x"][:, None, :].astype(np.float64), data["y"], data["fold"]
out = {"version": aeon.__version__, "folds": {}}
t0 = time.perf_counter()
features = np.asarray(HydraTransformer(n_kernels=8, n_groups=64, n_jobs=2, random_state=seed).fit_transform(x))
out["hydra_feature_seconds"] = time.perf_counter() - t0
difference = np.abs(features - data["hydra"])
out["hydra_feature_difference"] = [float(difference.max()), float((difference / (np.abs(features) + 1e-6)).max()),
                                   float(np.abs(features).max())]


def hydra_minirocket(train, test):
    hydra = HydraTransformer(n_kernels=8, n_groups=64, n_jobs=2, random_state=seed)
    scale_h = _SparseScaler()
    rocket = MiniRocket(n_jobs=2, random_state=seed)
    scale_m = StandardScaler()
    f_train = np.concatenate([np.asarray(scale_h.fit_transform(hydra.fit_transform(x[train]))),
                              scale_m.fit_transform(rocket.fit_transform(x[train]))], axis=1)
    ridge = RidgeClassifierCV(alphas=np.logspace(-3, 3, 10)).fit(f_train, y[train])
    f_test = np.concatenate([np.asarray(scale_h.transform(hydra.transform(x[test]))),
                             scale_m.transform(rocket.transform(x[test]))], axis=1)
    return ridge.decision_function(f_test)


def multirocket_hydra(train, test):
    clf = MultiRocketHydraClassifier(n_jobs=2, random_state=seed).fit(x[train], y[train])
    f_h = np.asarray(clf._scale_hydra.transform(clf._transform_hydra.transform(x[test])))
    f_m = clf._scale_multirocket.transform(clf._transform_multirocket.transform(x[test]))
    return clf.classifier.decision_function(np.concatenate([f_h, f_m], axis=1))


def hydra(train, test):
    clf = HydraClassifier(n_jobs=2, random_state=seed).fit(x[train], y[train])
    return clf.clf_.decision_function(x[test])


methods = {"aeon Hydra": hydra, "aeon Hydra + MiniRocket": hydra_minirocket, "aeon MultiRocket + Hydra": multirocket_hydra}
for warm_up in (MiniRocket, MultiRocket):  # numba compiles on first use: not timed
    warm_up(random_state=0).fit(x[:4]).transform(x[:4])
out["folds"] = {name: [] for name in methods}
for k in np.unique(fold[fold >= 0]):  # -1: a fold left out of a shorter run (its segments still train)
    train, test = np.flatnonzero(fold != k), np.flatnonzero(fold == k)
    for name, method in methods.items():
        t0 = time.perf_counter()
        score = np.asarray(method(train, test), dtype=np.float64)
        out["folds"][name].append({"accuracy": float(((score > 0) == (y[test] == 1)).mean()),
                                   "auc": float(roc_auc_score(y[test], score)), "seconds": time.perf_counter() - t0})
print(json.dumps(out))
"""

AEON_SPEED_SCRIPT = r"""
import json, statistics, sys, time
sys.path.append(sys.argv[3])  # torch for aeon's Hydra, after aeon's own packages
import numpy as np
import aeon
from aeon.transformations.collection.convolution_based import HydraTransformer
x = np.load(sys.argv[1])[:, None, :]
hydra = HydraTransformer(n_kernels=8, n_groups=64, n_jobs=int(sys.argv[4]), random_state=0).fit(x[:8])
hydra.transform(x[:8])
times = []
for _ in range(int(sys.argv[2])):
    t0 = time.perf_counter()
    hydra.transform(x)
    times.append(time.perf_counter() - t0)
print(json.dumps({"seconds": statistics.median(times), "version": aeon.__version__}))
"""


def median_seconds(fn, repeats: int) -> float:
    """Median wall time of ``fn()`` over ``repeats`` calls, after one warm-up call."""
    fn()
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def bonn_segments(data: Path):
    """The Bonn C and D segments preprocessed as the ``bonn`` experiment does: the series set and its labels."""
    from sss_viewer.experiments.runner import PRESETS
    from sss_viewer.io.bonn import load_bonn
    from sss_viewer.preprocessing.config import preprocess_preset
    from sss_viewer.windows.series_set import build_series_set

    preprocess = preprocess_preset("default", **PRESETS["bonn"].preprocess)
    series_set = build_series_set(load_bonn(data), preprocess, min_length=64, progress=False)
    return series_set, series_set.labels().astype(np.int64)


def folds_of(labels: np.ndarray, n_folds: int, seed: int) -> np.ndarray:
    """Test fold of every segment: stratified k-fold, shuffled with ``seed``."""
    from sklearn.model_selection import StratifiedKFold

    fold = np.empty(len(labels), dtype=np.int64)
    splitter = StratifiedKFold(n_splits=n_folds, shuffle=True, random_state=seed)
    for k, (_, test) in enumerate(splitter.split(np.zeros(len(labels)), labels)):
        fold[test] = k
    return fold


def ours(series_set, labels: np.ndarray, fold: np.ndarray, seed: int) -> dict:
    """Per fold accuracy, AUC and seconds of this project's Hydra and Hydra + MiniRocket ridge peers."""
    from sss_viewer.baselines.hydra_reference import fit_hydra_peer
    from sss_viewer.metrics import binary_auc

    rng = np.random.default_rng(seed)
    results: dict[str, list] = {"ours Hydra": [], "ours Hydra + MiniRocket": []}
    for k in np.unique(fold[fold >= 0]):
        split = np.where(fold == k, "test", "train").astype(object)
        for label in (0, 1):  # a validation part, merged back by fit_on="train+val": every training segment fits
            rows = np.flatnonzero((split == "train") & (labels == label))
            split[rng.choice(rows, size=max(1, len(rows) // 5), replace=False)] = "val"
        split = split.astype(str)
        test = labels[split == "test"]
        for name, transform in (("ours Hydra", "hydra"), ("ours Hydra + MiniRocket", "hydra_minirocket")):
            t0 = time.perf_counter()
            peer = fit_hydra_peer(series_set, split, seed=seed, transform=transform, fit_on="train+val", device="cpu")
            results[name].append(
                {
                    "accuracy": float(((peer.test_probs > 0.5) == (test == 1)).mean()),
                    "auc": float(binary_auc(peer.test_probs, test)),
                    "seconds": time.perf_counter() - t0,
                    "alpha": peer.alpha,
                }
            )
    return results


def summary(name: str, folds: list[dict]) -> str:
    acc = np.array([f["accuracy"] for f in folds])
    auc = np.array([f["auc"] for f in folds])
    seconds = sum(f["seconds"] for f in folds)
    return f"{name:28s} accuracy {acc.mean():.3f} ± {acc.std():.3f}   AUC {auc.mean():.3f} ± {auc.std():.3f}   {seconds:6.1f} s"


def cross_check(args) -> int:
    from sss_viewer.models import build_model

    series_set, labels = bonn_segments(Path(args.data))
    fold = folds_of(labels, args.folds, args.seed)
    x = np.stack([series_set.store.series(i) for i in range(len(labels))]).astype(np.float32)
    print(
        f"Bonn D vs C: {len(labels)} segments of {x.shape[1]} samples ({int(labels.sum())} D), "
        f"stratified {args.folds}-fold, seed {args.seed}"
    )
    hydra = build_model("hydra", input_length=x.shape[1], seed=args.seed).eval()
    with torch.inference_mode():
        t0 = time.perf_counter()
        hydra_features = hydra.frozen_features(torch.from_numpy(x)).numpy()
        feature_s = time.perf_counter() - t0
    print(f"ours Hydra features of all {len(x)} segments ({hydra.n_features} features): {feature_s:.1f} s")
    if args.max_folds is not None:  # the first folds only (a shorter run)
        fold = np.where(fold < args.max_folds, fold, -1)
    results = ours(series_set, labels, fold, args.seed)
    for name, folds in results.items():
        print(summary(name, folds))
    if args.skip_aeon:
        return 0
    if not Path(args.aeon_python).exists():
        print(f"aeon: not measured ({args.aeon_python} missing; `make bench-env` builds it)")
        return 0
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "bonn.npz"
        np.savez(path, x=x, y=labels, fold=fold, hydra=hydra_features)
        command = [args.aeon_python, "-c", AEON_SCRIPT, str(path), str(args.seed), sysconfig.get_paths()["purelib"]]
        done = subprocess.run(command, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        print(f"aeon: failed\n{done.stderr[-2000:]}", file=sys.stderr)
        return 1
    aeon = json.loads(done.stdout.strip().splitlines()[-1])
    print(f"aeon {aeon['version']} Hydra features of all {len(x)} segments: {aeon['hydra_feature_seconds']:.1f} s")
    largest, relative, scale = aeon["hydra_feature_difference"]
    print(
        f"ours (seed {args.seed}) vs aeon (random_state {args.seed}) Hydra features: max |difference| {largest:.3g} "
        f"(relative {relative:.2g}) at feature magnitudes up to {scale:.3g}"
    )
    for name, folds in aeon["folds"].items():
        print(summary(name, folds))
    return 0


def speed(args) -> None:
    from sss_viewer.models import build_window_model

    L = 1024
    rng = np.random.default_rng(0)
    windows = torch.from_numpy(rng.standard_normal((args.batch, L), dtype=np.float32))
    models = {
        "hydra": build_window_model("hydra", L),
        "hydra_minirocket": build_window_model("hydra_minirocket", L),
        "minirocket (window)": build_window_model("minirocket", L, feature_context="window"),
        "minirocket (series)": build_window_model("minirocket", L),
    }
    print(
        f"frozen features of {args.batch} windows of L = {L}, {torch.get_num_threads()} threads, "
        f"median of {args.repeats}:"
    )
    for name, model in models.items():
        if hasattr(model, "initialise_from_data"):
            model.initialise_from_data(windows[:256])
        model.eval()
        with torch.inference_mode():
            seconds = median_seconds(lambda m=model: m.frozen_features(windows), args.repeats)
        print(f"  {name:22s} {model.n_features:6d} features  {seconds:6.2f} s  {args.batch / seconds:7.0f} windows/s")
    if args.skip_aeon or not Path(args.aeon_python).exists():
        return
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "windows.npy"
        np.save(path, windows.numpy())
        site = sysconfig.get_paths()["purelib"]
        command = [args.aeon_python, "-c", AEON_SPEED_SCRIPT, str(path), str(args.repeats), site, str(args.threads)]
        done = subprocess.run(command, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        print(f"aeon: failed\n{done.stderr[-2000:]}", file=sys.stderr)
        return
    aeon = json.loads(done.stdout.strip().splitlines()[-1])
    print(
        f"  {'aeon ' + aeon['version'] + ' Hydra':22s} {7168:6d} features  {aeon['seconds']:6.2f} s  "
        f"{args.batch / aeon['seconds']:7.0f} windows/s (HydraTransformer n_jobs={args.threads})"
    )


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--data", default=str(DEFAULT_DATA), help="the Bonn folder (bonn_sets_ABCDE_int16.npz)")
    p.add_argument("--folds", type=int, default=5)
    p.add_argument("--max-folds", type=int, help="run only the first folds of the cross-validation (a shorter run)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--batch", type=int, default=512, help="windows of the speed measurement")
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--threads", type=int, default=2, help="torch threads; aeon's n_jobs in the speed part")
    p.add_argument("--aeon-python", default=str(ROOT / ".venv-aeon" / "bin" / "python"))
    p.add_argument("--skip-aeon", action="store_true")
    p.add_argument("--skip-speed", action="store_true")
    p.add_argument("--skip-cross-check", action="store_true")
    args = p.parse_args(argv)
    logging.basicConfig(level=logging.WARNING)
    torch.set_num_threads(args.threads)
    if not args.skip_speed:
        speed(args)
    if not args.skip_cross_check:
        return cross_check(args)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

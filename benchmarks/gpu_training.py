"""Paper-preset training throughput: today's path against the device path, with the validation AUC of both.

Issue 33, goal 3: ``train_preset("paper")`` (PatchTST at the authors' sizes, L = 1024 pooled samples,
batch 8192) on one GPU at >= 1,000,000 training windows/s with the validation AUC unchanged. One run
trains the same synthetic in-memory cohort (``benchmarks/gpu_check.py``'s generator, sized like
``training/paper_smoke_gpu.sh``), same seed, same split, same epochs, along these paths:

* ``today``: fp32, windows gathered on the host and copied each batch, eager model (the path before
  ``TrainConfig.precision`` / ``compile`` / ``device_windows`` existed);
* ``bf16 eager``: bf16 autocast and windows gathered on the device, no compile (where the gain comes from);
* ``new``: the CUDA defaults (``"auto"``: bf16 autocast, windows on the device, ``torch.compile``).

Each epoch trains ``--batches`` full batches (``windows_per_epoch``, a multiple of the batch so no short
batch recompiles); the windows/s of a path is the median over the epochs after the first, the first
epoch's extra time is reported as warm-up (compilation). Checks, any of which fails the run (exit 1):
the device gather returns exactly the host windows; the new path's validation channel AUC is within
``AUC_TOLERANCE`` of today's (or of today's own spread over two seeds, when larger). The goal itself
(>= 1e6 windows/s) is reported ``ok`` / ``OVER``, with the implied time of the paper grid (the arithmetic
of ``training/paper_tables_gpu.sh``: 7.9e6 windows an epoch, 50 epochs, 50 SSS runs), with each epoch's validation
(1/7 as many windows, at the validation throughput measured in the same epochs) and, in brackets, without it. A watchdog ends a
run that overruns ``--timeout`` with exit 2 and the table so far.

    python benchmarks/gpu_training.py                      # CUDA, the paper sizes (about 3 minutes on an H200)
    python benchmarks/gpu_training.py --device cpu --tiny  # the logic at a tiny size, compile off (a minute)
    python benchmarks/gpu_training.py --profile            # only the new path, under torch's profiler
    python benchmarks/gpu_training.py --sdpa cudnn         # every path on one attention kernel (attention_backends.py)
    python benchmarks/gpu_training.py --gpu-kernels fused  # + the new path on PatchTST's fused Triton kernels

``--profile`` trains the new path once under ``torch.profiler`` (nothing else runs) and prints the kernels that
took the device's time, the device-busy share of the training epochs' wall time (a low share means the host —
Python and kernel launches — bounds a step, which CUDA graphs address; a high one means the kernels themselves
do) and where that time goes by kind (matrix products, attention, normalisation, optimiser, gathers, other).
"""

from __future__ import annotations

import argparse
import logging
import signal
import statistics
import sys
import time

import numpy as np
import torch

from sss_viewer.engine.config import train_preset
from sss_viewer.engine.training import default_split, train
from sss_viewer.models import build_window_model
from sss_viewer.synth.config import SynthConfig
from sss_viewer.synth.run import synthesise_recording
from sss_viewer.windows.series_set import build_series_set
from sss_viewer.windows.store import DeviceWindows

logger = logging.getLogger("gpu_training")

GOAL_WINDOWS_PER_S = 1e6
"""Issue 33, goal 3."""
AUC_TOLERANCE = 0.05
"""Largest |validation channel AUC(new) - AUC(today)| accepted (unless today's own seed spread is larger)."""
GRID_WINDOWS_PER_EPOCH = 7.9e6
"""ds003029's pooled setting after 1:1 balancing (``training/paper_tables_gpu.sh``)."""
GRID_VAL_WINDOWS_PER_EPOCH = GRID_WINDOWS_PER_EPOCH / 7
"""Validated each epoch: the channel split's 10 % of the balanced set against training's 70 % (stride 5 both)."""
GRID_EPOCHS = 50
GRID_SSS_RUNS = 5 * 2 * 5
"""≈ 5 pooled settings × 2 split modes × 5 seeds."""
GRID_GOAL_HOURS = 5.0


SDPA_CHOICES = ("default", "flash", "efficient", "cudnn", "math")
"""``--sdpa``: torch's choice, or the one attention kernel allowed (``benchmarks/attention_backends.py`` times each)."""


def restrict_sdpa(choice: str) -> None:
    """Allow only the ``choice`` kernel for :func:`torch.nn.functional.scaled_dot_product_attention` (global flags,
    read when a graph is traced, so compiled paths follow them too); ``"default"`` leaves torch's flags as they are."""
    if choice == "default":
        return
    torch.backends.cuda.enable_flash_sdp(choice == "flash")
    torch.backends.cuda.enable_mem_efficient_sdp(choice == "efficient")
    torch.backends.cuda.enable_cudnn_sdp(choice == "cudnn")
    torch.backends.cuda.enable_math_sdp(choice == "math")


class Watchdog(Exception):
    """Raised by the alarm when the run overruns ``--timeout``."""


def parse_args(argv=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--device", default="cuda", help="cuda (default) or cpu")
    p.add_argument("--tiny", action="store_true", help="tiny sizes (a check of the logic on the CPU)")
    p.add_argument("--patients", type=int, default=None, help="synthetic patients (default 16; tiny 6)")
    p.add_argument("--duration-scale", type=float, default=None, help="synthetic duration scale (0.2; tiny 0.1)")
    p.add_argument("--batch-size", type=int, default=None, help="windows per batch (paper 8192; tiny 128)")
    p.add_argument("--batches", type=int, default=None, help="batches per epoch (default 20; tiny 3)")
    p.add_argument("--epochs", type=int, default=None, help="epochs per path, the first is warm-up (4; tiny 2)")
    p.add_argument("--val-stride", type=int, default=None, help="validation stride (paper 5; tiny 64)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--no-spread", action="store_true", help="skip today's path at a second seed (the AUC spread)")
    p.add_argument(
        "--compile-modes",
        default="",
        help="extra rows on CUDA: the compiled path in these torch.compile modes, comma-separated "
        "(e.g. reduce-overhead,max-autotune-no-cudagraphs; default none)",
    )
    p.add_argument(
        "--sdpa",
        choices=SDPA_CHOICES,
        default="default",
        help="the attention kernel every path may use (torch's global flags; default: torch's own choice)",
    )
    p.add_argument(
        "--gpu-kernels",
        default="",
        help="extra rows on CUDA: the new path with PatchTST(gpu_kernels=...) for each of these, comma-separated "
        "(fused, fused-ffn, fused-attention: the fused Triton kernels); with --profile, the first is profiled",
    )
    p.add_argument("--profile", action="store_true", help="only the new path, under torch's profiler (see above)")
    p.add_argument("--timeout", type=int, default=225, help="seconds before the watchdog ends the run (225)")
    return p.parse_args(argv)


def sizes(args) -> dict:
    """The run's sizes: the paper's (CUDA) or a tiny set (a CPU check), each overridable."""
    tiny = {"patients": 6, "duration_scale": 0.1, "batch_size": 128, "batches": 3, "epochs": 2, "val_stride": 64}
    full = {"patients": 16, "duration_scale": 0.2, "batch_size": 8192, "batches": 20, "epochs": 4, "val_stride": 5}
    base = tiny if args.tiny else full
    return {k: getattr(args, k) if getattr(args, k) is not None else v for k, v in base.items()}


def cohort_series(n_patients: int, duration_scale: float, window_length: int, preprocess):
    """A synthetic multi-centre cohort (≤ 32 channels each), preprocessed in memory with the paper's pooling."""
    config = SynthConfig(duration_scale=duration_scale, max_channels=32)
    recordings = [synthesise_recording(p, 1, seed=0, config=config)[0] for p in range(n_patients)]
    return build_series_set(recordings, preprocess, min_length=window_length, progress=False)


def full_batches(series_set, config, s: dict) -> tuple[int, int]:
    """``(batches an epoch, training windows)``: at most ``s["batches"]`` full batches of ``s["batch_size"]`` (no short
    batch recompiles), refused when the cohort holds fewer training windows than one batch."""
    n_train = split_windows(series_set, config, "train", config.train_stride)
    batches = min(s["batches"], n_train // s["batch_size"])
    if batches < 1:
        raise ValueError(f"the cohort has {n_train} training windows, fewer than one batch: use more --patients")
    return batches, n_train


def new_path_options(device: str, gpu_kernels: str = "stock") -> dict:
    """The "new" path's execution options: the CUDA defaults with compile on (``"auto"`` leaves short runs eager);
    on the CPU, compile off and the others forced (bf16 autocast, windows gathered on the device). ``gpu_kernels``:
    ``PatchTST(gpu_kernels=...)``, which sub-layers run through the fused Triton kernels."""
    options = dict(compile=True) if device.startswith("cuda") else dict(precision="bf16", device_windows=True)
    return options | (dict(model_params=dict(gpu_kernels=gpu_kernels)) if gpu_kernels != "stock" else {})


def sync(device: str) -> None:
    if device.startswith("cuda"):
        torch.cuda.synchronize()


def check_device_gather(series_set, device: str, length: int, n: int, seed: int) -> bool:
    """The device gather of ``n`` random windows equals the host gather, sample for sample."""
    store = series_set.store
    rng = np.random.default_rng(seed)
    series = rng.integers(0, store.n_series, n)
    starts = store.offsets[series] + (rng.random(n) * (store.lengths[series] - length + 1)).astype(np.int64)
    on_device = DeviceWindows(store, device).windows(torch.from_numpy(starts), length).cpu().numpy()
    same = bool(np.array_equal(on_device, store.windows(starts, length)))
    print(f"device gather of {n} windows == host gather: {'ok' if same else 'FAIL'}", flush=True)
    return same


def check_flash(config, device: str) -> str:
    """Whether the model's training forward and backward run on the flash kernel under bf16 autocast."""
    if not device.startswith("cuda"):
        return "n/a (CPU)"
    from torch.nn.attention import SDPBackend, sdpa_kernel

    model = build_window_model(config.backbone, config.window_length, **config.model_params).to(device).train()
    heads, width = model.layers[0].attn.n_heads, model.patch_proj.out_features
    shape = (
        f"q/k/v (64, {heads}, {model.n_patches}, {width // heads}) bf16, dropout {model.layers[0].attn.attn_dropout}"
    )
    try:
        with sdpa_kernel([SDPBackend.FLASH_ATTENTION]), torch.autocast("cuda", dtype=torch.bfloat16):
            model(torch.randn(64, config.window_length, device=device)).sum().backward()
        sync(device)
    except RuntimeError as error:
        return f"NOT flash ({shape}): {str(error).splitlines()[0][:120]}"
    return f"flash ({shape})"


def train_path(name: str, series_set, config) -> dict:
    """Train one path; its windows/s (median after the first epoch), warm-up seconds and validation AUC."""
    t0 = time.perf_counter()
    bundle = train([], config, progress=False, series_set=series_set)
    sync(config.device)
    wall = time.perf_counter() - t0
    history = bundle.info["history"]
    n = config.windows_per_epoch
    epoch_s = [n / h["train_windows_per_s"] for h in history]
    timed = epoch_s[1:] or epoch_s
    median_s = statistics.median(timed)
    val_s = [h["seconds"] - s for h, s in zip(history, epoch_s, strict=True)]  # each epoch's validation
    n_val = split_windows(series_set, config, "val", config.val_stride)
    result = {
        "name": name,
        "windows_per_s": n / median_s,
        "val_windows_per_s": n_val / max(statistics.median(val_s[1:] or val_s), 1e-9),
        "warmup_s": max(epoch_s[0] - median_s, 0.0),
        "val_auc": float(bundle.info["val_metrics"]["auc"]),
        "best_epoch_auc": max((h["val_auc"] for h in history if np.isfinite(h["val_auc"])), default=float("nan")),
        "execution": bundle.info.get("execution", {}),
        "wall_s": wall,
    }
    print(
        f"{name}: {result['windows_per_s']:,.0f} windows/s (median of {len(timed)} epochs), validation "
        f"{result['val_windows_per_s']:,.0f} windows/s, warm-up "
        f"{result['warmup_s']:.1f} s, val channel AUC {result['val_auc']:.3f}, {result['execution']}, "
        f"wall {wall:.1f} s",
        flush=True,
    )
    return result


KERNEL_KINDS = (
    ("attention", ("flash", "attention", "sdpa", "fmha")),
    ("matrix products", ("gemm", "sm90_xmma", "cutlass", "cublas", "matmul", "nvjet", "wgmma")),
    ("normalisation", ("norm", "welford")),
    ("optimiser", ("adam", "multi_tensor", "foreach")),
    ("gathers and copies", ("index", "gather", "copy", "memcpy", "memset", "cat")),
)
"""Kernel-name fragments (lower case) that put a kernel's time under a kind; the first match wins."""


def _device_time(event) -> float:
    """An averaged profiler event's own device time, microseconds (the attribute's name moved across torch versions)."""
    for name in ("self_device_time_total", "self_cuda_time_total"):
        value = getattr(event, name, None)
        if value is not None:
            return float(value)
    return 0.0


def profile_path(name: str, series_set, config) -> None:
    """Train ``config`` once under ``torch.profiler``; print the device's busy share and its time by kernel and kind."""
    from torch.profiler import ProfilerActivity, profile

    cuda = config.device.startswith("cuda")
    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if cuda else [])
    t0 = time.perf_counter()
    with profile(activities=activities) as prof:
        bundle = train([], config, progress=False, series_set=series_set)
        sync(config.device)
    wall = time.perf_counter() - t0
    history = bundle.info["history"]
    epoch_s = [config.windows_per_epoch / h["train_windows_per_s"] for h in history]
    median_s = statistics.median(epoch_s[1:] or epoch_s)
    events = prof.key_averages()
    if not cuda:
        print(events.table(sort_by="self_cpu_time_total", row_limit=15))
        print(f"{name}: profiled on the CPU (no device time to split); wall {wall:.1f} s", flush=True)
        return
    kernels = [e for e in events if _device_time(e) > 0]
    busy = sum(_device_time(e) for e in kernels) / 1e6
    by_kind: dict[str, float] = {}
    for event in kernels:
        lowered = event.key.lower()
        kind = next((k for k, parts in KERNEL_KINDS if any(p in lowered for p in parts)), "other")
        by_kind[kind] = by_kind.get(kind, 0.0) + _device_time(event) / 1e6
    print(events.table(sort_by="self_cuda_time_total", row_limit=20), flush=True)
    share = busy / len(history) / median_s
    print(
        f"{name}: device busy {busy:.2f} s in {len(history)} epochs (wall {wall:.1f} s); a training epoch takes "
        f"{median_s:.3f} s (median after the first), so the device is busy ~{100 * share:.0f} % of it "
        "(validation, at 1/20 of the paper's windows, counted in)"
    )
    print("\n| kernels by kind | device s | share |")
    print("|---|---:|---:|")
    for kind, seconds in sorted(by_kind.items(), key=lambda kv: -kv[1]):
        print(f"| {kind} | {seconds:.3f} | {100 * seconds / max(busy, 1e-12):.0f} % |")
    print(flush=True)


def grid_hours(windows_per_s: float, val_windows_per_s: float | None = None) -> float:
    """Hours of the paper grid's SSS rows at this training throughput and, when given, validation throughput
    (each epoch validates :data:`GRID_VAL_WINDOWS_PER_EPOCH` windows; without it validation is not counted)."""
    epoch_s = GRID_WINDOWS_PER_EPOCH / windows_per_s
    if val_windows_per_s is not None:
        epoch_s += GRID_VAL_WINDOWS_PER_EPOCH / val_windows_per_s
    return epoch_s * GRID_EPOCHS * GRID_SSS_RUNS / 3600


def split_windows(series_set, config, part: str, stride: int) -> int:
    """Windows of ``config``'s ``part`` (``"train"``, ``"val"``) of ``series_set`` at ``stride``, as training draws them."""
    lengths = series_set.store.lengths[default_split(series_set.meta, config) == part]
    return int(np.maximum((lengths - config.window_length) // stride + 1, 0).sum())


def print_table(rows: list[dict], checks: dict[str, bool], notes: list[str]) -> None:
    print(
        "\n| path | windows/s | validation windows/s | warm-up s | val channel AUC | paper grid, SSS rows "
        "(training only) | goal >= 1e6 windows/s |"
    )
    print("|---|---:|---:|---:|---:|---:|---|")
    for r in rows:
        verdict = "ok" if r["windows_per_s"] >= GOAL_WINDOWS_PER_S else "OVER"
        hours = grid_hours(r["windows_per_s"], r["val_windows_per_s"])
        print(
            f"| {r['name']} | {r['windows_per_s']:,.0f} | {r['val_windows_per_s']:,.0f} | {r['warmup_s']:.1f} | "
            f"{r['val_auc']:.3f} | {hours:.1f} h ({grid_hours(r['windows_per_s']):.1f} h; goal <= "
            f"{GRID_GOAL_HOURS:g} h) | {verdict} |"
        )
    if len(rows) >= 2 and rows[0]["name"].startswith("today"):
        print(f"\nspeed-up of the last path over today's: {rows[-1]['windows_per_s'] / rows[0]['windows_per_s']:.1f}x")
    for note in notes:
        print(note)
    for name, ok in checks.items():
        print(f"check {name}: {'ok' if ok else 'FAIL'}")
    print("GPU TRAINING " + ("PASSED" if all(checks.values()) else "FAILED"), flush=True)


def main(argv=None) -> int:
    args = parse_args(argv)
    logging.basicConfig(level=logging.WARNING)
    device = args.device
    if device.startswith("cuda") and not torch.cuda.is_available():
        print("no CUDA device: run with --device cpu --tiny to check the logic")
        return 1
    s = sizes(args)

    def on_alarm(signum, frame):
        raise Watchdog

    signal.signal(signal.SIGALRM, on_alarm)
    signal.alarm(args.timeout)
    rows, checks, notes = [], {}, []
    try:
        name = torch.cuda.get_device_name(0) if device.startswith("cuda") else "cpu"
        print(f"torch {torch.__version__}, {name}, CPU threads {torch.get_num_threads()}, sizes {s}", flush=True)
        common = dict(
            device=device, seed=args.seed, batch_size=s["batch_size"], epochs=s["epochs"], patience=s["epochs"]
        )
        paper = train_preset("paper", **common, val_stride=s["val_stride"])
        t0 = time.perf_counter()
        series_set = cohort_series(s["patients"], s["duration_scale"], paper.window_length, paper.preprocess)
        batches, n_train = full_batches(series_set, paper, s)
        common.update(windows_per_epoch=batches * s["batch_size"], val_stride=s["val_stride"])
        paper = train_preset("paper", **common)
        print(
            f"cohort: {s['patients']} synthetic patients, {series_set.store.n_series} series, "
            f"{series_set.store.n_samples * 4 / 1e6:.0f} MB, {n_train} training windows, prepared in "
            f"{time.perf_counter() - t0:.1f} s; epochs of {batches} batches of {s['batch_size']}",
            flush=True,
        )
        checks["device gather == host gather"] = check_device_gather(
            series_set, device, paper.window_length, min(s["batch_size"], 8192), args.seed
        )
        notes.append(f"attention kernel under bf16: {check_flash(paper, device)}")
        restrict_sdpa(args.sdpa)  # after check_flash, which asks for the flash kernel itself
        if args.sdpa != "default":
            notes.append(f"every path's attention restricted to the {args.sdpa} kernel (--sdpa)")
        if args.profile:
            light = {**common, "val_stride": 20 * s["val_stride"]}  # the device time is then mostly training's
            kernels = ([k for k in args.gpu_kernels.split(",") if k] or ["stock"])[0]
            options = new_path_options(device, kernels)
            label = "new path" + (f" with gpu_kernels={kernels}" if kernels != "stock" else "")
            profile_path(f"{label} under the profiler", series_set, train_preset("paper", **light, **options))
            return 0
        today = dict(precision="fp32", compile=False, device_windows=False)
        rows.append(
            train_path("today (fp32, host gather, eager)", series_set, train_preset("paper", **common, **today))
        )
        spread = 0.0
        if not args.no_spread:
            other = train_path(
                "today, seed + 1 (AUC spread)",
                series_set,
                train_preset("paper", **{**common, "seed": args.seed + 1}, **today),
            )
            spread = abs(other["val_auc"] - rows[0]["val_auc"])
            notes.append(f"today's validation AUC over two seeds differs by {spread:.3f}")
        eager = dict(precision="bf16", compile=False, device_windows=True)
        rows.append(train_path("bf16 + device gather, eager", series_set, train_preset("paper", **common, **eager)))
        if device.startswith("cuda"):
            try:
                compiled = train_preset("paper", **common, **new_path_options(device))
                new = train_path("new (CUDA defaults: bf16, device gather, compiled)", series_set, compiled)
            except Exception as error:  # the table still prints: what failed is its last line
                checks["new path trains"] = False
                notes.append(f"new path failed: {type(error).__name__}: {str(error).splitlines()[0][:200]}")
                logger.exception("new path failed")
                print_table(rows, checks, notes)
                return 1
        else:  # compile stays off on the CPU: the forced options of the new path
            new = rows.pop()
            new["name"] = "new (forced on the CPU: bf16, device gather, no compile)"
        rows.append(new)
        gap = abs(new["val_auc"] - rows[0]["val_auc"])
        allowed = max(AUC_TOLERANCE, spread)
        notes.append(f"|val AUC new - today| = {gap:.3f} (allowed {allowed:.3f}: max({AUC_TOLERANCE}, seed spread))")
        checks["validation AUC unchanged"] = bool(np.isfinite(gap) and gap <= allowed)
        candidates = [(f"mode={m}", dict(compile=m)) for m in args.compile_modes.split(",") if m]
        for kernels in [k for k in args.gpu_kernels.split(",") if k]:
            candidates.append((f"gpu_kernels={kernels}", new_path_options(device, kernels)))
        for label, options in candidates if device.startswith("cuda") else []:
            try:  # goal 3's candidates (CUDA graphs, autotuned kernels, fused sub-layers), each beside the rows above
                row = train_path(f"compiled, {label}", series_set, train_preset("paper", **common, **options))
            except Exception as error:
                notes.append(f"{label} failed: {type(error).__name__}: {str(error).splitlines()[0][:200]}")
                logger.exception("%s failed", label)
                continue
            rows.append(row)
            notes.append(f"|val AUC {label} - today| = {abs(row['val_auc'] - rows[0]['val_auc']):.3f}")
    except Watchdog:
        checks[f"finished within --timeout {args.timeout} s"] = False
        print_table(rows, checks, notes)
        return 2
    finally:
        signal.alarm(0)
    print_table(rows, checks, notes)
    return 0 if all(checks.values()) else 1


if __name__ == "__main__":
    sys.exit(main())

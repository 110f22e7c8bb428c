"""Training and inference throughput (windows/s) of the default PatchTST at L=1024, fast vs naive.

Both paths use the same model, batch size and thread count, and are measured in the same run;
each figure is the median of ``--repeats`` timed passes.

* **fast**: one contiguous float32 1-D store plus int64 window starts; each batch is gathered by
  index arithmetic, ``store[starts[:, None] + arange(L)]`` (``SeriesStore.windows``).
* **naive**: every window materialised as an ``(N, L)`` copy, a ``torch.utils.data.Dataset``
  whose ``__getitem__`` returns one window and its series id, the default ``DataLoader`` collate.

A training step is forward + BCE on the mean sigmoid probability of each series in the batch
(series ids from a random assignment) + an Adam step. Inference runs under
``torch.inference_mode()`` in eval mode.

    .venv/bin/python benchmarks/throughput.py [--batch-size 1024] [--repeats 5] [--threads 2]
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable, Iterator

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from sss_viewer.models import build_model


def gather_windows(store: Tensor, starts: Tensor, length: int) -> Tensor:
    """``store[starts[:, None] + arange(length)]`` → (B, length): ``SeriesStore.windows`` on a tensor.

    The package gathers from NumPy segments (so memory-mapped caches work); the benchmark keeps
    the store as one tensor so the same arithmetic can run on the GPU.
    """
    return store.unfold(0, length, 1).index_select(0, starts.to(store.device))


class NaiveWindows(torch.utils.data.Dataset):
    """Per-item dataset over materialised windows: ``(window (L,), series id)``."""

    def __init__(self, windows: Tensor, series: Tensor) -> None:
        self.windows = windows
        self.series = series

    def __len__(self) -> int:
        return len(self.windows)

    def __getitem__(self, i: int) -> tuple[Tensor, Tensor]:
        return self.windows[i], self.series[i]


class _Transpose(nn.Module):
    def forward(self, x: Tensor) -> Tensor:
        return x.transpose(1, 2)


class _ReferenceLayer(nn.Module):
    """Official PatchTST encoder layer with stock modules (nn.MultiheadAttention, nn.Dropout)."""

    def __init__(self, d_model: int, d_ff: int, n_heads: int, dropout: float, attn_dropout: float):
        super().__init__()
        self.attn = nn.MultiheadAttention(d_model, n_heads, dropout=attn_dropout, batch_first=True)
        self.ff = nn.Sequential(nn.Linear(d_model, d_ff), nn.GELU(), nn.Dropout(dropout), nn.Linear(d_ff, d_model))
        self.norm_attn = nn.Sequential(_Transpose(), nn.BatchNorm1d(d_model), _Transpose())
        self.norm_ff = nn.Sequential(_Transpose(), nn.BatchNorm1d(d_model), _Transpose())
        self.drop_attn, self.drop_ff = nn.Dropout(dropout), nn.Dropout(dropout)

    def forward(self, x: Tensor) -> Tensor:
        x = self.norm_attn(x + self.drop_attn(self.attn(x, x, x, need_weights=False)[0]))
        return self.norm_ff(x + self.drop_ff(self.ff(x)))


class ReferencePatchTST(nn.Module):
    """The same architecture and sizes as ``sss_viewer``'s PatchTST, written with stock
    ``torch.nn`` modules the way the official/authors' code is (transposes around BatchNorm1d,
    ``nn.MultiheadAttention``, ``nn.Dropout``). Used only to show what the package's kernels buy.
    """

    def __init__(self, cfg: dict) -> None:
        super().__init__()
        from sss_viewer.models import RevIN

        self.cfg = cfg
        d, n_patches = cfg["d_model"], (cfg["window_length"] - cfg["patch_len"]) // cfg["patch_stride"] + 2
        self.revin = RevIN(cfg["revin_eps"])
        self.proj = nn.Linear(cfg["patch_len"], d)
        self.pos = nn.Parameter(torch.empty(n_patches, d).uniform_(-0.02, 0.02))
        self.layers = nn.Sequential(
            *(
                _ReferenceLayer(d, cfg["d_ff"], cfg["n_heads"], cfg["dropout"], cfg["attn_dropout"])
                for _ in range(cfg["n_layers"])
            )
        )
        self.head = nn.Linear(n_patches * d, 1)

    def forward(self, x: Tensor) -> Tensor:
        x = self.revin(x)
        x = torch.cat([x, x[:, -1:].expand(-1, self.cfg["patch_stride"])], dim=1)
        z = self.proj(x.unfold(-1, self.cfg["patch_len"], self.cfg["patch_stride"])) + self.pos
        return self.head(self.layers(z).flatten(1)).squeeze(-1)


def make_store(n_windows: int, n_series: int, length: int, stride: int, seed: int = 0):
    """Random signals for ``n_series`` series laid end to end, and ``n_windows`` window starts.

    Returns
    -------
    store : Tensor, shape (n_samples,), float32
    starts : Tensor, shape (n_windows,), int64
        Absolute starts in ``store``; windows never cross a series boundary.
    series : Tensor, shape (n_windows,), int64
        Series id of each window (the series are the ``n_series`` random "channels").
    """
    gen = torch.Generator().manual_seed(seed)
    per_series = -(-n_windows // n_series)
    series_len = length + (per_series - 1) * stride
    store = torch.randn(n_series * series_len, generator=gen)
    local = torch.arange(per_series) * stride
    starts = (torch.arange(n_series)[:, None] * series_len + local).reshape(-1)[:n_windows]
    series = torch.arange(n_series).repeat_interleave(per_series)[:n_windows]
    return store, starts.contiguous(), series.contiguous()


def fast_batches(
    store: Tensor, starts: Tensor, series: Tensor, length: int, batch_size: int, gen: torch.Generator
) -> Iterator[tuple[Tensor, Tensor]]:
    """Shuffled batches gathered from the store by index arithmetic."""
    order = torch.randperm(len(starts), generator=gen)
    for i in range(0, len(order), batch_size):
        idx = order[i : i + batch_size]
        yield gather_windows(store, starts[idx], length), series[idx]


def series_loss(logits: Tensor, series: Tensor, labels: Tensor) -> Tensor:
    """BCE of the mean sigmoid probability of each series present in the batch."""
    present, inverse = torch.unique(series, return_inverse=True)
    probs = torch.sigmoid(logits)
    sums = torch.zeros(len(present)).index_add_(0, inverse, probs)
    mean_p = (sums / torch.bincount(inverse).to(probs.dtype)).clamp(1e-6, 1 - 1e-6)
    return F.binary_cross_entropy(mean_p, labels[present])


Batches = Callable[[], Iterator[tuple[Tensor, Tensor]]]


def time_pass(batches: Batches, work: Callable[[Tensor, Tensor], None], max_windows: int) -> float:
    """Windows/s of ``work`` over the batches of one pass, stopping after ``max_windows``."""
    n = 0
    t0 = time.perf_counter()
    for x, s in batches():
        work(x, s)
        n += len(x)
        if n >= max_windows:
            break
    return n / (time.perf_counter() - t0)


def measure(
    mode: str, runs: dict[str, tuple[Batches, Callable[[Tensor, Tensor], None]]], max_windows: int, repeats: int
) -> dict[str, float]:
    """Median windows/s per variant; the variants alternate within each repeat."""
    for batches, work in runs.values():  # warm-up (allocator, lazy init)
        time_pass(batches, work, 1)
    rates: dict[str, list[float]] = {key: [] for key in runs}
    for _ in range(repeats):
        for key, (batches, work) in runs.items():
            rates[key].append(time_pass(batches, work, max_windows))
    med = {key: statistics.median(r) for key, r in rates.items()}
    for key, r in rates.items():
        spread = ", ".join(f"{v:.0f}" for v in r)
        print(f"{mode:5s} {key:10s} {med[key]:7.0f} windows/s   (repeats: {spread})", flush=True)
    print(
        f"{mode:5s} ratio fast/naive = {med['fast'] / med['naive']:.2f}"
        + (f", fast/naive+ref = {med['fast'] / med['naive+ref']:.2f}" if "naive+ref" in med else ""),
        flush=True,
    )
    return med


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch-size", type=int, default=1024)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument(
        "--n-windows", type=int, default=16384, help="windows in the synthetic pool (the naive path materialises all)"
    )
    parser.add_argument("--n-series", type=int, default=64)
    parser.add_argument("--window-length", type=int, default=1024)
    parser.add_argument("--stride", type=int, default=5, help="window stride in samples")
    parser.add_argument("--train-windows", type=int, default=1024, help="training windows timed per repeat and variant")
    parser.add_argument(
        "--infer-windows", type=int, default=4096, help="inference windows timed per repeat and variant"
    )
    parser.add_argument("--skip-train", action="store_true")
    parser.add_argument("--skip-infer", action="store_true")
    parser.add_argument(
        "--skip-reference",
        action="store_true",
        help="skip the naive+ref row (stock torch.nn PatchTST on the naive path)",
    )
    args = parser.parse_args()

    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    L, bs = args.window_length, args.batch_size
    store, starts, series = make_store(args.n_windows, args.n_series, L, args.stride)
    labels = (torch.rand(args.n_series) < 0.5).float()
    # Training: a random series assignment per window (the loss only needs ids and labels).
    train_series = torch.randint(0, args.n_series, (len(starts),))

    t0 = time.perf_counter()
    materialised = gather_windows(store, starts, L).clone()  # the naive (N, L) copy
    t_mat = time.perf_counter() - t0
    print(
        f"torch {torch.__version__}, {torch.get_num_threads()} threads, L={L}, batch {bs}, "
        f"pool {len(starts)} windows from {args.n_series} series at stride {args.stride}"
    )
    print(
        f"fast: store {store.numel() * 4 / 2**20:.1f} MiB + starts {starts.numel() * 8 / 2**20:.2f} MiB; "
        f"naive: copy {materialised.numel() * 4 / 2**20:.1f} MiB (built in {t_mat:.2f} s, untimed)"
    )

    # the package's opt-in CPU kernels (PatchTST's default is the stock ones; benchmarks/patchtst_kernels.py)
    model: nn.Module = build_model("patchtst", window_length=L, cpu_kernels="custom")
    cfg = model.get_config()
    print(f"model: {cfg}")
    models = {"pkg": model}
    if not args.skip_reference:
        models["ref"] = ReferencePatchTST(cfg)
    print(
        "variants: fast = package model + store/starts gather; naive = package model + "
        "per-item Dataset/DataLoader; naive+ref = stock torch.nn PatchTST + per-item Dataset"
    )

    def loader(series_ids: Tensor, shuffle: bool) -> Batches:
        gen = torch.Generator().manual_seed(1)
        dl = torch.utils.data.DataLoader(
            NaiveWindows(materialised, series_ids), batch_size=bs, shuffle=shuffle, generator=gen
        )
        return lambda: iter(dl)

    def variants(fast: Batches, naive: Batches, work: Callable[[nn.Module], Callable]) -> dict:
        runs = {"fast": (fast, work(models["pkg"])), "naive": (naive, work(models["pkg"]))}
        if "ref" in models:
            runs["naive+ref"] = (naive, work(models["ref"]))
        return runs

    if not args.skip_infer:

        def infer(m: nn.Module) -> Callable[[Tensor, Tensor], None]:
            m.eval()

            def run(x: Tensor, _s: Tensor) -> None:
                with torch.inference_mode():
                    m(x)

            return run

        def in_order():  # every window in order, as when scoring
            return (
                (gather_windows(store, starts[i : i + bs], L), series[i : i + bs]) for i in range(0, len(starts), bs)
            )

        measure("infer", variants(in_order, loader(series, False), infer), args.infer_windows, args.repeats)

    if not args.skip_train:

        def train(m: nn.Module) -> Callable[[Tensor, Tensor], None]:
            m.train()
            opt = torch.optim.Adam(m.parameters(), lr=1e-4, weight_decay=1e-4)

            def step(x: Tensor, s: Tensor) -> None:
                opt.zero_grad(set_to_none=True)
                series_loss(m(x), s, labels).backward()
                opt.step()

            return step

        gen = torch.Generator().manual_seed(2)
        shuffled: Batches = lambda: fast_batches(store, starts, train_series, L, bs, gen)  # noqa: E731
        measure("train", variants(shuffled, loader(train_series, True), train), args.train_windows, args.repeats)

    if torch.cuda.is_available():
        gpu_throughput(model, store, starts, L, bs, args.repeats)


def gpu_throughput(model: nn.Module, store: Tensor, starts: Tensor, L: int, bs: int, repeats: int) -> None:
    """Inference and training windows/s on the GPU, fast data path (store on the device)."""
    dev = torch.device("cuda")
    model = model.to(dev)
    store_d, starts_d = store.to(dev), starts.to(dev)
    labels = torch.rand(64, device=dev).round()
    opt = torch.optim.Adam(model.parameters(), lr=1e-4)

    def run(train: bool) -> float:
        model.train(train)
        idx = torch.randint(0, len(starts_d), (bs,), device=dev)
        x, s = gather_windows(store_d, starts_d[idx], L), idx % 64
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        for _ in range(10):
            if train:
                opt.zero_grad(set_to_none=True)
                logits = model(x)
                present, inverse = torch.unique(s, return_inverse=True)
                sums = torch.zeros(len(present), device=dev).index_add_(0, inverse, torch.sigmoid(logits))
                mean_p = (sums / torch.bincount(inverse)).clamp(1e-6, 1 - 1e-6)
                F.binary_cross_entropy(mean_p, labels[present]).backward()
                opt.step()
            else:
                with torch.inference_mode():
                    model(x)
        torch.cuda.synchronize()
        return 10 * bs / (time.perf_counter() - t0)

    for mode in ("infer", "train"):
        run(mode == "train")
        rate = statistics.median(run(mode == "train") for _ in range(repeats))
        print(f"gpu    {mode:6s} {rate:8.0f} windows/s ({torch.cuda.get_device_name()})")


if __name__ == "__main__":
    main()

"""The fused Triton evidence kernel (issue 33) against the numba CPU path, through Triton's interpreter.

The interpreter must be switched on before triton is imported (``TRITON_INTERPRET=1``), so the
kernel runs in a child python; these tests run without a GPU. The kernel's per-position evidence is
the numba path's bit for bit (the same float32 operations in the same order), so window logits may
differ only by the float64 sums (each tile's running sums, then the tiles' totals) and the division by the
positions (another order of the same float64 additions): the tolerance is ``1e-9`` on logits of order 1, far below what one flipped
comparison (a weight over a window's positions, ~1e-4) or a float32 rounding of the evidence (~1e-8)
moves a logit, so a wrong tap, bias, group or window offset fails it.
"""

from __future__ import annotations

import os

import numpy as np
import pytest
import torch

from sss_viewer.models import build_window_model
from sss_viewer.models._minirocket_series import SeriesLayout, fold_head, torch_window_logits, window_logits
from tests.fixtures.interpreter import run_cases_in_interpreter

triton = pytest.importorskip("triton", reason="the fused evidence kernel needs triton")

from sss_viewer.models import _minirocket_triton as minirocket_triton  # noqa: E402  (after the skip: it needs triton)

L = 64
"""Window length of the model: dilations 1-7, 6 to 1 biases per kernel (1 or 2 groups of four)."""
ATOL = 1e-9
"""Logits: the same float32 evidence, float64 prefix sums added in another order."""


def _model(seed: int):
    """A MiniRocket classifier with biases fitted to random data, a random head and standardiser statistics."""
    rng = np.random.default_rng(seed)
    model = build_window_model("minirocket", L, num_features=1344, seed=seed % 1000)
    model.initialise_from_data(torch.from_numpy(rng.standard_normal((16, L), dtype=np.float32)))
    with torch.no_grad():
        model.head.weight.copy_(torch.from_numpy(rng.normal(0.0, 0.05, model.head.weight.shape).astype(np.float32)))
        model.head.bias.fill_(-0.2)
        model.norm.update(torch.from_numpy(rng.random((64, model.n_features), dtype=np.float32)))
    return model.eval()


def _ends_and_stride(length: int, window: int, stride: int) -> np.ndarray:
    """Starts every ``stride`` samples, and the first and last possible start."""
    return np.unique(np.concatenate([np.arange(0, length - window + 1, stride), [0, length - window]]))


def run_cases(seed: int, device: str = "cpu") -> dict[str, np.ndarray]:
    """Window logits by the Triton kernel on ``device`` and by the numba path on fresh random channels.

    On the CPU this runs in the child python that has Triton's interpreter on.

    Returns
    -------
    dict of ndarray, float64
        ``<case>_triton`` (the generic kernel), ``<case>_baked`` (the kernel with the model's numbers
        compiled in), ``<case>_tile`` (running sums over tiles, ``prefix="tile"``: the generic kernel for
        ``rows``, the baked one otherwise) and ``<case>_numba`` for each case: ``rows`` (channels of 540 and 64 samples
        zero-padded into one batch, ``rows=`` given, tiles of 512 positions), ``all`` (every row at
        every start, ``rows`` not given, the default tile), ``short`` (windows of 32 samples, which the
        kernels of dilations 4-7 reach across: their unpadded evidence joins the padded one).
    """
    assert minirocket_triton.triton_available(device), f"triton cannot run on {device} (TRITON_INTERPRET=1 on the CPU)"
    rng = np.random.default_rng(seed)
    model = _model(seed)
    weights, constant = fold_head(model)
    channels = [rng.standard_normal(n).astype(np.float32) * 2 + 0.5 for n in (540, 300, L)]
    channels[0][100:180] = 0.0  # flat: outputs exactly 0, ties with biases at 0
    out = {}
    pair = [channels[0], channels[2]]
    batch = np.zeros((2, 540), dtype=np.float32)
    for i, c in enumerate(pair):
        batch[i, : len(c)] = c
    series = np.concatenate([np.full(len(_ends_and_stride(len(c), L, 23)), i) for i, c in enumerate(pair)])
    start = np.concatenate([_ends_and_stride(len(c), L, 23) for c in pair])

    def triton_logits(x: np.ndarray, starts: np.ndarray, window: int, **options) -> np.ndarray:
        layout = SeriesLayout.of(model.features, window)
        x_t = torch.from_numpy(np.atleast_2d(x)).to(device)
        return minirocket_triton.triton_window_logits(model.features, layout, weights, constant, x_t, starts, **options)

    for kernel, prefix, name in (
        ("generic", "torch", "rows_triton"),
        ("baked", "torch", "rows_baked"),
        ("generic", "tile", "rows_tile"),
    ):
        got = triton_logits(batch, start, L, rows=series, block=512, kernel=kernel, prefix=prefix)
        out[name] = got.cpu().numpy()
    out["rows_numba"] = window_logits(model.features, weights, constant, pair, series, start, L)
    two = [channels[0][:300], channels[1]]
    start = _ends_and_stride(300, L, 31)
    got = torch_window_logits(
        model.features, weights, constant, torch.from_numpy(np.stack(two)).to(device), start, L, evidence="triton"
    )
    out["all_triton"] = got.cpu().numpy()
    for prefix, name in (("torch", "all_baked"), ("tile", "all_tile")):
        out[name] = triton_logits(np.stack(two), start, L, kernel="baked", prefix=prefix).cpu().numpy()
    out["all_numba"] = np.stack(
        [window_logits(model.features, weights, constant, two, np.full(len(start), i), start, L) for i in range(2)]
    )
    short = 32
    start = _ends_and_stride(300, short, 17)
    for name, options in (
        ("short_triton", {"kernel": "generic"}),
        ("short_baked", {"kernel": "baked"}),
        ("short_tile", {"kernel": "baked", "prefix": "tile", "block": 64, "num_warps": 2}),  # 5 tiles of 300 samples
    ):
        out[name] = triton_logits(channels[1], start, short, **options).cpu().numpy()[0]
    out["short_numba"] = window_logits(model.features, weights, constant, [channels[1]], 0 * start, start, short)
    return out


def test_the_model_exercises_every_branch_of_the_kernel():
    layout = SeriesLayout.of(_model(0).features, L)
    groups = -(-layout.n_biases // 4)
    assert groups.max() == 2 and groups.min() == 1  # one or two groups of four biases (the last padded with +inf)
    assert (layout.window_length > 8 * layout.dilations).all()  # every dilation inner at L ...
    assert (32 <= 8 * layout.dilations).any() and (32 > 8 * layout.dilations).any()  # ... mixed at 32


def test_triton_kernel_under_the_interpreter_equals_the_numba_path(tmp_path):
    seed = int(np.random.SeedSequence().entropy % 2**31)  # fresh inputs each run; the seed is in any failure
    _assert_cases_agree(run_cases_in_interpreter(__name__, seed, tmp_path), seed)


def _assert_cases_agree(got, seed: int) -> None:
    for case in ("rows", "all", "short"):
        triton_logits, numba_logits = got[f"{case}_triton"], got[f"{case}_numba"]
        assert triton_logits.shape == numba_logits.shape, case
        assert np.ptp(numba_logits) > 0.05, case  # windows differ: the comparison is not between constants
        np.testing.assert_allclose(triton_logits, numba_logits, rtol=0, atol=ATOL, err_msg=f"{case}, seed {seed}")
        # the baked kernel: the same float32 evidence; its tiles differ, so float64 sums in another order
        for variant in ("baked", "tile"):  # running sums over tiles: the same sums in another order again
            other = got[f"{case}_{variant}"]
            np.testing.assert_allclose(
                other, triton_logits, rtol=0, atol=1e-12, err_msg=f"{case} {variant}, seed {seed}"
            )


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_cuda_triton_kernel_equals_the_numba_path():
    seed = int(np.random.SeedSequence().entropy % 2**31)
    _assert_cases_agree(run_cases(seed, "cuda"), seed)


def test_without_the_interpreter_the_cpu_cannot_run_the_kernel():
    if os.environ.get("TRITON_INTERPRET") == "1":
        pytest.skip("this process runs triton's interpreter")
    assert not minirocket_triton.triton_available("cpu")
    model = _model(1)
    weights, constant = fold_head(model)
    with pytest.raises(RuntimeError, match="evidence='triton' needs triton and a CUDA device"):
        torch_window_logits(model.features, weights, constant, torch.zeros(1, 200), np.array([0]), L, evidence="triton")


def test_device_tables_are_uploaded_once_per_model_and_head():
    model = _model(2)
    weights, constant = fold_head(model)
    cpu = torch.device("cpu")
    layout = SeriesLayout.of(model.features, L)
    first = minirocket_triton._tables(model.features, layout, weights, cpu)
    assert minirocket_triton._tables(model.features, SeriesLayout.of(model.features, L), weights, cpu) is first
    assert minirocket_triton._tables(model.features, layout, weights.copy(), cpu) is not first  # another head
    short = SeriesLayout.of(model.features, 32)
    assert minirocket_triton._tables(model.features, short, weights, cpu) is not first  # another window length
    with torch.no_grad():
        model.features.biases.add_(1.0)  # refitted in place: its version counter moves
    again = minirocket_triton._tables(model.features, SeriesLayout.of(model.features, L), weights, cpu)
    assert again is not first
    np.testing.assert_array_equal(again.layout.biases, first.layout.biases + np.float32(1.0))
    assert again.step_biases.device == cpu and again.groups == tuple(-(-layout.n_biases // 4))
    for di, (biases, cum_weights, nb) in enumerate(again.baked):  # compiled-in tables: the steps without padding
        assert nb == layout.n_biases[di] and len(biases) == len(cum_weights) == 84 * nb
        assert np.isfinite(biases).all()
        kernel_five = slice(5 * nb, 6 * nb)
        np.testing.assert_array_equal(biases[kernel_five], np.sort(biases[kernel_five]))


def test_an_unknown_kernel_form_is_refused_by_name():
    model = _model(3)
    weights, constant = fold_head(model)
    layout = SeriesLayout.of(model.features, L)
    with pytest.raises(ValueError, match="kernel"):
        minirocket_triton.triton_window_logits(
            model.features, layout, weights, constant, torch.zeros(1, 200), np.array([0]), kernel="fused"
        )


@pytest.mark.parametrize("n_positions, block", [(300, 128), (256, 128), (5, 8), (1024, 1024), (1030, 64)])
def test_prefix_sums_from_tile_running_sums_equal_a_cumulative_sum(n_positions, block):
    rng = np.random.default_rng(n_positions + block)
    evidence = torch.from_numpy(rng.normal(size=(3, n_positions)))
    running = torch.zeros(3, n_positions + 1, dtype=torch.float64)  # what the kernel writes with prefix="tile"
    for lo in range(0, n_positions, block):
        running[:, 1 + lo : 1 + lo + block] = evidence[:, lo : lo + block].cumsum(1)
    expected = torch.cat([torch.zeros(3, 1, dtype=torch.float64), evidence.cumsum(1)], dim=1)  # E[j], j = 0 .. T
    j = torch.arange(n_positions + 1)
    offsets = minirocket_triton._tile_offsets(running, block)
    torch.testing.assert_close(minirocket_triton._prefix_at(running, offsets, j, None, block), expected)
    rows = torch.from_numpy(rng.integers(0, 3, n_positions + 1))
    torch.testing.assert_close(minirocket_triton._prefix_at(running, offsets, j, rows, block), expected[rows, j])

"""PatchTST's fused feed-forward kernels (issue 33, goal 3) against torch's layers, through Triton's interpreter.

The interpreter must be on before triton is imported (``TRITON_INTERPRET=1``), so the kernels run in a child
python; these tests need no GPU. The reference is torch's own ``Linear → GELU → Dropout → Linear`` with the mask
the kernels drew (:func:`~sss_viewer.models._patchtst_triton.keep_mask`), so a wrong product, bias, GELU
derivative, dropout scale, mask offset or partial sum of the weight gradients fails. The interpreter's ``tl.dot``
misreads bfloat16 (it multiplies the raw bits), so bfloat16 is checked on a GPU only; float16 stands in for a
16-bit input here.
"""

from __future__ import annotations

import os

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from sss_viewer.models import build_window_model
from tests.fixtures.interpreter import FP_FUSION_NOTICE, keep_bytes_reference, run_cases_in_interpreter

pytest.importorskip("triton", reason="the fused feed-forward kernels need triton")

M = 300
"""Tokens: not a multiple of either kernel's row block, and more blocks than the interpreter's backward programs."""
D_MODEL, D_FF = 32, 128
MODEL_CASES = ((False, "fused"), (True, "fused"), (False, "fused-ffn"), (False, "fused-attention"))
"""(authors_block, gpu_kernels) of the whole-model cases."""
SIZES = dict(window_length=64, patch_len=16, patch_stride=8, d_model=16, d_ff=32, n_heads=2, n_layers=2)
"""A small PatchTST whose widths the kernels take (8 tokens a window)."""


def _leaves(seed: int, dtype: torch.dtype, device: str) -> list[torch.Tensor]:
    """``x, W1, b1, W2, b2`` at the scales of a trained layer, as leaves that collect gradients."""
    g = torch.Generator().manual_seed(seed)
    shapes_scales = (
        ((M, D_MODEL), 1.0),
        ((D_FF, D_MODEL), 0.2),
        ((D_FF,), 0.1),
        ((D_MODEL, D_FF), 0.1),
        ((D_MODEL,), 0.1),
    )
    return [
        (torch.randn(shape, generator=g) * scale).to(device, dtype).requires_grad_() for shape, scale in shapes_scales
    ]


def _values_and_grads(y: torch.Tensor, dy: torch.Tensor, leaves: list[torch.Tensor]) -> list[np.ndarray]:
    grads = torch.autograd.grad(y, leaves, dy)
    return [t.detach().float().cpu().numpy() for t in (y, *grads)]


def _op_case(seed: int, dtype: torch.dtype, p: float, device: str) -> dict[str, np.ndarray]:
    """The fused operator and torch's layers with the kernels' mask: output and the five gradients of each."""
    from sss_viewer.models import _patchtst_triton as fused

    leaves = _leaves(seed, dtype, device)
    dy = torch.randn((M, D_MODEL), generator=torch.Generator().manual_seed(seed + 1)).to(device, dtype)
    drop_seed = torch.tensor([seed], dtype=torch.int64, device=device)
    got = _values_and_grads(fused.fused_ffn_forward(*leaves, drop_seed, p), dy, leaves)
    keep = fused.keep_mask(drop_seed, M, D_FF, p)
    x, w1, b1, w2, b2 = leaves
    hidden = F.gelu(F.linear(x.float(), w1.float(), b1.float()))
    if p:
        hidden = hidden * keep / ((256 - round(256 * p)) / 256)  # p as a multiple of 1/256
    want = _values_and_grads(F.linear(hidden.to(dtype).float(), w2.float(), b2.float()), dy.float(), leaves)
    tag = f"{str(dtype).split('.')[-1]}_p{int(p * 10)}"
    out = {f"{tag}_got_{i}": a for i, a in enumerate(got)}
    out |= {f"{tag}_want_{i}": a for i, a in enumerate(want)}
    out[f"{tag}_keep"] = keep.cpu().numpy()
    return out


def _model_case(seed: int, authors_block: bool, kernels: str, device: str) -> dict[str, np.ndarray]:
    """A PatchTST on fused kernels (``gpu_kernels=kernels``) against the same weights on torch's layers, dropout off.

    Training mode (BatchNorm on batch statistics, as in a training step): logits and every parameter's gradient.
    """
    sizes = dict(SIZES, dropout=0.0, attn_dropout=0.0, authors_block=authors_block)
    torch.manual_seed(seed)
    stock = build_window_model("patchtst", **sizes).to(device).train()
    fused = build_window_model("patchtst", **sizes, gpu_kernels=kernels).to(device).train()
    fused.load_state_dict(stock.state_dict())
    x = torch.randn((12, SIZES["window_length"]), generator=torch.Generator().manual_seed(seed)).to(device)
    tag = f"{'authors' if authors_block else 'official'}_{kernels}"
    out = {}
    for name, model in (("stock", stock), ("fused", fused)):
        logits = model(x)
        logits.square().sum().backward()
        out[f"{tag}_{name}_logits"] = logits.detach().cpu().numpy()
        out[f"{tag}_{name}_grads"] = np.concatenate([p.grad.cpu().numpy().ravel() for p in model.parameters()])
    return out


def run_cases(seed: int, device: str = "cpu") -> dict[str, np.ndarray]:
    """Every case on ``device`` (on the CPU, in the child python that has Triton's interpreter on).

    Returns
    -------
    dict of ndarray
        ``<dtype>_p<10 p>_got_<i>`` / ``_want_<i>`` (i = 0: output ``(M, d_model)``; 1-5: the gradients of x, W1,
        b1, W2, b2) and ``_keep`` (the mask, ``(M, d_ff)``); ``<block>_<stock|fused>_logits`` ``(12,)`` and
        ``_grads`` (every parameter's gradient, flattened) for both encoder blocks; ``other_seed_keep``.
    """
    from sss_viewer.models import _patchtst_triton as fused

    out = {}
    for dtype, p in ((torch.float32, 0.0), (torch.float32, 0.3), (torch.float16, 0.3)):
        out |= _op_case(seed, dtype, p, device)
    if device == "cuda":
        out |= _op_case(seed, torch.bfloat16, 0.3, device)
    for authors_block, kernels in MODEL_CASES:
        out |= _model_case(seed, authors_block, kernels, device)
    out["other_seed_keep"] = fused.keep_mask(torch.tensor([seed + 1], device=device), M, D_FF, 0.3).cpu().numpy()
    return out


@pytest.fixture(scope="module")
def interpreted(tmp_path_factory):
    seed = int(np.random.SeedSequence().entropy % 2**31)  # fresh inputs each run; the seed is in any failure
    return seed, run_cases_in_interpreter(__name__, seed, tmp_path_factory.mktemp("fused_ffn"))


KEPT = 179 / 256
"""The kept share at p = 0.3: the kernels drop a unit when its 8-bit draw is below round(256 p) = 77."""

TOLERANCE = {"float32": 2e-5, "float16": 2e-2, "bfloat16": 5e-2}
"""Largest error allowed, relative to the largest magnitude of the compared array: float32 and float16 products
against float32 ones (the 16-bit hidden layer is rounded before the second product in both)."""


def _assert_op_cases(got, seed: int, dtypes: tuple[str, ...]) -> None:
    for tag in [f"{d}_p{p}" for d in dtypes for p in ((0, 3) if d == "float32" else (3,))]:
        for i, what in enumerate(("y", "dx", "dW1", "db1", "dW2", "db2")):
            a, b = got[f"{tag}_got_{i}"], got[f"{tag}_want_{i}"]
            scale = np.abs(b).max()
            assert scale > 0.1, (tag, what)  # not a comparison of near-zero arrays
            err = np.abs(a - b).max() / scale
            assert err < TOLERANCE[tag.split("_")[0]], f"{tag} {what}: relative error {err:.2e}, seed {seed}"
        keep = got[f"{tag}_keep"]
        if tag.endswith("p0"):
            assert keep.all()
        else:  # 38,400 draws: the kept share is 179/256 within ±0.02 (eight standard deviations)
            assert abs(keep.mean() - KEPT) < 0.02, (tag, keep.mean())


def _assert_model_cases(got, seed: int) -> None:
    for tag in [f"{'authors' if authors else 'official'}_{kernels}" for authors, kernels in MODEL_CASES]:
        np.testing.assert_allclose(
            got[f"{tag}_fused_logits"], got[f"{tag}_stock_logits"], rtol=1e-4, atol=1e-5, err_msg=f"{tag}, {seed}"
        )
        stock = got[f"{tag}_stock_grads"]
        assert np.abs(stock).max() > 0.1
        err = np.abs(got[f"{tag}_fused_grads"] - stock).max() / np.abs(stock).max()
        assert err < 1e-4, f"{tag} gradients: relative error {err:.2e}, seed {seed}"


def test_fused_feed_forward_equals_torch_layers_with_its_mask(interpreted):
    seed, got = interpreted
    _assert_op_cases(got, seed, ("float32", "float16"))


def test_dropout_stream_is_the_seed_s(interpreted):
    seed, got = interpreted
    same = got["float32_p3_keep"]
    np.testing.assert_array_equal(got["float16_p3_keep"], same)  # one stream for a seed, whatever the dtype
    assert (got["other_seed_keep"] != same).mean() > 0.3  # another seed, another mask
    assert 0.3 < same.mean(axis=0).min() and same.mean(axis=0).max() < 1.0  # every hidden unit is dropped sometimes


def test_dropout_mask_is_the_documented_hash_of_seed_token_and_unit(interpreted):
    seed, got = interpreted
    counters = np.arange(M * D_FF // 4, dtype=np.uint64).reshape(M, D_FF // 4)  # token · d_ff / 4 + group
    np.testing.assert_array_equal(got["float32_p3_keep"], keep_bytes_reference(counters, seed, 0.3))
    keep = got["float32_p3_keep"].astype(float) - KEPT
    for a, b in ((keep[:, 1:], keep[:, :-1]), (keep[1:], keep[:-1])):  # neighbouring units, neighbouring tokens
        assert abs((a * b).mean() / keep.var()) < 0.03


def test_patchtst_with_fused_feed_forward_trains_as_the_stock_model(interpreted):
    seed, got = interpreted
    _assert_model_cases(got, seed)


def test_fused_kernels_refuse_widths_they_cannot_tile():
    with pytest.raises(ValueError, match=r"gpu_kernels='fused' with d_model=32, d_ff=48"):
        build_window_model("patchtst", window_length=64, d_model=32, d_ff=48, gpu_kernels="fused")
    with pytest.raises(ValueError, match="gpu_kernels"):
        build_window_model("patchtst", window_length=64, gpu_kernels="triton")


def test_gpu_kernels_is_not_saved_with_the_model():
    model = build_window_model("patchtst", **SIZES, gpu_kernels="fused")
    assert "gpu_kernels" not in model.get_config()


def test_on_the_cpu_without_the_interpreter_the_stock_layers_run():
    if os.environ.get("TRITON_INTERPRET") == "1":
        pytest.skip("this process runs triton's interpreter")
    torch.manual_seed(3)
    stock = build_window_model("patchtst", **SIZES).eval()
    fused = build_window_model("patchtst", **SIZES, gpu_kernels="fused").eval()
    fused.load_state_dict(stock.state_dict())
    x = torch.randn(5, SIZES["window_length"])
    with torch.no_grad():
        torch.testing.assert_close(fused(x), stock(x), rtol=0, atol=0)


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
@pytest.mark.filterwarnings(FP_FUSION_NOTICE)
def test_cuda_fused_feed_forward_equals_torch_layers():
    seed = int(np.random.SeedSequence().entropy % 2**31)
    got = run_cases(seed, "cuda")
    _assert_op_cases(got, seed, ("float32", "float16", "bfloat16"))
    _assert_model_cases(got, seed)


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
@pytest.mark.filterwarnings(FP_FUSION_NOTICE)
def test_cuda_compiled_bf16_training_step_runs_through_the_fused_operator():
    torch.manual_seed(0)
    model = build_window_model("patchtst", window_length=1024, gpu_kernels="fused").cuda().train()
    step = torch.compile(model)
    x = torch.randn(256, 1024, device="cuda")
    with torch.autocast("cuda", dtype=torch.bfloat16):
        loss = step(x).float().square().mean()
    loss.backward()
    grads = [p.grad for p in model.layers[0].ff.parameters()]
    assert all(g is not None and torch.isfinite(g).all() and g.abs().max() > 0 for g in grads)


def test_compile_traces_both_fused_operators_into_one_graph():
    """``torch.compile(fullgraph=True)`` captures the fused feed-forward and attention operators with their seeds:
    no graph break (an ``.item()``, a Python-side random draw) would let a compiled training step fall back to
    eager around them. Traced with fake tensors on the CPU; the backend records the graph and runs nothing."""
    if os.environ.get("TRITON_INTERPRET") == "1":
        pytest.skip("under the interpreter triton's kernels are not traceable (torch.library.wrap_triton)")
    from torch._dynamo.backends.common import aot_autograd

    from sss_viewer.models._attention_triton import fused_attention
    from sss_viewer.models._patchtst_triton import fused_feed_forward

    graphs = []

    class Traced(Exception):
        pass

    def record(graph_module, example_inputs):
        graphs.append(graph_module)

        def run(*args):
            raise Traced  # the CPU cannot launch the kernels: the trace is what is checked

        return run

    def step(x, w1, b1, w2, b2):
        y = fused_feed_forward(x, w1, b1, w2, b2, 0.3)
        qkv = y.repeat(1, 1, 3).view(x.shape[0], x.shape[1], 3, 2, 16)
        return fused_attention(qkv, 0.3).sum()

    x = torch.randn(4, 16, 32, requires_grad=True)
    weights = [torch.randn(shape, requires_grad=True) for shape in ((128, 32), (128,), (32, 128), (32,))]
    compiled = torch.compile(step, backend=aot_autograd(fw_compiler=record, bw_compiler=record), fullgraph=True)
    with pytest.raises(Traced):
        compiled(x, *weights)
    torch._dynamo.reset()
    calls = [str(node.target) for node in graphs[0].graph.nodes if node.op == "call_function"]
    assert calls.count("triton_kernel_wrapper_functional") == 2  # the two forward kernels, in one graph
    assert calls.count("aten.randint.low") == 2  # each draws its dropout seed inside the graph

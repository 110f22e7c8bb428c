"""PatchTST's fused attention kernels (issue 33, goal 3) against torch's attention, through Triton's interpreter.

The kernels run in a child python with ``TRITON_INTERPRET=1`` (``tests/fixtures/interpreter.py``); these tests need
no GPU. The reference is ``softmax(q kᵀ / √d)`` with the kernels' own dropout mask
(:func:`~sss_viewer.models._attention_triton.keep_weights_mask`) times ``v``, and its gradient by autograd, so a wrong
scale, softmax, mask offset, dropout scale or gradient term fails. Shapes: the paper's (128 tokens, 4 heads of 8),
a sequence that is no power of two and shorter than a query block (37 tokens), a wider head in float16 (100 tokens,
2 heads of 16), and one longer than a query block (200 tokens: two blocks whose key gradients are summed). The interpreter misreads bfloat16 products, so bfloat16 is checked on a GPU only.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from tests.fixtures.interpreter import FP_FUSION_NOTICE, keep_bytes_reference, run_cases_in_interpreter

pytest.importorskip("triton", reason="the fused attention kernels need triton")

CASES = {
    "paper_p0": (2, 128, 4, 8, 0.0, torch.float32),
    "paper_p3": (2, 128, 4, 8, 0.3, torch.float32),
    "odd_p3": (3, 37, 2, 8, 0.3, torch.float32),
    "wide_half_p1": (2, 100, 2, 16, 0.1, torch.float16),
    "long_p3": (1, 200, 2, 8, 0.3, torch.float32),
}
"""name: (windows, tokens, heads, head width, dropout, dtype)."""
TOLERANCE = {torch.float32: 1e-5, torch.float16: 5e-3, torch.bfloat16: 5e-2}
"""Largest error allowed relative to the largest magnitude of the compared array."""


def _case(seed: int, b: int, n: int, h: int, dh: int, p: float, dtype: torch.dtype, device: str) -> dict:
    from sss_viewer.models import _attention_triton as fused

    g = torch.Generator().manual_seed(seed)
    qkv = torch.randn((b, n, 3, h, dh), generator=g).to(device, dtype).requires_grad_()
    dout = torch.randn((b, n, h, dh), generator=g).to(device, dtype)
    drop_seed = torch.tensor([seed], dtype=torch.int64, device=device)
    out, _ = fused.fused_attention_forward(qkv, drop_seed, p)
    (dqkv,) = torch.autograd.grad(out, qkv, dout)
    keep = fused.keep_weights_mask(drop_seed, b * h, n, p).view(b, h, n, n)
    q, k, v = qkv.float().permute(2, 0, 3, 1, 4).unbind(0)
    weights = (q @ k.transpose(-1, -2) * dh**-0.5).softmax(-1)
    if p:
        weights = weights * keep / ((256 - round(256 * p)) / 256)
    want = (weights @ v).transpose(1, 2)
    (want_dqkv,) = torch.autograd.grad(want, qkv, dout.float())
    arrays = (out, dqkv, want, want_dqkv, keep)
    return dict(
        zip(("out", "dqkv", "want_out", "want_dqkv", "keep"), (t.detach().float().cpu().numpy() for t in arrays))
    )


def run_cases(seed: int, device: str = "cpu") -> dict[str, np.ndarray]:
    """Every case of ``CASES`` on ``device`` (bfloat16 too on CUDA): ``<case>_<array>``; and ``other_seed_keep``."""
    from sss_viewer.models import _attention_triton as fused

    cases = dict(CASES)
    if device == "cuda":
        cases["paper_bf16_p3"] = (2, 128, 4, 8, 0.3, torch.bfloat16)
    out = {}
    for name, shape in cases.items():
        out |= {f"{name}_{key}": value for key, value in _case(seed, *shape, device).items()}
    other = torch.tensor([seed + 1], device=device)
    out["other_seed_keep"] = fused.keep_weights_mask(other, 8, 128, 0.3).cpu().numpy()
    return out


@pytest.fixture(scope="module")
def interpreted(tmp_path_factory):
    seed = int(np.random.SeedSequence().entropy % 2**31)  # fresh inputs each run; the seed is in any failure
    return seed, run_cases_in_interpreter(__name__, seed, tmp_path_factory.mktemp("attention"))


def _assert_cases(got, seed: int, names) -> None:
    for name in names:
        dtype = torch.bfloat16 if "bf16" in name else CASES[name][5]
        for what in ("out", "dqkv"):
            a, b = got[f"{name}_{what}"], got[f"{name}_want_{what}"]
            scale = np.abs(b).max()
            assert scale > 0.1, (name, what)
            err = np.abs(a - b).max() / scale
            assert err < TOLERANCE[dtype], f"{name} {what}: relative error {err:.2e}, seed {seed}"


def test_fused_attention_equals_torch_attention_with_its_mask(interpreted):
    seed, got = interpreted
    _assert_cases(got, seed, CASES)


def test_dropout_mask_is_the_documented_hash_bytes(interpreted):
    seed, got = interpreted
    b, n, h = CASES["paper_p3"][:3]
    bh, query, group = np.meshgrid(np.arange(b * h), np.arange(n), np.arange(n // 4), indexing="ij")
    want = keep_bytes_reference((bh * n + query) * (n // 4) + group, seed, 0.3)  # (B * H, N, N): key 4 g + m
    np.testing.assert_array_equal(got["paper_p3_keep"].reshape(b * h, n, n), want)


def test_dropout_mask_keeps_its_share_independently(interpreted):
    _, got = interpreted
    keep = got["paper_p3_keep"]  # 131,072 draws
    assert abs(keep.mean() - 179 / 256) < 0.01  # p = 0.3 as a multiple of 1/256: 77/256 dropped
    centred = keep.astype(float) - keep.mean()
    for a, b in ((centred[..., 1:], centred[..., :-1]), (centred[..., 1:, :], centred[..., :-1, :])):
        assert abs((a * b).mean() / centred.var()) < 0.02  # neighbouring keys, neighbouring queries
    assert (got["other_seed_keep"] != keep.reshape(8, 128, 128)).mean() > 0.3  # another seed, another mask


def test_fused_attention_refuses_what_it_cannot_hold():
    from sss_viewer.models import build_window_model

    with pytest.raises(ValueError, match="at most 256 patches"):
        build_window_model("patchtst", window_length=4096, gpu_kernels="fused-attention")
    with pytest.raises(ValueError, match="fused feed-forward"):
        build_window_model("patchtst", window_length=1024, d_ff=96, gpu_kernels="fused")
    build_window_model("patchtst", window_length=1024, d_ff=96, gpu_kernels="fused-attention")  # attention only


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
@pytest.mark.filterwarnings(FP_FUSION_NOTICE)
def test_cuda_fused_attention_equals_torch_attention():
    seed = int(np.random.SeedSequence().entropy % 2**31)
    _assert_cases(run_cases(seed, "cuda"), seed, [*CASES, "paper_bf16_p3"])

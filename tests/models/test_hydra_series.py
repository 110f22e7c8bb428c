"""Hydra read within the channel (issue 18): window counts from one pass of the kernels per channel.

The reference is an independent explicit computation: every kernel convolved over the whole
channel with ``torch.nn.functional.conv1d`` ("same" zero padding at the channel's ends), and each
window's counts summed over its own positions by the definition (every tied kernel counts).
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from sss_viewer.engine.inference import predict_window_probs
from sss_viewer.models import _hydra_series as hydra_series
from sss_viewer.models import build_window_model, model_from_config
from sss_viewer.models._hydra_series import window_counts
from sss_viewer.models._minirocket_series import window_features
from sss_viewer.models.hydra import HydraClassifier, HydraMiniRocketClassifier
from sss_viewer.models.hydra_features import HydraFeatures
from sss_viewer.windows.store import SeriesStore, WindowIndex

L = 256


def _channels(seed: int = 1) -> list[np.ndarray]:
    """Channels as a clinic gives them: noise, a flat (disconnected) stretch and a drift, a short one."""
    rng = np.random.default_rng(seed)
    a = rng.standard_normal(3000).astype(np.float32)
    b = (rng.standard_normal(2200) + np.linspace(-3, 3, 2200)).astype(np.float32)
    b[700:1100] = 0.0  # flat: every kernel's response is 0, all tie
    c = rng.standard_normal(L).astype(np.float32)  # exactly one window long
    return [a, b, c]


def _explicit(features: HydraFeatures, channel: np.ndarray, start: int, length: int) -> torch.Tensor:
    """Counts ``(n_features,)`` float64 of one window by the definition, from convolutions of the whole channel."""
    x = torch.from_numpy(channel).double()
    h, k = features.groups_per_input, features.kernels_per_group
    blocks = torch.zeros(len(features.dilations), features.n_inputs, 2, h, k, dtype=torch.float64)
    for j, series in enumerate([x, torch.diff(x)][: features.n_inputs]):
        positions = slice(start, start + length - j)  # the difference has L - 1 positions inside the window
        for i, d in enumerate(features.dilations):
            kernels = features.weights[i, j].double()[:, None, :]
            resp = F.conv1d(series[None, None], kernels, dilation=d, padding=4 * d)[0].view(h, k, -1)[:, :, positions]
            top, bottom = resp.amax(1, keepdim=True), resp.amin(1, keepdim=True)
            blocks[i, j, 0] = (resp * (resp == top)).sum(-1)
            blocks[i, j, 1] = (resp == bottom).sum(-1)
    return blocks.reshape(-1) * (features.input_length / length)


def _trained_like(name: str, seed: int = 0):
    """A Hydra (+ MiniRocket) classifier with fitted parts, a random head and real standardiser statistics."""
    rng = np.random.default_rng(seed)
    extra = {"num_features": 840} if name == "hydra_minirocket" else {}
    model = build_window_model(name, L, kernels_per_group=8, groups=16, seed=seed, **extra)
    train = torch.from_numpy(rng.standard_normal((16, L), dtype=np.float32))
    if hasattr(model, "initialise_from_data"):
        model.initialise_from_data(train)
    with torch.no_grad():
        model.head.weight.normal_(0.0, 0.05, generator=torch.Generator().manual_seed(seed))
        model.head.bias.fill_(-0.2)
        model.norm.update(model.frozen_features(train) * 1.3)
    return model.eval()


@pytest.mark.parametrize("groups", [1, 16])
def test_window_counts_are_the_definition_for_windows_anywhere_in_any_order(monkeypatch, groups):
    features = HydraFeatures(L, kernels_per_group=8, groups=groups, seed=3)
    channel = _channels()[1]
    starts = np.array(
        [900, 0, len(channel) - L, 650, 650, 1, 1500, 1899]
    )  # unsorted, a repeat, both ends, the flat part
    counts = window_counts(features, torch.from_numpy(channel), starts, L)
    assert counts.shape == (len(starts), features.n_features) and counts.dtype == torch.float32
    for row, s in zip(counts, starts, strict=True):
        torch.testing.assert_close(row.double(), _explicit(features, channel, int(s), L), rtol=1e-5, atol=1e-4)
    # small groups of windows and short stretches of positions give the same numbers
    monkeypatch.setattr(hydra_series, "GROUP_WINDOWS", 2)
    monkeypatch.setattr(hydra_series, "_CPU_POSITIONS", 100)
    torch.testing.assert_close(
        window_counts(features, torch.from_numpy(channel), starts, L), counts, rtol=1e-6, atol=1e-4
    )


def test_a_window_that_is_the_whole_channel_gets_the_per_window_transforms_counts():
    """Ties on the flat stretch included: both count every tied kernel."""
    features = HydraFeatures(L, kernels_per_group=8, groups=16, seed=0)
    channel = _channels()[1]
    whole = window_counts(features, torch.from_numpy(channel), np.array([0]), len(channel))
    torch.testing.assert_close(whole, features(torch.from_numpy(channel)[None]), rtol=1e-5, atol=1e-3)


def test_a_window_outside_its_channel_is_refused_with_the_numbers():
    features = HydraFeatures(L, kernels_per_group=4, groups=2)
    with pytest.raises(
        ValueError, match=r"Windows of 256 samples at starts 10..2900 do not lie inside a channel of 3000"
    ):
        window_counts(features, torch.zeros(3000), np.array([10, 2900]), L)
    with pytest.raises(ValueError, match="window_length=8"):
        window_counts(features, torch.zeros(3000), np.array([0]), 8)


@pytest.mark.parametrize("name", ["hydra", "hydra_minirocket"])
def test_store_scoring_equals_the_head_on_explicit_features(name):
    model = _trained_like(name)
    assert model.reads_series
    channels = _channels()
    store = SeriesStore.concatenate([SeriesStore.from_series(channels[:2]), SeriesStore.from_series(channels[2:])])
    index = WindowIndex.build(store.lengths, L, 64, cover_end=True)
    starts = index.absolute_starts(store)
    fractions = []
    p = predict_window_probs(model, store, starts, L, on_progress=fractions.append)
    assert fractions and fractions[-1] == pytest.approx(1.0)
    hydra = model.features if name == "hydra" else model.hydra
    explicit = torch.stack(
        [_explicit(hydra, channels[i], int(s), L) for i, s in zip(index.series, index.start, strict=True)]
    )
    if name == "hydra_minirocket":  # the PPV part: MiniRocket's series definition
        ppv = window_features(model.minirocket, channels, index.series, index.start, L)
        explicit = torch.cat([explicit, torch.from_numpy(ppv).double()], 1)
    feats = model.store_window_features(store, starts, L)
    torch.testing.assert_close(feats.double(), explicit, rtol=1e-5, atol=1e-4)
    with torch.no_grad():
        reference = torch.sigmoid(model.classify(explicit.float())).numpy()
    np.testing.assert_allclose(p, reference, atol=1e-5)


def test_a_window_scores_the_same_at_any_stride_and_alone():
    model = _trained_like("hydra")
    channel = _channels()[0]
    store = SeriesStore.from_series([channel])
    dense = np.arange(0, len(channel) - L + 1, 16)
    p_dense = predict_window_probs(model, store, dense, L)
    picked = np.array([5, 40, 100])  # windows 80, 640 and 1600
    np.testing.assert_allclose(predict_window_probs(model, store, dense[picked], L), p_dense[picked], atol=1e-6)
    np.testing.assert_allclose(
        predict_window_probs(model, store, dense[picked][::-1], L), p_dense[picked][::-1], atol=1e-6
    )


def test_a_bare_row_is_read_as_a_whole_channel():
    model = _trained_like("hydra_minirocket")
    rows = torch.from_numpy(np.stack([c[:L] for c in _channels()]))
    by_row = model.frozen_features(rows)
    origin = np.zeros(1, np.int64)
    one_by_one = torch.cat([model.store_window_features(SeriesStore.from_series([r.numpy()]), origin, L) for r in rows])
    torch.testing.assert_close(by_row, one_by_one)


@pytest.mark.parametrize("cls", [HydraClassifier, HydraMiniRocketClassifier])
def test_revin_reads_windows_on_their_own_and_old_configs_load_as_they_were_saved(cls):
    with pytest.raises(ValueError, match="revin=True normalises each window"):
        cls(L, 8, 16, revin=True, feature_context="series")
    with pytest.raises(ValueError, match="feature_context"):
        cls(L, 8, 16, feature_context="channel")
    assert cls(L, 8, 16, revin=True).get_config()["feature_context"] == "window"
    config = cls(L, 8, 16).get_config()
    assert config["feature_context"] == "series"
    saved_before = {key: value for key, value in config.items() if key != "feature_context"}
    assert not model_from_config(saved_before).reads_series


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_cuda_series_counts_and_logits_equal_the_cpu():
    model = _trained_like("hydra_minirocket")
    channels = _channels()
    store = SeriesStore.from_series(channels)
    starts = WindowIndex.build(store.lengths, L, 32, cover_end=True).absolute_starts(store)
    cpu = predict_window_probs(model, store, starts, L)
    gpu = predict_window_probs(model.cuda(), store, starts, L, device="cuda")
    np.testing.assert_allclose(gpu, cpu, atol=1e-4)

"""MiniRocket: kernels, dilations, bias fitting, PPV features, the classifier and its frozen front end."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from sss_viewer.models.minirocket import MiniRocketClassifier
from sss_viewer.models.minirocket_features import (
    KERNEL_LENGTH,
    N_KERNELS,
    MiniRocketFeatures,
    minirocket_dilations,
)


def test_84_zero_sum_kernels_and_published_feature_count():
    f = MiniRocketFeatures(4097)
    w = f.weights
    assert w.shape == (N_KERNELS, KERNEL_LENGTH)
    assert torch.all(w.sum(1) == 0)  # -1 x 6 + 2 x 3
    assert len({tuple(row.tolist()) for row in w}) == 84
    assert f.n_features == 9996  # 84 x 119, the original's default
    dilations, per = minirocket_dilations(4097, 10_000)
    assert dilations[0] == 1 and dilations[-1] == 512  # 2 ** log2(4096 / 8)
    assert dilations == sorted(set(dilations)) and len(dilations) <= 32
    assert 84 * sum(per) == 9996


# The reference split (Dempster et al.'s ``_fit_dilations``, the same in aeon 1.6.0's MiniRocket), as it
# returns it for these (input_length, num_features): dilations and features per kernel at each.
REFERENCE_SPLITS = {
    (1024, 9996): (
        [1, 2, 3, 4, 5, 6, 7, 8, 10, 12, 14, 16, 19, 22, 26, 31, 36, 42, 50, 58, 68, 79, 93, 109, 127],
        [19, 12, 4, 8, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 3, 3, 3, 3, 3, 3, 3, 3],
    ),
    (256, 9996): (
        [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 13, 14, 16, 18, 20, 22, 25, 28, 31],
        [27, 12, 12, 8, 8, 4, 4, 4, 4, 4, 4, 4, 3, 3, 3, 3, 3, 3, 3, 3],
    ),
    (300, 840): ([1, 2, 3, 4, 7, 11, 16, 24, 37], [2, 1, 1, 1, 1, 1, 1, 1, 1]),
}


@pytest.mark.parametrize(("length", "features"), sorted(REFERENCE_SPLITS))
def test_dilation_split_matches_the_reference(length, features):
    assert minirocket_dilations(length, features) == REFERENCE_SPLITS[(length, features)]
    assert MiniRocketFeatures(length, features).per_dilation == REFERENCE_SPLITS[(length, features)][1]


def test_models_saved_with_the_legacy_split_are_rebuilt_with_it():
    """A config without ``dilation_split`` (every model saved before the split matched) keeps its layout."""
    from sss_viewer.models.registry import model_from_config

    assert minirocket_dilations(1024, 9996, "legacy")[1][:4] == [16, 10, 4, 7]
    old = model_from_config({"name": "minirocket", "input_length": 1024, "num_features": 9996})
    assert old.features.per_dilation[:4] == [16, 10, 4, 7]
    new = MiniRocketClassifier(input_length=1024)
    assert new.get_config()["dilation_split"] == "reference"
    assert model_from_config(new.get_config()).features.per_dilation[:4] == [19, 12, 4, 8]
    with pytest.raises(ValueError, match="split"):
        minirocket_dilations(1024, 9996, "aeon")


def test_features_match_a_direct_convolution():
    """PPV of kernel k at dilation d equals the share of conv1d outputs above its bias."""
    torch.manual_seed(0)
    x = torch.randn(3, 200)
    f = MiniRocketFeatures(200, num_features=840, seed=1).fit(torch.randn(20, 200))
    feats = f(x)
    offset = 0
    for i, (d, n_b) in enumerate(zip(f.dilations, f.per_dilation)):
        conv = F.conv1d(x[:, None], f.weights[:, None], padding=4 * d, dilation=d)  # (3, 84, 200)
        for k in (0, 1, 57, 83):
            out = conv[:, k]
            if (i + k) % 2 == 1 and 200 > 8 * d:
                out = out[:, 4 * d : 200 - 4 * d]
            for q in range(n_b):
                bias = f.biases[offset + k * n_b + q]
                expected = (out > bias).float().mean(1)
                torch.testing.assert_close(feats[:, offset + k * n_b + q], expected, atol=2 / out.shape[1], rtol=0)
        offset += 84 * n_b


def test_features_do_not_depend_on_the_cache_sized_chunks(monkeypatch):
    """Rows are convolved and pooled a few at a time; a batch split into uneven chunks gives the same features."""
    from sss_viewer.models import minirocket_features as module

    torch.manual_seed(0)
    x = torch.randn(5, 300)
    f = MiniRocketFeatures(300, num_features=840, seed=2).fit(torch.randn(20, 300))
    whole = f(x)
    monkeypatch.setattr(module, "_CPU_CHUNK_BYTES", 2 * 4 * (N_KERNELS // 2) * 300)  # 2 rows: chunks 2, 2, 1
    chunked = f(x)
    assert torch.equal(whole, chunked)
    assert torch.equal(chunked[3:4], f(x[3:4]))


def test_biases_are_quantiles_of_training_outputs_and_deterministic():
    x = torch.randn(30, 128)
    a = MiniRocketFeatures(128, num_features=336, seed=3).fit(x)
    b = MiniRocketFeatures(128, num_features=336, seed=3).fit(x)
    assert bool(a.fitted)
    torch.testing.assert_close(a.biases, b.biases)
    feats = a(x)
    assert 0.05 < float(feats.mean()) < 0.95  # biases inside the outputs' range, not all above/below


def test_classifier_refuses_to_score_before_fitting():
    model = MiniRocketClassifier(input_length=64, num_features=168).eval()
    with pytest.raises(RuntimeError, match="never fitted"):
        model(torch.randn(2, 64))


def test_initialise_from_data_then_frozen_features_match_forward():
    model = MiniRocketClassifier(input_length=64, num_features=168, seed=0)
    model.initialise_from_data(torch.randn(40, 64))
    model.eval()
    x = torch.randn(5, 64)
    torch.testing.assert_close(model(x), model.classify(model.frozen_features(x)))
    assert model.has_frozen_front_end
    assert not any(p.requires_grad for p in model.features.parameters())


def test_learns_amplitude_bursts_vs_noise():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((80, 256)).astype(np.float32)
    y = np.arange(80) % 2
    for row in np.flatnonzero(y):
        start = rng.integers(0, 200)
        x[row, start : start + 40] += 4 * np.sin(np.linspace(0, 6 * np.pi, 40))
    xt, yt = torch.from_numpy(x), torch.from_numpy(y.astype(np.float32))
    model = MiniRocketClassifier(input_length=256, num_features=840)
    model.initialise_from_data(xt[:60])
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    for _ in range(60):
        loss = F.binary_cross_entropy_with_logits(model(xt[:60]), yt[:60])
        opt.zero_grad()
        loss.backward()
        opt.step()
    model.eval()
    p = torch.sigmoid(model(xt[60:])).detach().numpy()
    from sss_viewer.metrics import binary_auc

    assert binary_auc(p, y[60:]) > 0.9


def test_the_series_store_is_a_window_source_and_models_read_any_window_source():
    """The model–store contract is a declared Protocol: a store of another kind with locate/series is read alike."""
    from sss_viewer.windows.store import SeriesStore, WindowSource

    rng = np.random.default_rng(0)
    channels = [rng.standard_normal(400).astype(np.float32), rng.standard_normal(300).astype(np.float32)]
    store = SeriesStore(channels, np.array([0, 400]), np.array([400, 300]))
    assert isinstance(store, WindowSource)

    class TwoArrays:  # not a SeriesStore: only the two methods of the contract
        def locate(self, starts, length):
            return store.locate(starts, length)

        def series(self, i):
            return channels[i]

    assert isinstance(TwoArrays(), WindowSource)
    model = MiniRocketClassifier(input_length=128, num_features=336)
    model.initialise_from_data(torch.from_numpy(np.stack([channels[0][:128], channels[1][:128]])))
    starts = np.array([0, 100, 400, 550])
    torch.testing.assert_close(
        model.store_window_features(TwoArrays(), starts, 128), model.store_window_features(store, starts, 128)
    )

"""MiniRocket read within the channel (issue 15): features by segment sums, logits by the evidence series.

The reference everywhere is the explicit per-window computation: each window cut out of its
channel with the reach of the largest dilation on either side (zeros beyond the channel), its
convolutions and PPVs computed window by window (:func:`explicit_window_features`), and the
trained head applied to those features.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch

from sss_viewer.engine.bundle import ModelBundle
from sss_viewer.engine.inference import predict_window_probs
from sss_viewer.models import build_window_model, model_from_config
from sss_viewer.models._minirocket_series import (
    SeriesLayout,
    explicit_window_features,
    fold_head,
    torch_window_logits,
    window_features,
    window_logits,
)
from sss_viewer.models.minirocket import MiniRocketClassifier
from sss_viewer.windows.store import SeriesStore, WindowIndex

L = 256
DEMO_MODEL = Path(__import__("sss_viewer").__file__).parent / "data" / "demo" / "model"


def _trained_like(num_features: int = 840, seed: int = 0) -> MiniRocketClassifier:
    """A MiniRocket classifier with fitted biases, a random head and real standardiser statistics."""
    rng = np.random.default_rng(seed)
    model = build_window_model("minirocket", L, num_features=num_features, seed=seed)
    model.initialise_from_data(torch.from_numpy(rng.standard_normal((16, L), dtype=np.float32)))
    with torch.no_grad():
        model.head.weight.normal_(0.0, 0.05, generator=torch.Generator().manual_seed(seed))
        model.head.bias.fill_(-0.2)
        model.norm.update(torch.rand(64, model.n_features, generator=torch.Generator().manual_seed(seed)))
    return model.eval()


def _channels(seed: int = 1) -> list[np.ndarray]:
    """Channels as a clinic gives them: noise, a flat (disconnected) stretch, a slow drift, a short one."""
    rng = np.random.default_rng(seed)
    a = rng.standard_normal(3000).astype(np.float32)
    b = (rng.standard_normal(2200) + np.linspace(-3, 3, 2200)).astype(np.float32)
    b[700:1100] = 0.0  # flat: convolution outputs exactly 0, ties with a zero bias
    c = rng.standard_normal(L).astype(np.float32)  # exactly one window long
    return [a, b, c]


def _explicit(model: MiniRocketClassifier, channels, series, start) -> np.ndarray:
    margin = SeriesLayout.of(model.features, L).margin
    cut = []
    for i, s in zip(series, start, strict=True):
        padded = np.concatenate([np.zeros(margin, np.float32), channels[i], np.zeros(margin, np.float32)])
        cut.append(padded[s : s + L + 2 * margin])
    return explicit_window_features(model.features, torch.from_numpy(np.stack(cut)), L).numpy()


def _some_windows(channels, stride: int) -> tuple[np.ndarray, np.ndarray]:
    index = WindowIndex.build(np.array([len(c) for c in channels]), L, stride, cover_end=True)
    return index.series, index.start


def test_segment_sum_features_equal_the_explicit_per_window_features():
    model = _trained_like()
    channels = _channels()
    series, start = _some_windows(channels, 97)
    fast = window_features(model.features, channels, series, start, L)
    reference = _explicit(model, channels, series, start)
    assert fast.shape == (len(series), model.n_features)
    np.testing.assert_array_equal(fast, reference)


def test_evidence_series_logits_equal_features_times_head_on_cpu():
    model = _trained_like()
    channels = _channels()
    series, start = _some_windows(channels, 61)
    weights, constant = fold_head(model)
    logits = window_logits(model.features, weights, constant, channels, series, start, L)
    with torch.no_grad():
        reference = model.classify(torch.from_numpy(_explicit(model, channels, series, start))).double().numpy()
    np.testing.assert_allclose(logits, reference, rtol=0, atol=2e-5)
    assert np.ptp(reference) > 0.05  # the head separates windows: the comparison is not between constants


def test_torch_evidence_path_equals_the_numba_path_on_cpu():
    model = _trained_like()
    channels = _channels()
    weights, constant = fold_head(model)
    for i, channel in enumerate(channels):
        start = np.arange(0, len(channel) - L + 1, 33)
        fast = window_logits(model.features, weights, constant, channels, np.full(len(start), i), start, L)
        for evidence in ("compare", "search"):  # the CPU's and the GPU's way of summing thresholded outputs
            via_torch = torch_window_logits(
                model.features, weights, constant, torch.from_numpy(channel)[None], start, L, evidence=evidence
            )
            np.testing.assert_allclose(via_torch.numpy()[0], fast, rtol=0, atol=2e-5)


def test_torch_path_scores_channels_of_different_lengths_in_one_zero_padded_batch():
    model = _trained_like()
    channels = _channels()
    assert len({len(c) for c in channels}) > 1  # the padding is exercised
    weights, constant = fold_head(model)
    series, start = _some_windows(channels, 29)
    expected = window_logits(model.features, weights, constant, channels, series, start, L)
    batch = np.zeros((len(channels), max(len(c) for c in channels)), dtype=np.float32)
    for i, channel in enumerate(channels):
        batch[i, : len(channel)] = channel
    got = torch_window_logits(
        model.features, weights, constant, torch.from_numpy(batch), start, L, rows=series, evidence="search"
    )
    assert got.shape == (len(start),)
    np.testing.assert_allclose(got.numpy(), expected, rtol=0, atol=2e-5)


def test_a_window_scores_the_same_at_any_stride_and_in_any_order():
    model = _trained_like()
    channels = _channels()
    weights, constant = fold_head(model)
    s1, t1 = _some_windows(channels, 1)
    every = window_logits(model.features, weights, constant, channels, s1, t1, L)
    s2, t2 = _some_windows(channels, 128)
    shuffle = np.random.default_rng(0).permutation(len(s2))
    sparse = window_logits(model.features, weights, constant, channels, s2[shuffle], t2[shuffle], L)
    lookup = {(int(s), int(t)): v for s, t, v in zip(s1, t1, every, strict=True)}
    np.testing.assert_allclose(sparse, [lookup[(int(s), int(t))] for s, t in zip(s2[shuffle], t2[shuffle])], atol=1e-9)


def test_unpadded_kernels_read_what_the_per_window_transform_reads():
    """For a window inside its channel, the valid-only kernels see the same samples either way."""
    model = _trained_like()
    channel = _channels()[0]
    start = np.array([400, 1200])
    series_feats = window_features(model.features, [channel], np.zeros(2, np.int64), start, L)
    per_window = MiniRocketClassifier(L, 840, feature_context="window")
    per_window.load_state_dict(model.state_dict())
    window_feats = per_window.eval().transform(torch.from_numpy(np.stack([channel[s : s + L] for s in start]))).numpy()
    layout = SeriesLayout.of(model.features, L)
    unpadded = np.concatenate(
        [
            layout.feature_offsets[i] + np.arange(84 * nb).reshape(84, nb)[~layout.padded[i]].ravel()
            for i, nb in enumerate(layout.n_biases)
        ]
    )
    # the two paths add the taps in a different order: a rare float32 tie-break may move one position
    n_pos = np.array([L - 2 * 4 * d if L > 8 * d else L for d in np.repeat(layout.dilations, 84 * layout.n_biases)])
    diff = np.abs(series_feats[:, unpadded] - window_feats[:, unpadded]) * n_pos[unpadded]
    assert (diff <= 1.0001).all() and (diff > 0.5).mean() < 1e-3
    assert np.abs(series_feats - window_feats).max() > 0.01  # the padded kernels do differ near the edges


def test_a_whole_row_is_read_as_one_channel():
    model = _trained_like()
    channels = _channels()
    rows = torch.from_numpy(np.stack([channels[0][:L], channels[1][:L]]))
    by_row = model.transform(rows).numpy()
    as_channels = window_features(
        model.features, [channels[0][:L], channels[1][:L]], np.array([0, 1]), np.zeros(2, np.int64), L
    )
    np.testing.assert_array_equal(by_row, as_channels)


def test_predict_window_probs_uses_the_evidence_series_for_a_store():
    model = _trained_like()
    channels = _channels()
    store = SeriesStore.concatenate([SeriesStore.from_series(channels[:2]), SeriesStore.from_series(channels[2:])])
    index = WindowIndex.build(store.lengths, L, 64, cover_end=True)
    starts = index.absolute_starts(store)
    fractions = []
    p = predict_window_probs(model, store, starts, L, on_progress=fractions.append)
    feats = model.store_window_features(store, starts, L)
    with torch.no_grad():
        reference = torch.sigmoid(model.classify(feats)).numpy()
    np.testing.assert_allclose(p, reference, atol=1e-5)
    assert fractions and fractions[-1] == pytest.approx(1.0)


def test_store_rejects_a_window_outside_its_series():
    store = SeriesStore.from_series(_channels())
    with pytest.raises(ValueError, match="does not lie inside one series"):
        store.locate(np.array([3000 - 10]), L)  # runs over from the first channel into the second
    with pytest.raises(ValueError, match="does not fit its series"):
        window_logits(_trained_like().features, np.zeros(840), 0.0, _channels(), np.array([0]), np.array([2900]), L)


def test_long_channel_float64_prefix_keeps_late_windows_exact():
    """Hours at 250 Hz: a window near the end of a 1.2-million-sample channel still matches its explicit logit."""
    model = _trained_like()
    rng = np.random.default_rng(5)
    channel = (rng.standard_normal(1_200_000) * 3 + 40).astype(np.float32)  # an offset makes prefix sums large
    start = np.array([0, 600_000, len(channel) - L])
    weights, constant = fold_head(model)
    logits = window_logits(model.features, weights, constant, [channel], np.zeros(3, np.int64), start, L)
    with torch.no_grad():
        reference = model.classify(torch.from_numpy(_explicit(model, [channel], [0, 0, 0], start))).double().numpy()
    np.testing.assert_allclose(logits, reference, rtol=0, atol=2e-5)
    # one window alone reads only its span of the channel (and its kernels' reach): the same numbers
    alone = window_logits(model.features, weights, constant, [channel], np.zeros(1, np.int64), start[1:2], L)
    np.testing.assert_allclose(alone, logits[1:2], rtol=0, atol=1e-9)
    feats = window_features(model.features, [channel], np.zeros(1, np.int64), start[1:2], L)
    np.testing.assert_array_equal(feats, _explicit(model, [channel], [0], start[1:2]))


def test_revin_cannot_read_windows_within_the_channel():
    with pytest.raises(ValueError, match="revin=True normalises each window"):
        MiniRocketClassifier(L, 840, revin=True, feature_context="series")
    assert MiniRocketClassifier(L, 840, revin=True).get_config()["feature_context"] == "window"
    with pytest.raises(ValueError, match="feature_context"):
        MiniRocketClassifier(L, 840, feature_context="channel")


def test_a_model_saved_before_issue_15_still_reads_windows_on_their_own(tmp_path):
    model = _trained_like()
    cfg = model.get_config()
    assert cfg["feature_context"] == "series"
    old = {k: v for k, v in cfg.items() if k != "feature_context"}
    rebuilt = model_from_config(old)
    assert rebuilt.get_config()["feature_context"] == "window" and not rebuilt.reads_series
    assert model_from_config(cfg).reads_series


def test_bundled_demo_model_reads_windows_within_the_channel():
    bundle = ModelBundle.load(DEMO_MODEL)
    assert bundle.model.reads_series
    config = json.loads((DEMO_MODEL / "config.json").read_text())
    assert config["model"]["feature_context"] == "series"


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_cuda_evidence_series_and_features_equal_the_cpu_paths():
    model = _trained_like()
    channels = _channels()
    weights, constant = fold_head(model)
    series, start = _some_windows(channels, 37)
    cpu = window_logits(model.features, weights, constant, channels, series, start, L)
    on_gpu = model.to("cuda")
    for i, channel in enumerate(channels):
        sel = series == i
        gpu = torch_window_logits(
            on_gpu.features, weights, constant, torch.from_numpy(channel).cuda()[None], start[sel], L
        )
        np.testing.assert_allclose(gpu.cpu().numpy()[0], cpu[sel], rtol=0, atol=2e-5)
    margin = SeriesLayout.of(model.features, L).margin
    cut = [
        np.concatenate([np.zeros(margin, np.float32), channels[i], np.zeros(margin, np.float32)])[
            s : s + L + 2 * margin
        ]
        for i, s in zip(series, start, strict=True)
    ]
    gpu_feats = explicit_window_features(on_gpu.features, torch.from_numpy(np.stack(cut)).cuda(), L).cpu().numpy()
    # PPV = count / positions: the devices may round that one division differently (seen on an H200: 1 ulp)
    np.testing.assert_allclose(
        gpu_feats, window_features(model.cpu().features, channels, series, start, L), rtol=0, atol=1e-6
    )


def test_without_numba_the_torch_paths_give_the_same_numbers(monkeypatch):
    """A machine whose python lacks numba (a GPU box's own environment) falls back to torch."""
    import sss_viewer.models._minirocket_series as series_module

    model = _trained_like()
    channels = _channels()
    series, start = _some_windows(channels, 150)
    weights, constant = fold_head(model)
    fast_logits = window_logits(model.features, weights, constant, channels, series, start, L)
    fast_feats = window_features(model.features, channels, series, start, L)
    monkeypatch.setattr(series_module, "numba", None)
    np.testing.assert_allclose(
        window_logits(model.features, weights, constant, channels, series, start, L), fast_logits, atol=2e-5
    )
    np.testing.assert_array_equal(window_features(model.features, channels, series, start, L), fast_feats)


def test_visible_channels_first_gives_the_same_scores_as_one_pass():
    from sss_viewer.engine.inference import score_recording
    from tests.fixtures.recordings import toy_recording

    bundle = ModelBundle.load(DEMO_MODEL)
    recording = toy_recording("sub-x", seed=3, n_channels=6, duration_s=30.0)
    once = score_recording(bundle, recording, progress=False)
    partial, fractions = [], []
    first = [recording.ch_names[4], recording.ch_names[1]]
    twice = score_recording(
        bundle, recording, progress=False, first_channels=first, on_partial=partial.append, on_progress=fractions.append
    )
    assert len(partial) == 1 and partial[0].pending == recording.n_channels - 2
    assert set(partial[0].windows["channel"]) == set(first)
    assert twice.pending == 0
    assert fractions == sorted(fractions) and fractions[-1] == pytest.approx(1.0)
    for name in ("windows", "channels", "excluded"):
        a, b = getattr(once, name), getattr(twice, name)
        assert a.equals(b), name


def test_a_finer_heat_map_keeps_the_ranking_of_the_models_stride():
    from sss_viewer.engine.inference import score_recording
    from tests.fixtures.recordings import toy_recording

    bundle = ModelBundle.load(DEMO_MODEL)
    recording = toy_recording("sub-y", seed=4, n_channels=5, duration_s=30.0)
    plain = score_recording(bundle, recording, progress=False)
    fine = score_recording(bundle, recording, progress=False, heat_stride=64, first_channels=recording.ch_names[:2])
    assert plain.heat_windows is None and fine.heat_windows is not None
    assert fine.windows.equals(plain.windows) and fine.channels.equals(plain.channels)
    assert len(fine.heat_windows) > 3 * len(plain.windows)
    steps = np.diff(fine.heat_windows.loc[fine.heat_windows["channel"] == recording.ch_names[0], "start_s"].to_numpy())
    assert np.median(steps) == pytest.approx(64 / 250)
    merged = fine.heat_windows.merge(plain.windows, on=["channel", "start_s"], suffixes=("", "_plain"))
    assert len(merged) == len(plain.windows)
    np.testing.assert_allclose(merged["p_raw"], merged["p_raw_plain"], atol=1e-6)
    values, edges = fine.heatmap(64 / 250)
    assert values.shape == (5, len(edges) - 1) and np.isfinite(values).all()


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_cuda_store_scoring_batches_channels_of_different_lengths_like_the_cpu():
    model = _trained_like()
    channels = _channels() + _channels(seed=2)  # lengths 3000, 2200, L twice: one zero-padded batch
    store = SeriesStore.from_series(channels)
    starts = WindowIndex.build(store.lengths, L, 17, cover_end=True).absolute_starts(store)
    cpu = predict_window_probs(model, store, starts, L)
    gpu = predict_window_probs(model.to("cuda"), store, starts, L, device="cuda")
    np.testing.assert_allclose(gpu, cpu, rtol=0, atol=1e-5)

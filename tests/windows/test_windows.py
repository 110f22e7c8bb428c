"""Window index, gather and the SSS epoch sampler (Algorithm 1)."""

import numpy as np
import pytest
import torch

from sss_viewer.windows.sampler import epoch_batches
from sss_viewer.windows.store import SeriesStore, WindowIndex


def test_window_counts_follow_the_paper():
    lengths = np.array([10, 3, 7, 4])
    index = WindowIndex.build(lengths, window_length=4, stride=3)
    # A_i = floor((T_i - L) / S) + 1, zero for series shorter than L
    assert index.counts(4).tolist() == [3, 0, 2, 1]
    assert index.start[index.series == 0].tolist() == [0, 3, 6]


def test_cover_end_adds_a_final_window_only_when_needed():
    index = WindowIndex.build(np.array([11, 10]), window_length=4, stride=3, cover_end=True)
    assert index.start[index.series == 0].tolist() == [0, 3, 6, 7]
    assert index.start[index.series == 1].tolist() == [0, 3, 6]


def test_gather_matches_slicing():
    series = [np.arange(10, dtype=np.float32), 100 + np.arange(7, dtype=np.float32)]
    store = SeriesStore.from_series(series)
    index = WindowIndex.build(store.lengths, window_length=4, stride=2)
    windows = store.windows(index.absolute_starts(store), 4)
    assert windows.shape == (len(index), 4) and windows.dtype == np.float32
    for row, (s, st) in enumerate(zip(index.series, index.start)):
        np.testing.assert_array_equal(windows[row], series[s][st : st + 4])


def test_gather_across_memmapped_segments(tmp_path):
    """Series spread over several memory-mapped segments are gathered like one store."""
    parts = []
    for k, lengths in enumerate([(10, 7), (5,), (12, 4)]):
        series = [1000 * k + 100 * j + np.arange(n, dtype=np.float32) for j, n in enumerate(lengths)]
        path = tmp_path / f"seg{k}.f32"
        flat = np.concatenate(series)
        flat.tofile(path)
        segment = np.memmap(path, dtype=np.float32, mode="r", shape=flat.shape)
        offsets = np.concatenate([[0], np.cumsum(lengths)[:-1]])
        parts.append((SeriesStore([segment], offsets, np.array(lengths)), series))
    store = SeriesStore.concatenate([p for p, _ in parts])
    expected = [s for _, series in parts for s in series]
    assert store.n_series == 5 and store.n_samples == 38
    index = WindowIndex.build(store.lengths, window_length=4, stride=3)
    order = np.random.default_rng(0).permutation(len(index))  # batches mix segments
    windows = store.windows(index.absolute_starts(store)[order], 4)
    for row, w in zip(order, windows):
        s, st = index.series[row], index.start[row]
        np.testing.assert_array_equal(w, expected[s][st : st + 4])
    for i, s in enumerate(expected):
        np.testing.assert_array_equal(store.series(i), s)


def test_series_may_not_straddle_segments():
    with pytest.raises(ValueError, match="inside one store segment"):
        SeriesStore([np.zeros(5, np.float32), np.zeros(5, np.float32)], np.array([3]), np.array([4]))


def test_every_window_exactly_once_per_epoch():
    gen = torch.Generator().manual_seed(0)
    for n, b in [(1000, 64), (64, 64), (5, 8), (1, 1)]:
        batches = list(epoch_batches(n, b, gen))
        seen = torch.cat(batches).sort().values
        assert torch.equal(seen, torch.arange(n))
        assert all(len(x) == b for x in batches[:-1])


def test_batch_composition_is_hypergeometric():
    """N_i in a batch: mean B p_i, variance B p_i (1 - p_i) (N - B) / (N - 1) (without replacement)."""
    counts = np.array([600, 250, 100, 50])  # windows per series, N = 1000
    series = np.repeat(np.arange(4), counts)
    n_total, batch = counts.sum(), 200
    p = counts / n_total
    gen = torch.Generator().manual_seed(1)
    draws = []
    for _ in range(2000):
        first = next(epoch_batches(n_total, batch, gen)).numpy()
        draws.append(np.bincount(series[first], minlength=4))
    draws = np.array(draws)
    mean, var = draws.mean(0), draws.var(0)
    np.testing.assert_allclose(mean, batch * p, rtol=0.03)
    hyper = batch * p * (1 - p) * (n_total - batch) / (n_total - 1)
    binom = batch * p * (1 - p)
    np.testing.assert_allclose(var, hyper, rtol=0.12)
    # sampling without replacement is measurably tighter than the paper's Binomial approximation
    assert np.all(var < 0.9 * binom)


def test_invalid_parameters_are_named():
    with pytest.raises(ValueError, match="window_length"):
        WindowIndex.build(np.array([10]), window_length=0, stride=1)
    with pytest.raises(ValueError, match="batch_size"):
        next(epoch_batches(10, 0, torch.Generator()))


@pytest.mark.parametrize(
    ("n", "batch", "world", "limit"), [(1000, 64, 2, None), (1001, 50, 3, None), (7, 4, 4, None), (500, 32, 2, 333)]
)
def test_sharded_epoch_is_the_single_process_epoch_split_across_ranks(n, batch, world, limit):
    """Ranks drawing from the same seed: together one epoch at batch B x world, every window once, equal steps."""
    single = list(epoch_batches(n, batch * world, torch.Generator().manual_seed(5), limit=limit))
    ranks = [
        list(epoch_batches(n, batch, torch.Generator().manual_seed(5), limit=limit, rank=r, world_size=world))
        for r in range(world)
    ]
    assert len({len(steps) for steps in ranks}) == 1 and len(ranks[0]) == len(single)  # DDP: same number of steps
    for step, global_batch in enumerate(single):
        shards = [ranks[r][step] for r in range(world)]
        assert torch.equal(torch.cat(shards), global_batch)  # the ranks' batches are the global batch, in order
        assert all(len(s) <= batch for s in shards)
    union = torch.cat([torch.cat(steps) for steps in ranks]).sort().values
    expected = torch.cat(single).sort().values
    assert torch.equal(union, expected) and len(union.unique()) == len(union)  # no window twice
    assert len(union) == (limit or n)


def test_a_rank_shard_keeps_the_hypergeometric_composition():
    counts = np.array([600, 250, 100, 50])
    series = np.repeat(np.arange(4), counts)
    n_total, batch = counts.sum(), 100
    p = counts / n_total
    gen = torch.Generator().manual_seed(2)
    draws = np.array(
        [
            np.bincount(series[next(epoch_batches(n_total, batch, gen, rank=1, world_size=2)).numpy()], minlength=4)
            for _ in range(2000)
        ]
    )
    np.testing.assert_allclose(draws.mean(0), batch * p, rtol=0.04)
    np.testing.assert_allclose(draws.var(0), batch * p * (1 - p) * (n_total - batch) / (n_total - 1), rtol=0.15)


def test_invalid_rank_is_named():
    with pytest.raises(ValueError, match="rank=2"):
        next(epoch_batches(10, 2, torch.Generator(), rank=2, world_size=2))
    with pytest.raises(ValueError, match="world_size"):
        next(epoch_batches(10, 2, torch.Generator(), world_size=0))

"""The shared training rules: class-balanced weights, channel means, seeded torch state, the epoch loop."""

import threading
import time

import numpy as np
import pytest
import torch
from torch import nn

from sss_viewer.engine._fit import EpochPlan, channel_means, class_balanced_weights, fit_epochs, seeded_torch
from tests.fixtures.threads import Steps, run_threads


def test_class_balanced_weights_give_each_class_half_the_weight():
    labels = np.array([1, 0, 0, 0, 1, 0, 0])
    members = np.array([0, 1, 2, 3])  # one positive, three negatives in training
    w = class_balanced_weights(labels, members)
    assert w.dtype == np.float32 and w.shape == labels.shape
    assert w[members].mean() == pytest.approx(1.0)
    assert w[members][labels[members] == 1].sum() == pytest.approx(w[members][labels[members] == 0].sum())
    assert w[4] == w[0] and w[5] == w[1]  # items outside the training set weighted by their class


def test_channel_means_average_each_series_and_leave_empty_series_nan():
    means = channel_means(np.array([0.2, 0.4, 0.9]), np.array([0, 0, 2]), 3)
    np.testing.assert_allclose(means[[0, 2]], [0.3, 0.9])
    assert np.isnan(means[1])


def test_seeded_torch_leaves_the_callers_rng_and_threads_as_they_were():
    threads = torch.get_num_threads()
    torch.manual_seed(123)
    expected = torch.rand(4)
    torch.manual_seed(123)
    with seeded_torch(7, num_threads=1) as generator:
        assert torch.get_num_threads() == 1
        inside = torch.rand(2)
        drawn = torch.rand(2, generator=generator)
    assert torch.get_num_threads() == threads
    assert torch.equal(torch.rand(4), expected)  # the run's draws did not advance the caller's stream
    with seeded_torch(7) as again:
        assert torch.equal(torch.rand(2), inside) and torch.equal(torch.rand(2, generator=again), drawn)


def test_seeded_runs_on_two_threads_at_once_each_draw_their_own_seeds_stream():
    """torch's global RNG is one per process: runs started together take turns rather than share its stream."""

    def draws(seed: int, n: int = 40) -> torch.Tensor:
        with seeded_torch(seed):
            out = []
            for _ in range(n):
                out.append(torch.rand(1))
                time.sleep(0.001)  # another thread would draw here
            return torch.cat(out)

    expected = {7: draws(7), 8: draws(8)}
    got, start = {}, threading.Barrier(2)

    def run(seed):
        start.wait(10)
        got[seed] = draws(seed)

    run_threads(lambda: run(7), lambda: run(8))
    assert torch.equal(got[7], expected[7]) and torch.equal(got[8], expected[8])


def test_a_model_opened_on_another_thread_during_a_seeded_run_leaves_the_runs_draws_alone():
    """The viewer opens a saved model for one session while another session trains: the run draws what its seed gives."""
    from sss_viewer.engine.bundle import ModelBundle
    from sss_viewer.viewer.demo_files import DEMO_MODEL_DIR

    with seeded_torch(7):
        expected = torch.rand(8)
    steps, got = Steps("first half drawn", "model opened", timeout_s=60), {}

    def run():
        with seeded_torch(7):
            head = torch.rand(4)
            steps.done("first half drawn")
            steps.wait("model opened")
            got["run"] = torch.cat([head, torch.rand(4)])

    def open_model():
        try:
            steps.wait("first half drawn")
            ModelBundle.load(DEMO_MODEL_DIR)
        finally:
            steps.done("model opened")

    run_threads(run, open_model, timeout_s=120)
    assert torch.equal(got["run"], expected)


def test_a_seeded_run_may_nest_one_on_its_own_thread():
    with seeded_torch(1), seeded_torch(2):
        inner = torch.rand(1)
    with seeded_torch(2):
        assert torch.equal(torch.rand(1), inner)


def test_fit_epochs_keeps_the_best_epoch_and_stops_early():
    torch.manual_seed(0)
    model = nn.Linear(1, 1)
    x = torch.linspace(-1, 1, 32)[:, None]
    y = (x[:, 0] > 0).float()
    scores = iter([0.6, 0.9, 0.7, 0.8, 0.5, 0.4])
    weights_at = {}

    def batch_losses(epoch):
        yield nn.functional.binary_cross_entropy_with_logits(model(x)[:, 0], y), len(x)

    def validate():
        weights_at[len(weights_at) + 1] = model.weight.detach().clone()
        return next(scores)

    plan = EpochPlan(epochs=6, lr=0.1, weight_decay=0.0, lr_final_factor=0.1, patience=2)
    history, best = fit_epochs(model, plan, batch_losses, validate, unit="items")
    assert best == 2 and len(history) == 4  # epochs 3 and 4 did not beat 0.9: stop after 4
    assert torch.equal(model.weight, weights_at[2])
    assert history[0]["lr"] == pytest.approx(0.1) and history[-1]["lr"] < 0.1
    assert set(history[0]) == {"epoch", "train_loss", "val_auc", "lr", "seconds", "train_items_per_s"}

"""The SSS channel loss."""

import torch
import torch.nn.functional as F

from sss_viewer.engine.training import channel_loss


def test_channel_loss_is_bce_of_mean_window_probability_per_series():
    logits = torch.tensor([0.0, 2.0, -1.0, 3.0, -2.0])
    series = torch.tensor([4, 4, 1, 4, 1])
    labels = torch.zeros(6)
    labels[4] = 1.0
    loss = channel_loss(logits, series, labels)
    p = torch.sigmoid(logits)
    p4 = p[[0, 1, 3]].mean()
    p1 = p[[2, 4]].mean()
    expected = (F.binary_cross_entropy(p4, torch.tensor(1.0)) + F.binary_cross_entropy(p1, torch.tensor(0.0))) / 2
    torch.testing.assert_close(loss, expected)


def test_series_weights_and_window_term():
    logits = torch.tensor([1.0, -1.0])
    series = torch.tensor([0, 1])
    labels = torch.tensor([1.0, 0.0])
    weights = torch.tensor([3.0, 1.0])
    p = torch.sigmoid(logits)
    l0 = F.binary_cross_entropy(p[0], labels[0])
    l1 = F.binary_cross_entropy(p[1], labels[1])
    torch.testing.assert_close(channel_loss(logits, series, labels, weights), (3 * l0 + l1) / 4)
    with_window = channel_loss(logits, series, labels, window_loss_weight=0.5)
    torch.testing.assert_close(with_window, (l0 + l1) / 2 + 0.5 * F.binary_cross_entropy_with_logits(logits, labels))


def test_channel_loss_has_gradients():
    logits = torch.randn(8, requires_grad=True)
    loss = channel_loss(logits, torch.tensor([0, 0, 1, 1, 2, 2, 2, 0]), torch.tensor([1.0, 0.0, 1.0]))
    loss.backward()
    assert torch.isfinite(logits.grad).all() and logits.grad.abs().sum() > 0

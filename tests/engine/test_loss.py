"""The SSS channel loss."""

import math

import pytest
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


def _reference_loss(logits, series, labels, series_weight, window_loss_weight):
    """The SSS loss written out series by series (float64 scalars; shapes as in ``channel_loss``)."""
    logits = logits.double()
    weighted_sum, weight_sum = 0.0, 0.0
    for i in sorted(set(series.tolist())):  # only the series present in the batch
        windows = [b for b in range(len(series)) if series[b] == i]
        mean_p = sum(torch.sigmoid(logits[b]) for b in windows) / len(windows)
        y = float(labels[i])
        bce = -(y * torch.log(mean_p) + (1 - y) * torch.log(1 - mean_p))
        w = 1.0 if series_weight is None else float(series_weight[i])
        weighted_sum, weight_sum = weighted_sum + w * bce, weight_sum + w
    loss = weighted_sum / weight_sum
    if window_loss_weight > 0:
        window_bce = []
        for b in range(len(series)):
            y, p = float(labels[series[b]]), torch.sigmoid(logits[b])
            window_bce.append(-(y * torch.log(p) + (1 - y) * torch.log(1 - p)))
        loss = loss + window_loss_weight * sum(window_bce) / len(window_bce)
    return loss


@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("window_loss_weight", [0.0, 0.3])
def test_channel_loss_and_gradient_match_a_series_by_series_reference(weighted, window_loss_weight):
    gen = torch.Generator().manual_seed(0)
    logits = torch.randn(200, generator=gen, requires_grad=True)
    series = torch.randint(0, 9, (200,), generator=gen)
    series[series == 4] = 5  # series 4 and 9..11 are absent from the batch
    labels = (torch.arange(12) % 3 == 0).float()
    labels[[4, 10]] = -1.0  # an absent series of unknown label changes nothing
    weight = torch.rand(12, generator=gen) + 0.5 if weighted else None

    loss = channel_loss(logits, series, labels, weight, window_loss_weight)
    expected = _reference_loss(logits, series, labels, weight, window_loss_weight)

    assert math.isclose(loss.item(), expected.item(), rel_tol=1e-6, abs_tol=1e-6)
    (grad,) = torch.autograd.grad(loss, logits)
    (grad_expected,) = torch.autograd.grad(expected, logits)
    torch.testing.assert_close(grad, grad_expected, rtol=1e-5, atol=1e-8)

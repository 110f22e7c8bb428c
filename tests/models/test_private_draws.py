"""Models built without drawing from torch's global random stream (models/_private_draws.py), as a saved model is
built before its weights are loaded."""

from __future__ import annotations

import threading

import pytest
import torch

from sss_viewer.models import MODEL_REGISTRY, build_model
from sss_viewer.models._private_draws import draws_from
from tests.models.test_models import SMALL_PARAMS


@pytest.mark.parametrize("name", sorted(MODEL_REGISTRY))
def test_every_backbone_builds_from_the_private_generator_alone(name):
    torch.manual_seed(11)
    expected = torch.rand(8)
    torch.manual_seed(11)
    with draws_from(torch.Generator().manual_seed(3)):
        first = build_model(name, **SMALL_PARAMS[name]).state_dict()
    assert torch.equal(torch.rand(8), expected)  # the global stream did not move
    with draws_from(torch.Generator().manual_seed(3)):
        again = build_model(name, **SMALL_PARAMS[name]).state_dict()
    assert all(torch.equal(first[k], again[k]) for k in first)  # and the private one decided the weights


def test_another_thread_keeps_drawing_from_the_global_stream():
    torch.manual_seed(5)
    expected = torch.rand(16)
    inside, drawn = threading.Event(), threading.Event()
    got = {}

    def builder():
        with draws_from(torch.Generator().manual_seed(0)):
            inside.set()
            assert drawn.wait(10)

    def other():
        assert inside.wait(10)
        torch.manual_seed(5)
        got["other"] = torch.rand(16)
        drawn.set()

    threads = [threading.Thread(target=builder), threading.Thread(target=other)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(20)
    assert torch.equal(got["other"], expected)

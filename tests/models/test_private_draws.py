"""Models built without drawing from torch's global random stream (models/_private_draws.py), as a saved model is
built before its weights are loaded."""

from __future__ import annotations

import pytest
import torch

from sss_viewer.models import MODEL_REGISTRY, build_model
from sss_viewer.models._private_draws import draws_from
from tests.fixtures.threads import Steps, run_threads
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
    steps, got = Steps("building", "drawn"), {}

    def builder():
        with draws_from(torch.Generator().manual_seed(0)):
            steps.done("building")
            steps.wait("drawn")

    def other():
        steps.wait("building")
        torch.manual_seed(5)
        got["other"] = torch.rand(16)
        steps.done("drawn")

    run_threads(builder, other)
    assert torch.equal(got["other"], expected)

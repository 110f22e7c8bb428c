"""MiniRocket-LR, the whole-channel reference: trained on the training channels or on the whole training fold."""

from __future__ import annotations

import numpy as np
import pytest

from sss_viewer.baselines.minirocket_reference import fit_minirocket_logistic
from sss_viewer.experiments.protocols import MODELS, PROTOCOLS


def test_the_full_fold_reference_chooses_c_as_before_and_refits_on_train_and_val(toy_series_split):
    series_set, split = toy_series_split
    inner = fit_minirocket_logistic(series_set, split, num_features=840)
    full = fit_minirocket_logistic(series_set, split, num_features=840, fit_on="train+val")
    assert len(full.test_probs) == (split == "test").sum() and np.isfinite(full.test_probs).all()
    assert full.C in (0.01, 0.1, 1.0)
    assert not np.allclose(full.test_probs, inner.test_probs)  # another training set, another model
    # the threshold is chosen on validation probabilities of a model that did not see validation
    with pytest.raises(ValueError, match="fit_on"):
        fit_minirocket_logistic(series_set, split, num_features=840, fit_on="all")


def test_the_bonn_protocol_compares_both_references_and_the_hydra_peer():
    bonn = PROTOCOLS["bonn"].models
    for name in ("minirocket-lr", "minirocket-lr-full", "hydra-minirocket-ridge", "hydra-minirocket-ridge-full"):
        assert name in bonn and name in MODELS

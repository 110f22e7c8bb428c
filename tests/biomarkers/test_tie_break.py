"""Ties in a marker's ranking ordered by a second value (docs/results.md §8, rule 2): ``break_ties`` and
``spike_rate_amplitude``."""

from __future__ import annotations

import numpy as np
import pytest

from sss_viewer import Recording
from sss_viewer.biomarkers import get_scorer
from sss_viewer.biomarkers.base import break_ties


def test_break_ties_keeps_every_strict_order_and_orders_only_the_ties():
    score = np.array([1.0, 0.5, 0.5, 0.0, 0.0, 0.0, np.nan])
    secondary = np.array([0.0, 9.0, 1.0, 5.0, 7.0, np.nan, 100.0])
    out = break_ties(score, secondary)
    assert np.isnan(out[6])  # unscored stays unscored
    order = np.argsort(-out[:6], kind="stable")
    assert list(order) == [0, 1, 2, 4, 3, 5]  # 1.0 first whatever its secondary; ties by secondary (NaN last)
    assert out[:6].max() <= 1.0 and out[:6].min() >= 0.0
    np.testing.assert_allclose(out[:6], score[:6], atol=1e-3 * 0.5)  # moved by at most TIE_SHARE of the smallest gap


def test_break_ties_when_every_score_is_equal_and_refuses_a_wrong_shape():
    out = break_ties(np.zeros(4), np.array([3.0, 1.0, 4.0, 2.0]))
    assert list(np.argsort(-out)) == [2, 0, 3, 1]
    with pytest.raises(ValueError, match="tie_break"):
        break_ties(np.zeros(4), np.zeros(3))


def _spiky_recording(sfreq=1000.0, duration_s=20.0, seed=3) -> Recording:
    """Eight contacts of background; A2 has spikes at low amplitude, A5 and A7 are louder without spikes."""
    rng = np.random.default_rng(seed)
    n = int(sfreq * duration_s)
    data = rng.standard_normal((8, n)) * 20.0
    gains = np.array([1.0, 1.0, 1.0, 1.0, 2.5, 1.0, 1.6, 1.0])
    data *= gains[:, None]
    for start in rng.integers(int(sfreq), n - int(sfreq), 30):
        data[1, start : start + 40] -= 400.0 * np.hanning(40)
    return Recording(
        data=data.astype(np.float32),
        sfreq=sfreq,
        ch_names=[f"A{i + 1}" for i in range(8)],
        ch_types=["seeg"] * 8,
        soz=np.array([0, 1, 0, 0, 1, 0, 0, 0], dtype=bool),
        line_freq=50.0,
    )


def test_spike_rate_amplitude_orders_channels_without_spikes_by_amplitude():
    rec = _spiky_recording()
    plain = get_scorer("spike_rate").score(rec).channels.set_index("channel")
    tied = get_scorer("spike_rate_amplitude").score(rec)
    ch = tied.channels
    assert ch["channel"].iloc[0] == "A2"  # the spiking contact stays first, below-average amplitude or not
    no_spikes = ch[ch["channel"] != "A2"]
    assert (plain.loc[no_spikes["channel"], "value"] == 0).all()
    assert list(no_spikes["channel"][:2]) == ["A5", "A7"]  # then the louder contacts, not the names' order
    # the value and the heat map stay the spike rate's
    np.testing.assert_allclose(ch.set_index("channel").loc[plain.index, "value"], plain["value"])
    assert tied.scorer == "spike_rate_amplitude" and "amplitude" in tied.scorer_info["reference"]

"""The one on-disk format of scores: the ranking CSV of every writer, and the full-precision round trip."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from sss_viewer.engine.inference import RecordingScores
from sss_viewer.engine.score_files import ranking_columns, ranking_table


def _scores(scorer: str = "sss") -> RecordingScores:
    rng = np.random.default_rng(0)
    windows = pd.DataFrame(
        {
            "channel": ["A1"] * 3 + ["A2"] * 3,
            "start_s": [0.0, 1, 2] * 2,
            "end_s": [1.0, 2, 3] * 2,
            "p_raw": rng.random(6),
            "p_cal": rng.random(6),
            "p0": rng.random(6),
            "p1": rng.random(6),
            "artifact": ["", "", "jump", "", "", ""],
        }
    )
    middle = {"lower": [0.5, 0.1], "upper": [0.7, 0.3]} if scorer == "sss" else {"value": [4.5, 1.25]}
    channels = pd.DataFrame(
        {
            "channel": ["A1", "A2"],
            "score": [0.6 + 1e-12, 0.2],
            **middle,
            "n_windows": [2, 3],
            "rank": [1, 2],
            "label": [1, 0],
            "artifact": ["", ""],
        }
    )
    excluded = pd.DataFrame({"channel": ["ECG"], "reason": ["ecg channel"]})
    return RecordingScores(windows, channels, excluded, duration_s=3.0, scorer=scorer, scorer_info={"title": scorer})


@pytest.mark.parametrize(("scorer", "middle"), [("sss", ["lower", "upper"]), ("spike_rate", ["value"])])
def test_the_ranking_csv_has_the_same_columns_for_every_writer(scorer, middle):
    scores = _scores(scorer)
    table = ranking_table(scores)
    assert list(table.columns) == ["channel", "score", *middle, "rank", "label", "artifact", "scorer"]
    assert (table["scorer"] == scorer).all() and "n_windows" not in table
    assert scores.ranking_table().equals(table)


def test_a_channel_table_without_the_scorer_columns_is_refused_by_name():
    channels = _scores("sss").channels.drop(columns=["upper"])
    with pytest.raises(ValueError, match=r"scored by 'sss' lacks column\(s\) \['upper'\]"):
        ranking_columns(channels, "sss")


def test_full_precision_round_trip_and_key(tmp_path):
    scores = _scores("spike_rate")
    scores.save(tmp_path / "s", key="abc")
    back = RecordingScores.load(tmp_path / "s", key="abc")
    for name in ("windows", "channels", "excluded"):
        pd.testing.assert_frame_equal(getattr(back, name), getattr(scores, name))
    assert back.channels["score"].iloc[0] == 0.6 + 1e-12  # not rounded
    assert (back.scorer, back.scorer_info, back.duration_s) == ("spike_rate", {"title": "spike_rate"}, 3.0)
    assert back.heat_windows is None and back.artifacts is None
    assert RecordingScores.load(tmp_path / "s", key="other") is None
    assert RecordingScores.load(tmp_path / "missing") is None
    scores.save(tmp_path / "s", key="new")  # replaced as a whole
    assert RecordingScores.load(tmp_path / "s", key="new") is not None
    assert [p.name for p in tmp_path.iterdir()] == ["s"]  # no temporary folder left beside it

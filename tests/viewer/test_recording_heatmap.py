"""The whole-recording channels × time heat map (:mod:`sss_viewer.viewer.recording_heatmap`)."""

import holoviews as hv
import numpy as np
import pandas as pd
import pytest

from sss_viewer.engine.inference import RecordingScores
from sss_viewer.viewer.recording_heatmap import RecordingHeatmap, first_onset, heat_grid


def _scores(duration=100.0) -> RecordingScores:
    """A, B, C scored in 2-s windows every second; B is 0.9 from 60 s on (else 0.1), C 0.5, A 0.2; ranked B, C, A."""
    rows = []
    for channel, base in (("A", 0.2), ("B", 0.1), ("C", 0.5)):
        for start in np.arange(0.0, duration - 1.0, 1.0):
            p = 0.9 if channel == "B" and start >= 60.0 else base
            rows.append(
                {"channel": channel, "start_s": start, "end_s": start + 2.0, "p_raw": p, "p_cal": p, "p0": p, "p1": p}
            )
    windows = pd.DataFrame(rows)
    channels = pd.DataFrame(
        {
            "channel": ["A", "B", "C"],
            "score": [0.2, 0.9, 0.5],
            "lower": [0.2, 0.9, 0.5],
            "upper": [0.2, 0.9, 0.5],
            "n_windows": [99] * 3,
            "rank": [3, 1, 2],
        }
    )
    return RecordingScores(windows, channels, pd.DataFrame(columns=["channel", "reason"]), duration)


def test_rows_are_channels_by_rank_and_columns_a_fixed_number_of_bins():
    grid = heat_grid(_scores(), n_bins=50)
    assert grid.values.shape == (3, 50) and grid.channels == ["B", "C", "A"]
    assert grid.edges_s[0] == 0.0 and grid.edges_s[-1] == pytest.approx(100.0)
    assert np.allclose(grid.values[1], 0.5) and np.allclose(grid.values[2], 0.2)
    late = (grid.edges_s[:-1] >= 62.0)[: grid.values.shape[1]]
    assert np.allclose(grid.values[0, late], 0.9) and np.allclose(grid.values[0, grid.edges_s[1:] <= 58.0], 0.1)
    assert heat_grid(_scores(duration=3600.0), n_bins=240).values.shape == (3, 240)  # any length: 240 columns


def test_with_an_onset_the_axis_is_time_from_the_onset_with_a_line_there():
    component = RecordingHeatmap(scores=_scores(), onset_s=60.0, n_bins=50)
    grid = component.grid()
    assert grid.x_edges[0] == pytest.approx(-60.0) and grid.x_edges[-1] == pytest.approx(40.0)
    figure = component.figure()
    image, line = figure.get(0), figure.get(1)
    assert isinstance(line, hv.VLine) and line.data == 0.0
    assert image.kdims[0].label == "time from onset" and image.bounds.lbrt()[0] == pytest.approx(-60.0)
    assert "onset at 60.0 s" in component.title(grid)


def test_without_an_onset_the_axis_is_absolute_time():
    for onset in (None, 250.0):  # none, or one outside the recording
        component = RecordingHeatmap(scores=_scores(), onset_s=onset, n_bins=50)
        figure = component.figure()
        assert len(figure) == 1 and figure.get(0).kdims[0].label == "time"
        assert component.grid().onset_s is None and component.grid().x_edges[0] == 0.0


def test_bad_channels_are_left_out_and_a_click_names_the_channel_and_time():
    component = RecordingHeatmap(scores=_scores(), onset_s=60.0, bad_channels=["C"], n_bins=50)
    assert component.grid().channels == ["B", "A"]
    component.select_at(5.0, 1.0)  # the top row (y = n - 1), 5 s after the onset
    assert component.selected == ("B", 65.0)
    component.select_at(500.0, 1.0)  # outside: nothing
    assert component.selected == ("B", 65.0)


def test_first_onset_and_bad_input():
    markers = [
        {"onset_s": 80.0, "kind": "onset"},
        {"onset_s": 20.0, "kind": "note"},
        {"onset_s": 40.0, "kind": "onset"},
    ]
    assert first_onset(markers) == 40.0 and first_onset([]) is None
    with pytest.raises(ValueError, match="n_bins"):
        heat_grid(_scores(), n_bins=0)


def test_in_the_app_a_click_on_the_heat_map_brings_that_channel_and_time_into_view(tmp_path):
    from sss_viewer.viewer.app import build_app

    app = build_app(data_root=tmp_path, out_dir=tmp_path / "out")
    heat = app.recording_heat
    grid = heat.grid()
    assert heat.onset_s == pytest.approx(56.018) and grid.channels[0] == app.ranking.table()["channel"].iloc[0]
    row = len(grid.channels) - 1  # the bottom row: the lowest-ranked channel, on another page than the top one
    heat.select_at(100.0, 0.0)
    channel = grid.channels[row]
    assert app.traces.focus_channel == channel and channel in app.traces.page_contacts()
    t0, t1 = app.traces.window()
    assert t0 < 156.018 < t1


def test_before_scores_arrive_an_empty_heat_map_is_drawn():
    component = RecordingHeatmap(onset_s=12.0)  # a recording just opened: its onset known, its scores not yet
    assert component.grid() is None and "no scores yet" in component.title(None)
    model = hv.render(component.figure(), backend="bokeh")  # renders (an empty tick list once broke bokeh's axis)
    assert model.title.text == "whole recording: no scores yet"

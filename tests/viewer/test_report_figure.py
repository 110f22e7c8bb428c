"""The report's figure is chosen on purpose (:mod:`sss_viewer.viewer._report_figure`), not the page on screen."""

import re

import numpy as np
import pandas as pd
import pytest

from sss_viewer.io.recording import Recording
from sss_viewer.viewer._report_figure import choose_report_view, report_traces
from sss_viewer.viewer.traces import TraceView


def _ranking(channels):
    return pd.DataFrame({"channel": channels, "rank": np.arange(1, len(channels) + 1)})


def test_the_top_channels_around_the_onset_clipped_to_the_recording():
    shown = [f"A{i}" for i in range(1, 13)]
    ranking = _ranking(shown[::-1])
    view = choose_report_view(ranking, shown=shown, duration_s=100.0, onset_s=40.0, soz_channels=["A1", "A2"])
    assert view.channels == shown[::-1][:8] + ["A1", "A2"]  # 8 by rank, then the labelled SOZ not among them
    assert (view.t0, view.t1, view.onset_s) == (35.0, 55.0, 40.0)
    caption = view.caption("bipolar")
    assert "Top 8 channels by the ranking (A12, A11" in caption
    assert "SOZ channels not among them (A1, A2)" in caption
    assert "35.0–55.0 s: 5 s before to 15 s after the seizure onset at 40.0 s" in caption
    assert "bipolar montage" in caption
    early = choose_report_view(ranking, shown=shown, duration_s=100.0, onset_s=2.0)
    assert (early.t0, early.t1) == (0.0, 20.0) and "2 s before to 18 s after" in early.why  # kept 20 s long
    soz = shown[:5] + ["X"]  # five SOZ channels missing from the top six (X is not shown): too many to add
    many_soz = choose_report_view(ranking, shown=shown, duration_s=100.0, onset_s=40.0, soz_channels=soz, n_top=6)
    assert many_soz.channels == shown[::-1][:6]


def test_without_an_onset_the_highest_scoring_window_of_the_top_channel():
    from sss_viewer.engine.inference import RecordingScores

    windows = pd.DataFrame(
        {
            "channel": ["B", "B", "B", "A"],
            "start_s": [0.0, 50.0, 90.0, 70.0],
            "end_s": [2.0, 52.0, 92.0, 72.0],
            "p_cal": [0.1, 0.8, 0.3, 0.99],
        }
    )
    windows = windows.assign(p_raw=windows["p_cal"], p0=windows["p_cal"], p1=windows["p_cal"])
    channels = pd.DataFrame({"channel": ["B", "A"], "score": [0.9, 0.5], "rank": [1, 2]})
    scores = RecordingScores(windows, channels, pd.DataFrame(columns=["channel", "reason"]), 100.0)
    view = choose_report_view(_ranking(["B", "A"]), shown=["A", "B"], duration_s=100.0, scores=scores)
    assert view.onset_s is None and (view.t0, view.t1) == (41.0, 61.0)
    assert "highest-scoring window of B (50.0–52.0 s, p = 0.80)" in view.why
    unscored = choose_report_view(None, shown=["A", "B"], duration_s=100.0)
    assert unscored.channels == ["A", "B"] and unscored.n_ranked == 0 and (unscored.t0, unscored.t1) == (0.0, 20.0)
    with pytest.raises(ValueError, match="n_top"):
        choose_report_view(None, shown=["A"], duration_s=10.0, n_top=0)


@pytest.mark.parametrize("montage", ["bipolar", "average"])
def test_the_report_traces_draw_the_chosen_rows_in_rank_order_in_the_live_montage(montage):
    rng = np.random.default_rng(1)
    names = [f"LA{i}" for i in range(1, 7)] + [f"RB{i}" for i in range(1, 5)]
    rec = Recording(rng.standard_normal((10, 5000)).astype(np.float32) * 30, 250.0, names, ["seeg"] * 10, subject="x")
    live = TraceView(
        recording=rec,
        montage=montage,
        page_size=4,
        page=1,
        start_s=3.0,
        span_s=5.0,
        show_overview=False,
        highpass_hz=1.0,
    )
    view = choose_report_view(_ranking(["RB3", "LA2", "LA5"]), shown=live.contacts(), duration_s=20.0, onset_s=8.0)
    copy = report_traces(live, view)
    labels = list(copy.page_rows().labels)
    expected = {"bipolar": ["RB2-RB3", "LA1-LA2", "LA4-LA5"], "average": ["RB3-avg", "LA2-avg", "LA5-avg"]}[montage]
    assert labels == expected and copy.n_slots() == 3 and copy.window() == (0.0, 20.0)  # 20 s: the whole recording
    # the same signals as the live view's rows (the average over every shown channel, the same filter)
    live_rows = live.rows()
    picked = [list(live_rows.labels).index(label) for label in labels]
    from sss_viewer.viewer._display import MontageRows

    rows = MontageRows(
        [live_rows.labels[i] for i in picked],
        [live_rows.members[i] for i in picked],
        [live_rows.shafts[i] for i in picked],
        live_rows.kind,
    )
    expected_data = live.read_rows(live.read_plan(rows), 500, 2500)
    assert np.allclose(copy.read_rows(copy.read_plan(copy.page_rows()), 500, 2500), expected_data)
    assert (live.page, live.window(), live.montage) == (1, (3.0, 8.0), montage)  # the live view is untouched


def test_the_report_figure_shows_the_top_channels_around_the_onset_whatever_page_is_on_screen(tmp_path):
    from sss_viewer.viewer.app import build_app

    app = build_app(data_root=tmp_path, out_dir=tmp_path / "out")
    app.traces.param.update(page=2, start_s=150.0, montage="bipolar")  # a page and time far from the onset
    before = (app.traces.page, app.traces.window())
    report = app._report_bytes().decode()
    figure = report.split("<h2>Figure</h2>", 1)[1].split("<h2>", 1)[0]
    top = list(app.ranking.table()["channel"][:8])
    caption = re.search(r'<p class="caption">(.*?)</p>', figure).group(1)
    assert f"Top 8 channels by the ranking ({', '.join(top)})" in caption
    assert "51.0–71.0 s: 5 s before to 15 s after the seizure onset at 56.0 s" in caption
    assert "bipolar montage" in caption
    assert 'src="data:image/png;base64,' in figure or "No figure:" in figure
    assert (app.traces.page, app.traces.window()) == before  # the live view did not move


def test_a_recording_without_a_channel_to_draw_gets_no_report_figure():
    from sss_viewer.viewer._report_figure import report_figure

    rec = Recording(np.zeros((2, 2500), dtype=np.float32), 250.0, ["A1", "A2"], ["seeg"] * 2, subject="x")
    live = TraceView(recording=rec, bad_channels=["A1", "A2"], show_overview=False)
    view = choose_report_view(None, shown=live.contacts(), duration_s=10.0)
    assert view.channels == [] and report_figure(live, view, None) is None

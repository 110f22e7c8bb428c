"""The channel ranking table: threshold highlighting, bad channels, selection, agreement with labels."""

from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest

from sss_viewer.engine.inference import RecordingScores, aggregate_channels
from sss_viewer.metrics import binary_auc
from sss_viewer.viewer.ranking import (
    NO_LABELS_TEXT,
    RankingTable,
    agreement,
    agreement_text,
    format_prob,
    ranking_csv_frame,
    ranking_frame,
)

# Bokeh's ColumnDataSource.from_df (inside every Tabulator update) calls reset_index(inplace=True),
# which pandas 3.1 deprecates; not ours to fix.
pytestmark = pytest.mark.filterwarnings(
    "ignore:The inplace keyword in DataFrame.reset_index is deprecated:DeprecationWarning"
)

CHANNEL_SCORES = {"LA1": 0.90, "LA2": 0.70, "LA3": 0.30, "RB1": 0.55, "RB2": 0.20, "RB3": 0.10}
SOZ = {"LA1": 1, "LA2": 1, "LA3": 0, "RB1": 0, "RB2": 0, "RB3": 1}


def make_scores(labels: dict | None = SOZ) -> RecordingScores:
    """Four windows per channel around the channel's score, aggregated as the engine does."""
    rows = []
    for ch, s in CHANNEL_SCORES.items():
        for w, d in enumerate((-0.02, 0.02, -0.01, 0.01)):
            p = s + d
            rows.append((ch, float(w), w + 1.0, p, p, p - 0.05, p + 0.05))
    windows = pd.DataFrame(rows, columns=["channel", "start_s", "end_s", "p_raw", "p_cal", "p0", "p1"])
    channels = aggregate_channels(windows, labels)
    excluded = pd.DataFrame({"channel": ["EKG"], "reason": ["not an iEEG channel (ecg)"]})
    return RecordingScores(windows, channels, excluded, 4.0)


def test_ranking_frame_columns_and_ranks():
    df = ranking_frame(make_scores().channels, 0.5)
    assert list(df["channel"]) == ["LA1", "LA2", "RB1", "LA3", "RB2", "RB3"]
    assert list(df["rank"]) == [1, 2, 3, 4, 5, 6]
    assert list(df["shaft"]) == ["LA", "LA", "RB", "LA", "RB", "RB"]
    assert df.loc[0, "interval"] == "[0.85, 0.95]"
    assert df.loc[0, "score"] == pytest.approx(0.90)
    assert list(df["label"]) == ["SOZ", "SOZ", "not SOZ", "not SOZ", "not SOZ", "SOZ"]
    assert set(df["n_windows"]) == {4}


def test_threshold_highlighting_follows_threshold():
    table = RankingTable(scores=make_scores(), threshold=0.5)
    assert list(table.table()["above"]) == [True, True, True, False, False, False]
    assert list(table._tabulator.value["above"]) == [True, True, True, False, False, False]
    table.threshold = 0.8
    assert list(table._tabulator.value["above"]) == [True, False, False, False, False, False]
    # the highlighting style covers exactly the rows above the threshold
    styled_rows = set(table._tabulator._get_style_data()["data"])
    assert styled_rows == {0}
    table.threshold = 0.05
    assert table.table()["above"].all()
    assert "at 0.05 (3 of 3 SOZ channels above" in table._agreement.object


def test_threshold_slider_is_bound():
    table = RankingTable(scores=make_scores(), threshold=0.42)
    assert table._slider.value == pytest.approx(0.42)
    table._slider.value = 0.6
    assert table.threshold == pytest.approx(0.6)


def test_bad_channels_leave_ranking_and_agreement():
    table = RankingTable(scores=make_scores(), threshold=0.5)
    full = table.agreement()
    assert full["auc"] == pytest.approx(binary_auc(list(CHANNEL_SCORES.values()), list(SOZ.values())))
    table.bad_channels = ["LA1", "RB3"]
    df = table.table()
    assert "LA1" not in set(df["channel"]) and "RB3" not in set(df["channel"])
    assert list(df["rank"]) == [1, 2, 3, 4]
    assert list(df["channel"]) == ["LA2", "RB1", "LA3", "RB2"]
    kept = [c for c in CHANNEL_SCORES if c not in ("LA1", "RB3")]
    expected = binary_auc([CHANNEL_SCORES[c] for c in kept], [SOZ[c] for c in kept])
    got = table.agreement()
    assert got["auc"] == pytest.approx(expected)
    assert got["auc"] != pytest.approx(full["auc"])
    assert got["n_channels"] == 4 and got["n_soz"] == 1
    assert "Marked bad" in table._excluded.object and "LA1" in table._excluded.object
    assert "EKG" in table._excluded.object


def test_agreement_figures_at_threshold():
    df = ranking_frame(make_scores().channels, 0.5)
    m = agreement(df, 0.5)
    # above 0.5: LA1 (SOZ), LA2 (SOZ), RB1 (not): tp 2, fp 1, fn 1
    assert m["precision"] == pytest.approx(2 / 3)
    assert m["recall"] == pytest.approx(2 / 3)
    assert m["f1"] == pytest.approx(2 / 3)
    text = agreement_text(m)
    assert text.startswith("AUC ") and "F1 0.67" in text and "at 0.50 (2 of 3 SOZ channels above" in text


def test_selecting_a_row_sets_selected_channel():
    table = RankingTable(scores=make_scores(), threshold=0.5)
    assert table.selected_channel is None
    table._tabulator.selection = [2]
    assert table.selected_channel == "RB1"
    table._on_click(SimpleNamespace(row=0, column="channel"))
    assert table.selected_channel == "LA1"
    # set from outside (e.g. the heat map): the row is selected
    table.selected_channel = "RB2"
    assert table._tabulator.selection == [4]
    # the selection follows the channel when the ranks change
    table.bad_channels = ["LA1"]
    assert table._tabulator.selection == [3]
    assert table.selected_channel == "RB2"


def test_unknown_labels_say_so():
    table = RankingTable(scores=make_scores(labels=None), threshold=0.5)
    assert table.labels_known is False
    assert set(table.table()["label"]) == {""}  # the column is there, empty, for the clinician to fill
    assert table.agreement() is None
    assert NO_LABELS_TEXT in table._agreement.object
    table.scores = make_scores()
    assert table.labels_known is True
    assert "AUC" in table._agreement.object


def test_labels_known_is_readonly():
    table = RankingTable(scores=make_scores())
    with pytest.raises(TypeError, match="Read-only"):
        table.labels_known = False


def test_no_scores_gives_an_empty_table():
    table = RankingTable()
    assert table.table().empty
    assert NO_LABELS_TEXT in table._agreement.object
    assert table.__panel__() is table._layout


def test_one_class_labels_show_auc_not_available():
    labels = {c: 0 for c in CHANNEL_SCORES}
    table = RankingTable(scores=make_scores(labels=labels), threshold=0.5)
    assert np.isnan(table.agreement()["auc"])
    assert "AUC n/a" in table._agreement.object


def test_interval_column_only_when_the_calibrator_gives_intervals():
    channels = pd.DataFrame(
        {"channel": ["A1", "A2"], "score": [0.7, 0.2], "lower": [0.7, 0.2], "upper": [0.7, 0.2], "n_windows": [3, 3]}
    )
    point = ranking_frame(channels, 0.5)
    assert "interval" not in point.columns
    csv = ranking_csv_frame(point)
    assert csv["lower"].isna().all() and csv["upper"].isna().all()  # written as empty cells, not the score
    # the ten original columns, then scorer, value, artifact, scorer_note (empty: no scorer named, no marker value)
    assert csv.to_csv(index=False).splitlines()[1] == "1,A1,A,0.7,,,,,3,1,,,,"
    channels["lower"], channels["upper"] = [0.6, 0.1], [0.8, 0.3]
    assert list(ranking_frame(channels, 0.5)["interval"]) == ["[0.60, 0.80]", "[0.10, 0.30]"]


def test_one_rounding_rule_for_scores_threshold_and_flag():
    channels = pd.DataFrame(
        {
            "channel": ["A1", "A2"],
            "score": [0.2764, 0.2749],
            "lower": [0.2764, 0.2749],
            "upper": [0.2764, 0.2749],
            "n_windows": [3, 3],
        }
    )
    table = RankingTable(threshold=0.276)
    assert table.threshold == 0.28  # the threshold lives on the 0.01 grid the table shows
    table.scores = RecordingScores(pd.DataFrame(columns=["channel", "p_cal"]), channels, pd.DataFrame(), 1.0)
    df = table.table()
    assert list(df["above"]) == [True, False]  # 0.2764 is shown as 0.28 and flagged; 0.2749 is 0.27
    assert format_prob(table.threshold) == "0.28"
    assert "at 0.28" in agreement_text({**agreement(df.assign(label=["SOZ", "not SOZ"]), 0.28)})


def test_time_above_threshold_column():
    table = RankingTable(scores=make_scores(), threshold=0.5)
    df = table.table().set_index("channel")
    # LA1's four windows are all around 0.90; RB1's are 0.53, 0.57, 0.54, 0.56: all >= 0.5
    assert df.loc["LA1", "time_above"] == 1.0 and df.loc["RB3", "time_above"] == 0.0
    table.threshold = 0.55
    assert table.table().set_index("channel").loc["RB1", "time_above"] == 0.5


def test_clinician_labels_edit_the_table_and_agreement():
    table = RankingTable(scores=make_scores(labels=None), threshold=0.5)
    assert table.agreement() is None
    table.set_label("LA1", "SOZ")
    table.set_label("RB3", "not SOZ")
    assert table.clinician_labels == {"LA1": True, "RB3": False}
    assert table.labels_known is True
    assert table.agreement()["n_channels"] == 2 and table.agreement()["auc"] == 1.0
    row = int(np.flatnonzero(table._tabulator.value["channel"] == "LA2")[0])
    table._on_edit(SimpleNamespace(column="label", row=row, value="SOZ"))  # what a cell edit in the browser sends
    assert table.clinician_labels["LA2"] is True
    table.set_label("LA1", "")
    assert "LA1" not in table.clinician_labels
    assert ranking_csv_frame(table.table()).set_index("channel").loc["LA2", "label"] == "1"
    with pytest.raises(ValueError, match="Invalid label 'maybe' for channel LA1"):
        table.set_label("LA1", "maybe")


def test_display_names_give_the_shaft_and_keep_the_original_name():
    channels = make_scores().channels.assign(channel=lambda d: "POL " + d["channel"])
    names = {c: c.removeprefix("POL ") for c in channels["channel"]}
    df = ranking_frame(channels, 0.5, display_names=names)
    assert set(df["shaft"]) == {"LA", "RB"} and df["channel"].iloc[0] == "POL LA1"
    table = RankingTable(
        scores=RecordingScores(pd.DataFrame(columns=["channel", "p_cal"]), channels, pd.DataFrame(), 4.0)
    )
    table.display_names = names
    assert table._tabulator.formatters["channel"]["POL LA1"] == "LA1"


def test_time_above_is_shown_in_percent():
    table = RankingTable(scores=make_scores(), threshold=0.55)
    shown = table._tabulator.value.set_index("channel")
    assert shown.loc["RB1", "time_above"] == 50.0 and table._tabulator.formatters["time_above"]["symbol"] == " %"

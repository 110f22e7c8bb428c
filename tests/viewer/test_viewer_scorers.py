"""The viewer's scorer picker, the ranking's provenance, artifacts and the two-scorer comparison.

Real components throughout: a ``ViewerApp`` opening BrainVision files written by pybv, the
training-free markers of ``sss_viewer.biomarkers`` and the bundled demo model.
"""

import re

import numpy as np
import pandas as pd
import pybv
import pytest
from scipy.stats import spearmanr

import sss_viewer.biomarkers as biomarkers
from sss_viewer.biomarkers import get_scorer
from sss_viewer.metrics import binary_auc
from sss_viewer.viewer._loader import load_selected
from sss_viewer.viewer._scorers import DEFAULT_TOP_K, SYNTHETIC_VALIDATION, compare_rankings
from sss_viewer.viewer._scoring import BackgroundScorer
from sss_viewer.viewer.app import build_app
from sss_viewer.viewer.ranking import CSV_COLUMNS, ranking_frame, round_value

# Bokeh's ColumnDataSource.from_df (inside every Tabulator update) calls reset_index(inplace=True),
# which pandas 3.1 deprecates; not ours to fix.
pytestmark = pytest.mark.filterwarnings(
    "ignore:The inplace keyword in DataFrame.reset_index is deprecated:DeprecationWarning"
)

SFREQ = 250.0
NAMES = [f"LA{i + 1}" for i in range(4)] + [f"RB{i + 1}" for i in range(4)]
SQUARE = "LA3"
"""The contact carrying a square wave at 25× its neighbours' amplitude."""
WAIT_S = 180


def _write(folder, name: str, *, seconds: float = 40.0, square: bool = True, names=NAMES, seed: int = 0):
    """A BrainVision SEEG file: noise at ~30 µV, faster activity on LA1/LA2, one square-wave contact at 25×."""
    rng = np.random.default_rng(seed)
    n = int(seconds * SFREQ)
    t = np.arange(n) / SFREQ
    data = rng.standard_normal((len(names), n)) * 30.0
    data[:2] += 40.0 * np.sin(2 * np.pi * 20.0 * t)  # more line length on LA1, LA2
    if square:
        data[names.index(SQUARE)] = 25 * 30.0 * np.sign(np.sin(2 * np.pi * 2.0 * t + 0.1))
    pybv.write_brainvision(
        data=data * 1e-6,
        sfreq=SFREQ,
        ch_names=list(names),
        fname_base=name,
        folder_out=folder,
        fmt="binary_float32",
        unit="µV",
        overwrite=True,
    )  # (pybv takes volts and stores µV)
    return folder / f"{name}.vhdr"


@pytest.fixture
def app(tmp_path):
    return build_app(data_root=tmp_path, out_dir=tmp_path / "out", scorer="sss")


def _wait(background: BackgroundScorer) -> None:
    assert background.wait(WAIT_S), "scoring did not finish"
    assert background.error == ""


def test_picking_a_marker_rescores_and_the_ranking_says_which_scorer(app, tmp_path):
    path = _write(tmp_path, "patient")
    assert app.open(path)
    _wait(app.scorer)
    assert app.scores.scorer == "sss"
    model = app.ranking.table()
    line = app.ranking._provenance.object
    assert line.startswith("**Ranking by SSS model**") and SYNTHETIC_VALIDATION in line  # the demo model says so
    assert "interval" in model.columns and "value" not in model.columns
    app.scorers.scorer = "line_length"
    assert app.scores is None and app.ranking.table().empty  # the model's ranking is not shown as the marker's
    _wait(app.scorer)
    assert app.scores.scorer == "line_length"
    ranking = app.ranking.table()
    expected = get_scorer("line_length").score(load_selected(path)).channels  # the marker on its own
    assert list(ranking["channel"]) == list(expected["channel"])
    np.testing.assert_allclose(ranking["value"], expected["value"])
    assert list(ranking["channel"]) != list(model["channel"])  # the ranking changed with the scorer
    assert list(ranking["channel"][:2]) == ["LA1", "LA2"]  # the faster activity has the longest line
    line = app.ranking._provenance.object
    assert (
        line.startswith("**Ranking by Line length** (value in µV/s)")
        and "Esteller" in line
        and "**Validation:**" in line
    )
    assert "interval" not in ranking.columns  # a marker has no Venn–Abers interval
    assert app.ranking._tabulator.titles["value"] == "value (µV/s)"
    assert app.ranking.threshold == 0.5  # the marker's threshold, not the model's
    assert app.traces.heat_title() == "line length ÷ top channel"  # the heat map does not call it p(SOZ)
    app.scorers.scorer = "sss"  # back: the model's ranking again (cached)
    _wait(app.scorer)
    assert app.scores.scorer == "sss" and list(app.ranking.table()["channel"]) == list(model["channel"])
    assert app.ranking.threshold == pytest.approx(round(app.bundle.threshold, 2))


def test_a_marker_that_cannot_score_the_recording_disables_scoring_with_its_reason(app, tmp_path):
    names = ["Fp1", "Cz", "EKG1", "O2"]  # a scalp + ECG file: no iEEG channel for any scorer
    assert app.open(_write(tmp_path, "scalp", names=names, square=False))
    assert "no good iEEG channel" in app.scoring_disabled  # the model's reason
    app.scorers.scorer = "variance"
    reason = get_scorer("variance").check_fit(app.recording)
    assert reason and "Channel variance scores" in reason
    assert app.scoring_disabled == reason and app._disabled.visible and reason in app._disabled.object
    assert app.scores is None and app.ranking.table().empty and not app.scorer.running
    slow = app.scorers.choices.get("Ripple rate")
    if slow is not None:  # a marker that needs a faster rate than 250 Hz refuses a good SEEG file too
        assert app.open(_write(tmp_path, "seeg"))
        app.scorers.scorer = slow
        assert "needs a sampling rate of at least" in app.scoring_disabled and "250 Hz" in app.scoring_disabled
    app.scorers.scorer = "line_length"  # a marker that fits clears the reason
    assert app.open(_write(tmp_path, "fits"))
    _wait(app.scorer)
    assert app.scoring_disabled == "" and not app._disabled.visible and app.scores.scorer == "line_length"


def test_the_comparison_shows_both_rankings_and_their_agreement(app, tmp_path):
    path = _write(tmp_path, "patient")
    app.scorers.scorer = "line_length"
    assert app.open(path)
    _wait(app.scorer)
    app.scorers.compare = "variance"
    _wait(app.compare_scorer)
    first = app.ranking.table()
    second = ranking_frame(app.compare_scorer.result.channels, app.ranking.threshold)
    table = app.comparison.table()
    assert list(table["channel_1"]) == list(first["channel"]) and list(table["channel_2"]) == list(second["channel"])
    np.testing.assert_allclose(table["score_2"], second["score"])
    both = first.merge(second, on="channel", suffixes=("_a", "_b")).dropna(subset=["score_a", "score_b"])
    rho = spearmanr(both["score_a"], both["score_b"]).statistic
    metrics = app.comparison.metrics()
    assert (
        metrics["spearman"] == pytest.approx(rho) and metrics["n_common"] == len(NAMES) - 1
    )  # the square wave: no score
    k = int(first["above"].sum()) or DEFAULT_TOP_K
    assert metrics["k"] == k
    assert metrics["overlap"] == len(set(first["channel"][:k]) & set(second["channel"][:k]))
    shown = app.comparison._agreement.object
    assert f"Spearman ρ {rho:.2f} over the {len(NAMES) - 1} channels both scored" in shown
    assert "Line length compared with Channel variance" in app.comparison._title.object
    assert "no clinician labels" in shown and app.comparison._layout.visible
    # clinician labels: each scorer's channel AUC over the labelled channels with a score
    for channel in ("LA1", "LA2"):
        app.ranking.set_label(channel, "SOZ")
    for channel in ("RB1", "RB2", "RB3", SQUARE):
        app.ranking.set_label(channel, "not SOZ")
    metrics = app.comparison.metrics()
    for key, frame in (("auc_first", app.ranking.table()), ("auc_second", app.comparison.rankings()[1])):
        known = frame.loc[frame["label"].isin(["SOZ", "not SOZ"]) & frame["score"].notna()]
        assert metrics[key] == pytest.approx(
            binary_auc(known["score"].to_numpy(), (known["label"] == "SOZ").to_numpy())
        )
    assert f"channel AUC: Line length {metrics['auc_first']:.2f}, Channel variance {metrics['auc_second']:.2f}" in (
        app.comparison._agreement.object
    )
    paths = app.export(tmp_path / "exports")
    assert "Compared with a second scorer: Spearman ρ" in paths["report"].read_text()
    app.scorers.compare = ""  # none: the comparison goes away
    assert app.comparison.second is None and not app.comparison._layout.visible


def test_compare_rankings_counts_only_channels_both_scored_and_defaults_k():
    first = pd.DataFrame(
        {"channel": list("ABCDEF"), "score": [0.9, 0.8, 0.6, 0.4, 0.2, np.nan], "above": [False] * 6, "label": [""] * 6}
    )
    second = pd.DataFrame(
        {"channel": list("BACEDG"), "score": [0.7, 0.65, 0.5, 0.3, 0.1, 0.05], "above": [False] * 6, "label": [""] * 6}
    )
    metrics = compare_rankings(first, second)
    assert metrics["n_common"] == 5 and metrics["k"] == 5  # DEFAULT_TOP_K capped by the channels scored
    x = [0.9, 0.8, 0.6, 0.4, 0.2]
    y = [0.65, 0.7, 0.5, 0.1, 0.3]
    assert metrics["spearman"] == pytest.approx(spearmanr(x, y).statistic)
    assert metrics["auc_first"] is None and metrics["auc_second"] is None
    above = first.assign(above=[True, True, False, False, False, False])
    metrics = compare_rankings(above, second)
    assert metrics["k"] == 2 and metrics["top_first"] == ["A", "B"] and metrics["overlap"] == 2


def test_an_artifact_channel_is_marked_in_the_ranking_traces_and_exports(app, tmp_path):
    import holoviews as hv
    from bokeh.models import Image

    path = _write(tmp_path, "square")
    assert app.open(path)
    for scorer in ("sss", "line_length", "variance"):
        app.scorers.scorer = scorer
        _wait(app.scorer)
        ranking = app.ranking.table()
        flagged = ranking.set_index("channel")["artifact"]
        assert flagged[SQUARE] and (flagged.drop(SQUARE) == "").all(), scorer
        top = ranking.iloc[0]
        assert top["channel"] != SQUARE or top["artifact"], f"{scorer} ranks the square wave first, unmarked"
        if np.isnan(ranking.set_index("channel").loc[SQUARE, "score"]):  # no clean window: listed last with its reason
            assert ranking["channel"].iloc[-1] == SQUARE
            assert f"No score (listed last): {SQUARE} ({flagged[SQUARE]})" in app.ranking._excluded.object
            assert (
                app.ranking._tabulator.value.set_index("channel").loc[SQUARE, "score"] is None
            )  # an empty cell, not NaN
        shown = app.ranking._tabulator.value.set_index("channel")
        badge = shown.loc[SQUARE, "artifact"]
        assert 'class="sss-artifact"' in badge and ">artifact</span>" in badge and "title=" in badge, scorer
        assert "artifact" not in app.ranking._tabulator.hidden_columns
    # the traces: the flagged contact's name and its windows are marked
    labels = app.traces.slot_labels()
    assert f"{SQUARE} [artifact]" in labels and sum("[artifact]" in label for label in labels) == 1
    share, _ = app.traces.artifact_rows()
    row = app.traces.rows().labels.index(SQUARE)
    assert np.nanmin(share[row]) > 0.99 and np.isnan(np.delete(share, row, axis=0)).all()
    plot = hv.render(app.traces.main_element(*app.traces.window()))
    assert len([r for r in plot.renderers if isinstance(getattr(r, "glyph", None), Image)]) == 2  # heat map + overlay
    assert [bar.title for bar in plot.right if type(bar).__name__ == "ColorBar"] == ["channel variance ÷ top channel"]
    app.traces.montage = "bipolar"  # LA2-LA3 and LA3-LA4 are made from the flagged contact
    assert sorted(label for label in app.traces.slot_labels() if "[artifact]" in label) == [
        "LA2-LA3 [artifact]",
        "LA3-LA4 [artifact]",
    ]
    # the exports carry the scorer and the reason
    paths = app.export(tmp_path / "exports")
    csv = pd.read_csv(paths["csv"], keep_default_na=False)
    assert tuple(csv.columns) == CSV_COLUMNS and set(csv["scorer"]) == {"variance"}
    row = csv.set_index("channel").loc[SQUARE]
    assert row["artifact"] == flagged[SQUARE] and "Channel variance" in row["scorer_note"]
    values = app.ranking.table().set_index("channel")["value"]
    assert float(csv.set_index("channel").loc["LA1", "value"]) == pytest.approx(round_value(values["LA1"]))
    assert csv.set_index("channel").loc[SQUARE, "value"] == ""  # no clean window: no value
    report = paths["report"].read_text()
    assert "Ranking by Channel variance (value in µV²)" in report and 'class="badge"' in report
    assert re.search(rf"<td>{SQUARE}</td>.*{re.escape(flagged[SQUARE][:20])}", report)


def test_without_artifacts_nothing_is_marked(app, tmp_path):
    assert app.open(_write(tmp_path, "clean", square=False))
    app.scorers.scorer = "line_length"
    _wait(app.scorer)
    assert (app.ranking.table()["artifact"] == "").all() and "artifact" in app.ranking._tabulator.hidden_columns
    assert not any("[artifact]" in label for label in app.traces.slot_labels()) and not app.traces.has_artifacts()


def test_the_demo_is_scored_by_the_default_scorer_when_it_is_a_marker(tmp_path, monkeypatch):
    monkeypatch.setattr(biomarkers, "DEFAULT_SCORER", "line_length")
    viewer = build_app(data_root=tmp_path, out_dir=tmp_path / "out")
    assert viewer.scorers.scorer == "line_length" and viewer.is_demo
    _wait(viewer.scorer)
    assert viewer.scores.scorer == "line_length" and len(viewer.ranking.table()) == len(viewer.scores.channels)
    assert viewer.ranking._provenance.object.startswith("**Ranking by Line length**")
    assert "ranked here by Line length" in viewer._notice.object  # the demo notice does not claim the model scored it
    viewer.scorers.scorer = "sss"  # the demo's precomputed model scores, at once
    assert viewer.scores is not None and viewer.scores.scorer == "sss" and not viewer.scorer.running
    assert (
        SYNTHETIC_VALIDATION in viewer.ranking._provenance.object
        and "scored by a small demo model" in viewer._notice.object
    )


def test_background_results_are_cached_by_scorer_name_and_parameters(tmp_path):
    recording = load_selected(_write(tmp_path, "cached"))
    background = BackgroundScorer()
    background.start(get_scorer("line_length"), recording)
    _wait(background)
    first = background.result
    background.start(get_scorer("line_length", window_s=4.0), recording)  # other parameters: scored anew
    _wait(background)
    assert "(cached)" not in background.status and background.result is not first
    background.start(get_scorer("variance"), recording)  # another marker: scored anew
    _wait(background)
    assert "(cached)" not in background.status and background.result.scorer == "variance"
    background.start(get_scorer("line_length"), recording)
    assert "(cached)" in background.status and background.result is first
    background.shutdown()

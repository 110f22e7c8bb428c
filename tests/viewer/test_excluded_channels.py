"""Excluded channels shown with their reason, contacts in numeric order, and a gain that acts on what is visible.

A clinic-like FIF file (every channel typed ``eeg`` as EDF/BrainVision exports do, Nihon Kohden ``POL``
names stored out of order, an ECG lead, a DC input, a ``$`` copy without its twin, a bare ``POL``
channel, a trigger, a scalp electrode and a channel the file marks bad), read with ``read_recording``;
one contact marked bad in the viewer. Rendered with bokeh (no browser); the browser test is in
``test_browser_channels.py``.
"""

from __future__ import annotations

import dataclasses

import holoviews as hv
import mne
import numpy as np
import pytest
from bokeh.models import Line, Plot

from sss_viewer.biomarkers import get_scorer
from sss_viewer.io.readers import read_recording
from sss_viewer.io.recording import Recording
from sss_viewer.viewer._display import group_by_shaft, montage_rows
from sss_viewer.viewer._excluded import EXCLUDED_COLOUR, EXCLUDED_HEADING, excluded_channels
from sss_viewer.viewer._trace_elements import TRACE_COLOUR
from sss_viewer.viewer.traces import ALL_ON_PAGE, TraceView

STORED = [
    "POL LA10",
    "POL LA2",
    "POL LA1",
    "EKG1",
    "POL LA3",
    "POL LA11",
    "POL LB2",
    "POL LB1",
    "POL DC01",
    "$LH7",
    "POL",
    "TRIG",
    "POL LB3",
    "Cz",
]
"""Channel names in file order: contacts out of order and mixed with non-iEEG channels."""
FILE_BAD = "POL LB2"
MARKED_BAD = "POL LA3"
EXPECTED = {
    MARKED_BAD: "bad (marked)",
    FILE_BAD: "bad (file)",
    "EKG1": "ecg — not scored",
    "POL DC01": "dc — not scored",
    "$LH7": "$ copy — not scored",
    "POL": "no contact name — not scored",
    "TRIG": "stim — not scored",
    "Cz": "eeg — not scored",
}
SCORED = ["POL LA1", "POL LA2", "POL LA10", "POL LA11", "POL LB1", "POL LB3"]
"""The contacts the view scores and draws as ordinary rows, in display order."""


@pytest.fixture(scope="module")
def recording(tmp_path_factory) -> Recording:
    rng = np.random.default_rng(3)
    data = rng.standard_normal((len(STORED), 250 * 30)) * 20e-6  # volts: 20 µV noise
    data[STORED.index("POL DC01")] += 0.5  # a DC input: a large offset
    raw = mne.io.RawArray(data, mne.create_info(STORED, 250.0, "eeg"), verbose=False)
    raw.info["bads"] = [FILE_BAD]
    path = tmp_path_factory.mktemp("clinic") / "clinic_raw.fif"
    raw.save(path, verbose=False)
    return read_recording(path)


def view_of(recording, **params) -> TraceView:
    return TraceView(recording=recording, bad_channels=[MARKED_BAD], amplitude_uv=80.0, **params)


def main_figure(plot):
    plots = [plot] if isinstance(plot, Plot) else list(plot.select({"type": Plot}))
    return max(plots, key=lambda p: p.frame_height or 0)


def lines_by_name(plot):
    return {r.name: r for r in plot.renderers if isinstance(getattr(r, "glyph", None), Line)}


# ------------------------------------------------------------------------------- excluded channels


def test_the_file_is_read_as_a_clinic_exports_it(recording):
    """What the reasons are about: the readers typed the channels from their names, the file marked one bad."""
    types = dict(zip(recording.ch_names, recording.ch_types, strict=True))
    assert recording.bads == [FILE_BAD]
    assert types["EKG1"] == "ecg" and types["POL DC01"] == "misc" and types["TRIG"] == "stim" and types["Cz"] == "eeg"
    assert {n for n, t in types.items() if t == "seeg"} == set(SCORED) | {MARKED_BAD, FILE_BAD}


def test_each_excluded_channel_is_listed_with_its_reason(recording):
    assert excluded_channels(recording, [MARKED_BAD], SCORED) == EXPECTED
    view = view_of(recording, page_size=6)
    assert view.contacts() == SCORED and view.excluded() == EXPECTED
    line = view.excluded_line()
    assert line.startswith(EXCLUDED_HEADING)
    for name, reason in EXPECTED.items():
        shown = recording.display_names[recording.ch_names.index(name)]
        assert f"{shown}: {reason}" in line
    assert view.state()["excluded_channels"] == EXPECTED
    for montage in ("average", "bipolar"):  # every montage lists them, though only monopolar draws them
        view.montage = montage
        assert view.excluded_line() == line and not set(EXPECTED) & set(view.drawn_rows().labels)


def test_excluded_channels_are_greyed_rows_after_the_scored_contacts(recording):
    view = view_of(recording, page_size=6, show_overview=False)
    assert view.drawn_rows().labels == SCORED + list(EXPECTED)
    assert view.rows().labels == SCORED and view.n_pages == 3
    view.page = 1
    labels = view.slot_labels()
    assert labels == [
        "LA3 [bad (marked)]",
        "LB2 [bad (file)]",
        "EKG1 [ecg — not scored]",
        "DC01 [dc — not scored]",
        "$LH7 [$ copy — not scored]",
        "POL [no contact name — not scored]",
    ]
    assert view.greyed_slots() == list(range(6)) and view.page_contacts() == []
    plot = main_figure(hv.render(view.figure()))
    colours = {name: r.glyph.line_color for name, r in lines_by_name(plot).items()}
    assert set(colours) == set(labels) and set(colours.values()) == {EXCLUDED_COLOUR}
    assert set(plot.yaxis[0].major_label_overrides.values()) == set(labels)
    view.page = 0  # the same glyphs, back to scored rows: drawn in the trace colour again
    colours = {name: r.glyph.line_color for name, r in lines_by_name(plot).items()}
    assert set(colours) == {n.replace("POL ", "") for n in SCORED} and set(colours.values()) == {TRACE_COLOUR}
    view.show_excluded = False  # the toggle: scored rows only, the line still says what is left out
    assert view.drawn_rows().labels == SCORED and view.n_pages == 1 and view.excluded() == EXPECTED


def test_greyed_rows_read_their_own_channels_and_export(recording):
    view = view_of(recording, page_size=8, show_overview=True)
    assert view.page_bounds() == [(0, 6), (6, 14)]  # greyed rows start a page of their own
    assert view.page_rows().labels == SCORED and view.n_slots() == 8
    assert list(view._page_options())[-1] == "2: LA3 … Cz"
    view.page = 1
    plan = view.read_plan()
    names = [recording.ch_names[i] for i in plan.picks]
    assert names == list(EXPECTED)  # each greyed row reads its own channel
    block = view.read_rows(plan, 0, 250, filtered=False)
    np.testing.assert_array_equal(block, recording.get_data(plan.picks, 0, 250))
    hv.render(view.static_figure())  # the export draws the page with its greyed rows and overview
    assert view.state()["rows"] == list(EXPECTED)
    view.page = 0
    view.focus_channel = "EKG1"  # an excluded channel can be brought into view like any other
    assert view.page == 1 and view._focus_row(view.page_rows()) == 2


def test_excluded_channels_are_never_in_the_heat_map_the_reference_or_the_scores(recording):
    scores = get_scorer("line_length").score(recording)
    scored = set(scores.channels["channel"])
    assert not scored & (set(EXPECTED) - {MARKED_BAD})  # ECG, DC, trigger … and the file's bad: never scored
    view = view_of(recording, page_size=6, scores=scores, show_overview=False)
    assert MARKED_BAD in scored  # scored before it was marked bad …
    values, _, _, _ = view.heat_rows()
    assert values.shape[0] == len(SCORED) and np.isfinite(values).any(axis=1).all()
    view.page = 1
    heat, _ = view.page_heat()
    assert heat.shape[0] == 0  # … yet its greyed row, like every greyed row, has no heat-map row
    image = view.main_element(0.0, 10.0).get(0)
    assert isinstance(image, hv.Image) and np.isnan(image.dimension_values(2)).all()
    view.montage = "average"
    plan = view.read_plan()
    assert [recording.ch_names[i] for i in plan.picks] == SCORED  # the reference: scored contacts only
    view.montage = "bipolar"
    assert all(m < len(SCORED) for members in view.drawn_rows().members for m in members)


# ------------------------------------------------------------------------------- numeric order


@pytest.mark.parametrize("style", ["{}", "POL {}", "EEG {}-Ref"])
def test_contacts_within_a_shaft_in_numeric_order_in_every_montage(style):
    stored = [style.format(n) for n in ["LA10", "LB2", "LA2", "LA1", "LB1", "LA11", "LA3"]]
    plain = {style.format(n): n for n in ["LA1", "LA2", "LA3", "LA10", "LA11", "LB1", "LB2"]}
    order = ["LA1", "LA2", "LA3", "LA10", "LA11", "LB1", "LB2"]
    assert [plain[stored[i]] for idx in group_by_shaft(stored).values() for i in idx] == order
    mono = montage_rows(stored, "monopolar")
    assert [plain[c] for c in mono.labels] == order
    average = montage_rows(stored, "average")
    assert [plain[label.removesuffix("-avg")] for label in average.labels] == order
    bipolar = montage_rows(stored, "bipolar")
    pairs = [tuple(plain[stored[m]] for m in members) for members in bipolar.members]
    assert pairs == [("LA1", "LA2"), ("LA2", "LA3"), ("LA3", "LA10"), ("LA10", "LA11"), ("LB1", "LB2")]


def test_the_view_orders_a_file_stored_out_of_order(recording):
    view = view_of(recording)
    assert view.display_labels(view.rows()) == ["LA1", "LA2", "LA10", "LA11", "LB1", "LB3"]
    view.montage = "average"
    assert view.display_labels(view.rows()) == ["LA1-avg", "LA2-avg", "LA10-avg", "LA11-avg", "LB1-avg", "LB3-avg"]
    view.montage = "bipolar"
    assert view.display_labels(view.rows()) == ["LA1-LA2", "LA2-LA10", "LA10-LA11", "LB1-LB3"]
    names = [n.replace("POL ", "EEG ") + "-Ref" if n.startswith("POL L") else n for n in recording.ch_names]
    renamed = dataclasses.replace(recording, ch_names=names, bads=[])  # EEG LA10-Ref …, stored out of order
    view = TraceView(recording=renamed)
    assert view.display_labels(view.rows()) == ["LA1", "LA2", "LA3", "LA10", "LA11", "LB1", "LB2", "LB3"]


# ------------------------------------------------------------------------------- gain on what is visible


def curve_ranges(plot) -> dict[str, tuple[float, float]]:
    return {k: (r.coordinates.y_source.start, r.coordinates.y_source.end) for k, r in lines_by_name(plot).items()}


def test_the_gain_picker_follows_the_page(recording):
    view = view_of(recording, page_size=3, show_overview=False)
    view.__panel__().get_root()  # the Panel layout builds its bokeh models (what a session serves)
    w = view._widgets
    assert w["shaft"].options == {"LA": "POL LA", "all on this page": ALL_ON_PAGE} and w["shaft"].value == "POL LA"
    view.page = 1  # LA11, LB1, LB3: LA is still in view, kept
    assert list(w["shaft"].options) == ["LA", "LB", "all on this page"] and w["shaft"].value == "POL LA"
    w["shaft"].value = "POL LB"
    w["gain"].value = 2.0
    assert view.shaft_gain == {"POL LB": 2.0}
    view.page = 3  # DC01, $LH7, POL: no LB here; the first shaft in view is picked and its gain shown
    assert list(w["shaft"].options) == ["DC", "$LH", "POL", "all on this page"]
    assert w["shaft"].value == "POL DC" and w["gain"].value == 1.0
    view.page = 1
    w["shaft"].value = "POL LB"
    assert w["gain"].value == 2.0  # the gain of what is picked
    w["shaft"].value = ALL_ON_PAGE
    assert w["gain"].value is None  # LA at 1, LB at 2: no single gain to show
    assert view.shaft_gain == {"POL LB": 2.0}  # showing a gain set nothing


def test_all_on_this_page_changes_the_visible_rows_amplitudes(recording):
    view = view_of(recording, page_size=3, show_overview=False)
    view.__panel__().get_root()
    plot = main_figure(hv.render(view.figure()))
    view.page = 1
    assert set(curve_ranges(plot).values()) == {(-80.0, 80.0)}
    w = view._widgets
    w["shaft"].value = ALL_ON_PAGE
    w["gain"].value = 4.0
    assert view.shaft_gain == {"POL LA": 4.0, "POL LB": 4.0}
    assert curve_ranges(plot) == {name: (-20.0, 20.0) for name in ["LA11", "LB1", "LB3"]}
    view.page = 3  # shafts not in view when the gain was set keep theirs
    assert set(curve_ranges(plot).values()) == {(-80.0, 80.0)}
    assert w["gain"].value == 1.0
    with pytest.raises(ValueError, match="gain"):
        view.set_picked_gain(ALL_ON_PAGE, 0.0)

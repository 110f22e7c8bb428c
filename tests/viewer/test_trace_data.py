"""The trace view's data side on its own (:mod:`sss_viewer.viewer._trace_data`): rows, pages, reads, no Panel.

A :class:`TraceData` over a toy recording answers the rows and pages of each montage, reads the page's
montage signals, and draws only an explicit list of channels' rows (the report figure's case); a
subprocess with Panel, HoloViews and Bokeh blocked does the same. A :class:`TraceView` keeps its data
object in step with its parameters before any of its own reactions run.
"""

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from sss_viewer.viewer._trace_data import TraceData
from tests.fixtures.recordings import toy_recording

ROOT = Path(__file__).resolve().parents[2]

PAGES = {
    # 10 contacts A1 … A10, A3 marked bad: 9 scored contacts; monopolar shows A3 greyed on a page of its own
    "monopolar": (
        ["A1", "A2", "A4", "A5", "A6", "A7", "A8", "A9", "A10", "A3"],
        [(0, 4), (4, 8), (8, 9), (9, 10)],
    ),
    "bipolar": (["A1-A2", "A2-A4", "A4-A5", "A5-A6", "A6-A7", "A7-A8", "A8-A9", "A9-A10"], [(0, 4), (4, 8)]),
    "average": ([f"A{i}-avg" for i in (1, 2, 4, 5, 6, 7, 8, 9, 10)], [(0, 4), (4, 8), (8, 9)]),
}
GOOD = [0, 1, 3, 4, 5, 6, 7, 8, 9]
"""Recording indices of the scored contacts (A3, index 2, is bad)."""


@pytest.fixture(scope="module")
def recording():
    return toy_recording("p", 0, n_channels=10)


def _expected_page_1(data: np.ndarray, montage: str) -> np.ndarray:
    """The second page's rows (drawn rows 4–7) computed by hand from the recording's samples."""
    if montage == "monopolar":
        return data[[5, 6, 7, 8]]
    if montage == "bipolar":
        return np.stack([data[a] - data[b] for a, b in ((5, 6), (6, 7), (7, 8), (8, 9))])
    return data[[5, 6, 7, 8]] - data[GOOD].mean(axis=0)


@pytest.mark.parametrize("montage", ["monopolar", "bipolar", "average"])
def test_the_rows_pages_and_reads_of_each_montage(recording, montage):
    data = TraceData(recording=recording, montage=montage, page_size=4, bad_channels=["A3"])
    labels, bounds = PAGES[montage]
    assert data.contacts() == ["A1", "A2", "A4", "A5", "A6", "A7", "A8", "A9", "A10"]
    assert list(data.drawn_rows().labels) == labels and data.page_bounds() == bounds
    assert data.n_pages == len(bounds) and data.n_slots() == 4 and data.excluded() == {"A3": "bad (marked)"}
    data.page = 1
    assert list(data.page_rows().labels) == labels[4:8]
    block = data.read_rows(data.read_plan(), 100, 600)
    assert block.shape == (4, 500)
    assert np.allclose(block, _expected_page_1(recording.data, montage)[:, 100:600], atol=1e-3)
    values, p0, p1, edges = data.heat_rows()  # no scores: every scored row, all NaN
    assert values.shape == (len(data.rows()), len(edges) - 1) and np.isnan(values).all()
    data.page = 99  # past the last page: the last
    assert data.page_slice() == slice(*bounds[-1])


def test_the_greyed_page_shows_the_bad_channel_without_heat_rows(recording):
    data = TraceData(recording=recording, page_size=4, bad_channels=["A3"], page=3)
    assert list(data.page_rows().labels) == ["A3"] and data.greyed_slots() == [0]
    heat, _ = data.page_heat()
    assert heat.shape[0] == 0  # a greyed row is never scored
    assert np.allclose(data.read_rows(data.read_plan(), 0, 250)[0], recording.data[2, :250])
    data.show_excluded = False
    assert data.n_pages == 3 and "A3" not in data.drawn_rows().labels


@pytest.mark.parametrize(
    ("montage", "labels"),
    [
        ("monopolar", ["A5", "A1", "A9"]),
        ("bipolar", ["A4-A5", "A1-A2", "A8-A9"]),  # the first row holding each channel
        ("average", ["A5-avg", "A1-avg", "A9-avg"]),
    ],
)
def test_an_explicit_channel_list_draws_those_rows_in_order_over_the_full_montage(recording, montage, labels):
    data = TraceData(recording=recording, montage=montage, page_size=8, bad_channels=["A3"])
    data.channels = ["A5", "A1", "A9", "A3", "not a channel"]  # a bad channel and an unknown one add no row
    assert list(data.rows().labels) == labels and list(data.drawn_rows().labels) == labels
    assert data.page_bounds() == [(0, 3)] and data.n_slots() == 3 and data.greyed_slots() == []
    assert data.heat_rows()[0].shape[0] == 3
    block = data.read_rows(data.read_plan(), 0, 500)
    if montage == "average":  # the reference is still the mean of every scored contact, not of the three
        assert np.allclose(block[0], recording.data[4, :500] - recording.data[GOOD, :500].mean(axis=0), atol=1e-3)
    data.channels = None  # back to every row
    assert list(data.drawn_rows().labels) == PAGES[montage][0]


def test_the_whole_recording_envelope_is_read_once_for_every_page(recording, monkeypatch):
    data = TraceData(recording=recording, page_size=4, plot_width=200)
    reads = []
    real = recording.get_data
    monkeypatch.setattr(recording, "get_data", lambda *a, **k: reads.append(a) or real(*a, **k))
    edges, lo, hi = data.page_envelope()
    assert lo.shape == hi.shape == (4, len(edges) - 1) and (lo <= hi).all()
    n_reads = len(reads)
    data.page = 1
    _, lo1, _ = data.page_envelope()
    assert len(reads) == n_reads and lo1.shape[0] == 4  # the next page comes from the cache
    data.recording = toy_recording("q", 1, n_channels=10)  # a new recording forgets it
    assert data.cached_envelope(data.page_rows()) is None


def test_a_trace_view_sets_its_parameters_on_its_data_before_its_own_reactions(recording):
    from sss_viewer.viewer.traces import TraceView

    view = TraceView(recording=recording, page_size=4, show_overview=False, bad_channels=["A3"])
    seen = []
    view.param.watch(lambda e: seen.append((view.data.page, view.data.montage)), ["heat_opacity"])
    view.param.update(heat_opacity=0.2, page=1, montage="bipolar")  # the display change's watcher is queued first
    assert seen == [(1, "bipolar")]
    assert view.page_rows() == view.data.page_rows() and list(view.page_rows().labels) == PAGES["bipolar"][0][4:8]
    assert view.data.amplitude_uv == view.amplitude_uv and view.data.bad_channels == ["A3"]


_SCRIPT = r"""
import json, sys
for name in {blocked}:
    sys.modules[name] = None  # as if not installed
sys.path.insert(0, sys.argv[1])
# the real viewer package: without the plotting libraries it still imports its data side

from sss_viewer.viewer._trace_data import TraceData
from tests.fixtures.recordings import toy_recording

data = TraceData(recording=toy_recording("p", 0, n_channels=10), montage="bipolar", page_size=4, plot_width=200)
data.page = 1
edges, lo, hi = data.page_envelope()
data.channels = ["A5", "A1"]
print(json.dumps({
    "page": list(TraceData(recording=data.recording, page_size=4, page=1).page_rows().labels),
    "read": list(data.read_rows(data.read_plan(), 0, 100).shape),
    "envelope": list(lo.shape),
    "chosen": list(data.page_rows().labels),
    "heat": list(data.heat_rows()[0].shape),
    "loaded": sorted(m for m in sys.modules if m.split(".")[0] in {blocked} and sys.modules[m] is not None),
    "viewer": sorted(m for m in sys.modules if m.startswith("sss_viewer.viewer.")),
}))
"""


def test_the_data_object_runs_without_panel_holoviews_or_bokeh():
    blocked = ("panel", "holoviews", "bokeh", "datashader", "tsdownsample", "matplotlib", "playwright")
    code = _SCRIPT.replace("{blocked}", repr(blocked))
    result = subprocess.run(
        [sys.executable, "-c", code, str(ROOT)], check=False, capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr[-3000:]
    out = json.loads(result.stdout.strip().splitlines()[-1])
    assert out["loaded"] == []  # none of the plotting libraries was imported
    assert out["viewer"] == [
        "sss_viewer.viewer._display",
        "sss_viewer.viewer._envelope",
        "sss_viewer.viewer._excluded",
        "sss_viewer.viewer._trace_data",
    ]
    assert out["page"] == ["A5", "A6", "A7", "A8"] and out["read"] == [2, 100] and out["envelope"] == [4, 1600]
    assert out["chosen"] == ["A4-A5", "A1-A2"] and out["heat"][0] == 2

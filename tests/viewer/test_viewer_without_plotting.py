"""The viewer package without its plotting libraries, and the trace parameters declared once.

In a subprocess whose imports of panel, holoviews, bokeh, datashader and tsdownsample fail (a meta-path
finder raising ``ModuleNotFoundError``, as for a package that is not installed), the real
``sss_viewer.viewer`` package imports, its trace data answers a page, the public names that draw
nothing resolve, and a plotting component says which extra installs what it lacks. Without param
too (an engine-only install), ``tests/foundation/test_architecture.py`` checks the package's message.
"""

import json
import subprocess
import sys
from pathlib import Path

from sss_viewer.viewer._trace_data import TraceData, TraceParams
from sss_viewer.viewer.traces import TraceView

ROOT = Path(__file__).resolve().parents[2]

PLOTTING = ("panel", "holoviews", "bokeh", "datashader", "tsdownsample")
"""The libraries blocked: every ``[viewer]`` library but param."""

_SCRIPT = r"""
import importlib.abc, json, sys

BLOCKED = {blocked}


class Blocked(importlib.abc.MetaPathFinder):
    def find_spec(self, fullname, path=None, target=None):
        if fullname.split(".")[0] in BLOCKED:
            raise ModuleNotFoundError(f"No module named {{fullname!r}} (blocked by the test)", name=fullname)
        return None


sys.meta_path.insert(0, Blocked())
sys.path.insert(0, sys.argv[1])

import sss_viewer.viewer as viewer
from sss_viewer.viewer._trace_data import TraceData
from tests.fixtures.recordings import toy_recording

data = TraceData(recording=toy_recording("p", 0, n_channels=10), montage="bipolar", page_size=4, page=1)
out = {{
    "rows": list(data.page_rows().labels),
    "read": list(data.read_rows(data.read_plan(), 0, 100).shape),
    "drawing_nothing": [viewer.DEMO_MODEL_DIR.name, viewer.export_ranking_csv.__name__],
}}
try:
    viewer.TraceView
except ImportError as exc:
    out["component"] = f"{{type(exc).__name__}}: {{exc}}"
out["loaded"] = sorted(m for m in sys.modules if m.split(".")[0] in BLOCKED)
print(json.dumps(out))
"""


def test_the_viewer_package_and_its_trace_data_import_without_the_plotting_libraries():
    code = _SCRIPT.format(blocked=repr(PLOTTING))
    result = subprocess.run(
        [sys.executable, "-c", code, str(ROOT)], check=False, capture_output=True, text=True, timeout=120, cwd=ROOT
    )
    assert result.returncode == 0, result.stderr[-3000:]
    out = json.loads(result.stdout.strip().splitlines()[-1])
    assert out["rows"] == ["A5-A6", "A6-A7", "A7-A8", "A8-A9"] and out["read"] == [4, 100]
    assert out["drawing_nothing"] == ["model", "export_ranking_csv"]
    assert out["component"] == (
        "MissingExtraError: sss_viewer.viewer.TraceView needs holoviews, which this installation lacks: "
        "pip install 'sss-viewer[viewer]'"
    )
    assert out["loaded"] == []


def test_the_view_and_its_data_share_one_declaration_of_each_common_parameter():
    shared = set(TraceParams.param) - {"name"}
    for cls in (TraceView, TraceData):
        declared_there = {n for n in cls.param if n in shared and cls.param[n].owner is not TraceParams}
        assert not declared_there, f"{cls.__name__} declares {sorted(declared_there)} again"
    assert set(TraceData.param) - set(TraceParams.param) == {"channels"}
    assert shared < set(TraceView.param)
    view = TraceView()
    view.param.update(page_size=7, montage="average")
    assert (view.data.page_size, view.data.montage) == (7, "average")  # the view still forwards them

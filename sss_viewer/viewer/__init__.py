"""Stage 11 — the clinician viewer: Panel components over the SSS engine (``panel serve app.py``, or in Jupyter).

The only stage that needs the ``[viewer]`` extra (panel, holoviews, bokeh, datashader, tsdownsample,
param); PNG/SVG export also needs ``[export]`` (playwright) and Debian's ``chromium``.
"""

import importlib

from sss_viewer._lazy import attach

_MISSING = []
for _name in ("panel", "holoviews", "bokeh", "datashader", "param"):
    try:
        importlib.import_module(_name)
    except ImportError:
        _MISSING.append(_name)
if _MISSING:
    raise ImportError(
        f"The sss-viewer viewer needs {', '.join(_MISSING)}, which this installation lacks (the engine does not): "
        "pip install 'sss-viewer[viewer]'."
    )

_PUBLIC = {
    "sss_viewer.viewer.app": ("ViewerApp", "build_app"),
    "sss_viewer.viewer.traces": ("TraceView",),
    "sss_viewer.viewer.ranking": ("RankingTable",),
    "sss_viewer.viewer.patient_ranking": ("PatientRankingPanel",),
    "sss_viewer.viewer.timecourse": ("SozTimeCourse",),
    "sss_viewer.viewer.recording_heatmap": ("RecordingHeatmap",),
    "sss_viewer.viewer.demo": ("demo_recording", "demo_scores", "load_demo"),
    "sss_viewer.viewer.demo_files": ("DEMO_MODEL_DIR",),
    "sss_viewer.viewer.export": ("BrowserUnavailable", "export_figure", "export_ranking_csv", "export_report_html"),
}
"""The public names, by the module that defines them; each is imported on first use (:mod:`sss_viewer._lazy`)."""

__getattr__, __dir__, __all__ = attach(__name__, _PUBLIC)

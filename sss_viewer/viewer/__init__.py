"""Stage 11 — the clinician viewer: Panel components over the SSS engine (``panel serve app.py``, or in Jupyter).

The only stage that needs the ``[viewer]`` extra (panel, holoviews, bokeh, datashader, tsdownsample,
param); PNG/SVG export also needs ``[export]`` (playwright) and Debian's ``chromium``.

Without param (an engine-only install) importing the package says which extra to install. With param
but without the plotting libraries, the modules that draw nothing still import: the trace view's data
side (:mod:`._trace_data`) and the arithmetic under it (:mod:`._display`, :mod:`._envelope`,
:mod:`._excluded`), the demo files and the CSV export; a public name whose module needs a missing
plotting library raises :class:`sss_viewer._lazy.MissingExtraError` naming ``[viewer]``.
"""

import importlib.util

from sss_viewer._lazy import MissingExtraError, attach

_LIBRARIES = ("panel", "holoviews", "bokeh", "datashader", "param")
"""The ``[viewer]`` libraries named when one is missing (tsdownsample is imported only where it decimates)."""


def _missing(names: tuple[str, ...]) -> list[str]:
    """The modules of ``names`` that cannot be found (not installed, or blocked from being imported)."""
    missing = []
    for name in names:
        try:
            found = importlib.util.find_spec(name) is not None
        except (ImportError, ValueError):  # a blocking import hook, or a module without a spec
            found = False
        if not found:
            missing.append(name)
    return missing


if _missing(("param",)):
    raise ImportError(
        f"The sss-viewer viewer needs {', '.join(_missing(_LIBRARIES))}, which this installation lacks "
        "(the engine does not): pip install 'sss-viewer[viewer]'."
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

_attached_getattr, __dir__, __all__ = attach(__name__, _PUBLIC)


def __getattr__(name: str):
    """A public name, imported on first use; a missing plotting library is named with the extra that installs it.

    Parameters
    ----------
    name : str
        The attribute asked for.

    Returns
    -------
    object
        The public name's value (see :func:`sss_viewer._lazy.attach`).

    Raises
    ------
    MissingExtraError
        Its module needs one of :data:`_LIBRARIES`, which cannot be imported.
    AttributeError
        ``name`` is not a public name of the package.
    """
    try:
        return _attached_getattr(name)
    except ImportError as exc:
        library = (exc.name or "").split(".")[0]
        if library not in _LIBRARIES or isinstance(exc, MissingExtraError):
            raise
        raise MissingExtraError(
            f"sss_viewer.viewer.{name} needs {library}, which this installation lacks: pip install 'sss-viewer[viewer]'",
            name=library,
        ) from exc

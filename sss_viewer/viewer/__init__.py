"""Stage 11 — the clinician viewer: Panel components over the SSS engine (``panel serve app.py``, or in Jupyter).

The only stage that needs the ``[viewer]`` extra (panel, holoviews, bokeh, datashader, tsdownsample,
param); PNG/SVG export also needs ``[export]`` (playwright) and Debian's ``chromium``.
"""

import importlib

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

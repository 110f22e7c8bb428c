"""The clinician viewer: ``panel serve app.py`` (``make demo``).

Builds one ``ViewerApp`` per browser session from the package; see ``sss_viewer/viewer/app.py``.
Environment: ``SSS_VIEWER_DATA_ROOT`` (folder the file browser may open; default the working
directory), ``SSS_VIEWER_MODEL`` (model directory; default the bundled demo model).
"""

from sss_viewer.viewer.app import build_app

build_app().servable(title="sss-viewer")

"""The served app's download buttons: each click makes a file with a writer of :mod:`sss_viewer.viewer.export`.

:func:`download_buttons` gives Panel ``FileDownload`` buttons (PNG, SVG, ranking CSV, report) that
call the app's file makers on click, name the file at click time (e.g. with
:func:`sss_viewer.viewer.export.export_basename` and the visible time range) and report a failure
to the app before re-raising it, so no file is served. Making the buttons starts the export browser in the
background (:func:`sss_viewer.viewer.export.warm_export_browser`), so the first PNG/SVG/report does
not wait for it.
"""

from __future__ import annotations

import io
import logging
from collections.abc import Callable

from sss_viewer.viewer import export

logger = logging.getLogger(__name__)


def download_buttons(
    make_png: Callable[[], bytes] | None,
    make_svg: Callable[[], bytes] | None,
    make_csv: Callable[[], bytes | str] | None,
    make_report: Callable[[], bytes | str] | None,
    *,
    basename: Callable[[], str] | str = "recording",
    on_error: Callable[[str], None] | None = None,
    warm_browser: bool = True,
) -> list:
    """``FileDownload`` buttons serving the current view from the app.

    Parameters
    ----------
    make_png, make_svg, make_csv, make_report : callable or None
        Called on click; return the file contents (bytes or str). None leaves the button out.
    basename : callable or str
        File-name base at click time (:func:`sss_viewer.viewer.export.export_basename`, e.g. with the time range).
    on_error : callable, optional
        Receives a readable message when making a file fails (the error is re-raised after, so no
        file is served).
    warm_browser : bool
        Start the export browser in the background now (when there is a figure button), so the
        first PNG/SVG/report does not wait for it.

    Returns
    -------
    buttons : list of panel.widgets.FileDownload
    """
    import panel as pn

    specs = (
        ("PNG", "png", make_png, ""),
        ("SVG", "svg", make_svg, ""),
        ("Ranking CSV", "csv", make_csv, "_ranking"),
        ("Report", "html", make_report, "_report"),
    )
    if warm_browser and any(make is not None for make in (make_png, make_svg, make_report)):
        export.warm_export_browser()
    buttons = []
    for label, ext, make, suffix in specs:
        if make is None:
            continue
        button = pn.widgets.FileDownload(
            label=f"⬇ {label}", filename=f"{_base(basename)}{suffix}.{ext}", embed=False, auto=True
        )
        button.callback = _download_callback(button, make, ext, suffix, basename, on_error)
        buttons.append(button)
    return buttons


def _base(basename: Callable[[], str] | str) -> str:
    return basename() if callable(basename) else str(basename)


def _download_callback(button, make, ext, suffix, basename, on_error):
    def callback() -> io.BytesIO:
        try:
            data = make()
        except Exception as err:
            logger.warning("Could not make the %s download: %s", ext.upper(), err, exc_info=True)
            if on_error is not None:
                on_error(f"Could not make the {ext.upper()} file: {err}")
            raise
        button.filename = f"{_base(basename)}{suffix}.{ext}"
        return io.BytesIO(data.encode("utf-8") if isinstance(data, str) else bytes(data))

    return callback

"""Export of what the viewer shows: PNG / SVG / HTML figures, the ranking CSV, a one-page report.

PNG and SVG figures are drawn by Bokeh itself in a headless Chromium (Debian's ``chromium`` on
PATH), driven by Playwright, the browser-automation library the browser tests use too, so the file
looks like the screen. A live figure (one with DynamicMaps and streams, e.g. ``TraceView.figure()``)
is never drawn itself: its registered static copy (:func:`register_static_copy`), or a copy with
each DynamicMap replaced by its current frame, is rendered into new Bokeh models, so the live
document's models are neither changed nor shared.

One headless Chromium is kept warm, with Bokeh's JavaScript loaded once into a page, so an export
only draws the figure. Playwright's sync API is bound to the thread that started it (its greenlet
and event loop) and refuses to run in a thread with a running asyncio loop, such as the Panel
server's, while Panel runs callbacks on various threads. So one daemon worker thread owns
Playwright, the browser and the page; an export from any thread serialises the figure and hands the
worker a render job through a queue, then waits for the answer. The worker is started in the
background when the app's download buttons are made (:func:`warm_export_browser`, called by
:func:`sss_viewer.viewer._export_widgets.download_buttons`); it closes the browser
and ends after ``BROWSER_IDLE_S`` seconds without a job, and at exit; the browser is also closed
after ``_BrowserWorker.max_uses`` renders (a fresh page keeps memory flat) and after a browser
error. The next export starts a new one.

Without a browser (none on PATH, Playwright not installed, or the browser fails to start), PNG and
SVG raise :class:`BrowserUnavailable` with a message that says so and that HTML needs no browser;
a caller-supplied ``fallback`` (a matplotlib Figure) is saved instead when given. HTML never needs a
browser. There is deliberately no automatic browser-free drawing: the figure the viewer exports
(``TraceView.static_figure``) puts each channel on its own ``subcoordinate_y`` row over an RGB
trace raster and a p(SOZ) heat map, with Bokeh-only options; HoloViews' matplotlib backend
(``hv.render(obj, backend="matplotlib")``, checked with HoloViews 1.23) ignores
``subcoordinate_y`` and those options and draws every channel of the page on top of each other on
one axis, a misleading picture of an iEEG page. An earlier interpreter from Bokeh's glyph models to
matplotlib broke with Bokeh releases and was removed.

HTML files embed Bokeh's JavaScript inline (``bokeh.resources.INLINE``), so they open offline, e.g.
on a hospital PC without internet, at the cost of ~1 MB per file. Every file is written atomically
(:func:`sss_viewer.fileio.atomic_write`) and an existing file is never overwritten unless
``overwrite=True``.

The served app's download buttons, which call these writers, are in :mod:`sss_viewer.viewer._export_widgets`.
"""

from __future__ import annotations

import atexit
import base64
import html
import importlib.util
import io
import json
import logging
import queue
import shutil
import tempfile
import threading
import time
import weakref
from collections.abc import Callable
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout
from datetime import datetime
from pathlib import Path
from typing import Any

import pandas as pd

from sss_viewer.fileio import atomic_write

logger = logging.getLogger(__name__)

FIGURE_FORMATS = ("png", "svg", "html")
RENDERER_BROWSER = "bokeh+chromium"
RENDERER_HTML = "bokeh-html"
RENDERER_FALLBACK = "fallback"
DEMO_MODEL_SENTENCE = (
    "This is the demo model, trained on synthetic data only: its scores show how the viewer works "
    "and say nothing about real patients."
)
REPORT_COLUMNS = (
    "rank",
    "channel",
    "shaft",
    "score",
    "value",
    "time_above",
    "interval",
    "label",
    "n_windows",
    "artifact",
)
"""Ranking columns the report shows, when the ranking has them (``value``: a marker's; ``artifact``: when a channel is flagged)."""
REPORT_TITLES = {"time_above": "time ≥ thr", "label": "clinician", "n_windows": "windows"}

_BROWSERS = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")
BROWSER_IDLE_S = 300.0
"""The warm export browser is closed (and its worker thread ends) after this many seconds without a job."""
START_TIMEOUT_S = 60.0
"""Longest wait for the browser to start."""
RENDER_TIMEOUT_S = 15.0
"""Longest wait for Bokeh to draw one figure in the browser."""
BROWSER_MARK = "<!-- rendered by Bokeh in headless Chromium (sss-viewer) -->"
"""First line of an SVG drawn by the browser."""
FALLBACK_MARK = "<!-- sss-viewer: caller-supplied matplotlib drawing (fallback), not the browser rendering -->"
"""Comment after the XML declaration of an SVG drawn by a ``fallback`` (PNG: the ``Software`` text chunk)."""
FALLBACK_SOFTWARE = "sss-viewer caller-supplied matplotlib drawing (fallback)"


class BrowserUnavailable(RuntimeError):
    """No headless browser could draw a PNG/SVG figure (HTML export needs none)."""


# --------------------------------------------------------------------------------------------
# small helpers
# --------------------------------------------------------------------------------------------


def _check_target(path: str | Path, overwrite: bool) -> Path:
    path = Path(path).expanduser()
    if path.exists() and not overwrite:
        raise FileExistsError(f"{path} already exists; pass overwrite=True to replace it.")
    if not path.parent.is_dir():
        raise FileNotFoundError(f"Cannot write {path}: the folder {path.parent} does not exist.")
    return path


def _figure_format(path: Path, fmt: str | None) -> str:
    fmt = (fmt or path.suffix.lstrip(".")).lower()
    if fmt not in FIGURE_FORMATS:
        raise ValueError(
            f"Invalid figure format {fmt!r} for {path}: expected one of {', '.join(FIGURE_FORMATS)} "
            f"(from fmt= or the file extension)."
        )
    return fmt


def _missing_browser() -> str | None:
    """Why no browser export can be tried here, or None."""
    if importlib.util.find_spec("playwright") is None:
        return "the Python package playwright is not installed"
    if not any(map(shutil.which, _BROWSERS)):
        return f"no Chromium on PATH (looked for {', '.join(_BROWSERS)}; on Debian: apt-get install chromium)"
    return None


def find_browser() -> str | None:
    """The Chromium executable exports use (first of ``_BROWSERS`` on PATH), or None without one or without Playwright."""
    if _missing_browser() is not None:
        return None
    return next(p for p in map(shutil.which, _BROWSERS) if p)


_STATIC_COPIES: dict[int, tuple[weakref.ref, Callable[[], Callable[[], Any] | None]]] = {}


def register_static_copy(figure: Any, make: Callable[[], Any]) -> None:
    """Export ``make()`` instead of the live ``figure`` (held weakly; a bound method is held weakly too).

    Parameters
    ----------
    figure : HoloViews object
        A live figure (DynamicMaps, streams, links) that a document shows.
    make : callable
        Returns a plain HoloViews copy of what ``figure`` shows now (e.g. ``TraceView.static_figure``).
    """
    key = id(figure)
    maker = weakref.WeakMethod(make) if hasattr(make, "__self__") else (lambda: make)
    _STATIC_COPIES[key] = (weakref.ref(figure, lambda _ref, key=key: _STATIC_COPIES.pop(key, None)), maker)


def static_copy(obj: Any) -> Any:
    """What to export for ``obj``: its registered static copy, else ``obj`` with each DynamicMap replaced by its current frame."""
    entry = _STATIC_COPIES.get(id(obj))
    if entry is not None and entry[0]() is obj:
        make = entry[1]()
        if make is not None:
            return make()
    return _freeze(obj)


def _freeze(obj: Any) -> Any:
    import holoviews as hv

    if isinstance(obj, hv.DynamicMap):
        return obj.last if obj.last is not None else obj[()]
    if isinstance(obj, (hv.Layout, hv.NdLayout)):
        return obj.clone([(key, _freeze(item)) for key, item in obj.data.items()])
    return obj


def to_bokeh(obj: Any):
    """The Bokeh model of ``obj``.

    A HoloViews object is rendered with the bokeh backend from :func:`static_copy` into fresh models
    drawn on canvas (not WebGL), with toolbars hidden (an exported figure has no use for them); a
    Bokeh model is used as given.
    """
    from bokeh.model import Model
    from bokeh.models import Plot

    if isinstance(obj, Model):
        return obj
    import holoviews as hv

    if isinstance(obj, hv.core.Dimensioned):
        model = hv.render(static_copy(obj), backend="bokeh")
        for item in [model, *model.references()]:
            if "toolbar_location" in item.properties():
                item.toolbar_location = None
            if isinstance(item, Plot):
                item.output_backend = "canvas"
        return model
    raise TypeError(f"Cannot export a {type(obj).__name__}: expected a HoloViews object or a Bokeh model/layout.")


# --------------------------------------------------------------------------------------------
# figures
# --------------------------------------------------------------------------------------------


def export_figure(
    obj: Any,
    path: str | Path,
    *,
    fmt: str | None = None,
    overwrite: bool = False,
    fallback: Callable[[], Any] | None = None,
    title: str = "SSS viewer",
) -> str:
    """Write a figure as PNG, SVG or HTML.

    Parameters
    ----------
    obj : HoloViews object or Bokeh model/layout
    path : path
        Output file; its folder must exist.
    fmt : {"png", "svg", "html"}, optional
        Default: the file extension.
    overwrite : bool
        Replace an existing file; otherwise an existing file raises FileExistsError.
    fallback : callable, optional
        ``fallback() -> matplotlib.figure.Figure`` drawing the figure without a browser; saved
        (``savefig(format=fmt)``, marked as a fallback) for PNG/SVG when no browser is available.
    title : str
        Title of an HTML file.

    Returns
    -------
    renderer : str
        ``"bokeh+chromium"``, ``"bokeh-html"`` or ``"fallback"`` (the given callable); also logged.

    Raises
    ------
    BrowserUnavailable
        PNG/SVG without a working browser and without ``fallback``; nothing is written.
    """
    path = _check_target(path, overwrite)
    fmt = _figure_format(path, fmt)
    model = to_bokeh(obj)
    if fmt == "html":
        from bokeh.embed import file_html
        from bokeh.resources import INLINE

        text = file_html(model, INLINE, title)
        atomic_write(path, lambda tmp: Path(tmp).write_text(text, encoding="utf-8"))
        renderer = RENDERER_HTML
    else:
        data, renderer = _render_static(model, fmt, fallback)
        atomic_write(path, lambda tmp: Path(tmp).write_bytes(data))
    logger.info("Exported %s with %s", path, renderer)
    return renderer


def figure_bytes(obj: Any, fmt: str, *, fallback: Callable[[], Any] | None = None) -> tuple[bytes, str]:
    """The file contents :func:`export_figure` would write, and the renderer used."""
    fmt = _figure_format(Path(f"figure.{fmt}"), fmt)
    with tempfile.TemporaryDirectory(prefix="sss-export-") as tmp:
        target = Path(tmp) / f"figure.{fmt}"
        renderer = export_figure(obj, target, fmt=fmt, fallback=fallback)
        return target.read_bytes(), renderer


def _render_static(model, fmt: str, fallback: Callable[[], Any] | None) -> tuple[bytes, str]:
    """PNG/SVG bytes drawn by the browser, else by ``fallback``, else BrowserUnavailable."""
    executable = find_browser()
    if executable is None:
        reason = _missing_browser() or "no browser found"
    else:
        try:
            return _browser_render(model, fmt, executable), RENDERER_BROWSER
        except BrowserUnavailable as err:
            reason = str(err)
    if fallback is not None:
        logger.warning("No browser export (%s): saving the %s drawn by the fallback.", reason, fmt.upper())
        return _savefig_bytes(fallback(), fmt), RENDERER_FALLBACK
    raise BrowserUnavailable(
        f"{fmt.upper()} export needs a headless Chromium browser: {reason}. "
        "Export HTML instead (it needs no browser), or install chromium and playwright."
    )


def _browser_render(model, fmt: str, executable: str) -> bytes:
    """PNG/SVG bytes of ``model`` drawn by Bokeh in the warm headless Chromium ``executable``."""
    from bokeh.embed import json_item

    item = json.dumps(json_item(model), separators=(",", ":"))  # in the caller's thread: the models are its own
    result = _WARM.call(lambda session: session.render(executable, item, fmt))
    if not isinstance(result, dict) or "data" not in result:
        message = result.get("error", "no result") if isinstance(result, dict) else "no result"
        raise BrowserUnavailable(f"Bokeh could not render the figure: {str(message).splitlines()[0]}")
    if fmt == "svg":
        return (BROWSER_MARK + "\n" + result["data"]).encode("utf-8")
    data = base64.b64decode(result["data"].split(",", 1)[1])
    if not data.startswith(b"\x89PNG") or len(data) < 100:
        raise BrowserUnavailable("the browser rendered an empty image")
    return data


_SHELL_JS = ("bokeh.min.js", "bokeh-gl.min.js", "bokeh-widgets.min.js", "bokeh-tables.min.js")
_SHELL_HTML = (
    "<!DOCTYPE html><html><head><meta charset='utf-8'>"
    "<style>html,body{margin:0;padding:0;background:white}</style></head>"
    "<body><div id='export-root'></div></body></html>"
)
_RENDER_SCRIPT = """async ([text, fmt, timeoutMs]) => {
  const work = (async () => {
    for (const view of [...Bokeh.index]) view.remove();
    Bokeh.documents.splice(0);
    document.getElementById("export-root").innerHTML = "";
    const item = JSON.parse(text);
    await Bokeh.embed.embed_item(item, "export-root");
    const doc = Bokeh.documents[Bokeh.documents.length - 1];
    if (!doc.is_idle) await new Promise((resolve) => doc.idle.connect(resolve));
    const view = [...Bokeh.index].find((v) => v.model.id === item.root_id);
    if (view == null) throw new Error("the figure was not rendered");
    const layer = view.export(fmt, false);
    if (fmt === "svg") return {data: layer.ctx.get_serialized_svg(true)};
    return {data: layer.canvas.toDataURL("image/png")};
  })();
  let timer;
  const late = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`not drawn within ${timeoutMs} ms`)), timeoutMs);
  });
  try {
    return await Promise.race([work, late]);
  } catch (err) {
    return {error: String((err && err.stack) || err)};
  } finally {
    clearTimeout(timer);
  }
}"""


class _Session:
    """Playwright, the browser and the page with Bokeh loaded: made, used and closed in the worker thread only."""

    def __init__(self, worker: _BrowserWorker) -> None:
        self._worker = worker
        self._playwright = None
        self._browser = None
        self._page = None
        self._executable: str | None = None
        self._uses = 0

    def page(self, executable: str):
        """The ready page, starting the browser (``executable``) and loading Bokeh's JavaScript when needed."""
        if self._page is not None and self._executable == executable:
            return self._page
        self.close()  # none yet, or another browser asked for
        try:
            from playwright.sync_api import Error as PlaywrightError
            from playwright.sync_api import sync_playwright
        except ImportError:
            raise BrowserUnavailable("the Python package playwright is not installed") from None
        from bokeh.util.paths import bokehjs_path

        started = time.perf_counter()
        try:
            self._playwright = sync_playwright().start()
            self._browser = self._playwright.chromium.launch(
                executable_path=executable,
                headless=True,
                timeout=START_TIMEOUT_S * 1000,
                args=["--hide-scrollbars", "--force-color-profile=srgb", "--disable-dev-shm-usage"],
            )
            page = self._browser.new_page(viewport={"width": 1600, "height": 1200}, device_scale_factor=1)
            page.set_content(_SHELL_HTML)
            js = Path(bokehjs_path()) / "js"
            for name in _SHELL_JS:  # from the installed bokeh package: no network
                page.add_script_tag(path=js / name)
            if page.evaluate("typeof Bokeh") == "undefined":
                raise BrowserUnavailable("Bokeh's JavaScript did not load in the export browser")
        except PlaywrightError as err:
            self.close()
            raise BrowserUnavailable(f"could not start {executable}: {_first_line(err)}") from None
        except BaseException:
            self.close()
            raise
        self._page, self._executable, self._uses = page, executable, 0
        self._worker.starts += 1
        logger.info("Export browser ready in %.1f s", time.perf_counter() - started)
        return page

    def render(self, executable: str, item: str, fmt: str) -> Any:
        """Bokeh's drawing of the JSON ``item`` as ``{"data": ...}`` (PNG data URL or SVG text) or ``{"error": ...}``."""
        from playwright.sync_api import Error as PlaywrightError

        page = self.page(executable)
        try:
            result = page.evaluate(_RENDER_SCRIPT, [item, fmt, int(RENDER_TIMEOUT_S * 1000)])
        except PlaywrightError as err:  # the browser or page is gone
            self.close()
            raise BrowserUnavailable(_first_line(err)) from None
        self._uses += 1
        if self._uses >= self._worker.max_uses:
            self.close()
        return result

    def close(self) -> None:
        browser, playwright = self._browser, self._playwright
        self._page = self._browser = self._playwright = self._executable = None
        for close in (browser and browser.close, playwright and playwright.stop):
            if close:
                try:
                    close()
                except Exception as err:  # noqa: BLE001 (already gone)
                    logger.debug("Export browser close: %s", err)


def _first_line(err: BaseException) -> str:
    text = str(getattr(err, "message", None) or err).strip()
    return text.splitlines()[0] if text else type(err).__name__


class _BrowserWorker:
    """The thread that owns the export browser; :meth:`call` runs a job on it from any thread.

    The thread is started by the first job, ends after ``BROWSER_IDLE_S`` seconds without one (or
    on :meth:`quit`) and closes the browser as it ends; a later job starts a new thread.
    """

    max_uses = 100
    """Renders before the browser is closed (the next export starts a fresh one)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()  # guards _thread and _jobs
        self._thread: threading.Thread | None = None
        self._jobs: queue.SimpleQueue | None = None
        self.starts = 0
        """Browsers started so far (the warm browser is reused while this stays put)."""

    def submit(self, job: Callable[[_Session], Any]) -> Future:
        """Queue ``job(session)`` for the worker thread (started when none runs); its future."""
        future: Future = Future()
        with self._lock:
            if self._thread is None:
                self._jobs = queue.SimpleQueue()
                self._thread = threading.Thread(
                    target=self._run, args=(self._jobs,), name="sss-export-browser", daemon=True
                )
                self._thread.start()
            self._jobs.put((job, future))
        return future

    def call(self, job: Callable[[_Session], Any]) -> Any:
        """Run ``job(session)`` on the worker thread and return its result (its exception is raised here)."""
        if threading.current_thread() is self._thread:
            raise RuntimeError("the export browser's own thread cannot wait for itself")
        future = self.submit(job)
        limit = START_TIMEOUT_S + RENDER_TIMEOUT_S + 30.0
        try:
            return future.result(timeout=limit)
        except FutureTimeout:
            future.cancel()
            self.quit(wait=False)  # a stuck browser: the next export starts a new one
            raise BrowserUnavailable(f"the export browser did not answer within {limit:.0f} s") from None

    def _run(self, jobs: queue.SimpleQueue) -> None:
        session = _Session(self)
        try:
            while True:
                try:
                    item = jobs.get(timeout=BROWSER_IDLE_S)
                except queue.Empty:
                    with self._lock:
                        if not jobs.empty():
                            continue  # a job came in just now
                        if self._jobs is jobs:
                            self._thread = self._jobs = None
                    logger.info("Export browser closed after %.0f s idle", BROWSER_IDLE_S)
                    return
                if item is None:  # quit
                    return
                job, future = item
                if not future.set_running_or_notify_cancel():
                    continue
                try:
                    future.set_result(job(session))
                except BaseException as err:  # noqa: BLE001 (handed to the caller)
                    future.set_exception(err)
        finally:
            session.close()

    @property
    def running(self) -> bool:
        """Whether the worker thread (and maybe its browser) is alive."""
        with self._lock:
            return self._thread is not None and self._thread.is_alive()

    def quit(self, wait: bool = True) -> None:
        """Close the browser and end the thread (after the jobs already queued); a later job starts anew."""
        with self._lock:
            thread, jobs = self._thread, self._jobs
            self._thread = self._jobs = None
        if thread is None:
            return
        jobs.put(None)
        if wait and thread is not threading.current_thread():
            thread.join(timeout=START_TIMEOUT_S)


_WARM = _BrowserWorker()
atexit.register(_WARM.quit)


def warm_export_browser(background: bool = True) -> None:
    """Start the export browser ahead of the first export (on its worker thread); no-op without one.

    ``background=False`` waits until it is ready (a failure to start is logged, not raised).
    """
    executable = find_browser()
    if executable is None:
        return

    def warm(session: _Session) -> None:
        try:
            session.page(executable)
        except BrowserUnavailable as err:
            logger.info("Export browser not warmed: %s", err)

    future = _WARM.submit(warm)
    if not background:
        future.result(timeout=START_TIMEOUT_S + 30.0)


def _savefig_bytes(fig, fmt: str) -> bytes:
    """A caller's matplotlib figure as PNG/SVG, marked as a fallback (PNG ``Software`` chunk, SVG comment and title)."""
    buf = io.BytesIO()
    metadata = {"Software": FALLBACK_SOFTWARE} if fmt == "png" else {"Title": FALLBACK_SOFTWARE}
    try:
        fig.savefig(buf, format=fmt, dpi=100, metadata=metadata)
    finally:
        if getattr(fig.canvas, "manager", None) is not None:  # a pyplot figure: free it
            import matplotlib.pyplot as plt

            plt.close(fig)
    data = buf.getvalue()
    if fmt == "svg":
        head, sep, rest = data.partition(b"?>")
        data = (
            head + sep + b"\n" + FALLBACK_MARK.encode("utf-8") + rest if sep else FALLBACK_MARK.encode() + b"\n" + data
        )
    return data


# --------------------------------------------------------------------------------------------
# tables and report
# --------------------------------------------------------------------------------------------


def export_ranking_csv(ranking_df: pd.DataFrame, path: str | Path, overwrite: bool = False) -> Path:
    """Write the ranking table as CSV (UTF-8, no index), atomically.

    Parameters
    ----------
    ranking_df : DataFrame, shape (n_channels, n_columns)
        The ranking as shown (one row per channel), written as it is, header first.
    path : str or Path
        The CSV file (``~`` expanded); its folder must exist.
    overwrite : bool
        Replace an existing file; without it an existing ``path`` is refused.

    Returns
    -------
    path : Path
        The file written (``path`` with ``~`` expanded).

    Raises
    ------
    FileExistsError
        ``path`` exists and ``overwrite`` is False.
    FileNotFoundError
        The folder of ``path`` does not exist.
    """
    path = _check_target(path, overwrite)
    atomic_write(path, lambda tmp: ranking_df.to_csv(tmp, index=False, lineterminator="\n"))
    logger.info("Exported the ranking (%d rows) to %s", len(ranking_df), path)
    return path


_REPORT_CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,Helvetica,Arial,sans-serif;margin:2em;color:#222;max-width:1200px}
h1{font-size:1.4em} h2{font-size:1.1em;margin-top:1.6em} .meta{color:#555}
table{border-collapse:collapse;font-size:.9em} th,td{border:1px solid #ccc;padding:3px 8px;text-align:left}
th{background:#f2f2f2} tr.above td{background:#fde2c8;font-weight:bold}
tr.artifact td{color:#6d4c41;font-style:italic}
.badge{display:inline-block;background:#b71c1c;color:#fff;border-radius:3px;padding:0 5px;margin-right:4px;font-style:normal;font-weight:bold}
.scorer{border-left:4px solid #1565c0;padding:.3em .8em;background:#f3f7fc}
.demo{border:2px solid #c0392b;background:#fdecea;padding:.6em 1em;font-weight:bold}
img.figure{max-width:100%;border:1px solid #ddd}
"""


def _figure_html(figure: Any) -> str:
    if figure is None:
        return "<p>(no figure)</p>"
    if isinstance(figure, (bytes, bytearray)):
        data = bytes(figure)
    elif isinstance(figure, (str, Path)):
        data = Path(figure).read_bytes()
    else:
        try:
            data, renderer = figure_bytes(figure, "png")
        except BrowserUnavailable as err:  # the report is still written, saying why it has no figure
            logger.warning("Report without its figure: %s", err)
            return f'<p class="demo">No figure: {html.escape(str(err))}</p>'
        logger.info("Report figure drawn with %s", renderer)
    if not data.startswith(b"\x89PNG"):
        raise ValueError("The report figure must be PNG data (or a figure to render as PNG).")
    b64 = base64.b64encode(data).decode("ascii")
    return f'<img class="figure" alt="viewer figure" src="data:image/png;base64,{b64}">'


def _report_cell(column: str, value) -> str:
    """One ranking cell as text, by the viewer's one rounding rule (scores 0.01, time ≥ thr in whole %, values 4 digits)."""
    from sss_viewer.viewer.ranking import format_prob, format_value

    if column == "score":
        return "" if pd.isna(value) else format_prob(value)
    if column == "value":
        return format_value(value)
    if column == "time_above":
        return "" if pd.isna(value) else f"{100 * float(value):.0f} %"
    return "" if value is None or (not isinstance(value, str) and pd.isna(value)) else str(value)


def _ranking_html(ranking_df: pd.DataFrame, top_n: int, value_unit: str = "") -> str:
    if ranking_df is None or ranking_df.empty:
        return "<p>(no ranking)</p>"
    flagged = "artifact" in ranking_df.columns and bool((ranking_df["artifact"].fillna("") != "").any())
    cols = [c for c in REPORT_COLUMNS if c in ranking_df.columns and (c != "artifact" or flagged)]
    titles = {**REPORT_TITLES, "value": f"value ({value_unit})" if value_unit else "value"}
    head = "".join(f"<th>{html.escape(titles.get(c, c))}</th>" for c in cols)
    rows = []
    # the top rows, and every flagged channel below them (a flagged channel is never left out of the report)
    shown = ranking_df.head(top_n)
    if flagged:
        rest = ranking_df.iloc[top_n:]
        shown = pd.concat([shown, rest.loc[rest["artifact"].fillna("") != ""]])
    for _, row in shown.iterrows():
        reason = str(row.get("artifact", "") or "") if flagged else ""
        cells = "".join(
            f'<td><span class="badge" title="{html.escape(reason)}">artifact</span>{html.escape(reason)}</td>'
            if c == "artifact" and reason
            else f"<td>{html.escape(_report_cell(c, row[c]))}</td>"
            for c in cols
        )
        classes = " ".join(
            name for name, on in (("above", bool(row.get("above", False))), ("artifact", bool(reason))) if on
        )
        rows.append(f'<tr class="{classes}">{cells}</tr>' if classes else f"<tr>{cells}</tr>")
    extra = len(shown) - min(top_n, len(ranking_df))
    meta = f"<p class='meta'>Top {min(top_n, len(ranking_df))} of {len(ranking_df)} channels"
    if extra:
        meta += f" and the {extra} flagged channel{'s' * (extra != 1)} below them"
    if "above" in ranking_df.columns:
        meta += f"; {int(ranking_df['above'].sum())} at or above the threshold (highlighted)"
    if flagged:
        meta += "; channels the artifact detector flagged are in italics with the reason"
    return f"{meta}.</p><table><thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table>"


def _annotations_html(annotations) -> str:
    if annotations is None:
        return "<p>(none)</p>"
    markers = list(getattr(annotations, "markers", []))
    bad = list(getattr(annotations, "bad_channels", []))
    parts = []
    if markers:
        rows = "".join(
            f"<tr><td>{m['onset_s']:.2f}</td><td>{html.escape(m['kind'])}</td>"
            f"<td>{html.escape(m.get('text', ''))}</td></tr>"
            for m in markers
        )
        head = "<thead><tr><th>time (s)</th><th>kind</th><th>text</th></tr></thead>"
        parts.append(f"<table>{head}<tbody>{rows}</tbody></table>")
    else:
        parts.append("<p>No markers.</p>")
    parts.append(f"<p>Bad channels: {html.escape(', '.join(bad)) if bad else 'none'}.</p>")
    return "".join(parts)


def export_report_html(
    path: str | Path,
    *,
    figure: Any,
    ranking_df: pd.DataFrame,
    recording_label: str,
    model_description: str,
    annotations=None,
    demo_model: bool = False,
    threshold: float | None = None,
    agreement: str | None = None,
    notes: str | None = None,
    top_n: int = 30,
    overwrite: bool = False,
    scorer_info: dict | None = None,
    comparison: str | None = None,
    figure_caption: str | None = None,
) -> Path:
    """Write a self-contained one-page HTML report.

    Parameters
    ----------
    path : path
    figure : bytes, path, HoloViews/Bokeh object or None
        PNG data, a PNG file, or a figure rendered to PNG with :func:`figure_bytes`; embedded as a
        base64 data URI (the report needs no other file and no network). Without a browser to
        draw a figure, the report says so in its place.
    ranking_df : DataFrame
        :meth:`RankingTable.table`; rows with ``above`` True are highlighted.
    recording_label : str
    model_description : str
    annotations : AnnotationSet, optional
    demo_model : bool
        Say plainly that the model is the demo model trained on synthetic data.
    threshold : float, optional
        The threshold the ranking was flagged at (shown when given).
    agreement : str, optional
        The agreement line of the ranking (AUC, F1 …), shown when given.
    notes : str, optional
        A line shown above the ranking (e.g. why the recording was not scored).
    top_n : int
        Rows of the ranking shown (flagged channels below them are listed too).
    overwrite : bool
    scorer_info : dict, optional
        ``RecordingScores.scorer_info`` of the ranking: what produced it and how it was validated
        (:func:`sss_viewer.viewer.ranking.scorer_text`, shown above the ranking as in the app) and the
        unit of a marker's ``value`` column.
    comparison : str, optional
        The agreement line of a second scorer's ranking (:func:`sss_viewer.viewer._scorers.comparison_text`).
    figure_caption : str, optional
        What the figure shows and why (channels, time span), printed above it
        (:meth:`sss_viewer.viewer._report_figure.ReportView.caption`).

    Returns
    -------
    path : Path
    """
    path = _check_target(path, overwrite)
    now = datetime.now().astimezone().strftime("%Y-%m-%d %H:%M %Z").strip()
    esc = html.escape
    model = f"<p>{esc(model_description)}</p>"
    if demo_model:
        model = f'<p class="demo">{esc(DEMO_MODEL_SENTENCE)}</p>' + model
    thr = ""
    if threshold is not None:
        from sss_viewer.viewer.ranking import format_prob

        thr = f"<p>Threshold: {format_prob(threshold)} (channels whose score, to 0.01, is at or above it are highlighted).</p>"
    agr = f"<p>Agreement with the clinician labels: {esc(agreement)}</p>" if agreement else ""
    agr = (f'<p class="demo">{esc(notes)}</p>' if notes else "") + agr
    from sss_viewer.viewer.ranking import scorer_text

    about = scorer_text(scorer_info)
    by = f'<p class="scorer">Ranking by {esc(about)}</p>' if about else ""
    if comparison:
        agr += f"<p>Compared with a second scorer: {esc(comparison)}</p>"
    unit = str((scorer_info or {}).get("unit") or "")
    caption = f'<p class="caption">{esc(figure_caption)}</p>' if figure_caption else ""
    page = f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>SSS viewer report: {esc(recording_label)}</title>
<style>{_REPORT_CSS}</style></head><body>
<h1>SSS seizure-onset-zone report: {esc(recording_label)}</h1>
<p class="meta">Generated {esc(now)} by sss-viewer. Research software: not a medical device.</p>
<h2>Model</h2>{model}
<h2>Figure</h2>{caption}{_figure_html(figure)}
<h2>Channel ranking</h2>{by}{thr}{agr}{_ranking_html(ranking_df, top_n, unit)}
<h2>Annotations</h2>{_annotations_html(annotations)}
</body></html>
"""
    atomic_write(path, lambda tmp: Path(tmp).write_text(page, encoding="utf-8"))
    logger.info("Wrote the report %s", path)
    return path


# --------------------------------------------------------------------------------------------
# file names
# --------------------------------------------------------------------------------------------


def export_basename(stem: str, t0: float | None = None, t1: float | None = None) -> str:
    """File-name base with the recording stem and the time range: ``sub-01_run-01_t120.0-150.0s``."""
    safe = "".join(ch if ch.isalnum() or ch in "-_." else "_" for ch in str(stem)) or "recording"
    if t0 is None or t1 is None:
        return safe
    return f"{safe}_t{t0:.1f}-{t1:.1f}s"

"""Export of what the viewer shows: PNG / SVG / HTML figures, the ranking CSV, a one-page report.

Figures are rendered by Bokeh in headless Chromium (selenium + the Debian ``chromium`` and
``chromedriver``) when a browser is found, so the file looks like the screen. A live figure (one with
DynamicMaps and streams, e.g. ``TraceView.figure()``) is never drawn itself: its registered static copy
(:func:`register_static_copy`), or a copy with each DynamicMap replaced by its current frame, is
rendered into new Bokeh models, so the live document's models are neither changed nor shared. One
headless Chromium is kept warm (started in the background when the download buttons are made, quit
after ``BROWSER_IDLE_S`` idle seconds and at exit), with Bokeh's JavaScript loaded once, so an export
only renders the figure. Without a browser
(or when it fails to start) a browser-free renderer draws the same Bokeh figure with matplotlib
from its data (lines, images, rectangles, markers, vertical/horizontal rules, the sub-coordinate
rows of the trace plot), or a caller-supplied ``fallback`` draws it. HTML files embed Bokeh's
JavaScript inline (``bokeh.resources.INLINE``), so they open offline, e.g. on a hospital PC without
internet, at the cost of ~1 MB per file.

Every file is written atomically (:func:`sss_viewer.fileio.atomic_write`) and an existing file
is never overwritten unless ``overwrite=True``.
"""

from __future__ import annotations

import atexit
import base64
import html
import io
import json
import logging
import math
import os
import shutil
import tempfile
import threading
import time
import weakref
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from sss_viewer.fileio import atomic_write

logger = logging.getLogger(__name__)

FIGURE_FORMATS = ("png", "svg", "html")
RENDERER_BROWSER = "bokeh+chromium"
RENDERER_HTML = "bokeh-html"
RENDERER_MATPLOTLIB = "matplotlib"
RENDERER_FALLBACK = "fallback"
DEMO_MODEL_SENTENCE = (
    "This is the demo model, trained on synthetic data only: its scores show how the viewer works "
    "and say nothing about real patients."
)
REPORT_COLUMNS = ("rank", "channel", "shaft", "score", "time_above", "interval", "label", "n_windows")
REPORT_TITLES = {"time_above": "time ≥ thr", "label": "clinician", "n_windows": "windows"}

_BROWSERS = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")
_DRIVERS = ("chromedriver", "chromium.chromedriver")
BROWSER_IDLE_S = 300.0
"""The warm export browser is quit after this many seconds without an export."""
RENDER_TIMEOUT_S = 15.0
BROWSER_MARK = "<!-- rendered by Bokeh in headless Chromium (sss-viewer) -->"
"""First line of an SVG drawn by the browser."""
FALLBACK_MARK = "<!-- sss-viewer: browser-free matplotlib drawing (fallback), not the browser rendering -->"
"""Comment after the XML declaration of an SVG drawn without a browser (PNG: the ``Software`` text chunk)."""
FALLBACK_SOFTWARE = "sss-viewer browser-free matplotlib drawing (fallback)"


class BrowserUnavailable(RuntimeError):
    """No headless browser could be started for a Bokeh export."""


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


def find_browser() -> tuple[str, str] | None:
    """``(browser, chromedriver)`` executables on PATH, or None when either is missing."""
    browser = next((p for p in map(shutil.which, _BROWSERS) if p), None)
    driver = next((p for p in map(shutil.which, _DRIVERS) if p), None)
    return (browser, driver) if browser and driver else None


def _start_browser(found: tuple[str, str]):
    """A headless Chromium webdriver (the caller quits it)."""
    from selenium.common.exceptions import WebDriverException
    from selenium.webdriver.chrome.options import Options
    from selenium.webdriver.chrome.service import Service
    from selenium.webdriver.chrome.webdriver import WebDriver

    as_root = hasattr(os, "geteuid") and os.geteuid() == 0
    if as_root and "BOKEH_IN_DOCKER" not in os.environ:
        os.environ["BOKEH_IN_DOCKER"] = "1"
    browser, driver = found
    options = Options()
    options.binary_location = browser
    for arg in ("--headless", "--hide-scrollbars", "--force-device-scale-factor=1", "--force-color-profile=srgb",
                "--disable-dev-shm-usage", "--enable-unsafe-swiftshader"):
        options.add_argument(arg)
    if as_root or os.environ.get("BOKEH_IN_DOCKER") == "1":
        options.add_argument("--no-sandbox")
    try:
        return WebDriver(service=Service(driver), options=options)
    except WebDriverException as err:
        raise BrowserUnavailable(f"could not start {browser} with {driver}: {err.msg or err}") from None


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
        ``fallback() -> matplotlib.figure.Figure`` drawing the figure without a browser; used for
        PNG/SVG when no browser is available instead of the built-in matplotlib rendering of the
        Bokeh figure. It is saved with ``savefig(format=fmt)`` and closed.
    title : str
        Title of an HTML file.

    Returns
    -------
    renderer : str
        ``"bokeh+chromium"``, ``"bokeh-html"``, ``"matplotlib"`` (built-in browser-free drawing) or
        ``"fallback"`` (the given callable); also logged.
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
    """PNG/SVG bytes through the browser, else through ``fallback`` or the matplotlib drawing."""
    found = find_browser()
    if found is None:
        logger.info("No chromium/chromedriver on PATH: drawing the %s without a browser.", fmt.upper())
    else:
        try:
            return _browser_render(model, fmt, found), RENDERER_BROWSER
        except BrowserUnavailable as err:
            logger.warning("Browser export failed (%s): drawing the %s without a browser.", err, fmt.upper())
    if fallback is not None:
        return _savefig_bytes(fallback(), fmt), RENDERER_FALLBACK
    return _savefig_bytes(draw_bokeh_matplotlib(model), fmt), RENDERER_MATPLOTLIB


def _browser_render(model, fmt: str, found: tuple[str, str]) -> bytes:
    """PNG/SVG bytes of ``model`` drawn by Bokeh in the warm headless Chromium."""
    return _WARM.render(model, fmt, found)


_SHELL_JS = ("bokeh.min.js", "bokeh-gl.min.js", "bokeh-widgets.min.js", "bokeh-tables.min.js")
_RENDER_SCRIPT = """
const [text, fmt, done] = arguments;
(async () => {
  try {
    for (const view of [...Bokeh.index]) view.remove();
    Bokeh.documents.splice(0);
    const target = document.getElementById("export-root");
    target.innerHTML = "";
    const item = JSON.parse(text);
    await Bokeh.embed.embed_item(item, "export-root");
    const doc = Bokeh.documents[Bokeh.documents.length - 1];
    if (!doc.is_idle) await new Promise((resolve) => doc.idle.connect(resolve));
    const view = [...Bokeh.index].find((v) => v.model.id === item.root_id);
    if (view == null) throw new Error("the figure was not rendered");
    const layer = view.export(fmt, false);
    if (fmt === "svg") done({data: layer.ctx.get_serialized_svg(true)});
    else done({data: layer.canvas.toDataURL("image/png")});
  } catch (err) {
    done({error: String((err && err.stack) || err)});
  }
})();
"""


def _shell_page(folder: Path) -> Path:
    """An empty page loading Bokeh's JavaScript from the installed package (no network, no inlining)."""
    from bokeh.util.paths import bokehjs_path

    js = Path(bokehjs_path()) / "js"
    tags = "".join(f'<script src="{(js / name).as_uri()}"></script>' for name in _SHELL_JS)
    page = folder / "export-shell.html"
    page.write_text(
        f"<!DOCTYPE html><html><head><meta charset='utf-8'>{tags}"
        "<style>html,body{margin:0;padding:0;background:white}</style></head>"
        "<body><div id='export-root'></div></body></html>",
        encoding="utf-8",
    )
    return page


class _WarmBrowser:
    """One headless Chromium with Bokeh's JavaScript loaded, shared by all exports of the process.

    Each export embeds a figure's JSON into the loaded page (``Bokeh.embed.embed_item``), waits
    until the document is idle and reads the root view's own ``export`` (canvas PNG or SVG): the
    browser starts and loads Bokeh once, not per file. Thread-safe; the browser is quit after
    ``BROWSER_IDLE_S`` seconds without an export, after ``max_uses`` exports (a fresh page keeps
    memory flat), on an error, and at exit.
    """

    max_uses = 100

    def __init__(self) -> None:
        self._lock = threading.RLock()
        self._driver = None
        self._folder: tempfile.TemporaryDirectory | None = None
        self._uses = 0
        self._found: tuple[str, str] | None = None
        self._timer: threading.Timer | None = None

    def warm(self, found: tuple[str, str]) -> None:
        """Start the browser and load the page now (e.g. in a background thread at app start)."""
        with self._lock:
            try:
                self._ensure(found)
            except BrowserUnavailable as err:
                logger.info("Export browser not warmed: %s", err)
            finally:
                self._schedule_quit()

    def render(self, model, fmt: str, found: tuple[str, str]) -> bytes:
        from bokeh.embed import json_item
        from selenium.common.exceptions import WebDriverException

        item = json.dumps(json_item(model), separators=(",", ":"))
        with self._lock:
            self._cancel_timer()
            try:
                driver = self._ensure(found)
                result = driver.execute_async_script(_RENDER_SCRIPT, item, fmt)
                self._uses += 1
            except WebDriverException as err:
                self.quit()
                raise BrowserUnavailable(str(err.msg or err).splitlines()[0]) from None
            finally:
                if self._uses >= self.max_uses:
                    self.quit()
                self._schedule_quit()
        if not isinstance(result, dict) or "data" not in result:
            message = (result or {}).get("error", "no result") if isinstance(result, dict) else "no result"
            raise BrowserUnavailable(f"Bokeh could not render the figure: {str(message).splitlines()[0]}")
        if fmt == "svg":
            return (BROWSER_MARK + "\n" + result["data"]).encode("utf-8")
        data = base64.b64decode(result["data"].split(",", 1)[1])
        if not data.startswith(b"\x89PNG") or len(data) < 100:
            raise BrowserUnavailable("the browser rendered an empty image")
        return data

    def _ensure(self, found: tuple[str, str]):
        if self._driver is not None and self._found == tuple(found):
            return self._driver
        self.quit()  # none yet, or another browser asked for
        started = time.perf_counter()
        driver = _start_browser(found)
        try:
            self._folder = tempfile.TemporaryDirectory(prefix="sss-export-browser-")
            driver.set_script_timeout(RENDER_TIMEOUT_S)
            driver.get(_shell_page(Path(self._folder.name)).as_uri())
            if not driver.execute_script("return typeof Bokeh !== 'undefined'"):
                raise BrowserUnavailable("Bokeh's JavaScript did not load in the export browser")
        except Exception:
            driver.quit()
            raise
        self._driver, self._uses, self._found = driver, 0, tuple(found)
        logger.info("Export browser ready in %.1f s", time.perf_counter() - started)
        return driver

    def quit(self) -> None:
        """Quit the browser (a later export starts a new one)."""
        with self._lock:
            self._cancel_timer()
            driver, self._driver = self._driver, None
            if driver is not None:
                try:
                    driver.quit()
                except Exception as err:  # already gone
                    logger.debug("Export browser quit: %s", err)
            if self._folder is not None:
                self._folder.cleanup()
                self._folder = None

    def _cancel_timer(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def _schedule_quit(self) -> None:
        self._cancel_timer()
        if self._driver is not None:
            self._timer = threading.Timer(BROWSER_IDLE_S, self.quit)
            self._timer.daemon = True
            self._timer.start()


_WARM = _WarmBrowser()
atexit.register(_WARM.quit)


def warm_export_browser(background: bool = True) -> None:
    """Start the export browser ahead of the first export (in a daemon thread by default); no-op without one."""
    found = find_browser()
    if found is None:
        return
    if background:
        threading.Thread(target=_WARM.warm, args=(found,), name="sss-export-browser", daemon=True).start()
    else:
        _WARM.warm(found)


def _savefig_bytes(fig, fmt: str) -> bytes:
    """The figure as PNG/SVG, marked as the browser-free drawing (PNG ``Software`` chunk, SVG comment and title)."""
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
        data = head + sep + b"\n" + FALLBACK_MARK.encode("utf-8") + rest if sep else FALLBACK_MARK.encode() + b"\n" + data
    return data


# --------------------------------------------------------------------------------------------
# browser-free drawing of a Bokeh figure
# --------------------------------------------------------------------------------------------


def _arrange(model) -> list[list[Any]]:
    """Plots of a Bokeh layout as a grid (rows of plots, None where empty)."""
    from bokeh.models import Column, GridBox, GridPlot, Plot, Row

    if isinstance(model, Plot):
        return [[model]]
    if isinstance(model, (GridPlot, GridBox)):
        cells = [(c[0], c[1], c[2]) for c in model.children]
        plots = [(_first_plot(child), r, c) for child, r, c in cells]
        n_rows = max((r for _, r, _ in plots), default=-1) + 1
        n_cols = max((c for _, _, c in plots), default=-1) + 1
        grid: list[list[Any]] = [[None] * n_cols for _ in range(n_rows)]
        for plot, r, c in plots:
            grid[r][c] = plot
        return grid
    if isinstance(model, Column):
        grids = [g for g in (_arrange(c) for c in model.children) if g]
        width = max((len(g[0]) for g in grids), default=0)
        return [row + [None] * (width - len(row)) for g in grids for row in g]
    if isinstance(model, Row):
        grids = [g for g in (_arrange(c) for c in model.children) if g]
        height = max((len(g) for g in grids), default=0)
        rows: list[list[Any]] = [[] for _ in range(height)]
        for g in grids:
            for i in range(height):
                rows[i].extend(g[i] if i < len(g) else [None] * len(g[0]))
        return rows
    return []


def _first_plot(model):
    grid = _arrange(model)
    return next((p for row in grid for p in row if p is not None), None)


def _spec(glyph, source, name: str, n: int | None = None):
    """A glyph property as an array (field of the source) or a scalar (value)."""
    from bokeh.core.property.vectorization import Field, Value

    v = getattr(glyph, name, None)
    if isinstance(v, Field):
        v = v.field
    elif isinstance(v, Value):
        return v.value
    elif isinstance(v, dict):
        if "field" in v:
            v = v["field"]
        else:
            return v.get("value")
    if isinstance(v, str) and source is not None and v in source.data:
        return source.data[v]
    return v


def _color(value, default: str = "#1f77b4"):
    """A matplotlib colour from a Bokeh colour (CSS name, hex, ``rgb()``/``rgba()`` text, RGB(A) tuple)."""
    from matplotlib.colors import is_color_like

    if value is None or (isinstance(value, str) and value.lower() in ("none", "transparent")):
        return "none"
    if isinstance(value, str):
        text = value.strip().lower()
        if text.startswith("rgb"):
            try:
                parts = [float(x) for x in text[text.index("(") + 1 : text.rindex(")")].split(",")]
            except ValueError:
                return default
            value = tuple(parts)
        else:
            return value if is_color_like(value) else default
    if isinstance(value, (tuple, list)) and len(value) in (3, 4) and all(isinstance(x, (int, float)) for x in value):
        return tuple(min(max(x / 255 if i < 3 else x, 0.0), 1.0) for i, x in enumerate(value))
    return default


def _range(r) -> tuple[float, float] | None:
    start, end = getattr(r, "start", None), getattr(r, "end", None)
    if start is None or end is None:
        return None
    try:
        start, end = float(start), float(end)
    except (TypeError, ValueError):
        return None
    return (start, end) if math.isfinite(start) and math.isfinite(end) and start != end else None


def _mapper(renderer, source, axis: str):
    """The sub-coordinate (``subcoordinate_y``) map of a renderer's data onto the plot axis."""
    coords = getattr(renderer, "coordinates", None)
    if coords is None:
        return lambda v: v
    src, tgt = _range(getattr(coords, f"{axis}_source")), _range(getattr(coords, f"{axis}_target"))
    if tgt is None:
        return lambda v: v
    if src is None:
        glyph = renderer.glyph
        vals = np.asarray(_spec(glyph, source, axis), dtype=float) if hasattr(glyph, axis) else np.array([0.0, 1.0])
        vals = vals[np.isfinite(vals)]
        src = (float(vals.min()), float(vals.max())) if vals.size and vals.min() != vals.max() else (-1.0, 1.0)
    scale = (tgt[1] - tgt[0]) / (src[1] - src[0])
    return lambda v: tgt[0] + (np.asarray(v, dtype=float) - src[0]) * scale


def _cmap(mapper):
    from matplotlib.colors import ListedColormap, LogNorm, Normalize

    palette = list(getattr(mapper, "palette", None) or ["#000000", "#ffffff"])
    nan = getattr(mapper, "nan_color", None)
    cmap = ListedColormap([_color(c, "#000000") for c in palette]).with_extremes(bad=_color(nan, "none"))
    low, high = getattr(mapper, "low", None), getattr(mapper, "high", None)
    norm_cls = LogNorm if type(mapper).__name__ == "LogColorMapper" else Normalize
    return cmap, norm_cls(vmin=low, vmax=high)


def _draw_glyph(ax, renderer) -> bool:
    """Draw one GlyphRenderer; False when its glyph type is not supported."""
    glyph, source = renderer.glyph, renderer.data_source
    kind = type(glyph).__name__
    fx, fy = _mapper(renderer, source, "x"), _mapper(renderer, source, "y")
    alpha = getattr(glyph, "line_alpha", None) or getattr(glyph, "fill_alpha", None) or 1.0
    alpha = alpha if isinstance(alpha, (int, float)) else 1.0
    if kind == "Line":
        x, y = np.asarray(_spec(glyph, source, "x"), float), np.asarray(_spec(glyph, source, "y"), float)
        width = _spec(glyph, source, "line_width")
        ax.plot(fx(x), fy(y), color=_color(_spec(glyph, source, "line_color")), alpha=alpha,
                linewidth=width if isinstance(width, (int, float)) else 1.0)
    elif kind == "MultiLine":
        for xs, ys in zip(_spec(glyph, source, "xs"), _spec(glyph, source, "ys")):
            ax.plot(fx(np.asarray(xs, float)), fy(np.asarray(ys, float)),
                    color=_color(_spec(glyph, source, "line_color")), alpha=alpha, linewidth=1.0)
    elif kind in ("Scatter", "Circle"):
        x, y = np.asarray(_spec(glyph, source, "x"), float), np.asarray(_spec(glyph, source, "y"), float)
        color = _spec(glyph, source, "fill_color")
        ax.scatter(fx(x), fy(y), s=12, c=_color(color) if not isinstance(color, (list, np.ndarray)) else None,
                   alpha=alpha)
    elif kind in ("Image", "ImageRGBA"):
        images = _spec(glyph, source, "image")
        x, y, w, h = (np.atleast_1d(np.asarray(_spec(glyph, source, a), dtype=float)) for a in ("x", "y", "dw", "dh"))
        for k, img in enumerate(images):
            x0, y0, dw, dh = (float(a[k] if a.size > k else a[0]) for a in (x, y, w, h))
            x0, x1 = float(fx(x0)), float(fx(x0 + dw))
            y0, y1 = float(fy(y0)), float(fy(y0 + dh))
            img = np.asarray(img)
            if kind == "ImageRGBA":
                rgba = np.ascontiguousarray(img.astype(np.uint32)).view(np.uint8).reshape(*img.shape, 4)
                ax.imshow(rgba, extent=(x0, x1, y0, y1), origin="lower", aspect="auto", interpolation="nearest")
            else:
                cmap, norm = _cmap(glyph.color_mapper)
                ax.imshow(np.ma.masked_invalid(img.astype(float)), extent=(x0, x1, y0, y1), origin="lower",
                          aspect="auto", interpolation="nearest", cmap=cmap, norm=norm)
    elif kind in ("Quad", "Rect", "VBar", "HBar"):
        _draw_boxes(ax, kind, glyph, source, fx, fy, alpha)
    elif kind == "Segment":
        for x0, y0, x1, y1 in zip(*(np.atleast_1d(_spec(glyph, source, a)) for a in ("x0", "y0", "x1", "y1"))):
            ax.plot([fx(x0), fx(x1)], [fy(y0), fy(y1)], color=_color(_spec(glyph, source, "line_color")))
    else:
        return False
    return True


def _draw_boxes(ax, kind, glyph, source, fx, fy, alpha) -> None:
    from matplotlib.patches import Rectangle

    def arr(name):
        return np.atleast_1d(np.asarray(_spec(glyph, source, name), dtype=float))

    if kind == "Quad":
        left, right, bottom, top = arr("left"), arr("right"), arr("bottom"), arr("top")
    elif kind == "Rect":
        x, y, w, h = arr("x"), arr("y"), arr("width"), arr("height")
        left, right, bottom, top = x - w / 2, x + w / 2, y - h / 2, y + h / 2
    elif kind == "VBar":
        x, w, top, bottom = arr("x"), arr("width"), arr("top"), arr("bottom")
        left, right = x - w / 2, x + w / 2
    else:
        y, h, right, left = arr("y"), arr("height"), arr("right"), arr("left")
        bottom, top = y - h / 2, y + h / 2
    left, right, bottom, top = np.broadcast_arrays(left, right, bottom, top)
    fill = _spec(glyph, source, "fill_color")
    colors = fill if isinstance(fill, (list, np.ndarray)) else [fill] * len(left)
    for l_, r_, b_, t_, c_ in zip(left, right, bottom, top, colors):
        x0, x1, y0, y1 = fx(l_), fx(r_), fy(b_), fy(t_)
        ax.add_patch(Rectangle((x0, y0), x1 - x0, y1 - y0, facecolor=_color(c_), edgecolor="none", alpha=alpha))


def _draw_annotation(ax, ann) -> None:
    kind = type(ann).__name__
    if kind == "Span" and ann.location is not None and getattr(ann, "visible", True):
        draw = ax.axvline if ann.dimension == "height" else ax.axhline
        draw(float(ann.location), color=_color(ann.line_color, "black"), linewidth=ann.line_width or 1,
             linestyle="--" if ann.line_dash else "-")
    elif kind == "BoxAnnotation" and getattr(ann, "visible", True):
        def edge(v, default):
            return default if v is None or not isinstance(v, (int, float)) else float(v)

        x0, x1 = ax.get_xlim()
        y0, y1 = ax.get_ylim()
        left, right = edge(ann.left, x0), edge(ann.right, x1)
        bottom, top = edge(ann.bottom, y0), edge(ann.top, y1)
        ax.axvspan(left, right, ymin=(bottom - y0) / (y1 - y0 or 1), ymax=(top - y0) / (y1 - y0 or 1),
                   color=_color(ann.fill_color, "grey"), alpha=ann.fill_alpha or 0.3)


def _draw_plot(ax, plot) -> None:
    skipped = set()
    for r in plot.renderers:
        if type(r).__name__ == "GlyphRenderer":
            if getattr(r, "visible", True) and not _draw_glyph(ax, r):
                skipped.add(type(r.glyph).__name__)
    x, y = _range(plot.x_range), _range(plot.y_range)
    if x:
        ax.set_xlim(*x)
    if y:
        ax.set_ylim(*y)
    for ann in [*plot.renderers, *plot.center]:
        if type(ann).__name__ in ("Span", "BoxAnnotation"):
            _draw_annotation(ax, ann)
    if skipped:
        logger.info("Browser-free drawing skipped glyph type(s) %s", ", ".join(sorted(skipped)))
    title = getattr(plot.title, "text", "") if plot.title is not None else ""
    if title:
        ax.set_title(title, fontsize=10)
    for axis, set_label, set_ticks, set_labels in (
        (plot.xaxis, ax.set_xlabel, ax.set_xticks, ax.set_xticklabels),
        (plot.yaxis, ax.set_ylabel, ax.set_yticks, ax.set_yticklabels),
    ):
        if not axis:
            continue
        label = axis[0].axis_label
        if label:
            set_label(str(label), fontsize=9)
        ticks = getattr(axis[0].ticker, "ticks", None)
        if ticks:
            overrides = axis[0].major_label_overrides or {}
            set_ticks(list(ticks))
            set_labels([str(overrides.get(t, overrides.get(str(t), t))) for t in ticks], fontsize=8)


def draw_bokeh_matplotlib(model):
    """A matplotlib Figure drawing a Bokeh figure or layout from its data, without a browser.

    Supported: Line, MultiLine, Scatter, Image, ImageRGBA, Quad, Rect, VBar, HBar, Segment glyphs,
    Span and BoxAnnotation, sub-coordinate (``subcoordinate_y``) rows, fixed ticks with label
    overrides, titles and axis labels; other glyphs are skipped (logged). Layout: Row, Column,
    GridPlot/GridBox; widgets and other elements are left out.

    Returns
    -------
    fig : matplotlib.figure.Figure
    """
    from matplotlib.figure import Figure

    grid = _arrange(model)
    if not grid or all(p is None for row in grid for p in row):
        raise ValueError(f"Nothing to draw: the {type(model).__name__} holds no Bokeh plot.")
    n_rows, n_cols = len(grid), len(grid[0])
    heights = [max(((p.height or 300) for p in row if p is not None), default=300) for row in grid]
    widths = [max(((grid[r][c].width or 600) for r in range(n_rows) if grid[r][c] is not None), default=600)
              for c in range(n_cols)]
    fig = Figure(figsize=(sum(widths) / 100, sum(heights) / 100), dpi=100, layout="constrained")
    spec = fig.add_gridspec(n_rows, n_cols, height_ratios=heights, width_ratios=widths)
    for r, row in enumerate(grid):
        for c, plot in enumerate(row):
            if plot is not None:
                _draw_plot(fig.add_subplot(spec[r, c]), plot)
    return fig


# --------------------------------------------------------------------------------------------
# tables and report
# --------------------------------------------------------------------------------------------


def export_ranking_csv(ranking_df: pd.DataFrame, path: str | Path, overwrite: bool = False) -> Path:
    """Write the ranking table as CSV (UTF-8, no index), atomically.

    Returns
    -------
    path : Path
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
        data, renderer = figure_bytes(figure, "png")
        logger.info("Report figure drawn with %s", renderer)
    if not data.startswith(b"\x89PNG"):
        raise ValueError("The report figure must be PNG data (or a figure to render as PNG).")
    b64 = base64.b64encode(data).decode("ascii")
    return f'<img class="figure" alt="viewer figure" src="data:image/png;base64,{b64}">'


def _report_cell(column: str, value) -> str:
    """One ranking cell as text, by the viewer's one rounding rule (scores 0.01, time ≥ thr in whole %)."""
    from sss_viewer.viewer.ranking import format_prob

    if column == "score":
        return format_prob(value)
    if column == "time_above":
        return "" if pd.isna(value) else f"{100 * float(value):.0f} %"
    return "" if value is None or (not isinstance(value, str) and pd.isna(value)) else str(value)


def _ranking_html(ranking_df: pd.DataFrame, top_n: int) -> str:
    if ranking_df is None or ranking_df.empty:
        return "<p>(no ranking)</p>"
    cols = [c for c in REPORT_COLUMNS if c in ranking_df.columns]
    head = "".join(f"<th>{html.escape(REPORT_TITLES.get(c, c))}</th>" for c in cols)
    rows = []
    for _, row in ranking_df.head(top_n).iterrows():
        cells = "".join(f"<td>{html.escape(_report_cell(c, row[c]))}</td>" for c in cols)
        above = bool(row.get("above", False))
        rows.append(f'<tr class="above">{cells}</tr>' if above else f"<tr>{cells}</tr>")
    shown = f"<p class='meta'>Top {min(top_n, len(ranking_df))} of {len(ranking_df)} channels"
    if "above" in ranking_df.columns:
        shown += f"; {int(ranking_df['above'].sum())} at or above the threshold (highlighted)"
    return f"{shown}.</p><table><thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table>"


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
) -> Path:
    """Write a self-contained one-page HTML report.

    Parameters
    ----------
    path : path
    figure : bytes, path, HoloViews/Bokeh object or None
        PNG data, a PNG file, or a figure rendered to PNG with :func:`figure_bytes`; embedded as a
        base64 data URI (the report needs no other file and no network).
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
        Rows of the ranking shown.
    overwrite : bool

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
    page = f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>SSS viewer report: {esc(recording_label)}</title>
<style>{_REPORT_CSS}</style></head><body>
<h1>SSS seizure-onset-zone report: {esc(recording_label)}</h1>
<p class="meta">Generated {esc(now)} by sss-viewer. Research software: not a medical device.</p>
<h2>Model</h2>{model}
<h2>Figure</h2>{_figure_html(figure)}
<h2>Channel ranking</h2>{thr}{agr}{_ranking_html(ranking_df, top_n)}
<h2>Annotations</h2>{_annotations_html(annotations)}
</body></html>
"""
    atomic_write(path, lambda tmp: Path(tmp).write_text(page, encoding="utf-8"))
    logger.info("Wrote the report %s", path)
    return path


# --------------------------------------------------------------------------------------------
# browser downloads from the served app
# --------------------------------------------------------------------------------------------


def export_basename(stem: str, t0: float | None = None, t1: float | None = None) -> str:
    """File-name base with the recording stem and the time range: ``sub-01_run-01_t120.0-150.0s``."""
    safe = "".join(ch if ch.isalnum() or ch in "-_." else "_" for ch in str(stem)) or "recording"
    if t0 is None or t1 is None:
        return safe
    return f"{safe}_t{t0:.1f}-{t1:.1f}s"


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
        File-name base at click time (:func:`export_basename`, e.g. with the visible time range).
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
        warm_export_browser()
    buttons = []
    for label, ext, make, suffix in specs:
        if make is None:
            continue
        button = pn.widgets.FileDownload(label=f"⬇ {label}", filename=f"{_base(basename)}{suffix}.{ext}",
                                         embed=False, auto=True)
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


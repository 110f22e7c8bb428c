"""Export: PNG/SVG drawn by Bokeh in Chromium (Playwright), the no-browser error, no silent overwrite, HTML report, CSV, downloads."""

import asyncio
import concurrent.futures
import io
import shutil
import threading
import time
from xml.etree import ElementTree

import holoviews as hv
import numpy as np
import pandas as pd
import pytest
from PIL import Image

from sss_viewer.io.annotation_model import AnnotationSet, make_marker
from sss_viewer.viewer import export
from sss_viewer.viewer._export_widgets import download_buttons
from sss_viewer.viewer.export import (
    DEMO_MODEL_SENTENCE,
    BrowserUnavailable,
    export_basename,
    export_figure,
    export_ranking_csv,
    export_report_html,
    figure_bytes,
)

hv.extension("bokeh", logo=False)

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
needs_browser = pytest.mark.usefixtures("chromium")  # conftest: skips without Chromium, marks the test `browser`


def curve(seed: int):
    rng = np.random.default_rng(seed)
    return hv.Curve((np.arange(100), rng.standard_normal(100).cumsum()), "time", "amplitude").opts(
        width=400, height=200
    )


def viewer_like():
    """Traces on sub-coordinate rows with a marker line, and a heat map under them."""
    t = np.linspace(0, 10, 300)
    amp = hv.Dimension("amplitude", range=(-3, 3))
    curves = [hv.Curve((t, np.sin(t * (i + 1))), "time", amp, label=f"LA{i + 1}") for i in range(3)]
    traces = hv.Overlay([c.opts(subcoordinate_y=True) for c in curves]) * hv.VLine(4.0)
    heat = hv.Image(np.random.default_rng(0).random((3, 10)), bounds=(0, -0.5, 10, 2.5)).opts(cmap="viridis")
    return (traces.opts(width=500, height=200) + heat.opts(width=500, height=120)).cols(1)


@pytest.fixture
def no_browser(monkeypatch):
    """Hide Chromium from the exporter (as on a machine without it)."""
    real_which = shutil.which
    hidden = set(export._BROWSERS)
    monkeypatch.setattr(shutil, "which", lambda name, *a, **k: None if name in hidden else real_which(name, *a, **k))
    assert export.find_browser() is None


def ranking() -> pd.DataFrame:
    return pd.DataFrame(
        {
            "rank": [1, 2, 3],
            "channel": ["LA1", "LA2", "RB1"],
            "shaft": ["LA", "LA", "RB"],
            "score": [0.91, 0.62, 0.11],
            "interval": ["[0.880, 0.940]", "[0.600, 0.650]", "[0.080, 0.150]"],
            "label": ["SOZ", "SOZ", "—"],
            "n_windows": [40, 40, 40],
            "above": [True, True, False],
            "lower": [0.88, 0.60, 0.08],
            "upper": [0.94, 0.65, 0.15],
        }
    )


def _pixels(png: bytes) -> np.ndarray:
    with Image.open(io.BytesIO(png)) as image:
        return np.asarray(image.convert("RGB"))


@needs_browser
def test_png_is_drawn_by_bokeh_in_chromium(tmp_path):
    a, b = tmp_path / "a.png", tmp_path / "b.png"
    assert export_figure(curve(0), a) == "bokeh+chromium"
    assert export_figure(curve(1), b) == "bokeh+chromium"
    da, db = a.read_bytes(), b.read_bytes()
    assert da.startswith(PNG_MAGIC) and db.startswith(PNG_MAGIC)
    assert da != db
    pixels = _pixels(da)
    assert pixels.shape == (200, 400, 3)  # the figure's own size (no device scaling, no page around it)
    dark = (pixels.sum(axis=2) < 200).mean()  # the curve, the axes and their labels
    assert 0.002 < dark < 0.5 and len(np.unique(pixels.reshape(-1, 3), axis=0)) > 20
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]  # no temporary file left


@needs_browser
def test_warm_browser_is_reused_across_exports_and_threads():
    """One browser serves exports from the main thread, other threads and a thread running an asyncio loop."""
    export.warm_export_browser(background=False)
    starts = export._WARM.starts
    worker = export._WARM.call(lambda session: threading.get_ident())
    first, _ = figure_bytes(curve(0), "png")
    results, errors = {}, []

    def work(i):
        try:
            results[i] = figure_bytes(curve(i), "png" if i % 2 else "svg")
        except Exception as err:  # noqa: BLE001 (reported below)
            errors.append(err)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(1, 5)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)

    async def in_a_loop():  # as in a Panel callback on the server's thread (sync Playwright refuses to run there)
        return figure_bytes(curve(9), "png")

    # a fresh thread of its own: the test process's main thread may already run a loop (Playwright's sync API
    # in the browser tests before this one), where asyncio.run refuses to start another
    looped_thread = concurrent.futures.ThreadPoolExecutor(1)
    try:
        looped, renderer = looped_thread.submit(asyncio.run, in_a_loop()).result(timeout=120)
    finally:
        looped_thread.shutdown()
    assert errors == [] and sorted(results) == [1, 2, 3, 4] and renderer == "bokeh+chromium"
    assert {r for _, r in results.values()} == {"bokeh+chromium"}
    assert results[1][0].startswith(PNG_MAGIC) and results[2][0].startswith(export.BROWSER_MARK.encode())
    assert len({first, looped, *(data for data, _ in results.values())}) == 6  # each export drew its own figure
    assert export._WARM.starts == starts  # no second browser
    assert export._WARM.call(lambda session: threading.get_ident()) == worker != threading.get_ident()


@needs_browser
def test_idle_browser_is_closed_and_a_later_export_starts_a_new_one(monkeypatch):
    export._WARM.quit()
    monkeypatch.setattr(export, "BROWSER_IDLE_S", 0.5)
    figure_bytes(curve(0), "png")
    starts = export._WARM.starts
    deadline = time.monotonic() + 30
    while export._WARM.running and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not export._WARM.running
    assert figure_bytes(curve(1), "png")[1] == "bokeh+chromium"
    assert export._WARM.starts == starts + 1
    export._WARM.quit()


def test_png_and_svg_without_browser_are_a_clear_error_and_html_still_works(tmp_path, no_browser):
    for fmt in ("png", "svg"):
        out = tmp_path / f"fig.{fmt}"
        with pytest.raises(
            BrowserUnavailable, match=rf"{fmt.upper()} export needs a headless Chromium.*no Chromium on PATH.*HTML"
        ):
            export_figure(viewer_like(), out)
        assert not out.exists() and not list(tmp_path.iterdir())  # nothing written, no temporary file
    assert export_figure(viewer_like(), tmp_path / "fig.html") == "bokeh-html"
    errors = []
    (png,) = download_buttons(lambda: figure_bytes(curve(0), "png")[0], None, None, None, on_error=errors.append)
    with pytest.raises(BrowserUnavailable):
        png.callback()
    assert len(errors) == 1 and errors[0].startswith(
        "Could not make the PNG file: PNG export needs a headless Chromium"
    )


def test_fallback_callable_is_used_without_browser(tmp_path, no_browser):
    from matplotlib.figure import Figure

    def draw():
        fig = Figure(figsize=(2, 1))
        fig.add_subplot().plot([0, 1], [1, 0])
        return fig

    out = tmp_path / "f.png"
    assert export_figure(curve(0), out, fallback=draw) == "fallback"
    assert out.read_bytes().startswith(PNG_MAGIC) and export.FALLBACK_SOFTWARE.encode() in out.read_bytes()
    svg = tmp_path / "f.svg"
    assert export_figure(curve(0), svg, fallback=draw) == "fallback"
    text = svg.read_text()
    assert text.startswith("<?xml") and export.FALLBACK_MARK in text and export.BROWSER_MARK not in text


def test_browser_that_fails_to_start_is_a_clear_error(tmp_path, monkeypatch):
    monkeypatch.setattr(export, "find_browser", lambda: "/nonexistent/chromium")
    out = tmp_path / "x.png"
    with pytest.raises(
        BrowserUnavailable, match="PNG export needs a headless Chromium browser: could not start /nonexistent/chromium"
    ):
        export_figure(curve(0), out)
    assert not out.exists()


def test_no_overwrite_without_flag(tmp_path, no_browser):
    out = tmp_path / "fig.png"
    out.write_bytes(b"keep me")
    with pytest.raises(FileExistsError, match="fig.png"):  # before any drawing
        export_figure(curve(0), out)
    assert out.read_bytes() == b"keep me"
    html = tmp_path / "fig.html"
    html.write_text("keep me")
    with pytest.raises(FileExistsError, match="fig.html"):
        export_figure(curve(0), html)
    assert html.read_text() == "keep me"
    assert export_figure(curve(0), html, overwrite=True) == "bokeh-html"
    assert "Bokeh" in html.read_text()
    csv = tmp_path / "r.csv"
    export_ranking_csv(ranking(), csv)
    with pytest.raises(FileExistsError, match="r.csv"):
        export_ranking_csv(ranking(), csv)
    with pytest.raises(FileExistsError, match="report.html"):
        (tmp_path / "report.html").write_text("x")
        export_report_html(
            tmp_path / "report.html", figure=None, ranking_df=ranking(), recording_label="r", model_description="m"
        )


def test_bad_format_and_object_are_clear_errors(tmp_path):
    with pytest.raises(ValueError, match="Invalid figure format 'jpg'"):
        export_figure(curve(0), tmp_path / "x.jpg")
    with pytest.raises(TypeError, match="Cannot export a list"):
        export_figure([1, 2], tmp_path / "x.html")
    with pytest.raises(FileNotFoundError, match="does not exist"):
        export_figure(curve(0), tmp_path / "missing" / "x.html")


def test_html_export_works_offline(tmp_path):
    out = tmp_path / "fig.html"
    assert export_figure(curve(0), out) == "bokeh-html"
    text = out.read_text()
    assert "<script" in text and "Bokeh" in text
    assert 'src="https://cdn.bokeh.org' not in text  # JavaScript inlined


def _matplotlib_png() -> bytes:
    from matplotlib.figure import Figure

    fig = Figure(figsize=(2, 1))
    fig.add_subplot().plot([0, 1], [1, 0])
    buf = io.BytesIO()
    fig.savefig(buf, format="png")
    return buf.getvalue()


def test_report_html(tmp_path, no_browser):
    png = _matplotlib_png()
    ann = AnnotationSet(markers=[make_marker(12.5, "onset", "LVFA in <LA1>")], bad_channels=["RB3"])
    out = export_report_html(
        tmp_path / "report.html",
        figure=png,
        ranking_df=ranking(),
        recording_label="sub-pt01 run-01",
        model_description="SSS transformer, window 128 samples",
        annotations=ann,
        demo_model=True,
        threshold=0.42,
        agreement="AUC 1.00 · F1 1.00 at 0.42",
    )
    text = out.read_text()
    assert DEMO_MODEL_SENTENCE in text
    for ch in ("LA1", "LA2", "RB1"):
        assert f"<td>{ch}</td>" in text
    assert text.count('<tr class="above">') == 2
    assert "data:image/png;base64," in text
    assert "LVFA in &lt;LA1&gt;" in text and "RB3" in text
    assert "sub-pt01 run-01" in text and "Threshold: 0.42 " in text and "Generated 20" in text
    plain = export_report_html(
        tmp_path / "plain.html",
        figure=curve(1),
        ranking_df=ranking(),
        recording_label="r",
        model_description="a trained model",
    )
    text = plain.read_text()  # no browser to draw the figure: the report is written and says why it has none
    assert DEMO_MODEL_SENTENCE not in text and "data:image/png;base64," not in text
    assert "No figure: PNG export needs a headless Chromium browser" in text and "<td>LA1</td>" in text


@needs_browser
def test_report_draws_its_figure_in_the_browser(tmp_path):
    out = export_report_html(
        tmp_path / "report.html",
        figure=curve(1),
        ranking_df=ranking(),
        recording_label="r",
        model_description="a trained model",
    )
    text = out.read_text()
    assert "data:image/png;base64,iVBORw0KGgo" in text and "No figure" not in text


def test_ranking_csv_round_trip(tmp_path):
    df = ranking()
    path = export_ranking_csv(df, tmp_path / "ranking.csv")
    back = pd.read_csv(path, keep_default_na=False)
    pd.testing.assert_frame_equal(back, df, check_dtype=False)


def test_download_buttons_serve_files_with_stem_and_time_range():
    window = {"t": (120.0, 150.0)}
    errors = []

    def broken():
        raise RuntimeError("no figure yet")

    buttons = download_buttons(
        broken,
        None,
        lambda: ranking().to_csv(index=False),
        lambda: b"<html></html>",
        basename=lambda: export_basename("sub-pt01_run-01", *window["t"]),
        on_error=errors.append,
    )
    assert len(buttons) == 3  # the SVG button is left out
    png, csv, report = buttons
    data = csv.callback()
    assert isinstance(data, io.BytesIO)
    assert data.getvalue().decode().startswith("rank,channel,shaft")
    assert csv.filename == "sub-pt01_run-01_t120.0-150.0s_ranking.csv"
    window["t"] = (150.0, 180.0)
    report.callback()
    assert report.filename == "sub-pt01_run-01_t150.0-180.0s_report.html"
    with pytest.raises(RuntimeError):
        png.callback()
    assert errors == ["Could not make the PNG file: no figure yet"]
    assert export_basename("sub pt/01") == "sub_pt_01"


@needs_browser
def test_svg_is_drawn_by_the_browser_with_the_colour_bar(tmp_path):
    heat = hv.Image(
        np.random.default_rng(0).random((3, 10)), bounds=(0, -0.5, 10, 2.5), vdims=[hv.Dimension("p", label="p(SOZ)")]
    ).opts(cmap="YlOrRd", colorbar=True, width=500, height=200)
    out = tmp_path / "heat.svg"
    assert export_figure(heat, out) == "bokeh+chromium"
    text = out.read_text()
    assert text.startswith(export.BROWSER_MARK) and export.FALLBACK_MARK not in text and "<svg" in text
    assert "p(SOZ)" in text  # the colour bar's title, drawn by Bokeh
    svg = ElementTree.fromstring(text.split("\n", 1)[1])  # well-formed SVG after the mark
    assert svg.tag.endswith("svg") and float(svg.get("width")) == 500 and float(svg.get("height")) == 200
    again = tmp_path / "again.svg"
    export_figure(curve(1), again)
    assert (
        again.read_text() != text
    )  # the warm browser draws the new figure (its time: benchmarks/viewer_warm_paths.py)


@needs_browser
def test_live_figure_is_exported_from_a_static_copy(tmp_path):
    """A DynamicMap figure is drawn from its current frame; rendering it twice gives two independent models."""
    from sss_viewer.viewer.export import static_copy, to_bokeh

    stream = hv.streams.Stream.define("Seed", seed=0)()
    live = hv.DynamicMap(lambda seed: curve(seed), streams=[stream])
    layout = (live + curve(5)).cols(1)
    hv.render(layout)
    stream.event(seed=3)
    copy = static_copy(layout)
    assert not any(isinstance(x, hv.DynamicMap) for x in copy)
    first, second = to_bokeh(layout), to_bokeh(layout)
    assert not {m.id for m in first.references()} & {m.id for m in second.references()}
    assert export_figure(layout, tmp_path / "live.png") == "bokeh+chromium"

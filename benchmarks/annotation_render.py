"""Opening and drawing a recording with many annotations (issue: 1,000 markers took minutes to draw).

Builds two 32-channel, 10-min SEEG EDF files with MNE's EDF export, identical but for their
annotations — ``--many`` (1,000) and ``--few`` (5): a seizure onset and offset, then events and
notes, a third of them with a duration — and times, for each, in a fresh viewer session
(``build_app``):

* **open**: ``ViewerApp.open(path)`` (read the file, the annotations and their sidecars; the
  background scoring it starts is waited for and reported apart: it does not depend on the markers);
* **first render**: the Panel layout builds the Bokeh models of a new document
  (``__panel__().get_root(Document())``, what a session serves, without a browser);
* **montage switch**: ``traces.montage`` set to bipolar, then back to monopolar (the figure is
  rebuilt and the document's trace pane re-rendered).

Every figure is the median of ``--repeats`` (3), the two files' runs alternating so drift on the
machine hits both alike; it prints the ratio many/few (goal: open + first render ≤ 3 s, montage
switch ≤ 0.5 s, each within 1.3× of the recording with 5 annotations). As a reference it times
the bundled demo's montage switch and page change in the same session kind.

``--per-marker-baseline`` also times the 1,000-marker file once with the markers drawn as before
the fix (one ``hv.VLine``/``hv.VSpan`` element per marker, in the main plot and the overview):
minutes on 2 cores.

    .venv/bin/python benchmarks/annotation_render.py [--repeats 3] [--many 1000] [--few 5] [--per-marker-baseline]
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import statistics
import sys
import tempfile
import time
from pathlib import Path

import holoviews as hv
import mne
import numpy as np
from bokeh.document import Document

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from sss_viewer.viewer import _trace_elements as trace_elements  # noqa: E402
from sss_viewer.viewer import traces
from sss_viewer.viewer._trace_elements import MARKER_COLOURS  # noqa: E402
from sss_viewer.viewer.app import build_app  # noqa: E402

logger = logging.getLogger("annotation_render")

CHANNELS = [f"{shaft}{k}" for shaft in "ABCD" for k in range(1, 9)]


def write_edf(path: Path, n_annotations: int, *, minutes: float = 10.0, sfreq: float = 512.0, seed: int = 0) -> Path:
    """A 32-channel SEEG EDF (noise + a 7 Hz rhythm, µV scale) with ``n_annotations`` markers, by MNE export.

    The signal is the same for every ``n_annotations`` (same seed); the annotations are a seizure
    onset (``EEG SZ START``) and offset (``EEG SZ END``) when there are at least two, then events
    (``event k``) and notes (``note k``) at random times, every third one 2 s long.
    """
    rng = np.random.default_rng(seed)
    n_times = int(minutes * 60 * sfreq)
    t = np.arange(n_times) / sfreq
    data = 30e-6 * rng.standard_normal((len(CHANNELS), n_times)) + 20e-6 * np.sin(2 * np.pi * 7.0 * t)
    raw = mne.io.RawArray(data, mne.create_info(CHANNELS, sfreq, "seeg"), verbose="error")
    onsets = np.sort(np.random.default_rng(seed + 1).uniform(1.0, minutes * 60 - 5.0, n_annotations))
    descriptions = [f"{'note' if k % 2 else 'event'} {k}" for k in range(n_annotations)]
    if n_annotations >= 2:
        descriptions[n_annotations // 3], descriptions[n_annotations // 3 + 1] = "EEG SZ START", "EEG SZ END"
    durations = np.where(np.arange(n_annotations) % 3 == 0, 2.0, 0.0)
    raw.set_annotations(mne.Annotations(onsets, durations, descriptions))
    mne.export.export_raw(str(path), raw, fmt="edf", overwrite=True, verbose="error")
    return path


def timed(fn) -> tuple[float, object]:
    start = time.perf_counter()
    out = fn()
    return time.perf_counter() - start, out


def one_session(path: Path, out_dir: Path) -> dict[str, float]:
    """Seconds of open, scoring (waited for), first render and the two montage switches in a fresh session."""
    app = build_app(data_root=path.parent, out_dir=out_dir)
    t_open, opened = timed(lambda: app.open(path))
    if not opened:
        raise RuntimeError(f"could not open {path}")
    t_score, _ = timed(lambda: app.scorer.wait(600))
    t_render, _ = timed(lambda: app.__panel__().get_root(Document()))
    n_markers = len(app.traces.markers)
    t_bipolar, _ = timed(lambda: setattr(app.traces, "montage", "bipolar"))
    t_monopolar, _ = timed(lambda: setattr(app.traces, "montage", "monopolar"))
    app.scorer.shutdown()
    return {
        "markers": n_markers,
        "open": t_open,
        "scoring": t_score,
        "render": t_render,
        "open+render": t_open + t_render,
        "to bipolar": t_bipolar,
        "to monopolar": t_monopolar,
    }


def demo_session() -> dict[str, float]:
    """The bundled demo in a fresh session: first render, montage switches, the first page change."""
    with tempfile.TemporaryDirectory() as tmp:
        t_build, app = timed(lambda: build_app(data_root=tmp, out_dir=Path(tmp) / "out"))
        t_render, _ = timed(lambda: app.__panel__().get_root(Document()))
        t_page, _ = timed(lambda: setattr(app.traces, "page", 1))
        t_bipolar, _ = timed(lambda: setattr(app.traces, "montage", "bipolar"))
        t_monopolar, _ = timed(lambda: setattr(app.traces, "montage", "monopolar"))
        app.scorer.shutdown()
    return {
        "build_app": t_build,
        "render": t_render,
        "first page change": t_page,
        "to bipolar": t_bipolar,
        "to monopolar": t_monopolar,
    }


def _per_marker_elements(markers: list[dict]) -> list:
    """The markers as drawn before the fix: one ``hv.VSpan`` and one ``hv.VLine`` element per marker."""
    out = []
    for marker in markers:
        kind = marker.get("kind", "event")
        colour = MARKER_COLOURS.get(kind, MARKER_COLOURS["event"])
        onset = float(marker["onset"])
        duration = float(marker.get("duration") or 0.0)
        if duration > 0:
            out.append(hv.VSpan(onset, onset + duration).opts(color=colour, alpha=0.08, line_alpha=0))
        dash, width = trace_elements.marker_line_style(kind)
        out.append(hv.VLine(onset).opts(color=colour, line_width=width, line_dash=dash))
    return out


@contextlib.contextmanager
def per_marker_elements():
    """Draw the markers as before the fix (one element each, main plot and overview) inside the block."""
    new_overview = traces.overview_overlay

    def old_overview(*args, markers, **kwargs):
        overlay = new_overview(*args, markers=markers, **kwargs)
        strip, ink = list(overlay)[:2]
        dim = strip.kdims[0]
        lines = [
            hv.VLine(float(mk["onset"]), kdims=[dim, strip.kdims[1]]).opts(
                color=MARKER_COLOURS.get(mk.get("kind", "event"), MARKER_COLOURS["event"]), line_width=2
            )
            for mk in markers
        ]
        return overlay.clone([strip, ink, *lines])

    saved = traces.marker_elements, traces.overview_overlay
    traces.marker_elements, traces.overview_overlay = _per_marker_elements, old_overview
    try:
        yield
    finally:
        traces.marker_elements, traces.overview_overlay = saved


def median_text(values: list[float]) -> str:
    return f"{statistics.median(values):7.2f} s  (runs: {', '.join(f'{v:.2f}' for v in values)})"


KEYS = ("open", "render", "open+render", "to bipolar", "to monopolar", "scoring")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--many", type=int, default=1000, help="annotations of the large case")
    parser.add_argument("--few", type=int, default=5, help="annotations of the reference case")
    parser.add_argument("--skip-demo", action="store_true", help="skip the demo reference")
    parser.add_argument(
        "--per-marker-baseline", action="store_true", help="also time the large case once as drawn before the fix"
    )
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    for name in ("sss_viewer", "bokeh", "panel", "holoviews"):  # their own info messages would interleave
        logging.getLogger(name).setLevel(logging.WARNING)

    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        files = {n: write_edf(folder / f"rec_{n}_annotations.edf", n) for n in (args.many, args.few)}
        logger.info("32 channels x 10 min at 512 Hz, EDF by MNE export; %d and %d annotations", args.many, args.few)
        # One unmeasured session first: imports, numba/datashader compilation, the scorer's caches.
        one_session(files[args.few], folder / "warm")
        runs: dict[int, list[dict]] = {n: [] for n in files}
        for r in range(args.repeats):
            for n, path in files.items():
                runs[n].append(one_session(path, folder / f"out_{n}_{r}"))
        for n in files:
            logger.info("\n== %d annotations (%d markers drawn) ==", n, runs[n][0]["markers"])
            for key in KEYS:
                logger.info("  %-13s %s", key, median_text([run[key] for run in runs[n]]))
        logger.info(
            "\n== ratio %d / %d annotations (medians; goal <= 1.3, open+render <= 3 s, switch <= 0.5 s) ==",
            args.many,
            args.few,
        )
        for key in ("open+render", "to bipolar", "to monopolar"):
            many = statistics.median(run[key] for run in runs[args.many])
            few = statistics.median(run[key] for run in runs[args.few])
            logger.info("  %-13s %.2f  (%.2f s vs %.2f s)", key, many / few, many, few)
        if args.per_marker_baseline:
            with per_marker_elements():
                old = one_session(files[args.many], folder / "out_old")
            logger.info("\n== %d annotations drawn one element per marker (before the fix), 1 run ==", args.many)
            for key in KEYS:
                logger.info("  %-13s %7.2f s", key, old[key])

    if not args.skip_demo:
        demo = [demo_session() for _ in range(args.repeats)]
        logger.info("\n== demo recording (reference) ==")
        for key in demo[0]:
            logger.info("  %-18s %s", key, median_text([run[key] for run in demo]))
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Spectrogram and band power of the focused channel over the visible window: :class:`FocusSpectrum`.

The channel is the trace view's ``focus_channel`` when it is shown, else the ranking's top channel
when it is shown, else the first channel of the page. Its montage row (the view's montage; display
filters not applied, so a notch does not carve a hole in the spectrum) is read over the visible
window only, through :meth:`TraceView.read_plan` / :meth:`TraceView.read_rows`: one channel from
the file (two for a bipolar row, all shown channels for the average reference).

Nothing is read or computed while the panel is hidden (its "spectrogram" checkbox is off, the
default); once shown it follows the focus, the page and the window. Windows longer than
:data:`MAX_SPECTRUM_S` are not analysed (zoom in).
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass

import holoviews as hv
import numpy as np
import pandas as pd
import panel as pn
import param
from scipy import signal as sps

from sss_viewer.viewer._display import MontageRows
from sss_viewer.viewer._envelope import sample_range
from sss_viewer.viewer.timecourse import PLOT_BACKEND_OPTS, ensure_bokeh
from sss_viewer.viewer.traces import TraceView

logger = logging.getLogger(__name__)

BANDS = (
    ("delta", 1.0, 4.0),
    ("theta", 4.0, 8.0),
    ("alpha", 8.0, 13.0),
    ("beta", 13.0, 30.0),
    ("gamma", 30.0, 80.0),
    ("ripple", 80.0, 250.0),
    ("fast ripple", 250.0, 500.0),
)
"""Clinical EEG bands ``(name, low Hz, high Hz)``; shown when the low edge is below the analysed top frequency."""
MAX_HZ = 500.0
"""Highest frequency shown (below the Nyquist frequency of slower recordings)."""
MAX_SPECTRUM_S = 600.0
"""Longest window analysed (s); a longer visible window asks to zoom in."""
DB_FLOOR = 1e-12
"""Added to the power (µV²/Hz) before taking its log, so a flat signal gives finite dB."""


@dataclass(frozen=True)
class SpectrumResult:
    """What the panel shows for one channel and window.

    Attributes
    ----------
    channel : str
        The focused channel (recording name).
    row : str
        Its montage row (``RG9`` monopolar, ``RG9-RG10`` bipolar, ``RG9-avg`` average …).
    t0, t1 : float
        The analysed window (s).
    times : ndarray, shape (n_times,)
        Segment centres (s from the recording start), evenly spaced.
    freqs : ndarray, shape (n_freqs,)
        Frequencies (Hz), evenly spaced, up to ``min(Nyquist, max_hz)``.
    power_db : ndarray, shape (n_freqs, n_times)
        Power spectral density in dB re 1 µV²/Hz.
    bands : DataFrame
        :func:`band_power` of the window.
    """

    channel: str
    row: str
    t0: float
    t1: float
    times: np.ndarray
    freqs: np.ndarray
    power_db: np.ndarray
    bands: pd.DataFrame


def segment_samples(sfreq: float, span_s: float, n_samples: int) -> int:
    """Spectrogram segment length: a power of two near ``clip(span_s / 40, 0.5, 4)`` s, at most ``n_samples``.

    Half a second (2 Hz resolution) for a 10–20 s page; longer windows get longer segments so the
    image keeps about 80 columns (segments overlap by 3/4).
    """
    if sfreq <= 0 or not math.isfinite(sfreq):
        raise ValueError(f"Invalid sfreq={sfreq!r}: expected a positive number of Hz.")
    seconds = min(max(span_s / 40.0, 0.5), 4.0)
    n = 2 ** max(3, round(math.log2(sfreq * seconds)))
    return int(max(1, min(n, n_samples)))


def spectrogram_db(
    x: np.ndarray, sfreq: float, *, t0: float = 0.0, max_hz: float = MAX_HZ
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Hann-windowed spectrogram of ``x`` in dB, frequencies up to ``min(Nyquist, max_hz)``.

    Parameters
    ----------
    x : ndarray, shape (n_samples,)
        One signal in µV.
    sfreq : float
        Sampling rate (Hz).
    t0 : float
        Time of ``x[0]`` (s); the returned times are absolute.
    max_hz : float
        Highest frequency kept.

    Returns
    -------
    times : ndarray, shape (n_times,)
    freqs : ndarray, shape (n_freqs,)
    power_db : ndarray, shape (n_freqs, n_times)
        ``10 log10(PSD + DB_FLOOR)``, PSD in µV²/Hz.
    """
    x = np.asarray(x, dtype=np.float64)
    if x.ndim != 1 or len(x) < 8:
        raise ValueError(f"Invalid signal x: expected one channel of at least 8 samples, got shape {x.shape}.")
    if max_hz <= 0:
        raise ValueError(f"Invalid max_hz={max_hz!r}: expected a positive frequency.")
    nperseg = segment_samples(sfreq, len(x) / sfreq, len(x))
    freqs, times, sxx = sps.spectrogram(
        x, fs=sfreq, window="hann", nperseg=nperseg, noverlap=(3 * nperseg) // 4, detrend="constant", scaling="density"
    )
    keep = freqs <= min(sfreq / 2, max_hz)
    return t0 + times, freqs[keep], 10.0 * np.log10(sxx[keep] + DB_FLOOR)


def band_power(x: np.ndarray, sfreq: float, *, max_hz: float = MAX_HZ, bands=BANDS) -> pd.DataFrame:
    """Power of ``x`` in each clinical band the rate allows (Welch, 0.5 Hz resolution where the signal is long enough).

    A band is kept when its low edge is below ``min(Nyquist, max_hz)``; its high edge is cut there.

    Parameters
    ----------
    x : ndarray, shape (n_samples,)
        One signal in µV.
    sfreq : float
    max_hz : float
    bands : sequence of (name, low_hz, high_hz)

    Returns
    -------
    table : DataFrame
        ``band, low_hz, high_hz, power_uv2`` (µV², the PSD integrated over the band) and
        ``relative`` (its share of the bands' total, 0–1), one row per kept band.
    """
    x = np.asarray(x, dtype=np.float64)
    if x.ndim != 1 or len(x) < 8:
        raise ValueError(f"Invalid signal x: expected one channel of at least 8 samples, got shape {x.shape}.")
    nperseg = int(min(len(x), 2 ** math.ceil(math.log2(2 * sfreq))))
    freqs, psd = sps.welch(x, fs=sfreq, window="hann", nperseg=nperseg, detrend="constant")
    top = min(sfreq / 2, max_hz)
    df = freqs[1] - freqs[0] if len(freqs) > 1 else sfreq
    rows = []
    for name, lo, hi in bands:
        if lo >= top:
            continue
        hi = min(hi, top)
        inside = (freqs >= lo) & (freqs < hi)
        rows.append({"band": name, "low_hz": lo, "high_hz": hi, "power_uv2": float(psd[inside].sum() * df)})
    table = pd.DataFrame(rows, columns=["band", "low_hz", "high_hz", "power_uv2"])
    total = table["power_uv2"].sum()
    table["relative"] = table["power_uv2"] / total if total > 0 else 0.0
    return table


class FocusSpectrum(pn.viewable.Viewer):
    """Spectrogram and band power of the focused channel over the visible window of :attr:`traces`.

    Parameters
    ----------
    traces : TraceView
        The view whose focus, montage and window are analysed.
    show : bool
        Compute and draw (False: nothing is read).
    """

    traces = param.ClassSelector(class_=TraceView, doc="The trace view whose focused channel is analysed.")
    show = param.Boolean(default=False, doc="Compute and draw the spectrogram (nothing is read while False).")
    max_hz = param.Number(default=MAX_HZ, bounds=(0, None), inclusive_bounds=(False, True), doc="Top frequency (Hz).")
    plot_height = param.Integer(default=170, bounds=(60, None), doc="Height of the spectrogram (px).")
    redraws = param.Integer(
        default=0,
        precedence=-1,
        doc="Counts the changes of what is shown while shown: the plots follow it, so a hidden panel never redraws.",
    )

    def __init__(self, **params):
        super().__init__(**params)
        self._cache: tuple[tuple, SpectrumResult | None, str] | None = None

    def channel(self) -> str | None:
        """The analysed channel: the focus when shown, else the ranking's top one if shown, else the page's first."""
        traces = self.traces
        if traces is None or traces.recording is None:
            return None
        contacts = traces.contacts()
        if traces.focus_channel and traces.focus_channel in contacts:
            return traces.focus_channel
        scores = traces.scores
        if scores is not None and len(scores.channels):
            ranked = scores.channels.sort_values("rank", kind="stable")["channel"]
            top = next((c for c in ranked if c in contacts), None)
            if top is not None:
                return str(top)
        page = traces.page_contacts()
        return page[0] if page else None

    def _row(self, channel: str) -> MontageRows | None:
        """The first montage row made from ``channel``, as a one-row :class:`MontageRows` (None: no row has it)."""
        rows = self.traces.rows()
        target = self.traces.contacts().index(channel)
        r = next((i for i, members in enumerate(rows.members) if target in members), None)
        if r is None:  # a shaft of one contact has no bipolar row
            return None
        return MontageRows(rows.labels[r : r + 1], rows.members[r : r + 1], rows.shafts[r : r + 1], rows.kind)

    def _key(self) -> tuple:
        traces = self.traces
        recording = traces.recording if traces is not None else None
        return (
            id(recording),
            self.channel(),
            traces.window() if recording is not None else None,
            traces.montage if traces is not None else None,
            tuple(traces.bad_channels) if traces else (),
            self.max_hz,
        )

    def compute(self) -> tuple[SpectrumResult | None, str]:
        """``(result, why_not)``: the spectrum of :meth:`channel` over the visible window, or None and the reason.

        Cached: the same channel, window and montage are computed once.
        """
        key = self._key()
        if self._cache is not None and self._cache[0] == key:
            return self._cache[1], self._cache[2]
        result, why = None, ""
        channel = key[1]
        if channel is None:
            why = "No channel to analyse (open a recording)."
        else:
            t0, t1 = key[2]
            rec = self.traces.recording
            start, stop = sample_range(t0, t1, rec.sfreq, rec.n_times)
            if t1 - t0 > MAX_SPECTRUM_S:
                why = f"The window is {t1 - t0:g} s; zoom in to {MAX_SPECTRUM_S:g} s or less for the spectrogram."
            elif stop - start < 8:
                why = "The window is too short for a spectrum."
            elif (rows := self._row(channel)) is None:
                why = f"{channel} has no row in the {self.traces.montage} montage."
            else:
                x = self.traces.read_rows(self.traces.read_plan(rows), start, stop, filtered=False)[0]
                times, freqs, power = spectrogram_db(x, rec.sfreq, t0=start / rec.sfreq, max_hz=self.max_hz)
                bands = band_power(x, rec.sfreq, max_hz=self.max_hz)
                result = SpectrumResult(channel, str(rows.labels[0]), t0, t1, times, freqs, power, bands)
                logger.debug("Spectrum of %s over %.2f–%.2f s: %s", channel, t0, t1, power.shape)
        self._cache = (key, result, why)
        return result, why

    def result(self) -> SpectrumResult | None:
        """:meth:`compute`'s result (None when there is nothing to analyse)."""
        return self.compute()[0]

    def spectrogram(self) -> hv.Element:
        """The spectrogram ``hv.Image`` (on the traces' ``time`` axis, over the visible window), or a note why not."""
        ensure_bokeh()
        result, why = self.compute()
        if result is None:
            return hv.Div(f"<p>{why}</p>")
        T = hv.Dimension("time", label="time", unit="s")
        F = hv.Dimension("frequency", label="frequency", unit="Hz")
        P = hv.Dimension("power", label="power", unit="dB re 1 µV²/Hz")
        finite = result.power_db[np.isfinite(result.power_db)]
        lo, hi = np.percentile(finite, [5, 99.5]) if finite.size else (0.0, 1.0)
        image = hv.Image((result.times, result.freqs, result.power_db), kdims=[T, F], vdims=[P])
        width = self.traces.plot_width
        return image.opts(
            cmap="viridis",
            colorbar=True,
            clim=(float(lo), float(max(hi, lo + 1e-6))),
            xlim=(result.t0, result.t1),
            frame_width=width,
            frame_height=self.plot_height,
            tools=["hover"],
            backend_opts=PLOT_BACKEND_OPTS,
            title=f"spectrogram of {result.row} ({result.t0:.1f}–{result.t1:.1f} s)",
            fontsize={"title": "9pt"},
        )

    def band_bars(self) -> hv.Element:
        """Relative band power (% of the bands' total) of the window as ``hv.Bars``, or an empty note."""
        ensure_bokeh()
        result, _ = self.compute()
        if result is None:
            return hv.Div("")
        table = result.bands.assign(percent=100 * result.bands["relative"])
        B = hv.Dimension("band", label="band")
        bars = hv.Bars(table, kdims=[B], vdims=[hv.Dimension("percent", label="% of power"), "power_uv2"])
        return bars.opts(
            frame_width=230,
            frame_height=self.plot_height,
            xrotation=45,
            tools=["hover"],
            ylim=(0, 100),
            title=f"band power of {result.row}",
            fontsize={"title": "9pt"},
            color="#1565c0",
            backend_opts={"plot.output_backend": "canvas"},
        )

    @param.depends(
        "traces.focus_channel",
        "traces.start_s",
        "traces.span_s",
        "traces.page",
        "traces.recording",
        "traces.montage",
        "traces.bad_channels",
        "traces.scores",
        watch=True,
    )
    def _follow_traces(self) -> None:
        """While shown, count a change of the view (the plots redraw); while hidden, nothing happens.

        A hidden panel's plots re-rendered on every page step otherwise (each a pass over the page's
        Bokeh model graph, a large share of a page step's time); showing the panel draws the current view.
        """
        if self.show:
            self.redraws += 1

    @param.depends("show", "max_hz", "plot_height", "redraws")
    def _spectrogram_view(self):
        return self.spectrogram() if self.show else hv.Div("")

    @param.depends("show", "max_hz", "plot_height", "redraws")
    def _bands_view(self):
        return self.band_bars() if self.show else hv.Div("")

    def __panel__(self):
        label = "spectrogram and band power of the focused channel"
        toggle = pn.widgets.Checkbox.from_param(self.param.show, name=label)
        plots = pn.Row(
            # no left margin: the plot frame starts where the traces' does (the same time axis, pixel for pixel)
            pn.pane.HoloViews(self._spectrogram_view, linked_axes=False, margin=(5, 10, 5, 0)),
            pn.pane.HoloViews(self._bands_view, linked_axes=False),
            visible=self.param.show,
        )
        return pn.Column(toggle, plots, sizing_mode="stretch_width")

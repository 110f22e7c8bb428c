"""Spectrogram and band power of the focused channel (:mod:`sss_viewer.viewer._spectrum`)."""

import holoviews as hv
import numpy as np
import pytest

from sss_viewer.io.recording import Recording
from sss_viewer.viewer._spectrum import BANDS, FocusSpectrum, band_power, spectrogram_db
from sss_viewer.viewer.traces import TraceView


def _sines(sfreq=250.0, seconds=40.0, freqs=(10.0, 40.0, 3.0)) -> Recording:
    """One channel per frequency (A1: 10 Hz, A2: 40 Hz, A3: 3 Hz), 50 µV sines plus a little noise."""
    t = np.arange(int(sfreq * seconds)) / sfreq
    rng = np.random.default_rng(0)
    data = np.stack([50 * np.sin(2 * np.pi * f * t) + rng.standard_normal(len(t)) for f in freqs]).astype(np.float32)
    names = [f"A{i + 1}" for i in range(len(freqs))]
    return Recording(data=data, sfreq=sfreq, ch_names=names, ch_types=["seeg"] * len(names), subject="sine")


def _peak_hz(freqs: np.ndarray, power_db: np.ndarray) -> float:
    return float(freqs[np.argmax(power_db.mean(axis=1))])


@pytest.mark.parametrize(("sfreq", "hz"), [(250.0, 10.0), (1000.0, 80.0), (2048.0, 300.0)])
def test_a_sine_peaks_in_its_frequency_bin(sfreq, hz):
    t = np.arange(int(sfreq * 10)) / sfreq
    times, freqs, power = spectrogram_db(np.sin(2 * np.pi * hz * t), sfreq, t0=100.0)
    assert power.shape == (len(freqs), len(times))
    assert abs(_peak_hz(freqs, power) - hz) <= (freqs[1] - freqs[0]) / 2 + 1e-9  # the nearest bin
    assert freqs[-1] <= min(sfreq / 2, 500.0) and 100.0 < times[0] < times[-1] < 110.0


def test_band_power_of_a_10_hz_sine_is_highest_in_alpha_and_the_bands_follow_the_rate():
    sfreq = 250.0
    t = np.arange(int(sfreq * 20)) / sfreq
    table = band_power(np.sin(2 * np.pi * 10.0 * t), sfreq)
    assert table.loc[table["relative"].idxmax(), "band"] == "alpha"
    assert table["relative"].sum() == pytest.approx(1.0)
    # 250 Hz: no fast ripple, and the ripple band stops at the Nyquist frequency
    assert list(table["band"]) == [name for name, _, _ in BANDS[:-1]]
    assert table["high_hz"].iloc[-1] == pytest.approx(125.0)
    assert "fast ripple" in set(band_power(np.sin(2 * np.pi * 10.0 * t), 1024.0)["band"])


def test_bad_input_names_the_parameter():
    with pytest.raises(ValueError, match="signal x"):
        spectrogram_db(np.zeros((2, 100)), 250.0)
    with pytest.raises(ValueError, match="max_hz"):
        spectrogram_db(np.zeros(100), 250.0, max_hz=0)
    with pytest.raises(ValueError, match="sfreq"):
        spectrogram_db(np.zeros(100), -1.0)


def test_the_panel_follows_the_focused_channel_and_the_window_and_reads_nothing_while_hidden():
    traces = TraceView(recording=_sines(), span_s=10.0, start_s=5.0, show_overview=False)
    spectrum = FocusSpectrum(traces=traces)
    assert isinstance(spectrum._spectrogram_view(), hv.Div) and spectrum._cache is None  # hidden: nothing computed
    assert spectrum.channel() == "A1"  # no focus, no ranking: the page's first channel
    spectrum.show = True
    result = spectrum.result()
    assert (result.channel, result.t0, result.t1) == ("A1", 5.0, 15.0)
    assert abs(_peak_hz(result.freqs, result.power_db) - 10.0) <= 1.0
    traces.focus_channel = "A2"
    image = spectrum._spectrogram_view()
    assert isinstance(image, hv.Image) and "A2" in image.opts.get().kwargs["title"]
    result = spectrum.result()
    assert result.channel == "A2" and abs(_peak_hz(result.freqs, result.power_db) - 40.0) <= 1.0
    assert result.bands.loc[result.bands["relative"].idxmax(), "band"] == "gamma"
    traces.start_s = 20.0
    assert spectrum.result().t0 == 20.0 and spectrum.result().times[0] > 20.0
    bars = spectrum._bands_view()
    assert isinstance(bars, hv.Bars) and list(bars.dimension_values("band")) == list(result.bands["band"])


def test_a_hidden_panel_does_not_redraw_when_the_view_moves():
    traces = TraceView(recording=_sines(), span_s=10.0, start_s=5.0, show_overview=False)
    spectrum = FocusSpectrum(traces=traces)
    drawn = []
    spectrum.param.watch(lambda event: drawn.append(event.new), "redraws")
    traces.start_s = 20.0
    traces.focus_channel = "A2"
    assert drawn == []  # hidden: the plots' dependencies do not change, so Panel redraws nothing
    spectrum.show = True
    assert spectrum.result().t0 == 20.0 and spectrum.result().channel == "A2"  # shown: the current view
    traces.start_s = 5.0
    assert drawn == [1] and spectrum.result().t0 == 5.0


def test_the_focused_row_is_read_in_the_view_montage():
    traces = TraceView(recording=_sines(), span_s=10.0, show_overview=False, montage="bipolar", focus_channel="A3")
    spectrum = FocusSpectrum(traces=traces, show=True)
    assert spectrum.result().row == "A2-A3"  # the first row the focused contact is part of
    traces.montage = "average"
    assert spectrum.result().row == "A3-avg"


def test_a_window_too_long_is_not_analysed_and_says_so():
    traces = TraceView(recording=_sines(seconds=700.0, sfreq=64.0, freqs=(10.0,)), span_s=700.0, show_overview=False)
    spectrum = FocusSpectrum(traces=traces, show=True)
    view = spectrum._spectrogram_view()
    assert spectrum.result() is None and isinstance(view, hv.Div) and "zoom in" in view.data


def test_a_contact_without_a_bipolar_row_says_so():
    rec = _sines(freqs=(10.0, 40.0))
    rec.ch_names[1] = "B1"  # two shafts of one contact each: no bipolar row at all
    traces = TraceView(recording=rec, span_s=10.0, show_overview=False, montage="bipolar", focus_channel="A1")
    spectrum = FocusSpectrum(traces=traces, show=True)
    view = spectrum._spectrogram_view()
    assert spectrum.result() is None and "A1 has no row in the bipolar montage" in view.data

"""Deterministic test signals for comparing the spike and HFO detectors with reference implementations.

The same arrays are built by ``benchmarks/detector_references.py`` (run in a separate environment
with the reference packages, where they are fed to epycom's and mne-hfo's detectors) and by
``tests/biomarkers/test_biomarker_detectors.py`` (which feeds them to this project's detectors and compares the
detections with the stored reference output). Each signal's SHA-256 is stored with the reference
output, so that a test run checks it regenerated the very input the references saw.

To be bit-for-bit reproducible across NumPy versions, CPUs and platforms, the builder uses only

* ``numpy.random.default_rng(seed).random`` (PCG64 and its float64 conversion are stable);
* element-wise IEEE-754 ``+ - * /``, ``floor`` and comparisons on float64, each a separate ufunc
  call (correctly rounded whatever the SIMD path; no fused multiply-add);
* sequential accumulation in a fixed order (explicit loops, no ``sum``/``std`` reductions, whose
  summation order may change between versions).

Hence no FFT, BLAS, ``np.sin``/``np.exp`` (SIMD implementations differ in the last bit between
NumPy versions and CPUs) and no ``standard_normal``: Gaussian-like noise is the sum of 12 uniforms
(Irwin–Hall, variance 1), sinusoids use the polynomial :func:`sine`, and the bumps are polynomial.

Content of every signal (8 channels, µV): a 1/f-like background (random piecewise-linear
components at octave time scales: power ∝ 1/f² from 2 to 100 Hz, SD ≈ 20 µV) plus 3 µV of white
noise, 15 µV of 50-Hz mains on every channel, interictal spikes (a sharp negative bump, σ ≈ 8 ms,
and its after-going slow wave) of varied amplitude and count — from mostly below to well above
the Janča threshold, which the same amplitude clears more easily at ≥ 1 kHz than at 200 Hz, hence
lower amplitudes there — one channel with polyspikes, and, where the rate allows, ripples
(90–200 Hz, 50–100 ms) and fast ripples (260–450 Hz, 20–40 ms) of varied amplitude and count.
Channel 0 is background only.

The 173.61-Hz signal has no mains: epycom truncates the rate to 173 Hz, which moves its ≈ 0.8-Hz
wide mains notch to 50.18 Hz; 50-Hz mains then leaks into its 10–60 Hz band and raises its
threshold (with mains, F1 against this project's detector falls from 0.99 to 0.86) — a defect of
the reference at non-integer rates, not a difference in the method.
"""

from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass, field

import numpy as np

MAINS_HZ = 50.0
"""Mains frequency of every signal (Hz)."""


@dataclass(frozen=True)
class SignalSpec:
    """Parameters of one deterministic test signal.

    Attributes
    ----------
    name : str
        Key of the signal in :data:`SIGNALS` and in the stored references.
    sfreq : float
        Sampling rate (Hz).
    duration_s : float
        Length (s).
    seed : int
        Seed of :func:`numpy.random.default_rng`.
    spike_amp : tuple of float
        Spike amplitude per channel (µV; 0: none).
    spike_count : tuple of int
        Spikes per channel.
    ripple_amp, ripple_count : tuple
        Ripples per channel (80–250 Hz band; only where ``sfreq`` ≥ 1000 Hz).
    fast_amp, fast_count : tuple
        Fast ripples per channel (250–500 Hz band; only where ``sfreq`` ≥ 2000 Hz).
    polyspike_channel : int
        Channel whose spikes are each followed, 60 ms later, by a second one of 0.8 × the amplitude.
    mains_amp : float
        Amplitude of the 50-Hz mains on every channel (µV).
    """

    name: str
    sfreq: float
    duration_s: float
    seed: int
    spike_amp: tuple[float, ...] = (0, 30, 35, 40, 50, 0, 45, 80)
    spike_count: tuple[int, ...] = (0, 12, 25, 15, 30, 0, 12, 20)
    ripple_amp: tuple[float, ...] = (0, 0, 12, 25, 0, 18, 0, 40)
    ripple_count: tuple[int, ...] = (0, 0, 15, 10, 0, 25, 0, 8)
    fast_amp: tuple[float, ...] = (0, 0, 0, 0, 12, 8, 20, 0)
    fast_count: tuple[int, ...] = (0, 0, 0, 0, 20, 12, 8, 0)
    polyspike_channel: int = 6
    mains_amp: float = 15.0
    n_channels: int = field(default=8, init=False)


_HIGH_RATE_SPIKE_AMP = (0, 18, 22, 26, 35, 0, 30, 80)
"""Spike amplitudes at ≥ 1 kHz, where the same amplitude stands further above the threshold than at 200 Hz."""

SIGNALS: dict[str, SignalSpec] = {
    spec.name: spec
    for spec in (
        SignalSpec("mixed_1000hz", 1000.0, 60.0, 101, spike_amp=_HIGH_RATE_SPIKE_AMP),
        SignalSpec("spikes_200hz", 200.0, 60.0, 102),
        SignalSpec("spikes_173hz", 173.61, 60.0, 103, mains_amp=0.0),
        SignalSpec("hfo_2000hz", 2000.0, 30.0, 104, spike_amp=_HIGH_RATE_SPIKE_AMP),
    )
}
"""The test signals by name: 60 s at 1000, 200 and 173.61 Hz (the Bonn data's rate), 30 s at 2000 Hz."""

_TWO_PI = 2.0 * math.pi
_HALF_PI = 0.5 * math.pi
_SINE_COEF = tuple((-1.0) ** k / math.factorial(2 * k + 1) for k in range(12))


def sine(cycles: np.ndarray) -> np.ndarray:
    """sin(2π·cycles) from basic float64 arithmetic only (absolute error < 1e-15 at |cycles| < 1e6).

    Parameters
    ----------
    cycles : ndarray
        Phase in cycles (turns).

    Returns
    -------
    ndarray
        The sine, same shape, float64.
    """
    c = np.asarray(cycles, dtype=np.float64)
    frac = c - np.floor(c)  # [0, 1)
    x = frac * _TWO_PI  # [0, 2π)
    x = np.where(x > math.pi, x - _TWO_PI, x)  # (-π, π]
    x = np.where(x > _HALF_PI, math.pi - x, x)
    x = np.where(x < -_HALF_PI, -math.pi - x, x)  # [-π/2, π/2]
    y = x * x
    p = np.full_like(x, _SINE_COEF[-1])
    for coef in _SINE_COEF[-2::-1]:
        p = p * y
        p = p + coef
    return p * x


def bump(u: np.ndarray) -> np.ndarray:
    """Triweight bump (1 − u²)³ on |u| < 1, 0 outside (SD of the shape 1/3).

    Parameters
    ----------
    u : ndarray
        Position in half-widths.

    Returns
    -------
    ndarray
        The bump, same shape, float64.
    """
    v = 1.0 - u * u
    v = np.where(v > 0.0, v, 0.0)
    return v * v * v


def gaussian_noise(rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
    """Irwin–Hall approximation of standard normal noise: the sum of 12 uniforms − 6 (mean 0, variance 1).

    Parameters
    ----------
    rng : numpy.random.Generator
        Source of the uniforms.
    shape : tuple of int
        Shape of the result.

    Returns
    -------
    ndarray
        Noise, float64.
    """
    out = rng.random(shape)
    for _ in range(11):
        out = out + rng.random(shape)
    return out - 6.0


def background(rng: np.random.Generator, n_channels: int, n: int, sfreq: float) -> np.ndarray:
    """1/f-like background: random piecewise-linear components with knots every 2, 4, …, 1024 ms.

    The component with knot spacing Δ has amplitude ∝ √Δ, so the power per octave falls by half per
    octave up in frequency (amplitude spectrum ≈ 1/f); components with knots closer than 2 samples
    are left out. The SD is ≈ 20 µV.

    Parameters
    ----------
    rng : numpy.random.Generator
        Source of the randomness.
    n_channels, n : int
        Shape of the result.
    sfreq : float
        Sampling rate (Hz).

    Returns
    -------
    ndarray, shape (n_channels, n)
        The background (µV), float64.
    """
    out = np.zeros((n_channels, n))
    i = np.arange(n)
    for j in range(1, 11):
        spacing_s = 0.001 * 2**j
        step = round(spacing_s * sfreq)
        if step < 2:
            continue
        knots = gaussian_noise(rng, (n_channels, n // step + 2))
        k = i // step
        frac = (i - k * step) / step
        left, right = knots[:, k], knots[:, k + 1]
        out = out + (left + (right - left) * frac) * (17.0 * math.sqrt(spacing_s / 1.024))
    return out


def spike_shape(u_s: np.ndarray) -> np.ndarray:
    """Unit interictal spike at time offsets ``u_s`` (s): −bump(σ 8 ms) + 0.4 bump(σ 30 ms, 40 ms later).

    Parameters
    ----------
    u_s : ndarray
        Time from the spike's peak (s).

    Returns
    -------
    ndarray
        The waveform, negative peak −1 at 0.
    """
    return 0.4 * bump((u_s - 0.04) / 0.09) - bump(u_s / 0.024)


def _slots(rng: np.random.Generator, first: float, last: float, step: float, count: int) -> np.ndarray:
    """``count`` distinct grid times in [first, last] (every ``step`` s), ascending."""
    grid = first + step * np.arange(int((last - first) / step) + 1)
    order = np.argsort(rng.random(len(grid)), kind="stable")
    return np.sort(grid[order[:count]])


def _add_burst(x: np.ndarray, sfreq: float, t0: float, dur: float, freq: float, amp: float) -> None:
    """Add an oscillation of ``freq`` Hz under a bump envelope over [t0, t0 + dur] to the 1-D ``x``."""
    i0 = max(0, math.floor(t0 * sfreq))
    i1 = min(len(x), math.ceil((t0 + dur) * sfreq) + 1)
    t = np.arange(i0, i1) / sfreq - t0
    x[i0:i1] = x[i0:i1] + amp * bump((t - 0.5 * dur) / (0.5 * dur)) * sine(freq * t)


def build(name: str) -> tuple[np.ndarray, dict[str, list[np.ndarray]]]:
    """Build one of the :data:`SIGNALS`.

    Parameters
    ----------
    name : str
        A key of :data:`SIGNALS`.

    Returns
    -------
    data : ndarray, shape (8, n_times)
        The signal (µV), float64, C-contiguous.
    truth : dict
        ``"spikes"``: per channel, the spike peak times (s; on the polyspike channel, both spikes);
        ``"ripples"`` and ``"fast_ripples"``: per channel, shape (n, 2) ``[start_s, end_s]``.

    Raises
    ------
    KeyError
        An unknown ``name``.
    """
    spec = SIGNALS[name]
    fs, dur = spec.sfreq, spec.duration_s
    n = int(dur * fs)
    rng = np.random.default_rng(spec.seed)
    x = background(rng, spec.n_channels, n, fs) + 3.0 * gaussian_noise(rng, (spec.n_channels, n))
    phase = rng.random(spec.n_channels)
    t_all = np.arange(n) / fs
    for ch in range(spec.n_channels):
        x[ch] = x[ch] + spec.mains_amp * sine(MAINS_HZ * t_all + phase[ch])

    truth: dict[str, list[np.ndarray]] = {"spikes": [], "ripples": [], "fast_ripples": []}
    for ch in range(spec.n_channels):
        amp, count = spec.spike_amp[ch], spec.spike_count[ch]
        times = _slots(rng, 1.5, dur - 1.5, 0.5, count) if amp and count else np.zeros(0)
        times = times + (rng.random(len(times)) - 0.5) * 0.2
        peaks = [times]
        if ch == spec.polyspike_channel:
            peaks.append(times + 0.06)
        for k, tt in enumerate(peaks):
            a = amp * (0.8 if k else 1.0)
            for t0 in tt:
                i0, i1 = max(0, math.floor((t0 - 0.1) * fs)), min(n, math.ceil((t0 + 0.14) * fs))
                x[ch, i0:i1] = x[ch, i0:i1] + a * spike_shape(np.arange(i0, i1) / fs - t0)
        truth["spikes"].append(np.sort(np.concatenate(peaks)))

        for key, amps, counts, min_fs, f_lo, f_hi, d_lo, d_hi in (
            ("ripples", spec.ripple_amp, spec.ripple_count, 1000.0, 90.0, 200.0, 0.05, 0.1),
            ("fast_ripples", spec.fast_amp, spec.fast_count, 2000.0, 260.0, 450.0, 0.02, 0.04),
        ):
            a, c = amps[ch], counts[ch]
            if not (a and c and fs >= min_fs):
                truth[key].append(np.zeros((0, 2)))
                continue
            # between the spike slots (which are on whole and half seconds)
            starts = _slots(rng, 1.1, dur - 1.4, 0.5, c) + 0.1 * rng.random(c)
            freqs = f_lo + (f_hi - f_lo) * rng.random(c)
            durs = d_lo + (d_hi - d_lo) * rng.random(c)
            amp_scale = 0.7 + 0.6 * rng.random(c)
            for t0, f, d, s in zip(starts, freqs, durs, amp_scale):
                _add_burst(x[ch], fs, t0, d, f, a * s)
            truth[key].append(np.stack([starts, starts + durs], axis=1))
    return np.ascontiguousarray(x), truth


def signal_sha256(data: np.ndarray) -> str:
    """SHA-256 of a signal's samples as little-endian float64, C order.

    Parameters
    ----------
    data : ndarray
        The signal.

    Returns
    -------
    str
        The hex digest.
    """
    return hashlib.sha256(np.ascontiguousarray(data, dtype="<f8").tobytes()).hexdigest()

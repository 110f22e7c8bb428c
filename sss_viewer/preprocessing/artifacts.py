"""Artifact detection before scoring: flat, saturated, jumping, line-noise and out-of-range channels.

Real clinical recordings carry contacts that are not brain signal: a disconnected contact (flat, or
an amplifier swinging between its rails), a contact picking up mains noise, a segment clipped at the
amplifier's limit, an electrode "pop". A scorer that reads every contact as brain would rank such a
contact first. :func:`detect_artifacts` finds them before any scorer runs, and says why in plain words.

Every criterion is *relative to the recording* (its median channel), so it works whatever the units,
the gain or the reference; none uses an absolute µV threshold except the exactness of "identical
samples". The recording is cut into short segments (``ArtifactConfig.segment_s``, 1 s) and each
channel × segment gets a few cheap statistics (one pass of NumPy reductions, no filtering):

* **flat** — segment SD below ``flat_factor`` × the recording's typical amplitude, or a run of
  identical samples at least ``flat_run_s`` long (a disconnected contact, a dropout filled with a
  constant);
* **saturated** — a run of identical samples at least ``clip_run_s`` long at the channel's own
  maximum or minimum (the amplifier's rail);
* **jump** — one sample-to-sample step above ``jump_factor`` × the larger of the recording's typical
  amplitude and the channel's own (an electrode pop, a DC shift, a digital glitch);
* **amplitude** — segment SD above ``segment_amplitude_factor`` × the recording's typical amplitude
  (a movement or stimulation artifact);
* **missing samples** — NaN or infinite values.

and each channel gets two channel-level criteria:

* **amplitude** — the channel's amplitude (the lower quartile of its segment SDs, so a seizure or a
  burst of spikes occupying less than three quarters of the recording does not raise it) above
  ``amplitude_factor`` × the recording's median channel amplitude;
* **line-noise pickup** — the channel's RMS in a ±1 Hz band around 50 and/or 60 Hz above
  ``line_factor`` × the recording's median channel, and a narrow peak (the band's power at least
  ``line_prominence`` × that of the channel's neighbouring frequencies, so broadband fast activity
  such as ictal gamma is not read as mains).

A channel is flagged when a channel-level criterion holds or when at least ``channel_fraction`` of
its segments are flagged. "The recording's typical amplitude" is the median over channels of each
channel's amplitude (above): robust while fewer than half of the channels are bad; with fewer than
about five channels the relative criteria have little to compare with.

:func:`detect_recording_artifacts` reads a (possibly lazy) :class:`~sss_viewer.io.recording.Recording`
in blocks of channels, so an hour of 128 channels never sits in memory at once.
"""

from __future__ import annotations

import logging
import math
from dataclasses import asdict, dataclass

import numpy as np
import pandas as pd

from sss_viewer._validate import check_positive_int, check_range
from sss_viewer.io.recording import Recording

logger = logging.getLogger(__name__)

LINE_FREQS = (50.0, 60.0)
"""Mains frequencies checked when the recording's ``line_freq`` is unknown."""
_LINE_BAND_HZ = (-1.0, 0.0, 1.0)
"""Offsets (Hz) of the line band from the mains frequency: a Hann-windowed 1-s frame spreads a pure
tone over ±1 Hz, and mains drifts by ±0.2 Hz."""
_LINE_FLANK_HZ = (-8.0, -7.0, -6.0, -5.0, -4.0, 4.0, 5.0, 6.0, 7.0, 8.0)
"""Offsets (Hz) of the neighbouring frequencies the line band is compared with (outside the window's
main lobe, ±2 Hz for a 1-s Hann frame)."""
_LINE_FRAME_S = 1.0
"""Frame length (s) of the line-noise spectrum: 1-Hz resolution."""
_CHANNEL_QUANTILE = 0.25
"""Quantile of a channel's segment SDs taken as its amplitude (see the module docstring)."""
_MIN_CLIP_SAMPLES = 4
"""Shortest run at the rail that counts as saturation, whatever the rate: at 173.61 Hz (the Bonn set,
12-bit) a slow wave's quantised peak holds three equal samples, while its clipped segments (at the
ADC's 2047) hold 4–7."""
DEFAULT_BLOCK_SAMPLES = 16_000_000
"""Samples (channels × time) :func:`detect_recording_artifacts` reads at once (64 MB of float32)."""

REASON_FLAT = "flat (disconnected?)"
REASON_SATURATED = "saturated"
REASON_MISSING = "missing samples (NaN/inf)"
_SEGMENT_PRIORITY = ("missing", "saturated", "flat", "amplitude", "jump")
"""When a segment meets several criteria, the first of these names it."""


@dataclass(frozen=True)
class ArtifactConfig:
    """Thresholds of :func:`detect_artifacts`; every one is relative to the recording itself.

    Parameters
    ----------
    segment_s : float
        Segment length in seconds (default 1.0): short enough that a flagged segment costs little
        signal, long enough for a stable SD. In ``[0.1, 60]``.
    amplitude_factor : float
        A channel whose amplitude exceeds this many times the recording's median channel amplitude
        is flagged (default 15). Physiological amplitudes differ a lot between contacts: grey- and
        white-matter SEEG contacts differ up to ~10×, and seizure onset on SOZ contacts raises them
        further (the real pt01 ECoG's SOZ contact AD2 stands at 7.6× by this measure, 12× by its
        median segment). An artifact contact at the amplifier's range (a ±12.7 mV square wave
        against 100–500 µV iEEG) stands at 25–250×. A flagged channel loses its ranking, so the
        factor errs on the generous side. Above 1.
    segment_amplitude_factor : float
        A segment whose SD exceeds this many times the recording's typical amplitude is flagged
        (default 50): movement and stimulation artifacts; seizure discharges reach about 10–15× the
        median channel (pt01: 15×). Above 1.
    flat_factor : float
        A segment whose SD is below this fraction of the recording's typical amplitude is flat
        (default 0.02, i.e. 50× quieter than the median channel): an amplifier's input noise is
        ~1 µV RMS against 50–150 µV of iEEG, while the quietest real contacts (white matter,
        close bipolar pairs) stay above ~0.1×. In ``(0, 1)``.
    flat_run_s : float
        A run of identical consecutive samples this long (s) makes a segment flat (default 0.1):
        ten times FieldTrip's clipping run, so coarse quantisation of a slow wave's peak does not
        produce it. Positive.
    clip_run_s : float
        A run of identical consecutive samples this long (s) at the channel's own maximum or
        minimum is saturation (default 0.010, FieldTrip's ``ft_artifact_clip`` default); at
        least 4 samples. Positive.
    jump_factor : float
        A sample-to-sample step above this many times the larger of the recording's typical
        amplitude and the channel's own is a jump (default 20). Bandlimited brain signal moves
        far less in one sample: the sharpest steps seen in clean data are ~1–8× (pt01's seizure
        1.1×, synthetic spikes resampled to 250 Hz 7.5×); white noise reaches ~7.5× over an hour.
        Above 1.
    line_factor : float
        A channel whose RMS in the ±1 Hz band around the mains frequency exceeds this many times
        the recording's median channel's has pickup (default 10, i.e. 20 dB). Above 1.
    line_prominence : float
        ...and only when that band's power is at least this many times the power the channel has
        at the neighbouring frequencies (4–8 Hz away) over the same width (default 4, 6 dB): a
        narrow mains peak, not broadband fast activity. At least 1.
    channel_fraction : float
        A channel with at least this fraction of its segments flagged is flagged as a whole
        (default 0.5). In ``(0, 1]``.
    """

    segment_s: float = 1.0
    amplitude_factor: float = 15.0
    segment_amplitude_factor: float = 50.0
    flat_factor: float = 0.02
    flat_run_s: float = 0.1
    clip_run_s: float = 0.010
    jump_factor: float = 20.0
    line_factor: float = 10.0
    line_prominence: float = 4.0
    channel_fraction: float = 0.5

    def __post_init__(self) -> None:
        for name in self.__dataclass_fields__:
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
                raise ValueError(f"Invalid ArtifactConfig {name}={value!r}: expected a finite number.")
        check_range("segment_s", self.segment_s, 0.1, 60.0)
        for name in ("amplitude_factor", "segment_amplitude_factor", "jump_factor", "line_factor"):
            check_range(name, getattr(self, name), 1.0, low_inclusive=False)
        check_range("flat_factor", self.flat_factor, 0.0, 1.0, low_inclusive=False, high_inclusive=False)
        for name in ("flat_run_s", "clip_run_s"):
            check_range(name, getattr(self, name), 0.0, low_inclusive=False)
        check_range("line_prominence", self.line_prominence, 1.0)
        check_range("channel_fraction", self.channel_fraction, 0.0, 1.0, low_inclusive=False)

    def to_dict(self) -> dict:
        """The thresholds as a plain dict (for a manifest)."""
        return asdict(self)


@dataclass
class ArtifactReport:
    """What :func:`detect_artifacts` found.

    Parameters
    ----------
    channels : DataFrame
        One row per flagged channel: ``channel, reason`` (plain words a clinician reads, e.g.
        ``"amplitude 25× the recording's median"``, ``"flat (disconnected?)"``,
        ``"60 Hz pickup 40× the recording's median"``, ``"saturated 12% of the time"``; several
        joined by ``"; "``).
    segments : DataFrame
        Flagged time spans: ``channel, start_s, end_s, reason`` in the recording's seconds,
        consecutive flagged segments of one channel with one reason merged; sorted by channel (in
        the recording's order) then time. Spans of flagged channels are listed too.
    measures : DataFrame, optional
        One row per checked channel: ``channel, amplitude_ratio`` (its amplitude over the
        recording's median channel), ``line_ratio`` (its mains-band RMS over the median
        channel's, the larger of 50/60 Hz; NaN when not measurable), ``flagged_fraction`` (of its
        segments).
    """

    channels: pd.DataFrame
    segments: pd.DataFrame
    measures: pd.DataFrame | None = None

    def channel_reasons(self) -> dict[str, str]:
        """``{channel: reason}`` of the flagged channels."""
        return dict(zip(self.channels["channel"], self.channels["reason"], strict=True))

    def window_flags(self, channel: np.ndarray, start_s: np.ndarray, end_s: np.ndarray) -> np.ndarray:
        """Why each window should be left out, or ``""`` when it is clean.

        A window of a flagged channel takes the channel's reason; otherwise the reason of the first
        flagged span of its channel it overlaps (open intervals: a window that only touches a span
        is clean). Channels the report does not know are clean.

        Parameters
        ----------
        channel : array-like of str, shape (n_windows,)
        start_s, end_s : array-like of float, shape (n_windows,)
            Window bounds in the recording's seconds.

        Returns
        -------
        flags : ndarray, shape (n_windows,), object (str)
        """
        channel = np.asarray(channel, dtype=object)
        start_s = np.asarray(start_s, dtype=np.float64)
        end_s = np.asarray(end_s, dtype=np.float64)
        if not channel.ndim == start_s.ndim == end_s.ndim == 1 or not len(channel) == len(start_s) == len(end_s):
            raise ValueError(
                f"window_flags: channel, start_s and end_s must be 1-D of one length; got shapes "
                f"{channel.shape}, {start_s.shape}, {end_s.shape}."
            )
        flags = np.full(len(channel), "", dtype=object)
        if not len(channel):
            return flags
        reasons = self.channel_reasons()
        for name, spans in self.segments.groupby("channel", sort=False):
            if name in reasons:
                continue
            rows = np.flatnonzero(channel == name)
            if not len(rows):
                continue
            spans = spans.sort_values("start_s", kind="stable")
            span_start = spans["start_s"].to_numpy(np.float64)
            span_end = spans["end_s"].to_numpy(np.float64)
            span_reason = spans["reason"].to_numpy(object)
            # spans of one channel do not overlap, so their ends are sorted too: the first span
            # ending after the window starts is the only candidate for the first overlap
            first = np.searchsorted(span_end, start_s[rows], side="right")
            ok = first < len(spans)
            hit = np.zeros(len(rows), dtype=bool)
            hit[ok] = span_start[first[ok]] < end_s[rows[ok]]
            flags[rows[hit]] = span_reason[first[hit]]
        for name, reason in reasons.items():
            flags[channel == name] = reason
        return flags

    @property
    def flagged(self) -> bool:
        """True when anything (a channel or a segment) is flagged."""
        return bool(len(self.channels) or len(self.segments))


def _segment_bounds(n_times: int, seg: int) -> np.ndarray:
    """Start samples of the segments; the last one takes the remainder (one segment when shorter)."""
    n_seg = max(1, n_times // seg)
    return np.arange(n_seg, dtype=np.int64) * seg


def _run_mask(x: np.ndarray, min_len: int, at: np.ndarray | None = None) -> np.ndarray:
    """Samples of ``x`` (1-D) inside runs of at least ``min_len`` identical values.

    Parameters
    ----------
    x : ndarray, shape (n_times,)
    min_len : int
    at : ndarray, optional
        Only runs whose value is one of these count.

    Returns
    -------
    mask : ndarray, shape (n_times,), bool
    """
    starts = np.concatenate(([0], np.flatnonzero(x[1:] != x[:-1]) + 1))
    lengths = np.diff(np.concatenate((starts, [len(x)])))
    long = lengths >= min_len
    if at is not None:
        long &= np.isin(x[starts], at)
    mask = np.zeros(len(x) + 1, dtype=np.int32)
    np.add.at(mask, starts[long], 1)
    np.add.at(mask, starts[long] + lengths[long], -1)
    return np.cumsum(mask[:-1]) > 0


@dataclass
class _BlockStats:
    """Per channel × segment statistics of a block of channels (nothing relative yet)."""

    seg_sd: np.ndarray  # (n, n_seg) float64
    seg_step: np.ndarray  # (n, n_seg) float64, largest |x[t] - x[t-1]| with t in the segment
    seg_missing: np.ndarray  # (n, n_seg) bool
    seg_rail: np.ndarray  # (n, n_seg) bool, a rail run of >= clip_run samples
    seg_flat_run: np.ndarray  # (n, n_seg) bool, a run of >= flat_run identical samples
    rail_fraction: np.ndarray  # (n,) float64, samples on a rail (a value with a long run at the extreme) / n_times
    line_band: np.ndarray  # (n, n_line) float64, mean power in the line band
    line_flank: np.ndarray  # (n, n_line) float64, flank power scaled to the band's width

    @classmethod
    def concat(cls, parts: list[_BlockStats]) -> _BlockStats:
        return cls(*(np.concatenate([getattr(p, f) for p in parts]) for f in cls.__dataclass_fields__))


def _line_dft(sfreq: float, frame: int, line_freqs: list[float]) -> tuple[np.ndarray, int]:
    """Hann-windowed DFT at the band and flank frequencies of each line frequency.

    Returns
    -------
    matrix : ndarray, shape (frame, 2 * n_line * n_offsets), float32
        Cosine columns, then sine columns; frequencies line by line, offsets in
        ``_LINE_BAND_HZ + _LINE_FLANK_HZ`` order.
    n_offsets : int
    """
    offsets = np.array(_LINE_BAND_HZ + _LINE_FLANK_HZ)
    freqs = (np.asarray(line_freqs)[:, None] + offsets[None, :]).ravel()
    t = np.arange(frame) / sfreq
    window = np.hanning(frame)
    phase = 2 * np.pi * freqs[None, :] * t[:, None]
    matrix = np.concatenate([np.cos(phase), np.sin(phase)], axis=1) * window[:, None]
    return matrix.astype(np.float32), len(offsets)


def _segment_sd(x: np.ndarray, bounds: np.ndarray) -> np.ndarray:
    """SD of each channel in each segment, shape (n, n_seg) float64.

    Segments but the last have one length (``bounds[1]``): they are a reshaped view, centred on
    their own mean before squaring (so a large DC level costs no precision in float32).
    """
    n, n_times = x.shape
    sd = np.empty((n, len(bounds)))
    if len(bounds) > 1:
        seg = int(bounds[1])
        main = x[:, : bounds[-1]].reshape(n, len(bounds) - 1, seg)
        centred = main - main.mean(axis=2, dtype=np.float64).astype(np.float32)[..., None]
        sd[:, :-1] = np.sqrt(np.einsum("ijk,ijk->ij", centred, centred).astype(np.float64) / seg)
    last = x[:, bounds[-1] :]
    sd[:, -1] = (last - last.mean(axis=1, dtype=np.float64).astype(np.float32)[:, None]).std(axis=1, dtype=np.float64)
    return sd


def _block_stats(
    x: np.ndarray, sfreq: float, bounds: np.ndarray, config: ArtifactConfig, line_freqs: list[float]
) -> _BlockStats:
    """Statistics of one block of channels, shape (n, n_times), over the segments starting at ``bounds``."""
    n, n_times = x.shape
    finite = np.isfinite(x)
    seg_missing = np.zeros((n, len(bounds)), dtype=bool)
    if not finite.all():
        # missing samples take their channel's finite mean, so that the other statistics stay finite
        seg_missing = np.logical_or.reduceat(~finite, bounds, axis=1)
        counts = finite.sum(axis=1)
        sums = np.where(finite, x, 0.0).sum(axis=1, dtype=np.float64)
        means = np.divide(sums, counts, out=np.zeros(n), where=counts > 0)
        x = np.where(finite, x, means[:, None]).astype(np.float32)
    seg_sd = _segment_sd(x, bounds)

    step = np.empty_like(x)
    step[:, 0] = 0.0
    np.subtract(x[:, 1:], x[:, :-1], out=step[:, 1:])
    np.abs(step, out=step)
    seg_step = np.maximum.reduceat(step, bounds, axis=1).astype(np.float64)
    zero_steps = np.count_nonzero(step[:, 1:] == 0, axis=1)
    del step

    seg_rail, seg_flat_run, rail_fraction = _run_stats(lambda i: x[i], zero_steps, n_times, sfreq, bounds, config)
    line_band, line_flank = _line_power(x, sfreq, line_freqs)
    return _BlockStats(seg_sd, seg_step, seg_missing, seg_rail, seg_flat_run, rail_fraction, line_band, line_flank)


def _run_stats(
    row_of, zero_steps: np.ndarray, n_times: int, sfreq: float, bounds: np.ndarray, config: ArtifactConfig
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Rails and flat runs of the channels that can hold one (enough zero steps).

    Parameters
    ----------
    row_of : callable
        ``row_of(i)`` -> ndarray, shape (n_times,), float32: channel ``i`` (called only for candidates).
    zero_steps : ndarray, shape (n,), int
        Each channel's count of one-sample steps equal to zero.
    n_times, sfreq, bounds, config
        As in :func:`_block_stats`.

    Returns
    -------
    seg_rail, seg_flat_run : ndarray, shape (n, n_seg), bool
    rail_fraction : ndarray, shape (n,), float64
    """
    n = len(zero_steps)
    clip_run = max(_MIN_CLIP_SAMPLES, math.ceil(config.clip_run_s * sfreq))
    flat_run = max(clip_run, math.ceil(config.flat_run_s * sfreq))
    seg_rail = np.zeros((n, len(bounds)), dtype=bool)
    seg_flat_run = np.zeros((n, len(bounds)), dtype=bool)
    rail_fraction = np.zeros(n)
    for i in np.flatnonzero(zero_steps >= clip_run - 1):  # only channels that can hold such a run
        row = row_of(i)
        low, high = row.min(), row.max()
        # a constant channel has no rail to be pinned against: it is flat
        rail = _run_mask(row, clip_run, at=np.array([low, high])) if high > low else np.zeros(n_times, dtype=bool)
        if rail.any():
            seg_rail[i] = np.logical_or.reduceat(rail, bounds)
            # once a rail is known, every sample on it is clipped, however short its run
            rail_fraction[i] = np.isin(row, np.unique(row[rail])).mean()
        if zero_steps[i] >= flat_run - 1:
            seg_flat_run[i] = np.logical_or.reduceat(_run_mask(row, flat_run) & ~rail, bounds)
    return seg_rail, seg_flat_run, rail_fraction


def _line_power(x: np.ndarray, sfreq: float, line_freqs: list[float]) -> tuple[np.ndarray, np.ndarray]:
    """Mean power in each mains band and its flanks over 1-s Hann frames; shapes (n, n_line) float64 (NaN: none)."""
    n, n_times = x.shape
    n_line = len(line_freqs)
    line_band = np.full((n, n_line), np.nan)
    line_flank = np.full((n, n_line), np.nan)
    frame = int(round(_LINE_FRAME_S * sfreq))
    n_frames = n_times // frame if frame else 0
    if n_line and n_frames:
        matrix, n_off = _line_dft(sfreq, frame, line_freqs)
        centre = x.mean(axis=1, dtype=np.float64).astype(np.float32)[:, None]
        frames = (x[:, : n_frames * frame] - centre).reshape(n * n_frames, frame)
        coef = frames @ matrix
        n_freq = matrix.shape[1] // 2
        power = coef[:, :n_freq].astype(np.float64) ** 2 + coef[:, n_freq:].astype(np.float64) ** 2
        power = power.reshape(n, n_frames, n_line, n_off).mean(axis=1)
        n_band = len(_LINE_BAND_HZ)
        line_band = power[..., :n_band].sum(axis=-1)
        line_flank = power[..., n_band:].mean(axis=-1) * n_band
    return line_band, line_flank


def _usable_line_freqs(sfreq: float, line_freq: float | None) -> list[float]:
    """Mains frequencies whose band and flanks lie below Nyquist."""
    if line_freq is not None:
        check_range("line_freq", float(line_freq), 0.0, low_inclusive=False)
    candidates = [float(line_freq)] if line_freq else list(LINE_FREQS)
    usable = [f for f in candidates if f + max(_LINE_FLANK_HZ) < sfreq / 2]
    if len(usable) < len(candidates):
        logger.info(
            "line-noise check skips %s Hz: above what %.6g Hz sampling shows",
            ", ".join(f"{f:g}" for f in candidates if f not in usable),
            sfreq,
        )
    return usable


def _percent(fraction: float) -> str:
    """A fraction as a percentage a reader takes in at a glance (``"12%"``, ``"0.4%"``, ``"100%"``)."""
    pct = 100.0 * fraction
    return f"{pct:.1f}%" if pct < 1 else f"{pct:.0f}%"


def _times(ratio: float) -> str:
    """A ratio as ``"25×"`` (one decimal below 10)."""
    return f"{ratio:.1f}×" if ratio < 10 else f"{ratio:.0f}×"


def _analyse(
    stats: _BlockStats,
    bounds: np.ndarray,
    n_times: int,
    sfreq: float,
    ch_names: list[str],
    line_freqs: list[float],
    config: ArtifactConfig,
) -> ArtifactReport:
    """Relative criteria on the statistics of every channel: the report."""
    n = len(ch_names)
    amplitude = np.quantile(stats.seg_sd, _CHANNEL_QUANTILE, axis=1)
    reference = float(np.median(amplitude)) if n else 0.0
    if not reference > 0:
        logger.warning(
            "artifact check: the recording's median channel amplitude is 0 (most channels flat); "
            "only flat runs, saturation and missing samples are checked"
        )
    with np.errstate(divide="ignore", invalid="ignore"):
        amplitude_ratio = amplitude / reference if reference > 0 else np.full(n, np.nan)
        segment_ratio = stats.seg_sd / reference if reference > 0 else np.full_like(stats.seg_sd, np.nan)
        jump_scale = np.maximum(reference, amplitude)[:, None]
        jump_ratio = np.where(jump_scale > 0, stats.seg_step / jump_scale, np.nan)
    tests = {
        "missing": stats.seg_missing,
        "saturated": stats.seg_rail,
        "flat": stats.seg_flat_run | (segment_ratio < config.flat_factor),
        "amplitude": segment_ratio > config.segment_amplitude_factor,
        "jump": jump_ratio > config.jump_factor,
    }
    texts = {
        "missing": REASON_MISSING,
        "saturated": REASON_SATURATED,
        "flat": REASON_FLAT,
        "amplitude": f"amplitude over {config.segment_amplitude_factor:g}× the recording's median",
        "jump": f"jump (a one-sample step over {config.jump_factor:g}× the recording's median amplitude)",
    }
    flagged = np.zeros_like(stats.seg_missing)
    reason = np.full(stats.seg_missing.shape, "", dtype=object)
    for name in reversed(_SEGMENT_PRIORITY):  # the first in priority is written last and wins
        flagged |= tests[name]
        reason[tests[name]] = texts[name]

    # line noise: of the mains frequencies where both criteria hold, the one with the larger ratio
    line_ratio = np.full(n, np.nan)
    line_hit = np.full(n, np.nan)
    line_hit_freq = np.full(n, np.nan)
    for k, freq in enumerate(line_freqs):
        band, flank = stats.line_band[:, k], stats.line_flank[:, k]
        median = float(np.median(band))
        if not median > 0:
            continue
        ratio = np.sqrt(band / median)
        line_ratio = np.fmax(line_ratio, ratio)
        hit = (ratio > config.line_factor) & (band >= config.line_prominence * flank) & ~(ratio <= line_hit)
        line_hit[hit], line_hit_freq[hit] = ratio[hit], freq

    fraction = flagged.mean(axis=1)
    channel_rows, segment_rows = [], []
    seg_end = np.concatenate((bounds[1:], [n_times]))
    for i, name in enumerate(ch_names):
        reasons = []
        if reference > 0 and np.quantile(stats.seg_sd[i], 0.9) < config.flat_factor * reference:
            # no signal in 9 of every 10 seconds (a constant line, perhaps a glitch): the contact sits at its own
            # extremes because it is dead, not because an amplifier clips it
            reason[i][reason[i] == REASON_SATURATED] = REASON_FLAT
        if reference > 0 and amplitude_ratio[i] > config.amplitude_factor:
            reasons.append(f"amplitude {_times(amplitude_ratio[i])} the recording's median")
        if np.isfinite(line_hit[i]):
            reasons.append(f"{line_hit_freq[i]:g} Hz pickup {_times(line_hit[i])} the recording's median")
        if fraction[i] >= config.channel_fraction:
            kinds = set(reason[i][flagged[i]])
            if stats.rail_fraction[i] > 0 and REASON_SATURATED in kinds:
                reasons.append(f"saturated {_percent(stats.rail_fraction[i])} of the time")
            if REASON_FLAT in kinds:
                share = np.mean(reason[i] == REASON_FLAT)
                reasons.append(REASON_FLAT if share == 1 else f"{REASON_FLAT} {_percent(share)} of the time")
            if REASON_MISSING in kinds:
                reasons.append(f"{REASON_MISSING} in {_percent(np.mean(stats.seg_missing[i]))} of the recording")
            if texts["amplitude"] in kinds and not any(r.startswith("amplitude") for r in reasons):
                share = _percent(np.mean(tests["amplitude"][i]))
                reasons.append(f"{texts['amplitude']} {share} of the time")
            if texts["jump"] in kinds:
                reasons.append(f"jumps in {_percent(np.mean(tests['jump'][i]))} of its seconds")
        if reasons:
            channel_rows.append((name, "; ".join(reasons)))
        js = np.flatnonzero(flagged[i])
        if len(js):
            # merge consecutive segments with one reason into a span
            breaks = np.flatnonzero((np.diff(js) != 1) | (reason[i, js[1:]] != reason[i, js[:-1]])) + 1
            for run in np.split(js, breaks):
                segment_rows.append((name, bounds[run[0]] / sfreq, seg_end[run[-1]] / sfreq, reason[i, run[0]]))
    channels = pd.DataFrame(channel_rows, columns=["channel", "reason"])
    segments = pd.DataFrame(segment_rows, columns=["channel", "start_s", "end_s", "reason"])
    segments = segments.astype({"start_s": np.float64, "end_s": np.float64})
    measures = pd.DataFrame(
        {
            "channel": list(ch_names),
            "amplitude_ratio": amplitude_ratio,
            "line_ratio": line_ratio,
            "flagged_fraction": fraction,
        }
    )
    return ArtifactReport(channels=channels, segments=segments, measures=measures)


def empty_report() -> ArtifactReport:
    """The report of a recording with no channel to check (empty tables with their columns)."""
    return ArtifactReport(
        channels=pd.DataFrame(columns=["channel", "reason"]),
        segments=pd.DataFrame(columns=["channel", "start_s", "end_s", "reason"]),
        measures=pd.DataFrame(columns=["channel", "amplitude_ratio", "line_ratio", "flagged_fraction"]),
    )


def _check_inputs(sfreq: float, ch_names: list[str], n_channels: int, config: ArtifactConfig | None) -> ArtifactConfig:
    sfreq = float(sfreq)
    if not math.isfinite(sfreq) or sfreq <= 0:
        raise ValueError(f"Invalid sfreq={sfreq!r}: expected a positive number of Hz.")
    if len(ch_names) != n_channels:
        raise ValueError(f"ch_names has {len(ch_names)} names but data has {n_channels} channels.")
    if config is None:
        return ArtifactConfig()
    if not isinstance(config, ArtifactConfig):
        raise ValueError(f"Invalid config={config!r}: expected an ArtifactConfig.")
    return config


def _log_report(report: ArtifactReport, label: str, n_channels: int) -> None:
    if len(report.channels):
        listed = "; ".join(f"{c}: {r}" for c, r in zip(report.channels["channel"], report.channels["reason"]))
        logger.warning(
            "%s: %d of %d channels flagged as artifact — %s", label, len(report.channels), n_channels, listed
        )
    n_spans = int((~report.segments["channel"].isin(report.channels["channel"])).sum())
    if n_spans:
        logger.info("%s: %d flagged span(s) on otherwise clean channels", label, n_spans)


def detect_artifacts(
    data: np.ndarray,
    sfreq: float,
    ch_names: list[str],
    *,
    line_freq: float | None = None,
    config: ArtifactConfig | None = None,
) -> ArtifactReport:
    """Find artifact channels and segments in an in-memory array (see the module docstring).

    Parameters
    ----------
    data : ndarray, shape (n_channels, n_times)
        Samples (µV, though only ratios matter).
    sfreq : float
        Sampling rate in Hz.
    ch_names : list of str, length n_channels
    line_freq : float, optional
        Mains frequency; both 50 and 60 Hz are checked when None. Frequencies whose neighbourhood
        lies above Nyquist are skipped.
    config : ArtifactConfig, optional

    Returns
    -------
    ArtifactReport

    Raises
    ------
    ValueError
        When ``data`` is not 2-D and non-empty, ``ch_names`` does not match it, or ``sfreq`` /
        ``line_freq`` is not positive.
    """
    data = np.asarray(data)
    if data.ndim != 2 or 0 in data.shape:
        raise ValueError(f"Invalid data of shape {data.shape}: expected a non-empty (n_channels, n_times) array.")
    config = _check_inputs(sfreq, list(ch_names), data.shape[0], config)
    sfreq = float(sfreq)
    line_freqs = _usable_line_freqs(sfreq, line_freq)
    seg = max(1, int(round(config.segment_s * sfreq)))
    bounds = _segment_bounds(data.shape[1], seg)
    per_block = max(1, DEFAULT_BLOCK_SAMPLES // data.shape[1])  # bounds the float32 temporaries
    parts = [
        _block_stats(data[lo : lo + per_block].astype(np.float32, copy=False), sfreq, bounds, config, line_freqs)
        for lo in range(0, data.shape[0], per_block)
    ]
    report = _analyse(_BlockStats.concat(parts), bounds, data.shape[1], sfreq, list(ch_names), line_freqs, config)
    _log_report(report, "recording", data.shape[0])
    return report


def detect_recording_artifacts(
    recording: Recording,
    picks: np.ndarray | None = None,
    *,
    config: ArtifactConfig | None = None,
    block_samples: int = DEFAULT_BLOCK_SAMPLES,
) -> ArtifactReport:
    """:func:`detect_artifacts` on a recording's channels, read in blocks of channels.

    Parameters
    ----------
    recording : Recording
        In memory or lazy; its ``line_freq`` chooses the mains frequency (both 50 and 60 Hz when
        unknown).
    picks : ndarray of int, optional
        Channel indices to check; default ``recording.ieeg_picks()`` (the channels a model scores).
        The recording's median channel is taken over these.
    config : ArtifactConfig, optional
    block_samples : int
        Samples (channels × time) read at once (default :data:`DEFAULT_BLOCK_SAMPLES`); at least
        one channel is read at a time.

    Returns
    -------
    ArtifactReport
        Empty tables when there is no channel to check.
    """
    picks = recording.ieeg_picks() if picks is None else np.asarray(picks, dtype=int).ravel()
    check_positive_int("block_samples", block_samples)
    names = [recording.ch_names[i] for i in picks]
    config = _check_inputs(recording.sfreq, names, len(picks), config)
    if not len(picks):
        return empty_report()
    sfreq, n_times = recording.sfreq, recording.n_times
    line_freqs = _usable_line_freqs(sfreq, recording.line_freq)
    bounds = _segment_bounds(n_times, max(1, int(round(config.segment_s * sfreq))))
    per_block = max(1, block_samples // n_times)
    parts = [
        _block_stats(recording.get_data(picks[lo : lo + per_block]), sfreq, bounds, config, line_freqs)
        for lo in range(0, len(picks), per_block)
    ]
    report = _analyse(_BlockStats.concat(parts), bounds, n_times, sfreq, names, line_freqs, config)
    _log_report(report, recording.label, len(picks))
    return report

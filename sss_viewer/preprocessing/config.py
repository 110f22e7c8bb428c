"""Preprocessing configuration: ``PreprocessConfig``, its presets and the checks of sampling rates."""

from __future__ import annotations

import dataclasses
import logging
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from sss_viewer._validate import check_option, check_positive_int, check_range

logger = logging.getLogger(__name__)


PREPROCESS_PRESETS = ("default", "paper")

SCALES = ("channel", "recording", "shaft")
"""Values of ``PreprocessConfig.scale``: what each channel's zero-mean series is divided by."""
MIN_SHAFT_CHANNELS = 3
"""Usable channels a shaft needs for its own scale under ``scale="shaft"``; fewer: the recording's scale."""


NATIVE_RATE_TOLERANCE = 0.01
"""Relative difference within which two native rates count as one (249.85 Hz is 250 Hz)."""


@dataclass(frozen=True)
class PreprocessConfig:
    """Parameters of the channel preprocessing.

    Parameters
    ----------
    target_sfreq : float or None
        Common rate (Hz) to resample every channel to, with an anti-aliasing filter. ``None`` keeps
        the native rate.
    notch : bool
        Notch the mains frequency and its harmonics below the (new) Nyquist frequency. When a
        recording's mains frequency is unknown both 50 and 60 Hz series are notched.
    notch_quality : float
        Quality factor of each IIR notch.
    highpass_hz : float or None
        Zero-phase Butterworth high-pass cut-off, or ``None``.
    pool_kernel, pool_stride : int
        1-D average pooling applied after filtering (the paper uses 24 / 12). 1 / 1 is no pooling.
    zscore : bool
        Normalise the channels: each to zero mean, then divided by the scale ``scale`` names.
        ``False``: no normalisation at all (the series stay in µV, mean included).
    scale : {"channel", "recording", "shaft"}
        What a channel's zero-mean series is divided by when ``zscore`` is True.

        ``"channel"``
            its own standard deviation (the per-channel z-score of the paper and of every model
            saved before this option): each channel comes out with unit variance, which erases
            amplitude differences between channels.
        ``"recording"``
            one robust scale per recording, the median over the recording's usable channels
            (channels excluded as NaN/inf or flat do not count) of their standard deviations after
            filtering and pooling. Channels keep their amplitude ratios (a contact at 10x the
            amplitude of the median contact comes out at SD ≈ 10) and the median channel at SD 1.
            The median, not the mean or the pooled SD, because a few channels with artefacts, a
            loose contact or a very large seizure discharge would otherwise set the scale of every
            other channel: the median moves only when half the channels do.
        ``"shaft"``
            the same median, per shaft (channels grouped by the letters before their contact
            number, ``LA1``…``LA12`` → ``LA``, vendor prefixes such as ``POL`` ignored). A shaft
            with fewer than ``MIN_SHAFT_CHANNELS`` usable channels takes the recording's scale.

        Under ``"recording"`` and ``"shaft"`` a channel's series depends on the other channels
        preprocessed with it (all good iEEG channels of the recording, in training and scoring).
    max_upsample : float
        Largest accepted ratio ``target_sfreq / sfreq``; a recording sampled slower than the model
        expects is refused instead of being interpolated (1.01 admits UMMC's 249.85 Hz for 250 Hz).
    native_sfreqs : tuple of float or None
        Only with ``target_sfreq=None``: the native rates (Hz) a model was trained on, recorded by
        training. A recording at another rate (beyond ``NATIVE_RATE_TOLERANCE``) is refused, as its
        windows would span other durations than the model learned. ``None``: not recorded (no
        model yet, or one saved before rates were recorded).
    """

    target_sfreq: float | None = 250.0
    notch: bool = True
    notch_quality: float = 30.0
    highpass_hz: float | None = 0.5
    pool_kernel: int = 1
    pool_stride: int = 1
    zscore: bool = True
    scale: str = "channel"
    max_upsample: float = 1.01
    native_sfreqs: tuple[float, ...] | None = None

    def __post_init__(self) -> None:
        if self.target_sfreq is not None:
            check_range("target_sfreq", self.target_sfreq, 0, None, low_inclusive=False)
        if self.highpass_hz is not None:
            check_range("highpass_hz", self.highpass_hz, 0, None, low_inclusive=False)
        check_positive_int("pool_kernel", self.pool_kernel)
        check_positive_int("pool_stride", self.pool_stride)
        if self.pool_stride > self.pool_kernel:
            raise ValueError(
                f"Invalid pool_stride={self.pool_stride}: must not exceed pool_kernel={self.pool_kernel} "
                "(samples would be skipped)."
            )
        check_range("notch_quality", self.notch_quality, 0, None, low_inclusive=False)
        check_range("max_upsample", self.max_upsample, 1.0, None)
        check_option("scale", self.scale, SCALES)
        if self.native_sfreqs is not None:
            object.__setattr__(self, "native_sfreqs", _check_native_sfreqs(self.native_sfreqs, self.target_sfreq))

    def to_dict(self) -> dict:
        """JSON-serialisable parameters (``native_sfreqs`` only when recorded)."""
        params = dataclasses.asdict(self)
        if self.native_sfreqs is None:
            del params["native_sfreqs"]
        else:
            params["native_sfreqs"] = list(self.native_sfreqs)
        return params

    @classmethod
    def from_dict(cls, params: dict) -> PreprocessConfig:
        """Rebuild from :meth:`to_dict` output; unknown keys are an error naming them.

        Missing keys take their defaults: a config saved before ``scale`` existed loads as
        ``scale="channel"``, which is what it was trained with.
        """
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(params) - known)
        if unknown:
            raise ValueError(f"Unknown preprocessing parameters {unknown}; known: {sorted(known)}.")
        return cls(**params)

    def resampled_sfreq(self, sfreq: float) -> float:
        """Sampling rate (Hz) after resampling, before pooling, for a recording at ``sfreq``."""
        return sfreq if self.target_sfreq is None else _resample_ratio(sfreq, self.target_sfreq)[2]

    def output_sfreq(self, sfreq: float) -> float:
        """Sampling rate (Hz) of the preprocessed series for a recording at ``sfreq``."""
        return self.resampled_sfreq(sfreq) / self.pool_stride

    def resample_ratio(self, sfreq: float) -> tuple[int, int]:
        """``(up, down)`` of the rational resampling from ``sfreq`` (``(1, 1)`` without resampling)."""
        if self.target_sfreq is None:
            return 1, 1
        up, down, _ = _resample_ratio(sfreq, self.target_sfreq)
        return up, down

    def output_length(self, n_times: int, sfreq: float) -> int:
        """Samples of the preprocessed series for a channel of ``n_times`` samples at ``sfreq``."""
        up, down = self.resample_ratio(sfreq)
        n = n_times if up == down else -(-n_times * up // down)
        if self.pool_kernel > 1 or self.pool_stride > 1:
            n = (n - self.pool_kernel) // self.pool_stride + 1 if n >= self.pool_kernel else 0
        return int(n)

    def check_sfreq(self, sfreq: float, *, what: str = "recording") -> None:
        """Raise a ValueError when a recording at ``sfreq`` cannot be preprocessed as this config's model expects.

        A resampling config refuses rates it would have to upsample; a native-rate config with
        recorded ``native_sfreqs`` refuses any other rate.
        """
        if self.target_sfreq is not None and self.target_sfreq / sfreq > self.max_upsample:
            raise ValueError(
                f"The {what} is sampled at {sfreq:g} Hz, below the model's preprocessing rate of "
                f"{self.target_sfreq:g} Hz; upsampling would invent signal. Use a model trained at "
                f"≤ {sfreq:g} Hz."
            )
        if self.target_sfreq is None and self.native_sfreqs and not _rate_in(sfreq, self.native_sfreqs):
            trained = " and ".join(f"{r:g}" for r in self.native_sfreqs)
            raise ValueError(
                f"The {what} is sampled at {sfreq:g} Hz, but the model keeps native rates and was trained on "
                f"{trained} Hz recordings: its windows would span {self.native_sfreqs[0] / sfreq:.3g}x the "
                f"seconds it learned. Use a model trained at {sfreq:g} Hz, or one trained at a common rate "
                "(sss-viewer train --target-sfreq R)."
            )


def _rate_in(sfreq: float, rates) -> bool:
    """True when ``sfreq`` is one of ``rates`` within ``NATIVE_RATE_TOLERANCE``."""
    return any(abs(sfreq - r) <= NATIVE_RATE_TOLERANCE * r for r in rates)


def _check_native_sfreqs(rates, target_sfreq: float | None) -> tuple[float, ...]:
    """``native_sfreqs`` as a sorted tuple of positive finite floats, or a ValueError naming it."""
    if target_sfreq is not None:
        raise ValueError(
            f"Invalid native_sfreqs={rates!r}: only a native-rate config (target_sfreq=None) records native rates."
        )
    try:
        values = () if any(isinstance(r, bool | str) for r in rates) else tuple(sorted(float(r) for r in rates))
    except (TypeError, ValueError):
        values = ()
    if not values or any(not np.isfinite(r) or r <= 0 for r in values):
        raise ValueError(f"Invalid native_sfreqs={rates!r}: expected a list of positive sampling rates in Hz.")
    return values


def native_rates(rates, *, allow_mixed: bool = False, what: str = "training recordings") -> tuple[float, ...]:
    """The distinct native rates of a native-rate model's training data; refuse several unless allowed.

    Parameters
    ----------
    rates : iterable of float
        Sampling rate (Hz) of every recording trained on.
    allow_mixed : bool
        Accept several rates (logged as a warning): the paper's protocol pools native rates.
    what : str
        What the rates belong to, for messages.

    Returns
    -------
    rates : tuple of float
        One rate per group of rates within ``NATIVE_RATE_TOLERANCE`` (the group's first), sorted.

    Raises
    ------
    ValueError
        Several rates and ``allow_mixed`` is False: windows of one length in samples would span
        different durations (and frequencies) in different recordings.
    """
    counts: dict[float, int] = {}
    for rate in sorted(float(r) for r in rates):
        group = next((g for g in counts if _rate_in(rate, (g,))), rate)
        counts[group] = counts.get(group, 0) + 1
    if len(counts) > 1:
        listing = ", ".join(f"{r:g} Hz ({n})" for r, n in counts.items())
        if not allow_mixed:
            raise ValueError(
                f"The {what} keep their native rates (target_sfreq None, e.g. --target-sfreq 0) but are sampled at "
                f"{listing}: windows of one length in samples would span {max(counts) / min(counts):.3g}x different "
                "durations. Resample them to one rate (sss-viewer train --target-sfreq R) or train on one rate."
            )
        logger.warning(
            "The %s keep their native rates, which differ: %s; windows span different durations.", what, listing
        )
    return tuple(counts)


def preprocess_preset(name: str, **overrides) -> PreprocessConfig:
    """Return the named preset (``"default"`` or ``"paper"``) with optional parameter overrides.

    Parameters
    ----------
    name : {"default", "paper"}
        ``"default"``: resample to 250 Hz, notch, high-pass 0.5 Hz, per-channel z-score. ``"paper"``: the paper's
        App. B, average pooling 24/12 on the native rate and the z-score (no resampling or filters).
    **overrides
        :class:`PreprocessConfig` fields to change (validated by it).

    Returns
    -------
    PreprocessConfig

    Raises
    ------
    ValueError
        ``name`` is not a preset, or an override's value is invalid.
    TypeError
        An override is not a :class:`PreprocessConfig` field.
    """
    check_option("preprocess preset", name, PREPROCESS_PRESETS)
    if name == "paper":
        base = PreprocessConfig(target_sfreq=None, notch=False, highpass_hz=None, pool_kernel=24, pool_stride=12)
    else:
        base = PreprocessConfig()
    return dataclasses.replace(base, **overrides)


def _resample_ratio(sfreq: float, target: float) -> tuple[int, int, float]:
    """Rational ``up/down`` approximating ``target / sfreq`` and the exact output rate it gives."""
    ratio = Fraction(target / sfreq).limit_denominator(20000)
    up, down = ratio.numerator, ratio.denominator
    return up, down, sfreq * up / down

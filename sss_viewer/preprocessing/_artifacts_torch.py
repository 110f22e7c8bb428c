"""The artifact check's statistics on a torch device, from channels already read there.

When scoring runs on a GPU the raw channels are read into it once
(:class:`~sss_viewer.preprocessing._device_series.DeviceSeriesBuilder`). :class:`DeviceArtifactCheck`
takes each block it reads and computes the check's per-segment statistics there (segment SDs,
largest one-sample steps, missing samples, mains-band power), so the file is not read a second time
and the arithmetic runs on the device. Rails and flat runs are looked for on the host, for the few
channels that can hold one (enough zero steps), with the CPU check's own code; the relative criteria
and the report are the CPU check's (:func:`~sss_viewer.preprocessing.artifacts.detect_recording_artifacts`).

Agreement with the CPU check: the same channels, segments and reasons on any recording whose
statistics do not sit on a threshold within float rounding; the measures (amplitude and line
ratios) agree to ~1e-5 relative (this module sums in float64 where the CPU check sums float32 in
places). Tested on recordings with each kind of artifact (tests/preprocessing/test_artifacts_torch.py).

Internal to the stage: not part of the public API.
"""

from __future__ import annotations

import logging

import numpy as np
import torch

from sss_viewer.io.recording import Recording
from sss_viewer.preprocessing.artifacts import (
    _LINE_BAND_HZ,
    _LINE_FRAME_S,
    ArtifactConfig,
    ArtifactReport,
    _analyse,
    _BlockStats,
    _check_inputs,
    _line_dft,
    _log_report,
    _run_stats,
    _segment_bounds,
    _usable_line_freqs,
    empty_report,
)

logger = logging.getLogger(__name__)

_BLOCK_SAMPLES = 1 << 27
"""Channel samples (channels × time) whose float64 statistics are computed at once (1 GiB of float64)."""


def _segments(x: torch.Tensor, bounds: np.ndarray) -> tuple[torch.Tensor, torch.Tensor]:
    """The equal segments as a (n, n_seg - 1, seg) view and the last (longer) segment, shape (n, rest)."""
    n = x.shape[0]
    if len(bounds) > 1:
        seg = int(bounds[1])
        main = x[:, : int(bounds[-1])].reshape(n, len(bounds) - 1, seg)
    else:
        main = x[:, :0].reshape(n, 0, 1)
    return main, x[:, int(bounds[-1]) :]


def block_stats_torch(
    x: torch.Tensor, sfreq: float, bounds: np.ndarray, config: ArtifactConfig, line_freqs: list[float]
) -> _BlockStats:
    """The statistics of :func:`~sss_viewer.preprocessing.artifacts._block_stats`, computed on ``x``'s device.

    Parameters
    ----------
    x : Tensor, shape (n, n_times), float32
        Raw channels (µV).
    sfreq : float
    bounds : ndarray, shape (n_seg,), int64
        Segment starts (:func:`~sss_viewer.preprocessing.artifacts._segment_bounds`).
    config : ArtifactConfig
    line_freqs : list of float
        Mains frequencies to measure.

    Returns
    -------
    _BlockStats
        NumPy arrays on the host, as the CPU statistics.
    """
    n, n_times = x.shape
    finite = torch.isfinite(x)
    seg_missing = np.zeros((n, len(bounds)), dtype=bool)
    if not bool(finite.all()):
        main, last = _segments(~finite, bounds)
        missing = torch.cat([main.any(dim=2), last.any(dim=1, keepdim=True)], dim=1)
        seg_missing = missing.cpu().numpy()
        counts = finite.sum(dim=1)
        sums = torch.where(finite, x, 0.0).sum(dim=1, dtype=torch.float64)
        means = torch.where(counts > 0, sums / counts.clamp(min=1), 0.0)
        x = torch.where(finite, x, means[:, None].float())
    xd = x.double()
    main, last = _segments(xd, bounds)
    sd_main = (main - main.mean(dim=2, keepdim=True)).square().mean(dim=2).sqrt()
    sd_last = (last - last.mean(dim=1, keepdim=True)).square().mean(dim=1, keepdim=True).sqrt()
    seg_sd = torch.cat([sd_main, sd_last], dim=1).cpu().numpy()

    step = torch.zeros_like(x)
    step[:, 1:] = (x[:, 1:] - x[:, :-1]).abs()
    main, last = _segments(step, bounds)
    seg_step = torch.cat([main.amax(dim=2), last.amax(dim=1, keepdim=True)], dim=1).double().cpu().numpy()
    zero_steps = (step[:, 1:] == 0).sum(dim=1).cpu().numpy()
    del step

    seg_rail, seg_flat_run, rail_fraction = _run_stats(
        lambda i: x[i].cpu().numpy(), zero_steps, n_times, sfreq, bounds, config
    )
    line_band, line_flank = _line_power_torch(xd, sfreq, line_freqs)
    return _BlockStats(seg_sd, seg_step, seg_missing, seg_rail, seg_flat_run, rail_fraction, line_band, line_flank)


def _line_power_torch(xd: torch.Tensor, sfreq: float, line_freqs: list[float]) -> tuple[np.ndarray, np.ndarray]:
    """:func:`~sss_viewer.preprocessing.artifacts._line_power` in float64 on ``xd``'s device; shapes (n, n_line)."""
    n, n_times = xd.shape
    n_line = len(line_freqs)
    line_band = np.full((n, n_line), np.nan)
    line_flank = np.full((n, n_line), np.nan)
    frame = int(round(_LINE_FRAME_S * sfreq))
    n_frames = n_times // frame if frame else 0
    if not (n_line and n_frames):
        return line_band, line_flank
    matrix, n_off = _line_dft(sfreq, frame, line_freqs)
    m = torch.from_numpy(matrix.astype(np.float64)).to(xd.device)
    frames = (xd[:, : n_frames * frame] - xd.mean(dim=1, keepdim=True)).reshape(n * n_frames, frame)
    coef = frames @ m
    n_freq = m.shape[1] // 2
    power = (coef[:, :n_freq].square() + coef[:, n_freq:].square()).reshape(n, n_frames, n_line, n_off).mean(dim=1)
    n_band = len(_LINE_BAND_HZ)
    return power[..., :n_band].sum(dim=-1).cpu().numpy(), (power[..., n_band:].mean(dim=-1) * n_band).cpu().numpy()


class DeviceArtifactCheck:
    """The artifact check of a recording, fed with the blocks of raw channels a device reader reads.

    Parameters
    ----------
    recording : Recording
        Its ``line_freq`` chooses the mains frequency (both 50 and 60 Hz when unknown).
    picks : ndarray of int, optional
        Channels to check; default ``recording.ieeg_picks()``, as the CPU check.
    config : ArtifactConfig, optional

    Notes
    -----
    :meth:`add` keeps the statistics of every picked channel it is given; :meth:`report` gives the
    CPU check's report once every picked channel has been added, and None while one is missing (the
    caller then runs the CPU check).
    """

    def __init__(self, recording: Recording, picks: np.ndarray | None = None, config: ArtifactConfig | None = None):
        picks = recording.ieeg_picks() if picks is None else np.asarray(picks, dtype=int).ravel()
        self.recording = recording
        self.names = [recording.ch_names[i] for i in picks]
        self.config = _check_inputs(recording.sfreq, self.names, len(picks), config)
        self.sfreq = float(recording.sfreq)
        self.line_freqs = _usable_line_freqs(self.sfreq, recording.line_freq)
        self.bounds = _segment_bounds(recording.n_times, max(1, int(round(self.config.segment_s * self.sfreq))))
        self._rows: dict[str, _BlockStats] = {}

    def __repr__(self) -> str:
        return f"DeviceArtifactCheck({self.recording.label!r}, {len(self._rows)}/{len(self.names)} channels)"

    def add(self, block: torch.Tensor, names: list[str]) -> None:
        """Compute the statistics of the picked channels among ``names``.

        Parameters
        ----------
        block : Tensor, shape (len(names), n_times), float32
            Raw channels (µV) on any device, the whole recording's length.
        names : list of str
            The channel of each row.
        """
        wanted = set(self.names)
        rows = [r for r, name in enumerate(names) if name in wanted]
        if not rows or block.shape[1] != self.recording.n_times:
            return
        per_block = max(1, _BLOCK_SAMPLES // max(1, block.shape[1]))
        for lo in range(0, len(rows), per_block):
            part = rows[lo : lo + per_block]
            index = torch.as_tensor(part, device=block.device)
            stats = block_stats_torch(
                block.index_select(0, index), self.sfreq, self.bounds, self.config, self.line_freqs
            )
            for k, r in enumerate(part):
                self._rows[names[r]] = _BlockStats(
                    *(getattr(stats, f)[k : k + 1] for f in _BlockStats.__dataclass_fields__)
                )

    def report(self) -> ArtifactReport | None:
        """The report, as :func:`~sss_viewer.preprocessing.artifacts.detect_recording_artifacts` gives it.

        Returns
        -------
        ArtifactReport or None
            None while a picked channel has not been added.
        """
        if not self.names:
            return empty_report()
        missing = [name for name in self.names if name not in self._rows]
        if missing:
            logger.info("device artifact check: %d channel(s) not read on the device (%s…)", len(missing), missing[0])
            return None
        stats = _BlockStats.concat([self._rows[name] for name in self.names])
        n_times = self.recording.n_times
        report = _analyse(stats, self.bounds, n_times, self.sfreq, self.names, self.line_freqs, self.config)
        _log_report(report, self.recording.label, len(self.names))
        return report

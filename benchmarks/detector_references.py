"""Store the output of maintained spike and HFO detectors on deterministic signals, for the tests.

``tests/biomarkers/test_biomarker_detectors.py`` compares this project's detectors
(:func:`sss_viewer.biomarkers.spikes.detect_spikes`, Janča et al. 2015, and
:func:`sss_viewer.biomarkers.hfo.detect_hfos`, Staba et al. 2002) with maintained implementations.
Those cannot live in the project's environment (epycom 0.3 pins ``numpy < 1.27``; mne-hfo 0.2 needs a
scikit-learn patch), so this script runs them, in an environment of their own, on the signals of
``tests/detector_signals.py`` (pure NumPy, bit-for-bit reproducible) and writes their detections to
``tests/data/detector_references.json``; the tests rebuild the signals, check their SHA-256 against
the stored ones, run this project's detectors and compare. It does not import ``sss_viewer``.

Set-up (once) and regeneration, from the repository root::

    python3 -m venv /tmp/refenv
    /tmp/refenv/bin/pip install "epycom==0.3" "mne-hfo==0.2" "numpy==1.26.4"
    /tmp/refenv/bin/python benchmarks/detector_references.py            # writes the JSON
    /tmp/refenv/bin/python benchmarks/detector_references.py --check    # recompute, compare, write nothing

The references and their parameters:

* **Spikes** — ``epycom.event_detection.spike.janca_detector.detect_spikes_janca`` (the Python port of
  Janča's detector), published defaults: band 10–60 Hz, ``k1 = k2 = 3.65``, ``k3 = 0``, polyspike
  union 0.12 s, working rate 200 Hz, ``line_freq = 50``; each channel separately. Stored: the
  ``event_peak`` of each detection (its sample index at the signal's rate) / ``sfreq``, in s. epycom
  truncates the rate to an integer (173.61 → 173 Hz, i.e. it works on the samples as they are),
  and drops detections within 1 s of either end.
* **HFOs** — ``mne_hfo.RMSDetector`` (mne-hfo 0.2), Staba's RMS threshold stage: FIR band-pass
  (``mne.filter.filter_data``), RMS in a 3-ms window (``win_size = round(0.003 × sfreq)``) moved by
  one sample (``overlap = 1 / win_size``), threshold mean + 5 SD of the channel's RMS; every run of
  windows above it is one event. It has no minimum duration, no 10-ms merge and no peak count (the
  later stages of Staba's method). Bands 80–250 Hz (ripples; signals at ≥ 1 kHz) and 250–500 Hz
  (fast ripples; 2 kHz). Stored: ``[start, stop]`` in s. epycom's ``detect_hfo_rms`` is the same
  windowed RMS threshold (mne-hfo's was ported from it) but takes an already filtered signal, so
  mne-hfo, which filters too, is the one used. mne-hfo 0.2 calls
  ``BaseEstimator._validate_data``, which scikit-learn 1.6 removed: it is patched to
  ``np.asarray(X, float)`` here.

Times are rounded to 1 ms. The JSON also records the packages' versions, the parameters, the
command and each input's SHA-256.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import platform
import sys
import warnings
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from tests.detector_signals import SIGNALS, build, signal_sha256

logger = logging.getLogger("detector_references")

DEFAULT_OUTPUT = REPO / "tests" / "data" / "detector_references.json"
COMMAND = "/tmp/refenv/bin/python benchmarks/detector_references.py"
LINE_FREQ = 50
HFO_BANDS = {"ripples": (80.0, 250.0, 1000.0), "fast_ripples": (250.0, 500.0, 2000.0)}
"""Band (Hz) and the lowest sampling rate it is run at."""

JANCA_PARAMETERS = {
    "bandwidth": [10, 60],
    "line_freq": LINE_FREQ,
    "k1": 3.65,
    "k2": 3.65,
    "k3": 0,
    "polyspike_union_time": 0.12,
    "decimation": 200,
    "buffering": 300,
    "discharge_tol": 0.005,
}
RMS_PARAMETERS = {
    "threshold": 5,
    "win_size": "round(0.003 * sfreq) samples (3 ms)",
    "overlap": "1 / win_size (a step of one sample)",
    "n_jobs": 1,
}


def janca_spikes(data: np.ndarray, sfreq: float) -> list[list[float]]:
    """epycom's Janča detector on each channel.

    Parameters
    ----------
    data : ndarray, shape (n_channels, n_times)
        Signal (µV).
    sfreq : float
        Sampling rate (Hz).

    Returns
    -------
    list of list of float
        Per channel, the spike peak times (s), rounded to 1 ms, ascending.
    """
    from epycom.event_detection.spike.janca_detector import detect_spikes_janca

    params = {k: tuple(v) if isinstance(v, list) else v for k, v in JANCA_PARAMETERS.items()}
    out = []
    for ch in data:
        result = detect_spikes_janca(ch, fs=sfreq, **params)
        out.append(sorted(round(float(r[0]) / sfreq, 3) for r in result))
    return out


def _patch_mne_hfo() -> None:
    """Let mne-hfo 0.2 run with scikit-learn ≥ 1.6 (``BaseEstimator._validate_data`` was removed)."""
    from mne_hfo.base import Detector

    def _validate_data(self, X, y=None, **kwargs):
        X = np.asarray(X, dtype=float)
        return X if y is None else (X, y)

    Detector._validate_data = _validate_data


def rms_hfos(data: np.ndarray, sfreq: float, band: tuple[float, float]) -> list[list[list[float]]]:
    """mne-hfo's RMSDetector (Staba's RMS threshold stage) on every channel.

    Parameters
    ----------
    data : ndarray, shape (n_channels, n_times)
        Signal (µV).
    sfreq : float
        Sampling rate (Hz).
    band : (low_hz, high_hz)
        Band-pass before the RMS.

    Returns
    -------
    list of list of [start_s, end_s]
        Per channel, the events (s), rounded to 1 ms, ordered by start.
    """
    from mne_hfo import RMSDetector

    _patch_mne_hfo()
    win = max(2, round(0.003 * sfreq))
    detector = RMSDetector(
        sfreq=sfreq, threshold=RMS_PARAMETERS["threshold"], win_size=win, overlap=1 / win, filter_band=band, n_jobs=1
    )
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        detector.fit(data)
    for w in {str(w.message) for w in caught}:
        logger.info("mne-hfo warned: %s", w)
    out = []
    for events in detector.chs_hfos_list:
        ev = np.asarray(events, dtype=float).reshape(-1, 2) / sfreq
        out.append(sorted([round(float(s), 3), round(float(e), 3)] for s, e in ev))
    return out


def _version(package: str) -> str | None:
    """The installed version of ``package``, or None."""
    try:
        return version(package)
    except PackageNotFoundError:
        return None


def compute() -> dict:
    """Build every test signal, run the references on it and collect the results.

    Returns
    -------
    dict
        The content of the JSON file (see the module docstring).
    """
    signals, spikes = {}, {}
    hfos: dict[str, dict] = {key: {} for key in HFO_BANDS}
    for name, spec in SIGNALS.items():
        data, truth = build(name)
        signals[name] = {"sfreq": spec.sfreq, "shape": list(data.shape), "sha256": signal_sha256(data)}
        logger.info(
            "%s: %s at %g Hz; injected spikes %s, ripples %s, fast ripples %s",
            name,
            data.shape,
            spec.sfreq,
            [len(t) for t in truth["spikes"]],
            [len(t) for t in truth["ripples"]],
            [len(t) for t in truth["fast_ripples"]],
        )
        spikes[name] = janca_spikes(data, spec.sfreq)
        logger.info("  epycom Janča: %s spikes per channel", [len(s) for s in spikes[name]])
        for key, (low, high, min_sfreq) in HFO_BANDS.items():
            if spec.sfreq >= min_sfreq:
                hfos[key][name] = rms_hfos(data, spec.sfreq, (low, high))
                logger.info(
                    "  mne-hfo RMS %g-%g Hz: %s events per channel", low, high, [len(e) for e in hfos[key][name]]
                )

    references = {
        "epycom_janca_spikes": {
            "package": "epycom",
            "version": _version("epycom"),
            "function": "epycom.event_detection.spike.janca_detector.detect_spikes_janca",
            "parameters": JANCA_PARAMETERS,
            "output": "per signal, per channel: spike peak times (s; event_peak / sfreq), rounded to 1 ms",
            "detections": spikes,
        }
    }
    for key, (low, high, _) in HFO_BANDS.items():
        references[f"mne_hfo_rms_{key}"] = {
            "package": "mne-hfo",
            "version": _version("mne-hfo"),
            "function": "mne_hfo.RMSDetector(...).fit(data).chs_hfos_list",
            "parameters": {**RMS_PARAMETERS, "filter_band": [low, high]},
            "output": "per signal, per channel: [start_s, end_s] of each event, rounded to 1 ms",
            "detections": hfos[key],
        }
    return {
        "description": (
            "Detections of maintained reference implementations (epycom's Janča spike detector, mne-hfo's "
            "RMSDetector) on the deterministic signals of tests/detector_signals.py; read by "
            "tests/biomarkers/test_biomarker_detectors.py. Generated by benchmarks/detector_references.py (see its docstring)."
        ),
        "command": COMMAND,
        "environment": {
            "python": platform.python_version(),
            **{p: _version(p) for p in ("numpy", "scipy", "mne", "scikit-learn", "epycom", "mne-hfo")},
        },
        "signals": signals,
        "references": references,
    }


def to_json(obj, indent: int = 0) -> str:
    """JSON with nested dicts indented and each list of numbers (or of number pairs) on one line.

    Parameters
    ----------
    obj : dict, list, str, float, int or None
        What to write.
    indent : int
        Current indentation (spaces).

    Returns
    -------
    str
        The JSON text.
    """
    pad, inner = " " * indent, " " * (indent + 2)
    if isinstance(obj, dict):
        if not obj:
            return "{}"
        items = [f"{inner}{json.dumps(k)}: {to_json(v, indent + 2)}" for k, v in obj.items()]
        return "{\n" + ",\n".join(items) + f"\n{pad}}}"
    channels = isinstance(obj, list) and obj and all(isinstance(v, list) for v in obj)
    if channels and all(not v or not isinstance(v[0], list) for v in obj):  # one line per channel
        return "[\n" + ",\n".join(inner + json.dumps(v, separators=(",", ":")) for v in obj) + f"\n{pad}]"
    return json.dumps(obj, separators=(",", ":") if isinstance(obj, list) else None)


def main(argv: list[str] | None = None) -> int:
    """Command-line entry point.

    Parameters
    ----------
    argv : list of str, optional
        Arguments (default: ``sys.argv[1:]``).

    Returns
    -------
    int
        Exit status: 0, or 1 when ``--check`` finds the stored file differs.
    """
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--output", type=Path, default=DEFAULT_OUTPUT, help="JSON file to write (%(default)s)")
    parser.add_argument(
        "--check", action="store_true", help="recompute and compare with --output instead of writing it"
    )
    parser.add_argument("-v", "--verbose", action="store_true", help="log debug messages")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.DEBUG if args.verbose else logging.INFO, format="%(message)s")
    os.environ.setdefault("TQDM_DISABLE", "1")
    logging.getLogger("mne").setLevel(logging.ERROR)
    for module in ("epycom", "mne_hfo"):
        try:
            __import__(module)
        except ImportError:
            parser.error(f"{module} is not importable from {sys.executable}; see the set-up in this script's docstring")

    result = compute()
    text = to_json(result) + "\n"
    if args.check:
        stored = json.loads(args.output.read_text())
        ok = stored["signals"] == result["signals"] and stored["references"] == result["references"]
        logger.info("%s %s the recomputed references", args.output, "matches" if ok else "DIFFERS FROM")
        return 0 if ok else 1
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(text)
    logger.info("wrote %s (%d bytes)", args.output, len(text))
    return 0


if __name__ == "__main__":
    sys.exit(main())

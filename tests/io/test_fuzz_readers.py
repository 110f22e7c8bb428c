"""Property-based fuzzing of the readers' header parsing (issue 14, point 16).

Hypothesis writes BrainVision headers, BIDS ``_channels.tsv`` / ``_events.tsv`` sidecars and labels
files with mutated values, missing lines and odd text, and reads them with the real readers. The
only outcomes allowed: a valid Recording (or table), or a clear error of the project — a
``ValueError`` (``RecordingReadError``) or ``FileNotFoundError`` whose message names the file.
Never a traceback from a library. Bounded: 60 examples per test, no deadline.
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import numpy as np
import pytest

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from sss_viewer.io.bids import read_bids_run  # noqa: E402
from sss_viewer.io.cohort import read_labels  # noqa: E402
from sss_viewer.io.recording import Recording  # noqa: E402
from sss_viewer.synth.bids import write_recording_bids  # noqa: E402
from tests.fixtures.recordings import toy_recording  # noqa: E402

FUZZ = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow], derandomize=True)

_TEXT = st.text(alphabet=st.sampled_from("0123456789.-+eE abcXYZ,;:=_\t/\\[]\"'ñµ\x00"), max_size=12)
_VALUES = st.one_of(
    _TEXT,
    st.integers(-(2**40), 2**40).map(str),
    st.floats(allow_nan=True, allow_infinity=True).map(repr),
    st.sampled_from(
        ["", "0", "-1", "nan", "inf", "1e400", "IEEE_FLOAT_32", "INT_16", "MULTIPLEXED", "VECTORIZED", "ASCII"]
    ),
)


@pytest.fixture(scope="module")
def base_run(tmp_path_factory) -> Path:
    """A small BIDS BrainVision run (4 channels, 12 s at 250 Hz) with its sidecars."""
    return write_recording_bids(
        toy_recording("fuzz", 1, n_channels=4, duration_s=12.0), tmp_path_factory.mktemp("fuzz")
    )


def _outcome(read, *names: str) -> None:
    """``read()`` gives a valid result, or a project error whose message names one of ``names``."""
    try:
        result = read()
    except (ValueError, FileNotFoundError) as err:
        message = str(err)
        assert any(name in message for name in names), f"{type(err).__name__} names no file: {message}"
        return
    if isinstance(result, Recording):
        assert result.n_channels >= 1 and result.n_times >= 1 and result.sfreq > 0
        assert len(result.ch_names) == result.n_channels
        np.asarray(result.data[:, :10])  # the samples can be read


def _copy(base: Path, folder: Path) -> Path:
    shutil.copytree(base.parent, folder, dirs_exist_ok=True)
    return folder / base.name


_HEADER_KEYS = [
    "NumberOfChannels",
    "SamplingInterval",
    "DataPoints",
    "BinaryFormat",
    "DataOrientation",
    "DataFormat",
    "DataFile",
    "MarkerFile",
    "DataType",
    "Ch1",
    "Ch2",
    "Ch4",
    "Ch5",
    "Codepage",
    "Resolution / Unit",
]


@FUZZ
@given(
    edits=st.lists(st.tuples(st.sampled_from(_HEADER_KEYS), st.one_of(st.none(), _VALUES)), min_size=1, max_size=4),
    extra=st.lists(_TEXT, max_size=2),
)
def test_fuzz_vhdr_header(base_run, edits, extra):
    with tempfile.TemporaryDirectory() as tmp:
        vhdr = _copy(base_run, Path(tmp))
        lines = vhdr.read_text(encoding="utf-8").splitlines()
        for key, value in edits:
            hits = [i for i, line in enumerate(lines) if line.partition("=")[0].strip() == key]
            if value is None:
                lines = [line for i, line in enumerate(lines) if i not in hits]
            elif hits:
                lines[hits[0]] = f"{key}={value}"
            else:
                lines.insert(len(lines) // 2, f"{key}={value}")
        lines[2:2] = extra
        vhdr.write_text("\n".join(lines) + "\n", encoding="utf-8")
        _outcome(lambda: read_bids_run(vhdr), vhdr.name)


_TYPES = st.one_of(st.sampled_from(["SEEG", "ECOG", "EEG", "EKG", "MISC", "TRIG", "n/a", "", "seeg"]), _TEXT)


@FUZZ
@given(
    rows=st.lists(
        st.tuples(
            st.one_of(st.sampled_from(["A1", "A2", "A3", "A4"]), _TEXT),
            _TYPES,
            st.sampled_from(["good", "bad", "n/a", "", "GOOD", "x"]),
        ),
        max_size=6,
    ),
    columns=st.sampled_from(
        [("name", "type", "status"), ("name", "type"), ("type", "status"), ("name",), ("Name", "type", "status")]
    ),
)
def test_fuzz_channels_tsv(base_run, rows, columns):
    with tempfile.TemporaryDirectory() as tmp:
        vhdr = _copy(base_run, Path(tmp))
        channels = next(Path(tmp).glob("*_channels.tsv"))
        body = ["\t".join(columns)] + ["\t".join(row[: len(columns)]) for row in rows]
        channels.write_text("\n".join(body) + "\n", encoding="utf-8")
        _outcome(lambda: read_bids_run(vhdr), channels.name, vhdr.name)


@FUZZ
@given(
    rows=st.lists(
        st.tuples(
            _VALUES,
            _VALUES,
            st.one_of(st.sampled_from(["sz onset", "sz offset", "n/a", "onset", "SZ EVENT # 1"]), _TEXT),
        ),
        max_size=5,
    ),
    columns=st.sampled_from(
        [("onset", "duration", "trial_type"), ("onset", "trial_type"), ("onset", "duration"), ("trial_type",)]
    ),
)
def test_fuzz_events_tsv(base_run, rows, columns):
    with tempfile.TemporaryDirectory() as tmp:
        vhdr = _copy(base_run, Path(tmp))
        events = next(Path(tmp).glob("*_events.tsv"))
        body = ["\t".join(columns)] + ["\t".join(row[: len(columns)]) for row in rows]
        events.write_text("\n".join(body) + "\n", encoding="utf-8")
        _outcome(lambda: read_bids_run(vhdr), events.name, vhdr.name)


@FUZZ
@given(
    header=st.sampled_from(
        ["subject\tchannel\tsoz", "subject,channel,soz", "subject\tchannel", "channel\tsoz\tsubject", "", "a\tb\tc"]
    ),
    rows=st.lists(
        st.tuples(
            st.one_of(st.sampled_from(["pt1", "sub-pt1", "n/a", ""]), _TEXT),
            st.one_of(st.sampled_from(["A1", "LPT07", "POL G11"]), _TEXT),
            st.one_of(st.sampled_from(["0", "1", "yes", "n/a", "", "2", "-1", "1.0", "true"]), _TEXT),
        ),
        max_size=5,
    ),
    suffix=st.sampled_from([".tsv", ".csv"]),
)
def test_fuzz_labels_file(header, rows, suffix):
    sep = "," if "," in header else "\t"
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / f"labels{suffix}"
        path.write_text("\n".join([header] + [sep.join(row) for row in rows]) + "\n", encoding="utf-8")
        _outcome(lambda: read_labels(path), path.name)

"""Reading recordings (MNE formats, cohort directories) and generating the synthetic cohort."""

from sss_viewer.io.cohort import load_cohort, load_data, read_abnormal_intervals, read_labels
from sss_viewer.io.readers import SUPPORTED_FORMATS, RecordingReadError, read_recording
from sss_viewer.io.synthetic import SynthConfig, generate_cohort, synthesise_recording

__all__ = [
    "SUPPORTED_FORMATS",
    "RecordingReadError",
    "SynthConfig",
    "generate_cohort",
    "load_cohort",
    "load_data",
    "read_abnormal_intervals",
    "read_labels",
    "read_recording",
    "synthesise_recording",
]

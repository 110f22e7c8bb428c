"""Reading recordings (MNE formats, BIDS datasets, cohort directories), SOZ labels and seizure events."""

from sss_viewer.io.bids import load_bids_cohort, read_bids_run, summarise_bids
from sss_viewer.io.cohort import (
    load_cohort,
    load_data,
    load_recording,
    read_abnormal_intervals,
    read_labels,
)
from sss_viewer.io.readers import SUPPORTED_FORMATS, RecordingReadError, read_recording
from sss_viewer.io.seizure_events import (
    SeizureMarkers,
    classify_marker,
    find_seizure_markers,
    read_seizure_markers,
)
from sss_viewer.io.soz_labels import (
    expand_contacts,
    match_soz,
    normalise_subject_id,
    read_clinical_summary,
    read_soz_table,
    write_clinical_summary,
)

__all__ = [
    "SUPPORTED_FORMATS",
    "RecordingReadError",
    "SeizureMarkers",
    "classify_marker",
    "expand_contacts",
    "find_seizure_markers",
    "load_bids_cohort",
    "load_cohort",
    "load_data",
    "load_recording",
    "match_soz",
    "normalise_subject_id",
    "read_abnormal_intervals",
    "read_bids_run",
    "read_clinical_summary",
    "read_labels",
    "read_recording",
    "read_seizure_markers",
    "read_soz_table",
    "summarise_bids",
    "write_clinical_summary",
]

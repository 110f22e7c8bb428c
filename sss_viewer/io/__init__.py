"""Reading recordings (MNE formats, BIDS datasets, cohort directories), SOZ labels and seizure events."""

from sss_viewer._lazy import attach

_PUBLIC = {
    "sss_viewer.io.recording": ("Event", "Recording"),
    "sss_viewer.io.readers": ("SUPPORTED_FORMATS", "RecordingReadError", "read_recording"),
    "sss_viewer.io.bids": ("is_bids_root", "load_bids_cohort", "read_bids_run", "summarise_bids"),
    "sss_viewer.io.cohort": (
        "load_cohort",
        "load_data",
        "load_recording",
        "read_abnormal_intervals",
        "read_labels",
        "soz_from_table",
    ),
    "sss_viewer.io.bonn": ("is_bonn", "load_bonn"),
    "sss_viewer.io.seizure_events": (
        "SeizureMarkers",
        "classify_marker",
        "find_seizure_markers",
        "read_seizure_markers",
    ),
    "sss_viewer.io.soz_labels": (
        "expand_contacts",
        "match_soz",
        "normalise_subject_id",
        "read_clinical_summary",
        "read_soz_table",
        "write_clinical_summary",
    ),
    "sss_viewer.io.viewer_labels": ("ViewerLabelsError", "apply_viewer_labels"),
    "sss_viewer.io.tables": ("TableError", "read_table"),
    "sss_viewer.io.annotation_model": ("AnnotationSet", "Edit", "make_marker"),
    "sss_viewer.io.annotation_merge": ("Conflict", "merge_annotations"),
    "sss_viewer.io.annotation_store": (
        "AnnotationFileError",
        "SyncResult",
        "load_annotations",
        "read_annotations",
        "read_log",
        "save_annotations",
        "sync_annotations",
    ),
    "sss_viewer.io.annotation_location": ("SidecarLocation", "locate_sidecars"),
}
"""The public names, by the module that defines them; each is imported on first use (:mod:`sss_viewer._lazy`)."""

__getattr__, __dir__, __all__ = attach(__name__, _PUBLIC)

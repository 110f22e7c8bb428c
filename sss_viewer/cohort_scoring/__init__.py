"""Scoring a cohort on Dask: one task per recording, resumable, with a cohort and a patient summary.

``sss-viewer score MODEL ROOT --out DIR`` for a BIDS root or a cohort folder. The client plans
(:mod:`~sss_viewer.cohort_scoring._plan`: which recordings, how a worker opens each), checks the
output folder (:mod:`~sss_viewer.cohort_scoring.outputs`, :mod:`~sss_viewer.cohort_scoring._digests`:
what is already done, what was made with other inputs), sends the model to the workers once and
submits one task per recording (:mod:`~sss_viewer.cohort_scoring.run`,
:mod:`~sss_viewer.cohort_scoring._task`, on a client from :mod:`~sss_viewer.cohort_scoring.cluster`),
then writes the cohort and patient tables (:mod:`~sss_viewer.cohort_scoring._summary`).
"""

from sss_viewer._lazy import attach

_PUBLIC = {
    "sss_viewer.cohort_scoring.run": ("CohortOptions", "CohortPlan", "CohortReport", "prepare_cohort", "run_cohort"),
    "sss_viewer.cohort_scoring.cluster": ("dask_client",),
    "sss_viewer.cohort_scoring.outputs": ("is_cohort_output",),
}
"""The public names, by the module that defines them; each is imported on first use (:mod:`sss_viewer._lazy`)."""

__getattr__, __dir__, __all__ = attach(__name__, _PUBLIC)

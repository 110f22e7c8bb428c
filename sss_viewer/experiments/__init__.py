"""The paper's comparison: protocols (Table 1, Table 2, App. A ablations), a resumable runner, tables."""

from sss_viewer.experiments.protocols import MODELS, PROTOCOLS, RunSpec, plan_runs, split_for_run
from sss_viewer.experiments.runner import PRESETS, run_experiment
from sss_viewer.experiments.tables import markdown_tables

__all__ = ["MODELS", "PRESETS", "PROTOCOLS", "RunSpec", "markdown_tables", "plan_runs", "run_experiment", "split_for_run"]

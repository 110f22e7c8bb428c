"""The paper's comparison: protocols (Table 1, Table 2, App. A ablations), a resumable runner, tables."""

from sss_viewer._lazy import attach

_PUBLIC = {
    "sss_viewer.experiments.protocols": (
        "MODELS",
        "PROTOCOLS",
        "RunSpec",
        "check_models",
        "ensemble_members",
        "plan_runs",
        "split_for_run",
    ),
    "sss_viewer.experiments.runner": (
        "PRESETS",
        "ExperimentPreset",
        "collect_results",
        "run_experiment",
        "sss_run_config",
    ),
    "sss_viewer.experiments.tables": ("markdown_tables",),
    "sss_viewer.experiments.paired": ("cost_summary", "load_many", "markdown_comparison", "paired_differences"),
    "sss_viewer.experiments.memory": ("check_fits_in_memory",),
}
"""The public names, by the module that defines them; each is imported on first use (:mod:`sss_viewer._lazy`)."""

__getattr__, __dir__, __all__ = attach(__name__, _PUBLIC)

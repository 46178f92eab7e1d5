"""The reproduction pipeline's logic, which the Snakemake workflow only calls.

- :mod:`tcca_core.pipeline.config`: the configuration check that runs before any job
  (``workflow/rules/common.smk``), from the registry's and the data sets' facts;
- :mod:`tcca_core.pipeline.plan`: the run's plan built from the checked
  configuration, which the rules look their paths and parameters up in, and the jobs'
  parameters (canonical: no default values);
- :mod:`tcca_core.pipeline.jobs`: one function per job (prepare a data set or skip
  it, draw a setting's splits, run a fit job, gather, build a table, the summary,
  REPRODUCTION.md); each script in
  ``workflow/scripts/`` is logging set-up plus one call.

Names are imported on first use: the configuration check runs in every Snakemake
process and needs neither pandas nor the estimators.
"""

from __future__ import annotations

from .._lazy import lazy_attributes

__all__ = [
    "ConfigError",
    "build_table",
    "check_config",
    "check_schema",
    "draw_splits",
    "gather_fits",
    "prepare_data",
    "run_fit_job",
    "run_location",
    "start_logging",
    "write_reproduction",
    "write_summary",
]

_HOME = {
    **dict.fromkeys(
        ("ConfigError", "check_config", "check_schema", "run_location"), ".config"
    ),
    **dict.fromkeys(
        (
            "build_table",
            "draw_splits",
            "gather_fits",
            "prepare_data",
            "run_fit_job",
            "start_logging",
            "write_reproduction",
            "write_summary",
        ),
        ".jobs",
    ),
}


__getattr__, __dir__ = lazy_attributes(globals(), _HOME)

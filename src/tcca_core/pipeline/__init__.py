"""The reproduction pipeline's logic, which the Snakemake workflow only calls.

- :mod:`tcca_core.pipeline.config`: the configuration check that runs before any job
  (``workflow/rules/common.smk``), from the registry's and the data sets' facts; its
  steps in :mod:`~tcca_core.pipeline.config_schema` (the files and the JSON schema),
  :mod:`~tcca_core.pipeline.config_settings` (each setting's methods, r grid and
  views) and :mod:`~tcca_core.pipeline.locations` (where a run writes, the folders
  it may not use);
- :mod:`tcca_core.pipeline.plan`: the run's plan built from the checked
  configuration, which the rules look their paths and parameters up in, and the jobs'
  parameters (canonical: no default values);
- :mod:`tcca_core.pipeline.jobs`: one function per job, by kind in
  :mod:`~tcca_core.pipeline.data_job` (prepare a data set or skip it),
  :mod:`~tcca_core.pipeline.fit_jobs` (draw a setting's splits, run a fit job,
  gather) and :mod:`~tcca_core.pipeline.report_jobs` (build a table, the summary,
  REPRODUCTION.md); each script in ``workflow/scripts/`` is logging set-up
  (:func:`~tcca_core.pipeline.jobs.start_logging`) plus one call.

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
    "ConfigError": ".config_schema",
    "check_schema": ".config_schema",
    "check_config": ".config",
    "run_location": ".locations",
    "prepare_data": ".data_job",
    **dict.fromkeys(("draw_splits", "gather_fits", "run_fit_job"), ".fit_jobs"),
    **dict.fromkeys(
        ("build_table", "write_reproduction", "write_summary"), ".report_jobs"
    ),
    "start_logging": ".jobs",
}


__getattr__, __dir__ = lazy_attributes(globals(), _HOME)

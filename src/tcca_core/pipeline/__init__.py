"""The reproduction pipeline's logic, which the Snakemake workflow only calls.

- :mod:`tcca_core.pipeline.config`: the configuration check that runs before any job
  (``workflow/rules/common.smk``), from the registry's and the data sets' facts;
- :mod:`tcca_core.pipeline.jobs`: one function per job (prepare a data set or skip
  it, draw a setting's splits, run a fit job, gather, build a table, the summary,
  REPRODUCTION.md); each script in
  ``workflow/scripts/`` is logging set-up plus one call.

Names are imported on first use: the configuration check runs in every Snakemake
process and needs neither pandas nor the estimators.
"""

from __future__ import annotations

from importlib import import_module
from typing import Any

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


def __getattr__(name: str) -> Any:
    """Import ``name`` from the module that defines it (on first use)."""
    try:
        home = _HOME[name]
    except KeyError:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}") from None
    value = getattr(import_module(home, __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    """Public names and the submodules."""
    return sorted({*globals(), *__all__})

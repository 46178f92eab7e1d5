"""The run's summary.json: every table number, with the run's provenance."""

from tcca_core.pipeline import start_logging, write_summary

start_logging(snakemake.log[0], snakemake.rule)  # noqa: F821
write_summary(
    list(snakemake.input.tables),  # noqa: F821
    snakemake.output.summary,  # noqa: F821
    config=snakemake.params.config,  # noqa: F821
    workflow_dir=snakemake.params.workflow_dir,  # noqa: F821
    run=snakemake.params.run,  # noqa: F821
    skipped=snakemake.params.skipped,  # noqa: F821
    statuses=list(snakemake.input.statuses),  # noqa: F821
)

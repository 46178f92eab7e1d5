"""REPRODUCTION.md (or a reduced run's own reproduction file) from the run's
summary.json and the written investigations."""

from tcca_core.pipeline import start_logging, write_reproduction

start_logging(snakemake.log[0], snakemake.rule)  # noqa: F821
write_reproduction(
    snakemake.input.summary,  # noqa: F821
    snakemake.input.investigations,  # noqa: F821
    snakemake.output[0],  # noqa: F821
    root=snakemake.params.root,  # noqa: F821
    missing=snakemake.params.missing,  # noqa: F821
    tables=snakemake.params.tables,  # noqa: F821
    figures=snakemake.params.figures,  # noqa: F821
)

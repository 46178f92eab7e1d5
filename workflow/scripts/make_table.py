"""One table: accuracy in both readings (CSV, Markdown, LaTeX), the cost tables, the
figures and the table's JSON record (tcca_core.pipeline.build_table)."""

from tcca_core.pipeline import build_table, start_logging
from tcca_core.reporting import machine_text

start_logging(snakemake.log[0], snakemake.rule)  # noqa: F821
machine = snakemake.params.machine  # noqa: F821
build_table(
    list(snakemake.input.runs),  # noqa: F821
    snakemake.params.jobs,  # noqa: F821
    snakemake.params.table,  # noqa: F821
    dict(snakemake.output.items()),  # noqa: F821
    machine=machine_text(machine) if machine else None,
)

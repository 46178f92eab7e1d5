"""One data set fetched, verified and prepared, or skipped with one line
(tcca_core.pipeline.prepare_data); its status in this run is the rule's output."""

import sys

from tcca_core.pipeline import prepare_data, start_logging

config = snakemake.config  # noqa: F821
# the log takes the job's logging; the terminal keeps the one-line outcome and the
# download progress bars
start_logging(snakemake.log[0], snakemake.rule, keep_stderr=True)  # noqa: F821
sys.exit(
    prepare_data(
        snakemake.wildcards.dataset,  # noqa: F821
        snakemake.output.status,  # noqa: F821
        data_root=config.get("data_root", "data"),
        mirror=config.get("mirror"),
        offline=config.get("offline", False),
        strict=bool(config.get("strict") or config.get("skip_unavailable") is False),
    )
)

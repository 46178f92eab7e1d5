"""The at-a-glance figure from the run's summary.json (and, for the published run,
the equal-tuning investigation's data)."""

import json
from pathlib import Path

from tcca_core.pipeline import start_logging
from tcca_core.reporting import plot_at_a_glance

start_logging(snakemake.log[0], snakemake.rule)  # noqa: F821
summary = json.loads(Path(snakemake.input.summary).read_text())  # noqa: F821
equal_path = snakemake.input.get("equal_tuning")  # noqa: F821
equal = json.loads(Path(equal_path).read_text()) if equal_path else None
plot_at_a_glance(
    summary,
    equal,
    [snakemake.output.png, snakemake.output.pdf],  # noqa: F821
)

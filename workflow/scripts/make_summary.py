"""results/summary.json: every table number, with the run's provenance."""

import json
from pathlib import Path

from _common import start_logging

from tcca_core import reporting

log = start_logging(snakemake)  # noqa: F821
tables = [json.loads(Path(f).read_text()) for f in snakemake.input.tables]  # noqa: F821
threads = sorted({str(t["threads"]) for t in tables if t.get("threads") is not None})
prov = reporting.provenance(
    snakemake.params.config,  # noqa: F821
    repo=snakemake.params.workflow_dir,  # noqa: F821
    threads=threads[0] if len(threads) == 1 else threads,
)
summary = reporting.build_summary(tables, prov)
out = Path(snakemake.output.summary)  # noqa: F821
out.write_text(json.dumps(summary, indent=2, sort_keys=True) + "\n")
log.info("summary of %d tables written", len(tables))

"""REPRODUCTION.md from results/summary.json and the written investigations."""

import json
from pathlib import Path

from _common import start_logging

from tcca_core import reproduction

log = start_logging(snakemake)  # noqa: F821
inp, out = snakemake.input, snakemake.output  # noqa: F821
summary = json.loads(Path(inp.summary).read_text())
notes = reproduction.include_files(
    Path(inp.investigations).read_text(),
    Path(snakemake.params.root),  # noqa: F821
)
text = reproduction.build(
    summary,
    investigations=notes,
    missing=snakemake.params.missing,  # noqa: F821
)
tmp = Path(str(out[0]) + ".tmp")
tmp.write_text(text)
tmp.replace(out[0])
log.info(
    "REPRODUCTION.md written (%d deviations)", len(reproduction.deviations(summary))
)

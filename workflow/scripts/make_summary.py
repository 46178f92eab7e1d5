"""The run's summary.json: every table number, with the run's provenance.

A run that writes the published results checks again that the tree is a clean git
checkout (the workflow checked before its first job; the tree may have changed in
the hour since), and again once the summary is written, so that a published
summary always records ``"dirty": false`` and its commit (config/README.md, Clean
provenance). A failed job's summary.json is removed by Snakemake.
"""

import sys
from pathlib import Path

from tcca_core.pipeline import start_logging, write_summary
from tcca_core.reporting.provenance import publish_problem, publishes

start_logging(snakemake.log[0], snakemake.rule)  # noqa: F821
repo = snakemake.params.workflow_dir  # noqa: F821
results = Path(snakemake.output.summary).parent  # noqa: F821


def refuse(problem: str) -> None:
    """Stop the job: the line on the terminal (stderr is the job's log) and a
    traceback in the log."""
    print(f"Error in rule summary: {problem}", file=sys.__stderr__)
    raise RuntimeError(problem)


problem = publish_problem(repo, results)
if problem:
    refuse(problem)
summary = write_summary(
    list(snakemake.input.tables),  # noqa: F821
    snakemake.output.summary,  # noqa: F821
    config=snakemake.params.config,  # noqa: F821
    workflow_dir=repo,
    run=snakemake.params.run,  # noqa: F821
    skipped=snakemake.params.skipped,  # noqa: F821
    statuses=list(snakemake.input.statuses),  # noqa: F821
)
git = summary["provenance"]["git"]
if publishes(repo, results) and (git["dirty"] is not False or not git["commit"]):
    refuse(
        f"the working tree changed while the summary was written ({git}): "
        f"{publish_problem(repo, results) or 'rerun the summary'}"
    )

# Named targets: one per data set (`snakemake --cores N ads`), one per table
# (`snakemake --cores N table_ads`), and `full` (every data set, available or not; used
# for the dry run of the paper's whole grid). They run nothing themselves. Unlike the
# default target they do not leave out a data set that cannot be obtained: its jobs
# fail, naming why. And `check_published`: every number of this run's summary.json
# and tables (and, for the published results, of the investigations' outputs)
# recomputed from its committed rows; it builds nothing, so it runs in a fresh clone.

for _dataset in PLAN.datasets:

    rule:
        name:
            _dataset
        input:
            PLAN.table_outputs(PLAN.tables_of([_dataset])),


for _table in PLAN.tables:

    rule:
        name:
            f"table_{_table}"
        input:
            PLAN.table_outputs([_table]),


rule full:
    input:
        PLAN.table_outputs(PLAN.tables),


# no input: it checks the committed files as they are, and never rebuilds them
rule check_published:
    log:
        f"{LOGS}/check_published.log",
    localrule: True
    params:
        results=RESULTS,
        # the investigations' outputs read the repository's own published results
        investigations=(
            str(REPO / "investigations")
            if Path(RESULTS).resolve() == (REPO / "results").resolve()
            else None
        ),
    message:
        f"Recomputing every number of {RESULTS} from its committed rows"
    run:
        from tcca_core.pipeline.published import check_or_raise

        check_or_raise(params.results, params.investigations, log[0])


# no input: it refits a fixed set of small fits at the library installed here and
# compares them with the release's committed rows (docs/release.md)
rule sentinel:
    log:
        f"{LOGS}/sentinel.log",
    localrule: True
    params:
        repo=str(REPO),
    message:
        "Refitting the sentinel set: is this library number-neutral to the release?"
    run:
        from snakemake.exceptions import WorkflowError
        from tcca_core.pipeline.release import main

        with open(log[0], "w") as stream:
            if main(["--repo", params.repo], progress=stream):
                raise WorkflowError(f"the sentinel could not run: see {log[0]}")

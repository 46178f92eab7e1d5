# Named targets: one per data set (`snakemake --cores N ads`), one per table
# (`snakemake --cores N table_ads`), and `full` (every data set, available or not; used
# for the dry run of the paper's whole grid). They run nothing themselves. Unlike the
# default target they do not leave out a data set that cannot be obtained: its jobs
# fail, naming why.

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

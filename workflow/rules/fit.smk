# Splits, the fit jobs (one per dataset x setting x method, looping over the splits;
# or per split, or per grid point: `fit_grain`, config/README.md; each looping over
# r), the per-setting gather of the fit results, and the per-setting bundle of every
# fit row and benchmark that the published results commit (rows/, results/README.md).
# A fit job's {split} is its split label: all, 0, 1, ... or all.p03 (grid point 3).
# Paths and parameters come from the run's plan (PLAN, common.smk); the jobs' logic is
# in tcca_core.pipeline.jobs (draw_splits, run_fit_job, gather_fits) and
# tcca_core.pipeline.rows (write_rows).

from tcca_core.pipeline.rows import BENCHMARKS as ROWS_BENCHMARKS
from tcca_core.pipeline.rows import ROWS


# bundling reads and writes a few MB: no job of its own on a cluster
localrules:
    rows,


rule splits:
    input:
        data=PLAN.status("{dataset}"),
    output:
        splits=f"{RESULTS}/splits/{{dataset}}/{{setting}}.json",
    log:
        f"{LOGS}/splits/{{dataset}}/{{setting}}.log",
    benchmark:
        f"{RESULTS}/benchmarks/splits/{{dataset}}/{{setting}}.tsv"
    conda:
        "../envs/tcca.yaml"
    params:
        cfg=by_wildcards(PLAN.split_params),
    message:
        "Drawing {params.cfg[n_splits]} labeled/validation/test splits for {wildcards.dataset}/{wildcards.setting}"
    script:
        "../scripts/make_splits.py"


rule fit:
    input:
        unpack(by_wildcards(PLAN.data_inputs)),
        splits=rules.splits.output.splits,
        # after the setting whose subspace it shares: read from the fit cache
        after=by_wildcards(PLAN.fit_after),
    output:
        fit=f"{RESULTS}/{FIT}",
    log:
        f"{LOGS}/fit/{{dataset}}/{{setting}}/{{method}}/split{{split}}.log",
    benchmark:
        f"{RESULTS}/{FIT_BENCHMARK}"
    conda:
        "../envs/tcca.yaml"
    params:
        cfg=by_wildcards(PLAN.fit_params),
    message:
        "Fitting {wildcards.method} on {wildcards.dataset}/{wildcards.setting}, split(s) {wildcards.split}, over the r grid"
    script:
        "../scripts/fit.py"


rule gather:
    input:
        fits=by_wildcards(PLAN.setting_fits),
    output:
        runs=f"{RESULTS}/runs/{{dataset}}/{{setting}}.csv",
    log:
        f"{LOGS}/gather/{{dataset}}/{{setting}}.log",
    benchmark:
        f"{RESULTS}/benchmarks/gather/{{dataset}}/{{setting}}.tsv"
    message:
        "Gathering the fits of {wildcards.dataset}/{wildcards.setting}"
    run:
        from tcca_core.pipeline import gather_fits

        gather_fits(input.fits, output.runs, log[0])


rule rows:
    input:
        fits=by_wildcards(PLAN.setting_fits),
        # the fit jobs' whole-job time and RSS (the cost tables')
        benchmarks=lambda w: [
            job["benchmark"] for job in PLAN.fit_jobs(w.dataset, w.setting)
        ],
    output:
        rows=f"{RESULTS}/{ROWS}",
        benchmarks=f"{RESULTS}/{ROWS_BENCHMARKS}",
    log:
        f"{LOGS}/rows/{{dataset}}/{{setting}}.log",
    benchmark:
        f"{RESULTS}/benchmarks/rows/{{dataset}}/{{setting}}.tsv"
    message:
        "Bundling the fit rows of {wildcards.dataset}/{wildcards.setting} (committed with the results)"
    run:
        from tcca_core._io import atomic_write_text
        from tcca_core.pipeline.rows import write_rows

        n = write_rows(
            input.fits,
            output.rows,
            benchmarks=input.benchmarks,
            benchmarks_out=output.benchmarks,
        )
        atomic_write_text(log[0], f"{n} rows from {len(input.fits)} fit files\n")

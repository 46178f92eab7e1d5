# Splits, one fit job per dataset x setting x method x split (looping over r inside),
# and the per-setting gather of the fit results. Paths and parameters come from the
# run's plan (PLAN, common.smk); the jobs' logic is in tcca_core.pipeline.jobs
# (draw_splits, run_fit_job, gather_fits).


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

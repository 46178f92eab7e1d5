# Splits, one fit job per dataset x setting x method x split (looping over r inside),
# and the per-setting gather of the fit results. The jobs' logic is in
# tcca_core.pipeline.jobs (draw_splits, run_fit_job, gather_fits).


rule splits:
    input:
        data=dataset_input,
    output:
        splits=f"{RESULTS}/splits/{{dataset}}/{{setting}}.json",
    log:
        f"{LOGS}/splits/{{dataset}}/{{setting}}.log",
    benchmark:
        f"{RESULTS}/benchmarks/splits/{{dataset}}/{{setting}}.tsv"
    conda:
        "../envs/tcca.yaml"
    params:
        cfg=split_params,
    message:
        "Drawing {params.cfg[n_splits]} labeled/validation/test splits for {wildcards.dataset}/{wildcards.setting}"
    script:
        "../scripts/make_splits.py"


rule fit:
    input:
        unpack(data_inputs),
        splits=rules.splits.output.splits,
    output:
        fit=FIT,
    log:
        f"{LOGS}/fit/{{dataset}}/{{setting}}/{{method}}/split{{split}}.log",
    benchmark:
        FIT_BENCHMARK
    conda:
        "../envs/tcca.yaml"
    params:
        cfg=fit_params,
    message:
        "Fitting {wildcards.method} on {wildcards.dataset}/{wildcards.setting}, split(s) {wildcards.split}, over the r grid"
    script:
        "../scripts/fit.py"


rule gather:
    input:
        fits=setting_fits,
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

# The at-a-glance figure: every cell of the paper's tables that has a paper number,
# our reading (A) with its 95 % t-interval against the paper's mean +- 2 std, under the
# paper's protocol (this run's summary) and, for the published run only, under equal
# tuning (the investigation's data, investigations/results/equal_tuning.json: it
# refits the published cells, so it says nothing of a reduced run's).
# tcca_core.reporting.plot_at_a_glance draws it.


# one small figure: run where the summary is, never submitted to a cluster
localrules:
    glance,


rule glance:
    input:
        unpack(glance_inputs),  # common.smk
    output:
        png=report(
            f"{RESULTS}/figures/at_a_glance.png",
            caption="../report/glance.rst",
            category="2. Figures",
            labels={"table": "all", "figure": "every cell at a glance"},
        ),
        pdf=f"{RESULTS}/figures/at_a_glance.pdf",
    log:
        f"{LOGS}/glance/glance.log",
    benchmark:
        f"{RESULTS}/benchmarks/glance/glance.tsv"
    conda:
        "../envs/tcca.yaml"
    message:
        "Drawing every cell at a glance: ours against the paper's"
    script:
        "../scripts/make_glance.py"

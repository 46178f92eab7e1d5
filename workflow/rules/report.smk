# Per table: accuracy tables (both readings), cost tables, figures, an HTML page of the
# tables for the report, and a JSON record; then the machine-readable summary of every
# table, and the reproduction file. Every path is under this run's folder RESULTS
# (common.smk): results/ for the full configuration, results/<name>/ for any other;
# what each job is given comes from the run's plan (PLAN).

import os

REPO = Path(
    workflow.basedir
).parent  # the notes and the git commit are the repository's


rule table:
    input:
        runs=by_wildcards(PLAN.table_runs),
        benchmarks=by_wildcards(PLAN.table_benchmarks),
        # not read by the table: its settings' rows (rule rows), committed with it
        rows=lambda w: [
            PLAN.path(template, dataset=PLAN.table_dataset(w.table), setting=setting)
            for setting in PLAN.table_settings(w.table)[1]
            for template in (ROWS, ROWS_BENCHMARKS)
        ],
    output:
        csv=f"{RESULTS}/tables/{{table}}.csv",
        md=f"{RESULTS}/tables/{{table}}.md",
        tex=f"{RESULTS}/tables/{{table}}.tex",
        csv_best_r=f"{RESULTS}/tables/{{table}}_best_r.csv",
        md_best_r=f"{RESULTS}/tables/{{table}}_best_r.md",
        tex_best_r=f"{RESULTS}/tables/{{table}}_best_r.tex",
        json=f"{RESULTS}/tables/{{table}}.json",
        cost=f"{RESULTS}/tables/{{table}}_cost.csv",
        cost_md=f"{RESULTS}/tables/{{table}}_cost.md",
        cost_tex=f"{RESULTS}/tables/{{table}}_cost.tex",
        cost_by_r=report(
            f"{RESULTS}/tables/{{table}}_cost_by_r.csv",
            caption="../report/cost_by_r.rst",
            category="3. Downloads (CSV)",
            labels={"table": "{table}", "file": "cost across r"},
        ),
        accuracy_png=report(
            f"{RESULTS}/figures/{{table}}_accuracy.png",
            caption="../report/accuracy_figure.rst",
            category="2. Figures",
            labels={"table": "{table}", "figure": "accuracy vs r"},
        ),
        accuracy_pdf=f"{RESULTS}/figures/{{table}}_accuracy.pdf",
        cost_png=report(
            f"{RESULTS}/figures/{{table}}_cost.png",
            caption="../report/cost_figure.rst",
            category="2. Figures",
            labels={"table": "{table}", "figure": "time and memory vs r"},
        ),
        cost_pdf=f"{RESULTS}/figures/{{table}}_cost.pdf",
        # every table of this one, inline: reading (A) first, then (B), then cost
        html=report(
            f"{RESULTS}/report/{{table}}.html",
            caption="../report/table.rst",
            category="1. Tables",
            labels={"table": "{table}"},
        ),
    log:
        f"{LOGS}/table/{{table}}.log",
    benchmark:
        f"{RESULTS}/benchmarks/table/{{table}}.tsv"
    conda:
        "../envs/tcca.yaml"
    params:
        table=by_wildcards(PLAN.table_params),
        jobs=by_wildcards(PLAN.table_jobs),
        # where the fits ran, if not here (config key machine)
        machine=PLAN.config.get("machine"),
    message:
        "Building table {wildcards.table} (accuracy, cost) and its figures"
    script:
        "../scripts/make_table.py"


rule summary:
    input:
        unpack(summary_inputs),
    output:
        summary=report(
            PLAN.summary,
            caption="../report/summary.rst",
            category="3. Downloads (CSV)",
            labels={"table": "all", "file": "summary.json"},
        ),
    log:
        f"{LOGS}/summary/summary.log",
    benchmark:
        f"{RESULTS}/benchmarks/summary/summary.tsv"
    conda:
        "../envs/tcca.yaml"
    params:
        config=PLAN.provenance_config,
        workflow_dir=str(REPO),
        run=RUN,
        skipped=PLAN.skipped(data_routes()),
    message:
        f"Writing {PLAN.summary} (every table number and its provenance)"
    script:
        "../scripts/make_summary.py"


rule reproduction:
    input:
        summary=PLAN.summary,
        # the repository's notes, also when --directory points elsewhere
        investigations=str(REPO / "docs" / "investigations.md"),
        # not read: the file shows it (section "At a glance")
        glance=f"{RESULTS}/figures/at_a_glance.png",
    output:
        # REPRODUCTION.md only from the full configuration; any other run writes its
        # own file in its folder
        RUN["reproduction"],
    log:
        f"{LOGS}/reproduction/reproduction.log",
    benchmark:
        f"{RESULTS}/benchmarks/reproduction/reproduction.tsv"
    conda:
        "../envs/tcca.yaml"
    params:
        missing=PLAN.missing_tables(PLAN.skipped(data_routes())),
        tables={t: PLAN.table_dataset(t) for t in PLAN.tables},
        # the notes' includes are relative to the repository, two folders above them
        # (a function of the input: --lint wants no path prefix written out)
        root=lambda w, input: os.path.dirname(os.path.dirname(input.investigations)),
        # the figures' folder, relative to the reproduction file (a function of the
        # files: --lint wants no path prefix written out)
        figures=lambda w, input, output: os.path.relpath(
            os.path.dirname(input.glance), os.path.dirname(output[0]) or "."
        ),
    message:
        f"Writing {RUN['reproduction']} (our tables beside the paper's, its claims checked)"
    script:
        "../scripts/make_reproduction.py"

# Per table: accuracy tables (both readings), cost tables, figures and a JSON record;
# then the machine-readable summary of every table.


rule table:
    input:
        runs=table_runs,
        benchmarks=table_benchmarks,
    output:
        csv=report(
            "results/tables/{table}.csv",
            caption="../report/table.rst",
            category="Accuracy tables",
            labels={"table": "{table}", "reading": "validation-selected (A)"},
        ),
        md="results/tables/{table}.md",
        tex="results/tables/{table}.tex",
        csv_best_r=report(
            "results/tables/{table}_best_r.csv",
            caption="../report/table_best_r.rst",
            category="Accuracy tables",
            labels={"table": "{table}", "reading": "best r on test (B)"},
        ),
        md_best_r="results/tables/{table}_best_r.md",
        tex_best_r="results/tables/{table}_best_r.tex",
        json="results/tables/{table}.json",
        cost=report(
            "results/tables/{table}_cost.csv",
            caption="../report/cost_table.rst",
            category="Cost tables",
            labels={"table": "{table}", "kind": "at the selected r"},
        ),
        cost_md="results/tables/{table}_cost.md",
        cost_tex="results/tables/{table}_cost.tex",
        cost_by_r=report(
            "results/tables/{table}_cost_by_r.csv",
            caption="../report/cost_by_r.rst",
            category="Cost tables",
            labels={"table": "{table}", "kind": "across r"},
        ),
        accuracy_png=report(
            "results/figures/{table}_accuracy.png",
            caption="../report/accuracy_figure.rst",
            category="Figures",
            labels={"table": "{table}", "figure": "accuracy vs r"},
        ),
        accuracy_pdf="results/figures/{table}_accuracy.pdf",
        cost_png=report(
            "results/figures/{table}_cost.png",
            caption="../report/cost_figure.rst",
            category="Figures",
            labels={"table": "{table}", "figure": "time and memory vs r"},
        ),
        cost_pdf="results/figures/{table}_cost.pdf",
    log:
        "logs/table/{table}.log",
    benchmark:
        "results/benchmarks/table/{table}.tsv"
    conda:
        "../envs/tcca.yaml"
    params:
        table=table_params,
        jobs=table_job_params,
    message:
        "Building table {wildcards.table} (accuracy, cost) and its figures"
    script:
        "../scripts/make_table.py"


rule summary:
    input:
        tables=summary_inputs,
    output:
        summary=report(
            "results/summary.json",
            caption="../report/summary.rst",
            category="Summary",
        ),
    log:
        "logs/summary/summary.log",
    benchmark:
        "results/benchmarks/summary/summary.tsv"
    conda:
        "../envs/tcca.yaml"
    params:
        config=config,
        workflow_dir=workflow.basedir,
    message:
        "Writing results/summary.json (every table number and its provenance)"
    script:
        "../scripts/make_summary.py"


rule reproduction:
    input:
        summary=rules.summary.output.summary,
        # the repository's notes, also when --directory points elsewhere
        investigations=os.path.join(workflow.basedir, "docs", "investigations.md"),
    output:
        "REPRODUCTION.md",
    log:
        "logs/reproduction/reproduction.log",
    benchmark:
        "results/benchmarks/reproduction/reproduction.tsv"
    conda:
        "../envs/tcca.yaml"
    params:
        missing=missing_tables(),
        # includes are relative to the repository: two folders above the notes
        root=lambda w, input: os.path.dirname(os.path.dirname(input.investigations)),
    message:
        "Writing REPRODUCTION.md (our tables beside the paper's, its claims checked)"
    script:
        "../scripts/make_reproduction.py"

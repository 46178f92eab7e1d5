"""One table: accuracy in both readings (CSV, Markdown, LaTeX), the cost tables, the
figures (accuracy, time and memory against r) and the table's JSON record. The logic
is in tcca_core.reporting."""

import json
from pathlib import Path

import pandas as pd
from _common import start_logging

from tcca_core import reporting

log = start_logging(snakemake)  # noqa: F821
inp, out = snakemake.input, snakemake.output  # noqa: F821
spec = snakemake.params.table  # noqa: F821
name, title, columns = spec["name"], spec["title"], spec["columns"]
paper, same_as = spec.get("paper"), spec["same_as"]

runs = pd.concat([pd.read_csv(f) for f in inp.runs], ignore_index=True)
threads = sorted(int(t) for t in runs["threads"].dropna().unique())
threads = threads[0] if len(threads) == 1 else threads
machine = reporting.machine_text()

# Accuracy, both readings. No timing in these files: reruns reproduce them exactly.
records = {}
for reading, suffix in [("val", ""), ("best_r", "_best_r")]:
    cells = reporting.accuracy_cells(runs, reading)
    table, records[reading] = reporting.accuracy_table(
        cells, columns, paper=paper, same_as=same_as
    )
    reporting.write_table(
        table,
        csv=out[f"csv{suffix}"],
        md=out[f"md{suffix}"],
        tex=out[f"tex{suffix}"],
        title=f"{title} [{reporting.READINGS[reading]}]",
        label=f"tab:{name}{suffix}",
        notes=reporting.accuracy_notes(reading, paper),
    )

# Cost: in-fit time/memory at the selected r and across r; whole-job time and RSS
# from the fit jobs' benchmark files (.../fit/<dataset>/<setting>/<method>/split*.tsv).
bench = {}
for path in inp.benchmarks:
    parts = Path(path).parts
    bench.setdefault((parts[-3], parts[-2]), []).append(path)
cost_selected = reporting.cost_at_selected(runs)
cost = reporting.cost_table(
    cost_selected,
    reporting.job_costs(bench),
    columns,
    threads=threads,
    machine=machine,
)
reporting.write_table(
    cost,
    csv=out.cost,
    md=out.cost_md,
    tex=out.cost_tex,
    title=f"Fit time and peak memory at the selected r: {title}",
    label=f"tab:{name}_cost",
    notes=[f"Measured on {machine}, {threads} thread(s) per job."],
)
by_r = reporting.cost_by_r(runs).assign(threads=str(threads), machine=machine)
by_r.to_csv(out.cost_by_r, index=False, lineterminator="\n")

# Figures.
curves = reporting.accuracy_curves(runs)
reporting.plot_accuracy(
    curves,
    columns,
    [out.accuracy_png, out.accuracy_pdf],
    title=title,
    same_as=same_as,
)
reporting.plot_cost(
    reporting.cost_by_r(runs),
    columns,
    [out.cost_png, out.cost_pdf],
    title=f"Fit cost vs r: {title}",
    subtitle=f"{machine}; threads per job: {threads}",
)

record = reporting.table_record(
    name,
    spec,
    records,
    cost=cost,
    curves=curves,
    cost_r=reporting.cost_by_r(runs),
    cost_selected=cost_selected,
    threads=threads,
)
Path(out.json).write_text(json.dumps(record, indent=2, sort_keys=True) + "\n")
log.info("table %s written", name)

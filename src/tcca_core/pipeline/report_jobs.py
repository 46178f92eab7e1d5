"""The table, summary and report jobs: what a run's results are turned into.

- :func:`build_table`: one table (accuracy in both readings, cost, figures, JSON
  record) from the runs, keyed by (setting, method) (rule ``table``);
- :func:`write_summary`: ``results/summary.json``, every table number with the
  run's provenance;
- :func:`write_reproduction`: REPRODUCTION.md (or a reduced run's own file);
- :func:`rewrite_reproduction`: the same from the committed results alone, where the
  fit files are not at hand (a clone), e.g. after editing the notes' prose:
  ``python -m tcca_core.pipeline.report_jobs`` (``--check``: write nothing, fail when
  REPRODUCTION.md is not what they give).

The numbers and figures are :mod:`tcca_core.reporting`'s and
:mod:`tcca_core.reproduction`'s; these functions read the files and write the outputs.
"""

from __future__ import annotations

import copy
import json
import logging
import os
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from .._io import atomic_write_text, write_csv

__all__ = [
    "build_table",
    "reproduction_difference",
    "rewrite_reproduction",
    "write_reproduction",
    "write_summary",
]

# The jobs' logger, as before the split: a job's log names it on every line.
logger = logging.getLogger("tcca_core.pipeline.jobs")

PathLike = str | os.PathLike


def build_table(
    runs: Sequence[PathLike] | pd.DataFrame,
    jobs: Iterable[Mapping[str, Any]],
    spec: Mapping[str, Any],
    out: Mapping[str, PathLike],
    *,
    machine: str | None = None,
) -> dict:
    """One table: accuracy (both readings), cost, figures and its JSON record.

    Parameters
    ----------
    runs : list of paths, or DataFrame
        The gathered results of the table's settings (``results/runs/...csv``);
        each row names its setting and method.
    jobs : iterable of mappings
        The fit jobs behind them, each with its ``setting``, ``method`` and
        ``benchmark`` (the Snakemake benchmark file: whole-job time and max RSS).
    spec : mapping
        The table's configuration (:meth:`.plan.Plan.table_params`): name, title,
        columns, paper, same_as.
    out : mapping
        Output paths, keyed as the ``table`` rule's outputs (csv, md, tex,
        csv_best_r, md_best_r, tex_best_r, json, cost, cost_md, cost_tex, cost_by_r,
        accuracy_png, accuracy_pdf, cost_png, cost_pdf, and optionally html: every
        table of this one on one page, reading (A) first, for the report). Only
        csv, csv_best_r, json, cost and cost_by_r are required: the Markdown and
        LaTeX renderings, the figures (all four or none) and the page are written
        where named (:mod:`.published` recomputes the numbers without them).
    machine : str, optional
        The machine the costs were measured on, as the cost table names it
        (default: this one, :func:`tcca_core.reporting.machine_text`).

    A ``run_note`` in ``spec`` (a reduced run's "reduced run: quick") ends every
    title, of the tables and of the figures, and adds a footnote.

    Returns
    -------
    dict
        The table's JSON record (also written to ``out["json"]``).
    """
    from .. import reporting

    name, title, columns = spec["name"], spec["title"], spec["columns"]
    paper, same_as = spec.get("paper"), spec["same_as"]
    run_note = spec.get("run_note") or ""
    mark = f" [{run_note}]" if run_note else ""
    reduced = (
        [
            f"{run_note[0].upper()}{run_note[1:]}: not the full configuration; "
            "these numbers show that everything runs and are not for comparison "
            "with the paper."
        ]
        if run_note
        else []
    )
    html: list[tuple[str, pd.DataFrame, list[str]]] = []
    if not isinstance(runs, pd.DataFrame):
        # each file in one pass: read in chunks, a column empty in some of them
        # (``pair``, only the pairwise methods fill it) gets mixed types and a
        # DtypeWarning; one pass infers each column once (the same values)
        runs = pd.concat(
            [pd.read_csv(f, low_memory=False) for f in runs], ignore_index=True
        )
    counts = sorted(int(t) for t in runs["threads"].dropna().unique())
    threads: int | list[int] = counts[0] if len(counts) == 1 else counts
    machine = machine if machine is not None else reporting.machine_text()

    # Accuracy, both readings. No timing in these files: reruns reproduce them exactly.
    records = {}
    for reading, suffix in [("val", ""), ("best_r", "_best_r")]:
        cells = reporting.accuracy_cells(runs, reading)
        table, records[reading] = reporting.accuracy_table(
            cells, columns, paper=paper, same_as=same_as
        )
        notes = reporting.accuracy_notes(reading, paper) + reduced
        reporting.write_table(
            table,
            csv=out[f"csv{suffix}"],
            md=out.get(f"md{suffix}"),
            tex=out.get(f"tex{suffix}"),
            title=f"{title} [{reporting.READINGS[reading]}]{mark}",
            label=f"tab:{name}{suffix}",
            notes=notes,
        )
        html.append((f"Reading {reporting.READINGS[reading]}", table, notes))

    # Cost: in-fit time/memory at the selected r and across r; whole-job time and RSS
    # from the fit jobs' benchmark files, keyed by the jobs' (setting, method).
    bench: dict[tuple[str, str], list] = {}
    for job in jobs:
        bench.setdefault((job["setting"], job["method"]), []).append(job["benchmark"])
    cost_selected = reporting.cost_at_selected(runs)
    cost = reporting.cost_table(
        cost_selected,
        reporting.job_costs(bench),
        columns,
        threads=threads,
        machine=machine,
    )
    cost_notes = [f"Measured on {machine}, {threads} thread(s) per job.", *reduced]
    reporting.write_table(
        cost,
        csv=out["cost"],
        md=out.get("cost_md"),
        tex=out.get("cost_tex"),
        title=f"Fit time and peak memory at the selected r: {title}{mark}",
        label=f"tab:{name}_cost",
        notes=cost_notes,
    )
    html.append(("Fit time and peak memory at the selected r", cost, cost_notes))
    if out.get("html"):
        atomic_write_text(out["html"], reporting.to_html(html, f"{title}{mark}"))
    by_r = reporting.cost_by_r(runs).assign(threads=str(threads), machine=machine)
    write_csv(by_r, out["cost_by_r"])

    # Figures.
    curves = reporting.accuracy_curves(runs)
    if out.get("accuracy_png"):
        accuracy_title, cost_title = reporting.figure_titles(f"{title}{mark}")
        reporting.plot_accuracy(
            curves,
            columns,
            [out["accuracy_png"], out["accuracy_pdf"]],
            title=accuracy_title,
            same_as=same_as,
            paper=paper,
        )
        reporting.plot_cost(
            reporting.cost_by_r(runs),
            columns,
            [out["cost_png"], out["cost_pdf"]],
            title=cost_title,
            subtitle=f"{machine}; threads per job: {threads}",
            same_as=same_as,
        )

    record = reporting.table_record(
        name,
        {**spec, "title": f"{title}{mark}"},
        records,
        cost=cost,
        curves=curves,
        cost_r=reporting.cost_by_r(runs),
        cost_selected=cost_selected,
        threads=threads,
    )
    atomic_write_text(out["json"], json.dumps(record, indent=2, sort_keys=True) + "\n")
    logger.info("table %s written", name)
    return record


def write_summary(
    tables: Sequence[PathLike],
    out: PathLike,
    *,
    config: Mapping[str, Any],
    workflow_dir: PathLike,
    run: Mapping[str, Any] | None = None,
    skipped: Mapping[str, str] | None = None,
    statuses: Sequence[PathLike] = (),
) -> dict:
    """``results/summary.json``: every table number, with the run's provenance.

    ``run`` (:func:`tcca_core.pipeline.locations.run_location`) says where the run
    wrote and whether it is the full configuration; ``skipped`` (data set -> why)
    and the data sets' ``statuses`` (:func:`~.data_job.prepare_data`) give the
    data sets the run went on without (key ``skipped``).
    """
    from .. import reporting

    records = [json.loads(Path(f).read_text()) for f in tables]
    skipped = dict(skipped or {})
    for f in statuses:
        doc = json.loads(Path(f).read_text())
        if not doc["available"]:
            skipped[doc["dataset"]] = doc["reason"]
    threads = sorted(
        {str(t["threads"]) for t in records if t.get("threads") is not None}
    )
    prov = reporting.provenance(
        config,
        repo=workflow_dir,
        threads=threads[0] if len(threads) == 1 else threads,
    )
    if run is not None:
        prov["run"] = dict(run)
    summary = reporting.build_summary(records, prov)
    if skipped:
        summary["skipped"] = skipped
    atomic_write_text(out, json.dumps(summary, indent=2, sort_keys=True) + "\n")
    logger.info("summary of %d tables written", len(records))
    return summary


def _release_text(root: Path, summary: Path) -> dict[str, str]:
    """Return the release section and banner of the published REPRODUCTION.md.

    Empty for another run's summary, or without a release.
    """
    from ..reproduction.release import (
        MANIFEST,
        read_manifest,
        read_status,
        release_banner,
        release_section,
    )

    published = os.path.realpath(root / "results" / "summary.json")
    if os.path.realpath(summary) != published or not (root / MANIFEST).is_file():
        return {}
    manifest, status = read_manifest(root), read_status(root)
    return {
        "release": release_section(manifest, status),
        "release_banner": release_banner(manifest, status),
    }


def write_reproduction(
    summary: PathLike,
    investigations: PathLike,
    out: PathLike,
    *,
    root: PathLike,
    missing: Mapping[str, str],
    tables: Mapping[str, str] | None = None,
    figures: str = "results/figures",
) -> None:
    """REPRODUCTION.md (or a reduced run's own file) from the summary and the notes.

    ``missing`` gives the reason of each table known not to run; ``tables`` (table
    -> data set) adds those of data sets that the run skipped (the summary's
    ``skipped``); ``figures`` is the figures' folder relative to ``out``.
    """
    from .. import reproduction

    doc = json.loads(Path(summary).read_text())
    missing = dict(missing)
    for table, dataset in (tables or {}).items():
        why = (doc.get("skipped") or {}).get(dataset)
        if why and table not in doc.get("tables", {}) and table not in missing:
            missing[table] = (
                f"Not run: the data set `{dataset}` could not be obtained on the "
                f"machine that ran the pipeline ({why})."
            )
    notes = reproduction.include_files(Path(investigations).read_text(), Path(root))
    text = reproduction.build(
        doc,
        investigations=notes,
        missing=missing,
        figures=figures,
        **_release_text(Path(root), Path(summary)),
    )
    atomic_write_text(out, text)
    logger.info(
        "REPRODUCTION.md written (%d deviations)", len(reproduction.deviations(doc))
    )


def rewrite_reproduction(
    repo: PathLike = ".",
    *,
    out: PathLike | None = None,
    config: PathLike | None = None,
    figures: str | None = None,
) -> Path:
    """REPRODUCTION.md again from the committed ``results/summary.json`` and notes.

    What the ``reproduction`` rule writes for the full configuration, without
    Snakemake: the rule's inputs are the summary and ``docs/investigations.md``, but
    Snakemake would refit the grid first where the fit files are not at hand (a
    clone). The plan is the configuration's (``config``, default
    ``<repo>/config/config.yaml``) with the summary's ``post_hoc``; the tables that
    did not run are those the summary records as skipped or pending. ``figures``:
    the figures' folder as the file links it (default: relative to ``out``). With
    ``out`` left to its default the at-a-glance figure, which the file shows and
    which reads the equal-tuning output, is drawn again too (the ``glance`` rule's
    job). Returns ``out`` (default ``<repo>/REPRODUCTION.md``).
    """
    from snakemake.utils import validate

    from .config import load_yaml
    from .plan import build_plan

    repo = Path(repo)
    summary = repo / "results" / "summary.json"
    doc = json.loads(summary.read_text(encoding="utf-8"))
    recorded = (doc.get("provenance") or {}).get("config") or {}
    schema = repo / "workflow" / "schemas" / "config.schema.yaml"
    path = Path(config) if config is not None else repo / "config" / "config.yaml"
    base = load_yaml(path) or {}
    cfg = {**copy.deepcopy(base), "post_hoc": bool(recorded.get("post_hoc", False))}
    for c in (base, cfg):  # fills in the schema's defaults
        validate(c, schema=str(schema))
    plan = build_plan(cfg, base, [], workdir=repo)
    if out is None:
        from ..reporting import plot_at_a_glance

        out = repo / "REPRODUCTION.md"
        equal = repo / "investigations" / "results" / "equal_tuning.json"
        glance = repo / "results" / "figures" / "at_a_glance"
        plot_at_a_glance(
            doc,
            json.loads(equal.read_text(encoding="utf-8")) if equal.is_file() else None,
            [glance.with_suffix(".png"), glance.with_suffix(".pdf")],
        )
    out = Path(out)
    write_reproduction(
        summary,
        repo / "docs" / "investigations.md",
        out,
        root=repo,
        missing=plan.missing_tables(doc.get("skipped") or {}),
        tables={t: plan.table_dataset(t) for t in plan.tables},
        figures=figures or os.path.relpath(repo / "results" / "figures", out.parent),
    )
    return out


def reproduction_difference(repo: PathLike = ".") -> str | None:
    """Say where ``<repo>/REPRODUCTION.md`` is stale, or None where it is not.

    None when it is what :func:`rewrite_reproduction` gives from the committed
    results and notes; else the first differing line.
    """
    import tempfile

    repo = Path(repo)
    committed = (repo / "REPRODUCTION.md").read_text(encoding="utf-8").splitlines()
    with tempfile.TemporaryDirectory(prefix="tcca-reproduction-") as tmp:
        out = rewrite_reproduction(
            repo, out=Path(tmp) / "REPRODUCTION.md", figures="results/figures"
        )
        fresh = out.read_text(encoding="utf-8").splitlines()
    for i, (a, b) in enumerate(zip(committed, fresh, strict=False), start=1):
        if a != b:
            return f"line {i}: committed {a!r}, from the results and notes {b!r}"
    if len(committed) != len(fresh):
        return f"{len(committed)} lines committed, {len(fresh)} from them"
    return None


def main(argv=None) -> int:
    """Write REPRODUCTION.md again (or ``--check`` it); the exit status.

    ``python -m tcca_core.pipeline.report_jobs``: REPRODUCTION.md and the
    at-a-glance figure from the committed results and notes.
    """
    import argparse

    ap = argparse.ArgumentParser(
        prog="python -m tcca_core.pipeline.report_jobs",
        description="REPRODUCTION.md again from the committed results and notes, "
        "without the fit files (rewrite_reproduction).",
    )
    ap.add_argument("--repo", default=".", help="the repository's top folder")
    ap.add_argument("--out", default=None, help="default: <repo>/REPRODUCTION.md")
    ap.add_argument(
        "--check",
        action="store_true",
        help="write nothing; fail when REPRODUCTION.md is not what they give",
    )
    args = ap.parse_args(argv)
    if args.check:
        found = reproduction_difference(args.repo)
        if found:
            fix = "python -m tcca_core.pipeline.report_jobs"
            print(f"REPRODUCTION.md is stale: {found} ({fix})")
            return 1
        print("REPRODUCTION.md is what the committed results and notes give")
        return 0
    print(rewrite_reproduction(args.repo, out=args.out))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

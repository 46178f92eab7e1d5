"""Every published number, recomputed from the committed per-fit rows.

``python -m tcca_core.pipeline.published --check`` (or ``snakemake --cores 1
check_published``) rebuilds, in a temporary folder, what the pipeline built from
the rows of a run (:mod:`.rows`), with the pipeline's own functions, and compares it
with what is committed:

- **the tables**: the run's plan is rebuilt from the configuration that
  ``summary.json`` records (:func:`~.plan.build_plan`); each table's settings are
  written back as fit and benchmark files from ``rows/`` (:func:`~.rows.unbundle`),
  gathered (:func:`~.fit_jobs.gather_fits`) and turned into the table
  (:func:`~.report_jobs.build_table`, the machine as the summary records it). Every
  field of the table's record in ``summary.json`` (both readings, curves, costs) and
  of ``tables/<table>.json``, and every cell of ``tables/<table>.csv``,
  ``_best_r.csv``, ``_cost.csv`` and ``_cost_by_r.csv`` must be the same, exactly;
- **the investigations** (:data:`INVESTIGATIONS`, for the published folder only):
  each script is run on a copy of the published folder made of ``summary.json`` and
  the fit files written back from the committed rows of the published run and of
  the investigation runs (``results/<run>/rows/``, :data:`RUNS`), and the tables
  and facts of its output (``investigations/results/<name>.json``) must be the
  same.

A difference fails, naming the first differing cell of each output (table, column,
method, field, committed and recomputed values). Rows that are not committed are
named ("no committed rows for ..."): a failure too, unless ``--allow-missing``.
``--bundle <run folder>`` writes a run's rows from its fit files
(:func:`~.rows.bundle_run`), for the investigation runs, which run fit jobs only.
"""

from __future__ import annotations

import argparse
import copy
import dataclasses
import json
import logging
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from .._io import atomic_write_text
from .differences import csv_difference, first_difference, leaves, table_difference
from .rows import (
    BENCHMARKS,
    INVESTIGATIONS,
    ROWS,
    RUNS,
    RowsError,
    bundle_run,
    row_files,
    unbundle,
)

__all__ = [
    "INVESTIGATIONS",
    "RUNS",
    "Report",
    "check_published",
    "first_difference",
    "main",
]

PathLike = str | os.PathLike

#: The table rule's outputs that hold numbers (``{t}``: the table), by build_table's
#: key; the Markdown and LaTeX files are renderings of the same cells.
TABLE_CSVS = {
    "csv": "{t}.csv",
    "csv_best_r": "{t}_best_r.csv",
    "cost": "{t}_cost.csv",
    "cost_by_r": "{t}_cost_by_r.csv",
}


@dataclass
class Report:
    """What a check found: problems (failures), rows not committed, what it checked."""

    problems: list[str] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)
    checked: list[str] = field(default_factory=list)
    strict: bool = True

    @property
    def ok(self) -> bool:
        """No problem, and (strict) no missing rows."""
        return not self.problems and not (self.strict and self.missing)

    def text(self) -> str:
        """One line per problem, per missing output and per output checked."""
        lines = [f"FAILED {p}" for p in self.problems]
        lines += [("FAILED " if self.strict else "") + m for m in self.missing]
        lines += [f"ok {c}" for c in self.checked]
        verdict = "OK" if self.ok else "FAILED"
        lines.append(
            f"check_published: {verdict}: {len(self.checked)} output(s) recomputed "
            f"from the committed rows, {len(self.problems)} problem(s), "
            f"{len(self.missing)} without committed rows"
            + ("" if self.strict else " (allowed: --allow-missing)")
        )
        return "\n".join(lines)


# ----------------------------------------------------------------------- tables


def _plan_of(summary: Mapping, results: Path):
    """Rebuild the run's plan from the configuration that the summary records.

    The run's titles (its note) are the summary's; every path is under ``results``.
    """
    from .plan import build_plan

    prov = summary.get("provenance") or {}
    config = copy.deepcopy(prov.get("config") or {})
    quiet = logging.getLogger("tcca_core.pipeline.config")
    level = quiet.level
    quiet.setLevel(logging.ERROR)  # the post hoc methods left out: said at run time
    try:
        plan = build_plan(config, None, [], workdir=results.parent)
    finally:
        quiet.setLevel(level)
    run = {**plan.run, **(prov.get("run") or {}), "results": str(results)}
    return dataclasses.replace(plan, run=run)


def _check_setting(
    plan, folder: Path, table: str, dataset: str, setting: str, report: Report
) -> bool:
    """Write a setting's committed rows back under the plan's folder, and check them.

    True when they are exactly its fit jobs' (and their benchmarks are committed);
    otherwise what is wrong or missing goes to ``report``.
    """
    where = {"dataset": dataset, "setting": setting}
    bundle = folder / ROWS.format(**where)
    if not bundle.is_file():
        report.missing.append(
            f"no committed rows for table {table} ({dataset}/{setting}): {bundle}"
        )
        return False
    try:
        unbundle(folder, dataset, setting, plan.results)
    except RowsError as exc:
        report.problems.append(str(exc))
        return False
    jobs = plan.fit_jobs(dataset, setting)
    fits_dir = Path(plan.results) / "fits" / dataset / setting
    have = {f"{p.parent.name}/{p.name}" for p in fits_dir.glob("*/*.csv")}
    want = {f"{j['method']}/split{j['split']}.csv" for j in jobs}
    for name in sorted(want - have):
        report.problems.append(f"{bundle}: no rows of the fit job {name}")
    for name in sorted(have - want):
        report.problems.append(
            f"{bundle}: rows of {name}, which is not a fit job of the run's plan"
        )
    lacking = [j for j in jobs if not Path(j["benchmark"]).is_file()]
    if lacking:
        report.missing.append(
            f"no committed benchmark of the fit job {lacking[0]['method']}/split"
            f"{lacking[0]['split']}.csv ({dataset}/{setting}, whole-job time and RSS "
            f"of the cost table): {folder / BENCHMARKS.format(**where)}"
        )
    return want <= have and not lacking


def _check_tables(folder: Path, summary: Mapping, work: Path, report: Report) -> None:
    from .. import reporting
    from .fit_jobs import gather_fits
    from .report_jobs import build_table

    try:
        plan = _plan_of(summary, work)
    except Exception as exc:  # noqa: BLE001 - any: said with where it came from
        report.problems.append(
            f"{folder / 'summary.json'}: its configuration does not give a plan: {exc}"
        )
        return
    machine_info = (summary.get("provenance") or {}).get("machine")
    machine = reporting.machine_text(machine_info) if machine_info else None
    gathered: dict[tuple[str, str], bool] = {}
    tables = summary.get("tables") or {}
    for table, committed in tables.items():
        if table not in plan.tables:
            report.problems.append(
                f"{folder / 'summary.json'}: table {table!r} is not a table of the "
                "configuration it records"
            )
            continue
        dataset, settings = plan.table_settings(table)
        ready = True
        for setting in settings:
            key = (dataset, setting)
            if key not in gathered:
                gathered[key] = _check_setting(
                    plan, folder, table, dataset, setting, report
                )
                if gathered[key]:
                    gather_fits(
                        plan.setting_fits(dataset, setting),
                        plan.path("runs/{d}/{s}.csv", d=dataset, s=setting),
                        work / "logs" / f"gather_{dataset}_{setting}.log",
                    )
            ready = ready and gathered[key]
        if not ready:
            continue
        out = {k: work / "tables" / v.format(t=table) for k, v in TABLE_CSVS.items()}
        out["json"] = work / "tables" / f"{table}.json"
        try:
            build_table(
                plan.table_runs(table),
                plan.table_jobs(table),
                plan.table_params(table),
                out,
                machine=machine,
            )
        except Exception as exc:  # noqa: BLE001 - the rows do not make the table
            report.problems.append(
                f"table {table}: recomputing it from the committed rows failed: "
                f"{type(exc).__name__}: {exc}"
            )
            continue
        _compare_table(folder, table, committed, out, report)
    _unclaimed_tables(folder, tables, report)


def _compare_table(folder, table, committed, out, report: Report) -> None:
    record = json.loads(Path(out["json"]).read_text(encoding="utf-8"))
    found = first_difference(committed, record, f"tables.{table}")
    problems = [f"{folder / 'summary.json'}: {found}"] if found else []
    numbers = leaves(committed)
    own = folder / "tables" / f"{table}.json"
    if own.is_file():
        found = first_difference(
            json.loads(own.read_text(encoding="utf-8")), record, table
        )
        if found:
            problems.append(f"{own}: {found}")
    else:
        problems.append(f"{own}: missing (the table's record)")
    cells = 0
    for key, name in TABLE_CSVS.items():
        path = folder / "tables" / name.format(t=table)
        if not path.is_file():
            problems.append(f"{path}: missing")
            continue
        diff, n = csv_difference(path, Path(out[key]))
        cells += n
        if diff:
            problems.append(diff)
    report.problems += problems
    if not problems:
        report.checked.append(
            f"table {table}: {numbers} values of summary.json and "
            f"tables/{table}.json, {cells} cells of its {len(TABLE_CSVS)} CSV files"
        )


def _unclaimed_tables(folder: Path, tables: Mapping, report: Report) -> None:
    """Flag the committed table CSVs that no table of the summary writes."""
    names = {v.format(t=t) for t in tables for v in TABLE_CSVS.values()}
    for path in sorted((folder / "tables").glob("*.csv")):
        if path.name not in names:
            report.problems.append(
                f"{path}: not an output of any table of summary.json (cannot be "
                "recomputed: remove it, or rerun the table)"
            )


# --------------------------------------------------------------- investigations


def _unbundle_run(folder: Path, target: Path, report: Report) -> bool:
    """Write back every committed fit file of a run; False if it has no rows."""
    bundles = row_files(folder)
    for dataset, setting in bundles:
        try:
            unbundle(folder, dataset, setting, target)
        except RowsError as exc:
            report.problems.append(str(exc))
            return False
    return bool(bundles)


def _check_investigations(
    folder: Path,
    investigations: Path,
    registry: Mapping[str, tuple[str, Sequence[str]]],
    work: Path,
    report: Report,
) -> None:
    outputs = {
        stem: investigations / "results" / f"{stem}.json"
        for stem in registry
        if (investigations / "results" / f"{stem}.json").is_file()
    }  # the others are not published
    if not outputs:
        return
    published = work / "investigations" / "results"
    published.mkdir(parents=True, exist_ok=True)
    have_main = _unbundle_run(folder, published, report)
    shutil.copy(folder / "summary.json", published / "summary.json")
    # every investigation run with rows, where the scripts find it: beside the
    # published run
    names = sorted({*RUNS, *(run for _, runs in registry.values() for run in runs)})
    runs_there = {
        run: _unbundle_run(folder / run, published / run, report) for run in names
    }
    for stem, output in outputs.items():
        script, runs = registry[stem]
        lacking = [] if have_main else [folder / "rows"]
        lacking += [folder / run / "rows" for run in runs if not runs_there.get(run)]
        if lacking:
            report.missing.append(
                f"no committed rows for {output}: "
                + ", ".join(f"{p}/" for p in lacking)
            )
            continue
        out = work / "investigations" / "out" / f"{stem}.md"
        out.parent.mkdir(parents=True, exist_ok=True)
        cmd = [
            sys.executable,
            str(investigations / script),
            "--published",
            str(published),
            "--out",
            str(out),
        ]
        res = subprocess.run(
            cmd, cwd=investigations.parent, capture_output=True, text=True, check=False
        )
        if res.returncode != 0:
            last = (res.stderr.strip().splitlines() or ["(no message)"])[-1]
            report.problems.append(
                f"{output}: recomputing it failed: {script} exited with "
                f"{res.returncode}: {last}"
            )
            continue
        committed = json.loads(output.read_text(encoding="utf-8"))
        recomputed = json.loads(out.with_suffix(".json").read_text(encoding="utf-8"))
        found = table_difference(committed, recomputed)
        if found:
            report.problems.append(f"{output}: {found}")
        else:
            n = sum(len(t["rows"]) for t in committed.get("tables", []))
            report.checked.append(
                f"{output.name}: {n} table rows and "
                f"{len(committed.get('facts', {}))} facts ({script})"
            )


# ------------------------------------------------------------------------ check


def check_published(
    results: PathLike = "results",
    *,
    investigations: PathLike | None = None,
    strict: bool = True,
    registry: Mapping[str, tuple[str, Sequence[str]]] = INVESTIGATIONS,
) -> Report:
    """Recompute every number of a run folder from its committed rows.

    Parameters
    ----------
    results : path-like
        The run's folder: ``summary.json``, ``tables/`` and ``rows/`` (the published
        ``results/``, or a reduced run's ``results/<name>/``).
    investigations : path-like, optional
        The ``investigations/`` folder whose outputs (``results/<name>.json``) are
        recomputed too, from the rows of ``results`` and of ``results/<run>/``
        (``registry``); None: the tables only.
    strict : bool, default True
        Rows that are not committed fail the check (else they are only named).
    registry : mapping
        Output stem -> (script, runs): :data:`INVESTIGATIONS`.
    """
    folder = Path(results)
    report = Report(strict=strict)
    summary_path = folder / "summary.json"
    if not summary_path.is_file():
        report.problems.append(f"{summary_path}: missing")
        return report
    summary = json.loads(summary_path.read_text(encoding="utf-8"))
    with tempfile.TemporaryDirectory(prefix="tcca-check-") as tmp:
        work = Path(tmp)
        _check_tables(folder, summary, work / "results", report)
        if investigations is not None:
            _check_investigations(folder, Path(investigations), registry, work, report)
    return report


def check_or_raise(
    results: PathLike, investigations: PathLike | None, log: PathLike
) -> None:
    """Run the ``check_published`` rule's check: report on stderr and in ``log``.

    Raises RuntimeError, naming how many problems, if the check fails.
    """
    report = check_published(results, investigations=investigations)
    text = report.text()
    print(text, file=sys.stderr)
    Path(log).parent.mkdir(parents=True, exist_ok=True)
    atomic_write_text(log, text + "\n")
    if not report.ok:
        raise RuntimeError(
            f"the published numbers of {results} are not those of its committed "
            f"rows ({len(report.problems)} problem(s), {len(report.missing)} without "
            "rows): see above"
        )


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``python -m tcca_core.pipeline.published`` (check, release, bundle)."""
    ap = argparse.ArgumentParser(
        prog="python -m tcca_core.pipeline.published",
        description=__doc__.split("\n\n")[0] if __doc__ else None,
    )
    what = ap.add_mutually_exclusive_group(required=True)
    what.add_argument(
        "--check",
        action="store_true",
        help="recompute every published number from the committed rows",
    )
    what.add_argument(
        "--check-release",
        action="store_true",
        help="the check of cutting a release with new numbers: every published "
        "output made at the code of HEAD (the release manifest names no module "
        "that changed since), then --check",
    )
    what.add_argument(
        "--bundle",
        metavar="FOLDER",
        help="write FOLDER/rows/ from FOLDER/fits/ (a run that ran fit jobs only)",
    )
    ap.add_argument("--results", default="results", help="the run's folder")
    ap.add_argument(
        "--investigations",
        default=None,
        help="the investigations/ folder (default: beside RESULTS for the published "
        "folder, none for another run)",
    )
    ap.add_argument(
        "--allow-missing",
        action="store_true",
        help="name the outputs without committed rows, but do not fail on them",
    )
    args = ap.parse_args(argv)
    if args.bundle:
        try:
            written = bundle_run(args.bundle)
        except RowsError as exc:
            print(f"bundle: {exc}", file=sys.stderr)
            return 1
        for path in written:
            print(f"{path} ({path.stat().st_size:,} bytes)")
        if not written:
            print(f"bundle: no fit files under {args.bundle}/fits/", file=sys.stderr)
            return 1
        return 0
    investigations = args.investigations
    folder = Path(args.results)
    if args.check_release:
        from .release import release_problems

        problems = release_problems(folder.resolve().parent)
        for line in problems:
            print(f"FAILED release: {line}", file=sys.stderr)
        if problems:
            print(
                f"{len(problems)} published outputs are not made at the code of "
                "HEAD: make them again (docs/release.md), then cut the release",
                file=sys.stderr,
            )
            return 1
    if investigations is None and _is_published(folder):
        named = folder if folder.name not in ("", ".", "..") else folder.resolve()
        investigations = named.parent / "investigations"
    report = check_published(
        folder,
        investigations=investigations,
        strict=not args.allow_missing,
    )
    print(report.text(), file=sys.stderr if not report.ok else sys.stdout)
    return 0 if report.ok else 1


def _is_published(folder: Path) -> bool:
    """Whether the summary says the folder is the published one (full run)."""
    try:
        summary = json.loads((folder / "summary.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    run = (summary.get("provenance") or {}).get("run") or {}
    return bool(run.get("published", not run.get("reduced", False)))


if __name__ == "__main__":
    raise SystemExit(main())

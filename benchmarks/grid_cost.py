"""Where a grid run's time went: CPU and wall time per job, method and data set.

Reads a run's Snakemake ``benchmark:`` files (``results/benchmarks/<rule>/...tsv``,
written by the rules in ``workflow/rules/*.smk``; columns ``s`` = wall seconds,
``cpu_time`` = CPU seconds of the job's processes, ``max_rss`` MB, ...) and prints

* every job (largest wall time first) with its wall and CPU time, ``cpu/wall`` and
  peak RSS, flagging with ``!`` a job whose wall time is far above its CPU time
  (``wall > --ratio x cpu`` and ``wall >= --min-wall`` s; by default 1.5 x and 30 s):
  it waited, for the CPU (jobs or other users sharing the cores: contention) or for
  I/O, instead of computing. With the extended benchmark format, which records
  ``threads``, the comparison is with ``cpu / threads``. A job using more CPU than
  its threads allow (``cpu > --over x threads x wall``, default 1.2; ``threads``
  is ``--threads``, 1, where not recorded: the fit rules declare none) is marked
  ``+``: oversubscribed, e.g. BLAS running more threads than the job's core, which
  slows the jobs sharing the machine;
* totals per method and per data set (wall, CPU, the flagged jobs' excess wall
  ``wall - cpu``), and per rule;
* what ``--cores N`` needs at least: the total CPU time / N and the longest job.

Without benchmark files (a fresh checkout) it reads the per-job table of the
published full run, ``results/grid_cost.csv`` (written by ``--csv``, with CPU times),
and without that the committed cost tables ``results/tables/*_cost.csv``: they hold
each fit job's wall time (``job time (s)``) but no CPU time, so nothing can be flagged.

Fit job paths are ``fit/<dataset>/<setting>/<method>/split<split>.tsv``; other rules
(``prepare_data``, ``splits``, ``gather``, ``table``, ``summary``) are listed by rule
with the rest of their path as the job name.

Usage::

    python benchmarks/grid_cost.py                          # results/benchmarks
    python benchmarks/grid_cost.py --benchmarks path/to/results/benchmarks
    python benchmarks/grid_cost.py --tables 'results/tables/*_cost.csv'
    python benchmarks/grid_cost.py --csv grid_cost.csv      # the per-job table
    python benchmarks/grid_cost.py --makespan 2 8 32        # wall time on N cores
"""

from __future__ import annotations

import argparse
import glob
import math
import os
import re
import sys
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]

#: Columns of the per-job table, in order.
JOB_COLUMNS = (
    "rule",
    "dataset",
    "setting",
    "method",
    "split",
    "job",
    "wall_s",
    "cpu_s",
    "threads",
    "cpu_per_wall",
    "max_rss_mb",
    "repeats",
    "contention",
    "oversubscribed",
    "source",
)


def _number(value) -> float:
    """A float from a benchmark or cost-table cell ("NA", "-", "12.3 ± 0.4" ...)."""
    if value is None:
        return math.nan
    if isinstance(value, (int, float)):
        return float(value)
    m = re.match(r"\s*([-+]?\d+(?:\.\d*)?(?:[eE][-+]?\d+)?)", str(value))
    return float(m.group(1)) if m else math.nan


def _job_fields(rel: Path) -> dict:
    """rule, dataset, setting, method, split and a job name from a benchmark path."""
    parts = rel.with_suffix("").parts
    rule = parts[0]
    out = {"rule": rule, "dataset": "", "setting": "", "method": "", "split": ""}
    if rule == "fit" and len(parts) == 5:
        out.update(dataset=parts[1], setting=parts[2], method=parts[3])
        out["split"] = parts[4].removeprefix("split")
    elif rule in ("prepare_data", "splits", "gather") and len(parts) >= 2:
        out["dataset"] = parts[1]
        if len(parts) >= 3:
            out["setting"] = parts[2]
    out["job"] = "/".join(parts)
    return out


def read_benchmarks(folder) -> pd.DataFrame:
    """One row per benchmark file under ``folder`` (``results/benchmarks``).

    A file with several rows (Snakemake's ``repeat``) gives the mean of its rows.
    """
    folder = Path(folder)
    rows = []
    for path in sorted(folder.rglob("*.tsv")):
        try:
            table = pd.read_csv(path, sep="\t", dtype=str)
        except (pd.errors.EmptyDataError, pd.errors.ParserError) as exc:
            print(f"skipped {path}: {exc}", file=sys.stderr)
            continue
        if "s" not in table.columns or table.empty:
            print(f"skipped {path}: not a Snakemake benchmark file", file=sys.stderr)
            continue
        values = {
            col: pd.Series([_number(v) for v in table[col]], dtype=float)
            for col in ("s", "cpu_time", "max_rss", "threads")
            if col in table.columns
        }
        row = _job_fields(path.relative_to(folder))
        wall = values["s"].mean()
        cpu = values["cpu_time"].mean() if "cpu_time" in values else math.nan
        threads = values["threads"].mean() if "threads" in values else math.nan
        row.update(
            wall_s=wall,
            cpu_s=cpu,
            threads=threads,
            max_rss_mb=values["max_rss"].max() if "max_rss" in values else math.nan,
            repeats=len(table),
            source=str(path.relative_to(folder)),
        )
        rows.append(row)
    return _finish(pd.DataFrame(rows))


def _table_dataset(path: Path, config: dict | None) -> str:
    table = path.name.removesuffix("_cost.csv")
    spec = (config or {}).get("tables", {}).get(table)
    if isinstance(spec, dict) and spec.get("dataset"):
        return str(spec["dataset"])
    return table.split("_")[0]


def read_cost_tables(paths, config: dict | None = None) -> pd.DataFrame:
    """One row per (table, setting, method) of committed ``*_cost.csv`` tables.

    Their ``job time (s)`` is the fit job's wall time (the mean over jobs when a
    setting ran one job per split); CPU time is not recorded there.
    """
    rows = []
    for path in map(Path, paths):
        table = pd.read_csv(path, dtype=str)
        if "job time (s)" not in table.columns:
            print(f"skipped {path}: no 'job time (s)' column", file=sys.stderr)
            continue
        dataset = _table_dataset(path, config)
        for _, t in table.iterrows():
            setting, method = str(t["Setting"]), str(t["Method"])
            threads = _number(t.get("threads"))
            rows.append(
                {
                    "rule": "fit",
                    "dataset": dataset,
                    "setting": setting,
                    "method": method,
                    "split": "",
                    "job": f"{path.name}: {setting} / {method}",
                    "wall_s": _number(t["job time (s)"]),
                    "cpu_s": math.nan,
                    "threads": threads,
                    "max_rss_mb": _number(t.get("job max RSS (MB)")),
                    "repeats": 1,
                    "source": str(path),
                }
            )
    return _finish(pd.DataFrame(rows))


def _keys_of(config: dict | None) -> tuple[dict, dict]:
    """Maps from the cost tables' labels to keys: (table, column label) -> setting,
    method label -> method."""
    from tcca_core.registry import METHODS

    settings = {}
    for name, spec in ((config or {}).get("tables") or {}).items():
        for col in spec.get("columns", []):
            settings[(name, str(col.get("label")))] = str(col.get("setting"))
    return settings, {spec.label: key for key, spec in METHODS.items()}


def before_after(
    after: pd.DataFrame, before_paths, config: dict | None = None
) -> pd.DataFrame:
    """Each fit job of a run beside the same job in older cost tables.

    ``after`` is :func:`read_benchmarks`'s table of the new run; ``before_paths``
    are the committed ``*_cost.csv`` of the old one (labels mapped to keys through
    the configuration's tables and the registry). Columns: dataset, setting,
    method, ``before_s`` (old job wall), ``after_s`` (new wall), ``after_cpu_s``,
    ``speedup`` (before / after wall) and ``slower`` (the new wall above the old).
    """
    settings, methods = _keys_of(config)
    rows = []
    for path in map(Path, before_paths):
        table = pd.read_csv(path, dtype=str)
        if "job time (s)" not in table.columns:
            continue
        name = path.name.removesuffix("_cost.csv")
        dataset = _table_dataset(path, config)
        for _, t in table.iterrows():
            rows.append(
                {
                    "dataset": dataset,
                    "setting": settings.get((name, str(t["Setting"])), t["Setting"]),
                    "method": methods.get(str(t["Method"]), t["Method"]),
                    "before_s": _number(t["job time (s)"]),
                }
            )
    old = pd.DataFrame(rows, columns=["dataset", "setting", "method", "before_s"])
    fits = after[after["rule"] == "fit"]
    new = (
        fits.groupby(["dataset", "setting", "method"], as_index=False)
        .agg(after_s=("wall_s", "sum"), after_cpu_s=("cpu_s", "sum"))
        .astype({"after_s": float, "after_cpu_s": float})
    )
    both = old.merge(new, on=["dataset", "setting", "method"], how="outer")
    both["speedup"] = both["before_s"] / both["after_s"]
    both["slower"] = both["after_s"] > both["before_s"]
    return both.sort_values("before_s", ascending=False, na_position="last")


def _finish(jobs: pd.DataFrame) -> pd.DataFrame:
    if jobs.empty:
        return pd.DataFrame(columns=list(JOB_COLUMNS))
    jobs["cpu_per_wall"] = jobs["cpu_s"] / jobs["wall_s"]
    jobs["contention"] = False
    jobs["oversubscribed"] = False
    return jobs[list(JOB_COLUMNS)].reset_index(drop=True)


def flag_contention(
    jobs: pd.DataFrame,
    ratio: float = 1.5,
    min_wall: float = 30.0,
    *,
    over: float = 1.2,
    threads: float = 1.0,
) -> pd.DataFrame:
    """Mark jobs whose wall time exceeds ``ratio`` x their CPU time (per thread).

    A single-threaded job that computes all the time has ``cpu ~ wall``; one with
    ``wall > ratio * cpu`` spent the difference waiting. Jobs shorter than
    ``min_wall`` s (start-up and I/O dominate) and jobs without a CPU time are not
    flagged. The extended benchmark format's ``threads`` scales the CPU time the
    job could have used: ``wall > ratio * cpu / threads``.

    ``oversubscribed`` marks the opposite: ``cpu > over * threads * wall``, with
    ``threads`` (default 1) where the files do not record it.
    """
    jobs = jobs.copy()
    n = jobs["threads"].where(jobs["threads"] > 0).fillna(threads)
    usable = jobs["cpu_s"].notna() & (jobs["wall_s"] >= min_wall)
    jobs["contention"] = usable & (jobs["wall_s"] > ratio * jobs["cpu_s"] / n)
    jobs["oversubscribed"] = usable & (jobs["cpu_s"] > over * n * jobs["wall_s"])
    return jobs


def _waited(jobs: pd.DataFrame) -> pd.Series:
    """Wall time in excess of CPU time, for the flagged jobs (0 elsewhere)."""
    excess = (jobs["wall_s"] - jobs["cpu_s"]).clip(lower=0).fillna(0.0)
    return excess.where(jobs["contention"], 0.0)


def summarize(jobs: pd.DataFrame, by: str) -> pd.DataFrame:
    """Jobs, wall, CPU, share of all wall time and flagged excess per ``by``."""
    df = jobs.assign(waited_s=_waited(jobs), key=jobs[by].replace("", "-"))
    total = df["wall_s"].sum()
    out = (
        df.groupby("key", sort=False)
        .agg(
            jobs=("wall_s", "size"),
            wall_s=("wall_s", "sum"),
            cpu_s=("cpu_s", lambda s: s.sum(min_count=1)),
            flagged=("contention", "sum"),
            waited_s=("waited_s", "sum"),
        )
        .rename_axis(by)
        .reset_index()
    )
    out["share"] = out["wall_s"] / total if total > 0 else math.nan
    return out.sort_values("wall_s", ascending=False).reset_index(drop=True)


def _method_label(method: str) -> str:
    try:
        from tcca_core.reporting import method_label
    except ImportError:  # the script also runs without the package installed
        return method
    return method_label(method)


def _fmt(x, digits=1) -> str:
    return (
        "-"
        if x is None or (isinstance(x, float) and math.isnan(x))
        else (f"{x:,.{digits}f}")
    )


def _print_jobs(jobs: pd.DataFrame, top: int | None) -> None:
    shown = jobs.sort_values("wall_s", ascending=False)
    if top:
        shown = shown.head(top)
    print(
        f"{'':1} {'job':<58} {'wall s':>9} {'cpu s':>9} {'cpu/wall':>8} {'RSS MB':>7}"
    )
    for _, j in shown.iterrows():
        name = j["job"]
        if j["rule"] == "fit" and j["method"]:
            name = f"{j['dataset']}/{j['setting']}/{_method_label(j['method'])}"
            if j["split"]:
                name += f" split{j['split']}"
        mark = "!" if j["contention"] else "+" if j["oversubscribed"] else " "
        print(
            f"{mark:1} {name[:58]:<58} "
            f"{_fmt(j['wall_s']):>9} {_fmt(j['cpu_s']):>9} "
            f"{_fmt(j['cpu_per_wall'], 2):>8} {_fmt(j['max_rss_mb'], 0):>7}"
        )
    if top and len(jobs) > top:
        print(f"  ... {len(jobs) - top} more jobs (--top 0 lists all)")


def _print_summary(table: pd.DataFrame, by: str, label=lambda x: x) -> None:
    print(
        f"{by:<24} {'jobs':>5} {'wall s':>10} {'share':>6} {'cpu s':>10} "
        f"{'flagged':>7} {'waited s':>9}"
    )
    for _, t in table.iterrows():
        print(
            f"{str(label(t[by]))[:24]:<24} {t['jobs']:>5} {_fmt(t['wall_s']):>10} "
            f"{t['share']:>6.1%} {_fmt(t['cpu_s']):>10} {int(t['flagged']):>7} "
            f"{_fmt(t['waited_s']):>9}"
        )


def report(
    jobs: pd.DataFrame, *, top: int | None = 25, cores=(2, 16), origin: str = ""
) -> None:
    """Print the per-job list and the per-method, per-data-set and per-rule sums.

    ``origin`` names where the jobs were read (default: their sources' folder).
    """
    fits = jobs[jobs["rule"] == "fit"]
    has_cpu = jobs["cpu_s"].notna().any()
    print(f"{len(jobs)} jobs ({len(fits)} fit jobs) from {origin or _sources(jobs)}")
    print(
        f"wall {_fmt(jobs['wall_s'].sum())} s ({jobs['wall_s'].sum() / 3600:.2f} h)"
        + (
            f", CPU {_fmt(jobs['cpu_s'].sum())} s ({jobs['cpu_s'].sum() / 3600:.2f} h)"
            if has_cpu
            else ", no CPU times (cost tables)"
        )
    )
    if has_cpu:
        flagged = jobs[jobs["contention"]]
        print(
            f"{len(flagged)} jobs flagged '!' (wall far above CPU): "
            f"{_fmt(_waited(jobs).sum())} s of wall time spent waiting"
        )
        over = jobs[jobs["oversubscribed"]]
        if len(over):
            print(
                f"{len(over)} jobs marked '+' (CPU above threads x wall: "
                "oversubscribed, e.g. extra BLAS threads)"
            )
    print("\nJobs, largest wall time first")
    _print_jobs(jobs, top)
    print("\nPer method (fit jobs)")
    _print_summary(summarize(fits, "method"), "method", _method_label)
    print("\nPer data set (fit jobs)")
    _print_summary(summarize(fits, "dataset"), "dataset")
    if (jobs["rule"] != "fit").any():
        print("\nPer rule (all jobs)")
        _print_summary(summarize(jobs, "rule"), "rule")
    work = jobs["cpu_s"] if has_cpu else jobs["wall_s"]
    longest = jobs["wall_s"].max()
    if has_cpu:
        print("\nLower bounds on a run's wall time (total CPU time, longest job):")
    else:
        print(
            "\nLower bounds on a run's wall time (total wall time, longest job; "
            "walls include waiting, so these overstate the bounds):"
        )
    for n in cores:
        bound = max(work.sum() / n, longest)
        print(
            f"  --cores {n}: {_fmt(bound, 0)} s ({bound / 3600:.2f} h)"
            f" = max(total / {n}, longest job {_fmt(longest, 0)} s)"
        )


def _sources(jobs: pd.DataFrame) -> str:
    folders = sorted({str(Path(s).parent) for s in jobs["source"]})
    return os.path.commonpath(folders) if folders else "nothing"


def _load_config(path) -> dict | None:
    if not path or not Path(path).is_file():
        return None
    try:
        import yaml
    except ImportError:
        return None
    with open(path) as f:
        return yaml.safe_load(f)


def plan_order(config_path) -> tuple[dict[str, str], dict[str, bool], dict[str, int]]:
    """The fit jobs' order and split dependence, from the workflow's own plan.

    Returns ``(after, per_split, points)``: ``after[job]`` is the job whose fit it reads
    from the fit cache and must follow (``Plan.fit_after``: mfeat's settings that
    differ only in their labeled draw), and ``per_split[job]`` whether its fit
    depends on the split (fit on rows drawn with it), so that the ``split`` fit
    grain cuts it into one job per split, and ``points[job]`` its number of grid
    points (eps values, lambda pairs). Jobs are named as in the benchmark
    files (``fit/<dataset>/<setting>/<method>/split<split>``) at the method grain.
    """
    from snakemake.utils import validate

    from tcca_core.pipeline.config import load_yaml
    from tcca_core.pipeline.plan import build_plan

    schema = str(ROOT / "workflow" / "schemas" / "config.schema.yaml")
    config = load_yaml(config_path) or {}
    config["post_hoc"] = True  # the post hoc jobs are measured too
    validate(config, schema=schema)
    base = dict(config)
    plan = build_plan(config, base, [], workdir=str(ROOT))
    after, per_split, points = {}, {}, {}
    for dataset in plan.datasets:
        for setting, spec in plan.settings[dataset].items():
            for method in spec.methods:
                name = f"fit/{dataset}/{setting}/{method}/splitall"
                before = plan.fit_after(dataset, setting, method, "all")
                if before:
                    rel = Path(before[0]).as_posix().split("/fits/", 1)[-1]
                    after[name] = "fit/" + rel.removesuffix(".csv")
                job = plan.fit_job(dataset, setting, method, "all")
                per_split[name] = job.fit_on == "exclude_validation"
                points[name] = int(
                    np.prod(
                        [len(v) for v in job.params.values() if isinstance(v, list)]
                    )
                )
    return after, per_split, points


def makespan(cost: dict[str, float], after: dict[str, str], cores: int | None) -> float:
    """Wall time of the fit jobs on ``cores`` (None: as many as there are jobs).

    List scheduling as Snakemake does it, one core a job: whenever a core is
    free, the ready job with the longest chain of work still behind it starts
    (a job is ready once the job it follows has ended).
    """
    import heapq
    from functools import cache

    follow: dict[str, list[str]] = {}
    for job, first in after.items():
        if job in cost and first in cost:
            follow.setdefault(first, []).append(job)

    @cache
    def tail(job: str) -> float:
        return cost[job] + max((tail(j) for j in follow.get(job, [])), default=0.0)

    if cores is None:
        return max((tail(j) for j in cost), default=0.0)
    ready = [j for j in cost if after.get(j) not in cost]
    running: list[tuple[float, str]] = []
    now = 0.0
    while ready or running:
        while ready and len(running) < cores:
            job = max(ready, key=lambda j: (tail(j), j))
            ready.remove(job)
            heapq.heappush(running, (now + cost[job], job))
        now, done = heapq.heappop(running)
        ready.extend(follow.get(done, []))
    return now


def grain_costs(
    fits: pd.DataFrame,
    per_split: dict[str, bool],
    n_splits: int,
    grain: str,
    points: dict[str, int] | None = None,
) -> tuple[dict[str, float], dict[str, str]]:
    """Fit jobs' wall times at another ``grain``, from the method grain's.

    ``split``: a job whose fit depends on the split becomes ``n_splits`` jobs of
    a ``n_splits``-th of its time each (its splits are independent); one whose
    fit does not (SecStr's transductive fit, mfeat's on every row) stays one job:
    the first split fits it, the others read the fit cache. ``point`` (a grain
    the workflow does not have): every job cut into one per grid point, each an
    equal share of its time, the estimate of what such a grain would give.
    """
    cost = dict(zip(fits["job"], fits["wall_s"], strict=True))
    if grain == "method":
        return cost, {}
    out, rename = {}, {}
    for job, c in cost.items():
        if grain == "point":
            n = max((points or {}).get(job, 1), 1)
            for k in range(n):
                out[f"{job}#{k}"] = c / n
        elif per_split.get(job, False):
            for k in range(n_splits):
                out[f"{job}#{k}"] = c / n_splits
        else:
            out[job] = c
            rename[job] = job
    return out, rename


def print_makespans(fits, config_path, cores, n_splits: int = 5) -> None:
    """Print the estimated wall time of the fit jobs at each grain and core count."""
    after, per_split, points = plan_order(config_path)
    print("\nEstimated wall time of the fit jobs (list scheduling, one core a job):")
    print("| fit grain | " + " | ".join(f"{n} cores" for n in cores) + " | a cluster |")
    print("|---|" + "---:|" * (len(cores) + 1))
    for grain in ("method", "split", "point"):
        cost, _ = grain_costs(fits, per_split, n_splits, grain, points)
        # a job cut into parts follows what its whole followed (no chain: the
        # parts of mfeat's shared fits are independent of the settings' draws)
        chain = {j: a for j, a in after.items() if j in cost and a in cost}
        spans = [makespan(cost, chain, n) for n in (*cores, None)]
        longest = max(cost.values())
        print(
            f"| {grain}{' (estimate: no such grain yet)' if grain == 'point' else ''}"
            f" (longest job {longest:,.0f} s) | "
            + " | ".join(f"{s / 60:,.1f} min" for s in spans)
            + " |"
        )


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--benchmarks",
        default=str(ROOT / "results" / "benchmarks"),
        help="folder of benchmark TSVs (default %(default)s)",
    )
    parser.add_argument(
        "--tables",
        default=str(ROOT / "results" / "tables" / "*_cost.csv"),
        help="cost tables, used when there are no benchmark files (a glob)",
    )
    parser.add_argument(
        "--jobs",
        default=str(ROOT / "results" / "grid_cost.csv"),
        help="a per-job table written by --csv (the committed one of the full run), "
        "read when there are no benchmark files",
    )
    parser.add_argument("--config", default=str(ROOT / "config" / "config.yaml"))
    parser.add_argument("--ratio", type=float, default=1.5)
    parser.add_argument("--min-wall", type=float, default=30.0)
    parser.add_argument("--over", type=float, default=1.2)
    parser.add_argument(
        "--threads", type=float, default=1.0, help="threads per job if not recorded"
    )
    parser.add_argument("--top", type=int, default=25, help="jobs listed (0: all)")
    parser.add_argument("--cores", type=int, nargs="+", default=[2, 16])
    parser.add_argument(
        "--makespan",
        type=int,
        nargs="*",
        help="estimate the fit jobs' wall time on these core counts and a cluster, "
        "at the method and split fit grains (e.g. --makespan 2 8 32)",
    )
    parser.add_argument("--csv", help="write the per-job table to this CSV")
    parser.add_argument(
        "--before",
        help="older cost tables (a glob, e.g. from git show) to compare each fit "
        "job of the benchmark files with",
    )
    parser.add_argument("--before-csv", help="write the before/after table to this CSV")
    args = parser.parse_args(argv)

    jobs = pd.DataFrame(columns=list(JOB_COLUMNS))
    origin = ""
    if Path(args.benchmarks).is_dir():
        jobs = read_benchmarks(args.benchmarks)
        origin = args.benchmarks
    if jobs.empty and Path(args.jobs).is_file():
        print(f"no benchmark files under {args.benchmarks}: reading {args.jobs}")
        jobs = _finish(pd.read_csv(args.jobs, dtype={"split": str, "setting": str}))
        origin = args.jobs
    if jobs.empty:
        paths = sorted(glob.glob(args.tables))
        if not paths:
            print(
                f"no benchmark files under {args.benchmarks} and no cost tables "
                f"matching {args.tables}",
                file=sys.stderr,
            )
            return 1
        print(f"no benchmark files under {args.benchmarks}: reading cost tables")
        jobs = read_cost_tables(paths, _load_config(args.config))
    jobs = flag_contention(
        jobs, args.ratio, args.min_wall, over=args.over, threads=args.threads
    )
    report(jobs, top=args.top or None, cores=args.cores, origin=origin)
    if args.makespan:
        print_makespans(jobs[jobs["rule"] == "fit"], args.config, args.makespan)
    if args.csv:
        out = jobs.sort_values("wall_s", ascending=False)
        out.to_csv(args.csv, index=False, float_format="%.3f", lineterminator="\n")
        print(f"\nper-job table written to {args.csv}")
    if args.before:
        paths = sorted(glob.glob(args.before))
        both = before_after(jobs, paths, _load_config(args.config))
        print("\nFit jobs before (cost tables) and after (benchmark files), wall s")
        with pd.option_context("display.width", 200, "display.max_rows", None):
            print(both.to_string(index=False, float_format=lambda x: f"{x:.1f}"))
        total = both[["before_s", "after_s", "after_cpu_s"]].sum()
        print(
            f"total: before {_fmt(total['before_s'])} s, after {_fmt(total['after_s'])}"
            f" s wall ({_fmt(total['after_cpu_s'])} s CPU); "
            f"{int(both['slower'].sum())} jobs slower"
        )
        if args.before_csv:
            both.to_csv(
                args.before_csv, index=False, float_format="%.1f", lineterminator="\n"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())

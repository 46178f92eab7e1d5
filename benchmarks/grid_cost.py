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
* what ``--cores N`` needs at least: the total CPU time / N and the longest job;
* with ``--makespan``, the fit jobs' wall time on N cores and on a cluster, by list
  scheduling over the workflow's order (``Plan.fit_after``), at each fit grain:
  measured at the run's own grain, estimated at the others. A ``point`` job's cost
  is estimated from the rows of the method's job: each grid point's share of its
  fits' time (``fit_s`` per (params, r), a fit counted once however many splits or
  points reuse it), its share of the rest of the job, and a per-job overhead
  (``--overhead``; :data:`OVERHEAD_S`, measured on the ``.test`` run at the point
  grain, which a point-grain run measures again and prints).

Without benchmark files (a fresh checkout) it reads the per-job table of the
published full run, ``results/grid_cost.csv`` (written by ``--csv``, with CPU times),
and without that the committed cost tables ``results/tables/*_cost.csv``: they hold
each fit job's wall time (``job time (s)``) but no CPU time, so nothing can be flagged.

Fit job paths are ``fit/<dataset>/<setting>/<method>/split<label>.tsv``, the label
``all`` (fit_grain: method), a split's number (``split``) or ``all.p03`` (grid point
3 of the method, ``point``); other rules (``prepare_data``, ``splits``, ``gather``,
``table``, ``summary``) are listed by rule with the rest of their path as the job
name.

Usage::

    python benchmarks/grid_cost.py                          # results/benchmarks
    python benchmarks/grid_cost.py --benchmarks path/to/results/benchmarks
    python benchmarks/grid_cost.py --tables 'results/tables/*_cost.csv'
    python benchmarks/grid_cost.py --csv grid_cost.csv      # the per-job table
    python benchmarks/grid_cost.py --makespan 2 8 32        # wall time on N cores
    python benchmarks/grid_cost.py --makespan 2 8 32 --rows results/head  # fit rows
"""

from __future__ import annotations

import argparse
import functools
import glob
import json
import math
import os
import re
import sys
from pathlib import Path
from typing import NamedTuple

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]

#: A fit job's own cost besides its fits (s): starting Python, importing the
#: library, loading the data, scoring and writing its rows. Measured on the
#: ``.test`` run at ``fit_grain: point`` (BENCHMARKS.md, "On more cores"): its
#: jobs' wall less their fits' time, a median of 9.4 s beside other workers at
#: cpu/wall 0.25, so about 2.5 s on a core of its own; BSF's job, which fits
#: nothing, took 2.6 s of CPU.
OVERHEAD_S = 3.0
#: The fit grains, in the order they are printed.
GRAINS = ("method", "split", "point")
#: A fit job's split label: its splits, then its grid point, if any (``all.p03``).
_LABEL = re.compile(r"(\d+|all)(?:\.(p\d+))?")

#: Columns of the per-job table, in order.
JOB_COLUMNS = (
    "rule",
    "dataset",
    "setting",
    "method",
    "split",
    "point",
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
    """rule, dataset, setting, method, split, point and job name of a benchmark path."""
    parts = rel.with_suffix("").parts
    rule = parts[0]
    out = {"rule": rule, "dataset": "", "setting": "", "method": "", "split": ""}
    out["point"] = ""
    if rule == "fit" and len(parts) == 5:
        out.update(dataset=parts[1], setting=parts[2], method=parts[3])
        label = parts[4].removeprefix("split")
        m = _LABEL.fullmatch(label)
        out["split"], out["point"] = (
            (m.group(1), m.group(2) or "") if m else (label, "")
        )
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
    if "point" not in jobs.columns:  # a table written before the point grain
        jobs["point"] = ""
    jobs["point"] = jobs["point"].fillna("").astype(str)
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
            if j["point"]:
                name += f".{j['point']}"
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


def _whole(dataset: str, setting: str, method: str) -> str:
    """Name of a method's one job at ``fit_grain: method``."""
    return f"fit/{dataset}/{setting}/{method}/splitall"


class PlannedJob(NamedTuple):
    """One fit job of the workflow's plan at one grain (:func:`plan_jobs`).

    Attributes
    ----------
    whole : str
        The method's one job at ``fit_grain: method`` that this job is part of.
    after : str
        The job it follows (``Plan.fit_after``: mfeat's settings that differ only
        in their labeled draw), ``""`` if none.
    per_split : bool
        Whether its fit depends on the split (fit rows drawn with it: Ads's every
        row but validation, SecStr's DSE and SSMVD on a subset drawn per split).
    point : dict or None
        The grid point it fits; None: every point of the method.
    n_points : int
        The method's grid points in the setting (eps values, lambda pairs).
    """

    whole: str
    after: str
    per_split: bool
    point: dict | None
    n_points: int


def _plan(config_path, grain: str):
    from snakemake.utils import validate

    from tcca_core.pipeline.config import load_yaml
    from tcca_core.pipeline.plan import build_plan

    schema = str(ROOT / "workflow" / "schemas" / "config.schema.yaml")
    config = load_yaml(config_path) or {}
    config["post_hoc"] = True  # the post hoc jobs are measured too
    config["fit_grain"] = grain
    validate(config, schema=schema)
    return build_plan(config, dict(config), [], workdir=str(ROOT))


def plan_jobs(config_path, grain: str = "method") -> dict[str, PlannedJob]:
    """Every fit job of the configuration at ``grain``, from the workflow's own plan.

    Keyed by the job's name in the benchmark files
    (``fit/<dataset>/<setting>/<method>/split<label>``).
    """
    from tcca_core.pipeline.plan import parse_label
    from tcca_core.registry import METHODS

    plan = _plan(config_path, grain)
    jobs = {}
    for dataset in plan.datasets:
        for setting, spec in plan.settings[dataset].items():
            for method in spec.methods:
                points = plan.grid_points(dataset, setting, method)
                for label in plan.fit_labels(dataset, setting, method):
                    job = plan.fit_job(dataset, setting, method, label)
                    before = plan.fit_after(dataset, setting, method, label)
                    _, k = parse_label(label)
                    drawn = METHODS[method].transductive and "subset" in job.params
                    jobs[f"fit/{dataset}/{setting}/{method}/split{label}"] = PlannedJob(
                        whole=_whole(dataset, setting, method),
                        after=_job_of(before[0]) if before else "",
                        per_split=job.fit_on == "exclude_validation" or drawn,
                        point=None if k is None else points[k],
                        n_points=len(points),
                    )
    return jobs


def _job_of(fit_file: str) -> str:
    """A job's name from its fit file (``.../fits/<...>.csv``)."""
    rel = Path(fit_file).as_posix().split("/fits/", 1)[-1]
    return "fit/" + rel.removeprefix("fits/").removesuffix(".csv")


def plan_order(config_path) -> tuple[dict[str, str], dict[str, bool], dict[str, int]]:
    """The fit jobs' order and split dependence at ``fit_grain: method``.

    Returns ``(after, per_split, points)`` of :func:`plan_jobs`' jobs: the job
    each follows (where one does), whether its fit depends on the split (the
    ``split`` fit grain cuts it into one job per split) and its number of grid
    points (eps values, SSMVD's lambda pairs).
    """
    jobs = plan_jobs(config_path, "method")
    after = {name: job.after for name, job in jobs.items() if job.after}
    per_split = {name: job.per_split for name, job in jobs.items()}
    points = {name: job.n_points for name, job in jobs.items()}
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
    """Fit jobs' wall times at another ``grain``, from the method grain's, in shares.

    ``split``: a job whose fit depends on the split becomes ``n_splits`` jobs of
    a ``n_splits``-th of its time each (its splits are independent); one whose
    fit does not (mfeat's on every row) stays one job: the first split fits it,
    the others read the fit cache. ``point``: every job cut into one per grid
    point, each an equal share of its time (what :func:`point_costs` falls back
    to without the job's rows).
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


# ------------------------------------------------------- the point grain's costs

#: What names one fit among a job's rows: a fit reused by several splits (through
#: the fit cache) or grid points (SSMVD's one fit per r for every pair) reports
#: the same time and memory on each of their rows.
_FIT_KEY = ("r", "view", "pair", "fit_s", "peak_mb")


def read_fit_rows(folder, job: str) -> pd.DataFrame | None:
    """The rows a fit job wrote, from a run folder's ``fits/`` or its ``rows/``.

    ``job`` is the job's name (``fit/<dataset>/<setting>/<method>/split<label>``);
    None where neither has them.
    """
    from tcca_core.pipeline.rows import ROWS

    _, dataset, setting, method, name = job.split("/")
    path = Path(folder) / "fits" / dataset / setting / method / f"{name}.csv"
    if path.is_file():
        return pd.read_csv(path)
    bundle = Path(folder) / ROWS.format(dataset=dataset, setting=setting)
    if not bundle.is_file():
        return None
    return _bundle(str(bundle)).get(f"{method}/{name}.csv")


@functools.cache
def _bundle(path: str) -> dict[str, pd.DataFrame]:
    """A rows bundle's rows by fit file (read once: a setting's jobs share it)."""
    from tcca_core.pipeline.rows import FIT_FILE, read_bundle

    header, rows = read_bundle(path)
    frame = pd.DataFrame(rows, columns=header)
    numeric = ("r", "view", "fit_s", "peak_mb")
    frame = frame.assign(
        **{c: pd.to_numeric(frame[c], errors="coerce") for c in numeric if c in frame}
    ).replace({"pair": {"": None}})
    return {
        name: part.drop(columns=FIT_FILE).reset_index(drop=True)
        for name, part in frame.groupby(FIT_FILE, sort=False)
    }


def fit_time(rows: pd.DataFrame) -> float:
    """Seconds of the fits behind a job's rows, each fit counted once."""
    timed = rows.dropna(subset=["fit_s"])
    return float(timed.drop_duplicates([c for c in _FIT_KEY if c in timed]).fit_s.sum())


def point_fit_times(rows: pd.DataFrame, points: list[dict]) -> list[float]:
    """Each grid point's share of the fits' time of a method job's rows.

    A row belongs to the first point whose values its ``params`` hold. A fit is
    counted once (:data:`_FIT_KEY`); one shared by several points (SSMVD's one
    fit per r for every (lambda1, lambda2)) is shared out equally among them:
    a point job that fits its pair alone repeats the shared setup, which these
    shares cannot see (a lower bound).
    """
    parsed: dict[str, dict] = {}

    def owner(params: str) -> int:
        if params not in parsed:
            parsed[params] = json.loads(params)
        values = parsed[params]
        return next(
            (
                k
                for k, point in enumerate(points)
                if all(values.get(key) == v for key, v in point.items())
            ),
            -1,
        )

    timed = rows.dropna(subset=["fit_s"])
    timed = timed.assign(_point=[owner(p) for p in timed["params"]])
    timed = timed[timed["_point"] >= 0]
    shares = [0.0] * len(points)
    key = [c for c in _FIT_KEY if c in timed]
    for _, fit in timed.groupby(key, dropna=False, sort=False):
        owners = sorted(set(fit["_point"]))
        for k in owners:
            shares[k] += float(fit["fit_s"].iloc[0]) / len(owners)
    return shares


def point_costs(
    wall: float, shares: list[float], overhead: float = OVERHEAD_S
) -> list[float]:
    """The wall times of the point jobs that one method job of ``wall`` s becomes.

    Each pays the per-job ``overhead`` and its fits (``shares``, from
    :func:`point_fit_times`), and an equal share of the rest of the method job
    (scoring the learner, transforms, kernels). Where the fits' times exceed the
    job's (fits read from the fit cache, counted at the time of their first fit),
    the job's time is shared out in proportion to them. Without fit times: equal
    shares.
    """
    n = len(shares)
    work = max(wall - overhead, 0.0)
    total = sum(shares)
    if total <= 0:
        return [overhead + work / n] * n
    if total <= work:
        rest = (work - total) / n
        return [overhead + f + rest for f in shares]
    return [overhead + work * f / total for f in shares]


def whole_costs(fits: pd.DataFrame, overhead: float = OVERHEAD_S) -> dict[str, float]:
    """Each method's one-job wall time (``fit_grain: method``) from a run's fit jobs.

    A method's jobs at another grain (one per split or per grid point) merged:
    their walls summed, less the overhead of all but one.
    """
    whole = [
        _whole(d, s, m)
        for d, s, m in zip(
            fits["dataset"], fits["setting"], fits["method"], strict=True
        )
    ]
    out = {}
    for name, group in fits.assign(_whole=whole).groupby("_whole", sort=False):
        walls = group["wall_s"]
        out[name] = max(walls.sum() - (len(walls) - 1) * overhead, walls.max())
    return out


def estimate_point_costs(
    whole: dict[str, float],
    planned: dict[str, PlannedJob],
    rows_folder=None,
    overhead: float = OVERHEAD_S,
) -> dict[str, float]:
    """The point grain's jobs and wall times, from the method grain's.

    ``whole``: each method job's wall time (:func:`whole_costs`); ``planned``: the
    point grain's jobs (:func:`plan_jobs`); ``rows_folder``: a run folder with the
    method jobs' rows (``fits/`` or ``rows/``), whose fit times share each job out
    among its points (:func:`point_costs`). A method with one grid point stays
    one job, as at the method grain.
    """
    parts: dict[str, list[tuple[str, PlannedJob]]] = {}
    for name, job in planned.items():
        parts.setdefault(job.whole, []).append((name, job))
    out = {}
    for name, wall in whole.items():
        jobs = parts.get(name)
        if not jobs or len(jobs) == 1:
            out[jobs[0][0] if jobs else name] = wall
            continue
        points = [job.point or {} for _, job in jobs]
        rows = None if rows_folder is None else read_fit_rows(rows_folder, name)
        shares = [0.0] * len(points) if rows is None else point_fit_times(rows, points)
        costs = point_costs(wall, shares, overhead)
        for (job_name, _), c in zip(jobs, costs, strict=True):
            out[job_name] = c
    return out


def measured_overhead(fits: pd.DataFrame, rows_folder) -> tuple[float, int]:
    """Median per-job overhead of a run: a fit job's wall less its fits' time.

    Returns (seconds, jobs measured); (nan, 0) without the jobs' rows.
    """
    gaps = []
    for job, wall in zip(fits["job"], fits["wall_s"], strict=True):
        rows = read_fit_rows(rows_folder, job)
        if rows is not None and len(rows):
            gaps.append(wall - fit_time(rows))
    return (float(np.median(gaps)), len(gaps)) if gaps else (math.nan, 0)


def run_grain(fits: pd.DataFrame) -> str:
    """The fit grain a run's fit jobs were cut at (their split labels).

    ``method`` where the jobs name no split (the cost tables' rows).
    """
    if (fits["point"] != "").any():
        return "point"
    if fits["split"].astype(str).str.fullmatch(r"\d+").any():
        return "split"
    return "method"


def print_makespans(
    fits: pd.DataFrame,
    config_path,
    cores,
    *,
    rows_folder=None,
    overhead: float = OVERHEAD_S,
) -> None:
    """Print the fit jobs' wall time at each grain and core count.

    The run's own grain is measured, the others estimated from it: the method
    grain from the run's jobs merged (:func:`whole_costs`), the split grain in
    shares (:func:`grain_costs`), the point grain from the method jobs' rows
    (:func:`estimate_point_costs`).
    """
    grain = run_grain(fits)
    planned = {g: plan_jobs(config_path, g) for g in GRAINS}
    n_splits = int(_plan(config_path, "method").config["n_splits"])
    measured = dict(zip(fits["job"], fits["wall_s"], strict=True))
    whole = whole_costs(fits, overhead)
    per_split = {name: job.per_split for name, job in planned["method"].items()}
    costs = {"method": measured if grain == "method" else whole}
    costs["split"] = (
        measured
        if grain == "split"
        else grain_costs(
            pd.DataFrame({"job": list(whole), "wall_s": list(whole.values())}),
            per_split,
            n_splits,
            "split",
        )[0]
    )
    costs["point"] = (
        measured
        if grain == "point"
        else estimate_point_costs(whole, planned["point"], rows_folder, overhead)
    )
    if grain == "point" and rows_folder is not None:
        seconds, n = measured_overhead(fits, rows_folder)
        if n:
            busy = (fits["cpu_s"] / fits["wall_s"]).median()
            print(
                f"\nPer-job overhead of this run: {seconds:.1f} s (median over {n} "
                "fit jobs of the wall time less the fits' time of their rows"
                + (
                    f"; their median cpu/wall {busy:.2f}: below 1, the wait of a "
                    "shared machine is in it"
                    if not math.isnan(busy)
                    else ""
                )
                + ")"
            )
    print(
        f"\nWall time of the fit jobs (list scheduling, one core a job; run at the "
        f"{grain} grain, the others estimated with a per-job overhead of "
        f"{overhead:g} s):"
    )
    print("| fit grain | " + " | ".join(f"{n} cores" for n in cores) + " | a cluster |")
    print("|---|" + "---:|" * (len(cores) + 1))
    for g in GRAINS:
        cost = costs[g]
        # a job cut into parts follows what its whole followed; parts of a fit
        # that depends on the split follow nothing (no other setting shares it)
        links = {n: j.after for n, j in planned[g].items() if j.after}
        links |= {n: j.after for n, j in planned["method"].items() if j.after}
        chain = {j: a for j, a in links.items() if j in cost and a in cost}
        spans = [makespan(cost, chain, n) for n in (*cores, None)]
        how = "measured" if g == grain else "estimate"
        print(
            f"| {g} ({how}: {len(cost)} jobs, longest {max(cost.values()):,.0f} s) | "
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
        help="the fit jobs' wall time on these core counts and a cluster, at the "
        "method, split and point fit grains (e.g. --makespan 2 8 32)",
    )
    parser.add_argument(
        "--rows",
        help="a run folder with the fit jobs' rows (fits/ or rows/), whose fit "
        "times estimate the point grain (default: the folder above --benchmarks, "
        "or results/ for a per-job table)",
    )
    parser.add_argument(
        "--overhead",
        type=float,
        default=OVERHEAD_S,
        help="a fit job's own cost besides its fits, s (default %(default)s: "
        "measured on the .test run at the point grain)",
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
        jobs = _finish(
            pd.read_csv(args.jobs, dtype={"split": str, "setting": str, "point": str})
        )
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
        rows = args.rows or (
            Path(args.benchmarks).parent
            if origin == args.benchmarks
            else ROOT / "results"
        )
        print_makespans(
            jobs[jobs["rule"] == "fit"],
            args.config,
            args.makespan,
            rows_folder=rows,
            overhead=args.overhead,
        )
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

"""NUS-WIDE: what the two missing tables cost on 2 cores, measured on the look-alike.

NUS-WIDE cannot be downloaded here, so its two tables (the paper's linear and kernel
tables on the mammal subset) are the one part of the paper's grid that has never run.
This script measures what they would cost, with the pipeline's own job functions
(``tcca_core.pipeline.jobs``: ``prepare_data``, ``draw_splits``, ``run_fit_job``, each
fit job in a fresh Python process with one BLAS thread, as the workflow runs it) on
the NUS-WIDE look-alike that the integration test uses (``.test/make_fixture.py``:
the official file names, formats and view dimensions, 500/144/128), written at a few
sizes up to the real one, with config/config.yaml's NUS-WIDE settings and their full
grids (5 splits, r in the paper's grid, the eps and lambda grids); then it packs the
jobs at the real size on 2 cores.

Scaling: at fixed view dimensions d, BSF/CAT cost O(N) (kNN on the evaluation rows),
CCA (BST/AVG) and CCA-LS O(N d^2 + d^3) per eps, DSE/SSMVD O(N d^2) for the PCA
patterns and O(N K^2), K = 300, per r; TCCA O(N d^2 + d^3) per eps plus ALS sweeps of
O(N r sum d), from as many starts (up to 10) as a fixed budget of flops allows, so
its cost is flat in N on small look-alikes and grows like N only once one start fills
the budget. An a + b N fit over small look-alikes therefore underestimates TCCA at
the real size (the paper's 11,189 images, 5,597 of them in the training pool that the
subspace is fitted on), so the linear table's jobs are also run at the real size,
which is what the estimate uses; the fits are reported beside them as a check. The
kernel table runs on a random 500-row subset (the paper's, in the configuration), so
its jobs are measured at the real size at any N. The three columns of each table
differ only in the labeled rows per class (4, 6, 8), so one column per table is
measured and counted three times. Data preparation parses every line of the raw files
(269,648 images): measured on a look-alike with the real share of unselected images.

The 2-core time is the longest-processing-time-first packing of the jobs' measured
CPU times on 2 cores (one thread per job), the same lower bound that
benchmarks/grid_cost.py gives for --cores 2 when no job waits for another.

    python investigations/nuswide_cost.py --sizes 1000                # + kernel table
    python investigations/nuswide_cost.py --sizes 2000 --tables nuswide_linear
    python investigations/nuswide_cost.py --sizes 11189 --tables nuswide_linear
    python investigations/nuswide_cost.py --report a.json b.json c.json  # together
    python investigations/nuswide_cost.py --sizes 1000 --quick        # a smoke test

Writes investigations/results/nuswide_cost.md (and a .json of every measured job).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import math
import os
import platform
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import yaml
from _common import hand_over

from tcca_core._io import atomic_write_text
from tcca_core.datasets import nuswide
from tcca_core.pipeline.config import r_grid_of, resolve_settings
from tcca_core.pipeline.jobs import draw_splits, prepare_data
from tcca_core.pipeline.plan import SplitJob
from tcca_core.registry import METHODS

REPO = Path(__file__).resolve().parents[1]
RESULTS = Path(__file__).resolve().parent / "results"
#: The real data: images in the raw files, and the paper's selection and pool.
N_LINES = nuswide.N_IMAGES
N_REAL, N_POOL = nuswide.PAPER_N, nuswide.PAPER_N_TRAIN
#: One column per table (the others differ only in labeled rows per class).
COLUMNS = {"nuswide_linear": "linear4", "nuswide_kernel": "kernel4"}
COLUMNS_PER_TABLE = 3
CORES = 2
#: The one command that runs both tables once the files are in data/raw/nuswide/.
COMMAND = "snakemake --cores 2 nuswide"

JOB = r"""
import json, sys, time
t0 = time.perf_counter()
from tcca_core.pipeline.jobs import run_fit_job
cfg, splits, out, root, mirror = json.loads(sys.argv[1])
t1 = time.perf_counter()
run_fit_job(cfg, splits, out, data_root=root, mirror=mirror, threads=1, offline=True)
print(json.dumps({"import_s": t1 - t0, "run_s": time.perf_counter() - t1}))
"""


def _writer():
    spec = importlib.util.spec_from_file_location(
        "make_fixture", REPO / ".test" / "make_fixture.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def write_lookalike(folder: Path, n_rows: int, n_noise: int) -> Path:
    """The .test look-alike with about n_rows selected images and n_noise others."""
    fixture = _writer()
    fixture.PER_CONCEPT = math.ceil(n_rows / len(nuswide.CONCEPTS))
    fixture.N_NOISE = n_noise
    return fixture.write(folder)


def _prepare(folder: Path) -> None:
    status = folder / "status.json"
    prepare_data("nuswide", status, data_root=folder / "data",
                 mirror=folder / "mirror", offline=True)  # fmt: skip
    doc = json.loads(status.read_text())
    if not doc["available"]:
        raise RuntimeError(doc["reason"])


def _child_cpu() -> float:
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_utime + ru.ru_stime


def _env() -> dict:
    env = dict(os.environ)
    for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        env[var] = "1"
    return env


def run_job(cfg: dict, splits: Path, out: Path, root: Path, mirror: Path) -> dict:
    """One fit job in its own process: wall and CPU seconds."""
    cpu0, t0 = _child_cpu(), time.perf_counter()
    arg = json.dumps([cfg, str(splits), str(out), str(root), str(mirror)])
    res = subprocess.run(
        [sys.executable, "-c", JOB, arg],
        capture_output=True,
        text=True,
        env=_env(),
        check=False,
    )
    wall, cpu = time.perf_counter() - t0, _child_cpu() - cpu0
    if res.returncode != 0:
        raise RuntimeError(f"{cfg['method']}: {res.stderr[-3000:]}")
    inner = json.loads(res.stdout.strip().splitlines()[-1])
    return {"wall_s": wall, "cpu_s": cpu, **inner}


def _setting_cfg(config: dict, settings: dict, setting: str) -> dict:
    s = settings["nuswide"][setting]
    return {
        "dataset": "nuswide",
        "setting": setting,
        "load": config["datasets"]["nuswide"].get("load") or {},
        "views": s.get("views"),
        "n_labeled": s.get("n_labeled"),
        "per_class": s.get("per_class"),
        "subset": s.get("subset"),
        "pool": s.get("pool"),
        "fit_on": s.get("fit_on", "all"),
        "n_splits": config["n_splits"],
        "val_fraction": config["val_fraction"],
        "seed": config["seed"],
        "learner": s["learner"],
        "r_grid": s["r_grid"],
        "kernel": s.get("kernel", "l2"),
        "fit_extra": None,
        "extra_subset": None,
        "split": "all",
    }


def split_params(cfg: dict) -> dict:
    """The splits job's share of a fit job's parameters (:class:`SplitJob`'s fields)."""
    return {k: cfg[k] for k in SplitJob.__dataclass_fields__ if k in cfg}


def lpt(times: list[float], cores: int = CORES) -> float:
    """Makespan of longest-processing-time-first packing on ``cores`` cores."""
    loads = [0.0] * cores
    for t in sorted(times, reverse=True):
        loads[loads.index(min(loads))] += t
    return max(loads)


def fit_affine(ns: list[float], ts: list[float]) -> tuple[float, float]:
    """(a, b) of t = a + b N by least squares; b = t / N through 0 from one size."""
    if len(ns) == 1:
        return 0.0, ts[0] / ns[0]
    b, a = np.polyfit(np.asarray(ns, float), np.asarray(ts, float), 1)
    if a < 0:  # a negative intercept: keep the slope through the origin instead
        return 0.0, float(np.dot(ns, ts) / np.dot(ns, ns))
    if b < 0:  # no growth measured (timing noise): a constant cost
        return float(np.mean(ts)), 0.0
    return float(a), float(b)


def _fmt_s(seconds: float) -> str:
    """Seconds as s, min or h."""
    if seconds >= 3600:
        return f"{seconds / 3600:.1f} h"
    if seconds >= 60:
        return f"{seconds / 60:.0f} min"
    return f"{seconds:.0f} s"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[1000, 2000])
    ap.add_argument("--config", default=str(REPO / "config" / "config.yaml"))
    ap.add_argument("--quick", action="store_true", help="r in {5, 10}, first eps")
    ap.add_argument("--methods", nargs="*", default=None)
    ap.add_argument("--tables", nargs="*", default=list(COLUMNS))
    ap.add_argument("--out", default=str(RESULTS / "nuswide_cost.md"))
    ap.add_argument(
        "--report",
        nargs="+",
        default=None,
        help="only write the report from these .json files of earlier runs",
    )
    args = ap.parse_args(argv)
    if args.report:
        docs = [json.loads(Path(p).read_text()) for p in args.report]
        prep = max((d["prepare"] for d in docs), key=lambda p: p["lines"])
        # the commands of each run, or of each report made from runs
        commands = [c for d in docs for c in d["commands"]]
        commands.append(_command(argv))
        jobs = [j for d in docs for j in d["jobs"]]
        report(jobs, prep, commands, args.out)  # its data: these jobs too
        return 0

    config = yaml.safe_load(Path(args.config).read_text())
    settings = resolve_settings(config)
    jobs: list[dict] = []
    prep: dict = {}
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="nuswide-cost-") as tmp:
        work = Path(tmp)
        # data preparation: the real share of unselected lines
        n0 = min(args.sizes)
        noise = round(n0 * (N_LINES / N_REAL - 1))
        root = work / "prep" / "data"
        write_lookalike(work / "prep" / "mirror", n0, noise)
        labels = work / "prep/mirror/nuswide/Groundtruth/AllLabels/Labels_bear.txt"
        lines = len(labels.read_text().splitlines())
        t0, c0 = time.perf_counter(), time.process_time()
        _prepare(work / "prep")
        prep = {"lines": lines, "wall_s": time.perf_counter() - t0,
                "cpu_s": time.process_time() - c0}  # fmt: skip
        print(f"prepare: {lines} lines, {prep['cpu_s']:.1f} s CPU", flush=True)

        for size in sorted(args.sizes):
            base = work / f"n{size}"
            write_lookalike(base / "mirror", size, 8)
            root = base / "data"
            _prepare(base)
            for table, setting in COLUMNS.items():
                if table not in args.tables:
                    continue
                if table == "nuswide_kernel" and size != max(args.sizes):
                    continue  # the 500-row subset: the same job at every size
                cfg = _setting_cfg(config, settings, setting)
                splits = base / f"{setting}.json"
                draw_splits(split_params(cfg), splits, data_root=root,
                            mirror=base / "mirror", offline=True)  # fmt: skip
                n_rows = len(json.loads(splits.read_text())["subset"])
                for method, params in settings["nuswide"][setting]["methods"].items():
                    if args.methods and method not in args.methods:
                        continue
                    job_cfg = {**cfg, "method": method, "params": dict(params)}
                    grid = r_grid_of(job_cfg)
                    if args.quick:
                        job_cfg["r_grid"] = grid[:2]
                        job_cfg["params"] = {
                            k: (v[:1] if isinstance(v, list) else v)
                            for k, v in params.items()
                        }
                    out = base / f"{setting}_{method}.csv"
                    m = run_job(job_cfg, splits, out, root, base / "mirror")
                    jobs.append({"table": table, "setting": setting, "method": method,
                                 "size": size, "n_rows": n_rows, **m})  # fmt: skip
                    print(f"{size:>6} {setting} {method:<9} {m['cpu_s']:8.1f} s CPU "
                          f"{m['wall_s']:8.1f} s wall", flush=True)  # fmt: skip
                    # the jobs so far (a run cut short can still be reported)
                    atomic_write_text(
                        Path(args.out).with_suffix(".json"),
                        json.dumps(
                            {
                                "commands": [_command(argv)],
                                "prepare": prep,
                                "jobs": jobs,
                            },
                            indent=1,
                        ),
                    )
    report(jobs, prep, [_command(argv)], args.out)
    return 0


def _cpu() -> str:
    """The processor's model name (Linux), else the machine type."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.machine()


def _hours(seconds: float) -> str:
    return f"{seconds / 3600:.1f} h"


def _command(argv=None) -> str:
    """The command line of this run, repository-relative."""
    words = sys.argv[1:] if argv is None else list(argv)
    shown = [Path(w).name if w.endswith((".json", ".md")) else w for w in words]
    return " ".join(["python investigations/nuswide_cost.py", *shown])


def report(jobs: list[dict], prep: dict, commands: list[str], out: str) -> None:
    """Scale every job to the real size, pack them on 2 cores, write the Markdown.

    A linear-table job measured at the real size (within 1 % of the paper's N)
    counts as measured; the a + b N fit over its smaller sizes is shown beside it,
    as a check of the scaling assumption. Otherwise the fit is the estimate.
    The data beside ``out`` (hand_over) keep ``jobs``, ``prep`` and ``commands``,
    so that the report can be made again from them (``--report``).
    """
    rows, real_times = [], []
    # (predicted, measured, method) at the real size
    checks: list[tuple[float, float, str]] = []
    real_ns: set[int] = set()
    for table in COLUMNS:
        for method in dict.fromkeys(j["method"] for j in jobs if j["table"] == table):
            mine = [j for j in jobs if j["table"] == table and j["method"] == method]
            mine.sort(key=lambda j: j["n_rows"])
            ns = [j["n_rows"] for j in mine]
            cpus = [j["cpu_s"] for j in mine]
            rule = pred = ""
            measured = True
            if table == "nuswide_kernel":
                est = cpus[-1]
            else:
                real = [k for k, n in enumerate(ns) if abs(n - N_REAL) <= 0.01 * N_REAL]
                small = [k for k in range(len(ns)) if k not in real]
                if small:
                    a, b = fit_affine([ns[k] for k in small], [cpus[k] for k in small])
                    rule = f"{a:.1f} + {1000 * b:.3g} N / 1000"
                    pred = _fmt_s(a + b * N_REAL)
                if real:
                    est = cpus[real[-1]]
                    real_ns.add(ns[real[-1]])
                    if small:
                        checks.append((a + b * N_REAL, est, METHODS[method].label))
                else:
                    est, measured = a + b * N_REAL, False
            real_times += [est] * COLUMNS_PER_TABLE
            rows.append(
                {
                    "table": table,
                    "method": METHODS[method].label,
                    "measured: N rows, CPU s": "; ".join(
                        f"{n:,}: {c:.1f}" for n, c in zip(ns, cpus, strict=True)
                    ),
                    "a + b N (s), smaller sizes": rule,
                    f"its N = {N_REAL:,}": pred,
                    "per job at the real size": _fmt_s(est)
                    + ("" if measured else " (predicted)"),
                    "jobs": str(COLUMNS_PER_TABLE),
                }
            )
    prep_s = prep["cpu_s"] * N_LINES / prep["lines"]
    fits_2 = lpt(real_times)
    total = prep_s + fits_2
    serial = sum(real_times)
    longest = max(real_times)
    imports = [j["import_s"] for j in jobs]
    small_ns = sorted(
        {j["n_rows"] for j in jobs if j["table"] == "nuswide_linear"} - real_ns
    )
    keys = list(rows[0])
    table_lines = [
        "| " + " | ".join(keys) + " |",
        "|" + "|".join("---" for _ in keys) + "|",
    ]
    table_lines += ["| " + " | ".join(r[k] for k in keys) + " |" for r in rows]
    if real_ns:
        how = (
            "The linear table's jobs ran at N = "
            + ", ".join(f"{n:,}" for n in sorted(real_ns))
            + ", the real size, and the estimate uses those runs. "
        )
        if checks:
            worst = max(checks, key=lambda c: abs(c[0] - c[1]))
            rest = [c for c in checks if c is not worst]
            pred, meas = sum(c[0] for c in checks), sum(c[1] for c in checks)
            how += (
                "The a + b N fits over the smaller look-alikes (N = "
                + ", ".join(f"{n:,}" for n in small_ns)
                + f") predicted {_fmt_s(pred)} for them against {_fmt_s(meas)} "
                f"measured ({100 * (pred - meas) / meas:+.0f} %)"
            )
            if rest:
                pr, me = sum(c[0] for c in rest), sum(c[1] for c in rest)
                how += (
                    f"; without {worst[2]}, {_fmt_s(pr)} against {_fmt_s(me)} "
                    f"({100 * (pr - me) / me:+.0f} %)"
                )
            how += ". "
    else:
        how = (
            "The linear table's jobs are the a + b N fits over the look-alikes at "
            "N = " + ", ".join(f"{n:,}" for n in small_ns) + ", evaluated at the "
            f"paper's N = {N_REAL:,}. "
        )
    notes = (
        f"Command (with NUS-WIDE's files in data/raw/nuswide/, docs/data.md): "
        f"`{COMMAND}`. Estimated time on {CORES} cores: **{_hours(total)}** "
        f"(data preparation {prep_s / 60:.1f} min, then {len(real_times)} fit jobs "
        f"packed on {CORES} cores {_hours(fits_2)}, longest first; the fits take "
        f"{_hours(serial)} on one core, the longest job {_hours(longest)}). "
        "Measured on the look-alike of `.test/make_fixture.py` (the official file "
        "formats and view dimensions) with config/config.yaml's NUS-WIDE settings "
        f"and their full grids, one column per table ({', '.join(COLUMNS.values())}; "
        f"each table's {COLUMNS_PER_TABLE} columns differ only in the labeled rows "
        f"per class, so each job counts {COLUMNS_PER_TABLE} times): the CPU seconds of "
        "each fit job, run as the workflow runs it (its own process, one thread; "
        f"Python's start and imports are {min(imports):.1f} to {max(imports):.1f} s "
        "of it). " + how + "**How cost grows** (the scaling assumption behind the "
        "fits): at fixed view dimensions d a job of the linear table costs a + b N "
        "in the rows N (BSF/CAT: kNN on the evaluation rows; CCA (BST/AVG) and "
        "CCA-LS: covariances O(N d^2) and "
        "eigenproblems O(d^3) per eps; TCCA: whitening O(N d^2 + d^3) per eps and "
        "ALS sweeps O(N r sum d) (or O(r prod d) on the dense engine, chosen where "
        "cheaper), from as many starts (up to 10) as a fixed budget of flops "
        "allows: flat in N while several starts fit the budget, like N once one "
        "start fills it, so an a + b N fit over small look-alikes underestimates it; "
        "DSE/SSMVD: PCA patterns "
        "O(N d^2) and the consensus O(N K^2), K = 300, per r); the kernel table "
        "runs on its 500-row subset at every size (kernels O(N^2 d), KCCA's "
        "eigenproblems O(N^3), KTCCA's sweeps O(N^2 r), N = 500), so its jobs are "
        f"the real ones, measured and not scaled. Data preparation parses each of "
        f"the {N_LINES:,} lines of the raw files: measured on {prep['lines']:,} lines "
        f"with the real share of unselected images ({prep['cpu_s']:.1f} s CPU) and "
        "scaled by the number of lines (extracting the .rar archive is not "
        "included). The splits, gather and table jobs are not counted. The "
        "look-alike's ALS and SSMVD iteration counts may differ from the real "
        f"data's. Machine: {_cpu()}, {os.cpu_count()} logical cores, "
        "shared (CPU time, not wall time, is what was measured). Commands: "
        + "; ".join(f"`{c}`" for c in commands)
        + "."
    )
    text = "#### NUS-WIDE: the cost of the two missing tables\n\n" + notes + "\n\n"
    text += "\n".join(table_lines) + "\n"
    Path(out).parent.mkdir(parents=True, exist_ok=True)
    # the text and, beside it, its tables, facts and provenance with the measured
    # jobs, in one write (nothing written after it drops them)
    hand_over(text, out, data={"commands": commands, "prepare": prep, "jobs": jobs})
    print(text)


if __name__ == "__main__":
    sys.exit(main())

"""TCCA/KTCCA engines against cca-zoo and the paper's route: time, memory, objective.

Each (case, engine, repeat) runs in its own process (``benchmarks/_child.py``)
with the BLAS threads pinned through the environment before numpy is imported, an
address-space cap (``--mem-gb``) and a time limit (``--time-s``; ``--time-s-other``
for the one of our two engines that ``algorithm="auto"`` does not pick), so a case
that needs too much reports "out of memory" / "over time limit" instead of hanging.
Data are synthetic with the paper's shapes (``benchmarks/_cases.py``).

    pip install -e ".[bench]"
    python benchmarks/bench_engines.py --out benchmarks/results/engines.csv
    python benchmarks/bench_engines.py --cases nus ads --engines implicit cca-zoo

Engines: ``implicit`` (tensor-free), ``dense`` (builds M, our ALS), ``tensorly``
(builds M, ``tensorly.decomposition.parafac``: the paper's route), ``cca-zoo``
(cca-zoo 4.0.1's TCCA / KTCCA, the only other Python TCCA). All get the same eps
(mapped to cca-zoo's shrinkage, see ``_objective.py``).

Per row: median fit time over ``--repeats`` runs of our engines and
``--baseline-repeats`` runs of the baselines (a single run when the first takes over
``--single-over`` seconds; ``n`` says how many), the time in the build of M or
||M||^2 and in the ALS sweeps, sweeps, peak resident memory of the process during
the fit and its increase over the data, the objective (mean |rho_k| of the
high-order correlations of the projected training data and the CP relative error,
computed the same way for every method), the speed-up over cca-zoo and over the
paper's route, and one sweep's flops / time against a DGEMM measured in the same
process (``x DGEMM``: how many times slower than DGEMM the sweep runs).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from _cases import CASES, DEFAULT  # noqa: E402

ENGINES = ["implicit", "dense", "tensorly", "cca-zoo"]
ROUTE = "tensorly"  # the paper's route: dense tensor + tensorly CP-ALS
KEYS = (
    "fit_s",
    "build_s",
    "init_s",
    "als_s",
    "other_s",
    "sweeps",
    "sweep_s",
    "sweep_gflop",
    "sweep_gflops",
    "gemm_gflops",
    "gemm_ratio",
    "peak_rss_mb",
    "fit_mem_mb",
    "corr_mean",
    "corr_max",
    "rel_error",
)


def _env(threads: int) -> dict:
    env = dict(os.environ)
    for var in (
        "OMP_NUM_THREADS",
        "OPENBLAS_NUM_THREADS",
        "MKL_NUM_THREADS",
        "BLIS_NUM_THREADS",
        "VECLIB_MAXIMUM_THREADS",
    ):
        env[var] = str(threads)
    env["PYTHONPATH"] = HERE + os.pathsep + env.get("PYTHONPATH", "")
    return env


#: Cases whose auto engine may take longer than --time-s (the target: "in minutes").
LONG_CASES = {"ktcca-5597": 900.0}


def auto_pick(case) -> str:
    """The engine ``algorithm="auto"`` picks for the case (the library's cost model)."""
    import numpy as np
    import scipy.sparse as sp
    from _cases import make_views

    from tcca_core.solver.engine import choose_engine
    from tcca_core.solver.views import SPARSE_DENSITY

    if case.kind == "ktcca":
        return choose_engine(case.N, [case.N] * len(case.dims), case.r, "auto")
    views = make_views(case, 0)
    nnz = [X.nnz if sp.issparse(X) else np.count_nonzero(X) for X in views]
    sparse = all(
        sp.issparse(X) or k <= SPARSE_DENSITY * X.size
        for X, k in zip(views, nnz, strict=True)
    )
    return choose_engine(
        case.N,
        list(case.dims),
        case.r,
        "auto",
        [k / case.N for k in nnz] if sparse else None,
    )


def predicted_refusal(case, engine, args) -> str | None:
    """Say what is known without running it: our dense engines refuse tensors over
    ``DENSE_MAX_BYTES``; cca-zoo's KTCCA builds an (N-1)^m tensor of kernel
    eigen-features, which would run into the memory cap after minutes of
    eigendecompositions."""
    import numpy as np

    if engine in ("dense", "tensorly"):
        from tcca_core.solver.dense import DENSE_MAX_BYTES

        dims = case.dims if case.kind == "tcca" else [case.N] * len(case.dims)
        gib = 8.0 * float(np.prod(np.asarray(dims, dtype=float))) / 1024**3
        if gib * 1024**3 > DENSE_MAX_BYTES:
            # what the library answers, after the kernels / whitening it does first
            return (
                f"refused: the dense tensor would take {gib:,.1f} GiB "
                f"(the library's limit is {DENSE_MAX_BYTES / 1024**3:g} GiB)"
            )
    if engine == "cca-zoo" and case.kind == "ktcca":
        gb = 8.0 * (case.N - 1) ** len(case.dims) / 1e9
        if gb > args.mem_gb:
            return (
                f"not run: its {case.N - 1}^{len(case.dims)} tensor needs "
                f"{gb:,.0f} GB (cap {args.mem_gb:g} GB)"
            )
    return None


def run_one(case, engine, seed, args, time_s, init=None):
    def limit():
        cap = int(args.mem_gb * 1024**3)
        resource.setrlimit(resource.RLIMIT_AS, (cap, cap))

    cmd = [
        sys.executable,
        os.path.join(HERE, "_child.py"),
        case,
        engine,
        str(seed),
        str(args.eps),
        init or args.init or "",
    ]
    try:
        out = subprocess.run(
            cmd,
            capture_output=True,
            text=True,
            env=_env(args.threads),
            timeout=time_s,
            preexec_fn=limit,
        )
    except subprocess.TimeoutExpired:
        return {"status": f"over time limit ({time_s:g} s)", "limit_s": time_s}
    lines = [ln for ln in out.stdout.splitlines() if ln.startswith("{")]
    if out.returncode != 0 or not lines:
        err = out.stderr.strip().splitlines()
        if (
            any(
                (
                    "MemoryError" in ln
                    or "Unable to allocate" in ln
                    or "std::bad_alloc" in ln
                )
                for ln in err
            )
            or out.returncode == -9
        ):
            return {"status": f"out of memory (cap {args.mem_gb:g} GB)"}
        return {
            "status": "failed: " + (err[-1][:150] if err else f"exit {out.returncode}")
        }
    return json.loads(lines[-1])


def _speedup(base, ours) -> str:
    """'12.3' when both ran, '>12.3' when the baseline hit the time limit."""
    import re

    if ours is None or ours.get("status") != "ok" or base is None:
        return ""
    status = str(base.get("status", ""))
    if status == "ok":
        return f"{base['fit_s'] / ours['fit_s']:.3g}"
    limit = re.match(r"over time limit \(([0-9.]+) s\)", status)
    if limit:
        return f">{float(limit.group(1)) / ours['fit_s']:.3g}"
    if status.startswith(("out of memory", "not run")):
        return "only ours runs"
    return ""


def add_ratios(df):
    """Speed-up of every row over cca-zoo and over the paper's route, per case."""
    df = df.copy()
    df["x_vs_cca_zoo"] = ""
    df["x_vs_route"] = ""
    for _, group in df.groupby("case", sort=False):
        rows = {r["engine"]: r for _, r in group.iterrows()}
        for i, r in group.iterrows():
            if r["engine"] != "cca-zoo":
                df.at[i, "x_vs_cca_zoo"] = _speedup(rows.get("cca-zoo"), r)
            if r["engine"] not in (ROUTE, "cca-zoo"):
                df.at[i, "x_vs_route"] = _speedup(rows.get(ROUTE), r)
    return df


def machine_info(threads: int) -> dict:
    import numpy as np
    from threadpoolctl import threadpool_info

    model = ""
    try:
        out = subprocess.run(["lscpu"], capture_output=True, text=True).stdout
        model = next(
            (
                ln.split(":", 1)[1].strip()
                for ln in out.splitlines()
                if ln.startswith("Model name")
            ),
            "",
        )
    except OSError:
        pass
    blas = [
        f"{i.get('internal_api')} {i.get('version')} ({i.get('architecture')})"
        for i in threadpool_info()
        if i.get("user_api") == "blas"
    ]
    mem = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 1024**3
    return {
        "cpu": model,
        "cores": os.cpu_count(),
        "mem_gib": round(mem, 1),
        "blas": "; ".join(blas),
        "threads": threads,
        "python": platform.python_version(),
        "numpy": np.__version__,
    }


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cases", nargs="*", default=DEFAULT, choices=list(CASES))
    ap.add_argument("--engines", nargs="*", default=ENGINES, choices=ENGINES)
    ap.add_argument("--repeats", type=int, default=3, help="runs of our engines")
    ap.add_argument(
        "--baseline-repeats", type=int, default=1, help="runs of tensorly / cca-zoo"
    )
    ap.add_argument(
        "--single-over",
        type=float,
        default=60.0,
        help="one run only when the first run takes longer (s)",
    )
    ap.add_argument(
        "--threads",
        type=int,
        default=1,
        help="BLAS threads per run (1: on a shared machine a 2nd thread spin-waits)",
    )
    ap.add_argument("--eps", type=float, default=1e-2)
    ap.add_argument("--seed", type=int, default=0, help="data and init seed")
    ap.add_argument(
        "--init", help="init of our engines (default: the library's default)"
    )
    ap.add_argument(
        "--extra",
        nargs="*",
        default=[],
        metavar="ENGINE:INIT",
        help="extra single-run rows with another init, e.g. auto:hosvd "
        "(auto = the engine algorithm='auto' picks)",
    )
    ap.add_argument("--mem-gb", type=float, default=16.0)
    ap.add_argument(
        "--time-s",
        type=float,
        default=300.0,
        help="time limit of auto's engine and of the baselines",
    )
    ap.add_argument(
        "--time-s-other",
        type=float,
        default=120.0,
        help="time limit of our engine that auto does not pick",
    )
    ap.add_argument("--out", help="also write the table as CSV (and .md beside it)")
    ap.add_argument(
        "--update",
        metavar="CSV",
        help="merge into this earlier table: its rows for the (case, engine) pairs "
        "run now are replaced",
    )
    args = ap.parse_args(argv)

    info = machine_info(args.threads)
    print("# " + json.dumps(info))
    print(f"# load average at start: {os.getloadavg()}", flush=True)
    rows = []
    t_start = time.time()
    for case in args.cases:
        c = CASES[case]
        auto = auto_pick(c)
        specs = [(e, None, e) for e in args.engines]
        for extra in args.extra:
            name, init = extra.split(":", 1)
            engine = auto if name == "auto" else name
            specs.append((engine, init, f"{engine}+{init}"))
        for engine, init, label in specs:
            load = os.getloadavg()[0]
            time_s = LONG_CASES.get(case, args.time_s)
            if engine in ("implicit", "dense") and engine != auto:
                time_s = min(time_s, args.time_s_other)
            runs = []
            skip = predicted_refusal(c, engine, args)
            repeats = args.repeats if label in ("implicit", "dense") else 1
            if engine in ("tensorly", "cca-zoo"):
                repeats = args.baseline_repeats
            for _ in range(repeats if skip is None else 0):
                # the same seed every time: repeats measure timing noise, not the
                # spread over random starts (solver_quality.py does that)
                res = run_one(case, engine, args.seed, args, time_s, init)
                runs.append(res)
                if res["status"] != "ok" or res["fit_s"] > args.single_over:
                    break
            if skip is not None:
                runs = [{"status": skip}]
            ok = [x for x in runs if x["status"] == "ok"]
            row = {
                "case": case,
                "method": c.kind.upper(),
                "N": c.N,
                "dims": "/".join(map(str, c.dims)),
                "r": c.r,
                "input": (
                    "sparse " if c.sparse_input and engine != "cca-zoo" else "dense "
                )
                + c.data,
                "engine": label,
                "n": len(ok),
            }
            if ok:
                for key in KEYS:
                    vals = [x[key] for x in ok if x.get(key) is not None]
                    row[key] = statistics.median(vals) if vals else None
                row["status"] = "ok" if len(ok) == len(runs) else "partly failed"
                row["auto"] = auto == label
                row["norm_route"] = ok[0].get("norm_route", "")
                row["blas_threads"] = ",".join(str(t) for _, t in ok[0].get("blas", []))
            else:
                row["status"] = runs[0]["status"]
                row["auto"] = auto == label
            row["load1"] = round(load, 2)
            rows.append(row)
            print(json.dumps(row), flush=True)
    print(
        f"# load average at end: {os.getloadavg()}; "
        f"total {time.time() - t_start:.0f} s",
        flush=True,
    )

    import pandas as pd

    df = pd.DataFrame(rows)
    if args.update:
        # replace the re-run (case, engine) rows of an earlier table, keep the rest
        old = pd.read_csv(args.update, keep_default_na=False, na_values=[""])
        if df.empty:  # nothing re-run: just re-render the table
            df = old.iloc[:0]
        key = set(zip(df["case"], df["engine"], strict=True))
        pairs = zip(old["case"], old["engine"], strict=True)
        keep = old[[(c, e) not in key for c, e in pairs]]
        merged = pd.concat([keep, df], ignore_index=True)
        order = {c: i for i, c in enumerate(CASES)}
        eng = {e: i for i, e in enumerate(ENGINES)}
        merged["_c"] = merged["case"].map(order)
        merged["_e"] = merged["engine"].map(lambda e: eng.get(e, len(eng)))
        df = merged.sort_values(["_c", "_e"], kind="stable").drop(columns=["_c", "_e"])
        df = df.reset_index(drop=True)
    df = add_ratios(df)
    with pd.option_context("display.width", 250, "display.max_columns", 40):
        print(df.to_string(index=False, float_format=lambda v: f"{v:.4g}"))
    if args.out:
        os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
        df.to_csv(args.out, index=False)
        md = os.path.splitext(args.out)[0] + ".md"
        with open(md, "w") as fh:
            fh.write(f"machine: {json.dumps(info)}\n\n")
            fh.write(markdown_table(df))
        print(f"# wrote {args.out} and {md}")


def _fmt(v, digits=3):
    if v is None or v == "" or (isinstance(v, float) and v != v):
        return ""
    if isinstance(v, float):
        return f"{v:.{digits}g}"
    return str(v)


def markdown_table(df) -> str:
    """The table BENCHMARKS.md shows."""
    cols = [
        ("case", "case"),
        ("r", "r"),
        ("input", "input"),
        ("engine", "engine"),
        ("auto", "auto"),
        ("n", "n"),
        ("fit_s", "fit (s)"),
        ("build_s", "build (s)"),
        ("init_s", "init (s)"),
        ("als_s", "ALS (s)"),
        ("other_s", "other (s)"),
        ("sweeps", "sweeps"),
        ("sweep_s", "s/sweep"),
        ("gemm_ratio", "x DGEMM"),
        ("peak_rss_mb", "peak RSS (MB)"),
        ("fit_mem_mb", "fit +MB"),
        ("corr_mean", "mean abs(rho)"),
        ("rel_error", "CP rel. err"),
        ("x_vs_cca_zoo", "x vs cca-zoo"),
        ("x_vs_route", "x vs route"),
        ("status", "status"),
        ("load1", "load"),
    ]
    cols = [(k, h) for k, h in cols if k in df.columns]
    lines = ["| " + " | ".join(h for _, h in cols) + " |", "|" + "---|" * len(cols)]
    for _, row in df.iterrows():
        cells = []
        for k, _ in cols:
            v = row.get(k)
            if k == "auto":
                v = "*" if v is True else ""
            elif k in ("sweeps", "n", "r"):
                v = "" if v is None or v != v else str(int(round(v)))
            elif k in ("peak_rss_mb", "fit_mem_mb"):
                v = "" if v is None or v != v else f"{v:.0f}"
            elif k in ("corr_mean", "rel_error"):
                v = _fmt(v, 4)
            elif k == "status" and v == "ok":
                v = "ok"
            else:
                v = _fmt(v)
            cells.append(v)
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()

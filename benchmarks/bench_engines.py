"""Fit time and peak memory of TCCA/KTCCA's engines at the paper's shapes.

Each (case, engine) runs in its own process under a memory cap and a time limit, so
that a case that would need too much reports "out of memory" / "over time limit"
instead of taking the machine down. Data are synthetic with the paper's shapes.

    python benchmarks/bench_engines.py                 # all cases, print a table
    python benchmarks/bench_engines.py --cases nus ads --repeats 3 --out results.csv

Columns: fit_s (median wall time of the fit), sweeps, peak_mb (tracemalloc peak of
the fit: memory the fit itself allocated), rss_mb (process high-water mark), the
mean high-order correlation of the r components and the final relative
reconstruction error ||M - M_hat|| / ||M|| (the CP fit), so that a faster engine that
stops at a worse objective is visible.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time

CASES = {
    # name: (kind, N, dims, r, sparse)
    "secstr-r50": ("tcca", 84_000, [105, 105, 105], 50, "onehot"),
    "secstr-r300": ("tcca", 84_000, [105, 105, 105], 300, "onehot"),
    "secstr-extra-r300": ("tcca", 1_300_000, [105, 105, 105], 300, "onehot"),
    "ads": ("tcca", 3279, [588, 495, 472], 50, "binary"),
    "nus": ("tcca", 5597, [500, 144, 128], 50, "dense"),
    "ktcca-500": ("ktcca", 500, [500, 144, 128], 50, "dense"),
    "ktcca-2000": ("ktcca", 2000, [500, 144, 128], 50, "dense"),
    "mfeat-m6": ("tcca", 2000, [76, 216, 64, 240, 47, 6], 20, "dense"),
}


def make_views(N, dims, kind, seed=0):
    import numpy as np
    import scipy.sparse as sp

    rng = np.random.default_rng(seed)
    if kind == "onehot":
        # SecStr: 5 positions x 21 amino-acid symbols per view, one-hot.
        views = []
        z = rng.integers(0, 21, size=N)
        for d in dims:
            npos = d // 21
            cats = (z[:, None] + rng.integers(0, 3, size=(N, npos))) % 21
            cols = (np.arange(npos) * 21)[None, :] + cats
            rows = np.repeat(np.arange(N), npos)
            X = sp.csr_matrix((np.ones(N * npos), (rows, cols.ravel())), shape=(N, d))
            views.append(X)
        return views
    S = rng.exponential(size=(N, 5)) - 1.0
    views = []
    for d in dims:
        X = S @ rng.standard_normal((5, d)) + rng.standard_normal((N, d))
        if kind == "binary":
            X = sp.csr_matrix((X > 1.5).astype(float))
        views.append(X)
    return views


def child(case: str, engine: str, seed: int) -> None:
    """Run one fit and print a JSON line with its measurements."""
    import tracemalloc

    import numpy as np

    from tcca_core import KTCCA, TCCA

    kind, N, dims, r, data = CASES[case]
    views = make_views(N, dims, data, seed)
    Est = TCCA if kind == "tcca" else KTCCA
    kwargs = {} if kind == "tcca" else {"kernel": "l2"}
    est = Est(r, algorithm=engine, random_state=seed, **kwargs)
    tracemalloc.start()
    t = time.perf_counter()
    try:
        est.fit(views)
    except ValueError as exc:
        print(json.dumps({"status": f"refused: {exc}"}))
        return
    fit_s = time.perf_counter() - t
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    print(
        json.dumps(
            {
                "status": "ok",
                "fit_s": fit_s,
                "sweeps": est.n_iter_,
                "peak_mb": peak / 1e6,
                "rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e3,
                "mean_corr": float(np.mean(est.correlations_)),
                "rel_error": float(est.reconstruction_errors_[-1]),
                "engine_used": est.algorithm_,
            }
        )
    )


def run_one(case, engine, seed, mem_gb, time_s):
    def limit():
        cap = int(mem_gb * 1024**3)
        resource.setrlimit(resource.RLIMIT_AS, (cap, cap))

    cmd = [sys.executable, __file__, "--child", case, engine, str(seed)]
    try:
        out = subprocess.run(
            cmd, capture_output=True, text=True, timeout=time_s, preexec_fn=limit
        )
    except subprocess.TimeoutExpired:
        return {"status": f"over time limit ({time_s} s)"}
    lines = [ln for ln in out.stdout.splitlines() if ln.startswith("{")]
    if out.returncode != 0 or not lines:
        err = out.stderr.strip().splitlines()
        if any("MemoryError" in ln or "Unable to allocate" in ln for ln in err):
            return {"status": f"out of memory (cap {mem_gb} GB)"}
        return {"status": "failed: " + (err[-1] if err else f"exit {out.returncode}")}
    return json.loads(lines[-1])


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cases", nargs="*", default=list(CASES), choices=list(CASES))
    ap.add_argument("--engines", nargs="*", default=["implicit", "dense"])
    ap.add_argument("--repeats", type=int, default=1)
    ap.add_argument("--mem-gb", type=float, default=16.0)
    ap.add_argument("--time-s", type=float, default=600.0)
    ap.add_argument("--out", help="also write the table as CSV (and .md beside it)")
    args = ap.parse_args(argv)

    import numpy as np
    import pandas as pd
    from threadpoolctl import threadpool_info

    threads = os.environ.get("OMP_NUM_THREADS", "default")
    blas = [(i["internal_api"], i["num_threads"]) for i in threadpool_info()]
    print(f"# cpus={os.cpu_count()} OMP_NUM_THREADS={threads} BLAS={blas}")
    rows = []
    for case in args.cases:
        kind, N, dims, r, data = CASES[case]
        for engine in args.engines:
            runs = [
                run_one(case, engine, seed, args.mem_gb, args.time_s)
                for seed in range(args.repeats)
            ]
            ok = [x for x in runs if x["status"] == "ok"]
            row = {
                "case": case,
                "method": kind.upper(),
                "N": N,
                "dims": "/".join(map(str, dims)),
                "r": r,
                "input": data,
                "engine": engine,
            }
            if ok:
                for key in ("fit_s", "sweeps", "peak_mb", "rss_mb", "mean_corr",
                            "rel_error"):
                    row[key] = statistics.median(x[key] for x in ok)
                row["status"] = "ok" if len(ok) == len(runs) else "partly failed"
            else:
                row["status"] = runs[0]["status"][:120]
            rows.append(row)
            print(json.dumps(row), flush=True)
    df = pd.DataFrame(rows)
    with pd.option_context("display.width", 200, "display.max_columns", 20):
        print(df.to_string(index=False, float_format=lambda v: f"{v:.4g}"))
    if args.out:
        df.to_csv(args.out, index=False)
        with open(os.path.splitext(args.out)[0] + ".md", "w") as fh:
            fh.write(df.to_markdown(index=False, floatfmt=".4g") if _has_tabulate()
                     else df.to_string(index=False))
    del np


def _has_tabulate() -> bool:
    try:
        import tabulate  # noqa: F401
    except ImportError:
        return False
    return True


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        child(sys.argv[2], sys.argv[3], int(sys.argv[4]))
    else:
        main()

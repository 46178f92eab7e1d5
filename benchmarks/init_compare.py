"""ALS initializations compared along an r grid: objective, sweeps and time.

Starts compared (all through ``TCCA.fit_path``, which whitens and builds M or
||M||^2 once per case):

* ``random``: Gaussian factors;
* ``svd``: our randomized HOSVD, one Khatri-Rao-structured sketch per mode (an
  MTTKRP with r + 10 columns; never unfolds M);
* ``hosvd``: the exact HOSVD (tensorly's and hence cca-zoo's ``init="svd"``), from
  the mode Gram matrices M_(p) M_(p)^T, which the implicit engine computes from
  the N x N Gram matrices without unfolding M;
* ``warm-svd`` / ``warm-hosvd``: ``warm_start=True``, each r starting from the
  solution at the previous r plus the next columns of the svd / hosvd start.

Reported per (case, r, start): sweeps to tol, the CP relative error (the ALS
objective, lower is better), mean |rho_k| of the high-order correlations of the
projected training data, and the fit time (for a path: the time of that rank; the
shared whitening and build are reported once per case). Random and svd starts are
averaged over ``--seeds`` seeds.

    cd benchmarks && python init_compare.py --seeds 2 --out results/init_compare.csv
"""

from __future__ import annotations

import argparse
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)


def _cases():
    from _cases import Case

    nus = (500, 144, 128)
    return {
        # name: (case, r grid, engine)
        "ads": (
            Case("ads", "tcca", 3279, (588, 495, 472), 50, "binary", True),
            [10, 20, 30, 40, 50],
            "implicit",
        ),
        "nus": (
            Case("nus", "tcca", 5597, nus, 50, "dense", False),
            [10, 20, 30, 40, 50],
            "implicit",
        ),
        # SecStr-shaped, N = 20K (the 84K set takes 4x longer and behaves alike);
        # r = 150 > d = 105 exercises the padded starts.
        "secstr-20k": (
            Case("secstr-20k", "tcca", 20_000, (105, 105, 105), 50, "onehot", True),
            [10, 20, 30, 40, 50, 100, 150],
            "dense",
        ),
    }


STARTS = ["random", "svd", "hosvd", "warm-svd", "warm-hosvd"]


def run_case(name, case, ranks, engine, starts, seeds, max_iter, tol):
    import warnings

    import numpy as np
    from _cases import make_views
    from sklearn.exceptions import ConvergenceWarning

    from tcca_core import TCCA

    views = make_views(case, 0)
    rows = []
    for start in starts:
        warm = start.startswith("warm-")
        init = start.split("-", 1)[1] if warm else start
        seed_list = range(seeds) if init in ("random", "svd") else [0]
        for seed in seed_list:
            t0 = time.perf_counter()
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", ConvergenceWarning)
                fits = TCCA.fit_path(
                    views,
                    ranks,
                    warm_start=warm,
                    init=init,
                    random_state=seed,
                    algorithm=engine,
                    max_iter=max_iter,
                    tol=tol,
                )
            total = time.perf_counter() - t0
            for r, est in zip(ranks, fits, strict=True):
                rows.append(
                    {
                        "case": name,
                        "engine": engine,
                        "start": start,
                        "seed": seed,
                        "r": r,
                        "sweeps": est.n_iter_,
                        "converged": est.converged_,
                        "rel_error": est.reconstruction_errors_[-1],
                        "mean_abs_rho": float(np.mean(np.abs(est.correlations_))),
                        "fit_s": est.fit_seconds_,
                        "path_s": total,
                    }
                )
            print(
                f"{name:11s} {start:10s} seed {seed}: {total:6.1f} s, errors "
                + " ".join(f"{x['rel_error']:.4f}" for x in rows[-len(ranks) :]),
                flush=True,
            )
    return rows


def summarize(df):
    import pandas as pd

    per_r = (
        df.groupby(["case", "r", "start"], sort=False)
        .agg(
            sweeps=("sweeps", "mean"),
            rel_error=("rel_error", "mean"),
            mean_abs_rho=("mean_abs_rho", "mean"),
            fit_s=("fit_s", "mean"),
        )
        .reset_index()
    )
    best = per_r.groupby(["case", "r"])["rel_error"].transform("min")
    per_r["gap_to_best"] = per_r["rel_error"] - best
    overall = (
        per_r.groupby(["case", "start"], sort=False)
        .agg(
            mean_rel_error=("rel_error", "mean"),
            mean_gap_to_best=("gap_to_best", "mean"),
            best_at=("gap_to_best", lambda g: int((g <= 1e-6).sum())),
            mean_abs_rho=("mean_abs_rho", "mean"),
            total_sweeps=("sweeps", "sum"),
            total_fit_s=("fit_s", "sum"),
        )
        .reset_index()
    )
    return per_r, pd.DataFrame(overall)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    cases = _cases()
    ap.add_argument("--cases", nargs="*", default=list(cases), choices=list(cases))
    ap.add_argument("--starts", nargs="*", default=STARTS, choices=STARTS)
    ap.add_argument("--seeds", type=int, default=2)
    ap.add_argument("--max-iter", type=int, default=200)
    ap.add_argument("--tol", type=float, default=1e-6)
    ap.add_argument("--threads", type=int, default=1, help="BLAS threads")
    ap.add_argument("--out", help="CSV of every fit (summary .md beside it)")
    args = ap.parse_args(argv)

    import pandas as pd
    from threadpoolctl import threadpool_limits

    threadpool_limits(args.threads)

    rows = []
    for name in args.cases:
        case, ranks, engine = cases[name]
        rows += run_case(
            name, case, ranks, engine, args.starts, args.seeds, args.max_iter, args.tol
        )
    df = pd.DataFrame(rows)
    per_r, overall = summarize(df)
    with pd.option_context("display.width", 200, "display.max_rows", 500):
        print(per_r.to_string(index=False, float_format=lambda v: f"{v:.5g}"))
        print()
        print(overall.to_string(index=False, float_format=lambda v: f"{v:.5g}"))
    if args.out:
        df.to_csv(args.out, index=False)
        md = os.path.splitext(args.out)[0] + ".md"
        with open(md, "w") as fh:
            fh.write(overall.to_markdown(index=False, floatfmt=".4g") + "\n\n")
            fh.write(per_r.to_markdown(index=False, floatfmt=".4g") + "\n")
        print(f"# wrote {args.out} and {md}")


if __name__ == "__main__":
    main()

"""Gauss-Newton (``solver="lm"``) against ALS: CPU seconds, steps and the error reached.

For each case the engine is built once, as ``TCCA(eps=...).fit`` builds it (the
whitening, M or ||M||^2, the exact HOSVD and the compression to its bases), and
each solver then runs :meth:`MomentEngine.decompose` from each start, one start at
a time (``n_init=1``, so no race): the exact HOSVD (``hosvd``) and Gaussian factors
drawn with seeds 0, 1 and 2 (``random-s0`` ...). Reported per case, rank, start
and solver: the CPU seconds of that call (``time.process_time``: the start, the
solver and the normalization; what every fit of the case shares is paid once
before and left out), the ALS sweeps or Gauss-Newton steps of the start, why it
stopped (``tol``: the stopping rule; ``max_iter``; ``diverged``: a degenerate fit
stopped at its best resolved iterate) and the relative error ||M - M_hat|| / ||M||
reached (lower is better). Both solvers run the library's defaults otherwise (ALS
with momentum; ``tol=1e-5``, ``max_iter=500``). Where the engine compresses M to
its HOSVD bases (Ads, SecStr), ALS runs from the start itself and Gauss-Newton
from its projection onto the bases: the same start where it lies in them (the
exact HOSVD start up to a mode's rank), a different one otherwise (Gaussian
starts, and the random columns the exact HOSVD start adds past a mode's rank).

Cases: ``ads`` (the real data, eps = 1e-2, r = 50, 150, 200), ``secstr`` (SecStr
84K, eps = 1e-2, r = 50: a fit whose error stays high), and ``planted`` (three
views of N = 20,000 samples driven by 10 skewed latent factors, r = 10). Real data
sets are read from the data folder (``--root``); a missing one is skipped.

    python benchmarks/lm_vs_als.py --root data --out benchmarks/results/lm.csv \\
        --markdown benchmarks/results/lm.md

One BLAS thread (set before numpy loads): CPU seconds compare within one run;
on a shared machine they are inflated, the steps and errors are not.
"""

from __future__ import annotations

import argparse
import csv
import os
import sys

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import time  # noqa: E402
import warnings  # noqa: E402

SEEDS = (0, 1, 2)
COLUMNS = ["case", "r", "start", "solver", "cpu_s", "steps", "stop", "error"]


def planted(seed: int = 0):
    """Three views of N = 20,000 samples driven by 10 skewed latent factors."""
    import numpy as np

    rng = np.random.default_rng(seed)
    N, dims = 20_000, (40, 30, 20)
    S = rng.exponential(size=(N, 10)) - 1.0
    return [
        S @ rng.standard_normal((10, d)) + 0.3 * rng.standard_normal((N, d))
        for d in dims
    ]


def real(name: str, root: str):
    from tcca_core.datasets import load

    return list(load(name, root=root).views)


# name: (loader, eps, ranks)
CASES = {
    "planted": (lambda root: planted(), 1e-2, [10]),
    "ads": (lambda root: real("ads", root), 1e-2, [50, 150, 200]),
    "secstr": (lambda root: real("secstr", root), 1e-2, [50]),
}


def engine_of(views, eps: float, rank: int):
    """The engine ``TCCA(eps=eps).fit`` makes (centered views, ``algorithm="auto"``)."""
    from tcca_core.solver.engine import MomentEngine
    from tcca_core.solver.linalg import column_mean, covariance, inv_sqrt_psd
    from tcca_core.solver.views import WhitenedView

    means = [column_mean(X) for X in views]
    covs = [covariance(X, mu) for X, mu in zip(views, means, strict=True)]
    whiteners = [inv_sqrt_psd(C, eps) for C in covs]
    wviews = [
        WhitenedView(X, mu, W) for X, mu, W in zip(views, means, whiteners, strict=True)
    ]
    return MomentEngine.choose(wviews, rank, "auto")


def run_case(name: str, root: str, solvers, ranks=None) -> list[dict]:
    import numpy as np

    from tcca_core.solver.params import SolverParams

    loader, eps, default_ranks = CASES[name]
    try:
        views = loader(root)
    except Exception as exc:  # a data set not prepared: reported, skipped
        print(f"{name}: skipped ({type(exc).__name__}: {exc})", file=sys.stderr)
        return []
    ranks = ranks or default_ranks
    engine = engine_of(views, eps, max(ranks))
    # what every fit of the case shares, paid once: ||M||^2, the HOSVD, the core
    _ = engine.norm_sq
    engine.hosvd_bases()
    engine.compressed()
    rows = []
    starts = [("hosvd", "hosvd", 0)] + [(f"random-s{s}", "random", s) for s in SEEDS]
    for r in ranks:
        for label, init, seed in starts:
            for solver in solvers:
                params = SolverParams(
                    eps=eps, init=init, n_init=1, random_state=seed, solver=solver
                )
                t = time.process_time()
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    _, _, info = engine.decompose(
                        r, params, rng=np.random.default_rng(seed)
                    )
                row = {
                    "case": name,
                    "r": r,
                    "start": label,
                    "solver": solver,
                    "cpu_s": round(time.process_time() - t, 2),
                    "steps": info["n_iter"],
                    "stop": _stop(info),
                    "error": round(float(info["errors"][-1]), 6),
                }
                rows.append(row)
                print(_line(row), flush=True)
    return rows


def _stop(info: dict) -> str:
    """Why the start's run ended: the rule (tol), max_iter, or a degenerate fit."""
    if info.get("diverged"):
        return "diverged"
    if info.get("broke_down"):
        return "broke down"
    return "tol" if info["converged"] else "max_iter"


def _line(row: dict) -> str:
    return "  ".join(f"{k}={row[k]}" for k in COLUMNS)


def markdown(rows: list[dict]) -> str:
    """One row per case, rank and start: both solvers side by side."""
    out = [
        "| case | r | start | ALS: CPU s / sweeps / error | LM: CPU s / steps / "
        "error | LM / ALS time | LM error vs ALS |",
        "|---|---:|---|---|---|---:|---:|",
    ]
    seen: dict = {}
    for row in rows:
        seen.setdefault((row["case"], row["r"], row["start"]), {})[row["solver"]] = row
    for (case, r, start), pair in seen.items():
        als, lm = pair.get("als"), pair.get("lm")

        def cell(x):
            if x is None:
                return "-"
            flag = "" if x["stop"] == "tol" else f" ({x['stop']})"
            return f"{x['cpu_s']:.2f} / {x['steps']}{flag} / {x['error']:.6f}"

        ratio = gap = "-"
        if als and lm:
            ratio = f"{lm['cpu_s'] / max(als['cpu_s'], 1e-9):.2f}x"
            gap = f"{100 * (lm['error'] - als['error']) / als['error']:+.2f} %"
        out.append(
            f"| {case} | {r} | {start} | {cell(als)} | {cell(lm)} | {ratio} | {gap} |"
        )
    return "\n".join(out)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--root", default="data", help="prepared data folder")
    ap.add_argument("--cases", nargs="*", default=list(CASES), choices=list(CASES))
    ap.add_argument("--ranks", nargs="*", type=int, help="instead of the cases' own")
    ap.add_argument("--solvers", nargs="*", default=["als", "lm"])
    ap.add_argument("--out", help="CSV file of the rows")
    ap.add_argument("--markdown", help="also write the table here")
    args = ap.parse_args(argv)
    rows = []
    for name in args.cases:
        rows += run_case(name, args.root, args.solvers, args.ranks)
    table = markdown(rows)
    print(table)
    if args.out:
        with open(args.out, "w", newline="", encoding="utf-8") as fh:
            writer = csv.DictWriter(fh, fieldnames=COLUMNS)
            writer.writeheader()
            writer.writerows(rows)
    if args.markdown:
        with open(args.markdown, "w", encoding="utf-8") as fh:
            fh.write(table + "\n")


if __name__ == "__main__":
    main()

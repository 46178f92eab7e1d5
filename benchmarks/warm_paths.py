"""Rank paths cold and warm-started: sweeps, seconds and errors.

A grid job fits TCCA at every rank of the paper's grid (35 ranks, 5 to 300). Cold,
each rank is a standalone fit (its own starts, raced); warm-started
(``fit_path(..., warm_start=True)``), the previous rank's solution plus fresh
columns is one more start in the race. This fits one path per variant on all rows
of a data set and prints, per variant, the wall, the sweeps of the kept starts,
how many ranks kept the warm start, and the relative error of every rank against
the first variant's (the cold path):

    python benchmarks/warm_paths.py --root data --data ads --eps 1e-2
    python benchmarks/warm_paths.py --root data --data mfeat --eps 1 \\
        --variants cold warm warm:150
    python benchmarks/warm_paths.py --root data --data mfeat --method ktcca --eps 1 \\
        --variants cold warm:150

KTCCA runs the grid's kernel2000 job's path: mfeat's 2,000 rows, r = 5, 10, ..., 100
(the r grid the pipeline truncates at its r_max).

A variant is ``cold``, ``warm`` or ``lean``, optionally ``:max_iter`` (default: the
library's, 500). ``lean`` is a candidate policy, not the library's: a warm path whose
warm ranks race the warm start against the exact HOSVD start only (``n_init = 1``
where a warm start exists), instead of against every raced start::

    python benchmarks/warm_paths.py --root data --data mfeat --eps 1e-2 \
        --variants warm:150 lean:150

One BLAS thread (set before numpy loads). mfeat uses the grid's linear views (fac,
fou, kar).
"""

from __future__ import annotations

import argparse
import json
import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import dataclasses  # noqa: E402
import time  # noqa: E402
import warnings  # noqa: E402

#: mfeat's prepared views are fou, fac, kar, pix, zer, mor; the grid's linear views
#: are fac, fou, kar
VIEWS = {"mfeat": [1, 0, 2]}


def run(views, eps: float, ranks, variant: str, method: str = "tcca") -> dict:
    from sklearn.exceptions import ConvergenceWarning

    from tcca_core import KTCCA, TCCA
    from tcca_core.solver.engine import MomentEngine

    kind, _, cap = variant.partition(":")
    if kind not in ("cold", "warm", "lean"):
        raise SystemExit(f"a variant is cold, warm or lean[:max_iter], got {variant!r}")
    # no cap: the library's default max_iter
    cls = KTCCA if method == "ktcca" else TCCA
    est = cls(eps=eps, random_state=0, **({"max_iter": int(cap)} if cap else {}))
    decompose = MomentEngine.decompose

    def lean(engine, rank, params, **kw):
        if kw.get("extra_starts"):  # a warm rank: the exact start and the warm one
            params = dataclasses.replace(params, n_init=1)
        return decompose(engine, rank, params, **kw)

    t0 = time.perf_counter()
    try:
        if kind == "lean":
            MomentEngine.decompose = lean
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            fits = est.fit_path(views, ranks, warm_start=kind != "cold")
    finally:
        MomentEngine.decompose = decompose
    return {
        "seconds": time.perf_counter() - t0,
        "errors": [f.reconstruction_errors_[-1] for f in fits],
        "sweeps": [int(f.n_iter_) for f in fits],
        "warm_kept": sum(f.init_ == "warm" for f in fits),
    }


def table(ranks, runs: dict) -> str:
    base = next(iter(runs.values()))
    lines = [
        "| variant | wall (s) | sweeps | warm kept | error against the first: "
        "highest / lowest (%) |",
        "|---|---:|---:|---:|---|",
    ]
    for name, res in runs.items():
        pairs = zip(res["errors"], base["errors"], strict=True)
        rel = [100 * (e - b) / b for e, b in pairs]
        lines.append(
            f"| {name} | {res['seconds']:.1f} | {sum(res['sweeps']):,} | "
            f"{res['warm_kept']} of {len(ranks) - 1} | "
            f"{max(rel):+.2f} / {min(rel):+.2f} |"
        )
    return "\n".join(lines)


def main(argv=None) -> None:
    from solver_quality import real

    from tcca_core.registry import R_GRID_PAPER

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--root", default="data")
    ap.add_argument("--data", default="ads", choices=["ads", "mfeat", "secstr"])
    ap.add_argument("--method", default="tcca", choices=["tcca", "ktcca"])
    ap.add_argument("--eps", type=float, default=1e-2)
    ap.add_argument("--variants", nargs="+", default=["cold", "warm", "warm:150"])
    ap.add_argument("--json", help="also write every rank's errors and sweeps here")
    args = ap.parse_args(argv)
    ranks = list(R_GRID_PAPER)
    if args.method == "ktcca":
        ranks = [r for r in ranks if r <= 100]
    views = real(args.data, args.root, VIEWS.get(args.data))
    runs = {}
    for variant in args.variants:
        runs[variant] = run(views, args.eps, ranks, variant, args.method)
        print(f"{variant}: {runs[variant]['seconds']:.1f} s", flush=True)
    where = f"{args.method}, {args.data}, eps = {args.eps:g}"
    print(f"\n{where}, ranks {ranks[0]}-{ranks[-1]}\n")
    print(table(ranks, runs))
    if args.json:
        with open(args.json, "w") as fh:
            json.dump({"ranks": ranks, "runs": runs}, fh, indent=1)


if __name__ == "__main__":
    main()

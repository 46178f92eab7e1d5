"""A small problem's price: a 27-fit grid search on toy data, ours against cca-zoo.

Three views of 300 samples (12, 10 and 8 features, a shared 2-D signal plus noise),
``GridSearchCV`` over eps (cca-zoo: shrinkage) in {1e-3, 1e-2, 1e-1} and
n_components in {2, 3, 4} with 3-fold CV: 27 fits and a refit. Reported per
estimator: process CPU seconds (median of ``--repeats`` fresh processes, one BLAS
thread; the estimators take turns, one process each per round), its ratio to
cca-zoo's (the median of the rounds' ratios), the most warnings raised in a run,
and the objective of the refitted model's CP decomposition where the estimator
exposes it (ours: the relative reconstruction error of the whitened tensor; lower
is better).

Rows: ``TCCA()`` at its defaults (``n_init="auto"``: up to 10 starts raced),
``TCCA(n_init=1)`` (one exact-HOSVD start, as cca-zoo uses), and cca-zoo 4.0.1's
``TCCA`` with its defaults. cca-zoo runs in its own interpreter
(``--zoo-python``: a virtual environment with ``pip install cca-zoo==4.0.1``),
since its pins do not share an environment with ours.

    python benchmarks/toy_gridsearch.py --zoo-python /path/to/zoo/bin/python
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys

CHILD = r"""
import json, sys, time, warnings
import numpy as np
which = sys.argv[1]
rng = np.random.default_rng(0)
N = 300
z = rng.standard_normal((N, 2))
views = [z @ rng.standard_normal((2, d)) + rng.standard_normal((N, d))
         for d in (12, 10, 8)]
grid = {"n_components": [2, 3, 4]}
if which == "zoo":
    from cca_zoo.linear import TCCA
    from cca_zoo.model_selection import GridSearchCV
    est, grid["shrinkage"] = TCCA(n_components=2, random_state=0), [1e-3, 1e-2, 1e-1]
else:
    from tcca_core import TCCA
    from tcca_core.model_selection import GridSearchCV
    kw = {"n_init": 1} if which == "ours-1" else {}
    est, grid["eps"] = TCCA(n_components=2, random_state=0, **kw), [1e-3, 1e-2, 1e-1]
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    t = time.process_time()
    gs = GridSearchCV(est, grid, cv=3).fit(views)
    cpu = time.process_time() - t
best = gs.best_estimator_
err = getattr(best, "reconstruction_errors_", None)
print(json.dumps({
    "cpu_s": cpu,
    "warnings": len(caught),
    "best": {k: v for k, v in gs.best_params_.items()},
    "objective": float(err[-1]) if err is not None else None,
}))
"""

ROWS = [
    ("ours", "TCCA() (defaults: up to 10 starts raced)"),
    ("ours-1", "TCCA(n_init=1) (one exact-HOSVD start)"),
    ("zoo", "cca-zoo 4.0.1 TCCA (defaults)"),
]


def run(python: str, which: str) -> dict:
    env = {**os.environ, "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1"}
    out = subprocess.run(
        [python, "-c", CHILD, which], capture_output=True, text=True, env=env
    )
    if out.returncode != 0:
        raise SystemExit(f"{which} failed:\n{out.stderr[-2000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--zoo-python", help="interpreter with cca-zoo 4.0.1")
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args(argv)
    rows = [
        (which, label) for which, label in ROWS if which != "zoo" or args.zoo_python
    ]
    # rounds, not rows: each round runs every row once, so a drift of the machine's
    # speed (frequent on shared virtual machines) weighs on all rows alike, and the
    # ratio to cca-zoo is taken within a round
    runs: dict[str, list[dict]] = {which: [] for which, _ in rows}
    for _ in range(args.repeats):
        for which, _label in rows:
            python = args.zoo_python if which == "zoo" else sys.executable
            runs[which].append(run(python, which))
    print(
        "| estimator | CPU s (median) | x cca-zoo (median of rounds) | warnings "
        "| refit objective |"
    )
    print("|---|---:|---:|---:|---:|")
    for which, label in ROWS:
        if which not in runs:
            print(f"| {label} | not run (no --zoo-python) | | | |")
            continue
        cpu = statistics.median(r["cpu_s"] for r in runs[which])
        ratio = "n/a"
        if "zoo" in runs:
            ratio = "{:.2f}".format(
                statistics.median(
                    a["cpu_s"] / b["cpu_s"]
                    for a, b in zip(runs[which], runs["zoo"], strict=True)
                )
            )
        obj = runs[which][0]["objective"]
        shown = "n/a" if obj is None else f"{obj:.6f}"
        warned = max(r["warnings"] for r in runs[which])
        print(f"| {label} | {cpu:.2f} | {ratio} | {warned} | {shown} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

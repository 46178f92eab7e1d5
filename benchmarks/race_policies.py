"""How to race the starts: full ALS trajectories of 12 starts, replayed under policies.

For each case and rank, the tensor of a real fit (TCCA or KTCCA, as the estimator
builds it) is decomposed from 12 starts (the exact HOSVD, then 11 randomized
HOSVD sketches drawn in turn from one generator seeded 0, as ``n_init`` draws
them), each run alone to the stopping rule (``max_iter=500``, ``tol=1e-5``, line
search on), and every sweep's error is recorded. A race policy is then replayed on
these trajectories: its cost is the sweeps it runs in all (in units of the HOSVD
start's own fit), its result the final error of the start it keeps, and its gap
that error's distance to the best of the 12 starts.

Policies: ``old``, the race before the current one (successive halving of 10 starts in
bursts of 10, 20, 40 ... sweeps); ``new``, the race now (:data:`RACE_HEAT` sweeps
for all 10 starts, the best :data:`RACE_FINALISTS` twice as long, the better to
the stopping rule); the HOSVD start alone.

    python benchmarks/race_policies.py --root data --json race.json   # ~15 min
    python benchmarks/race_policies.py --replay race.json              # the table

One BLAS thread (set before numpy loads). Cases need the prepared data sets
``mfeat`` and ``secstr`` in ``--root``.
"""

from __future__ import annotations

import argparse
import json
import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import numpy as np  # noqa: E402

#: case: (estimator, its parameters, (data set, views (None: all), random rows
#: (None: all)), ranks); mfeat's prepared views are fou, fac, kar, pix, zer, mor:
#: [1, 0, 2] are the grid's linear views fac, fou, kar
CASES = {
    "mfeat3-e1e-2": (
        "tcca",
        {"eps": 1e-2},
        ("mfeat", [1, 0, 2], None),
        [10, 30, 60, 150],
    ),
    "mfeat3-e1e-4": ("tcca", {"eps": 1e-4}, ("mfeat", [1, 0, 2], None), [10, 30, 60]),
    "mfeat6-e1e-2": ("tcca", {"eps": 1e-2}, ("mfeat", None, None), [5, 20, 40]),
    "k500x6-e1e-3": (
        "ktcca",
        {"eps": 1e-3, "kernel": "l2"},
        ("mfeat", None, 500),
        [10, 30, 60],
    ),
    "k500x6-e1": ("ktcca", {"eps": 1.0, "kernel": "l2"}, ("mfeat", None, 500), [10]),
    "secstr": ("tcca", {"eps": 1e-2}, ("secstr", None, None), [10, 50]),
}
N_STARTS = 12


class _Engine(Exception):
    pass


def engine_of(kind: str, params: dict, views, rank: int):
    """The estimator's MomentEngine for these views, before any ALS."""
    from tcca_core import KTCCA, TCCA
    from tcca_core.solver import engine as _engine

    def grab(engine, *args, **kwargs):
        raise _Engine(engine)

    saved = _engine.MomentEngine.path
    _engine.MomentEngine.path = grab
    try:
        est = (TCCA if kind == "tcca" else KTCCA)(rank, **params)
        est.fit(views)
    except _Engine as got:
        return got.args[0]
    finally:
        _engine.MomentEngine.path = saved
    raise RuntimeError(f"no engine from {_engine.__name__}")


def load_views(which, root: str):
    from tcca_core.datasets import load

    name, keep, subset = which
    views = list(load(name, root=root).views)
    if keep is not None:
        views = [views[i] for i in keep]
    if subset is not None:
        rng = np.random.default_rng(0)
        rows = np.sort(rng.choice(len(views[0]), subset, replace=False))
        views = [X[rows] for X in views]
    return views


def trajectories(root: str, names) -> dict:
    from tcca_core.solver.als import cp_als, init_factors

    out = {}
    for name in names:
        kind, params, which, ranks = CASES[name]
        views = load_views(which, root)
        for r in ranks:
            eng = engine_of(kind, params, views, r)
            rng = np.random.default_rng(0)
            runs = []
            for start in ["hosvd"] + ["svd"] * (N_STARTS - 1):
                U0 = init_factors(
                    eng.mttkrp, eng.dims, r, start, rng, hosvd=eng.hosvd_bases
                )
                res = cp_als(
                    eng.mttkrp,
                    eng.norm_sq,
                    U0,
                    max_iter=500,
                    tol=1e-5,
                    residual_sq=eng.residual_sq,
                )
                runs.append({"start": start, "errors": res.errors})
            out[f"{name}/{r}"] = {"engine": eng.name, "runs": runs}
            print(
                f"{name} r={r}: {[len(x['errors']) for x in runs]} sweeps", flush=True
            )
    return out


def _kept(errors, n):
    return min(errors[:n]) if n and errors else np.inf


def replay(runs, first: int, keep: float):
    """Sweeps and final error of a race: ``first`` sweeps for all, then the
    best ``ceil(keep * n)`` go on, bursts doubling, until one is left."""
    idx = list(range(len(runs)))
    n = {i: min(first, len(runs[i])) for i in idx}
    cost, burst = sum(n.values()), first
    while len(idx) > 1:
        idx.sort(key=lambda i: (_kept(runs[i], n[i]), i))
        idx = idx[: max(1, int(np.ceil(len(idx) * keep)))]
        if len(idx) == 1:
            break
        burst *= 2
        for i in idx:
            new = min(n[i] + burst, len(runs[i]))
            cost, n[i] = cost + new - n[i], new
    w = idx[0]
    return cost + len(runs[w]) - n[w], runs[w][-1]


def table(data: dict) -> None:
    from tcca_core.solver.engine import RACE_FINALISTS, RACE_HEAT

    print(
        "| case (r) | engine | HOSVD start: sweeps | its gap (%) | old race: cost "
        "| old gap (%) | new race: cost | new gap (%) |"
    )
    print("|---|---|---:|---:|---:|---:|---:|---:|")
    tot = [0.0, 0.0, 0.0]
    for case, d in data.items():
        runs = [x["errors"] for x in d["runs"]]
        best = min(min(e) for e in runs)
        single = len(runs[0])
        old = replay(runs[:10], 10, 0.5)
        new = replay(runs[:10], RACE_HEAT, RACE_FINALISTS / 10)
        tot = [tot[0] + single, tot[1] + old[0], tot[2] + new[0]]

        gaps = [100 * (e - best) / best for e in (runs[0][-1], old[1], new[1])]
        print(
            f"| {case} | {d['engine']} | {single} | {gaps[0]:.2f} | "
            f"{old[0] / single:.1f} | {gaps[1]:.2f} | {new[0] / single:.1f} | "
            f"{gaps[2]:.2f} |"
        )
    old, new = tot[1] / tot[0], tot[2] / tot[0]
    print(f"| all | | {tot[0]:.0f} | | {old:.2f} | | {new:.2f} | |")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--root", default="data")
    ap.add_argument("--case", action="append", choices=sorted(CASES))
    ap.add_argument("--json", help="write the trajectories here")
    ap.add_argument("--replay", help="read trajectories from here instead of fitting")
    args = ap.parse_args(argv)
    if args.replay:
        with open(args.replay) as fh:
            data = json.load(fh)
    else:
        data = trajectories(args.root, args.case or list(CASES))
        if args.json:
            with open(args.json, "w") as fh:
                json.dump(data, fh)
    table(data)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""Where a fit job's seconds go: per rank of every TCCA/KTCCA path, starts and sweeps.

Runs fit jobs of the grid (``config/config.yaml`` by default) exactly as the
pipeline does (:func:`tcca_core.pipeline.run_fit_job`, its splits drawn by
:func:`tcca_core.pipeline.draw_splits` into a temporary folder, no shared fit
cache), and records every rank-``r`` CP decomposition of the moment tensor
(:meth:`tcca_core.solver.engine.MomentEngine.decompose`): the starts raced, the seconds
spent making the starts, racing them (successive halving, until one is left) and
running the survivor to the stopping rule, the sweeps of all starts together, and
how the survivor stopped (``tol``: the stopping rule; ``max_iter``; ``diverged``)
with its pace then (relative decrease of the error per sweep over the last
window). A rank that stops at ``max_iter`` with a pace of ``p`` would need about
``tol / p`` more sweeps' worth of decrease to meet the rule: a "creeping" rank
(pace below ``tol / 1e4``) is one where ten thousand more sweeps would not.

Prints, per job: its wall time, the share inside the decompositions, and
per-phase totals; then one line per (eps, rank) with ``--ranks``.

Usage (one BLAS thread, as the pipeline's fit jobs run)::

    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 python benchmarks/profile_jobs.py \\
        --root data --job mfeat/linear8/tcca --eps 1e-4 1e-2 1 --json out.json

``--job`` defaults to the five longest fit jobs of the published run
(``results/grid_cost.csv``). ``--eps`` keeps only those values of the method's eps
grid and ``--split`` only one split, to profile a sample of a long job.
"""

from __future__ import annotations

import argparse
import copy
import csv
import json
import os
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

REPO = Path(__file__).resolve().parents[1]
SCHEMA = REPO / "workflow" / "schemas" / "config.schema.yaml"


def load_plan(config_path: Path, workdir: Path):
    import yaml
    from snakemake.utils import validate

    from tcca_core.pipeline.config_schema import check_schema
    from tcca_core.pipeline.plan import build_plan

    cfg = yaml.safe_load(config_path.read_text())
    check_schema(cfg, SCHEMA)
    validate(cfg, schema=str(SCHEMA))
    return build_plan(cfg, copy.deepcopy(cfg), [], workdir=workdir)


def longest_jobs(n: int) -> list[str]:
    rows = list(csv.DictReader((REPO / "results" / "grid_cost.csv").open()))
    rows = [r for r in rows if r["rule"] == "fit"]
    rows.sort(key=lambda r: -float(r["wall_s"]))
    return [f"{r['dataset']}/{r['setting']}/{r['method']}" for r in rows[:n]]


class Recorder:
    """Wraps MomentEngine.decompose to record each rank's info and seconds."""

    def __init__(self):
        self.calls: list[dict] = []
        self.eps = None

    def install(self):
        from tcca_core.solver import engine as _engine

        original = _engine.MomentEngine.decompose
        recorder = self

        def decompose(engine, rank, *args, **kw):
            t = time.perf_counter()
            weights, factors, info = original(engine, rank, *args, **kw)
            prof = dict(info.get("profile", {}))
            recorder.calls.append(
                {
                    "rank": rank,
                    "engine": engine.name,
                    "seconds": time.perf_counter() - t,
                    "n_iter": info.get("n_iter"),
                    "init": info.get("init"),
                    "error": (info.get("errors") or [float("nan")])[-1],
                    "start_errors": info.get("start_errors"),
                    **prof,
                }
            )
            return weights, factors, info

        _engine.MomentEngine.decompose = decompose


def run_job(plan, job_id, args, recorder, scratch: Path) -> dict:
    from tcca_core.pipeline import draw_splits, run_fit_job

    dataset, setting, method = job_id.split("/")
    split_cfg = plan.split_params(dataset, setting)
    splits = scratch / f"{dataset}_{setting}.json"
    if not splits.exists():
        draw_splits(split_cfg, splits, data_root=args.root, mirror=args.mirror)
    cfg = plan.fit_params(dataset, setting, method, "all")
    if args.eps:
        keep = [float(e) for e in args.eps]
        cfg["params"] = {
            **cfg["params"],
            "eps": [
                e
                for e in cfg["params"]["eps"]
                if any(abs(e - k) <= 1e-12 * k for k in keep)
            ],
        }
    if args.split is not None:
        cfg["split"] = str(args.split)
    recorder.calls.clear()
    t = time.perf_counter()
    run_fit_job(
        cfg,
        splits,
        scratch / f"{dataset}_{setting}_{method}.csv",
        data_root=args.root,
        mirror=args.mirror,
        fit_cache=args.fit_cache,
    )
    wall = time.perf_counter() - t
    calls = list(recorder.calls)
    tot = defaultdict(float)
    for c in calls:
        for k in (
            "seconds",
            "start_s",
            "race_s",
            "final_s",
            "sweeps",
            "race_sweeps",
            "starts",
        ):
            tot[k] += float(c.get(k) or 0.0)
    stops = defaultdict(int)
    for c in calls:
        stops[c.get("stop", "exact")] += 1
    creeping = sum(
        1
        for c in calls
        if c.get("stop") == "max_iter" and (c.get("pace") or 0) < args.tol / 1e4
    )
    return {
        "job": job_id,
        "eps": cfg["params"].get("eps"),
        "split": cfg["split"],
        "wall_s": wall,
        "decompositions": len(calls),
        "totals": dict(tot),
        "stops": dict(stops),
        "creeping": creeping,
        "calls": calls,
    }


def print_job(res: dict, ranks: bool) -> None:
    t = {k: float(v) for k, v in res["totals"].items()}
    n = max(res["decompositions"], 1)
    dec = t.get("seconds", 0.0)
    share = 100 * dec / max(res["wall_s"], 1e-9)
    print(f"\n## {res['job']}  (eps {res['eps']}, split {res['split']})")
    print(
        f"wall {res['wall_s']:.1f} s; {res['decompositions']} decompositions "
        f"{dec:.1f} s ({share:.0f} % of wall)"
    )
    print(
        "  starts made {:.1f} s | race {:.1f} s | winner {:.1f} s".format(
            t.get("start_s", 0), t.get("race_s", 0), t.get("final_s", 0)
        )
    )
    print(
        "  starts per rank {:.1f}; sweeps {:.0f} ({:.0f} in races); stops {}; "
        "creeping at max_iter {}".format(
            t.get("starts", 0) / n,
            t.get("sweeps", 0),
            t.get("race_sweeps", 0),
            res["stops"],
            res["creeping"],
        )
    )
    if not ranks:
        return
    head = "rank engine starts sweeps race_sw start_s race_s final_s stop pace error"
    print("  " + head)
    for c in res["calls"]:
        cells = (
            c["rank"],
            c["engine"],
            c.get("starts", 1),
            c.get("sweeps", c.get("n_iter") or 0),
            c.get("race_sweeps", 0),
            c.get("start_s", 0),
            c.get("race_s", 0),
            c.get("final_s", 0),
            c.get("stop", "exact"),
            c.get("pace", float("nan")),
            c["error"],
        )
        print(
            "  {:4d} {:8s} {:5d} {:6.0f} {:7.0f} {:7.2f} {:6.2f} {:7.2f} {:9s} "
            "{:9.2e} {:.6f}".format(*cells)
        )


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--config", type=Path, default=REPO / "config" / "config.yaml")
    ap.add_argument("--root", default="data", help="data root (prepared data sets)")
    ap.add_argument("--mirror", default=None)
    ap.add_argument(
        "--job", action="append", help="dataset/setting/method (repeatable)"
    )
    ap.add_argument("--longest", type=int, default=5)
    ap.add_argument("--eps", nargs="*", help="keep only these eps values")
    ap.add_argument("--split", type=int, default=None, help="one split only")
    ap.add_argument(
        "--fit-cache",
        default=None,
        help="read (and fill) this fit cache, as the pipeline does (the grid's "
        "is .cache/fits): profiles a job whose subspace another job fitted",
    )
    ap.add_argument("--tol", type=float, default=1e-5)
    ap.add_argument("--ranks", action="store_true", help="print every rank")
    ap.add_argument("--json", type=Path, help="write the records here")
    args = ap.parse_args(argv)

    import logging

    logging.basicConfig(level=logging.WARNING)
    jobs = args.job or longest_jobs(args.longest)
    recorder = Recorder()
    recorder.install()
    out = []
    with tempfile.TemporaryDirectory(prefix="tcca-profile-") as tmp:
        plan = load_plan(args.config, Path(tmp))
        for job in jobs:
            res = run_job(plan, job, args, recorder, Path(tmp))
            print_job(res, args.ranks)
            sys.stdout.flush()
            out.append(res)
    if args.json:
        args.json.write_text(json.dumps(out, indent=1, default=float))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

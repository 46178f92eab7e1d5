"""What glibc's allocator costs a fit job; keeping freed memory changes nothing.

glibc serves a block over its mmap threshold (at most 32 MB) with a fresh mapping and
hands it back to the kernel when freed, so a fit that makes an N x r temporary per
sweep takes every page of it zeroed from the kernel again, sweep after sweep. With
``MALLOC_MMAP_MAX_=0`` and a large ``MALLOC_TRIM_THRESHOLD_`` (what the workflow's
Snakefile sets for its jobs) freed memory stays in the heap and is reused.

Runs fit jobs of the grid exactly as the pipeline does
(:func:`tcca_core.pipeline.run_fit_job`, splits drawn into a temporary folder, no fit
cache), each in a fresh process, once with glibc's defaults and once with the setting,
one after the other, and prints per job: user and system CPU seconds, minor page faults
and wall of both, and whether the two fit files hold the same rows (every column but
the measured ``fit_s`` and ``peak_mb``). Usage (one BLAS thread, as the fit jobs run)::

    python benchmarks/allocator.py --root data --job ads/l100/tcca --split 0 \\
        --ranks 10 100 200 300

``--ranks`` fits those ranks instead of the grid, ``--eps`` only those values of the eps
grid, ``--split`` only one split. System time is the kernel's work for the process
(page faults, zeroing); on a shared machine the user time is inflated by the other
work, the system time much less.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pandas as pd
from profile_jobs import REPO, load_plan

THREADS = {
    v: "1" for v in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")
}
VARIANTS = {
    "glibc defaults": {},
    "freed memory kept": {
        "MALLOC_MMAP_MAX_": "0",
        "MALLOC_TRIM_THRESHOLD_": str(2**40),
    },
}
MEASURED = ("fit_s", "peak_mb")


def child(args) -> None:
    from tcca_core.pipeline import run_fit_job

    spec = json.loads(Path(args.child).read_text())
    run_fit_job(spec["cfg"], spec["splits"], spec["out"], **spec["kwargs"])


def run_variant(spec_path: Path, env_extra: dict) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MALLOC_")}
    env.update(THREADS, **env_extra)
    t = time.perf_counter()
    proc = subprocess.Popen(
        [sys.executable, __file__, "--child", str(spec_path)], env=env, cwd=REPO
    )
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"the fit job failed ({spec_path})")
    return {
        "user_s": usage.ru_utime,
        "sys_s": usage.ru_stime,
        "minflt": usage.ru_minflt,
        "wall_s": wall,
    }


def same_rows(a: Path, b: Path) -> bool:
    x, y = (
        pd.read_csv(p).drop(columns=list(MEASURED), errors="ignore") for p in (a, b)
    )
    try:  # values, not dtypes: a column with gaps may parse as float in one file only
        pd.testing.assert_frame_equal(x, y, check_dtype=False, check_exact=True)
    except AssertionError:
        return False
    return True


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--child", help=argparse.SUPPRESS)
    ap.add_argument("--config", type=Path, default=REPO / "config" / "config.yaml")
    ap.add_argument("--root", default="data")
    ap.add_argument("--mirror", default=None)
    ap.add_argument("--job", nargs="+", default=["ads/l100/tcca"])
    ap.add_argument("--split", default=None)
    ap.add_argument("--eps", nargs="+", type=float, default=None)
    ap.add_argument("--ranks", nargs="+", type=int, default=None)
    args = ap.parse_args()
    if args.child:
        child(args)
        return
    from tcca_core.pipeline import draw_splits

    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        scratch = Path(tmp)
        plan = load_plan(args.config, scratch)
        for job in args.job:
            dataset, setting, method = job.split("/")
            splits = scratch / f"{dataset}_{setting}.json"
            if not splits.exists():
                draw_splits(
                    plan.split_params(dataset, setting),
                    splits,
                    data_root=args.root,
                    mirror=args.mirror,
                )
            cfg = plan.fit_params(dataset, setting, method, "all")
            if args.split is not None:
                cfg["split"] = str(args.split)
            if args.ranks:
                cfg["r_grid"] = sorted(args.ranks)
            if args.eps and "eps" in cfg["params"]:
                cfg["params"]["eps"] = [
                    e
                    for e in cfg["params"]["eps"]
                    if any(abs(e - k) <= 1e-12 * k for k in args.eps)
                ]
            outs = []
            for i, (name, extra) in enumerate(VARIANTS.items()):
                out = scratch / f"{job.replace('/', '_')}_{i}.csv"
                spec = scratch / f"{job.replace('/', '_')}_{i}.json"
                spec.write_text(
                    json.dumps(
                        {
                            "cfg": cfg,
                            "splits": str(splits),
                            "out": str(out),
                            "kwargs": {"data_root": args.root, "mirror": args.mirror},
                        }
                    )
                )
                rows.append({"job": job, "variant": name, **run_variant(spec, extra)})
                outs.append(out)
            rows[-1]["same rows"] = rows[-2]["same rows"] = same_rows(*outs)
    table = pd.DataFrame(rows)
    table["sys share"] = table.sys_s / (table.user_s + table.sys_s)
    print(
        f"split {args.split or 'all'}; ranks {args.ranks or 'the grid'}; "
        f"eps {args.eps or 'the grid'}; one BLAS thread, a fresh process per fit\n"
    )
    print(table.to_markdown(index=False, floatfmt=".2f"))


if __name__ == "__main__":
    main()

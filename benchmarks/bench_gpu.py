"""TCCA on a GPU (CuPy, PyTorch) against NumPy on 1 and 16 cores: time and objective.

The SecStr shape (3 views x 105 binary features, one-hot) and the NUS shape (3 dense
views of 500, 144 and 225 features) at N = 1M and 10M rows, r = 50 and 300. Every
fit runs ``--sweeps`` ALS sweeps (tol = 0, one exact-HOSVD start), so that times
compare like for like, and prints its objective beside its time: the CP relative
error and the mean |rho_k| of the training correlations. Each run is a fresh
process (NumPy's BLAS threads pinned before import) with a time limit
(``--time-s``, 60 s); runs go GPU first (float64, then float32), then NumPy on 16
and on 1 core (1 core at the smaller N only), and stop when the whole budget
(``--budget-s``, 7.5 minutes) is spent, the rest listed as skipped. Runs whose
arrays would not fit the device (or host) memory are skipped up front. Data are
drawn on the run's own device from the seed (same distribution on every backend,
not the same draws: 10M x 869 doubles take minutes to draw on the host).

    python benchmarks/bench_gpu.py --out benchmarks/results/gpu.csv   # on a GPU host
    python benchmarks/bench_gpu.py --quick    # seconds, NumPy and array-api-strict
    python benchmarks/bench_gpu.py --backends torch numpy-16 --N 1000000 --ranks 50

Backends: ``cupy``, ``torch`` (CUDA), ``numpy-1``, ``numpy-16``, and for
``--quick`` ``array-api-strict`` (the array-API path on the CPU, no GPU needed);
``torch-cpu`` checks the script's torch code without a GPU.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import subprocess
import sys
import time

SHAPES = {"secstr": ("onehot", (105, 105, 105)), "nus": ("dense", (500, 144, 225))}
BACKENDS = ["cupy", "torch", "numpy-16", "numpy-1"]
FIELDS = [
    "shape",
    "N",
    "r",
    "backend",
    "dtype",
    "status",
    "fit_s",
    "sweeps",
    "error",
    "mean_abs_rho",
    "engine",
]


def _namespace(backend: str):
    """(xp, device, synchronize) of a backend, in the child."""
    if backend == "cupy":
        import cupy

        return cupy, None, cupy.cuda.Device().synchronize
    if backend in ("torch", "torch-cpu"):
        import torch

        if backend == "torch-cpu":  # the script's torch code, checked without a GPU
            return torch, torch.device("cpu"), lambda: None
        return torch, torch.device("cuda"), torch.cuda.synchronize
    if backend == "array-api-strict":
        import array_api_strict

        return array_api_strict, array_api_strict.Device("device1"), lambda: None
    import numpy

    return numpy, None, lambda: None


def _draw(backend: str, kind: str, N: int, dims, seed: int, dtype: str):
    """The views, drawn on the backend's device, in blocks of rows."""
    import numpy as np

    xp, device, _ = _namespace(backend)
    rng = np.random.default_rng(seed)
    # the structure (latent loadings) is drawn on the host: small, shared
    loads = [rng.standard_normal((5, d)) for d in dims]
    views = []
    on_device = backend in ("cupy", "torch", "torch-cpu")
    if on_device:
        # on the device: its own generator
        if backend == "cupy":
            gen = xp.random.default_rng(seed)
            normal = lambda shape: gen.standard_normal(shape)  # noqa: E731
            integers = lambda hi, shape: gen.integers(0, hi, shape)  # noqa: E731
        else:
            gen = xp.Generator(device=device).manual_seed(seed)
            normal = lambda shape: xp.randn(  # noqa: E731
                shape, generator=gen, device=device, dtype=xp.float64
            )
            integers = lambda hi, shape: xp.randint(  # noqa: E731
                0, hi, shape, generator=gen, device=device
            )
    else:
        normal = lambda shape: rng.standard_normal(shape)  # noqa: E731
        integers = lambda hi, shape: rng.integers(0, hi, shape)  # noqa: E731

    def move(a):
        if device is None:  # NumPy, CuPy: the current device
            return xp.asarray(a)
        return xp.asarray(a, device=device)

    if kind == "onehot":
        z = integers(21, (N, 1))
        for d in dims:
            npos = d // 21
            cats = (z + integers(3, (N, npos))) % 21
            if on_device:
                eye = (
                    xp.eye(21, dtype=xp.float64, device=device)
                    if backend != "cupy"
                    else xp.eye(21)
                )
                X = xp.reshape(eye[cats], (N, d))
            else:
                X = np.eye(21)[cats].reshape(N, d)
            views.append(X)
    else:
        S = normal((N, 5))
        S = S * S - 1.0  # skewed: third moments exist
        for d, A in zip(dims, loads, strict=True):
            A = move(A) if on_device else A
            views.append(S @ A + normal((N, d)))
    if not on_device:  # drawn by NumPy: moved once, whole
        views = [move(X) for X in views]
    if dtype == "float32":
        import array_api_compat

        views = [
            array_api_compat.array_namespace(X).astype(X, xp.float32) for X in views
        ]
    return views


def child(spec: dict) -> dict:
    """One fit, in a fresh process: time, sweeps, objective."""
    os.environ["SCIPY_ARRAY_API"] = "1"
    import numpy as np
    import sklearn

    from tcca_core import TCCA
    from tcca_core.solver.xp import to_host

    backend = spec["backend"]
    kind, dims = SHAPES[spec["shape"]]
    views = _draw(backend, kind, spec["N"], dims, spec["seed"], spec["dtype"])
    _, _, sync = _namespace(backend)
    sync()
    est = TCCA(
        spec["r"],
        tol=0.0,
        max_iter=spec["sweeps"],
        init="hosvd",
        n_init=1,
        random_state=spec["seed"],
    )
    dispatch = not backend.startswith("numpy")
    with sklearn.config_context(array_api_dispatch=dispatch):
        t = time.perf_counter()
        est.fit(views)
        sync()
        fit_s = time.perf_counter() - t
    rho = np.asarray(to_host(est.correlations_), dtype=float)
    sweeps = int(est.n_iter_)
    return {
        "status": "ok",
        "fit_s": round(fit_s, 3),
        "sweeps": sweeps,
        "error": f"{est.reconstruction_errors_[-1]:.8g}",
        "mean_abs_rho": f"{float(np.mean(np.abs(rho))):.8g}",
        "engine": est.algorithm_,
    }


def _bytes(spec: dict) -> float:
    """Peak bytes of a fit: X and Y, the cached projections Y_q U_q, temporaries."""
    kind, dims = SHAPES[spec["shape"]]
    item = 4 if spec["dtype"] == "float32" else 8
    N, r, m = spec["N"], spec["r"], len(dims)
    P = item * N * r
    keep = 2 if 2 * m * P <= 16 * 1024**3 else 1  # as solver/xp.py's _CACHE_BYTES
    return item * N * 2 * sum(dims) + keep * m * P + 2 * P


def _memory(backend: str) -> float:
    if backend in ("cupy", "torch"):  # the GPU's
        try:
            out = subprocess.run(
                [
                    "nvidia-smi",
                    "--query-gpu=memory.total",
                    "--format=csv,noheader,nounits",
                ],
                capture_output=True,
                text=True,
                timeout=20,
                check=True,
            )
            return 0.9 * float(out.stdout.split()[0]) * 1024**2
        except (OSError, subprocess.SubprocessError, ValueError, IndexError):
            return 0.0
    return 0.8 * os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--shapes", nargs="*", default=list(SHAPES), choices=list(SHAPES))
    ap.add_argument("--N", nargs="*", type=int, default=[1_000_000, 10_000_000])
    ap.add_argument("--ranks", nargs="*", type=int, default=[50, 300])
    ap.add_argument("--backends", nargs="*", default=BACKENDS)
    ap.add_argument(
        "--dtypes",
        nargs="*",
        default=["float64", "float32"],
        choices=["float64", "float32"],
        help="of the GPU runs (NumPy fits in float64)",
    )
    ap.add_argument("--sweeps", type=int, default=10, help="ALS sweeps per fit")
    ap.add_argument("--time-s", type=float, default=60.0, help="limit per run")
    ap.add_argument("--budget-s", type=float, default=450.0, help="limit in all")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--quick", action="store_true", help="tiny sizes, no GPU")
    ap.add_argument("--out", help="also write the table as CSV")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        print(json.dumps(child(json.loads(args.child))))
        return 0
    if args.quick:
        args.N, args.ranks = [3000], [5]
        args.backends = ["numpy-1", "array-api-strict"]
        args.dtypes = ["float64"]
        args.sweeps, args.time_s, args.budget_s = 5, 60.0, 120.0
    specs = []
    # GPU runs first (the point of the table), then NumPy; NumPy on one core only
    # at the smaller N (10M rows would take it hours)
    for b in args.backends:
        gpu_like = b in ("cupy", "torch", "torch-cpu", "array-api-strict")
        for dtype in args.dtypes if gpu_like else ["float64"]:
            for n in args.N:
                if b == "numpy-1" and n > min(args.N):
                    continue
                for s in args.shapes:
                    for r in args.ranks:
                        specs.append(
                            {
                                "shape": s,
                                "N": n,
                                "r": r,
                                "backend": b,
                                "dtype": dtype,
                                "sweeps": args.sweeps,
                                "seed": args.seed,
                            }
                        )
    rows, start = [], time.perf_counter()
    for spec in specs:
        row = dict(spec)
        left = args.budget_s - (time.perf_counter() - start)
        if _bytes(spec) > _memory(spec["backend"]):
            row["status"] = "skipped (memory)"
        elif left < 5:
            row["status"] = "skipped (budget)"
        else:
            threads = spec["backend"].split("-")[1] if "-" in spec["backend"] else "16"
            threads = "16" if spec["backend"] == "array-api-strict" else threads
            env = {**os.environ, "SCIPY_ARRAY_API": "1"}
            for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
                env[var] = threads
            cmd = [sys.executable, __file__, "--child", json.dumps(spec)]
            try:
                out = subprocess.run(
                    cmd,
                    env=env,
                    capture_output=True,
                    text=True,
                    timeout=min(args.time_s, left),
                    check=False,
                )
                if out.returncode == 0:
                    row.update(json.loads(out.stdout.strip().splitlines()[-1]))
                else:
                    tail = (out.stderr.strip().splitlines() or ["?"])[-1][:80]
                    # a message we did not write: no spreadsheet formula
                    row["status"] = "failed: " + tail.lstrip("=+-@")
            except subprocess.TimeoutExpired:
                row["status"] = f"over time limit ({min(args.time_s, left):.0f} s)"
        rows.append(row)
        print(
            f"{row['shape']:7s} N={row['N']:>9,d} r={row['r']:>3d} "
            f"{row['backend']:17s} {row['dtype']:8s}"
            f"{row.get('status', ''):28s} fit {row.get('fit_s', '-')!s:>9} s  "
            f"sweeps {row.get('sweeps', '-')!s:>3}  err {row.get('error', '-')}  "
            f"|rho| {row.get('mean_abs_rho', '-')}",
            flush=True,
        )
    if args.out:
        os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
        with open(args.out, "w", newline="") as fh:
            w = csv.DictWriter(fh, fieldnames=FIELDS, extrasaction="ignore")
            w.writeheader()
            w.writerows(rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""How far in N can DSE (and SSMVD) go? Time and peak memory on SecStr-like data.

Synthetic data of SecStr's shape: 3 views, each 5 sequence positions x 21 symbols
one-hot (105 binary features, sparse CSR), symbols drawn from class-dependent
distributions so that the views share structure. Each (N, mode) runs in a fresh
subprocess and reports its own peak resident memory (``ru_maxrss``), so the numbers
include Python, numpy and the data.

BLAS runs single-threaded by default (``--threads``): on a shared machine extra BLAS
threads spin-wait and made LAPACK calls 15x slower in our measurements.

The default workload is the protocol's: ``fit_transform_grid`` over the paper's r
grid {5, 10, ..., 100, 110, ..., 200, 220, ..., 300} (``r_max = 300``, so in spectral
mode every view needs 300 Laplacian eigenvectors).

Usage::

    python benchmarks/dse_scaling.py                       # N = 2K, 5K, 10K
    python benchmarks/dse_scaling.py --n 20000 --modes spectral
    python benchmarks/dse_scaling.py --n 84000 --modes pca ssmvd-pca
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time

R_GRID = [*range(5, 101, 5), *range(110, 201, 10), *range(220, 301, 20)]


def secstr_like(N: int, seed: int = 0):
    """Three sparse one-hot views of shape (N, 105) with a shared 3-class latent."""
    import numpy as np
    import scipy.sparse as sp

    rng = np.random.default_rng(seed)
    y = rng.integers(0, 3, N)
    views = []
    for _ in range(3):
        cols = []
        for pos in range(5):
            probs = rng.dirichlet(np.full(21, 0.5), size=3)  # per class
            u = rng.random(N)
            sym = (u[:, None] > np.cumsum(probs[y], axis=1)).sum(axis=1)
            cols.append(pos * 21 + np.minimum(sym, 20))
        cols = np.stack(cols, axis=1).ravel()
        rows = np.repeat(np.arange(N), 5)
        views.append(sp.csr_matrix((np.ones(5 * N), (rows, cols)), shape=(N, 105)))
    return views, y


def _child(N: int, mode: str, r_max: int, verbose: bool) -> dict:
    import logging
    import resource

    if verbose:  # per-view timings from tcca_core's INFO logs, on stderr
        logging.basicConfig(level=logging.INFO, format="  %(message)s")

    from tcca_core.baselines._dse import DSE
    from tcca_core.baselines._ssmvd import SSMVD

    views, _ = secstr_like(N)
    grid = [r for r in R_GRID if r <= r_max]
    rss0 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    t0 = time.perf_counter()
    if mode.startswith("ssmvd"):
        est = SSMVD(1, view_embedding=mode.split("-")[1], random_state=0)
        est.fit_transform_grid(views, grid, lambdas=[(1e-2, 1e-2)])
    else:
        est = DSE(1, view_embedding=mode, random_state=0)
        est.fit_transform_grid(views, grid)
    seconds = time.perf_counter() - t0
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return {
        "N": N,
        "mode": mode,
        "r_max": est.r_grid_[-1],
        "n_r": len(est.r_grid_),
        "seconds": round(seconds, 2),
        "peak_rss_mb": round(rss / 1024, 1),
        "baseline_rss_mb": round(rss0 / 1024, 1),
        "graph_components": est.graph_components_,
    }


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, nargs="+", default=[2000, 5000, 10000])
    parser.add_argument(
        "--modes",
        nargs="+",
        default=["pca", "spectral"],
        choices=["pca", "spectral", "ssmvd-pca", "ssmvd-spectral"],
    )
    parser.add_argument("--r-max", type=int, default=300)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--verbose", action="store_true", help="per-view timings")
    parser.add_argument(
        "--child", nargs=2, metavar=("N", "MODE"), help=argparse.SUPPRESS
    )
    args = parser.parse_args(argv)
    if args.child:
        row = _child(int(args.child[0]), args.child[1], args.r_max, args.verbose)
        print(json.dumps(row))
        return
    env = dict(os.environ)
    for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        env[var] = str(args.threads)
    print(f"{'N':>7} {'mode':>15} {'r_max':>5} {'#r':>3} {'seconds':>9} {'peak MB':>9}")
    for mode in args.modes:
        for N in args.n:
            cmd = [sys.executable, __file__, "--child", str(N), mode]
            cmd += ["--r-max", str(args.r_max)] + (
                ["--verbose"] if args.verbose else []
            )
            res = subprocess.run(cmd, capture_output=True, text=True, env=env)
            if args.verbose:
                print(res.stderr.rstrip())
            if res.returncode != 0:
                print(f"{N:>7} {mode:>15} failed: {res.stderr.strip()[-300:]}")
                continue
            row = json.loads(res.stdout.strip().splitlines()[-1])
            print(
                f"{row['N']:>7} {row['mode']:>15} {row['r_max']:>5} {row['n_r']:>3} "
                f"{row['seconds']:>9.1f} {row['peak_rss_mb']:>9.0f}",
                flush=True,
            )


if __name__ == "__main__":
    main()

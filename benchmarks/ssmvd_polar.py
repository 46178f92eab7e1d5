"""SSMVD's B-step: the Gram route's eigh against Newton-Schulz, on SecStr's shapes.

The B-step needs the polar factor of M = R W^T (K' x r) at every iteration of every
SSMVD fit. This script records the M of consecutive iterations of real fits (the
reduced coordinates R of SSMVD's PCA patterns on ``--rows`` random SecStr rows, as
the pipeline's 10K subset; K' = 299) and times, in one loop, on the same matrices:

* ``gram``: today's route, ``polar_factor`` (eigh of M^T M);
* ``ns``: Newton-Schulz from M with the best scaling there is (Chen & Chow's, from
  the exact extreme singular values, which a real solver would only estimate),
  stopped at the step count that first reaches the Gram route's answer to 1e-13.

It also reports how far a Newton-Schulz iteration warm-started from the previous
iterate's inverse square root lands from polar(M) (the largest entry error over the
iterations): it converges to polar(M Z_prev), not polar(M), or diverges where M Z_prev
has a singular value above sqrt(3). Without ``--root`` it uses a synthetic R with
SecStr's singular values in [0.4, 1.4].

Usage (one BLAS thread, as the pipeline's fit jobs run)::

    OPENBLAS_NUM_THREADS=1 python benchmarks/ssmvd_polar.py --root data \\
        --ranks 20 50 150 280
"""

from __future__ import annotations

import argparse
import os
import time

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import numpy as np  # noqa: E402

LAMBDAS = [(0.01, 0.01), (0.1, 0.0), (0.001, 0.1)]


def reduced_coordinates(root, rows: int, seed: int):
    """R and the view blocks of SSMVD on ``rows`` random SecStr rows (or synthetic)."""
    if root is None:
        rng = np.random.default_rng(seed)
        K = 299
        Q = np.linalg.qr(rng.standard_normal((K, K)))[0]
        R = np.linspace(1.4, 0.4, K)[:, None] * Q
        return R, [slice(0, 100), slice(100, 199), slice(199, 299)]
    from tcca_core import datasets
    from tcca_core.baselines._ssmvd import SSMVD

    data = datasets.load("secstr", root=root, offline=True)
    keep = np.sort(np.random.default_rng(seed).choice(data.y.size, rows, False))
    views = [X[keep] for X in data.views]
    shared = SSMVD(1, random_state=seed).pca_patterns(views)
    sizes = np.cumsum([0] + [P.shape[1] for P in shared.patterns])
    blocks = [slice(int(a), int(b)) for a, b in zip(sizes[:-1], sizes[1:], strict=True)]
    return shared.basis.reduced(), blocks


def iterates(R, blocks, r, lambda1, lambda2, n: int):
    """The M of the first ``n`` B-steps of an SSMVD fit."""
    import tcca_core.baselines._ssmvd as ssmvd

    Ms: list = []
    real = ssmvd._polar_gram
    ssmvd._polar_gram = lambda M: Ms.append(M) or real(M)
    try:
        ssmvd.ssmvd_solve(R, blocks, r, lambda1, lambda2, max_iter=n, tol=0)
    finally:
        ssmvd._polar_gram = real
    return Ms


def newton_schulz(M, steps: int, smin: float, smax: float):
    """``steps`` scaled Newton-Schulz steps from M / smax (Chen & Chow's scaling)."""
    X, low = M / smax, smin / smax
    for _ in range(steps):
        A = X.T @ X
        a = np.sqrt(3.0 / (1.0 + low + low * low))
        A *= -0.5 * a**3
        A.flat[:: A.shape[0] + 1] += 1.5 * a
        X = X @ A
        low = min(a * low * (3.0 - a * a * low * low) / 2.0, 1.0)
    return X


def cpu_ms(f, reps: int) -> float:
    t = time.process_time()
    for _ in range(reps):
        f()
    return (time.process_time() - t) / reps * 1e3


def main(argv=None) -> int:
    from tcca_core.baselines._ssmvd import polar_factor

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--root", help="data root with SecStr (default: synthetic R)")
    ap.add_argument("--rows", type=int, default=10_000)
    ap.add_argument("--ranks", type=int, nargs="+", default=[20, 50, 150, 280])
    ap.add_argument("--iterations", type=int, default=12)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    R, blocks = reduced_coordinates(args.root, args.rows, args.seed)
    print(f"R: {R.shape}, blocks {[(b.start, b.stop) for b in blocks]}")
    print("r   | cond(M) | NS steps | gram ms | NS ms | NS/gram | warm-start error")
    for r in args.ranks:
        conds, steps, t_gram, t_ns, warm = [], [], 0.0, 0.0, 0.0
        for lambda1, lambda2 in LAMBDAS:
            Ms = iterates(R, blocks, r, lambda1, lambda2, args.iterations)
            for M_prev, M in zip(Ms[:-1], Ms[1:], strict=True):
                s = np.linalg.svd(M, compute_uv=False)
                P = polar_factor(M)
                k = next(
                    k
                    for k in range(1, 30)
                    if np.abs(newton_schulz(M, k, s[-1], s[0]) - P).max() < 1e-13
                )
                reps = max(2, 400 // r)
                t_gram += cpu_ms(lambda M=M: polar_factor(M), reps)
                t_ns += cpu_ms(
                    lambda M=M, k=k, s=s: newton_schulz(M, k, s[-1], s[0]), reps
                )
                lam, V = np.linalg.eigh(M_prev.T @ M_prev)
                X = M @ ((V / np.sqrt(lam)) @ V.T)  # warm start: previous inverse root
                # It diverges where M Z_prev has a singular value above sqrt(3).
                with np.errstate(all="ignore"):
                    for _ in range(12):
                        X = X @ (1.5 * np.eye(r) - 0.5 * (X.T @ X))
                conds.append(s[0] / s[-1])
                steps.append(k)
                err = float(np.abs(X - P).max())
                warm = max(warm, err if np.isfinite(err) else np.inf)
        n = len(steps)
        print(
            f"{r:<3d} | {min(conds):.1f}-{max(conds):.1f} | {min(steps)}-{max(steps)}"
            f" | {t_gram / n:.3f} | {t_ns / n:.3f} | {t_ns / t_gram:.2f}"
            f" | {warm:.1e}" + (" (diverged)" if np.isinf(warm) else "")
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""One measured fit, run in its own process by bench_engines.py.

The parent sets the BLAS thread variables in this process's environment before
numpy is imported, and caps its address space. We print one JSON line.

Measured: the fit's wall time; the time spent building M (or ||M||^2), in the
initialization and in the ALS sweeps (through thin wrappers around the library's
and tensorly's functions, which add nothing measurable); the process's peak
resident memory during the fit (VmHWM, reset just before the fit through
/proc/self/clear_refs) and its increase over the resident size before the fit;
the objective (see _objective.py); the flops of one sweep of the engine's
algorithm and a square DGEMM's rate measured right after the fit, in this
process, with the same threads.
"""

from __future__ import annotations

import json
import sys
import time
from collections import defaultdict


def _vm(key: str) -> float:
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith(key + ":"):
                return int(line.split()[1]) / 1024  # MiB
    return float("nan")


def _reset_peak() -> bool:
    try:
        with open("/proc/self/clear_refs", "w") as fh:
            fh.write("5")
        return True
    except OSError:
        return False


class Timers:
    """Wall time per label; nested build time is subtracted from the enclosing."""

    def __init__(self):
        self.t = defaultdict(float)
        self.info = {}
        self._stack = []

    def wrap(self, label, fn):
        def wrapped(*args, **kwargs):
            t0 = time.perf_counter()
            self._stack.append(label)
            try:
                return fn(*args, **kwargs)
            finally:
                self._stack.pop()
                dt = time.perf_counter() - t0
                self.t[label] += dt
                if self._stack:  # charge nested time to the inner label only
                    self.t[self._stack[-1]] -= dt

        return wrapped


def gemm_rate(n: int, repeats: int = 3) -> float:
    """GFLOP/s of an n x n x n DGEMM, best of ``repeats``."""
    import numpy as np

    rng = np.random.default_rng(0)
    A, B = rng.standard_normal((n, n)), rng.standard_normal((n, n))
    A @ B
    best = np.inf
    reps = repeats if n >= 1000 else repeats * 5
    for _ in range(reps):
        t0 = time.perf_counter()
        A @ B
        best = min(best, time.perf_counter() - t0)
    return 2.0 * n**3 / best / 1e9


def sweep_flops(engine: str, case, views_nnz) -> float:
    """Flops of one ALS sweep of the engine's algorithm (the dominant terms)."""
    import numpy as np

    m = len(case.dims)
    dims = list(case.dims) if case.kind == "tcca" else [case.N] * m
    P = float(np.prod(np.asarray(dims, dtype=float)))
    r, N = case.r, case.N
    if engine == "dense":
        # two GEMMs over M (dimension tree) + the component-wise contractions
        return 4.0 * r * P + 2.0 * r * P * ((m - 1) / dims[-1] + 1.0 / dims[0])
    if engine in ("tensorly", "cca-zoo"):
        return m * 2.0 * r * P  # one unfolding x Khatri-Rao GEMM per mode
    # implicit: per view, the projection Y_p U_p and Y_p^T H, each 2 N d_p r flops
    # for dense Y; 2 nnz_p r + 2 d_p^2 r for views kept sparse (X (W U), W^T X^T H)
    from tcca_core.solver.views import _dense_pays

    total = 0.0
    for d, nnz in zip(dims, views_nnz, strict=True):
        sparse = nnz and not _dense_pays(N, d, d, nnz)
        total += 2 * (2.0 * nnz * r + 2.0 * d * d * r) if sparse else 4.0 * N * d * r
    return total


def run(case_name: str, engine: str, seed: int, eps: float, init: str = "") -> dict:
    import numpy as np
    import scipy.sparse as sp
    from _cases import CASES, make_views, rbf_gammas
    from threadpoolctl import threadpool_info

    case = CASES[case_name]
    zoo = engine == "cca-zoo"
    # cca-zoo takes dense arrays only; densifying is data preparation, not timed.
    views = make_views(case, seed, sparse=False if zoo else None)
    nnz = [X.nnz if sp.issparse(X) else 0 for X in views]
    timers = Timers()
    import tensorly.decomposition as tld

    parafac = tld.parafac

    import tensorly.decomposition._cp as tlcp

    def counted_parafac(*args, **kwargs):
        wanted = kwargs.get("return_errors", False)
        kwargs["return_errors"] = True
        cp, errors = parafac(*args, **kwargs)
        timers.info["sweeps"] = len(errors)
        return (cp, errors) if wanted else cp

    tld.parafac = timers.wrap("als", counted_parafac)
    # tensorly's own initialization (cca-zoo: SVD of each unfolding) is not a sweep
    tlcp.initialize_cp = timers.wrap("init", tlcp.initialize_cp)
    out = {}
    if zoo:
        import cca_zoo.linear._tcca as ztcca

        ztcca.cross_moment_tensor = timers.wrap("build", ztcca.cross_moment_tensor)
        from _objective import zoo_shrinkage

        c = zoo_shrinkage(case.kind, eps, case.N)
        if case.kind == "tcca":
            from cca_zoo.linear import TCCA as Z

            est = Z(case.r, shrinkage=c, random_state=seed)
        else:
            from cca_zoo.nonparametric import KTCCA as Z

            est = Z(
                case.r,
                shrinkage=c,
                kernel="rbf",
                gamma=rbf_gammas(views),
                random_state=seed,
            )
    else:
        import tcca_core.solver.als as als
        import tcca_core.solver.dense as D
        import tcca_core.solver.implicit as T
        from tcca_core import KTCCA, TCCA

        cp_als = als.cp_als

        def counted_cp_als(*args, **kwargs):
            res = cp_als(*args, **kwargs)
            timers.info["sweeps"] = res.n_iter
            return res

        als.cp_als = timers.wrap("als", counted_cp_als)
        als.init_factors = timers.wrap("init", als.init_factors)
        D.dense_moment = timers.wrap("build", D.dense_moment)
        norm_sq = T.ImplicitMoment.norm_sq

        def counted_norm(self, method=None):
            timers.info["norm_route"] = method or self.norm_method()
            return norm_sq(self, method)

        T.ImplicitMoment.norm_sq = timers.wrap("build", counted_norm)
        # INIT or INIT/nK: the start, and optionally n_init=K (e.g. auto/n1)
        init, _, n_init = init.partition("/n")
        kw = {"init": init} if init else {}
        if n_init:
            kw["n_init"] = int(n_init)
        if engine == "tensorly":
            # The paper's route: the dense tensor and plain CP-ALS (no line
            # search), one start (the exact HOSVD, as tensorly's own default), to
            # tensorly's tolerance (1e-8 on the error change), our sweep budget.
            kw.update(acceleration=None, tol=1e-8, n_init=1)
        if case.kind == "tcca":
            est = TCCA(case.r, eps=eps, algorithm=engine, random_state=seed, **kw)
        else:
            est = KTCCA(
                case.r,
                eps=eps,
                kernel="rbf",
                algorithm=engine,
                kernel_params=[{"gamma": g} for g in rbf_gammas(views)],
                random_state=seed,
                **kw,
            )

    import gc

    gc.collect()
    rss0 = _vm("VmRSS")
    hwm_ok = _reset_peak()
    t0 = time.perf_counter()
    try:
        est.fit(views)
    except ValueError as exc:
        return {"status": f"refused: {str(exc).splitlines()[0][:150]}"}
    fit_s = time.perf_counter() - t0
    peak = _vm("VmHWM") if hwm_ok else float("nan")
    sweeps = timers.info.get("sweeps", 0)
    out.update(
        status="ok",
        fit_s=fit_s,
        build_s=timers.t.get("build", 0.0),
        init_s=timers.t.get("init", 0.0),
        als_s=timers.t.get("als", 0.0),
        # whitening / kernels / Cholesky, correlations and bookkeeping
        other_s=fit_s - sum(timers.t.get(k, 0.0) for k in ("build", "init", "als")),
        sweeps=sweeps,
        peak_rss_mb=peak,
        fit_mem_mb=peak - rss0,
        norm_route=timers.info.get("norm_route", ""),
        blas=[(i["internal_api"], i["num_threads"]) for i in threadpool_info()],
    )
    # Objective, the same definition for every method (not timed).
    if zoo:
        from _objective import (
            ktcca_norm_sq,
            ktcca_objective,
            tcca_norm_sq,
            tcca_objective,
        )

        if case.kind == "tcca":
            rho, err = tcca_objective(
                views, est.means_, est.weights_, eps, tcca_norm_sq(views, eps)
            )
        else:
            from tcca_core.kernels import center_kernel

            Ks = [
                center_kernel(est._kernel(i, X, X))[0]
                for i, X in enumerate(est.views_fit_)
            ]
            rho, err = ktcca_objective(
                Ks, est.weights_, eps, 1e-10, ktcca_norm_sq(Ks, eps, 1e-10)
            )
    else:
        rho, err = est.correlations_, est.reconstruction_errors_[-1]
        out["engine_used"] = est.algorithm_
    out["corr_mean"] = float(np.mean(np.abs(rho)))
    out["corr_max"] = float(np.max(np.abs(rho)))
    out["rel_error"] = float(err)
    # Sweep rate against this process's DGEMM rate, same threads, same moment.
    if sweeps:
        flops = sweep_flops(engine, case, nnz)
        n = int(min(4096, max(256, round((flops / 2) ** (1 / 3)))))
        out.update(
            sweep_s=out["als_s"] / sweeps,
            sweep_gflop=flops / 1e9,
            gemm_n=n,
            gemm_gflops=gemm_rate(n),
        )
        out["sweep_gflops"] = flops / out["sweep_s"] / 1e9
        out["gemm_ratio"] = out["gemm_gflops"] / out["sweep_gflops"]
    return out


def main(argv):
    case, engine, seed, eps = argv[0], argv[1], int(argv[2]), float(argv[3])
    init = argv[4] if len(argv) > 4 else ""
    print(json.dumps(run(case, engine, seed, eps, init)), flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])

"""One ALS sweep of the implicit engine against DGEMM, one BLAS thread.

For each case (synthetic data with the paper's shapes, ``benchmarks/_cases.py``),
whitened as :func:`tcca_core.tcca_path` does (column means, ``covariance``,
``inv_sqrt_psd`` with eps = 1e-2, :class:`~tcca_core.solver.views.WhitenedView`), this
times, per rank:

* **sweep**: one steady-state sweep of ``cp_als`` on the implicit engine
  (``MomentEngine(views, "implicit")``), with and without the line search: the time
  between two successive ``callback`` calls of a run resumed from a warmed state
  (three sweeps in), so the first sweep of a run (cold caches) is never counted;
* **MTTKRP**: the m MTTKRPs of one sweep alone, in ALS order (the factor of each mode
  replaced by a new array after its MTTKRP, as ALS does, so each projection is
  computed once), i.e. the 4 N r sum(d) flops the cost model counts for a sweep;
* **reference**: for dense views, one square DGEMM (``n x n x n``) of the same flop
  count as the sweep's useful work, 4 N r sum(d); for sparse views (one-hot CSR),
  the sparse products a sweep must do, through scipy's public CSR x dense product:
  per view ``X @ D`` (N x r) and ``X.T @ H`` (d x r), 4 nnz r flops in all;
* **GEMMs** (dense views): the 2 m bare GEMMs of a sweep's shapes, ``Y_q @ U_q``
  and ``Y_q.T @ H`` on whole arrays, the same flops as the sweep's useful work: what
  the BLAS makes of these skinny shapes, the floor of any sweep built on them.

GFLOP/s is the useful work over the time; ``x ref`` is time / reference time (how many
times slower than the reference the sweep runs: the target is 2 at r >= 50).
Times are process CPU seconds (``time.process_time``; one BLAS thread, so that is the
time on a core) as well as wall seconds: the machine may be shared with other jobs, so
each repetition runs every measurement of a case in turn (ABAB...), the order
alternating between repetitions, and the medians are taken over repetitions.

``--baseline REV`` also times the library as it was at git revision ``REV`` (its
``src/tcca_core`` extracted into a temporary package, ``tcca_core_baseline``) in the
same loop, interleaved with the current one, from the same data and warmed state::

    python benchmarks/sweep_gflops.py                      # all cases, r = 50 and 100
    python benchmarks/sweep_gflops.py --cases nus --ranks 50 --baseline 5859e22
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_var] = "1"  # before numpy loads

import argparse  # noqa: E402
import importlib.util  # noqa: E402
import io  # noqa: E402
import json  # noqa: E402
import platform  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import tarfile  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402
import scipy.sparse as sp  # noqa: E402

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))

from _cases import CASES, Case, make_views  # noqa: E402

#: name -> (the benchmark case whose data it uses, data kind, sparse input)
SHAPES = {
    # SecStr: 84,000 x 3 views of 105, one-hot (5 of 105 per row), CSR as the real data
    "secstr-onehot": ("secstr-r50", "onehot", True),
    # the same shape, dense Gaussian views (skewed latent plus noise)
    "secstr-dense": ("secstr-r50", "dense", False),
    # NUS-WIDE: the 5,597 training rows, views 500 / 144 / 128, dense
    "nus": ("nus", "dense", False),
    # SecStr with the extra unlabelled rows (1,273,151), one-hot CSR (not by default)
    "secstr-extra-onehot": ("secstr-extra-r300", "onehot", True),
}
DEFAULT_CASES = ["secstr-onehot", "secstr-dense", "nus"]
EPS = 1e-2
WARM_SWEEPS = 3


def _case(name: str) -> Case:
    base, data, sparse = SHAPES[name]
    c = CASES[base]
    N = 1_273_151 if name == "secstr-extra-onehot" else c.N
    return Case(name, "tcca", N, c.dims, c.r, data, sparse)


def load_library(rev: str | None):
    """Return the solver modules ``(als, implicit, engine, linalg)``.

    Of ``tcca_core``, or of a copy of ``src/tcca_core`` at git revision ``rev``
    (imported as ``tcca_core_baseline``; before the solver package, its ``_als``,
    ``_tensors``, ``_engine`` and ``_linalg``).
    """
    name = "tcca_core"
    if rev is not None:
        tmp = Path(tempfile.mkdtemp(prefix="sweep_gflops_"))
        tar = subprocess.run(
            ["git", "-C", str(ROOT), "archive", rev, "src/tcca_core"],
            check=True,
            capture_output=True,
        ).stdout
        with tarfile.open(fileobj=io.BytesIO(tar)) as t:
            t.extractall(tmp, filter="data")
        name = "tcca_core_baseline"
        (tmp / "src" / "tcca_core").rename(tmp / name)
        sys.path.insert(0, str(tmp))
    mods = ("solver.als", "solver.implicit", "solver.engine", "solver.linalg")
    if importlib.util.find_spec(f"{name}.solver") is None:  # before the solver package
        mods = ("_als", "_tensors", "_engine", "_linalg")
    return tuple(importlib.import_module(f"{name}.{mod}") for mod in mods)


def whiten(lib, Xs):
    """WhitenedView objects as ``tcca_path`` builds them (eps = 1e-2, centered)."""
    _, T, _, L = lib
    out = []
    for X in Xs:
        mu = L.column_mean(X)
        out.append(T.WhitenedView(X, mu, L.inv_sqrt_psd(L.covariance(X, mu), EPS)))
    return out


def useful_flops(Xs, r: int) -> tuple[float, bool]:
    """(4 N r sum(d) for dense views or 4 nnz r for sparse ones, sparse?)."""
    if all(sp.issparse(X) for X in Xs):
        return 4.0 * r * sum(X.nnz for X in Xs), True
    N = Xs[0].shape[0]
    return 4.0 * N * r * sum(X.shape[1] for X in Xs), False


class Clock:
    """CPU and wall seconds of a block."""

    def __enter__(self):
        self.c0, self.w0 = time.process_time(), time.perf_counter()
        return self

    def __exit__(self, *exc):
        self.cpu = time.process_time() - self.c0
        self.wall = time.perf_counter() - self.w0


class Impl:
    """One library version bound to one case's data at one rank."""

    def __init__(self, lib, Xs, norm_sq: float | None):
        self.lib = lib
        als, _, E, _ = lib
        self.engine = E.MomentEngine(whiten(lib, Xs), "implicit")
        if norm_sq is not None:
            self.engine._norm_sq = norm_sq  # the same value: skip recomputing it
        self.cp_als = als.cp_als

    def sweeps(self, warm, k: int, linesearch: bool) -> list[tuple[float, float]]:
        """(cpu, wall) of k steady-state sweeps resumed from ``warm``."""
        stamps: list[tuple[float, float]] = []

        def tick(_n, _err):
            stamps.append((time.process_time(), time.perf_counter()))

        e = self.engine
        self.cp_als(
            e.mttkrp,
            e.norm_sq,
            max_iter=warm.n_iter + 1 + k,
            tol=0,
            linesearch=linesearch,
            callback=tick,
            resume=warm,
            residual_sq=e.residual_sq,
        )
        return [
            (b[0] - a[0], b[1] - a[1]) for a, b in zip(stamps, stamps[1:], strict=False)
        ]

    def mttkrps(self, factors) -> tuple[float, float]:
        """(cpu, wall) of one sweep's m MTTKRPs in ALS order (no solves)."""
        F = [U.copy() for U in factors]
        m = len(F)
        self.engine.mttkrp(F, m - 1)  # as after the last mode of a sweep
        F[m - 1] = F[m - 1].copy()
        with Clock() as c:
            for p in range(m):
                self.engine.mttkrp(F, p)
                F[p] = F[p].copy()  # ALS replaces U_p
        return c.cpu, c.wall


def reference(Xs, r: int, flops: float, sparse: bool):
    """A function timing the case's reference once: (cpu, wall)."""
    rng = np.random.default_rng(1)
    if sparse:
        Xc = [sp.csr_matrix(X) for X in Xs]
        D = [rng.standard_normal((X.shape[1], r)) for X in Xc]
        H = rng.standard_normal((Xc[0].shape[0], r))

        def run():
            with Clock() as c:
                for X, Dq in zip(Xc, D, strict=True):
                    X @ Dq
                    X.T @ H
            return c.cpu, c.wall

        return run, "scipy CSR x dense"
    n = int(round((flops / 2) ** (1 / 3)))
    A, B = rng.standard_normal((n, n)), rng.standard_normal((n, n))
    C = np.empty((n, n))
    scale = flops / (2.0 * n**3)

    def run():
        with Clock() as c:
            np.matmul(A, B, out=C)
        return c.cpu * scale, c.wall * scale

    return run, f"DGEMM n={n}"


def bare_gemms(lib, Xs, r: int):
    """A function timing a sweep's 2 m GEMMs on whole arrays once: (cpu, wall)."""
    Ys = [v.Y for v in whiten(lib, Xs)]
    rng = np.random.default_rng(2)
    U = [rng.standard_normal((Y.shape[1], r)) for Y in Ys]
    P = np.empty((Ys[0].shape[0], r))
    H = rng.standard_normal((Ys[0].shape[0], r))

    def run():
        with Clock() as c:
            for Y, Uq in zip(Ys, U, strict=True):
                np.matmul(Y, Uq, out=P)
                Y.T @ H
        return c.cpu, c.wall

    return run


def run_case(name, ranks, libs, repeats, k):
    case = _case(name)
    Xs = make_views(case, seed=0, sparse=case.sparse_input)
    rows = []
    for r in ranks:
        flops, sparse = useful_flops(Xs, r)
        impls = {}
        norm_sq = None
        for label, lib in libs.items():
            impls[label] = Impl(lib, Xs, norm_sq)
            norm_sq = impls[label].engine.norm_sq
        ref, ref_name = reference(Xs, r, flops, sparse)
        # a warmed state: three sweeps from a random start (current library)
        cur = impls["after"]
        rng = np.random.default_rng(0)
        init = [rng.standard_normal((d, r)) / np.sqrt(d) for d in case.dims]
        warm = cur.cp_als(
            cur.engine.mttkrp, cur.engine.norm_sq, init, max_iter=WARM_SWEEPS, tol=0
        )
        tasks = [("ref", None, None)]
        gemms = None if sparse else bare_gemms(libs["after"], Xs, r)
        if gemms is not None:
            tasks.append(("gemms", None, None))
        for label in impls:
            tasks += [(label, "sweep", True), (label, "sweep", False)]
            tasks += [(label, "mttkrp", None)]
        samples: dict[tuple, list] = {t: [] for t in tasks}
        ref()  # warm-up
        for rep in range(repeats):
            for t in tasks if rep % 2 == 0 else tasks[::-1]:
                label, what, ls = t
                if label == "ref":
                    samples[t].append(ref())
                elif label == "gemms":
                    samples[t].append(gemms())
                elif what == "sweep":
                    # the median sweep of this run
                    s = impls[label].sweeps(warm, k, ls)
                    samples[t].append(tuple(np.median(np.array(s), axis=0)))
                else:
                    samples[t].append(impls[label].mttkrps(warm.factors))
        med = {t: np.median(np.array(v), axis=0) for t, v in samples.items()}
        ref_cpu, ref_wall = med[tasks[0]]
        bare = med[("gemms", None, None)][0] if gemms is not None else np.nan
        for label in impls:
            mt = med[(label, "mttkrp", None)]
            for ls in (True, False):
                sw = med[(label, "sweep", ls)]
                rows.append(
                    dict(
                        case=name,
                        r=r,
                        version=label,
                        linesearch=ls,
                        sweep_cpu_s=float(sw[0]),
                        sweep_wall_s=float(sw[1]),
                        mttkrp_cpu_s=float(mt[0]),
                        gflop=flops / 1e9,
                        sweep_gflops=flops / sw[0] / 1e9,
                        mttkrp_gflops=flops / mt[0] / 1e9,
                        ref=ref_name,
                        ref_cpu_s=float(ref_cpu),
                        ref_wall_s=float(ref_wall),
                        ref_gflops=flops / ref_cpu / 1e9,
                        sweep_x_ref=float(sw[0] / ref_cpu),
                        mttkrp_x_ref=float(mt[0] / ref_cpu),
                        gemms_x_ref=float(bare / ref_cpu),
                    )
                )
                print(_line(rows[-1]), flush=True)
    return rows


HEADER = (
    "| case | r | version | line search | sweep CPU (s) | sweep wall (s) | "
    "MTTKRPs CPU (s) | GFLOP | sweep GFLOP/s | MTTKRPs GFLOP/s | reference | "
    "ref GFLOP/s | sweep x ref | MTTKRPs x ref | GEMMs x ref |\n" + "|---" * 15 + "|"
)


def _line(row: dict) -> str:
    f = row
    return (
        f"| {f['case']} | {f['r']} | {f['version']} | "
        f"{'yes' if f['linesearch'] else 'no'} | {f['sweep_cpu_s']:.4f} | "
        f"{f['sweep_wall_s']:.4f} | {f['mttkrp_cpu_s']:.4f} | {f['gflop']:.3g} | "
        f"{f['sweep_gflops']:.1f} | {f['mttkrp_gflops']:.1f} | {f['ref']} | "
        f"{f['ref_gflops']:.1f} | {f['sweep_x_ref']:.2f} | {f['mttkrp_x_ref']:.2f} | "
        f"{f['gemms_x_ref']:.2f} |"
    )


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cases", nargs="+", default=DEFAULT_CASES, choices=SHAPES)
    ap.add_argument("--ranks", nargs="+", type=int, default=[50, 100])
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--sweeps", type=int, default=3, help="timed sweeps per run")
    ap.add_argument("--baseline", metavar="REV", help="also time this git revision")
    ap.add_argument("--json", type=Path, help="write the rows here")
    args = ap.parse_args(argv)
    libs = {"after": load_library(None)}
    if args.baseline:
        libs = {"before": load_library(args.baseline), **libs}
    print(
        f"# {platform.processor() or platform.machine()}, {os.cpu_count()} CPUs, "
        f"load {os.getloadavg()[0]:.1f}; 1 BLAS thread; medians of {args.repeats} "
        "interleaved repetitions (ABAB, order alternating), CPU seconds"
    )
    print(HEADER)
    rows = []
    for name in args.cases:
        rows += run_case(name, args.ranks, libs, args.repeats, args.sweeps)
    print(f"# load at the end {os.getloadavg()[0]:.1f}")
    if args.json:
        from tcca_core._io import atomic_write_text

        atomic_write_text(args.json, json.dumps(rows, indent=1) + "\n")


if __name__ == "__main__":
    main()

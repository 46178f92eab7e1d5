"""One engine bound to one moment tensor: the cost model, the starts, the race, paths.

:func:`choose_engine` resolves ``algorithm="auto"`` from :func:`engine_costs`;
:class:`MomentEngine` holds M (the "dense" and "tensorly" engines, :mod:`.dense`,
:mod:`.tensorly`) or its tensor-free operator (the "implicit" engine,
:class:`.implicit.ImplicitMoment`) and runs CP-ALS (:mod:`.als`), or damped
Gauss-Newton (:mod:`.lm`, ``solver="lm"``), on it:
the kind and number of starts (``init="auto"``, ``n_init="auto"``), their race (a
short heat, then a final of two), the two-view SVD, and rank paths that share M,
||M||^2 and the exact HOSVD across ranks.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import replace
from time import perf_counter
from typing import Any

import numpy as np

from .. import _progress
from . import dense as _dense
from . import tensorly as _tensorly
from .dense import DENSE_MAX_BYTES
from .implicit import (
    ImplicitMoment,
    _dense_mode_grams,
    _unfolding_plan,
    _unfolding_slabs,
    correlations,
    mode_gram_costs,
    norm_costs,
)
from .linalg import svd
from .params import SolverParams
from .sparse import _prod, sparse_moment_cost
from .views import WhitenedView, _block_rows

# Per-rank progress of long rank paths (the pipeline's job logs show it).
logger = logging.getLogger(__name__)

__all__ = ["MomentEngine", "choose_engine", "engine_costs"]


def _argmin_first(values: Sequence[float]) -> int:
    """Index of the smallest value; a later one must be smaller beyond rounding."""
    k = 0
    for i, v in enumerate(values):
        if v < values[k] * (1 - 1e-9):
            k = i
    return k


def _pace(errors: Sequence[float]) -> float:
    """Relative decrease of the error per sweep over the last ``WINDOW`` sweeps."""
    from .als import WINDOW

    if len(errors) <= WINDOW or errors[-1] <= 0:
        return float("nan")
    return float((errors[-1 - WINDOW] - errors[-1]) / WINDOW / errors[-1])


# Sweeps assumed by the cost model; ALS on these problems typically needs tens.
_COST_SWEEPS = 50

#: Starts cheaper than this (flops, a few seconds) are always exact.
_FREE_FLOPS = 1e11

#: Sweeps every start of a race runs before the field is cut to the finalists
#: (:meth:`MomentEngine._race`), and how many finalists run twice as long again.
RACE_HEAT = 5
RACE_FINALISTS = 2

#: Compression to the HOSVD bases (:meth:`MomentEngine.compressed`) is used where
#: it cuts a sweep's cost to this fraction or less.
COMPRESS_BELOW = 0.95

#: Flops that ``n_init="auto"`` may spend on restarts, and the most starts.
_RESTART_FLOPS = 1e11
_MAX_STARTS = 10


def engine_costs(
    N: int, dims: Sequence[int], rank: int, nnz: Sequence[float] | None = None
) -> dict[str, float]:
    """Estimated flops of a whole fit with each engine.

    dense:    build + S * 2 * 2 r prod(d)   (S sweeps of two GEMMs over M: the
                                            contraction with U_m serves m - 1 modes)
              build = 2 N prod(d) for dense views, or the cheaper
              :func:`sparse_moment_cost` when every view is sparse with ``nnz``
              non-zeros per row on average
    implicit: min(:func:`norm_costs`)       (||M||^2 by the cheapest exact route)
              + S * 4 N r sum(d)            (per sweep: Y_p U_p and Y_p^T H for every p)
    with S = 50 sweeps. Memory: dense needs 8 prod(d) bytes, implicit 8 m N r.
    """
    prod = _prod(dims)
    sd = float(sum(dims))
    build = 2.0 * N * prod
    if nnz is not None:
        build = min(build, sparse_moment_cost(N, dims, nnz))
    dense = build + _COST_SWEEPS * 2 * 2 * rank * prod
    norm = min(norm_costs(N, dims, nnz, sparse=nnz is not None).values())
    implicit = norm + _COST_SWEEPS * 4.0 * N * rank * sd
    return {"dense": dense, "implicit": implicit, "dense_bytes": 8 * prod}


def choose_engine(
    N: int,
    dims: Sequence[int],
    rank: int,
    algorithm: str,
    nnz: Sequence[float] | None = None,
) -> str:
    """Resolve ``algorithm="auto"`` with :func:`engine_costs`; refuse huge dense."""
    costs = engine_costs(N, dims, rank, nnz)
    if algorithm == "auto":
        if costs["dense_bytes"] > DENSE_MAX_BYTES:
            return "implicit"
        return "dense" if costs["dense"] < costs["implicit"] else "implicit"
    if algorithm in ("dense", "tensorly") and costs["dense_bytes"] > DENSE_MAX_BYTES:
        gib = costs["dense_bytes"] / 1024**3
        raise ValueError(
            f"algorithm={algorithm!r} would build a "
            f"{' x '.join(map(str, dims))} tensor ({gib:.1f} GiB, more than the "
            f"{DENSE_MAX_BYTES / 1024**3:.0f} GiB allowed); use "
            "algorithm='implicit', which gives the same answer without forming it"
        )
    return algorithm


class MomentEngine:
    """One engine bound to one moment tensor, reusable across ranks.

    Building M (dense engines) or ||M||^2 (implicit engine) is done once, lazily,
    so a grid of ranks (:meth:`decompose` called repeatedly) pays for it once.
    """

    def __init__(self, views: Sequence[WhitenedView], name: str, op: Any = None):
        self.views = list(views)
        self.name = name
        self.dims = [v.d for v in self.views]
        self._M: np.ndarray | None = None
        self._norm_sq: float | None = None
        # ``op``: an operator of the engine's own (the array-API path's
        # :class:`.xp.DeviceMoment`, which holds M itself for the dense engine)
        self._op: ImplicitMoment | None = op
        if op is None and name == "implicit":
            self._op = ImplicitMoment(self.views)
        self._tree: dict = {}
        self._mode_grams: list[np.ndarray] | None = None
        self._hosvd: list[np.ndarray] | None = None
        self._compressed: tuple | None = None

    @classmethod
    def choose(
        cls, views: Sequence[WhitenedView], rank: int, algorithm: str
    ) -> MomentEngine:
        """Make the engine ``algorithm`` names, or the cost model's pick for "auto"."""
        N = views[0].N
        dims = [v.d for v in views]
        sparse = all(v.sparse is not None for v in views)
        nnz = [v.nnz_per_row for v in views] if sparse else None
        return cls(views, choose_engine(N, dims, rank, algorithm, nnz))

    @property
    def _holds_M(self) -> bool:
        """Whether ALS runs on M built (the dense engines, on the host or a device)."""
        return self._op is None or bool(getattr(self._op, "dense", False))

    @property
    def M(self) -> np.ndarray:
        """The dense tensor M, built on first use (dense engines)."""
        if self._M is None:
            # The reference route ("tensorly") builds M from dense input as given.
            self._M = _dense.dense_moment(
                self.views, exploit_sparsity=self.name != "tensorly"
            )
        return self._M

    @property
    def norm_sq(self) -> float:
        """||M||_F^2, computed once."""
        if self._norm_sq is None:
            if self._op is not None and self._mode_grams is not None:
                # ||M||^2 = trace(M_(1) M_(1)^T), free once the HOSVD is done
                self._norm_sq = float(np.trace(self._mode_grams[0]))
            elif self._op is not None:
                self._norm_sq = self._op.norm_sq()
            else:
                self._norm_sq = float(np.vdot(self.M, self.M))
        return self._norm_sq

    def mttkrp(self, factors: Sequence[np.ndarray], p: int) -> np.ndarray:
        """M_(p) (kr_{q != p} U_q), by the engine's route."""
        if self._op is not None:
            return self._op.mttkrp(factors, p)
        if self.name == "tensorly":
            return _tensorly.tensorly_mttkrp(self.M, factors, p)
        return _dense.dense_mttkrp(self.M, factors, p, cache=self._tree)

    def residual_sq(self, factors: Sequence[np.ndarray]) -> float | None:
        """||M - [[U_1, ..., U_m]]||_F^2 summed slab by slab, or None if unaffordable.

        The Gram formula of ALS's error subtracts terms that can be far larger than
        the result (:data:`.als.CANCELLATION`); this sums the residual's squares
        over column slabs of the unfolding M_(f) (f the largest mode), so it has no
        cancellation. O(prod(d) r) for a dense M, plus O(2 N prod(d)) to form the
        slabs of an implicit one; no more than 64 MB of M at a time. None where even
        a one-column slab would exceed that (:func:`_unfolding_plan`).
        """
        own: Any = self._op
        if own is not None and not isinstance(own, ImplicitMoment):
            return own.residual_sq(factors)
        plan = _unfolding_plan(self.dims)
        if plan is None:
            return None
        order, J = plan
        d_f, d_2 = self.dims[order[0]], self.dims[order[1]]
        if self._op is not None:
            slabs = _unfolding_slabs(self.views)
        else:
            Mt = np.transpose(self.M, order)
            slabs = (Mt[:, j : j + J].reshape(d_f, -1) for j in range(0, d_2, J))
        r = factors[0].shape[1]
        total = 0.0
        for j, slab in zip(range(0, d_2, J), slabs, strict=True):
            # the slab's columns run over (mode order[1] in j:j+J, order[2], ...),
            # the first slowest, as the Khatri-Rao rows below
            K = factors[order[1]][j : j + J]
            for q in order[2:]:
                K = (K[:, None, :] * factors[q][None, :, :]).reshape(-1, r)
            R = slab - factors[order[0]] @ K.T
            total += float(np.vdot(R, R))
        return total

    def mode_grams(self) -> list[np.ndarray]:
        """M_(p) M_(p)^T for every mode (exact HOSVD), computed once."""
        if self._mode_grams is None:
            if self._op is not None:
                self._mode_grams = self._op.mode_grams()
            else:
                self._mode_grams = _dense_mode_grams(self.M)
        return self._mode_grams

    def hosvd_bases(self) -> list[np.ndarray]:
        """Return the exact HOSVD's bases (:func:`.als.hosvd_bases`), computed once."""
        if self._hosvd is None:
            from .als import hosvd_bases

            self._hosvd = hosvd_bases(self.mode_grams())
        return self._hosvd

    def compressed(self) -> tuple[list[np.ndarray], MomentEngine] | None:
        """M in its HOSVD bases, where some mode's rank is below its dimension.

        The range of M_(p) is spanned by Q_p, the exact HOSVD's basis of mode p
        (:meth:`hosvd_bases`), so M = G x_1 Q_1 ... x_m Q_m with the core
        G = M x_1 Q_1^T ... x_m Q_m^T of size k_1 x ... x k_m, and every ALS
        update of mode p lies in span(Q_p). ALS on G from Q_p^T U_p therefore
        makes the iterates of ALS on M, mapped by U_p = Q_p V_p (CANDELINC; the
        part of a start outside span(Q_p) enters only the first sweep's Gram
        matrices, which :func:`.als.cp_als` is given as ``gram_offsets``), at
        prod(k) / prod(d) of a dense sweep's cost and sum(k) / sum(d) of an
        implicit one's. Returns ``(bases, engine on G)``, or None where no mode
        is rank-deficient enough to pay (:data:`COMPRESS_BELOW`), the HOSVD is
        not known and costs more than :data:`_FREE_FLOPS`, or the engine is the
        reference route. An operator's G (implicit, or a device's) is its
        ``project`` onto the views Y_p Q_p.
        """
        if self._compressed is None:
            self._compressed = ()
            own_op = self._op is None or hasattr(self._op, "project")
            known = self._hosvd is not None or self.init_cost() <= _FREE_FLOPS
            if self.name != "tensorly" and own_op and known:
                Q = self.hosvd_bases()
                ks = [q.shape[1] for q in Q]
                if self._holds_M:
                    saving = _prod(ks) / _prod(self.dims)
                else:
                    saving = sum(ks) / sum(self.dims)
                if 0 < min(ks) and saving <= COMPRESS_BELOW:
                    if self._op is None:
                        inner = MomentEngine(self.views, self.name)
                        G = self.M
                        for p, Qp in enumerate(Q):
                            G = np.moveaxis(np.tensordot(G, Qp, axes=([p], [0])), -1, p)
                        inner._M = np.ascontiguousarray(G)
                        inner.dims = ks
                    else:
                        op: Any = self._op
                        op = op.project(Q)
                        inner = MomentEngine(op.views, self.name, op=op)
                    # the errors stay relative to ||M||, as the uncompressed run's
                    inner._norm_sq = self.norm_sq
                    self._compressed = (Q, inner)
        return self._compressed or None

    def correlations(self, factors: Sequence[np.ndarray]) -> np.ndarray:
        """rho_k = (1/N) sum_n prod_p (Y_p U_p)[n, k] = <M, u_1k o ... o u_mk>.

        With M built (dense engines), from M: one MTTKRP, O(r prod(d)), whatever N
        (SecStr with 1.3M samples: 0.7 GFLOP instead of a pass over the data).
        Otherwise by blocks of samples (:func:`correlations`). Same values to
        rounding.
        """
        own: Any = self._op
        if own is not None and not isinstance(own, ImplicitMoment):
            return own.correlations(factors)
        if self._M is None:
            return correlations(self.views, factors)
        B = _dense.dense_mttkrp(self._M, factors, 0)
        return np.einsum("az,az->z", B, factors[0])

    def init_cost(self) -> float:
        """Flops of the exact HOSVD start (0 once the mode Grams exist)."""
        if self._mode_grams is not None:
            return 0.0
        if self._holds_M:
            return 2.0 * _prod(self.dims) * sum(self.dims)
        v = self.views
        return min(
            mode_gram_costs(
                v[0].N,
                self.dims,
                [x.nnz_per_row for x in v],
                sparse=all(x.sparse is not None for x in v),
            ).values()
        )

    def sweep_cost(self, rank: int) -> float:
        """Flops of one ALS sweep at ``rank``."""
        if self._holds_M:
            return 4.0 * rank * _prod(self.dims)
        return 4.0 * self.views[0].N * rank * sum(self.dims)

    def auto_init(self, ranks: Sequence[int]) -> str:
        """Return the start ``init="auto"`` means for a fit over ``ranks``.

        The exact HOSVD (``"hosvd"``) when it costs no more than the ALS sweeps it
        starts (``_COST_SWEEPS`` per rank, summed over a rank path, which shares
        one HOSVD) or under ``_FREE_FLOPS``; otherwise the randomized sketch with
        power iterations (``"svd"``). The exact start is the better one on every
        case of the solver-quality battery (BENCHMARKS.md); the sketch is for
        large implicit problems (KTCCA with N in the thousands at small r), where
        the N x N Gram matrices of the exact start would cost more than the fit.
        """
        budget = _COST_SWEEPS * sum(self.sweep_cost(r) for r in set(ranks))
        return "hosvd" if self.init_cost() <= max(budget, _FREE_FLOPS) else "svd"

    def auto_n_init(self, rank: int) -> int:
        """Return the number of starts ``n_init="auto"`` means at ``rank``.

        As many as fit in ``_RESTART_FLOPS`` (a few seconds on one core) at
        ``_COST_SWEEPS`` sweeps each, between 1 and ``_MAX_STARTS``. Small problems,
        where ALS is cheap and the landscape can have many local minima (mfeat
        with six views: starts end 0.82 to 0.86), get the restarts; large ones,
        where the exact HOSVD start is within 0.1 % of the best of 14 starts on
        every case of the battery, run once.
        """
        one = _COST_SWEEPS * self.sweep_cost(rank)
        return int(min(max(_RESTART_FLOPS // max(one, 1.0), 1), _MAX_STARTS))

    def _two_view(self, rank: int):
        """Decompose M exactly when m = 2, by its truncated SVD.

        M is a d_1 x d_2 matrix and its best rank-r approximation is the truncated
        SVD (Eckart-Young), so no ALS is needed: the weights are the top r singular
        values, the regularized canonical correlations.
        """
        if self._op is None:
            M = self.M
        else:
            d2 = self.dims[1]
            eye = np.eye(d2)
            J = _block_rows(d2, 8 * self.views[0].N)  # N x J projections <= 64 MB
            # mode 0's factor is never read by the MTTKRP for mode 0
            M = np.hstack(
                [
                    self._op.mttkrp([None, eye[:, j : j + J]], 0)  # type: ignore[list-item]
                    for j in range(0, d2, J)
                ]
            )
        U, sv, Vt = svd(M)
        norm_sq = float(np.sum(sv**2))
        rest = float(np.sum(sv[rank:] ** 2))
        err = np.sqrt(rest / norm_sq) if norm_sq > 0 else 0.0
        return sv[:rank].copy(), [U[:, :rank], Vt[:rank].T.copy()], [float(err)]

    def decompose(
        self,
        rank: int,
        params: SolverParams,
        *,
        rng: np.random.Generator,
        extra_starts: Sequence[list[np.ndarray]] = (),
    ):
        """Rank-``rank`` CP-ALS of M, the best of several starts.

        The starts are ``params.init`` (``"auto"`` resolved by :meth:`auto_init`),
        then ``n_init - 1`` (``"auto"``: :meth:`auto_n_init`, or 1 for given factors)
        more of the same kind drawn from ``rng`` (randomized sketches after the
        exact HOSVD or given factors), then the explicit factor lists of
        ``extra_starts`` (a rank path's warm start); the fit with the lowest final
        error is kept (ties within rounding: the earliest). With two
        views, the exact truncated SVD replaces ALS (not for the "tensorly" route,
        which is the paper's and runs parafac as it is).

        Returns ``(weights, factors, info)`` with normalized, sign-fixed factors
        sorted by weight, and ``info`` holding the engine, the start used,
        iterations, convergence flag, the relative reconstruction errors and the
        final error of every start.
        """
        from .als import BREAKDOWN, _balance, broke_down, init_factors, normalize_cp

        if len(self.dims) == 2 and self.name != "tensorly":
            weights, factors, errors = self._two_view(rank)
            weights, factors = normalize_cp(weights, factors)
            info = {
                "engine": self.name,
                "init": "exact (two views: SVD)",
                "n_iter": 0,
                "converged": True,
                "errors": errors,
                "start_errors": errors[-1:],
            }
            return weights, factors, info
        init, n_init = params.init, params.n_init
        if isinstance(init, str) and init == "auto":
            init = self.auto_init([rank])
        if n_init == "auto":
            n_init = self.auto_n_init(rank) if isinstance(init, str) else 1
        # more starts of the same kind; the exact HOSVD (deterministic) and given
        # factors are followed by randomized HOSVDs
        more = init if isinstance(init, str) and init in ("svd", "random") else "svd"
        starts = [init] + [more] * (max(int(n_init), 1) - 1) + list(extra_starts)
        labels = [
            st if isinstance(st, str) else "given" if i == 0 else "warm"
            for i, st in enumerate(starts)
        ]
        t0 = perf_counter()
        U0s = [
            init_factors(self.mttkrp, self.dims, rank, st, rng, hosvd=self.hosvd_bases)
            for st in starts
        ]
        profile: dict[str, Any] = {"starts": len(U0s), "start_s": perf_counter() - t0}
        _progress.starts(len(U0s))
        diverged, rise = False, None
        if self.name == "tensorly":  # the reference: every start run in full
            fits = [
                _tensorly.parafac_fit(
                    self.M,
                    rank,
                    U0,
                    params.max_iter,
                    params.tol,
                    params.acceleration is not None,
                )
                for U0 in U0s
            ]
            start_errors = [f[4][-1] if f[4] else np.inf for f in fits]
            k = _argmin_first(start_errors)
            best = (k, labels[k], fits[k])
        else:
            comp = self.compressed()
            if comp is None:
                k, res, start_errors = self._race(U0s, params, profile)
                kept, n_kept, trace, rise = res.kept()
            else:
                Q, inner = comp
                V0s, offsets = [], []
                for U0 in U0s:
                    # balanced here, as cp_als balances a start, before the part
                    # outside the bases is split off
                    U0, _ = _balance(list(U0), None)
                    V0 = [Qp.T @ U for Qp, U in zip(Q, U0, strict=True)]
                    outside = [U - Qp @ V for Qp, U, V in zip(Q, U0, V0, strict=True)]
                    V0s.append(V0)
                    offsets.append([P.T @ P for P in outside])
                k, res, start_errors = inner._race(V0s, params, profile, offsets)
                kept, n_kept, trace, rise = res.kept()
                kept = [Qp @ V for Qp, V in zip(Q, kept, strict=True)]
                profile["compressed"] = [Qp.shape[1] for Qp in Q]
            fit = (res.weights, kept, n_kept, res.converged, trace)
            best = (k, labels[k], fit)
            diverged = res.diverged
        _, label, (weights, factors, n_iter, converged, errors) = best
        weights, factors = normalize_cp(weights, factors)
        broke = broke_down(errors) or (
            rise is not None and rise[3] > rise[1] * (1 + BREAKDOWN)
        )
        info = {
            "engine": self.name,
            "init": label,
            "n_iter": n_iter,
            # the stopping rule can fire on the plateau after a breakdown
            "converged": converged and not broke,
            "broke_down": broke,
            "diverged": diverged,
            "errors": errors,
            "start_errors": start_errors,
            "profile": profile,
        }
        if rise is not None:
            info["rise"] = rise
        if params.solver != "als":
            info["solver"] = params.solver
        return weights, factors, info

    def _race(self, U0s, params: SolverParams, profile: dict, offsets=None):
        """ALS from every start in ``U0s``: a short heat, then a final of two.

        All starts run :data:`RACE_HEAT` sweeps; the :data:`RACE_FINALISTS` best
        (by error) go on for twice as long, and the better of them runs to the
        stopping rule. The runs are resumed, not restarted, so the winner's
        iterates are those of a single run from its start. Ten starts thus cost
        about two single fits instead of ten: on the solver-quality battery the
        order after five sweeps already holds the best start among the two
        leaders (BENCHMARKS.md, "The race"), where successive halving with bursts
        of 10, 20, 40 sweeps cost five single fits for the same result. Returns the
        winner's index and result and, per start, the error at which it left the
        race (the winner's final error).

        With ``params.solver == "lm"`` every run is damped Gauss-Newton
        (:func:`.lm.cp_lm`, its steps counted as sweeps) from the same starts. On
        a compressed engine it starts from the start's projection onto the
        bases (``offsets`` unused): its iterates are then those of Gauss-Newton
        on M from that projection, not from the start itself.
        """
        from .als import cp_als
        from .lm import cp_lm

        max_iter = params.max_iter

        def run(U0=None, resume=None, upto=max_iter, i=None):
            if params.solver == "lm":
                # a compressed start's part outside the bases (``offsets``) is
                # dropped: Gauss-Newton runs from the projected start
                return cp_lm(
                    self.mttkrp,
                    self.norm_sq,
                    U0,
                    max_iter=upto,
                    tol=params.tol,
                    resume=resume,
                    residual_sq=self.residual_sq,
                    callback=_progress.sweep_callback(),
                    eps=getattr(self._op, "eps", None),
                )
            return cp_als(
                self.mttkrp,
                self.norm_sq,
                U0,
                gram_offsets=None if offsets is None or i is None else offsets[i],
                max_iter=upto,
                tol=params.tol,
                acceleration=params.acceleration,
                resume=resume,
                residual_sq=self.residual_sq,
                combine=self._op is not None,
                callback=_progress.sweep_callback(),
                eps=getattr(self._op, "eps", None),
            )

        def last(res):  # the error of the iterate a fit would keep
            return res.kept_error()

        t0 = perf_counter()
        sweeps_then = 0  # sweeps run by every start when one was left
        start_errors = [np.inf] * len(U0s)
        pool = {0: run(U0s[0], i=0)} if len(U0s) == 1 else {}
        if not pool:
            pool = {
                i: run(U0, upto=min(RACE_HEAT, max_iter), i=i)
                for i, U0 in enumerate(U0s)
            }
            sweeps_then = sum(res.n_iter for res in pool.values())
            burst, keep = RACE_HEAT, RACE_FINALISTS
            while len(pool) > 1:
                order = sorted(pool, key=lambda i: (last(pool[i]), i))
                for i in order[keep:]:
                    start_errors[i] = last(pool.pop(i))
                burst, keep = 2 * burst, 1
                if len(pool) == 1:
                    break
                for i, res in pool.items():
                    if not (res.converged or res.diverged) and res.n_iter < max_iter:
                        before = res.n_iter
                        pool[i] = run(resume=res, upto=min(before + burst, max_iter))
                        sweeps_then += pool[i].n_iter - before
        ((k, res),) = pool.items()
        race_s, survivor_then = perf_counter() - t0, res.n_iter
        if len(U0s) == 1:
            race_s, sweeps_then, survivor_then = 0.0, 0, 0
        elif not (res.converged or res.diverged) and res.n_iter < max_iter:
            res = run(resume=res)
        start_errors[k] = last(res)
        profile.update(
            race_s=race_s,
            race_sweeps=sweeps_then,
            final_s=perf_counter() - t0 - race_s,
            sweeps=sweeps_then + res.n_iter - survivor_then,
            stop="diverged" if res.diverged else "tol" if res.converged else "max_iter",
            pace=_pace(res.errors),
        )
        return k, res, start_errors

    def path(
        self, ranks: Sequence[int], params: SolverParams, *, warm_start: bool = False
    ) -> dict[int, tuple]:
        """Decompose M at every rank; ``{r: (weights, factors, info, seconds)}``.

        Each rank runs the starts of :meth:`decompose` from a generator seeded
        afresh with an int ``random_state``, so it equals a standalone fit (a
        Generator passed in cannot be re-seeded and is used in turn). ``init="auto"`` is
        resolved once for the whole path (:meth:`auto_init`), so every rank uses
        the same kind of start. With ``warm_start`` the ranks are visited in
        increasing order and the previous rank's solution plus the next columns of
        ``params.init`` is one more start: the path's result at a rank is then never
        worse than the standalone fit, and differs from it only where the warm start
        found a lower error.
        """
        from time import perf_counter

        from .._validation import as_generator
        from .als import init_factors

        init, random_state = params.init, params.random_state
        if isinstance(init, str) and init == "auto":
            init = self.auto_init(ranks)
            params = replace(params, init=init)
        out: dict[int, tuple] = {}
        previous = None
        order = sorted(set(ranks)) if warm_start else list(dict.fromkeys(ranks))
        rng = as_generator(random_state)
        # the warm start's fresh columns come from a generator of their own, so
        # that the other starts draw exactly what a standalone fit draws
        warm_rng = rng
        if not isinstance(random_state, np.random.Generator):
            warm_rng = as_generator(random_state)
        for r in order:
            t = perf_counter()
            _progress.rank_begins(r, len(out) + 1, len(order))
            if not isinstance(random_state, np.random.Generator):
                rng = as_generator(random_state)
            extra: list[list[np.ndarray]] = []
            if warm_start and previous is not None and len(self.dims) > 2:
                fresh = init_factors(
                    self.mttkrp,
                    self.dims,
                    r,
                    init,
                    warm_rng,
                    hosvd=self.hosvd_bases,
                )
                k = previous[0].shape[1]
                extra = [
                    [
                        np.hstack([U, F[:, k:]])
                        for U, F in zip(previous, fresh, strict=True)
                    ]
                ]
            weights, factors, info = self.decompose(
                r, params, rng=rng, extra_starts=extra
            )
            previous = [factors[0] * weights, *factors[1:]]
            out[r] = (weights, factors, info, perf_counter() - t)
            _progress.rank_done(info, out[r][3])
            logger.info(
                "rank %d (%d/%d): %d ALS sweeps, start %s, error %.6g, %.1f s%s",
                r,
                len(out),
                len(order),
                info["n_iter"],
                info["init"],
                info["errors"][-1] if info["errors"] else float("nan"),
                out[r][3],
                ", broke down" if info.get("broke_down") else "",
            )
        return out

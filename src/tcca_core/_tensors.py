"""The whitened moment tensor M = (1/N) sum_n y_1n o y_2n o ... o y_mn, two ways.

Rows are samples: Y_p is N x d_p and y_pn its n-th row. For TCCA,
Y_p = (X_p - mean_p) (C_pp + eps I)^(-1/2) and M is the paper's whitened covariance
tensor (eq. 4.9); for KTCCA, Y_p = K_p L_p^(-1) and M is the paper's S (eq. 4.14).

M is a CP tensor of rank N with factors Y_p^T, so everything ALS needs has an exact
tensor-free form:

* MTTKRP: M_(p) (kr_{q != p} U_q) = Y_p^T (Hadamard_{q != p} Y_q U_q) / N,
  O(N r sum_p d_p) time and O(N r m) memory;
* ||M||^2 = (1/N^2) sum_{n, n'} prod_p <y_pn, y_pn'>, by blocks of the N x N Gram
  matrices, O(N^2 sum_p d_p) time and O(block^2) memory.

The dense route (:func:`dense_moment`) builds M itself, O(N prod_p d_p) time and
O(prod_p d_p) memory; it is the paper's route and the reference for the tests.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import scipy.sparse as sp

__all__ = [
    "WhitenedView",
    "ImplicitMoment",
    "correlations",
    "dense_moment",
    "dense_mttkrp",
    "MomentEngine",
    "DENSE_MAX_BYTES",
]

#: Largest dense tensor the "auto" engine choice will build (bytes).
DENSE_MAX_BYTES = 2 * 1024**3

_BLOCK_BYTES = 64 * 1024**2


class WhitenedView:
    """One view's whitened data Y = (X - mean) @ W, with X dense or sparse.

    A dense X is whitened once (Y has the size of X). A sparse X is never
    densified: products with Y are taken as X @ (W U) - 1 (mean^T W U), and
    :meth:`rows` densifies only a block of rows at a time.
    """

    def __init__(self, X, mean: np.ndarray | None = None, W: np.ndarray | None = None):
        self.N, d = X.shape
        self.d = d if W is None else W.shape[1]
        if sp.issparse(X):
            self.X = sp.csr_matrix(X)
            self.mean = np.zeros(d) if mean is None else mean
            self.W = np.eye(d) if W is None else W
            self.Y = None
        else:
            Y = X if mean is None else X - mean
            self.Y = np.ascontiguousarray(Y if W is None else Y @ W)

    def dot(self, U: np.ndarray) -> np.ndarray:
        """Y @ U, shape (N, r)."""
        if self.Y is not None:
            return self.Y @ U
        WU = self.W @ U
        return np.asarray(self.X @ WU) - self.mean @ WU

    def tdot(self, H: np.ndarray) -> np.ndarray:
        """Y.T @ H, shape (d, r)."""
        if self.Y is not None:
            return self.Y.T @ H
        XtH = np.asarray(self.X.T @ H) - np.outer(self.mean, H.sum(axis=0))
        return self.W.T @ XtH

    def rows(self, start: int, stop: int) -> np.ndarray:
        """Dense block Y[start:stop]."""
        if self.Y is not None:
            return self.Y[start:stop]
        return (self.X[start:stop].toarray() - self.mean) @ self.W


def _block_rows(N: int, row_bytes: int) -> int:
    return int(max(1, min(N, _BLOCK_BYTES // max(row_bytes, 1))))


class ImplicitMoment:
    """M = (1/N) sum_n y_1n o ... o y_mn, held as its rank-N CP factors.

    ``mttkrp`` caches the projections Y_q U_q and recomputes one only when ALS has
    replaced U_q, so a sweep costs two products with each Y_p.
    """

    def __init__(self, views: Sequence[WhitenedView]):
        self.views = list(views)
        self.N = self.views[0].N
        self.dims = [v.d for v in self.views]
        self._cache: dict[int, tuple[np.ndarray, np.ndarray]] = {}

    def project(self, factors: Sequence[np.ndarray], q: int) -> np.ndarray:
        hit = self._cache.get(q)
        if hit is not None and hit[0] is factors[q]:
            return hit[1]
        P = self.views[q].dot(factors[q])
        self._cache[q] = (factors[q], P)
        return P

    def mttkrp(self, factors: Sequence[np.ndarray], p: int) -> np.ndarray:
        H = None
        for q in range(len(self.views)):
            if q == p:
                continue
            P = self.project(factors, q)
            H = P.copy() if H is None else H * P
        return self.views[p].tdot(H) / self.N

    def norm_sq(self) -> float:
        """||M||_F^2 from blocks of the Gram matrices (never N x N at once)."""
        N = self.N
        B = _block_rows(N, 8 * N)
        B = max(1, min(B, 4096))
        total = 0.0
        starts = range(0, N, B)
        for i in starts:
            Yi = [v.rows(i, i + B) for v in self.views]
            for j in starts:
                if j < i:
                    continue
                G = None
                for v, yi in zip(self.views, Yi, strict=True):
                    g = yi @ v.rows(j, j + B).T
                    G = g if G is None else G * g
                total += G.sum() * (1.0 if i == j else 2.0)
        return total / N**2


def correlations(
    views: Sequence[WhitenedView], factors: Sequence[np.ndarray]
) -> np.ndarray:
    """rho_k = (1/N) sum_n prod_p (Y_p U_p)[n, k], by blocks of samples (Theorem 1).

    Blocks keep memory at O(block * r) rather than O(N r) per view, which matters
    for SecStr's 1.3M samples at r = 300 (3 GB per N x r array).
    """
    N, r = views[0].N, factors[0].shape[1]
    B = _block_rows(N, 8 * r)
    total = np.zeros(r)
    for i in range(0, N, B):
        H = None
        for v, U in zip(views, factors, strict=True):
            P = v.rows(i, i + B) @ U
            H = P if H is None else H * P
        total += H.sum(axis=0)
    return total / N


def dense_moment(views: Sequence[WhitenedView]) -> np.ndarray:
    """Build M (d_1 x ... x d_m).

    Dense views: by blocks of samples, M_(1) = Y_1^T (Y_2 kr_rows ... kr_rows Y_m) / N,
    where kr_rows is the row-wise Khatri-Rao (face-splitting) product; blocks keep
    that product under 64 MB. Sparse views: see :func:`_sparse_moment`.
    """
    if all(v.Y is None for v in views):
        return _sparse_moment(views)
    dims = [v.d for v in views]
    N = views[0].N
    rest = int(np.prod(dims[1:]))
    M = np.zeros((dims[0], rest))
    B = _block_rows(N, 8 * rest)
    for i in range(0, N, B):
        Y = [v.rows(i, i + B) for v in views]
        KR = Y[1]
        for Yq in Y[2:]:
            KR = (KR[:, :, None] * Yq[:, None, :]).reshape(KR.shape[0], -1)
        M += Y[0].T @ KR
    return (M / N).reshape(dims)


def _rowwise_kron(A: sp.csr_matrix, B: sp.csr_matrix) -> sp.csr_matrix:
    """Row n of the result is kron(A[n], B[n]) (face-splitting product), sparse."""
    nA, nB = np.diff(A.indptr), np.diff(B.indptr)
    nnz = nA * nB
    indptr = np.concatenate([[0], np.cumsum(nnz)])
    t = np.arange(indptr[-1]) - np.repeat(indptr[:-1], nnz)
    nb = np.repeat(nB, nnz)
    ia = np.repeat(A.indptr[:-1], nnz) + t // nb
    jb = np.repeat(B.indptr[:-1], nnz) + t % nb
    cols = A.indices[ia].astype(np.int64) * B.shape[1] + B.indices[jb]
    return sp.csr_matrix(
        (A.data[ia] * B.data[jb], cols, indptr),
        shape=(A.shape[0], A.shape[1] * B.shape[1]),
    )


def _raw_moment(Xs: Sequence[sp.csr_matrix], block: int = 200_000) -> np.ndarray:
    """(1/N) sum_n x_1n o ... o x_kn of sparse rows, k >= 2, by blocks of rows."""
    N = Xs[0].shape[0]
    dims = [X.shape[1] for X in Xs]
    T = np.zeros((dims[0], int(np.prod(dims[1:]))))
    for i in range(0, N, block):
        KR = Xs[1][i : i + block]
        for X in Xs[2:]:
            KR = _rowwise_kron(KR, X[i : i + block])
        T += (Xs[0][i : i + block].T @ KR).toarray()
    return (T / N).reshape(dims)


def _sparse_moment(views: Sequence[WhitenedView]) -> np.ndarray:
    """M from sparse views without densifying them: moments, then centering.

    E[o_p (x_p - mu_p)] = sum over subsets S of the views of
    E[o_{p in S} x_p] o (o_{p not in S} -mu_p), and each raw moment costs
    sum_n prod_p nnz(x_pn) (125 products per sample for one-hot SecStr views) instead
    of prod_p d_p. The centered tensor is then whitened mode by mode.
    """
    from itertools import combinations

    m = len(views)
    letters = "abcdefghij"[:m]
    C = np.zeros([v.X.shape[1] for v in views])
    for k in range(m + 1):
        for S in combinations(range(m), k):
            if k >= 2:
                T = _raw_moment([views[p].X for p in S])
            elif k == 1:
                T = views[S[0]].mean
            else:
                T = np.float64(1.0)
            rest = [p for p in range(m) if p not in S]
            expr = ",".join(
                ["".join(letters[p] for p in S)] + [letters[p] for p in rest]
            )
            C += np.einsum(expr + "->" + letters, T, *(-views[p].mean for p in rest))
    for p, v in enumerate(views):
        C = np.moveaxis(np.tensordot(v.W.T, C, axes=(1, p)), 0, p)
    return C


def dense_mttkrp(M: np.ndarray, factors: Sequence[np.ndarray], p: int) -> np.ndarray:
    """MTTKRP of a dense tensor without forming the Khatri-Rao product.

    One GEMM contracts the first or last mode (whichever is not p), giving a tensor
    with a trailing rank axis; the other modes are then contracted component-wise.
    O(r prod(d)) time like tensorly's ``unfolding_dot_khatri_rao``, but without its
    (prod(d) / d_p) x r Khatri-Rao matrix, which dominates tensorly's sweep.
    """
    m, dims = M.ndim, M.shape
    r = factors[0].shape[1]
    letters = "abcdefghij"[:m]
    if p != m - 1:
        T = (M.reshape(-1, dims[-1]) @ factors[-1]).reshape(*dims[:-1], r)
        modes = list(range(m - 1))
    else:
        T = np.moveaxis(
            (factors[0].T @ M.reshape(dims[0], -1)).reshape(r, *dims[1:]), 0, -1
        )
        modes = list(range(1, m))
    others = [q for q in modes if q != p]
    expr = "".join(letters[q] for q in modes) + "z"
    expr += "".join("," + letters[q] + "z" for q in others) + "->" + letters[p] + "z"
    return np.einsum(expr, T, *(factors[q] for q in others), optimize=len(others) > 1)


def tensorly_mttkrp(M: np.ndarray, factors: Sequence[np.ndarray], p: int) -> np.ndarray:
    """MTTKRP through tensorly (the reference implementation)."""
    from tensorly.tenalg import unfolding_dot_khatri_rao

    return unfolding_dot_khatri_rao(M, (None, list(factors)), p)


# Sweeps assumed by the cost model; ALS on these problems typically needs tens.
_COST_SWEEPS = 50


def engine_costs(
    N: int, dims: Sequence[int], rank: int, nnz: Sequence[float] | None = None
) -> dict[str, float]:
    """Estimated flops of a whole fit with each engine.

    dense:    2 N prod(d)            (build M from dense views)
              or N prod(nnz) + 2^m m prod(d)   (from sparse views with nnz non-zeros
                                      per row on average, see ``_sparse_moment``)
              + S * m * 2 r prod(d)  (S sweeps of m MTTKRPs on the dense tensor)
    implicit: 2 N^2 sum(d)           (||M||^2 from the Gram blocks)
              + S * 4 N r sum(d)     (per sweep: Y_p U_p and Y_p^T H for every p)
    with S = 50 sweeps. Memory: dense needs 8 prod(d) bytes, implicit 8 m N r.
    """
    m = len(dims)
    prod = float(np.prod(np.asarray(dims, dtype=float)))
    sd = float(sum(dims))
    if nnz is None:
        build = 2.0 * N * prod
    else:
        build = N * float(np.prod(np.asarray(nnz, dtype=float))) + 2**m * m * prod
    dense = build + _COST_SWEEPS * m * 2 * rank * prod
    implicit = 2.0 * N * N * sd + _COST_SWEEPS * 4.0 * N * rank * sd
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

    def __init__(self, views: Sequence[WhitenedView], name: str):
        self.views = list(views)
        self.name = name
        self.dims = [v.d for v in self.views]
        self._M = None
        self._norm_sq = None
        self._op = ImplicitMoment(self.views) if name == "implicit" else None

    @classmethod
    def choose(
        cls, views: Sequence[WhitenedView], rank: int, algorithm: str
    ) -> MomentEngine:
        """The engine ``algorithm`` names, or the cost model's pick for ``"auto"``."""
        N = views[0].N
        dims = [v.d for v in views]
        sparse = all(v.Y is None for v in views)
        nnz = [v.X.nnz / N for v in views] if sparse else None
        return cls(views, choose_engine(N, dims, rank, algorithm, nnz))

    @property
    def M(self) -> np.ndarray:
        if self._M is None:
            self._M = dense_moment(self.views)
        return self._M

    @property
    def norm_sq(self) -> float:
        if self._norm_sq is None:
            if self._op is not None:
                self._norm_sq = self._op.norm_sq()
            else:
                self._norm_sq = float(np.vdot(self.M, self.M))
        return self._norm_sq

    def mttkrp(self, factors: Sequence[np.ndarray], p: int) -> np.ndarray:
        if self._op is not None:
            return self._op.mttkrp(factors, p)
        if self.name == "tensorly":
            return tensorly_mttkrp(self.M, factors, p)
        return dense_mttkrp(self.M, factors, p)

    def decompose(
        self, rank: int, *, init, max_iter: int, tol: float, rng: np.random.Generator
    ):
        """Rank-``rank`` CP-ALS of M.

        Returns ``(weights, factors, info)`` with normalized, sign-fixed factors
        sorted by weight, and ``info`` holding the engine, iterations, convergence
        flag and the relative reconstruction errors.
        """
        from ._als import cp_als, init_factors, normalize_cp

        U0 = init_factors(self.mttkrp, self.dims, rank, init, rng)
        if self.name == "tensorly":
            import tensorly as tl
            from tensorly.decomposition import parafac

            with tl.backend_context("numpy"):
                cp, errors = parafac(
                    self.M,
                    rank,
                    n_iter_max=max_iter,
                    init=tl.cp_tensor.CPTensor((np.ones(rank), U0)),
                    tol=tol,
                    return_errors=True,
                )
            weights, factors = cp.weights, list(cp.factors)
            errors = [float(e) for e in errors]
            n_iter = len(errors)
            converged = bool(tol and n_iter >= 2 and abs(errors[-2] - errors[-1]) < tol)
        else:
            res = cp_als(self.mttkrp, self.norm_sq, U0, max_iter=max_iter, tol=tol)
            weights, factors = res.weights, res.factors
            n_iter, converged, errors = res.n_iter, res.converged, res.errors
        weights, factors = normalize_cp(weights, factors)
        info = {
            "engine": self.name,
            "n_iter": n_iter,
            "converged": converged,
            "errors": errors,
        }
        return weights, factors, info

    def path(
        self,
        ranks: Sequence[int],
        *,
        init,
        warm_start: bool,
        random_state,
        max_iter: int,
        tol: float,
    ) -> dict[int, tuple]:
        """Decompose M at every rank; ``{r: (weights, factors, info, seconds)}``.

        Without ``warm_start`` each rank starts from a generator seeded afresh with
        an int ``random_state``, so it equals a standalone fit (a Generator passed in
        cannot be re-seeded and is used in turn). With ``warm_start`` the ranks are
        visited in increasing order, each starting from the previous solution plus
        the next ``init`` columns.
        """
        from time import perf_counter

        from ._als import init_factors
        from ._validation import as_generator

        out = {}
        previous = None
        order = sorted(set(ranks)) if warm_start else list(dict.fromkeys(ranks))
        rng = as_generator(random_state)
        for r in order:
            t = perf_counter()
            if not warm_start and not isinstance(random_state, np.random.Generator):
                rng = as_generator(random_state)
            start = init
            if warm_start and previous is not None:
                fresh = init_factors(self.mttkrp, self.dims, r, init, rng)
                k = previous[0].shape[1]
                start = [
                    np.hstack([U, F[:, k:]])
                    for U, F in zip(previous, fresh, strict=True)
                ]
            weights, factors, info = self.decompose(
                r, init=start, max_iter=max_iter, tol=tol, rng=rng
            )
            previous = [factors[0] * weights, *factors[1:]]
            out[r] = (weights, factors, info, perf_counter() - t)
        return out

"""The whitened moment tensor M = (1/N) sum_n y_1n o y_2n o ... o y_mn, two ways.

Rows are samples: Y_p is N x d_p and y_pn its n-th row. For TCCA,
Y_p = (X_p - mean_p) (C_pp + eps I)^(-1/2) and M is the paper's whitened covariance
tensor (eq. 4.9); for KTCCA, Y_p = K_p L_p^(-1) and M is the paper's S (eq. 4.14).

M is a CP tensor of rank N with factors Y_p^T, so everything ALS needs has an exact
tensor-free form:

* MTTKRP: M_(p) (kr_{q != p} U_q) = Y_p^T (Hadamard_{q != p} Y_q U_q) / N,
  O(N r sum_p d_p) time and O(N r m) memory;
* ||M||^2, by the cheapest of three exact routes (:func:`norm_costs`):
  "gram": (1/N^2) sum_{n, n'} prod_p <y_pn, y_pn'>, by blocks of the N x N Gram
  matrices, O(N^2 sum_p d_p) time and O(block^2) memory;
  "unfolding": ||Y_1^T (Y_2 kr_rows ... kr_rows Y_m)||^2 / N^2 by blocks of columns
  and samples, O(N prod_p d_p) time and O(64 MB) memory (M is never held whole);
  "sparse": from the sparse raw moments (:func:`_sparse_moment`) when every view is
  sparse (given so, or dense but mostly zeros) and prod_p d_p is small.

The dense route (:func:`dense_moment`) builds M itself, O(N prod_p d_p) time (or the
sparse-moment cost for sparse views) and O(prod_p d_p) memory; it is the paper's
route and the reference for the tests. Its MTTKRP (:func:`dense_mttkrp`) reuses the
contraction with the last factor across the first m - 1 modes of a sweep, so a sweep
costs two passes over M instead of m.
"""

from __future__ import annotations

import logging
import warnings
from collections.abc import Sequence
from typing import Any

import numpy as np
import scipy.sparse as sp

from ._linalg import svd

# Per-rank progress of long rank paths (the pipeline's job logs show it).
logger = logging.getLogger(__name__)

__all__ = [
    "WhitenedView",
    "ImplicitMoment",
    "correlations",
    "dense_moment",
    "dense_mttkrp",
    "MomentEngine",
    "DENSE_MAX_BYTES",
    "norm_costs",
]

#: Largest dense tensor the "auto" engine choice will build (bytes).
DENSE_MAX_BYTES = 2 * 1024**3

_BLOCK_BYTES = 64 * 1024**2

#: A dense view with at most this fraction of non-zeros (one-hot, bag-of-words)
#: also keeps a sparse copy, so M can be built from sparse moments.
SPARSE_DENSITY = 0.1

#: Cost of one sparse multiply-add (row-wise Kronecker product, sparse-sparse
#: product) relative to one GEMM flop, in the cost models below.
_SPARSE_OP_COST = 200.0

#: Largest tensor the implicit engine builds transiently for ||M||^2 ("sparse" route).
_NORM_DENSE_MAX_BYTES = 256 * 1024**2


class WhitenedView:
    """One view's whitened data Y = (X - mean) @ W, with X dense or sparse.

    A dense X is whitened once, on first use of :attr:`Y` (Y has the size of X); a
    dense engine that builds M from sparse moments never needs it. A sparse X is
    not densified (``is_sparse``): products with Y are taken as
    X @ (W U) - 1 (mean^T W U), and :meth:`rows` densifies only a block of rows at
    a time; unless it is not sparse enough for that to pay and Y is small
    (:func:`_dense_pays`, e.g. Ads' 25%-dense binary views), then it is whitened
    to a dense Y like a dense X.

    ``sparse`` is ``(X as CSR, mean, W)`` when a sparse form exists: for sparse X,
    and for a dense X with at most ``SPARSE_DENSITY`` non-zeros (one-hot data given
    as a dense array), whose CSR copy is then kept for the moment build.
    """

    def __init__(self, X, mean: np.ndarray | None = None, W: np.ndarray | None = None):
        self.N, d = X.shape
        self.d = d if W is None else W.shape[1]
        self.sparse: tuple[Any, np.ndarray, np.ndarray] | None = None
        self.is_sparse = sp.issparse(X)
        self._Y: np.ndarray | None = None
        self._dense: tuple[Any, np.ndarray | None, np.ndarray | None] | None = None
        if self.is_sparse:
            self.X = sp.csr_matrix(X)
            self.mean = np.zeros(d) if mean is None else mean
            self.W = np.eye(d) if W is None else W
            self.sparse = (self.X, self.mean, self.W)
            if _dense_pays(self.N, d, self.d, self.X.nnz):
                # not sparse enough for sparse products to beat GEMMs on a small Y
                self.is_sparse = False
                self._dense = (self.X, self.mean, self.W)
        else:
            self._dense = (X, mean, W)
            if X.size and np.count_nonzero(X) <= SPARSE_DENSITY * X.size:
                self.sparse = (
                    sp.csr_matrix(X),
                    np.zeros(d) if mean is None else mean,
                    np.eye(d) if W is None else W,
                )

    @property
    def Y(self) -> np.ndarray | None:
        """The dense whitened data (None for a sparse view), computed once."""
        if self._Y is None and self._dense is not None:
            X, mean, W = self._dense
            if sp.issparse(X):
                assert mean is not None  # a sparse X is kept with its mean
                Y = np.asarray(X @ W) - mean @ W
            else:
                Y = X if mean is None else X - mean
                Y = Y if W is None else Y @ W
            self._Y = np.ascontiguousarray(Y)
            self._dense = None
        return self._Y

    @property
    def nnz_per_row(self) -> float:
        """Mean non-zeros per row of the sparse form (d when there is none)."""
        if self.sparse is None:
            return float(self.d)
        return self.sparse[0].nnz / max(self.N, 1)

    def dot(self, U: np.ndarray) -> np.ndarray:
        """Y @ U, shape (N, r)."""
        if not self.is_sparse:
            Y = self.Y
            assert Y is not None  # a dense view always has Y
            return Y @ U
        WU = self.W @ U
        return np.asarray(self.X @ WU) - self.mean @ WU

    def tdot(self, H: np.ndarray) -> np.ndarray:
        """Y.T @ H, shape (d, r)."""
        if not self.is_sparse:
            Y = self.Y
            assert Y is not None  # a dense view always has Y
            return Y.T @ H
        XtH = np.asarray(self.X.T @ H) - np.outer(self.mean, H.sum(axis=0))
        return self.W.T @ XtH

    def rows(self, start: int, stop: int) -> np.ndarray:
        """Dense block Y[start:stop]."""
        if not self.is_sparse:
            Y = self.Y
            assert Y is not None  # a dense view always has Y
            return Y[start:stop]
        return (self.X[start:stop].toarray() - self.mean) @ self.W


#: Relative cost of a sparse-times-dense multiply-add (scipy, one thread) to a
#: GEMM flop, for :func:`_dense_pays`.
_SPARSE_MATMUL_COST = 8.0


def _dense_pays(N: int, d_in: int, d: int, nnz: int) -> bool:
    """Decide whether a sparse view is whitened to a dense Y for the implicit products.

    It is when Y fits in 256 MB and 2 N d flops of GEMM per product beat nnz
    sparse multiply-adds plus the 2 d_in d flops of W U.
    """
    if 8.0 * N * d > 4 * _BLOCK_BYTES:
        return False
    return 2.0 * N * d < _SPARSE_MATMUL_COST * nnz + 2.0 * d_in * d


def _block_rows(N: int, row_bytes: int) -> int:
    return int(max(1, min(N, _BLOCK_BYTES // max(row_bytes, 1))))


def _prod(values) -> float:
    return float(np.prod(np.asarray(list(values), dtype=float)))


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
            if H is None:
                H = P.copy()
            else:
                H *= P
        assert H is not None  # M has at least two modes
        return self.views[p].tdot(H) / self.N

    def norm_method(self) -> str:
        """Return the cheapest exact route to ||M||^2 (see :func:`norm_costs`)."""
        costs = norm_costs(
            self.N,
            self.dims,
            [v.nnz_per_row for v in self.views],
            sparse=all(v.sparse is not None for v in self.views),
        )
        return min(costs, key=costs.__getitem__)

    def norm_sq(self, method: str | None = None) -> float:
        """||M||_F^2, exactly, by ``method`` (default: :meth:`norm_method`)."""
        method = self.norm_method() if method is None else method
        if method == "sparse":
            M = _sparse_moment(_sparse_forms(self.views))
            return float(np.vdot(M, M))
        if method == "unfolding":
            return _unfolding_norm_sq(self.views)
        if method != "gram":
            raise ValueError(f"unknown norm method {method!r}")
        return _gram_norm_sq(self.views)

    def mode_grams(self, method: str | None = None) -> list[np.ndarray]:
        """Return M_(p) M_(p)^T (d_p x d_p) for every mode, by the cheapest exact route.

        The costs are :func:`mode_gram_costs`'s; the "sparse" route builds M (under
        256 MB) from sparse moments and discards it, the others never hold more
        than 64 MB.
        """
        if method is None:
            costs = mode_gram_costs(
                self.N,
                self.dims,
                [v.nnz_per_row for v in self.views],
                sparse=all(v.sparse is not None for v in self.views),
            )
            method = min(costs, key=costs.__getitem__)
        if method == "sparse":
            return _dense_mode_grams(_sparse_moment(_sparse_forms(self.views)))
        if method == "unfolding":
            return _unfolding_mode_grams(self.views)
        if method != "gram":
            raise ValueError(f"unknown mode-Gram method {method!r}")
        return _gram_mode_grams(self.views)


def _sparse_forms(
    views: Sequence[WhitenedView],
) -> list[tuple[Any, np.ndarray, np.ndarray]]:
    """Return every view's sparse form ``(X as CSR, mean, W)``; all must have one."""
    forms = []
    for v in views:
        assert v.sparse is not None, "every view needs a sparse form"
        forms.append(v.sparse)
    return forms


def _argmin_first(values: Sequence[float]) -> int:
    """Index of the smallest value; a later one must be smaller beyond rounding."""
    k = 0
    for i, v in enumerate(values):
        if v < values[k] * (1 - 1e-9):
            k = i
    return k


def _gram_block(N: int) -> int:
    """Rows per block of the N x N Gram matrices: 2048 x 2048 doubles = 32 MB."""
    return int(max(1, min(N, 2048)))


def _gram_norm_sq(views: Sequence[WhitenedView]) -> float:
    """(1/N^2) sum_{n,n'} prod_p <y_pn, y_pn'>, by blocks (never N x N at once)."""
    from scipy.linalg.blas import dsyrk

    N = views[0].N
    B = _gram_block(N)
    total = 0.0
    starts = range(0, N, B)
    for i in starts:
        Yi = [v.rows(i, i + B) for v in views]
        # Diagonal block: upper triangles only (SYRK, half the flops); the
        # Hadamard product of upper triangles is the upper triangle of the product.
        G = None
        for yi in Yi:
            g = dsyrk(1.0, np.asarray(yi, dtype=np.float64).T, trans=1)
            G = g if G is None else G * g
        assert G is not None  # there is at least one view
        total += 2.0 * G.sum() - np.trace(G)
        for j in starts:
            if j <= i:
                continue
            G = None
            for v, yi in zip(views, Yi, strict=True):
                g = yi @ v.rows(j, j + B).T
                G = g if G is None else G * g
            assert G is not None
            total += 2.0 * G.sum()
    return total / N**2


def _gram_mode_grams(views: Sequence[WhitenedView]) -> list[np.ndarray]:
    """M_(p) M_(p)^T = Y_p^T (Hadamard_{q != p} Y_q Y_q^T) Y_p / N^2 for every p.

    By blocks of the Gram matrices: Z_p = (Hadamard_{q != p} G_q) Y_p is accumulated
    block by block (O(N d_p) memory), then Y_p^T Z_p. O(N^2 sum(d)) for the Grams,
    plus 2 N^2 d_p + 2 N d_p^2 per mode; M is never formed.
    """
    N, m = views[0].N, len(views)
    B = _gram_block(N)
    Z = [np.zeros((N, v.d)) for v in views]
    starts = range(0, N, B)
    for i in starts:
        Yi = [v.rows(i, i + B) for v in views]
        for j in starts:
            if j < i:
                continue
            Yj = Yi if j == i else [v.rows(j, j + B) for v in views]
            G = [yi @ yj.T for yi, yj in zip(Yi, Yj, strict=True)]
            for p in range(m):
                H = None
                for q in range(m):
                    if q != p:
                        H = G[q].copy() if H is None else H * G[q]
                if H is None:  # one view: M is a vector
                    H = np.ones_like(G[p])
                Z[p][i : i + B] += H @ Yj[p]
                if j > i:
                    Z[p][j : j + B] += H.T @ Yi[p]
    out = []
    for p, v in enumerate(views):
        A = v.tdot(Z[p]) / N**2
        out.append((A + A.T) / 2)
    return out


def _unfolding_plan(
    dims: Sequence[int], first: int | None = None
) -> tuple[list[int], int] | None:
    """Mode order and chunk J of the second mode for :func:`_unfolding_slabs`.

    ``first`` (default: the largest mode) is the row mode of the unfolding; the
    others follow, largest first. None when even J = 1 exceeds the block budget.
    """
    if first is None:
        first = max(range(len(dims)), key=lambda p: dims[p])
    others = sorted((q for q in range(len(dims)) if q != first), key=lambda q: -dims[q])
    order = [first, *others]
    d1 = dims[first]
    rest = _prod(dims[p] for p in order[2:])
    budget = _BLOCK_BYTES // 8
    if d1 * rest > budget:
        return None
    return order, int(max(1, min(dims[order[1]], budget // (d1 * rest))))


def _unfolding_slabs(views: Sequence[WhitenedView], first: int | None = None):
    """Column blocks of the unfolding M_(first) = Y_f^T (kr_rows of the others) / N.

    The columns are taken in chunks of the second mode and the samples in blocks,
    so no more than 64 MB of M (and of the row-wise Khatri-Rao product) exist at a
    time; the blocks partition the columns, so ||M||^2 and M_(f) M_(f)^T are sums
    over them. O(2 N prod(d)) flops in all, in GEMMs.
    """
    dims = [v.d for v in views]
    plan = _unfolding_plan(dims, first)
    if plan is None:
        raise ValueError("the unfolding route needs d_1 * d_3 * ... * d_m <= 8M")
    order, J = plan
    vs = [views[p] for p in order]
    N, d2 = vs[0].N, vs[1].d
    rest = int(_prod(v.d for v in vs[2:]))
    for j0 in range(0, d2, J):
        j1 = min(j0 + J, d2)
        cols = (j1 - j0) * rest
        B = _block_rows(N, 8 * cols)
        acc = np.zeros((vs[0].d, cols))
        for i in range(0, N, B):
            Y = [v.rows(i, i + B) for v in vs]
            KR = Y[1][:, j0:j1]
            for Yq in Y[2:]:
                KR = (KR[:, :, None] * Yq[:, None, :]).reshape(KR.shape[0], -1)
            acc += Y[0].T @ KR
        yield acc / N


def _unfolding_norm_sq(views: Sequence[WhitenedView]) -> float:
    """||M||^2 = ||Y_1^T (Y_2 kr_rows ... kr_rows Y_m)||^2 / N^2, by blocks.

    Cheaper than the Gram route when N > prod(d) / sum(d) roughly.
    """
    return sum(float(np.vdot(a, a)) for a in _unfolding_slabs(views))


def _unfolding_mode_grams(views: Sequence[WhitenedView]) -> list[np.ndarray]:
    """M_(p) M_(p)^T for every p: one pass of :func:`_unfolding_slabs` per mode."""
    out = []
    for p, v in enumerate(views):
        A = np.zeros((v.d, v.d))
        for a in _unfolding_slabs(views, p):
            A += a @ a.T
        out.append(A)
    return out


def _dense_mode_grams(M: np.ndarray) -> list[np.ndarray]:
    out = []
    for p in range(M.ndim):
        Mp = np.moveaxis(M, p, 0).reshape(M.shape[p], -1)
        out.append(Mp @ Mp.T)
    return out


def mode_gram_costs(
    N: int,
    dims: Sequence[int],
    nnz: Sequence[float] | None = None,
    *,
    sparse: bool = False,
) -> dict[str, float]:
    """Flops of the exact routes to all M_(p) M_(p)^T (inf where one does not apply).

    gram:      3 N^2 sum(d) + 2 N sum(d^2)   (:func:`_gram_mode_grams`)
    unfolding: m * 2 N prod(d) + 2 prod(d) sum(d)   (one slab pass per mode)
    sparse:    :func:`sparse_moment_cost` + 2 prod(d) sum(d)   (M built from sparse
               moments, under 256 MB, then discarded)
    """
    prod, sd = _prod(dims), float(sum(dims))
    costs = {"gram": 3.0 * N * N * sd + 2.0 * N * float(sum(d * d for d in dims))}
    ok = all(_unfolding_plan(dims, p) for p in range(len(dims)))
    costs["unfolding"] = (len(dims) * 2.0 * N + 2 * sd) * prod if ok else np.inf
    costs["sparse"] = np.inf
    if sparse and nnz is not None and 8 * prod <= _NORM_DENSE_MAX_BYTES:
        costs["sparse"] = sparse_moment_cost(N, dims, nnz) + 2 * sd * prod
    return costs


def norm_costs(
    N: int,
    dims: Sequence[int],
    nnz: Sequence[float] | None = None,
    *,
    sparse: bool = False,
) -> dict[str, float]:
    """Flops of the exact routes to ||M||^2 (inf where a route does not apply).

    gram:      N^2 sum(d)            (the upper triangle of blocks of G_p = Y_p Y_p^T)
    unfolding: 2 N prod(d)           (if d_1 d_3 ... d_m fits a 64 MB block)
    sparse:    see :func:`sparse_moment_cost` (all views sparse, M under 256 MB)
    """
    prod = _prod(dims)
    costs = {"gram": float(N) * N * float(sum(dims))}
    costs["unfolding"] = 2.0 * N * prod if _unfolding_plan(dims) else np.inf
    costs["sparse"] = np.inf
    if sparse and nnz is not None and 8 * prod <= _NORM_DENSE_MAX_BYTES:
        costs["sparse"] = sparse_moment_cost(N, dims, nnz)
    return costs


def sparse_moment_cost(N: int, dims: Sequence[int], nnz: Sequence[float]) -> float:
    """Cost of :func:`_sparse_moment` in GEMM-flop equivalents.

    Every raw moment of two or more views costs N prod_{p in S} nnz_p sparse
    multiply-adds (weighted by ``_SPARSE_OP_COST``); centering and whitening the
    result cost 2^m prod(d) + 2 prod(d) sum(d) dense flops.
    """
    from itertools import combinations

    m = len(dims)
    sparse_ops = sum(
        _prod(nnz[p] for p in S)
        for k in range(2, m + 1)
        for S in combinations(range(m), k)
    )
    prod = _prod(dims)
    return _SPARSE_OP_COST * N * sparse_ops + (2**m + 2 * sum(dims)) * prod


def correlations(
    views: Sequence[WhitenedView], factors: Sequence[np.ndarray]
) -> np.ndarray:
    """rho_k = (1/N) sum_n prod_p (Y_p U_p)[n, k], by blocks of samples (Theorem 1).

    Blocks keep memory at O(block * r) rather than O(N r) per view, which matters
    for SecStr's 1.3M samples at r = 300 (3 GB per N x r array). Views with a sparse
    form are multiplied in it, X (W U) - 1 (mean^T W U), never densified (a dense
    one-hot X is not whitened just for this). :meth:`MomentEngine.correlations`
    takes them from M instead when M is built.
    """
    N, r = views[0].N, factors[0].shape[1]
    B = _block_rows(N, 8 * r)
    sparse: list[tuple[Any, np.ndarray, np.ndarray] | None] = []
    for v, U in zip(views, factors, strict=True):
        # the sparse form, unless the dense Y already exists (never whiten a
        # mostly-zero dense X just for this)
        if v.sparse is not None and (v.is_sparse or v._Y is None):
            X, mean, W = v.sparse
            WU = W @ U
            sparse.append((X, WU, mean @ WU))
        else:
            sparse.append(None)
    total = np.zeros(r)
    for i in range(0, N, B):
        H = None
        for v, U, s in zip(views, factors, sparse, strict=True):
            if s is None:
                Y = v.Y
                assert Y is not None  # no sparse form used: the dense Y exists
                P = Y[i : i + B] @ U
            else:
                P = np.asarray(s[0][i : i + B] @ s[1])
                P -= s[2]
            if H is None:
                H = P
            else:
                H *= P
        assert H is not None  # there is at least one view
        total += H.sum(axis=0)
    return total / N


def dense_moment(
    views: Sequence[WhitenedView], *, exploit_sparsity: bool = True
) -> np.ndarray:
    """Build M (d_1 x ... x d_m).

    Dense views: by blocks of samples, M_(1) = Y_1^T (Y_2 kr_rows ... kr_rows Y_m) / N,
    where kr_rows is the row-wise Khatri-Rao (face-splitting) product; blocks keep
    that product under 64 MB. Views that all have a sparse form (given sparse, or
    dense and mostly zeros, see :class:`WhitenedView`) go through
    :func:`_sparse_moment` when its cost model says it is cheaper; with
    ``exploit_sparsity=False`` only views given sparse do (the paper's route on
    dense input, kept as the reference).
    """
    N = views[0].N
    dims = [v.d for v in views]
    if all(v.sparse is not None for v in views) and (
        exploit_sparsity or all(v.is_sparse for v in views)
    ):
        nnz = [v.nnz_per_row for v in views]
        if sparse_moment_cost(N, dims, nnz) < 2.0 * N * _prod(dims):
            return _sparse_moment(_sparse_forms(views))
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


#: Most non-zeros of a row-wise Khatri-Rao block in :func:`_raw_moment`.
_KR_MAX_NNZ = 2_000_000


def _padded_rows(X: sp.csr_matrix, width: int) -> tuple[np.ndarray, np.ndarray]:
    """Column indices and values of each row of X, padded with (0, 0.0) to width."""
    N = X.shape[0]
    lengths = np.diff(X.indptr)
    pos = np.arange(X.nnz) - np.repeat(X.indptr[:-1], lengths)
    rows = np.repeat(np.arange(N), lengths)
    idx = np.zeros((N, width), dtype=np.int64)
    val = np.zeros((N, width))
    idx[rows, pos] = X.indices
    val[rows, pos] = X.data
    return idx, val


def _raw_moment(Xs: Sequence[sp.csr_matrix], block: int | None = None) -> np.ndarray:
    """(1/N) sum_n x_1n o ... o x_kn of sparse rows, k >= 2, by blocks of rows.

    When no row has many more non-zeros than the average (one-hot data: exactly as
    many as positions), every row's prod_p nnz_p products and their flat indices
    into the tensor are formed by broadcasting padded index/value arrays and summed
    with ``np.bincount``. Otherwise the row-wise Khatri-Rao product of views 2..k is
    formed sparse and multiplied by view 1 (a sparse-sparse product).
    """
    N = Xs[0].shape[0]
    dims = [X.shape[1] for X in Xs]
    size = int(np.prod(dims))
    widths = [int(np.diff(X.indptr).max(initial=0)) for X in Xs]
    mean_nnz = [max(X.nnz / max(N, 1), 1e-12) for X in Xs]
    if _prod(widths) <= 2.0 * _prod(mean_nnz) and size < 2**62:
        per_row: float = max(1, int(_prod(widths)))
        B = block or int(max(1, min(N, _KR_MAX_NNZ // per_row)))
        flat = np.zeros(size)
        strides = np.cumprod([1, *dims[::-1]])[::-1][1:]  # C-order strides
        for i in range(0, N, B):
            idx = np.zeros((min(B, N - i),) + (1,) * len(Xs), dtype=np.int64)
            val = np.ones(idx.shape)
            for p, X in enumerate(Xs):
                ip, vp = _padded_rows(X[i : i + B], widths[p])
                shape = [ip.shape[0]] + [1] * len(Xs)
                shape[p + 1] = widths[p]
                idx = idx + (ip * strides[p]).reshape(shape)
                val = val * vp.reshape(shape)
            flat += np.bincount(idx.ravel(), val.ravel(), minlength=size)
        return (flat / N).reshape(dims)
    if block is None:
        per_row = _prod(max(X.nnz / max(N, 1), 1.0) for X in Xs[1:])
        block = int(max(1, min(N, 200_000, _KR_MAX_NNZ // per_row)))
    T = np.zeros((dims[0], int(np.prod(dims[1:]))))
    for i in range(0, N, block):
        KR = Xs[1][i : i + block]
        for X in Xs[2:]:
            KR = _rowwise_kron(KR, X[i : i + block])
        T += (Xs[0][i : i + block].T @ KR).toarray()
    return (T / N).reshape(dims)


def _sparse_moment(parts: Sequence[tuple]) -> np.ndarray:
    """M from sparse views without densifying them: moments, then centering.

    ``parts`` holds each view's ``(X as CSR, mean, W)`` (:attr:`WhitenedView.sparse`).
    E[o_p (x_p - mu_p)] = sum over subsets S of the views of
    E[o_{p in S} x_p] o (o_{p not in S} -mu_p), and each raw moment costs
    sum_n prod_p nnz(x_pn) (125 products per sample for one-hot SecStr views) instead
    of prod_p d_p. The centered tensor is then whitened mode by mode.
    """
    from itertools import combinations

    m = len(parts)
    Xs = [X for X, _, _ in parts]
    means = [mu for _, mu, _ in parts]
    letters = "abcdefghij"[:m]
    C = np.zeros([X.shape[1] for X in Xs])
    for k in range(m + 1):
        for S in combinations(range(m), k):
            T: np.ndarray | np.float64
            if k >= 2:
                T = _raw_moment([Xs[p] for p in S])
            elif k == 1:
                T = means[S[0]]
            else:
                T = np.float64(1.0)
            rest = [p for p in range(m) if p not in S]
            expr = ",".join(
                ["".join(letters[p] for p in S)] + [letters[p] for p in rest]
            )
            C += np.einsum(expr + "->" + letters, T, *(-means[p] for p in rest))
    for p, (_, _, W) in enumerate(parts):
        C = np.moveaxis(np.tensordot(W.T, C, axes=(1, p)), 0, p)
    return np.ascontiguousarray(C)


def dense_mttkrp(
    M: np.ndarray, factors: Sequence[np.ndarray], p: int, cache: dict | None = None
) -> np.ndarray:
    """MTTKRP of a dense tensor without forming the Khatri-Rao product.

    One GEMM contracts the first or last mode (whichever is not p), giving a tensor
    with a trailing rank axis; the other modes are then contracted component-wise.
    O(r prod(d)) time like tensorly's ``unfolding_dot_khatri_rao``, but without its
    (prod(d) / d_p) x r Khatri-Rao matrix, which dominates tensorly's sweep.

    With a ``cache`` dict, the GEMM with the last factor, T = M x_m U_m, is kept
    and reused while ``factors[-1]`` is the same array: ALS updates modes
    0, ..., m-2 with U_m fixed, so a sweep does two GEMMs over M instead of m
    (a one-level dimension tree). Same values; the caller must not modify a
    factor in place.
    """
    m, dims = M.ndim, M.shape
    r = factors[0].shape[1]
    letters = "abcdefghij"[:m]
    if p != m - 1:
        hit = cache.get("last") if cache is not None else None
        if hit is not None and hit[0] is factors[-1]:
            T = hit[1]
        else:
            T = (M.reshape(-1, dims[-1]) @ factors[-1]).reshape(*dims[:-1], r)
            if cache is not None:
                cache["last"] = (factors[-1], T)
        modes = list(range(m - 1))
    else:
        # M_(1)^T U_1 (a transposed GEMM, no copy of M) keeps the rank axis last
        # and contiguous for the component-wise contractions.
        T = (M.reshape(dims[0], -1).T @ factors[0]).reshape(*dims[1:], r)
        modes = list(range(1, m))
    others = [q for q in modes if q != p]
    expr = "".join(letters[q] for q in modes) + "z"
    expr += "".join("," + letters[q] + "z" for q in others) + "->" + letters[p] + "z"
    # ALS's factors are Fortran-ordered (transposes of solves); einsum runs about
    # 4x faster on C-ordered operands with the rank axis contiguous.
    ops = (np.ascontiguousarray(factors[q]) for q in others)
    return np.einsum(expr, T, *ops, optimize=len(others) > 1)


def tensorly_mttkrp(M: np.ndarray, factors: Sequence[np.ndarray], p: int) -> np.ndarray:
    """MTTKRP through tensorly (the reference implementation)."""
    from tensorly.tenalg import unfolding_dot_khatri_rao

    return unfolding_dot_khatri_rao(M, (None, list(factors)), p)


# Sweeps assumed by the cost model; ALS on these problems typically needs tens.
_COST_SWEEPS = 50

#: Starts cheaper than this (flops, a few seconds) are always exact.
_FREE_FLOPS = 1e11

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

    def __init__(self, views: Sequence[WhitenedView], name: str):
        self.views = list(views)
        self.name = name
        self.dims = [v.d for v in self.views]
        self._M: np.ndarray | None = None
        self._norm_sq: float | None = None
        self._op = ImplicitMoment(self.views) if name == "implicit" else None
        self._tree: dict = {}
        self._mode_grams: list[np.ndarray] | None = None
        self._hosvd: list[np.ndarray] | None = None

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
    def M(self) -> np.ndarray:
        if self._M is None:
            # The reference route ("tensorly") builds M from dense input as given.
            self._M = dense_moment(self.views, exploit_sparsity=self.name != "tensorly")
        return self._M

    @property
    def norm_sq(self) -> float:
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
        if self._op is not None:
            return self._op.mttkrp(factors, p)
        if self.name == "tensorly":
            return tensorly_mttkrp(self.M, factors, p)
        return dense_mttkrp(self.M, factors, p, cache=self._tree)

    def residual_sq(self, factors: Sequence[np.ndarray]) -> float | None:
        """||M - [[U_1, ..., U_m]]||_F^2 summed slab by slab, or None if unaffordable.

        The Gram formula of ALS's error subtracts terms that can be far larger than
        the result (:data:`._als.CANCELLATION`); this sums the residual's squares
        over column slabs of the unfolding M_(f) (f the largest mode), so it has no
        cancellation. O(prod(d) r) for a dense M, plus O(2 N prod(d)) to form the
        slabs of an implicit one; no more than 64 MB of M at a time. None where even
        a one-column slab would exceed that (:func:`_unfolding_plan`).
        """
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
        """Return the exact HOSVD's bases (:func:`._als.hosvd_bases`), computed once."""
        if self._hosvd is None:
            from ._als import hosvd_bases

            self._hosvd = hosvd_bases(self.mode_grams())
        return self._hosvd

    def correlations(self, factors: Sequence[np.ndarray]) -> np.ndarray:
        """rho_k = (1/N) sum_n prod_p (Y_p U_p)[n, k] = <M, u_1k o ... o u_mk>.

        With M built (dense engines), from M: one MTTKRP, O(r prod(d)), whatever N
        (SecStr with 1.3M samples: 0.7 GFLOP instead of a pass over the data).
        Otherwise by blocks of samples (:func:`correlations`). Same values to
        rounding.
        """
        if self._M is None:
            return correlations(self.views, factors)
        B = dense_mttkrp(self._M, factors, 0)
        return np.einsum("az,az->z", B, factors[0])

    def init_cost(self) -> float:
        """Flops of the exact HOSVD start (0 once the mode Grams exist)."""
        if self._mode_grams is not None:
            return 0.0
        if self._op is None:
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
        if self._op is None:
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
        *,
        init,
        max_iter: int,
        tol: float,
        rng: np.random.Generator,
        n_init: int | str = "auto",
        linesearch: bool = True,
        extra_starts: Sequence[list[np.ndarray]] = (),
    ):
        """Rank-``rank`` CP-ALS of M, the best of several starts.

        The starts are ``init`` (``"auto"`` resolved by :meth:`auto_init`), then
        ``n_init - 1`` (``"auto"``: :meth:`auto_n_init`, or 1 for given factors)
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
        from ._als import BREAKDOWN, broke_down, init_factors, normalize_cp

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
        U0s = [
            init_factors(self.mttkrp, self.dims, rank, st, rng, hosvd=self.hosvd_bases)
            for st in starts
        ]
        diverged, rise = False, None
        if self.name == "tensorly":  # the reference: every start run in full
            fits = [self._tensorly(rank, U0, max_iter, tol, linesearch) for U0 in U0s]
            start_errors = [f[4][-1] if f[4] else np.inf for f in fits]
            k = _argmin_first(start_errors)
            best = (k, labels[k], fits[k])
        else:
            k, res, start_errors = self._race(U0s, max_iter, tol, linesearch)
            kept, n_kept, trace, rise = res.kept()
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
        }
        if rise is not None:
            info["rise"] = rise
        return weights, factors, info

    def _race(self, U0s, max_iter: int, tol: float, linesearch: bool):
        """ALS from every start in ``U0s``, by successive halving.

        All starts run a first burst of ``2 * WINDOW`` sweeps; then the better
        half (by error) goes on for a burst twice as long, and so on until one is
        left, which runs to the stopping rule. The runs are resumed, not
        restarted, so the survivor's iterates are those of a single run from its
        start. Several starts thus cost about two single fits instead of
        ``len(U0s)``. Returns the survivor's index and result and, per start, the
        error at which it left the race (the survivor's final error).
        """
        from ._als import WINDOW, cp_als

        def run(U0=None, resume=None, upto=max_iter):
            return cp_als(
                self.mttkrp,
                self.norm_sq,
                U0,
                max_iter=upto,
                tol=tol,
                linesearch=linesearch,
                resume=resume,
                residual_sq=self.residual_sq,
            )

        def last(res):  # the error of the iterate a fit would keep
            return res.kept_error()

        if len(U0s) == 1:
            res = run(U0s[0])
            return 0, res, [last(res)]
        burst = 2 * WINDOW
        pool = {i: run(U0, upto=min(burst, max_iter)) for i, U0 in enumerate(U0s)}
        start_errors = [np.inf] * len(U0s)
        while len(pool) > 1:
            order = sorted(pool, key=lambda i: (last(pool[i]), i))
            for i in order[(len(order) + 1) // 2 :]:
                start_errors[i] = last(pool.pop(i))
            burst *= 2
            for i, res in pool.items():
                if not (res.converged or res.diverged) and res.n_iter < max_iter:
                    pool[i] = run(resume=res, upto=min(res.n_iter + burst, max_iter))
        ((k, res),) = pool.items()
        if not (res.converged or res.diverged) and res.n_iter < max_iter:
            res = run(resume=res)
        start_errors[k] = last(res)
        return k, res, start_errors

    def _tensorly(self, rank, U0, max_iter, tol, linesearch):
        import tensorly as tl
        from tensorly.decomposition import parafac

        with tl.backend_context("numpy"), warnings.catch_warnings():
            # tensorly advises against normalizing a given start; ours is the
            # normalization of its own iterates, which it does regardless
            warnings.filterwarnings(
                "ignore", "It is not recommended to initialize", UserWarning
            )
            cp, errors = parafac(
                self.M,
                rank,
                n_iter_max=max_iter,
                init=tl.cp_tensor.CPTensor((np.ones(rank), U0)),
                tol=tol,
                linesearch=linesearch,
                # unnormalized factors make the r x r solves depend on the column
                # scales, which drift apart on degenerate fits (see _als); tensorly
                # 0.10 fails on a matrix with it (a singular solve), so not for m = 2
                normalize_factors=self.M.ndim > 2,
                return_errors=True,
            )
        errors = [float(e) for e in errors]
        n_iter = len(errors)
        converged = bool(tol and n_iter >= 2 and abs(errors[-2] - errors[-1]) < tol)
        return cp.weights, list(cp.factors), n_iter, converged, errors

    def path(
        self,
        ranks: Sequence[int],
        *,
        init,
        warm_start: bool,
        random_state,
        max_iter: int,
        tol: float,
        n_init: int | str = "auto",
        linesearch: bool = True,
    ) -> dict[int, tuple]:
        """Decompose M at every rank; ``{r: (weights, factors, info, seconds)}``.

        Each rank runs the starts of :meth:`decompose` from a generator seeded
        afresh with an int ``random_state``, so it equals a standalone fit (a
        Generator passed in cannot be re-seeded and is used in turn). ``"auto"`` is
        resolved once for the whole path (:meth:`auto_init`), so every rank uses
        the same kind of start. With ``warm_start`` the ranks are visited in
        increasing order and the previous rank's solution plus the next columns of
        ``init`` is one more start: the path's result at a rank is then never worse
        than the standalone fit, and differs from it only where the warm start
        found a lower error.
        """
        from time import perf_counter

        from ._als import init_factors
        from ._validation import as_generator

        if isinstance(init, str) and init == "auto":
            init = self.auto_init(ranks)
        out = {}
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
                r,
                init=init,
                max_iter=max_iter,
                tol=tol,
                rng=rng,
                n_init=n_init,
                linesearch=linesearch,
                extra_starts=extra,
            )
            previous = [factors[0] * weights, *factors[1:]]
            out[r] = (weights, factors, info, perf_counter() - t)
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

"""The "implicit" engine: M = (1/N) sum_n y_1n o ... o y_mn, never formed.

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

The "dense" engine (:mod:`.dense`) builds M itself instead.
"""

from __future__ import annotations

import weakref
from collections.abc import Sequence
from typing import Any

import numpy as np

from .sparse import _prod, _sparse_moment, sparse_moment_cost
from .views import _BLOCK_BYTES, WhitenedView, _block_rows, sparse_forms

__all__ = [
    "ImplicitMoment",
    "correlations",
    "mode_gram_costs",
    "norm_costs",
]

#: Largest tensor the implicit engine builds transiently for ||M||^2 ("sparse" route).
_NORM_DENSE_MAX_BYTES = 256 * 1024**2


#: Projections Y_q U_q kept per mode: two (the current factor's and the one before,
#: which the line search combines) and m spares (:class:`ImplicitMoment`) where
#: those 3 m fit in this many bytes; else one and one spare, as many as before.
_CACHE_BYTES = 4 * 1024**3

#: Bytes of one N x r block of the fused MTTKRP (:meth:`ImplicitMoment.mttkrp`).
_FUSED_BYTES = 512 * 1024

#: Views sparse or narrower than this recompute a combination's projection rather
#: than combine the known ones (memory-bound passes that cost more, measured).
_COMBINE_MIN_D = 32

#: Factors known to be linear combinations of others (:func:`record_combination`).
_COMBINATIONS: dict[int, tuple] = {}


def record_combination(new: np.ndarray, terms) -> None:
    """Record that ``new = sum(coef * old for coef, old in terms)``.

    ALS's line search makes its jumps so (U + s (U - U0)): an engine holding Y U and
    Y U0 then has Y new = (1 + s) Y U - s Y U0 in O(N r) instead of a GEMM. The
    record holds weak references only and goes when ``new`` does.
    """
    weakref.finalize(new, _COMBINATIONS.pop, id(new), None)
    _COMBINATIONS[id(new)] = (
        weakref.ref(new),
        tuple((c, weakref.ref(U)) for c, U in terms),
    )


def combination_of(U) -> list | None:
    """Return ``[(coef, old), ...]`` recorded for ``U``, or None."""
    entry = _COMBINATIONS.get(id(U))
    if entry is None or entry[0]() is not U:
        return None
    terms = [(c, ref()) for c, ref in entry[1]]
    return None if any(old is None for _, old in terms) else terms


class ImplicitMoment:
    """M = (1/N) sum_n y_1n o ... o y_mn, held as its rank-N CP factors.

    ``mttkrp`` caches the projections Y_q U_q (by the identity of U_q, held
    weakly) and recomputes one only when ALS has replaced U_q, so a sweep costs
    two products with each Y_p. A factor recorded as a combination of factors
    whose projections are cached (:func:`record_combination`: the line search's
    jumps) gets the same combination of projections instead of a product.
    """

    def __init__(self, views: Sequence[WhitenedView]):
        self.views = list(views)
        self.N = self.views[0].N
        self.dims = [v.d for v in self.views]
        # per mode, [(weak reference to U_q, Y_q U_q)], oldest first
        self._cache: list[list[tuple[Any, np.ndarray]]] = [[] for _ in self.views]
        # projections no longer cached, reused as new ones: a fresh N x r array
        # costs page faults that cost as much as filling it (mapped, zeroed pages)
        self._spare: list[np.ndarray] = []
        self._spares = len(self.views)  # the most kept (see _CACHE_BYTES)

    def project(self, bases: Sequence[np.ndarray]) -> ImplicitMoment:
        """Return the same operator on the views Y_p Q_p (compression: the engine)."""
        return ImplicitMoment(
            [v.project(Q) for v, Q in zip(self.views, bases, strict=True)]
        )

    def _cached(self, q: int, U) -> np.ndarray | None:
        return next((P for ref, P in self._cache[q] if ref() is U), None)

    def _store(self, q: int, U, P: np.ndarray) -> None:
        entries, spare, m = self._cache[q], self._spare, len(self.views)
        keep = 2 if 3 * m * P.nbytes <= _CACHE_BYTES else 1
        self._spares = m if keep > 1 else 1

        def drop(gone):
            spare[:] = [*spare, *(e[1] for e in gone)][-self._spares :]

        def forget(ref):  # U is gone: so is its projection
            drop([e for e in entries if e[0] is ref])
            entries[:] = [e for e in entries if e[0] is not ref]

        try:
            ref = weakref.ref(U, forget)
        except TypeError:  # not an array (a list): not cached
            return
        drop(entries[: max(len(entries) + 1 - keep, 0)])
        del entries[: max(len(entries) + 1 - keep, 0)]
        entries.append((ref, P))

    def _source(self, q: int, U, spare: list):
        """(P, how): the cached Y_q U_q and None, or a P to fill and how to."""
        P = self._cached(q, U)
        if P is not None:
            return P, None
        r = np.shape(U)[1]
        reuse = [i for i, S in enumerate(spare) if S.shape[1] == r]
        out = spare.pop(reuse[-1]) if reuse else np.empty((self.N, r))
        view = self.views[q]
        terms = None
        if not view.is_sparse and view.d >= _COMBINE_MIN_D:
            terms = combination_of(U)
        if terms is not None:
            known = [(c, self._cached(q, V)) for c, V in terms]
            if all(P is not None for _, P in known):
                return out, known
        return out, view.operand(U)

    def mttkrp(self, factors: Sequence[np.ndarray], p: int) -> np.ndarray:
        """Y_p^T (Hadamard_{q != p} Y_q U_q) / N, by blocks of rows.

        Each block of the projections is made (or read), multiplied and handed to
        the product with Y_p while in cache, so no N x r intermediate is written
        but the projections that the cache keeps.
        """
        others = [q for q in range(len(self.views)) if q != p]
        # spares taken now cannot be in use: only what a past call dropped
        spare, self._spare[:] = list(self._spare), []
        sources = [self._source(q, factors[q], spare) for q in others]
        r = sources[0][0].shape[1]
        view = self.views[p]
        acc = np.zeros((view.X.shape[1] if view.is_sparse else view.d, r))
        colsum = np.zeros(r)
        B = int(max(64, _FUSED_BYTES // (8 * max(r, 1))))
        buf = np.empty((min(B, self.N), r))
        for start in range(0, self.N, B):
            stop = min(start + B, self.N)
            blocks = []
            for q, (P, how) in zip(others, sources, strict=True):
                block = P[start:stop]
                if isinstance(how, list):  # a combination of known projections
                    (c, first), *rest = how
                    np.multiply(first[start:stop], c, out=block)
                    for c, other in rest:
                        block += c * other[start:stop]
                elif how is not None:
                    self.views[q].dot_rows(start, stop, how, block)
                blocks.append(block)
            H = blocks[0]
            if len(blocks) > 1:
                H = np.multiply(blocks[0], blocks[1], out=buf[: stop - start])
                for b in blocks[2:]:
                    H *= b
            view.tdot_rows(start, stop, H, acc)
            if view.is_sparse:
                colsum += H.sum(axis=0)
        for q, (P, how) in zip(others, sources, strict=True):
            if how is not None:
                self._store(q, factors[q], P)
        self._spare[:] = [*spare, *self._spare][-self._spares :]
        return view.tdot_finish(acc, colsum) / self.N

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
            M = _sparse_moment(sparse_forms(self.views))
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
            return _dense_mode_grams(_sparse_moment(sparse_forms(self.views)))
        if method == "unfolding":
            return _unfolding_mode_grams(self.views)
        if method != "gram":
            raise ValueError(f"unknown mode-Gram method {method!r}")
        return _gram_mode_grams(self.views)


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
    buf = np.empty(min(B, N) ** 2)  # the Hadamard products, one block at a time
    for i in starts:
        Yi = [v.rows(i, i + B) for v in views]
        for j in starts:
            if j < i:
                continue
            Yj = Yi if j == i else [v.rows(j, j + B) for v in views]
            G = [yi @ yj.T for yi, yj in zip(Yi, Yj, strict=True)]
            for p in range(m):
                others = [G[q] for q in range(m) if q != p]
                if not others:  # one view: M is a vector
                    H = np.ones_like(G[p])
                elif len(others) == 1:
                    H = others[0]
                else:
                    H = buf[: G[p].size].reshape(G[p].shape)
                    np.multiply(others[0], others[1], out=H)
                    for Gq in others[2:]:
                        H *= Gq
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

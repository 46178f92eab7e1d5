"""The "dense" engine: M built in memory (the paper's route) and its MTTKRP.

:func:`dense_moment` builds the d_1 x ... x d_m tensor, from sparse moments when
that is cheaper (:mod:`.sparse`), by blocks of samples otherwise, O(N prod_p d_p)
time and O(prod_p d_p) memory; :func:`dense_mttkrp` contracts it without the
Khatri-Rao product, reusing the contraction with the last factor across the first
m - 1 modes of a sweep, so a sweep costs two passes over M instead of m. The
"tensorly" route (:mod:`.tensorly`) builds M here too. :class:`.engine.MomentEngine`
calls them through this module, so that tests can forbid them.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import cache

import numpy as np

from .sparse import _prod, _sparse_moment, sparse_moment_cost
from .views import WhitenedView, _block_rows, sparse_forms

__all__ = ["DENSE_MAX_BYTES", "dense_moment", "dense_mttkrp"]

#: Largest dense tensor the "auto" engine choice will build (bytes).
DENSE_MAX_BYTES = 2 * 1024**3


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
    m = len(dims)
    if all(v.sparse is not None for v in views) and (
        exploit_sparsity or all(v.is_sparse for v in views)
    ):
        nnz = [v.nnz_per_row for v in views]
        if sparse_moment_cost(N, dims, nnz) < 2.0 * N * _prod(dims):
            return _sparse_moment(sparse_forms(views))
    rest = int(np.prod(dims[1:]))
    M = np.zeros((dims[0], rest))
    B = _kr_block_rows(N, rest)
    buf = np.empty(B * rest)  # one block of Khatri-Rao rows, reused
    for i in range(0, N, B):
        Y = [v.rows(i, i + B) for v in views]
        b = Y[0].shape[0]
        KR = Y[1]
        for q, Yq in enumerate(Y[2:], start=3):
            shape = (b, KR.shape[1], Yq.shape[1])
            out = buf[: b * shape[1] * shape[2]].reshape(shape) if q == m else None
            KR = np.multiply(KR[:, :, None], Yq[:, None, :], out=out).reshape(b, -1)
        M += Y[0].T @ KR
    return (M / N).reshape(dims)


#: Bytes of one block of Khatri-Rao rows in :func:`dense_moment`: a block that
#: stays in the last-level cache between being made and being multiplied (a 64 MB
#: block ran the build at 0.57 of a square DGEMM's rate on SecStr's shape).
_KR_BLOCK_BYTES = 16 * 1024**2
#: Fewest rows of a block (the GEMM's inner dimension, which a thinner block
#: starves), within the 64 MB of any block.
_KR_MIN_ROWS = 128


def _kr_block_rows(N: int, rest: int) -> int:
    rows = max(_KR_MIN_ROWS, _KR_BLOCK_BYTES // (8 * rest))
    return int(max(1, min(N, rows, _block_rows(N, 8 * rest))))


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
    if p != m - 1:
        hit = cache.get("last") if cache is not None else None
        if hit is not None and hit[0] is factors[-1]:
            T = hit[1]
        else:
            T = (M.reshape(-1, dims[-1]) @ factors[-1]).reshape(*dims[:-1], r)
            if cache is not None:
                cache["last"] = (factors[-1], T)
    else:
        # M_(1)^T U_1 (a transposed GEMM, no copy of M) keeps the rank axis last
        # and contiguous for the component-wise contractions.
        T = (M.reshape(dims[0], -1).T @ factors[0]).reshape(*dims[1:], r)
    expr, others = _contraction(m, p)
    # ALS's factors are Fortran-ordered (transposes of solves); einsum runs about
    # 4x faster on C-ordered operands with the rank axis contiguous.
    ops = [np.ascontiguousarray(factors[q]) for q in others]
    return np.einsum(expr, T, *ops, optimize=len(others) > 1)


@cache
def _contraction(m: int, p: int) -> tuple[str, tuple[int, ...]]:
    """Return the einsum contracting T (its modes but the GEMM's, then rank) to p."""
    letters = "abcdefghij"[:m]
    modes = list(range(m - 1)) if p != m - 1 else list(range(1, m))
    others = tuple(q for q in modes if q != p)
    expr = "".join(letters[q] for q in modes) + "z"
    expr += "".join("," + letters[q] + "z" for q in others) + "->" + letters[p] + "z"
    return expr, others

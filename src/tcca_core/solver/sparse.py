"""The sparse route to the moment tensor: raw moments of sparse views, whitened.

One-hot and bag-of-words views (SecStr, Ads) have few non-zeros per row, so the
raw moments E[x_p o x_q o ...] of their sparse forms cost N prod(nnz_p) sparse
multiply-adds instead of N prod(d_p) flops; centering and whitening them gives M
exactly (:func:`_sparse_moment`). :func:`sparse_moment_cost` is the cost model that
decides when this pays. :func:`csr_rows_dot_add` and :func:`csr_rows_tdot_add` are
the implicit engine's products of a block of sparse rows, in place.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import scipy.sparse as sp

#: Cost of one sparse multiply-add (row-wise Kronecker product, sparse-sparse
#: product) relative to one GEMM flop, in the cost models.
_SPARSE_OP_COST = 200.0

try:  # scipy's own CSR x dense kernels, which add into a given output array
    from scipy.sparse._sparsetools import csc_matvecs as _csc_matvecs
    from scipy.sparse._sparsetools import csr_matvecs as _csr_matvecs
except ImportError:  # a scipy without them: the public products (one copy more)
    _csr_matvecs = _csc_matvecs = None


def _raw_ok(X, *dense: np.ndarray) -> bool:
    """Whether scipy's kernels may run on CSR ``X`` and the float64 ``dense`` arrays.

    They write through the arrays' memory, so every array must be C-contiguous
    (a non-contiguous output would be copied and the result lost) and of the
    kernel's types.
    """
    return (
        _csr_matvecs is not None
        and X.data.dtype == np.float64
        and X.indices.dtype == X.indptr.dtype
        and all(a.dtype == np.float64 and a.flags.c_contiguous for a in dense)
    )


def csr_rows_dot_add(X, start: int, stop: int, D: np.ndarray, out: np.ndarray) -> None:
    """Add X[start:stop] @ D to ``out`` for CSR ``X``, in place, without slicing X.

    scipy's kernel reads the rows' slice of ``indptr`` (its offsets index the
    whole ``indices`` and ``data``), so a block of rows costs neither a CSR copy
    nor a temporary product.
    """
    if _raw_ok(X, D, out):
        n, r = stop - start, D.shape[1]
        ptr = X.indptr[start : stop + 1]
        _csr_matvecs(n, X.shape[1], r, ptr, X.indices, X.data, D.ravel(), out.ravel())
    else:
        out += X[start:stop] @ D


def csr_rows_tdot_add(X, start: int, stop: int, H: np.ndarray, out: np.ndarray) -> None:
    """Add X[start:stop].T @ H to ``out`` for CSR ``X`` (see :func:`csr_rows_dot_add`).

    X[start:stop].T is the CSC matrix of the same arrays, so scipy's CSC kernel
    scatters the block's rows of H into ``out`` (d x r, in cache).
    """
    if _raw_ok(X, H, out):
        n, r = stop - start, H.shape[1]
        ptr = X.indptr[start : stop + 1]
        _csc_matvecs(X.shape[1], n, r, ptr, X.indices, X.data, H.ravel(), out.ravel())
    else:
        out += X[start:stop].T @ H


def _prod(values) -> float:
    return float(np.prod(np.asarray(list(values), dtype=float)))


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

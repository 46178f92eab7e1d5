"""One view's whitened data, Y = (X - mean) W, the input of every engine.

For TCCA, Y_p = (X_p - mean_p) (C_pp + eps I)^(-1/2); for KTCCA, Y_p = K_p L_p^(-1).
:class:`WhitenedView` holds X (dense or sparse), its mean and W and gives the
products with Y that the engines need, without forming Y for sparse X.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import scipy.sparse as sp

from .sparse import csr_rows_dot_add, csr_rows_tdot_add

__all__ = ["WhitenedView", "sparse_forms"]

_BLOCK_BYTES = 64 * 1024**2

#: A dense view with at most this fraction of non-zeros (one-hot, bag-of-words)
#: also keeps a sparse copy, so M can be built from sparse moments.
SPARSE_DENSITY = 0.1


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
                    _dense_to_csr(X),
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

    def project(self, Q: np.ndarray) -> WhitenedView:
        """Return the view of Y Q (``Q``: d x k), without forming Y for sparse X."""
        if self.is_sparse:
            return WhitenedView(self.X, self.mean, self.W @ Q)
        if self._Y is not None:
            return WhitenedView(self._Y @ Q)
        assert self._dense is not None  # a dense view holds Y or what makes it
        X, mean, W = self._dense
        return WhitenedView(X, mean, Q if W is None else W @ Q)

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
        out = np.empty((self.N, np.shape(U)[1]))
        self.dot_rows(0, self.N, self.operand(U), out)
        return out

    def tdot(self, H: np.ndarray) -> np.ndarray:
        """Y.T @ H, shape (d, r)."""
        if not self.is_sparse:
            Y = self.Y
            assert Y is not None  # a dense view always has Y
            return Y.T @ H
        XtH = np.asarray(self.X.T @ H) - np.outer(self.mean, H.sum(axis=0))
        return self.W.T @ XtH

    def operand(self, U: np.ndarray):
        """Return what :meth:`dot_rows` multiplies by: U, or (W U, mean^T W U)."""
        if not self.is_sparse:
            return U
        WU = np.ascontiguousarray(self.W @ U, dtype=np.float64)
        return WU, self.mean @ WU

    def dot_rows(self, start: int, stop: int, operand, out: np.ndarray) -> None:
        """Write Y[start:stop] @ U into ``out`` (``operand``: :meth:`operand`'s).

        A sparse view's block is centred, then X (W U) is added in place.
        """
        if not self.is_sparse:
            Y = self.Y
            assert Y is not None  # a dense view always has Y
            np.matmul(Y[start:stop], operand, out=out)
            return
        WU, shift = operand
        out[:] = -shift
        csr_rows_dot_add(self.X, start, stop, WU, out)

    def tdot_rows(self, start: int, stop: int, H: np.ndarray, acc: np.ndarray) -> None:
        """Add Y[start:stop].T @ H to ``acc`` (sparse: X's, see :meth:`tdot_finish`)."""
        if self.is_sparse:
            csr_rows_tdot_add(self.X, start, stop, H, acc)
            return
        Y = self.Y
        assert Y is not None  # a dense view always has Y
        acc += Y[start:stop].T @ H

    def tdot_finish(self, acc: np.ndarray, colsum: np.ndarray) -> np.ndarray:
        """Y.T @ H from :meth:`tdot_rows`' sum over all rows and H's column sums."""
        if not self.is_sparse:
            return acc
        return self.W.T @ (acc - np.outer(self.mean, colsum))

    def rows(self, start: int, stop: int) -> np.ndarray:
        """Dense block Y[start:stop]."""
        if not self.is_sparse:
            Y = self.Y
            assert Y is not None  # a dense view always has Y
            return Y[start:stop]
        return (self.X[start:stop].toarray() - self.mean) @ self.W


def _dense_to_csr(X: np.ndarray) -> sp.csr_matrix:
    """CSR copy of a mostly-zero dense array, in one pass over its rows.

    scipy's ``csr_matrix(X)`` goes through COO and sorts; the non-zeros of a
    C-ordered array come out of ``nonzero`` already in CSR order (one-hot SecStr,
    84K x 105: a third of that route's time).
    """
    X = np.ascontiguousarray(X)
    rows, cols = np.nonzero(X)
    indptr = np.zeros(X.shape[0] + 1, dtype=np.int64)
    np.cumsum(np.bincount(rows, minlength=X.shape[0]), out=indptr[1:])
    return sp.csr_matrix((X[rows, cols], cols, indptr), shape=X.shape)


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


def sparse_forms(
    views: Sequence[WhitenedView],
) -> list[tuple[Any, np.ndarray, np.ndarray]]:
    """Return every view's sparse form ``(X as CSR, mean, W)``; all must have one."""
    forms = []
    for v in views:
        assert v.sparse is not None, "every view needs a sparse form"
        forms.append(v.sparse)
    return forms

"""Small linear-algebra helpers shared by TCCA, KTCCA and the baselines.

Rows are samples throughout (the paper's X_p is d_p x N; ours is its transpose).
Covariances use the paper's 1/N scaling, so that ``eps`` means what it means there.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
import scipy.linalg as sla
import scipy.sparse as sp
from scipy.linalg.lapack import dgesdd as _gesdd

__all__ = [
    "LinearProjectionMixin",
    "column_mean",
    "column_signs",
    "fix_signs",
    "numerical_rank",
    "covariance",
    "cross_covariance",
    "inv_sqrt_psd",
    "project",
    "singular_message",
    "svd",
]


#: Matrices up to this many entries are factorized by LAPACK's gesdd called directly.
_SMALL = 4096


def svd(A: np.ndarray, full_matrices: bool = False):
    """Compute numpy's SVD (LAPACK gesdd), else the slower, more robust gesvd.

    gesdd does not always converge: it happens on Ads' nearly rank-deficient
    cross-covariances, and on some of the randomized HOSVD sketches of Ads' TCCA
    tensor (a start of ``n_init = 10`` at r = 300). gesvd succeeds there. Every dense
    SVD of the package goes through here (DSE's truncated ARPACK one does not).
    """
    if A.size <= _SMALL and A.dtype == np.float64 and A.size:
        # LAPACK directly: on a matrix this small numpy's wrapper costs as much as
        # the factorization (ALS's randomized starts make thousands of them)
        U, s, Vt, info = _gesdd(A, full_matrices=int(full_matrices))
        if info == 0:
            return U, s, Vt
    try:
        return np.linalg.svd(A, full_matrices=full_matrices)
    except np.linalg.LinAlgError:
        return sla.svd(
            A, full_matrices=full_matrices, lapack_driver="gesvd", check_finite=False
        )


def column_signs(U: np.ndarray) -> np.ndarray:
    """Return +-1 per column: the sign of the column's largest-magnitude entry.

    The package's one sign convention (+1 for a zero column). Components of CCA,
    CCA-LS, DSE, SSMVD, TCCA and KTCCA are only defined up to sign; this makes them
    deterministic.
    """
    if U.shape[0] == 0:
        return np.ones(U.shape[1])
    # The largest and smallest entry decide a column's sign unless they tie in
    # magnitude (or are NaN): two reductions along the rows instead of an abs
    # temporary and an argmax down each column (5-10x faster on SSMVD's N x r
    # embeddings). The tied columns take the first largest-magnitude entry, as
    # before.
    hi, lo = U.max(axis=0), U.min(axis=0)
    signs = np.where(hi > -lo, 1.0, -1.0)
    tied = ~((hi > -lo) | (hi < -lo))
    if tied.any():
        cols = np.flatnonzero(tied)
        idx = np.argmax(np.abs(U[:, cols]), axis=0)
        signs[cols] = np.sign(U[idx, cols])
        signs[signs == 0] = 1.0
    return signs


def fix_signs(U: np.ndarray) -> np.ndarray:
    """Return ``U`` with each column's largest-magnitude entry positive."""
    return U * column_signs(U)


def numerical_rank(values, *, scale: float | None = None, factor: float = 1.0) -> int:
    """Count the singular values (or PSD eigenvalues) that are not rounding error.

    A value counts when its magnitude exceeds ``factor * scale * len(values) *
    machine epsilon``; ``scale`` defaults to the largest magnitude, which with
    ``factor=1`` is numpy's ``matrix_rank`` tolerance. A ``scale`` taken from the
    data instead (e.g. the raw second moments behind a covariance) judges rounding
    against the numbers it came from, not against the (possibly tiny) result.
    """
    v = np.abs(np.asarray(values, dtype=float))
    if v.size == 0:
        return 0
    top = float(v.max()) if scale is None else max(float(scale), 0.0)
    if top <= 0:
        return 0
    return int(np.sum(v > factor * top * v.size * np.finfo(float).eps))


def column_mean(X) -> np.ndarray:
    """Mean of each column of a dense or sparse matrix, as a 1-D float array."""
    return np.asarray(X.mean(axis=0), dtype=np.float64).ravel()


def cross_covariance(Xp, Xq, mean_p=None, mean_q=None) -> np.ndarray:
    """C_pq = (Xp - mean_p)^T (Xq - mean_q) / N, never densifying sparse input."""
    N = Xp.shape[0]
    mean_p = column_mean(Xp) if mean_p is None else mean_p
    mean_q = column_mean(Xq) if mean_q is None else mean_q
    if sp.issparse(Xp) or sp.issparse(Xq):
        prod = Xp.T @ Xq
        prod = prod.toarray() if sp.issparse(prod) else np.asarray(prod)
        # Centering after the product keeps the sparse operand sparse.
        return prod / N - np.outer(mean_p, mean_q)
    return (Xp - mean_p).T @ (Xq - mean_q) / N


def covariance(X, mean=None) -> np.ndarray:
    """C_pp = (X - mean)^T (X - mean) / N (symmetrized)."""
    C = cross_covariance(X, X, mean, mean)
    return (C + C.T) / 2


def singular_message(what: str, eps: float, largest: float) -> str:
    """Why ``C + eps I`` is singular to working precision, and what to do.

    With ``eps = 0`` a view with constant or linearly dependent columns is the cause;
    with ``eps > 0`` it is the view's scale: ``eps`` is lost next to an eigenvalue
    of C larger than ``eps / machine epsilon`` (entries around 1e9 give 1e18).
    """
    if eps == 0:
        return (
            f"the covariance C + eps*I of {what} is singular (constant or linearly "
            "dependent columns) and eps = 0; use eps > 0"
        )
    return (
        f"the covariance C + eps*I of {what} is singular to working precision: "
        f"eps = {eps:g} is negligible next to C's largest eigenvalue {largest:.3g} "
        f"(the view's scale: entries of size ~{np.sqrt(largest):.3g}), so its "
        "constant or linearly dependent directions are not regularized; "
        "standardize (rescale) the view, or use an eps in proportion to its scale"
    )


def inv_sqrt_psd(C: np.ndarray, eps: float, what: str = "a view") -> np.ndarray:
    """(C + eps I)^(-1/2) of a symmetric PSD matrix, through ``eigh``.

    Tiny negative eigenvalues from rounding are clipped to 0. A ``C + eps I``
    singular to working precision (``eps = 0`` with a singular ``C``, or ``eps``
    negligible next to C's scale) has no usable inverse root: that is reported,
    naming ``what`` and the cause, rather than returned as huge numbers.
    """
    s, V = np.linalg.eigh(C)
    s = np.clip(s, 0.0, None) + eps
    tiny = s.max(initial=0.0) * C.shape[0] * np.finfo(float).eps
    if s.min(initial=np.inf) <= tiny:
        raise ValueError(singular_message(what, eps, float(s.max(initial=0.0) - eps)))
    return (V / np.sqrt(s)) @ V.T


def project(X, mean, W) -> np.ndarray:
    """(X - mean) @ W without densifying a sparse X."""
    if sp.issparse(X):
        return np.asarray(X @ W) - mean @ W
    return (X - mean) @ W


class LinearProjectionMixin:
    """``transform`` of the linear multi-view methods (TCCA, CCA, CCA-LS).

    Needs the fitted ``means_``, ``projections_`` (W_p) and ``n_features_in_``.
    """

    if TYPE_CHECKING:  # set by the host estimator's fit
        means_: list
        projections_: list
        n_features_in_: list

        def fit(self, views, y=None) -> Any:
            """Fit the host estimator."""
            ...

    def transform(self, views, per_view: bool = False):
        """[Z_1 ... Z_k] with Z_p = (X_p - mean_p) W_p, stacked or as a list."""
        from sklearn.utils.validation import check_is_fitted

        from .._validation import check_views

        check_is_fitted(self, "projections_")
        views = check_views(views, min_samples=1, n_features=self.n_features_in_)
        Z = [
            project(X, mu, W)
            for X, mu, W in zip(views, self.means_, self.projections_, strict=True)
        ]
        return Z if per_view else np.hstack(Z)

    def fit_transform(self, views, y=None, per_view: bool = False):
        """Fit, then transform the same views."""
        return self.fit(views).transform(views, per_view=per_view)

"""DSE's and SSMVD's PCA per-view step: centred PCA scores and their orthonormal basis.

``view_embedding="pca"`` uses the orthonormal basis of the scores as the pattern
``A^{(p)}``; ``"spectral"`` builds its kNN graph on the scores. The reading of the
paper behind this step, and its assumptions, are in :mod:`._dse`'s docstring.
"""

from __future__ import annotations

import numpy as np
import scipy.linalg as la
import scipy.sparse as sp
from scipy.sparse.linalg import LinearOperator, svds

from .._validation import as_random_state
from ..solver.linalg import column_mean, covariance, fix_signs, svd

__all__ = ["pca_scores"]

# Above these sizes a dense d x d (or N x N) eigenproblem gives way to ARPACK.
_DENSE_PCA_MAX = 4096
# Relative singular-value cut below which a direction counts as numerically absent.
_RANK_RTOL = 1e-8


def _centered_operator(X, mean: np.ndarray) -> LinearOperator:
    """``X - 1 mean^T`` as an operator, so sparse ``X`` is never densified."""
    N, d = X.shape

    def matmat(V):
        V = V.reshape(d, -1)
        return np.asarray(X @ V) - np.outer(np.ones(N), mean @ V)

    def rmatmat(U):
        U = U.reshape(N, -1)
        return np.asarray(X.T @ U) - np.outer(mean, U.sum(axis=0))

    return LinearOperator(
        (N, d),
        matvec=lambda v: matmat(v).ravel(),
        rmatvec=lambda u: rmatmat(u).ravel(),
        matmat=matmat,
        rmatmat=rmatmat,
        dtype=np.float64,
    )


def pca_scores(X, n_components: int, random_state=None) -> tuple[np.ndarray, bool]:
    """Centred PCA scores of one view.

    Parameters
    ----------
    X : ndarray or sparse matrix of shape (N, d)
    n_components : int
        Number of principal components kept. A view with ``d <= n_components`` is
        returned centred and unreduced.
    random_state : int, RandomState, Generator or None
        Seeds ARPACK's start vector (only used when both N and d exceed 4096).

    Returns
    -------
    T : ndarray of shape (N, min(n_components, d))
        ``(X - 1 mu^T) V`` with ``V`` the top principal axes (``T = X_c`` when no
        reduction is done), in decreasing order of variance.
    reduced : bool
        Whether PCA was applied (``d > n_components``).
    """
    N, d = X.shape
    mean = column_mean(X)
    if d <= n_components:
        Xd = X.toarray() if sp.issparse(X) else np.asarray(X)
        return Xd - mean, False
    k = n_components
    if d <= _DENSE_PCA_MAX:
        # C = X^T X / N - mu mu^T keeps sparse input sparse; exact top-k axes.
        _, V = la.eigh(covariance(X, mean), subset_by_index=[d - k, d - 1])
        V = V[:, ::-1]
    elif N <= _DENSE_PCA_MAX:
        Xm = np.asarray(X @ mean).ravel()
        G = X @ X.T
        G = G.toarray() if sp.issparse(G) else np.asarray(G)
        G = G - Xm[:, None] - Xm[None, :] + mean @ mean
        k = min(k, N)
        lam, U = la.eigh((G + G.T) / 2, subset_by_index=[N - k, N - 1])
        T = U[:, ::-1] * np.sqrt(np.clip(lam[::-1], 0.0, None))
        return fix_signs(T), True
    else:
        rng = as_random_state(random_state)
        v0 = rng.standard_normal(min(N, d))
        _, s, Vt = svds(_centered_operator(X, mean), k=k, v0=v0, solver="arpack")
        V = Vt[np.argsort(s)[::-1]].T
    T = np.asarray(X @ V) - mean @ V
    return fix_signs(T), True


def _orthonormal_basis(T: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Left singular vectors of ``T`` for its numerically non-zero singular values."""
    U, s, _ = svd(T)
    keep = s > _RANK_RTOL * s[0] if s.size and s[0] > 0 else np.zeros(s.size, bool)
    return fix_signs(U[:, keep].copy()), s[keep]

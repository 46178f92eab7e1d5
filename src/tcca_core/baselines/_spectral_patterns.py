"""Laplacian-eigenmap patterns of a view's graph (``view_embedding="spectral"``).

The top non-trivial eigenvectors of the normalised affinity of a graph from
:mod:`._knn_graph`: dense ``eigh`` for small graphs, Lanczos (ARPACK) on the deflated
operator for large ones, dense again when ARPACK does not converge.
"""

from __future__ import annotations

import logging

import numpy as np
import scipy.linalg as la
import scipy.sparse as sp
from scipy.sparse.linalg import ArpackNoConvergence, LinearOperator, eigsh

from .._validation import as_random_state
from ..solver.linalg import fix_signs

__all__ = ["spectral_patterns"]

# DSE's logger, as before this module was split from it: the messages keep their name.
logger = logging.getLogger("tcca_core.baselines._dse")

# Spectral mode: dense eigh of the N x N affinity up to this N, or while N is below
# _DENSE_SPECTRAL_RATIO * k (measured crossover with ARPACK at k = 300: N ~ 3500);
# tests lower it to exercise the eigsh path.
_DENSE_SPECTRAL_MAX = 1500
# Largest graph solved densely when ARPACK fails (an N x N float64: 800 MB at 10,000).
_DENSE_SPECTRAL_FALLBACK_MAX = 10_000
_DENSE_SPECTRAL_RATIO = 12
# ARPACK relative residual tolerance; 1e-10 gave subspaces equal to tol=0 within
# 1e-10 degrees at N=5000, k=300, a quarter faster.
_EIGSH_TOL = 1e-10


def spectral_patterns(W, k: int, random_state=None) -> tuple[np.ndarray, np.ndarray]:
    r"""Top-``k`` non-trivial eigenvectors of ``S = D^{-1/2} W D^{-1/2}``.

    The trivial eigenvector ``u_0 = D^{1/2} 1 / ||D^{1/2} 1||`` (eigenvalue 1) is
    removed by deflation: we take the top ``k`` eigenvectors of
    ``P (S + I) P`` with ``P = I - u_0 u_0^T``, whose spectrum is ``1 + lambda_i(S)``
    for ``i >= 1`` and 0 on ``u_0``. Unlike "compute k+1, drop the first" this stays
    right when eigenvalue 1 is repeated.

    Parameters
    ----------
    W : sparse matrix of shape (N, N)
        Symmetric non-negative affinity with positive degrees.
    k : int
        Number of eigenvectors, ``1 <= k <= N - 1``.
    random_state : int, RandomState, Generator or None
        Seeds the Lanczos start vector.

    Returns
    -------
    A : ndarray of shape (N, k)
        Orthonormal eigenvectors, eigenvalues decreasing.
    eigenvalues : ndarray of shape (k,)
        The matching eigenvalues of ``S`` (in ``[-1, 1]``).
    """
    N = W.shape[0]
    deg = np.asarray(W.sum(axis=1)).ravel()
    d_isqrt = 1.0 / np.sqrt(deg)
    S = (sp.diags(d_isqrt) @ W @ sp.diags(d_isqrt)).tocsr()
    u0 = np.sqrt(deg)
    u0 /= np.linalg.norm(u0)

    def dense():
        M = S.toarray()
        M[np.diag_indices(N)] += 1.0
        Mu = M @ u0
        M -= np.outer(u0, Mu) + np.outer(Mu, u0) - (u0 @ Mu) * np.outer(u0, u0)
        return la.eigh((M + M.T) / 2, subset_by_index=[N - k, N - 1])

    if N <= max(_DENSE_SPECTRAL_MAX, _DENSE_SPECTRAL_RATIO * k):
        lam, A = dense()
    else:

        def matmat(X):
            X = X.reshape(N, -1)
            X = X - np.outer(u0, u0 @ X)
            Y = S @ X + X
            return Y - np.outer(u0, u0 @ Y)

        op = LinearOperator(
            (N, N),
            matvec=lambda x: matmat(x).ravel(),
            matmat=matmat,
            dtype=np.float64,
        )
        rng = as_random_state(random_state)
        v0 = rng.standard_normal(N)
        v0 -= u0 * (u0 @ v0)
        try:
            lam, A = eigsh(op, k=k, which="LA", v0=v0, tol=_EIGSH_TOL)
        except ArpackNoConvergence:
            # Nearly disconnected graphs (many duplicate rows) have eigenvalues
            # clustered at 1, where Lanczos stalls; the dense solver does not.
            if N > _DENSE_SPECTRAL_FALLBACK_MAX:
                raise ValueError(
                    f"the spectral embedding of a {N}-node kNN graph did not converge "
                    "(ARPACK); the graph is probably nearly disconnected (duplicate "
                    "rows): increase n_neighbors or use view_embedding='pca'"
                ) from None
            logger.info("eigsh did not converge on %d nodes; dense eigh instead", N)
            lam, A = dense()
    order = np.argsort(lam)[::-1]
    return fix_signs(A[:, order].copy()), lam[order] - 1.0

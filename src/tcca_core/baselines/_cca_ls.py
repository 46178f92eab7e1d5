"""Multi-view CCA as coupled least squares: CCA-LS (Via, Santamaria & Perez 2007).

Rows are samples: view k is X_k of shape (N, d_k). Luo et al. (eq. 3) state the batch
problem for M views and one component as

    min (1 / (2 M (M - 1))) sum_{k,l} ||X_k h_k - X_l h_l||^2
    s.t. (1/M) sum_k h_k^T C_kk h_k = 1,

whose stationarity conditions are the generalized eigenproblem (Kettenring's MAXVAR)

    R~ h = lambda D~ h,    lambda = 1 + (M - 1) beta,

with h = [h_1; ...; h_M], R the covariance of the concatenated views, D its diagonal
blocks, R~ = R + eps I and D~ = blockdiag(C_kk + eps I) (baselines.md section 5; eps
is our regularization, needed on rank-deficient views such as one-hot SecStr). beta
is the average pairwise correlation. Further components are the next eigenvectors
(D~-orthogonal). With M = 2 this is exactly regularized two-view CCA with
beta = the canonical correlation.

:func:`cca_ls` solves the eigenproblem directly (``scipy.linalg.eigh``, size sum d_k);
:func:`cca_ls_iterative` is Via's batch LS iteration (each view regressed on the mean
of the other views' variates), kept as an independent check.
"""

from __future__ import annotations

import numpy as np
import scipy.linalg as sla
import scipy.sparse as sp

from .._validation import (
    Interval,
    as_random_state,
    check_n_components,
    check_views,
    validate_params,
)
from ..solver.linalg import (
    column_mean,
    covariance,
    fix_signs,
    project,
    singular_message,
)
from ._cca import (
    _CCABase,
    _constant_message,
    _covariance_rank,
    _raw_scale,
    check_not_constant,
)

__all__ = ["CCALS", "cca_ls", "cca_ls_iterative"]


def _blocks(dims) -> list[slice]:
    edges = np.concatenate([[0], np.cumsum(dims)])
    return [slice(int(a), int(b)) for a, b in zip(edges[:-1], edges[1:], strict=True)]


def _hstack(views):
    if any(sp.issparse(X) for X in views):
        return sp.hstack(views, format="csr")
    return np.hstack(views)


def _max_components(R: np.ndarray, blocks, mean: np.ndarray) -> int:
    ranks = [_covariance_rank(R[b, b], _raw_scale(R[b, b], mean[b])) for b in blocks]
    if 0 in ranks:
        raise ValueError(_constant_message(ranks.index(0), "CCA-LS"))
    return min(ranks)


def cca_ls(
    views, n_components: int | None = None, *, eps: float = 1e-2, center: bool = True
) -> dict:
    """CCA-LS / MAXVAR through the generalized eigenproblem eigh(R~, D~).

    Parameters
    ----------
    views : list of M >= 2 arrays or sparse matrices of shape (N, d_k)
    n_components : int or None
        r, at most min_k rank(C_kk); ``None`` takes that maximum.
    eps : float
        Ridge on the 1/N-scaled diagonal blocks.
    center : bool
        Center the views (``False``: raw second moments, zero means).

    Returns
    -------
    dict with ``means``, ``projections`` ([H_1, ..., H_M], (d_k, r) each, scaled so
    that (1/M) sum_k h_k^T C~_kk h_k = 1), ``eigenvalues`` (lambda, decreasing),
    ``correlations`` (beta = (lambda - 1) / (M - 1)) and ``r_max``.
    """
    p = validate_params(
        {"n_components": n_components, "eps": eps, "center": center},
        CCALS._parameter_constraints,
    )
    eps, center = p["eps"], p["center"]
    views = check_views(views)
    if center:
        check_not_constant(views, "CCA-LS")
    M = len(views)
    blocks = _blocks([X.shape[1] for X in views])
    means = [column_mean(X) if center else np.zeros(X.shape[1]) for X in views]
    R = covariance(_hstack(views), np.concatenate(means))
    r_max = _max_components(R, blocks, np.concatenate(means))
    if r_max == 0:
        raise ValueError("a view is constant over the samples; CCA-LS has no component")
    why = "min_k rank C_kk of the centered views"
    r = r_max if n_components is None else check_n_components(n_components, r_max, why)
    D = np.zeros_like(R)
    for b in blocks:
        D[b, b] = R[b, b]
    n = R.shape[0]
    R[np.diag_indices(n)] += eps
    D[np.diag_indices(n)] += eps
    try:
        lam, V = sla.eigh(R, D, subset_by_index=[n - r, n - 1])
    except np.linalg.LinAlgError:
        # the view whose block is worst conditioned is the one to name
        worst, largest, rcond = 0, 0.0, np.inf
        for k, b in enumerate(blocks):
            ev = np.linalg.eigvalsh(D[b, b])
            rc = max(ev.min(), 0.0) / ev.max() if ev.max() > 0 else 0.0
            if rc < rcond:
                worst, largest, rcond = k, float(ev.max() - eps), rc
        raise ValueError(
            "CCA-LS: D~ = blockdiag(C_kk + eps I) is singular; "
            + singular_message(f"view {worst}", eps, largest)
        ) from None
    # eigh is ascending and D~-normalizes (v^T D~ v = 1); the paper's constraint
    # (1/M) h^T D~ h = 1 needs h = sqrt(M) v.
    lam, V = lam[::-1], fix_signs(V[:, ::-1]) * np.sqrt(M)
    return {
        "means": means,
        "projections": [V[b] for b in blocks],
        "eigenvalues": lam,
        "correlations": (lam - 1.0) / (M - 1),
        "r_max": r_max,
    }


#: What :func:`cca_ls_iterative`'s parameters may be (see ``_parameter_constraints``).
ITERATIVE_PARAMETER_CONSTRAINTS = {
    "n_components": [Interval("integer", 1, None)],
    "eps": [Interval("real", 0, None)],
    "max_iter": [Interval("integer", 1, None)],
    "tol": [Interval("real", 0, None)],
    "random_state": ["random_state"],
}


def cca_ls_iterative(
    views,
    n_components: int,
    *,
    eps: float = 1e-2,
    max_iter: int = 500,
    tol: float = 1e-8,
    random_state=None,
) -> dict:
    """Via et al.'s batch LS algorithm for CCA-LS, all r components at once.

    Each sweep regresses, for every view k, the mean of the other views' variates
    t_k = (1/(M-1)) sum_{l != k} X_l h_l on X_k (ridge LS,
    g_k = C~_kk^(-1) X_k^T t_k / N) and takes the shifted step h_k <- h_k + (M-1) g_k,
    i.e. the power method on D~^(-1) R~ (baselines.md section 5, our decision: Via's
    unshifted h_k <- g_k can lock onto the most negative beta). The r columns are
    kept D~-orthonormal (Cholesky of H^T D~ H) and rotated by Rayleigh-Ritz on the
    r x r problem H^T R~ H. It stops when every Ritz pair has relative residual
    ||R~ h - lambda D~ h|| / ||R~ h|| < ``tol``.

    Returns
    -------
    dict with ``projections`` (scaled as in :func:`cca_ls`), ``eigenvalues``,
    ``n_iter`` and ``converged``.
    """
    p = validate_params(
        {
            "n_components": n_components,
            "eps": eps,
            "max_iter": max_iter,
            "tol": tol,
            "random_state": random_state,
        },
        ITERATIVE_PARAMETER_CONSTRAINTS,
    )
    eps, tol, max_iter = p["eps"], p["tol"], p["max_iter"]
    views = check_views(views)
    M, N = len(views), views[0].shape[0]
    dims = [X.shape[1] for X in views]
    blocks = _blocks(dims)
    means = [column_mean(X) for X in views]
    C = [covariance(X, mu) for X, mu in zip(views, means, strict=True)]
    r_max = min(
        _covariance_rank(Ck, _raw_scale(Ck, mu))
        for Ck, mu in zip(C, means, strict=True)
    )
    r = check_n_components(n_components, r_max, "min_k rank C_kk of the centered views")
    chol = [sla.cho_factor(Ck + eps * np.eye(Ck.shape[0])) for Ck in C]
    Ct = [Ck + eps * np.eye(Ck.shape[0]) for Ck in C]
    rng = as_random_state(random_state)
    H = rng.standard_normal((sum(dims), r))

    def d_tilde(H):
        return np.vstack([Ct[k] @ H[b] for k, b in enumerate(blocks)])

    def d_orthonormalize(H):
        L = np.linalg.cholesky(H.T @ d_tilde(H))
        return sla.solve_triangular(L, H.T, lower=True).T

    def regressions(H):
        """(M-1) g_k for every view, stacked: C~_kk^(-1) sum_{l != k} C_kl h_l."""
        Z = [
            project(X, mu, H[b]) for X, mu, b in zip(views, means, blocks, strict=True)
        ]
        total = sum(Z)
        steps = []
        for k, (X, mu) in enumerate(zip(views, means, strict=True)):
            t = total - Z[k]  # (M-1) t_k, the other views' variates
            XtT = np.asarray(X.T @ t) - np.outer(mu, t.sum(axis=0))
            steps.append(sla.cho_solve(chol[k], XtT / N))
        return np.vstack(steps)

    H = d_orthonormalize(H)
    converged = False
    n_iter = 0
    for n_iter in range(1, max_iter + 1):  # noqa: B007 (n_iter is reported)
        G = regressions(H)  # D~^(-1) R~ H = H + G
        RH = d_tilde(H + G)
        lam, Q = np.linalg.eigh((H.T @ RH + RH.T @ H) / 2)
        lam, Q = lam[::-1], Q[:, ::-1]
        H, RH = H @ Q, RH @ Q
        resid = np.linalg.norm(RH - d_tilde(H) * lam, axis=0)
        if np.all(resid <= tol * np.linalg.norm(RH, axis=0)):
            converged = True
            break
        H = d_orthonormalize(H + G @ Q)
    return {
        "projections": [fix_signs(H)[b] * np.sqrt(M) for b in blocks],
        "eigenvalues": lam,
        "n_iter": n_iter,
        "converged": converged,
    }


class CCALS(_CCABase):
    """CCA-LS (Via et al. 2007): multi-view CCA as coupled least squares.

    Solves R~ h = lambda D~ h for the top r eigenpairs (see the module docstring)
    and projects each view with its block: [X_1 H_1, ..., X_M H_M], the same
    concatenated form as TCCA (baselines.md section 5, our decision).

    Parameters
    ----------
    n_components : int or None, default=2
        r, at most min_k rank(C_kk); ``None`` keeps all. The solution is nested.
    eps : float, default=1e-2
        Ridge epsilon on the 1/N-scaled per-view covariances (as in CCA).
    center : bool, default=True
        Center the views first (as the paper assumes). ``False`` uses raw second
        moments; kept for the centering investigation of REPRODUCTION.md.

    Attributes
    ----------
    means_ : list of ndarray of shape (d_k,)
    projections_ : list of ndarray of shape (d_k, r)
        H_k, scaled so that (1/M) sum_k h_k^T C~_kk h_k = 1.
    eigenvalues_ : ndarray of shape (r,)
        lambda = 1 + (M - 1) beta, decreasing.
    correlations_ : ndarray of shape (r,)
        beta, the average pairwise correlation of each component.
    r_max_ : int
    n_features_in_ : list of int

    References
    ----------
    J. Via, I. Santamaria, J. Perez. A learning algorithm for adaptive canonical
    correlation analysis of several data sets. Neural Networks 20(1), 2007.
    J. R. Kettenring. Canonical analysis of several sets of variables. Biometrika
    58(3), 1971 (MAXVAR).
    Y. Luo et al., IEEE TKDE 2015, eq. (2)-(3).
    """

    _solve = staticmethod(cca_ls)

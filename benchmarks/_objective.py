"""The same objective for every method, computed from its projections alone.

TCCA (Luo et al., eq. 4.6-4.7): for component k, the directions h_pk are scaled to
h^T C~_pp h = 1 with C~_pp = C_pp + eps I (1/N covariances), and

    rho_k = (1/N) sum_n prod_p z_pnk,     z_pk = (X_p - mean_p) h_pk,

the high-order canonical correlation of the projected training data (Theorem 1).
u_pk = C~_pp^(1/2) h_pk are unit vectors in the whitened space and
rho_k = <M, u_1k o ... o u_mk>, so the CP relative error of the components with
least-squares weights is

    err^2 = 1 - b^T G^+ b / ||M||^2,   b = rho,   G = Hadamard_p (U_p^T U_p),

which for our engines equals their final ``reconstruction_errors_`` (ALS's last
update is the least-squares fit of the last factor). KTCCA: the same with
z_pk = K_p a_pk (centred kernel) and a^T (K_p^2 + eps K_p) a = 1 (eq. 4.13).

cca-zoo's TCCA whitens with (1 - c) cov_(N-1) + c I; with
c = eps' / (1 + eps'), eps' = eps N / (N - 1), its tensor is a multiple of ours, so
its components are scored on the same problem. Its KTCCA whitens kernel
eigen-features the same way; c = eps / (N - 1 + eps) makes its tensor equal to ours
up to scale and an orthogonal change of basis in each mode.
"""

from __future__ import annotations

import numpy as np


def zoo_shrinkage(kind: str, eps: float, N: int) -> float:
    """cca-zoo's ``shrinkage`` c that poses the same problem as our ``eps``."""
    if kind == "tcca":
        e = eps * N / (N - 1)
        return e / (1 + e)
    return eps / (N - 1 + eps)


def _finish(rho_raw, norms, grams, norm_sq):
    """rho (r,), and the LS CP error given raw sums and per-view norms/Grams."""
    scale = np.prod(norms, axis=0)
    rho = rho_raw / scale
    G = np.ones_like(grams[0])
    for g, nrm in zip(grams, norms, strict=True):
        G *= g / np.outer(nrm, nrm)
    err = np.nan
    if norm_sq is not None and norm_sq > 0:
        fit = float(rho @ np.linalg.lstsq(G, rho, rcond=None)[0])
        err = float(np.sqrt(max(1.0 - fit / norm_sq, 0.0)))
    return rho, err


def tcca_objective(views, means, Ws, eps, norm_sq=None, block=50_000):
    """(rho, rel_err) of linear projections ``Ws`` (d_p x r) on the training views."""
    import scipy.sparse as sp

    N, r = views[0].shape[0], Ws[0].shape[1]
    raw = np.zeros(r)
    ZtZ = [np.zeros((r, r)) for _ in views]
    for i in range(0, N, block):
        H = None
        for p, (X, mu, W) in enumerate(zip(views, means, Ws, strict=True)):
            Xb = X[i : i + block]
            Z = (np.asarray(Xb @ W) if sp.issparse(Xb) else Xb @ W) - mu @ W
            ZtZ[p] += Z.T @ Z
            H = Z if H is None else H * Z
        raw += H.sum(axis=0)
    grams = [ztz / N + eps * (W.T @ W) for ztz, W in zip(ZtZ, Ws, strict=True)]
    norms = [np.sqrt(np.diag(g)) for g in grams]
    return _finish(raw / N, norms, grams, norm_sq)


def ktcca_objective(kernels, duals, eps, jitter=1e-10, norm_sq=None):
    """(rho, rel_err) of dual coefficients ``duals`` (N x r) on centred kernels."""
    N = kernels[0].shape[0]
    H = None
    grams = []
    for K, A in zip(kernels, duals, strict=True):
        Z = K @ A
        G = K @ K + eps * K
        G = (G + G.T) / 2
        G[np.diag_indices_from(G)] += jitter * max(float(np.mean(np.diag(G))), 1e-300)
        grams.append(A.T @ G @ A)
        H = Z if H is None else H * Z
    norms = [np.sqrt(np.diag(g)) for g in grams]
    return _finish(H.sum(axis=0) / N, norms, grams, norm_sq)


def tcca_norm_sq(views, eps) -> float:
    """||M||^2 of our whitened covariance tensor, by the cheapest exact route."""
    from tcca_core.solver.implicit import ImplicitMoment
    from tcca_core.solver.linalg import column_mean, covariance, inv_sqrt_psd
    from tcca_core.solver.views import WhitenedView

    wv = []
    for X in views:
        mu = column_mean(X)
        wv.append(WhitenedView(X, mu, inv_sqrt_psd(covariance(X, mu), eps)))
    return ImplicitMoment(wv).norm_sq()


def ktcca_norm_sq(kernels, eps, jitter=1e-10) -> float:
    """||S||^2 of our KTCCA tensor for centred kernels."""
    from tcca_core._ktcca import kernel_whitening
    from tcca_core.solver.implicit import ImplicitMoment
    from tcca_core.solver.views import WhitenedView

    wv = [WhitenedView(kernel_whitening(K, eps, jitter)[1]) for K in kernels]
    return ImplicitMoment(wv).norm_sq()

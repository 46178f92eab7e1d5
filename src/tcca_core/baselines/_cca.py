"""Two-view regularized CCA (Foster et al. 2008) and kernel CCA (Hardoon et al. 2004).

Rows are samples: view p is X_p of shape (N, d_p), the transpose of the paper's X_p.
CCA (BST) and CCA (AVG) of Luo et al. (5.1) run these on every pair of views; the
protocol (:mod:`tcca_core.protocol`) does the pair selection and score averaging.

Linear CCA (baselines.md section 4). With centered views, C_pq = X_p^T X_q / N and
C~_pp = C_pp + eps I, maximize h_p^T C_pq h_q subject to h_p^T C~_pp h_p = 1. The
closed form whitens, T = C~_pp^(-1/2) C_pq C~_qq^(-1/2) = U Sigma V^T, and
W_p = C~_pp^(-1/2) U, W_q = C~_qq^(-1/2) V; Sigma holds the regularized canonical
correlations, W^T C~ W = I and W_p^T C_pq W_q = Sigma. The representation is
[X_p W_p, X_q W_q] (Foster et al.'s 2r; no scaling by the correlations).

Kernel CCA (baselines.md section 8; Luo et al. 5.2). With centered kernels, maximize
a_p^T K_p K_q a_q subject to a_p^T (K_p^2 + eps K_p) a_p = 1 (Hardoon's PLS-style
regularization). With K_p = V diag(mu) V^T and S_p = V diag(sqrt(mu / (mu + eps))) V^T,
the SVD S_p S_q = U Sigma V'^T gives the regularized correlations Sigma and the
training variates K_p a_p = S_p U, without inverting a singular kernel.

Both solutions are nested: the first r columns of the solution for r_max are the
solution for r, so a sweep over r needs one fit (``n_components=None``).
"""

from __future__ import annotations

from itertools import combinations

import numpy as np
import scipy.linalg as sla
from sklearn.base import BaseEstimator, TransformerMixin
from sklearn.utils.extmath import svd_flip
from sklearn.utils.validation import check_is_fitted

from .._linalg import (
    LinearProjectionMixin,
    column_mean,
    covariance,
    cross_covariance,
    inv_sqrt_psd,
)
from .._multiview import MultiViewMixin
from .._validation import _is_constant, check_eps, check_n_components, check_views
from ..kernels import ViewKernel, center_cross_kernel, center_kernel

__all__ = ["CCA", "KCCA", "cca", "kcca_from_kernels", "view_pairs"]


def view_pairs(m: int) -> list[tuple[int, int]]:
    """The m(m-1)/2 pairs (p, q), p < q, in lexicographic order."""
    return list(combinations(range(m), 2))


def _numerical_rank(C: np.ndarray, scale: float | None = None) -> int:
    """Rank of a covariance C, with rounding judged against ``scale``.

    ``scale`` is the size of the raw second moments the covariance was computed
    from (mean^2 + variance): centering a constant column whose mean is not exactly
    representable leaves ~1e-33 of rounding in C, which matrix_rank's tolerance,
    relative to C itself, counts as a direction. The tolerance here is relative to
    the data, as TCCA's checks are.
    """
    if scale is None:
        return int(np.linalg.matrix_rank(C, hermitian=True))
    tol = max(float(scale), 0.0) * C.shape[0] * np.finfo(float).eps
    return int(np.linalg.matrix_rank(C, tol=tol, hermitian=True))


def _raw_scale(C: np.ndarray, mean: np.ndarray) -> float:
    """Largest raw second moment mean^2 + variance of the columns behind C."""
    return float(np.max(np.diag(C) + mean**2, initial=0.0))


def _constant_message(p: int, name: str) -> str:
    return (
        f"view {p} is constant over the samples to working precision (its variance "
        f"is rounding error next to its values); {name} has no component"
    )


def check_not_constant(views, name: str) -> None:
    """A view whose rows are all equal is zero once centered: named, not fitted."""
    for p, X in enumerate(views):
        if _is_constant(X):
            raise ValueError(
                f"view {p} is constant over the samples (all rows are equal): "
                f"centered it is zero, so {name} has no component"
            )


def _svd(T: np.ndarray, full_matrices: bool = False):
    """numpy's SVD (LAPACK gesdd), falling back to the slower but more robust
    gesvd driver when gesdd does not converge (it happens on Ads' nearly
    rank-deficient cross-covariances)."""
    try:
        return np.linalg.svd(T, full_matrices=full_matrices)
    except np.linalg.LinAlgError:
        return sla.svd(
            T, full_matrices=full_matrices, lapack_driver="gesvd", check_finite=False
        )


def _check_two_views(views, name: str, **kw) -> list:
    views = check_views(views, **kw)
    if len(views) != 2:
        raise ValueError(
            f"{name} takes exactly 2 views, got {len(views)}; use it on pairs of "
            "views (CCA (BST)/(AVG) in tcca_core.protocol) or use CCALS for m views"
        )
    return views


def cca(
    views, n_components: int | None = None, *, eps: float = 1e-2, center: bool = True
) -> dict:
    """Regularized two-view CCA in closed form (Foster et al. 2008; baselines.md 4).

    Parameters
    ----------
    views : list of two arrays or sparse matrices of shape (N, d_p)
    n_components : int or None
        r; ``None`` means r_max = min(rank C_pp, rank C_qq), the number of possibly
        non-zero canonical correlations.
    eps : float
        Ridge on the 1/N-scaled covariances, C~_pp = C_pp + eps I.
    center : bool
        Center the views (``False``: raw second moments, zero means).

    Returns
    -------
    dict with ``means`` ([mu_p, mu_q]), ``projections`` ([W_p, W_q], (d, r) each),
    ``correlations`` (sigma_1 >= ... >= sigma_r) and ``r_max``.
    """
    eps = check_eps(eps)
    Xp, Xq = _check_two_views(views, "CCA")
    if center:
        check_not_constant([Xp, Xq], "CCA")
        mp, mq = column_mean(Xp), column_mean(Xq)
    else:
        mp, mq = np.zeros(Xp.shape[1]), np.zeros(Xq.shape[1])
    Cpp, Cqq = covariance(Xp, mp), covariance(Xq, mq)
    Cpq = cross_covariance(Xp, Xq, mp, mq)
    ranks = [
        _numerical_rank(Cpp, _raw_scale(Cpp, mp)),
        _numerical_rank(Cqq, _raw_scale(Cqq, mq)),
    ]
    r_max = min(ranks)
    if r_max == 0:
        raise ValueError(_constant_message(ranks.index(0), "CCA"))
    why = "min(rank C_pp, rank C_qq) of the centered views"
    r = r_max if n_components is None else check_n_components(n_components, r_max, why)
    Wp, Wq = inv_sqrt_psd(Cpp, eps, "view 0"), inv_sqrt_psd(Cqq, eps, "view 1")
    T = Wp @ Cpq @ Wq
    U, s, Vt = _svd(T)
    U, Vt = svd_flip(U, Vt)  # a deterministic sign per component
    return {
        "means": [mp, mq],
        "projections": [Wp @ U[:, :r], Wq @ Vt[:r].T],
        "correlations": s[:r],
        "r_max": r_max,
    }


class CCA(MultiViewMixin, LinearProjectionMixin, TransformerMixin, BaseEstimator):
    """Regularized two-view CCA (Foster, Johnson, Kakade & Zhang 2008).

    Maximizes h_p^T C_pq h_q subject to h_p^T (C_pp + eps I) h_p = 1 and
    h_q^T (C_qq + eps I) h_q = 1 (1/N-scaled covariances of the centered views),
    with further components C~-orthogonal to the earlier ones; solved in closed form
    by whitening and an SVD (see the module docstring).

    Parameters
    ----------
    n_components : int or None, default=2
        r, at most min(rank C_pp, rank C_qq); ``None`` keeps all of them. Because the
        solution is nested, ``transform(views, per_view=True)`` sliced to the first r
        columns of each view equals the fit with ``n_components=r``.
    eps : float, default=1e-2
        The regularizer epsilon (Luo et al. use 1e-2 on SecStr and Ads and choose it
        in {1e-5, ..., 1e4} on NUS-WIDE).
    center : bool, default=True
        Center the views first (as the paper assumes). ``False`` uses raw second
        moments; kept for the centering investigation of REPRODUCTION.md.

    Attributes
    ----------
    means_ : list of ndarray of shape (d_p,)
    projections_ : list of ndarray of shape (d_p, r)
        W_p with W_p^T C~_pp W_p = I and W_p^T C_pq W_q = diag(correlations_).
    correlations_ : ndarray of shape (r,)
        Regularized canonical correlations, decreasing.
    r_max_ : int
    n_features_in_ : list of int

    See Also
    --------
    KCCA : the kernel version.
    tcca_core.baselines.CCALS : m views.

    References
    ----------
    D. P. Foster, R. Johnson, S. M. Kakade, T. Zhang. Multi-view dimensionality
    reduction via canonical correlation analysis. TTI-TR-2008-4, 2008.
    Y. Luo et al. Tensor canonical correlation analysis for multi-view dimension
    reduction. IEEE TKDE 27(11), 2015, section 5.1 (CCA (BST), CCA (AVG)).

    Examples
    --------
    >>> import numpy as np
    >>> from tcca_core.baselines import CCA
    >>> rng = np.random.default_rng(0)
    >>> z = rng.standard_normal((100, 1))
    >>> views = [z + 0.1 * rng.standard_normal((100, 3)),
    ...          z + rng.standard_normal((100, 4))]
    >>> CCA(n_components=2).fit_transform(views).shape
    (100, 4)
    """

    def __init__(
        self, n_components: int | None = 2, *, eps: float = 1e-2, center: bool = True
    ):
        self.n_components = n_components
        self.eps = eps
        self.center = center

    def fit(self, views, y=None):
        """Fit on two views, each (n_samples, d_p), dense or scipy.sparse."""
        out = cca(views, self.n_components, eps=self.eps, center=self.center)
        self.means_ = out["means"]
        self.projections_ = out["projections"]
        self.correlations_ = out["correlations"]
        self.r_max_ = out["r_max"]
        self.n_features_in_ = [W.shape[0] for W in self.projections_]
        return self


def _kernel_root(K: np.ndarray, eps: float):
    """Eigenvalues mu (clipped, tiny ones zeroed), eigenvectors V and rank of K."""
    mu, V = np.linalg.eigh((K + K.T) / 2)
    mu = np.clip(mu, 0.0, None)
    tol = mu.max(initial=0.0) * K.shape[0] * np.finfo(float).eps
    mu[mu <= tol] = 0.0
    return mu, V, int(np.count_nonzero(mu))


def kcca_from_kernels(
    Kp: np.ndarray, Kq: np.ndarray, n_components: int | None = None, *, eps: float
) -> dict:
    """Regularized KCCA on two centered N x N kernels (baselines.md section 8).

    Maximizes a_p^T K_p K_q a_q s.t. a_p^T (K_p^2 + eps K_p) a_p = 1 (same for q),
    eps applied to the raw centered kernels (no 1/N), as Hardoon et al. (their
    (K + kappa I)^2 ~ K^2 + 2 kappa K, so eps = 2 kappa).

    Returns
    -------
    dict with ``dual_coef`` ([a_p, a_q], (N, r) each; the training variates are
    K_p a_p = S_p U), ``train_variates`` ([S_p U, S_q V']), ``correlations`` and
    ``r_max`` (min of the kernels' numerical ranks).
    """
    eps = check_eps(eps)
    N = Kp.shape[0]
    roots = []
    for K in (Kp, Kq):
        mu, V, rank = _kernel_root(K, eps)
        s = np.sqrt(np.divide(mu, mu + eps, out=np.zeros_like(mu), where=mu > 0))
        # a = V diag(1 / sqrt(mu (mu + eps))) V^T S-coordinates, on the range of K:
        # then K a = V diag(sqrt(mu / (mu + eps))) V^T (...) = S (...).
        w = np.divide(
            1.0, np.sqrt(mu * (mu + eps)), out=np.zeros_like(mu), where=mu > 0
        )
        roots.append(((V * s) @ V.T, (V * w) @ V.T, rank))
    (Sp, Ap, rp), (Sq, Aq, rq) = roots
    r_max = min(rp, rq)
    if r_max == 0:
        raise ValueError("a centered kernel is zero; KCCA has no component")
    why = f"min of the centered kernels' ranks (at most N - 1 = {N - 1})"
    r = r_max if n_components is None else check_n_components(n_components, r_max, why)
    U, sig, Vt = _svd(Sp @ Sq, full_matrices=True)
    U, Vt = svd_flip(U, Vt)
    U, Vq = U[:, :r], Vt[:r].T
    return {
        "dual_coef": [Ap @ U, Aq @ Vq],
        "train_variates": [Sp @ U, Sq @ Vq],
        "correlations": sig[:r],
        "r_max": r_max,
    }


def _per_view(value, m: int, name: str) -> list:
    if isinstance(value, (list, tuple)):
        if len(value) != m:
            raise ValueError(f"{name} has {len(value)} entries but there are {m} views")
        return list(value)
    return [value] * m


class KCCA(MultiViewMixin, TransformerMixin, BaseEstimator):
    """Regularized kernel CCA of two views (Hardoon, Szedmak & Shawe-Taylor 2004).

    Kernels are centered in feature space over the training samples; the problem and
    its stable closed form are in the module docstring. ``transform`` centers the
    kernel between new and training samples with the training statistics and returns
    sqrt(N) [K_p(new) a_p, K_q(new) a_q], the sqrt(N) putting the columns at about
    unit variance like linear CCA variates (baselines.md section 0, output scale).
    With a linear kernel and ``eps = N * eps_cca`` this is exactly :class:`CCA` with
    ``eps_cca``.

    Parameters
    ----------
    n_components : int or None, default=2
        r, at most the smaller numerical rank of the centered kernels (<= N - 1);
        ``None`` keeps all. Nested like :class:`CCA`.
    eps : float, default=1e-2
        Epsilon of the constraint a^T (K^2 + eps K) a = 1 (Luo et al. choose it in
        {1e-7, ..., 1e2}).
    kernel : str, callable or list of two, default="l2"
        As in :class:`tcca_core.kernels.ViewKernel`: ``"chi2"``/``"l2"`` are the
        paper's exp(-d / max d) kernels; ``"precomputed"`` takes N x N kernels in
        ``fit`` and (n_new, N) cross kernels in ``transform``.
    kernel_params : dict or list of two dicts, optional
        Extra ViewKernel arguments (e.g. ``gamma`` for ``"rbf"``).

    Attributes
    ----------
    dual_coef_ : list of ndarray of shape (N, r)
        a_p (without the sqrt(N) of ``transform``).
    correlations_ : ndarray of shape (r,)
    train_variates_ : list of ndarray of shape (N, r)
        sqrt(N) K_p a_p on the training samples.
    kernels_ : list of ViewKernel
    center_stats_ : list
    n_train_ : int
    r_max_ : int

    References
    ----------
    D. R. Hardoon, S. Szedmak, J. Shawe-Taylor. Canonical correlation analysis: an
    overview with application to learning methods. Neural Computation 16(12), 2004.
    Y. Luo et al., IEEE TKDE 2015, section 5.2 (KCCA (BST), KCCA (AVG)).
    """

    def __init__(
        self,
        n_components: int | None = 2,
        *,
        eps: float = 1e-2,
        kernel="l2",
        kernel_params=None,
    ):
        self.n_components = n_components
        self.eps = eps
        self.kernel = kernel
        self.kernel_params = kernel_params

    def fit(self, views, y=None):
        """Fit on two views (or two N x N kernels with kernel="precomputed")."""
        eps = check_eps(self.eps)
        kernels = _per_view(self.kernel, 2, "kernel")
        params = _per_view(self.kernel_params or {}, 2, "kernel_params")
        precomputed = any(k == "precomputed" for k in kernels)
        views = _check_two_views(views, "KCCA", accept_sparse=not precomputed)
        N = views[0].shape[0]
        self.kernels_, self.center_stats_, Ks = [], [], []
        for p, (X, k, kp) in enumerate(zip(views, kernels, params, strict=True)):
            vk = ViewKernel(k, **kp)
            K = vk.fit(X)
            if K.shape != (N, N):
                raise ValueError(
                    f"the kernel of view {p} must be {N} x {N}, got {K.shape}"
                )
            Kc, stats = center_kernel(K)
            self.kernels_.append(vk)
            self.center_stats_.append(stats)
            Ks.append(Kc)
        out = kcca_from_kernels(Ks[0], Ks[1], self.n_components, eps=eps)
        self.dual_coef_ = out["dual_coef"]
        self.correlations_ = out["correlations"]
        self.train_variates_ = [np.sqrt(N) * Z for Z in out["train_variates"]]
        self.r_max_ = out["r_max"]
        self.n_train_ = N
        return self

    def transform(self, views, per_view: bool = False):
        """sqrt(N) [K~_p(new, train) a_p, K~_q(new, train) a_q], shape (n, 2 r)."""
        check_is_fitted(self, "dual_coef_")
        precomputed = any(vk.kernel == "precomputed" for vk in self.kernels_)
        views = _check_two_views(
            views,
            "KCCA",
            min_samples=1,
            accept_sparse=not precomputed,
            n_features=[vk.n_features_in_ for vk in self.kernels_],
        )
        Z = []
        for vk, stats, A, X in zip(
            self.kernels_, self.center_stats_, self.dual_coef_, views, strict=True
        ):
            Kx = center_cross_kernel(vk.cross(X), stats)
            Z.append(np.sqrt(self.n_train_) * (Kx @ A))
        return Z if per_view else np.hstack(Z)

    def fit_transform(self, views, y=None, per_view: bool = False):
        return self.fit(views).transform(views, per_view=per_view)

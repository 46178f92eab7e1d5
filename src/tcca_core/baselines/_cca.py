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
training variates K_p a_p = S_p U, without inverting a singular kernel. It is
computed in the kernels' eigenbases (an SVD of diag(s_p) V_p^T V_q diag(s_q), or its
top r singular triplets only), and each kernel's eigendecomposition is computed once
and shared by every pair and eps it enters (:func:`kernel_eigen`).

Both solutions are nested: the first r columns of the solution for r_max are the
solution for r, so a sweep over r needs one fit (``n_components=None``).
"""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from itertools import combinations
from typing import ClassVar

import numpy as np
import scipy.linalg as sla
from sklearn.base import BaseEstimator, TransformerMixin
from sklearn.utils.validation import check_is_fitted

from .._multiview import MultiViewMixin
from .._validation import (
    Interval,
    ParamsMixin,
    _is_constant,
    check_n_components,
    check_views,
    validate_params,
)
from ..kernels import ViewKernel, center_cross_kernel, center_kernel
from ..solver.linalg import (
    LinearProjectionMixin,
    column_mean,
    column_signs,
    covariance,
    cross_covariance,
    inv_sqrt_psd,
    numerical_rank,
    svd,
)

__all__ = [
    "CCA",
    "KCCA",
    "KernelEigen",
    "cca",
    "clear_kernel_eigen_cache",
    "kcca_from_kernels",
    "kernel_eigen",
    "view_pairs",
]


def view_pairs(m: int) -> list[tuple[int, int]]:
    """Return the m(m-1)/2 pairs (p, q), p < q, in lexicographic order."""
    return list(combinations(range(m), 2))


def _covariance_rank(C: np.ndarray, scale: float | None = None) -> int:
    """Rank of a covariance C, with rounding judged against ``scale``.

    ``scale`` is the size of the raw second moments the covariance was computed
    from (mean^2 + variance): centering a constant column whose mean is not exactly
    representable leaves ~1e-33 of rounding in C, which a tolerance relative to C
    itself would count as a direction (:func:`tcca_core.solver.linalg.numerical_rank`).
    """
    return numerical_rank(np.linalg.eigvalsh(C), scale=scale)


def _raw_scale(C: np.ndarray, mean: np.ndarray) -> float:
    """Largest raw second moment mean^2 + variance of the columns behind C."""
    return float(np.max(np.diag(C) + mean**2, initial=0.0))


def _constant_message(p: int, name: str) -> str:
    return (
        f"view {p} is constant over the samples to working precision (its variance "
        f"is rounding error next to its values); {name} has no component"
    )


def check_not_constant(views, name: str) -> None:
    """Reject a view whose rows are all equal (zero once centered), naming it."""
    for p, X in enumerate(views):
        if _is_constant(X):
            raise ValueError(
                f"view {p} is constant over the samples (all rows are equal): "
                f"centered it is zero, so {name} has no component"
            )


def _check_two_views(views, name: str, **kw) -> list:
    views = check_views(views, **kw)
    if len(views) != 2:
        raise ValueError(
            f"{name} takes exactly 2 views, got {len(views)}; use it on pairs of "
            "views (CCA (BST)/(AVG) in tcca_core.protocol) or use CCALS for m views"
        )
    return views


class _CCABase(
    ParamsMixin, MultiViewMixin, LinearProjectionMixin, TransformerMixin, BaseEstimator
):
    """The linear CCAs' shared parameters, checks and ``fit`` (as scikit-learn's _PLS).

    A subclass names its solver, ``_solve(views, n_components, eps=, center=)``;
    each entry of the dict it returns becomes a fitted attribute (``key`` ->
    ``key_``). The parameters and their checks are the same for every linear CCA.
    """

    _parameter_constraints: ClassVar[dict] = {
        "n_components": [Interval("integer", 1, None), None],
        "eps": [Interval("real", 0, None)],
        "center": ["boolean"],
    }
    _solve: ClassVar[Callable[..., dict]]

    def __init__(
        self, n_components: int | None = 2, *, eps: float = 1e-2, center: bool = True
    ):
        self.n_components = n_components
        self.eps = eps
        self.center = center

    def fit(self, views, y=None):
        """Fit on the views, each (n_samples, d_k), dense or scipy.sparse.

        CCA takes two views, CCALS M >= 2.
        """
        p = self._validate_params()
        out = self._solve(views, p["n_components"], eps=p["eps"], center=p["center"])
        for key, value in out.items():  # means_, projections_, correlations_, ...
            setattr(self, f"{key}_", value)
        self.n_features_in_ = [W.shape[0] for W in self.projections_]
        return self


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
    p = validate_params(
        {"n_components": n_components, "eps": eps, "center": center},
        CCA._parameter_constraints,
    )
    eps, center = p["eps"], p["center"]
    Xp, Xq = _check_two_views(views, "CCA")
    if center:
        check_not_constant([Xp, Xq], "CCA")
        mp, mq = column_mean(Xp), column_mean(Xq)
    else:
        mp, mq = np.zeros(Xp.shape[1]), np.zeros(Xq.shape[1])
    Cpp, Cqq = covariance(Xp, mp), covariance(Xq, mq)
    Cpq = cross_covariance(Xp, Xq, mp, mq)
    ranks = [
        _covariance_rank(Cpp, _raw_scale(Cpp, mp)),
        _covariance_rank(Cqq, _raw_scale(Cqq, mq)),
    ]
    r_max = min(ranks)
    if r_max == 0:
        raise ValueError(_constant_message(ranks.index(0), "CCA"))
    why = "min(rank C_pp, rank C_qq) of the centered views"
    r = r_max if n_components is None else check_n_components(n_components, r_max, why)
    Wp, Wq = inv_sqrt_psd(Cpp, eps, "view 0"), inv_sqrt_psd(Cqq, eps, "view 1")
    T = Wp @ Cpq @ Wq
    U, s, Vt = svd(T)
    signs = column_signs(U)  # a deterministic sign per component
    U, Vt = U * signs, Vt * signs[:, None]
    return {
        "means": [mp, mq],
        "projections": [Wp @ U[:, :r], Wq @ Vt[:r].T],
        "correlations": s[:r],
        "r_max": r_max,
    }


class CCA(_CCABase):
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

    _solve = staticmethod(cca)


#: Largest total size (bytes) of the kernel eigendecompositions kept by
#: :func:`kernel_eigen` (least recently used ones are dropped first).
KERNEL_EIGEN_CACHE_BYTES = 512 * 2**20
_eigen_cache: OrderedDict[tuple, KernelEigen] = OrderedDict()
_eigen_lock = threading.Lock()

#: The top-``r`` route of :func:`kcca_from_kernels` (``n_components`` given) is
#: taken for ``r <= _TOP_R_FRACTION * min(rank K_p, rank K_q)``; measured single-
#: threaded at N = 1000, eigh of the Gram matrix with a subset of eigenpairs is
#: 1.5x (r = N/2) to 5x (r = N/100) cheaper than the full SVD.
_TOP_R_FRACTION = 0.5
#: ... and kept only when ``sigma_r >= _TOP_R_MIN_RATIO * sigma_1``: the Gram route
#: squares the singular values, so its error in sigma_i and in the singular vectors
#: grows like ``eps * (sigma_1 / sigma_i)^2``; at the bound that is ~1e-10, below it
#: the SVD route is taken.
_TOP_R_MIN_RATIO = 1e-3


@dataclass(frozen=True, eq=False)
class KernelEigen:
    """Eigendecomposition ``K = V diag(mu) V^T`` of a centered N x N kernel.

    ``mu`` is ascending (as ``eigh`` returns it), clipped at 0, with eigenvalues at
    or below ``max(mu) * N * machine eps`` set to 0; ``rank`` counts the others. The
    arrays are read-only: instances are shared through the cache of
    :func:`kernel_eigen`.
    """

    mu: np.ndarray
    V: np.ndarray
    rank: int

    @property
    def nbytes(self) -> int:
        return self.mu.nbytes + self.V.nbytes


def _eigen_key(K: np.ndarray) -> tuple:
    h = hashlib.blake2b(digest_size=20)
    h.update(np.ascontiguousarray(K).view(np.uint8).ravel())  # type: ignore[arg-type]
    return (K.shape, K.dtype.str, h.digest())


def kernel_eigen(K: np.ndarray, *, cache: bool = True) -> KernelEigen:
    """Eigendecomposition of the centered kernel ``K``, computed once per content.

    KCCA needs only the eigenpairs of each view's kernel, which depend neither on
    the other view of the pair nor on ``eps``; every pair fit and every ``eps`` of a
    grid on the same kernel would otherwise repeat an ``O(N^3)`` ``eigh``. The result
    is therefore cached, keyed by a digest of ``(K + K^T) / 2`` (hashing costs
    ``O(N^2)``), up to ``KERNEL_EIGEN_CACHE_BYTES``; a hit returns the very arrays a
    miss would have computed, so results do not depend on the cache.
    :func:`clear_kernel_eigen_cache` empties it.

    Parameters
    ----------
    K : ndarray of shape (N, N)
        A centered kernel (symmetrized here).
    cache : bool, default=True
        Look up and store the result in the cache.

    Returns
    -------
    KernelEigen
    """
    Ks = (K + K.T) / 2
    key = _eigen_key(Ks) if cache else None
    if key is not None:
        with _eigen_lock:
            hit = _eigen_cache.get(key)
            if hit is not None:
                _eigen_cache.move_to_end(key)
                return hit
    mu, V = np.linalg.eigh(Ks)
    mu = np.clip(mu, 0.0, None)
    tol = mu.max(initial=0.0) * K.shape[0] * np.finfo(float).eps
    mu[mu <= tol] = 0.0
    mu.flags.writeable = False
    V.flags.writeable = False
    out = KernelEigen(mu, V, int(np.count_nonzero(mu)))
    if key is not None and out.nbytes <= KERNEL_EIGEN_CACHE_BYTES:
        with _eigen_lock:
            _eigen_cache[key] = out
            total = sum(e.nbytes for e in _eigen_cache.values())
            while total > KERNEL_EIGEN_CACHE_BYTES:
                _, old = _eigen_cache.popitem(last=False)
                total -= old.nbytes
    return out


def clear_kernel_eigen_cache() -> None:
    """Drop every cached kernel eigendecomposition (see :func:`kernel_eigen`)."""
    with _eigen_lock:
        _eigen_cache.clear()


def _top_singular(M: np.ndarray, r: int):
    """Top-``r`` singular triplets of ``M`` from ``eigh`` of ``M M^T`` (subset).

    ``None`` when ``sigma_r`` is too small next to ``sigma_1`` for that route.
    """
    n = M.shape[0]
    lam, X = sla.eigh(
        M @ M.T, subset_by_index=[n - r, n - 1], driver="evr", check_finite=False
    )
    lam, X = lam[::-1], X[:, ::-1]
    if not lam[-1] > (_TOP_R_MIN_RATIO**2) * lam[0] > 0:
        return None
    sig = np.sqrt(lam)
    return X, sig, (M.T @ X) / sig


def kcca_from_kernels(
    Kp: np.ndarray,
    Kq: np.ndarray,
    n_components: int | None = None,
    *,
    eps: float,
    eigen: tuple[KernelEigen, KernelEigen] | None = None,
) -> dict:
    """Regularized KCCA on two centered N x N kernels (baselines.md section 8).

    Maximizes a_p^T K_p K_q a_q s.t. a_p^T (K_p^2 + eps K_p) a_p = 1 (same for q),
    eps applied to the raw centered kernels (no 1/N), as Hardoon et al. (their
    (K + kappa I)^2 ~ K^2 + 2 kappa K, so eps = 2 kappa).

    Computation. With K_p = V_p diag(mu_p) V_p^T restricted to its range (rank r_p
    columns), s_p = sqrt(mu_p / (mu_p + eps)) and w_p = 1 / sqrt(mu_p (mu_p + eps)),
    the whitened cross operator S_p S_q = V_p M V_q^T with the r_p x r_q matrix
    M = diag(s_p) V_p^T V_q diag(s_q). From M = X Sigma Y^T: U = V_p X (left singular
    vectors of S_p S_q), a_p = V_p diag(w_p) X and K_p a_p = V_p diag(s_p) X, without
    forming S_p, A_p or their product. The kernels' eigenpairs come from
    :func:`kernel_eigen` (cached: shared across pairs and eps values). With
    ``n_components = r <= min(r_p, r_q) / 2`` only the top r singular triplets are
    computed, from ``eigh`` of ``M M^T`` with an eigenvalue subset, unless
    ``sigma_r < 1e-3 sigma_1`` (then the SVD). Same solution as the formula
    ``svd(S_p S_q)`` (tests: 1e-8), up to a rotation inside a repeated correlation.

    Parameters
    ----------
    Kp, Kq : ndarray of shape (N, N)
        Centered kernels.
    n_components : int or None
        r; None: r_max.
    eps : float
    eigen : pair of KernelEigen, optional
        The kernels' eigendecompositions, if already known (``kernel_eigen``).

    Returns
    -------
    dict with ``dual_coef`` ([a_p, a_q], (N, r) each; the training variates are
    K_p a_p = S_p U), ``train_variates`` ([S_p U, S_q V']), ``correlations`` and
    ``r_max`` (min of the kernels' numerical ranks).
    """
    eps = validate_params(
        {"n_components": n_components, "eps": eps}, KCCA._parameter_constraints
    )["eps"]
    N = Kp.shape[0]
    Ep, Eq = (kernel_eigen(Kp), kernel_eigen(Kq)) if eigen is None else eigen
    r_max = min(Ep.rank, Eq.rank)
    if r_max == 0:
        raise ValueError("a centered kernel is zero; KCCA has no component")
    why = f"min of the centered kernels' ranks (at most N - 1 = {N - 1})"
    r = r_max if n_components is None else check_n_components(n_components, r_max, why)
    factors = []
    for E in (Ep, Eq):
        # The range of K (S and A vanish on its complement): mu is ascending, so
        # its zeros are the first N - rank entries; V[:, k0:] is a view, no copy.
        k0 = E.mu.size - E.rank
        mu, V = E.mu[k0:], E.V[:, k0:]
        factors.append((V, np.sqrt(mu / (mu + eps)), 1.0 / np.sqrt(mu * (mu + eps))))
    (Vp, sp_, wp), (Vq, sq, wq) = factors
    M = (Vp.T @ Vq) * sp_[:, None] * sq[None, :]
    top = None
    if n_components is not None and r <= _TOP_R_FRACTION * r_max:
        top = _top_singular(M, r)
    if top is None:
        X, sig, Yt = svd(M)
        X, sig, Y = X[:, :r], sig[:r], Yt[:r].T
    else:
        X, sig, Y = top
    # The package's sign convention on the N x r left singular vectors
    # U = V_p X of S_p S_q.
    U = Vp @ X
    signs = column_signs(U)
    del U
    X, Y = X * signs, Y * signs
    return {
        "dual_coef": [Vp @ (wp[:, None] * X), Vq @ (wq[:, None] * Y)],
        "train_variates": [Vp @ (sp_[:, None] * X), Vq @ (sq[:, None] * Y)],
        "correlations": sig,
        "r_max": r_max,
    }


def _per_view(value, m: int, name: str) -> list:
    if isinstance(value, (list, tuple)):
        if len(value) != m:
            raise ValueError(f"{name} has {len(value)} entries but there are {m} views")
        return list(value)
    return [value] * m


class KCCA(ParamsMixin, MultiViewMixin, TransformerMixin, BaseEstimator):
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

    _parameter_constraints: ClassVar[dict] = {
        "n_components": [Interval("integer", 1, None), None],
        "eps": [Interval("real", 0, None)],
        "kernel": [str, "callable", list, tuple],
        "kernel_params": [dict, list, tuple, None],
    }

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
        eps = self._validate_params()["eps"]
        kernels = _per_view(self.kernel, 2, "kernel")
        params = _per_view(self.kernel_params or {}, 2, "kernel_params")
        precomputed = any(k == "precomputed" for k in kernels)
        views = _check_two_views(views, "KCCA", accept_sparse=not precomputed)
        N = views[0].shape[0]
        self.kernels_, self.center_stats_, Ks = [], [], []
        for p, (X, k, kp) in enumerate(zip(views, kernels, params, strict=True)):
            vk = ViewKernel.for_view(k, kp, p)
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

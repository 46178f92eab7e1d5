"""Kernel tensor CCA (Luo et al., TKDE 2015, section 4.4).

With kernel matrices K_p (N x N) and the paper's PLS-style constraint
a_p^T (K_p^2 + eps K_p) a_p = 1, the Cholesky factor K_p^2 + eps K_p = L_p^T L_p turns
the problem into the best rank-1 approximation of
S = K_12..m x_1 L_1^(-T) ... x_m L_m^(-T)  (eq. 4.14), with
K_12..m = (1/N) sum_n k_1n o ... o k_mn (Theorem 3). So S is the rank-N CP tensor
(1/N) sum_n y_1n o ... o y_mn with Y_p = K_p L_p^(-1): the same moment tensor as
linear TCCA, and the same engines. The tensor-free one costs O(N^2 r) per sweep
instead of O(N^m r), and O(N r) memory instead of O(N^m).
Projections are Z_p = K_p L_p^(-1) B_p (eq. 4.15); new samples use the kernel between
them and the training samples.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import ClassVar

import numpy as np
import scipy.linalg as sla
from sklearn.base import BaseEstimator, TransformerMixin

from ._multiview import HighOrderCorrelationMixin
from ._progress import VERBOSE_CONSTRAINT, fit_progress
from ._spikes import kernel_neighbours, spike_message
from ._validation import (
    Interval,
    ParamsMixin,
    check_varying,
    check_views,
    validate_params,
)
from .kernels import ViewKernel, center_cross_kernel, center_kernel
from .solver.convergence import warn_unconverged
from .solver.engine import MomentEngine
from .solver.params import SOLVER_CONSTRAINTS, SolverParams, check_ranks, is_dask_views
from .solver.path import rank_path
from .solver.views import WhitenedView

__all__ = ["KTCCA", "kernel_whitening", "ktcca_path"]

#: KTCCA's own parameters, besides ``n_components`` and the solver's
_KERNEL_PARAMS = ("kernel", "kernel_params", "center", "jitter", "verbose")


def _per_view(value, m: int, name: str) -> list:
    if isinstance(value, (list, tuple)):
        if len(value) != m:
            raise ValueError(f"{name} has {len(value)} entries but there are {m} views")
        return list(value)
    return [value] * m


def _check_psd(K: np.ndarray, p: int) -> None:
    """Reject a precomputed kernel that is not symmetric positive semidefinite."""
    scale = max(float(np.abs(K).max()), np.finfo(float).tiny)
    if np.abs(K - K.T).max() > 1e-8 * scale:
        raise ValueError(f"the kernel of view {p} is not symmetric")
    try:
        np.linalg.cholesky(K + 1e-10 * scale * K.shape[0] * np.eye(K.shape[0]))
    except np.linalg.LinAlgError:
        low = float(np.linalg.eigvalsh(K)[0])
        raise ValueError(
            f"the kernel of view {p} is not positive semidefinite "
            f"(smallest eigenvalue {low:.3g})"
        ) from None


def kernel_whitening(
    K: np.ndarray, eps: float, jitter: float, p: int = 0, KK: np.ndarray | None = None
):
    """Upper Cholesky factor L of K^2 + eps K (+ jitter) and Y = K L^(-1).

    ``jitter`` (relative to the mean diagonal of K^2 + eps K) is added to the
    diagonal because a centered kernel, or a kernel of rank below N, makes
    K^2 + eps K singular; directions in the null space of K carry no data, so the
    jitter does not change the projections of training or new samples. ``KK``:
    K @ K where the caller has it (the same for every eps).
    """
    G = (K @ K if KK is None else KK) + eps * K
    G = (G + G.T) / 2
    if jitter > 0:
        G[np.diag_indices_from(G)] += jitter * max(float(np.mean(np.diag(G))), 1e-300)
    try:
        L = sla.cholesky(G, lower=False)
    except np.linalg.LinAlgError:
        raise ValueError(
            f"K^2 + eps*K of view {p} is not positive definite; increase jitter "
            f"(now {jitter:g}) or eps (now {eps:g})"
        ) from None
    # Y^T = L^(-T) K, the paper's A_p; Y's rows are the whitened samples.
    Y = sla.solve_triangular(L, K, trans="T", lower=False).T
    return L, np.ascontiguousarray(Y)


#: Precomputed kernels prepared for a fit (centered, K^2, checked), by the
#: identity of the array given: a grid over eps refits on the same kernels, and
#: K^2 of an N x N kernel costs 2 N^3 flops per view and eps otherwise (a third of
#: a kernel2000 fit's set-up). Entries go with their array, and a kernel changed in
#: place since is prepared again (its digest differs).
_PREPARED: dict[tuple, tuple] = {}
#: The most bytes of prepared kernels kept at a time (oldest dropped first).
_PREPARED_MAX_BYTES = 2 * 1024**3


def _digest(K: np.ndarray) -> bytes:
    import hashlib

    return hashlib.blake2b(np.ascontiguousarray(K).data.cast("B")).digest()


def prepare_kernel(K: np.ndarray, center: bool):
    """Center and square a view's kernel for :func:`kernel_whitening`.

    Returns ``(Kc, stats, KK, neighbours)``: the kernel to whiten (centered when
    ``center``), the centering statistics (None without centering), ``Kc @ Kc``
    and :func:`kernel_neighbours` of the kernel given.
    """
    neighbours = kernel_neighbours(K)
    stats = None
    Kc = K
    if center:
        Kc, stats = center_kernel(K)
    return Kc, stats, Kc @ Kc, neighbours


def prepare_precomputed(K: np.ndarray, p: int, center: bool):
    """Check a precomputed kernel and :func:`prepare_kernel` it; once per array.

    The same values as preparing it afresh: the work is shared, not approximated.
    """
    import weakref

    key = (id(K), bool(center))
    digest = _digest(K)
    hit = _PREPARED.get(key)
    if hit is not None and hit[0]() is K and hit[1] == digest:
        return hit[2]
    _check_psd(K, p)
    prepared = prepare_kernel(K, center)

    def forget(_ref: object, key: tuple = key) -> None:
        _PREPARED.pop(key, None)

    try:
        ref = weakref.ref(K, forget)
    except TypeError:  # not weakly referable: not kept
        return prepared
    _PREPARED[key] = (ref, digest, prepared)
    held = 0
    for k in reversed(list(_PREPARED)):  # newest first
        held += 2 * _PREPARED[k][2][2].nbytes
        if held > _PREPARED_MAX_BYTES and k != key:
            del _PREPARED[k]
    return prepared


def dask_message(views) -> str:
    """Why KTCCA refuses Dask views, and what to do instead."""
    n = views[0].shape[0] if hasattr(views[0], "shape") else None
    size = f" ({8 * n * n / 1e9:.3g} GB per view for N = {n})" if n else ""
    return (
        "KTCCA does not take Dask arrays: it needs every view's N x N kernel matrix "
        f"and its Cholesky factor in memory{size}, which cannot be split into row "
        "chunks like linear TCCA's passes. Use TCCA on the Dask views (linear, out of "
        "core), or map each view to explicit features first (e.g. "
        "sklearn.kernel_approximation.Nystroem or RBFSampler, fitted on a sample) and "
        "fit TCCA on those; or fit KTCCA on a subsample computed into memory"
    )


def ktcca_path(views, ranks, *, warm_start: bool = False, **params) -> list[dict]:
    """Fit KTCCA for several ranks, sharing kernels, Cholesky factors and S.

    ``params`` are :class:`KTCCA`'s parameters but ``n_components``; ``warm_start``
    as in :func:`tcca_core.tcca_path`. Returns one dict per rank, in the order of
    ``ranks``, with ``kernels`` (fitted :class:`~tcca_core.kernels.ViewKernel`),
    ``center_stats``, ``cholesky`` (L_p), ``factors`` (B_p), ``dual_coef``
    (L_p^(-1) B_p), ``weights``, ``correlations``, ``n_iter``, ``converged``,
    ``errors``, ``engine``, ``init``, ``start_errors``, ``fit_seconds`` and
    ``spikes`` (why the components are single-sample spikes, or None: see
    :func:`tcca_core._spikes.spike_message`).
    """
    if "n_components" in params:
        raise TypeError("ktcca_path takes the ranks, not n_components")
    return KTCCA(**params)._path(views, ranks, warm_start)


class KTCCA(HighOrderCorrelationMixin, ParamsMixin, TransformerMixin, BaseEstimator):
    """Kernel tensor CCA for m >= 2 views.

    Parameters
    ----------
    n_components : int
        Dimension r of the common subspace (at most N).
    eps : float, default=1e-2
        The paper's epsilon in the constraint a_p^T (K_p^2 + eps K_p) a_p = 1.
    kernel : str, callable or list of those, default="l2"
        Per view (a list) or for all views: ``"chi2"`` and ``"l2"`` are the paper's
        exp(-d / max d) kernels with the chi-square or L2 distance, also
        ``"linear"``, ``"rbf"``, ``"precomputed"`` (views are then N x N kernel
        matrices; ``transform`` takes (n_new, N) cross kernels) or a callable
        ``k(A, B)``.
    kernel_params : dict or list of dicts, optional
        Extra arguments of :class:`tcca_core.kernels.ViewKernel`: ``gamma`` of
        ``"rbf"``, a number or ``"scale"`` (1 / (n_features * X.var()), for
        features that are not standardized). A kernel so narrow that every
        training sample is far from every other makes the components spikes on
        single samples; the fit then warns, naming the view and the fix.
    center : bool, default=True
        Center the kernels in feature space (H K H), as TCCA centers the data.
    jitter : float, default=1e-10
        Added to the diagonal of K^2 + eps K, relative to its mean diagonal, so the
        Cholesky factor exists for centered or low-rank kernels (see
        :func:`kernel_whitening`).
    init : {"auto", "hosvd", "svd", "random"} or list of arrays, default="auto"
        As in :class:`tcca_core.TCCA`. The exact HOSVD costs O(N^3) once per fit
        (+0.3 s at N = 500, minutes at N = 5,597); ``"auto"`` takes it unless it
        costs more than the ALS sweeps, and the randomized start with power
        iterations otherwise.
    max_iter, tol, n_init, acceleration, random_state, algorithm, solver, verbose
        As in :class:`tcca_core.TCCA`; the dense engine builds the N^m tensor S.

    Attributes
    ----------
    dual_coef_ : list of ndarray of shape (N, r)
        L_p^(-1) B_p, so that Z_p = K_p(new, train) @ dual_coef_[p].
    factors_ : list of ndarray of shape (N, r)
        B_p, unit-norm columns.
    weights_, correlations_, n_iter_, converged_, reconstruction_errors_, algorithm_
        As in :class:`tcca_core.TCCA`.
    """

    _parameter_constraints: ClassVar[dict] = {
        **SOLVER_CONSTRAINTS,
        "kernel": [str, "callable", list, tuple],
        "kernel_params": [dict, list, tuple, None],
        "center": ["boolean"],
        "jitter": [Interval("real", 0, None)],
        "verbose": VERBOSE_CONSTRAINT,
    }

    def __init__(
        self,
        n_components: int = 2,
        *,
        eps: float = SolverParams.eps,
        kernel: str | Callable | list = "l2",
        kernel_params: dict | list | None = None,
        center: bool = True,
        jitter: float = 1e-10,
        max_iter: int = SolverParams.max_iter,
        tol: float = SolverParams.tol,
        init=SolverParams.init,
        n_init: int | str = SolverParams.n_init,
        acceleration: str | None = SolverParams.acceleration,
        linesearch="deprecated",
        random_state=SolverParams.random_state,
        algorithm: str = SolverParams.algorithm,
        solver: str = SolverParams.solver,
        verbose: int = 0,
    ):
        self.n_components = n_components
        self.eps = eps
        self.kernel = kernel
        self.kernel_params = kernel_params
        self.center = center
        self.jitter = jitter
        self.max_iter = max_iter
        self.tol = tol
        self.init = init
        self.n_init = n_init
        self.acceleration = acceleration
        self.linesearch = linesearch
        self.random_state = random_state
        self.algorithm = algorithm
        self.solver = solver
        self.verbose = verbose

    def fit(self, views, y=None):
        """Fit on a list of views (or of N x N kernels with kernel="precomputed")."""
        return self._set_fitted(self._path(views, [self.n_components], False)[0])

    def fit_path(self, views, ranks, *, warm_start: bool = False) -> list:
        """Return fitted copies of this estimator, one per rank in ``ranks``.

        They share kernels, Cholesky factors and the engine (the O(N^3) work is
        done once). Each copy has this estimator's parameters with ``n_components``
        set to its rank; see :func:`tcca_core.tcca_path` for ``warm_start``.
        """
        from sklearn.base import clone

        ranks, _ = check_ranks(ranks, self.init, warm_start)
        outs = self._path(views, ranks, warm_start)
        return [
            clone(self).set_params(n_components=r)._set_fitted(o)
            for r, o in zip(ranks, outs, strict=True)
        ]

    def _path(self, views, ranks, warm_start: bool) -> list[dict]:
        """Validate the parameters (once) and fit every rank of ``ranks``.

        The kernels, their Cholesky factors and the whitened views are made once
        for all ranks (:func:`.solver.path.rank_path`).
        """
        params = SolverParams.of(self)
        own = validate_params(
            {k: getattr(self, k) for k in _KERNEL_PARAMS},
            self._parameter_constraints,
        )
        center, jitter = own["center"], own["jitter"]
        ranks, warm_start = check_ranks(ranks, params.init, warm_start)
        if is_dask_views(views):
            raise ValueError(dask_message(views))
        if not isinstance(views, list | tuple):
            check_views(views)  # raises the standard message
        m = len(views)
        kernels = _per_view(self.kernel, m, "kernel")
        kparams = _per_view(self.kernel_params or {}, m, "kernel_params")
        from .solver.xp import dispatch_namespace

        namespace = dispatch_namespace(views)
        if namespace is not None:  # arrays of another array-API library, on device
            from ._ktcca_xp import ktcca_rank_path

            return ktcca_rank_path(
                views,
                ranks,
                params,
                namespace,
                warm_start=warm_start,
                kernels=kernels,
                kparams=kparams,
                center=center,
                jitter=jitter,
            )
        views = check_views(
            views, accept_sparse=not any(k == "precomputed" for k in kernels)
        )
        N = views[0].shape[0]

        def setup():
            if center:  # a constant view has a constant kernel, zero once centered
                skip = [q for q, k in enumerate(kernels) if k == "precomputed"]
                check_varying(views, "KTCCA", skip)
            vkernels, stats_all, Ls, wviews, neighbours = [], [], [], [], []
            for q, (X, k, kp) in enumerate(zip(views, kernels, kparams, strict=True)):
                vk = ViewKernel.for_view(k, kp, q)
                K = vk.fit(X)
                if k == "precomputed":
                    if K.shape[0] != N:
                        raise ValueError(f"the kernel of view {q} must be {N} x {N}")
                    K, stats, KK, near = prepare_precomputed(K, q, center)
                else:
                    K, stats, KK, near = prepare_kernel(K, center)
                neighbours.append(near)
                L, Y = kernel_whitening(K, params.eps, jitter, q, KK)
                vkernels.append(vk)
                stats_all.append(stats)
                Ls.append(L)
                wviews.append(WhitenedView(Y))
            engine = MomentEngine.choose(wviews, max(ranks), params.algorithm)
            shared = {"kernels": vkernels, "center_stats": stats_all, "cholesky": Ls}
            return (
                engine,
                shared,
                lambda fit: {
                    "dual_coef": [
                        sla.solve_triangular(L, B, lower=False)
                        for L, B in zip(Ls, fit["factors"], strict=True)
                    ],
                    "spikes": spike_message(
                        [Y.Y @ B for Y, B in zip(wviews, fit["factors"], strict=True)],
                        neighbours,
                        fit["correlations"],
                        vkernels,
                    ),
                },
            )

        # the shared kernels and Cholesky factors count in every rank's seconds
        with fit_progress(own["verbose"], "KTCCA"):
            return rank_path(
                "KTCCA",
                ranks,
                params,
                warm_start=warm_start,
                shape=(N, [N] * m),
                setup=setup,
            )

    def _set_fitted(self, out: dict):
        self.kernels_ = out["kernels"]
        self.center_stats_ = out["center_stats"]
        self.factors_ = out["factors"]
        self.dual_coef_ = out["dual_coef"]
        self.weights_ = out["weights"]
        self.correlations_ = out["correlations"]
        self.n_iter_ = out["n_iter"]
        self.converged_ = out["converged"]
        self.reconstruction_errors_ = out["errors"]
        self.algorithm_ = out["engine"]
        self.init_ = out["init"]
        self.start_errors_ = out["start_errors"]
        self.n_views_ = len(out["kernels"])
        self.n_train_ = out["factors"][0].shape[0]
        self.fit_seconds_ = out["fit_seconds"]
        if out.get("spikes"):
            warnings.warn(f"KTCCA: {out['spikes']}", UserWarning, stacklevel=3)
        warn_unconverged("KTCCA", out, self.tol)
        return self

    def transform(self, views, per_view: bool = False):
        """Project new samples: [Z_1 ... Z_m], shape (n_new, m r), or a list."""
        from .solver.xp import dispatch_namespace

        namespace = dispatch_namespace(views)
        if namespace is not None:
            from ._ktcca_xp import transform

            return transform(self, views, per_view, namespace)
        return self._project(self._centered_cross(views), per_view)

    def _centered_cross(self, views) -> list[np.ndarray]:
        """Return the validated, centered kernels K(new, train) of every view.

        They depend on the training kernels and centering statistics only, which
        every rank (and every eps) of one fit on the same kernels shares, so the
        pipeline computes them once for a whole rank path and calls
        :meth:`_project` per rank (centering would otherwise be 37 % of an mfeat
        kernel2000 split's evaluation, repeated 200 times).
        """
        from sklearn.utils.validation import check_is_fitted

        check_is_fitted(self, "dual_coef_")
        precomputed = [vk.kernel == "precomputed" for vk in self.kernels_]
        views = check_views(
            views,
            min_samples=1,
            accept_sparse=not any(precomputed),
            n_features=[vk.n_features_in_ for vk in self.kernels_],
        )
        if len(views) != self.n_views_:
            raise ValueError(
                f"the estimator was fitted on {self.n_views_} views, got {len(views)}"
            )
        out = []
        for vk, stats, X in zip(self.kernels_, self.center_stats_, views, strict=True):
            Kx = vk.cross(X)
            out.append(Kx if stats is None else center_cross_kernel(Kx, stats))
        return out

    def _project(self, centered, per_view: bool = False):
        """Return [K_1 A_1 ... K_m A_m] from :meth:`_centered_cross`'s kernels."""
        Z = [Kx @ A for Kx, A in zip(centered, self.dual_coef_, strict=True)]
        return Z if per_view else np.hstack(Z)

    def fit_transform(self, views, y=None, per_view: bool = False):
        return self.fit(views).transform(views, per_view=per_view)

"""KTCCA on arrays of any array-API library, on their device (dense views).

The kernels K_p (N x N), their centering, the Cholesky factor L_p of
K_p^2 + eps K_p and the whitened Y_p = K_p L_p^(-1) are computed in the views'
namespace, on their device; the moment tensor and ALS are :mod:`.solver.xp`'s (the
N-sized products on the device, the small r x r algebra on the host). Kernels
as in :mod:`tcca_core.kernels`: ``"linear"``, ``"rbf"``, the paper's ``"l2"``
and ``"chi2"``, ``"precomputed"`` (device arrays) or a callable that takes and
returns device arrays.
"""

from __future__ import annotations

import numpy as np

from .kernels import ViewKernel
from .solver.xp import DeviceMoment, DeviceSource, DeviceView, to_device

__all__ = ["DeviceKernel", "ktcca_rank_path", "transform"]

#: Bytes of the (rows x N x d) differences of one block of the chi-square distance.
_CHI2_BLOCK_BYTES = 256 * 1024**2


class DeviceKernel(ViewKernel):
    """:class:`~tcca_core.kernels.ViewKernel` computed in the namespace ``xp``."""

    def __init__(self, kernel, *, gamma=None, xp=None):
        super().__init__(kernel, gamma=gamma)
        self.xp = xp

    @classmethod
    def of(cls, vk: ViewKernel, xp) -> DeviceKernel:
        """Return the device twin of a checked :class:`ViewKernel`."""
        return cls(vk.kernel, gamma=vk.gamma, xp=xp)

    def _sq_dist(self, A, B, same: bool):
        xp = self.xp
        D = (
            xp.sum(A * A, axis=1)[:, None]
            - 2.0 * (A @ B.T)
            + xp.sum(B * B, axis=1)[None, :]
        )
        D = xp.clip(D, min=0.0)
        if same:  # as scikit-learn's euclidean_distances: exact zeros on the diagonal
            n = D.shape[0]
            D = xp.where(xp.eye(n, dtype=xp.bool, device=_dev(A)), 0.0, D)
        return D

    def _chi2(self, A, B):
        xp = self.xp
        if bool(xp.any(A < 0)) or bool(xp.any(B < 0)):
            raise ValueError(
                "the chi-square distance needs non-negative features (histograms); "
                "use kernel='l2' or 'rbf' for signed features"
            )
        n, d = B.shape
        rows = int(max(1, _CHI2_BLOCK_BYTES // (8 * max(n * d, 1))))
        parts = []
        for i in range(0, A.shape[0], rows):
            a = A[i : min(i + rows, A.shape[0]), :][:, None, :]
            s = a + B[None, :, :]
            q = (a - B[None, :, :]) ** 2 / xp.where(s > 0, s, 1.0)
            parts.append(xp.sum(xp.where(s > 0, q, 0.0), axis=2))
        return xp.concat(parts, axis=0)

    def _distance(self, A, B, same: bool):
        if self.kernel == "chi2":
            return self._chi2(A, B)
        return self.xp.sqrt(self._sq_dist(A, B, same))

    def evaluate(self, A, B, same: bool = False):
        """Return the kernel between the rows of ``A`` and ``B`` on their device."""
        xp, k = self.xp, self.kernel
        if callable(k):
            return k(A, B)
        if k == "linear":
            return A @ B.T
        if k == "rbf":
            gamma = self.gamma_ if self.gamma == "scale" else self.gamma
            gamma = 1.0 / A.shape[1] if gamma is None else float(gamma)
            return xp.exp(-gamma * self._sq_dist(A, B, same))
        return xp.exp(-self._distance(A, B, same) / self.scale_)

    def fit(self, X):
        """Remember the training samples and return the training kernel matrix."""
        xp = self.xp
        if self.kernel == "precomputed":
            if X.ndim != 2 or X.shape[0] != X.shape[1]:
                raise ValueError(
                    f"a precomputed kernel must be square, got shape {tuple(X.shape)}"
                )
            self.n_train_ = X.shape[0]
            self.n_features_in_ = X.shape[1]
            return X
        self.X_ = X
        self.n_features_in_ = X.shape[1]
        if self.gamma == "scale":  # as kernels._scale_gamma, on the device
            var = float(xp.var(X))
            self.gamma_ = 1.0 / (X.shape[1] * var) if var > 0 else 1.0
        if self.kernel in ("chi2", "l2"):
            D = self._distance(X, X, True)
            scale = float(xp.max(D))
            self.scale_ = scale if scale > 0 else 1.0
            return xp.exp(-D / self.scale_)
        K = self.evaluate(X, X, same=True)
        self._check(K, X.shape[0], "the kernel matrix")
        return K

    def _check(self, K, n_rows: int, what: str) -> None:
        n_train = self.X_.shape[0]
        if K.ndim != 2 or tuple(K.shape) != (n_rows, n_train):
            raise ValueError(
                f"the kernel returned an array of shape {tuple(K.shape)}; {what} "
                f"must have shape ({n_rows}, {n_train})"
            )
        if not bool(self.xp.all(self.xp.isfinite(K))):
            raise ValueError(
                f"{what} contains NaN or infinity (overflow in the kernel "
                "function?); rescale the features"
            )

    def cross(self, Y):
        """Kernel between new samples (rows of Y) and the training samples."""
        if self.kernel == "precomputed":
            if Y.ndim != 2 or Y.shape[1] != self.n_train_:
                raise ValueError(
                    "a precomputed test kernel must have shape (n_new, n_train) = "
                    f"(*, {self.n_train_}), got {tuple(Y.shape)}"
                )
            return Y
        K = self.evaluate(Y, self.X_)
        if callable(self.kernel):
            self._check(K, Y.shape[0], "the cross kernel matrix")
        return K


def _dev(A):
    import array_api_compat

    return array_api_compat.device(A)


def _center(xp, K):
    col_mean = xp.mean(K, axis=0)
    total = xp.mean(col_mean)
    Kc = K - col_mean[None, :] - col_mean[:, None] + total
    return (Kc + Kc.T) / 2, (col_mean, total)


def _center_cross(xp, Kx, stats):
    col_mean, total = stats
    return Kx - col_mean[None, :] - xp.mean(Kx, axis=1, keepdims=True) + total


def _solve_triangular(xp, L, B, *, lower: bool):
    """L^(-1) B for triangular L: the library's triangular solver where it has one.

    The array API standard has only the general ``linalg.solve``, which on the
    ill-conditioned directions of K^2 + eps K (the null space of a centered kernel,
    held up only by ``jitter``) rounds differently from a triangular solve.
    """
    import array_api_compat

    if array_api_compat.is_torch_namespace(xp):
        import torch

        return torch.linalg.solve_triangular(L, B, upper=not lower)
    if array_api_compat.is_cupy_namespace(xp):
        from cupyx.scipy.linalg import solve_triangular

        return solve_triangular(L, B, lower=lower)
    return xp.linalg.solve(L, B)


def _whitening(xp, K, eps: float, jitter: float, p: int):
    """Upper Cholesky factor L of K^2 + eps K (+ jitter) and Y = K L^(-1)."""
    G = K @ K + eps * K
    G = (G + G.T) / 2
    n = G.shape[0]
    if jitter > 0:
        shift = jitter * max(float(xp.mean(xp.linalg.diagonal(G))), 1e-300)
        G = G + shift * xp.eye(n, dtype=G.dtype, device=_dev(G))
    try:
        low = xp.linalg.cholesky(G)
        ok = bool(xp.all(xp.isfinite(low)))
    except Exception:  # each library raises its own LinAlgError (CuPy: NaNs)
        ok = False
    if not ok:
        raise ValueError(
            f"K^2 + eps*K of view {p} is not positive definite; increase jitter "
            f"(now {jitter:g}) or eps (now {eps:g})"
        )
    # Y^T = L^(-T) K with L = low^T: the paper's A_p
    Y = _solve_triangular(xp, low, K, lower=True).T
    return low.T, Y


def _check_psd(xp, K, p: int) -> None:
    scale = max(float(xp.max(xp.abs(K))), float(np.finfo(float).tiny))
    if float(xp.max(xp.abs(K - K.T))) > 1e-8 * scale:
        raise ValueError(f"the kernel of view {p} is not symmetric")
    n = K.shape[0]
    try:
        low = xp.linalg.cholesky(
            K + 1e-10 * scale * n * xp.eye(n, dtype=K.dtype, device=_dev(K))
        )
        ok = bool(xp.all(xp.isfinite(low)))
    except Exception:
        ok = False
    if not ok:
        low_eig = float(xp.linalg.eigvalsh(K)[0])
        raise ValueError(
            f"the kernel of view {p} is not positive semidefinite "
            f"(smallest eigenvalue {low_eig:.3g})"
        )


def ktcca_rank_path(
    views,
    ranks,
    params,
    namespace,
    *,
    warm_start: bool,
    kernels,
    kparams,
    center: bool,
    jitter: float,
) -> list[dict]:
    """KTCCA's rank path (:func:`.solver.path.rank_path`) on device views."""
    from .solver.engine import MomentEngine, choose_engine
    from .solver.path import rank_path

    xp, device = namespace
    source = DeviceSource(xp, device)
    views = source.check_views(views, params.algorithm)
    N, m = views[0].shape[0], len(views)
    dtype = views[0].dtype

    def setup():
        if center:  # a constant view has a constant kernel, zero once centered
            for q, (X, k) in enumerate(zip(views, kernels, strict=True)):
                if k != "precomputed" and bool(
                    xp.all(xp.max(X, axis=0) == xp.min(X, axis=0))
                ):
                    raise ValueError(
                        f"view {q} is constant over the samples (all rows are "
                        "equal), so the moment tensor is zero and KTCCA has no "
                        "component"
                    )
        vkernels, stats_all, Ls, wviews = [], [], [], []
        for q, (X, k, kp) in enumerate(zip(views, kernels, kparams, strict=True)):
            vk = DeviceKernel.of(ViewKernel.for_view(k, kp, q), xp)
            K = vk.fit(X)
            if k == "precomputed":
                if K.shape[0] != N:
                    raise ValueError(f"the kernel of view {q} must be {N} x {N}")
                _check_psd(xp, K, q)
            stats = None
            if center:
                K, stats = _center(xp, K)
            L, Y = _whitening(xp, K, params.eps, jitter, q)
            vkernels.append(vk)
            stats_all.append(stats)
            Ls.append(L)
            wviews.append(DeviceView(Y, int(xp.count_nonzero(Y))))
        dims = [N] * m
        sparse = all(v.sparse is not None for v in wviews)
        nnz = [v.nnz_per_row for v in wviews] if sparse else None
        name = choose_engine(N, dims, max(ranks), params.algorithm, nnz)
        op = DeviceMoment(wviews, xp, device, dense=name == "dense")
        engine = MomentEngine(wviews, name, op=op)
        shared = {"kernels": vkernels, "center_stats": stats_all, "cholesky": Ls}

        def per_rank(fit):
            return {
                "dual_coef": [
                    _solve_triangular(
                        xp, L, to_device(B, xp, device, dtype), lower=False
                    )
                    for L, B in zip(Ls, fit["factors"], strict=True)
                ]
            }

        return engine, shared, per_rank

    outs = rank_path(
        "KTCCA",
        ranks,
        params,
        warm_start=warm_start,
        shape=(N, [N] * m),
        setup=setup,
    )
    for o in outs:
        o["factors"] = [to_device(B, xp, device, dtype) for B in o["factors"]]
        for key in ("weights", "correlations"):
            o[key] = to_device(o[key], xp, device, dtype)
    return outs


def transform(estimator, views, per_view: bool, namespace):
    """[K_1 A_1 ... K_m A_m] of new samples, on the views' device."""
    from sklearn.utils.validation import check_is_fitted

    check_is_fitted(estimator, "dual_coef_")
    xp, _ = namespace
    if not isinstance(estimator.kernels_[0], DeviceKernel):
        raise ValueError(
            "the estimator was fitted on arrays of another library; transform "
            "takes arrays of the library (and device) it was fitted on"
        )
    if len(views) != estimator.n_views_:
        raise ValueError(
            f"the estimator was fitted on {estimator.n_views_} views, got {len(views)}"
        )
    Z = []
    for p, (vk, stats, X, A) in enumerate(
        zip(
            estimator.kernels_,
            estimator.center_stats_,
            views,
            estimator.dual_coef_,
            strict=True,
        )
    ):
        if X.ndim != 2 or X.shape[1] != vk.n_features_in_:
            raise ValueError(
                f"view {p} has shape {tuple(X.shape)}; {vk.n_features_in_} "
                "features were seen in fit"
            )
        X = X if X.dtype == A.dtype else xp.astype(X, A.dtype)
        if not bool(xp.all(xp.isfinite(X))):
            raise ValueError(f"view {p} contains NaN or infinity")
        Kx = vk.cross(X)
        Z.append((Kx if stats is None else _center_cross(xp, Kx, stats)) @ A)
    return Z if per_view else xp.concat(Z, axis=1)

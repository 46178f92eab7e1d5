"""TCCA on arrays of any array-API library (CuPy, PyTorch, ...), on their device.

Views of a library other than NumPy (and not scipy.sparse or Dask) take this path
when scikit-learn's array API dispatch is on (``sklearn.set_config(
array_api_dispatch=True)``), as scikit-learn's own estimators do; the namespace and
device come from ``array_api_compat``. Everything that grows with the number of
samples N runs in that namespace, on that device: the means and covariances, the
whitening Y_p = (X_p - mean_p) W_p, the moment tensor M (or, tensor-free, the
projections Y_q U_q and the MTTKRPs Y_p^T (Hadamard_{q != p} Y_q U_q) / N),
||M||^2 and the mode Gram matrices of the exact HOSVD, the training correlations
and ``transform``.

What does not grow with N stays on the host, in float64, in the very code the
NumPy path runs: the d_p x d_p eigendecompositions of the whitening and of the
HOSVD, ALS's r x r normal equations, its line search, stopping rule and the race
of starts, and the random starts (drawn by NumPy's generator from
``random_state``). So a seed gives the same fit on every backend, to the precision
of its dtype, and the loop's decisions (starts, engine, sweeps) are NumPy's. Each
MTTKRP moves its d_q x r factors to the device and its d_p x r result back,
explicitly (:func:`to_host`, :func:`to_device`); no N-sized array leaves the
device.

float32 views are computed in float32 on the device (the fit's tolerance is the
dtype's: see docs/guide/gpu.md); the host side stays float64.
"""

from __future__ import annotations

import weakref
from collections.abc import Sequence
from typing import Any

import numpy as np

from .dense import DENSE_MAX_BYTES
from .implicit import combination_of
from .views import SPARSE_DENSITY

__all__ = [
    "DeviceMoment",
    "DeviceView",
    "dispatch_namespace",
    "to_device",
    "to_host",
]

#: Bytes of one block of rows of the Khatri-Rao products built on the device.
_BLOCK_BYTES = 256 * 1024**2

#: Rows per block of the N x N Gram matrices (2048 x 2048 doubles = 32 MB).
_GRAM_ROWS = 2048

#: Bytes of projections Y_q U_q the tensor-free MTTKRP keeps on the device: two per
#: mode (the line search combines them) where they fit, else one.
_CACHE_BYTES = 16 * 1024**3


def _compat():
    try:
        import array_api_compat
    except ImportError as exc:  # pragma: no cover - the extra is missing
        raise ImportError(
            "arrays other than NumPy's need array-api-compat: "
            "pip install 'tcca[array-api]'"
        ) from exc
    return array_api_compat


def _is_host(X) -> bool:
    """NumPy, scipy.sparse, Dask, lists, DataFrames: the NumPy path's input."""
    import scipy.sparse as sp

    if isinstance(X, np.ndarray) or sp.issparse(X) or not hasattr(X, "shape"):
        return True
    module = type(X).__module__.split(".")[0]
    return module in ("numpy", "dask", "pandas", "polars")


def dispatch_namespace(views) -> tuple[Any, Any] | None:
    """``(xp, device)`` of the views when they take the array-API path, else None.

    They do when scikit-learn's ``array_api_dispatch`` is on and every view is an
    array of one array-API library other than NumPy, on one device. With the
    dispatch off such arrays are converted to NumPy, as scikit-learn does.
    """
    if not isinstance(views, (list, tuple)) or not views:
        return None
    if any(_is_host(X) for X in views):
        return None
    import sklearn

    if not sklearn.get_config().get("array_api_dispatch", False):
        return None
    compat = _compat()
    xp = compat.array_namespace(*views)
    devices = {compat.device(X) for X in views}
    if len(devices) != 1:
        raise ValueError(
            f"the views are on several devices: {sorted(map(str, devices))}"
        )
    return xp, devices.pop()


def to_host(x) -> np.ndarray:
    """Copy a (small) device array to NumPy: the explicit device-to-host move."""
    compat = _compat()
    if isinstance(x, np.ndarray):
        return x
    if compat.is_cupy_array(x):
        return x.get()
    if compat.is_torch_array(x):
        return x.detach().cpu().numpy()
    xp = compat.array_namespace(x)
    if compat.is_array_api_strict_namespace(xp):
        x = xp.asarray(x, device=xp.Device("CPU_DEVICE"))
    return np.from_dlpack(x)


def to_device(a, xp, device, dtype=None):
    """Move a NumPy array (or a scalar) to ``device``, explicitly."""
    return xp.asarray(np.asarray(a), dtype=dtype, device=device)


def float_dtype(xp, X):
    """float32 stays float32 (on request); any other dtype computes in float64."""
    return xp.float32 if X.dtype == xp.float32 else xp.float64


class DeviceView:
    """One view's whitened data Y = (X - mean) W, held on its device.

    For the engines' cost model it reports what :class:`.views.WhitenedView` would
    for the same data: ``nnz_per_row``, and ``sparse`` (an empty tuple, with no
    CSR form) when at most ``SPARSE_DENSITY`` of X is non-zero, so that the engine,
    the start and the number of starts are those of the NumPy fit.
    """

    is_sparse = False

    def __init__(self, Y, nnz: int | None = None):
        self.Y = Y
        self.N, self.d = Y.shape
        size = self.N * self.d
        nnz = size if nnz is None else nnz
        self.nnz_per_row = float(nnz) / max(self.N, 1)
        self.sparse: tuple | None = (
            () if size and nnz <= SPARSE_DENSITY * size else None
        )
        if self.sparse is None:
            self.nnz_per_row = float(self.d)


def _khatri_rao_rows(xp, blocks):
    """Row-wise Khatri-Rao product of blocks (n, d_q): (n, prod d_q), first slowest."""
    KR = blocks[0]
    for Y in blocks[1:]:
        KR = xp.reshape(KR[:, :, None] * Y[:, None, :], (KR.shape[0], -1))
    return KR


def _khatri_rao(xp, factors):
    """Khatri-Rao product of (d_q, r) factors: (prod d_q, r), the first slowest."""
    K = factors[0]
    r = K.shape[1]
    for U in factors[1:]:
        K = xp.reshape(K[:, None, :] * U[None, :, :], (-1, r))
    return K


class DeviceMoment:
    """M = (1/N) sum_n y_1n o ... o y_mn of :class:`DeviceView` s, on their device.

    The operator :class:`.engine.MomentEngine` drives (as it does
    :class:`.implicit.ImplicitMoment`): ``mttkrp`` takes and returns host arrays
    (d_p x r), ``norm_sq`` and ``mode_grams`` return host values. With
    ``dense=True`` (the "dense" engine) M is built on the device and every MTTKRP
    is one GEMM with an unfolding of it; otherwise the MTTKRP is tensor-free, from
    the projections Y_q U_q kept on the device. ||M||^2 and the mode Grams come
    from M built once where it fits ``DENSE_MAX_BYTES``, else from the N x N Gram
    matrices by blocks.
    """

    def __init__(self, views: Sequence[DeviceView], xp, device, *, dense: bool):
        self.views = list(views)
        self.xp, self.device = xp, device
        self.dtype = self.views[0].Y.dtype
        self.N = self.views[0].N
        self.dims = [v.d for v in self.views]
        self.dense = dense
        #: the unit roundoff of the MTTKRPs where coarser than float64's (ALS's
        #: stopping rule takes decreases below it for rounding)
        self.eps = float(np.finfo(np.float32).eps) if self.dtype == xp.float32 else None
        self._M = None
        self._unfoldings: dict[int, Any] = {}
        self._stats: tuple[float, list[np.ndarray]] | None = None
        # per mode: [(weak reference to the host U_q, Y_q U_q on the device)]
        self._cache: list[list[tuple[Any, Any]]] = [[] for _ in self.views]

    def project(self, bases: Sequence[np.ndarray]) -> DeviceMoment:
        """Return the same operator on the views Y_p Q_p (compression: the engine)."""
        views = [
            DeviceView(v.Y @ self._dev(Q))
            for v, Q in zip(self.views, bases, strict=True)
        ]
        out = DeviceMoment(views, self.xp, self.device, dense=self.dense)
        if self.dense:
            # G from M, as the host's dense engine makes it (the same rounding)
            G = self.M
            for p, Q in enumerate(bases):
                G = self.xp.tensordot(G, self._dev(Q), axes=([p], [0]))
                G = self.xp.moveaxis(G, -1, p)
            out._M = G
        return out

    # --- moves -------------------------------------------------------------------
    def _dev(self, U):
        return to_device(U, self.xp, self.device, self.dtype)

    def _host(self, A) -> np.ndarray:
        return np.asarray(to_host(A), dtype=np.float64)

    # --- M -------------------------------------------------------------------------
    def _fits(self) -> bool:
        itemsize = 4 if self.dtype == self.xp.float32 else 8
        return itemsize * float(np.prod(self.dims)) <= DENSE_MAX_BYTES

    @property
    def M(self):
        """M_(1) = Y_1^T (Y_2 kr_rows ... kr_rows Y_m) / N, by blocks of samples."""
        if self._M is None:
            xp, dims = self.xp, self.dims
            rest = int(np.prod(dims[1:]))
            M = xp.zeros((dims[0], rest), dtype=self.dtype, device=self.device)
            B = int(max(1, min(self.N, _BLOCK_BYTES // (8 * max(rest, 1)))))
            for i in range(0, self.N, B):
                Y = [v.Y[i : min(i + B, self.N), :] for v in self.views]
                M = M + Y[0].T @ _khatri_rao_rows(xp, Y[1:])
            self._M = xp.reshape(M / self.N, tuple(dims))
        return self._M

    def _unfolding(self, p: int):
        """M_(p) with the other modes in increasing order (the first slowest)."""
        if p not in self._unfoldings:
            xp, m = self.xp, len(self.dims)
            order = [p, *(q for q in range(m) if q != p)]
            Mp = xp.permute_dims(self.M, tuple(order)) if p else self.M
            self._unfoldings[p] = xp.reshape(Mp, (self.dims[p], -1))
        return self._unfoldings[p]

    def _statistics(self) -> tuple[float, list[np.ndarray]]:
        """||M||^2 and every M_(p) M_(p)^T, on the host (computed once)."""
        if self._stats is None:
            if self._fits():
                grams = []
                for p in range(len(self.dims)):
                    Mp = self._unfolding(p)
                    grams.append(self._host(Mp @ Mp.T))
                if not self.dense:  # the tensor-free engine does not keep M
                    self._M, self._unfoldings = None, {}
            else:
                grams = self._gram_mode_grams()
            norm = float(np.trace(grams[0]))
            self._stats = (norm, [(A + A.T) / 2 for A in grams])
        return self._stats

    def _gram_mode_grams(self) -> list[np.ndarray]:
        """Y_p^T (Hadamard_{q != p} Y_q Y_q^T) Y_p / N^2, by blocks of the Grams."""
        xp, N, m = self.xp, self.N, len(self.views)
        B = int(max(1, min(N, _GRAM_ROWS)))
        Z: list[list[Any]] = [[] for _ in range(m)]
        for i in range(0, N, B):
            Yi = [v.Y[i : min(i + B, self.N), :] for v in self.views]
            acc: list[Any] = [None] * m
            for j in range(0, N, B):
                Yj = [v.Y[j : min(j + B, N), :] for v in self.views]
                G = [a @ b.T for a, b in zip(Yi, Yj, strict=True)]
                for p in range(m):
                    H = None
                    for q in range(m):
                        if q != p:
                            H = G[q] if H is None else H * G[q]
                    if H is None:  # one view: M is a vector
                        H = xp.ones_like(G[p])
                    term = H @ Yj[p]
                    acc[p] = term if acc[p] is None else acc[p] + term
            for p in range(m):
                Z[p].append(acc[p])
        return [
            self._host(v.Y.T @ xp.concat(Z[p], axis=0)) / N**2
            for p, v in enumerate(self.views)
        ]

    # --- the operator --------------------------------------------------------------
    def norm_method(self) -> str:
        """Return the route to ||M||^2: "dense" (M built) or "gram"."""
        return "dense" if self._fits() else "gram"

    def norm_sq(self, method: str | None = None) -> float:
        """||M||_F^2 (trace of M_(1) M_(1)^T)."""
        return self._statistics()[0]

    def mode_grams(self, method: str | None = None) -> list[np.ndarray]:
        """M_(p) M_(p)^T for every mode, on the host."""
        return [A.copy() for A in self._statistics()[1]]

    def _projection(self, q: int, U):
        """Y_q U_q on the device, cached by the identity of the host U_q."""
        entries = self._cache[q]
        P = self._cached(q, U)
        if P is not None:
            return P
        terms = combination_of(U)
        if terms is not None:  # the line search's jump: combine known projections
            known = [(c, self._cached(q, V)) for c, V in terms]
            if all(K is not None for _, K in known):
                P = sum((c * K for c, K in known[1:]), known[0][0] * known[0][1])
        if P is None:
            P = self.views[q].Y @ self._dev(U)
        keep = 2 if 2 * len(self.views) * _nbytes(P) <= _CACHE_BYTES else 1
        try:
            ref = weakref.ref(U)
        except TypeError:  # not an array: not cached
            return P
        del entries[: max(len(entries) + 1 - keep, 0)]
        entries.append((ref, P))
        return P

    def _cached(self, q: int, U):
        return next((P for ref, P in self._cache[q] if ref() is U), None)

    def mttkrp(self, factors: Sequence[np.ndarray], p: int) -> np.ndarray:
        """M_(p) (kr_{q != p} U_q) of host factors, computed on the device."""
        xp = self.xp
        others = [q for q in range(len(self.views)) if q != p]
        if self.dense:
            K = _khatri_rao(xp, [self._dev(factors[q]) for q in others])
            return self._host(self._unfolding(p) @ K)
        H = None
        for q in others:
            P = self._projection(q, factors[q])
            H = P if H is None else H * P
        return self._host(self.views[p].Y.T @ H) / self.N

    def residual_sq(self, factors: Sequence[np.ndarray]) -> float | None:
        """||M - [[U_1, ..., U_m]]||^2 summed directly (dense engine), else None.

        Without it the tensor-free engine keeps the Gram formula of the error where
        it cancels, which is exact to the cancellation (a degenerate fit is still
        caught: :data:`.als.DEGENERATE`).
        """
        if not self.dense:
            return None
        xp = self.xp
        K = _khatri_rao(xp, [self._dev(U) for U in factors[1:]])
        R = self._unfolding(0) - self._dev(factors[0]) @ K.T
        return float(xp.sum(R * R))

    def correlations(self, factors: Sequence[np.ndarray]) -> np.ndarray:
        """rho_k = (1/N) sum_n prod_p (Y_p U_p)[n, k], on the device."""
        xp = self.xp
        H = None
        for v, U in zip(self.views, factors, strict=True):
            P = v.Y @ self._dev(U)
            H = P if H is None else H * P
        assert H is not None
        return self._host(xp.sum(H, axis=0)) / self.N


def _nbytes(A) -> int:
    return int(np.prod(A.shape)) * (4 if "32" in str(A.dtype) else 8)


def _check_finite(xp, X, p: int) -> None:
    if not bool(xp.all(xp.isfinite(X))):
        raise ValueError(f"view {p} contains NaN or infinity")


class DeviceSource:
    """The passes of :func:`.path.tcca_rank_path` over views on a device."""

    def __init__(self, xp, device):
        self.xp, self.device = xp, device

    def check_views(self, views, algorithm: str) -> list:
        """2-D arrays of one number of samples (at least 2), finite, float."""
        xp = self.xp
        if len(views) < 2:
            raise ValueError(f"at least 2 views are needed, got {len(views)}")
        out = []
        for p, X in enumerate(views):
            if X.ndim != 2:
                raise ValueError(f"view {p} must be 2-D (n_samples, d), got {X.shape}")
            out.append(X)
        n = [X.shape[0] for X in out]
        if len(set(n)) != 1:
            raise ValueError(
                f"all views must have the same number of samples (rows); got {n}"
            )
        if n[0] < 2:
            raise ValueError(f"at least 2 samples are needed, got {n[0]}")
        # one dtype for all: float32 only when every view is float32
        dtype = xp.float64
        if all(X.dtype == xp.float32 for X in out):
            dtype = xp.float32
        out = [X if X.dtype == dtype else xp.astype(X, dtype) for X in out]
        for p, X in enumerate(out):
            _check_finite(xp, X, p)
        if algorithm == "tensorly":
            raise ValueError(
                "algorithm='tensorly' runs on NumPy arrays only; use 'auto', "
                "'dense' or 'implicit' on array-API arrays"
            )
        return out

    def statistics(self, views, center: bool):
        """Means on the device; covariances on the host (d x d, float64)."""
        xp = self.xp
        means, covs = [], []
        for X in views:
            N = X.shape[0]
            mu = (
                xp.mean(X, axis=0)
                if center
                else xp.zeros(X.shape[1], dtype=X.dtype, device=self.device)
            )
            Xc = X - mu
            C = to_host(Xc.T @ Xc / N).astype(np.float64)
            means.append(mu)
            covs.append((C + C.T) / 2)

        def check_constant():
            for p, X in enumerate(views):
                if bool(xp.all(xp.max(X, axis=0) == xp.min(X, axis=0))):
                    raise ValueError(
                        f"view {p} is constant over the samples (all rows are "
                        "equal), so the moment tensor is zero and TCCA has no "
                        "component"
                    )

        return means, covs, check_constant

    def engine(self, views, means, whiteners, rank: int, algorithm: str):
        """Return the engine NumPy's cost model picks, its operator on the device."""
        from .engine import MomentEngine, choose_engine

        xp = self.xp
        wviews = []
        for X, mu, W in zip(views, means, whiteners, strict=True):
            nnz = int(xp.count_nonzero(X))
            Y = (X - mu) @ to_device(W, xp, self.device, X.dtype)
            wviews.append(DeviceView(Y, nnz))
        N, dims = wviews[0].N, [v.d for v in wviews]
        sparse = all(v.sparse is not None for v in wviews)
        nnz_rows = [v.nnz_per_row for v in wviews] if sparse else None
        name = choose_engine(N, dims, rank, algorithm, nnz_rows)
        op = DeviceMoment(wviews, xp, self.device, dense=name == "dense")
        return MomentEngine(wviews, name, op=op)  # type: ignore[arg-type]

    def finish(self, outs: list[dict], dtype) -> list[dict]:
        """Every fitted array moved to the device, in the views' dtype."""
        xp, dev = self.xp, self.device
        for o in outs:
            for key in ("whiteners", "factors", "projections"):
                o[key] = [to_device(A, xp, dev, dtype) for A in o[key]]
            for key in ("weights", "correlations"):
                o[key] = to_device(o[key], xp, dev, dtype)
        return outs


def transform(estimator, views, per_view: bool, namespace):
    """[Z_1 ... Z_m] with Z_p = (X_p - mean_p) W_p, on the views' device."""
    from sklearn.utils.validation import check_is_fitted

    check_is_fitted(estimator, "projections_")
    xp, device = namespace
    compat = _compat()
    W0 = estimator.projections_[0]
    if isinstance(W0, np.ndarray) or compat.array_namespace(W0) is not xp:
        raise ValueError(
            "the estimator was fitted on arrays of another library; transform "
            "takes arrays of the library (and device) it was fitted on"
        )
    d = estimator.n_features_in_
    if len(views) != len(d):
        raise ValueError(
            f"the estimator was fitted on {len(d)} views, got {len(views)}"
        )
    Z = []
    for p, (X, mu, W) in enumerate(
        zip(views, estimator.means_, estimator.projections_, strict=True)
    ):
        if X.ndim != 2 or X.shape[1] != d[p]:
            raise ValueError(
                f"view {p} has shape {tuple(X.shape)}; {d[p]} features were seen in fit"
            )
        X = X if X.dtype == W.dtype else xp.astype(X, W.dtype)
        _check_finite(xp, X, p)
        Z.append((X - mu) @ W)
    return Z if per_view else xp.concat(Z, axis=1)


def mean_of(x) -> float:
    """Return the mean of a device array, as a float."""
    return float(_compat().array_namespace(x).mean(x))


def variate_correlations(estimator, Zs, statistic: str, namespace):
    """:func:`.._multiview.variate_correlations` of device variates, on the device."""
    xp, _ = namespace
    if Zs[0].shape[0] < 2:
        raise ValueError(
            "scoring needs at least 2 samples (correlations are computed over the "
            f"samples), got {Zs[0].shape[0]}"
        )
    S = []
    for p, Z in enumerate(Zs):
        _check_finite(xp, Z, p)
        Zc = Z - xp.mean(Z, axis=0)
        sd = xp.sqrt(xp.mean(Zc**2, axis=0))
        scale = xp.max(xp.abs(Z), axis=0)
        eps = xp.finfo(Z.dtype)
        ok = sd > 1e3 * eps.eps * xp.clip(scale, min=eps.smallest_normal)
        S.append(xp.where(ok, Zc / xp.where(ok, sd, 1.0), 0.0))
    m = len(S)
    if statistic == "high_order":
        H = S[0]
        for Z in S[1:]:
            H = H * Z
        rho = xp.mean(H, axis=0)
    else:
        pairs = [
            xp.mean(S[p] * S[q], axis=0) for p in range(m) for q in range(p + 1, m)
        ]
        rho = sum(pairs[1:], pairs[0]) / (m * (m - 1) / 2)
    sign = xp.sign(estimator.correlations_)
    return rho * xp.where(sign == 0, 1.0, sign)

"""Kernels for KTCCA and the kernel baselines (BSK, AVG, KCCA).

The paper (section 5.2) uses k(x_i, x_j) = exp(-d(x_i, x_j) / lambda) with
lambda = max_{i,j} d(x_i, x_j) over the training samples, d the chi-square distance
for histograms and the (unsquared) L2 distance otherwise. Those are ``"chi2"`` and
``"l2"`` here; ``lambda`` is learned in ``fit`` and reused for new samples.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import scipy.sparse as sp
from sklearn.metrics.pairwise import (
    additive_chi2_kernel,
    euclidean_distances,
    linear_kernel,
    rbf_kernel,
)

from ._validation import Interval, check_magnitude

__all__ = [
    "KERNELS",
    "ViewKernel",
    "center_kernel",
    "center_cross_kernel",
    "chi2_distance",
    "l2_distance",
]

KERNELS = ("linear", "rbf", "chi2", "l2", "precomputed")


def chi2_distance(X, Y=None) -> np.ndarray:
    """d(x, y) = sum_i (x_i - y_i)^2 / (x_i + y_i), with 0/0 = 0; needs X, Y >= 0."""
    X = X.toarray() if sp.issparse(X) else X
    Y = X if Y is None else (Y.toarray() if sp.issparse(Y) else Y)
    if (X < 0).any() or (Y < 0).any():
        raise ValueError(
            "the chi-square distance needs non-negative features (histograms); "
            "use kernel='l2' or 'rbf' for signed features"
        )
    D = -additive_chi2_kernel(X, Y)
    return np.maximum(D, 0.0)


def l2_distance(X, Y=None) -> np.ndarray:
    """Unsquared Euclidean distance, as in the paper."""
    return euclidean_distances(X, Y)


_DISTANCES = {"chi2": chi2_distance, "l2": l2_distance}
_POSITIVE = Interval("real", 0, None, closed="neither")


class ViewKernel:
    """One view's kernel: ``fit`` returns K(X, X), ``cross`` returns K(Y, X).

    Parameters
    ----------
    kernel : {"linear", "rbf", "chi2", "l2", "precomputed"} or callable
        ``"chi2"`` and ``"l2"`` are the paper's exp(-d / max d) kernels. A callable
        gets ``(A, B)`` and returns the kernel matrix between rows of A and B.
    gamma : float, "scale" or None, default=None
        Width of ``"rbf"``, exp(-gamma ||x - y||^2) (scikit-learn's convention).
        None is 1 / n_features, which suits standardized features only: on raw
        features of a larger scale (pixels at 0-16) every sample is then far
        from every other, the kernel matrix is about the identity and KTCCA's
        components are spikes on single samples. ``"scale"`` is
        1 / (n_features * X.var()) of the training samples, as scikit-learn's
        ``SVC(gamma="scale")``: the same width on any scale of the features.
    """

    def __init__(
        self, kernel: str | Callable = "l2", *, gamma: float | str | None = None
    ):
        if not callable(kernel) and kernel not in KERNELS:
            raise ValueError(f"unknown kernel {kernel!r}; choose one of {KERNELS}")
        # else scikit-learn's rbf_kernel rejects it only in fit, naming itself
        if gamma is not None and gamma != "scale" and not _POSITIVE.accepts(gamma):
            raise ValueError(
                f"gamma must be None, 'scale' or a finite number > 0, got {gamma!r}"
            )
        self.kernel = kernel
        self.gamma = gamma

    @classmethod
    def for_view(cls, kernel, kernel_params, p: int) -> ViewKernel:
        """Build view ``p``'s kernel from its ``kernel`` and ``kernel_params`` entries.

        A bad entry raises a ``ValueError`` that names view ``p``.
        """
        if not isinstance(kernel_params, dict):
            raise ValueError(
                f"kernel_params of view {p} must be a dict (e.g. {{'gamma': 0.5}}), "
                f"got {kernel_params!r}"
            )
        unknown = sorted(set(kernel_params) - {"gamma"})
        if unknown:
            raise ValueError(
                f"kernel_params of view {p} has unknown key(s) {unknown}; the only "
                "kernel parameter is 'gamma'"
            )
        try:
            return cls(kernel, **kernel_params)
        except ValueError as exc:
            raise ValueError(f"view {p}: {exc}") from None

    def evaluate(self, A, B) -> np.ndarray:
        """Return the kernel between the rows of ``A`` and ``B``, unchecked."""
        k = self.kernel
        if callable(k):
            return np.asarray(k(A, B), dtype=np.float64)
        if k == "linear":
            return np.asarray(linear_kernel(A, B))
        if k == "rbf":
            gamma = self.gamma_ if self.gamma == "scale" else self.gamma
            return rbf_kernel(A, B, gamma=gamma)
        return np.exp(-_DISTANCES[k](A, B) / self.scale_)

    def fit(self, X) -> np.ndarray:
        """Remember the training samples and return the training kernel matrix."""
        if self.kernel == "precomputed":
            K = np.asarray(X, dtype=np.float64)
            if K.ndim != 2 or K.shape[0] != K.shape[1]:
                raise ValueError(
                    f"a precomputed kernel must be square, got shape {K.shape}"
                )
            self.n_train_ = K.shape[0]
            self.n_features_in_ = K.shape[1]  # a cross kernel has n_train columns
            return K
        self.X_ = X
        self.n_features_in_ = X.shape[1]
        if self.gamma == "scale":
            self.gamma_ = _scale_gamma(X)
        if self.kernel in _DISTANCES:
            D = _DISTANCES[self.kernel](X)
            scale = float(D.max())
            # All training samples identical: any positive scale gives K = 1.
            self.scale_ = scale if scale > 0 else 1.0
            return np.exp(-D / self.scale_)
        K = self._checked(self.evaluate(X, X), X.shape[0], "the kernel matrix")
        # KTCCA and KCCA form K^2: a linear kernel of large features overflows.
        check_magnitude(K, K.shape, "the kernel matrix")
        return K

    def _checked(self, K: np.ndarray, n_rows: int, what: str) -> np.ndarray:
        """``K`` if it is a finite (n_rows, n_train) matrix, else a named error.

        A callable kernel is the user's code: what it returns is checked in ``fit``
        and in ``cross`` (``transform`` time) alike.
        """
        n_train = self.X_.shape[0]
        if K.ndim != 2 or K.shape != (n_rows, n_train):
            source = "the kernel function" if callable(self.kernel) else "the kernel"
            raise ValueError(
                f"{source} returned an array of shape {K.shape} for {n_rows} and "
                f"{n_train} samples; {what} must have shape ({n_rows}, {n_train})"
            )
        if not np.all(np.isfinite(K)):
            raise ValueError(
                f"{what} contains NaN or infinity (overflow in the kernel "
                "function?); rescale the features"
            )
        return K

    def cross(self, Y) -> np.ndarray:
        """Kernel between new samples (rows of Y) and the training samples."""
        if self.kernel == "precomputed":
            K = np.asarray(Y, dtype=np.float64)
            if K.ndim != 2 or K.shape[1] != self.n_train_:
                raise ValueError(
                    "a precomputed test kernel must have shape (n_new, n_train) = "
                    f"(*, {self.n_train_}), got {K.shape}"
                )
            return K
        K = self.evaluate(Y, self.X_)
        if callable(self.kernel):
            K = self._checked(K, Y.shape[0], "the cross kernel matrix")
        return K


def _scale_gamma(X) -> float:
    """1 / (n_features * X.var()) over all entries, 1.0 for constant X (as sklearn)."""
    if sp.issparse(X):
        n = X.shape[0] * X.shape[1]
        mean = X.sum() / n
        var = X.multiply(X).sum() / n - mean**2
    else:
        var = np.asarray(X, dtype=float).var()
    var = float(var)
    return 1.0 / (X.shape[1] * var) if var > 0 else 1.0


def center_kernel(K: np.ndarray):
    """Center a training kernel in feature space: H K H with H = I - 11^T/N.

    Returns the centered kernel and the statistics that ``center_cross_kernel``
    needs to center kernels of new samples the same way.
    """
    col_mean = K.mean(axis=0)
    total = col_mean.mean()
    Kc = K - col_mean[None, :] - col_mean[:, None] + total
    return (Kc + Kc.T) / 2, (col_mean, total)


def center_cross_kernel(Kx: np.ndarray, stats) -> np.ndarray:
    """Center K(new, train) with the training statistics from ``center_kernel``."""
    col_mean, total = stats
    return Kx - col_mean[None, :] - Kx.mean(axis=1, keepdims=True) + total

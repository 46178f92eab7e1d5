"""Base learners of the paper's experiments: RLS and kNN (Luo et al., TKDE 2015, 5.1).

Rows are samples throughout.

RLS (regularized least squares, following Foster et al. 2008) solves

    min_w (1/N_l) sum_n (w^T xbar_n - y_n)^2 + gamma ||w||^2,   xbar = [x; 1],

with gamma = 1e-2. The constant feature is part of w, so the bias is penalized too,
exactly as the objective says (sklearn's Ridge leaves the intercept unpenalized, so it
is not used). Multi-class problems are one-vs-rest with +-1 targets.

kNN uses the Euclidean distance to the labeled points (or, for kernels, the feature
space distance d_K^2 = K_ii + K_jj - 2 K_ij) and evaluates every k = 1..k_max from one
sorted distance matrix, because the paper picks k in 1..10 on validation.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np
import scipy.linalg as sla
import scipy.sparse as sp
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.metrics.pairwise import euclidean_distances
from sklearn.utils.validation import check_is_fitted

from ._validation import (
    Interval,
    Options,
    ParamsMixin,
    check_magnitude,
    check_positive_int,
)

__all__ = [
    "RLS",
    "KernelRLS",
    "KNN",
    "KNNResult",
    "rls_coef",
    "one_vs_rest_targets",
    "knn_from_distances",
    "euclidean_knn",
    "kernel_knn",
]

# Rows of the query set processed at once by kNN, to bound the memory of the
# (n_query, n_ref) distance and ordering arrays.
_CHUNK = 4096


def _check_xy(X, y):
    """Return X (dense float array or CSR) and y (1-D) checked for shape and NaN."""
    if not sp.issparse(X):
        X = np.asarray(X)
    if X.ndim != 2:
        raise ValueError(f"X must be 2-D (n_samples, n_features), got shape {X.shape}")
    if X.dtype.kind not in "biuf":
        raise ValueError(f"X has dtype {X.dtype}; pass real numbers (float, int, bool)")
    if sp.issparse(X):
        X = sp.csr_matrix(X, dtype=np.float64)
        data = X.data
    else:
        X = np.asarray(X, dtype=np.float64)
        data = X
    if y is not None and X.shape[0] == 0:
        raise ValueError(f"X has no samples (shape {X.shape})")
    if X.shape[1] == 0:
        raise ValueError(f"X has no features (shape {X.shape})")
    if not np.all(np.isfinite(data)):
        raise ValueError("X contains NaN or infinity")
    check_magnitude(data, X.shape, "X")
    if y is not None:
        y = np.asarray(y)
        if y.ndim != 1:
            raise ValueError(f"y must be 1-D, got shape {y.shape}")
        if y.shape[0] != X.shape[0]:
            raise ValueError(f"X has {X.shape[0]} rows but y has {y.shape[0]} labels")
    return X, y


def one_vs_rest_targets(y, classes=None):
    """+-1 target matrix of shape (n, C) and the sorted classes.

    For two classes a single column (+1 for ``classes[1]``) is returned, so that the
    binary score is the usual sign-decided w^T xbar.
    """
    y = np.asarray(y)
    classes = np.unique(y) if classes is None else np.asarray(classes)
    if classes.size < 2:
        raise ValueError(
            "RLS needs at least 2 classes among the labeled samples, "
            f"got {classes.size}"
        )
    Y = np.where(y[:, None] == classes[None, :], 1.0, -1.0)
    return (Y[:, 1:] if classes.size == 2 else Y), classes


def rls_coef(X, Y, gamma: float, solver: str = "auto") -> np.ndarray:
    """Closed-form RLS weights for xbar = [x; 1]: array of shape (D + 1, C).

    Primal: W = (Xbar^T Xbar + gamma N_l I)^(-1) Xbar^T Y.
    Dual:   W = Xbar^T (Xbar Xbar^T + gamma N_l I)^(-1) Y,
    identical by the push-through identity; ``"auto"`` picks the smaller system
    (dual when D + 1 > N_l). Both systems are positive definite for gamma > 0.
    """
    N_l, D = X.shape
    if solver == "auto":
        solver = "dual" if D + 1 > N_l else "primal"
    ones = np.ones((N_l, 1))
    if solver == "primal":
        Xbar = (
            sp.hstack([X, ones], format="csr")
            if sp.issparse(X)
            else np.hstack([X, ones])
        )
        A = Xbar.T @ Xbar
        A = A.toarray() if sp.issparse(A) else A
        A = A + gamma * N_l * np.eye(D + 1)
        return sla.solve(A, np.asarray(Xbar.T @ Y), assume_a="pos")
    if solver == "dual":
        G = X @ X.T
        G = G.toarray() if sp.issparse(G) else np.asarray(G)
        # Xbar Xbar^T = X X^T + 1 1^T: the appended constant feature.
        G = G + 1.0 + gamma * N_l * np.eye(N_l)
        alpha = sla.solve(G, Y, assume_a="pos")
        return np.vstack([np.asarray(X.T @ alpha), alpha.sum(axis=0, keepdims=True)])
    raise ValueError(f"solver must be 'auto', 'primal' or 'dual', got {solver!r}")


def _decide(scores: np.ndarray, classes: np.ndarray) -> np.ndarray:
    """Sign for a binary score (0 goes to classes[0]), argmax for one-vs-rest."""
    if scores.ndim == 1:
        return classes[(scores > 0).astype(int)]
    return classes[np.argmax(scores, axis=1)]


class RLS(ParamsMixin, ClassifierMixin, BaseEstimator):
    """Regularized least squares classifier with a penalized bias (Luo et al. 5.1).

    Minimizes (1/N_l) sum_n (w^T xbar_n - y_n)^2 + gamma ||w||^2 with xbar = [x; 1]
    for each one-vs-rest +-1 target (one target for two classes).

    Parameters
    ----------
    gamma : float, default=1e-2
        The paper's trade-off gamma (Foster et al. 2008 use 1e-2).
    solver : {"auto", "primal", "dual"}, default="auto"
        ``"auto"`` solves the (D+1) x (D+1) primal system when D + 1 <= N_l and the
        N_l x N_l dual system otherwise; the two give the same weights.

    Attributes
    ----------
    classes_ : ndarray of shape (C,)
    coef_ : ndarray of shape (n_features, C') with C' = 1 for two classes, else C
    intercept_ : ndarray of shape (C',)
        The weight of the appended constant feature (penalized like the others).

    References
    ----------
    D. P. Foster, R. Johnson, S. M. Kakade, T. Zhang. Multi-view dimensionality
    reduction via canonical correlation analysis. TTI-TR-2008-4, 2008.
    Y. Luo et al., IEEE TKDE 2015, section 5.1.
    """

    _parameter_constraints: ClassVar[dict] = {
        "gamma": [Interval("real", 0, None, closed="neither")],
        "solver": [Options("auto", "primal", "dual")],
    }

    def __init__(self, gamma: float = 1e-2, *, solver: str = "auto"):
        self.gamma = gamma
        self.solver = solver

    def fit(self, X, y):
        """Fit on labeled samples X (n, D), dense or sparse, and labels y (n,)."""
        p = self._validate_params()
        X, y = _check_xy(X, y)
        Y, self.classes_ = one_vs_rest_targets(y)
        W = rls_coef(X, Y, p["gamma"], p["solver"])
        self.coef_, self.intercept_ = W[:-1], W[-1]
        self.n_features_in_ = X.shape[1]
        return self

    def decision_function(self, X) -> np.ndarray:
        """Scores w^T xbar: shape (n,) for two classes, (n, C) otherwise."""
        check_is_fitted(self, "coef_")
        X, _ = _check_xy(X, None)
        if X.shape[1] != self.n_features_in_:
            raise ValueError(
                f"X has {X.shape[1]} features, RLS was fitted with "
                f"{self.n_features_in_}"
            )
        S = np.asarray(X @ self.coef_) + self.intercept_
        return S[:, 0] if self.classes_.size == 2 else S

    def predict(self, X) -> np.ndarray:
        """Predict the class of each row of X (the largest score)."""
        return _decide(self.decision_function(X), self.classes_)


class KernelRLS(ParamsMixin, ClassifierMixin, BaseEstimator):
    """RLS in a kernel's feature space, with the kernel analogue of the constant 1.

    With phibar(x) = [phi(x); 1] the dual solution of the RLS objective is
    alpha = (K_ll + 1 1^T + gamma N_l I)^(-1) Y and the scores are
    (K_tl + 1 1^T) alpha (baselines.md section 8, BSK).

    Parameters
    ----------
    gamma : float, default=1e-2

    Attributes
    ----------
    classes_ : ndarray of shape (C,)
    dual_coef_ : ndarray of shape (N_l, C')
    """

    _parameter_constraints: ClassVar[dict] = {
        "gamma": [Interval("real", 0, None, closed="neither")],
    }

    def __init__(self, gamma: float = 1e-2):
        self.gamma = gamma

    def fit(self, K, y):
        """Fit on the (N_l, N_l) kernel between labeled samples and their labels."""
        gamma = self._validate_params()["gamma"]
        K, y = _check_xy(K, y)
        if K.shape[0] != K.shape[1]:
            raise ValueError(f"the training kernel must be square, got {K.shape}")
        Y, self.classes_ = one_vs_rest_targets(y)
        N_l = K.shape[0]
        G = K + 1.0 + gamma * N_l * np.eye(N_l)
        try:
            self.dual_coef_ = sla.solve((G + G.T) / 2, Y, assume_a="pos")
        except np.linalg.LinAlgError:
            low = float(np.linalg.eigvalsh((K + K.T) / 2)[0])
            raise ValueError(
                "K + 1 + gamma N_l I is not positive definite: the training kernel "
                f"is not positive semidefinite (smallest eigenvalue {low:.3g})"
            ) from None
        return self

    def decision_function(self, K) -> np.ndarray:
        """Scores from the (n, N_l) kernel between new and labeled samples."""
        check_is_fitted(self, "dual_coef_")
        K, _ = _check_xy(K, None)
        if K.shape[1] != self.dual_coef_.shape[0]:
            raise ValueError(
                f"the kernel has {K.shape[1]} columns, but {self.dual_coef_.shape[0]} "
                "labeled samples were used in fit"
            )
        S = (K + 1.0) @ self.dual_coef_
        return S[:, 0] if self.classes_.size == 2 else S

    def predict(self, K) -> np.ndarray:
        """Predict from the (n, N_l) kernel between new and labeled samples."""
        return _decide(self.decision_function(K), self.classes_)


@dataclass
class KNNResult:
    """kNN outcome for every k = 1..k_max at once.

    Attributes
    ----------
    classes : ndarray of shape (C,)
    labels : ndarray of shape (k_max, n_query)
        ``labels[k - 1]`` are the predictions with k neighbours.
    votes : ndarray of shape (k_max, n_query, C)
        Vote fractions: share of the k nearest neighbours in each class.
    """

    classes: np.ndarray
    labels: np.ndarray
    votes: np.ndarray

    @property
    def k_values(self) -> np.ndarray:
        """The k of each row of ``labels``: 1..k_max."""
        return np.arange(1, self.labels.shape[0] + 1)


def _knn_chunk(D: np.ndarray, codes_ref: np.ndarray, C: int, k_max: int):
    n = D.shape[0]
    # Stable sort: neighbours at equal distance are ranked by their index in the
    # reference set, so the order (and everything after it) is deterministic.
    order = np.argsort(D, axis=1, kind="stable")[:, :k_max]
    nb = codes_ref[order]  # (n, k_max) class codes of the ranked neighbours
    onehot = nb[:, :, None] == np.arange(C)[None, None, :]
    counts = np.cumsum(onehot, axis=1)  # counts[:, k-1, c] among the k nearest
    # Rank of the first (nearest) neighbour of each class; k_max if absent.
    first = np.where(onehot.any(axis=1), np.argmax(onehot, axis=1), k_max)
    # Majority vote; a tie goes to the tied class whose nearest member is nearest
    # (baselines.md section 1). counts are integers and first < k_max + 1, so the
    # combined key orders by count, then by nearness.
    key = counts * (k_max + 1) - first[:, None, :]
    pred = np.argmax(key, axis=2).T  # (k_max, n)
    k = np.arange(1, k_max + 1)[None, :, None]
    votes = np.transpose(counts / k, (1, 0, 2))  # (k_max, n, C)
    return pred, votes, n


def knn_from_distances(D, y_ref, k_max: int = 10, classes=None) -> KNNResult:
    """KNN predictions for all k = 1..k_max from a (n_query, n_ref) distance matrix.

    Neighbours are ranked by distance, ties in distance by reference index (lower
    first). The predicted class is the majority among the k nearest; a tie in the
    count goes to the tied class that owns the nearest of the k neighbours
    (baselines.md section 1: sklearn would pick the lowest class index, which biases
    toward class 0).

    Parameters
    ----------
    D : ndarray of shape (n_query, n_ref)
        Any monotone function of the distance (e.g. squared distances).
    y_ref : array-like of shape (n_ref,)
    k_max : int, default=10
        Capped at n_ref.
    classes : array-like, optional
        Class order of ``votes``; defaults to the sorted labels of ``y_ref``.
    """
    D = np.asarray(D, dtype=np.float64)
    y_ref = np.asarray(y_ref)
    if D.ndim != 2 or D.shape[1] != y_ref.shape[0]:
        raise ValueError(
            f"D must have shape (n_query, n_ref={y_ref.shape[0]}), got {D.shape}"
        )
    if np.isnan(D).any():
        raise ValueError("the distance matrix contains NaN")
    k_max = min(check_positive_int(k_max, "k_max"), y_ref.shape[0])
    classes = np.unique(y_ref) if classes is None else np.asarray(classes)
    codes = np.searchsorted(classes, y_ref)
    if np.any(codes >= classes.size) or np.any(classes[codes] != y_ref):
        raise ValueError("y_ref contains labels that are not in classes")
    C = classes.size
    labels = np.empty((k_max, D.shape[0]), dtype=np.intp)
    votes = np.empty((k_max, D.shape[0], C))
    for s in range(0, D.shape[0], _CHUNK):
        pred, v, n = _knn_chunk(D[s : s + _CHUNK], codes, C, k_max)
        labels[:, s : s + n] = pred
        votes[:, s : s + n] = v
    return KNNResult(classes=classes, labels=classes[labels], votes=votes)


def euclidean_knn(X_ref, y_ref, X_query, k_max: int = 10) -> KNNResult:
    """KNN with the Euclidean distance for all k = 1..k_max (see knn_from_distances)."""
    X_ref, y_ref = _check_xy(X_ref, y_ref)
    X_query, _ = _check_xy(X_query, None)
    if X_query.shape[1] != X_ref.shape[1]:
        raise ValueError(
            f"query has {X_query.shape[1]} features, reference has {X_ref.shape[1]}"
        )
    # Squared distances rank neighbours like the distances and skip the sqrt.
    D = euclidean_distances(X_query, X_ref, squared=True)
    return knn_from_distances(D, y_ref, k_max)


def kernel_knn(
    K_query_ref, y_ref, k_max: int = 10, diag_query=None, diag_ref=None
) -> KNNResult:
    """KNN with the kernel distance d_K^2 = K_ii + K_jj - 2 K_ij, all k = 1..k_max.

    Without ``diag_query``/``diag_ref`` the kernel is taken to have a constant
    diagonal (true for the paper's exp(-d / max d) kernels), so neighbours are
    ranked by decreasing K_ij.
    """
    K, _ = _check_xy(K_query_ref, None)
    if sp.issparse(K):
        K = K.toarray()
    dq = 0.0 if diag_query is None else np.asarray(diag_query, float)[:, None]
    dr = 0.0 if diag_ref is None else np.asarray(diag_ref, float)[None, :]
    return knn_from_distances(dq + dr - 2.0 * K, y_ref, k_max)


class KNN(ParamsMixin, ClassifierMixin, BaseEstimator):
    """k-nearest-neighbour classifier with the documented deterministic tie-breaking.

    Parameters
    ----------
    n_neighbors : int, default=1
    metric : {"euclidean", "precomputed"}, default="euclidean"
        With ``"precomputed"``, ``predict`` takes a (n_query, n_train) distance
        matrix.
    """

    _parameter_constraints: ClassVar[dict] = {
        "n_neighbors": [Interval("integer", 1, None)],
        "metric": [Options("euclidean", "precomputed")],
    }

    def __init__(self, n_neighbors: int = 1, *, metric: str = "euclidean"):
        self.n_neighbors = n_neighbors
        self.metric = metric

    def fit(self, X, y):
        """Store the labeled samples (or, with "precomputed", only their labels)."""
        self._validate_params()
        X, y = _check_xy(X, y)
        self.X_fit_, self.y_fit_ = X, y
        self.classes_ = np.unique(y)
        return self

    def _result(self, X) -> KNNResult:
        check_is_fitted(self, "y_fit_")
        if self.metric == "precomputed":
            return knn_from_distances(X, self.y_fit_, self.n_neighbors, self.classes_)
        X, _ = _check_xy(X, None)
        D = euclidean_distances(X, self.X_fit_, squared=True)
        return knn_from_distances(D, self.y_fit_, self.n_neighbors, self.classes_)

    def predict(self, X) -> np.ndarray:
        """Predict the class of each query row (features or distances)."""
        return self._result(X).labels[-1]

    def predict_proba(self, X) -> np.ndarray:
        """Return the vote fractions of the classes among the n_neighbors nearest."""
        return self._result(X).votes[-1]

"""Baselines without a learned subspace: BSF, CAT (linear) and BSK, AVG (kernel).

Rows are samples. These methods have no dimension r; the protocol
(:mod:`tcca_core.protocol`) picks the view (BSF, BSK) and the kNN k on validation.

- BSF (best single view feature): each view's per-instance L2-normalised features,
  the view chosen on validation (Luo et al. 5.1; baselines.md section 2).
- CAT: the L2-normalised views concatenated, x = [x_1; ...; x_m] (baselines.md
  section 3, our normalisation decision).
- BSK: kNN with one view's kernel (d_K^2 = K_ii + K_jj - 2 K_ij), view chosen on
  validation (Luo et al. 5.2).
- AVG: kNN with the average of the normalised kernels,
  Kbar = (1/m) sum_p K_p(x, y) / sqrt(K_p(x, x) K_p(y, y)) (Luo et al. 5.2).
"""

from __future__ import annotations

from typing import cast

import numpy as np
import scipy.sparse as sp

from .._validation import check_views

__all__ = [
    "l2_normalize_rows",
    "normalize_views",
    "concatenate_views",
    "normalize_kernel",
    "average_kernels",
]


def l2_normalize_rows(X):
    """X <- x / ||x||_2 for every row; all-zero rows are left as they are.

    Works on dense arrays and sparse matrices (returned as CSR).
    """
    if sp.issparse(X):
        X = sp.csr_matrix(X, dtype=np.float64)
        norms = np.sqrt(np.asarray(X.multiply(X).sum(axis=1)).ravel())
        scale = np.divide(1.0, norms, out=np.ones_like(norms), where=norms > 0)
        return sp.diags(scale) @ X
    X = np.asarray(X, dtype=np.float64)
    if X.ndim != 2:
        raise ValueError(
            f"l2_normalize_rows needs a 2-D array (n_samples, n_features), got shape "
            f"{X.shape}; reshape one sample with X.reshape(1, -1)"
        )
    norms = np.linalg.norm(X, axis=1, keepdims=True)
    return X / np.where(norms > 0, norms, 1.0)


def normalize_views(views) -> list:
    """BSF's representations: each view L2-normalised per instance."""
    views = check_views(views, min_views=1)
    return [l2_normalize_rows(X) for X in views]


def concatenate_views(views):
    """CAT's representation: [x_1 / ||x_1||; ...; x_m / ||x_m||] per instance.

    Sparse if any view is sparse, dense otherwise.
    """
    Xs = normalize_views(views)
    if any(sp.issparse(X) for X in Xs):
        return sp.hstack(Xs, format="csr")
    return np.hstack(Xs)


def normalize_kernel(K, diag_rows=None, diag_cols=None) -> np.ndarray:
    """K_ij / sqrt(K_ii K_jj).

    For a square training kernel the diagonals default to ``diag(K)``. For a cross
    kernel K(new, train) pass ``diag_rows`` = k(x_new, x_new) and ``diag_cols`` =
    diag of the training kernel. A zero self-similarity (only possible for a zero
    feature vector with e.g. a linear kernel) leaves its row/column unscaled.
    """
    K = np.asarray(K, dtype=np.float64)
    if diag_rows is None or diag_cols is None:
        if K.shape[0] != K.shape[1]:
            raise ValueError(
                "a non-square (cross) kernel needs diag_rows and diag_cols"
            )
        d = np.diag(K)
        diag_rows = d if diag_rows is None else diag_rows
        diag_cols = d if diag_cols is None else diag_cols
    dr = np.asarray(diag_rows, dtype=np.float64)
    dc = np.asarray(diag_cols, dtype=np.float64)
    if np.any(dr < 0) or np.any(dc < 0):
        raise ValueError("a kernel's self-similarities k(x, x) must be >= 0")
    sr = np.where(dr > 0, np.sqrt(dr), 1.0)
    sc = np.where(dc > 0, np.sqrt(dc), 1.0)
    return K / sr[:, None] / sc[None, :]


def average_kernels(kernels, diags_rows=None, diags_cols=None) -> np.ndarray:
    """AVG's kernel: (1/m) sum_p of the normalised kernels (see normalize_kernel)."""
    if not isinstance(kernels, (list, tuple)) or len(kernels) == 0:
        raise ValueError("kernels must be a non-empty list of kernel matrices")
    shapes = {np.shape(K) for K in kernels}
    if len(shapes) != 1:
        raise ValueError(f"all kernels must have the same shape, got {sorted(shapes)}")
    m = len(kernels)
    dr = diags_rows or [None] * m
    dc = diags_cols or [None] * m
    total = sum(
        normalize_kernel(K, a, b) for K, a, b in zip(kernels, dr, dc, strict=True)
    )
    return cast(np.ndarray, total / m)

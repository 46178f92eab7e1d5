"""BSF/CAT normalisation and BSK/AVG kernel helpers."""

import numpy as np
import pytest
import scipy.sparse as sp
from numpy.testing import assert_allclose

from tcca_core.baselines import (
    average_kernels,
    concatenate_views,
    l2_normalize_rows,
    normalize_kernel,
    normalize_views,
)

pytestmark = pytest.mark.usefixtures("single_blas_thread")


def test_l2_normalize_rows_unit_norm_and_zero_rows_kept(rng):
    X = rng.standard_normal((5, 3))
    X[2] = 0
    Z = l2_normalize_rows(X)
    norms = np.linalg.norm(Z, axis=1)
    assert_allclose(norms[[0, 1, 3, 4]], 1.0)
    assert np.all(Z[2] == 0)
    assert_allclose(Z[0], X[0] / np.linalg.norm(X[0]))


def test_l2_normalize_rows_sparse_equals_dense(rng):
    X = rng.standard_normal((6, 4)) * (rng.random((6, 4)) > 0.5)
    X[1] = 0
    Z = l2_normalize_rows(sp.csr_matrix(X))
    assert sp.issparse(Z)
    assert_allclose(Z.toarray(), l2_normalize_rows(X))


def test_concatenate_views_balances_views(rng):
    views = [rng.standard_normal((4, 2)) * 100, rng.standard_normal((4, 3))]
    Z = concatenate_views(views)
    assert Z.shape == (4, 5)
    assert_allclose(np.linalg.norm(Z[:, :2], axis=1), 1.0)
    assert_allclose(np.linalg.norm(Z[:, 2:], axis=1), 1.0)
    assert sp.issparse(concatenate_views([sp.csr_matrix(views[0]), views[1]]))
    assert len(normalize_views(views)) == 2


def test_one_hot_views_get_a_constant_rescaling():
    # SecStr-like one-hot blocks: 5 positions x 21 symbols; each row has 5 ones.
    rng = np.random.default_rng(1)
    X = np.zeros((10, 105))
    for j in range(5):
        X[np.arange(10), 21 * j + rng.integers(0, 21, 10)] = 1
    assert_allclose(l2_normalize_rows(X), X / np.sqrt(5))


def test_normalize_kernel_square_and_cross(rng):
    A = rng.standard_normal((7, 3))
    K = A @ A.T
    Kn = normalize_kernel(K)
    assert_allclose(np.diag(Kn), 1.0)
    d = np.diag(K)
    # The cross kernel between rows 0..2 and 3..6 normalised with the diagonals.
    assert_allclose(normalize_kernel(K[:3, 3:], d[:3], d[3:]), Kn[:3, 3:])
    with pytest.raises(ValueError, match="diag_rows"):
        normalize_kernel(K[:3])


def test_average_kernels(rng):
    A, B = rng.standard_normal((5, 2)), rng.standard_normal((5, 4))
    Ka, Kb = A @ A.T, 3 * B @ B.T
    assert_allclose(
        average_kernels([Ka, Kb]), (normalize_kernel(Ka) + normalize_kernel(Kb)) / 2
    )
    with pytest.raises(ValueError, match="same shape"):
        average_kernels([Ka, Kb[:4, :4]])
    with pytest.raises(ValueError, match="non-empty"):
        average_kernels([])

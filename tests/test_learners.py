"""RLS and kNN against their definitions (Luo et al. 5.1; baselines.md section 1)."""

import numpy as np
import pytest
import scipy.optimize as so
from hypothesis import given, settings
from hypothesis import strategies as st
from numpy.testing import assert_allclose, assert_array_equal

from tcca_core.learners import (
    KNN,
    RLS,
    KernelRLS,
    euclidean_knn,
    kernel_knn,
    knn_from_distances,
    rls_coef,
)

pytestmark = pytest.mark.usefixtures("single_blas_thread")

GAMMA = 1e-2


def _objective(w, Xbar, t, gamma):
    """The paper's RLS objective (1/N_l) sum (w^T xbar - y)^2 + gamma ||w||^2."""
    res = Xbar @ w - t
    return res @ res / len(t) + gamma * w @ w


def _normal_equations(Xbar, t, gamma):
    """Minimizer by stacked least squares [Xbar / sqrt(N); sqrt(gamma) I] w = [t; 0]."""
    N, D = Xbar.shape
    A = np.vstack([Xbar / np.sqrt(N), np.sqrt(gamma) * np.eye(D)])
    b = np.concatenate([t / np.sqrt(N), np.zeros(D)])
    return np.linalg.lstsq(A, b, rcond=None)[0]


@pytest.mark.parametrize("shape", [(40, 5), (8, 30)])
def test_rls_primal_dual_and_direct_minimization_agree(rng, shape):
    N, D = shape
    X = rng.standard_normal((N, D))
    t = np.where(rng.random(N) > 0.5, 1.0, -1.0)
    Xbar = np.hstack([X, np.ones((N, 1))])
    primal = rls_coef(X, t[:, None], GAMMA, "primal")[:, 0]
    dual = rls_coef(X, t[:, None], GAMMA, "dual")[:, 0]
    direct = _normal_equations(Xbar, t, GAMMA)
    numeric = so.minimize(
        _objective,
        np.zeros(D + 1),
        args=(Xbar, t, GAMMA),
        method="BFGS",
        jac=lambda w, *a: 2 * Xbar.T @ (Xbar @ w - t) / N + 2 * GAMMA * w,
        options={"gtol": 1e-12},
    ).x
    assert_allclose(primal, dual, atol=1e-10)
    assert_allclose(primal, direct, atol=1e-10)
    assert_allclose(primal, numeric, atol=1e-6)
    # The estimator picks the smaller system and gives the same weights.
    est = RLS(GAMMA).fit(X, (t > 0).astype(int))
    assert_allclose(np.append(est.coef_[:, 0], est.intercept_), primal, atol=1e-10)


def test_rls_penalizes_the_bias():
    # With all-zero features only the bias is left: argmin_b (b - tbar)^2 + gamma b^2
    # = tbar / (1 + gamma); an unpenalized intercept would be tbar.
    y = np.array([1, 1, 1, 0])
    est = RLS(GAMMA).fit(np.zeros((4, 3)), y)
    assert_allclose(est.intercept_, [0.5 / (1 + GAMMA)])


def test_rls_one_vs_rest_columns_are_binary_problems(rng):
    X = rng.standard_normal((30, 4))
    y = rng.integers(0, 3, 30)
    est = RLS(GAMMA).fit(X, y)
    S = est.decision_function(X)
    assert S.shape == (30, 3)
    Xbar = np.hstack([X, np.ones((30, 1))])
    for c in range(3):
        w = _normal_equations(Xbar, np.where(y == c, 1.0, -1.0), GAMMA)
        assert_allclose(S[:, c], Xbar @ w, atol=1e-10)
    assert_array_equal(est.predict(X), np.argmax(S, axis=1))


def test_rls_binary_sign_rule(rng):
    X = rng.standard_normal((20, 3))
    y = np.array(["a", "b"])[rng.integers(0, 2, 20)]
    est = RLS(GAMMA).fit(X, y)
    s = est.decision_function(X)
    assert s.shape == (20,)
    assert_array_equal(est.predict(X), np.where(s > 0, "b", "a"))


def test_rls_sparse_equals_dense(rng):
    import scipy.sparse as sp

    X = rng.standard_normal((25, 6)) * (rng.random((25, 6)) > 0.6)
    y = rng.integers(0, 2, 25)
    a = RLS().fit(X, y).decision_function(X)
    b = RLS().fit(sp.csr_matrix(X), y).decision_function(sp.csr_matrix(X))
    assert_allclose(a, b, atol=1e-12)


def test_kernel_rls_with_linear_kernel_equals_rls(rng):
    X, Xt = rng.standard_normal((12, 20)), rng.standard_normal((5, 20))
    y = rng.integers(0, 3, 12)
    a = RLS(GAMMA).fit(X, y).decision_function(Xt)
    b = KernelRLS(GAMMA).fit(X @ X.T, y).decision_function(Xt @ X.T)
    assert_allclose(a, b, atol=1e-10)


@pytest.mark.parametrize(
    "X, y, match",
    [
        (np.zeros((4, 2)), np.zeros(4), "at least 2 classes"),
        (np.zeros((4, 2)), np.array([0, 1, 0]), "rows but y has"),
        (np.array([[np.nan, 0], [1, 1]]), np.array([0, 1]), "NaN"),
    ],
)
def test_rls_rejects_bad_input(X, y, match):
    with pytest.raises(ValueError, match=match):
        RLS().fit(X, y)


def test_rls_rejects_bad_gamma():
    with pytest.raises(ValueError, match="gamma"):
        RLS(gamma=0).fit(np.eye(2), [0, 1])


# ------------------------------------------------------------------------ kNN


def _knn_reference(D, y, k):
    """Loop version of the documented rule, for comparison."""
    out = []
    for row in D:
        order = sorted(range(len(row)), key=lambda j: (row[j], j))[:k]
        counts, first = {}, {}
        for rank, j in enumerate(order):
            counts[y[j]] = counts.get(y[j], 0) + 1
            first.setdefault(y[j], rank)
        best = max(counts.values())
        out.append(min((c for c in counts if counts[c] == best), key=first.get))
    return np.array(out)


def test_knn_tie_goes_to_the_nearest_tied_neighbour():
    x_ref = np.array([[0.5], [0.2], [0.9], [1.0]])
    y_ref = np.array([1, 0, 1, 0])
    res = euclidean_knn(x_ref, y_ref, np.zeros((1, 1)), k_max=4)
    # k=1: 0.2 (class 0); k=2: 1-1 tie, nearest is class 0; k=3: class 1 has 2;
    # k=4: 2-2 tie, nearest (0.2) is class 0.
    assert_array_equal(res.labels[:, 0], [0, 0, 1, 0])
    assert_allclose(res.votes[3, 0], [0.5, 0.5])


def test_knn_equal_distances_ranked_by_reference_index():
    # Both neighbours at distance 1; the lower reference index (class 1) ranks first,
    # so k=1 and the 1-1 tie at k=2 both give class 1 (sklearn would give 0).
    res = euclidean_knn(
        np.array([[1.0], [-1.0]]), np.array([1, 0]), np.zeros((1, 1)), 2
    )
    assert_array_equal(res.labels[:, 0], [1, 1])


@settings(max_examples=30, deadline=None)
@given(st.integers(0, 10_000))
def test_knn_all_k_match_reference_on_tied_grids(seed):
    rng = np.random.default_rng(seed)
    # Integer coordinates: many exact distance ties.
    ref, query = rng.integers(0, 3, (15, 2)), rng.integers(0, 3, (6, 2))
    y = rng.integers(0, 3, 15)
    D = ((query[:, None, :] - ref[None, :, :]) ** 2).sum(-1).astype(float)
    res = knn_from_distances(D, y, k_max=10)
    for k in range(1, 11):
        assert_array_equal(res.labels[k - 1], _knn_reference(D, y, k))
    assert_allclose(res.votes.sum(axis=2), 1.0)


def test_knn_k_capped_at_reference_size(rng):
    res = euclidean_knn(
        rng.standard_normal((3, 2)), [0, 1, 1], rng.standard_normal((4, 2))
    )
    assert res.labels.shape == (3, 4)


def test_kernel_knn_with_linear_kernel_is_euclidean_knn(rng):
    R, Q = rng.standard_normal((20, 4)), rng.standard_normal((7, 4))
    y = rng.integers(0, 3, 20)
    a = euclidean_knn(R, y, Q, 10)
    b = kernel_knn(Q @ R.T, y, 10, diag_query=(Q**2).sum(1), diag_ref=(R**2).sum(1))
    assert_array_equal(a.labels, b.labels)


def test_knn_estimator_matches_all_k(rng):
    R, Q = rng.standard_normal((20, 4)), rng.standard_normal((7, 4))
    y = rng.integers(0, 2, 20)
    allk = euclidean_knn(R, y, Q, 10)
    for k in (1, 4, 10):
        assert_array_equal(KNN(k).fit(R, y).predict(Q), allk.labels[k - 1])


def test_knn_rejects_bad_input():
    with pytest.raises(ValueError, match="n_ref"):
        knn_from_distances(np.zeros((2, 3)), [0, 1])
    with pytest.raises(ValueError, match="k_max"):
        knn_from_distances(np.zeros((2, 2)), [0, 1], k_max=0)
    with pytest.raises(ValueError, match="features"):
        euclidean_knn(np.zeros((2, 2)), [0, 1], np.zeros((1, 3)))

"""DSE (Long, Yu & Zhang 2008) against its mathematics, not against saved output."""

import logging

import numpy as np
import pytest
import scipy.sparse as sp
from numpy.testing import assert_allclose, assert_array_equal
from scipy.linalg import subspace_angles
from scipy.sparse.csgraph import connected_components
from sklearn.base import clone
from sklearn.cluster import KMeans
from sklearn.metrics import adjusted_rand_score

from tcca_core.baselines import _pca_patterns, _spectral_patterns
from tcca_core.baselines._dse import DSE, TransductiveError
from tcca_core.baselines._knn_graph import heat_knn_graph
from tcca_core.baselines._pca_patterns import pca_scores
from tcca_core.baselines._spectral_patterns import spectral_patterns

MODES = ["pca", "spectral"]


@pytest.fixture
def rng():
    return np.random.default_rng(2008)


def blobs(rng, N=150, dims=(6, 8, 5), spread=8.0, noise=1.0):
    """Three views of three Gaussian blobs with one shared cluster membership."""
    y = np.repeat(np.arange(3), N // 3)
    views = []
    for d in dims:
        centres = spread * rng.standard_normal((3, d))
        views.append(centres[y] + noise * rng.standard_normal((y.size, d)))
    return views, y


def latent_views(rng, N=120, dims=(7, 9, 6), latent=3, noise=0.3):
    z = rng.standard_normal((N, latent))
    return [
        z @ rng.standard_normal((latent, d)) + noise * rng.standard_normal((N, d))
        for d in dims
    ]


def max_angle(X, Y):
    return float(np.max(subspace_angles(X, Y)))


# ------------------------------------------------------------------ behaviour
@pytest.mark.parametrize("mode", MODES)
def test_recovers_shared_clusters(rng, mode):
    views, y = blobs(rng)
    Z = DSE(2, view_embedding=mode, random_state=0).fit_transform(views)
    labels = KMeans(3, n_init=10, random_state=0).fit_predict(Z)
    assert adjusted_rand_score(y, labels) == pytest.approx(1.0)


@pytest.mark.parametrize("mode", MODES)
def test_output_scale_and_orthogonality(rng, mode):
    views = latent_views(rng)
    N = views[0].shape[0]
    Z = DSE(4, view_embedding=mode, random_state=0).fit_transform(views)
    assert Z.shape == (N, 4)
    assert_allclose(Z.T @ Z / N, np.eye(4), atol=1e-10)  # sqrt(N) B, B^T B = I


@pytest.mark.parametrize("mode", MODES)
def test_consensus_is_global_optimum(rng, mode):
    """B spans the top-r eigenvectors of sum_p A_p A_p^T (Long et al.'s optimum)."""
    views = latent_views(rng)
    r = 3
    est = DSE(r, view_embedding=mode, random_state=0)
    B = est.fit_transform(views) / np.sqrt(views[0].shape[0])
    M = sum(A @ A.T for A in est.view_embeddings_)
    lam, U = np.linalg.eigh(M)
    assert lam[-r] - lam[-r - 1] > 1e-3  # the optimum is unique
    assert max_angle(B, U[:, -r:]) < 1e-8
    assert_allclose(est.singular_values_**2, lam[::-1][:r], rtol=1e-10)
    # Long et al.'s objective with P_p = B^T A_p beats any other orthonormal B.
    loss = sum(
        np.sum((A - B @ P) ** 2)
        for A, P in zip(est.view_embeddings_, est.mapping_, strict=True)
    )
    Q, _ = np.linalg.qr(rng.standard_normal(B.shape))
    other = sum(np.sum((A - Q @ (Q.T @ A)) ** 2) for A in est.view_embeddings_)
    assert loss < other


def test_pca_patterns_are_orthonormal_principal_scores(rng):
    """PCA mode: A_p spans the top principal scores of the centred view."""
    views = latent_views(rng, dims=(12, 9, 15))
    est = DSE(2, pca_components=4, random_state=0).fit(views)
    assert est.pca_applied_ == [True, True, True]
    assert est.view_embedding_shapes_ == [(120, 4)] * 3
    for X, A in zip(views, est.view_embeddings_, strict=True):
        U, _, _ = np.linalg.svd(X - X.mean(0), full_matrices=False)
        assert_allclose(A.T @ A, np.eye(4), atol=1e-12)
        assert max_angle(A, U[:, :4]) < 1e-8


def test_spectral_patterns_are_nontrivial_top_eigenvectors(rng):
    views = latent_views(rng)
    est = DSE(3, view_embedding="spectral", random_state=0).fit(views)
    T, _ = pca_scores(views[0], 100)
    W, *_ = heat_knn_graph(T, 10)
    deg = np.asarray(W.sum(axis=1)).ravel()
    S = (W / np.sqrt(np.outer(deg, deg))).toarray()
    lam, U = np.linalg.eigh(S)
    assert lam[-1] == pytest.approx(1.0)
    assert abs(U[:, -1] @ np.sqrt(deg)) / np.linalg.norm(np.sqrt(deg)) == pytest.approx(
        1
    )
    A = est.view_embeddings_[0]
    assert max_angle(A, U[:, -4:-1]) < 1e-8  # drop the trivial D^{1/2} 1
    assert_allclose(est.view_eigenvalues_[0], lam[-2:-5:-1], atol=1e-10)


def test_eigsh_path_matches_dense_path(rng, monkeypatch):
    views = latent_views(rng, N=200)
    dense = DSE(4, view_embedding="spectral", random_state=0).fit(views)
    monkeypatch.setattr(_spectral_patterns, "_DENSE_SPECTRAL_MAX", 0)
    monkeypatch.setattr(_spectral_patterns, "_DENSE_SPECTRAL_RATIO", 0)
    lanczos = DSE(4, view_embedding="spectral", random_state=0).fit(views)
    for A, A2 in zip(dense.view_embeddings_, lanczos.view_embeddings_, strict=True):
        assert max_angle(A, A2) < 1e-7
    assert max_angle(dense.embedding_, lanczos.embedding_) < 1e-7


def _no_convergence(*args, **kwargs):
    from scipy.sparse.linalg import ArpackNoConvergence

    raise ArpackNoConvergence("no convergence", np.empty(0), np.empty((0, 0)))


def test_eigsh_failure_falls_back_to_dense_or_names_the_cause(rng, monkeypatch):
    """Nearly disconnected graphs (Ads' duplicate rows) stall ARPACK: small graphs
    are then solved densely, with the dense path's result; large ones raise."""
    views = latent_views(rng, N=200)
    dense = DSE(4, view_embedding="spectral", random_state=0).fit(views)
    monkeypatch.setattr(_spectral_patterns, "_DENSE_SPECTRAL_MAX", 0)
    monkeypatch.setattr(_spectral_patterns, "_DENSE_SPECTRAL_RATIO", 0)
    monkeypatch.setattr(_spectral_patterns, "eigsh", _no_convergence)
    fallback = DSE(4, view_embedding="spectral", random_state=0).fit(views)
    assert max_angle(dense.embedding_, fallback.embedding_) < 1e-10
    monkeypatch.setattr(_spectral_patterns, "_DENSE_SPECTRAL_FALLBACK_MAX", 100)
    with pytest.raises(ValueError, match="did not converge .* increase n_neighbors"):
        DSE(4, view_embedding="spectral", random_state=0).fit(views)


@pytest.mark.parametrize(
    ("route", "shape", "dense_max"),
    [
        ("covariance", (300, 40), 4096),
        ("gram", (60, 300), 100),
        ("arpack", (300, 40), 10),
    ],
)
def test_pca_routes_agree_and_accept_sparse_input(monkeypatch, route, shape, dense_max):
    X = sp.random(*shape, density=0.2, random_state=1, format="csr")
    Xd = X.toarray()
    U, s, _ = np.linalg.svd(Xd - Xd.mean(0), full_matrices=False)
    monkeypatch.setattr(_pca_patterns, "_DENSE_PCA_MAX", dense_max)
    T, reduced = pca_scores(X, 5, random_state=0)
    assert reduced
    assert max_angle(T, U[:, :5]) < 1e-6
    assert_allclose(np.linalg.norm(T, axis=0), s[:5], rtol=1e-8)


def test_small_views_keep_all_dimensions(rng):
    views = latent_views(rng, dims=(3, 150, 4), N=200)
    est = DSE(2, pca_components=100, random_state=0).fit(views)
    assert est.pca_applied_ == [False, True, False]
    assert est.n_pca_dims_ == [3, 100, 4]
    assert est.n_features_ == [3, 150, 4]


def test_sparse_and_dense_input_agree(rng):
    views, _ = blobs(rng)
    sparse = [sp.csr_matrix(X) for X in views]
    for mode in MODES:
        Zd = DSE(3, view_embedding=mode, random_state=0).fit_transform(views)
        Zs = DSE(3, view_embedding=mode, random_state=0).fit_transform(sparse)
        assert max_angle(Zd, Zs) < 1e-7


# ------------------------------------------------------------ disconnected graphs
def test_disconnected_graph_is_bridged_and_logged(rng, caplog):
    views, y = blobs(rng, spread=50.0)  # 3 blobs far apart: 3 kNN components
    with caplog.at_level(logging.WARNING, logger="tcca_core.baselines._dse"):
        est = DSE(2, view_embedding="spectral", random_state=0)
        Z = est.fit_transform(views)
    assert est.graph_components_ == [3, 3, 3]
    assert est.n_bridges_ == [2, 2, 2]
    assert "connected components" in caplog.text
    assert np.all(np.isfinite(Z))
    labels = KMeans(3, n_init=10, random_state=0).fit_predict(Z)
    assert adjusted_rand_score(y, labels) == pytest.approx(1.0)


def test_heat_graph_with_duplicate_cliques_is_connected(rng):
    """Groups of > k identical points form kNN cliques; they must be joined."""
    base = rng.standard_normal((6, 4))
    Z = np.repeat(base, 15, axis=0)  # six cliques of 15 duplicates, k = 10
    W, sigma, n_before, n_bridges = heat_knn_graph(Z, 10)
    assert n_before == 6 and n_bridges >= 5
    assert connected_components(W, directed=False)[0] == 1
    assert sigma > 0 and (W != W.T).nnz == 0
    A, lam = spectral_patterns(W, 5, random_state=0)
    assert np.all(np.isfinite(A)) and np.all(lam <= 1 + 1e-12)


def test_heat_weights_never_underflow():
    Z = np.vstack([np.zeros((20, 2)), [[1e6, 0.0]]])  # one outlier, far away
    W, *_ = heat_knn_graph(Z, 3)
    assert np.all(np.asarray(W.sum(axis=1)) > 0)


# ------------------------------------------------------------------- the grid
@pytest.mark.parametrize("mode", MODES)
def test_grid_matches_separate_fits(rng, mode):
    views = latent_views(rng)
    grid = DSE(1, view_embedding=mode, random_state=0).fit_transform_grid(
        views, [5, 2, 3]
    )
    assert list(grid) == [2, 3, 5]
    for r, Z in grid.items():
        Zr = DSE(r, view_embedding=mode, random_state=0).fit_transform(views)
        assert Z.shape == (views[0].shape[0], r)
        assert max_angle(Z, Zr) < 1e-7


def test_pca_grid_is_nested_and_truncated_at_rank(rng, caplog):
    views = latent_views(rng, dims=(3, 4, 2))  # rank of A = 3 + 4 + 2 = 9
    est = DSE(1, random_state=0)
    with caplog.at_level(logging.WARNING, logger="tcca_core.baselines._dse"):
        grid = est.fit_transform_grid(views, [2, 5, 9, 10, 12])
    assert list(grid) == [2, 5, 9] and est.r_grid_ == [2, 5, 9]
    assert "rank 9" in caplog.text
    assert_allclose(grid[5][:, :2], grid[2], atol=1e-10)
    with pytest.raises(ValueError, match="numerical rank 9"):
        DSE(10).fit(views)


# ------------------------------------------------------ determinism and API
@pytest.mark.parametrize("mode", MODES)
def test_deterministic_for_fixed_random_state(rng, mode, monkeypatch):
    # exercise the seeded eigsh path
    monkeypatch.setattr(_spectral_patterns, "_DENSE_SPECTRAL_MAX", 0)
    monkeypatch.setattr(_spectral_patterns, "_DENSE_SPECTRAL_RATIO", 0)
    views = latent_views(rng, N=150)
    Z1 = DSE(3, view_embedding=mode, random_state=7).fit_transform(views)
    Z2 = DSE(3, view_embedding=mode, random_state=7).fit_transform(views)
    assert_array_equal(Z1, Z2)


def test_transform_is_refused_with_a_clear_error(rng):
    views = latent_views(rng)
    est = DSE(2).fit(views)
    with pytest.raises(TransductiveError, match="transductive"):
        est.transform(views)
    assert issubclass(TransductiveError, ValueError)
    assert issubclass(TransductiveError, NotImplementedError)


def test_sklearn_params_round_trip():
    est = DSE(3, view_embedding="spectral", n_neighbors=7, random_state=1)
    assert clone(est).get_params() == est.get_params()
    assert est.get_params()["n_neighbors"] == 7


@pytest.mark.parametrize(
    ("make", "kwargs", "match"),
    [
        (lambda v: v[:1], {}, "at least 2 views"),
        (lambda v: [v[0], v[1][:-1]], {}, "same number of samples"),
        (lambda v: [np.where(v[0] == v[0][0, 0], np.nan, v[0]), v[1]], {}, "NaN"),
        (lambda v: v, {"n_components": 0}, "n_components"),
        (lambda v: v, {"n_components": 30}, "at most 29"),
        (lambda v: v, {"view_embedding": "lle"}, "view_embedding"),
        (lambda v: v, {"pca_components": 0}, "pca_components"),
        (
            lambda v: v,
            {"view_embedding": "spectral", "n_neighbors": 30},
            "n_neighbors=30 must be < n_samples=30",
        ),
    ],
)
def test_bad_input_raises_clear_value_error(rng, make, kwargs, match):
    views = latent_views(rng, N=30, dims=(4, 5))
    params = {"n_components": 2, **kwargs}
    with pytest.raises(ValueError, match=match):
        DSE(**params).fit(make(views))

"""The exact alternative code paths of the engines agree with the reference ones.

Each fast path (||M||^2 routes, the sparse-moment build of one-hot data given as a
dense array, the dimension-tree MTTKRP cache, sparse correlations) must give the
same numbers as the plain route, to rounding.
"""

import numpy as np
import pytest
import scipy.sparse as sp
from numpy.testing import assert_allclose

from tcca_core import TCCA
from tcca_core.solver.dense import dense_moment, dense_mttkrp
from tcca_core.solver.implicit import ImplicitMoment, correlations
from tcca_core.solver.linalg import column_mean, covariance, inv_sqrt_psd
from tcca_core.solver.tensorly import tensorly_mttkrp
from tcca_core.solver.views import WhitenedView


def _onehot(rng, N, d, npos):
    cats = rng.integers(0, d // npos, size=(N, npos))
    X = np.zeros((N, d))
    X[np.arange(N)[:, None], np.arange(npos) * (d // npos) + cats] = 1.0
    return X


def _whitened(views, eps=0.1):
    out = []
    for X in views:
        mu = column_mean(X)
        out.append(WhitenedView(X, mu, inv_sqrt_psd(covariance(X, mu), eps)))
    return out


@pytest.fixture
def rng():
    return np.random.default_rng(7)


@pytest.mark.parametrize("m", [2, 3, 4])
def test_norm_routes_agree(rng, m):
    dims = [7, 5, 6, 4][:m]
    views = _whitened([rng.standard_normal((90, d)) for d in dims])
    op = ImplicitMoment(views)
    M = dense_moment(views)
    ref = float(np.vdot(M, M))
    assert_allclose(op.norm_sq("gram"), ref, rtol=1e-10)
    assert_allclose(op.norm_sq("unfolding"), ref, rtol=1e-10)
    assert_allclose(op.norm_sq(), ref, rtol=1e-10)


def test_sparse_norm_and_build_of_onehot_dense_input(rng):
    N = 400
    dense = [_onehot(rng, N, 40, 2), _onehot(rng, N, 30, 1), _onehot(rng, N, 60, 3)]
    wd = _whitened(dense)
    ws = _whitened([sp.csr_matrix(X) for X in dense])
    assert all(v.sparse is not None for v in wd)  # detected: density <= 10%
    plain = dense_moment(wd, exploit_sparsity=False)
    assert_allclose(dense_moment(wd), plain, atol=1e-10)
    assert_allclose(dense_moment(ws), plain, atol=1e-10)
    ref = float(np.vdot(plain, plain))
    grams = [
        np.tensordot(plain, plain, axes=([q for q in range(3) if q != p],) * 2)
        for p in range(3)
    ]
    for w in (wd, ws):
        op = ImplicitMoment(w)
        for method in ("gram", "unfolding", "sparse"):
            assert_allclose(op.norm_sq(method), ref, rtol=1e-10)
            for A, B in zip(op.mode_grams(method), grams):
                assert_allclose(A, B, atol=1e-12)


def test_csr_of_a_mostly_zero_dense_view_is_scipys(rng):
    from tcca_core.solver.views import _dense_to_csr

    X = _onehot(rng, 50, 12, 2)
    X[[0, 7, 49]] = 0.0  # empty rows, first and last included
    X[3, 5] = -2.5
    for A in (X, np.asfortranarray(X), np.zeros((4, 3)), X[::2]):
        got, ref = _dense_to_csr(A), sp.csr_matrix(A)
        assert got.has_canonical_format
        assert_allclose(got.toarray(), np.asarray(A))
        np.testing.assert_array_equal(got.indptr, ref.indptr)
        np.testing.assert_array_equal(got.indices, ref.indices)
        np.testing.assert_array_equal(got.data, ref.data)


def test_dimension_tree_mttkrp_matches_tensorly(rng):
    dims, r = [5, 6, 7, 3], 4
    M = rng.standard_normal(dims)
    U = [rng.standard_normal((d, r)) for d in dims]
    cache = {}
    for p in range(len(dims)):
        assert_allclose(
            dense_mttkrp(M, U, p, cache=cache), tensorly_mttkrp(M, U, p), atol=1e-12
        )
        U[p] = rng.standard_normal((dims[p], r))  # ALS replaces U_p
    for p in range(len(dims)):
        assert_allclose(
            dense_mttkrp(M, U, p, cache=cache), tensorly_mttkrp(M, U, p), atol=1e-12
        )


def test_sparse_correlations_match_dense(rng):
    N = 300
    dense = [_onehot(rng, N, 20, 2), _onehot(rng, N, 15, 3), _onehot(rng, N, 12, 2)]
    U = [rng.standard_normal((X.shape[1], 3)) for X in dense]
    a = correlations(_whitened(dense), U)
    b = correlations(_whitened([sp.csr_matrix(X) for X in dense]), U)
    assert_allclose(a, b, rtol=1e-10, atol=1e-14)


def test_engines_agree_on_onehot_dense_input(rng):
    N = 500
    views = [_onehot(rng, N, 40, 2), _onehot(rng, N, 30, 1), _onehot(rng, N, 60, 3)]
    init = [rng.standard_normal((X.shape[1], 3)) for X in views]
    kw = dict(init=init, tol=0, max_iter=25, acceleration=None)
    ref = TCCA(3, algorithm="tensorly", **kw).fit(views)
    for algo in ("dense", "implicit"):
        est = TCCA(3, algorithm=algo, **kw).fit(views)
        assert_allclose(est.weights_, ref.weights_, rtol=1e-9)
        assert_allclose(
            est.reconstruction_errors_, ref.reconstruction_errors_, atol=1e-10
        )
        assert_allclose(est.correlations_, ref.correlations_, rtol=1e-8, atol=1e-12)


@pytest.mark.parametrize("m", [2, 3, 4])
def test_mode_grams_without_the_tensor(rng, m):
    from tcca_core.solver.engine import MomentEngine

    dims = [7, 5, 6, 4][:m]
    views = _whitened([rng.standard_normal((90, d)) for d in dims])
    M = dense_moment(views)
    op = ImplicitMoment(views)
    routes = [
        op.mode_grams("gram"),
        op.mode_grams("unfolding"),
        op.mode_grams(),
        MomentEngine(views, "dense").mode_grams(),
    ]
    for p in range(m):
        Mp = np.moveaxis(M, p, 0).reshape(dims[p], -1)
        for grams in routes:
            assert_allclose(grams[p], Mp @ Mp.T, atol=1e-12)


def test_hosvd_init_is_engine_independent(rng):
    views = [rng.standard_normal((120, d)) for d in (5, 6, 7)]
    views = [
        v + np.outer(rng.exponential(size=120), rng.standard_normal(v.shape[1]))
        for v in views
    ]
    fits = [
        TCCA(3, init="hosvd", algorithm=a, acceleration=None, n_init=1).fit(views)
        for a in ("dense", "implicit")
    ]
    assert len({f.n_iter_ for f in fits}) == 1
    for f in fits[1:]:
        assert_allclose(f.weights_, fits[0].weights_, rtol=1e-8)


def test_raw_moment_routes(rng):
    from tcca_core.solver.sparse import _raw_moment

    onehot = [
        sp.csr_matrix(_onehot(rng, 500, d, k)) for d, k in ((12, 2), (9, 3), (8, 1))
    ]
    onehot = [X.multiply(rng.random(X.shape)).tocsr() for X in onehot]  # valued
    ragged = [
        sp.random(400, 7, density=0.3, format="csr", random_state=i) for i in range(3)
    ]
    for Xs in (onehot, ragged, onehot[:2]):
        dense = [X.toarray() for X in Xs]
        letters = "abc"[: len(Xs)]
        ref = (
            np.einsum(",".join("n" + c for c in letters) + "->" + letters, *dense)
            / Xs[0].shape[0]
        )
        assert_allclose(_raw_moment(Xs), ref, atol=1e-15)
        assert_allclose(_raw_moment(Xs, block=37), ref, atol=1e-15)


def test_engine_correlations_from_the_tensor(rng):
    from tcca_core.solver.engine import MomentEngine

    views = _whitened([rng.standard_normal((150, d)) for d in (5, 6, 7)])
    U = [rng.standard_normal((v.d, 4)) for v in views]
    eng = MomentEngine(views, "dense")
    assert eng.M.shape == (5, 6, 7)  # builds M
    assert_allclose(eng.correlations(U), correlations(views, U), rtol=1e-10)
    assert_allclose(
        MomentEngine(views, "implicit").correlations(U),
        correlations(views, U),
        rtol=1e-12,
    )


@pytest.mark.parametrize("init", ["svd", "hosvd"])
def test_starts_avoid_null_directions(init):
    """A constant column whitens to zero: no component may start there."""
    import warnings

    from sklearn.exceptions import ConvergenceWarning

    for seed, algorithm in ((0, "implicit"), (2, "dense")):
        rng = np.random.default_rng(seed)
        views = [rng.standard_normal((30, 3)) for _ in range(3)]
        views[-1][:, 0] = 1.0
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            Z = TCCA(4, algorithm=algorithm, init=init, random_state=0).fit_transform(
                views
            )
        assert np.all(np.isfinite(Z))


def test_sparse_products_and_dense_whitening_of_sparse_views_agree(rng):
    """Very sparse views keep sparse products; denser ones are whitened to Y."""
    N = 2000
    onehot = [_onehot(rng, N, 60, 1), _onehot(rng, N, 40, 1), _onehot(rng, N, 50, 2)]
    binary = [(rng.random((N, d)) < 0.3).astype(float) for d in (12, 10, 9)]
    for views, sparse_products in ((onehot, True), (binary, False)):
        ws = _whitened([sp.csr_matrix(X) for X in views])
        assert all(v.is_sparse == sparse_products for v in ws)
        wd = _whitened(views)
        U = [rng.standard_normal((v.d, 3)) for v in ws]
        H = rng.standard_normal((N, 3))
        for a, b, u in zip(ws, wd, U):
            assert_allclose(a.dot(u), b.dot(u), atol=1e-10)
            assert_allclose(a.tdot(H), b.tdot(H), atol=1e-9)
        init = [rng.standard_normal((X.shape[1], 3)) for X in views]
        kw = dict(init=init, tol=0, max_iter=15, algorithm="implicit")
        a = TCCA(3, **kw).fit([sp.csr_matrix(X) for X in views])
        b = TCCA(3, **kw).fit(views)
        assert_allclose(a.weights_, b.weights_, rtol=1e-9)

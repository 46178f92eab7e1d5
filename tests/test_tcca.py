"""TCCA against the mathematics of the paper (section 4), not against saved output."""

import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from numpy.testing import assert_allclose
from scipy.linalg import subspace_angles
from sklearn.base import clone
from sklearn.exceptions import ConvergenceWarning

from tcca_core import TCCA, tcca
from tcca_core.solver.dense import dense_moment
from tcca_core.solver.engine import engine_costs
from tcca_core.solver.linalg import covariance, inv_sqrt_psd
from tcca_core.solver.views import WhitenedView


@pytest.fixture
def rng():
    return np.random.default_rng(20150208)


def _views(rng, dims, N=200, latent=2, noise=0.5):
    z = rng.exponential(size=(N, latent)) - 1.0  # skewed: third moments exist
    return [
        z @ rng.standard_normal((latent, d)) + noise * rng.standard_normal((N, d))
        for d in dims
    ]


def _inv_sqrt(C):
    s, V = np.linalg.eigh(C)
    return V @ np.diag(s**-0.5) @ V.T


def _sqrt(C):
    s, V = np.linalg.eigh(C)
    return V @ np.diag(s**0.5) @ V.T


def _mode_product_all(T, mats):
    """T x_1 A_1 x_2 A_2 ... with A_p of shape (J_p, I_p) (paper eq. 4.2)."""
    for p, A in enumerate(mats):
        T = np.moveaxis(np.tensordot(A, T, axes=(1, p)), 0, p)
    return T


def _cov_tensor(Xc):
    """C_12..m = (1/N) sum_n x_1n o ... o x_mn, by einsum (independent of the lib)."""
    letters = "abcdef"[: len(Xc)]
    expr = ",".join("n" + c for c in letters) + "->" + letters
    return np.einsum(expr, *Xc) / Xc[0].shape[0]


@pytest.mark.parametrize("m", [2, 3, 4])
def test_theorem1_correlation_equals_tensor_contraction(rng, m):
    N, dims = 50, [3, 4, 5, 2][:m]
    X = [rng.standard_normal((N, d)) for d in dims]
    Xc = [x - x.mean(0) for x in X]
    h = [rng.standard_normal(d) for d in dims]
    z = [x @ hp for x, hp in zip(Xc, h)]
    lhs = np.prod(z, axis=0).sum()  # (z_1 * ... * z_m)^T e
    C = _cov_tensor(Xc) * N  # the appendix's unnormalized C
    rhs = _mode_product_all(C, [hp[None, :] for hp in h]).item()
    assert_allclose(lhs, rhs, rtol=1e-12)


@pytest.mark.parametrize("m", [2, 3, 4])
def test_theorem2_whitening_equivalence(rng, m):
    N, dims, eps = 80, [3, 4, 5, 3][:m], 0.1
    Xc = [x - x.mean(0) for x in (rng.standard_normal((N, d)) for d in dims)]
    C = _cov_tensor(Xc)
    Ct = [x.T @ x / N + eps * np.eye(x.shape[1]) for x in Xc]
    M = _mode_product_all(C, [_inv_sqrt(c) for c in Ct])
    h = [rng.standard_normal(d) for d in dims]
    u = [_sqrt(c) @ hp for c, hp in zip(Ct, h)]
    obj_h = _mode_product_all(C, [hp[None, :] for hp in h]).item()
    obj_u = _mode_product_all(M, [up[None, :] for up in u]).item()
    assert_allclose(obj_h, obj_u, rtol=1e-10)
    for c, hp, up in zip(Ct, h, u):  # constraints h^T C~ h = u^T u
        assert_allclose(hp @ c @ hp, up @ up, rtol=1e-10)
    # The library's whitened moment tensor is this M.
    W = [_inv_sqrt(c) for c in Ct]
    lib = dense_moment([WhitenedView(x, None, w) for x, w in zip(Xc, W)])
    assert_allclose(lib, M, atol=1e-12)


def test_rank1_weight_is_the_high_order_correlation_at_a_stationary_point(rng):
    views = _views(rng, (4, 5, 6), N=400, latent=1)
    est = TCCA(1, eps=1e-2, tol=1e-12, max_iter=2000, random_state=0).fit(views)
    Z = est.transform(views, per_view=True)
    rho = np.mean(np.prod([z[:, 0] for z in Z], axis=0))  # Theorem 1, 1/N scaling
    assert_allclose(est.weights_[0], rho, rtol=1e-8)
    assert_allclose(est.correlations_[0], rho, rtol=1e-10)
    # Constraint h_p^T C~_pp h_p = 1 and the HOPM fixed point M x_{q != p} u_q = rho u_p.
    Xc = [x - x.mean(0) for x in views]
    Ct = [x.T @ x / len(x) + 1e-2 * np.eye(x.shape[1]) for x in Xc]
    M = _mode_product_all(_cov_tensor(Xc), [_inv_sqrt(c) for c in Ct])
    u = [U[:, 0] for U in est.factors_]
    for p, (W, c) in enumerate(zip(est.projections_, Ct)):
        assert_allclose(W[:, 0] @ c @ W[:, 0], 1.0, rtol=1e-10)
        others = [u[q][None, :] if q != p else np.eye(len(u[p])) for q in range(3)]
        assert_allclose(_mode_product_all(M, others).ravel(), rho * u[p], atol=1e-7)


def test_two_views_reduce_to_regularized_cca(rng):
    N, eps = 300, 1e-2
    views = _views(rng, (5, 7), N=N, latent=3, noise=1.0)
    Xc = [x - x.mean(0) for x in views]
    C11, C22 = (x.T @ x / N + eps * np.eye(x.shape[1]) for x in Xc)
    T = _inv_sqrt(C11) @ (Xc[0].T @ Xc[1] / N) @ _inv_sqrt(C22)
    U, s, Vt = np.linalg.svd(T)
    est = TCCA(1, eps=eps, tol=1e-14, max_iter=5000, random_state=1).fit(views)
    assert_allclose(est.weights_[0], s[0], rtol=1e-8)
    assert_allclose(abs(est.factors_[0][:, 0] @ U[:, 0]), 1.0, atol=1e-6)
    # rank r: the CP factors of a matrix span its top-r singular subspaces.
    est3 = TCCA(3, eps=eps, tol=1e-14, max_iter=5000, random_state=1).fit(views)
    assert np.max(subspace_angles(est3.factors_[0], U[:, :3])) < 1e-5
    assert np.max(subspace_angles(est3.factors_[1], Vt[:3].T)) < 1e-5


@pytest.mark.parametrize("m", [3, 4])
def test_planted_low_rank_signal_is_recovered(rng, m):
    N, r, dims = 4000, 2, [8, 9, 10, 7][:m]
    S = rng.exponential(size=(N, r)) - 1.0
    views = [
        S @ rng.standard_normal((r, d)) + 0.1 * rng.standard_normal((N, d))
        for d in dims
    ]
    est = TCCA(r, random_state=0, max_iter=500).fit(views)
    for Z in est.transform(views, per_view=True):
        assert np.rad2deg(np.max(subspace_angles(Z, S - S.mean(0)))) < 5
    noise = [rng.standard_normal((N, d)) for d in dims]
    est_noise = TCCA(r, random_state=0, max_iter=500).fit(noise)
    assert est.weights_[0] > 5 * est_noise.weights_[0]


@pytest.mark.parametrize("m", [3, 4])
@pytest.mark.parametrize("acceleration", [None, "linesearch", "momentum"])
def test_dense_and_implicit_engines_agree(rng, m, acceleration):
    dims = [4, 5, 6, 3][:m]
    r = 2
    views = _views(rng, dims, N=150, latent=2)
    init = [rng.standard_normal((d, r)) for d in dims]
    kw = dict(init=init, tol=0, max_iter=40, acceleration=acceleration)
    # plain ALS is tensorly's parafac step for step; with the line search the two
    # tensor-free engines still run the same iterates
    ref = TCCA(r, algorithm="tensorly" if not acceleration else "dense", **kw).fit(
        views
    )
    for algo in ("dense", "implicit"):
        b = TCCA(r, algorithm=algo, **kw).fit(views)
        assert b.algorithm_ == algo
        assert_allclose(ref.weights_, b.weights_, rtol=1e-9, atol=1e-12)
        for Ua, Ub in zip(ref.factors_, b.factors_):
            assert_allclose(Ua, Ub, atol=1e-9)
            assert np.max(subspace_angles(Ua, Ub)) < 1e-8
        assert_allclose(
            ref.reconstruction_errors_, b.reconstruction_errors_, atol=1e-10
        )
    # With a tolerance and the default start the engines also agree.
    fits = [
        TCCA(r, algorithm=a, random_state=3).fit(views) for a in ("dense", "implicit")
    ]
    assert fits[0].n_iter_ == fits[1].n_iter_
    assert_allclose(fits[0].weights_, fits[1].weights_, rtol=1e-8)
    # tensorly's parafac run to convergence reaches the same optimum
    tl = TCCA(r, algorithm="tensorly", init="hosvd", tol=1e-12, max_iter=3000)
    tl.fit(views)
    assert_allclose(
        tl.reconstruction_errors_[-1], fits[0].reconstruction_errors_[-1], rtol=1e-4
    )


def test_two_views_are_solved_exactly_by_every_engine(rng):
    """m = 2: M = C~_11^(-1/2) C_12 C~_22^(-1/2) is a matrix; its truncated SVD is the
    exact rank-r CP decomposition, and tensorly's ALS converges to it."""
    views = _views(rng, (4, 5), N=150, latent=2)
    est = {a: TCCA(3, algorithm=a).fit(views) for a in ("dense", "implicit")}
    M = dense_moment(
        [
            WhitenedView(X, X.mean(0), inv_sqrt_psd(covariance(X, X.mean(0)), 1e-2))
            for X in views
        ]
    )
    sv = np.linalg.svd(M, compute_uv=False)
    for e in est.values():
        assert e.n_iter_ == 0 and e.converged_
        assert_allclose(e.weights_, sv[:3], rtol=1e-12)
        assert_allclose(e.correlations_, sv[:3], rtol=1e-10)
    # one start: with two views any rank-3 factorization of the SVD's rank-3
    # approximation has the same error, and only the orthogonal one has these weights
    tl = TCCA(
        3, algorithm="tensorly", tol=0, max_iter=3000, acceleration=None, n_init=1
    )
    tl.fit(views)
    assert_allclose(tl.weights_, sv[:3], rtol=1e-6)


def test_sparse_input_matches_dense_input(rng):
    N = 300
    cats = rng.integers(0, 4, size=(N, 6))
    onehot = np.zeros((N, 24))
    onehot[np.arange(N)[:, None], np.arange(6) * 4 + cats] = 1.0
    views = [onehot[:, :8], onehot[:, 8:16], onehot[:, 16:]]
    sparse = [sp.csr_matrix(v) for v in views]
    init = [rng.standard_normal((8, 3)) for _ in range(3)]
    for algo in ("tensorly", "dense", "implicit"):
        a = TCCA(3, algorithm=algo, init=init, tol=0, max_iter=20).fit(views)
        b = TCCA(3, algorithm=algo, init=init, tol=0, max_iter=20).fit(sparse)
        assert_allclose(a.weights_, b.weights_, rtol=1e-10)
        assert_allclose(a.transform(views), b.transform(sparse), atol=1e-10)


def test_als_error_never_increases(rng):
    views = _views(rng, (5, 6, 7), N=200, latent=3)
    est = TCCA(4, tol=0, max_iter=60, init="random", random_state=0).fit(views)
    e = np.asarray(est.reconstruction_errors_)
    assert np.all(np.diff(e) <= 1e-12)


def test_transform_is_the_affine_projection(rng):
    views = _views(rng, (4, 5, 6), N=120)
    est = TCCA(2, random_state=0).fit(views)
    new = _views(rng, (4, 5, 6), N=7)
    Z = est.transform(new, per_view=True)
    for z, x, mu, W in zip(Z, new, est.means_, est.projections_):
        assert_allclose(z, (x - mu) @ W)
    assert est.transform(new).shape == (7, 6)


def test_same_seed_gives_identical_bits(rng):
    views = _views(rng, (4, 5, 6), N=100)
    for init in ("svd", "random"):
        a = TCCA(3, init=init, random_state=7).fit_transform(views)
        b = TCCA(3, init=init, random_state=7).fit_transform(views)
        assert np.array_equal(a, b)


def test_function_and_estimator_agree(rng):
    views = _views(rng, (4, 5, 6), N=100)
    out = tcca(views, 2, random_state=0)
    est = TCCA(2, random_state=0).fit(views)
    assert_allclose(out["weights"], est.weights_)
    assert clone(est).get_params() == est.get_params()


def test_auto_engine_follows_the_cost_model():
    secstr = engine_costs(84_000, [105] * 3, 50)
    nus = engine_costs(5597, [500, 144, 128], 50)
    assert secstr["dense"] < secstr["implicit"]
    assert nus["implicit"] < nus["dense"]
    from tcca_core.solver.engine import choose_engine

    assert choose_engine(84_000, [105] * 3, 50, "auto") == "dense"
    assert choose_engine(5597, [500, 144, 128], 50, "auto") == "implicit"
    assert choose_engine(3279, [588, 495, 472], 50, "auto") == "implicit"
    mfeat = [76, 216, 64, 240, 47, 6]
    assert choose_engine(2000, mfeat, 20, "auto") == "implicit"
    with pytest.raises(ValueError, match="529.8 GiB.*implicit"):
        choose_engine(2000, mfeat, 20, "dense")


def test_implicit_engine_never_builds_the_tensor(rng, monkeypatch):
    import tcca_core.solver.dense as T
    import tcca_core.solver.tensorly as tensorly_route

    def forbidden(*a, **k):
        raise AssertionError("dense tensor built")

    monkeypatch.setattr(T, "dense_moment", forbidden)
    monkeypatch.setattr(T, "dense_mttkrp", forbidden)
    monkeypatch.setattr(tensorly_route, "tensorly_mttkrp", forbidden)
    views = _views(rng, (4, 5, 6, 7), N=100)
    est = TCCA(2, algorithm="implicit", random_state=0).fit(views)
    assert est.algorithm_ == "implicit"
    # auto on a shape where the cost model prefers the implicit engine
    views = [rng.standard_normal((60, 40)) for _ in range(3)]
    assert TCCA(2, random_state=0).fit(views).algorithm_ == "implicit"


def test_non_convergence_warns_once(rng):
    views = _views(rng, (4, 5, 6), N=100, latent=3)
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        TCCA(3, max_iter=2, tol=1e-15, init="random", random_state=0).fit(views)
    msgs = [str(x.message) for x in w]
    assert len(msgs) == 1 and "max_iter=2" in msgs[0]


@pytest.mark.parametrize(
    "views_fn, kwargs, match",
    [
        (
            lambda r: [r.standard_normal((10, 3)), r.standard_normal((9, 3))],
            {},
            "same number of samples",
        ),
        (
            lambda r: [np.full((10, 3), np.nan), r.standard_normal((10, 3))],
            {},
            "view 0 contains NaN",
        ),
        (
            lambda r: [
                np.r_[r.standard_normal((9, 3)), [[np.inf, 0, 0]]],
                r.standard_normal((10, 3)),
            ],
            {},
            "infinity",
        ),
        (lambda r: [r.standard_normal((10, 3))], {}, "at least 2 views"),
        (lambda r: r.standard_normal((10, 3)), {}, "list of arrays"),
        (
            lambda r: [r.standard_normal((10, 3)), r.standard_normal((10, 4))],
            {"n_components": 4},
            "n_components=4 is too large",
        ),
        (
            lambda r: [r.standard_normal((10, 3))] * 2,
            {"eps": -1.0},
            "eps must be a finite number >= 0",
        ),
        (
            lambda r: [r.standard_normal((10, 3))] * 2,
            {"n_components": 0},
            "n_components must be an integer >= 1",
        ),
        (
            lambda r: [r.standard_normal((10, 3))] * 2,
            {"algorithm": "fast"},
            "algorithm must be one of",
        ),
        (lambda r: [r.standard_normal((10, 3)), r.standard_normal(10)], {}, "2-D"),
        (
            lambda r: [np.ones((10, 3)), r.standard_normal((10, 3))],
            {"eps": 0.0},
            "singular",
        ),
    ],
)
def test_bad_input_raises_a_clear_error(rng, views_fn, kwargs, match):
    params = {"n_components": 1, **kwargs}
    with pytest.raises(ValueError, match=match):
        TCCA(**params).fit(views_fn(rng))


def test_transform_checks_feature_counts(rng):
    views = _views(rng, (4, 5, 6), N=50)
    est = TCCA(1, random_state=0).fit(views)
    with pytest.raises(ValueError, match="view 1 has 4 features"):
        est.transform([views[0], views[0], views[2]])


def test_path_equals_independent_fits_and_warm_start_is_valid(rng):
    views = _views(rng, (5, 6, 7), N=150, latent=3)
    ranks = [3, 1, 2]
    for init in ("auto", "svd", "random"):
        path = TCCA(random_state=4, init=init).fit_path(views, ranks)
        for r, est in zip(ranks, path):
            ref = TCCA(r, random_state=4, init=init).fit(views)
            assert est.n_components == r
            assert np.array_equal(est.transform(views), ref.transform(views))
    # the instance's parameters are used (not the constructor's defaults)
    (est,) = TCCA(eps=5.0, algorithm="implicit").fit_path(views, [2])
    assert (est.eps, est.algorithm_, est.n_components) == (5.0, "implicit", 2)
    assert_allclose(
        est.weights_, TCCA(2, eps=5.0, algorithm="implicit").fit(views).weights_
    )
    cold = TCCA(random_state=4).fit_path(views, ranks)
    warm = TCCA(random_state=4).fit_path(views, ranks, warm_start=True)
    for r, est, ref in zip(ranks, warm, cold):
        assert est.factors_[0].shape == (5, r)
        # the warm start is one more start: never worse than the standalone fit
        assert est.reconstruction_errors_[-1] <= ref.reconstruction_errors_[-1] + 1e-9
    with pytest.raises(ValueError, match="warm_start needs"):
        TCCA(init=[np.ones((5, 1))] * 3).fit_path(views, ranks, warm_start=True)


@pytest.mark.parametrize("dims", [(5, 7), (5, 6, 4)])
def test_svd_that_does_not_converge_falls_back_to_gesvd(rng, dims, monkeypatch):
    """LAPACK's gesdd (numpy's SVD) failed on a randomized HOSVD sketch of Ads' TCCA
    tensor (a start of n_init = 10 at r = 300), which stopped the fit; the exact
    two-view route takes an SVD too. With gesdd failing every time, TCCA falls back
    to gesvd and gives the same fit."""
    views = _views(rng, dims, N=300, latent=3)
    kw = dict(init="svd", eps=1e-2, tol=1e-12, max_iter=2000, random_state=3)
    want = TCCA(3, **kw).fit(views)
    calls = []

    def fails(*args, **kwargs):
        calls.append(1)
        raise np.linalg.LinAlgError("SVD did not converge")

    def direct_fails(A, **kwargs):  # LAPACK's report: info > 0, not converged
        calls.append(1)
        return np.zeros((0, 0)), np.zeros(0), np.zeros((0, 0)), 1

    import tcca_core.solver.linalg as linalg

    monkeypatch.setattr(np.linalg, "svd", fails)
    monkeypatch.setattr(linalg, "_gesdd", direct_fails)  # small matrices' route
    got = TCCA(3, **kw).fit(views)
    assert calls
    assert_allclose(got.weights_, want.weights_, rtol=1e-8)
    for U, V in zip(got.factors_, want.factors_, strict=True):
        assert_allclose(U, V, atol=1e-6)


@pytest.mark.parametrize("scale, eps", [(1e-8, 1e-2), (1.0, 1e12)])
def test_an_eps_that_swamps_the_covariance_is_named(rng, scale, eps):
    """Data at 1e-8 (or eps = 1e12) leave variates of ~1e-6: the warning must say
    that eps swamps the covariance, and by how much, not blame max_iter."""
    views = [scale * X for X in _views(rng, [5, 4, 3], N=300, latent=2)]
    top = min(np.linalg.eigvalsh(np.cov(X.T, bias=True))[-1] for X in views)
    with pytest.warns(UserWarning, match="swamps the data's covariance") as caught:
        TCCA(2, eps=eps, random_state=0).fit(views)
    text = " ".join(str(w.message) for w in caught)
    assert f"{eps / top:.2g} times the largest variance" in text
    for w in caught:
        if issubclass(w.category, ConvergenceWarning):
            assert "swamps" in str(w.message)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        TCCA(2, eps=1e-2, random_state=0).fit([X / scale for X in views])


# ------------------------------------------------ when running out of sweeps warns
def _digit_views():
    from sklearn.datasets import load_digits

    X = load_digits().data
    return [X[:, :21], X[:, 21:42], X[:, 42:]]


def _fall_per_sweep(errors, window=5):
    """Mean relative decrease of the error per sweep over the last ``window``."""
    return (errors[-1 - window] - errors[-1]) / window / errors[-1]


def test_still_moving_is_the_usual_rule_per_sweep():
    from tcca_core.solver.convergence import still_moving

    tol, k = 1e-5, np.arange(40)
    assert not still_moving(0.3 * (1 - 0.5 * tol) ** k, tol)  # creeps below tol
    assert still_moving(0.3 * (1 - 2 * tol) ** k, tol)
    assert not still_moving(np.full(40, 0.3), tol)
    assert not still_moving(0.3 + 1e-9 * k, tol)  # a stall at rounding, not a fall
    assert still_moving([0.5, 0.4, 0.3], tol)  # too few sweeps to tell


@pytest.mark.parametrize(
    ("r", "max_iter", "warns"),
    [(40, 500, None), (45, 500, None), (50, 500, None), (45, 40, True)],
)
def test_running_out_of_sweeps_warns_only_while_the_error_still_falls(
    r, max_iter, warns
):
    """Digits at r = 40-50 take hundreds of sweeps. A fit that stops by the rule
    does not warn; one that runs out of sweeps warns only where the error still
    falls by tol per sweep or more (the usual rule's test), and the warning says
    by how much, measured on the errors the fit reports."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        est = TCCA(r, random_state=0, max_iter=max_iter).fit(_digit_views())
    assert est.converged_ or est.n_iter_ == est.max_iter
    fall = _fall_per_sweep(est.reconstruction_errors_)
    conv = [w for w in caught if issubclass(w.category, ConvergenceWarning)]
    assert not [w for w in caught if w not in conv]
    expected = not est.converged_ and fall >= est.tol
    assert len(conv) == int(expected)
    if warns is not None:
        assert expected == warns
    if expected:
        message = str(conv[0].message)
        assert f"fell by {5 * fall:.2g} of itself over the last 5 sweeps" in message
        assert f"({fall / est.tol:.3g} times tol per sweep)" in message


# ----------------------------------------------------------------------- verbose
def _fitted_attributes(est) -> dict:
    return {
        k: v for k, v in vars(est).items() if k.endswith("_") and k != "fit_seconds_"
    }


def _assert_equal(x, y, where):
    """Bit for bit, through lists, tuples and arrays; a ViewKernel by its matrix."""
    if isinstance(x, list | tuple):
        assert len(x) == len(y), where
        for i, (a, b) in enumerate(zip(x, y, strict=True)):
            _assert_equal(a, b, f"{where}[{i}]")
    elif isinstance(x, np.ndarray):
        np.testing.assert_array_equal(x, y, err_msg=where)
    elif hasattr(x, "X_"):
        np.testing.assert_array_equal(x.X_, y.X_, err_msg=where)
    else:
        assert x == y, where


def _assert_same_fit(a, b):
    fa, fb = _fitted_attributes(a), _fitted_attributes(b)
    assert fa.keys() == fb.keys()
    for k in fa:
        _assert_equal(fa[k], fb[k], k)


@pytest.mark.parametrize("verbose", [1, 2, True])
def test_verbose_changes_no_number(rng, verbose, capsys):
    from tcca_core import KTCCA

    views = _views(rng, (5, 4, 6), N=150)
    quiet = TCCA(3, random_state=0).fit(views)
    loud = TCCA(3, random_state=0, verbose=verbose).fit(views)
    _assert_same_fit(quiet, loud)
    for q, v in zip(
        TCCA(random_state=0).fit_path(views, [1, 3]),
        TCCA(random_state=0, verbose=verbose).fit_path(views, [1, 3]),
        strict=True,
    ):
        _assert_same_fit(q, v)
    kq = KTCCA(2, random_state=0).fit([V[:60] for V in views])
    kv = KTCCA(2, random_state=0, verbose=verbose).fit([V[:60] for V in views])
    _assert_same_fit(kq, kv)
    assert "KTCCA: rank 2 (1/1) done" in capsys.readouterr().err


def test_verbose_reports_ranks_starts_and_sweeps(rng, capsys):
    views = _views(rng, (5, 4, 6), N=150)
    TCCA(random_state=0).fit_path(views, [1, 2])
    assert capsys.readouterr().err == ""  # verbose=0 says nothing
    fits = TCCA(random_state=0, verbose=1).fit_path(views, [1, 2])
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) == 2  # stderr is not a terminal here: a line per rank
    for line, est, i in zip(lines, fits, (1, 2), strict=True):
        assert line.startswith(f"TCCA: rank {est.n_components} ({i}/2) done: ")
        assert f"{est.n_iter_} sweeps, kept start {est.init_}" in line
    est = TCCA(2, random_state=0, init="random", n_init=3, tol=0, max_iter=200)
    est.set_params(verbose=2).fit(views)
    err = capsys.readouterr().err
    assert "TCCA: rank 2 (1/1): racing 3 starts" in err
    assert "TCCA: rank 2 (1/1): sweep 200, relative error" in err
    assert "(of 3 raced)" in err


def test_verbose_bar_on_a_terminal(rng):
    import io

    from tcca_core._progress import fit_progress

    class Terminal(io.StringIO):
        def isatty(self):
            return True

    views = _views(rng, (5, 4, 6), N=150)
    out = Terminal()
    with fit_progress(1, "TCCA", stream=out):
        fits = TCCA(random_state=0).fit_path(views, [1, 2, 3])
    text = out.getvalue()
    assert "TCCA: 100%" in text and "3/3" in text and "rank" in text
    assert f"r={fits[-1].n_components}" in text


def test_a_pipeline_job_reports_only_long_fits(rng):
    import io

    from tcca_core._progress import report_long_fits

    views = _views(rng, (5, 4, 6), N=150)
    quiet, loud = io.StringIO(), io.StringIO()
    with report_long_fits("mfeat/linear split 0", quiet, every=1e6):
        TCCA(2, random_state=0).fit(views)
    assert quiet.getvalue() == ""
    with report_long_fits("mfeat/linear split 0", loud, every=0.0):
        TCCA(2, random_state=0).fit(views)
        TCCA(2, random_state=0, verbose=0).fit(views)
    lines = loud.getvalue().splitlines()
    assert lines and all(
        x.startswith("mfeat/linear split 0 TCCA: rank 2") for x in lines
    )
    assert sum(" done: " in x for x in lines) == 2


@pytest.mark.parametrize("bad", [-1, 1.5, "yes"])
def test_verbose_is_checked(rng, bad):
    with pytest.raises(ValueError, match="^verbose must be"):
        TCCA(2, verbose=bad).fit(_views(rng, (3, 4, 5)))

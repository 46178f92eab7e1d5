"""KTCCA against the mathematics of the paper (section 4.4 and the appendix)."""

import numpy as np
import pytest
from numpy.testing import assert_allclose
from scipy.linalg import subspace_angles

from tcca_core import KTCCA, TCCA
from tcca_core._ktcca import kernel_whitening
from tcca_core.kernels import ViewKernel, chi2_distance


@pytest.fixture
def rng():
    return np.random.default_rng(4242)


def _views(rng, dims, N):
    z = rng.exponential(size=(N, 2)) - 1.0
    return [
        z @ rng.standard_normal((2, d)) + 0.3 * rng.standard_normal((N, d))
        for d in dims
    ]


def _outer_sum(F):
    """(1/N) sum_n f_1n o ... o f_mn for F_p of shape (N, D_p)."""
    letters = "abcd"[: len(F)]
    return np.einsum(",".join("n" + c for c in letters) + "->" + letters, *F) / len(
        F[0]
    )


@pytest.mark.parametrize("m", [2, 3, 4])
def test_kernel_tensor_theorem(rng, m):
    """C x_1 phi(X_1)^T ... x_m phi(X_m)^T = (1/N) sum_n k_1n o ... o k_mn (Thm 3)."""
    N, D = 6, [3, 4, 2, 3][:m]
    phi = [rng.standard_normal((N, d)) for d in D]  # rows = phi(x_pn)
    C = _outer_sum(phi)
    F = C
    for p, P in enumerate(phi):
        F = np.moveaxis(np.tensordot(P, F, axes=(1, p)), 0, p)
    K = [P @ P.T for P in phi]
    G = _outer_sum([Kp.T for Kp in K])  # k_pn is the n-th column of K_pp
    assert_allclose(F, G, atol=1e-12)


@pytest.mark.parametrize("m", [2, 3, 4])
def test_dense_and_implicit_engines_agree(rng, m):
    N, r = 14, 2
    views = _views(rng, [3, 4, 5, 3][:m], N)
    init = [rng.standard_normal((N, r)) for _ in range(m)]
    if m == 2:  # exact SVD in our engines: compare with a converged parafac
        kw = dict(kernel="rbf", tol=1e-14, max_iter=5000, acceleration=None)
    else:
        kw = dict(kernel="rbf", init=init, tol=0, max_iter=30, acceleration=None)
    a = KTCCA(r, algorithm="tensorly", **kw).fit(views)
    for algo in ("dense", "implicit"):
        b = KTCCA(r, algorithm=algo, **kw).fit(views)
        assert_allclose(a.weights_, b.weights_, rtol=1e-9, atol=1e-13)
        for Ba, Bb in zip(a.factors_, b.factors_):
            assert np.max(subspace_angles(Ba, Bb)) < 1e-8
        assert_allclose(a.transform(views), b.transform(views), atol=1e-9)


def test_linear_kernel_ktcca_is_tcca(rng):
    """With K = Xc Xc^T and eps_K = N eps, KTCCA solves TCCA's problem.

    a^T (K^2 + N eps K) a = N h^T (C + eps I) h for h = Xc^T a, and the kernel tensor
    contracts to TCCA's objective, so h_K = h / sqrt(N), rho_K = rho / N^(m/2).
    """
    N, eps, m = 120, 0.05, 3
    views = _views(rng, (3, 4, 5), N)
    lin = TCCA(1, eps=eps, tol=1e-13, max_iter=3000, random_state=0).fit(views)
    ker = KTCCA(
        1,
        eps=N * eps,
        kernel="linear",
        tol=1e-13,
        max_iter=3000,
        jitter=1e-13,
        random_state=0,
    ).fit(views)
    assert_allclose(ker.weights_[0] * N ** (m / 2), lin.weights_[0], rtol=1e-6)
    for zl, zk in zip(
        lin.transform(views, per_view=True), ker.transform(views, per_view=True)
    ):
        assert_allclose(
            abs(zl[:, 0] @ zk[:, 0]) / np.linalg.norm(zl) / np.linalg.norm(zk),
            1.0,
            atol=1e-8,
        )
        assert_allclose(np.linalg.norm(zk), np.linalg.norm(zl) / np.sqrt(N), rtol=1e-6)


def test_training_projection_is_K_Linv_B(rng):
    views = _views(rng, (3, 4, 5), 30)
    est = KTCCA(2, kernel="l2", random_state=0).fit(views)
    for p, Z in enumerate(est.transform(views, per_view=True)):
        K = est.kernels_[p].fit(views[p])
        K = K - K.mean(0) - K.mean(1)[:, None] + K.mean()
        L, _ = kernel_whitening(K, est.eps, est.jitter, p)
        Linv = np.linalg.inv(L)
        assert_allclose(Z, K @ Linv @ est.factors_[p], atol=1e-8)
    # rho_k of the training projections (Theorem 1 in feature space)
    Z = est.transform(views, per_view=True)
    rho = np.mean(np.prod([z for z in Z], axis=0), axis=0)
    assert_allclose(rho, est.correlations_, atol=1e-12)


def test_precomputed_kernels_match_computed_ones(rng):
    views = _views(rng, (3, 4, 5), 25)
    new = _views(rng, (3, 4, 5), 4)
    a = KTCCA(2, kernel="l2", random_state=1).fit(views)
    Ks, Kx = [], []
    for X, Xn in zip(views, new):
        vk = ViewKernel("l2")
        Ks.append(vk.fit(X))
        Kx.append(vk.cross(Xn))
    b = KTCCA(2, kernel="precomputed", random_state=1).fit(Ks)
    assert_allclose(a.weights_, b.weights_, rtol=1e-10)
    assert_allclose(a.transform(new), b.transform(Kx), atol=1e-10)


def test_precomputed_kernels_are_prepared_once_for_every_eps(rng, monkeypatch):
    # a grid over eps refits on the same kernel arrays: they are checked,
    # centered and squared once, and every fit equals one on fresh copies
    import tcca_core._ktcca as kt

    views = _views(rng, (3, 4, 5), 30)
    Ks = [ViewKernel("rbf", gamma=0.3).fit(X) for X in views]
    checked = []
    check = kt._check_psd
    monkeypatch.setattr(kt, "_check_psd", lambda K, p: (checked.append(p), check(K, p)))
    for eps in (1e-3, 1e-1, 10.0):
        shared = KTCCA(2, eps=eps, kernel="precomputed", random_state=0).fit(Ks)
        fresh = KTCCA(2, eps=eps, kernel="precomputed", random_state=0).fit(
            [K.copy() for K in Ks]
        )
        assert np.array_equal(shared.weights_, fresh.weights_)
        assert np.array_equal(shared.transform(Ks), fresh.transform(Ks))
    # three views prepared once, and their fresh copies once per eps
    assert checked.count(0) == 1 + 3


def test_a_precomputed_kernel_changed_in_place_is_prepared_again(rng):
    views = _views(rng, (3, 4, 5), 30)
    Ks = [ViewKernel("rbf", gamma=0.3).fit(X) for X in views]
    KTCCA(2, kernel="precomputed", random_state=0).fit(Ks)
    Ks[1] *= 0.5
    Ks[1] += 0.5 * np.eye(30)
    again = KTCCA(2, kernel="precomputed", random_state=0).fit(Ks)
    fresh = KTCCA(2, kernel="precomputed", random_state=0).fit([K.copy() for K in Ks])
    assert np.array_equal(again.weights_, fresh.weights_)


def test_paper_kernels():
    rng = np.random.default_rng(0)
    H = rng.random((10, 6))
    D = chi2_distance(H)
    ref = np.array(
        [[np.sum((a - b) ** 2 / np.where(a + b > 0, a + b, 1)) for b in H] for a in H]
    )
    assert_allclose(D, ref, atol=1e-12)
    K = ViewKernel("chi2").fit(H)
    assert_allclose(np.diag(K), 1.0)
    assert_allclose(K.min(), np.exp(-1.0))
    with pytest.raises(ValueError, match="non-negative"):
        chi2_distance(H - 0.5)


def test_same_seed_gives_identical_bits(rng):
    views = _views(rng, (3, 4, 5), 30)
    a = KTCCA(2, random_state=5).fit_transform(views)
    b = KTCCA(2, random_state=5).fit_transform(views)
    assert np.array_equal(a, b)


def test_non_psd_precomputed_kernel_is_rejected(rng):
    A = rng.standard_normal((10, 10))
    bad = (A + A.T) / 2  # indefinite
    good = np.eye(10)
    with pytest.raises(ValueError, match="view 0 is not positive semidefinite"):
        KTCCA(1, kernel="precomputed").fit([bad, good])
    with pytest.raises(ValueError, match="not symmetric"):
        KTCCA(1, kernel="precomputed").fit([good, A])


@pytest.mark.parametrize(
    "views_fn, kwargs, match",
    [
        (
            lambda r: [r.standard_normal((10, 3)), r.standard_normal((9, 3))],
            {},
            "same number of samples",
        ),
        (lambda r: [np.full((10, 3), np.nan), r.standard_normal((10, 3))], {}, "NaN"),
        (lambda r: [r.standard_normal((10, 3))], {}, "at least 2 views"),
        (lambda r: [r.standard_normal((10, 3))] * 2, {"n_components": 11}, "too large"),
        (
            lambda r: [r.standard_normal((10, 3))] * 2,
            {"eps": -1},
            "eps must be a finite number >= 0",
        ),
        (
            lambda r: [r.standard_normal((10, 3))] * 2,
            {"kernel": ["l2"]},
            "kernel has 1 entries but there are 2 views",
        ),
        (
            lambda r: [r.standard_normal((10, 3))] * 2,
            {"kernel": "cosine"},
            "unknown kernel",
        ),
    ],
)
def test_bad_input_raises_a_clear_error(rng, views_fn, kwargs, match):
    with pytest.raises(ValueError, match=match):
        KTCCA(**{"n_components": 1, **kwargs}).fit(views_fn(rng))


def test_path_equals_independent_fits(rng):
    views = _views(rng, (3, 4, 5), 25)
    ranks = [2, 1]
    path = KTCCA(kernel="rbf", random_state=2).fit_path(views, ranks)
    for r, est in zip(ranks, path):
        ref = KTCCA(r, kernel="rbf", random_state=2).fit(views)
        assert np.array_equal(est.transform(views), ref.transform(views))


def test_centered_cross_kernels_serve_every_rank_and_eps(rng):
    # The pipeline centers the cross kernels of a job once and projects every rank
    # of every eps with them: that must equal each fit's own transform,
    # bit for bit, because centering depends on the training kernels only.
    views = _views(rng, (3, 4, 5), 25)
    new = _views(rng, (3, 4, 5), 7)
    fits = [
        est
        for eps in (1e-3, 1.0)
        for est in KTCCA(kernel="rbf", eps=eps, random_state=2).fit_path(views, [1, 2])
    ]
    centered = fits[0]._centered_cross(new)
    for est in fits:
        assert np.array_equal(est._project(centered), est.transform(new))
        parts = est._project(centered, per_view=True)
        assert np.array_equal(np.hstack(parts), est.transform(new))


# ------------------------------------------------- spike components, kernel width
def _digit_views(scale: bool):
    """scikit-learn's digits, 300 samples cut into three views of pixels (0-16)."""
    from sklearn.datasets import load_digits
    from sklearn.preprocessing import StandardScaler

    X = load_digits().data[:300]
    if scale:
        X = StandardScaler().fit_transform(X)
    return [X[:, :21], X[:, 21:42], X[:, 42:]]


def test_one_sample_limit_is_a_spikes_correlation():
    from tcca_core._multiview import high_order_correlations
    from tcca_core._spikes import one_sample_limit

    for N, m in [(7, 3), (30, 3), (12, 4), (9, 2)]:
        e = np.zeros((N, 1))
        e[3] = 5.0
        assert_allclose(high_order_correlations([e] * m)[0], one_sample_limit(N, m))


def test_kernel_neighbours_counts_similar_samples():
    from tcca_core._spikes import kernel_neighbours

    N = 2500  # more than one row block
    assert_allclose(kernel_neighbours(3.0 * np.eye(N)), 0.0, atol=1e-12)
    assert_allclose(kernel_neighbours(np.full((N, N), 2.0)), N - 1)
    K = np.diag(np.arange(1.0, 5.0))
    K[0, 1] = K[1, 0] = -0.5 * np.sqrt(2.0)  # |normalized| 0.5 between 0 and 1
    assert_allclose(kernel_neighbours(K), 0.25)  # median of 0.5, 0.5, 0, 0


def test_narrow_kernel_on_unscaled_data_warns():
    """Raw pixels with the RBF default gamma: every component is a one-sample spike."""
    views = _digit_views(scale=False)
    with pytest.warns(UserWarning, match="spikes on single training samples") as rec:
        est = KTCCA(10, kernel="rbf", random_state=0).fit(views)
    message = str(rec[0].message)
    assert "kernel='rbf', gamma=None" in message
    assert "StandardScaler" in message and "'gamma': 'scale'" in message
    # the symptom the message names is there: the training score at the limit
    limit = (300 - 2) / np.sqrt(299)
    assert est.score(views) > 0.999 * limit
    # fit_path warns once per rank it returns
    with pytest.warns(UserWarning, match="spikes") as rec:
        KTCCA(kernel="rbf", random_state=0).fit_path(views, [2, 3])
    assert sum("spikes" in str(w.message) for w in rec) == 2


@pytest.mark.parametrize(
    ("scale", "kw"),
    [
        (True, {"kernel": "rbf"}),
        (False, {"kernel": "l2"}),
        (False, {"kernel": "rbf", "kernel_params": {"gamma": "scale"}}),
    ],
    ids=["scaled-rbf", "raw-l2", "raw-rbf-gamma-scale"],
)
def test_fitting_kernels_do_not_warn(scale, kw):
    import warnings

    views = _digit_views(scale)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        est = KTCCA(10, random_state=0, **kw).fit(views)
    assert est.score(views) < (300 - 2) / np.sqrt(299)


def test_gamma_scale_is_sklearn_scale(rng):
    """gamma="scale" is 1 / (n_features * X.var()), fitted on the training samples."""
    import scipy.sparse as sp
    from sklearn.metrics.pairwise import rbf_kernel

    X, Y = 7.0 * rng.standard_normal((20, 4)), rng.standard_normal((5, 4))
    vk = ViewKernel("rbf", gamma="scale")
    K = vk.fit(X)
    gamma = 1.0 / (4 * X.var())
    assert_allclose(vk.gamma_, gamma)
    assert_allclose(K, rbf_kernel(X, gamma=gamma))
    assert_allclose(vk.cross(Y), rbf_kernel(Y, X, gamma=gamma))
    sparse = ViewKernel("rbf", gamma="scale")
    sparse.fit(sp.csr_matrix(X))
    assert_allclose(sparse.gamma_, gamma)
    assert ViewKernel("rbf", gamma="scale").fit(np.ones((3, 2))).shape == (3, 3)
    # the kernel, hence the fit, does not depend on the features' scale
    views = _views(rng, (3, 4, 5), 40)
    kw = dict(kernel="rbf", kernel_params={"gamma": "scale"}, random_state=0)
    a = KTCCA(2, **kw).fit(views)
    b = KTCCA(2, **kw).fit([100.0 * V for V in views])
    assert_allclose(a.correlations_, b.correlations_, rtol=1e-6)


@pytest.mark.parametrize("kernel", ["l2", "chi2"])
def test_the_papers_kernels_never_look_diagonal(rng, kernel):
    """exp(-d / max d) >= exp(-1) between any two samples: every sample has at
    least (N - 1) / e samples' worth of neighbours, far above the warning's 1, so
    the spike warning cannot fire on the pipeline's kernels (whatever the scale)."""
    from tcca_core._spikes import NEIGHBOURS, kernel_neighbours

    X = 1e3 * np.abs(rng.standard_cauchy((60, 5)))  # heavy-tailed, large scale
    K = ViewKernel(kernel).fit(X)
    assert kernel_neighbours(K) >= (60 - 1) / np.e > NEIGHBOURS

"""Regularized CCA and KCCA against independent computations (baselines.md 4, 8)."""

import numpy as np
import pytest
import scipy.linalg as sla
import scipy.sparse as sp
from numpy.testing import assert_allclose

from tcca_core.baselines import CCA, KCCA, cca, view_pairs

pytestmark = pytest.mark.usefixtures("single_blas_thread")


def _qr_canonical_correlations(Xp, Xq, eps):
    """Regularized CCA by the classical QR + SVD route on augmented data.

    C~_pp = C_pp + eps I is the covariance of X_p with sqrt(N eps) I appended as
    extra rows, and the other view gets zeros there, so C_pq is unchanged; the
    canonical correlations are then the singular values of Q_p^T Q_q.
    """
    N, dp = Xp.shape
    dq = Xq.shape[1]
    Xp, Xq = Xp - Xp.mean(0), Xq - Xq.mean(0)
    s = np.sqrt(N * eps)
    Ap = np.vstack([Xp, s * np.eye(dp), np.zeros((dq, dp))])
    Aq = np.vstack([Xq, np.zeros((dp, dq)), s * np.eye(dq)])
    Qp, Qq = np.linalg.qr(Ap)[0], np.linalg.qr(Aq)[0]
    return np.linalg.svd(Qp.T @ Qq, compute_uv=False)


def _gev_cca(Xp, Xq, eps, r):
    """Top r pairs of [[0, C_pq], [C_qp, 0]] v = rho blockdiag(C~_pp, C~_qq) v."""
    N, dp = Xp.shape
    Xp, Xq = Xp - Xp.mean(0), Xq - Xq.mean(0)
    Cpq = Xp.T @ Xq / N
    A = np.block([[np.zeros((dp, dp)), Cpq], [Cpq.T, np.zeros((Xq.shape[1],) * 2)]])
    B = sla.block_diag(
        Xp.T @ Xp / N + eps * np.eye(dp), Xq.T @ Xq / N + eps * np.eye(Xq.shape[1])
    )
    rho, V = sla.eigh(A, B)
    rho, V = rho[::-1][:r], V[:, ::-1][:, :r] * np.sqrt(2)  # each block C~-unit
    return rho, V[:dp], V[dp:]


def _same_up_to_sign(A, B, atol):
    signs = np.sign(np.sum(A * B, axis=0))
    assert_allclose(A, B * signs, atol=atol)


@pytest.mark.parametrize("eps", [1e-2, 1.0])
def test_cca_matches_independent_computations(make_views, eps):
    (Xp, Xq), _ = make_views(n=80, dims=(5, 7))
    est = CCA(n_components=4, eps=eps).fit([Xp, Xq])
    assert_allclose(
        est.correlations_, _qr_canonical_correlations(Xp, Xq, eps)[:4], atol=1e-10
    )
    rho, Vp, Vq = _gev_cca(Xp, Xq, eps, 4)
    assert_allclose(est.correlations_, rho, atol=1e-10)
    _same_up_to_sign(est.projections_[0], Vp, 1e-8)
    _same_up_to_sign(est.projections_[1], Vq, 1e-8)


def test_cca_constraints_and_correlations(make_views):
    (Xp, Xq), _ = make_views(n=60, dims=(4, 6))
    eps = 0.1
    est = CCA(n_components=None, eps=eps).fit([Xp, Xq])
    Zp, Zq = est.transform([Xp, Xq], per_view=True)
    Wp, Wq = est.projections_
    N = len(Xp)
    # W^T C~ W = I and W_p^T C_pq W_q = diag(sigma).
    assert_allclose(Zp.T @ Zp / N + eps * Wp.T @ Wp, np.eye(4), atol=1e-10)
    assert_allclose(Zq.T @ Zq / N + eps * Wq.T @ Wq, np.eye(4), atol=1e-10)
    assert_allclose(Zp.T @ Zq / N, np.diag(est.correlations_), atol=1e-10)
    assert est.r_max_ == 4


def test_cca_unregularized_equals_classical_cca(make_views):
    (Xp, Xq), _ = make_views(n=50, dims=(3, 4))
    est = CCA(n_components=3, eps=0.0).fit([Xp, Xq])
    assert_allclose(
        est.correlations_, _qr_canonical_correlations(Xp, Xq, 0.0)[:3], atol=1e-10
    )


def test_cca_is_nested_and_transform_is_affine(make_views):
    (Xp, Xq), _ = make_views(n=60, dims=(5, 6), seed=3)
    full = CCA(None).fit([Xp, Xq])
    two = CCA(2).fit([Xp, Xq])
    Zf = full.transform([Xp, Xq], per_view=True)
    Z2 = two.transform([Xp, Xq], per_view=True)
    for a, b in zip(Zf, Z2):
        assert_allclose(a[:, :2], b, atol=1e-12)
    new = [Xp[:5] + 1.0, Xq[:5] - 2.0]
    Z = two.transform(new)
    assert_allclose(Z[:, :2], (new[0] - two.means_[0]) @ two.projections_[0])
    assert Z.shape == (5, 4)


def test_cca_sparse_equals_dense(make_views):
    (Xp, Xq), _ = make_views(n=40, dims=(4, 5))
    Xp = Xp * (np.abs(Xp) > 0.5)
    a = CCA(3).fit_transform([Xp, Xq])
    b = CCA(3).fit_transform([sp.csr_matrix(Xp), Xq])
    assert_allclose(a, b, atol=1e-10)


def test_cca_rank_deficient_one_hot_needs_eps():
    rng = np.random.default_rng(0)
    X = np.zeros((100, 6))
    X[np.arange(100), rng.integers(0, 3, 100)] = (
        1  # one-hot block: rank 2 after centering
    )
    X[np.arange(100), 3 + rng.integers(0, 3, 100)] = 1
    Y = rng.standard_normal((100, 5))
    est = CCA(None, eps=1e-2).fit([X, Y])
    assert est.r_max_ == 4
    with pytest.raises(ValueError, match="singular"):
        CCA(2, eps=0.0).fit([X, Y])


@pytest.mark.parametrize(
    "views, kw, match",
    [
        ("three", {}, "exactly 2 views"),
        ("one", {}, "at least 2 views"),
        ("rows", {}, "same number of samples"),
        ("nan", {}, "NaN"),
        ("ok", {"n_components": 50}, "too large"),
        ("ok", {"eps": -1.0}, "eps"),
    ],
)
def test_cca_rejects_bad_input(make_views, views, kw, match):
    V, _ = make_views(n=30, dims=(3, 4, 5))
    data = {
        "three": V,
        "one": V[:1],
        "rows": [V[0], V[1][:-1]],
        "nan": [np.where(V[0] > 2, np.nan, V[0]), V[1]],
        "ok": V[:2],
    }[views]
    with pytest.raises(ValueError, match=match):
        CCA(**kw).fit(data)


def test_view_pairs():
    assert view_pairs(3) == [(0, 1), (0, 2), (1, 2)]
    assert len(view_pairs(5)) == 10


# ---------------------------------------------------------------------- KCCA


def test_kcca_linear_kernel_is_linear_cca_with_eps_over_n(make_views):
    """Linear K = X X^T: a^T (K^2 + e K) a = N h^T (C + (e/N) I) h with h = X^T a, and
    a_p^T K_p K_q a_q = N h_p^T C_pq h_q, so KCCA(e) is CCA(e / N): same
    correlations, same variates sqrt(N) K a = X w, on training and new samples."""
    (Xp, Xq), _ = make_views(n=70, dims=(4, 6), seed=5)
    N, e = 70, 3.0
    lin = CCA(4, eps=e / N).fit([Xp, Xq])
    ker = KCCA(4, eps=e, kernel="linear").fit([Xp, Xq])
    assert_allclose(ker.correlations_, lin.correlations_, atol=1e-9)
    new = [Xp[:9] * 2 + 1, Xq[:9] - 1]
    for data in ([Xp, Xq], new):
        for a, b in zip(
            ker.transform(data, per_view=True), lin.transform(data, per_view=True)
        ):
            _same_up_to_sign(a, b, 1e-7)


def test_kcca_linear_kernel_eps_zero_gives_unregularized_cca(make_views):
    # N > d: the unregularized linear KCCA correlations are the classical ones.
    (Xp, Xq), _ = make_views(n=60, dims=(3, 5), seed=2)
    ker = KCCA(3, eps=0.0, kernel="linear").fit([Xp, Xq])
    assert_allclose(
        ker.correlations_, _qr_canonical_correlations(Xp, Xq, 0.0)[:3], atol=1e-8
    )


def test_kcca_constraint_and_objective(make_views):
    (Xp, Xq), _ = make_views(n=40, dims=(3, 4), seed=1)
    eps = 0.1
    est = KCCA(None, eps=eps, kernel="l2").fit([Xp, Xq])
    Kp, Kq = (vk.fit(X) for vk, X in zip(est.kernels_, (Xp, Xq)))
    H = np.eye(40) - 1 / 40
    Kp, Kq = H @ Kp @ H, H @ Kq @ H
    ap, aq = est.dual_coef_
    r = 5
    assert_allclose(
        ap[:, :r].T @ (Kp @ Kp + eps * Kp) @ ap[:, :r], np.eye(r), atol=1e-8
    )
    assert_allclose(
        aq[:, :r].T @ (Kq @ Kq + eps * Kq) @ aq[:, :r], np.eye(r), atol=1e-8
    )
    assert_allclose(
        ap[:, :r].T @ Kp @ Kq @ aq[:, :r], np.diag(est.correlations_[:r]), atol=1e-8
    )
    assert est.r_max_ == 39  # centering removes one dimension
    # transform of the training samples returns the training variates
    for a, b in zip(est.transform([Xp, Xq], per_view=True), est.train_variates_):
        assert_allclose(a, b, atol=1e-8)


def test_kcca_precomputed_equals_kernel_name(make_views):
    (Xp, Xq), _ = make_views(n=30, dims=(3, 4))
    a = KCCA(3, eps=0.5, kernel="l2").fit([Xp, Xq])
    from tcca_core.kernels import ViewKernel

    K = [ViewKernel("l2").fit(X) for X in (Xp, Xq)]
    b = KCCA(3, eps=0.5, kernel="precomputed").fit(K)
    assert_allclose(a.correlations_, b.correlations_, atol=1e-12)
    assert_allclose(a.transform([Xp, Xq]), b.transform(K), atol=1e-10)


@pytest.mark.parametrize(
    "case, match",
    [
        ("three", "exactly 2 views"),
        ("rows", "same number"),
        ("nan", "NaN"),
        ("r", "too large"),
        ("kernel", "must be square"),
    ],
)
def test_kcca_rejects_bad_input(make_views, case, match):
    V, _ = make_views(n=30, dims=(3, 4, 5))
    est, data = KCCA(2), V[:2]
    if case == "three":
        data = V
    elif case == "rows":
        data = [V[0], V[1][:-2]]
    elif case == "nan":
        data = [V[0], np.full_like(V[1], np.nan)]
    elif case == "r":
        est = KCCA(30)
    elif case == "kernel":
        est, data = KCCA(2, kernel="precomputed"), [np.eye(30), np.ones((30, 29))]
    with pytest.raises(ValueError, match=match):
        est.fit(data)


def test_cca_function_returns_r_max(make_views):
    (Xp, Xq), _ = make_views(n=30, dims=(3, 4))
    out = cca([Xp, Xq], None)
    assert out["r_max"] == 3 and out["projections"][0].shape == (3, 3)


# -------------------------------------------------------------- numerical faults


@pytest.mark.parametrize(
    "constant",
    [
        np.full((50, 2), 0.1),  # mean 0.1 not exact: centered ~1e-33, not 0
        1e3 + 1e-13 * np.arange(100).reshape(50, 2) % 3,  # differs by rounding only
    ],
    ids=["exact", "rounding"],
)
def test_constant_view_is_named_whatever_its_mean(constant):
    """A constant view is reported as such (it used to give correlations of 3e-33),
    with a tolerance relative to the data, not to the rounding left by centering."""
    rng = np.random.default_rng(0)
    X = rng.standard_normal((50, 3))
    with pytest.raises(ValueError, match="view 1 is constant over the samples"):
        CCA(None).fit([X, constant])
    with pytest.raises(ValueError, match="view 0 is constant over the samples"):
        CCA(None).fit([constant, X])


def test_svd_falls_back_to_gesvd(monkeypatch):
    """LAPACK's gesdd (numpy's SVD) fails to converge on some nearly rank-deficient
    matrices (Ads, split 3, views 0 and 2, eps = 1e-3) where gesvd succeeds: cca()
    and KCCA fall back to it and give the same solution."""
    rng = np.random.default_rng(0)
    z = rng.standard_normal((60, 2))
    views = [
        z @ rng.standard_normal((2, d)) + rng.standard_normal((60, d)) for d in (4, 5)
    ]
    want = cca(views, eps=1e-3)
    kwant = KCCA(3, kernel="linear", eps=1.0).fit(views).transform(views)
    calls = []

    def fails(*args, **kwargs):
        calls.append(args[0].shape)
        raise np.linalg.LinAlgError("SVD did not converge")

    def direct_fails(A, **kwargs):  # LAPACK's report: info > 0, not converged
        calls.append(A.shape)
        return np.zeros((0, 0)), np.zeros(0), np.zeros((0, 0)), 1

    import tcca_core.solver.linalg as linalg

    monkeypatch.setattr(np.linalg, "svd", fails)
    monkeypatch.setattr(linalg, "_gesdd", direct_fails)  # small matrices' route
    got = cca(views, eps=1e-3)
    assert calls  # gesdd was tried first
    assert_allclose(got["correlations"], want["correlations"], rtol=1e-10)
    for a, b in zip(got["projections"], want["projections"]):
        assert_allclose(a, b, atol=1e-10)
    kgot = KCCA(3, kernel="linear", eps=1.0).fit(views).transform(views)
    assert_allclose(kgot, kwant, atol=1e-8)


def test_singular_with_eps_names_the_scale_not_eps():
    """eps = 0.01 next to a view of scale 1e9: the message says the scale is the
    problem (it used to say "use eps > 0" with eps already 0.01)."""
    rng = np.random.default_rng(0)
    X = rng.standard_normal((40, 3))
    Y = 1e9 * rng.standard_normal((40, 3))
    Y = np.hstack([Y, Y[:, :1]])  # a dependent column, at scale 1e9
    with pytest.raises(ValueError) as err:
        CCA(2, eps=0.01).fit([X, Y])
    msg = str(err.value)
    assert "view 1" in msg and "eps = 0.01 is negligible" in msg, msg
    assert "standardize" in msg and "use eps > 0" not in msg, msg
    with pytest.raises(ValueError, match=r"and eps = 0; use eps > 0"):
        CCA(2, eps=0.0).fit([X, Y / 1e9])
    CCA(2, eps=0.01).fit([X, Y / 1e9])  # standardized: fine


# --------------------------------------------------------- KCCA computation
def _kcca_reference(Kp, Kq, n_components, eps):
    """kcca_from_kernels as it was first written, verbatim: one eigh per kernel
    and fit, the N x N roots S = V diag(sqrt(mu / (mu + eps))) V^T and
    A = V diag(1 / sqrt(mu (mu + eps))) V^T, the full SVD of S_p S_q, svd_flip."""
    from sklearn.utils.extmath import svd_flip

    roots = []
    for K in (Kp, Kq):
        mu, V = np.linalg.eigh((K + K.T) / 2)
        mu = np.clip(mu, 0.0, None)
        tol = mu.max(initial=0.0) * K.shape[0] * np.finfo(float).eps
        mu[mu <= tol] = 0.0
        s = np.sqrt(np.divide(mu, mu + eps, out=np.zeros_like(mu), where=mu > 0))
        w = np.divide(
            1.0, np.sqrt(mu * (mu + eps)), out=np.zeros_like(mu), where=mu > 0
        )
        roots.append(((V * s) @ V.T, (V * w) @ V.T, int(np.count_nonzero(mu))))
    (Sp, Ap, rp), (Sq, Aq, rq) = roots
    r_max = min(rp, rq)
    r = r_max if n_components is None else n_components
    U, sig, Vt = np.linalg.svd(Sp @ Sq, full_matrices=True)
    U, Vt = svd_flip(U, Vt)
    U, Vq = U[:, :r], Vt[:r].T
    return {
        "dual_coef": [Ap @ U, Aq @ Vq],
        "train_variates": [Sp @ U, Sq @ Vq],
        "correlations": sig[:r],
        "r_max": r_max,
    }


def _centered_kernels(n=80, seed=0, m=3):
    from tcca_core.kernels import ViewKernel, center_kernel

    rng = np.random.default_rng(seed)
    z = rng.standard_normal((n, 2))
    views = [
        np.tanh(z @ rng.standard_normal((2, d))) + 0.3 * rng.standard_normal((n, d))
        for d in (5, 7, 4)[:m]
    ]
    return [center_kernel(ViewKernel("l2").fit(X))[0] for X in views]


def _assert_same_kcca(got, want, r_check):
    assert got["r_max"] == want["r_max"]
    assert_allclose(got["correlations"], want["correlations"], rtol=0, atol=1e-8)
    for key in ("dual_coef", "train_variates"):
        for a, b in zip(got[key], want[key]):
            assert a.shape == b.shape
            scale = max(1.0, np.abs(b[:, :r_check]).max())
            assert_allclose(a[:, :r_check], b[:, :r_check], rtol=0, atol=1e-8 * scale)


@pytest.mark.parametrize("eps", [1e-2, 0.1, 1.0, 10.0])
@pytest.mark.parametrize("n_components", [None, 3, 12, 50])
def test_kcca_equals_the_previous_formula(eps, n_components, monkeypatch):
    """The eigenbasis route (and the top-r route for r <= r_max / 2) gives the old
    formula's dual coefficients, variates and correlations to 1e-8 (relative to the
    largest entry), on kernels whose correlations are distinct."""
    from tcca_core.baselines import _cca

    routes = []
    real_top = _cca._top_singular

    def top(M, r):
        out = real_top(M, r)
        routes.append(out is not None)
        return out

    monkeypatch.setattr(_cca, "_top_singular", top)
    Kp, Kq, _ = _centered_kernels()
    want = _kcca_reference(Kp, Kq, n_components, eps)
    r = want["r_max"] if n_components is None else n_components
    # Precondition: distinct correlations, so the singular vectors are determined.
    assert np.min(-np.diff(want["correlations"][: min(r, 40)])) > 1e-7
    got = _cca.kcca_from_kernels(Kp, Kq, n_components, eps=eps)
    _assert_same_kcca(got, want, min(r, 40))
    assert routes == ([] if n_components in (None, 50) else [True])


def test_kcca_top_route_falls_back_to_the_svd(monkeypatch):
    """sigma_r too small next to sigma_1 for the Gram route: the SVD is used."""
    from tcca_core.baselines import _cca

    Kp, Kq, _ = _centered_kernels(seed=1)
    svd_calls = []
    real_svd = _cca.svd

    def svd(*args, **kwargs):
        svd_calls.append(1)
        return real_svd(*args, **kwargs)

    monkeypatch.setattr(_cca, "svd", svd)
    monkeypatch.setattr(_cca, "_TOP_R_MIN_RATIO", 0.999)
    got = _cca.kcca_from_kernels(Kp, Kq, 5, eps=0.1)
    assert svd_calls
    _assert_same_kcca(got, _kcca_reference(Kp, Kq, 5, 0.1), 5)


def test_kcca_eigendecomposes_each_kernel_once(monkeypatch):
    """Three views, their three pairs and three eps values: three eigh calls (one
    per kernel) instead of eighteen, and the same numbers as without the cache."""
    from tcca_core.baselines import _cca

    Ks = _centered_kernels(n=60, seed=2)
    pairs, grid = view_pairs(3), (1e-2, 0.1, 1.0)

    def fit_all():
        return {
            (p, q, e): KCCA(None, eps=e, kernel="precomputed").fit([Ks[p], Ks[q]])
            for p, q in pairs
            for e in grid
        }

    _cca.clear_kernel_eigen_cache()
    eigh_calls = []
    real_eigh = np.linalg.eigh

    def eigh(*args, **kwargs):
        eigh_calls.append(args[0].shape)
        return real_eigh(*args, **kwargs)

    monkeypatch.setattr(np.linalg, "eigh", eigh)
    cached = fit_all()
    assert len(eigh_calls) == 3
    uncached = {}
    for key in cached:
        _cca.clear_kernel_eigen_cache()
        p, q, e = key
        uncached[key] = KCCA(None, eps=e, kernel="precomputed").fit([Ks[p], Ks[q]])
    for key, est in cached.items():
        for a, b in zip(est.dual_coef_, uncached[key].dual_coef_):
            np.testing.assert_array_equal(a, b)
        np.testing.assert_array_equal(est.correlations_, uncached[key].correlations_)
        want = _kcca_reference(Ks[key[0]], Ks[key[1]], None, key[2])
        for a, b in zip(est.train_variates_, want["train_variates"]):
            r = 20
            assert_allclose(a[:, :r] / np.sqrt(60), b[:, :r], rtol=0, atol=1e-8)


def test_kernel_eigen_cache_is_keyed_by_content_bounded_and_read_only(monkeypatch):
    from tcca_core.baselines import _cca

    Ks = _centered_kernels(n=40, seed=3)
    _cca.clear_kernel_eigen_cache()
    a = _cca.kernel_eigen(Ks[0])
    assert _cca.kernel_eigen(Ks[0].copy()) is a  # same content, same entry
    assert not a.V.flags.writeable and not a.mu.flags.writeable
    K = Ks[0].copy()
    K[0, 1] = K[1, 0] = K[0, 1] + 1e-12  # any change of content: a new entry
    assert _cca.kernel_eigen(K) is not a
    assert _cca.kernel_eigen(Ks[0], cache=False) is not a
    # Bounded: room for two entries only, least recently used dropped first.
    monkeypatch.setattr(_cca, "KERNEL_EIGEN_CACHE_BYTES", 2 * a.nbytes)
    _cca.clear_kernel_eigen_cache()
    e0, e1 = _cca.kernel_eigen(Ks[0]), _cca.kernel_eigen(Ks[1])
    assert _cca.kernel_eigen(Ks[0]) is e0  # e0 now most recently used
    _cca.kernel_eigen(Ks[2])
    assert len(_cca._eigen_cache) == 2
    assert _cca.kernel_eigen(Ks[0]) is e0
    assert _cca.kernel_eigen(Ks[1]) is not e1  # e1 was evicted
    _cca.clear_kernel_eigen_cache()

"""CCA-LS against MAXVAR, Via's LS iteration and two-view CCA (baselines.md 5)."""

import numpy as np
import pytest
import scipy.linalg as sla
from numpy.testing import assert_allclose

from tcca_core.baselines import CCA, CCALS, cca_ls, cca_ls_iterative

pytestmark = pytest.mark.usefixtures("single_blas_thread")


def _centered(views):
    return [X - X.mean(0) for X in views]


def test_maxvar_projector_form_without_regularization(make_views):
    """Kettenring's MAXVAR: z = sum_k X_k h_k is an eigenvector of sum_k P_k (P_k the
    projector onto the span of the centered X_k) with eigenvalue lambda."""
    views, _ = make_views(n=90, dims=(4, 5, 6), seed=4)
    est = CCALS(3, eps=0.0).fit(views)
    Xc = _centered(views)
    P = sum(Q @ Q.T for Q in (np.linalg.qr(X)[0] for X in Xc))
    top = np.linalg.eigvalsh(P)[::-1][:3]
    assert_allclose(est.eigenvalues_, top, atol=1e-10)
    z = sum(X @ H for X, H in zip(Xc, est.projections_))
    assert_allclose(P @ z, z * est.eigenvalues_, atol=1e-9)


def test_matches_generalized_eigenproblem_and_constraints(make_views):
    views, _ = make_views(n=70, dims=(3, 4, 5), seed=1)
    eps, M, N = 0.05, 3, 70
    est = CCALS(3, eps=eps).fit(views)
    Xc = np.hstack(_centered(views))
    R = Xc.T @ Xc / N
    blocks = [slice(0, 3), slice(3, 7), slice(7, 12)]
    D = sla.block_diag(*(R[b, b] for b in blocks))
    H = np.vstack(est.projections_)
    Rt, Dt = R + eps * np.eye(12), D + eps * np.eye(12)
    # R~ h = lambda D~ h for each component; D~-orthogonal with (1/M) h^T D~ h = 1.
    assert_allclose(Rt @ H, Dt @ H * est.eigenvalues_, atol=1e-10)
    assert_allclose(H.T @ Dt @ H / M, np.eye(3), atol=1e-10)
    lam = np.sort(np.linalg.eigvals(np.linalg.solve(Dt, Rt)).real)[::-1][:3]
    assert_allclose(est.eigenvalues_, lam, atol=1e-10)
    assert_allclose(est.correlations_, (lam - 1) / (M - 1), atol=1e-10)


@pytest.mark.parametrize("eps", [1e-2, 0.0])
def test_via_iterative_ls_converges_to_the_same_subspace(make_views, eps):
    views, _ = make_views(n=80, dims=(4, 5, 6), n_latent=3, noise=0.5, seed=2)
    direct = cca_ls(views, 3, eps=eps)
    it = cca_ls_iterative(views, 3, eps=eps, random_state=0, tol=1e-10)
    assert it["converged"]
    Hd, Hi = np.vstack(direct["projections"]), np.vstack(it["projections"])
    assert np.max(sla.subspace_angles(Hd, Hi)) < 1e-6
    assert_allclose(it["eigenvalues"], direct["eigenvalues"], atol=1e-9)


def test_two_views_reduce_to_regularized_cca(make_views):
    views, _ = make_views(n=60, dims=(4, 6), seed=3)
    ls = CCALS(4, eps=0.1).fit(views)
    cc = CCA(4, eps=0.1).fit(views)
    assert_allclose(ls.correlations_, cc.correlations_, atol=1e-10)
    for H, W in zip(ls.projections_, cc.projections_):
        signs = np.sign(np.sum(H * W, axis=0))
        assert_allclose(H, W * signs, atol=1e-8)


def test_nested_and_transform(make_views):
    views, _ = make_views(n=50, dims=(3, 4, 5))
    full, two = CCALS(None).fit(views), CCALS(2).fit(views)
    assert full.r_max_ == 3
    Zf, Z2 = full.transform(views), two.transform(views)
    assert Z2.shape == (50, 6)
    for p in range(3):
        assert_allclose(Zf[:, 3 * p : 3 * p + 2], Z2[:, 2 * p : 2 * p + 2], atol=1e-10)


@pytest.mark.parametrize(
    "case, kw, match",
    [
        ("one", {}, "at least 2 views"),
        ("rows", {}, "same number of samples"),
        ("nan", {}, "NaN"),
        ("ok", {"n_components": 4}, "too large"),
        ("dup", {"eps": 0.0}, "singular"),
    ],
)
def test_rejects_bad_input(make_views, case, kw, match):
    V, _ = make_views(n=30, dims=(3, 4, 5))
    data = {
        "one": V[:1],
        "rows": [V[0], V[1][:-1], V[2]],
        "nan": [V[0], V[1], np.where(V[2] > 1, np.inf, V[2])],
        "ok": V,
        "dup": [np.hstack([V[0], V[0][:, :1]]), V[1], V[2]],
    }[case]
    with pytest.raises(ValueError, match=match):
        CCALS(**{"n_components": 2, **kw}).fit(data)


def test_constant_view_is_named_whatever_its_mean(make_views):
    """A constant view whose mean is not exactly representable (0.1)."""
    V, _ = make_views(n=30, dims=(3, 4, 5))
    for views in (
        [V[0], np.full((30, 2), 0.1), V[2]],
        [V[0], 1e3 + 1e-13 * (np.arange(60).reshape(30, 2) % 3), V[2]],
    ):
        with pytest.raises(ValueError, match="view 1 is constant over the samples"):
            CCALS(None).fit(views)


def test_singular_with_eps_names_the_scale(make_views):
    V, _ = make_views(n=30, dims=(3, 4, 5))
    big = 1e9 * np.hstack([V[1], V[1][:, :1]])
    with pytest.raises(ValueError) as err:
        CCALS(2, eps=0.01).fit([V[0], big, V[2]])
    msg = str(err.value)
    assert "view 1" in msg and "eps = 0.01 is negligible" in msg, msg
    assert "use eps > 0" not in msg, msg

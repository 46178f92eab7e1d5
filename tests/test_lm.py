"""Damped Gauss-Newton (``solver="lm"``) against the mathematics it rests on.

The gradient is checked against finite differences of the objective and the
Gramian product against an explicitly formed Jacobian, both on tensors built
entry by entry here; exact low-rank tensors must be recovered to rounding; the
error never rises; the engines, bursts and the compression give one run's
iterates; and the estimators route and refuse the option.
"""

from __future__ import annotations

import numpy as np
import pytest
from numpy.testing import assert_allclose, assert_array_equal

from tcca_core import KTCCA, TCCA
from tcca_core.solver import engine as engine_mod
from tcca_core.solver.als import cp_als
from tcca_core.solver.engine import MomentEngine
from tcca_core.solver.lm import cp_lm, gradient, gramian_product
from tcca_core.solver.views import WhitenedView


def _full(factors):
    """[[U_1, ..., U_m]] entry by entry: sum_k u_1k o ... o u_mk."""
    m = len(factors)
    letters = "abcdefgh"[:m]
    spec = ",".join(f"{c}z" for c in letters) + "->" + letters
    return np.einsum(spec, *factors)


def _mttkrp(T, factors, p):
    """T_(p) (kr_{q != p} U_q) from its definition: sum over the other indices."""
    m = T.ndim
    letters = "abcdefgh"[:m]
    others = [q for q in range(m) if q != p]
    spec = letters + "".join(f",{letters[q]}z" for q in others) + f"->{letters[p]}z"
    return np.einsum(spec, T, *(factors[q] for q in others))


def _objective(T, factors):
    """f = 1/2 ||T - [[U_1, ..., U_m]]||^2, summed directly."""
    R = T - _full(factors)
    return 0.5 * float(np.vdot(R, R))


def _solve(T, init, **kw):
    """cp_lm on the explicit tensor T."""
    kw = {"max_iter": 500, "tol": 1e-5, **kw}
    return cp_lm(
        lambda F, p: _mttkrp(T, F, p),
        float(np.vdot(T, T)),
        [U.copy() for U in init],
        **kw,
    )


def _planted(rng, dims, r):
    return _full([rng.standard_normal((d, r)) for d in dims])


@pytest.mark.parametrize("dims", [(4, 3, 5), (3, 2, 4, 3)])
def test_the_gradient_is_the_derivative_of_the_objective(rng, dims):
    r = 3
    T = rng.standard_normal(dims)
    factors = [rng.standard_normal((d, r)) for d in dims]
    g = gradient(factors, [_mttkrp(T, factors, p) for p in range(len(dims))])
    h = 1e-6
    for p, U in enumerate(factors):
        numeric = np.zeros_like(U)
        for i, k in np.ndindex(U.shape):
            step = np.zeros_like(U)
            step[i, k] = h
            plus = [V + step if q == p else V for q, V in enumerate(factors)]
            minus = [V - step if q == p else V for q, V in enumerate(factors)]
            numeric[i, k] = (_objective(T, plus) - _objective(T, minus)) / (2 * h)
        assert_allclose(g[p], numeric, rtol=1e-6, atol=1e-6 * np.abs(numeric).max())


def _jacobian(factors):
    """J = d vec([[U_1, ..., U_m]]) / d (vec U_1, ..., vec U_m), column by column.

    The CP tensor is linear in each factor, so the column of entry (i, k) of U_p is
    the CP tensor of the factors with U_p replaced by the unit matrix E_ik.
    """
    columns = []
    for p, U in enumerate(factors):
        for i, k in np.ndindex(U.shape):
            E = np.zeros_like(U)
            E[i, k] = 1.0
            columns.append(_full([E if q == p else V for q, V in enumerate(factors)]))
    return np.stack([c.ravel() for c in columns], axis=1)


@pytest.mark.parametrize("dims", [(3, 4, 2), (2, 3, 2, 3)])
def test_the_gramian_product_is_the_jacobian_s(rng, dims):
    r = 2
    factors = [rng.standard_normal((d, r)) for d in dims]
    X = [rng.standard_normal((d, r)) for d in dims]
    J = _jacobian(factors)
    want = J.T @ J @ np.concatenate([Xp.ravel() for Xp in X])
    got = np.concatenate([Y.ravel() for Y in gramian_product(factors, X)])
    assert_allclose(got, want, rtol=1e-12, atol=1e-12 * np.abs(want).max())


@pytest.mark.parametrize("dims", [(6, 5, 4), (5, 4, 3, 4)])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_an_exact_low_rank_tensor_is_recovered_from_random_starts(dims, seed):
    rng = np.random.default_rng(seed)
    r = 3
    T = _planted(rng, dims, r)
    init = [rng.standard_normal((d, r)) for d in dims]
    res = _solve(T, init)
    assert res.converged
    assert res.errors[-1] < 1e-8
    # the error it reports is the true one
    direct = np.sqrt(2 * _objective(T, res.factors) / np.vdot(T, T))
    assert direct < 1e-8


def test_the_error_never_rises(rng):
    """A hard fit (a random tensor at a high rank): every step lowers the error."""
    dims, r = (8, 7, 6), 12
    T = rng.standard_normal(dims)
    res = _solve(T, [rng.standard_normal((d, r)) for d in dims], max_iter=150, tol=0)
    e = np.array(res.errors)
    assert len(e) == res.n_iter > 50
    assert np.all(np.diff(e) < 0)
    assert res.kept()[3] is None  # the last iterate is the best


def test_gauss_newton_reaches_a_lower_minimum_where_als_stalls():
    """Planted rank 3 from a random start: ALS stays in a swamp, Gauss-Newton not."""
    found = []
    for seed in range(6):
        rng = np.random.default_rng(seed)
        dims, r = (6, 5, 4), 3
        T = _planted(rng, dims, r)
        init = [rng.standard_normal((d, r)) for d in dims]
        lm = _solve(T, init)
        als = cp_als(
            lambda F, p, T=T: _mttkrp(T, F, p),
            float(np.vdot(T, T)),
            [U.copy() for U in init],
            max_iter=500,
            tol=1e-5,
        )
        assert lm.errors[-1] <= als.errors[-1] + 1e-12
        found.append(lm.errors[-1] < 1e-8 <= als.errors[-1])
    assert any(found)


def _views(rng, n=300, dims=(5, 6, 7), eps=1e-2):
    from tcca_core.solver.linalg import column_mean, covariance, inv_sqrt_psd

    z = rng.exponential(size=(n, 2)) - 1.0
    views = [
        z @ rng.standard_normal((2, d)) + 0.5 * rng.standard_normal((n, d))
        for d in dims
    ]
    out = []
    for X in views:
        mu = column_mean(X)
        out.append(WhitenedView(X, mu, inv_sqrt_psd(covariance(X, mu), eps)))
    return out


def _run(engine, init, **kw):
    kw = {"max_iter": 40, "tol": 0.0, **kw}
    return cp_lm(
        engine.mttkrp,
        engine.norm_sq,
        [U.copy() for U in init],
        residual_sq=engine.residual_sq,
        **kw,
    )


def test_dense_and_implicit_engines_give_the_same_iterates(rng):
    """At the planted rank. Past it (r = 4 here) the fit wanders through swamps
    where full Gauss-Newton steps amplify rounding (1e-14 in the start became 1e-8
    in the error within 40 steps, as it does between any two roundings)."""
    views = _views(rng)
    r = 2
    init = [rng.standard_normal((v.d, r)) for v in views]
    dense = _run(MomentEngine(views, "dense"), init, max_iter=15)
    implicit = _run(MomentEngine(views, "implicit"), init, max_iter=15)
    assert dense.n_iter == implicit.n_iter == 15
    assert_allclose(dense.errors, implicit.errors, rtol=1e-10)
    for A, B in zip(dense.factors, implicit.factors, strict=True):
        assert_allclose(A, B, atol=1e-8 * np.abs(B).max())


@pytest.mark.parametrize("algorithm", ["dense", "implicit"])
def test_bursts_give_the_iterates_of_one_run(rng, algorithm):
    views = _views(rng)
    r = 5
    init = [rng.standard_normal((v.d, r)) for v in views]
    one = _run(MomentEngine(views, algorithm), init)
    engine = MomentEngine(views, algorithm)
    res = _run(engine, init, max_iter=7)
    while res.n_iter < 40:
        res = cp_lm(
            engine.mttkrp,
            engine.norm_sq,
            resume=res,
            max_iter=min(res.n_iter + 7, 40),
            tol=0.0,
            residual_sq=engine.residual_sq,
        )
    assert res.n_iter == one.n_iter
    assert_array_equal(res.errors, one.errors)
    for A, B in zip(res.factors, one.factors, strict=True):
        assert_array_equal(A, B)
    for key in ("radius", "mttkrps", "rejected", "products"):
        assert res.state[key] == one.state[key]


def test_a_step_costs_m_mttkrps_and_a_rejected_trial_one(rng):
    views = _views(rng)
    engine = MomentEngine(views, "implicit")
    calls = []

    def counted(factors, p):
        calls.append(p)
        return engine.mttkrp(factors, p)

    init = [rng.standard_normal((v.d, 6)) for v in views]
    res = cp_lm(counted, engine.norm_sq, init, max_iter=30, tol=0.0)
    m = len(views)
    assert len(calls) == res.state["mttkrps"]
    assert len(calls) == m + m * res.n_iter + res.state["rejected"]


def _deficient_views(rng, N=600):
    """Three views whose whitened data have rank 4 of 7, 3 of 6 and 5 (full)."""
    z = rng.exponential(size=(N, 2)) - 1.0
    A = z @ rng.standard_normal((2, 4)) + 0.5 * rng.standard_normal((N, 4))
    B = z @ rng.standard_normal((2, 3)) + 0.5 * rng.standard_normal((N, 3))
    C = z @ rng.standard_normal((2, 5)) + 0.5 * rng.standard_normal((N, 5))
    A = np.hstack([A, A[:, :2] + A[:, 2:], A[:, :1]])
    B = np.hstack([B, B @ rng.standard_normal((3, 3))])
    return [A, B, C]


@pytest.mark.parametrize("algorithm", ["dense", "implicit"])
def test_a_compressed_fit_from_a_start_in_the_bases_is_the_uncompressed_one(
    rng, monkeypatch, algorithm
):
    """The exact HOSVD start of a rank within every mode's lies in the bases."""
    views = _deficient_views(rng)
    kw = dict(
        algorithm=algorithm, solver="lm", init="hosvd", n_init=1, tol=0, max_iter=30
    )
    seen = []
    real = engine_mod.MomentEngine.compressed

    def spy(self):
        out = real(self)
        seen.append(out is not None)
        return out

    monkeypatch.setattr(engine_mod.MomentEngine, "compressed", spy)
    fast = TCCA(2, **kw).fit(views)
    assert seen and seen[0]
    monkeypatch.setattr(engine_mod.MomentEngine, "compressed", lambda self: None)
    slow = TCCA(2, **kw).fit(views)
    # with tol=0 both run on until no step lowers the error, taking steps of
    # rounding size on the way whose count rounding decides
    a, b = fast.reconstruction_errors_, slow.reconstruction_errors_
    n = min(len(a), len(b))
    assert n >= 6 and a[-1] == pytest.approx(b[-1], abs=1e-12)
    assert_allclose(a[:n], b[:n], atol=1e-10)
    assert_allclose(fast.weights_, slow.weights_, rtol=1e-8)


def _planted_views(seed=0, n=2000, dims=(6, 5, 4, 5)):
    rng = np.random.default_rng(seed)
    z = rng.exponential(size=(n, 3)) - 1.0
    return [
        z @ rng.standard_normal((3, d)) + 0.8 * rng.standard_normal((n, d))
        for d in dims
    ]


@pytest.mark.parametrize("m", [3, 4])
def test_tcca_with_gauss_newton_is_no_worse_than_with_als(m):
    views = _planted_views(dims=(6, 5, 4, 5)[:m])
    als = TCCA(3, random_state=0).fit(views)
    lm = TCCA(3, solver="lm", random_state=0).fit(views)
    assert lm.reconstruction_errors_[-1] <= als.reconstruction_errors_[-1] * (1 + 1e-9)
    assert np.all(np.diff(lm.reconstruction_errors_) <= 0)
    assert lm.converged_
    # the same subspace: the correlations agree
    assert_allclose(
        np.sort(lm.correlations_), np.sort(als.correlations_), rtol=1e-4, atol=1e-6
    )


def test_ktcca_runs_gauss_newton():
    views = [X[:200] for X in _planted_views(dims=(6, 5, 4))]
    als = KTCCA(2, eps=1.0, random_state=0).fit(views)
    lm = KTCCA(2, eps=1.0, solver="lm", random_state=0).fit(views)
    assert lm.reconstruction_errors_[-1] <= als.reconstruction_errors_[-1] * (1 + 1e-6)


@pytest.mark.parametrize("cls", [TCCA, KTCCA])
def test_a_bad_solver_is_refused_by_name(cls):
    views = [X[:60] for X in _planted_views(dims=(4, 3, 3))]
    with pytest.raises(ValueError, match=r"^solver must be one of 'als', 'lm', got"):
        cls(2, solver="newton").fit(views)
    with pytest.raises(ValueError, match=r"solver='lm' .* algorithm='tensorly'"):
        cls(2, solver="lm", algorithm="tensorly").fit(views)


def test_the_warning_of_a_short_run_names_gauss_newton():
    from sklearn.exceptions import ConvergenceWarning

    views = _planted_views(dims=(6, 5, 4))
    with pytest.warns(
        ConvergenceWarning, match="Gauss-Newton stopped after max_iter=2"
    ):
        TCCA(3, solver="lm", init="random", n_init=1, max_iter=2, random_state=0).fit(
            views
        )


def test_dask_views_run_gauss_newton():
    pytest.importorskip("dask.array")
    import dask.array as da

    views = _planted_views(n=600, dims=(5, 4, 3))
    kw = dict(solver="lm", init="random", n_init=1, tol=0, max_iter=20, random_state=0)
    ref = TCCA(2, algorithm="implicit", **kw).fit(views)
    est = TCCA(2, **kw).fit([da.from_array(X, chunks=(200, -1)) for X in views])
    assert est.algorithm_ == "dask"
    assert_allclose(est.reconstruction_errors_, ref.reconstruction_errors_, rtol=1e-10)


@pytest.mark.parametrize("algorithm", ["dense", "implicit"])
def test_array_api_views_run_gauss_newton(monkeypatch, algorithm):
    """On a device the MTTKRPs run there and Gauss-Newton's algebra on the host."""
    xps = pytest.importorskip("array_api_strict")
    import sklearn

    monkeypatch.setenv("SCIPY_ARRAY_API", "1")
    views = _planted_views(n=240, dims=(5, 6, 7))
    # steps short of the minimum: at it, rounding decides whether one more lowers
    # the error
    kw = dict(solver="lm", init="random", n_init=1, tol=0, max_iter=8, random_state=0)
    ref = TCCA(2, algorithm=algorithm, **kw).fit(views)
    dev = xps.Device("device1")
    with sklearn.config_context(array_api_dispatch=True):
        est = TCCA(2, algorithm=algorithm, **kw).fit(
            [xps.asarray(X, device=dev) for X in views]
        )
    assert est.n_iter_ == ref.n_iter_
    assert_allclose(est.reconstruction_errors_, ref.reconstruction_errors_, rtol=1e-9)

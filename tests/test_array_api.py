"""TCCA on array-API arrays: array-api-strict (its simulated second device), torch.

Each fit on the device must equal the NumPy fit of the same data (float64: 1e-10),
keep its arrays on the device, and never bring an N-sized array to the host.
"""

from __future__ import annotations

import numpy as np
import pytest
import sklearn
from sklearn.pipeline import make_pipeline

from tcca_core import KTCCA, TCCA, tcca
from tcca_core.compose import ViewSplitter
from tcca_core.solver import xp as _xp

xps = pytest.importorskip("array_api_strict")

N = 240
DIMS = (5, 6, 7)
TOL = 1e-10
#: A fixed number of sweeps. With the stopping rule on, the last digits of the
#: error (which another library's GEMMs round differently) can decide the sweep it
#: fires at, one apart, and a slowly converging component then differs by about
#: tol; the iterates themselves agree to rounding.
FIXED = {"tol": 0.0, "max_iter": 200}
#: float32 fits against float64 ones, relative: the weights and correlations
#: (measured 2e-5 to 7e-5 here), and the variates, whose nearly tied components
#: (weights 0.346 and 0.341) the float32 stopping rule leaves 1e-3 apart
TOL32 = 1e-3
TOL32_VARIATES = 5e-3


def _strict():
    dev = xps.Device("device1")
    return xps, dev, lambda a: xps.asarray(a, device=dev)


def _torch():
    torch = pytest.importorskip("torch")
    return torch, torch.device("cpu"), lambda a: torch.asarray(a)


BACKENDS = [
    pytest.param(_strict, id="array-api-strict"),
    pytest.param(_torch, id="torch", marks=pytest.mark.torch),
]


@pytest.fixture(params=BACKENDS)
def backend(request, monkeypatch):
    """(xp, device, to_device) with scikit-learn's array API dispatch on."""
    monkeypatch.setenv("SCIPY_ARRAY_API", "1")
    xp, dev, move = request.param()
    with sklearn.config_context(array_api_dispatch=True):
        yield xp, dev, move


def _host(a):
    return _xp.to_host(a)


def _views(seed=0, n=N, dims=DIMS):
    rng = np.random.default_rng(seed)
    z = rng.standard_normal((n, 1)) ** 2  # a skewed shared signal
    return [z @ rng.standard_normal((1, d)) + rng.standard_normal((n, d)) for d in dims]


def _one_hot(seed=0, n=N, levels=(6, 6, 6)):
    rng = np.random.default_rng(seed)
    z = rng.integers(0, 3, n)
    out = []
    for k in levels:
        c = np.where(rng.random(n) < 0.8, z, rng.integers(0, k, n))
        out.append(np.eye(k)[c])
    return out


def _same(a, b, tol=TOL):
    a, b = np.asarray(_host(a)), np.asarray(b)
    assert a.shape == b.shape
    scale = max(float(np.abs(b).max(initial=0.0)), 1.0)
    assert float(np.abs(a - b).max(initial=0.0)) <= tol * scale


def _on(dev, *arrays):
    import array_api_compat

    for a in arrays:
        assert not isinstance(a, np.ndarray)
        assert array_api_compat.device(a) == dev


def _check_fit(est, ref, dev, tol=TOL):
    for key in ("means_", "factors_", "projections_"):
        _on(dev, *getattr(est, key))
        for a, b in zip(getattr(est, key), getattr(ref, key), strict=True):
            _same(a, b, tol)
    _on(dev, est.weights_, est.correlations_)
    _same(est.weights_, ref.weights_, tol)
    _same(est.correlations_, ref.correlations_, tol)
    assert est.algorithm_ == ref.algorithm_
    # the start kept is NumPy's, or another that ends at its error to rounding
    # (several starts of a race often reach the same optimum)
    if est.init_ != ref.init_:
        assert min(est.start_errors_) == pytest.approx(
            min(ref.start_errors_), rel=1e-12
        )
    # the stopping rule may fire a sweep apart where the error's last digits decide
    assert abs(est.n_iter_ - ref.n_iter_) <= 1
    assert est.n_features_in_ == ref.n_features_in_


@pytest.mark.parametrize("algorithm", ["dense", "implicit", "auto"])
@pytest.mark.parametrize(
    "kw", [{}, {"init": "random", "n_init": 3}, {"init": "svd", "n_init": 2}]
)
def test_fit_transform_score_equal_numpy(backend, algorithm, kw):
    xp, dev, move = backend
    kw = {**kw, **FIXED}
    views = _views()
    ref = TCCA(3, random_state=0, algorithm=algorithm, **kw).fit(views)
    dviews = [move(v) for v in views]
    est = TCCA(3, random_state=0, algorithm=algorithm, **kw).fit(dviews)
    _check_fit(est, ref, dev)
    Z = est.transform(dviews)
    _on(dev, Z)
    _same(Z, ref.transform(views))
    per = est.transform(dviews, per_view=True)
    _on(dev, *per)
    for a, b in zip(per, ref.transform(views, per_view=True), strict=True):
        _same(a, b)
    Zf = TCCA(3, random_state=0, algorithm=algorithm, **kw).fit_transform(dviews)
    _same(Zf, ref.transform(views))
    assert est.score(dviews) == pytest.approx(ref.score(views), abs=TOL)
    assert list(est.get_feature_names_out()) == list(ref.get_feature_names_out())


@pytest.mark.parametrize("algorithm", ["dense", "implicit"])
def test_stopping_rule_fits_equal_numpy_to_tol(backend, algorithm):
    """With the stopping rule on: the same fit, to within the rule's tol."""
    xp, dev, move = backend
    views = _views()
    ref = TCCA(3, random_state=0, algorithm=algorithm).fit(views)
    est = TCCA(3, random_state=0, algorithm=algorithm).fit([move(v) for v in views])
    _check_fit(est, ref, dev, tol=10 * ref.tol)


def test_one_hot_views_make_the_numpy_choices(backend):
    """Mostly-zero views: the cost model sees them as NumPy does (engine, starts)."""
    xp, dev, move = backend
    views = _one_hot()
    ref = TCCA(2, random_state=1, **FIXED).fit(views)
    est = TCCA(2, random_state=1, **FIXED).fit([move(v) for v in views])
    # two nearly tied components (weights 140.55 and 140.44) turn slowly in their
    # plane for all 200 sweeps, which amplifies rounding: the host builds M from
    # sparse moments, the device from dense rows, and the fits differ by 3e-16
    # of the weights after 10 sweeps, 5e-10 after 50 and 2e-8 after 200
    _check_fit(est, ref, dev, tol=1e-7)


def test_fit_path_and_functions_equal_numpy(backend):
    xp, dev, move = backend
    views = _views(1)
    dviews = [move(v) for v in views]
    refs = TCCA(random_state=0, **FIXED).fit_path(views, [1, 2, 3])
    ests = TCCA(random_state=0, **FIXED).fit_path(dviews, [1, 2, 3])
    for est, ref in zip(ests, refs, strict=True):
        _check_fit(est, ref, dev)
    warm = TCCA(random_state=0, **FIXED).fit_path(dviews, [1, 3], warm_start=True)
    for est, ref in zip(
        warm,
        TCCA(random_state=0, **FIXED).fit_path(views, [1, 3], warm_start=True),
        strict=True,
    ):
        _check_fit(est, ref, dev)
    out = tcca(dviews, 2, random_state=0, **FIXED)
    _on(dev, *out["whiteners"], *out["projections"])
    _same(out["weights"], tcca(views, 2, random_state=0, **FIXED)["weights"])


def test_two_views_equal_numpy(backend):
    """Two views: the exact SVD of M (the regularized CCA), on both paths."""
    xp, dev, move = backend
    views = _views(2, dims=(4, 6))
    for algorithm in ("dense", "implicit"):
        ref = TCCA(3, algorithm=algorithm, **FIXED).fit(views)
        est = TCCA(3, algorithm=algorithm, **FIXED).fit([move(v) for v in views])
        _check_fit(est, ref, dev)


@pytest.mark.parametrize("route", ["blocks", "gram"])
def test_blocked_routes_equal_numpy(backend, monkeypatch, route):
    """M built by several blocks of rows (the last one short), or the N x N Gram
    route of ||M||^2 and the mode Grams where M would not fit."""
    xp, dev, move = backend
    if route == "blocks":
        monkeypatch.setattr(_xp, "_BLOCK_BYTES", 8 * 42 * 37)  # 37 rows of 6 x 7
    else:
        monkeypatch.setattr(_xp, "DENSE_MAX_BYTES", 8)
        monkeypatch.setattr(_xp, "_GRAM_ROWS", 70)  # 240 = 3 x 70 + 30
    views = _views(1)
    ref = TCCA(3, random_state=0, algorithm="implicit", **FIXED).fit(views)
    est = TCCA(3, random_state=0, algorithm="implicit", **FIXED)
    _check_fit(est.fit([move(v) for v in views]), ref, dev)


def test_pipeline_with_view_splitter(backend):
    xp, dev, move = backend
    X = np.hstack(_views(3))
    ref = make_pipeline(ViewSplitter(list(DIMS)), TCCA(2, random_state=0, **FIXED))
    est = make_pipeline(ViewSplitter(list(DIMS)), TCCA(2, random_state=0, **FIXED))
    Z = est.fit_transform(move(X))
    _on(dev, Z)
    _same(Z, ref.fit_transform(X))


def test_no_n_sized_array_leaves_the_device(backend, monkeypatch):
    """Only d x r, d x d and r-sized arrays come to the host; N is larger."""
    xp, dev, move = backend
    moved = []
    real = _xp.to_host

    def spy(a):
        moved.append(tuple(a.shape))
        return real(a)

    monkeypatch.setattr(_xp, "to_host", spy)
    views = [move(v) for v in _views(4)]
    for algorithm in ("dense", "implicit"):
        est = TCCA(3, random_state=0, algorithm=algorithm).fit(views)
        est.transform(views)
        est.score(views)
    assert moved, "the fit moved nothing: the spy is not on the path"
    assert max(max(s, default=0) for s in moved) < N


@pytest.mark.parametrize("seed", [0, 5])
def test_float32_on_request(backend, seed):
    """float32 views fit in float32, within TOL32 of the float64 fit."""
    xp, dev, move = backend
    views = _views(seed)
    ref = TCCA(3, random_state=0).fit(views)
    d32 = [move(v.astype(np.float32)) for v in views]
    est = TCCA(3, random_state=0).fit(d32)
    assert est.weights_.dtype == xp.float32
    assert est.projections_[0].dtype == xp.float32
    Z = est.transform(d32)
    assert Z.dtype == xp.float32
    _same(est.weights_, ref.weights_, TOL32)
    _same(est.correlations_, ref.correlations_, TOL32)
    _same(Z, ref.transform(views), TOL32_VARIATES)


def test_bad_device_input_is_named(backend):
    xp, dev, move = backend
    views = _views(6)
    bad = [v.copy() for v in views]
    bad[1][3, 2] = np.nan
    with pytest.raises(ValueError, match="view 1 contains NaN"):
        TCCA(2).fit([move(v) for v in bad])
    const = [v.copy() for v in views]
    const[2][:] = 1.0
    with pytest.raises(ValueError, match="view 2 is constant"):
        TCCA(2).fit([move(v) for v in const])
    with pytest.raises(ValueError, match="NumPy arrays only"):
        TCCA(2, algorithm="tensorly").fit([move(v) for v in views])
    host = TCCA(2, random_state=0).fit(views)
    with pytest.raises(ValueError, match="another library"):
        host.transform([move(v) for v in views])
    est = TCCA(2, random_state=0).fit([move(v) for v in views])
    with pytest.raises(ValueError, match="features were seen in fit"):
        est.transform([move(v[:, :3]) for v in views])


def test_dispatch_off_converts_to_numpy():
    """Without array_api_dispatch, host-convertible arrays take the NumPy path."""
    views = _views(7)
    cpu = [xps.asarray(v) for v in views]  # array-api-strict's CPU device
    est = TCCA(2, random_state=0).fit(cpu)
    assert isinstance(est.weights_, np.ndarray)
    np.testing.assert_array_equal(
        est.weights_, TCCA(2, random_state=0).fit(views).weights_
    )


#: KTCCA: the whitening's Cholesky factor of K^2 + eps K + jitter is as
#: ill-conditioned as jitter (1e-10) makes it for kernels of rank below N (every
#: centered kernel), so the kernels' own rounding (another library's sums; the
#: array API's general solve where the library has no triangular one) is
#: amplified; measured here: rbf 1e-14, chi2 9e-10, linear 1e-8, l2 2e-8
KTOL = {"rbf": TOL, "chi2": 1e-8, "l2": 1e-7, "linear": 1e-7}


@pytest.mark.parametrize("kernel", ["rbf", "chi2", "l2", "linear"])
@pytest.mark.parametrize("algorithm", ["dense", "implicit"])
def test_ktcca_equal_numpy(backend, kernel, algorithm):
    xp, dev, move = backend
    views = [np.abs(v) for v in _views(9, n=60)]
    # one start: on these small kernels several starts of the race end at the
    # same error to 1e-15, and which of them is kept is then up to rounding
    kw = {
        "kernel": kernel,
        "random_state": 0,
        "algorithm": algorithm,
        "n_init": 1,
        **FIXED,
    }
    ref = KTCCA(2, **kw).fit(views)
    dviews = [move(v) for v in views]
    est = KTCCA(2, **kw).fit(dviews)
    tol = KTOL[kernel]
    _on(dev, *est.factors_, *est.dual_coef_, est.weights_, est.correlations_)
    for a, b in zip(est.factors_, ref.factors_, strict=True):
        _same(a, b, tol)
    _same(est.weights_, ref.weights_, tol)
    _same(est.correlations_, ref.correlations_, tol)
    assert (est.algorithm_, est.init_) == (ref.algorithm_, ref.init_)
    Z = est.transform(dviews)
    _on(dev, Z)
    _same(Z, ref.transform(views), tol)
    new = [move(v[:7]) for v in views]
    _same(est.transform(new), ref.transform([v[:7] for v in views]), tol)
    _same(KTCCA(2, **kw).fit_transform(dviews), ref.transform(views), tol)
    assert est.score(dviews) == pytest.approx(ref.score(views), abs=tol)
    paths = KTCCA(**kw).fit_path(dviews, [1, 2])
    for e, r in zip(paths, KTCCA(**kw).fit_path(views, [1, 2]), strict=True):
        _same(e.weights_, r.weights_, tol)


def test_ktcca_rbf_scale_width_equals_numpy(backend):
    """gamma="scale" (1 / (n_features * X.var())) is the same width on the device."""
    xp, dev, move = backend
    views = [5.0 * v for v in _views(11, n=60)]
    kw = {
        "kernel": "rbf",
        "kernel_params": {"gamma": "scale"},
        "random_state": 0,
        "n_init": 1,
        **FIXED,
    }
    ref = KTCCA(2, **kw).fit(views)
    est = KTCCA(2, **kw).fit([move(v) for v in views])
    _on(dev, est.correlations_)
    _same(est.correlations_, ref.correlations_, KTOL["rbf"])
    _same(est.transform([move(v) for v in views]), ref.transform(views), KTOL["rbf"])


def test_ktcca_precomputed_and_errors(backend):
    xp, dev, move = backend
    views = _views(10, n=50)
    Ks = [np.exp(-((v[:, None, :] - v[None, :, :]) ** 2).sum(2) / 20) for v in views]
    kw = {"kernel": "precomputed", "random_state": 0, **FIXED}
    ref = KTCCA(2, **kw).fit(Ks)
    est = KTCCA(2, **kw).fit([move(K) for K in Ks])
    _same(est.transform([move(K) for K in Ks]), ref.transform(Ks))
    bad = [K.copy() for K in Ks]
    bad[1][0, 3] += 1.0
    with pytest.raises(ValueError, match="view 1 is not symmetric"):
        KTCCA(2, **kw).fit([move(K) for K in bad])
    with pytest.raises(ValueError, match="non-negative"):
        KTCCA(2, kernel="chi2").fit([move(v) for v in views])


def test_cost_model_is_the_numpy_engines(backend):
    """The device engines cost what NumPy's do (so "auto" picks the same starts);
    the Dask engine keeps the tensor-free costs."""
    from tcca_core.solver.engine import MomentEngine
    from tcca_core.solver.views import WhitenedView

    xp, dev, move = backend
    views = _views(11)
    source = _xp.DeviceSource(xp, dev)
    dviews = [move(v) for v in views]
    eye = [np.eye(v.shape[1]) for v in views]
    means = [xp.mean(X, axis=0) for X in dviews]
    for name in ("dense", "implicit"):
        host = MomentEngine(
            [WhitenedView(v, v.mean(axis=0), W) for v, W in zip(views, eye)], name
        )
        device = source.engine(dviews, means, eye, 3, name)
        assert device.name == name
        assert device.sweep_cost(3) == host.sweep_cost(3)
        assert device.init_cost() == host.init_cost()
        assert device.auto_n_init(3) == host.auto_n_init(3)
    da = pytest.importorskip("dask.array")
    from tcca_core.solver import dask as _dask

    lazy = [da.from_array(v, chunks=60) for v in views]
    engine = _dask.engine(lazy, [v.mean(axis=0) for v in views], eye, 3, "auto")
    assert engine.sweep_cost(3) == 4.0 * N * 3 * sum(DIMS)  # tensor-free

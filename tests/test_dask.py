"""TCCA on Dask arrays: the Dask fit equals the in-memory fit.

Every test runs on a ``distributed.LocalCluster`` of two worker processes (module
scope), so the tasks really are pickled, shipped and reduced across processes.
The contract: same data, same start, same seed -> weights, projections,
correlations and transforms equal to 1e-10 (relative), for m = 2, 3, 4, dense and
sparse chunks; the views are never gathered and KTCCA refuses Dask input.
The heavier cases (restarts, m = 4 with the randomized start, sparse chunks, rank
paths, large means) are marked ``slow``: run them with ``pytest -m slow
tests/test_dask.py``.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp

da = pytest.importorskip("dask.array")
distributed = pytest.importorskip("distributed")

from tcca_core import KTCCA, TCCA, tcca_path  # noqa: E402
from tcca_core.solver.engine import MomentEngine  # noqa: E402
from tcca_core.solver.implicit import ImplicitMoment  # noqa: E402
from tcca_core.solver.views import WhitenedView  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
RTOL = 1e-10


@pytest.fixture(scope="module")
def client():
    cluster = distributed.LocalCluster(
        n_workers=2,
        threads_per_worker=1,
        processes=True,
        dashboard_address=None,
        silence_logs=40,
    )
    with distributed.Client(cluster) as c:
        yield c
    cluster.close()


def planted(n=2000, dims=(5, 6, 7), seed=0, mean=0.0):
    rng = np.random.default_rng(seed)
    z = rng.standard_normal((n, 2))
    return [
        mean + z @ rng.standard_normal((2, d)) + rng.standard_normal((n, d))
        for d in dims
    ]


def to_dask(views, chunks=500):
    # persisted: in the workers' memory, as data loaded once for many passes would
    # be (a from_array graph would ship the NumPy array with every pass)
    return [da.from_array(X, chunks=(chunks, -1)).persist() for X in views]


def rel(a, b) -> float:
    a, b = np.asarray(a), np.asarray(b)
    return float(np.max(np.abs(a - b)) / max(np.max(np.abs(b)), 1e-300))


def assert_same_fit(a, b):
    assert rel(a.weights_, b.weights_) < RTOL
    assert rel(a.correlations_, b.correlations_) < RTOL
    for P, Q in zip(a.projections_, b.projections_):
        assert rel(P, Q) < RTOL
    for m1, m2 in zip(a.means_, b.means_):
        assert np.allclose(m1, m2, rtol=RTOL, atol=1e-13)


# sweeps run to max_iter (tol=0): the iterates themselves are compared
SOLVER = dict(max_iter=4, tol=0.0, random_state=0, n_init=1)


@pytest.mark.parametrize(
    "dims, init, n_init",
    [
        ((5, 6), "auto", 1),  # two views: the exact SVD route
        ((5, 6, 7), "hosvd", 1),
        # randomized starts and their race
        pytest.param((5, 6, 7), "svd", 3, marks=pytest.mark.slow),
        ((3, 4, 5, 3), "hosvd", 1),
        pytest.param((3, 4, 5, 3), "svd", 1, marks=pytest.mark.slow),
    ],
)
def test_dask_fit_equals_in_memory(client, dims, init, n_init):
    views = planted(dims=dims)
    kw = {**SOLVER, "n_components": 2, "init": init, "n_init": n_init}
    ref = TCCA(algorithm="implicit", **kw).fit(views)
    got = TCCA(**kw).fit(to_dask(views))
    assert got.algorithm_ == "dask"
    assert got.n_iter_ == ref.n_iter_ and got.init_ == ref.init_
    assert isinstance(got.weights_, np.ndarray)
    assert_same_fit(got, ref)
    # transform of Dask views is a lazy Dask array with the in-memory values
    Z = got.transform(to_dask(views))
    assert isinstance(Z, da.Array)
    assert rel(Z.compute(), ref.transform(views)) < RTOL
    per = got.transform(to_dask(views), per_view=True)
    assert [type(z) for z in per] == [da.Array] * len(dims)


@pytest.mark.slow
def test_large_mean_and_uneven_chunks(client):
    # a mean 1e3 times the spread: the covariance is merged from centered chunks
    # (Chan et al.), so it matches the in-memory two-pass covariance to rounding,
    # where X^T X / N - mean mean^T would lose six digits
    from tcca_core.solver.dask import as_dask_views, view_statistics
    from tcca_core.solver.linalg import covariance

    views = planted(n=1500, mean=1e3, seed=3)
    dv = [da.from_array(X, chunks=((100, 700, 1, 699), -1)) for X in views]
    for X, (mu, C, _) in zip(views, view_statistics(as_dask_views(dv), True)):
        assert rel(mu, X.mean(axis=0)) < 1e-14
        assert rel(C, covariance(X, X.mean(axis=0))) < 1e-13
    kw = dict(n_components=2, init="hosvd", **SOLVER)
    ref = TCCA(algorithm="implicit", **kw).fit(views)
    got = TCCA(**kw).fit(dv)
    # the means themselves differ in their last bits (1e-15 relative of 1e3, i.e.
    # 1e-12 of the centered data), which six sweeps amplify to ~1e-10
    assert rel(got.weights_, ref.weights_) < 1e-9
    for P, Q in zip(got.projections_, ref.projections_):
        assert rel(P, Q) < 1e-9


@pytest.mark.slow
def test_uncentered(client):
    views = planted(n=1500, mean=0.5, seed=3)
    kw = dict(n_components=2, init="hosvd", center=False, **SOLVER)
    ref = TCCA(algorithm="implicit", **kw).fit(views)
    assert_same_fit(TCCA(**kw).fit(to_dask(views)), ref)


@pytest.mark.slow
def test_sparse_chunks(client):
    views = planted(dims=(6, 5, 4), seed=1)
    X0 = np.where(views[0] > 0.8, views[0], 0.0)
    views = [X0, *views[1:]]
    dv = to_dask(views)
    dv[0] = dv[0].map_blocks(sp.csr_matrix, dtype=float)
    kw = dict(n_components=2, init="hosvd", **SOLVER)
    ref = TCCA(algorithm="implicit", **kw).fit([sp.csr_matrix(X0), *views[1:]])
    assert_same_fit(TCCA(**kw).fit(dv), ref)


@pytest.mark.slow
def test_fit_path_shares_the_engine(client):
    views = planted(seed=2)
    kw = dict(init="hosvd", **SOLVER)
    ref = tcca_path(views, [1, 3], algorithm="implicit", **kw)
    got = TCCA(**kw).fit_path(to_dask(views), [1, 3])
    for est, r in zip(got, ref):
        assert est.n_components == len(r["weights"])
        assert rel(est.weights_, r["weights"]) < RTOL
        for P, Q in zip(est.projections_, r["projections"]):
            assert rel(P, Q) < RTOL
    # the dict has the in-memory keys
    out = tcca_path(to_dask(views), [2], **kw)[0]
    assert set(out) == set(tcca_path(views, [2], algorithm="implicit", **kw)[0])


def test_norm_grams_and_residual_match_in_memory(client):
    from tcca_core.solver.dask import DaskEngine, DaskView

    views = planted(n=900, dims=(4, 5, 3), seed=4)
    rng = np.random.default_rng(0)
    Ws = [rng.standard_normal((d, d)) for d in (4, 5, 3)]
    means = [X.mean(axis=0) for X in views]
    mem = MomentEngine(
        [WhitenedView(X, mu, W) for X, mu, W in zip(views, means, Ws)], "implicit"
    )
    dv = to_dask(views, chunks=250)
    eng = DaskEngine([DaskView(X, mu, W) for X, mu, W in zip(dv, means, Ws)])
    op = ImplicitMoment(mem.views)
    for method in ("gram", "unfolding"):
        assert rel(eng._op.norm_sq(method), op.norm_sq(method)) < RTOL
    for A, B in zip(eng.mode_grams(), mem.mode_grams()):
        assert rel(A, B) < RTOL
    U = [rng.standard_normal((d, 2)) for d in (4, 5, 3)]
    assert rel(eng.residual_sq(U), mem.residual_sq(U)) < RTOL
    for p in range(3):
        assert rel(eng.mttkrp(U, p), mem.mttkrp(U, p)) < RTOL
    assert rel(eng.correlations(U), mem.correlations(U)) < RTOL
    with pytest.raises(RuntimeError, match="dense tensor"):
        eng.M  # noqa: B018


def test_chunks_read_inside_the_task(client, tmp_path):
    # views read from a store (here Zarr) are read by the task that uses chunk k
    # of every view (no read tasks scattered over the workers); persisted views
    # are the tasks' dependencies. Both give the in-memory fit.
    zarr = pytest.importorskip("zarr")  # noqa: F841
    from tcca_core.solver.dask import DaskMoment, DaskView

    views = planted(n=1200, seed=5)
    for p, X in enumerate(views):
        da.from_array(X, chunks=(300, -1)).to_zarr(str(tmp_path / f"v{p}.zarr"))
    stored = [da.from_zarr(str(tmp_path / f"v{p}.zarr")) for p in range(3)]
    one = lambda dv: DaskMoment(  # noqa: E731
        [DaskView(X, np.zeros(X.shape[1]), np.eye(X.shape[1])) for X in dv]
    )
    assert one(stored)._inline is not None
    assert one(to_dask(views, chunks=300))._inline is None
    kw = dict(n_components=2, init="hosvd", **SOLVER)
    ref = TCCA(algorithm="implicit", **kw).fit(views)
    assert_same_fit(TCCA(**kw).fit(stored), ref)


def test_mismatched_row_chunks_name_the_view_and_the_fix(client):
    views = planted(n=600)
    dv = [
        da.from_array(views[0], chunks=(200, -1)),
        da.from_array(views[1], chunks=(200, -1)),
        da.from_array(views[2], chunks=(300, -1)),
    ]
    with pytest.raises(ValueError, match=r"view 2's row chunks differ.*rechunk"):
        TCCA(2).fit(dv)
    # the suggested fix works
    dv[2] = dv[2].rechunk({0: dv[0].chunks[0]})
    TCCA(2, init="hosvd", **SOLVER).fit(dv)


def test_bad_dask_input(client):
    views = planted(n=600)
    dv = to_dask(views, chunks=200)
    with pytest.raises(ValueError, match="same number of samples"):
        TCCA(2).fit([dv[0], dv[1][:500], dv[2]])
    X = views[0].copy()
    X[5, 2] = np.nan
    with pytest.raises(ValueError, match="view 0 contains NaN or infinity"):
        TCCA(2).fit([da.from_array(X, chunks=(200, -1)).persist(), dv[1], dv[2]])
    const = da.ones((600, 3), chunks=(200, -1))
    with pytest.raises(ValueError, match="view 1 is constant"):
        TCCA(2).fit([dv[0], const, dv[2]])
    unknown = dv[0][dv[0][:, 0] > -100]
    with pytest.raises(ValueError, match="compute_chunk_sizes"):
        TCCA(2).fit([unknown, dv[1], dv[2]])
    with pytest.raises(ValueError, match="algorithm='dense'.*dense moment tensor"):
        TCCA(2, algorithm="dense").fit(dv)
    est = TCCA(2, init="hosvd", **SOLVER).fit(dv)
    with pytest.raises(ValueError, match="view 1 has 4 features"):
        est.transform([dv[0], dv[1][:, :4], dv[2]])


def test_transform_is_lazy(client):
    views = planted(n=600)
    est = TCCA(2, init="hosvd", **SOLVER).fit(to_dask(views, chunks=200))

    def boom(block):
        raise RuntimeError("computed")

    lazy = [X.map_blocks(boom, dtype=float) for X in to_dask(views, chunks=200)]
    Z = est.transform(lazy)  # builds a graph, runs nothing
    assert isinstance(Z, da.Array) and Z.shape == (600, 6)
    with pytest.raises(RuntimeError, match="computed"):
        Z.compute()


@pytest.mark.parametrize("scale, eps", [(1e-8, 1e-2), (1.0, 1e12)])
def test_an_eps_that_swamps_the_covariance_is_named_on_dask(client, scale, eps):
    """On Dask views too, an eps far above the variances is named, and by how
    much (the rank path of Dask views is the in-memory one)."""
    views = [scale * X for X in planted(n=1000)]
    top = min(np.linalg.eigvalsh(np.cov(X.T, bias=True))[-1] for X in views)
    with pytest.warns(UserWarning, match="swamps the data's covariance") as caught:
        TCCA(2, eps=eps, random_state=0).fit(to_dask(views))
    said = [str(w.message) for w in caught if "swamps" in str(w.message)]
    assert f"{eps / top:.2g} times the largest variance" in " ".join(said)
    with pytest.warns(UserWarning, match="swamps") as in_memory:
        TCCA(2, eps=eps, random_state=0, algorithm="implicit").fit(views)
    assert said == [str(w.message) for w in in_memory if "swamps" in str(w.message)]


def test_ktcca_refuses_dask_views(client):
    dv = to_dask(planted(n=600), chunks=200)
    with pytest.raises(ValueError, match=r"N x N kernel.*TCCA"):
        KTCCA(2).fit(dv)


def test_tcca_core_does_not_import_dask():
    code = (
        "import sys, numpy as np\n"
        "from tcca_core import TCCA\n"
        "import tcca_core._tcca, tcca_core._ktcca, tcca_core.solver.implicit\n"
        "rng = np.random.default_rng(0)\n"
        "TCCA(1).fit([rng.standard_normal((50, d)) for d in (2, 3, 4)])\n"
        "assert not [m for m in sys.modules if m.split('.')[0] in "
        "('dask', 'distributed', 'zarr')], 'dask imported'\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, cwd=ROOT)


def test_example_runs(tmp_path):
    pytest.importorskip("zarr")
    out = subprocess.run(
        [
            sys.executable,
            str(ROOT / "examples" / "dask_zarr.py"),
            "--rows",
            "3000",
            "--features",
            "6",
            "--max-iter",
            "5",
            "--store",
            str(tmp_path / "views.zarr"),
        ],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=300,
    )
    assert out.returncode == 0, out.stderr[-3000:]
    assert "correlations" in out.stdout

"""Dask views read consistently: data that change under a fit fail it, by name.

A Zarr store rewritten, or its chunks deleted, between two passes of a fit (from a
Dask callback run when a pass ends, or from a thread), a NumPy array behind a view
changed in place, NaN rows in any pass or at ``transform``: each fails with
:class:`InputChangedError` or :class:`NonFiniteInputError` naming the view and the
chunk, never a fit of mixed data (correlations above 1, or zeros). A clean fit of
the same data is unchanged by the checks (it equals the in-memory fit), and chunks
too small for a task each warn.
"""

from __future__ import annotations

import shutil
import threading
import warnings

import numpy as np
import pytest

da = pytest.importorskip("dask.array")
dask = pytest.importorskip("dask")
zarr = pytest.importorskip("zarr")

from dask.array.core import PerformanceWarning  # noqa: E402
from dask.callbacks import Callback  # noqa: E402

from tcca_core import TCCA  # noqa: E402
from tcca_core.solver.dask_reads import (  # noqa: E402
    ChunkReads,
    InputChangedError,
    NonFiniteInputError,
    check_correlations,
    fingerprint,
    merge,
    verified,
)

KW = dict(n_components=2, init="hosvd", max_iter=6, tol=0.0, random_state=0, n_init=1)
pytestmark = pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")


@pytest.fixture(autouse=True)
def threads():
    with dask.config.set(scheduler="threads"):
        yield


def planted(n=1200, dims=(5, 6, 4), seed=0):
    rng = np.random.default_rng(seed)
    z = rng.standard_normal((n, 2))
    return [
        z @ rng.standard_normal((2, d)) + 0.5 * rng.standard_normal((n, d))
        for d in dims
    ]


def stored(tmp_path, views, chunks=300):
    """The views written to Zarr stores, and the Dask arrays reading them."""
    paths = []
    for p, X in enumerate(views):
        path = tmp_path / f"v{p}.zarr"
        da.from_array(X, chunks=(chunks, -1)).to_zarr(str(path))
        paths.append(path)
    return paths, [da.from_zarr(str(path)) for path in paths]


class AfterPass(Callback):
    """Run ``action`` once, when the ``n``-th compute (pass) of the fit ends."""

    def __init__(self, n, action):
        super().__init__()
        self.n, self.action, self.seen = n, action, 0

    def _finish(self, dsk, state, errored):
        self.seen += 1
        if self.seen == self.n:
            self.action()


def test_a_clean_fit_is_checked_and_equals_the_in_memory_fit(tmp_path):
    views = planted()
    _, dv = stored(tmp_path, views)
    got = TCCA(**KW).fit(dv)
    ref = TCCA(algorithm="implicit", **KW).fit(views)
    np.testing.assert_allclose(got.correlations_, ref.correlations_, rtol=1e-10)
    np.testing.assert_allclose(got.weights_, ref.weights_, rtol=1e-10)


@pytest.mark.parametrize("after", [1, 3])
def test_a_zarr_store_rewritten_between_passes_fails_the_fit(tmp_path, after):
    views = planted()
    paths, dv = stored(tmp_path, views)
    other = planted(seed=7)

    def rewrite():
        for path, X in zip(paths, other, strict=True):
            zarr.open_array(str(path), mode="r+")[:] = X

    with AfterPass(after, rewrite), pytest.raises(InputChangedError) as err:
        TCCA(**KW).fit(dv)
    assert "row chunk" in str(err.value) and "changed during the fit" in str(err.value)


def test_deleted_chunks_read_as_zeros_fail_the_fit(tmp_path):
    views = planted()
    paths, dv = stored(tmp_path, views)

    def delete():
        chunk_dirs = [p for p in paths[1].iterdir() if p.is_dir()]
        assert chunk_dirs, "no chunk folder to delete"
        for d in chunk_dirs:
            shutil.rmtree(d)

    assert float(abs(da.from_zarr(str(paths[1]))).sum().compute()) > 0
    with AfterPass(1, delete), pytest.raises(InputChangedError, match="view 1"):
        TCCA(**KW).fit(dv)
    # Zarr serves the missing chunks as zeros, without an error: what the check is for
    assert float(abs(da.from_zarr(str(paths[1]))).sum().compute()) == 0


def test_a_store_rewritten_from_a_thread_never_gives_mixed_results(tmp_path):
    """A writer thread rewrites one store while fits run: each fit either ends
    with the correlations of one data set or fails by name."""
    views = planted()
    paths, dv = stored(tmp_path, views)
    other = planted(seed=7)
    stop = threading.Event()

    def writer():
        z = zarr.open_array(str(paths[0]), mode="r+")
        i = 0
        while not stop.is_set():
            z[:] = other[0] if i % 2 == 0 else views[0]
            i += 1

    refs = [
        TCCA(algorithm="implicit", **KW).fit(v).correlations_
        for v in (views, [other[0], views[1], views[2]])
    ]
    thread = threading.Thread(target=writer, daemon=True)
    thread.start()
    outcomes = []
    try:
        for _ in range(4):
            try:
                rho = TCCA(**KW).fit(dv).correlations_
            except InputChangedError:
                outcomes.append("refused")
            else:
                assert any(np.allclose(rho, r, rtol=1e-8) for r in refs), rho
                outcomes.append("consistent")
    finally:
        stop.set()
        thread.join()
    assert "refused" in outcomes, outcomes


class Mutable:
    """An array-like that reads a NumPy array when a chunk is asked for, and that
    Dask takes for a large one (so that its chunks are task dependencies, not read
    inside the tasks: the other route of a pass)."""

    def __init__(self, a):
        self.a, self.shape, self.dtype, self.ndim = a, a.shape, a.dtype, a.ndim

    def __getitem__(self, key):
        return self.a[key]

    def __sizeof__(self):
        return 4 << 20


def test_an_array_changed_between_passes_fails_the_fit_by_either_route():
    from tcca_core.solver.dask import DaskMoment, DaskView

    views = planted()
    dv = [da.from_array(Mutable(X), chunks=(300, -1)) for X in views]
    eye = [DaskView(X, np.zeros(X.shape[1]), np.eye(X.shape[1])) for X in dv]
    assert DaskMoment(eye)._inline is None  # the blockwise route

    def change():
        views[0][700, :] += 1.0

    with (
        AfterPass(2, change),
        pytest.raises(InputChangedError, match="view 0, row chunk 2"),
    ):
        TCCA(**KW).fit(dv)


def test_nan_rows_fail_by_name_in_the_first_pass(tmp_path):
    views = planted()
    views[2][600:605] = np.nan
    _, dv = stored(tmp_path, views)
    with pytest.raises(NonFiniteInputError, match="view 2 contains NaN or infinity"):
        TCCA(**KW).fit(dv)


def test_nan_rows_written_during_the_fit_fail_by_name(tmp_path):
    views = planted()
    paths, dv = stored(tmp_path, views)

    def poison():
        zarr.open_array(str(paths[1]), mode="r+")[900:910] = np.nan

    with AfterPass(2, poison), pytest.raises(NonFiniteInputError, match="view 1"):
        TCCA(**KW).fit(dv)


def test_nan_at_transform_fails_by_name(tmp_path):
    views = planted()
    _, dv = stored(tmp_path, views)
    est = TCCA(**KW).fit(dv)
    bad = [X.copy() for X in views]
    bad[0][10] = np.inf
    Z = est.transform([da.from_array(X, chunks=(300, -1)) for X in bad])
    with pytest.raises(NonFiniteInputError, match="view 0 contains NaN or infinity"):
        Z.compute()
    clean = est.transform([da.from_array(X, chunks=(300, -1)) for X in views])
    assert np.isfinite(clean.compute()).all()


def test_two_view_correlations_outside_minus_one_one_raise():
    assert check_correlations(np.array([0.9, -1.0]), 2).tolist() == [0.9, -1.0]
    with pytest.raises(InputChangedError, match=r"outside \[-1, 1\]"):
        check_correlations(np.array([1.18, 0.5]), 2)
    # three views: the correlations are third moments, which 1 does not bound
    assert check_correlations(np.array([1.18]), 3).tolist() == [1.18]
    with pytest.raises(NonFiniteInputError):
        check_correlations(np.array([np.nan]), 3)


def test_fingerprints_compare_chunk_by_chunk():
    rng = np.random.default_rng(0)
    blocks = [rng.standard_normal((4, 3)) for _ in range(3)]
    reads = ChunkReads(1, 3)
    reads.record([[fingerprint(b) for b in blocks]])
    f = reads.wrap(lambda X: X.sum(), 1)
    total = merge(*(f(k, b) for k, b in enumerate(blocks)))
    assert verified(total, reads.reference, "a pass") == sum(b.sum() for b in blocks)
    changed = [b.copy() for b in blocks]
    changed[1][2, 0] += 1e-6
    total = merge(*(f(k, b) for k, b in enumerate(changed)))
    with pytest.raises(InputChangedError, match="view 0, row chunk 1"):
        verified(total, reads.reference, "a pass")
    with pytest.raises(InputChangedError, match="did not read every row chunk"):
        verified(merge(f(0, blocks[0]), f(2, blocks[2])), reads.reference, "a pass")


def test_one_row_chunks_warn():
    views = planted(n=120)
    with pytest.warns(PerformanceWarning, match="rechunk"):
        TCCA(**KW).fit([da.from_array(X, chunks=(1, -1)) for X in views])
    with warnings.catch_warnings():
        warnings.simplefilter("error", PerformanceWarning)
        TCCA(**KW).fit([da.from_array(X, chunks=(200, -1)) for X in planted(n=600)])

"""FitCache: run_method's fits shared through a folder (between processes, settings)."""

import numpy as np
import pandas as pd
import pytest

import tcca_core.fit_cache as fit_cache
from tcca_core.fit_cache import FitCache
from tcca_core.protocol import make_splits, run_method

COLS = ["val_acc", "test_acc", "r", "k", "params"]


@pytest.fixture
def data():
    rng = np.random.default_rng(0)
    z = rng.standard_normal((90, 2))
    views = [
        z @ rng.standard_normal((2, d)) + 0.3 * rng.standard_normal((90, d))
        for d in (5, 6, 4)
    ]
    y = (z[:, 0] > 0).astype(int) + 2 * (z[:, 1] > 0)
    return views, y, make_splits(y, n_labeled=20, n_splits=2, seed=1)


@pytest.mark.parametrize(
    "method, params",
    [
        ("tcca", {"eps": [1e-2], "max_iter": 30, "tol": 1e-4}),
        ("ssmvd", {"lambda1": [0.0, 0.1], "lambda2": [0.1]}),
    ],
)
def test_second_process_reuses_the_folder(data, method, params, tmp_path, fit_calls):
    """A new FitCache on the same folder (another job, e.g. another labeled size of
    the same rows) computes nothing and gives the uncached accuracies exactly."""
    views, y, splits = data
    kw = dict(r_grid=[2, 3], params=params, seed=3)
    plain = [run_method(views, y, s, method, **kw) for s in splits]
    calls = fit_calls
    calls.clear()  # count from here on
    first = FitCache(tmp_path / "fits")
    a = [run_method(views, y, s, method, cache=first, **kw) for s in splits]
    n_fits = len(calls)
    assert n_fits > 0 and first.misses == n_fits
    assert len(list((tmp_path / "fits").glob("*.pkl"))) == n_fits
    second = FitCache(tmp_path / "fits")
    b = [run_method(views, y, s, method, cache=second, **kw) for s in splits]
    assert len(calls) == n_fits and second.misses == 0 and second.hits > 0
    for p, x, z in zip(plain, a, b, strict=True):
        pd.testing.assert_frame_equal(p[COLS], x[COLS])
        pd.testing.assert_frame_equal(p[COLS], z[COLS])
    # Other data (one value changed): refitted, not read.
    changed = [views[0].copy(), *views[1:]]
    changed[0][0, 0] += 1.0
    run_method(changed, y, splits[0], method, cache=second, **kw)
    assert len(calls) > n_fits


def test_changed_code_never_reads_old_entries(data, tmp_path, monkeypatch):
    views, y, splits = data
    kw = dict(r_grid=[2], params={"eps": [1e-2], "max_iter": 20}, seed=3)
    run_method(views, y, splits[0], "tcca", cache=FitCache(tmp_path), **kw)
    monkeypatch.setattr(fit_cache, "code_digest", lambda: "another implementation")
    cache = FitCache(tmp_path)
    run_method(views, y, splits[0], "tcca", cache=cache, **kw)
    assert cache.hits == 0 and cache.misses == 1


def test_unreadable_entry_is_refitted(data, tmp_path, caplog):
    views, y, splits = data
    kw = dict(r_grid=[2], params={"eps": [1e-2], "max_iter": 20}, seed=3)
    expected = run_method(views, y, splits[0], "tcca", cache=FitCache(tmp_path), **kw)
    (entry,) = tmp_path.glob("*.pkl")
    entry.write_bytes(entry.read_bytes()[:20])  # a truncated file
    cache = FitCache(tmp_path)
    got = run_method(views, y, splits[0], "tcca", cache=cache, **kw)
    assert "unreadable" in caplog.text
    assert cache.hits == 0 and cache.misses == 1
    pd.testing.assert_frame_equal(expected[COLS], got[COLS])
    assert not list(tmp_path.glob(".part-*"))  # no temporary file left behind


def test_code_digest_covers_the_package_source():
    digest = fit_cache.code_digest()
    assert len(digest) == 64 and digest == fit_cache.code_digest()


class _Payload:
    """Unpickling this runs ``open(marker, "w")``: a stand-in for os.system."""

    def __init__(self, marker):
        self.marker = str(marker)

    def __reduce__(self):
        return (open, (self.marker, "w"))


def test_foreign_entry_is_refused_not_run(data, tmp_path, caplog):
    """An entry naming a global outside the allowed packages is never executed:
    it is reported unreadable and the fit is recomputed."""
    import pickle

    views, y, splits = data
    kw = dict(r_grid=[2], params={"eps": [1e-2], "max_iter": 20}, seed=3)
    expected = run_method(views, y, splits[0], "tcca", cache=FitCache(tmp_path), **kw)
    (entry,) = tmp_path.glob("*.pkl")
    marker = tmp_path / "pwned"
    entry.write_bytes(pickle.dumps(_Payload(marker)))
    cache = FitCache(tmp_path)
    got = run_method(views, y, splits[0], "tcca", cache=cache, **kw)
    assert not marker.exists()
    assert "refusing to load global io.open" in caplog.text
    assert cache.hits == 0 and cache.misses == 1
    pd.testing.assert_frame_equal(expected[COLS], got[COLS])
    # control: the payload is live; plain unpickling would have run it
    bad = tmp_path / "bad.pickle"
    bad.write_bytes(pickle.dumps(_Payload(marker)))
    with open(bad, "rb") as fh:
        pickle.Unpickler(fh).load()
    assert marker.exists()

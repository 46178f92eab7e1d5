"""FitCache: run_method's fits shared through a folder (between processes, settings).

Entries hold data only: every value the protocol caches comes back
bitwise identical, and a crafted cache folder (pickles, copied entries, FIFOs,
foreign class names, compressed members) runs nothing, writes nothing and is
refitted.
"""

import errno
import io
import json
import os
import pickle
import signal
import subprocess
import sys
import time
import zipfile
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp

import tcca_core.fit_cache as fit_cache
from tcca_core import TCCA
from tcca_core.fit_cache import FitCache
from tcca_core.kernels import ViewKernel
from tcca_core.protocol import METHODS, make_splits, run_method

COLS = ["val_acc", "test_acc", "r", "k", "params"]


@pytest.fixture(autouse=True)
def key_file(tmp_path_factory, monkeypatch):
    """Each test's own fit cache key, outside its cache folders (not ~/.config)."""
    path = tmp_path_factory.mktemp("fit-cache-key") / "fit-cache.key"
    monkeypatch.setenv(fit_cache.KEY_ENV, str(path))
    return path


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
    assert len(list((tmp_path / "fits").glob("*.npz"))) == n_fits
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
    (entry,) = tmp_path.glob("*.npz")
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


# ------------------------------------------------------- exact round trip of values


def _assert_identical(a, b, seen=None, where="value"):
    """``b`` equals ``a`` bit for bit, with the same types and the same sharing
    (an object reached twice in ``a`` is one object in ``b`` too)."""
    seen = {} if seen is None else seen
    assert type(a) is type(b), f"{where}: {type(a).__name__} != {type(b).__name__}"
    if a is None or isinstance(a, (bool, int, float, complex, str)):
        if isinstance(a, (float, complex)) or isinstance(a, np.inexact):
            assert np.asarray(a).tobytes() == np.asarray(b).tobytes(), where
        else:
            assert a == b, where
        if isinstance(a, np.generic):
            assert a.dtype == b.dtype, where
        return
    if isinstance(a, np.generic):
        assert a.dtype == b.dtype and a.tobytes() == b.tobytes(), where
        return
    if id(a) in seen:
        assert seen[id(a)] is b, f"{where}: sharing lost"
        return
    seen[id(a)] = b
    if isinstance(a, np.ndarray):
        assert a.dtype == b.dtype and a.shape == b.shape, where
        assert np.ascontiguousarray(a).tobytes() == np.ascontiguousarray(b).tobytes()
    elif sp.issparse(a):
        assert a.shape == b.shape, where
        names = (
            ("data", "coords") if a.format == "coo" else ("data", "indices", "indptr")
        )
        for name in names:
            _assert_identical(
                getattr(a, name), getattr(b, name), seen, f"{where}.{name}"
            )
    elif isinstance(a, (list, tuple)):
        assert len(a) == len(b), where
        for i, (x, z) in enumerate(zip(a, b)):
            _assert_identical(x, z, seen, f"{where}[{i}]")
    elif isinstance(a, dict):
        assert list(a) == list(b), where
        for (k, x), (kb, z) in zip(a.items(), b.items()):
            _assert_identical(k, kb, seen, f"{where} key")
            _assert_identical(x, z, seen, f"{where}[{k!r}]")
    else:  # an estimator: every attribute, public, fitted or private
        _assert_identical(vars(a), vars(b), seen, f"{where}.__dict__")


class _CheckedCache(dict):
    """A cache that stores every value in a FitCache, reads it back at once and
    checks that the copy is identical; lookups always miss."""

    def __init__(self, folder):
        super().__init__()
        self.disk = FitCache(folder)
        self.checked = 0

    def __getitem__(self, key):
        raise KeyError(key)

    def __setitem__(self, key, value):
        self.disk[key] = value
        assert self.disk.unstored == 0, "a protocol value could not be stored"
        _assert_identical(value, self.disk[key])
        self.checked += 1


ROUND_TRIP = {
    "tcca": {"eps": [1e-2], "max_iter": 15},
    "tcca_nc": {"eps": [1e-2], "max_iter": 15},
    "ktcca": {"eps": [1e-1], "max_iter": 15},
    "cca_bst": {"eps": [1e-2]},
    "cca_avg": {"eps": [1e-2]},
    "cca_ls": {"eps": [1e-2]},
    "kcca_bst": {"eps": [1e-1]},
    "dse": {},
    "ssmvd": {"lambda1": [0.0, 0.1], "lambda2": [0.1]},
}


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
@pytest.mark.parametrize("method", sorted(ROUND_TRIP))
def test_every_cached_protocol_value_round_trips_exactly(data, method, tmp_path):
    """Whatever run_method puts in a cache (estimators of a rank path with their
    fitted and private attributes, KTCCA's shared kernels and Cholesky factors,
    DSE/SSMVD representations, cost dicts, tuples) comes back bitwise equal, with
    the same types and sharing; new estimator attributes are covered as they
    appear, since every attribute is compared."""
    views, y, splits = data
    views = [np.abs(X) for X in views]  # chi2 kernels need non-negative features
    kernel = METHODS[method].family == "kernel"
    cache = _CheckedCache(tmp_path)
    run_method(
        views,
        y,
        splits[0],
        method,
        r_grid=[2, 3],
        params=ROUND_TRIP[method],
        seed=3,
        learner="knn" if kernel else "rls",
        cache=cache,
    )
    assert cache.checked > 0 and cache.disk.misses == cache.checked


class _TCCAWithInit(TCCA):
    """A solver estimator with a parameter and attributes TCCA may gain later."""

    def __init__(self, n_components=2, *, eps=1e-2, n_init=1, max_iter=100):
        super().__init__(n_components, eps=eps, max_iter=max_iter)
        self.n_init = n_init


def test_estimators_with_new_params_and_attributes_round_trip(data, tmp_path):
    """A new constructor parameter, new fitted attributes and the private attributes
    the allow-list declares, of any supported type, are stored and rebuilt."""
    views, _, _ = data
    est = _TCCAWithInit(2, n_init=3, max_iter=20)
    TCCA.fit(est, views)
    est.n_init_ = np.int64(3)
    est.best_init_ = 2
    est.inits_ = [np.float32(0.5), np.float16(-0.0), np.nan, -0.0, 1e-310, 2**70]
    est._private = {(1, "a"): (None, True, np.bool_(False), 1 + 2j, np.complex64(3j))}
    est.kernel_ = ViewKernel("rbf", gamma=0.5)
    csr = sp.random(6, 5, density=0.4, format="csr", random_state=0)
    csr.indices, csr.indptr = csr.indices.astype(np.int64), csr.indptr.astype(np.int64)
    est.sparse_ = [
        csr,
        csr.tocsc(),
        sp.coo_array(csr),
        np.asfortranarray(csr.toarray()),
    ]
    est.strings_ = np.array(["a", "bc"])
    est.when_ = np.datetime64("2026-01-01")
    est.shared_ = [est.sparse_, est.sparse_]
    name = f"{_TCCAWithInit.__module__}.{_TCCAWithInit.__qualname__}"
    module = _TCCAWithInit.__module__
    with pytest.MonkeyPatch.context() as mp:
        # TCCA's parameters this subclass does not take are plain attributes here
        inherited = set(vars(TCCA())) - set(est.get_params())
        extra = (*fit_cache._CLASSES["tcca_core._tcca.TCCA"][2], *inherited, "_private")
        mp.setitem(fit_cache._CLASSES, name, (module, "_TCCAWithInit", extra))
        cache = FitCache(tmp_path)
        cache["key"] = {"path": {2: est, 3: est}, "cost": ({"fit_s": 0.5}, 2)}
        got = FitCache(tmp_path)["key"]
    _assert_identical({"path": {2: est, 3: est}, "cost": ({"fit_s": 0.5}, 2)}, got)
    assert got["path"][2].get_params() == est.get_params()
    assert got["path"][2] is got["path"][3]
    np.testing.assert_array_equal(got["path"][2].transform(views), est.transform(views))
    # without the allow-list entry the class is refused, on writing and on reading
    cache = FitCache(tmp_path / "other")
    cache["key"] = est
    assert cache.unstored == 1 and not list((tmp_path / "other").iterdir())


def test_value_that_cannot_be_stored_is_computed_not_cached(tmp_path, caplog):
    """A callable kernel (code) is never written to an entry: the value is logged
    as not storable and simply not cached."""
    cache = FitCache(tmp_path)
    vk = ViewKernel(lambda a, b: a @ b.T)
    cache["k"] = (vk, {"fit_s": 1.0})
    assert cache.unstored == 1 and cache.misses == 0
    assert "not storing" in caplog.text
    assert not list(tmp_path.iterdir())
    with pytest.raises(KeyError):
        cache["k"]


def test_failed_write_leaves_nothing_and_keeps_the_fit(data, tmp_path, monkeypatch):
    """A full disk while writing an entry: no entry, no temporary file, the fit's
    result is still returned (a cache must not end a long fit job)."""
    views, y, splits = data
    kw = dict(r_grid=[2], params={"eps": [1e-2], "max_iter": 20}, seed=3)
    expected = run_method(views, y, splits[0], "tcca", **kw)

    def full(fh, meta, arrays, mac):
        fh.write(b"x" * 1000)
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(fit_cache, "_write_entry", full)
    cache = FitCache(tmp_path)
    got = run_method(views, y, splits[0], "tcca", cache=cache, **kw)
    pd.testing.assert_frame_equal(expected[COLS], got[COLS])
    assert cache.unstored == 1 and cache.misses == 0
    assert not list(tmp_path.iterdir())


# --------------------------------------------------------- a crafted cache folder


class _Payload:
    """Unpickling this runs ``open(marker, "w")``: a stand-in for os.system."""

    def __init__(self, marker):
        self.marker = str(marker)

    def __reduce__(self):
        return (open, (self.marker, "w"))


def _zip(path, members: dict, compress=zipfile.ZIP_STORED):
    with zipfile.ZipFile(path, "w", compression=compress) as zf:
        for name, data in members.items():
            zf.writestr(f"{name}.npy", data)


def _npy(arr) -> bytes:
    buf = io.BytesIO()
    np.lib.format.write_array(buf, arr, allow_pickle=True)
    return buf.getvalue()


def _meta(value, key) -> bytes:
    doc = {"format": fit_cache.FORMAT_VERSION, "key": key, "value": value}
    return _npy(np.frombuffer(json.dumps(doc).encode(), dtype=np.uint8))


def _craft(kind, entry: Path, other: Path, marker: Path):
    """Put a crafted file (or FIFO, directory, link) at ``entry``'s name."""
    key = entry.name[: -len(".npz")]
    if kind == "pickle":
        entry.write_bytes(pickle.dumps(_Payload(marker)))
    elif kind == "old-style pickle entry":
        entry.unlink()
        entry.with_suffix(".pkl").write_bytes(pickle.dumps(_Payload(marker)))
    elif kind == "pickled object array":
        evil = np.array([_Payload(marker)], dtype=object)
        value = {"t": "ndarray", "a": "a0", "id": 0}
        _zip(entry, {"a0": _npy(evil), "__meta__": _meta(value, key)})
    elif kind == "copied entry":
        entry.write_bytes(other.read_bytes())
    elif kind == "foreign class":
        value = {
            "t": "object",
            "cls": "numpy.f2py.__main__.main",  # importing it ends the process
            "params": [],
            "state": [],
            "id": 0,
        }
        _zip(entry, {"__meta__": _meta(value, key)})
    elif kind == "popen":
        args = {"t": "list", "v": ["touch", str(marker)], "id": 0}
        value = {
            "t": "object",
            "cls": "subprocess.Popen",
            "params": [["args", args]],
            "state": [],
            "id": 1,
        }
        _zip(entry, {"__meta__": _meta(value, key)})
    elif kind == "compressed member":
        _zip(entry, {"__meta__": b"\0" * 10_000_000}, compress=zipfile.ZIP_DEFLATED)
    elif kind == "fifo":
        entry.unlink()
        os.mkfifo(entry)
    elif kind == "directory":
        entry.unlink()
        entry.mkdir()
        (entry / "x").write_text("not ours")
    elif kind == "symlink":
        target = entry.with_name("elsewhere.npz")
        entry.rename(target)
        entry.symlink_to(target)
    else:
        raise AssertionError(kind)


def _snapshot(folder: Path, skip: Path) -> dict:
    out = {}
    for p in folder.rglob("*"):
        if p == skip or skip in p.parents:
            continue
        st = p.lstat()
        out[p] = (
            st.st_mode,
            p.read_bytes() if p.is_file() and not p.is_symlink() else None,
        )
    return out


CRAFTED = [
    "pickle",
    "old-style pickle entry",
    "pickled object array",
    "copied entry",
    "foreign class",
    "popen",
    "compressed member",
    "fifo",
    "directory",
    "symlink",
]


@pytest.mark.parametrize("kind", CRAFTED)
def test_crafted_cache_folder_runs_nothing_and_is_refitted(
    data, kind, tmp_path, caplog
):
    views, y, splits = data
    kw = dict(r_grid=[2], params={"eps": [1e-2], "max_iter": 20}, seed=3)
    folder = tmp_path / "fits"
    expected = run_method(views, y, splits[0], "tcca", cache=FitCache(folder), **kw)
    run_method(
        views,
        y,
        splits[1],
        "cca_ls",
        cache=FitCache(folder),
        **kw | {"params": {"eps": [1e-2]}},
    )
    entries = sorted(folder.glob("*.npz"), key=lambda p: p.stat().st_mtime_ns)
    entry, other = entries  # the TCCA path's entry, another key's entry
    marker = tmp_path / "pwned"
    _craft(kind, entry, other, marker)
    before = _snapshot(tmp_path, entry)
    modules = set(sys.modules)
    signal.signal(signal.SIGALRM, signal.default_int_handler)
    signal.alarm(60)  # a blocking open of the FIFO would hang here
    try:
        cache = FitCache(folder)
        got = run_method(views, y, splits[0], "tcca", cache=cache, **kw)
    finally:
        signal.alarm(0)
    pd.testing.assert_frame_equal(expected[COLS], got[COLS])
    assert cache.hits == 0, "a crafted entry was used"
    assert not marker.exists(), "code in the crafted entry ran"
    assert _snapshot(tmp_path, entry) == before, "something else was written"
    assert not {
        m for m in set(sys.modules) - modules if "f2py" in m or m == "subprocess"
    }
    if kind == "directory":  # cannot be replaced: the fit is kept, not cached
        assert cache.misses == 0 and cache.unstored == 1 and entry.is_dir()
    else:
        assert cache.misses == 1 and entry.is_file() and not entry.is_symlink()
        if kind != "old-style pickle entry":
            assert "refitting" in caplog.text
        # the rewritten entry is a good one
        again = FitCache(folder)
        run_method(views, y, splits[0], "tcca", cache=again, **kw)
        assert again.hits == 1 and again.misses == 0
    if kind == "pickle":  # control: the payload is live, unpickling it runs it
        pickle.loads(pickle.dumps(_Payload(marker)))
        assert marker.exists()


def test_leftovers_of_killed_writers_are_removed(tmp_path):
    host = FitCache(tmp_path)._host
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    names = {
        "dead": f".part-{dead.pid}@{host}~abc.npz",
        "alive": f".part-{os.getpid()}@{host}~def.npz",
        "other host": f".part-{dead.pid}@another-host~ghi.npz",
        "old": ".part-xyz.pkl",
    }
    for name in names.values():
        (tmp_path / name).write_bytes(b"partial")
    old = time.time() - 2 * 24 * 3600
    os.utime(tmp_path / names["old"], (old, old))
    FitCache(tmp_path)
    left = {p.name for p in tmp_path.iterdir()}
    assert left == {names["alive"], names["other host"]}

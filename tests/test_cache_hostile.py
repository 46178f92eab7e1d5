"""FitCache against someone else who can write its folder.

* Writes never land outside the folder, even with a process racing to swap the
  temporary files for links.
* Entries are authenticated with the user's key: an edited or forged entry is
  refitted (with a warning), never a silent hit.
* An entry that sets attributes its class does not carry (``transform = 1``) is
  refused and refitted even when it carries a valid HMAC, never crashes the job.
* A folder that cannot be created, or a key that cannot be used, warns and the
  job runs without a cache.
"""

import io
import json
import os
import stat
import subprocess
import sys
import zipfile

import numpy as np
import pandas as pd
import pytest

import tcca_core.fit_cache as fit_cache
from _swapper import Swapper, snapshot
from tcca_core import TCCA
from tcca_core.fit_cache import FitCache
from tcca_core.protocol import make_splits, run_method

COLS = ["val_acc", "test_acc", "r", "k", "params"]
KW = dict(r_grid=[2], params={"eps": [1e-2], "max_iter": 20}, seed=3)
pytestmark = pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")


@pytest.fixture(autouse=True)
def key_file(tmp_path_factory, monkeypatch):
    """Each test's own key file, outside its cache folders (not ~/.config)."""
    path = tmp_path_factory.mktemp("fit-cache-key") / "tcca" / "fit-cache.key"
    monkeypatch.setenv("TCCA_FIT_CACHE_KEY_FILE", str(path))
    return path


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(0)
    z = rng.standard_normal((90, 2))
    views = [
        z @ rng.standard_normal((2, d)) + 0.3 * rng.standard_normal((90, d))
        for d in (5, 6, 4)
    ]
    y = (z[:, 0] > 0).astype(int) + 2 * (z[:, 1] > 0)
    return views, y, make_splits(y, n_labeled=20, n_splits=2, seed=1)


@pytest.fixture(scope="module")
def expected(data):
    """The uncached results of the TCCA fit the tests cache."""
    views, y, splits = data
    return run_method(views, y, splits[0], "tcca", **KW)


@pytest.fixture
def fitted(data, expected, tmp_path):
    """A folder holding the one entry of that fit, and the uncached results."""
    views, y, splits = data
    folder = tmp_path / "fits"
    got = run_method(views, y, splits[0], "tcca", cache=FitCache(folder), **KW)
    pd.testing.assert_frame_equal(expected[COLS], got[COLS])
    (entry,) = folder.glob("*.npz")
    return folder, entry, expected


def _members(entry):
    with np.load(entry, allow_pickle=False) as npz:
        return {name: npz[name] for name in npz.files}


def _rewrite(entry, *, edit_arrays=None, edit_value=None, key=None):
    """Rewrite ``entry`` as someone with write access to the folder would: its
    arrays and/or the value tree edited, the rest (key digest, format, and the old
    ``__mac__`` unless ``key`` is given to sign it) kept."""
    members = _members(entry)
    meta = members.pop("__meta__").tobytes()
    mac = members.pop("__mac__", None)
    doc = json.loads(meta)
    if edit_value is not None:
        edit_value(doc["value"])
        meta = json.dumps(doc).encode()
    if edit_arrays is not None:
        members = {k: edit_arrays(a) for k, a in members.items()}
    if key is not None:
        doc = {k: v for k, v in json.loads(meta).items() if k != "members"}
        meta, mac_bytes = fit_cache._sign(key, doc, members)
        mac = np.frombuffer(mac_bytes, dtype=np.uint8)
    members["__meta__"] = np.frombuffer(meta, dtype=np.uint8)
    if mac is not None:
        members["__mac__"] = mac
    with zipfile.ZipFile(entry, "w") as zf:
        for name, a in members.items():
            buf = io.BytesIO()
            np.lib.format.write_array(buf, a, allow_pickle=False)
            zf.writestr(f"{name}.npy", buf.getvalue())


def _objects(node):
    """The estimator nodes of a value tree."""
    if isinstance(node, dict):
        if node.get("t") == "object":
            yield node
        for v in node.values():
            yield from _objects(v)
    elif isinstance(node, list):
        for v in node:
            yield from _objects(v)


def _rerun(data, folder):
    views, y, splits = data
    cache = FitCache(folder)
    return cache, run_method(views, y, splits[0], "tcca", cache=cache, **KW)


# ------------------------------------------------------------ item 1: the race


def test_racing_swapper_never_gets_a_write_outside_the_folder(tmp_path):
    """A second process keeps replacing the cache's temporary files by links to a
    file outside the folder while 300 entries are written: that file is never
    modified, and every entry either reads back exactly or is refused."""
    outside = tmp_path / "outside" / "precious.npz"
    outside.parent.mkdir()
    outside.write_bytes(b"precious")
    before = snapshot(outside)
    folder = tmp_path / "fits"
    cache = FitCache(folder)
    # few keys, so that the folder stays small and the swapper's loop fast
    values = [{"x": np.arange(50.0) + i, "i": i} for i in range(300)]
    with Swapper(folder, r"\.part-", outside) as swapper:
        for i, value in enumerate(values):
            cache[("k", i % 3)] = value  # an OSError only warns: not cached
    assert swapper.swaps > 0, "the swapper never raced (the test tested nothing)"
    assert snapshot(outside) == before, "a write landed outside the cache folder"
    assert [p.name for p in outside.parent.iterdir()] == ["precious.npz"]
    assert cache.misses + cache.unstored == len(values)
    reader = FitCache(folder)
    for k in range(3):
        try:
            got = reader[("k", k)]
        except KeyError:
            continue  # a link renamed onto the entry's name: refused, refitted
        assert got["i"] % 3 == k
        assert np.array_equal(got["x"], values[got["i"]]["x"])
    assert snapshot(outside) == before


# ------------------------------------------------- item 4: forged entries, the key


def test_entry_with_rewritten_arrays_is_refitted_not_served(
    data, fitted, tmp_path, caplog
):
    """Arrays rewritten, metadata kept (the key digest inside the entry matches):
    without the key the HMAC fails, the fit is recomputed and the results are the
    true ones, with a warning."""
    folder, entry, expected = fitted
    rng = np.random.default_rng(1)

    def poison(a):
        if a.dtype.kind != "f":
            return a
        return a + rng.standard_normal(a.shape).astype(a.dtype)

    _rewrite(entry, edit_arrays=poison)
    cache, got = _rerun(data, folder)
    assert cache.hits == 0, "a forged entry was served"
    assert cache.misses == 1
    assert "HMAC" in caplog.text and "refitting" in caplog.text
    pd.testing.assert_frame_equal(expected[COLS], got[COLS])
    again, _ = _rerun(data, folder)  # the refit replaced the forged entry
    assert again.hits == 1


def test_entry_written_with_another_key_is_refitted(data, fitted, key_file, caplog):
    """A colleague with another key wrote the folder: their entries are refitted
    (to share hits, share the key file)."""
    folder, entry, expected = fitted
    other = key_file.with_name("other.key")
    cache = FitCache(folder, key_file=other)
    views, y, splits = data
    got = run_method(views, y, splits[0], "tcca", cache=cache, **KW)
    assert cache.hits == 0 and cache.misses == 1
    assert "HMAC" in caplog.text
    pd.testing.assert_frame_equal(expected[COLS], got[COLS])
    assert other.read_bytes() != key_file.read_bytes()


def test_the_key_file_is_private_and_reused(data, fitted, key_file):
    folder, _, _ = fitted
    mode = stat.S_IMODE(key_file.stat().st_mode)
    assert mode == 0o600 and len(key_file.read_bytes()) == 32
    assert stat.S_IMODE(key_file.parent.stat().st_mode) == 0o700
    key = key_file.read_bytes()
    cache, _ = _rerun(data, folder)
    assert cache.hits == 1 and key_file.read_bytes() == key
    assert not [p for p in key_file.parent.iterdir() if p != key_file]


def test_concurrent_first_uses_agree_on_one_key(key_file):
    """Four processes creating the key at once all end with the same key."""
    code = (
        "import sys, pathlib, tcca_core.fit_cache as fc;"
        "print(fc._load_key(pathlib.Path(sys.argv[1])).hex())"
    )
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", code, str(key_file)],
            stdout=subprocess.PIPE,
            text=True,
        )
        for _ in range(4)
    ]
    keys = {p.communicate(timeout=120)[0].strip() for p in procs}
    assert keys == {key_file.read_bytes().hex()}


@pytest.mark.parametrize("kind", ["symlink", "group-readable", "inside the folder"])
def test_unusable_key_warns_and_runs_without_a_cache(
    data, expected, tmp_path, kind, caplog
):
    views, y, splits = data
    folder = tmp_path / "fits"
    real = tmp_path / "real.key"
    real.write_bytes(os.urandom(32))
    real.chmod(0o600)
    if kind == "symlink":
        key = tmp_path / "link.key"
        key.symlink_to(real)
    elif kind == "group-readable":
        key = real
        key.chmod(0o640)
    else:
        key = folder / "sub" / ".." / "fit-cache.key"
    cache = FitCache(folder, key_file=key)
    got = run_method(views, y, splits[0], "tcca", cache=cache, **KW)
    pd.testing.assert_frame_equal(expected[COLS], got[COLS])
    assert cache.disabled and cache.hits == 0 and cache.misses == 0
    assert "running without a cache" in caplog.text
    cache["k"] = {"x": 1}  # nothing is stored, nothing served
    with pytest.raises(KeyError):
        cache["k"]
    assert not list(folder.glob("*.npz")) and cache.unstored == 2


# ------------------------------------ item 3: attributes an entry may not set


SHADOWING = ["transform", "get_params", "__reduce_ex__", "fit_path", "_undeclared"]


@pytest.mark.parametrize("attr", SHADOWING)
@pytest.mark.parametrize("signed", [False, True], ids=["unsigned", "signed"])
def test_entry_setting_a_method_is_refitted_never_crashes(
    data, fitted, key_file, attr, signed, caplog
):
    """``transform = 1`` (or another method, or an undeclared private attribute)
    in an estimator's state: refused and refitted, whether or not the entry carries
    a valid HMAC (signed: written by a key holder, e.g. an older version)."""
    folder, entry, expected = fitted

    def add(value):
        for node in _objects(value):
            node["state"].append([attr, 1])

    _rewrite(entry, edit_value=add, key=key_file.read_bytes() if signed else None)
    cache, got = _rerun(data, folder)
    assert cache.hits == 0 and cache.misses == 1
    pd.testing.assert_frame_equal(expected[COLS], got[COLS])
    assert "refitting" in caplog.text
    assert (attr in caplog.text) if signed else ("HMAC" in caplog.text)


def test_signed_control_entry_is_served(data, fitted, key_file):
    """Control for the test above: rewriting and signing without an edit gives an
    entry that is served, so the refusals come from the edits."""
    folder, entry, _ = fitted
    _rewrite(entry, edit_value=lambda value: None, key=key_file.read_bytes())
    cache, _ = _rerun(data, folder)
    assert cache.hits == 1


def test_undeclared_private_attribute_is_not_stored(data, tmp_path, caplog):
    """What the reader would refuse is never written: a warning, not cached."""
    views, _, _ = data
    est = TCCA(2, max_iter=5).fit(views)
    est._scratch = np.zeros(3)
    cache = FitCache(tmp_path / "fits")
    cache["k"] = est
    assert cache.unstored == 1 and cache.misses == 0
    assert "_scratch" in caplog.text
    assert not list((tmp_path / "fits").iterdir())


# ------------------------------------------- item 7: a folder that cannot be made


@pytest.mark.parametrize("kind", ["a file", "under a file", "read-only parent"])
def test_uncreatable_folder_warns_and_runs_without_a_cache(
    data, expected, tmp_path, kind, caplog
):
    views, y, splits = data
    if kind == "a file":
        folder = tmp_path / "fits"
        folder.write_text("not a folder")
    elif kind == "under a file":
        (tmp_path / "file").write_text("not a folder")
        folder = tmp_path / "file" / "fits"
    else:
        if os.geteuid() == 0:
            pytest.skip("root writes read-only folders")
        parent = tmp_path / "ro"
        parent.mkdir()
        parent.chmod(0o500)
        folder = parent / "fits"
    cache = FitCache(folder)
    got = run_method(views, y, splits[0], "tcca", cache=cache, **KW)
    pd.testing.assert_frame_equal(expected[COLS], got[COLS])
    assert cache.disabled and cache.hits == 0 and cache.misses == 0
    assert cache.unstored == 1
    assert "running without a cache" in caplog.text

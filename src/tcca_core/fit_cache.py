"""A folder of fitted DR steps that several processes can share.

:func:`tcca_core.protocol.run_method` takes a ``cache`` mapping: a DR fit that does
not depend on the split (same views, fit rows, grid point and seed) is computed once
for every call given that mapping. A ``dict`` shares within one process;
:class:`FitCache` stores each entry as a file in a folder, so that

* entries leave memory (a transductive method over a grid of r and 25 lambda pairs
  holds gigabytes of representations), and
* separate jobs share them: mfeat's settings with 4, 6 and 8 labeled per class fit
  TCCA, KTCCA, DSE and SSMVD on the same rows, so one fit serves all three.

A key is the caller's description of the fit (method, grid point, fit rows, seed, a
digest of the data) plus a digest of this package's source files and of the numeric
libraries' versions: a changed implementation never reads an old entry. Entries are
written to a new file of an unpredictable name (created exclusively, never followed
through a link, written only through its descriptor) and renamed, so a reader never
sees a partial one, concurrent writers of one key (identical contents) are harmless,
and someone else who can write the folder cannot redirect a write outside it; the
temporary files of killed writers are removed by the next :class:`FitCache` on the
folder.

An entry holds data, never code: its value is stored by the pickle-free codec of
:mod:`tcca_core._cache_codec` (a JSON tree and ``.npy`` arrays; estimators rebuilt
from an allow-list of ``tcca_core`` classes), whose docstring states what an entry
may hold. An entry is authenticated: it carries an HMAC-SHA256 under a secret key of
the user, kept outside the folder (:mod:`tcca_core._cache_auth`, whose docstring
states what the key protects and from whom).

An entry is refused (logged, and refitted) when it is not a regular file (a FIFO, a
directory, a symbolic link), is not a zip of ``.npy`` members, holds a compressed
member, fails its HMAC, names an unknown class, tag or attribute, or was written for
another key (its key digest differs: a file copied over another entry's name). A
value that cannot be stored this way (an estimator holding a callable kernel, say)
is logged and simply not cached. A folder that cannot be created, or a key that
cannot be used, is logged once and the cache then stores and serves nothing.
"""

from __future__ import annotations

import errno
import hashlib
import hmac
import io
import json
import logging
import os
import platform
import socket
import stat
import time
import zipfile
from functools import lru_cache
from importlib import metadata
from pathlib import Path

import numpy as np

# The names below were defined here before the codec and the key handling moved to
# modules of their own; they stay importable (and patchable) from here.
from ._cache_auth import _READ_FLAGS as _READ_FLAGS
from ._cache_auth import KEY_ENV as KEY_ENV
from ._cache_auth import KeyFileError as KeyFileError
from ._cache_auth import _load_key as _load_key
from ._cache_auth import _mac as _mac
from ._cache_auth import _read_key as _read_key
from ._cache_auth import default_key_file as default_key_file
from ._cache_auth import manifest as manifest
from ._cache_codec import _CLASSES as _CLASSES
from ._cache_codec import _META as _META
from ._cache_codec import EntryError as EntryError
from ._cache_codec import decode_value as decode_value
from ._cache_codec import encode_value as encode_value
from ._io import atomic_write

__all__ = [
    "FitCache",
    "code_digest",
    "decode_value",
    "default_key_file",
    "encode_value",
]

logger = logging.getLogger(__name__)

_LIBRARIES = ("numpy", "scipy", "scikit-learn", "tensorly")

FORMAT_VERSION = 3  # 2: entries carry an HMAC (__mac__); 3: over a signed manifest
_SUFFIX = ".npz"
_MAC = "__mac__"
_PART = ".part-"
_STALE_PART_S = 24 * 3600  # a temporary file this old belongs to no live writer
# What a reader takes in before the HMAC is checked, at most: the zip's central
# directory, the __mac__ and the __meta__ member (the value's JSON tree). Members are
# then read in chunks of _CHUNK bytes.
_MAX_DIRECTORY = 1 << 22
_MAX_MAC = 1024
_MAX_META = 1 << 26
_CHUNK = 1 << 20


@lru_cache(maxsize=1)
def code_digest() -> str:
    """Digest of tcca_core's ``.py`` files and the numeric libraries' versions."""
    h = hashlib.sha256()
    root = Path(__file__).resolve().parent
    for path in sorted(root.rglob("*.py")):
        h.update(path.relative_to(root).as_posix().encode())
        h.update(path.read_bytes())
    for name in _LIBRARIES:
        try:
            version = metadata.version(name)
        except metadata.PackageNotFoundError:
            version = "absent"
        h.update(f"{name}={version}".encode())
    h.update(platform.python_version().encode())
    return h.hexdigest()


# ----------------------------------------------------------------------- file I/O


def _write_entry(fh, meta: bytes, arrays: dict[str, np.ndarray], mac: bytes) -> None:
    """Write an uncompressed zip of ``.npy`` members.

    The members are the arrays, ``__meta__`` (the JSON document ``meta``) and
    ``__mac__`` (the entry's HMAC, ``mac``).
    """
    members = {
        **arrays,
        _META: np.frombuffer(meta, dtype=np.uint8),
        _MAC: np.frombuffer(mac, dtype=np.uint8),
    }
    with zipfile.ZipFile(fh, "w", compression=zipfile.ZIP_STORED) as zf:
        for key, arr in members.items():
            info = zipfile.ZipInfo(f"{key}.npy", date_time=(1980, 1, 1, 0, 0, 0))
            info.compress_type = zipfile.ZIP_STORED
            info.external_attr = 0o644 << 16
            with zf.open(info, "w", force_zip64=True) as f:
                np.lib.format.write_array(f, arr, allow_pickle=False)


def _sign(key: bytes, doc: dict, arrays: dict[str, np.ndarray]) -> tuple[bytes, bytes]:
    """Return an entry's ``__meta__`` bytes and HMAC.

    The meta document is ``doc`` with the arrays' manifest (each stored member's
    size and SHA-256), signed under ``key``.
    """
    doc = {**doc, "members": manifest(arrays)}
    meta = json.dumps(doc, allow_nan=True, separators=(",", ":")).encode()
    return meta, _mac(key, meta)


def _directory_size(fh) -> int:
    """Return the size of the zip's central directory, from its end record."""
    end = zipfile._EndRecData(fh)  # type: ignore[attr-defined]
    if end is None:
        raise EntryError("not a zip file (no end of central directory)")
    return int(end[zipfile._ECD_SIZE])  # type: ignore[attr-defined]


def _member(zf: zipfile.ZipFile, info: zipfile.ZipInfo, sha256: str | None = None):
    """Read one ``.npy`` member in chunks, check its SHA-256, return the array.

    The array is a view of the bytes read (nothing is copied); a member whose
    header, size or digest is not what it should be raises :class:`EntryError`.
    """
    buf = bytearray(info.file_size)
    view = memoryview(buf)
    h = hashlib.sha256()
    with zf.open(info) as member:
        pos = 0
        while pos < len(buf):
            chunk = member.read(min(_CHUNK, len(buf) - pos))
            if not chunk:
                raise EntryError(f"member {info.filename!r} is truncated")
            view[pos : pos + len(chunk)] = chunk
            h.update(chunk)
            pos += len(chunk)
    if sha256 is not None and not hmac.compare_digest(h.hexdigest(), sha256):
        raise EntryError(
            f"member {info.filename!r} is not what its HMAC-signed manifest records "
            "(edited or forged)"
        )
    head = io.BytesIO(bytes(view[: 1 << 16]))
    try:
        version = np.lib.format.read_magic(head)
        read_header = (
            np.lib.format.read_array_header_1_0
            if version == (1, 0)
            else np.lib.format.read_array_header_2_0
        )
        shape, fortran, dtype = read_header(head)
    except ValueError as exc:
        raise EntryError(f"member {info.filename!r}: {exc}") from None
    if dtype.hasobject:
        raise EntryError(f"member {info.filename!r} holds Python objects")
    count = 1
    for n in shape:
        count *= int(n)
    offset = head.tell()
    if offset + count * dtype.itemsize != len(buf):
        raise EntryError(f"member {info.filename!r}: its size does not fit its shape")
    flat = np.frombuffer(buf, dtype=dtype, count=count, offset=offset)
    return flat.reshape(shape, order="F" if fortran else "C")


def _read_entry(fh, size: int, digest: str, key: bytes):
    """Read the value stored in the open entry file ``fh`` (``size`` bytes).

    Verified before it is loaded: the central directory and the ``__meta__``
    member are bounded (:data:`_MAX_DIRECTORY`, :data:`_MAX_META`); the HMAC of
    ``__meta__`` under ``key`` is checked; the entry must have been written for
    ``digest``; its members must be exactly those of the signed manifest, of the
    sizes it records; each is then read in chunks and its SHA-256 checked before any
    array is decoded.
    """
    if _directory_size(fh) > min(size, _MAX_DIRECTORY):
        raise EntryError("its central directory is larger than an entry's")
    fh.seek(0)
    with zipfile.ZipFile(fh) as zf:  # not a zip: BadZipFile, a miss
        infos = zf.infolist()
        members = {i.filename: i for i in infos}
        if len(members) != len(infos):
            raise EntryError("two members of one name")
        for info in infos:
            if info.compress_type != zipfile.ZIP_STORED:
                raise EntryError(f"compressed member {info.filename!r}")
        if sum(i.file_size for i in infos) > size:
            raise EntryError("members larger than the file")
        meta_info = members.pop(f"{_META}.npy", None)
        mac_info = members.pop(f"{_MAC}.npy", None)
        if meta_info is None or mac_info is None:
            raise EntryError("no __meta__ or no __mac__ member (another format)")
        if meta_info.file_size > _MAX_META or mac_info.file_size > _MAX_MAC:
            raise EntryError("its __meta__ or __mac__ member is larger than an entry's")
        meta = _member(zf, meta_info).tobytes()
        mac = _member(zf, mac_info).tobytes()
        if not hmac.compare_digest(mac, _mac(key, meta)):
            raise EntryError(
                "its HMAC does not match this user's key (edited or forged, or "
                "written by someone with another key)"
            )
        doc = json.loads(meta.decode())
        if type(doc) is not dict or doc.get("format") != FORMAT_VERSION:
            raise EntryError("another entry format")
        if doc.get("key") != digest:
            raise EntryError("written for another key (a copied or renamed file)")
        listed = doc.get("members")
        if type(listed) is not dict or set(listed) != set(members):
            raise EntryError("its members are not those its HMAC-signed manifest lists")
        for name, info in members.items():
            if listed[name][0] != info.file_size:
                raise EntryError(
                    f"member {name!r} is not of the size its HMAC-signed manifest "
                    "records (edited or forged)"
                )
        arrays = {
            name[: -len(".npy")]: _member(zf, info, listed[name][1])
            for name, info in members.items()
        }
    return decode_value(doc.get("value"), arrays)


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OSError):
        return True  # another user's process, or we cannot tell: keep its file
    return True


class FitCache:
    """Disk-backed mapping for ``run_method(cache=...)``.

    Every entry carries an HMAC-SHA256 under this user's secret key (see
    :func:`default_key_file`; created, mode 0600, on first use): an entry is served
    only if it was written with the same key. When the folder cannot be created or
    the key cannot be used, a warning says so and the cache stores and serves
    nothing (every fit is computed).

    Parameters
    ----------
    folder : str or path-like
        Created if missing. Safe to delete between runs (everything is recomputed).
    key_file : str or path-like, optional
        The key file; by default :func:`default_key_file`. It must lie outside
        ``folder``.

    Attributes
    ----------
    hits, misses : int
        Lookups answered from the folder, and entries written.
    unstored : int
        Values that could not be written (not storable, the write failed, or the
        cache is disabled); they were computed and returned, just not cached.
    disabled : str or None
        Why the cache stores and serves nothing, or None when it works.
    """

    def __init__(self, folder, *, key_file: str | os.PathLike | None = None):
        self.folder = Path(folder)
        self.hits = 0
        self.misses = 0
        self.unstored = 0
        self.disabled: str | None = None
        self._key = b""
        self._host = socket.gethostname().replace("@", "_").replace("~", "_")
        key_path = Path(key_file) if key_file is not None else default_key_file()
        try:
            try:
                self.folder.mkdir(parents=True, exist_ok=True)
            except FileExistsError:  # a file at its name: say so, not "File exists"
                raise NotADirectoryError(
                    errno.ENOTDIR, "not a folder", str(self.folder)
                ) from None
            folder_real = Path(os.path.realpath(self.folder))
            key_real = Path(os.path.realpath(key_path))
            if key_real == folder_real or folder_real in key_real.parents:
                # whoever can write the folder could replace the key there
                raise KeyFileError(f"key file {key_path} lies inside the cache folder")
            self._key = _load_key(key_path)
        except OSError as exc:
            self.disabled = str(exc)
            logger.warning(
                "fit cache: cannot use %s (%s); running without a cache (every fit "
                "is computed)",
                self.folder,
                exc,
            )
            return
        self._remove_stale_parts()

    # -- paths
    def _digest(self, key) -> str:
        return hashlib.sha256(repr((code_digest(), key)).encode()).hexdigest()

    def _path(self, key) -> Path:
        return self.folder / f"{self._digest(key)}{_SUFFIX}"

    def _remove_stale_parts(self) -> None:
        """Delete the temporary files of writers that were killed.

        A temporary name is ``.part-<pid>@<host>~<random>.npz``: a file of a dead
        process of this host goes at once, any other one after a day.
        """
        now = time.time()
        try:
            parts = list(self.folder.glob(f"{_PART}*"))
        except OSError:
            return  # an unreadable folder: nothing to clean
        for path in parts:
            owner = path.name[len(_PART) :].split("~", 1)[0]
            pid, _, host = owner.partition("@")
            try:
                if not stat.S_ISREG(path.lstat().st_mode):
                    continue
                dead = host == self._host and pid.isdigit() and not _pid_alive(int(pid))
                if dead or now - path.lstat().st_mtime > _STALE_PART_S:
                    path.unlink()
                    logger.info("fit cache: removed %s (left by a killed writer)", path)
            except OSError:
                continue  # gone already, or not ours to delete

    # -- mapping
    def __getitem__(self, key):
        """Return the entry of ``key`` (KeyError when there is none)."""
        value = self._load(key)
        if value is _MISSING:
            raise KeyError(key)
        self.hits += 1
        return value

    def __setitem__(self, key, value) -> None:
        """Store ``value`` under ``key`` (atomically; a full disk only warns)."""
        if self.disabled is not None:
            self.unstored += 1
            return
        digest = self._digest(key)
        try:
            tree, arrays = encode_value(value)
        except TypeError as exc:
            logger.warning("fit cache: not storing an entry (%s)", exc)
            self.unstored += 1
            return
        doc = {"format": FORMAT_VERSION, "key": digest, "value": tree}
        try:
            meta, mac = _sign(self._key, doc, arrays)
        except TypeError as exc:
            logger.warning("fit cache: not storing an entry (%s)", exc)
            self.unstored += 1
            return
        path = self.folder / f"{digest}{_SUFFIX}"
        try:
            with atomic_write(
                path, unique_prefix=f"{_PART}{os.getpid()}@{self._host}~"
            ) as fh:
                _write_entry(fh, meta, arrays, mac)
        except OSError as exc:
            # a full disk or a directory at the entry's name: the fit is still good
            why = "the disk is full" if exc.errno == errno.ENOSPC else exc
            logger.warning("fit cache: cannot write %s (%s); not cached", path, why)
            self.unstored += 1
            return
        self.misses += 1

    def _load(self, key):
        if self.disabled is not None:
            return _MISSING
        digest = self._digest(key)
        path = self.folder / f"{digest}{_SUFFIX}"
        try:
            st = os.lstat(path)
        except FileNotFoundError:
            return _MISSING
        except OSError as exc:
            logger.warning("fit cache entry %s unreadable (%s); refitting", path, exc)
            return _MISSING
        if not stat.S_ISREG(st.st_mode):
            logger.warning(
                "fit cache entry %s is not a regular file; ignoring it and refitting",
                path,
            )
            return _MISSING
        try:
            fd = os.open(path, _READ_FLAGS)
        except OSError as exc:
            logger.warning("fit cache entry %s unreadable (%s); refitting", path, exc)
            return _MISSING
        with os.fdopen(fd, "rb") as fh:
            try:
                st = os.fstat(fh.fileno())
                if not stat.S_ISREG(st.st_mode):  # swapped since the lstat
                    raise EntryError("not a regular file")
                return _read_entry(fh, st.st_size, digest, self._key)
            except Exception as exc:  # damaged, foreign or copied file: refit
                logger.warning(
                    "fit cache entry %s unreadable (%s: %s); refitting",
                    path,
                    type(exc).__name__,
                    exc,
                )
                return _MISSING


_MISSING = object()

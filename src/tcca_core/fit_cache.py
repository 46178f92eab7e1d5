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
written to a temporary name and renamed, so a reader never sees a partial one and
concurrent writers of one key (identical contents) are harmless; the temporary files
of killed writers are removed by the next :class:`FitCache` on the folder.

**Entries hold data, never code.** An entry is an ``.npz`` file (an uncompressed zip
of ``.npy`` arrays, read with ``allow_pickle=False``) whose ``__meta__`` member is a
JSON document: the format version, the digest of the entry's key and the value as a
tree of plain JSON values and tagged nodes (lists, tuples, dicts with any keys,
numpy scalars, arrays and scipy.sparse matrices by reference to the zip's members,
and the estimators of this package). An estimator is stored as its class name, its
``get_params()`` and its instance attributes (fitted ``*_`` attributes and the
private ones ``transform`` needs, encoded recursively); it is rebuilt by calling
that class, looked up by name in a fixed allow-list of ``tcca_core`` classes, with
the parameters and setting the attributes. Nothing in a file can name a function or
a module, so a cache folder written by someone else can at worst be wrong, never
run code. Objects shared within a value (the kernels and Cholesky factors of a KTCCA
rank path) are stored once and shared again when read.

An entry is refused (logged, and refitted) when it is not a regular file (a FIFO, a
directory, a symbolic link), is not such a zip, holds a compressed member, names an
unknown class or tag, or was written for another key (its key digest differs: a file
copied over another entry's name). A value that cannot be stored this way (an
estimator holding a callable kernel, say) is logged and simply not cached.
"""

from __future__ import annotations

import errno
import hashlib
import json
import logging
import os
import platform
import socket
import stat
import time
import zipfile
from functools import lru_cache
from importlib import import_module, metadata
from pathlib import Path

import numpy as np
import scipy.sparse as sp

from ._io import atomic_write

__all__ = ["FitCache", "code_digest", "decode_value", "encode_value"]

logger = logging.getLogger(__name__)

_LIBRARIES = ("numpy", "scipy", "scikit-learn", "tensorly")

FORMAT_VERSION = 1
_SUFFIX = ".npz"
_META = "__meta__"
_PART = ".part-"
_STALE_PART_S = 24 * 3600  # a temporary file this old belongs to no live writer
# Never follow a link, never block on a FIFO swapped in after the lstat.
_READ_FLAGS = os.O_RDONLY | sum(
    getattr(os, flag, 0) for flag in ("O_NOFOLLOW", "O_NONBLOCK", "O_CLOEXEC")
)

# The only classes an entry may name: "module.QualName" -> (module, attribute).
# A name is looked up here before anything is imported.
_CLASSES = {
    f"{module}.{name}": (module, name)
    for module, name in (
        ("tcca_core._tcca", "TCCA"),
        ("tcca_core._ktcca", "KTCCA"),
        ("tcca_core.baselines._cca", "CCA"),
        ("tcca_core.baselines._cca", "KCCA"),
        ("tcca_core.baselines._cca_ls", "CCALS"),
        ("tcca_core.baselines._dse", "DSE"),
        ("tcca_core.baselines._ssmvd", "SSMVD"),
        ("tcca_core.kernels", "ViewKernel"),
    )
}
_SPARSE = frozenset(
    f"{fmt}_{kind}" for fmt in ("csr", "csc", "coo") for kind in ("matrix", "array")
)
# numpy scalars stored inline in the JSON (exactly: at most 64-bit reals); any other
# dtype goes to the zip as a 0-d array.
_INLINE_SCALARS = frozenset(
    {"bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32"}
    | {"uint64", "float16", "float32", "float64", "complex64", "complex128"}
)


class EntryError(ValueError):
    """A cache file that is not a valid entry for the key it was looked up with."""


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


# ----------------------------------------------------------------------- encoding


def _class_name(cls: type) -> str:
    return f"{cls.__module__}.{cls.__qualname__}"


def _resolve_class(name) -> type:
    """Return the allow-listed class ``name``; refuse anything else before importing."""
    if not isinstance(name, str) or name not in _CLASSES:
        raise EntryError(f"class {name!r} is not one a cache entry may hold")
    module, attr = _CLASSES[name]
    return getattr(import_module(module), attr)


class _Encoder:
    """Value -> (JSON tree, arrays). Shared objects are stored once (``ref``)."""

    def __init__(self):
        self.arrays: dict[str, np.ndarray] = {}
        self._memo: dict[int, int] = {}  # id(object) -> node id
        self._alive: list = []  # keeps memoized objects (and so their ids) alive
        self._active: set[int] = set()

    def _array(self, a: np.ndarray) -> str:
        if a.dtype.hasobject:
            raise TypeError("an array of Python objects cannot be stored")
        name = f"a{len(self.arrays)}"
        self.arrays[name] = a
        return name

    def encode(self, x):
        if x is None or type(x) in (bool, int, float, str):
            return x
        if isinstance(x, np.generic):
            dtype = x.dtype.name
            if dtype in _INLINE_SCALARS:
                if dtype.startswith("complex"):
                    v = [float(x.real), float(x.imag)]
                else:
                    v = x.item()
                return {"t": "scalar", "dtype": dtype, "v": v}
            return {"t": "scalar0d", "a": self._array(np.asarray(x))}
        if type(x) is complex:
            return {"t": "complex", "v": [x.real, x.imag]}
        ident = id(x)
        if ident in self._memo:
            return {"t": "ref", "id": self._memo[ident]}
        if ident in self._active:
            raise TypeError("a value that contains itself cannot be stored")
        self._active.add(ident)
        try:
            node = self._node(x)
        finally:
            self._active.discard(ident)
        node["id"] = len(self._memo)
        self._memo[ident] = node["id"]
        self._alive.append(x)
        return node

    def _items(self, d: dict) -> list:
        return [[self.encode(k), self.encode(v)] for k, v in d.items()]

    def _node(self, x) -> dict:
        if type(x) is np.ndarray:
            return {"t": "ndarray", "a": self._array(x)}
        if sp.issparse(x):
            name = type(x).__name__
            if name not in _SPARSE or getattr(sp, name) is not type(x):
                raise TypeError(f"sparse matrices of type {name} cannot be stored")
            if x.format == "coo":
                parts = {"data": x.data, **{f"c{i}": c for i, c in enumerate(x.coords)}}
            else:
                parts = {"data": x.data, "indices": x.indices, "indptr": x.indptr}
            return {
                "t": "sparse",
                "cls": name,
                "shape": [int(s) for s in x.shape],
                "parts": {k: self.encode(v) for k, v in parts.items()},
            }
        if type(x) in (list, tuple):
            return {"t": type(x).__name__, "v": [self.encode(v) for v in x]}
        if type(x) is dict:
            return {"t": "dict", "v": self._items(x)}
        cls = type(x)
        name = _class_name(cls)
        if name not in _CLASSES or _resolve_class(name) is not cls:
            raise TypeError(f"objects of type {name} cannot be stored")
        params = x.get_params(deep=False) if hasattr(x, "get_params") else {}
        state = {k: v for k, v in vars(x).items() if k not in params}
        return {
            "t": "object",
            "cls": name,
            "params": self._items(params),
            "state": self._items(state),
        }


class _Decoder:
    """JSON tree + arrays -> value, accepting nothing but the encoder's nodes."""

    def __init__(self, arrays):
        self._arrays = arrays  # name -> array, read on demand
        self._loaded: dict[str, np.ndarray] = {}
        self._memo: dict[int, object] = {}

    def _array(self, name) -> np.ndarray:
        if not isinstance(name, str) or name == _META or name not in self._arrays:
            raise EntryError(f"no array {name!r} in the entry")
        if name not in self._loaded:
            self._loaded[name] = self._arrays[name]
        return self._loaded[name]

    def decode(self, node):
        if node is None or type(node) in (bool, int, float, str):
            return node
        if type(node) is not dict or not isinstance(node.get("t"), str):
            raise EntryError(f"unexpected node {type(node).__name__}")
        tag = node["t"]
        if tag == "ref":
            try:
                return self._memo[node["id"]]
            except (KeyError, TypeError):
                raise EntryError("reference to an unknown node") from None
        if tag == "scalar":
            dtype = node.get("dtype")
            if dtype not in _INLINE_SCALARS:
                raise EntryError(f"scalar type {dtype!r}")
            v = node.get("v")
            if dtype.startswith("complex"):
                re, im = v
                return np.dtype(dtype).type(complex(float(re), float(im)))
            if type(v) not in (bool, int, float):
                raise EntryError("scalar value")
            return np.dtype(dtype).type(v)
        if tag == "scalar0d":
            a = self._array(node.get("a"))
            if a.ndim != 0:
                raise EntryError("scalar array is not 0-d")
            return a[()]
        if tag == "complex":
            re, im = node["v"]
            return complex(float(re), float(im))
        value = self._node(tag, node)
        ident = node.get("id")
        if type(ident) is not int or ident in self._memo:
            raise EntryError("node without a fresh id")
        self._memo[ident] = value
        return value

    def _items(self, items) -> dict:
        if type(items) is not list:
            raise EntryError("mapping is not a list of pairs")
        out = {}
        for pair in items:
            if type(pair) is not list or len(pair) != 2:
                raise EntryError("mapping item is not a pair")
            out[self.decode(pair[0])] = self.decode(pair[1])
        return out

    def _node(self, tag, node):
        if tag == "ndarray":
            return self._array(node.get("a"))
        if tag in ("list", "tuple"):
            items = node.get("v")
            if type(items) is not list:
                raise EntryError(f"{tag} without items")
            values = [self.decode(v) for v in items]
            return values if tag == "list" else tuple(values)
        if tag == "dict":
            return self._items(node.get("v"))
        if tag == "sparse":
            name = node.get("cls")
            if name not in _SPARSE:
                raise EntryError(f"sparse type {name!r}")
            parts = node.get("parts")
            if type(parts) is not dict:
                raise EntryError("sparse matrix without parts")
            parts = {k: self.decode(v) for k, v in parts.items()}
            if not all(type(v) is np.ndarray for v in parts.values()):
                raise EntryError("sparse matrix parts must be arrays")
            shape = tuple(int(s) for s in node.get("shape"))
            cls = getattr(sp, name)
            if name.startswith("coo"):
                coords = tuple(parts[f"c{i}"] for i in range(len(shape)))
                x = cls((parts["data"], coords), shape=shape)
                x.coords = coords  # the constructor may narrow the index type
            else:
                indices, indptr = parts["indices"], parts["indptr"]
                x = cls((parts["data"], indices, indptr), shape=shape)
                x.indices, x.indptr = indices, indptr
            x.data = parts["data"]
            return x
        if tag == "object":
            cls = _resolve_class(node.get("cls"))
            params = self._items(node.get("params"))
            state = self._items(node.get("state"))
            if not all(type(k) is str for k in (*params, *state)):
                raise EntryError("attribute names must be strings")
            obj = cls(**params)
            vars(obj).update(state)
            return obj
        raise EntryError(f"unknown node type {tag!r}")


def encode_value(value) -> tuple[object, dict[str, np.ndarray]]:
    """``value`` as a JSON-serialisable tree and the arrays it refers to.

    Raises ``TypeError`` for anything outside the supported types (see the module
    docstring).
    """
    enc = _Encoder()
    return enc.encode(value), enc.arrays


def decode_value(tree, arrays) -> object:
    """Inverse of :func:`encode_value`; ``arrays`` maps names to arrays."""
    return _Decoder(arrays).decode(tree)


# ----------------------------------------------------------------------- file I/O


def _write_entry(fh, meta: dict, arrays: dict[str, np.ndarray]) -> None:
    """Write an uncompressed zip of ``.npy`` members: the arrays, then ``__meta__``."""
    meta_bytes = json.dumps(meta, allow_nan=True, separators=(",", ":")).encode()
    members = {**arrays, _META: np.frombuffer(meta_bytes, dtype=np.uint8)}
    with zipfile.ZipFile(fh, "w", compression=zipfile.ZIP_STORED) as zf:
        for key, arr in members.items():
            info = zipfile.ZipInfo(f"{key}.npy", date_time=(1980, 1, 1, 0, 0, 0))
            info.compress_type = zipfile.ZIP_STORED
            info.external_attr = 0o644 << 16
            with zf.open(info, "w", force_zip64=True) as f:
                np.lib.format.write_array(f, arr, allow_pickle=False)


def _read_entry(fh, size: int, digest: str):
    """Read the value stored in the open entry file ``fh``, checked by ``digest``."""
    with zipfile.ZipFile(fh) as zf:  # not a zip: BadZipFile, a miss
        infos = zf.infolist()
        if sum(i.file_size for i in infos) > size:
            raise EntryError("members larger than the file (compressed members)")
        for info in infos:
            if info.compress_type != zipfile.ZIP_STORED:
                raise EntryError(f"compressed member {info.filename!r}")
    fh.seek(0)
    with np.load(fh, allow_pickle=False) as npz:
        if _META not in npz.files:
            raise EntryError("no __meta__ member")
        meta = json.loads(npz[_META].tobytes().decode())
        if type(meta) is not dict or meta.get("format") != FORMAT_VERSION:
            raise EntryError("another entry format")
        if meta.get("key") != digest:
            raise EntryError("written for another key (a copied or renamed file)")
        return decode_value(meta.get("value"), npz)


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

    Parameters
    ----------
    folder : str or path-like
        Created if missing. Safe to delete between runs (everything is recomputed).

    Attributes
    ----------
    hits, misses : int
        Lookups answered from the folder, and entries written.
    unstored : int
        Values that could not be written (not storable, or the write failed);
        they were computed and returned, just not cached.
    """

    def __init__(self, folder):
        self.folder = Path(folder)
        self.folder.mkdir(parents=True, exist_ok=True)
        self.hits = 0
        self.misses = 0
        self.unstored = 0
        self._host = socket.gethostname().replace("@", "_").replace("~", "_")
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
        for path in self.folder.glob(f"{_PART}*"):
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
        digest = self._digest(key)
        try:
            tree, arrays = encode_value(value)
        except TypeError as exc:
            logger.warning("fit cache: not storing an entry (%s)", exc)
            self.unstored += 1
            return
        meta = {"format": FORMAT_VERSION, "key": digest, "value": tree}
        path = self.folder / f"{digest}{_SUFFIX}"
        try:
            with (
                atomic_write(
                    path, unique_prefix=f"{_PART}{os.getpid()}@{self._host}~"
                ) as tmp,
                open(tmp, "wb") as fh,
            ):
                _write_entry(fh, meta, arrays)
        except OSError as exc:
            # a full disk or a directory at the entry's name: the fit is still good
            why = "the disk is full" if exc.errno == errno.ENOSPC else exc
            logger.warning("fit cache: cannot write %s (%s); not cached", path, why)
            self.unstored += 1
            return
        self.misses += 1

    def _load(self, key):
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
                return _read_entry(fh, st.st_size, digest)
            except Exception as exc:  # damaged, foreign or copied file: refit
                logger.warning(
                    "fit cache entry %s unreadable (%s: %s); refitting",
                    path,
                    type(exc).__name__,
                    exc,
                )
                return _MISSING


_MISSING = object()

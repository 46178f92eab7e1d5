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

**Entries hold data, never code.** An entry is an ``.npz`` file (an uncompressed zip
of ``.npy`` arrays, read with ``allow_pickle=False``) whose ``__meta__`` member is a
JSON document: the format version, the digest of the entry's key and the value as a
tree of plain JSON values and tagged nodes (lists, tuples, dicts with any keys,
numpy scalars, arrays and scipy.sparse matrices by reference to the zip's members,
and the estimators of this package). An estimator is stored as its class name, its
``get_params()`` and its instance attributes; it is rebuilt by calling that class,
looked up by name in a fixed allow-list of ``tcca_core`` classes, with the
parameters and setting the attributes. Only fitted ``*_`` attributes and the few
others the allow-list names for the class are set, and none that shadows a class
attribute (an entry setting ``transform`` is refused, not served). Nothing in a file
can name a function or a module, so no entry can run code. Objects shared within a
value (the kernels and Cholesky factors of a KTCCA rank path) are stored once and
shared again when read.

**Entries are authenticated.** The ``__mac__`` member is an HMAC-SHA256, under a
secret key of the user, of ``__meta__`` and of every array (name, dtype, shape,
order and data, as read). The key lives outside the cache folder
(:func:`default_key_file`: ``$TCCA_FIT_CACHE_KEY_FILE``, else
``~/.config/tcca/fit-cache.key``), is created with mode 0600 on first use, and is
refused when it is a link, another user's file or readable by others. An entry whose
HMAC does not verify (edited, forged, or written with another key) is logged and
refitted, so someone who can write the folder but does not hold the key can cost
refits, never change a result. Users who want to share one folder's fits share the
key file, and so trust each other's entries; the HMAC is checked on the arrays as
read, before anything is decoded (one pass over the entry's bytes).

An entry is refused (logged, and refitted) when it is not a regular file (a FIFO, a
directory, a symbolic link), is not such a zip, holds a compressed member, fails its
HMAC, names an unknown class, tag or attribute, or was written for another key (its
key digest differs: a file copied over another entry's name). A value that cannot
be stored this way (an estimator holding a callable kernel, say) is logged and
simply not cached. A folder that cannot be created, or a key that cannot be used,
is logged once and the cache then stores and serves nothing.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import hmac
import json
import logging
import os
import platform
import socket
import stat
import time
import zipfile
from collections.abc import Iterator, MutableMapping
from functools import lru_cache
from importlib import import_module, metadata
from pathlib import Path

import numpy as np
import scipy.sparse as sp

from ._io import _create, atomic_write
from .registry import METHODS

__all__ = [
    "FitCache",
    "code_digest",
    "decode_value",
    "default_key_file",
    "encode_value",
]

logger = logging.getLogger(__name__)

_LIBRARIES = ("numpy", "scipy", "scikit-learn", "tensorly")

FORMAT_VERSION = 2  # 2: entries carry an HMAC (__mac__)
_SUFFIX = ".npz"
_META = "__meta__"
_MAC = "__mac__"
KEY_ENV = "TCCA_FIT_CACHE_KEY_FILE"
_KEY_BYTES = 32
_KEY_MAX_BYTES = 4096
_PART = ".part-"
_STALE_PART_S = 24 * 3600  # a temporary file this old belongs to no live writer
# Never follow a link, never block on a FIFO swapped in after the lstat.
_READ_FLAGS = os.O_RDONLY | sum(
    getattr(os, flag, 0) for flag in ("O_NOFOLLOW", "O_NONBLOCK", "O_CLOEXEC")
)


class _Allowed(MutableMapping):
    """The only classes an entry may name, read on every lookup.

    "module.QualName" -> (module, attribute, the instance attributes it may carry
    besides its get_params() and its fitted ``*_`` ones). The estimators of the
    registered methods (``MethodSpec.estimators``: registering a method is the one
    place, even after this module is imported) and the fixed classes of ``fixed``. A
    name is looked up here before anything is imported. A class that gains a private
    attribute its transform needs must be listed in ``fixed`` with it; until then its
    fits are not cached (a warning, and the round-trip test fails).
    """

    def __init__(self, fixed: dict[str, tuple[str, str, tuple[str, ...]]]):
        self._fixed = fixed

    def _all(self) -> dict[str, tuple[str, str, tuple[str, ...]]]:
        out = {}
        for spec in METHODS.values():
            for dotted in spec.estimators:
                module, _, name = dotted.partition(":")
                out[f"{module}.{name}"] = (module, name, ())
        return {**out, **self._fixed}

    def __getitem__(self, name: str) -> tuple[str, str, tuple[str, ...]]:
        return self._all()[name]

    def __setitem__(self, name: str, value: tuple[str, str, tuple[str, ...]]) -> None:
        self._fixed[name] = value

    def __delitem__(self, name: str) -> None:
        del self._fixed[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._all())

    def __len__(self) -> int:
        return len(self._all())


_CLASSES: MutableMapping[str, tuple[str, str, tuple[str, ...]]] = _Allowed(
    {
        "tcca_core.kernels.ViewKernel": (
            "tcca_core.kernels",
            "ViewKernel",
            ("kernel", "gamma"),
        )
    }  # no get_params
)
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
    module, attr, _ = _CLASSES[name]
    return getattr(import_module(module), attr)


def _check_attribute(name: str, cls: type, attr) -> None:
    """Refuse an instance attribute that ``cls`` (allow-listed as ``name``) lacks.

    Allowed: fitted ``*_`` attributes and the ones ``_CLASSES`` lists for ``cls``,
    and none that shadows a class attribute (a method such as ``transform`` or
    ``__reduce_ex__``), which would break the rebuilt estimator.
    """
    if type(attr) is not str or not attr.isidentifier():
        raise EntryError(f"attribute name {attr!r}")
    fitted = attr.endswith("_") and not attr.startswith("_")
    if not fitted and attr not in _CLASSES[name][2]:
        raise EntryError(f"{name} does not carry an attribute {attr!r}")
    if hasattr(cls, attr):
        raise EntryError(f"attribute {attr!r} would shadow {name}.{attr}")


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
        for attr in state:  # what the decoder would refuse is never written
            try:
                _check_attribute(name, cls, attr)
            except EntryError as exc:
                raise TypeError(str(exc)) from None
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
            name = node.get("cls")
            cls = _resolve_class(name)
            params = self._items(node.get("params"))
            state = self._items(node.get("state"))
            if not all(type(k) is str and k.isidentifier() for k in params):
                raise EntryError("parameter names must be identifiers")
            for attr in state:
                _check_attribute(name, cls, attr)
            obj = cls(**params)  # an unknown parameter: TypeError, a miss
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


# ---------------------------------------------------------------- authentication


class KeyFileError(OSError):
    """A fit cache key file that cannot be used (a link, readable by others...)."""


def default_key_file() -> Path:
    """Where this user's fit cache key is kept (see :class:`FitCache`).

    ``$TCCA_FIT_CACHE_KEY_FILE`` if set, else ``$XDG_CONFIG_HOME/tcca/fit-cache.key``
    (``~/.config/tcca/fit-cache.key`` without ``XDG_CONFIG_HOME``).
    """
    env = os.environ.get(KEY_ENV)
    if env:
        return Path(env).expanduser()
    base = os.environ.get("XDG_CONFIG_HOME") or Path.home() / ".config"
    return Path(base) / "tcca" / "fit-cache.key"


def _read_key(path: Path) -> bytes:
    """Read the key in ``path``, a regular file of this user closed to others.

    A link, another user's file or one that others may read or write is refused
    (``KeyFileError``): someone else could know or choose the key.
    """
    try:
        fd = os.open(path, _READ_FLAGS)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise KeyFileError(f"key file {path} is a symbolic link") from None
        raise
    with os.fdopen(fd, "rb") as fh:
        st = os.fstat(fh.fileno())
        if not stat.S_ISREG(st.st_mode):
            raise KeyFileError(f"key file {path} is not a regular file")
        if hasattr(os, "getuid") and st.st_uid != os.getuid():
            raise KeyFileError(f"key file {path} belongs to another user")
        if st.st_mode & 0o077:
            raise KeyFileError(
                f"key file {path} is open to other users (mode "
                f"{stat.S_IMODE(st.st_mode):o}; chmod 600 it, or delete it to get a "
                "new key)"
            )
        key = fh.read(_KEY_MAX_BYTES + 1)
    if not 16 <= len(key) <= _KEY_MAX_BYTES:
        raise KeyFileError(f"key file {path} holds {len(key)} bytes, not 16 to 4096")
    return key


def _load_key(path: Path) -> bytes:
    """Read the key file ``path``, creating it with a new random key if missing.

    A new key is written to a temporary file (mode 0600) and linked to ``path``,
    which fails if ``path`` exists: two processes creating it at once agree on the
    key of the first, and a reader never sees a partial key.
    """
    try:
        return _read_key(path)
    except FileNotFoundError:
        pass
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    fd, tmp = _create(path.parent, f".{path.name}.", ".part", mode=0o600)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(os.urandom(_KEY_BYTES))
            fh.flush()
            os.fsync(fh.fileno())
        try:
            os.link(tmp, path, follow_symlinks=False)
        except FileExistsError:
            pass  # another process made it first: use its key
        else:
            logger.info("fit cache: created the key file %s", path)
    finally:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
    return _read_key(path)


def _mac(key: bytes, meta: bytes, arrays: dict[str, np.ndarray]) -> bytes:
    """Return the HMAC-SHA256 of an entry under ``key``.

    It covers the ``__meta__`` bytes and every other member's name, dtype, shape,
    memory order and data, as ``np.load`` gives them back.
    """
    h = hmac.new(key, b"tcca fit cache entry\0", hashlib.sha256)

    def chunk(b) -> None:
        h.update(len(b).to_bytes(8, "little"))
        h.update(b)

    chunk(meta)
    for name in sorted(arrays):
        a = arrays[name]
        if type(a) is not np.ndarray or a.dtype.hasobject:
            raise EntryError(f"member {name!r} is not an array of numbers")
        # np.lib.format.write_array's rule: Fortran order only if not also C
        fortran = bool(a.flags.f_contiguous and not a.flags.c_contiguous)
        descr = np.lib.format.dtype_to_descr(a.dtype)
        chunk(repr((name, descr, a.shape, fortran)).encode())
        flat = a.ravel(order="F" if fortran else "C")  # a view when contiguous
        chunk(flat.view(np.uint8) if a.nbytes else b"")
    return h.digest()


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


def _read_entry(fh, size: int, digest: str, key: bytes):
    """Read the value stored in the open entry file ``fh``.

    The entry must carry the HMAC of its contents under ``key`` (checked on the
    arrays as read, before anything is decoded) and have been written for
    ``digest``.
    """
    with zipfile.ZipFile(fh) as zf:  # not a zip: BadZipFile, a miss
        infos = zf.infolist()
        if sum(i.file_size for i in infos) > size:
            raise EntryError("members larger than the file (compressed members)")
        for info in infos:
            if info.compress_type != zipfile.ZIP_STORED:
                raise EntryError(f"compressed member {info.filename!r}")
    fh.seek(0)
    with np.load(fh, allow_pickle=False) as npz:
        if _META not in npz.files or _MAC not in npz.files:
            raise EntryError("no __meta__ or no __mac__ member (another format)")
        arrays = {name: npz[name] for name in npz.files}
    meta, mac = arrays.pop(_META), arrays.pop(_MAC)
    if type(meta) is not np.ndarray or type(mac) is not np.ndarray:
        raise EntryError("__meta__ or __mac__ is not an array")
    meta_bytes = meta.tobytes()
    if not hmac.compare_digest(mac.tobytes(), _mac(key, meta_bytes, arrays)):
        raise EntryError(
            "its HMAC does not match this user's key (edited or forged, or written "
            "by someone with another key)"
        )
    doc = json.loads(meta_bytes.decode())
    if type(doc) is not dict or doc.get("format") != FORMAT_VERSION:
        raise EntryError("another entry format")
    if doc.get("key") != digest:
        raise EntryError("written for another key (a copied or renamed file)")
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
        meta = json.dumps(doc, allow_nan=True, separators=(",", ":")).encode()
        mac = _mac(self._key, meta, arrays)
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

"""A folder of fitted DR steps that several processes can share.

:func:`tcca_core.protocol.run_method` takes a ``cache`` mapping: a DR fit that does
not depend on the split (same views, fit rows, grid point and seed) is computed once
for every call given that mapping. A ``dict`` shares within one process;
:class:`FitCache` stores each entry as a pickle in a folder, so that

* entries leave memory (a transductive method over a grid of r and 25 lambda pairs
  holds gigabytes of representations), and
* separate jobs share them: mfeat's settings with 4, 6 and 8 labeled per class fit
  TCCA, KTCCA, DSE and SSMVD on the same rows, so one fit serves all three.

A key is the caller's description of the fit (method, grid point, fit rows, seed, a
digest of the data) plus a digest of this package's source files and of the numeric
libraries' versions: a changed implementation never reads an old entry. Entries are
written to a temporary name and renamed, so a reader never sees a partial one and
concurrent writers of one key (identical contents) are harmless. An unreadable entry
is logged and treated as missing.

Entries are pickles, read back by an unpickler that resolves only the classes of this
package and of numpy, scipy, scikit-learn and tensorly, plain builtin types and the
few reconstructors numpy needs: a foreign or tampered entry that names anything else
(``os.system``, say) is refused before it runs, and refitted.
"""

from __future__ import annotations

import hashlib
import logging
import os
import pickle
import platform
import tempfile
from functools import lru_cache
from importlib import metadata
from pathlib import Path

__all__ = ["FitCache", "code_digest"]

logger = logging.getLogger(__name__)

_LIBRARIES = ("numpy", "scipy", "scikit-learn", "tensorly")

# What an entry may name: classes of these packages (constructed through __new__ and
# __setstate__, never __init__), builtin value types, and numpy's reconstructors.
_CLASS_PACKAGES = frozenset({"tcca_core", "numpy", "scipy", "sklearn", "tensorly"})
_BUILTINS = frozenset(
    {"bool", "bytearray", "bytes", "complex", "dict", "float", "frozenset", "int"}
    | {"list", "object", "range", "set", "slice", "str", "tuple"}
)
_FUNCTIONS = frozenset(
    {
        ("copyreg", "_reconstructor"),
        ("numpy._core.multiarray", "_reconstruct"),
        ("numpy._core.multiarray", "scalar"),
        ("numpy._core.numeric", "_frombuffer"),
        ("numpy.core.multiarray", "_reconstruct"),
        ("numpy.core.multiarray", "scalar"),
        ("numpy.random._pickle", "__bit_generator_ctor"),
        ("numpy.random._pickle", "__generator_ctor"),
        ("numpy.random._pickle", "__randomstate_ctor"),
    }
)


class _Unpickler(pickle.Unpickler):
    def find_class(self, module, name):
        if module == "builtins" and name in _BUILTINS:
            return super().find_class(module, name)
        if (module, name) in _FUNCTIONS:
            return super().find_class(module, name)
        if module.split(".")[0] in _CLASS_PACKAGES:
            obj = super().find_class(module, name)
            if isinstance(obj, type):
                return obj
        raise pickle.UnpicklingError(f"refusing to load global {module}.{name}")


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
    """

    def __init__(self, folder):
        self.folder = Path(folder)
        self.folder.mkdir(parents=True, exist_ok=True)
        self.hits = 0
        self.misses = 0

    def _path(self, key) -> Path:
        name = hashlib.sha256(repr((code_digest(), key)).encode()).hexdigest()
        return self.folder / f"{name}.pkl"

    def __getitem__(self, key):
        value = self._load(key)
        if value is _MISSING:
            raise KeyError(key)
        self.hits += 1
        return value

    def __setitem__(self, key, value) -> None:
        path = self._path(key)
        fd, tmp = tempfile.mkstemp(dir=self.folder, prefix=".part-", suffix=".pkl")
        try:
            with os.fdopen(fd, "wb") as fh:
                pickle.dump(value, fh, protocol=pickle.HIGHEST_PROTOCOL)
            os.replace(tmp, path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
        self.misses += 1

    def _load(self, key):
        path = self._path(key)
        try:
            with open(path, "rb") as fh:
                return _Unpickler(fh).load()
        except FileNotFoundError:
            return _MISSING
        except Exception as exc:  # truncated or foreign file: refit
            logger.warning("fit cache entry %s unreadable (%s); refitting", path, exc)
            return _MISSING


_MISSING = object()

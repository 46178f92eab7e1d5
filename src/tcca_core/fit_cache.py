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
is logged and treated as missing. Entries are pickles: point the cache only at a
folder you trust.
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

    def __contains__(self, key) -> bool:
        return self._path(key).exists()

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
                return pickle.load(fh)
        except FileNotFoundError:
            return _MISSING
        except Exception as exc:  # truncated or foreign file: refit
            logger.warning("fit cache entry %s unreadable (%s); refitting", path, exc)
            return _MISSING


_MISSING = object()

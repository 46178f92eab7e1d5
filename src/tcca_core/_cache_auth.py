"""The fit cache's entry authentication: a per-user HMAC key.

**Entries are authenticated.** The ``__mac__`` member of an entry of
:class:`tcca_core.fit_cache.FitCache` is an HMAC-SHA256 (:func:`_mac`), under a
secret key of the user, of ``__meta__`` and of every array (name, dtype, shape,
order and data, as read). The key lives outside the cache folder
(:func:`default_key_file`: ``$TCCA_FIT_CACHE_KEY_FILE``, else
``~/.config/tcca/fit-cache.key``), is created with mode 0600 on first use, and is
refused when it is a link, another user's file or readable by others. An entry whose
HMAC does not verify (edited, forged, or written with another key) is logged and
refitted, so someone who can write the folder but does not hold the key can cost
refits, never change a result. Users who want to share one folder's fits share the
key file, and so trust each other's entries.

The HMAC is over the ``__meta__`` member, which lists every other member's size and
SHA-256 (:func:`manifest`): a reader checks the HMAC on a few bytes, then each
member's size against the signed list, before it reads any array, and then each
member's digest as it reads it in bounded chunks, before anything is decoded. A
planted file (however large, sparse or not) costs a lookup the central directory and
the meta member, never the file's size in time or memory.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import hmac
import logging
import os
import stat
from pathlib import Path

import numpy as np

from ._io import _create

# The fit cache's logger, so that its log lines keep one name wherever they come from.
logger = logging.getLogger("tcca_core.fit_cache")

KEY_ENV = "TCCA_FIT_CACHE_KEY_FILE"
_KEY_BYTES = 32
_KEY_MAX_BYTES = 4096
# Never follow a link, never block on a FIFO swapped in after the lstat.
_READ_FLAGS = os.O_RDONLY | sum(
    getattr(os, flag, 0) for flag in ("O_NOFOLLOW", "O_NONBLOCK", "O_CLOEXEC")
)


class KeyFileError(OSError):
    """A fit cache key file that cannot be used (a link, readable by others...)."""


def default_key_file() -> Path:
    """Where this user's fit cache key is kept (see :class:`~.fit_cache.FitCache`).

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


def _mac(key: bytes, meta: bytes) -> bytes:
    """Return the HMAC-SHA256 of an entry's ``__meta__`` bytes under ``key``.

    The meta document lists every other member with its size and SHA-256
    (:func:`manifest`), so the MAC covers the entry's stored bytes, and a reader
    checks it, and every size, before reading any array.
    """
    return hmac.new(key, b"tcca fit cache entry\0" + meta, hashlib.sha256).digest()


class _Digest:
    """A write-only file that keeps the SHA-256 and the length of what it is given."""

    def __init__(self):
        self.sha = hashlib.sha256()
        self.size = 0

    def write(self, data) -> int:
        view = memoryview(data).cast("B")
        self.sha.update(view)
        self.size += view.nbytes
        return view.nbytes


def manifest(arrays: dict[str, np.ndarray]) -> dict[str, list]:
    """Return ``{"<name>.npy": [size, sha256 hex]}`` of each array's stored member.

    The bytes are those :func:`numpy.lib.format.write_array` writes, as the entry
    stores them.
    """
    out = {}
    for name in sorted(arrays):
        a = arrays[name]
        if type(a) is not np.ndarray or a.dtype.hasobject:
            raise TypeError(f"member {name!r} is not an array of numbers")
        sink = _Digest()
        np.lib.format.write_array(sink, a, allow_pickle=False)
        out[f"{name}.npy"] = [sink.size, sink.sha.hexdigest()]
    return out

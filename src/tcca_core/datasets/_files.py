"""Files written in a data folder safely: atomic, confined, bounded, verified.

The guarantees of :mod:`tcca_core.datasets._download` that concern one file:

- **Atomic.** Data go to a temporary file beside the target and are renamed
  (``os.replace``) onto it only once verified: the final name never holds a partial
  or unverified file.
- **Confined.** Temporary files have unpredictable names, are created with
  ``O_EXCL`` and ``O_NOFOLLOW`` and written only through the descriptor that created
  them; the one fixed name, a download's ``.part`` (kept to be resumed), is reopened
  with ``O_NOFOLLOW`` and used only when it is a regular file with one link, owned
  by this user; a symbolic link or anything else found there is removed, never
  followed. What is renamed onto the final name is checked to be the file written.
- **Bounded.** A file of known expected size stops at that size plus a margin
  (:func:`_limit`).
- **Clean on a full disk.** A failed write raises :class:`WriteError`: one line
  naming the file, the disk (its mount point and free space) and the cause; the
  partial file is removed.
"""

from __future__ import annotations

import contextlib
import errno
import gzip
import hashlib
import logging
import os
import secrets
import shutil
import stat
import zipfile
import zlib
from collections.abc import Iterator
from pathlib import Path

from ._errors import ChecksumError, DownloadError, WriteError

# the logger of the whole download machinery, as before it was split in modules
logger = logging.getLogger("tcca_core.datasets._download")

_CHUNK = 1 << 20  # 1 MiB: large enough for throughput, small enough for progress


def _mount_point(path: Path) -> Path:
    path = Path(os.path.abspath(path))
    while not path.exists() and path != path.parent:
        path = path.parent
    while not os.path.ismount(path) and path != path.parent:
        path = path.parent
    return path


def _write_error(dest: str | os.PathLike, exc: OSError) -> WriteError:
    """Return a one-line WriteError naming ``dest``, its disk and the cause."""
    dest = Path(dest)
    mount = _mount_point(dest.parent)
    try:
        free = f", {shutil.disk_usage(mount).free / 2**20:.1f} MiB free"
    except OSError:
        free = ""
    if exc.errno in (errno.ENOSPC, errno.EDQUOT):
        why = "the disk is full" if exc.errno == errno.ENOSPC else "disk quota exceeded"
        hint = "free space there or choose another data folder (data_root)"
    elif exc.errno in (errno.EROFS, errno.EACCES, errno.EPERM):
        why = f"the folder is not writable ({exc.strerror or exc})"
        hint = "choose a writable data folder (data_root)"
    else:
        why = exc.strerror or str(exc)
        hint = "check the disk"
    return WriteError(
        f"writing {dest} failed: {why} (disk mounted at {mount}{free}); no partial "
        f"file was left; {hint}"
    )


def _limit(size: int | None) -> int | None:
    """Most bytes a file of expected ``size`` may have: the size plus a margin."""
    return None if size is None else size + max(size // 100, 1 << 16)


# --------------------------------------------------------------- temporary files

_O_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_O_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
# a FIFO planted at a temporary name must not block the open
_O_NONBLOCK = getattr(os, "O_NONBLOCK", 0)
_CREATE = os.O_RDWR | os.O_CREAT | os.O_EXCL | _O_NOFOLLOW | _O_CLOEXEC


def _kind(st: os.stat_result) -> str:
    if stat.S_ISLNK(st.st_mode):
        return "a symbolic link"
    if stat.S_ISDIR(st.st_mode):
        return "a folder"
    if not stat.S_ISREG(st.st_mode):
        return "not a regular file"
    if st.st_nlink != 1:
        return f"a file with {st.st_nlink} hard links"
    return "another user's file"


def _ours(st: os.stat_result, *, any_owner: bool = False) -> bool:
    """Tell whether writing the file writes nothing else.

    It must be a regular file with one name (and this user's, unless
    ``any_owner``): a hard link would make a write land on a file outside the
    folder.
    """
    if not stat.S_ISREG(st.st_mode) or st.st_nlink != 1:
        return False
    return any_owner or not hasattr(os, "geteuid") or st.st_uid == os.geteuid()


def _folder_error(path: Path) -> WriteError:
    return WriteError(
        f"{path} is a folder, not a file; remove it (or move it away) and try again"
    )


def _clear(path: Path, dest: Path) -> None:
    """Remove whatever is at the temporary name ``path``, never following a link."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return
    if stat.S_ISDIR(st.st_mode):
        raise _folder_error(path)
    if not _ours(st):
        logger.warning(
            "%s is %s, not a temporary file of ours: removing it (it is never "
            "written through)",
            path,
            _kind(st),
        )
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass
    except OSError as exc:
        raise _write_error(dest, exc) from exc


def _makedirs(folder: Path, dest: Path | None = None) -> list[Path]:
    """Create ``folder`` and its missing parents; return those created, top first.

    A failure (a read-only data folder) is a :class:`WriteError` naming ``dest``
    (default: ``folder``).
    """
    missing = []
    p = Path(os.path.abspath(folder))
    while not os.path.isdir(p) and p != p.parent:
        missing.append(p)
        p = p.parent
    created = []
    for d in reversed(missing):
        try:
            os.mkdir(d)
            created.append(d)
        except FileExistsError:
            if not os.path.isdir(d):
                raise _folder_error_of(d) from None
        except OSError as exc:
            raise _write_error(dest or folder, exc) from exc
    return created


def _folder_error_of(path: Path) -> WriteError:
    return WriteError(
        f"{path} is a file, not a folder; remove it (or move it away) and try again"
    )


def _new_temporary(dest: Path) -> tuple[int, Path]:
    """Create a file with an unpredictable name beside ``dest``: (descriptor, name).

    The name is never opened again: data go through the descriptor only.
    """
    _makedirs(dest.parent, dest)
    for _ in range(100):
        part = dest.with_name(f".{dest.name}.{secrets.token_hex(6)}.part")
        try:
            return os.open(part, _CREATE, 0o666), part
        except FileExistsError:
            continue
        except OSError as exc:
            raise _write_error(dest, exc) from exc
    raise WriteError(f"cannot create a temporary file beside {dest}")


def _open_resumable(part: Path, dest: Path) -> int:
    """Open a download's fixed ``.part`` name for reading and writing, safely.

    An existing regular file of ours with one link is kept (to be resumed); a
    symbolic link, a hard link, a FIFO or another user's file there is removed and
    a new file created with ``O_EXCL``, so that no write ever lands outside.
    """
    _makedirs(part.parent, dest)
    for _ in range(100):
        try:
            fd = os.open(part, os.O_RDWR | _O_NOFOLLOW | _O_CLOEXEC | _O_NONBLOCK)
        except FileNotFoundError:
            pass
        except OSError as exc:
            if exc.errno == errno.EISDIR:
                raise _folder_error(part) from exc
            if exc.errno not in (errno.ELOOP, errno.ENXIO, errno.EWOULDBLOCK):
                raise _write_error(dest, exc) from exc
            _clear(part, dest)  # a symbolic link (ELOOP), or a FIFO, a socket
        else:
            if _ours(os.fstat(fd)):
                return fd
            os.close(fd)
            _clear(part, dest)
        try:
            return os.open(part, _CREATE, 0o666)
        except FileExistsError:
            continue  # planted again between the removal and the creation
        except OSError as exc:
            raise _write_error(dest, exc) from exc
    raise WriteError(f"cannot create {part}: something keeps putting files there")


def _unlink_quietly(path: Path) -> None:
    with contextlib.suppress(OSError):
        os.unlink(path)


def _fd_read(fd: int, size: int = -1) -> Iterator[bytes]:
    """Blocks of the file open as ``fd`` from its start (at most ``size`` bytes)."""
    os.lseek(fd, 0, os.SEEK_SET)
    left = size if size >= 0 else None
    while left is None or left > 0:
        block = os.read(fd, _CHUNK if left is None else min(_CHUNK, left))
        if not block:
            return
        if left is not None:
            left -= len(block)
        yield block


def _fd_sha256(fd: int) -> str:
    h = hashlib.sha256()
    for block in _fd_read(fd):
        h.update(block)
    return h.hexdigest()


def _verify_fd(fd: int, part: Path, expected: str | None, label: str) -> str:
    """Check the file open as ``fd`` against ``expected`` (delete ``part`` if not)."""
    actual = _fd_sha256(fd)
    if expected is not None and actual != expected.lower():
        _unlink_quietly(part)
        raise ChecksumError(_mismatch(label, expected, actual, deleted=True))
    return actual


def _commit(fd: int, part: Path, dest: Path) -> None:
    """Rename the temporary file onto ``dest``, and check it is the one written.

    Someone who can write in the folder could swap another file (a link to a file
    outside) in at ``part``; then nothing is kept under ``dest``.
    """
    try:
        os.fsync(fd)  # on disk before the rename makes it visible
        os.replace(part, dest)
    except OSError as exc:
        _unlink_quietly(part)
        if exc.errno in (errno.EISDIR, errno.ENOTEMPTY, errno.EEXIST):
            raise _folder_error(dest) from exc
        if isinstance(exc, FileNotFoundError):
            raise WriteError(
                f"writing {dest} failed: its temporary file {part} was removed by "
                "another process while it was written; nothing was kept"
            ) from exc
        raise _write_error(dest, exc) from exc
    mine = os.fstat(fd)
    try:
        st = os.lstat(dest)
    except FileNotFoundError:
        st = None
    if st is None or (st.st_dev, st.st_ino) != (mine.st_dev, mine.st_ino):
        if st is not None and not stat.S_ISDIR(st.st_mode):
            _unlink_quietly(dest)
        raise WriteError(
            f"writing {dest} failed: its temporary file {part} was replaced (by a "
            "symbolic link or another process writing in the data folder) while it "
            "was written; nothing was kept"
        )


class _Sink:
    """Writes to an open temporary file; write errors become :class:`WriteError`.

    The error names ``dest``; at most ``limit`` bytes are accepted (counting the
    ``start`` bytes already there). The descriptor stays open (its owner verifies
    and renames the file through it).
    """

    def __init__(self, fd: int, dest: Path, *, limit=None, label="", start=0):
        self.dest, self.limit, self.label = dest, limit, label
        self.written = start
        # the module's `open` (tests replace it to fill the disk), on the descriptor
        self.fh = open(fd, "wb", closefd=False)  # noqa: SIM115

    def write(self, block: bytes) -> None:
        self.written += len(block)
        if self.limit is not None and self.written > self.limit:
            raise DownloadError(
                f"{self.label or self.dest} is larger than expected: more than "
                f"{self.limit} bytes (the expected size plus a margin); stopped "
                "there (a damaged file, a decompression bomb or another version), "
                "nothing was kept"
            )
        try:
            self.fh.write(block)
        except OSError as exc:
            raise _write_error(self.dest, exc) from exc

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb):
        try:
            self.fh.close()
        except OSError as close_exc:
            if exc is None:
                raise _write_error(self.dest, close_exc) from close_exc
        return False


@contextlib.contextmanager
def _temporary(dest: Path) -> Iterator[tuple[int, Path]]:
    """Yield a new temporary file beside ``dest``: removed unless renamed onto it."""
    fd, part = _new_temporary(dest)
    try:
        yield fd, part
    except BaseException:
        _unlink_quietly(part)
        raise
    finally:
        os.close(fd)


# --------------------------------------------------------------------------- hashing


def sha256_file(path: str | os.PathLike) -> str:
    """Return the hex sha256 of a file, read in 1 MiB chunks."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(_CHUNK), b""):
            h.update(block)
    return h.hexdigest()


def verify_sha256(
    path: str | os.PathLike,
    expected: str | None,
    *,
    label: str | None = None,
    delete: bool = True,
) -> str:
    """Check a file against its pinned sha256 and return the actual checksum.

    Parameters
    ----------
    path : path-like
        File to check.
    expected : str or None
        Pinned checksum; ``None`` only computes it.
    label : str, optional
        Name used in the error message (defaults to ``path``); handy when ``path``
        is a ``.part`` file that stands for a final name.
    delete : bool, default=True
        Delete the file on a mismatch, so that nothing unverified remains.

    Raises
    ------
    ChecksumError
        On a mismatch; the message names the file, the expected and the actual
        checksum.
    """
    actual = sha256_file(path)
    if expected is not None and actual != expected.lower():
        if delete:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(path)
        raise ChecksumError(_mismatch(label or path, expected, actual, delete))
    return actual


def _mismatch(label, expected: str, actual: str, deleted: bool) -> str:
    return (
        f"checksum mismatch for {label}: expected sha256 {expected}, got {actual}"
        + ("; the file has been deleted" if deleted else "")
        + ". The file is corrupted or not the expected version; fetch it again."
    )


# --------------------------------------------------------------------------- helpers


def looks_like_html(path: str | os.PathLike) -> bool:
    """Return True when a file starts like an HTML document (an error page...)."""
    with open(path, "rb") as f:
        return _html_head(f.read(1024))


def _html_head(head: bytes) -> bool:
    head = head.lstrip(b"\xef\xbb\xbf \t\r\n").lower()
    return head.startswith((b"<!doctype html", b"<html", b"<head", b"<?xml"))


# --------------------------------------------------------------------------- copying


def _read_blocks(fin, src) -> Iterator[bytes]:
    """Blocks of ``fin``; a failed read is a DownloadError naming ``src``."""
    while True:
        try:
            block = fin.read(_CHUNK)
        except (OSError, EOFError, zlib.error, zipfile.BadZipFile) as exc:
            raise DownloadError(f"cannot read {src}: {exc}") from exc
        if not block:
            return
        yield block


def copy_verified(
    src: str | os.PathLike,
    dest: str | os.PathLike,
    sha256: str | None,
    size: int | None = None,
) -> Path:
    """Copy ``src`` to ``dest`` atomically, decompressing ``*.gz``, then verify.

    The checksum is of the uncompressed content, as in the official archives. With
    ``size`` (the expected uncompressed size) the copy stops at that size plus a
    margin. A failed write raises :class:`WriteError`, a failed read
    :class:`DownloadError`; neither leaves a partial file.
    """
    src, dest = Path(src), Path(dest)
    opener = gzip.open if src.suffix == ".gz" else open
    try:
        fin = opener(src, "rb")
    except OSError as exc:
        raise DownloadError(f"cannot read {src}: {exc}") from exc
    label = f"{dest} (copied from {src})"
    with fin, _temporary(dest) as (fd, part):
        with _Sink(fd, dest, limit=_limit(size), label=label) as out:
            for block in _read_blocks(fin, src):
                out.write(block)
        _verify_fd(fd, part, sha256, label)
        _commit(fd, part, dest)
    logger.info("copied %s -> %s", src, dest)
    return dest

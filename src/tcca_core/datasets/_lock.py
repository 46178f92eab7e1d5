"""One process at a time writes a data folder: a lock with a bound, and its holder.

A folder is locked with ``.lock`` (POSIX ``flock``). A lock held by another process
is reported (its pid, host and since when) and waited for at most
:data:`LOCK_TIMEOUT` seconds, then :class:`DataLockedError`. The lock file is
removed on release.
"""

from __future__ import annotations

import contextlib
import errno
import json
import logging
import os
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import TextIO

from ._errors import DataLockedError, WriteError
from ._files import (
    _O_CLOEXEC,
    _O_NOFOLLOW,
    _O_NONBLOCK,
    _clear,
    _folder_error,
    _makedirs,
    _ours,
    _unlink_quietly,
    _write_error,
)

# the logger of the whole download machinery, as before it was split in modules
logger = logging.getLogger("tcca_core.datasets._download")

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


def _tell(message: str, progress: TextIO | None) -> None:
    """Log ``message``, and show it on ``progress``, where the progress bars go.

    The pipeline's data job logs to a file: waiting must not look like a hang.
    """
    logger.warning("%s", message)
    if progress is not None:
        with contextlib.suppress(OSError, ValueError):
            print(message, file=progress, flush=True)


def _acquire(
    folder: Path, timeout: float, progress: TextIO | None
) -> tuple[int, list[Path]] | None:
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
                    f"{timeout - waited:.0f} s more",
                    progress,
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
    folder: str | os.PathLike,
    *,
    timeout: float | None = None,
    progress: TextIO | None = None,
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
    The waiting messages also go to ``progress`` (where the progress bars go).
    """
    folder = Path(folder)
    try:
        import fcntl  # noqa: F401
    except ImportError:  # Windows: no flock; concurrent jobs are the user's problem
        yield
        return
    got = _acquire(folder, _lock_timeout() if timeout is None else timeout, progress)
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

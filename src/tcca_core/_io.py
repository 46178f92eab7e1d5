"""Atomic file writes: the one helper every writer of the project uses.

A reader of a final name never sees a partial file: data go to a temporary file in
the same folder, are flushed to disk, and the temporary file is renamed onto the
final name (``os.replace``, atomic on POSIX). A writer killed mid-write (SIGTERM,
SIGKILL, a node failure) leaves at most the temporary file behind, never a truncated
file under the final name, so a rerun redoes the job instead of trusting half a
table. On an exception the temporary file is removed and the old file, if any, is
kept.

The temporary file is created with ``O_CREAT | O_EXCL | O_NOFOLLOW`` under an
unpredictable name and written only through the descriptor that created it; its name
is never opened again. Someone else who can write the folder (a shared fit cache)
therefore cannot make a write land elsewhere by planting or swapping in a symbolic
link: a planted name makes the creation fail (and another name is drawn), and a link
swapped in after the creation is at worst renamed onto the final name, which
receives no data through it.

Standard library only. (Resumable downloads keep their ``.part`` file between
attempts on purpose, so :mod:`tcca_core.datasets._download` streams to its own
``.part`` files and renames them after the checksum.)
"""

from __future__ import annotations

import contextlib
import os
import re
import secrets
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO, cast

__all__ = ["atomic_write", "atomic_write_text", "csv_cell", "write_csv"]

_CREATE_FLAGS = (
    os.O_WRONLY
    | os.O_CREAT
    | os.O_EXCL
    | sum(getattr(os, flag, 0) for flag in ("O_NOFOLLOW", "O_CLOEXEC", "O_BINARY"))
)
_TRIES = 100  # names already taken in a row before giving up (as tempfile does)


def _create(
    folder: Path, prefix: str, suffix: str, mode: int = 0o666
) -> tuple[int, Path]:
    """Create a new file with an unpredictable name in ``folder``.

    Returns its descriptor (open for writing) and its path. ``mode`` is masked by
    the umask (0o666: as for a file opened with ``open(path, "w")``).
    """
    for _ in range(_TRIES):
        part = folder / f"{prefix}{secrets.token_hex(8)}{suffix}"
        try:
            return os.open(part, _CREATE_FLAGS, mode), part
        except FileExistsError:
            continue  # taken (or planted): draw another name
    raise FileExistsError(f"no free temporary name in {folder} after {_TRIES} tries")


@contextlib.contextmanager
def atomic_write(
    path: str | os.PathLike, *, unique_prefix: str | None = None
) -> Iterator[BinaryIO]:
    """Yield a new temporary file beside ``path``; rename it onto ``path`` on success.

    Parameters
    ----------
    path : path-like
        The final name. Its folder is created if needed.
    unique_prefix : str, optional
        Start of the temporary file's name (the rest is random; it ends with
        ``path``'s suffix). By default it is ``.<name>.`` and the name ends with
        ``.part``.

    Yields
    ------
    BinaryIO
        The temporary file, open for writing (and seekable). The writer may close
        it; it must not open the temporary file by name. Writers that pick a format
        from a file name (e.g. matplotlib's ``savefig``) must be told ``path``'s.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    if unique_prefix is None:
        fd, part = _create(path.parent, f".{path.name}.", ".part")
    else:
        fd, part = _create(path.parent, unique_prefix, path.suffix)
    try:
        # The writer gets a duplicate, so that closing (or wrapping) it leaves the
        # descriptor this function syncs.
        with os.fdopen(os.dup(fd), "wb") as fh:
            yield cast(BinaryIO, fh)
        os.fsync(fd)  # on disk before the rename makes it visible
        os.close(fd)
        fd = -1
        os.replace(part, path)
    except BaseException as exc:
        if fd >= 0:
            os.close(fd)
        with contextlib.suppress(OSError):  # gone, or swapped for a directory
            os.unlink(part)  # a link swapped in is removed, not followed
        if isinstance(exc, OSError) and exc.filename is None:
            exc.filename = os.fspath(path)  # a failed write names no file itself
        raise


def atomic_write_text(
    path: str | os.PathLike, text: str, *, encoding: str = "utf-8"
) -> None:
    """Write ``text`` to ``path`` atomically (see :func:`atomic_write`)."""
    with atomic_write(path) as fh:
        fh.write(text.encode(encoding))


# A spreadsheet reads a cell that starts with one of these as a formula (OWASP, "CSV
# injection"); a number ("-0.25", "+1.50") is still read as a number.
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")
_NUMBER = re.compile(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?|[+-]?(inf|nan)", re.I)


def csv_cell(value):
    """Return ``value``, a string that a spreadsheet would run prefixed with ``'``.

    A string starting with ``= + - @``, a tab or a carriage return that is not a
    plain number becomes ``"'" + value`` (shown as written, never evaluated);
    anything else is returned unchanged.
    """
    if (
        isinstance(value, str)
        and value.startswith(_FORMULA_START)
        and not _NUMBER.fullmatch(value)
    ):
        return "'" + value
    return value


def write_csv(frame, path: str | os.PathLike) -> None:
    """Write a pandas DataFrame as CSV (UTF-8, no index, LF line ends), atomically.

    Text cells and headings that a spreadsheet would read as a formula are
    neutralized (:func:`csv_cell`).
    """
    text_columns = [c for c in frame.columns if frame[c].dtype.kind == "O"]
    if text_columns or any(csv_cell(c) is not c for c in frame.columns):
        frame = frame.copy()
        for c in text_columns:
            frame[c] = frame[c].map(csv_cell)
        frame.columns = [csv_cell(c) for c in frame.columns]
    text = frame.to_csv(index=False, lineterminator="\n")
    with atomic_write(path) as fh:
        fh.write(text.encode("utf-8"))

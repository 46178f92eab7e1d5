"""Atomic file writes: the one helper every writer of the project uses.

A reader of a final name never sees a partial file: data go to a temporary file in
the same folder, are flushed to disk, and the temporary file is renamed onto the
final name (``os.replace``, atomic on POSIX). A writer killed mid-write (SIGTERM,
SIGKILL, a node failure) leaves at most the temporary file behind, never a truncated
file under the final name, so a rerun redoes the job instead of trusting half a
table. On an exception the temporary file is removed and the old file, if any, is
kept.

Standard library only. (Resumable downloads keep their ``.part`` file between
attempts on purpose, so :mod:`tcca_core.datasets._download` streams to its own
``.part`` files and renames them after the checksum.)
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path

__all__ = ["atomic_write", "atomic_write_text", "write_csv"]


@contextlib.contextmanager
def atomic_write(
    path: str | os.PathLike, *, unique_prefix: str | None = None
) -> Iterator[Path]:
    """Yield a temporary path beside ``path``; rename it onto ``path`` on success.

    Parameters
    ----------
    path : path-like
        The final name. Its folder is created if needed.
    unique_prefix : str, optional
        Give the temporary file a unique name starting with this prefix (and ending
        with ``path``'s suffix), for folders that several processes write at once
        (the fit cache). By default it is ``<name>.part``, so a killed job's
        leftover is overwritten by its rerun.

    Yields
    ------
    pathlib.Path
        Where to write. Writers that pick a format from the file name (e.g.
        matplotlib's ``savefig``) must be told the format of ``path``.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    if unique_prefix is None:
        part = path.with_name(path.name + ".part")
    else:
        fd, name = tempfile.mkstemp(
            dir=path.parent, prefix=unique_prefix, suffix=path.suffix
        )
        os.close(fd)
        part = Path(name)
    try:
        yield part
        with open(part, "rb") as f:  # on disk before the rename makes it visible
            os.fsync(f.fileno())
        os.replace(part, path)
    except BaseException:
        part.unlink(missing_ok=True)
        raise


def atomic_write_text(
    path: str | os.PathLike, text: str, *, encoding: str = "utf-8"
) -> None:
    """Write ``text`` to ``path`` atomically (see :func:`atomic_write`)."""
    with atomic_write(path) as part:
        part.write_text(text, encoding=encoding)


def write_csv(frame, path: str | os.PathLike) -> None:
    """Write a pandas DataFrame as CSV (UTF-8, no index, LF line ends), atomically."""
    with atomic_write(path) as part:
        frame.to_csv(part, index=False, lineterminator="\n")

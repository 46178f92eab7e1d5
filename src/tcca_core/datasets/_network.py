"""Downloads: resumed, retried, bounded, and shown with a progress bar.

An interrupted download keeps its ``.part`` file; the next attempt (in the same
call, up to ``retries`` times, or in a later call) asks the server for the rest with
an HTTP ``Range`` header and starts over if the server ignores it. When binary
content is expected, an HTML page (a dead host's or a login wall's answer, often
with status 200) is rejected. Progress bars go to the ``progress`` stream the
caller passes (standard error by default).
"""

from __future__ import annotations

import http.client
import logging
import os
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import TextIO

from ._errors import ChecksumError, DownloadError, WriteError
from ._files import (
    _CHUNK,
    _commit,
    _fd_read,
    _html_head,
    _limit,
    _open_resumable,
    _Sink,
    _unlink_quietly,
    _verify_fd,
)

# the logger of the whole download machinery, as before it was split in modules
logger = logging.getLogger("tcca_core.datasets._download")

_USER_AGENT = "tcca-datasets/0.1 (python urllib)"


def _part_path(dest: Path) -> Path:
    return dest.with_name(dest.name + ".part")


def _progress_bar(label: str, total: int | None, start: int, stream: TextIO | None):
    """Return a tqdm progress bar of bytes; silent unless its stream is a terminal."""
    from tqdm.auto import tqdm

    return tqdm(
        total=total,
        initial=start,
        desc=label,
        unit="B",
        unit_scale=True,
        unit_divisor=1024,
        file=stream if stream is not None else sys.stderr,
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
    progress: TextIO | None = None,
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
            url, fd, part, dest, retries, timeout, backoff, size, urlopen, progress
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
    progress: TextIO | None,
) -> None:
    """Up to ``retries`` attempts to complete the file open as ``fd``."""
    last_error: BaseException | None = None
    for attempt in range(1, retries + 1):
        try:
            _download_once(
                url,
                fd,
                dest,
                timeout=timeout,
                urlopen=urlopen,
                limit=_limit(size),
                progress=progress,
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
    progress: TextIO | None = None,
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
        t0 = time.perf_counter()
        with (
            _progress_bar(dest.name, total, offset, progress) as bar,
            _Sink(fd, dest, limit=limit, label=url, start=offset) as out,
        ):
            while True:
                block = resp.read(_CHUNK)
                if not block:
                    break
                out.write(block)
                bar.update(len(block))
    # http.client does not raise when the peer closes early; check the length here
    size = os.fstat(fd).st_size
    # the bar's bytes and speed, for a log (where no bar is drawn)
    seconds = max(time.perf_counter() - t0, 1e-9)
    logger.info(
        "%s: %.1f MiB in %.1f s (%.2f MiB/s)",
        dest.name,
        (size - offset) / 2**20,
        seconds,
        (size - offset) / 2**20 / seconds,
    )
    if total is not None and size != total:
        raise ConnectionError(
            f"connection closed after {size} of {total} bytes of {url}"
        )

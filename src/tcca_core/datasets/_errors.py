"""The data layer's errors, raised by the modules that fetch and write raw files.

They are re-exported by :mod:`tcca_core.datasets` (the public names) and by
:mod:`tcca_core.datasets._download`.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path


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


class AmbiguousMemberError(DownloadError):
    """An archive lacks a member's exact path and holds several of its base name.

    Raised by :func:`extract_members` after extracting the other members, which
    ``extracted`` lists (member path -> destination path).
    """

    extracted: dict[str, Path]

"""Data sets of the paper (SecStr, Ads, NUS-WIDE) and UCI Multiple Features.

>>> from tcca_core.datasets import load
>>> ds = load("ads", root="data")                      # doctest: +SKIP
>>> [v.shape for v in ds.views], ds.info["label_counts"]  # doctest: +SKIP
([(3279, 588), (3279, 495), (3279, 472)], {'0': 2820, '1': 459})

``load(name, root=..., mirror=..., **options)`` downloads (or copies from
``mirror``) the raw files into ``<root>/raw/<dataset>/``, verifies their sha256,
prepares the views into ``<root>/prepared/<name>/`` (``views.npz`` +
``manifest.json``) and returns a :class:`Dataset`. Later calls read the prepared
files directly. The same preparation runs from the command line::

    python -m tcca_core.datasets prepare ads --root data --mirror /path/to/copies

======================  ==========  =================================  ===========
name                    samples     views (dims)                       labels
======================  ==========  =================================  ===========
``"secstr"``            83,679      3 one-hot (105, 105, 105), CSR     2 classes
``"secstr-extra"``      1,189,472   3 one-hot (105, 105, 105), CSR     none
``"ads"``               3,279       3 binary (588, 495, 472), CSR      2 classes
``"nuswide"``           see docs    3 dense (500, 144, 128)            10 classes
``"mfeat"``             2,000       6 dense (76, 216, 64, 240, 47, 6)  10 classes
======================  ==========  =================================  ===========

Each module documents its source, checksums and every choice made
(:mod:`~tcca_core.datasets.secstr`, :mod:`~tcca_core.datasets.ads`,
:mod:`~tcca_core.datasets.nuswide`, :mod:`~tcca_core.datasets.mfeat`).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from . import ads, mfeat, nuswide, secstr
from ._base import Dataset, DatasetSpec
from ._download import (
    ChecksumError,
    DataLockedError,
    DataUnavailableError,
    DownloadError,
    UnsafeArchiveError,
    WriteError,
)
from ._prepared import availability_spec, load_spec, prepare_spec, read_manifest

__all__ = [
    "DATASETS",
    "ChecksumError",
    "DataLockedError",
    "DataUnavailableError",
    "Dataset",
    "DatasetSpec",
    "DownloadError",
    "UnsafeArchiveError",
    "WriteError",
    "availability",
    "load",
    "prepare",
    "read_manifest",
]

DATASETS: dict[str, DatasetSpec] = {
    s.name: s
    for s in (secstr.SPEC, secstr.SPEC_EXTRA, ads.SPEC, nuswide.SPEC, mfeat.SPEC)
}


def _spec(name: str) -> DatasetSpec:
    try:
        return DATASETS[name]
    except KeyError:
        raise ValueError(
            f"unknown data set {name!r}; choose one of {sorted(DATASETS)}"
        ) from None


def load(
    name: str,
    *,
    root: str | os.PathLike = "data",
    mirror: str | os.PathLike | None = None,
    force: bool = False,
    verify: bool = False,
    offline: bool = False,
    **options: Any,
) -> Dataset:
    """Load a data set, fetching and preparing it on first use.

    Parameters
    ----------
    name : {"secstr", "secstr-extra", "ads", "nuswide", "mfeat"}
        Data set.
    root : path-like, default="data"
        Data folder: raw files go to ``<root>/raw/<dataset>/``, prepared views to
        ``<root>/prepared/<name>/``. Nothing is written elsewhere.
    mirror : path-like, optional
        Local folder holding the raw files as ``<mirror>/<dataset>/<file>`` (or
        ``<file>.gz``; checksums are of the uncompressed content). The first
        source, not the only one: what it lacks is downloaded unless ``offline``.
    force : bool, default=False
        Prepare again even if the cached files are up to date.
    verify : bool, default=False
        Check the prepared ``views.npz`` against the sha256 in its manifest even
        when its size and modification time match (by default the digest is
        computed only when they disagree). A corrupted file is prepared again,
        with a warning.
    offline : bool, default=False
        Download nothing: use the raw folder, the mirror and installed packages
        only.
    **options
        Data-set options: ``ads``: ``include_local=True``; ``nuswide``:
        ``selection="single"`` (or ``"any"``), ``split_seed=0``, ``n_train=None``.

    Returns
    -------
    Dataset
        ``.views`` (list of ``(n_samples, d_p)`` arrays or CSR matrices), ``.y``
        (int labels, ``None`` for ``"secstr-extra"``), ``.info`` (source, sha256 of
        the raw files, counts, notes) and ``.splits`` (NUS-WIDE train/test).

    Raises
    ------
    ValueError
        Unknown data set or option, or malformed raw files.
    ChecksumError
        A raw file does not match its pinned sha256 (it has been deleted).
    DataUnavailableError
        The raw files cannot be obtained; the message says what to download, from
        where, and where to put it. Its subclass :class:`DataLockedError`: another
        process held the data set's folder for longer than the bound
        (``TCCA_DATA_LOCK_TIMEOUT``, default 30 min); the message names it.
    WriteError
        A file cannot be written (a full disk, a read-only folder); the message
        names the file and the disk, and no partial file is left.
    """
    return load_spec(
        _spec(name),
        root,
        mirror,
        force=force,
        options=options,
        verify=verify,
        offline=offline,
    )


def prepare(
    name: str,
    root: str | os.PathLike = "data",
    mirror: str | os.PathLike | None = None,
    *,
    force: bool = False,
    verify: bool = False,
    offline: bool = False,
    **options: Any,
) -> Path:
    """Fetch, verify and prepare a data set without loading it.

    Takes the same arguments as :func:`load` and returns the path of the
    manifest ``<root>/prepared/<name>/manifest.json``.
    """
    return prepare_spec(
        _spec(name),
        root,
        mirror,
        force=force,
        options=options,
        verify=verify,
        offline=offline,
    )


def availability(
    name: str,
    *,
    root: str | os.PathLike = "data",
    mirror: str | os.PathLike | None = None,
    offline: bool = False,
) -> tuple[bool, str]:
    """Tell cheaply whether :func:`load` can be expected to succeed.

    Looks only at file names (no download, no hashing): the prepared files, the
    raw files in ``<root>/raw/``, the mirror, archives placed by hand. Unless
    ``offline``, a data set with a download address counts as available (the
    address is not checked). NUS-WIDE counts as available only when its files are
    local.

    Returns
    -------
    (bool, str)
        Availability and the reason on one line (what was found, or what is
        missing, where it was looked for, and what to download and where to put it).
    """
    return availability_spec(_spec(name), root, mirror, offline=offline)

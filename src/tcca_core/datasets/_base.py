"""What a data set is: its spec, what its build returns, the loaded result.

A data set module provides a :class:`DatasetSpec`: how to fetch its raw files
(``fetch``), how to turn them into views and labels (``build``) and, optionally,
what to do at load time (``finish``, e.g. draw a random split). The rest is done
identically for every data set by :mod:`._prepared`: ``<root>/raw/<dataset>/`` holds
the verified raw files, ``<root>/prepared/<name>/`` the prepared views and their
manifest. This module holds the types only and imports nothing of the package.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np


@dataclass
class Dataset:
    """A multi-view data set: views, labels and provenance.

    Attributes
    ----------
    name : str
        Registry name (``"secstr"``, ``"ads"``, ...).
    views : list of ndarray or scipy.sparse.csr_matrix
        One ``(n_samples, d_p)`` matrix per view; rows are samples. Sparse data
        sets (SecStr, Ads) are CSR, the others dense ``float64``.
    y : ndarray of shape (n_samples,) or None
        Integer labels (``None`` for unlabeled sets such as ``"secstr-extra"``);
        ``info["classes"][k]`` names label ``k``.
    info : dict
        Provenance and summary: ``source``, ``sha256`` (per raw file),
        ``n_samples``, ``view_dims``, ``view_names``, ``label_counts``, ``classes``,
        ``counts`` (n_samples, label counts and any data-set specific counts),
        ``options``, ``notes``, ``manifest`` (path), ``extra`` (stored arrays), plus
        the data set's own facts (see its module).
    splits : dict of str to ndarray
        Named index arrays into the rows (e.g. NUS-WIDE's ``"train"``/``"test"``).
    """

    name: str
    views: list
    y: np.ndarray | None
    info: dict
    splits: dict[str, np.ndarray] = field(default_factory=dict)

    @property
    def n_samples(self) -> int:
        """Number of samples (rows of every view)."""
        return int(self.views[0].shape[0])

    @property
    def view_dims(self) -> list[int]:
        """Number of features of each view."""
        return [int(v.shape[1]) for v in self.views]

    def __repr__(self) -> str:
        labels = "unlabeled" if self.y is None else f"{len(np.unique(self.y))} classes"
        return (
            f"Dataset({self.name!r}, n_samples={self.n_samples}, "
            f"view_dims={self.view_dims}, {labels})"
        )


@dataclass
class Prepared:
    """What a data set's ``build`` function returns.

    Attributes
    ----------
    views : list of ndarray or csr_matrix
    y : ndarray or None
    view_names : list of str
    classes : list of str or None
        ``classes[k]`` names label ``k``.
    extra : dict of str to ndarray
        Further arrays stored with the views (e.g. original row numbers).
    info : dict
        JSON-serialisable facts for the manifest (``notes`` is a list of str).
    """

    views: list
    y: np.ndarray | None
    view_names: list[str]
    classes: list[str] | None = None
    extra: dict[str, np.ndarray] = field(default_factory=dict)
    info: dict = field(default_factory=dict)


@dataclass(frozen=True)
class DatasetSpec:
    """How to obtain and prepare one data set (see the module docstring).

    Attributes
    ----------
    name : str
        Registry name, also the folder under ``<root>/prepared/``.
    raw_subdir : str
        Folder under ``<root>/raw/`` and ``<mirror>/`` (shared by SecStr and
        SecStr-extra).
    title : str
        One-line description.
    source : dict
        JSON-serialisable provenance (canonical origin, download addresses).
    fetch : callable
        ``fetch(raw_dir, mirror, offline=False) -> (paths, pinned)``: verified raw
        file paths by name and the pinned sha256 by name (``None`` where nothing is
        pinned); the mirror first, then downloads unless ``offline``.
    build : callable
        ``build(paths, **prepare_options) -> Prepared``.
    prepare_options : mapping
        Options that change the prepared files, with their defaults.
    load_options : mapping
        Options applied at load time by ``finish``, with their defaults.
    finish : callable, optional
        ``finish(dataset, **load_options) -> Dataset``.
    pinned : callable, optional
        ``pinned() -> {raw file name: sha256}`` when every input is pinned; lets an
        up-to-date cache be accepted without touching (or re-hashing) raw files.
    status : callable, optional
        ``status(raw_dir, mirror, offline=False) -> (ok, reason)``: whether the raw
        files can be had, judged from local file names only (no hashing, no
        network); ``reason`` is one line.
    instructions : str
        How to obtain the raw files by hand (used in error messages and docs).
    hint : str
        The same on one line: what to download and where to put it (``<root>``
        stands for the data folder), for one-line messages.
    max_samples : int or None
        Most rows the prepared data set can have (an upper bound where it depends
        on options: NUS-WIDE's on its ``selection``), known without its files.
    view_dims : tuple of (str, int)
        (view name, dimension) of each view, in order (upper bounds: Ads' first view
        has 587 columns with ``include_local=False``).
    parts : tuple of str
        Named parts of the data set (``Dataset.splits``, e.g. NUS-WIDE's
        ``"train"`` and ``"test"``), which a pipeline setting's ``pool`` may name.
    """

    name: str
    raw_subdir: str
    title: str
    source: dict
    fetch: Callable[..., tuple[dict[str, Path], dict[str, str | None]]]
    build: Callable[..., Prepared]
    prepare_options: Mapping[str, Any] = field(default_factory=dict)
    load_options: Mapping[str, Any] = field(default_factory=dict)
    finish: Callable[..., Dataset] | None = None
    pinned: Callable[[], dict[str, str | None]] | None = None
    status: Callable[..., tuple[bool, str]] | None = None
    instructions: str = ""
    hint: str = ""
    max_samples: int | None = None
    view_dims: tuple[tuple[str, int], ...] = ()
    parts: tuple[str, ...] = ()

    def shape(self) -> tuple[int, list[tuple[str, int]]] | None:
        """(most rows, [(view name, dimension), ...]) without the files, if known."""
        if self.max_samples is None or not self.view_dims:
            return None
        return self.max_samples, list(self.view_dims)

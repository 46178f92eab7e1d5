"""Fetch, prepare and load one data set from its :class:`~._base.DatasetSpec`.

An up-to-date folder is read without taking the lock or writing anything, so
prepared data on read-only storage (or in another user's folder) load. Prepared
files that fail to read are prepared again once, with a warning.
"""

from __future__ import annotations

import json
import logging
import os
import time
import zipfile
import zlib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import scipy.sparse as sp

from .._io import atomic_write
from ._base import Dataset, DatasetSpec, Prepared, _jsonable, split_options
from ._files import _write_error, sha256_file
from ._lock import file_lock
from ._manifest import (
    FORMAT_VERSION,
    MANIFEST,
    _cache_is_valid,
    _input_record,
    _label_counts,
    _stale_reason,
    read_manifest,
)
from ._views_file import (
    VIEWS_FILE,
    UnsafeFileError,
    _read_view,
    _view_arrays,
    _write_npz,
)

# The logger of the prepared-file machinery, as before _base.py was split: the
# messages (docs/troubleshooting.md quotes one) keep their logger name.
logger = logging.getLogger("tcca_core.datasets._base")


# --------------------------------------------------------------------------- prepare


def _check_prepared(name: str, prep: Prepared) -> None:
    n = {int(v.shape[0]) for v in prep.views}
    if len(n) != 1:
        raise RuntimeError(f"{name}: views have different numbers of rows {sorted(n)}")
    if prep.y is not None and len(prep.y) != n.pop():
        raise RuntimeError(
            f"{name}: {len(prep.y)} labels for {prep.views[0].shape[0]} rows"
        )
    if len(prep.view_names) != len(prep.views):
        raise RuntimeError(
            f"{name}: {len(prep.view_names)} names for {len(prep.views)} views"
        )


def prepare_spec(
    spec: DatasetSpec,
    root: str | os.PathLike = "data",
    mirror: str | os.PathLike | None = None,
    *,
    force: bool = False,
    options: Mapping[str, Any] | None = None,
    verify: bool = False,
    offline: bool = False,
) -> Path:
    """Fetch, verify and prepare one data set; return the manifest path.

    See :func:`tcca_core.datasets.prepare`.
    """
    prep_opts, _ = split_options(spec, options or {})
    root = Path(root)
    raw_dir = root / "raw" / spec.raw_subdir
    pdir = root / "prepared" / spec.name
    # pinned checksums are known without touching the raw files: check first, and
    # without the lock: reading up-to-date files opens nothing for writing
    # (read-only storage, another user's folder)
    pinned = spec.pinned() if spec.pinned is not None else None
    if (
        not force
        and pinned is not None
        and _stale_reason(spec, pdir, prep_opts, pinned, verify) is None
    ):
        logger.info("%s: prepared files are up to date in %s", spec.name, pdir)
        return pdir / MANIFEST
    with file_lock(pdir):
        t0 = time.perf_counter()
        if (
            not force
            and pinned is not None
            and _cache_is_valid(spec, pdir, prep_opts, pinned, verify)
        ):
            logger.info("%s: prepared files are up to date in %s", spec.name, pdir)
            return pdir / MANIFEST
        paths, pinned = spec.fetch(raw_dir=raw_dir, mirror=mirror, offline=offline)
        # unpinned inputs (NUS-WIDE) can only be compared once they are located
        if (
            not force
            and spec.pinned is None
            and _cache_is_valid(spec, pdir, prep_opts, pinned, verify)
        ):
            logger.info("%s: prepared files are up to date in %s", spec.name, pdir)
            return pdir / MANIFEST
        t1 = time.perf_counter()
        logger.info("%s: raw files ready in %.1f s; preparing", spec.name, t1 - t0)
        inputs = {n: _input_record(Path(p), pinned.get(n)) for n, p in paths.items()}
        prep = spec.build(paths, **prep_opts)
        _check_prepared(spec.name, prep)

        arrays: dict[str, np.ndarray] = {}
        formats = []
        for p, X in enumerate(prep.views):
            arrays.update(_view_arrays(p, X))
            formats.append("csr" if sp.issparse(X) else "dense")
        if prep.y is not None:
            arrays["y"] = np.asarray(prep.y, dtype=np.int64)
        for k, v in prep.extra.items():
            arrays[f"extra_{k}"] = v
        npz = pdir / VIEWS_FILE
        try:  # invalid until rewritten below
            (pdir / MANIFEST).unlink(missing_ok=True)
        except OSError as exc:
            raise _write_error(pdir / MANIFEST, exc) from exc
        _write_npz(npz, arrays)

        manifest = {
            "format_version": FORMAT_VERSION,
            "dataset": spec.name,
            "title": spec.title,
            "source": spec.source,
            "options": prep_opts,
            "inputs": inputs,
            "n_samples": int(prep.views[0].shape[0]),
            "view_names": list(prep.view_names),
            "view_dims": [int(v.shape[1]) for v in prep.views],
            "view_formats": formats,
            "view_nnz": [
                int(v.nnz) if sp.issparse(v) else int(np.count_nonzero(v))
                for v in prep.views
            ],
            "classes": prep.classes,
            "label_counts": _label_counts(prep.y, prep.classes),
            "extra": sorted(prep.extra),
            "info": _jsonable(prep.info),
            "files": {
                VIEWS_FILE: {
                    "sha256": sha256_file(npz),
                    "size": npz.stat().st_size,
                    "mtime_ns": npz.stat().st_mtime_ns,
                }
            },
        }
        try:
            text = json.dumps(manifest, indent=1, sort_keys=False) + "\n"
            with atomic_write(pdir / MANIFEST) as part:
                part.write(text.encode("utf-8"))
        except OSError as exc:
            raise _write_error(pdir / MANIFEST, exc) from exc
        logger.info(
            "%s: prepared %d samples, view dims %s in %.1f s -> %s",
            spec.name,
            manifest["n_samples"],
            manifest["view_dims"],
            time.perf_counter() - t1,
            pdir,
        )
        return pdir / MANIFEST


def read_prepared(spec: DatasetSpec, manifest_path: Path) -> Dataset:
    """Load the prepared views and labels described by a manifest."""
    m = read_manifest(manifest_path)
    if m is None:
        raise RuntimeError(f"cannot read the manifest {manifest_path}")
    npz_path = Path(manifest_path).parent / VIEWS_FILE
    # Never unpickle: the prepared files hold numbers and strings only, and an object
    # array in them (a pickle, which can run code when loaded) is refused.
    try:
        with np.load(npz_path, allow_pickle=False) as npz:
            views = [_read_view(npz, p, fmt) for p, fmt in enumerate(m["view_formats"])]
            y = npz["y"] if "y" in npz.files else None
            extra = {k: npz[f"extra_{k}"] for k in m.get("extra", [])}
    except ValueError as exc:
        if "allow_pickle" not in str(exc):
            raise
        raise UnsafeFileError(
            f"refusing to load {npz_path}: it holds a pickled object array, which "
            "could run code when loaded (prepared files hold numbers only; they are "
            "read with allow_pickle=False). The file was not written by "
            f"tcca_core.datasets; delete {npz_path.parent} and prepare the data set "
            "again"
        ) from None
    info = {
        "name": spec.name,
        "title": m.get("title"),
        "source": m.get("source"),
        "sha256": {k: v["sha256"] for k, v in m.get("inputs", {}).items()},
        "n_samples": m["n_samples"],
        "view_names": m["view_names"],
        "view_dims": m["view_dims"],
        "classes": m.get("classes"),
        "label_counts": m.get("label_counts"),
        "options": m.get("options"),
        "manifest": str(manifest_path),
        **m.get("info", {}),
    }
    # one place for the counts of every data set (NUS-WIDE adds its selection counts)
    info["counts"] = {
        "n_samples": m["n_samples"],
        "label_counts": m.get("label_counts"),
        **m.get("info", {}).get("counts", {}),
    }
    info["extra"] = extra
    return Dataset(name=spec.name, views=views, y=y, info=info)


# What reading a damaged views.npz raises (flipped bits fail the zip's CRC check).
_READ_ERRORS = (zipfile.BadZipFile, zlib.error, EOFError, OSError, KeyError)


def load_spec(
    spec: DatasetSpec,
    root: str | os.PathLike = "data",
    mirror: str | os.PathLike | None = None,
    *,
    force: bool = False,
    options: Mapping[str, Any] | None = None,
    verify: bool = False,
    offline: bool = False,
) -> Dataset:
    """Prepare (if needed) and load one data set (see ``datasets.load``).

    Prepared files that fail to read (corrupted on disk) are prepared again once,
    with a warning.
    """
    options = dict(options or {})
    _, load_opts = split_options(spec, options)
    manifest = prepare_spec(
        spec, root, mirror, force=force, options=options, verify=verify, offline=offline
    )
    try:
        ds = read_prepared(spec, manifest)
    except (*_READ_ERRORS, ValueError) as exc:
        if isinstance(exc, UnsafeFileError | PermissionError):
            raise  # a pickle is refused, not replaced; a permission is not damage
        logger.warning(
            "%s: the prepared file %s is corrupted (%s: %s); preparing it again",
            spec.name,
            Path(manifest).parent / VIEWS_FILE,
            type(exc).__name__,
            exc,
        )
        manifest = prepare_spec(
            spec, root, mirror, force=True, options=options, offline=offline
        )
        ds = read_prepared(spec, manifest)
    if spec.finish is not None:
        ds = spec.finish(ds, **load_opts)
    return ds


def availability_spec(
    spec: DatasetSpec,
    root: str | os.PathLike = "data",
    mirror: str | os.PathLike | None = None,
    offline: bool = False,
) -> tuple[bool, str]:
    """Cheap check (no download, no hashing) of whether a data set can be loaded."""
    pdir = Path(root) / "prepared" / spec.name
    m = read_manifest(pdir / MANIFEST)
    if (
        m is not None
        and m.get("dataset") == spec.name
        and (pdir / VIEWS_FILE).is_file()
    ):
        return True, f"prepared in {pdir}"
    if spec.status is None:
        return True, "no local check available"
    return spec.status(
        raw_dir=Path(root) / "raw" / spec.raw_subdir, mirror=mirror, offline=offline
    )

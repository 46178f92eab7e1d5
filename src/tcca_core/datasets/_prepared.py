"""The prepared data of a data set: its files, whether they are up to date, making them.

Everything a data set's :class:`~._base.DatasetSpec` does not say itself is done here,
identically for every data set (``datasets.load`` and ``datasets.prepare`` hand the
spec down, and it comes back as a :class:`~._base.Dataset`):

- ``<root>/prepared/<name>/views.npz`` holds the views (dense arrays, or CSR
  components in the smallest integer types, one-hot views without a data array), the
  labels and any extra arrays, with fixed zip timestamps so that its bytes depend on
  the arrays only. It is read with ``allow_pickle=False``: it never holds an object
  array (:class:`UnsafeFileError`).
- ``<root>/prepared/<name>/manifest.json`` describes them (shapes, label counts,
  sha256 of the inputs, source, options) and is written last, so its presence means
  the prepared files are complete. It is the target of the Snakemake rule.
- The prepared files are reused when the manifest's format version, options and input
  checksums still match what the code pins, and ``views.npz`` is the file the manifest
  describes: same size and modification time (cheap), or, when the time differs or on
  request (``verify=True``), the same sha256. Otherwise the data set is prepared
  again; a corrupted ``views.npz`` (a digest mismatch, or a file that fails to read:
  zip CRC errors catch flipped bits) is prepared again with a warning.
- An up-to-date folder is read without taking the lock or writing anything, so
  prepared data on read-only storage (or in another user's folder) load.

The raw files come from the spec's ``fetch`` (through :mod:`._download`), the views
from its ``build``.
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
from . import _download
from ._base import Dataset, DatasetSpec, Prepared
from ._files import _write_error, sha256_file
from ._lock import file_lock

logger = logging.getLogger(__name__)

FORMAT_VERSION = 1
MANIFEST = "manifest.json"
VIEWS_FILE = "views.npz"


# --------------------------------------------------------------------------- options


def _jsonable(value):
    return json.loads(json.dumps(value))


def split_options(spec: DatasetSpec, options: Mapping[str, Any]):
    """Split user options into (prepare, load) dicts with defaults filled in."""
    unknown = set(options) - set(spec.prepare_options) - set(spec.load_options)
    if unknown:
        allowed = sorted(set(spec.prepare_options) | set(spec.load_options))
        raise ValueError(
            f"unknown option(s) {sorted(unknown)} for data set {spec.name!r}; "
            f"allowed: {allowed or 'none'}"
        )
    prep = {k: options.get(k, v) for k, v in spec.prepare_options.items()}
    load = {k: options.get(k, v) for k, v in spec.load_options.items()}
    try:
        prep = _jsonable(prep)
    except TypeError as exc:
        raise ValueError(
            f"options of {spec.name!r} must be JSON values: {exc}"
        ) from exc
    return prep, load


# --------------------------------------------------------------------------- views.npz


class UnsafeFileError(ValueError):
    """A prepared file holds pickled data; it is refused instead of unpickled."""


def _write_npz(path: Path, arrays: Mapping[str, np.ndarray]) -> None:
    """Write an ``.npz`` whose bytes depend only on the arrays (fixed timestamps).

    A failed write (a full disk) leaves no partial file and raises ``WriteError``.
    """
    try:
        with (
            atomic_write(path) as part,
            zipfile.ZipFile(part, "w", compression=zipfile.ZIP_DEFLATED) as zf,
        ):
            for key, arr in arrays.items():
                info = zipfile.ZipInfo(f"{key}.npy", date_time=(1980, 1, 1, 0, 0, 0))
                info.compress_type = zipfile.ZIP_DEFLATED
                info.external_attr = 0o644 << 16
                with zf.open(info, "w", force_zip64=True) as f:
                    np.lib.format.write_array(f, np.asarray(arr), allow_pickle=False)
    except OSError as exc:
        raise _write_error(path, exc) from exc


def _small_uint(values: np.ndarray, bound: int) -> np.ndarray:
    """``values`` (all < ``bound``) in the smallest unsigned dtype that holds them."""
    for dtype in (np.uint8, np.uint16, np.uint32):
        if bound <= np.iinfo(dtype).max + 1:
            return values.astype(dtype)
    return values.astype(np.int64)


def _view_arrays(p: int, X) -> dict[str, np.ndarray]:
    if sp.issparse(X):
        X = sp.csr_matrix(X)
        X.sort_indices()
        # CSR as column numbers and per-row counts in the smallest integer types:
        # SecStr-extra's 18M indices then take 1 byte each, and write/load fast
        out = {
            f"view{p}_rownnz": _small_uint(np.diff(X.indptr), X.shape[1] + 1),
            f"view{p}_indices": _small_uint(X.indices, X.shape[1]),
            f"view{p}_shape": np.asarray(X.shape, dtype=np.int64),
        }
        # one-hot and term-presence views are all ones: store no data array
        if not (X.data.size and np.all(X.data == 1)):
            out[f"view{p}_data"] = X.data
        out[f"view{p}_dtype"] = np.asarray(str(X.dtype))
        return out
    return {f"view{p}": np.ascontiguousarray(X)}


def _read_view(npz, p: int, fmt: str):
    if fmt == "dense":
        return npz[f"view{p}"]
    shape = tuple(int(s) for s in npz[f"view{p}_shape"])
    counts = npz[f"view{p}_rownnz"]
    nnz = int(counts.sum(dtype=np.int64))
    idx_dtype = np.int32 if max(nnz, shape[1]) < 2**31 else np.int64
    indptr = np.zeros(shape[0] + 1, dtype=idx_dtype)
    np.cumsum(counts, out=indptr[1:], dtype=idx_dtype)
    indices = npz[f"view{p}_indices"].astype(idx_dtype)
    dtype = np.dtype(str(npz[f"view{p}_dtype"]))
    if f"view{p}_data" in npz.files:
        data = npz[f"view{p}_data"]
    else:
        data = np.ones(indices.shape[0], dtype=dtype)
    return sp.csr_matrix((data, indices, indptr), shape=shape)


# --------------------------------------------------------------------------- manifest


def _label_counts(y: np.ndarray | None, classes) -> dict | None:
    if y is None:
        return None
    values, counts = np.unique(y, return_counts=True)
    return {str(int(v)): int(c) for v, c in zip(values, counts, strict=True)}


def _input_record(path: Path, pinned: str | None) -> dict:
    st = path.stat()
    return {
        "sha256": pinned if pinned is not None else sha256_file(path),
        "pinned": pinned is not None,
        "size": st.st_size,
        "mtime_ns": st.st_mtime_ns,
        "path": str(path.resolve()),
    }


def read_manifest(path: str | os.PathLike) -> dict | None:
    """Return the parsed manifest, or ``None`` when it is missing or unreadable.

    Valid JSON of the wrong shape (a list, a field of the wrong type) is
    unreadable too: the data set is then prepared again.
    """
    try:
        with open(path, encoding="utf-8") as f:
            m = json.load(f)
    except (OSError, ValueError, RecursionError):  # deep nesting: RecursionError
        return None
    why = _manifest_shape_problem(m)
    if why is not None:
        logger.info("%s has the wrong shape (%s)", path, why)
        return None
    return m


def _manifest_shape_problem(m: Any) -> str | None:
    """Say which field of a parsed manifest has the wrong type (None: none)."""

    def is_int(v) -> bool:
        return isinstance(v, int) and not isinstance(v, bool)

    def list_of(kind, v) -> bool:
        return isinstance(v, list) and all(isinstance(x, kind) for x in v)

    if not isinstance(m, dict):
        return f"a {type(m).__name__}, not an object"
    required = {
        "format_version": is_int,
        "dataset": lambda v: isinstance(v, str),
        "options": lambda v: isinstance(v, dict),
        "inputs": lambda v: isinstance(v, dict),
        "n_samples": is_int,
        "view_names": lambda v: list_of(str, v),
        "view_dims": lambda v: isinstance(v, list) and all(is_int(x) for x in v),
        "view_formats": lambda v: list_of(str, v) and set(v) <= {"dense", "csr"},
        "files": lambda v: isinstance(v, dict),
    }
    optional = {
        "extra": lambda v: list_of(str, v),
        "info": lambda v: isinstance(v, dict),
        "classes": lambda v: v is None or list_of(str, v),
        "label_counts": lambda v: v is None or isinstance(v, dict),
    }
    for key, ok in required.items():
        if key not in m or not ok(m[key]):
            return f"{key!r} is missing or of the wrong type"
    for key, ok in optional.items():
        if key in m and not ok(m[key]):
            return f"{key!r} is of the wrong type"
    for name, rec in m["inputs"].items():
        if not (
            isinstance(rec, dict)
            and isinstance(rec.get("sha256"), str)
            and isinstance(rec.get("path", ""), str)
            and all(is_int(rec.get(k, 0)) for k in ("size", "mtime_ns"))
        ):
            return f"input {name!r} is of the wrong shape"
    views = m["files"].get(VIEWS_FILE)
    if not (
        isinstance(views, dict)
        and is_int(views.get("size"))
        and isinstance(views.get("sha256", ""), str)
        and is_int(views.get("mtime_ns", 0))
    ):
        return f"files[{VIEWS_FILE!r}] is missing or of the wrong shape"
    return None


class _Corrupted(str):
    """A reason to prepare again that means the prepared files were damaged."""


def _stale_reason(
    spec: DatasetSpec, pdir: Path, options: dict, pinned, verify: bool = False
) -> str | None:
    """Why the prepared files cannot be used (``None``: they are up to date)."""
    m = read_manifest(pdir / MANIFEST)
    if m is None:
        return "no readable manifest"
    why = None
    if m.get("format_version") != FORMAT_VERSION:
        why = "format version changed"
    elif m.get("dataset") != spec.name:
        why = "manifest is for another data set"
    elif m.get("options") != options:
        why = f"options changed ({m.get('options')} -> {options})"
    else:
        inputs = m.get("inputs", {})
        for fname, sha in pinned.items():
            rec = inputs.get(fname)
            if rec is None or (sha is not None and rec.get("sha256") != sha):
                why = f"input {fname} changed (pinned checksum differs)"
                break
        else:
            for rec in inputs.values():
                if rec.get("pinned"):
                    continue
                p = Path(rec.get("path", ""))
                if not p.is_file():
                    continue  # raw files may be deleted once prepared
                st = p.stat()
                if (st.st_size, st.st_mtime_ns) != (
                    rec.get("size"),
                    rec.get("mtime_ns"),
                ):
                    if sha256_file(p) != rec.get("sha256"):
                        why = f"input {p} changed (sha256 differs from the manifest)"
                        break
        if why is None:
            why = _views_file_problem(pdir / VIEWS_FILE, m, verify)
    return why


def _views_file_problem(f: Path, manifest: dict, verify: bool) -> str | None:
    """Say why ``f`` is not the file the manifest describes (None if it is).

    Size and mtime are compared, then the sha256 when the mtime differs (or was not
    recorded) or ``verify`` asks.
    """
    rec = manifest.get("files", {}).get(VIEWS_FILE, {})
    try:
        st = f.stat()
    except OSError:
        return f"{f} is missing"
    if st.st_size != rec.get("size"):
        return f"{f} has the wrong size"
    if (verify or st.st_mtime_ns != rec.get("mtime_ns")) and "sha256" in rec:
        if sha256_file(f) != rec["sha256"]:
            return _Corrupted(
                f"{f} is corrupted (its sha256 differs from the manifest's)"
            )
    return None


def _log_stale(spec: DatasetSpec, why: str) -> None:
    if isinstance(why, _Corrupted):
        logger.warning("%s: %s; preparing it again", spec.name, why)
    else:
        logger.info("%s: preparing again: %s", spec.name, why)


def _cache_is_valid(
    spec: DatasetSpec, pdir: Path, options: dict, pinned, verify: bool = False
) -> bool:
    why = _stale_reason(spec, pdir, options, pinned, verify)
    if why:
        _log_stale(spec, why)
        return False
    return True


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
    return _prepare(
        spec, Path(root), mirror, prep_opts, force=force, verify=verify, offline=offline
    )


def _prepare(
    spec: DatasetSpec,
    root: Path,
    mirror: str | os.PathLike | None,
    prep_opts: dict,
    *,
    force: bool,
    verify: bool,
    offline: bool,
) -> Path:
    """:func:`prepare_spec` for options already split and checked."""
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
    with file_lock(pdir, progress=_download.PROGRESS_STREAM):
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
    prep_opts, load_opts = split_options(spec, options or {})
    root = Path(root)
    manifest = _prepare(
        spec, root, mirror, prep_opts, force=force, verify=verify, offline=offline
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
        manifest = _prepare(
            spec, root, mirror, prep_opts, force=True, verify=False, offline=offline
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

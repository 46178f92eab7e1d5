"""The ``views.npz`` of a prepared data set: its arrays, written and read back.

Views are stored as dense arrays or as CSR components in the smallest integer types
(one-hot views without a data array), with fixed zip timestamps so that the bytes
depend on the arrays only. The file is read with ``allow_pickle=False``: it never
holds an object array (:class:`UnsafeFileError`).
"""

from __future__ import annotations

import zipfile
from collections.abc import Mapping
from pathlib import Path

import numpy as np
import scipy.sparse as sp

from .._io import atomic_write
from ._files import _write_error

VIEWS_FILE = "views.npz"


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

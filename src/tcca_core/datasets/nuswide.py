"""NUS-WIDE mammal subset (paper section 5.1.3): three visual views, 10 concepts.

Source
------
NUS-WIDE (Chua et al., CIVR 2009), Lab for Media Search, National University of
Singapore: https://lms.comp.nus.edu.sg/wp-content/uploads/2019/research/nuswide/NUS-WIDE.html
(the archives used to be served from http://dl.nextcenter.org/public/nuswide/).
Two official archives are needed, ``NUS_WID_Low_Level_Features.rar`` and
``Groundtruth.zip`` (plus ``ImageList.zip`` only in the mixed layout below). The
host is often down, so the loader also accepts the archives, or their extracted
folders, placed by hand in ``<root>/raw/nuswide/`` (or ``<mirror>/nuswide/``); the
files are looked up by name up to four folder levels deep, so
``NUS_WID_Low_Level_Features/Low_Level_Features/...`` works too. No checksums of
the official files are published; the sha256 of every input is computed and
recorded in the manifest (and re-checked when a file changes).

Files and formats (as in the official archives)
-----------------------------------------------
- ``Low_Level_Features/BoW_int.dat``: 269,648 lines, 500 space-separated integers
  (bag of visual words on SIFT);
- ``Low_Level_Features/Normalized_CORR.dat``: 144 floats per line (colour
  auto-correlogram);
- ``Low_Level_Features/Normalized_WT.dat``: 128 floats per line (wavelet texture);
- ``Groundtruth/AllLabels/Labels_<concept>.txt``: 269,648 lines of ``0``/``1``.

All of these are in the order of ``ImageList/Imagelist.txt`` ("all" order). Some
copies split the features by the official partition instead (161,789 training and
107,859 test images): ``BoW_Train_int.dat``/``BoW_Test_int.dat``,
``Train_Normalized_CORR.dat``/``Test_Normalized_CORR.dat``, ... with
``Groundtruth/TrainTestLabels/Labels_<concept>_{Train,Test}.txt``. Both layouts are
read; rows are then in "split" order (training images, then test images). When
the views come in different layouts, ``ImageList/{Imagelist,TrainImagelist,
TestImagelist}.txt`` map one order onto the other.

Selection
---------
The 10 mammal concepts are bear, cat, cow, dog, elk, fox, horses, tiger, whales and
zebra (the official label files say ``horses`` and ``whales``, the paper "horse"
and "whale"). NUS-WIDE is multi-label; the paper's task is 10-class single-label
annotation, so by default (``selection="single"``) the images positive for
*exactly one* of the 10 concepts are kept, labeled with that concept.
``selection="any"`` keeps every image positive for at least one concept and labels
it with the first of them in the order above. The paper keeps 11,189 images; the
counts obtained (single, any, multi-label) are stored in ``info["counts"]`` and in
the manifest. Whether the selection reproduces 11,189 exactly can only be checked
on the real files (they could not be downloaded when this loader was written).

Split
-----
The paper splits the images at random into 5,597 training and 5,592 test images.
``load("nuswide", split_seed=s)`` returns the same split for the same seed in
``dataset.splits["train"]`` / ``["test"]`` (sorted row indices): a permutation
from ``numpy.random.default_rng(s)``, whose first ``n_train`` entries are the
training set. ``n_train`` defaults to ``round(n * 5597 / 11189)``, i.e. exactly
5,597 when ``n`` is 11,189. The split is drawn at load time and not stored.

Views are dense ``float64`` (BoW counts as floats); ``y`` indexes ``CONCEPTS``.
"""

from __future__ import annotations

import logging
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import numpy as np

from . import _download
from ._archive import _replace_entry
from ._base import Dataset, DatasetSpec, Prepared
from ._download import (
    DataUnavailableError,
    DownloadError,
    UnsafeArchiveError,
    download,
    file_lock,
    safe_extract_all,
)
from ._files import _makedirs, _write_error

logger = logging.getLogger(__name__)

__all__ = ["CONCEPTS", "SPEC", "VIEWS", "random_split"]

CONCEPTS = (
    "bear", "cat", "cow", "dog", "elk", "fox", "horses", "tiger", "whales", "zebra",
)  # fmt: skip
# (name, file in "all" order, (train file, test file), dims)
VIEWS = (
    ("bow", "BoW_int.dat", ("BoW_Train_int.dat", "BoW_Test_int.dat"), 500),
    (
        "corr",
        "Normalized_CORR.dat",
        ("Train_Normalized_CORR.dat", "Test_Normalized_CORR.dat"),
        144,
    ),
    (
        "wt",
        "Normalized_WT.dat",
        ("Train_Normalized_WT.dat", "Test_Normalized_WT.dat"),
        128,
    ),
)
VIEW_NAMES = [
    "500-D bag of visual words (BoW_int)",
    "144-D colour auto-correlogram (Normalized_CORR)",
    "128-D wavelet texture (Normalized_WT)",
]
N_IMAGES = 269_648
PAPER_N, PAPER_N_TRAIN = 11_189, 5_597

PAGE = (
    "https://lms.comp.nus.edu.sg/wp-content/uploads/2019/research/nuswide/NUS-WIDE.html"
)
BASE_URL = "http://dl.nextcenter.org/public/nuswide/"
FEATURES_RAR = "NUS_WID_Low_Level_Features.rar"
GROUNDTRUTH_ZIP = "Groundtruth.zip"
IMAGELIST_ZIP = "ImageList.zip"
IMAGELISTS = ("Imagelist.txt", "TrainImagelist.txt", "TestImagelist.txt")

INSTRUCTIONS = (
    f"NUS-WIDE is distributed by the NUS Lab for Media Search ({PAGE}). Download "
    f"{FEATURES_RAR} and {GROUNDTRUTH_ZIP} (formerly at {BASE_URL}{FEATURES_RAR} and "
    f"{BASE_URL}{GROUNDTRUTH_ZIP}) and put the archives, or their extracted folders "
    "Low_Level_Features/ (BoW_int.dat, Normalized_CORR.dat, Normalized_WT.dat) and "
    "Groundtruth/ (AllLabels/Labels_<concept>.txt), into <root>/raw/nuswide/ or "
    "<mirror>/nuswide/. A .rar archive needs unrar, 7z, bsdtar or unar on the PATH "
    "(or extract it by hand). If your feature files are split into Train_/Test_ "
    f"files while the labels are not (or vice versa), add ImageList/ ({IMAGELIST_ZIP})."
)
HINT = (
    f"download {FEATURES_RAR} and {GROUNDTRUTH_ZIP} from {PAGE} and put them (or "
    "their extracted folders) in <root>/raw/nuswide/ (docs/data.md)"
)
SOURCE = {
    "origin": PAGE,
    "urls": [BASE_URL + FEATURES_RAR, BASE_URL + GROUNDTRUTH_ZIP],
    "reference": "T.-S. Chua, J. Tang, R. Hong, H. Li, Z. Luo, Y. Zheng, NUS-WIDE: a "
    "real-world web image database from National University of Singapore, CIVR 2009",
    "checksums": "none published; sha256 of the inputs recorded in the manifest",
}

_MAX_DEPTH = 4


# --------------------------------------------------------------------------- locating


def _wanted_names() -> dict[str, str]:
    """Map each base file name to its manifest key (path in the official layout)."""
    names = {}
    for _, all_name, split_names, _ in VIEWS:
        for n in (all_name, *split_names):
            names[n] = f"Low_Level_Features/{n}"
    for c in CONCEPTS:
        names[f"Labels_{c}.txt"] = f"Groundtruth/AllLabels/Labels_{c}.txt"
        for part in ("Train", "Test"):
            n = f"Labels_{c}_{part}.txt"
            names[n] = f"Groundtruth/TrainTestLabels/{n}"
    for n in IMAGELISTS:
        names[n] = f"ImageList/{n}"
    return names


def _locate(bases) -> dict[str, Path]:
    """Find the known files below the base folders (shallowest match wins)."""
    wanted = _wanted_names()
    found: dict[str, tuple[int, Path]] = {}
    for base in bases:
        base = Path(base)
        if not base.is_dir():
            continue
        for dirpath, dirnames, filenames in os.walk(base):
            depth = len(Path(dirpath).relative_to(base).parts)
            dirnames[:] = sorted(
                d for d in dirnames if not d.startswith(".") and depth < _MAX_DEPTH
            )
            for fn in filenames:
                key = wanted.get(fn)
                if key is None:
                    continue
                # AllLabels and TrainTestLabels share no names, so the parent is moot
                if key not in found or depth < found[key][0]:
                    found[key] = (depth, Path(dirpath) / fn)
    return {k: p for k, (_, p) in found.items()}


def _plan(found: dict[str, Path]) -> tuple[dict | None, list[str]]:
    """Decide which files to read; return (plan, missing requirements)."""
    all_labels = [f"Groundtruth/AllLabels/Labels_{c}.txt" for c in CONCEPTS]
    split_labels = [
        [f"Groundtruth/TrainTestLabels/Labels_{c}_{p}.txt" for p in ("Train", "Test")]
        for c in CONCEPTS
    ]
    if all(k in found for k in all_labels):
        order, labels = "all", [[k] for k in all_labels]
    elif all(k in found for pair in split_labels for k in pair):
        order, labels = "split", split_labels
    else:
        return None, [
            "Groundtruth/AllLabels/Labels_<concept>.txt for "
            + ", ".join(
                c for c, k in zip(CONCEPTS, all_labels, strict=True) if k not in found
            )
        ]
    missing, views = [], []
    for name, all_name, split_names, dim in VIEWS:
        f_all = f"Low_Level_Features/{all_name}"
        f_split = [f"Low_Level_Features/{n}" for n in split_names]
        have_all, have_split = f_all in found, all(k in found for k in f_split)
        if have_all and (order == "all" or not have_split):
            views.append((name, "all", [f_all], dim))
        elif have_split:
            views.append((name, "split", f_split, dim))
        else:
            missing.append(
                f"Low_Level_Features/{all_name} (or {' + '.join(split_names)})"
            )
    lists = [f"ImageList/{n}" for n in IMAGELISTS]
    if not missing and any(v[1] != order for v in views):
        missing += [k for k in lists if k not in found]
    if missing:
        return None, missing
    plan = {"order": order, "labels": labels, "views": views}
    if any(v[1] != order for v in views):
        plan["image_lists"] = lists
    return plan, []


def _extract_rar(archive: Path, dest: Path) -> None:
    """Extract a .rar with whichever command-line tool is installed."""
    _makedirs(dest)
    try:  # an unpredictable name, that only this user may write in
        tmp = Path(tempfile.mkdtemp(dir=dest, prefix=f".extract-{archive.name}-"))
    except OSError as exc:
        raise _write_error(dest / archive.name, exc) from exc
    try:
        _run_extractors(archive, dest, tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _run_extractors(archive: Path, dest: Path, tmp: Path) -> None:
    tools = [
        ("unrar", ["unrar", "x", "-o+", "-y", str(archive), str(tmp) + os.sep]),
        ("7z", ["7z", "x", "-y", f"-o{tmp}", str(archive)]),
        ("bsdtar", ["bsdtar", "-xf", str(archive), "-C", str(tmp)]),
        ("unar", ["unar", "-f", "-o", str(tmp), str(archive)]),
    ]
    for tool, cmd in tools:
        if shutil.which(tool) is None:
            continue
        logger.info("extracting %s with %s", archive, tool)
        res = subprocess.run(cmd, capture_output=True, text=True, check=False)
        if res.returncode != 0:
            raise DownloadError(
                f"{tool} failed on {archive}: {res.stderr.strip()[-500:]}"
            )
        # the tools refuse '..' members themselves; refuse links that point outside
        # (both sides resolved: the data folder may itself be under a link)
        inside = Path(os.path.realpath(tmp))
        for p in tmp.rglob("*"):
            if p.is_symlink() and not Path(os.path.realpath(p)).is_relative_to(inside):
                raise UnsafeArchiveError(f"{archive}: member {p.name} links outside")
        for entry in sorted(tmp.iterdir()):
            _replace_entry(entry, dest / entry.name)
        return
    raise DataUnavailableError(
        f"cannot extract {archive}: no unrar, 7z, bsdtar or unar on the PATH. "
        f"Extract it by hand into {dest} (so that {dest}/Low_Level_Features/ exists)."
    )


def _fetch(raw_dir, mirror, offline=False):
    raw_dir = Path(raw_dir)
    mdir = Path(mirror) / "nuswide" if mirror is not None else None
    bases = [b for b in (mdir, raw_dir) if b is not None]
    errors: list[str] = []
    with file_lock(raw_dir, progress=_download.PROGRESS_STREAM):
        plan, missing = _plan(_locate(bases))
        if plan is None:  # unpack archives placed by hand (or by an earlier run)
            for base in bases:
                for name in (GROUNDTRUTH_ZIP, IMAGELIST_ZIP, FEATURES_RAR):
                    arch = base / name
                    if not arch.is_file():
                        continue
                    try:
                        if name.endswith(".zip"):
                            safe_extract_all(arch, raw_dir)
                        else:
                            _extract_rar(arch, raw_dir)
                    except (DownloadError, DataUnavailableError) as exc:
                        errors.append(str(exc))
            plan, missing = _plan(_locate(bases))
        if plan is None and not offline:
            for name in (GROUNDTRUTH_ZIP, FEATURES_RAR, IMAGELIST_ZIP):
                if (raw_dir / name).is_file():
                    continue
                try:
                    arch = download(
                        BASE_URL + name,
                        raw_dir / name,
                        retries=2,
                        progress=_download.PROGRESS_STREAM,
                    )
                    if name.endswith(".zip"):
                        safe_extract_all(arch, raw_dir)
                    else:
                        _extract_rar(arch, raw_dir)
                except (DownloadError, DataUnavailableError) as exc:
                    errors.append(str(exc))
            plan, missing = _plan(_locate(bases))
    if plan is None:
        listed = "".join(f"\n  - {e}" for e in errors)
        where = ", ".join(str(b) for b in bases)
        tried = [f"{b}/" for b in bases]
        tried += [f"{BASE_URL} (host gone)"] if not offline else ["no download"]
        raise DataUnavailableError(
            f"nuswide: missing {'; '.join(missing)} (looked in {where})."
            + (f"\nSources tried:{listed}" if listed else "")
            + f"\n{INSTRUCTIONS}",
            dataset="nuswide",
            missing=["NUS-WIDE's feature and label files"],
            tried=tried,
            hint=HINT.replace("<root>", str(raw_dir.parent.parent)),
        )
    found = _locate(bases)
    keys = [k for group in plan["labels"] for k in group]
    keys += [k for v in plan["views"] for k in v[2]] + plan.get("image_lists", [])
    # _build re-derives the same plan from exactly these keys
    return {k: found[k] for k in keys}, {k: None for k in keys}


def _status(raw_dir, mirror, offline=False):
    raw_dir = Path(raw_dir)
    bases = [b for b in (Path(mirror) / "nuswide" if mirror else None, raw_dir) if b]
    plan, missing = _plan(_locate(bases))
    if plan is not None:
        return True, "NUS-WIDE files found locally"
    archives = [
        b / n
        for b in bases
        for n in (FEATURES_RAR, GROUNDTRUTH_ZIP)
        if (b / n).is_file()
    ]
    if len(archives) == 2:
        return True, "NUS-WIDE archives found locally (to be extracted)"
    # the official host has been down for years: do not count on a download
    where = " or ".join(f"{b}/" for b in bases)
    return False, (
        f"not in {where} (no download: its host is gone); "
        + HINT.replace("<root>", str(raw_dir.parent.parent))
    )


# --------------------------------------------------------------------------- reading


def _read_labels(files: list[Path]) -> np.ndarray:
    parts = []
    for path in files:
        with open(path, "rb") as f:
            tokens = f.read().split()
        try:
            v = np.array(tokens, dtype=np.int8)
        except ValueError as exc:
            raise ValueError(f"{path}: labels must be 0 or 1 ({exc})") from exc
        if not np.isin(v, (0, 1)).all():
            raise ValueError(f"{path}: labels must be 0 or 1, found {np.unique(v)}")
        parts.append(v)
    return np.concatenate(parts)


def _read_image_list(path: Path) -> list[str]:
    with open(path, encoding="latin-1") as f:
        return [ln.strip().replace("\\", "/").lower() for ln in f if ln.strip()]


def _split_to_all(paths) -> np.ndarray:
    """perm[j] = row in "all" order of the j-th image in "split" order."""
    all_keys, train, test = (
        _read_image_list(paths[f"ImageList/{n}"]) for n in IMAGELISTS
    )
    index = {k: i for i, k in enumerate(all_keys)}
    try:
        perm = np.array([index[k] for k in train + test], dtype=np.int64)
    except KeyError as exc:
        raise ValueError(
            f"image {exc} of the train/test lists is not in Imagelist.txt"
        ) from exc
    if len(perm) != len(all_keys) or len(np.unique(perm)) != len(perm):
        raise ValueError(
            "TrainImagelist + TestImagelist is not a permutation of Imagelist"
        )
    return perm


def _read_rows(
    files: list[Path], rows: np.ndarray, dim: int, n_total: int
) -> np.ndarray:
    """Parse the lines ``rows`` (numbered across the concatenated files) into floats.

    Returns them in the order of ``rows``; only those lines are parsed, the others
    are skipped, which keeps memory at the size of the selection.
    """
    order = np.argsort(rows, kind="stable")
    sorted_rows = rows[order]
    out = np.empty((len(rows), dim), dtype=np.float64)
    k, line_no = 0, 0
    step = max(n_total // 10, 1)
    for path in files:
        with open(path, "rb") as f:
            for line in f:
                while k < len(sorted_rows) and sorted_rows[k] == line_no:
                    values = line.split()
                    if len(values) != dim:
                        raise ValueError(
                            f"{path}: line {line_no + 1} has {len(values)} values, "
                            f"expected {dim}"
                        )
                    out[order[k]] = np.array(values, dtype=np.float64)
                    k += 1
                line_no += 1
                if line_no % step == 0:
                    logger.info(
                        "nuswide: %s: %d%%", path.name, 100 * line_no // n_total
                    )
    if line_no != n_total:
        names = " + ".join(str(p) for p in files)
        raise ValueError(
            f"{names}: {line_no} lines, expected {n_total} (one per image)"
        )
    return out


def _build(paths, selection: str = "single") -> Prepared:
    if selection not in ("single", "any"):
        raise ValueError(f"selection must be 'single' or 'any', got {selection!r}")
    plan, missing = _plan(paths)
    if plan is None:
        raise ValueError(f"nuswide: missing input files: {'; '.join(missing)}")
    columns = [_read_labels([paths[k] for k in group]) for group in plan["labels"]]
    n_total = len(columns[0])
    for group, col in zip(plan["labels"], columns, strict=True):
        if len(col) != n_total:
            raise ValueError(
                f"label files {group} have {len(col)} lines, expected {n_total}"
            )
    L = np.stack(columns, axis=1)
    n_pos = L.sum(axis=1)
    keep = n_pos == 1 if selection == "single" else n_pos >= 1
    rows = np.flatnonzero(keep)
    y = np.argmax(L[rows], axis=1).astype(np.int64)  # first positive concept
    counts = {
        "n_images": int(n_total),
        "n_single": int(np.sum(n_pos == 1)),
        "n_any": int(np.sum(n_pos >= 1)),
        "n_multi": int(np.sum(n_pos >= 2)),
        "positives_per_concept": {
            c: int(L[:, j].sum()) for j, c in enumerate(CONCEPTS)
        },
    }
    logger.info("nuswide: %s", counts)

    perm = _split_to_all(paths) if "image_lists" in plan else None
    inv = None
    if perm is not None:
        inv = np.empty_like(perm)
        inv[perm] = np.arange(len(perm))
    views = []
    for _name, order, keys, dim in plan["views"]:
        if order == plan["order"]:
            file_rows = rows
        elif plan["order"] == "all":  # view in split order, rows in all order
            assert inv is not None  # the image lists give the order
            file_rows = inv[rows]
        else:  # view in all order, rows in split order
            assert perm is not None
            file_rows = perm[rows]
        views.append(_read_rows([paths[k] for k in keys], file_rows, dim, n_total))
    info = {
        "selection": selection,
        "concepts": list(CONCEPTS),
        "row_order": plan["order"],
        "view_layouts": {v[0]: v[1] for v in plan["views"]},
        "counts": counts,
        "paper": {
            "n": PAPER_N,
            "n_train": PAPER_N_TRAIN,
            "n_test": PAPER_N - PAPER_N_TRAIN,
        },
        "notes": [
            "images positive for exactly one of the 10 concepts"
            if selection == "single"
            else "images positive for at least one concept, labeled by the first one",
            "extra_image_index: row of each image in "
            + ("Imagelist.txt order" if plan["order"] == "all" else "train+test order"),
            "random train/test split drawn at load time (split_seed, n_train)",
        ],
    }
    return Prepared(
        views=views,
        y=y,
        view_names=VIEW_NAMES,
        classes=list(CONCEPTS),
        extra={"image_index": rows.astype(np.int64)},
        info=info,
    )


# --------------------------------------------------------------------------- split


def random_split(n: int, seed: int = 0, n_train: int | None = None):
    """Return sorted (train, test) row indices of a seeded random split.

    ``n_train`` defaults to ``round(n * 5597 / 11189)``, the paper's proportion
    (5,597 of 11,189).
    """
    if n_train is None:
        n_train = int(round(n * PAPER_N_TRAIN / PAPER_N))
    if not 0 <= n_train <= n:
        raise ValueError(f"n_train must be in [0, {n}], got {n_train}")
    perm = np.random.default_rng(seed).permutation(n)
    return np.sort(perm[:n_train]), np.sort(perm[n_train:])


def _finish(ds: Dataset, split_seed: int = 0, n_train: int | None = None) -> Dataset:
    train, test = random_split(ds.n_samples, seed=split_seed, n_train=n_train)
    ds.splits = {"train": train, "test": test}
    ds.info["split"] = {"seed": split_seed, "n_train": len(train), "n_test": len(test)}
    return ds


SPEC = DatasetSpec(
    name="nuswide",
    raw_subdir="nuswide",
    title="NUS-WIDE mammal subset (10 concepts), 3 visual views (500/144/128)",
    source=SOURCE,
    fetch=_fetch,
    build=_build,
    prepare_options={"selection": "single"},
    load_options={"split_seed": 0, "n_train": None},
    finish=_finish,
    status=_status,
    instructions=INSTRUCTIONS,
    hint=HINT,
    max_samples=N_IMAGES,
    view_dims=tuple((n, v[3]) for n, v in zip(VIEW_NAMES, VIEWS, strict=True)),
    parts=("train", "test"),
)

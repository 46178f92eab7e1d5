"""Ads: UCI Internet Advertisements (paper section 5.1.2), three term views.

Source
------
UCI Machine Learning Repository, data set 51 (N. Kushmerick, 1998):
https://archive.ics.uci.edu/static/public/51/internet+advertisements.zip with the
members ``ad.data`` (3,279 rows x 1,559 comma-separated fields) and ``ad.names``
(C4.5 attribute list, Latin-1). The sha256 of both members are pinned (the zip
itself is re-packed by UCI from time to time, so only its members are checked).
The older per-file location (``.../ml/machine-learning-databases/internet_ads/``)
is tried as well. With ``mirror=DIR`` the files are read from ``DIR/ads/``
(``ad.data.gz`` accepted).

Attributes and views
--------------------
``ad.names`` lists 1,558 attributes: ``height``, ``width``, ``aratio`` (continuous),
``local`` (0/1), then 1,554 binary term features: 457 ``url*``, 495 ``origurl*``,
472 ``ancurl*``, 111 ``alt*`` and 19 ``caption*``. Following the paper, the
attributes with missing values, height, width and aratio, are dropped, and the
rest form three views:

- view 0 (image URL, caption and alt text): ``local`` + ``url*`` + ``alt*`` +
  ``caption*`` = 1 + 457 + 111 + 19 = **588**;
- view 1 (URL of the current site): ``origurl*`` = **495**;
- view 2 (anchor URL): ``ancurl*`` = **472**.

**Why** ``local`` **is in view 0 (587 vs 588).** The term features alone give 587
for view 0, one short of the paper's 588. The paper's own total settles it: it
calls the concatenation "1,555 dimensions" = 1,558 - 3, i.e. exactly the three
geometry attributes were dropped and ``local`` was kept. ``ad.DOCUMENTATION``
marks only height, width and aratio as "possibly missing" (``local`` is listed as
plain ``0,1``), which explains why the authors kept it; and ``local`` says whether
the *image URL* is on the page's own server, so it belongs with the image-URL
terms. In the actual file ``local`` has 15 ``?`` (2,504 ones, 760 zeros); they are
coded 0, i.e. "feature absent", consistent with the presence/absence coding of
the paper. ``include_local=False`` drops it (view 0 then has 587 columns).

Labels
------
``y = 1`` for ``ad.``, ``0`` for ``nonad.``. The file holds **459 ads and 2,820
non-ads**; its documentation says 458/2,821. The file is used as is (the same
counts are reported by others who downloaded the UCI zip). 856 rows repeat earlier
rows exactly; they are kept, as in the paper (3,279 instances).
"""

from __future__ import annotations

import logging
import re
from pathlib import Path

import numpy as np
import scipy.sparse as sp

from ._base import DatasetSpec, Prepared
from ._download import Archive, RawFile, fetch_raw_files, local_status

logger = logging.getLogger(__name__)

__all__ = ["SPEC", "parse_names", "read_ads"]

ZIP_URL = "https://archive.ics.uci.edu/static/public/51/internet+advertisements.zip"
OLD_URL = "https://archive.ics.uci.edu/ml/machine-learning-databases/internet_ads/"
PAGE = "https://archive.ics.uci.edu/dataset/51/internet+advertisements"

AD_DATA = RawFile(
    "ad.data",
    "4841bab145e0b2df2bc17893ecd9d62f8fbeac2c389b41ca59d77da682c0c4eb",
    10_275_015,
)
AD_NAMES = RawFile(
    "ad.names",
    "74ef40720a61888c2fe9ab36b4a638aad4cefe841d114b6fc5b98d4ac0b25077",
    35_579,
)
ZIP = Archive(
    name="internet+advertisements.zip",
    urls=(ZIP_URL,),
    sha256=None,
    members={"ad.data": "ad.data", "ad.names": "ad.names"},
)
DIRECT_URLS = {"ad.data": (OLD_URL + "ad.data",), "ad.names": (OLD_URL + "ad.names",)}

GEOMETRY = ("height", "width", "aratio")
TERM_GROUPS = ("url", "origurl", "ancurl", "alt", "caption")
VIEW_GROUPS = (("url", "alt", "caption"), ("origurl",), ("ancurl",))
VIEW_NAMES = ["image url + alt + caption terms", "origurl terms", "ancurl terms"]
CLASSES = ["nonad", "ad"]

INSTRUCTIONS = (
    f"Download {ZIP_URL} (data set page {PAGE}) and put the zip, or its members "
    "ad.data and ad.names, into <root>/raw/ads/ (or <mirror>/ads/, where "
    "ad.data.gz is accepted)."
)
HINT = f"download {ZIP_URL} and put it in <root>/raw/ads/ (docs/data.md)"
SOURCE = {
    "origin": PAGE,
    "url": ZIP_URL,
    "alternative_url": OLD_URL,
    "reference": "N. Kushmerick, Learning to remove Internet advertisements, "
    "3rd Int. Conf. on Autonomous Agents, 1999",
}

_ATTR = re.compile(r"^(?P<name>.+?):\s*(?P<kind>continuous|0,1)\.\s*$")


def _sources() -> dict:
    return {
        "archives": [ZIP],
        "direct_urls": DIRECT_URLS,
        "instructions": INSTRUCTIONS,
        "hint": HINT,
    }


def _fetch(raw_dir, mirror, offline=False):
    files = [AD_DATA, AD_NAMES]
    paths = fetch_raw_files(
        "ads", files, raw_dir=raw_dir, mirror=mirror, offline=offline, **_sources()
    )
    return paths, {f.name: f.sha256 for f in files}


def _status(raw_dir, mirror, offline=False):
    files = [AD_DATA, AD_NAMES]
    return local_status(
        "ads", files, raw_dir=raw_dir, mirror=mirror, offline=offline, **_sources()
    )


def parse_names(path: str | Path) -> list[str]:
    """Return the attribute names of ``ad.names`` in file order.

    Raises
    ------
    ValueError
        A line is neither a comment, the class line nor an attribute, or a name
        repeats.
    """
    names: list[str] = []
    seen_classes = False
    with open(path, encoding="latin-1") as f:
        for lineno, raw in enumerate(f, start=1):
            line = raw.strip()
            if not line or line.startswith("|"):
                continue
            if not seen_classes:  # C4.5: the first entry lists the classes
                if not line.replace(" ", "").startswith("ad,nonad"):
                    raise ValueError(
                        f"{path}:{lineno}: expected the class line 'ad, nonad'"
                    )
                seen_classes = True
                continue
            m = _ATTR.match(line)
            if m is None:
                raise ValueError(
                    f"{path}:{lineno}: cannot parse attribute line {line!r}"
                )
            names.append(m["name"])
    if len(set(names)) != len(names):
        raise ValueError(f"{path}: attribute names repeat")
    return names


def _groups(names: list[str], path) -> dict[str, list[int]]:
    if list(names[:4]) != [*GEOMETRY, "local"]:
        raise ValueError(
            f"{path}: expected the first attributes height, width, aratio, local; "
            f"got {names[:4]}"
        )
    groups: dict[str, list[int]] = {g: [] for g in TERM_GROUPS}
    for j, name in enumerate(names[4:], start=4):
        prefix = name.split("*", 1)[0]
        if "*" not in name or prefix not in groups:
            raise ValueError(f"{path}: attribute {name!r} is not a known term feature")
        groups[prefix].append(j)
    return groups


def read_ads(data_path: str | Path, n_attributes: int):
    """Read ``ad.data``.

    Returns
    -------
    local : ndarray of int8, shape (n,)
        The ``local`` attribute with ``?`` coded as -1.
    terms : csr_matrix of shape (n, n_attributes - 4)
        Binary term features, in ``ad.names`` order.
    y : ndarray of int64, shape (n,)
        1 for ``ad.``, 0 for ``nonad.``.
    stats : dict
        ``missing``: number of ``?`` per geometry attribute and for ``local``;
        ``n_repeated_rows``: rows identical to an earlier row (all fields).
    """
    n_terms = n_attributes - 4
    local, labels, rows = [], [], []
    missing = dict.fromkeys((*GEOMETRY, "local"), 0)
    distinct: set[bytes] = set()
    with open(data_path, "rb") as f:
        for lineno, raw in enumerate(f, start=1):
            line = raw.rstrip(b"\r\n")
            if not line:
                continue
            distinct.add(line)
            head = line.split(b",", 4)
            tail = head[4].rsplit(b",", 1) if len(head) == 5 else []
            if len(tail) != 2 or len(tail[0]) != 2 * n_terms - 1:
                n_fields = line.count(b",") + 1
                raise ValueError(
                    f"{data_path}:{lineno}: expected {n_attributes + 1} single-digit "
                    f"term fields layout, got {n_fields} fields"
                )
            for name, value in zip(GEOMETRY, head[:3], strict=True):
                missing[name] += value.strip() == b"?"
            loc = head[3].strip()
            if loc == b"?":
                missing["local"] += 1
                local.append(-1)
            elif loc in (b"0", b"1"):
                local.append(int(loc))
            else:
                raise ValueError(
                    f"{data_path}:{lineno}: local must be 0, 1 or ?, got {loc!r}"
                )
            # term fields are single characters at even offsets: decode them at once
            buf = np.frombuffer(tail[0], dtype=np.uint8)
            if np.any(buf[1::2] != ord(",")) or not np.all(
                (buf[::2] == ord("0")) | (buf[::2] == ord("1"))
            ):
                raise ValueError(f"{data_path}:{lineno}: term features must be 0 or 1")
            rows.append(np.flatnonzero(buf[::2] == ord("1")))
            cls = tail[1].strip()
            if cls not in (b"ad.", b"nonad."):
                raise ValueError(f"{data_path}:{lineno}: unknown class {cls!r}")
            labels.append(1 if cls == b"ad." else 0)
    n = len(rows)
    indptr = np.zeros(n + 1, dtype=np.int64)
    indptr[1:] = np.cumsum([len(r) for r in rows])
    indices = np.concatenate(rows) if rows else np.zeros(0, dtype=np.int64)
    terms = sp.csr_matrix(
        (np.ones(indices.shape[0]), indices, indptr), shape=(n, n_terms)
    )
    stats = {"missing": missing, "n_repeated_rows": n - len(distinct)}
    return (
        np.asarray(local, dtype=np.int8),
        terms,
        np.asarray(labels, dtype=np.int64),
        stats,
    )


def _build(paths, include_local: bool = True) -> Prepared:
    if not isinstance(include_local, bool):
        raise ValueError(f"include_local must be true or false, got {include_local!r}")
    names_path, data_path = paths[AD_NAMES.name], paths[AD_DATA.name]
    names = parse_names(names_path)
    groups = _groups(names, names_path)
    local, terms, y, stats = read_ads(data_path, len(names))
    missing = stats["missing"]
    logger.info("ads: %d rows, %d term features read", terms.shape[0], terms.shape[1])

    def cols(group):  # term column j of ad.names is column j - 4 of `terms`
        return [j - 4 for j in groups[group]]

    local_col = sp.csr_matrix((local == 1).astype(np.float64)[:, None])
    views = []
    for v, view_groups in enumerate(VIEW_GROUPS):
        parts = [terms[:, cols(g)] for g in view_groups]
        if v == 0 and include_local:
            parts.insert(0, local_col)
        views.append(sp.hstack(parts, format="csr", dtype=np.float64))
    feature_names = []
    for v, view_groups in enumerate(VIEW_GROUPS):
        fn = ["local"] if v == 0 and include_local else []
        for g in view_groups:
            fn += [names[j] for j in groups[g]]
        feature_names.append(fn)
    info = {
        "dropped_attributes": list(GEOMETRY),
        "missing_values": missing,
        "group_sizes": {g: len(groups[g]) for g in TERM_GROUPS},
        "include_local": include_local,
        "n_repeated_rows": stats["n_repeated_rows"],
        "documented_label_counts": {"ad": 458, "nonad": 2821},
        "notes": [
            "height, width and aratio (missing values) are dropped",
            "view 0 = local + url + alt + caption terms (the paper's 588 = 587 + "
            "local; the paper's total 1,555 = 1,558 - 3 geometry attributes)"
            if include_local
            else "view 0 = url + alt + caption terms (local dropped: 587)",
            f"local has {missing['local']} '?' values, coded 0 (feature absent)",
            "label counts are those of the file (459 ad / 2,820 nonad for the UCI "
            "file); ad.DOCUMENTATION says 458 / 2,821",
        ],
    }
    prep = Prepared(views=views, y=y, view_names=VIEW_NAMES, classes=CLASSES, info=info)
    prep.info["feature_names"] = feature_names
    return prep


SPEC = DatasetSpec(
    name="ads",
    raw_subdir="ads",
    title="UCI Internet Advertisements, 3 binary term views (588/495/472)",
    source=SOURCE,
    fetch=_fetch,
    build=_build,
    prepare_options={"include_local": True},
    pinned=lambda: {AD_DATA.name: AD_DATA.sha256, AD_NAMES.name: AD_NAMES.sha256},
    status=_status,
    instructions=INSTRUCTIONS,
    hint=HINT,
    max_samples=3_279,
    view_dims=tuple(zip(VIEW_NAMES, (588, 495, 472), strict=True)),
)

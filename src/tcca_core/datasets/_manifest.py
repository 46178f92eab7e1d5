"""The manifest of a prepared data set, and whether the prepared files are up to date.

The cache is reused when the manifest's format version, options and input
checksums still match what the code pins, and ``views.npz`` is the file the manifest
describes: same size and modification time (cheap), or, when the time differs or on
request (``verify=True``), the same sha256. Otherwise the data set is prepared
again; a corrupted ``views.npz`` (a digest mismatch, or a file that fails to read:
zip CRC errors catch flipped bits) is prepared again with a warning.
"""

from __future__ import annotations

import json
import logging
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from ._files import sha256_file
from ._views_file import VIEWS_FILE

if TYPE_CHECKING:
    from ._base import DatasetSpec

# The logger of the prepared-file machinery, as before _base.py was split: the
# messages keep their logger name.
logger = logging.getLogger("tcca_core.datasets._base")

FORMAT_VERSION = 1
MANIFEST = "manifest.json"


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

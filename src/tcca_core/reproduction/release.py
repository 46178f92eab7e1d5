"""REPRODUCTION.md's release section: whose numbers, and where HEAD stands.

Built from the release manifest and the last recorded check
(``release/manifest.json`` and ``status.json``, written by
``python -m tcca_core.pipeline.release``): which release owns the
numbers, and whether the library at the recorded commit is number-neutral to it
or has moved (with the sentinel's drift table).
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path

from ..reporting import method_label

__all__ = [
    "MANIFEST",
    "STATUS",
    "drift_table",
    "release_banner",
    "read_manifest",
    "read_status",
    "release_section",
]

#: The release's record in a checkout (written by :mod:`tcca_core.pipeline.release`).
MANIFEST = Path("release") / "manifest.json"
STATUS = Path("release") / "status.json"


def read_manifest(repo: str | os.PathLike = ".") -> dict:
    """Return the release manifest of the checkout ``repo``."""
    path = Path(repo) / MANIFEST
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ValueError(f"{path}: no release manifest (cut a release first)") from None
    for key in ("version", "library_digest", "methods", "data", "scripts"):
        if key not in doc:
            raise ValueError(f"{path}: malformed release manifest: no {key!r}")
    return doc


def read_status(repo: str | os.PathLike = ".") -> dict | None:
    """Return the last recorded check of HEAD against the release (None: none)."""
    path = Path(repo) / STATUS
    if not path.is_file():
        return None
    return json.loads(path.read_text(encoding="utf-8"))


_RECORD = "`python -m tcca_core.pipeline.release`"


def _code(text) -> str:
    """``text`` as inline code (it is a commit or a digest: no backtick in it)."""
    return "`" + str(text).replace("`", "") + "`"


def drift_table(moved: Mapping[str, Mapping]) -> str:
    """Return the methods the sentinel moved as a Markdown table (registry labels)."""
    lines = [
        "| method | sentinel rows changed | fits changed | largest change of "
        "accuracy (points) | largest change of a canonical correlation |",
        "|---|---:|---:|---:|---:|",
    ]
    for method, m in moved.items():
        corr = "-" if not m["fits"] else f"{m['max_abs_corr']:.3g}"
        extra = f" ({m['missing']} on one side only)" if m.get("missing") else ""
        lines.append(
            f"| {method_label(method)}{extra} | {m['rows']} | {m['fits']} | "
            f"{m['max_abs_acc']:.3g} | {corr} |"
        )
    return "\n".join(lines)


def release_banner(manifest: Mapping | None, status: Mapping | None) -> str:
    """Return the one line under REPRODUCTION.md's title: whose numbers these are.

    It says loudly when the last recorded check found the library moved; ''
    without a manifest.
    """
    if not manifest:
        return ""
    version = manifest["version"]
    moved = ((status or {}).get("sentinel") or {}).get("moved") or {}
    if moved:
        names = ", ".join(method_label(m) for m in moved)
        return (
            f"> **Every number here is release {version}'s; the library has moved "
            f"since** (the fits of {names}): see [Release](#release) for the drift."
        )
    return (
        f"> Every number here is release {version}'s, the reproduction release "
        "([Release](#release): how to refit it, and where the library stands)."
    )


def release_section(manifest: Mapping | None, status: Mapping | None) -> str:
    """Return the Markdown of the release section ('' without a manifest)."""
    if not manifest:
        return ""
    version = manifest["version"]
    head = (
        f"The published numbers are those of **release {version}** (library digest "
        f"{_code(manifest['library_digest'][:12])}, full grid run at commit "
        f"{_code(str(manifest.get('grid_commit'))[:12])}). "
        "[docs/release.md](docs/release.md) says how to check out and install "
        "exactly that release to refit any number."
    )
    if not status:
        return (
            f"{head}\n\nNo check of a later library against it is recorded ({_RECORD})."
        )
    commit = _code(str(status.get("commit"))[:12])
    if status.get("dirty"):
        commit += " (with uncommitted changes)"
    ch = status.get("changes") or {}
    fit_code = sorted({m for mods in (ch.get("methods") or {}).values() for m in mods})
    sentinel = status.get("sentinel") or {}
    moved = sentinel.get("moved") or {}
    notes = []
    if ch.get("data"):
        checked = status.get("data") or {}
        unchecked = (manifest.get("prepared") or {}).get("not_recorded") or []
        how = (
            "prepared again from their raw files, the views of "
            + ", ".join(f"{n}: {r}" for n, r in sorted(checked.items()))
            + (f"; not checked: {', '.join(unchecked)}" if unchecked else "")
            if checked
            else "the sentinel does not prepare the data sets, so this check does "
            "not cover it"
        )
        notes.append(
            "The data code differs from the release's ("
            + ", ".join(_code(m) for m in ch["data"])
            + f"): {how}."
        )
    if ch.get("scripts"):
        notes.append(
            "Investigation scripts changed ("
            + ", ".join(_code(s) for s in ch["scripts"])
            + "): their outputs are the release's until they are run again."
        )
    tail = "".join(f" {n}" for n in notes)
    if not moved and sentinel:
        if fit_code:
            body = (
                f"At commit {commit} ({_RECORD}) code that the fits execute differs "
                "from the code last found number-neutral ("
                + ", ".join(_code(m) for m in fit_code)
                + "); the sentinel refit of every method gave identical rows and "
                "fits: the change is **number-neutral**, and every published number "
                "stays current."
            )
        else:
            body = (
                f"Checked at commit {commit} ({_RECORD}): no module that the fits "
                "execute has changed, and the sentinel refit gave identical rows and "
                "fits."
            )
        return f"{head}\n\n{body}{tail}"
    names = ", ".join(method_label(m) for m in moved)
    body = (
        f"> **The library has moved since release {version}.** At commit {commit} "
        f"the sentinel refit ({_RECORD}) moved the fits of {names}. Every number "
        f"below is still release {version}'s: they are made again at the new code "
        "and a new release is cut before they change (docs/release.md).\n\n"
        f"Drift on the sentinel set (small synthetic problems of every input kind, "
        f"one split, a few ranks):\n\n{drift_table(moved)}"
    )
    return f"{head}\n\n{body}" + (f"\n\n{tail.strip()}" if tail else "")

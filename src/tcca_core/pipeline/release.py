"""The release that owns the published numbers, and where HEAD stands against it.

The published results (``results/``, REPRODUCTION.md, ``investigations/results/``)
belong to a release: ``release/manifest.json`` names it (version, the
library digest and commit of the grid run) and records, per output, the code it
depends on, module by module (:func:`tcca_core.pipeline.code_units.module_digest`):

- a method's fit rows: the modules its fits executed (traced on the sentinel set,
  :mod:`tcca_core.pipeline.sentinel`) and the data code (:func:`data_modules`);
- an investigation output: its own script (and ``investigations/_common.py``) and
  the fit code of every method (the rows it reads).

:func:`check_head` says, for the library at HEAD, which of those modules changed
and refits the sentinel: identical rows make the change number-neutral (every
published output stays current); otherwise the moved methods and their drift are
named, and the published results stay the release's. :func:`record` writes that
verdict (``release/status.json``) for REPRODUCTION.md to show.
:func:`release_problems` is the strict check of a release with new numbers:
every output made at the code of HEAD.

``python -m tcca_core.pipeline.release`` runs the check and writes its verdict to
``release/status.json`` and REPRODUCTION.md's release section (``--no-record``:
print only); ``--baseline`` (when cutting a release) writes the manifest and the
sentinel's rows.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

from ..reproduction.release import MANIFEST, STATUS, read_manifest, read_status
from .code_units import PACKAGE, module_digest, module_digests

__all__ = [
    "MANIFEST",
    "SENTINEL",
    "STATUS",
    "check_head",
    "code_changes",
    "cut",
    "read_manifest",
    "read_status",
    "record",
    "release_problems",
    "status_text",
]


SENTINEL = Path("release") / "sentinel.json"

#: The data code every fit row depends on besides its method's fits: what reads,
#: prepares and splits the data sets (:func:`data_modules`). Transfers, locks,
#: errors and the command line cannot change a value (a corrupted download fails
#: its checksum), so they are left out.
DATA_NOT_VALUES = (
    "__main__.py",
    "_download.py",
    "_errors.py",
    "_lock.py",
    "_network.py",
)
DATA_JOBS = (
    "tcca_core/pipeline/data_job.py",
    "tcca_core/pipeline/fit_jobs.py",
    "tcca_core/protocol/splits.py",
)


def data_modules(package: str | os.PathLike | None = None) -> list[str]:
    """List the data code's modules (relative to the package's parent), sorted."""
    top = Path(package) if package is not None else PACKAGE
    found = [
        f"{top.name}/datasets/{p.name}"
        for p in (top / "datasets").glob("*.py")
        if p.name not in DATA_NOT_VALUES
    ]
    return sorted({*found, *DATA_JOBS})


#: What every investigation script shares.
SCRIPT_COMMON = "investigations/_common.py"


def _version() -> str:
    from importlib import metadata

    try:
        return metadata.version("tcca")
    except metadata.PackageNotFoundError:  # pragma: no cover - run from sources
        return "unknown"


def _environment() -> dict:
    """Return what a bit-for-bit comparison of fits depends on besides the code."""
    import numpy as np
    import scipy
    import sklearn
    from threadpoolctl import threadpool_info

    from ..reporting.provenance import machine_info

    blas = sorted(
        f"{i.get('internal_api')} {i.get('version')} {i.get('architecture')}"
        for i in threadpool_info()
        if i.get("user_api") == "blas"
    )
    return {
        "cpu": machine_info()["cpu"],
        "numpy": np.__version__,
        "scipy": scipy.__version__,
        "scikit-learn": sklearn.__version__,
        "blas": blas,
    }


def _scripts(repo: Path) -> dict[str, str]:
    """Every investigation script's digest, by path relative to ``repo``."""
    names = sorted((repo / "investigations").glob("*.py"))
    return {p.relative_to(repo).as_posix(): module_digest(p) for p in names}


def prepared_digests(mirror: str | os.PathLike, names: Sequence[str]) -> dict:
    """Prepare each data set of ``names`` from the raw files in ``mirror``.

    Nothing is downloaded; the views are prepared in a temporary folder. Returns
    ``{name: sha256 of its prepared views.npz}``, or ``{name: None}`` for a data
    set whose files the mirror lacks (``why`` in the log).
    """
    import tempfile

    from ..datasets import availability, prepare
    from ..datasets._files import sha256_file

    out: dict[str, str | None] = {}
    with tempfile.TemporaryDirectory(prefix="tcca-release-data-") as tmp:
        for name in names:
            ok, _ = availability(name, root=tmp, mirror=mirror, offline=True)
            if not ok:
                out[name] = None
                continue
            manifest = prepare(name, tmp, mirror, offline=True)
            out[name] = sha256_file(Path(manifest).parent / "views.npz")
    return out


def data_check(manifest: Mapping, mirror: str | os.PathLike) -> dict:
    """Prepare the release's data sets at this library and compare their views.

    Returns ``{name: "identical" | "different" | "not at hand"}`` over the data
    sets whose prepared views the release recorded (``manifest["prepared"]``).
    """
    recorded = (manifest.get("prepared") or {}).get("views") or {}
    now = prepared_digests(mirror, sorted(recorded))
    return {
        name: "not at hand"
        if now[name] is None
        else ("identical" if now[name] == digest else "different")
        for name, digest in recorded.items()
    }


# ------------------------------------------------------------------- cutting


def cut(
    repo: str | os.PathLike = ".",
    *,
    progress=None,
    mirror: str | os.PathLike | None = None,
) -> Path:
    """Write the release's sentinel rows and manifest for the code at hand.

    Run at a release only: from then on every change is measured against them.
    The library must be the one the published results record
    (``results/summary.json``'s ``source_digest``). With ``mirror`` (the raw
    files), the digests of the data sets' prepared views are recorded too, for
    :func:`data_check`.
    """
    from .._io import atomic_write_text
    from ..reporting.provenance import source_digest, tree_state
    from .sentinel import run_sentinel, write_baseline

    repo = Path(repo)
    summary = json.loads((repo / "results" / "summary.json").read_text())
    prov = summary.get("provenance") or {}
    digest = source_digest()
    if prov.get("source_digest") != digest:
        raise ValueError(
            "the library is not the one the published results were made with "
            f"(summary.json: {str(prov.get('source_digest'))[:12]}, here "
            f"{digest[:12]}): a release names the code of its numbers"
        )
    rows, fits, modules = run_sentinel(progress=progress)
    write_baseline(repo / SENTINEL, rows, fits)
    manifest = {
        "version": _version(),
        "library_digest": digest,
        "grid_commit": (prov.get("git") or {}).get("commit"),
        "cut_from": tree_state(repo)["commit"],
        "environment": _environment(),
        "methods": {m: module_digests(mods) for m, mods in modules.items()},
        "data": module_digests(data_modules()),
        "scripts": _scripts(repo),
    }
    if mirror is not None:
        from ..datasets import DATASETS

        views = prepared_digests(mirror, sorted(DATASETS))
        manifest["prepared"] = {
            "views": {n: d for n, d in views.items() if d},
            "not_recorded": sorted(n for n, d in views.items() if not d),
        }
    atomic_write_text(
        repo / MANIFEST, json.dumps(manifest, indent=1, sort_keys=True) + "\n"
    )
    return repo / MANIFEST


# ------------------------------------------------------------- HEAD against it


def code_changes(
    manifest: Mapping,
    repo: str | os.PathLike = ".",
    *,
    package: str | os.PathLike | None = None,
    verified: Mapping[str, Mapping[str, str]] | None = None,
) -> dict:
    """Which recorded code differs now, without refitting anything.

    Returns ``{"methods": {method: [modules]}, "data": [modules], "scripts":
    [scripts]}``, each listing only what changed (a deleted or moved module
    counts as changed). A method's code is compared with ``verified[method]``
    where given (the modules its fits executed at the last check that found
    them number-neutral, :func:`check_head`), else with the release's.
    ``package``: the ``tcca_core`` folder to read (default: the one imported);
    scripts are read from ``repo``.
    """
    repo = Path(repo)
    root = PACKAGE.parent if package is None else Path(package).parent

    def changed(recorded: Mapping[str, str], top: Path) -> list[str]:
        now = module_digests(recorded, top)
        return [m for m, d in recorded.items() if now[m] != d]

    methods = {}
    for method, mods in manifest["methods"].items():
        moved = changed((verified or {}).get(method, mods), root)
        if moved:
            methods[method] = moved
    return {
        "methods": methods,
        "data": changed(manifest["data"], root),
        "scripts": changed(manifest["scripts"], repo),
    }


def stale_outputs(manifest: Mapping, changes: Mapping, moved: Sequence[str]) -> list:
    """List the published outputs whose numbers are not HEAD's (one line each).

    ``moved``: the methods whose sentinel fits moved. A method whose code changed
    but whose fits did not is number-neutral: its outputs stay current. An
    investigation that ``check_published`` makes again from the committed rows
    (:data:`tcca_core.pipeline.rows.INVESTIGATIONS`) is not stale for a
    changed script: that check (in the test suite) compares it cell by cell.
    """
    from .rows import INVESTIGATIONS

    out = [f"the fit rows of {m} (results/rows/, its cells)" for m in moved]
    common = SCRIPT_COMMON in changes["scripts"]
    for script in manifest["scripts"]:
        stem = Path(script).stem
        if stem.startswith("_") or stem == "hand_over":
            continue
        if moved:
            out.append(f"investigations/results/{stem}.md (its fit code moved)")
        elif (common or script in changes["scripts"]) and stem not in INVESTIGATIONS:
            out.append(f"investigations/results/{stem}.md (its script changed)")
    return out


def check_head(
    repo: str | os.PathLike = ".",
    *,
    refit: bool = True,
    progress=None,
    mirror: str | os.PathLike | None = None,
) -> dict:
    """Check the library at HEAD against the release: code, then the sentinel.

    Returns the status that :func:`record` writes: ``release``, ``commit``,
    ``dirty``, ``changes`` (:func:`code_changes`, against the code the last
    recorded check found number-neutral, else the release's), ``sentinel`` (the
    verdict of :func:`tcca_core.pipeline.sentinel.compare`, None without
    ``refit``), ``environment_matches`` (whether this machine and its numerics
    are the release sentinel's: if not, a difference may be rounding, and the
    status says so), ``stale`` (:func:`stale_outputs`), ``executed``: per
    method, the modules its sentinel fits executed here and their digests, and
    ``verified``: the same for the methods whose fits are the release's (what
    the next check compares with; :func:`record` keeps it, not ``executed``). With
    ``mirror`` (a folder of raw files, as the pipeline's ``mirror``), the data
    sets whose prepared views the release recorded are prepared again
    (:func:`data_check`): when every one is identical, the data code is
    verified too (``verified_data``); ``data`` holds each one's result.
    """
    from ..reporting.provenance import tree_state
    from .sentinel import compare, read_baseline, run_sentinel

    repo = Path(repo)
    manifest = read_manifest(repo)
    before = read_status(repo) or {}
    verified = dict(before.get("verified") or {})
    if before.get("release") != manifest["version"]:
        verified = {}  # a check against another release vouches for nothing here
    changes = code_changes(manifest, repo, verified=verified)
    verdict, executed = None, {}
    if refit:
        baseline = read_baseline(repo / SENTINEL)
        rows, fits, modules = run_sentinel(progress=progress)
        verdict = compare(baseline, rows, fits)
        executed = {method: module_digests(mods) for method, mods in modules.items()}
        for method, digests in executed.items():
            if method in verdict["moved"]:
                verified.pop(method, None)
            else:
                verified[method] = digests
    data = None
    verified_data = dict(before.get("verified_data") or {}) if verified else {}
    if mirror is not None:
        data = data_check(manifest, mirror)
        if (
            data
            and all(v == "identical" for v in data.values())
            and not (manifest.get("prepared") or {}).get("not_recorded")
        ):
            verified_data = module_digests(data_modules())
        else:
            verified_data = {}
    if verified_data:
        changes["data"] = [
            m for m, d in module_digests(verified_data).items() if verified_data[m] != d
        ] + sorted(set(data_modules()) - set(verified_data))
    state = tree_state(repo)
    moved = list((verdict or {}).get("moved", {}))
    return {
        "release": manifest["version"],
        "commit": state["commit"],
        "dirty": state["dirty"],
        "changes": changes,
        "sentinel": verdict,
        "environment_matches": _environment() == manifest.get("environment"),
        "stale": stale_outputs(manifest, changes, moved),
        "verified": verified,
        "executed": executed,
        "data": data if data is not None else before.get("data"),
        "verified_data": verified_data,
    }


def status_text(status: Mapping) -> str:
    """Return the status in a few lines (the command's output)."""
    from .sentinel import verdict_text

    ch = status["changes"]
    lines = [f"release {status['release']}; library at {str(status['commit'])[:12]}"]
    if not (ch["methods"] or ch["data"] or ch["scripts"]):
        lines.append("code: no module any published output depends on has changed")
    else:
        for m, mods in ch["methods"].items():
            lines.append(f"code: {m}'s fit code changed: {', '.join(mods)}")
        if ch["data"]:
            lines.append(
                "code: data code changed (the sentinel does not prepare data "
                f"sets): {', '.join(ch['data'])}"
            )
        if ch["scripts"]:
            lines.append(f"code: scripts changed: {', '.join(ch['scripts'])}")
    for name, result in (status.get("data") or {}).items():
        lines.append(f"data: {name}'s prepared views from the mirror: {result}")
    if status["sentinel"] is not None:
        lines.append(verdict_text(status["sentinel"]))
        if not status["sentinel"]["neutral"] and not status["environment_matches"]:
            lines.append(
                "note: this machine's CPU or numerical libraries differ from the "
                "release sentinel's (release/manifest.json, environment): "
                "part of the difference can be rounding"
            )
    if status["stale"]:
        lines.append("published outputs that are the release's, not HEAD's:")
        lines += [f"  - {s}" for s in status["stale"]]
    else:
        lines.append("published outputs: all current at this library")
    return "\n".join(lines)


def record(repo: str | os.PathLike, status: Mapping) -> Path:
    """Write ``status`` to ``release/status.json`` and REPRODUCTION.md."""
    from .._io import atomic_write_text
    from .report_jobs import rewrite_reproduction

    repo = Path(repo)
    kept = {k: v for k, v in status.items() if k != "executed"}  # this run's only
    atomic_write_text(repo / STATUS, json.dumps(kept, indent=1, sort_keys=True) + "\n")
    rewrite_reproduction(repo)
    return repo / STATUS


def release_problems(
    repo: str | os.PathLike = ".", *, package: str | os.PathLike | None = None
) -> list[str]:
    """Why the published outputs are not all made at the code of HEAD (strict).

    The check of a release with new numbers: no module any published output
    depends on may differ from the release manifest (cut the release again
    after regenerating the outputs), and the library digest must be the one
    ``results/summary.json`` records.
    """
    repo = Path(repo)
    manifest = read_manifest(repo)
    problems = []
    summary = json.loads((repo / "results" / "summary.json").read_text())
    recorded = (summary.get("provenance") or {}).get("source_digest")
    if recorded != manifest["library_digest"]:
        problems.append(
            f"results/summary.json records library {str(recorded)[:12]}, the "
            f"release manifest {manifest['library_digest'][:12]}"
        )
    ch = code_changes(manifest, repo, package=package)
    for m, mods in ch["methods"].items():
        problems.append(f"{m}: fit code changed since the release: {', '.join(mods)}")
    if ch["data"]:
        problems.append(f"data code changed since the release: {', '.join(ch['data'])}")
    for s in ch["scripts"]:
        problems.append(f"{s}: changed since the release")
    return problems


# ------------------------------------------------------------------ command


def main(argv: Sequence[str] | None = None, *, progress=sys.stderr) -> int:
    """Refit the sentinel and compare (``python -m tcca_core.pipeline.release``).

    Exit status 0 when it ran (neutral or not), 2 when it could not.
    """
    import argparse

    ap = argparse.ArgumentParser(
        prog="python -m tcca_core.pipeline.release",
        description="Refit the sentinel set at this library and compare it with the "
        "release's committed rows: number-neutral, or the drift of each method.",
    )
    ap.add_argument("--repo", default=".", help="the repository's top folder")
    ap.add_argument(
        "--no-record",
        dest="record",
        action="store_false",
        help="only print the verdict (by default it is also written to "
        "release/status.json and REPRODUCTION.md's release section)",
    )
    ap.add_argument(
        "--baseline",
        action="store_true",
        help="write the release's sentinel rows and manifest (only when cutting a "
        "release: it replaces what every later change is compared with)",
    )
    ap.add_argument(
        "--mirror",
        default=None,
        help="a folder of the data sets' raw files (as the pipeline's mirror): "
        "prepare them again and compare the views with the release's",
    )
    ap.add_argument("--quiet", action="store_true", help="no progress lines")
    args = ap.parse_args(argv)
    repo = Path(args.repo)
    progress = None if args.quiet else progress
    if args.baseline:
        path = cut(repo, progress=progress, mirror=args.mirror)
        print(f"sentinel: baseline written to {path}")
        return 0
    try:
        status = check_head(repo, progress=progress, mirror=args.mirror)
    except (OSError, ValueError) as exc:
        print(f"sentinel: could not run: {exc}", file=sys.stderr)
        return 2
    print(status_text(status))
    if args.record:
        out = record(repo, status)
        print(f"sentinel: recorded in {out} and REPRODUCTION.md")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

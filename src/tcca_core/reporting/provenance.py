"""Provenance of a run and of the investigations, and the records of the tables.

- Where and how a run was made (machine, versions, commit, configuration): the
  provenance that ``summary.json`` records with the records of its tables.
- Whether a run may write the published results: :func:`publish_problem` refuses
  a working tree with changes outside what the run writes (:func:`tree_state`),
  or one that is not a git checkout (the workflow asks before its first job and
  again when it writes the summary).
- Whether an output is older than the code it describes: :func:`source_digest`
  digests the library's code (not its comments, docstrings or layout); every
  investigation output records it with the commit (:func:`stamp_text`), and
  :func:`stale_reason` compares (``tests/test_staleness.py``).
"""

from __future__ import annotations

import ast
import hashlib
import json
import os
import platform
import re
import subprocess
import sys
from collections.abc import Iterable, Mapping, Sequence
from importlib import metadata
from pathlib import Path

import pandas as pd

from ..paper import PAPER_MACHINE
from .tables import READINGS


def machine_info() -> dict:
    """Host, CPU model, logical cores, OS and Python: where the costs were measured."""
    cpu = platform.processor() or ""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    return {
        "cpu": cpu,
        "logical_cores": os.cpu_count(),
        "system": f"{platform.system()} {platform.release()}",
        "machine": platform.machine(),
        "python": sys.version.split()[0],
    }


def machine_text(info: Mapping | None = None) -> str:
    """One line naming the machine, for table captions."""
    info = info or machine_info()
    cpu = info.get("cpu") or info.get("machine")
    return f"{cpu}, {info.get('logical_cores')} logical cores"


_PACKAGES = (
    "tcca",
    "numpy",
    "scipy",
    "scikit-learn",
    "pandas",
    "matplotlib",
    "tensorly",
    "snakemake",
)


def package_versions(packages: Sequence[str] = _PACKAGES) -> dict:
    """Installed versions of the packages the results depend on (None if absent)."""
    out: dict[str, str | None] = {}
    for name in packages:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            out[name] = None
    return out


#: What a run of the full configuration or an investigation writes in the repository
#: (relative to its top): rewriting them does not make the tree dirty, or the run
#: would dirty itself, and each investigation the next one's stamp.
#: The first is the published folder (``tcca_core.pipeline.locations.PUBLISHED``).
OUTPUT_PATHS = ("results", "REPRODUCTION.md", "investigations/results")


def tree_state(path: str | os.PathLike) -> dict:
    """Return the commit of the git checkout holding ``path`` and what differs from it.

    Returns
    -------
    dict
        ``commit`` (the full hash of HEAD, or None), ``dirty`` (True when a tracked
        file is changed, staged or not, or an untracked file that is not ignored
        exists, outside :data:`OUTPUT_PATHS`; None when unknown), ``changed`` (those
        paths, relative to the checkout's top, as ``git status`` lists them: an
        untracked folder once) and ``error`` (why git could not tell: not a
        checkout, git missing, ...; None when it could).
    """

    def git(*args: str) -> str:
        return subprocess.run(
            ["git", *args],
            cwd=path,
            capture_output=True,
            text=True,
            timeout=30,
            check=True,
        ).stdout

    try:
        commit = git("rev-parse", "--verify", "HEAD").strip()
        status = git(
            "status",
            "--porcelain=v1",
            "-z",
            "--untracked-files=normal",
            "--",
            ":(top)",
            *(f":(top,exclude){p}" for p in OUTPUT_PATHS),
        )
    except subprocess.CalledProcessError as exc:
        why = (exc.stderr or "").strip().splitlines()
        reason = why[-1] if why else f"git exited with {exc.returncode}"
        return {"commit": None, "dirty": None, "changed": [], "error": reason}
    except (OSError, subprocess.SubprocessError) as exc:
        return {"commit": None, "dirty": None, "changed": [], "error": str(exc)}
    changed, fields = [], status.split("\0")
    i = 0
    while i < len(fields):
        entry = fields[i]
        i += 1
        if len(entry) < 4:
            continue
        changed.append(entry[3:])
        if entry[0] in "RC":  # a rename or copy: the next field is the old name
            i += 1
    return {"commit": commit, "dirty": bool(changed), "changed": changed, "error": None}


def git_commit(path: str | os.PathLike) -> dict:
    """Return the commit of the repository holding ``path``, and whether it is dirty.

    ``{"commit": ..., "dirty": ...}`` of :func:`tree_state` (both None outside a git
    checkout or without git).
    """
    state = tree_state(path)
    return {"commit": state["commit"], "dirty": state["dirty"]}


def publishes(repo: str | os.PathLike, results: str | os.PathLike) -> bool:
    """Whether a run writing to ``results`` writes the published results of ``repo``.

    ``repo`` is the checkout holding the workflow; ``results`` the run's folder
    (relative to the working directory). Symbolic links are resolved. A run in
    another working directory (``snakemake --directory .test``) writes its own
    ``results/``, not the checkout's.
    """
    mine = Path(os.path.realpath(results))
    return mine == Path(os.path.realpath(Path(repo) / OUTPUT_PATHS[0]))


#: How to run anyway, named by every refusal of :func:`publish_problem`.
_ELSEWHERE = (
    "or run into another folder: a reduced configuration (e.g. `--configfile "
    "config/quick.yaml` writes results/quick/) or the full one with `--config "
    "results_dir=results/full` (see config/README.md, Clean provenance)"
)


def publish_problem(
    repo: str | os.PathLike,
    results: str | os.PathLike,
    *,
    writes: Iterable[str] | None = None,
    exempt: Iterable[str] = (),
    shown: int = 5,
) -> str | None:
    """Why a run may not write the published results, in one line; None if it may.

    The published results (:data:`OUTPUT_PATHS` of ``repo``) are written only from a
    clean git checkout, so that ``summary.json`` names the commit they come from
    (``provenance.git``, ``"dirty": false``). A run whose folder ``results`` is not
    the published one (:func:`publishes`) may always run, and so may one that
    ``writes`` (the outputs of the jobs it would run) nothing but ``exempt`` files
    (the workflow exempts REPRODUCTION.md: it is made from the committed summary
    and notes, and writes no number). ``shown``: how many changed paths the line
    names.
    """
    if not publishes(repo, results):
        return None
    if writes is not None and not set(writes) - set(exempt):
        return None
    state = tree_state(repo)
    what = "refusing to write the published results (results/, REPRODUCTION.md)"
    if state["commit"] is None:
        return (
            f"{what}: {os.path.realpath(repo)} is not a git checkout that git can "
            f"read ({state['error']}), so they could not name the commit they come "
            f"from; use a clone of the repository, {_ELSEWHERE}"
        )
    if state["dirty"]:
        changed = state["changed"]
        more = f" and {len(changed) - shown} more" if len(changed) > shown else ""
        return (
            f"{what} from a working tree with changes outside them: "
            f"{', '.join(changed[:shown])}{more}; they must name a commit that holds "
            f"the code they come from: commit (or remove) the changes first, "
            f"{_ELSEWHERE}"
        )
    return None


# ------------------------------------------------------------ the library's code

#: Parts of ``tcca_core`` (paths relative to the package, ``/`` for a folder) left
#: out of :func:`source_digest`: they cannot change a number of a result. The
#: presentation (``reporting/``: tables, figures, this module; ``reproduction/``:
#: REPRODUCTION.md's text) and the pipeline's configuration check and planning
#: (which only decide which jobs run, with which parameters: a changed parameter
#: reruns its jobs anyway). Everything else counts: the estimators, engines,
#: baselines, learners, protocol, data sets, fit cache, the registry and the
#: pipeline's data, fit and gather jobs (the investigations run those).
DIGEST_EXCLUDE = (
    "reporting/",
    "reproduction/",
    "pipeline/__init__.py",
    "pipeline/config.py",
    "pipeline/config_schema.py",
    "pipeline/locations.py",
    "pipeline/plan.py",
    "pipeline/report_jobs.py",
    "pipeline/code_units.py",
    "pipeline/release.py",
    "pipeline/sentinel.py",
)


def _is_docstring(node: ast.AST) -> bool:
    return (
        isinstance(node, ast.Expr)
        and isinstance(node.value, ast.Constant)
        and isinstance(node.value.value, str)
    )


def _code_of(node) -> str:
    """Return the code of a syntax tree as text: no docstring, comment or layout.

    A bare string statement (a docstring, or one after an attribute) does nothing
    and is left out. Empty fields (None, []) are left out too, so that a field a
    newer Python adds with an empty default (3.12's ``type_params``) or its
    ``ast.dump`` leaving them out (3.13) does not change the digest.
    """
    if isinstance(node, ast.AST):
        fields = [
            f"{name}={_code_of(value)}"
            for name, value in ast.iter_fields(node)
            if value is not None and not (isinstance(value, list) and not value)
        ]
        return f"{type(node).__name__}({', '.join(fields)})"
    if isinstance(node, list):
        return "[" + ", ".join(_code_of(v) for v in node if not _is_docstring(v)) + "]"
    return repr(node)


def source_files(root: str | os.PathLike | None = None) -> list[Path]:
    """List the modules :func:`source_digest` reads, sorted (``root``: the package)."""
    top = Path(__file__).resolve().parents[1] if root is None else Path(root)
    out = []
    for path in sorted(top.rglob("*.py"), key=lambda p: p.relative_to(top).as_posix()):
        rel = path.relative_to(top).as_posix()
        if not any(
            rel.startswith(x) if x.endswith("/") else rel == x for x in DIGEST_EXCLUDE
        ):
            out.append(path)
    return out


def source_digest(root: str | os.PathLike | None = None) -> str:
    """SHA-256 of the code of ``tcca_core`` that results depend on (hex).

    Over :func:`source_files` (every module but :data:`DIGEST_EXCLUDE`), in order:
    each module's path in the package and its syntax tree without docstrings
    (:func:`_code_of`). A comment, a docstring or the layout changes nothing; any
    change to the code does, even one that changes no number (the digest cannot
    tell). ``root``: the package's folder (default: this installed ``tcca_core``).
    """
    top = Path(__file__).resolve().parents[1] if root is None else Path(root)
    h = hashlib.sha256()
    for path in source_files(top):
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        h.update(path.relative_to(top).as_posix().encode() + b"\n")
        h.update(_code_of(tree).encode() + b"\n")
    return h.hexdigest()


# ------------------------------------------------------ stamps of other outputs

#: The provenance line of a Markdown output (an HTML comment: not shown).
_STAMP = re.compile(r"^<!-- provenance: (\{.*\}) -->[ \t]*\n?", re.MULTILINE)


def output_stamp(repo: str | os.PathLike, command: str | None = None) -> dict:
    """Return what an output records of where it comes from.

    ``commit`` and ``dirty`` (:func:`tree_state` of ``repo``), ``source_digest``
    (:func:`source_digest`) and ``command`` (how to make it again).
    """
    state = tree_state(repo)
    return {
        "commit": state["commit"],
        "dirty": state["dirty"],
        "source_digest": source_digest(),
        "command": command,
    }


def stamp_text(text: str, stamp: Mapping) -> str:
    """``text`` ending with one provenance line (any earlier one removed)."""
    body = _STAMP.sub("", text).rstrip("\n")
    line = json.dumps(dict(stamp), sort_keys=True, ensure_ascii=False)
    return f"{body}\n\n<!-- provenance: {line} -->\n"


def read_stamp(text: str) -> dict | None:
    """Return the provenance a Markdown output records (:func:`stamp_text`) or None."""
    found = _STAMP.findall(text)
    if not found:
        return None
    try:
        stamp = json.loads(found[-1])
    except json.JSONDecodeError:
        return None
    return stamp if isinstance(stamp, dict) else None


def stale_reason(
    path: str | os.PathLike, digest: str | None = None, *, command: str = ""
) -> str | None:
    """Why a Markdown output and its data (``<stem>.json`` beside it) are stale.

    None when both record the same provenance (:func:`stamp_text`, the data's
    ``provenance``) and its ``source_digest`` is ``digest`` (default: the
    library's now, :func:`source_digest`). Otherwise one line: which output, what
    is wrong, and the command that makes it again (the recorded one, else
    ``command``).
    """
    path = Path(path)
    digest = source_digest() if digest is None else digest
    if not path.is_file():
        return f"{path}: missing; make it with `{command}`"
    stamp = read_stamp(path.read_text(encoding="utf-8"))
    rerun = (stamp or {}).get("command") or command
    if stamp is None or not stamp.get("source_digest"):
        return (
            f"{path}: records no source digest (made before outputs were stamped, "
            f"or by a script that does not stamp them): rerun `{rerun}`"
        )
    data = path.with_suffix(".json")
    handed = (
        json.loads(data.read_text(encoding="utf-8")).get("provenance")
        if data.is_file()
        else None
    )
    if handed != stamp:
        return (
            f"{path}: its data {data.name} do not record the same provenance (not "
            f"handed over with it): run `python investigations/hand_over.py`"
        )
    if stamp["source_digest"] != digest:
        return (
            f"{path}: made with tcca_core source {stamp['source_digest'][:12]} (commit "
            f"{str(stamp.get('commit'))[:12]}), the library's is now {digest[:12]}: "
            f"the code it describes changed since; rerun `{rerun}`"
        )
    return None


#: The pinned environment of the published run (docs/install.md), in the checkout.
LOCK_FILE = "requirements/lock.txt"


def lock_digest(repo: str | os.PathLike) -> str | None:
    """SHA-256 of the checkout's :data:`LOCK_FILE`, looked for from ``repo`` up.

    The search stops at the checkout's top (a folder with ``pyproject.toml`` or
    ``.git``); None if there is no lock file.
    """
    start = Path(repo).resolve()
    for folder in (start, *start.parents):
        if (folder / LOCK_FILE).is_file():
            return hashlib.sha256((folder / LOCK_FILE).read_bytes()).hexdigest()
        if (folder / "pyproject.toml").is_file() or (folder / ".git").exists():
            break
    return None


def provenance(config: Mapping, *, repo: str | os.PathLike, threads=None) -> dict:
    """Config, seed, package versions, git commit, machine and threads of a run.

    ``lock_sha256`` is the digest of the lock file (:func:`lock_digest`); with
    ``versions`` it tells whether the run used the pinned environment.
    ``source_digest`` is the digest of the library code the numbers depend on
    (:func:`source_digest`), as every investigation output records it.
    ``machine`` is where the fits ran: the configuration's ``machine`` where given
    (fits written back from another machine's rows), else this one.
    """
    return {
        "seed": config.get("seed"),
        "config": json.loads(json.dumps(config, default=str)),
        "versions": package_versions(),
        "git": git_commit(repo),
        "source_digest": source_digest(),
        "lock_sha256": lock_digest(repo),
        "machine": dict(config.get("machine") or machine_info()),
        "threads": threads,
    }


def table_record(
    name: str,
    spec: Mapping,
    records: Mapping[str, list[dict]],
    *,
    cost: pd.DataFrame | None = None,
    curves: pd.DataFrame | None = None,
    cost_r: pd.DataFrame | None = None,
    cost_selected: pd.DataFrame | None = None,
    threads=None,
) -> dict:
    """Build the machine-readable record of one table (``results/tables/<name>.json``).

    ``curves`` (:func:`accuracy_curves`), ``cost_r`` (:func:`cost_by_r`) and
    ``cost_selected`` (:func:`cost_at_selected`) add the numbers behind the figures
    and the cost table, so that REPRODUCTION.md can check the paper's
    claims about the shape of the curves from the summary alone.
    """

    def records_of(df):
        return json.loads(df.to_json(orient="records")) if df is not None else []

    return {
        "table": name,
        "title": spec.get("title", ""),
        "dataset": spec.get("dataset"),
        "paper_table": spec.get("paper"),
        "columns": [dict(c) for c in spec.get("columns", [])],
        "readings": READINGS,
        "accuracy": records,
        "cost_at_selected_r": records_of(cost),
        "curves": records_of(curves),
        "cost_by_r": records_of(cost_r),
        "cost_selected": records_of(cost_selected),
        "threads": threads,
    }


def build_summary(tables: Sequence[Mapping], prov: Mapping) -> dict:
    """``summary.json``: every table's numbers plus the provenance of the run."""
    return {
        "paper": "Luo et al., Tensor Canonical Correlation Analysis for Multi-view "
        "Dimension Reduction, IEEE TKDE 2015",
        "provenance": dict(prov),
        "paper_machine": PAPER_MACHINE,
        "tables": {t["table"]: dict(t) for t in tables},
    }

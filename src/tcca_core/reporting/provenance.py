"""Provenance of a run, and the machine-readable records of its tables.

Where and how a run was made (machine, versions, commit, configuration), and the
records that ``summary.json`` gathers.
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
import subprocess
import sys
from collections.abc import Mapping, Sequence
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


#: The pipeline's own published outputs: rewriting them does not make a run "dirty".
OUTPUT_PATHS = ("results", "REPRODUCTION.md")


def git_commit(path: str | os.PathLike) -> dict:
    """Return the commit of the repository holding ``path``, and whether it is dirty.

    Dirty: tracked changes outside :data:`OUTPUT_PATHS` (which a rerun rewrites).
    """

    def git(*args):
        return subprocess.run(
            ["git", *args],
            cwd=path,
            capture_output=True,
            text=True,
            timeout=30,
            check=True,
        ).stdout.strip()

    try:
        commit = git("rev-parse", "HEAD")
        dirty = bool(
            git(
                "status",
                "--porcelain",
                "--untracked-files=no",
                "--",
                ":(top)",
                *(f":(top,exclude){p}" for p in OUTPUT_PATHS),
            )
        )
    except (OSError, subprocess.SubprocessError):
        return {"commit": None, "dirty": None}
    return {"commit": commit, "dirty": dirty}


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
    """
    return {
        "seed": config.get("seed"),
        "config": json.loads(json.dumps(config, default=str)),
        "versions": package_versions(),
        "git": git_commit(repo),
        "lock_sha256": lock_digest(repo),
        "machine": machine_info(),
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

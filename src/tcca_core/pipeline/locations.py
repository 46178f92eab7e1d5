"""Where a run writes, and the folders it may not use.

The folder checks of the configuration check (:mod:`tcca_core.pipeline.config`),
made after the schema: :func:`path_problems` / :func:`check_paths` refuse the file
system's root or the home folder as an output folder, data or a fit cache inside the
published results, and a mirror that does not exist; :func:`run_location` says where
a run writes and whether it is the full configuration (a reduced run may not write
the published folder). Every folder is compared with its symbolic links resolved.
Standard library only.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Mapping
from pathlib import Path

from .config_schema import ConfigError, _fail

__all__ = [
    "PUBLISHED",
    "PUBLISHED_PARTS",
    "RUN_KEYS",
    "check_paths",
    "path_problems",
    "run_location",
]

#: The folder of the published results (the committed full grid). Only a run of the
#: full configuration writes there (and REPRODUCTION.md beside it).
PUBLISHED = "results"
#: Keys that change where data are found, how jobs run or where outputs go, not a
#: single number of the tables: a configuration that differs from the full one only
#: in these is still the full configuration.
RUN_KEYS = frozenset(
    {
        "data_root",
        "mirror",
        "offline",
        "strict",
        "skip_unavailable",
        "fit_cache",
        "fit_grain",
        "pending",
        "post_hoc",
        "results_dir",
        # where the costs were measured: a label, not how they were computed
        "machine",
    }
)


#: What a full run writes into :data:`PUBLISHED`: no other run, data or cache may
#: write there (a reduced run's own folder, e.g. results/quick, is beside them).
PUBLISHED_PARTS = (
    "tables",
    "figures",
    "report",
    "summary.json",
    "grid_cost.csv",
    "fits",
    "rows",
    "runs",
    "splits",
    "benchmarks",
    "data",
)


def _results_part(config: Mapping) -> dict:
    return {k: v for k, v in config.items() if k not in RUN_KEYS}


def _inside(path: Path, folder: Path) -> bool:
    return path == folder or folder in path.parents


def _real(path: str | os.PathLike, work: str | os.PathLike = ".") -> Path:
    """Return ``path`` with every symbolic link resolved, relative to ``work``.

    Folders are compared resolved, or a link to the published folder (or to ``/``)
    would pass for another folder.
    """
    return Path(os.path.realpath(Path(work) / os.fspath(path)))


def _published_part(where: Path, work: Path) -> str | None:
    """Return the published folder, or the part of it, that ``where`` is or is in."""
    published = _real(PUBLISHED, work)
    if where == published:
        return PUBLISHED
    for part in PUBLISHED_PARTS:
        if _inside(where, _real(Path(PUBLISHED) / part, work)):
            return f"{PUBLISHED}/{part}"
    return None


#: Folders of the system: no run writes in them, nor in what they hold.
SYSTEM_TREES = tuple(
    Path(p)
    for p in ("/etc", "/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
    + ("/boot", "/dev", "/proc", "/sys", "/run", "/private/etc", "/System")
)
#: Folders of the system that hold other folders: no run writes straight into them.
SYSTEM_FOLDERS = tuple(
    Path(p)
    for p in ("/home", "/root", "/var", "/opt", "/srv", "/mnt", "/media", "/tmp")
    + ("/Users", "/private", "/private/var", "/private/tmp", "/Volumes")
)
#: A run's own folders in the repository (outputs, data, caches; none is a source).
OWN_FOLDERS = frozenset({PUBLISHED, "data", ".cache", "logs"})
#: Source folders of the repository, refused even where git cannot list them.
SOURCE_FOLDERS = frozenset({".git", "config", "src", "workflow", "tests", "docs"})


def _repository_root(work: Path) -> Path:
    """Return the git work tree ``work`` is in (``work`` itself outside one)."""
    for folder in (work, *work.parents):
        if (folder / ".git").exists():
            return folder
    return work


def _tracked_folders(work: Path) -> set[str]:
    """Return the folders of ``work`` that hold files git tracks, plus the sources.

    Only their first path component; :data:`SOURCE_FOLDERS` when git cannot tell.
    """
    found = set(SOURCE_FOLDERS)
    try:
        listed = subprocess.run(
            ["git", "ls-files", "-z"],
            cwd=work,
            capture_output=True,
            timeout=30,
            check=True,
        ).stdout
    except (OSError, subprocess.SubprocessError):
        return found
    for name in listed.decode("utf-8", "replace").split("\0"):
        head, sep, _ = name.partition("/")
        if sep and head:
            found.add(head)
    return found


def _own_folder_problem(where: Path, work: Path) -> str | None:
    """Why ``where`` is not a folder of its own (None: it is).

    Refused: a system folder (:data:`SYSTEM_TREES`, :data:`SYSTEM_FOLDERS`), the
    working directory or the repository's root or any folder above them, the
    repository's ``.git``, and any folder of the working directory that git
    tracks files in (sources, documentation, configuration) but the run's own
    (:data:`OWN_FOLDERS`).
    """
    for tree in SYSTEM_TREES:
        if _inside(where, tree):
            return f"in {tree}, a folder of the system"
    if where in SYSTEM_FOLDERS:
        return "a folder of the system"
    root = _repository_root(work)
    for top, what in ((work, "the working directory"), (root, "the repository")):
        if where == top:
            return f"{what} itself: the run's files would land among its own"
        if where in top.parents:
            return f"above {what} ({top}): the run's files would land among its own"
    if _inside(where, root / ".git"):
        return "inside the repository's .git"
    if work in where.parents:
        head = where.relative_to(work).parts[0]
        if head not in OWN_FOLDERS and head in _tracked_folders(work):
            return (
                f"inside {head}/, a folder of the repository's own files (git tracks "
                "files in it)"
            )
    return None


def _resolved_note(given, where: Path, work: Path) -> str:
    """Where a symbolic link on the way leads, if one does."""
    plain = Path(os.path.abspath(work / os.fspath(given)))
    return "" if plain == where else f" (a link to {where})"


_EXAMPLE = {
    "results_dir": "results/<name>",
    "data_root": "data",
    "fit_cache": ".cache/fits",
}


def path_problems(
    config: Mapping,
    workdir: str | os.PathLike = ".",
    home: str | os.PathLike | None = None,
) -> list[tuple[str, str]]:
    """List (key, problem) for folders that cannot be used, symbolic links resolved.

    - ``results_dir``, ``data_root``, ``fit_cache``: a folder of its own: not the
      file system's root nor the home folder itself (outputs, ``raw/`` and
      ``prepared/`` or cache entries would be written straight into it), nor a
      system folder, the working directory, the repository's root or a folder above
      them, the repository's ``.git``, or a folder with tracked files other than the
      run's own ``results/``, ``data/``, ``.cache/`` and ``logs/``;
    - ``data_root``, ``fit_cache``: not the published folder nor inside what a full
      run writes there (:data:`PUBLISHED_PARTS`);
    - ``mirror``: an existing folder (a misspelt mirror would skip every data set
      of an offline run).

    ``home`` defaults to the user's home folder.
    """
    work = _real(workdir)
    home_dir = _real(Path.home() if home is None else home)
    problems = []
    for key in ("results_dir", "data_root", "fit_cache"):
        given = config.get(key)
        if not isinstance(given, str) or not given.strip():
            continue  # null, or a schema error reported already
        where = _real(given, work)
        note = _resolved_note(given, where, work)
        if where == Path(where.anchor):
            problems.append(
                (
                    key,
                    f"{given!r}{note} is the file system's root: the run would write "
                    "there; choose a folder of its own",
                )
            )
        elif where == home_dir:
            problems.append(
                (
                    key,
                    f"{given!r}{note} is your home folder: the run would write "
                    "straight into it; choose a folder of its own",
                )
            )
        elif (why := _own_folder_problem(where, work)) is not None:
            problems.append(
                (
                    key,
                    f"{given!r}{note} is {why}; choose a folder of its own, e.g. "
                    + _EXAMPLE[key],
                )
            )
        elif key != "results_dir":
            part = _published_part(where, work)
            if part is not None:
                problems.append(
                    (
                        key,
                        f"{given!r}{note} is inside {part}, the published results, "
                        "which only a run of the full configuration writes: choose a "
                        f"folder outside {PUBLISHED}/, e.g. "
                        + ("data" if key == "data_root" else ".cache/fits"),
                    )
                )
    mirror = config.get("mirror")
    if isinstance(mirror, str) and mirror.strip():
        where = _real(mirror, work)
        note = _resolved_note(mirror, where, work)
        if not where.exists():
            problems.append(
                (
                    "mirror",
                    f"{mirror!r}{note} does not exist: give the folder that holds "
                    "<dataset>/<file>, or leave `mirror` out (null)",
                )
            )
        elif not where.is_dir():
            problems.append(
                ("mirror", f"{mirror!r}{note} is not a folder (<mirror>/<dataset>/...)")
            )
    return problems


def check_paths(
    config: Mapping,
    workdir: str | os.PathLike = ".",
    home: str | os.PathLike | None = None,
) -> None:
    """Raise ConfigError listing every :func:`path_problems`, one line each."""
    problems = path_problems(config, workdir, home)
    if problems:
        raise ConfigError(
            "\n".join(f"invalid config: {key}: {msg}" for key, msg in problems)
            + "\n(see config/README.md)"
        )


def run_location(
    config: Mapping,
    base: Mapping | None,
    overlays: list | tuple = (),
    workdir: str | os.PathLike = ".",
) -> dict:
    """Where a run writes, and whether it is the full configuration.

    Parameters
    ----------
    config : mapping
        The merged configuration (the base with the overlays and ``--config``
        values, defaults filled in).
    base : mapping or None
        The base configuration alone (``config/config.yaml``), defaults filled in;
        ``None``: ``config`` is taken as the full configuration.
    overlays : sequence of path-like
        The ``--configfile`` files, in order (they name a reduced run's folder).
    workdir : path-like
        The working directory the relative paths are resolved against.

    Returns
    -------
    dict
        ``results`` (the folder of tables, figures, summary and job files),
        ``logs``, ``reduced`` (True when a key outside :data:`RUN_KEYS` differs
        from the base), ``label`` (the run's name: ``"full"``, or the overlays'
        file names, or ``"custom"``), ``published`` (the run writes the published
        folder :data:`PUBLISHED` and REPRODUCTION.md), ``reproduction`` (the path
        of its reproduction file) and ``note`` (what the titles of a reduced run
        say, empty for the full one).

    Raises
    ------
    ConfigError
        ``results_dir`` is the published folder (or a folder in what a full run
        writes there, :data:`PUBLISHED_PARTS`), symbolic links resolved, for a
        configuration that is not the full one.
    """
    reduced = base is not None and _results_part(config) != _results_part(base)
    names = [Path(str(o)).stem for o in overlays or ()]
    label = ("-".join(names) or "custom") if reduced else "full"
    work = _real(workdir)
    given = config.get("results_dir")
    if given:
        folder = Path(os.path.normpath(str(given))).as_posix()
    else:
        folder = PUBLISHED if not reduced else f"{PUBLISHED}/{label}"
    # resolved: a link to the published folder (or into it) is the published folder
    where = _real(folder, work)
    part = _published_part(where, work)
    if reduced and part is not None:
        shown = given if given else folder
        _fail(
            "results_dir",
            f"{shown!r}{_resolved_note(shown, where, work)} holds the published "
            f"results of the full configuration ({part}); this run differs from it (a "
            f"reduced run: {label}) and would overwrite them: choose another folder, "
            f"e.g. {PUBLISHED}/{label}",
        )
    is_published = where == _real(PUBLISHED, work)
    return {
        "results": folder,
        "logs": "logs" if is_published else f"{folder}/logs",
        "reduced": reduced,
        "label": label,
        "published": is_published,
        "reproduction": "REPRODUCTION.md"
        if is_published
        else f"{folder}/REPRODUCTION.md",
        "note": f"reduced run: {label}" if reduced else "",
    }

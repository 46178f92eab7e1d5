"""Helpers shared by the workflow scripts: logging to the rule's log, data loading,
subsets, the split files and atomic writes; and the static facts (method options, r
bounds, data-set shapes) that workflow/rules/common.smk checks the configuration
against before any job runs. Tables, figures and the summary are built by
tcca_core.reporting; splits and fits by tcca_core.protocol."""

from __future__ import annotations

import contextlib
import json
import logging
import math
import os
import sys
import zlib
from collections.abc import Iterator
from pathlib import Path

import numpy as np


def start_logging(snakemake) -> logging.Logger:
    """Send stderr, warnings and the ``logging`` records of the job to its log file."""
    log = Path(snakemake.log[0])
    log.parent.mkdir(parents=True, exist_ok=True)
    sys.stderr = open(log, "w", buffering=1, encoding="utf-8")  # noqa: SIM115
    logging.basicConfig(
        stream=sys.stderr,
        level=logging.INFO,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        force=True,
    )
    logging.captureWarnings(True)
    return logging.getLogger(f"workflow.{snakemake.rule}")


def load_views(name: str, config: dict, views=None, **options):
    """``tcca_core.datasets.load`` with the pipeline's data root and mirror, keeping
    only the ``views`` named (by ``info["view_names"]`` or position), in that order.

    ``config`` is the workflow's (``snakemake.config``): where the data live is not a
    rule parameter, so moving the mirror does not make Snakemake rerun every job."""
    from tcca_core import datasets

    data = datasets.load(
        name, root=config["data_root"], mirror=config["mirror"], **options
    )
    if views:
        names = list(data.info.get("view_names") or [])
        m = len(data.views)
        try:
            idx = [v if isinstance(v, int) else names.index(v) for v in views]
            if any(not 0 <= i < m for i in idx):
                raise ValueError
        except ValueError:
            raise ValueError(
                f"data set {name!r} has {m} views {names} (positions 0 to {m - 1}); "
                f"config asks for {list(views)}"
            ) from None
        data.views = [data.views[i] for i in idx]
        data.info = {
            **data.info,
            "view_names": [names[i] for i in idx] if names else idx,
        }
    return data


def derived_rng(seed: int, *names) -> np.random.Generator:
    """A generator for one purpose, derived from the config seed and stable names."""
    return np.random.default_rng(
        [int(seed), *(zlib.crc32(str(n).encode()) for n in names)]
    )


def random_subset(n: int, size: int | None, rng: np.random.Generator) -> np.ndarray:
    """Sorted indices of ``size`` rows drawn without replacement (all rows if None).

    A ``size`` above ``n`` is an error (a configuration mistake, not "all rows")."""
    if size is not None and size > n:
        raise ValueError(f"subset = {size} is above the {n} rows of the data set")
    if size is None or size == n:
        return np.arange(n)
    return np.sort(rng.choice(n, size=int(size), replace=False))


def save_splits(path, subset, splits) -> None:
    """Write the subset (rows of the data set) and the splits (rows of the subset)."""
    doc = {
        "subset": np.asarray(subset).tolist(),
        "splits": [s.to_dict() for s in splits],
    }
    Path(path).write_text(json.dumps(doc, separators=(",", ":")) + "\n")


def load_splits(path, which: str):
    """(subset, [Split, ...]) for split ``which`` (a number) or every split ("all")."""
    from tcca_core.protocol import Split

    doc = json.loads(Path(path).read_text())
    splits = [Split.from_dict(d) for d in doc["splits"]]
    if which != "all":
        splits = [splits[int(which)]]
    return np.asarray(doc["subset"], dtype=np.intp), splits


@contextlib.contextmanager
def atomic_output(path) -> Iterator[Path]:
    """Yield a temporary path next to ``path``; rename it onto ``path`` on success.

    A job killed while writing (SIGTERM, SIGKILL, a node failure) leaves at most
    ``<name>.part`` behind, never a truncated file under the final name, so a rerun
    redoes the job instead of trusting half a table. On an exception the temporary
    file is removed.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    part = path.with_name(path.name + ".part")
    try:
        yield part
        with open(part, "rb") as f:  # on disk before the rename makes it visible
            os.fsync(f.fileno())
        os.replace(part, path)
    except BaseException:
        part.unlink(missing_ok=True)
        raise


# ----------------------------------------------------------- facts for config checks

#: Options a configuration may give each method of tcca_core.protocol.METHODS (its
#: validation grid and its extra keywords, plus ``subset`` for the transductive DSE
#: and SSMVD), and what bounds its dimension r: ``None`` (no r), ``"rows"`` (the number
#: of rows it is fitted on: kernel and transductive methods) or ``"views"`` (that and
#: prod(d) / max(d) of the view dimensions: TCCA's CP-rank bound, which is at least the
#: min(d_i, d_j) of the CCA variants). tests/test_pipeline_faults.py checks both against
#: the registry.
METHOD_OPTIONS = {
    "bsf": ("normalize",),
    "cat": ("normalize",),
    "cca_bst": ("eps", "center"),
    "cca_avg": ("eps", "center"),
    "cca_ls": ("eps", "center"),
    "dse": ("view_embedding", "n_neighbors", "pca_components", "subset"),
    "ssmvd": (
        "lambda1",
        "lambda2",
        "view_embedding",
        "n_neighbors",
        "pca_components",
        "max_iter",
        "tol",
        "subset",
    ),
    "tcca": ("eps", "max_iter", "tol", "init", "algorithm", "center"),
    "tcca_nc": ("eps", "center", "max_iter", "tol", "init", "algorithm"),
    "bsk": (),
    "avg": (),
    "kcca_bst": ("eps",),
    "kcca_avg": ("eps",),
    "ktcca": ("eps", "max_iter", "tol", "init", "algorithm", "jitter", "center"),
}

#: = tcca_core.protocol.R_GRID_PAPER (not imported: that module takes seconds to load,
#: and the configuration is checked in every Snakemake process).
R_GRID_PAPER = (
    list(range(5, 101, 5)) + list(range(110, 201, 10)) + list(range(220, 301, 20))
)
R_BOUND = {
    "bsf": None,
    "cat": None,
    "bsk": None,
    "avg": None,
    "cca_bst": "views",
    "cca_avg": "views",
    "cca_ls": "views",
    "tcca": "views",
    "tcca_nc": "views",
    "dse": "rows",
    "ssmvd": "rows",
    "kcca_bst": "rows",
    "kcca_avg": "rows",
    "ktcca": "rows",
}


#: Named parts of each data set (``Dataset.splits``), which a setting's ``pool`` may
#: name; tests/test_pipeline_faults.py checks them against the loaders.
DATASET_SPLITS = {"nuswide": ("train", "test")}

#: Tables and columns of the paper (keys of tcca_core.reporting.PAPER_TABLES, not
#: imported: that module loads pandas); tests/test_pipeline_faults.py checks them.
PAPER_COLUMNS = {
    "secstr": ("84K", "1.3M"),
    "ads": ("100",),
    "nuswide_linear": ("4", "6", "8"),
    "nuswide_kernel": ("4", "6", "8"),
}

#: Fewest validation and test rows a split may have (val_fraction near 0 or 1, or a
#: tiny evaluation pool, would leave accuracies over a handful of rows).
MIN_EVAL_ROWS = 10


def dataset_shape(name: str) -> tuple[int, list[tuple[str, int]]] | None:
    """(most rows, [(view name, dimension), ...]) of a data set, without its files.

    Upper bounds: NUS-WIDE's rows depend on its ``selection`` (all 269,648 images
    bound them) and Ads' first view has 587 columns with ``include_local: false``.
    ``None`` for a data set this table does not know (no r check is then made).
    """
    from tcca_core.datasets import ads, mfeat, nuswide, secstr

    shapes = {
        "secstr": (83_679, [(v, 105) for v in secstr.VIEW_NAMES]),
        "secstr-extra": (1_189_472, [(v, 105) for v in secstr.VIEW_NAMES]),
        "ads": (3_279, list(zip(ads.VIEW_NAMES, (588, 495, 472), strict=True))),
        "nuswide": (
            nuswide.N_IMAGES,
            [(n, v[3]) for n, v in zip(nuswide.VIEW_NAMES, nuswide.VIEWS, strict=True)],
        ),
        "mfeat": (2_000, [(v, mfeat.DIMS[v]) for v in mfeat.VIEWS]),
    }
    return shapes.get(name)


def r_bound(
    dataset: str,
    methods,
    *,
    views=None,
    subset: int | None = None,
    fit_extra: str | None = None,
    extra_subset: int | None = None,
) -> tuple[int, str] | None:
    """The largest r any of ``methods`` can return on a setting, and why.

    Every method caps r at its own r_max (rows above it are recorded as
    ``r_capped``); an r above this bound is capped for every method of the setting,
    a configuration mistake. ``None`` when no method has an r or the data set's shape
    is not known.
    """
    kinds = {R_BOUND.get(m, "rows") for m in methods} - {None}
    shape = dataset_shape(dataset)
    if not kinds or shape is None:
        return None
    n_max, named = shape
    n = n_max if subset is None else min(int(subset), n_max)
    why = (
        f"{n} rows, its `subset`"
        if subset is not None and subset < n_max
        else f"at most {n} rows, all of {dataset}"
    )
    if fit_extra:
        extra_shape = dataset_shape(fit_extra)
        if extra_shape is None:
            return None
        n_extra = extra_shape[0] if extra_subset is None else int(extra_subset)
        n += n_extra
        why += f" plus {n_extra} extra rows of {fit_extra}"
    if "rows" in kinds:
        return n, f"the methods are fitted on {why}"
    names = [v for v, _ in named]
    try:
        dims = [
            named[v][1] if isinstance(v, int) else named[names.index(v)][1]
            for v in (views or range(len(named)))
        ]
    except (ValueError, IndexError):  # a bad view name: the fit job says which
        return n, f"the methods are fitted on {why}"
    cap = math.prod(dims) // max(dims)
    if cap < n:
        return cap, (
            f"prod(d) / max(d) = {cap} for view dimensions {dims}: TCCA's bound, "
            "and CCA's min(d_i, d_j) is lower"
        )
    return n, f"the methods are fitted on {why}"


def _view_problem(views, named) -> str | None:
    names = [v for v, _ in named]
    m = len(named)
    seen = set()
    for v in views:
        if isinstance(v, bool) or not isinstance(v, int | str):
            return f"{v!r} is neither a view name nor a position"
        if isinstance(v, int) and not 0 <= v < m:
            return (
                f"position {v} is out of range: the data set has {m} views "
                f"(positions 0 to {m - 1})"
            )
        if isinstance(v, str) and v not in names:
            return f"unknown view {v!r}; the data set has {', '.join(map(repr, names))}"
        i = v if isinstance(v, int) else names.index(v)
        if i in seen:
            return f"view {names[i]!r} is given twice"
        seen.add(i)
    return None


def value_problems(config: dict, settings: dict) -> list[tuple[str, str]]:
    """(key, problem) for configuration values that pass the schema but cannot work:
    views out of range or unknown, a ``pool`` the data set does not have, a subset
    larger than the data set, an unknown paper table or column.

    ``settings`` are common.smk's resolved settings (methods resolved). Only what is
    known without the data files is checked here; the jobs check the rest (the exact
    number of rows, e.g. NUS-WIDE's after its selection) with a clear message.
    """
    problems = []
    for dataset, dcfg in config["datasets"].items():
        shape = dataset_shape(dataset)
        if shape is None:
            continue
        n_max, named = shape
        if dcfg.get("views") is not None:
            why = _view_problem(dcfg["views"], named)
            if why:
                problems.append((f"datasets.{dataset}.views", why))
        for setting, s in settings.get(dataset, {}).items():
            key = f"datasets.{dataset}.settings.{setting}"
            own = config["datasets"][dataset]["settings"][setting]
            if own.get("views") is not None:
                why = _view_problem(own["views"], named)
                if why:
                    problems.append((f"{key}.views", why))
            pool = s.get("pool")
            if pool is not None and pool not in DATASET_SPLITS.get(dataset, ()):
                parts = DATASET_SPLITS.get(dataset)
                problems.append(
                    (
                        f"{key}.pool",
                        f"data set {dataset!r} has no part {pool!r} "
                        f"(it has {', '.join(map(repr, parts)) if parts else 'none'})",
                    )
                )
            subset = s.get("subset")
            if subset is not None and subset > n_max:
                problems.append(
                    (
                        f"{key}.subset",
                        f"{subset} is above the {n_max} rows of {dataset}",
                    )
                )
            rows = n_max if subset is None else min(subset, n_max)
            for method, params in s["methods"].items():
                sub = (params or {}).get("subset")
                if sub is not None and sub > rows:
                    problems.append(
                        (
                            f"{key}.methods.{method}.subset",
                            f"{sub} is above the {rows} rows of the setting",
                        )
                    )
    for table, tcfg in config["tables"].items():
        paper = tcfg.get("paper")
        if paper is not None and paper not in PAPER_COLUMNS:
            problems.append(
                (
                    f"tables.{table}.paper",
                    f"unknown paper table {paper!r}; known: "
                    + ", ".join(sorted(PAPER_COLUMNS)),
                )
            )
            continue
        for i, col in enumerate(tcfg["columns"]):
            column = col.get("paper")
            if column is None:
                continue
            if paper is None:
                problems.append(
                    (
                        f"tables.{table}.columns[{i}].paper",
                        "the table has no paper table (`paper: null`) to take a column "
                        "from",
                    )
                )
            elif column not in PAPER_COLUMNS[paper]:
                problems.append(
                    (
                        f"tables.{table}.columns[{i}].paper",
                        f"paper table {paper!r} has no column {column!r}; it has "
                        + ", ".join(map(repr, PAPER_COLUMNS[paper])),
                    )
                )
    return problems


def check_eval_rows(splits, where: str) -> None:
    """Every split needs MIN_EVAL_ROWS validation and test rows (else ValueError)."""
    for k, s in enumerate(splits):
        n_val, n_test = len(s.validation), len(s.test)
        if min(n_val, n_test) < MIN_EVAL_ROWS:
            raise ValueError(
                f"{where}: split {k} has {n_val} validation and {n_test} test rows, "
                f"fewer than {MIN_EVAL_ROWS}; accuracies over so few rows mean "
                "nothing: change val_fraction (or the labeled count, subset or pool)"
            )

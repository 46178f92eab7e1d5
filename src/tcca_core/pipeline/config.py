"""The pipeline's configuration check, before any job runs.

``workflow/rules/common.smk`` reads every configuration file again
(:func:`check_config_files`: a key given twice is refused, where Snakemake keeps the
last), then checks the merged configuration; every problem fails with ``invalid
config: <key>: <what is wrong>`` (one line each), in four steps, the folders
(:func:`check_paths`, symbolic links resolved) checked after the second:

1. the JSON schema (``workflow/schemas/config.schema.yaml``, with the method and
   learner names of :mod:`tcca_core.registry`; :func:`check_schema`): unknown keys,
   wrong types, empty lists and grids, unknown methods, bad names;
2. Snakemake's own validation, which also fills in the schema's defaults (in
   common.smk);
3. cross-references and bounds (:func:`resolve_settings`): data sets, method sets and
   settings named elsewhere, data-set options, method options (the registry's
   :attr:`~tcca_core.registry.MethodSpec.options`), and r grids above the largest r
   the setting's methods can return (:func:`r_bound`);
4. values that only the data sets' facts exclude (:func:`value_problems`): views out
   of range, a pool the data set lacks, a subset above its rows, an unknown paper
   table or column.

Every fact comes from its home: methods from :mod:`tcca_core.registry`, data-set
shapes and parts from each :class:`~tcca_core.datasets.DatasetSpec`, the paper's
tables from :mod:`tcca_core.paper`. No estimator is imported.

The steps live in their own modules: the files and the schema in
:mod:`.config_schema`, the settings in :mod:`.config_settings`, the folders in
:mod:`.locations`; this module checks the values (step 4) and composes steps 3 and 4
(:func:`check_config`).
"""

from __future__ import annotations

from ..datasets import DATASETS
from ..paper import paper_columns

# Re-exported: tcca_core.pipeline.config stays the configuration check's one entry
# point (workflow/rules/common.smk, tests and user code import these names from here).
from .config_schema import (
    ConfigError,
    check_config_files,
    check_schema,
    load_schema,
    load_yaml,
)
from .config_settings import (
    dataset_shape,
    r_bound,
    r_grid_of,
    resolve_settings,
    setting_views,
)
from .locations import (
    PUBLISHED,
    PUBLISHED_PARTS,
    RUN_KEYS,
    check_paths,
    path_problems,
    run_location,
)

__all__ = [
    "FIT_GRAINS",
    "PUBLISHED",
    "PUBLISHED_PARTS",
    "RUN_KEYS",
    "ConfigError",
    "check_config",
    "check_config_files",
    "check_paths",
    "check_schema",
    "dataset_shape",
    "load_schema",
    "load_yaml",
    "path_problems",
    "r_bound",
    "r_grid_of",
    "resolve_settings",
    "run_location",
    "setting_views",
    "value_problems",
]


#: The values of ``fit_grain``: how the fits are cut into jobs (config/README.md).
#: The schema's enum lists the same (tests/test_config_checks.py).
FIT_GRAINS = {
    "method": "one job per data set x setting x method, looping over the splits",
    "split": "one job per data set x setting x method x split",
    "point": "one job per data set x setting x method x grid point (eps value, "
    "SSMVD's (lambda1, lambda2) pair), looping over the splits",
}


def _grain_problem(grain) -> str | None:
    if grain in FIT_GRAINS:
        return None
    return f"{grain!r} is not a fit grain; choose " + "; ".join(
        f"{name} ({what})" for name, what in FIT_GRAINS.items()
    )


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
    """List (key, problem) for values that pass the schema but cannot work.

    A ``fit_grain`` that is none of :data:`FIT_GRAINS`, views out of range or
    unknown, a ``pool`` the data set does not have, a subset larger than the data
    set, an unknown paper table or column.

    ``settings`` are common.smk's resolved settings (methods resolved). Only what is
    known without the data files is checked here; the jobs check the rest (the exact
    number of rows, e.g. NUS-WIDE's after its selection) with a clear message.
    """
    problems = []
    why = _grain_problem(config.get("fit_grain", "method"))
    if why:
        problems.append(("fit_grain", why))
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
            parts = DATASETS[dataset].parts
            if pool is not None and pool not in parts:
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
    paper_cols = paper_columns()
    for table, tcfg in config["tables"].items():
        paper = tcfg.get("paper")
        if paper is not None and paper not in paper_cols:
            problems.append(
                (
                    f"tables.{table}.paper",
                    f"unknown paper table {paper!r}; known: "
                    + ", ".join(sorted(paper_cols)),
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
            elif column not in paper_cols[paper]:
                problems.append(
                    (
                        f"tables.{table}.columns[{i}].paper",
                        f"paper table {paper!r} has no column {column!r}; it has "
                        + ", ".join(map(repr, paper_cols[paper])),
                    )
                )
    return problems


def check_config(cfg: dict) -> dict:
    """Run steps 3 and 4 (after the schema): the resolved settings, or ConfigError.

    Returns ``{dataset: {setting: resolved setting}}``: each setting with its
    ``methods`` (a method set's name replaced by the set), ``r_grid`` and
    ``same_as`` filled in, and the methods marked pending dropped, as are the
    post hoc methods (the registry's ``role="post_hoc"``, e.g. TCCA (uncentered))
    unless ``post_hoc`` is true, with a warning naming each one left out and where.
    Methods of the roles ``"paper"`` and ``"extension"`` always run.
    """
    settings = resolve_settings(cfg)
    problems = value_problems(cfg, settings)
    if problems:
        raise ConfigError(
            "\n".join(f"invalid config: {key}: {msg}" for key, msg in problems)
            + "\n(see config/README.md)"
        )
    return settings

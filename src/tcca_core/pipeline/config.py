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
"""

from __future__ import annotations

import difflib
import logging
import os
from collections.abc import Mapping
from pathlib import Path

from ..datasets import DATASETS
from ..paper import paper_columns
from ..registry import LEARNERS, METHODS, R_GRID_PAPER

__all__ = [
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


class ConfigError(ValueError):
    """A configuration error found before any job runs; names the offending key."""


#: Keys naming folders (a pattern error is "must be a folder name").
_FOLDER_KEYS = ("data_root", "mirror", "fit_cache", "results_dir")


def _fail(key, message):
    raise ConfigError(f"invalid config: {key}: {message}")


def _key(path, *more):
    """Dotted key of a path into the config: datasets.ads.settings.l100, columns[0]."""
    out = ""
    for part in [*path, *more]:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else part)
    return out or "<top level>"


def _short(value, limit=80):
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _describe(error):
    """(key, message) for one jsonschema error, descending into oneOf alternatives."""
    path, kind = list(error.absolute_path), error.validator
    if kind == "oneOf" and error.context:
        alternatives = error.validator_value
        if all("required" in a for a in alternatives):
            names = [n for a in alternatives for n in a["required"]]
            return _key(path), f"give exactly one of {', '.join(names)}"
        # drop the alternatives that fail on the type: they are not what was meant
        by_alt = {}
        for sub in error.context:
            by_alt.setdefault(sub.relative_schema_path[0], []).append(sub)
        meant = [
            subs
            for subs in by_alt.values()
            if not any(
                s.validator == "type" and len(s.absolute_path) == len(path)
                for s in subs
            )
        ]
        if len(meant) == 1:
            return _describe(min(meant[0], key=lambda s: -len(s.absolute_path)))
        return _key(path), (
            f"{_short(error.instance)} is not valid here: "
            + "; or ".join(sorted({s.message for s in error.context}))[:300]
        )
    if kind == "additionalProperties":
        allowed = sorted(error.schema.get("properties", {}))
        extra = [k for k in error.instance if k not in allowed]
        hints = difflib.get_close_matches(extra[0], allowed, n=1) if allowed else []
        return _key(path, extra[0]), (
            "unknown key"
            + (f" (did you mean {hints[0]!r}?)" if hints else "")
            + (f"; allowed: {', '.join(allowed)}" if allowed else "")
        )
    if "propertyNames" in error.schema_path:
        name = error.instance
        if kind == "enum":
            what = (
                "method" if "method" in error.schema.get("description", "") else "name"
            )
            return _key(path, name), (
                f"unknown {what} {name!r}; choose one of "
                + ", ".join(error.validator_value)
            )
        return _key(path, name), f"invalid name {name!r}: {error.message}"
    if kind == "required":
        missing = [r for r in error.validator_value if r not in error.instance]
        return _key(path, missing[0]), "required key is missing"
    if kind in ("minItems", "minProperties", "minLength"):
        if len(error.instance) == 0 or error.validator_value == 1:
            return _key(path), f"must not be empty (got {_short(error.instance)})"
        what = "views" if path and path[-1] == "views" else "items"
        return _key(path), (
            f"needs at least {error.validator_value} {what}, got "
            f"{len(error.instance)} ({_short(error.instance)})"
        )
    if kind == "pattern" and path and path[-1] in _FOLDER_KEYS:
        if error.instance == "":  # minLength says the same
            return _key(path), "must not be empty (got '')"
        return _key(path), f"must be a folder name, got {_short(error.instance)}"
    if kind in ("maximum", "minimum", "exclusiveMaximum", "exclusiveMinimum"):
        bound = {
            "maximum": "at most",
            "minimum": "at least",
            "exclusiveMaximum": "below",
            "exclusiveMinimum": "above",
        }[kind]
        return _key(path), (
            f"must be {bound} {error.validator_value}, got {_short(error.instance)}"
        )
    if kind == "type":
        return _key(path), (
            f"expected {error.validator_value}, got {_short(error.instance)} "
            f"({type(error.instance).__name__})"
        )
    if kind == "enum":
        return _key(path), (
            f"{_short(error.instance)} is not one of "
            f"{', '.join(map(str, error.validator_value))}"
        )
    return _key(path), error.message


def _duplicate_keys(node, path=()) -> list[tuple[str, str, int, int]]:
    """(dotted key, key, line, first line) of each key given twice in a mapping."""
    import yaml

    found = []
    if isinstance(node, yaml.MappingNode):
        seen: dict = {}
        for key_node, value_node in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":  # `<<`: may be overridden
                continue
            key = key_node.value if isinstance(key_node, yaml.ScalarNode) else None
            line = key_node.start_mark.line + 1
            if key is not None and key in seen:
                found.append((_key([*path, key]), key, line, seen[key]))
            elif key is not None:
                seen[key] = line
            found += _duplicate_keys(value_node, (*path, key if key else "?"))
    elif isinstance(node, yaml.SequenceNode):
        for i, item in enumerate(node.value):
            found += _duplicate_keys(item, (*path, i))
    return found


def load_yaml(path: str | os.PathLike):
    """Read a YAML file, refusing a key given twice in one mapping.

    PyYAML keeps the last value of a repeated key without a word, so a setting
    written twice (the second copy forgotten at the bottom of a file) would silently
    replace the first. ConfigError: ``invalid config: <file>, line <n>: duplicate
    key <dotted key> (first at line <m>) ...``, one line per repeated key.
    """
    import yaml

    text = Path(path).read_text(encoding="utf-8")
    duplicates = _duplicate_keys(yaml.compose(text, Loader=yaml.SafeLoader))
    if duplicates:
        raise ConfigError(
            "\n".join(
                f"invalid config: {os.fspath(path)}, line {line}: duplicate key "
                f"{dotted!r} (first at line {first}); give each key once (YAML would "
                "silently keep the last)"
                for dotted, _, line, first in duplicates
            )
        )
    return yaml.safe_load(text)


def check_config_files(paths) -> None:
    """Refuse configuration files with a key given twice (:func:`load_yaml`).

    Snakemake reads ``configfile:`` and ``--configfile`` files itself, keeping the
    last of two equal keys; common.smk reads each again with this check before any
    other. Every file's problems are reported together.
    """
    problems = []
    for path in paths:
        try:
            load_yaml(path)
        except ConfigError as exc:
            problems.append(str(exc))
    if problems:
        raise ConfigError("\n".join(problems))


def load_schema(schema_path: str | os.PathLike) -> dict:
    """Load the configuration schema, with the registry's method and learner names.

    The schema file leaves these names open (``workflow/schemas/config.schema.yaml``);
    they are filled in here from :mod:`tcca_core.registry`, so that a method
    registered there is a valid configuration value without editing the schema.
    """
    schema = load_yaml(schema_path)
    schema["$defs"]["method"]["enum"] = list(METHODS)
    schema["$defs"]["setting"]["properties"]["learner"]["enum"] = list(LEARNERS)
    return schema


def _command_line_booleans(cfg: dict, schema: dict) -> None:
    """Turn ``"true"``/``"false"`` of top-level boolean keys into booleans, in place.

    Snakemake hands ``--config strict=true`` over as the string ``'true'`` (only
    Python's ``True`` becomes a boolean), so the documented spelling would fail.
    """
    for key, prop in schema.get("properties", {}).items():
        types = prop.get("type")
        types = [types] if isinstance(types, str) else types or []
        value = cfg.get(key)
        if "boolean" in types and isinstance(value, str):
            word = value.strip().lower()
            if word in ("true", "false"):
                cfg[key] = word == "true"


def check_schema(cfg: dict, schema_path: str | os.PathLike) -> None:
    """Raise ConfigError listing every schema violation, one line each, key first.

    Top-level boolean keys given as ``true``/``false`` on the command line are
    turned into booleans first (``cfg`` is changed in place).
    """
    import jsonschema

    schema = load_schema(schema_path)
    _command_line_booleans(cfg, schema)
    validator = jsonschema.Draft202012Validator(schema)
    problems = sorted({_describe(e) for e in validator.iter_errors(cfg)})
    if problems:
        raise ConfigError(
            "\n".join(f"invalid config: {key}: {msg}" for key, msg in problems)
            + "\n(see config/README.md and workflow/schemas/config.schema.yaml)"
        )


def _check_method_options(key, methods):
    """Options of each method of a method set against what the method accepts."""
    for method, params in methods.items():
        spec = METHODS.get(method)
        allowed = None if spec is None else spec.options
        for option in params or {}:
            if allowed is not None and option not in allowed:
                hints = difflib.get_close_matches(option, allowed, n=1)
                _fail(
                    f"{key}.{method}.{option}",
                    f"{method} has no option {option!r}"
                    + (f" (did you mean {hints[0]!r}?)" if hints else "")
                    + f"; allowed: {', '.join(allowed) or 'none'}",
                )


def setting_views(dcfg: Mapping, setting: Mapping) -> list | None:
    """Return the views of a setting: its own, else its data set's (None: all)."""
    return setting.get("views", dcfg.get("views"))


def _check_r_grid(dataset, dcfg, setting, s):
    """Reject an r above the largest r that any method of the setting can return."""
    grid = r_grid_of(s)
    bound = r_bound(
        dataset,
        s["methods"],
        views=setting_views(dcfg, s),
        subset=s.get("subset"),
        fit_extra=s.get("fit_extra"),
        extra_subset=s.get("extra_subset"),
    )
    if bound is None or max(grid) <= bound[0]:
        return
    key = f"datasets.{dataset}.settings.{setting}"
    own = "r_grid" in dcfg["settings"][setting]
    too_big = [r for r in grid if r > bound[0]]
    _fail(
        f"{key}.r_grid" if own else "r_grid",
        f"r = {', '.join(map(str, too_big))} {'is' if len(too_big) == 1 else 'are'} "
        f"above {bound[0]}, the largest r that any method of {key} "
        f"({', '.join(s['methods'])}) can return ({bound[1]}); every method would "
        "skip it: lower the grid" + ("" if own else " or give the setting its own"),
    )


def _runs_by_default(method: str) -> bool:
    spec = METHODS.get(method)
    return spec is None or spec.runs_by_default


def resolve_settings(cfg: dict) -> dict:
    """Resolve each setting's `methods` and `r_grid`, checking as it goes.

    Checks cross-references, data-set and method options, and the r grids against
    what the methods allow (ConfigError naming the key).
    """
    method_sets = cfg.get("method_sets", {})
    for name, methods in method_sets.items():
        _check_method_options(f"method_sets.{name}", methods)
    resolved: dict[str, dict] = {}
    known = sorted(DATASETS)
    for dataset, dcfg in cfg["datasets"].items():
        if dataset not in DATASETS:
            hints = difflib.get_close_matches(dataset, known, n=1)
            _fail(
                f"datasets.{dataset}",
                "unknown data set"
                + (f" (did you mean {hints[0]!r}?)" if hints else "")
                + f"; tcca_core.datasets has {', '.join(known)}",
            )
        spec = DATASETS[dataset]
        options = [*spec.prepare_options, *spec.load_options]
        for option in dcfg.get("load") or {}:
            if option not in options:
                _fail(
                    f"datasets.{dataset}.load.{option}",
                    f"unknown option of data set {dataset!r}; "
                    f"allowed: {', '.join(options) or 'none'}",
                )
        resolved[dataset] = {}
        for setting, scfg in dcfg["settings"].items():
            key = f"datasets.{dataset}.settings.{setting}"
            methods = scfg["methods"]
            if isinstance(methods, str):
                if methods not in method_sets:
                    _fail(
                        f"{key}.methods",
                        f"unknown method set {methods!r} (method_sets has: "
                        f"{', '.join(sorted(method_sets)) or 'none'})",
                    )
                methods = method_sets[methods]
            else:
                _check_method_options(f"{key}.methods", methods)
            extra = scfg.get("fit_extra")
            if extra and extra not in DATASETS:
                _fail(f"{key}.fit_extra", f"unknown data set {extra!r} ({known})")
            resolved[dataset][setting] = {
                **scfg,
                "methods": {m: dict(p or {}) for m, p in methods.items()},
                "r_grid": scfg.get("r_grid", cfg.get("r_grid", "paper")),
                "same_as": dict(scfg.get("same_as") or {}),
            }
            _check_r_grid(dataset, dcfg, setting, resolved[dataset][setting])
    for dataset, settings in resolved.items():
        for setting, scfg in settings.items():
            for method, other in scfg["same_as"].items():
                key = f"datasets.{dataset}.settings.{setting}.same_as.{method}"
                if other not in settings:
                    _fail(key, f"no setting {other!r} in data set {dataset!r}")
                if method not in settings[other]["methods"]:
                    _fail(key, f"setting {other!r} does not run {method!r}")
                if method in scfg["methods"]:
                    _fail(key, f"{method!r} is also run in this setting")
    for key in cfg.get("pending") or {}:
        dataset, _, rest = key.partition("/")
        if dataset not in resolved:
            _fail(
                f"pending.{key}",
                f"not a data set of this configuration ({', '.join(resolved)})",
            )
        if rest:  # one method of one setting: its fits are left out of the tables
            setting, method = rest.split("/")
            scfg = resolved[dataset].get(setting)
            if scfg is None or method not in scfg["methods"]:
                _fail(f"pending.{key}", f"{dataset}/{setting} does not run {method!r}")
            del scfg["methods"][method]
    if not cfg.get("post_hoc", False):
        # post hoc methods (the registry's role) run only on request; never silently
        left_out: dict[str, list[str]] = {}
        for dataset, settings in resolved.items():
            for setting, scfg in settings.items():
                for m in [m for m in scfg["methods"] if not _runs_by_default(m)]:
                    del scfg["methods"][m]
                    left_out.setdefault(m, []).append(f"{dataset}/{setting}")
        for m, where in left_out.items():
            logging.getLogger(__name__).warning(
                "Not running %s (%s) in %s: it is post hoc (added after test results "
                "were seen); set post_hoc: true to run it",
                m,
                METHODS[m].description,
                ", ".join(where),
            )
    for table, tcfg in cfg["tables"].items():
        key = f"tables.{table}"
        if tcfg["dataset"] not in resolved:
            _fail(f"{key}.dataset", f"unknown data set {tcfg['dataset']!r}")
        for i, col in enumerate(tcfg["columns"]):
            if col["setting"] not in resolved[tcfg["dataset"]]:
                _fail(
                    f"{key}.columns[{i}].setting",
                    f"data set {tcfg['dataset']!r} has no setting {col['setting']!r}",
                )
    return resolved


def dataset_shape(name: str) -> tuple[int, list[tuple[str, int]]] | None:
    """(most rows, [(view name, dimension), ...]) of a data set, without its files.

    Upper bounds: NUS-WIDE's rows depend on its ``selection`` (all 269,648 images
    bound them) and Ads' first view has 587 columns with ``include_local: false``.
    Read from the data set's :class:`~tcca_core.datasets.DatasetSpec`. ``None`` for a
    data set whose shape is not known (no r check is then made).
    """
    spec = DATASETS.get(name)
    return None if spec is None else spec.shape()


def r_bound(
    dataset: str,
    methods,
    *,
    views=None,
    subset: int | None = None,
    fit_extra: str | None = None,
    extra_subset: int | None = None,
) -> tuple[int, str] | None:
    """Return the largest r any of ``methods`` can return on a setting, and why.

    Every method caps r at its own r_max (rows above it are recorded as
    ``r_capped``); an r above this bound is capped for every method of the setting,
    a configuration mistake. ``None`` when no method has an r or the data set's shape
    is not known.
    """
    kinds = {METHODS[m].r_bound if m in METHODS else "rows" for m in methods} - {None}
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
    # TCCA's own bound, not a copy of its formula (imported here: the other checks
    # need no numpy)
    from .._tcca import max_cp_rank

    cap, _ = max_cp_rank(n, dims)
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
    """List (key, problem) for values that pass the schema but cannot work.

    Views out of range or unknown, a ``pool`` the data set does not have, a subset
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


def r_grid_of(setting: Mapping) -> list[int]:
    """Return the r grid of a resolved setting (``"paper"``: R_GRID_PAPER)."""
    grid = setting["r_grid"]
    return list(R_GRID_PAPER) if grid == "paper" else list(grid)


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


# ------------------------------------------------------------------ where a run writes

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


def _resolved_note(given, where: Path, work: Path) -> str:
    """Where a symbolic link on the way leads, if one does."""
    plain = Path(os.path.abspath(work / os.fspath(given)))
    return "" if plain == where else f" (a link to {where})"


def path_problems(
    config: Mapping,
    workdir: str | os.PathLike = ".",
    home: str | os.PathLike | None = None,
) -> list[tuple[str, str]]:
    """List (key, problem) for folders that cannot be used, symbolic links resolved.

    - ``results_dir``, ``data_root``, ``fit_cache``: not the file system's root nor
      the home folder itself (outputs, ``raw/`` and ``prepared/`` or cache entries
      would be written straight into it);
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

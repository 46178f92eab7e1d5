# Configuration checks, wildcard constraints, path helpers and targets. No rules here.
#
# The configuration is checked before any job runs, in three steps, each failing with
# "invalid config: <key>: <what is wrong>":
#   1. the JSON schema (workflow/schemas/config.schema.yaml): unknown keys, wrong types,
#      empty lists and grids, unknown methods, bad names (one line per problem, instead
#      of Snakemake's dump of the whole schema);
#   2. Snakemake's own validation, which also fills in the schema's defaults;
#   3. cross-references and bounds (_resolve_settings): data sets, method sets and
#      settings named elsewhere, data-set options, method options, and r grids above
#      the largest r the setting's methods can return;
#   4. values that only the data sets' facts exclude (wf_common.value_problems):
#      views out of range, a pool the data set lacks, a subset above its rows, an
#      unknown paper table or column (every problem reported, one line each).

import difflib
import functools
import importlib.util
import re
from pathlib import Path

import jsonschema
import yaml
from snakemake.utils import validate

from tcca_core import datasets as tcca_datasets

_SCHEMA_PATH = Path(workflow.current_basedir).parent / "schemas" / "config.schema.yaml"
_spec = importlib.util.spec_from_file_location(
    "tcca_workflow_common",
    Path(workflow.current_basedir).parent / "scripts" / "_common.py",
)
wf_common = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(wf_common)


class ConfigError(ValueError):
    """A configuration error found before any job runs; names the offending key."""


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
    if kind == "pattern" and path and path[-1] in ("data_root", "mirror", "fit_cache"):
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


def check_schema(cfg, schema_path=_SCHEMA_PATH):
    """Raise ConfigError listing every schema violation, one line each, key first."""
    schema = yaml.safe_load(Path(schema_path).read_text())
    validator = jsonschema.Draft202012Validator(schema)
    problems = sorted({_describe(e) for e in validator.iter_errors(cfg)})
    if problems:
        raise ConfigError(
            "\n".join(f"invalid config: {key}: {msg}" for key, msg in problems)
            + "\n(see config/README.md and workflow/schemas/config.schema.yaml)"
        )


check_schema(config)
validate(config, schema="../schemas/config.schema.yaml")  # fills in the defaults


def _check_method_options(key, methods):
    """Options of each method of a method set against what the method accepts."""
    for method, params in methods.items():
        allowed = wf_common.METHOD_OPTIONS.get(method)
        for option in params or {}:
            if allowed is not None and option not in allowed:
                hints = difflib.get_close_matches(option, allowed, n=1)
                _fail(
                    f"{key}.{method}.{option}",
                    f"{method} has no option {option!r}"
                    + (f" (did you mean {hints[0]!r}?)" if hints else "")
                    + f"; allowed: {', '.join(allowed) or 'none'}",
                )


def _check_r_grid(dataset, dcfg, setting, s):
    """An r above the largest r any method of the setting can return is an error."""
    grid = wf_common.R_GRID_PAPER if s["r_grid"] == "paper" else s["r_grid"]
    bound = wf_common.r_bound(
        dataset,
        s["methods"],
        views=s.get("views", dcfg.get("views")),
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


def _resolve_settings(cfg):
    """Each setting with its `methods` and `r_grid` resolved; checks cross-references,
    data-set and method options, and the r grids against what the methods allow."""
    method_sets = cfg.get("method_sets", {})
    for name, methods in method_sets.items():
        _check_method_options(f"method_sets.{name}", methods)
    resolved = {}
    known = sorted(tcca_datasets.DATASETS)
    for dataset, dcfg in cfg["datasets"].items():
        if dataset not in tcca_datasets.DATASETS:
            hints = difflib.get_close_matches(dataset, known, n=1)
            _fail(
                f"datasets.{dataset}",
                "unknown data set"
                + (f" (did you mean {hints[0]!r}?)" if hints else "")
                + f"; tcca_core.datasets has {', '.join(known)}",
            )
        spec = tcca_datasets.DATASETS[dataset]
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
                        f"unknown method set {methods!r} "
                        f"(method_sets has: {', '.join(sorted(method_sets)) or 'none'})",
                    )
                methods = method_sets[methods]
            else:
                _check_method_options(f"{key}.methods", methods)
            extra = scfg.get("fit_extra")
            if extra and extra not in tcca_datasets.DATASETS:
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


SETTINGS = _resolve_settings(config)
_value_problems = wf_common.value_problems(config, SETTINGS)
if _value_problems:
    raise ConfigError(
        "\n".join(f"invalid config: {key}: {msg}" for key, msg in _value_problems)
        + "\n(see config/README.md)"
    )
DATASETS = list(config["datasets"])
TABLES = list(config["tables"])
METHODS = sorted(
    {m for s in SETTINGS.values() for c in s.values() for m in c["methods"]}
)
DATA_ROOT = config["data_root"]


wildcard_constraints:
    dataset="|".join(map(re.escape, DATASETS)),
    setting="|".join(
        map(
            re.escape,
            sorted({s for d in SETTINGS.values() for s in d}, key=len, reverse=True),
        )
    ),
    method="|".join(map(re.escape, METHODS)),
    split=r"\d+|all",
    table="|".join(map(re.escape, sorted(TABLES, key=len, reverse=True))),


# --------------------------------------------------------------------- data availability


# Data sets marked pending (a run in parts); pending methods are dropped in SETTINGS.
PENDING = {k: v for k, v in (config.get("pending") or {}).items() if "/" not in k}


@functools.cache
def available_datasets():
    """Data sets the data module can be expected to load (file names only, no I/O),
    less those the config marks ``pending``."""
    candidates = [d for d in DATASETS if d not in PENDING]
    for dataset in PENDING:
        logger.warning(
            f"Leaving data set {dataset!r} out of the default target and the summary: "
            f"pending ({PENDING[dataset]})."
        )
    if not config["skip_unavailable"]:
        return tuple(candidates)
    keep = []
    for dataset in candidates:
        ok, reason = tcca_datasets.availability(
            dataset, root=DATA_ROOT, mirror=config["mirror"]
        )
        if ok:
            keep.append(dataset)
        else:
            logger.warning(
                f"Skipping data set {dataset!r} in the default target: {reason} "
                f"(its target `snakemake {dataset}` fails with the data module's message)."
            )
    return tuple(keep)


# --------------------------------------------------------------------- paths and params


def prepared(dataset):
    return f"{DATA_ROOT}/prepared/{dataset}/manifest.json"


def setting_of(wildcards):
    return SETTINGS[wildcards.dataset][wildcards.setting]


def dataset_input(wildcards):
    return prepared(wildcards.dataset)


def data_inputs(wildcards):
    """Prepared data of the data set, and of its extra unlabeled set if any."""
    inputs = {"data": prepared(wildcards.dataset)}
    extra = setting_of(wildcards).get("fit_extra")
    if extra:
        inputs["extra"] = prepared(extra)
    return inputs


def split_labels():
    """Split wildcard values: one fit job per split, or one job ("all") for all."""
    if config["fit_grain"] == "method":
        return ["all"]
    return [str(k) for k in range(config["n_splits"])]


def fit_files(dataset, setting, kind="fit"):
    """Fit CSVs ("fit") or their benchmark TSVs ("benchmark") of one setting."""
    pattern = {
        "fit": "results/fits/{dataset}/{setting}/{method}/split{split}.csv",
        "benchmark": "results/benchmarks/fit/{dataset}/{setting}/{method}/split{split}.tsv",
    }[kind]
    return expand(
        pattern,
        dataset=dataset,
        setting=setting,
        method=list(SETTINGS[dataset][setting]["methods"]),
        split=split_labels(),
    )


def setting_fits(wildcards):
    return fit_files(wildcards.dataset, wildcards.setting)


def gather_fits(fits, runs, log):
    """Concatenate fit CSVs (in the local Snakemake process: a tiny job)."""
    import pandas as pd

    table = pd.concat([pd.read_csv(f) for f in fits], ignore_index=True)
    with wf_common.atomic_output(runs) as part:  # never a partial table at `runs`
        table.to_csv(part, index=False, lineterminator="\n")
    Path(log).write_text(f"{len(table)} rows from {len(fits)} fit files\n")


def split_params(wildcards):
    s = setting_of(wildcards)
    dcfg = config["datasets"][wildcards.dataset]
    return {
        "dataset": wildcards.dataset,
        "setting": wildcards.setting,
        "load": dcfg["load"],
        "views": s.get("views", dcfg.get("views")),
        "n_labeled": s.get("n_labeled"),
        "per_class": s.get("per_class"),
        "subset": s.get("subset"),
        "pool": s.get("pool"),
        "fit_on": s["fit_on"],
        "n_splits": config["n_splits"],
        "val_fraction": config["val_fraction"],
        "seed": config["seed"],
    }


def fit_params(wildcards):
    s = setting_of(wildcards)
    return {
        **split_params(wildcards),
        "method": wildcards.method,
        "split": wildcards.split,
        "learner": s["learner"],
        "r_grid": s["r_grid"],
        "params": s["methods"][wildcards.method],
        "kernel": s["kernel"],
        "fit_extra": s.get("fit_extra"),
        "extra_subset": s.get("extra_subset"),
    }


def table_settings(table):
    """Settings a table needs: its columns' and those they take results from."""
    tcfg = config["tables"][table]
    dataset = tcfg["dataset"]
    needed = []
    for col in tcfg["columns"]:
        for s in [
            col["setting"],
            *SETTINGS[dataset][col["setting"]]["same_as"].values(),
        ]:
            if s not in needed:
                needed.append(s)
    return dataset, needed


def table_runs(wildcards):
    dataset, settings = table_settings(wildcards.table)
    return [f"results/runs/{dataset}/{s}.csv" for s in settings]


def table_benchmarks(wildcards):
    dataset, settings = table_settings(wildcards.table)
    return [f for s in settings for f in fit_files(dataset, s, "benchmark")]


def table_params(wildcards):
    dataset, _ = table_settings(wildcards.table)
    return {
        "name": wildcards.table,
        **config["tables"][wildcards.table],
        "same_as": {
            col["setting"]: SETTINGS[dataset][col["setting"]]["same_as"]
            for col in config["tables"][wildcards.table]["columns"]
        },
    }


# --------------------------------------------------------------------------- targets

TABLE_FILES = [
    "results/tables/{table}.csv",
    "results/tables/{table}.md",
    "results/tables/{table}.tex",
    "results/tables/{table}_best_r.csv",
    "results/tables/{table}_best_r.md",
    "results/tables/{table}_best_r.tex",
    "results/tables/{table}.json",
    "results/tables/{table}_cost.csv",
    "results/tables/{table}_cost.md",
    "results/tables/{table}_cost.tex",
    "results/tables/{table}_cost_by_r.csv",
    "results/figures/{table}_accuracy.png",
    "results/figures/{table}_accuracy.pdf",
    "results/figures/{table}_cost.png",
    "results/figures/{table}_cost.pdf",
]


def tables_of(datasets):
    return [t for t in TABLES if config["tables"][t]["dataset"] in datasets]


def table_outputs(tables):
    return expand(TABLE_FILES, table=tables)


def final_outputs():
    """Every table and figure of the data sets at hand, and the summary."""
    tables = tables_of(available_datasets())
    if not tables:
        return []
    return table_outputs(tables) + ["results/summary.json"]


def summary_inputs(wildcards):
    return expand("results/tables/{table}.json", table=tables_of(available_datasets()))


def missing_tables():
    """Tables of the config that did not run, with the reason REPRODUCTION.md gives."""
    ran = set(tables_of(available_datasets()))
    missing = {
        key: f"Not in this run: marked pending in the configuration: {why}"
        for key, why in (config.get("pending") or {}).items()
        if "/" in key
    }
    for t in TABLES:
        dataset = config["tables"][t]["dataset"]
        if t not in ran and dataset in PENDING:
            missing[t] = (
                f"Not in this run: the data set `{dataset}` is marked pending in the "
                f"configuration: {PENDING[dataset]}"
            )
    return missing | {
        t: (
            f"Not run: the data set `{config['tables'][t]['dataset']}` is not "
            f"available under `{config['data_root']}/` on the machine that ran the "
            "pipeline (docs/data.md says what to fetch and where to put it). Its rules "
            "run in the test suite and in CI on a synthetic look-alike (`.test/`, "
            "tests/test_workflow.py, tests/test_slurm.py), whose numbers mean nothing "
            "and are not shown."
        )
        for t in TABLES
        if t not in ran and t not in missing
    }

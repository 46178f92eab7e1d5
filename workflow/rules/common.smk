# Configuration checks, wildcard constraints, path helpers and targets. No rules here.

import functools
import re
from pathlib import Path

from snakemake.utils import validate

from tcca_core import datasets as tcca_datasets

validate(config, schema="../schemas/config.schema.yaml")


class ConfigError(ValueError):
    """A configuration error found after schema validation; names the offending key."""


def _fail(key, message):
    raise ConfigError(f"invalid config: {key}: {message}")


def _resolve_settings(cfg):
    """Each setting with its `methods` and `r_grid` resolved; checks cross-references."""
    method_sets = cfg.get("method_sets", {})
    resolved = {}
    known = sorted(tcca_datasets.DATASETS)
    for dataset, dcfg in cfg["datasets"].items():
        if dataset not in tcca_datasets.DATASETS:
            _fail(
                f"datasets.{dataset}",
                f"unknown data set (tcca_core.datasets has {known})",
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
            extra = scfg.get("fit_extra")
            if extra and extra not in tcca_datasets.DATASETS:
                _fail(f"{key}.fit_extra", f"unknown data set {extra!r} ({known})")
            resolved[dataset][setting] = {
                **scfg,
                "methods": {m: dict(p or {}) for m, p in methods.items()},
                "r_grid": scfg.get("r_grid", cfg.get("r_grid", "paper")),
                "same_as": dict(scfg.get("same_as") or {}),
            }
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


@functools.cache
def available_datasets():
    """Data sets the data module can be expected to load (file names only, no I/O)."""
    if not config["skip_unavailable"]:
        return tuple(DATASETS)
    keep = []
    for dataset in DATASETS:
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
    table.to_csv(runs, index=False, lineterminator="\n")
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

# Configuration checks, wildcard constraints, path helpers and targets. No rules here.
#
# The configuration is checked before any job runs by tcca_core.pipeline.config, in
# four steps, each failing with "invalid config: <key>: <what is wrong>":
#   1. the JSON schema (workflow/schemas/config.schema.yaml, with the method and learner
#      names of tcca_core.registry): unknown keys, wrong types, empty lists and grids,
#      unknown methods, bad names (one line per problem, instead of Snakemake's dump
#      of the whole schema);
#   2. Snakemake's own validation, which also fills in the schema's defaults;
#   3. cross-references and bounds: data sets, method sets and settings named
#      elsewhere, data-set options, method options (the registry's), and r grids
#      above the largest r the setting's methods can return;
#   4. values that only the data sets' facts exclude: views out of range, a pool the
#      data set lacks, a subset above its rows, an unknown paper table or column
#      (every problem reported, one line each).

import functools
import re
from pathlib import Path

from snakemake.utils import validate

from tcca_core import datasets as tcca_datasets
from tcca_core.pipeline import config as wf_config

ConfigError = wf_config.ConfigError

wf_config.check_schema(
    config, Path(workflow.current_basedir).parent / "schemas" / "config.schema.yaml"
)
validate(config, schema="../schemas/config.schema.yaml")  # fills in the defaults
SETTINGS = wf_config.check_config(config)
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


FIT = "results/fits/{dataset}/{setting}/{method}/split{split}.csv"
FIT_BENCHMARK = "results/benchmarks/fit/{dataset}/{setting}/{method}/split{split}.tsv"


def fit_jobs(dataset, setting):
    """The fit jobs of one setting: method, split, output and benchmark file of each."""
    return [
        {
            "setting": setting,
            "method": method,
            "split": split,
            "fit": FIT.format(**where),
            "benchmark": FIT_BENCHMARK.format(**where),
        }
        for method in SETTINGS[dataset][setting]["methods"]
        for split in split_labels()
        for where in [
            {"dataset": dataset, "setting": setting, "method": method, "split": split}
        ]
    ]


def setting_fits(wildcards):
    return [job["fit"] for job in fit_jobs(wildcards.dataset, wildcards.setting)]


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


def table_jobs(table):
    """The fit jobs behind a table, each with its setting, method and benchmark file
    (tcca_core.pipeline.build_table reads the benchmarks by (setting, method))."""
    dataset, settings = table_settings(table)
    return [
        {k: job[k] for k in ("setting", "method", "benchmark")}
        for setting in settings
        for job in fit_jobs(dataset, setting)
    ]


def table_benchmarks(wildcards):
    return [job["benchmark"] for job in table_jobs(wildcards.table)]


def table_job_params(wildcards):
    return table_jobs(wildcards.table)


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

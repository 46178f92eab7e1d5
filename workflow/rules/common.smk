# Configuration checks, wildcard constraints, path helpers and targets. No rules here.
#
# The configuration is checked before any job runs by tcca_core.pipeline.config, in
# four steps, each failing with "invalid config: <key>: <what is wrong>", after its
# files are read again for keys given twice (Snakemake keeps the last one) and before
# its folders are checked with symbolic links resolved (not /, not the home folder,
# data and cache outside the published results, a mirror that exists):
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
import json
import os
import re
import sys
from pathlib import Path

from snakemake.exceptions import IncompleteCheckpointException
from snakemake.utils import validate

from tcca_core import datasets as tcca_datasets
from tcca_core.pipeline import config as wf_config

ConfigError = wf_config.ConfigError

# Snakemake has read the files already, keeping the last of a key given twice: read
# each again, refusing that, before anything looks at the merged result
wf_config.check_config_files([_BASE_CONFIG, *(workflow.overwrite_configfiles or [])])
wf_config.check_schema(
    config, Path(workflow.current_basedir).parent / "schemas" / "config.schema.yaml"
)
validate(config, schema="../schemas/config.schema.yaml")  # fills in the defaults
# folders, symbolic links resolved: not /, not the home folder, data and cache not in
# the published results, a mirror that exists
wf_config.check_paths(config)


def _base_config():
    """The base configuration file alone (config/config.yaml), defaults filled in;
    {} when it cannot be read (the run then counts as not the full one)."""
    try:
        base = wf_config.load_yaml(_BASE_CONFIG) or {}
        validate(base, schema="../schemas/config.schema.yaml")
    except Exception:  # noqa: BLE001 - any problem: not the full configuration
        return {}
    return base


# Where this run writes (tcca_core.pipeline.config.run_location): the full
# configuration writes the published results/ (and REPRODUCTION.md); any other, e.g.
# --configfile config/quick.yaml, writes results/<name>/ (its own logs, benchmarks and
# reproduction file included) and says "reduced run" in every title.
RUN = wf_config.run_location(
    config, _base_config(), list(workflow.overwrite_configfiles or [])
)
RESULTS = RUN["results"]
LOGS = RUN["logs"]
config["results_dir"] = RESULTS  # resolved, for the report and the summary

SETTINGS = wf_config.check_config(config)
DATASETS = list(config["datasets"])
TABLES = list(config["tables"])
METHODS = sorted(
    {m for s in SETTINGS.values() for c in s.values() for m in c["methods"]}
)
DATA_ROOT = config["data_root"]
MIRROR = config["mirror"]
OFFLINE = config["offline"]
# strict: a data set that cannot be obtained fails the run (skip_unavailable: false is
# the key's older name)
STRICT = bool(config["strict"] or config.get("skip_unavailable") is False)


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


def _extras(dataset):
    """Extra unlabeled data sets the settings of ``dataset`` fit on (SecStr 1.3M)."""
    return sorted(
        {s["fit_extra"] for s in SETTINGS[dataset].values() if s.get("fit_extra")}
    )


@functools.cache
def data_routes():
    """How each data set of the default target is had, decided from file names only:
    ``ready`` (prepared or raw files at hand: its jobs are scheduled at once),
    ``fetch`` (to be downloaded: the checkpoint prepare_data decides, and its jobs
    are scheduled once it is obtained) or ``skip`` (cannot be had: one line when a
    real run starts, skip_notices).
    Strict runs schedule everything and fail where data are missing."""
    for dataset in PENDING:
        logger.warning(
            f"Leaving data set {dataset!r} out of the default target and the summary: "
            f"pending ({PENDING[dataset]})."
        )
    routes = {}

    def route(dataset):
        if dataset in routes:
            return routes[dataset][0]
        kw = {"root": DATA_ROOT, "mirror": MIRROR}
        if STRICT or tcca_datasets.availability(dataset, offline=True, **kw)[0]:
            routes[dataset] = ("ready", "")
        else:
            ok, why = tcca_datasets.availability(dataset, offline=OFFLINE, **kw)
            routes[dataset] = ("fetch", "") if ok else ("skip", why)
        return routes[dataset][0]

    for dataset in DATASETS:
        # the extra data of a data set that is skipped anyway need no line of their own
        if dataset not in PENDING and route(dataset) != "skip":
            for extra in _extras(dataset):
                route(extra)
    return routes


def skipped_at_start():
    """{data set: one-line reason} of the data sets skipped before any job."""
    return {d: why for d, (route, why) in data_routes().items() if route == "skip"}


def skip_notices():
    """One line per data set that cannot be had (what was tried, what to download,
    where to put it), printed before the first job of a real run only: `onstart`
    runs neither for --lint nor for a dry run (-n), nor in the jobs of a cluster."""
    for dataset, why in skipped_at_start().items():
        logger.warning(f"Skipping data set {dataset}: {why}")


onstart:
    skip_notices()


def read_status(path):
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def usable_datasets():
    """Data sets of the default target that are (or will be) prepared. For one that
    had to be downloaded, this waits for its prepare_data checkpoint.

    One whose files are at hand (``ready``) is counted in at once, so that a dry
    run shows its jobs, but its files are verified only when prepared: one found bad
    then (a truncated mirror file) is left out like one that cannot be obtained. The
    default target takes every status file as input (:func:`status_files`), so the
    checkpoint's end evaluates this again and drops the jobs of a data set that
    failed."""
    usable = set()
    for dataset, (route, _) in data_routes().items():
        if route == "skip":
            continue
        if route == "fetch":
            status = checkpoints.prepare_data.get(dataset=dataset).output.status
            if not read_status(status)["available"]:
                continue
        elif not STRICT:
            try:
                status = checkpoints.prepare_data.get(dataset=dataset).output.status
            except IncompleteCheckpointException:
                pass  # not prepared in this run yet: counted in until it is
            else:
                if not read_status(status)["available"]:
                    continue
        usable.add(dataset)
    return usable


def status_files():
    """Status files of the data sets decided at run time: every one not skipped at
    the start (all of them can turn out unusable when prepared), none when strict
    (a data set that fails stops the run)."""
    if STRICT:
        return []
    return [
        STATUS.format(dataset=d)
        for d, (route, _) in data_routes().items()
        if route != "skip"
    ]


# --------------------------------------------------------------------- paths and params


# The data status of a data set in this run (written by the prepare_data checkpoint:
# whether it could be obtained, and if not why, on one line).
STATUS = f"{RESULTS}/data/{{dataset}}.json"


def prepared(dataset):
    return STATUS.format(dataset=dataset)


def setting_of(wildcards):
    return SETTINGS[wildcards.dataset][wildcards.setting]


def dataset_input(wildcards):
    return prepared(wildcards.dataset)


def data_inputs(wildcards):
    """Data status of the data set, and of its extra unlabeled set if any."""
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


FIT = f"{RESULTS}/fits/{{dataset}}/{{setting}}/{{method}}/split{{split}}.csv"
FIT_BENCHMARK = (
    f"{RESULTS}/benchmarks/fit/{{dataset}}/{{setting}}/{{method}}/split{{split}}.tsv"
)


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
    return [f"{RESULTS}/runs/{dataset}/{s}.csv" for s in settings]


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
        "run_note": RUN["note"],
        "same_as": {
            col["setting"]: SETTINGS[dataset][col["setting"]]["same_as"]
            for col in config["tables"][wildcards.table]["columns"]
        },
    }


# --------------------------------------------------------------------------- targets

TABLE_FILES = [
    f"{RESULTS}/tables/{{table}}.csv",
    f"{RESULTS}/tables/{{table}}.md",
    f"{RESULTS}/tables/{{table}}.tex",
    f"{RESULTS}/tables/{{table}}_best_r.csv",
    f"{RESULTS}/tables/{{table}}_best_r.md",
    f"{RESULTS}/tables/{{table}}_best_r.tex",
    f"{RESULTS}/tables/{{table}}.json",
    f"{RESULTS}/tables/{{table}}_cost.csv",
    f"{RESULTS}/tables/{{table}}_cost.md",
    f"{RESULTS}/tables/{{table}}_cost.tex",
    f"{RESULTS}/tables/{{table}}_cost_by_r.csv",
    f"{RESULTS}/figures/{{table}}_accuracy.png",
    f"{RESULTS}/figures/{{table}}_accuracy.pdf",
    f"{RESULTS}/figures/{{table}}_cost.png",
    f"{RESULTS}/figures/{{table}}_cost.pdf",
    f"{RESULTS}/report/{{table}}.html",
]
SUMMARY = f"{RESULTS}/summary.json"


def tables_of(datasets):
    """Tables whose data (their data set and its extra data) are all in ``datasets``."""
    return [
        t
        for t in TABLES
        if {config["tables"][t]["dataset"], *_extras(config["tables"][t]["dataset"])}
        <= set(datasets)
    ]


def table_outputs(tables):
    return expand(TABLE_FILES, table=tables)


def final_outputs(wildcards):
    """Every table and figure of the data sets at hand, and the summary (an input
    function: data sets that had to be downloaded are in once obtained)."""
    tables = tables_of(usable_datasets())
    # the status files make this target depend on every prepare_data checkpoint, so
    # that a data set found bad when prepared drops out of the plan when it ends
    if not tables:
        return status_files()
    return table_outputs(tables) + [SUMMARY] + status_files()


def summary_inputs(wildcards):
    return {
        "tables": expand(
            f"{RESULTS}/tables/{{table}}.json", table=tables_of(usable_datasets())
        ),
        "statuses": status_files(),
    }


def missing_tables():
    """Tables of the config that did not run, with the reason REPRODUCTION.md gives
    (those of data sets skipped at run time are added from the summary)."""
    skipped = skipped_at_start()
    missing = {
        key: f"Not in this run: marked pending in the configuration: {why}"
        for key, why in (config.get("pending") or {}).items()
        if "/" in key
    }
    for t in TABLES:
        dataset = config["tables"][t]["dataset"]
        if dataset in PENDING:
            missing[t] = (
                f"Not in this run: the data set `{dataset}` is marked pending in the "
                f"configuration: {PENDING[dataset]}"
            )
        elif t not in missing:
            gone = [d for d in (dataset, *_extras(dataset)) if d in skipped]
            if gone:
                missing[t] = not_available(gone[0], skipped[gone[0]])
    return missing


def not_available(dataset, why):
    return (
        f"Not run: the data set `{dataset}` could not be obtained on the machine that "
        f"ran the pipeline ({why}). Its rules run in the test suite and in CI on a "
        "synthetic look-alike (`.test/`, tests/test_workflow.py, tests/test_slurm.py), "
        "whose numbers mean nothing and are not shown."
    )


# ----------------------------------------------------------------------- end of a run


def run_end_message():
    """What the end of a successful run prints: what was skipped, and where the
    tables, figures, summary and report are."""
    skipped = dict(skipped_at_start())
    for path in status_files():
        if Path(path).is_file():
            status = read_status(path)
            if not status["available"]:
                skipped[status["dataset"]] = status["reason"]
    # each was named with its reason on one line when it was skipped
    lines = [
        f"Skipped data sets: {', '.join(skipped)} (why: above; `strict: true` "
        "makes this an error)"
    ] if skipped else []
    overlays = " ".join(
        f"--configfile {os.path.relpath(c)}" for c in workflow.overwrite_configfiles
    )
    kind = f"reduced run ({RUN['label']})" if RUN["reduced"] else "full configuration"
    lines += [
        f"Outputs of this run ({kind}) are in {RESULTS}/:",
        f"  tables:  {RESULTS}/tables/ (<table>.md, .csv, .tex; _best_r, _cost)",
        f"  figures: {RESULTS}/figures/ (<table>_accuracy.png, <table>_cost.png; .pdf)",
        f"  summary: {SUMMARY} (every number, with the run's provenance)",
        f"  report:  snakemake --report {RESULTS}/report.html {overlays}".rstrip()
        + " (tables inline, figures)",
        f"  reproduction: snakemake --cores 1 reproduction {overlays}".rstrip()
        + f" writes {RUN['reproduction']}",
    ]
    return "\n".join(lines)

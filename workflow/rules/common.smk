# The configuration's checks and the run's plan; no rules. Every fact the rules use is
# resolved once by tcca_core.pipeline.plan.build_plan and looked up here (PLAN). The
# checks run before any job ("invalid config: <key>: <what is wrong>"): duplicate keys,
# schema, folders, cross-references, options, r grids, the data sets' facts.

import functools
import inspect
import json
import re
import sys

from snakemake.exceptions import IncompleteCheckpointException
from snakemake.utils import validate

from tcca_core import datasets as tcca_datasets
from tcca_core.pipeline import config as wf_config
from tcca_core.pipeline.plan import FIT, FIT_BENCHMARK, SPLIT_LABEL, build_plan

OVERLAYS = list(workflow.overwrite_configfiles or [])
wf_config.check_config_files([_BASE_CONFIG, *OVERLAYS])
wf_config.check_schema(
    config, Path(workflow.current_basedir).parent / "schemas" / "config.schema.yaml"
)
validate(config, schema="../schemas/config.schema.yaml")  # fills in the defaults
wf_config.check_paths(config)


def _base_config():
    """The base configuration alone, defaults in; {} if unreadable (not the full run)."""
    try:
        base = wf_config.load_yaml(_BASE_CONFIG) or {}
        validate(base, schema="../schemas/config.schema.yaml")
    except Exception:  # noqa: BLE001 - any problem: not the full configuration
        return {}
    return base


PLAN = build_plan(config, _base_config(), OVERLAYS)
RESULTS, LOGS, RUN = PLAN.results, PLAN.logs, PLAN.run  # data.smk reads RESULTS, LOGS
config["results_dir"] = RESULTS  # resolved, for the report and the summary


wildcard_constraints:
    dataset="|".join(map(re.escape, PLAN.datasets)),
    setting="|".join(map(re.escape, PLAN.setting_names)),
    method="|".join(map(re.escape, PLAN.methods)),
    split=SPLIT_LABEL,
    table="|".join(map(re.escape, sorted(PLAN.tables, key=len, reverse=True))),


def by_wildcards(lookup):
    """An input function of a rule: ``lookup`` called with the wildcards it names."""
    names = inspect.signature(lookup).parameters
    return lambda wildcards: lookup(**{n: getattr(wildcards, n) for n in names})


# --------------------------------------------------------------------- data at hand


@functools.cache
def data_routes():
    """How each data set of the default target is had (PLAN.data_routes): ``ready``
    (scheduled at once), ``fetch`` (the prepare_data checkpoint decides) or ``skip``
    (cannot be had: one line when the run starts, skip_notices)."""
    for dataset, why in PLAN.pending.items():
        logger.warning(
            f"Leaving data set {dataset!r} out of the default target and the summary: "
            f"pending ({why})."
        )
    return PLAN.data_routes(tcca_datasets.availability)


def skip_notices():
    """One line per data set that cannot be had (what was tried, what to download,
    where to put it), before the first job of a real run only (`onstart`: neither for
    --lint nor a dry run -n, nor in a cluster's jobs)."""
    for dataset, (route, why) in data_routes().items():
        if route == "skip":
            logger.warning(f"Skipping data set {dataset}: {why}")


@functools.cache
def dry_run_note():
    """A dry run plans only the download of data not at hand (a fresh clone's shows
    2 jobs): say so, once (workflow.dryrun is known only once the DAG is built)."""
    fetch = [d for d, (route, _) in data_routes().items() if route == "fetch"]
    if fetch and workflow.dryrun:
        logger.warning(
            f"Dry run: data set(s) {', '.join(fetch)} not prepared yet, so this plan "
            "shows only the first download job (prepare_data); their splits, fits and "
            "tables are planned once the data are there. `snakemake -n full` lists "
            "every job of the configuration."
        )


def _available(dataset):
    status = checkpoints.prepare_data.get(dataset=dataset).output.status
    return json.loads(Path(status).read_text())["available"]


def usable_datasets():
    """Data sets of the default target that are (or will be) prepared: one at hand
    counts at once (a dry run shows its jobs) and drops out if found bad when
    prepared; one to be downloaded waits for its checkpoint."""
    usable = set()
    for dataset, (route, _) in data_routes().items():
        if route == "skip":
            continue
        if route == "fetch" or not PLAN.strict:
            try:
                if not _available(dataset):
                    continue
            except IncompleteCheckpointException:
                if route == "fetch":
                    raise  # waits for the download
        usable.add(dataset)
    return usable


# --------------------------------------------------------------------------- targets


def final_outputs(wildcards):
    """Every table and figure of the data sets at hand, and the summary; the status
    files make it wait for every prepare_data (a data set found bad drops out)."""
    dry_run_note()
    tables = PLAN.tables_of(usable_datasets())
    glance = f"{RESULTS}/figures/at_a_glance.png"
    outputs = PLAN.table_outputs(tables) + [PLAN.summary, glance] if tables else []
    return outputs + PLAN.status_files(data_routes())


def glance_inputs(wildcards):
    """The summary, and for the published run the equal-tuning data (glance.smk)."""
    equal = Path(workflow.basedir).parent / "investigations/results/equal_tuning.json"
    published = {"equal_tuning": str(equal)} if RUN["published"] else {}
    return {"summary": PLAN.summary, **published}


def summary_inputs(wildcards):
    return {
        "tables": PLAN.table_summaries(PLAN.tables_of(usable_datasets())),
        "statuses": PLAN.status_files(data_routes()),
    }


def run_end_message():
    return PLAN.end_message(
        PLAN.skipped(data_routes()), PLAN.status_files(data_routes()), OVERLAYS
    )

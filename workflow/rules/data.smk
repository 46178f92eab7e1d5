# Data: one job per data set that fetches (from the mirror first, then the network
# unless `offline`), verifies and prepares it (tcca_core.pipeline.prepare_data). It is
# a checkpoint: its output is the data set's status in this run,
# <results>/data/<dataset>.json, and a data set that cannot be obtained is skipped
# (status "available": false, one line on the terminal saying what was tried, what
# to download and where to put it) unless `strict`; the default target then leaves
# its tables out and the run goes on. The prepared views themselves are in
# <data_root>/prepared/<dataset>/ (tcca_core.datasets). See docs/data.md.
#
# Config keys read (all optional): data_root (default "data"), mirror (none),
# offline (false), strict (false), results_dir (default "results"). Self-contained,
# so it also runs on its own, e.g.
#   snakemake -s workflow/rules/data.smk --cores 1 --config mirror=/path/to/copies \
#       results/data/ads.json

import json as _data_json
import re as _data_re
import time as _data_time
from pathlib import Path

from tcca_core.datasets import DATASETS as _DATASET_SPECS

_DATA_RESULTS = globals().get("RESULTS", config.get("results_dir") or "results")
_DATA_LOGS = globals().get("LOGS", "logs")
_DATA_SETS = tuple(_DATASET_SPECS)  # every data set of tcca_core.datasets


def _retry_skipped(wildcards):
    """A data set skipped in an earlier run is tried again: a new value of this
    parameter makes Snakemake rerun the job (rerun trigger `params`)."""
    status = Path(_DATA_RESULTS) / "data" / f"{wildcards.dataset}.json"
    try:
        available = _data_json.loads(status.read_text())["available"]
    except (OSError, ValueError, KeyError):
        return ""
    return "" if available else str(_data_time.time_ns())


# downloads need the network, which compute nodes often lack
localrules:
    prepare_data,


checkpoint prepare_data:
    output:
        status=f"{_DATA_RESULTS}/data/{{dataset}}.json",
    log:
        f"{_DATA_LOGS}/prepare_data/{{dataset}}.log",
    benchmark:
        f"{_DATA_RESULTS}/benchmarks/prepare_data/{{dataset}}.tsv"
    wildcard_constraints:
        dataset="|".join(map(_data_re.escape, _DATA_SETS)),
    conda:
        "../envs/tcca.yaml"
    params:
        # where the data are (data_root, mirror, offline) and strict are read from the
        # config by the script: not parameters, so changing them reruns nothing
        retry=_retry_skipped,
    message:
        "Fetching, verifying and preparing data set {wildcards.dataset}"
    script:
        "../scripts/prepare_data.py"

# Data: one job per data set that downloads (or copies from the mirror), verifies and
# prepares it with the tcca_core.datasets command line. The output is the manifest
# <data_root>/prepared/<dataset>/manifest.json, written last by the library, so its
# presence means the prepared views are complete. See docs/data.md.
#
# Config keys read (both optional): data_root (default "data") and mirror (default
# none; a folder laid out as <mirror>/<dataset>/<file>[.gz]; with it nothing is
# downloaded). Self-contained, so it also runs on its own, e.g.
#   snakemake -s workflow/rules/data.smk --cores 1 --config mirror=../shared/data \
#       data/prepared/ads/manifest.json

import re as _data_re
from pathlib import Path

from tcca_core.datasets import DATASETS as _DATASET_SPECS

_DATA_ROOT = config.get("data_root", "data")
_DATA_MIRROR = config.get("mirror")
_DATA_SETS = tuple(_DATASET_SPECS)  # every data set of tcca_core.datasets


# downloads need the network, which compute nodes often lack
localrules:
    prepare_data,


rule prepare_data:
    message:
        "Fetching, verifying and preparing data set {wildcards.dataset}"
    output:
        manifest=f"{_DATA_ROOT}/prepared/{{dataset}}/manifest.json",
    params:
        # <root> of <root>/prepared/<dataset>/manifest.json
        root=lambda wildcards, output: str(Path(output.manifest).parents[2]),
        mirror_args=["--mirror", _DATA_MIRROR] if _DATA_MIRROR else [],
    wildcard_constraints:
        dataset="|".join(map(_data_re.escape, _DATA_SETS)),
    log:
        "logs/prepare_data/{dataset}.log",
    benchmark:
        "results/benchmarks/prepare_data/{dataset}.tsv"
    conda:
        "../envs/tcca.yaml"
    shell:
        "python -m tcca_core.datasets prepare {wildcards.dataset:q} "
        "--root {params.root:q} {params.mirror_args:q} > {log:q} 2>&1"

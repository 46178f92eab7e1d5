"""One fit job: a method on one split (or on every split) of a setting, over the whole
r grid. run_method measures fit time and peak memory per r; the job's own time and max
RSS are in its benchmark file. The table is written to <output>.part and renamed, so a
job killed mid-write never leaves a partial table under the final name."""

import tempfile

import pandas as pd
from _common import (
    atomic_output,
    derived_rng,
    load_splits,
    load_views,
    random_subset,
    start_logging,
)

from tcca_core import protocol
from tcca_core.fit_cache import FitCache

log = start_logging(snakemake)  # noqa: F821
cfg = snakemake.params.cfg  # noqa: F821

data = load_views(cfg["dataset"], snakemake.config, views=cfg["views"], **cfg["load"])  # noqa: F821
subset, splits = load_splits(snakemake.input.splits, cfg["split"])  # noqa: F821
views, y = [v[subset] for v in data.views], data.y[subset]

fit_views = None
if cfg["fit_extra"]:  # extra unlabeled rows for the subspace (SecStr 1.3M)
    extra = load_views(cfg["fit_extra"], snakemake.config, views=cfg["views"])  # noqa: F821
    rows = random_subset(
        extra.n_samples,
        cfg["extra_subset"],
        derived_rng(cfg["seed"], cfg["dataset"], cfg["setting"], "extra"),
    )
    fit_views = [e[rows] for e in extra.views]
    log.info("%d extra unlabeled rows for the subspace", len(rows))

r_grid = protocol.R_GRID_PAPER if cfg["r_grid"] == "paper" else cfg["r_grid"]
frames = []
# Split-independent fits are done once for all the splits of this job, and with
# `fit_cache` once for all jobs (config/README.md); entries live on disk, not in RAM.
folder = snakemake.config.get("fit_cache")  # noqa: F821
scratch = None if folder else tempfile.TemporaryDirectory(prefix="tcca-fit-")
cache = FitCache(folder or scratch.name)
for split in splits:
    log.info(
        "%s, split %d: %d rows, r grid %s", cfg["method"], split.index, len(y), r_grid
    )
    frames.append(
        protocol.run_method(
            views,
            y,
            split,
            cfg["method"],
            r_grid=r_grid,
            learner=cfg["learner"],
            params=cfg["params"],
            fit_views=fit_views,
            seed=cfg["seed"],
            kernel=cfg["kernel"],
            cache=cache,
        )
    )
log.info("fit cache %s: %d reused, %d stored", cache.folder, cache.hits, cache.misses)
if scratch is not None:
    scratch.cleanup()
results = pd.concat(frames, ignore_index=True)
results.insert(0, "setting", cfg["setting"])
results.insert(0, "dataset", cfg["dataset"])
results["threads"] = snakemake.threads  # noqa: F821
with atomic_output(snakemake.output.fit) as part:  # noqa: F821
    results.to_csv(part, index=False, lineterminator="\n")
log.info("%d rows written", len(results))

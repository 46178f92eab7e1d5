"""The random subset (if any) and the labeled/validation/test splits of a setting."""

import numpy as np
from _common import (
    check_eval_rows,
    derived_rng,
    load_views,
    random_subset,
    save_splits,
    start_logging,
)

from tcca_core import protocol

log = start_logging(snakemake)  # noqa: F821
cfg = snakemake.params.cfg  # noqa: F821

data = load_views(cfg["dataset"], snakemake.config, views=cfg["views"], **cfg["load"])  # noqa: F821
log.info("loaded %r", data)
where = f"datasets.{cfg['dataset']}.settings.{cfg['setting']}"
rng = derived_rng(cfg["seed"], cfg["dataset"], cfg["setting"], "subset")
try:
    subset = random_subset(len(data.y), cfg["subset"], rng)
except ValueError as exc:
    raise ValueError(f"{where}.subset: {exc}") from None
pool = None
if cfg["pool"]:  # e.g. NUS-WIDE's training set, as rows of the subset
    if cfg["pool"] not in data.splits:
        raise ValueError(
            f"{where}.pool: data set {cfg['dataset']!r} has no part {cfg['pool']!r} "
            f"(it has {', '.join(map(repr, data.splits)) or 'none'})"
        )
    pool = np.flatnonzero(np.isin(subset, data.splits[cfg["pool"]]))
splits = protocol.make_splits(
    data.y[subset],
    n_labeled=cfg["n_labeled"],
    per_class=cfg["per_class"],
    n_splits=cfg["n_splits"],
    seed=cfg["seed"],
    val_fraction=cfg["val_fraction"],
    pool=pool,
    fit_on=cfg["fit_on"],
)
check_eval_rows(splits, where)
save_splits(snakemake.output.splits, subset, splits)  # noqa: F821
log.info("%d rows, %d splits written", len(subset), len(splits))

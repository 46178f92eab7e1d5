"""The split and fit jobs: a setting's splits drawn, its methods fitted, gathered.

- :func:`draw_splits`: the random subset (if any) and the labeled/validation/test
  splits of a setting, as JSON (rule ``splits``), with :func:`save_splits` /
  :func:`load_splits`;
- :func:`run_fit_job`: one method on one split (or every split) of a setting over
  its whole r grid, as a CSV of tidy results (rule ``fit``); at ``fit_grain:
  point``, one grid point of the method (the job's ``params``);
- :func:`gather_fits`: the fit CSVs of a setting in one table (rule ``gather``),
  the same rows whatever the fit grain.

Random draws come from the configuration's seed and stable names
(:func:`derived_rng`), so a job draws the same rows whatever else the run holds.
A random subset is named by its data set and size only: the settings of one data
set that differ in their labeled draws (mfeat's and NUS-WIDE's kernel500 / kernel
settings at 4, 6 and 8 labeled per class) work on the same rows, as the paper's
"a random subset of 500 samples" reads, so a transductive fit on the subset is
one fit, shared through the fit cache, instead of one per setting.
"""

from __future__ import annotations

import json
import logging
import os
import sys
import tempfile
import zlib
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from .._io import atomic_write_text, write_csv
from .._progress import report_long_fits
from .config_settings import r_grid_of
from .data_job import load_views, read_status
from .plan import FitJob, SplitJob

__all__ = [
    "MIN_EVAL_ROWS",
    "check_eval_rows",
    "derived_rng",
    "draw_splits",
    "gather_fits",
    "load_splits",
    "random_subset",
    "run_fit_job",
    "save_splits",
]

# The jobs' logger, as before the split: a job's log names it on every line.
logger = logging.getLogger("tcca_core.pipeline.jobs")

PathLike = str | os.PathLike

#: Fewest validation and test rows a split may have (val_fraction near 0 or 1, or a
#: tiny evaluation pool, would leave accuracies over a handful of rows).
MIN_EVAL_ROWS = 10
#: A fit job's solver says where it is on the terminal (the process's own stderr,
#: which the job's log does not take over) after every this many seconds of a fit:
#: a long fit shows that it is alive, the many short ones stay quiet.
LONG_FIT_S = 60.0


def derived_rng(seed: int, *names: object) -> np.random.Generator:
    """Return a generator for one purpose, from the config seed and stable names."""
    return np.random.default_rng(
        [int(seed), *(zlib.crc32(str(n).encode()) for n in names)]
    )


def random_subset(n: int, size: int | None, rng: np.random.Generator) -> np.ndarray:
    """Sorted indices of ``size`` rows drawn without replacement (all rows if None).

    A ``size`` above ``n`` is an error (a configuration mistake, not "all rows").
    """
    if size is not None and size > n:
        raise ValueError(f"subset = {size} is above the {n} rows of the data set")
    if size is None or size == n:
        return np.arange(n)
    return np.sort(rng.choice(n, size=int(size), replace=False))


def save_splits(path: PathLike, subset, splits) -> None:
    """Write the subset (rows of the data set) and the splits (rows of the subset)."""
    doc = {
        "subset": np.asarray(subset).tolist(),
        "splits": [s.to_dict() for s in splits],
    }
    atomic_write_text(path, json.dumps(doc, separators=(",", ":")) + "\n")


def load_splits(path: PathLike, which: str = "all"):
    """(subset, [Split, ...]) for split ``which`` (a number) or every split ("all")."""
    from ..protocol.splits import Split

    doc = json.loads(Path(path).read_text())
    splits = [Split.from_dict(d) for d in doc["splits"]]
    if which != "all":
        splits = [splits[int(which)]]
    return np.asarray(doc["subset"], dtype=np.intp), splits


def check_eval_rows(splits, where: str) -> None:
    """Every split needs MIN_EVAL_ROWS validation and test rows (else ValueError)."""
    for k, s in enumerate(splits):
        n_val, n_test = len(s.validation), len(s.test)
        if min(n_val, n_test) < MIN_EVAL_ROWS:
            raise ValueError(
                f"{where}: split {k} has {n_val} validation and {n_test} test rows, "
                f"fewer than {MIN_EVAL_ROWS}; accuracies over so few rows mean "
                "nothing: change val_fraction (or the labeled count, subset or pool)"
            )


def draw_splits(
    cfg: Mapping[str, Any],
    out: PathLike,
    *,
    data_root: PathLike,
    mirror: PathLike | None = None,
    offline: bool = False,
    status: PathLike | None = None,
) -> None:
    """Draw the random subset (if any) and the splits of one setting into ``out``.

    ``cfg`` is the splits job's parameters (:meth:`.plan.Plan.split_params`, read
    back as a :class:`~.plan.SplitJob`). ``status`` is the data set's status in
    this run (:func:`~.data_job.prepare_data`): a skipped data set is an error
    naming why.
    """
    from ..protocol.splits import make_splits

    job = SplitJob.from_params(cfg)
    read_status(status)
    data = load_views(
        job.dataset,
        data_root=data_root,
        mirror=mirror,
        views=job.views,
        offline=offline,
        **job.load,
    )
    logger.info("loaded %r", data)
    where = f"datasets.{job.dataset}.settings.{job.setting}"
    rng = derived_rng(job.seed, job.dataset, "subset", job.subset)
    try:
        subset = random_subset(len(data.y), job.subset, rng)
    except ValueError as exc:
        raise ValueError(f"{where}.subset: {exc}") from None
    pool = None
    if job.pool:  # e.g. NUS-WIDE's training set, as rows of the subset
        if job.pool not in data.splits:
            parts = ", ".join(map(repr, data.splits)) or "none"
            raise ValueError(
                f"{where}.pool: data set {job.dataset!r} has no part "
                f"{job.pool!r} (it has {parts})"
            )
        pool = np.flatnonzero(np.isin(subset, data.splits[job.pool]))
    splits = make_splits(
        data.y[subset],
        n_labeled=job.n_labeled,
        per_class=job.per_class,
        n_splits=job.n_splits,
        seed=job.seed,
        val_fraction=job.val_fraction,
        pool=pool,
        fit_on=job.fit_on,
    )
    check_eval_rows(splits, where)
    save_splits(out, subset, splits)
    logger.info("%d rows, %d splits written", len(subset), len(splits))


def run_fit_job(
    cfg: Mapping[str, Any],
    splits: PathLike,
    out: PathLike,
    *,
    data_root: PathLike,
    mirror: PathLike | None = None,
    fit_cache: PathLike | None = None,
    threads: int = 1,
    offline: bool = False,
) -> pd.DataFrame:
    """One method on one split (or every split) of a setting, over the r grid.

    ``cfg`` is the fit job's parameters (:meth:`.plan.Plan.fit_params`, read back
    as a :class:`~.plan.FitJob`); ``splits`` is the setting's splits file. Writes the
    tidy results of :func:`tcca_core.protocol.run_method` for every split, with the
    data set, setting and thread count, to ``out`` and returns them. Fit time and
    peak memory are measured per r; the job's own time and max RSS are in its
    benchmark file. Split-independent fits are done once for all the splits of the
    job, and with ``fit_cache`` (a folder) once for all jobs; entries live on disk,
    not in RAM.
    """
    from ..fit_cache import FitCache
    from ..protocol.run import run_method

    job = FitJob.from_params(cfg)
    data = load_views(
        job.dataset,
        data_root=data_root,
        mirror=mirror,
        views=job.views,
        offline=offline,
        **job.load,
    )
    subset, split_list = load_splits(splits, job.split)
    views, y = [v[subset] for v in data.views], data.y[subset]

    fit_views = None
    if job.fit_extra:  # extra unlabeled rows for the subspace (SecStr 1.3M)
        extra = load_views(
            job.fit_extra,
            data_root=data_root,
            mirror=mirror,
            views=job.views,
            offline=offline,
        )
        rows = random_subset(
            extra.n_samples,
            job.extra_subset,
            derived_rng(job.seed, job.dataset, job.setting, "extra"),
        )
        fit_views = [e[rows] for e in extra.views]
        logger.info("%d extra unlabeled rows for the subspace", len(rows))

    r_grid = r_grid_of({"r_grid": job.r_grid})
    logger.info("%s options: %s", job.method, json.dumps(job.params, sort_keys=True))
    frames = []
    with tempfile.TemporaryDirectory(prefix="tcca-fit-") as scratch:
        cache = FitCache(fit_cache or scratch)
        for split in split_list:
            logger.info(
                "%s, split %d: %d rows, r grid %s",
                job.method,
                split.index,
                len(y),
                r_grid,
            )
            label = f"{job.dataset}/{job.setting} {job.method} split {split.index}"
            with report_long_fits(label, sys.__stderr__, LONG_FIT_S):
                frames.append(
                    run_method(
                        views,
                        y,
                        split,
                        job.method,
                        r_grid=r_grid,
                        learner=job.learner,
                        params=job.params,
                        fit_views=fit_views,
                        seed=job.seed,
                        kernel=job.kernel,
                        cache=cache,
                    )
                )
        logger.info(
            "fit cache %s: %d reused, %d stored", cache.folder, cache.hits, cache.misses
        )
    results = pd.concat(frames, ignore_index=True)
    results.insert(0, "setting", job.setting)
    results.insert(0, "dataset", job.dataset)
    results["threads"] = threads
    write_csv(results, out)
    logger.info("%d rows written", len(results))
    return results


def gather_fits(fits: Sequence[PathLike], runs: PathLike, log: PathLike) -> None:
    """Concatenate the fit CSVs of one setting into ``runs``, in one order.

    ``fits`` come method by method (:meth:`.plan.Plan.fit_jobs`). A method's rows
    are put split by split, and a split's pair by pair (CCA and KCCA (BST)), each
    group's in the order of the files: the order of a job that loops over the
    splits (``fit_grain: method``), whatever the grain. Point jobs (``fit_grain:
    point``) each loop over the splits; read one after the other, a split's rows
    then come grid point by grid point, as a method job yields them for every
    runner but SSMVD's (r by r, every pair at each r), whose rows differ in their
    lambdas, a tie-break of selection before the rows' order
    (:mod:`tcca_core.protocol.selection`). So the tables do not depend on the grain.
    """
    table = pd.concat([pd.read_csv(f) for f in fits], ignore_index=True)
    if len(table):
        # codes in the order of first appearance: the methods' and the pairs' own
        method, _ = pd.factorize(table["method"])
        pairs = table["pair"].astype("string").fillna("")
        pair, _ = pd.factorize(table["method"].astype(str) + "/" + pairs)
        order = np.lexsort((pair, table["split"].to_numpy(), method))
        table = table.iloc[order].reset_index(drop=True)
    write_csv(table, runs)
    atomic_write_text(log, f"{len(table)} rows from {len(fits)} fit files\n")

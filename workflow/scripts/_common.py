"""Helpers shared by the workflow scripts: logging to the rule's log, data loading,
subsets, the split files and atomic writes; and the static facts (method options, r
bounds, data-set shapes) that workflow/rules/common.smk checks the configuration
against before any job runs. Tables, figures and the summary are built by
tcca_core.reporting; splits and fits by tcca_core.protocol."""

from __future__ import annotations

import contextlib
import json
import logging
import math
import os
import sys
import zlib
from collections.abc import Iterator
from pathlib import Path

import numpy as np


def start_logging(snakemake) -> logging.Logger:
    """Send stderr, warnings and the ``logging`` records of the job to its log file."""
    log = Path(snakemake.log[0])
    log.parent.mkdir(parents=True, exist_ok=True)
    sys.stderr = open(log, "w", buffering=1, encoding="utf-8")  # noqa: SIM115
    logging.basicConfig(
        stream=sys.stderr,
        level=logging.INFO,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        force=True,
    )
    logging.captureWarnings(True)
    return logging.getLogger(f"workflow.{snakemake.rule}")


def load_views(name: str, config: dict, views=None, **options):
    """``tcca_core.datasets.load`` with the pipeline's data root and mirror, keeping
    only the ``views`` named (by ``info["view_names"]`` or position), in that order.

    ``config`` is the workflow's (``snakemake.config``): where the data live is not a
    rule parameter, so moving the mirror does not make Snakemake rerun every job."""
    from tcca_core import datasets

    data = datasets.load(
        name, root=config["data_root"], mirror=config["mirror"], **options
    )
    if views:
        names = list(data.info.get("view_names") or [])
        try:
            idx = [v if isinstance(v, int) else names.index(v) for v in views]
        except ValueError:
            raise ValueError(
                f"data set {name!r} has views {names}; config asks for {list(views)}"
            ) from None
        data.views = [data.views[i] for i in idx]
        data.info = {
            **data.info,
            "view_names": [names[i] for i in idx] if names else idx,
        }
    return data


def derived_rng(seed: int, *names) -> np.random.Generator:
    """A generator for one purpose, derived from the config seed and stable names."""
    return np.random.default_rng(
        [int(seed), *(zlib.crc32(str(n).encode()) for n in names)]
    )


def random_subset(n: int, size: int | None, rng: np.random.Generator) -> np.ndarray:
    """Sorted indices of ``size`` rows drawn without replacement (all rows if None)."""
    if size is None or size >= n:
        return np.arange(n)
    return np.sort(rng.choice(n, size=int(size), replace=False))


def save_splits(path, subset, splits) -> None:
    """Write the subset (rows of the data set) and the splits (rows of the subset)."""
    doc = {
        "subset": np.asarray(subset).tolist(),
        "splits": [s.to_dict() for s in splits],
    }
    Path(path).write_text(json.dumps(doc, separators=(",", ":")) + "\n")


def load_splits(path, which: str):
    """(subset, [Split, ...]) for split ``which`` (a number) or every split ("all")."""
    from tcca_core.protocol import Split

    doc = json.loads(Path(path).read_text())
    splits = [Split.from_dict(d) for d in doc["splits"]]
    if which != "all":
        splits = [splits[int(which)]]
    return np.asarray(doc["subset"], dtype=np.intp), splits


@contextlib.contextmanager
def atomic_output(path) -> Iterator[Path]:
    """Yield a temporary path next to ``path``; rename it onto ``path`` on success.

    A job killed while writing (SIGTERM, SIGKILL, a node failure) leaves at most
    ``<name>.part`` behind, never a truncated file under the final name, so a rerun
    redoes the job instead of trusting half a table. On an exception the temporary
    file is removed.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    part = path.with_name(path.name + ".part")
    try:
        yield part
        with open(part, "rb") as f:  # on disk before the rename makes it visible
            os.fsync(f.fileno())
        os.replace(part, path)
    except BaseException:
        part.unlink(missing_ok=True)
        raise


# ----------------------------------------------------------- facts for config checks

#: Options a configuration may give each method of tcca_core.protocol.METHODS (its
#: validation grid and its extra keywords, plus ``subset`` for the transductive DSE
#: and SSMVD), and what bounds its dimension r: ``None`` (no r), ``"rows"`` (the number
#: of rows it is fitted on: kernel and transductive methods) or ``"views"`` (that and
#: prod(d) / max(d) of the view dimensions: TCCA's CP-rank bound, which is at least the
#: min(d_i, d_j) of the CCA variants). tests/test_pipeline_faults.py checks both against
#: the registry.
METHOD_OPTIONS = {
    "bsf": ("normalize",),
    "cat": ("normalize",),
    "cca_bst": ("eps", "center"),
    "cca_avg": ("eps", "center"),
    "cca_ls": ("eps", "center"),
    "dse": ("view_embedding", "n_neighbors", "pca_components", "subset"),
    "ssmvd": (
        "lambda1",
        "lambda2",
        "view_embedding",
        "n_neighbors",
        "pca_components",
        "max_iter",
        "tol",
        "subset",
    ),
    "tcca": ("eps", "max_iter", "tol", "init", "algorithm", "center"),
    "tcca_nc": ("eps", "center", "max_iter", "tol", "init", "algorithm"),
    "bsk": (),
    "avg": (),
    "kcca_bst": ("eps",),
    "kcca_avg": ("eps",),
    "ktcca": ("eps", "max_iter", "tol", "init", "algorithm", "jitter", "center"),
}

#: = tcca_core.protocol.R_GRID_PAPER (not imported: that module takes seconds to load,
#: and the configuration is checked in every Snakemake process).
R_GRID_PAPER = (
    list(range(5, 101, 5)) + list(range(110, 201, 10)) + list(range(220, 301, 20))
)
R_BOUND = {
    "bsf": None,
    "cat": None,
    "bsk": None,
    "avg": None,
    "cca_bst": "views",
    "cca_avg": "views",
    "cca_ls": "views",
    "tcca": "views",
    "tcca_nc": "views",
    "dse": "rows",
    "ssmvd": "rows",
    "kcca_bst": "rows",
    "kcca_avg": "rows",
    "ktcca": "rows",
}


def dataset_shape(name: str) -> tuple[int, list[tuple[str, int]]] | None:
    """(most rows, [(view name, dimension), ...]) of a data set, without its files.

    Upper bounds: NUS-WIDE's rows depend on its ``selection`` (all 269,648 images
    bound them) and Ads' first view has 587 columns with ``include_local: false``.
    ``None`` for a data set this table does not know (no r check is then made).
    """
    from tcca_core.datasets import ads, mfeat, nuswide, secstr

    shapes = {
        "secstr": (83_679, [(v, 105) for v in secstr.VIEW_NAMES]),
        "secstr-extra": (1_189_472, [(v, 105) for v in secstr.VIEW_NAMES]),
        "ads": (3_279, list(zip(ads.VIEW_NAMES, (588, 495, 472), strict=True))),
        "nuswide": (
            nuswide.N_IMAGES,
            [(n, v[3]) for n, v in zip(nuswide.VIEW_NAMES, nuswide.VIEWS, strict=True)],
        ),
        "mfeat": (2_000, [(v, mfeat.DIMS[v]) for v in mfeat.VIEWS]),
    }
    return shapes.get(name)


def r_bound(
    dataset: str,
    methods,
    *,
    views=None,
    subset: int | None = None,
    fit_extra: str | None = None,
    extra_subset: int | None = None,
) -> tuple[int, str] | None:
    """The largest r any of ``methods`` can return on a setting, and why.

    Every method caps r at its own r_max (rows above it are recorded as
    ``r_capped``); an r above this bound is capped for every method of the setting,
    a configuration mistake. ``None`` when no method has an r or the data set's shape
    is not known.
    """
    kinds = {R_BOUND.get(m, "rows") for m in methods} - {None}
    shape = dataset_shape(dataset)
    if not kinds or shape is None:
        return None
    n_max, named = shape
    n = n_max if subset is None else min(int(subset), n_max)
    why = (
        f"{n} rows, its `subset`"
        if subset is not None and subset < n_max
        else f"at most {n} rows, all of {dataset}"
    )
    if fit_extra:
        extra_shape = dataset_shape(fit_extra)
        if extra_shape is None:
            return None
        n_extra = extra_shape[0] if extra_subset is None else int(extra_subset)
        n += n_extra
        why += f" plus {n_extra} extra rows of {fit_extra}"
    if "rows" in kinds:
        return n, f"the methods are fitted on {why}"
    names = [v for v, _ in named]
    try:
        dims = [
            named[v][1] if isinstance(v, int) else named[names.index(v)][1]
            for v in (views or range(len(named)))
        ]
    except (ValueError, IndexError):  # a bad view name: the fit job says which
        return n, f"the methods are fitted on {why}"
    cap = math.prod(dims) // max(dims)
    if cap < n:
        return cap, (
            f"prod(d) / max(d) = {cap} for view dimensions {dims}: TCCA's bound, "
            "and CCA's min(d_i, d_j) is lower"
        )
    return n, f"the methods are fitted on {why}"

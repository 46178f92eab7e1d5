"""Helpers shared by the workflow scripts: logging to the rule's log, data loading,
subsets and the split files. Tables, figures and the summary are built by
tcca_core.reporting; splits and fits by tcca_core.protocol."""

from __future__ import annotations

import json
import logging
import sys
import zlib
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

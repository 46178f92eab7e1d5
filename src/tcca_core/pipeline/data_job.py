"""The data job: a data set fetched, verified and prepared, or skipped; its loading.

- :func:`prepare_data`: a data set fetched, verified and prepared, or skipped with
  one line when it cannot be obtained; its status in this run, as JSON (checkpoint
  ``prepare_data``);
- :func:`read_status`: that status read back by the jobs that need the data set;
- :func:`load_views`: a prepared data set loaded with the views a setting names.
"""

from __future__ import annotations

import json
import logging
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from .._io import atomic_write_text

__all__ = ["load_views", "prepare_data", "read_status"]

# The jobs' logger, as before the split: a job's log names it on every line.
logger = logging.getLogger("tcca_core.pipeline.jobs")

PathLike = str | os.PathLike


def load_views(
    name: str,
    *,
    data_root: PathLike,
    mirror: PathLike | None = None,
    views: Sequence[int | str] | None = None,
    offline: bool = False,
    **options: Any,
):
    """``tcca_core.datasets.load``, keeping only the ``views`` named, in that order.

    Views are named by ``info["view_names"]`` or by position. Where the data live
    (``data_root``, ``mirror``) is not a rule parameter, so moving the mirror does not
    make Snakemake rerun every job.
    """
    from .. import datasets

    data = datasets.load(
        name, root=data_root, mirror=mirror, offline=offline, **options
    )
    if views:
        names = list(data.info.get("view_names") or [])
        m = len(data.views)
        try:
            idx = [v if isinstance(v, int) else names.index(v) for v in views]
            if any(not 0 <= i < m for i in idx):
                raise ValueError
        except ValueError:
            raise ValueError(
                f"data set {name!r} has {m} views {names} (positions 0 to {m - 1}); "
                f"config asks for {list(views)}"
            ) from None
        data.views = [data.views[i] for i in idx]
        data.info = {
            **data.info,
            "view_names": [names[i] for i in idx] if names else idx,
        }
    return data


def _one_line(exc: BaseException, spec, data_root: PathLike) -> str:
    """Say on one line why a data set cannot be had, and what to do."""
    from ..datasets import DataUnavailableError

    if isinstance(exc, DataUnavailableError) and exc.hint:
        return exc.line
    first = " ".join(str(exc).split())
    hint = (spec.hint or "").replace("<root>", str(data_root))
    return f"{first}; {hint}" if hint else first


def prepare_data(
    dataset: str,
    status: PathLike,
    *,
    data_root: PathLike,
    mirror: PathLike | None = None,
    offline: bool = False,
    strict: bool = False,
    terminal=None,
) -> int:
    """Fetch, verify and prepare ``dataset``; write its status in this run.

    The mirror is tried first, then the network (unless ``offline``). When the
    data set cannot be obtained (nothing to copy or download, a host that is down,
    a download that is not the pinned file), one line saying what was tried, what
    to download and where to put it goes to ``terminal`` (default: the process's
    original stderr) and the whole message to the log; then either the status
    says ``"available": false`` with that line and 0 is returned (the run goes on
    without it), or with ``strict`` nothing is written and 1 is returned (the run
    fails). A full disk or an unwritable folder is always an error.

    The status (JSON) is ``{"dataset", "available", "reason" or "manifest"}``;
    download progress bars go to ``terminal`` when it is one.
    """
    from .. import datasets
    from ..datasets import _download

    term = terminal if terminal is not None else sys.__stderr__
    _download.PROGRESS_STREAM = term
    errors = (
        datasets.DataUnavailableError,
        datasets.ChecksumError,
        datasets.DownloadError,
        datasets.UnsafeArchiveError,
    )
    try:
        manifest = datasets.prepare(dataset, data_root, mirror, offline=offline)
    except datasets.WriteError as exc:
        # a full disk or an unwritable folder: no run can go on past it
        logger.error("%s", exc)
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        print(f"Data set {dataset} cannot be prepared: {first}", file=term, flush=True)
        return 1
    except errors as exc:
        logger.error("%s", exc)
        line = _one_line(exc, datasets.DATASETS[dataset], data_root)
        if mirror is None:  # the run's own way to the files, besides data_root
            line += (
                f" (or pass --config mirror=FOLDER, a folder holding {dataset}/<file>)"
            )
        if strict:
            print(
                f"Data set {dataset} cannot be obtained (strict: the run stops): "
                f"{line}",
                file=term,
                flush=True,
            )
            return 1
        print(f"Skipping data set {dataset}: {line}", file=term, flush=True)
        doc = {"dataset": dataset, "available": False, "reason": line}
    else:
        doc = {"dataset": dataset, "available": True, "manifest": str(manifest)}
    atomic_write_text(status, json.dumps(doc, indent=1) + "\n")
    return 0


def read_status(status: PathLike | None) -> dict:
    """Read a data set's status written by :func:`prepare_data` (ValueError if skipped).

    ``None``: nothing to check.
    """
    if status is None:
        return {"available": True}
    doc = json.loads(Path(status).read_text())
    if not doc["available"]:
        raise ValueError(
            f"data set {doc['dataset']!r} was skipped in this run: {doc['reason']}"
        )
    return doc

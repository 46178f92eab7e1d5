"""The pipeline's jobs, one function each, testable without Snakemake.

Each script in ``workflow/scripts/`` sets up logging (:func:`start_logging`) and calls
one function of this module with plain values taken from the ``snakemake`` object:

- :func:`prepare_data`: a data set fetched, verified and prepared, or skipped with
  one line when it cannot be obtained; its status in this run, as JSON (checkpoint
  ``prepare_data``);
- :func:`draw_splits`: the random subset (if any) and the labeled/validation/test
  splits of a setting, as JSON (rule ``splits``);
- :func:`run_fit_job`: one method on one split (or every split) of a setting over
  its whole r grid, as a CSV of tidy results (rule ``fit``);
- :func:`gather_fits`: the fit CSVs of a setting in one table (rule ``gather``);
- :func:`build_table`: one table (accuracy in both readings, cost, figures, JSON
  record) from the runs, keyed by (setting, method) (rule ``table``);
- :func:`write_summary` and :func:`write_reproduction`: ``results/summary.json``
  and REPRODUCTION.md.

The jobs live by kind: the data job in :mod:`.data_job`, the split and fit jobs in
:mod:`.fit_jobs`, the table, summary and report jobs in :mod:`.report_jobs`; this
module sets up a job's logging and names them all.

Every output is written atomically (:func:`tcca_core._io.atomic_write`): a job killed
mid-write never leaves a partial file under its final name.
"""

from __future__ import annotations

import contextlib
import errno
import io
import logging
import os
import sys
from pathlib import Path

# Re-exported: tcca_core.pipeline.jobs stays the one place that names every job
# (tests, user code and the docs import them from here).
from .data_job import load_views, prepare_data, read_status
from .fit_jobs import (
    MIN_EVAL_ROWS,
    check_eval_rows,
    derived_rng,
    draw_splits,
    gather_fits,
    load_splits,
    random_subset,
    run_fit_job,
    save_splits,
)
from .report_jobs import build_table, write_reproduction, write_summary

__all__ = [
    "MIN_EVAL_ROWS",
    "build_table",
    "check_eval_rows",
    "derived_rng",
    "draw_splits",
    "gather_fits",
    "load_splits",
    "load_views",
    "prepare_data",
    "random_subset",
    "read_status",
    "run_fit_job",
    "save_splits",
    "start_logging",
    "write_reproduction",
    "write_summary",
]


PathLike = str | os.PathLike


def start_logging(
    log: PathLike, rule: str = "job", *, keep_stderr: bool = False
) -> logging.Logger:
    """Send stderr, warnings and the ``logging`` records of the job to ``log``.

    Records at INFO and above of every logger are kept, the library's included: a
    fit job's log shows the solver's progress per rank (``tcca_core.solver.engine``:
    "rank r (i/n): ... sweeps"). With ``keep_stderr`` the job's stderr stays where
    it was (the terminal of a local run), for what the job shows there itself.
    """
    log = Path(log)
    log.parent.mkdir(parents=True, exist_ok=True)
    stream = _LogStream(open(log, "w", buffering=1, encoding="utf-8"))  # noqa: SIM115
    sys.excepthook = _FullDiskHook(rule, sys.excepthook)
    logging.raiseExceptions = False  # a log line that cannot be written is dropped
    if not keep_stderr:
        sys.stderr = stream
    logging.basicConfig(
        stream=stream,
        level=logging.INFO,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        force=True,
    )
    logging.getLogger("tcca_core").setLevel(logging.INFO)
    logging.captureWarnings(True)
    return logging.getLogger(f"workflow.{rule}")


#: What a full disk (or a full quota) raises.
_FULL = frozenset({errno.ENOSPC, getattr(errno, "EDQUOT", errno.ENOSPC)})


class _LogStream(io.TextIOBase):
    """A job's log file that a full disk cannot turn into an interpreter dump.

    Writes that fail are dropped (the job's own error says why, on the terminal).
    """

    def __init__(self, fh):
        self._fh = fh

    def write(self, text: str) -> int:
        with contextlib.suppress(OSError, ValueError):
            self._fh.write(text)
        return len(text)

    def flush(self) -> None:
        with contextlib.suppress(OSError, ValueError):
            self._fh.flush()

    def close(self) -> None:
        with contextlib.suppress(OSError, ValueError):
            self._fh.close()
        super().close()

    def fileno(self) -> int:
        return self._fh.fileno()


class _FullDiskHook:
    """``sys.excepthook`` that reports a full disk in one line, not a traceback.

    Every output is written atomically, so nothing partial is left; the line names
    the file that could not be written. Any other error goes to ``previous``.
    """

    def __init__(self, rule: str, previous):
        self.rule = rule
        self.previous = previous

    def __call__(self, kind, exc, tb):
        if isinstance(exc, OSError) and exc.errno in _FULL:
            where = f" {exc.filename}" if exc.filename else ""
            line = (
                f"{self.rule}: cannot write{where}: {os.strerror(exc.errno)} (the "
                "disk is full); nothing partial was left: free space and rerun\n"
            )
            outs = [sys.__stderr__] + (
                [sys.stderr] * (sys.stderr is not sys.__stderr__)
            )
            for out in outs:
                with contextlib.suppress(OSError, ValueError, AttributeError):
                    out.write(line)
                    out.flush()
            return
        self.previous(kind, exc, tb)

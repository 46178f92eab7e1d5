"""Progress of a long fit, over its ranks and their starts; off by default.

The estimators' ``verbose`` (scikit-learn's convention: an int, 0 says nothing)
opens a reporter for the length of a fit (:func:`fit_progress`); the engine tells
it where the fit is through the functions here (:func:`rank_begins`,
:func:`starts`, :func:`sweep_callback`, :func:`rank_done`), which do nothing when
no reporter is open. The reporter only reads what the fit computed, so no number
depends on ``verbose``.

``verbose=1`` shows a bar over the ranks (tqdm's, on stderr) whose text says the
rank, the starts raced, the sweep and the error, updated as ALS runs;
``verbose >= 2``, or ``verbose=1`` where stderr is not a terminal, writes lines
instead: one per rank, and with ``verbose >= 2`` one per start and every 100
sweeps. A pipeline job, whose fits run at ``verbose=0``, opens
:func:`report_long_fits` instead: a line on the terminal whenever a fit has run
another ``every`` seconds, so that a long fit shows that it is alive and short ones
stay quiet.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from time import perf_counter
from typing import IO, Any

from ._validation import Interval, Options

__all__ = [
    "VERBOSE_CONSTRAINT",
    "fit_progress",
    "rank_begins",
    "rank_done",
    "report_long_fits",
    "starts",
    "sweep_callback",
]

#: What an estimator's ``verbose`` may be (its own: the solver has no such option).
VERBOSE_CONSTRAINT: list = [Interval("integer", 0, None), Options(False, True)]

#: sweeps between two lines at verbose >= 2
SWEEP_LINES = 100


class _Lines:
    """Report by lines on ``stream``: all of them, or one per ``every`` seconds."""

    def __init__(
        self,
        name: str,
        stream: IO[str],
        *,
        detail: bool = False,
        every: float | None = None,
    ):
        self.name, self.stream, self.detail, self.every = name, stream, detail, every
        self.where = ""
        self.t0 = self.last = perf_counter()
        self.n_starts = 1

    def _say(self, text: str, *, always: bool = False) -> None:
        now = perf_counter()
        if self.every is not None and not always and now - self.last < self.every:
            return
        if self.every is not None and always and now - self.t0 < self.every:
            return  # a short fit stays quiet, even when a rank ends
        self.last = now
        elapsed = f" [{now - self.t0:.0f} s]" if self.every is not None else ""
        print(f"{self.name}: {text}{elapsed}", file=self.stream, flush=True)

    def rank_begins(self, r: int, i: int, n: int) -> None:
        self.where = f"rank {r} ({i}/{n})"

    def starts(self, n: int) -> None:
        self.n_starts = n
        if self.detail:
            self._say(f"{self.where}: racing {n} start{'s' * (n > 1)}")

    def sweep(self, n_iter: int, err: float) -> None:
        if (self.detail and n_iter % SWEEP_LINES == 0) or self.every is not None:
            self._say(f"{self.where}: sweep {n_iter}, relative error {err:.6g}")

    def rank_done(self, info: dict, seconds: float) -> None:
        err = info["errors"][-1] if info["errors"] else float("nan")
        self._say(
            f"{self.where} done: {info['n_iter']} sweeps, kept start {info['init']} "
            f"(of {self.n_starts} raced), relative error {err:.6g}, {seconds:.2f} s",
            always=True,
        )

    def close(self) -> None:
        pass


class _Bar:
    """Report on a tqdm bar over the ranks, its text updated as ALS runs."""

    def __init__(self, name: str, stream: IO[str]):
        from tqdm.auto import tqdm

        self.bar = tqdm(desc=name, unit="rank", file=stream, leave=True)
        self.where = ""
        self.n_starts = 1

    def rank_begins(self, r: int, i: int, n: int) -> None:
        if self.bar.total != n:
            self.bar.reset(total=n)
            self.bar.update(i - 1)
        self.where = f"r={r}"
        self.bar.set_postfix_str(self.where)

    def starts(self, n: int) -> None:
        self.n_starts = n
        self.bar.set_postfix_str(f"{self.where}, {n} start{'s' * (n > 1)}")

    def sweep(self, n_iter: int, err: float) -> None:
        self.bar.set_postfix_str(
            f"{self.where}, {self.n_starts} starts, sweep {n_iter}, error {err:.5g}",
            refresh=False,
        )
        self.bar.refresh()  # tqdm throttles the redraws itself (mininterval)

    def rank_done(self, info: dict, seconds: float) -> None:
        self.bar.update(1)

    def close(self) -> None:
        self.bar.close()


_CURRENT: ContextVar[Any] = ContextVar("tcca_core_progress", default=None)
#: a pipeline job's reporter factory for fits at verbose=0 (report_long_fits)
_AMBIENT: ContextVar[Callable[[str], Any] | None] = ContextVar(
    "tcca_core_progress_ambient", default=None
)


def _reporter(verbose: int, name: str, stream: IO[str] | None):
    stream = sys.stderr if stream is None else stream
    if verbose >= 2:
        return _Lines(name, stream, detail=True)
    isatty = getattr(stream, "isatty", None)
    if isatty is not None and isatty():
        try:
            return _Bar(name, stream)
        except ImportError:  # tqdm is a dependency; a stripped install may lack it
            pass
    return _Lines(name, stream)


@contextmanager
def fit_progress(verbose: int, name: str, stream: IO[str] | None = None) -> Iterator:
    """Report the progress of the fit run inside, as ``verbose`` says (module doc).

    With ``verbose=0`` a pipeline job's :func:`report_long_fits` reports, if one is
    open; otherwise nothing does.
    """
    if verbose:
        reporter = _reporter(int(verbose), name, stream)
    else:
        ambient = _AMBIENT.get()
        reporter = ambient(name) if ambient is not None else None
    if reporter is None:
        yield
        return
    token = _CURRENT.set(reporter)
    try:
        yield
    finally:
        _CURRENT.reset(token)
        reporter.close()


@contextmanager
def report_long_fits(
    label: str, stream: IO[str] | None, every: float = 30.0
) -> Iterator:
    """Give every fit inside at ``verbose=0`` a line on ``stream`` per ``every`` s.

    For a pipeline job: ``label`` names the job on every line (the data set,
    method and split), and fits shorter than ``every`` seconds print nothing.
    No stream (a process without stderr) reports nothing.
    """
    if stream is None:
        yield
        return
    token = _AMBIENT.set(lambda name: _Lines(f"{label} {name}", stream, every=every))
    try:
        yield
    finally:
        _AMBIENT.reset(token)


def rank_begins(r: int, i: int, n: int) -> None:
    """Say that rank ``r``, the ``i``-th of ``n``, starts."""
    reporter = _CURRENT.get()
    if reporter is not None:
        reporter.rank_begins(r, i, n)


def starts(n: int) -> None:
    """Say how many starts the current rank races."""
    reporter = _CURRENT.get()
    if reporter is not None:
        reporter.starts(n)


def sweep_callback() -> Callable[[int, float], None] | None:
    """Return ALS's per-sweep callback for the open reporter, or None."""
    reporter = _CURRENT.get()
    return None if reporter is None else reporter.sweep


def rank_done(info: dict, seconds: float) -> None:
    """Say that the current rank is fitted (``info``: the engine's)."""
    reporter = _CURRENT.get()
    if reporter is not None:
        reporter.rank_done(info, seconds)

"""Time and memory of a block: what :func:`~tcca_core.protocol.run_method` reports.

Every row of the results table carries ``fit_s`` (wall time, s) and ``peak_mb``
(tracemalloc peak, MiB) of producing its representation: the DR fit, its transform
and the kernels it needed. :func:`_measure` measures one block, :func:`_add_costs`
combines the costs of several (times add up, peaks take the max, as the blocks run
one after the other).
"""

from __future__ import annotations

import tracemalloc
from contextlib import contextmanager
from time import perf_counter


@contextmanager
def _measure():
    """Wall time (perf_counter) and tracemalloc peak (MiB) of the enclosed block.

    tracemalloc sees numpy's buffers but not LAPACK's internal workspace. Tracing is
    started here only if it is off, and stopped again; if a caller already traces,
    its peak is reset (tracemalloc has a single peak counter).
    """
    started = not tracemalloc.is_tracing()
    if started:
        tracemalloc.start()
    base = tracemalloc.get_traced_memory()[0]
    tracemalloc.reset_peak()
    cost = {}
    t0 = perf_counter()
    try:
        yield cost
    finally:
        cost["fit_s"] = perf_counter() - t0
        cost["peak_mb"] = max(tracemalloc.get_traced_memory()[1] - base, 0) / 2**20
        if started:
            tracemalloc.stop()


def _add_costs(*costs) -> dict:
    """Cost of blocks run one after the other: times add up, the peak is the largest."""
    return {
        "fit_s": float(sum(c["fit_s"] for c in costs)),
        "peak_mb": float(max(c["peak_mb"] for c in costs)),
    }

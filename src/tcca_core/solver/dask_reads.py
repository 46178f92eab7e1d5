"""Dask views read consistently: every pass sees the data the first pass saw.

A fit over Dask views reads every chunk once per pass (the statistics, then each
MTTKRP, norm and correlation pass of :mod:`._dask`). In memory the data cannot change
between passes; a store can (a Zarr array rewritten, or its chunks deleted, which
Zarr then serves as zeros), and the fit would mix the whitening of one data set with
the moments of another: correlations above 1, or zeros, with no error.

So each pass records a fingerprint of every chunk it reads, in the task that reads
it: its rows, the sum and the sum of squares of its values, and its count of NaN or
infinite values (:func:`fingerprint`). The statistics pass records the reference
(:class:`ChunkReads`); every later pass returns its fingerprints with its partial
sums (a few numbers per chunk, gathered by the tree sum, :func:`merge`), and
:func:`verified` compares them before the result is used. A chunk with NaN or
infinity fails with :class:`NonFiniteInputError`, a chunk that reads differently
with :class:`InputChangedError`, both naming the view and the chunk. Two-view
correlations outside [-1, 1] (impossible for data read consistently: Cauchy-Schwarz
on whitened views) fail with :class:`InputChangedError` too; with three views or
more the correlations are higher moments, which 1 does not bound.

:func:`finite_views` makes the lazy arrays of ``transform`` fail the same way on a
chunk with NaN or infinity, and :func:`warn_small_chunks` warns of chunks too small
for a task each.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from functools import partial

import numpy as np

__all__ = [
    "ChunkReads",
    "InputChangedError",
    "NonFiniteInputError",
    "check_correlations",
    "describe_pass",
    "fingerprint",
    "finite_views",
    "merge",
    "verified",
    "warn_small_chunks",
]

#: Fingerprints of the same bytes agree to this relative tolerance (the sums are
#: bitwise equal on one machine; workers of another CPU may round differently).
RTOL = 1e-10
#: Rows per chunk below which a pass spends more time on tasks than on arithmetic.
SMALL_CHUNK_ROWS = 100


class InputChangedError(ValueError):
    """A Dask view read differently in two passes of one fit (its store changed)."""


class NonFiniteInputError(ValueError):
    """A Dask view holds NaN or infinity (found in the pass that read it)."""


def fingerprint(X) -> np.ndarray:
    """Return [rows, sum, sum of squares, non-finite count] of one dense chunk.

    Two reductions; NaN and infinity, which make the sum of squares non-finite, are
    then counted (and left out of the sums, so that they are counted, not
    propagated).
    """
    X = np.asarray(X, dtype=np.float64)
    flat = X.reshape(-1)
    sq = float(np.dot(flat, flat))
    if np.isfinite(sq):
        return np.array([X.shape[0], flat.sum(), sq, 0.0])
    finite = np.isfinite(flat)
    bad = flat.size - int(np.count_nonzero(finite))
    flat = np.where(finite, flat, 0.0)
    return np.array([X.shape[0], flat.sum(), np.dot(flat, flat), bad], dtype=float)


def _dense(X) -> np.ndarray:
    """Return a chunk as a dense float64 array (as the passes' kernels read it)."""
    if hasattr(X, "toarray"):  # scipy.sparse
        X = X.toarray()
    elif hasattr(X, "todense") and not isinstance(X, np.ndarray):  # pydata sparse
        X = X.todense()
    return np.asarray(X, dtype=np.float64)


def _chunk_fingerprint(X) -> np.ndarray:
    return fingerprint(_dense(X))


def _fingerprinted(func, m: int, k: int, *args) -> tuple:
    """``func(*args)``, and the fingerprints of its m chunks as ``{k: (m, 4)}``.

    The chunks are ``args[-m:]``, chunk ``k`` of every view.
    """
    out = func(*args)
    prints = np.array([_chunk_fingerprint(X) for X in args[len(args) - m :]])
    return out, {k: prints}


def merge(*parts) -> tuple:
    """Sum the results of disjoint chunks and gather their fingerprints."""
    total = parts[0][0]
    total = total.copy() if isinstance(total, np.ndarray) else total
    prints = dict(parts[0][1])
    for out, more in parts[1:]:
        total = total + out
        prints.update(more)
    return total, prints


def describe_pass(func) -> str:
    """Name a pass by its chunk kernel (``_chunk_mttkrp`` -> "the mttkrp pass")."""
    name = getattr(func, "__name__", "a").removeprefix("_chunk_")
    return f"the {name} pass"


class ChunkReads:
    """The fingerprints of every chunk of the views, as the first pass read them.

    Parameters
    ----------
    n_views, n_chunks : int
        The views and their row chunks (the same for every view).
    """

    def __init__(self, n_views: int, n_chunks: int):
        self.n_views = n_views
        self.n_chunks = n_chunks
        self.reference: np.ndarray | None = None

    def graph(self, blocks: Sequence[Sequence]):
        """Delayed fingerprints of ``blocks[p][k]`` (for the first pass's compute)."""
        from dask import delayed

        return [[delayed(_chunk_fingerprint)(b) for b in view] for view in blocks]

    def record(self, computed) -> None:
        """Keep the fingerprints the first pass computed; fail on non-finite chunks."""
        prints = np.array(computed, dtype=np.float64).reshape(
            self.n_views, self.n_chunks, 4
        )
        _check_finite(prints, "the statistics pass")
        self.reference = prints

    def wrap(self, func, m: int):
        """Return ``func`` returning its result and its chunks' fingerprints.

        The wrapped function takes the chunk's index first, then ``func``'s
        arguments; see :func:`_fingerprinted`.
        """
        return partial(_fingerprinted, func, m)


def _check_finite(prints: np.ndarray, where: str) -> None:
    bad = np.argwhere(prints[:, :, 3] > 0)
    if bad.size:
        p, k = (int(i) for i in bad[0])
        raise NonFiniteInputError(
            f"view {p} contains NaN or infinity ({int(prints[:, :, 3].sum())} entries; "
            f"first in row chunk {k}, read by {where})"
        )


def verified(total: tuple, reference: np.ndarray, where: str):
    """Check the fingerprints a pass gathered (:func:`merge`); return its result.

    Raises :class:`NonFiniteInputError` for a chunk with NaN or infinity and
    :class:`InputChangedError` for one whose fingerprint differs from
    ``reference`` (views x chunks x 4).
    """
    result, gathered = total
    n_views, n_chunks, _ = reference.shape
    if sorted(gathered) != list(range(n_chunks)):
        raise InputChangedError(f"{where} did not read every row chunk once")
    prints = np.stack([gathered[k] for k in range(n_chunks)], axis=1)
    _check_finite(prints, where)
    scale = np.abs(reference) + np.sqrt(reference[:, :, :1] * reference[:, :, 2:3])
    differ = np.abs(prints - reference) > RTOL * scale
    differ[:, :, 0] = prints[:, :, 0] != reference[:, :, 0]
    if differ.any():
        p, k = (int(i) for i in np.argwhere(differ.any(axis=2))[0])
        n_changed = int(differ.any(axis=2).sum())
        then, now = (
            ", ".join(f"{x:.6g}" for x in a[p, k, :3]) for a in (reference, prints)
        )
        raise InputChangedError(
            f"view {p}, row chunk {k} read differently in {where} than in the "
            f"statistics pass ({n_changed} chunk(s) changed; rows, sum, sum of "
            f"squares {then}, then {now}): the data changed during the fit (a store "
            "rewritten, or chunks deleted); fit again on data that stay fixed"
        )
    return result


def check_correlations(rho: np.ndarray, n_views: int) -> np.ndarray:
    """Return ``rho``; two-view correlations outside [-1, 1] raise.

    For two whitened views, Cauchy-Schwarz bounds every correlation by 1; outside
    it, the passes did not read the same data.
    """
    rho = np.asarray(rho)
    if not np.all(np.isfinite(rho)):
        raise NonFiniteInputError(f"the correlations are not finite: {rho.tolist()}")
    if n_views == 2 and np.any(np.abs(rho) > 1 + 1e-8):
        raise InputChangedError(
            f"correlations {rho.tolist()} lie outside [-1, 1], which two views "
            "read consistently cannot give: the data changed during the fit"
        )
    return rho


def _finite_block(X, p: int):
    bad = X.size - int(np.count_nonzero(np.isfinite(X)))
    if bad:
        raise NonFiniteInputError(f"view {p} contains NaN or infinity ({bad} entries)")
    return X


def finite_views(views: Sequence) -> list:
    """Return the Dask views, each failing on a chunk with NaN or infinity."""
    return [
        X.map_blocks(_finite_block, p, dtype=X.dtype, meta=X._meta)
        for p, X in enumerate(views)
    ]


def warn_small_chunks(views: Sequence) -> None:
    """Warn where the views' row chunks are too small for a task each."""
    from dask.array.core import PerformanceWarning

    chunks = views[0].chunks[0]
    if len(chunks) > 1 and sum(chunks) / len(chunks) < SMALL_CHUNK_ROWS:
        warnings.warn(
            f"the views' row chunks hold {sum(chunks) / len(chunks):.3g} rows on "
            f"average ({len(chunks)} chunks): every pass runs one task per chunk, "
            "so the fit spends its time on tasks; rechunk to thousands of rows, "
            "e.g. views = [X.rechunk({0: 10_000}) for X in views]",
            PerformanceWarning,
            stacklevel=4,
        )

"""The per-chunk work of the Dask engine (:mod:`.dask`): kernels and tree sums.

Each pass over Dask views is one task per row chunk, which calls one of the
``_chunk_*`` kernels below on chunk k of every view (read inside the task when the
views come from a store: :func:`_inline_sources`), and a tree sum of the partial
results, ``SPLIT_EVERY`` at a time, so that results do not depend on scheduling.
The kernels do the arithmetic of :class:`.implicit.ImplicitMoment` on one chunk.
"""

from __future__ import annotations

from collections.abc import Sequence

import dask
import numpy as np
import scipy.sparse as sp
from dask import delayed

from .._validation import check_magnitude
from .implicit import _gram_block
from .sparse import _prod
from .views import _block_rows

#: Partial results merged per task of the tree reductions.
SPLIT_EVERY = 8


def _block(X) -> np.ndarray:
    """Return a chunk as a dense float64 array (a sparse chunk is densified)."""
    if sp.issparse(X):
        X = X.toarray()
    elif hasattr(X, "todense") and not isinstance(X, np.ndarray):  # pydata sparse
        X = X.todense()
    return np.asarray(X, dtype=np.float64)


def _blocks(X) -> list:
    """Return the row chunks of a Dask array as delayed objects (one column chunk)."""
    return list(X.to_delayed().ravel())


def _tree_sum(parts: list, combine=None):
    """Sum delayed partial results by a tree, ``SPLIT_EVERY`` at a time.

    ``combine`` (default: addition) merges a group of partial results. The tree is
    fixed by the number of chunks, so the result is deterministic.
    """
    combine = _sum if combine is None else combine
    if not parts:
        raise ValueError("nothing to sum")
    while len(parts) > 1:
        parts = [
            delayed(combine)(*parts[i : i + SPLIT_EVERY])
            for i in range(0, len(parts), SPLIT_EVERY)
        ]
    return parts[0]


def _sum(*xs):
    total = xs[0].copy() if isinstance(xs[0], np.ndarray) else xs[0]
    for x in xs[1:]:
        total = total + x
    return total


# ---------------------------------------------------------------------- statistics


def _chunk_stats(X, center: bool):
    X = _block(X)
    bad = int(X.size - np.count_nonzero(np.isfinite(X)))
    if bad or X.shape[0] == 0:
        d = X.shape[1]
        return (X.shape[0], np.zeros(d), np.zeros((d, d)), bad, None, None, 0.0)
    mean = X.mean(axis=0) if center else np.zeros(X.shape[1])
    D = X - mean
    amax = float(np.max(np.abs(X)))
    return (X.shape[0], mean, D.T @ D, 0, X.max(axis=0), X.min(axis=0), amax)


def _merge_stats(*parts):
    """Merge (n, mean, scatter, bad, max, min, |max|) of disjoint row sets (Chan)."""
    n, mean, S, bad, hi, lo, amax = parts[0]
    S = S.copy()
    for n2, mean2, S2, bad2, hi2, lo2, amax2 in parts[1:]:
        bad += bad2
        amax = max(amax, amax2)
        hi = hi2 if hi is None else (hi if hi2 is None else np.maximum(hi, hi2))
        lo = lo2 if lo is None else (lo if lo2 is None else np.minimum(lo, lo2))
        if n2 == 0:
            continue
        total = n + n2
        delta = mean2 - mean
        S = S + S2 + np.outer(delta, delta) * (n * n2 / total)
        mean = mean + delta * (n2 / total)
        n = total
    return n, mean, S, bad, hi, lo, amax


def view_statistics(views: Sequence, center: bool, reads=None) -> list[tuple]:
    """Per view: (mean, C_pp, constant?) from one pass over the data.

    With ``center=False`` the mean is zero and C_pp the raw second moment, as the
    in-memory fit computes them. Raises the in-memory messages for NaN/infinity
    (:class:`.dask_reads.NonFiniteInputError`) and for values whose squares
    overflow. ``reads`` (a :class:`.dask_reads.ChunkReads`) records the
    fingerprint of every chunk in the same pass.
    """
    from .dask_reads import NonFiniteInputError

    blocks = [_blocks(X) for X in views]
    stats = [
        _tree_sum([delayed(_chunk_stats)(b, center) for b in bs], _merge_stats)
        for bs in blocks
    ]
    prints = reads.graph(blocks) if reads is not None else []
    merged, prints = dask.compute(stats, prints)
    out = []
    for p, (X, (n, mean, S, bad, hi, lo, amax)) in enumerate(
        zip(views, merged, strict=True)
    ):
        if bad:
            raise NonFiniteInputError(
                f"view {p} contains NaN or infinity ({bad} entries)"
            )
        check_magnitude(np.array([amax]), X.shape, f"view {p}")
        C = S / n
        constant = bool(np.array_equal(hi, lo))
        out.append((mean, (C + C.T) / 2, constant))
    if reads is not None:
        reads.record(prints)
    return out


class _Sources:
    """The tasks that make chunk k of every view (an opaque argument for delayed)."""

    def __init__(self, graph: dict, keys: list):
        self.graph = graph
        self.keys = keys


#: Largest recipe (dask.sizeof bytes) of one chunk that a task makes inline.
INLINE_MAX_BYTES = 1 << 20


def _inline_sources(arrays: Sequence) -> list[_Sources] | None:
    """Per row chunk, the small graph that makes chunk k of every view, or None.

    None when some chunk's graph holds data (a NumPy array given to
    ``from_array``, over ``INLINE_MAX_BYTES`` by ``dask.sizeof``) or results that
    live on the workers (persisted views): those chunks stay task dependencies.
    """
    from dask.core import flatten
    from dask.optimization import cull
    from dask.sizeof import sizeof

    per_view = []
    for X in arrays:
        (Xo,) = dask.optimize(X)
        graph = dict(Xo.__dask_graph__())
        keys = list(flatten(Xo.__dask_keys__()))
        subs = []
        for key in keys:
            try:
                sub, _ = cull(graph, [key])
            except KeyError:  # a graph whose keys cull cannot follow: let Dask run it
                return None
            for node in sub.values():
                value = getattr(node, "value", None)
                if type(value).__module__.partition(".")[0] == "distributed":
                    return None  # a Future: the chunk is in a worker's memory
            if sizeof(sub) > INLINE_MAX_BYTES:  # holds data, not only a recipe
                return None
            subs.append((sub, key))
        per_view.append(subs)
    out = []
    for k in range(len(per_view[0])):
        merged: dict = {}
        for subs in per_view:
            merged.update(subs[k][0])
        out.append(_Sources(merged, [subs[k][1] for subs in per_view]))
    return out


def _inline_call(func, sources: _Sources, *consts) -> np.ndarray:
    from dask.local import get_sync

    blocks = get_sync(sources.graph, sources.keys)
    return func(*consts, *blocks)


def _chunk_call(func, m: int, *args) -> np.ndarray:
    # blockwise passes the views' chunks first, then the constants
    return func(*args[m:], *args[:m])[None]


def _chunk_mttkrp(p: int, means, WUs, *blocks) -> np.ndarray:
    # (X_p - mean_p)^T (Hadamard_{q != p} (X_q - mean_q) W_q U_q) for this chunk;
    # the client applies W_p^T and 1/N. Products in the order of ImplicitMoment.
    H = None
    for q, X in enumerate(blocks):
        if q == p:
            continue
        P = (_block(X) - means[q]) @ WUs[q]
        if H is None:
            H = P
        else:
            H *= P
    assert H is not None  # at least two views
    return (_block(blocks[p]) - means[p]).T @ H


def _chunk_correlations(means, WUs, *blocks) -> np.ndarray:
    H = None
    for X, mean, WU in zip(blocks, means, WUs, strict=True):
        P = (_block(X) - mean) @ WU
        if H is None:
            H = P
        else:
            H *= P
    assert H is not None
    return H.sum(axis=0)


def _chunk_cross(means, X1, X2) -> np.ndarray:
    return (_block(X1) - means[0]).T @ (_block(X2) - means[1])


def _whiten(blocks, means, Ws) -> list[np.ndarray]:
    return [(_block(X) - mu) @ W for X, mu, W in zip(blocks, means, Ws, strict=True)]


def _chunk_slab(order, j0: int, j1: int, means, Ws, *blocks) -> np.ndarray:
    """Y_f^T (Y_2[:, j0:j1] kr_rows Y_3 ... ) over this chunk's rows (not / N).

    The row-wise Khatri-Rao product is formed by blocks of rows of at most 64 MB,
    as in :func:`.implicit._unfolding_slabs`.
    """
    Y = _whiten(blocks, means, Ws)
    Y = [Y[p] for p in order]
    n = Y[0].shape[0]
    rest = int(_prod(y.shape[1] for y in Y[2:]))
    cols = (j1 - j0) * rest
    B = _block_rows(max(n, 1), 8 * cols)
    acc = np.zeros((Y[0].shape[1], cols))
    for i in range(0, n, B):
        KR = Y[1][i : i + B, j0:j1]
        for Yq in Y[2:]:
            KR = (KR[:, :, None] * Yq[i : i + B, None, :]).reshape(KR.shape[0], -1)
        acc += Y[0][i : i + B].T @ KR
    return acc


def _slab_norm(S: np.ndarray, N: int) -> float:
    a = S / N
    return float(np.vdot(a, a))


def _slab_gram(S: np.ndarray, N: int) -> np.ndarray:
    a = S / N
    return a @ a.T


def _slab_residual(S: np.ndarray, N: int, Uf: np.ndarray, K: np.ndarray) -> float:
    R = S / N - Uf @ K.T
    return float(np.vdot(R, R))


def _chunk_pair_gram(same: bool, means, Ws, m: int, *blocks) -> float:
    """sum_{n in chunk i, n' in chunk j} prod_p <y_pn, y_pn'>, by 2048-row blocks.

    For i != j the caller counts the pair twice (G_ij = G_ji^T).
    """
    Yi = _whiten(blocks[:m], means, Ws)
    Yj = Yi if same else _whiten(blocks[m:], means, Ws)
    ni, nj = Yi[0].shape[0], Yj[0].shape[0]
    B = _gram_block(max(ni, nj, 1))
    total = 0.0
    for a in range(0, ni, B):
        for b in range(0, nj, B):
            G = None
            for yi, yj in zip(Yi, Yj, strict=True):
                g = yi[a : a + B] @ yj[b : b + B].T
                G = g if G is None else G * g
            assert G is not None
            total += float(G.sum())
    return total

"""TCCA on Dask arrays: every pass over the data runs as Dask tasks.

The in-memory tensor-free engine (:class:`.implicit.ImplicitMoment`) needs only a
few kinds of passes over the whitened views Y_p = (X_p - mean_p) W_p; each is a map
over the row chunks (chunk k of every view goes to one task) followed by a tree
reduction of small results, so the views are never gathered and nothing N-sized
reaches the client:

* the statistics (one pass): per chunk its mean and centered scatter matrix,
  merged pairwise (Chan, Golub & LeVeque), which gives C_pp without a second pass
  and without the cancellation of X^T X / N - mean mean^T;
* the MTTKRP of mode p (one pass): Y_p^T (Hadamard_{q != p} Y_q U_q) / N, each task
  returning a d_p x r block;
* ||M||^2, the mode Grams M_(p) M_(p)^T of the exact HOSVD and the direct residual
  (one pass each): column slabs of the unfolding M_(f) = Y_f^T (Khatri-Rao of the
  others) / N, reduced per slab and turned into a scalar or a d x d matrix on a
  worker (the tensor is never held whole, nor on the client); or, for ||M||^2 where
  the Gram route is cheaper (N < prod(d) / sum(d)), pairs of chunks of the N x N Gram
  matrices by 2048-row blocks, again never formed whole;
* the correlations rho_k, and M = Y_1^T Y_2 / N for two views (one pass each).

The arithmetic is that of the in-memory engine (same formulas, same order of the
Hadamard products), so a fit on Dask views equals the in-memory fit to rounding
(1e-10 relative is tested). The whitening, the ALS loop, the starts and their race
are the in-memory ones: the rank path is :func:`.path.tcca_rank_path`, which takes
this module's :func:`check_views`, :func:`statistics` and :func:`engine` for Dask
views, and :class:`DaskEngine` is a :class:`.engine.MomentEngine` whose operator
is :class:`DaskMoment`.

This module is imported only when a view is a Dask array, so that ``tcca_core``
does not import Dask otherwise.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import partial
from typing import Any

import dask
import dask.array as da
import numpy as np
import scipy.sparse as sp
from dask import delayed

from . import dask_reads
from .dask_chunks import (
    SPLIT_EVERY,
    _blocks,
    _chunk_call,
    _chunk_correlations,
    _chunk_cross,
    _chunk_mttkrp,
    _chunk_pair_gram,
    _chunk_slab,
    _inline_call,
    _inline_sources,
    _slab_gram,
    _slab_norm,
    _slab_residual,
    _tree_sum,
    view_statistics,
)
from .engine import MomentEngine
from .implicit import _unfolding_plan, mode_gram_costs, norm_costs
from .linalg import svd
from .sparse import _prod

__all__ = [
    "DaskEngine",
    "DaskMoment",
    "DaskView",
    "as_dask_views",
    "check_views",
    "engine",
    "statistics",
    "transform",
]


# --------------------------------------------------------------------------- input


def as_dask_views(views, min_samples: int = 2) -> list:
    """Validate a list of views of which at least one is a Dask array.

    Every view must be a 2-D Dask array (NumPy arrays are wrapped, chunked like the
    first Dask view) of real numbers with known chunk sizes, the same number of
    rows and the same row chunks. Columns are put in one chunk (each task needs
    whole rows). Values (finiteness, magnitude) are checked in the statistics pass.
    """
    if not isinstance(views, (list, tuple)):
        raise ValueError(
            f"views must be a list of arrays, one per view; got {type(views).__name__}"
        )
    if len(views) < 2:
        raise ValueError(f"at least 2 views are needed, got {len(views)}")
    ref = next(X for X in views if isinstance(X, da.Array))
    out = []
    for p, X in enumerate(views):
        if not isinstance(X, da.Array):
            if type(X).__module__.startswith("dask"):
                raise ValueError(
                    f"view {p} is a {type(X).__name__}; pass a dask.array.Array, "
                    "e.g. df.to_dask_array(lengths=True)"
                )
            if X is None or sp.issparse(X):
                raise ValueError(
                    f"view {p} is {'None' if X is None else 'a sparse matrix'}: with "
                    "Dask views, pass every view as a dask array (or a dense array)"
                )
            X = np.asarray(X)
            if X.ndim != 2:
                raise ValueError(
                    f"view {p} must be 2-D (n_samples, n_features), got shape {X.shape}"
                )
            X = da.from_array(X, chunks=(ref.chunks[0], -1))
        if X.ndim != 2:
            raise ValueError(
                f"view {p} must be 2-D (n_samples, n_features), got shape {X.shape}"
            )
        if any(np.isnan(c) for c in X.chunks[0]):
            raise ValueError(
                f"view {p} has unknown chunk sizes (rows); compute them first with "
                f"views[{p}] = views[{p}].compute_chunk_sizes()"
            )
        if X.dtype.kind not in "biuf":
            raise ValueError(
                f"view {p} has dtype {X.dtype}; pass real numbers (float, int, bool)"
            )
        if X.shape[1] == 0:
            raise ValueError(f"view {p} has no features (shape {X.shape})")
        out.append(X)
    n = [X.shape[0] for X in out]
    if len(set(n)) != 1:
        p = next(p for p, n_p in enumerate(n) if n_p != n[0])
        raise ValueError(
            f"all views must have the same number of samples (rows); got {n}: "
            f"view {p} has {n[p]}, view 0 has {n[0]}"
        )
    for p, X in enumerate(out):
        if X.chunks[0] != out[0].chunks[0]:
            raise ValueError(
                f"view {p}'s row chunks differ from view 0's (chunk sizes "
                f"{_show_chunks(X.chunks[0])} vs {_show_chunks(out[0].chunks[0])}): "
                "each task needs the same rows of every view; rechunk it alike, "
                f"e.g. views[{p}] = views[{p}].rechunk({{0: views[0].chunks[0]}})"
            )
    if n[0] < min_samples:
        raise ValueError(f"at least {min_samples} samples are needed, got {n[0]}")
    return [X.rechunk({1: -1}) if X.numblocks[1] > 1 else X for X in out]


def _show_chunks(chunks: Sequence[int]) -> str:
    if len(chunks) <= 4:
        return str(tuple(chunks))
    return f"({chunks[0]}, {chunks[1]}, ..., {chunks[-1]}; {len(chunks)} chunks)"


# ----------------------------------------------------------------- the moment tensor


class DaskView:
    """One view on Dask, with its whitening: what :class:`WhitenedView` is in memory.

    ``blocks`` are the row chunks as delayed objects; the whitened rows
    Y = (X - mean) W are formed inside the tasks, chunk by chunk.
    """

    is_sparse = False
    sparse = None

    def __init__(self, X, mean: np.ndarray, W: np.ndarray):
        self.X = X
        self.N = int(X.shape[0])
        self.d = int(W.shape[1])
        self.mean = mean
        self.W = W
        self.blocks = _blocks(X)

    @property
    def nnz_per_row(self) -> float:
        """Dense: every feature counts (the cost models' convention)."""
        return float(self.d)


class DaskMoment:
    """The tensor-free operator of :class:`.implicit.ImplicitMoment`, on Dask.

    Same interface (``mttkrp``, ``norm_sq``, ``mode_grams``) plus the passes the
    in-memory engine does over its :class:`WhitenedView` objects (``correlations``,
    ``residual_sq``, ``cross_moment``). Each call is one ``dask.compute`` of a
    graph that maps over the row chunks and reduces by a tree; it runs on the
    active scheduler (a ``distributed.Client`` when one exists). Nothing is cached
    between calls: a projection Y_q U_q has N rows.

    With ``reads`` (a :class:`.dask_reads.ChunkReads` of the statistics pass),
    every pass also checks that it read the chunks that pass read.
    """

    #: the fingerprints every pass is checked against (None: unchecked)
    reads: dask_reads.ChunkReads | None = None

    def __init__(self, views: Sequence[DaskView]):
        self.views = list(views)
        self.N = self.views[0].N
        self.dims = [v.d for v in self.views]
        self.n_chunks = len(self.views[0].blocks)
        # small per-fit constants, one task each in every graph
        self._means = delayed([v.mean for v in self.views], pure=True)
        self._Ws = delayed([v.W for v in self.views], pure=True)
        self._inline = _inline_sources([v.X for v in self.views])

    def _rows(self, k: int) -> list:
        return [v.blocks[k] for v in self.views]

    def _per_chunk(self, func, shape: tuple[int, ...], *consts):
        """Sum over the row chunks of ``func(*consts, *chunk k of every view)``.

        One task per chunk, then a tree sum, ``SPLIT_EVERY`` at a time; returns a
        lazy Dask object of ``shape``. ``consts`` are small (delayed objects are
        sent once). Where every view's chunks are cheap to make from a small
        recipe (read from Zarr or another store: :func:`_inline_sources`), the
        task reads chunk k of every view itself, so that they meet on one worker;
        as separate read tasks, Dask would spread them over the workers and move
        most chunks between them (three times the pass's time on the benchmark).
        Otherwise (views persisted in memory, or computed) the chunks are the
        task's dependencies, by one blockwise task per chunk.
        """
        if self.reads is not None:
            return self._per_chunk_checked(func, *consts)
        if self._inline is not None:
            parts = [
                delayed(_inline_call)(func, self._inline[k], *consts)
                for k in range(self.n_chunks)
            ]
            return _tree_sum(parts)
        m = len(self.views)
        args: list = []
        for q, v in enumerate(self.views):
            args += [v.X, ("k", f"j{q}")]
        for c in consts:
            args += [c, None]
        out = ("k", *(f"o{i}" for i in range(len(shape))))
        parts = da.blockwise(
            partial(_chunk_call, func, m),
            out,
            *args,
            new_axes={f"o{i}": n for i, n in enumerate(shape)},
            concatenate=True,
            dtype=np.float64,
            meta=np.empty((0,) * (1 + len(shape))),
        )
        return parts.sum(axis=0, split_every=SPLIT_EVERY)

    def _per_chunk_checked(self, func, *consts):
        """:meth:`_per_chunk`, each task also fingerprinting the chunks it reads.

        The fingerprints travel with the partial sums (one small array per chunk,
        :mod:`.dask_reads`) and are checked against the statistics pass's before
        the result is returned; persisted chunks are the tasks' dependencies.
        """
        assert self.reads is not None
        wrapped = self.reads.wrap(func, len(self.views))
        if self._inline is not None:
            parts = [
                delayed(_inline_call)(wrapped, self._inline[k], k, *consts)
                for k in range(self.n_chunks)
            ]
        else:
            parts = [
                delayed(wrapped)(k, *consts, *self._rows(k))
                for k in range(self.n_chunks)
            ]
        total = _tree_sum(parts, dask_reads.merge)
        where = dask_reads.describe_pass(func)
        return delayed(dask_reads.verified)(total, self.reads.reference, where)

    def mttkrp(self, factors: Sequence[np.ndarray], p: int) -> np.ndarray:
        """M_(p) (kr_{q != p} U_q) = Y_p^T (Hadamard_{q != p} Y_q U_q) / N."""
        WUs = [None if q == p else v.W @ factors[q] for q, v in enumerate(self.views)]
        S = self._per_chunk(
            _chunk_mttkrp,
            (self.views[p].X.shape[1], factors[0].shape[1]),
            p,
            self._means,
            delayed(WUs, pure=True),
        )
        (S,) = dask.compute(S)
        return self.views[p].W.T @ S / self.N

    def correlations(self, factors: Sequence[np.ndarray]) -> np.ndarray:
        """rho_k = (1/N) sum_n prod_p (Y_p U_p)[n, k] (Theorem 1)."""
        WUs = delayed(
            [v.W @ U for v, U in zip(self.views, factors, strict=True)], pure=True
        )
        S = self._per_chunk(
            _chunk_correlations, (factors[0].shape[1],), self._means, WUs
        )
        (total,) = dask.compute(S)
        return total / self.N

    def cross_moment(self) -> np.ndarray:
        """M = Y_1^T Y_2 / N for two views (d_1 x d_2), in one pass."""
        v1, v2 = self.views
        S = self._per_chunk(_chunk_cross, (v1.X.shape[1], v2.X.shape[1]), self._means)
        (S,) = dask.compute(S)
        return v1.W.T @ S @ v2.W / self.N

    # ----------------------------------------------------- slabs of the unfolding

    def _slab_sums(self, first: int | None) -> tuple[list[int], int, list]:
        """Delayed column slabs of N M_(first) (see :func:`_chunk_slab`)."""
        plan = _unfolding_plan(self.dims, first)
        if plan is None:
            raise ValueError(
                "the unfolding of M is too wide for slabs of 64 MB "
                "(d_f * d_3 * ... * d_m > 8M)"
            )
        order, J = plan
        slabs = []
        for j0 in range(0, self.dims[order[1]], J):
            j1 = min(j0 + J, self.dims[order[1]])
            rest = int(_prod(self.dims[q] for q in order[2:]))
            shape = (self.dims[order[0]], (j1 - j0) * rest)
            slabs.append(
                self._per_chunk(
                    _chunk_slab, shape, tuple(order), j0, j1, self._means, self._Ws
                )
            )
        return order, J, slabs

    def norm_method(self) -> str:
        """Return the cheapest exact route to ||M||^2, as the in-memory engine does."""
        costs = norm_costs(self.N, self.dims)
        return min(costs, key=costs.__getitem__)

    def norm_sq(self, method: str | None = None) -> float:
        """||M||_F^2 by column slabs of the unfolding or by blocks of Gram pairs."""
        method = self.norm_method() if method is None else method
        if method == "unfolding":
            _, _, slabs = self._slab_sums(None)
            parts = [delayed(_slab_norm)(S, self.N) for S in slabs]
            return float(sum(dask.compute(*parts)))
        if method != "gram":
            raise ValueError(f"unknown norm method {method!r}")
        m, K = len(self.views), self.n_chunks
        parts = []
        for i in range(K):
            for j in range(i, K):
                blocks = self._rows(i) + ([] if i == j else self._rows(j))
                t = delayed(_chunk_pair_gram)(i == j, self._means, self._Ws, m, *blocks)
                parts.append(t if i == j else delayed(_scale)(t, 2.0))
        (total,) = dask.compute(_tree_sum(parts))
        return float(total) / self.N**2

    def mode_grams(self) -> list[np.ndarray]:
        """M_(p) M_(p)^T for every mode, from slabs of each unfolding (one pass).

        The Gram route of the in-memory engine would need N x N products; it is
        not offered for Dask input. Where even one-column slabs of M_(p) exceed
        64 MB, use ``init="svd"`` (a randomized range finder whose test matrices
        are Khatri-Rao products, i.e. MTTKRPs).
        """
        try:
            plans = [self._slab_sums(p) for p in range(len(self.dims))]
        except ValueError as exc:
            raise ValueError(
                f"init='hosvd' with Dask views needs M_(p) M_(p)^T from slabs of M's "
                f"unfoldings, and {exc}; use init='svd' (randomized, out of core "
                "for any number of views)"
            ) from None
        grams = []
        for _, _, slabs in plans:
            grams.append(_tree_sum([delayed(_slab_gram)(S, self.N) for S in slabs]))
        out = []
        for A in dask.compute(*grams):
            out.append((A + A.T) / 2)
        return out

    def mode_gram_cost(self) -> float:
        """Flops of :meth:`mode_grams` (inf where it does not apply)."""
        return float(mode_gram_costs(self.N, self.dims)["unfolding"])

    def residual_sq(self, factors: Sequence[np.ndarray]) -> float | None:
        """||M - [[U_1, ..., U_m]]||^2 summed slab by slab, on the workers."""
        if _unfolding_plan(self.dims) is None:
            return None
        order, J, slabs = self._slab_sums(None)
        r = factors[0].shape[1]
        Uf = delayed(np.asarray(factors[order[0]]), pure=True)
        parts = []
        for j, S in zip(range(0, self.dims[order[1]], J), slabs, strict=True):
            # the slab's columns run over (mode order[1] in j:j+J, order[2], ...),
            # the first slowest, as the Khatri-Rao rows below
            K = factors[order[1]][j : j + J]
            for q in order[2:]:
                K = (K[:, None, :] * factors[q][None, :, :]).reshape(-1, r)
            parts.append(delayed(_slab_residual)(S, self.N, Uf, K))
        return float(sum(dask.compute(*parts)))


def _scale(x, c: float):
    return x * c


class DaskEngine(MomentEngine):
    """A :class:`MomentEngine` whose operator is :class:`DaskMoment`.

    The starts, the race of restarts, the line search and the stopping rule are
    the in-memory engine's; only the passes over the data differ. M is never
    built (``M`` raises), and two views keep the exact SVD route with M = Y_1^T
    Y_2 / N reduced in one pass.
    """

    def __init__(self, views: Sequence[DaskView]):
        super().__init__(views, "dask")  # type: ignore[arg-type]
        self._op: DaskMoment = DaskMoment(self.views)  # type: ignore[assignment,arg-type]

    @property
    def M(self) -> np.ndarray:
        """Never built for Dask input (it is the dense tensor)."""
        raise RuntimeError("the Dask engine does not form the dense tensor M")

    def residual_sq(self, factors: Sequence[np.ndarray]) -> float | None:
        """||M - [[U_1, ..., U_m]]||^2 without cancellation (see MomentEngine)."""
        return self._op.residual_sq(factors)

    def correlations(self, factors: Sequence[np.ndarray]) -> np.ndarray:
        """rho_k of the training data, one pass over the chunks (checked)."""
        rho = self._op.correlations(factors)
        return dask_reads.check_correlations(rho, len(self.views))

    def init_cost(self) -> float:
        """Flops of the exact HOSVD start (slabs of the unfoldings; never N x N)."""
        if self._mode_grams is not None:
            return 0.0
        return self._op.mode_gram_cost()

    def _two_view(self, rank: int):
        """Decompose M = Y_1^T Y_2 / N exactly by its truncated SVD (two views)."""
        M = self._op.cross_moment()
        U, sv, Vt = svd(M)
        norm_sq = float(np.sum(sv**2))
        rest = float(np.sum(sv[rank:] ** 2))
        err = np.sqrt(rest / norm_sq) if norm_sq > 0 else 0.0
        return sv[:rank].copy(), [U[:, :rank], Vt[:rank].T.copy()], [float(err)]


# --------------------------------------------------------------------- entry points


def check_views(views, algorithm: str) -> list:
    """Refuse the engines that build M, then check the views (:func:`as_dask_views`)."""
    if algorithm not in ("auto", "implicit"):
        raise ValueError(
            f"algorithm={algorithm!r} builds the dense moment tensor, which is not "
            "done for Dask views (they may not fit in memory); use algorithm='auto' "
            "or 'implicit' (the tensor-free engine, run as Dask tasks)"
        )
    views = as_dask_views(views)
    dask_reads.warn_small_chunks(views)
    return _ReadViews(views, dask_reads.ChunkReads(len(views), views[0].numblocks[0]))


class _ReadViews(list):
    """The checked Dask views, with the fingerprints of what their passes read.

    The statistics pass records every chunk's fingerprint; the engine checks each
    later pass against it (:mod:`.dask_reads`), so data that change under a fit
    are an error, not a silent number.
    """

    def __init__(self, views, reads: dask_reads.ChunkReads):
        super().__init__(views)
        self.reads = reads


def statistics(views, center: bool):
    """Return the means and covariances, and the check that no view is constant.

    One pass over the chunks (:func:`view_statistics`), for
    :func:`.path.tcca_rank_path`; it records what it read (``views.reads``).
    """
    stats = view_statistics(views, center, getattr(views, "reads", None))

    def check_constant():
        for p, (_, _, constant) in enumerate(stats):
            if constant:
                raise ValueError(
                    f"view {p} is constant over the samples (all rows are equal), so "
                    "the moment tensor is zero and TCCA has no component"
                )

    return [mu for mu, _, _ in stats], [C for _, C, _ in stats], check_constant


def engine(views, means, whiteners, rank: int, algorithm: str) -> DaskEngine:
    """Return the :class:`DaskEngine` of the whitened views.

    ``rank`` and ``algorithm`` have no say: the engine is the tensor-free one.
    Every pass it makes is checked against what the statistics pass read.
    """
    out = DaskEngine(
        [DaskView(X, mu, W) for X, mu, W in zip(views, means, whiteners, strict=True)]
    )
    out._op.reads = getattr(views, "reads", None)
    return out


def transform(estimator, views, per_view: bool = False) -> Any:
    """Z_p = (X_p - mean_p) W_p of Dask views, lazily (Dask arrays)."""
    from sklearn.utils.validation import check_is_fitted

    check_is_fitted(estimator, "projections_")
    if not isinstance(views, (list, tuple)):
        raise ValueError(
            f"views must be a list of arrays, one per view; got {type(views).__name__}"
        )
    d_in = estimator.n_features_in_
    if len(views) != len(d_in):
        raise ValueError(
            f"the estimator was fitted on {len(d_in)} views, got {len(views)}"
        )
    checked = dask_reads.finite_views(as_dask_views(views, min_samples=1))
    for p, (X, d) in enumerate(zip(checked, d_in, strict=True)):
        if X.shape[1] != d:
            raise ValueError(
                f"view {p} has {X.shape[1]} features, but the estimator was "
                f"fitted with {d}"
            )
    Z = [
        (X.astype(np.float64) - mu) @ W
        for X, mu, W in zip(
            checked, estimator.means_, estimator.projections_, strict=True
        )
    ]
    return Z if per_view else da.hstack(Z)

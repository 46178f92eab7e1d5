"""One method on one split: :func:`run_method` and the state its runners share.

Rows are samples throughout. :func:`run_method` checks its arguments, expands the
method's grid (:data:`tcca_core.registry.METHODS`) into grid points, and hands a
:class:`_Run` to the method's runner (:mod:`tcca_core.protocol.runners`), which fits
the DR step, calls the learner (:mod:`tcca_core.protocol.learners`) on each
representation and records the scores. The result is the tidy table of
:mod:`tcca_core.protocol.results`.

Labels never reach the unsupervised step: every DR method is fitted on features only.
The learner sees the labels of the labeled rows, selection the labels of the
validation rows; the test labels are used for nothing but ``test_acc``.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import logging
import math
import tracemalloc
from collections.abc import Sequence
from contextlib import contextmanager
from time import perf_counter
from typing import Any, Protocol

import numpy as np
import pandas as pd
import scipy.sparse as sp

from .._validation import check_positive_int, check_views
from ..kernels import ViewKernel
from ..registry import GAMMA, K_MAX, LEARNERS, METHODS, R_GRID_PAPER, MethodSpec
from .learners import _Context, _Out, make_learner
from .results import DTYPES, RESULT_COLUMNS
from .splits import Split, _check_split, restrict_split

__all__ = ["run_method"]

logger = logging.getLogger(__name__)


class Cache(Protocol):
    """What ``run_method(cache=...)`` needs: a dict or a FitCache."""

    def __getitem__(self, key: Any) -> Any: ...  # noqa: D105

    def __setitem__(self, key: Any, value: Any) -> None: ...  # noqa: D105


#: Learner columns of a row before the learner's own value is filled in.
#: Fit kinds of ``_Run.cached`` that several methods share: CCA (BST) and CCA (AVG)
#: fit the same pairs (KCCA likewise), so their entries are keyed without the method.
_SHARED_KINDS = frozenset({"cca", "kcca"})

_NO_LEARNER = {spec.param: None for spec in LEARNERS.values()}

# ------------------------------------------------------------------- measurement


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
    return {
        "fit_s": float(sum(c["fit_s"] for c in costs)),
        "peak_mb": float(max(c["peak_mb"] for c in costs)),
    }


# ------------------------------------------------------------- run state


def _self_similarity(vk: ViewKernel, X) -> np.ndarray:
    """k(x, x) for every row of X."""
    if vk.kernel in ("chi2", "l2", "rbf"):
        return np.ones(X.shape[0])  # exp(-0) for every distance-based kernel
    if vk.kernel == "linear":
        return (
            np.asarray(X.multiply(X).sum(axis=1)).ravel()
            if sp.issparse(X)
            else (np.einsum("ij,ij->i", X, X))
        )
    return np.array([vk.evaluate(X[[i]], X[[i]])[0, 0] for i in range(X.shape[0])])


def _fingerprint(views) -> str:
    """Return a digest of the views' contents (shapes, dtypes, values).

    The cache key of split-shared fits: each run_method call validates (so may copy)
    its views, and an id() would also be reused by Python once an object is freed.
    """
    h = hashlib.sha1()
    for X in views:
        h.update(repr((type(X).__name__, X.shape, str(X.dtype))).encode())
        parts: tuple
        if sp.issparse(X):
            X = X.tocsr()
            parts = (X.indptr, X.indices, X.data)
        else:
            parts = (X,)
        for a in parts:
            h.update(np.ascontiguousarray(a).view(np.uint8).ravel())  # type: ignore[arg-type]
    return h.hexdigest()


class _Run:
    """Inputs of one run_method call, shared by the per-method runners."""

    def __init__(
        self, views, fit_views, ctx, split, spec, kernel, seed, r_grid, cache=None
    ):
        self.views, self.fit_views, self.ctx = views, fit_views, ctx
        self.cache = cache
        self.digest = None  # of the views, for the cache key; computed on first use
        self.spec, self.seed, self.r_grid = spec, seed, r_grid
        self.N = views[0].shape[0]
        self.fit = split.fit  # None: every row
        self.m = len(views)
        self.kernel = kernel
        self.records: list[dict] = []
        self._kernels = {}
        self.n_fit = (self.N if self.fit is None else self.fit.size) + (
            0 if fit_views is None else fit_views[0].shape[0]
        )

    # -- fits shared across splits
    def cached(self, kind: str, idx, gp: dict, fit, rows=None):
        """``fit()`` once per (kind, views, grid point, fit rows) within a cache.

        A split-independent fit (e.g. SecStr's transductive fit on all rows) is then
        computed once for every split that a fit job loops over; its measured cost
        is reported on each split's rows. ``rows`` (default the split's fit rows)
        are the rows of ``views`` the fit sees. A transductive fit on a subset of
        the rows drawn with the split (``rows`` given, not every row: DSE/SSMVD on
        SecStr's 10K) is never reused, so it skips the cache: storing it only
        filled the disk (35 GB for SecStr's SSMVD embeddings in the full grid).
        """
        if self.cache is None:
            return fit()
        transductive = rows is not None
        if rows is None:
            rows = self.fit
        every = rows is None or np.array_equal(rows, np.arange(self.N))
        if transductive and not every:
            return fit()
        if self.digest is None:
            self.digest = (
                _fingerprint(self.views),
                None if self.fit_views is None else _fingerprint(self.fit_views),
            )
        rows = (
            ("all", self.N)
            if every
            else hashlib.sha1(np.ascontiguousarray(rows).tobytes()).hexdigest()
        )
        key = (
            # the pair fits of CCA/KCCA (BST) and (AVG) are the same fits
            kind if kind in _SHARED_KINDS else self.spec.name,
            kind,
            tuple(idx),
            json.dumps(gp, sort_keys=True, default=str),
            rows,
            self.seed,
            tuple(self.r_grid),
            self.digest,
            json.dumps(self.kernel, default=str),
        )
        try:  # one lookup: a disk cache (FitCache) loads the entry once
            return self.cache[key]
        except KeyError:
            pass
        value = self.cache[key] = fit()
        return value

    # -- data access
    def fit_data(self, idx) -> list:
        """Return views ``idx`` on the fit rows, with fit_views stacked below."""
        out = []
        for p in idx:
            X = self.views[p] if self.fit is None else self.views[p][self.fit]
            if self.fit_views is not None:
                E = self.fit_views[p]
                X = (
                    sp.vstack([X, E], format="csr")
                    if sp.issparse(X) or sp.issparse(E)
                    else np.vstack([X, E])
                )
            out.append(X)
        return out

    def row_data(self, idx) -> list:
        return [self.views[p][self.ctx.rows] for p in idx]

    def kernel_spec(self, p):
        k = self.kernel
        if isinstance(k, (list, tuple)):
            if len(k) != self.m:
                raise ValueError(
                    f"kernel has {len(k)} entries but there are {self.m} views"
                )
            return k[p]
        return k

    def kernels(self, p) -> dict:
        """View p's kernel on the fit rows, against the evaluated rows, and costs.

        lambda (max d) comes from the fit rows, as the paper's kernels are defined
        on all the instances the unsupervised step sees.
        """
        if p in self._kernels:
            return self._kernels[p]
        X, rows, lab = self.views[p], self.ctx.rows, self.ctx.lab
        with _measure() as cost:
            vk = ViewKernel(self.kernel_spec(p))
            if self.fit is None:
                K_fit = vk.fit(X)
                K_rows_fit = K_fit[rows]
                K_rows_lab = K_fit[np.ix_(rows, lab)]
                diag_rows = np.diag(K_fit)[rows]
            else:
                K_fit = vk.fit(X[self.fit])
                K_rows_fit = vk.cross(X[rows])
                # The kernel between any two rows, with the fit rows' scale.
                K_rows_lab = vk.evaluate(X[rows], X[lab])
                diag_rows = _self_similarity(vk, X[rows])
        out = {
            "fit": K_fit,
            "rows_fit": K_rows_fit,
            "rows_lab": K_rows_lab,
            "diag_rows": diag_rows,
            "cost": cost,
        }
        self._kernels[p] = out
        return out

    # -- records
    def add(
        self,
        out: _Out | None,
        *,
        r=None,
        r_max=None,
        dim=None,
        view=None,
        pair=None,
        params=None,
        cost=None,
        shared=False,
    ):
        params = dict(params or {})
        if self.spec.uses_kernels:
            params.setdefault("kernel", self.kernel)
        base = {
            "r": r,
            "r_max": r_max,
            "r_capped": out is None and r is not None,
            "dim": dim,
            "view": view,
            "pair": pair,
            "eps": params.get("eps", math.nan),
            "lambda1": params.get("lambda1", math.nan),
            "lambda2": params.get("lambda2", math.nan),
            "params": json.dumps(params, sort_keys=True, default=str),
            "fit_s": math.nan if cost is None else cost["fit_s"],
            "peak_mb": math.nan if cost is None else cost["peak_mb"],
            "fit_shared": bool(shared),
        }
        if out is None:  # r above the method's limit: recorded, not evaluated
            self.records.append(
                {**base, **_NO_LEARNER, "val_acc": math.nan, "test_acc": math.nan}
            )
            return
        param = self.ctx.param
        for value, va, ta in self.ctx.score(out):
            self.records.append(
                {**base, **_NO_LEARNER, param: value, "val_acc": va, "test_acc": ta}
            )

    def r_values(self, r_max: int | None):
        """(r, capped) over the grid; capped when r exceeds the method's limit."""
        for r in self.r_grid:
            yield r, (r_max is not None and r > r_max)


def _grid_points(spec: MethodSpec, params: dict | None) -> list[dict]:
    """Every grid point of the method: its grid with ``params`` overriding it."""
    grid = {k: tuple(v) for k, v in spec.grid.items()}
    for key, value in (params or {}).items():
        if key not in spec.grid and key not in spec.extra:
            allowed = sorted(set(spec.grid) | set(spec.extra))
            raise ValueError(
                f"method {spec.name!r} has no parameter {key!r}; allowed: {allowed}"
            )
        if isinstance(value, np.ndarray):
            value = value.tolist()
        if isinstance(value, (str, bytes)) or not isinstance(value, Sequence):
            value = (value,)
        if len(value) == 0:
            raise ValueError(f"the grid of {key!r} is empty")
        grid[key] = tuple(value)
    keys = list(grid)
    return [
        dict(zip(keys, vals, strict=True))
        for vals in itertools.product(*(grid[k] for k in keys))
    ]


def _check_r_grid(r_grid) -> list[int]:
    if isinstance(r_grid, (str, bytes)) or not isinstance(
        r_grid, Sequence | np.ndarray
    ):
        raise ValueError(f"r_grid must be a sequence of integers, got {r_grid!r}")
    out = [
        check_positive_int(int(r) if isinstance(r, np.integer) else r, "r")
        for r in r_grid
    ]
    if not out:
        raise ValueError("r_grid is empty")
    if len(set(out)) != len(out):
        raise ValueError(f"r_grid has repeated values: {out}")
    return sorted(out)


def run_method(
    views,
    y,
    split: Split,
    method: str,
    *,
    r_grid: Sequence[int] = R_GRID_PAPER,
    learner: str = "rls",
    params: dict | None = None,
    fit_views=None,
    seed: int = 0,
    kernel="l2",
    k_max: int = K_MAX,
    gamma: float | Sequence[float] = GAMMA,
    cache: Cache | None = None,
    learner_grid: Sequence | None = None,
) -> pd.DataFrame:
    """Run one method on one split over its whole grid; return the tidy results.

    The DR step is fitted on features only (``split.fit`` rows, by default all rows:
    transductive; plus ``fit_views``), once per grid point for nested methods and
    once per (r, grid point) otherwise. For every r and grid point the learner is
    trained on the labeled rows and scored on validation and test.

    Parameters
    ----------
    views : list of m arrays or sparse matrices of shape (N, d_p)
    y : array-like of shape (N,)
        Labels; only those of ``split.labeled`` (training) and ``split.validation``
        (selection) influence anything but ``test_acc``.
    split : Split
        With ``params={"subset": n}`` (DSE, SSMVD only) it is first restricted by
        :func:`restrict_split` to n of its evaluation rows (seeded by the split's
        seed), the paper's 10K-of-84K SecStr setting; ``n_validation``/``n_test``
        then count the subset.
    method : str
        A key of :data:`tcca_core.registry.METHODS`.
    r_grid : sequence of int, default=R_GRID_PAPER
        Ignored by methods without r (BSF, CAT, BSK, AVG). Values above a method's
        limit r_max give a row with ``r_capped=True`` and NaN accuracies.
    learner : {"rls", "knn"}, default="rls"
        A key of :data:`tcca_core.registry.LEARNERS`: RLS with gamma and a penalized
        bias, or kNN for every k in 1..k_max (:mod:`tcca_core.protocol.learners`).
    params : dict, optional
        Overrides of the method's grid (name -> value or sequence of values), e.g.
        ``{"eps": 1e-2}`` for SecStr/Ads, or extra estimator arguments
        (``MethodSpec.extra``).
    fit_views : list of m arrays or sparse matrices, optional
        Extra unlabeled rows for the DR fit (SecStr's 1.3M set), stacked below the
        ``split.fit`` rows of ``views``: pass only the extra rows, not ``views``
        again. Only methods whose statistics accumulate (CCA, CCA-LS, TCCA) accept
        it.
    seed : int, default=0
        ``random_state`` of the randomized methods (TCCA, KTCCA, DSE, SSMVD).
    kernel : str or list of str, default="l2"
        Kernel per view (or one for all) of the kernel methods, as in
        :class:`tcca_core.kernels.ViewKernel` (the paper: ``"chi2"`` for BoW
        histograms, ``"l2"`` otherwise).
    k_max : int, default=10
        kNN's grid is k = 1..k_max.
    gamma : float or sequence of float, default=1e-2
        RLS's grid of gamma.
    cache : dict or tcca_core.fit_cache.FitCache, optional
        Pass the same (initially empty) mapping to the calls for several splits of
        one data set to fit once the DR steps that do not depend on the split (same
        fit rows, views, grid point and seed: e.g. transductive fits on all rows); the
        learner still runs per split. The results are identical to uncached calls;
        the cached fit's time and memory are reported on every split. A dict keeps
        every entry in memory (for DSE/SSMVD that is every representation of the
        grid); a :class:`~tcca_core.fit_cache.FitCache` keeps them in a folder and
        shares them between processes.
    learner_grid : sequence, optional
        The values of the learner's own parameter to evaluate (kNN's k, RLS's
        gamma); overrides ``k_max``/``gamma``. Default: the registry's grid.

    Returns
    -------
    pandas.DataFrame
        Columns :data:`RESULT_COLUMNS`, one row per (method, split, r, parameters),
        the learner's value (``k`` or ``gamma``) included. ``r``/``r_max`` are NA
        for methods without r; ``dim`` is the feature dimension given to the
        learner (2r for CCA, m r for CCA-LS/TCCA, r for DSE/SSMVD, d_p for BSF,
        sum d_p for CAT, NA for kernel-only BSK/AVG); ``pair`` is "p-q" (BST) or
        "all" (AVG); ``params`` is the JSON of the DR parameters;
        ``fit_s``/``peak_mb`` are the time (s) and tracemalloc peak (MiB) of
        producing the representation (fit and transform, kernels included); for
        nested methods (``fit_shared``) that one fit serves every r and its cost is
        repeated on each row; for CCA/KCCA (AVG) it is the sum over pairs (peak: the
        max). ``n_fit`` is the number of rows the DR step saw.
    """
    if method not in METHODS:
        raise ValueError(f"unknown method {method!r}; choose one of {list(METHODS)}")
    spec = METHODS[method]
    k_max = check_positive_int(k_max, "k_max")
    model = make_learner(learner, learner_grid, k_max=k_max, gamma=gamma)
    views = check_views(views)
    N = views[0].shape[0]
    y = np.asarray(y)
    if y.ndim != 1 or y.shape[0] != N:
        raise ValueError(f"y must have shape ({N},) to match the views, got {y.shape}")
    split = _check_split(split, N)
    params = dict(params or {})
    subset = params.pop("subset", None)
    if subset is not None:
        if not spec.transductive:
            raise ValueError(
                f"'subset' is an option of the transductive methods (DSE, SSMVD), "
                f"not of {method!r}"
            )
        # The paper's DSE/SSMVD on 10K of SecStr's 84K (baselines.md section 6).
        split = restrict_split(split, check_positive_int(subset, "subset"))
    r_grid = _check_r_grid(r_grid) if spec.has_r else []
    if fit_views is not None:
        if not spec.accepts_fit_views:
            raise ValueError(
                f"method {method!r} cannot use extra unlabeled data (fit_views); "
                "only CCA, CCA-LS and TCCA accumulate statistics over it"
            )
        fit_views = check_views(
            fit_views, min_samples=1, n_features=[X.shape[1] for X in views]
        )
    if spec.uses_kernels:
        kernels = kernel if isinstance(kernel, (list, tuple)) else [kernel]
        if "precomputed" in kernels:
            raise ValueError(
                "run_method computes the kernels itself (lambda = max d over the fit "
                "rows); pass feature views and a kernel name, not 'precomputed'"
            )
        if isinstance(kernel, (list, tuple)) and len(kernel) != len(views):
            raise ValueError(
                f"kernel has {len(kernel)} entries but there are {len(views)} views"
            )
    points = _grid_points(spec, params)
    if subset is not None:
        points = [{**gp, "subset": subset} for gp in points]
    ctx = _Context(y, split, model)
    run = _Run(views, fit_views, ctx, split, spec, kernel, seed, r_grid, cache)
    logger.info(
        "%s: split %d, %d grid points, %d values of r, learner %s",
        method,
        split.index,
        len(points),
        len(r_grid),
        learner,
    )
    spec.load_runner()(run, points)
    df = pd.DataFrame.from_records(run.records)
    df["method"] = method
    df["learner"] = learner
    df["split"] = split.index
    df["seed"] = split.seed
    df["n_labeled"] = split.labeled.size
    df["n_validation"] = split.validation.size
    df["n_test"] = split.test.size
    df["n_fit"] = run.n_fit
    df = df[list(RESULT_COLUMNS)]
    return df.astype(DTYPES)

"""One method on one split: :func:`run_method`, the one caller of the runners.

Rows are samples throughout. A method is a plug-in: its runner
(:mod:`tcca_core.protocol.runners`) yields :class:`~tcca_core.protocol.plugin.Fit`
units from the call's :class:`~tcca_core.protocol.plugin.Inputs`, the contract of
:mod:`tcca_core.protocol.plugin`. :func:`run_method` alone does everything else: it
checks its arguments, expands the method's grid (:data:`tcca_core.registry.METHODS`),
caches and measures (:mod:`tcca_core.protocol.measure`) each fit, caps r at the fit's
r_max, trains the learner (:mod:`tcca_core.protocol.learners`) on each
representation, scores it and records the tidy table of
:mod:`tcca_core.protocol.results`. ``Fit``, ``Inputs`` and ``Rep`` stay importable
from here, where runners written before the split import them.

Labels never reach the unsupervised step: every DR method is fitted on features only.
The learner sees the labels of the labeled rows, selection the labels of the
validation rows; the test labels are used for nothing but ``test_acc``.
"""

from __future__ import annotations

import hashlib
import json
import logging
import math
from collections.abc import Sequence
from typing import Any, Protocol

import numpy as np
import pandas as pd
import scipy.sparse as sp

from .._validation import check_positive_int, check_views
from ..registry import LEARNERS, METHODS, R_GRID_PAPER, MethodSpec
from .learners import _Context, _Out, make_learner
from .measure import _add_costs, _measure
from .plugin import Fit, Inputs, Rep, _as_rep
from .results import DTYPES, RESULT_COLUMNS
from .splits import Split, _check_split, restrict_split

__all__ = ["Fit", "Inputs", "Rep", "run_method"]

logger = logging.getLogger(__name__)


class Cache(Protocol):
    """What ``run_method(cache=...)`` needs: a dict or a FitCache."""

    def __getitem__(self, key: Any) -> Any: ...  # noqa: D105

    def __setitem__(self, key: Any, value: Any) -> None: ...  # noqa: D105


#: Learner columns of a row before the learner's own value is filled in.
_NO_LEARNER = {spec.param: None for spec in LEARNERS.values()}


# ------------------------------------------------------------- caching


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


# ------------------------------------------------------------- run state


class _Run:
    """One run_method call: caches, measures, caps r, scores and records each Fit."""

    def __init__(self, inputs: Inputs, ctx, spec: MethodSpec, cache=None):
        self.inputs, self.ctx, self.spec, self.cache = inputs, ctx, spec, cache
        self.digest: tuple | None = None  # of the views, for the cache key
        self.records: list[dict] = []
        self._last: tuple = (None, None, None)  # (key, rows, value): the last fit

    def cached(self, kind: str, idx, gp, fit, rows=None):
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
        inp = self.inputs
        transductive = rows is not None
        if rows is None:
            rows = inp.fit
        every = rows is None or np.array_equal(rows, np.arange(inp.N))
        if transductive and not every:
            return fit()
        if self.digest is None:
            self.digest = (
                _fingerprint(inp.views),
                None if inp.fit_views is None else _fingerprint(inp.fit_views),
            )
        rows = (
            ("all", inp.N)
            if every
            else hashlib.sha1(np.ascontiguousarray(rows).tobytes()).hexdigest()
        )
        key = (
            kind,
            tuple(idx),
            json.dumps(gp, sort_keys=True, default=str),
            rows,
            inp.seed,
            tuple(inp.r_grid),
            self.digest,
            json.dumps(inp.kernel, default=str),
        )
        try:  # one lookup: a disk cache (FitCache) loads the entry once
            return self.cache[key]
        except KeyError:
            pass
        value = self.cache[key] = fit()
        return value

    def _fitted(self, f: Fit):
        """(fitted, cost) of ``f.fit()``: measured, and cached under ``f.key``."""

        def fit():
            assert f.fit is not None
            with _measure() as cost:
                fitted = f.fit()
            return fitted, cost

        if f.key is None:
            return fit()
        last_key, last_rows, last = self._last
        if last_key == f.key and last_rows is f.rows:  # one fit, several units
            return last
        kind, idx, gp = f.key
        value = self.cached(kind, idx, gp, fit, rows=f.rows)
        self._last = (f.key, f.rows, value)
        return value

    def _realize(self, f: Fit):
        """(representation at r, r_max, cost) of one Fit: fitted and embedded."""
        if f.parts:
            subs = [self._realize(p) for p in f.parts]
            r_max = min((s[1] for s in subs if s[1] is not None), default=None)

            def combined(r):
                return Rep(parts=tuple(_as_rep(s[0](r)) for s in subs))

            return combined, r_max, _add_costs(*(s[2] for s in subs))
        fitted, fit_cost = self._fitted(f)
        with _measure() as cost:
            at = (lambda r: fitted) if f.embed is None else f.embed(fitted)
        r_max = f.r_max(fitted) if callable(f.r_max) else f.r_max
        return at, r_max, _add_costs(fit_cost, cost, *f.costs)

    def _outputs(self, rep: Rep) -> _Out:
        if rep.parts:
            return self.ctx.aggregate([self._outputs(p) for p in rep.parts])
        if rep.K is not None:
            return self.ctx.kernel_outputs(rep.K, rep.diag)
        return self.ctx.outputs(rep.Z)

    def evaluate(self, f: Fit) -> None:
        """Record the rows of one Fit: per r (capped above r_max), per learner value."""
        grid = [f.r] if f.r is not None else (self.inputs.r_grid or [None])
        known = None if callable(f.r_max) else f.r_max
        if known is not None and all(r is not None and r > known for r in grid):
            for r in grid:  # nothing to fit: every r is above the limit
                self.add(None, f, r=r, r_max=known)
            return
        at, r_max, cost = self._realize(f)
        for r in grid:
            if r is not None and r_max is not None and r > r_max:
                self.add(None, f, r=r, r_max=r_max)
                continue
            rep = _as_rep(at(r))
            if rep.fit_s is not None:
                shared = sum(c["fit_s"] for c in f.costs)  # the kernels, say
                cost = {**cost, "fit_s": float(rep.fit_s + shared)}
            self.add(self._outputs(rep), f, r=r, r_max=r_max, dim=rep.dim, cost=cost)

    def add(self, out: _Out | None, f: Fit, *, r=None, r_max=None, dim=None, cost=None):
        """Record ``out`` (None: r above the method's limit, not evaluated)."""
        params = dict(f.params)
        if self.spec.uses_kernels:
            params.setdefault("kernel", self.inputs.kernel)
        base = {
            "r": r,
            "r_max": r_max,
            "r_capped": out is None and r is not None,
            "dim": dim,
            "view": f.view,
            "pair": f.pair,
            "eps": params.get("eps", math.nan),
            "lambda1": params.get("lambda1", math.nan),
            "lambda2": params.get("lambda2", math.nan),
            "params": json.dumps(params, sort_keys=True, default=str),
            "fit_s": math.nan if cost is None else cost["fit_s"],
            "peak_mb": math.nan if cost is None else cost["peak_mb"],
            "fit_shared": out is not None and f.shared,
            "n_fit": self.inputs.n_fit if f.rows is None else len(f.rows),
        }
        if out is None:
            self.records.append(
                {**base, **_NO_LEARNER, "val_acc": math.nan, "test_acc": math.nan}
            )
            return
        param = self.ctx.param
        for value, va, ta in self.ctx.score(out):
            self.records.append(
                {**base, **_NO_LEARNER, param: value, "val_acc": va, "test_acc": ta}
            )


def _grid_points(spec: MethodSpec, params: dict | None) -> list[dict]:
    """Every grid point of the method (:meth:`MethodSpec.grid_points`).

    Arrays of values are read as lists (the registry's expansion knows no numpy).
    """
    return spec.grid_points(
        {
            key: value.tolist() if isinstance(value, np.ndarray) else value
            for key, value in (params or {}).items()
        }
    )


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
    k_max: int | None = None,
    gamma: float | Sequence[float] | None = None,
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
        bias, or kNN (:mod:`tcca_core.protocol.learners`), each evaluated over its
        registry grid (``LearnerSpec.grid``) unless ``learner_grid`` (or its old
        keyword) is given.
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
    k_max : int, optional
        kNN's grid is k = 1..k_max (default: the registry's grid).
    gamma : float or sequence of float, optional
        RLS's grid of gamma (default: the registry's grid).
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
        gamma); overrides ``k_max``/``gamma``. Default: the registry's grid, the
        one place a learner's default grid lives.

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
    legacy: dict[str, Any] = {}
    if k_max is not None:
        legacy["k_max"] = check_positive_int(k_max, "k_max")
    if gamma is not None:
        legacy["gamma"] = gamma
    model = make_learner(learner, learner_grid, **legacy)
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
    inputs = Inputs(
        method, views, fit_views, split, ctx.rows, ctx.n_l, kernel, seed, r_grid
    )
    run = _Run(inputs, ctx, spec, cache)
    logger.info(
        "%s: split %d, %d grid points, %d values of r, learner %s",
        method,
        split.index,
        len(points),
        len(r_grid),
        learner,
    )
    for unit in spec.load_runner()(inputs, points):
        run.evaluate(unit)
    df = pd.DataFrame.from_records(run.records)
    df["method"] = method
    df["learner"] = learner
    df["split"] = split.index
    df["seed"] = split.seed
    df["n_labeled"] = split.labeled.size
    df["n_validation"] = split.validation.size
    df["n_test"] = split.test.size
    df = df[list(RESULT_COLUMNS)]
    return df.astype(DTYPES)

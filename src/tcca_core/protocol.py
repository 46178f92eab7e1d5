"""Evaluation protocol of Luo et al. (TKDE 2015, section 5), shared by every method.

Rows are samples throughout. The pipeline calls three functions:

- :func:`make_splits` draws the labeled sets (five random draws from a seed) and
  splits the rest of the evaluation pool into validation (20%) and test (80%).
- :func:`run_method` fits one dimension-reduction method (or a baseline without one),
  sweeps r and every parameter of the method's grid, trains the learner (RLS or kNN)
  on the labeled rows only and scores validation and test. It returns a tidy table,
  one row per (method, split, r, parameters), with the DR fit's time and peak memory.
- :func:`select` reduces such tables to the paper's "accuracy at the best dimension"
  under both readings (baselines.md section 1): (A) validation-selected parameters
  per split, mean +- std over splits; (B) per r the validation-selected parameters,
  mean over splits, then the best r.

Labels never reach the unsupervised step: every DR method is fitted on features only.
The learner sees the labels of the labeled rows, selection the labels of the
validation rows; the test labels are used for nothing but ``test_acc``.

The registry :data:`METHODS` lists the methods ("bsf", "cat", "cca_bst", "cca_avg",
"cca_ls", "dse", "ssmvd", "tcca", "tcca_nc" (TCCA on the uncentered views, an
investigation) and, for kernels, "bsk", "avg", "kcca_bst",
"kcca_avg", "ktcca") with their default parameter grids.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import logging
import math
import tracemalloc
from collections.abc import Callable, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from numbers import Integral
from time import perf_counter

import numpy as np
import pandas as pd
import scipy.sparse as sp

from ._validation import check_positive_int, check_views
from .baselines._cca import CCA, KCCA, view_pairs
from .baselines._cca_ls import CCALS
from .baselines._single import concatenate_views, l2_normalize_rows, normalize_kernel
from .kernels import ViewKernel
from .learners import RLS, KernelRLS, euclidean_knn, kernel_knn

__all__ = [
    "R_GRID_PAPER",
    "EPS_GRID_LINEAR",
    "EPS_GRID_KERNEL",
    "LAMBDA_GRID",
    "K_MAX",
    "GAMMA",
    "RESULT_COLUMNS",
    "Split",
    "MethodSpec",
    "METHODS",
    "make_splits",
    "splits_from_labeled",
    "restrict_split",
    "run_method",
    "select",
    "select_per_split",
    "accuracy_by_r",
]

logger = logging.getLogger(__name__)

#: r grid of the paper's SecStr figure: 5, 10, ..., 100, 110, ..., 200, 220, ..., 300.
R_GRID_PAPER = (
    list(range(5, 101, 5)) + list(range(110, 201, 10)) + list(range(220, 301, 20))
)
#: eps of CCA, CCA-LS and TCCA on NUS-WIDE: 1e-5, ..., 1e4 (SecStr and Ads: 1e-2).
EPS_GRID_LINEAR = tuple(10.0**i for i in range(-5, 5))
#: eps of KCCA and KTCCA: 1e-7, ..., 1e2.
EPS_GRID_KERNEL = tuple(10.0**i for i in range(-7, 3))
#: lambda_1 and lambda_2 of SSMVD (baselines.md section 7, our decision).
LAMBDA_GRID = (0.0, 1e-3, 1e-2, 1e-1, 1.0)
#: kNN's k is chosen in 1..K_MAX on validation.
K_MAX = 10
#: RLS's gamma (Foster et al. 2008).
GAMMA = 1e-2

#: Columns of :func:`run_method`'s table, in order.
RESULT_COLUMNS = (
    "method",
    "learner",
    "split",
    "seed",
    "r",
    "r_max",
    "r_capped",
    "dim",
    "view",
    "pair",
    "eps",
    "lambda1",
    "lambda2",
    "k",
    "params",
    "val_acc",
    "test_acc",
    "n_labeled",
    "n_validation",
    "n_test",
    "n_fit",
    "fit_s",
    "peak_mb",
    "fit_shared",
)
_DTYPES = {
    "split": "Int64",
    "seed": "Int64",
    "r": "Int64",
    "r_max": "Int64",
    "r_capped": bool,
    "dim": "Int64",
    "view": "Int64",
    "eps": float,
    "lambda1": float,
    "lambda2": float,
    "k": "Int64",
    "val_acc": float,
    "test_acc": float,
    "n_labeled": "Int64",
    "n_validation": "Int64",
    "n_test": "Int64",
    "n_fit": "Int64",
    "fit_s": float,
    "peak_mb": float,
    "fit_shared": bool,
}


# --------------------------------------------------------------------------- splits


@dataclass(frozen=True, eq=False)
class Split:
    """One labeled/validation/test split (sorted, disjoint integer row indices).

    Attributes
    ----------
    labeled, validation, test : ndarray of int
    seed : int or None
        Seed the split was drawn from (None when unknown, e.g. a split rebuilt from
        its index arrays only).
    index : int
        Position of the split in its series (0..n_splits-1).
    fit : ndarray of int or None
        Rows the unsupervised (DR) step may use. ``None`` means every row of the
        views (transductive: labeled, validation, test and any other row).
    """

    labeled: np.ndarray
    validation: np.ndarray
    test: np.ndarray
    seed: int | None = None
    index: int = 0
    fit: np.ndarray | None = None

    def fit_rows(self, n_samples: int) -> np.ndarray:
        """The rows the DR step is fitted on."""
        return np.arange(n_samples) if self.fit is None else self.fit

    def to_dict(self) -> dict:
        """Plain lists and ints (JSON-serializable), e.g. to pass between jobs."""
        return {
            "labeled": self.labeled.tolist(),
            "validation": self.validation.tolist(),
            "test": self.test.tolist(),
            "seed": None if self.seed is None else int(self.seed),
            "index": int(self.index),
            "fit": None if self.fit is None else self.fit.tolist(),
        }

    @classmethod
    def from_dict(cls, d: dict) -> Split:
        """Inverse of :meth:`to_dict`."""
        fit = d.get("fit")
        return cls(
            np.asarray(d["labeled"], dtype=np.intp),
            np.asarray(d["validation"], dtype=np.intp),
            np.asarray(d["test"], dtype=np.intp),
            None if d.get("seed") is None else int(d["seed"]),
            int(d.get("index", 0)),
            None if fit is None else np.asarray(fit, dtype=np.intp),
        )


def _as_index(a, name: str, n: int | None = None) -> np.ndarray:
    a = np.asarray(a)
    if a.ndim != 1 or (a.size and not np.issubdtype(a.dtype, np.integer)):
        raise ValueError(f"{name} must be a 1-D array of integer row indices")
    a = np.sort(a.astype(np.intp))
    if a.size and np.any(np.diff(a) == 0):
        raise ValueError(f"{name} contains repeated rows")
    if n is not None and a.size and (a[0] < 0 or a[-1] >= n):
        raise ValueError(f"{name} has row indices outside 0..{n - 1}")
    return a


def _check_split(split: Split, n: int) -> Split:
    if not isinstance(split, Split):
        raise ValueError(f"split must be a tcca_core.protocol.Split, got {type(split)}")
    lab = _as_index(split.labeled, "split.labeled", n)
    val = _as_index(split.validation, "split.validation", n)
    test = _as_index(split.test, "split.test", n)
    for a, b, what in (
        (lab, val, "labeled/validation"),
        (lab, test, "labeled/test"),
        (val, test, "validation/test"),
    ):
        if np.intersect1d(a, b).size:
            raise ValueError(f"the split's {what} rows overlap")
    if lab.size == 0 or val.size == 0 or test.size == 0:
        raise ValueError(
            "the split needs labeled, validation and test rows, got sizes "
            f"{lab.size}, {val.size}, {test.size}"
        )
    fit = None if split.fit is None else _as_index(split.fit, "split.fit", n)
    return Split(lab, val, test, split.seed, split.index, fit)


def _fit_rows_for(
    fit_on: str, n: int, pool: np.ndarray | None, val: np.ndarray
) -> np.ndarray | None:
    if fit_on == "all":
        return None
    if fit_on == "pool":
        if pool is None:
            raise ValueError("fit_on='pool' needs a pool")
        return pool
    if fit_on == "exclude_validation":
        return np.setdiff1d(np.arange(n), val)
    raise ValueError(
        f"fit_on must be 'all', 'pool' or 'exclude_validation', got {fit_on!r}"
    )


def _draw_validation(rng, eval_pool: np.ndarray, val_fraction: float):
    n_val = int(round(val_fraction * eval_pool.size))
    if n_val < 1 or n_val >= eval_pool.size:
        raise ValueError(
            f"val_fraction={val_fraction} of an evaluation pool of {eval_pool.size} "
            "rows leaves no validation or no test rows"
        )
    val = np.sort(rng.choice(eval_pool, size=n_val, replace=False))
    return val, np.setdiff1d(eval_pool, val)


def _draw_labeled(rng, y, candidates, classes, n_labeled, per_class, max_tries=1000):
    if per_class is not None:
        picks = []
        for c in classes:
            members = candidates[y[candidates] == c]
            if members.size < per_class:
                raise ValueError(
                    f"class {c!r} has {members.size} candidate rows, fewer than "
                    f"per_class={per_class}"
                )
            picks.append(rng.choice(members, size=per_class, replace=False))
        return np.sort(np.concatenate(picks))
    if n_labeled >= candidates.size:
        raise ValueError(
            f"n_labeled={n_labeled} leaves no unlabeled rows among {candidates.size}"
        )
    if n_labeled < classes.size:
        raise ValueError(
            f"n_labeled={n_labeled} cannot cover the {classes.size} classes"
        )
    # A uniform draw conditioned on every class being labeled at least once
    # (rejection): one-vs-rest RLS needs both signs of every target.
    for _ in range(max_tries):
        lab = rng.choice(candidates, size=n_labeled, replace=False)
        if np.unique(y[lab]).size == classes.size:
            return np.sort(lab)
    raise ValueError(
        f"{max_tries} draws of {n_labeled} labeled rows all missed a class; "
        "use per_class or a larger n_labeled"
    )


def make_splits(
    y,
    *,
    n_labeled: int | None = None,
    per_class: int | None = None,
    n_splits: int = 5,
    seed: int = 0,
    val_fraction: float = 0.2,
    pool=None,
    fit_on: str = "all",
) -> list[Split]:
    """Draw the paper's random labeled sets and validation/test splits.

    Split i uses the seed ``seed + i`` (so seeds 0..4 by default, shared by all
    methods) and ``numpy.random.default_rng(seed + i)``; the same arguments give the
    same splits.

    Parameters
    ----------
    y : array-like of shape (N,)
        Labels of all rows. Only used to find the classes of the candidate rows
        (``per_class`` and the class-coverage check of ``n_labeled``).
    n_labeled : int, optional
        Draw this many labeled rows uniformly at random from the candidates,
        conditioned on every class appearing at least once (redrawn until it does;
        the first draw almost always does, e.g. SecStr, Ads with 100 labeled).
    per_class : int, optional
        Draw this many labeled rows of every class instead (NUS-WIDE: 4, 6, 8 per
        concept). Exactly one of ``n_labeled`` and ``per_class`` is given.
    n_splits : int, default=5
    seed : int, default=0
    val_fraction : float, default=0.2
        Share of the evaluation pool used for validation; the rest is test.
    pool : array-like of int, optional
        Rows the labeled set is drawn from (NUS-WIDE: its training set). The
        evaluation pool (validation + test) is then the complement of ``pool``, as in
        the paper ("twenty percent of the test data are used for validation").
        Without ``pool`` labeled rows come from all rows and the evaluation pool is
        every unlabeled row (the transductive setting of SecStr and Ads).
    fit_on : {"all", "pool", "exclude_validation"}, default="all"
        Rows the DR step may use (``Split.fit``): every row (transductive), only
        ``pool`` (inductive, NUS-WIDE: "all the training instances are utilized as
        unlabeled samples"), or every row but the validation rows (Ads: "all the
        instances except those for validation are utilized as unlabeled samples").
        Methods without an out-of-sample map (DSE, SSMVD) always also embed the rows
        they are evaluated on; ``run_method`` records ``n_fit``.

    Returns
    -------
    list of Split
    """
    y = np.asarray(y)
    if y.ndim != 1:
        raise ValueError(f"y must be 1-D, got shape {y.shape}")
    N = y.shape[0]
    if (n_labeled is None) == (per_class is None):
        raise ValueError("give exactly one of n_labeled and per_class")
    if n_labeled is not None:
        n_labeled = check_positive_int(n_labeled, "n_labeled")
    if per_class is not None:
        per_class = check_positive_int(per_class, "per_class")
    n_splits = check_positive_int(n_splits, "n_splits")
    if not isinstance(seed, Integral) or isinstance(seed, bool) or seed < 0:
        raise ValueError(f"seed must be an integer >= 0, got {seed!r}")
    if not 0 < val_fraction < 1:
        raise ValueError(f"val_fraction must be in (0, 1), got {val_fraction!r}")
    pool = None if pool is None else _as_index(pool, "pool", N)
    candidates = np.arange(N) if pool is None else pool
    classes = np.unique(y[candidates])
    if classes.size < 2:
        raise ValueError(f"the candidate rows hold {classes.size} class; need >= 2")
    splits = []
    for i in range(n_splits):
        rng = np.random.default_rng(seed + i)
        lab = _draw_labeled(rng, y, candidates, classes, n_labeled, per_class)
        eval_pool = (
            np.setdiff1d(np.arange(N), lab)
            if pool is None
            else np.setdiff1d(np.arange(N), pool)
        )
        val, test = _draw_validation(rng, eval_pool, val_fraction)
        fit = _fit_rows_for(fit_on, N, pool, val)
        splits.append(Split(lab, val, test, seed + i, i, fit))
    return splits


def splits_from_labeled(
    y,
    labeled_sets: Sequence,
    *,
    seed: int = 0,
    val_fraction: float = 0.2,
    pool=None,
    fit_on: str = "all",
) -> list[Split]:
    """Splits from given labeled sets (e.g. the SSL book's official SecStr splits).

    Validation and test are drawn as in :func:`make_splits`, split i with
    ``default_rng(seed + i)``.
    """
    y = np.asarray(y)
    N = y.shape[0]
    pool = None if pool is None else _as_index(pool, "pool", N)
    out = []
    for i, lab in enumerate(labeled_sets):
        lab = _as_index(lab, f"labeled_sets[{i}]", N)
        if pool is not None and np.setdiff1d(lab, pool).size:
            raise ValueError(f"labeled_sets[{i}] has rows outside the pool")
        rng = np.random.default_rng(seed + i)
        eval_pool = np.setdiff1d(np.arange(N), lab if pool is None else pool)
        val, test = _draw_validation(rng, eval_pool, val_fraction)
        out.append(
            Split(lab, val, test, seed + i, i, _fit_rows_for(fit_on, N, pool, val))
        )
    return out


def restrict_split(split: Split, n_eval: int, *, seed: int | None = None) -> Split:
    """The split restricted to a random subset of ``n_eval`` evaluation rows.

    For DSE/SSMVD on SecStr (baselines.md section 6): a random ``n_eval``-row subset
    of validation + test keeps each row's role (so validation stays ~20% of it) and
    the DR step is fitted on the labeled rows plus that subset. Report such numbers
    as "subset". ``seed`` defaults to the split's seed (its index if that is None).
    """
    n_eval = check_positive_int(n_eval, "n_eval")
    evals = np.concatenate([split.validation, split.test])
    if n_eval >= evals.size:
        return split
    if seed is None:
        seed = split.index if split.seed is None else split.seed
    rng = np.random.default_rng(seed)
    keep = np.sort(rng.choice(evals, size=n_eval, replace=False))
    val = np.intersect1d(split.validation, keep)
    test = np.intersect1d(split.test, keep)
    fit = np.union1d(split.labeled, keep)
    return Split(split.labeled, val, test, split.seed, split.index, fit)


# ------------------------------------------------------------------------- registry


@dataclass(frozen=True)
class MethodSpec:
    """One method of the registry.

    Attributes
    ----------
    name : str
        Registry key, e.g. ``"cca_bst"``.
    label : str
        The paper's name, e.g. ``"CCA (BST)"``.
    family : {"linear", "kernel"}
    grid : dict
        Default grid: parameter name -> tuple of candidate values, all chosen on
        validation (with r, the view/pair and k). ``params`` of :func:`run_method`
        overrides entries (SecStr/Ads: ``{"eps": 1e-2}``).
    extra : tuple of str
        Further keyword arguments of the estimator that ``params`` may set.
    has_r : bool
        Whether the method has a dimension r.
    nested : bool
        Whether the solution for r is the first r columns of the one for r_max (one
        fit per grid point serves every r; ``fit_shared`` is then True).
    transductive : bool
        No out-of-sample map: the method embeds every row it is evaluated on.
    uses_kernels : bool
    accepts_fit_views : bool
        Whether extra unlabeled data (``fit_views``) can enter its statistics.
    per : str or None
        ``"view"`` or ``"pair"`` when that is a validation-selected parameter.
    """

    name: str
    label: str
    family: str
    grid: dict
    extra: tuple = ()
    has_r: bool = True
    nested: bool = False
    transductive: bool = False
    uses_kernels: bool = False
    accepts_fit_views: bool = False
    per: str | None = None
    runner: Callable = field(default=None, repr=False, compare=False)


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


# ------------------------------------------------------------------ learner layer


@dataclass
class _Out:
    """Learner output on the evaluation rows (validation, then test)."""

    labels: np.ndarray  # (K, n_eval): K = 1 for RLS, k_max for kNN
    ks: list  # [None] for RLS, [1..k_max] for kNN
    scores: np.ndarray | None = None  # RLS (n_eval, C); binary as [-s, s]
    votes: np.ndarray | None = None  # kNN (K, n_eval, C) vote fractions


class _Context:
    """Labels and rows of one split; the only place that reads y."""

    def __init__(self, y, split: Split, learner: str, k_max: int, gamma: float):
        self.learner, self.gamma = learner, gamma
        self.lab, self.val, self.test = split.labeled, split.validation, split.test
        # The rows every representation is computed on: labeled, validation, test.
        self.rows = np.concatenate([self.lab, self.val, self.test])
        self.n_l, self.n_v = self.lab.size, self.val.size
        self.y_lab = y[self.lab]
        self.y_val = y[self.val]
        self._y_test = y[self.test]  # read by score() only
        self.classes = np.unique(self.y_lab)
        if self.classes.size < 2:
            raise ValueError(
                f"the labeled rows hold {self.classes.size} class; need >= 2"
            )
        self.k_max = min(k_max, self.n_l)

    def _rls_scores(self, S: np.ndarray) -> np.ndarray:
        return np.column_stack([-S, S]) if S.ndim == 1 else S

    def outputs(self, Z) -> _Out:
        """Train on the labeled rows of Z (rows ordered as self.rows), predict."""
        Z_lab, Z_ev = Z[: self.n_l], Z[self.n_l :]
        if self.learner == "rls":
            S = self._rls_scores(
                RLS(self.gamma).fit(Z_lab, self.y_lab).decision_function(Z_ev)
            )
            return _Out(self.classes[np.argmax(S, axis=1)][None, :], [None], scores=S)
        res = euclidean_knn(Z_lab, self.y_lab, Z_ev, self.k_max)
        return _Out(res.labels, list(res.k_values), votes=res.votes)

    def kernel_outputs(self, K_rows_lab: np.ndarray, diag_rows: np.ndarray) -> _Out:
        """Same from the kernel between self.rows and the labeled rows."""
        K_ll, K_el = K_rows_lab[: self.n_l], K_rows_lab[self.n_l :]
        if self.learner == "rls":
            S = self._rls_scores(
                KernelRLS(self.gamma).fit(K_ll, self.y_lab).decision_function(K_el)
            )
            return _Out(self.classes[np.argmax(S, axis=1)][None, :], [None], scores=S)
        res = kernel_knn(
            K_el,
            self.y_lab,
            self.k_max,
            diag_query=diag_rows[self.n_l :],
            diag_ref=diag_rows[: self.n_l],
        )
        return _Out(res.labels, list(res.k_values), votes=res.votes)

    def aggregate(self, outs: list[_Out]) -> _Out:
        """CCA (AVG): mean RLS scores; kNN majority vote over the pair models.

        A kNN vote tie goes to the largest summed vote fraction, then to the lowest
        class index (baselines.md section 1).
        """
        if self.learner == "rls":
            S = np.mean([o.scores for o in outs], axis=0)
            return _Out(self.classes[np.argmax(S, axis=1)][None, :], [None], scores=S)
        C = self.classes.size
        codes = np.stack([np.searchsorted(self.classes, o.labels) for o in outs])
        counts = (codes[..., None] == np.arange(C)).sum(axis=0)  # (K, n, C)
        frac = np.sum([o.votes for o in outs], axis=0)
        key = np.where(counts == counts.max(axis=2, keepdims=True), frac, -np.inf)
        labels = self.classes[np.argmax(key, axis=2)]
        return _Out(labels, outs[0].ks, votes=frac / len(outs))

    def score(self, out: _Out) -> list[tuple]:
        """(k, val_acc, test_acc) for each k of the output."""
        pv, pt = out.labels[:, : self.n_v], out.labels[:, self.n_v :]
        va = (pv == self.y_val).mean(axis=1)
        ta = (pt == self._y_test).mean(axis=1)
        return [(k, float(a), float(b)) for k, a, b in zip(out.ks, va, ta, strict=True)]


# ------------------------------------------------------------------ DR runners


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
    return np.array([vk._eval(X[[i]], X[[i]])[0, 0] for i in range(X.shape[0])])


def _fingerprint(views) -> str:
    """A digest of the views' contents (shapes, dtypes, values).

    The cache key of split-shared fits: each run_method call validates (so may copy)
    its views, and an id() would also be reused by Python once an object is freed.
    """
    h = hashlib.sha1()
    for X in views:
        h.update(repr((type(X).__name__, X.shape, str(X.dtype))).encode())
        if sp.issparse(X):
            X = X.tocsr()
            parts = (X.indptr, X.indices, X.data)
        else:
            parts = (X,)
        for a in parts:
            h.update(np.ascontiguousarray(a).view(np.uint8).ravel())
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
        are the rows of ``views`` the fit sees.
        """
        if self.cache is None:
            return fit()
        if self.digest is None:
            self.digest = (
                _fingerprint(self.views),
                None if self.fit_views is None else _fingerprint(self.fit_views),
            )
        if rows is None:
            rows = self.fit
        every = rows is None or np.array_equal(rows, np.arange(self.N))
        rows = (
            ("all", self.N)
            if every
            else hashlib.sha1(np.ascontiguousarray(rows).tobytes()).hexdigest()
        )
        key = (
            self.spec.name,
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
        """Views ``idx`` restricted to the fit rows, with fit_views stacked below."""
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
                K_rows_lab = vk._eval(X[rows], X[lab])
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
                {**base, "k": None, "val_acc": math.nan, "test_acc": math.nan}
            )
            return
        for k, va, ta in self.ctx.score(out):
            self.records.append({**base, "k": k, "val_acc": va, "test_acc": ta})

    def r_values(self, r_max: int | None):
        """(r, capped) over the grid; capped when r exceeds the method's limit."""
        for r in self.r_grid:
            yield r, (r_max is not None and r > r_max)


def _grid_points(spec: MethodSpec, params: dict | None) -> list[dict]:
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


def _run_bsf(run: _Run, points):
    run.n_fit = 0  # no unsupervised step
    for gp in points:
        for p, X in enumerate(run.views):
            with _measure() as cost:
                Z = X[run.ctx.rows]
                Z = l2_normalize_rows(Z) if gp.get("normalize", True) else Z
            run.add(run.ctx.outputs(Z), dim=X.shape[1], view=p, params=gp, cost=cost)


def _run_cat(run: _Run, points):
    run.n_fit = 0
    for gp in points:
        with _measure() as cost:
            V = run.row_data(range(run.m))
            if gp.get("normalize", True):
                Z = concatenate_views(V)
            else:
                Z = (
                    sp.hstack(V, format="csr")
                    if any(map(sp.issparse, V))
                    else np.hstack(V)
                )
        run.add(run.ctx.outputs(Z), dim=Z.shape[1], params=gp, cost=cost)


def _run_nested(run: _Run, points, make, idx_sets):
    """A nested method (CCA, CCA-LS, KCCA) on each view subset: one fit, r sliced."""
    for idx, tag in idx_sets:
        for gp in points:
            Zs, r_max, cost = make(run, idx, gp)
            for r, capped in run.r_values(r_max):
                if capped:
                    run.add(None, r=r, r_max=r_max, pair=tag, params=gp)
                    continue
                Z = np.hstack([Zp[:, :r] for Zp in Zs])
                run.add(
                    run.ctx.outputs(Z),
                    r=r,
                    r_max=r_max,
                    dim=Z.shape[1],
                    pair=tag,
                    params=gp,
                    cost=cost,
                    shared=True,
                )


def _fit_once(run: _Run, kind, idx, gp, make):
    """(estimator, cost of its fit) of ``make()``, shared across splits."""

    def fit():
        with _measure() as cost:
            est = make()
        return est, cost

    return run.cached(kind, idx, gp, fit)


def _transform(est, data, fit_cost):
    with _measure() as cost:
        Zs = est.transform(data, per_view=True)
    return Zs, est.r_max_, _add_costs(fit_cost, cost)


def _linear_fit(cls, kind: str):
    """The fit of a nested linear method (CCA, CCA-LS) on the views ``idx``."""

    def fit(run: _Run, idx, gp):
        est, cost = _fit_once(
            run,
            kind,
            idx,
            gp,
            lambda: cls(
                n_components=None, eps=gp["eps"], center=gp.get("center", True)
            ).fit(run.fit_data(idx)),
        )
        return _transform(est, run.row_data(idx), cost)

    return fit


_fit_cca = _linear_fit(CCA, "cca")
_fit_cca_ls = _linear_fit(CCALS, "cca_ls")


def _fit_kcca(run: _Run, idx, gp):
    K = [run.kernels(p) for p in idx]
    est, cost = _fit_once(
        run,
        "kcca",
        idx,
        gp,
        lambda: KCCA(n_components=None, eps=gp["eps"], kernel="precomputed").fit(
            [k["fit"] for k in K]
        ),
    )
    Zs, r_max, cost = _transform(est, [k["rows_fit"] for k in K], cost)
    return Zs, r_max, _add_costs(cost, *(k["cost"] for k in K))


def _pairs(run: _Run):
    return [((p, q), f"{p}-{q}") for p, q in view_pairs(run.m)]


def _run_cca_bst(run: _Run, points):
    _run_nested(run, points, _fit_cca, _pairs(run))


def _run_kcca_bst(run: _Run, points):
    _run_nested(run, points, _fit_kcca, _pairs(run))


def _run_cca_ls(run: _Run, points):
    _run_nested(run, points, _fit_cca_ls, [(tuple(range(run.m)), None)])


def _run_avg_pairs(run: _Run, points, fit):
    """CCA (AVG) / KCCA (AVG): one r and eps shared by all pairs, outputs combined."""
    for gp in points:
        fits = [fit(run, idx, gp) for idx, _ in _pairs(run)]
        r_max = min(f[1] for f in fits)
        cost = _add_costs(*(f[2] for f in fits))
        for r, capped in run.r_values(r_max):
            if capped:
                run.add(None, r=r, r_max=r_max, pair="all", params=gp)
                continue
            outs = [
                run.ctx.outputs(np.hstack([Zp[:, :r] for Zp in f[0]])) for f in fits
            ]
            run.add(
                run.ctx.aggregate(outs),
                r=r,
                r_max=r_max,
                dim=2 * r,
                pair="all",
                params=gp,
                cost=cost,
                shared=True,
            )


def _run_cca_avg(run: _Run, points):
    _run_avg_pairs(run, points, _fit_cca)


def _run_kcca_avg(run: _Run, points):
    _run_avg_pairs(run, points, _fit_kcca)


def _run_path(run: _Run, points, r_max, fit_path, fit_data, row_data, scale=1.0):
    """Rank grid of TCCA/KTCCA through ``fit_path``: the whitening (or kernels and
    Cholesky factors) and the moment tensor are computed once per grid point.

    fit_s per r is the estimator's ``fit_seconds_``: its own ALS plus the shared
    setup; peak_mb is the peak of the whole path (``fit_shared`` is True).
    """
    for gp in points:
        grid = list(run.r_values(r_max))
        ranks = [r for r, capped in grid if not capped]
        ests, path_cost = {}, None
        if ranks:

            def fit(gp=gp, ranks=ranks):
                with _measure() as cost:
                    fitted = fit_path(fit_data(), ranks, random_state=run.seed, **gp)
                return dict(zip(ranks, fitted, strict=True)), cost

            ests, path_cost = run.cached("path", range(run.m), gp, fit)
        for r, capped in grid:
            if capped:
                run.add(None, r=r, r_max=r_max, params=gp)
                continue
            est = ests[r]
            Z = scale * est.transform(row_data)
            cost = {"fit_s": est.fit_seconds_, "peak_mb": path_cost["peak_mb"]}
            run.add(
                run.ctx.outputs(Z),
                r=r,
                r_max=r_max,
                dim=Z.shape[1],
                params=gp,
                cost=cost,
                shared=True,
            )


def _run_tcca(run: _Run, points):
    from ._tcca import TCCA, max_cp_rank

    dims = [X.shape[1] for X in run.views]
    r_max, _ = max_cp_rank(run.n_fit, dims)
    _run_path(
        run,
        points,
        r_max,
        lambda views, ranks, **kw: TCCA(**kw).fit_path(views, ranks),
        lambda: run.fit_data(range(run.m)),
        run.row_data(range(run.m)),
    )


def _run_ktcca(run: _Run, points):
    from ._ktcca import KTCCA

    K = [run.kernels(p) for p in range(run.m)]
    N_fit = K[0]["fit"].shape[0]
    kernel_cost = _add_costs(*(k["cost"] for k in K))

    def fit_path(Ks, ranks, **kw):
        ests = KTCCA(kernel="precomputed", **kw).fit_path(Ks, ranks)
        for est in ests:  # the kernel matrices were computed by the protocol
            est.fit_seconds_ += kernel_cost["fit_s"]
        return ests

    # r_max = max_cp_rank(N, [N] * m) = N; sqrt(N): unit-variance columns like
    # KCCA's (baselines.md section 0).
    _run_path(
        run,
        points,
        N_fit,
        fit_path,
        lambda: [k["fit"] for k in K],
        [k["rows_fit"] for k in K],
        scale=np.sqrt(N_fit),
    )


_LAMBDAS = ("lambda1", "lambda2")


def _estimator_args(gp: dict) -> dict:
    """Grid point without the protocol-level options (``subset``)."""
    return {k: v for k, v in gp.items() if k != "subset"}


def _spectral_data(run: _Run):
    """Rows a transductive method embeds: the fit rows and every evaluated row."""
    fit = np.arange(run.N) if run.fit is None else run.fit
    rows = np.union1d(fit, run.ctx.rows)
    run.n_fit = rows.size
    return [X[rows] for X in run.views], np.searchsorted(rows, run.ctx.rows), rows


def _spectral_r_max(data, gp: dict, seed) -> int:
    """Most consensus components DSE/SSMVD can return on ``data``.

    With PCA patterns (the paper's setting) that is the rank of the concatenated
    per-view PCA patterns (<= sum_p min(100, d_p)); graph eigenvectors are only
    limited by N - 1 (baselines.md section 0).
    """
    from .baselines._dse import ConsensusBasis, view_patterns

    N = data[0].shape[0]
    if gp.get("view_embedding", "pca") != "pca":
        return N - 1
    patterns, _ = view_patterns(
        check_views(data),
        None,
        view_embedding="pca",
        pca_components=gp.get("pca_components", 100),
        random_state=seed,
    )
    return min(ConsensusBasis(np.hstack(patterns)).rank, N - 1)


def _run_dse(run: _Run, points):
    from .baselines._dse import DSE

    data, pos, rows = _spectral_data(run)
    for gp in points:
        r_max = _spectral_r_max(data, gp, run.seed)
        for r, capped in run.r_values(r_max):
            if capped:
                run.add(None, r=r, r_max=r_max, params=gp)
                continue

            def fit(gp=gp, r=r):
                with _measure() as cost:
                    est = DSE(r, random_state=run.seed, **_estimator_args(gp))
                    Z = est.fit_transform(data)
                return Z, cost

            # Transductive on the same rows in every split (all rows, e.g. Ads,
            # mfeat): one fit per cache.
            Z, cost = run.cached(f"dse r={r}", (), gp, fit, rows=rows)
            run.add(
                run.ctx.outputs(Z[pos]),
                r=r,
                r_max=r_max,
                dim=Z.shape[1],
                params=gp,
                cost=cost,
            )


def _run_ssmvd(run: _Run, points):
    from .baselines._ssmvd import SSMVD

    data, pos, rows = _spectral_data(run)
    # One fit_transform_grid call per (other settings, r) serves every
    # (lambda1, lambda2): the PCA patterns and their Gram matrix are shared.
    groups: dict[str, list[dict]] = {}
    for gp in points:
        rest = {k: v for k, v in _estimator_args(gp).items() if k not in _LAMBDAS}
        groups.setdefault(json.dumps(rest, sort_keys=True, default=str), []).append(gp)
    for gps in groups.values():
        rest = {k: v for k, v in _estimator_args(gps[0]).items() if k not in _LAMBDAS}
        lambdas = [(gp["lambda1"], gp["lambda2"]) for gp in gps]
        r_max = _spectral_r_max(data, rest, run.seed)
        for r, capped in run.r_values(r_max):
            if capped:
                for gp in gps:
                    run.add(None, r=r, r_max=r_max, params=gp)
                continue

            def fit(rest=rest, lambdas=lambdas, r=r):
                with _measure() as cost:
                    est = SSMVD(r, random_state=run.seed, **rest)
                    Zs = est.fit_transform_grid(data, [r], lambdas=lambdas)
                return Zs, cost

            Zs, cost = run.cached(
                f"ssmvd r={r}", (), {"rest": rest, "lambdas": lambdas}, fit, rows=rows
            )
            for gp, (l1, l2) in zip(gps, lambdas, strict=True):
                Z = Zs[(r, l1, l2)]
                run.add(
                    run.ctx.outputs(Z[pos]),
                    r=r,
                    r_max=r_max,
                    dim=Z.shape[1],
                    params=gp,
                    cost=cost,
                    shared=len(gps) > 1,
                )


def _run_bsk(run: _Run, points):
    for p in range(run.m):
        K = run.kernels(p)
        out = run.ctx.kernel_outputs(K["rows_lab"], K["diag_rows"])
        run.add(out, view=p, params={"kernel": run.kernel_spec(p)}, cost=K["cost"])


def _run_avg(run: _Run, points):
    Ks = [run.kernels(p) for p in range(run.m)]
    with _measure() as cost:
        lab = slice(0, run.ctx.n_l)
        Kbar = np.mean(
            [
                normalize_kernel(K["rows_lab"], K["diag_rows"], K["diag_rows"][lab])
                for K in Ks
            ],
            axis=0,
        )
        dbar = np.mean([(K["diag_rows"] > 0).astype(float) for K in Ks], axis=0)
    out = run.ctx.kernel_outputs(Kbar, dbar)
    run.add(
        out,
        params={"kernel": [run.kernel_spec(p) for p in range(run.m)]},
        cost=_add_costs(cost, *(K["cost"] for K in Ks)),
    )


_LIN, _KER = "linear", "kernel"
METHODS: dict[str, MethodSpec] = {
    s.name: s
    for s in (
        MethodSpec(
            "bsf",
            "BSF",
            _LIN,
            {},
            extra=("normalize",),
            has_r=False,
            per="view",
            runner=_run_bsf,
        ),
        MethodSpec(
            "cat", "CAT", _LIN, {}, extra=("normalize",), has_r=False, runner=_run_cat
        ),
        MethodSpec(
            "cca_bst",
            "CCA (BST)",
            _LIN,
            {"eps": EPS_GRID_LINEAR},
            extra=("center",),
            nested=True,
            accepts_fit_views=True,
            per="pair",
            runner=_run_cca_bst,
        ),
        MethodSpec(
            "cca_avg",
            "CCA (AVG)",
            _LIN,
            {"eps": EPS_GRID_LINEAR},
            extra=("center",),
            nested=True,
            accepts_fit_views=True,
            runner=_run_cca_avg,
        ),
        MethodSpec(
            "cca_ls",
            "CCA-LS",
            _LIN,
            {"eps": EPS_GRID_LINEAR},
            extra=("center",),
            nested=True,
            accepts_fit_views=True,
            runner=_run_cca_ls,
        ),
        MethodSpec(
            "dse",
            "DSE",
            _LIN,
            {},
            extra=("view_embedding", "n_neighbors", "pca_components"),
            transductive=True,
            runner=_run_dse,
        ),
        MethodSpec(
            "ssmvd",
            "SSMVD",
            _LIN,
            {"lambda1": LAMBDA_GRID, "lambda2": LAMBDA_GRID},
            extra=(
                "view_embedding",
                "n_neighbors",
                "pca_components",
                "max_iter",
                "tol",
            ),
            transductive=True,
            runner=_run_ssmvd,
        ),
        MethodSpec(
            "tcca",
            "TCCA",
            _LIN,
            {"eps": EPS_GRID_LINEAR},
            extra=("max_iter", "tol", "init", "algorithm", "center"),
            accepts_fit_views=True,
            runner=_run_tcca,
        ),
        # The paper's formulas on the raw (uncentered) views: an investigation of
        # the SecStr gap (REPRODUCTION.md), shown beside TCCA, never instead of it.
        MethodSpec(
            "tcca_nc",
            "TCCA (uncentered)",
            _LIN,
            {"eps": EPS_GRID_LINEAR, "center": (False,)},
            extra=("max_iter", "tol", "init", "algorithm"),
            accepts_fit_views=True,
            runner=_run_tcca,
        ),
        MethodSpec(
            "bsk",
            "BSK",
            _KER,
            {},
            has_r=False,
            uses_kernels=True,
            per="view",
            runner=_run_bsk,
        ),
        MethodSpec(
            "avg", "AVG", _KER, {}, has_r=False, uses_kernels=True, runner=_run_avg
        ),
        MethodSpec(
            "kcca_bst",
            "KCCA (BST)",
            _KER,
            {"eps": EPS_GRID_KERNEL},
            nested=True,
            uses_kernels=True,
            per="pair",
            runner=_run_kcca_bst,
        ),
        MethodSpec(
            "kcca_avg",
            "KCCA (AVG)",
            _KER,
            {"eps": EPS_GRID_KERNEL},
            nested=True,
            uses_kernels=True,
            runner=_run_kcca_avg,
        ),
        MethodSpec(
            "ktcca",
            "KTCCA",
            _KER,
            {"eps": EPS_GRID_KERNEL},
            extra=("max_iter", "tol", "init", "algorithm", "jitter", "center"),
            uses_kernels=True,
            runner=_run_ktcca,
        ),
    )
}


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
    gamma: float = GAMMA,
    cache: dict | None = None,
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
        A key of :data:`METHODS`.
    r_grid : sequence of int, default=R_GRID_PAPER
        Ignored by methods without r (BSF, CAT, BSK, AVG). Values above a method's
        limit r_max give a row with ``r_capped=True`` and NaN accuracies.
    learner : {"rls", "knn"}, default="rls"
        RLS with gamma and a penalized bias, or kNN for every k in 1..k_max.
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
    gamma : float, default=1e-2
    cache : dict or tcca_core.fit_cache.FitCache, optional
        Pass the same (initially empty) mapping to the calls for several splits of
        one data set to fit once the DR steps that do not depend on the split (same
        fit rows, views, grid point and seed: e.g. transductive fits on all rows); the
        learner still runs per split. The results are identical to uncached calls;
        the cached fit's time and memory are reported on every split. A dict keeps
        every entry in memory (for DSE/SSMVD that is every representation of the
        grid); a :class:`~tcca_core.fit_cache.FitCache` keeps them in a folder and
        shares them between processes.

    Returns
    -------
    pandas.DataFrame
        Columns :data:`RESULT_COLUMNS`, one row per (method, split, r, parameters),
        k included. ``r``/``r_max`` are NA for methods without r; ``dim`` is the
        feature dimension given to the learner (2r for CCA, m r for CCA-LS/TCCA, r for
        DSE/SSMVD, d_p for BSF, sum d_p for CAT, NA for kernel-only BSK/AVG); ``pair``
        is "p-q" (BST) or "all" (AVG); ``params`` is the JSON of the DR parameters;
        ``fit_s``/``peak_mb`` are the time (s) and tracemalloc peak (MiB) of
        producing the representation (fit and transform, kernels included); for
        nested methods (``fit_shared``) that one fit serves every r and its cost is
        repeated on each row; for CCA/KCCA (AVG) it is the sum over pairs (peak: the
        max). ``n_fit`` is the number of rows the DR step saw.
    """
    if method not in METHODS:
        raise ValueError(f"unknown method {method!r}; choose one of {list(METHODS)}")
    spec = METHODS[method]
    if learner not in ("rls", "knn"):
        raise ValueError(f"learner must be 'rls' or 'knn', got {learner!r}")
    k_max = check_positive_int(k_max, "k_max")
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
    ctx = _Context(y, split, learner, k_max, gamma)
    run = _Run(views, fit_views, ctx, split, spec, kernel, seed, r_grid, cache)
    logger.info(
        "%s: split %d, %d grid points, %d values of r, learner %s",
        method,
        split.index,
        len(points),
        len(r_grid),
        learner,
    )
    spec.runner(run, points)
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
    return df.astype(_DTYPES)


# ----------------------------------------------------------------------- selection

_KEYS_DEFAULT = ("method", "learner")


def _group_keys(results: pd.DataFrame, by) -> list[str]:
    if by is not None:
        by = [by] if isinstance(by, str) else list(by)
        missing = [c for c in by if c not in results.columns]
        if missing:
            raise ValueError(f"results have no column(s) {missing}")
        return by
    extra = [c for c in results.columns if c not in RESULT_COLUMNS]
    return [c for c in (*extra, *_KEYS_DEFAULT) if c in results.columns]


def _ranked(df: pd.DataFrame) -> pd.DataFrame:
    """Rows ordered best first: validation accuracy, then the documented ties.

    Ties: smaller r, larger eps (more regularized), smaller k, larger lambda1, larger
    lambda2, then the order of the grid (first view/pair).
    """
    key = pd.DataFrame(
        {
            "acc": -df["val_acc"].to_numpy(float),
            "r": df["r"].astype("Float64").fillna(0).to_numpy(float),
            "eps": -df["eps"].fillna(0).to_numpy(float),
            "k": df["k"].astype("Float64").fillna(0).to_numpy(float),
            "l1": -df["lambda1"].fillna(0).to_numpy(float),
            "l2": -df["lambda2"].fillna(0).to_numpy(float),
            "row": np.arange(len(df)),
        }
    )
    order = np.lexsort([key[c].to_numpy() for c in reversed(key.columns)])
    return df.iloc[order]


def _valid(results: pd.DataFrame) -> pd.DataFrame:
    missing = [
        c
        for c in ("split", "val_acc", "test_acc", "r", "eps", "k", "lambda1", "lambda2")
        if c not in results.columns
    ]
    if missing:
        raise ValueError(f"results lack the column(s) {missing}; use run_method output")
    return results[results["val_acc"].notna()].reset_index(drop=True)


def select_per_split(results: pd.DataFrame, by=None) -> pd.DataFrame:
    """Reading (A), per split: the row with the best validation accuracy.

    Groups are ``by`` (default: ``method``, ``learner`` and every column that is
    not one of :data:`RESULT_COLUMNS`, e.g. a ``dataset`` column added by the
    pipeline) and ``split``. Capped rows (NaN accuracy) are ignored.
    """
    keys = _group_keys(results, by)
    ok = _valid(results)
    picked = [
        _ranked(g).index[0]
        for _, g in ok.groupby([*keys, "split"], sort=True, dropna=False)
    ]
    return ok.loc[picked].reset_index(drop=True)


def accuracy_by_r(results: pd.DataFrame, by=None) -> pd.DataFrame:
    """Reading (B)'s curve: per r, test accuracy at the validation-chosen parameters.

    In every (group, split, r) the other parameters (eps, k, view/pair, lambdas) are
    chosen on validation; then mean, std (ddof=1) and count over splits per r.
    Methods without r give one row with r = NA.
    """
    keys = _group_keys(results, by)
    ok = _valid(results)
    best = ok.loc[
        [
            _ranked(g).index[0]
            for _, g in ok.groupby([*keys, "split", "r"], sort=True, dropna=False)
        ]
    ]
    agg = best.groupby([*keys, "r"], sort=True, dropna=False)["test_acc"].agg(
        test_acc_mean="mean",
        test_acc_std=lambda s: s.std(ddof=1),
        n_splits="count",
    )
    return agg.reset_index()


def select(results: pd.DataFrame, by=None) -> pd.DataFrame:
    """The paper's "accuracy at the best dimension", both readings (baselines.md 1).

    (A) ``acc_val_mean`` +- ``acc_val_std``: per split the test accuracy at the
    validation-selected parameters (r included; ties: smaller r, larger eps, smaller
    k), then mean and std (ddof=1) over splits; ``r_val`` lists the selected r per
    split. This is the primary number.
    (B) ``acc_best_r_mean`` +- ``acc_best_r_std``: per r the validation-selected
    other parameters, mean test accuracy over splits, then the best r (``r_best``,
    ties to the smaller r) among the r values present in every split. Optimistic:
    it is what accuracy-vs-r figures show.

    Parameters
    ----------
    results : DataFrame
        Concatenated :func:`run_method` outputs (any number of methods/splits).
    by : str or list of str, optional
        Grouping columns; default ``method``, ``learner`` and every extra column.

    Returns
    -------
    DataFrame with one row per group.
    """
    keys = _group_keys(results, by)
    per_split = select_per_split(results, by=keys)
    curve = accuracy_by_r(results, by=keys)
    rows = []
    for gkey, g in per_split.groupby(keys, sort=True, dropna=False):
        gkey = gkey if isinstance(gkey, tuple) else (gkey,)
        row = dict(zip(keys, gkey, strict=True))
        n = len(g)
        row["n_splits"] = n
        row["acc_val_mean"] = float(g["test_acc"].mean())
        row["acc_val_std"] = float(g["test_acc"].std(ddof=1)) if n > 1 else math.nan
        row["val_acc_mean"] = float(g["val_acc"].mean())
        row["r_val"] = ",".join("NA" if pd.isna(r) else str(int(r)) for r in g["r"])
        c = curve
        for k, v in row.items():
            if k in keys:
                c = c[c[k].isna()] if pd.isna(v) else c[c[k] == v]
        c = c[c["n_splits"] == n]
        if len(c):
            c = c.assign(_r=c["r"].astype("Float64").fillna(0).to_numpy(float))
            best = c.sort_values(
                ["test_acc_mean", "_r"], ascending=[False, True], kind="mergesort"
            ).iloc[0]
            row["acc_best_r_mean"] = float(best["test_acc_mean"])
            row["acc_best_r_std"] = float(best["test_acc_std"])
            row["r_best"] = best["r"]
        else:
            row["acc_best_r_mean"] = row["acc_best_r_std"] = math.nan
            row["r_best"] = pd.NA
        rows.append(row)
    out = pd.DataFrame(rows)
    if len(out):
        out["r_best"] = out["r_best"].astype("Int64")
    return out

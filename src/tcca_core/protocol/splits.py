"""Labeled/validation/test splits of the paper's protocol (Luo et al., 2015, 5.1).

Rows are samples throughout. :func:`make_splits` draws the labeled sets (five random
draws from a seed) and splits the rest of the evaluation pool into validation (20%)
and test (80%); :func:`splits_from_labeled` does the same from given labeled sets and
:func:`restrict_split` keeps a random subset of a split's evaluation rows.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from numbers import Integral

import numpy as np

from .._validation import check_positive_int

__all__ = ["Split", "make_splits", "restrict_split", "splits_from_labeled"]


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
        """Return the rows the DR step is fitted on."""
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
    """Draw splits from given labeled sets (e.g. the SSL book's SecStr splits).

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
    """Return the split restricted to a random subset of ``n_eval`` evaluation rows.

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

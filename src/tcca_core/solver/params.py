"""The solver's parameters, as one value, and the facts every caller shares.

:class:`SolverParams` holds every option of TCCA's and KTCCA's solver; each
field declares its default and what it may be (scikit-learn's parameter
constraints), so that :class:`tcca_core.TCCA`, :class:`tcca_core.KTCCA`, the
functions behind them and the Dask route validate the same declarations, once,
and hand the one value down to the engine and its ALS. The estimators' defaults
are these fields' (``tol: float = SolverParams.tol``), so a default changes here
alone. A new option is a field here, its parameter in the estimators and its use.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterable
from dataclasses import dataclass, field, fields
from typing import Any

import numpy as np

from .._validation import Interval, Options, check_bool, validate_params

__all__ = [
    "ALGORITHMS",
    "INITS",
    "SOLVERS",
    "SOLVER_CONSTRAINTS",
    "SolverParams",
    "check_ranks",
    "is_dask_views",
    "max_cp_rank",
]

#: The engines of ``algorithm=``: "dense" (:mod:`.dense`), "implicit"
#: (:mod:`.implicit`), "tensorly" (:mod:`.tensorly`), or the cost model's pick.
ALGORITHMS = ("auto", "dense", "implicit", "tensorly")

#: The CP solvers of ``solver=``: alternating least squares (:mod:`.als`) or damped
#: Gauss-Newton (:mod:`.lm`).
SOLVERS = ("als", "lm")

#: The starts of ``init=`` (or explicit factor matrices); see :func:`.als.init_factors`.
INITS = ("auto", "hosvd", "svd", "random")


def _option(default, *constraints):
    return field(default=default, metadata={"constraints": list(constraints)})


@dataclass(frozen=True)
class SolverParams:
    """Every option of the TCCA/KTCCA solver, validated when made.

    The fields are the estimators' parameters of the same names (see
    :class:`tcca_core.TCCA` for their meaning). Numbers come back as int or
    float; a bad value raises ``ValueError`` naming the parameter, what it must
    be and what it got.
    """

    eps: float = _option(1e-2, Interval("real", 0, None))
    max_iter: int = _option(500, Interval("integer", 1, None))
    tol: float = _option(1e-5, Interval("real", 0, None))
    init: Any = _option("auto", Options(*INITS), list, tuple)
    n_init: int | str = _option("auto", Interval("integer", 1, None), Options("auto"))
    acceleration: Any = _option("momentum", Options("momentum", "linesearch"), None)
    linesearch: Any = _option("deprecated", "boolean", Options("deprecated"))
    random_state: Any = _option(None, "random_state")
    algorithm: str = _option("auto", Options(*ALGORITHMS))
    solver: str = _option("als", Options(*SOLVERS))

    def __post_init__(self):
        """Check every field against its declaration; store ints and floats."""
        given = {f.name: getattr(self, f.name) for f in fields(self)}
        for name, value in validate_params(given, SOLVER_CONSTRAINTS).items():
            object.__setattr__(self, name, value)
        if self.linesearch != "deprecated":
            warnings.warn(
                "linesearch is deprecated and will be removed in tcca 1.3: use "
                f"acceleration={'linesearch' if self.linesearch else None!r} "
                "instead (the default, acceleration='momentum', takes fewer sweeps)",
                FutureWarning,
                stacklevel=4,
            )
            object.__setattr__(
                self, "acceleration", "linesearch" if self.linesearch else None
            )
            object.__setattr__(self, "linesearch", "deprecated")
        if self.solver != "als" and self.algorithm == "tensorly":
            raise ValueError(
                f"solver={self.solver!r} needs one of the library's engines, but "
                "algorithm='tensorly' runs tensorly's parafac (ALS); use "
                "algorithm='dense' (the same tensor M), 'implicit' or 'auto'"
            )

    @classmethod
    def of(cls, estimator) -> SolverParams:
        """Return the solver parameters of ``estimator`` (its attributes), checked."""
        return cls(**{f.name: getattr(estimator, f.name) for f in fields(cls)})


#: What the solver's parameters may be, by name (with ``n_components``): the
#: estimators' ``_parameter_constraints`` include them.
SOLVER_CONSTRAINTS: dict = {
    "n_components": [Interval("integer", 1, None)],
    **{f.name: f.metadata["constraints"] for f in fields(SolverParams)},
}


def max_cp_rank(N: int, dims) -> tuple[int, str]:
    """Upper bound on n_components and why.

    M has CP rank at most N (it is a sum of N rank-1 terms) and at most
    prod(d) / max(d) (the number of columns of its largest-mode unfolding bounds the
    rank of any tensor). For m = 2 this is min(N, d_1, d_2), the CCA bound.
    """
    dims = list(dims)
    bound = int(np.prod(dims, dtype=object) // max(dims))
    if N <= bound:
        return N, f"the moment tensor is a sum of N = {N} rank-1 terms"
    return bound, f"prod(d) / max(d) = {bound} for view dimensions {dims}"


def check_ranks(ranks, init, warm_start: bool) -> tuple[list[int], bool]:
    """Return the rank grid as a list and whether warm starts apply to it."""
    warm_start = check_bool(warm_start, "warm_start")
    if isinstance(ranks, str) or not isinstance(ranks, Iterable):
        raise ValueError(f"ranks must be a list of integers >= 1, got {ranks!r}")
    ranks = list(ranks)
    if not ranks:
        raise ValueError("ranks must not be empty")
    for r in ranks:
        validate_params({"n_components": r}, SOLVER_CONSTRAINTS)
    warm_start = warm_start and len(set(ranks)) > 1  # one rank: nothing to warm
    if warm_start and not isinstance(init, str):
        raise ValueError("warm_start needs init='svd', 'hosvd' or 'random', not arrays")
    return ranks, warm_start


def is_dask_views(views) -> bool:
    """Whether ``views`` is a list holding a Dask collection (Dask not imported)."""
    return isinstance(views, (list, tuple)) and any(
        type(X).__module__.partition(".")[0] == "dask" for X in views
    )

"""Input checks shared by every estimator.

Every public entry point validates here, once; the numerical code below it assumes
clean input. Each failure is a ``ValueError`` whose message names the offending view,
parameter or value, so that a user can fix the call without reading the source.
"""

from __future__ import annotations

import math
from contextlib import contextmanager
from numbers import Integral, Real
from typing import TYPE_CHECKING, ClassVar, cast

import numpy as np
import scipy.sparse as sp

__all__ = [
    "Interval",
    "Options",
    "ParamsMixin",
    "MAX_SEED",
    "as_generator",
    "as_random_state",
    "check_bool",
    "check_finite",
    "check_views",
    "check_varying",
    "named_als_failure",
    "check_eps",
    "check_magnitude",
    "check_n_components",
    "check_positive_int",
    "check_tol",
    "validate_params",
    "validate_random_state",
]


# Real numeric dtype kinds accepted as input: bool, signed and unsigned int, float.
# Complex input would be cast to real with only a ComplexWarning; datetimes,
# timedeltas, strings and objects have no meaning here.
_NUMERIC_KINDS = "biuf"


def check_magnitude(data, shape, what: str) -> None:
    """Reject finite values so large that sums of their squares overflow float64.

    Covariances, Gram matrices and distances sum ``max(shape)`` products of two
    entries; beyond ``sqrt(max_float / (4 max(shape)))`` they can reach infinity
    and the fit would return NaN.
    """
    if np.size(data) == 0:
        return
    # the largest magnitude from the extremes: no |data| copy of a large view
    amax = max(abs(float(np.max(data))), abs(float(np.min(data))))
    limit = float(np.sqrt(np.finfo(np.float64).max / (4.0 * max(shape))))
    if amax > limit:
        raise ValueError(
            f"{what} has entries up to {amax:.3g} in magnitude; sums of their "
            f"squares overflow float64 (the limit for shape {tuple(shape)} is "
            f"{limit:.3g}); rescale the data"
        )


def check_finite(data, what: str) -> None:
    """Raise a ``ValueError`` naming ``what`` if ``data`` holds NaN or infinity.

    ``data`` is an array or a sparse matrix (whose stored entries are checked).
    """
    if sp.issparse(data):
        data = data.data
    finite = np.isfinite(data)
    if not np.all(finite):
        n_bad = int(np.size(data) - np.count_nonzero(finite))
        raise ValueError(f"{what} contains NaN or infinity ({n_bad} entries)")


def _check_one_view(X, p: int, *, accept_sparse: bool, dtype):
    """Return view ``p`` as a 2-D float array (or CSR matrix), or raise."""
    if sp.issparse(X):
        if not accept_sparse:
            raise ValueError(
                f"view {p} is a sparse matrix, but this estimator needs dense input; "
                "convert it with .toarray()"
            )
        if X.ndim != 2:
            raise ValueError(f"view {p} must be 2-D, got {X.ndim}-D")
        if X.dtype.kind not in _NUMERIC_KINDS:
            raise ValueError(
                f"view {p} has dtype {X.dtype}; pass real numbers (float, int, bool)"
            )
        X = sp.csr_matrix(X, dtype=dtype)
        data = X.data
    else:
        if X is None:
            raise ValueError(
                f"view {p} is None; pass an array of shape (n_samples, n_features)"
            )
        if isinstance(X, np.ma.MaskedArray):  # np.asarray would drop the mask
            raise ValueError(
                f"view {p} is a masked array ({int(np.ma.count_masked(X))} masked "
                "entries), whose mask would be ignored; fill or drop the masked "
                "entries and pass a plain array (np.ma.filled, np.ma.compress_rows)"
            )
        try:
            X = np.asarray(X)
        except Exception as exc:  # ragged lists and the like
            raise ValueError(
                f"view {p} cannot be converted to an array (rows of different "
                f"lengths?): {exc}"
            ) from exc
        if X.dtype == object:
            # np.asarray keeps ragged rows and None entries as objects
            raise ValueError(
                f"view {p} has dtype object (ragged rows or non-numbers?); pass a "
                "numeric array of shape (n_samples, n_features)"
            )
        if X.ndim != 2:
            raise ValueError(
                f"view {p} must be 2-D (n_samples, n_features), got shape {X.shape}"
            )
        if X.dtype.kind not in _NUMERIC_KINDS:
            raise ValueError(
                f"view {p} has dtype {X.dtype}; pass real numbers (float, int, bool)"
            )
        X = np.ascontiguousarray(X, dtype=dtype)
        data = X
    if X.shape[1] == 0:
        raise ValueError(f"view {p} has no features (shape {X.shape})")
    check_finite(data, f"view {p}")
    check_magnitude(data, X.shape, f"view {p}")
    return X


def check_views(
    views,
    *,
    min_views: int = 2,
    accept_sparse: bool = True,
    dtype=np.float64,
    min_samples: int = 2,
    n_features: list[int] | None = None,
) -> list:
    """Validate a list of views and return them as float arrays or CSR matrices.

    Parameters
    ----------
    views : list of array-like or sparse matrices, each of shape (n_samples, d_p)
    min_views : int
        Fewest views accepted.
    accept_sparse : bool
        Whether scipy.sparse views are passed through (as CSR) or rejected.
    dtype : numpy dtype
        Dtype of the returned views.
    min_samples : int
        Fewest samples accepted.
    n_features : list of int, optional
        When given (at ``transform`` time), the number of features each view must
        have, as seen in ``fit``.

    Returns
    -------
    list
        The validated views.
    """
    if isinstance(views, np.ndarray) or sp.issparse(views):
        raise ValueError(
            "views must be a list of arrays, one per view, not a single "
            f"{type(views).__name__}; wrap it as [X1, X2, ...]"
        )
    if not isinstance(views, (list, tuple)):
        raise ValueError(
            f"views must be a list of arrays, one per view; got {type(views).__name__}"
        )
    if len(views) < min_views:
        raise ValueError(f"at least {min_views} views are needed, got {len(views)}")
    out = [
        _check_one_view(X, p, accept_sparse=accept_sparse, dtype=dtype)
        for p, X in enumerate(views)
    ]
    n = [X.shape[0] for X in out]
    if len(set(n)) != 1:
        p = next(p for p, n_p in enumerate(n) if n_p != n[0])
        raise ValueError(
            f"all views must have the same number of samples (rows); got {n}: "
            f"view {p} has {n[p]}, view 0 has {n[0]}"
        )
    if n[0] < min_samples:
        raise ValueError(f"at least {min_samples} samples are needed, got {n[0]}")
    if n_features is not None:
        if len(out) != len(n_features):
            raise ValueError(
                f"the estimator was fitted on {len(n_features)} views, got {len(out)}"
            )
        for p, (X, d) in enumerate(zip(out, n_features, strict=True)):
            if X.shape[1] != d:
                raise ValueError(
                    f"view {p} has {X.shape[1]} features, but the estimator was "
                    f"fitted with {d}"
                )
    return out


def _is_constant(X) -> bool:
    """Whether every row of a dense or sparse 2-D matrix is the same."""
    if X.shape[0] <= 1:
        return True
    hi, lo = X.max(axis=0), X.min(axis=0)
    if sp.issparse(hi):
        hi, lo = hi.toarray(), lo.toarray()
    return bool(np.array_equal(hi, lo))


def check_varying(views, name: str, skip=()) -> None:
    """Reject a view whose rows are all equal.

    After centering such a view is zero, so the moment tensor (a product over all
    views) is zero and ``name`` has no component. Views whose index is in ``skip``
    (precomputed kernels) are not checked.
    """
    for p, X in enumerate(views):
        if p not in skip and _is_constant(X):
            raise ValueError(
                f"view {p} is constant over the samples (all rows are equal), so "
                f"the moment tensor is zero and {name} has no component"
            )


@contextmanager
def named_als_failure(name: str, n_components):
    """Turn numpy's bare ``LinAlgError: Singular matrix`` from ALS into a message.

    ALS solves with the Hadamard product of the factors' Gram matrices, which is
    exactly singular when the moment tensor is zero to rounding (e.g. N = 2 samples
    and an odd number of views: the two centered samples are opposite, so every odd
    moment cancels), or when a factor column lies in the null space of its mode
    (a view whose whitened data spans fewer directions than ``n_components``, such
    as one with a constant column, started from ``init="svd"``).
    """
    try:
        yield
    except np.linalg.LinAlgError as exc:
        raise ValueError(
            f"{name}: ALS failed ({exc}). Either the whitened moment tensor is zero "
            "to rounding (too few samples, e.g. N = 2 with an odd number of views, "
            "views symmetric about their mean, or data far smaller than sqrt(eps)), "
            "or a view's centered data spans fewer directions than "
            f"n_components={n_components} (constant or duplicated columns) and a "
            "component started in its null space; try init='random', fewer "
            "components, more samples or standardized views"
        ) from exc


def check_eps(eps, name: str = "eps") -> float:
    """Return ``eps`` as a float if it is a finite number >= 0."""
    if isinstance(eps, bool) or not isinstance(eps, Real) or not math.isfinite(eps):
        raise ValueError(f"{name} must be a finite number >= 0, got {eps!r}")
    if eps < 0:
        raise ValueError(f"{name} must be >= 0, got {eps!r}")
    return float(eps)


def check_positive_int(value, name: str) -> int:
    """Return ``value`` as an int if it is an integer >= 1."""
    if isinstance(value, bool) or not isinstance(value, Integral) or value < 1:
        raise ValueError(f"{name} must be an integer >= 1, got {value!r}")
    return int(value)


def check_tol(tol, name: str = "tol") -> float:
    """Return ``tol`` as a float if it is a finite number >= 0."""
    return check_eps(tol, name)


def check_n_components(n_components, r_max: int, why: str) -> int:
    """Check ``1 <= n_components <= r_max``; ``why`` explains where r_max comes from."""
    r = check_positive_int(n_components, "n_components")
    if r > r_max:
        raise ValueError(
            f"n_components={r} is too large: at most {r_max} is allowed ({why})"
        )
    return r


#: The largest seed scikit-learn (and numpy's legacy ``RandomState``) accepts.
MAX_SEED = 2**32 - 1

_RANDOM_STATE_WHAT = (
    f"None, an int in [0, {MAX_SEED}], a numpy Generator or a numpy RandomState"
)


def _is_random_state(value) -> bool:
    """Whether ``value`` is None, a seed in [0, 2**32 - 1], a Generator or RandomState.

    scikit-learn's range: numpy would take a negative seed only to fail with
    "expected non-negative integer" deep inside the fit, and a seed beyond 2**32
    seeds a Generator but not the legacy RandomState of the sklearn-style code.
    """
    if value is None or isinstance(value, np.random.Generator | np.random.RandomState):
        return True
    return (
        isinstance(value, Integral)
        and not isinstance(value, bool | np.bool_)
        and 0 <= int(value) <= MAX_SEED
    )


def validate_random_state(random_state, name: str = "random_state"):
    """Return ``random_state`` unchanged if it is a valid seed or generator, or raise.

    Valid: None, an int in [0, 2**32 - 1], a numpy Generator or RandomState.
    """
    if not _is_random_state(random_state):
        raise ValueError(f"{name} must be {_RANDOM_STATE_WHAT}, got {random_state!r}")
    return random_state


def as_generator(random_state) -> np.random.Generator:
    """Return a numpy Generator from None, a seed, a Generator or a RandomState."""
    validate_random_state(random_state)
    if isinstance(random_state, np.random.Generator):
        return random_state
    if isinstance(random_state, np.random.RandomState):
        return np.random.default_rng(random_state.randint(MAX_SEED))
    return np.random.default_rng(cast(int | None, random_state))


def as_random_state(random_state) -> np.random.RandomState:
    """Return a numpy RandomState (for scikit-learn's solvers) from the same inputs.

    A Generator is wrapped around its own bit generator, so drawing from the
    result advances the Generator, as drawing from a passed RandomState does.
    """
    validate_random_state(random_state)
    if isinstance(random_state, np.random.RandomState):
        return random_state
    if isinstance(random_state, np.random.Generator):
        return np.random.RandomState(random_state.bit_generator)
    return np.random.RandomState(random_state)


def check_bool(value, name: str) -> bool:
    """Return ``value`` as a bool if it is True or False (numpy's too), or raise.

    Strings such as ``"no"`` and numbers are truthy or falsy by accident, so they
    are refused rather than interpreted.
    """
    if not isinstance(value, bool | np.bool_):
        raise ValueError(f"{name} must be True or False, got {value!r}")
    return bool(value)


# ------------------------------------------------------------ parameter constraints
#
# Each estimator declares what its parameters may be, next to its __init__, in one
# style (as scikit-learn's ``_parameter_constraints`` does):
#
#     _parameter_constraints = {
#         "n_components": [Interval("integer", 1, None), None],
#         "eps": [Interval("real", 0, None)],
#         "center": ["boolean"],
#     }
#
# and ``fit`` starts with ``params = self._validate_params()``. A parameter passes
# when it satisfies any entry of its list: an Interval, Options, None, "boolean",
# "callable", "random_state" or a type (isinstance). Numbers come back as int/float.


class Interval:
    """Finite integers or reals between ``left`` and ``right`` (None: unbounded).

    ``closed`` is "both", "left", "right" or "neither" (which bounds are allowed).
    """

    def __init__(self, kind: str, left=None, right=None, *, closed: str = "both"):
        if kind not in ("integer", "real"):
            raise ValueError(f"kind must be 'integer' or 'real', got {kind!r}")
        self.kind, self.left, self.right, self.closed = kind, left, right, closed

    def accepts(self, value) -> bool:
        """Whether ``value`` is a finite number of the kind within the bounds."""
        if isinstance(value, bool | np.bool_):
            return False
        if self.kind == "integer" and not isinstance(value, Integral):
            return False
        if not isinstance(value, Real) or not math.isfinite(value):
            return False
        lo_ok = self.left is None or (
            value >= self.left if self.closed in ("both", "left") else value > self.left
        )
        hi_ok = self.right is None or (
            value <= self.right
            if self.closed in ("both", "right")
            else value < self.right
        )
        return bool(lo_ok and hi_ok)

    def coerce(self, value):
        """``value`` as a Python int or float."""
        return int(value) if self.kind == "integer" else float(value)

    def __str__(self) -> str:
        what = "an integer" if self.kind == "integer" else "a finite number"
        lo = (
            None
            if self.left is None
            else (
                f">= {self.left}"
                if self.closed in ("both", "left")
                else f"> {self.left}"
            )
        )
        hi = (
            None
            if self.right is None
            else (
                f"<= {self.right}"
                if self.closed in ("both", "right")
                else f"< {self.right}"
            )
        )
        return " ".join([what, " and ".join(b for b in (lo, hi) if b)]).strip()


class Options:
    """One of a fixed set of values (strings, mostly)."""

    def __init__(self, *values):
        self.values = values

    def accepts(self, value) -> bool:
        """Whether ``value`` is one of the options."""
        return any(value == v and type(value) is type(v) for v in self.values)

    def __str__(self) -> str:
        return "one of " + ", ".join(map(repr, self.values))


def _accepts(constraint, value) -> bool:
    if constraint is None:
        return value is None
    if isinstance(constraint, Interval | Options):
        return constraint.accepts(value)
    if constraint == "boolean":
        return isinstance(value, bool | np.bool_)
    if constraint == "callable":
        return callable(value)
    if constraint == "random_state":
        return _is_random_state(value)
    if isinstance(constraint, type):
        return isinstance(value, constraint)
    raise TypeError(f"unknown parameter constraint {constraint!r}")


def _describe(constraint) -> str:
    if constraint is None:
        return "None"
    if isinstance(constraint, type):
        return f"a {constraint.__name__}"
    return {
        "boolean": "True or False",
        "callable": "a callable",
        "random_state": _RANDOM_STATE_WHAT,
    }.get(constraint, str(constraint))


def validate_params(params, constraints) -> dict:
    """Check ``params`` (name -> value) against ``constraints``; return them.

    Every parameter named in ``constraints`` and present in ``params`` must satisfy
    one of its constraints, else a ``ValueError`` names it, says what it must be and
    what it got. Numbers accepted by an :class:`Interval` come back as int/float;
    other values unchanged. Parameters without a constraint pass as they are.
    """
    out = dict(params)
    for name, allowed in constraints.items():
        if name not in params:
            continue
        value = params[name]
        for constraint in allowed:
            if _accepts(constraint, value):
                if isinstance(constraint, Interval):
                    out[name] = constraint.coerce(value)
                break
        else:
            what = " or ".join(_describe(c) for c in allowed)
            raise ValueError(f"{name} must be {what}, got {value!r}")
    return out


class ParamsMixin:
    """``_validate_params()`` from the class's ``_parameter_constraints``."""

    _parameter_constraints: ClassVar[dict] = {}

    if TYPE_CHECKING:  # provided by sklearn's BaseEstimator

        def get_params(self, deep: bool = True) -> dict:
            """Return the estimator's parameters."""
            ...

    def _validate_params(self) -> dict:
        """Return the estimator's parameters, checked; see :func:`validate_params`."""
        return validate_params(self.get_params(deep=False), self._parameter_constraints)

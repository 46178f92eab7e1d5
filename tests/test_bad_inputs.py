"""Bad input to the public API gets a clear, named error.

- ``random_state``: None, an int in [0, 2**32 - 1], a numpy Generator or
  RandomState, for every estimator and function that takes one; anything else
  is a ValueError naming the parameter (``-1`` used to fail inside numpy);
- lists of views, wherever they enter (``stack_views``, the model-selection
  functions and searches, ``MultiViewAdapter``): a None, 1-D, ragged, NaN or
  infinite view, or one with another number of samples, is a ValueError that
  names the view (it used to be an IndexError or numpy's own message);
- ``pairwise_correlations`` / ``high_order_correlations`` raise on NaN or
  infinite variates (they used to report 0);
- every estimator's ``transform`` (``score``, ``predict``, ...) before ``fit``
  raises scikit-learn's ``NotFittedError``;
- boolean arguments (``per_view``, ``warm_start`` and the estimators' boolean
  parameters) must be booleans, not truthy values such as ``"yes"``;
- KTCCA's and KCCA's ``kernel_params`` are checked per view.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from sklearn.base import BaseEstimator
from sklearn.exceptions import ConvergenceWarning, NotFittedError

from tcca_core import KTCCA, TCCA, tcca_path
from tcca_core._ktcca import ktcca_path
from tcca_core._validation import as_generator, as_random_state
from tcca_core.baselines import CCA, CCALS, DSE, KCCA, SSMVD, cca_ls_iterative
from tcca_core.baselines._dse import view_patterns
from tcca_core.compose import MultiViewAdapter, stack_views
from tcca_core.learners import KNN, RLS, KernelRLS
from tcca_core.model_selection import (
    GridSearchCV,
    RandomizedSearchCV,
    cross_val_score,
    cross_validate,
    high_order_correlations,
    pairwise_correlations,
    validation_curve,
)

pytestmark = pytest.mark.usefixtures("single_blas_thread")

N = 30
#: every public multi-view estimator and its number of views
MULTIVIEW = {TCCA: 3, KTCCA: 3, CCA: 2, KCCA: 2, CCALS: 3, DSE: 3, SSMVD: 3}
#: those with an out-of-sample ``transform(views, per_view=...)``
TRANSFORMERS = [TCCA, KTCCA, CCA, KCCA, CCALS]
WITH_RANDOM_STATE = [c for c in MULTIVIEW if "random_state" in c._get_param_names()]
LEARNERS = [RLS, KernelRLS, KNN]
ALL = [*MULTIVIEW, *LEARNERS]

RANDOM_STATE_MESSAGE = (
    r"^random_state must be None, an int in \[0, 4294967295\], a numpy Generator "
    r"or a numpy RandomState, got "
)
BAD_SEEDS = [-1, 2**32, np.int64(-3), 1.5, True, "0", [0]]
GOOD_SEEDS = [None, 0, 2**32 - 1, np.int64(5), np.uint32(7)]


def _views(m=3, n=N, seed=0):
    rng = np.random.default_rng(seed)
    z = rng.exponential(size=(n, 1)) - 1.0
    return [
        z @ rng.standard_normal((1, d)) + 0.3 * rng.standard_normal((n, d))
        for d in (3, 4, 5)[:m]
    ]


def _make(cls, **params):
    return cls(1, **params)


def _ids(c):
    return c.__name__


# ------------------------------------------------------------------ random_state
@pytest.mark.parametrize("seed", BAD_SEEDS, ids=repr)
@pytest.mark.parametrize("cls", WITH_RANDOM_STATE, ids=_ids)
def test_bad_random_state_is_named_in_fit(cls, seed):
    assert {TCCA, KTCCA, DSE, SSMVD} <= set(WITH_RANDOM_STATE)
    views = _views(MULTIVIEW[cls])
    with pytest.raises(ValueError, match=RANDOM_STATE_MESSAGE):
        _make(cls, random_state=seed).fit(views)


@pytest.mark.parametrize(
    "seed",
    [*GOOD_SEEDS, "RandomState", "Generator"],
    ids=repr,
)
@pytest.mark.parametrize("cls", WITH_RANDOM_STATE, ids=_ids)
def test_valid_random_states_fit(cls, seed):
    if seed == "RandomState":
        seed = np.random.RandomState(0)
    elif seed == "Generator":
        seed = np.random.default_rng(0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        est = _make(cls, random_state=seed)
        Z = est.fit_transform(_views(MULTIVIEW[cls]))
    assert np.all(np.isfinite(Z))


def test_same_seed_through_a_generator_is_reproducible_for_dse():
    views = _views()
    a = DSE(1, random_state=np.random.default_rng(3)).fit_transform(views)
    b = DSE(1, random_state=np.random.default_rng(3)).fit_transform(views)
    np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize(
    "call",
    [
        lambda rs: tcca_path(_views(), [1], random_state=rs),
        lambda rs: ktcca_path(_views(), [1], random_state=rs),
        lambda rs: cca_ls_iterative(_views(), 1, random_state=rs),
        lambda rs: view_patterns(_views(), None, random_state=rs),
        as_generator,
        as_random_state,
    ],
    ids=[
        "tcca_path",
        "ktcca_path",
        "cca_ls_iterative",
        "view_patterns",
        "as_generator",
        "as_random_state",
    ],
)
@pytest.mark.parametrize("seed", [-1, 2**32], ids=repr)
def test_bad_random_state_is_named_in_functions(call, seed):
    with pytest.raises(ValueError, match=RANDOM_STATE_MESSAGE):
        call(seed)


# ------------------------------------------------------------------ lists of views
def _ragged(n):
    rows = [[1.0, 2.0, 3.0]] * n
    rows[-1] = [1.0]
    return rows


def _with(value, views):
    """``views`` with view 1 replaced by ``value(n, views)``."""
    return [views[0], value(views[0].shape[0], views[1]), *views[2:]]


BAD_VIEWS = {
    "None": (lambda n, V: None, r"view 1 is None"),
    "1-D": (lambda n, V: V[:, 0], r"view 1 must be 2-D"),
    "3-D": (lambda n, V: V[:, :, None], r"view 1 must be 2-D"),
    "ragged": (lambda n, V: _ragged(n), r"view 1 cannot be converted"),
    "objects": (lambda n, V: [[1.0, None]] * n, r"view 1 has dtype object"),
    "strings": (lambda n, V: np.full((n, 2), "a"), r"view 1 has dtype <U1"),
    "samples": (lambda n, V: V[:-1], r"same number of samples.*view 1 has 29"),
    "nan": (lambda n, V: np.where(V > 1, np.nan, V), r"view 1 contains NaN"),
    "inf": (lambda n, V: np.where(V > 1, -np.inf, V), r"view 1 contains NaN or inf"),
}

ENTRY_POINTS = {
    "stack_views": lambda views: stack_views(views),
    "cross_val_score": lambda views: cross_val_score(TCCA(1), views, cv=2),
    "cross_validate": lambda views: cross_validate(TCCA(1), views, cv=2),
    "validation_curve": lambda views: validation_curve(
        TCCA(1), views, "eps", [0.1], cv=2
    ),
    "GridSearchCV": lambda views: GridSearchCV(TCCA(1), {"eps": [0.1]}, cv=2).fit(
        views
    ),
    "RandomizedSearchCV": lambda views: RandomizedSearchCV(
        TCCA(1), {"eps": [0.1]}, n_iter=1, cv=2
    ).fit(views),
}


@pytest.mark.parametrize("bad", list(BAD_VIEWS))
@pytest.mark.parametrize("entry", list(ENTRY_POINTS))
def test_bad_view_is_named_at_every_entry_point(entry, bad):
    make, message = BAD_VIEWS[bad]
    views = _with(make, _views())
    with pytest.raises(ValueError, match=message):
        ENTRY_POINTS[entry](views)


def test_model_selection_needs_two_views_up_front():
    # before: every fold failed, and scikit-learn reported "All the 2 fits failed"
    with pytest.raises(ValueError, match="^at least 2 views are needed, got 1$"):
        cross_val_score(TCCA(1), _views()[:1], cv=2)


def test_search_score_checks_the_views():
    search = GridSearchCV(CCA(1), {"eps": [0.1]}, cv=2).fit(_views(2))
    with pytest.raises(ValueError, match="view 0 must be 2-D"):
        search.score([np.ones(N), _views(2)[1]])


def test_stack_views_keeps_its_result():
    views = _views()
    X, sizes = stack_views(views)
    assert sizes == [3, 4, 5]
    np.testing.assert_array_equal(X, np.hstack(views))
    # one view is allowed (stacking is not fitting)
    assert stack_views([np.ones((1, 2))])[1] == [2]


class _Trusting(BaseEstimator):
    """A multi-view estimator that checks nothing (the adapter must)."""

    def fit(self, views, y=None):
        self.n_views_ = len(views)
        return self

    def transform(self, views):
        return np.hstack(views)

    def score(self, views, y=None):
        return 0.0


@pytest.mark.parametrize("method", ["fit", "transform", "score"])
@pytest.mark.parametrize("value", [np.nan, np.inf])
def test_adapter_names_the_view_with_non_finite_values(method, value):
    X, sizes = stack_views(_views())
    adapter = MultiViewAdapter(_Trusting(), sizes)
    if method != "fit":
        adapter.fit(X)
    X = X.copy()
    X[4, 5] = value  # column 5 is in view 1 (columns 3..6)
    with pytest.raises(ValueError, match=r"^view 1 contains NaN or infinity \(1 "):
        getattr(adapter, method)(X)


def test_adapter_refuses_a_list_of_views():
    with pytest.raises(ValueError, match="takes one 2-D array.*stack_views"):
        MultiViewAdapter(TCCA(1), [3, 4, 5]).fit(_views())


# ---------------------------------------------------------- correlation helpers
HELPERS = [pairwise_correlations, high_order_correlations]


def _variates(m=3, n=20, r=2):
    rng = np.random.default_rng(1)
    return [rng.standard_normal((n, r)) for _ in range(m)]


@pytest.mark.parametrize("value", [np.nan, np.inf, -np.inf])
@pytest.mark.parametrize("helper", HELPERS, ids=lambda f: f.__name__)
def test_correlations_raise_on_non_finite_variates(helper, value):
    Zs = _variates()
    Zs[1][3, 0] = value
    with pytest.raises(ValueError, match=r"^Zs\[1\] \(the variates of view 1\) "):
        helper(Zs)
    all_bad = [np.full((5, 2), value), np.ones((5, 2))]
    with pytest.raises(ValueError, match="NaN or infinity"):
        helper(all_bad)


@pytest.mark.parametrize(
    ("Zs", "message"),
    [
        ([np.ones((5, 2))], "at least 2 views"),
        ([np.ones((5, 2)), np.ones(5)], r"Zs\[1\].* must be 2-D"),
        ([np.ones((5, 2)), np.ones((4, 2))], r"Zs\[1\].* has shape \(4, 2\)"),
        ([np.ones((5, 2)), None], r"Zs\[1\].* is None"),
        ([np.ones((5, 2)), [["a", "b"]] * 5], r"Zs\[1\].* not an array of numbers"),
        ([np.ones((1, 2)), np.ones((1, 2))], "at least 2, got 1"),
        (np.ones((2, 5, 2)), "must be a list of arrays"),
    ],
    ids=["one-view", "1-D", "shapes", "None", "strings", "one-sample", "array"],
)
@pytest.mark.parametrize("helper", HELPERS, ids=lambda f: f.__name__)
def test_correlations_check_their_input(helper, Zs, message):
    with pytest.raises(ValueError, match=message):
        helper(Zs)


# ------------------------------------------------------------------- not fitted
def _unfitted_calls(cls):
    if cls in LEARNERS:
        X = np.ones((4, 4))
        calls = {"predict": lambda e: e.predict(X)}
        if hasattr(cls, "decision_function"):
            calls["decision_function"] = lambda e: e.decision_function(X)
        if hasattr(cls, "predict_proba"):
            calls["predict_proba"] = lambda e: e.predict_proba(X)
        return calls
    views = _views(MULTIVIEW[cls])
    return {
        "transform": lambda e: e.transform(views),
        "score": lambda e: e.score(views),
        "get_feature_names_out": lambda e: e.get_feature_names_out(),
    }


UNFITTED = [
    (cls, name, call)
    for cls in ALL
    if cls not in (DSE, SSMVD)  # transductive: no transform, fitted or not
    for name, call in _unfitted_calls(cls).items()
]


@pytest.mark.parametrize(
    ("cls", "name", "call"),
    UNFITTED,
    ids=[f"{c.__name__}-{n}" for c, n, _ in UNFITTED],
)
def test_use_before_fit_raises_not_fitted(cls, name, call):
    est = cls() if cls in LEARNERS else _make(cls)
    with pytest.raises(NotFittedError):
        call(est)


@pytest.mark.parametrize("search", [GridSearchCV, RandomizedSearchCV], ids=_ids)
@pytest.mark.parametrize("method", ["transform", "score"])
def test_search_before_fit_raises_not_fitted(search, method):
    est = search(TCCA(1), {"eps": [0.1]})
    with pytest.raises(NotFittedError):
        getattr(est, method)(_views())


def test_adapter_before_fit_raises_not_fitted():
    X = np.hstack(_views())
    for method in ("transform", "score"):
        with pytest.raises(NotFittedError):
            getattr(MultiViewAdapter(TCCA(1), [3, 4, 5]), method)(X)


# ------------------------------------------------------------------ booleans
NOT_BOOLEANS = ["yes", "False", 1, 0, None, 1.0, [True]]


@pytest.mark.parametrize("value", NOT_BOOLEANS, ids=repr)
@pytest.mark.parametrize("cls", TRANSFORMERS, ids=_ids)
def test_per_view_must_be_a_bool(cls, value):
    views = _views(MULTIVIEW[cls])
    est = _make(cls)
    with pytest.raises(ValueError, match=r"^per_view must be True or False, got "):
        est.fit_transform(views, per_view=value)
    est.fit(views)
    for call in (
        lambda: est.transform(views, per_view=value),
        lambda: est.transform(views, value),  # positional, too
    ):
        with pytest.raises(ValueError, match=r"^per_view must be True or False"):
            call()
    # numpy's booleans are booleans
    assert isinstance(est.transform(views, per_view=np.True_), list)
    assert isinstance(est.transform(views, per_view=np.False_), np.ndarray)


BOOLEAN_PARAMS = [
    (cls, name)
    for cls in ALL
    for name, allowed in cls._parameter_constraints.items()
    if allowed == ["boolean"]
]


@pytest.mark.parametrize("value", ["yes", 1, None], ids=repr)
@pytest.mark.parametrize(
    ("cls", "name"),
    BOOLEAN_PARAMS,
    ids=[f"{c.__name__}-{n}" for c, n in BOOLEAN_PARAMS],
)
def test_boolean_parameters_must_be_booleans_in_fit(cls, name, value):
    assert len(BOOLEAN_PARAMS) >= 4  # center of the estimators, at least
    with pytest.raises(ValueError, match=rf"^{name} must be True or False, got "):
        _make(cls, **{name: value}).fit(_views(MULTIVIEW[cls]))


@pytest.mark.parametrize(
    "call",
    [
        lambda v: TCCA(1).fit_path(_views(), [1, 2], warm_start=v),
        lambda v: KTCCA(1).fit_path(_views(), [1, 2], warm_start=v),
        lambda v: tcca_path(_views(), [1, 2], warm_start=v),
        lambda v: ktcca_path(_views(), [1, 2], warm_start=v),
    ],
    ids=["TCCA.fit_path", "KTCCA.fit_path", "tcca_path", "ktcca_path"],
)
@pytest.mark.parametrize("value", ["no", 1], ids=repr)
def test_warm_start_must_be_a_bool(call, value):
    with pytest.raises(ValueError, match=r"^warm_start must be True or False, got "):
        call(value)


# --------------------------------------------------------------------- ranks
@pytest.mark.parametrize("cls", [TCCA, KTCCA], ids=_ids)
def test_fit_path_ranks(cls):
    with pytest.raises(ValueError, match=r"^ranks must be a list of integers"):
        cls(1).fit_path(_views(), 2)
    # a generator is read once, and every rank gets its fit
    fits = cls(1, random_state=0).fit_path(_views(), (r for r in (1, 2)))
    assert [f.n_components for f in fits] == [1, 2]


# ----------------------------------------------------------- kernel parameters
@pytest.mark.parametrize(
    ("kernel_params", "message"),
    [
        (
            [{}, {"gamma": -1.0}],
            r"^view 1: gamma must be None, 'scale' or a finite number > 0",
        ),
        (
            [{}, {"gamma": np.nan}],
            r"^view 1: gamma must be None, 'scale' or a finite number",
        ),
        (
            [{}, {"gamma": "a"}],
            r"^view 1: gamma must be None, 'scale' or a finite number",
        ),
        ([{}, {"sigma": 1.0}], r"^kernel_params of view 1 has unknown key\(s\)"),
        ([{}, 0.5], r"^kernel_params of view 1 must be a dict"),
    ],
    ids=["negative", "nan", "string", "unknown-key", "not-a-dict"],
)
@pytest.mark.parametrize("cls", [KTCCA, KCCA], ids=_ids)
def test_kernel_params_are_checked_per_view(cls, kernel_params, message):
    m = MULTIVIEW[cls]
    params = [*kernel_params, {}][:m]
    with pytest.raises(ValueError, match=message):
        cls(1, kernel="rbf", kernel_params=params).fit(_views(m))

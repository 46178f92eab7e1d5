"""Parameter checks declared next to each estimator (``_parameter_constraints``).

Every estimator lists what each of its parameters may be, in one style, and ``fit`` starts by checking them: a
bad value is a ValueError that names the parameter, says what it must be and what it
got.
"""

from __future__ import annotations

import numpy as np
import pytest

from tcca_core import KTCCA, TCCA
from tcca_core._validation import Interval, Options, validate_params
from tcca_core.baselines import CCA, CCALS, DSE, KCCA, SSMVD
from tcca_core.learners import KNN, RLS, KernelRLS

ESTIMATORS = [TCCA, KTCCA, CCA, KCCA, CCALS, DSE, SSMVD, RLS, KernelRLS, KNN]
# checked against the data in fit (1 <= r <= N - 1), not declared
DATA_DEPENDENT = {DSE: {"n_components"}, SSMVD: {"n_components"}}


@pytest.mark.parametrize("cls", ESTIMATORS, ids=lambda c: c.__name__)
def test_every_parameter_is_declared(cls):
    params = set(cls._get_param_names())
    declared = set(cls._parameter_constraints)
    assert declared <= params, declared - params
    assert params - declared == DATA_DEPENDENT.get(cls, set())


def _instance(cls):
    return cls(2) if cls in (DSE, SSMVD) else cls()


@pytest.mark.parametrize("cls", ESTIMATORS, ids=lambda c: c.__name__)
def test_defaults_pass_and_a_bad_value_is_named(cls):
    est = _instance(cls)
    est._validate_params()
    for name in cls._parameter_constraints:
        bad = est.__class__(**{**est.get_params(), name: object()})
        with pytest.raises(ValueError, match=rf"^{name} must be .*, got <object"):
            bad._validate_params()


def test_fit_checks_first(make_views):
    views, y = make_views(n=40, dims=(3, 4), seed=0)
    with pytest.raises(ValueError, match="eps must be a finite number >= 0, got -1"):
        CCA(eps=-1).fit(views)
    with pytest.raises(ValueError, match="center must be True or False, got 'yes'"):
        CCALS(center="yes").fit(views)
    with pytest.raises(ValueError, match="gamma must be a finite number > 0, got 0"):
        RLS(gamma=0).fit(views[0], y)
    with pytest.raises(ValueError, match="view_embedding must be one of 'pca'"):
        DSE(2, view_embedding="umap").fit(views)
    with pytest.raises(ValueError, match="lambda2 must be a finite number >= 0"):
        SSMVD(2).fit_transform_grid(views, [2], lambdas=[(0.0, np.inf)])


def test_constraint_objects():
    c = {
        "n": [Interval("integer", 1, None), None],
        "x": [Interval("real", 0, 1, closed="right")],
        "s": [Options("a", "b")],
    }
    assert validate_params({"n": np.int64(3), "x": 1, "s": "a"}, c) == {
        "n": 3,
        "x": 1.0,
        "s": "a",
    }
    assert validate_params({"n": None}, c) == {"n": None}
    for bad, msg in [
        ({"n": True}, "n must be an integer >= 1 or None, got True"),
        ({"n": 1.5}, "n must be an integer >= 1 or None"),
        ({"x": 0}, "x must be a finite number > 0 and <= 1, got 0"),
        ({"x": np.nan}, "x must be a finite number > 0 and <= 1, got nan"),
        ({"s": "c"}, "s must be one of 'a', 'b', got 'c'"),
    ]:
        with pytest.raises(ValueError, match=msg.replace("(", r"\(")):
            validate_params(bad, c)


@pytest.mark.parametrize("cls", [TCCA, KTCCA], ids=lambda c: c.__name__)
def test_the_solver_options_are_the_estimators(cls):
    """Each field of SolverParams is a parameter of TCCA and KTCCA, with the same
    default, and what the estimator's fit hands down is that one value."""
    import inspect
    from dataclasses import fields

    from tcca_core.solver.params import SolverParams

    signature = inspect.signature(cls.__init__).parameters
    for f in fields(SolverParams):
        assert f.name in signature, f"{cls.__name__} lacks the solver option {f.name}"
        assert signature[f.name].default == f.default, f.name
        assert cls._parameter_constraints[f.name] == f.metadata["constraints"]
    assert SolverParams.of(cls()) == SolverParams()
    got = SolverParams.of(cls(eps=np.float32(0.5), max_iter=np.int64(7), n_init=3))
    assert (type(got.eps), type(got.max_iter), got.n_init) == (float, int, 3)
    with pytest.raises(ValueError, match=r"^tol must be .*, got -1"):
        SolverParams.of(cls(tol=-1))

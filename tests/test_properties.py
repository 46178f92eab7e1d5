"""Property-based tests: bad or awkward input never gives silent garbage.

For every estimator and any input drawn below (m = 2..6 views, tiny N, float32/64,
int, bool, dense, CSR, CSC or nested lists, NaN/inf, constant or duplicated columns,
rank-one views, constant views, mismatched sample counts, 1-D or 3-D arrays,
n_components beyond the bound), the estimator either

(a) returns arrays of the documented shape whose values (and fitted attributes)
    are all finite, or
(b) raises a ValueError whose message names the problem.

Warnings other than sklearn's ConvergenceWarning are errors; a fit emits at most
one ConvergenceWarning, and it names the iteration count.

Examples are derandomized so that CI is deterministic; shapes are tiny.
"""

from __future__ import annotations

import os
import warnings
from dataclasses import dataclass, field

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from sklearn.exceptions import ConvergenceWarning
from threadpoolctl import threadpool_limits

from tcca_core import KTCCA, TCCA
from tcca_core.baselines import CCA, CCALS, DSE, KCCA, SSMVD
from tcca_core.learners import KNN, RLS, KernelRLS
from tcca_core.solver.params import max_cp_rank


@pytest.fixture(autouse=True)
def _one_thread():
    """Tiny inputs: one BLAS and one OpenMP thread (sklearn's kNN otherwise spins
    up a thread pool per query, 50 ms each on a busy machine)."""
    with threadpool_limits(limits=1):
        yield


# TCCA_PROPERTY_SCALE=k runs k times more examples, randomized (for bug hunting);
# the default (1) is the quick, derandomized CI run.
_SCALE = int(os.environ.get("TCCA_PROPERTY_SCALE", "1"))


def _settings(n):
    return settings(
        max_examples=n * _SCALE,
        deadline=None,
        derandomize=_SCALE == 1,
        database=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )


# ----------------------------------------------------------------- input strategies
DTYPES = ("float64", "float32", "int", "bool")
STRUCTURES = (
    "generic",
    "generic",
    "generic",
    "generic",
    "scaled",
    "constant_column",
    "duplicated_column",
    "rank_one",
    "constant_view",
)
FORMATS = ("dense", "dense", "csr", "csc", "list")
# Problems the library must reject, with the words its message must contain.
PROBLEMS = {
    "nan": ("NaN",),
    "inf": ("infinity",),
    "samples": ("same number of samples",),
    "ndim1": ("2-D",),
    "ndim3": ("2-D",),
    "too_few_samples": ("at least 2 samples",),
    "no_features": ("no features",),
    "one_view": ("at least 2 views",),
    "complex": ("complex",),
    "timedelta": ("timedelta",),
    "huge": ("overflow",),
}


@dataclass
class Case:
    views: list
    N: int
    dims: list[int]
    problem: str | None
    structures: list[str] = field(default_factory=list)
    bad: int = 0  # the view that carries the problem
    dtypes: list[str] = field(default_factory=list)

    @property
    def generic(self):
        """Float views without planted degeneracy and enough samples: every
        estimator must fit these (no constant, duplicated or rank-one structure)."""
        return (
            self.problem is None
            and self.N >= 4
            and all(s in ("generic", "scaled") for s in self.structures)
            and all(d.startswith("float") for d in self.dtypes)
        )

    @property
    def m(self):
        return len(self.views)


def _make_view(rng, N, d, dtype, structure):
    if dtype == "bool":
        X = rng.random((N, d)) < 0.5
    elif dtype == "int":
        X = rng.integers(-3, 4, size=(N, d))
    else:
        X = rng.standard_normal((N, d))
        if structure == "scaled":
            X = X * 10.0 ** rng.integers(-4, 5, size=d)
        X = X.astype(dtype)
    if structure == "constant_column":
        X[:, rng.integers(d)] = 1
    elif structure == "duplicated_column" and d > 1:
        i, j = rng.choice(d, 2, replace=False)
        X[:, j] = X[:, i]
    elif structure == "rank_one":
        a = (rng.random(N) < 0.5) if dtype == "bool" else rng.integers(-2, 3, N)
        b = (rng.random(d) < 0.5) if dtype == "bool" else rng.integers(-2, 3, d)
        X = np.outer(a, b).astype(X.dtype)
    elif structure == "constant_view" and N:
        X[:] = X[0]
    return X


def _format(X, fmt):
    if fmt == "csr":
        return sp.csr_matrix(X)
    if fmt == "csc":
        return sp.csc_matrix(X)
    if fmt == "list":
        return X.tolist()
    return X


@st.composite
def cases(draw, m_min=2, m_max=6, n_max=40, d_max=8, problems=True):
    """A multi-view input, possibly with one problem the library must reject."""
    m = draw(st.integers(m_min, m_max))
    N = draw(st.integers(2, n_max))
    dims = draw(st.lists(st.integers(1, d_max), min_size=m, max_size=m))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    problem = None
    if problems and draw(st.integers(0, 3)) == 0:
        problem = draw(st.sampled_from(sorted(PROBLEMS)))
    if problem == "too_few_samples":
        N = draw(st.integers(0, 1))
    structures = [draw(st.sampled_from(STRUCTURES)) for _ in dims]
    dtypes = [draw(st.sampled_from(DTYPES)) for _ in dims]
    formats = [draw(st.sampled_from(FORMATS)) for _ in dims]
    bad = draw(st.integers(0, m - 1))  # the view that carries the problem
    views = []
    for p, (d, s, dt, fmt) in enumerate(zip(dims, structures, dtypes, formats)):
        X = _make_view(rng, N, d, dt, s)
        if p == bad:
            if problem in ("nan", "inf"):
                X = X.astype(np.float64)
                X[rng.integers(N), rng.integers(d)] = (
                    np.nan if problem == "nan" else -np.inf
                )
            elif problem == "samples":
                X = (
                    X[: N - 1]
                    if N > 2 and rng.random() < 0.5
                    else np.vstack([X, X[:1]])
                )
            elif problem == "ndim1":
                X, fmt = X[:, 0], "dense"
            elif problem == "ndim3":
                X, fmt = X[:, :, None], "dense"
            elif problem == "no_features":
                X = X[:, :0]
            elif problem == "complex":
                X = X + 1j
            elif problem == "timedelta":
                X, fmt = X.astype(np.int64).astype("m8[s]"), "dense"
            elif problem == "huge":  # squares overflow float64
                X = X.astype(np.float64)
                X[rng.integers(N), rng.integers(d)] = 1e160
        if fmt == "list" and X.shape[0] == 0:
            fmt = "dense"  # [] is 1-D: no way to say "0 rows of d features"
        views.append(_format(X, fmt))
    if problem == "one_view":
        views = views[:1]
    return Case(views, N, dims, problem, structures, bad, dtypes)


# ------------------------------------------------------------------------- checks
def _run(fn):
    """Call fn(); return (result, ValueError or None, warnings)."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            return fn(), None, caught
        except ValueError as exc:
            return None, exc, caught


# the ALS outcomes a ConvergenceWarning may report (a moment tensor at rounding level,
# as below, gives noise for errors: its ALS can end "broke down")
ALS_OUTCOMES = ("max_iter=", "broke down", "diverged")


def _check_warnings(caught, iteration_words=ALS_OUTCOMES):
    other = [w for w in caught if not issubclass(w.category, ConvergenceWarning)]
    assert not other, [f"{w.category.__name__}: {w.message}" for w in other]
    conv = [
        str(w.message) for w in caught if issubclass(w.category, ConvergenceWarning)
    ]
    assert len(conv) <= 1, conv
    for msg in conv:
        assert any(word in msg for word in iteration_words), msg


def _finite(*arrays):
    for a in arrays:
        a = np.asarray(a, dtype=np.float64)
        assert np.all(np.isfinite(a)), a


def check_outcome(case, fn, shape, *, allowed=(), must_fit=False):
    """The contract: finite output of ``shape``, or a ValueError naming the problem.

    ``allowed``: message fragments of errors legitimately raised on valid input
    (e.g. "n_components" beyond a data-dependent bound). ``must_fit``: valid input
    for which no error is acceptable.
    """
    out, err, caught = _run(fn)
    _check_warnings(caught)
    if case.problem is not None:
        assert err is not None, f"{case.problem!r} was not rejected"
        words = PROBLEMS[case.problem]
        assert any(w in str(err) for w in words), (case.problem, str(err))
        return None
    if err is not None:
        assert not must_fit, f"valid input rejected: {err}"
        event(f"rejected valid input: {str(err)[:60]}")
        assert any(w in str(err) for w in allowed), f"unexpected error: {err!r}"
        return None
    assert out is not None
    Z = np.asarray(out)
    assert Z.shape == shape, (Z.shape, shape)
    _finite(Z)
    return out


def _n_components(draw, bound, case):
    """Mostly within the bound, sometimes beyond it (or 0), unless the input has
    a problem of its own: then within the bound, so that only that one is wrong."""
    if case.problem is not None:
        return draw(st.integers(1, max(bound, 1)))
    return draw(st.integers(0, max(bound, 1) + 2))


def _assert_r_error(r, bound, err):
    if r < 1:
        assert "n_components must be an integer >= 1" in str(err)
    else:
        assert f"n_components={r} is too large" in str(err), str(err)


# -------------------------------------------------------------------------- TCCA
@_settings(100)
@given(case=cases(), data=st.data())
def test_tcca_finite_output_or_named_error(case, data):
    algorithm = data.draw(st.sampled_from(["dense", "implicit", "tensorly"]))
    if algorithm == "tensorly" and np.prod(case.dims) > 4096:
        algorithm = "dense"
    bound = max_cp_rank(max(case.N, 1), case.dims)[0]
    r = _n_components(data.draw, bound, case)
    est = TCCA(
        r,
        max_iter=data.draw(st.integers(1, 15)),
        tol=1e-6,
        algorithm=algorithm,
        random_state=0,
    )
    valid_r = 1 <= r <= bound
    if case.problem is None and not valid_r:
        out, err, caught = _run(lambda: est.fit(case.views))
        _check_warnings(caught)
        assert err is not None
        _assert_r_error(r, bound, err)
        return
    out = check_outcome(
        case,
        lambda: est.fit_transform(case.views),
        (case.N, case.m * r),
        allowed=("constant", "ALS failed"),
        must_fit=case.generic,
    )
    if out is not None:
        _finite(
            est.weights_,
            est.correlations_,
            est.reconstruction_errors_,
            *est.projections_,
            *est.factors_,
        )


def test_tcca_non_convergence_warns_once_with_the_iteration_count():
    rng = np.random.default_rng(0)
    views = [rng.standard_normal((30, d)) for d in (3, 4, 5)]
    for algorithm in ("dense", "implicit", "tensorly"):
        est = TCCA(2, max_iter=1, tol=1e-12, algorithm=algorithm, random_state=0)
        _, err, caught = _run(lambda est=est: est.fit(views))
        assert err is None
        conv = [w for w in caught if issubclass(w.category, ConvergenceWarning)]
        assert len(caught) == len(conv) == 1, [str(w.message) for w in caught]
        assert "max_iter=1" in str(conv[0].message)
        assert not est.converged_ and est.n_iter_ == 1
        # tol=0 asks for exactly max_iter sweeps: nothing to warn about.
        est = TCCA(2, max_iter=1, tol=0, algorithm=algorithm, random_state=0)
        _, err, caught = _run(lambda est=est: est.fit(views))
        assert err is None and not caught


def test_tcca_names_a_constant_view_and_a_vanishing_moment_tensor():
    rng = np.random.default_rng(0)
    views = [
        rng.standard_normal((10, 3)),
        np.ones((10, 2)),
        rng.standard_normal((10, 2)),
    ]
    for est in (TCCA(1), KTCCA(1, kernel="rbf")):
        _, err, _ = _run(lambda est=est: est.fit(views))
        assert err is not None and "view 1 is constant" in str(err)
    # N = 2, m = 3: the centered samples are opposite, every third moment cancels.
    views = [rng.standard_normal((2, d)) for d in (1, 4, 1)]
    for algorithm in ("dense", "implicit", "tensorly"):
        out, err, caught = _run(
            lambda a=algorithm: TCCA(1, algorithm=a, random_state=0).fit_transform(
                views
            )
        )
        _check_warnings(caught)
        if err is None:
            _finite(out)
        else:
            assert "ALS failed" in str(err) and "moment tensor is zero" in str(err)


def test_tcca_svd_start_with_a_constant_column():
    for seed, algorithm in ((0, "implicit"), (2, "dense")):
        rng = np.random.default_rng(seed)
        views = [rng.standard_normal((30, 3)) for _ in range(3)]
        views[-1][:, 0] = 1.0
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            Z = TCCA(4, algorithm=algorithm, random_state=0).fit_transform(views)
        _finite(Z)


# ------------------------------------------------------------------------- KTCCA
@_settings(60)
@given(case=cases(n_max=25), data=st.data())
def test_ktcca_finite_output_or_named_error(case, data):
    kernel = data.draw(st.sampled_from(["linear", "rbf", "l2", "chi2"]))
    bound = max(case.N, 1)
    r = _n_components(data.draw, bound, case)
    est = KTCCA(
        r,
        kernel=kernel,
        max_iter=data.draw(st.integers(1, 10)),
        algorithm="implicit",
        random_state=0,
    )
    if case.problem is None and not 1 <= r <= bound:
        _, err, caught = _run(lambda: est.fit(case.views))
        _check_warnings(caught)
        assert err is not None
        _assert_r_error(r, bound, err)
        return
    out = check_outcome(
        case,
        lambda: est.fit_transform(case.views),
        (case.N, case.m * r),
        # A kernel of badly scaled features is nearly constant or nearly the
        # identity; K^2 + eps K is then singular to rounding, and named as such.
        allowed=("constant", "ALS failed", "non-negative", "not positive definite"),
        must_fit=case.generic and kernel != "chi2" and "scaled" not in case.structures,
    )
    if out is not None:
        _finite(est.weights_, est.correlations_, *est.dual_coef_)


def test_ktcca_non_convergence_warns_once_with_the_iteration_count():
    rng = np.random.default_rng(0)
    views = [rng.standard_normal((20, d)) for d in (3, 4, 5)]
    est = KTCCA(2, kernel="linear", max_iter=1, tol=1e-12, random_state=0)
    _, err, caught = _run(lambda: est.fit(views))
    assert err is None
    assert len(caught) == 1 and issubclass(caught[0].category, ConvergenceWarning)
    assert "max_iter=1" in str(caught[0].message)


# ----------------------------------------------------------- CCA, KCCA (two views)
@_settings(60)
@given(case=cases(m_min=2, m_max=3), data=st.data())
def test_cca_finite_output_or_named_error(case, data):
    r = _n_components(data.draw, min(case.dims[:2] + [case.N]), case)
    est = CCA(r)
    if case.problem is None and case.m != 2:
        # one problem at a time: the parameters are checked first (a valid r here)
        _, err, _ = _run(lambda: CCA(max(r, 1)).fit(case.views))
        assert err is not None and "exactly 2 views" in str(err)
        return
    check_outcome(
        case,
        lambda: est.fit_transform(case.views),
        (case.N, 2 * r),
        allowed=("n_components", "constant"),
        must_fit=case.generic and 1 <= r <= min(case.dims + [case.N - 1]),
    )
    if r >= 1 and hasattr(est, "correlations_"):
        _finite(est.correlations_, *est.projections_)


@_settings(60)
@given(case=cases(m_min=2, m_max=2, n_max=25), data=st.data())
def test_kcca_finite_output_or_named_error(case, data):
    kernel = data.draw(st.sampled_from(["linear", "rbf", "l2", "chi2"]))
    r = _n_components(data.draw, case.N - 1, case)
    est = KCCA(r, kernel=kernel)
    check_outcome(
        case,
        lambda: est.fit_transform(case.views),
        (case.N, 2 * r),
        allowed=("n_components", "zero", "non-negative"),
    )
    if hasattr(est, "dual_coef_"):
        _finite(est.correlations_, *est.dual_coef_)


# ------------------------------------------------------------------------- CCA-LS
@_settings(60)
@given(case=cases(), data=st.data())
def test_ccals_finite_output_or_named_error(case, data):
    r = _n_components(data.draw, min(case.dims + [case.N]), case)
    est = CCALS(r)
    check_outcome(
        case,
        lambda: est.fit_transform(case.views),
        (case.N, case.m * r),
        allowed=("n_components", "constant"),
        must_fit=case.generic and 1 <= r <= min(case.dims + [case.N - 1]),
    )
    if hasattr(est, "projections_"):
        _finite(est.correlations_, est.eigenvalues_, *est.projections_)


# ------------------------------------------------------------------ DSE and SSMVD
@_settings(40)
@given(case=cases(n_max=25), data=st.data())
def test_dse_finite_output_or_named_error(case, data):
    r = _n_components(data.draw, case.N - 1, case)
    est = DSE(
        r,
        view_embedding=data.draw(st.sampled_from(["pca", "spectral"])),
        n_neighbors=data.draw(st.integers(1, 6)),
        pca_components=data.draw(st.integers(1, 4)),
        random_state=0,
    )
    check_outcome(
        case,
        lambda: est.fit_transform(case.views),
        (case.N, r),
        allowed=("n_components", "n_neighbors"),
    )


@_settings(50)
@given(case=cases(n_max=25), data=st.data())
def test_ssmvd_finite_output_or_named_error(case, data):
    r = _n_components(data.draw, case.N - 1, case)
    est = SSMVD(
        r,
        lambda1=data.draw(st.sampled_from([0.0, 1e-2, 1.0, 3.0])),
        lambda2=data.draw(st.sampled_from([0.0, 1e-2, 1.0])),
        max_iter=data.draw(st.integers(1, 10)),
        random_state=0,
    )
    check_outcome(
        case,
        lambda: est.fit_transform(case.views),
        (case.N, r),
        allowed=("n_components",),
    )


# ----------------------------------------------------------------------- learners
@st.composite
def labelled(draw):
    """(case, y): the learner sees ``case.views[0]`` and labels ``y`` of length N."""
    case = draw(cases(m_min=2, m_max=2, n_max=30))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    n_classes = draw(st.integers(1, 4))
    y = rng.integers(0, n_classes, size=case.N)
    if case.N >= 2 and n_classes >= 2:
        y[:2] = [0, 1]  # at least two classes present
    label_kind = draw(st.sampled_from(["int", "str", "bool"]))
    if label_kind == "str":
        y = np.array([f"c{v}" for v in y])
    elif label_kind == "bool" and n_classes <= 2:
        y = y.astype(bool)
    return case, y


# What a learner must say about a problem in its X (view 0).
LEARNER_PROBLEMS = {
    "nan": ("NaN",),
    "inf": ("infinity",),
    "ndim1": ("2-D",),
    "ndim3": ("2-D",),
    "samples": ("rows",),
    "no_features": ("no features",),
    "complex": ("complex",),
    "timedelta": ("timedelta",),
    "huge": ("overflow",),
}


def _learner_check(
    case, y, fit_predict, *, needs_two_classes=True, problems=LEARNER_PROBLEMS
):
    X = case.views[0]
    problem = case.problem if case.bad == 0 else None
    out, err, caught = _run(lambda: fit_predict(X, y))
    _check_warnings(caught)
    n_classes = np.unique(y).size
    if problem in problems:
        assert err is not None, problem
        assert any(w in str(err) for w in problems[problem]), str(err)
        return
    if case.N == 0:
        assert err is not None and "no samples" in str(err), err
        return
    if needs_two_classes and n_classes < 2:
        assert err is not None, "fitted on fewer than 2 classes"
        assert "2 classes" in str(err) or "no samples" in str(err), str(err)
        return
    assert err is None, f"valid input rejected: {err!r}"
    scores = np.asarray(out)
    assert scores.shape[0] == case.N
    if needs_two_classes:
        assert scores.shape == ((case.N,) if n_classes == 2 else (case.N, n_classes))
    _finite(scores)


@_settings(60)
@given(data=labelled())
def test_rls_finite_scores_or_named_error(data):
    case, y = data

    def fit_predict(X, y):
        est = RLS().fit(X, y)
        assert set(est.predict(X)) <= set(np.unique(y))
        return est.decision_function(X)

    _learner_check(case, y, fit_predict)


def _linear_kernel(X):
    """X X^T, keeping X's problems visible (complex stays complex, and so on)."""
    if sp.issparse(X):
        X = X if X.dtype.kind == "c" else X.astype(np.float64)  # bool saturates
        return (X @ X.T).toarray()
    A = np.asarray(X)
    if A.ndim != 2 or A.dtype.kind not in "biufc":
        return A
    # float64: a float32 product of features ~1e4 is not PSD to its rounding
    A = A if A.dtype.kind == "c" else A.astype(np.float64)
    with np.errstate(all="ignore"):  # inf or huge entries: the kernel holds NaN/inf
        return A @ A.T


@_settings(50)
@given(data=labelled())
def test_kernel_rls_finite_scores_or_named_error(data):
    case, y = data

    def fit_predict(X, y):
        K = _linear_kernel(X)
        est = KernelRLS().fit(K, y)
        assert set(est.predict(K)) <= set(np.unique(y))
        return est.decision_function(K)

    if case.bad == 0 and case.problem == "samples":
        return  # a mismatched X gives a non-square kernel, tested below
    # The learner sees K = X X^T: X without features gives a valid (zero) kernel.
    problems = {k: v for k, v in LEARNER_PROBLEMS.items() if k != "no_features"}
    problems["huge"] = ("infinity", "overflow")  # X X^T may overflow already
    _learner_check(case, y, fit_predict, problems=problems)


def test_kernel_rls_rejects_a_non_square_or_indefinite_kernel():
    _, err, _ = _run(lambda: KernelRLS().fit(np.ones((4, 3)), [0, 1, 0, 1]))
    assert err is not None and "square" in str(err)
    K = -10 * np.eye(4)
    _, err, caught = _run(lambda: KernelRLS().fit(K, [0, 1, 0, 1]))
    assert err is not None and "positive semidefinite" in str(err)
    assert not caught


@_settings(40)
@given(data=labelled())
def test_knn_predicts_known_labels_or_named_error(data):
    case, y = data

    def fit_predict(X, y):
        est = KNN(n_neighbors=3).fit(X, y)
        labels = est.predict(X)
        assert set(labels) <= set(np.unique(y))
        return est.predict_proba(X)

    _learner_check(case, y, fit_predict, needs_two_classes=False)


# ---------------------------------------------------------------------- transform
TRANSFORM_PROBLEMS = {
    "nan": ("NaN",),
    "features": ("features",),
    "views": ("views",),
    "ndim1": ("2-D",),
    "complex": ("complex",),
}


@_settings(40)
@given(case=cases(m_max=4, n_max=20, problems=False), data=st.data())
def test_transform_of_new_samples_is_finite_or_a_named_error(case, data):
    """Fit on clean data; new samples (any count, even 1) are projected finitely,
    and bad new samples are rejected by name."""
    name = data.draw(st.sampled_from(["TCCA", "KTCCA", "CCA", "KCCA", "CCALS"]))
    views = case.views[:2] if name in ("CCA", "KCCA") else case.views
    m = len(views)
    est = {
        "TCCA": lambda: TCCA(1, max_iter=5, tol=0, random_state=0),
        "KTCCA": lambda: KTCCA(1, kernel="rbf", max_iter=5, tol=0, random_state=0),
        "CCA": lambda: CCA(1),
        "KCCA": lambda: KCCA(1, kernel="rbf"),
        "CCALS": lambda: CCALS(1),
    }[name]()
    _, err, caught = _run(lambda: est.fit(views))
    _check_warnings(caught)
    if err is not None:  # degenerate training data (constant view, ...)
        assert any(w in str(err) for w in ("constant", "zero", "ALS failed")), err
        return
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1)))
    n_new = data.draw(st.integers(1, 5))
    new = [rng.standard_normal((n_new, case.dims[p])) for p in range(m)]
    problem = data.draw(st.sampled_from([None, None, *TRANSFORM_PROBLEMS]))
    bad = data.draw(st.integers(0, m - 1))
    if problem == "nan":
        new[bad][0, 0] = np.nan
    elif problem == "features":
        new[bad] = rng.standard_normal((n_new, case.dims[bad] + 1))
    elif problem == "views":
        new = new[:-1] if m > 2 else [*new, new[0]]
    elif problem == "ndim1":
        new[bad] = new[bad][:, 0]
    elif problem == "complex":
        new[bad] = new[bad] + 1j
    Z, err, caught = _run(lambda: est.transform(new))
    _check_warnings(caught)
    if problem is None:
        assert err is None, err
        assert Z.shape == (n_new, m)
        _finite(Z)
    else:
        assert err is not None, problem
        words = TRANSFORM_PROBLEMS[problem]
        assert any(w in str(err) for w in words), (problem, str(err))

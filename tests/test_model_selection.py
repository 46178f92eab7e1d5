"""scikit-learn model selection for the multi-view estimators.

- ``score``: the mean correlation of the fitted components on the given views
  (tcca_core._multiview), checked against direct formulas;
- ``get_feature_names_out`` and ``set_output`` (stacked and per-view output);
- ``tcca_core.model_selection`` (cca-zoo's interface on lists of views);
- ``tcca_core.compose``: MultiViewAdapter under ``check_estimator`` (every check
  runs; the skipped ones are listed in SKIPPED_CHECKS with their reasons) and
  ViewSplitter in a Pipeline tuned by scikit-learn's own GridSearchCV;
- the example ``examples/model_selection.py``.
"""

from __future__ import annotations

import runpy
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp
from numpy.testing import assert_allclose
from sklearn.base import clone
from sklearn.exceptions import ConvergenceWarning, SkipTestWarning
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import GridSearchCV as SkGridSearchCV
from sklearn.model_selection import cross_val_score as sk_cross_val_score
from sklearn.pipeline import make_pipeline
from sklearn.utils import estimator_checks as ec
from sklearn.utils.estimator_checks import check_estimator

from tcca_core import KTCCA, TCCA
from tcca_core.baselines import CCA, CCALS, KCCA
from tcca_core.compose import MultiViewAdapter, ViewSplitter, stack_views
from tcca_core.model_selection import (
    GridSearchCV,
    RandomizedSearchCV,
    cross_val_score,
    cross_validate,
    high_order_correlations,
    pairwise_correlations,
    validation_curve,
    variate_correlations,
)

pytestmark = pytest.mark.usefixtures("single_blas_thread")

ROOT = Path(__file__).resolve().parents[1]


def skewed_views(n=150, dims=(6, 5, 4), rank=1, noise=0.5, seed=0, signal=False):
    """Views sharing a skewed signal S (the third-order moment sees it)."""
    rng = np.random.default_rng(seed)
    S = rng.exponential(size=(n, rank)) - 1.0
    views = [
        S @ rng.standard_normal((rank, d)) + noise * rng.standard_normal((n, d))
        for d in dims
    ]
    return (views, S) if signal else views


def independent_views(n=150, dims=(6, 5, 4), seed=1):
    rng = np.random.default_rng(seed)
    return [rng.exponential(size=(n, d)) for d in dims]


ESTIMATORS = {
    "TCCA": (lambda: TCCA(1, random_state=0), 3),
    "KTCCA": (lambda: KTCCA(1, random_state=0), 3),
    "CCA": (lambda: CCA(1), 2),
    "KCCA": (lambda: KCCA(1), 2),
    "CCALS": (lambda: CCALS(1), 3),
}


def _views_for(name, **kw):
    make, m = ESTIMATORS[name]
    return make(), skewed_views(**kw)[:m]


# --------------------------------------------------------------------------- score


def test_high_order_correlation_formula():
    rng = np.random.default_rng(0)
    Zs = [rng.standard_normal((40, 3)) * s + c for s, c in ((2, 1), (0.5, -3), (1, 0))]
    std = [(Z - Z.mean(0)) / Z.std(0) for Z in Zs]
    assert_allclose(high_order_correlations(Zs), np.mean(std[0] * std[1] * std[2], 0))
    # two views: the Pearson correlation, which the pairwise statistic also is
    pearson = [np.corrcoef(Zs[0][:, k], Zs[1][:, k])[0, 1] for k in range(3)]
    assert_allclose(high_order_correlations(Zs[:2]), pearson)
    assert_allclose(pairwise_correlations(Zs[:2]), pearson)
    pairs = [(0, 1), (0, 2), (1, 2)]
    mean_pair = [
        np.mean([np.corrcoef(Zs[p][:, k], Zs[q][:, k])[0, 1] for p, q in pairs])
        for k in range(3)
    ]
    assert_allclose(pairwise_correlations(Zs), mean_pair)
    # a constant column counts as 0, without a warning (RuntimeWarning is an error)
    Zs[1][:, 2] = 7.0
    assert high_order_correlations(Zs)[2] == 0.0


def test_score_on_training_data_is_the_fitted_criterion():
    """With eps = 0 the training variates have unit variance, so the score on the
    training views is the mean |correlations_| (TCCA: rho_k; CCA: sigma_k)."""
    views = skewed_views(rank=2)
    est = TCCA(2, eps=0.0, random_state=0).fit(views)
    assert_allclose(est.score(views), np.mean(np.abs(est.correlations_)), rtol=1e-8)
    cca = CCA(2, eps=0.0).fit(views[:2])
    assert_allclose(cca.score(views[:2]), np.mean(cca.correlations_), rtol=1e-8)
    # CCA-LS's beta constrains the views' variances only on average (MAXVAR), so
    # it is near, not equal to, the mean pairwise Pearson correlation
    ls = CCALS(2, eps=0.0).fit(views)
    assert_allclose(ls.score(views), np.mean(ls.correlations_), rtol=1e-2)


@pytest.mark.parametrize("name", list(ESTIMATORS))
def test_score_separates_shared_signal_from_independent_views(name):
    est, views = _views_for(name)
    m = len(views)
    train = [V[:100] for V in views]
    test = [V[100:] for V in views]
    signal = clone(est).fit(train).score(test)
    noise_views = independent_views()[:m]
    noise = clone(est).fit([V[:100] for V in noise_views])
    noise_score = noise.score([V[100:] for V in noise_views])
    assert signal > 0.5
    assert abs(noise_score) < 0.35 < signal


def test_score_sign_follows_training_and_scale_does_not_matter():
    views = skewed_views()
    est = TCCA(1, random_state=0).fit(views)
    rho = variate_correlations(est, views)
    assert rho[0] > 0
    # rescaling a held-out view changes the variates' scale, not the score
    scaled = [views[0] * 10.0, *views[1:]]
    assert_allclose(est.score(scaled), est.score(views))
    with pytest.raises(ValueError, match="at least 2 samples"):
        est.score([V[:1] for V in views])


# ------------------------------------------------------- feature names, set_output


@pytest.mark.parametrize("name", list(ESTIMATORS))
def test_feature_names_and_set_output(name):
    est, views = _views_for(name)
    est.fit(views)
    names = est.get_feature_names_out()
    prefix = name.lower()
    assert list(names[:2]) == [f"{prefix}_view0_0", f"{prefix}_view1_0"]
    Z = est.transform(views)
    assert len(names) == Z.shape[1]
    est.set_output(transform="pandas")
    df = est.transform(views)
    assert isinstance(df, pd.DataFrame)
    assert list(df.columns) == list(names)
    assert_allclose(df.to_numpy(), Z)
    per_view = est.transform(views, per_view=True)
    assert [list(d.columns) for d in per_view] == [
        [f"{prefix}_view{p}_0"] for p in range(len(views))
    ]
    assert isinstance(est.fit_transform(views), pd.DataFrame)
    assert isinstance(est.score(views), float)
    est.set_output(transform="default")
    assert isinstance(est.transform(views), np.ndarray)


def test_set_output_keeps_a_dataframes_index_and_checks_input_features():
    views = skewed_views()
    frames = [pd.DataFrame(V, index=np.arange(100, 250)) for V in views]
    est = TCCA(1, random_state=0).set_output(transform="pandas").fit(frames)
    assert list(est.transform(frames).index[:2]) == [100, 101]
    est.get_feature_names_out([list("abcdef"), list("abcde"), list("abcd")])
    with pytest.raises(ValueError, match="one sequence of names per view"):
        est.get_feature_names_out([list("abc"), list("abcde"), list("abcd")])


def test_set_output_polars():
    pl = pytest.importorskip("polars")
    views = skewed_views()
    out = TCCA(1, random_state=0).set_output(transform="polars").fit_transform(views)
    assert isinstance(out, pl.DataFrame)


# ------------------------------------------------------------ model selection


def test_sklearn_on_a_list_of_views_fails_and_ours_works():
    """Plain scikit-learn takes the list of views for samples; ours takes views."""
    views = skewed_views()
    y = np.zeros(150)
    with pytest.raises(
        ValueError, match=r"inconsistent numbers of samples: \[3, 150\]"
    ):
        sk_cross_val_score(TCCA(1), views, y, cv=3)
    scores = cross_val_score(TCCA(1, random_state=0), views, cv=3)
    assert scores.shape == (3,) and np.all(scores > 0.5)


@pytest.mark.parametrize("name", list(ESTIMATORS))
def test_cross_val_score_every_estimator(name):
    est, views = _views_for(name)
    scores = cross_val_score(est, views, cv=3)
    assert scores.shape == (3,) and np.all(np.isfinite(scores))


def test_grid_search_reports_the_estimators_own_names():
    views = skewed_views(rank=2)
    search = GridSearchCV(
        TCCA(2, random_state=0), {"eps": [1e-3, 1.0], "n_components": [1, 2]}, cv=3
    ).fit(views)
    assert set(search.best_params_) == {"eps", "n_components"}
    assert {"param_eps", "param_n_components"} <= set(search.cv_results_)
    assert all(set(p) == {"eps", "n_components"} for p in search.cv_results_["params"])
    best = search.best_estimator_
    assert isinstance(best, TCCA)
    assert best.eps == search.best_params_["eps"]
    assert_allclose(search.transform(views), best.transform(views))
    assert_allclose(search.score(views), best.score(views))
    # the mean correlation falls as weaker components are added
    assert search.best_params_["n_components"] == 1


def test_grid_search_picks_regularization_for_cca_with_few_samples():
    """Few samples and many features: eps ~ 0 overfits (held-out correlation low)."""
    rng = np.random.default_rng(0)
    z = rng.standard_normal((60, 1))
    views = [
        z + 2 * rng.standard_normal((60, 25)),
        z + 2 * rng.standard_normal((60, 25)),
    ]
    search = GridSearchCV(CCA(1), {"eps": [1e-6, 1.0, 100.0]}, cv=3).fit(views)
    scores = dict(
        zip(search.cv_results_["param_eps"], search.cv_results_["mean_test_score"])
    )
    assert search.best_params_["eps"] > 1e-6
    assert scores[1e-6] < scores[search.best_params_["eps"]] - 0.1


def test_per_view_parameters_scoring_refit_and_randomized_search():
    views = [V[:90] for V in skewed_views()]
    est = KTCCA(1, kernel="rbf", kernel_params=[{}, {}, {}], random_state=0)
    search = GridSearchCV(
        est,
        {"kernel_params__1": [{"gamma": 0.01}, {"gamma": 1.0}], "kernel__2": ["l2"]},
        cv=3,
        scoring={"score": lambda e, v: e.score(v), "rho0": lambda e, v: e.score(v)},
        refit=lambda results: int(np.argmax(results["mean_test_rho0"])),
    ).fit(views)
    best = search.best_estimator_
    assert best.kernel == ["rbf", "rbf", "l2"]
    assert best.kernel_params[0] == {} and best.kernel_params[1]["gamma"] in (0.01, 1)
    assert "param_kernel_params__1" in search.cv_results_
    # the estimator given to the search is left as it was
    assert est.kernel == "rbf" and est.kernel_params == [{}, {}, {}]

    rs = RandomizedSearchCV(
        CCA(1), {"eps": [1e-3, 1e-2, 1e-1, 1.0]}, n_iter=2, cv=3, random_state=0
    ).fit(views[:2])
    assert set(rs.best_params_) == {"eps"}


def test_cross_validate_and_validation_curve():
    views = skewed_views()
    res = cross_validate(CCALS(1), views, cv=3, return_estimator=True)
    assert all(isinstance(e, CCALS) for e in res["estimator"])
    train, test = validation_curve(
        TCCA(1, random_state=0), views, "eps", [1e-2, 1], cv=3
    )
    assert train.shape == test.shape == (2, 3)
    with pytest.raises(ValueError, match="per-view parameter 'kernel': view index"):
        MultiViewAdapter(KTCCA(1), [6, 5, 4]).set_params(estimator__kernel__3="l2")


def test_supervised_selection_through_a_pipeline():
    """ViewSplitter: the views travel concatenated through scikit-learn's tools."""
    views, S = skewed_views(n=120, signal=True)
    y = (S[:, 0] > np.median(S[:, 0])).astype(int)
    X, sizes = stack_views(views)
    pipe = make_pipeline(
        ViewSplitter(sizes), TCCA(random_state=0), LogisticRegression()
    )
    search = SkGridSearchCV(pipe, {"tcca__n_components": [1, 2]}, cv=3).fit(X, y)
    assert search.best_score_ > 0.7
    # DataFrames are cut into DataFrames (names kept), sparse into CSR
    frame = pd.DataFrame(X, columns=[f"f{j}" for j in range(X.shape[1])])
    parts = ViewSplitter(sizes).fit_transform(frame)
    assert [list(p.columns) for p in parts][1] == ["f6", "f7", "f8", "f9", "f10"]
    assert all(sp.issparse(p) for p in ViewSplitter(3).fit_transform(sp.csr_matrix(X)))
    with pytest.raises(ValueError, match=r"add up to 14 columns, but X has 15"):
        ViewSplitter([6, 5, 3]).fit(X)


def test_fit_path_uses_the_instance_parameters():
    views = skewed_views(rank=2)
    fits = TCCA(eps=5.0, algorithm="dense", random_state=0).fit_path(views, [1, 2])
    assert [f.eps for f in fits] == [5.0, 5.0]
    assert [f.algorithm_ for f in fits] == ["dense", "dense"]
    assert_allclose(
        fits[1].correlations_,
        TCCA(2, eps=5.0, algorithm="dense", random_state=0).fit(views).correlations_,
    )


# ------------------------------------------------------------- check_estimator

# The checks check_estimator does not run on MultiViewAdapter, and why. Every other
# check it yields must pass.
SKIPPED_CHECKS = {
    "check_array_api_input": (
        "skipped by scikit-learn unless SCIPY_ARRAY_API=1; the estimators compute "
        "with NumPy/SciPy only (no array API support is claimed)"
    ),
}
# Checks that are not yielded at all for the adapter, by its tags and methods:
# sample-weight checks (fit takes no sample_weight), classifier / regressor /
# clusterer / outlier checks (it is an unsupervised transformer),
# check_nonsquare_error (not pairwise), check_sparsify_coefficients (no sparsify).

# With three views the checks that fit on 2-column data cannot cut 3 views; the
# estimator refuses with a clear message instead.
THREE_VIEW_FAILURES = {
    name: "the check's data have 2 columns: 3 views of >= 1 column cannot be cut"
    for name in (
        "check_estimators_overwrite_params",
        "check_estimators_fit_returns_self",
        "check_readonly_memmap_input",
        "check_fit_idempotent",
        "check_fit_check_is_fitted",
        "check_n_features_in",
    )
}


def _run_checks(estimator, expected_failed=None):
    with warnings.catch_warnings():
        # tiny random data: ALS may stop at max_iter; not what is checked here
        warnings.simplefilter("ignore", ConvergenceWarning)
        return check_estimator(
            estimator,
            expected_failed_checks=expected_failed,
            on_skip=None,
            on_fail=None,
        )


@pytest.mark.parametrize("name", list(ESTIMATORS))
def test_check_estimator_on_the_adapter(name):
    est = ESTIMATORS[name][0]()
    results = _run_checks(MultiViewAdapter(est, view_sizes=2))
    failed = [
        (r["check_name"], r["exception"]) for r in results if r["status"] == "failed"
    ]
    assert failed == []
    skipped = {r["check_name"] for r in results if r["status"] == "skipped"}
    assert skipped <= set(SKIPPED_CHECKS)
    ran = {r["check_name"] for r in results if r["status"] == "passed"}
    # the transformer and input-validation checks really ran
    assert {
        "check_transformer_general",
        "check_estimators_nan_inf",
        "check_estimator_sparse_matrix",
        "check_methods_subset_invariance",
        "check_fit_idempotent",
        "check_n_features_in_after_fitting",
        "check_estimators_pickle",
    } <= ran
    assert len(ran) >= 40


def test_check_estimator_three_views():
    results = _run_checks(
        # max_iter: random check data have no structure for ALS to converge to
        MultiViewAdapter(TCCA(1, max_iter=30, random_state=0), view_sizes=3),
        THREE_VIEW_FAILURES,
    )
    assert [r["check_name"] for r in results if r["status"] == "failed"] == []
    assert {r["check_name"] for r in results if r["status"] == "xfail"} == set(
        THREE_VIEW_FAILURES
    )


# Data-free API checks that apply to the list-of-views estimators themselves.
API_CHECKS = (
    "check_estimator_repr",
    "check_no_attributes_set_in_init",
    "check_estimator_tags_renamed",
    "check_valid_tag_types",
    "check_parameters_default_constructible",
    "check_get_params_invariance",
    "check_set_params",
    "check_mixin_order",
    "check_do_not_raise_errors_in_init_or_set_params",
)


@pytest.mark.parametrize("name", list(ESTIMATORS))
def test_multiview_tags_and_the_checks_that_apply(name):
    est = ESTIMATORS[name][0]()
    tags = est.__sklearn_tags__()
    assert tags.input_tags.two_d_array is False
    assert tags.target_tags.required is False
    # check_estimator sees the multi-view tags: it clones, then skips every check
    # that feeds one 2-D array, and says so
    with pytest.warns(SkipTestWarning, match="Can't test estimator"):
        results = check_estimator(est, on_fail=None)
    assert [(r["check_name"], r["status"]) for r in results] == [
        ("check_estimator_cloneable", "passed")
    ]
    for check in API_CHECKS:
        getattr(ec, check)(name, est)


# ------------------------------------------------------------------ the example


@pytest.mark.parametrize("module", ["compose", "model_selection", "_multiview"])
def test_docstring_examples(module):
    import doctest
    import importlib

    mod = importlib.import_module(f"tcca_core.{module}")
    result = doctest.testmod(mod, optionflags=doctest.NORMALIZE_WHITESPACE)
    assert result.failed == 0


def test_model_selection_example_runs():
    module = runpy.run_path(str(ROOT / "examples" / "model_selection.py"))
    out = module["main"](verbose=False)
    assert out["tcca"].best_params_["eps"] in (1e-4, 1e-2, 1.0, 1e2)
    assert np.all(out["cca"] > 0.8)
    assert out["supervised"].best_params_["tcca__n_components"] == 2
    assert out["supervised"].best_score_ > 0.8


def test_demo_runs_and_says_what_its_numbers_mean(capsys):
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the demo's fits, at the defaults, are fine
        runpy.run_path(str(ROOT / "examples" / "demo.py"), run_name="__main__")
    out = capsys.readouterr().out
    assert "not bounded by 1" in out
    assert "unit sum of squares" in out and "x N^(m/2)" in out
    assert "score" in out


def test_a_small_grid_search_raises_no_warning_where_the_fits_are_fine():
    """A 28-fit grid search on toy data (three views of 300 samples with a
    shared 2-D signal, as benchmarks/toy_gridsearch.py) raised 3 ConvergenceWarnings
    where cca-zoo raised none. Every fit here reaches the stopping rule."""
    rng = np.random.default_rng(0)
    z = rng.standard_normal((300, 2))
    views = [
        z @ rng.standard_normal((2, d)) + rng.standard_normal((300, d))
        for d in (12, 10, 8)
    ]
    grid = {"n_components": [2, 3, 4], "eps": [1e-3, 1e-2, 1e-1]}
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # any warning fails the test
        gs = GridSearchCV(TCCA(n_components=2, random_state=0), grid, cv=3)
        gs.fit(views)
    best = gs.best_estimator_
    assert best.converged_
    # the refit's CP error is the best the battery's starts reach on this problem
    alone = [
        TCCA(best.n_components, eps=best.eps, init="hosvd", n_init=1).fit(views),
        TCCA(best.n_components, eps=best.eps, n_init=10, random_state=1).fit(views),
    ]
    floor = min(a.reconstruction_errors_[-1] for a in alone)
    assert best.reconstruction_errors_[-1] <= floor * (1 + 5e-3)

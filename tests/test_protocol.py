"""Evaluation protocol: splits, the no-leak guarantee, selection and an end-to-end run."""

import json
import math

import numpy as np
import pandas as pd
import pytest
from numpy.testing import assert_allclose, assert_array_equal

from tcca_core.baselines import CCALS
from tcca_core.learners import RLS
from tcca_core.protocol import (
    METHODS,
    R_GRID_PAPER,
    RESULT_COLUMNS,
    Split,
    accuracy_by_r,
    make_splits,
    restrict_split,
    run_method,
    select,
    select_per_split,
    splits_from_labeled,
)

pytestmark = pytest.mark.usefixtures("single_blas_thread")

# Small grids keep every method fast on the fixture.
SMALL = {
    "cca_bst": {"eps": [1e-2, 1.0]},
    "cca_avg": {"eps": [1e-2, 1.0]},
    "cca_ls": {"eps": [1e-2, 1.0]},
    "tcca": {"eps": [1e-2, 1.0], "max_iter": 30, "tol": 1e-4},
    "tcca_nc": {"eps": [1e-2], "max_iter": 30, "tol": 1e-4},
    "ssmvd": {"lambda1": [0.0, 0.1], "lambda2": [0.0, 0.1]},
    "kcca_bst": {"eps": [1e-2, 1.0]},
    "kcca_avg": {"eps": [1e-2, 1.0]},
    "ktcca": {"eps": [1e-2, 1.0], "max_iter": 30, "tol": 1e-4},
}
KEY = [
    "method",
    "split",
    "r",
    "view",
    "pair",
    "eps",
    "lambda1",
    "lambda2",
    "k",
    "params",
]


@pytest.fixture
def data(make_views):
    views, y = make_views(n=120, dims=(6, 7, 8), n_classes=3, seed=7)
    return views, y, make_splits(y, n_labeled=30, n_splits=2, seed=0)


def test_r_grid_is_the_papers():
    assert R_GRID_PAPER[:3] == [5, 10, 15] and R_GRID_PAPER[19:22] == [100, 110, 120]
    assert R_GRID_PAPER[-3:] == [260, 280, 300] and len(R_GRID_PAPER) == 35


# --------------------------------------------------------------------- splits


def test_make_splits_partition_and_determinism():
    y = np.repeat([0, 1], 50)
    a = make_splits(y, n_labeled=10, n_splits=3, seed=4)
    b = make_splits(y, n_labeled=10, n_splits=3, seed=4)
    for s, t in zip(a, b):
        assert_array_equal(s.labeled, t.labeled)
        assert_array_equal(s.validation, t.validation)
    for i, s in enumerate(a):
        assert s.seed == 4 + i and s.index == i and s.fit is None
        rows = np.concatenate([s.labeled, s.validation, s.test])
        assert_array_equal(np.sort(rows), np.arange(100))  # disjoint and complete
        assert s.labeled.size == 10 and s.validation.size == 18  # 20% of 90
    assert not np.array_equal(a[0].labeled, a[1].labeled)


def test_make_splits_covers_every_class():
    y = np.zeros(300, int)
    y[:3] = 1  # a rare class: 3 of 300
    for s in make_splits(y, n_labeled=20, n_splits=5, seed=0):
        assert set(y[s.labeled]) == {0, 1}


def test_make_splits_per_class_and_pool():
    y = np.tile(np.arange(4), 50)
    pool = np.arange(100)
    for s in make_splits(y, per_class=3, pool=pool, n_splits=2, fit_on="pool"):
        assert_array_equal(np.bincount(y[s.labeled]), [3, 3, 3, 3])
        assert np.all(s.labeled < 100)
        # validation + test = the complement of the pool (the paper's test data)
        assert_array_equal(np.sort(np.r_[s.validation, s.test]), np.arange(100, 200))
        assert s.validation.size == 20
        assert_array_equal(s.fit, pool)


def test_make_splits_exclude_validation_and_official_splits():
    y = np.repeat([0, 1], 30)
    s = make_splits(y, n_labeled=6, n_splits=1, fit_on="exclude_validation")[0]
    assert_array_equal(s.fit, np.setdiff1d(np.arange(60), s.validation))
    (t,) = splits_from_labeled(y, [[0, 1, 30, 31]])
    assert_array_equal(t.labeled, [0, 1, 30, 31]) and t.validation.size == 11


def test_restrict_split_keeps_roles():
    y = np.repeat([0, 1], 100)
    s = make_splits(y, n_labeled=10, n_splits=1)[0]
    r = restrict_split(s, 50)
    assert r.validation.size + r.test.size == 50
    assert np.isin(r.validation, s.validation).all() and np.isin(r.test, s.test).all()
    assert_array_equal(r.fit, np.union1d(s.labeled, np.r_[r.validation, r.test]))


@pytest.mark.parametrize(
    "kw, match",
    [
        ({}, "exactly one"),
        ({"n_labeled": 3, "per_class": 1}, "exactly one"),
        ({"n_labeled": 1}, "cannot cover"),
        ({"per_class": 40}, "fewer than"),
        ({"n_labeled": 4, "val_fraction": 1.5}, "val_fraction"),
        ({"n_labeled": 4, "fit_on": "x"}, "fit_on"),
    ],
)
def test_make_splits_rejects_bad_arguments(kw, match):
    with pytest.raises(ValueError, match=match):
        make_splits(np.repeat([0, 1], 30), **kw)


# ----------------------------------------------------------------- run_method


LEAK_CASES = [
    ("bsf", "knn"),
    ("cat", "rls"),
    ("cca_bst", "rls"),
    ("cca_avg", "knn"),
    ("cca_avg", "rls"),
    ("cca_ls", "knn"),
    ("dse", "rls"),
    ("tcca", "rls"),
    ("bsk", "knn"),
    ("avg", "rls"),
    ("kcca_avg", "knn"),
]


@pytest.mark.parametrize("method, learner", LEAK_CASES)
def test_test_labels_never_reach_training_or_selection(data, method, learner):
    views, y, splits = data
    s = splits[0]
    bad = y.copy()
    rng = np.random.default_rng(1)
    bad[s.test] = rng.permutation(bad[s.test])
    bad[s.test[:5]] = 99  # even a class never seen in training
    kw = {"r_grid": [2, 4], "learner": learner, "params": SMALL.get(method)}
    a, b = (
        run_method(views, y, s, method, **kw),
        run_method(views, bad, s, method, **kw),
    )
    same = [c for c in RESULT_COLUMNS if c not in ("test_acc", "fit_s", "peak_mb")]
    pd.testing.assert_frame_equal(a[same], b[same])
    assert not np.allclose(a["test_acc"], b["test_acc"])
    # selection uses validation only: the same rows are picked
    cols = ["r", "eps", "k", "view", "pair"]
    pd.testing.assert_frame_equal(select_per_split(a)[cols], select_per_split(b)[cols])


def test_run_method_matches_a_manual_fit(data):
    views, y, splits = data
    s = splits[1]
    df = run_method(views, y, s, "cca_ls", r_grid=[3], params={"eps": 0.1})
    Z = CCALS(3, eps=0.1).fit_transform(views)
    pred = RLS(1e-2).fit(Z[s.labeled], y[s.labeled]).predict(Z)
    row = df.iloc[0]
    assert row["val_acc"] == np.mean(pred[s.validation] == y[s.validation])
    assert row["test_acc"] == np.mean(pred[s.test] == y[s.test])
    assert row["dim"] == 9 and row["n_fit"] == 120 and row["fit_shared"]
    assert json.loads(row["params"]) == {"eps": 0.1}


def test_fit_views_and_inductive_fit(data, make_views):
    views, y, splits = data
    s = splits[0]
    extra, _ = make_views(n=50, dims=(6, 7, 8), seed=11)
    df = run_method(
        views, y, s, "cca_ls", r_grid=[2], params={"eps": 0.1}, fit_views=extra
    )
    est = CCALS(2, eps=0.1).fit([np.vstack([X, E]) for X, E in zip(views, extra)])
    Z = est.transform(views)
    pred = RLS().fit(Z[s.labeled], y[s.labeled]).predict(Z[s.validation])
    assert df["val_acc"].iloc[0] == np.mean(pred == y[s.validation])
    assert df["n_fit"].iloc[0] == 170
    with pytest.raises(ValueError, match="cannot use extra unlabeled"):
        run_method(views, y, s, "dse", r_grid=[2], fit_views=extra)
    # inductive: the DR step sees only split.fit
    t = Split(s.labeled, s.validation, s.test, s.seed, 0, fit=np.arange(80))
    df = run_method(views, y, t, "cca_ls", r_grid=[2], params={"eps": 0.1})
    Z = CCALS(2, eps=0.1).fit([X[:80] for X in views]).transform(views)
    pred = RLS().fit(Z[s.labeled], y[s.labeled]).predict(Z[s.validation])
    assert df["val_acc"].iloc[0] == np.mean(pred == y[s.validation])
    assert df["n_fit"].iloc[0] == 80


def test_r_above_the_limit_is_recorded_as_capped(data):
    views, y, splits = data
    df = run_method(
        views, y, splits[0], "cca_bst", r_grid=[2, 7, 50], params={"eps": 0.1}
    )
    capped = df[df["r_capped"]]
    # pairs (0,1), (0,2): r_max = 6; pair (1,2): r_max = 7
    assert set(zip(capped["pair"], capped["r"])) == {
        ("0-1", 7),
        ("0-2", 7),
        ("0-1", 50),
        ("0-2", 50),
        ("1-2", 50),
    }
    assert capped["val_acc"].isna().all() and capped["test_acc"].isna().all()
    assert (df.loc[~df["r_capped"], "dim"] == 2 * df.loc[~df["r_capped"], "r"]).all()
    assert select_per_split(df)["r_capped"].eq(False).all()


@pytest.mark.parametrize("method", list(METHODS))
def test_every_method_rejects_bad_input(data, method):
    views, y, splits = data
    s = splits[0]
    bad = {
        "at least 2 views": ([views[0]], y),
        "same number of samples": ([views[0], views[1][:-1], views[2]], y),
        "NaN": ([views[0], np.where(views[1] > 1, np.nan, views[1]), views[2]], y),
        "y must have shape": (views, y[:-1]),
    }
    for match, (v, labels) in bad.items():
        with pytest.raises(ValueError, match=match):
            run_method(v, labels, s, method, r_grid=[2])
    if METHODS[method].has_r:
        with pytest.raises(ValueError, match="r must be an integer"):
            run_method(views, y, s, method, r_grid=[0])
    with pytest.raises(ValueError, match="has no parameter"):
        run_method(views, y, s, method, r_grid=[2], params={"gamma_typo": 1})


def test_run_method_rejects_bad_protocol_arguments(data):
    views, y, splits = data
    s = splits[0]
    with pytest.raises(ValueError, match="unknown method"):
        run_method(views, y, s, "pca")
    with pytest.raises(ValueError, match="learner"):
        run_method(views, y, s, "cat", learner="svm")
    overlap = Split(s.labeled, np.r_[s.validation, s.labeled[:1]], s.test, 0)
    with pytest.raises(ValueError, match="overlap"):
        run_method(views, y, overlap, "cat")


# ------------------------------------------------------------------ selection


def _results(rows):
    base = {c: math.nan for c in RESULT_COLUMNS}
    base.update(
        method="x", learner="rls", r_capped=False, k=pd.NA, view=pd.NA, pair=None
    )
    return pd.DataFrame([{**base, **r} for r in rows]).astype(
        {"r": "Int64", "k": "Int64"}
    )


def test_select_both_readings_with_documented_ties():
    rows = []
    for split, table in {
        0: [
            (5, 0.1, 0.8, 0.70),
            (5, 1.0, 0.8, 0.72),
            (10, 0.1, 0.8, 0.90),
            (10, 1.0, 0.6, 0.95),
        ],
        1: [
            (5, 0.1, 0.5, 0.60),
            (5, 1.0, 0.7, 0.65),
            (10, 0.1, 0.9, 0.80),
            (10, 1.0, 0.9, 0.85),
        ],
    }.items():
        rows += [
            dict(split=split, r=r, eps=e, val_acc=v, test_acc=t) for r, e, v, t in table
        ]
        rows.append(
            dict(
                split=split,
                r=20,
                eps=0.1,
                val_acc=math.nan,
                test_acc=math.nan,
                r_capped=True,
            )
        )
    res = _results(rows)
    per = select_per_split(res)
    assert per["r"].tolist() == [5, 10] and per["eps"].tolist() == [1.0, 1.0]
    out = select(res).iloc[0]
    assert_allclose(out["acc_val_mean"], (0.72 + 0.85) / 2)
    assert_allclose(out["acc_val_std"], abs(0.72 - 0.85) / np.sqrt(2))
    assert out["r_val"] == "5,10" and out["n_splits"] == 2
    assert_allclose(out["acc_best_r_mean"], (0.90 + 0.85) / 2)
    assert_allclose(out["acc_best_r_std"], abs(0.90 - 0.85) / np.sqrt(2))
    assert out["r_best"] == 10
    curve = accuracy_by_r(res)
    assert_allclose(curve["test_acc_mean"], [(0.72 + 0.65) / 2, (0.90 + 0.85) / 2])


def test_select_prefers_smaller_k_and_groups_extra_columns():
    rows = [
        dict(split=s, r=pd.NA, k=k, val_acc=0.5, test_acc=0.1 * k)
        for s in (0, 1)
        for k in (3, 1, 2)
    ]
    res = _results(rows)
    res["dataset"] = "toy"
    out = select(res)
    assert list(out["dataset"]) == ["toy"]
    assert_allclose(out["acc_val_mean"], 0.1)
    assert out["r_val"].iloc[0] == "NA,NA" and pd.isna(out["r_best"].iloc[0])


# ----------------------------------------------------------------- end to end


def test_end_to_end_all_methods(data):
    """Every registry method, 2 splits, 3 values of r -> one tidy table."""
    views, y, splits = data
    frames = []
    for name, spec in METHODS.items():
        learner = "knn" if spec.family == "kernel" else "rls"
        for s in splits:
            frames.append(
                run_method(
                    views,
                    y,
                    s,
                    name,
                    r_grid=[2, 4, 50],
                    learner=learner,
                    params=SMALL.get(name),
                    seed=s.seed,
                )
            )
    res = pd.concat(frames, ignore_index=True)
    assert set(res["method"]) == set(METHODS)
    assert list(res.columns) == list(RESULT_COLUMNS)
    assert not res.duplicated(KEY).any()
    ok = res[~res["r_capped"]]
    assert ok["val_acc"].between(0, 1).all() and ok["test_acc"].between(0, 1).all()
    assert (ok["fit_s"] >= 0).all() and (ok["peak_mb"] >= 0).all()
    for name, spec in METHODS.items():
        sub = res[res["method"] == name]
        assert set(sub["split"]) == {0, 1}
        if not spec.has_r:
            assert sub["r"].isna().all()
            continue
        assert set(sub["r"]) == {2, 4, 50}
        fine = sub[~sub["r_capped"]]
        m = {
            "cca_bst": 2,
            "cca_avg": 2,
            "kcca_bst": 2,
            "kcca_avg": 2,
            "cca_ls": 3,
            "tcca": 3,
            "tcca_nc": 3,
            "ktcca": 3,
            "dse": 1,
            "ssmvd": 1,
        }[name]
        assert (fine["dim"] == m * fine["r"]).all(), name
    # linear methods cannot reach r = 50 with d_p <= 8; the cap is recorded
    assert res[(res["method"] == "cca_ls") & (res["r"] == 50)]["r_capped"].all()
    table = select(res)
    assert len(table) == len(METHODS)
    assert table["acc_val_mean"].notna().all() and table["acc_val_std"].notna().all()


@pytest.mark.parametrize("method", ["bsk", "avg", "kcca_avg", "ktcca"])
def test_kernel_methods_inductive_path_matches_transductive(data, method):
    # split.fit = every row explicitly takes the cross-kernel path; same numbers.
    views, y, splits = data
    s = splits[0]
    t = Split(s.labeled, s.validation, s.test, s.seed, 0, fit=np.arange(len(y)))
    kw = {"r_grid": [3], "learner": "knn", "params": SMALL.get(method)}
    a, b = run_method(views, y, s, method, **kw), run_method(views, y, t, method, **kw)
    assert_allclose(a["val_acc"], b["val_acc"])
    assert_allclose(a["test_acc"], b["test_acc"])


def test_avg_vote_majority_then_vote_fractions():
    from tcca_core.protocol import _Context, _Out

    y = np.array([0, 1, 2, 0, 1, 2, 0])
    s = Split(np.arange(3), np.array([3]), np.array([4, 5, 6]), 0)
    ctx = _Context(y, s, "knn", 10, 1e-2)

    def out(labels, votes):
        return _Out(np.array([labels]), [1], votes=np.array([votes]))

    # row 0: majority 2 of 3 -> class 1; row 1: 1-1-1 tie -> largest summed fraction
    outs = [
        out([1, 0, 2, 2], [[0, 1, 0], [0.4, 0.3, 0.3], [0, 0, 1], [0, 0, 1]]),
        out([1, 1, 2, 0], [[0, 1, 0], [0.2, 0.5, 0.3], [0, 0, 1], [1, 0, 0]]),
        out([0, 2, 2, 1], [[1, 0, 0], [0.1, 0.1, 0.8], [0, 0, 1], [0, 1, 0]]),
    ]
    agg = ctx.aggregate(outs)
    # row 1 sums: class0 0.7, class1 0.9, class2 1.4 -> 2; row 3: 1-1-1, sums 1-1-1
    # -> lowest class index
    assert_array_equal(agg.labels[0], [1, 2, 2, 0])


def test_split_round_trips_through_a_dict():
    y = np.repeat([0, 1], 20)
    s = make_splits(y, n_labeled=4, n_splits=1, fit_on="exclude_validation")[0]
    t = Split.from_dict(json.loads(json.dumps(s.to_dict())))
    for a in ("labeled", "validation", "test", "fit"):
        assert_array_equal(getattr(s, a), getattr(t, a))
    assert (t.seed, t.index) == (s.seed, s.index)


def test_subset_option_of_transductive_methods(data):
    views, y, splits = data
    s = splits[0]
    df = run_method(views, y, s, "dse", r_grid=[2], params={"subset": 40})
    row = df.iloc[0]
    assert row["n_validation"] + row["n_test"] == 40
    assert row["n_fit"] == 30 + 40  # labeled + the subset
    assert json.loads(row["params"]) == {"subset": 40}
    with pytest.raises(ValueError, match="transductive"):
        run_method(views, y, s, "cca_ls", r_grid=[2], params={"subset": 40})


def test_split_without_seed_from_index_arrays(data):
    # As a pipeline rebuilds it from saved index arrays; restrict_split falls back on
    # the index for its seed, so the subset stays deterministic.
    views, y, splits = data
    s = splits[0]
    t = Split(labeled=s.labeled, validation=s.validation, test=s.test, index=1)
    a = run_method(views, y, t, "dse", r_grid=[2], params={"subset": 40})
    b = run_method(views, y, t, "dse", r_grid=[2], params={"subset": 40})
    pd.testing.assert_frame_equal(
        a.drop(columns=["fit_s", "peak_mb"]), b.drop(columns=["fit_s", "peak_mb"])
    )
    assert a["seed"].isna().all()


@pytest.mark.parametrize("method", ["cca_avg", "cca_ls", "tcca", "kcca_bst", "ktcca"])
def test_cache_shares_split_independent_fits(data, method, fit_calls):
    """With a cache the transductive fit runs once for both splits, and every
    accuracy equals that of the uncached runs; a different fit set is refitted."""
    views, y, splits = data
    kw = dict(r_grid=[2, 3], params=SMALL.get(method), seed=3)
    plain = [run_method(views, y, s, method, **kw) for s in splits]
    calls = fit_calls
    calls.clear()  # count from here on
    cache: dict = {}
    shared = [run_method(views, y, splits[0], method, cache=cache, **kw)]
    first = len(calls)
    assert first == len(cache) > 0
    shared.append(run_method(views, y, splits[1], method, cache=cache, **kw))
    assert len(calls) == first  # every fit of the second split came from the cache
    for a, b in zip(plain, shared, strict=True):
        cols = ["val_acc", "test_acc", "r", "k", "params"]
        pd.testing.assert_frame_equal(a[cols], b[cols])
    s = splits[0]
    inductive = Split(s.labeled, s.validation, s.test, s.seed, 0, fit=np.arange(80))
    run_method(views, y, inductive, method, cache=cache, **kw)
    assert len(calls) == 2 * first  # other fit rows: refitted


@pytest.mark.parametrize("method", ["dse", "ssmvd"])
def test_cache_shares_transductive_fits(data, method, fit_calls):
    """DSE/SSMVD embed the fit rows plus every evaluated row: on all rows that is
    the same fit in every split (Ads, mfeat), fitted once; on a per-split subset
    (SecStr's 10K) each split is fitted anew. Accuracies equal the uncached ones."""
    views, y, splits = data
    kw = dict(r_grid=[2, 3], params=SMALL.get(method), seed=3)
    plain = [run_method(views, y, s, method, **kw) for s in splits]
    calls = fit_calls
    calls.clear()  # count from here on
    cache: dict = {}
    shared = [run_method(views, y, s, method, cache=cache, **kw) for s in splits]
    assert len(calls) == len(cache) == 2  # one per r, none for the second split
    for a, b in zip(plain, shared, strict=True):
        cols = ["val_acc", "test_acc", "r", "k", "params"]
        pd.testing.assert_frame_equal(a[cols], b[cols])
    sub = {**(SMALL.get(method) or {}), "subset": 40}
    for s in splits:
        run_method(views, y, s, method, cache=cache, **{**kw, "params": sub})
    assert len(calls) == 2 + 2 * len(splits)  # other rows in each split: refitted
    assert len(cache) == 2  # and not stored: no other split or job can reuse them


def test_ssmvd_computes_its_patterns_once_per_job(data, monkeypatch):
    """SSMVD's per-view PCA patterns depend on neither r nor the lambdas: the runner
    computes them once (they also give r_max) for every r's fit. The rows equal
    those of fits that compute their own patterns, but for the timing columns, and
    every r's fit_s still includes the shared step (BENCHMARKS.md's time against r
    keeps its meaning: what one r's representation costs)."""
    import time

    import tcca_core.baselines._dse as dse
    import tcca_core.baselines._ssmvd as ssmvd_module

    views, y, splits = data
    kw = dict(r_grid=[2, 3, 50], params=SMALL["ssmvd"], seed=3)
    calls = []
    real_patterns = dse.view_patterns

    def slow_patterns(*args, **kwargs):
        calls.append(1)
        time.sleep(0.05)
        return real_patterns(*args, **kwargs)

    monkeypatch.setattr(dse, "view_patterns", slow_patterns)
    shared = run_method(views, y, splits[0], "ssmvd", **kw)
    assert len(calls) == 1
    fitted = shared[~shared["r_capped"]]
    assert set(fitted["r"]) == {2, 3} and shared[shared["r"] == 50]["r_capped"].all()
    assert (fitted["fit_s"] >= 0.05).all()  # each r is charged the shared step

    real_grid = ssmvd_module.SSMVD.fit_transform_grid

    def own_patterns(self, views, r_grid, lambdas=None, *, patterns=None):
        return real_grid(self, views, r_grid, lambdas)

    monkeypatch.setattr(ssmvd_module.SSMVD, "fit_transform_grid", own_patterns)
    calls.clear()
    per_r = run_method(views, y, splits[0], "ssmvd", **kw)
    assert len(calls) == 1 + 2  # the runner's, then each fitted r's own
    timing = ["fit_s", "peak_mb"]
    pd.testing.assert_frame_equal(
        shared.drop(columns=timing), per_r.drop(columns=timing)
    )

    # Spectral patterns have r columns: each r computes its own, nothing shared.
    monkeypatch.undo()
    monkeypatch.setattr(dse, "view_patterns", slow_patterns)
    calls.clear()
    params = {"lambda1": [0.1], "lambda2": [0.1], "view_embedding": "spectral"}
    spectral = run_method(views, y, splits[0], "ssmvd", **{**kw, "params": params})
    assert len(calls) == 3 and not spectral["r_capped"].any()


def test_uncentered_variants(data):
    """tcca_nc is TCCA(center=False); CCA's and CCA-LS's center option reaches them."""
    from tcca_core import TCCA

    views, y, splits = data
    s = splits[0]
    df = run_method(views, y, s, "tcca_nc", r_grid=[2], params={"eps": 0.1}, seed=3)
    assert json.loads(df["params"].iloc[0]) == {"center": False, "eps": 0.1}
    Z = TCCA(2, eps=0.1, center=False, random_state=3).fit_transform(views)
    pred = RLS().fit(Z[s.labeled], y[s.labeled]).predict(Z[s.validation])
    assert df["val_acc"].iloc[0] == np.mean(pred == y[s.validation])
    est = TCCA(2, eps=0.1, center=False, random_state=3).fit(views)
    assert all(np.all(mu == 0) for mu in est.means_)
    # raw second moments: shifting a view changes the fit unless it is centered
    shifted = [views[0] + 5.0, *views[1:]]
    a = CCALS(2, eps=0.1).fit(views).transform(views)
    b = CCALS(2, eps=0.1).fit(shifted).transform(shifted)
    assert_allclose(np.abs(a), np.abs(b), atol=1e-8)
    c = CCALS(2, eps=0.1, center=False).fit(shifted).transform(shifted)
    assert not np.allclose(np.abs(a), np.abs(c), atol=1e-3)
    df = run_method(
        views, y, s, "cca_avg", r_grid=[2], params={"eps": 0.1, "center": False}
    )
    assert json.loads(df["params"].iloc[0]) == {"center": False, "eps": 0.1}


def test_cache_recognizes_sparse_views_and_fit_views(data, fit_calls):
    """SecStr's case: sparse one-hot views plus extra fit rows. run_method copies
    sparse input while validating it, so the cache must key on the contents: the
    second split reuses the fit; other contents (one value changed) refit."""
    import scipy.sparse as sp

    views, y, splits = data
    sparse = [sp.csr_matrix((X > 0).astype(float)) for X in views]
    extra = [sp.csr_matrix(X[:40] < 0, dtype=float) for X in views]
    kw = dict(r_grid=[2, 3], params=SMALL["tcca"], seed=3, fit_views=extra)
    calls = fit_calls
    calls.clear()  # count from here on
    cache: dict = {}
    run_method(sparse, y, splits[0], "tcca", cache=cache, **kw)
    first = len(calls)
    assert first > 0
    run_method(sparse, y, splits[1], "tcca", cache=cache, **kw)
    assert len(calls) == first
    changed = [e.copy() for e in extra]
    changed[2][0, 0] = 1.0 - changed[2][0, 0]
    run_method(
        sparse, y, splits[1], "tcca", cache=cache, **{**kw, "fit_views": changed}
    )
    assert len(calls) == 2 * first


# ------------------------------------------------------------ learners and their grids


def test_each_learner_is_evaluated_over_its_own_grid(data):
    """RLS takes a gamma grid as kNN takes its k grid; validation picks among them."""
    views, y, splits = data
    s = splits[0]
    kw = {"r_grid": [3], "params": {"eps": 0.1}}
    base = run_method(views, y, s, "cca_ls", **kw)
    assert base["gamma"].tolist() == [1e-2] and base["k"].isna().all()
    grid = run_method(views, y, s, "cca_ls", gamma=[1e-2, 10.0], **kw)
    assert grid["gamma"].tolist() == [1e-2, 10.0]
    same = [c for c in RESULT_COLUMNS if c not in ("fit_s", "peak_mb")]
    pd.testing.assert_frame_equal(grid[same].iloc[[0]], base[same])
    Z = CCALS(3, eps=0.1).fit_transform(views)
    pred = RLS(10.0).fit(Z[s.labeled], y[s.labeled]).predict(Z)
    assert grid["val_acc"].iloc[1] == np.mean(pred[s.validation] == y[s.validation])
    assert grid["test_acc"].iloc[1] == np.mean(pred[s.test] == y[s.test])
    # learner_grid is the same for any learner: kNN on k in {1, 3} are those rows of
    # the default 1..10 run
    full = run_method(views, y, s, "cca_ls", learner="knn", **kw)
    some = run_method(views, y, s, "cca_ls", learner="knn", learner_grid=[1, 3], **kw)
    assert some["k"].tolist() == [1, 3] and some["gamma"].isna().all()
    picked = full[full["k"].isin([1, 3])].reset_index(drop=True)
    pd.testing.assert_frame_equal(some[same], picked[same])
    with pytest.raises(ValueError, match="learner must be one of 'rls', 'knn'"):
        run_method(views, y, s, "cat", learner="svm")


def test_the_registry_s_learner_grids_are_what_runs(data, monkeypatch):
    """Changing a learner's grid in the registry (docs/architecture.md's place for
    it) changes the rows: no default of run_method overrides it."""
    import dataclasses

    from tcca_core import registry

    views, y, splits = data
    kw = {"r_grid": [3], "params": {"eps": 0.1}}
    for name, grid in (("knn", (1, 4, 7)), ("rls", (1e-3, 1.0))):
        spec = dataclasses.replace(registry.LEARNERS[name], grid=grid)
        monkeypatch.setitem(registry.LEARNERS, name, spec)
        df = run_method(views, y, splits[0], "cca_ls", learner=name, **kw)
        assert df[spec.param].tolist() == list(grid)
    # the old keywords still change it per call
    df = run_method(views, y, splits[0], "cca_ls", learner="knn", k_max=2, **kw)
    assert df["k"].tolist() == [1, 2]


def test_select_prefers_the_larger_gamma_on_a_tie():
    res = _results(
        [
            {"split": 0, "r": 2, "gamma": 1e-2, "val_acc": 0.5, "test_acc": 0.1},
            {"split": 0, "r": 2, "gamma": 1.0, "val_acc": 0.5, "test_acc": 0.2},
            {"split": 0, "r": 2, "gamma": 1e2, "val_acc": 0.4, "test_acc": 0.9},
        ]
    )
    assert select_per_split(res)["gamma"].tolist() == [1.0]


@pytest.mark.parametrize("pair", [("cca_bst", "cca_avg"), ("kcca_bst", "kcca_avg")])
def test_bst_and_avg_share_their_pair_fits(data, pair, fit_calls):
    """CCA/KCCA (AVG) fits the very pairs of (BST): with one cache it refits none,
    and its accuracies equal those of an uncached run."""
    views, y, splits = data
    s = splits[0]
    bst, avg = pair
    kw = dict(r_grid=[2, 3], seed=3)
    plain = run_method(views, y, s, avg, params=SMALL.get(avg), **kw)
    cache: dict = {}
    run_method(views, y, s, bst, params=SMALL.get(bst), cache=cache, **kw)
    fitted, entries = len(fit_calls), len(cache)
    assert entries > 0
    shared = run_method(views, y, s, avg, params=SMALL.get(avg), cache=cache, **kw)
    assert len(fit_calls) == fitted and len(cache) == entries
    cols = ["val_acc", "test_acc", "r", "k", "params"]
    pd.testing.assert_frame_equal(plain[cols], shared[cols])


def test_kcca_runner_asks_for_the_grid_s_components_only(rng):
    """The runner's KCCA returns the largest r of the grid (the top-r route), the
    same leading components as the full solution."""
    from tcca_core.baselines._cca import KCCA
    from tcca_core.protocol.runners import _kcca_components

    N = 60
    Z = rng.standard_normal((N, 2))
    X1 = np.hstack([Z, rng.standard_normal((N, 6))]) @ rng.standard_normal((8, 8))
    X2 = np.hstack([Z, rng.standard_normal((N, 5))]) @ rng.standard_normal((7, 7))
    Ks = [X1 @ X1.T, X2 @ X2.T]

    class _R:
        r_grid = [2, 4]

    r = _kcca_components(_R, Ks)
    assert r == 4
    top = KCCA(n_components=r, eps=1e-2, kernel="precomputed").fit(Ks)
    full = KCCA(n_components=None, eps=1e-2, kernel="precomputed").fit(Ks)
    assert top.r_max_ == full.r_max_ == 7
    assert_allclose(top.correlations_, full.correlations_[:r], atol=1e-10)
    for a, b in zip(top.dual_coef_, full.dual_coef_, strict=True):
        assert_allclose(a, b[:, :r], atol=1e-8 * np.abs(b[:, :r]).max())

    class _Big:
        r_grid = [2, 300]

    assert _kcca_components(_Big, Ks) == 7  # never above the kernels' rank


@pytest.mark.parametrize("method", ["tcca", "ktcca"])
def test_solver_start_options_reach_the_path(data, method, monkeypatch):
    """warm_start and n_init are options of the TCCA/KTCCA grid points (the robustness
    overlays use them): they reach fit_path and are recorded in the params."""
    from tcca_core import KTCCA, TCCA

    views, y, splits = data
    cls = TCCA if method == "tcca" else KTCCA
    seen = []
    real = cls.fit_path

    def spy(self, views, ranks, *, warm_start=False):
        seen.append((warm_start, self.n_init))
        return real(self, views, ranks, warm_start=warm_start)

    monkeypatch.setattr(cls, "fit_path", spy)
    params = {"eps": [1e-2], "warm_start": [True], "n_init": [3], "max_iter": 30}
    kw = {"learner": "knn"} if method == "ktcca" else {}
    df = run_method(views, y, splits[0], method, r_grid=[2, 3], params=params, **kw)
    assert seen == [(True, 3)]
    assert all(json.loads(p)["warm_start"] is True for p in df["params"])


def test_the_runner_contract_stands_apart_from_run_method():
    """Runners import the contract (protocol.plugin), which knows nothing of
    run_method's machinery; the old homes of its names still import."""
    import ast
    from pathlib import Path

    import tcca_core.protocol as protocol
    from tcca_core.protocol import measure, plugin, run, runners

    for module in (plugin, measure):
        tree = ast.parse(Path(module.__file__).read_text())
        relative = {
            n.module
            for n in ast.walk(tree)
            if isinstance(n, ast.ImportFrom) and n.level
        }
        assert relative <= {"kernels", "measure"}, (module.__name__, relative)
    for name in ("Fit", "Inputs", "Rep"):
        assert getattr(run, name) is getattr(plugin, name) is getattr(runners, name)
    assert protocol._measure is run._measure is measure._measure
    assert protocol._add_costs is measure._add_costs
    assert protocol._Run is run._Run

"""tcca_core.stats against mathematics and independent references.

References: scipy.stats (ttest_rel, ttest_ind with equal_var=False, ttest_1samp with
one-sided alternatives) on raw samples; hand-worked Holm examples (Wikipedia's
"Holm-Bonferroni method" example, and R's p.adjust(..., "holm") worked by hand below);
Holm's step-down procedure written out as Holm (1979) states it; Hedges' g by hand.
statsmodels, where installed, is an extra reference (not a dependency).
"""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from numpy.testing import assert_allclose
from scipy import stats as sst

from tcca_core.stats import (
    bonferroni,
    hedges_g,
    holm,
    interval_from_bounds,
    paired_family,
    paired_interval,
    tost,
    tost_welch,
    welch,
)

# ------------------------------------------------------------------- Holm


def test_holm_wikipedia_example():
    """Four hypotheses, p = 0.01, 0.04, 0.03, 0.005 at alpha = 0.05.

    By hand: sorted 0.005, 0.01, 0.03, 0.04 times 4, 3, 2, 1 = 0.02, 0.03, 0.06,
    0.04; running max 0.02, 0.03, 0.06, 0.06. Holm rejects H4 and H1 only (the
    example's conclusion): 0.005 <= 0.05/4, 0.01 <= 0.05/3, 0.03 > 0.05/2.
    """
    adj = holm([0.01, 0.04, 0.03, 0.005])
    assert_allclose(adj, [0.03, 0.06, 0.06, 0.02], rtol=1e-12)
    assert list(adj <= 0.05) == [True, False, False, True]


def test_holm_p_adjust_example():
    """R: p.adjust(c(0.01, 0.02, 0.03, 0.04, 0.05), "holm") = 0.05 0.08 0.09 0.09 0.09.

    By hand: 5 x 0.01, 4 x 0.02, 3 x 0.03, 2 x 0.04, 1 x 0.05 = 0.05, 0.08, 0.09,
    0.08, 0.05, running max 0.05, 0.08, 0.09, 0.09, 0.09.
    """
    assert_allclose(
        holm([0.05, 0.04, 0.03, 0.02, 0.01]), [0.09, 0.09, 0.09, 0.08, 0.05]
    )


def test_holm_capped_at_one_and_nan_not_counted():
    adj = holm([0.5, np.nan, 0.4, 0.9])
    # m = 3 (the NaN is not tested): 3 x 0.4 = 1.2 -> 1, then max(1, 2 x 0.5) = 1
    assert np.isnan(adj[1])
    assert_allclose(adj[[0, 2, 3]], [1.0, 1.0, 1.0])
    assert_allclose(holm([0.2, np.nan]), [0.2, np.nan])
    assert holm([]).shape == (0,)
    assert np.isnan(holm([np.nan, np.nan])).all()


def _step_down_rejects(p, alpha):
    """Holm (1979) as stated: compare p_(j) with alpha / (m - j + 1), stop at the first
    that fails; the hypotheses before it are rejected."""
    m = len(p)
    order = np.argsort(p, kind="mergesort")
    rejected = np.zeros(m, bool)
    for j, i in enumerate(order):
        if p[i] <= alpha / (m - j):
            rejected[i] = True
        else:
            break
    return rejected


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.floats(0, 1, allow_nan=False).map(lambda x: round(x, 3)),
        min_size=1,
        max_size=24,
    )
)
def test_holm_is_the_step_down_procedure(p):
    """adj_i <= alpha exactly when the step-down procedure rejects H_i at alpha < 1."""
    p = np.array(p)
    adj = holm(p)
    m = p.size
    # every alpha where the decision can change, and points between them
    cuts = np.unique(np.concatenate([p * k for k in range(1, m + 1)]))
    alphas = np.unique(np.concatenate([cuts, (cuts[:-1] + cuts[1:]) / 2, [1e-9]]))
    # alpha < 1: the cap at 1 makes every adjusted value "reject" at alpha = 1
    for alpha in alphas[alphas < 1 - 1e-9]:
        # a relative margin keeps the comparison off rounding at the cut points
        exp = _step_down_rejects(p, alpha * (1 + 1e-12))
        assert np.array_equal(adj <= alpha * (1 + 1e-12), exp), alpha


@settings(max_examples=200, deadline=None)
@given(st.lists(st.floats(0, 1, allow_nan=False), min_size=1, max_size=30))
def test_holm_properties(p):
    p = np.array(p)
    adj = holm(p)
    assert (adj >= p - 1e-15).all()  # never below the raw p-value
    assert (adj <= bonferroni(p) + 1e-15).all()  # never above Bonferroni
    assert (adj <= 1).all()
    order = np.argsort(p, kind="mergesort")
    assert (np.diff(adj[order]) >= 0).all()  # monotone in the sorted order
    # equal raw p-values get equal adjusted values
    for v in np.unique(p):
        assert np.ptp(adj[p == v]) == 0


def test_bonferroni():
    assert_allclose(bonferroni([0.01, 0.04, 0.3, np.nan]), [0.03, 0.12, 0.9, np.nan])


@pytest.mark.parametrize(
    "bad", [[0.1, 1.2], [-0.1], [[0.1, 0.2]], ["a"]], ids=["above1", "neg", "2d", "str"]
)
def test_holm_rejects_bad_input(bad):
    with pytest.raises(ValueError):
        holm(bad)


def test_holm_against_statsmodels():
    multitest = pytest.importorskip("statsmodels.stats.multitest")
    rng = np.random.default_rng(3)
    p = rng.uniform(0, 0.2, 24)
    assert_allclose(holm(p), multitest.multipletests(p, method="holm")[1])


# ---------------------------------------------------------- paired interval


@pytest.mark.parametrize("n", [2, 5, 30])
@pytest.mark.parametrize("level", [0.9, 0.95, 0.99])
def test_paired_interval_matches_ttest_rel(n, level):
    rng = np.random.default_rng(n)
    a = rng.normal(60, 2, n)
    b = a - rng.normal(0.8, 1.5, n)
    res = paired_interval(a, b, level=level)
    ref = sst.ttest_rel(a, b)
    ci = ref.confidence_interval(confidence_level=level)
    assert_allclose(res.t, ref.statistic, rtol=1e-12)
    assert_allclose(res.p, ref.pvalue, rtol=1e-10)
    assert res.df == ref.df == n - 1
    assert_allclose([res.low, res.high], [ci.low, ci.high], rtol=1e-12)
    assert_allclose(res.mean, np.mean(a - b), rtol=1e-12)
    assert_allclose(res.std, np.std(a - b, ddof=1), rtol=1e-12)
    assert res.n == n and res.level == level


def test_paired_interval_by_hand():
    """d = 1, 2, 3: mean 2, s = 1, SE = 1/sqrt(3), t = 2 sqrt(3), df = 2."""
    res = paired_interval([3, 4, 5], [2, 2, 2])
    t975 = 4.302652729911275  # t_{0.975, 2}, from tables
    assert_allclose(res.t, 2 * math.sqrt(3))
    assert_allclose([res.low, res.high], [2 - t975 / math.sqrt(3), 2 + t975 / 3**0.5])
    # two-sided p of t = 2 sqrt(3) with 2 df: 1 - t / sqrt(t^2 + 2) (closed form for df 2)
    t = 2 * math.sqrt(3)
    assert_allclose(res.p, 1 - t / math.sqrt(t**2 + 2), rtol=1e-12)


def test_paired_interval_constant_differences():
    res = paired_interval([1.0, 2.0, 3.0], [1.0, 2.0, 3.0])
    assert (res.mean, res.low, res.high, res.p, res.t) == (0.0, 0.0, 0.0, 1.0, 0.0)
    res = paired_interval([2.0, 3.0, 4.0], [1.0, 2.0, 3.0])
    assert (res.low, res.high, res.p, res.t) == (1.0, 1.0, 0.0, math.inf)


@pytest.mark.parametrize(
    "a, b, kw",
    [
        ([1.0], [2.0], {}),
        ([1.0, 2.0], [1.0], {}),
        ([1.0, np.nan], [1.0, 2.0], {}),
        ([1.0, 2.0], [1.0, 3.0], {"level": 1.0}),
    ],
)
def test_paired_interval_rejects_bad_input(a, b, kw):
    with pytest.raises(ValueError):
        paired_interval(a, b, **kw)


# -------------------------------------------------------------------- Welch


@pytest.mark.parametrize("n1, n2", [(5, 5), (5, 30), (3, 12)])
@pytest.mark.parametrize("ddof", [1, 0])
def test_welch_from_summaries_matches_ttest_ind(n1, n2, ddof):
    rng = np.random.default_rng(n1 * 100 + n2)
    x1 = rng.normal(62.0, 1.3, n1)
    x2 = rng.normal(57.5, 2.5, n2)
    res = welch(
        x1.mean(),
        x1.std(ddof=ddof),
        n1,
        x2.mean(),
        x2.std(ddof=ddof),
        n2,
        ddof=ddof,
    )
    ref = sst.ttest_ind(x1, x2, equal_var=False)
    assert_allclose(res.t, ref.statistic, rtol=1e-12)
    assert_allclose(res.p, ref.pvalue, rtol=1e-10)
    assert_allclose(res.df, ref.df, rtol=1e-12)
    assert_allclose(res.diff, x1.mean() - x2.mean(), rtol=1e-12)


def test_welch_scipy_from_stats():
    """scipy's own summary-statistics route (stds with ddof = 1)."""
    res = welch(62.36, 1.27, 5, 57.49, 1.36, 5)
    ref = sst.ttest_ind_from_stats(62.36, 1.27, 5, 57.49, 1.36, 5, equal_var=False)
    assert_allclose([res.t, res.p], [ref.statistic, ref.pvalue], rtol=1e-12)


def test_welch_equal_spreads_is_student():
    """n1 = n2 and s1 = s2: Welch's df is 2n - 2 and t is Student's t."""
    res = welch(1.0, 2.0, 5, 0.0, 2.0, 5)
    assert_allclose(res.df, 8.0)
    assert_allclose(res.t, 1.0 / math.sqrt(2 * 4.0 / 5))
    ref = sst.ttest_ind_from_stats(1.0, 2.0, 5, 0.0, 2.0, 5, equal_var=True)
    assert_allclose(res.p, ref.pvalue, rtol=1e-12)


def test_welch_mixed_ddof_and_degenerate():
    # a population std of group 1 only: convert it, then Welch
    r = welch(1.0, 1.0, 5, 0.0, 2.0, 5, ddof=(0, 1))
    s1 = math.sqrt(5 / 4)
    assert_allclose(r.se, math.sqrt(s1**2 / 5 + 4 / 5))
    zero = welch(1.0, 0.0, 5, 1.0, 0.0, 5)
    assert (zero.t, zero.p) == (0.0, 1.0) and math.isnan(zero.df)
    apart = welch(2.0, 0.0, 5, 1.0, 0.0, 5)
    assert (apart.t, apart.p) == (math.inf, 0.0)
    for bad in ({"ddof": 2}, {"ddof": (1,)}):
        with pytest.raises(ValueError):
            welch(1.0, 1.0, 5, 0.0, 1.0, 5, **bad)
    with pytest.raises(ValueError):
        welch(1.0, -1.0, 5, 0.0, 1.0, 5)
    with pytest.raises(ValueError):
        welch(1.0, 1.0, 1, 0.0, 1.0, 5)


# ---------------------------------------------------------------- Hedges' g


def test_hedges_g_by_hand():
    """SecStr 84K TCCA: the paper 62.36 +- 1.27 against ours 57.49 +- 1.36, n = 5.

    s_p = sqrt((4 x 1.27^2 + 4 x 1.36^2) / 8) = sqrt(1.73125);
    J(8) = Gamma(4) / (2 Gamma(3.5)) = 6 / (2 x 15 sqrt(pi) / 8) = 8 / (5 sqrt(pi)).
    """
    sp = math.sqrt((4 * 1.27**2 + 4 * 1.36**2) / 8)
    J = 8 / (5 * math.sqrt(math.pi))
    assert_allclose(J, 0.9027033336764101, rtol=1e-12)
    g = hedges_g(62.36, 1.27, 5, 57.49, 1.36, 5)
    assert_allclose(g, J * (62.36 - 57.49) / sp, rtol=1e-12)
    # the usual approximation J ~ 1 - 3 / (4 nu - 1) is within 1e-3 here
    assert abs(g / ((1 - 3 / 31) * (62.36 - 57.49) / sp) - 1) < 1e-3


def test_hedges_g_from_samples_and_symmetry():
    rng = np.random.default_rng(7)
    x1, x2 = rng.normal(0, 1, 6), rng.normal(1, 2, 9)
    nu = 6 + 9 - 2
    sp = math.sqrt((np.sum((x1 - x1.mean()) ** 2) + np.sum((x2 - x2.mean()) ** 2)) / nu)
    J = math.gamma(nu / 2) / (math.sqrt(nu / 2) * math.gamma((nu - 1) / 2))
    g = hedges_g(x1.mean(), x1.std(ddof=1), 6, x2.mean(), x2.std(ddof=1), 9)
    assert_allclose(g, J * (x1.mean() - x2.mean()) / sp, rtol=1e-12)
    g0 = hedges_g(x1.mean(), x1.std(), 6, x2.mean(), x2.std(), 9, ddof=0)
    assert_allclose(g0, g, rtol=1e-12)
    assert_allclose(
        hedges_g(x2.mean(), x2.std(ddof=1), 9, x1.mean(), x1.std(ddof=1), 6), -g
    )
    assert hedges_g(1.0, 0.0, 5, 1.0, 0.0, 5) == 0.0
    assert hedges_g(1.0, 0.0, 5, 0.0, 0.0, 5) == math.inf


# ---------------------------------------------------------------------- TOST


@pytest.mark.parametrize("n", [5, 30])
@pytest.mark.parametrize("shift", [0.0, 0.4, -1.5])
@pytest.mark.parametrize("margin", [0.5, 1.0, 2.0])
def test_tost_is_two_one_sided_ttests(n, shift, margin):
    rng = np.random.default_rng([n, int(10 * shift) + 100])
    d = rng.normal(shift, 1.0, n)
    res = tost(d.mean(), d.std(ddof=1), n, margin)
    lo = sst.ttest_1samp(d, -margin, alternative="greater")
    hi = sst.ttest_1samp(d, margin, alternative="less")
    assert_allclose([res.t_lower, res.t_upper], [lo.statistic, hi.statistic])
    assert_allclose([res.p_lower, res.p_upper], [lo.pvalue, hi.pvalue], rtol=1e-10)
    assert_allclose(res.p, max(lo.pvalue, hi.pvalue), rtol=1e-10)
    assert res.df == n - 1 and res.margin == margin


@pytest.mark.parametrize("alpha", [0.05, 0.1])
def test_tost_equals_the_1_minus_2alpha_interval_rule(alpha):
    """Equivalent at alpha <=> the (1 - 2 alpha) t interval lies inside the margin."""
    rng = np.random.default_rng(11)
    for _ in range(200):
        n = int(rng.integers(3, 31))
        a = rng.normal(0, 1, n)
        b = a - rng.normal(rng.uniform(-1, 1), rng.uniform(0.2, 2), n)
        ci = paired_interval(a, b, level=1 - 2 * alpha)
        margin = float(rng.uniform(0.2, 2))
        res = tost(ci.mean, ci.std, ci.n, margin)
        inside = -margin < ci.low and ci.high < margin
        if min(abs(ci.low + margin), abs(ci.high - margin)) > 1e-9:
            assert (res.p < alpha) == inside


def test_tost_degenerate_and_bad_input():
    assert tost(0.3, 0.0, 5, 1.0).p == 0.0
    assert tost(1.3, 0.0, 5, 1.0).p == 1.0
    for args in ((0.0, 1.0, 5, 0.0), (0.0, -1.0, 5, 1.0), (0.0, 1.0, 1, 1.0)):
        with pytest.raises(ValueError):
            tost(*args)


@pytest.mark.parametrize("n1,n2", [(5, 5), (5, 30), (12, 7)])
@pytest.mark.parametrize("shift", [0.0, 0.6, -2.0])
def test_tost_welch_is_two_one_sided_welch_tests(n1, n2, shift):
    """Against scipy's Welch test on raw samples shifted by the margin."""
    rng = np.random.default_rng([n1, n2, int(10 * shift) + 50])
    x, y = rng.normal(shift, 1.0, n1), rng.normal(0.0, 2.0, n2)
    margin = 1.0
    res = tost_welch(x.mean(), x.std(ddof=1), n1, y.mean(), y.std(ddof=1), n2, margin)
    lo = sst.ttest_ind(x + margin, y, equal_var=False, alternative="greater")
    hi = sst.ttest_ind(x - margin, y, equal_var=False, alternative="less")
    assert_allclose([res.t_lower, res.t_upper], [lo.statistic, hi.statistic])
    assert_allclose([res.p_lower, res.p_upper], [lo.pvalue, hi.pvalue], rtol=1e-9)
    assert_allclose(res.p, max(lo.pvalue, hi.pvalue), rtol=1e-9)
    assert_allclose(res.df, welch(x.mean(), x.std(ddof=1), n1, y.mean(),
                                  y.std(ddof=1), n2).df)  # fmt: skip


def test_tost_welch_degenerate_and_bad_input():
    assert tost_welch(1.0, 0.0, 5, 0.5, 0.0, 5, 1.0).p == 0.0
    assert tost_welch(2.0, 0.0, 5, 0.5, 0.0, 5, 1.0).p == 1.0
    with pytest.raises(ValueError, match="margin"):
        tost_welch(1.0, 1.0, 5, 0.5, 1.0, 5, 0.0)
    # a population std converts as in welch: sd sqrt(n / (n - 1))
    a = tost_welch(1.0, 1.0, 5, 0.0, 1.0, 5, 2.0, ddof=0)
    b = tost_welch(1.0, math.sqrt(5 / 4), 5, 0.0, math.sqrt(5 / 4), 5, 2.0)
    assert_allclose(a.p, b.p)


# ------------------------------------------------------ families of intervals


@pytest.mark.parametrize("n", [5, 30])
def test_interval_from_bounds_recovers_the_interval(n):
    """From an interval's own (unrounded) bounds: the same SE, std, t and p."""
    rng = np.random.default_rng(n)
    a = rng.normal(0.3, 1.0, n)
    b = rng.normal(0.0, 1.0, n)
    ref = paired_interval(a, b)
    got = interval_from_bounds(ref.mean, ref.low, ref.high, n)
    assert_allclose([got.std, got.t, got.p], [ref.std, ref.t, ref.p], rtol=1e-10)
    assert (got.df, got.n, got.level) == (ref.df, ref.n, ref.level)
    # rounded to two decimals, as an output prints it: close, not exact
    rounded = interval_from_bounds(
        round(ref.mean, 2), round(ref.low, 2), round(ref.high, 2), n
    )
    assert_allclose(rounded.std, ref.std, rtol=0.05)
    with pytest.raises(ValueError, match="reversed"):
        interval_from_bounds(0.0, 1.0, -1.0, 5)
    zero = interval_from_bounds(0.5, 0.5, 0.5, 5)
    assert zero.p == 0.0 and zero.std == 0.0


def test_paired_family_holm_and_simultaneous_intervals():
    rng = np.random.default_rng(3)
    shifts = [0.0, 0.25, 0.5, 2.0]
    ivs = []
    for s in shifts:
        a = rng.normal(s, 1.0, 30)
        ivs.append(paired_interval(a, np.zeros(30)))
    rows = paired_family(ivs)
    m = len(ivs)
    assert_allclose([r.p_holm for r in rows], holm([iv.p for iv in ivs]))
    for r, iv in zip(rows, ivs, strict=True):
        # the Bonferroni interval is the t interval at level 1 - alpha / m
        half = sst.t.ppf(1 - 0.05 / (2 * m), iv.df) * iv.std / math.sqrt(iv.n)
        assert_allclose([r.low_sim, r.high_sim], [iv.mean - half, iv.mean + half])
        assert r.low_sim <= iv.low and iv.high <= r.high_sim
        assert r.side == (1 if iv.low > 0 else -1 if iv.high < 0 else 0)
        assert r.side_holm == (int(np.sign(iv.mean)) if r.p_holm < 0.05 else 0)
        # Holm never resolves what the raw interval leaves open
        assert r.side_holm in (0, r.side)
    assert paired_family([]) == []


def test_paired_family_holm_leaves_a_raw_verdict_open():
    """By hand: raw p = 0.01, 0.04 (m = 2): Holm 0.02, 0.04 -> both resolved; with a
    third p = 0.03: 0.03, 0.06, 0.06 -> only the first."""

    def iv(p, mean=1.0, n=30):
        t = sst.t.isf(p / 2, n - 1)
        se = abs(mean) / t
        half = sst.t.ppf(0.975, n - 1) * se
        return interval_from_bounds(mean, mean - half, mean + half, n)

    two = paired_family([iv(0.01), iv(0.04)])
    assert_allclose([r.p_holm for r in two], [0.02, 0.04], rtol=1e-9)
    assert [r.side_holm for r in two] == [1, 1]
    three = paired_family([iv(0.01), iv(0.04), iv(0.03, mean=-1.0)])
    assert_allclose([r.p_holm for r in three], [0.03, 0.06, 0.06], rtol=1e-9)
    assert [r.side for r in three] == [1, 1, -1]
    assert [r.side_holm for r in three] == [1, 0, 0]
    with pytest.raises(ValueError, match="alpha"):
        paired_family([iv(0.01)], alpha=1.5)

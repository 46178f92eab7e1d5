"""Small statistical tests for comparing accuracies.

The reproduction compares our accuracies with the paper's and methods with each
other, over a handful of random draws of the labeled set. These functions are the
tests it uses; numpy and scipy only, and no state.

- :func:`holm`, :func:`bonferroni`: adjusted p-values for a family of tests.
- :func:`paired_interval`: mean paired difference, its Student t interval and the
  paired t test (our methods over the same draws).
- :func:`welch`: Welch's two-sample t test from summary statistics (ours against
  the paper's mean +- std over its 5 splits).
- :func:`hedges_g`: standardized mean difference with the small-sample correction.
- :func:`tost`: paired equivalence test (two one-sided t tests) within a margin;
  :func:`tost_welch` the same from two groups' summaries (unpaired).
- :func:`interval_from_bounds`: a paired interval recovered from its printed bounds.
- :func:`paired_family`: a family of paired intervals with Holm's p-values and
  simultaneous (Bonferroni) intervals beside the raw ones.

**Standard deviations.** Every std taken or returned here is the sample std
(``ddof=1``, divisor n - 1) unless a function's ``ddof`` says otherwise. The paper
gives mean +- std over 5 splits without saying which std; we assume the sample std,
MATLAB's default ``std`` (the paper's experiments ran in MATLAB R2012b), and the
convention of our own tables (``tcca_core.protocol.selection``: ``ddof=1``).
:func:`welch` and :func:`hedges_g` take ``ddof=0`` for a population std; the
conversion is s = sd * sqrt(n / (n - 1)).

**What the intervals cover.** Our draws share one fixed pool of rows (the test sets of
different draws overlap), so a paired interval over draws speaks of the random choice
of the labeled rows on this data set, not of new data sets drawn from the same
source.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import NamedTuple

import numpy as np
from scipy import special
from scipy import stats as _st

__all__ = [
    "FamilyRow",
    "PairedInterval",
    "TostResult",
    "WelchResult",
    "bonferroni",
    "hedges_g",
    "holm",
    "interval_from_bounds",
    "paired_family",
    "paired_interval",
    "tost",
    "tost_welch",
    "welch",
]


# ------------------------------------------------------------------- helpers


def _finite(x: float, name: str) -> float:
    try:
        v = float(x)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a real number, got {x!r}") from None
    if not math.isfinite(v):
        raise ValueError(f"{name} must be finite, got {x!r}")
    return v


def _std(x: float, name: str) -> float:
    v = _finite(x, name)
    if v < 0:
        raise ValueError(f"{name} must be >= 0, got {x!r}")
    return v


def _count(n: int, name: str) -> int:
    if isinstance(n, bool) or int(n) != n or n < 2:
        raise ValueError(f"{name} must be an integer >= 2, got {n!r}")
    return int(n)


def _ddofs(ddof: int | Sequence[int]) -> tuple[int, int]:
    pair = (ddof, ddof) if isinstance(ddof, int) else tuple(ddof)
    if len(pair) != 2 or any(d not in (0, 1) or isinstance(d, bool) for d in pair):
        raise ValueError(f"ddof must be 0, 1 or a pair of them, got {ddof!r}")
    return int(pair[0]), int(pair[1])


def _sample_std(std: float, n: int, ddof: int) -> float:
    """Return the sample std (ddof = 1) of a std computed with ``ddof``."""
    return std if ddof == 1 else std * math.sqrt(n / (n - 1))


def _ratio(num: float) -> float:
    """Return num / 0 as the tests read it: +-inf, or 0 when num is 0."""
    return 0.0 if num == 0.0 else math.copysign(math.inf, num)


def _pvalues(pvalues) -> tuple[np.ndarray, np.ndarray]:
    p = np.asarray(pvalues, dtype=float)
    if p.ndim != 1:
        raise ValueError(f"pvalues must be 1-D, got shape {p.shape}")
    ok = ~np.isnan(p)
    if np.any((p[ok] < 0) | (p[ok] > 1)):
        raise ValueError("p-values must lie in [0, 1] (NaN: not tested)")
    return p, ok


# --------------------------------------------------------- multiple testing


def holm(pvalues) -> np.ndarray:
    """Holm-Bonferroni adjusted p-values (Holm 1979, step-down).

    With the m p-values sorted, p_(1) <= ... <= p_(m), the adjusted values are

        p~_(i) = min(1, max_{j <= i} (m - j + 1) p_(j)),

    returned in the input order. Rejecting every hypothesis with p~ <= alpha is
    Holm's procedure at family-wise error rate alpha: p~_i is the smallest alpha at
    which the step-down procedure (compare p_(j) with alpha / (m - j + 1) for
    j = 1, 2, ..., stop at the first that fails) rejects hypothesis i. The adjusted
    values are >= the raw ones, <= the Bonferroni ones, at most 1, and
    non-decreasing in the order of the raw p-values (ties keep equal values).

    Parameters
    ----------
    pvalues : array-like of shape (m,)
        Raw p-values in [0, 1]. NaN marks a cell that was not tested: it stays NaN
        and does not count in the family size m.

    Returns
    -------
    ndarray of shape (m,)
    """
    p, ok = _pvalues(pvalues)
    out = np.full(p.shape, np.nan)
    q = p[ok]
    m = q.size
    if m == 0:
        return out
    order = np.argsort(q, kind="mergesort")
    scaled = (m - np.arange(m)) * q[order]
    adj = np.minimum(np.maximum.accumulate(scaled), 1.0)
    back = np.empty(m)
    back[order] = adj
    out[ok] = back
    return out


def bonferroni(pvalues) -> np.ndarray:
    """Bonferroni adjusted p-values, min(1, m p_i).

    Parameters
    ----------
    pvalues : array-like of shape (m,)
        Raw p-values in [0, 1]; NaN (not tested) stays NaN and is not counted in m.

    Returns
    -------
    ndarray of shape (m,)
    """
    p, ok = _pvalues(pvalues)
    out = np.full(p.shape, np.nan)
    out[ok] = np.minimum(p[ok] * int(ok.sum()), 1.0)
    return out


# ---------------------------------------------------------------- paired


class PairedInterval(NamedTuple):
    """Result of :func:`paired_interval` (differences a - b)."""

    #: mean difference mean(a - b)
    mean: float
    #: lower end of the t interval
    low: float
    #: upper end of the t interval
    high: float
    #: two-sided p-value of the paired t test of mean(a - b) = 0
    p: float
    #: t statistic
    t: float
    #: degrees of freedom, n - 1
    df: int
    #: sample std (ddof = 1) of the differences
    std: float
    #: number of pairs
    n: int
    #: confidence level of [low, high]
    level: float


def paired_interval(a, b, level: float = 0.95) -> PairedInterval:
    """Mean paired difference, its t interval and the paired t test.

    With d_i = a_i - b_i (i = 1..n), mean d, sample std s (ddof = 1) and
    SE = s / sqrt(n):

        interval = mean d -+ t_{(1 + level)/2, n-1} SE,
        t = mean d / SE,   p = 2 P(T_{n-1} >= |t|),

    the paired (one-sample on the differences) t test; scipy's
    ``ttest_rel(a, b)`` gives the same t and p. The interval covers the mean
    difference over draws of the labeled set on this data set (see the module
    docstring), under the t model.

    If every difference is the same (s = 0), the interval is that value and p is
    0 when it is not 0, 1 when it is (no evidence either way), t being +-inf or 0.

    Parameters
    ----------
    a, b : array-like of shape (n,)
        Paired observations (e.g. accuracies of two methods on the same n draws),
        n >= 2, finite.
    level : float, default=0.95
        Confidence level of the interval, in (0, 1).

    Returns
    -------
    PairedInterval
    """
    a = np.asarray(a, dtype=float)
    b = np.asarray(b, dtype=float)
    if a.ndim != 1 or a.shape != b.shape:
        raise ValueError(
            f"a and b must be 1-D of the same length, got {a.shape} and {b.shape}"
        )
    n = _count(a.size, "the number of pairs")
    if not (np.isfinite(a).all() and np.isfinite(b).all()):
        raise ValueError("a and b must be finite")
    level = _finite(level, "level")
    if not 0 < level < 1:
        raise ValueError(f"level must be in (0, 1), got {level!r}")
    d = a - b
    mean = float(d.mean())
    s = float(d.std(ddof=1))
    df = n - 1
    se = s / math.sqrt(n)
    if se == 0.0:
        p = 1.0 if mean == 0.0 else 0.0
        return PairedInterval(mean, mean, mean, p, _ratio(mean), df, s, n, level)
    t = mean / se
    half = float(_st.t.ppf(0.5 + level / 2, df)) * se
    p = float(2 * _st.t.sf(abs(t), df))
    return PairedInterval(mean, mean - half, mean + half, p, t, df, s, n, level)


# ------------------------------------------------------ two-sample (summary)


class WelchResult(NamedTuple):
    """Result of :func:`welch` (group 1 minus group 2)."""

    #: mean1 - mean2
    diff: float
    #: standard error sqrt(s1^2 / n1 + s2^2 / n2)
    se: float
    #: Welch's t statistic
    t: float
    #: Welch-Satterthwaite degrees of freedom
    df: float
    #: two-sided p-value
    p: float


def welch(
    mean1: float,
    std1: float,
    n1: int,
    mean2: float,
    std2: float,
    n2: int,
    *,
    ddof: int | Sequence[int] = 1,
) -> WelchResult:
    """Welch's two-sample t test from means, stds and sizes.

    With sample stds s1, s2 (ddof = 1):

        SE = sqrt(s1^2 / n1 + s2^2 / n2),   t = (mean1 - mean2) / SE,

        df = SE^4 / ((s1^2 / n1)^2 / (n1 - 1) + (s2^2 / n2)^2 / (n2 - 1))

    (Welch-Satterthwaite), p = 2 P(T_df >= |t|). On raw samples this is scipy's
    ``ttest_ind(x1, x2, equal_var=False)``. Built for our mean +- std over n
    splits against the paper's (n = 5 each), which gives only summaries.

    The stds are assumed to be sample stds (ddof = 1); the paper does not say which
    it reports, and ddof = 1 is MATLAB's default. ``ddof=0`` (or a pair, one per
    group) converts a population std to the sample std, s = sd sqrt(n / (n - 1)).

    If both stds are 0 the test is degenerate: t is +-inf (p = 0) when the means
    differ and 0 (p = 1) when they are equal; df is NaN.

    Parameters
    ----------
    mean1, std1, n1 : float, float, int
        Group 1 (e.g. ours): mean, std (>= 0), size (>= 2).
    mean2, std2, n2 : float, float, int
        Group 2 (e.g. the paper's).
    ddof : {0, 1} or pair of them, default=1
        The convention of ``std1`` and ``std2``.

    Returns
    -------
    WelchResult
    """
    d1, d2 = _ddofs(ddof)
    m1, m2 = _finite(mean1, "mean1"), _finite(mean2, "mean2")
    n1, n2 = _count(n1, "n1"), _count(n2, "n2")
    s1 = _sample_std(_std(std1, "std1"), n1, d1)
    s2 = _sample_std(_std(std2, "std2"), n2, d2)
    v1, v2 = s1**2 / n1, s2**2 / n2
    se = math.sqrt(v1 + v2)
    diff = m1 - m2
    if se == 0.0:
        p = 1.0 if diff == 0.0 else 0.0
        return WelchResult(diff, 0.0, _ratio(diff), math.nan, p)
    df = (v1 + v2) ** 2 / (v1**2 / (n1 - 1) + v2**2 / (n2 - 1))
    t = diff / se
    return WelchResult(diff, se, t, df, float(2 * _st.t.sf(abs(t), df)))


def hedges_g(
    mean1: float,
    std1: float,
    n1: int,
    mean2: float,
    std2: float,
    n2: int,
    *,
    ddof: int | Sequence[int] = 1,
) -> float:
    """Hedges' g: the standardized mean difference with the small-sample correction.

    With sample stds s1, s2 (ddof = 1) and nu = n1 + n2 - 2:

        s_p = sqrt(((n1 - 1) s1^2 + (n2 - 1) s2^2) / nu),   d = (mean1 - mean2) / s_p,

        J(nu) = Gamma(nu / 2) / (sqrt(nu / 2) Gamma((nu - 1) / 2)),   g = J(nu) d

    (Hedges 1981; Hedges & Olkin 1985). J is the exact factor that makes g
    unbiased for the population effect under normality; the usual approximation
    1 - 3 / (4 nu - 1) differs from it by less than 1e-3 for nu >= 8 (n1 = n2 = 5:
    J = 8 / (5 sqrt(pi)) = 0.90270). The pooled std assumes both groups share
    one spread; |g| in pooled-std units is a size, not a test (see :func:`welch`).

    Parameters
    ----------
    mean1, std1, n1 : float, float, int
        Group 1: mean, std (>= 0), size (>= 2).
    mean2, std2, n2 : float, float, int
        Group 2.
    ddof : {0, 1} or pair of them, default=1
        The convention of the stds, as in :func:`welch`.

    Returns
    -------
    float
        g, positive when group 1's mean is the larger; +-inf when the pooled std is
        0 and the means differ, 0 when they are equal too.
    """
    d1, d2 = _ddofs(ddof)
    m1, m2 = _finite(mean1, "mean1"), _finite(mean2, "mean2")
    n1, n2 = _count(n1, "n1"), _count(n2, "n2")
    s1 = _sample_std(_std(std1, "std1"), n1, d1)
    s2 = _sample_std(_std(std2, "std2"), n2, d2)
    nu = n1 + n2 - 2
    sp = math.sqrt(((n1 - 1) * s1**2 + (n2 - 1) * s2**2) / nu)
    diff = m1 - m2
    if sp == 0.0:
        return _ratio(diff)
    j = math.exp(special.gammaln(nu / 2) - special.gammaln((nu - 1) / 2)) / math.sqrt(
        nu / 2
    )
    return j * diff / sp


# ------------------------------------------------------------- equivalence


class TostResult(NamedTuple):
    """Result of :func:`tost`."""

    #: max(p_lower, p_upper): equivalence at level alpha when p < alpha
    p: float
    #: p-value of H0: difference <= -margin (against > -margin)
    p_lower: float
    #: p-value of H0: difference >= +margin (against < +margin)
    p_upper: float
    #: (diff_mean + margin) / SE
    t_lower: float
    #: (diff_mean - margin) / SE
    t_upper: float
    #: degrees of freedom: n - 1 (paired), Welch-Satterthwaite (:func:`tost_welch`)
    df: float
    #: the equivalence margin
    margin: float


def tost(diff_mean: float, diff_std: float, n: int, margin: float) -> TostResult:
    """Paired equivalence test: two one-sided t tests (Schuirmann 1987).

    For n paired differences with mean D, sample std s (ddof = 1),
    SE = s / sqrt(n) and df = n - 1, equivalence within (-margin, +margin) is shown
    by rejecting both H0-: delta <= -margin and H0+: delta >= +margin:

        t_lower = (D + margin) / SE,   p_lower = P(T_df >= t_lower),
        t_upper = (D - margin) / SE,   p_upper = P(T_df <= t_upper),

        p = max(p_lower, p_upper).

    The two are scipy's ``ttest_1samp(d, -margin, alternative="greater")`` and
    ``ttest_1samp(d, margin, alternative="less")``. "Equivalent at level alpha"
    (p < alpha) is the same as the (1 - 2 alpha) t interval of the mean difference
    lying inside (-margin, +margin). A large p is no evidence of a difference: it
    only says equivalence within this margin is not shown. The margin must be
    stated before looking at the data (e.g. one accuracy point).

    If s = 0 the tests are degenerate: p = 0 when |D| < margin, 1 otherwise.

    Parameters
    ----------
    diff_mean : float
        Mean of the paired differences (e.g. :attr:`PairedInterval.mean`).
    diff_std : float
        Their sample std, ddof = 1 (:attr:`PairedInterval.std`), >= 0.
    n : int
        Number of pairs, >= 2.
    margin : float
        Equivalence margin, > 0, in the units of the differences.

    Returns
    -------
    TostResult
    """
    D = _finite(diff_mean, "diff_mean")
    s = _std(diff_std, "diff_std")
    n = _count(n, "n")
    margin = _finite(margin, "margin")
    if margin <= 0:
        raise ValueError(f"margin must be > 0, got {margin!r}")
    return _two_one_sided(D, s / math.sqrt(n), n - 1, margin)


def _two_one_sided(D: float, se: float, df: float, margin: float) -> TostResult:
    """Test D against -margin and +margin by two one-sided t tests (SE ``se``)."""
    if se == 0.0:
        lo = 0.0 if D > -margin else 1.0
        hi = 0.0 if D < margin else 1.0
        t_lo, t_hi = _ratio(D + margin), _ratio(D - margin)
        return TostResult(max(lo, hi), lo, hi, t_lo, t_hi, df, margin)
    t_lo = (D + margin) / se
    t_hi = (D - margin) / se
    p_lo = float(_st.t.sf(t_lo, df))
    p_hi = float(_st.t.cdf(t_hi, df))
    return TostResult(max(p_lo, p_hi), p_lo, p_hi, t_lo, t_hi, df, margin)


def tost_welch(
    mean1: float,
    std1: float,
    n1: int,
    mean2: float,
    std2: float,
    n2: int,
    margin: float,
    *,
    ddof: int | Sequence[int] = 1,
) -> TostResult:
    """Unpaired equivalence test from two groups' summaries: two one-sided Welch tests.

    With D = mean1 - mean2 and Welch's SE and df (:func:`welch`), equivalence within
    (-margin, +margin) is shown by rejecting both H0-: delta <= -margin and
    H0+: delta >= +margin:

        t_lower = (D + margin) / SE,   p_lower = P(T_df >= t_lower),
        t_upper = (D - margin) / SE,   p_upper = P(T_df <= t_upper),

    p = max(p_lower, p_upper). On raw samples these are scipy's
    ``ttest_ind(x1 + margin, x2, equal_var=False, alternative="greater")`` and
    ``ttest_ind(x1 - margin, x2, equal_var=False, alternative="less")``. It ignores
    any pairing of the two groups (e.g. the same splits), so on paired data it is
    conservative; use :func:`tost` when the paired differences are at hand.

    If both stds are 0: p = 0 when |D| < margin, 1 otherwise (df NaN).

    Parameters
    ----------
    mean1, std1, n1, mean2, std2, n2 : as in :func:`welch`
    margin : float
        Equivalence margin, > 0, in the units of the means.
    ddof : {0, 1} or pair of them, default=1
        The convention of the stds, as in :func:`welch`.

    Returns
    -------
    TostResult
    """
    margin = _finite(margin, "margin")
    if margin <= 0:
        raise ValueError(f"margin must be > 0, got {margin!r}")
    w = welch(mean1, std1, n1, mean2, std2, n2, ddof=ddof)
    return _two_one_sided(w.diff, w.se, w.df, margin)  # df NaN when se = 0


# ------------------------------------------------------- families of intervals


def interval_from_bounds(
    mean: float, low: float, high: float, n: int, level: float = 0.95
) -> PairedInterval:
    """Recover the paired interval that a printed mean and t interval describe.

    An output that shows only the mean difference, its t interval and the number of
    pairs n still fixes the rest: SE = (high - low) / (2 t_{(1 + level)/2, n-1}),
    the std of the differences s = SE sqrt(n), t = mean / SE and the two-sided p.
    Printed bounds are rounded, so the recovered SE, t and p carry that rounding
    (two decimals on an interval 0.5 wide: about 2 % on SE).

    Parameters
    ----------
    mean, low, high : float
        The mean difference and the interval's bounds (low <= high).
    n : int
        Number of pairs, >= 2.
    level : float, default=0.95
        The interval's confidence level.

    Returns
    -------
    PairedInterval
    """
    mean, low, high = (
        _finite(v, k) for v, k in ((mean, "mean"), (low, "low"), (high, "high"))
    )
    n = _count(n, "n")
    level = _finite(level, "level")
    if not 0 < level < 1:
        raise ValueError(f"level must be in (0, 1), got {level!r}")
    if high < low:
        raise ValueError(f"the interval [{low}, {high}] is reversed")
    df = n - 1
    se = (high - low) / (2 * float(_st.t.ppf(0.5 + level / 2, df)))
    s = se * math.sqrt(n)
    if se == 0.0:
        p = 1.0 if mean == 0.0 else 0.0
        return PairedInterval(mean, low, high, p, _ratio(mean), df, s, n, level)
    t = mean / se
    p = float(2 * _st.t.sf(abs(t), df))
    return PairedInterval(mean, low, high, p, t, df, s, n, level)


class FamilyRow(NamedTuple):
    """One comparison of :func:`paired_family`."""

    #: the raw paired interval (its own level, no adjustment)
    raw: PairedInterval
    #: Holm's adjusted p-value over the family
    p_holm: float
    #: lower end of the simultaneous interval (Bonferroni, level 1 - alpha / m)
    low_sim: float
    #: upper end of the simultaneous interval
    high_sim: float
    #: +1 / -1 when the raw interval lies above / below 0, else 0
    side: int
    #: +1 / -1 when Holm's p is below alpha (the sign of the mean), else 0
    side_holm: int


def paired_family(
    intervals: Sequence[PairedInterval], alpha: float = 0.05
) -> list[FamilyRow]:
    """Holm's p-values and simultaneous intervals beside a family's raw intervals.

    For m paired comparisons (each a :class:`PairedInterval`, e.g. from
    :func:`paired_interval` or :func:`interval_from_bounds`):

    - ``p_holm``: :func:`holm` over the m raw p-values; a comparison is resolved
      after Holm (``side_holm`` != 0) when ``p_holm < alpha``, which keeps the
      family-wise error rate at alpha;
    - ``[low_sim, high_sim]``: mean -+ t_{1 - alpha / (2m), n-1} SE, the Bonferroni
      intervals, which cover all m mean differences together with probability
      >= 1 - alpha. Holm rejects whenever such an interval excludes 0, and
      sometimes also when it does not (it is the more powerful of the two);
    - ``side``: the raw interval's verdict (above, below or 0 inside).

    Parameters
    ----------
    intervals : sequence of PairedInterval
        The family, m >= 1, each with n >= 2.
    alpha : float, default=0.05
        Family-wise error rate, in (0, 1).

    Returns
    -------
    list of FamilyRow, in the input order
    """
    alpha = _finite(alpha, "alpha")
    if not 0 < alpha < 1:
        raise ValueError(f"alpha must be in (0, 1), got {alpha!r}")
    m = len(intervals)
    if m == 0:
        return []
    adjusted = holm([iv.p for iv in intervals])
    out = []
    for iv, ph in zip(intervals, adjusted, strict=True):
        half = float(_st.t.ppf(1 - alpha / (2 * m), iv.df)) * iv.std / math.sqrt(iv.n)
        side = 1 if iv.low > 0 else -1 if iv.high < 0 else 0
        side_holm = int(np.sign(iv.mean)) if ph < alpha else 0
        out.append(
            FamilyRow(iv, float(ph), iv.mean - half, iv.mean + half, side, side_holm)
        )
    return out

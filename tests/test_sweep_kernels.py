"""The fused, cached MTTKRP of the implicit engine against a dense reference.

:meth:`ImplicitMoment.mttkrp` makes the projections Y_q U_q block by block, keeps
them between calls, combines the known ones for the line search's jumps and runs
sparse views through scipy's in-place kernels. Each of these must give the MTTKRP
of the tensor M built here independently (dense whitened data, one einsum), to
rounding, whatever happened to the factors in between: ALS updates, a jump, a
balancing rescale, a factor that died and whose address was reused.
"""

import gc

import numpy as np
import pytest
import scipy.sparse as sp
from numpy.testing import assert_allclose

from tcca_core.solver import als, implicit, sparse
from tcca_core.solver.implicit import (
    ImplicitMoment,
    combination_of,
    record_combination,
)
from tcca_core.solver.linalg import column_mean, covariance, inv_sqrt_psd
from tcca_core.solver.views import WhitenedView

LETTERS = "abcdefgh"


def _onehot(rng, N, d, npos):
    cats = rng.integers(0, d // npos, size=(N, npos))
    X = np.zeros((N, d))
    X[np.arange(N)[:, None], np.arange(npos) * (d // npos) + cats] = 1.0
    return sp.csr_matrix(X)


def _views(rng, kinds, N=257):
    """Raw views: "dense" (Gaussian, d = 40 or 7) or "sparse" (one-hot CSR)."""
    out = []
    for i, kind in enumerate(kinds):
        if kind == "sparse":
            out.append(_onehot(rng, N, 24 + 6 * i, 2 + i % 2))
        elif kind == "narrow":
            out.append(rng.standard_normal((N, 7)) + rng.exponential(size=(N, 1)))
        else:
            out.append(rng.standard_normal((N, 40)) + rng.exponential(size=(N, 1)))
    return out


def _whiten(Xs, eps=0.1):
    views, dense = [], []
    for X in Xs:
        mu = column_mean(X)
        W = inv_sqrt_psd(covariance(X, mu), eps)
        views.append(WhitenedView(X, mu, W))
        Xd = X.toarray() if sp.issparse(X) else X
        dense.append((Xd - mu) @ W)
    return views, dense


def _moment(Ys):
    """M = (1/N) sum_n y_1n o ... o y_mn, by einsum."""
    m, N = len(Ys), Ys[0].shape[0]
    expr = ",".join("n" + LETTERS[q] for q in range(m)) + "->" + LETTERS[:m]
    return np.einsum(expr, *Ys, optimize=True) / N


def _reference(Ys, factors, p, M=None):
    """M_(p) (kr_{q != p} U_q), by einsum."""
    M = _moment(Ys) if M is None else M
    others = [q for q in range(M.ndim) if q != p]
    expr = LETTERS[: M.ndim] + "".join("," + LETTERS[q] + "z" for q in others)
    expr += "->" + LETTERS[p] + "z"
    return np.einsum(expr, M, *(factors[q] for q in others), optimize=True)


def _check(op, M, factors, p):
    got = op.mttkrp(factors, p)
    ref = _reference(None, factors, p, M)
    assert_allclose(got, ref, rtol=1e-10, atol=1e-12 * np.abs(ref).max())


@pytest.fixture(autouse=True)
def small_blocks(monkeypatch):
    # a few rows per block, the last one ragged: every block boundary is exercised
    monkeypatch.setattr(implicit, "_FUSED_BYTES", 8 * 3 * 37)


KINDS = [
    ("dense", "dense", "dense"),
    ("sparse", "sparse", "sparse"),
    ("sparse", "dense", "narrow", "sparse"),
    ("dense", "sparse"),
]


@pytest.mark.parametrize("kinds", KINDS, ids=["-".join(k) for k in KINDS])
def test_mttkrp_through_an_als_history(kinds):
    """Updates, a jump, a rescale, a dead factor: always the reference's MTTKRP."""
    rng = np.random.default_rng(3)
    views, Ys = _whiten(_views(rng, kinds))
    assert [v.is_sparse for v in views] == [k == "sparse" for k in kinds]
    op, M = ImplicitMoment(views), _moment(Ys)
    m, r = len(views), 3
    F = [rng.standard_normal((v.d, r)) for v in views]
    for p in range(m):  # a sweep: U_p replaced after its MTTKRP
        _check(op, M, F, p)
        F[p] = rng.standard_normal(F[p].shape)
    before = list(F)
    for p in range(m):  # the next sweep, all projections cached or made once
        _check(op, M, F, p)
        F[p] = rng.standard_normal(F[p].shape)
    # the line search's jump, recorded as cp_als records it: combined projections
    s = 1.7
    jump = [U + s * (U - U0) for U, U0 in zip(F, before, strict=True)]
    for J, U, U0 in zip(jump, F, before, strict=True):
        record_combination(J, ((1.0 + s, U), (-s, U0)))
    for p in range(m):
        _check(op, M, jump, p)
    # a balancing rescale (new arrays, columns scaled) after the jump
    scaled = [J * np.exp(rng.standard_normal(r)) for J in jump]
    for p in range(m):
        _check(op, M, scaled, p)
    # factors that died: a new array at a reused address must not hit the cache,
    # and their projections' arrays, reused for new ones, must not be read as theirs
    del jump, before
    gc.collect()
    for p in range(m):
        F[p] = np.ascontiguousarray(rng.standard_normal(F[p].shape))
        _check(op, M, F, p)
    # another width between (a randomized start's sketches), then back
    wide = [rng.standard_normal((v.d, r + 2)) for v in views]
    for p in range(m):
        _check(op, M, wide, p)
        _check(op, M, F, p)
    assert all(len(entries) <= 2 for entries in op._cache)
    assert len(op._spare) <= m


def test_cp_als_with_line_search_matches_a_dense_reference():
    """Whole ALS runs (jumps kept and refused, resumed) on the fused engine and on
    the einsum reference: the same errors and factors."""
    rng = np.random.default_rng(5)
    views, Ys = _whiten(_views(rng, ("dense", "sparse", "dense")), eps=0.01)
    op = ImplicitMoment(views)
    M = _moment(Ys)
    norm_sq = float(np.vdot(M, M))

    def reference(f, p):
        return _reference(Ys, f, p, M)

    U0 = [rng.standard_normal((v.d, 4)) for v in views]
    kw = dict(max_iter=12, tol=0, acceleration="linesearch")
    fast = als.cp_als(op.mttkrp, norm_sq, U0, **kw)
    slow = als.cp_als(reference, norm_sq, U0, **kw)
    assert fast.n_jumps > 0 and fast.n_jumps < fast.n_iter - 1  # both branches ran
    assert fast.n_jumps == slow.n_jumps
    assert_allclose(fast.errors, slow.errors, rtol=1e-10)
    for a, b in zip(fast.factors, slow.factors, strict=True):
        assert_allclose(a, b, rtol=1e-8, atol=1e-10 * np.abs(b).max())
    more = als.cp_als(op.mttkrp, norm_sq, max_iter=16, tol=0, resume=fast)
    ref = als.cp_als(reference, norm_sq, max_iter=16, tol=0, resume=slow)
    assert_allclose(more.errors, ref.errors, rtol=1e-10)


def _count_products(monkeypatch):
    """Count the rows that WhitenedView.dot_rows computes (products with Y)."""
    rows = [0]
    real = WhitenedView.dot_rows

    def counting(self, start, stop, operand, out):
        rows[0] += stop - start
        return real(self, start, stop, operand, out)

    monkeypatch.setattr(WhitenedView, "dot_rows", counting)
    return rows


@pytest.mark.parametrize(
    ("kinds", "acceleration", "per_sweep"),
    [("dense", "linesearch", 3), ("sparse", "linesearch", 5), ("dense", "momentum", 3)],
)
def test_a_sweep_makes_each_projection_once(
    monkeypatch, kinds, acceleration, per_sweep
):
    """A sweep with the line search projects each view once (dense views: the jump's
    projections are combinations of known ones); sparse views recompute the jump's,
    which costs less than combining. The momentum's extrapolated start is such a
    combination too."""
    rng = np.random.default_rng(11)
    views, _ = _whiten(_views(rng, (kinds,) * 3, N=300))
    op = ImplicitMoment(views)
    U0 = [rng.standard_normal((v.d, 3)) for v in views]
    # the true norm: a momentum step is kept by the error it reaches
    norm_sq = op.norm_sq()
    warm = als.cp_als(
        op.mttkrp, norm_sq, U0, max_iter=3, tol=0, acceleration=acceleration
    )
    rows = _count_products(monkeypatch)
    seen = []
    res = als.cp_als(
        op.mttkrp,
        norm_sq,
        max_iter=warm.n_iter + 5,
        tol=0,
        resume=warm,
        callback=lambda n, e: seen.append(rows[0]),
        acceleration=acceleration,
    )
    # after the first resumed sweep (cold cache), every sweep makes per_sweep
    assert np.diff(seen).tolist() == [per_sweep * 300] * 4
    assert res.n_jumps > warm.n_jumps  # the accelerated steps were taken


def test_sparse_kernels_match_the_public_products(monkeypatch):
    rng = np.random.default_rng(2)
    X = sp.random(90, 13, density=0.3, format="csr", random_state=4)
    D, H = rng.standard_normal((13, 5)), rng.standard_normal((90, 5))
    fast_d, fast_t = np.ones((40, 5)), np.ones((13, 5))
    sparse.csr_rows_dot_add(X, 20, 60, D, fast_d)
    sparse.csr_rows_tdot_add(X, 20, 60, H[20:60], fast_t)
    assert_allclose(fast_d, 1 + X[20:60] @ D, rtol=1e-14)
    assert_allclose(fast_t, 1 + X[20:60].T @ H[20:60], rtol=1e-14)
    # the kernels refuse what they would silently get wrong (a strided output)...
    assert not sparse._raw_ok(X, D, np.ones((5, 40)).T)
    # ... or cannot take (other dtypes), and the fallback gives the same numbers
    assert not sparse._raw_ok(X.astype(np.float32), D)
    monkeypatch.setattr(sparse, "_csr_matvecs", None)
    slow_d, slow_t = np.ones((40, 5)), np.ones((13, 5))
    sparse.csr_rows_dot_add(X, 20, 60, D, slow_d)
    sparse.csr_rows_tdot_add(X, 20, 60, H[20:60], slow_t)
    assert_allclose(slow_d, fast_d, rtol=1e-14)
    assert_allclose(slow_t, fast_t, rtol=1e-14)


def test_combination_records_follow_the_arrays():
    a, b = np.ones((3, 2)), np.zeros((3, 2))
    c = 2 * a - b
    record_combination(c, ((2.0, a), (-1.0, b)))
    terms = combination_of(c)
    assert terms is not None and terms[0][1] is a and terms[1][1] is b
    assert combination_of(a) is None
    del b, terms
    gc.collect()
    assert combination_of(c) is None  # a term died: nothing to combine
    key = id(c)
    del c
    gc.collect()
    assert key not in implicit._COMBINATIONS  # the record went with its array


def test_tight_cache_budget_keeps_one_projection(monkeypatch):
    """Where two projections per mode would not fit, one is kept and the line
    search's jumps are projected afresh: the same numbers."""
    monkeypatch.setattr(implicit, "_CACHE_BYTES", 1)
    rng = np.random.default_rng(8)
    views, Ys = _whiten(_views(rng, ("dense",) * 3))
    op, M = ImplicitMoment(views), _moment(Ys)
    F = [rng.standard_normal((v.d, 2)) for v in views]
    before = list(F)
    for p in range(3):
        _check(op, M, F, p)
        F[p] = rng.standard_normal(F[p].shape)
        assert all(len(entries) <= 1 for entries in op._cache)
    jump = [U + 0.5 * (U - U0) for U, U0 in zip(F, before, strict=True)]
    for J, U, U0 in zip(jump, F, before, strict=True):
        record_combination(J, ((1.5, U), (-0.5, U0)))
    for p in range(3):
        _check(op, M, jump, p)

"""Exact compression of the CP fit to the HOSVD bases.

Where a mode of the moment tensor M has rank k_p below its dimension d_p (views
with linearly dependent columns: one-hot blocks, duplicated features, fewer samples
than features), ALS on the core G = M x_1 Q_1^T ... x_m Q_m^T must make the
iterates of ALS on M itself: the fit is the same, only cheaper.
"""

import numpy as np
import pytest
from numpy.testing import assert_allclose

from tcca_core import TCCA
from tcca_core.solver import engine as engine_mod


def _deficient_views(rng, N=600):
    """Three views whose whitened data have rank 4 of 7, 3 of 6 and 5 (full)."""
    z = rng.exponential(size=(N, 2)) - 1.0
    A = z @ rng.standard_normal((2, 4)) + 0.5 * rng.standard_normal((N, 4))
    B = z @ rng.standard_normal((2, 3)) + 0.5 * rng.standard_normal((N, 3))
    C = z @ rng.standard_normal((2, 5)) + 0.5 * rng.standard_normal((N, 5))
    # dependent columns: sums and copies of the others
    A = np.hstack([A, A[:, :2] + A[:, 2:], A[:, :1]])
    B = np.hstack([B, B @ rng.standard_normal((3, 3))])
    return [A, B, C]


@pytest.fixture
def no_compression(monkeypatch):
    def off():
        monkeypatch.setattr(engine_mod.MomentEngine, "compressed", lambda self: None)

    return off


def _spy(monkeypatch):
    seen = []
    real = engine_mod.MomentEngine.compressed

    def spy(self):
        out = real(self)
        seen.append(None if out is None else [Q.shape[1] for Q in out[0]])
        return out

    monkeypatch.setattr(engine_mod.MomentEngine, "compressed", spy)
    return seen


@pytest.mark.parametrize("algorithm", ["dense", "implicit"])
@pytest.mark.parametrize("acceleration", ["momentum", "linesearch", None])
@pytest.mark.parametrize(("rank", "init"), [(2, "hosvd"), (5, "random"), (6, "svd")])
def test_compressed_iterates_are_the_uncompressed_ones(
    rng, monkeypatch, no_compression, algorithm, acceleration, rank, init
):
    """Ranks above a mode's rank (5 and 6 > 3) start with columns outside its basis."""
    views = _deficient_views(rng)
    kw = dict(
        algorithm=algorithm,
        acceleration=acceleration,
        init=init,
        n_init=1,
        tol=0,
        max_iter=40,
        random_state=1,
    )
    seen = _spy(monkeypatch)
    fast = TCCA(rank, **kw).fit(views)
    assert seen and seen[0] == [4, 3, 5]  # it did compress
    no_compression()
    slow = TCCA(rank, **kw).fit(views)
    assert_allclose(
        fast.reconstruction_errors_, slow.reconstruction_errors_, atol=1e-12
    )
    assert_allclose(fast.weights_, slow.weights_, rtol=1e-9)
    for P, R in zip(fast.projections_, slow.projections_, strict=True):
        assert_allclose(P, R, atol=1e-9 * np.abs(R).max())


@pytest.mark.parametrize("algorithm", ["dense", "implicit"])
def test_a_compressed_race_ends_where_the_uncompressed_one_does(
    rng, no_compression, algorithm
):
    """Starts that tie to rounding may swap places in the race; the fit may not."""
    views = _deficient_views(rng)
    kw = dict(algorithm=algorithm, n_init=4, random_state=2)
    fast = TCCA(5, **kw).fit(views)
    no_compression()
    slow = TCCA(5, **kw).fit(views)
    assert_allclose(
        fast.reconstruction_errors_[-1], slow.reconstruction_errors_[-1], rtol=1e-8
    )
    assert_allclose(sorted(fast.start_errors_), sorted(slow.start_errors_), rtol=1e-8)


def test_full_rank_modes_are_not_compressed(rng, monkeypatch):
    views = [rng.standard_normal((400, d)) for d in (5, 4, 3)]
    seen = _spy(monkeypatch)
    TCCA(2, random_state=0).fit(views)
    assert seen == [None]


def test_a_compressed_rank_path_is_the_uncompressed_one(rng, no_compression):
    views = _deficient_views(rng)
    kw = dict(random_state=0, max_iter=60, tol=0)
    fast = TCCA(**kw).fit_path(views, [1, 3, 6], warm_start=True)
    no_compression()
    slow = TCCA(**kw).fit_path(views, [1, 3, 6], warm_start=True)
    for a, b in zip(fast, slow, strict=True):
        assert_allclose(a.reconstruction_errors_, b.reconstruction_errors_, atol=1e-12)
        assert_allclose(a.weights_, b.weights_, rtol=1e-9)

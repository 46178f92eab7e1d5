"""The rank path: one body for TCCA (in memory and on Dask) and KTCCA.

Every fit is a rank path (a single rank is a path of one): check the ranks against
the CP-rank bound, whiten the views once (:func:`whitened_views`, the linear
whitening of TCCA; KTCCA brings its kernels'), make the engine once, and decompose
M at every rank with the same :class:`.params.SolverParams`, sharing M, ||M||^2 and
the exact HOSVD across ranks.
"""

from __future__ import annotations

from collections.abc import Callable
from time import perf_counter

import numpy as np

from .._validation import (
    check_n_components,
    check_varying,
    check_views,
    named_als_failure,
)
from .convergence import swamped_message
from .engine import MomentEngine
from .linalg import column_mean, covariance, inv_sqrt_psd
from .params import SolverParams, is_dask_views, max_cp_rank
from .views import WhitenedView

__all__ = ["rank_path", "tcca_rank_path"]

#: ``setup()`` of :func:`rank_path`: the engine, the entries every rank shares, and
#: the entries of one rank computed from its fit
Setup = Callable[[], tuple[MomentEngine, dict, Callable[[dict], dict]]]


def rank_path(
    name: str,
    ranks: list[int],
    params: SolverParams,
    *,
    warm_start: bool,
    shape: tuple[int, list[int]],
    setup: Setup,
) -> list[dict]:
    """Fit every rank of ``ranks`` (in their order) on the engine ``setup`` makes.

    ``shape`` is ``(N, dims)`` of the moment tensor, whose CP-rank bound
    (:func:`.params.max_cp_rank`) every rank must meet. Returns one dict per rank
    with ``factors``, ``weights``, the correlations rho_k of the training data
    (Theorem 1, exact for every k), ``fit_seconds`` (the rank's own ALS plus the
    shared setup; the lazy build of M or ||M||^2 falls in the first rank's share),
    the engine's info, and the entries of ``setup``.
    """
    N, dims = shape
    r_max, why = max_cp_rank(N, dims)
    for r in ranks:
        check_n_components(r, r_max, why)
    t_setup = perf_counter()
    engine, shared, per_rank = setup()
    setup_s = perf_counter() - t_setup
    with named_als_failure(name, max(ranks)):
        fits = engine.path(ranks, params, warm_start=warm_start)
    out = {}
    for r, (weights, factors, info, seconds) in fits.items():
        fit = {
            "factors": factors,
            "weights": weights,
            "correlations": engine.correlations(factors),
            "fit_seconds": setup_s + seconds,
            **info,
        }
        out[r] = {**shared, **per_rank(fit), **fit}
    return [out[r] for r in ranks]


def tcca_rank_path(
    views, ranks: list[int], params: SolverParams, *, center: bool, warm_start: bool
) -> list[dict]:
    """TCCA's rank path on views in memory (dense or sparse) or on Dask arrays.

    Parameters already validated. Each dict adds ``means``, ``whiteners``
    (C~_pp^(-1/2)), ``projections`` (W_p = C~_pp^(-1/2) U_p) and ``swamped`` (the
    warning when eps swamps the covariances, or None) to :func:`rank_path`'s.
    """
    from .xp import DeviceSource, dispatch_namespace

    namespace = None if is_dask_views(views) else dispatch_namespace(views)
    device = None if namespace is None else DeviceSource(*namespace)
    if is_dask_views(views):  # every pass over the data as Dask tasks
        from . import dask as source
    elif device is not None:  # arrays of another array-API library, on device
        source = device  # type: ignore[assignment]
    else:
        source = _InMemory  # type: ignore[assignment]
    views = source.check_views(views, params.algorithm)
    N, dims = views[0].shape[0], [X.shape[1] for X in views]

    def setup():
        means, covs, check_constant = source.statistics(views, center)
        whiteners = [inv_sqrt_psd(C, params.eps) for C in covs]
        swamped = swamped_message(params.eps, covs)
        del covs
        # After the whitening, whose eps = 0 error names the singular covariance.
        # Uncentered, a constant view still carries raw moments.
        if center:
            check_constant()
        engine = source.engine(views, means, whiteners, max(ranks), params.algorithm)
        shared = {"means": means, "whiteners": whiteners, "swamped": swamped}
        return (
            engine,
            shared,
            lambda fit: {
                "projections": [
                    W @ U for W, U in zip(whiteners, fit["factors"], strict=True)
                ]
            },
        )

    outs = rank_path(
        "TCCA", ranks, params, warm_start=warm_start, shape=(N, dims), setup=setup
    )
    if device is not None:
        return device.finish(outs, views[0].dtype)
    return outs


class _InMemory:
    """The passes of :func:`tcca_rank_path` over views in memory (see :mod:`.dask`)."""

    @staticmethod
    def check_views(views, algorithm: str) -> list:
        return check_views(views)

    @staticmethod
    def statistics(views, center: bool):
        means = [
            column_mean(X) if center else np.zeros(X.shape[1], dtype=float)
            for X in views
        ]
        covs = [covariance(X, mu) for X, mu in zip(views, means, strict=True)]
        return means, covs, lambda: check_varying(views, "TCCA")

    @staticmethod
    def engine(views, means, whiteners, rank: int, algorithm: str) -> MomentEngine:
        wviews = [
            WhitenedView(X, mu, W)
            for X, mu, W in zip(views, means, whiteners, strict=True)
        ]
        return MomentEngine.choose(wviews, rank, algorithm)

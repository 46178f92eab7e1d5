"""Tensor CCA (Luo et al., TKDE 2015, section 4).

Rows are samples: view p is X_p of shape (N, d_p), the transpose of the paper's X_p.

For centered views, C_pp = X_p^T X_p / N and C~_pp = C_pp + eps I. TCCA maximizes the
high-order canonical correlation rho = C_12..m x_1 h_1^T ... x_m h_m^T subject to
h_p^T C~_pp h_p = 1 (eq. 4.6-4.7). With u_p = C~_pp^(1/2) h_p this is the best rank-1
approximation of the whitened tensor M = C_12..m x_1 C~_11^(-1/2) ... x_m C~_mm^(-1/2)
(Theorem 2, eq. 4.9-4.10); r components come from a rank-r CP decomposition by ALS,
and the projected data are Z_p = X_p C~_pp^(-1/2) U_p (eq. 4.11).
"""

from __future__ import annotations

from typing import ClassVar

from sklearn.base import BaseEstimator, TransformerMixin

from ._multiview import HighOrderCorrelationMixin
from ._progress import VERBOSE_CONSTRAINT, fit_progress
from ._validation import ParamsMixin, check_positive_int, validate_params
from .solver.convergence import warn_unconverged
from .solver.linalg import LinearProjectionMixin
from .solver.params import SOLVER_CONSTRAINTS, SolverParams, check_ranks, is_dask_views
from .solver.path import tcca_rank_path

__all__ = ["TCCA", "tcca", "tcca_path"]


def tcca_path(views, ranks, *, warm_start: bool = False, **params) -> list[dict]:
    """Fit TCCA for several ranks, whitening and building M (or ||M||) once.

    ``params`` are :class:`TCCA`'s parameters but ``n_components`` (``eps``,
    ``init``, ``random_state``, ``center``, ...; an unknown one is a TypeError).
    With ``warm_start=False`` (the default) and an int (or None) ``random_state``,
    entry i equals ``tcca(views, ranks[i], ...)`` exactly (for None: in
    distribution): each rank starts from its own generator seeded by
    ``random_state``, so a rank's result does not depend on the grid. The exact
    HOSVD start, when chosen, is computed once for all ranks. With
    ``warm_start=True`` each rank also tries the previous rank's solution plus the
    next ``init`` columns and keeps whichever start ends lower: never worse than
    the standalone fit, at the cost of a second ALS run per rank.

    Returns one dict per rank (in the order of ``ranks``), as :func:`tcca`.
    """
    if "n_components" in params:
        raise TypeError("tcca_path takes the ranks, not n_components")
    return TCCA(**params)._path(views, ranks, warm_start)


def tcca(views, n_components: int, **kwargs) -> dict:
    """Fit TCCA at one rank (see :class:`TCCA` for the parameters).

    Returns a dict with ``means``, ``whiteners`` (C~_pp^(-1/2)), ``factors`` (U_p),
    ``projections`` (W_p = C~_pp^(-1/2) U_p), ``weights`` (CP lambdas),
    ``correlations`` (rho_k), ``n_iter``, ``converged``, ``errors``, ``engine``,
    ``init`` (the start kept) and ``start_errors`` (every start's final error).
    """
    check_positive_int(n_components, "n_components")
    return tcca_path(views, [n_components], **kwargs)[0]


class TCCA(
    HighOrderCorrelationMixin,
    ParamsMixin,
    LinearProjectionMixin,
    TransformerMixin,
    BaseEstimator,
):
    """Tensor canonical correlation analysis for m >= 2 views.

    Parameters
    ----------
    n_components : int
        Dimension r of the common subspace (the CP rank). At most
        min(N, prod(d) / max(d)); ``transform`` returns m * r columns.
    eps : float, default=1e-2
        The paper's regularizer epsilon: C~_pp = C_pp + eps I, with the 1/N-scaled
        covariance C_pp.
    max_iter : int, default=500
        Most ALS sweeps per start.
    tol : float, default=1e-5
        Stop when the decrease of the relative reconstruction error still to come,
        estimated from the rate at which the decrease per window of sweeps shrinks,
        stays below ``tol`` times the error for two windows (or for one window
        that moved too little to ever matter: a million sweeps at its pace would
        gain less than ``tol``): a swamp, where the error creeps at a steady pace
        before it drops, is not taken for convergence. 0 runs all sweeps.
    init : {"auto", "hosvd", "svd", "random"} or list of arrays, default="auto"
        ALS start. ``"hosvd"``: the exact HOSVD, from the mode Gram matrices of M
        (computed without unfolding M). ``"svd"``: a randomized HOSVD with
        Khatri-Rao test matrices and two power iterations, also without
        unfolding M. ``"random"``: Gaussian factors. Or explicit (d_p, r) factor
        matrices. ``"auto"`` takes the exact HOSVD unless it costs more than the
        ALS sweeps themselves (estimated from the problem's shape); on the
        solver-quality battery (BENCHMARKS.md) it ends within 0.5 % of the best
        of 10 starts. With two views no ALS runs: M is a matrix and its truncated
        SVD is the exact answer (the regularized CCA solution).
    n_init : int or "auto", default="auto"
        Number of starts: ``init``, then ``n_init - 1`` more of the same kind
        drawn from ``random_state`` (randomized HOSVDs after the deterministic
        exact HOSVD); the fit with the lowest reconstruction error is kept (as
        scikit-learn's ``KMeans`` does). ``"auto"`` is 1 for given factors and
        otherwise takes as many (up to 10)
        as fit in a few seconds of ALS (estimated from the problem's shape): small
        problems, whose landscapes can have many local minima, get restarts;
        large ones, where the exact HOSVD start is within 0.1 % of the best,
        run once. The starts race: all run five sweeps, the best two ten more,
        and the better of them runs on, so ten starts cost about two fits.
    acceleration : {"momentum", "linesearch"} or None, default="momentum"
        How ALS is sped up. ``"momentum"``: each sweep starts from the last
        iterate pushed further along the last step, X_k + beta (X_k - X_(k-1)),
        with a weight beta that grows while such sweeps lower the error; a sweep
        that raises it is redone from X_k and beta shrinks (Nesterov-type
        momentum with function restart, Mitchell, Ye & De Sterck 2020). Free on
        an accepted sweep, never raises the error, and takes 1.3 to 6 times
        fewer sweeps to the same objective than the line search.
        ``"linesearch"``: Bro's extrapolation after each sweep, kept when it
        lowers the error (one more MTTKRP a sweep; the default of tcca 1.0).
        None: plain ALS.
    linesearch : bool
        Deprecated: ``True`` is ``acceleration="linesearch"``, ``False`` is
        ``acceleration=None``.
    random_state : int in [0, 2**32 - 1], numpy Generator, RandomState or None
        Seeds the initialization; the same seed gives bit-identical results.
    algorithm : {"auto", "dense", "implicit", "tensorly"}, default="auto"
        ``"tensorly"`` builds the d_1 x ... x d_m tensor M and runs tensorly's
        ``parafac`` on it: the paper's route, kept as the reference. ``"dense"``
        builds M too but runs our ALS loop (tensorly's, step for step) with an
        MTTKRP that never forms the Khatri-Rao product, several times faster.
        ``"implicit"`` never forms M: M is the rank-N CP tensor
        (1/N) sum_n y_1n o ... o y_mn of the whitened samples, so every MTTKRP is
        Y_p^T (Hadamard_{q != p} Y_q U_q) / N. All three agree to rounding.
        ``"auto"`` picks "dense" or "implicit" by a cost model (estimated flops and
        memory of each, from the views' shapes) and never builds a dense tensor
        over 2 GiB.
    solver : {"als", "lm"}, default="als"
        The CP solver. ``"als"``: alternating least squares, sped up as
        ``acceleration`` says. ``"lm"``: damped Gauss-Newton on all factors at
        once (a dogleg trust region; each step solves the Gauss-Newton system,
        applied from the factors' Gram matrices, by at most 15 preconditioned
        conjugate-gradient iterations, as Tensorlab's ``cpd_nls``). A step costs
        an ALS sweep's MTTKRPs plus O(m r^2 sum(d)) a CG iteration, never raises
        the error, and counts as a sweep for ``max_iter``, ``n_iter_`` and the
        race of starts; ``acceleration`` does not apply. It pays where ALS ends
        in poor local minima: on Ads at r = 50 to 200 it ended 3 to 35 % lower
        than ALS from every start tried (exact HOSVD and Gaussian), at 0.3 to 7
        times ALS's CPU time (the most at r = 200); on a small planted problem
        it reached the planted minimum from every Gaussian start, ALS from one
        in three. It does not pay where the fit's error stays high (SecStr at
        r = 50, error 0.97: no lower, 4 to 6 times slower). BENCHMARKS.md,
        "Gauss-Newton (LM), opt-in". Not with ``algorithm="tensorly"``; where M
        is compressed to its exact HOSVD bases (see the user guide), it starts
        from the start's projection onto them.
    center : bool, default=True
        Center the views first, as the paper assumes ("each X_p is assumed to have
        been centered"). ``False`` applies the same formulas to the raw views: C_pp
        and the tensor become second and m-th raw moments, and the tensor then also
        carries every pairwise covariance (weighted by the means), not only the m-th
        order cumulant. See REPRODUCTION.md for why this matters on SecStr.
    verbose : int, default=0
        0 says nothing. 1 shows a progress bar over the ranks of the fit (one
        for ``fit``, the grid for ``fit_path``) on stderr, saying the rank, the
        starts raced, the sweep and the error as ALS runs (one line per rank
        where stderr is not a terminal); 2 and more write lines: per rank, per
        start and every 100 sweeps. No result depends on it.

    Attributes
    ----------
    means_ : list of ndarray of shape (d_p,)
    factors_ : list of ndarray of shape (d_p, r)
        U_p, unit-norm columns.
    projections_ : list of ndarray of shape (d_p, r)
        W_p = C~_pp^(-1/2) U_p; Z_p = (X_p - mean_p) W_p.
    weights_ : ndarray of shape (r,)
        CP weights lambda_k, sorted in decreasing order. For r = 1 (and for
        mutually orthogonal components) they equal the high-order canonical
        correlations; in general they are the least-squares coefficients of the
        rank-1 terms.
    correlations_ : ndarray of shape (r,)
        High-order canonical correlations rho_k = (1/N) sum_n prod_p Z_p[n, k] of
        the training data (Theorem 1).
    n_iter_ : int
        ALS sweeps of the kept start up to the iterate kept (0 with two views).
        The iterate kept is the one of lowest error: the last, unless the error
        rose above rounding afterwards (which exact ALS never does).
    converged_ : bool
        Whether the kept start met ``tol`` before ``max_iter``. False too when
        its ALS broke down (the error rose more than 0.1 % above the lowest it
        reached) or diverged (a degenerate fit: components far larger than the
        tensor, cancelling each other, or overflowing); the iterate of lowest
        error is kept, and a ConvergenceWarning says which. A fit that used all
        ``max_iter`` sweeps warns only while its error still falls by ``tol`` of
        itself per sweep or more (and says by how much): one that creeps more
        slowly has converged by the usual rule, though not by ours, which looks
        ahead for a swamp.
    reconstruction_errors_ : list of float
        ||M - M_hat||_F / ||M||_F after each sweep of the kept start (up to the
        iterate kept).
    init_ : str
        The start that was kept (``"hosvd"``, ``"svd"``, ``"random"``, ``"warm"``,
        ``"given"`` or the two-view SVD).
    start_errors_ : list of float
        Final relative reconstruction error of every start, in the order tried.
    algorithm_ : str
        The engine used.
    n_features_in_ : list of int

    Examples
    --------
    >>> import numpy as np
    >>> from tcca_core import TCCA
    >>> rng = np.random.default_rng(0)
    >>> z = rng.standard_normal((200, 1))
    >>> views = [z @ rng.standard_normal((1, d)) + rng.standard_normal((200, d))
    ...          for d in (5, 6, 7)]
    >>> Z = TCCA(n_components=2, random_state=0).fit_transform(views)
    >>> Z.shape
    (200, 6)
    """

    _parameter_constraints: ClassVar[dict] = {
        **SOLVER_CONSTRAINTS,
        "center": ["boolean"],
        "verbose": VERBOSE_CONSTRAINT,
    }

    def __init__(
        self,
        n_components: int = 2,
        *,
        eps: float = SolverParams.eps,
        max_iter: int = SolverParams.max_iter,
        tol: float = SolverParams.tol,
        init=SolverParams.init,
        n_init: int | str = SolverParams.n_init,
        acceleration: str | None = SolverParams.acceleration,
        linesearch="deprecated",
        random_state=SolverParams.random_state,
        algorithm: str = SolverParams.algorithm,
        solver: str = SolverParams.solver,
        center: bool = True,
        verbose: int = 0,
    ):
        self.n_components = n_components
        self.eps = eps
        self.max_iter = max_iter
        self.tol = tol
        self.init = init
        self.n_init = n_init
        self.acceleration = acceleration
        self.linesearch = linesearch
        self.random_state = random_state
        self.algorithm = algorithm
        self.solver = solver
        self.center = center
        self.verbose = verbose

    def fit(self, views, y=None):
        """Fit on a list of views, each (n_samples, d_p), dense or scipy.sparse."""
        check_positive_int(self.n_components, "n_components")
        return self._set_fitted(self._path(views, [self.n_components], False)[0])

    def _path(self, views, ranks, warm_start: bool) -> list[dict]:
        """Validate the parameters (once) and fit every rank of ``ranks``."""
        params = SolverParams.of(self)
        own = validate_params(
            {"center": self.center, "verbose": self.verbose},
            self._parameter_constraints,
        )
        ranks, warm_start = check_ranks(ranks, params.init, warm_start)
        with fit_progress(own["verbose"], "TCCA"):
            return tcca_rank_path(
                views, ranks, params, center=own["center"], warm_start=warm_start
            )

    def transform(self, views, per_view: bool = False):
        """[Z_1 ... Z_m] with Z_p = (X_p - mean_p) W_p, stacked or as a list.

        Dask views give lazy Dask arrays (nothing is computed until asked).
        """
        if is_dask_views(views):
            from .solver import dask as _dask

            return _dask.transform(self, views, per_view=per_view)
        from .solver import xp as _xp

        namespace = _xp.dispatch_namespace(views)
        if namespace is not None:
            return _xp.transform(self, views, per_view, namespace)
        return super().transform(views, per_view=per_view)

    def _set_fitted(self, out: dict):
        self.means_ = out["means"]
        self.factors_ = out["factors"]
        self.projections_ = out["projections"]
        self.weights_ = out["weights"]
        self.correlations_ = out["correlations"]
        self.n_iter_ = out["n_iter"]
        self.converged_ = out["converged"]
        self.reconstruction_errors_ = out["errors"]
        self.algorithm_ = out["engine"]
        self.init_ = out["init"]
        self.start_errors_ = out["start_errors"]
        self.fit_seconds_ = out["fit_seconds"]
        self.n_features_in_ = [W.shape[0] for W in self.projections_]
        warn_unconverged("TCCA", out, self.tol)
        return self

    def fit_path(self, views, ranks, *, warm_start: bool = False) -> list:
        """Fitted copies of this estimator, one per rank in ``ranks``.

        They share the whitening and M (or ||M||^2), and the exact HOSVD start
        when it is used; each copy has this estimator's parameters with
        ``n_components`` set to its rank. With the default ``warm_start=False``
        (and an int ``random_state``) each equals ``fit`` at that rank exactly.
        See :func:`tcca_path` for ``warm_start``.
        """
        from sklearn.base import clone

        params = self.get_params(deep=False)
        # as a list: tcca_path would use up a generator before the zip below
        ranks, _ = check_ranks(ranks, self.init, warm_start)
        outs = self._path(views, ranks, warm_start)
        fitted = []
        for r, o in zip(ranks, outs, strict=True):
            est = clone(self).set_params(**{**params, "n_components": r})
            fitted.append(est._set_fitted(o))
        return fitted

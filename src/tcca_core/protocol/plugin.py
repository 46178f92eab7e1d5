"""The runners' contract: a runner gets :class:`Inputs` and yields :class:`Fit`.

Rows are samples throughout. A method is a plug-in: a runner (the function that a
:class:`~tcca_core.registry.MethodSpec` names, :mod:`tcca_core.protocol.runners`)
takes the call's :class:`Inputs` (features, never labels) and the method's grid
points, and yields :class:`Fit` units: a fit of the DR step and the representation
of the evaluated rows it gives at each r (:class:`Rep`). What happens to them
(caching, measuring, capping r, the learner, the rows) is
:func:`~tcca_core.protocol.run_method`'s (:mod:`tcca_core.protocol.run`); a runner
imports only this module.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import scipy.sparse as sp

from ..kernels import ViewKernel
from .measure import _measure

__all__ = ["Fit", "Inputs", "Rep"]


@dataclass(frozen=True)
class Rep:
    """A representation of the evaluated rows, as a runner's ``Fit`` gives it.

    Rows are :attr:`Inputs.rows` (labeled, validation, test), in that order. A
    runner may also give a plain array or sparse matrix: the features ``Z``.

    Attributes
    ----------
    Z : array or sparse matrix, optional
        Features; the learner gets ``dim = Z.shape[1]`` columns.
    K : ndarray of shape (n_rows, n_labeled), optional
        Instead of features: the kernel between the evaluated and the labeled rows.
    diag : ndarray of shape (n_rows,), optional
        With ``K``: k(x, x) of the evaluated rows.
    parts : tuple of Rep
        Instead of either: the representations of several models (the pairs of
        CCA (AVG)), whose outputs the learner combines (``Learner.aggregate``).
    fit_s : float, optional
        The fit time of this r alone, where one fit serves several r (a TCCA rank
        path reports each rank's own ALS); default: the whole fit's.
    """

    Z: Any = None
    K: np.ndarray | None = None
    diag: np.ndarray | None = None
    parts: tuple[Rep, ...] = ()
    fit_s: float | None = None

    @property
    def dim(self) -> int | None:
        """Columns given to the learner (None for a kernel)."""
        if self.parts:
            return self.parts[0].dim
        return None if self.Z is None else int(self.Z.shape[1])


def _as_rep(x) -> Rep:
    return x if isinstance(x, Rep) else Rep(Z=x)


@dataclass(frozen=True)
class Fit:
    """One unit a runner yields: a fit of the DR step and the representations on it.

    :func:`~tcca_core.protocol.run_method` calls ``fit()`` (measured; cached under
    ``key``), then ``embed(fitted)`` once (measured: the transform of the evaluated
    rows), then the function it returns at every r that ``r_max`` allows; above
    ``r_max`` it records a capped row and, when ``r_max`` is known before the fit and
    caps every r, never fits. Each r gives one row per value of the learner's grid.

    Attributes
    ----------
    fit : callable () -> fitted
        The unsupervised step, on features only (:meth:`Inputs.fit_data`).
    embed : callable fitted -> (callable r -> Rep), optional
        The representation of the evaluated rows at r (``None`` for a method
        without r). Default: ``fitted`` is the representation at every r.
    params : dict
        The grid point (the row's ``params``, ``eps``, ``lambda1``, ``lambda2``).
    r_max : int or callable fitted -> int, optional
        The largest r the fit can give (None: no limit, or no r).
    r : int, optional
        The one r this fit serves (DSE: one fit per r); default: every r of the
        grid (or none, for a method without r).
    key : (str, sequence of int, object), optional
        (kind, views, parameters) that name the fit for the cache, together with the
        views' contents, its rows, the seed, the r grid and the kernel; None: never
        cached. Two methods naming the same key share the fit (CCA (BST) and
        (AVG): ``("cca", (p, q), params)``), so a kind names what is fitted. Fits
        with the same key in a row (SSMVD: one fit serves every (lambda1, lambda2))
        are fitted once per call even without a cache.
    rows : sequence of int, optional
        The rows of :attr:`Inputs.views` the fit sees, when not the split's fit rows
        (plus ``fit_views``): a transductive method's embedded rows (fitted on a
        subset of them: never cached); ``()``: no unsupervised step (BSF, CAT).
        ``n_fit`` counts them.
    view, pair : optional
        The row's ``view`` (BSF, BSK) and ``pair`` ("p-q" for BST, "all" for AVG).
    shared : bool
        The row's ``fit_shared``: one fit serves several rows (every r, or every
        (lambda1, lambda2)), each reporting its whole cost.
    costs : tuple of dict
        Costs measured elsewhere that the representation also needs (the kernel
        matrices of :meth:`Inputs.kernels`), added to the row's.
    parts : tuple of Fit
        Instead of ``fit``: several fits whose representations are combined at
        each r (CCA (AVG)); r_max is their smallest, the cost their sum.
    """

    fit: Callable[[], Any] | None = None
    embed: Callable[[Any], Callable[[int | None], Any]] | None = None
    params: Mapping = field(default_factory=dict)
    r_max: int | Callable[[Any], int] | None = None
    r: int | None = None
    key: tuple | None = None
    rows: Any = None
    view: int | None = None
    pair: str | None = None
    shared: bool = False
    costs: tuple = ()
    parts: tuple[Fit, ...] = ()


def _self_similarity(vk: ViewKernel, X) -> np.ndarray:
    """k(x, x) for every row of X."""
    if vk.kernel in ("chi2", "l2", "rbf"):
        return np.ones(X.shape[0])  # exp(-0) for every distance-based kernel
    if vk.kernel == "linear":
        return (
            np.asarray(X.multiply(X).sum(axis=1)).ravel()
            if sp.issparse(X)
            else (np.einsum("ij,ij->i", X, X))
        )
    return np.array([vk.evaluate(X[[i]], X[[i]])[0, 0] for i in range(X.shape[0])])


class Inputs:
    """What a runner sees of a :func:`~tcca_core.protocol.run_method` call: no labels.

    Attributes
    ----------
    method : str
        The method's registry key.
    views, fit_views : list
        The checked views (all N rows) and the extra unlabeled fit rows (or None).
    m, N : int
        Number of views and of rows.
    fit : ndarray or None
        The split's fit rows (None: every row).
    rows : ndarray
        The evaluated rows: labeled, validation, test, in that order.
    n_labeled : int
        How many of ``rows`` are labeled (the first ones).
    n_fit : int
        Rows of the split's fit (plus ``fit_views``).
    seed : int
        ``random_state`` of the randomized methods.
    r_grid : list of int
        The r grid (empty for a method without r).
    kernel : str or list
        The kernel per view of a kernel method.
    """

    def __init__(
        self, method, views, fit_views, split, rows, n_labeled, kernel, seed, r_grid
    ):
        self.method = method
        self.views, self.fit_views = views, fit_views
        self.m, self.N = len(views), views[0].shape[0]
        self.fit = split.fit  # None: every row
        self.rows, self.n_labeled = rows, n_labeled
        self.kernel, self.seed, self.r_grid = kernel, seed, r_grid
        self.n_fit = (self.N if self.fit is None else self.fit.size) + (
            0 if fit_views is None else fit_views[0].shape[0]
        )
        self._kernels: dict[int, dict] = {}

    def fit_data(self, idx) -> list:
        """Return views ``idx`` on the fit rows, with fit_views stacked below."""
        out = []
        for p in idx:
            X = self.views[p] if self.fit is None else self.views[p][self.fit]
            if self.fit_views is not None:
                E = self.fit_views[p]
                X = (
                    sp.vstack([X, E], format="csr")
                    if sp.issparse(X) or sp.issparse(E)
                    else np.vstack([X, E])
                )
            out.append(X)
        return out

    def row_data(self, idx) -> list:
        """Return views ``idx`` on the evaluated rows."""
        return [self.views[p][self.rows] for p in idx]

    def kernel_spec(self, p):
        """Return the kernel of view ``p``."""
        k = self.kernel
        if isinstance(k, (list, tuple)):
            if len(k) != self.m:
                raise ValueError(
                    f"kernel has {len(k)} entries but there are {self.m} views"
                )
            return k[p]
        return k

    def kernels(self, p) -> dict:
        """View p's kernel on the fit rows, against the evaluated rows, and costs.

        Keys ``fit`` (fit x fit), ``rows_fit`` (evaluated x fit), ``rows_lab``
        (evaluated x labeled), ``diag_rows`` (k(x, x) of the evaluated rows) and
        ``cost`` (give it to ``Fit.costs``). Computed once per call. lambda (max d)
        comes from the fit rows, as the paper's kernels are defined on all the
        instances the unsupervised step sees.
        """
        if p in self._kernels:
            return self._kernels[p]
        X, rows, lab = self.views[p], self.rows, self.rows[: self.n_labeled]
        with _measure() as cost:
            vk = ViewKernel(self.kernel_spec(p))
            if self.fit is None:
                K_fit = vk.fit(X)
                K_rows_fit = K_fit[rows]
                K_rows_lab = K_fit[np.ix_(rows, lab)]
                diag_rows = np.diag(K_fit)[rows]
            else:
                K_fit = vk.fit(X[self.fit])
                K_rows_fit = vk.cross(X[rows])
                # The kernel between any two rows, with the fit rows' scale.
                K_rows_lab = vk.evaluate(X[rows], X[lab])
                diag_rows = _self_similarity(vk, X[rows])
        out = {
            "fit": K_fit,
            "rows_fit": K_rows_fit,
            "rows_lab": K_rows_lab,
            "diag_rows": diag_rows,
            "cost": cost,
        }
        self._kernels[p] = out
        return out

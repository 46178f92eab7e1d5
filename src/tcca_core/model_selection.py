"""Cross-validation and hyperparameter search over lists of views.

scikit-learn's model-selection tools index one 2-D ``X``; given a list of views
they take the list of 3 views for 3 samples (with labels:
``inconsistent numbers of samples: [3, 300]``). The functions and classes here
are their namesakes for lists of views, with cca-zoo 4's interface
(``cca_zoo.model_selection``): they stack the views into one array for
scikit-learn, wrap the estimator in :class:`tcca_core.compose.MultiViewAdapter`
to cut it back, and report everything under the estimator's own parameter names.

Which score
-----------
Without ``scoring``, a fold is scored by the estimator's ``score`` on the held-out
views: the mean over components of the correlation of the held-out variates
(:func:`variate_correlations`). For CCA and KCCA that is the held-out canonical
correlation (cca-zoo's default score), for CCA-LS its average over view pairs,
for TCCA and KTCCA the high-order canonical correlation
(1/n) sum_n prod_p z_p[n, k] of the variates standardized over the held-out
samples (for two views, again the Pearson correlation). Use it to choose ``eps``,
kernels and kernel parameters at a fixed ``n_components``: a small ``eps``
overfits (high training correlation, lower held-out one). The mean falls as
weaker components are added, so it cannot choose ``n_components``; choose it, as
the paper does, by the accuracy of a classifier on the reduced data: a
:class:`~sklearn.pipeline.Pipeline` of :class:`~tcca_core.compose.ViewSplitter`,
the estimator and a classifier, tuned by scikit-learn's own ``GridSearchCV`` on
the concatenated views and the labels (``examples/model_selection.py``). The
same route suits KTCCA when its components may be heavy-tailed: a high-order
correlation rewards variates concentrated on a few extreme samples, on held-out
data too (``examples/demo.py``).

A ``scoring`` callable is called as ``scoring(estimator, views)`` with the fitted
multi-view estimator and the held-out views (cca-zoo's convention); a dict of
them gives several metrics.

Parameter names
---------------
``param_grid`` keys are the estimator's parameter names (``"eps"``,
``"kernel_params"``); ``"<name>__<p>"`` sets view p's entry of a per-view
parameter (a list such as KTCCA's ``kernel`` or ``kernel_params``), the other
views keeping their value. ``best_params_`` and ``cv_results_`` use the same
names, and ``best_estimator_`` is the refitted multi-view estimator.

Examples
--------
>>> import numpy as np
>>> from tcca_core import TCCA
>>> from tcca_core.model_selection import GridSearchCV, cross_val_score
>>> rng = np.random.default_rng(0)
>>> z = rng.exponential(size=(150, 1)) - 1
>>> views = [z @ rng.standard_normal((1, d)) + 0.5 * rng.standard_normal((150, d))
...          for d in (4, 5, 6)]
>>> cross_val_score(TCCA(1, random_state=0), views, cv=3).shape
(3,)
>>> search = GridSearchCV(TCCA(1, random_state=0), {"eps": [1e-3, 1e-1, 10.0]},
...                       cv=3).fit(views)
>>> sorted(search.best_params_)
['eps']
"""

from __future__ import annotations

import sklearn.model_selection as skms
from sklearn.base import BaseEstimator
from sklearn.utils.validation import check_is_fitted

from ._multiview import (
    high_order_correlations,
    pairwise_correlations,
    variate_correlations,
)
from .compose import MultiViewAdapter, _stack_views, stack_views

__all__ = [
    "GridSearchCV",
    "RandomizedSearchCV",
    "cross_val_score",
    "cross_validate",
    "high_order_correlations",
    "pairwise_correlations",
    "validation_curve",
    "variate_correlations",
]

_PREFIX = "estimator__"


def _wrap(estimator, views):
    """The estimator wrapped for one 2-D array, and that array.

    The views are checked first, as the estimators check them (every estimator
    takes at least 2 views of 2 samples): a bad view is named here, not inside
    every fold as a failed fit.
    """
    X, sizes = _stack_views(views, min_views=2, min_samples=2)
    return MultiViewAdapter(estimator, sizes), X


def _scoring(scoring):
    """A ``scoring(estimator, views)`` callable (or a dict of them) made into
    scikit-learn's ``scorer(adapter, X, y)``; strings and None pass through."""
    if isinstance(scoring, dict):
        return {name: _scoring(s) for name, s in scoring.items()}
    if not callable(scoring):
        return scoring

    def scorer(adapter, X, y=None):
        return float(scoring(adapter.estimator_, adapter._views(X, reset=False)))

    return scorer


def _prefixed(space):
    if isinstance(space, dict):
        return {_PREFIX + k: v for k, v in space.items()}
    return [_prefixed(s) for s in space]


def _unprefixed(key: str) -> str:
    return key[len(_PREFIX) :] if key.startswith(_PREFIX) else key


def _unwrap_results(results: dict) -> dict:
    out = {}
    for key, value in results.items():
        if key.startswith("param_" + _PREFIX):
            out["param_" + _unprefixed(key[len("param_") :])] = value
        elif key == "params":
            out[key] = [{_unprefixed(k): v for k, v in p.items()} for p in value]
        else:
            out[key] = value
    return out


class _MultiViewSearch:
    """Runs the scikit-learn search class that follows it in the bases on views.

    ``fit`` builds that search with the estimator wrapped in
    :class:`~tcca_core.compose.MultiViewAdapter`, the parameter names prefixed
    and ``scoring``/``refit`` adapted, runs it on the stacked views, and copies its
    results back under the estimator's own names (``search_`` keeps it).
    """

    def fit(self, views, y=None, **fit_params):
        """Run the search on a list of views.

        Parameters
        ----------
        views : list of arrays or sparse matrices of shape (n_samples, d_p)
        y : array-like of shape (n_samples,), optional
            Passed to the splitter (e.g. ``groups``-free stratification) and to
            the estimator; this package's estimators ignore it.
        **fit_params : dict
            Passed to the search's ``fit`` (e.g. ``groups``).

        Returns
        -------
        self
        """
        mro = type(self).__mro__
        upstream = mro[mro.index(_MultiViewSearch) + 1]
        params = self.get_params(deep=False)
        params["estimator"], X = _wrap(params["estimator"], views)
        for space in ("param_grid", "param_distributions"):
            if space in params:
                params[space] = _prefixed(params[space])
        params["scoring"] = _scoring(params["scoring"])
        if callable(params["refit"]):
            refit = params["refit"]
            params["refit"] = lambda results: refit(_unwrap_results(results))
        self.search_ = upstream(**params).fit(X, y, **fit_params)
        for attr, value in vars(self.search_).items():
            if attr.endswith("_") and not attr.endswith("__"):
                setattr(self, attr, value)
        self.cv_results_ = _unwrap_results(self.search_.cv_results_)
        if hasattr(self.search_, "best_params_"):
            self.best_params_ = {
                _unprefixed(k): v for k, v in self.search_.best_params_.items()
            }
        if hasattr(self.search_, "best_estimator_"):
            self.best_estimator_ = self.search_.best_estimator_.estimator_
        return self

    def transform(self, views, **kwargs):
        """``best_estimator_.transform(views)`` (needs ``refit``)."""
        check_is_fitted(self, "search_")
        if not self.refit:
            raise AttributeError(
                "transform is not available with refit=False: no best_estimator_ "
                "was fitted"
            )
        return self.best_estimator_.transform(views, **kwargs)

    def score(self, views, y=None) -> float:
        """The refitted best estimator's score on ``views`` (by ``scoring``)."""
        check_is_fitted(self, "search_")
        return float(self.search_.score(stack_views(views)[0], y))


class GridSearchCV(_MultiViewSearch, skms.GridSearchCV):
    """Exhaustive search over a multi-view estimator's parameters.

    :class:`sklearn.model_selection.GridSearchCV` (same parameters and
    attributes) whose ``fit``, ``transform`` and ``score`` take a list of views;
    see the module docstring for the score, the parameter names and per-view
    parameters. ``best_estimator_`` is the refitted multi-view estimator.

    Examples
    --------
    >>> import numpy as np
    >>> from tcca_core.baselines import CCA
    >>> rng = np.random.default_rng(0)
    >>> z = rng.standard_normal((120, 1))
    >>> views = [z + rng.standard_normal((120, 8)), z + rng.standard_normal((120, 9))]
    >>> search = GridSearchCV(CCA(1), {"eps": [1e-4, 1e-1, 1e2]}, cv=4).fit(views)
    >>> search.best_params_["eps"] > 1e-4
    True
    """


class RandomizedSearchCV(_MultiViewSearch, skms.RandomizedSearchCV):
    """Randomized search over a multi-view estimator's parameters.

    :class:`sklearn.model_selection.RandomizedSearchCV` on a list of views, as
    :class:`GridSearchCV`; ``param_distributions`` keys are the estimator's
    parameter names (e.g. ``{"eps": scipy.stats.loguniform(1e-4, 1e2)}``).
    """


def cross_val_score(estimator: BaseEstimator, views, y=None, **kwargs):
    """:func:`sklearn.model_selection.cross_val_score` on a list of views.

    Parameters
    ----------
    estimator : multi-view estimator
    views : list of arrays of shape (n_samples, d_p)
    y : array-like, optional
        Passed to the splitter and the estimator (ignored by the estimators).
    **kwargs : dict
        As for scikit-learn's function (``cv``, ``groups``, ``n_jobs``, ...); a
        ``scoring`` callable is called as ``scoring(estimator, views)``.

    Returns
    -------
    ndarray of shape (n_splits,)
        By default each fold's held-out mean correlation (see the module
        docstring).
    """
    adapter, X = _wrap(estimator, views)
    scoring = _scoring(kwargs.pop("scoring", None))
    return skms.cross_val_score(adapter, X, y, scoring=scoring, **kwargs)


def cross_validate(estimator: BaseEstimator, views, y=None, **kwargs) -> dict:
    """:func:`sklearn.model_selection.cross_validate` on a list of views.

    As :func:`cross_val_score`; with ``return_estimator=True`` the
    ``"estimator"`` entry holds the fitted multi-view estimators.
    """
    adapter, X = _wrap(estimator, views)
    scoring = _scoring(kwargs.pop("scoring", None))
    results = skms.cross_validate(adapter, X, y, scoring=scoring, **kwargs)
    if "estimator" in results:
        results["estimator"] = [a.estimator_ for a in results["estimator"]]
    return results


def validation_curve(
    estimator: BaseEstimator, views, param_name: str, param_range, y=None, **kwargs
):
    """:func:`sklearn.model_selection.validation_curve` on a list of views.

    ``param_name`` is the estimator's own parameter name (``"eps"``), or
    ``"<name>__<p>"`` for view p of a per-view parameter.

    Returns
    -------
    train_scores, test_scores : ndarray of shape (len(param_range), n_splits)
    """
    adapter, X = _wrap(estimator, views)
    scoring = _scoring(kwargs.pop("scoring", None))
    return skms.validation_curve(
        adapter,
        X,
        y,
        param_name=_PREFIX + param_name,
        param_range=param_range,
        scoring=scoring,
        **kwargs,
    )

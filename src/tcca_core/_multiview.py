"""What every multi-view estimator shares: a score, output names, ``set_output``, tags.

The estimators (:class:`~tcca_core.TCCA`, :class:`~tcca_core.KTCCA` and the CCA
baselines :class:`~tcca_core.baselines.CCA`, :class:`~tcca_core.baselines.KCCA`,
:class:`~tcca_core.baselines.CCALS`) take a *list of views*, each an
(n_samples, d_p) array. The two mixins here add to them, without touching their
fitting code:

- ``score(views)``: the mean over components of the correlation of the fitted
  variates on ``views`` (see :func:`variate_correlations`), so that
  :class:`~tcca_core.model_selection.GridSearchCV` and friends have an unsupervised
  criterion, as cca-zoo's estimators do;
- ``get_feature_names_out()`` and ``set_output(transform="pandas" | "polars")``,
  also for ``transform(views, per_view=True)`` (one container per view);
- scikit-learn tags saying that the input is not one 2-D array
  (``input_tags.two_d_array = False``), so that
  :func:`sklearn.utils.estimator_checks.check_estimator` skips the checks that feed
  a single array and runs only those that apply (cloning); the full battery runs on
  :class:`tcca_core.compose.MultiViewAdapter`, which takes one 2-D array.
"""

from __future__ import annotations

import inspect
from functools import wraps

import numpy as np

from ._validation import check_bool, check_finite

__all__ = [
    "HighOrderCorrelationMixin",
    "MultiViewMixin",
    "high_order_correlations",
    "pairwise_correlations",
    "variate_correlations",
]


def _standardize(Z: np.ndarray) -> np.ndarray:
    """Columns of Z at zero mean and unit variance (1/n); constant columns -> 0."""
    Z = np.asarray(Z, dtype=float)
    Zc = Z - Z.mean(axis=0)
    sd = np.sqrt(np.mean(Zc**2, axis=0))
    # A column constant on these samples carries no correlation: 0, not NaN.
    # The threshold is relative to the column's own size, so rounding noise in a
    # constant column is not blown up to unit variance.
    scale = np.max(np.abs(Z), axis=0, initial=0.0)
    ok = sd > 1e3 * np.finfo(float).eps * np.maximum(scale, np.finfo(float).tiny)
    return np.divide(Zc, sd, out=np.zeros_like(Zc), where=ok)


def _check_variates(Zs) -> list[np.ndarray]:
    """``Zs`` as float (n, r) arrays, at least two, all of one shape and finite.

    Standardizing would turn a NaN or infinite column into one counted as
    constant, i.e. a correlation of 0 that hides the bad input; so it raises.
    """
    if not isinstance(Zs, (list, tuple)):
        raise ValueError(
            "Zs must be a list of arrays of shape (n_samples, n_components), one "
            f"per view; got {type(Zs).__name__}"
        )
    if len(Zs) < 2:
        raise ValueError(f"correlations need at least 2 views, got {len(Zs)}")
    out = []
    for p, Z in enumerate(Zs):
        what = f"Zs[{p}] (the variates of view {p})"
        if Z is None:
            raise ValueError(f"{what} is None")
        try:
            Z = np.asarray(Z, dtype=float)
        except (TypeError, ValueError) as exc:
            raise ValueError(f"{what} is not an array of numbers: {exc}") from exc
        if Z.ndim != 2:
            raise ValueError(
                f"{what} must be 2-D (n_samples, n_components), got shape {Z.shape}"
            )
        if out and Z.shape != out[0].shape:
            raise ValueError(
                f"{what} has shape {Z.shape}, but Zs[0] has {out[0].shape}; every "
                "view needs the same samples and components"
            )
        check_finite(Z, what)
        out.append(Z)
    if out[0].shape[0] < 2:
        raise ValueError(
            "correlations are computed over the samples and need at least 2, got "
            f"{out[0].shape[0]}"
        )
    return out


def high_order_correlations(Zs) -> np.ndarray:
    """High-order correlation of standardized variates, one value per component.

    ``Zs`` is a list of m arrays of shape (n, r), the variates of one component k
    in column k of every view. Each column is centered and scaled to unit variance
    over the n samples, and

        rho_k = (1/n) sum_n prod_p Z~_p[n, k],

    the statistic TCCA maximizes (Luo et al., eq. 4.6) with the variance
    constraint met on these samples. For m = 2 it is the Pearson correlation. For
    m >= 3 it is a standardized co-moment (e.g. a co-skewness for m = 3): not
    bounded by 1, zero for jointly Gaussian variates, and as large as the shared
    signal is skewed. A column constant on these samples counts as 0.

    Raises a ``ValueError`` naming the view for NaN or infinite variates, arrays
    that are not 2-D or differ in shape, fewer than 2 views or 2 samples.
    """
    Zs = [_standardize(Z) for Z in _check_variates(Zs)]
    return np.mean(np.prod(np.stack(Zs), axis=0), axis=0)


def pairwise_correlations(Zs) -> np.ndarray:
    """Pearson correlation of each component, averaged over all pairs of views.

    ``Zs`` as in :func:`high_order_correlations`. For two views this is the
    canonical correlation of each component on these samples; for m views the
    average pairwise correlation that CCA-LS (MAXVAR) maximizes. This is also
    cca-zoo's per-dimension score (``average_pairwise_correlations``). Bad input
    raises as in :func:`high_order_correlations`.
    """
    Zs = [_standardize(Z) for Z in _check_variates(Zs)]
    m = len(Zs)
    total = sum(
        np.mean(Zs[p] * Zs[q], axis=0) for p in range(m) for q in range(p + 1, m)
    )
    return total / (m * (m - 1) / 2)


def variate_correlations(estimator, views) -> np.ndarray:
    """Correlation of each fitted component on ``views`` (e.g. held-out data).

    The variates are ``estimator.transform(views, per_view=True)``, standardized
    over the rows of ``views``. The statistic is the one the method maximizes:
    the high-order correlation (:func:`high_order_correlations`) for TCCA and
    KTCCA, the pairwise Pearson correlation (:func:`pairwise_correlations`) for
    CCA, KCCA and CCA-LS. Each value has the sign of the component's training
    correlation (``correlations_``) applied, so a component that keeps its
    direction on new data scores positive and one that flips scores negative.

    Parameters
    ----------
    estimator : fitted TCCA, KTCCA, CCA, KCCA or CCALS
    views : list of arrays of shape (n_samples, d_p)
        At least 2 samples.

    Returns
    -------
    ndarray of shape (n_components,)
    """
    from sklearn.utils.validation import check_is_fitted

    check_is_fitted(estimator)
    statistic = getattr(estimator, "_correlation_statistic", "pairwise")
    raw = _raw_transform(estimator, views)
    from .solver import xp as _xp

    namespace = _xp.dispatch_namespace(raw)
    if namespace is not None:  # variates on a device: standardized there
        return _xp.variate_correlations(estimator, raw, statistic, namespace)
    Zs = [np.asarray(Z, dtype=float) for Z in raw]
    if Zs[0].shape[0] < 2:
        raise ValueError(
            "scoring needs at least 2 samples (correlations are computed over the "
            f"samples), got {Zs[0].shape[0]}"
        )
    if statistic == "high_order":
        rho = high_order_correlations(Zs)
    else:
        rho = pairwise_correlations(Zs)
    sign = np.sign(np.asarray(getattr(estimator, "correlations_", 1.0), dtype=float))
    return rho * np.where(sign == 0, 1.0, sign)


def _raw_transform(estimator, views):
    """``transform(views, per_view=True)`` as NumPy arrays, whatever set_output says."""
    raw = getattr(type(estimator).transform, "__wrapped__", None)
    if raw is not None and getattr(type(estimator).transform, "_tcca_output", False):
        return raw(estimator, views, per_view=True)
    return estimator.transform(views, per_view=True)


def _output_container(estimator, data, views, columns):
    """``data`` as the container ``set_output`` asks for (arrays stay arrays)."""
    from sklearn.utils._set_output import ADAPTERS_MANAGER, _get_output_config

    dense = _get_output_config("transform", estimator)["dense"]
    if dense == "default" or not isinstance(data, np.ndarray):
        return data
    original = views[0] if isinstance(views, (list, tuple)) and views else None
    adapter = ADAPTERS_MANAGER.adapters[dense]
    return adapter.create_container(data, original, columns=columns, inplace=False)


def _wrap_output(method):
    """Wrap ``transform``/``fit_transform`` so their output follows ``set_output``.

    The stacked output becomes one DataFrame with :meth:`get_feature_names_out`'s
    columns; ``per_view=True`` gives one DataFrame per view with that view's
    columns. Output that is already a container (a ``fit_transform`` that calls
    the wrapped ``transform``) is passed through.

    ``per_view`` is checked to be a bool here, once for every estimator: any
    other value (``"no"``, 0) would pick the output type by its truthiness.
    """
    signature = inspect.signature(method)

    @wraps(method)
    def wrapped(self, views, *args, **kwargs):
        if args or "per_view" in kwargs:
            bound = signature.bind_partial(self, views, *args, **kwargs)
            if "per_view" in bound.arguments:
                check_bool(bound.arguments["per_view"], "per_view")
        out = method(self, views, *args, **kwargs)
        from sklearn.utils._set_output import _get_output_config

        if _get_output_config("transform", self)["dense"] == "default":
            return out
        if isinstance(out, list):
            names = self._feature_names_per_view()
            return [
                _output_container(self, Z, views, cols)
                for Z, cols in zip(out, names, strict=True)
            ]
        return _output_container(self, out, views, self.get_feature_names_out())

    wrapped._tcca_output = True
    return wrapped


class MultiViewMixin:
    """``score``, ``get_feature_names_out``, ``set_output`` and tags for multi-view
    estimators whose criterion is a pairwise correlation (CCA, KCCA, CCA-LS).

    Put it first among the bases, before scikit-learn's ``TransformerMixin``. The
    estimator must have ``transform(views, per_view=False)`` and, once fitted,
    ``correlations_`` and either ``projections_`` or ``dual_coef_`` (one (., r)
    array per view).
    """

    _correlation_statistic = "pairwise"

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        # scikit-learn's _SetOutputMixin has just wrapped the methods defined in
        # this class (it knows only one stacked array); put ours, which also knows
        # per_view lists, around the undecorated methods instead.
        for name in ("transform", "fit_transform"):
            method = getattr(cls, name, None)
            if method is None or getattr(method, "_tcca_output", False):
                continue
            while hasattr(method, "__wrapped__"):
                method = method.__wrapped__
            setattr(cls, name, _wrap_output(method))

    def score(self, views, y=None) -> float:
        """Mean correlation of the fitted components on ``views``; higher is better.

        The mean over the ``n_components`` components of
        :func:`variate_correlations`: for CCA and KCCA the canonical (Pearson)
        correlation of the two views' variates, for CCA-LS its average over
        pairs of views, for TCCA and KTCCA the high-order correlation of the
        standardized variates. On held-out views it measures how well the
        learned projections generalize, and unlike ``correlations_`` it does not
        depend on the regularization's scale, so it can compare ``eps`` values
        and kernels. Adding weaker components lowers the mean: choose
        ``n_components`` with a downstream score instead (see
        :mod:`tcca_core.model_selection`). With three or more views the
        high-order correlation rewards heavy-tailed variates: with a flexible
        kernel and a small ``eps``, KTCCA's components can concentrate on a few
        extreme samples and still score high on held-out data
        (``examples/demo.py``); where that matters, select by the downstream
        task too.

        Parameters
        ----------
        views : list of arrays of shape (n_samples, d_p)
        y : None
            Ignored.

        Returns
        -------
        float
        """
        rho = variate_correlations(self, views)
        if isinstance(rho, np.ndarray):
            return float(np.mean(rho))
        from .solver.xp import mean_of

        return mean_of(rho)  # device variates: their mean, not NumPy's conversion

    def _components_per_view(self) -> list[int]:
        from sklearn.utils.validation import check_is_fitted

        check_is_fitted(self)
        coefs = getattr(self, "projections_", None)
        if coefs is None:
            coefs = self.dual_coef_
        return [A.shape[1] for A in coefs]

    def _feature_names_per_view(self) -> list[np.ndarray]:
        prefix = type(self).__name__.lower()
        return [
            np.asarray([f"{prefix}_view{p}_{k}" for k in range(r)], dtype=object)
            for p, r in enumerate(self._components_per_view())
        ]

    def get_feature_names_out(self, input_features=None) -> np.ndarray:
        """Names of the columns of ``transform``: ``<class>_view<p>_<k>``.

        Column k of view p's block, e.g. ``tcca_view0_0, tcca_view0_1, ...,
        tcca_view1_0, ...`` in the order of ``transform(views)``.

        Parameters
        ----------
        input_features : list of array-like of str, optional
            Ignored apart from a check: one sequence of names per view, each as
            long as that view's number of features.

        Returns
        -------
        ndarray of str objects
        """
        names = self._feature_names_per_view()
        if input_features is not None:
            n_in = getattr(self, "n_features_in_", None)
            if n_in is None:  # kernel methods: the kernels know their input
                n_in = [vk.n_features_in_ for vk in self.kernels_]
            given = [len(f) for f in input_features]
            if given != list(n_in):
                raise ValueError(
                    "input_features must hold one sequence of names per view with "
                    f"{list(n_in)} names, got lengths {given}"
                )
        return np.concatenate(names)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        # Input is a list of 2-D views, not one 2-D array: check_estimator's data
        # generators do not apply (see tcca_core.compose.MultiViewAdapter).
        tags.input_tags.two_d_array = False
        # Sparse views are taken as they are (linear methods never densify them);
        # precomputed kernels must be dense.
        kernel = getattr(self, "kernel", None)
        kernels = kernel if isinstance(kernel, (list, tuple)) else [kernel]
        tags.input_tags.sparse = "precomputed" not in kernels
        tags.target_tags.required = False
        return tags


class HighOrderCorrelationMixin(MultiViewMixin):
    """:class:`MultiViewMixin` for TCCA and KTCCA: ``score`` is the mean high-order
    correlation of the standardized variates (:func:`high_order_correlations`)."""

    _correlation_statistic = "high_order"

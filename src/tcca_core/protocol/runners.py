"""The method runners: how each method of the registry fits and represents the rows.

Rows are samples throughout. A runner is ``runner(data, points)``: ``data`` is the
:class:`~tcca_core.protocol.plugin.Inputs` of one :func:`~tcca_core.protocol.run_method`
call (features, fit rows, evaluated rows, seed, r grid, kernels; never labels) and
``points`` the method's grid points (dicts of parameter values). It yields
:class:`~tcca_core.protocol.plugin.Fit` units, each a fit of the DR step (features
only) and the representation of the evaluated rows it gives at each r.
:func:`~tcca_core.protocol.run_method` does the rest: caching and measuring the fits,
capping r, the learner, the scores and the rows. Each
:class:`~tcca_core.registry.MethodSpec` names its runner here by its dotted name.
"""

from __future__ import annotations

import json
from collections.abc import Iterator

import numpy as np
import scipy.sparse as sp

from .._validation import check_views
from ..baselines._cca import CCA, KCCA, kernel_eigen, view_pairs
from ..baselines._cca_ls import CCALS
from ..baselines._single import concatenate_views, l2_normalize_rows, normalize_kernel
from ..kernels import center_kernel
from .measure import _measure
from .plugin import Fit, Inputs, Rep

__all__ = [
    "run_avg",
    "run_bsf",
    "run_bsk",
    "run_cat",
    "run_cca_avg",
    "run_cca_bst",
    "run_cca_ls",
    "run_dse",
    "run_kcca_avg",
    "run_kcca_bst",
    "run_ktcca",
    "run_ssmvd",
    "run_tcca",
]

#: ``Fit.rows`` of a representation without an unsupervised step (n_fit = 0).
_NO_FIT = ()


def run_bsf(data: Inputs, points) -> Iterator[Fit]:
    """BSF: each view alone (L2-normalized rows), the view chosen on validation."""
    for gp in points:
        for p, X in enumerate(data.views):

            def rows(X=X, gp=gp):
                Z = X[data.rows]
                return l2_normalize_rows(Z) if gp.get("normalize", True) else Z

            yield Fit(rows, params=gp, view=p, rows=_NO_FIT)


def run_cat(data: Inputs, points) -> Iterator[Fit]:
    """CAT: the views concatenated (each L2-normalized), no reduction."""
    for gp in points:

        def rows(gp=gp):
            V = data.row_data(range(data.m))
            if gp.get("normalize", True):
                return concatenate_views(V)
            return (
                sp.hstack(V, format="csr") if any(map(sp.issparse, V)) else np.hstack(V)
            )

        yield Fit(rows, params=gp, rows=_NO_FIT)


def _sliced(rows_of):
    """Return ``Fit.embed`` of a nested method: one transform, r columns per view."""

    def embed(est):
        Zs = est.transform(rows_of(), per_view=True)
        return lambda r: np.hstack([Zp[:, :r] for Zp in Zs])

    return embed


def _cca_fit(data: Inputs, idx, gp, pair=None, cls=CCA, kind="cca") -> Fit:
    """One fit of a nested linear method (CCA, CCA-LS) on the views ``idx``.

    Its key names the fit, not the method: CCA (BST) and (AVG) share their pairs.
    """
    return Fit(
        lambda: cls(
            n_components=None, eps=gp["eps"], center=gp.get("center", True)
        ).fit(data.fit_data(idx)),
        _sliced(lambda: data.row_data(idx)),
        params=gp,
        r_max=lambda est: est.r_max_,
        key=(kind, idx, gp),
        pair=pair,
        shared=True,
    )


def _kcca_components(data: Inputs, kernels) -> int:
    """Components one KCCA fit must return: the grid's largest r, within the rank.

    Asking for fewer than all components lets KCCA take its top-r route (an
    eigenvalue subset instead of a full SVD of an r_p x r_q matrix, N x N for a
    kernel of full rank): the leading components are the same (to 1e-8, up to a
    rotation inside a repeated correlation, as in ``kcca_from_kernels``). The
    eigendecompositions are cached, so the fit reuses them.
    """
    ranks = [kernel_eigen(center_kernel(K)[0]).rank for K in kernels]
    return max(1, min(max(data.r_grid), *ranks))


def _kcca_fit(data: Inputs, idx, gp, pair=None) -> Fit:
    """One KCCA fit on the kernels of the views ``idx`` (shared like CCA's)."""
    K = [data.kernels(p) for p in idx]

    def fit():
        Ks = [k["fit"] for k in K]
        return KCCA(
            n_components=_kcca_components(data, Ks),
            eps=gp["eps"],
            kernel="precomputed",
        ).fit(Ks)

    return Fit(
        fit,
        _sliced(lambda: [k["rows_fit"] for k in K]),
        params=gp,
        r_max=lambda est: est.r_max_,
        key=("kcca", idx, gp),
        pair=pair,
        shared=True,
        costs=tuple(k["cost"] for k in K),
    )


def _pairs(data: Inputs):
    return [((p, q), f"{p}-{q}") for p, q in view_pairs(data.m)]


def run_cca_bst(data: Inputs, points) -> Iterator[Fit]:
    """CCA (BST): two-view CCA on every pair, the pair chosen on validation."""
    for idx, tag in _pairs(data):
        for gp in points:
            yield _cca_fit(data, idx, gp, tag)


def run_kcca_bst(data: Inputs, points) -> Iterator[Fit]:
    """KCCA (BST): kernel CCA on every pair, the pair chosen on validation."""
    for idx, tag in _pairs(data):
        for gp in points:
            yield _kcca_fit(data, idx, gp, tag)


def run_cca_ls(data: Inputs, points) -> Iterator[Fit]:
    """CCA-LS: one multi-view CCA (least-squares form) on all the views."""
    idx = tuple(range(data.m))
    for gp in points:
        yield _cca_fit(data, idx, gp, cls=CCALS, kind="cca_ls")


def run_cca_avg(data: Inputs, points) -> Iterator[Fit]:
    """CCA (AVG): CCA on every pair (the fits of BST), the pair models combined."""
    for gp in points:
        pairs = tuple(_cca_fit(data, idx, gp) for idx, _ in _pairs(data))
        yield Fit(params=gp, pair="all", shared=True, parts=pairs)


def run_kcca_avg(data: Inputs, points) -> Iterator[Fit]:
    """KCCA (AVG): kernel CCA on every pair, the pair models combined."""
    for gp in points:
        pairs = tuple(_kcca_fit(data, idx, gp) for idx, _ in _pairs(data))
        yield Fit(params=gp, pair="all", shared=True, parts=pairs)


def _path_fits(
    data: Inputs,
    points,
    kind,
    r_max,
    fit_path,
    rows,
    scale=1.0,
    costs=(),
    transform=None,
):
    """Yield the rank grid of TCCA/KTCCA: one ``fit_path`` per grid point, every r.

    The whitening (or kernels and Cholesky factors) and the moment tensor are
    computed once per grid point. fit_s per r is the estimator's ``fit_seconds_``
    (its own ALS plus the shared setup); peak_mb is the peak of the whole path.
    ``transform`` (estimator -> representation of ``rows``) replaces
    ``est.transform(rows)``.
    """
    ranks = [r for r in data.r_grid if r <= r_max]  # the ranks the path fits
    transform = transform or (lambda est: est.transform(rows))

    def embed(ests):
        return lambda r: Rep(Z=scale * transform(ests[r]), fit_s=ests[r].fit_seconds_)

    for gp in points:

        def fit(gp=gp):
            fitted = fit_path(ranks, random_state=data.seed, **gp)
            return dict(zip(ranks, fitted, strict=True))

        yield Fit(
            fit,
            embed,
            params=gp,
            r_max=r_max,
            key=(kind, tuple(range(data.m)), gp),
            shared=True,
            costs=costs,
        )


def run_tcca(data: Inputs, points) -> Iterator[Fit]:
    """TCCA (and TCCA on the uncentered views): the rank path per eps."""
    from .._tcca import TCCA
    from ..solver.params import max_cp_rank

    r_max, _ = max_cp_rank(data.n_fit, [X.shape[1] for X in data.views])

    def fit_path(ranks, warm_start=False, **kw):
        views = data.fit_data(range(data.m))
        return TCCA(**kw).fit_path(views, ranks, warm_start=warm_start)

    rows = data.row_data(range(data.m))
    yield from _path_fits(data, points, "tcca path", r_max, fit_path, rows)


def run_ktcca(data: Inputs, points) -> Iterator[Fit]:
    """KTCCA: the rank path per eps on the views' kernels."""
    from .._ktcca import KTCCA

    K = [data.kernels(p) for p in range(data.m)]
    N_fit = K[0]["fit"].shape[0]

    def fit_path(ranks, warm_start=False, **kw):
        Ks = [k["fit"] for k in K]
        return KTCCA(kernel="precomputed", **kw).fit_path(
            Ks, ranks, warm_start=warm_start
        )

    rows = [k["rows_fit"] for k in K]
    centered: list = []

    def transform(est):
        # Every rank and eps of the job shares the kernels and their centering,
        # so the centered cross kernels are made once (lazily: outside the fit's
        # measured cost, where the transforms were before).
        if not centered:
            centered.append(est._centered_cross(rows))
        return est._project(centered[0])

    # r_max = max_cp_rank(N, [N] * m) = N; sqrt(N): unit-variance columns like
    # KCCA's (baselines.md section 0).
    yield from _path_fits(
        data,
        points,
        "ktcca path",
        N_fit,
        fit_path,
        rows,
        scale=np.sqrt(N_fit),
        costs=tuple(k["cost"] for k in K),
        transform=transform,
    )


_LAMBDAS = ("lambda1", "lambda2")


def _estimator_args(gp: dict) -> dict:
    """Grid point without the protocol-level options (``subset``)."""
    return {k: v for k, v in gp.items() if k != "subset"}


def _spectral_data(data: Inputs):
    """Rows a transductive method embeds: the fit rows and every evaluated row.

    Returns the views on those rows, the evaluated rows' positions among them and
    the rows (``Fit.rows``: on every row, the same fit in every split).
    """
    fit = np.arange(data.N) if data.fit is None else data.fit
    rows = np.union1d(fit, data.rows)
    return [X[rows] for X in data.views], np.searchsorted(rows, data.rows), rows


def _spectral_r_max(data, gp: dict, seed, patterns=None) -> int:
    """Most consensus components DSE/SSMVD can return on ``data``.

    With PCA patterns (the paper's setting) that is the rank of the concatenated
    per-view PCA patterns (<= sum_p min(100, d_p); ``patterns``: SSMVD's
    ``SSMVDPatterns`` of ``data`` where the caller has them); graph
    eigenvectors are only limited by N - 1 (baselines.md section 0).
    """
    from ..baselines._consensus import ConsensusBasis
    from ..baselines._dse import view_patterns

    N = data[0].shape[0]
    if gp.get("view_embedding", "pca") != "pca":
        return N - 1
    if patterns is not None:
        return min(patterns.rank, N - 1)
    patterns, _ = view_patterns(
        check_views(data),
        None,
        view_embedding="pca",
        pca_components=gp.get("pca_components", 100),
        random_state=seed,
    )
    return min(ConsensusBasis(np.hstack(patterns)).rank, N - 1)


def _evaluated(pos, key=None):
    """Return ``Fit.embed`` of a transductive fit: its embedding's evaluated rows."""

    def embed(Z):
        Z = Z if key is None else Z[key]  # SSMVD: one embedding per (r, lambdas)
        return lambda r: Z[pos]

    return embed


def run_dse(data: Inputs, points) -> Iterator[Fit]:
    """DSE: transductive consensus embedding, one fit per r (shared by splits)."""
    from ..baselines._dse import DSE

    views, pos, rows = _spectral_data(data)
    for gp in points:
        r_max = _spectral_r_max(views, gp, data.seed)
        for r in data.r_grid:

            def fit(gp=gp, r=r):
                est = DSE(r, random_state=data.seed, **_estimator_args(gp))
                return est.fit_transform(views)

            yield Fit(
                fit,
                _evaluated(pos),
                params=gp,
                r=r,
                r_max=r_max,
                key=(f"dse r={r}", (), gp),
                rows=rows,
            )


def run_ssmvd(data: Inputs, points) -> Iterator[Fit]:
    """SSMVD: one fit per r serving every (lambda1, lambda2) of the grid.

    One ``fit_transform_grid`` call per (other settings, r) serves every (lambda1,
    lambda2); its units follow each other with one key, so run_method fits it once.
    With PCA patterns (the paper's setting) the per-view patterns and their
    consensus basis depend on neither r nor the lambdas: they are computed once per
    setting, before the fits (they also give r_max), and every r's fit uses them.

    Time accounting: that shared step is measured once and its cost is added to
    every r's fit (``Fit.costs``), so each row's ``fit_s`` stays that of a
    standalone SSMVD fit at that r, as when each r computed its own patterns. This
    is DSE's convention (:func:`run_dse`: every r's fit includes its patterns) and
    the rank paths' (each rank's ``fit_s`` includes the shared setup): a
    time-against-r row is what it costs to produce that r's representation, and
    summing ``fit_s`` over r counts the shared step once per r. ``peak_mb`` is the
    larger of the two blocks' peaks, as for the kernel methods' kernels: it no
    longer counts the patterns held during the solve. Spectral patterns have r
    columns, so there each r still computes its own.
    """
    from ..baselines._ssmvd import SSMVD

    views, pos, rows = _spectral_data(data)
    groups: dict[str, list[dict]] = {}
    for gp in points:
        rest = {k: v for k, v in _estimator_args(gp).items() if k not in _LAMBDAS}
        groups.setdefault(json.dumps(rest, sort_keys=True, default=str), []).append(gp)
    for gps in groups.values():
        rest = {k: v for k, v in _estimator_args(gps[0]).items() if k not in _LAMBDAS}
        lambdas = [(gp["lambda1"], gp["lambda2"]) for gp in gps]
        shared, costs = _ssmvd_patterns(views, rest, data.seed)
        r_max = _spectral_r_max(views, rest, data.seed, patterns=shared)
        for r in data.r_grid:

            def fit(rest=rest, lambdas=lambdas, r=r, shared=shared):
                est = SSMVD(r, random_state=data.seed, **rest)
                return est.fit_transform_grid(
                    views, [r], lambdas=lambdas, patterns=shared
                )

            for gp, lam in zip(gps, lambdas, strict=True):
                yield Fit(
                    fit,
                    _evaluated(pos, (r, *lam)),
                    params=gp,
                    r=r,
                    r_max=r_max,
                    key=(f"ssmvd r={r}", (), {"rest": rest, "lambdas": lambdas}),
                    rows=rows,
                    shared=len(gps) > 1,
                    costs=costs,
                )


def _ssmvd_patterns(views, rest: dict, seed):
    """SSMVD's shared per-view PCA step on ``views``, and its measured cost.

    Returns ``(SSMVDPatterns, (cost,))``, or ``(None, ())`` for spectral patterns
    (which depend on r).
    """
    from ..baselines._ssmvd import SSMVD

    est = SSMVD(1, random_state=seed, **rest)
    if est.view_embedding != "pca":
        return None, ()
    with _measure() as cost:
        shared = est.pca_patterns(views)
    return shared, (cost,)


def run_bsk(data: Inputs, points) -> Iterator[Fit]:
    """BSK: each view's kernel alone, the view chosen on validation."""
    for p in range(data.m):
        K = data.kernels(p)
        yield Fit(
            lambda K=K: Rep(K=K["rows_lab"], diag=K["diag_rows"]),  # type: ignore[misc]
            params={"kernel": data.kernel_spec(p)},
            view=p,
            costs=(K["cost"],),
        )


def run_avg(data: Inputs, points) -> Iterator[Fit]:
    """AVG: the mean of the views' normalized kernels."""
    Ks = [data.kernels(p) for p in range(data.m)]

    def mean_kernel():
        lab = slice(0, data.n_labeled)
        Kbar = np.mean(
            [
                normalize_kernel(K["rows_lab"], K["diag_rows"], K["diag_rows"][lab])
                for K in Ks
            ],
            axis=0,
        )
        dbar = np.mean([(K["diag_rows"] > 0).astype(float) for K in Ks], axis=0)
        return Rep(K=Kbar, diag=dbar)

    yield Fit(
        mean_kernel,
        params={"kernel": [data.kernel_spec(p) for p in range(data.m)]},
        costs=tuple(K["cost"] for K in Ks),
    )

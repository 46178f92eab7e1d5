"""The method runners: how each method of the registry is fitted and evaluated.

Rows are samples throughout. A runner is ``runner(run, points)``: ``run`` is the
:class:`~tcca_core.protocol.run._Run` of one :func:`~tcca_core.protocol.run_method`
call (views, split, learner context, r grid, cache) and ``points`` the method's grid
points (dicts of parameter values). For every r and grid point it builds the
representation of the evaluated rows, calls the learner (``run.ctx.outputs`` or
``run.ctx.kernel_outputs``) and records the scores with ``run.add``. Each
:class:`~tcca_core.registry.MethodSpec` names its runner here by its dotted name.

Fits that do not depend on the split go through ``run.cached`` (one fit per cache);
the cost of producing each representation is measured with ``_measure``.
"""

from __future__ import annotations

import json

import numpy as np
import scipy.sparse as sp

from .._validation import check_views
from ..baselines._cca import CCA, KCCA, kernel_eigen, view_pairs
from ..baselines._cca_ls import CCALS
from ..baselines._single import concatenate_views, l2_normalize_rows, normalize_kernel
from ..kernels import center_kernel
from .run import _add_costs, _measure, _Run

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


def run_bsf(run: _Run, points):
    """BSF: each view alone (L2-normalized rows), the view chosen on validation."""
    run.n_fit = 0  # no unsupervised step
    for gp in points:
        for p, X in enumerate(run.views):
            with _measure() as cost:
                Z = X[run.ctx.rows]
                Z = l2_normalize_rows(Z) if gp.get("normalize", True) else Z
            run.add(run.ctx.outputs(Z), dim=X.shape[1], view=p, params=gp, cost=cost)


def run_cat(run: _Run, points):
    """CAT: the views concatenated (each L2-normalized), no reduction."""
    run.n_fit = 0
    for gp in points:
        with _measure() as cost:
            V = run.row_data(range(run.m))
            if gp.get("normalize", True):
                Z = concatenate_views(V)
            else:
                Z = (
                    sp.hstack(V, format="csr")
                    if any(map(sp.issparse, V))
                    else np.hstack(V)
                )
        run.add(run.ctx.outputs(Z), dim=Z.shape[1], params=gp, cost=cost)


def _run_nested(run: _Run, points, make, idx_sets):
    """Run a nested method (CCA, CCA-LS, KCCA) per view subset: one fit, r sliced."""
    for idx, tag in idx_sets:
        for gp in points:
            Zs, r_max, cost = make(run, idx, gp)
            for r, capped in run.r_values(r_max):
                if capped:
                    run.add(None, r=r, r_max=r_max, pair=tag, params=gp)
                    continue
                Z = np.hstack([Zp[:, :r] for Zp in Zs])
                run.add(
                    run.ctx.outputs(Z),
                    r=r,
                    r_max=r_max,
                    dim=Z.shape[1],
                    pair=tag,
                    params=gp,
                    cost=cost,
                    shared=True,
                )


def _fit_once(run: _Run, kind, idx, gp, make):
    """(estimator, cost of its fit) of ``make()``, shared across splits."""

    def fit():
        with _measure() as cost:
            est = make()
        return est, cost

    return run.cached(kind, idx, gp, fit)


def _transform(est, data, fit_cost):
    with _measure() as cost:
        Zs = est.transform(data, per_view=True)
    return Zs, est.r_max_, _add_costs(fit_cost, cost)


def _linear_fit(cls, kind: str):
    """Return the fit of a nested linear method (CCA, CCA-LS) on the views ``idx``."""

    def fit(run: _Run, idx, gp):
        est, cost = _fit_once(
            run,
            kind,
            idx,
            gp,
            lambda: cls(
                n_components=None, eps=gp["eps"], center=gp.get("center", True)
            ).fit(run.fit_data(idx)),
        )
        return _transform(est, run.row_data(idx), cost)

    return fit


_fit_cca = _linear_fit(CCA, "cca")
_fit_cca_ls = _linear_fit(CCALS, "cca_ls")


def _kcca_components(run: _Run, kernels) -> int:
    """Components one KCCA fit must return: the grid's largest r, within the rank.

    Asking for fewer than all components lets KCCA take its top-r route (an
    eigenvalue subset instead of a full SVD of an r_p x r_q matrix, N x N for a
    kernel of full rank): the leading components are the same (to 1e-8, up to a
    rotation inside a repeated correlation, as in ``kcca_from_kernels``). The
    eigendecompositions are cached, so the fit reuses them.
    """
    ranks = [kernel_eigen(center_kernel(K)[0]).rank for K in kernels]
    return max(1, min(max(run.r_grid), *ranks))


def _fit_kcca(run: _Run, idx, gp):
    K = [run.kernels(p) for p in idx]

    def make():
        Ks = [k["fit"] for k in K]
        return KCCA(
            n_components=_kcca_components(run, Ks),
            eps=gp["eps"],
            kernel="precomputed",
        ).fit(Ks)

    est, cost = _fit_once(run, "kcca", idx, gp, make)
    Zs, r_max, cost = _transform(est, [k["rows_fit"] for k in K], cost)
    return Zs, r_max, _add_costs(cost, *(k["cost"] for k in K))


def _pairs(run: _Run):
    return [((p, q), f"{p}-{q}") for p, q in view_pairs(run.m)]


def run_cca_bst(run: _Run, points):
    """CCA (BST): two-view CCA on every pair, the pair chosen on validation."""
    _run_nested(run, points, _fit_cca, _pairs(run))


def run_kcca_bst(run: _Run, points):
    """KCCA (BST): kernel CCA on every pair, the pair chosen on validation."""
    _run_nested(run, points, _fit_kcca, _pairs(run))


def run_cca_ls(run: _Run, points):
    """CCA-LS: one multi-view CCA (least-squares form) on all the views."""
    _run_nested(run, points, _fit_cca_ls, [(tuple(range(run.m)), None)])


def _run_avg_pairs(run: _Run, points, fit):
    """CCA (AVG) / KCCA (AVG): one r and eps shared by all pairs, outputs combined."""
    for gp in points:
        fits = [fit(run, idx, gp) for idx, _ in _pairs(run)]
        r_max = min(f[1] for f in fits)
        cost = _add_costs(*(f[2] for f in fits))
        for r, capped in run.r_values(r_max):
            if capped:
                run.add(None, r=r, r_max=r_max, pair="all", params=gp)
                continue
            outs = [
                run.ctx.outputs(np.hstack([Zp[:, :r] for Zp in f[0]])) for f in fits
            ]
            run.add(
                run.ctx.aggregate(outs),
                r=r,
                r_max=r_max,
                dim=2 * r,
                pair="all",
                params=gp,
                cost=cost,
                shared=True,
            )


def run_cca_avg(run: _Run, points):
    """CCA (AVG): CCA on every pair, the pair models combined."""
    _run_avg_pairs(run, points, _fit_cca)


def run_kcca_avg(run: _Run, points):
    """KCCA (AVG): kernel CCA on every pair, the pair models combined."""
    _run_avg_pairs(run, points, _fit_kcca)


def _run_path(run: _Run, points, r_max, fit_path, fit_data, row_data, scale=1.0):
    """Run the rank grid of TCCA/KTCCA through ``fit_path``.

    The whitening (or kernels and Cholesky factors) and the moment tensor are
    computed once per grid point.

    fit_s per r is the estimator's ``fit_seconds_``: its own ALS plus the shared
    setup; peak_mb is the peak of the whole path (``fit_shared`` is True).
    """
    for gp in points:
        grid = list(run.r_values(r_max))
        ranks = [r for r, capped in grid if not capped]
        ests, path_cost = {}, None
        if ranks:

            def fit(gp=gp, ranks=ranks):
                with _measure() as cost:
                    fitted = fit_path(fit_data(), ranks, random_state=run.seed, **gp)
                return dict(zip(ranks, fitted, strict=True)), cost

            ests, path_cost = run.cached("path", range(run.m), gp, fit)
        for r, capped in grid:
            if capped:
                run.add(None, r=r, r_max=r_max, params=gp)
                continue
            est = ests[r]
            assert path_cost is not None  # some rank was fitted
            Z = scale * est.transform(row_data)
            cost = {"fit_s": est.fit_seconds_, "peak_mb": path_cost["peak_mb"]}
            run.add(
                run.ctx.outputs(Z),
                r=r,
                r_max=r_max,
                dim=Z.shape[1],
                params=gp,
                cost=cost,
                shared=True,
            )


def run_tcca(run: _Run, points):
    """TCCA (and TCCA on the uncentered views): the rank path per eps."""
    from .._tcca import TCCA, max_cp_rank

    dims = [X.shape[1] for X in run.views]
    r_max, _ = max_cp_rank(run.n_fit, dims)
    _run_path(
        run,
        points,
        r_max,
        lambda views, ranks, warm_start=False, **kw: TCCA(**kw).fit_path(
            views, ranks, warm_start=warm_start
        ),
        lambda: run.fit_data(range(run.m)),
        run.row_data(range(run.m)),
    )


def run_ktcca(run: _Run, points):
    """KTCCA: the rank path per eps on the views' kernels."""
    from .._ktcca import KTCCA

    K = [run.kernels(p) for p in range(run.m)]
    N_fit = K[0]["fit"].shape[0]
    kernel_cost = _add_costs(*(k["cost"] for k in K))

    def fit_path(Ks, ranks, warm_start=False, **kw):
        ests = KTCCA(kernel="precomputed", **kw).fit_path(
            Ks, ranks, warm_start=warm_start
        )
        for est in ests:  # the kernel matrices were computed by the protocol
            est.fit_seconds_ += kernel_cost["fit_s"]
        return ests

    # r_max = max_cp_rank(N, [N] * m) = N; sqrt(N): unit-variance columns like
    # KCCA's (baselines.md section 0).
    _run_path(
        run,
        points,
        N_fit,
        fit_path,
        lambda: [k["fit"] for k in K],
        [k["rows_fit"] for k in K],
        scale=np.sqrt(N_fit),
    )


_LAMBDAS = ("lambda1", "lambda2")


def _estimator_args(gp: dict) -> dict:
    """Grid point without the protocol-level options (``subset``)."""
    return {k: v for k, v in gp.items() if k != "subset"}


def _spectral_data(run: _Run):
    """Rows a transductive method embeds: the fit rows and every evaluated row."""
    fit = np.arange(run.N) if run.fit is None else run.fit
    rows = np.union1d(fit, run.ctx.rows)
    run.n_fit = rows.size
    return [X[rows] for X in run.views], np.searchsorted(rows, run.ctx.rows), rows


def _spectral_r_max(data, gp: dict, seed) -> int:
    """Most consensus components DSE/SSMVD can return on ``data``.

    With PCA patterns (the paper's setting) that is the rank of the concatenated
    per-view PCA patterns (<= sum_p min(100, d_p)); graph eigenvectors are only
    limited by N - 1 (baselines.md section 0).
    """
    from ..baselines._dse import ConsensusBasis, view_patterns

    N = data[0].shape[0]
    if gp.get("view_embedding", "pca") != "pca":
        return N - 1
    patterns, _ = view_patterns(
        check_views(data),
        None,
        view_embedding="pca",
        pca_components=gp.get("pca_components", 100),
        random_state=seed,
    )
    return min(ConsensusBasis(np.hstack(patterns)).rank, N - 1)


def run_dse(run: _Run, points):
    """DSE: transductive consensus embedding, one fit per r (shared by splits)."""
    from ..baselines._dse import DSE

    data, pos, rows = _spectral_data(run)
    for gp in points:
        r_max = _spectral_r_max(data, gp, run.seed)
        for r, capped in run.r_values(r_max):
            if capped:
                run.add(None, r=r, r_max=r_max, params=gp)
                continue

            def fit(gp=gp, r=r):
                with _measure() as cost:
                    est = DSE(r, random_state=run.seed, **_estimator_args(gp))
                    Z = est.fit_transform(data)
                return Z, cost

            # Transductive on the same rows in every split (all rows, e.g. Ads,
            # mfeat): one fit per cache.
            Z, cost = run.cached(f"dse r={r}", (), gp, fit, rows=rows)
            run.add(
                run.ctx.outputs(Z[pos]),
                r=r,
                r_max=r_max,
                dim=Z.shape[1],
                params=gp,
                cost=cost,
            )


def run_ssmvd(run: _Run, points):
    """SSMVD: one fit per r serving every (lambda1, lambda2) of the grid."""
    from ..baselines._ssmvd import SSMVD

    data, pos, rows = _spectral_data(run)
    # One fit_transform_grid call per (other settings, r) serves every
    # (lambda1, lambda2): the PCA patterns and their Gram matrix are shared.
    groups: dict[str, list[dict]] = {}
    for gp in points:
        rest = {k: v for k, v in _estimator_args(gp).items() if k not in _LAMBDAS}
        groups.setdefault(json.dumps(rest, sort_keys=True, default=str), []).append(gp)
    for gps in groups.values():
        rest = {k: v for k, v in _estimator_args(gps[0]).items() if k not in _LAMBDAS}
        lambdas = [(gp["lambda1"], gp["lambda2"]) for gp in gps]
        r_max = _spectral_r_max(data, rest, run.seed)
        for r, capped in run.r_values(r_max):
            if capped:
                for gp in gps:
                    run.add(None, r=r, r_max=r_max, params=gp)
                continue

            def fit(rest=rest, lambdas=lambdas, r=r):
                with _measure() as cost:
                    est = SSMVD(r, random_state=run.seed, **rest)
                    Zs = est.fit_transform_grid(data, [r], lambdas=lambdas)
                return Zs, cost

            Zs, cost = run.cached(
                f"ssmvd r={r}", (), {"rest": rest, "lambdas": lambdas}, fit, rows=rows
            )
            for gp, (l1, l2) in zip(gps, lambdas, strict=True):
                Z = Zs[(r, l1, l2)]
                run.add(
                    run.ctx.outputs(Z[pos]),
                    r=r,
                    r_max=r_max,
                    dim=Z.shape[1],
                    params=gp,
                    cost=cost,
                    shared=len(gps) > 1,
                )


def run_bsk(run: _Run, points):
    """BSK: each view's kernel alone, the view chosen on validation."""
    for p in range(run.m):
        K = run.kernels(p)
        out = run.ctx.kernel_outputs(K["rows_lab"], K["diag_rows"])
        run.add(out, view=p, params={"kernel": run.kernel_spec(p)}, cost=K["cost"])


def run_avg(run: _Run, points):
    """AVG: the mean of the views' normalized kernels."""
    Ks = [run.kernels(p) for p in range(run.m)]
    with _measure() as cost:
        lab = slice(0, run.ctx.n_l)
        Kbar = np.mean(
            [
                normalize_kernel(K["rows_lab"], K["diag_rows"], K["diag_rows"][lab])
                for K in Ks
            ],
            axis=0,
        )
        dbar = np.mean([(K["diag_rows"] > 0).astype(float) for K in Ks], axis=0)
    out = run.ctx.kernel_outputs(Kbar, dbar)
    run.add(
        out,
        params={"kernel": [run.kernel_spec(p) for p in range(run.m)]},
        cost=_add_costs(cost, *(K["cost"] for K in Ks)),
    )

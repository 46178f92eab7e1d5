r"""DSE: multiple-view spectral dimensionality reduction (Long, Yu & Zhang, SDM 2008).

Rows are samples throughout: a view is ``X_p`` of shape ``(N, d_p)`` (the paper's
``X_p`` is its transpose).

Model
-----
Long et al.'s general model learns one pattern ``A^{(p)} \in R^{N x k_p}`` per view
with any single-view method, then a consensus pattern ``B`` and mapping functions
``P_p`` that make the patterns comparable:

.. math::

    \min_{B, P_1..P_m} \sum_p w_p \| A^{(p)} - B P_p \|_F^2
    \quad \text{s.t.} \quad B^T B = I_r .

For fixed ``B`` the optimal map is ``P_p = B^T A^{(p)}``; substituting it leaves
``max tr(B^T (sum_p w_p A^{(p)} A^{(p)T}) B)``, whose **global** optimum is the
top-``r`` eigenvectors of the ``N x N`` matrix ``sum_p w_p A^{(p)} A^{(p)T}``, i.e. the
top-``r`` left singular vectors of ``A = [sqrt(w_1) A^{(1)}, ..., sqrt(w_m) A^{(m)}]``.
We never form the ``N x N`` matrix: the thin SVD of ``A`` comes from the eigen-
decomposition of its ``K x K`` Gram matrix (``K = sum_p k_p``), see
:class:`~._consensus.ConsensusBasis`. ``w_p = 1``.

Per-view pattern (``view_embedding``)
-------------------------------------
``"pca"`` (default, the TKDE 2015 experimental setting)
    Luo et al., section 5: "In the first step of DSE and SSMVD, PCA is taken as the
    dimension reduction method for each view, and the result dimension (of each
    view) is set to be 100". We read "the first step" as Long et al.'s per-view
    pattern-learning step, so ``A^{(p)}`` is the PCA of view ``p`` with
    ``k_p = min(100, rank)`` components. Two facts in the paper support this reading:
    the SecStr grid of ``r`` stops at 300 = 3 views x 100, the rank of ``A``; and
    only DSE was restricted to a 10K SecStr subset ("DSE needs to solve an
    eigen-decomposition problem of size N x N"), SSMVD ran on the 84K set. With a
    PCA per-view step the only N x N eigenproblem is DSE's consensus, solved
    naively; a spectral per-view step would have put one in SSMVD too.
    ``baselines.md`` section 6 reads PCA as preprocessing before a spectral
    embedding instead; that reading is ``view_embedding="spectral"``.
    **Assumption:** the PCA pattern is the orthonormal score matrix ``U_p`` (left
    singular vectors of the centred view), the linear-kernel analogue of a spectral
    embedding. Its columns have unit norm, so every view and every component weighs
    the same, as Long et al.'s spectral patterns do. With whitened patterns the
    consensus is Kettenring's MAXVAR on the PCA-reduced views.
``"spectral"`` (``baselines.md`` section 6)
    PCA to ``pca_components`` dimensions first, then a Laplacian-eigenmap pattern per
    view: a kNN graph (``n_neighbors``, Euclidean, symmetrised with ``max``), heat
    weights ``exp(-d_ij^2 / (2 sigma_p^2))`` with ``sigma_p`` the mean distance to the
    ``n_neighbors``-th neighbour, normalised affinity ``S = D^{-1/2} W D^{-1/2}``, and
    ``A^{(p)}`` = the top ``k_p = r`` non-trivial eigenvectors of ``S``.

Other assumptions and implementation choices
--------------------------------------------
* PCA is centred over the N instances. A view with ``d_p <= pca_components`` keeps
  all its dimensions (recorded in ``pca_applied_``). Sparse views are never
  densified: the covariance ``X^T X / N - mu mu^T`` (``d_p <= 4096``), the Gram
  matrix (``N <= 4096``) or ARPACK on the implicitly centred operator is used.
* Spectral mode: the trivial eigenvector ``D^{1/2} 1`` is removed by deflation
  (``P (S + I) P`` with ``P = I - u_0 u_0^T``) rather than by "dropping the top
  eigenvector", which is only right for a connected graph.
* Spectral mode: a disconnected kNN graph (eigenvalue 1 of ``S`` repeated, one
  indicator-like eigenvector per component) is repaired by adding, Boruvka-style, the
  shortest edge from every component but the largest to the rest of the data, with
  the same heat weight, until the graph is connected. A warning is logged.
* Spectral mode: heat exponents are clipped at 500 so that far neighbours keep a
  tiny positive weight instead of underflowing to 0 (no zero degrees).
* kNN ties (frequent with one-hot data) are broken by scikit-learn's brute-force
  order, which is deterministic for a fixed row order.
* Signs: every output column is flipped so that its largest-magnitude entry is
  positive (deterministic output; downstream learners are sign invariant).
* Output is ``sqrt(N) B`` (``baselines.md`` section 0), columns of unit mean square.

Cost (spectral mode dominates): kNN graph ``O(N^2 d)`` brute force per view;
Lanczos ``O(N k_nn r)`` per block matvec plus ``O(N r^2)`` per restart; consensus
``O(N K^2)``. Memory ``O(N (k_nn + K))``. PCA mode: ``O(N d^2 + N K^2)``.

References
----------
B. Long, P. S. Yu, Z. Zhang. A general model for multiple view unsupervised
learning. SDM 2008, 822-833.
Y. Luo, D. Tao, K. Ramamohanarao, C. Xu, Y. Wen. Tensor canonical correlation
analysis for multi-view dimension reduction. IEEE TKDE 27(11), 2015 (section 5).
M. Belkin, P. Niyogi. Laplacian eigenmaps and spectral techniques for embedding and
clustering. NIPS 2001.
A. Y. Ng, M. I. Jordan, Y. Weiss. On spectral clustering: analysis and an
algorithm. NIPS 2001 (normalised affinity).

Where
-----
The per-view step's pieces: :mod:`._pca_patterns` (PCA scores and their orthonormal
basis), :mod:`._knn_graph` (the spectral mode's connected kNN heat graph),
:mod:`._spectral_patterns` (its Laplacian eigenvectors); :mod:`._consensus` (the
consensus basis of the concatenated patterns). This module holds the per-view step
that combines them (:func:`view_patterns`), the validation and fitted attributes
shared with SSMVD, and the estimator.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from numbers import Integral
from typing import ClassVar

import numpy as np
from sklearn.base import BaseEstimator

from .._validation import (
    Interval,
    Options,
    ParamsMixin,
    as_random_state,
    check_n_components,
    check_views,
)

# view_patterns looks the per-view pieces up in this module's namespace, where
# investigations/graph_baselines.py replaces them.
from ._consensus import consensus_bases
from ._knn_graph import heat_knn_graph
from ._pca_patterns import _orthonormal_basis, pca_scores
from ._spectral_patterns import spectral_patterns

__all__ = [
    "DSE",
    "TransductiveError",
    "heat_knn_graph",
    "pca_scores",
    "spectral_patterns",
    "view_patterns",
]

logger = logging.getLogger(__name__)

VIEW_EMBEDDINGS = ("pca", "spectral")


class TransductiveError(NotImplementedError, ValueError):
    """Raised by ``transform`` of a transductive estimator (no out-of-sample map)."""


# ------------------------------------------------------------ per-view patterns
@dataclass
class ViewPatternInfo:
    """What was done to one view (kept for the fitted attributes and the logs)."""

    n_features: int
    pca_applied: bool
    n_pca_dims: int
    n_patterns: int
    sigma: float | None = None
    n_graph_components: int | None = None
    n_bridges: int | None = None
    eigenvalues: np.ndarray | None = field(default=None, repr=False)


def view_patterns(
    views,
    n_patterns: int | None,
    *,
    view_embedding: str = "pca",
    n_neighbors: int = 10,
    pca_components: int = 100,
    random_state=None,
) -> tuple[list[np.ndarray], list[ViewPatternInfo]]:
    """Per-view patterns ``A^{(p)}`` (orthonormal columns) for DSE and SSMVD.

    Parameters
    ----------
    views : list of validated views (ndarray or CSR), each (N, d_p)
    n_patterns : int or None
        ``k_p`` for ``view_embedding="spectral"``; ignored for ``"pca"``, where
        ``k_p = min(pca_components, d_p, rank)``.
    view_embedding : {"pca", "spectral"}
    n_neighbors, pca_components : int
    random_state : int, RandomState, Generator or None
        One generator seeds every view's solvers in turn.

    Returns
    -------
    patterns : list of ndarray, each (N, k_p)
    infos : list of ViewPatternInfo
    """
    rng = as_random_state(random_state)
    patterns, infos = [], []
    for p, X in enumerate(views):
        t0 = time.perf_counter()
        T, reduced = pca_scores(X, pca_components, rng)
        if view_embedding == "pca":
            A, _ = _orthonormal_basis(T)
            info = ViewPatternInfo(X.shape[1], reduced, T.shape[1], A.shape[1])
            if A.shape[1] < T.shape[1]:
                logger.info(
                    "view %d: PCA pattern has rank %d < %d dimensions",
                    p,
                    A.shape[1],
                    T.shape[1],
                )
        else:
            W, sigma, n_comp, n_bridges = heat_knn_graph(T, n_neighbors)
            if n_comp > 1:
                logger.warning(
                    "view %d: the %d-NN graph has %d connected components; joined "
                    "them with %d bridging edges (shortest edge from each component)",
                    p,
                    n_neighbors,
                    n_comp,
                    n_bridges,
                )
            if n_patterns is None:
                raise ValueError("view_embedding='spectral' needs n_patterns")
            A, lam = spectral_patterns(W, n_patterns, rng)
            info = ViewPatternInfo(
                X.shape[1],
                reduced,
                T.shape[1],
                A.shape[1],
                sigma=sigma,
                n_graph_components=n_comp,
                n_bridges=n_bridges,
                eigenvalues=lam,
            )
        logger.info(
            "view %d: %s pattern %s in %.1f s",
            p,
            view_embedding,
            A.shape,
            time.perf_counter() - t0,
        )
        logger.debug("view %d: %s", p, info)
        patterns.append(A)
        infos.append(info)
    return patterns, infos


# ------------------------------------------------------------------- validation
def check_r_grid(r_grid, N: int) -> list[int]:
    """Validate a grid of ``n_components`` values; return it sorted and unique."""
    if isinstance(r_grid, Integral):
        r_grid = [r_grid]
    try:
        values = list(r_grid)
    except TypeError as exc:
        raise ValueError(f"r_grid must be a list of integers, got {r_grid!r}") from exc
    if not values:
        raise ValueError("r_grid is empty")
    why = "the embedding is orthogonal to the constant vector, so r <= n_samples - 1"
    return sorted({check_n_components(r, N - 1, why) for r in values})


#: What the parameters shared by DSE and SSMVD may be (``n_components`` is checked
#: against the data in ``fit``: 1 <= r <= N - 1).
TRANSDUCTIVE_PARAMETER_CONSTRAINTS = {
    "view_embedding": [Options(*VIEW_EMBEDDINGS)],
    "n_neighbors": [Interval("integer", 1, None)],
    "pca_components": [Interval("integer", 1, None)],
    "random_state": ["random_state"],
}


# -------------------------------------------------------------------- estimator
class _TransductiveViewsMixin(ParamsMixin):
    """Validation, per-view patterns and fitted view attributes shared by DSE/SSMVD.

    The host class defines ``view_embedding``, ``n_neighbors``, ``pca_components``
    and ``random_state``.
    """

    def _validate(self, views, r_grid):
        views = check_views(views, min_views=2, accept_sparse=True)
        N = views[0].shape[0]
        r_values = check_r_grid(r_grid, N)
        p = self._validate_params()
        pca_components, n_neighbors = p["pca_components"], p["n_neighbors"]
        if self.view_embedding == "spectral" and n_neighbors > N - 1:
            raise ValueError(
                f"n_neighbors={n_neighbors} must be < n_samples={N} for the kNN graph"
            )
        return views, N, r_values, pca_components, n_neighbors

    def _patterns(self, views, r_max, pca_components, n_neighbors):
        return view_patterns(
            views,
            r_max,
            view_embedding=self.view_embedding,
            n_neighbors=n_neighbors,
            pca_components=pca_components,
            random_state=self.random_state,
        )

    def _store_views(self, patterns, infos, r):
        spectral = self.view_embedding == "spectral"
        self.view_embeddings_ = [P[:, :r] if spectral else P for P in patterns]
        self.view_embedding_shapes_ = [P.shape for P in self.view_embeddings_]
        self.n_features_ = [i.n_features for i in infos]
        self.pca_applied_ = [i.pca_applied for i in infos]
        self.n_pca_dims_ = [i.n_pca_dims for i in infos]
        self.heat_widths_ = [i.sigma for i in infos] if spectral else None
        self.graph_components_ = (
            [i.n_graph_components for i in infos] if spectral else None
        )
        self.n_bridges_ = [i.n_bridges for i in infos] if spectral else None
        self.view_eigenvalues_ = (
            [i.eigenvalues[:r] for i in infos] if spectral else None
        )

    def fit(self, views, y=None):
        """Fit on ``views`` (list of (N, d_p) arrays or sparse matrices)."""
        self.fit_transform(views)
        return self

    def transform(self, views):
        """Not available: the method is transductive (no out-of-sample map)."""
        raise TransductiveError(
            f"{type(self).__name__} is transductive: it embeds only the instances it "
            "was fitted on and learns no projection for new data. Fit on all "
            "instances (labelled, validation and test together) and use "
            "fit_transform / embedding_."
        )


class DSE(_TransductiveViewsMixin, BaseEstimator):
    r"""Multiple-view spectral dimensionality reduction (Long, Yu & Zhang, 2008).

    Transductive: learns an ``r``-dimensional consensus representation of the N
    given instances and no map for new ones. Solves

    .. math::

        \min_{B^T B = I_r,\, P_p} \sum_p \|A^{(p)} - B P_p\|_F^2
        \;\Longrightarrow\;
        B = \text{top-}r \text{ eigenvectors of } \sum_p A^{(p)} A^{(p)T}

    (a global optimum) with per-view patterns ``A^{(p)}`` from PCA (default, the
    setting of Luo et al. 2015) or from Laplacian eigenmaps. See the module
    docstring for the full list of assumptions.

    Parameters
    ----------
    n_components : int
        Dimension ``r`` of the consensus, ``1 <= r <= N - 1``; in PCA mode also
        ``r <= rank([A^{(1)}, ..., A^{(m)}]) <= sum_p min(pca_components, d_p)``.
    view_embedding : {"pca", "spectral"}, default="pca"
        Per-view pattern: PCA (``k_p = min(pca_components, d_p)``) or a normalised
        kNN-graph spectral embedding (``k_p = n_components``) of the PCA scores.
    n_neighbors : int, default=10
        kNN graph size (spectral mode only).
    pca_components : int, default=100
        PCA dimension per view; views with at most this many features keep all.
    random_state : int, RandomState or Generator instance or None, default=None
        Seeds the ARPACK/Lanczos start vectors, so results are reproducible.

    Attributes
    ----------
    embedding_ : ndarray of shape (N, n_components)
        ``sqrt(N) B``: consensus with columns of unit mean square.
    singular_values_ : ndarray of shape (n_components,)
        Top singular values of ``A``; their squares are the eigenvalues of
        ``sum_p A^{(p)} A^{(p)T}`` (between 1 and m when ``r <= min_p k_p``).
    view_embeddings_ : list of ndarray, each of shape (N, k_p)
        The per-view patterns ``A^{(p)}``.
    view_embedding_shapes_ : list of tuple
    mapping_ : list of ndarray, each of shape (n_components, k_p)
        Long et al.'s mapping functions ``P_p = B^T A^{(p)}``.
    n_features_ : list of int
    pca_applied_ : list of bool
        Whether view ``p`` was reduced by PCA (False: ``d_p <= pca_components``).
    n_pca_dims_ : list of int
        Dimensions of the (PCA-reduced) features each view entered with.
    heat_widths_, graph_components_, n_bridges_, view_eigenvalues_ : list
        Spectral mode only (None in PCA mode): heat width ``sigma_p``, connected
        components of the kNN graph before repair, bridging edges added, and the
        eigenvalues of ``S_p`` behind the pattern.

    Notes
    -----
    ``transform`` raises :class:`TransductiveError`. :meth:`fit_transform_grid`
    computes the representations for a whole grid of ``r`` from one set of
    patterns.

    References
    ----------
    B. Long, P. S. Yu, Z. Zhang. A general model for multiple view unsupervised
    learning. SDM 2008.

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> z = rng.standard_normal((60, 2))
    >>> views = [z @ rng.standard_normal((2, 5)) + 0.1 * rng.standard_normal((60, 5))
    ...          for _ in range(3)]
    >>> DSE(2, random_state=0).fit_transform(views).shape
    (60, 2)
    """

    _parameter_constraints: ClassVar[dict] = TRANSDUCTIVE_PARAMETER_CONSTRAINTS

    def __init__(
        self,
        n_components,
        *,
        view_embedding="pca",
        n_neighbors=10,
        pca_components=100,
        random_state=None,
    ):
        self.n_components = n_components
        self.view_embedding = view_embedding
        self.n_neighbors = n_neighbors
        self.pca_components = pca_components
        self.random_state = random_state

    def fit_transform(self, views, y=None) -> np.ndarray:
        """Fit and return ``embedding_``, the ``(N, n_components)`` consensus."""
        views, N, (r,), pca_components, n_neighbors = self._validate(
            views, [self.n_components]
        )
        patterns, infos = self._patterns(views, r, pca_components, n_neighbors)
        ((_, basis),) = consensus_bases(patterns, infos, [r], self.view_embedding)
        B = basis.top(r)
        self._store_views(patterns, infos, r)
        self.singular_values_ = basis.singular_values[:r].copy()
        self.mapping_ = [B.T @ P for P in self.view_embeddings_]
        self.embedding_ = np.sqrt(N) * B
        return self.embedding_

    def fit_transform_grid(self, views, r_grid) -> dict[int, np.ndarray]:
        """Consensus representations for every ``r`` in ``r_grid``, at once.

        The per-view patterns are computed once, for ``r_max = max(r_grid)``: in PCA
        mode they do not depend on ``r`` (and neither does the SVD of ``A``, so the
        representations are nested); in spectral mode (``k_p = r``) eigenvectors
        are nested, so the patterns for ``r`` are the first ``r`` columns of those
        for ``r_max``. The consensus SVD is redone per ``r`` from a sub-block of one
        Gram matrix. Each entry equals ``DSE(r).fit_transform(views)`` up to signs
        (and up to rotation inside a repeated eigenvalue, which cannot change the
        consensus unless it straddles ``r``).

        In PCA mode ``r`` cannot exceed the rank of ``A`` (at most
        ``sum_p min(pca_components, d_p)``, less if a view is rank deficient): the
        grid is truncated there, with a logged warning, and ``r_grid_`` records the
        values actually computed (``baselines.md`` section 0: "report the truncated
        grid"). The fitted attributes describe the largest computed ``r``;
        ``n_components`` is ignored.

        Returns
        -------
        dict
            ``r -> ndarray of shape (N, r)`` (``sqrt(N) B``), keys sorted. In PCA
            mode the arrays are column slices of one array (read them, do not
            modify them in place).
        """
        views, N, r_values, pca_components, n_neighbors = self._validate(views, r_grid)
        patterns, infos = self._patterns(
            views, r_values[-1], pca_components, n_neighbors
        )
        out = {}
        if self.view_embedding == "pca":
            # One SVD serves every r and the solutions are nested: the entries are
            # column slices (views) of one (N, r_max) array, so memory is N r_max.
            feasible = list(
                consensus_bases(patterns, infos, r_values, "pca", strict=False)
            )
            basis = feasible[-1][1]
            Z = np.sqrt(N) * basis.top(feasible[-1][0])
            out = {r: Z[:, :r] for r, _ in feasible}
        else:
            for r, basis in consensus_bases(
                patterns, infos, r_values, "spectral", strict=False
            ):
                out[r] = np.sqrt(N) * basis.top(r)
        r_max = max(out)
        self._store_views(patterns, infos, r_max)
        self.r_grid_ = list(out)
        self.singular_values_ = basis.singular_values[:r_max].copy()
        self.embedding_ = out[r_max]
        self.mapping_ = [
            self.embedding_.T @ P / np.sqrt(N) for P in self.view_embeddings_
        ]
        return out

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
:class:`ConsensusBasis`. ``w_p = 1``.

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
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from numbers import Integral
from typing import ClassVar

import numpy as np
import scipy.linalg as la
import scipy.sparse as sp
from scipy.sparse.csgraph import connected_components
from scipy.sparse.linalg import ArpackNoConvergence, LinearOperator, eigsh, svds
from sklearn.base import BaseEstimator
from sklearn.neighbors import NearestNeighbors

from .._linalg import column_mean, covariance, fix_signs, svd
from .._validation import (
    Interval,
    Options,
    ParamsMixin,
    as_random_state,
    check_n_components,
    check_views,
)

__all__ = [
    "DSE",
    "ConsensusBasis",
    "TransductiveError",
    "heat_knn_graph",
    "pca_scores",
    "spectral_patterns",
    "view_patterns",
]

logger = logging.getLogger(__name__)

VIEW_EMBEDDINGS = ("pca", "spectral")

# Above these sizes a dense d x d (or N x N) eigenproblem gives way to ARPACK.
_DENSE_PCA_MAX = 4096
# Spectral mode: dense eigh of the N x N affinity up to this N, or while N is below
# _DENSE_SPECTRAL_RATIO * k (measured crossover with ARPACK at k = 300: N ~ 3500);
# tests lower it to exercise the eigsh path.
_DENSE_SPECTRAL_MAX = 1500
# Largest graph solved densely when ARPACK fails (an N x N float64: 800 MB at 10,000).
_DENSE_SPECTRAL_FALLBACK_MAX = 10_000
_DENSE_SPECTRAL_RATIO = 12
# ARPACK relative residual tolerance; 1e-10 gave subspaces equal to tol=0 within
# 1e-10 degrees at N=5000, k=300, a quarter faster.
_EIGSH_TOL = 1e-10
# Relative singular-value cut below which a direction counts as numerically absent.
_RANK_RTOL = 1e-8
# Clip of the heat-kernel exponent: exp(-500) ~ 7e-218 stays positive in float64.
_MAX_HEAT_EXPONENT = 500.0
# Components up to this size are bridged with one query on the global kNN index.
_SMALL_COMPONENT = 256


class TransductiveError(NotImplementedError, ValueError):
    """Raised by ``transform`` of a transductive estimator (no out-of-sample map)."""


# --------------------------------------------------------------------------- PCA
def _centered_operator(X, mean: np.ndarray) -> LinearOperator:
    """``X - 1 mean^T`` as an operator, so sparse ``X`` is never densified."""
    N, d = X.shape

    def matmat(V):
        V = V.reshape(d, -1)
        return np.asarray(X @ V) - np.outer(np.ones(N), mean @ V)

    def rmatmat(U):
        U = U.reshape(N, -1)
        return np.asarray(X.T @ U) - np.outer(mean, U.sum(axis=0))

    return LinearOperator(
        (N, d),
        matvec=lambda v: matmat(v).ravel(),
        rmatvec=lambda u: rmatmat(u).ravel(),
        matmat=matmat,
        rmatmat=rmatmat,
        dtype=np.float64,
    )


def pca_scores(X, n_components: int, random_state=None) -> tuple[np.ndarray, bool]:
    """Centred PCA scores of one view.

    Parameters
    ----------
    X : ndarray or sparse matrix of shape (N, d)
    n_components : int
        Number of principal components kept. A view with ``d <= n_components`` is
        returned centred and unreduced.
    random_state : int, RandomState, Generator or None
        Seeds ARPACK's start vector (only used when both N and d exceed 4096).

    Returns
    -------
    T : ndarray of shape (N, min(n_components, d))
        ``(X - 1 mu^T) V`` with ``V`` the top principal axes (``T = X_c`` when no
        reduction is done), in decreasing order of variance.
    reduced : bool
        Whether PCA was applied (``d > n_components``).
    """
    N, d = X.shape
    mean = column_mean(X)
    if d <= n_components:
        Xd = X.toarray() if sp.issparse(X) else np.asarray(X)
        return Xd - mean, False
    k = n_components
    if d <= _DENSE_PCA_MAX:
        # C = X^T X / N - mu mu^T keeps sparse input sparse; exact top-k axes.
        _, V = la.eigh(covariance(X, mean), subset_by_index=[d - k, d - 1])
        V = V[:, ::-1]
    elif N <= _DENSE_PCA_MAX:
        Xm = np.asarray(X @ mean).ravel()
        G = X @ X.T
        G = G.toarray() if sp.issparse(G) else np.asarray(G)
        G = G - Xm[:, None] - Xm[None, :] + mean @ mean
        k = min(k, N)
        lam, U = la.eigh((G + G.T) / 2, subset_by_index=[N - k, N - 1])
        T = U[:, ::-1] * np.sqrt(np.clip(lam[::-1], 0.0, None))
        return fix_signs(T), True
    else:
        rng = as_random_state(random_state)
        v0 = rng.standard_normal(min(N, d))
        _, s, Vt = svds(_centered_operator(X, mean), k=k, v0=v0, solver="arpack")
        V = Vt[np.argsort(s)[::-1]].T
    T = np.asarray(X @ V) - mean @ V
    return fix_signs(T), True


def _orthonormal_basis(T: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Left singular vectors of ``T`` for its numerically non-zero singular values."""
    U, s, _ = svd(T)
    keep = s > _RANK_RTOL * s[0] if s.size and s[0] > 0 else np.zeros(s.size, bool)
    return fix_signs(U[:, keep].copy()), s[keep]


# ----------------------------------------------------------------- spectral mode
def _heat(dist: np.ndarray, sigma: float) -> np.ndarray:
    return np.exp(-np.minimum(dist**2 / (2.0 * sigma**2), _MAX_HEAT_EXPONENT))


def _heat_width(dist: np.ndarray) -> float:
    """Mean distance to the farthest (k-th) neighbour, guarded against duplicates."""
    sigma = float(np.mean(dist[:, -1]))
    if sigma > 0:
        return sigma
    positive = dist[dist > 0]
    # Every point has k exact duplicates: any width gives the same weights (1).
    return float(positive.mean()) if positive.size else 1.0


def _bridge_components(Z, nn, labels, n_comp, sigma):
    """One Boruvka round: the shortest edge from each component but the largest."""
    N = Z.shape[0]
    sizes = np.bincount(labels, minlength=n_comp)
    largest = int(np.argmax(sizes))
    pairs: dict[tuple[int, int], float] = {}
    for c in range(n_comp):
        if c == largest:
            continue
        members = np.flatnonzero(labels == c)
        s = members.size
        if s + 1 <= _SMALL_COMPONENT:
            # Among the s + 1 nearest points of any member at least one lies outside.
            d, j = nn.kneighbors(Z[members], n_neighbors=min(s + 1, N))
            d = np.where(labels[j] != c, d, np.inf)
            a, b = np.unravel_index(np.argmin(d), d.shape)
            i, jj, dij = members[a], j[a, b], d[a, b]
        else:
            others = np.flatnonzero(labels != c)
            nn_o = NearestNeighbors(n_neighbors=1, algorithm="brute").fit(Z[others])
            d, j = nn_o.kneighbors(Z[members])
            a = int(np.argmin(d[:, 0]))
            i, jj, dij = members[a], others[j[a, 0]], d[a, 0]
        pairs[(min(i, jj), max(i, jj))] = float(dij)
    ij = np.array(list(pairs.keys()), dtype=np.intp)
    w = _heat(np.array(list(pairs.values())), sigma)
    rows = np.concatenate([ij[:, 0], ij[:, 1]])
    cols = np.concatenate([ij[:, 1], ij[:, 0]])
    return sp.csr_matrix((np.concatenate([w, w]), (rows, cols)), shape=(N, N)), len(w)


def heat_knn_graph(Z: np.ndarray, n_neighbors: int):
    r"""Symmetric kNN graph with heat weights, made connected if necessary.

    Parameters
    ----------
    Z : ndarray of shape (N, d)
        Features (PCA scores) of one view.
    n_neighbors : int
        Neighbours per point, excluding the point itself (``< N``).

    Returns
    -------
    W : csr_matrix of shape (N, N)
        ``w_ij = exp(-||z_i - z_j||^2 / (2 sigma^2))`` on kNN edges, symmetrised with
        ``max``, plus bridging edges if the kNN graph was disconnected.
    sigma : float
        Heat width: the mean distance to the ``n_neighbors``-th neighbour.
    n_components : int
        Connected components of the kNN graph before repair.
    n_bridges : int
        Bridging edges added.
    """
    N = Z.shape[0]
    nn = NearestNeighbors(n_neighbors=n_neighbors, algorithm="brute").fit(Z)
    dist, ind = nn.kneighbors()  # self excluded by index, duplicates kept
    sigma = _heat_width(dist)
    rows = np.repeat(np.arange(N), n_neighbors)
    W = sp.csr_matrix((_heat(dist, sigma).ravel(), (rows, ind.ravel())), shape=(N, N))
    W = W.maximum(W.T).tocsr()
    n_comp, labels = connected_components(W, directed=False)
    n_before, n_bridges = int(n_comp), 0
    while n_comp > 1:
        bridges, n_new = _bridge_components(Z, nn, labels, n_comp, sigma)
        W = W.maximum(bridges).tocsr()
        n_bridges += n_new
        n_comp, labels = connected_components(W, directed=False)
    return W, sigma, n_before, n_bridges


def spectral_patterns(W, k: int, random_state=None) -> tuple[np.ndarray, np.ndarray]:
    r"""Top-``k`` non-trivial eigenvectors of ``S = D^{-1/2} W D^{-1/2}``.

    The trivial eigenvector ``u_0 = D^{1/2} 1 / ||D^{1/2} 1||`` (eigenvalue 1) is
    removed by deflation: we take the top ``k`` eigenvectors of
    ``P (S + I) P`` with ``P = I - u_0 u_0^T``, whose spectrum is ``1 + lambda_i(S)``
    for ``i >= 1`` and 0 on ``u_0``. Unlike "compute k+1, drop the first" this stays
    right when eigenvalue 1 is repeated.

    Parameters
    ----------
    W : sparse matrix of shape (N, N)
        Symmetric non-negative affinity with positive degrees.
    k : int
        Number of eigenvectors, ``1 <= k <= N - 1``.
    random_state : int, RandomState, Generator or None
        Seeds the Lanczos start vector.

    Returns
    -------
    A : ndarray of shape (N, k)
        Orthonormal eigenvectors, eigenvalues decreasing.
    eigenvalues : ndarray of shape (k,)
        The matching eigenvalues of ``S`` (in ``[-1, 1]``).
    """
    N = W.shape[0]
    deg = np.asarray(W.sum(axis=1)).ravel()
    d_isqrt = 1.0 / np.sqrt(deg)
    S = (sp.diags(d_isqrt) @ W @ sp.diags(d_isqrt)).tocsr()
    u0 = np.sqrt(deg)
    u0 /= np.linalg.norm(u0)

    def dense():
        M = S.toarray()
        M[np.diag_indices(N)] += 1.0
        Mu = M @ u0
        M -= np.outer(u0, Mu) + np.outer(Mu, u0) - (u0 @ Mu) * np.outer(u0, u0)
        return la.eigh((M + M.T) / 2, subset_by_index=[N - k, N - 1])

    if N <= max(_DENSE_SPECTRAL_MAX, _DENSE_SPECTRAL_RATIO * k):
        lam, A = dense()
    else:

        def matmat(X):
            X = X.reshape(N, -1)
            X = X - np.outer(u0, u0 @ X)
            Y = S @ X + X
            return Y - np.outer(u0, u0 @ Y)

        op = LinearOperator(
            (N, N),
            matvec=lambda x: matmat(x).ravel(),
            matmat=matmat,
            dtype=np.float64,
        )
        rng = as_random_state(random_state)
        v0 = rng.standard_normal(N)
        v0 -= u0 * (u0 @ v0)
        try:
            lam, A = eigsh(op, k=k, which="LA", v0=v0, tol=_EIGSH_TOL)
        except ArpackNoConvergence:
            # Nearly disconnected graphs (many duplicate rows) have eigenvalues
            # clustered at 1, where Lanczos stalls; the dense solver does not.
            if N > _DENSE_SPECTRAL_FALLBACK_MAX:
                raise ValueError(
                    f"the spectral embedding of a {N}-node kNN graph did not converge "
                    "(ARPACK); the graph is probably nearly disconnected (duplicate "
                    "rows): increase n_neighbors or use view_embedding='pca'"
                ) from None
            logger.info("eigsh did not converge on %d nodes; dense eigh instead", N)
            lam, A = dense()
    order = np.argsort(lam)[::-1]
    return fix_signs(A[:, order].copy()), lam[order] - 1.0


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


# -------------------------------------------------------------------- consensus
class ConsensusBasis:
    r"""Thin SVD ``A = Q diag(s) V^T`` of the concatenated patterns, via ``A^T A``.

    With ``A = [A^{(1)}, ..., A^{(m)}]`` (``N x K``) the Gram matrix ``G = A^T A`` is
    only ``K x K``; its eigenpairs ``(s_i^2, v_i)`` give ``Q = A V diag(1/s)``. The
    DSE consensus for ``r`` is ``Q[:, :r]`` (Eckart-Young), and SSMVD works in the
    reduced coordinates ``R = diag(s) V^T = Q^T A`` (``K' x K``), since both optimal
    ``B`` lie in ``range(A)``. Directions with ``s_i <= 1e-8 s_1`` are dropped.
    Squaring the condition number is harmless here: for orthonormal patterns the
    top ``min_p k_p`` singular values are all >= 1 and none exceeds ``sqrt(m)``.

    Parameters
    ----------
    A : ndarray of shape (N, K)
    G : ndarray of shape (K, K), optional
        ``A^T A`` if already known (the grid reuses sub-blocks of one Gram matrix).
    n_top : int, optional
        Compute only the top ``n_top`` eigenpairs (enough for DSE); then
        :meth:`reduced` is unavailable and :attr:`rank` is at most ``n_top``.
    """

    def __init__(self, A: np.ndarray, G: np.ndarray | None = None, n_top=None):
        G = A.T @ A if G is None else G
        K = G.shape[0]
        self.complete = n_top is None or n_top >= K
        subset = None if self.complete else [K - n_top, K - 1]
        lam, V = la.eigh((G + G.T) / 2, subset_by_index=subset)
        lam, V = lam[::-1], V[:, ::-1]
        # No pattern columns at all (every view constant): lam is empty, rank 0.
        top = lam[0] if lam.size else 0.0
        keep = lam > (_RANK_RTOL**2) * top if top > 0 else lam > np.inf
        self.A = A
        self.singular_values = np.sqrt(lam[keep])
        self.V = V[:, keep]
        self.sq_norm = float(np.trace(G))  # ||A||_F^2

    @property
    def rank(self) -> int:
        """Numerical rank of ``A`` (capped at ``n_top`` when that was given)."""
        return self.singular_values.size

    def reduced(self) -> np.ndarray:
        """``R = Q^T A = diag(s) V^T``, shape (rank, K)."""
        if not self.complete:
            raise RuntimeError("reduced() needs the full eigendecomposition")
        return self.singular_values[:, None] * self.V.T

    def embed(self, C: np.ndarray) -> np.ndarray:
        """``B = Q C`` for reduced coordinates ``C`` of shape (rank, r)."""
        return self.A @ ((self.V / self.singular_values) @ C)

    def top(self, r: int) -> np.ndarray:
        """DSE consensus: the top-``r`` left singular vectors of ``A``."""
        return fix_signs(self.embed(np.eye(self.rank, r)))


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


def _rank_message(r: int, basis: ConsensusBasis, infos) -> str:
    dims = [i.n_patterns for i in infos]
    return (
        f"n_components={r} is too large: the concatenated per-view patterns "
        f"(dimensions {dims}, sum {sum(dims)}) have numerical rank {basis.rank}, "
        "so at most that many consensus components exist"
    )


def consensus_bases(
    patterns_max, infos, r_values, view_embedding, *, full=False, strict=True
):
    """Yield ``(r, ConsensusBasis)`` for each feasible ``r``, reusing one Gram matrix.

    In PCA mode the patterns do not depend on ``r``: one basis serves every ``r``.
    In spectral mode ``k_p = r`` and eigenvectors are nested, so the patterns for
    ``r`` are the first ``r`` columns of those for ``r_max``; the consensus itself is
    not nested and is recomputed from the matching sub-block of ``G_max``.

    ``r`` above the rank of ``A`` (possible in PCA mode) raises ``ValueError`` when
    ``strict``; otherwise the grid is truncated there with a logged warning.
    ``full`` asks for complete bases (SSMVD needs :meth:`ConsensusBasis.reduced`).
    """
    A_max = np.hstack(patterns_max)
    G_max = A_max.T @ A_max
    if view_embedding == "pca":
        basis = ConsensusBasis(A_max, G_max)  # K <= m * pca_components: cheap
        bases = ((r, lambda basis=basis: basis) for r in r_values)
    else:
        offsets = np.cumsum([0] + [P.shape[1] for P in patterns_max])

        def make(r):
            idx = np.concatenate([np.arange(o, o + r) for o in offsets[:-1]])
            return ConsensusBasis(
                A_max[:, idx], G_max[np.ix_(idx, idx)], None if full else r
            )

        bases = ((r, lambda r=r: make(r)) for r in r_values)
    r_prev = None
    for r, get in bases:
        basis = get()
        if r > basis.rank:
            if strict or r_prev is None:
                raise ValueError(_rank_message(r, basis, infos))
            logger.warning(
                "%s; the grid stops at r=%d", _rank_message(r, basis, infos), r_prev
            )
            return
        r_prev = r
        yield r, basis


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

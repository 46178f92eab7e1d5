"""The kNN heat graph of one view (``view_embedding="spectral"``), made connected.

A symmetric kNN graph with heat weights on a view's PCA scores, and the Boruvka-style
repair that joins its connected components; :mod:`._spectral_patterns` embeds it. The
choices (symmetrisation, heat width, clipping, bridging) are listed in :mod:`._dse`'s
docstring.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from scipy.sparse.csgraph import connected_components
from sklearn.neighbors import NearestNeighbors

__all__ = ["heat_knn_graph"]

# Clip of the heat-kernel exponent: exp(-500) ~ 7e-218 stays positive in float64.
_MAX_HEAT_EXPONENT = 500.0
# Components up to this size are bridged with one query on the global kNN index.
_SMALL_COMPONENT = 256


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

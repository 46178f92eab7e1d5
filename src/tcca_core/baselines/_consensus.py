"""Long et al.'s consensus of the per-view patterns, shared by DSE and SSMVD.

:class:`ConsensusBasis` is the thin SVD of the concatenated patterns
``A = [A^{(1)}, ..., A^{(m)}]`` computed from its small Gram matrix; DSE's consensus
is its top left singular vectors, SSMVD works in its reduced coordinates.
:func:`consensus_bases` yields one basis per ``r`` of a grid from one Gram matrix.
"""

from __future__ import annotations

import logging

import numpy as np
import scipy.linalg as la

from ..solver.linalg import fix_signs
from ._pca_patterns import _RANK_RTOL  # one cut for "numerically absent" everywhere

__all__ = ["ConsensusBasis", "consensus_bases"]

# DSE's logger, as before this module was split from it: the messages keep their name.
logger = logging.getLogger("tcca_core.baselines._dse")


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


def _rank_message(r: int, basis: ConsensusBasis, infos) -> str:
    dims = [i.n_patterns for i in infos]
    return (
        f"n_components={r} is too large: the concatenated per-view patterns "
        f"(dimensions {dims}, sum {sum(dims)}) have numerical rank {basis.rank}, "
        "so at most that many consensus components exist"
    )


def consensus_bases(
    patterns_max,
    infos,
    r_values,
    view_embedding,
    *,
    full=False,
    strict=True,
    basis=None,
):
    """Yield ``(r, ConsensusBasis)`` for each feasible ``r``, reusing one Gram matrix.

    In PCA mode the patterns do not depend on ``r``: one basis serves every ``r``
    (``basis``, when the caller already has the complete one of ``patterns_max``).
    In spectral mode ``k_p = r`` and eigenvectors are nested, so the patterns for
    ``r`` are the first ``r`` columns of those for ``r_max``; the consensus itself is
    not nested and is recomputed from the matching sub-block of ``G_max``.

    ``r`` above the rank of ``A`` (possible in PCA mode) raises ``ValueError`` when
    ``strict``; otherwise the grid is truncated there with a logged warning.
    ``full`` asks for complete bases (SSMVD needs :meth:`ConsensusBasis.reduced`).
    """
    if view_embedding == "pca":
        if basis is None:
            # K <= m * pca_components: cheap
            basis = ConsensusBasis(np.hstack(patterns_max))
        bases = ((r, lambda basis=basis: basis) for r in r_values)
    else:
        A_max = np.hstack(patterns_max)
        G_max = A_max.T @ A_max
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

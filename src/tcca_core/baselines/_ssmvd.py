r"""SSMVD: sparse unsupervised dimensionality reduction for multiple view data.

Han, Wu, Tao, Shao, Zhuang & Jiang, IEEE TCSVT 22(10):1485-1496, 2012. Rows are
samples: a view is ``X_p`` of shape ``(N, d_p)``.

What the source says, and what we had to assume
-----------------------------------------------
We could only obtain the paper's abstract (the IEEE/academia.edu front page), not
its equations. The abstract fixes the structure:

1. learn a low-dimensional pattern from each view individually;
2. approximate the matrix of patterns by a consensus *base* matrix (orthogonality
   constraint) times a *loading* matrix;
3. an l1-norm on the loading matrix's columns ("select the most discriminative
   features for the spectral embedding of multiple views");
4. a structured sparsity-inducing norm on the loading matrix's rows, so that each
   latent dimension can load on a subset of the views (Luo et al. cite Jenatton et
   al., JMLR 2011, for the norm);
5. an alternating algorithm, "spectral sparse multiview embedding".

Our formulation (``baselines.md`` section 7, with the choices marked below):

.. math::

    \min_{B, W} \|A - B W\|_F^2 + \lambda_1 \sum_{i,j} |W_{ij}|
        + \lambda_2 \sum_{i=1}^r \Omega(W_{i,:})
    \quad \text{s.t.} \quad B^T B = I_r,

    \Omega(w) = \sum_{p=1}^m \|w_{G_p}\|_2 + \|w\|_2,

with ``A = [A^{(1)}, ..., A^{(m)}] \in R^{N x K}`` the per-view patterns (as in DSE),
``B \in R^{N x r}`` the base, ``W \in R^{r x K}`` the loadings and ``G_p`` the columns
of view ``p``. Output ``sqrt(N) B``.

Assumptions (each an **[ASSUMPTION]** for the README):

* A1. Per-view patterns are those of :mod:`._dse` (PCA-100 orthonormal scores by
  default, following Luo et al. section 5, which uses PCA as "the first step" of
  both DSE and SSMVD; ``view_embedding="spectral"`` gives Laplacian eigenmaps).
* A2. Squared Frobenius loss without a 1/2 and without per-view weights.
* A3. ``Omega`` is tree-structured: leaves = single entries (the l1 term), then one
  group per view, then the whole row (root). The root group lets a latent
  dimension be shared by all views; the view groups switch single views off. The
  paper's norm may instead use overlapping groups for every subset of views, which
  has no closed-form proximal operator.
* A4. Unweighted groups (no ``sqrt(|G|)`` factors); ``lambda_2`` weights view and
  root groups alike.
* A5. Initialisation at the DSE solution (``B`` = top-``r`` left singular vectors
  of ``A``), which is also the exact solution for ``lambda_1 = lambda_2 = 0``.
* A6. Exact block minimisation: W-step by the proximal operator, B-step by
  orthogonal Procrustes; stop when the relative objective change is below ``tol``
  (default 1e-5) or after ``max_iter`` (default 100) iterations.
* A7. The representation is the base ``B`` (not ``A W^T`` or a projection of the
  patterns on the loadings).
* A8. ``lambda_1, lambda_2`` are free hyper-parameters; ``baselines.md`` proposes
  the grid ``{0, 1e-3, 1e-2, 1e-1, 1}`` for each, chosen on validation. Pattern
  columns have unit norm, so every entry of ``B^T A`` lies in ``[-1, 1]``: any
  ``lambda_1 >= 2`` zeroes all loadings.

Algorithm
---------
Because ``B^T B = I``, ``||A - BW||^2 = ||(I - BB^T) A||^2 + ||B^T A - W||^2``, so

* **W-step** ``W = prox_{h/2}(B^T A)`` row by row, ``h = lambda_1 ||.||_1 +
  lambda_2 Omega``. For tree-structured groups the proximal operator is the
  composition of the group shrinkages from the leaves to the root (Jenatton,
  Mairal, Obozinski & Bach, JMLR 12:2297-2334, 2011, section 3): soft-threshold
  each entry at ``lambda_1/2``, then ``w_G <- max(0, 1 - (lambda_2/2)/||w_G||) w_G``
  for every view block, then the same for the whole row.
* **B-step** ``max_B tr(B^T A W^T)``: thin SVD ``A W^T = U S V^T``, ``B = U V^T``
  (orthogonal Procrustes).

Both steps are exact minimisers, so the objective never increases.

Computation in reduced coordinates: every B-step answer lies in ``range(A)``
(``B = polar(A W^T)``) and so does the DSE start, so we write ``B = Q C`` with
``A = Q R`` the thin SVD of :class:`~._consensus.ConsensusBasis` (``R = diag(s) V^T``,
``K' x K``, ``K' = rank A <= K``). Then ``||A - QCW||^2 = ||A||^2 - ||R||^2 +
||R - CW||^2`` and the whole iteration runs on ``K' x K`` matrices: ``O(K K' r)``
per iteration, independent of N. N enters only once, through ``A^T A``
(``O(N K^2)``) and the final ``B = Q C`` (``O(N K r)``). This is why SSMVD can run
on all 84K SecStr instances.

Pitfalls: a latent dimension whose loading row is all zero leaves its column of
``B`` arbitrary (any Procrustes completion is optimal); this is logged. Large
``lambda`` zeroes every loading; ``B`` then stays at its initial value (the DSE
solution) and a warning is logged.

References
----------
Y. Han, F. Wu, D. Tao, J. Shao, Y. Zhuang, J. Jiang. Sparse unsupervised
dimensionality reduction for multiple view data. IEEE TCSVT 22(10), 2012.
R. Jenatton, J. Mairal, G. Obozinski, F. Bach. Proximal methods for hierarchical
sparse coding. JMLR 12, 2011.
B. Long, P. S. Yu, Z. Zhang. A general model for multiple view unsupervised
learning. SDM 2008.
"""

from __future__ import annotations

import logging
import warnings
from dataclasses import dataclass
from typing import ClassVar

import numpy as np
from sklearn.base import BaseEstimator
from sklearn.exceptions import ConvergenceWarning

from .._validation import Interval, validate_params
from ..solver.linalg import column_signs, svd
from ._consensus import ConsensusBasis, consensus_bases
from ._dse import (
    TRANSDUCTIVE_PARAMETER_CONSTRAINTS,
    TransductiveError,
    _TransductiveViewsMixin,
)

__all__ = [
    "SSMVD",
    "SSMVDPatterns",
    "TransductiveError",
    "polar_factor",
    "prox_tree",
    "ssmvd_solve",
    "tree_penalty",
]

logger = logging.getLogger(__name__)


def _row_norms(W: np.ndarray) -> np.ndarray:
    """Euclidean norm of each row (einsum: no squared temporary)."""
    return np.sqrt(np.einsum("ij,ij->i", W, W))


def _shrink_factors(norms: np.ndarray, t: float) -> np.ndarray:
    """``max(0, 1 - t/n)`` for each norm ``n`` (0 where ``n <= t``)."""
    scale = np.zeros_like(norms)
    nz = norms > t
    scale[nz] = 1.0 - t / norms[nz]
    return scale


def prox_tree(V: np.ndarray, blocks, t1: float, t2: float) -> np.ndarray:
    r"""Row-wise proximal operator of the tree-structured SSMVD penalty.

    Solves, independently for each row ``v`` of ``V``,

    .. math::

        \min_w \tfrac12 \|w - v\|_2^2 + t_1 \|w\|_1
            + t_2 \Big(\sum_p \|w_{G_p}\|_2 + \|w\|_2\Big)

    exactly, by composing the proximal operators of the groups from the leaves
    (single entries) through the view blocks ``G_p`` to the root (Jenatton et al.
    2011, Proposition 2 / section 3.3: valid because any two groups are nested or
    disjoint).

    Parameters
    ----------
    V : ndarray of shape (r, K)
    blocks : list of slice
        Column blocks ``G_p`` (disjoint; together they need not cover all columns).
    t1, t2 : float
        Non-negative weights of the l1 and group terms.

    Returns
    -------
    ndarray of shape (r, K)
    """
    return _w_step(V, blocks, t1, t2)[0]


def _w_step(V: np.ndarray, blocks, t1: float, t2: float):
    """:func:`prox_tree` of ``V`` and the sums the SSMVD objective needs of it.

    The shrinkages only scale magnitudes, so they run on ``|W|`` and the signs of
    ``V`` are put back once at the end; the norms of the final ``W`` follow from
    the shrink factors instead of new passes over it. The values equal
    :func:`tree_penalty`'s and ``||W||_F^2`` to rounding.

    Returns
    -------
    W : ndarray of shape (r, K)
    l1 : float
        ``||W||_1``.
    groups : float
        ``sum_i (sum_p ||W_{i,G_p}|| + ||W_i||)`` (0 when ``t2 = 0``).
    sq : float
        ``||W||_F^2``.
    """
    A = np.abs(V)  # |W| until the signs go back on
    if t1 > 0:
        A -= t1
        np.maximum(A, 0.0, out=A)
    groups = 0.0
    if t2 > 0:
        block_sums = np.zeros(A.shape[0])  # sum_p ||W_{i,G_p}|| before the root
        for sl in blocks:
            Ab = A[:, sl]
            norms = _row_norms(Ab)
            scale = _shrink_factors(norms, t2)
            Ab *= scale[:, None]
            block_sums += scale * norms
        rows = _row_norms(A)
        root = _shrink_factors(rows, t2)
        A *= root[:, None]
        rows *= root
        groups = float(root @ block_sums) + float(rows.sum())
        sq = float(rows @ rows)
    else:
        sq = float(np.einsum("ij,ij->", A, A))
    l1 = float(A.sum())
    return np.copysign(A, V, out=A), l1, groups, sq


def tree_penalty(W: np.ndarray, blocks, t1: float, t2: float) -> float:
    """``t1 ||W||_1 + t2 sum_i (sum_p ||W_{i,G_p}|| + ||W_i||)``."""
    value = t1 * np.abs(W).sum()
    if t2 > 0:
        groups = sum(_row_norms(W[:, sl]).sum() for sl in blocks)
        value += t2 * (groups + _row_norms(W).sum())
    return float(value)


#: Smallest ``lambda_min / lambda_max`` of the Gram matrix ``M^T M`` (i.e. the
#: inverse squared condition number of ``M``) for which :func:`polar_factor` uses the
#: Gram route. The Gram route's error is about ``eps * cond(M)^2``: at the bound,
#: cond(M) = 100 and the error is ~1e-13 (tests/test_ssmvd.py checks 1e-10 against
#: the SVD route); below it, and when ``M`` is rank deficient (an all-zero loading
#: row, where the polar factor is not unique), the SVD route is taken, so those
#: iterates are bit-for-bit the previous ones.
_POLAR_GRAM_MIN_RATIO = 1e-4


def _polar_svd(M: np.ndarray) -> np.ndarray:
    """``U V^T`` from the thin SVD ``M = U S V^T`` (the SVD route)."""
    U, _, Vt = svd(M)
    return U @ Vt


def _polar_gram(M: np.ndarray) -> np.ndarray | None:
    """``M (M^T M)^{-1/2}``, or None when ``M`` is ill-conditioned.

    From ``eigh`` of the ``r x r`` Gram matrix; None when
    ``lambda_min <= _POLAR_GRAM_MIN_RATIO * lambda_max``.
    """
    lam, V = np.linalg.eigh(M.T @ M)
    if lam[0] > _POLAR_GRAM_MIN_RATIO * lam[-1] > 0:
        return M @ ((V / np.sqrt(lam)) @ V.T)
    return None


def polar_factor(M: np.ndarray) -> np.ndarray:
    r"""Orthonormal polar factor ``U V^T`` of ``M = U S V^T`` (``K' x r``, ``r <= K'``).

    The orthogonal Procrustes solution ``argmax_{C^T C = I} tr(C^T M)``. Computed as
    ``M (M^T M)^{-1/2}`` from the eigendecomposition of the small ``r x r`` Gram
    matrix, 1.6-3x faster than the thin SVD of ``M`` (``O(K' r^2)`` products and an
    ``r x r`` ``eigh``); when ``M`` has an all-zero column (an all-zero loading
    row: the polar factor is then not unique) or is ill-conditioned
    (``lambda_min < 1e-4 lambda_max``, see ``_POLAR_GRAM_MIN_RATIO``) it is the
    SVD's ``U V^T``, exactly as before.

    Newton-Schulz iterations do not pay here: from ``M`` they need 5-7 steps on
    SecStr's iterates (``cond(M)`` 1.6-12), each step the two products of this
    route, and even scaled with the exact extreme singular values (which a solver
    would have to estimate) they take 0.83-0.98 of this route's time at r >= 50 and
    more below. Warm-started from the previous iterate's inverse square root they
    converge to a different factor, ``polar(M Z_prev)`` (1e-3 to 1e-1 away), or
    diverge (``benchmarks/ssmvd_polar.py``).
    """
    if M.any(axis=0).all():
        P = _polar_gram(M)
        if P is not None:
            return P
    return _polar_svd(M)


def ssmvd_solve(
    R: np.ndarray,
    blocks,
    r: int,
    lambda1: float,
    lambda2: float,
    *,
    C0: np.ndarray | None = None,
    max_iter: int = 100,
    tol: float = 1e-5,
    offset: float = 0.0,
):
    r"""Alternating minimisation of the SSMVD objective in reduced coordinates.

    Minimises ``offset + ||R - C W||_F^2 + lambda1 ||W||_1 + lambda2 sum_i
    Omega(W_i)`` over ``C^T C = I_r`` and ``W``. With ``R = Q^T A`` (``Q``
    orthonormal, ``range(Q) = range(A)``) and ``offset = ||A||^2 - ||R||^2`` this is
    exactly the SSMVD objective of ``B = Q C``.

    Parameters
    ----------
    R : ndarray of shape (K', K)
    blocks : list of slice
        View blocks of the K columns.
    r : int
        Number of latent dimensions, ``r <= K'``.
    lambda1, lambda2 : float
    C0 : ndarray of shape (K', r), optional
        Orthonormal start; default the first ``r`` unit vectors (the DSE solution
        when ``R = diag(s) V^T`` with ``s`` decreasing).
    max_iter : int
    tol : float
        Stop when ``|f_{t-1} - f_t| <= tol |f_{t-1}|``.
    offset : float

    Returns
    -------
    C : ndarray of shape (K', r)
    W : ndarray of shape (r, K)
        Loadings; ``(C, W)`` is the pair whose objective is ``history[-1]``.
    history : ndarray
        Objective after each W-step; non-increasing.
    converged : bool
    """
    Kr = R.shape[0]
    C = np.eye(Kr, r) if C0 is None else np.array(C0, dtype=np.float64)
    t1, t2 = lambda1 / 2.0, lambda2 / 2.0  # the loss has no 1/2
    history: list[float] = []
    converged = False
    sq_R = float(np.sum(R**2))
    gram = True  # the Gram route of the B-step (see polar_factor)
    for _ in range(max_iter):
        CtR = C.T @ R
        W, l1, groups, sq_W = _w_step(CtR, blocks, t1, t2)  # W-step
        # ||R - CW||^2 = ||R||^2 - 2 <C^T R, W> + ||W||^2 because C^T C = I.
        loss = max(sq_R - 2.0 * float(np.vdot(CtR, W)) + sq_W, 0.0)
        # The penalty is tree_penalty(W, blocks, lambda1, lambda2), from _w_step's sums.
        f = offset + loss + lambda1 * l1 + lambda2 * groups
        history.append(f)
        if len(history) > 1 and abs(history[-2] - f) <= tol * abs(history[-2]):
            converged = True
            break
        M = R @ W.T  # B-step: max tr(C^T R W^T)
        if not M.any():
            # Every C is optimal; keeping the current one is deterministic.
            converged = True
            break
        # The polar factor of M as in polar_factor, with one shortcut: once an
        # iterate's M was ill-conditioned, the later ones of this run go straight
        # to the SVD (they mostly are too, and the Gram route's eigh would be
        # wasted). Either route gives the SVD's result (to 1e-10), so this only
        # changes the time.
        no_zero_column = bool(M.any(axis=0).all())
        P = _polar_gram(M) if gram and no_zero_column else None
        if P is None:
            gram = gram and not no_zero_column
            P = _polar_svd(M)
        C = P
    return C, W, np.asarray(history), converged


class SSMVD(_TransductiveViewsMixin, BaseEstimator):
    r"""Sparse unsupervised dimensionality reduction for multiple view data.

    Transductive. Factorises the concatenated per-view patterns as ``A ~ B W`` with
    an orthonormal consensus base ``B`` and sparse, view-structured loadings ``W``:

    .. math::

        \min_{B^T B = I_r,\, W} \|A - B W\|_F^2 + \lambda_1 \|W\|_1
            + \lambda_2 \sum_i \Big(\sum_p \|W_{i,G_p}\|_2 + \|W_{i,:}\|_2\Big)

    by exact alternating minimisation (proximal W-step, Procrustes B-step) started
    from the DSE solution. With ``lambda1 = lambda2 = 0`` it returns the DSE
    consensus. The formulation is a reconstruction from the paper's abstract: see
    the module docstring for every assumption.

    Parameters
    ----------
    n_components : int
        Latent dimension ``r``; ``1 <= r <= N - 1`` and ``r <= rank(A)``.
    lambda1 : float, default=0.0
        Weight of the l1 penalty on the loadings.
    lambda2 : float, default=0.0
        Weight of the tree-structured (view groups + whole row) group penalty.
    view_embedding : {"pca", "spectral"}, default="pca"
        Per-view pattern, as in :class:`~tcca_core.baselines._dse.DSE`.
    n_neighbors : int, default=10
        kNN graph size (spectral mode only).
    pca_components : int, default=100
        PCA dimension per view.
    max_iter : int, default=100
    tol : float, default=1e-5
        Relative objective decrease below which the iteration stops.
    random_state : int, RandomState or Generator instance or None, default=None
        Seeds the eigen-solvers' start vectors.

    Attributes
    ----------
    embedding_ : ndarray of shape (N, n_components)
        ``sqrt(N) B``.
    loadings_ : ndarray of shape (n_components, K)
        ``W``; columns follow ``view_blocks_``.
    view_blocks_ : list of slice
        Columns of ``A`` (and of ``loadings_``) belonging to each view.
    objective_ : ndarray of shape (n_iter_,)
        Objective after each iteration (non-increasing).
    n_iter_ : int
    converged_ : bool
    n_zero_loadings_ : int
        Latent dimensions whose loading row is entirely zero.
    view_embeddings_, view_embedding_shapes_, n_features_, pca_applied_,
    n_pca_dims_, heat_widths_, graph_components_, n_bridges_, view_eigenvalues_
        As in :class:`~tcca_core.baselines._dse.DSE`.

    References
    ----------
    Y. Han, F. Wu, D. Tao, J. Shao, Y. Zhuang, J. Jiang. Sparse unsupervised
    dimensionality reduction for multiple view data. IEEE TCSVT 22(10), 2012.

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> z = rng.standard_normal((60, 2))
    >>> views = [z @ rng.standard_normal((2, 5)) + 0.1 * rng.standard_normal((60, 5))
    ...          for _ in range(3)]
    >>> SSMVD(2, lambda1=0.01, lambda2=0.01, random_state=0).fit_transform(views).shape
    (60, 2)
    """

    _parameter_constraints: ClassVar[dict] = {
        **TRANSDUCTIVE_PARAMETER_CONSTRAINTS,
        "lambda1": [Interval("real", 0, None)],
        "lambda2": [Interval("real", 0, None)],
        "max_iter": [Interval("integer", 1, None)],
        "tol": [Interval("real", 0, None)],
    }

    def __init__(
        self,
        n_components,
        *,
        lambda1=0.0,
        lambda2=0.0,
        view_embedding="pca",
        n_neighbors=10,
        pca_components=100,
        max_iter=100,
        tol=1e-5,
        random_state=None,
    ):
        self.n_components = n_components
        self.lambda1 = lambda1
        self.lambda2 = lambda2
        self.view_embedding = view_embedding
        self.n_neighbors = n_neighbors
        self.pca_components = pca_components
        self.max_iter = max_iter
        self.tol = tol
        self.random_state = random_state

    def _solve(
        self, basis: ConsensusBasis, blocks, r, lambda1, lambda2, it, tol, scale
    ):
        """One fit; returns ``scale * B`` (signs fixed), ``W``, history, ..."""
        R = basis.reduced()
        C, W, history, converged = ssmvd_solve(
            R,
            blocks,
            r,
            lambda1,
            lambda2,
            max_iter=it,
            tol=tol,
            offset=max(basis.sq_norm - float(np.sum(R**2)), 0.0),
        )
        if not converged:
            change = (
                f"{abs(history[-2] - history[-1]) / abs(history[-2]):.2e}"
                if len(history) > 1
                else "unknown"
            )
            warnings.warn(
                f"SSMVD did not converge in max_iter={it} iterations (r={r}, "
                f"lambda1={lambda1}, lambda2={lambda2}); last relative change "
                f"{change}, tol={tol}",
                ConvergenceWarning,
                stacklevel=3,
            )
        zero_rows = int(np.sum(~W.any(axis=1)))
        if zero_rows == r:
            logger.warning(
                "SSMVD (r=%d, lambda1=%g, lambda2=%g): all loadings are zero, the "
                "penalty is too large; the representation is the initial (DSE) base "
                "and carries no SSMVD information",
                r,
                lambda1,
                lambda2,
            )
        elif zero_rows:
            logger.info(
                "SSMVD (r=%d, lambda1=%g, lambda2=%g): %d latent dimensions have "
                "all-zero loadings; their columns of B are arbitrary",
                r,
                lambda1,
                lambda2,
                zero_rows,
            )
        B = basis.embed(C)
        # Flip B's columns and W's rows together so that B W is unchanged. One
        # in-place pass flips and scales B: a sign flip is exact, so these are the
        # bits of scale * (B * signs).
        signs = column_signs(B)
        B *= scale * signs
        return B, W * signs[:, None], history, converged, zero_rows

    def _check_params(self):
        p = self._validate_params()
        return p["lambda1"], p["lambda2"], p["max_iter"], p["tol"]

    def _check_lambdas(self, a, b) -> tuple[float, float]:
        p = validate_params({"lambda1": a, "lambda2": b}, self._parameter_constraints)
        return p["lambda1"], p["lambda2"]

    @staticmethod
    def _blocks(patterns, r, spectral):
        sizes = [r if spectral else P.shape[1] for P in patterns]
        offsets = np.cumsum([0] + sizes)
        return [
            slice(int(a), int(b))
            for a, b in zip(offsets[:-1], offsets[1:], strict=True)
        ]

    def fit_transform(self, views, y=None) -> np.ndarray:
        """Fit and return ``embedding_ = sqrt(N) B``, shape (N, n_components)."""
        lambda1, lambda2, it, tol = self._check_params()
        views, N, (r,), pca_components, n_neighbors = self._validate(
            views, [self.n_components]
        )
        patterns, infos = self._patterns(views, r, pca_components, n_neighbors)
        spectral = self.view_embedding == "spectral"
        blocks = self._blocks(patterns, r, spectral)
        ((_, basis),) = consensus_bases(
            patterns, infos, [r], self.view_embedding, full=True
        )
        Z, W, history, converged, zero_rows = self._solve(
            basis, blocks, r, lambda1, lambda2, it, tol, np.sqrt(N)
        )
        self._store_views(patterns, infos, r)
        self.view_blocks_ = blocks
        self.loadings_ = W
        self.objective_ = history
        self.n_iter_ = len(history)
        self.converged_ = converged
        self.n_zero_loadings_ = zero_rows
        self.embedding_ = Z
        return self.embedding_

    def pca_patterns(self, views) -> SSMVDPatterns:
        """Compute the per-view PCA patterns of ``views`` and their consensus basis.

        They depend on neither ``r`` nor the lambdas: pass them to
        :meth:`fit_transform_grid` (``patterns=``) to fit several grids on the same
        views, e.g. one call per ``r``, without computing them again. PCA mode
        only (spectral patterns have ``k_p = r`` columns).

        Parameters
        ----------
        views : list of (N, d_p) arrays or sparse matrices

        Returns
        -------
        SSMVDPatterns
        """
        if self.view_embedding != "pca":
            raise ValueError(
                "pca_patterns needs view_embedding='pca': spectral patterns depend "
                f"on r (got view_embedding={self.view_embedding!r})"
            )
        views, N, _, pca_components, n_neighbors = self._validate(views, [1])
        patterns, infos = self._patterns(views, None, pca_components, n_neighbors)
        return SSMVDPatterns(
            tuple(patterns),
            tuple(infos),
            ConsensusBasis(np.hstack(patterns)),
            (N, *(X.shape[1] for X in views)),
            pca_components,
        )

    def _shared(self, patterns: SSMVDPatterns, views, pca_components):
        """Check that ``patterns`` were made from views of these shapes, settings."""
        shapes = (views[0].shape[0], *(X.shape[1] for X in views))
        if self.view_embedding != "pca":
            raise ValueError("patterns= needs view_embedding='pca'")
        if patterns.shapes != shapes or patterns.pca_components != pca_components:
            raise ValueError(
                f"patterns were computed for views of shapes {patterns.shapes} with "
                f"pca_components={patterns.pca_components}, not {shapes} with "
                f"pca_components={pca_components}"
            )
        return list(patterns.patterns), list(patterns.infos), patterns.basis

    def fit_transform_grid(
        self, views, r_grid, lambdas=None, *, patterns: SSMVDPatterns | None = None
    ) -> dict:
        """Representations for a grid of ``r`` (and optionally of ``lambda``'s).

        The per-view patterns and the Gram matrix of ``A`` are computed once (for
        ``r_max``; see :meth:`DSE.fit_transform_grid` for why slicing is exact),
        after which every fit costs ``O(K^2 r)`` per iteration plus ``O(N K r)``.

        Parameters
        ----------
        views : list of (N, d_p) arrays or sparse matrices
        r_grid : iterable of int
        lambdas : iterable of (lambda1, lambda2), optional
            If given, fit every pair for every ``r``.
        patterns : SSMVDPatterns, optional
            :meth:`pca_patterns` of these ``views`` (with this estimator's
            ``pca_components`` and ``random_state``): used instead of computing the
            patterns and their Gram matrix again. PCA mode only. The results are
            those without it, bit for bit.

        Returns
        -------
        dict
            ``r -> (N, r) ndarray`` when ``lambdas`` is None (with the estimator's
            own ``lambda1, lambda2``), else ``(r, lambda1, lambda2) -> ndarray``.
            The fitted attributes describe the last fit (largest ``r``, last pair).
            As in DSE, a grid beyond the rank of ``A`` is truncated (logged);
            ``r_grid_`` lists the ``r`` values computed.
        """
        *own, it, tol = self._check_params()
        pairs = (
            [tuple(own)]
            if lambdas is None
            else [self._check_lambdas(a, b) for a, b in lambdas]
        )
        if not pairs:
            raise ValueError("lambdas is empty")
        views, N, r_values, pca_components, n_neighbors = self._validate(views, r_grid)
        if patterns is None:
            A, infos = self._patterns(views, r_values[-1], pca_components, n_neighbors)
            basis = None
        else:
            A, infos, basis = self._shared(patterns, views, pca_components)
        spectral = self.view_embedding == "spectral"
        scale = np.sqrt(N)
        out = {}
        for r, basis_r in consensus_bases(
            A,
            infos,
            r_values,
            self.view_embedding,
            full=True,
            strict=False,
            basis=basis,
        ):
            blocks = self._blocks(A, r, spectral)
            for lambda1, lambda2 in pairs:
                Z, W, history, converged, zero_rows = self._solve(
                    basis_r, blocks, r, lambda1, lambda2, it, tol, scale
                )
                key = r if lambdas is None else (r, lambda1, lambda2)
                out[key] = Z
        self._store_views(A, infos, r)
        self.r_grid_ = sorted({k if lambdas is None else k[0] for k in out})
        self.view_blocks_ = blocks
        self.loadings_ = W
        self.objective_ = history
        self.n_iter_ = len(history)
        self.converged_ = converged
        self.n_zero_loadings_ = zero_rows
        self.embedding_ = out[key]
        return out


@dataclass(frozen=True, eq=False)
class SSMVDPatterns:
    """Per-view PCA patterns of one set of views and their consensus basis.

    What every ``r`` and ``(lambda1, lambda2)`` of SSMVD on those views shares
    (:meth:`SSMVD.pca_patterns`); :meth:`SSMVD.fit_transform_grid` takes it as
    ``patterns=`` to skip computing it again.

    Attributes
    ----------
    patterns : tuple of ndarray, each (N, k_p)
        The orthonormal per-view patterns ``A^{(p)}``.
    infos : tuple of ViewPatternInfo
    basis : ConsensusBasis
        The complete thin SVD of ``A = [A^{(1)}, ..., A^{(m)}]``.
    shapes : tuple of int
        ``(N, d_1, ..., d_m)`` of the views they were computed from.
    pca_components : int
    """

    patterns: tuple
    infos: tuple
    basis: ConsensusBasis
    shapes: tuple
    pca_components: int

    @property
    def rank(self) -> int:
        """Numerical rank of ``A``: the most consensus components there are."""
        return self.basis.rank

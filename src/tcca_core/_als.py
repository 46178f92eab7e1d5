"""Rank-r CP decomposition by alternating least squares, tensor-free.

The loop is tensorly's ``parafac`` (tensorly 0.10, ``normalize_factors=False``,
``cvg_criterion="abs_rec_error"``), step for step, but it never touches the tensor:
it sees only

* ``mttkrp(factors, p)``: the matricized tensor times Khatri-Rao product,
  T_(p) (U_m kr ... kr U_1, p skipped), of shape (d_p, r);
* ``norm_sq``: ||T||_F^2.

All r components are updated together (the paper is explicit that ALS, not
deflation, is used: section 5.1.1, observation 5). The reconstruction error comes from
the last MTTKRP, as in tensorly's ``error_calc``, so a dense and an implicit tensor
give the same iterates up to rounding.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

__all__ = ["CPResult", "cp_als", "init_factors", "normalize_cp"]

Mttkrp = Callable[[Sequence[np.ndarray], int], np.ndarray]


@dataclass
class CPResult:
    """Outcome of :func:`cp_als`: sum_k weights[k] * factors[0][:, k] o ... ."""

    weights: np.ndarray
    factors: list[np.ndarray]
    n_iter: int
    converged: bool
    errors: list[float]


def init_factors(
    mttkrp: Mttkrp,
    dims: Sequence[int],
    rank: int,
    init,
    rng: np.random.Generator,
    *,
    mode_grams: Callable[[], list[np.ndarray]] | None = None,
) -> list[np.ndarray]:
    """Initial factors: ``"random"``, ``"svd"``, ``"hosvd"`` or a list of arrays.

    ``"svd"`` is a randomized HOSVD that never unfolds the tensor: the leading left
    singular vectors of T_(p) are estimated from T_(p) Omega, where the Gaussian
    test matrix Omega = Omega_m kr ... kr Omega_1 has Khatri-Rao structure, so that
    the sketch is itself an MTTKRP. It costs one MTTKRP with ``rank + 10`` columns
    per mode, whatever engine holds the tensor.

    ``"hosvd"`` is the exact HOSVD (tensorly's ``init="svd"``): the leading
    eigenvectors of T_(p) T_(p)^T, which ``mode_grams()`` returns for every mode
    (the implicit engine computes them from Gram matrices, without unfolding T).

    Where ``rank > d_p``, or T_(p) has fewer numerically non-zero singular values
    than ``rank``, the missing columns are random (as tensorly does for r > d_p):
    a singular vector of a zero singular value spans a direction in which T is zero
    (a constant column whitens to 0), and a component started there would make
    ALS's normal equations singular.
    """
    m = len(dims)
    if isinstance(init, str):
        if init == "random":
            return [rng.standard_normal((d, rank)) for d in dims]
        if init not in ("svd", "hosvd"):
            raise ValueError(
                "init must be 'svd', 'hosvd', 'random' or a list of "
                f"{m} arrays, got {init!r}"
            )
        if init == "hosvd":
            if mode_grams is None:
                raise ValueError("init='hosvd' needs the tensor's mode Gram matrices")
            bases = []
            for A in mode_grams():
                w, V = np.linalg.eigh(A)
                w, V = w[::-1], V[:, ::-1]
                # eigh of M M^T resolves eigenvalues only to ~ d eps max(w): keep
                # those 100 times above that noise
                bases.append(V[:, : _numerical_rank(w, 100.0)])
        else:
            s = rank + 10
            omega = [rng.standard_normal((d, s)) for d in dims]
            bases = []
            for p in range(m):
                Q, sv, _ = np.linalg.svd(mttkrp(omega, p), full_matrices=False)
                bases.append(Q[:, : _numerical_rank(sv)])
        factors = []
        for d, Q in zip(dims, bases, strict=True):
            k = min(rank, Q.shape[1])
            U = Q[:, :k]
            if k < rank:
                U = np.hstack([U, rng.standard_normal((d, rank - k)) / np.sqrt(d)])
            factors.append(_fix_signs(U))
        return factors
    try:
        factors = [np.array(U, dtype=np.float64) for U in init]
    except (TypeError, ValueError) as exc:
        raise ValueError(
            f"init must be 'svd', 'hosvd', 'random' or a list of arrays: {exc}"
        ) from exc
    expected = [(d, rank) for d in dims]
    got = [U.shape for U in factors]
    if got != expected:
        raise ValueError(f"init factors must have shapes {expected}, got {got}")
    if not all(np.all(np.isfinite(U)) for U in factors):
        raise ValueError("init factors contain NaN or infinity")
    return factors


def _numerical_rank(sv: np.ndarray, factor: float = 1.0) -> int:
    """Number of leading values of the decreasing ``sv`` above
    factor * sv[0] * len(sv) * machine epsilon (numpy's ``matrix_rank`` tolerance
    for factor = 1)."""
    if sv.size == 0 or sv[0] <= 0:
        return 0
    tol = factor * sv[0] * sv.size * np.finfo(float).eps
    return int(np.sum(sv > tol))


def _fix_signs(U: np.ndarray) -> np.ndarray:
    """Make the largest-magnitude entry of each column positive."""
    idx = np.argmax(np.abs(U), axis=0)
    signs = np.sign(U[idx, np.arange(U.shape[1])])
    signs[signs == 0] = 1.0
    return U * signs


def cp_als(
    mttkrp: Mttkrp,
    norm_sq: float,
    init: list[np.ndarray],
    *,
    max_iter: int,
    tol: float,
    callback: Callable[[int, float], None] | None = None,
) -> CPResult:
    """Run ALS from ``init``; see the module docstring for the contract."""
    factors = [U.copy() for U in init]
    m = len(factors)
    r = factors[0].shape[1]
    norm = np.sqrt(max(norm_sq, 0.0))
    grams = [U.T @ U for U in factors]
    errors: list[float] = []
    converged = False
    n_iter = 0
    for iteration in range(max_iter):
        n_iter = iteration + 1
        for p in range(m):
            V = np.ones((r, r))
            for q in range(m):
                if q != p:
                    V *= grams[q]
            B = mttkrp(factors, p)
            factors[p] = np.linalg.solve(V.T, B.T).T
            grams[p] = factors[p].T @ factors[p]
        # ||T - T_hat||^2 = ||T||^2 + ||T_hat||^2 - 2 <T, T_hat>, with <T, T_hat>
        # read off the last mode's MTTKRP (B is still mode m-1's).
        iprod = float(np.sum(B * factors[-1]))
        rec_sq = float(np.sum(np.prod(grams, axis=0)))
        err = np.sqrt(abs(norm_sq + rec_sq - 2 * iprod)) / norm if norm > 0 else 0.0
        errors.append(err)
        if callback is not None:
            callback(n_iter, err)
        if tol and iteration >= 1 and abs(errors[-2] - errors[-1]) < tol:
            converged = True
            break
    return CPResult(np.ones(r), factors, n_iter, converged, errors)


def normalize_cp(weights: np.ndarray, factors: list[np.ndarray]):
    """Unit-norm columns, weights >= 0, a fixed sign convention, sorted by weight.

    The first m-1 factors have their largest-magnitude entry positive; the sign that
    this removes goes into the last factor, so the CP tensor is unchanged.
    """
    factors = [U.copy() for U in factors]
    weights = np.array(weights, dtype=np.float64)
    for U in factors:
        norms = np.linalg.norm(U, axis=0)
        weights *= norms
        U /= np.where(norms > 0, norms, 1.0)
    for p in range(len(factors) - 1):
        U = factors[p]
        idx = np.argmax(np.abs(U), axis=0)
        signs = np.sign(U[idx, np.arange(U.shape[1])])
        signs[signs == 0] = 1.0
        U *= signs
        factors[-1] *= signs
    order = np.argsort(-weights, kind="stable")
    return weights[order], [U[:, order] for U in factors]

"""Rank-r CP decomposition by damped Gauss-Newton, tensor-free.

The opt-in alternative to :func:`.als.cp_als` (``solver="lm"``). It minimizes
f = 1/2 ||T - [[U_1, ..., U_m]]||^2 over all factors at once and, like ALS, sees
the tensor only through ``mttkrp(factors, p)`` (B_p = T_(p) (kr_{q != p} U_q)) and
``norm_sq`` (||T||^2). With G_q = U_q^T U_q, Gamma_p the Hadamard product of the
G_q for q != p and Gamma_pq that of the G_s for s not in {p, q}:

* the gradient is g_p = U_p Gamma_p - B_p (one MTTKRP per mode, :func:`gradient`);
* the Gauss-Newton matrix J^T J (J the Jacobian of the CP tensor in the factors)
  is applied from the Gram matrices alone, the structured Gramian of Phan,
  Tichavsky & Cichocki (2013) and Tensorlab's ``cpd_nls`` (Sorber, Van Barel &
  De Lathauwer 2013; Vervliet & De Lathauwer): (J^T J X)_p = X_p Gamma_p +
  U_p sum_{q != p} (X_q^T U_q) * Gamma_pq, O(m r^2 sum(d)) flops
  (:func:`gramian_product`);
* the Gauss-Newton step solves J^T J S = -g inexactly, by at most
  :data:`CG_MAX_ITER` conjugate-gradient iterations from the Cauchy point,
  preconditioned by the block-Jacobi blocks Gamma_p^-1 (r x r Cholesky factors);
* the step is damped by a dogleg trust region (Powell's dogleg between the
  Cauchy point and the Gauss-Newton step; the radius follows the gain ratio of
  actual to predicted decrease of f, with Tensorlab's ``nls_gndl`` rule).

Three choices were measured on Ads at r = 150 (eps = 1e-2, the exact HOSVD start
and Gaussian ones; the record is in docs/history/benchmarks.md):

* a dogleg trust region, not Levenberg-Marquardt's lambda I: with Nielsen's
  update lambda fell by eight or more orders of magnitude within tens of steps,
  leaving the truncated CG as the only damping, and the fits ended at 0.172
  (HOSVD) and 0.180-0.190 (random) where the dogleg ends at 0.164 and
  0.174-0.180 in similar time; a rejected dogleg step costs no CG (the same two
  points give the step of a smaller radius);
* the start as it is: scaled to its best multiple first (which ALS's first sweep
  does on its own), it ended higher from 8 of 9 starts;
* column norms balanced only where they drift apart: equalized after every step,
  the Levenberg-Marquardt fits ended 0.5-6 % higher.

A step is taken only where it lowers the error. The trial's error comes from its
last mode's MTTKRP, the first one the next step needs, so an accepted step costs m
MTTKRPs (an ALS sweep's) and a rejected one costs one. The column norms are
balanced across modes where they drift apart (:func:`.als._balance`), as in
ALS. The error, the stopping rule and the result are ALS's (:func:`.als._error`,
:func:`.als._remaining`, :class:`.als.CPResult`), so ``tol`` means the same thing
and the race of starts (:meth:`.engine.MomentEngine._race`) runs unchanged.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
from scipy.linalg import cho_factor, cho_solve

from .als import (
    WINDOW,
    CPResult,
    Mttkrp,
    Residual,
    _balance,
    _error,
    _remaining,
    cancellation_limit,
)

__all__ = ["cp_lm", "gradient", "gramian_blocks", "gramian_product"]

#: Conjugate-gradient iterations per Gauss-Newton step at most, and the residual
#: (relative to the gradient) at which they stop early: Tensorlab's defaults. An
#: inexact step is as good far from a minimum; on Ads at r = 150 from the exact
#: HOSVD start, 10 ended 0.8 % higher than 15 and took longer (10.6 s against
#: 9.0 s); with Levenberg-Marquardt, 25 took 1.7 times as long as 10 to the same
#: minimum.
CG_MAX_ITER = 15
CG_TOL = 1e-6
#: The first trust radius, relative to the norm of the start's factors (at least 1).
RADIUS_START = 0.3
#: Trials in a row that may be rejected before the iterate counts as a minimum to
#: rounding; one whose step is below :data:`STEP_ROUNDING` of the factors' norm
#: ends the run at once.
MAX_TRIALS = 50
STEP_ROUNDING = 1e-14


def _hadamard(grams: Sequence[np.ndarray], skip: Sequence[int]) -> np.ndarray:
    """Return the Hadamard product of ``grams`` but those in ``skip`` (ones if none)."""
    out = None
    for q, G in enumerate(grams):
        if q not in skip:
            out = G.copy() if out is None else out * G
    if out is None:
        r = grams[0].shape[0]
        return np.ones((r, r))
    return out


def gramian_blocks(grams: Sequence[np.ndarray]) -> tuple[list[np.ndarray], dict]:
    """Return Gamma_p for every mode and Gamma_pq for every pair p < q."""
    m = len(grams)
    diag = [_hadamard(grams, [p]) for p in range(m)]
    pair = {(p, q): _hadamard(grams, [p, q]) for p in range(m) for q in range(p + 1, m)}
    return diag, pair


def gradient(
    factors: Sequence[np.ndarray],
    mttkrps: Sequence[np.ndarray],
    grams: Sequence[np.ndarray] | None = None,
) -> list[np.ndarray]:
    """Gradient of f = 1/2 ||T - [[U_1, ..., U_m]]||^2: g_p = U_p Gamma_p - B_p.

    ``mttkrps`` are the B_p = T_(p) (kr_{q != p} U_q); ``grams`` the U_q^T U_q,
    computed when not given.
    """
    if grams is None:
        grams = [U.T @ U for U in factors]
    return [
        U @ _hadamard(grams, [p]) - B
        for p, (U, B) in enumerate(zip(factors, mttkrps, strict=True))
    ]


def gramian_product(
    factors: Sequence[np.ndarray],
    X: Sequence[np.ndarray],
    blocks: tuple[list[np.ndarray], dict] | None = None,
) -> list[np.ndarray]:
    """J^T J X for the Jacobian J of vec([[U_1, ..., U_m]]) and a direction X.

    (J^T J X)_p = X_p Gamma_p + U_p sum_{q != p} (X_q^T U_q) * Gamma_pq, from the
    Gram matrices only. ``blocks``: :func:`gramian_blocks` of the factors' Gram
    matrices, computed when not given.
    """
    m = len(factors)
    if blocks is None:
        blocks = gramian_blocks([U.T @ U for U in factors])
    diag, pair = blocks
    Z = [Xq.T @ Uq for Xq, Uq in zip(X, factors, strict=True)]
    out = []
    for p in range(m):
        Y = X[p] @ diag[p]
        if m > 1:
            W = sum(Z[q] * pair[min(p, q), max(p, q)] for q in range(m) if q != p)
            Y += factors[p] @ W
        out.append(Y)
    return out


def _dot(A: Sequence[np.ndarray], B: Sequence[np.ndarray]) -> float:
    return float(sum(np.vdot(a, b) for a, b in zip(A, B, strict=True)))


def _block_inverses(diag: Sequence[np.ndarray]) -> list[np.ndarray]:
    """Gamma_p^-1 for every mode, from Cholesky factors.

    Formed explicitly: applied to a d_p x r block at every CG iteration, one GEMM
    runs several times faster than two triangular solves. A Gamma_p that is
    singular to rounding (collinear components) is shifted by a multiple of its
    largest entry until its Cholesky factor exists.
    """
    out = []
    for D in diag:
        eye = np.eye(D.shape[0])
        shift = 0.0
        while True:
            try:
                factor = cho_factor(D + shift * eye, lower=True)
                break
            except np.linalg.LinAlgError:
                shift = max(10.0 * shift, 1e-14 * float(np.abs(D).max()), 1e-300)
        out.append(cho_solve(factor, eye))
    return out


def _pcg(apply, b, x0, Ax0, inverses, max_iter: int, tol: float):
    """Preconditioned CG on A x = b from x0, with A x0 given.

    Returns ``(x, A x, iterations)``; A x is b less CG's residual, no product.
    """
    x = [xp.copy() for xp in x0]
    R = [bp - Ap for bp, Ap in zip(b, Ax0, strict=True)]
    stop = tol * np.sqrt(_dot(b, b))
    k = 0
    if np.sqrt(_dot(R, R)) > stop:
        Z = [Rp @ V for Rp, V in zip(R, inverses, strict=True)]
        P = Z
        rz = _dot(R, Z)
        while k < max_iter:
            k += 1
            AP = apply(P)
            curvature = _dot(P, AP)
            if not curvature > 0:
                break
            alpha = rz / curvature
            for xp, Rp, Pp, Ap in zip(x, R, P, AP, strict=True):
                xp += alpha * Pp
                Rp -= alpha * Ap
            if np.sqrt(_dot(R, R)) <= stop:
                break
            Z = [Rp @ V for Rp, V in zip(R, inverses, strict=True)]
            rz, rz_before = _dot(R, Z), rz
            P = [z + (rz / rz_before) * Pp for z, Pp in zip(Z, P, strict=True)]
    return x, [bp - Rp for bp, Rp in zip(b, R, strict=True)], k


class _Dogleg:
    """The Cauchy point and the truncated Gauss-Newton step at one iterate.

    Every step of the trust region is c_cp p_cp + c_gn p_gn, so the products with
    J^T J of the two points give its predicted decrease exactly, for any radius.
    """

    def __init__(self, factors, g, blocks, cg_max_iter: int, cg_tol: float):
        def apply(X):
            return gramian_product(factors, X, blocks)

        Hg = apply(g)
        gg, gHg = _dot(g, g), _dot(g, Hg)
        # the minimum of the model along -g (Cauchy); a flat direction: unit step
        alpha = gg / gHg if gHg > 0 and np.isfinite(gHg) else 1.0
        cp = [-alpha * gp for gp in g]
        Hcp = [-alpha * h for h in Hg]
        gn, Hgn, k = _pcg(
            apply,
            [-gp for gp in g],
            cp,
            Hcp,
            _block_inverses(blocks[0]),
            cg_max_iter,
            cg_tol,
        )
        self.products = k + 1
        n_cp, n_gn = alpha * np.sqrt(gg), np.sqrt(_dot(gn, gn))
        if not (np.isfinite(n_gn) and n_gn >= n_cp):
            # a Gauss-Newton step shorter than the Cauchy point's (CG stopped on
            # negative curvature, or overflowed) is no better than it
            gn, Hgn, n_gn = cp, Hcp, n_cp
        self.cp, self.gn, self.n_cp, self.n_gn = cp, gn, n_cp, n_gn
        self.g_cp, self.g_gn = _dot(g, cp), _dot(g, gn)
        self.cHc, self.nHn, self.cHn = _dot(cp, Hcp), _dot(gn, Hgn), _dot(cp, Hgn)
        self.c_n = _dot(cp, gn)

    def step(self, radius: float) -> tuple[float, float, float, float]:
        """Return ``(c_cp, c_gn, predicted decrease of f, length)`` of a radius."""
        if self.n_gn <= radius:
            c1, c2 = 0.0, 1.0
        elif self.n_cp >= radius:
            c1, c2 = radius / self.n_cp, 0.0
        else:
            # p_cp + beta (p_gn - p_cp) of length radius, beta in (0, 1), in the
            # form that does not cancel
            aa = self.n_cp**2
            dd = self.n_gn**2 - 2.0 * self.c_n + aa
            c = self.c_n - aa
            root = np.sqrt(max(c * c + dd * (radius**2 - aa), 0.0))
            beta = (-c + root) / dd if c <= 0 else (radius**2 - aa) / (c + root)
            c1, c2 = 1.0 - beta, beta
        curvature = c1 * c1 * self.cHc + 2.0 * c1 * c2 * self.cHn + c2 * c2 * self.nHn
        model = c1 * self.g_cp + c2 * self.g_gn + 0.5 * curvature
        length_sq = c1 * c1 * self.n_cp**2 + 2.0 * c1 * c2 * self.c_n
        length_sq += c2 * c2 * self.n_gn**2
        return c1, c2, -model, float(np.sqrt(max(length_sq, 0.0)))


def _new_radius(radius: float, rho: float, length: float, n_gn: float) -> float:
    """Tensorlab's trust-radius rule: widen on a good fit, else shrink smoothly.

    A gain ratio ``rho`` above 1/2 widens the radius to twice the step at least;
    below, it shrinks by a factor sigma(rho) in [1/4, 1], and a rejected step
    (rho < 0) shrinks it below the Gauss-Newton step at once.
    """
    if rho > 0.5:
        return max(radius, 2.0 * length)
    sigma = 0.25 if rho < -1.0 else 0.75 / (1.0 + np.exp(-14.0 * (rho - 0.25))) + 0.25
    if rho < 0 and 0 < n_gn < sigma * radius:
        return float(sigma ** np.ceil(np.log(n_gn / radius) / np.log(sigma)) * radius)
    return sigma * radius


def cp_lm(
    mttkrp: Mttkrp,
    norm_sq: float,
    init: list[np.ndarray] | None = None,
    *,
    max_iter: int,
    tol: float,
    callback: Callable[[int, float], None] | None = None,
    resume: CPResult | None = None,
    residual_sq: Residual | None = None,
    eps: float | None = None,
    cg_max_iter: int = CG_MAX_ITER,
    cg_tol: float = CG_TOL,
) -> CPResult:
    """Run damped Gauss-Newton from ``init``; see the module docstring.

    Returns an :class:`.als.CPResult` whose ``n_iter`` counts the steps taken and
    whose ``errors`` hold the error after each (never rising). Stops as
    :func:`.als.cp_als` does, when the estimated decrease of the error still to
    come stays below ``tol`` times the error for two windows of steps
    (``converged=True``; ``tol=0`` runs all steps), or when no step lowers the
    error any more (a minimum to rounding: ``converged=True``), or after
    ``max_iter`` steps. ``resume`` continues an earlier run (its factors, errors
    and ``state``: the trust radius and the MTTKRPs of the last iterate), so a run
    cut into bursts gives the iterates of one run. ``residual_sq`` and ``eps``:
    as for :func:`.als.cp_als`. ``state`` also counts the MTTKRPs
    (``"mttkrps"``), the rejected trials (``"rejected"``) and the products with
    J^T J (``"products"``).
    """
    limit = cancellation_limit(tol)
    if resume is not None:
        factors = list(resume.factors)
        errors, n_iter = list(resume.errors), resume.n_iter
        state = dict(resume.state)
        B, err = list(state["B"]), state["error"]
        grams = [U.T @ U for U in factors]
    else:
        assert init is not None, "cp_lm needs init or resume"
        factors, _ = _balance([np.array(U, dtype=np.float64) for U in init], None)
        grams = [U.T @ U for U in factors]
        B = [mttkrp(factors, p) for p in range(len(factors))]
        err = _error(norm_sq, B[-1], factors, grams, residual_sq, limit)
        size = np.sqrt(sum(float(np.vdot(U, U)) for U in factors))
        state = {
            "radius": RADIUS_START * max(1.0, size),
            "streak": 0,
            "B": B,
            "error": err,
            "mttkrps": len(factors),
            "rejected": 0,
            "products": 0,
        }
        errors, n_iter = [], 0
    m, r = len(factors), factors[0].shape[1]
    converged = False
    # a start whose error is unresolved (degenerate, see als._error) or not
    # finite: no step can be compared with it
    diverged = not np.isfinite(err)
    for iteration in range(n_iter, max_iter if not diverged else n_iter):
        blocks = gramian_blocks(grams)
        g = [U @ D - Bp for U, D, Bp in zip(factors, blocks[0], B, strict=True)]
        dogleg = _Dogleg(factors, g, blocks, cg_max_iter, cg_tol)
        del g
        state["products"] += dogleg.products
        size = np.sqrt(sum(float(np.vdot(U, U)) for U in factors))
        accepted = None
        for _ in range(MAX_TRIALS):
            radius = state["radius"]
            c_cp, c_gn, predicted, length = dogleg.step(radius)
            trial = [
                U + c_cp * P + c_gn * S
                for U, P, S in zip(factors, dogleg.cp, dogleg.gn, strict=True)
            ]
            trial_grams = [U.T @ U for U in trial]
            trial, trial_grams = _balance(trial, trial_grams)
            last = mttkrp(trial, m - 1)
            state["mttkrps"] += 1
            trial_err = _error(norm_sq, last, trial, trial_grams, residual_sq, limit)
            if np.isfinite(trial_err) and predicted > 0:
                # f = ||T||^2 e^2 / 2, its decrease without cancellation
                actual = 0.5 * norm_sq * (err - trial_err) * (err + trial_err)
                rho = actual / predicted
            else:
                rho = -np.inf
            state["radius"] = _new_radius(radius, rho, length, dogleg.n_gn)
            if np.isfinite(trial_err) and trial_err < err:
                accepted = (trial, trial_grams, last, trial_err)
                break
            state["rejected"] += 1
            # the rejected trial's arrays (and an engine's products with them) go
            del trial, trial_grams, last
            if length <= STEP_ROUNDING * size:
                break
        del dogleg
        if accepted is None:
            converged = True  # no step lowers the error: a minimum to rounding
            break
        factors, grams, last, err = accepted
        del accepted
        n_iter = iteration + 1
        B = [mttkrp(factors, p) for p in range(m - 1)] + [last]
        del last
        state["mttkrps"] += m - 1
        errors.append(err)
        state["B"], state["error"] = B, err
        if callback is not None:
            callback(n_iter, err)
        state["streak"] = (
            state["streak"] + 1
            if tol and _remaining(errors, eps=eps) < tol * err
            else 0
        )
        if state["streak"] >= 2 * WINDOW:
            converged = True
            break
    return CPResult(
        np.ones(r),
        factors,
        n_iter,
        converged,
        errors,
        0,
        state,
        diverged,
        (n_iter, factors),
    )

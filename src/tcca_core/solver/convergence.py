"""What a fit says when ALS stops short: the ConvergenceWarning and its wording.

A fit that ran out of sweeps, broke down (its error rose above its lowest, see
:func:`.als.broke_down`) or diverged warns, saying how far the error still moved
so that a user can judge whether more sweeps matter; an ``eps`` that swamps the
views' covariances is named first, since no number of sweeps helps there.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence

import numpy as np
from sklearn.exceptions import ConvergenceWarning

from .als import BREAKDOWN, WINDOW, broke_down

__all__ = [
    "convergence_message",
    "still_moving",
    "swamped_message",
    "warn_unconverged",
]


def warn_unconverged(name: str, out: dict, tol: float) -> None:
    """Warn when the fit ``out`` diverged, broke down or ran out of sweeps.

    ``out`` is an engine's ``info`` dict; running out of sweeps counts only with
    ``tol > 0`` and while the error still falls by ``tol`` per sweep or more
    (:func:`still_moving`): a fit that ran out of sweeps creeping more slowly has
    converged by the usual rule, though ours, which looks further ahead for a
    swamp, did not stop it (``converged_`` is then False, with no warning).
    Called from an estimator's fit, so the ConvergenceWarning points at the
    user's call.
    """
    swamped = out.get("swamped")
    if swamped:
        warnings.warn(f"{name}: {swamped}", UserWarning, stacklevel=4)
    diverged = out.get("diverged", False)
    ran_out = not out["converged"] and tol > 0 and still_moving(out["errors"], tol)
    if diverged or out.get("broke_down") or ran_out:
        message = convergence_message(
            name,
            out["errors"],
            tol,
            diverged,
            rise=out.get("rise"),
            solver=out.get("solver", "als"),
        )
        if swamped:
            message += (
                " (eps swamps the data's covariance, see the warning before: the "
                "tensor is at the scale of rounding, not max_iter's fault)"
            )
        warnings.warn(message, ConvergenceWarning, stacklevel=4)


def still_moving(errors: Sequence[float], tol: float) -> bool:
    """Whether the error still falls by ``tol`` of itself per sweep, or more.

    The mean over the last :data:`WINDOW` sweeps: the usual stopping rule's test
    (a relative change per sweep below ``tol``), which the fit then fails. Fewer
    sweeps than a window cannot tell, and count as moving.
    """
    if len(errors) <= WINDOW:
        return True
    fall = errors[-1 - WINDOW] - errors[-1]
    return fall >= WINDOW * tol * max(errors[-1], 1e-300)


#: eps this many times the largest variance of a view swamps its covariance
SWAMPED = 1e6


def swamped_message(eps: float, covs: Sequence[np.ndarray]) -> str | None:
    """Say how far ``eps`` swamps the views' covariances, or None where it does not.

    With eps far above a view's largest variance the whitening is about
    I / sqrt(eps): the canonical variates shrink with the data's scale (data at
    1e-8 give variates of 1e-6), the moment tensor nears rounding level, and what
    ALS then fits is the raw moments, not correlations.
    """
    if eps <= 0:
        return None
    tops = [float(np.linalg.eigvalsh(C)[-1]) if C.size else 0.0 for C in covs]
    p = int(np.argmin(tops))
    top = max(tops[p], np.finfo(float).tiny)
    if eps <= SWAMPED * top:
        return None
    return (
        f"eps = {eps:g} is {eps / top:.2g} times the largest variance of view {p} "
        f"({tops[p]:.2g}): the ridge swamps the data's covariance, so the "
        "whitening is about I / sqrt(eps) and the canonical variates measure the "
        "data's scale, not correlation; rescale the views (e.g. StandardScaler) or "
        "choose eps on the scale of their variances"
    )


def convergence_message(
    name: str,
    errors: Sequence[float],
    tol: float,
    diverged: bool = False,
    rise: tuple | None = None,
    solver: str = "als",
) -> str:
    """Word the ConvergenceWarning of a fit that stopped short, broke down or diverged.

    It says how far the error still moved, so that a user can judge whether more
    sweeps matter. ``rise`` is :meth:`CPResult.kept`'s record of a run that ended
    above its lowest error (``errors`` then ends at the iterate kept). ``solver``
    names the method: ``"lm"`` (Gauss-Newton) counts steps, not sweeps.
    """
    method, sweeps = ("Gauss-Newton", "steps") if solver == "lm" else ("ALS", "sweeps")
    n = len(errors)
    if rise is None and broke_down(errors):
        k = int(np.argmin(errors))
        rise = (k + 1, errors[k], n, errors[-1])
    if rise is not None and rise[3] > rise[1] * (1 + BREAKDOWN):
        k, low, last_n, last = rise
        return (
            f"{name}: ALS broke down: the relative error rose from its lowest, "
            f"{low:.6g} at sweep {k}, to {last:.6g} at sweep {last_n}, "
            "which exact ALS never does (wrongly computed updates, a degenerate CP "
            f"fit); the iterate of lowest error (sweep {k}) is kept; a larger eps "
            "or another init may avoid it"
        )
    if diverged:
        last = f"{errors[-1]:.6g}" if errors else "n/a"
        return (
            f"{name}: {method} diverged (a degenerate CP fit: components far larger "
            "than the tensor that cancel each other, or factors that overflowed); "
            f"the iterate of lowest error is kept ({sweeps[:-1]} {n}, relative "
            f"error {last}); a larger eps or another init may avoid it"
        )
    w = min(WINDOW, n - 1)
    moved = (errors[-1 - w] - errors[-1]) / max(errors[-1], 1e-300) if w > 0 else 0.0
    # a rise smaller than a breakdown (above) is a stall at rounding level, where
    # "still fell by -4.7e-07" would mislead
    one = sweeps[:-1]
    times = f" ({moved / (w * tol):.3g} times tol per {one})" if w * tol > 0 else ""
    trend = (
        f"still fell by {moved:.2g} of itself over the last {w} {sweeps}{times}; a "
        "larger max_iter may lower it further"
        if moved >= 0
        else f"rose by {-moved:.2g} of itself over the last {w} {sweeps} ({method} "
        f"has stalled: exact {sweeps} never raise it); more {sweeps} are unlikely "
        "to lower it"
    )
    return (
        f"{name}: {method} stopped after max_iter={n} {sweeps} before the stopping "
        f"rule (tol={tol:g}) was met: the relative error {trend}"
    )

"""The "tensorly" route: tensorly's ``parafac`` on the dense tensor M (the reference).

The paper's route, kept as it is: M is built by :mod:`.dense` (from dense input as
given), and every start runs tensorly's own CP-ALS in full, with tensorly's MTTKRP
and stopping rule. The other engines run our ALS loop (:mod:`.als`), which follows
tensorly's step for step, so all three agree to rounding.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence

import numpy as np

__all__ = ["parafac_fit", "tensorly_mttkrp"]


def tensorly_mttkrp(M: np.ndarray, factors: Sequence[np.ndarray], p: int) -> np.ndarray:
    """MTTKRP through tensorly (the reference implementation)."""
    from tensorly.tenalg import unfolding_dot_khatri_rao

    return unfolding_dot_khatri_rao(M, (None, list(factors)), p)


def parafac_fit(
    M: np.ndarray, rank: int, U0, max_iter: int, tol: float, linesearch: bool
):
    """Run tensorly's ``parafac`` from ``U0``.

    Returns ``(weights, factors, n_iter, converged, errors)``, converged by
    tensorly's rule (the last decrease below ``tol``).
    """
    import tensorly as tl
    from tensorly.decomposition import parafac

    with tl.backend_context("numpy"), warnings.catch_warnings():
        # tensorly advises against normalizing a given start; ours is the
        # normalization of its own iterates, which it does regardless
        warnings.filterwarnings(
            "ignore", "It is not recommended to initialize", UserWarning
        )
        cp, errors = parafac(
            M,
            rank,
            n_iter_max=max_iter,
            init=tl.cp_tensor.CPTensor((np.ones(rank), U0)),
            tol=tol,
            linesearch=linesearch,
            # unnormalized factors make the r x r solves depend on the column
            # scales, which drift apart on degenerate fits (see .als); tensorly
            # 0.10 fails on a matrix with it (a singular solve), so not for m = 2
            normalize_factors=M.ndim > 2,
            return_errors=True,
        )
    errors = [float(e) for e in errors]
    n_iter = len(errors)
    converged = bool(tol and n_iter >= 2 and abs(errors[-2] - errors[-1]) < tol)
    return cp.weights, list(cp.factors), n_iter, converged, errors

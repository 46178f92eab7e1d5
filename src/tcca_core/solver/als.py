"""Rank-r CP decomposition by alternating least squares, tensor-free.

The loop is tensorly's ``parafac`` (tensorly 0.10, ``normalize_factors=False``):
all r components are updated together (the paper is explicit that ALS, not
deflation, is used: section 5.1.1, observation 5), and the solver never touches the
tensor. It sees only

* ``mttkrp(factors, p)``: the matricized tensor times Khatri-Rao product,
  T_(p) (U_m kr ... kr U_1, p skipped), of shape (d_p, r);
* ``norm_sq``: ||T||_F^2.

The reconstruction error comes from the last MTTKRP, as in tensorly's
``error_calc``, so a dense and an implicit tensor give the same iterates up to
rounding. Two things differ from plain ALS, both measured in BENCHMARKS.md
("Solver quality"):

* **Extrapolation** (``linesearch=True``): after each sweep the factors are pushed
  further along the sweep's step, F + s (F - F_prev) with s = k^(1/q) at sweep k
  (Bro 1998; Acar, Dunlavy & Kolda 2011; tensorly's ``linesearch``), and the jump
  is kept only when it lowers the error. It costs one MTTKRP per sweep and cuts
  the sweeps of slowly converging fits by half or more.
* **Updates that column scaling cannot spoil.** ALS's factors are not normalized
  (the line search extrapolates them as they are), so a degenerate fit can push
  one mode's column norms to 1e-20 and another's to 1e15 while the CP tensor stays
  tame. The r x r normal equations of an update are then solved after scaling to
  unit diagonal (:func:`_solve_normal`), and the column norms are balanced across
  modes after each sweep (:func:`_balance`): both leave exact ALS, the line search
  included, unchanged, and keep the computed updates exact (without them, Ads with
  the raw views rose from sweep 5 and overflowed at sweep 134).
* **A stopping rule that a stall cannot fool.** The usual rule (stop when the
  error changes by less than tol between two sweeps) stops in swamps: on Ads at
  r = 50 the error falls by 6e-10 per sweep for 200 sweeps, at a steady then
  growing pace, and then by 1 %. Here ALS stops when the decrease still to come,
  extrapolated from the rate at which the mean decrease per window of sweeps
  shrinks, is below ``tol`` times the error; a decrease that does not shrink (a
  swamp, a degenerate fit) counts as what a million more sweeps at its pace would
  gain, so a swamp is not convergence and a creep too slow to ever matter is. The
  estimate must hold for two windows, or for one that moved too little to ever
  matter (a stationary point: :func:`_flat`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np
from scipy.linalg.lapack import dgesv as _gesv
from scipy.linalg.lapack import dposv as _posv

from .linalg import column_signs, fix_signs, numerical_rank, svd

__all__ = [
    "CPResult",
    "broke_down",
    "cp_als",
    "cp_error",
    "init_factors",
    "normalize_cp",
]

Mttkrp = Callable[[Sequence[np.ndarray], int], np.ndarray]

#: Power iterations of the randomized ("svd") start; see :func:`init_factors`.
POWER_ITER = 2
#: Extra columns of the randomized start's test matrices.
OVERSAMPLE = 10


@dataclass
class CPResult:
    """Outcome of :func:`cp_als`: sum_k weights[k] * factors[0][:, k] o ... ."""

    weights: np.ndarray
    factors: list[np.ndarray]
    n_iter: int
    converged: bool
    errors: list[float]
    #: sweeps whose extrapolated factors were kept
    n_jumps: int = 0
    #: the acceleration's and the stopping rule's state, to resume the run
    state: dict = field(default_factory=dict)
    #: a degenerate fit: a sweep overflowed, or its components grew so far beyond
    #: the tensor that the error is unresolved (:data:`DEGENERATE`); the factors
    #: are the best (lowest-error) iterate, and resuming cannot help
    diverged: bool = False
    #: (sweep, factors) of the lowest error so far, to resume the run
    best: tuple = ()

    def kept(self) -> tuple[list[np.ndarray], int, list[float], tuple | None]:
        """Return the iterate a fit keeps: the one of lowest error.

        Returns ``(factors, n_iter, errors, rise)``: the factors, the sweeps and the
        error trace up to that iterate, and, where the run ended above it,
        ``rise = (sweep, lowest error, last sweep, last error)`` (else None).
        Exact ALS never rises, so a rise means the computed updates were wrong;
        the fit is never worse than its best iterate whatever went wrong.
        """
        errors = list(self.errors)
        best_n, best_factors = self.best or (self.n_iter, self.factors)
        if self._rose(best_n):
            rise = (best_n, errors[best_n - 1], len(errors), errors[-1])
            return list(best_factors), best_n, errors[:best_n], rise
        return list(self.factors), self.n_iter, errors, None

    def kept_error(self) -> float:
        """Return the error of the iterate :meth:`kept` returns (inf if none)."""
        if not self.errors:
            return np.inf
        best_n = self.best[0] if self.best else self.n_iter
        return self.errors[best_n - 1] if self._rose(best_n) else self.errors[-1]

    def _rose(self, best_n: int) -> bool:
        # a plateau wobbles at rounding level: its last iterate is as good
        e = self.errors
        return 0 < best_n < len(e) and e[-1] > e[best_n - 1] * (1 + ROUNDING)


def hosvd_bases(grams: Sequence[np.ndarray]) -> list[np.ndarray]:
    """Per mode, the eigenvectors of ``T_(p) T_(p)^T`` above its rounding noise.

    In decreasing order of eigenvalue; the exact HOSVD start of any rank is their
    leading columns (:func:`init_factors`).
    """
    bases = []
    for A in grams:
        w, V = np.linalg.eigh(A)
        w, V = w[::-1], V[:, ::-1]
        # eigh of M M^T resolves eigenvalues only to ~ d eps max(w): keep those 100
        # times above that noise
        bases.append(V[:, : numerical_rank(w, scale=max(w[0], 0.0), factor=100.0)])
    return bases


def init_factors(
    mttkrp: Mttkrp,
    dims: Sequence[int],
    rank: int,
    init,
    rng: np.random.Generator,
    *,
    hosvd: Callable[[], list[np.ndarray]] | None = None,
    power_iter: int | None = None,
) -> list[np.ndarray]:
    """Make initial factors: ``"random"``, ``"svd"``, ``"hosvd"`` or a list of arrays.

    ``"svd"`` is a randomized HOSVD that never unfolds the tensor: the leading left
    singular vectors of T_(p) are estimated from T_(p) Omega, where the Gaussian
    test matrix Omega = Omega_m kr ... kr Omega_1 (``rank + OVERSAMPLE`` columns)
    has Khatri-Rao structure, so that the sketch is itself an MTTKRP. Each of the
    ``power_iter`` (default ``POWER_ITER``) power iterations then replaces Omega_p
    by the basis just found for mode p, mode after mode (a subspace iteration in
    the manner of HOOI), which sharpens the bases where the spectrum is flat;
    none by default where the sketch is as wide as every mode (``rank +
    OVERSAMPLE >= max(dims)``: it spans each T_(p) whole already). Cost:
    (1 + power_iter) m MTTKRPs with ``rank + OVERSAMPLE`` columns, whatever
    engine holds the tensor.

    ``"hosvd"`` is the exact HOSVD (tensorly's ``init="svd"``): the leading
    eigenvectors of T_(p) T_(p)^T, which ``hosvd()`` returns for every mode
    (:func:`hosvd_bases` of the mode Gram matrices, which the implicit engine
    computes without unfolding T; they do not depend on ``rank``, so a rank path
    computes them once).

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
                "init must be 'auto', 'svd', 'hosvd', 'random' or a list of "
                f"{m} arrays, got {init!r}"
            )
        if init == "hosvd":
            if hosvd is None:
                raise ValueError("init='hosvd' needs the tensor's HOSVD bases")
            bases = hosvd()
        else:
            s = rank + OVERSAMPLE
            omega = [rng.standard_normal((d, s)) for d in dims]
            svs = [np.zeros(0)] * m
            if power_iter is not None:
                n_power = int(power_iter)
            else:
                # power iterations sharpen a sketch narrower than its mode; one at
                # least as wide as every mode spans each T_(p) whole already, and
                # iterating would only cost a small problem's race its starts
                n_power = POWER_ITER if s < max(dims) else 0
            for _ in range(1 + max(n_power, 0)):
                for p in range(m):
                    Q, sv, _ = svd(mttkrp(omega, p))
                    svs[p] = sv
                    # the next modes are sketched with this basis (padded with
                    # fresh columns where the mode has fewer than s directions)
                    if Q.shape[1] < s:
                        pad = rng.standard_normal((dims[p], s - Q.shape[1]))
                        Q = np.hstack([Q, pad])
                    omega[p] = Q
            bases = [
                omega[p][:, : min(numerical_rank(svs[p]), dims[p])] for p in range(m)
            ]
        factors = []
        for d, Q in zip(dims, bases, strict=True):
            k = min(rank, Q.shape[1])
            U = Q[:, :k]
            if k < rank:
                U = np.hstack([U, rng.standard_normal((d, rank - k)) / np.sqrt(d)])
            factors.append(fix_signs(U))
        return factors
    try:
        factors = [np.array(U, dtype=np.float64) for U in init]
    except (TypeError, ValueError) as exc:
        raise ValueError(
            f"init must be 'auto', 'svd', 'hosvd', 'random' or a list of arrays: {exc}"
        ) from exc
    expected = [(d, rank) for d in dims]
    got = [U.shape for U in factors]
    if got != expected:
        raise ValueError(f"init factors must have shapes {expected}, got {got}")
    if not all(np.all(np.isfinite(U)) for U in factors):
        raise ValueError("init factors contain NaN or infinity")
    return factors


#: Residual functions: ||T - [[U_1, ..., U_m]]||^2 computed without cancellation,
#: or None where the engine cannot afford it.
Residual = Callable[[Sequence[np.ndarray]], "float | None"]

#: The Gram formula of the error loses about log10(scale / err^2) digits of the
#: squared error (measured on Ads' near-exact fits: 2e-10 to 8e-10 of it at 1e6 to
#: 1.4e6, against the direct sum). Past CANCELLATION it is replaced by the engine's
#: direct sum (a well-conditioned fit stays below 2e3: Ads, raw views, cases of
#: BENCHMARKS.md), unless the fit is degenerate (:data:`DEGENERATE`). ALS itself
#: may go up to 100 times further where its stopping rule needs fewer digits
#: (:func:`cancellation_limit`).
CANCELLATION = 1e6
#: Gram terms this far above ||T||^2 are components far larger than the tensor that
#: cancel each other: a degenerate fit (a swamp whose components grow sweep after
#: sweep). Where such terms also cancel past :data:`CANCELLATION`, the error is
#: unresolved (see :func:`_error`): the fit stops at its best resolved iterate. A
#: near-exact fit, whose error is small but whose terms are of the order of ||T||^2,
#: is summed directly instead.
DEGENERATE = 1e3


def cancellation_limit(tol: float) -> float:
    """Return how far ALS's error may cancel (Gram terms over the squared error).

    The stopping rule compares decreases of the error with ``tol`` times the error;
    the Gram formula, rounding to about 1e-15 times the cancellation (relative),
    then only has to resolve a hundredth of ``tol``: 1e8 at the default tol = 1e-5
    (about eight digits, 300 times finer than the rule needs), never beyond 100
    times :data:`CANCELLATION` and never below it. Near-exact fits of Ads (ranks
    260-300, relative error 0.02-0.03) cancel to 1e6-1e7; summed directly, 30 s
    a sum against 0.1 s a sweep, they took 300-3,300 s a rank (BENCHMARKS.md).
    """
    return float(np.clip(1e13 * tol, CANCELLATION, 100 * CANCELLATION))


def cp_error(
    mttkrp: Mttkrp,
    norm_sq: float,
    factors: Sequence[np.ndarray],
    residual_sq: Residual | None = None,
    limit: float = CANCELLATION,
) -> float:
    """||T - [[U_1, ..., U_m]]|| / ||T|| of any factors, from one MTTKRP.

    Where the Gram formula cancels past ``limit`` the error is ``residual_sq``'s
    direct sum, or inf where the fit is degenerate (:data:`DEGENERATE`) or no
    direct sum exists.
    """
    B = mttkrp(factors, len(factors) - 1)
    grams = [U.T @ U for U in factors]
    return _error(norm_sq, B, list(factors), grams, residual_sq, limit)


def _error(
    norm_sq: float, B, factors, grams, residual_sq=None, limit=CANCELLATION
) -> float:
    # ||T - T_hat||^2 = ||T||^2 + ||T_hat||^2 - 2 <T, T_hat>, with <T, T_hat>
    # read off the last mode's MTTKRP B. The terms can be far larger than their
    # sum (components that nearly cancel: weights of 1e4 and 9e9 gave 0.45 for a
    # true 1.78 on Ads), so the cancellation is measured.
    if norm_sq <= 0:
        return 0.0
    # array methods, not numpy's functions: on small problems the wrappers cost
    # more than the sums (the same sums, bit for bit)
    terms = B * factors[-1]
    iprod = float(terms.sum())
    hadamard = grams[0] * grams[1]
    for G in grams[2:]:
        hadamard *= G
    rec_sq = float(hadamard.sum())
    err_sq = norm_sq + rec_sq - 2 * iprod
    scale = norm_sq + float(np.abs(hadamard).sum()) + 2 * float(np.abs(terms).sum())
    if scale > limit * max(err_sq, 0.0):
        if scale > DEGENERATE * norm_sq:
            # a degenerate fit: its components grow while the error creeps (Ads,
            # r = 300: Gram terms 6,000 times ||T||^2 by sweep 275), and the
            # direct sum would cost more than the sweep (30 s against 0.1 s; a
            # whole job's time for the rest of the sweeps). Past this the Gram
            # formula's rounding approaches the error itself (KTCCA, six views of
            # 500 samples: 0.60 reported for a true error above 0.94), and a wrong
            # low error would be kept as the best iterate. No number is better
            # than a wrong one: cp_als stops at the best resolved iterate.
            return float("inf")
        direct = residual_sq(factors) if residual_sq is not None else None
        if direct is not None:
            err_sq = direct
    return float(np.sqrt(abs(err_sq) / norm_sq))


#: Column scales of an update's normal equations (square roots of their diagonal)
#: closer than this factor are solved without scaling (:func:`_solve_normal`).
EQUILIBRATED = 10.0


def _solve_normal(V: np.ndarray, B: np.ndarray) -> np.ndarray:
    """B V^-1 for the r x r Hadamard product of Gram matrices V of an ALS update.

    V and B carry the column scales of the factors (V_ij scales as s_i s_j, B's
    column j as s_j); solved as they are, a V whose diagonal spans 1e31 to 1e36
    (condition 1e48, but 271 at unit diagonal) gives a tiny residual and an update
    81 % off. Scaling V to unit diagonal first makes the computed update
    independent of the scales. A singular V (a zero or repeated column) falls back
    to the least-squares solution. LAPACK is called directly: on small problems
    numpy's wrapper costs more than the solve.
    """
    d = np.sqrt(V.diagonal())
    lo, hi = d.min(), d.max()
    if lo > 0 and hi < EQUILIBRATED * lo:
        # scales within a factor EQUILIBRATED: unscaled, the condition number is
        # at most EQUILIBRATED^2 times the scaled one (a loss of two digits at
        # worst), and the scaling costs a small problem (r of a few) more than the
        # solve
        X = _solve_spd(V, B.T)
        if X is not None:
            return X.T
    if not (lo > 0 and hi < np.inf):
        d = np.where((d > 0) & np.isfinite(d), d, 1.0)
    inv = 1.0 / d
    # V symmetric: solve Vs X^T = (B diag(inv))^T, then undo the scaling (in place,
    # on fresh arrays: the per-call overhead is most of a small problem's solve)
    Vs = V * inv[:, None]
    Vs *= inv
    X = _solve_spd(Vs, (B * inv).T)
    if X is None:
        Vs = V * inv[:, None] * inv
        X = np.linalg.lstsq(Vs, (B * inv).T, rcond=None)[0]
    X = X.T
    X *= inv
    return X


def _solve_spd(V: np.ndarray, Bt: np.ndarray):
    """V^-1 Bt for the symmetric V of an update, or None where it is singular.

    V, a Hadamard product of Gram matrices, is positive definite unless a factor
    has dependent columns: Cholesky (half LU's flops, no pivoting) solves it, LU
    takes what Cholesky refuses (an indefinite V from rounding), and None leaves
    a singular V to the least-squares fallback.
    """
    _, X, info = _posv(V, Bt, lower=True)
    if info == 0:
        return X
    _, _, X, info = _gesv(V, Bt)
    return X if info == 0 else None


def _column_norms(U: np.ndarray) -> np.ndarray:
    """Column 2-norms that neither over- nor underflow (entries up to 1e308)."""
    peak = np.max(np.abs(U), axis=0) if U.shape[0] else np.zeros(U.shape[1])
    safe = np.where((peak > 0) & np.isfinite(peak), peak, 1.0)
    return np.where(peak > 0, safe * np.linalg.norm(U / safe, axis=0), 0.0)


#: Column norms further apart than this across modes are balanced (:func:`_balance`).
SPREAD = 1e40


def _balance(factors: list[np.ndarray], grams: list[np.ndarray] | None):
    """Give column k the same norm in every mode where the norms drift far apart.

    Rescaling column k of every mode to the geometric mean of its norms leaves the
    CP tensor unchanged, and so exact ALS and its extrapolation (an update of mode
    p scales inversely with the other modes' columns, so a rescaled start rescales
    every later iterate alike). Left alone, the norms of a degenerate fit drift
    apart (1e-20 and 5e15 on Ads) until their Gram matrices under- or overflow.
    Done only past ``SPREAD`` (read off the Gram matrices' diagonals, which ALS
    has anyway): a rescaled factor is a new array, which costs the engines their
    cached projections. Returns ``(factors, grams)``, the same objects when
    nothing was rescaled (``grams`` None: not known yet, e.g. of a start whose
    Gram matrices would overflow). Columns that are zero or non-finite in some mode are
    left as they are.
    """
    if grams is not None:
        sq = np.concatenate([G.diagonal() for G in grams])
        lo, hi = sq.min(), sq.max()
        if lo > 0 and hi < np.inf and hi <= SPREAD**2 * lo:
            return factors, grams  # no column spreads past SPREAD: the usual case
    norms = np.array([_column_norms(U) for U in factors])
    ok = np.all((norms > 0) & np.isfinite(norms), axis=0)
    logs = np.log(np.where(ok, norms, 1.0))  # ratios of such norms can overflow
    if not np.any(logs.max(axis=0) - logs.min(axis=0) > np.log(SPREAD)):
        return factors, grams
    scales = np.exp(logs.mean(axis=0) - logs)
    factors = [U * c for U, c in zip(factors, scales, strict=True)]
    return factors, [U.T @ U for U in factors]


#: Sweeps per window of the stopping rule (:func:`_remaining`).
WINDOW = 5
#: The most sweeps the stopping rule looks ahead: a decrease that would take more
#: than this many sweeps at the current pace to add up to tol is not worth them.
HORIZON = 1_000_000


def _remaining(
    errors: Sequence[float], window: int = WINDOW, eps: float | None = None
) -> float:
    """Estimated decrease of the error still to come (inf when unknown).

    ALS converges linearly, and with extrapolation unevenly, so the rule looks at
    windows: D_k = (e_(k-W) - e_k) / W, the mean decrease per sweep over the last
    W sweeps, and D_(k-W) over the W before. Linear convergence shrinks D by
    rho = D_k / D_(k-W) per window, which leaves W D_k rho / (1 - rho). A rate of
    1 or more (a swamp: the error creeps at a steady or growing pace before it
    drops) counts as the decrease of :data:`HORIZON` sweeps at the larger pace of
    the two windows: a swamp that falls by 1e-10 per sweep is not convergence at
    tol = 1e-5, a creep of 1e-12 of the error per sweep is (a million more sweeps
    would not gain tol). A decrease at the level of rounding is convergence:
    ``eps`` is the unit roundoff of the MTTKRPs behind the errors (default
    float64's; float32 on a device, :mod:`.xp`).
    """
    k = len(errors) - 1
    if k < window:
        return np.inf
    eps = np.finfo(float).eps if eps is None else eps
    floor = 64 * eps * max(abs(errors[-1]), 1e-300)
    recent = (errors[-1 - window] - errors[-1]) / window
    if recent <= floor:
        return 0.0
    if k < 2 * window:
        return np.inf
    before = (errors[-1 - 2 * window] - errors[-1 - window]) / window
    horizon = HORIZON * max(recent, before)
    if before <= floor:
        return horizon
    rho = recent / before
    if rho >= 1.0:
        return horizon
    return min(window * recent * max(rho / (1.0 - rho), 1.0), horizon)


def _flat(errors: Sequence[float], tol: float, window: int = WINDOW) -> bool:
    """Whether the last ``window`` sweeps moved too little to ever matter.

    True when :data:`HORIZON` sweeps at the window's mean pace would lower the
    error by less than ``tol`` times itself: :func:`_remaining`'s measure of a
    creep not worth sweeping on, read off one window instead of two. A swamp
    creeps faster than that, and rounding (a stationary point) far slower, so
    engines that differ by rounding agree on it.
    """
    if len(errors) <= window:
        return False
    recent = (errors[-1 - window] - errors[-1]) / window
    return HORIZON * recent < tol * errors[-1]


#: Adaptive momentum (:func:`cp_als`, ``acceleration="momentum"``): the first
#: weight, its growth after an accepted step, the growth of its cap, and its
#: shrinkage after a rejected one (Ang & Gillis 2019's values, which Mitchell,
#: Ye & De Sterck 2020 found effective for CP-ALS with function restart).
MOMENTUM_START = 0.5
MOMENTUM_GROW = 1.05
MOMENTUM_CAP_GROW = 1.01
MOMENTUM_SHRINK = 1.5

ACCELERATIONS = ("momentum", "linesearch", None)


def cp_als(
    mttkrp: Mttkrp,
    norm_sq: float,
    init: list[np.ndarray] | None = None,
    *,
    max_iter: int,
    tol: float,
    acceleration: str | None = "momentum",
    linesearch: bool | None = None,
    callback: Callable[[int, float], None] | None = None,
    resume: CPResult | None = None,
    residual_sq: Residual | None = None,
    combine: bool = True,
    eps: float | None = None,
    gram_offsets: Sequence[np.ndarray] | None = None,
) -> CPResult:
    """Run ALS from ``init``; see the module docstring for the contract.

    Stops when the estimated decrease of the error still to come is below
    ``tol`` times the error (``converged=True``; see :func:`_remaining`) or after
    ``max_iter`` sweeps (``converged=False``); ``tol=0`` runs all sweeps.

    ``acceleration``: ``"momentum"`` (the default) sweeps from the extrapolated
    point X_k + beta (X_k - X_(k-1)) instead of X_k, with an adaptive weight
    beta and a function restart: a sweep whose error is above the last one's is
    discarded and redone from X_k, and beta shrinks (Nesterov-type momentum for
    ALS, Mitchell, Ye & De Sterck 2020; the weight rule of Ang & Gillis 2019).
    It costs nothing on an accepted sweep and a second sweep on a rejected one,
    and never raises the error. ``"linesearch"`` is Bro's extrapolation after
    each sweep (one more MTTKRP a sweep, the jump kept when it lowers the
    error); None is plain ALS. ``linesearch`` (bool) is the older spelling:
    True means ``"linesearch"``, False None.

    ``resume`` continues an earlier run (its factors, errors and the
    acceleration's state; ``max_iter`` then counts its sweeps too), so a run cut
    into bursts gives the same iterates as one run. ``residual_sq`` is the
    engine's direct ||T - T_hat||^2, used where the Gram formula of the error
    would cancel (:func:`cancellation_limit`). The result's
    :attr:`CPResult.kept` is the iterate of lowest error. ``combine=False``
    skips recording extrapolated factors as combinations of the iterates
    (:func:`.implicit.record_combination`), for an engine that cannot use them
    (a dense tensor). ``eps``: the unit roundoff of ``mttkrp`` where it is
    coarser than float64's (see :func:`_remaining`). ``gram_offsets``: per
    mode, a term added to the start's Gram matrix until that mode is first
    updated: the Gram matrix of the part of a start that a compressed tensor
    cannot see (:meth:`.engine.MomentEngine.decompose`), so that a compressed
    run makes the uncompressed run's iterates.
    """
    from .implicit import record_combination

    if linesearch is not None:
        acceleration = "linesearch" if linesearch else None
    if acceleration not in ACCELERATIONS:
        raise ValueError(
            "acceleration must be 'momentum', 'linesearch' or None, "
            f"got {acceleration!r}"
        )
    if resume is not None:
        factors = list(resume.factors)
        errors = list(resume.errors)
        n_iter, n_jumps = resume.n_iter, resume.n_jumps
        state = dict(resume.state)
        best_n, best_factors = resume.best or (resume.n_iter, resume.factors)
        grams = [U.T @ U for U in factors]
    else:
        assert init is not None, "cp_als needs init or resume"
        factors = [U.copy() for U in init]
        if gram_offsets is None:
            factors, _ = _balance(factors, None)
        errors = []
        n_iter = n_jumps = 0
        # tensorly's defaults for the line search's step; the momentum's weight
        state = {
            "acc_pow": 2.0,
            "acc_fail": 0,
            "streak": 0,
            "beta": MOMENTUM_START,
            "beta_cap": 1.0,
            "previous": None,
        }
        best_n, best_factors = 0, factors
        grams = [U.T @ U for U in factors]
        if gram_offsets is not None:
            grams = [G + C for G, C in zip(grams, gram_offsets, strict=True)]
    m = len(factors)
    r = factors[0].shape[1]
    limit = cancellation_limit(tol)
    others = [[q for q in range(m) if q != p] for p in range(m)]

    def sweep(new, new_grams):
        # one ALS sweep, in place on the lists it is given (a start's factor goes
        # as soon as it is replaced, and with it the engine's product with it);
        # mode 0's factor of the start is never read
        for p in range(m):
            first, *rest = others[p]
            V = (
                new_grams[first] * new_grams[rest[0]]
                if rest
                else new_grams[first].copy()
            )
            for q in rest[1:]:
                V *= new_grams[q]
            B = mttkrp(new, p)
            new[p] = _solve_normal(V, B)
            new_grams[p] = new[p].T @ new[p]
        err = _error(norm_sq, B, new, new_grams, residual_sq, limit)
        return new, new_grams, err

    converged = diverged = False
    for iteration in range(n_iter, max_iter):
        n_iter = iteration + 1
        before, previous = factors, state["previous"]
        new: list[np.ndarray] | None = None
        if acceleration == "momentum" and previous is not None:
            beta = state["beta"]
            Y = [factors[0]]
            for U, U0 in zip(factors[1:], previous[1:], strict=True):
                J = U + beta * (U - U0)
                if combine:
                    # an engine holding Y U and Y U0 combines them, no product
                    record_combination(J, ((1.0 + beta, U), (-beta, U0)))
                Y.append(J)
            del J  # the extrapolated factors (and the engine's products) go after
            new, new_grams, err = sweep(Y, [grams[0]] + [V.T @ V for V in Y[1:]])
            if err <= errors[-1]:
                state["beta"] = min(state["beta_cap"], MOMENTUM_GROW * beta)
                state["beta_cap"] = min(1.0, MOMENTUM_CAP_GROW * state["beta_cap"])
                n_jumps += 1
            else:
                # function restart: the step raised the error (or overflowed)
                state["beta_cap"] = beta
                state["beta"] = beta / MOMENTUM_SHRINK
                del Y  # the rejected sweep's factors go now
                new = None
        if new is None:
            new, new_grams, err = sweep(list(factors), list(grams))
        factors, grams = new, new_grams
        if not np.isfinite(err):
            # a degenerate fit: its error is unresolved (_error) or the factors
            # overflowed, and the error, built from every Gram matrix, is then inf
            # or NaN; a NaN iterate would reach the projections unnoticed. Before
            # overflowing, the ill-conditioned normal equations already raise the
            # error (see broke_down; Ads, raw views, eps = 1e-3, r = 95: 0.446 at
            # sweep 13, 0.99 at sweep 133), so the best iterate is kept, not the
            # last finite one
            factors, n_iter, diverged = best_factors, best_n, True
            del errors[best_n:]
            break
        if acceleration == "linesearch" and iteration >= 1 and err > 0:
            step = n_iter ** (1.0 / state["acc_pow"])
            jump = [U + step * (U - U0) for U, U0 in zip(factors, before, strict=True)]
            for J, U, U0 in zip(jump, factors, before, strict=True) if combine else ():
                # an engine holding Y U and Y U0 combines them instead of a product
                record_combination(J, ((1.0 + step, U), (-step, U0)))
            jump_err = cp_error(mttkrp, norm_sq, jump, residual_sq, limit)
            if jump_err < err:
                factors, err, state["acc_fail"] = jump, jump_err, 0
                grams = [U.T @ U for U in factors]
                n_jumps += 1
            else:
                state["acc_fail"] += 1
                if state["acc_fail"] == 4:
                    state["acc_pow"], state["acc_fail"] = state["acc_pow"] + 1.0, 0
            del jump  # a rejected jump's arrays (and the engine's products) go now
        balanced, grams = _balance(factors, grams)
        # the momentum extrapolates from the last two iterates, which must be on
        # the same column scales; the start is no sweep's outcome
        keep = acceleration == "momentum" and iteration >= 1 and balanced is factors
        state["previous"] = before if keep else None
        factors = balanced
        errors.append(err)
        if best_n == 0 or err < errors[best_n - 1]:
            best_n, best_factors = n_iter, factors  # never modified in place
        if callback is not None:
            callback(n_iter, err)
        # the estimate must hold for two whole windows: right after the fast
        # phase the window before still holds its large decreases, and a swamp
        # shows only once both windows are in it. A window that moved too little
        # to ever matter needs no second one: that is a stationary point, and
        # more sweeps would only repeat it (KTCCA's nearly orthogonal whitened
        # kernels: every rank's error flat from its first sweeps, ten more sweeps
        # a rank for nothing)
        state["streak"] = (
            state["streak"] + 1
            if tol and _remaining(errors, eps=eps) < tol * err
            else 0
        )
        if state["streak"] >= 2 * WINDOW or (state["streak"] and _flat(errors, tol)):
            converged = True
            break
    return CPResult(
        np.ones(r),
        factors,
        n_iter,
        converged,
        errors,
        n_jumps,
        state,
        diverged,
        (best_n, best_factors),
    )


#: a final error this far (relative) above the run's lowest is no rounding: a breakdown
BREAKDOWN = 1e-3
#: a rise of the error above its lowest by less than this (relative) is rounding
ROUNDING = 1e-10


def broke_down(errors: Sequence[float]) -> bool:
    """Whether a run ended with its error clearly above the lowest it reached.

    Exact ALS never raises the error (each update is a least-squares minimum and a
    jump is kept only if it lowers it); a rise of more than ``BREAKDOWN`` of itself
    means the updates were computed wrongly. Before the solves were made
    scale-invariant (:func:`_solve_normal`) this happened on degenerate CP fits
    (Ads, raw views, eps = 10, r = 150: 0.055 at sweep 47, 0.187 at sweep 57,
    where the stopping rule fired on the plateau after the rise).
    """
    return len(errors) > 1 and errors[-1] > min(errors) * (1 + BREAKDOWN)


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
        signs = column_signs(factors[p])
        factors[p] *= signs
        factors[-1] *= signs
    order = np.argsort(-weights, kind="stable")
    return weights[order], [U[:, order] for U in factors]

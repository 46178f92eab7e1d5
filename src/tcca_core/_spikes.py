"""Whether KTCCA's components are spikes on single training samples, and why.

A kernel too narrow for the scale of its features (the RBF kernel's default
gamma = 1 / n_features on raw pixels at 0-16) makes every training sample far from
every other: the kernel matrix is nearly diagonal, the whitened samples are
about the unit vectors, and the best rank-1 terms of the moment tensor are single
samples. The fit then looks fine (its training score is at its largest possible
value) while new samples, far from every training sample too, project to about 0.
This module measures both halves, after the fit, so that the estimator can say so.
"""

from __future__ import annotations

import numpy as np

from ._multiview import high_order_correlations

__all__ = ["kernel_neighbours", "one_sample_limit", "spike_message"]

#: a component is a spike when one sample holds more than this share of its
#: (centered) sum of squares ...
SPIKE_SHARE = 0.5
#: ... and a kernel is nearly diagonal when, for the median sample, all other
#: samples together weigh less than this (relative to the sample itself)
NEIGHBOURS = 1.0
#: below this many samples, one sample holds a large share of any variate (half
#: of it, at least, for N = 3): the diagnosis needs more
MIN_SAMPLES = 20
_BLOCK = 1024


def kernel_neighbours(K: np.ndarray) -> float:
    """Median over samples of sum_{j != i} |K_ij| / sqrt(K_ii K_jj).

    How many samples' worth of similarity each sample has besides itself: about
    N - 1 for a wide kernel, below 1 for a kernel that is nearly diagonal. Samples
    with a zero diagonal are left out (inf when all are). Computed in row blocks,
    so it needs no second N x N array.
    """
    d = np.sqrt(np.abs(np.diag(K)))
    ok = d > 0
    if not ok.any():
        return float("inf")
    inv = np.divide(1.0, d, out=np.zeros_like(d), where=ok)
    sums = np.empty(K.shape[0])
    for start in range(0, K.shape[0], _BLOCK):
        rows = slice(start, start + _BLOCK)
        sums[rows] = (np.abs(K[rows]) @ inv) * inv[rows]
    return float(np.median(sums[ok] - 1.0))


def one_sample_limit(N: int, m: int) -> float:
    """Return the largest high-order correlation of m standardized variates.

    Over N samples it is reached when every variate is the same single sample,
    centered and scaled: z = sqrt(N - 1) there and -1 / sqrt(N - 1) elsewhere, so
    (1/N) sum_n z_n^m = ((N - 1)^(m/2) + (-1)^m (N - 1)^(1 - m/2)) / N
    ((N - 2) / sqrt(N - 1) for m = 3).
    """
    return ((N - 1) ** (m / 2) + (-1) ** m * (N - 1) ** (1 - m / 2)) / N


def spike_message(
    Zs: list[np.ndarray],
    neighbours: list[float],
    correlations: np.ndarray,
    kernels: list,
) -> str | None:
    """Say that the components are single-sample spikes and why, or None.

    ``Zs`` are the training variates of every view (N x r), ``neighbours`` every
    view's :func:`kernel_neighbours` and ``kernels`` their
    :class:`~tcca_core.kernels.ViewKernel`. Both halves must hold: a component
    concentrated on one sample with kernels that relate samples (the paper's
    ``"l2"`` kernel at a small eps) is a heavy-tailed direction that new samples
    can still follow, and a nearly diagonal kernel whose components are spread
    does no harm to see.
    """
    N, r = Zs[0].shape
    for p, (Z, nb) in enumerate(zip(Zs, neighbours, strict=True)):
        if nb >= NEIGHBOURS or N < MIN_SAMPLES:
            continue
        Zc = Z - Z.mean(axis=0)
        ss = np.maximum(np.sum(Zc**2, axis=0), np.finfo(float).tiny)
        share = np.max(Zc**2, axis=0) / ss
        if np.median(share) <= SPIKE_SHARE:
            continue
        sign = np.where(np.sign(correlations) == 0, 1.0, np.sign(correlations))
        score = float(np.mean(high_order_correlations(Zs) * sign))
        vk = kernels[p]
        kind = vk.kernel if isinstance(vk.kernel, str) else "callable"
        width = f", gamma={vk.gamma!r}" if kind == "rbf" else ""
        return (
            f"the components are spikes on single training samples: one sample "
            f"holds {np.median(share):.1%} of a component's sum of squares (median "
            f"over the {r} components of view {p}), and the training score "
            f"{score:.4g} is at its one-sample limit "
            f"{one_sample_limit(N, len(Zs)):.4g}. The kernel of view {p} "
            f"(kernel={kind!r}{width}) is nearly diagonal: for the median sample "
            f"all {N - 1} others together weigh {nb:.2g} of itself, so every "
            "sample is alone and new samples project to about 0. Scale the "
            "features (e.g. sklearn.preprocessing.StandardScaler) or widen the "
            "kernel (kernel_params={'gamma': 'scale'}, 1 / (n_features * X.var()) "
            "as in scikit-learn's SVC), or use the paper's kernel='l2'"
        )
    return None

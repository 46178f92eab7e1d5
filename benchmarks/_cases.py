"""Benchmark cases: synthetic data with the paper's shapes (Luo et al., TKDE 2015).

Every case is fully determined by its name and a seed, so that each (case, engine,
repeat) can run in a fresh process and regenerate exactly the same data.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Case:
    name: str
    kind: str  # "tcca" or "ktcca"
    N: int
    dims: tuple[int, ...]
    r: int
    data: str  # "onehot", "binary" or "dense"
    sparse_input: bool  # hand our engines a scipy.sparse matrix
    note: str = ""
    tags: tuple[str, ...] = field(default=())


_NUS = (500, 144, 128)

CASES = {
    c.name: c
    for c in [
        # SecStr: 3 views of 5 positions x 21 amino acids, one-hot; N = 84K labelled
        # samples given as a dense array ...
        Case("secstr-r50", "tcca", 84_000, (105, 105, 105), 50, "onehot", False),
        Case("secstr-r300", "tcca", 84_000, (105, 105, 105), 300, "onehot", False),
        # ... the same shape with dense Gaussian views (where building the
        # tensor alone bounds every route) ...
        Case("secstr-dense-r50", "tcca", 84_000, (105, 105, 105), 50, "dense", False),
        # ... and with the extra unlabelled set (1.3M samples), one-hot sparse.
        Case(
            "secstr-extra-r300",
            "tcca",
            1_300_000,
            (105, 105, 105),
            300,
            "onehot",
            True,
        ),
        # Ads: sparse binary features.
        Case("ads", "tcca", 3279, (588, 495, 472), 50, "binary", True),
        # NUS-WIDE shapes (color histogram / correlogram / wavelet), dense.
        Case("nus", "tcca", 5597, _NUS, 50, "dense", False),
        # KTCCA with an RBF kernel on NUS-shaped views; N = 5,597 is the whole
        # NUS-WIDE training set (its dense tensor would have 175e9 entries).
        Case("ktcca-500", "ktcca", 500, _NUS, 50, "dense", False),
        Case("ktcca-2000", "ktcca", 2000, _NUS, 50, "dense", False),
        Case("ktcca-5597", "ktcca", 5597, _NUS, 50, "dense", False),
        # m = 6 views with the mfeat shapes.
        Case("mfeat-m6", "tcca", 2000, (76, 216, 64, 240, 47, 6), 20, "dense", False),
        # Seconds-long smoke tests of the harness (not run by default).
        Case("smoke-tcca", "tcca", 3000, (30, 25, 20), 5, "dense", False),
        Case("smoke-onehot", "tcca", 5000, (42, 42, 42), 5, "onehot", True),
        Case("smoke-ktcca", "ktcca", 200, (30, 25, 20), 5, "dense", False),
    ]
}

#: The cases run by default (the paper's shapes).
DEFAULT = [name for name in CASES if not name.startswith("smoke")]


def make_views(case: Case, seed: int = 0, *, sparse: bool | None = None):
    """The case's views; ``sparse`` overrides ``case.sparse_input``."""
    import numpy as np
    import scipy.sparse as sp

    sparse = case.sparse_input if sparse is None else sparse
    rng = np.random.default_rng(seed)
    N, dims = case.N, case.dims
    if case.data == "onehot":
        # Each view: d // 21 positions, each a symbol in 0..20 that depends on a
        # shared latent symbol z, one-hot encoded.
        views = []
        z = rng.integers(0, 21, size=N)
        for d in dims:
            npos = d // 21
            cats = (z[:, None] + rng.integers(0, 3, size=(N, npos))) % 21
            cols = (np.arange(npos) * 21)[None, :] + cats
            rows = np.repeat(np.arange(N), npos)
            X = sp.csr_matrix((np.ones(N * npos), (rows, cols.ravel())), shape=(N, d))
            views.append(X if sparse else X.toarray())
        return views
    S = rng.exponential(size=(N, 5)) - 1.0  # skewed latent: third moments exist
    views = []
    for d in dims:
        X = S @ rng.standard_normal((5, d)) + rng.standard_normal((N, d))
        if case.data == "binary":
            X = (X > 1.5).astype(float)
            X = sp.csr_matrix(X) if sparse else X
        views.append(X)
    return views


def rbf_gammas(views) -> list[float]:
    """Per-view RBF width 1 / (2 sum_j var(x_j)), i.e. exp(-1) at the mean
    squared distance between two samples; the same for our KTCCA and cca-zoo's."""
    import numpy as np

    return [float(1.0 / (2.0 * np.var(X, axis=0).sum())) for X in views]

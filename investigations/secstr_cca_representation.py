"""SecStr 84K: the representation given to RLS by CCA (BST), CCA (AVG) and CCA-LS.

The protocol concatenates the per-view canonical variates, [Z_1 Z_2] for a pair and
[Z_1 Z_2 Z_3] for CCA-LS, unscaled (baselines.md section 0 [DECISION], section 11
item 1). This script refits nothing differently: the same estimators (eps = 1e-2,
centered, fitted on all 84K rows) and the protocol's learner and selection (100
labeled, RLS gamma = 1e-2, validation 20 %, r chosen on validation), and only changes
what is built from the per-view variates Z_p (first r columns each):

- protocol: [Z_1 ... Z_k] (k r columns);
- averaged: (1/k) sum_p Z_p (r columns);
- first view: Z_1 only, the first view of the pair / of the three (r columns; for
  CCA (AVG) the pair models (1,2), (1,3), (2,3) use views 1, 1, 2);
- corr-scaled: [Z_1 D ... Z_k D], D = diag of the canonical correlations (CCA-LS:
  its beta, the mean pairwise correlation, clipped at 0).

It does so by wrapping tcca_core.protocol.runners._sliced, the one place where the
nested linear runners (CCA (BST), CCA (AVG), CCA-LS) get the per-view variates.
"""

import time

import numpy as np
import pandas as pd
from _common import load, parse_args, write

from tcca_core import protocol
from tcca_core.protocol import runners
from tcca_core.reporting import format_pm

R_GRID = [5, 10, 20, 40]
METHODS = ("cca_bst", "cca_avg", "cca_ls")
PAPER = {"cca_bst": "58.78 ± 2.97", "cca_avg": "60.75 ± 1.92", "cca_ls": "60.23 ± 1.70"}


def _protocol(Zs, est):
    return Zs


def _averaged(Zs, est):
    return [np.mean(Zs, axis=0)]


def _first_view(Zs, est):
    return [Zs[0]]


def _corr_scaled(Zs, est):
    rho = np.clip(np.asarray(est.correlations_, float), 0.0, None)
    return [Z * rho[: Z.shape[1]] for Z in Zs]


VARIANTS = {
    "protocol [Z_1 ... Z_k]": _protocol,
    "averaged mean_p Z_p": _averaged,
    "first view Z_1": _first_view,
    "corr-scaled [Z_p diag(rho)]": _corr_scaled,
}

# Dimension given to RLS (each pair model's, for CCA (AVG)).
DIM = {(False, "cca_bst"): "2r", (False, "cca_avg"): "2r", (False, "cca_ls"): "3r"}
DIM |= {(True, m): "r" for m in METHODS}

_ORIGINAL_SLICED = runners._sliced


def _patched(combine):
    """``runners._sliced`` with ``combine`` applied to the per-view variates."""

    def sliced(rows_of):
        def embed(est):
            Zs = combine(list(est.transform(rows_of(), per_view=True)), est)
            return lambda r: np.hstack([Z[:, :r] for Z in Zs])

        return embed

    return sliced


args = parse_args(__doc__)
views, y = load("secstr", args.data_root)
splits = protocol.make_splits(y, n_labeled=100, n_splits=args.splits, seed=0)
cache: dict = {}  # the fitted estimators, shared by every variant (keys ignore it)
t_start = time.perf_counter()


def report(rows):
    write(
        rows,
        "SecStr 84K: representation of the CCA family",
        f"{args.splits} splits (the pipeline's, seed 0), 100 labeled, RLS gamma = "
        "1e-2, eps = 1e-2, centered views, fit on all 84K rows (no extra rows); (A) "
        "mean +- std over splits of the test accuracy (%) at the validation-selected r "
        "in " + ", ".join(map(str, R_GRID)) + " (and pair, for BST); per-split r: "
        "the selected r; columns r = ...: mean test accuracy (%) at that r. Each "
        "variant changes only what is built from the per-view variates Z_p before "
        "RLS (see the script's docstring); fits are shared. "
        "Command: `python investigations/secstr_cca_representation.py` "
        f"({time.perf_counter() - t_start:.0f} s).",
        args.out,
        "secstr_cca_representation",
    )


rows = []
try:
    for variant, combine in VARIANTS.items():
        runners._sliced = _patched(combine)
        for method in METHODS:
            t0 = time.perf_counter()
            df = pd.concat(
                [
                    protocol.run_method(
                        views, y, s, method, r_grid=R_GRID, learner="rls",
                        params={"eps": 1e-2}, cache=cache,
                    )
                    for s in splits
                ],
                ignore_index=True,
            )  # fmt: skip
            sel = protocol.select(df, by=["method"]).iloc[0]
            rows.append(
                {
                    "variant": variant,
                    "method": protocol.METHODS[method].label,
                    "dim": DIM[(combine in (_averaged, _first_view), method)],
                    "(A)": format_pm(
                        100 * sel["acc_val_mean"], 100 * sel["acc_val_std"]
                    ),
                    "r per split": sel["r_val"],
                    "(B) best r": format_pm(
                        100 * sel["acc_best_r_mean"], 100 * sel["acc_best_r_std"]
                    )
                    + f" (r = {sel['r_best']})",
                    "paper": PAPER[method],
                }
            )
            curve = protocol.accuracy_by_r(df, by=["method"])
            for r, acc in zip(curve["r"], curve["test_acc_mean"], strict=True):
                rows[-1][f"r = {int(r)}"] = f"{100 * acc:.2f}"
            print(f"  {variant} / {method}: {time.perf_counter() - t0:.0f} s")
            report(rows)  # after every cell, so that a long run leaves its rows
finally:
    runners._sliced = _ORIGINAL_SLICED

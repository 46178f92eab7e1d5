"""The protocol's tidy results table: one row per (method, split, r, parameters).

:func:`tcca_core.protocol.run_method` writes it, :mod:`tcca_core.protocol.selection`
and :mod:`tcca_core.reporting` read it.
"""

from __future__ import annotations

__all__ = ["DTYPES", "RESULT_COLUMNS"]

#: Columns of :func:`~tcca_core.protocol.run_method`'s table, in order. ``k`` and
#: ``gamma`` hold the value of the learner's own parameter (kNN's k, RLS's gamma;
#: :data:`tcca_core.registry.LEARNERS`), NA for the other learner.
RESULT_COLUMNS = (
    "method",
    "learner",
    "split",
    "seed",
    "r",
    "r_max",
    "r_capped",
    "dim",
    "view",
    "pair",
    "eps",
    "lambda1",
    "lambda2",
    "k",
    "gamma",
    "params",
    "val_acc",
    "test_acc",
    "n_labeled",
    "n_validation",
    "n_test",
    "n_fit",
    "fit_s",
    "peak_mb",
    "fit_shared",
)
#: Their dtypes (pandas), where not object.
DTYPES = {
    "split": "Int64",
    "seed": "Int64",
    "r": "Int64",
    "r_max": "Int64",
    "r_capped": bool,
    "dim": "Int64",
    "view": "Int64",
    "eps": float,
    "lambda1": float,
    "lambda2": float,
    "k": "Int64",
    "gamma": float,
    "val_acc": float,
    "test_acc": float,
    "n_labeled": "Int64",
    "n_validation": "Int64",
    "n_test": "Int64",
    "n_fit": "Int64",
    "fit_s": float,
    "peak_mb": float,
    "fit_shared": bool,
}

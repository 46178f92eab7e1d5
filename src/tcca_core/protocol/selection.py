"""Selection: the paper's "accuracy at the best dimension" from the tidy results.

:func:`select` reduces :func:`~tcca_core.protocol.run_method` tables to both readings
of baselines.md section 1: (A) validation-selected parameters per split, mean +- std
over splits; (B) per r the validation-selected parameters, mean over splits, then the
best r. :func:`select_per_split` and :func:`accuracy_by_r` are the two halves. Needs
only numpy and pandas (the tables import it directly).
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from ..registry import LEARNERS
from .results import RESULT_COLUMNS

__all__ = ["accuracy_by_r", "select", "select_per_split"]

_KEYS_DEFAULT = ("method", "learner")


def _group_keys(results: pd.DataFrame, by) -> list[str]:
    if by is not None:
        by = [by] if isinstance(by, str) else list(by)
        missing = [c for c in by if c not in results.columns]
        if missing:
            raise ValueError(f"results have no column(s) {missing}")
        return by
    extra = [c for c in results.columns if c not in RESULT_COLUMNS]
    return [c for c in (*extra, *_KEYS_DEFAULT) if c in results.columns]


def _ranked(df: pd.DataFrame) -> pd.DataFrame:
    """Rows ordered best first: validation accuracy, then the documented ties.

    Ties: smaller r, larger eps (more regularized), the learner's preferred value
    (:attr:`~tcca_core.registry.LearnerSpec.prefer`: smaller k, larger gamma), larger
    lambda1, larger lambda2, then the order of the grid (first view/pair).
    """
    learner = {
        spec.param: (1.0 if spec.prefer == "smaller" else -1.0)
        * (
            df[spec.param].astype("Float64").fillna(0).to_numpy(float)
            if spec.param in df.columns  # tables written before RLS had a grid
            else np.zeros(len(df))
        )
        for spec in LEARNERS.values()
    }
    key = pd.DataFrame(
        {
            "acc": -df["val_acc"].to_numpy(float),
            "r": df["r"].astype("Float64").fillna(0).to_numpy(float),
            "eps": -df["eps"].fillna(0).to_numpy(float),
            **learner,
            "l1": -df["lambda1"].fillna(0).to_numpy(float),
            "l2": -df["lambda2"].fillna(0).to_numpy(float),
            "row": np.arange(len(df)),
        }
    )
    order = np.lexsort([key[c].to_numpy() for c in reversed(key.columns)])
    return df.iloc[order]


def _valid(results: pd.DataFrame) -> pd.DataFrame:
    missing = [
        c
        for c in ("split", "val_acc", "test_acc", "r", "eps", "k", "lambda1", "lambda2")
        if c not in results.columns
    ]
    if missing:
        raise ValueError(f"results lack the column(s) {missing}; use run_method output")
    return results[results["val_acc"].notna()].reset_index(drop=True)


def select_per_split(results: pd.DataFrame, by=None) -> pd.DataFrame:
    """Select per split (reading A) the row with the best validation accuracy.

    Groups are ``by`` (default: ``method``, ``learner`` and every column that is
    not one of :data:`RESULT_COLUMNS`, e.g. a ``dataset`` column added by the
    pipeline) and ``split``. Capped rows (NaN accuracy) are ignored.
    """
    keys = _group_keys(results, by)
    ok = _valid(results)
    picked = [
        _ranked(g).index[0]
        for _, g in ok.groupby([*keys, "split"], sort=True, dropna=False)
    ]
    return ok.loc[picked].reset_index(drop=True)


def accuracy_by_r(results: pd.DataFrame, by=None) -> pd.DataFrame:
    """Compute reading (B)'s curve: per r, test accuracy at validated parameters.

    In every (group, split, r) the other parameters (eps, k, view/pair, lambdas) are
    chosen on validation; then mean, std (ddof=1) and count over splits per r.
    Methods without r give one row with r = NA.
    """
    keys = _group_keys(results, by)
    ok = _valid(results)
    best = ok.loc[
        [
            _ranked(g).index[0]
            for _, g in ok.groupby([*keys, "split", "r"], sort=True, dropna=False)
        ]
    ]
    agg = best.groupby([*keys, "r"], sort=True, dropna=False)["test_acc"].agg(
        test_acc_mean="mean",
        test_acc_std=lambda s: s.std(ddof=1),
        n_splits="count",
    )
    return agg.reset_index()


def select(results: pd.DataFrame, by=None) -> pd.DataFrame:
    """Compute the paper's "accuracy at the best dimension", both readings.

    (A) ``acc_val_mean`` +- ``acc_val_std``: per split the test accuracy at the
    validation-selected parameters (r included; ties: smaller r, larger eps, smaller
    k), then mean and std (ddof=1) over splits; ``r_val`` lists the selected r per
    split. This is the primary number.
    (B) ``acc_best_r_mean`` +- ``acc_best_r_std``: per r the validation-selected
    other parameters, mean test accuracy over splits, then the best r (``r_best``,
    ties to the smaller r) among the r values present in every split. Optimistic:
    it is what accuracy-vs-r figures show.

    Parameters
    ----------
    results : DataFrame
        Concatenated :func:`run_method` outputs (any number of methods/splits).
    by : str or list of str, optional
        Grouping columns; default ``method``, ``learner`` and every extra column.

    Returns
    -------
    DataFrame with one row per group.
    """
    keys = _group_keys(results, by)
    per_split = select_per_split(results, by=keys)
    curve = accuracy_by_r(results, by=keys)
    rows = []
    for gkey, g in per_split.groupby(keys, sort=True, dropna=False):
        gkey = gkey if isinstance(gkey, tuple) else (gkey,)
        row = dict(zip(keys, gkey, strict=True))
        n = len(g)
        row["n_splits"] = n
        row["acc_val_mean"] = float(g["test_acc"].mean())
        row["acc_val_std"] = float(g["test_acc"].std(ddof=1)) if n > 1 else math.nan
        row["val_acc_mean"] = float(g["val_acc"].mean())
        row["r_val"] = ",".join("NA" if pd.isna(r) else str(int(r)) for r in g["r"])
        c = curve
        for k, v in row.items():
            if k in keys:
                c = c[c[k].isna()] if pd.isna(v) else c[c[k] == v]
        c = c[c["n_splits"] == n]
        if len(c):
            c = c.assign(_r=c["r"].astype("Float64").fillna(0).to_numpy(float))
            best = c.sort_values(
                ["test_acc_mean", "_r"], ascending=[False, True], kind="mergesort"
            ).iloc[0]
            row["acc_best_r_mean"] = float(best["test_acc_mean"])
            row["acc_best_r_std"] = float(best["test_acc_std"])
            row["r_best"] = best["r"]
        else:
            row["acc_best_r_mean"] = row["acc_best_r_std"] = math.nan
            row["r_best"] = pd.NA
        rows.append(row)
    out = pd.DataFrame(rows)
    if len(out):
        out["r_best"] = out["r_best"].astype("Int64")
    return out

"""Fit time and peak memory: across r, at the selected r, and per fit job."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence

import pandas as pd

from ..protocol.selection import select_per_split
from .tables import _BY, _r_text, _rank, _std, _with_setting, format_pm, method_label


def _agg_mean_std(df: pd.DataFrame, keys, value: str):
    """Mean over the rows, std over the per-split means (ddof=1)."""
    per_split = df.groupby([*keys, "split"], sort=True)[value].mean().reset_index()
    g = per_split.groupby(keys, sort=True)[value]
    return g.mean(), g.agg(_std)


def cost_by_r(runs: pd.DataFrame) -> pd.DataFrame:
    """Fit time (s) and peak memory (MB) per setting, method and r.

    Each value is the mean over the parameter values and splits of one fit at that r;
    the std is over the splits (ddof=1). Columns: setting, method, r, fit_s, fit_s_std,
    peak_mb, peak_mb_std, n_splits, shared_fit (the row's cost is that of a fit
    shared by several r: one fit for every r of a nested method, whose cost is then
    repeated at each r, or a rank path, whose peak memory is the path's).
    """
    runs = _with_setting(runs).assign(r=lambda d: d["r"].fillna(0).astype(int))
    if "fit_shared" not in runs:
        runs = runs.assign(fit_shared=False)
    runs = runs.assign(fit_shared=runs["fit_shared"].astype("boolean").fillna(False))
    keys = ["setting", "method", "r"]
    fit_mean, fit_std = _agg_mean_std(runs, keys, "fit_s")
    mem_mean, mem_std = _agg_mean_std(runs, keys, "peak_mb")
    n = runs.groupby(keys, sort=True)["split"].nunique()
    shared = runs.groupby(keys, sort=True)["fit_shared"].any().astype(bool)
    out = pd.DataFrame(
        {
            "fit_s": fit_mean,
            "fit_s_std": fit_std,
            "peak_mb": mem_mean,
            "peak_mb_std": mem_std,
            "n_splits": n,
            "shared_fit": shared,
        }
    ).reset_index()
    out["order"] = out["method"].map(_rank)
    return (
        out.sort_values(["setting", "order", "r"])
        .drop(columns="order")
        .reset_index(drop=True)
    )


def cost_at_selected(runs: pd.DataFrame) -> pd.DataFrame:
    """Fit time and peak memory at each split's validation-selected parameters.

    Columns: setting, method, r (the selected r of each split), fit_s, fit_s_std,
    peak_mb, peak_mb_std (mean and std over splits).
    """
    sel = select_per_split(_with_setting(runs), by=_BY)
    out = []
    for (setting, method), g in sel.groupby(["setting", "method"], sort=True):
        g = g.sort_values("split")
        out.append(
            {
                "setting": setting,
                "method": method,
                "r": _r_text(g["r"]),
                "fit_s": float(g["fit_s"].mean()),
                "fit_s_std": _std(g["fit_s"]),
                "peak_mb": float(g["peak_mb"].mean()),
                "peak_mb_std": _std(g["peak_mb"]),
            }
        )
    return pd.DataFrame(out)


def job_costs(benchmarks: Mapping[tuple[str, str], Sequence[str | os.PathLike]]):
    """Whole-job wall time (s) and max RSS (MB) from Snakemake ``benchmark:`` files.

    ``benchmarks`` maps (setting, method) to the TSV files of its fit jobs (one per
    split). Returns one row per (setting, method) with the mean and std over the jobs.
    """
    out = []
    for (setting, method), files in benchmarks.items():
        frames = [pd.read_csv(f, sep="\t") for f in files]
        if not frames:
            continue
        b = pd.concat(frames, ignore_index=True)
        rss = pd.to_numeric(b["max_rss"], errors="coerce")
        out.append(
            {
                "setting": setting,
                "method": method,
                "job_s": float(b["s"].mean()),
                "job_s_std": _std(b["s"]),
                "job_max_rss_mb": float(rss.mean()),
                "job_max_rss_mb_std": _std(rss.dropna()),
            }
        )
    return pd.DataFrame(out)


def cost_table(
    selected: pd.DataFrame,
    jobs: pd.DataFrame | None,
    columns: Sequence[Mapping],
    *,
    threads: int | Sequence[int] | None = None,
    machine: str = "",
) -> pd.DataFrame:
    """Return the cost table shown to readers: one row per (setting, method).

    Fit time and peak memory at the selected r (measured inside the fit, per r), then
    whole-job time and max RSS from the benchmark files (imports and data loading
    included), with the thread count and the machine.
    """
    labels = {c["setting"]: c["label"] for c in columns}
    df = selected.copy()
    if jobs is not None and len(jobs):
        df = df.merge(jobs, on=["setting", "method"], how="left")
    df = df[df["setting"].isin(labels)]
    df["order_s"] = df["setting"].map(list(labels).index)
    df["order_m"] = df["method"].map(_rank)
    df = df.sort_values(["order_s", "order_m"])
    table = pd.DataFrame(
        {
            "Setting": df["setting"].map(labels),
            "Method": df["method"].map(method_label),
            "r": df["r"],
            "fit time (s)": [
                format_pm(m, s, 3) for m, s in zip(df.fit_s, df.fit_s_std, strict=True)
            ],
            "peak memory (MB)": [
                format_pm(m, s, 1)
                for m, s in zip(df.peak_mb, df.peak_mb_std, strict=True)
            ],
        }
    )
    if "job_s" in df:
        table["job time (s)"] = [
            format_pm(m, s, 1) for m, s in zip(df.job_s, df.job_s_std, strict=True)
        ]
        table["job max RSS (MB)"] = [
            format_pm(m, s, 0)
            for m, s in zip(df.job_max_rss_mb, df.job_max_rss_mb_std, strict=True)
        ]
    table["threads"] = (
        threads if isinstance(threads, int) else "/".join(map(str, threads or []))
    )
    table["machine"] = machine
    return table.reset_index(drop=True)
